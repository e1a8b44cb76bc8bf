#!/usr/bin/env python3
"""CONNECT tunnel benchmark for one forward proxy (wrk cannot CONNECT).

Usage: connect-bench.py --name NAME --proxy-port P [--pid PID] [--target localhost:18443]
                        [--ca CA.crt] [--url-path /1m.bin] [--setup-seconds 10]
                        [--concurrency 32] [--tput-mib 200] [--streams 1]

Two measurements, each bounded in time:

  setups/s    --concurrency asyncio clients, each in a loop for --setup-seconds: connect to
              the proxy, send `CONNECT target HTTP/1.1`, read the head, require a 2xx, close.
              What the proxy does per tunnel: accept, parse, route, resolve, connect upstream,
              answer 200, tear down both sides.
  MiB/s       --streams curl processes, each fetching --url-path --tput-mib times over ONE
              tunnel (curl reuses the TLS connection inside it), `--cacert CA`: TLS end to
              end with the upstream, the proxy relays ciphertext. MiB/s = bytes / wall time.

With --pid, the proxy's process tree CPU seconds (utime+stime) during each measurement and
its peak RSS (VmHWM, reset through /proc/PID/clear_refs first when allowed) are reported.
Prints one line: CONNECTRESULT name=... setups_per_s=... setup_errors=... tput_mib_s=...
tput_errors=... setup_cpu_s=... tput_cpu_s=... peak_rss_mib=...
"""
import argparse
import asyncio
import os
import subprocess
import sys
import time


def tree(pid):
    pids, queue = [], [pid]
    while queue:
        p = queue.pop()
        if not os.path.isdir(f"/proc/{p}"):
            continue
        pids.append(p)
        try:
            for line in open(f"/proc/{p}/task/{p}/children").read().split():
                queue.append(int(line))
        except OSError:
            pass
    return pids


def cpu_seconds(pid):
    if not pid:
        return 0.0
    tck = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in tree(pid):
        try:
            fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / tck


def reset_hwm(pid):
    for p in tree(pid) if pid else []:
        try:
            with open(f"/proc/{p}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass


def hwm_mib(pid):
    total = 0
    for p in tree(pid) if pid else []:
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


async def one_client(port, target, deadline, counts):
    request = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()
    while time.monotonic() < deadline:
        writer = None
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
            writer.write(request)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            status = head.split(b" ", 2)[1] if head.startswith(b"HTTP/1.") else b"000"
            if status.startswith(b"2"):
                counts["ok"] += 1
            else:
                counts["err"] += 1
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            counts["err"] += 1
        finally:
            if writer is not None:
                writer.close()
                try:
                    await asyncio.wait_for(writer.wait_closed(), 2)
                except (OSError, asyncio.TimeoutError):
                    pass


async def setups(port, target, seconds, concurrency):
    counts = {"ok": 0, "err": 0}
    start = time.monotonic()
    deadline = start + seconds
    await asyncio.wait_for(
        asyncio.gather(*(one_client(port, target, deadline, counts) for _ in range(concurrency))), seconds + 30)
    return counts["ok"] / (time.monotonic() - start), counts["err"]


def throughput(port, target, ca, path, mib, streams, timeout):
    url = f"https://{target}{path}"
    args = ["curl", "-q", "-sS", "--max-time", str(timeout), "-x", f"http://127.0.0.1:{port}", "-w", "%{size_download}\n"]
    if ca:
        args += ["--cacert", ca]
    else:
        args += ["-k"]
    for _ in range(mib):
        args += ["-o", "/dev/null", url]
    start = time.monotonic()
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(streams)]
    total, errors = 0, 0
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout + 15)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            errors += 1
        sizes = [int(x) for x in out.split() if x.isdigit()]
        total += sum(sizes)
        if p.returncode != 0 or len(sizes) != mib:
            errors += 1
            sys.stderr.write(f"curl exited {p.returncode}: {err.decode(errors='replace')[-300:]}\n")
    wall = time.monotonic() - start
    return total / wall / 1048576, errors, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--proxy-port", type=int, required=True)
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--target", default="localhost:18443")
    ap.add_argument("--ca", default="")
    ap.add_argument("--url-path", default="/1m.bin")
    ap.add_argument("--setup-seconds", type=float, default=10)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--tput-mib", type=int, default=200)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=120)
    a = ap.parse_args()

    reset_hwm(a.pid)
    c0 = cpu_seconds(a.pid)
    rate, setup_errors = asyncio.run(setups(a.proxy_port, a.target, a.setup_seconds, a.concurrency))
    c1 = cpu_seconds(a.pid)
    mib_s, tput_errors, total = throughput(a.proxy_port, a.target, a.ca, a.url_path, a.tput_mib, a.streams, a.timeout)
    c2 = cpu_seconds(a.pid)
    print(f"CONNECTRESULT name={a.name} setups_per_s={rate:.0f} setup_errors={setup_errors} "
          f"tput_mib_s={mib_s:.1f} tput_bytes={total} tput_errors={tput_errors} "
          f"setup_cpu_s={c1 - c0:.2f} tput_cpu_s={c2 - c1:.2f} peak_rss_mib={hwm_mib(a.pid):.1f}", flush=True)


if __name__ == "__main__":
    main()
