/*
 * DLA unicast routing (seed 003, Fig. 4) on a validated group partition.
 */
#ifndef IBQOS_DLA_ROUTE_H
#define IBQOS_DLA_ROUTE_H

#include "dla_groups.h"
#include "ibqos_tables.h"

#define DLA_NO_PATH 0xFF

/* What a switch port connects to, in dragonfly terms. */
enum dla_role {
	DLA_ROLE_NONE = 0, /* port 0, unconnected or down */
	DLA_ROLE_TERMINAL, /* to a CA or router */
	DLA_ROLE_LOCAL,	   /* to a switch of the same group */
	DLA_ROLE_GLOBAL,   /* to a switch of another group */
};

/*
 * A destination's number in its group (its LID's switch, port 0 for the switch's own LID),
 * by which a group pair's parallel links are shared out. Numbers come from the reference
 * fabric: the last one on which every destination known so far was present. A failure
 * elsewhere then renumbers no surviving destination, so its routes stay where they were.
 */
struct dla_destnum {
	uint64_t guid;
	uint32_t idx;
	uint8_t port;
};

struct dla_numbering {
	uint32_t n;
	struct dla_destnum *e; /* [n] sorted by (guid, port) */
};

void dla_numbering_free(struct dla_numbering *nb);

struct dla_routes {
	uint32_t nsw;
	uint16_t max_lid;
	uint32_t *port_off; /* [nsw + 1]: port p of switch s is index port_off[s] + p */
	uint8_t *role;	    /* [port_off[nsw]] enum dla_role */
	uint8_t *swrole; /* [nsw] enum dla_sw_role: member, or leaf/spine of a dragonfly+ group */
	uint32_t leafspine; /* groups that are leaf/spine (dragonfly+) */
	uint32_t *routes; /* [port_off[nsw]] (source switch, LID) routes leaving on a global port */
	uint32_t *lids;	  /* [port_off[nsw]] LFT entries that forward to the port */
	uint8_t *lft;	  /* [nsw * (max_lid + 1)] out port per LID, DLA_NO_PATH if none */
	uint8_t *hops;	  /* same shape: links from the switch to the LID's port */
	uint32_t via_intermediate; /* (switch, LID) routes through a third group */
	uint32_t local_detours;	   /* (switch, LID) routes with two local hops in one group */
	uint32_t fallback;    /* (switch, LID) routes found only by the nearest-neighbour rule */
	uint32_t unreachable; /* (switch, LID) pairs without any route */
	struct dla_numbering numbering; /* the numbers in force: the reference for the next sweep */
};

static inline uint8_t *dla_lft_row(const struct dla_routes *r, uint32_t s)
{
	return r->lft + (size_t)s * ((size_t)r->max_lid + 1);
}

static inline uint8_t *dla_hops_row(const struct dla_routes *r, uint32_t s)
{
	return r->hops + (size_t)s * ((size_t)r->max_lid + 1);
}

/* Links leaving a spine towards a leaf of its group go *down*; dla_vl.c orders them first. */
static inline int dla_port_down(const struct dla_fabric *f, const struct dla_routes *r, uint32_t s,
				unsigned p)
{
	return r->swrole[s] == DLA_SW_SPINE && r->role[r->port_off[s] + p] == DLA_ROLE_LOCAL &&
		r->swrole[f->sw[s].ports[p].peer_sw] == DLA_SW_LEAF;
}

static inline enum dla_role dla_port_role(const struct dla_routes *r, uint32_t s, unsigned p)
{
	return (enum dla_role)r->role[r->port_off[s] + p];
}

/*
 * Fill LFTs for every switch LID and end-port LID, destination by destination, as a tree
 * towards the destination switch t in group Y (seed 003 Fig. 4 on a pristine fabric):
 *  - in Y: one local hop to t, or two through a member linked to both (missing local link);
 *  - a group X linked to Y: the pair's global links are shared out by the destination's index
 *    in its group, preferring links that land on t or next to it; a switch with its own
 *    link(s) to Y uses one, the others take one local hop (two if that link is missing) to
 *    the switch owning the chosen link;
 *  - a group X not linked to Y: the same towards groups one step closer to Y, preferring a
 *    landing switch that owns a link onwards (global, global), intermediates shared out by
 *    the destination's index;
 *  - anything still without a route (a group split in two) joins the tree at its nearest
 *    neighbour that has one.
 * Destinations are numbered in group, member and port order, unless known (the previous
 * sweep's numbering, may be NULL) holds one that is missing now: then every destination it
 * knows keeps its number (struct dla_destnum).
 * 0 or -ENOMEM / -EINVAL (message in err).
 */
int dla_routes_build(const struct dla_fabric *f, const struct dla_groups *g,
		     const struct dla_numbering *known, struct dla_routes *r, char *err,
		     size_t len);
void dla_routes_free(struct dla_routes *r);

/* The switch-port roles are the table file's (ibqos_tables.h, named once there and checked
 * against manager/ibqos/roles.py by manager/tests/test_roles_c.py); NONE maps to
 * IBQOS_ROLE_COUNT. */
enum ibqos_vlarb_role dla_vlarb_role(enum dla_role role);
const char *dla_role_name(enum dla_role role);

#endif
