#!/usr/bin/env bash
# bench/run.sh: benchmark Airlock against the peers with the shared loopback harness
# ($SHARED/bench: run.sh, servers.sh, lib.sh). `make bench` runs it after setup and a
# release build. Needs root (the harness chowns its server dirs and resets /proc counters).
#
# One run measures, all results in one directory:
#   direct nginx haproxy   harness targets (upstream nginx itself, reverse proxies)   PEERS=...
#   airlock-gw             Airlock as a gateway:       bench/gateway.yaml, 127.0.0.1:18501
#   airlock-fwd            Airlock as a forward proxy: bench/forward.yaml, 127.0.0.1:18502
#                          (wrk sends absolute-form requests for http://127.0.0.1:18080/...)
#   airlock-json           Airlock as a gateway validating JSON bodies: bench/gateway-json.yaml,
#                          127.0.0.1:18503, on JSON_PATH only; airlock-gw also measures JSON_PATH,
#                          and the table ends with the throughput ratio json/gw on it
#   airlock-req            airlock-gw with a request serializer (bench/gateway-request.yaml:
#                          headers + query parameters), 127.0.0.1:18507, on LOG_PATHS  SKIP_REQ=1
#   airlock-gw-log         airlock-gw with access records on (--log-level info, stdout to a
#                          file), 127.0.0.1:18505, on LOG_PATHS
#   nginx-log              the nginx peer with a buffered JSON access log (bench/nginx-log.sh:
#                          access_log ... buffer=64k), 127.0.0.1:18106, on LOG_PATHS; the table
#                          ends with the ratios airlock-gw-log/airlock-gw and nginx-log/nginx
# then prints one table (target, path, req/s, p50, p99, ratio to direct, RSS), and
# finally holds IDLE_CLIENTS idle keep-alive connections on a gateway-mode Airlock and
# reports its memory (bench/idle-rss.py).
#
# Env: SHARED (default ../shared)  AIRLOCK_BIN (default .build/release/airlock)
#      DURATION REPS PATHS WARMUP THREADS CONNS PIN WORKERS ...: passed to the harness
#      (ours: DURATION=10 REPS=2 PATHS="/small /1m.bin /16m.bin"; /16m.bin, 16 MiB of random
#      bytes, is written here into the upstream's document root, beside the harness's own
#      documents, before the first step); WORKERS also sets
#      Airlock's --workers (default 1, like nginx worker_processes / haproxy nbthread).
#      AIRLOCK_ARGS (default "--log-level warning": no per-request access records, as the
#      peers run with access_log off; AIRLOCK_ARGS= measures with access logging on)
#      PEERS="direct nginx haproxy"  SKIP_AIRLOCK=1 (peers only)  IDLE_CLIENTS=1000 (0: skip)
#      JSON_PATH=/1k.json (the harness's 1 KiB application/json document)  SKIP_JSON=1 (no JSON row)
#      ONLY_JSON=1 (just airlock-gw and airlock-json on JSON_PATH: a quick check of the JSON row)
#      LOG_PATHS=/small (paths of the two access-log rows)  SKIP_LOG=1 (no access-log rows)
#      SKIP_TLS=1 (no airlock-tls row: TLS origination to the upstream's https port, vs haproxy-tls)
#      RESULTS_DIR (default bench/results/<timestamp>)
#      SKIP_INTERCEPT=1 (no TLS interception table: bench/intercept.sh, airlock-tls vs airlock-icpt
#      keep-alive, new handshakes, access records on, and mitmproxy, all driven by bench/proxyload.c)
#      SKIP_CONNECT=1 (no CONNECT tunnel rows): airlock-connect (bench/connect.yaml,
#      127.0.0.1:18508), squid and tinyproxy, each measured by bench/connect-bench.py (wrk
#      cannot CONNECT): tunnel setups/s (CONNECT_CONC clients for CONNECT_SECONDS, default 32
#      and 10) and tunnel throughput MiB/s (curl fetching the upstream's /1m.bin CONNECT_MIB
#      times, default 200, over one tunnel, TLS end to end to localhost:18443), REPS runs each;
#      CONNECT_PEERS (default "squid tinyproxy"; "" for Airlock alone); ONLY_CONNECT=1: just
#      these rows (no wrk steps, no idle test)
#      SCRAPE_METRICS=1: one more row, airlock-gw-scrape: airlock-gw again (admin listener on
#      127.0.0.1:$SCRAPE_ADMIN_PORT, default 18511) with GET /metrics curled once a second for
#      the whole run, as a Prometheus server would; the scrape count goes to its scrapes.txt
#      BIG_PATHS="/16m.bin" BIG_CONNS=8: the paths of PATHS (and PATHS_TLS) that are in BIG_PATHS
#      are measured in steps of their own (peers-bulk, airlock-gw-bulk, airlock-fwd-bulk,
#      airlock-tls-bulk) with wrk -c$BIG_CONNS, every target alike: 64 connections each moving
#      16 MiB take longer than wrk's fixed 2 s timeout even straight to the upstream (55 req/s
#      with 7 timeouts there, 30-35 through nginx and HAProxy), so they would count timeouts,
#      not throughput. 8 x 16 MiB in flight is as many bytes as 64 x 2 MiB.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
if [ ! -f "$SHARED/bench/lib.sh" ] || [ ! -x "$SHARED/bench/run.sh" ]; then
  echo "[bench] ERROR: shared bench harness not found in $SHARED/bench (set SHARED=...)" >&2
  exit 1
fi
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"        # log die wait_port srv_pin tree_pids TMP_PREFIX UP_PORT

AIRLOCK_BIN=${AIRLOCK_BIN:-$REPO/.build/release/airlock}
case $AIRLOCK_BIN in /*) ;; *) AIRLOCK_BIN=$REPO/$AIRLOCK_BIN ;; esac
AIRLOCK_ARGS=${AIRLOCK_ARGS---log-level warning}
read -ra airlock_args <<<"$AIRLOCK_ARGS"
PEERS=${PEERS:-"direct nginx haproxy haproxy-tls"}
SKIP_AIRLOCK=${SKIP_AIRLOCK:-0}
IDLE_CLIENTS=${IDLE_CLIENTS:-1000}
export PATHS=${PATHS:-"/small /1m.bin /16m.bin"}
export WORKERS=${WORKERS:-1}
GW_CONFIG=$REPO/bench/gateway.yaml;  GW_PORT=18501    # must match `listen` in the yaml
FWD_CONFIG=$REPO/bench/forward.yaml; FWD_PORT=18502
JSON_CONFIG=$REPO/bench/gateway-json.yaml; JSON_PORT=18503
REQ_CONFIG=$REPO/bench/gateway-request.yaml; REQ_PORT=18507   # must match `listen` in the yaml
SKIP_REQ=${SKIP_REQ:-0}
WARMUP_S=${WARMUP:-2}
TLS_PORT=18504   # airlock-tls: gateway to the upstream's TLS port, config written at run time
SKIP_TLS=${SKIP_TLS:-0}
GW_LOG_PORT=18505; NGINX_LOG_PORT=18106
LOG_PATHS=${LOG_PATHS:-/small}
SKIP_LOG=${SKIP_LOG:-0}
JSON_PATH=${JSON_PATH:-/1k.json}
SKIP_JSON=${SKIP_JSON:-0}
ONLY_JSON=${ONLY_JSON:-0}
SCRAPE_METRICS=${SCRAPE_METRICS:-1}
SKIP_CONNECT=${SKIP_CONNECT:-0}
CONNECT_CONFIG=$REPO/bench/connect.yaml; CONNECT_PORT=18508   # must match `listen` in the yaml
CONNECT_PEERS=${CONNECT_PEERS-"squid tinyproxy"}
CONNECT_SECONDS=${CONNECT_SECONDS:-10}
CONNECT_CONC=${CONNECT_CONC:-32}
CONNECT_MIB=${CONNECT_MIB:-200}
CONNECT_TIMEOUT=${CONNECT_TIMEOUT:-120}
SCRAPE_ADMIN_PORT=${SCRAPE_ADMIN_PORT:-18511}
# The bulk paths (BIG_PATHS) apart from the rest: measured with BIG_CONNS connections (above).
BIG_PATHS=${BIG_PATHS:-/16m.bin}
BIG_CONNS=${BIG_CONNS:-8}
split_paths() {  # split_paths PATH... -> "standard paths|bulk paths"
  local std="" bulk="" p
  for p in "$@"; do
    if [[ " $BIG_PATHS " == *" $p "* ]]; then bulk+="${bulk:+ }$p"; else std+="${std:+ }$p"; fi
  done
  echo "$std|$bulk"
}
# shellcheck disable=SC2086
IFS='|' read -r STD_PATHS BULK_PATHS <<<"$(split_paths $PATHS)"
GW_PATHS=$STD_PATHS
[ "$SKIP_JSON" = 1 ] || [[ " $STD_PATHS " == *" $JSON_PATH "* ]] || GW_PATHS="${STD_PATHS:+$STD_PATHS }$JSON_PATH"
if [ "$ONLY_JSON" = 1 ]; then PEERS=""; GW_PATHS=$JSON_PATH; BULK_PATHS=""; IDLE_CLIENTS=0; SKIP_LOG=1; SKIP_CONNECT=1; fi
ONLY_CONNECT=${ONLY_CONNECT:-0}
if [ "$ONLY_CONNECT" = 1 ]; then
  PEERS=""; IDLE_CLIENTS=0; SKIP_LOG=1; SKIP_JSON=1; SKIP_REQ=1; SKIP_TLS=1; SCRAPE_METRICS=0; SKIP_CONNECT=0
fi
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results/$(date +%Y%m%d-%H%M%S)}

[ "$(id -u)" -eq 0 ] || die "run as root (the shared harness needs it); e.g. sudo make bench"
for tool in wrk nginx haproxy curl python3 taskset ss; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run 'bash $HARNESS/setup.sh' (or make bench)"
done
if [ "$SKIP_AIRLOCK" != 1 ]; then
  [ -x "$AIRLOCK_BIN" ] || die "Airlock binary not found at $AIRLOCK_BIN: build it with 'make release' (or set AIRLOCK_BIN=...; SKIP_AIRLOCK=1 benchmarks the peers only)"
  for cfg in "$GW_CONFIG" "$FWD_CONFIG" "$JSON_CONFIG" "$REQ_CONFIG" "$CONNECT_CONFIG"; do
    out=$("$AIRLOCK_BIN" check-config "$cfg" 2>&1) || die "airlock check-config $cfg failed: $out"
  done
fi
mkdir -p "$RESULTS_DIR"

# Bound on one harness invocation: per run DURATION + quiet wait + slack, plus start/verify.
n_paths=$(wc -w <<<"$PATHS")
step_limit() {  # step_limit NTARGETS [NPATHS] -> seconds
  echo $(( $1 * (${2:-$n_paths} * ${REPS:-2} * (${DURATION:-10} + ${QUIET_WAIT:-90} + 45) + ${WARMUP:-2} + 120) ))
}

started_upstream=0
idle_pid=""
connect_pid=""
started_connect_peers=()
cleanup() {
  local rc=$?
  if [ -n "$idle_pid" ] && [ -d "/proc/$idle_pid" ]; then stop_pid "$idle_pid" airlock-idle; fi
  if [ -n "$connect_pid" ] && [ -d "/proc/$connect_pid" ]; then stop_pid "$connect_pid" airlock-connect; fi
  for p in "${started_connect_peers[@]}"; do "$HARNESS/servers.sh" stop "$p" || true; done
  if [ "$started_upstream" = 1 ]; then "$HARNESS/servers.sh" stop upstream || true; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stop_pid() {  # stop_pid PID NAME: SIGTERM, bounded wait (drain), then SIGKILL
  local pid=$1 name=$2 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  if [ -d "/proc/$pid" ]; then
    log "$name (pid $pid) still running 15 s after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# One upstream for all steps (each harness run would otherwise start and stop its own).
if ! "$HARNESS/servers.sh" status upstream | grep -q running; then
  "$HARNESS/servers.sh" start upstream
  started_upstream=1
fi

# The 16 MiB document (issue #23's bulk path) is ours, not the harness's: written into the
# upstream's document root (where the harness keeps /1m.bin) once the upstream has made that
# root, the same way (random bytes, world-readable), and kept while its size is right.
UP_HTML=${TMP_PREFIX}-upstream/html
[ -d "$UP_HTML" ] || die "the upstream's document root $UP_HTML is missing"
if [ "$(stat -c %s "$UP_HTML/16m.bin" 2>/dev/null)" != 16777216 ]; then
  head -c 16777216 /dev/urandom > "$UP_HTML/16m.bin.tmp"
  chmod 644 "$UP_HTML/16m.bin.tmp"
  mv -f "$UP_HTML/16m.bin.tmp" "$UP_HTML/16m.bin"
fi
curl -fsS -o /dev/null "http://127.0.0.1:$UP_PORT/16m.bin" || die "the upstream does not serve /16m.bin from $UP_HTML"

harness() {  # harness NAME NTARGETS [ENV=VAL...] -- TARGET...: one harness run into $RESULTS_DIR/NAME
  local name=$1 ntargets=$2 rc=0 npaths=$n_paths; shift 2
  local envs=()
  while [ "$1" != -- ]; do
    envs+=("$1")
    case $1 in PATHS=*) npaths=$(wc -w <<<"${1#PATHS=}") ;; esac
    shift
  done; shift
  log "### $name: $* (results: $RESULTS_DIR/$name)"
  env "${envs[@]}" RESULTS_DIR="$RESULTS_DIR/$name" \
    timeout --foreground -k 30 "$(step_limit "$ntargets" "$npaths")" "$HARNESS/run.sh" "$@" || rc=$?
  [ "$rc" = 0 ] || log "$name: harness exited with status $rc"
}

split_harness() {  # split_harness NAME NTARGETS STD_PATHS [ENV=VAL...] -- TARGET...
  # STD_PATHS with the harness's connections into NAME, then BULK_PATHS with BIG_CONNS into
  # NAME-bulk; for `ours` (Airlock) each step keeps its log (the next `ours` start clears it).
  local name=$1 ntargets=$2 std=$3; shift 3
  if [ -n "$std" ]; then
    harness "$name" "$ntargets" PATHS="$std" "$@"
    [ "${*: -1}" != ours ] || keep_log "$name"
  fi
  if [ -n "$BULK_PATHS" ]; then
    harness "$name-bulk" "$ntargets" PATHS="$BULK_PATHS" CONNS="$BIG_CONNS" "$@"
    [ "${*: -1}" != ours ] || keep_log "$name-bulk"
  fi
}

airlock_cmd() {  # airlock_cmd CONFIG -> a shell command line (OURS_CMD)
  printf '%q run --config %q --workers %q' "$AIRLOCK_BIN" "$1" "$WORKERS"
  if [ ${#airlock_args[@]} -gt 0 ]; then printf ' %q' "${airlock_args[@]}"; fi
}

keep_log() {  # keep the end of Airlock's stdout (JSON log lines) from the harness's dir
  local src="${TMP_PREFIX}-ours/stdout.log"
  [ -f "$src" ] && [ -d "$RESULTS_DIR/$1" ] || return 0
  { echo "# last 200 of $(wc -l <"$src") lines of $src"; tail -n 200 "$src"; } > "$RESULTS_DIR/$1/airlock-stdout-tail.log"
}

# airlock-tls is measured here, not by the harness: its `ours` target verifies that the
# upstream answered over plain http (x-bench-scheme), and this row goes to the https port.
# Same method: verified first (x-bench-scheme: https), pinned like the peers, WARMUP,
# wrk -t$THREADS -c$CONNS -d$DURATION --latency with the harness's wrk-bench.lua, REPS per
# path, CPU of our tree + upstream, peak RSS reset before each run. Bounded like the rest.
measure_tls() {  # measure_tls STEP CONFIG PATH... (STEP: the results directory's name)
  local step=$1 cfg=$2; shift 2
  local dir=$RESULTS_DIR/$step pid up_pid path r raw c0 c1 u0 u1 hwm line tck
  mkdir -p "$dir"; tck=$(getconf CLK_TCK)
  printf 'target\tpath\trun\treq_s\tMiB_s\tp50_ms\tp99_ms\tsock_err\tnon2xx\tpeak_rss_MiB\tcpu_s\tup_cpu_s\twrk_cpu_s\tother_cpu_s\n' > "$dir/results.tsv"
  log "### $step: $AIRLOCK_BIN on 127.0.0.1:$TLS_PORT -> https://localhost:$UP_TLS_PORT (paths $*, ${CONNS:-64} connections)"
  # shellcheck disable=SC2046
  $(srv_pin) "$AIRLOCK_BIN" run --config "$cfg" --workers "$WORKERS" "${airlock_args[@]}" > "$dir/stdout.log" 2>&1 &
  pid=$!
  if ! wait_port "$TLS_PORT" 10; then log "airlock-tls did not start"; stop_pid "$pid" airlock-tls; return 0; fi
  # `servers.sh status` prints "upstream running pid=N port=P"; without it the upstream's
  # column would repeat our own CPU.
  up_pid=$("$HARNESS/servers.sh" status upstream | sed -n 's/.*pid=\([0-9][0-9]*\).*/\1/p')
  [ -n "$up_pid" ] || log "airlock-tls: upstream pid not found; up_cpu_s repeats Airlock's CPU"
  if ! curl -sS --max-time 10 -o /dev/null -D - "http://127.0.0.1:$TLS_PORT/small" | tr -d '\r' | grep -qi '^x-bench-scheme: https$'; then
    log "airlock-tls failed verification (no x-bench-scheme: https)"; stop_pid "$pid" airlock-tls; return 0
  fi
  timeout -k 5 $((WARMUP_S + 30)) $(wrk_pin) wrk -t"${THREADS:-2}" -c"${CONNS:-64}" -d"${WARMUP_S}s" "http://127.0.0.1:$TLS_PORT$1" > /dev/null 2>&1 || true
  for path in "$@"; do
    for ((r = 1; r <= ${REPS:-2}; r++)); do
      raw=$dir/wrk-${path//\//_}-$r.txt
      reset_hwm "$pid"
      c0=$(cpu_ticks "$pid"); u0=$(cpu_ticks "${up_pid:-$pid}")
      { TIMEFORMAT='WRKCPU %U %S'; time timeout -k 5 $((${DURATION:-10} + 30)) $(wrk_pin) \
          wrk -t"${THREADS:-2}" -c"${CONNS:-64}" -d"${DURATION:-10}s" --latency -s "$HARNESS/wrk-bench.lua" \
          "http://127.0.0.1:$TLS_PORT$path"; } > "$raw" 2>&1 || true
      c1=$(cpu_ticks "$pid"); u1=$(cpu_ticks "${up_pid:-$pid}"); hwm=$(hwm_kb "$pid")
      line=$(grep -h BENCHRESULT "$raw" || true)
      if [ -z "$line" ]; then
        printf 'airlock-tls\t%s\t%s\tFAIL\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\n' "$path" "$r" >> "$dir/results.tsv"; continue
      fi
      awk -v p="$path" -v r="$r" -v c="$((c1 - c0))" -v u="$((u1 - u0))" -v h="$hwm" -v tck="$tck" \
          -v w="$(grep -h '^WRKCPU' "$raw")" '
        { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END {
          s = v["duration_us"] / 1e6; split(w, wc, " ")
          err = v["err_connect"] + v["err_read"] + v["err_write"] + v["err_timeout"]
          printf "airlock-tls\t%s\t%s\t%.0f\t%.1f\t%.2f\t%.2f\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t-\n", p, r,
            v["requests"] / s, v["bytes"] / s / 1048576, v["p50_us"] / 1000, v["p99_us"] / 1000,
            err, v["err_status"], h / 1024, c / tck, u / tck, wc[2] + wc[3]
        }' <<<"$line" >> "$dir/results.tsv"
      tail -n 1 "$dir/results.tsv" | awk -F'\t' '{printf "[bench]   airlock-tls %-7s run %s: %s req/s, p50 %s ms, p99 %s ms, rss %s MiB, cpu %s s\n", $2, $3, $4, $6, $7, $10, $11}' >&2
    done
  done
  stop_pid "$pid" airlock-tls
}

# shellcheck disable=SC2086
[ -z "$PEERS" ] || split_harness peers "$(wc -w <<<"$PEERS")" "$STD_PATHS" -- $PEERS
if [ "$SKIP_AIRLOCK" != 1 ] && [ "$ONLY_CONNECT" != 1 ]; then
  split_harness airlock-gw 1 "$GW_PATHS" PORT=$GW_PORT MODE=reverse OURS_CMD="$(airlock_cmd "$GW_CONFIG")" -- ours
  if [ "$SKIP_LOG" != 1 ]; then
    # Access records on (the default level), stdout to the harness's file; right after
    # airlock-gw so that the two rows' minutes are close.
    harness airlock-gw-log 1 PORT=$GW_LOG_PORT MODE=reverse PATHS="$LOG_PATHS" \
      OURS_CMD="$(printf '%q run --config %q --workers %q --listen 127.0.0.1:%q --log-level info' \
                 "$AIRLOCK_BIN" "$GW_CONFIG" "$WORKERS" "$GW_LOG_PORT")" -- ours
    keep_log airlock-gw-log
  fi
  if [ "$SCRAPE_METRICS" = 1 ] && [ -n "$GW_PATHS" ]; then
    # The same gateway with its admin listener on a known port, scraped once a second by a
    # loop bounded by the step's own time limit; it ends with the harness run.
    mkdir -p "$RESULTS_DIR/airlock-gw-scrape"
    SCRAPE_CONFIG=$RESULTS_DIR/airlock-gw-scrape.yaml
    { cat "$GW_CONFIG"; echo "admin: 127.0.0.1:$SCRAPE_ADMIN_PORT"; } > "$SCRAPE_CONFIG"
    scrape_limit=$(step_limit 1 "$(wc -w <<<"$GW_PATHS")")
    (
      ok=0 failed=0
      for ((i = 0; i < scrape_limit; i++)); do
        sleep 1
        if curl -sS --max-time 2 -o /dev/null "http://127.0.0.1:$SCRAPE_ADMIN_PORT/metrics" 2>/dev/null; then
          ok=$((ok + 1)); else failed=$((failed + 1)); fi
        echo "scrapes ok=$ok failed=$failed (failures include the seconds before and after the gateway ran)" \
          > "$RESULTS_DIR/airlock-gw-scrape/scrapes.txt"
      done
    ) &
    scraper=$!
    harness airlock-gw-scrape 1 PORT=$GW_PORT MODE=reverse PATHS="$GW_PATHS" OURS_CMD="$(airlock_cmd "$SCRAPE_CONFIG")" -- ours
    kill "$scraper" 2>/dev/null || true
    wait "$scraper" 2>/dev/null || true
    keep_log airlock-gw-scrape
    log "airlock-gw-scrape: $(cat "$RESULTS_DIR/airlock-gw-scrape/scrapes.txt" 2>/dev/null || echo 'no scrapes')"
  fi
  if [ "$ONLY_JSON" != 1 ]; then
    split_harness airlock-fwd 1 "$STD_PATHS" PORT=$FWD_PORT MODE=forward OURS_CMD="$(airlock_cmd "$FWD_CONFIG")" -- ours
  fi
  if [ "$SKIP_TLS" != 1 ] && [ "$ONLY_JSON" != 1 ]; then
    # TLS origination to the upstream's https port, verified against the harness's CA
    # (as haproxy-tls: verify required, SNI and host check localhost).
    mkdir -p "$RESULTS_DIR"
    TLS_CONFIG=$RESULTS_DIR/airlock-tls.yaml
    printf '%s\n' "listen: 127.0.0.1:$TLS_PORT" "workers: 1" "routes:" "  - name: bench-tls" \
      "    match: { host: \"*\" }" "    upstream: https://localhost:$UP_TLS_PORT" \
      "    security: { ca: \"$CERT_DIR/ca.crt\" }" > "$TLS_CONFIG"
    PATHS_TLS=${PATHS_TLS:-$PATHS}
    # shellcheck disable=SC2086
    IFS='|' read -r std_tls bulk_tls <<<"$(split_paths $PATHS_TLS)"
    # shellcheck disable=SC2086
    [ -z "$std_tls" ] || measure_tls airlock-tls "$TLS_CONFIG" $std_tls
    # shellcheck disable=SC2086
    [ -z "$bulk_tls" ] || CONNS=$BIG_CONNS measure_tls airlock-tls-bulk "$TLS_CONFIG" $bulk_tls
  fi
  if [ "$SKIP_REQ" != 1 ] && [ "$ONLY_JSON" != 1 ]; then
    # The request serializer's cost: headers and query parameters on every request.
    harness airlock-req 1 PORT=$REQ_PORT MODE=reverse PATHS="$LOG_PATHS" OURS_CMD="$(airlock_cmd "$REQ_CONFIG")" -- ours
    keep_log airlock-req
  fi
  if [ "$SKIP_JSON" != 1 ]; then
    harness airlock-json 1 PORT=$JSON_PORT MODE=reverse PATHS="$JSON_PATH" OURS_CMD="$(airlock_cmd "$JSON_CONFIG")" -- ours
    keep_log airlock-json
  fi
fi

# ---- CONNECT tunnels: Airlock, squid, tinyproxy through bench/connect-bench.py ----
CONNECT_TSV=$RESULTS_DIR/connect/results.tsv
measure_connect() {  # measure_connect NAME PORT PID: REPS runs into $CONNECT_TSV, bounded
  local name=$1 port=$2 pid=$3 r line
  for ((r = 1; r <= ${REPS:-2}; r++)); do
    # shellcheck disable=SC2046
    line=$(timeout -k 5 $((${CONNECT_SECONDS%.*} + CONNECT_TIMEOUT + 60)) $(wrk_pin) python3 "$REPO/bench/connect-bench.py" \
             --name "$name" --proxy-port "$port" --pid "$pid" --target "localhost:$UP_TLS_PORT" --ca "$CERT_DIR/ca.crt" \
             --setup-seconds "$CONNECT_SECONDS" --concurrency "$CONNECT_CONC" --tput-mib "$CONNECT_MIB" \
             --timeout "$CONNECT_TIMEOUT" 2>>"$RESULTS_DIR/connect/$name.stderr" | grep '^CONNECTRESULT' || true)
    echo "$line" >> "$RESULTS_DIR/connect/raw.txt"
    if [ -z "$line" ]; then
      printf '%s\t%s\tFAIL\t-\t-\t-\t-\t-\t-\n' "$name" "$r" >> "$CONNECT_TSV"; continue
    fi
    awk -v r="$r" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v["name"], r, v["setups_per_s"], v["setup_errors"],
        v["tput_mib_s"], v["tput_errors"], v["setup_cpu_s"], v["tput_cpu_s"], v["peak_rss_mib"] }' <<<"$line" >> "$CONNECT_TSV"
    tail -n 1 "$CONNECT_TSV" | awk -F'\t' '{printf "[bench]   %s run %s: %s tunnels/s (%s errors), %s MiB/s, rss %s MiB\n", $1, $2, $3, $4, $5, $9}' >&2
  done
}
if [ "$SKIP_CONNECT" != 1 ]; then
  mkdir -p "$RESULTS_DIR/connect"
  printf 'target\trun\tsetups_s\tsetup_errors\tMiB_s\ttput_errors\tsetup_cpu_s\ttput_cpu_s\tpeak_rss_MiB\n' > "$CONNECT_TSV"
  if [ "$SKIP_AIRLOCK" != 1 ]; then
    log "### airlock-connect: $AIRLOCK_BIN on 127.0.0.1:$CONNECT_PORT (CONNECT -> localhost:$UP_TLS_PORT)"
    # shellcheck disable=SC2046
    $(srv_pin) "$AIRLOCK_BIN" run --config "$CONNECT_CONFIG" --workers "$WORKERS" "${airlock_args[@]}" \
      > "$RESULTS_DIR/connect/airlock-stdout.log" 2>&1 &
    connect_pid=$!
    if wait_port "$CONNECT_PORT" 10 && curl -sS --max-time 10 -o /dev/null -x "http://127.0.0.1:$CONNECT_PORT" \
         --cacert "$CERT_DIR/ca.crt" "https://localhost:$UP_TLS_PORT/small"; then
      measure_connect airlock-connect "$CONNECT_PORT" "$connect_pid"
    else
      log "airlock-connect did not start or failed verification"
      printf 'airlock-connect\t-\tFAIL\t-\t-\t-\t-\t-\t-\n' >> "$CONNECT_TSV"
    fi
    stop_pid "$connect_pid" airlock-connect; connect_pid=""
  fi
  for peer in $CONNECT_PEERS; do
    if ! "$HARNESS/servers.sh" status "$peer" | grep -q running; then
      "$HARNESS/servers.sh" start "$peer" && started_connect_peers+=("$peer")
    fi
    peer_pid=$("$HARNESS/servers.sh" status "$peer" | sed -n 's/.*pid=\([0-9][0-9]*\).*/\1/p')
    if [ -n "$peer_pid" ] && curl -sS --max-time 10 -o /dev/null -x "http://127.0.0.1:${TPORT[$peer]}" \
         --cacert "$CERT_DIR/ca.crt" "https://localhost:$UP_TLS_PORT/small"; then
      measure_connect "$peer" "${TPORT[$peer]}" "$peer_pid"
    else
      log "$peer: not running or CONNECT verification failed"
      printf '%s\t-\tFAIL\t-\t-\t-\t-\t-\t-\n' "$peer" >> "$CONNECT_TSV"
    fi
  done
  for p in "${started_connect_peers[@]}"; do "$HARNESS/servers.sh" stop "$p" || true; done
  started_connect_peers=()
fi

if [ "$SKIP_LOG" != 1 ] && [ -n "$PEERS" ]; then
  nginx_log_cmd=$(SHARED="$SHARED" bash "$REPO/bench/nginx-log.sh" "$RESULTS_DIR/nginx-log-server" "$NGINX_LOG_PORT")
  harness nginx-log 1 PORT=$NGINX_LOG_PORT MODE=reverse PATHS="$LOG_PATHS" OURS_CMD="$nginx_log_cmd" -- ours
fi

# ---- combined results: one TSV (harness columns), `ours` renamed per step ----
TSV=$RESULTS_DIR/results.tsv
printf 'target\tpath\trun\treq_s\tMiB_s\tp50_ms\tp99_ms\tsock_err\tnon2xx\tpeak_rss_MiB\tcpu_s\tup_cpu_s\twrk_cpu_s\tother_cpu_s\n' > "$TSV"
add_rows() {  # add_rows STEP [RENAME]
  local f=$RESULTS_DIR/$1/results.tsv rename=${2:-}
  if [ ! -s "$f" ] || [ "$(wc -l <"$f")" -le 1 ]; then
    printf '%s\t-\t-\tFAIL(no results)\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\n' "${rename:-$1}" >> "$TSV"; return 0
  fi
  awk -F'\t' -v OFS='\t' -v r="$rename" 'NR > 1 { if (r != "") $1 = r; print }' "$f" >> "$TSV"
}
[ -z "$PEERS" ] || [ -z "$STD_PATHS" ] || add_rows peers
[ -z "$PEERS" ] || [ -z "$BULK_PATHS" ] || add_rows peers-bulk
[ -z "$PEERS" ] || [ "$SKIP_LOG" = 1 ] || add_rows nginx-log nginx-log
if [ "$SKIP_AIRLOCK" != 1 ] && [ "$ONLY_CONNECT" != 1 ]; then
  [ -z "$GW_PATHS" ] || add_rows airlock-gw airlock-gw
  [ -z "$BULK_PATHS" ] || add_rows airlock-gw-bulk airlock-gw
  [ "$SKIP_LOG" = 1 ] || add_rows airlock-gw-log airlock-gw-log
  [ "$SCRAPE_METRICS" != 1 ] || add_rows airlock-gw-scrape airlock-gw-scrape
  [ "$ONLY_JSON" = 1 ] || [ -z "$STD_PATHS" ] || add_rows airlock-fwd airlock-fwd
  [ "$ONLY_JSON" = 1 ] || [ -z "$BULK_PATHS" ] || add_rows airlock-fwd-bulk airlock-fwd
  [ "$SKIP_JSON" = 1 ] || add_rows airlock-json airlock-json
  [ "$SKIP_REQ" = 1 ] || [ "$ONLY_JSON" = 1 ] || add_rows airlock-req airlock-req
  [ "$SKIP_TLS" = 1 ] || [ "$ONLY_JSON" = 1 ] || [ -z "${std_tls:-}" ] || add_rows airlock-tls airlock-tls
  [ "$SKIP_TLS" = 1 ] || [ "$ONLY_JSON" = 1 ] || [ -z "${bulk_tls:-}" ] || add_rows airlock-tls-bulk airlock-tls
fi
"$HARNESS/report.sh" "$TSV" > "$RESULTS_DIR/table-full.txt"

summary() {
  awk -F'\t' -v bulk="$BULK_PATHS" -v bconns="$BIG_CONNS" -v conns="${CONNS:-64}" '
    NR == 1 { next }
    { k = $1 SUBSEP $2
      if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      if ($4 !~ /^[0-9.]+$/) { if (!(k in cnt)) fail[k] = $4; next }
      cnt[k]++; rps[k] += $4; p50[k] += $6; p99[k] += $7; if ($10 > rss[k]) rss[k] = $10
      err[k] += $8 + $9
      if ($1 == "direct") { dsum[$2] += $4; dcnt[$2]++ } }
    END {
      printf "%-14s %-8s %4s %9s %8s %8s %6s %8s %7s\n", "target", "path", "runs", "req/s", "p50_ms", "p99_ms", "ratio", "rss_MiB", "errors"
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, kp, SUBSEP)
        if (!(k in cnt)) { printf "%-14s %-8s %4d %9s\n", kp[1], kp[2], 0, fail[k]; continue }
        m = rps[k] / cnt[k]
        ratio = (kp[2] in dcnt) ? sprintf("%.2f", m / (dsum[kp[2]] / dcnt[kp[2]])) : "-"
        printf "%-14s %-8s %4d %9.0f %8.2f %8.2f %6s %8.1f %7d\n", kp[1], kp[2], cnt[k], m,
          p50[k] / cnt[k], p99[k] / cnt[k], ratio, rss[k], err[k]
      }
      print "(req/s, p50, p99: mean over runs; ratio: req/s / direct req/s, same path;"
      print " rss: peak RSS of the proxy process tree; errors: socket errors + non-2xx)"
      if (bulk != "") print "(" bulk ": " bconns " connections for every target, the other paths " conns ")"
    }' "$TSV"
}
summary > "$RESULTS_DIR/table.txt"

# ---- JSON validation cost: airlock-json vs airlock-gw on the same path ----
if [ "$SKIP_AIRLOCK" != 1 ] && [ "$SKIP_JSON" != 1 ]; then
  awk -F'\t' -v p="$JSON_PATH" '
    NR > 1 && $2 == p && $4 ~ /^[0-9.]+$/ { s[$1] += $4; c[$1]++ }
    END {
      if (c["airlock-gw"] && c["airlock-json"]) {
        r = (s["airlock-json"] / c["airlock-json"]) / (s["airlock-gw"] / c["airlock-gw"])
        printf "json validation on %s: airlock-json/airlock-gw req/s = %.2f (issue 4 budget: >= 0.85)\n", p, r
      } else {
        printf "json validation on %s: FAILED (missing airlock-gw or airlock-json rows)\n", p
      }
    }' "$TSV" >> "$RESULTS_DIR/table.txt"
fi

# ---- request serializer cost: airlock-req vs airlock-gw, same path ----
if [ "$SKIP_AIRLOCK" != 1 ] && [ "$SKIP_REQ" != 1 ] && [ "$ONLY_JSON" != 1 ]; then
  awk -F'\t' -v paths="$LOG_PATHS" '
    NR > 1 && $4 ~ /^[0-9.]+$/ { s[$1 SUBSEP $2] += $4; c[$1 SUBSEP $2]++ }
    function mean(t, p) { return c[t SUBSEP p] ? s[t SUBSEP p] / c[t SUBSEP p] : 0 }
    END {
      n = split(paths, ps, " ")
      for (i = 1; i <= n; i++) {
        p = ps[i]
        if (mean("airlock-gw", p) && mean("airlock-req", p))
          printf "request serializer (headers + query parameters) on %s: airlock-req/airlock-gw req/s = %.2f\n", p, mean("airlock-req", p) / mean("airlock-gw", p)
        else printf "request serializer on %s: FAILED (missing airlock-gw or airlock-req rows)\n", p
      }
    }' "$TSV" >> "$RESULTS_DIR/table.txt"
fi

# ---- access logging cost: logs on / logs off, same path ----
if [ "$SKIP_LOG" != 1 ]; then
  awk -F'\t' -v paths="$LOG_PATHS" '
    NR > 1 && $4 ~ /^[0-9.]+$/ { s[$1 SUBSEP $2] += $4; c[$1 SUBSEP $2]++ }
    function mean(t, p) { return c[t SUBSEP p] ? s[t SUBSEP p] / c[t SUBSEP p] : 0 }
    END {
      n = split(paths, ps, " ")
      for (i = 1; i <= n; i++) {
        p = ps[i]; line = "access logs on " p ":"
        if (mean("airlock-gw", p) && mean("airlock-gw-log", p))
          line = line sprintf(" airlock-gw-log/airlock-gw req/s = %.2f (issue 12 goal: >= 0.90)", mean("airlock-gw-log", p) / mean("airlock-gw", p))
        else line = line " airlock: FAILED (missing airlock-gw or airlock-gw-log rows)"
        if (mean("nginx", p) && mean("nginx-log", p))
          line = line sprintf("; nginx-log/nginx = %.2f", mean("nginx-log", p) / mean("nginx", p))
        print line
      }
    }' "$TSV" >> "$RESULTS_DIR/table.txt"
fi

# ---- CONNECT tunnels table ----
if [ "$SKIP_CONNECT" != 1 ]; then
  awk -F'\t' -v secs="$CONNECT_SECONDS" -v conc="$CONNECT_CONC" -v mib="$CONNECT_MIB" '
    NR == 1 { next }
    { k = $1; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      if ($3 !~ /^[0-9.]+$/) { if (!(k in cnt)) fail[k] = $3; next }
      cnt[k]++; su[k] += $3; mb[k] += $5; err[k] += $4 + $6; sc[k] += $7; tc[k] += $8; if ($9 > rss[k]) rss[k] = $9 }
    END {
      printf "\nCONNECT tunnels (bench/connect-bench.py: %d clients, %s s of CONNECT/200/close; curl, %d x /1m.bin over one TLS tunnel)\n", conc, secs, mib
      printf "%-16s %4s %10s %8s %12s %11s %8s %7s\n", "target", "runs", "tunnels/s", "MiB/s", "setup_cpu_s", "tput_cpu_s", "rss_MiB", "errors"
      for (i = 1; i <= n; i++) { k = order[i]
        if (!(k in cnt)) { printf "%-16s %4d %10s\n", k, 0, fail[k]; continue }
        printf "%-16s %4d %10.0f %8.1f %12.2f %11.2f %8.1f %7d\n", k, cnt[k], su[k] / cnt[k], mb[k] / cnt[k],
          sc[k] / cnt[k], tc[k] / cnt[k], rss[k], err[k] }
    }' "$CONNECT_TSV" >> "$RESULTS_DIR/table.txt"
fi

# ---- idle keep-alive clients on a gateway-mode Airlock ----
idle_line=""
if [ "$SKIP_AIRLOCK" != 1 ] && [ "$IDLE_CLIENTS" -gt 0 ]; then
  log "### idle: $IDLE_CLIENTS keep-alive clients on Airlock (gateway, 127.0.0.1:$GW_PORT)"
  if (exec 3<>"/dev/tcp/127.0.0.1/$GW_PORT") 2>/dev/null; then
    die "port $GW_PORT is already in use"
  fi
  nofile=$((IDLE_CLIENTS * 4 + 16384))   # client + upstream sides, with room to spare
  # shellcheck disable=SC2046
  ( ulimit -n "$nofile" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
    exec $(srv_pin) "$AIRLOCK_BIN" run --config "$GW_CONFIG" --workers "$WORKERS" "${airlock_args[@]}"
  ) </dev/null >"$RESULTS_DIR/idle-airlock.log" 2>&1 &
  idle_pid=$!
  up=0
  for ((i = 0; i < 150; i++)); do   # bounded: until it listens, exits, or 15 s pass
    [ -d "/proc/$idle_pid" ] || break
    if (exec 3<>"/dev/tcp/127.0.0.1/$GW_PORT") 2>/dev/null; then up=1; break; fi
    sleep 0.1
  done
  if [ "$up" = 1 ]; then
    out=$(timeout -k 5 90 python3 "$REPO/bench/idle-rss.py" --port "$GW_PORT" --pid "$idle_pid" \
            --clients "$IDLE_CLIENTS" --timeout 60 2>"$RESULTS_DIR/idle-rss.txt") || true
    cat "$RESULTS_DIR/idle-rss.txt" >&2
    echo "$out" >> "$RESULTS_DIR/idle-rss.txt"
    if [[ $out =~ open=([0-9]+).*rss_mib=([0-9.]+)\ hwm_mib=([0-9.]+)\ baseline_rss_mib=([0-9.]+) ]]; then
      idle_line="idle $IDLE_CLIENTS keep-alive clients: RSS ${BASH_REMATCH[2]} MiB (peak ${BASH_REMATCH[3]} MiB, before connecting ${BASH_REMATCH[4]} MiB; ${BASH_REMATCH[1]}/$IDLE_CLIENTS connections still open)"
    else
      idle_line="idle $IDLE_CLIENTS keep-alive clients: FAILED (see $RESULTS_DIR/idle-rss.txt)"
    fi
  else
    log "Airlock (gateway) did not start for the idle test; log:"; tail -n 20 "$RESULTS_DIR/idle-airlock.log" >&2
    idle_line="idle $IDLE_CLIENTS keep-alive clients: FAILED (Airlock did not start)"
  fi
  stop_pid "$idle_pid" airlock-idle; idle_pid=""
  echo "$idle_line" >> "$RESULTS_DIR/table.txt"
fi

# ---- TLS interception: bench/intercept.sh (bench/proxyload.c; mitmproxy as the peer) ----
intercept_failed=0
if [ "${SKIP_INTERCEPT:-0}" != 1 ] && [ "$SKIP_AIRLOCK" != 1 ] && [ "$ONLY_JSON" != 1 ] && [ "$ONLY_CONNECT" != 1 ]; then
  if RESULTS_DIR=$RESULTS_DIR AIRLOCK_BIN=$AIRLOCK_BIN DURATION=${DURATION:-10} SHARED=$SHARED bash "$REPO/bench/intercept.sh"; then
    { echo
      echo "TLS interception (bench/intercept.sh: bench/proxyload.c, ${DURATION:-10} s per row; airlock-tls is the gateway's own TLS origination, same client)"
      column -t -s $'\t' "$RESULTS_DIR/intercept/results.tsv"
      cat "$RESULTS_DIR/intercept/summary.txt"
    } >> "$RESULTS_DIR/table.txt"
  else
    intercept_failed=1
    echo "TLS interception: FAILED (see the log above)" >> "$RESULTS_DIR/table.txt"
  fi
fi

airlock_version=skipped
[ "$SKIP_AIRLOCK" = 1 ] || airlock_version=$("$AIRLOCK_BIN" --version 2>&1 | head -n 1)
{ cat "$RESULTS_DIR/peers/env.txt" 2>/dev/null || true
  echo "airlock: $airlock_version ($AIRLOCK_BIN)  --workers $WORKERS $AIRLOCK_ARGS"
} >> "$RESULTS_DIR/env.txt"
echo
cat "$RESULTS_DIR/table.txt"
log "results: $RESULTS_DIR (table.txt, table-full.txt per run, results.tsv, peers/ airlock-gw/ airlock-gw-log/ nginx-log/ airlock-fwd/)"
if grep -q 'FAIL' "$RESULTS_DIR/results.tsv" || [[ $idle_line == *FAILED* ]] || [ "$intercept_failed" = 1 ] \
   || { [ -f "$CONNECT_TSV" ] && grep -q 'FAIL' "$CONNECT_TSV"; }; then
  log "some measurements failed (FAIL rows above)"; exit 1
fi
