/*
 * render.h - node bootstrap rendering (templates/ -> cloud-init user-data).
 *
 * Every node, cloud or local, receives the same kind of document: a
 * `#cloud-config` user-data that writes /var/lib/gpuctl/bootstrap.sh and runs
 * it.  The bootstrap exports the job env (POSIX single-quote quoting, so a
 * value with $, backquotes, quotes, newlines or $(...) arrives unchanged and
 * never executes), sets NCCL / libfabric variables for the interconnect, runs
 * `setup`, then starts torchrun with a c10d rendezvous on the head node's
 * private IP literal, logging to $GPUCTL_HOME/node.log and recording the exit
 * status in $GPUCTL_HOME/exit_status.
 *
 * Files the bootstrap keeps under GPUCTL_HOME (default /var/lib/gpuctl; the
 * local provider points it at the node's directory):
 *   bootstrap.sh   the script itself
 *   node.log       setup + torchrun output (the "fixed path" `logs` reads)
 *   phase          one word: booting | setup | running | succeeded | failed
 *   exit_status    rank's torchrun exit status, written once at the end
 */
#ifndef GPUCTL_RENDER_H
#define GPUCTL_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"
#include "gpuctl/spec.h"

/* How a node discovers facts about itself (its private IP, ...). */
typedef enum gpc_metadata_flavour {
    GPC_MD_LOCAL = 0, /* local provider: loopback, facts passed in env */
    GPC_MD_AWS,       /* EC2 IMDSv2 at 169.254.169.254 (token PUT first) */
    GPC_MD_AZURE,     /* Azure IMDS at 169.254.169.254, header Metadata: true */
    GPC_MD_ALIYUN     /* ECS metadata at 100.100.100.200 */
} gpc_metadata_flavour;

/*
 * Transport rules for user-data on a provider.  Sources:
 *  aws:    EC2 RunInstances `UserData`: base64 of the raw data, raw limit
 *          16 KB (16384 bytes); cloud-init accepts gzip-compressed data
 *          (EC2 API reference, RunInstances; cloud-init docs "User-data
 *          formats", gzip compressed content).
 *  azure:  `osProfile.customData`: base64, decoded size <= 65535 bytes
 *          (Azure Compute REST 2024-07-01, VirtualMachines - Create).
 *  aliyun: ECS RunInstances `UserData`: base64, raw limit 32 KB (32768)
 *          (ECS API reference RunInstances; older docs said 16 KB).
 *  local:  no transport limit; passed as a file.
 */
typedef struct gpc_userdata_rules {
    const char *provider;   /* "aws", "azure", "aliyun", "local" */
    size_t max_raw;         /* limit on the bytes before base64; 0 = none */
    int gzip_ok;            /* may gzip when the plain text is over max_raw */
    int base64;             /* the API wants base64 (exactly once) */
    gpc_metadata_flavour metadata;
} gpc_userdata_rules;

/* Rules by provider name, or NULL when unknown. */
const gpc_userdata_rules *gpc_userdata_rules_for(const char *provider);

/* What differs between nodes of one cluster. */
typedef struct gpc_node_ctx {
    const char *cluster;     /* cluster name (spec name) */
    const char *cluster_id;  /* unique id of this cluster instance (rdzv id) */
    uint32_t rank;           /* node rank, 0 = head */
    uint32_t nnodes;         /* world size in nodes */
    const char *head_ip;     /* head's private IP literal; NULL for rank 0
                                (the head finds its own via metadata) */
    uint32_t rdzv_port;      /* c10d port on the head */
    const char *workdir;     /* path of the job's workdir on the node, or NULL */
    const char *checkpoint_dir; /* path on the node, or NULL */
} gpc_node_ctx;

/*
 * Render the bootstrap shell script for one node.  Returns 0 with *out a
 * NUL-terminated string the caller frees, or GPC_ERR_RENDER / GPC_ERR_NOMEM.
 * Fails when an env value holds a NUL byte.
 */
int gpc_render_bootstrap(const gpc_spec *spec, const gpc_node_ctx *node,
                         const gpc_userdata_rules *rules,
                         char **out, gpc_error *err);

/*
 * Render the whole `#cloud-config` user-data for one node (plain text, no
 * BOM, no CR, no leading blank line).  Caller frees *out.
 */
int gpc_render_userdata(const gpc_spec *spec, const gpc_node_ctx *node,
                        const gpc_userdata_rules *rules,
                        char **out, gpc_error *err);

/*
 * Encode user-data for the provider's API: gzip when the plain text is over
 * rules->max_raw and gzip is allowed, then base64 exactly once when the API
 * wants it.  Fails with GPC_ERR_RENDER naming the limit ("user-data is 20480
 * bytes after gzip; aws allows 16384") when it cannot fit.  *out (caller
 * frees) is NUL-terminated, *out_len its length; *gzipped tells whether
 * gzip was applied (may be NULL).
 */
int gpc_userdata_encode(const char *userdata, size_t len,
                        const gpc_userdata_rules *rules,
                        char **out, size_t *out_len, int *gzipped,
                        gpc_error *err);

/*
 * Quote `value` for a POSIX shell so that it reads back byte for byte:
 * 'abc' with each ' written as '\''.  Appends to `out`.
 */
struct gpc_buf;
int gpc_shell_quote(struct gpc_buf *out, const char *value, gpc_error *err);

#endif /* GPUCTL_RENDER_H */
