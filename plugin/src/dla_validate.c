/*
 * Partition rules. Exact: the three structural rules of seed 003, section 3 (clique groups of
 * one size, every pair of groups linked), under which every route is local, global, local.
 * Usable: what dla's generalised routing needs on a degraded fabric (two local hops inside a
 * group, one intermediate group between groups); deadlock freedom then comes from the VL
 * levels dla_vl.c assigns and proves, not from the shape of the partition.
 */
#include "dla_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dla_groups_index(struct dla_groups *g, uint32_t nsw)
{
	uint32_t *fill;

	free(g->first);
	free(g->members);
	g->first = calloc(g->ngroups + 1, sizeof(*g->first));
	g->members = malloc((nsw ? nsw : 1) * sizeof(*g->members));
	fill = calloc(g->ngroups + 1, sizeof(*fill));
	if (!g->first || !g->members || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t v = 0; v < nsw; v++)
		g->first[g->group_of[v] + 1]++;
	for (uint32_t k = 0; k < g->ngroups; k++)
		g->first[k + 1] += g->first[k];
	for (uint32_t v = 0; v < nsw; v++) {
		uint32_t k = g->group_of[v];

		g->members[g->first[k] + fill[k]++] = v;
	}
	free(fill);
	return 0;
}

void dla_groups_free(struct dla_groups *g)
{
	free(g->group_of);
	free(g->first);
	free(g->members);
	memset(g, 0, sizeof(*g));
}

static uint32_t gsize(const struct dla_groups *g, uint32_t k)
{
	return g->first[k + 1] - g->first[k];
}

int dla_groups_validate(const struct dla_fabric *f, const struct dla_graph *gr,
			const struct dla_groups *g, char *err, size_t len)
{
	char l1[160], l2[160];
	uint8_t *joined, *role = malloc(f->nsw + 1);
	uint32_t ng = g->ngroups, u, v;
	int leafspine;

	if (!role)
		return -ENOMEM;
	leafspine = dla_dfplus_roles(f, gr, g, role);
	/* dragonfly+ when every group is leaf/spine: every leaf linked to every spine; a partition
	 * of any other shape is judged by the clique rules below, with their messages */
	if (leafspine > 0 && (uint32_t)leafspine != ng)
		leafspine = 0;
	for (uint32_t k = 0; k < ng && leafspine > 0; k++) {
		if (!dla_dfplus_complete(gr, g, role, k, &u, &v)) {
			snprintf(err, len,
				 "group %u: leaf %s and spine %s are not linked [rule: every leaf "
				 "of a dragonfly+ group is linked to every spine]",
				 k, dla_switch_label(f, u, l1, sizeof(l1)),
				 dla_switch_label(f, v, l2, sizeof(l2)));
			free(role);
			return -EINVAL;
		}
	}
	free(role);
	if (leafspine < 0)
		return leafspine;
	for (uint32_t k = 0; k < ng && !leafspine; k++) {
		const uint32_t *m = g->members + g->first[k];

		for (uint32_t i = 0; i < gsize(g, k); i++)
			for (uint32_t j = i + 1; j < gsize(g, k); j++)
				if (!dla_graph_adjacent(gr, m[i], m[j])) {
					snprintf(err, len,
						 "group %u (%u switches) is not a clique: "
						 "switches %s and %s are not linked [rule: every "
						 "group is fully connected]",
						 k, gsize(g, k),
						 dla_switch_label(f, m[i], l1, sizeof(l1)),
						 dla_switch_label(f, m[j], l2, sizeof(l2)));
					return -EINVAL;
				}
	}
	for (uint32_t k = 1; k < ng && !leafspine; k++)
		if (gsize(g, k) != gsize(g, 0)) {
			snprintf(err, len,
				 "group %u (incl. switch %s) has %u switches but group 0 "
				 "(incl. switch %s) has %u [rule: all groups have the same size]",
				 k, dla_switch_label(f, g->members[g->first[k]], l1, sizeof(l1)),
				 gsize(g, k),
				 dla_switch_label(f, g->members[g->first[0]], l2, sizeof(l2)),
				 gsize(g, 0));
			return -EINVAL;
		}
	joined = calloc((size_t)ng * ng + 1, 1);
	if (!joined)
		return -ENOMEM;
	for (uint32_t v = 0; v < gr->n; v++)
		for (uint32_t e = gr->off[v]; e < gr->off[v + 1]; e++)
			joined[(size_t)g->group_of[v] * ng + g->group_of[gr->nb[e]]] = 1;
	for (uint32_t x = 0; x < ng; x++)
		for (uint32_t y = x + 1; y < ng; y++)
			if (!joined[(size_t)x * ng + y]) {
				snprintf(err, len,
					 "groups %u (incl. switch %s) and %u (incl. switch "
					 "%s) are not joined by any global link [rule: every pair "
					 "of groups is linked]",
					 x,
					 dla_switch_label(f, g->members[g->first[x]], l1,
							  sizeof(l1)),
					 y,
					 dla_switch_label(f, g->members[g->first[y]], l2,
							  sizeof(l2)));
				free(joined);
				return -EINVAL;
			}
	free(joined);
	return 0;
}

int dla_groups_from_labels(struct dla_groups *g, const uint32_t *labels, uint32_t nsw)
{
	/* groups numbered in order of their lowest switch index: deterministic across sweeps */
	uint32_t top = 0, *map;

	memset(g, 0, sizeof(*g));
	for (uint32_t v = 0; v < nsw; v++)
		if (labels[v] + 1 > top)
			top = labels[v] + 1;
	map = malloc((top ? top : 1) * sizeof(*map));
	g->group_of = malloc((nsw ? nsw : 1) * sizeof(*g->group_of));
	if (!map || !g->group_of) {
		free(map);
		dla_groups_free(g);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < top; i++)
		map[i] = DLA_NO_GROUP;
	for (uint32_t v = 0; v < nsw; v++) {
		if (map[labels[v]] == DLA_NO_GROUP)
			map[labels[v]] = g->ngroups++;
		g->group_of[v] = map[labels[v]];
	}
	free(map);
	if (dla_groups_index(g, nsw)) {
		dla_groups_free(g);
		return -ENOMEM;
	}
	return 0;
}

/* Group adjacency as bit rows: row x has bit y set when a global link joins x and y. */
static uint64_t *quotient_bits(const struct dla_graph *gr, const struct dla_groups *g,
			       size_t *words)
{
	uint32_t ng = g->ngroups;
	uint64_t *bits;

	*words = (ng + 63) / 64;
	bits = calloc((size_t)ng * *words + 1, sizeof(*bits));
	if (!bits)
		return NULL;
	for (uint32_t v = 0; v < gr->n; v++)
		for (uint32_t e = gr->off[v]; e < gr->off[v + 1]; e++) {
			uint32_t x = g->group_of[v], y = g->group_of[gr->nb[e]];

			if (x != y)
				bits[(size_t)x * *words + y / 64] |= 1ull << (y % 64);
		}
	return bits;
}

static int linked_within_two(const uint64_t *bits, size_t words, uint32_t x, uint32_t y)
{
	const uint64_t *rx = bits + (size_t)x * words, *ry = bits + (size_t)y * words;

	if (rx[y / 64] >> (y % 64) & 1)
		return 1;
	for (size_t w = 0; w < words; w++)
		if (rx[w] & ry[w])
			return 1;
	return 0;
}

int dla_groups_quotient_ok(const struct dla_graph *gr, const struct dla_groups *g, int diameter2)
{
	size_t words;
	uint64_t *bits = quotient_bits(gr, g, &words);
	int ok = 1;

	if (!bits)
		return -ENOMEM;
	for (uint32_t x = 0; x < g->ngroups && ok; x++)
		for (uint32_t y = x + 1; y < g->ngroups && ok; y++)
			ok = diameter2 ? linked_within_two(bits, words, x, y)
				       : (int)(bits[(size_t)x * words + y / 64] >> (y % 64) & 1);
	free(bits);
	return ok;
}

int dla_groups_usable(const struct dla_fabric *f, const struct dla_graph *gr,
		      const struct dla_groups *g, char *err, size_t len)
{
	char l1[160], l2[160];
	size_t words;
	uint64_t *bits;
	uint8_t *role = malloc(f->nsw + 1);

	if (!role || dla_dfplus_roles(f, gr, g, role) < 0) {
		free(role);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < g->ngroups; k++) {
		const uint32_t *m = g->members + g->first[k];
		uint32_t size = gsize(g, k);

		for (uint32_t i = 0; i < size; i++)
			for (uint32_t j = i + 1; j < size; j++) {
				uint32_t w;

				if (dla_graph_adjacent(gr, m[i], m[j]))
					continue;
				/* leaf/spine: two leaves share a spine, two spines a leaf; a
				 * leaf reaches a spine it lost through those (three hops) */
				if (role[m[i]] != DLA_SW_MEMBER && role[m[i]] != role[m[j]])
					continue;
				for (w = 0; w < size; w++)
					if (dla_graph_adjacent(gr, m[i], m[w]) &&
					    dla_graph_adjacent(gr, m[w], m[j]))
						break;
				if (w < size)
					continue;
				snprintf(err, len,
					 "group %u (%u switches): switches %s and %s are "
					 "more than two local hops apart [rule: a group is a "
					 "clique, "
					 "or a clique with links missing that one switch of the "
					 "group "
					 "bridges]",
					 k, size, dla_switch_label(f, m[i], l1, sizeof(l1)),
					 dla_switch_label(f, m[j], l2, sizeof(l2)));
				free(role);
				return -EINVAL;
			}
	}
	free(role);
	bits = quotient_bits(gr, g, &words);
	if (!bits)
		return -ENOMEM;
	for (uint32_t x = 0; x < g->ngroups; x++)
		for (uint32_t y = x + 1; y < g->ngroups; y++)
			if (!linked_within_two(bits, words, x, y)) {
				snprintf(err, len,
					 "groups %u (incl. switch %s) and %u (incl. switch "
					 "%s) are joined neither by a global link nor through a "
					 "third group [rule: every pair of groups is linked, "
					 "directly "
					 "or through one intermediate group]",
					 x,
					 dla_switch_label(f, g->members[g->first[x]], l1,
							  sizeof(l1)),
					 y,
					 dla_switch_label(f, g->members[g->first[y]], l2,
							  sizeof(l2)));
				free(bits);
				return -EINVAL;
			}
	free(bits);
	return 0;
}

const char *dla_groups_source_name(enum dla_groups_source src)
{
	switch (src) {
	case DLA_GROUPS_PINNED:
		return "pinned by the table file";
	case DLA_GROUPS_STORED:
		return "stored map";
	case DLA_GROUPS_FOUND:
		return "discovered";
	case DLA_GROUPS_STORED_DEGRADED:
		return "stored map, fabric degraded";
	case DLA_GROUPS_FOUND_DEGRADED:
		return "discovered, fabric degraded";
	case DLA_GROUPS_FOUND_KEPT:
		return "discovered, fabric degraded, stored";
	}
	return "?";
}
