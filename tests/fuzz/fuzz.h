/*
 * fuzz.h - what the fuzz targets in tests/fuzz/ share (docs/testing.md,
 * "Fuzzing").
 *
 * Each target is one LLVMFuzzerTestOneInput over one entry point of the
 * binary (the spec parser, the plan loader, the catalog loader, the aws
 * provider's answer readers, the AWS config readers).  It
 * is linked two ways: with libFuzzer (clang, -DGPUCTL_FUZZ=ON) to fuzz,
 * and with replay.c (any compiler) as a ctest that runs every input of
 * its corpus once, so that the sanitizer suite replays each defect the
 * fuzzers found.
 *
 * No target reaches the network or writes outside its temporary
 * directory: fuzz_init() points HOME, the XDG and gpuctl directories and
 * the AWS files into it, and every target is linked with
 * -Wl,--wrap=gpc_http_send,--wrap=gpc_http_send_all,--wrap=posix_spawn:
 * HTTP requests are answered from fuzz_answers() (or fail, when none are
 * set) without a socket, and no command a fuzzed file names is run.
 */
#ifndef GPUCTL_FUZZ_H
#define GPUCTL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Make the temporary directory and the environment (once per process) and
 * put the fixed clock (clock.h; waits return at once) back at
 * 2026-01-01T00:00:00Z (at every call: each target calls it first for
 * each input); returns the directory.  Aborts when it cannot. */
const char *fuzz_init(void);

/* tmpdir/name; static storage, one at a time per call site (copy it). */
const char *fuzz_path(const char *name);

/* Write len bytes to path (created 0600 or truncated); aborts on failure. */
void fuzz_write(const char *path, const void *data, size_t len);

/*
 * Inputs with several parts: a preamble, then parts that each start with a
 * line "@@@@ HEADER" (the header is the rest of that line); a part's
 * content runs to the line end before the next such line.  Returns how
 * many parts (at most max) were found; *pre (NUL-terminated copy) is the
 * preamble.  Strings point into `buf`, a NUL-terminated copy of the input
 * that the caller frees.
 */
typedef struct fuzz_part {
    const char *header;
    const char *data;
    size_t len;
} fuzz_part;
size_t fuzz_split(const uint8_t *in, size_t size, char **buf, const char **pre,
                  fuzz_part *parts, size_t max);

/*
 * The answers the fake HTTP layer gives, in order, one per attempt: a
 * part's header is "STATUS" or "STATUS Name: value" (one response header),
 * its data the body.  Past the last answer every attempt fails as a
 * transport error (status 0).  Borrowed until fuzz_answers(NULL, 0).
 */
void fuzz_answers(const fuzz_part *parts, size_t n);

/* The file a command spawned with posix_spawn() prints (it runs
 * "/bin/cat FILE" instead, with the caller's file actions); NULL: spawning
 * fails with ENOSYS. */
void fuzz_spawn_output(const char *file);

/* With GPUCTL_FUZZ_VERBOSE set (for corpus work, docs/testing.md): print
 * "TARGET: what happened" to stderr, and how many answers were used. */
void fuzz_note(const char *target, const char *what, const gpc_error *err);

#endif /* GPUCTL_FUZZ_H */
