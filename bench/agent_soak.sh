#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A long run of `cardiac agent` (8 fake GPUs, 1 s sampling, default configuration), sampled every
# minute: the curve of what its whole process tree (the agent and every worker) holds and uses.
# Whether the agent's memory stays flat and its disk writes stay level as the store grows is
# something only hours show; agent_overhead.sh measures minutes.
#
# Every SAMPLE seconds (default 60) one row:
#   min           minutes since the first row
#   rss_main      VmRSS of the agent process alone (MiB): the one that must stay flat
#   anon, file    its RssAnon (heap, stacks) and RssFile (mapped files: the binary, the
#                 libraries, the store's pages a mapped query read) (MiB)
#   peak          its VmHWM so far (MiB): the highest RSS the kernel saw, also between rows
#                 (a seal every 10 minutes, the hourly roll-up)
#   rss_tree      VmRSS summed over the tree (MiB)
#   pss_tree      Pss (smaps_rollup) summed over the tree (MiB)
#   cpu_pct       the tree's utime+stime over the last interval, % of one core (reaped children
#                 included through the agent's cutime+cstime)
#   wr_kib_s      the tree's write_bytes (/proc/PID/io) over the last interval, KiB/s
#   db_mib        cardiac.db + -wal + -shm on disk (MiB)
#   procs         processes in the tree
#   heap, free, sqlite  what the agent's /metrics says of its own memory (read every 10 s), in
#                 MiB: cardiac_agent_heap_in_use_bytes (live blocks), _heap_free_bytes (free
#                 but kept) and _sqlite_memory_bytes (SQLite's part of the live blocks);
#                 "-" for a build without them. Where a rise of anon comes from.
# Optionally SCRAPE_EVERY seconds (default 15, 0: never) one gzip /metrics scrape, as a
# Prometheus would. At the end: first/last/min/max of rss_main and the drift per hour; the
# least-squares slope of anon after SETTLE minutes, and its mean in each hour.
#
# Usage: bench/agent_soak.sh [BUILD_DIR] [MINUTES] [OUT_FILE]
#        bench/agent_soak.sh build 60 /tmp/soak.txt     # one hour; the rows also go to stdout
# Environment: SAMPLE (seconds between rows, 60), SCRAPE_EVERY (15), INTERVAL (1s), SETTLE
# (15: the minutes the anon slope and hourly means leave out, the first seal and roll-up).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
MINUTES=${2:-60}
OUT=${3:-/dev/null}
SAMPLE=${SAMPLE:-60}
SCRAPE_EVERY=${SCRAPE_EVERY:-15}
INTERVAL=${INTERVAL:-1s}

CARDIAC=$BUILD/cardiac
FAKE=$BUILD/tests/fake_nvml/libnvidia-ml.so.1
SCENARIO=$ROOT/tests/fixtures/scenarios/healthy-8xh100.json
for f in "$CARDIAC" "$FAKE" "$SCENARIO"; do
  [[ -e $f ]] || { echo "missing $f" >&2; exit 2; }
done

exec python3 - "$CARDIAC" "$FAKE" "$SCENARIO" "$MINUTES" "$OUT" "$SAMPLE" "$SCRAPE_EVERY" \
  "$INTERVAL" <<'PY'
import glob, os, re, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

cardiac, fake, scenario, minutes, out_path, sample, scrape_every, interval = sys.argv[1:9]
minutes, sample, scrape_every = float(minutes), float(sample), float(scrape_every)
settle = float(os.environ.get("SETTLE", "15"))
HZ = os.sysconf("SC_CLK_TCK")
out = open(out_path, "w")

def say(line):
    print(line, flush=True)
    out.write(line + "\n"); out.flush()

def read(path):
    try:
        with open(path) as f: return f.read()
    except OSError:
        return ""

def tree(pid):
    todo, found = [pid], []
    while todo:
        p = todo.pop(); found.append(p)
        for kids in glob.glob(f"/proc/{p}/task/*/children"):
            todo += [int(k) for k in read(kids).split()]
    return found

def field(path, key):
    for line in read(path).splitlines():
        if line.startswith(key): return int(line.split()[1])
    return 0

def ticks(pid, root):
    s = read(f"/proc/{pid}/stat")
    if not s: return 0
    f = s.rsplit(")", 1)[1].split()
    own = int(f[11]) + int(f[12])
    return own + (int(f[13]) + int(f[14]) if pid == root else 0)

def measure(root):
    procs = tree(root)
    return dict(rss_main=field(f"/proc/{root}/status", "VmRSS:"),
                anon=field(f"/proc/{root}/status", "RssAnon:"),
                peak=field(f"/proc/{root}/status", "VmHWM:"),
                file=field(f"/proc/{root}/status", "RssFile:"),
                rss=sum(field(f"/proc/{p}/status", "VmRSS:") for p in procs),
                pss=sum(field(f"/proc/{p}/smaps_rollup", "Pss:") for p in procs),
                ticks=sum(ticks(p, root) for p in procs),
                writes=sum(field(f"/proc/{p}/io", "write_bytes:") for p in procs),
                procs=len(procs))

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def get(port, path, coding=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if coding: req.add_header("Accept-Encoding", coding)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read(); return r.status
    except Exception:
        return 0

def self_memory(port):
    """The agent's own memory from its /metrics, MiB by column; None where absent."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except Exception:
        text = ""
    out = {}
    for col, name in (("heap", "heap_in_use_bytes"), ("free", "heap_free_bytes"),
                      ("sqlite", "sqlite_memory_bytes")):
        m = re.search(rf"^cardiac_agent_{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)
        out[col] = float(m.group(1)) / 2**20 if m else None
    return out

def cell(v):
    return f"{v:6.2f}" if v is not None else f"{'-':>6}"

d = tempfile.mkdtemp(prefix="cardiac-soak-")
port = free_port()
open(f"{d}/kern.log", "w").close()
with open(f"{d}/cardiac.toml", "w") as f:
    f.write(f'[nvml]\nlibrary = "{fake}"\n[kmsg]\nsource = "{d}/kern.log"\n'
            f'[agent]\nstate_dir = "{d}/state"\nlisten = "127.0.0.1:{port}"\n'
            f'interval = "{interval}"\n')
env = dict(os.environ, CARDIAC_FAKE_NVML_SCENARIO=scenario)
agent = subprocess.Popen([cardiac, "agent", "--config", f"{d}/cardiac.toml"], env=env,
                         stdin=subprocess.DEVNULL, stdout=open(f"{d}/agent.log", "w"),
                         stderr=subprocess.STDOUT)
mib = lambda kib: kib / 1024
rows = []
try:
    until = time.monotonic() + 30
    while get(port, "/healthz") != 200:
        if time.monotonic() > until: raise SystemExit("the agent did not become healthy")
        time.sleep(0.1)
    say(f"# cardiac agent soak: {minutes:.0f} min, a row every {sample:.0f} s, sampling every "
        f"{interval}, gzip scrape every {scrape_every:.0f} s" if scrape_every else
        f"# cardiac agent soak: {minutes:.0f} min, a row every {sample:.0f} s, no scrapes")
    say(f"{'min':>6} {'rss_main':>8} {'anon':>6} {'file':>6} {'peak':>6} {'rss_tree':>8} "
        f"{'pss_tree':>8} "
        f"{'cpu_pct':>7} "
        f"{'wr_kib_s':>8} {'db_mib':>7} {'procs':>5} {'heap':>6} {'free':>6} {'sqlite':>6}")
    t0 = time.monotonic()
    prev, prev_t = measure(agent.pid), t0
    next_row, next_scrape = t0, t0
    while True:
        now = time.monotonic()
        if agent.poll() is not None: raise SystemExit("the agent exited during the soak")
        if scrape_every and now >= next_scrape:
            get(port, "/metrics", "gzip")
            next_scrape += scrape_every
        if now >= next_row:
            m = measure(agent.pid)
            dt = max(now - prev_t, 1e-9)
            db = sum(os.path.getsize(p) for p in glob.glob(f"{d}/state/cardiac.db*"))
            row = dict(min=(now - t0) / 60, rss_main=mib(m["rss_main"]), rss=mib(m["rss"]),
                       anon=mib(m["anon"]), file=mib(m["file"]), peak=mib(m["peak"]),
                       pss=mib(m["pss"]), cpu=(m["ticks"] - prev["ticks"]) / HZ / dt * 100,
                       wr=(m["writes"] - prev["writes"]) / 1024 / dt, db=db / 2**20,
                       procs=m["procs"], **self_memory(port))
            if rows:  # the first row has no interval behind it: no rates
                rows.append(row)
                say(f"{row['min']:6.1f} {row['rss_main']:8.2f} {row['anon']:6.2f} "
                    f"{row['file']:6.2f} {row['peak']:6.2f} {row['rss']:8.2f} "
                    f"{row['pss']:8.2f} {row['cpu']:7.3f} {row['wr']:8.1f} {row['db']:7.2f} "
                    f"{row['procs']:5d} {cell(row['heap'])} {cell(row['free'])} "
                    f"{cell(row['sqlite'])}")
            else:
                say(f"{0.0:6.1f} {row['rss_main']:8.2f} {row['anon']:6.2f} {row['file']:6.2f} "
                    f"{row['peak']:6.2f} {row['rss']:8.2f} {row['pss']:8.2f} "
                    f"{'-':>7} {'-':>8} {row['db']:7.2f} {row['procs']:5d} {cell(row['heap'])} "
                    f"{cell(row['free'])} {cell(row['sqlite'])}")
                rows.append(dict(row, cpu=None, wr=None))
            prev, prev_t = m, now
            next_row += sample
            if now - t0 >= minutes * 60: break
        time.sleep(max(0.0, min(next_row, next_scrape if scrape_every else next_row)
                       - time.monotonic()))
finally:
    agent.send_signal(signal.SIGTERM)
    try: agent.wait(10)
    except subprocess.TimeoutExpired: agent.kill(); agent.wait()
    shutil.rmtree(d, ignore_errors=True)

main = [r["rss_main"] for r in rows]
hours = max(rows[-1]["min"] / 60, 1e-9)
cpus = [r["cpu"] for r in rows if r["cpu"] is not None]
wrs = [r["wr"] for r in rows if r["wr"] is not None]
say(f"# rss_main first {main[0]:.2f} last {main[-1]:.2f} min {min(main):.2f} max {max(main):.2f}"
    f" MiB; drift {(main[-1] - main[0]) / hours:+.2f} MiB/h; peak (VmHWM) {rows[-1]['peak']:.2f}"
    f" MiB")
# Flat or not: the rows before SETTLE minutes hold the first seal and roll-up's growth of the
# heap; after them, the least-squares slope of anon and its mean in each whole hour.
late = [r for r in rows if r["min"] >= settle]
if len(late) >= 2:
    xs, ys = [r["min"] / 60 for r in late], [r["anon"] for r in late]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    by_hour = {}
    for r in late: by_hour.setdefault(int(r["min"] // 60), []).append(r["anon"])
    hourly = "; ".join(f"hour {h + 1} {sum(v) / len(v):.2f} (min {min(v):.2f}, max {max(v):.2f})"
                       for h, v in sorted(by_hour.items()))
    say(f"# anon from minute {settle:.0f}: slope {slope:+.3f} MiB/h; mean {hourly} MiB")
if cpus:
    say(f"# cpu_pct mean {sum(cpus) / len(cpus):.3f} min {min(cpus):.3f} max {max(cpus):.3f}; "
        f"wr_kib_s mean {sum(wrs) / len(wrs):.1f} max {max(wrs):.1f}")
PY
