## templates/notice.sh: the interruption-notice watcher of a spot node,
## included in the bootstrap after its checkpoint functions (NOTICE_SCRIPT),
## rendered with the bootstrap's placeholders; `##` lines do not reach the
## node.  The bootstrap includes it where NOTICE=1: the node is spot and its
## node script defines gpuctl_md_notice (the contract: include/gpuctl/render.h).
## --- interruption notices ---
## The watcher asks the provider (gpuctl_md_notice) every
## GPUCTL_NOTICE_POLL_S seconds (5, as AWS advises for spot/instance-action)
## whether this node is about to be interrupted.  A failed ask is said once
## and asked again; it is never taken for "no notice".  On a notice, once:
##   - `preempting` gets "ACTION EPOCH" (GPUCTL_PREEMPT_FILE, which gpuctl
##     and the job can read) and node.log the notice with its deadline;
##   - every worker of the running job gets SIGUSR1 (worker.sh passes it on
##     to the process of run.command), so that the job saves a checkpoint;
##   - where checkpoints are kept in the store and global rank 0 runs here
##     (gpuctl_ckpt_writer), checkpoint_dir is saved there once a file in
##     it is newer than the notice: after GPUCTL_NOTICE_SAVE_WAIT_S seconds
##     (60) at most, and no later than 20 s before the deadline.
## The watcher runs for the node's life, not a job's: it carries no job id,
## so that no job's sweep (gpuctl_sweep) stops it.
gpuctl_notice_watch() {
  local every=${GPUCTL_NOTICE_POLL_S:-5} failing=0 why
  case $every in '' | *[!0-9]* | 0) every=5 ;; esac
  trap - EXIT INT HUP
  trap 'exit 0' TERM
  unset GPUCTL_JOB_ID
  gpuctl_say "interruption notices: asking the $GPUCTL_METADATA metadata service every ${every}s"
  while :; do
    gpuctl_md_notice_is=''
    if gpuctl_md_notice 2>"$GPUCTL_HOME/.notice.err"; then
      if [ "$failing" = 1 ]; then
        gpuctl_say "interruption notices: the metadata service answers again"
      fi
      failing=0
      if [ -n "$gpuctl_md_notice_is" ]; then
        # shellcheck disable=SC2086 # "ACTION EPOCH": two words
        gpuctl_notice_take $gpuctl_md_notice_is
        return 0
      fi
    elif [ "$failing" = 0 ]; then
      failing=1
      why=$(tail -n 1 "$GPUCTL_HOME/.notice.err" 2>/dev/null) || why=''
      gpuctl_say "interruption notices: could not ask (${why:-no reason given});" \
        "asking again every ${every}s"
    fi
    sleep "$every" &
    wait "$!"
  done
}

## The notice ACTION at EPOCH (0: not said), once.
gpuctl_notice_take() {
  local act=$1 at=${2:-0} now when='not given' f pid w t0
  printf -v now '%(%s)T' -1
  [[ $at =~ ^[0-9]{1,12}$ ]] || at=0
  if [ "$at" -gt 0 ]; then
    when="$(date -u -d "@$at" +%Y-%m-%dT%H:%M:%SZ) (in $((at - now))s)"
  fi
  gpuctl_write preempting "$act $at"
  gpuctl_say "interruption notice: $act at $when; the job's workers get SIGUSR1"
  for f in "$GPUCTL_HOME/workers/"*.pid; do
    pid=''
    read -r pid 2>/dev/null <"$f" || continue
    [[ $pid =~ ^[0-9]+$ ]] && kill -USR1 "$pid" 2>/dev/null || true
  done
##if CKPT_STORE=1
  if [ "$gpuctl_ckpt_ok" = 1 ] && gpuctl_ckpt_writer; then
    w=${GPUCTL_NOTICE_SAVE_WAIT_S:-60}
    case $w in '' | *[!0-9]*) w=60 ;; esac
    if [ "$at" -gt 0 ] && [ $((at - 20 - now)) -lt "$w" ]; then
      w=$((at - 20 - now))
    fi
    t0=$SECONDS
    while [ $((SECONDS - t0)) -lt "$w" ] &&
      [ -z "$(find "$GPUCTL_CHECKPOINT_DIR" -type f -newer "$GPUCTL_HOME/preempting" \
        -print -quit 2>/dev/null)" ]; do
      sleep 1
    done
    gpuctl_ckpt_save notice
  fi
##endif
}
