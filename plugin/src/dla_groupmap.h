/*
 * The group map dla keeps between sweeps and across OpenSM restarts (in OpenSM's cache
 * directory, beside guid2lid): one line per switch, node GUID and group number. It keeps the
 * groups stable when several partitions are valid and lets dla keep its groups on a fabric
 * that has since lost links or switches.
 */
#ifndef IBQOS_DLA_GROUPMAP_H
#define IBQOS_DLA_GROUPMAP_H

#include "dla_groups.h"

#define DLA_GROUPMAP_FILE "ibqos-dla-groups"

/*
 * Read the map into labels[nsw] (DLA_NO_GROUP for switches it does not name; GUIDs of
 * switches no longer present are skipped). 0; -ENOENT if there is no map; -EINVAL if the file
 * is not a map (err says file:line and why); -ENOMEM.
 */
int dla_groupmap_load(const char *path, const struct dla_fabric *f, uint32_t *labels, char *err,
		      size_t len);
/* Write g atomically (temporary file, then rename). 0 or -errno (err says why). */
int dla_groupmap_save(const char *path, const struct dla_fabric *f, const struct dla_groups *g,
		      char *err, size_t len);
/* 1 if labels (no DLA_NO_GROUP) partition the switches exactly as g does. */
int dla_groupmap_same(const uint32_t *labels, const struct dla_groups *g, uint32_t nsw);

#endif
