#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Submit → start latency of the job queue on an idle GPU.
#
# Starts `cardiac agent` on the fake NVML (8 idle GPUs, no processes outside the queue) in a
# temporary state directory, waits for its first GPU sample, then N times: takes the wall time,
# runs `cardiac submit --gpus 1 -- sh -c 'date +%s%N > FILE'`, waits for FILE, and reports
# FILE's time minus the time taken before the submit. That covers the whole path a user sees:
# the client process starting, the socket round trip, the commit, the scheduling pass, the
# runner's start, the privilege and environment set-up, and the job's own exec. Each job ends
# before the next is submitted, so every submit finds idle GPUs. Prints min, median, p95 and
# max in milliseconds; the target is a median under 100 ms.
#
# Usage: bench/queue_wall.sh [BUILD_DIR] [N]          # default: ./build, 30 submits
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
N=${2:-30}
CARDIAC=$BUILD/cardiac
FAKE=$BUILD/tests/fake_nvml/libnvidia-ml.so.1
for f in "$CARDIAC" "$FAKE"; do
  [[ -e $f ]] || { echo "missing $f" >&2; exit 2; }
done

exec python3 - "$CARDIAC" "$FAKE" "$ROOT/tests/fixtures/scenarios/healthy-8xh100.json" "$N" <<'PY'
import json, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

cardiac, fake, scenario_path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tmp = tempfile.mkdtemp(prefix="cardiac-queue-bench-")
try:
    sc = json.load(open(scenario_path))
    for d in sc["devices"]:
        d["processes"] = []
    json.dump(sc, open(f"{tmp}/scenario.json", "w"))
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    open(f"{tmp}/kern.log", "w").close()
    with open(f"{tmp}/cardiac.toml", "w") as cfg:
        cfg.write(f'[nvml]\nlibrary = "{fake}"\n[kmsg]\nsource = "{tmp}/kern.log"\n'
                  f'[agent]\nstate_dir = "{tmp}/state"\nlisten = "127.0.0.1:{port}"\n')
    env = dict(os.environ, CARDIAC_FAKE_NVML_SCENARIO=f"{tmp}/scenario.json")
    agent = subprocess.Popen([cardiac, "agent", "--config", f"{tmp}/cardiac.toml"], env=env,
                             stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while True:
        try:
            status = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status"))
            if len(status.get("gpus", [])) == 8:
                break
        except Exception:
            pass
        if time.time() > deadline:
            sys.exit("the agent did not come up")
        time.sleep(0.05)
    cenv = dict(os.environ, CARDIAC_STATE_DIR=f"{tmp}/state")
    lat = []
    for i in range(n):
        out = f"{tmp}/started.{i}"
        t0 = time.time_ns()
        subprocess.run([cardiac, "submit", "-q", "--gpus", "1", "--", "sh", "-c",
                        f"date +%s%N > {out}.tmp && mv {out}.tmp {out}"],
                       env=cenv, check=True, stdout=subprocess.DEVNULL)
        while not os.path.exists(out):
            time.sleep(0.001)
        lat.append((int(open(out).read()) - t0) / 1e6)
        # Wait for the job to be recorded as ended, so the next submit finds the GPUs idle.
        while b"running" in subprocess.run([cardiac, "queue", "--json"], env=cenv,
                                           capture_output=True).stdout:
            time.sleep(0.005)
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=30)
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"submit -> start on an idle GPU, {n} jobs: min {lat[0]:.1f} ms, "
          f"median {pick(0.5):.1f} ms, p95 {pick(0.95):.1f} ms, max {lat[-1]:.1f} ms")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PY
