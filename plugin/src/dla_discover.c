/*
 * Group discovery. Every group of a fully-connected dragonfly is a clique inside the closed
 * neighbourhood N[v] of each of its switches, so:
 *   1. a = the clique size most switches reach in their closed neighbourhood (the mode of the
 *      per-switch maximum clique size: a missing link lowers it for a few switches only);
 *   2. list, per switch, the cliques of size a in N[v] (nearly always exactly one: its group);
 *   3. choose one of them per switch so that they partition the switches (exact cover,
 *      most-constrained switch first). Global links can close triangles, so with small a a
 *      switch may see a second clique; the cover rejects it because its members are taken.
 * If no partition exists, a diagnostic partition (the union of what each switch saw) is
 * validated instead, so the refusal names the group and the rule that breaks.
 */
#include "dla_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEARCH_BUDGET	4000000L	/* clique search steps for the whole fabric */
#define COVER_BUDGET	200000L		/* exact-cover branches */
#define MAX_CANDIDATES	64		/* a-cliques kept per switch */

struct search {
	const struct dla_graph *g;
	uint32_t maxdeg;
	uint32_t *levels;	/* [(maxdeg + 1) * maxdeg] candidate buffers, one per depth */
	uint32_t *stack;	/* [maxdeg + 1] current clique */
	uint32_t best;
	uint32_t target;	/* enumeration: clique size wanted */
	long budget;
	/* enumeration output: cliques of size target, each target ids */
	uint32_t *found;
	uint32_t nfound, capfound;
	int overflow;
};

static uint32_t *level(struct search *s, uint32_t depth)
{
	return s->levels + (size_t)depth * s->maxdeg;
}

/* Candidates after taking u: the later candidates adjacent to u. */
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
		if (size + (n - i) <= s->best || --s->budget < 0)
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
		if (size + (n - i) < s->target || --s->budget < 0)
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

/* ---- exact cover ------------------------------------------------------------------------ */

struct cover {
	uint32_t n, a;
	const uint32_t *coff;	/* [n + 1] candidate cliques of switch v: cl[coff[v] .. coff[v+1]) */
	const uint32_t *cl;	/* cliques, a switch ids each */
	uint32_t *group_of;	/* UINT32_MAX: unassigned */
	uint32_t ngroups;
	long budget;
};

static int clique_free(const struct cover *c, const uint32_t *q)
{
	for (uint32_t k = 0; k < c->a; k++)
		if (c->group_of[q[k]] != UINT32_MAX)
			return 0;
	return 1;
}

/* 1: covered; 0: no cover below this point; -1: budget exhausted */
static int cover_rec(struct cover *c, uint32_t assigned)
{
	uint32_t pick = UINT32_MAX, pick_n = UINT32_MAX;

	if (assigned == c->n)
		return 1;
	if (--c->budget < 0)
		return -1;
	for (uint32_t v = 0; v < c->n && pick_n > 0; v++) {
		uint32_t avail = 0;

		if (c->group_of[v] != UINT32_MAX)
			continue;
		for (uint32_t q = c->coff[v]; q < c->coff[v + 1]; q++)
			avail += clique_free(c, c->cl + (size_t)q * c->a);
		if (avail < pick_n) {
			pick_n = avail;
			pick = v;
		}
	}
	if (pick_n == 0)
		return 0;
	for (uint32_t q = c->coff[pick]; q < c->coff[pick + 1]; q++) {
		const uint32_t *m = c->cl + (size_t)q * c->a;
		int r;

		if (!clique_free(c, m))
			continue;
		for (uint32_t k = 0; k < c->a; k++)
			c->group_of[m[k]] = c->ngroups;
		c->ngroups++;
		r = cover_rec(c, assigned + c->a);
		if (r)
			return r;
		c->ngroups--;
		for (uint32_t k = 0; k < c->a; k++)
			c->group_of[m[k]] = UINT32_MAX;
	}
	return 0;
}

/* ---- diagnostic partition --------------------------------------------------------------- */

/*
 * No exact cover: take the cliques that fit greedily (most constrained switch first, no
 * backtracking), then group the switches left over by connectivity. The broken group is what
 * is left, so validating this partition names it and the rule it breaks.
 */
static void partial_cover(struct cover *c)
{
	for (;;) {
		uint32_t pick = UINT32_MAX, pick_n = UINT32_MAX;

		for (uint32_t v = 0; v < c->n; v++) {
			uint32_t avail = 0;

			if (c->group_of[v] != UINT32_MAX)
				continue;
			for (uint32_t q = c->coff[v]; q < c->coff[v + 1]; q++)
				avail += clique_free(c, c->cl + (size_t)q * c->a);
			if (avail && avail < pick_n) {
				pick_n = avail;
				pick = v;
			}
		}
		if (pick == UINT32_MAX)
			return;
		for (uint32_t q = c->coff[pick]; q < c->coff[pick + 1]; q++) {
			const uint32_t *m = c->cl + (size_t)q * c->a;

			if (!clique_free(c, m))
				continue;
			for (uint32_t k = 0; k < c->a; k++)
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

		if (c->group_of[v] != UINT32_MAX)
			continue;
		c->group_of[v] = c->ngroups;
		queue[tail++] = v;
		while (head < tail) {
			uint32_t u = queue[head++];

			for (uint32_t e = g->off[u]; e < g->off[u + 1]; e++)
				if (c->group_of[g->nb[e]] == UINT32_MAX) {
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

static int relabel(struct dla_groups *out, const uint32_t *raw, uint32_t n)
{
	/* groups numbered in order of their lowest switch index: deterministic across sweeps */
	uint32_t *map = malloc((n ? n : 1) * sizeof(*map));

	if (!map)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		map[i] = UINT32_MAX;
	out->ngroups = 0;
	for (uint32_t v = 0; v < n; v++) {
		if (map[raw[v]] == UINT32_MAX)
			map[raw[v]] = out->ngroups++;
		out->group_of[v] = map[raw[v]];
	}
	free(map);
	return dla_groups_index(out, n);
}

int dla_groups_discover(const struct dla_fabric *f, struct dla_groups *out, char *err, size_t len)
{
	struct dla_graph g;
	struct search s;
	struct cover c;
	uint32_t n = f->nsw, a = 0, *omega = NULL, *hist = NULL, *coff = NULL, *cl = NULL;
	uint32_t *raw = NULL;
	size_t ncl = 0, capcl = 0;
	int ret, r;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if (n == 0) {
		snprintf(err, len, "no switches [rule: a dragonfly has at least one group]");
		return -EINVAL;
	}
	ret = dla_graph_build(f, &g);
	if (ret)
		return ret;
	ret = -ENOMEM;
	for (uint32_t v = 0; v < n; v++)
		if (g.off[v + 1] - g.off[v] > s.maxdeg)
			s.maxdeg = g.off[v + 1] - g.off[v];
	s.g = &g;
	s.budget = SEARCH_BUDGET;
	s.levels = malloc(((size_t)s.maxdeg + 2) * (s.maxdeg + 1) * sizeof(*s.levels));
	s.stack = malloc((s.maxdeg + 2) * sizeof(*s.stack));
	omega = calloc(n, sizeof(*omega));
	hist = calloc(s.maxdeg + 2, sizeof(*hist));
	coff = calloc(n + 1, sizeof(*coff));
	out->group_of = malloc(n * sizeof(*out->group_of));
	raw = malloc(n * sizeof(*raw));
	if (!s.levels || !s.stack || !omega || !hist || !coff || !out->group_of || !raw)
		goto fail;

	/* 1. maximum clique size in each closed neighbourhood */
	for (uint32_t v = 0; v < n; v++) {
		s.best = 0;
		max_clique(&s, 1, g.nb + g.off[v], g.off[v + 1] - g.off[v]);
		omega[v] = s.best;
		hist[s.best]++;
	}
	if (s.budget < 0) {
		snprintf(err, len, "switch neighbourhoods too dense to search for groups "
			 "[rule: groups are cliques of a fully-connected dragonfly]");
		ret = -EINVAL;
		goto fail;
	}
	for (uint32_t k = 1; k <= s.maxdeg + 1; k++)
		if (hist[k] >= hist[a])
			a = k;

	/* 2. the cliques of size a around each switch */
	s.target = a;
	s.capfound = MAX_CANDIDATES;
	s.found = malloc((size_t)MAX_CANDIDATES * a * sizeof(*s.found));
	if (!s.found)
		goto fail;
	for (uint32_t v = 0; v < n; v++) {
		s.nfound = 0;
		s.overflow = 0;
		s.stack[0] = v;
		coff[v] = (uint32_t)ncl;
		if (omega[v] >= a)
			enum_cliques(&s, 1, g.nb + g.off[v], g.off[v + 1] - g.off[v]);
		if (ncl + s.nfound > capcl) {
			size_t cap = capcl ? capcl * 2 : n + MAX_CANDIDATES;
			uint32_t *p;

			while (cap < ncl + s.nfound)
				cap *= 2;
			p = realloc(cl, cap * a * sizeof(*cl));
			if (!p)
				goto fail;
			cl = p;
			capcl = cap;
		}
		for (uint32_t q = 0; q < s.nfound; q++) {
			uint32_t *dst = cl + (ncl + q) * a;

			memcpy(dst, s.found + (size_t)q * a, a * sizeof(*dst));
			qsort(dst, a, sizeof(*dst), cmp_u32);
		}
		ncl += s.nfound;
	}
	coff[n] = (uint32_t)ncl;

	/* 3. exact cover */
	for (uint32_t v = 0; v < n; v++)
		raw[v] = UINT32_MAX;
	c = (struct cover){ .n = n, .a = a, .coff = coff, .cl = cl, .group_of = raw,
			    .budget = COVER_BUDGET };
	r = (s.budget >= 0) ? cover_rec(&c, 0) : -1;
	if (r == 1) {
		ret = relabel(out, raw, n);
		if (ret)
			goto fail;
		ret = dla_groups_validate(f, &g, out, err, len);
		if (ret)
			goto fail;
		goto done;
	}

	/* 4. no partition: diagnose on a greedy partial cover plus the leftovers */
	for (uint32_t v = 0; v < n; v++)
		raw[v] = UINT32_MAX;
	c.ngroups = 0;
	partial_cover(&c);
	ret = group_leftovers(&g, &c);
	if (ret)
		goto fail;
	ret = relabel(out, raw, n);
	if (ret)
		goto fail;
	{
		char why[768];
		int bad = dla_groups_validate(f, &g, out, why, sizeof(why));

		if (bad == -ENOMEM) {
			ret = bad;
			goto fail;
		}
		if (bad)
			snprintf(err, len, "the %u switches do not split into groups that are "
				 "cliques of %u: %s", n, a, why);
		else
			snprintf(err, len, "%s partition of the %u switches into cliques of %u "
				 "[rule: groups of a fully-connected dragonfly partition the "
				 "switches]", r < 0 ? "gave up searching for a" : "no", n, a);
	}
	ret = -EINVAL;
fail:
	dla_groups_free(out);
done:
	dla_graph_free(&g);
	free(s.levels);
	free(s.stack);
	free(s.found);
	free(omega);
	free(hist);
	free(coff);
	free(cl);
	free(raw);
	return ret;
}
