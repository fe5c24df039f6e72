#!/bin/bash
# Data sets that outlive a job, on the local provider (docs/spec.md#data,
# docs/cli.md#data, #destroy):
#  1. a data set a live cluster uses is protected: another cluster's apply
#     that would change it (a file to send, or one to delete) is refused
#     (exit 3) before anything is made or pushed, naming the set, the
#     cluster and what to do; the same content is shared (nothing sent);
#     data push and data rm of it are refused while a live cluster uses it;
#  2. apply mirrors the source: a file gone from the directory is deleted
#     from the store, counted on the apply line; data push --delete does the
#     same, plain push never deletes;
#  3. destroy keeps the checkpoints in the store and says where; destroy
#     --purge (also after an earlier destroy) removes them, never a data set;
#  4. data pull: the modes cp gives (umask), and a pull that fails half-way
#     says what arrived and leaves no half-written file.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work"
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"

mkdir -p src1/sub
printf 'hello' > src1/a        # 5 B
printf 'bb\n' > src1/b         # 3 B
printf 'c\n' > src1/sub/c      # 2 B
spec() {  # NAME DIR
    printf 'name: %s\ndata:\n  ds: %s\nrun: sleep 60\n' "$1" "$2" > "$1.yaml"
}

# ---- 1. protected while a live cluster uses it -------------------------------
spec aa ./src1
run_rc rc g -y apply -f aa.yaml > "$T/aa.out" 2> "$T/aa.err"
expect_eq "aa: apply pushes the data set" \
    "0 gpuctl: data ds: 3 file(s) sent (10 B), 0 unchanged, 0 deleted -> $STATE/store/data/ds" \
    "$rc $(grep '^gpuctl: data ds' "$T/aa.err")"
expect_eq "  the state records what it placed: an event of aa with the content digest" \
    "data|data set ds placed: content sha256 $(cd src1 && for f in a b sub/c; do printf '%s\t%s\t%s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum < "$f" | cut -d' ' -f1)"; done | sha256sum | cut -d' ' -f1)" \
    "$(python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("SELECT e.kind, e.message FROM events e JOIN clusters c ON c.id = e.cluster_id WHERE c.name = ? AND e.kind = ?", ("aa", "data")).fetchall(); print("|".join(r[0]))' "$STATE/gpuctl.db")"

cp -r src1 src2
printf 'HELLO' > src2/a        # same size, other bytes
spec bb ./src2
run_rc rc g -y apply -f bb.yaml > "$T/bb.out" 2> "$T/bb.err"
expect_eq "bb: a changed file under aa's job: refused, exit 3, naming the set, aa, what to do" \
    "3 gpuctl: error: bb.yaml:3:7: data.ds: live cluster 'aa' uses data set 'ds' in the store of local region local, and ./src2 holds other files than it does; applying would change the files under its job. Destroy it first (gpuctl destroy aa), or give this data set a name of its own" \
    "$rc $(cat "$T/bb.err")"
expect_eq "  nothing recorded for bb, nothing pushed" "7|hello" \
    "$(g status bb > /dev/null 2>&1; echo $?)|$(cat "$STATE/store/data/ds/a")"
# plan refuses it the same, offline (a user trial: plan --detailed-exitcode
# approved with 2 what apply then refused with 3)
BB_ERR="gpuctl: error: bb.yaml:3:7: data.ds: live cluster 'aa' uses data set 'ds' in the store of local region local, and ./src2 holds other files than it does; applying would change the files under its job. Destroy it first (gpuctl destroy aa), or give this data set a name of its own"
run_rc rc g plan --detailed-exitcode bb.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan --detailed-exitcode of it: exit 1, apply's message" "1 $BB_ERR" "$rc $(cat "$T/e.txt")"
run_rc rc g plan bb.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan of it: exit 3, as apply" "3 $BB_ERR" "$rc $(cat "$T/e.txt")"
run_rc rc g apply --dry-run -f bb.yaml > /dev/null 2> "$T/e.txt"
expect_eq "apply --dry-run of it: exit 3, as apply" "3 $BB_ERR" "$rc $(cat "$T/e.txt")"
cp -r src1 src3
rm src3/sub/c                  # a file the push would delete
spec bb ./src3
run_rc rc g -y apply -f bb.yaml > "$T/bb.out" 2> "$T/bb.err"
expect_eq "bb: a file fewer (one to delete): refused too" "3|ok" \
    "$rc|$(grep -q "and ./src3 holds other files than it does" "$T/bb.err" && echo ok)"
expect_eq "  aa's file is still there" "c" "$(cat "$STATE/store/data/ds/sub/c")"

cp -r src1 same
spec bb ./same
run_rc rc g -y apply -f bb.yaml > "$T/bb.out" 2> "$T/bb.err"
expect_eq "bb: the same files: shared, nothing sent" \
    "0 gpuctl: data ds: 0 file(s) sent (0 B), 3 unchanged, 0 deleted -> $STATE/store/data/ds" \
    "$rc $(grep '^gpuctl: data ds' "$T/bb.err")"
# aa's own data changing while bb shares the set: a re-run that would
# change bb's files, refused by plan and apply alike
printf 'new\n' > src1/new
run_rc rc g plan --detailed-exitcode aa.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan of aa with its data changed while bb shares it: exit 1, naming bb" \
    "1 gpuctl: error: aa.yaml:3:7: data.ds: live cluster 'bb' uses data set 'ds' in the store of local region local, and ./src1 holds other files than it does; applying would change the files under its job. Destroy it first (gpuctl destroy bb), or give this data set a name of its own" \
    "$rc $(cat "$T/e.txt")"
run_rc rc g -y apply -f aa.yaml > /dev/null 2> "$T/e.txt"
expect_eq "  apply of it: exit 3, nothing pushed" "3|no" \
    "$rc|$([ -e "$STATE/store/data/ds/new" ] && echo yes || echo no)"
rm src1/new

run_rc rc g data push src2 --name ds 2> "$T/e.txt"
expect_eq "data push of other files to a data set live clusters use: exit 3, naming each, a destroy for each" \
    "3 gpuctl: error: refusing to push to data set 'ds' in the store of local: live clusters 'aa', 'bb' use it, and their jobs read it; src2 holds other files than they placed there. Destroy them first (gpuctl destroy aa; gpuctl destroy bb), or push under another --name" \
    "$rc $(cat "$T/e.txt")"
run_rc rc g data push same --name ds > "$T/p.txt" 2> "$T/e.txt"
expect_eq "data push of the same files (by content): allowed, nothing sent, said so" \
    "0 data ds: 0 file(s) sent (0 B), 3 unchanged|gpuctl: data ds: same holds the files live clusters 'aa', 'bb' use: nothing under their jobs changes" \
    "$rc $(head -1 "$T/p.txt")|$(cat "$T/e.txt")"
run_rc rc g -y data rm ds 2> "$T/e.txt"
expect_eq "data rm of it: exit 3, nothing removed, no 'another name' for a removal" \
    "3 gpuctl: error: refusing to remove data set 'ds' in the store of local: live clusters 'aa', 'bb' use it, and their jobs read it; destroy them first (gpuctl destroy aa; gpuctl destroy bb), then remove it|3" \
    "$rc $(cat "$T/e.txt")|$(find "$STATE/store/data/ds" -type f | wc -l)"
run_rc rc g data push src2 --name other > "$T/p.txt"
expect_eq "data push to another name: fine" "0 data other: 3 file(s) sent (10 B), 0 unchanged" \
    "$rc $(head -1 "$T/p.txt")"
g -y destroy bb > /dev/null 2>&1
run_rc rc g -y data rm ds 2> "$T/e.txt"
expect_eq "with bb destroyed, aa alone still protects it" \
    "3 gpuctl: error: refusing to remove data set 'ds' in the store of local: live cluster 'aa' uses it, and its job reads it; destroy it first (gpuctl destroy aa), then remove it" \
    "$rc $(cat "$T/e.txt")"
g -y destroy aa > "$T/d.txt" 2>&1

# ---- 2. apply mirrors the source; push --delete ---------------------------------
printf 'hello!' > src1/a
rm src1/sub/c
run_rc rc g -y apply -f aa.yaml > "$T/aa.out" 2> "$T/aa.err"
expect_eq "apply after a file changed and one was removed: sent 1, deleted 1" \
    "0 gpuctl: data ds: 1 file(s) sent (6 B), 1 unchanged, 1 deleted -> $STATE/store/data/ds" \
    "$rc $(grep '^gpuctl: data ds' "$T/aa.err")"
expect_eq "  the store is the directory as it is now (no empty sub/ left)" "a b" \
    "$(cd "$STATE/store/data/ds" && find . -mindepth 1 | sed 's|^\./||' | sort | paste -sd' ')"
g -y destroy aa > /dev/null 2>&1

rm src2/b
run_rc rc g data push src2 --name other > "$T/p.txt"
expect_eq "data push without --delete never deletes" "0 data other: 0 file(s) sent (0 B), 2 unchanged|3" \
    "$rc $(head -1 "$T/p.txt")|$(find "$STATE/store/data/other" -type f | wc -l)"
run_rc rc g data push src2 --name other --delete > "$T/p.txt"
expect_eq "data push --delete: the file gone from DIR is deleted" \
    "0 data other: 0 file(s) sent (0 B), 2 unchanged, 1 deleted|a sub/c" \
    "$rc $(head -1 "$T/p.txt")|$(cd "$STATE/store/data/other" && find . -type f | sed 's|^\./||' | sort | paste -sd' ')"
rm src2/sub/c
g -o json data push src2 --name other --delete > "$T/p.json"
check_schema "$T/p.json" data
expect_eq "  -o json: files_deleted" "0 1 1" \
    "$(json_get "$T/p.json" '" ".join(str(d[k]) for k in ("files_sent", "files_unchanged", "files_deleted"))')"
run_rc rc g data ls --delete 2> "$T/e.txt"
expect_eq "--delete belongs to push: exit 3" "3" "$rc"

# ---- 3. destroy keeps the checkpoints; --purge removes them ------------------------
# (what a cloud node saves with gpuctl_md_store_put; local's nodes write
# checkpoint_dir in place, so the test puts two files where a node would;
# a plain destroy looks only when the spec has checkpoint_dir)
printf 'checkpoint_dir: ./ck\n' >> aa.yaml
mkdir -p ck
g -y apply -f aa.yaml > /dev/null 2>&1
printf 'w' > ck/c1.pt          # what the job wrote in checkpoint_dir (local: in place)
OWN="checkpoints kept: 1 file(s) in $T/work/ck (checkpoint_dir: your own directory on this machine; gpuctl never removes it, not even with --purge)"
CK="$STATE/store/clusters/aa/checkpoints"
mkdir -p "$CK/step-2"
printf '1' > "$CK/step-1.pt"
printf '22' > "$CK/step-2/model.pt"
run_rc rc g -y destroy aa > "$T/d.txt"
expect_eq "destroy: the checkpoints kept, said where and how to remove them; checkpoint_dir on local named as the user's own" \
    "0|cluster aa: destroyed (1 node(s) deleted)|checkpoints kept: 2 file(s) at $CK; gpuctl destroy --purge aa removes them|$OWN|2" \
    "$rc|$(sed -n 1p "$T/d.txt")|$(sed -n 2p "$T/d.txt")|$(sed -n 3p "$T/d.txt")|$(find "$CK" -type f | wc -l)"
run_rc rc g -y -o json destroy --purge aa > "$T/d.json"
check_schema "$T/d.json" destroy
expect_eq "destroy --purge after the destroy: removed (-o json); checkpoint_dir kept" \
    "0 False 0 $CK 2 True $T/work/ck 1" \
    "$rc $(json_get "$T/d.json" '" ".join(str(d[k]) for k in ("found", "deleted", "checkpoints", "checkpoint_files", "purged", "checkpoint_dir", "checkpoint_dir_files"))')"
expect_eq "  gone; the data sets stay; checkpoint_dir too" "no|a b|w" \
    "$([ -e "$CK" ] && echo yes || echo no)|$(cd "$STATE/store/data/ds" && find . -type f | sed 's|^\./||' | sort | paste -sd' ')|$(cat ck/c1.pt)"
g -y apply -f aa.yaml > /dev/null 2>&1
mkdir -p "$CK" && printf '3' > "$CK/step-3.pt"
run_rc rc g destroy --purge aa < /dev/null > "$T/d.txt" 2> "$T/e.txt"
expect_eq "destroy --purge of a live cluster: nodes, then checkpoints; checkpoint_dir kept" \
    "0|cluster aa: destroyed (1 node(s) deleted)|checkpoints removed: 1 file(s) at $CK|$OWN|no|w" \
    "$rc|$(sed -n 1p "$T/d.txt")|$(sed -n 2p "$T/d.txt")|$(sed -n 3p "$T/d.txt")|$([ -e "$CK" ] && echo yes || echo no)|$(cat ck/c1.pt)"
# a user trial: on local, --purge said "no checkpoints in the store to
# remove" and nothing of ck/c1.pt, still there
run_rc rc g -y destroy --purge aa > "$T/d.txt"
expect_eq "destroy --purge again: nothing left in the store; checkpoint_dir said kept" \
    "0|cluster aa: already destroyed, nothing to destroy|no checkpoints in the store to remove|$OWN" \
    "$rc|$(sed -n 1p "$T/d.txt")|$(sed -n 2p "$T/d.txt")|$(sed -n 3p "$T/d.txt")"

# ---- 4. data pull: modes, and a failure half-way ---------------------------------
run_rc rc bash -c "umask 022 && exec \"\$GPUCTL_BIN\" --state-dir \"$STATE\" data pull ds \"$T/o1\"" > /dev/null
expect_eq "pull with umask 022: files 644, directories 755 (as cp)" "0 755 644 644" \
    "$rc $(stat -c %a "$T/o1") $(stat -c %a "$T/o1/a") $(stat -c %a "$T/o1/b")"
g data push src1 --name m > /dev/null
mkdir -p src1/sub && printf 'c\n' > src1/sub/c && g data push src1 --name m > /dev/null
run_rc rc bash -c "umask 002 && exec \"\$GPUCTL_BIN\" --state-dir \"$STATE\" data pull m \"$T/o2\"" > /dev/null
expect_eq "pull with umask 002: 664 and 775, sub-directories too" "0 775 664 775 664" \
    "$rc $(stat -c %a "$T/o2") $(stat -c %a "$T/o2/a") $(stat -c %a "$T/o2/sub") $(stat -c %a "$T/o2/sub/c")"
printf 'f' > "$T/afile"
run_rc rc g data pull m "$T/afile" 2> "$T/e.txt"
expect_eq "pull into a file that is not a directory: exit 3 (as push), before anything" \
    "3 gpuctl: error: $T/afile: not a directory|f" "$rc $(cat "$T/e.txt")|$(cat "$T/afile")"
mkdir -p "$T/o3/b/x"            # b cannot land: a directory is in its way
run_rc rc g data pull m "$T/o3" 2> "$T/e.txt"
expect_eq "a pull failing half-way: says what arrived, exit 5" \
    "5 gpuctl: error: data pull m: 1 of 3 file(s) (6 B) arrived in $T/o3 before this failure, each whole; pull again to fetch the rest: $T/o3/b: Is a directory" \
    "$rc $(cat "$T/e.txt")"
expect_eq "  no half-written file is left" "a b/x" \
    "$(cd "$T/o3" && find . -mindepth 1 \( -type f -o -type d -empty \) | sed 's|^\./||' | sort | paste -sd' ')"

finish
