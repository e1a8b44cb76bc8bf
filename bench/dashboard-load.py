#!/usr/bin/env python3
"""bench/dashboard-load.py: is the dashboard responsive while Airlock runs RATE tasks a second?

    bench/dashboard-load.py [BINARY] [--rate 1000] [--seconds 20] [--delay-ms 200] [--conns 400]

Starts BINARY (default .build/release/airlock) as a gateway with its admin listener, an origin
on 127.0.0.1:0 that answers 100 B after DELAY ms (so about RATE x DELAY / 1000 tasks are in
flight at any time), opens the dashboard in headless Chromium (Tests/Fixtures/chromium/cdp_page.py,
DevTools protocol on a pipe), then drives RATE requests a second through Airlock for SECONDS
(CONNS keep-alive connections, asyncio, bounded) while probing the page every 250 ms: the time
for Chromium to run a trivial script in it (its main thread is free or it is not), and what the
rows show. Prints the same probe idle (before the load) and under load, and the page's own timings
(window.airlockDashboard: renders, slowest render, long tasks). Everything stays on loopback.
"""
import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODY = b"x" * 100


async def origin(delay):
    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    return
                await asyncio.sleep(delay)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n" + BODY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    return server, server.sockets[0].getsockname()[1]


async def client(port, deadline, next_slot, stats):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while True:
            at = next_slot()
            if at >= deadline:
                return
            delay = at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            writer.write(b"GET /load HTTP/1.1\r\nHost: load\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            stats["done"] += 1
            if not head.startswith(b"HTTP/1.1 200"):
                stats["errors"] += 1
    finally:
        writer.close()


class Page:
    """cdp_page.py: one JSON command a line in, one JSON answer a line out."""

    def __init__(self, url, lifetime):
        self.profile = tempfile.mkdtemp(prefix="airlock-dash-bench-")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "Tests/Fixtures/chromium/cdp_page.py"), "/usr/bin/chromium",
             self.profile, url, str(int(lifetime))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        first = json.loads(self.proc.stdout.readline() or "{}")
        if not first.get("ready"):
            raise SystemExit("the dashboard did not open: %s" % first)

    def ask(self, cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline() or "{}")

    def eval(self, js):
        return self.ask({"eval": js}).get("value")

    def close(self):
        try:
            self.ask({"quit": True})
        except (BrokenPipeError, ValueError):
            pass
        self.proc.wait(timeout=20)
        shutil.rmtree(self.profile, ignore_errors=True)


async def probe(page, until, samples, rows):
    loop = asyncio.get_running_loop()
    while time.monotonic() < until:
        t0 = time.monotonic()
        shown = await loop.run_in_executor(None, page.eval, "document.querySelectorAll('tr.task').length")
        samples.append((time.monotonic() - t0) * 1000)
        rows.append(shown or 0)
        await asyncio.sleep(0.25)


def summary(name, samples):
    s = sorted(samples)
    if not s:
        return "%s: no samples" % name
    p = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return "%s: script round trip ms p50 %.1f  p95 %.1f  max %.1f  (%d samples)" % (name, p(0.5), p(0.95), s[-1], len(s))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default=os.path.join(REPO, ".build/release/airlock"))
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--delay-ms", type=float, default=200)
    ap.add_argument("--conns", type=int, default=400)
    args = ap.parse_args()

    server, origin_port = await origin(args.delay_ms / 1000)
    work = tempfile.mkdtemp(prefix="airlock-dash-load-")
    config = os.path.join(work, "airlock.yaml")
    with open(config, "w") as f:
        f.write("listen: 127.0.0.1:0\nworkers: 1\nadmin: 127.0.0.1:0\nroutes:\n  - name: load\n"
                "    match: { host: \"*\" }\n    upstream: http://127.0.0.1:%d\n" % origin_port)
    airlock = subprocess.Popen([args.binary, "run", "--config", config, "--log-level", "info"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    proxy_port = admin_port = None
    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + 15
    while (proxy_port is None or admin_port is None) and time.monotonic() < deadline:
        line = await loop.run_in_executor(None, airlock.stdout.readline)
        if not line:
            break
        rec = json.loads(line)
        if rec.get("event") == "airlock.listening":
            proxy_port = rec["port"]
        elif rec.get("event") == "airlock.admin":
            admin_port = rec["port"]
    if proxy_port is None or admin_port is None:
        airlock.kill()
        raise SystemExit("airlock did not start")
    # The access records go nowhere from here on (--log-level info keeps them: a real gateway's cost).
    loop.run_in_executor(None, lambda: [None for _ in airlock.stdout])

    page = Page("http://127.0.0.1:%d/" % admin_port, args.seconds + 120)
    try:
        page.eval("new Promise(r => { const t = setInterval(() => { if (document.getElementById('conn')"
                  ".textContent === 'live') { clearInterval(t); r(true); } }, 50); })")
        idle, rows = [], []
        await probe(page, time.monotonic() + 5, idle, rows)
        before = page.eval("JSON.stringify(window.airlockDashboard)")

        stats = {"done": 0, "errors": 0}
        start = time.monotonic() + 0.2
        end = start + args.seconds
        counter = [0]

        def next_slot():
            counter[0] += 1
            return start + counter[0] / args.rate

        busy, rows = [], []
        clients = [asyncio.create_task(client(proxy_port, end, next_slot, stats)) for _ in range(args.conns)]
        await probe(page, end, busy, rows)
        await asyncio.wait_for(asyncio.gather(*clients), timeout=args.seconds + 30)
        took = time.monotonic() - start
        after = json.loads(page.eval("JSON.stringify(window.airlockDashboard)"))
        errors = page.ask({"console": True}).get("value")

        print("airlock %s, origin delay %.0f ms, %d connections" % (args.binary, args.delay_ms, args.conns))
        print("load: %d requests in %.1f s = %.0f tasks/s (%d not 200)" % (stats["done"], took, stats["done"] / took,
                                                                           stats["errors"]))
        print(summary("idle ", idle))
        print(summary("load ", busy))
        print("task rows shown under load: median %d, max %d (cap 100)" % (statistics.median(rows or [0]), max(rows or [0])))
        b = json.loads(before)
        renders = after["renders"] - b["renders"]
        print("page under load: %d renders, %.2f ms each on average, slowest %.1f ms; long tasks (> 50 ms) %d, "
              "longest %.0f ms; events %d, lost %d; console errors %s" % (
                  renders, (after["totalRenderMs"] - b["totalRenderMs"]) / max(1, renders), after["maxRenderMs"],
                  after["longTasks"] - b["longTasks"], after["maxLongTaskMs"], after["events"] - b["events"],
                  after["lost"], errors))
    finally:
        page.close()
        airlock.terminate()
        airlock.wait(timeout=10)
        server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
