#!/usr/bin/env python3
"""A real HTTP/1.1-over-TLS origin for Airlock's integration tests, on 127.0.0.1:<ephemeral>.

Usage: tls_origin.py --cert CHAIN.pem --key KEY.pem [--mode normal|truncate|close-delimited]
                     [--close-notify] [--port-file FILE] [--idle-timeout SECONDS]
                     [--security-level N] [--dhe-only DHPARAMS.pem]

Binds 127.0.0.1:0, then prints "PORT <n>" on stdout (flushed) and writes "<n>\\n" to --port-file.
TLS 1.2 minimum, session tickets on (Python's default), one thread per connection.
--security-level N sets OpenSSL's security level (cipher string "DEFAULT:@SECLEVEL=N") before the
certificate loads: 0 lets it serve a chain that level 2 refuses (SHA-1/MD5 signatures, RSA-1024 keys).
--dhe-only DHPARAMS.pem: TLS 1.2 only, DHE-RSA ciphers only, key exchange over these DH parameters (a
legacy host; with a group under 2048 bits a level-2 client refuses the handshake: "dh key too small").
Needs an RSA key, and --security-level 0 or 1 for such a group.

Modes, per request:
  normal            keep-alive; answers every request with 200, Content-Type: text/plain,
                    Content-Length, body "hello over tls <target>" (none for HEAD). Closes, with
                    close_notify, after a request that says "Connection: close" or is HTTP/1.0.
                    Two targets differ: /random/<n> answers n random bytes
                    (application/octet-stream; logged as "sent conn=<n> bytes=<n> sha256=<hex>"),
                    /html an HTML page (text/html).
  truncate          answers the first request with "Content-Length: 100" and 20 body bytes, then
                    closes the TCP socket without close_notify.
  close-delimited   answers the first request with "Connection: close", no Content-Length, body
                    "hello over tls <target>", then closes the TCP socket without close_notify
                    (the body must count as truncated); with --close-notify it sends close_notify
                    first, so the body is complete.

Log, on stderr, one line per event (the Swift wrapper parses these):
  accept conn=<n> peer=<ip>:<port>
  handshake conn=<n> resumed=yes|no version=<TLSv1.x> sni=<name or ->
  handshake-failed conn=<n> error=<text>
  request conn=<n> <request line>
  close conn=<n> reason=<text>

Stops on SIGTERM or SIGINT, and by itself when its parent process goes away.
"""

import argparse
import hashlib
import os
import time
import signal
import socket
import ssl
import sys
import threading

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
TRUNCATED_BODY = b"0123456789abcdefghij"  # 20 of the 100 bytes promised

log_lock = threading.Lock()


def log(line):
    with log_lock:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class Closed(Exception):
    """The peer closed, timed out, or sent something this origin will not parse."""


class Reader:
    """Buffered reads from one TLS socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = bytearray()  # appended in place: a 50 MiB body is not copied per read

    def fill(self):
        try:
            data = self.sock.recv(65536)
        except (OSError, ssl.SSLError) as error:
            raise Closed(f"read: {error}")
        if not data:
            raise Closed("eof")
        self.buffer += data

    def until(self, marker, limit):
        while True:
            index = self.buffer.find(marker)
            if index >= 0:
                chunk, self.buffer = bytes(self.buffer[:index]), self.buffer[index + len(marker):]
                return chunk
            if len(self.buffer) > limit:
                raise Closed("line or head too long")
            self.fill()

    def exactly(self, count):
        while len(self.buffer) < count:
            self.fill()
        chunk, self.buffer = bytes(self.buffer[:count]), self.buffer[count:]
        return chunk


def read_request(reader, at_start):
    """Returns (request line, headers dict with lower-case names, body), or None on a clean EOF."""
    if at_start and not reader.buffer:
        try:
            reader.fill()
        except Closed:
            return None
    head = reader.until(b"\r\n\r\n", MAX_HEAD).decode("latin-1")
    lines = head.split("\r\n")
    request_line = lines[0]
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise Closed(f"malformed header line {line!r}")
        key = name.strip().lower()
        headers[key] = (headers[key] + ", " if key in headers else "") + value.strip()
    body = b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = reader.until(b"\r\n", 1024).split(b";")[0].strip()
            size = int(size_line, 16)
            if size == 0:
                while reader.until(b"\r\n", MAX_HEAD):  # trailers, up to the empty line
                    pass
                break
            body += reader.exactly(size)
            reader.until(b"\r\n", 2)
            if len(body) > MAX_BODY:
                raise Closed("body too large")
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length < 0 or length > MAX_BODY:
            raise Closed("bad content-length")
        body = reader.exactly(length)
    return request_line, headers, body


def close_without_notify(sock):
    """Ends the TCP connection with a FIN and no TLS close_notify."""
    try:
        raw = socket.socket(fileno=os.dup(sock.fileno()))
        try:
            raw.shutdown(socket.SHUT_RDWR)
        finally:
            raw.close()
    except OSError:
        pass
    sock.close()


def close_with_notify(sock):
    """Sends close_notify (and waits, bounded by the socket timeout, for the peer's), then closes."""
    try:
        sock.unwrap().close()
    except (OSError, ssl.SSLError, ValueError):
        sock.close()


class Origin:
    def __init__(self, args):
        self.args = args
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        if args.security_level is not None:
            self.context.set_ciphers(f"DEFAULT:@SECLEVEL={args.security_level}")
        if args.dhe_only:
            self.context.maximum_version = ssl.TLSVersion.TLSv1_2
            level = 2 if args.security_level is None else args.security_level
            self.context.set_ciphers(f"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:@SECLEVEL={level}")
            self.context.load_dh_params(args.dhe_only)
        self.context.load_cert_chain(args.cert, args.key)
        self.context.sni_callback = self.remember_sni
        self.sni_lock = threading.Lock()
        self.sni = {}
        self.connections = 0

    def remember_sni(self, ssl_socket, server_name, _context):
        with self.sni_lock:
            self.sni[id(ssl_socket)] = server_name
        return None

    def serve(self, raw, number):
        raw.settimeout(self.args.idle_timeout)
        try:
            sock = self.context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        except (OSError, ssl.SSLError) as error:
            log(f"handshake-failed conn={number} error={error}")
            raw.close()
            return
        try:
            sock.do_handshake()
        except (OSError, ssl.SSLError) as error:
            log(f"handshake-failed conn={number} error={error}")
            with self.sni_lock:
                self.sni.pop(id(sock), None)
            sock.close()
            return
        with self.sni_lock:
            sni = self.sni.pop(id(sock), None)
        log(f"handshake conn={number} resumed={'yes' if sock.session_reused else 'no'} "
            f"version={sock.version()} sni={sni or '-'}")
        reason = "done"
        try:
            reason = self.exchange(sock, number)
        except Closed as error:
            reason = str(error)
            sock.close()
        except (OSError, ssl.SSLError, ValueError) as error:
            reason = f"error: {error}"
            sock.close()
        log(f"close conn={number} reason={reason}")

    def exchange(self, sock, number):
        """Answers requests until the connection ends; returns why it ended. Closes `sock`."""
        reader = Reader(sock)
        mode = self.args.mode
        while True:
            request = read_request(reader, at_start=True)
            if request is None:
                sock.close()
                return "client closed"
            request_line, headers, request_body = request
            log(f"request conn={number} {request_line}")
            if request_body:
                log(f"body conn={number} bytes={len(request_body)} sha256={hashlib.sha256(request_body).hexdigest()}")
            parts = request_line.split(" ")
            method = parts[0]
            target = parts[1] if len(parts) > 1 else "/"
            version = parts[2] if len(parts) > 2 else "HTTP/1.0"
            body = f"hello over tls {target}".encode()
            content_type = "text/plain"
            if mode == "normal" and target.startswith("/random/") and target[8:].isdigit():
                body = os.urandom(min(int(target[8:]), MAX_BODY * 4))
                content_type = "application/octet-stream"
                log(f"sent conn={number} bytes={len(body)} sha256={hashlib.sha256(body).hexdigest()}")
            elif mode == "normal" and target.startswith("/slow/") and target[6:].isdigit():
                time.sleep(min(int(target[6:]), 10000) / 1000)   # an exchange still in flight
            elif mode == "normal" and target == "/html":
                body = b"<!doctype html><html><body><h1>not json</h1></body></html>"
                content_type = "text/html"
            if mode == "truncate":
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n"
                             + TRUNCATED_BODY)
                close_without_notify(sock)
                return "truncated"
            if mode == "close-delimited":
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                             + (b"" if method == "HEAD" else body))
                if self.args.close_notify:
                    close_with_notify(sock)
                    return "close-delimited with close_notify"
                close_without_notify(sock)
                return "close-delimited without close_notify"
            connection = headers.get("connection", "").lower()
            closing = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    + ("Connection: close\r\n" if closing else "") + "\r\n").encode()
            sock.sendall(head + (b"" if method == "HEAD" else body))
            if closing:
                close_with_notify(sock)
                return "connection: close"

    def run(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        if self.args.port_file:
            temporary = self.args.port_file + ".tmp"
            with open(temporary, "w") as handle:
                handle.write(f"{port}\n")
            os.replace(temporary, self.args.port_file)
        sys.stdout.write(f"PORT {port}\n")
        sys.stdout.flush()
        parent = os.getppid()
        while True:
            if os.getppid() != parent:
                log("exit reason=parent gone")
                return
            try:
                raw, peer = listener.accept()
            except socket.timeout:
                continue
            self.connections += 1
            number = self.connections
            log(f"accept conn={number} peer={peer[0]}:{peer[1]}")
            thread = threading.Thread(target=self.serve, args=(raw, number), daemon=True)
            thread.start()


def stop(signum, _frame):
    log(f"exit reason=signal {signum}")
    sys.stdout.flush()
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description="HTTP/1.1 over TLS test origin on 127.0.0.1:0")
    parser.add_argument("--cert", required=True, help="PEM chain the server sends: leaf first")
    parser.add_argument("--key", required=True, help="PEM private key of the leaf")
    parser.add_argument("--mode", choices=["normal", "truncate", "close-delimited"], default="normal")
    parser.add_argument("--close-notify", action="store_true",
                        help="close-delimited: send close_notify before closing, so the body is complete")
    parser.add_argument("--port-file", help="also write the port here (atomically)")
    parser.add_argument("--idle-timeout", type=float, default=30.0,
                        help="seconds a connection may stay silent before it is closed")
    parser.add_argument("--security-level", type=int, choices=range(0, 6),
                        help="OpenSSL security level for this server (to serve deliberately weak chains)")
    parser.add_argument("--dhe-only", metavar="DHPARAMS",
                        help="TLS 1.2 DHE-RSA only, over these PEM DH parameters (a legacy host)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    Origin(args).run()


if __name__ == "__main__":
    main()
