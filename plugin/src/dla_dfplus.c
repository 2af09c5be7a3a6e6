/*
 * Dragonfly+ groups (Shpiner et al., HiPINEB 2017): each group a two-level fat tree, every leaf
 * linked to every spine, hosts on the leaves, global links from the spines.
 *
 * Found from the switch graph alone: the leaves of one group are twins (the same neighbours:
 * its spines), the spines of a group are pairwise unlinked, and a leaf has no neighbour outside
 * its group. So a twin class of two or more switches whose common neighbours are pairwise
 * unlinked is the leaf side of a group and those neighbours its spine side. Classes are taken
 * largest first (lowest switch on ties); a class whose group would overlap one taken already
 * is skipped. Then groups of one leaf: a switch left over whose neighbours are all left over,
 * pairwise unlinked, and not a proper subset of another such switch's, is the only leaf of a
 * group with its neighbours as spines (refused as ambiguous when two such groups overlap).
 * Last, near-twins: a switch left over all of whose neighbours are spines of one group is a
 * leaf of it that lost links to the others (a leaf-spine link down at boot). A reading that
 * leaves switches in no group is tried again without a class it took that was spines (twins
 * too when they have no global links, or the same remote ones), once per class. The
 * partition is kept only if it covers every switch with two or more groups (the caller checks
 * that every group pair is linked, and that the groups are usable). docs/groups.md, step 0.
 *
 * The roles of switches in a partition from anywhere (discovery, pins, the stored map) follow
 * from the partition and the graph: dla_dfplus_roles.
 */
#include "dla_groups.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* steps for groups of one leaf; past it none are made (the fabric is not read as a dragonfly+) */
#define DFPLUS_BUDGET 4000000L

struct twin {
	uint64_t hash;
	uint32_t v;
};

static int cmp_twin(const void *a, const void *b)
{
	const struct twin *x = a, *y = b;

	if (x->hash != y->hash)
		return (x->hash > y->hash) - (x->hash < y->hash);
	return (x->v > y->v) - (x->v < y->v);
}

static uint32_t deg(const struct dla_graph *gr, uint32_t v)
{
	return gr->off[v + 1] - gr->off[v];
}

static int same_neighbours(const struct dla_graph *gr, uint32_t u, uint32_t v)
{
	return deg(gr, u) == deg(gr, v) &&
		!memcmp(gr->nb + gr->off[u], gr->nb + gr->off[v], deg(gr, u) * sizeof(*gr->nb));
}

struct cls {
	uint32_t head, size;
};

static int cmp_cls(const void *a, const void *b)
{
	const struct cls *x = a, *y = b;

	if (x->size != y->size)
		return (x->size < y->size) - (x->size > y->size);
	return (x->head > y->head) - (x->head < y->head);
}

/* 1 if every neighbour of u is a neighbour of v (both lists sorted) */
static int nb_subset(const struct dla_graph *gr, uint32_t u, uint32_t v)
{
	uint32_t j = gr->off[v];

	for (uint32_t i = gr->off[u]; i < gr->off[u + 1]; i++) {
		while (j < gr->off[v + 1] && gr->nb[j] < gr->nb[i])
			j++;
		if (j == gr->off[v + 1] || gr->nb[j] != gr->nb[i])
			return 0;
	}
	return 1;
}

static void group_of_class(const struct dla_graph *gr, uint32_t *labels, uint8_t *spine, uint32_t h,
			   uint32_t k)
{
	for (uint32_t e = gr->off[h]; e < gr->off[h + 1]; e++) {
		labels[gr->nb[e]] = k;
		spine[gr->nb[e]] = 1;
	}
	labels[h] = k;
}

/* 1 if v has neighbours, all of them unlabelled and pairwise unlinked */
static int leaf_like(const struct dla_graph *gr, const uint32_t *labels, uint32_t v, long *steps)
{
	const uint32_t *sp = gr->nb + gr->off[v];
	uint32_t d = deg(gr, v);

	*steps += 1 + (long)d * d;
	if (!d)
		return 0;
	for (uint32_t i = 0; i < d; i++) {
		if (labels[sp[i]] != DLA_NO_GROUP)
			return 0;
		for (uint32_t j = i + 1; j < d; j++)
			if (dla_graph_adjacent(gr, sp[i], sp[j]))
				return 0;
	}
	return 1;
}

/*
 * Groups of one leaf among the switches left over: candidates are the leaf-like switches
 * whose neighbours are all left over; a candidate whose neighbour set is not a proper subset
 * of another candidate's is the leaf of a group. Two such groups sharing a switch: ambiguous
 * (why->kind 2). Returns how many groups were made.
 */
static uint32_t single_leaf_groups(const struct dla_graph *gr, uint32_t *labels, uint8_t *spine,
				   uint8_t *cand, uint32_t ngroups, long *steps,
				   struct dla_dfplus_why *why)
{
	uint32_t n = gr->n, made = 0;

	for (uint32_t v = 0; v < n && *steps < DFPLUS_BUDGET; v++)
		cand[v] = labels[v] == DLA_NO_GROUP && leaf_like(gr, labels, v, steps);
	for (uint32_t v = 0; v < n && *steps < DFPLUS_BUDGET; v++) {
		uint32_t s0;
		int seed = cand[v];

		if (!seed)
			continue;
		/* a candidate with more neighbours around v's first one holding all of v's */
		s0 = gr->nb[gr->off[v]];
		for (uint32_t e = gr->off[s0]; e < gr->off[s0 + 1] && seed; e++) {
			uint32_t u = gr->nb[e];

			*steps += deg(gr, v) + deg(gr, u);
			seed = !(u != v && cand[u] && deg(gr, u) > deg(gr, v) &&
				 nb_subset(gr, v, u));
		}
		if (!seed)
			continue;
		for (uint32_t e = gr->off[v]; e <= gr->off[v + 1]; e++) {
			uint32_t w = e < gr->off[v + 1] ? gr->nb[e] : v;

			if (labels[w] != DLA_NO_GROUP && labels[w] >= ngroups) {
				*why = (struct dla_dfplus_why){.kind = 2, .u = v, .w = w};
				for (uint32_t x = 0; x < n; x++)
					if (labels[x] == labels[w] && !spine[x])
						why->v = x; /* the other group's leaf */
				return made;
			}
		}
		group_of_class(gr, labels, spine, v, ngroups + made);
		made++;
	}
	return made;
}

/* The arrays one reading works in (dla_dfplus_find). */
struct reading {
	struct cls *cl;
	uint32_t ncls;
	uint8_t *aside; /* [ncls] 1: not a leaf side; 2: taken as one by the last reading */
	uint8_t *spine, *cand;
	uint32_t *nspines;
};

/*
 * One reading: the twin classes not set aside as leaf sides, largest first, then groups of
 * one leaf, then near-twins. Returns as dla_dfplus_find.
 */
static int read_groups(const struct dla_graph *gr, struct reading *rd, uint32_t *labels,
		       long *steps, struct dla_dfplus_why *why)
{
	uint32_t n = gr->n, ngroups = 0, near = 0;
	int ret;

	*why = (struct dla_dfplus_why){0};
	for (uint32_t v = 0; v < n; v++)
		labels[v] = DLA_NO_GROUP;
	memset(rd->spine, 0, n + 1);
	memset(rd->cand, 0, n + 1);
	memset(rd->nspines, 0, (n + 1) * sizeof(*rd->nspines));
	for (uint32_t c = 0; c < rd->ncls; c++)
		rd->aside[c] = rd->aside[c] == 1;
	for (uint32_t c = 0; c < rd->ncls && rd->cl[c].size >= 2; c++) {
		uint32_t h = rd->cl[c].head, ok = rd->aside[c] != 1;

		for (uint32_t v = 0; v < n && ok; v++)
			ok = !(same_neighbours(gr, h, v) && labels[v] != DLA_NO_GROUP);
		ok = ok && leaf_like(gr, labels, h, steps);
		*steps += n;
		if (!ok)
			continue;
		for (uint32_t v = 0; v < n; v++)
			if (same_neighbours(gr, h, v))
				labels[v] = ngroups;
		group_of_class(gr, labels, rd->spine, h, ngroups);
		rd->aside[c] = 2;
		ngroups++;
	}
	if (!ngroups)
		return 0; /* no twins at all: not read as a dragonfly+ */
	ngroups += single_leaf_groups(gr, labels, rd->spine, rd->cand, ngroups, steps, why);
	if (why->kind || *steps >= DFPLUS_BUDGET)
		return 0;
	/* near-twins: every neighbour a spine of one group */
	for (uint32_t v = 0; v < n; v++) {
		uint32_t k = deg(gr, v) ? labels[gr->nb[gr->off[v]]] : DLA_NO_GROUP, ok = 1;

		if (labels[v] != DLA_NO_GROUP || k == DLA_NO_GROUP)
			continue;
		for (uint32_t e = gr->off[v]; e < gr->off[v + 1] && ok; e++)
			ok = rd->spine[gr->nb[e]];
		for (uint32_t e = gr->off[v]; e < gr->off[v + 1] && ok; e++)
			if (labels[gr->nb[e]] != k) {
				ok = 0;
				if (!why->kind)
					*why = (struct dla_dfplus_why){.kind = 1,
								       .u = v,
								       .v = gr->nb[gr->off[v]],
								       .w = gr->nb[e]};
			}
		*steps += deg(gr, v);
		if (ok)
			rd->cand[v] = 2;
	}
	for (uint32_t v = 0; v < n; v++)
		if (rd->cand[v] == 2)
			labels[v] = labels[gr->nb[gr->off[v]]];
	for (uint32_t v = 0; v < n; v++)
		if (rd->spine[v] && labels[v] != DLA_NO_GROUP)
			rd->nspines[labels[v]]++;
	for (uint32_t v = 0; v < n; v++)
		near += rd->cand[v] == 2 && deg(gr, v) < rd->nspines[labels[v]];
	ret = ngroups >= 2;
	for (uint32_t v = 0; v < n && ret; v++)
		ret = labels[v] != DLA_NO_GROUP;
	if (!ret)
		return 0;
	*why = (struct dla_dfplus_why){0};
	return near ? 2 : 1;
}

/*
 * After a reading that left switches in no group: the first class taken as a leaf side whose
 * spines are all neighbours of a switch left over (that switch would be one more leaf of the
 * group, with links outside it: it is the group's spine, and the class is spines too, e.g.
 * spines without global links, whose neighbours are exactly the leaves). 1 if one was set
 * aside.
 */
static int set_aside(const struct dla_graph *gr, struct reading *rd, const uint32_t *labels,
		     long *steps)
{
	for (uint32_t c = 0; c < rd->ncls; c++) {
		uint32_t h = rd->cl[c].head;

		if (rd->aside[c] != 2)
			continue;
		for (uint32_t v = 0; v < gr->n; v++) {
			*steps += deg(gr, h);
			if (labels[v] == DLA_NO_GROUP && deg(gr, v) > deg(gr, h) &&
			    nb_subset(gr, h, v)) {
				rd->aside[c] = 1;
				return 1;
			}
		}
	}
	return 0;
}

int dla_dfplus_find(const struct dla_graph *gr, uint32_t *labels, long *steps,
		    struct dla_dfplus_why *why)
{
	uint32_t n = gr->n, ncls = 0;
	struct twin *tw = malloc((n + 1) * sizeof(*tw));
	struct reading rd = {.cl = malloc((n + 1) * sizeof(*rd.cl)),
			     .aside = calloc(n + 1, 1),
			     .spine = malloc(n + 1),
			     .cand = malloc(n + 1),
			     .nspines = malloc((n + 1) * sizeof(*rd.nspines))};
	struct dla_dfplus_why first;
	uint8_t *took = calloc(n + 1, 1); /* the classes the first reading took */
	int ret = -ENOMEM;

	*why = (struct dla_dfplus_why){0};
	if (!tw || !took || !rd.cl || !rd.aside || !rd.spine || !rd.cand || !rd.nspines)
		goto out;
	for (uint32_t v = 0; v < n; v++) {
		uint64_t h = 1469598103934665603ULL; /* FNV-1a over the neighbour list */

		for (uint32_t e = gr->off[v]; e < gr->off[v + 1]; e++) {
			h ^= gr->nb[e] + 1;
			h *= 1099511628211ULL;
		}
		tw[v] = (struct twin){.hash = h, .v = v};
	}
	*steps += n;
	qsort(tw, n, sizeof(*tw), cmp_twin);
	/* twin classes: runs of one hash whose neighbour lists equal the run's first */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = tw[i].v;

		if (i && tw[i].hash == tw[i - 1].hash &&
		    same_neighbours(gr, rd.cl[ncls - 1].head, v)) {
			rd.cl[ncls - 1].size++;
		} else {
			rd.cl[ncls++] = (struct cls){.head = v, .size = 1};
		}
		*steps += deg(gr, v);
	}
	qsort(rd.cl, ncls, sizeof(*rd.cl), cmp_cls);
	rd.ncls = ncls;
	ret = read_groups(gr, &rd, labels, steps, why);
	first = *why;
	/*
	 * Leaves and spines can both be twin classes (spines without global links: their
	 * neighbours are exactly the leaves), and the spines' class may come first: read as
	 * leaves, they leave the group's other spines in no group. Such a class is set aside and
	 * the fabric read again, at most once per class; the first complete reading counts
	 * (checked as any), else the first reading's outcome and reason.
	 */
	memcpy(took, rd.aside, ncls);
	for (uint32_t k = 0;
	     !ret && k < ncls && *steps < DFPLUS_BUDGET && set_aside(gr, &rd, labels, steps); k++)
		ret = read_groups(gr, &rd, labels, steps, why);
	/* spines that share their remote neighbours are twins too, with a neighbour set no
	 * left-over switch holds: then each class the first reading took is set aside alone */
	for (uint32_t c = 0; !ret && c < ncls && *steps < DFPLUS_BUDGET; c++) {
		if (took[c] != 2)
			continue;
		memset(rd.aside, 0, ncls);
		rd.aside[c] = 1;
		ret = read_groups(gr, &rd, labels, steps, why);
	}
	if (ret <= 0) {
		*why = first;
		for (uint32_t v = 0; v < n; v++)
			labels[v] = DLA_NO_GROUP;
	}
out:
	free(tw);
	free(took);
	free(rd.cl);
	free(rd.aside);
	free(rd.spine);
	free(rd.cand);
	free(rd.nspines);
	return ret;
}

static int has_global(const struct dla_graph *gr, const struct dla_groups *g, uint32_t v)
{
	for (uint32_t e = gr->off[v]; e < gr->off[v + 1]; e++)
		if (g->group_of[gr->nb[e]] != g->group_of[v])
			return 1;
	return 0;
}

static uint32_t terminals(const struct dla_fabric *f, uint32_t v)
{
	uint32_t n = 0;

	for (unsigned p = 1; p < f->sw[v].num_ports; p++)
		n += f->sw[v].ports[p].peer_kind == DLA_PEER_ENDPORT;
	return n;
}

/*
 * One group: 2-colour its local links component by component. A component's spine side is the
 * colour holding its global links (both colours holding some: no dragonfly+ group); a
 * component without any takes the colour with more hosts as leaves (ties: the colour of its
 * lowest switch). 1 if the group is leaf/spine, with role set; 0 if not (roles untouched).
 */
static int group_roles(const struct dla_fabric *f, const struct dla_graph *gr,
		       const struct dla_groups *g, uint32_t k, uint8_t *colour, uint32_t *queue,
		       uint8_t *role)
{
	const uint32_t *m = g->members + g->first[k];
	uint32_t size = g->first[k + 1] - g->first[k], leaves = 0, spines = 0;

	if (size < 2)
		return 0;
	for (uint32_t i = 0; i < size; i++)
		colour[m[i]] = 2;
	for (uint32_t i = 0; i < size; i++) {
		uint32_t head = 0, tail = 0, glob[2] = {0, 0}, hosts[2] = {0, 0};

		if (colour[m[i]] != 2)
			continue;
		colour[m[i]] = 0;
		queue[tail++] = m[i];
		while (head < tail) {
			uint32_t u = queue[head++];

			glob[colour[u]] += (uint32_t)has_global(gr, g, u);
			hosts[colour[u]] += terminals(f, u);
			for (uint32_t e = gr->off[u]; e < gr->off[u + 1]; e++) {
				uint32_t w = gr->nb[e];

				if (g->group_of[w] != k)
					continue;
				if (colour[w] == colour[u])
					return 0; /* an odd cycle: a clique's triangle */
				if (colour[w] == 2) {
					colour[w] = (uint8_t)!colour[u];
					queue[tail++] = w;
				}
			}
		}
		if (glob[0] && glob[1])
			return 0;
		/* spine colour: the one with global links; else the one with fewer hosts */
		uint8_t spine = glob[0] ? 0 : glob[1] ? 1 : hosts[1] > hosts[0] ? 0 : 1;

		for (uint32_t q = 0; q < tail; q++)
			colour[queue[q]] = colour[queue[q]] == spine ? 4 : 3;
	}
	for (uint32_t i = 0; i < size; i++) {
		leaves += colour[m[i]] == 3;
		spines += colour[m[i]] == 4;
	}
	if (!leaves || !spines)
		return 0;
	for (uint32_t i = 0; i < size; i++)
		role[m[i]] = colour[m[i]] == 4 ? DLA_SW_SPINE : DLA_SW_LEAF;
	return 1;
}

int dla_dfplus_roles(const struct dla_fabric *f, const struct dla_graph *gr,
		     const struct dla_groups *g, uint8_t *role)
{
	uint8_t *colour = malloc(f->nsw + 1);
	uint32_t *queue = malloc((f->nsw + 1) * sizeof(*queue));
	int found = 0;

	if (!colour || !queue) {
		free(colour);
		free(queue);
		return -ENOMEM;
	}
	memset(role, DLA_SW_MEMBER, f->nsw);
	for (uint32_t k = 0; k < g->ngroups; k++)
		found += group_roles(f, gr, g, k, colour, queue, role);
	free(colour);
	free(queue);
	return found;
}

int dla_dfplus_complete(const struct dla_graph *gr, const struct dla_groups *g, const uint8_t *role,
			uint32_t k, uint32_t *u, uint32_t *v)
{
	const uint32_t *m = g->members + g->first[k];
	uint32_t size = g->first[k + 1] - g->first[k];

	for (uint32_t i = 0; i < size; i++) {
		if (role[m[i]] != DLA_SW_LEAF)
			continue;
		for (uint32_t j = 0; j < size; j++)
			if (role[m[j]] == DLA_SW_SPINE && !dla_graph_adjacent(gr, m[i], m[j])) {
				*u = m[i];
				*v = m[j];
				return 0;
			}
	}
	return 1;
}

const char *dla_sw_role_name(enum dla_sw_role role)
{
	static const char *const names[] = {
		[DLA_SW_MEMBER] = "member",
		[DLA_SW_LEAF] = "leaf",
		[DLA_SW_SPINE] = "spine",
	};

	return (unsigned)role < sizeof(names) / sizeof(names[0]) ? names[role] : "member";
}
