#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every command of the README's shell blocks as a new user types them, in the source tree,
# and checks that each exits as documented, prints what the README promises and no CRITICAL
# finding it does not. The commands are read from README.md itself, so a command added there
# without an expectation below fails this test until one is written.
#
# usage: new_user.sh SOURCE_DIR BUILD_DIR
set -uo pipefail

src=${1:?source dir}
build=${2:?build dir}
cd "$src" || exit 2

work=$(mktemp -d /tmp/cardiac-new-user.XXXXXX)
agent_pid=""
cleanup() {
  if [ -n "$agent_pid" ]; then
    pkill -TERM -P "$agent_pid" 2>/dev/null
    kill "$agent_pid" 2>/dev/null
    wait "$agent_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

failures=0
checked=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The commands of every ```sh block, continuation lines joined, comments dropped.
readme_commands() {
  awk '
    /^```sh/ { inside = 1; next }
    /^```/ { inside = 0; next }
    inside {
      line = $0
      sub(/[ \t]+#.*$/, "", line)
      if (line ~ /\\$/) { sub(/\\$/, "", line); acc = acc line; next }
      acc = acc line
      gsub(/[ \t]+/, " ", acc)
      if (acc != "" && acc != " ") print acc
      acc = ""
    }' README.md
}

# The README writes ./build and /tmp; the test runs the tree under test and writes in its own
# scratch folder, so parallel runs and other trees never collide.
localise() {
  local cmd=$1
  cmd=${cmd//\/tmp\//$work\/}
  cmd=${cmd//.\/build\//$build\/}
  cmd=${cmd// build\/tests\// $build\/tests\/}
  printf '%s' "$cmd"
}

# run CMD: runs it with its output in $work/out, sets $rc.
run() {
  bash -c "$1" >"$work/out" 2>&1 </dev/null
  rc=$?
}

expect_rc() {
  local cmd=$1 allowed=$2
  case " $allowed " in
  *" $rc "*) ;;
  *)
    fail "'$cmd' exited $rc, documented: $allowed"
    sed 's/^/    | /' "$work/out" | head -40
    ;;
  esac
}

expect_out() {
  local cmd=$1 pattern=$2
  grep -Eq -- "$pattern" "$work/out" || {
    fail "'$cmd' did not print /$pattern/"
    sed 's/^/    | /' "$work/out" | head -40
  }
}

expect_no_out() {
  local cmd=$1 pattern=$2
  if grep -Eq -- "$pattern" "$work/out"; then
    fail "'$cmd' printed /$pattern/:"
    grep -E -- "$pattern" "$work/out" | head -10 | sed 's/^/    | /'
  fi
}

# Ready means answering /healthz and holding a first sample: /healthz is 200 during the start
# grace too, and a slow machine (the sanitizer tree) may take a while to the first sample.
wait_for_agent() {
  local i
  for i in $(seq 1 300); do
    if curl -sf -o /dev/null "http://127.0.0.1:9847/healthz" &&
      curl -sf "http://127.0.0.1:9847/metrics" |
      grep -Eq '^cardiac_agent_samples_total(\{[^}]*\})? [1-9]'; then
      return 0
    fi
    if ! kill -0 "$agent_pid" 2>/dev/null; then return 1; fi
    sleep 0.1 # polling for a state, bounded at 30 s; nothing is timed
  done
  return 1
}

while IFS= read -r readme_cmd; do
  cmd=$(localise "$readme_cmd")
  checked=$((checked + 1))
  echo "== $readme_cmd"
  case "$readme_cmd" in
  "sudo scripts/setup.sh")
    # This test runs inside the tree setup.sh built; check it is there to be run.
    [ -x scripts/setup.sh ] || fail "scripts/setup.sh is not executable"
    ;;
  "ctest --preset release")
    # Running the suite from inside the suite would recurse; the preset must exist.
    grep -q '"name": "release"' CMakePresets.json || fail "no release test preset"
    ;;
  "./build/cardiac status")
    run "$cmd"
    # 0 or 1 on a GPU machine; 3 with the reason where there is no NVIDIA driver.
    expect_rc "$readme_cmd" "0 1 3"
    if [ "$rc" = 3 ]; then expect_out "$readme_cmd" "NVML|driver"; fi
    ;;
  *"thermal-throttle.json"*"cardiac status"*)
    run "$cmd"
    expect_rc "$readme_cmd" "1"
    expect_out "$readme_cmd" "thermal slowdown"
    ;;
  *"data-loading.json"*"cardiac doctor"*)
    run "$cmd"
    expect_rc "$readme_cmd" "1"
    expect_out "$readme_cmd" "[Dd]ata[- ]loading|data loader|iowait"
    expect_no_out "$readme_cmd" "CRITICAL"
    ;;
  *"cardiac doctor --offline"*"xid79-aer-surprise-down"*)
    run "$cmd"
    expect_rc "$readme_cmd" "1"
    [ -s "$work/report.html" ] || fail "'$readme_cmd' wrote no $work/report.html"
    grep -q "Xid 79" "$work/report.html" 2>/dev/null ||
      fail "the HTML report does not name Xid 79"
    ;;
  *"cardiac agent"*"&")
    # bash runs a lone command in its own process, so $! is the agent itself.
    bash -c "${cmd%&}" >"$work/agent.log" 2>&1 </dev/null &
    agent_pid=$!
    if ! wait_for_agent; then
      fail "the agent did not answer /healthz with a first sample on 127.0.0.1:9847"
      sed 's/^/    | /' "$work/agent.log" | head -40
    fi
    ;;
  "curl 127.0.0.1:9847/metrics")
    run "$cmd"
    expect_rc "$readme_cmd" "0"
    expect_out "$readme_cmd" "^cardiac_gpu_temperature_celsius|^cardiac_gpu_"
    ;;
  *"cardiac alerts --state-dir"*)
    # The README promises an alert within a second; poll for it, bounded.
    for _ in $(seq 1 100); do
      run "$cmd"
      grep -qi "temperature\|thermal" "$work/out" && break
      sleep 0.1
    done
    expect_rc "$readme_cmd" "0 1"
    expect_out "$readme_cmd" "[Tt]emperature|[Tt]hermal"
    ;;
  *"cardiac top --state-dir"*)
    # Full screen: in a detached tmux session of 80x24, as a person at a terminal sees it; q
    # quits and gives the terminal back.
    command -v tmux >/dev/null || fail "tmux is not installed (scripts/setup.sh installs it)"
    sock="cardiac-new-user-$$"
    tmux -L "$sock" -f /dev/null new-session -d -s t -x 80 -y 24 \
      "sh -c '$cmd; echo top-exit=\$?; exec cat'"
    for _ in $(seq 1 100); do
      tmux -L "$sock" capture-pane -p -t t >"$work/out"
      grep -q "agent 127.0.0.1:9847" "$work/out" && grep -q "thermal" "$work/out" && break
      sleep 0.1 # polling for the first frame, bounded at 10 s
    done
    expect_out "$readme_cmd" "agent 127\.0\.0\.1:9847"
    expect_out "$readme_cmd" "hw_thermal|thermal"
    tmux -L "$sock" send-keys -t t q
    for _ in $(seq 1 100); do
      tmux -L "$sock" capture-pane -p -t t >"$work/out"
      grep -q "top-exit=" "$work/out" && break
      sleep 0.1 # polling for the exit, bounded at 10 s
    done
    expect_out "$readme_cmd" "top-exit=0"
    tmux -L "$sock" kill-server 2>/dev/null || true
    ;;
  *"cardiac sim --trace"*)
    run "$cmd"
    expect_rc "$readme_cmd" "0"
    expect_out "$readme_cmd" "fcfs"
    expect_out "$readme_cmd" "backfill"
    expect_out "$readme_cmd" "fairshare"
    ;;
  *"cardiac sim --synth"*)
    run "$cmd"
    expect_rc "$readme_cmd" "0"
    [ -s "$work/sim.html" ] || fail "'$readme_cmd' wrote no $work/sim.html"
    ;;
  *"cardiac sim checkpoint"*)
    run "$cmd"
    expect_rc "$readme_cmd" "0"
    expect_out "$readme_cmd" "Young"
    expect_out "$readme_cmd" "Daly"
    expect_no_out "$readme_cmd" "nan|inf"
    ;;
  *)
    fail "README command with no expectation in tests/e2e/new_user.sh: $readme_cmd"
    ;;
  esac
done < <(readme_commands)

if [ "$checked" -lt 10 ]; then
  fail "only $checked commands read from README.md; the block parser lost some"
fi
echo "new user: $checked README commands, $failures failed"
[ "$failures" -eq 0 ]
