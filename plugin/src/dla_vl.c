#include "dla_vl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PASSES 8 /* levels only grow and are capped, so the fixpoint comes fast */

void dla_vl_free(struct dla_vl *v)
{
	free(v->turn_off);
	free(v->nports);
	free(v->level);
	free(v->port_levels);
	memset(v, 0, sizeof(*v));
}

struct arcs {
	uint32_t *from, *to;
	size_t n, cap;
};

static int is_switch_port(const struct dla_routes *r, uint32_t s, unsigned p)
{
	enum dla_role role = dla_port_role(r, s, p);

	return role == DLA_ROLE_LOCAL || role == DLA_ROLE_GLOBAL;
}

static uint32_t link_id(const struct dla_routes *r, uint32_t s, unsigned p)
{
	return r->port_off[s] + p;
}

/* The tier of the link leaving s on p in the link order: 0 down (spine to leaf), 1 other local
 * links, 2 global; -1 not a switch-to-switch link. */
static int link_tier(const struct dla_fabric *f, const struct dla_routes *r, uint32_t s, unsigned p)
{
	enum dla_role role = dla_port_role(r, s, p);

	if (role == DLA_ROLE_GLOBAL)
		return 2;
	if (role != DLA_ROLE_LOCAL)
		return -1;
	return dla_port_down(f, r, s, p) ? 0 : 1;
}

/* Mark every turn some route makes: used[turn] = 1. */
static void mark_used(const struct dla_fabric *f, const struct dla_routes *r,
		      const struct dla_vl *v, uint8_t *used)
{
	for (uint32_t s = 0; s < f->nsw; s++) {
		const uint8_t *lft = dla_lft_row(r, s);

		for (unsigned lid = 1; lid <= r->max_lid; lid++) {
			unsigned p = lft[lid], q;
			const struct dla_port *pt;

			if (p == DLA_NO_PATH || p == 0 || !is_switch_port(r, s, p))
				continue;
			pt = &f->sw[s].ports[p];
			q = dla_lft_row(r, pt->peer_sw)[lid];
			if (q == DLA_NO_PATH || q == 0 || !is_switch_port(r, pt->peer_sw, q))
				continue; /* delivered there: a sink, no turn to order */
			used[v->turn_off[pt->peer_sw] + pt->peer_port * v->nports[pt->peer_sw] +
			     q] = 1;
		}
	}
}

static int arcs_push(struct arcs *a, uint32_t from, uint32_t to)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 1024;
		uint32_t *x = realloc(a->from, cap * sizeof(*x)), *y;

		if (!x)
			return -ENOMEM;
		a->from = x;
		y = realloc(a->to, cap * sizeof(*y));
		if (!y)
			return -ENOMEM;
		a->to = y;
		a->cap = cap;
	}
	a->from[a->n] = from;
	a->to[a->n++] = to;
	return 0;
}

/*
 * rank[link]: local links first, then global; inside a tier a topological order of the
 * same-tier turns in use (Kahn's algorithm; links on a cycle come last, in id order).
 */
static int order_links(const struct dla_fabric *f, const struct dla_routes *r,
		       const struct dla_vl *v, const uint8_t *used, uint32_t *rank)
{
	uint32_t nl = r->port_off[f->nsw], *indeg = NULL, *off = NULL, *adj = NULL, *queue = NULL;
	uint8_t *done = NULL;
	struct arcs a = {0};
	uint32_t next = 0;
	int ret = -ENOMEM;

	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned in = 1; in < v->nports[s]; in++) {
			const struct dla_port *pt = &f->sw[s].ports[in];

			if (!is_switch_port(r, s, in))
				continue;
			for (unsigned out = 1; out < v->nports[s]; out++)
				if (used[v->turn_off[s] + in * v->nports[s] + out] &&
				    link_tier(f, r, pt->peer_sw, pt->peer_port) ==
					    link_tier(f, r, s, out) &&
				    arcs_push(&a, link_id(r, pt->peer_sw, pt->peer_port),
					      link_id(r, s, out)))
					goto out;
		}
	indeg = calloc(nl + 1, sizeof(*indeg));
	off = calloc(nl + 2, sizeof(*off));
	adj = malloc((a.n + 1) * sizeof(*adj));
	queue = malloc((nl + 1) * sizeof(*queue));
	done = calloc(nl + 1, 1);
	if (!indeg || !off || !adj || !queue || !done)
		goto out;
	for (size_t i = 0; i < a.n; i++)
		off[a.from[i] + 1]++;
	for (uint32_t i = 0; i < nl; i++)
		off[i + 1] += off[i];
	memset(indeg, 0, (nl + 1) * sizeof(*indeg));
	{
		uint32_t *fill = calloc(nl + 1, sizeof(*fill));

		if (!fill)
			goto out;
		for (size_t i = 0; i < a.n; i++) {
			adj[off[a.from[i]] + fill[a.from[i]]++] = a.to[i];
			indeg[a.to[i]]++;
		}
		free(fill);
	}
	for (int tier = 0; tier < 3; tier++) {
		uint32_t head = 0, tail = 0;

		for (uint32_t s = 0; s < f->nsw; s++)
			for (unsigned p = 1; p < v->nports[s]; p++) {
				uint32_t id = link_id(r, s, p);

				if (link_tier(f, r, s, p) == tier && !indeg[id])
					queue[tail++] = id;
			}
		while (head < tail) {
			uint32_t id = queue[head++];

			rank[id] = next++;
			done[id] = 1;
			for (uint32_t k = off[id]; k < off[id + 1]; k++)
				if (--indeg[adj[k]] == 0)
					queue[tail++] = adj[k];
		}
		for (uint32_t s = 0; s < f->nsw; s++)
			for (unsigned p = 1; p < v->nports[s]; p++) {
				uint32_t id = link_id(r, s, p);

				if (link_tier(f, r, s, p) == tier && !done[id])
					rank[id] = next++; /* on a cycle of this tier */
			}
	}
	ret = 0;
out:
	free(a.from);
	free(a.to);
	free(indeg);
	free(off);
	free(adj);
	free(queue);
	free(done);
	return ret;
}

/* Levels a turn adds: 1 when it goes down in the link order. */
static unsigned turn_weight(const uint32_t *rank, uint32_t in_link, uint32_t out_link)
{
	return rank[out_link] < rank[in_link];
}

struct pass {
	uint32_t *bucket; /* [nsw] switches of one LID's tree by depth */
	uint32_t *bstart; /* [DEPTHS + 1] */
	uint8_t *mo;	  /* [nsw] level of the link to the next hop, over all in-turns */
};

#define DEPTHS 256

/* One pass over every destination's tree, leaves first. 1 if any level grew. */
static int relax(const struct dla_fabric *f, const struct dla_routes *r, struct dla_vl *v,
		 const uint32_t *rank, struct pass *ps, unsigned cap, uint32_t *worst)
{
	int grew = 0;

	for (unsigned lid = 1; lid <= r->max_lid; lid++) {
		memset(ps->bstart, 0, (DEPTHS + 1) * sizeof(*ps->bstart));
		for (uint32_t s = 0; s < f->nsw; s++) {
			uint8_t h = dla_hops_row(r, s)[lid];

			if (dla_lft_row(r, s)[lid] != DLA_NO_PATH)
				ps->bstart[h + 1]++;
		}
		for (unsigned d = 0; d < DEPTHS; d++)
			ps->bstart[d + 1] += ps->bstart[d];
		for (uint32_t s = 0; s < f->nsw; s++) {
			uint8_t h = dla_hops_row(r, s)[lid];

			if (dla_lft_row(r, s)[lid] != DLA_NO_PATH) {
				ps->bucket[ps->bstart[h]++] = s;
				ps->mo[s] = 0;
			}
		}
		/* bstart[d] now ends depth d; walk from the deepest down */
		for (uint32_t i = ps->bstart[DEPTHS - 1]; i-- > 0;) {
			uint32_t s = ps->bucket[i], u, in_link, out_link;
			unsigned p = dla_lft_row(r, s)[lid], q;
			const struct dla_port *pt;
			uint8_t *lvl;
			unsigned need;

			if (p == 0 || !is_switch_port(r, s, p))
				continue;
			pt = &f->sw[s].ports[p];
			u = pt->peer_sw;
			q = dla_lft_row(r, u)[lid];
			if (q == DLA_NO_PATH || q == 0 || !is_switch_port(r, u, q))
				continue;
			in_link = link_id(r, s, p);
			out_link = link_id(r, u, q);
			lvl = &v->level[v->turn_off[u] + pt->peer_port * v->nports[u] + q];
			need = ps->mo[s] + turn_weight(rank, in_link, out_link);
			if (need > cap) {
				need = cap;
				if (*worst == UINT32_MAX)
					*worst = (uint32_t)(lvl - v->level);
			}
			if (need > *lvl) {
				*lvl = (uint8_t)need;
				grew = 1;
			}
			if (*lvl > ps->mo[u])
				ps->mo[u] = *lvl;
		}
	}
	return grew;
}

static int alloc_tables(const struct dla_fabric *f, struct dla_vl *v)
{
	uint32_t total = 0;

	v->nsw = f->nsw;
	v->turn_off = malloc((f->nsw + 1) * sizeof(*v->turn_off));
	v->nports = malloc(f->nsw + 1);
	if (!v->turn_off || !v->nports)
		return -ENOMEM;
	for (uint32_t s = 0; s < f->nsw; s++) {
		v->turn_off[s] = total;
		v->nports[s] = f->sw[s].num_ports;
		total += (uint32_t)f->sw[s].num_ports * f->sw[s].num_ports;
	}
	v->turn_off[f->nsw] = total;
	v->level = calloc(total + 1, 1);
	return v->level ? 0 : -ENOMEM;
}

/* Name the turn at index t for a refusal. capped: a route needed a level above cap there
 * (relax stops counting at cap, so only a lower bound is known). */
static void describe_turn(const struct dla_fabric *f, const struct dla_routes *r,
			  const struct dla_vl *v, uint32_t t, unsigned budget, unsigned cap,
			  int capped, char *err, size_t len)
{
	uint32_t s = 0;
	unsigned in, out;
	char lb[160], need[32];

	while (s + 1 < f->nsw && v->turn_off[s + 1] <= t)
		s++;
	in = (t - v->turn_off[s]) / v->nports[s];
	out = (t - v->turn_off[s]) % v->nports[s];
	if (capped)
		snprintf(need, sizeof(need), "more than %u", cap + 1u);
	else
		snprintf(need, sizeof(need), "%u", v->level[t] + 1u);
	snprintf(err, len,
		 "switch %s: routes entering on port %u (%s) and leaving on port %u "
		 "(%s) need %s VLs per class, but %u are available [rule: along every route the "
		 "VL never falls and stays within its class]",
		 dla_switch_label(f, s, lb, sizeof(lb)), in, dla_role_name(dla_port_role(r, s, in)),
		 out, dla_role_name(dla_port_role(r, s, out)), need, budget);
}

/* Fig. 8: the only turn that goes down in the link order on local-global-local routes is
 * global to local: level 1 there, 0 elsewhere. */
static void fig8(const struct dla_fabric *f, const struct dla_routes *r, struct dla_vl *v)
{
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned in = 1; in < v->nports[s]; in++) {
			if (dla_port_role(r, s, in) != DLA_ROLE_GLOBAL)
				continue;
			for (unsigned out = 1; out < v->nports[s]; out++)
				if (dla_port_role(r, s, out) == DLA_ROLE_LOCAL) {
					v->level[v->turn_off[s] + in * v->nports[s] + out] = 1;
					v->port_levels[r->port_off[s] + out] = 2;
					v->levels = 2;
					v->shifted++;
				}
		}
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned out = 1; out < v->nports[s]; out++)
			if (!v->port_levels[r->port_off[s] + out])
				v->port_levels[r->port_off[s] + out] = 1;
}

static int assign(const struct dla_fabric *f, const struct dla_routes *r, unsigned budget,
		  int closed_form, struct dla_vl *v, char *err, size_t len)
{
	uint32_t nl = r->port_off[f->nsw], *rank = NULL, worst = UINT32_MAX;
	uint8_t *used = NULL;
	struct pass ps = {0};
	unsigned cap = budget < DLA_MAX_LEVELS ? DLA_MAX_LEVELS : budget;
	int ret, pass, grew = 1;

	memset(v, 0, sizeof(*v));
	ret = alloc_tables(f, v);
	if (ret)
		goto out;
	ret = -ENOMEM;
	used = calloc(v->turn_off[f->nsw] + 1, 1);
	rank = calloc(nl + 1, sizeof(*rank));
	v->port_levels = calloc(nl + 1, 1);
	ps.bucket = malloc((f->nsw + 1) * sizeof(*ps.bucket));
	ps.bstart = malloc((DEPTHS + 1) * sizeof(*ps.bstart));
	ps.mo = malloc(f->nsw + 1);
	if (!used || !rank || !v->port_levels || !ps.bucket || !ps.bstart || !ps.mo)
		goto out;
	if (closed_form && !r->local_detours && !r->via_intermediate && !r->fallback &&
	    !r->leafspine && budget >= 2) {
		v->levels = 1;
		fig8(f, r, v);
		ret = 0;
		goto out;
	}
	mark_used(f, r, v, used);
	ret = order_links(f, r, v, used, rank);
	if (ret)
		goto out;
	for (pass = 0; pass < MAX_PASSES && grew; pass++)
		grew = relax(f, r, v, rank, &ps, cap, &worst);

	/* what the routes need, per class and per port */
	v->levels = 1;
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned in = 0; in < v->nports[s]; in++)
			for (unsigned out = 1; out < v->nports[s]; out++) {
				uint32_t t = v->turn_off[s] + in * v->nports[s] + out;
				uint8_t lvl = v->level[t];
				uint8_t *pl = &v->port_levels[r->port_off[s] + out];

				if (lvl + 1u > v->levels)
					v->levels = lvl + 1u;
				v->shifted += lvl > 0;
				if (!used[t] && dla_port_role(r, s, in) == DLA_ROLE_GLOBAL &&
				    dla_port_role(r, s, out) == DLA_ROLE_LOCAL && budget >= 2)
					v->level[t] = lvl = 1; /* unused: Fig. 8's choice */
				if (lvl + 1u > *pl)
					*pl = (uint8_t)(lvl + 1);
			}
	if (grew || v->levels > budget) {
		int capped = worst != UINT32_MAX;

		if (!capped)
			for (uint32_t t = 0; t < v->turn_off[f->nsw]; t++)
				if (v->level[t] >= budget && used[t]) {
					worst = t;
					break;
				}
		describe_turn(f, r, v, worst == UINT32_MAX ? 0 : worst, budget, cap, capped, err,
			      len);
		ret = -EINVAL;
		goto out;
	}
	ret = 0;
out:
	free(used);
	free(rank);
	free(ps.bucket);
	free(ps.bstart);
	free(ps.mo);
	if (ret)
		dla_vl_free(v);
	return ret;
}

int dla_vl_assign(const struct dla_fabric *f, const struct dla_routes *r, unsigned budget,
		  struct dla_vl *v, char *err, size_t len)
{
	return assign(f, r, budget, 1, v, err, len);
}

int dla_vl_assign_fixpoint(const struct dla_fabric *f, const struct dla_routes *r, unsigned budget,
			   struct dla_vl *v, char *err, size_t len)
{
	return assign(f, r, budget, 0, v, err, len);
}
