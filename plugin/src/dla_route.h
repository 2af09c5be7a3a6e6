/*
 * DLA unicast routing (seed 003, Fig. 4) on a validated group partition.
 */
#ifndef IBQOS_DLA_ROUTE_H
#define IBQOS_DLA_ROUTE_H

#include "dla_groups.h"

#define DLA_NO_PATH 0xFF

/* What a switch port connects to, in dragonfly terms. */
enum dla_role {
	DLA_ROLE_NONE = 0,	/* port 0, unconnected or down */
	DLA_ROLE_TERMINAL,	/* to a CA or router */
	DLA_ROLE_LOCAL,		/* to a switch of the same group */
	DLA_ROLE_GLOBAL,	/* to a switch of another group */
};

struct dla_routes {
	uint32_t nsw;
	uint16_t max_lid;
	uint32_t *port_off;	/* [nsw + 1]: port p of switch s is index port_off[s] + p */
	uint8_t *role;		/* [port_off[nsw]] enum dla_role */
	uint32_t *routes;	/* [port_off[nsw]] (source switch, LID) routes leaving on a global port */
	uint32_t *lids;		/* [port_off[nsw]] LFT entries that forward to the port */
	uint8_t *lft;		/* [nsw * (max_lid + 1)] out port per LID, DLA_NO_PATH if none */
	uint8_t *hops;		/* same shape: links from the switch to the LID's port */
};

static inline uint8_t *dla_lft_row(const struct dla_routes *r, uint32_t s)
{
	return r->lft + (size_t)s * ((size_t)r->max_lid + 1);
}

static inline uint8_t *dla_hops_row(const struct dla_routes *r, uint32_t s)
{
	return r->hops + (size_t)s * ((size_t)r->max_lid + 1);
}

static inline enum dla_role dla_port_role(const struct dla_routes *r, uint32_t s, unsigned p)
{
	return (enum dla_role)r->role[r->port_off[s] + p];
}

/*
 * Fill LFTs for every switch LID and end-port LID:
 *  - same switch: port 0 (own LID) or the end port;
 *  - same group: the one local link;
 *  - other group: the pair's global links are shared out by the destination's index in its
 *    group; a switch with its own link(s) to that group uses one, the others take one local
 *    hop to the switch owning the chosen link; in the destination group at most one local hop.
 * 0 or -ENOMEM / -EINVAL (message in err).
 */
int dla_routes_build(const struct dla_fabric *f, const struct dla_groups *g,
		     struct dla_routes *r, char *err, size_t len);
void dla_routes_free(struct dla_routes *r);

const char *dla_role_name(enum dla_role role);

#endif
