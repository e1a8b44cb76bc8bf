#!/usr/bin/env bash
# Builds one libFuzzer target over Sources/AirlockWire and runs it for a bounded time.
#
#   fuzz/run.sh TARGET [SECONDS]      TARGET: request | response | chunked (default 60 s)
#
# The target is compiled with swiftc into one module together with Sources/AirlockWire/*.swift
# (so internal API is usable), fuzz/Support/*.swift and a copy of Sources/Airlock/
# ForwardingHeads.swift (imports stripped), with -sanitize=fuzzer,address and Swift's runtime
# checks kept (overflow and bounds traps are findings). The committed seeds in
# fuzz/corpus/TARGET are copied into a scratch corpus that persists between runs.
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
mkdir -p "$out/src"

# ForwardingHeads.swift imports AirlockSession/AirlockWire; in the fuzz module those types come
# from fuzz/Support/ForwardingShim.swift and the AirlockWire sources themselves. The request
# id it writes (X-Request-Id) comes from the real RequestID.swift and RequestIDSyntax.swift.
for f in Airlock/ForwardingHeads.swift Airlock/RequestID.swift AirlockSession/RequestIDSyntax.swift; do
  sed '/^\(public \)\?import /d' "$root/Sources/$f" > "$out/src/$(basename "$f")"
done

bin="$out/fuzz-$target"
echo "fuzz: building $target ($opt) -> $bin"
# ld.gold warns "Cannot export local symbol __asan..." for every such symbol: harmless, dropped.
# (From inside $out: swiftc leaves module files in the working directory.)
if ! (cd "$out" && "$swiftc" -swift-version 6 -module-name AirlockWire -parse-as-library -wmo "$opt" -g \
      -sanitize=fuzzer,address \
      "$root"/Sources/AirlockWire/*.swift "$root"/fuzz/Support/*.swift "$out"/src/*.swift \
      "$root/fuzz/$target.swift" -o "$bin" 2> "$out/build-$target.log"); then
  grep -v "Cannot export local symbol" "$out/build-$target.log" >&2 || true
  echo "fuzz: build of $target failed" >&2
  exit 2
fi
grep -v "Cannot export local symbol" "$out/build-$target.log" >&2 || true

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
