# shellcheck shell=bash
# slurm_cluster.sh - a real two-node Slurm on loopback for the end-to-end
# tests (sourced, bash; independent of lib.sh, usable with it).
#
#   slurm_available            0 when this machine can run it, else prints one
#                              "skipping: ..." line and returns 1 (exit 77 then)
#   slurm_up DIR               munged, slurmctld and two slurmd under DIR;
#                              exports SLURM_CONF; both nodes idle on return
#   slurm_down DIR             stops all of it, job processes too; idempotent
#   slurm_trap DIR             slurm_down DIR on exit (in lib.sh's cleanup)
#   slurm_node_pid DIR NODE    the pid of NODE's slurmd
#   slurm_node_start DIR NODE  (re)starts NODE's slurmd (after a kill)
#   slurm_wait_state DIR NODE STATE SECONDS
#                              waits until sinfo shows NODE in STATE
#
# The Slurm cluster (docs/testing.md, "The real Slurm"): controller on
# 127.0.0.1, node1 at NodeAddr 127.0.0.2 and node2 at 127.0.0.3 (both
# NodeHostname=localhost, so a node's address is only known from Slurm),
# each with 2 CPUs, 4000 MB and Gres=gpu:a100:2 on fake devices (char
# devices 1,3: /dev/null's numbers) in DIR/dev.  Partitions: gpu (node1
# and node2, the default, MaxTime 2:00:00) and one (node1 only).  The three
# TCP ports are free ports picked at start, and munged is our own (key,
# socket, pid and log under DIR/munge; slurm.conf's AuthInfo points every
# daemon and command at it), so several of these can run at once.
# SlurmdTimeout=10: a killed slurmd's node is down after 10-15 s, and a job
# submitted with --no-requeue on it ends NODE_FAIL.  MinJobAge=300: there is
# no slurmdbd (no sacct), so `scontrol show job` keeps finished jobs 5 min.

# The daemons are in /usr/sbin, which a non-root PATH may lack.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH="$PATH:/usr/sbin:/sbin" ;; esac
export PATH

SLURM_PKGS="slurmctld slurmd slurm-client munge"
SLURM_NODES="node1 node2"
SLURM_UP_TIMEOUT=${SLURM_UP_TIMEOUT:-30}

# slurm_available: 0 when root and every program is installed; otherwise one
# line saying what is missing, and 1.
slurm_available() {
    local missing="" p
    for p in slurmctld slurmd sbatch srun squeue scontrol sinfo scancel munged munge; do
        command -v "$p" >/dev/null 2>&1 || missing="${missing:+$missing, }$p"
    done
    if [ -n "$missing" ]; then
        echo "skipping: $missing not installed (apt-get install $SLURM_PKGS)"
        return 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "skipping: needs root to start slurmd"
        return 1
    fi
    if [ ! -x /usr/bin/python3 ]; then
        echo "skipping: /usr/bin/python3 not installed (it picks the free ports)"
        return 1
    fi
    return 0
}

# _slurm_free_ports N: N distinct TCP ports that bind on 0.0.0.0 now (as
# slurmctld and slurmd will), drawn at random below the kernel's ephemeral
# range so that no outgoing connection takes one meanwhile.
_slurm_free_ports() {
    /usr/bin/python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
try:
    eph = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    eph = 32768
lo, hi = 20000, min(eph, 32768)
held, ports = [], []
for _ in range(2000):
    if len(ports) == n:
        break
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", random.randrange(lo, hi) if hi - lo > 1000 else 0))
    except OSError:
        s.close()
        continue
    held.append(s)
    ports.append(s.getsockname()[1])
if len(ports) != n:
    sys.exit("no %d free ports" % n)
print(" ".join(map(str, ports)))
PY
}

# _slurm_write_conf DIR CTLD_PORT NODE1_PORT NODE2_PORT
_slurm_write_conf() {
    local d=$1
    cat > "$d/slurm.conf" <<EOF
# written by tests/e2e/slurm_cluster.sh
ClusterName=gpuctltest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=5
MinJobAge=300
KillWait=5
MailProg=/bin/true
GresTypes=gpu
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.2 Port=$3 CPUs=2 RealMemory=4000 Gres=gpu:a100:2 State=UNKNOWN
NodeName=node2 NodeHostname=localhost NodeAddr=127.0.0.3 Port=$4 CPUs=2 RealMemory=4000 Gres=gpu:a100:2 State=UNKNOWN
PartitionName=gpu Nodes=node[1-2] Default=YES MaxTime=2:00:00 State=UP OverSubscribe=NO
PartitionName=one Nodes=node1 MaxTime=2:00:00 State=UP OverSubscribe=NO
EOF
    cat > "$d/gres.conf" <<EOF
NodeName=node1 Name=gpu Type=a100 File=$d/dev/nvidia[0-1]
NodeName=node2 Name=gpu Type=a100 File=$d/dev/nvidia[2-3]
EOF
}

# _slurm_ours DIR PID: PID is alive and was started for DIR (its command
# line names DIR), so a recycled pid is never killed.
_slurm_ours() {
    local d=$1 pid=$2
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$d/"
}

# _slurm_spawn DIR NAME CMD...: start CMD in the foreground mode of the
# daemon, in its own session, detached from the caller's terminal and pipes
# (ctest waits for the test's stdout to close); its pid in DIR/pids/NAME.
_slurm_spawn() {
    local d=$1 name=$2; shift 2
    # without job control, so that the child is no process group leader and
    # setsid(1) calls setsid() itself instead of forking: $! is the daemon
    local -
    set +m
    GPUCTL_SLURM_DIR=$d setsid "$@" </dev/null >>"$d/log/$name.out" 2>&1 &
    echo $! > "$d/pids/$name"
    disown $!   # no "Terminated" notice from this shell when slurm_down stops it
}

_slurm_pid() { cat "$1/pids/$2" 2>/dev/null || true; }

# slurm_node_pid DIR NODE: the pid of NODE's slurmd (printed), 1 if not running.
slurm_node_pid() {
    local pid
    pid=$(_slurm_pid "$1" "slurmd-$2")
    _slurm_ours "$1" "$pid" || return 1
    echo "$pid"
}

# slurm_node_start DIR NODE: start NODE's slurmd (again, after it was killed).
slurm_node_start() {
    local d=$1 node=$2
    _slurm_spawn "$d" "slurmd-$node" slurmd -D -f "$d/slurm.conf" -N "$node"
}

# _slurm_logs DIR: the last lines of every daemon's log, on stderr.
_slurm_logs() {
    local f
    for f in "$1"/munge/munged.log "$1"/log/*; do
        [ -s "$f" ] || continue
        echo "--- tail of $f" >&2
        tail -n 25 "$f" >&2
    done
}

# _slurm_start DIR: one attempt at starting everything (ports picked anew).
_slurm_start() {
    local d=$1 ports i
    ports=$(_slurm_free_ports 3) || return 1
    # shellcheck disable=SC2086  # three words wanted
    set -- $ports
    _slurm_write_conf "$d" "$1" "$2" "$3"
    _slurm_spawn "$d" munged munged -F -f --socket="$d/munge/munge.sock" \
        --key-file="$d/munge/munge.key" --pid-file="$d/munge/munged.pid" \
        --seed-file="$d/munge/munged.seed" --log-file="$d/munge/munged.log"
    for i in $(seq 1 100); do
        munge -n -S "$d/munge/munge.sock" 2>/dev/null | unmunge -S "$d/munge/munge.sock" \
            >/dev/null 2>&1 && break
        if [ "$i" -eq 100 ] || ! _slurm_ours "$d" "$(_slurm_pid "$d" munged)"; then
            echo "slurm_up: munged did not start" >&2
            return 1
        fi
        sleep 0.05
    done
    _slurm_spawn "$d" slurmctld slurmctld -D -i -c -f "$d/slurm.conf"
    slurm_node_start "$d" node1
    slurm_node_start "$d" node2
}

# _slurm_all_idle DIR: both nodes idle (no flags: not down*, not drain).
_slurm_all_idle() {
    local out
    out=$(SLURM_CONF="$1/slurm.conf" sinfo -h -N -o '%N %t' 2>/dev/null | sort -u) || return 1
    [ "$out" == "$(printf 'node1 idle\nnode2 idle')" ]
}

# _slurm_bind_failed DIR: a daemon of DIR exited because its port was taken
# (another program took it between the pick and the bind).
_slurm_bind_failed() {
    cat "$1"/log/* 2>/dev/null | grep -q "Address already in use"
}

# slurm_up DIR: write DIR/slurm.conf and DIR/gres.conf, start munged,
# slurmctld and node1's and node2's slurmd, export SLURM_CONF and wait (at
# most SLURM_UP_TIMEOUT s) until both nodes are idle.  On failure: the
# daemons' log tails on stderr, everything stopped, and 1.
slurm_up() {
    local d=$1 attempt deadline dead n
    mkdir -p "$d"
    d=$(cd "$d" && pwd)
    for attempt in 1 2 3; do
        rm -rf "${d:?}"/{state,spool,run,log,pids,munge,dev}
        mkdir -p "$d/state" "$d/spool/node1" "$d/spool/node2" "$d/run" "$d/log" \
                 "$d/pids" "$d/munge" "$d/dev"
        # munged wants its socket's directory searchable by all
        chmod 0711 "$d/munge"
        head -c 1024 /dev/urandom > "$d/munge/munge.key"
        chmod 0600 "$d/munge/munge.key"
        for n in 0 1 2 3; do
            mknod "$d/dev/nvidia$n" c 1 3 || { echo "slurm_up: mknod failed" >&2; return 1; }
        done
        _slurm_start "$d" || { _slurm_logs "$d"; slurm_down "$d"; return 1; }
        export SLURM_CONF="$d/slurm.conf"
        deadline=$((SECONDS + SLURM_UP_TIMEOUT))
        dead=""
        while ! _slurm_all_idle "$d"; do
            for n in slurmctld slurmd-node1 slurmd-node2 munged; do
                _slurm_ours "$d" "$(_slurm_pid "$d" "$n")" || dead="$n"
            done
            if [ -n "$dead" ] || [ "$SECONDS" -ge "$deadline" ]; then break; fi
            sleep 0.2
        done
        if [ -z "$dead" ] && _slurm_all_idle "$d"; then
            return 0
        fi
        if [ -n "$dead" ] && _slurm_bind_failed "$d" && [ "$attempt" -lt 3 ]; then
            echo "slurm_up: $dead lost a port race; again with other ports" >&2
            slurm_down "$d"
            continue
        fi
        if [ -n "$dead" ]; then
            echo "slurm_up: $dead exited" >&2
        else
            echo "slurm_up: nodes not idle after ${SLURM_UP_TIMEOUT}s:" >&2
            SLURM_CONF="$d/slurm.conf" sinfo -N -l >&2 2>&1 || true
        fi
        _slurm_logs "$d"
        slurm_down "$d"
        return 1
    done
}

# _slurm_job_pids DIR: processes Slurm started for DIR: slurmstepd (they
# inherit GPUCTL_SLURM_DIR from slurmd), whatever runs below them, and job
# processes that got away from them (SLURM_JOB_ID set, SLURM_CONF ours).
_slurm_job_pids() {
    /usr/bin/python3 - "$1" "$$" <<'PY'
import os, sys
d, me = sys.argv[1], int(sys.argv[2])
conf = ("SLURM_CONF=%s/slurm.conf" % d).encode()
mark = ("GPUCTL_SLURM_DIR=%s" % d).encode()

def ours(pid):
    """slurmstepd writes to its node's log under d; its environ area holds
    its process title, so the variables in it are not to be relied on."""
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith(d + "/"):
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False

parent, roots = {}, set()
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    pid = int(p)
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = f.read().split(b"\0")
        comm = open("/proc/%d/comm" % pid, "rb").read().strip()
    except OSError:
        continue
    fields = stat[stat.rindex(b")") + 2:].split()
    if fields[0] == b"Z":   # exited, not yet reaped
        continue
    parent[pid] = int(fields[1])
    if comm == b"slurmstepd" and (mark in env or conf in env or ours(pid)):
        roots.add(pid)
    elif conf in env and any(e.startswith(b"SLURM_JOB_ID=") for e in env):
        roots.add(pid)
# never the caller or its ancestors
skip, p = set(), me
while p > 1 and p in parent:
    skip.add(p)
    p = parent[p]
found, changed = set(roots), True
while changed:
    changed = False
    for pid, pp in parent.items():
        if pp in found and pid not in found:
            found.add(pid)
            changed = True
print(" ".join(str(p) for p in sorted(found - skip)))
PY
}

# _slurm_running PID: PID exists and has not exited (a zombie has: an init
# that does not reap leaves orphans as zombies).
_slurm_running() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# _slurm_stop PID...: SIGTERM, wait up to 10 s, then SIGKILL and wait 5 s.
_slurm_stop() {
    local pid i alive=""
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null || true
    for i in $(seq 1 150); do
        # shellcheck disable=SC2086  # a list of pids
        if [ "$i" -eq 101 ]; then kill -KILL $alive 2>/dev/null || true; fi
        alive=""
        for pid in "$@"; do _slurm_running "$pid" && alive="$alive $pid"; done
        [ -z "$alive" ] && return 0
        sleep 0.1
    done
    echo "slurm_down: still running:$alive" >&2
}

# slurm_down DIR: stop what slurm_up DIR started, by pid: the slurmctld, both
# slurmd, every job process and slurmstepd of this Slurm, and its munged;
# waits until they have exited (a bound wait, then SIGKILL).  Safe to call
# again, before slurm_up or after a failed one.
slurm_down() {
    local d=$1 n pid ctld="" nodes="" jobs
    [ -d "$d" ] || return 0
    d=$(cd "$d" && pwd)
    [ -d "$d/pids" ] || return 0
    pid=$(_slurm_pid "$d" slurmctld)
    _slurm_ours "$d" "$pid" && ctld=$pid
    for n in $SLURM_NODES; do
        pid=$(_slurm_pid "$d" "slurmd-$n")
        _slurm_ours "$d" "$pid" && nodes="$nodes $pid"
    done
    # The controller first (no new launches, no requeue), then the jobs'
    # processes (a slurmd waits for its steps when told to stop), then slurmd.
    # shellcheck disable=SC2086  # lists of pids
    {
        _slurm_stop $ctld
        jobs=$(_slurm_job_pids "$d")
        [ -z "$jobs" ] || kill -KILL $jobs 2>/dev/null || true
        _slurm_stop $jobs
        _slurm_stop $nodes
        # a step started meanwhile by a slurmd that was still running
        jobs=$(_slurm_job_pids "$d")
        [ -z "$jobs" ] || kill -KILL $jobs 2>/dev/null || true
        _slurm_stop $jobs
    }
    pid=$(_slurm_pid "$d" munged)
    if _slurm_ours "$d" "$pid"; then _slurm_stop "$pid"; fi
    rm -f "$d"/pids/*
    return 0
}

# slurm_trap DIR: slurm_down DIR when the script exits (SIGINT and SIGTERM
# included).  With lib.sh, its cleanup calls it after destroying the test's
# clusters (which needs this Slurm) and before removing $T; without lib.sh,
# an EXIT trap of its own (which replaces the caller's).
slurm_trap() {
    _SLURM_TRAP_DIR=$1
    trap 'exit 130' INT
    trap 'exit 143' TERM
    if declare -F cleanup >/dev/null; then
        # shellcheck disable=SC2317  # lib.sh's cleanup calls it
        cleanup_extra() { slurm_down "$_SLURM_TRAP_DIR"; }
    else
        trap 'slurm_down "$_SLURM_TRAP_DIR"' EXIT
    fi
}

# slurm_node_state DIR NODE: NODE's state as sinfo's %t shows it (idle,
# alloc, mix, down*, ...), empty when sinfo fails.
slurm_node_state() {
    SLURM_CONF="$1/slurm.conf" sinfo -h -N -n "$2" -o '%t' 2>/dev/null | head -1 || true
}

# slurm_wait_state DIR NODE STATE SECONDS: wait until NODE's state, without
# the flag characters sinfo appends (* not responding, ~ powered off, ...),
# is STATE (idle, alloc, mix, down, drain, ...).  1 and a line on stderr when
# SECONDS pass first.
slurm_wait_state() {
    local d=$1 node=$2 want=$3 deadline=$((SECONDS + $4)) st
    while :; do
        st=$(slurm_node_state "$d" "$node")
        [ "${st%%[^a-z]*}" == "$want" ] && return 0
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "slurm_wait_state: $node is '$st', not $want, after $4s" >&2
            return 1
        fi
        sleep 0.5
    done
}
