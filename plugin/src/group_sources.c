/*
 * Where a sweep's dragonfly groups come from: the admin's pins in the table file, the map
 * stored by the last sweep that discovered its groups (OpenSM's cache directory, as OpenSM
 * keeps guid2lid), or discovery. The choice itself is dla_groups_choose(); this file turns
 * OpenSM's view and the files into its inputs and says in the log what it chose and why.
 */
#include "ibqos_plugin.h"
#include "dla_groupmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NOTELEN 1024

static const char *cache_dir(void)
{
	const char *dir = getenv("OSM_CACHE_DIR");

	return dir && *dir ? dir : OSM_DEFAULT_CACHE_DIR;
}

static char *map_path(void)
{
	const char *dir = cache_dir();
	size_t n = strlen(dir) + sizeof(DLA_GROUPMAP_FILE) + 2;
	char *path = malloc(n);

	if (path)
		snprintf(path, n, "%s/%s", dir, DLA_GROUPMAP_FILE);
	return path;
}

/* Pins as group numbers (labels numbered in order of first appearance); NULL if the table
 * file pins nothing. Switches no pin names stay DLA_NO_GROUP. */
static uint32_t *pinned_labels(const struct ibqos_sweep *sw, int *nomem)
{
	const struct dla_fabric *f = &sw->fabric;
	char(*names)[IBQOS_GROUP_LABEL_MAX];
	uint32_t *labels, nnames = 0;

	*nomem = 0;
	if (!sw->tables.path || !ibqos_tables_has_group_pins(&sw->tables))
		return NULL;
	labels = malloc((f->nsw ? f->nsw : 1) * sizeof(*labels));
	names = malloc((f->nsw ? f->nsw : 1) * sizeof(*names));
	if (!labels || !names) {
		free(labels);
		free(names);
		*nomem = 1;
		return NULL;
	}
	for (uint32_t s = 0; s < f->nsw; s++) {
		char label[IBQOS_GROUP_LABEL_MAX];
		uint32_t k;

		labels[s] = DLA_NO_GROUP;
		if (!ibqos_tables_group_label(&sw->tables, f->sw[s].guid, f->sw[s].name, label,
					      sizeof(label)))
			continue;
		for (k = 0; k < nnames && strcmp(names[k], label); k++)
			;
		if (k == nnames)
			memcpy(names[nnames++], label, sizeof(label));
		labels[s] = k;
	}
	free(names);
	return labels;
}

/* say: log why a map that is there was not read (once a sweep: the routing's read, not the
 * store's check against it) */
static uint32_t *stored_labels(struct ibqos_ctx *ctx, const struct dla_fabric *f, int say,
			       int *nomem)
{
	char *path = map_path(), err[512];
	uint32_t *labels = malloc((f->nsw ? f->nsw : 1) * sizeof(*labels));
	int ret;

	*nomem = !path || !labels;
	if (*nomem) {
		free(path);
		free(labels);
		return NULL;
	}
	ret = dla_groupmap_load(path, f, labels, err, sizeof(err));
	if (say && ret && ret != -ENOENT)
		/* a map the sweep cannot replace (a directory there) is read again every sweep */
		ibqos_log_changed(ctx, ctx->map_not_read, sizeof(ctx->map_not_read), OSM_LOG_INFO,
				  "dla: stored group map not read: %s", err);
	else if (say)
		ctx->map_not_read[0] = '\0';
	if (ret) {
		*nomem = ret == -ENOMEM;
		free(labels);
		labels = NULL;
	}
	free(path);
	return labels;
}

int ibqos_compute(struct ibqos_ctx *ctx, struct ibqos_sweep *sw, char *err, size_t len)
{
	char note[NOTELEN];
	int nomem_p, nomem_s, ret;
	uint32_t *pinned = pinned_labels(sw, &nomem_p);
	uint32_t *stored = stored_labels(ctx, &sw->fabric, 1, &nomem_s);

	if (nomem_p || nomem_s) {
		ret = -ENOMEM;
		goto out;
	}
	ret = dla_compute(&sw->fabric, pinned, stored, &ctx->numbering, sw->stride, &sw->dla, note,
			  sizeof(note), err, len);
	if (pinned && sw->dla.source != DLA_GROUPS_PINNED)
		/* the admin asked for these groups: say loudly that they are not in force */
		ibqos_log(ctx, OSM_LOG_ERROR, "ERR D1A7: dla: %s; groups found without them", note);
	else if (*note)
		ibqos_log(ctx, OSM_LOG_INFO, "dla: %s", note);
	if (ret)
		goto out;
	ibqos_log(ctx, OSM_LOG_INFO, "dla: %u groups (%s%s)", sw->dla.groups.ngroups,
		  dla_groups_source_name(sw->dla.source),
		  sw->dla.alternative ? ", a later partition: the first needed too many VLs" : "");
out:
	free(pinned);
	free(stored);
	return ret;
}

void ibqos_store_groups(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw)
{
	char *path, err[512];
	int nomem;
	uint32_t *stored;

	/* only groups discovered whole: a degraded or pinned partition is not the fabric's */
	if (sw->dla.source != DLA_GROUPS_FOUND && sw->dla.source != DLA_GROUPS_FOUND_KEPT)
		return;
	stored = stored_labels(ctx, &sw->fabric, 0, &nomem);
	if (stored && dla_groupmap_same(stored, &sw->dla.groups, sw->fabric.nsw)) {
		free(stored);
		return;
	}
	free(stored);
	path = map_path();
	if (!path)
		return;
	if (dla_groupmap_save(path, &sw->fabric, &sw->dla.groups, err, sizeof(err))) {
		ibqos_log_changed(ctx, ctx->map_not_stored, sizeof(ctx->map_not_stored),
				  OSM_LOG_INFO, "dla: group map not stored: %s", err);
	} else {
		ctx->map_not_stored[0] = '\0';
		ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: group map stored in %s", path);
	}
	free(path);
}
