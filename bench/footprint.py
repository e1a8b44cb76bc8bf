#!/usr/bin/env python3
"""The footprint of one proxy process tree: startup time, RSS at start, RSS with idle clients.

Starts COMMAND (a proxy that listens on 127.0.0.1:--port) once per measurement, so that the
1,000- and 10,000-client numbers each come from a fresh process:

  startup   time from the fork+exec of COMMAND until a TCP connect to --port succeeds
            (polled every 0.5 ms; median of --starts runs)
  at start  VmRSS summed over the process tree (nginx: master + worker) --settle s after it
            listens, and smaps_rollup's split: anonymous (what the process allocated) and
            file-backed (code and data of the binary and its shared libraries)
  idle N    bench/idle-rss.py with --clients N against --port, VmRSS summed over the tree

Each start is cold for COMMAND's own executable: its page cache is written back and dropped
first (fsync, posix_fadvise DONTNEED; shared libraries other processes map stay cached), so
the binary is read the way a fresh container or host reads it. How the file was last written
(cp, install -s, the linker) otherwise moves its file-backed RSS by up to 0.5 MiB: the page
cache's folios differ, and the kernel maps code faults in 64 KiB windows of it. --warm skips this.

Everything is bounded: each start by --start-timeout, each idle run by idle-rss.py's
--timeout, each stop by SIGTERM then SIGKILL after 15 s. Prints human-readable lines on
stderr and one key=value line on stdout:
    FOOTPRINT name=... startup_ms=... rss_mib=... anon_mib=... file_mib=... idle1000_mib=...
"""

import argparse
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"[footprint] {msg}", file=sys.stderr, flush=True)


def tree(pid):
    """pid and its descendants (from /proc/*/stat's ppid)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, queue = [], [pid]
    while queue:
        p = queue.pop()
        out.append(p)
        queue.extend(children.get(p, []))
    return out


def kib(path, key):
    with open(path) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def memory(pids):
    """(VmRSS, anonymous, file-backed) in KiB, summed over pids."""
    rss = anon = 0
    for p in pids:
        rss += kib(f"/proc/{p}/status", "VmRSS")
        anon += kib(f"/proc/{p}/smaps_rollup", "Anonymous")
    return rss, anon, rss - anon


def accepts(port):
    with socket.socket() as s:
        s.settimeout(0.05)
        return s.connect_ex(("127.0.0.1", port)) == 0


def drop_page_cache(path):
    """Writes back and drops path's cached pages (those no process maps)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def start(cmd, port, timeout, log_path=None, cold=True):
    """Starts cmd (its output appended to log_path; cold: its executable's page cache dropped
    first); returns (Popen, seconds until the port accepted)."""
    if accepts(port):
        raise RuntimeError(f"port {port} is already in use")
    if cold:
        drop_page_cache(os.path.realpath(shutil.which(cmd[0]) or cmd[0]))
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    if log_path:
        out.close()
    while time.monotonic() - t0 < timeout:
        if accepts(port):
            return proc, time.monotonic() - t0
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited with status {proc.returncode} before listening")
        time.sleep(0.0005)
    stop(proc)
    raise RuntimeError(f"{cmd[0]} did not listen on {port} within {timeout} s")


def stop(proc):
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        log(f"pid {proc.pid} still running 15 s after SIGTERM; SIGKILL")
        proc.kill()
        proc.wait(timeout=15)


def mib(k):
    return k / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", default="1000", help="comma-separated idle client counts (0: none)")
    ap.add_argument("--host", default="127.0.0.1:18080", help="Host header for idle-rss.py")
    ap.add_argument("--starts", type=int, default=5, help="starts for the startup-time median")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--start-timeout", type=float, default=15.0)
    ap.add_argument("--log", help="append the command's output to this file")
    ap.add_argument("--warm", action="store_true", help="keep the executable's page cache between starts")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("give the command after --")

    # Inherited by COMMAND: 10,000 clients need 20,000 descriptors and some (root may raise
    # the hard limit; otherwise up to it).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 65536:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (65536, max(65536, hard)))
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    startups, at_start = [], []
    for _ in range(max(1, args.starts)):
        proc, took = start(cmd, args.port, args.start_timeout, args.log, cold=not args.warm)
        try:
            startups.append(took)
            time.sleep(args.settle)
            at_start.append(memory(tree(proc.pid)))
        finally:
            stop(proc)
    rss, anon, file_backed = min(at_start)   # the least noisy start
    startup_ms = statistics.median(startups) * 1000
    log(f"{args.name}: startup {startup_ms:.1f} ms (median of {len(startups)}: "
        + ", ".join(f"{t * 1000:.1f}" for t in startups) + ")")
    log(f"{args.name}: at start VmRSS {mib(rss):.1f} MiB = anonymous {mib(anon):.1f} + file-backed {mib(file_backed):.1f}")
    fields = [f"name={args.name}", f"startup_ms={startup_ms:.1f}", f"rss_mib={mib(rss):.1f}",
              f"anon_mib={mib(anon):.1f}", f"file_mib={mib(file_backed):.1f}"]
    ok = True
    for n in [int(c) for c in args.clients.split(",") if c.strip() and int(c) > 0]:
        proc, _ = start(cmd, args.port, args.start_timeout, args.log, cold=not args.warm)
        try:
            time.sleep(args.settle)
            pids = tree(proc.pid)
            idle_cmd = [sys.executable, os.path.join(HERE, "idle-rss.py"), "--port", str(args.port),
                        "--clients", str(n), "--host", args.host, "--timeout", "90"]
            for p in pids:
                idle_cmd += ["--pid", str(p)]
            out = subprocess.run(idle_cmd, capture_output=True, text=True, timeout=120)
            sys.stderr.write(out.stderr)
            m = re.search(r"open=(\d+) failed=(\d+) rss_mib=([0-9.]+)", out.stdout)
            if out.returncode != 0 or not m:
                ok = False
                fields.append(f"idle{n}_mib=FAILED")
            else:
                fields.append(f"idle{n}_mib={m.group(3)}")
        finally:
            stop(proc)
    print("FOOTPRINT " + " ".join(fields), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
