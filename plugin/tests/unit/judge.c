#include "judge.h"

#include <stdlib.h>
#include <string.h>

#define NVL 16

struct arcs {
	uint32_t *from, *to;
	size_t n, cap;
};

static void push(struct arcs *a, uint32_t from, uint32_t to)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 4096;
		a->from = realloc(a->from, a->cap * sizeof(*a->from));
		a->to = realloc(a->to, a->cap * sizeof(*a->to));
	}
	a->from[a->n] = from;
	a->to[a->n++] = to;
}

static int acyclic(uint32_t nodes, const struct arcs *a)
{
	uint32_t *indeg = calloc(nodes, sizeof(*indeg)), *off = calloc(nodes + 1, sizeof(*off));
	uint32_t *adj = malloc((a->n + 1) * sizeof(*adj)), *fill = calloc(nodes, sizeof(*fill));
	uint32_t *q = malloc(nodes * sizeof(*q)), head = 0, tail = 0;

	for (size_t i = 0; i < a->n; i++) {
		off[a->from[i] + 1]++;
		indeg[a->to[i]]++;
	}
	for (uint32_t i = 0; i < nodes; i++)
		off[i + 1] += off[i];
	for (size_t i = 0; i < a->n; i++)
		adj[off[a->from[i]] + fill[a->from[i]]++] = a->to[i];
	for (uint32_t i = 0; i < nodes; i++)
		if (!indeg[i])
			q[tail++] = i;
	while (head < tail) {
		uint32_t v = q[head++];

		for (uint32_t k = off[v]; k < off[v + 1]; k++)
			if (--indeg[adj[k]] == 0)
				q[tail++] = adj[k];
	}
	free(indeg);
	free(off);
	free(adj);
	free(fill);
	free(q);
	return tail == nodes;
}

void judge(const struct dla_fabric *f, const struct dla_groups *g, const struct dla_routes *r,
	   const struct dla_vl *v, unsigned stride, struct verdict *out)
{
	uint32_t nodes = r->port_off[f->nsw] * NVL;
	struct arcs a = {0};
	/* the live destinations: a switch's LID, or an end port's a switch port is linked to
	 * (found once, not per source: that scan was 70 % of dla_unit_tests' time) */
	unsigned char *is_dest = calloc((size_t)f->max_lid + 1, 1);

	memset(out, 0, sizeof(*out));
	(void)stride;
	for (uint32_t t = 0; t < f->nsw; t++) {
		if (f->sw[t].lid <= f->max_lid)
			is_dest[f->sw[t].lid] = 1;
		for (unsigned p = 1; p < f->sw[t].num_ports; p++)
			if (f->sw[t].ports[p].peer_kind == DLA_PEER_ENDPORT &&
			    f->sw[t].ports[p].endport_lid <= f->max_lid)
				is_dest[f->sw[t].ports[p].endport_lid] = 1;
	}
	for (uint32_t src = 0; src < f->nsw; src++)
		for (unsigned lid = 1; lid <= f->max_lid; lid++) {
			uint32_t s = src, prev = UINT32_MAX;
			unsigned in = 0, hops = 0, globals = 0, after = 0;

			if (!is_dest[lid])
				continue;
			out->routes++;
			for (;;) {
				uint8_t p = dla_lft_row(r, s)[lid];
				const struct dla_port *pt;
				unsigned vl;
				uint32_t node;

				if (p == DLA_NO_PATH)
					break;
				if (p == 0 && f->sw[s].lid == lid) {
					out->delivered++;
					break;
				}
				pt = &f->sw[s].ports[p];
				if (pt->peer_kind == DLA_PEER_ENDPORT) {
					out->delivered += pt->endport_lid == lid;
					break;
				}
				if (pt->peer_kind != DLA_PEER_SWITCH || ++hops > 12) {
					out->looped += hops > 12;
					break;
				}
				vl = dla_turn_level(v, s, in, p);
				out->vls_mask |= 1u << vl;
				node = (r->port_off[s] + p) * NVL + vl;
				if (prev != UINT32_MAX)
					push(&a, prev, node);
				prev = node;
				if (g->group_of[pt->peer_sw] != g->group_of[s]) {
					globals++;
					after = 0;
				} else if (globals) {
					after++;
				}
				if (after > out->max_locals_after_global)
					out->max_locals_after_global = after;
				in = pt->peer_port;
				s = pt->peer_sw;
			}
			if (hops > out->max_hops)
				out->max_hops = hops;
			if (globals > out->max_globals)
				out->max_globals = globals;
			out->hop_hist[hops < 16 ? hops : 15]++;
		}
	out->cyclic = !acyclic(nodes, &a);
	free(is_dest);
	free(a.from);
	free(a.to);
}

void judged_compute(const struct dla_fabric *f, const uint32_t *stored, unsigned stride,
		    struct outcome *o, struct dla_result *keep)
{
	struct dla_result res;
	char note[768];

	memset(o, 0, sizeof(*o));
	o->ret = dla_compute(f, NULL, stored, NULL, stride, &res, note, sizeof(note), o->err,
			     sizeof(o->err));
	if (o->ret)
		return;
	o->src = res.source;
	judge(f, &res.groups, &res.routes, &res.vl, stride, &o->v);
	o->levels = res.vl.levels;
	if (keep)
		*keep = res;
	else
		dla_result_free(&res);
}
