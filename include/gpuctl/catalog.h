/*
 * catalog.h - the GPU instance catalog: instance types, their hardware and
 * their prices per provider and region.
 *
 * The built-in catalog is the instance table gpu_instances.csv -- every
 * provider's providers/NAME/catalog.csv, joined by folder name with one
 * header -- with catalog/gpus.csv and the providers' sources.csv, embedded into
 * the binary at build time; see catalog/README.md for every source,
 * version and data date.  A user-level
 * override (written by `gpuctl catalog update`) or an explicit file
 * (`--catalog FILE`, env GPUCTL_CATALOG) replaces the instance table; the
 * GPU figures and the sources table always come from the built-in files.
 *
 * CSV is RFC 4180, parsed with libcsv.  Columns are found by their header
 * name, in any order.  Units: prices USD per instance-hour (CNY per hour
 * in the *_cny_* columns), memory GiB, bandwidth Gbit/s.
 *
 * Ownership: a gpc_catalog owns every string and array it points to; the
 * caller releases it with gpc_catalog_free().
 */
#ifndef GPUCTL_CATALOG_H
#define GPUCTL_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"

struct gpc_buf;

/* Node-to-node fabric of an instance type, as the catalog states it. */
typedef enum gpc_fabric {
    GPC_FABRIC_UNKNOWN = 0, /* empty cell: not verified by any source */
    GPC_FABRIC_NONE,        /* plain Ethernet/TCP only */
    GPC_FABRIC_EFA,         /* AWS Elastic Fabric Adapter */
    GPC_FABRIC_INFINIBAND,  /* InfiniBand (Azure ND series) */
    GPC_FABRIC_ERDMA        /* Alibaba Cloud elastic RDMA */
} gpc_fabric;

/* "unknown" (for ""), "none", "efa", "infiniband", "erdma". */
const char *gpc_fabric_name(gpc_fabric f);

/* One GPU model (a row of catalog/gpus.csv). Figures are per GPU. */
typedef struct gpc_gpu_info {
    const char *model;         /* key, e.g. "A100-80GB", "H100-80GB-SXM", "T4" */
    double memory_gib;         /* vendor "GB" figure */
    double bf16_tflops_dense;  /* 0 = not given (T4, V100 have no BF16) */
    double fp16_tflops_dense;  /* FP16 tensor, dense; 0 = not given (A10G) */
    double fp32_tflops;        /* 0 = not given */
    const char *source;        /* citation, as in the CSV */
} gpc_gpu_info;

/*
 * Dense tensor TFLOPS of one GPU used to rank offers: BF16 when given,
 * else FP16; 0 when neither is known.
 */
double gpc_gpu_tflops(const gpc_gpu_info *g);

/* One source of catalog rows (a row of a providers/NAME/sources.csv). */
typedef struct gpc_catalog_source {
    const char *key;           /* the value rows carry in their `source` column */
    const char *citation;      /* repository/path or document */
    const char *version;       /* commit or document version; "" = n/a */
    const char *data_date;     /* date of the data as the source states it; "" = not stated */
    const char *currency;      /* "USD" or "CNY": the currency prices had at source */
    double usd_per_unit;       /* exchange rate used: 1 for USD; 0.138 for the Aliyun CNY rows */
    const char *notes;         /* caveats common to every row of this source */
} gpc_catalog_source;

/*
 * The ranges of a row's numbers.  The CSV loader refuses a cell outside
 * them (naming the file, line and column), and gpc_plan_read a saved plan whose offer has such a figure; so every
 * figure an offer carries is finite and small enough that cluster prices
 * (x 1,024 nodes) and totals (x 100 years of hours) stay exact enough.
 */
#define GPC_CATALOG_GPU_COUNT_MAX 65535u            /* GPUs per instance */
#define GPC_CATALOG_GIB_MAX (1024.0 * 1024.0)       /* memory, GiB (per GPU, per instance) */
#define GPC_CATALOG_VCPUS_MAX (1024.0 * 1024.0)
#define GPC_CATALOG_GBPS_MAX (1024.0 * 1024.0)      /* interconnect, Gbit/s */
#define GPC_CATALOG_PRICE_MAX 1000000.0             /* per instance-hour, USD or CNY */

/* One (provider, instance type, region) row of gpu_instances.csv; offer
 * selection (offers.h) reads a provider's own offers as rows too. */
typedef struct gpc_catalog_row {
    const char *provider;      /* "aws", "azure", "aliyun" */
    const char *instance_type; /* "p4de.24xlarge", "Standard_ND96isr_H100_v5", ... */
    const char *region;        /* "us-east-1"; "" when the source names none */
    const char *zone;          /* the one zone of an offer a provider listed itself
                                  (gpc_offer.zone: a Slurm partition, "local");
                                  "" or NULL when the row names none, as every
                                  catalog CSV row */
    const char *gpu_model;     /* key into the GPU table; "" for CPU-only */
    uint32_t gpu_count;        /* GPUs per instance */
    double gpu_mem_gib;        /* memory of one GPU, GiB */
    double vcpus;
    double mem_gib;            /* RAM, GiB */
    gpc_fabric fabric;
    double fabric_gbps;        /* total for the instance, Gbit/s; 0 = none or not known */
    double price_ondemand;     /* USD/hour; < 0 = no price */
    double price_spot;         /* USD/hour; < 0 = no spot data */
    double price_ondemand_cny; /* CNY/hour as quoted at source; < 0 = not a CNY source */
    double price_spot_cny;     /* CNY/hour; < 0 = none */
    const char *source;        /* key into the sources table */
    const char *notes;         /* row-specific caveat, "" when none */
    const gpc_gpu_info *gpu;   /* resolved gpu_model, or NULL (CPU-only / unknown model) */
    uint32_t line;             /* line of the row in its CSV file (header = 1) */
} gpc_catalog_row;

typedef struct gpc_catalog {
    const char *origin;        /* "built-in" or the file path the rows came from */
    char sha256[65];           /* hex SHA-256 of the instance CSV bytes */
    gpc_catalog_row *rows;
    size_t n_rows;
    gpc_gpu_info *gpus;
    size_t n_gpus;
    gpc_catalog_source *sources;
    size_t n_sources;
    void *priv;                /* string storage; opaque */
} gpc_catalog;

/* The largest instance CSV accepted, in bytes. */
#define GPC_CATALOG_MAX_BYTES (256u << 20)

/*
 * Load the built-in catalog.  Returns 0, or GPC_ERR_NOMEM / GPC_ERR_INTERNAL
 * (the embedded files are checked by the tests, so a parse failure is a bug).
 */
int gpc_catalog_load_builtin(gpc_catalog **out, gpc_error *err);

/*
 * Parse an instance table from memory; GPU figures and sources come from
 * the built-in files.  `name` names the data in messages and becomes
 * origin.  Errors: GPC_ERR_SPEC with "NAME:LINE: column: what is wrong"
 * (a missing or unknown column, a bad number, an unknown fabric, a row
 * with too few or too many cells, an unterminated quote, a duplicate
 * (provider, instance_type, region)), GPC_ERR_NOMEM.
 */
int gpc_catalog_load_string(const char *name, const char *csv, size_t len,
                            gpc_catalog **out, gpc_error *err);

/* Read `path` ("-": standard input; at most GPC_CATALOG_MAX_BYTES) and
 * parse it as above, every time: nothing is kept between runs.
 * GPC_ERR_IO when it cannot be read. */
int gpc_catalog_load_file(const char *path, gpc_catalog **out, gpc_error *err);

/*
 * The path of the user-level override: $GPUCTL_CONFIG_DIR/catalog.csv,
 * else $XDG_CONFIG_HOME/gpuctl/catalog.csv, else
 * $HOME/.config/gpuctl/catalog.csv.  Returns 0 or GPC_ERR_IO when no
 * directory can be found or the path does not fit in n bytes.
 */
int gpc_catalog_user_path(char *buf, size_t n, gpc_error *err);

/*
 * The catalog in effect: `explicit_path` when not NULL (`--catalog`), else
 * $GPUCTL_CATALOG when set and not empty, else the user-level override when
 * that file exists, else the built-in one.  Errors as for load_file.
 */
int gpc_catalog_open(const char *explicit_path, gpc_catalog **out, gpc_error *err);

/* The GPU figures for a model key (exact, case-insensitive), or NULL. */
const gpc_gpu_info *gpc_catalog_gpu(const gpc_catalog *c, const char *model);

/* The source with this key, or NULL. */
const gpc_catalog_source *gpc_catalog_source_get(const gpc_catalog *c, const char *key);

/*
 * Append the instance table as CSV (the header, then every row in order)
 * to `out`, in the format load_string reads back to the same rows.
 * Prices print with up to 6 decimals, no trailing zeros; empty cells for
 * "no price".  Returns 0 or GPC_ERR_NOMEM.
 */
int gpc_catalog_write_csv(const gpc_catalog *c, struct gpc_buf *out, gpc_error *err);

/*
 * Set one row's prices (used by `catalog update`): USD/hour values, < 0 to
 * leave a price as it is.  `source` (copied) becomes the row's source key
 * when not NULL.  Returns 0, GPC_ERR_NOMEM, or GPC_ERR_PROVIDER (the row
 * unchanged) for a price above GPC_CATALOG_PRICE_MAX, infinite or NaN.
 */
int gpc_catalog_set_price(gpc_catalog *c, gpc_catalog_row *row, double ondemand,
                          double spot, const char *source, gpc_error *err);

/*
 * Set one row's notes (used by `catalog update`): `notes` (copied into the
 * catalog's storage; NULL = "") replaces the row's notes.  Returns 0,
 * GPC_ERR_INTERNAL for a row not in `c`, or GPC_ERR_NOMEM.
 */
int gpc_catalog_set_notes(gpc_catalog *c, gpc_catalog_row *row, const char *notes,
                          gpc_error *err);

/*
 * Add a row at the end (used by `catalog update` when a provider rebuilds
 * its rows from its own APIs): a copy of *row, its strings copied into the
 * catalog's storage (region NULL = ""; source and notes NULL = ""), its
 * GPU resolved from row->gpu_model ("" = CPU-only; row->gpu is not read),
 * zone "" and line 0.  Pointers to rows (&c->rows[i]) are invalid after
 * the call.  Errors, the catalog unchanged: GPC_ERR_SPEC "PROVIDER TYPE
 * REGION: ..." for a (provider, instance_type, region) the catalog has
 * already, a gpu_model not in the GPU table, a gpu_count of 0 with a model
 * or above 0 without one (or above GPC_CATALOG_GPU_COUNT_MAX);
 * GPC_ERR_PROVIDER for a hardware figure outside the ranges above or below
 * 0, or a price (< 0 = none) above GPC_CATALOG_PRICE_MAX or NaN;
 * GPC_ERR_INTERNAL for no provider or instance type; GPC_ERR_NOMEM.
 */
int gpc_catalog_add_row(gpc_catalog *c, const gpc_catalog_row *row, gpc_error *err);

/*
 * Remove every row for which drop(row, arg) returns non-zero, keeping the
 * others in their order (used by `catalog update` before a provider adds
 * its rows anew).  Returns how many rows went.  Pointers to rows are
 * invalid after the call.
 */
size_t gpc_catalog_remove_rows(gpc_catalog *c,
                               int (*drop)(const gpc_catalog_row *row, void *arg), void *arg);

/* Release a catalog (NULL is fine). */
void gpc_catalog_free(gpc_catalog *c);

/* ---- GPU models (catalog_models.c) ------------------------------------ */

/* Does the catalog know `model` ("A100-80GB", or a family: "A100" matches
 * every A100-*; case does not matter)?  "" (any GPU) is known. */
int gpc_gpu_model_known(const gpc_catalog *cat, const char *model);

/* The catalog's GPU models as "T4, V100-16GB, ..." into out (len bytes,
 * truncated with "..." when they do not fit). */
void gpc_gpu_model_list(const gpc_catalog *cat, char *out, size_t len);

/*
 * A GPU model of the spec that `cat` does not know is a spec error, not a
 * capacity one (a typo would otherwise only show as "no offer fits"):
 * GPC_ERR_SPEC naming the file, the line and column of the request where
 * the spec came from YAML, the field (resources.gpu, or resources.gpu[i]
 * for an item of a list) and the models known.  `validate`, `plan` and
 * `apply` check it.  Returns 0 when every model is known.
 */
struct gpc_spec;
int gpc_spec_gpu_models_check(const struct gpc_spec *spec, const gpc_catalog *cat,
                              gpc_error *err);

#endif /* GPUCTL_CATALOG_H */
