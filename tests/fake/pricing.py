#!/usr/bin/python3
"""A fake AWS Price List Query API endpoint for tests (JSON 1.1 protocol).

    tests/fake/pricing.py [--access-key AKID] [--secret-key SECRET]
                          [--session-token TOKEN] [--log FILE]
                          [--exit-on-stdin-eof] [--products FILE]
                          [--page-size N] [--faults FILE] [--clock-offset S]

Listens on 127.0.0.1 at a port the OS chooses and prints "PORT <n>" as the
first line on stdout.  Python 3 standard library plus botocore (Debian's
python3-botocore), whose SigV4Auth recomputes every signature, as
tests/fake/ec2.py does for EC2.  The wire format is botocore's service
model data/pricing/2017-10-15/service-2.json (metadata: protocol "json",
jsonVersion "1.1", targetPrefix "AWSPriceListService", signingName
"pricing") and its examples-1.json (the GetProducts answer: PriceList
items are JSON documents sent as strings).

Options
  --access-key AKID      the one known access key id (default AKIDEXAMPLE)
  --secret-key SECRET    its secret (default wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY)
  --session-token TOKEN  requests must carry and sign X-Amz-Security-Token
                         equal to TOKEN; without it a token is refused
  --log FILE             one JSON object per request (below)
  --exit-on-stdin-eof    exit when stdin closes
  --products FILE        JSON list of product documents in the aws_v1 format
                         (default ../fixtures/aws_pricelist_products.json
                         from this script)
  --page-size N          answers hold at most N items, whatever MaxResults
                         says (default 2, so clients follow NextToken, as
                         they must: the API may answer fewer items than
                         MaxResults); 0 = MaxResults, else 100
  --faults FILE          JSON list of fault rules (below)
  --clock-offset S       the fake's clock runs S seconds ahead of the real one

Requests: POST / with Content-Type application/x-amz-json-1.1 and
X-Amz-Target AWSPriceListService.<Operation>; body a JSON object.  Checks,
in this order:
  * method POST, else 405 UnsupportedHttpVerb (no signature check);
  * Authorization (AWS4-HMAC-SHA256, Credential AKID/DATE/REGION/pricing/
    aws4_request): missing -> 400 MissingAuthenticationTokenException
    "Missing Authentication Token"; unknown AKID -> 403
    UnrecognizedClientException "The security token included in the
    request is invalid."; service not `pricing`, REGION not us-east-1
    (the endpoint's), DATE not X-Amz-Date's day, `host` / `x-amz-date` not
    signed, a signed header missing, a wrong or missing session token, or a
    signature that botocore computes otherwise -> 403
    InvalidSignatureException (the last: "The request signature we
    calculated does not match the signature you provided. ..."); X-Amz-Date
    more than 5 minutes from the fake's clock -> 403
    InvalidSignatureException "Signature expired: X is now earlier than Y
    (Z - 5 min.)" (the JSON services' wording);
  * Content-Type -> 400 SerializationException otherwise (also for a body
    that is not a JSON object); X-Amz-Target with another prefix or an
    unknown operation -> 400 UnknownOperationException;
  * GetProducts: ServiceCode required (400 ValidationException "1
    validation error detected: Value null at 'serviceCode' failed to
    satisfy constraint: Member must not be null"); Filters a list of
    {Type: TERM_MATCH, Field, Value} (another Type -> 400
    InvalidParameterException); FormatVersion aws_v1 when given (else
    InvalidParameterException); MaxResults 1..100 (else
    InvalidParameterException); NextToken one this fake gave for the same
    request, else 400 InvalidNextTokenException.
  A product matches when its serviceCode is ServiceCode and every filter's
  Field is an attribute of product.attributes equal to Value (the field
  "ServiceCode" matches serviceCode); the answer is {"FormatVersion":
  "aws_v1", "PriceList": [each product as a JSON string], "NextToken": ..
  while more pages remain}.  DescribeServices is answered with AmazonEC2
  and the attribute names of the products.
  Errors: {"__type": CODE, "Message": M} for the API's own errors and
  {"__type": "com.amazon.coral.service#CODE", "message": M} for the
  authentication ones, as AWS's JSON services answer; every reply has
  x-amzn-RequestId (00000000-0000-4000-8000-<n, 12 digits>, n the
  request's place in the log) and a Date header (the fake's clock).

Fault rules (--faults FILE): a JSON list of objects
    "target": operation name or "*"          (required)
    one effect: "type": CODE [, "status": S (default 400), "message": M,
                "lower": true (the key "message", not "Message")]
                "body": TEXT [, "status": S (default 502),
                "content_type": T (default text/html),
                "error_type": E (an x-amzn-ErrorType: E header)]
                "drop": true (close the connection without a reply)
    "times": N    the first N matching requests (default every one)
  tried in order after authentication; the first that matches applies.

Log (--log FILE), one JSON object per request:
  {"n": 1, "request_id": "...", "target": "AWSPriceListService.GetProducts",
   "region": "us-east-1", "body": {...the request...}, "status": 200,
   "error": null, "fault": null, "items": 2}
  region is the credential scope's (null when unreadable); items the
  number of PriceList items answered (null for errors); an authentication
  failure adds "auth": {"reason", "canonical_request", "string_to_sign"}.
"""
import argparse
import datetime
import hmac
import json
import os
import re
import threading
import time

from botocore.credentials import Credentials

import fakeserve  # tests/fake/fakeserve.py: listen, announce the port, serve; SigV4

PREFIX = "AWSPriceListService."
SIGN_REGION = "us-east-1"
MAX_SKEW_S = 5 * 60
CORAL = "com.amazon.coral.service#"

ARGS = None
LOCK = threading.RLock()
SEQ = {"n": 0}
FAULTS = []
PRODUCTS = []


def now():
    return time.time() + ARGS.clock_offset


class Fail(Exception):
    def __init__(self, code, message, status=400, coral=False, debug=None):
        super().__init__(message)
        self.code, self.message, self.status, self.coral = code, message, status, coral
        self.debug = debug


def bad_sig(reason, message=None, debug=None):
    return Fail("InvalidSignatureException", message or reason, 403, True, dict(debug or {}, reason=reason))


def scope_of(auth):
    parts = fakeserve.auth_params(auth)
    if parts is None:
        raise Fail("IncompleteSignatureException", "Authorization header requires AWS4-HMAC-SHA256", 400, True,
                   {"reason": "not AWS4-HMAC-SHA256"})
    for k in ("Credential", "SignedHeaders", "Signature"):
        if not parts.get(k):
            raise Fail("IncompleteSignatureException", "Authorization header requires '%s' parameter." % k, 400,
                       True, {"reason": "no " + k})
    scope = parts["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise bad_sig("malformed Credential")
    return scope, parts["SignedHeaders"].split(";"), parts["Signature"]


def verify(method, path, header_pairs, body):
    headers = fakeserve.header_lists(header_pairs)
    auth = headers.get("authorization")
    if not auth:
        raise Fail("MissingAuthenticationTokenException", "Missing Authentication Token", 400, True,
                   {"reason": "no Authorization header"})
    scope, signed, signature = scope_of(auth[0])
    akid, date, region, service, _ = scope
    if akid != ARGS.access_key:
        raise Fail("UnrecognizedClientException", "The security token included in the request is invalid.", 403,
                   True, {"reason": "unknown access key id %s" % akid})
    if service != "pricing":
        raise bad_sig("service %s is not pricing" % service, "Credential should be scoped to correct service: "
                      "'pricing'.")
    if region != SIGN_REGION:
        raise bad_sig("region %s is not %s" % (region, SIGN_REGION), "Credential should be scoped to a valid "
                      "region. ")
    amz_date = (headers.get("x-amz-date") or [""])[0].strip()
    if not re.match(r"^\d{8}T\d{6}Z$", amz_date):
        raise bad_sig("no valid X-Amz-Date")
    if date != amz_date[:8]:
        raise bad_sig("scope date %s is not the X-Amz-Date day" % date)
    signed_set = set(signed)
    for must in ("host", "x-amz-date"):
        if must not in signed_set:
            raise bad_sig("%s is not signed" % must)
    for name in signed:
        if name != name.lower() or name not in headers:
            raise bad_sig("signed header %r missing" % name)
    token = headers.get("x-amz-security-token")
    if ARGS.session_token is not None:
        if not token or token[0] != ARGS.session_token or "x-amz-security-token" not in signed_set:
            raise Fail("UnrecognizedClientException", "The security token included in the request is invalid.",
                       403, True, {"reason": "session token missing, wrong or unsigned"})
    elif token:
        raise Fail("UnrecognizedClientException", "The security token included in the request is invalid.", 403,
                   True, {"reason": "a session token was sent to a fake without one"})
    canonical, to_sign, expected = fakeserve.sigv4(
        Credentials(ARGS.access_key, ARGS.secret_key, ARGS.session_token), "pricing", region, signed_set,
        header_pairs, method, "http://%s%s" % (headers["host"][0], path), body, amz_date)
    debug = {"canonical_request": canonical, "string_to_sign": to_sign}
    if not hmac.compare_digest(expected, signature):
        raise bad_sig("signature mismatch", "The request signature we calculated does not match the signature "
                      "you provided. Check your AWS Secret Access Key and signing method. Consult the service "
                      "documentation for details.", debug)
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    server = datetime.datetime.fromtimestamp(now(), datetime.timezone.utc)
    if abs(when.timestamp() - now()) > MAX_SKEW_S:
        raise bad_sig("X-Amz-Date %s is more than 5 minutes from the fake's clock" % amz_date,
                      "Signature expired: %s is now earlier than %s (%s - 5 min.)"
                      % (amz_date, (server - datetime.timedelta(minutes=5)).strftime("%Y%m%dT%H%M%SZ"),
                         server.strftime("%Y%m%dT%H%M%SZ")))
    return region


def token_for(request, offset):
    key = json.dumps({k: request.get(k) for k in ("ServiceCode", "Filters", "FormatVersion")}, sort_keys=True)
    return "%d:%s" % (offset, hmac.new(b"fake", key.encode(), "sha256").hexdigest()[:16])


def matches(product, service, filters):
    if product.get("serviceCode") != service:
        return False
    attrs = product.get("product", {}).get("attributes", {})
    for f in filters:
        if f["Field"] == "ServiceCode":
            if f["Value"] != service:
                return False
        elif attrs.get(f["Field"]) != f["Value"]:
            return False
    return True


def get_products(req):
    service = req.get("ServiceCode")
    if not isinstance(service, str):
        raise Fail("ValidationException", "1 validation error detected: Value null at 'serviceCode' failed to "
                   "satisfy constraint: Member must not be null")
    filters = req.get("Filters") or []
    if not isinstance(filters, list):
        raise Fail("SerializationException", "Filters must be a list")
    for f in filters:
        if not isinstance(f, dict) or set(f) != {"Type", "Field", "Value"}:
            raise Fail("InvalidParameterException", "Each filter needs Type, Field and Value.")
        if f["Type"] != "TERM_MATCH":
            raise Fail("InvalidParameterException", "Invalid filter type: %s" % f["Type"])
    if req.get("FormatVersion", "aws_v1") != "aws_v1":
        raise Fail("InvalidParameterException", "Invalid FormatVersion: %s" % req.get("FormatVersion"))
    size = req.get("MaxResults", 100)
    if not isinstance(size, int) or not 1 <= size <= 100:
        raise Fail("InvalidParameterException", "MaxResults must be between 1 and 100.")
    if ARGS.page_size:
        size = min(size, ARGS.page_size)
    rows = [p for p in PRODUCTS if matches(p, service, filters)]
    start = 0
    token = req.get("NextToken")
    if token is not None:
        head = str(token).split(":", 1)[0]
        if not head.isdigit() or token_for(req, int(head)) != token or int(head) > len(rows):
            raise Fail("InvalidNextTokenException", "The NextToken is invalid.")
        start = int(head)
    page = rows[start:start + size]
    out = {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p, separators=(",", ":")) for p in page]}
    if start + size < len(rows):
        out["NextToken"] = token_for(req, start + size)
    return out


def describe_services(req):
    names = sorted({k for p in PRODUCTS for k in p.get("product", {}).get("attributes", {})})
    return {"FormatVersion": "aws_v1", "Services": [{"ServiceCode": "AmazonEC2", "AttributeNames": names}]}


OPERATIONS = {"GetProducts": get_products, "DescribeServices": describe_services}


def pick_fault(op):
    with LOCK:
        for rule in FAULTS:
            if rule.get("left") == 0 or rule["target"] not in ("*", op):
                continue
            if rule.get("left") is not None:
                rule["left"] -= 1
            return rule
    return None


class Handler(fakeserve.Handler):
    server_name = "Server"

    def clock(self):
        return now()

    def reply(self, status, text, ctype, rid, error_type=None):
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("x-amzn-RequestId", rid)
        if error_type:
            self.send_header("x-amzn-ErrorType", error_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        body = self.read_body()
        with LOCK:
            SEQ["n"] += 1
            n = SEQ["n"]
        rid = "00000000-0000-4000-8000-%012d" % n
        target = self.headers.get("X-Amz-Target")
        entry = {"n": n, "request_id": rid, "target": target, "region": None, "body": None, "status": None,
                 "error": None, "fault": None, "items": None}
        try:
            entry["body"] = json.loads(body) if body else None
        except ValueError:
            entry["body"] = {"_raw": body.decode("utf-8", "replace")}

        def done(status, text, ctype="application/x-amz-json-1.1", error_type=None):
            entry["status"] = status
            if ARGS.log:
                with LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry) + "\n")
            if status:
                self.reply(status, text, ctype, rid, error_type)

        def fail(e):
            entry["error"] = e.code
            if e.debug:
                entry["auth"] = e.debug
            doc = {"__type": CORAL + e.code, "message": e.message} if e.coral else \
                {"__type": e.code, "Message": e.message}
            done(e.status, json.dumps(doc))

        if self.command != "POST":
            return fail(Fail("UnsupportedHttpVerb", "The HTTP verb %s is not supported" % self.command, 405))
        try:
            try:
                entry["region"] = scope_of(self.headers.get("Authorization", ""))[0][2]
            except Fail:
                pass
            verify("POST", self.path, self.headers.items(), body)
            if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/x-amz-json-1.1":
                raise Fail("SerializationException", "Content-Type must be application/x-amz-json-1.1")
            if not target or not target.startswith(PREFIX) or target[len(PREFIX):] not in OPERATIONS:
                raise Fail("UnknownOperationException", "Unknown operation %s" % target)
            op = target[len(PREFIX):]
            req = entry["body"] if body else {}
            if not isinstance(req, dict) or "_raw" in req:
                raise Fail("SerializationException", "The request body is not a JSON object")
            rule = pick_fault(op)
            if rule is not None:
                if rule.get("drop"):
                    entry["fault"] = "drop"
                    done(0, "")
                    self.close_connection = True
                    return
                if "body" in rule:
                    entry["fault"] = "body"
                    entry["error"] = "HTTP %d" % rule.get("status", 502)
                    return done(rule.get("status", 502), rule["body"], rule.get("content_type", "text/html"),
                                rule.get("error_type"))
                entry["fault"] = "type"
                entry["error"] = rule["type"]
                key = "message" if rule.get("lower") else "Message"
                return done(rule.get("status", 400), json.dumps({"__type": rule["type"],
                                                                  key: rule.get("message", "injected fault")}))
            out = OPERATIONS[op](req)
        except Fail as e:
            return fail(e)
        entry["items"] = len(out.get("PriceList", []))
        done(200, json.dumps(out))

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


def main():
    global ARGS, PRODUCTS
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--access-key", default="AKIDEXAMPLE")
    ap.add_argument("--secret-key", default="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    ap.add_argument("--session-token")
    ap.add_argument("--log")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ap.add_argument("--products", default=os.path.join(here, "..", "fixtures", "aws_pricelist_products.json"))
    ap.add_argument("--page-size", type=int, default=2)
    ap.add_argument("--faults")
    ap.add_argument("--clock-offset", type=float, default=0.0)
    ARGS = ap.parse_args()
    with open(ARGS.products, encoding="utf-8") as f:
        PRODUCTS = json.load(f)
    if ARGS.faults:
        with open(ARGS.faults, encoding="utf-8") as f:
            rules = json.load(f)
        for r in rules if isinstance(rules, list) else [rules]:
            if "target" not in r:
                ap.error("--faults: every rule needs a target")
            r["left"] = r.get("times")
            FAULTS.append(r)
    server = fakeserve.listen(Handler)
    fakeserve.serve(server, ARGS.exit_on_stdin_eof)


if __name__ == "__main__":
    main()
