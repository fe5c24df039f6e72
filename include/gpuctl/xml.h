/*
 * xml.h - reading XML answers (libxml2 trees) by element name.
 *
 * Query APIs answer in XML with a default namespace (EC2's
 * http://ec2.amazonaws.com/doc/2016-11-15/); these helpers match elements
 * by their local name, so a caller never spells a namespace.  Every
 * returned node is borrowed from the document it was found in.
 */
#ifndef GPUCTL_XML_H
#define GPUCTL_XML_H

#include <stddef.h>

#include <libxml/tree.h>

/* The first child element of n named `name`, or NULL (n may be NULL). */
xmlNode *gpc_xml_child(const xmlNode *n, const char *name);
/* The next sibling element of n with n's name, or NULL. */
xmlNode *gpc_xml_next(const xmlNode *n);
/* The element at a '/'-separated path of child names below n
 * ("instanceState/name"), or NULL; a path part of 128 bytes or more finds
 * nothing. */
xmlNode *gpc_xml_path(const xmlNode *n, const char *path);
/* The text of the element at `path` ("" = n itself), without surrounding
 * blanks, copied into out (size bytes, truncated to fit); "" when absent.
 * Returns out. */
const char *gpc_xml_text(const xmlNode *n, const char *path, char *out, size_t size);
/* The first <item> child of the list element at `path`, or NULL (the
 * shape of every EC2 list: <instancesSet><item>...). */
xmlNode *gpc_xml_items(const xmlNode *n, const char *path);

#endif /* GPUCTL_XML_H */
