/*
 * ssh.c - shell access to an aws node (`gpuctl ssh`, the seam's
 * shell_argv): the system's OpenSSH client to the node's public address,
 * with the node's host key known before the first connection.
 *
 * Host keys (docs/providers/aws.md, "SSH and host keys"): cloud-init
 * prints the node's SSH host keys to its serial console between
 * "-----BEGIN SSH HOST KEY KEYS-----" and "-----END SSH HOST KEY
 * KEYS-----"; EC2 serves the console over its signed API
 * (GetConsoleOutput), so those keys come from the node itself, not from
 * whoever answers at its address.  They are written to the cluster's own
 * known_hosts, <state>/ssh/<cluster-uid>/known_hosts, under a
 * HostKeyAlias that is the instance id, and ssh runs with
 * StrictHostKeyChecking=yes.  When the console shows no keys after a
 * bounded wait ($GPUCTL_SSH_HOSTKEY_WAIT_S, default 120 s), the key is
 * pinned at first contact (StrictHostKeyChecking=accept-new into that
 * file), and gpuctl says so; from then on a changed key is refused.  Never
 * StrictHostKeyChecking=no, never /dev/null as known_hosts.
 *
 * Nothing else is forced: no -F, so the user's ~/.ssh/config (ProxyJump,
 * a bastion), agent and keys apply; connections are shared per node
 * (ControlMaster=auto, a socket under <state>/ssh/cm/, ControlPersist
 * 300 s).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aws/aws_internal.h"
#include "gpuctl/clock.h"
#include "gpuctl/shell.h"
#include "gpuctl/util.h"

/* How long a connection's master stays after its last session, s. */
#define CONTROL_PERSIST_S 300
/* The longest control socket path kept (sun_path holds 108 bytes, less
 * the ".XXXXXXXXXXXXXXXX" ssh adds while it makes the socket). */
#define CONTROL_PATH_MAX 90

/* ---- the node's public address ----------------------------------------- */

typedef struct addr_acc {
    char ip[64];
    char state[32];
    int found;
} addr_acc;

static int pick_addr(void *arg, xmlNode *res, gpc_error *err)
{
    (void)err;
    addr_acc *a = arg;
    for (xmlNode *it = gpc_xml_items(res, "instancesSet"); it && !a->found;
         it = gpc_xml_next(it)) {
        gpc_xml_text(it, "ipAddress", a->ip, sizeof(a->ip));
        gpc_xml_text(it, "instanceState/name", a->state, sizeof(a->state));
        a->found = 1;
    }
    return 0;
}

static int node_address(aws_ctx *c, const char *region, const char *id, char *ip, size_t size,
                        gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, id, "InstanceId.1");
    addr_acc a = {{0}, {0}, 0};
    int rc = aws_describe_all(c, region, "DescribeInstances", &p, "reservationSet", pick_addr, &a,
                              err);
    gpc_ec2_params_free(&p);
    if (!rc && !a.found)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: instance %s is no longer listed", id);
    if (!rc && !a.ip[0])
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: instance %s (%s) has no public address to "
                      "reach it by ssh", id, a.state[0] ? a.state : "state unknown");
    if (!rc)
        snprintf(ip, size, "%s", a.ip);
    return rc;
}

/* ---- the cluster's known_hosts ------------------------------------------ */

/* "ALIAS TYPE BASE64\n" for each line of keys. */
static int add_keys(gpc_buf *out, const char *alias, const gpc_buf *keys, gpc_error *err)
{
    int rc = 0;
    for (const char *k = keys->data; !rc && k && k < keys->data + keys->len;) {
        const char *eol = strchr(k, '\n');
        size_t kl = eol ? (size_t)(eol - k) + 1 : strlen(k);
        rc = gpc_buf_addf(out, err, "%s %.*s", alias, (int)kl, k);
        k += kl;
    }
    return rc;
}

/*
 * Make `path` hold `keys` ("TYPE BASE64\n" lines) for host `alias`: the
 * alias's lines are replaced by them (where its first one was), other
 * lines kept; the file is written only when that changes it.  With no keys
 * the file is left as it is.  *pinned: the file has a line of the alias after.
 */
static int update_known_hosts(const char *path, const char *alias, const gpc_buf *keys,
                              int *pinned, gpc_error *err)
{
    char *old = NULL;
    size_t len = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_read_file(path, 16u << 20, &old, &len, &e) != 0) {
        struct stat sb;
        if (stat(path, &sb) == 0)
            return gpc_error_wrap(err, &e, NULL);
        old = NULL;
        len = 0;
    }
    gpc_buf out;
    gpc_buf_init(&out, 16u << 20);
    size_t al = strlen(alias);
    int rc = 0, had = 0;
    /* the new lines where the alias's first line was, else at the end */
    for (const char *l = old; !rc && l && l < old + len;) {
        const char *eol = memchr(l, '\n', (size_t)(old + len - l));
        size_t ll = eol ? (size_t)(eol - l) + 1 : (size_t)(old + len - l);
        int mine = ll > al && memcmp(l, alias, al) == 0 && l[al] == ' ';
        if (!mine || !keys->len)
            rc = gpc_buf_add(&out, l, ll, err);
        else if (!had)
            rc = add_keys(&out, alias, keys, err);
        had |= mine;
        l += ll;
    }
    if (!rc && !had)
        rc = add_keys(&out, alias, keys, err);
    if (!rc && keys->len && (out.len != len || memcmp(out.data, old, len) != 0))
        rc = gpc_write_file_atomic(path, out.data ? out.data : "", out.len, 0600, err);
    *pinned = keys->len > 0 || had;
    gpc_buf_free(&out);
    free(old);
    return rc;
}

/* The node's host keys from its console into keys (empty when none). */
static int console_keys(aws_ctx *c, const char *region, const char *id, gpc_buf *keys,
                        gpc_error *err)
{
    unsigned char *text = NULL;
    size_t len = 0;
    gpc_error e;
    gpc_error_clear(&e);
    /* the latest output where EC2 serves it (Nitro), else the buffered one */
    int rc = aws_console_output(c, region, id, 1, &text, &len, &e);
    if (rc) {
        gpc_debug(c->log, "aws: %s: GetConsoleOutput Latest=true: %s", id, e.msg);
        rc = aws_console_output(c, region, id, 0, &text, &len, err);
    }
    if (!rc)
        aws_console_host_keys(text, len, keys);
    free(text);
    return rc;
}

/* An ssh option's value quoted when it holds blanks (ssh splits some,
 * UserKnownHostsFile for one, at whitespace unless quoted). */
static int add_opt(gpc_argv *a, const char *name, const char *value, gpc_error *err)
{
    int rc = gpc_argv_add(a, "-o", err);
    if (!rc)
        rc = strpbrk(value, " \t") ? gpc_argv_addf(a, err, "%s=\"%s\"", name, value)
                                   : gpc_argv_addf(a, err, "%s=%s", name, value);
    return rc;
}

int aws_ssh_transport(aws_ctx *c, const gpc_cluster_ref *cl, const gpc_node_ref *node, int tty,
                      gpc_argv *a, char *dest, size_t dest_size, gpc_error *err)
{
    if (!c->state_dir)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: no state directory for ssh");
    if (strpbrk(cl->cluster_uid, "/.") || strpbrk(node->provider_id, "/. "))
        return gpc_fail(err, GPC_ERR_PROVIDER, "aws: invalid node id '%s'", node->provider_id);
    char ip[64];
    int rc = node_address(c, node->region, node->provider_id, ip, sizeof(ip), err);
    char dir[4096], known[4200], cm[4200], key[4200];
    snprintf(dir, sizeof(dir), "%s/ssh/%s", c->state_dir, cl->cluster_uid);
    snprintf(known, sizeof(known), "%s/known_hosts", dir);
    if (!rc)
        rc = gpc_mkdir_p(dir, 0700, err);
    /* the host keys: from the console, else pinned earlier, else wait for
     * the console a while, else pinned at first contact */
    gpc_buf keys;
    gpc_buf_init(&keys, 1u << 20);
    int pinned = 0;
    if (!rc)
        rc = console_keys(c, node->region, node->provider_id, &keys, err);
    if (!rc)
        rc = update_known_hosts(known, node->provider_id, &keys, &pinned, err);
    const char *w = getenv("GPUCTL_SSH_HOSTKEY_WAIT_S");
    double wait_s = w && *w ? strtod(w, NULL) : 120;
    double poll = aws_poll_s();
    if (!rc && !pinned && wait_s > 0) {
        gpc_info(c->log, "aws: waiting up to %.0f s for the SSH host keys of %s in its console "
                 "output", wait_s, node->provider_id);
        for (double t = 0; !rc && !keys.len && t < wait_s; t += poll) {
            aws_nap(poll);
            rc = console_keys(c, node->region, node->provider_id, &keys, err);
        }
        if (!rc)
            rc = update_known_hosts(known, node->provider_id, &keys, &pinned, err);
    }
    if (!rc && !pinned)
        gpc_warn(c->log, "aws: the console output of %s shows no SSH host keys: the key the node "
                 "shows at this first contact is pinned in %s, and a different one is refused "
                 "from then on", node->provider_id, known);
    else if (!rc && keys.len)
        gpc_debug(c->log, "aws: %s: host keys from its console output in %s", node->provider_id,
                  known);
    gpc_buf_free(&keys);

    if (!rc)
        rc = gpc_argv_add(a, "ssh", err);
    if (!rc)
        rc = gpc_argv_add(a, tty ? "-t" : "-T", err);
    /* the key gpuctl made for the cluster, when it made one (network.c);
     * otherwise the user's own keys and agent, as ssh finds them */
    char kname[256];
    aws_base_name(cl->cluster, cl->cluster_uid, kname, sizeof(kname));
    snprintf(key, sizeof(key), "%s/keys/%s", c->state_dir, kname);
    const char *pub = getenv("GPUCTL_SSH_PUBLIC_KEY");
    size_t pl = pub ? strlen(pub) : 0;
    if (access(key, R_OK) != 0 && pl > 4 && pl < sizeof(key) && strcmp(pub + pl - 4, ".pub") == 0)
        snprintf(key, sizeof(key), "%.*s", (int)(pl - 4), pub);
    if (!rc && access(key, R_OK) == 0) {
        rc = gpc_argv_add(a, "-i", err);
        if (!rc)
            rc = gpc_argv_add(a, key, err);
        if (!rc)
            rc = add_opt(a, "IdentitiesOnly", "yes", err);
    }
    if (!rc)
        rc = add_opt(a, "StrictHostKeyChecking", pinned ? "yes" : "accept-new", err);
    if (!rc)
        rc = add_opt(a, "UserKnownHostsFile", known, err);
    if (!rc)
        rc = add_opt(a, "HostKeyAlias", node->provider_id, err);
    /* one master connection per node, on a short socket path */
    char id[300], hex[65];
    snprintf(id, sizeof(id), "%s/%s", cl->cluster_uid, node->provider_id);
    gpc_sha256_hex(id, strlen(id), hex);
    snprintf(cm, sizeof(cm), "%s/ssh/cm", c->state_dir);
    int share = strlen(cm) + 18 <= CONTROL_PATH_MAX;
    if (!rc && share)
        rc = gpc_mkdir_p(cm, 0700, err);
    snprintf(cm + strlen(cm), sizeof(cm) - strlen(cm), "/%.16s", hex);
    if (!rc && share) {
        rc = add_opt(a, "ControlMaster", "auto", err);
        if (!rc)
            rc = add_opt(a, "ControlPath", cm, err);
        if (!rc)
            rc = gpc_argv_add(a, "-o", err);
        if (!rc)
            rc = gpc_argv_addf(a, err, "ControlPersist=%d", CONTROL_PERSIST_S);
    } else if (!rc) {
        gpc_debug(c->log, "aws: %s is too long a control socket path: no shared connection", cm);
    }
    const char *user = getenv("GPUCTL_AWS_SSH_USER");
    snprintf(dest, dest_size, "%s@%s", user && *user ? user : "ubuntu", ip);
    return rc;
}

int aws_shell_argv(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node, uint32_t rank,
                   const char *const *cmd, size_t n_cmd, int tty, char ***argv, gpc_error *err)
{
    (void)rank;
    aws_ctx *c = ctx;
    gpc_argv a = {0};
    char dest[128];
    int rc = aws_ssh_transport(c, cl, node, tty, &a, dest, sizeof(dest), err);
    if (!rc)
        rc = gpc_argv_add(&a, "--", err);
    if (!rc)
        rc = gpc_argv_add(&a, dest, err);
    for (size_t i = 0; !rc && i < n_cmd; i++)
        rc = gpc_argv_add(&a, cmd[i], err);
    if (!rc)
        rc = gpc_argv_take(&a, argv, err);
    gpc_argv_reset(&a);
    return rc;
}

int aws_transport_argv(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                       char ***rsh, char *dest, size_t dest_size, gpc_error *err)
{
    gpc_argv a = {0};
    int rc = aws_ssh_transport(ctx, cl, node, 0, &a, dest, dest_size, err);
    if (!rc)
        rc = gpc_argv_take(&a, rsh, err);
    gpc_argv_reset(&a);
    return rc;
}
