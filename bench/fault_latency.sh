#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault-to-notification latency of `cardiac agent` on the fake NVML.
#
# For each sampling interval (default: 1s and 100ms) this starts the agent with only one rule
# (gpu_temperature >= 85, no `for`: fires on the first sample that sees it) and an exec
# notifier (`tee -a NOTES`), waits for /healthz, then REPS times:
#   sleep a random fraction of the interval (so the fault lands at a random phase of the
#   sampling tick), t0 = now, atomically rewrite the scenario with GPU 1 at 90 °C,
#   poll NOTES (every 1 ms) until one more "firing" notification appears, t1 = now;
#   then cool GPU 1 back down and wait for its "resolved" notification.
# It prints min/median/mean/max of t1 - t0 in ms per interval.
#
# What is measured: the fake's reload (it checks the scenario file's stamp at most every
# 100 ms, on an NVML call), the wait for the next sample, the NVML worker and pipe, rule
# evaluation, the notification dispatcher, fork/exec of tee, and tee's write — plus this
# script's 1 ms polling.
#
# Usage: bench/fault_latency.sh [BUILD_DIR] [REPS] [INTERVALS...]
#        bench/fault_latency.sh build 10 1s 100ms
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
REPS=${2:-10}
shift 2 2>/dev/null || shift $#
INTERVALS=("$@")
[[ ${#INTERVALS[@]} -gt 0 ]] || INTERVALS=(1s 100ms)

CARDIAC=$BUILD/cardiac
FAKE=$BUILD/tests/fake_nvml/libnvidia-ml.so.1
SCENARIO_SRC=$ROOT/tests/fixtures/scenarios/healthy-8xh100.json
for f in "$CARDIAC" "$FAKE" "$SCENARIO_SRC"; do
  [[ -e $f ]] || { echo "missing $f (build: cmake --build build -t cardiac fake_nvml)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 2; }
command -v curl >/dev/null || { echo "curl is needed" >&2; exit 2; }

exec python3 - "$CARDIAC" "$FAKE" "$SCENARIO_SRC" "$REPS" "${INTERVALS[@]}" <<'PY'
import json, os, random, shutil, signal, socket, statistics, subprocess, sys, tempfile, time
import urllib.request

cardiac, fake, scenario_src, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
intervals = sys.argv[5:]

def seconds(text):
    if text.endswith("ms"): return float(text[:-2]) / 1000
    if text.endswith("s"): return float(text[:-1])
    raise SystemExit(f"bad interval {text}")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
            return r.status == 200
    except Exception:
        return False

def count(path, word):
    try:
        with open(path, "rb") as f: return f.read().count(word)
    except FileNotFoundError:
        return 0

def wait_count(path, word, n, timeout):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if count(path, word) >= n: return True
        time.sleep(0.001)
    return False

base = json.load(open(scenario_src))

def write_scenario(path, temp1):
    sc = json.loads(json.dumps(base))
    sc["devices"][1]["temperature"] = temp1
    tmp = path + ".tmp"
    with open(tmp, "w") as f: json.dump(sc, f)
    os.rename(tmp, path)

results = {}
for interval in intervals:
    iv = seconds(interval)
    d = tempfile.mkdtemp(prefix="cardiac-fault-latency-")
    port = free_port()
    scen, notes, rules = f"{d}/scenario.json", f"{d}/notes.json", f"{d}/rules.toml"
    write_scenario(scen, base["devices"][1]["temperature"])
    open(f"{d}/kern.log", "w").close()
    with open(rules, "w") as f:
        f.write('[[rule]]\nname = "bench_gpu_hot"\nmetric = "gpu_temperature"\n'
                'op = ">="\nthreshold = 85\nseverity = "critical"\n')
    with open(f"{d}/cardiac.toml", "w") as f:
        f.write(f'[nvml]\nlibrary = "{fake}"\ntimeout = "1s"\n'
                f'[kmsg]\nsource = "{d}/kern.log"\n'
                f'[[notifier]]\ntype = "exec"\nargv = ["/usr/bin/tee", "-a", "{notes}"]\n'
                f'[agent]\nstate_dir = "{d}/state"\nlisten = "127.0.0.1:{port}"\n'
                f'interval = "{interval}"\nrules = "{rules}"\ndefault_rules = false\n')
    env = dict(os.environ, CARDIAC_FAKE_NVML_SCENARIO=scen)
    log = open(f"{d}/agent.log", "w")
    agent = subprocess.Popen([cardiac, "agent", "--config", f"{d}/cardiac.toml"], env=env,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    lat = []
    try:
        until = time.monotonic() + 30
        while not healthy(port):
            if agent.poll() is not None or time.monotonic() > until:
                raise SystemExit(f"agent did not become healthy:\n{open(f'{d}/agent.log').read()}")
            time.sleep(0.05)
        time.sleep(2 * iv + 0.2)  # let the first samples pass
        for i in range(reps):
            fired = count(notes, b'"firing"')
            resolved = count(notes, b'"resolved"')
            time.sleep(random.uniform(0, iv))  # random phase against the sampling tick
            t0 = time.time()
            write_scenario(scen, 90)
            if not wait_count(notes, b'"firing"', fired + 1, 30):
                raise SystemExit(f"no firing notification (interval {interval}, rep {i})")
            t1 = time.time()
            lat.append((t1 - t0) * 1000)
            write_scenario(scen, base["devices"][1]["temperature"])
            if not wait_count(notes, b'"resolved"', resolved + 1, 30):
                raise SystemExit(f"no resolved notification (interval {interval}, rep {i})")
            print(f"  interval {interval:>6} rep {i + 1:2}: {lat[-1]:7.1f} ms", flush=True)
    finally:
        agent.send_signal(signal.SIGTERM)
        try: agent.wait(10)
        except subprocess.TimeoutExpired: agent.kill(); agent.wait()
        shutil.rmtree(d, ignore_errors=True)
    results[interval] = (iv, lat)

print()
print(f"{'interval':>8} {'n':>3} {'min ms':>8} {'median':>8} {'mean':>8} {'max ms':>8} "
      f"{'target ms':>9}  met (max <= target)")
for interval, (iv, lat) in results.items():
    target = iv * 1000 + 50
    print(f"{interval:>8} {len(lat):>3} {min(lat):8.1f} {statistics.median(lat):8.1f} "
          f"{statistics.mean(lat):8.1f} {max(lat):8.1f} {target:9.0f}  "
          f"{'yes' if max(lat) <= target else 'no'}")
PY
