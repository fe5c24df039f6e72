#!/bin/bash
# Build gpuctl with AddressSanitizer + UndefinedBehaviorSanitizer and the
# test hooks (GPUCTL_TEST_FAULT, GPUCTL_FAKE_NOW; docs/testing.md) and run
# the whole test suite (unit tests and end-to-end tests) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-asan}
cmake -S . -B "$BUILD" -DGPUCTL_SANITIZE=ON -DGPUCTL_TEST_HOOKS=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j2 "$@"
