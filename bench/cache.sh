#!/usr/bin/env bash
# bench/cache.sh: the response cache's bench rows (issue #21), interleaved like bench/ab.sh.
#
#   bench/cache.sh [BINARY]          (as root, like make bench; BINARY: .build/release/airlock)
#
# Hits: nginx with proxy_cache (bench/nginx-cache.conf.in: keys_zone in shared memory, bodies on
# tmpfs, proxy_cache_valid 200 10m, proxy_cache_lock on) beside Airlock with
# `cache: { heuristic: 10% }` (bench/gateway-cache.yaml), each on /small (100 B) and /1m.bin
# (1 MiB) of the shared harness's upstream. Every measured request is a hit: one warm-up request
# stores each document, and a second must say `X-Cache-Status: HIT` / `Cache-Status: Airlock; hit`
# or the script stops before measuring; at the end the Airlock's own counters (its admin
# /metrics) show how many requests were hits and misses.
# Miss path: the same cached route against bench/gateway.yaml (no cache), both driven by
# bench/unique-url.lua (every request a new URL, /small?r=..&t=..&n=..), so each request with the
# cache is a lookup, a miss, an upstream request, a store and, once `memory` (100 MiB) is
# passed, a purge; the row is the ratio miss-with-cache / no-cache (issue #21's budget: >= 0.95).
# The same for nginx, for scale: its proxy_cache instance driven with unique URLs (each a miss
# written to a file on tmpfs) against the same nginx configuration with `proxy_cache off`.
#
# The upstream sends Last-Modified and no Cache-Control, so Airlock's freshness is heuristic (10 %
# of Date - Last-Modified): documents the harness has just written would be fresh for ~0 s, so
# the script sets their mtime two days back when they are younger than a day (only the mtime;
# the harness rewrites /small at each upstream start) and waits for the upstream (whose
# open_file_cache keeps a file's facts up to 60 s) to send the older Last-Modified.
#
# Pinning as make bench: wrk on CPU 0, upstream, nginx and the Airlocks on CPU 1; one worker
# each; Airlock's access records off (--log-level warning) as the peers' access_log off.
# Each round runs every target once (DUR s of wrk -t2 -cCONNS), in reverse order every other
# round; the summary is each target's median (and mean) over the rounds, its server's CPU time
# (user + system of its process tree, as the harness's cpu_s) per request, wrk's p99 latency
# (the miss rows' purges show there), then the ratios: of
# the medians, and the median of each round's ratio (the two runs of a pair minutes closer).
# Env: ROUNDS (8)  DUR (2)  CONNS (64)  SHARED (../shared)  AIRLOCK_ARGS ("--log-level warning")
#      RESULTS_DIR (bench/results/cache-<timestamp>: every wrk output, the servers' logs)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port srv_pin wrk_pin render UP_PORT WORKERS TMP_PREFIX
# shellcheck source=bench/common.sh
source "$REPO/bench/common.sh"   # ensure_running stop_started

BIN=$(readlink -f "${1:-$REPO/.build/release/airlock}")
[ -x "$BIN" ] || die "no binary at $BIN (make release)"
[ "$(id -u)" -eq 0 ] || die "run as root (the shared harness needs it)"
for tool in wrk curl nginx; do command -v "$tool" >/dev/null || die "$tool not found (bash $HARNESS/setup.sh)"; done
ROUNDS=${ROUNDS:-8}; DUR=${DUR:-2}; CONNS=${CONNS:-64}
AIRLOCK_ARGS=${AIRLOCK_ARGS---log-level warning}
read -ra airlock_args <<<"$AIRLOCK_ARGS"
PORT_NGINX=18631; PORT_HIT=18632; PORT_MISS=18633; PORT_PLAIN=18634; PORT_NGINX_PLAIN=18635; ADMIN_HIT=18638; ADMIN_MISS=18639
SMALL=/small; LARGE=/1m.bin
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results/cache-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RESULTS_DIR"
NGINX_DIR=/tmp/airlock-cache-bench-nginx
NGINX_CACHE=/dev/shm/airlock-cache-bench-nginx   # tmpfs: nginx's cached bodies in memory

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  stop_started
  rm -rf "$NGINX_CACHE"
}
trap cleanup EXIT

ensure_running upstream

# The documents' Last-Modified at least a day before now (see above), waited for (bounded).
html="$TMP_PREFIX-upstream/html"
now=$(date +%s)
for doc in "$SMALL" "$LARGE"; do
  if [ $((now - $(stat -c %Y "$html$doc"))) -lt 86400 ]; then
    touch -d "@$((now - 2 * 86400))" "$html$doc"
    log "set the mtime of $html$doc two days back (heuristic freshness is 10 % of its age)"
  fi
done
for doc in "$SMALL" "$LARGE"; do
  for ((i = 0; ; i++)); do
    lm=$(curl -sfI "http://127.0.0.1:$UP_PORT$doc" | tr -d '\r' | sed -n 's/^[Ll]ast-[Mm]odified: //p')
    [ -n "$lm" ] && [ $((now - $(date -d "$lm" +%s))) -ge 86400 ] && break
    [ "$i" -lt 75 ] || die "the upstream still sends Last-Modified: ${lm:-none} for $doc"
    sleep 1
  done
done

# nginx with proxy_cache, and the same nginx without it.
declare -A server=()
start_nginx() {  # start_nginx NAME DIR PORT CACHE_ZONE
  mkdir -p "$2/logs" "$2/tmp"
  render "$REPO/bench/nginx-cache.conf.in" "$2/nginx.conf" DIR="$2" PORT="$3" \
    UP_PORT="$UP_PORT" WORKERS="$WORKERS" CACHE_DIR="$NGINX_CACHE" CACHE_ZONE="$4"
  chown -R nobody:nogroup "$2/tmp"
  nginx -t -q -p "$2/" -e "$2/logs/error.log" -c "$2/nginx.conf" || die "nginx -t failed for $2/nginx.conf"
  # shellcheck disable=SC2046  # $(srv_pin) is "taskset -c N" or nothing: split on purpose
  $(srv_pin) nginx -p "$2/" -e "$2/logs/error.log" -c "$2/nginx.conf" </dev/null >"$RESULTS_DIR/$1.log" 2>&1 &
  pids+=($!)
  server[$1]=$!
  wait_port "$3" || die "$1 did not start (see $2/logs/error.log)"
}
rm -rf "$NGINX_CACHE" && mkdir -p "$NGINX_CACHE"
chown nobody:nogroup "$NGINX_CACHE"
start_nginx nginx-cache "$NGINX_DIR" "$PORT_NGINX" bench
start_nginx nginx-plain "$NGINX_DIR-plain" "$PORT_NGINX_PLAIN" off

# The Airlocks: hits and misses with the cache (admin listeners for their counters), and none.
start_airlock() {  # start_airlock NAME CONFIG PORT ADMIN
  # shellcheck disable=SC2046
  AIRLOCK_ADMIN=$4 $(srv_pin) "$BIN" run --config "$2" --listen "127.0.0.1:$3" --workers 1 "${airlock_args[@]}" \
    </dev/null >"$RESULTS_DIR/$1.log" 2>&1 &
  pids+=($!)
  server[$1]=$!
  wait_port "$3" || die "$1 did not start (see $RESULTS_DIR/$1.log)"
}
start_airlock airlock-hit "$REPO/bench/gateway-cache.yaml" "$PORT_HIT" "127.0.0.1:$ADMIN_HIT"
start_airlock airlock-miss "$REPO/bench/gateway-cache.yaml" "$PORT_MISS" "127.0.0.1:$ADMIN_MISS"
start_airlock airlock-nocache "$REPO/bench/gateway.yaml" "$PORT_PLAIN" off
wait_port "$ADMIN_HIT" && wait_port "$ADMIN_MISS" || die "an admin listener did not start"

# Before measuring: a warm-up request stores each document; the next must be a hit, whole.
expect_field() {  # expect_field PORT PATH FIELD VALUE-PREFIX SIZE
  local head size
  head=$(curl -sf -D - -o /dev/null -w 'size=%{size_download}\n' "http://127.0.0.1:$1$2") || die "GET :$1$2 failed"
  size=$(sed -n 's/^size=//p' <<<"$head")
  grep -qi "^$3: $4" <<<"$(tr -d '\r' <<<"$head")" || die "GET :$1$2: expected '$3: $4...', got: $(grep -i "^$3:" <<<"$head" | tr -d '\r' || echo "no $3")"
  [ "$size" = "$5" ] || die "GET :$1$2: $size bytes, expected $5"
  log "GET :$1$2: $(grep -i "^$3:" <<<"$head" | tr -d '\r'), $size bytes"
}
for doc in "$SMALL:100" "$LARGE:1048576"; do
  path=${doc%%:*}; size=${doc#*:}
  curl -sf -o /dev/null "http://127.0.0.1:$PORT_NGINX$path" || die "warm-up of nginx-cache $path failed"
  curl -sf -o /dev/null "http://127.0.0.1:$PORT_HIT$path" || die "warm-up of airlock-hit $path failed"
  expect_field "$PORT_NGINX" "$path" X-Cache-Status HIT "$size"
  expect_field "$PORT_HIT" "$path" Cache-Status "Airlock; hit" "$size"
done
expect_field "$PORT_MISS" "$SMALL?check=1" Cache-Status "Airlock; fwd=uri-miss; fwd-status=200" 100
expect_field "$PORT_NGINX" "$SMALL?check=1" X-Cache-Status MISS 100

# Targets: name port path [lua]
names=(nginx-hit-100B airlock-hit-100B nginx-hit-1MiB airlock-hit-1MiB airlock-miss airlock-nocache nginx-miss nginx-nocache)
declare -A port=([nginx-hit-100B]=$PORT_NGINX [airlock-hit-100B]=$PORT_HIT [nginx-hit-1MiB]=$PORT_NGINX
                 [airlock-hit-1MiB]=$PORT_HIT [airlock-miss]=$PORT_MISS [airlock-nocache]=$PORT_PLAIN
                 [nginx-miss]=$PORT_NGINX [nginx-nocache]=$PORT_NGINX_PLAIN)
declare -A path=([nginx-hit-100B]=$SMALL [airlock-hit-100B]=$SMALL [nginx-hit-1MiB]=$LARGE
                 [airlock-hit-1MiB]=$LARGE [airlock-miss]=$SMALL [airlock-nocache]=$SMALL
                 [nginx-miss]=$SMALL [nginx-nocache]=$SMALL)
declare -A lua=([airlock-miss]=1 [airlock-nocache]=1 [nginx-miss]=1 [nginx-nocache]=1)
declare -A proc=([nginx-hit-100B]=nginx-cache [airlock-hit-100B]=airlock-hit [nginx-hit-1MiB]=nginx-cache
                 [airlock-hit-1MiB]=airlock-hit [airlock-miss]=airlock-miss [airlock-nocache]=airlock-nocache
                 [nginx-miss]=nginx-cache [nginx-nocache]=nginx-plain)
declare -A results=()
declare -A cpu=()   # per target: the server's CPU time per request (µs) of each measured run
declare -A p99=()   # per target: wrk's 99th percentile latency (ms) of each measured run
run_wrk() {  # run_wrk NAME SECONDS TAG -> req/s (integer), 0 on failure; raw output in RESULTS_DIR
  local n=$1 out="$RESULTS_DIR/$1.$3.txt" script=() t0 t1 done_requests
  t0=$(cpu_ticks "${server[${proc[$n]}]}")
  [ -n "${lua[$n]:-}" ] && script=(-s "$REPO/bench/unique-url.lua")
  # shellcheck disable=SC2046  # $(wrk_pin) is "taskset -c N" or nothing: split on purpose
  timeout $(($2 + 10)) $(wrk_pin) wrk -t2 -c"$CONNS" -d"$2"s --latency "${script[@]}" "http://127.0.0.1:${port[$n]}${path[$n]}" \
    ${script[0]:+-- "$n-$3-$$"} >"$out" 2>&1 || true
  t1=$(cpu_ticks "${server[${proc[$n]}]}")
  done_requests=$(awk '/requests in/ {print $1}' "$out")
  # user+system time of the server's process tree (clock ticks), as the harness's cpu_s column
  echo "$t0 $t1 ${done_requests:-0} $(getconf CLK_TCK)" | awk '{printf "%.2f\n", ($3 > 0 ? ($2 - $1) * 1e6 / $4 / $3 : 0)}' >"$out.cpu"
  # wrk's 99th percentile latency, in ms (it prints us, ms or s)
  awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
                     printf "%.2f\n", v * (u == "us" ? 0.001 : u == "s" ? 1000 : 1) }' "$out" >"$out.p99"
  awk '/Requests\/sec/ {printf "%d", $2; found=1} END {if (!found) printf "0"}' "$out"
}
for n in "${names[@]}"; do run_wrk "$n" 1 warmup >/dev/null; done
for r in $(seq "$ROUNDS"); do
  order=("${names[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=(); for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[$i]}"); done; fi
  line="round $r:"
  for n in "${order[@]}"; do
    v=$(run_wrk "$n" "$DUR" "r$r")
    results[$n]="${results[$n]:-} $v"
    cpu[$n]="${cpu[$n]:-} $(cat "$RESULTS_DIR/$n.r$r.txt.cpu")"
    p99[$n]="${p99[$n]:-} $(cat "$RESULTS_DIR/$n.r$r.txt.p99")"
    line="$line $n=$v"
  done
  echo "$line"
done

errors=$(grep -l -e 'Non-2xx' -e 'Socket errors' "$RESULTS_DIR"/*.r*.txt 2>/dev/null || true)
[ -z "$errors" ] || log "WARNING: errors or non-2xx answers in: $errors"

echo "airlock = $BIN $AIRLOCK_ARGS; wrk -t2 -c$CONNS, $ROUNDS rounds of ${DUR}s; $(date -u +%Y-%m-%dT%H:%MZ)"
declare -A median=()
for n in "${names[@]}"; do
  median[$n]=$(tr ' ' '\n' <<<"${results[$n]}" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  tr ' ' '\n' <<<"${results[$n]}" | grep . | sort -n \
    | awk -v n="$n" -v d="$DUR" '{v[NR]=$1; s+=$1} END {printf "%-17s median %7d  mean %7d  min %7d  max %7d  (%d runs of %ss, req/s)\n", n, v[int((NR+1)/2)], s/NR, v[1], v[NR], NR, d}'
done
for n in "${names[@]}"; do
  tr ' ' '\n' <<<"${cpu[$n]}" | grep . | sort -n \
    | awk -v n="$n" '{v[NR]=$1} END {printf "%-17s server CPU per request: median %8.2f us  (min %.2f, max %.2f)\n", n, v[int((NR+1)/2)], v[1], v[NR]}'
done
for n in "${names[@]}"; do
  tr ' ' '\n' <<<"${p99[$n]}" | grep . | sort -g \
    | awk -v n="$n" '{v[NR]=$1} END {printf "%-17s p99 latency: median %7.2f ms  (min %.2f, max %.2f)\n", n, v[int((NR+1)/2)], v[1], v[NR]}'
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else printf "n/a"}'; }
paired() {  # paired A B: the median over the rounds of A's run / B's run in the same round
  awk -v a="${results[$1]}" -v b="${results[$2]}" 'BEGIN {
    n = split(a, x, " "); split(b, y, " ")
    for (i = 1; i <= n; i++) r[i] = y[i] > 0 ? x[i] / y[i] : 0
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
    printf "%.2f (rounds: %.2f...%.2f)", (n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2), r[1], r[n] }'
}
cpu_median() { tr ' ' '\n' <<<"${cpu[$1]}" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
row() {  # row LABEL A B GOAL
  echo "$1 = $(ratio "${median[$2]}" "${median[$3]}") of the medians, $(paired "$2" "$3") paired by round  (goal $4);" \
       "server CPU per request: $(ratio "$(cpu_median "$2")" "$(cpu_median "$3")") of it"
}
row "hit 100 B:  airlock / nginx proxy_cache" airlock-hit-100B nginx-hit-100B ">= 1.20"
row "hit 1 MiB:  airlock / nginx proxy_cache" airlock-hit-1MiB nginx-hit-1MiB ">= 1.20"
row "miss 100 B: airlock with cache / without" airlock-miss airlock-nocache ">= 0.95"
row "miss 100 B: nginx with proxy_cache / without (for scale)" nginx-miss nginx-nocache "none"
row "miss 100 B: airlock with cache / nginx with proxy_cache" airlock-miss nginx-miss "none"

# The Airlocks' own counters: every measured hit-row request a hit; every miss-row request stored.
counters() {  # counters ADMIN_PORT -> "hits=.. misses=.. ..."
  curl -sf "http://127.0.0.1:$1/metrics" | awk '
    /^airlock_cache_[a-z_]+_total\{route="bench"\}/ {name=$1; sub(/^airlock_cache_/, "", name); sub(/_total.*/, "", name); printf "%s=%s ", name, $2}'
}
echo "airlock-hit counters:  $(counters "$ADMIN_HIT")(misses: the 2 warm-ups)"
echo "airlock-miss counters: $(counters "$ADMIN_MISS")"
echo "raw wrk outputs and logs: $RESULTS_DIR"
