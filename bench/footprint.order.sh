#!/usr/bin/env bash
# bench/footprint.order.sh: writes bench/footprint.order, the functions a gateway runs from
# exec to serving requests, which `make release` hands to lld (--symbol-ordering-file) so that
# they sit together at the front of .text.
#
#   bench/footprint.order.sh [BINARY]     (as root, like make bench; BINARY: the release build)
#
# Why: the kernel maps a file-backed page fault 64 KiB at a time (fault-around), so a process's
# code RSS is every 64 KiB window it touches, not the code it runs. Linked in the toolchain's
# order, the ~2,500 functions (~0.8 MiB) that start Airlock and serve its first requests are
# spread over ~7 MiB of .text; packed together they are not (bench/README.md, "Footprint").
# Functions missing from the file (new code) are linked after the listed ones, as before; the
# file only needs regenerating when the start or the request path changes a lot.
#
# How: BINARY (without its debug info: valgrind 3.19 cannot read DWARF 5) runs under callgrind
# as a gateway (admin listener on) in front of the shared harness's upstream; it starts, serves
# /small, /1k.json and /1m.bin and one GET /metrics, is stopped (SIGTERM: the drain runs too), and
# every function callgrind saw that is in BINARY's own .text goes into the file, in the order
# callgrind first names it. Env: SHARED (../shared)  OUT (bench/footprint.order)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
HARNESS=$(cd "$SHARED/bench" && pwd)
# shellcheck source=/dev/null
source "$HARNESS/lib.sh"   # log die wait_port UP_PORT
# shellcheck source=bench/common.sh
source "$REPO/bench/common.sh"   # ensure_running stop_started
BIN=$(readlink -f "${1:-$REPO/.build/release/airlock}")
OUT=${OUT:-$REPO/bench/footprint.order}
PORT=18676 ADMIN_PORT=18677
for tool in valgrind nm strip curl python3; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install valgrind binutils curl python3)"
done
[ -x "$BIN" ] || die "no binary at $BIN (make release)"

work=$(mktemp -d /tmp/airlock-order.XXXXXX)
vg=""
cleanup() {
  if [ -n "$vg" ] && [ -d "/proc/$vg" ]; then kill "$vg" 2>/dev/null || true; wait "$vg" 2>/dev/null || true; fi
  stop_started
  rm -rf "$work"
}
trap cleanup EXIT
ensure_running upstream

strip --strip-debug -o "$work/airlock" "$BIN"
cat > "$work/airlock.yaml" <<EOF
listen: 127.0.0.1:$PORT
admin: 127.0.0.1:$ADMIN_PORT
workers: 1
routes:
  - name: order
    match: { host: "*" }
    upstream: http://127.0.0.1:$UP_PORT
EOF
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
  "$work/airlock" run --config "$work/airlock.yaml" --log-level warning > "$work/valgrind.log" 2>&1 &
vg=$!
wait_port "$PORT" 120 || die "the gateway did not listen under callgrind (see $work/valgrind.log)"
for ((i = 0; i < 20; i++)); do curl -fsS --max-time 30 -o /dev/null "http://127.0.0.1:$PORT/small"; done
for ((i = 0; i < 3; i++)); do
  curl -fsS --max-time 30 -o /dev/null "http://127.0.0.1:$PORT/1k.json"
  curl -fsS --max-time 60 -o /dev/null "http://127.0.0.1:$PORT/1m.bin"
done
curl -fsS --max-time 30 -o /dev/null "http://127.0.0.1:$ADMIN_PORT/metrics"
kill -TERM "$vg"
for ((i = 0; i < 600; i++)); do [ -d "/proc/$vg" ] || break; sleep 0.1; done
wait "$vg" 2>/dev/null || true
vg=""
[ -s "$work/callgrind.out" ] || die "callgrind wrote no profile (see $work/valgrind.log)"

nm --defined-only "$work/airlock" > "$work/nm.txt"
python3 - "$work/callgrind.out" "$work/nm.txt" "$OUT" "$(basename "$BIN")" <<'EOF'
import re, sys
profile, symbols, out, name = sys.argv[1:]
text = set()
for line in open(symbols):
    parts = line.rstrip("\n").split(" ", 2)
    if len(parts) == 3 and parts[1] in "tTW":
        text.add(parts[2])
names, seen, compressed = [], set(), {}
for line in open(profile, errors="replace"):
    m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
    if not m:
        continue
    if m.group(2):
        compressed[m.group(1)] = m.group(2)
    fn = compressed.get(m.group(1))
    if fn in text and fn not in seen:
        seen.add(fn)
        names.append(fn)
with open(out, "w") as f:
    f.write("# Written by bench/footprint.order.sh from %s: %d functions run from exec to serving\n" % (name, len(names)))
    f.write("# requests; `make release` links them first in .text (lld --symbol-ordering-file).\n")
    f.write("".join(n + "\n" for n in names))
print("[footprint.order] %d functions -> %s" % (len(names), out))
EOF
