/*
 * Fresh group discovery. Every group of a fully-connected dragonfly is a clique inside the
 * closed neighbourhood N[v] of each of its switches, so for a group size a:
 *   1. list, per switch, the cliques of size a in N[v];
 *   2. choose one per switch so that they partition the switches (exact cover, most
 *      constrained switch first) and the groups they make are all pairwise linked.
 * Global links can close cliques too (triangles with a = 3, edges with a = 2, larger ones
 * with several links per group pair), so a cover whose quotient is not complete is rejected
 * and the search backtracks; every a that divides the switch count is tried, largest first.
 *
 * On a degraded fabric no exact cover exists. A dead switch leaves a group of a-1; a dead
 * global link leaves a group pair unlinked. The degraded search therefore also takes maximal
 * cliques of a-1 switches, as few as the switch count allows, and accepts a quotient in which
 * every group pair is at most one intermediate group apart. Before that, a rack only partly
 * populated (n % a switches left over, a maximal clique) is read as a group when everything
 * else is exact. A fabric that gives none of these is refused with the rule the closest
 * partition breaks.
 */
#include "dla_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Step budgets, never the wall clock: the partition is a function of the fabric alone, however
 * loaded the SM host is (docs/groups.md, "Budgets"). A step is a unit of work: one candidate
 * looked at by a clique-search branch; one switch or candidate looked at by an exact-cover
 * branch, one switch per quotient check. Measured (plugin/tests/unit/test_group_vectors.c
 * prints them): at most 2,052 steps on the golden fabrics, 143,735 on the 2550-CA dragonfly,
 * 307,459 on it with a dead switch; the unit tests' 1,003 discoveries stay below 143,735.
 * DISCOVERY_BUDGET is 30 times the largest: a search that fails on a fabric that is no
 * dragonfly (fat trees, random graphs, a=40 with a dead switch) ends within it in 0.35 s here.
 */
#define SEARCH_BUDGET 4000000L	   /* clique search steps per pass over the fabric */
#define COVER_BUDGET 20000L	   /* exact-cover branches per group size tried */
#define DISCOVERY_BUDGET 10000000L /* all steps of one discovery */
#define MAX_CANDIDATES 64	   /* cliques kept per switch and size */

struct search {
	const struct dla_graph *g;
	uint32_t maxdeg;
	uint32_t *levels; /* [(maxdeg + 2) * (maxdeg + 1)] candidate buffers, one per depth */
	uint32_t *stack;  /* [maxdeg + 2] current clique */
	uint32_t best;
	uint32_t target; /* enumeration: clique size wanted */
	long budget;
	uint32_t *found; /* enumeration output: nfound cliques of target ids each */
	uint32_t nfound, capfound;
	int overflow;
};

static uint32_t *level(struct search *s, uint32_t depth)
{
	return s->levels + (size_t)depth * (s->maxdeg + 1);
}

/* Candidates after taking cand[i]: the later candidates adjacent to it. */
static uint32_t narrow(struct search *s, const uint32_t *cand, uint32_t n, uint32_t i,
		       uint32_t *out)
{
	uint32_t m = 0;

	for (uint32_t j = i + 1; j < n; j++)
		if (dla_graph_adjacent(s->g, cand[i], cand[j]))
			out[m++] = cand[j];
	return m;
}

static void max_clique(struct search *s, uint32_t size, const uint32_t *cand, uint32_t n)
{
	if (size > s->best)
		s->best = size;
	for (uint32_t i = 0; i < n; i++) {
		if (size + (n - i) <= s->best || (s->budget -= n - i) < 0)
			return;
		uint32_t *next = level(s, size);
		uint32_t m = narrow(s, cand, n, i, next);
		max_clique(s, size + 1, next, m);
	}
}

static void enum_cliques(struct search *s, uint32_t size, const uint32_t *cand, uint32_t n)
{
	if (size == s->target) {
		if (s->nfound == s->capfound) {
			s->overflow = 1;
			return;
		}
		memcpy(s->found + (size_t)s->nfound * s->target, s->stack,
		       s->target * sizeof(*s->stack));
		s->nfound++;
		return;
	}
	for (uint32_t i = 0; i < n && !s->overflow; i++) {
		if (size + (n - i) < s->target || (s->budget -= n - i) < 0)
			return;
		uint32_t *next = level(s, size);
		uint32_t m = narrow(s, cand, n, i, next);
		s->stack[size] = cand[i];
		enum_cliques(s, size + 1, next, m);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* ---- candidate cliques ------------------------------------------------------------------ */

/* A growing list of switch sets of up to a ids each: sorted, padded with DLA_NO_GROUP. The
 * list is refilled for every group size tried, so its capacity counts ids, not sets: a larger
 * a after a smaller one must not write past what the smaller one allocated. */
struct sets {
	uint32_t *ids;
	size_t n, cap; /* n sets; cap ids */
};

static int sets_push(struct sets *l, uint32_t a, const uint32_t *ids, uint32_t size)
{
	uint32_t *dst;

	if ((l->n + 1) * a > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256 * (size_t)a;
		uint32_t *p;

		if (cap < (l->n + 1) * a)
			cap = (l->n + 1) * a * 2;
		p = realloc(l->ids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->ids = p;
		l->cap = cap;
	}
	dst = l->ids + l->n * a;
	memcpy(dst, ids, size * sizeof(*dst));
	qsort(dst, size, sizeof(*dst), cmp_u32);
	for (uint32_t k = size; k < a; k++)
		dst[k] = DLA_NO_GROUP;
	l->n++;
	return 0;
}

/* Candidates of switch v: cl.ids[coff[v] .. coff[v+1]) sets of a ids (the smaller ones
 * padded), large ones first; near: the near-cliques of the whole fabric. */
struct cands {
	uint32_t a;
	uint32_t *coff; /* [n + 1] */
	struct sets cl;
	struct sets near; /* near-cliques of a (one link missing) */
};

/* No switch outside q is adjacent to all of q (q has size members). */
static int clique_maximal(const struct dla_graph *g, const uint32_t *q, uint32_t size)
{
	for (uint32_t e = g->off[q[0]]; e < g->off[q[0] + 1]; e++) {
		uint32_t w = g->nb[e], k;

		for (k = 1; k < size; k++)
			if (w == q[k] || !dla_graph_adjacent(g, w, q[k]))
				break;
		if (k == size)
			return 0;
	}
	return 1;
}

#define MAX_NEAR 8192 /* near-cliques kept for the whole fabric */

/*
 * Groups that lost one local link: a switches all linked but for one pair u, v. For every
 * unlinked pair, the cliques of a-2 among their common neighbours complete one.
 */
static int build_near(struct search *s, const struct dla_graph *g, uint32_t a, struct cands *c,
		      uint32_t *common, uint32_t *seen)
{
	uint32_t n = g->n;

	c->near.n = 0;
	for (uint32_t u = 0; u < n; u++)
		for (uint32_t e = g->off[u]; e < g->off[u + 1]; e++) {
			uint32_t w = g->nb[e];

			for (uint32_t k = g->off[w]; k < g->off[w + 1]; k++) {
				uint32_t v = g->nb[k], nc = 0, i = g->off[u], j = g->off[v];

				if (v <= u || seen[v] == u + 1 || dla_graph_adjacent(g, u, v))
					continue;
				seen[v] = u + 1;
				while (i < g->off[u + 1] && j < g->off[v + 1]) {
					if (g->nb[i] == g->nb[j])
						common[nc++] = g->nb[i++], j++;
					else if (g->nb[i] < g->nb[j])
						i++;
					else
						j++;
				}
				if (nc + 2 < a)
					continue;
				s->target = a - 1;
				s->nfound = 0;
				s->overflow = 0;
				s->stack[0] = u;
				enum_cliques(s, 1, common, nc);
				for (uint32_t q = 0; q < s->nfound; q++) {
					/* the stack is free once the enumeration is done */
					uint32_t *ids = s->stack;

					if (c->near.n == MAX_NEAR)
						return 0;
					memcpy(ids, s->found + (size_t)q * (a - 1),
					       (a - 1) * sizeof(*ids));
					ids[a - 1] = v;
					if (sets_push(&c->near, a, ids, a))
						return -ENOMEM;
				}
			}
		}
	return 0;
}

static int near_has(const uint32_t *q, uint32_t a, uint32_t v)
{
	return bsearch(&v, q, a, sizeof(v), cmp_u32) != NULL;
}

/* Per switch: the cliques of size a around it; with near, then the near-cliques it is in;
 * with small (a size below a, 0 for none), then the maximal cliques of that size around it. */
static int build_cands(struct search *s, const struct dla_graph *g, const uint32_t *omega,
		       uint32_t a, uint32_t small, int near, struct cands *c)
{
	uint32_t n = g->n;
	uint32_t smallest = small && small < a ? small : a;

	c->a = a;
	c->cl.n = 0;
	for (uint32_t v = 0; v < n; v++) {
		c->coff[v] = (uint32_t)c->cl.n;
		for (uint32_t i = 0, size = a; i < 2 && size >= smallest; i++, size = smallest) {
			if (i == 1 && smallest == a)
				break;
			if (omega[v] >= size) {
				s->target = size;
				s->nfound = 0;
				s->overflow = 0;
				s->stack[0] = v;
				if (size == 1)
					s->nfound = 1, s->found[0] = v;
				else
					enum_cliques(s, 1, g->nb + g->off[v],
						     g->off[v + 1] - g->off[v]);
				for (uint32_t q = 0; q < s->nfound; q++) {
					const uint32_t *ids = s->found + (size_t)q * size;

					if (size < a && !clique_maximal(g, ids, size))
						continue;
					if (sets_push(&c->cl, a, ids, size))
						return -ENOMEM;
				}
			}
			for (size_t q = 0; near && size == a && q < c->near.n; q++)
				if (near_has(c->near.ids + q * a, a, v) &&
				    sets_push(&c->cl, a, c->near.ids + q * a, a))
					return -ENOMEM;
		}
	}
	c->coff[n] = (uint32_t)c->cl.n;
	return 0;
}

/* ---- exact cover ------------------------------------------------------------------------ */

struct cover {
	const struct dla_graph *g;
	const struct cands *c;
	uint32_t n, a;
	uint32_t small_left; /* groups smaller than a still allowed (degraded search) */
	int diameter2;	/* 0: complete quotient; 1: diameter 2 accepted; 2: diameter exactly 2 */
	unsigned *skip; /* valid covers still to pass over (alternatives) */
	uint32_t *group_of; /* DLA_NO_GROUP: unassigned */
	uint32_t ngroups;
	long budget;
	long *left; /* steps left for the whole discovery */
	int nomem;
};

static uint32_t cand_size(const struct cover *c, const uint32_t *q)
{
	uint32_t size = c->a;

	while (size > 0 && q[size - 1] == DLA_NO_GROUP)
		size--; /* smaller sets are padded at the end */
	return size;
}

static int cand_free(const struct cover *c, const uint32_t *q)
{
	uint32_t size = cand_size(c, q);

	if (size < c->a && !c->small_left)
		return 0;
	for (uint32_t k = 0; k < size; k++)
		if (c->group_of[q[k]] != DLA_NO_GROUP)
			return 0;
	return 1;
}

static int quotient_of(struct cover *c)
{
	struct dla_groups g = {0};
	int ok;

	if (dla_groups_from_labels(&g, c->group_of, c->n)) {
		c->nomem = 1;
		return 0;
	}
	ok = dla_groups_quotient_ok(c->g, &g, c->diameter2 > 0);
	if (ok == 1 && c->diameter2 == 2)
		ok = dla_groups_quotient_ok(c->g, &g, 0) == 1 ? 0 : 1; /* tried before */
	if (ok < 0)
		c->nomem = 1;
	dla_groups_free(&g);
	return ok == 1;
}

/* 1: covered; 0: no cover below this point; -1: budget exhausted or out of memory */
static int cover_rec(struct cover *c, uint32_t assigned)
{
	uint32_t pick = DLA_NO_GROUP, pick_n = UINT32_MAX;
	const struct cands *cd = c->c;
	long work = 0;

	if (assigned == c->n) {
		*c->left -= c->n; /* the quotient check, one unit per switch */
		if (!quotient_of(c))
			return c->nomem ? -1 : 0;
		if (c->skip && *c->skip) {
			--*c->skip;
			return 0;
		}
		return 1;
	}
	if (--c->budget < 0 || *c->left < 0)
		return -1;
	for (uint32_t v = 0; v < c->n && pick_n > 0; v++) {
		uint32_t avail = 0;

		work++; /* a switch looked at, then each of its candidates */
		if (c->group_of[v] != DLA_NO_GROUP)
			continue;
		work += cd->coff[v + 1] - cd->coff[v];
		for (uint32_t q = cd->coff[v]; q < cd->coff[v + 1]; q++)
			avail += cand_free(c, cd->cl.ids + (size_t)q * c->a);
		if (avail < pick_n) {
			pick_n = avail;
			pick = v;
		}
	}
	*c->left -= work;
	if (pick_n == 0)
		return 0;
	for (uint32_t q = cd->coff[pick]; q < cd->coff[pick + 1]; q++) {
		const uint32_t *m = cd->cl.ids + (size_t)q * c->a;
		uint32_t size = cand_size(c, m);
		int r;

		if (!cand_free(c, m))
			continue;
		for (uint32_t k = 0; k < size; k++)
			c->group_of[m[k]] = c->ngroups;
		c->ngroups++;
		c->small_left -= size < c->a;
		r = cover_rec(c, assigned + size);
		if (r)
			return r;
		c->small_left += size < c->a;
		c->ngroups--;
		for (uint32_t k = 0; k < size; k++)
			c->group_of[m[k]] = DLA_NO_GROUP;
	}
	return 0;
}

/* ---- diagnostic partition --------------------------------------------------------------- */

/*
 * No cover: take the cliques that fit greedily (most constrained switch first, no
 * backtracking), then group the switches left over by connectivity. The broken group is what
 * is left, so validating this partition names it and the rule it breaks.
 */
static void partial_cover(struct cover *c)
{
	const struct cands *cd = c->c;

	for (;;) {
		uint32_t pick = DLA_NO_GROUP, pick_n = UINT32_MAX;

		for (uint32_t v = 0; v < c->n; v++) {
			uint32_t avail = 0;

			if (c->group_of[v] != DLA_NO_GROUP)
				continue;
			for (uint32_t q = cd->coff[v]; q < cd->coff[v + 1]; q++)
				avail += cand_free(c, cd->cl.ids + (size_t)q * c->a);
			if (avail && avail < pick_n) {
				pick_n = avail;
				pick = v;
			}
		}
		if (pick == DLA_NO_GROUP)
			return;
		for (uint32_t q = cd->coff[pick]; q < cd->coff[pick + 1]; q++) {
			const uint32_t *m = cd->cl.ids + (size_t)q * c->a;

			if (!cand_free(c, m))
				continue;
			for (uint32_t k = 0; k < cand_size(c, m); k++)
				c->group_of[m[k]] = c->ngroups;
			c->ngroups++;
			break;
		}
	}
}

/* Leftover switches: one group per connected component among themselves. */
static int group_leftovers(const struct dla_graph *g, struct cover *c)
{
	uint32_t *queue = malloc((c->n ? c->n : 1) * sizeof(*queue));

	if (!queue)
		return -ENOMEM;
	for (uint32_t v = 0; v < c->n; v++) {
		uint32_t head = 0, tail = 0;

		if (c->group_of[v] != DLA_NO_GROUP)
			continue;
		c->group_of[v] = c->ngroups;
		queue[tail++] = v;
		while (head < tail) {
			uint32_t u = queue[head++];

			for (uint32_t e = g->off[u]; e < g->off[u + 1]; e++)
				if (c->group_of[g->nb[e]] == DLA_NO_GROUP) {
					c->group_of[g->nb[e]] = c->ngroups;
					queue[tail++] = g->nb[e];
				}
		}
		c->ngroups++;
	}
	free(queue);
	return 0;
}

/* ---- driver ----------------------------------------------------------------------------- */

struct discovery {
	const struct dla_fabric *f;
	struct dla_graph g;
	struct search s;
	struct cands c;
	uint32_t *omega; /* [n] largest clique in each closed neighbourhood */
	uint32_t maxomega, mode;
	uint32_t *raw;		 /* [n] labels of the cover being built */
	uint32_t *common, *seen; /* [n] scratch for near-cliques */
	long left;		 /* steps left of DISCOVERY_BUDGET */
	long granted;		 /* clique steps handed to the pass under way */
};

/* A clique-search pass gets SEARCH_BUDGET steps, or what the discovery has left. */
static void clique_pass(struct discovery *d)
{
	d->granted = d->left < SEARCH_BUDGET ? (d->left > 0 ? d->left : 0) : SEARCH_BUDGET;
	d->s.budget = d->granted;
}

static void clique_pass_done(struct discovery *d)
{
	d->left -= d->granted - (d->s.budget > 0 ? d->s.budget : 0);
}

static void discovery_free(struct discovery *d)
{
	dla_graph_free(&d->g);
	free(d->s.levels);
	free(d->s.stack);
	free(d->s.found);
	free(d->c.coff);
	free(d->c.cl.ids);
	free(d->c.near.ids);
	free(d->omega);
	free(d->raw);
	free(d->common);
	free(d->seen);
}

static int discovery_init(struct discovery *d, const struct dla_fabric *f)
{
	uint32_t n = f->nsw, *hist;
	int ret;

	memset(d, 0, sizeof(*d));
	d->f = f;
	d->left = DISCOVERY_BUDGET;
	ret = dla_graph_build(f, &d->g);
	if (ret)
		return ret;
	for (uint32_t v = 0; v < n; v++)
		if (d->g.off[v + 1] - d->g.off[v] > d->s.maxdeg)
			d->s.maxdeg = d->g.off[v + 1] - d->g.off[v];
	d->s.g = &d->g;
	clique_pass(d);
	d->s.levels = malloc(((size_t)d->s.maxdeg + 2) * (d->s.maxdeg + 1) * sizeof(uint32_t));
	d->s.stack = malloc((d->s.maxdeg + 2) * sizeof(uint32_t));
	d->s.found = malloc((size_t)MAX_CANDIDATES * (d->s.maxdeg + 2) * sizeof(uint32_t));
	d->s.capfound = MAX_CANDIDATES;
	d->c.coff = calloc(n + 1, sizeof(uint32_t));
	d->omega = calloc(n, sizeof(uint32_t));
	d->raw = malloc(n * sizeof(uint32_t));
	d->common = malloc((n + 1) * sizeof(uint32_t));
	d->seen = calloc(n + 1, sizeof(uint32_t));
	hist = calloc(d->s.maxdeg + 2, sizeof(*hist));
	if (!d->s.levels || !d->s.stack || !d->s.found || !d->c.coff || !d->omega || !d->raw ||
	    !d->common || !d->seen || !hist) {
		free(hist);
		return -ENOMEM;
	}
	for (uint32_t v = 0; v < n; v++) {
		d->s.best = 0;
		max_clique(&d->s, 1, d->g.nb + d->g.off[v], d->g.off[v + 1] - d->g.off[v]);
		d->omega[v] = d->s.best;
		hist[d->s.best]++;
		if (d->s.best > d->maxomega)
			d->maxomega = d->s.best;
	}
	for (uint32_t k = 1; k <= d->s.maxdeg + 1; k++)
		if (hist[k] >= hist[d->mode])
			d->mode = k;
	free(hist);
	clique_pass_done(d);
	return d->s.budget < 0 ? -EINVAL : 0;
}

/*
 * Can groups of a (near-cliques allowed: a-1 missing links at most... counted as cliques)
 * cover the switches with every group pair linked (diameter2: within two)? The links left
 * between groups must at least reach every pair directly, or, for diameter 2, connect the
 * groups at all: a cheap bound that rules out most wrong sizes before any search.
 */
static int enough_links(const struct discovery *d, uint32_t a, uint32_t small, uint32_t small_size,
			int diameter2)
{
	uint64_t n = d->f->nsw, edges = d->g.off[n] / 2,
		 full = (n - (uint64_t)small * small_size) / a;
	uint64_t groups = full + small;
	uint64_t inside =
		full * a * (a - 1) / 2 + (uint64_t)small * small_size * (small_size - 1) / 2;
	uint64_t between = edges > inside ? edges - inside : 0;

	return diameter2 ? between + 1 >= groups : between >= groups * (groups - 1) / 2;
}

/* 1: d->raw holds a cover with groups of a (and `small` groups of small_size < a, and
 * near-cliques); 0: none; <0 error. */
static int try_cover(struct discovery *d, uint32_t a, uint32_t small, uint32_t small_size, int near,
		     int diameter2, unsigned *skip)
{
	uint32_t n = d->f->nsw;
	struct cover c;
	int ret, r;

	if (!enough_links(d, a, small, small_size, diameter2) || d->left <= 0)
		return 0;
	d->c.a = a;
	d->c.near.n = 0;
	if (near) {
		memset(d->seen, 0, (n + 1) * sizeof(*d->seen));
		clique_pass(d);
		ret = build_near(&d->s, &d->g, a, &d->c, d->common, d->seen);
		clique_pass_done(d);
		if (ret)
			return ret;
	}
	clique_pass(d);
	ret = build_cands(&d->s, &d->g, d->omega, a, small ? small_size : 0, near, &d->c);
	clique_pass_done(d);
	if (ret)
		return ret;
	for (uint32_t v = 0; v < n; v++)
		d->raw[v] = DLA_NO_GROUP;
	c = (struct cover){.g = &d->g,
			   .c = &d->c,
			   .n = n,
			   .a = a,
			   .small_left = small,
			   .diameter2 = diameter2,
			   .skip = skip,
			   .group_of = d->raw,
			   .budget = COVER_BUDGET,
			   .left = &d->left};
	r = cover_rec(&c, 0);
	if (c.nomem)
		return -ENOMEM;
	return r == 1;
}

/* Groups of a and one group of the n % a switches left (2 .. a-2 of them: a-1 is the
 * degraded search's), for every a from the largest clique down to 4. */
static int try_partial_rack(struct discovery *d, int diameter, unsigned *skip)
{
	uint32_t n = d->f->nsw;

	for (uint32_t a = d->maxomega; a >= 4; a--) {
		uint32_t rest = n % a;
		int r;

		if (rest < 2 || rest > a - 2)
			continue;
		r = try_cover(d, a, 1, rest, 0, diameter, skip);
		if (r)
			return r;
	}
	return 0;
}

static int accept(struct discovery *d, struct dla_groups *out)
{
	return dla_groups_from_labels(out, d->raw, d->f->nsw);
}

/* Why no partition was found, named on the closest one (greedy cover of the most common
 * group size plus the leftovers). */
static int diagnose(struct discovery *d, char *err, size_t len)
{
	uint32_t n = d->f->nsw, a = d->mode;
	struct dla_groups g = {0};
	struct cover c;
	char why[768];
	int ret, bad;

	d->s.budget = SEARCH_BUDGET; /* for the message only, past the discovery's budget */
	ret = build_cands(&d->s, &d->g, d->omega, a, 0, 0, &d->c);
	if (ret)
		return ret;
	for (uint32_t v = 0; v < n; v++)
		d->raw[v] = DLA_NO_GROUP;
	c = (struct cover){.g = &d->g, .c = &d->c, .n = n, .a = a, .group_of = d->raw};
	partial_cover(&c);
	ret = group_leftovers(&d->g, &c);
	if (!ret)
		ret = dla_groups_from_labels(&g, d->raw, n);
	if (ret)
		return ret;
	bad = dla_groups_usable(d->f, &d->g, &g, why, sizeof(why));
	if (!bad)
		bad = dla_groups_validate(d->f, &d->g, &g, why, sizeof(why));
	dla_groups_free(&g);
	if (bad == -ENOMEM)
		return bad;
	if (bad)
		snprintf(err, len,
			 "the %u switches do not split into groups that are cliques of "
			 "%u: %s",
			 n, a, why);
	else
		snprintf(err, len,
			 "no partition of the %u switches into cliques of %u found "
			 "within the search budget [rule: groups of a dragonfly partition the "
			 "switches]",
			 n, a);
	return -EINVAL;
}

/*
 * The dragonfly+ reading: 1 with out set (*exact when every group is complete and every group
 * pair linked; degraded when linked through one group or a leaf lost spines), 0 when there is
 * none (*why may name the reason), <0 on error. A reading whose groups are not usable (two
 * near-twins sharing no spine) is none.
 */
static int dfplus(struct discovery *d, struct dla_groups *out, int *exact,
		  struct dla_dfplus_why *why)
{
	long steps = 0;
	char no[8];
	int r = dla_dfplus_find(&d->g, d->raw, &steps, why), q;

	d->left -= steps;
	if (r <= 0)
		return r;
	q = accept(d, out);
	if (q)
		return q;
	q = dla_groups_quotient_ok(&d->g, out, 0);
	if (q == 1 && r == 1)
		*exact = 1;
	if (q == 0)
		q = dla_groups_quotient_ok(&d->g, out, 1);
	if (q == 1 && r == 2) {
		int u = dla_groups_usable(d->f, &d->g, out, no, sizeof(no));

		q = u == -ENOMEM ? u : !u;
	}
	if (q == 1)
		return 1;
	*exact = 0;
	dla_groups_free(out);
	return q < 0 ? q : 0;
}

static void dfplus_why(const struct dla_fabric *f, const struct dla_dfplus_why *why, char *err,
		       size_t len)
{
	static const char *const fmt[] = {
		[1] = "switch %s is linked only to spines, of two groups (spines %s and %s) [rule: "
		      "a "
		      "leaf left over joins the one group whose spines hold all its neighbours]",
		[2] = "the dragonfly+ reading is ambiguous: switches %s and %s each read as the "
		      "one "
		      "leaf of a group, and both groups hold switch %s [rule: groups of one leaf "
		      "do "
		      "not overlap]",
	};
	char a[160], b[160], c[160];

	dla_switch_label(f, why->u, a, sizeof(a));
	dla_switch_label(f, why->v, b, sizeof(b));
	dla_switch_label(f, why->w, c, sizeof(c));
	snprintf(err, len, fmt[why->kind == 1 ? 1 : 2], a, b, c);
}

int dla_groups_discover(const struct dla_fabric *f, unsigned alternative, struct dla_groups *out,
			int *exact, char *err, size_t len)
{
	long steps;

	return dla_groups_discover_steps(f, alternative, out, exact, &steps, err, len);
}

int dla_groups_discover_steps(const struct dla_fabric *f, unsigned alternative,
			      struct dla_groups *out, int *exact, long *steps, char *err,
			      size_t len)
{
	struct discovery d;
	struct dla_dfplus_why why = {0};
	uint32_t n = f->nsw;
	int ret, r;

	memset(out, 0, sizeof(*out));
	*exact = 0;
	*steps = 0;
	if (n == 0) {
		snprintf(err, len, "no switches [rule: a dragonfly has at least one group]");
		return -EINVAL;
	}
	ret = discovery_init(&d, f);
	if (ret == -EINVAL)
		snprintf(err, len,
			 "switch neighbourhoods too dense to search for groups "
			 "[rule: groups are cliques of a fully-connected dragonfly]");
	if (ret)
		goto out;

	/* dragonfly+ (dla_dfplus.c): leaf twin classes and their spines, groups of one leaf,
	 * leaves that lost spines; a clique-free reading, so it goes first (cliques of 2 would
	 * match its links) */
	r = dfplus(&d, out, exact, &why);
	if (r)
		goto out_ret;
	/* exact: every size that divides the switch count, largest first */
	for (uint32_t a = d.maxomega; a >= 1; a--) {
		if (n % a)
			continue;
		r = try_cover(&d, a, 0, 0, 0, 0, NULL);
		if (r < 0) {
			ret = r;
			goto out;
		}
		if (r) {
			*exact = 1;
			ret = accept(&d, out);
			goto out;
		}
	}
	/*
	 * a rack only partly populated (switches never installed): groups of a and one smaller
	 * group of what is left, a maximal clique of 2 .. a-2 switches, every group pair linked.
	 * So strict a reading (all other groups exact) that it goes before the degraded one,
	 * whose small groups would otherwise find a wrong partition first.
	 */
	r = try_partial_rack(&d, 0, &alternative);
	if (r > 0)
		*exact = 1; /* as good as exact: stored, and kept through faults */
	if (r)
		goto found;
	/*
	 * degraded: groups of a (cliques, or for a >= 4 cliques that lost one link; smaller
	 * groups have too many such sets to tell them apart) and as few of a-1 as the count
	 * allows, quotient diameter 2; the alternative-th such partition in search order
	 */
	for (uint32_t a = d.maxomega + 1; a >= 2; a--) {
		uint32_t groups = (n + a - 1) / a, small = groups * a - n;

		if (2 * small > groups)
			continue; /* mostly small groups: that is size a-1 */
		if (a > d.maxomega && a < 4)
			continue; /* a group of a needs near-cliques to exist */
		r = try_cover(&d, a, small, a - 1, a >= 4, 1, &alternative);
		if (r)
			goto found;
	}
	/* the partly populated rack on a degraded fabric (readings not tried above) */
	r = try_partial_rack(&d, 2, &alternative);
	if (r)
		goto found;
	ret = diagnose(&d, err, len);
	if (why.kind)
		dfplus_why(f, &why, err, len);
	goto out;
found:
	ret = r < 0 ? r : accept(&d, out);
	goto out;
out_ret:
	ret = r < 0 ? r : 0;
out:
	if (ret)
		dla_groups_free(out);
	*steps = DISCOVERY_BUDGET - d.left;
	discovery_free(&d);
	return ret;
}
