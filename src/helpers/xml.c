/* xml.c - see xml.h */
#include <stdio.h>
#include <string.h>

#include "gpuctl/xml.h"

static int named(const xmlNode *n, const char *name)
{
    return n && n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

xmlNode *gpc_xml_child(const xmlNode *n, const char *name)
{
    for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
        if (named(c, name))
            return c;
    return NULL;
}

xmlNode *gpc_xml_next(const xmlNode *n)
{
    for (xmlNode *c = n ? n->next : NULL; c; c = c->next)
        if (named(c, (const char *)n->name))
            return c;
    return NULL;
}

xmlNode *gpc_xml_path(const xmlNode *n, const char *path)
{
    char part[128];
    const xmlNode *cur = n;
    while (cur && *path) {
        size_t len = strcspn(path, "/");
        if (len >= sizeof(part))
            return NULL;
        memcpy(part, path, len);
        part[len] = '\0';
        cur = gpc_xml_child(cur, part);
        path += len + (path[len] == '/');
    }
    return (xmlNode *)cur;
}

const char *gpc_xml_text(const xmlNode *n, const char *path, char *out, size_t size)
{
    if (size == 0)
        return out;
    out[0] = '\0';
    xmlNode *e = *path ? gpc_xml_path(n, path) : (xmlNode *)n;
    if (!e)
        return out;
    xmlChar *t = xmlNodeGetContent(e);
    if (t) {
        /* trim surrounding blanks (pretty-printed answers) */
        const char *s = (const char *)t;
        while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
            s++;
        size_t len = strlen(s);
        while (len && strchr(" \n\t\r", s[len - 1]))
            len--;
        snprintf(out, size, "%.*s", (int)len, s);
        xmlFree(t);
    }
    return out;
}

xmlNode *gpc_xml_items(const xmlNode *n, const char *path)
{
    return gpc_xml_child(gpc_xml_path(n, path), "item");
}
