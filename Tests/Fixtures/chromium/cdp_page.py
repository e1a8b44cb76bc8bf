#!/usr/bin/env python3
"""One page in headless Chromium, driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4; the standard library is enough).

usage: cdp_page.py CHROMIUM PROFILE_DIR URL SECONDS

Reads commands, one JSON object a line, on stdin; answers each with one JSON line on stdout:
  {"eval": "js"}          -> {"value": ...} or {"error": "..."}   (awaits a promise, returns by value)
  {"screenshot": "path"}  -> {"value": "path"}                    (PNG of the viewport)
  {"console": true}       -> {"value": [errors]}                  (console errors, exceptions, Log errors so far)
  {"quit": true}          -> {"value": true}, then Chromium is closed
The first line written is {"ready": true} once URL has loaded (or {"error": ...}). Chromium runs in
its own process group, killed on quit, on stdin's end and after SECONDS whatever happens.
"""
import base64
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time


def main():
    chromium, profile, url, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()

    def child_fds():
        # The pipe ends become fds 3 (Chromium reads) and 4 (Chromium writes), via high copies
        # so that neither dup2 overwrites the other's source.
        a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
        os.dup2(a, 3)
        os.dup2(b, 4)

    proc = subprocess.Popen([
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--no-proxy-server", "--window-size=1400,1000", "--user-data-dir=" + profile,
        "--remote-debugging-pipe", "about:blank",
    ], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=child_fds, close_fds=False, start_new_session=True)
    os.close(to_chrome_r)
    os.close(from_chrome_w)

    def kill():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    watchdog = threading.Timer(seconds, kill)
    watchdog.daemon = True
    watchdog.start()

    lock = threading.Condition()
    answers = {}
    problems = []
    next_id = [0]

    def reader():
        buf = b""
        while True:
            try:
                data = os.read(from_chrome_r, 65536)
            except OSError:
                data = b""
            if not data:
                with lock:
                    answers["eof"] = True
                    lock.notify_all()
                return
            buf += data
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with lock:
                    if "id" in msg:
                        answers[msg["id"]] = msg
                    else:
                        note(msg)
                    lock.notify_all()

    def note(msg):
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            problems.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            problems.append("exception: " + str(d.get("exception", {}).get("description", d.get("text"))))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            problems.append("log: " + e.get("text", "") + " " + e.get("url", ""))
        elif method == "Page.loadEventFired":
            answers["loaded"] = True

    threading.Thread(target=reader, daemon=True).start()

    def send(method, params=None, session=None, timeout=30):
        with lock:
            next_id[0] += 1
            mid = next_id[0]
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with lock:
            while mid not in answers and "eof" not in answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(method + ": no answer in %ss" % timeout)
                lock.wait(left)
            if mid not in answers:
                raise RuntimeError(method + ": Chromium closed the pipe")
            answer = answers.pop(mid)
        if "error" in answer:
            raise RuntimeError(method + ": " + json.dumps(answer["error"]))
        return answer.get("result", {})

    def out(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    try:
        targets = send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            send(domain + ".enable", session=session)
        send("Page.navigate", {"url": url}, session=session)
        deadline = time.monotonic() + 20
        with lock:
            while "loaded" not in answers and time.monotonic() < deadline:
                lock.wait(0.2)
        if "loaded" not in answers:
            raise RuntimeError("the page did not load in 20 s")
        out({"ready": True})
    except Exception as e:  # noqa: BLE001 - reported to the test, then Chromium is killed
        out({"error": str(e)})
        kill()
        return 1

    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if "eval" in cmd:
                r = send("Runtime.evaluate", {"expression": cmd["eval"], "awaitPromise": True, "returnByValue": True,
                                              "userGesture": True}, session=session)
                if "exceptionDetails" in r:
                    d = r["exceptionDetails"]
                    out({"error": str(d.get("exception", {}).get("description", d.get("text")))})
                else:
                    out({"value": r.get("result", {}).get("value")})
            elif "screenshot" in cmd:
                r = send("Page.captureScreenshot", {"format": "png"}, session=session)
                with open(cmd["screenshot"], "wb") as f:
                    f.write(base64.b64decode(r["data"]))
                out({"value": cmd["screenshot"]})
            elif "console" in cmd:
                with lock:
                    out({"value": list(problems)})
            elif "quit" in cmd:
                out({"value": True})
                break
            else:
                out({"error": "unknown command"})
        except Exception as e:  # noqa: BLE001
            out({"error": str(e)})
    try:
        send("Browser.close", timeout=5)
    except Exception:  # noqa: BLE001
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
