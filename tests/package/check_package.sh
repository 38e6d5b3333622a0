#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package with CPack from a built tree and checks it without installing it:
# its files, conffiles and Depends (dpkg-deb), the default configuration against the code's
# defaults, one manual page per command, the maintainer scripts' syntax, the systemd unit (and
# the strict drop-in shipped as an example) with `systemd-analyze verify`, and that the
# packaged cardiac finds its packaged NVML worker.
#
# usage: check_package.sh SOURCE_DIR BUILD_DIR
set -uo pipefail

src=${1:?source dir}
build=${2:?build dir}
work=$(mktemp -d /tmp/cardiac-package-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# cpack -B writes the package and its staging tree here, not into the build tree.
(cd "$build" && cpack -G DEB -B "$work/out") >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  echo "FAIL: cpack -G DEB"
  exit 1
}
debs=("$work"/out/cardiac_*.deb)
deb=${debs[0]}
[ -f "$deb" ] || {
  cat "$work/cpack.log"
  echo "FAIL: no cardiac_*.deb"
  exit 1
}
echo "package: $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# Files.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/files"
for f in /usr/bin/cardiac /usr/libexec/cardiac/cardiac-nvml-worker \
  /lib/systemd/system/cardiac.service /etc/cardiac/cardiac.toml \
  /usr/share/man/man1/cardiac.1.gz /usr/share/man/man1/cardiac-agent.1.gz \
  /usr/share/doc/cardiac/copyright /usr/share/doc/cardiac/README.md \
  /usr/share/doc/cardiac/install.md /usr/share/doc/cardiac/examples/cardiac-strict.conf \
  /usr/share/doc/cardiac/runbooks/README.md /usr/share/doc/cardiac/runbooks/xid.79.md \
  /usr/share/doc/cardiac/emergency-plan.md; do
  grep -qx -- "$f" "$work/files" || fail "the package has no $f"
done
# Nothing from the test or benchmark trees, and nothing under /usr/local.
if grep -E 'fake|nvidia-ml|bench|/usr/local|_tests$' "$work/files"; then
  fail "the package holds test, benchmark or /usr/local files (above)"
fi

# Control: conffiles, Depends from dpkg-shlibdeps plus procps (/bin/kill for ExecReload).
dpkg-deb -I "$deb" conffiles >"$work/conffiles" 2>&1
[ "$(cat "$work/conffiles")" = "/etc/cardiac/cardiac.toml" ] ||
  fail "conffiles is not exactly /etc/cardiac/cardiac.toml: $(cat "$work/conffiles")"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for d in libc6 libstdc++6 libsqlite3-0 procps; do
  [[ ",$depends" == *", $d"* || ",$depends" == *",$d"* ]] || fail "Depends lacks $d: $depends"
done
[[ "$depends" != *nvidia* ]] || fail "Depends names an NVIDIA package (NVML is opened at run time)"
[ "$(dpkg-deb -f "$deb" Package)" = cardiac ] || fail "Package is not cardiac"

dpkg-deb -x "$deb" "$work/root"
dpkg-deb -e "$deb" "$work/control"
root=$work/root

# The default configuration is what the code prints, so it cannot fall behind the defaults.
"$build/cardiac" agent --print-default-config >"$work/defaults.toml"
cmp -s "$work/defaults.toml" "$root/etc/cardiac/cardiac.toml" ||
  fail "/etc/cardiac/cardiac.toml differs from 'cardiac agent --print-default-config'"

# One manual page per command of `cardiac --help`, each rendered from that command's --help.
"$build/cardiac" --help | awk '/^Subcommands:/ { inside = 1; next } inside && NF { print $1 }' \
  >"$work/commands"
[ -s "$work/commands" ] || fail "no commands in cardiac --help"
while read -r c; do
  [ -f "$root/usr/share/man/man1/cardiac-$c.1.gz" ] || fail "no manual page cardiac-$c(1)"
done <"$work/commands"
page=$(zcat "$root/usr/share/man/man1/cardiac-agent.1.gz")
# The roff source: NAME, an option, the signals footer.
for want in 'cardiac-agent \- run the daemon' '\fB\-\-config\fR' 'SIGHUP'; do
  grep -qF -- "$want" <<<"$page" || fail "cardiac-agent(1) does not have '$want'"
done

# Maintainer scripts: POSIX sh that parses; purge removes the state directory.
for s in postinst prerm postrm; do
  [ -x "$work/control/$s" ] || fail "maintainer script $s missing or not executable"
  sh -n "$work/control/$s" || fail "maintainer script $s does not parse"
done
grep -q 'rm -rf /var/lib/cardiac' "$work/control/postrm" || fail "postrm does not purge /var/lib/cardiac"

# The unit, as installed but with ExecStart on the unpacked binary (verify checks that it
# exists) and the unpacked manual pages on MANPATH (it checks Documentation=man:…). Any word
# from verify is a finding: it reports unknown keys as warnings with exit code 0.
if ! command -v systemd-analyze >/dev/null; then
  fail "systemd-analyze is not installed (scripts/setup.sh installs systemd)"
else
  mkdir -p "$work/unit/cardiac.service.d"
  sed "s|/usr/bin/cardiac|$root/usr/bin/cardiac|g" "$root/lib/systemd/system/cardiac.service" \
    >"$work/unit/cardiac.service"
  # shellcheck disable=SC2016 # $MAINPID is systemd's, literally in the file
  grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$work/unit/cardiac.service" ||
    fail "the unit has no ExecReload sending SIGHUP"
  verify() {
    MANPATH="$root/usr/share/man" SYSTEMD_LOG_LEVEL=notice \
      systemd-analyze verify "$work/unit/cardiac.service" >"$work/verify.log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] || [ -s "$work/verify.log" ]; then
      fail "systemd-analyze verify ($1), exit $rc:"
      sed 's/^/    | /' "$work/verify.log"
    fi
  }
  verify "the packaged unit"
  cp "$root/usr/share/doc/cardiac/examples/cardiac-strict.conf" \
    "$work/unit/cardiac.service.d/strict.conf"
  verify "with the strict drop-in"
fi

# The packaged cardiac runs from its own tree and finds the packaged worker
# (<bin>/../libexec/cardiac/cardiac-nvml-worker): status on the fake NVML sees 8 GPUs. A
# captured healthy host, not this machine (a loaded CI machine's host warnings would make it
# exit 1), and a long deadline for a sanitizer build on a busy machine.
if [ -n "${FAKE_NVML:-}" ]; then
  CARDIAC_FAKE_NVML_SCENARIO="$src/tests/fixtures/scenarios/healthy-8xh100.json" \
    "$root/usr/bin/cardiac" status --json --nvml-lib "$FAKE_NVML" --config /dev/null \
    --root "$src/tests/fixtures/hosts/old-kernel" --timeout 30s \
    >"$work/status.json" 2>"$work/status.err"
  rc=$?
  [ $rc -eq 0 ] || fail "packaged cardiac status on the fake NVML exited $rc: $(cat "$work/status.err")"
  n=$(grep -o '"uuid"' "$work/status.json" | wc -l)
  [ "$n" -ge 8 ] || fail "packaged cardiac status saw $n GPUs, not 8"
fi

if [ $failures -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "package checks passed"
