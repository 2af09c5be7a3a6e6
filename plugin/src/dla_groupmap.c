#define _POSIX_C_SOURCE 200809L
#include "dla_groupmap.h"
#include "ibqos_atomic.h"
#include "ibqos_input.h"
#include "ibqos_keyset.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (4u << 20) /* far above 65535 switches' lines */
#define MAX_LINE 128
/* Groups are numbered from 0 and a subnet holds fewer switches than unicast LIDs (0xBFFF):
 * anything above is no map dla wrote, and dla_groups_from_labels() sizes a table by it */
#define MAX_GROUP 0xBFFFu
#define BLANKS " \t"

struct by_guid {
	uint64_t guid;
	uint32_t idx;
};

static int cmp_guid(const void *a, const void *b)
{
	const struct by_guid *x = a, *y = b;

	return (x->guid > y->guid) - (x->guid < y->guid);
}

/* "path:line: why" into err, escaped: the path comes from OSM_CACHE_DIR, the why may quote the
 * file */
static int fail(char *err, size_t len, const char *path, unsigned line, const char *why)
{
	char raw[1024];

	if (line)
		snprintf(raw, sizeof(raw), "%s:%u: %s", path, line, why);
	else
		snprintf(raw, sizeof(raw), "%s: %s", path, why);
	if (len)
		ibqos_escape(err, len, raw);
	return -EINVAL;
}

/* One line: 0 and *guid, *group set; 1 a comment or blank; -1 with why. */
static int parse_entry(char *line, uint64_t *guid, unsigned *group, char *why, size_t len)
{
	char *save, *g, *k, *extra;

	g = strtok_r(line, BLANKS, &save);
	if (!g || *g == '#')
		return 1;
	k = strtok_r(NULL, BLANKS, &save);
	extra = k ? strtok_r(NULL, BLANKS, &save) : NULL;
	if (!k || extra) {
		snprintf(why, len, "expected \"0x<node GUID> <group>\"");
		return -1;
	}
	if (ibqos_parse_guid(g, guid)) {
		snprintf(why, len, "'%.40s' is not a node GUID (0x and 1 to 16 hex digits)", g);
		return -1;
	}
	switch (ibqos_parse_uint(k, MAX_GROUP - 1, group)) {
	case 0:
		return 0;
	case -2:
		snprintf(why, len, "group %.40s is out of range (0-%u)", k, MAX_GROUP - 1);
		return -1;
	default:
		snprintf(why, len, "group '%.40s' is not a whole number (0-%u)", k, MAX_GROUP - 1);
		return -1;
	}
}

int dla_groupmap_load(const char *path, const struct dla_fabric *f, uint32_t *labels, char *err,
		      size_t len)
{
	struct by_guid *idx = malloc((f->nsw ? f->nsw : 1) * sizeof(*idx));
	struct ibqos_input_lines lines = {.max_line = MAX_LINE, .max_bytes = MAX_BYTES};
	struct ibqos_keyset seen = {0};
	char line[MAX_LINE + 1], why[256];
	int ret = 0, got;

	if (!idx)
		return -ENOMEM;
	lines.in = ibqos_input_open(path, MAX_BYTES, why, sizeof(why), &ret);
	if (!lines.in) {
		free(idx);
		fail(err, len, path, 0, why);
		return ret;
	}
	for (uint32_t s = 0; s < f->nsw; s++) {
		idx[s] = (struct by_guid){.guid = f->sw[s].guid, .idx = s};
		labels[s] = DLA_NO_GROUP;
	}
	qsort(idx, f->nsw, sizeof(*idx), cmp_guid);
	while ((got = ibqos_input_line(&lines, line, why, sizeof(why))) > 0) {
		struct by_guid key, *hit;
		unsigned group, first;
		uint64_t guid;

		got = parse_entry(line, &guid, &group, why, sizeof(why));
		if (got > 0)
			continue;
		if (got < 0)
			break;
		/* a map dla wrote names each switch once: two groups for one is no map of ours */
		got = ibqos_keyset_add(&seen, guid, 0, lines.line, &first);
		if (got < 0) {
			ret = got;
			break;
		}
		if (got) {
			snprintf(why, sizeof(why),
				 "switch 0x%016" PRIx64 " is listed twice (first on line %u)", guid,
				 first);
			got = -1;
			break;
		}
		key.guid = guid;
		hit = bsearch(&key, idx, f->nsw, sizeof(key), cmp_guid);
		if (hit)
			labels[hit->idx] = group;
	}
	if (got < 0 && !ret)
		ret = fail(err, len, path, lines.line, why);
	if (ret == -ENOMEM)
		fail(err, len, path, lines.line, "out of memory");
	fclose(lines.in);
	ibqos_keyset_free(&seen);
	free(idx);
	return ret;
}

int dla_groupmap_save(const char *path, const struct dla_fabric *f, const struct dla_groups *g,
		      char *err, size_t len)
{
	struct ibqos_atomic a;
	int ret = ibqos_atomic_open(&a, path);

	if (!ret) {
		fprintf(a.f,
			"# ibqos dla group map: node GUID, group. Written by the dla routing "
			"engine\n"
			"# after each sweep whose groups it discovered; delete it to "
			"rediscover.\n");
		for (uint32_t k = 0; k < g->ngroups; k++)
			for (uint32_t m = g->first[k]; m < g->first[k + 1]; m++)
				fprintf(a.f, "0x%016" PRIx64 " %u\n", f->sw[g->members[m]].guid, k);
		ret = ibqos_atomic_commit(&a);
	}
	if (ret)
		snprintf(err, len, "%s: %s", a.failed ? a.failed : path, strerror(-ret));
	ibqos_atomic_free(&a);
	return ret;
}

int dla_groupmap_same(const uint32_t *labels, const struct dla_groups *g, uint32_t nsw)
{
	/* same partition: labels agree exactly where groups agree, checked against each
	 * group's first member */
	for (uint32_t v = 0; v < nsw; v++) {
		uint32_t head = g->members[g->first[g->group_of[v]]];

		if (labels[v] == DLA_NO_GROUP || labels[v] != labels[head])
			return 0;
	}
	for (uint32_t k = 0; k < g->ngroups; k++)
		for (uint32_t j = k + 1; j < g->ngroups; j++)
			if (labels[g->members[g->first[k]]] == labels[g->members[g->first[j]]])
				return 0;
	return 1;
}
