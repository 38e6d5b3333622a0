#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Wall time of whole `cardiac doctor` runs without the sampling window (hyperfine): one sample of
# 8 fake GPUs on the captured 8-GPU host, and an offline run on a captured snapshot series plus a
# kernel log. Usage: bench/doctor_wall.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
export CARDIAC_FAKE_NVML_SCENARIO=tests/fixtures/scenarios/healthy-8xh100.json
hyperfine -N --warmup 3 --runs 30 -i \
  "$build/cardiac doctor --json --quiet --nvml-lib $build/tests/fake_nvml/libnvidia-ml.so.1 --root tests/fixtures/hosts/debian-gpu-8x --window 0 --no-probe --no-kmsg" \
  "$build/cardiac doctor --json --quiet --offline --root tests/fixtures/hosts/iowait-bottleneck --kmsg tests/fixtures/kmsg/xid79-aer-surprise-down.dmesg"
