#!/usr/bin/env bash
# bench/nginx-log.sh DIR PORT: render bench/nginx-log.conf.in into DIR (the harness's nginx
# peer with a buffered JSON access log, DIR/access.log) and print the foreground command
# that runs it, for the harness's OURS_CMD (bench/run.sh, row nginx-log) or bench/ab.sh.
# Needs the shared harness (SHARED, default ../shared) for its upstream port and render().
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
# shellcheck source=/dev/null
source "$SHARED/bench/lib.sh"   # render UP_PORT WORKERS
[ $# -eq 2 ] || die "usage: $0 DIR PORT"
dir=$(mkdir -p "$1" && cd "$1" && pwd); port=$2
mkdir -p "$dir/logs" "$dir/tmp"
render "$REPO/bench/nginx-log.conf.in" "$dir/nginx.conf" DIR="$dir" PORT="$port" UP_PORT="$UP_PORT" \
  WORKERS="$WORKERS" ACCESS_LOG="$dir/access.log"
chown -R nobody:nogroup "$dir/tmp"
nginx -t -q -p "$dir/" -e "$dir/logs/error.log" -c "$dir/nginx.conf" || die "nginx -t failed for $dir/nginx.conf"
printf 'nginx -p %q -e %q -c %q\n' "$dir/" "$dir/logs/error.log" "$dir/nginx.conf"
