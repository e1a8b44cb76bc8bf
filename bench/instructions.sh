#!/usr/bin/env bash
# bench/instructions.sh: user-space instructions per request, counted by callgrind.
#
#   bench/instructions.sh [BINARY]        (as root, like make bench; BINARY defaults to the release build)
#
# Throughput on this shared 2-core machine moves 15-40 % between runs; an instruction count
# does not: callgrind counts every instruction the proxy executes in user space (Airlock,
# libevent, libc, the Swift runtime; not the kernel), whatever else the machine is doing.
# So this is the check for a change to the hot path: run it before and after.
#
# Starts BINARY as a gateway (bench/gateway.yaml) under callgrind in front of the shared
# harness's upstream nginx, warms it up, zeroes the counters, drives REQUESTS-ish requests
# with wrk (CONNS connections, bounded by DUR seconds), dumps, and prints instructions per
# request. HAPROXY=1 measures the harness's HAProxy configuration the same way, for scale.
# Needs valgrind (apt) and the harness (bash $SHARED/bench/setup.sh). valgrind 3.19 cannot
# read the toolchain's DWARF 5, so a copy of the binary without debug info is measured.
# DASHBOARD=closed gives the gateway an admin listener (127.0.0.1:18673); DASHBOARD=open also
# keeps the dashboard (GET /) open in headless Chromium during the measured run, live on its
# event stream and polls, and prints the page's own timings (window.airlockDashboard) after it.
# Env: DUR (10 s)  CONNS (16)  BENCH_PATH (/small)  HAPROXY (0)  SHARED (../shared)  DASHBOARD ("")
#      CONFIG (bench/gateway.yaml; e.g. bench/gateway-cache.yaml for cache hits)
#      TLS=1: the gateway originates TLS to the upstream's https port (localhost:18443, verified
#        against the harness's CA, as make bench's airlock-tls row); with BENCH_PATH=/1m.bin this
#        is the TLS bulk row. HAPROXY=1 then measures the harness's haproxy-tls configuration.
#      WRK_LUA (a wrk script for every wrk run, given a run id as its argument: bench/unique-url.lua
#      makes every request a new URL, the cache's miss path)
#      PORT_SHIFT (0): added to the measured ports (18671/18672, TLS 18675/18676), so that two
#      measurements can run at once (callgrind counts do not mind a busy machine)
#      AIRLOCK_ARGS (default "--log-level warning"; "" measures with access records on,
#      stdout to a file: user-space instructions only, the kernel's write(2) cost not counted)
#      CACHE_SIM=1: callgrind also simulates the data caches (D1 48 KiB; LL as LL_CACHE, default
#        "2097152,16,64": one core's 2 MiB L2) and prints the simulated last-level read and write
#        misses per request beside the instructions (`callgrind_annotate --show=DLmr,DLmw FILE`
#        per function). A model, not this machine's caches: it shows which code reads cold memory.
#      VG_EXTRA: more valgrind options, split on spaces (e.g. "--branch-sim=yes"; with CACHE_SIM=1
#        both apply)
#      WARMUP (3): seconds of wrk before the counters are zeroed (a cache that must fill before it
#        evicts needs more under valgrind, ~2,000 requests a second)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port
# shellcheck source=bench/common.sh
source "$REPO/bench/common.sh"   # ensure_running stop_started
BIN=$(readlink -f "${1:-$REPO/.build/release/airlock}")
AIRLOCK_ARGS=${AIRLOCK_ARGS---log-level warning}
read -ra airlock_args <<<"$AIRLOCK_ARGS"
DUR=${DUR:-10}; CONNS=${CONNS:-16}; BENCH_PATH=${BENCH_PATH:-/small}; HAPROXY=${HAPROXY:-0}
TLS=${TLS:-0}
# TLS=1 measures on ports of its own, so it can run beside a plain measurement.
airlock_port=18671; haproxy_port=18672
[ "$TLS" = 1 ] && { airlock_port=18675; haproxy_port=18676; }
# PORT_SHIFT=N moves both ports by N, for a second measurement beside one already running.
airlock_port=$((airlock_port + ${PORT_SHIFT:-0})); haproxy_port=$((haproxy_port + ${PORT_SHIFT:-0}))
DASHBOARD=${DASHBOARD:-}; ADMIN_PORT=18673
WRK_LUA=${WRK_LUA:-}
case "$DASHBOARD" in ""|closed|open) ;; *) die "DASHBOARD: expected closed or open, got $DASHBOARD" ;; esac
for tool in valgrind callgrind_control wrk strip; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install valgrind wrk binutils)"
done
[ -x "$BIN" ] || die "no binary at $BIN (make release)"

work=$(mktemp -d /tmp/airlock-instr.XXXXXX)
vg=""
dash=""
cleanup() {
  [ -n "$dash" ] && kill "$dash" 2>/dev/null && wait "$dash" 2>/dev/null
  [ -n "$vg" ] && kill "$vg" 2>/dev/null && wait "$vg" 2>/dev/null
  stop_started
  rm -rf "$work"
}
trap cleanup EXIT
ensure_running upstream

# The dashboard in headless Chromium (Tests/Fixtures/chromium/cdp_page.py: JSON commands on
# its stdin, one JSON answer a line on its stdout), until `dashboard_close`.
dashboard_ask() {  # dashboard_ask JSON: prints the answer line (bounded by 30 s)
  local n
  n=$(wc -l <"$work/dash.out")
  echo "$1" >&9
  for _ in $(seq 300); do
    [ "$(wc -l <"$work/dash.out")" -gt "$n" ] && { sed -n "$((n + 1))p" "$work/dash.out"; return; }
    sleep 0.1
  done
  die "the dashboard driver did not answer $1"
}
dashboard_open() {
  mkfifo "$work/dash.in"
  : >"$work/dash.out"
  python3 "$REPO/Tests/Fixtures/chromium/cdp_page.py" /usr/bin/chromium "$work/chromium" \
    "http://127.0.0.1:$ADMIN_PORT/" $((DUR + 180)) <"$work/dash.in" >"$work/dash.out" 2>/dev/null &
  dash=$!
  exec 9>"$work/dash.in"
  for _ in $(seq 600); do grep -q ready "$work/dash.out" && break; sleep 0.1; done
  grep -q ready "$work/dash.out" || die "the dashboard did not open: $(cat "$work/dash.out")"
  dashboard_ask '{"eval": "new Promise(r => { const t = setInterval(() => { if (document.getElementById(\"conn\").textContent === \"live\") { clearInterval(t); r(true); } }, 50); })"}' >/dev/null
}
dashboard_close() {
  echo "dashboard page: $(dashboard_ask '{"eval": "JSON.stringify(window.airlockDashboard)"}')"
  echo "dashboard console errors: $(dashboard_ask '{"console": true}')"
  dashboard_ask '{"quit": true}' >/dev/null
  exec 9>&-
  wait "$dash" 2>/dev/null || true
  dash=""
}

measure() {  # measure NAME PORT CMD...
  local name=$1 port=$2; shift 2
  local extra=()
  read -ra extra <<<"${VG_EXTRA:-}"
  [ "${CACHE_SIM:-0}" = 1 ] && extra+=(--cache-sim=yes --D1=49152,12,64 "--LL=${LL_CACHE:-2097152,16,64}")
  valgrind --tool=callgrind "${extra[@]}" --callgrind-out-file="$work/$name.%p" "$@" >"$work/$name.log" 2>&1 &
  vg=$!
  wait_port "$port" 60 || { cat "$work/$name.log" >&2; die "$name did not start under valgrind"; }
  local lua=() args=()
  [ -n "$WRK_LUA" ] && { lua=(-s "$WRK_LUA"); args=(-- "$name-$$-warmup"); }
  timeout $((${WARMUP:-3} + 30)) wrk -t1 -c"$CONNS" -d"${WARMUP:-3}s" "${lua[@]}" "http://127.0.0.1:$port$BENCH_PATH" "${args[@]}" >/dev/null
  [ -n "$WRK_LUA" ] && args=(-- "$name-$$-measured")
  [ "$name" = airlock ] && [ "$DASHBOARD" = open ] && dashboard_open
  callgrind_control -z "$vg" >/dev/null
  local n
  n=$(timeout $((DUR + 20)) wrk -t1 -c"$CONNS" -d"${DUR}s" "${lua[@]}" "http://127.0.0.1:$port$BENCH_PATH" "${args[@]}" \
      | awk '/requests in/ {print $1}')
  callgrind_control -d "$vg" >/dev/null
  [ -n "$dash" ] && dashboard_close
  sleep 1
  kill "$vg"; wait "$vg" 2>/dev/null || true; vg=""
  local dump total
  dump=$(ls "$work/$name".*.1)
  total=$(awk '/^summary:/ {print $2}' "$dump")
  [ -n "$n" ] && [ "$n" -gt 0 ] || die "$name: no requests completed"
  printf '%-8s %s%-9s requests %8d  instructions/request %8d' "$name" "" "$BENCH_PATH" "$n" $((total / n))
  if [ "${CACHE_SIM:-0}" = 1 ]; then
    # summary: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
    awk -v n="$n" '/^summary:/ {printf "  LL misses/request: read %.2f write %.2f", $9 / n, $10 / n}' "$dump"
  fi
  printf '\n'
  cp "$dump" "$REPO/bench/results/callgrind.$name.out" 2>/dev/null || true
}

mkdir -p "$REPO/bench/results"
strip --strip-debug -o "$work/airlock" "$BIN"
config=${CONFIG:-$REPO/bench/gateway.yaml}
if [ "$TLS" = 1 ]; then
  [ -f "$CERT_DIR/ca.crt" ] || die "no harness CA at $CERT_DIR/ca.crt (bash $SHARED/bench/setup.sh)"
  printf '%s\n' "listen: 127.0.0.1:$airlock_port" "workers: 1" "routes:" "  - name: bench-tls" \
    "    match: { host: \"*\" }" "    upstream: https://localhost:$UP_TLS_PORT" \
    "    security: { ca: \"$CERT_DIR/ca.crt\" }" >"$work/gateway-tls.yaml"
  config=$work/gateway-tls.yaml
fi
if [ -n "$DASHBOARD" ]; then
  { cat "$config"; echo "admin: 127.0.0.1:$ADMIN_PORT"; } >"$work/gateway.yaml"
  config=$work/gateway.yaml
fi
measure airlock $airlock_port "$work/airlock" run --config "$config" --listen 127.0.0.1:$airlock_port "${airlock_args[@]}"
if [ "$HAPROXY" = 1 ]; then
  peer=haproxy; peer_port=18201
  [ "$TLS" = 1 ] && { peer=haproxy-tls; peer_port=18202; }
  cfg=/tmp/bench-$peer/haproxy.cfg
  [ -f "$cfg" ] || { "$HARNESS/servers.sh" start $peer >/dev/null; "$HARNESS/servers.sh" stop $peer >/dev/null; }
  sed "s/127.0.0.1:$peer_port/127.0.0.1:$haproxy_port/" "$cfg" >"$work/haproxy.cfg"
  measure haproxy $haproxy_port haproxy -db -f "$work/haproxy.cfg"
fi
echo "(callgrind profiles: bench/results/callgrind.*.out; callgrind_annotate --inclusive=yes FILE)"
