#!/usr/bin/env bash
# bench/intercept.sh: https through a proxy. TLS interception (connect: intercept) side by side
# with Airlock's own TLS origination and with mitmproxy, the interception proxy users pick; and
# raw CONNECT tunnels side by side with Squid and tinyproxy. wrk cannot CONNECT or speak TLS
# behind a proxy, so every row here is driven by one client, bench/proxyload.c (compiled here):
#
#   airlock-tls        proxyload -> Airlock gateway (plain http) -> https upstream      keep-alive
#   airlock-icpt       proxyload -CONNECT+TLS-> Airlock (intercept) -> https upstream  keep-alive
#   airlock-icpt-log   the same with access records on (default log level, stdout to a file)
#   airlock-icpt-new   the same, one request per connection: a full TLS handshake (no resumption)
#                      with the client and a CONNECT each time (the upstream leg stays pooled)
#   mitmproxy          mitmdump as a forward proxy, intercepting, verifying the upstream
#   mitmproxy-new      the same, one request per connection
#   <p>-tunnel-setup   CONNECT, 200, close, for p = airlock, squid, tinyproxy: tunnel setups/s
#   <p>-tunnel         keep-alive GETs over TLS (client to upstream) through one tunnel per connection
#   <p>-tunnel-1m      the same on /1m.bin with TUNNEL_BULK_CONNS connections: MiB/s
#
# The upstream is the shared harness's nginx on 127.0.0.1:18443 (its own CA, verified by both
# proxies; started here if not running). Pinned like the harness: the client on WRK_CPUS (0),
# proxy and upstream on SRV_CPUS (1); one Airlock worker; mitmdump is one Python process.
# Columns: req/s, errors, the proxy's CPU seconds (utime+stime of its tree) during the run,
# and requests per proxy CPU-second (the per-request cost the 2x goal is about).
#
# Env: AIRLOCK_BIN (default .build/release/airlock)  SHARED (../shared)  DURATION (10)
#      CONNS (64)  NEW_CONNS (16)  BENCH_PATH (/small)  SKIP_MITM=1  RESULTS_DIR
#      SKIP_TUNNEL=1 (no tunnel rows)  SETUP_CONNS (32)  TUNNEL_BULK_CONNS (8)
#      Needs root like make bench; mitmproxy from PyPI (`pip install mitmproxy`) unless SKIP_MITM=1.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port srv_pin wrk_pin tree_pids cpu_ticks BENCH_WORK

AIRLOCK_BIN=${AIRLOCK_BIN:-$REPO/.build/release/airlock}
DURATION=${DURATION:-10}; CONNS=${CONNS:-64}; NEW_CONNS=${NEW_CONNS:-16}; BENCH_PATH=${BENCH_PATH:-/small}
SKIP_MITM=${SKIP_MITM:-0}; SKIP_TUNNEL=${SKIP_TUNNEL:-0}; SETUP_CONNS=${SETUP_CONNS:-32}; TUNNEL_BULK_CONNS=${TUNNEL_BULK_CONNS:-8}
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results/$(date +%Y%m%d-%H%M%S)}/intercept
PORT=18520; MITM_PORT=18521; UP_TLS=18443
CERTS=${BENCH_WORK:-/tmp/peer-bench}/certs
[ "$(id -u)" -eq 0 ] || die "run as root (the shared harness needs it)"
[ -x "$AIRLOCK_BIN" ] || die "no Airlock binary at $AIRLOCK_BIN (make release)"
mkdir -p "$RESULTS_DIR"
WORK=$(mktemp -d /tmp/airlock-intercept-bench.XXXXXX)
pids=()
started_upstream=0
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "$started_upstream" = 1 ]; then "$HARNESS/servers.sh" stop upstream >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if ! curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$UP_PORT/small"; then
  "$HARNESS/servers.sh" start upstream >&2
  started_upstream=1
fi
[ -f "$CERTS/ca.crt" ] || die "no harness CA at $CERTS/ca.crt (run $HARNESS/setup.sh)"

cc -O2 -o "$WORK/proxyload" "$REPO/bench/proxyload.c" -lssl -lcrypto -lpthread
"$AIRLOCK_BIN" ca init --dir "$WORK/ca" >/dev/null
cat > "$WORK/airlock.yaml" <<EOF
listen: 127.0.0.1:$PORT
workers: 1
admin: off
ca:
  certificate: $WORK/ca/airlock-ca.pem
  key: $WORK/ca/airlock-ca.key
routes:
  - name: gw-tls
    match: { host: "127.0.0.1" }
    upstream: https://localhost:$UP_TLS
    security: { ca: $CERTS/ca.crt }
    connect: tunnel                   # CONNECT 127.0.0.1:$UP_TLS: a raw tunnel to the same upstream
    connect_ports: [$UP_TLS]
  - name: icpt
    match: { host: localhost }
    connect: intercept
    connect_ports: [$UP_TLS]
    upstream: origin
    security: { ca: $CERTS/ca.crt }
EOF
cp "$WORK/airlock.yaml" "$RESULTS_DIR/airlock.yaml"

proxy_cpu() { cpu_ticks "$1"; }   # clock ticks of the process tree
TCK=$(getconf CLK_TCK)

start_airlock() {  # start_airlock ARGS... -> $apid
  # shellcheck disable=SC2046
  $(srv_pin) "$AIRLOCK_BIN" run --config "$WORK/airlock.yaml" "$@" > "$WORK/airlock-stdout.log" 2>&1 &
  apid=$!
  pids+=("$apid")
  wait_port "$PORT" 10 || die "Airlock did not start: $(tail -5 "$WORK/airlock-stdout.log")"
}

stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

printf 'row\tpath\treq_s\tMiB_s\terrors\tproxy_cpu_s\treq_per_cpu_s\tconns\n' > "$RESULTS_DIR/results.tsv"
row() {  # row NAME PID CONNS PATH PROXYLOAD-ARGS...
  local name=$1 pid=$2 conns=$3 path=$4; shift 4
  local c0 c1 out req errs rps mib cpu
  # shellcheck disable=SC2046
  $(wrk_pin) "$WORK/proxyload" "$@" --path "$path" --conns "$conns" --duration 2 >/dev/null 2>&1 || true   # warm-up
  c0=$(proxy_cpu "$pid")
  # shellcheck disable=SC2046
  out=$(timeout $((DURATION + 30)) $(wrk_pin) "$WORK/proxyload" "$@" --path "$path" --conns "$conns" --duration "$DURATION" || true)
  c1=$(proxy_cpu "$pid")
  req=$(awk '{print $2}' <<<"$out"); errs=$(awk '{print $4}' <<<"$out"); rps=$(awk '{print $8}' <<<"$out")
  mib=$(awk '{print $10}' <<<"$out")
  cpu=$(awk -v a="$c0" -v b="$c1" -v t="$TCK" 'BEGIN {printf "%.2f", (b - a) / t}')
  if [ -z "$rps" ] || [ "$rps" = 0 ]; then rps=FAIL; req=0; errs=-; mib=-; fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$path" "$rps" "$mib" "$errs" "$cpu" \
    "$(awk -v r="$req" -v c="$cpu" 'BEGIN {if (c > 0) printf "%.0f", r / c; else print "-"}')" "$conns" \
    | tee -a "$RESULTS_DIR/results.tsv" >&2
}

log "### Airlock $AIRLOCK_BIN on 127.0.0.1:$PORT (access records off)"
start_airlock --log-level warning
curl -sf -o /dev/null --cacert "$WORK/ca/airlock-ca.pem" -x "http://127.0.0.1:$PORT" "https://localhost:$UP_TLS/small" \
  || die "interception does not answer: $(tail -5 "$WORK/airlock-stdout.log")"
row airlock-tls "$apid" "$CONNS" "$BENCH_PATH" --connect "127.0.0.1:$PORT"
row airlock-icpt "$apid" "$CONNS" "$BENCH_PATH" --proxy "127.0.0.1:$PORT" --connect "localhost:$UP_TLS" --tls --cafile "$WORK/ca/airlock-ca.pem"
row airlock-icpt-new "$apid" "$NEW_CONNS" "$BENCH_PATH" --proxy "127.0.0.1:$PORT" --connect "localhost:$UP_TLS" --tls --cafile "$WORK/ca/airlock-ca.pem" --new-conn
tunnel_rows() {  # tunnel_rows NAME PID PROXY-ADDR
  local via=(--proxy "$3" --connect "127.0.0.1:$UP_TLS")
  row "$1-tunnel-setup" "$2" "$SETUP_CONNS" - "${via[@]}" --connect-only
  row "$1-tunnel" "$2" "$CONNS" "$BENCH_PATH" "${via[@]}" --tls --cafile "$CERTS/ca.crt" --sni localhost
  row "$1-tunnel-1m" "$2" "$TUNNEL_BULK_CONNS" /1m.bin "${via[@]}" --tls --cafile "$CERTS/ca.crt" --sni localhost
}
[ "$SKIP_TUNNEL" = 1 ] || tunnel_rows airlock "$apid" "127.0.0.1:$PORT"
stop_pid "$apid"

log "### Airlock with access records on"
start_airlock
row airlock-icpt-log "$apid" "$CONNS" "$BENCH_PATH" --proxy "127.0.0.1:$PORT" --connect "localhost:$UP_TLS" --tls --cafile "$WORK/ca/airlock-ca.pem"
stop_pid "$apid"

if [ "$SKIP_MITM" != 1 ]; then
  if ! command -v mitmdump >/dev/null 2>&1; then
    log "mitmdump not found (pip install mitmproxy): no mitmproxy rows"
  else
    log "### mitmproxy $(mitmdump --version 2>/dev/null | head -1) on 127.0.0.1:$MITM_PORT"
    # shellcheck disable=SC2046
    $(srv_pin) mitmdump --mode regular --listen-host 127.0.0.1 --listen-port "$MITM_PORT" --set confdir="$WORK/mitm" \
      --set ssl_verify_upstream_trusted_ca="$CERTS/ca.crt" --set flow_detail=0 -q > "$WORK/mitm.log" 2>&1 &
    mpid=$!
    pids+=("$mpid")
    wait_port "$MITM_PORT" 30 || die "mitmdump did not start: $(tail -5 "$WORK/mitm.log")"
    for _ in $(seq 1 50); do [ -f "$WORK/mitm/mitmproxy-ca-cert.pem" ] && break; sleep 0.1; done
    curl -sf -o /dev/null --cacert "$WORK/mitm/mitmproxy-ca-cert.pem" -x "http://127.0.0.1:$MITM_PORT" "https://localhost:$UP_TLS/small" \
      || die "mitmproxy interception does not answer: $(tail -5 "$WORK/mitm.log")"
    row mitmproxy "$mpid" "$CONNS" "$BENCH_PATH" --proxy "127.0.0.1:$MITM_PORT" --connect "localhost:$UP_TLS" --tls --cafile "$WORK/mitm/mitmproxy-ca-cert.pem"
    row mitmproxy-new "$mpid" "$NEW_CONNS" "$BENCH_PATH" --proxy "127.0.0.1:$MITM_PORT" --connect "localhost:$UP_TLS" --tls --cafile "$WORK/mitm/mitmproxy-ca-cert.pem" --new-conn
    stop_pid "$mpid"
  fi
fi

if [ "$SKIP_TUNNEL" != 1 ]; then
  for peer in squid tinyproxy; do
    case $peer in squid) pport=18401 ;; tinyproxy) pport=18301 ;; esac
    started_peer=0
    if ! pid_on_port "$pport" >/dev/null 2>&1 || [ -z "$(pid_on_port "$pport" 2>/dev/null)" ]; then
      "$HARNESS/servers.sh" start "$peer" >&2 || { log "$peer did not start: no $peer rows"; continue; }
      started_peer=1
    fi
    ppid=$(pid_on_port "$pport")
    log "### $peer (pid $ppid) on 127.0.0.1:$pport"
    tunnel_rows "$peer" "$ppid" "127.0.0.1:$pport"
    [ "$started_peer" = 0 ] || "$HARNESS/servers.sh" stop "$peer" >/dev/null 2>&1 || true
  done
fi

column -t -s $'\t' "$RESULTS_DIR/results.tsv" >&2
awk -F'\t' '$1 == "airlock-tls" {t = $3; tc = $7} $1 == "airlock-icpt" {i = $3; ic = $7}
  END { if (t > 0 && i > 0) printf "interception / TLS origination, keep-alive: req/s %.2f, requests per CPU-second %.2f (goal: within 2x, i.e. >= 0.50)\n", i / t, (tc > 0 ? ic / tc : 0) }' \
  "$RESULTS_DIR/results.tsv" | tee "$RESULTS_DIR/summary.txt" >&2
log "results: $RESULTS_DIR"
