#!/usr/bin/env bash
# bench/cpu.sh: where a request's CPU goes in Airlock, user space against the kernel.
#
#   bench/cpu.sh [BINARY]        (as root, like make bench; BINARY defaults to the release build)
#
# Runs each named configuration of BINARY (one worker) in front of the shared harness's upstream
# nginx, drives it with wrk (-t1, CONNS connections, DUR s) and reads the process's user and
# system CPU time from /proc/PID/stat before and after: microseconds of each per request. The
# rows run in turn, ROUNDS times, and the medians are printed; a ratio of CPU per request is
# steadier than a ratio of throughput on this shared machine, and the split says what a change
# can reach: user-space instructions (bench/instructions.sh) move only the user column.
# The kernel's share (loopback TCP, both sides of each send, is charged to the sender) is the
# same for every proxy.
#
# Rows: plain (bench/gateway.yaml, /small), miss (bench/gateway-cache.yaml, every request a new
# URL: a lookup, a miss, a store and, once the cache's memory is full, a purge) and nocache-unique
# (bench/gateway.yaml with the same unique URLs: the miss row's baseline).
# Env: ROUNDS (3)  DUR (5)  CONNS (16)  ROWS ("plain miss nocache-unique")  SHARED (../shared)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port
# shellcheck source=bench/common.sh
source "$REPO/bench/common.sh"   # ensure_running stop_started med
BIN=$(readlink -f "${1:-$REPO/.build/release/airlock}")
ROUNDS=${ROUNDS:-3}; DUR=${DUR:-5}; CONNS=${CONNS:-16}
read -ra rows <<<"${ROWS:-plain miss nocache-unique}"
[ -x "$BIN" ] || die "no binary at $BIN (make release)"
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
PORT=18679

work=$(mktemp -d /tmp/airlock-cpu.XXXXXX)
pid=""
toucher=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$toucher" ] && kill "$toucher" 2>/dev/null
  stop_started
  rm -rf "$work"
}
trap cleanup EXIT
ensure_running upstream
# The cache's freshness is heuristic (bench/gateway-cache.yaml): keep the document two days old.
(while true; do touch -d '2 days ago' /tmp/bench-upstream/html/small 2>/dev/null; sleep 2; done) &
toucher=$!

declare -A config=([plain]=gateway.yaml [miss]=gateway-cache.yaml [nocache-unique]=gateway.yaml)
declare -A unique=([plain]=0 [miss]=1 [nocache-unique]=1)

run_row() {  # run_row NAME ROUND: appends "user sys requests" to $work/NAME
  local name=$1 round=$2 lua=() u0 s0 u1 s1 n
  [ -n "${config[$name]:-}" ] || die "unknown row $name (plain, miss, nocache-unique)"
  "$BIN" run --config "$REPO/bench/${config[$name]}" --listen 127.0.0.1:$PORT --log-level warning >/dev/null 2>&1 &
  pid=$!
  wait_port $PORT 30 || die "$name did not start"
  [ "${unique[$name]}" = 1 ] && lua=(-s "$REPO/bench/unique-url.lua")
  timeout 30 wrk -t1 -c"$CONNS" -d2s "${lua[@]}" "http://127.0.0.1:$PORT/small" -- "cpu-$$-$name-$round-w" >/dev/null
  read -r u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
  n=$(timeout $((DUR + 20)) wrk -t1 -c"$CONNS" -d"${DUR}s" "${lua[@]}" "http://127.0.0.1:$PORT/small" -- "cpu-$$-$name-$round" \
      | awk '/requests in/ {print $1}')
  read -r u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  [ -n "$n" ] && [ "$n" -gt 0 ] || die "$name: no requests completed"
  echo "$((u1 - u0)) $((s1 - s0)) $n" >>"$work/$name"
}

for round in $(seq "$ROUNDS"); do
  for name in "${rows[@]}"; do run_row "$name" "$round"; done
done

tck=$(getconf CLK_TCK)
printf '%-16s %10s %10s %10s %10s\n' row "req/s" "user us" "sys us" "total us"
for name in "${rows[@]}"; do
  # Per round: µs per request (user, sys, total) and req/s; the median of each column.
  awk -v t="$tck" -v d="$DUR" '{ printf "%f %f %f %f\n", $1/t/$3*1e6, $2/t/$3*1e6, ($1+$2)/t/$3*1e6, $3/d }' "$work/$name" >"$work/$name.us"
  printf '%-16s %10.0f %10.2f %10.2f %10.2f\n' "$name" "$(cut -d' ' -f4 "$work/$name.us" | med)" \
    "$(cut -d' ' -f1 "$work/$name.us" | med)" "$(cut -d' ' -f2 "$work/$name.us" | med)" "$(cut -d' ' -f3 "$work/$name.us" | med)"
done
