"""Boot mode of the fake EC2 (tests/fake/ec2.py --boot DIR): its instances
run their user-data for real, each as a node of its own on this machine.

Python 3 standard library plus PyYAML (Debian's python3-yaml), util-linux
(unshare, setpriv, nsenter), iproute2 (ip), OpenSSH (sshd, ssh-keygen).
Needs root.  Nothing of it is reached from outside loopback and the
fake's own bridge.

The network (one per fake process)
  A network namespace, held by a `sleep` process, holds a bridge (br0); a
  veth pair joins it to this machine: gpe<PORT> here (PORT = the fake's
  port, so two fakes never share a name), `uplink` on the bridge.  The
  subnet is a /24 of 100.64.0.0/10 picked from the port (the next one
  when this machine already routes it): the host side is .1, instance n
  (the fake's instance counter) is .((n - 1) mod 253 + 2).  That address
  is the instance's private IP and, when it has a public one, its public
  IP too (DescribeInstances shows both), set at RunInstances.

A node (one per instance, started when the instance first shows
`running`, i.e. at the DescribeInstances that moves it there)
  * `unshare --net --mount --uts --pid --fork --mount-proc`: its own
    network (eth0 on the bridge, default route via the host side, lo with
    169.254.169.254), its own mounts, host name (ip-A-B-C-D, EC2's form)
    and processes (so a job's sweep of /proc sees only its own node).
  * Mounts, over the host's tree (the node uses this machine's /usr, so
    python3 with torch runs there): per-instance directories under
    DIR/<instance id>/fs over /var/lib/gpuctl, /root, /tmp, /run and, when
    this machine has the user `ubuntu`, /home/ubuntu; DIR/hosts over
    /etc/hosts (every booted node's address and name, rewritten in place
    as nodes boot); a FIFO over /dev/console, read into
    DIR/<id>/console; DIR/sbin over /usr/local/sbin and the stand-in
    (below) over the files /usr/sbin/{shutdown,poweroff,halt,reboot}
    point at (on Debian: /usr/bin/systemctl).  Mount points this machine
    lacks (/var/lib/gpuctl) are made once, empty, and left.
  * An sshd on port 22 with a host key made for the instance (ed25519)
    and the instance's KeyName's imported public key in root's (and
    ubuntu's) ~/.ssh/authorized_keys; its log is DIR/<id>/sshd.log.  The
    host key is printed on the console in cloud-init's block
    (-----BEGIN SSH HOST KEY KEYS----- .. -----END SSH HOST KEY KEYS-----)
    after runcmd, as real cloud-init does in its final stage
    (keys-to-console runs after scripts-user): a runcmd that runs the whole
    job delays it until the job has ended, so gpuctl's bootstrap prints the
    keys itself when it starts (templates/bootstrap.sh).
  * cloud-init, as far as gpuctl uses it: the user-data (gzip-compressed
    or not) must be `#cloud-config` with only write_files (path,
    permissions, owner root:root or root, content, encoding b64 / base64 /
    gz / gzip / gz+b64 / gzip+base64 ..) and runcmd (a list of argv lists
    or of strings run by `sh -c`).  Anything else is refused: the fake
    writes "boot refused: .." to its stderr, its --log (action
    "_boot/refused") and the instance's console, and the node runs sshd
    only.  write_files first, then each runcmd in turn, as root, in /, with
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin and
    no HOME, output appended to the console.
  * The console (GetConsoleOutput) is what the fake recorded for the
    instance (/_fake/node, /_fake/finish) followed by DIR/<id>/console.
  * IMDSv2 at 169.254.169.254:80 inside the node, served by the fake
    itself (a socket opened in the node's network namespace): PUT
    /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds 1..21600, no
    X-Forwarded-For), then GETs with X-aws-ec2-metadata-token (401
    without): meta-data/ local-ipv4, public-ipv4 (404 without one),
    instance-life-cycle, spot/instance-action (404 until /_fake/preempt
    with notice_s gave the instance a notice: then AWS's JSON
    {"action": "terminate", "time": "...Z"}),
    instance-id, ami-launch-index, instance-type, local-hostname,
    hostname, placement/region, placement/availability-zone, and with an
    IamInstanceProfile: iam/security-credentials/ (the role name: the
    profile's role when the fake knows it, else the profile's name) and
    iam/security-credentials/ROLE (credentials minted for the instance at
    boot, listed at GET /_fake/instance_credentials); /latest/user-data.
  * Stand-ins for shutdown, poweroff, halt (and systemctl poweroff/halt):
    they append "EPOCH NAME ARGS" to the node's /run/fake-ec2/power.log
    (DIR/<id>/fs/run/fake-ec2/power.log) and signal the node's init, which
    stops every process of the node (SIGTERM, 30 s, SIGKILL) and ends; the
    fake then moves the instance to shutting-down -> terminated
    (Client.InstanceInitiatedShutdown; `stopped` when it was launched with
    InstanceInitiatedShutdownBehavior=stop).  `shutdown -h +N` powers off
    N minutes later, `shutdown -c` cancels that; a time of another form,
    reboot (and shutdown -r) are refused (exit 1, logged).
  * TerminateInstances stops the node the same way (SIGTERM first);
    /_fake/reset and the fake's end kill nodes at once.  Every process of
    a node dies with the fake (a parent-death signal at each step), and
    with them the node's namespaces, veth and mounts: nothing is left when
    the fake ends, however it ends.
  * FAKE_BOOT_DEBUG=1 in the fake's environment: a timed line on its
    stderr at each step of a boot.
"""
import base64
import binascii
import ctypes
import gzip
import json
import os
import queue
import secrets
import select
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fakeserve  # tests/fake/fakeserve.py: send

CLONE_NEWNET = 0x40000000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
IMDS_ADDR = "169.254.169.254"
NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Seconds a stopping node's processes have between SIGTERM and SIGKILL.  A
# real instance shuts down through systemd, whose DefaultTimeoutStopSec is
# 90 s (systemd-system.conf(5)); a bootstrap saves its checkpoints then.
STOP_GRACE_S = 30.0
NODE_INSTANCE_DIR = "/run/fake-ec2/instance"   # DIR/<id> as the node sees it
# where a node's directories go: (path in the node, directory under fs/)
NODE_DIRS = [("/var/lib/gpuctl", "var-lib-gpuctl"), ("/root", "root"), ("/tmp", "tmp"), ("/run", "run")]
ENCODINGS = {None: (), "text/plain": (), "b64": ("b64",), "base64": ("b64",), "gz": ("gz",),
             "gzip": ("gz",), "gz+b64": ("b64", "gz"), "gz+base64": ("b64", "gz"),
             "gzip+b64": ("b64", "gz"), "gzip+base64": ("b64", "gz")}
FILE_KEYS = {"path", "permissions", "owner", "content", "encoding"}


def libc():
    return ctypes.CDLL(None, use_errno=True)


class Refused(Exception):
    """User-data the fake does not boot."""


def parse_user_data(raw):
    """gpuctl's #cloud-config (bytes, maybe gzip) -> {"files": [..], "runcmd": [[argv]..]}."""
    import yaml   # Debian's python3-yaml; only boot mode needs it
    if raw is None:
        raise Refused("the instance has no user-data")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise Refused("gzip user-data does not decompress: %s" % e)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("user-data is not UTF-8 text")
    if text.split("\n", 1)[0].rstrip() != "#cloud-config":
        raise Refused("user-data does not start with #cloud-config (first line %r)" % text.split("\n", 1)[0][:60])
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise Refused("#cloud-config is not YAML: %s" % e)
    if not isinstance(doc, dict):
        raise Refused("#cloud-config is not a mapping")
    extra = sorted(set(doc) - {"write_files", "runcmd"})
    if extra:
        raise Refused("#cloud-config keys the fake does not run: %s" % ", ".join(map(str, extra)))
    files = []
    for i, f in enumerate(doc.get("write_files") or []):
        if not isinstance(f, dict):
            raise Refused("write_files[%d] is not a mapping" % i)
        bad = sorted(set(f) - FILE_KEYS)
        if bad:
            raise Refused("write_files[%d]: keys the fake does not handle: %s" % (i, ", ".join(bad)))
        path = f.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise Refused("write_files[%d]: path %r is not absolute" % (i, path))
        if f.get("owner", "root:root") not in ("root", "root:root"):
            raise Refused("write_files[%d]: owner %r (the fake writes as root:root only)" % (i, f["owner"]))
        perm = str(f.get("permissions", "0644"))
        try:
            mode = int(perm, 8)
        except ValueError:
            raise Refused("write_files[%d]: permissions %r are not octal" % (i, perm))
        enc = f.get("encoding")
        if enc not in ENCODINGS:
            raise Refused("write_files[%d]: encoding %r" % (i, enc))
        data = f.get("content", "")
        if not isinstance(data, str):
            raise Refused("write_files[%d]: content is not text" % i)
        data = data.encode("utf-8")
        try:
            for step in ENCODINGS[enc]:
                data = base64.b64decode(data, validate=False) if step == "b64" else gzip.decompress(data)
        except (binascii.Error, OSError, EOFError) as e:
            raise Refused("write_files[%d]: content does not decode as %s: %s" % (i, enc, e))
        files.append({"path": path, "mode": mode, "data": base64.b64encode(data).decode("ascii")})
    runcmd = []
    for i, c in enumerate(doc.get("runcmd") or []):
        if isinstance(c, str):
            runcmd.append(["/bin/sh", "-c", c])
        elif isinstance(c, list) and c and all(isinstance(a, (str, int, float)) for a in c):
            runcmd.append([str(a) for a in c])
        else:
            raise Refused("runcmd[%d] is neither a string nor a list of words: %r" % (i, c))
    return {"files": files, "runcmd": runcmd}


def run(argv, **kw):
    """Run a command; raise RuntimeError with its stderr when it fails."""
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), p.returncode,
                                                p.stderr.decode("utf-8", "replace").strip()))
    return p.stdout.decode("utf-8", "replace")


def prerequisites():
    """Why boot mode cannot run here, or None."""
    if os.geteuid() != 0:
        return "boot mode needs root"
    for tool in ("unshare", "setpriv", "nsenter", "ip", "ssh-keygen"):
        if shutil.which(tool) is None:
            return "boot mode needs %s" % tool
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "boot mode needs /usr/sbin/sshd"
    return None


# ---------------------------------------------------------------- IMDS ----

class ImdsHandler(BaseHTTPRequestHandler):
    """IMDSv2 of one node (server.node is its Node)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body=b"", ctype="text/plain"):
        fakeserve.send(self, status, body, ctype)

    def do_PUT(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if self.path != "/latest/api/token":
            return self.reply(404)
        if self.headers.get("X-Forwarded-For") is not None:
            return self.reply(403)
        ttl = (self.headers.get("X-aws-ec2-metadata-token-ttl-seconds") or "").strip()
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return self.reply(400)
        token = "AQAEAFakeBoot" + secrets.token_urlsafe(24)
        self.server.node.tokens.add(token)
        return self.reply(200, token.encode())

    def do_GET(self):
        node = self.server.node
        if self.headers.get("X-aws-ec2-metadata-token") not in node.tokens:
            return self.reply(401)
        path = self.path.split("?", 1)[0]
        if path == "/latest/user-data":
            return self.reply(200, node.user_data or b"", "application/octet-stream") if node.user_data \
                else self.reply(404)
        if not path.startswith("/latest/meta-data/"):
            return self.reply(404)
        key = path[len("/latest/meta-data/"):]
        md = node.metadata()
        creds = node.credentials
        if creds is not None:
            if key == "iam/security-credentials/":
                return self.reply(200, creds["role"].encode())
            if key == "iam/security-credentials/" + creds["role"]:
                doc = {"Code": "Success", "LastUpdated": creds["issued"], "Type": "AWS-HMAC",
                       "AccessKeyId": creds["access_key_id"], "SecretAccessKey": creds["secret_access_key"],
                       "Token": creds["token"], "Expiration": creds["expiration"]}
                return self.reply(200, json.dumps(doc, indent=2).encode(), "text/plain")
        if md.get(key) is None:
            return self.reply(404)
        return self.reply(200, str(md[key]).encode())

    do_POST = do_DELETE = do_PATCH = lambda self: self.reply(405)


class ImdsServer(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self):
        # HTTPServer's own asks DNS for the address's name (socket.getfqdn),
        # which inside a node without DNS waits for its timeout
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request, client_address):
        pass


def serve_in_netns(pid, node):
    """An IMDS server for node on 169.254.169.254:80 in the network namespace of pid."""
    box = queue.Queue()

    def main():
        try:
            fd = os.open("/proc/%d/ns/net" % pid, os.O_RDONLY)
            try:
                if libc().setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns")
            finally:
                os.close(fd)
            srv = ImdsServer((IMDS_ADDR, 80), ImdsHandler)
            srv.node = node
        except Exception as e:   # noqa: BLE001 - reported to the booter
            box.put(e)
            return
        box.put(srv)
        srv.serve_forever(poll_interval=0.1)
        srv.server_close()   # this thread leaves the namespace as it ends

    threading.Thread(target=main, daemon=True, name="imds-%d" % pid).start()
    got = box.get()
    if isinstance(got, Exception):
        raise got
    return got


# ---------------------------------------------------------------- nodes ----

class Node:
    def __init__(self, inst, user_data, key, creds):
        self.id = inst["id"]
        self.n = inst["n"]
        self.ip = inst["private_ip"]
        self.public_ip = inst["public_ip"]
        self.hostname = "ip-" + self.ip.replace(".", "-")
        self.info = {"instance-id": inst["id"], "ami-launch-index": inst["launch_index"],
                     "instance-type": inst["type"], "placement/region": inst["region"],
                     "placement/availability-zone": inst["zone"], "ami-id": inst["image_id"]}
        self.user_data = user_data
        self.key = key
        self.credentials = creds
        self.tokens = set()
        self.inst = None       # the fake's live record of the instance
        self.proc = None       # the unshare process
        self.imds = None
        self.state = "booting"  # booting | up | stopping | ended
        self.stopped_by = None  # None (the node itself), "api", "fake"
        self.error = None
        self.done = threading.Event()

    def metadata(self):
        md = dict(self.info)
        md.update({"local-ipv4": self.ip, "local-hostname": self.hostname, "hostname": self.hostname,
                   "public-ipv4": self.public_ip})
        inst = self.inst or {}
        md["instance-life-cycle"] = "spot" if inst.get("lifecycle") == "spot" else "on-demand"
        if inst.get("notice"):   # aws.md 5.1: 404 until EC2 schedules an interruption
            md["spot/instance-action"] = json.dumps(inst["notice"])
        return md


STAND_IN = r"""#!/bin/bash
# Stand-in of the fake EC2's nodes for shutdown, poweroff, halt, reboot and
# systemctl (tests/fake/ec2_boot.py): records the request and stops the
# node through its init (pid 1 of the node), never this machine.
name=${0##*/}
rec=/run/fake-ec2
mkdir -p "$rec"
record() { printf '%s %s\n' "$(date +%s)" "$*" >>"$rec/power.log"; }
record "$name $*"
refuse() { echo "fake EC2 node: $* is not simulated" >&2; record "refused: $*"; exit 1; }
now() { echo "fake EC2 node: powering off ($name)" >/dev/console 2>/dev/null; kill -TERM 1; exit 0; }
if [ "$name" = systemctl ]; then
  case ${1:-} in
    poweroff | halt) name=$1; shift ;;
    *) refuse "systemctl $*" ;;
  esac
fi
case $name in
  poweroff | halt) now ;;
  reboot) refuse reboot ;;
  shutdown)
    when=now
    for a in "$@"; do
      case $a in
        -h | -P | -H | --poweroff | --halt | --no-wall) ;;
        -r | --reboot) refuse "shutdown $*" ;;
        -c)
          [ -f "$rec/scheduled.pid" ] && kill "$(cat "$rec/scheduled.pid")" 2>/dev/null
          rm -f "$rec/scheduled.pid"
          exit 0 ;;
        -*) refuse "shutdown $*" ;;
        *) when=$a; break ;;
      esac
    done
    case $when in
      now | +0) now ;;
      +[0-9]*)
        [ -f "$rec/scheduled.pid" ] && kill "$(cat "$rec/scheduled.pid")" 2>/dev/null
        setsid bash -c "sleep $(( ${when#+} * 60 )) && exec $0 -h now" </dev/null >/dev/null 2>&1 &
        echo $! >"$rec/scheduled.pid"
        exit 0 ;;
      *) refuse "shutdown at '$when'" ;;
    esac ;;
  *) refuse "$name" ;;
esac
"""


class Booter:
    """The network of one fake and its nodes.  Processes are started by one
    long-lived thread (a parent-death signal follows the thread that
    forked), so they all die with the fake."""

    def __init__(self, root, port, log, on_power_off, role_of=None):
        why = prerequisites()
        if why:
            raise RuntimeError(why)
        self.root = os.path.abspath(root)
        self.port = port
        self.log = log                    # log(entry dict)
        self.on_power_off = on_power_off  # on_power_off(instance id), the fake's state change
        self.role_of = role_of or (lambda profile: profile.rsplit("/", 1)[-1])
        self.nodes = {}                   # instance id -> Node
        self.pending = {}                 # instance id -> (user-data bytes, public key) until boot
        self.lock = threading.RLock()
        self.jobs = queue.Queue()
        self.boots = 0                    # nodes booted so far (names their veth on the bridge)
        self.has_ubuntu = os.path.isdir("/home/ubuntu") and self._user_exists("ubuntu")
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(os.path.join(self.root, "sbin"), exist_ok=True)
        for name in ("shutdown", "poweroff", "halt", "reboot", "systemctl"):
            p = os.path.join(self.root, "sbin", name)
            with open(p, "w") as f:
                f.write(STAND_IN)
            os.chmod(p, 0o755)
        self.hosts_path = os.path.join(self.root, "hosts")
        self._write_hosts()
        threading.Thread(target=self._worker, daemon=True, name="booter").start()
        self.call(self._make_network)

    @staticmethod
    def _user_exists(name):
        import pwd
        try:
            pwd.getpwnam(name)
            return True
        except KeyError:
            return False

    # -- the booter thread --
    def _worker(self):
        while True:
            fn, box = self.jobs.get()
            try:
                out = fn()
            except Exception as e:   # noqa: BLE001 - handed to the caller
                out = e
            if box is not None:
                box.put(out)

    def call(self, fn):
        """Run fn on the booter thread and return its result (or raise)."""
        box = queue.Queue()
        self.jobs.put((fn, box))
        out = box.get()
        if isinstance(out, Exception):
            raise out
        return out

    def spawn(self, argv, **kw):
        return subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--"] + argv, **kw)

    def _make_network(self):
        k = self.port % 16384
        for _ in range(16384):
            prefix = "100.%d.%d" % (64 + (k >> 8), k & 255)
            if not run(["ip", "-4", "route", "show", "to", "match", prefix + ".1"]).strip().startswith(prefix) \
                    and not run(["ip", "-4", "route", "show", prefix + ".0/24"]).strip():
                break
            k = (k + 1) % 16384
        self.prefix = prefix
        self.host_ip = prefix + ".1"
        self.uplink = "gpe%d" % self.port
        self.vpc = self.spawn(["unshare", "--net", "--", "sleep", "infinity"], stdin=subprocess.DEVNULL)
        ns = "/proc/%d/ns/net" % self.vpc.pid
        for _ in range(200):   # until unshare has made the namespace and exec'd sleep
            try:
                if os.readlink(ns) != os.readlink("/proc/self/ns/net"):
                    break
            except OSError:
                pass
            time.sleep(0.005)
        run(["ip", "link", "add", self.uplink, "type", "veth", "peer", "name", "uplink", "netns", str(self.vpc.pid)])
        self._batch(self.vpc.pid, "link set lo up\nlink add br0 type bridge\nlink set br0 up\n"
                               "link set uplink master br0\nlink set uplink up\n")
        run(["ip", "addr", "add", self.host_ip + "/24", "dev", self.uplink])
        run(["ip", "link", "set", self.uplink, "up"])

    @staticmethod
    def _batch(pid, batch):
        p = subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % pid, "ip", "-batch", "-"], input=batch.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise RuntimeError("ip -batch in %d: %s" % (pid, p.stderr.decode("utf-8", "replace").strip()))

    def address(self, n):
        """Instance n's address on the bridge."""
        return "%s.%d" % (self.prefix, (n - 1) % 253 + 2)

    def _write_hosts(self):
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
        with self.lock:
            for node in self.nodes.values():
                if node.state in ("booting", "up"):
                    lines.append("%s %s" % (node.ip, node.hostname))
        data = ("\n".join(lines) + "\n").encode()
        # in place: the nodes see this file through bind mounts
        fd = os.open(self.hosts_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        finally:
            os.close(fd)

    # -- called by the fake, under its lock --
    def launched(self, inst, user_data, public_key):
        """RunInstances made inst: note what its boot needs."""
        with self.lock:
            self.pending[inst["id"]] = (user_data, public_key)

    def on_state(self, inst, state):
        """The fake moved inst to state: boot it, or stop its node."""
        iid = inst["id"]
        if state == "running":
            with self.lock:
                if iid in self.nodes or iid not in self.pending:
                    return
                user_data, key = self.pending.pop(iid)
                creds = self._mint(inst) if inst.get("iam_instance_profile") else None
                facts = dict(inst, n=int(iid[2:], 16))
                node = Node(facts, user_data, key, creds)
                node.inst = inst   # the live record: its notice (/_fake/preempt)
                self.nodes[iid] = node
            self.jobs.put((lambda: self._boot(node), None))
        elif state in ("shutting-down", "terminated", "stopped", "stopping"):
            with self.lock:
                self.pending.pop(iid, None)
                node = self.nodes.get(iid)
                if node is None or node.state == "ended" or node.stopped_by is not None:
                    return
                node.stopped_by = "api"
            self.jobs.put((lambda: self._stop(node, signal.SIGTERM), None))

    def _mint(self, inst):
        now = time.time()
        fmt = "%Y-%m-%dT%H:%M:%SZ"
        return {"instance_id": inst["id"], "profile": inst["iam_instance_profile"],
                "role": self.role_of(inst["iam_instance_profile"]),
                "access_key_id": "ASIA" + secrets.token_hex(8).upper(),
                "secret_access_key": base64.b64encode(secrets.token_bytes(30)).decode("ascii"),
                "token": "IQoJb3JpZ2luX2VjFakeBoot" + base64.b64encode(secrets.token_bytes(300)).decode("ascii"),
                "issued": time.strftime(fmt, time.gmtime(now)),
                "expiration": time.strftime(fmt, time.gmtime(now + 6 * 3600))}

    def credentials(self):
        with self.lock:
            return [dict(n.credentials, node=n.state) for n in self.nodes.values() if n.credentials]

    def console(self, iid):
        try:
            with open(os.path.join(self.root, iid, "console"), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def describe(self):
        with self.lock:
            return {"pid": os.getpid(), "host_ip": self.host_ip, "subnet": self.prefix + ".0/24",
                    "uplink": self.uplink, "vpc_pid": self.vpc.pid,
                    "nodes": [{"instance_id": n.id, "ip": n.ip, "hostname": n.hostname, "state": n.state,
                               "pid": n.proc.pid if n.proc else None, "stopped_by": n.stopped_by,
                               "error": n.error, "power_log": self._power_log(n.id)}
                              for n in self.nodes.values()]}

    def _power_log(self, iid):
        try:
            with open(os.path.join(self.root, iid, "fs", "run", "fake-ec2", "power.log"), encoding="utf-8") as f:
                return f.read().splitlines()
        except OSError:
            return []

    def reset(self):
        """Kill every node now and forget them (/_fake/reset)."""
        with self.lock:
            nodes = list(self.nodes.values())
            self.pending.clear()
            for n in nodes:
                n.stopped_by = n.stopped_by or "fake"
        for n in nodes:
            self.call(lambda n=n: self._stop(n, signal.SIGKILL))
        for n in nodes:
            n.done.wait(10)
        with self.lock:
            for n in nodes:
                self.nodes.pop(n.id, None)
                shutil.rmtree(os.path.join(self.root, n.id), ignore_errors=True)
        self._write_hosts()

    # -- on the booter thread --
    def _refuse(self, node, why):
        node.error = why
        sys.stderr.write("fake EC2: %s: boot refused: %s\n" % (node.id, why))
        sys.stderr.flush()
        self.log({"n": None, "action": "_boot/refused", "instance_id": node.id, "error": why})

    def _boot(self, node):
        d = os.path.join(self.root, node.id)
        try:
            try:
                plan = parse_user_data(node.user_data)
            except Refused as e:
                self._refuse(node, str(e))
                plan = {"files": [], "runcmd": [], "refused": str(e)}
            fs = os.path.join(d, "fs")
            for _, sub in NODE_DIRS:
                os.makedirs(os.path.join(fs, sub), exist_ok=True)
            os.chmod(os.path.join(fs, "tmp"), 0o1777)
            os.chmod(os.path.join(fs, "root"), 0o700)
            os.makedirs(os.path.join(fs, "run", "sshd"), exist_ok=True)
            homes = [os.path.join(fs, "root")]
            if self.has_ubuntu:
                os.makedirs(os.path.join(fs, "home-ubuntu"), exist_ok=True)
                homes.append(os.path.join(fs, "home-ubuntu"))
            for h in homes:
                os.makedirs(os.path.join(h, ".ssh"), mode=0o700, exist_ok=True)
                with open(os.path.join(h, ".ssh", "authorized_keys"), "w") as f:
                    f.write((node.key or "") + "\n")
            if self.has_ubuntu:
                import pwd
                pw = pwd.getpwnam("ubuntu")
                for root_, dirs, files in os.walk(os.path.join(fs, "home-ubuntu")):
                    for x in [root_] + [os.path.join(root_, y) for y in dirs + files]:
                        os.chown(x, pw.pw_uid, pw.pw_gid)
            os.makedirs("/var/lib/gpuctl", exist_ok=True)   # a mount point, left empty on this machine
            # the node's /etc/ssh (bind-mounted there): its host key where
            # an image keeps it, which the bootstrap prints to the console
            os.makedirs(os.path.join(d, "etc-ssh"), exist_ok=True)
            key = os.path.join(d, "etc-ssh", "ssh_host_ed25519_key")
            if not os.path.exists(key):
                run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "root@" + node.hostname, "-f", key])
            with open(key + ".pub") as f:
                pub = " ".join(f.read().split()[:2])
            with open(os.path.join(d, "sshd_config"), "w") as f:
                f.write("ListenAddress 0.0.0.0\nPort 22\nHostKey %s/etc-ssh/ssh_host_ed25519_key\nAuthorizedKeysFile .ssh/authorized_keys\n"
                        "PidFile none\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                        "PermitRootLogin prohibit-password\nStrictModes no\nSubsystem sftp internal-sftp\n"
                        "AcceptEnv LANG LC_*\nPrintMotd no\n" % NODE_INSTANCE_DIR)
            open(os.path.join(d, "console"), "a").close()
            plan.update({"dir": d, "hostname": node.hostname, "hosts": self.hosts_path,
                         "sbin": os.path.join(self.root, "sbin"), "ubuntu": self.has_ubuntu,
                         "keys": "%s root@%s" % (pub, node.hostname), "grace_s": STOP_GRACE_S})
            with open(os.path.join(d, "plan.json"), "w") as f:
                json.dump(plan, f)
            with self.lock:
                if node.stopped_by is not None:
                    raise RuntimeError("stopped before it booted")
                node.proc = self.spawn(
                    ["unshare", "--net", "--mount", "--uts", "--pid", "--fork", "--kill-child=SIGKILL",
                     "--mount-proc", "--", PY, os.path.join(HERE, "ec2_boot.py"), "node", d],
                    stdin=subprocess.PIPE, stdout=open(os.path.join(d, "init.log"), "ab"), stderr=subprocess.STDOUT)
            pid = node.proc.pid
            _t("spawned %s" % node.id)
            ns = "/proc/%d/ns/net" % pid
            for _ in range(400):
                try:
                    if os.readlink(ns) != os.readlink("/proc/self/ns/net"):
                        break
                except OSError:
                    pass
                time.sleep(0.005)
            _t("netns %s" % node.id)
            with self.lock:
                self.boots += 1
                # never reused: a veth of a node killed a moment ago may not be gone yet
                veth = "n%d" % self.boots
            self._batch(self.vpc.pid, "link add %s type veth peer name eth0 netns %d\nlink set %s master br0\n"
                                      "link set %s up\n" % (veth, pid, veth, veth))
            self._batch(pid, "link set lo up\naddr add %s/32 dev lo\naddr add %s/24 dev eth0\nlink set eth0 up\n"
                             "route add default via %s\n" % (IMDS_ADDR, node.ip, self.host_ip))
            _t("net %s" % node.id)
            node.imds = serve_in_netns(pid, node)
            _t("imds %s" % node.id)
            with self.lock:
                node.state = "up"
            self._write_hosts()
            node.proc.stdin.write(b"go\n")
            node.proc.stdin.close()
        except Exception as e:   # noqa: BLE001 - a node that cannot boot is reported, the fake goes on
            node.error = "boot failed: %s" % e
            sys.stderr.write("fake EC2: %s: %s\n" % (node.id, node.error))
            self.log({"n": None, "action": "_boot/failed", "instance_id": node.id, "error": node.error})
            if node.proc:
                node.proc.kill()
        threading.Thread(target=self._watch, args=(node,), daemon=True).start()

    def _watch(self, node):
        """Wait for the node's end; a node that powered itself off is the fake's to move on."""
        if node.proc is not None:
            node.proc.wait()
        if node.imds is not None:
            node.imds.shutdown()
        with self.lock:
            node.state = "ended"
            by = node.stopped_by
        self._write_hosts()
        if by is None and node.proc is not None:
            powered_off = any(" refused: " not in line for line in self._power_log(node.id))
            if not powered_off:
                node.error = "the node's init ended (exit %s) without a power-off request" % node.proc.returncode
                sys.stderr.write("fake EC2: %s: %s\n" % (node.id, node.error))
            self.on_power_off(node.id)
        node.done.set()

    def _stop(self, node, sig):
        if node.proc is None or node.proc.poll() is not None:
            return
        init = _init_pid(node.proc.pid)
        if sig == signal.SIGTERM and init:
            try:
                os.kill(init, signal.SIGTERM)
            except ProcessLookupError:
                pass
            threading.Thread(target=self._kill_later, args=(node,), daemon=True).start()
        else:
            node.proc.kill()   # unshare's --kill-child takes the node's init, and its namespace, with it

    def _kill_later(self, node):
        try:
            node.proc.wait(STOP_GRACE_S + 3)
        except subprocess.TimeoutExpired:
            self.jobs.put((lambda: node.proc.kill(), None))


def _t(what):
    if os.environ.get("FAKE_BOOT_DEBUG"):
        sys.stderr.write("%.3f %s\n" % (time.time(), what))
        sys.stderr.flush()


def _init_pid(unshare_pid):
    try:
        with open("/proc/%d/task/%d/children" % (unshare_pid, unshare_pid)) as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except (OSError, ValueError):
        return None


# ------------------------------------------------- the node's init (pid 1) ----

def node_main(d):
    """pid 1 of a node: mounts, console, sshd, cloud-init, power-off."""
    lc = libc()
    lc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    if sys.stdin.readline().strip() != "go":   # the fake has set up the network
        sys.exit(1)
    console = os.path.join(d, "console")   # until /run/fake-ec2/instance is there

    def say(text):
        with open(console, "a", encoding="utf-8") as f:
            f.write(text)

    def mount(src, dst, flags=MS_BIND):
        if lc.mount(src.encode(), dst.encode(), None, flags, None) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "mount %s on %s: %s" % (src, dst, os.strerror(e)))

    lc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    fs = os.path.join(d, "fs")
    # /run first, then the instance's directory under it (DIR may lie under
    # a directory the node gets its own of, /tmp), then the rest
    mount(os.path.join(fs, "run"), "/run")
    os.makedirs(NODE_INSTANCE_DIR, exist_ok=True)
    mount(d, NODE_INSTANCE_DIR)
    console = os.path.join(NODE_INSTANCE_DIR, "console")
    mount(plan["hosts"], "/etc/hosts")
    mount(os.path.join(NODE_INSTANCE_DIR, "etc-ssh"), "/etc/ssh")
    socket.sethostname(plan["hostname"])
    fifo = os.path.join(d, "console.fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo, 0o600)
    rfd = os.open(fifo, os.O_RDWR)   # read and write: never EOF while the node runs
    console_env = {}
    if os.path.exists("/dev/console"):
        mount(fifo, "/dev/console")
    else:
        console_env["GPUCTL_CONSOLE"] = fifo

    os.set_blocking(rfd, False)
    ending = threading.Event()

    def drain():
        while True:
            try:
                data = os.read(rfd, 65536)
            except BlockingIOError:
                return
            if not data:
                return
            with open(console, "ab") as f:
                f.write(data)

    def pump():   # until the node ends, and then what is left in the FIFO
        while True:
            ready, _, _ = select.select([rfd], [], [], 0.1)
            if ready:
                drain()
            elif ending.is_set():
                drain()
                return

    pumper = threading.Thread(target=pump, daemon=True)
    pumper.start()
    sbin = plan["sbin"]
    if os.path.isdir("/usr/local/sbin"):
        mount(sbin, "/usr/local/sbin")
    done = set()
    for name in ("shutdown", "poweroff", "halt", "reboot"):
        p = "/usr/sbin/" + name
        if os.path.lexists(p) and os.path.exists(p):
            real = os.path.realpath(p)
            if real not in done:
                done.add(real)
                mount(os.path.join(sbin, name), real)
    for path, sub in NODE_DIRS:
        if path != "/run":
            mount(os.path.join(fs, sub), path)
    if plan["ubuntu"]:
        mount(os.path.join(fs, "home-ubuntu"), "/home/ubuntu")
    d = NODE_INSTANCE_DIR
    os.makedirs("/run/sshd", exist_ok=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda s, f: stop.set())
    signal.signal(signal.SIGINT, lambda s, f: stop.set())
    env = {"PATH": NODE_PATH, "LANG": "C.UTF-8"}
    env.update(console_env)
    known = set()
    sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", os.path.join(d, "sshd_config")], env=env,
                            stdin=subprocess.DEVNULL, stdout=open(os.path.join(d, "sshd.log"), "ab"),
                            stderr=subprocess.STDOUT, cwd="/")
    known.add(sshd.pid)
    for _ in range(200):   # cloud-init prints the keys once sshd has them; wait until it listens
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", 22)) == 0:
                break
        time.sleep(0.01)
    say("Cloud-init v. fake-ec2 (tests/fake/ec2_boot.py) running on %s\n" % plan["hostname"])

    def cloud_init():
        if plan.get("refused"):
            say("fake EC2: user-data refused, not run: %s\n" % plan["refused"])
            return
        for f in plan["files"]:
            os.makedirs(os.path.dirname(f["path"]) or "/", exist_ok=True)
            with open(f["path"], "wb") as out:
                out.write(base64.b64decode(f["data"]))
            os.chmod(f["path"], f["mode"])
        for argv in plan["runcmd"]:
            if stop.is_set():
                return
            with open(console, "ab") as out:
                try:
                    p = subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT)
                except OSError as e:
                    say("runcmd %s: %s\n" % (argv, e))
                    continue
                known.add(p.pid)
                p.wait()
        # keys-to-console is a module of cloud-init's final stage, after
        # scripts-user (runcmd): a runcmd that runs the whole job delays it
        # until the job has ended, as on real EC2
        say("ec2: #############################################################\n"
            "-----BEGIN SSH HOST KEY KEYS-----\n%s\n-----END SSH HOST KEY KEYS-----\n"
            "ec2: #############################################################\n" % plan["keys"])
        say("Cloud-init v. fake-ec2 finished\n")

    threading.Thread(target=cloud_init, daemon=True).start()
    while not stop.is_set():
        _reap(known)
        stop.wait(0.2)
    # power off: every process of the node, SIGTERM then SIGKILL, then end
    say("fake EC2 node: stopping\n")
    os.kill(-1, signal.SIGTERM)
    deadline = time.time() + plan["grace_s"]
    while time.time() < deadline and _others():
        _reap(set())
        time.sleep(0.05)
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    ending.set()   # what the node wrote to its console before it ended is kept
    pumper.join(2)
    os._exit(0)


def _others():
    return [p for p in os.listdir("/proc") if p.isdigit() and p != "1"]


def _reap(known):
    """Reap orphans (pid 1's duty), but not the children subprocess waits for."""
    for p in _others():
        pid = int(p)
        if pid in known:
            continue
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read()
            if st[st.rindex(")") + 2] == "Z":
                os.waitpid(pid, os.WNOHANG)
        except (OSError, ValueError, ChildProcessError):
            pass


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "node":
        node_main(sys.argv[2])
    else:
        sys.exit("usage: ec2_boot.py node DIR (started by ec2.py --boot)")
