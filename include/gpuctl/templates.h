/*
 * templates.h - the files of templates/, embedded at build time by
 * cmake/embed.cmake so that one gpuctl binary is self-contained.
 */
#ifndef GPUCTL_TEMPLATES_H
#define GPUCTL_TEMPLATES_H

#include <stddef.h>

typedef struct gpc_template {
    const char *name;  /* file name under templates/, e.g. "bootstrap.sh" */
    const char *data;  /* the bytes, NUL-terminated; static storage */
    size_t len;        /* length in bytes, without the NUL */
} gpc_template;

/* All templates, ended by an entry whose name is NULL. */
extern const gpc_template gpc_templates[];

/* A template by file name, or NULL when there is none. */
const gpc_template *gpc_template_get(const char *name);

#endif /* GPUCTL_TEMPLATES_H */
