#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bytes per sample on disk, cardiac's store beside Prometheus' TSDB, from the same samples.
#
# Runs BM_StoreBytesPerGpuDay/0 (one hour of one simulated H100's 44 fields at 1 s, through
# SampleWriter, then sealed) with CARDIAC_BENCH_OPENMETRICS set, so the bench also writes those
# samples as OpenMetrics text; loads that text with `promtool tsdb create-blocks-from
# openmetrics` (Prometheus' own block writer: Gorilla chunks, index, metadata) and divides the
# block's bytes by the sample count. Prints both figures.
#
# Usage: bench/store_vs_prometheus.sh [BUILD_DIR]      (needs promtool: Debian's prometheus)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
BENCH=$BUILD/bench/cardiac_store_bench
PROMTOOL=${PROMTOOL:-promtool}
[[ -x $BENCH ]] || { echo "store_vs_prometheus: no $BENCH (cmake --build $BUILD -t cardiac_store_bench)" >&2; exit 2; }
command -v "$PROMTOOL" >/dev/null || { echo "store_vs_prometheus: no promtool (apt install prometheus)" >&2; exit 2; }

work=$(mktemp -d /tmp/cardiac-vs-prometheus-XXXXXX)
trap 'rm -rf "$work"' EXIT

CARDIAC_BENCH_OPENMETRICS=$work/samples.om "$BENCH" --benchmark_filter='BM_StoreBytesPerGpuDay/0' \
  --benchmark_format=json >"$work/bench.json"
ours=$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["benchmarks"][0]; print("%.3f" % b["bytes_per_sample"])' "$work/bench.json")

samples=$(grep -vc '^#' "$work/samples.om")
"$PROMTOOL" tsdb create-blocks-from openmetrics "$work/samples.om" "$work/tsdb" >"$work/promtool.log" 2>&1 || {
  cat "$work/promtool.log" >&2
  exit 1
}
# Every block directory promtool wrote: chunks, index, meta.json, tombstones.
bytes=$(find "$work/tsdb" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
theirs=$(python3 -c 'import sys; print("%.3f" % (int(sys.argv[1]) / int(sys.argv[2])))' "$bytes" "$samples")

echo "samples: $samples (one hour, one GPU, 1 s, 44 fields)"
echo "cardiac store:      $ours bytes/sample (SQLite file and WAL after a checkpoint, sealed)"
echo "Prometheus TSDB:    $theirs bytes/sample ($bytes bytes in promtool's blocks)"
