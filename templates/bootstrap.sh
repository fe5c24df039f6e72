#!/bin/bash
# gpuctl node bootstrap: job env, interconnect env, setup, then torchrun.
## Files in GPUCTL_HOME: node.log, phase, exit_status, job, node.env, job.sh.
## Rendered by src/engine/render.c; lines starting with `##` are template comments
## and do not reach the node.
##
## Every node of a cluster (cloud or local) runs this same script: it exports
## the job env, sets NCCL / libfabric variables for the interconnect, runs the
## spec's `setup`, then starts torchrun with a c10d rendezvous on the head
## node: its private IP literal, or the host name the provider gives or the
## node script finds (HEAD_FROM below).
##
## Template sections (`##if NAME=word|word`) pick the node's modes (render.h,
## gpc_node_ctx):
##   RANK_FROM=engine      the rank is written below (NODE_RANK)
##   RANK_FROM=launch      NODE_RANK plus the node script's launch index
##   RANK_FROM=scheduler   the node script's gpuctl_md_node_rank
##   RANK_FROM=rendezvous  no rank: torchrun's rendezvous numbers the node
##   HEAD_FROM=ip          the head's IP literal (HEAD_IP), or the node's own
##                         IP when it is the head (HEAD_IP empty)
##   HEAD_FROM=name        a host name or IP literal given to every node
##   HEAD_FROM=node        the node script's gpuctl_md_head_addr
##
## Files under GPUCTL_HOME (default /var/lib/gpuctl):
##   node.log     everything this script and the job print (appended)
##   phase        booting | setup | running | succeeded | failed, or idle:
##                up with no job yet (FIRST_JOB=0)
##   exit_status  the exit status of setup or torchrun, written once at the end
##   job          "running EPOCH" while a job (this one, or one a later
##                `gpuctl exec` starts) runs, "ended EPOCH" after it
##   stopped      "idle N s" once the node stopped itself (lifecycle.idle_timeout)
##   preempting   "ACTION EPOCH" once the provider said it interrupts the node
##                (a spot node's notice watcher, templates/notice.sh)
##   ckpt.lock    held while checkpoint_dir is saved to the store (CKPT_STORE=1)
##   node.env     the node's wiring (rank, world size, head endpoint, nproc,
##                backend, interconnect env, workdir), sourced by job.sh (0600)
##   job.sh       the job runner: the first job and every later one
##                (`gpuctl exec`, a re-run by `apply`) run the same functions
##   job.env      the env of the latest job that brought one (0600)
##   jobs/ID.sh   a job: GPUCTL_JOB_ID, GPUCTL_SETUP, GPUCTL_RUN_COMMAND and,
##                optionally, gpuctl_user_env and gpuctl_job_env (0600)
##   job.lock     flock(1): one job at a time; a later one waits (queued)
##   job_id       the id of the latest job
## phase, exit_status and job describe the latest job.
##
## Template rules: placeholders are upper-case names in double braces.  Every
## value is an integer, a fixed word, or a string already quoted for the
## shell by gpc_shell_quote(), so a spec value never becomes code.  The job
## env placeholder stands alone at column 0 because quoted values may span
## lines.  A placeholder the renderer does not know is an error.
##
## Knobs read from the environment the script starts in (the spec reserves
## GPUCTL_* env names, so these are for the provider and for tests):
##   GPUCTL_HOME=DIR           where the files above go
##   GPUCTL_LOCAL_IP=ADDR      the head address, for a node script that reads it (local)
##   GPUCTL_POWEROFF=0         keep a machine of its own up after the job ends
##   GPUCTL_POWEROFF_DELAY=N   power off N minutes after the end (default now)
##   GPUCTL_HEAD_WAIT_S=N      how long ranks > 0 wait for the head (1800)
##   GPUCTL_DELIVER_WAIT_S=N   how long a DELIVER=1 node waits for gpuctl (1800)
##   GPUCTL_RUN_DIR=DIR        where the delivered secrets are (/run/gpuctl)
##   GPUCTL_CKPT_SAVE_S=N      seconds between checkpoint saves (CKPT_STORE=1; 300)
##   GPUCTL_NOTICE_POLL_S=N    seconds between asks for a notice (NOTICE=1; 5)
##
## IDLE=1: lifecycle.idle_timeout is set (IDLE_TIMEOUT_S seconds): after its
## job the node stays up until no job has run for that long (the `job`
## record, which a later job rewrites), then stops itself through the node
## script's gpuctl_md_stop.  IDLE=0: it ends (and a machine of its own
## powers off) when its job ends.
set -euo pipefail
umask 022

GPUCTL_HOME="${GPUCTL_HOME:-/var/lib/gpuctl}"
export GPUCTL_HOME
## cloud-init's runcmd may run without HOME; tools (pip, torch hub) need one.
export HOME="${HOME:-/root}"
mkdir -p "$GPUCTL_HOME"
## The provider's name: says whose metadata service the node asked.
GPUCTL_METADATA={{METADATA}}
## gpuctl_done: 1 once exit_status is written; gpuctl_child: the pid of the
## `timeout` running setup / torchrun, 0 = none; gpuctl_rc: the exit status
## of the last gpuctl_run_limited.
gpuctl_done=0
gpuctl_child=0
gpuctl_rc=0

gpuctl_say() {
  printf '%s gpuctl: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"
}

## Replace FILE with one line of text atomically (temp file, then rename).
gpuctl_write() {
  printf '%s\n' "$2" >"$GPUCTL_HOME/.$1.tmp.$$"
  mv -f "$GPUCTL_HOME/.$1.tmp.$$" "$GPUCTL_HOME/$1"
}

gpuctl_phase() {
  gpuctl_write phase "$1"
  gpuctl_say "phase $1"
}

## curl for a link-local metadata service, for the node script below: never
## through a proxy, short timeouts, a few retries.
## shellcheck: unused where the node script asks no service
# shellcheck disable=SC2317
gpuctl_md_curl() {
  curl -fsS --noproxy '*' --connect-timeout 2 --max-time 5 --retry 3 --retry-delay 1 "$@"
}

## --- node script ---
## The node side of the node's provider (providers/NAME/node.sh, see the
## contract in include/gpuctl/render.h), before anything runs.  It sets
##   gpuctl_md_machine       1: a machine of its own, powered off at the end;
##                           0: processes on this machine
## and defines the functions
##   gpuctl_md_private_ip    prints this node's private IP literal
##   gpuctl_md_launch_index  prints the node's 0-based position among the
##                           nodes launched by one call (providers whose
##                           nodes take their rank from it)
##   gpuctl_md_node_rank     prints the node's rank (RANK_FROM=scheduler)
##   gpuctl_md_head_addr     prints the head's address (HEAD_FROM=node)
{{NODE_SCRIPT}}

## Whatever the job left behind (processes that moved to sessions of their
## own, as torch 2.x workers do, or that ignored SIGTERM) still carries the
## node's GPUCTL_HOME and the job's GPUCTL_JOB_ID in its environment (nodes
## may share a machine, jobs a node): kill it, so that a finished node
## holds no GPU (local nodes and clouds with GPUCTL_POWEROFF=0 stay up).  A
## later job waiting for the lock (job.sh) carries GPUCTL_HOME only.
## Builtins only, so that the sweep never meets a child of its own.
## shellcheck: called from gpuctl_on_exit, run by `trap ... EXIT`
# shellcheck disable=SC2317
gpuctl_sweep() {
  local p pid e n
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    if [ "$pid" = "$$" ] || [ "$pid" = "$PPID" ]; then
      continue
    fi
    n=0
    while IFS= read -r -d '' e; do
      if [ "$e" = "GPUCTL_JOB_ID=$GPUCTL_JOB_ID" ] || [ "$e" = "GPUCTL_HOME=$GPUCTL_HOME" ]; then
        n=$((n + 1))
      fi
    done 2>/dev/null <"$p/environ" || true
    if [ "$n" = 2 ]; then
      gpuctl_say "killing process $pid left behind by the job"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}

##if IDLE=1
## Wait until no job has run for GPUCTL_IDLE_TIMEOUT_S seconds (the `job`
## record says "ended EPOCH" that long ago; a job that starts meanwhile
## rewrites it), then record why and stop the node (gpuctl_md_stop).  A
## signal ends the wait, and the node, at once.
# shellcheck disable=SC2317
gpuctl_idle() {
  local st t now
  trap 'exit "$rc"' TERM INT HUP
  gpuctl_say "idle: the node stops after ${GPUCTL_IDLE_TIMEOUT_S}s with no job"
  while :; do
    st='' t=0
    read -r st t <"$GPUCTL_HOME/job" 2>/dev/null || true
    printf -v now '%(%s)T' -1
    if [ "$st" = ended ] && [[ $t =~ ^[0-9]+$ ]] && [ $((now - t)) -ge "$GPUCTL_IDLE_TIMEOUT_S" ]; then
      break
    fi
    sleep 1
  done
  trap '' TERM INT HUP
  gpuctl_write stopped "idle ${GPUCTL_IDLE_TIMEOUT_S}s"
  gpuctl_say "no job for ${GPUCTL_IDLE_TIMEOUT_S}s: stopping the node"
  gpuctl_md_stop
}
##endif

##if NODE_STORE=1
## The endpoint the node script's store functions (gpuctl_md_store_get,
## gpuctl_md_store_put) give the store's client, where gpuctl's own is not
## the provider's default; empty: the default.
GPUCTL_STORE_ENDPOINT={{STORE_ENDPOINT}}
##endif
##if CKPT_STORE=1
## --- checkpoints in the store ---
## checkpoint_dir outlives the node (CKPT_STORE=1: the nodes do not share
## this machine's files, and the spec has checkpoint_dir): every node
## restores it from the cluster's prefix in the provider's store before
## setup (nothing there: nothing to restore); the node where global rank 0
## runs (gpuctl_ckpt_writer) saves it back every GPUCTL_CKPT_SAVE_S seconds
## while the job runs and once when the job ends, succeeded or failed.  A
## save copies new and changed files
## and deletes nothing in the store; two never run at once (ckpt.lock); a
## failed one is said in node.log and the next one tries again.  The node
## script's gpuctl_md_store_get / gpuctl_md_store_put do the copying.
GPUCTL_CKPT_URL={{CKPT_URL}}
## gpuctl_ckpt_ok: 1 once the restore succeeded (nothing is saved before);
## gpuctl_ckpt_saver: the pid of the periodic saver, 0 = none.
gpuctl_ckpt_ok=0
gpuctl_ckpt_saver=0

gpuctl_ckpt_restore() {
  local n
  gpuctl_say "checkpoints: restoring $GPUCTL_CHECKPOINT_DIR from $GPUCTL_CKPT_URL"
  if ! gpuctl_md_store_get "$GPUCTL_CKPT_URL" "$GPUCTL_CHECKPOINT_DIR"; then
    gpuctl_say "error: checkpoints: could not restore them from $GPUCTL_CKPT_URL"
    return 1
  fi
  gpuctl_ckpt_ok=1
  n=$(find "$GPUCTL_CHECKPOINT_DIR" -type f | wc -l)
  gpuctl_say "checkpoints: $n file(s) in $GPUCTL_CHECKPOINT_DIR"
}

## Whether this node saves: the one whose torchrun group rank is 0 (its
## workers wrote it, worker.sh), where global rank 0 runs, which by the
## usual convention (the example trainer's too) writes the checkpoints.
## The rendezvous orders the nodes by host address and pid, not by node
## rank, so it is not always the head, which alone saved before: a job
## whose rank 0 ran on another node was never saved.  No group rank yet (no
## worker started): nothing of this job to save.
# shellcheck disable=SC2317 # called by gpuctl_ckpt_save
gpuctl_ckpt_writer() {
  local g=''
  read -r g 2>/dev/null <"$GPUCTL_HOME/workers/group_rank" || true
  [ "$g" = 0 ]
}

## One save ($1 says why: periodic, final), by the writer only.
# shellcheck disable=SC2317 # called by the saver and from the EXIT trap
gpuctl_ckpt_save() {
  if [ "$gpuctl_ckpt_ok" != 1 ] || ! gpuctl_ckpt_writer; then
    return 0
  fi
  (
    flock 9
    if gpuctl_md_store_put "$GPUCTL_CHECKPOINT_DIR" "$GPUCTL_CKPT_URL"; then
      gpuctl_say "checkpoints: saved ($1) to $GPUCTL_CKPT_URL"
    else
      gpuctl_say "checkpoints: the $1 save to $GPUCTL_CKPT_URL failed; the next one tries again"
    fi
  ) 9>>"$GPUCTL_HOME/ckpt.lock"
}

## The periodic saver, while the job runs (on every node: each save asks
## gpuctl_ckpt_writer).  A TERM waits for a save in progress to end (bash
## runs the trap after it), then ends it.
gpuctl_ckpt_start() {
  local every=${GPUCTL_CKPT_SAVE_S:-300}
  case $every in '' | *[!0-9]* | 0) every=300 ;; esac
  if [ "$gpuctl_ckpt_ok" != 1 ]; then
    return 0
  fi
  (
    trap - EXIT INT HUP
    trap 'exit 0' TERM
    while :; do
      sleep "$every" &
      wait "$!"
      gpuctl_ckpt_save periodic
    done
  ) &
  gpuctl_ckpt_saver=$!
  gpuctl_say "checkpoints: saving every ${every}s if global rank 0 runs here"
}

## At the job's end, before the last save: the saver stopped.
# shellcheck disable=SC2317 # called from the EXIT trap
gpuctl_ckpt_stop() {
  if [ "$gpuctl_ckpt_saver" != 0 ]; then
    kill -TERM "$gpuctl_ckpt_saver" 2>/dev/null || true
    wait "$gpuctl_ckpt_saver" 2>/dev/null || true
    gpuctl_ckpt_saver=0
  fi
}
##endif
##if NOTICE=1
{{NOTICE_SCRIPT}}
##endif
## The notice watcher's pid (NOTICE=1), 0 = none.
gpuctl_notice_pid=0
## The end of a job: kill what it left behind, then record its outcome
## (phase, exit_status, job) once.  gpuctl_done: 1 once recorded.
# shellcheck disable=SC2317
gpuctl_job_record() {
  gpuctl_done=1
##if CKPT_STORE=1
  ## checkpoints kept in the store: the saver first (the sweep would kill
  ## it mid-save), the last save once nothing of the job writes any more
  gpuctl_ckpt_stop
##endif
  gpuctl_sweep
##if CKPT_STORE=1
  gpuctl_ckpt_save final
##endif
  if [ "$1" -eq 0 ]; then
    gpuctl_phase succeeded
  else
    gpuctl_phase failed
  fi
  gpuctl_write exit_status "$1"
  gpuctl_write job "ended $(printf '%(%s)T' -1)"
  gpuctl_say "exit status $1"
}

## One job at a time on a node: take job.lock (flock(1)), saying so when
## another job holds it; gpuctl_lock_fd is its descriptor, which no command
## of the job inherits (gpuctl_run_limited).
gpuctl_lock_fd=
gpuctl_lock() {
  exec {gpuctl_lock_fd}>>"$GPUCTL_HOME/job.lock"
  if ! flock -n "$gpuctl_lock_fd"; then
    gpuctl_say "job $GPUCTL_JOB_ID queued: waiting for the running job to end"
    gpuctl_taken queued
    flock "$gpuctl_lock_fd"
  fi
}

## jobs/ID.taken: the runner has the job, "queued" behind a running one or
## "started" (its records reset: exit_status gone), which gpuctl, having
## started the runner in the background, waits for (no `gpuctl logs -f`
## right after then reads the previous job's end).
gpuctl_taken() {
  printf '%s\n' "$1" >"$GPUCTL_HOME/jobs/.$GPUCTL_JOB_ID.taken.$$"
  mv -f "$GPUCTL_HOME/jobs/.$GPUCTL_JOB_ID.taken.$$" "$GPUCTL_HOME/jobs/$GPUCTL_JOB_ID.taken"
}

# shellcheck disable=SC2317
gpuctl_unlock() {
  if [ -n "$gpuctl_lock_fd" ]; then
    exec {gpuctl_lock_fd}>&-
    gpuctl_lock_fd=
  fi
}

## On any exit (normal end, `set -e` failure, signal): record the outcome
## once, then power a cloud node off so that it stops billing (the instances
## are launched with instance-initiated shutdown = terminate).
## shellcheck: run by `trap ... EXIT`, which shellcheck 0.9 does not follow
# shellcheck disable=SC2317
gpuctl_on_exit() {
  local rc=$? when=now
  set +e
  trap - EXIT
  ## The outcome is decided: a signal now (a scheduler stopping the other
  ## tasks of a job as this one ends) must not replace it half-recorded.
  trap '' TERM INT HUP
  if [ "$gpuctl_done" = 0 ]; then
    gpuctl_job_record "$rc"
    if [ "$gpuctl_md_machine" = 1 ]; then
      ## The control plane reads this line back from the serial console
      ## (EC2 GetConsoleOutput) once the node has powered itself off.
      ## rank=- where the node has no rank (yet): see GPUCTL_NODE_RANK below
      printf 'gpuctl-node-exit: cluster=%s rank=%s status=%s\n' "$GPUCTL_CLUSTER_ID" \
        "${GPUCTL_NODE_RANK:--}" "$rc" >"${GPUCTL_CONSOLE:-/dev/console}" 2>/dev/null || true
    fi
  fi
##if IDLE=1
  ## Not after a signal (the node is being stopped), nor on a machine kept up.
  ## A later job (job.sh) may now take the lock.
  if [ "$rc" -lt 128 ] && { [ "$gpuctl_md_machine" = 0 ] || [ "${GPUCTL_POWEROFF:-1}" != 0 ]; }; then
    gpuctl_unlock
    gpuctl_idle
    exit "$rc"
  fi
##endif
  if [ "$gpuctl_notice_pid" != 0 ]; then
    kill -TERM "$gpuctl_notice_pid" 2>/dev/null || true
  fi
  if [ "$gpuctl_md_machine" = 1 ] && [ "${GPUCTL_POWEROFF:-1}" != 0 ]; then
    case ${GPUCTL_POWEROFF_DELAY:-0} in
      '' | *[!0-9]* | 0) ;;
      *) when="+$GPUCTL_POWEROFF_DELAY" ;;
    esac
    gpuctl_say "powering off ($when)"
    sync
    shutdown -h "$when" || poweroff || true
  fi
  exit "$rc"
}

## The first worker's own exit status (by local rank) that is neither 0
## nor a signal's, as "LOCAL_RANK STATUS"; fails when there is none.
# shellcheck disable=SC2317
gpuctl_worker_failed() {
  local i=0 st
  while [ "$i" -lt "${GPUCTL_NPROC_PER_NODE:-0}" ]; do
    st=$(cat "$GPUCTL_HOME/workers/$i.status" 2>/dev/null)
    case $st in
      '' | *[!0-9]* | 0) ;;
      *) [ "$st" -lt 128 ] && echo "$i $st" && return 0 ;;
    esac
    i=$((i + 1))
  done
  return 1
}

## A signal to this script goes on to the `timeout` running setup or
## torchrun: `timeout` puts its command in a process group of its own (so
## that max_duration stops the whole tree), which a signal sent to this
## script's group does not reach.  What still runs after a grace period (8 s
## on processes of this machine, whose provider's delete sends SIGKILL after
## 10 s; 25 s on a machine of its own) is killed.
## shellcheck: run by `trap ... TERM`, which shellcheck 0.9 does not follow
# shellcheck disable=SC2317
gpuctl_on_signal() {
  local i=0 grace=50
  trap '' TERM INT HUP
  gpuctl_say "received SIG$1; stopping"
  if [ "$gpuctl_child" != 0 ]; then
    if [ "$gpuctl_md_machine" = 0 ]; then
      grace=16
    fi
    kill -TERM "$gpuctl_child" 2>/dev/null || true
    while kill -0 "$gpuctl_child" 2>/dev/null && [ "$i" -lt "$grace" ]; do
      sleep 0.5
      i=$((i + 1))
    done
    kill -KILL -- "-$gpuctl_child" 2>/dev/null || true
    wait "$gpuctl_child" 2>/dev/null || true
  fi
  ## A worker that had failed by itself is why the node ends (torchrun
  ## waits for the other nodes after a failure; a scheduler then stops the
  ## job's other tasks): its status is the node's, as below.
  if gpuctl_w=$(gpuctl_worker_failed); then
    gpuctl_say "local rank ${gpuctl_w% *} had exited ${gpuctl_w#* }"
    exit "${gpuctl_w#* }"
  fi
  exit "$2"
}

gpuctl_over_time() {
  [ "$gpuctl_end_s" -gt 0 ] && [ "$SECONDS" -ge "$gpuctl_end_s" ]
}

## Run "$@" (LABEL names it in the log) under coreutils timeout with what is
## left until the node's end (gpuctl_end_s).  A limit of 0 disables the
## timeout, but the command still gets its own process group (see
## gpuctl_on_signal).  Leaves the exit status in gpuctl_rc, 124 when the
## limit was hit.
gpuctl_run_limited() {
  local label=$1 limit=0
  shift
  if [ "$gpuctl_end_s" -gt 0 ]; then
    limit=$((gpuctl_end_s - SECONDS))
    if [ "$limit" -lt 1 ]; then
      limit=1
    fi
  fi
  if [ -n "$gpuctl_lock_fd" ]; then
    timeout --signal=TERM --kill-after=30 "$limit" "$@" </dev/null {gpuctl_lock_fd}>&- &
  else
    timeout --signal=TERM --kill-after=30 "$limit" "$@" </dev/null &
  fi
  gpuctl_child=$!
  gpuctl_rc=0
  wait "$gpuctl_child" || gpuctl_rc=$?
  gpuctl_child=0
  if [ "$gpuctl_end_s" -gt 0 ] &&
    { [ "$gpuctl_rc" -eq 124 ] || { [ "$gpuctl_rc" -eq 137 ] && gpuctl_over_time; }; }; then
    gpuctl_say "$gpuctl_end_why; $label stopped"
    gpuctl_rc=124
  fi
}

## workers/ holds this run's statuses only (gpuctl_worker_failed)
rm -f "$GPUCTL_HOME/exit_status" "$GPUCTL_HOME/workers/"*.status "$GPUCTL_HOME/workers/group_rank" \
  "$GPUCTL_HOME/preempting"
gpuctl_write phase booting
gpuctl_write job "running $(printf '%(%s)T' -1)"
trap gpuctl_on_exit EXIT
trap 'gpuctl_on_signal TERM 143' TERM
trap 'gpuctl_on_signal INT 130' INT
trap 'gpuctl_on_signal HUP 129' HUP
exec >>"$GPUCTL_HOME/node.log" 2>&1
gpuctl_say "bootstrap start (pid $$)"

## SSH host keys on the serial console, in cloud-init's block, which
## gpuctl reads back (EC2 GetConsoleOutput) to check the node's key before
## its first ssh.  cloud-init prints them itself only in its final stage,
## after runcmd, which runs this whole job: without this, the keys would
## appear only once the job has ended.
if [ "$gpuctl_md_machine" = 1 ]; then
  {
    printf '%s\n' '-----BEGIN SSH HOST KEY KEYS-----'
    cat /etc/ssh/ssh_host_*_key.pub 2>/dev/null || true
    printf '%s\n' '-----END SSH HOST KEY KEYS-----'
  } >"${GPUCTL_CONSOLE:-/dev/console}" 2>/dev/null || true
fi

# --- job env (begin) ---
## Values are single-quoted on purpose: $, backquotes and backslashes in them
## are text, never expanded.  A function, so that job.sh keeps it (job.env)
## for later jobs that bring no env of their own.
# shellcheck disable=SC2016,SC1003
gpuctl_job_env() {
  :
{{JOB_ENV}}
}
gpuctl_job_env
# --- job env (end) ---

## Node identity, after the job env so that it cannot be overridden.  The
## rank is '' until the node learns it (RANK_FROM=scheduler, below), and
## stays '' where torchrun's rendezvous numbers the node (the job reads
## torchrun's GROUP_RANK); the rendezvous host is GPUCTL_HEAD_IP whether it
## is an IP literal or a host name.
export GPUCTL_CLUSTER={{CLUSTER}}
export GPUCTL_CLUSTER_ID={{CLUSTER_ID}}
## The first job's id; a later job's comes with it (job.sh).  Its processes
## carry it (gpuctl_sweep); the rendezvous id is CLUSTER_ID-JOB_ID, so that
## two jobs' rendezvous never mix.
export GPUCTL_JOB_ID=1
export GPUCTL_NODE_RANK={{NODE_RANK}}
export GPUCTL_NUM_NODES={{NUM_NODES}}
## Holds "ACTION EPOCH" once the provider said it interrupts this node (a
## spot node's notice watcher; the job's workers also get SIGUSR1).
export GPUCTL_PREEMPT_FILE="$GPUCTL_HOME/preempting"
export GPUCTL_INSTANCE_TYPE={{INSTANCE_TYPE}}
export GPUCTL_RDZV_PORT={{RDZV_PORT}}
GPUCTL_HEAD_IP={{HEAD_IP}}
GPUCTL_MAX_DURATION_S={{MAX_DURATION_S}}
## budget.max_total: the cluster, at the prices its nodes were bought at,
## has spent it GPUCTL_BUDGET_S seconds after the boot (0: no cap).  The
## node's end (gpuctl_end_s, seconds after its boot; 0: none) is the sooner
## of the two, enforced here whether or not gpuctl still runs.  A spec that
## sets neither lifecycle.max_duration nor budget.max_total gets gpuctl's
## default max_duration (72h) here, unless it says max_duration: none.
GPUCTL_BUDGET_S={{BUDGET_S}}
gpuctl_end_s=$GPUCTL_MAX_DURATION_S
gpuctl_end_why="max_duration limit of ${GPUCTL_MAX_DURATION_S}s"{{MAX_DURATION_NOTE}}" hit"
if [ "$GPUCTL_BUDGET_S" -gt 0 ] &&
  { [ "$gpuctl_end_s" = 0 ] || [ "$GPUCTL_BUDGET_S" -lt "$gpuctl_end_s" ]; }; then
  gpuctl_end_s=$GPUCTL_BUDGET_S
  gpuctl_end_why="budget.max_total "{{BUDGET_NOTE}}" is spent (${GPUCTL_BUDGET_S}s)"
fi
##if IDLE=1
GPUCTL_IDLE_TIMEOUT_S={{IDLE_TIMEOUT_S}}
##endif
GPUCTL_NPROC_PER_NODE={{NPROC_PER_NODE}}
GPUCTL_INTERCONNECT={{INTERCONNECT}}
GPUCTL_WORKDIR={{WORKDIR}}
GPUCTL_CHECKPOINT_DIR={{CHECKPOINT_DIR}}
## Shell text kept as data: shellcheck's "quotes will be literal" warnings
## (SC2089/SC2090) are what is wanted here.
# shellcheck disable=SC2089
GPUCTL_SETUP={{SETUP}}
# shellcheck disable=SC2089
GPUCTL_RUN_COMMAND={{RUN_COMMAND}}
## The names the job env sets; the interconnect defaults leave them alone.
gpuctl_user_env={{USER_ENV_NAMES}}
## The spec's secrets, by name (their values: gpuctl_secrets_load).
gpuctl_secret_names={{SECRET_NAMES}}

## The node's end's second line of defence on a cloud: the OS powers the
## node off two minutes after it even if this script dies before it can.
if [ "$gpuctl_md_machine" = 1 ] && [ "${GPUCTL_POWEROFF:-1}" != 0 ] &&
  [ "$gpuctl_end_s" -gt 0 ]; then
  shutdown -h "+$(((gpuctl_end_s + 59) / 60 + 2))" >/dev/null 2>&1 || true
fi

## --- interconnect ---

## Sections between `##if VAR=word|word` and `##endif` reach the node only
## for those values, so each node gets the functions it runs and no more.

## Export NAME=VALUE unless the job env sets NAME (the user's value wins).
gpuctl_default() {
  case " $gpuctl_user_env " in
    *" $1 "*) return 0 ;;
  esac
  export "$1=$2"
}

## The helpers below are the bootstrap's and a fabric script's (see the
## contract in include/gpuctl/render.h).

## Put an existing library directory in front of LD_LIBRARY_PATH.
## shellcheck: unused where the node's fabric needs no library
# shellcheck disable=SC2317
gpuctl_ldpath() {
  case " $gpuctl_user_env " in
    *" LD_LIBRARY_PATH "*) return 0 ;;
  esac
  if [ -d "$1" ]; then
    export LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}

## NCCL's TCP bootstrap interface: eth0 where the image has one (Azure and
## Aliyun primary NIC), else anything but loopback and docker bridges.
## shellcheck: unused where the node's fabric sets its own
# shellcheck disable=SC2317
gpuctl_socket_ifname() {
  if [ -e /sys/class/net/eth0 ]; then
    gpuctl_default NCCL_SOCKET_IFNAME eth0
  else
    gpuctl_default NCCL_SOCKET_IFNAME '^lo,docker'
  fi
}

##if INTERCONNECT=infiniband
## InfiniBand (Azure ND/NC sizes, Ubuntu-HPC image): reference azure.md
## section 7.3.  The image's per-size customisation links the right topology
## file to /opt/microsoft/<size>/topo.xml; use it when there is one.
gpuctl_ic_infiniband() {
  local size
  gpuctl_default NCCL_IB_DISABLE 0
  gpuctl_default NCCL_IB_PCI_RELAXED_ORDERING 1
  gpuctl_default CUDA_DEVICE_ORDER PCI_BUS_ID
  gpuctl_socket_ifname
  for size in ndv5 ndv4 ncv4 ndv2; do
    if [ -f "/opt/microsoft/$size/topo.xml" ]; then
      gpuctl_default NCCL_TOPO_FILE "/opt/microsoft/$size/topo.xml"
      if [ -f "/opt/microsoft/$size/graph.xml" ]; then
        gpuctl_default NCCL_GRAPH_FILE "/opt/microsoft/$size/graph.xml"
      fi
      break
    fi
  done
  gpuctl_ldpath /usr/local/nccl-rdma-sharp-plugins/lib
}
##endif

##if FABRIC_SCRIPTED=1
# --- fabric script ---
## A fabric a provider sells (FABRIC in providers/NAME/provider.cmake): the
## fabric script of the node's fabric, whichever provider declares it (see
## the contract in include/gpuctl/render.h).  It defines gpuctl_ic_FABRIC.
{{FABRIC_SCRIPT}}
##endif

case $GPUCTL_INTERCONNECT in
##if FABRIC_SCRIPTED=1
  {{INTERCONNECT}}) gpuctl_ic_{{INTERCONNECT}} ;;
##endif
  infiniband) gpuctl_ic_infiniband ;;
  none) gpuctl_default NCCL_IB_DISABLE 1 ;; # plain TCP sockets
  *) ;;                                      # any: as NCCL finds it
esac

## --- node rank and head address ---

##if RANK_FROM=launch
## The nodes of one batch start from one launch call with one user-data, so
## each finds its rank from its position in that call (the node script's
## gpuctl_md_launch_index, 0-based, which says why when it cannot tell)
## added to the first node's rank.
gpuctl_launch_index=$(gpuctl_md_launch_index) || exit 1
if ! [[ $gpuctl_launch_index =~ ^[0-9]{1,6}$ ]]; then
  gpuctl_say "error: launch index '$gpuctl_launch_index' is not a number; node rank unknown"
  exit 1
fi
GPUCTL_NODE_RANK=$((GPUCTL_NODE_RANK + 10#$gpuctl_launch_index))
if [ "$GPUCTL_NODE_RANK" -ge "$GPUCTL_NUM_NODES" ]; then
  gpuctl_say "error: launch index $gpuctl_launch_index gives node rank $GPUCTL_NODE_RANK," \
    "not below $GPUCTL_NUM_NODES nodes"
  exit 1
fi
##endif
##if RANK_FROM=scheduler
## The scheduler numbers the nodes (the node script's gpuctl_md_node_rank,
## which says why when it cannot tell): one bootstrap for every node, and
## the node that reads 0 is the head.
gpuctl_node_rank=$(gpuctl_md_node_rank) || exit 1
if ! [[ $gpuctl_node_rank =~ ^[0-9]{1,6}$ ]]; then
  gpuctl_say "error: node rank '$gpuctl_node_rank' from the scheduler is not a number"
  exit 1
fi
GPUCTL_NODE_RANK=$((10#$gpuctl_node_rank))
if [ "$GPUCTL_NODE_RANK" -ge "$GPUCTL_NUM_NODES" ]; then
  gpuctl_say "error: node rank $GPUCTL_NODE_RANK from the scheduler is not below" \
    "$GPUCTL_NUM_NODES nodes"
  exit 1
fi
##endif

## Whether this node is the head (node rank 0), which hosts the rendezvous,
## decided once here: a node whose rank torchrun's rendezvous gives (an
## empty GPUCTL_NODE_RANK) never is.  Nothing below compares the rank.
gpuctl_is_head=0
if [ "$GPUCTL_NODE_RANK" = 0 ]; then
  gpuctl_is_head=1
fi

gpuctl_is_ipv4() {
  local a b c d
  [[ $1 =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || return 1
  IFS=. read -r a b c d <<<"$1"
  [ $((10#$a)) -le 255 ] && [ $((10#$b)) -le 255 ] &&
    [ $((10#$c)) -le 255 ] && [ $((10#$d)) -le 255 ]
}

gpuctl_is_ipv6() {
  [[ $1 =~ ^[0-9A-Fa-f:.]+$ && $1 == *:*:* ]]
}

## This node's private IP from the node script (the provider's metadata
## service), else, on a machine of its own, the first address `hostname -I`
## prints.
gpuctl_own_ip() {
  local ip='' rest
  ip=$(gpuctl_md_private_ip) || ip=''
  if [ "$gpuctl_md_machine" = 1 ] && ! gpuctl_is_ipv4 "$ip" && ! gpuctl_is_ipv6 "$ip"; then
    gpuctl_say "no IP from the $GPUCTL_METADATA metadata service; using hostname -I" >&2
    read -r ip rest <<<"$(hostname -I 2>/dev/null || true)" || true
  fi
  printf '%s\n' "$ip"
}

## Every node advertises its own IP literal to the rendezvous (torchrun
## --local_addr, below): left to itself torchrun publishes the host name,
## which peers on a cloud without shared DNS cannot resolve.  The job sees
## it as GPUCTL_NODE_IP.
gpuctl_node_ip=$(gpuctl_own_ip)
if gpuctl_is_ipv4 "$gpuctl_node_ip" || gpuctl_is_ipv6 "$gpuctl_node_ip"; then
  export GPUCTL_NODE_IP=$gpuctl_node_ip
else
  gpuctl_say "no IP literal for this node ('$gpuctl_node_ip')"
  unset GPUCTL_NODE_IP
fi
##if HEAD_FROM=ip
if [ -z "$GPUCTL_HEAD_IP" ]; then
  GPUCTL_HEAD_IP=$gpuctl_node_ip
fi
##endif
##if HEAD_FROM=name|node
## A host name as render.h's gpc_node_ctx says: [A-Za-z0-9.-], labels of
## 1..63 characters that neither start nor end with '-', 253 at most, the
## last label not all digits.
gpuctl_is_host_name() {
  local label
  local -a labels
  [ "${#1}" -le 253 ] && [[ $1 =~ ^[A-Za-z0-9.-]+$ && $1 != .* && $1 != *. && $1 != *..* ]] ||
    return 1
  IFS=. read -r -a labels <<<"$1"
  for label in "${labels[@]}"; do
    [ "${#label}" -le 63 ] && [[ $label != -* && $label != *- ]] || return 1
  done
  ! [[ $label =~ ^[0-9]+$ ]]
}
##endif
##if HEAD_FROM=node
## The head's address from the node script (the first host of the
## allocation), which says why when it cannot tell.
GPUCTL_HEAD_IP=$(gpuctl_md_head_addr) || exit 1
##endif
GPUCTL_HEAD_IP=${GPUCTL_HEAD_IP#\[}
GPUCTL_HEAD_IP=${GPUCTL_HEAD_IP%\]}
if gpuctl_is_ipv4 "$GPUCTL_HEAD_IP"; then
  gpuctl_endpoint="$GPUCTL_HEAD_IP:$GPUCTL_RDZV_PORT"
elif gpuctl_is_ipv6 "$GPUCTL_HEAD_IP"; then
  gpuctl_endpoint="[$GPUCTL_HEAD_IP]:$GPUCTL_RDZV_PORT"
##if HEAD_FROM=ip
else
  gpuctl_say "error: head address '$GPUCTL_HEAD_IP' is not an IP literal"
  exit 1
##endif
##if HEAD_FROM=name|node
elif gpuctl_is_host_name "$GPUCTL_HEAD_IP"; then
  gpuctl_endpoint="$GPUCTL_HEAD_IP:$GPUCTL_RDZV_PORT"
else
  gpuctl_say "error: head address '$GPUCTL_HEAD_IP' is neither a host name nor an IP literal"
  exit 1
##endif
fi
export GPUCTL_HEAD_IP

## --- GPUs ---

GPUCTL_GPUS_PER_NODE=0
if command -v nvidia-smi >/dev/null 2>&1; then
  if gpuctl_smi=$(nvidia-smi -L 2>/dev/null); then
    GPUCTL_GPUS_PER_NODE=$(printf '%s\n' "$gpuctl_smi" | grep -c '^GPU ' || true)
    ## nvidia-smi lists every GPU of the machine; a node given a share of
    ## them (the local provider on a multi-GPU server) sees only its own.
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "$GPUCTL_GPUS_PER_NODE" -gt 0 ]; then
      gpuctl_visible=$(printf '%s\n' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c . || true)
      if [ "$gpuctl_visible" -lt "$GPUCTL_GPUS_PER_NODE" ]; then
        GPUCTL_GPUS_PER_NODE=$gpuctl_visible
      fi
    fi
  else
    gpuctl_say "nvidia-smi failed; running on CPU"
  fi
fi
export GPUCTL_GPUS_PER_NODE
if [ "$GPUCTL_GPUS_PER_NODE" -gt 0 ]; then
  export GPUCTL_DIST_BACKEND=nccl
else
  export GPUCTL_DIST_BACKEND=gloo
fi
if [ "$GPUCTL_NPROC_PER_NODE" -eq 0 ]; then
  GPUCTL_NPROC_PER_NODE=$GPUCTL_GPUS_PER_NODE
  if [ "$GPUCTL_NPROC_PER_NODE" -eq 0 ]; then
    GPUCTL_NPROC_PER_NODE=1
  fi
fi
gpuctl_say "node ${GPUCTL_NODE_RANK:-(rank from the rendezvous)} of $GPUCTL_NUM_NODES," \
  "head $gpuctl_endpoint," \
  "GPUs $GPUCTL_GPUS_PER_NODE, nproc_per_node $GPUCTL_NPROC_PER_NODE, backend $GPUCTL_DIST_BACKEND"

##if DELIVER=1
## --- delivery ---
## The node does not see gpuctl's files: once the node runs, gpuctl
## (src/engine/deliver.c) sends over the provider's transport (ssh) the
## workdir into $GPUCTL_HOME/workdir, the secrets into
## $GPUCTL_RUN_DIR/secrets.env (tmpfs, mode 0600: `export NAME=VALUE`
## lines, values quoted for the shell) and then writes the marker
## $GPUCTL_HOME/delivered.  Wait for the marker (GPUCTL_DELIVER_WAIT_S,
## max_duration counts), a line a minute; no value ever reaches node.log.
gpuctl_wait=${GPUCTL_DELIVER_WAIT_S:-1800}
case $gpuctl_wait in '' | *[!0-9]*) gpuctl_wait=1800 ;; esac
gpuctl_t0=$SECONDS
gpuctl_n=0
until [ -e "$GPUCTL_HOME/delivered" ]; do
  if [ $((SECONDS - gpuctl_t0)) -ge "$gpuctl_wait" ]; then
    gpuctl_say "error: gpuctl delivered no workdir or secrets within ${gpuctl_wait}s" \
      "(no $GPUCTL_HOME/delivered; GPUCTL_DELIVER_WAIT_S): run gpuctl apply again" \
      "where this node can be reached by ssh"
    exit 1
  fi
  if gpuctl_over_time; then
    gpuctl_say "$gpuctl_end_why while waiting for gpuctl's delivery"
    exit 124
  fi
  if [ $((gpuctl_n++ % 60)) -eq 0 ]; then
    gpuctl_say "waiting for gpuctl to deliver the workdir and secrets over ssh"
  fi
  sleep 1
done
## Each job reads the secrets' values anew from the file gpuctl delivered
## last (a re-run or `gpuctl exec` delivers it again first), so that no
## value is ever kept on the node's disk (node.env).
gpuctl_secrets_load() {
  local f="${GPUCTL_RUN_DIR:-/run/gpuctl}/secrets.env" n
  if [ -z "$gpuctl_secret_names" ]; then
    return 0
  fi
  if [ ! -r "$f" ]; then
    gpuctl_say "error: the delivered secrets file $f is missing"
    exit 1
  fi
  # shellcheck disable=SC1090
  . "$f"
  for n in $gpuctl_secret_names; do
    if [ -z "${!n+x}" ]; then
      gpuctl_say "error: secret $n is not in the delivered $f"
      exit 1
    fi
    export "${n?}"
  done
  gpuctl_say "secrets set: $gpuctl_secret_names"
}
gpuctl_deliver_workdir={{DELIVER_WORKDIR}}
if [ "$gpuctl_deliver_workdir" = 1 ]; then
  GPUCTL_WORKDIR=$GPUCTL_HOME/workdir
fi
gpuctl_say "delivery received"
##endif
##if DELIVER=0
## The provider put the secrets' values in this script's environment
## (GPC_CAP_SECRETS), which the first job inherits; a later job (job.sh)
## takes them from this script's process while it lives (lifecycle.
## idle_timeout keeps it), never from a file.
# shellcheck disable=SC2317 # called by gpuctl_job
gpuctl_secrets_load() {
  local kv n
  if [ -z "$gpuctl_secret_names" ] || [ "$gpuctl_boot_pid" = "$$" ]; then
    return 0
  fi
  while IFS= read -r -d '' kv; do
    for n in $gpuctl_secret_names; do
      case $kv in "$n="*) export "${kv?}" ;; esac
    done
  done 2>/dev/null <"/proc/$gpuctl_boot_pid/environ" || true
}
##endif
## This script's pid (gpuctl_secrets_load), kept in node.env for job.sh.
gpuctl_boot_pid=$$

## --- directories ---

if [ -n "$GPUCTL_CHECKPOINT_DIR" ]; then
  export GPUCTL_CHECKPOINT_DIR
  mkdir -p "$GPUCTL_CHECKPOINT_DIR"
##if CKPT_STORE=1
  gpuctl_ckpt_restore || exit 1
##endif
else
  unset GPUCTL_CHECKPOINT_DIR
fi
if [ -n "$GPUCTL_WORKDIR" ]; then
  export GPUCTL_WORKDIR
else
  unset GPUCTL_WORKDIR
fi

## --- data ---
## The spec's data sets (include/gpuctl/data.h): the job sees data set NAME
## at $GPUCTL_DATA_DIR/NAME.  DATA=shared: this machine's store directory,
## which the nodes read in place; DATA=fetch: $GPUCTL_HOME/data, each data
## set fetched from its store URL (the node script's gpuctl_md_store_get
## URL DIR) before setup; DATA=none: no data sets (GPUCTL_DATA_DIR unset:
## the spec reserves GPUCTL_* names).
##if DATA=shared|fetch
GPUCTL_DATA_DIR={{DATA_DIR}}
export GPUCTL_DATA_DIR="${GPUCTL_DATA_DIR:-$GPUCTL_HOME/data}"
##endif
##if DATA=fetch
## Fetch data set $1 from URL $2 into $GPUCTL_DATA_DIR/$1, or fail the node.
gpuctl_data_fetch() {
  gpuctl_say "data $1: fetching $2"
  mkdir -p "$GPUCTL_DATA_DIR/$1"
  if ! gpuctl_md_store_get "$2" "$GPUCTL_DATA_DIR/$1"; then
    gpuctl_say "error: data $1: fetching $2 failed"
    exit 1
  fi
}
## Every data set, before each job's setup (`aws s3 sync` moves only
## what changed since the last job's fetch).
gpuctl_data_all() {
  :
{{DATA_FETCH}}
}
##endif

## Deep-learning images keep torch in an environment off cloud-init's PATH
## (AWS DLAMI: /opt/pytorch; older DLAMIs and others: /opt/conda).  Found
## before setup, so that setup's pip installs into the same environment.
if ! command -v torchrun >/dev/null 2>&1; then
  for gpuctl_d in /opt/pytorch/bin /opt/conda/bin /opt/conda/envs/pytorch/bin; do
    if [ -x "$gpuctl_d/torchrun" ]; then
      export PATH="$gpuctl_d:$PATH"
      break
    fi
  done
fi

## --- the job ---
## gpuctl_job: one job on this node with the wiring above: the job's
## workdir, setup, then torchrun; leaves torchrun's (or a worker's) exit
## status in gpuctl_rc, or exits with setup's.  The bootstrap runs the first
## job with it; job.sh (below) every later one.
gpuctl_job() {
  gpuctl_say "=== job $GPUCTL_JOB_ID: rendezvous id $GPUCTL_CLUSTER_ID-$GPUCTL_JOB_ID ==="
  ## workers/ holds this job's statuses only (gpuctl_worker_failed)
  rm -f "$GPUCTL_HOME/workers/"*.status "$GPUCTL_HOME/workers/"*.pid \
    "$GPUCTL_HOME/workers/group_rank"
  if [ -n "${GPUCTL_WORKDIR:-}" ]; then
    if ! cd "$GPUCTL_WORKDIR"; then
      gpuctl_say "error: workdir '$GPUCTL_WORKDIR' is missing"
      exit 1
    fi
  else
    cd "$GPUCTL_HOME"
  fi

  ## --- before setup ---
  ## (what the job needs before its setup: delivered secrets, data sets)
  gpuctl_secrets_load
##if DATA=fetch
  gpuctl_data_all
##endif

## --- setup ---

## `bash -e`: the first failing command fails the setup.  Nobody answers
## prompts on a node: apt-get in setup must not ask.
gpuctl_default DEBIAN_FRONTEND noninteractive
if [ -n "$GPUCTL_SETUP" ]; then
  gpuctl_phase setup
  gpuctl_run_limited setup /bin/bash -e -c "$GPUCTL_SETUP"
  if [ "$gpuctl_rc" -ne 0 ]; then
    gpuctl_say "setup failed with status $gpuctl_rc"
    exit "$gpuctl_rc"
  fi
fi

## --- torchrun ---

## Nodes but the head wait until it listens: the c10d store client gives up
## after about a minute, and the head may boot or set up more slowly.  The
## address and port were checked above, so they are safe in the command.
if [ "$gpuctl_is_head" = 0 ]; then
  gpuctl_wait=${GPUCTL_HEAD_WAIT_S:-1800}
  case $gpuctl_wait in '' | *[!0-9]*) gpuctl_wait=1800 ;; esac
  ## Tried every 0.25 s (a failed connect costs a few ms), so that the
  ## node starts within a quarter second of the head; a line every minute.
  gpuctl_t0=$SECONDS
  gpuctl_n=0
  until timeout 3 bash -c ": >/dev/tcp/$GPUCTL_HEAD_IP/$GPUCTL_RDZV_PORT" 2>/dev/null; do
    if [ $((SECONDS - gpuctl_t0)) -ge "$gpuctl_wait" ] || gpuctl_over_time; then
      gpuctl_say "head $gpuctl_endpoint not reachable after $((SECONDS - gpuctl_t0))s; starting anyway"
      break
    fi
    if [ $((gpuctl_n++ % 240)) -eq 0 ]; then
      gpuctl_say "waiting for head $gpuctl_endpoint"
    fi
    sleep 0.25
  done
fi
if gpuctl_over_time; then
  gpuctl_say "$gpuctl_end_why before torchrun"
  exit 124
fi

## torchrun's own interpreter tells which torch it will run.
gpuctl_py=python3
if command -v torchrun >/dev/null 2>&1; then
  gpuctl_launcher=(torchrun)
  gpuctl_shebang=''
  IFS= read -r gpuctl_shebang <"$(command -v torchrun)" || true
  if [[ $gpuctl_shebang == '#!'* ]]; then
    read -r gpuctl_interp gpuctl_arg _ <<<"${gpuctl_shebang#??}" || true
    case ${gpuctl_interp:-} in
      */env) gpuctl_py=${gpuctl_arg:-python3} ;;
      */python*) gpuctl_py=$gpuctl_interp ;;
      *) ;;
    esac
  fi
else
  gpuctl_launcher=("$gpuctl_py" -m torch.distributed.run)
fi
## Its version and whether its torchrun has --local_addr (torch 2.0 and
## later; pytorch/pytorch#88922), from the installed files: importing torch
## only to ask would cost seconds.  Prints "VERSION 0|1".
gpuctl_torch_info=$("$gpuctl_py" -c 'import importlib.util as u,importlib.metadata as m,os
d=os.path.dirname(u.find_spec("torch").origin)
print(m.version("torch"),int("local_addr" in open(d+"/distributed/run.py").read()))' 2>/dev/null ||
  true)
read -r gpuctl_torch gpuctl_local_addr <<<"$gpuctl_torch_info" || true
gpuctl_say "launcher ${gpuctl_launcher[*]}, torch ${gpuctl_torch:-unknown}"

## MAX_RESTARTS > 0 (a cluster that buys spot): when a node is lost, the
## others restart their workers into a new rendezvous round and wait up to
## JOIN_TIMEOUT_S for the node gpuctl makes in its place.
gpuctl_restarts={{MAX_RESTARTS}}
gpuctl_rdzv_conf="is_host=$gpuctl_is_head"
if [ "$gpuctl_restarts" -gt 0 ]; then
  gpuctl_rdzv_conf+=",join_timeout={{JOIN_TIMEOUT_S}}"
fi
gpuctl_args=(
  --nnodes="$GPUCTL_NUM_NODES"
  --nproc_per_node="$GPUCTL_NPROC_PER_NODE"
  --rdzv_backend=c10d
  --rdzv_endpoint="$gpuctl_endpoint"
  --rdzv_id="$GPUCTL_CLUSTER_ID-$GPUCTL_JOB_ID"
  --rdzv_conf="$gpuctl_rdzv_conf"
  --monitor_interval=0.1
  --max_restarts="$gpuctl_restarts"
  --log_dir "$GPUCTL_HOME/torchrun"
)
## torch 1.x (Debian 12's 1.13 on Python 3.11) fails at start unless
## --redirects and --tee are non-zero and not 3 (gpu-node.md); 2.x needs neither.
if [[ $gpuctl_torch == 1.* ]]; then
  gpuctl_args+=(--redirects 1 --tee 1)
fi
if [ -n "${GPUCTL_NODE_IP:-}" ]; then
  if [ "${gpuctl_local_addr:-0}" = 1 ]; then
    gpuctl_args+=(--local_addr="$GPUCTL_NODE_IP")
  else
    gpuctl_say "no --local_addr in torch < 2.0: peers must resolve host name $(hostname)"
  fi
fi

## Each worker runs the command through this wrapper, which records the
## command's exit status (torchrun itself exits 1 whatever status a worker
## had).  torch 2.x starts each worker in a session of its own and signals
## the whole group, the command included; torch 1.x signals the worker's pid
## only, so the wrapper passes the signal on when it is not a group leader.
## Local rank 0 also records the node's torchrun group rank
## (gpuctl_ckpt_writer).
# shellcheck disable=SC2090
export GPUCTL_RUN_COMMAND
mkdir -p "$GPUCTL_HOME/workers"
cat >"$GPUCTL_HOME/worker.sh" <<'EOF'
#!/bin/bash
c=0 fwd=1
read -r _ _ _ _ pg _ <"/proc/$$/stat" && [ "$pg" = "$$" ] && fwd=0
trap 'if [ "$fwd" = 1 ] && [ "$c" != 0 ]; then kill -TERM "$c" 2>/dev/null; fi' TERM INT HUP
trap 'if [ "$c" != 0 ]; then kill -USR1 "$c" 2>/dev/null; fi' USR1
printf '%s\n' "$$" >"$GPUCTL_HOME/workers/${LOCAL_RANK:-0}.pid"
[ "${LOCAL_RANK:-0}" != 0 ] || printf '%s\n' "${GROUP_RANK:-}" >"$GPUCTL_HOME/workers/group_rank"
/bin/bash -c "$GPUCTL_RUN_COMMAND" &
c=$!
while :; do
  wait "$c"
  rc=$?
  kill -0 "$c" 2>/dev/null || break
done
rm -f "$GPUCTL_HOME/workers/${LOCAL_RANK:-0}.pid"
printf '%s\n' "$rc" >"$GPUCTL_HOME/workers/${LOCAL_RANK:-0}.status"
exit "$rc"
EOF
gpuctl_args+=(--no_python /bin/bash "$GPUCTL_HOME/worker.sh")

## Unbuffered Python, so that node.log (and `gpuctl logs -f`) shows the
## training output as it happens; the user's env may say otherwise.
PYTHONUNBUFFERED="${PYTHONUNBUFFERED:-1}"
export PYTHONUNBUFFERED

##if CKPT_STORE=1
gpuctl_ckpt_start
##endif
gpuctl_phase running
gpuctl_run_limited torchrun "${gpuctl_launcher[@]}" "${gpuctl_args[@]}"

## When torchrun failed because a worker did, the node's status is the first
## worker's own exit status (by local rank) that is not a signal's.
if [ "$gpuctl_rc" -ne 0 ] && [ "$gpuctl_rc" -ne 124 ] && gpuctl_w=$(gpuctl_worker_failed); then
  gpuctl_say "torchrun exited $gpuctl_rc; local rank ${gpuctl_w% *} exited ${gpuctl_w#* }"
  gpuctl_rc=${gpuctl_w#* }
fi

  ## --- after the job ---
  ## (what follows the job, whatever its status: gpuctl_rc holds it)
}

## --- job runner ---
## The node's wiring for later jobs: every exported variable but the job
## env's own names (a later job brings its env) and the job id, and the
## bootstrap's own values the job functions read.  0600: it may hold what
## the provider passed the node in its environment.
gpuctl_node_save() {
  (
    umask 077
    for gpuctl_n in $gpuctl_user_env ${gpuctl_secret_names:-} GPUCTL_JOB_ID PWD OLDPWD SHLVL; do
      unset "$gpuctl_n"
    done
    export -p
    declare -p gpuctl_endpoint gpuctl_is_head GPUCTL_HEAD_IP GPUCTL_MAX_DURATION_S \
      gpuctl_end_s gpuctl_end_why \
      GPUCTL_NPROC_PER_NODE gpuctl_md_machine GPUCTL_METADATA gpuctl_secret_names
    ## what a section above set (idle, secrets, the store, checkpoints)
    for gpuctl_n in GPUCTL_IDLE_TIMEOUT_S GPUCTL_STORE_ENDPOINT; do
      if [ -n "${!gpuctl_n+x}" ]; then
        declare -p "$gpuctl_n"
      fi
    done
##if CKPT_STORE=1
    declare -p gpuctl_ckpt_ok GPUCTL_CKPT_URL
    printf 'gpuctl_ckpt_saver=0\n'
##endif
    printf 'gpuctl_boot_epoch=%s\n' "$(($(printf '%(%s)T' -1) - SECONDS))"
    printf 'gpuctl_boot_pid=%s\n' "$gpuctl_boot_pid"
  ) >"$GPUCTL_HOME/.node.env.tmp"
  mv -f "$GPUCTL_HOME/.node.env.tmp" "$GPUCTL_HOME/node.env"
}

## The env of the latest job that brought one, for later jobs without one.
gpuctl_env_save() {
  (
    umask 077
    printf 'gpuctl_user_env=%q\n' "$gpuctl_user_env"
    declare -f gpuctl_job_env
  ) >"$GPUCTL_HOME/.job.env.tmp"
  mv -f "$GPUCTL_HOME/.job.env.tmp" "$GPUCTL_HOME/job.env"
}

## job.sh [FILE]: run the job in FILE (default: read from standard input, as
## `gpuctl exec` sends it), after the running job, if any, has ended.  Its
## output goes to node.log and to standard output; its exit status is the
## job's.  The job file sets GPUCTL_JOB_ID ([A-Za-z0-9._-], 1 to 64),
## GPUCTL_SETUP and GPUCTL_RUN_COMMAND, and may define gpuctl_job_env (and
## set gpuctl_user_env, the names it exports), which then replaces job.env.
# shellcheck disable=SC2317
gpuctl_runner_main() {
  local f="$GPUCTL_HOME/jobs/.new.$$"
  mkdir -p "$GPUCTL_HOME/jobs"
  if [ $# -gt 0 ] && [ "$1" != - ]; then
    cat -- "$1" >"$f"
    ## a job gpuctl left here to start in the background is taken
    case $1 in "$GPUCTL_HOME/jobs/.sent."*) rm -f -- "$1" ;; esac
  else
    cat >"$f"
  fi
  GPUCTL_JOB_ID='' GPUCTL_SETUP='' GPUCTL_RUN_COMMAND=''
  unset -f gpuctl_job_env
  # shellcheck disable=SC1090
  . "$f"
  if ! [[ $GPUCTL_JOB_ID =~ ^[A-Za-z0-9._-]{1,64}$ ]] || [ -z "$GPUCTL_RUN_COMMAND" ]; then
    rm -f "$f"
    printf 'gpuctl: job file without a valid GPUCTL_JOB_ID or GPUCTL_RUN_COMMAND\n' >&2
    exit 2
  fi
  mv -f "$f" "$GPUCTL_HOME/jobs/$GPUCTL_JOB_ID.sh"
  ## output to node.log and the caller (before the job id is exported: the
  ## sweep must not kill tee)
  exec > >(exec tee -a "$GPUCTL_HOME/node.log") 2>&1
  export GPUCTL_JOB_ID
  gpuctl_lock
  if declare -F gpuctl_job_env >/dev/null; then
    gpuctl_env_save
  fi
  # shellcheck disable=SC1091
  . "$GPUCTL_HOME/job.env"
  gpuctl_job_env
  ## lifecycle.max_duration counts from the node's boot, as the OS's
  ## shutdown on a cloud does (gpuctl_boot_epoch: node.env)
  # shellcheck disable=SC2154
  SECONDS=$(($(printf '%(%s)T' -1) - gpuctl_boot_epoch))
  gpuctl_write job_id "$GPUCTL_JOB_ID"
  gpuctl_write job "running $(printf '%(%s)T' -1)"
  rm -f "$GPUCTL_HOME/exit_status"
  gpuctl_taken started
  trap gpuctl_runner_exit EXIT
  trap 'gpuctl_on_signal TERM 143' TERM
  trap 'gpuctl_on_signal INT 130' INT
  trap 'gpuctl_on_signal HUP 129' HUP
  gpuctl_default DEBIAN_FRONTEND noninteractive
  export GPUCTL_RUN_COMMAND
  gpuctl_job
  exit "$gpuctl_rc"
}

# shellcheck disable=SC2317
gpuctl_runner_exit() {
  local rc=$?
  set +e
  trap - EXIT
  trap '' TERM INT HUP
  if [ "$gpuctl_done" = 0 ]; then
    gpuctl_job_record "$rc"
  fi
  gpuctl_unlock
  exit "$rc"
}

## Install job.sh: the node's GPUCTL_HOME, its wiring (node.env) and the
## functions a job runs, as this script has them.
gpuctl_runner_install() {
  {
    printf '#!/bin/bash\n# gpuctl job runner (written by the bootstrap): job.sh [FILE|-]\n'
    printf 'set -euo pipefail\numask 022\nGPUCTL_HOME=%q\n' "$GPUCTL_HOME"
    ## a clean environment: the node's own, from node.env
    # shellcheck disable=SC2016
    printf '%s\n' '[ "${gpuctl_clean:-}" = 1 ] ||' \
      '  exec env -i gpuctl_clean=1 GPUCTL_HOME="$GPUCTL_HOME" /bin/bash "$0" "$@"' \
      'unset gpuctl_clean' '. "$GPUCTL_HOME/node.env"' \
      'gpuctl_done=0 gpuctl_child=0 gpuctl_rc=0 gpuctl_lock_fd='
    ## every function: the node script's and the sections' too (the
    ## checkpoint saver, the data fetch, the secrets)
    declare -f
    printf 'gpuctl_runner_main "$@"\n'
  } >"$GPUCTL_HOME/.job.sh.tmp"
  chmod 0755 "$GPUCTL_HOME/.job.sh.tmp"
  mv -f "$GPUCTL_HOME/.job.sh.tmp" "$GPUCTL_HOME/job.sh"
}

gpuctl_node_save
gpuctl_env_save
gpuctl_runner_install
##if NOTICE=1
gpuctl_notice_watch &
gpuctl_notice_pid=$!
##endif
##if FIRST_JOB=0
## A node added to a live cluster (apply of a changed node count): no job
## of its own.  It is up, with its runner; gpuctl hands the cluster's next
## job to every node, this one included, through job.sh.  Until then the
## node is idle (phase "idle"), and lifecycle.idle_timeout counts from now.
gpuctl_done=1
gpuctl_phase idle
gpuctl_write job "ended $(printf '%(%s)T' -1)"
exit 0
##endif
## The first job's file, as a later one's (job.sh reads the same form).
mkdir -p "$GPUCTL_HOME/jobs"
(
  umask 077
  printf 'GPUCTL_JOB_ID=%q\nGPUCTL_SETUP=%q\nGPUCTL_RUN_COMMAND=%q\n' "$GPUCTL_JOB_ID" \
    "$GPUCTL_SETUP" "$GPUCTL_RUN_COMMAND"
) >"$GPUCTL_HOME/jobs/$GPUCTL_JOB_ID.sh"
gpuctl_write job_id "$GPUCTL_JOB_ID"
gpuctl_lock
gpuctl_job
exit "$gpuctl_rc"
