#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (the `fuzz` preset: clang 16, ASan + UBSan, ./build-fuzz) and
# runs each for a bounded time on a seed corpus generated from the test fixtures (fuzz/README.md).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default 30 s, every target
#
# CARDIAC_FUZZ_KEEP_GOING=1 runs libFuzzer in fork mode and keeps fuzzing after a finding, to
# collect every distinct one in a single run (triage); the exit status is the same.
#
# First replays the reproducers in fuzz/crashes-found/ (one line each that still fails), then
# prints one line per target. Exits 1 when any replay failed or any target crashed, leaked,
# timed out, ran out of memory or printed a sanitizer report; the input that did it is kept in
# build-fuzz/crashes/ with the target's log next to it. The committed corpora under
# fuzz/corpus/ are never modified: each run fuzzes a copy in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))

build="build-fuzz"
crashes=$build/crashes
# Optional: a markdown file whose table rows quote kernel-log lines in backticks (extra kmsg seeds).
reference=${CARDIAC_KMSG_REFERENCE:-}

echo "fuzz: configuring and building ./$build (cmake --preset fuzz)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

mapfile -t all_targets <"$build/fuzz/targets.txt"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi
for t in "${targets[@]}"; do
  if [ ! -x "$build/fuzz/fuzz_$t" ]; then
    echo "fuzz: no target '$t' (have: ${all_targets[*]})" >&2
    exit 2
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/cardiac-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$crashes" "$work/tmp"

# --- seed corpora ------------------------------------------------------------------------------

# Captured /proc + /sys trees: directories holding proc/ or sys/ (tests/fixtures/hosts/*, and
# the t0/t1 pairs of a scenario captured twice).
host_roots() {
  local d
  for d in tests/fixtures/hosts/*/ tests/fixtures/hosts/*/*/; do
    d=${d%/}
    case "$d" in */proc | */sys) continue ;; esac
    if [ -d "$d/proc" ] || [ -d "$d/sys" ]; then echo "$d"; fi
  done
}

# String literals from C++ sources, one file each: adjacent literals (plain or raw) are joined
# and escapes undone, as the compiler would.
#   c_literals OUT_DIR PREFIX MIN_LEN CONTEXT_REGEX FILE...
# CONTEXT_REGEX keeps the literals that follow it ("parse_rules\(" : the first argument of
# those calls); "" keeps every literal, and "-" keeps raw strings only.
c_literals() {
  local out=$1 prefix=$2 min=$3 context=$4
  shift 4
  perl -0777 -e '
    my ($out, $prefix, $min, $context) = splice(@ARGV, 0, 4);
    my $n = 0;
    my $raw = qr/R"([^(\s]{0,16})\((.*?)\)\1"/s;
    my $lit = qr/"(?:[^"\\\n]|\\.)*"/;
    sub unescape {
      my $s = shift;
      $s =~ s/\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/
        my $e = $1;
        $e =~ m{^x} ? chr(hex(substr($e, 1))) : $e =~ m{^[0-7]} ? chr(oct($e)) :
        $e eq "n" ? "\n" : $e eq "t" ? "\t" : $e eq "r" ? "\r" : $e/ge;
      return $s;
    }
    sub emit {
      my $s = shift;
      return if length($s) < $min;
      open(my $fh, ">", sprintf("%s/%s-%04d", $out, $prefix, $n++)) or die "$out: $!";
      binmode($fh);
      print $fh $s;
      close($fh);
    }
    for my $file (@ARGV) {
      open(my $fh, "<", $file) or die "$file: $!";
      local $/;
      my $src = <$fh>;
      close($fh);
      if ($context eq "-") {
        while ($src =~ /$raw/g) { emit($2); }
        next;
      }
      # A raw string becomes the plain literal it stands for, so that groups join.
      $src =~ s{$raw}{my $b = $2; $b =~ s/\\/\\\\/g; $b =~ s/"/\\"/g; $b =~ s/\n/\\n/g; "\"$b\""}ge;
      my $re = $context eq "" ? qr/((?:$lit\s*)+)/ : qr/(?:$context)\s*((?:$lit\s*)+)/;
      while ($src =~ /$re/g) {
        my $group = $1;
        my $s = "";
        while ($group =~ /"((?:[^"\\\n]|\\.)*)"/g) { $s .= unescape($1); }
        emit($s);
      }
    }' "$out" "$prefix" "$min" "$context" "$@"
}

# Kernel logs captured for the tests (tests/fixtures/kmsg), when this checkout has them.
kmsg_fixtures() {
  local f
  for f in tests/fixtures/kmsg/*; do
    if [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65536 ]; then cp "$f" "$1/"; fi
  done
}

seed_kmsg() {
  local out=$1
  kmsg_fixtures "$out"
  c_literals "$out" test 6 "" src/kmsg/tests/*.cpp
  # The real driver lines quoted in the reference (section 8), one per file.
  if [ -r "$reference" ]; then
    local n=0 line
    # shellcheck disable=SC2016 # backquotes below are markdown code spans, not commands
    while IFS= read -r line; do
      printf '%s' "$line" >"$out/reference-$n"
      n=$((n + 1))
    done < <(grep '^| ' "$reference" | grep -o '`[^`]*`' | tr -d '`' | grep -E '.{12,}')
  fi
}

# The byte that selects parser number $1 in fuzz_host.
selector() { printf '%b' "\\x$(printf '%02x' "$1")"; }

seed_kernel_log() {
  local out=$1
  kmsg_fixtures "$out"
  cp fuzz/corpus/kmsg/* "$out/"
  c_literals "$out" test 20 "" src/doctor/tests/kernel_log_test.cpp
  if [ -r "$reference" ]; then
    # shellcheck disable=SC2016 # backquotes are markdown code spans, not commands
    grep '^| ' "$reference" | grep -o '`[^`]*`' | tr -d '`' | grep -E '.{12,}' >"$out/reference"
  fi
}

# The route tables of the captured hosts, and the targets and tables the probe tests use.
seed_probe_route() {
  local out=$1 root f n=0
  for root in $(host_roots); do
    for f in "$root/proc/net/route" "$root/proc/net/ipv6_route"; do
      [ -f "$f" ] || continue
      cp "$f" "$out/route-$n"
      n=$((n + 1))
    done
  done
  c_literals "$out" test 1 '(?:parse_proc_net_route|parse_proc_net_ipv6_route|parse_probe_target)\(' \
    src/doctor/tests/probe_test.cpp
}

# The simulator's trace fixtures and test literals, each behind the selector byte of its parser.
seed_trace() {
  local out=$1 f n=0
  for f in tests/fixtures/traces/alibaba-openb/*.csv; do
    { printf '\001'; head -c 20000 "$f"; } >"$out/openb-$n"
    n=$((n + 1))
  done
  { printf '\002'; head -c 20000 tests/fixtures/traces/alibaba-openb/openb_node_list_gpu_node.csv; } \
    >"$out/nodes"
  printf '\000job_id,submit_time,gpus,duration,user\n1,0,2,60,a\n2,5.5,8,3600,b\n' >"$out/generic"
  printf '\0032048x8:H100,16x4+8' >"$out/cluster"
  printf '\004llama3:lemons=0.02x12,scale=2,detect=5m' >"$out/failures"
  printf '\005daly,write=30s,restart=10m,overlapped' >"$out/checkpoint"
}

# scontrol output and GPU lists from the Slurm unit tests' shapes, behind each parser's byte.
seed_slurm() {
  local out=$1
  printf '\000NodeName=n1 Arch=x86_64 State=IDLE+DRAIN Reason=cardiac: GPU 5 lost [root@2026-12-05T00:19:18]\nNodeName=n2 State=MIXED Partitions=gpu\n' >"$out/nodes"
  printf '\001JobId=12 JobName=train JobState=RUNNING StartTime=2026-12-05T00:10:00 EndTime=2026-12-05T01:10:00 NodeList=n1\n' >"$out/job"
  printf '\0022026-12-05T00:19:18' >"$out/time"
  printf '\0030,1,5' >"$out/gpus"
}

# The plan fixtures (a real config.json, a bad field, a truncated file).
seed_plan() {
  cp tests/fixtures/plan/*.json "$1/"
}

# Sample series encoded by the target itself (time columns, chunks, a tail segment), so that the
# seeds follow the codec's current format; fuzz/corpus/chunk/ holds the same, written once.
seed_chunk() {
  CARDIAC_FUZZ_WRITE_SEEDS=$1 "$build/fuzz/fuzz_chunk"
}

# Tail files written by the store's own append_tail_record (whole, cut, flipped).
seed_tail_log() {
  CARDIAC_FUZZ_WRITE_SEEDS=$1 "$build/fuzz/fuzz_tail_log"
}

# Minute blocks written by the target itself: a constant hour, a varied one with odd values,
# and one of the first layout.
seed_minute_block() {
  CARDIAC_FUZZ_WRITE_SEEDS=$1 "$build/fuzz/fuzz_minute_block"
}

# The fixture files that a target's parser table names (CARDIAC_FUZZ_LIST_PARSERS=1 prints
# it: index, two-sample flag, globs under a captured root), each behind its parser's byte.
table_fixtures() {
  local target=$1 out=$2 index pairs globs root pattern f n=0
  while IFS=$'\t' read -r index pairs globs; do
    for root in $(host_roots); do
      for pattern in $globs; do
        for f in "$root"/$pattern; do
          [ -f "$f" ] || continue
          { selector "$index"; cat "$f"; } >"$out/fixture-$n"
          n=$((n + 1))
        done
      done
    done
  done < <(CARDIAC_FUZZ_LIST_PARSERS=1 "$build/fuzz/fuzz_$target")
}

seed_host() {
  local out=$1 index pairs globs root pattern n=0
  table_fixtures host "$out"
  # Two captures of the same host: seed the rate computations with a real pair.
  while IFS=$'\t' read -r index pairs globs; do
    [ "$pairs" = 1 ] || continue
    for root in $(host_roots | grep '/t0$'); do
      local next=${root%/t0}/t1
      for pattern in $globs; do
        if [ ! -f "$root/$pattern" ] || [ ! -f "$next/$pattern" ]; then continue; fi
        { selector "$index"; cat "$root/$pattern"; printf -- '----\n'
          cat "$next/$pattern"; } >"$out/pair-$n"
        n=$((n + 1))
      done
    done
  done < <(CARDIAC_FUZZ_LIST_PARSERS=1 "$build/fuzz/fuzz_host")
}

# The captured hosts' /proc/net/udp{,6}, passwd and status files (the table in
# fuzz_netproc.cpp), sock_diag answers written by the target itself, and a few fd links.
seed_netproc() {
  local out=$1
  table_fixtures netproc "$out"
  CARDIAC_FUZZ_WRITE_SEEDS=$out "$build/fuzz/fuzz_netproc"
  printf '\006socket:[15290]\npipe:[4021]\n/dev/null\nsocket:[]\n' >"$out/fd-links"
}

# The captured hosts' /proc/net tables behind their table's byte (0-3), and their passwd files
# behind 4 (read_security_facts).
seed_security_facts() {
  local out=$1 root i n=0 tables=(tcp tcp6 udp udp6)
  for root in $(host_roots); do
    for i in 0 1 2 3; do
      [ -f "$root/proc/net/${tables[$i]}" ] || continue
      { selector "$i"; cat "$root/proc/net/${tables[$i]}"; } >"$out/table-$n"
      n=$((n + 1))
    done
    [ -f "$root/etc/passwd" ] || continue
    { selector 4; cat "$root/etc/passwd"; } >"$out/passwd-$n"
    n=$((n + 1))
  done
}

# The baseline fixtures and the baseline texts of the JSON tests.
seed_baseline() {
  cp tests/fixtures/baselines/*.json "$1/"
  c_literals "$1" test 2 '(?:parse_baseline|error_of)\(' src/baseline/tests/json_test.cpp
}

# Statistics files tabulated by the library itself (two nodes with and without the repair times,
# a fleet with a lemon node, no exposure), so that the seeds follow the format.
seed_failstats() {
  CARDIAC_FUZZ_WRITE_SEEDS=$1 "$build/fuzz/fuzz_failstats"
}

# Each fixture tree in the one-text format of fuzz/fuzz_host_snapshot.cpp.
seed_host_snapshot() {
  local out=$1 root rel n=0
  for root in $(host_roots); do
    {
      while IFS= read -r rel; do
        if [ -L "$root/$rel" ]; then
          printf '@> /%s %s\n' "$rel" "$(readlink "$root/$rel")"
        elif [ "$rel" = .cardiac/statvfs ]; then
          sed 's/^/@$ /' "$root/$rel"
        else
          printf '@@ /%s\n' "$rel"
          cat "$root/$rel"
          [ ! -s "$root/$rel" ] || [ "$(tail -c 1 "$root/$rel" | wc -l)" -eq 1 ] || echo
        fi
      done < <(cd "$root" && find . \( -type f -o -type l \) -printf '%P\n' | sort)
    } >"$out/tree-$n"
    n=$((n + 1))
  done
}

# shellcheck disable=SC2016 # backquotes are markdown fences, not commands
seed_config() {
  local out=$1
  sed -n '/^```toml$/,/^```$/{/^```/d;p}' docs/configuration.md >"$out/docs-default"
  # The default file with its commented-out [[notifier]] examples switched on.
  sed -e 's/^# \(\[\[notifier\]\]\)/\1/' -e 's/^# \([a-z]* = \)/\1/' "$out/docs-default" \
    >"$out/docs-notifiers"
  c_literals "$out" test 0 'parse_config\(' src/config/tests/*.cpp
}

# shellcheck disable=SC2016 # backquotes are markdown fences, not commands
seed_rules() {
  local out=$1
  sed -n '/^```toml$/,/^```$/{/^```/d;p}' docs/alerts.md >"$out/docs-alerts"
  # The built-in rule set is a raw string in defaults.cpp.
  c_literals "$out" defaults 1 - src/rules/defaults.cpp
  c_literals "$out" test 0 '(?:parse_rules|error_of|rules_from)\(|=' src/rules/tests/*.cpp
}

seed_scenario() {
  local out=$1 f
  for f in tests/fixtures/scenarios/*.json tests/fixtures/scenarios/*.toml; do
    local kind=j
    [[ "$f" == *.toml ]] && kind=t
    { printf '%s' "$kind"; cat "$f"; } >"$out/$(basename "$f")"
  done
}

# --- running -----------------------------------------------------------------------------------

symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer ||
  ls /usr/lib/llvm-16/bin/llvm-symbolizer 2>/dev/null || true)
asan_options="detect_leaks=1:abort_on_error=0:symbolize=1"
if [ -n "$symbolizer" ]; then
  export ASAN_SYMBOLIZER_PATH=$symbolizer
else
  asan_options+=":allow_addr2line=1"  # binutils' addr2line: slower, but stacks get names
fi
export ASAN_OPTIONS=$asan_options
# Options from the caller's environment come first (e.g. suppressions=FILE for triage in a tree
# built with -fsanitize-recover=undefined); these win over them.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"

keep_going=()
if [ "${CARDIAC_FUZZ_KEEP_GOING:-0}" = 1 ]; then
  keep_going=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi

# Every sanitizer report or contract violation in a log, one line each, the source directory
# left out ("strings.cpp:140:36: runtime error: 1.7e+19 is outside the range ...").
findings_in() {
  local pattern='ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+( signal)?'
  pattern+='|[^ ]*: runtime error: .*|contract violated: .*'
  grep -oE "$pattern" "$1" | sed 's|^/.*/\([^/]*: runtime error\)|\1|' || true
}

# Replays fuzz/crashes-found/<target>-*: bugs found earlier fail every run, not only the runs
# that happen to find them again, until they are fixed (then the files stay as regressions).
replay_found() {
  local t=$1 f status=0
  for f in fuzz/crashes-found/"$t"-*; do
    [ -f "$f" ] || continue
    if ! "$build/fuzz/fuzz_$t" "$f" >"$work/$t.replay.log" 2>&1; then
      status=1
      cp "$work/$t.replay.log" "$crashes/$t-replay-$(basename "$f").log"
      printf 'fuzz: %-14s replay %s: FAIL (%s)\n' "$t" "$f" \
        "$(findings_in "$work/$t.replay.log" | head -1)"
    fi
  done
  return $status
}

# One target: replays, then fuzzes. Its lines go to $work/$t.out (printed in the targets' order
# once all are done); exits 1 on any finding. Runs in a subshell of its own, so targets can run
# side by side: each has its own temporary directory, logs and start mark.
fuzz_one() {
  local t=$1 failed=0
  local corpus=$work/corpus/$t
  mkdir -p "$corpus" "$work/tmp/$t"
  export TMPDIR=$work/tmp/$t  # fuzz_scenario writes its input file there
  if [ -d "fuzz/corpus/$t" ]; then cp -r "fuzz/corpus/$t/." "$corpus/"; fi
  if declare -F "seed_$t" >/dev/null; then "seed_$t" "$corpus"; fi
  local seeds
  seeds=$(find "$corpus" -type f | wc -l)
  replay_found "$t" || failed=1
  local log=$work/$t.log
  rm -f "$crashes/$t.log"
  touch "$work/$t.start"
  local rc=0
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$crashes/$t-" "${keep_going[@]}" "$corpus" \
    >"$log" 2>&1 || rc=$?
  local execs cov findings finding distinct result
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ -z "$execs" ]; then execs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -1); fi
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  findings=$(findings_in "$log")
  finding=$(head -1 <<<"$findings")
  # Kinds are told apart by where they happen (file:line:column), not by the values reported.
  # shellcheck disable=SC2001 # per line, to its end: not a job for ${var//}
  distinct=$(sed 's/: runtime error: .*//' <<<"$findings" | sort -u | grep -c . || true)
  if [ "$rc" -eq 0 ] && [ -z "$finding" ]; then
    result=ok
  else
    failed=1
    cp "$log" "$crashes/$t.log"
    local inputs artifact
    mapfile -t inputs < <(find "$crashes" -name "$t-*" -newer "$work/$t.start" | sort)
    artifact="${inputs[*]:0:3}"
    if [ ${#inputs[@]} -gt 3 ]; then artifact+=" (${#inputs[@]} in all)"; fi
    if [ "$distinct" -gt 1 ]; then finding+="; $((distinct - 1)) other kinds in the log"; fi
    result="FAIL (${finding:-exit $rc}) input: ${artifact:-none} log: $crashes/$t.log"
  fi
  printf 'fuzz: %-14s %10s execs in %ss, %4s seeds, cov %5s: %s\n' \
    "$t" "${execs:-?}" "$seconds" "$seeds" "${cov:-?}" "$result"
  return $failed
}

# Targets run side by side, one per core (CARDIAC_FUZZ_JOBS), each for its full time: on two
# cores the whole run takes half as long, and each target still gets SECONDS of one core.
jobs=${CARDIAC_FUZZ_JOBS:-$(nproc)}
if ! [[ "$jobs" =~ ^[0-9]+$ ]] || [ "$jobs" -lt 1 ]; then jobs=1; fi
failed=0
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, ${jobs} at a time"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  (
    rc=0
    fuzz_one "$t" >"$work/$t.out" 2>&1 || rc=$?
    echo "$rc" >"$work/$t.rc"
  ) &
  running=$((running + 1))
done
wait
for t in "${targets[@]}"; do
  cat "$work/$t.out"
  if [ "$(cat "$work/$t.rc" 2>/dev/null || echo 1)" != 0 ]; then failed=1; fi
done

if [ "$failed" -ne 0 ]; then
  echo "fuzz: FAILED; reproduce with $build/fuzz/fuzz_<target> <input file>" >&2
  exit 1
fi
echo "fuzz: all targets ok"
