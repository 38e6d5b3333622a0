#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Wall and CPU time of one `cardiac slurm healthcheck` (Slurm's HealthCheckProgram) with
# hyperfine: with the agent running (fake NVML, 8 healthy GPUs) and without one (a local sample
# through the NVML worker). Slurm is a scontrol stub (a shell script printing two idle nodes),
# so the figures are cardiac's, plus one stub start per run.
#
# Usage: bench/slurm_healthcheck.sh [BUILD_DIR] [RUNS]   (default: build 30; targets cardiac,
# fake_nvml). Targets: with the agent under 100 ms, without it under 2 s (mean wall).
# SCONTROL=/usr/bin/scontrol (with SLURM_CONF naming a running cluster that has a node n1)
# measures against real Slurm instead of the stub.
set -euo pipefail

cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-30}
cardiac="$PWD/$build/cardiac"
fake="$PWD/$build/tests/fake_nvml/libnvidia-ml.so.1"
for f in "$cardiac" "$fake"; do
  if [[ ! -e $f ]]; then
    echo "slurm_healthcheck.sh: $f is missing; run: cmake --build $build -t cardiac fake_nvml" >&2
    exit 2
  fi
done
command -v hyperfine >/dev/null || { echo "slurm_healthcheck.sh: hyperfine is not installed" >&2; exit 2; }

work=$(mktemp -d /tmp/cardiac-slurm-bench.XXXXXX)
agent_pid=""
cleanup() {
  if [[ -n $agent_pid ]]; then kill "$agent_pid" 2>/dev/null; wait "$agent_pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/scontrol" <<'STUB'
#!/bin/sh
case "$1 $2" in
  "show node") printf 'NodeName=n1 State=IDLE Partitions=gpu\nNodeName=n2 State=IDLE Partitions=gpu\n' ;;
esac
exit 0
STUB
chmod +x "$work/scontrol"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
root=$PWD/tests/fixtures/hosts/old-kernel
common="[nvml]
library = \"$fake\"
timeout = \"1s\"
[host]
root = \"$root\"
[kmsg]
source = \"$work/kern.log\"
[queue]
enabled = false
[slurm]
scontrol = \"${SCONTROL:-$work/scontrol}\""
touch "$work/kern.log"
printf '%s\n[agent]\nstate_dir = "%s/state"\nlisten = "127.0.0.1:%s"\ninterval = "1s"\n' \
  "$common" "$work" "$port" >"$work/with-agent.toml"
# Nothing listens on port 9 (discard) of loopback here: the check samples locally.
printf '%s\n[agent]\nstate_dir = "%s/none"\nlisten = "127.0.0.1:9"\n' "$common" "$work" \
  >"$work/no-agent.toml"

export CARDIAC_FAKE_NVML_SCENARIO=$PWD/tests/fixtures/scenarios/healthy-8xh100.json
export SLURMD_NODENAME=n1
"$cardiac" agent --config "$work/with-agent.toml" 2>"$work/agent.log" &
agent_pid=$!
for _ in $(seq 1 100); do
  if curl -fs "127.0.0.1:$port/api/v1/status" 2>/dev/null | grep -q '"verdict": *"OK"'; then break; fi
  sleep 0.1
done
"$cardiac" slurm healthcheck --config "$work/with-agent.toml" --json | grep -E "\"(source|verdict)\""
"$cardiac" slurm healthcheck --config "$work/no-agent.toml" --json | grep -E "\"(source|verdict)\""

with=$(printf '%q ' "$cardiac" slurm healthcheck --config "$work/with-agent.toml")
without=$(printf '%q ' "$cardiac" slurm healthcheck --config "$work/no-agent.toml")
hyperfine -N --warmup 3 --runs "$runs" --style basic --export-json "$work/hf.json" \
  -n "with the agent" "$with" -n "without an agent (local sample)" "$without"

python3 - "$work/hf.json" <<'PY'
import json, sys
targets = {"with the agent": 100, "without an agent (local sample)": 2000}
for r in json.load(open(sys.argv[1]))["results"]:
    ms = lambda s: s * 1e3
    t = targets[r["command"]]
    verdict = "met" if ms(r["mean"]) < t else "NOT met"
    print(f"{r['command']}: mean {ms(r['mean']):.1f} ms (sd {ms(r['stddev']):.1f}, "
          f"median {ms(r['median']):.1f}, max {ms(r['max']):.1f}); CPU user {ms(r['user']):.1f} ms "
          f"+ sys {ms(r['system']):.1f} ms; target under {t} ms: {verdict}")
PY
