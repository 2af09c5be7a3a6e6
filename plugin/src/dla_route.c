#include "dla_route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNSET 0xFF /* depth of a switch not yet in the destination's tree */

struct dest {
	uint16_t lid;
	uint8_t port; /* at the destination switch: 0 for its own LID, else the end port */
	uint8_t endport;
	uint32_t sw;
	uint32_t idx; /* index among the destinations of its group */
};

struct exitlink {
	uint32_t sw;
	uint8_t port;
};

struct work {
	struct dest *dest;
	uint32_t ndest;
	uint32_t *pos; /* [nsw] position of a switch in its group */
	uint32_t maxgsz;
	uint8_t *lport; /* [nsw * maxgsz] port from s to the member at position k */
	uint32_t *poff; /* [ng * ng + 1] global links of group pair (x, y) */
	struct exitlink *plink;
	uint32_t *gdist;  /* [ng * ng] groups between y and x: gdist[y * ng + x] */
	uint32_t *gorder; /* [ng * ng] groups by distance from y: gorder[y * ng + i] */
	/* per destination */
	uint8_t *next;	 /* [nsw] out port */
	uint8_t *depth;	 /* [nsw] links to the destination switch, UNSET */
	uint32_t *order; /* [nsw] switches in the order they joined the tree */
	uint32_t norder;
	struct exitlink *cand, *good; /* [max links per group] */
	uint32_t *subtree;	      /* [nsw] routes through each switch (per-link counts) */
	uint32_t *via;	     /* [nsw] scratch: the switch or port a member will join through */
	uint32_t *peer;	     /* [ports] the switch at the other end of a switch-switch link */
	uint32_t batch[256]; /* destinations of one switch that share a tree */
	uint8_t done[256];   /* ... and which of them have their routes */
	/* The tree last built: its destination switch, and the moduli by which the
	 * destination's idx chose among equal links (their lcm; 0: too large to share). A
	 * destination on the same switch whose idx has the same residue gets the same tree. */
	uint64_t tree_mod;
	uint32_t tree_detours, tree_via, tree_fallback; /* the counters the tree added */
};

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* idx was reduced modulo m to choose: the tree depends on idx % m. */
static void note_mod(struct work *w, uint32_t m)
{
	if (m <= 1 || !w->tree_mod || w->tree_mod % m == 0)
		return;
	w->tree_mod = w->tree_mod / gcd64(w->tree_mod, m) * m;
	if (w->tree_mod > UINT32_MAX)
		w->tree_mod = 0;
}

enum ibqos_vlarb_role dla_vlarb_role(enum dla_role role)
{
	switch (role) {
	case DLA_ROLE_TERMINAL:
		return IBQOS_ROLE_TERMINAL;
	case DLA_ROLE_LOCAL:
		return IBQOS_ROLE_LOCAL;
	case DLA_ROLE_GLOBAL:
		return IBQOS_ROLE_GLOBAL;
	default:
		return IBQOS_ROLE_COUNT;
	}
}

const char *dla_role_name(enum dla_role role)
{
	return role == DLA_ROLE_NONE ? "none" : ibqos_role_keyword(dla_vlarb_role(role));
}

void dla_numbering_free(struct dla_numbering *nb)
{
	free(nb->e);
	memset(nb, 0, sizeof(*nb));
}

void dla_routes_free(struct dla_routes *r)
{
	dla_numbering_free(&r->numbering);
	free(r->port_off);
	free(r->role);
	free(r->swrole);
	free(r->routes);
	free(r->lids);
	free(r->lft);
	free(r->hops);
	memset(r, 0, sizeof(*r));
}

static void work_free(struct work *w)
{
	free(w->dest);
	free(w->pos);
	free(w->lport);
	free(w->poff);
	free(w->plink);
	free(w->gdist);
	free(w->gorder);
	free(w->next);
	free(w->depth);
	free(w->order);
	free(w->cand);
	free(w->good);
	free(w->subtree);
	free(w->via);
	free(w->peer);
}

static int assign_roles(const struct dla_fabric *f, const struct dla_groups *g,
			struct dla_routes *r)
{
	uint32_t total = 0;

	r->port_off = malloc((f->nsw + 1) * sizeof(*r->port_off));
	if (!r->port_off)
		return -ENOMEM;
	for (uint32_t s = 0; s < f->nsw; s++) {
		r->port_off[s] = total;
		total += f->sw[s].num_ports;
	}
	r->port_off[f->nsw] = total;
	r->role = calloc(total ? total : 1, 1);
	r->routes = calloc(total ? total : 1, sizeof(*r->routes));
	r->lids = calloc(total ? total : 1, sizeof(*r->lids));
	r->swrole = calloc(f->nsw + 1, 1);
	if (!r->role || !r->routes || !r->lids || !r->swrole)
		return -ENOMEM;
	{
		struct dla_graph gr;
		int n = dla_graph_build(f, &gr);

		if (n)
			return n;
		n = dla_dfplus_roles(f, &gr, g, r->swrole);
		dla_graph_free(&gr);
		if (n < 0)
			return n;
		r->leafspine = (uint32_t)n;
	}
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			const struct dla_port *pt = &f->sw[s].ports[p];
			uint8_t role = DLA_ROLE_NONE;

			if (pt->peer_kind == DLA_PEER_ENDPORT)
				role = DLA_ROLE_TERMINAL;
			else if (pt->peer_kind == DLA_PEER_SWITCH && pt->peer_sw != s)
				role = g->group_of[pt->peer_sw] == g->group_of[s] ? DLA_ROLE_LOCAL
										  : DLA_ROLE_GLOBAL;
			r->role[r->port_off[s] + p] = role;
		}
	return 0;
}

static int add_dest(const struct dla_fabric *f, struct work *w, uint16_t lid, uint32_t sw,
		    uint8_t port, uint32_t idx, char *err, size_t len)
{
	if (lid == 0)
		return 0; /* not yet assigned: nothing to route */
	if (lid > f->max_lid) {
		char lb[200];

		snprintf(err, len,
			 "switch %s port %u: LID %u is above the LFT top %u [rule: every LID "
			 "fits the switches' LFTs]",
			 dla_switch_label(f, sw, lb, sizeof(lb)), port, lid, f->max_lid);
		return -EINVAL;
	}
	w->dest[w->ndest++] =
		(struct dest){.lid = lid, .port = port, .endport = port != 0, .sw = sw, .idx = idx};
	return 0;
}

/* Group distances in the quotient graph, and the groups ordered by distance, per group. */
static int group_distances(const struct dla_groups *g, struct work *w)
{
	uint32_t ng = g->ngroups;

	w->gdist = malloc(((size_t)ng * ng + 1) * sizeof(*w->gdist));
	w->gorder = malloc(((size_t)ng * ng + 1) * sizeof(*w->gorder));
	if (!w->gdist || !w->gorder)
		return -ENOMEM;
	for (uint32_t y = 0; y < ng; y++) {
		uint32_t *dist = w->gdist + (size_t)y * ng, *q = w->gorder + (size_t)y * ng;
		uint32_t head = 0, tail = 0;

		for (uint32_t x = 0; x < ng; x++)
			dist[x] = UINT32_MAX;
		dist[y] = 0;
		q[tail++] = y;
		while (head < tail) {
			uint32_t x = q[head++];

			for (uint32_t z = 0; z < ng; z++)
				if (dist[z] == UINT32_MAX &&
				    w->poff[(size_t)x * ng + z + 1] > w->poff[(size_t)x * ng + z]) {
					dist[z] = dist[x] + 1;
					q[tail++] = z;
				}
		}
		for (uint32_t x = 0; x < ng; x++)
			if (dist[x] == UINT32_MAX)
				q[tail++] = x; /* unreachable groups last */
	}
	return 0;
}

static int cmp_destnum(const void *a, const void *b)
{
	const struct dla_destnum *x = a, *y = b;

	if (x->guid != y->guid)
		return (x->guid > y->guid) - (x->guid < y->guid);
	return (x->port > y->port) - (x->port < y->port);
}

/* The numbers in force (dla_route.h): this fabric's own, unless a known destination is gone;
 * then the known ones keep theirs and the reference stays the known numbering. */
static int renumber(const struct dla_fabric *f, const struct dla_numbering *known, struct work *w,
		    struct dla_numbering *out)
{
	uint32_t found = 0;
	const struct dla_destnum **hit;

	if (known && known->n) {
		hit = malloc((w->ndest + 1) * sizeof(*hit));
		if (!hit)
			return -ENOMEM;
		for (uint32_t i = 0; i < w->ndest; i++) {
			struct dla_destnum key = {.guid = f->sw[w->dest[i].sw].guid,
						  .port = w->dest[i].port};

			hit[i] = bsearch(&key, known->e, known->n, sizeof(key), cmp_destnum);
			found += hit[i] != NULL;
		}
		if (found < known->n) {
			for (uint32_t i = 0; i < w->ndest; i++)
				if (hit[i])
					w->dest[i].idx = hit[i]->idx;
			free(hit);
			out->e = malloc(known->n * sizeof(*out->e));
			if (!out->e)
				return -ENOMEM;
			memcpy(out->e, known->e, known->n * sizeof(*out->e));
			out->n = known->n;
			return 0;
		}
		free(hit);
	}
	out->e = malloc((w->ndest + 1) * sizeof(*out->e));
	if (!out->e)
		return -ENOMEM;
	for (uint32_t i = 0; i < w->ndest; i++)
		out->e[i] = (struct dla_destnum){.guid = f->sw[w->dest[i].sw].guid,
						 .idx = w->dest[i].idx,
						 .port = w->dest[i].port};
	out->n = w->ndest;
	qsort(out->e, out->n, sizeof(*out->e), cmp_destnum);
	return 0;
}

static int cmp_dest_lid(const void *a, const void *b)
{
	const struct dest *x = a, *y = b;

	return (x->lid > y->lid) - (x->lid < y->lid);
}

/* 1 if global link x of a switch sorts after y of the same switch: by the switch it lands on,
 * then port (only parallel cables to one switch stay in port order). Group pairs list their
 * links by owner in member order, then so: not by port, so that the same fabric numbered
 * otherwise chooses the same links. */
static int exitlink_after(const struct dla_fabric *f, const struct exitlink *x,
			  const struct exitlink *y)
{
	uint32_t px = f->sw[x->sw].ports[x->port].peer_sw, py = f->sw[y->sw].ports[y->port].peer_sw;

	return px != py ? px > py : x->port > y->port;
}

static int collect(const struct dla_fabric *f, const struct dla_groups *g,
		   const struct dla_numbering *known, struct dla_routes *r, struct work *w,
		   char *err, size_t len)
{
	uint32_t ng = g->ngroups, total = 0;
	int ret;

	for (uint32_t k = 0; k < ng; k++)
		if (g->first[k + 1] - g->first[k] > w->maxgsz)
			w->maxgsz = g->first[k + 1] - g->first[k];
	w->dest = malloc((r->port_off[f->nsw] + 1) * sizeof(*w->dest));
	w->pos = malloc((f->nsw + 1) * sizeof(*w->pos));
	w->lport = malloc(((size_t)f->nsw * w->maxgsz + 1) * sizeof(*w->lport));
	w->poff = calloc((size_t)ng * ng + 1, sizeof(*w->poff));
	w->next = malloc(f->nsw + 1);
	w->depth = malloc(f->nsw + 1);
	w->order = malloc((f->nsw + 1) * sizeof(*w->order));
	w->subtree = malloc((f->nsw + 1) * sizeof(*w->subtree));
	w->via = malloc((f->nsw + 1) * sizeof(*w->via));
	w->peer = malloc((r->port_off[f->nsw] + 1) * sizeof(*w->peer));
	if (!w->dest || !w->pos || !w->lport || !w->poff || !w->next || !w->depth || !w->order ||
	    !w->subtree || !w->via || !w->peer)
		return -ENOMEM;
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 0; p < f->sw[s].num_ports; p++)
			w->peer[r->port_off[s] + p] = f->sw[s].ports[p].peer_sw;

	/* destinations, numbered within their group: switch LID first, then end ports in LID
	 * order (not port order: the same fabric numbered otherwise gets the same routes) */
	for (uint32_t k = 0; k < ng; k++) {
		uint32_t idx = 0;

		for (uint32_t m = g->first[k]; m < g->first[k + 1]; m++) {
			uint32_t s = g->members[m];
			uint32_t before = w->ndest;

			w->pos[s] = m - g->first[k];
			ret = add_dest(f, w, f->sw[s].lid, s, 0, idx, err, len);
			if (ret)
				return ret;
			idx += w->ndest - before;
			before = w->ndest;
			for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
				if (dla_port_role(r, s, p) != DLA_ROLE_TERMINAL)
					continue;
				ret = add_dest(f, w, f->sw[s].ports[p].endport_lid, s, (uint8_t)p,
					       0, err, len);
				if (ret)
					return ret;
			}
			qsort(w->dest + before, w->ndest - before, sizeof(*w->dest), cmp_dest_lid);
			for (uint32_t i = before; i < w->ndest; i++)
				w->dest[i].idx = idx++;
		}
	}
	ret = renumber(f, known, w, &r->numbering);
	if (ret)
		return ret;

	/* local ports (parallel cables: the first) and global links per group pair */
	memset(w->lport, DLA_NO_PATH, (size_t)f->nsw * w->maxgsz);
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			const struct dla_port *pt = &f->sw[s].ports[p];
			enum dla_role role = dla_port_role(r, s, p);
			uint8_t *lp;

			if (role == DLA_ROLE_LOCAL) {
				lp = &w->lport[(size_t)s * w->maxgsz + w->pos[pt->peer_sw]];
				if (*lp == DLA_NO_PATH)
					*lp = (uint8_t)p;
			} else if (role == DLA_ROLE_GLOBAL) {
				w->poff[(size_t)g->group_of[s] * ng + g->group_of[pt->peer_sw] +
					1]++;
				total++;
			}
		}
	for (size_t k = 0; k < (size_t)ng * ng; k++)
		w->poff[k + 1] += w->poff[k];
	w->plink = malloc((total + 1) * sizeof(*w->plink));
	/* candidates of one group towards all groups one step closer: at most its global ends */
	w->cand = malloc((total + 1) * sizeof(*w->cand));
	w->good = malloc((total + 1) * sizeof(*w->good));
	if (!w->plink || !w->cand || !w->good)
		return -ENOMEM;
	{
		uint32_t *fill = calloc((size_t)ng * ng + 1, sizeof(*fill));

		if (!fill)
			return -ENOMEM;
		for (uint32_t m = 0; m < f->nsw; m++) {
			uint32_t s = g->members[m];

			for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
				size_t pair;

				if (dla_port_role(r, s, p) != DLA_ROLE_GLOBAL)
					continue;
				pair = (size_t)g->group_of[s] * ng +
					g->group_of[f->sw[s].ports[p].peer_sw];
				struct exitlink *at = w->plink + w->poff[pair] + fill[pair]++;

				*at = (struct exitlink){.sw = s, .port = (uint8_t)p};
				for (; at > w->plink + w->poff[pair] && at[-1].sw == s &&
				     exitlink_after(f, &at[-1], at);
				     at--) {
					struct exitlink t = at[-1];

					at[-1] = at[0];
					at[0] = t;
				}
			}
		}
		free(fill);
	}
	return group_distances(g, w);
}

static void join(struct work *w, uint32_t s, uint8_t port, uint8_t depth)
{
	w->next[s] = port;
	w->depth[s] = depth;
	w->order[w->norder++] = s;
}

static uint8_t local_port(const struct work *w, uint32_t s, uint32_t t)
{
	return w->lport[(size_t)s * w->maxgsz + w->pos[t]];
}

/*
 * Members of group k not yet in the tree: one local hop to `via` if linked, else two
 * through a member already in the tree (preferring the destination itself, then members
 * whose next hop leaves the group, shared out by idx). Returns the members that take two.
 *
 * In the destination's group (arrival) the middle switch comes from the upper half of the
 * candidates, elsewhere (leaving the group) from the lower half: a detour turn then carries
 * packets of one phase only, so arrivals (one level up) do not lift the source traffic that
 * goes on to a global link, and a lost local link needs no third VL when a >= 4.
 */
static uint32_t join_group(const struct dla_groups *g, const struct dla_routes *r, struct work *w,
			   uint32_t k, uint32_t via, uint32_t idx, int arrival)
{
	uint32_t two = 0;
	/* a dragonfly+ group: two local hops is its normal shape, not a detour */
	int leafspine = r->swrole[g->members[g->first[k]]] != DLA_SW_MEMBER;

	if (via != DLA_NO_SWITCH)
		for (uint32_t m = g->first[k]; m < g->first[k + 1]; m++) {
			uint32_t s = g->members[m];
			uint8_t p;

			if (w->depth[s] != UNSET || (p = local_port(w, s, via)) == DLA_NO_PATH)
				continue;
			join(w, s, p, (uint8_t)(w->depth[via] + 1));
		}
	for (uint32_t m = g->first[k]; m < g->first[k + 1]; m++) {
		uint32_t s = g->members[m], n = 0, pick = 0, best = UINT32_MAX;

		w->via[s] = DLA_NO_SWITCH;
		if (w->depth[s] != UNSET)
			continue;
		uint32_t lo = 0, span = 1;

		for (int pass = 0; pass < 2; pass++) {
			if (pass == 1 && n) {
				uint32_t half = n / 2;

				lo = arrival && half ? n - half : 0;
				span = arrival && half ? half : n - half;
				/* a leaf goes up to any spine: its down turn (up, down) is
				 * the same in both phases; a spine's turn through a leaf
				 * (down, up) is not, so spines keep the halves */
				if (r->swrole[s] == DLA_SW_LEAF)
					lo = 0, span = n;
				note_mod(w, span);
			}
			for (uint32_t q = g->first[k]; q < g->first[k + 1]; q++) {
				uint32_t t = g->members[q], kind;

				/* only members that were in the tree before this step */
				if (t == s || w->depth[t] == UNSET ||
				    local_port(w, s, t) == DLA_NO_PATH)
					continue;
				kind = w->depth[t] == 0					     ? 0
					: dla_port_role(r, t, w->next[t]) == DLA_ROLE_GLOBAL ? 1
											     : 2;
				if (pass == 0) {
					if (kind < best)
						best = kind, n = 0;
					n += kind == best;
				} else if (kind == best && pick++ == lo + idx % span) {
					w->via[s] = t;
				}
			}
		}
	}
	/* join after choosing, so no member hangs off another that joined in this step */
	for (uint32_t m = g->first[k]; m < g->first[k + 1]; m++) {
		uint32_t s = g->members[m], t = w->via[s];

		if (w->depth[s] != UNSET || t == DLA_NO_SWITCH)
			continue;
		join(w, s, local_port(w, s, t), (uint8_t)(w->depth[t] + 1));
		two++;
	}
	return leafspine ? 0 : two;
}

/* Links from group x towards groups one step closer to the destination, by preference. */
static void exit_candidates(const struct dla_fabric *f, const struct dla_groups *g,
			    const struct dla_routes *r, struct work *w, uint32_t x, uint32_t y,
			    uint32_t *ncand, uint32_t *ngood)
{
	uint32_t ng = g->ngroups, want = w->gdist[(size_t)y * ng + x] - 1;

	*ncand = *ngood = 0;
	/* one step from y: only y itself is closer (the common case: skip the scan) */
	for (uint32_t z = want ? 0 : y; z < (want ? ng : y + 1); z++) {
		size_t pair = (size_t)x * ng + z;

		if (w->gdist[(size_t)y * ng + z] != want)
			continue;
		for (uint32_t k = w->poff[pair]; k < w->poff[pair + 1]; k++) {
			const struct exitlink *e = &w->plink[k];
			uint32_t land = f->sw[e->sw].ports[e->port].peer_sw;
			int good;

			if (w->depth[land] == UNSET || w->depth[land] == 0xFE)
				continue;
			/* towards y: land on the destination or next to it; further: land on a
			 * switch that leaves its group at once */
			good = want == 0 ? w->depth[land] <= 1
					 : dla_port_role(r, land, w->next[land]) == DLA_ROLE_GLOBAL;
			w->cand[(*ncand)++] = *e;
			if (good)
				w->good[(*ngood)++] = *e;
		}
	}
}

/* Depth in the tree at which exit link e lands. */
static uint8_t landing_depth(const struct dla_fabric *f, const struct work *w,
			     const struct exitlink *e)
{
	return w->depth[f->sw[e->sw].ports[e->port].peer_sw];
}

/*
 * Group x joins the tree of destination d through its links one step closer. Minimal: the
 * members without a link of their own go to a link landing closest to the destination (on
 * it, when one does: one global hop instead of a global and a local one), shared out by idx
 * among those; an owner uses its own link landing closest, shared out the same way.
 */
static void join_remote_group(const struct dla_fabric *f, const struct dla_groups *g,
			      struct dla_routes *r, struct work *w, uint32_t x,
			      const struct dest *d)
{
	uint32_t ncand, ngood, nl, nbest = 0, pick;
	const struct exitlink *list, *c = NULL;
	uint8_t best = UNSET;

	exit_candidates(f, g, r, w, x, g->group_of[d->sw], &ncand, &ngood);
	if (!ncand)
		return;
	list = ngood ? w->good : w->cand;
	nl = ngood ? ngood : ncand;
	for (uint32_t k = 0; k < nl; k++) {
		uint8_t dk = landing_depth(f, w, &list[k]);

		if (dk < best)
			best = dk, nbest = 0;
		nbest += dk == best;
	}
	note_mod(w, nbest);
	pick = d->idx % nbest;
	for (uint32_t k = 0; k < nl && !c; k++)
		if (landing_depth(f, w, &list[k]) == best && pick-- == 0)
			c = &list[k];
	/* owners use a link of their own (the chosen one if theirs); the others go to c */
	for (uint32_t m = g->first[x]; m < g->first[x + 1]; m++) {
		uint32_t s = g->members[m], own = 0, want;
		uint8_t mine = UNSET;
		const struct exitlink *e = c;

		for (uint32_t k = 0; k < nl; k++) {
			uint8_t dk = landing_depth(f, w, &list[k]);

			if (list[k].sw != s || dk > mine)
				continue;
			if (dk < mine)
				mine = dk, own = 0;
			own++;
		}
		if (!own)
			continue;
		note_mod(w, own);
		want = d->idx % own;
		for (uint32_t k = 0; k < nl && c->sw != s; k++)
			if (list[k].sw == s && landing_depth(f, w, &list[k]) == mine &&
			    want-- == 0) {
				e = &list[k];
				break;
			}
		join(w, s, e->port, (uint8_t)(landing_depth(f, w, e) + 1));
	}
	r->local_detours += join_group(g, r, w, x, c->sw, d->idx, 0);
}

/* Whatever is left joins at its nearest neighbour already in the tree, wave by wave (a
 * switch joined in this wave waits for the next: loop-free and shortest). */
static void join_leftovers(const struct dla_fabric *f, struct dla_routes *r, struct work *w)
{
	for (;;) {
		uint32_t grown = 0;

		for (uint32_t s = 0; s < f->nsw; s++) {
			uint8_t bestd = UNSET;

			w->via[s] = 0;
			if (w->depth[s] != UNSET)
				continue;
			for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
				const struct dla_port *pt = &f->sw[s].ports[p];

				if (pt->peer_kind != DLA_PEER_SWITCH || pt->peer_sw == s ||
				    w->depth[pt->peer_sw] >= bestd)
					continue;
				bestd = w->depth[pt->peer_sw];
				w->via[s] = p;
			}
		}
		for (uint32_t s = 0; s < f->nsw; s++) {
			uint32_t t;

			if (w->depth[s] != UNSET || !w->via[s])
				continue;
			t = f->sw[s].ports[w->via[s]].peer_sw;
			join(w, s, (uint8_t)w->via[s], (uint8_t)(w->depth[t] + 1));
			r->fallback++;
			grown++;
		}
		if (!grown)
			return;
	}
}

static void build_tree(const struct dla_fabric *f, const struct dla_groups *g, struct dla_routes *r,
		       struct work *w, const struct dest *d)
{
	uint32_t ng = g->ngroups, y = g->group_of[d->sw];
	const uint32_t *order = w->gorder + (size_t)y * ng, *dist = w->gdist + (size_t)y * ng;
	uint32_t detours = r->local_detours, via = r->via_intermediate, fallback = r->fallback;

	w->tree_mod = 1;
	memset(w->depth, UNSET, f->nsw);
	w->norder = 0;
	join(w, d->sw, d->port, 0);
	r->local_detours += join_group(g, r, w, y, d->sw, d->idx, 1);
	for (uint32_t i = 1; i < ng; i++) {
		uint32_t x = order[i];

		if (dist[x] == UINT32_MAX)
			break;
		join_remote_group(f, g, r, w, x, d);
		if (dist[x] > 1)
			r->via_intermediate += g->first[x + 1] - g->first[x];
	}
	if (w->norder < f->nsw)
		join_leftovers(f, r, w);
	w->tree_detours = r->local_detours - detours;
	w->tree_via = r->via_intermediate - via;
	w->tree_fallback = r->fallback - fallback;
}

/* LFT, hop counts and per-port counts of the destinations dest[batch[0..nb)], which share the
 * tree just built (they differ only in their LID and the destination switch's out port); routes
 * per link from subtree sizes. */
static void emit(const struct dla_fabric *f, struct dla_routes *r, struct work *w,
		 const uint32_t *batch, uint32_t nb)
{
	uint32_t root = w->dest[batch[0]].sw;

	memset(w->subtree, 0, f->nsw * sizeof(*w->subtree));
	for (uint32_t i = w->norder; i-- > 0;) {
		uint32_t s = w->order[i], at = r->port_off[s];
		uint8_t p = w->next[s], *lft = dla_lft_row(r, s), *hops = dla_hops_row(r, s);

		w->subtree[s]++;
		if (s == root) {
			for (uint32_t k = 0; k < nb; k++) {
				const struct dest *d = &w->dest[batch[k]];

				lft[d->lid] = d->port;
				hops[d->lid] = d->endport;
				r->lids[at + d->port]++;
			}
			continue;
		}
		for (uint32_t k = 0; k < nb; k++) {
			const struct dest *d = &w->dest[batch[k]];

			lft[d->lid] = p;
			hops[d->lid] = (uint8_t)(w->depth[s] + d->endport);
		}
		r->lids[at + p] += nb;
		w->subtree[w->peer[at + p]] += w->subtree[s];
		if (r->role[at + p] == DLA_ROLE_GLOBAL)
			r->routes[at + p] += nb * w->subtree[s];
	}
	r->unreachable += nb * (f->nsw - w->norder);
	r->local_detours += (nb - 1) * w->tree_detours;
	r->via_intermediate += (nb - 1) * w->tree_via;
	r->fallback += (nb - 1) * w->tree_fallback;
}

/*
 * The destinations dest[i..end) of one switch: a tree for the first not yet routed, shared by
 * every other whose idx has the same residue modulo the counts the tree chose among (the
 * choices, hence the tree, are then the same); repeated until all are routed.
 */
static void route_switch(const struct dla_fabric *f, const struct dla_groups *g,
			 struct dla_routes *r, struct work *w, uint32_t i, uint32_t end)
{
	for (uint32_t k = i; k < end; k++)
		w->done[k - i] = 0;
	for (uint32_t k = i; k < end; k++) {
		uint32_t nb = 0;

		if (w->done[k - i])
			continue;
		build_tree(f, g, r, w, &w->dest[k]);
		for (uint32_t j = k; j < end; j++)
			if (!w->done[j - i] &&
			    (j == k ||
			     (w->tree_mod &&
			      w->dest[j].idx % w->tree_mod == w->dest[k].idx % w->tree_mod))) {
				w->done[j - i] = 1;
				w->batch[nb++] = j;
			}
		emit(f, r, w, w->batch, nb);
	}
}

int dla_routes_build(const struct dla_fabric *f, const struct dla_groups *g,
		     const struct dla_numbering *known, struct dla_routes *r, char *err, size_t len)
{
	struct work w;
	size_t cells = (size_t)f->nsw * ((size_t)f->max_lid + 1);
	int ret;

	memset(r, 0, sizeof(*r));
	memset(&w, 0, sizeof(w));
	r->nsw = f->nsw;
	r->max_lid = f->max_lid;
	ret = assign_roles(f, g, r);
	if (ret)
		goto out;
	ret = -ENOMEM;
	r->lft = malloc(cells ? cells : 1);
	r->hops = malloc(cells ? cells : 1);
	if (!r->lft || !r->hops)
		goto out;
	memset(r->lft, DLA_NO_PATH, cells);
	memset(r->hops, DLA_NO_PATH, cells);
	ret = collect(f, g, known, r, &w, err, len);
	if (ret)
		goto out;
	for (uint32_t i = 0, end; i < w.ndest; i = end) {
		for (end = i + 1; end < w.ndest && w.dest[end].sw == w.dest[i].sw; end++)
			;
		route_switch(f, g, r, &w, i, end);
	}
out:
	work_free(&w);
	if (ret)
		dla_routes_free(r);
	return ret;
}
