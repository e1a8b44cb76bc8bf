#!/usr/bin/env bash
# bench/core.sh: where the shared core's time goes per request, proxy by proxy.
#
#   bench/core.sh [BINARY]        (as root, like make bench; BINARY defaults to the release build)
#
# make bench pins the proxy and the upstream nginx to one CPU (wrk to the other), so a row's
# throughput is that CPU's time per request: the proxy's and the upstream's together. This
# measures both, per process, with `perf stat -e task-clock` (the time each process's threads
# ran, kernel work done in their context included: exact, not tick-sampled as /proc's user
# and system times are, which on a core shared by two processes misattribute), while wrk
# drives each proxy in turn, ROUNDS times, interleaved, and prints the medians: req/s,
# proxy us, upstream us, their sum, and context switches per request of each.
#
# Proxies: airlock (BINARY with CONFIG, one worker), nginx and haproxy (the shared harness's
# reverse proxies, started here if they are not running, and stopped again).
# Env: ROUNDS (3)  DUR (5 s measured, after 2 s of warm-up)  CONNS (64)  BENCH_PATH (/small)
#      PROXIES ("airlock nginx haproxy")  CONFIG (bench/gateway.yaml)  SHARED (../shared)
#      WRK_LUA (a wrk script given a run id, e.g. bench/unique-url.lua: every request a new URL)
#      AIRLOCK_ARGS (default "--log-level warning")
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port srv_pin wrk_pin
# shellcheck source=bench/common.sh
source "$REPO/bench/common.sh"   # ensure_running stop_started med
BIN=$(readlink -f "${1:-$REPO/.build/release/airlock}")
ROUNDS=${ROUNDS:-3}; DUR=${DUR:-5}; CONNS=${CONNS:-64}; BENCH_PATH=${BENCH_PATH:-/small}
CONFIG=${CONFIG:-$REPO/bench/gateway.yaml}
read -ra proxies <<<"${PROXIES:-airlock nginx haproxy}"
read -ra airlock_args <<<"${AIRLOCK_ARGS---log-level warning}"
[ "$(id -u)" -eq 0 ] || die "run as root (perf reads other users' processes; the harness needs it)"
command -v perf >/dev/null || die "perf not found (apt-get install linux-perf)"
command -v wrk >/dev/null || die "wrk not found (bash $HARNESS/setup.sh)"
PORT=18681
declare -A port=([airlock]=$PORT [nginx]=18101 [haproxy]=18201)
for p in "${proxies[@]}"; do [ -n "${port[$p]:-}" ] || die "unknown proxy $p (airlock, nginx, haproxy)"; done

work=$(mktemp -d /tmp/airlock-core.XXXXXX)
apid=""
cleanup() {
  [ -n "$apid" ] && kill "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
  stop_started
  rm -rf "$work"
}
trap cleanup EXIT

peers=()
for p in "${proxies[@]}"; do [ "$p" = airlock ] || peers+=("$p"); done
ensure_running upstream "${peers[@]}"

# The worker process of the harness's nginx (or the one haproxy process) living in DIR.
worker_of() {  # worker_of DIR_PATTERN
  local p parent
  for p in $(pgrep -f 'nginx: worker'); do
    parent=$(awk '{print $4}' "/proc/$p/stat")
    if tr '\0' ' ' <"/proc/$parent/cmdline" | grep -q -- "$1"; then echo "$p"; return; fi
  done
}
upstream_pid=$(worker_of "/bench-upstream/")
[ -n "$upstream_pid" ] || die "no upstream nginx worker found"
declare -A pid=()
[ ${#peers[@]} -eq 0 ] || for p in "${peers[@]}"; do
  case $p in
    nginx) pid[nginx]=$(worker_of "/bench-nginx/") ;;
    haproxy) pid[haproxy]=$(pgrep -x haproxy | head -1) ;;
  esac
  [ -n "${pid[$p]}" ] || die "no $p process found"
done
if [[ " ${proxies[*]} " == *" airlock "* ]]; then
  [ -x "$BIN" ] || die "no binary at $BIN (make release)"
  # shellcheck disable=SC2046
  $(srv_pin) "$BIN" run --config "$CONFIG" --listen "127.0.0.1:$PORT" --workers 1 "${airlock_args[@]}" \
    >"$work/airlock.log" 2>&1 &
  apid=$!
  wait_port "$PORT" 30 || die "airlock did not start (see $work/airlock.log)"
  pid[airlock]=$apid
fi
lua=()
[ -n "${WRK_LUA:-}" ] && lua=(-s "$(readlink -f "$WRK_LUA")")

measure() {  # measure PROXY ROUND: appends "req/s proxy_ms upstream_ms proxy_cs upstream_cs requests"
  local name=$1 round=$2 url="http://127.0.0.1:${port[$1]}$BENCH_PATH" w
  # shellcheck disable=SC2046
  timeout 30 $(wrk_pin) wrk -t1 -c"$CONNS" -d2s "${lua[@]}" "$url" -- "core-$$-$name-$round-w" >/dev/null
  # shellcheck disable=SC2046
  timeout $((DUR + 30)) $(wrk_pin) wrk -t1 -c"$CONNS" -d"$((DUR + 2))s" "${lua[@]}" "$url" -- "core-$$-$name-$round" \
    >"$work/$name.$round.wrk" &
  w=$!
  sleep 1
  perf stat -x, -e task-clock,context-switches -p "$upstream_pid" -o "$work/$name.$round.up" -- sleep "$DUR" &
  local perf_up=$!
  perf stat -x, -e task-clock,context-switches -p "${pid[$name]}" -o "$work/$name.$round.px" -- sleep "$DUR"
  wait "$perf_up" "$w"   # (not a bare wait: Airlock is this shell's child too)
  local rps px up pxcs upcs
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/$name.$round.wrk")
  [ -n "$rps" ] || die "$name: wrk reported no rate"
  if grep -q 'Non-2xx' "$work/$name.$round.wrk"; then die "$name: non-2xx responses (see $work/$name.$round.wrk)"; fi
  px=$(awk -F, '/task-clock/ {print $1}' "$work/$name.$round.px"); pxcs=$(awk -F, '/context-switches/ {print $1}' "$work/$name.$round.px")
  up=$(awk -F, '/task-clock/ {print $1}' "$work/$name.$round.up"); upcs=$(awk -F, '/context-switches/ {print $1}' "$work/$name.$round.up")
  echo "$rps $px $up $pxcs $upcs $(awk -v r="$rps" -v d="$DUR" 'BEGIN {print r * d}')" >>"$work/$name"
}

for round in $(seq "$ROUNDS"); do
  for p in "${proxies[@]}"; do measure "$p" "$round"; done
done

printf '%-10s %9s %10s %12s %8s %9s %9s\n' proxy "req/s" "proxy us" "upstream us" "sum us" "proxy cs" "upstr cs"
for p in "${proxies[@]}"; do
  # Per round: us per request (task-clock is in ms) and context switches per request; medians.
  awk '{ printf "%f %f %f %f %f %f\n", $1, $2 * 1000 / $6, $3 * 1000 / $6, ($2 + $3) * 1000 / $6, $4 / $6, $5 / $6 }' \
    "$work/$p" >"$work/$p.us"
  printf '%-10s %9.0f %10.2f %12.2f %8.2f %9.3f %9.3f\n' "$p" "$(cut -d' ' -f1 "$work/$p.us" | med)" \
    "$(cut -d' ' -f2 "$work/$p.us" | med)" "$(cut -d' ' -f3 "$work/$p.us" | med)" "$(cut -d' ' -f4 "$work/$p.us" | med)" \
    "$(cut -d' ' -f5 "$work/$p.us" | med)" "$(cut -d' ' -f6 "$work/$p.us" | med)"
done
