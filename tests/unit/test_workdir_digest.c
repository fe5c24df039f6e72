/*
 * The workdir's content digest (deliver.c, gpc_lc_workdir_digest), which
 * decides whether `apply` runs a cluster's job again (rerun.c): the files
 * the delivery would send (rsync --list-only with .gitignore and
 * .gpuctlignore, gpuctl's state directory left out), by path, size and
 * SHA-256.
 *
 * The expected digest was computed by hand from the lines rsync lists:
 *   for f in .gitignore .gpuctlignore a.py sub/b.txt; do
 *     printf '%s\t%s\t%s\n' "$f" "$(stat -c %s $f)" "$(sha256sum < $f | cut -d' ' -f1)"
 *   done | sha256sum
 * in a directory holding the files made below.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include "../../src/engine/lifecycle.h"

static const char expected[] =
    "d4e2cd603a064ef9b69e5c3e7a92473088282721c5f63360dd1408a7c1558349";

static char dir[64];
static char state_dir[96]; /* gpuctl's state directory, inside the workdir */

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void digest(char hex[65])
{
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_lc_workdir_digest(dir, state_dir, hex, &e), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/gpuctl-wd-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char p[256];
    snprintf(p, sizeof(p), "%s/out", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/sub", dir);
    mkdir(p, 0755);
    snprintf(state_dir, sizeof(state_dir), "%s/.gpuctl", dir);
    mkdir(state_dir, 0700);
    put("a.py", "print(1)\n");
    put(".gitignore", "out/\n");
    put(".gpuctlignore", "*.tmp\n");
    put("out/x", "x");          /* ignored: .gitignore */
    put("sub/b.txt", "b\n");
    put("sub/c.tmp", "t");      /* ignored: .gpuctlignore */
    put(".gpuctl/gpuctl.db", "state"); /* left out: gpuctl's state */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_digest(void **state)
{
    (void)state;
    if (system("rsync --version >/dev/null 2>&1") != 0)
        skip();
    char hex[65];
    digest(hex);
    assert_string_equal(hex, expected);

    /* a touch, a file the job writes under an ignored directory, an
     * ignored file: the same digest */
    char p[256];
    snprintf(p, sizeof(p), "%s/a.py", dir);
    struct utimbuf t = {.actime = 1000000000, .modtime = 1000000000};
    assert_int_equal(utime(p, &t), 0);
    put("out/y", "written by the job");
    put("sub/d.tmp", "scratch");
    put(".gpuctl/gpuctl.db", "state, changed by the next command");
    digest(hex);
    assert_string_equal(hex, expected);

    /* the same size, other bytes: another digest; back: the same again */
    put("a.py", "print(2)\n");
    digest(hex);
    assert_string_not_equal(hex, expected);
    put("a.py", "print(1)\n");
    digest(hex);
    assert_string_equal(hex, expected);

    /* a new file that is sent: another digest */
    put("sub/e.txt", "");
    digest(hex);
    assert_string_not_equal(hex, expected);
}

static void test_missing(void **state)
{
    (void)state;
    if (system("rsync --version >/dev/null 2>&1") != 0)
        skip();
    char hex[65] = "x";
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_lc_workdir_digest("/nonexistent/gpuctl-wd", NULL, hex, &e), GPC_ERR_IO);
    assert_string_equal(e.msg, "rsync --list-only /nonexistent/gpuctl-wd/ failed");
    assert_string_equal(hex, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_digest, setup, teardown),
        cmocka_unit_test(test_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
