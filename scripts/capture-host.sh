#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Captures this host's /proc files, the links the doctor reads and /etc/passwd into a tree that
# `cardiac doctor --offline --root DIR` reads as the live host (tests/fixtures/hosts/README.md).
# Run it as root: other users' exe and fd links cannot be read otherwise. Nothing is written
# outside DIR; process environments are left out (they hold secrets) unless --environ is given.
set -u

usage() {
  echo "usage: $0 [--environ] DIR" >&2
  echo "  Copies /proc (host files, every process's stat, cmdline, comm, status, cgroup, wchan," >&2
  echo "  its exe and fd links as symlinks), /proc/net, /etc/passwd and the time of the capture" >&2
  echo "  (.cardiac/taken_at) into DIR, for 'cardiac doctor --offline --root DIR'." >&2
  exit 2
}

environ=0
if [ "${1:-}" = "--environ" ]; then
  environ=1
  shift
fi
[ $# -eq 1 ] || usage
case "$1" in -*) usage ;; esac
out=$1
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "$0: $out is not empty" >&2
  exit 2
fi
mkdir -p "$out/.cardiac" || exit 1

# Files copied with their directories; a process that ended meanwhile is simply not there.
copy() { cp --parents "$@" "$out/" 2>/dev/null; }

copy /proc/stat /proc/meminfo /proc/uptime /proc/loadavg /proc/version /proc/diskstats \
  /proc/self/mounts /proc/pressure/* /proc/driver/nvidia/version \
  /proc/net/dev /proc/net/route /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 \
  /proc/sys/net/ipv4/ip_local_port_range /etc/passwd /etc/os-release
copy /proc/[0-9]*/stat /proc/[0-9]*/cmdline /proc/[0-9]*/comm /proc/[0-9]*/status \
  /proc/[0-9]*/cgroup /proc/[0-9]*/wchan
[ "$environ" = 1 ] && copy /proc/[0-9]*/environ
# The links are stored as symlinks holding the kernel's text ("/usr/bin/x (deleted)",
# "socket:[12345]"): they dangle on purpose, the doctor reads only their text.
cp -P --parents /proc/[0-9]*/exe /proc/[0-9]*/fd/* "$out/" 2>/dev/null
chmod -R u+w "$out"

date +%s%N > "$out/.cardiac/taken_at"
df -B1 --output=target,size,avail / 2>/dev/null | awk 'NR > 1 { print $1, $2, $3, $3 }' \
  > "$out/.cardiac/statvfs"
n=$(ls -d "$out"/proc/[0-9]* 2>/dev/null | wc -l)
echo "captured $n processes into $out"
[ -f "$out/proc/stat" ]
