#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Wall time of whole `cardiac doctor` runs (hyperfine):
#  1. one sample of 8 fake GPUs on the captured 8-GPU host, no probes, no kernel log;
#  2. an offline run on a captured snapshot series plus a kernel log;
#  3. a default live run (this machine's /proc, /sys and kernel log, 8 fake GPUs) WITH the
#     network probes, with --window 0 and --window 1, printed as wall time minus the window
#     actually sampled.
#     The probes run during the window, so with a window of 1 s they should add nothing. Their
#     targets are loopback only (127.0.0.1 as the near target, ::1 as the far one), so no real
#     gateway or remote host is ever probed.
# Usage: bench/doctor_wall.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
export CARDIAC_FAKE_NVML_SCENARIO=tests/fixtures/scenarios/healthy-8xh100.json
nvml="--nvml-lib $build/tests/fake_nvml/libnvidia-ml.so.1"
hyperfine -N --warmup 3 --runs 30 -i \
  "$build/cardiac doctor --json --quiet $nvml --root tests/fixtures/hosts/debian-gpu-8x --window 0 --no-probe --no-kmsg" \
  "$build/cardiac doctor --json --quiet --offline --root tests/fixtures/hosts/iowait-bottleneck --kmsg tests/fixtures/kmsg/xid79-aer-surprise-down.dmesg"

out=$(mktemp -d "${TMPDIR:-/tmp}/doctor-wall.XXXXXX")
trap 'rm -rf "$out"' EXIT
probes="--gateway 127.0.0.1 --probe ::1"
# --interval 100ms: the window stops before a sample that would land past it, so with the
# default 1 s interval a 1 s window would be a single sample and no wait at all.
for window in 0 1; do
  cmd="$build/cardiac doctor --json --quiet $nvml --window $window --interval 100ms $probes"
  # The window actually sampled (sources.window_s) is what the run waited on purpose.
  $cmd >"$out/report$window.json" || true
  hyperfine -N --warmup 1 --runs 10 -i --export-json "$out/w$window.json" "$cmd"
  python3 - "$out/w$window.json" "$out/report$window.json" "$window" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
w = json.load(open(sys.argv[2]))["sources"]["window_s"]
print(f"live run with probes, --window {sys.argv[3]} (sampled {w:.2f} s): wall "
      f"{r['mean']*1000:.0f} ms ± {r['stddev']*1000:.0f} ms; wall minus window "
      f"{(r['mean'] - w)*1000:.0f} ms (min {(r['min'] - w)*1000:.0f}, max {(r['max'] - w)*1000:.0f})")
PY
done
