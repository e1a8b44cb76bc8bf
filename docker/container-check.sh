#!/usr/bin/env bash
# make container-check: the container image of docker/Dockerfile, checked without a container
# engine or network bridges (root, opt-in, not part of `make test`).
#
#   1. build stage: docker/check-build-context.py --config release builds the binary from exactly
#      what docker/Dockerfile.dockerignore admits, with the Dockerfile's RUN lines
#      (or BINARY=path skips that and uses a binary already built that way);
#   2. runtime stage: `debootstrap --variant=minbase SUITE` (SUITE from its FROM line) stands in for
#      the base image; then its instructions in order: RUN in a chroot (/bin/sh -c, as the
#      Dockerfile's USER once set), COPY --from=build, USER, EXPOSE, HEALTHCHECK, ENTRYPOINT, CMD;
#   3. checks in the chroot as the image's USER: the binary is stripped, `ldd` finds every
#      library, `airlock --version`, mimalloc is the malloc in effect (airlock.listening), the image's ENTRYPOINT+CMD with a config at the CMD's path
#      (explicit routes; listen 127.0.0.1:0 instead of 0.0.0.0 here, admin on 127.0.0.1:0) serves
#      one proxied request from curl on the host to an origin on the host's loopback (a chroot
#      shares the host's network), the HEALTHCHECK command passes, SIGTERM drains an in-flight
#      request and exits 0 (and the HEALTHCHECK then fails), and the CMD without --config (the
#      embedded default) on 0.0.0.0 is refused naming allow_open_proxy.
# /proc and /dev are mounted into the chroot for the run and unmounted on exit; the scratch
# directory is removed (never across a mount). Downloaded .debs are kept in DEBS_CACHE.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBS_CACHE=${DEBS_CACHE:-$PWD/.build/container-check/debs}
BINARY=${BINARY:-}
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "container-check: $*"; }
die() { echo "container-check: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mount). Run: sudo make container-check"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
command -v curl >/dev/null || die "curl is not installed (apt-get install curl)"
command -v readelf >/dev/null || die "readelf is not installed (apt-get install binutils)"
python3 -c 'import yaml' 2>/dev/null || die "python3 cannot import yaml (apt-get install python3-yaml)"

work=$(mktemp -d /var/tmp/airlock-container-check.XXXXXX)
rootfs=$work/rootfs
pids=()
cleanup() {
  local rc=$? pid m
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for m in "$rootfs/dev" "$rootfs/proc"; do
    if mountpoint -q "$m"; then umount "$m" || umount -l "$m" || true; fi
  done
  if grep -q " $rootfs/" /proc/mounts; then
    echo "container-check: something is still mounted under $rootfs; left $work in place" >&2
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT

# The root file system's size as a Debian image would have it (MiB): du -x (not /proc or /dev),
# without what debian:bookworm-slim does not keep (apt's caches and lists, docs, man pages,
# locales: its docker-clean and dpkg path-excludes). debootstrap's minbase stands in for the base,
# so the runtime stage's difference to it is what this check can tell of the image.
image_mib() {
  du -sxm --exclude='*/var/cache/apt' --exclude='*/var/lib/apt/lists' --exclude='*/usr/share/doc' \
    --exclude='*/usr/share/man' --exclude='*/usr/share/locale' "$rootfs" | cut -f1
}

# In the chroot, with the image's PATH and nothing else from this environment.
as_root() { chroot "$rootfs" env -i PATH="$IMAGE_PATH" "$@"; }
# USER is "uid:gid" (numeric, as Kubernetes' runAsNonRoot needs) or a name (its own group).
userspec() { if [[ $user == *:* ]]; then echo "$user"; else echo "$user:$user"; fi; }
as_user() { chroot --userspec="$(userspec)" "$rootfs" env -i PATH="$IMAGE_PATH" HOME=/ "$@"; }
json_words() { python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])))' "$1"; }
# The integer field $2 of the first JSON log record in file $1 whose event is $3.
log_field() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        record = json.loads(line)
    except ValueError:
        continue
    if record.get("event") == sys.argv[3] and sys.argv[2] in record:
        print(record[sys.argv[2]])
        break
EOF
}
# Waits up to $2 tenths of a second for command "${@:3}" to succeed; $1 names what it waits for.
wait_until() {
  local what=$1 tenths=$2 i
  shift 2
  for ((i = 0; i < tenths; i++)); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  die "timed out waiting for $what"
}

# ---- 1. build stage ----
mkdir -p "$work/build"
if [ -n "$BINARY" ]; then
  [ -x "$BINARY" ] || die "BINARY=$BINARY is not an executable file"
  cp "$BINARY" "$work/build/airlock"
  say "using BINARY=$BINARY (build stage skipped)"
else
  say "build stage: python3 docker/check-build-context.py --config release"
  python3 docker/check-build-context.py --config release --out "$work/build"
fi

# ---- 2. runtime stage ----
user=root exposed="" health=() entry=() cmd=()
while IFS=$'\t' read -r keyword args; do
  case "$keyword" in
    FROM)
      [[ "$args" =~ ^debian:([a-z]+)(-slim)?([[:space:]]|$) ]] || die "runtime stage FROM $args: expected debian:SUITE[-slim]"
      suite=${BASH_REMATCH[1]}
      mkdir -p "$DEBS_CACHE"
      say "FROM $args: debootstrap --variant=minbase $suite ($MIRROR)"
      debootstrap --variant=minbase --cache-dir="$DEBS_CACHE" "$suite" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
        || { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap $suite failed (log above)"; }
      base_mib=$(image_mib)
      # The Debian image's package sources, and name resolution for apt in the chroot.
      cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
      rm -f "$rootfs/etc/apt/sources.list"
      cp -L /etc/resolv.conf "$rootfs/etc/resolv.conf"
      # /dev without its submounts: apt's "Can not write log (Is /dev/pts mounted?)" is harmless.
      mount -t proc proc "$rootfs/proc"
      mount --bind /dev "$rootfs/dev"
      ;;
    RUN)
      say "RUN $args"
      if [ "$user" = root ]; then as_root /bin/sh -c "$args"; else as_user /bin/sh -c "$args"; fi \
        || die "the runtime stage's RUN failed: $args"
      ;;
    COPY)
      read -r -a words <<<"$args"
      [ "${#words[@]}" -eq 3 ] && [ "${words[0]}" = --from=build ] || die "COPY $args: only COPY --from=build SRC DEST is supported"
      install -D -m 0755 "$work/build/airlock" "$rootfs${words[2]}"
      say "COPY $args ($(stat -c %s "$rootfs${words[2]}") bytes)"
      binary=${words[2]}
      ;;
    USER) user=$args; say "USER $user" ;;
    EXPOSE) exposed=${args%%/*}; say "EXPOSE $exposed" ;;
    HEALTHCHECK)
      [[ "$args" =~ CMD[[:space:]]+(\[.*\])$ ]] || die "HEALTHCHECK $args: expected the exec form CMD [\"...\"]"
      mapfile -t health < <(json_words "${BASH_REMATCH[1]}")
      say "HEALTHCHECK ${health[*]}"
      ;;
    ENTRYPOINT) mapfile -t entry < <(json_words "$args"); say "ENTRYPOINT ${entry[*]}" ;;
    CMD) mapfile -t cmd < <(json_words "$args"); say "CMD ${cmd[*]}" ;;
    *) die "runtime stage: $keyword is not supported by this check; teach docker/container-check.sh" ;;
  esac
done < <(python3 docker/check-build-context.py --print-stage runtime)

[ -n "${binary:-}" ] && [ "$user" != root ] && [ -n "$exposed" ] && [ "${#health[@]}" -gt 0 ] \
  && [ "${#entry[@]}" -gt 0 ] && [ "${#cmd[@]}" -gt 0 ] \
  || die "the runtime stage lacks one of COPY --from=build, USER (not root), EXPOSE, HEALTHCHECK, ENTRYPOINT, CMD"

# ---- 3. checks ----
[[ ${user%%:*} =~ ^[0-9]+$ ]] || die "USER $user is a name: runAsNonRoot cannot verify it (write USER uid:gid)"
uid=${user%%:*}
as_root getent passwd "$uid" >/dev/null || die "no user with uid $uid in the image"
[ "$uid" -ne 0 ] || die "USER $user is root"

readelf -S "$rootfs$binary" | grep -q '\.symtab' && die "$binary is not stripped (it has a .symtab)"
say "ok: $binary is stripped ($(stat -c %s "$rootfs$binary") bytes)"

as_user ldd "$binary" >"$work/ldd.txt" || die "ldd $binary failed"
if grep 'not found' "$work/ldd.txt"; then die "ldd: missing shared libraries (above)"; fi
say "ok: ldd finds all $(grep -c '=>' "$work/ldd.txt") libraries"
# What the runtime stage adds to its base image: the packages it installs and the binary.
total_mib=$(image_mib)
say "image size: the runtime stage adds $((total_mib - base_mib)) MiB to its base (the binary $(( $(stat -c %s "$rootfs$binary") / 1048576 )) MiB of it; minbase here: $base_mib MiB)"

version=$(as_user "${entry[@]}" --version) || die "airlock --version failed"
say "ok: ${entry[*]} --version as $user: $version"

# The origin, on the host's loopback: /slow answers after 2 s (for the drain), anything else at once.
cat >"$work/origin.py" <<'EOF'
import http.server, sys, time
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print(self.path, flush=True)
        if self.path == "/slow":
            time.sleep(2)
        body = f"origin says {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
open(sys.argv[1], "w").write(str(server.server_address[1]))
server.serve_forever()
EOF
python3 "$work/origin.py" "$work/origin.port" >"$work/origin.log" 2>&1 &
pids+=($!)
wait_until "the origin's port" 100 test -s "$work/origin.port"
origin_port=$(cat "$work/origin.port")

# The image's ENTRYPOINT + CMD, with a config with explicit routes mounted at the CMD's --config path
# and --listen 127.0.0.1:0 instead of the CMD's 0.0.0.0 (nothing here listens beyond loopback).
args=() config="" listen_seen=""
for ((i = 0; i < ${#cmd[@]}; i++)); do
  case "${cmd[i]}" in
    --config) config=${cmd[i + 1]}; args+=(--config "$config"); i=$((i + 1)) ;;
    --listen) listen_seen=${cmd[i + 1]}; args+=(--listen 127.0.0.1:0); i=$((i + 1)) ;;
    *) args+=("${cmd[i]}") ;;
  esac
done
[ -n "$config" ] && [ -n "$listen_seen" ] || die "CMD ${cmd[*]}: expected --config FILE and --listen HOST:PORT"
mkdir -p "$rootfs$(dirname "$config")"
cat >"$rootfs$config" <<EOF
admin: 127.0.0.1:0
workers: 2
routes:
  - name: check
    match: { host: "check.test" }
    upstream: http://127.0.0.1:$origin_port
EOF
chmod 0644 "$rootfs$config"

# chroot and env exec, so $! is airlock's own pid (a shell function in the background would not be).
chroot --userspec="$(userspec)" "$rootfs" env -i PATH="$IMAGE_PATH" HOME=/ \
  "${entry[@]}" "${args[@]}" >"$work/airlock.log" 2>"$work/airlock.err" &
airlock_pid=$!
pids+=("$airlock_pid")
wait_until "airlock.listening (stderr: $(cat "$work/airlock.err" 2>/dev/null))" 150 \
  grep -q '"event":"airlock.listening"' "$work/airlock.log"
port=$(log_field "$work/airlock.log" port airlock.listening)
admin=$(log_field "$work/airlock.log" port airlock.admin)
[ -n "$port" ] && [ -n "$admin" ] || die "no port in airlock.listening / airlock.admin: $(cat "$work/airlock.log")"
running_uid=$(awk '/^Uid:/ { print $2 }' "/proc/$airlock_pid/status")
[ "$running_uid" = "$uid" ] || die "airlock runs as uid $running_uid, not $user ($uid)"
say "ok: ${entry[*]} ${args[*]} listens on 127.0.0.1:$port as $user (uid $running_uid), admin 127.0.0.1:$admin"
# The image's libmimalloc is the process's malloc (AirlockIO's Allocator), not only installed.
allocator=$(log_field "$work/airlock.log" allocator airlock.listening)
case "$allocator" in "mimalloc "*) ;; *) die "airlock.listening names allocator '$allocator', not mimalloc" ;; esac
say "ok: the allocator in effect is $allocator"

body=$(curl -sS --noproxy '*' --max-time 10 -H 'Host: check.test' "http://127.0.0.1:$port/hello") \
  || die "the proxied request failed"
[ "$body" = "origin says /hello" ] || die "the proxied request answered '$body', not the origin's 'origin says /hello'"
say "ok: curl -H 'Host: check.test' http://127.0.0.1:$port/hello -> origin says /hello"
status=$(curl -sS --noproxy '*' --max-time 10 -o /dev/null -w '%{http_code}' -H 'Host: elsewhere.test' "http://127.0.0.1:$port/") \
  || die "the request for an unrouted host failed"
[ "$status" = 403 ] || die "a host without a route answered $status, not 403"
say "ok: a host without a route -> 403"

as_user "${health[@]}" --admin "127.0.0.1:$admin" || die "the HEALTHCHECK (${health[*]} --admin 127.0.0.1:$admin) failed"
say "ok: HEALTHCHECK ${health[*]} (--admin 127.0.0.1:$admin) exits 0"

# SIGTERM while a request is in flight: it still completes, then airlock exits 0.
curl -sS --noproxy '*' --max-time 15 -o "$work/slow.body" -w '%{http_code}' -H 'Host: check.test' \
  "http://127.0.0.1:$port/slow" >"$work/slow.status" 2>"$work/slow.err" &
curl_pid=$!
pids+=("$curl_pid")
wait_until "the origin to receive /slow" 100 grep -qx /slow "$work/origin.log"
kill -TERM "$airlock_pid"
wait "$curl_pid" || die "the in-flight request failed after SIGTERM: $(cat "$work/slow.err")"
[ "$(cat "$work/slow.status")" = 200 ] && [ "$(cat "$work/slow.body")" = "origin says /slow" ] \
  || die "the in-flight request answered $(cat "$work/slow.status") '$(cat "$work/slow.body")' after SIGTERM"
wait_until "airlock to exit after SIGTERM" 200 bash -c "! kill -0 $airlock_pid 2>/dev/null"
rc=0
wait "$airlock_pid" || rc=$?
[ "$rc" -eq 0 ] || die "airlock exited $rc after SIGTERM (stderr: $(cat "$work/airlock.err"))"
grep -q '"event":"airlock.draining"' "$work/airlock.log" && grep -q '"event":"airlock.stopped"' "$work/airlock.log" \
  || die "no airlock.draining / airlock.stopped records after SIGTERM"
say "ok: SIGTERM with a request in flight: it completed (200), airlock drained and exited 0"
if as_user "${health[@]}" --admin "127.0.0.1:$admin" 2>/dev/null; then
  die "the HEALTHCHECK passed with airlock stopped"
fi
say "ok: the HEALTHCHECK fails once airlock has stopped"

# The CMD without --config: the embedded default (a route for every host) on 0.0.0.0 is an open
# proxy and must be refused at load. `timeout` bounds it should the refusal ever break.
default_args=()
for ((i = 0; i < ${#cmd[@]}; i++)); do
  if [ "${cmd[i]}" = --config ]; then i=$((i + 1)); else default_args+=("${cmd[i]}"); fi
done
rc=0
timeout 10 chroot --userspec="$(userspec)" "$rootfs" env -i PATH="$IMAGE_PATH" HOME=/ \
  "${entry[@]}" "${default_args[@]}" >"$work/open.log" 2>"$work/open.err" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || die "${entry[*]} ${default_args[*]} was not refused (exit $rc)"
grep -q allow_open_proxy "$work/open.err" || die "the refusal does not name allow_open_proxy: $(cat "$work/open.err")"
say "ok: ${entry[*]} ${default_args[*]} (embedded default) refused, exit $rc: $(head -n 1 "$work/open.err")"

# ---- 4. docker/compose.yml's airlock service ----
# Its command and environment as compose would run them, with two substitutions so that nothing
# listens beyond loopback and the demo upstream is this check's origin: AIRLOCK_LISTEN and
# AIRLOCK_ADMIN become 127.0.0.1:0, and the mounted config's `http://demo:8081` this origin.
compose=docker/compose.yml
[ -f "$compose" ] || die "no $compose"
mapfile -t compose_env < <(python3 - "$compose" <<'EOF'
import sys, yaml
svc = yaml.safe_load(open(sys.argv[1]))["services"]["airlock"]
for k, v in svc["environment"].items():
    if k in ("AIRLOCK_LISTEN", "AIRLOCK_ADMIN"):
        v = "127.0.0.1:0"
    print(f"{k}={v}")
EOF
)
mapfile -t compose_cmd < <(python3 -c 'import sys, yaml; print("\n".join(yaml.safe_load(open(sys.argv[1]))["services"]["airlock"]["command"]))' "$compose")
read -r compose_src compose_dst < <(python3 -c 'import sys, yaml; v = yaml.safe_load(open(sys.argv[1]))["services"]["airlock"]["volumes"][0].split(":"); print(v[0], v[1])' "$compose")
[ "${#compose_env[@]}" -gt 0 ] && [ "${#compose_cmd[@]}" -gt 0 ] || die "$compose: no environment or command for airlock"
mkdir -p "$rootfs$(dirname "$compose_dst")"
sed "s|http://demo:8081|http://127.0.0.1:$origin_port|" "docker/$compose_src" >"$rootfs$compose_dst"
chmod 0644 "$rootfs$compose_dst"
chroot --userspec="$(userspec)" "$rootfs" env -i PATH="$IMAGE_PATH" HOME=/ "${compose_env[@]}" \
  "${entry[@]}" "${compose_cmd[@]}" >"$work/compose.log" 2>"$work/compose.err" &
compose_pid=$!
pids+=("$compose_pid")
wait_until "compose's airlock.listening (stderr: $(cat "$work/compose.err" 2>/dev/null))" 150 \
  grep -q '"event":"airlock.listening"' "$work/compose.log"
cport=$(log_field "$work/compose.log" port airlock.listening)
cadmin=$(log_field "$work/compose.log" port airlock.admin)
[ -n "$cport" ] && [ -n "$cadmin" ] || die "compose's airlock: no port in its records: $(cat "$work/compose.log")"
python3 - "$work/compose.log" <<'EOF' || die "compose's airlock.config does not say its settings came from the environment"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line) if line.startswith("{") else {}
    if r.get("event") == "airlock.config":
        f = r.get("from", {})
        ok = all(f.get(k) == v for k, v in {"config": "AIRLOCK_CONFIG", "listen": "AIRLOCK_LISTEN",
                 "admin": "AIRLOCK_ADMIN", "workers": "AIRLOCK_WORKERS", "log_level": "AIRLOCK_LOG_LEVEL"}.items())
        sys.exit(0 if ok and r.get("workers") == 2 else 1)
sys.exit(1)
EOF
say "ok: compose's ${entry[*]} ${compose_cmd[*]} takes config, listen, admin, workers and log level from AIRLOCK_*"
status=$(curl -sS --noproxy '*' --max-time 10 -o /dev/null -w '%{http_code}' -H 'Host: demo.local' "http://127.0.0.1:$cport/hello") \
  || die "compose's demo route request failed"
[ "$status" = 502 ] || die "compose's demo route (json validation) answered $status to a text/plain origin, not 502"
wait_until "a response.rejected record" 50 grep -q '"event":"response.rejected"' "$work/compose.log"
say "ok: compose's demo route rejects a non-JSON answer (502, response.rejected)"
cat >>"$rootfs$compose_dst" <<EOF
  - name: added-by-reload
    match: { host: "check.test" }
    upstream: http://127.0.0.1:$origin_port
EOF
kill -HUP "$compose_pid"
wait_until "airlock.reloaded after SIGHUP" 50 grep -q '"event":"airlock.reloaded"' "$work/compose.log"
body=$(curl -sS --noproxy '*' --max-time 10 -H 'Host: check.test' "http://127.0.0.1:$cport/after-reload") \
  || die "the route added by the reload does not answer"
[ "$body" = "origin says /after-reload" ] || die "the route added by the reload answered '$body'"
kill -0 "$compose_pid" 2>/dev/null || die "compose's airlock exited on SIGHUP"
say "ok: kill -HUP reloads compose's airlock: the added route answers, the process stays"
kill -TERM "$compose_pid"
wait_until "compose's airlock to exit" 200 bash -c "! kill -0 $compose_pid 2>/dev/null"

say "all checks passed"
