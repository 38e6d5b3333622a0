#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the manual pages from the CLI's own --help: cardiac(1) and one page per top-level
# command, cardiac-<command>(1), gzipped for /usr/share/man/man1. The command list is read
# from `cardiac --help`, so a new command gets its page without a change here.
#
# usage: make-man.sh CARDIAC_BINARY OUT_DIR VERSION
set -euo pipefail

cardiac=${1:?cardiac binary}
out=${2:?output directory}
version=${3:?version}

command -v help2man >/dev/null || {
  echo "make-man.sh: help2man is not installed (apt-get install help2man)" >&2
  exit 1
}
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The subcommands and their one-line help, from the "Subcommands:" section.
"$cardiac" --help | awk '/^Subcommands:/ { inside = 1; next } inside && NF { print }' \
  >"$work/commands"
[ -s "$work/commands" ] || {
  echo "make-man.sh: no subcommands in '$cardiac --help'" >&2
  exit 1
}

# help2man runs "PROGRAM --help"; a wrapper per command makes that `cardiac COMMAND --help`.
# The pages' date is the last commit's (SOURCE_DATE_EPOCH when set), not the build's, so the
# same source gives the same pages.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
see_also="$work/see-also"
{
  echo "[SEE ALSO]"
  sep=""
  while read -r name _; do
    printf '%s\\fBcardiac-%s\\fR(1)' "$sep" "$name"
    sep=", "
  done <"$work/commands"
  printf '\n\nThe full documentation is in /usr/share/doc/cardiac.\n'
} >"$see_also"

help2man --no-info --no-discard-stderr --version-string="$version" \
  --name="keeps GPU servers healthy and busy" --include="$see_also" \
  --output="$out/cardiac.1" "$cardiac"

while read -r name help; do
  wrapper="$work/cardiac-$name"
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$cardiac" "$name" >"$wrapper"
  chmod +x "$wrapper"
  # help2man's NAME line is "PROGRAM - DESCRIPTION"; lower-case the first letter as man pages do.
  desc="$(printf '%s' "${help:0:1}" | tr '[:upper:]' '[:lower:]')${help:1}"
  printf '[SEE ALSO]\n\\fBcardiac\\fR(1)\n\nThe full documentation is in /usr/share/doc/cardiac.\n' \
    >"$work/see-also-$name"
  help2man --no-info --no-discard-stderr --version-string="$version" --name="$desc" \
    --include="$work/see-also-$name" --output="$out/cardiac-$name.1" "$wrapper"
done <"$work/commands"

gzip -9n "$out"/*.1
