#!/usr/bin/env python3
"""Memory of a proxy holding many idle keep-alive client connections.

Starts nothing itself. Opens --clients keep-alive TCP connections to
127.0.0.1:--port, sends one `GET /small HTTP/1.1` on each and reads the whole
response, then keeps them all open and idle, and reads VmRSS / VmHWM of --pid
from /proc (in MiB; --pid may be repeated, e.g. nginx's master and worker: the sums). Everything is bounded by --timeout seconds.

Output: human-readable lines on stderr, and one key=value line on stdout:
    IDLE clients=1000 open=1000 failed=0 rss_mib=... hwm_mib=... baseline_rss_mib=...
Exit status: 0 if every connection got a 2xx response and was still open when
memory was read, 1 otherwise (the numbers are printed either way), 2 on usage
errors.
"""

import argparse
import errno
import resource
import selectors
import socket
import sys
import time


def log(msg):
    print(f"[idle-rss] {msg}", file=sys.stderr, flush=True)


def proc_status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # "VmRSS:   12345 kB"
    raise KeyError(key)


def mib(kib):
    return kib / 1024.0


def raise_nofile(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as e:
        log(f"could not raise RLIMIT_NOFILE to {needed}: {e}")
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        log(f"warning: RLIMIT_NOFILE is {soft}, fewer than the {needed} descriptors needed")


class Conn:
    """One client connection: send the request, read one response, then idle."""

    def __init__(self, sock, request):
        self.sock = sock
        self.out = request
        self.buf = b""
        self.status = None
        self.done = False

    def response_complete(self):
        head_end = self.buf.find(b"\r\n\r\n")
        if head_end < 0:
            return False
        head = self.buf[:head_end].decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise ValueError(f"bad status line {lines[0]!r}")
        self.status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = self.buf[head_end + 4:]
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return body.endswith(b"0\r\n\r\n")  # good enough for a short test body
        if "content-length" in headers:
            return len(body) >= int(headers["content-length"])
        if self.status in (204, 304) or 100 <= self.status < 200:
            return True
        raise ValueError("response has no length (not keep-alive friendly)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True, help="proxy port on 127.0.0.1")
    ap.add_argument("--pid", type=int, required=True, action="append",
                    help="process whose VmRSS/VmHWM to read (repeat to sum several)")
    ap.add_argument("--clients", type=int, default=1000, help="idle keep-alive connections (default 1000)")
    ap.add_argument("--path", default="/small", help="request path (default /small)")
    ap.add_argument("--host", default="127.0.0.1:18080", help="Host header (default 127.0.0.1:18080)")
    ap.add_argument("--timeout", type=float, default=60.0, help="total time bound in seconds (default 60)")
    ap.add_argument("--settle", type=float, default=1.0, help="idle seconds before reading memory (default 1)")
    args = ap.parse_args()
    if args.clients < 1:
        ap.error("--clients must be >= 1")
    try:
        baseline_kib = sum(proc_status_kib(p, "VmRSS") for p in args.pid)
    except (OSError, KeyError) as e:
        log(f"cannot read /proc/{args.pid}/status: {e}")
        return 2

    deadline = time.monotonic() + args.timeout
    raise_nofile(args.clients + 64)
    request = (f"GET {args.path} HTTP/1.1\r\nHost: {args.host}\r\n"
               "User-Agent: airlock-idle-rss\r\nAccept: */*\r\n\r\n").encode()
    sel = selectors.DefaultSelector()
    conns, failed, pending = [], 0, 0

    def fail(c, why):
        nonlocal failed, pending
        failed += 1
        pending -= 1
        if failed <= 5:
            log(f"connection failed: {why}")
        try:
            sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        c.done = True

    # Connect in batches so the listen backlog is never the bottleneck.
    batch = 100
    started = 0
    while (started < args.clients or pending > 0) and time.monotonic() < deadline:
        while started < args.clients and pending < batch:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c = Conn(s, request)
            conns.append(c)
            started += 1
            pending += 1
            err = s.connect_ex(("127.0.0.1", args.port))
            if err not in (0, errno.EINPROGRESS):
                fail(c, f"connect: errno {err}")
                continue
            sel.register(s, selectors.EVENT_WRITE, c)
        for key, mask in sel.select(timeout=min(0.5, max(0.0, deadline - time.monotonic()))):
            c = key.data
            try:
                if mask & selectors.EVENT_WRITE:
                    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        fail(c, f"connect: errno {err}")
                        continue
                    n = c.sock.send(c.out)
                    c.out = c.out[n:]
                    if not c.out:
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                elif mask & selectors.EVENT_READ:
                    data = c.sock.recv(65536)
                    if not data:
                        fail(c, "closed before a full response")
                        continue
                    c.buf += data
                    if c.response_complete():
                        sel.unregister(c.sock)
                        c.done = True
                        pending -= 1
                        if not 200 <= c.status < 300:
                            failed += 1
                            if failed <= 5:
                                log(f"non-2xx response: {c.status}")
            except (OSError, ValueError) as e:
                fail(c, str(e))

    unfinished = [c for c in conns if not c.done]
    if unfinished or started < args.clients:
        log(f"time bound ({args.timeout:.0f}s) hit: {len(unfinished)} responses unfinished, "
            f"{args.clients - started} connections never started")
        failed += len(unfinished) + (args.clients - started)

    # Idle, then check which connections are still open: readable now means EOF or junk.
    time.sleep(max(0.0, min(args.settle, deadline - time.monotonic())))
    live = [c for c in conns if c.done and c.sock.fileno() != -1]
    open_count = 0
    check = selectors.DefaultSelector()
    for c in live:
        check.register(c.sock, selectors.EVENT_READ)
    readable = {k.fileobj for k, _ in check.select(timeout=0)} if live else set()
    for c in live:
        if c.sock in readable:
            try:
                peek = c.sock.recv(1, socket.MSG_PEEK)
            except OSError:
                peek = b""
            if not peek:
                continue  # closed by the proxy
        open_count += 1

    try:
        rss_kib = sum(proc_status_kib(p, "VmRSS") for p in args.pid)
        hwm_kib = sum(proc_status_kib(p, "VmHWM") for p in args.pid)
    except (OSError, KeyError) as e:
        log(f"cannot read /proc/{args.pid}/status after connecting: {e}")
        return 1
    for c in conns:
        c.sock.close()

    log(f"{args.clients} clients: {open_count} open and idle, {failed} failed; "
        f"VmRSS {mib(rss_kib):.1f} MiB, VmHWM {mib(hwm_kib):.1f} MiB "
        f"(before connecting: VmRSS {mib(baseline_kib):.1f} MiB)")
    print(f"IDLE clients={args.clients} open={open_count} failed={failed} "
          f"rss_mib={mib(rss_kib):.1f} hwm_mib={mib(hwm_kib):.1f} baseline_rss_mib={mib(baseline_kib):.1f}",
          flush=True)
    return 0 if failed == 0 and open_count == args.clients else 1


if __name__ == "__main__":
    sys.exit(main())
