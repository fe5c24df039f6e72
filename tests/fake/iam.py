"""IAM (Query API, Version 2010-05-08) inside the fake EC2 server (tests/fake/ec2.py).

The fake EC2 hands a request here when its SigV4 credential scope names the
service "iam", or its path starts with /_fake/iam, so a test points
AWS_ENDPOINT_URL_IAM at the same port as the fake EC2.

The API (IAM API Reference; the parameter names are checked against
botocore's IAM service model, an implementation gpuctl's authors did not
write): POST / with Content-Type application/x-www-form-urlencoded and the
body Action=OP&Version=2010-05-08&..., signed with SigV4 for the service
"iam" in us-east-1 (the global endpoint's signing region; botocore recomputes
the signature as ec2.py does).  Operations:
  CreateRole (RoleName, AssumeRolePolicyDocument, Description, Path,
    Tags.member.N.Key/Value) -> 409 EntityAlreadyExists for a name taken
  PutRolePolicy (RoleName, PolicyName, PolicyDocument: JSON, else 400
    MalformedPolicyDocument) -> 404 NoSuchEntity without the role
  ListRolePolicies (RoleName) -> PolicyNames/member...
  DeleteRolePolicy (RoleName, PolicyName) -> 404 NoSuchEntity
  DeleteRole (RoleName) -> 404 NoSuchEntity; 409 DeleteConflict while the
    role is in an instance profile or still has inline policies
  CreateInstanceProfile (InstanceProfileName, Path, Tags) -> 409
    EntityAlreadyExists
  AddRoleToInstanceProfile (InstanceProfileName, RoleName) -> 404
    NoSuchEntity; 409 LimitExceeded when the profile holds a role already
    ("Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
  RemoveRoleFromInstanceProfile (InstanceProfileName, RoleName) -> 404
    NoSuchEntity (either missing, or the role not in the profile)
  DeleteInstanceProfile (InstanceProfileName) -> 404 NoSuchEntity; 409
    DeleteConflict while it holds a role
  GetInstanceProfile (InstanceProfileName) -> 404 NoSuchEntity
  ListRoles, ListInstanceProfiles (Marker, MaxItems 1..1000, default 100;
    PathPrefix accepted and ignored: every role is at "/") -> sorted by
    name, Roles/member (InstanceProfiles/member) with the name, Arn and
    Path but no tags (as IAM: ListRoles does not return them),
    IsTruncated and Marker
  ListRoleTags (RoleName), ListInstanceProfileTags (InstanceProfileName)
    -> Tags/member/Key,Value, IsTruncated false; 404 NoSuchEntity
Other actions: 400 InvalidAction; a parameter the model does not have:
400 ValidationError; a required one missing: 400 ValidationError.  Errors
are <ErrorResponse><Error><Type>Sender</Type><Code/><Message/></Error>
<RequestId/></ErrorResponse>.  A bad signature: 403
SignatureDoesNotMatch; an unknown key: 403 InvalidClientTokenId.

EC2 side (ec2.py asks profile_for_run): RunInstances with
IamInstanceProfile.Name accepts only an existing profile, and answers
InvalidParameterValue "Value (NAME) for parameter iamInstanceProfile.name is
invalid. Invalid IAM Instance Profile name" for a missing one; and, as IAM
is eventually consistent, also for the first `ec2_lag` RunInstances that
name a profile made since (default 0).

Control (no signature):
  GET  /_fake/iam   {"roles": {NAME: {"assume", "description", "tags",
                    "policies": {PNAME: DOC as parsed JSON}}},
                    "profiles": {NAME: {"roles": [NAME], "tags"}},
                    "ec2_lag": N, "deny": [ACTION...]}
  POST /_fake/iam   {"ec2_lag": N, "deny": [ACTION...]}: set them (an
                    action in deny answers 403 AccessDenied)
  DELETE /_fake/iam forget every role and profile
Each API request is logged to the fake EC2's --log as one line with
"service": "iam", "action", "region" "us-east-1" and "params".
"""

import datetime
import hmac
import json
import re
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

import botocore.session
from botocore.credentials import Credentials

import fakeserve  # tests/fake/fakeserve.py: SigV4 and the control endpoint

CONTROL = "/_fake/iam"
VERSION = "2010-05-08"
NS = "https://iam.amazonaws.com/doc/%s/" % VERSION
MAX_SKEW_S = 15 * 60
ACCOUNT = "123456789012"

STATE = {"roles": {}, "profiles": {}, "ec2_lag": 0, "deny": [], "lagging": {}}
_MODEL = {}


def model():
    if "m" not in _MODEL:
        _MODEL["m"] = botocore.session.get_session().get_service_model("iam")
    return _MODEL["m"]


class IamError(Exception):
    def __init__(self, code, message, status=400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def scope_service(header_value):
    """The service of an Authorization header's credential scope, or None."""
    parts = fakeserve.auth_params(header_value)
    if parts is None or "Credential" not in parts:
        return None
    scope = parts["Credential"].split("/")
    return scope[3] if len(scope) == 5 else None


def wants(handler, path):
    """Is this request IAM's (an API call or its control)?"""
    return path.startswith(CONTROL) or scope_service(handler.headers.get("Authorization")) == "iam"


def verify(args, now, header_pairs, body):
    headers = fakeserve.header_lists(header_pairs)
    parts = fakeserve.auth_params((headers.get("authorization") or [""])[0])
    if parts is None:
        raise IamError("MissingAuthenticationToken", "Request is missing Authentication Token", 403)
    scope = parts.get("Credential", "").split("/")
    signed = parts.get("SignedHeaders", "").split(";")
    if len(scope) != 5 or scope[4] != "aws4_request" or not parts.get("Signature"):
        raise IamError("IncompleteSignature", "Authorization header is malformed", 403)
    akid, date, region, _, _ = scope
    if akid != args.access_key:
        raise IamError("InvalidClientTokenId", "The security token included in the request is invalid.", 403)
    if region != "us-east-1":
        raise IamError("SignatureDoesNotMatch", "Credential should be scoped to a valid region, not '%s'." % region,
                       403)
    amz_date = (headers.get("x-amz-date") or [""])[0].strip()
    if not re.match(r"^\d{8}T\d{6}Z$", amz_date) or date != amz_date[:8]:
        raise IamError("SignatureDoesNotMatch", "X-Amz-Date and the credential scope disagree", 403)
    for must in ("host", "x-amz-date"):
        if must not in signed:
            raise IamError("SignatureDoesNotMatch", "'%s' must be a signed header." % must.title(), 403)
    for name in signed:
        if name not in headers:
            raise IamError("SignatureDoesNotMatch", "Signed header '%s' is missing." % name, 403)
    token = headers.get("x-amz-security-token")
    if (args.session_token is not None) != bool(token) or \
            (token and (token[0] != args.session_token or "x-amz-security-token" not in signed)):
        raise IamError("InvalidClientTokenId", "The security token included in the request is invalid.", 403)
    _, _, expected = fakeserve.sigv4(Credentials(args.access_key, args.secret_key, args.session_token), "iam",
                                     "us-east-1", set(signed), header_pairs, "POST",
                                     "http://%s/" % headers["host"][0], body, amz_date)
    if not hmac.compare_digest(expected, parts["Signature"]):
        raise IamError("SignatureDoesNotMatch",
                       "The request signature we calculated does not match the signature you provided.", 403)
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    if abs(when - now()) > MAX_SKEW_S:
        raise IamError("RequestExpired", "Signature expired: %s" % amz_date, 403)


def check_params(op, params):
    """Every parameter one of the operation's in botocore's model, the
    required ones present."""
    try:
        shape = model().operation_model(op).input_shape
    except Exception:   # botocore's OperationNotFoundError
        raise IamError("InvalidAction", "Could not find operation %s for version %s" % (op, VERSION))
    for k in params:
        if k in ("Action", "Version"):
            continue
        if k.split(".", 1)[0] not in shape.members:
            raise IamError("ValidationError", "Unknown parameter %s for %s" % (k, op))
    for k in shape.required_members:
        if not params.get(k):
            raise IamError("ValidationError", "1 validation error detected: Value null at '%s' failed to satisfy "
                           "constraint: Member must not be null" % (k[0].lower() + k[1:]))


def tags_of(params):
    out, i = {}, 1
    while "Tags.member.%d.Key" % i in params:
        out[params["Tags.member.%d.Key" % i]] = params.get("Tags.member.%d.Value" % i, "")
        i += 1
    return out


def no_role(name):
    return IamError("NoSuchEntity", "The role with name %s cannot be found." % name, 404)


def no_profile(name):
    return IamError("NoSuchEntity", "Instance Profile %s cannot be found." % name, 404)


def arn(kind, name):
    return "arn:aws:iam::%s:%s/%s" % (ACCOUNT, kind, name)


def create_role(p):
    name = p["RoleName"]
    if name in STATE["roles"]:
        raise IamError("EntityAlreadyExists", "Role with name %s already exists." % name, 409)
    if len(name) > 64 or not re.match(r"^[\w+=,.@-]+$", name):
        raise IamError("ValidationError", "The specified value for roleName is invalid.")
    try:
        assume = json.loads(p["AssumeRolePolicyDocument"])
    except ValueError:
        raise IamError("MalformedPolicyDocument", "This policy contains invalid Json")
    STATE["roles"][name] = {"assume": assume, "description": p.get("Description"), "tags": tags_of(p),
                            "policies": {}}
    return "<CreateRoleResult><Role><RoleName>%s</RoleName><Arn>%s</Arn><Path>/</Path></Role></CreateRoleResult>" % (
        escape(name), escape(arn("role", name)))


def put_role_policy(p):
    role = STATE["roles"].get(p["RoleName"])
    if role is None:
        raise no_role(p["RoleName"])
    try:
        doc = json.loads(p["PolicyDocument"])
    except ValueError:
        raise IamError("MalformedPolicyDocument", "This policy contains invalid Json")
    if not isinstance(doc, dict) or doc.get("Version") != "2012-10-17" or not isinstance(doc.get("Statement"), list):
        raise IamError("MalformedPolicyDocument", "Syntax errors in policy.")
    role["policies"][p["PolicyName"]] = doc
    return ""


def list_role_policies(p):
    role = STATE["roles"].get(p["RoleName"])
    if role is None:
        raise no_role(p["RoleName"])
    names = "".join("<member>%s</member>" % escape(n) for n in sorted(role["policies"]))
    return ("<ListRolePoliciesResult><PolicyNames>%s</PolicyNames><IsTruncated>false</IsTruncated>"
            "</ListRolePoliciesResult>" % names)


def delete_role_policy(p):
    role = STATE["roles"].get(p["RoleName"])
    if role is None:
        raise no_role(p["RoleName"])
    if p["PolicyName"] not in role["policies"]:
        raise IamError("NoSuchEntity", "The role policy with name %s cannot be found." % p["PolicyName"], 404)
    del role["policies"][p["PolicyName"]]
    return ""


def delete_role(p):
    name = p["RoleName"]
    if name not in STATE["roles"]:
        raise no_role(name)
    if any(name in prof["roles"] for prof in STATE["profiles"].values()):
        raise IamError("DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.", 409)
    if STATE["roles"][name]["policies"]:
        raise IamError("DeleteConflict", "Cannot delete entity, must delete policies first.", 409)
    del STATE["roles"][name]
    return ""


def create_instance_profile(p):
    name = p["InstanceProfileName"]
    if name in STATE["profiles"]:
        raise IamError("EntityAlreadyExists", "Instance Profile %s already exists." % name, 409)
    STATE["profiles"][name] = {"roles": [], "tags": tags_of(p)}
    STATE["lagging"][name] = STATE["ec2_lag"]
    return ("<CreateInstanceProfileResult><InstanceProfile><InstanceProfileName>%s</InstanceProfileName><Arn>%s</Arn>"
            "<Path>/</Path><Roles/></InstanceProfile></CreateInstanceProfileResult>"
            % (escape(name), escape(arn("instance-profile", name))))


def add_role(p):
    prof = STATE["profiles"].get(p["InstanceProfileName"])
    if prof is None:
        raise no_profile(p["InstanceProfileName"])
    if p["RoleName"] not in STATE["roles"]:
        raise no_role(p["RoleName"])
    if prof["roles"]:
        raise IamError("LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1", 409)
    prof["roles"].append(p["RoleName"])
    return ""


def remove_role(p):
    prof = STATE["profiles"].get(p["InstanceProfileName"])
    if prof is None:
        raise no_profile(p["InstanceProfileName"])
    if p["RoleName"] not in prof["roles"]:
        raise no_role(p["RoleName"])
    prof["roles"].remove(p["RoleName"])
    return ""


def delete_instance_profile(p):
    name = p["InstanceProfileName"]
    prof = STATE["profiles"].get(name)
    if prof is None:
        raise no_profile(name)
    if prof["roles"]:
        raise IamError("DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.", 409)
    del STATE["profiles"][name]
    STATE["lagging"].pop(name, None)
    return ""


def get_instance_profile(p):
    name = p["InstanceProfileName"]
    prof = STATE["profiles"].get(name)
    if prof is None:
        raise no_profile(name)
    roles = "".join("<member><RoleName>%s</RoleName><Arn>%s</Arn></member>" % (escape(r), escape(arn("role", r)))
                    for r in prof["roles"])
    return ("<GetInstanceProfileResult><InstanceProfile><InstanceProfileName>%s</InstanceProfileName><Arn>%s</Arn>"
            "<Roles>%s</Roles></InstanceProfile></GetInstanceProfileResult>"
            % (escape(name), escape(arn("instance-profile", name)), roles))


def page_of(p, names):
    """(this page, next marker or None) of sorted names: MaxItems (1..1000,
    default 100) from Marker on, as IAM pages its lists."""
    try:
        size = int(p.get("MaxItems", "100"))
    except ValueError:
        raise IamError("ValidationError", "Invalid value for MaxItems")
    if not 1 <= size <= 1000:
        raise IamError("ValidationError", "MaxItems must be between 1 and 1000")
    start = 0
    if p.get("Marker"):
        try:
            start = int(p["Marker"])
        except ValueError:
            raise IamError("ValidationError", "Invalid Marker")
    page = names[start:start + size]
    more = start + size < len(names)
    return page, (str(start + size) if more else None)


def list_of(op, tag, items):
    page, marker = items
    more = "<IsTruncated>%s</IsTruncated>%s" % ("true" if marker else "false",
                                                   "<Marker>%s</Marker>" % marker if marker else "")
    return "<%sResult><%s>%s</%s>%s</%sResult>" % (op, tag, "".join(page), tag, more, op)


def list_roles(p):
    names = sorted(STATE["roles"])
    page, marker = page_of(p, names)
    return list_of("ListRoles", "Roles", (
        ["<member><RoleName>%s</RoleName><Arn>%s</Arn><Path>/</Path></member>" % (escape(n), escape(arn("role", n)))
         for n in page], marker))


def tags_xml(op, tags):
    members = "".join("<member><Key>%s</Key><Value>%s</Value></member>" % (escape(k), escape(v))
                      for k, v in tags.items())
    return "<%sResult><Tags>%s</Tags><IsTruncated>false</IsTruncated></%sResult>" % (op, members, op)


def list_role_tags(p):
    role = STATE["roles"].get(p["RoleName"])
    if role is None:
        raise no_role(p["RoleName"])
    return tags_xml("ListRoleTags", role["tags"])


def list_instance_profiles(p):
    names = sorted(STATE["profiles"])
    page, marker = page_of(p, names)
    return list_of("ListInstanceProfiles", "InstanceProfiles", (
        ["<member><InstanceProfileName>%s</InstanceProfileName><Arn>%s</Arn><Path>/</Path></member>"
         % (escape(n), escape(arn("instance-profile", n))) for n in page], marker))


def list_instance_profile_tags(p):
    prof = STATE["profiles"].get(p["InstanceProfileName"])
    if prof is None:
        raise no_profile(p["InstanceProfileName"])
    return tags_xml("ListInstanceProfileTags", prof["tags"])


OPERATIONS = {
    "CreateRole": create_role, "PutRolePolicy": put_role_policy, "ListRolePolicies": list_role_policies,
    "DeleteRolePolicy": delete_role_policy, "DeleteRole": delete_role,
    "CreateInstanceProfile": create_instance_profile, "AddRoleToInstanceProfile": add_role,
    "RemoveRoleFromInstanceProfile": remove_role, "DeleteInstanceProfile": delete_instance_profile,
    "GetInstanceProfile": get_instance_profile, "ListRoles": list_roles, "ListRoleTags": list_role_tags,
    "ListInstanceProfiles": list_instance_profiles, "ListInstanceProfileTags": list_instance_profile_tags,
}


def profile_for_run(name):
    """RunInstances' check of IamInstanceProfile.Name (ec2.py holds the
    lock): None when it may launch, else the error message."""
    if name in STATE["profiles"] and STATE["lagging"].get(name, 0) <= 0:
        return None
    if name in STATE["profiles"]:
        STATE["lagging"][name] -= 1
    return ("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name"
            % name)


def state():
    return {"roles": json.loads(json.dumps(STATE["roles"])), "profiles": json.loads(json.dumps(STATE["profiles"])),
            "ec2_lag": STATE["ec2_lag"], "deny": list(STATE["deny"])}


def handle(handler, n, parts, body, ctx):
    """Answer it.  ctx: args (the fake's), now, log, lock, request_id."""
    rid = ctx["request_id"](n)
    if parts.path.startswith(CONTROL):
        return control(handler, n, rid, body, ctx)
    try:
        params = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        params = {}
    op = params.get("Action", "")
    entry = {"n": n, "request_id": rid, "service": "iam", "action": op, "region": "us-east-1",
             "params": {k: v for k, v in params.items() if k not in ("Action", "Version")},
             "status": 200, "error": None, "client_token": None, "fault": None}
    status = 200
    try:
        if handler.command != "POST" or parts.path not in ("", "/"):
            raise IamError("InvalidAction", "POST / only")
        ctype = handler.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise IamError("InvalidParameterValue", "Content-Type must be application/x-www-form-urlencoded")
        verify(ctx["args"], ctx["now"], handler.headers.items(), body)
        if params.get("Version") != VERSION:
            raise IamError("InvalidAction", "Could not find operation %s for version %s" % (op, params.get("Version")))
        check_params(op, params)
        if op not in OPERATIONS:
            raise IamError("InvalidAction", "Could not find operation %s for version %s" % (op, VERSION))
        with ctx["lock"]:
            if op in STATE["deny"]:
                raise IamError("AccessDenied", "User: %s is not authorized to perform: iam:%s" %
                               (arn("user", "test"), op), 403)
            result = OPERATIONS[op](params)
        out = ('<?xml version="1.0" encoding="UTF-8"?>\n<%sResponse xmlns="%s">%s<ResponseMetadata><RequestId>%s'
               '</RequestId></ResponseMetadata></%sResponse>' % (op, NS, result, rid, op))
    except IamError as e:
        status = e.status
        entry.update(status=status, error=e.code)
        out = ('<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse xmlns="%s"><Error><Type>Sender</Type>'
               '<Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>'
               % (NS, e.code, escape(e.message), rid))
    with ctx["lock"]:
        ctx["log"](entry)
    fakeserve.send(handler, status, out.encode("utf-8"), "text/xml", [("x-amzn-RequestId", rid)])


def control(handler, n, rid, body, ctx):
    entry = {"n": n, "request_id": rid, "action": "_fake/iam", "region": None, "params": {}, "status": 200,
             "error": None, "client_token": None, "fault": None}

    def delete():
        STATE["roles"].clear()
        STATE["profiles"].clear()
        STATE["lagging"].clear()

    def post(doc):
        if "ec2_lag" in doc:
            STATE["ec2_lag"] = int(doc["ec2_lag"])
        if "deny" in doc:
            STATE["deny"] = list(doc["deny"])

    fakeserve.control(handler, entry, body, ctx, state, delete, post,
                      "POST a JSON object {\"ec2_lag\": N, \"deny\": [...]}")
