#!/usr/bin/env bash
# bench/configs.sh: several Airlock configurations (or binaries) side by side, interleaved: the
# proxy's own time per request (perf task-clock, as bench/core.sh reads it) and req/s, each
# target's median over the rounds and its difference from the first target's.
#
#   bench/configs.sh NAME=[BINARY:]CONFIG ...      (as root, like make bench)
#
# e.g. the cache's miss path against a route without a cache, both on unique URLs:
#   WRK_LUA=bench/unique-url.lua bench/configs.sh nocache=bench/gateway.yaml miss=bench/gateway-cache.yaml
# Every target runs for the whole bench (one worker, access records off, pinned as make bench:
# Airlock and the upstream on CPU 1, wrk on CPU 0); each round drives each target in turn
# (reversed every other round): 1 s of warm-up, then DUR s of wrk -t1 -cCONNS, task-clock read
# over its middle DUR - 1 s. Rounds of ~20 s per target pair a change's difference much closer
# than separate runs do on this shared machine (their medians moved 0.4 us run to run).
# Env: ROUNDS (7)  DUR (4)  CONNS (64)  BENCH_PATH (/small)  WRK_LUA (a wrk script given a run id)
#      BIN (.build/release/airlock, for targets that name no binary)  SHARED (../shared)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port srv_pin wrk_pin
# shellcheck source=bench/common.sh
source "$REPO/bench/common.sh"   # ensure_running stop_started med
ROUNDS=${ROUNDS:-7}; DUR=${DUR:-4}; CONNS=${CONNS:-64}; BENCH_PATH=${BENCH_PATH:-/small}
BIN=${BIN:-$REPO/.build/release/airlock}
[ "$(id -u)" -eq 0 ] || die "run as root (perf reads the proxies' counters; the harness needs it)"
[ $# -ge 1 ] || die "usage: bench/configs.sh NAME=[BINARY:]CONFIG ..."
command -v perf >/dev/null || die "perf not found (apt-get install linux-perf)"
command -v wrk >/dev/null || die "wrk not found (bash $HARNESS/setup.sh)"
[ "$DUR" -ge 2 ] || die "DUR must be at least 2"

work=$(mktemp -d /tmp/airlock-configs.XXXXXX)
names=(); pids=(); ports=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  stop_started
  rm -rf "$work"
}
trap cleanup EXIT
ensure_running upstream

i=0
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}
  [ -n "$name" ] && [ "$name" != "$spec" ] || die "expected NAME=[BINARY:]CONFIG, got $spec"
  bin=$BIN; cfg=$rest
  if [[ $rest == *:* ]]; then bin=${rest%%:*}; cfg=${rest#*:}; fi
  [ -x "$bin" ] || die "$name: no binary at $bin (make release)"
  [ -f "$cfg" ] || die "$name: no configuration at $cfg"
  port=$((18700 + i))
  # shellcheck disable=SC2046
  $(srv_pin) "$bin" run --config "$cfg" --listen "127.0.0.1:$port" --workers 1 --log-level warning \
    >"$work/$name.log" 2>&1 &
  pids+=($!); names+=("$name"); ports+=("$port")
  wait_port "$port" 30 || die "$name did not start (see $work/$name.log)"
  i=$((i + 1))
done
lua=(); [ -n "${WRK_LUA:-}" ] && lua=(-s "$(readlink -f "$WRK_LUA")")

for round in $(seq "$ROUNDS"); do
  order=$(seq 0 $((i - 1))); [ $((round % 2)) = 0 ] && order=$(seq $((i - 1)) -1 0)
  for j in $order; do
    url="http://127.0.0.1:${ports[$j]}$BENCH_PATH"
    # shellcheck disable=SC2046
    timeout 30 $(wrk_pin) wrk -t1 -c"$CONNS" -d1s "${lua[@]}" "$url" -- "cfg-$$-$round-$j-w" >/dev/null
    # shellcheck disable=SC2046
    timeout $((DUR + 30)) $(wrk_pin) wrk -t1 -c"$CONNS" -d"${DUR}s" "${lua[@]}" "$url" -- "cfg-$$-$round-$j" >"$work/wrk" &
    w=$!
    sleep 0.5
    perf stat -x, -e task-clock -p "${pids[$j]}" -o "$work/perf" -- sleep $((DUR - 1))
    wait "$w"
    grep -q 'Non-2xx' "$work/wrk" && die "${names[$j]}: non-2xx responses"
    rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk")
    [ -n "$rps" ] || die "${names[$j]}: wrk reported no rate"
    ms=$(awk -F, '/task-clock/ {print $1}' "$work/perf")
    awk -v r="$rps" -v t="$ms" -v d=$((DUR - 1)) 'BEGIN { printf "%f %f\n", r, t * 1000 / (r * d) }' >>"$work/${names[$j]}"
  done
done

# "paired": the median of each round's difference from the first target's same round (the two
# runs of a round are seconds apart, where the medians of one run moved ~0.4 us between runs),
# and in how many rounds the target took more time per request than the first one.
printf '%-12s %9s %7s %9s %8s %8s %7s   %s\n' target "req/s" ratio "proxy us" "+us" "paired" slower "rounds (proxy us)"
base_rps=""; base_us=""; first=""
for name in "${names[@]}"; do
  rps=$(cut -d' ' -f1 "$work/$name" | med); us=$(cut -d' ' -f2 "$work/$name" | med)
  [ -n "$base_rps" ] || { base_rps=$rps; base_us=$us; first=$name; }
  diffs=$(paste -d' ' <(cut -d' ' -f2 "$work/$first") <(cut -d' ' -f2 "$work/$name") | awk '{print $2 - $1}')
  slower=$(awk '$1 > 0 {n++} END {print n + 0}' <<<"$diffs")
  printf '%-12s %9.0f %7.3f %9.2f %+8.2f %+8.2f %7s   %s\n' "$name" "$rps" "$(awk -v a="$rps" -v b="$base_rps" 'BEGIN {print a / b}')" \
    "$us" "$(awk -v a="$us" -v b="$base_us" 'BEGIN {print a - b}')" "$(med <<<"$diffs")" "$slower/$ROUNDS" \
    "$(cut -d' ' -f2 "$work/$name" | awk '{printf "%.2f ", $1}')"
done
