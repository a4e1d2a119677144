#!/usr/bin/env bash
# Fuzzing with libFuzzer, which ships with the Swift toolchain (swiftc -sanitize=fuzzer,address).
#
#   scripts/fuzz.sh build                          modules and targets, into .build-fuzz/
#   scripts/fuzz.sh seed                           seed corpora from Protocol/vectors
#   scripts/fuzz.sh run --seconds N [TARGET...]    each target for N seconds   (make fuzz)
#   scripts/fuzz.sh run --runs N [TARGET...]       each target for N executions (make fuzz-ci)
#   scripts/fuzz.sh minimize TARGET FILE           the smallest input that still fails
#   scripts/fuzz.sh replay TARGET FILE|HEX         run one input, tracing its steps
#   scripts/fuzz.sh list                           the targets
#
# `run` builds and seeds first, then runs the targets one after another (never two at
# once). A crash, a violated property (the target traps) or an input slower than
# FUZZ_TIMEOUT seconds (default 10) fails the target; the input is kept in
# .build-fuzz/findings/TARGET/ and the run exits 1 after the others. Every target keeps its
# corpus in .build-fuzz/corpus/TARGET, so later runs start where earlier ones stopped.
# A failed run also prints the input in hex, so that a CI log is enough to replay it.
# Replay an input with `replay` (FUZZ_TRACE=1 makes the targets that have steps print
# them) or .build-fuzz/bin/TARGET FILE. Inputs in Fuzz/Regressions/TARGET/ (findings once
# fixed) run, with the corpus, before every run of TARGET fuzzes.
#
# While a target runs, standard error shows how far it has come, from libFuzzer's latest
# status line (executions, exec/s, coverage, corpus): on a terminal one line rewritten
# every second; otherwise (a CI log) a line when the target starts and one every
# FUZZ_PROGRESS_SECONDS (default 15). Each target's row of the table (standard output)
# follows when it ends; libFuzzer's own output is in .build-fuzz/logs/TARGET.log.
set -euo pipefail
# A FILE the caller names is relative to where they ran the script, not to the project.
CALLER=$PWD
cd "$(dirname "$0")/.."

OUT=${FUZZ_DIR:-.build-fuzz}
# A trap is libFuzzer's to report (Swift's own backtracer would hang under ASan); leaks
# are, except the few LeakSanitizer misreads in Fuzz/lsan.supp.
export SWIFT_BACKTRACE=enable=no LSAN_OPTIONS=suppressions=Fuzz/lsan.supp
SWIFTC=${SWIFTC:-swiftc}
TIMEOUT=${FUZZ_TIMEOUT:-10}
PROGRESS_SECONDS=${FUZZ_PROGRESS_SECONDS:-15}
# Project modules in dependency order; every target links all of them.
MODULES=(Wire Runtime ANCS AMS ATT GATT Links Sockets HCI Capture Phone Watch)
# The system libraries' module maps (HCI uses libcrypto and libbluetooth, Sockets epoll).
SYSTEM=(-I Sources/COpenSSL -I Sources/CBluetooth -I Sources/CEpoll -I Sources/CSwiftRuntime)
FLAGS=(-O -gline-tables-only -swift-version 6 -package-name ancs_sim -sanitize=fuzzer,address -wmo -I "$OUT/modules" "${SYSTEM[@]}")
SUPPORT=(Fuzz/Support/*.swift)

targets() { for file in Fuzz/Targets/*.swift; do basename "$file" .swift; done; }

# The longest input libFuzzer makes for a target: room for a long scenario or script.
max_len() {
  case $1 in
    Scenario | WatchMachine | PhoneControlPoint | GATTServer) echo 4096 ;;
    Capture*) echo 2048 ;;
    *) echo 1024 ;;
  esac
}

# True when $1 is missing or older than any of the other paths (files or directories).
stale() {
  local product=$1
  shift
  [[ ! -e $product ]] || [[ -n $(find "$@" -newer "$product" -print -quit) ]]
}

# libFuzzer and lld come with the Swift toolchain on Linux; nothing to install.
check_toolchain() {
  local toolchain
  toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v "$SWIFTC")")")")
  if ! compgen -G "$toolchain/lib/swift/clang/lib/linux/libclang_rt.fuzzer-*.a" >/dev/null; then
    echo "fuzz: this Swift toolchain ($toolchain) has no libFuzzer (libclang_rt.fuzzer)" >&2
    exit 2
  fi
}

build() {
  check_toolchain
  mkdir -p "$OUT/modules" "$OUT/bin"
  local module objects=() rebuilt=0
  for module in "${MODULES[@]}"; do
    local object=$OUT/modules/$module.o
    if ((rebuilt)) || stale "$object" "Sources/$module" "$0"; then
      echo "fuzz: compiling $module" >&2
      local sources
      mapfile -t sources < <(find "Sources/$module" -name '*.swift' | sort)
      "$SWIFTC" "${FLAGS[@]}" -parse-as-library -suppress-warnings -module-name "$module" \
        -emit-module -emit-module-path "$OUT/modules/$module.swiftmodule" -emit-object -o "$object" "${sources[@]}"
      # swiftc leaves an object that came out the same untouched, old: it would stay stale.
      touch "$object"
      rebuilt=1
    fi
    objects+=("$object")
  done
  local target
  for target in $(targets); do
    local binary=$OUT/bin/$target
    if stale "$binary" "Fuzz/Targets/$target.swift" "${SUPPORT[@]}" "${objects[@]}"; then
      echo "fuzz: linking $target" >&2
      "$SWIFTC" "${FLAGS[@]}" -parse-as-library -use-ld=lld -module-name "Fuzz$target" \
        "${SUPPORT[@]}" "Fuzz/Targets/$target.swift" "${objects[@]}" -o "$binary"
    fi
  done
  # The seeder is an ordinary program; it links the instrumented modules, hence ASan.
  local shared=(Fuzz/Support/FuzzInput.swift Fuzz/Support/Responses.swift)
  if stale "$OUT/bin/seed" Fuzz/Seed "${shared[@]}" "${objects[@]}"; then
    echo "fuzz: linking the seeder" >&2
    "$SWIFTC" -O -swift-version 6 -sanitize=address -use-ld=lld -I "$OUT/modules" -module-name Seed \
      "${shared[@]}" Fuzz/Seed/main.swift "$OUT/modules/Wire.o" "$OUT/modules/ANCS.o" -o "$OUT/bin/seed"
  fi
}

seed() {
  ASAN_OPTIONS=detect_leaks=0 "$OUT/bin/seed" . "$OUT/seeds" >&2
}

# libFuzzer's final statistics line for $2 in log $1.
stat() { sed -n "s/^stat::$2: *//p" "$1" | tail -1; }

# Milliseconds as m:ss.
clock() { printf '%d:%02d' $(($1 / 60000)) $(($1 / 1000 % 60)); }

# The latest of libFuzzer's status lines in log $1 (`#N pulse  cov: C ft: F corp: K/B lim: L
# exec/s: E rss: R`, also on NEW and REDUCE), as `N$2 execs, E exec/s, cov C, corpus K`.
latest_status() {
  tail -c 16384 "$1" 2>/dev/null | tr '\r' '\n' | grep -a '^#[0-9]' | tail -1 |
    sed -E "s|^#([0-9]+).*cov: ([0-9]+).*corp: ([0-9]+).*exec/s: ([0-9]+).*|\\1$2 execs, \\4 exec/s, cov \\2, corpus \\3|;t;d" ||
    true
}

# Shows how far target $1 (log $2, process $3, started at $4 ns, given $5 as "seconds N" or
# "runs N") has come until the process ends: `fuzz: TARGET 0:23/1:00: 1048576 execs, ...`, or
# `fuzz: TARGET 0:23: 123456/200000 execs, ...`; a line rewritten every second on a terminal,
# a plain line at the start and every PROGRESS_SECONDS otherwise.
follow() {
  local target=$1 log=$2 pid=$3 start=$4 seconds= runs= last=-1 terminal=0 width=80 kind limit
  read -r kind limit <<<"$5"
  if [[ $kind == seconds ]]; then seconds=/$(clock $((limit * 1000))); else runs=/$limit; fi
  if [[ -t 2 ]]; then
    terminal=1
    width=$(stty size <&2 2>/dev/null | cut -d' ' -f2) || true
    ((${width:-0} > 1)) || width=80
  fi
  while kill -0 "$pid" 2>/dev/null; do
    local milliseconds=$((($(date +%s%N) - start) / 1000000))
    local every=$((terminal ? 1000 : PROGRESS_SECONDS * 1000))
    if ((last < 0 || milliseconds - last >= every)); then
      local line status
      status=$(latest_status "$log" "$runs")
      line="fuzz: $target $(clock "$milliseconds")$seconds${status:+: $status}"
      if ((terminal)); then printf '\r%s\033[K' "${line:0:width-1}" >&2; else echo "$line" >&2; fi
      last=$milliseconds
    fi
    sleep 0.2
  done
  ((terminal)) && printf '\r\033[K' >&2
  return 0
}

run() {
  local limit=() label= budget=
  case ${1:-} in
    --seconds) limit=(-max_total_time="$2") label="$2 s each" budget="seconds $2" ;;
    --runs) limit=(-runs="$2") label="$2 runs each" budget="runs $2" ;;
    *) echo "usage: scripts/fuzz.sh run --seconds N|--runs N [TARGET...]" >&2 && exit 2 ;;
  esac
  shift 2
  local selected=("$@") target
  ((${#selected[@]})) || mapfile -t selected < <(targets)
  for target in "${selected[@]}"; do
    [[ -f Fuzz/Targets/$target.swift ]] || { echo "fuzz: no target $target (scripts/fuzz.sh list)" >&2 && exit 2; }
  done
  build
  seed
  mkdir -p "$OUT/logs"
  local failed=()
  printf '%-20s %12s %9s %8s %7s  %s\n' target executions exec/s seconds corpus result
  for target in "${selected[@]}"; do
    mkdir -p "$OUT/corpus/$target" "$OUT/seeds/$target" "$OUT/findings/$target"
    local log=$OUT/logs/$target.log start=$(date +%s%N) status=0 pid
    : >"$log"
    local regressions=()
    [[ -d Fuzz/Regressions/$target ]] && regressions=("Fuzz/Regressions/$target")
    "$OUT/bin/$target" "${limit[@]}" -timeout="$TIMEOUT" -max_len="$(max_len "$target")" -print_final_stats=1 \
      -artifact_prefix="$OUT/findings/$target/" "$OUT/corpus/$target" "$OUT/seeds/$target" "${regressions[@]}" \
      >"$log" 2>&1 &
    pid=$!
    # A background job ignores the terminal's Ctrl-C: it ends with the script, however that ends.
    trap 'kill "$pid" 2>/dev/null' EXIT
    trap 'exit 130' INT TERM
    follow "$target" "$log" "$pid" "$start" "$budget"
    wait "$pid" || status=$?
    trap - EXIT INT TERM
    local result=ok
    if ((status)); then
      result="FAILED (exit $status): $(grep -m1 -o 'Test unit written to .*' "$log" || echo "see $log")"
      failed+=("$target")
    fi
    local runs milliseconds=$((($(date +%s%N) - start) / 1000000))
    runs=$(stat "$log" number_of_executed_units)
    printf '%-20s %12s %9s %8s %7s  %s\n' "$target" "$runs" "$((${runs:-0} * 1000 / (milliseconds + 1)))" \
      "$((milliseconds / 1000)).$((milliseconds % 1000 / 100))" "$(find "$OUT/corpus/$target" -type f | wc -l)" "$result"
  done
  if ((${#failed[@]})); then
    for target in "${failed[@]}"; do
      echo "--- $target ($OUT/logs/$target.log)" >&2
      grep -m1 -B2 -A12 -E 'property violated|Fatal error|ERROR: (libFuzzer|AddressSanitizer)|ALARM' \
        "$OUT/logs/$target.log" >&2 || tail -20 "$OUT/logs/$target.log" >&2
      local finding
      finding=$(grep -m1 -o 'Test unit written to .*' "$OUT/logs/$target.log" | sed 's/^Test unit written to //') || true
      if [[ -f $finding ]]; then
        echo "fuzz: the input, to replay it anywhere: scripts/fuzz.sh replay $target '$(od -An -v -tx1 "$finding" | tr -d ' \n')'" >&2
      fi
    done
    echo "fuzz: ${#failed[@]} target(s) failed ($label): ${failed[*]}" >&2
    exit 1
  fi
  echo "fuzz: every target passed ($label)"
}

minimize() {
  [[ $# -eq 2 ]] || { echo "usage: scripts/fuzz.sh minimize TARGET FILE" >&2 && exit 2; }
  known_target "$1"
  local input
  input=$(caller_path "$2")
  [[ -f $input ]] || { echo "fuzz: no file $2" >&2 && exit 2; }
  build
  "$OUT/bin/$1" -minimize_crash=1 -runs=100000 -timeout="$TIMEOUT" -artifact_prefix="$OUT/findings/$1/" "$input"
}

# FILE as the caller meant it: an absolute path as it is, a relative one from where the
# script was run.
caller_path() {
  if [[ $1 == /* ]]; then echo "$1"; else echo "$CALLER/$1"; fi
}

known_target() {
  [[ -f Fuzz/Targets/$1.swift ]] || { echo "fuzz: no target $1 (scripts/fuzz.sh list)" >&2 && exit 2; }
}

# Runs one input (a file, or its bytes in hex) through TARGET with FUZZ_TRACE=1.
replay() {
  [[ $# -eq 2 ]] || { echo "usage: scripts/fuzz.sh replay TARGET FILE|HEX" >&2 && exit 2; }
  known_target "$1"
  local input
  input=$(caller_path "$2")
  if [[ ! -f $input ]]; then
    [[ $2 =~ ^([0-9a-fA-F]{2})*$ ]] || { echo "fuzz: $2 is neither a file nor bytes in hex" >&2 && exit 2; }
    mkdir -p "$OUT/replay"
    input=$OUT/replay/$1
    # Every byte becomes a \xHH escape, so the format holds no other directive.
    # shellcheck disable=SC2059
    printf "$(sed 's/../\\x&/g' <<<"$2")" >"$input"
  fi
  build
  FUZZ_TRACE=1 "$OUT/bin/$1" -detect_leaks=0 "$input"
}

command=${1:-}
shift || true
case $command in
  build) build ;;
  seed) build && seed ;;
  run) run "$@" ;;
  minimize) minimize "$@" ;;
  replay) replay "$@" ;;
  list) targets ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2 && exit 2 ;;
esac
