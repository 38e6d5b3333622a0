#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Wall time of one `cardiac status --json` (fake NVML, 8 GPUs, fixture host) with hyperfine.
#
# Usage: bench/status_wall.sh [BUILD_DIR]   (default: build; needs targets cardiac, fake_nvml)
# Writes the hyperfine JSON to BUILD_DIR/bench/status_wall.json. Target: mean under 50 ms.
set -euo pipefail

cd "$(dirname "$0")/.."
build=${1:-build}
cardiac="$build/cardiac"
fake="$build/tests/fake_nvml/libnvidia-ml.so.1"
root=tests/fixtures/hosts/debian-gpu-8x
json="$build/bench/status_wall.json"
target_ms=50

for f in "$cardiac" "$fake"; do
  if [[ ! -e $f ]]; then
    echo "status_wall.sh: $f is missing; run: cmake --build $build -t cardiac fake_nvml" >&2
    exit 2
  fi
done
command -v hyperfine >/dev/null || { echo "status_wall.sh: hyperfine is not installed" >&2; exit 2; }
mkdir -p "$(dirname "$json")"

export CARDIAC_FAKE_NVML_SCENARIO=$PWD/tests/fixtures/scenarios/healthy-8xh100.json
cmd=$(printf '%q ' "$cardiac" status --nvml-lib "$fake" --root "$root" --json)

# The fixture host has a process in D state, so status exits 1 (findings): -i ignores that.
# -N runs the command without a shell, so no shell start-up is in the figures.
hyperfine -N -i --warmup 3 --runs 30 --style basic --export-json "$json" "$cmd"

python3 - "$json" "$target_ms" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
target = float(sys.argv[2])
ms = lambda s: s * 1e3
print(f"cardiac status --json (8 GPUs, fake NVML, fixture host), {len(r['times'])} runs:")
print(f"  mean {ms(r['mean']):.1f} ms  (sd {ms(r['stddev']):.1f})  "
      f"min {ms(r['min']):.1f} ms  max {ms(r['max']):.1f} ms  median {ms(r['median']):.1f} ms")
print(f"  CPU: user {ms(r['user']):.1f} ms  system {ms(r['system']):.1f} ms (mean, incl. the worker)")
codes = sorted(set(r.get("exit_codes", [])))
print(f"  exit codes: {codes}")
verdict = "met" if ms(r["mean"]) < target else "NOT met"
print(f"  target: mean under {target:.0f} ms wall: {verdict}")
PY
