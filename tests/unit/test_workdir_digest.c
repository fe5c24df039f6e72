/*
 * The workdir's content digest (deliver.c, gpc_lc_workdir_digest), which
 * decides whether `apply` runs a cluster's job again (rerun.c): the files
 * the delivery would send (rsync --list-only with .gitignore and
 * .gpuctlignore, gpuctl's state directory left out), by path, size and
 * SHA-256.
 *
 * The expected digest was computed by hand from the entries rsync lists,
 * in a directory holding the files made below (umask 022):
 *   { for f in .gitignore .gpuctlignore a.py; do
 *       printf '%s\t%s\t%s\t%s\n' "$f" "$(stat -c %s $f)" \
 *         "$(sha256sum < $f | cut -d' ' -f1)" "$(stat -c %A $f)"; done
 *     printf 'link -> a.py\tlrwxrwxrwx\n'
 *     f=sub/b.txt; printf ... (the same for it); } | sha256sum
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
    "b12a5e9a32e47f8a3f287852b2228874e2acec13f7e099cfbee6b4563791a62c";

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
    const char *out[] = {state_dir, NULL};
    assert_int_equal(gpc_lc_workdir_digest(dir, out, 2, hex, &e), 0);
}

static int setup(void **state)
{
    (void)state;
    umask(022);
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
    snprintf(p, sizeof(p), "%s/.git", dir);
    mkdir(p, 0755);
    put(".git/HEAD", "ref");    /* left out: git's own */
    snprintf(p, sizeof(p), "%s/link", dir);
    if (symlink("a.py", p) != 0)
        return -1;
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
    put(".git/index", "git status rewrote it");
    digest(hex);
    assert_string_equal(hex, expected);

    /* the same size, other bytes: another digest; back: the same again */
    put("a.py", "print(2)\n");
    digest(hex);
    assert_string_not_equal(hex, expected);
    put("a.py", "print(1)\n");
    digest(hex);
    assert_string_equal(hex, expected);

    /* the mode of a file (a script made executable): another digest */
    assert_int_equal(chmod(p, 0755), 0);
    digest(hex);
    assert_string_not_equal(hex, expected);
    assert_int_equal(chmod(p, 0644), 0);
    digest(hex);
    assert_string_equal(hex, expected);

    /* a link pointing elsewhere: another digest */
    snprintf(p, sizeof(p), "%s/link", dir);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(symlink("sub/b.txt", p), 0);
    digest(hex);
    assert_string_not_equal(hex, expected);

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
    assert_int_equal(gpc_lc_workdir_digest("/nonexistent/gpuctl-wd", NULL, 0, hex, &e),
                     GPC_ERR_IO);
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
