#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dashboard's load times in headless Chromium, against an agent on the fake NVML whose store
# holds a week of 8 GPUs (seeded by cardiac_dashboard_bench --seed). bench/README.md has figures.
# usage: bench/dashboard_load.sh [BUILD_DIR] [RUNS]
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
runs="${2:-10}"
dir="$(mktemp -d /tmp/cardiac-dashboard-load-XXXXXX)"
agent=""
cleanup() { [ -n "$agent" ] && kill "$agent" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

"$build/bench/cardiac_dashboard_bench" --seed "$dir/state"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
touch "$dir/kern.log"
cat > "$dir/cardiac.toml" <<CFG
[nvml]
library = "$build/tests/fake_nvml/libnvidia-ml.so.1"
[kmsg]
source = "$dir/kern.log"
[agent]
state_dir = "$dir/state"
listen = "127.0.0.1:$port"
CFG
CARDIAC_FAKE_NVML_SCENARIO="$src/tests/fixtures/scenarios/gpu-lost.json" \
  "$build/cardiac" agent --config "$dir/cardiac.toml" 2>"$dir/agent.log" &
agent=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/api/v1/dashboard/overview" | grep -q '"cards":\[{' && break
  sleep 0.1
done
node "$src/bench/dashboard_load.js" "http://127.0.0.1:$port/" "$src" "$runs" "$agent"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
