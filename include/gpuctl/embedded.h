/*
 * embedded.h - the built-in catalog's CSV files, embedded at build time by
 * cmake/embed.cmake like templates/ (see templates.h), so that one gpuctl
 * binary carries its built-in catalog: catalog/gpus.csv, sources.csv (every
 * providers/NAME/sources.csv) and gpu_instances.csv (every
 * providers/NAME/catalog.csv), each joined by folder name with one header
 * (cmake/concat-csv.cmake).  Read through catalog.h.
 */
#ifndef GPUCTL_EMBEDDED_H
#define GPUCTL_EMBEDDED_H

#include <stddef.h>

typedef struct gpc_embedded_file {
    const char *name;  /* file name, e.g. "gpus.csv", "gpu_instances.csv" */
    const char *data;  /* the bytes, NUL-terminated; static storage */
    size_t len;        /* length in bytes, without the NUL */
} gpc_embedded_file;

/* All catalog files, ended by an entry whose name is NULL. */
extern const gpc_embedded_file gpc_catalog_files[];

/* A catalog file by file name, or NULL when there is none. */
const gpc_embedded_file *gpc_catalog_file_get(const char *name);

#endif /* GPUCTL_EMBEDDED_H */
