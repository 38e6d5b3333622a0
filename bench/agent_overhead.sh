#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CPU and memory of a running `cardiac agent` (8 fake GPUs), side by side with Debian's
# prometheus-node-exporter, both scraped on /metrics at the same rate.
#
# For each interval (default 1s, then 100ms = 10 Hz) it starts the agent (that interval,
# default rules, store on, kernel log = an empty file) and node-exporter on free loopback
# ports, waits for both to answer, lets the agent warm up for 3 s, then for DURATION seconds
# scrapes both /metrics at 1/interval Hz (one new connection per scrape, like curl) while
# reading every 0.5 s:
#   - CPU: utime+stime from /proc/PID/stat (all threads) before and after, for the agent, its
#     NVML worker child (the `cardiac` child process), and node-exporter; shown as % of one core;
#   - RSS: VmRSS from /proc/PID/status, maximum over the run (agent, worker, total), and PSS
#     (Pss from /proc/PID/smaps_rollup: shared pages such as libc and the cardiac binary,
#     which agent and worker both map, counted once in the total).
# The scraping client's own CPU is not counted. Agent and node-exporter run at the same time,
# so they compete for the same CPUs.
#
# Usage: bench/agent_overhead.sh [BUILD_DIR] [DURATION_S] [INTERVALS...]
#        bench/agent_overhead.sh build 60 1s 100ms        # about 2.5 minutes
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
DURATION=${2:-60}
shift 2 2>/dev/null || shift $#
INTERVALS=("$@")
[[ ${#INTERVALS[@]} -gt 0 ]] || INTERVALS=(1s 100ms)

CARDIAC=$BUILD/cardiac
FAKE=$BUILD/tests/fake_nvml/libnvidia-ml.so.1
SCENARIO=$ROOT/tests/fixtures/scenarios/healthy-8xh100.json
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
for f in "$CARDIAC" "$FAKE" "$SCENARIO" "$NODE_EXPORTER"; do
  [[ -e $f ]] || { echo "missing $f" >&2; exit 2; }
done

exec python3 - "$CARDIAC" "$FAKE" "$SCENARIO" "$NODE_EXPORTER" "$DURATION" "${INTERVALS[@]}" <<'PY'
import os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

cardiac, fake, scenario, node_exporter, duration = sys.argv[1:6]
duration = float(duration)
intervals = sys.argv[6:]
HZ = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024

def seconds(text):
    if text.endswith("ms"): return float(text[:-2]) / 1000
    if text.endswith("s"): return float(text[:-1])
    raise SystemExit(f"bad interval {text}")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def get(port, path, timeout=2):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            r.read(); return r.status
    except Exception:
        return 0

def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"): return int(line.split()[1])
    return 0

def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"): return int(line.split()[1])
    except OSError:
        pass
    return 0

def worker_of(pid):
    kids = []
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            with open(f"/proc/{p}/stat") as f: s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        ppid = int(s.rsplit(")", 1)[1].split()[1])
        if ppid == pid and name == "cardiac": kids.append(int(p))
    return kids[0] if len(kids) == 1 else None

def wait_until(cond, timeout, what):
    until = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > until: raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)

rows = []
for interval in intervals:
    iv = seconds(interval)
    d = tempfile.mkdtemp(prefix="cardiac-overhead-")
    ap, npt = free_port(), free_port()
    open(f"{d}/kern.log", "w").close()
    with open(f"{d}/cardiac.toml", "w") as f:
        f.write(f'[nvml]\nlibrary = "{fake}"\n[kmsg]\nsource = "{d}/kern.log"\n'
                f'[agent]\nstate_dir = "{d}/state"\nlisten = "127.0.0.1:{ap}"\n'
                f'interval = "{interval}"\n')
    env = dict(os.environ, CARDIAC_FAKE_NVML_SCENARIO=scenario)
    agent = subprocess.Popen([cardiac, "agent", "--config", f"{d}/cardiac.toml"], env=env,
                             stdin=subprocess.DEVNULL, stdout=open(f"{d}/agent.log", "w"),
                             stderr=subprocess.STDOUT)
    nexp = subprocess.Popen([node_exporter, f"--web.listen-address=127.0.0.1:{npt}"],
                            stdin=subprocess.DEVNULL, stdout=open(f"{d}/ne.log", "w"),
                            stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: get(ap, "/healthz") == 200, 30, "the agent's /healthz")
        wait_until(lambda: get(npt, "/metrics") == 200, 30, "node-exporter's /metrics")
        wait_until(lambda: worker_of(agent.pid) is not None, 10, "the NVML worker")
        time.sleep(3)
        worker = worker_of(agent.pid)
        pids = {"agent": agent.pid, "worker": worker, "node-exporter": nexp.pid}
        c0 = {k: cpu_ticks(p) for k, p in pids.items()}
        rss = {k: 0 for k in pids}
        rss_total_agent = 0
        pss = {k: 0 for k in pids}
        pss_total_agent = 0
        t0 = time.monotonic()
        next_scrape, next_probe = t0, t0
        scrapes = {"agent": 0, "node-exporter": 0}
        failed = {"agent": 0, "node-exporter": 0}
        while True:
            now = time.monotonic()
            if now - t0 >= duration: break
            if now >= next_probe:
                r = {k: rss_kib(p) for k, p in pids.items()}
                for k in pids: rss[k] = max(rss[k], r[k])
                rss_total_agent = max(rss_total_agent, r["agent"] + r["worker"])
                q = {k: pss_kib(p) for k, p in pids.items()}
                for k in pids: pss[k] = max(pss[k], q[k])
                pss_total_agent = max(pss_total_agent, q["agent"] + q["worker"])
                next_probe += 0.5
            if now >= next_scrape:
                for k, port in (("agent", ap), ("node-exporter", npt)):
                    if get(port, "/metrics", timeout=5) == 200: scrapes[k] += 1
                    else: failed[k] += 1
                next_scrape += iv
                if next_scrape < time.monotonic(): next_scrape = time.monotonic()
            time.sleep(max(0.0, min(next_scrape, next_probe) - time.monotonic()))
        elapsed = time.monotonic() - t0
        c1 = {k: cpu_ticks(p) for k, p in pids.items()}
        if worker_of(agent.pid) != worker:
            print(f"warning: the NVML worker restarted during the {interval} run", file=sys.stderr)
        pct = {k: (c1[k] - c0[k]) / HZ / elapsed * 100 for k in pids}
        rows.append((interval, elapsed, scrapes, failed, pct, rss, rss_total_agent, pss,
                     pss_total_agent))
        print(f"{interval}: {elapsed:.1f} s, scrapes agent {scrapes['agent']} "
              f"(failed {failed['agent']}), node-exporter {scrapes['node-exporter']} "
              f"(failed {failed['node-exporter']})", flush=True)
    finally:
        for p in (agent, nexp):
            p.send_signal(signal.SIGTERM)
            try: p.wait(10)
            except subprocess.TimeoutExpired: p.kill(); p.wait()
        shutil.rmtree(d, ignore_errors=True)

mib = lambda k: k / 1024
print()
print(f"CPU in % of one core (utime+stime, {HZ} ticks/s); RSS = max VmRSS in MiB")
print(f"{'interval':>8} | {'agent':>6} {'worker':>6} {'total':>6} | {'RSS agent':>9} "
      f"{'worker':>6} {'total':>6} | {'node-exp':>8} {'RSS':>6}")
for interval, elapsed, scrapes, failed, pct, rss, tot, pss, ptot in rows:
    print(f"{interval:>8} | {pct['agent']:6.2f} {pct['worker']:6.2f} "
          f"{pct['agent'] + pct['worker']:6.2f} | {mib(rss['agent']):9.1f} "
          f"{mib(rss['worker']):6.1f} {mib(tot):6.1f} | {pct['node-exporter']:8.2f} "
          f"{mib(rss['node-exporter']):6.1f}")
print()
print("PSS (shared pages split between the processes that map them) = max Pss from")
print("/proc/PID/smaps_rollup in MiB")
print(f"{'interval':>8} | {'agent':>6} {'worker':>6} {'total':>6} | {'node-exp':>8}")
for interval, elapsed, scrapes, failed, pct, rss, tot, pss, ptot in rows:
    print(f"{interval:>8} | {mib(pss['agent']):6.1f} {mib(pss['worker']):6.1f} {mib(ptot):6.1f} | "
          f"{mib(pss['node-exporter']):8.1f}")
print("targets at 1 Hz: agent+worker <= 0.5 % of one core, <= 30 MiB RSS")
PY
