#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian package on this machine and takes it out again, as docs/install.md
# tells an operator to: builds it with CPack from ./build, `dpkg -i`, runs the installed
# `cardiac --version` and `cardiac status`, starts the installed agent on the fake NVML (it
# must run the installed NVML worker from /usr/libexec/cardiac and survive a reload), checks
# the unit with `systemd-analyze verify`, then `dpkg -r` (configuration and state stay) and
# `dpkg --purge` (nothing is left).
# CI runs it (.ci/run) after the tests. Needs root and a built ./build (scripts/setup.sh).
#
# usage: scripts/package_check.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")

if [ "$(id -u)" -ne 0 ]; then
  echo "package_check: run as root (it installs and purges the cardiac package)" >&2
  exit 2
fi
if dpkg-query -W -f='${Status}' cardiac 2>/dev/null | grep -q installed; then
  echo "package_check: a cardiac package is already installed here; not touching it" >&2
  exit 2
fi
for p in /var/lib/cardiac /etc/cardiac; do
  if [ -e "$p" ]; then
    echo "package_check: $p exists already; its owner would lose it at the purge" >&2
    exit 2
  fi
done

work=$(mktemp -d /tmp/cardiac-package-check.XXXXXX)
agent_pid=""
cleanup() {
  if [ -n "$agent_pid" ] && kill -0 "$agent_pid" 2>/dev/null; then
    kill -TERM "$agent_pid" 2>/dev/null || true
    wait "$agent_pid" 2>/dev/null || true
  fi
  # Never leave the package behind, whatever failed.
  if dpkg-query -W -f='${Status}' cardiac 2>/dev/null | grep -q installed; then
    dpkg --purge cardiac >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo "== $*"; }
die() {
  echo "package_check: FAIL: $*" >&2
  exit 1
}

step "cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$work/out") >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  die "cpack"
}
debs=("$work"/out/cardiac_*.deb)
deb=${debs[0]}
[ -f "$deb" ] || die "cpack made no cardiac_*.deb"

step "dpkg -i $(basename "$deb")"
dpkg -i "$deb"
dpkg-query -W -f='${Conffiles}\n' cardiac | grep -q '/etc/cardiac/cardiac.toml' ||
  die "/etc/cardiac/cardiac.toml is not a conffile"
dpkg -L cardiac >"$work/installed"

step "cardiac --version"
version=$(/usr/bin/cardiac --version)
echo "$version"
[ "$version" = "cardiac $(dpkg-query -W -f='${Version}' cardiac)" ] ||
  die "cardiac --version says '$version', the package is $(dpkg-query -W -f='${Version}' cardiac)"

step "cardiac status"
# It reads the packaged /etc/cardiac/cardiac.toml (a configuration error would exit 2).
# With a GPU: 0 or 1. Without an NVIDIA driver (CI): exit 3 with a sentence that says so.
set +e
/usr/bin/cardiac status >"$work/status" 2>&1
rc=$?
set -e
cat "$work/status"
case $rc in
0 | 1) ;;
3) grep -q 'NVML' "$work/status" || die "cardiac status exited 3 without naming NVML" ;;
*) die "cardiac status exited $rc (documented: 0, 1, or 3 without a driver)" ;;
esac

step "cardiac agent from /usr/bin on the fake NVML, reloaded, stopped"
cat >"$work/cardiac.toml" <<TOML
[nvml]
library = "$build/tests/fake_nvml/libnvidia-ml.so.1"
[kmsg]
enabled = false
[agent]
listen = "127.0.0.1:0"
interval = "200ms"
TOML
CARDIAC_FAKE_NVML_SCENARIO="$PWD/tests/fixtures/scenarios/healthy-8xh100.json" \
  /usr/bin/cardiac --log-level info agent --config "$work/cardiac.toml" 2>"$work/agent.log" &
agent_pid=$!
worker=""
for _ in $(seq 1 300); do # polls for the worker, bounded at 30 s
  # The children files hold space-separated pids: words are what is wanted here.
  # shellcheck disable=SC2013
  for child in $(cat /proc/"$agent_pid"/task/*/children 2>/dev/null); do
    exe=$(readlink "/proc/$child/exe" 2>/dev/null || true)
    [ "$exe" = /usr/libexec/cardiac/cardiac-nvml-worker ] && worker=$exe
  done
  [ -n "$worker" ] && break
  kill -0 "$agent_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$worker" ] || {
  cat "$work/agent.log"
  die "the installed agent did not start /usr/libexec/cardiac/cardiac-nvml-worker"
}
echo "NVML worker: $worker"
kill -HUP "$agent_pid"
reloaded=0
for _ in $(seq 1 300); do # polls for the log line, bounded at 30 s
  if grep -q 'reload: configuration .* taken over' "$work/agent.log"; then
    reloaded=1
    break
  fi
  kill -0 "$agent_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$agent_pid" 2>/dev/null || die "the agent did not survive SIGHUP"
[ $reloaded = 1 ] || {
  cat "$work/agent.log"
  die "the agent did not log the reload"
}
kill -TERM "$agent_pid"
set +e
wait "$agent_pid"
rc=$?
set -e
agent_pid=""
[ $rc -eq 0 ] || {
  cat "$work/agent.log"
  die "the agent exited $rc after SIGTERM"
}
[ -f /var/lib/cardiac/cardiac.db ] || die "the agent made no /var/lib/cardiac/cardiac.db"

step "systemd-analyze verify /lib/systemd/system/cardiac.service"
systemd-analyze verify /lib/systemd/system/cardiac.service >"$work/verify" 2>&1 || true
if [ -s "$work/verify" ]; then
  cat "$work/verify"
  die "systemd-analyze verify reported the above"
fi

step "man cardiac-agent"
if command -v man >/dev/null; then
  man -w cardiac-agent >/dev/null || die "man cannot find cardiac-agent(1)"
fi

step "dpkg -r cardiac"
# Remove keeps the configuration and the state; only a purge takes them (Debian policy).
dpkg -r cardiac
[ ! -e /usr/bin/cardiac ] || die "/usr/bin/cardiac is still there after dpkg -r"
[ -f /etc/cardiac/cardiac.toml ] || die "dpkg -r removed /etc/cardiac/cardiac.toml"
[ -f /var/lib/cardiac/cardiac.db ] || die "dpkg -r removed /var/lib/cardiac"

step "dpkg --purge cardiac"
dpkg --purge cardiac
if dpkg-query -W -f='${Status}' cardiac 2>/dev/null | grep -q installed; then
  die "cardiac is still installed"
fi
left=""
while read -r f; do
  # Shared directories (/usr, /usr/share/man/man1, …) stay; the package's own files go.
  if [ -e "$f" ] && [ ! -d "$f" ]; then left="$left $f"; fi
done <"$work/installed"
for d in /etc/cardiac /var/lib/cardiac /usr/libexec/cardiac /usr/share/doc/cardiac; do
  [ -e "$d" ] && left="$left $d"
done
[ -z "$left" ] || die "left behind after the purge:$left"
echo "package_check: installed, ran, reloaded, verified and purged cleanly"
