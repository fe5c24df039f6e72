#!/bin/sh
# Copy a built gpuctl and the shared libraries it links (except glibc's own)
# into DIR, so that the GPU check (tests/gpu/run.sh) can run on a machine
# that has none of the -dev packages: LD_LIBRARY_PATH=DIR/lib DIR/gpuctl.
# Usage: tests/gpu/bundle.sh build/gpuctl build-gpu
set -eu
bin=$1
dir=$2
mkdir -p "$dir/lib"
cp "$bin" "$dir/gpuctl"
ldd "$bin" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|ld-linux*) ;;
        *) cp -L "$lib" "$dir/lib/" ;;
    esac
done
du -sh "$dir"
