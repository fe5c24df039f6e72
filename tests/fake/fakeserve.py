"""What every fake server in tests/fake/ shares: listen on 127.0.0.1 at a
port the OS picks, say it as "PORT <n>" (the first line on stdout, which
tests/fake/spawn.h and tests/e2e/lib.sh read), and, with
--exit-on-stdin-eof, exit when stdin closes, so a test that crashes leaves
no server behind; and the request handling the fakes share (a quiet
HTTP/1.1 handler on the fake's clock, a JSON control endpoint, SigV4 as
botocore computes it).  Python 3 standard library only, but for sigv4()
(botocore).
"""
import json
import os
import re
import sys
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    """A threaded server on loopback, quiet about clients that go away."""
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that timed out and left is not an error here


def watch_stdin():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def listen(handler, threaded=True, addr="127.0.0.1"):
    """A server for handler on addr (loopback unless a test gives the
    booting fake EC2's host address), port chosen by the OS."""
    return (Server if threaded else HTTPServer)((addr, 0), handler)


def serve(server, exit_on_stdin_eof):
    """Announce the port, then serve until killed (or stdin closes)."""
    print("PORT %d" % server.server_address[1], flush=True)
    if exit_on_stdin_eof:
        threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


# ------------------------------------------------- request handlers ----

class Handler(BaseHTTPRequestHandler):
    """The fakes' request handler: HTTP/1.1, quiet, "Server: server_name",
    and the Date header from clock() (a fake's own clock: Unix seconds)."""
    protocol_version = "HTTP/1.1"
    server_name = "Server"

    def log_message(self, fmt, *args):
        pass

    def version_string(self):
        return self.server_name

    def date_time_string(self, timestamp=None):
        return formatdate(self.clock() if timestamp is None else timestamp, usegmt=True)

    def clock(self):
        return time.time()

    def read_body(self):
        """The request's body (Content-Length bytes; b"" without one)."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""


def send(handler, status, data, content_type, headers=()):
    """Answer with status and the bytes data (not sent for HEAD):
    Content-Type, then the (name, value) pairs of headers, then
    Content-Length."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(data)


def control(handler, entry, body, ctx, get, delete, post, usage, accepts=lambda doc: True):
    """A fake service's control endpoint: GET its state, DELETE to reset it,
    POST a JSON object to set it; logged as entry (with its status and the
    object POSTed as params), answered in JSON ({"ok": true} unless said).
    get() -> the state; delete() resets it; post(doc) -> None, or (status,
    out) to refuse doc; accepts(doc): whether doc has the form usage (a
    sentence) says, else 400 {"error": usage}.  ctx: lock, log."""
    status, out = 200, {"ok": True}
    try:
        doc = json.loads(body) if body.strip() else {}
    except ValueError:
        doc = None
    with ctx["lock"]:
        if handler.command == "GET":
            out = get()
        elif handler.command == "DELETE":
            delete()
        elif handler.command == "POST" and isinstance(doc, dict) and accepts(doc):
            entry["params"] = doc
            refused = post(doc)
            if refused:
                status, out = refused
        else:
            status, out = 400, {"error": usage}
        entry["status"] = status
        ctx["log"](entry)
    send(handler, status, json.dumps(out).encode("utf-8"), "application/json")


# ------------------------------------------------------------ SigV4 ----

AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256\s+(.*)$", re.S)


def header_lists(header_pairs):
    """{lowercase name: [its values, in order]} of a request's headers."""
    headers = {}
    for name, value in header_pairs:
        headers.setdefault(name.lower(), []).append(value)
    return headers


def auth_params(value):
    """The name=value pairs of an "AWS4-HMAC-SHA256 Credential=...,
    SignedHeaders=..., Signature=..." Authorization value as a dict (names
    and values stripped), or None where it is not SigV4."""
    m = AUTH_RE.match((value or "").strip())
    if not m:
        return None
    parts = {}
    for piece in m.group(1).split(","):
        k, _, v = piece.strip().partition("=")
        parts[k.strip()] = v.strip()
    return parts


def sigv4(credentials, service, region, signed, header_pairs, method, url, body, amz_date,
          params=None, payload=None, raw_path=False):
    """What botocore's SigV4 makes of a request as received: (canonical
    request, string to sign, signature).  credentials: botocore Credentials;
    signed: the names the client says it signed (only those, with every
    value in order, are signed); payload: the body's hash as the request
    declared it (else botocore's of body); raw_path: the path as sent (S3),
    not normalized.  Needs botocore (imported here: the fakes without SigV4
    run without it)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.compat import HTTPHeaders

    class Signer(SigV4Auth):
        def headers_to_sign(self, request):
            chosen = HTTPHeaders()
            for name, value in header_pairs:
                if name.lower() in signed:
                    chosen[name.lower()] = value   # repeated names keep every value, in order
            return chosen

        def payload(self, request):
            return payload if payload is not None else super().payload(request)

        def _normalize_url_path(self, path):
            return path if raw_path else super()._normalize_url_path(path)

    request = AWSRequest(method=method, url=url, data=body, params=params)
    request.context["timestamp"] = amz_date
    signer = Signer(credentials, service, region)
    canonical = signer.canonical_request(request)
    to_sign = signer.string_to_sign(request, canonical)
    return canonical, to_sign, signer.signature(to_sign, request)
