/*
 * The three structural rules DLA's deadlock freedom rests on (seed 003, section 3): with
 * clique groups every intra-group route is one local hop, so a packet meets at most one local
 * channel after its global one, and the in-port alone tells the SL2VL table to shift VLs.
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
	uint8_t *joined;
	uint32_t ng = g->ngroups;

	for (uint32_t k = 0; k < ng; k++) {
		const uint32_t *m = g->members + g->first[k];

		for (uint32_t i = 0; i < gsize(g, k); i++)
			for (uint32_t j = i + 1; j < gsize(g, k); j++)
				if (!dla_graph_adjacent(gr, m[i], m[j])) {
					snprintf(err, len, "group %u (%u switches) is not a clique: "
						 "switches %s and %s are not linked [rule: every "
						 "group is fully connected]", k, gsize(g, k),
						 dla_switch_label(f, m[i], l1, sizeof(l1)),
						 dla_switch_label(f, m[j], l2, sizeof(l2)));
					return -EINVAL;
				}
	}
	for (uint32_t k = 1; k < ng; k++)
		if (gsize(g, k) != gsize(g, 0)) {
			snprintf(err, len, "group %u (incl. switch %s) has %u switches but group 0 "
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
				snprintf(err, len, "groups %u (incl. switch %s) and %u (incl. switch "
					 "%s) are not joined by any global link [rule: every pair "
					 "of groups is linked]", x,
					 dla_switch_label(f, g->members[g->first[x]], l1, sizeof(l1)),
					 y,
					 dla_switch_label(f, g->members[g->first[y]], l2, sizeof(l2)));
				free(joined);
				return -EINVAL;
			}
	free(joined);
	return 0;
}
