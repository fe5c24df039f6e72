#!/usr/bin/python3
"""A fake Azure Retail Prices API for tests (Python 3 stdlib only).

Listens on 127.0.0.1 at a port the OS chooses and prints "PORT <n>" as the
first line on stdout, then serves GET /api/retail/prices the way
https://prices.azure.com/api/retail/prices does (learn.microsoft.com "Azure
Retail Prices REST API overview"; shared/reference/azure.md section 5):

  * $filter is parsed as the OData subset the service accepts
    (field eq 'value', and, or, parentheses; '' escapes a quote) and must
    name serviceName, priceType, armRegionName and armSkuName, which is what
    gpuctl sends; values compare case-insensitively; priceType means the
    item's "type".  Anything else is answered 400 with an ARM-style error
    document {"error": {"code", "message"}}.  Every error carries an
    x-ms-request-id header, 00000000-0000-4000-8000-<n, 12 digits> for
    request n.
  * Items come from a fixture file (default: azure_prices.items.json next to
    this script), in file order, --page-size per page (default 2), with
    NextPageLink = the same query plus $skip=<next offset>, or null on the
    last page.  The envelope is the service's: BillingCurrency,
    CustomerEntityId, CustomerEntityType, Items, NextPageLink, Count.

Switches for failure tests (request numbers count every request, from 1):
  --fail-503 N / --fail-429 N   answer the first N requests 503 (then the next
                                N 429) with "Retry-After: <--retry-after>"
  --retry-after V               the Retry-After value (default 0)
  --invalid-json-at K           request K gets a body that is not JSON
  --no-items-at K               request K gets an envelope without Items
  --currency CUR                serve every item (and the envelope) in CUR
  --loose                       ignore the priceType clause, so that
                                DevTestConsumption and Reservation rows reach
                                the client (whose own rules must drop them)
  --trailing-empty-pages        keep a NextPageLink on the last page, which
                                leads to an empty page (with a link again)
  --endless                     every page links to another non-empty page

--log FILE appends one tab-separated line per request:
  METHOD  PATH  decoded-$filter  $skip-or-"-"  STATUS  TARGET-LENGTH
--exit-on-stdin-eof makes the server exit when its stdin closes, so a test
that dies leaves no server behind.
"""
import argparse
import json
import os
import re
from http.server import BaseHTTPRequestHandler
from urllib.parse import quote, unquote

import fakeserve  # tests/fake/fakeserve.py: listen, announce the port, serve

ARGS = None
ITEMS = []
STATE = {"requests": 0}

FIELDS = {
    "serviceName": "serviceName", "serviceFamily": "serviceFamily",
    "armRegionName": "armRegionName", "location": "location",
    "armSkuName": "armSkuName", "skuName": "skuName",
    "productName": "productName", "meterName": "meterName",
    "meterId": "meterId", "skuId": "skuId", "productId": "productId",
    "serviceId": "serviceId", "priceType": "type",
}
REQUIRED = ("serviceName", "priceType", "armRegionName", "armSkuName")
TOKEN = re.compile(r"\s*(?:(\()|(\))|'((?:[^']|'')*)'|([A-Za-z_][A-Za-z0-9_]*))")


class FilterError(Exception):
    pass


def tokenize(text):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise FilterError("unexpected character at position %d" % pos)
        pos = m.end()
        if m.group(1):
            out.append(("(", None))
        elif m.group(2):
            out.append((")", None))
        elif m.group(3) is not None:
            out.append(("str", m.group(3).replace("''", "'")))
        else:
            out.append(("id", m.group(4)))
    return out


class Parser:
    """expr := conj ('or' conj)*; conj := prim ('and' prim)*;
    prim := '(' expr ')' | FIELD 'eq' 'string'"""

    def __init__(self, tokens):
        self.t, self.i, self.fields = tokens, 0, set()

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, kind, value=None):
        tok = self.peek()
        if tok[0] != kind or (value is not None and tok[1] != value):
            raise FilterError("expected %s at token %d" % (value or kind, self.i + 1))
        self.i += 1
        return tok[1]

    def expr(self):
        terms = [self.conj()]
        while self.peek() == ("id", "or"):
            self.i += 1
            terms.append(self.conj())
        return ("or", terms) if len(terms) > 1 else terms[0]

    def conj(self):
        terms = [self.prim()]
        while self.peek() == ("id", "and"):
            self.i += 1
            terms.append(self.prim())
        return ("and", terms) if len(terms) > 1 else terms[0]

    def prim(self):
        if self.peek()[0] == "(":
            self.i += 1
            e = self.expr()
            self.take(")")
            return e
        field = self.take("id")
        if field not in FIELDS:
            raise FilterError("unknown field '%s'" % field)
        self.take("id", "eq")
        value = self.take("str")
        self.fields.add(field)
        return ("eq", field, value)

    def parse(self):
        e = self.expr()
        if self.i != len(self.t):
            raise FilterError("unexpected token %d" % (self.i + 1))
        return e


def matches(node, item):
    kind = node[0]
    if kind == "or":
        return any(matches(n, item) for n in node[1])
    if kind == "and":
        return all(matches(n, item) for n in node[1])
    _, field, value = node
    if field == "priceType" and ARGS.loose:
        return True
    have = item.get(FIELDS[field])
    return isinstance(have, str) and have.lower() == value.lower()


def parse_query(query):
    params = []
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        params.append((unquote(name), unquote(value)))
    return params


def log_line(fields):
    if ARGS.log:
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write("\t".join(fields) + "\n")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):  # keep test output clean
        pass

    def reply(self, status, body, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, code, message, log, headers=()):
        log_line(log + [str(status), str(len(self.path))])
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        # the service's request id, numbered by the request (from 1)
        rid = ("x-ms-request-id", "00000000-0000-4000-8000-%012d" % STATE["requests"])
        self.reply(status, body, list(headers) + [rid])

    def do_GET(self):
        STATE["requests"] += 1
        n = STATE["requests"]
        path, _, query = self.path.partition("?")
        params = parse_query(query)
        names = [p[0] for p in params]
        flt = dict(params).get("$filter")
        skip_text = dict(params).get("$skip")
        log = ["GET", path, flt if flt is not None else "-", skip_text or "-"]

        if path != "/api/retail/prices":
            return self.error(404, "NotFound", "no such path", log)
        if n <= ARGS.fail_503:
            return self.error(503, "ServiceUnavailable", "try again later", log,
                              [("Retry-After", ARGS.retry_after)])
        if n <= ARGS.fail_503 + ARGS.fail_429:
            return self.error(429, "TooManyRequests", "slow down", log,
                              [("Retry-After", ARGS.retry_after)])
        unknown = [x for x in names
                   if x not in ("$filter", "$skip", "api-version", "currencyCode", "meterRegion")]
        if unknown or len(set(names)) != len(names):
            return self.error(400, "BadRequest", "unexpected query parameter", log)
        if flt is None:
            return self.error(400, "BadRequest", "$filter is required by this fake", log)
        try:
            p = Parser(tokenize(flt))
            tree = p.parse()
            missing = [f for f in REQUIRED if f not in p.fields]
            if missing:
                raise FilterError("filter lacks %s" % ", ".join(missing))
        except FilterError as e:
            return self.error(400, "InvalidFilter", "Invalid OData filter: %s" % e, log)
        try:
            skip = int(skip_text) if skip_text is not None else 0
            if skip < 0:
                raise ValueError
        except ValueError:
            return self.error(400, "BadRequest", "invalid $skip", log)

        found = [it for it in ITEMS if matches(tree, it)]
        size = ARGS.page_size
        if ARGS.endless and found:
            start = skip % len(found)
            page = (found * 2)[start:start + size]
            more = True
        else:
            page = found[skip:skip + size]
            more = skip + size < len(found) or ARGS.trailing_empty_pages
        if ARGS.currency != "USD":
            page = [dict(it, currencyCode=ARGS.currency) for it in page]
        next_link = None
        if more:
            kept = [(k, v) for k, v in params if k != "$skip"] + [("$skip", str(skip + size))]
            next_link = "http://127.0.0.1:%d%s?%s" % (
                self.server.server_address[1], path,
                "&".join("%s=%s" % (k, quote(v, safe="")) for k, v in kept))
        doc = {
            "BillingCurrency": ARGS.currency,
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": page,
            "NextPageLink": next_link,
            "Count": len(page),
        }
        if n == ARGS.no_items_at:
            del doc["Items"]
        body = json.dumps(doc, indent=2).encode()
        if n == ARGS.invalid_json_at:
            body = b'{"BillingCurrency": "USD", "Items": [ {"retailPrice": 0.526,'
        log_line(log + ["200", str(len(self.path))])
        self.reply(200, body)


def main():
    global ARGS, ITEMS
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", default=os.path.join(here, "azure_prices.items.json"))
    ap.add_argument("--log")
    ap.add_argument("--page-size", type=int, default=2)
    ap.add_argument("--fail-503", type=int, default=0)
    ap.add_argument("--fail-429", type=int, default=0)
    ap.add_argument("--retry-after", default="0")
    ap.add_argument("--invalid-json-at", type=int, default=0)
    ap.add_argument("--no-items-at", type=int, default=0)
    ap.add_argument("--currency", default="USD")
    ap.add_argument("--loose", action="store_true")
    ap.add_argument("--trailing-empty-pages", action="store_true")
    ap.add_argument("--endless", action="store_true")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ARGS = ap.parse_args()
    with open(ARGS.items, encoding="utf-8") as f:
        ITEMS = json.load(f)["Items"]
    server = fakeserve.listen(Handler, threaded=False)
    fakeserve.serve(server, ARGS.exit_on_stdin_eof)


if __name__ == "__main__":
    main()
