/*
 * Dragonfly group discovery and validation (seed 003, section 4, step 1).
 *
 * A group is a clique found in the switches' closed neighbourhoods; the groups must partition
 * the switches into cliques of one size with every pair of groups joined by a global link.
 * Only the switch graph is used: no names, no GUID patterns, no port numbers.
 */
#ifndef IBQOS_DLA_GROUPS_H
#define IBQOS_DLA_GROUPS_H

#include "dla_fabric.h"

struct dla_groups {
	uint32_t ngroups;
	uint32_t *group_of;	/* [nsw] */
	uint32_t *first;	/* [ngroups + 1]: members of group k are members[first[k] .. first[k+1]) */
	uint32_t *members;	/* [nsw] */
};

/* Simple switch graph: sorted, de-duplicated neighbour lists (parallel links collapse). */
struct dla_graph {
	uint32_t n;
	uint32_t *off;		/* [n + 1] */
	uint32_t *nb;		/* [off[n]] */
};

int dla_graph_build(const struct dla_fabric *f, struct dla_graph *g);
int dla_graph_adjacent(const struct dla_graph *g, uint32_t u, uint32_t v);
void dla_graph_free(struct dla_graph *g);

/*
 * Find and validate the groups. 0: g holds a valid partition. -EINVAL: the fabric is not a
 * fully-connected dragonfly; err holds one line naming the switch, group or pair and the rule.
 * -ENOMEM: out of memory. g is empty on every error.
 */
int dla_groups_discover(const struct dla_fabric *f, struct dla_groups *g, char *err, size_t len);

/* The three rules on any partition (used by discover, exposed for tests). */
int dla_groups_validate(const struct dla_fabric *f, const struct dla_graph *gr,
			const struct dla_groups *g, char *err, size_t len);

/* Build the CSR member lists from group_of (ngroups and group_of set). */
int dla_groups_index(struct dla_groups *g, uint32_t nsw);
void dla_groups_free(struct dla_groups *g);

#endif
