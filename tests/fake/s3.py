#!/usr/bin/python3
"""A fake Amazon S3 (and STS GetCallerIdentity) endpoint for tests, all in memory.

    tests/fake/s3.py [--access-key AKID] [--secret-key SECRET]
                     [--restrict AKID:SECRET:BUCKET/PREFIX]... [--taken BUCKET]...
                     [--page-size N] [--faults FILE] [--log FILE]
                     [--exit-on-stdin-eof]

Listens on 127.0.0.1 at a port the OS chooses and prints "PORT <n>" as the
first line on stdout.  Python 3 standard library plus botocore (Debian's
python3-botocore): every request's SigV4 signature is recomputed with
botocore.auth.SigV4Auth (S3 path rules: the path is signed as sent, never
normalised), an implementation gpuctl's authors did not write.  Shapes
follow shared/reference/aws.md section 6 and the Amazon S3 API Reference.

Options
  --access-key AKID    the owner's access key id (default AKIDEXAMPLE)
  --secret-key SECRET  its secret (default wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY)
  --restrict A:S:B/P   another key pair, A with secret S, that may only read,
                       write, list and delete objects under BUCKET/PREFIX (the
                       policy of an instance profile limited to a cluster's
                       prefix: s3:GetObject/PutObject/DeleteObject/
                       AbortMultipartUpload on arn:aws:s3:::B/P*, s3:ListBucket
                       with the condition s3:prefix like P*); anything else
                       answers 403 AccessDenied "Access Denied"
  --taken BUCKET       a bucket name another account owns: CreateBucket answers
                       409 BucketAlreadyExists, HeadBucket 403
  --page-size N        ListObjectsV2 pages hold at most N keys (default 1000;
                       max-keys in the request lowers it)
  --faults FILE        JSON list of fault rules (below)
  --log FILE           one JSON object per request: {"n", "op", "bucket",
                       "key", "part", "akid", "status", "code"}

Addressing: virtual-hosted when the Host header is "BUCKET.s3.<anything>" or
"BUCKET.s3-<anything>", else path style (/BUCKET/KEY).  The key is the
percent-decoded rest of the path.

Authentication, in this order (403 unless said): Authorization present and
AWS4-HMAC-SHA256 (else AccessDenied); a known access key (else
InvalidAccessKeyId); the scope's service s3 (sts for POST / with
Action=GetCallerIdentity); `host`, `x-amz-date` and `x-amz-content-sha256`
signed and every signed header present (else AccessDenied); the
x-amz-content-sha256 value: the SHA-256 of the body received (else 400
XAmzContentSHA256Mismatch), or UNSIGNED-PAYLOAD, which this fake accepts only
with a Content-MD5 header (else 400 InvalidRequest: gpuctl must never send an
unverified body); a Content-MD5, when sent, must be the base64 MD5 of the
body (else 400 BadDigest); then the signature (else SignatureDoesNotMatch,
with <CanonicalRequest> and <StringToSign> in the error document as S3 gives
them).  X-Amz-Date more than 15 minutes off -> RequestTimeTooSkewed.

Regions: a bucket lives in the region of its CreateBucket (LocationConstraint,
none = us-east-1, which must equal the scope's region, else 400
IllegalLocationConstraintException).  A request signed for another region
than its bucket's: HeadBucket answers 301 with x-amz-bucket-region, every
other 400 AuthorizationHeaderMalformed with <Region>.

Operations: HeadBucket, CreateBucket (409 BucketAlreadyOwnedByYou when it is
yours), PutPublicAccessBlock, PutBucketEncryption, PutBucketTagging,
PutBucketLifecycleConfiguration (each parsed and kept), ListObjectsV2
(prefix, continuation-token, max-keys), DeleteObjects (Content-MD5
required: 400 InvalidRequest without it; quiet mode lists only errors),
PutObject (x-amz-meta-* kept; an object's LastModified, in listings and
as Last-Modified, is when its PutObject or CompleteMultipartUpload came,
as `aws s3 sync` compares it), GetObject (Range bytes=A-B -> 206 with
Content-Range; a start past the end -> 416 InvalidRange), HeadObject (404
without a body), DeleteObject, CreateMultipartUpload, UploadPart (part
numbers 1..10000), ListParts (max-parts, part-number-marker),
CompleteMultipartUpload (InvalidPart, InvalidPartOrder, EntityTooSmall for a
part but the last under 5 MiB; the object's ETag is the hex MD5 of the
parts' MD5s, "-N"), AbortMultipartUpload; NoSuchBucket, NoSuchKey,
NoSuchUpload.  STS GetCallerIdentity answers account 123456789012.

Fault rules ({"op": "UploadPart", "part": 2, "status": 503, "code":
"SlowDown", "times": 1, "complete_200": false, "hang": 0}): a request of
that op (and part number, when given) answers the error instead, `times`
times (absent or -1: always).  "hang": S waits S seconds, then closes the
connection without doing anything (for a client killed mid-request).  "complete_200": true makes a CompleteMultipartUpload answer 200
with the <Error> body.  POST /_fake/faults replaces the rules (JSON body);
GET /_fake/state answers {"buckets": {NAME: {"region", "settings",
"objects": {KEY: {"size", "etag", "meta"}}}}, "uploads": {ID: {"bucket",
"key", "parts": [N...]}}, "counts": {OP: n}}; POST /_fake/reset zeroes the
counts.  Request ids: "REQ" + 8 digits of the request's sequence number.

Principals with an IAM policy (an instance profile's role, as a node gets
its credentials from the metadata service): POST /_fake/principals
{"access_key", "secret_key", "session_token" (optional), "policy": DOC}
adds one, where DOC is an IAM policy document (as the fake IAM keeps a
role's inline policy, tests/fake/iam.py).  Its requests must carry that
session token (X-Amz-Security-Token, signed; else 403 InvalidToken) and are
judged as IAM judges an identity policy: an explicit Deny refuses, else an
Allow must match the request's action, resource and conditions, else 403
AccessDenied "Access Denied".  Actions: GetObject and HeadObject
s3:GetObject; PutObject, CreateMultipartUpload, UploadPart and
CompleteMultipartUpload s3:PutObject; AbortMultipartUpload
s3:AbortMultipartUpload; ListParts s3:ListMultipartUploadParts;
DeleteObject and each key of DeleteObjects s3:DeleteObject, on
arn:aws:s3:::BUCKET/KEY; ListObjectsV2 and HeadBucket s3:ListBucket on
arn:aws:s3:::BUCKET with the condition key s3:prefix (the request's prefix
parameter, absent without one); any other operation s3:OP on the bucket.
Action, Resource (str or list) and the condition operators StringEquals,
StringLike (values str or list; a key the request lacks never matches)
are matched as IAM does ('*' and '?' wildcards, actions case-insensitive).
GET /_fake/principals lists the access keys with their policies.  With
--ec2 URL (the booting fake EC2) the credentials it minted for its nodes
are known without registering: on first use their secret, token and
role come from URL/_fake/instance_credentials and the role's inline
policies from URL/_fake/iam.  --listen ADDR: where to listen (its host
address, so that booted nodes reach this fake; default 127.0.0.1).
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import re
import threading
import time
from email.utils import formatdate
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from botocore.credentials import Credentials

import fakeserve  # tests/fake/fakeserve.py: listen, announce the port, serve; SigV4

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ACCOUNT = "123456789012"
PART_MIN = 5 << 20
MAX_SKEW_S = 15 * 60

ARGS = None
LOCK = threading.RLock()
BUCKETS = {}    # name -> {"region", "settings": {}, "objects": {key: obj}}
UPLOADS = {}    # id -> {"bucket", "key", "meta", "parts": {n: (etag, data)}}
COUNTS = {}
FAULTS = []
SEQ = {"n": 0, "upload": 0}
KEYS = {}       # akid -> (secret, None | (bucket, prefix) | {"policy": doc, "token": str or None})


class S3Error(Exception):
    def __init__(self, status, code, message, extra=None, headers=None):
        super().__init__(code)
        self.status, self.code, self.message = status, code, message
        self.extra, self.headers = extra or {}, headers or {}


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def learn_instance_key(akid):
    """--ec2 URL: temporary credentials of an instance profile that the
    booting fake EC2 minted for a node (GET /_fake/instance_credentials),
    judged by its role's inline policies in the fake IAM (GET /_fake/iam),
    as if the principal had been registered with POST /_fake/principals."""
    import urllib.request
    try:
        with urllib.request.urlopen(ARGS.ec2 + "/_fake/instance_credentials", timeout=5) as r:
            creds = json.load(r)
        with urllib.request.urlopen(ARGS.ec2 + "/_fake/iam", timeout=5) as r:
            iam = json.load(r)
    except (OSError, ValueError):
        return
    for c in creds:
        if c.get("access_key_id") != akid:
            continue
        role = iam.get("roles", {}).get(c.get("role") or "", {})
        statements = []
        for doc in role.get("policies", {}).values():
            st = doc.get("Statement", [])
            statements.extend(st if isinstance(st, list) else [st])
        KEYS[akid] = (c["secret_access_key"],
                      {"policy": {"Version": "2012-10-17", "Statement": statements},
                       "token": c.get("token")})


def verify(method, raw_path, query_pairs, header_pairs, body):
    """(akid, region, service) or raise S3Error."""
    headers = fakeserve.header_lists(header_pairs)
    parts = fakeserve.auth_params((headers.get("authorization") or [""])[0])
    if parts is None:
        raise S3Error(403, "AccessDenied", "Anonymous access is not allowed here")
    scope = parts.get("Credential", "").split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise S3Error(400, "AuthorizationHeaderMalformed", "The authorization header is malformed")
    akid, date, region, service, _ = scope
    if akid not in KEYS and ARGS.ec2:
        learn_instance_key(akid)
    if akid not in KEYS:
        raise S3Error(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
    signed = parts.get("SignedHeaders", "").split(";")
    for must in ("host", "x-amz-date", "x-amz-content-sha256"):
        if must not in signed:
            raise S3Error(403, "AccessDenied", "'%s' must be a signed header" % must)
    for name in signed:
        if name not in headers:
            raise S3Error(403, "AccessDenied", "Signed header '%s' is missing" % name)
    amz_date = headers["x-amz-date"][0].strip()
    if date != amz_date[:8]:
        raise S3Error(400, "AuthorizationHeaderMalformed", "The scope date is not the X-Amz-Date day")
    declared = headers["x-amz-content-sha256"][0].strip()
    if "content-md5" in headers and headers["content-md5"][0].strip() != md5_b64(body):
        raise S3Error(400, "BadDigest", "The Content-MD5 you specified did not match what we received.")
    if declared == "UNSIGNED-PAYLOAD":
        if "content-md5" not in headers:
            raise S3Error(400, "InvalidRequest", "UNSIGNED-PAYLOAD without Content-MD5 (refused by this fake)")
    elif declared != hashlib.sha256(body).hexdigest():
        raise S3Error(400, "XAmzContentSHA256Mismatch",
                      "The provided 'x-amz-content-sha256' header does not match what was computed.")
    rule = KEYS[akid][1]
    if isinstance(rule, dict) and rule.get("token") is not None:
        token = headers.get("x-amz-security-token")
        if not token or token[0] != rule["token"] or "x-amz-security-token" not in signed:
            raise S3Error(403, "InvalidToken", "The provided token is malformed or otherwise invalid.")
    secret = KEYS[akid][0]
    host = headers["host"][0]
    # S3's path rule (the path signed as sent, encoded once by the client)
    # and the payload hash the request declared (checked against the body)
    canonical, to_sign, expected = fakeserve.sigv4(
        Credentials(akid, secret), service, region, set(signed), header_pairs, method,
        "http://%s%s" % (host, raw_path), body, amz_date, params=query_pairs, payload=declared, raw_path=True)
    if not hmac.compare_digest(expected, parts.get("Signature", "")):
        raise S3Error(403, "SignatureDoesNotMatch",
                      "The request signature we calculated does not match the signature you provided.",
                      {"CanonicalRequest": canonical, "StringToSign": to_sign})
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if abs(when - time.time()) > MAX_SKEW_S:
        raise S3Error(403, "RequestTimeTooSkewed",
                      "The difference between the request time and the current time is too large.")
    return akid, region, service


OBJECT_ACTIONS = {
    "GetObject": "s3:GetObject", "HeadObject": "s3:GetObject", "PutObject": "s3:PutObject",
    "CreateMultipartUpload": "s3:PutObject", "UploadPart": "s3:PutObject",
    "CompleteMultipartUpload": "s3:PutObject", "AbortMultipartUpload": "s3:AbortMultipartUpload",
    "ListParts": "s3:ListMultipartUploadParts", "DeleteObject": "s3:DeleteObject",
}


def as_list(v):
    return v if isinstance(v, list) else [v]


def iam_like(pattern, value, fold=False):
    """IAM's wildcard match: '*' any run of characters, '?' one."""
    if fold:
        pattern, value = pattern.lower(), value.lower()
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value, re.S) is not None


def conditions_hold(cond, ctx):
    for operator, pairs in (cond or {}).items():
        for k, want in pairs.items():
            if k not in ctx:
                return False
            if operator == "StringLike":
                ok = any(iam_like(w, ctx[k]) for w in as_list(want))
            elif operator == "StringEquals":
                ok = ctx[k] in as_list(want)
            else:
                return False   # an operator this fake does not know never matches
            if not ok:
                return False
    return True


def policy_allows(doc, action, resource, ctx):
    """IAM's decision for one request: explicit Deny, else some Allow."""
    allow = False
    for st in as_list(doc.get("Statement", [])):
        if not any(iam_like(a, action, fold=True) for a in as_list(st.get("Action", []))):
            continue
        if not any(iam_like(r, resource) for r in as_list(st.get("Resource", []))):
            continue
        if not conditions_hold(st.get("Condition"), ctx):
            continue
        if st.get("Effect") == "Deny":
            return False
        allow = allow or st.get("Effect") == "Allow"
    return allow


def allowed(akid, op, bucket, key, q):
    """The --restrict policy or a principal's IAM policy; raises AccessDenied."""
    rule = KEYS[akid][1]
    if rule is None:
        return
    if isinstance(rule, dict):
        if op in OBJECT_ACTIONS:
            action, resource, ctx = OBJECT_ACTIONS[op], "arn:aws:s3:::%s/%s" % (bucket, key), {}
        elif op in ("ListObjectsV2", "ListObjects", "HeadBucket"):
            action, resource = "s3:ListBucket", "arn:aws:s3:::%s" % bucket
            ctx = {"s3:prefix": q["prefix"]} if "prefix" in q and op != "HeadBucket" else {}
        elif op == "DeleteObjects":
            return   # each key is checked by the operation
        else:
            action, resource, ctx = "s3:" + op, "arn:aws:s3:::%s" % bucket, {}
        if not policy_allows(rule["policy"], action, resource, ctx):
            raise S3Error(403, "AccessDenied", "Access Denied")
        return
    rb, rp = rule
    ok = bucket == rb
    if op == "ListObjectsV2":
        ok = ok and q.get("prefix", "").startswith(rp)
    elif op == "DeleteObjects":
        pass   # each key is checked by the operation
    elif op in ("PutObject", "GetObject", "HeadObject", "DeleteObject", "CreateMultipartUpload",
                "UploadPart", "ListParts", "CompleteMultipartUpload", "AbortMultipartUpload"):
        ok = ok and key.startswith(rp)
    else:
        ok = False
    if not ok:
        raise S3Error(403, "AccessDenied", "Access Denied")


def iso_ms(t):
    """S3's LastModified: UTC with milliseconds."""
    d = datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def xml_doc(root, body):
    return '<?xml version="1.0" encoding="UTF-8"?>\n<%s xmlns="%s">%s</%s>' % (root, NS, body, root)


def parse_xml(body):
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        raise S3Error(400, "MalformedXML", "The XML you provided was not well-formed")
    return root


def local(tag):
    return tag.rsplit("}", 1)[-1]


def children(el, name):
    return [c for c in el if local(c.tag) == name]


def text(el, name, default=None):
    c = children(el, name)
    return c[0].text or "" if c else default


def op_name(method, key, q, is_sts):
    if is_sts:
        return "GetCallerIdentity"
    if not key:
        table = {
            "HEAD": "HeadBucket", "PUT": "CreateBucket", "DELETE": "DeleteBucket", "GET": "ListObjects",
        }
        for sub, op in (("publicAccessBlock", "PutPublicAccessBlock"), ("encryption", "PutBucketEncryption"),
                        ("tagging", "PutBucketTagging"), ("lifecycle", "PutBucketLifecycleConfiguration")):
            if sub in q:
                return op if method == "PUT" else "Get" + op[3:]
        if method == "POST" and "delete" in q:
            return "DeleteObjects"
        if method == "GET" and q.get("list-type") == "2":
            return "ListObjectsV2"
        return table.get(method, "Unknown")
    if method == "POST" and "uploads" in q:
        return "CreateMultipartUpload"
    if method == "POST" and "uploadId" in q:
        return "CompleteMultipartUpload"
    if method == "PUT" and "uploadId" in q:
        return "UploadPart"
    if method == "GET" and "uploadId" in q:
        return "ListParts"
    if method == "DELETE" and "uploadId" in q:
        return "AbortMultipartUpload"
    return {"PUT": "PutObject", "GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(method, "Unknown")


def fault_for(op, part):
    with LOCK:
        for f in FAULTS:
            if f.get("op") != op:
                continue
            if "part" in f and str(f["part"]) != str(part):
                continue
            t = f.get("times", -1)
            if t == 0:
                continue
            if t > 0:
                f["times"] = t - 1
            return f
    return None


class Handler(fakeserve.Handler):
    server_name = "AmazonS3"

    def send(self, status, body=b"", headers=None, ctype="application/xml"):
        if isinstance(body, str):
            body = body.encode()
        headers = dict(headers or {})
        length = headers.pop("Content-Length", None) if self.command == "HEAD" else None
        self.send_response(status)
        self.send_header("x-amz-request-id", self.rid)
        for k, v in headers.items():
            self.send_header(k, v)
        if body or length is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length if length is not None else len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, e):
        extra = "".join("<%s>%s</%s>" % (k, escape(v), k) for k, v in e.extra.items())
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>%s'
                '<RequestId>%s</RequestId><HostId>fake</HostId></Error>' % (e.code, escape(e.message), extra, self.rid))
        hdrs = dict(e.headers)
        if self.command == "HEAD":
            hdrs["Content-Length"] = "0"
            self.send(e.status, b"", hdrs)
        else:
            self.send(e.status, body, hdrs)

    def handle_any(self):
        body = self.read_body()
        with LOCK:
            SEQ["n"] += 1
            n = SEQ["n"]
        self.rid = "REQ%08d" % n
        parts = urlsplit(self.path)
        if parts.path.startswith("/_fake/"):
            return self.control(parts.path[len("/_fake/"):], body)
        host = self.headers.get("Host", "")
        hostname = host.split(":")[0]
        m = re.match(r"^(.+?)\.s3[.-]", hostname)
        raw = parts.path
        if m:
            bucket, key = m.group(1), unquote(raw[1:])
        else:
            seg = raw[1:].split("/", 1)
            bucket, key = unquote(seg[0]), unquote(seg[1]) if len(seg) > 1 else ""
        qpairs = parse_qsl(parts.query, keep_blank_values=True)
        q = dict(qpairs)
        is_sts = raw == "/" and self.command == "POST" and b"Action=GetCallerIdentity" in body
        op = op_name(self.command, key, q, is_sts)
        entry = {"n": n, "op": op, "bucket": bucket, "key": key, "part": q.get("partNumber"),
                 "akid": None, "status": None, "code": None}
        try:
            akid, region, service = verify(self.command, raw, qpairs, list(self.headers.items()), body)
            entry["akid"] = akid
            if service != ("sts" if is_sts else "s3"):
                raise S3Error(400, "AuthorizationHeaderMalformed", "The credential is scoped to the wrong service")
            with LOCK:
                COUNTS[op] = COUNTS.get(op, 0) + 1
            if is_sts:
                status = 200
                self.send(200, '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                          '<GetCallerIdentityResult><Arn>arn:aws:iam::%s:user/test</Arn><UserId>AIDAEXAMPLE</UserId>'
                          '<Account>%s</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>%s'
                          '</RequestId></ResponseMetadata></GetCallerIdentityResponse>' % (ACCOUNT, ACCOUNT, self.rid),
                          ctype="text/xml")
            else:
                allowed(akid, op, bucket, key, q)
                f = fault_for(op, q.get("partNumber"))
                if f and f.get("hang"):
                    time.sleep(f["hang"])   # a client killed meanwhile never sees an answer
                    self.close_connection = True
                    return
                if f and not f.get("complete_200"):
                    raise S3Error(f.get("status", 500), f.get("code", "InternalError"), "injected fault")
                status = self.api(op, bucket, key, q, body, region, akid, f)
        except S3Error as e:
            status = e.status
            entry["code"] = e.code
            self.error(e)
        entry["status"] = status
        if ARGS.log:
            with LOCK:
                with open(ARGS.log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any

    def control(self, what, body):
        with LOCK:
            if what == "faults" and self.command == "POST":
                FAULTS[:] = json.loads(body or b"[]")
                out = {"ok": True}
            elif what == "reset":
                COUNTS.clear()
                out = {"ok": True}
            elif what == "principals" and self.command == "POST":
                doc = json.loads(body or b"{}")
                KEYS[doc["access_key"]] = (doc["secret_key"], {"policy": doc["policy"],
                                                              "token": doc.get("session_token")})
                out = {"ok": True}
            elif what == "principals":
                out = {k: v[1]["policy"] for k, v in KEYS.items() if isinstance(v[1], dict)}
            else:
                out = {
                    "buckets": {name: {"region": b["region"], "settings": b["settings"],
                                       "objects": {k: {"size": len(o["data"]), "etag": o["etag"], "meta": o["meta"]}
                                                   for k, o in b["objects"].items()}}
                                for name, b in BUCKETS.items()},
                    "uploads": {uid: {"bucket": u["bucket"], "key": u["key"], "parts": sorted(u["parts"])}
                                for uid, u in UPLOADS.items()},
                    "counts": dict(COUNTS),
                }
        self.send(200, json.dumps(out, sort_keys=True), ctype="application/json")

    # -- S3 --
    def bucket_of(self, name, region, op):
        if name in ARGS.taken:
            raise S3Error(403, "AccessDenied", "Access Denied")
        b = BUCKETS.get(name)
        if b is None:
            raise S3Error(404, "NoSuchBucket", "The specified bucket does not exist")
        if b["region"] != region:
            if op == "HeadBucket":
                raise S3Error(301, "PermanentRedirect", "", headers={"x-amz-bucket-region": b["region"]})
            raise S3Error(400, "AuthorizationHeaderMalformed",
                          "the region '%s' is wrong; expecting '%s'" % (region, b["region"]),
                          {"Region": b["region"]}, {"x-amz-bucket-region": b["region"]})
        return b

    def api(self, op, bucket, key, q, body, region, akid, fault):
        with LOCK:
            if op == "CreateBucket":
                want = "us-east-1"
                if body:
                    want = text(parse_xml(body), "LocationConstraint", "us-east-1") or "us-east-1"
                if want != region:
                    raise S3Error(400, "IllegalLocationConstraintException",
                                  "The %s location constraint is incompatible with the region %s" % (want, region))
                if bucket in ARGS.taken:
                    raise S3Error(409, "BucketAlreadyExists", "The requested bucket name is not available.")
                if bucket in BUCKETS:
                    raise S3Error(409, "BucketAlreadyOwnedByYou",
                                  "Your previous request to create the named bucket succeeded and you already own it.")
                BUCKETS[bucket] = {"region": want, "settings": {}, "objects": {}}
                self.send(200, b"", {"Location": "/" + bucket})
                return 200
            b = self.bucket_of(bucket, region, op)
            if op == "HeadBucket":
                self.send(200, b"", {"x-amz-bucket-region": b["region"], "Content-Length": "0"})
                return 200
            if op.startswith("Put") and op != "PutObject":
                b["settings"][op[3:]] = self.settings(op, parse_xml(body))
                self.send(200, b"")
                return 200
            if op == "ListObjectsV2":
                return self.list_v2(b, q)
            if op == "DeleteObjects":
                if "content-md5" not in {k.lower() for k in self.headers.keys()}:
                    raise S3Error(400, "InvalidRequest", "Missing required header for this request: Content-Md5")
                keys = [text(o, "Key", "") for o in children(parse_xml(body), "Object")]
                if len(keys) > 1000:
                    raise S3Error(400, "MalformedXML", "more than 1000 keys")
                out = ""
                for k in keys:
                    try:
                        allowed(akid, "DeleteObject", bucket, k, q)
                        b["objects"].pop(k, None)
                    except S3Error as e:
                        out += "<Error><Key>%s</Key><Code>%s</Code><Message>%s</Message></Error>" % (
                            escape(k), e.code, e.message)
                self.send(200, xml_doc("DeleteResult", out))
                return 200
            if op == "PutObject":
                b["objects"][key] = {"data": body, "etag": '"%s"' % hashlib.md5(body).hexdigest(),
                                     "meta": self.meta(), "modified": time.time()}
                self.send(200, b"", {"ETag": b["objects"][key]["etag"]})
                return 200
            if op in ("GetObject", "HeadObject"):
                o = b["objects"].get(key)
                if o is None:
                    raise S3Error(404, "NoSuchKey", "The specified key does not exist.")
                hdrs = {"ETag": o["etag"], "Last-Modified": formatdate(o["modified"], usegmt=True)}
                hdrs.update({"x-amz-meta-" + k: v for k, v in o["meta"].items()})
                data, status = o["data"], 200
                rng = self.headers.get("Range")
                if op == "GetObject" and rng:
                    m = re.match(r"^bytes=(\d+)-(\d*)$", rng)
                    start = int(m.group(1))
                    end = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
                    if start >= len(data):
                        raise S3Error(416, "InvalidRange", "The requested range is not satisfiable")
                    hdrs["Content-Range"] = "bytes %d-%d/%d" % (start, end, len(data))
                    data, status = data[start:end + 1], 206
                if op == "HeadObject":
                    hdrs["Content-Length"] = str(len(data))
                    self.send(200, b"", hdrs, ctype="application/octet-stream")
                else:
                    self.send(status, data, hdrs, ctype="application/octet-stream")
                return status
            if op == "DeleteObject":
                b["objects"].pop(key, None)
                self.send(204, b"")
                return 204
            if op == "CreateMultipartUpload":
                SEQ["upload"] += 1
                uid = "up%04d+/=" % SEQ["upload"]   # characters that must be encoded
                UPLOADS[uid] = {"bucket": bucket, "key": key, "meta": self.meta(), "parts": {}}
                self.send(200, xml_doc("InitiateMultipartUploadResult",
                                       "<Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId>" % (
                                           bucket, escape(key), escape(uid))))
                return 200
            u = UPLOADS.get(q.get("uploadId"))
            if u is None or u["bucket"] != bucket or u["key"] != key:
                raise S3Error(404, "NoSuchUpload", "The specified upload does not exist.")
            if op == "UploadPart":
                pn = int(q.get("partNumber", "0"))
                if not 1 <= pn <= 10000:
                    raise S3Error(400, "InvalidArgument", "Part number must be an integer between 1 and 10000")
                etag = '"%s"' % hashlib.md5(body).hexdigest()
                u["parts"][pn] = (etag, body)
                self.send(200, b"", {"ETag": etag})
                return 200
            if op == "ListParts":
                marker = int(q.get("part-number-marker", "0") or 0)
                maxp = int(q.get("max-parts", "1000"))
                nums = [p for p in sorted(u["parts"]) if p > marker]
                page, more = nums[:maxp], len(nums) > maxp
                out = "<Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId>" % (bucket, escape(key), escape(q["uploadId"]))
                out += "<PartNumberMarker>%d</PartNumberMarker>" % marker
                if page:
                    out += "<NextPartNumberMarker>%d</NextPartNumberMarker>" % page[-1]
                out += "<MaxParts>%d</MaxParts><IsTruncated>%s</IsTruncated>" % (maxp, "true" if more else "false")
                for p in page:
                    etag, data = u["parts"][p]
                    out += "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag><Size>%d</Size></Part>" % (
                        p, escape(etag), len(data))
                self.send(200, xml_doc("ListPartsResult", out))
                return 200
            if op == "AbortMultipartUpload":
                del UPLOADS[q["uploadId"]]
                self.send(204, b"")
                return 204
            if op == "CompleteMultipartUpload":
                if fault and fault.get("complete_200"):
                    self.send(200, '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>injected'
                              '</Message><RequestId>%s</RequestId></Error>' % (fault.get("code", "InternalError"), self.rid))
                    return 200
                listed = children(parse_xml(body), "Part")
                nums = [int(text(p, "PartNumber", "0")) for p in listed]
                if nums != sorted(nums) or len(set(nums)) != len(nums):
                    raise S3Error(400, "InvalidPartOrder", "The list of parts was not in ascending order.")
                datas = []
                for i, p in enumerate(listed):
                    got = u["parts"].get(nums[i])
                    if got is None or got[0] != text(p, "ETag", ""):
                        raise S3Error(400, "InvalidPart", "One or more of the specified parts could not be found.")
                    if i < len(listed) - 1 and len(got[1]) < PART_MIN:
                        raise S3Error(400, "EntityTooSmall",
                                      "Your proposed upload is smaller than the minimum allowed size")
                    datas.append(got[1])
                etag = '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(d).digest() for d in datas)).hexdigest(), len(datas))
                b["objects"][key] = {"data": b"".join(datas), "etag": etag, "meta": u["meta"],
                                     "modified": time.time()}
                del UPLOADS[q["uploadId"]]
                self.send(200, xml_doc("CompleteMultipartUploadResult",
                                       "<Bucket>%s</Bucket><Key>%s</Key><ETag>%s</ETag>" % (bucket, escape(key), escape(etag))))
                return 200
        raise S3Error(400, "NotImplemented", "operation %s not served by this fake" % op)

    def meta(self):
        return {k.lower()[len("x-amz-meta-"):]: v for k, v in self.headers.items()
                if k.lower().startswith("x-amz-meta-")}

    def settings(self, op, root):
        if op == "PutPublicAccessBlock":
            return {local(c.tag): c.text for c in root}
        if op == "PutBucketEncryption":
            return [text(children(r, "ApplyServerSideEncryptionByDefault")[0], "SSEAlgorithm")
                    for r in children(root, "Rule")]
        if op == "PutBucketTagging":
            return {text(t, "Key"): text(t, "Value") for ts in children(root, "TagSet") for t in children(ts, "Tag")}
        if op == "PutBucketLifecycleConfiguration":
            out = []
            for r in children(root, "Rule"):
                ab = children(r, "AbortIncompleteMultipartUpload")
                flt = children(r, "Filter")
                out.append({"ID": text(r, "ID"), "Status": text(r, "Status"),
                            "Prefix": text(flt[0], "Prefix", "") if flt else None,
                            "DaysAfterInitiation": int(text(ab[0], "DaysAfterInitiation")) if ab else None})
            return out
        raise S3Error(400, "NotImplemented", op)

    def list_v2(self, b, q):
        prefix = q.get("prefix", "")
        keys = sorted(k for k in b["objects"] if k.startswith(prefix))
        start = q.get("continuation-token")
        if start:
            try:
                after = base64.b64decode(start).decode()
            except ValueError:
                raise S3Error(400, "InvalidArgument", "The continuation token provided is incorrect")
            keys = [k for k in keys if k > after]
        size = min(int(q.get("max-keys", "1000")), ARGS.page_size)
        page, more = keys[:size], len(keys) > size
        out = "<Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys>" % (
            escape(next(n for n, v in BUCKETS.items() if v is b)), escape(prefix), len(page), size)
        out += "<IsTruncated>%s</IsTruncated>" % ("true" if more else "false")
        if more:
            out += "<NextContinuationToken>%s</NextContinuationToken>" % base64.b64encode(page[-1].encode()).decode()
        for k in page:
            o = b["objects"][k]
            out += ("<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>%s</ETag>"
                    "<Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>") % (
                escape(k), iso_ms(o["modified"]), escape(o["etag"]), len(o["data"]))
        self.send(200, xml_doc("ListBucketResult", out))
        return 200


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--access-key", default="AKIDEXAMPLE")
    ap.add_argument("--secret-key", default="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    ap.add_argument("--restrict", action="append", default=[])
    ap.add_argument("--taken", action="append", default=[])
    ap.add_argument("--page-size", type=int, default=1000)
    ap.add_argument("--faults")
    ap.add_argument("--log")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ap.add_argument("--ec2", help="the booting fake EC2's URL: credentials it minted for nodes "
                                  "are known, with their role's policy")
    ap.add_argument("--listen", default="127.0.0.1",
                    help="address to listen on (the booting fake EC2's host address, so that "
                         "its nodes reach this fake)")
    ARGS = ap.parse_args()
    KEYS[ARGS.access_key] = (ARGS.secret_key, None)
    for r in ARGS.restrict:
        akid, secret, where = r.split(":", 2)
        bucket, _, prefix = where.partition("/")
        KEYS[akid] = (secret, (bucket, prefix))
    if ARGS.faults:
        with open(ARGS.faults, encoding="utf-8") as f:
            FAULTS[:] = json.load(f)
    fakeserve.serve(fakeserve.listen(Handler, addr=ARGS.listen), ARGS.exit_on_stdin_eof)


if __name__ == "__main__":
    main()
