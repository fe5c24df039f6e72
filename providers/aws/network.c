/*
 * network.c - the aws provider's per-cluster resources besides instances:
 * the key pair (the user's public key or one gpuctl makes), the security
 * group (all traffic within it, SSH from the caller's address) and the
 * cluster placement group.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "aws/aws_internal.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

#define CHECKIP_URL "https://checkip.amazonaws.com"

/* ---- cluster resources: key pair, security group, placement group ------- */

/* Append an SSH string (uint32 length + bytes) to b. */
static int ssh_string(gpc_buf *b, const unsigned char *p, size_t n, gpc_error *err)
{
    unsigned char len[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    int rc = gpc_buf_add(b, len, 4, err);
    return rc ? rc : gpc_buf_add(b, p, n, err);
}

/* An SSH mpint (RFC 4251 section 5): big-endian, a 0 byte before a set top bit. */
static int ssh_mpint(gpc_buf *b, const BIGNUM *bn, gpc_error *err)
{
    int n = BN_num_bytes(bn);
    unsigned char *tmp = calloc(1, (size_t)n + 1);
    if (!tmp)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    BN_bn2bin(bn, tmp + 1);
    int lead = n > 0 && (tmp[1] & 0x80);
    int rc = ssh_string(b, lead ? tmp : tmp + 1, (size_t)n + (size_t)lead, err);
    free(tmp);
    return rc;
}

/* A new RSA-3072 key: the private key (PKCS#8 PEM, which OpenSSH reads)
 * written 0600 to `path`, the "ssh-rsa AAAA... comment" line to
 * `path`.pub and into *pub (caller frees). */
static int make_key(const char *path, const char *comment, char **pub, gpc_error *err)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)3072);
    if (!k)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: could not generate an SSH key");
    BIGNUM *e = NULL, *n = NULL;
    gpc_buf blob;
    gpc_buf_init(&blob, 4096);
    int rc = EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e) == 1 &&
             EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n) == 1
                 ? 0 : gpc_fail(err, GPC_ERR_INTERNAL, "aws: could not read the new key");
    if (!rc)
        rc = ssh_string(&blob, (const unsigned char *)"ssh-rsa", 7, err);
    if (!rc)
        rc = ssh_mpint(&blob, e, err);
    if (!rc)
        rc = ssh_mpint(&blob, n, err);
    char *b64 = NULL;
    size_t b64_len;
    if (!rc)
        rc = gpc_base64_encode(blob.data, blob.len, &b64, &b64_len, err);
    BIO *bio = NULL;
    if (!rc) {
        bio = BIO_new(BIO_s_mem());
        if (!bio || PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL) != 1)
            rc = gpc_fail(err, GPC_ERR_INTERNAL, "aws: could not write the new key");
    }
    if (!rc) {
        char *pem;
        long len = BIO_get_mem_data(bio, &pem);
        rc = gpc_write_file_atomic(path, pem, (size_t)len, 0600, err);
    }
    gpc_buf line;
    gpc_buf_init(&line, 8192);
    if (!rc)
        rc = gpc_buf_addf(&line, err, "ssh-rsa %s %s\n", b64, comment);
    char pubpath[PATH_MAX + 8];
    snprintf(pubpath, sizeof(pubpath), "%s.pub", path);
    if (!rc)
        rc = gpc_write_file_atomic(pubpath, line.data, line.len, 0644, err);
    if (!rc && !(*pub = strdup(gpc_buf_str(&line))))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    gpc_buf_free(&line);
    BIO_free(bio);
    free(b64);
    gpc_buf_free(&blob);
    BN_free(e);
    BN_free(n);
    EVP_PKEY_free(k);
    return rc;
}

/* The public key line to import: the user's, else one made for this
 * cluster (kept in <state>/keys/). */
static int public_key(aws_ctx *c, const char *kname, char **pub, char *src, size_t ss,
                      gpc_error *err)
{
    const char *env = getenv("GPUCTL_SSH_PUBLIC_KEY"), *home = getenv("HOME");
    char path[PATH_MAX];
    const char *cands[3] = {env && *env ? env : NULL, NULL, NULL};
    char p1[PATH_MAX], p2[PATH_MAX];
    if (!cands[0] && home && *home) {
        snprintf(p1, sizeof(p1), "%s/.ssh/id_ed25519.pub", home);
        snprintf(p2, sizeof(p2), "%s/.ssh/id_rsa.pub", home);
        cands[1] = p1;
        cands[2] = p2;
    }
    for (int i = 0; i < 3; i++) {
        size_t len;
        if (!cands[i])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_read_file(cands[i], 16384, pub, &len, &e) == 0) {
            snprintf(src, ss, "%s", cands[i]);
            return 0;
        }
        if (i == 0)
            return gpc_fail(err, GPC_ERR_IO, "GPUCTL_SSH_PUBLIC_KEY: %s", e.msg);
    }
    if (!c->state_dir)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: no state directory for the SSH key");
    snprintf(path, sizeof(path), "%s/keys", c->state_dir);
    int rc = gpc_mkdir_p(path, 0700, err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "%s/keys/%s", c->state_dir, kname);
    size_t len;
    char pubpath[PATH_MAX + 8];
    snprintf(pubpath, sizeof(pubpath), "%s.pub", path);
    gpc_error e;
    gpc_error_clear(&e);
    snprintf(src, ss, "%s (made by gpuctl)", path);
    if (gpc_read_file(pubpath, 16384, pub, &len, &e) == 0)
        return 0;
    gpc_info(c->log, "aws: making an SSH key for the cluster: %s", path);
    return make_key(path, kname, pub, err);
}

int aws_ensure_key(aws_ctx *c, const char *region, const char *kname, const char *cluster,
                   const char *uid, gpc_error *err)
{
    char *pub = NULL, src[PATH_MAX + 32];
    int rc = public_key(c, kname, &pub, src, sizeof(src), err);
    if (rc)
        return rc;
    /* one line: "type base64 [comment]" */
    pub[strcspn(pub, "\r\n")] = '\0';
    char *b64 = NULL;
    size_t bl;
    rc = gpc_base64_encode(pub, strlen(pub), &b64, &bl, err);
    free(pub);
    if (rc)
        return rc;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, kname, "KeyName");
    gpc_ec2_param(&p, b64, "PublicKeyMaterial");
    aws_tag_spec(&p, 1, "key-pair", cluster, uid, NULL, NULL, NULL, c->labels, c->n_labels);
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    rc = gpc_ec2_call(&c->ec2, region, "ImportKeyPair", &p, &d, &e);
    gpc_ec2_params_free(&p);
    free(b64);
    xmlFreeDoc(d);
    if (rc && strcmp(e.remote.code, "InvalidKeyPair.Duplicate") == 0)
        rc = 0; /* made by an earlier apply of this cluster: reuse it */
    if (rc)
        return gpc_error_wrap(err, &e, NULL);
    gpc_debug(c->log, "aws: key pair %s in %s from %s", kname, region, src);
    return 0;
}

/* The caller's address for the SSH rule: $GPUCTL_SSH_CIDR ("none" = no
 * rule), else what checkip.amazonaws.com ($GPUCTL_CHECKIP_URL) says. */
static void ssh_cidr(aws_ctx *c, char *out, size_t size)
{
    out[0] = '\0';
    const char *v = getenv("GPUCTL_SSH_CIDR");
    if (v && *v) {
        if (strcmp(v, "none") != 0)
            snprintf(out, size, "%s", v);
        return;
    }
    const char *url = getenv("GPUCTL_CHECKIP_URL");
    gpc_http_request req = {.method = "GET", .url = url && *url ? url : CHECKIP_URL};
    gpc_http_opts o = {.timeout_s = 5, .connect_timeout_s = 3, .max_attempts = 2,
                       .what = "aws: caller address", .max_body = 256};
    gpc_http_response r;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_http_send(&req, &o, &r, &e) == 0) {
        char ip[64];
        snprintf(ip, sizeof(ip), "%.*s", (int)strcspn(gpc_buf_str(&r.body), " \r\n"),
                 gpc_buf_str(&r.body));
        unsigned a, b, cc, d;
        char tail;
        if (sscanf(ip, "%u.%u.%u.%u%c", &a, &b, &cc, &d, &tail) == 4 && a < 256 && b < 256 &&
            cc < 256 && d < 256)
            snprintf(out, size, "%u.%u.%u.%u/32", a, b, cc, d);
    }
    gpc_http_response_free(&r);
    if (!out[0])
        gpc_info(c->log, "aws: could not learn this machine's public address (%s); the "
                 "security group gets no SSH rule (set GPUCTL_SSH_CIDR)",
                 e.code ? e.msg : "unexpected answer");
}

/* Authorize one rule: SSH from `cidr`, or (cidr NULL) all traffic from
 * the group itself; an existing rule is fine. */
static int authorize(aws_ctx *c, const char *region, const char *action, const char *sg,
                     const char *cidr, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, sg, "GroupId");
    if (cidr && *cidr) {
        gpc_ec2_param(&p, "tcp", "IpPermissions.1.IpProtocol");
        gpc_ec2_param(&p, "22", "IpPermissions.1.FromPort");
        gpc_ec2_param(&p, "22", "IpPermissions.1.ToPort");
        gpc_ec2_param(&p, cidr, "IpPermissions.1.IpRanges.1.CidrIp");
    } else {
        gpc_ec2_param(&p, "-1", "IpPermissions.1.IpProtocol");
        gpc_ec2_param(&p, sg, "IpPermissions.1.Groups.1.GroupId");
    }
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_ec2_call(&c->ec2, region, action, &p, &d, &e);
    gpc_ec2_params_free(&p);
    xmlFreeDoc(d);
    if (rc && strcmp(e.remote.code, "InvalidPermission.Duplicate") == 0)
        return 0;
    return rc ? gpc_error_wrap(err, &e, NULL) : 0;
}

static int find_group(aws_ctx *c, const char *region, const char *vpc, const char *name,
                      char *out, size_t size, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *n[] = {name}, *v[] = {vpc};
    gpc_ec2_filter(&p, 1, "group-name", n, 1);
    gpc_ec2_filter(&p, 2, "vpc-id", v, 1);
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, region, "DescribeSecurityGroups", &p, &d, err);
    gpc_ec2_params_free(&p);
    if (!rc)
        gpc_xml_text(gpc_xml_items(xmlDocGetRootElement(d), "securityGroupInfo"), "groupId",
                     out, size);
    xmlFreeDoc(d);
    if (!rc && !out[0])
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: security group %s vanished", name);
    return rc;
}

int aws_ensure_group(aws_ctx *c, region_info *r, const char *name, const char *cluster,
                     const char *uid, char *sg, size_t size, gpc_error *err)
{
    int rc = aws_default_vpc(c, r, err);
    if (rc)
        return rc;
    char desc[256];
    snprintf(desc, sizeof(desc), "gpuctl cluster %.100s: all traffic within the group "
             "(NCCL, EFA), SSH from the caller", cluster);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, name, "GroupName");
    gpc_ec2_param(&p, desc, "GroupDescription");
    gpc_ec2_param(&p, r->vpc, "VpcId");
    aws_tag_spec(&p, 1, "security-group", cluster, uid, name, NULL, NULL, c->labels, c->n_labels);
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    rc = gpc_ec2_call(&c->ec2, r->region, "CreateSecurityGroup", &p, &d, &e);
    gpc_ec2_params_free(&p);
    sg[0] = '\0';
    if (!rc)
        gpc_xml_text(xmlDocGetRootElement(d), "groupId", sg, size);
    xmlFreeDoc(d);
    if (rc && strcmp(e.remote.code, "InvalidGroup.Duplicate") == 0)
        rc = find_group(c, r->region, r->vpc, name, sg, size, &e);
    if (rc)
        return gpc_error_wrap(err, &e, NULL);
    char cidr[64];
    ssh_cidr(c, cidr, sizeof(cidr));
    /* one rule a call: EC2 refuses a whole call for one rule it has, so
     * a rule set changed between applies (another SSH address) still lands */
    rc = authorize(c, r->region, "AuthorizeSecurityGroupIngress", sg, NULL, err);
    if (!rc && cidr[0])
        rc = authorize(c, r->region, "AuthorizeSecurityGroupIngress", sg, cidr, err);
    if (!rc)
        rc = authorize(c, r->region, "AuthorizeSecurityGroupEgress", sg, NULL, err);
    return rc;
}

int aws_ensure_placement(aws_ctx *c, const char *region, const char *name,
                         const char *cluster, const char *uid, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, name, "GroupName");
    gpc_ec2_param(&p, "cluster", "Strategy");
    aws_tag_spec(&p, 1, "placement-group", cluster, uid, NULL, NULL, NULL, c->labels, c->n_labels);
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_ec2_call(&c->ec2, region, "CreatePlacementGroup", &p, &d, &e);
    gpc_ec2_params_free(&p);
    xmlFreeDoc(d);
    if (rc && strcmp(e.remote.code, "InvalidPlacementGroup.Duplicate") == 0)
        rc = 0;
    return rc ? gpc_error_wrap(err, &e, NULL) : 0;
}
