#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the running agent writes to disk: `cardiac agent` on the 8-GPU fake NVML (scenario
# healthy-8xh100, default config, 1 s sampling) for SECONDS, its state directory on a real
# disk, and write_bytes of its whole process tree (/proc/PID/io of the agent and every
# descendant; children it reaped count through the agent's own counter) read every PERIOD s.
#
# write_bytes is what the kernel charges the process for dirtying page-cache pages of files
# (and mmapped file pages, such as SQLite's -shm), i.e. bytes bound for the block device; a
# page dirtied again before writeback is charged once. The file system's own journal is not
# charged to the process. wchar (bytes passed to write(2)) is shown beside it.
# The state directory must not be on tmpfs (nothing would reach a disk); the default parent,
# /var/tmp, is checked with `stat -f`.
#
# Usage: bench/agent_writes.sh [BUILD_DIR] [SECONDS] [PERIOD] [STATE_PARENT]
#        bench/agent_writes.sh build 3600 300 /var/tmp     # the default: one hour
# Environment: INTERVAL (agent sampling, default 1s), KEEP=1 keeps the state directory.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
SECONDS_TOTAL=${2:-3600}
PERIOD=${3:-300}
PARENT=${4:-/var/tmp}
INTERVAL=${INTERVAL:-1s}

CARDIAC=$BUILD/cardiac
FAKE=$BUILD/tests/fake_nvml/libnvidia-ml.so.1
SCENARIO=$ROOT/tests/fixtures/scenarios/healthy-8xh100.json
for f in "$CARDIAC" "$FAKE" "$SCENARIO"; do
  [[ -e $f ]] || { echo "missing $f" >&2; exit 2; }
done
fstype=$(stat -f -c %T "$PARENT")
if [[ $fstype == tmpfs || $fstype == ramfs ]]; then
  echo "$PARENT is on $fstype: pick a directory on a disk" >&2
  exit 2
fi
echo "state under $PARENT ($fstype, $(df --output=source "$PARENT" | tail -1))"

exec python3 - "$CARDIAC" "$FAKE" "$SCENARIO" "$SECONDS_TOTAL" "$PERIOD" "$PARENT" "$INTERVAL" \
  "${KEEP:-0}" <<'PY'
import glob, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

cardiac, fake, scenario, total, period, parent, interval, keep = sys.argv[1:9]
total, period = float(total), float(period)

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
            return r.status == 200
    except Exception:
        return False

def read(path):
    try:
        with open(path) as f: return f.read()
    except OSError:
        return ""

def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for kids in glob.glob(f"/proc/{p}/task/*/children"):
            todo += [int(k) for k in read(kids).split()]
    return out

def io(root):
    """write_bytes and wchar summed over the tree."""
    wb = wc = 0
    for p in tree(root):
        for line in read(f"/proc/{p}/io").splitlines():
            k, _, v = line.partition(":")
            if k == "write_bytes": wb += int(v)
            elif k == "wchar": wc += int(v)
    return wb, wc

def files(d):
    return {os.path.basename(f): os.path.getsize(f) for f in glob.glob(f"{d}/state/*")
            if os.path.isfile(f)}

d = tempfile.mkdtemp(prefix="cardiac-writes-", dir=parent)
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
MBDAY = 86400 / 1e6
try:
    until = time.monotonic() + 30
    while not healthy(port):
        if time.monotonic() > until or agent.poll() is not None:
            raise SystemExit("the agent did not come up; see " + d)
        time.sleep(0.1)
    t0 = time.monotonic(); wb0, wc0 = io(agent.pid)
    print(f"agent tree up; {total:.0f} s from now, a line every {period:.0f} s "
          "(MB = 10^6 bytes)", flush=True)
    print(f"{'t (s)':>7} | {'write_bytes MB/day':>18} {'wchar MB/day':>12} | "
          f"{'since start':>11} | files", flush=True)
    last_t, last_wb, last_wc = t0, wb0, wc0
    while True:
        now = time.monotonic()
        if now - t0 >= total: break
        time.sleep(min(period - (now - t0) % period, t0 + total - now))
        if agent.poll() is not None: raise SystemExit("the agent died; see " + d)
        now = time.monotonic(); wb, wc = io(agent.pid)
        dt = now - last_t
        sizes = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(files(d).items()))
        print(f"{now - t0:7.0f} | {(wb - last_wb) / dt * MBDAY:18.1f} "
              f"{(wc - last_wc) / dt * MBDAY:12.1f} | {(wb - wb0) / (now - t0) * MBDAY:11.1f} | "
              f"{sizes}", flush=True)
        last_t, last_wb, last_wc = now, wb, wc
    elapsed = time.monotonic() - t0
    print(f"\nwhole run, {elapsed:.0f} s: write_bytes {(last_wb - wb0) / 1e6:.1f} MB = "
          f"{(last_wb - wb0) / elapsed * MBDAY:.1f} MB/day; wchar {(last_wc - wc0) / 1e6:.1f} MB "
          f"= {(last_wc - wc0) / elapsed * MBDAY:.1f} MB/day", flush=True)
    print("target: write_bytes <= 150 MB/day")
finally:
    agent.send_signal(signal.SIGTERM)
    try: agent.wait(10)
    except subprocess.TimeoutExpired: agent.kill(); agent.wait()
    if keep == "1": print("kept", d)
    else: shutil.rmtree(d, ignore_errors=True)
PY
