/*
 * What a routing pass produced, for the admin reading osm.log: routes per global link and the
 * cost of a degraded fabric.
 */
#include "ibqos_plugin.h"

#include <stdint.h>

static const char *label(const struct ibqos_sweep *sw, uint32_t s, char *buf, size_t len)
{
	return dla_switch_label(&sw->fabric, s, buf, len);
}

void ibqos_log_link_counts(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, int per_link)
{
	const struct dla_routes *r = &sw->dla.routes;
	const struct dla_fabric *f = &sw->fabric;
	uint32_t nlinks = 0, lo = UINT32_MAX, hi = 0;
	char l1[200], l2[200];

	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			const struct dla_port *pt = &f->sw[s].ports[p];
			uint32_t n = r->routes[r->port_off[s] + p];

			if (dla_port_role(r, s, p) != DLA_ROLE_GLOBAL)
				continue;
			nlinks++;
			lo = n < lo ? n : lo;
			hi = n > hi ? n : hi;
			if (per_link)
				ibqos_log(ctx, OSM_LOG_ROUTING,
					  "dla: global link %s port %u -> %s port %u "
					  "(group %u -> %u): %u routes, %u LIDs",
					  label(sw, s, l1, sizeof(l1)), p,
					  label(sw, pt->peer_sw, l2, sizeof(l2)), pt->peer_port,
					  sw->dla.groups.group_of[s],
					  sw->dla.groups.group_of[pt->peer_sw], n,
					  r->lids[r->port_off[s] + p]);
		}
	if (per_link)
		return;
	{
		/* groups of unequal size (a switch never installed, or down): say so */
		const struct dla_groups *g = &sw->dla.groups;
		uint32_t small = UINT32_MAX, big = 0;
		char sizes[32];

		for (uint32_t k = 0; k < g->ngroups; k++) {
			uint32_t n = g->first[k + 1] - g->first[k];

			small = n < small ? n : small;
			big = n > big ? n : big;
		}
		if (small < big)
			snprintf(sizes, sizeof(sizes), "%u to %u", small, big);
		else
			snprintf(sizes, sizeof(sizes), "%u", big);
		ibqos_log(ctx, OSM_LOG_INFO,
			  "dla: %u groups of %s switches, %u global link ends, "
			  "routes per global link min %u max %u",
			  g->ngroups, sizes, nlinks, nlinks ? lo : 0, hi);
	}
}

/* What a degraded fabric cost: detours, routes through a third group, VL levels. */
void ibqos_log_route_shapes(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw)
{
	const struct dla_routes *r = &sw->dla.routes;

	ibqos_log(ctx, OSM_LOG_INFO,
		  "dla: %u VL(s) per class in use (of %u), %u turn(s) shifted; "
		  "LFT entries: %u through a third group, %u with two local hops, %u by nearest "
		  "neighbour, %u unreachable",
		  sw->dla.vl.levels, sw->stride, sw->dla.vl.shifted, r->via_intermediate,
		  r->local_detours, r->fallback, r->unreachable);
}
