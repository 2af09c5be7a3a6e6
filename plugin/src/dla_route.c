#include "dla_route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dest {
	uint16_t lid;
	uint8_t port;		/* at the destination switch: 0 for its own LID, else the end port */
	uint8_t endport;
	uint32_t sw;
	uint32_t idx;		/* index among the destinations of its group */
};

struct exitlink {
	uint32_t sw;
	uint8_t port;
};

struct work {
	struct dest *dest;
	uint32_t ndest;
	uint32_t *pos;		/* [nsw] position of a switch in its group */
	uint32_t gsz;
	uint8_t *lport;		/* [nsw * gsz] port from s to the member at position k */
	uint32_t *poff;		/* [ng * ng + 1] global links of group pair (x, y) */
	struct exitlink *plink;
	uint32_t *own_first, *own_count;	/* [ng] for the current source switch */
};

const char *dla_role_name(enum dla_role role)
{
	switch (role) {
	case DLA_ROLE_TERMINAL:
		return "terminal";
	case DLA_ROLE_LOCAL:
		return "local";
	case DLA_ROLE_GLOBAL:
		return "global";
	default:
		return "none";
	}
}

void dla_routes_free(struct dla_routes *r)
{
	free(r->port_off);
	free(r->role);
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
	free(w->own_first);
	free(w->own_count);
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
	if (!r->role || !r->routes || !r->lids)
		return -ENOMEM;
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			const struct dla_port *pt = &f->sw[s].ports[p];
			uint8_t role = DLA_ROLE_NONE;

			if (pt->peer_kind == DLA_PEER_ENDPORT)
				role = DLA_ROLE_TERMINAL;
			else if (pt->peer_kind == DLA_PEER_SWITCH && pt->peer_sw != s)
				role = g->group_of[pt->peer_sw] == g->group_of[s] ?
					DLA_ROLE_LOCAL : DLA_ROLE_GLOBAL;
			r->role[r->port_off[s] + p] = role;
		}
	return 0;
}

static int add_dest(const struct dla_fabric *f, struct work *w, uint16_t lid, uint32_t sw,
		    uint8_t port, uint32_t idx, char *err, size_t len)
{
	if (lid == 0)
		return 0;	/* not yet assigned: nothing to route */
	if (lid > f->max_lid) {
		snprintf(err, len, "LID %u is above the LFT top %u", lid, f->max_lid);
		return -EINVAL;
	}
	w->dest[w->ndest++] = (struct dest){ .lid = lid, .port = port, .endport = port != 0,
					     .sw = sw, .idx = idx };
	return 0;
}

static int collect(const struct dla_fabric *f, const struct dla_groups *g,
		   const struct dla_routes *r, struct work *w, char *err, size_t len)
{
	uint32_t ng = g->ngroups, total = 0;
	int ret;

	w->gsz = ng ? g->first[1] - g->first[0] : 0;
	w->dest = malloc((r->port_off[f->nsw] + 1) * sizeof(*w->dest));
	w->pos = malloc((f->nsw + 1) * sizeof(*w->pos));
	w->lport = malloc(((size_t)f->nsw * w->gsz + 1) * sizeof(*w->lport));
	w->poff = calloc((size_t)ng * ng + 1, sizeof(*w->poff));
	w->own_first = malloc((ng + 1) * sizeof(*w->own_first));
	w->own_count = malloc((ng + 1) * sizeof(*w->own_count));
	if (!w->dest || !w->pos || !w->lport || !w->poff || !w->own_first || !w->own_count)
		return -ENOMEM;

	/* destinations, numbered within their group: switch LID first, then end ports */
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
			for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
				if (dla_port_role(r, s, p) != DLA_ROLE_TERMINAL)
					continue;
				before = w->ndest;
				ret = add_dest(f, w, f->sw[s].ports[p].endport_lid, s, (uint8_t)p,
					       idx, err, len);
				if (ret)
					return ret;
				idx += w->ndest - before;
			}
		}
	}

	/* local ports and global links per group pair, in member then port order */
	memset(w->lport, DLA_NO_PATH, (size_t)f->nsw * w->gsz);
	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			const struct dla_port *pt = &f->sw[s].ports[p];
			enum dla_role role = dla_port_role(r, s, p);
			uint8_t *lp;

			if (role == DLA_ROLE_LOCAL) {
				lp = &w->lport[(size_t)s * w->gsz + w->pos[pt->peer_sw]];
				if (*lp == DLA_NO_PATH)
					*lp = (uint8_t)p;
			} else if (role == DLA_ROLE_GLOBAL) {
				w->poff[(size_t)g->group_of[s] * ng + g->group_of[pt->peer_sw] + 1]++;
				total++;
			}
		}
	for (size_t k = 0; k < (size_t)ng * ng; k++)
		w->poff[k + 1] += w->poff[k];
	w->plink = malloc((total + 1) * sizeof(*w->plink));
	if (!w->plink)
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
				w->plink[w->poff[pair] + fill[pair]++] =
					(struct exitlink){ .sw = s, .port = (uint8_t)p };
			}
		}
		free(fill);
	}
	return 0;
}

static void route_switch(const struct dla_fabric *f, const struct dla_groups *g,
			 struct dla_routes *r, struct work *w, uint32_t s)
{
	uint32_t ng = g->ngroups, x = g->group_of[s];
	uint8_t *lft = dla_lft_row(r, s), *hops = dla_hops_row(r, s);

	/* this switch's own links towards every group (contiguous in the pair lists) */
	for (uint32_t y = 0; y < ng; y++) {
		size_t pair = (size_t)x * ng + y;

		w->own_first[y] = w->poff[pair];
		w->own_count[y] = 0;
		for (uint32_t k = w->poff[pair]; k < w->poff[pair + 1]; k++)
			if (w->plink[k].sw == s) {
				if (!w->own_count[y])
					w->own_first[y] = k;
				w->own_count[y]++;
			}
	}
	for (uint32_t i = 0; i < w->ndest; i++) {
		const struct dest *d = &w->dest[i];
		uint32_t y = g->group_of[d->sw];
		uint8_t port, h;

		if (d->sw == s) {
			port = d->port;
			h = 0;
		} else if (y == x) {
			port = w->lport[(size_t)s * w->gsz + w->pos[d->sw]];
			h = 1;
		} else {
			size_t pair = (size_t)x * ng + y;
			uint32_t nl = w->poff[pair + 1] - w->poff[pair];
			const struct exitlink *c = &w->plink[w->poff[pair] + d->idx % nl];
			const struct exitlink *e = c;
			uint32_t arrive;

			if (c->sw != s && w->own_count[y])
				e = &w->plink[w->own_first[y] + d->idx % w->own_count[y]];
			port = e->sw == s ? e->port :
				w->lport[(size_t)s * w->gsz + w->pos[e->sw]];
			arrive = f->sw[e->sw].ports[e->port].peer_sw;
			h = (uint8_t)((e->sw != s) + 1 + (arrive != d->sw));
			r->routes[r->port_off[e->sw] + e->port]++;
		}
		lft[d->lid] = port;
		hops[d->lid] = (uint8_t)(h + d->endport);
		r->lids[r->port_off[s] + port]++;
	}
}

int dla_routes_build(const struct dla_fabric *f, const struct dla_groups *g,
		     struct dla_routes *r, char *err, size_t len)
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
	ret = collect(f, g, r, &w, err, len);
	if (ret)
		goto out;
	for (uint32_t s = 0; s < f->nsw; s++)
		route_switch(f, g, r, &w, s);
out:
	work_free(&w);
	if (ret)
		dla_routes_free(r);
	return ret;
}
