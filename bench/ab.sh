#!/usr/bin/env bash
# bench/ab.sh: interleaved A/B of two Airlock binaries, side by side with the peers.
#
#   bench/ab.sh BINARY_A BINARY_B          (as root, like make bench)
#
# On this shared 2-core machine one sequential run cannot tell 5 % apart (a target
# moves 15-40 % between runs), so this alternates short wrk runs over every target
# for ROUNDS rounds and prints each target's median and mean: compare medians of A and
# B, with haproxy and nginx as the yardstick of the same minutes.
#
# Uses the shared harness's upstream nginx and its nginx/haproxy peers (started here if
# they are not running, and then stopped again), the same pinning as make bench (wrk on
# CPU 0, upstream and proxies on CPU 1), one worker each, access logs off unless asked.
# Env: ROUNDS (10)  DUR (2 s per run)  CONNS (64)  BENCH_PATH (/small)
#      CONFIG (bench/gateway.yaml; its listen port is overridden)  SHARED (../shared)
#      ARGS_A, ARGS_B: Airlock's extra arguments per side (default "--log-level warning";
#        "" runs at the default level, access records on; stdout goes to a file either way),
#        e.g. `ARGS_B= bench/ab.sh X X` compares one binary with logs off and on
#      NGINX_LOG=1: one more target, nginx-log (bench/nginx-log.sh: nginx with a buffered
#        JSON access log, access_log ... buffer=64k)
#      TLS=1: TLS to the upstream's https port, as make bench's airlock-tls row: both binaries
#        get a gateway configuration to https://localhost:18443 verified against the harness's
#        CA (unless CONFIG is given), and the one peer is haproxy-tls (its same configuration);
#        e.g. `TLS=1 BENCH_PATH=/1m.bin bench/ab.sh A B`
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port srv_pin wrk_pin
# shellcheck source=bench/common.sh
source "$REPO/bench/common.sh"   # ensure_running stop_started

[ $# -eq 2 ] || die "usage: $0 BINARY_A BINARY_B"
A=$(readlink -f "$1"); B=$(readlink -f "$2")
if [ ! -x "$A" ] || [ ! -x "$B" ]; then die "both binaries must exist and be executable"; fi
[ "$(id -u)" -eq 0 ] || die "run as root (the shared harness needs it)"
ROUNDS=${ROUNDS:-10}; DUR=${DUR:-2}; CONNS=${CONNS:-64}; BENCH_PATH=${BENCH_PATH:-/small}
config_given=${CONFIG:-}
CONFIG=${CONFIG:-$REPO/bench/gateway.yaml}
PORT_A=18611; PORT_B=18612; PORT_NGINX_LOG=18613
ARGS_A=${ARGS_A---log-level warning}; ARGS_B=${ARGS_B---log-level warning}
NGINX_LOG=${NGINX_LOG:-0}
TLS=${TLS:-0}
peers=(haproxy nginx)
if [ "$TLS" = 1 ]; then
  peers=(haproxy-tls)
  if [ -z "$config_given" ]; then
    CONFIG=/tmp/airlock-ab-tls.yaml
    printf '%s\n' "listen: 127.0.0.1:$PORT_A" "workers: 1" "routes:" "  - name: bench-tls" \
      "    match: { host: \"*\" }" "    upstream: https://localhost:18443" \
      "    security: { ca: \"$CERT_DIR/ca.crt\" }" > "$CONFIG"
  fi
fi

ensure_running upstream "${peers[@]}"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  stop_started
}
trap cleanup EXIT

for side in A B; do
  bin=$A; port=$PORT_A; args=$ARGS_A
  [ $side = B ] && { bin=$B; port=$PORT_B; args=$ARGS_B; }
  read -ra extra <<<"$args"
  # shellcheck disable=SC2046
  $(srv_pin) "$bin" run --config "$CONFIG" --listen "127.0.0.1:$port" --workers 1 "${extra[@]}" \
    >"/tmp/airlock-ab-$side.log" 2>&1 &
  pids+=($!)
  wait_port "$port" || die "airlock $side did not start (see /tmp/airlock-ab-$side.log)"
done

names=("${peers[@]}" A B)
declare -A port=([haproxy]=18201 [nginx]=18101 [haproxy-tls]=18202 [A]=$PORT_A [B]=$PORT_B) results=()
if [ "$NGINX_LOG" = 1 ]; then
  read -ra nginx_log_cmd <<<"$(bash "$REPO/bench/nginx-log.sh" /tmp/airlock-ab-nginx-log "$PORT_NGINX_LOG")"
  # shellcheck disable=SC2046
  $(srv_pin) "${nginx_log_cmd[@]}" </dev/null >/tmp/airlock-ab-nginx-log/stdout.log 2>&1 &
  pids+=($!)
  wait_port "$PORT_NGINX_LOG" || die "nginx-log did not start (see /tmp/airlock-ab-nginx-log/logs/error.log)"
  names+=(nginx-log); port[nginx-log]=$PORT_NGINX_LOG
fi
run_wrk() {  # run_wrk PORT SECONDS -> req/s (integer), 0 on failure
  # shellcheck disable=SC2046  # $(wrk_pin) is "taskset -c N" or nothing: split on purpose
  timeout $(($2 + 10)) $(wrk_pin) wrk -t2 -c"$CONNS" -d"$2"s "http://127.0.0.1:$1$BENCH_PATH" 2>/dev/null \
    | awk '/Requests\/sec/ {printf "%d", $2; found=1} END {if (!found) printf "0"}'
}
for n in "${names[@]}"; do run_wrk "${port[$n]}" 1 >/dev/null; done   # warm-up
for r in $(seq "$ROUNDS"); do
  line="round $r:"
  for n in "${names[@]}"; do
    v=$(run_wrk "${port[$n]}" "$DUR")
    results[$n]="${results[$n]:-} $v"
    line="$line $n=$v"
  done
  echo "$line"
done
echo "A = $A $ARGS_A"
echo "B = $B $ARGS_B"
for n in "${names[@]}"; do
  tr ' ' '\n' <<<"${results[$n]}" | grep . | sort -n \
    | awk -v n="$n" '{v[NR]=$1; s+=$1} END {printf "%-11s median %7d  mean %7d  (%d runs of %ss, req/s)\n", n, v[int((NR+1)/2)], s/NR, NR, "'"$DUR"'"}'
done
