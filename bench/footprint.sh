#!/usr/bin/env bash
# The process's footprint beside nginx's: binary size, startup time, RSS at start, RSS with
# 1,000 and 10,000 idle keep-alive clients (bench/footprint.py; bench/README.md "Footprint").
#   bench/footprint.sh [AIRLOCK_BINARY ...]     (as root: nginx's worker runs as nobody)
# Every start is cold for the executable (bench/footprint.py drops its page cache first).
# Knobs: CLIENTS (default "1000,10000"), STARTS (5, startup-time median), NGINX=0 (skip nginx),
# SHARED (default ../shared: the peers' harness, whose upstream and nginx configs are rendered
# here on ports of their own, 28080/28101/28501, under $FP_DIR, so a `make bench` running at
# the same time is not disturbed). Everything it starts, it stops (by PID).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$SHARED/bench
FP_DIR=${FP_DIR:-/tmp/airlock-footprint}
CLIENTS=${CLIENTS:-1000,10000}
STARTS=${STARTS:-5}
NGINX=${NGINX:-1}
UP_PORT=28080 UP_TLS_PORT=28443 NGINX_PORT=28101 AIRLOCK_PORT=28501
[ $# -gt 0 ] || set -- "$REPO/.build/release/airlock"
# Airlock keeps a descriptor for each client's upstream side: with a hard descriptor limit of H
# it holds about (H - 40) / 2 clients (airlock.fd-limit), so a larger count is lowered to that
# (in hundreds) and said, rather than measured as a failure.
hard=$(ulimit -Hn)
if [[ $hard =~ ^[0-9]+$ ]]; then
  fit=$(( (hard - 40) / 2 / 100 * 100 ))
  counts=()
  for n in ${CLIENTS//,/ }; do
    if [ "$n" -gt "$fit" ]; then echo "[footprint] $n idle clients need more than the hard descriptor limit $hard: measuring $fit" >&2; n=$fit; fi
    counts+=("$n")
  done
  CLIENTS=$(IFS=,; echo "${counts[*]}")
fi

log() { echo "[footprint] $*" >&2; }
die() { echo "[footprint] ERROR: $*" >&2; exit 1; }
[ -d "$HARNESS/conf" ] || die "the peers' harness is not at $HARNESS (set SHARED)"
command -v nginx >/dev/null || die "nginx not found: run 'bash $HARNESS/setup.sh'"

render() {  # render TEMPLATE OUT KEY=VAL... (the harness's @KEY@ placeholders)
  local tpl=$1 out=$2 kv; shift 2
  local args=()
  for kv in "$@"; do args+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  sed "${args[@]}" "$tpl" > "$out"
  ! grep -q '@[A-Z_]*@' "$out" || die "unrendered placeholder in $out"
}

mkdir -p "$FP_DIR"/{upstream,nginx}/{logs,tmp} "$FP_DIR/upstream/html"
rm -f "$FP_DIR/airlock.log"
BENCH_WORK=$FP_DIR bash "$HARNESS/gen-certs.sh" >/dev/null 2>&1
printf '%-99s\n' 'small response body for the proxy benchmark harness (100 bytes)' > "$FP_DIR/upstream/html/small"
chmod 755 "$FP_DIR" "$FP_DIR"/upstream "$FP_DIR/upstream/html"; chmod 644 "$FP_DIR/upstream/html/small"
chown -R nobody:nogroup "$FP_DIR"/upstream/tmp "$FP_DIR"/nginx/tmp
render "$HARNESS/conf/upstream-nginx.conf.in" "$FP_DIR/upstream/nginx.conf" DIR="$FP_DIR/upstream" \
  CERTS="$FP_DIR/certs" UP_PORT=$UP_PORT UP_TLS_PORT=$UP_TLS_PORT WORKERS=1
# The peers' proxy config; worker_connections raised from 4096 so that 10,000 clients fit.
render "$HARNESS/conf/nginx-proxy.conf.in" "$FP_DIR/nginx/nginx.conf" DIR="$FP_DIR/nginx" \
  CERTS="$FP_DIR/certs" PORT=$NGINX_PORT UP_PORT=$UP_PORT WORKERS=1
sed -i -e 's/worker_connections 4096;/worker_connections 24576;/' \
       -e 's/worker_rlimit_nofile 16384;/worker_rlimit_nofile 65536;/' "$FP_DIR/nginx/nginx.conf"
cat > "$FP_DIR/airlock.yaml" <<EOF
# bench/footprint.sh: Airlock as a gateway in front of the footprint upstream.
listen: 127.0.0.1:$AIRLOCK_PORT
admin: 127.0.0.1:0
workers: 1
limits:
  max_connections: 20000
routes:
  - name: bench
    match: { host: "*" }
    upstream: http://127.0.0.1:$UP_PORT
EOF

up_pid=""
cleanup() {
  if [ -n "$up_pid" ] && [ -d "/proc/$up_pid" ]; then
    kill -TERM "$up_pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do [ -d "/proc/$up_pid" ] || break; sleep 0.1; done
    kill -KILL "$up_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
(exec 3<>"/dev/tcp/127.0.0.1/$UP_PORT") 2>/dev/null && die "port $UP_PORT is already in use"
nginx -p "$FP_DIR/upstream/" -e "$FP_DIR/upstream/logs/error.log" -c "$FP_DIR/upstream/nginx.conf" \
  </dev/null >"$FP_DIR/upstream/stdout.log" 2>&1 &
up_pid=$!
for ((i = 0; i < 100; i++)); do (exec 3<>"/dev/tcp/127.0.0.1/$UP_PORT") 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "http://127.0.0.1:$UP_PORT/small" || die "the footprint upstream does not answer"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, idle clients: $CLIENTS"
for bin in "$@"; do
  [ -x "$bin" ] || die "no binary at $bin"
  echo "# $bin: $(stat -c %s "$bin") bytes ($(awk -v b="$(stat -c %s "$bin")" 'BEGIN { printf "%.1f MiB", b / 1048576 }'))"
  timeout -k 10 600 python3 "$REPO/bench/footprint.py" --name "$(basename "$(dirname "$bin")")/$(basename "$bin")" \
    --port $AIRLOCK_PORT --clients "$CLIENTS" --starts "$STARTS" --host "127.0.0.1:$UP_PORT" --log "$FP_DIR/airlock.log" \
    -- "$bin" run --config "$FP_DIR/airlock.yaml" --log-level warning || true
done
if [ "$NGINX" = 1 ]; then
  echo "# nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') master + worker (the peers' nginx-proxy.conf.in): $(stat -c %s "$(command -v nginx)") bytes"
  timeout -k 10 600 python3 "$REPO/bench/footprint.py" --name nginx --port $NGINX_PORT --clients "$CLIENTS" \
    --starts "$STARTS" --host "127.0.0.1:$UP_PORT" \
    -- nginx -p "$FP_DIR/nginx/" -e "$FP_DIR/nginx/logs/error.log" -c "$FP_DIR/nginx/nginx.conf" || true
fi
