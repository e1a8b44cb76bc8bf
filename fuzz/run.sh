#!/usr/bin/env bash
# Builds one libFuzzer target over the real AirlockWire and AirlockSerialization modules and runs
# it for a bounded time.
#
#   fuzz/run.sh TARGET [SECONDS]      TARGET: request | response | chunked (default 60 s)
#
# Sources/AirlockWire and Sources/AirlockSerialization are compiled unchanged, each as its own
# module (as SwiftPM builds them, with the package's upcoming features), into object files with
# -sanitize=fuzzer,address; AirlockWire with -enable-testing, so the harness's
# `@testable import AirlockWire` sees its internal API. The harness (fuzz/Support/*.swift and
# fuzz/TARGET.swift) is then its own module importing both, and re-encodes heads with the very
# ForwardingHeads the gateway forwards with. Swift's runtime checks are kept (overflow and
# bounds traps are findings). The modules are rebuilt only when their sources, the optimisation
# flag or this script change. The committed seeds in fuzz/corpus/TARGET are copied into a
# scratch corpus that persists between runs.
#
# Environment:
#   FUZZ_OUT   build and scratch directory (default: .build/fuzz in the repository)
#   FUZZ_OPT   optimisation flag (default -O; -Onone adds the stdlib's debug checks, slower)
#   FUZZ_ARGS  extra libFuzzer arguments, e.g. FUZZ_ARGS='-seed=1'
#   FUZZ_FRESH=1  start from the committed seeds only (drop the scratch corpus)
#
# Exit status: 0 when the run ends without a finding; 1 on a finding (crash, property failure,
# timeout, out-of-memory), with the saved input's path printed; 2 on usage or build errors.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { echo "usage: fuzz/run.sh request|response|chunked [SECONDS]" >&2; exit 2; }
target=${1:-}
seconds=${2:-60}
[[ -n "$target" && -f "$root/fuzz/$target.swift" ]] || usage
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || usage

out=${FUZZ_OUT:-$root/.build/fuzz}
opt=${FUZZ_OPT:--O}
swiftc=${SWIFTC:-swiftc}
command -v "$swiftc" >/dev/null || { echo "error: $swiftc not on PATH (Swift 6 toolchain needed)" >&2; exit 2; }
mkdir -p "$out"

flags=(-swift-version 6 -parse-as-library -wmo "$opt" -g -sanitize=fuzzer,address
       -enable-upcoming-feature ExistentialAny -enable-upcoming-feature InternalImportsByDefault
       -enable-upcoming-feature MemberImportVisibility)
mods="$out/modules$opt"
mkdir -p "$mods"

# ld.gold warns "Cannot export local symbol __asan..." for every such symbol: harmless, dropped.
# (Each swiftc runs inside $out: it leaves files in the working directory.)
compile() {  # compile LOG ARGS...: swiftc, its output filtered; exits 2 on failure
  local log=$1; shift
  if ! (cd "$out" && "$swiftc" "${flags[@]}" "$@" 2> "$log"); then
    grep -v "Cannot export local symbol" "$log" >&2 || true
    echo "fuzz: build failed (log $log)" >&2
    exit 2
  fi
  grep -v "Cannot export local symbol" "$log" >&2 || true
}

# module NAME DEPS EXTRA-FLAGS...: Sources/NAME as module NAME -> $mods/NAME.o and
# $mods/NAME.swiftmodule, rebuilt when older than its sources, this script or its DEPS' objects.
module() {
  local name=$1 deps=$2; shift 2
  local obj="$mods/$name.o" inputs=("$root/Sources/$name" "$root/fuzz/run.sh")
  for d in $deps; do inputs+=("$mods/$d.o"); done
  if [[ -f "$obj" && -z $(find "${inputs[@]}" -newer "$obj" -print -quit) ]]; then
    return
  fi
  echo "fuzz: building module $name ($opt)"
  compile "$out/build-$name.log" -module-name "$name" -I "$mods" "$@" \
    -emit-module -emit-module-path "$mods/$name.swiftmodule" -c "$root/Sources/$name"/*.swift -o "$obj"
}
module AirlockWire "" -enable-testing
module AirlockSerialization AirlockWire

bin="$out/fuzz-$target"
echo "fuzz: building $target ($opt) -> $bin"
compile "$out/build-$target.log" -module-name "Fuzz_$target" -I "$mods" \
  "$root"/fuzz/Support/*.swift "$root/fuzz/$target.swift" "$mods/AirlockWire.o" "$mods/AirlockSerialization.o" -o "$bin"

corpus="$out/corpus-$target"
artifacts="$out/findings-$target"
[[ "${FUZZ_FRESH:-0}" == 1 ]] && rm -rf "$corpus"
mkdir -p "$corpus" "$artifacts"
cp "$root/fuzz/corpus/$target"/* "$corpus"/
before=$(ls "$artifacts" | wc -l)

# Swift's own crash handler would walk the stack under ASan after a trap (and be reported as
# a stack-buffer-underflow of its own): leave the trap to libFuzzer.
export SWIFT_BACKTRACE=enable=no
echo "fuzz: running $target for ${seconds}s (corpus $corpus, findings $artifacts)"
set +e
# shellcheck disable=SC2086
timeout --kill-after=30 $((seconds + 120)) "$bin" "$corpus" \
  -dict="$root/fuzz/http.dict" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
  -max_len=8192 -artifact_prefix="$artifacts/" -print_final_stats=1 ${FUZZ_ARGS:-} \
  2>&1 | tee "$out/run-$target.log"
status=${PIPESTATUS[0]}
set -e

after=$(ls "$artifacts" | wc -l)
if [[ $status -ne 0 || $after -gt $before ]]; then
  echo "fuzz: $target FOUND A PROBLEM (exit $status). Saved inputs:" >&2
  ls -t "$artifacts"/* 2>/dev/null | head -n $((after - before > 0 ? after - before : 5)) | sed 's/^/  /' >&2
  echo "fuzz: reproduce with: $bin <file>   minimize with: $bin -minimize_crash=1 -runs=10000 <file>" >&2
  exit 1
fi
echo "fuzz: $target: no finding in ${seconds}s (log $out/run-$target.log)"
