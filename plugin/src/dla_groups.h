/*
 * Dragonfly group discovery and validation (seed 003, section 4, step 1), made to survive
 * real fabrics: any global wiring, dead links and dead switches.
 *
 * A partition is *exact* when its groups are cliques of one size and every pair of groups is
 * joined by a global link (the fabric DLA is defined on). It is *usable* when every group has
 * at most two local hops between any two members and every pair of groups is at most one
 * intermediate group apart: dla still routes that deadlock-free, with detours (dla_route.h)
 * and a VL assignment that it proves per sweep (dla_vl.h).
 */
#ifndef IBQOS_DLA_GROUPS_H
#define IBQOS_DLA_GROUPS_H

#include "dla_fabric.h"

#define DLA_NO_GROUP UINT32_MAX

struct dla_groups {
	uint32_t ngroups;
	uint32_t *group_of; /* [nsw] */
	uint32_t *first; /* [ngroups + 1]: members of group k are members[first[k] .. first[k+1]) */
	uint32_t *members; /* [nsw] */
};

/* Simple switch graph: sorted, de-duplicated neighbour lists (parallel links collapse). */
struct dla_graph {
	uint32_t n;
	uint32_t *off; /* [n + 1] */
	uint32_t *nb;  /* [off[n]] */
};

int dla_graph_build(const struct dla_fabric *f, struct dla_graph *g);
int dla_graph_adjacent(const struct dla_graph *g, uint32_t u, uint32_t v);
void dla_graph_free(struct dla_graph *g);

/* What a switch is in its group: a member of a fully-connected group, or a leaf or spine of a
 * dragonfly+ group (a two-level fat tree). The names are manager/ibqos/roles.py's
 * SWITCH_ROLES, in the same order (manager/tests/test_roles_c.py). */
enum dla_sw_role {
	DLA_SW_MEMBER = 0,
	DLA_SW_LEAF,
	DLA_SW_SPINE,
};

const char *dla_sw_role_name(enum dla_sw_role role);

/* Why a fabric with leaf twins was not read as a dragonfly+ (docs/groups.md, step 0). */
struct dla_dfplus_why {
	int kind; /* 0: no reason to name; 1: switch u's neighbours are spines of two groups,
		   * v and w among them; 2: switches u and v each read as the one leaf of a group,
		   * both groups holding w */
	uint32_t u, v, w;
};

/*
 * Dragonfly+ discovery (dla_dfplus.c): labels[nsw] gets one group per leaf twin class and its
 * spines, then groups of one leaf, then the near-twins (leaves that lost spines) join theirs.
 * 1: every switch labelled, two groups or more, every leaf linked to every spine of its group;
 * 2: the same, with leaves that lost spines; 0: not a dragonfly+ (a reason in *why when there
 * were leaf twins); -ENOMEM. The quotient is not checked. Adds its work to *steps.
 */
int dla_dfplus_find(const struct dla_graph *gr, uint32_t *labels, long *steps,
		    struct dla_dfplus_why *why);
/* role[nsw]: leaf/spine for switches of groups whose local links are bipartite with the global
 * links on one side (docs/groups.md, "Switch roles"), member elsewhere. Returns how many groups
 * are leaf/spine, or -ENOMEM. */
int dla_dfplus_roles(const struct dla_fabric *f, const struct dla_graph *gr,
		     const struct dla_groups *g, uint8_t *role);
/* 1 if every leaf of leaf/spine group k is linked to every spine of it; else 0 with the first
 * unlinked pair in *u (leaf), *v (spine). */
int dla_dfplus_complete(const struct dla_graph *gr, const struct dla_groups *g, const uint8_t *role,
			uint32_t k, uint32_t *u, uint32_t *v);

/* Where the partition in force came from (for the log). */
enum dla_groups_source {
	DLA_GROUPS_PINNED,	    /* the admin's `group` / `group_pattern` lines */
	DLA_GROUPS_STORED,	    /* the stored map, still exact on this fabric */
	DLA_GROUPS_FOUND,	    /* discovered: exact */
	DLA_GROUPS_STORED_DEGRADED, /* the stored map, usable on a degraded fabric */
	DLA_GROUPS_FOUND_DEGRADED,  /* discovered on a degraded fabric (fresh start) */
	DLA_GROUPS_FOUND_KEPT,	    /* as above, but all cliques, linked: stored */
};

const char *dla_groups_source_name(enum dla_groups_source src);

/*
 * Fresh discovery from the switch graph alone (no names, GUIDs or port numbers).
 * 0: out holds an exact partition (*exact = 1) or, failing any, a usable one with groups of
 * a and a-1 switches (cliques, or for a >= 4 cliques missing one link) and a quotient of
 * diameter <= 2 (*exact = 0); alternative > 0 passes over that many degraded partitions first
 * (dla tries the next when one cannot be routed within the VLs). -EINVAL: none found within
 * the step budget (the same on every run of the same fabric); err
 * says what is closest and which rule breaks. -ENOMEM. out is empty on every error.
 */
int dla_groups_discover(const struct dla_fabric *f, unsigned alternative, struct dla_groups *out,
			int *exact, char *err, size_t len);
/* The same, with the search steps it took in *steps (a deterministic count: discovery is
 * bounded by steps, never by time). */
int dla_groups_discover_steps(const struct dla_fabric *f, unsigned alternative,
			      struct dla_groups *out, int *exact, long *steps, char *err,
			      size_t len);

/*
 * Choose the partition for this sweep. pinned and stored are group numbers per switch index
 * (DLA_NO_GROUP: not given), either may be NULL. Order: a pinned partition that is usable;
 * the stored one if still exact (keeps the choice stable); fresh exact discovery; the stored
 * one if usable; fresh degraded discovery (its alternative-th partition: see
 * dla_groups_discover). note receives one line on anything the log should
 * say (pins ignored and why, the stored map used and why); empty otherwise.
 */
int dla_groups_choose(const struct dla_fabric *f, const uint32_t *pinned, const uint32_t *stored,
		      unsigned alternative, struct dla_groups *out, enum dla_groups_source *src,
		      char *note, size_t note_len, char *err, size_t len);

/* Exact: the three rules of seed 003 section 3 (cliques, one size, every pair linked). */
int dla_groups_validate(const struct dla_fabric *f, const struct dla_graph *gr,
			const struct dla_groups *g, char *err, size_t len);
/* Usable: every member pair within two local hops, every group pair within one intermediate
 * group. */
int dla_groups_usable(const struct dla_fabric *f, const struct dla_graph *gr,
		      const struct dla_groups *g, char *err, size_t len);
/* 1 if every pair of groups is linked directly (quotient complete) or, with diameter2, through
 * at most one intermediate group; 0 if not; -ENOMEM. */
int dla_groups_quotient_ok(const struct dla_graph *gr, const struct dla_groups *g, int diameter2);

/* From a group number per switch (any numbering, DLA_NO_GROUP not allowed): groups renumbered
 * in order of their lowest switch index, member lists built. */
int dla_groups_from_labels(struct dla_groups *g, const uint32_t *labels, uint32_t nsw);
/* Build the CSR member lists from group_of (ngroups and group_of set). */
int dla_groups_index(struct dla_groups *g, uint32_t nsw);
void dla_groups_free(struct dla_groups *g);

#endif
