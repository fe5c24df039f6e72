/*
 * test_store.c - object storage in the engine (gpuctl/store.h): the names
 * and paths it accepts, the incremental directory copy that the local and
 * slurm stores share (size and SHA-256), listing and removal, and the
 * seam's rule that a provider has all five store operations or none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpuctl/cluster.h"
#include "gpuctl/provider.h"
#include "gpuctl/state.h"
#include "gpuctl/store.h"
#include "gpuctl/util.h"

static void put(const char *dir, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_mkdir_p(path, 0700, &err), 0);
    *slash = '/';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *dir, const char *rel)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    char *out = NULL;
    size_t len = 0;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_read_file(path, 1 << 20, &out, &len, &err), 0);
    return out;
}

static void test_names_and_paths(void **unused)
{
    (void)unused;
    assert_true(gpc_store_path_ok("data/imagenet"));
    assert_true(gpc_store_path_ok("clusters/0f3a/checkpoints"));
    assert_true(gpc_store_path_ok("a"));
    assert_false(gpc_store_path_ok(""));
    assert_false(gpc_store_path_ok("/data"));
    assert_false(gpc_store_path_ok("data/"));
    assert_false(gpc_store_path_ok("data//x"));
    assert_false(gpc_store_path_ok("data/../x"));
    assert_false(gpc_store_path_ok("data/./x"));
    assert_false(gpc_store_path_ok("data/a b"));
    char longp[GPC_STORE_PATH_MAX + 2];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    assert_false(gpc_store_path_ok(longp));
    longp[GPC_STORE_PATH_MAX] = '\0';
    assert_true(gpc_store_path_ok(longp));

    assert_true(gpc_data_name_ok("imagenet-1k_v2.0"));
    assert_true(gpc_data_name_ok("0"));
    assert_false(gpc_data_name_ok(".hidden"));
    assert_false(gpc_data_name_ok("-x"));
    assert_false(gpc_data_name_ok("a/b"));
    assert_false(gpc_data_name_ok(".."));
    assert_false(gpc_data_name_ok(""));
    char name[65];
    memset(name, 'n', 64);
    name[64] = '\0';
    assert_false(gpc_data_name_ok(name)); /* 64 */
    name[63] = '\0';
    assert_true(gpc_data_name_ok(name));  /* 63 */
}

static void test_copy_incremental(void **unused)
{
    (void)unused;
    char tmpl[] = "/tmp/gpuctl-store-XXXXXX";
    char *t = mkdtemp(tmpl);
    assert_non_null(t);
    char src[512], dst[512];
    snprintf(src, sizeof(src), "%s/src", t);
    snprintf(dst, sizeof(dst), "%s/dst/data/ds", t);
    put(src, "a.txt", "hello\n");
    put(src, "a/b", "bee\n");
    put(src, "sub/deep/c.bin", "0123456789");
    put(src, "half.gpuctl-part", "left by an interrupted copy");
    char link[600];
    snprintf(link, sizeof(link), "%s/link", src);
    assert_int_equal(symlink("/etc/passwd", link), 0);

    gpc_store_stats st;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_store_copy_dir(src, dst, &st, &err), 0);
    assert_int_equal(st.files_sent, 3);
    assert_int_equal(st.files_skipped, 0);
    assert_int_equal(st.bytes_sent, 6 + 4 + 10);
    char *s = slurp(dst, "sub/deep/c.bin");
    assert_string_equal(s, "0123456789");
    free(s);
    struct stat sb;
    char p[700];
    snprintf(p, sizeof(p), "%s/link", dst);
    assert_int_equal(lstat(p, &sb), -1);          /* a link is not followed */
    snprintf(p, sizeof(p), "%s/half.gpuctl-part", dst);
    assert_int_equal(lstat(p, &sb), -1);          /* nor a part file copied */
    snprintf(p, sizeof(p), "%s/sub", dst);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);

    /* again: nothing */
    assert_int_equal(gpc_store_copy_dir(src, dst, &st, &err), 0);
    assert_int_equal(st.files_sent, 0);
    assert_int_equal(st.files_skipped, 3);
    assert_int_equal(st.bytes_sent, 0);

    /* one changed at the same size (only the SHA-256 tells), one longer */
    put(src, "a.txt", "HELLO\n");
    put(src, "a/b", "bees!\n");
    assert_int_equal(gpc_store_copy_dir(src, dst, &st, &err), 0);
    assert_int_equal(st.files_sent, 2);
    assert_int_equal(st.files_skipped, 1);
    assert_int_equal(st.bytes_sent, 6 + 6);
    s = slurp(dst, "a.txt");
    assert_string_equal(s, "HELLO\n");
    free(s);

    /* listing: bytewise order ('.' before '/'), sizes */
    gpc_store_entry *v = NULL;
    size_t n = 0;
    assert_int_equal(gpc_store_list_dir(dst, &v, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].key, "a.txt");
    assert_int_equal(v[0].size, 6);
    assert_string_equal(v[1].key, "a/b");
    assert_int_equal(v[1].size, 6);
    assert_string_equal(v[2].key, "sub/deep/c.bin");
    assert_int_equal(v[2].size, 10);
    assert_true(v[2].mtime > 1500000000);
    free(v);

    /* a missing directory lists empty; a missing source is refused */
    snprintf(p, sizeof(p), "%s/nothing", t);
    assert_int_equal(gpc_store_list_dir(p, &v, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_null(v);
    assert_int_equal(gpc_store_copy_dir(p, dst, &st, &err), GPC_ERR_USAGE);
    char want[800];
    snprintf(want, sizeof(want), "%s: no such directory", p);
    assert_string_equal(err.msg, want);

    /* removal counts the files */
    size_t removed = 9;
    gpc_error_clear(&err);
    assert_int_equal(gpc_store_remove_dir(dst, &removed, &err), 0);
    assert_int_equal(removed, 3);
    assert_int_equal(lstat(dst, &sb), -1);
    assert_int_equal(gpc_store_remove_dir(dst, &removed, &err), 0);
    assert_int_equal(removed, 0);
    assert_int_equal(gpc_rm_rf(t, &err), 0);
}

/* ---- the seam: all five or none ----------------------------------------- */

static int x_url(void *c, const char *r, const char *p, char *o, size_t s, gpc_error *e)
{
    (void)c, (void)r, (void)p, (void)o, (void)s, (void)e;
    return GPC_ERR_INTERNAL;
}
static int x_create(void *c, const gpc_node_request *r, gpc_node_status *o, gpc_error *e)
{
    (void)c, (void)r, (void)o, (void)e;
    return GPC_ERR_INTERNAL;
}
static int x_describe(void *c, const gpc_node_ref *nd, gpc_node_status *o, gpc_error *e)
{
    (void)c, (void)nd, (void)o, (void)e;
    return GPC_ERR_INTERNAL;
}
static int x_delete(void *c, const gpc_node_ref *nd, gpc_error *e)
{
    (void)c, (void)nd, (void)e;
    return GPC_ERR_INTERNAL;
}

static void test_seam_all_or_none(void **unused)
{
    (void)unused;
    gpc_provider p = {.name = "half", .create_node = x_create, .describe_node = x_describe,
                      .delete_node = x_delete, .store_url = x_url};
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_provider_check(&p, &err), GPC_ERR_INTERNAL);
    assert_string_equal(err.msg, "provider half: object storage needs all of store_url, "
                                 "store_push, store_pull, store_list and store_remove");
    p.store_url = NULL;
    gpc_error_clear(&err);
    assert_int_equal(gpc_provider_check(&p, &err), 0);
    /* the real ones: local, slurm and aws have a store; azure and aliyun not */
    assert_non_null(gpc_provider_find("local")->store_push);
    assert_non_null(gpc_provider_find("aws")->store_push);
    assert_non_null(gpc_provider_find("slurm")->store_push);
    assert_string_equal(gpc_data_store_names(), "local, aws, slurm");
    gpc_data_where w = {.provider = "azure", .region = NULL};
    gpc_error_clear(&err);
    assert_null(gpc_data_provider(&w, &err));
    assert_int_equal(err.code, GPC_ERR_USAGE);
    assert_string_equal(err.msg, "provider azure has no object storage (providers with one: "
                                 "local, aws, slurm)");
    w.provider = NULL;
    gpc_error_clear(&err);
    assert_ptr_equal(gpc_data_provider(&w, &err), gpc_provider_find("local"));
}


/* ---- the local provider's store through its table ---------------------- */

static void test_local_store(void **unused)
{
    (void)unused;
    char tmpl[] = "/tmp/gpuctl-lstore-XXXXXX";
    char *t = mkdtemp(tmpl);
    assert_non_null(t);
    char state[512], src[512], back[512];
    snprintf(state, sizeof(state), "%s/state", t);
    snprintf(src, sizeof(src), "%s/src", t);
    snprintf(back, sizeof(back), "%s/back", t);
    put(src, "x/y.txt", "why\n");
    put(src, "z", "zed");
    const gpc_provider *p = gpc_provider_find("local");
    gpc_provider_config cfg = {.state_dir = state};
    void *ctx = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(p->open(&cfg, &ctx, &err), 0);

    char url[1024], want[1024];
    assert_int_equal(p->store_url(ctx, NULL, "clusters/u1/checkpoints", url, sizeof(url), &err), 0);
    snprintf(want, sizeof(want), "%s/store/clusters/u1/checkpoints", state);
    assert_string_equal(url, want);
    assert_int_equal(p->store_url(ctx, "local", "a", url, 8, &err), GPC_ERR_USAGE);
    gpc_error_clear(&err);
    struct stat sb;
    snprintf(want, sizeof(want), "%s/store", state);
    assert_int_equal(stat(want, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);

    gpc_store_stats st;
    assert_int_equal(p->store_push(ctx, "", src, "clusters/u1/checkpoints", &st, &err), 0);
    assert_int_equal(st.files_sent, 2);
    assert_int_equal(st.bytes_sent, 4 + 3);
    /* pull into a new directory, then again: nothing */
    assert_int_equal(p->store_pull(ctx, NULL, "clusters/u1/checkpoints", back, &st, &err), 0);
    assert_int_equal(st.files_sent, 2);
    assert_int_equal(st.files_skipped, 0);
    char *s = slurp(back, "x/y.txt");
    assert_string_equal(s, "why\n");
    free(s);
    assert_int_equal(p->store_pull(ctx, NULL, "clusters/u1/checkpoints", back, &st, &err), 0);
    assert_int_equal(st.files_sent, 0);
    assert_int_equal(st.files_skipped, 2);
    /* a path with nothing: 0 files, the directory made */
    snprintf(want, sizeof(want), "%s/empty", t);
    assert_int_equal(p->store_pull(ctx, NULL, "clusters/u2", want, &st, &err), 0);
    assert_int_equal(st.files_sent, 0);
    assert_int_equal(stat(want, &sb), 0);

    gpc_store_entry *v = NULL;
    size_t n = 0;
    assert_int_equal(p->store_list(ctx, NULL, "clusters/u1", &v, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].key, "checkpoints/x/y.txt");
    assert_string_equal(v[1].key, "checkpoints/z");
    assert_int_equal(v[1].size, 3);
    free(v);
    size_t removed = 0;
    assert_int_equal(p->store_remove(ctx, NULL, "clusters/u1", &removed, &err), 0);
    assert_int_equal(removed, 2);
    assert_int_equal(p->store_list(ctx, NULL, "clusters/u1", &v, &n, &err), 0);
    assert_int_equal(n, 0);

    assert_int_equal(p->store_list(ctx, "us-east-1", "data", &v, &n, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "local: this machine's region is 'local', not 'us-east-1'");
    p->close(ctx);
    gpc_error_clear(&err);
    assert_int_equal(gpc_rm_rf(t, &err), 0);
}

/* ---- the mirror's deletion, the content digest, pull's modes ------------ */

#define DIGEST_XY "d41f17fd87adba1ab3bb190b960d6e0bc427448094d07a717d9a1c773ff9017c"

static void test_delete_digest_modes(void **unused)
{
    (void)unused;
    char tmpl[] = "/tmp/gpuctl-sdel-XXXXXX";
    char *t = mkdtemp(tmpl);
    assert_non_null(t);
    char a[512], b[512], p[700];
    snprintf(a, sizeof(a), "%s/a", t);
    snprintf(b, sizeof(b), "%s/b", t);
    put(a, "x", "1");
    put(a, "d/e/y", "22");
    put(b, "x", "1");
    put(b, "d/e/y", "22");
    gpc_error err;
    gpc_error_clear(&err);

    /* the digest: SHA-256 of "KEY\tSIZE\tSHA256\n" lines in key order,
     * computed by hand: sha256("1") and sha256("22") are
     * 6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b and
     * 785f3ec7eb32f30b90cd0fcf3657d388b5ff4297f2f9716ff66e9b69c05ddd09; the
     * digest of the two lines ("d/e/y" sorts before "x") is the constant
     * below (printf '%s\t2\t%s\n%s\t1\t%s\n' ... | sha256sum) */
    char ha[65], hb[65];
    unsigned long files = 0;
    assert_int_equal(gpc_store_dir_digest(a, ha, &files, &err), 0);
    assert_int_equal(files, 2);
    assert_string_equal(ha, DIGEST_XY);
    assert_int_equal(gpc_store_dir_digest(b, hb, NULL, &err), 0);
    assert_string_equal(ha, hb);
    put(b, "x", "2");                               /* same size, other bytes */
    assert_int_equal(gpc_store_dir_digest(b, hb, NULL, &err), 0);
    assert_string_not_equal(ha, hb);
    snprintf(p, sizeof(p), "%s/nothing", t);
    assert_int_equal(gpc_store_dir_digest(p, hb, NULL, &err), GPC_ERR_USAGE);
    assert_string_equal(hb, "");

    /* deletion: exact keys, a missing one skipped, emptied directories go */
    const char *keys[] = {"d/e/y", "gone"};
    gpc_error_clear(&err);
    assert_int_equal(gpc_store_delete_files(a, keys, 2, &err), 0);
    struct stat sb;
    snprintf(p, sizeof(p), "%s/d", a);
    assert_int_equal(lstat(p, &sb), -1);            /* d/e and d removed, empty */
    snprintf(p, sizeof(p), "%s/x", a);
    assert_int_equal(lstat(p, &sb), 0);
    assert_int_equal(lstat(a, &sb), 0);             /* the root stays */
    const char *bad[] = {"../b/x"};
    assert_int_equal(gpc_store_delete_files(a, bad, 1, &err), GPC_ERR_INTERNAL);
    assert_string_equal(err.msg, "store: unsafe key '../b/x'");
    snprintf(p, sizeof(p), "%s/x", b);
    assert_int_equal(lstat(p, &sb), 0);             /* untouched */

    /* pull's modes: 0666/0777 less the umask; the store's copy stays private */
    char out[600];
    snprintf(out, sizeof(out), "%s/out", t);
    gpc_store_stats st;
    mode_t old = umask(022);
    gpc_error_clear(&err);
    assert_int_equal(gpc_store_pull_dir(b, out, &st, &err), 0);
    umask(old);
    assert_int_equal(st.files_sent, 2);
    assert_int_equal(stat(out, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0755);
    snprintf(p, sizeof(p), "%s/d/e", out);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0755);
    snprintf(p, sizeof(p), "%s/d/e/y", out);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    snprintf(out, sizeof(out), "%s/store", t);
    old = umask(022);
    assert_int_equal(gpc_store_copy_dir(b, out, &st, &err), 0);
    umask(old);
    snprintf(p, sizeof(p), "%s/x", out);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(gpc_rm_rf(t, &err), 0);
}

/* ---- which live clusters use a data set (gpc_data_users, _guard) -------- */

/* A cluster of provider local whose spec's data is `data_json`, one node
 * in region local; destroyed when `dead`; its id. */
static int64_t add_cluster(gpc_session *s, const char *name, const char *data_json, int dead)
{
    char json[256];
    snprintf(json, sizeof(json), "{\"name\":\"%s\",\"data\":%s}", name, data_json);
    gpc_cluster_rec c = {.name = (char *)name, .uid = "u1", .provider = "local",
                         .spec_hash = "h", .spec_json = json, .spec_path = "", .nodes = 1,
                         .phase = GPC_PHASE_RUNNING, .exit_code = -1, .created_at = 1,
                         .updated_at = 1, .provider_data = ""};
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_insert(s->st, &c, &err), 0);
    gpc_node_rec nd = {.cluster_id = c.id, .rank = 0, .name = "n0", .provider = "local",
                       .provider_id = "p", .client_token = "", .region = "local", .zone = "",
                       .instance_type = "local", .private_ip = "", .phase = GPC_PHASE_RUNNING,
                       .exit_code = -1, .created_at = 1, .provider_data = ""};
    assert_int_equal(gpc_node_insert(s->st, &nd, &err), 0);
    if (dead) {
        c.destroyed_at = 2;
        c.phase = GPC_PHASE_TERMINATED;
        assert_int_equal(gpc_cluster_update(s->st, &c, &err), 0);
    }
    return c.id;
}

static void test_data_users(void **unused)
{
    (void)unused;
    char tmpl[] = "/tmp/gpuctl-susers-XXXXXX";
    char *t = mkdtemp(tmpl);
    assert_non_null(t);
    char state[512];
    snprintf(state, sizeof(state), "%s/state", t);
    gpc_settings cfg = {.state_dir = state};
    gpc_session s;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_session_open(&s, &cfg, &err), 0);
    const char *dg = "1111111111111111111111111111111111111111111111111111111111111111";
    int64_t aa = add_cluster(&s, "aa", "{\"ds\":\"./x\"}", 0);
    assert_int_equal(gpc_data_record(&s, aa, "ds", "00", &err), 0);
    assert_int_equal(gpc_data_record(&s, aa, "ds", dg, &err), 0);     /* the last wins */
    /* a set aa's spec does not push: an event alone makes no user */
    assert_int_equal(gpc_data_record(&s, aa, "ds2", dg, &err), 0);
    add_cluster(&s, "bb", "{\"ds\":\"s3://b/p\"}", 0);    /* a URL: not pushed */
    add_cluster(&s, "cc", "{\"other\":\"./y\"}", 0);      /* another name */
    add_cluster(&s, "dd", "{\"ds\":\"./z\"}", 1);         /* destroyed */
    add_cluster(&s, "ee", "{\"ds\":\"./w\"}", 0);         /* no digest recorded */

    gpc_data_where w = {.provider = "local", .region = NULL};
    gpc_data_user *u = NULL;
    size_t n = 0;
    assert_int_equal(gpc_data_users(&s, &w, "ds", NULL, &u, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(u[0].cluster, "aa");
    assert_string_equal(u[0].digest, dg);
    assert_string_equal(u[1].cluster, "ee");
    assert_string_equal(u[1].digest, "");
    free(u);
    /* a cluster's own apply does not count itself */
    assert_int_equal(gpc_data_users(&s, &w, "ds", "aa", &u, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(u[0].cluster, "ee");
    free(u);
    assert_int_equal(gpc_data_users(&s, &w, "nobody", NULL, &u, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_null(u);
    /* another store (local has one region, so another region is refused) */
    w.region = "us-east-1";
    assert_int_equal(gpc_data_users(&s, &w, "ds", NULL, &u, &n, &err), GPC_ERR_USAGE);
    w.region = NULL;
    gpc_error_clear(&err);

    /* offline (plan): the same users, by provider and region */
    assert_int_equal(gpc_data_users_offline(&s, &w, "ds", NULL, &u, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(u[0].cluster, "aa");
    assert_string_equal(u[1].cluster, "ee");
    free(u);
    assert_int_equal(gpc_data_users_offline(&s, &w, "ds", "ee", &u, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(u[0].cluster, "aa");
    free(u);
    w.region = "local";
    assert_int_equal(gpc_data_users_offline(&s, &w, "ds", NULL, &u, &n, &err), 0);
    assert_int_equal(n, 2);
    free(u);
    w.region = "elsewhere"; /* their nodes are in "local": another store */
    assert_int_equal(gpc_data_users_offline(&s, &w, "ds", NULL, &u, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_null(u);
    w.region = NULL;

    /* every user named, with a destroy command each; per verb (a user
     * trial: the hint named only the first, and rm said "or use another
     * name") */
    assert_int_equal(gpc_data_guard(&s, &w, "ds", NULL, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "refusing to remove data set 'ds' in the store of local: "
                                 "live clusters 'aa', 'ee' use it, and their jobs read it; "
                                 "destroy them first (gpuctl destroy aa; gpuctl destroy ee), "
                                 "then remove it");
    gpc_error_clear(&err);
    assert_int_equal(gpc_data_guard(&s, &w, "other", NULL, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "refusing to remove data set 'other' in the store of local: "
                                 "live cluster 'cc' uses it, and its job reads it; destroy it "
                                 "first (gpuctl destroy cc), then remove it");
    gpc_error_clear(&err);
    assert_int_equal(gpc_data_guard(&s, &w, "ds2", NULL, &err), 0);
    gpc_session_close(&s);
    assert_int_equal(gpc_rm_rf(t, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_paths),
        cmocka_unit_test(test_copy_incremental),
        cmocka_unit_test(test_seam_all_or_none),
        cmocka_unit_test(test_local_store),
        cmocka_unit_test(test_delete_digest_modes),
        cmocka_unit_test(test_data_users),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
