#include "dla_groups.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int dla_graph_build(const struct dla_fabric *f, struct dla_graph *g)
{
	uint32_t total = 0, k = 0;

	memset(g, 0, sizeof(*g));
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 1; p < f->sw[s].num_ports; p++)
			total += f->sw[s].ports[p].peer_kind == DLA_PEER_SWITCH;
	g->off = calloc(f->nsw + 1, sizeof(*g->off));
	g->nb = malloc((total ? total : 1) * sizeof(*g->nb));
	if (!g->off || !g->nb) {
		dla_graph_free(g);
		return -ENOMEM;
	}
	g->n = f->nsw;
	for (uint32_t s = 0; s < f->nsw; s++) {
		uint32_t start = k;

		g->off[s] = k;
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			const struct dla_port *pt = &f->sw[s].ports[p];

			if (pt->peer_kind == DLA_PEER_SWITCH && pt->peer_sw != s)
				g->nb[k++] = pt->peer_sw;
		}
		qsort(g->nb + start, k - start, sizeof(*g->nb), cmp_u32);
		/* parallel links: one edge */
		uint32_t w = start;
		for (uint32_t r = start; r < k; r++)
			if (r == start || g->nb[r] != g->nb[w - 1])
				g->nb[w++] = g->nb[r];
		k = w;
	}
	g->off[f->nsw] = k;
	return 0;
}

int dla_graph_adjacent(const struct dla_graph *g, uint32_t u, uint32_t v)
{
	uint32_t lo = g->off[u], hi = g->off[u + 1];

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (g->nb[mid] == v)
			return 1;
		if (g->nb[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void dla_graph_free(struct dla_graph *g)
{
	free(g->off);
	free(g->nb);
	memset(g, 0, sizeof(*g));
}
