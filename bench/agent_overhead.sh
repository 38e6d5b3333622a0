#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `cardiac agent` costs the node (8 fake GPUs, 1 s sampling), side by side with Debian's
# prometheus-node-exporter, both started on free loopback ports and run at the same time.
#
# Every cost is the whole process tree: the agent and every descendant (its NVML worker, which
# also waits on NVML's events, anything else it runs), found through /proc/PID/task/*/children
# (or, on kernels without that file, the parent pids in every /proc/PID/stat).
#   - CPU: utime+stime from /proc/PID/stat before and after a phase, over every process of the
#     tree; children reaped during the phase count through the agent's cutime+cstime;
#   - RSS and PSS: VmRSS (/proc/PID/status) and Pss (/proc/PID/smaps_rollup) summed over the
#     tree, the maximum over the phase (read every 0.5 s);
#   - writes: write_bytes from /proc/PID/io (bytes sent to the block layer), summed.
# Phases, each PHASE_SECONDS long, after a 5 s warm-up: no scrape, a scrape every 15 s, a scrape
# every second (Prometheus-like: Accept-Encoding: gzip, a new connection each), no scrape again
# (what changed with time alone). Then the cost of one scrape per coding: SCRAPES back-to-back
# scrapes with no Accept-Encoding, with gzip and with br; the tree's CPU over them, less what
# the tree uses idle in that time (the last phase), divided by SCRAPES. node-exporter gets the
# same scrapes (it offers no br).
# The scraping client's own CPU is not counted. Both servers share the machine's CPUs.
# The fake libnvidia-ml's own time (in the workers) is part of the tree's CPU but would be the
# driver's on a real node: when `perf` can sample the tree (PERF=auto, the default; PERF=0 to
# skip), one more no-scrape phase runs under `perf record --call-graph dwarf`, and the share of
# samples with the fake library anywhere on the stack, applied to the first no-scrape phase's
# CPU, is reported as the fake's time and taken off every phase ("less fake").
#
# Usage: bench/agent_overhead.sh [BUILD_DIR] [PHASE_SECONDS] [SCRAPES]
#        bench/agent_overhead.sh build 60 200        # the default, about 4.5 minutes
# Environment: INTERVAL (agent sampling, default 1s), NODE_EXPORTER (its path), PERF (auto|0),
# AGENT_CONFIG (TOML appended to the agent's configuration, e.g. $'[queue]\nenabled = false').
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
PHASE=${2:-60}
SCRAPES=${3:-200}
INTERVAL=${INTERVAL:-1s}
PERF=${PERF:-auto}
AGENT_CONFIG=${AGENT_CONFIG:-}

CARDIAC=$BUILD/cardiac
FAKE=$BUILD/tests/fake_nvml/libnvidia-ml.so.1
SCENARIO=$ROOT/tests/fixtures/scenarios/healthy-8xh100.json
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
for f in "$CARDIAC" "$FAKE" "$SCENARIO" "$NODE_EXPORTER"; do
  [[ -e $f ]] || { echo "missing $f" >&2; exit 2; }
done

exec python3 - "$CARDIAC" "$FAKE" "$SCENARIO" "$NODE_EXPORTER" "$PHASE" "$SCRAPES" "$INTERVAL" \
  "$PERF" "$AGENT_CONFIG" <<'PY'
import glob, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

cardiac, fake, scenario, node_exporter, phase, scrapes, interval, use_perf, extra = sys.argv[1:10]
phase, scrapes = float(phase), int(scrapes)
HZ = os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def get(port, path, coding=None, timeout=5):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if coding: req.add_header("Accept-Encoding", coding)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, len(r.read()), r.headers.get("Content-Encoding", "")
    except Exception:
        return 0, 0, ""

def read(path):
    try:
        with open(path) as f: return f.read()
    except OSError:
        return ""

def children_by_scan():
    """ppid -> children, from every /proc/PID/stat (kernels without CONFIG_PROC_CHILDREN)."""
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        s = read(f"/proc/{p}/stat")
        if s: kids.setdefault(int(s.rsplit(")", 1)[1].split()[1]), []).append(int(p))
    return kids

HAVE_CHILDREN_FILE = bool(glob.glob(f"/proc/{os.getpid()}/task/*/children"))

def tree(pid):
    """pid and all its descendants."""
    scanned = None if HAVE_CHILDREN_FILE else children_by_scan()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        if scanned is not None:
            todo += scanned.get(p, [])
            continue
        for kids in glob.glob(f"/proc/{p}/task/*/children"):
            todo += [int(k) for k in read(kids).split()]
    return out

def stat(pid):
    s = read(f"/proc/{pid}/stat")
    if not s: return None
    f = s.rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime: fields 14-17 of proc(5)
    return int(f[11]) + int(f[12]), int(f[13]) + int(f[14])

def field(path, key):
    for line in read(path).splitlines():
        if line.startswith(key): return int(line.split()[1])
    return 0

def role(pid, root):
    if pid == root: return "main"
    cmd = read(f"/proc/{pid}/cmdline").split("\0")
    if "__nvml-worker" in cmd: return "NVML worker"
    return os.path.basename(cmd[0]) if cmd and cmd[0] else "?"

def snapshot(root):
    """CPU ticks per pid (and the root's reaped children), write_bytes sum, roles."""
    cpu, writes, roles = {}, 0, {}
    for p in tree(root):
        st = stat(p)
        if st is None: continue
        cpu[p] = st[0]
        if p == root: cpu["reaped"] = st[1]
        writes += field(f"/proc/{p}/io", "write_bytes:")
        roles[p] = role(p, root)
    return cpu, writes, roles

def cpu_delta(a, b):
    """Ticks used between snapshots a and b, per pid (new pids count whole)."""
    return {p: t - a[0].get(p, 0) for p, t in b[0].items()}

def memory(root):
    rss = pss = 0
    for p in tree(root):
        rss += field(f"/proc/{p}/status", "VmRSS:")
        pss += field(f"/proc/{p}/smaps_rollup", "Pss:")
    return rss, pss

def wait_until(cond, timeout, what):
    until = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > until: raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)

def run_phase(servers, every, coding="gzip"):
    """PHASE seconds, scraping every `every` s (None: never). Per server: CPU %, by role,
    max RSS/PSS (KiB), write_bytes/s, scrapes answered and failed."""
    start = {k: snapshot(pid) for k, (pid, port) in servers.items()}
    peak = {k: (0, 0) for k in servers}
    ok = {k: 0 for k in servers}; bad = {k: 0 for k in servers}
    t0 = time.monotonic(); next_scrape, next_probe = t0, t0
    while True:
        now = time.monotonic()
        if now - t0 >= phase: break
        if now >= next_probe:
            for k, (pid, _) in servers.items():
                r, q = memory(pid)
                peak[k] = (max(peak[k][0], r), max(peak[k][1], q))
            next_probe += 0.5
        if every is not None and now >= next_scrape:
            for k, (_, port) in servers.items():
                if get(port, "/metrics", coding)[0] == 200: ok[k] += 1
                else: bad[k] += 1
            next_scrape = max(next_scrape + every, time.monotonic())
        wake = next_probe if every is None else min(next_scrape, next_probe)
        time.sleep(max(0.0, min(wake, t0 + phase) - time.monotonic()))
    elapsed = time.monotonic() - t0
    out = {}
    for k, (pid, _) in servers.items():
        end = snapshot(pid)
        d = cpu_delta(start[k], end)
        by_role = {}
        for p, ticks in d.items():
            name = "main (reaped children)" if p == "reaped" else end[2].get(p, "?")
            by_role[name] = by_role.get(name, 0) + ticks
        out[k] = dict(cpu=sum(d.values()) / HZ / elapsed * 100,
                      roles={r: t / HZ / elapsed * 100 for r, t in by_role.items()},
                      rss=peak[k][0], pss=peak[k][1],
                      writes=(end[1] - start[k][1]) / elapsed,
                      ok=ok[k], bad=bad[k], elapsed=elapsed)
    return out

def fake_share(root, seconds, workdir):
    """The share of the tree's CPU samples with the fake libnvidia-ml on the stack, or None."""
    if use_perf == "0" or not shutil.which("perf"): return None
    data = f"{workdir}/perf.data"
    pids = ",".join(str(p) for p in tree(root))
    rec = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999",
                          "--call-graph", "dwarf,16384", "-o", data, "-p", pids, "--",
                          "sleep", str(seconds)], capture_output=True, text=True)
    if rec.returncode != 0: return None
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,dso"], capture_output=True,
                         text=True).stdout
    total = with_fake = 0
    for sample in out.split("\n\n"):
        if not sample.strip(): continue
        total += 1
        if "libnvidia-ml" in sample: with_fake += 1
    return (with_fake / total, total) if total else None

def scrape_cost(pid, port, coding, idle_pct):
    """CPU per scrape in ms: SCRAPES scrapes back to back, less the idle rate over that time."""
    before = snapshot(pid); t0 = time.monotonic()
    sizes, got = set(), ""
    for _ in range(scrapes):
        status, size, enc = get(port, "/metrics", coding)
        if status != 200: raise SystemExit(f"scrape of :{port} with {coding} failed")
        sizes.add(size); got = enc
    elapsed = time.monotonic() - t0
    after = snapshot(pid)
    ticks = sum(cpu_delta(before, after).values())
    total_ms = ticks / HZ * 1000
    idle_ms = idle_pct / 100 * elapsed * 1000
    return dict(raw=total_ms / scrapes, net=max(0.0, total_ms - idle_ms) / scrapes,
                size=max(sizes), coding=got or "identity", elapsed=elapsed)

d = tempfile.mkdtemp(prefix="cardiac-overhead-")
ap, npt = free_port(), free_port()
open(f"{d}/kern.log", "w").close()
with open(f"{d}/cardiac.toml", "w") as f:
    f.write(f'[nvml]\nlibrary = "{fake}"\n[kmsg]\nsource = "{d}/kern.log"\n'
            f'[agent]\nstate_dir = "{d}/state"\nlisten = "127.0.0.1:{ap}"\n'
            f'interval = "{interval}"\n')
    if extra: f.write(extra + "\n")
env = dict(os.environ, CARDIAC_FAKE_NVML_SCENARIO=scenario)
agent = subprocess.Popen([cardiac, "agent", "--config", f"{d}/cardiac.toml"], env=env,
                         stdin=subprocess.DEVNULL, stdout=open(f"{d}/agent.log", "w"),
                         stderr=subprocess.STDOUT)
nexp = subprocess.Popen([node_exporter, f"--web.listen-address=127.0.0.1:{npt}"],
                        stdin=subprocess.DEVNULL, stdout=open(f"{d}/ne.log", "w"),
                        stderr=subprocess.STDOUT)
try:
    wait_until(lambda: get(ap, "/healthz")[0] == 200, 30, "the agent's /healthz")
    wait_until(lambda: get(npt, "/metrics")[0] == 200, 30, "node-exporter's /metrics")
    time.sleep(5)
    servers = {"cardiac": (agent.pid, ap), "node-exporter": (nexp.pid, npt)}
    roles = sorted(set(snapshot(agent.pid)[2].values()))
    print(f"cardiac's tree: {', '.join(roles)}; sampling every {interval}; "
          f"{phase:.0f} s per phase", flush=True)
    phases = []
    for name, every in (("no scrape", None), ("15 s scrape", 15.0), ("1 Hz scrape", 1.0),
                        ("no scrape 2", None)):
        r = run_phase(servers, every)
        phases.append((name, r))
        c = r["cardiac"]
        print(f"{name}: cardiac {c['cpu']:.2f} % ({c['ok']} scrapes, {c['bad']} failed), "
              f"node-exporter {r['node-exporter']['cpu']:.2f} %", flush=True)
    # The nearest idle phase in time: the store's work grows over a run (see the README).
    idle = {k: phases[-1][1][k]["cpu"] for k in servers}
    fake_frac = fake_share(agent.pid, phase, d)
    costs = []
    for k, codings in (("cardiac", (None, "gzip", "br")), ("node-exporter", (None, "gzip"))):
        for coding in codings:
            pid, port = servers[k]
            costs.append((k, coding or "none", scrape_cost(pid, port, coding, idle[k])))
    alive = agent.poll() is None and nexp.poll() is None
finally:
    for p in (agent, nexp):
        p.send_signal(signal.SIGTERM)
        try: p.wait(10)
        except subprocess.TimeoutExpired: p.kill(); p.wait()
    shutil.rmtree(d, ignore_errors=True)
if not alive: raise SystemExit("a server died during the run")

mib = lambda k: k / 1024
print()
print(f"Whole process trees; CPU in % of one core (utime+stime, {HZ} ticks/s, "
      f"±{100 / HZ / phase:.2f} %); RSS/PSS = max of the tree's sum in MiB; writes = "
      f"write_bytes in KiB/s")
print(f"{'phase':>12} | {'cardiac':>7} {'RSS':>6} {'PSS':>6} {'writes':>7} | "
      f"{'node-exp':>8} {'RSS':>6} {'PSS':>6} {'writes':>7}")
for name, r in phases:
    c, n = r["cardiac"], r["node-exporter"]
    print(f"{name:>12} | {c['cpu']:7.2f} {mib(c['rss']):6.1f} {mib(c['pss']):6.1f} "
          f"{c['writes'] / 1024:7.1f} | {n['cpu']:8.2f} {mib(n['rss']):6.1f} "
          f"{mib(n['pss']):6.1f} {n['writes'] / 1024:7.1f}")
print()
print("cardiac's CPU by process, % of one core")
for name, r in phases:
    parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["cardiac"]["roles"].items()))
    print(f"{name:>12} | {parts}")
print()
print(f"One scrape ({scrapes} back to back, new connection each): CPU in ms, raw and less "
      "the idle rate")
print(f"{'server':>13} {'Accept-Enc.':>11} {'answered':>9} {'bytes':>7} | {'raw':>6} {'net':>6}")
for k, coding, c in costs:
    print(f"{k:>13} {coding:>11} {c['coding']:>9} {c['size']:>7} | {c['raw']:6.2f} "
          f"{c['net']:6.2f}")
print()
if fake_frac is None:
    print("the fake library's share: not measured (no perf, or PERF=0)")
else:
    frac, n = fake_frac
    print(f"the fake library's share of the tree's CPU (perf, {n} samples, no scrape): "
          f"{frac * 100:.0f} %")
    # The fake's time does not change with scrapes: the same amount comes off every phase.
    fake_pct = frac * phases[0][1]["cardiac"]["cpu"]
    print(f"{'phase':>12} | {'cardiac':>7} {'fake':>6} {'less fake':>9}")
    for name, r in phases:
        c = r["cardiac"]["cpu"]
        print(f"{name:>12} | {c:7.2f} {fake_pct:6.2f} {max(0.0, c - fake_pct):9.2f}")
print("goals at 1 s sampling: the tree less the fake <= 0.25 % of a core with no scrape; "
      "<= 50 % of node-exporter at 1 Hz; RSS <= 30 MiB")
PY
