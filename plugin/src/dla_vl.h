/*
 * VL levels: which of its class's VLs a packet uses on each hop, per (switch, in-port,
 * out-port) turn, so that the routes in force have an acyclic channel dependency graph.
 *
 * Directed switch-to-switch links are ordered: local links before global ones, and inside
 * each tier by a topological order of the turns the routes make within the tier. A turn that
 * goes down in this order (global to local, always; local to local or global to global only
 * when that tier's turns are cyclic) moves the packet one level up. Levels are the longest
 * such count over every route through a turn (a fixpoint, since a turn is shared by all routes
 * through it). Then along every route the level never falls, and within one level every
 * dependency goes up in the order: the graph is acyclic by construction.
 *
 * On a pristine dragonfly this is exactly seed 003 Fig. 8: level 1 from a global in-port to a
 * local out-port, level 0 elsewhere. Detours inside a group and routes through a third group
 * need a third level only when their turns force it.
 */
#ifndef IBQOS_DLA_VL_H
#define IBQOS_DLA_VL_H

#include "dla_route.h"

#define DLA_MAX_LEVELS 3 /* VLs per class dla may use */

struct dla_vl {
	uint32_t nsw;
	uint32_t *turn_off;   /* [nsw + 1]: switch s's (in, out) table starts at turn_off[s] */
	uint8_t *nports;      /* [nsw] */
	uint8_t *level;	      /* [turn_off[nsw]] level of turn (in, out) = in * nports + out */
	uint8_t *port_levels; /* [port_off[nsw]] levels leaving each port (max level + 1) */
	unsigned levels;      /* levels the routes need: max over used turns + 1 */
	unsigned shifted;     /* used turns above level 0 */
};

static inline uint8_t dla_turn_level(const struct dla_vl *v, uint32_t s, unsigned in, unsigned out)
{
	if (s >= v->nsw || in >= v->nports[s] || out >= v->nports[s])
		return 0;
	return v->level[v->turn_off[s] + in * v->nports[s] + out];
}

/*
 * Assign levels for the routes in r. When r has no detour, no third group and no fallback
 * route (every route local, global, local at most: a pristine dragonfly), the fixpoint is
 * known in closed form, Fig. 8, and is written directly. budget: levels available per class
 * (2 or 3). 0, or
 * -EINVAL when the routes need more levels than budget (err names the first turn that does
 * and the route shape behind it), or -ENOMEM.
 */
int dla_vl_assign(const struct dla_fabric *f, const struct dla_routes *r, unsigned budget,
		  struct dla_vl *v, char *err, size_t len);
/* The same without the closed form: always the fixpoint (tests check the two agree). */
int dla_vl_assign_fixpoint(const struct dla_fabric *f, const struct dla_routes *r, unsigned budget,
			   struct dla_vl *v, char *err, size_t len);
void dla_vl_free(struct dla_vl *v);

#endif
