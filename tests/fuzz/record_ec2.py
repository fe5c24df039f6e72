#!/usr/bin/env python3
"""tests/fake/ec2.py, recording every answer it gives (the EC2 API and
/_fake/checkip, not the other control endpoints) as one JSON line
{"path", "status", "rid", "body"} appended to $GPUCTL_FUZZ_RECORD, which is
opened anew for each answer (so it may be moved away between scenarios).
Arguments are ec2.py's.  make_seeds.py turns the records into the
fuzz_ec2 corpus."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fake"))
import ec2  # noqa: E402

RECORD = os.environ["GPUCTL_FUZZ_RECORD"]
reply = ec2.Handler.reply


def recording_reply(self, status, body, content_type, rid=None):
    if not self.path.startswith("/_fake/") or self.path.startswith("/_fake/checkip"):
        with ec2.LOCK, open(RECORD, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": self.path, "status": status, "rid": rid,
                                "body": body}) + "\n")
    return reply(self, status, body, content_type, rid)


ec2.Handler.reply = recording_reply
ec2.main()
