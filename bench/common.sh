# bench/common.sh: what the bench scripts here share; sourced after the harness's lib.sh
# (which sets HARNESS's servers.sh up and defines die).

# The harness's servers this script started (ensure_running), stopped again by stop_started.
started=()

# ensure_running NAME...: starts each of the harness's servers (upstream, nginx, haproxy,
# haproxy-tls, ...) that is not running yet, and remembers it in `started`.
ensure_running() {
  local s
  for s in "$@"; do
    if ! "$HARNESS/servers.sh" status "$s" | grep -q running; then
      "$HARNESS/servers.sh" start "$s" >/dev/null
      started+=("$s")
    fi
  done
}

# stop_started: stops what ensure_running started (for the script's EXIT trap).
stop_started() {
  [ ${#started[@]} -eq 0 ] || "$HARNESS/servers.sh" stop "${started[@]}" >/dev/null 2>&1 || true
}

# med: the median of the numbers on stdin, one per line (the mean of the middle two for an
# even count).
med() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
