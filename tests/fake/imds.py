#!/usr/bin/python3
"""A fake EC2 instance metadata service, IMDSv2 only (Python 3 stdlib only).

Listens on 127.0.0.1 at a port the OS chooses and prints "PORT <n>" as the
first line on stdout.  Point gpuctl at it with
AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:<n>.

  PUT /latest/api/token
      needs X-aws-ec2-metadata-token-ttl-seconds between 1 and 21600
      (400 otherwise); a request carrying X-Forwarded-For is refused (403);
      answers a new token (text).
  GET /latest/meta-data/...
      needs X-aws-ec2-metadata-token holding a token this server issued
      (401 otherwise).
      iam/security-credentials/        the role name (404 with --no-role)
      iam/security-credentials/ROLE    {"Code", "LastUpdated", "Type",
                                        "AccessKeyId", "SecretAccessKey",
                                        "Token", "Expiration"}
      placement/region                 --region (404 when not given)
      anything else                    404

Options: --role NAME (default gpuctl-test-role), --no-role, --expiration ISO
(default 2099-01-01T00:00:00Z), --region NAME, --code CODE (the credentials'
"Code", default Success), --access-key, --secret-key, --session-token (the
values served; defaults are the AWS documentation example keys and a
1200-byte token); --log FILE appends one line per request,
"METHOD PATH STATUS"; --exit-on-stdin-eof exits when stdin closes, so a
crashed test leaves nothing behind.
"""
import argparse
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler

import fakeserve  # tests/fake/fakeserve.py: listen, announce the port, serve

LOCK = threading.Lock()
TOKENS = set()
ARGS = None

# AWS documentation example keys (not real credentials).
EXAMPLE_ACCESS_KEY = "AKIDEXAMPLE"
EXAMPLE_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
EXAMPLE_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE" + "x" * 1177  # 1200 bytes, like STS tokens
ROLES_PATH = "/latest/meta-data/iam/security-credentials/"


def log_line(text):
    if not ARGS.log:
        return
    with LOCK:
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(text + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep test output clean
        pass

    def reply(self, status, body=b"", ctype="text/plain"):
        log_line("%s %s %d" % (self.command, self.path, status))
        fakeserve.send(self, status, body, ctype)

    def drain(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def do_PUT(self):
        self.drain()
        if self.path != "/latest/api/token":
            return self.reply(404)
        if self.headers.get("X-Forwarded-For") is not None:
            return self.reply(403)
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        if ttl is None or not ttl.strip().isdigit() or not 1 <= int(ttl) <= 21600:
            return self.reply(400)
        token = "AQAEAFake" + secrets.token_urlsafe(32)
        with LOCK:
            TOKENS.add(token)
        return self.reply(200, token.encode())

    def do_GET(self):
        token = self.headers.get("X-aws-ec2-metadata-token")
        with LOCK:
            known = token in TOKENS
        if not known:
            return self.reply(401)
        if self.path == ROLES_PATH:
            if ARGS.no_role:
                return self.reply(404)
            return self.reply(200, ARGS.role.encode())
        if self.path == ROLES_PATH + ARGS.role and not ARGS.no_role:
            doc = {
                "Code": ARGS.code,
                "LastUpdated": "2024-01-01T00:00:00Z",
                "Type": "AWS-HMAC",
                "AccessKeyId": ARGS.access_key,
                "SecretAccessKey": ARGS.secret_key,
                "Token": ARGS.session_token,
                "Expiration": ARGS.expiration,
            }
            return self.reply(200, json.dumps(doc, indent=2).encode(), "application/json")
        if self.path == "/latest/meta-data/placement/region" and ARGS.region:
            return self.reply(200, ARGS.region.encode())
        return self.reply(404)

    def do_POST(self):
        self.drain()
        return self.reply(405)

    do_DELETE = do_PATCH = do_POST


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ap.add_argument("--role", default="gpuctl-test-role")
    ap.add_argument("--no-role", action="store_true")
    ap.add_argument("--expiration", default="2099-01-01T00:00:00Z")
    ap.add_argument("--region")
    ap.add_argument("--code", default="Success")
    ap.add_argument("--access-key", default=EXAMPLE_ACCESS_KEY)
    ap.add_argument("--secret-key", default=EXAMPLE_SECRET_KEY)
    ap.add_argument("--session-token", default=EXAMPLE_TOKEN)
    ARGS = ap.parse_args()
    server = fakeserve.listen(Handler)
    fakeserve.serve(server, ARGS.exit_on_stdin_eof)


if __name__ == "__main__":
    main()
