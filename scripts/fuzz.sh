#!/bin/bash
# Build the fuzz targets of tests/fuzz/ (clang, libFuzzer, ASan + UBSan) in
# build-fuzz/ and run each for SECONDS (default 60) from its corpus; see
# docs/testing.md, "Fuzzing".  Exits 1 when a target crashed, leaked, timed
# out or ran out of memory; its input is then in build-fuzz/artifacts/NAME/.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# New inputs that reach new code go to build-fuzz/corpus/NAME/, never into
# tests/fuzz/corpus/ (whose files are only read).  JOBS=N runs N fuzzing
# processes per target (libFuzzer -fork=N); BUILD=DIR another build dir.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
BUILD=${BUILD:-build-fuzz}
JOBS=${JOBS:-1}
ALL=(spec plan catalog_csv ec2 aws_config)
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
case $SECS in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$SECS'" >&2; exit 3 ;; esac

cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DGPUCTL_FUZZ=ON -DGPUCTL_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target fuzzers

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${TARGETS[@]}"; do
    seeds="tests/fuzz/corpus/$t"
    [ -d "$seeds" ] || { echo "fuzz.sh: no target '$t' (one of: ${ALL[*]})" >&2; exit 3; }
    mkdir -p "$BUILD/corpus/$t" "$BUILD/artifacts/$t"
    echo "== fuzz_$t: ${SECS}s"
    fork=()
    [ "$JOBS" -gt 1 ] && fork=(-fork="$JOBS" -ignore_crashes=0)
    if ! "$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t/" "${fork[@]}" \
            "$BUILD/corpus/$t" "$seeds" 2> "$BUILD/fuzz_$t.log"; then
        failed+=("$t")
        tail -n 60 "$BUILD/fuzz_$t.log"
    else
        grep -E '^stat::number_of_executed_units|^Done [0-9]+ runs' "$BUILD/fuzz_$t.log" || true
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: FAILED: ${failed[*]} (inputs in $BUILD/artifacts/, logs $BUILD/fuzz_*.log)" >&2
    exit 1
fi
echo "fuzz.sh: ${#TARGETS[@]} target(s), ${SECS}s each: no crash"
