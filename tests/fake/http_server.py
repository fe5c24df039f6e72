#!/usr/bin/python3
"""A scriptable HTTP server for tests/unit/test_http.c (Python 3 stdlib only).

Listens on 127.0.0.1 at a port the OS chooses and prints "PORT <n>" as the
first line on stdout.  Every request's behaviour comes from its query string:

  code=C         status to answer while "failing" (default 200)
  times=N        fail only the first N requests with this exact target
                 (path + query), then answer 200; without it, always fail
  retry_after=V  send "Retry-After: V" while failing
  drop=1         while failing, close the connection without any reply
  ms=N           while failing, sleep N milliseconds before answering
  bytes=N        answer with a body of N 'x' bytes
  hdr=Name:value add a response header (repeatable)
  reply=TEXT     answer with TEXT as the body (instead of {"n": ...})
  echo_body=1    answer with the request's body (instead of {"n": ...})
  ctype=TYPE     Content-Type of the answer (default application/json)
  log_hdr=NAME   add " NAME=<value of that request header, or ->" to the
                 request's log line (repeatable)

The path /echo answers (always 200) with a JSON document of the request:
{"method", "path", "headers": {lower-case name: value}, "body", "conn",
"peer"}: conn numbers the TCP connections the server accepted (1, 2, ...),
so two requests with the same conn came over one connection; peer is the
client's port.  Any other path answers {"n": <requests seen with this
target>} unless bytes=, reply= or echo_body= is given.

Options: --log FILE appends one line per request, "METHOD TARGET STATUS"
(STATUS "drop" for a dropped connection); --exit-on-stdin-eof makes the
server exit when its stdin closes, so a crashed test leaves nothing behind;
--tls serves HTTPS with a self-signed certificate for 127.0.0.1 that no
client trusts (for tests that TLS verification stays on).
"""
import argparse
import json
import os
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import fakeserve  # tests/fake/fakeserve.py: listen, announce the port, serve

LOCK = threading.Lock()
COUNTS = {}
LOG = None
CONNS = [0]

# --tls: a throw-away self-signed P-256 certificate for IP 127.0.0.1 (valid
# until 2126).  Test-only: it protects nothing, and no client trusts it.
TLS_KEY = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAIWhw2gzHkbjG1hA
BlQus5C1a+xxjwieJtVQBA85wiChRANCAATyiQsCdAg4PyUzBZfOlUssSrKfpEcZ
WDTJJojIYaCKUdLKEUNgcj0EGxVz99q8DNjBKte8TKag8b4NAP/a1wlq
-----END PRIVATE KEY-----
"""
TLS_CERT = """-----BEGIN CERTIFICATE-----
MIIBjzCCATagAwIBAgIUJv2DNjdW27C7cz+p+hrdxeGp4NowCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTEzMDAyMTU1MVoYDzIxMjYxMTA2
MDIxNTUxWjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATyiQsCdAg4PyUzBZfOlUssSrKfpEcZWDTJJojIYaCKUdLKEUNgcj0E
GxVz99q8DNjBKte8TKag8b4NAP/a1wlqo2QwYjAdBgNVHQ4EFgQUdgSR3u7dLYOt
zyClEkXjss3kHzAwHwYDVR0jBBgwFoAUdgSR3u7dLYOtzyClEkXjss3kHzAwDwYD
VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0cAMEQC
IBbG0iM4EpQ2pjwDKzK/UNU3KANGHLhhdO8GgNhpiMhQAiAeTa2sq7bmo3VAGtIF
NgKGgNRikHrpl7Da5MiAPf+hcA==
-----END CERTIFICATE-----
"""


def log_line(text):
    if LOG is None:
        return
    with LOCK:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(text + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep test output clean
        pass

    def setup(self):
        super().setup()
        with LOCK:  # one handler per accepted connection
            CONNS[0] += 1
            self.conn = CONNS[0]

    def handle_any(self):
        parts = urlsplit(self.path)
        q = parse_qs(parts.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with LOCK:
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            count = COUNTS[self.path]

        def one(name, default=None):
            return q[name][0] if name in q else default

        times = one("times")
        failing = times is None or count <= int(times)
        status = int(one("code", "200")) if failing else 200
        if failing and one("ms"):
            time.sleep(int(one("ms")) / 1000.0)
        extra = "".join(" %s=%s" % (h, self.headers.get(h, "-"))
                        for h in q.get("log_hdr", []))
        if failing and one("drop") == "1":
            log_line("%s %s drop%s" % (self.command, self.path, extra))
            self.close_connection = True
            return
        if parts.path == "/echo":
            status = 200
            out = json.dumps({
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace"),
                "conn": self.conn,
                "peer": self.client_address[1],
            }).encode()
        elif one("bytes"):
            out = b"x" * int(one("bytes"))
        elif one("reply") is not None:
            out = one("reply").encode()
        elif one("echo_body") == "1":
            out = body
        else:
            out = json.dumps({"n": count}).encode()
        log_line("%s %s %d%s" % (self.command, self.path, status, extra))
        self.send_response(status)
        self.send_header("Content-Type", one("ctype", "application/json"))
        if failing and one("retry_after") is not None:
            self.send_header("Retry-After", one("retry_after"))
        for h in q.get("hdr", []):
            name, _, value = h.partition(":")
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any


def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ap.add_argument("--tls", action="store_true")
    args = ap.parse_args()
    LOG = args.log
    server = fakeserve.listen(Handler)
    if args.tls:
        with tempfile.TemporaryDirectory() as d:
            key, cert = os.path.join(d, "key.pem"), os.path.join(d, "cert.pem")
            with open(key, "w") as f:
                f.write(TLS_KEY)
            with open(cert, "w") as f:
                f.write(TLS_CERT)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    fakeserve.serve(server, args.exit_on_stdin_eof)


if __name__ == "__main__":
    main()
