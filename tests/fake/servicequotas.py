"""Service Quotas (AWS JSON 1.1) inside the fake EC2 server (tests/fake/ec2.py).

The fake EC2 hands a request here when its X-Amz-Target starts with
"ServiceQuotasV20190624." or its path with /_fake/servicequotas, so a test
points AWS_ENDPOINT_URL_SERVICE_QUOTAS at the same port as the fake EC2.

The API (Service Quotas API Reference, GetServiceQuota):
  POST / with Content-Type application/x-amz-json-1.1 and
  X-Amz-Target ServiceQuotasV20190624.GetServiceQuota, body
  {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"}; the answer is
  {"Quota": {"ServiceCode", "ServiceName", "QuotaArn", "QuotaCode",
  "QuotaName", "Value", "Unit", "Adjustable", "GlobalQuota"}}.
  Errors are HTTP 400 with {"__type": CODE, "message": TEXT}:
  NoSuchResourceException for a service or quota code the region does not
  have, AccessDeniedException while the fake is told to deny,
  IllegalArgumentException for a body without the two codes,
  UnknownOperationException for another target.  Every request's SigV4
  signature is recomputed with botocore (signing name "servicequotas", the
  credential scope's region one of the fake EC2's regions) as ec2.py does;
  a bad one answers 403 InvalidSignatureException /
  UnrecognizedClientException.

Values: every region has the EC2 vCPU quotas below at the defaults the EC2
User Guide once listed (Standard 1152 vCPUs, the others 128), until the
test sets others:
  POST   /_fake/servicequotas  {"regions": {"us-east-1": {"L-417A185B": 96}},
                                "deny": false}: merge values in (a value of
                                null removes the quota: NoSuchResource), and
                                deny (or not) every call
  GET    /_fake/servicequotas  the values and the deny switch
  DELETE /_fake/servicequotas  back to the defaults
Each API request is logged to the fake EC2's --log as one line with
"service": "servicequotas", "action" the operation, "region" and "params"
the request body.
"""

import copy
import datetime
import hmac
import json
import re

from botocore.credentials import Credentials

import fakeserve  # tests/fake/fakeserve.py: SigV4 and the control endpoint

TARGET_PREFIX = "ServiceQuotasV20190624."
CONTROL = "/_fake/servicequotas"
MAX_SKEW_S = 15 * 60

# code -> name, default value (vCPUs)
EC2_VCPU_QUOTAS = {
    "L-1216C47A": ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 1152.0),
    "L-74FC7D96": ("Running On-Demand F instances", 128.0),
    "L-DB2E81BA": ("Running On-Demand G and VT instances", 128.0),
    "L-417A185B": ("Running On-Demand P instances", 128.0),
    "L-7295265B": ("Running On-Demand X instances", 128.0),
    "L-1945791B": ("Running On-Demand Inf instances", 128.0),
    "L-2C3B7624": ("Running On-Demand Trn instances", 128.0),
    "L-6E869C2A": ("Running On-Demand DL instances", 128.0),
    "L-43DA4232": ("Running On-Demand High Memory instances", 128.0),
    "L-F7808C92": ("Running On-Demand HPC instances", 128.0),
    "L-34B43A08": ("All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests", 1152.0),
    "L-88CF9481": ("All F Spot Instance Requests", 128.0),
    "L-3819A6DF": ("All G and VT Spot Instance Requests", 128.0),
    "L-7212CCBC": ("All P Spot Instance Requests", 128.0),
    "L-E3A00192": ("All X Spot Instance Requests", 128.0),
    "L-B5D1601B": ("All Inf Spot Instance Requests", 128.0),
    "L-6B0D517C": ("All Trn Spot Instance Requests", 128.0),
    "L-85EED4F7": ("All DL Spot Instance Requests", 128.0),
}

STATE = {"set": {}, "deny": False}   # region -> {code: value or None}


def value_of(region, code):
    """The quota's value in region, None when it has none there."""
    over = STATE["set"].get(region, {})
    if code in over:
        return over[code]
    return EC2_VCPU_QUOTAS[code][1] if code in EC2_VCPU_QUOTAS else None


class SqError(Exception):
    def __init__(self, code, message, status=400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def verify(args, regions, now, header_pairs, body):
    """The credential scope's region, or raise SqError."""
    headers = fakeserve.header_lists(header_pairs)
    parts = fakeserve.auth_params((headers.get("authorization") or [""])[0])
    if parts is None:
        raise SqError("MissingAuthenticationTokenException", "Missing Authentication Token", 403)
    scope = parts.get("Credential", "").split("/")
    signed = parts.get("SignedHeaders", "").split(";")
    if len(scope) != 5 or scope[4] != "aws4_request" or not parts.get("Signature"):
        raise SqError("IncompleteSignatureException", "Authorization header is malformed", 403)
    akid, date, region, service, _ = scope
    if akid != args.access_key:
        raise SqError("UnrecognizedClientException", "The security token included in the request is invalid.", 403)
    if service != "servicequotas":
        raise SqError("InvalidSignatureException",
                      "Credential should be scoped to correct service: 'servicequotas'.", 403)
    if region not in regions:
        raise SqError("InvalidSignatureException",
                      "Credential should be scoped to a valid region, not '%s'." % region, 403)
    amz_date = (headers.get("x-amz-date") or [""])[0].strip()
    if not re.match(r"^\d{8}T\d{6}Z$", amz_date) or date != amz_date[:8]:
        raise SqError("InvalidSignatureException", "X-Amz-Date and the credential scope disagree", 403)
    for must in ("host", "x-amz-date"):
        if must not in signed:
            raise SqError("InvalidSignatureException", "'%s' must be a signed header." % must.title(), 403)
    for name in signed:
        if name not in headers:
            raise SqError("InvalidSignatureException", "Signed header '%s' is missing." % name, 403)
    token = headers.get("x-amz-security-token")
    if (args.session_token is not None) != bool(token) or \
            (token and (token[0] != args.session_token or "x-amz-security-token" not in signed)):
        raise SqError("UnrecognizedClientException", "The security token included in the request is invalid.", 403)
    _, _, expected = fakeserve.sigv4(Credentials(args.access_key, args.secret_key, args.session_token),
                                     "servicequotas", region, set(signed), header_pairs, "POST",
                                     "http://%s/" % headers["host"][0], body, amz_date)
    if not hmac.compare_digest(expected, parts["Signature"]):
        raise SqError("InvalidSignatureException",
                      "The request signature we calculated does not match the signature you provided.", 403)
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    if abs(when - now()) > MAX_SKEW_S:
        raise SqError("InvalidSignatureException", "Signature expired: %s" % amz_date, 403)
    return region


def get_service_quota(region, doc):
    if not isinstance(doc, dict) or not isinstance(doc.get("ServiceCode"), str) or \
            not isinstance(doc.get("QuotaCode"), str):
        raise SqError("IllegalArgumentException", "ServiceCode and QuotaCode are required")
    if STATE["deny"]:
        raise SqError("AccessDeniedException", "User: arn:aws:iam::123456789012:user/test is not "
                      "authorized to perform: servicequotas:GetServiceQuota")
    code = doc["QuotaCode"]
    value = value_of(region, code) if doc["ServiceCode"] == "ec2" else None
    if value is None:
        raise SqError("NoSuchResourceException", "The request failed because the specified service "
                      "or quota does not exist.")
    return {"Quota": {
        "ServiceCode": "ec2", "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
        "QuotaArn": "arn:aws:servicequotas:%s:123456789012:ec2/%s" % (region, code),
        "QuotaCode": code, "QuotaName": EC2_VCPU_QUOTAS.get(code, (code,))[0], "Value": float(value),
        "Unit": "None", "Adjustable": True, "GlobalQuota": False}}


OPERATIONS = {"GetServiceQuota": get_service_quota}


def wants(handler, path):
    """Is this request Service Quotas' (an API call or its control)?"""
    return path.startswith(CONTROL) or \
        handler.headers.get("X-Amz-Target", "").startswith(TARGET_PREFIX)


def handle(handler, n, parts, body, ctx):
    """Answer it.  ctx: args (the fake's), regions, now, log, lock, request_id."""
    rid = ctx["request_id"](n)
    if parts.path.startswith(CONTROL):
        return control(handler, n, rid, body, ctx)
    op = handler.headers.get("X-Amz-Target", "")[len(TARGET_PREFIX):]
    entry = {"n": n, "request_id": rid, "service": "servicequotas", "action": op, "region": None,
             "params": {}, "status": 200, "error": None, "client_token": None, "fault": None}
    try:
        doc = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, ValueError):
        doc = None
    entry["params"] = doc if isinstance(doc, dict) else {}
    status, out = 200, None
    try:
        if handler.command != "POST" or parts.path not in ("", "/"):
            raise SqError("UnknownOperationException", "POST / only")
        ctype = handler.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/x-amz-json-1.1":
            raise SqError("SerializationException", "Content-Type must be application/x-amz-json-1.1")
        entry["region"] = verify(ctx["args"], ctx["regions"], ctx["now"], handler.headers.items(), body)
        if op not in OPERATIONS:
            raise SqError("UnknownOperationException", "Unknown operation %s" % op)
        if doc is None:
            raise SqError("SerializationException", "The body is not JSON")
        with ctx["lock"]:
            out = OPERATIONS[op](entry["region"], doc)
    except SqError as e:
        status, out = e.status, {"__type": e.code, "message": e.message}
        entry.update(status=status, error=e.code)
    with ctx["lock"]:
        ctx["log"](entry)
    reply(handler, status, out, rid)


def control(handler, n, rid, body, ctx):
    entry = {"n": n, "request_id": rid, "action": "_fake/servicequotas", "region": None,
             "params": {}, "status": 200, "error": None, "client_token": None, "fault": None}

    def get():
        return {"regions": copy.deepcopy(STATE["set"]), "deny": STATE["deny"]}

    def delete():
        STATE["set"], STATE["deny"] = {}, False

    def post(doc):
        refused = None
        for region, values in doc.get("regions", {}).items():
            if region not in ctx["regions"] or not isinstance(values, dict):
                refused = 400, {"error": "no region %r, or its values are not an object" % region}
                break
            STATE["set"].setdefault(region, {}).update(values)
        if "deny" in doc:
            STATE["deny"] = bool(doc["deny"])
        return refused

    fakeserve.control(handler, entry, body, ctx, get, delete, post,
                      "POST a JSON object {\"regions\": {...}, \"deny\": bool}",
                      accepts=lambda doc: isinstance(doc.get("regions", {}), dict))


def reply(handler, status, out, rid):
    fakeserve.send(handler, status, json.dumps(out).encode("utf-8"), "application/x-amz-json-1.1",
                   [("x-amzn-RequestId", rid)])
