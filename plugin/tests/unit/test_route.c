#include "unit.h"
#include "dla_route.h"
#include "dla_sl2vl.h"
#include "judge.h"

#include <stdlib.h>

static void check_routes(struct df *d, int expect_vls)
{
	struct dla_groups g;
	struct dla_routes r;
	struct dla_vl v;
	struct verdict vd;
	char err[512] = "";
	int exact;

	EXPECT_EQ(dla_groups_discover(&d->f, 0, &g, &exact, err, sizeof(err)), 0);
	EXPECT_EQ(dla_routes_build(&d->f, &g, NULL, &r, err, sizeof(err)), 0);
	EXPECT_EQ(dla_vl_assign(&d->f, &r, 2, &v, err, sizeof(err)), 0);
	judge(&d->f, &g, &r, &v, 2, &vd);
	EXPECT_EQ(vd.delivered, vd.routes);
	EXPECT(!vd.cyclic);
	EXPECT_EQ(vd.max_hops, d->a > 1 ? 3 : 1);
	EXPECT(vd.max_globals <= 1);
	EXPECT(vd.max_locals_after_global <= 1);
	EXPECT_EQ(vd.vls_mask, expect_vls);
	EXPECT_EQ(v.levels, 2);
	/* Fig. 8: level 1 exactly from a global in-port to a local out-port */
	for (uint32_t s = 0; s < d->f.nsw; s++)
		for (unsigned in = 1; in < d->f.sw[s].num_ports; in++)
			for (unsigned out = 1; out < d->f.sw[s].num_ports; out++)
				EXPECT_EQ(dla_turn_level(&v, s, in, out),
					  dla_port_role(&r, s, in) == DLA_ROLE_GLOBAL &&
						  dla_port_role(&r, s, out) == DLA_ROLE_LOCAL);
	/* the closed form is the fixpoint's result on a pristine fabric, turn by turn */
	{
		struct dla_vl fx;

		EXPECT_EQ(dla_vl_assign_fixpoint(&d->f, &r, 2, &fx, err, sizeof(err)), 0);
		EXPECT_EQ(fx.levels, v.levels);
		EXPECT_EQ(memcmp(fx.level, v.level, v.turn_off[d->f.nsw]), 0);
		EXPECT_EQ(memcmp(fx.port_levels, v.port_levels, r.port_off[d->f.nsw]), 0);
		dla_vl_free(&fx);
	}
	/* every global link carries routes */
	for (uint32_t s = 0; s < d->f.nsw; s++)
		for (unsigned p = 1; p < d->f.sw[s].num_ports; p++)
			if (dla_port_role(&r, s, p) == DLA_ROLE_GLOBAL)
				EXPECT(r.routes[r.port_off[s] + p] > 0);
	dla_vl_free(&v);
	dla_routes_free(&r);
	dla_groups_free(&g);
}

/* Switch links from s to t on a clique group: 0, or 1 if linked. */
static unsigned local_dist(const struct dla_fabric *f, uint32_t s, uint32_t t)
{
	if (s == t)
		return 0;
	for (unsigned p = 1; p < f->sw[s].num_ports; p++)
		if (f->sw[s].ports[p].peer_kind == DLA_PEER_SWITCH &&
		    f->sw[s].ports[p].peer_sw == t)
			return 1;
	return 99;
}

/*
 * Minimal with several global links per group pair: from every switch to every other
 * group's switch LIDs, the route takes no more links than the best local-global-local path
 * (a link landing on the destination switch saves the local hop after it). Returns the
 * number of longer routes.
 */
static unsigned longer_than_lgl(const struct dla_fabric *f, const struct dla_groups *g,
				const struct dla_routes *r)
{
	unsigned longer = 0;

	for (uint32_t s = 0; s < f->nsw; s++)
		for (uint32_t t = 0; t < f->nsw; t++) {
			unsigned best = 99, hops = 0;
			uint32_t at = s;

			if (g->group_of[s] == g->group_of[t])
				continue;
			for (uint32_t u = 0; u < f->nsw; u++)
				for (unsigned p = 1; p < f->sw[u].num_ports; p++) {
					const struct dla_port *pt = &f->sw[u].ports[p];
					unsigned d;

					if (pt->peer_kind != DLA_PEER_SWITCH ||
					    g->group_of[u] != g->group_of[s] ||
					    g->group_of[pt->peer_sw] != g->group_of[t])
						continue;
					d = local_dist(f, s, u) + 1 + local_dist(f, pt->peer_sw, t);
					best = d < best ? d : best;
				}
			while (at != t && hops < 8) {
				uint8_t p = dla_lft_row(r, at)[f->sw[t].lid];

				at = f->sw[at].ports[p].peer_sw;
				hops++;
			}
			longer += hops > best;
		}
	return longer;
}

/*
 * Two groups of three; x0 has two links to Y (to y1 and y0), x1 one (to y0), x2 none. Towards
 * y0, x2 must go through x0 or x1 straight onto y0 and x0 must take its own link to y0: the
 * shared-out choice used to send some destinations over x0 -> y1, a local hop too many.
 */
static void minimal_exits(void)
{
	static const uint32_t labels[6] = {0, 0, 0, 1, 1, 1};
	struct dla_fabric f;
	struct dla_groups g;
	struct dla_routes r;
	char err[256];

	EXPECT_EQ(dla_fabric_init(&f, 6, 12), 0);
	for (uint32_t s = 0; s < 6; s++) {
		EXPECT_EQ(dla_fabric_set_switch(&f, s, 0x100 + s, "sw", (uint16_t)(s + 1), 8), 0);
		EXPECT_EQ(dla_fabric_attach_endport(&f, s, 3, (uint16_t)(s + 7)), 0);
	}
	for (uint32_t base = 0; base < 6; base += 3) { /* local cliques on ports 1, 2 */
		EXPECT_EQ(dla_fabric_link(&f, base, 1, base + 1, 1), 0);
		EXPECT_EQ(dla_fabric_link(&f, base, 2, base + 2, 1), 0);
		EXPECT_EQ(dla_fabric_link(&f, base + 1, 2, base + 2, 2), 0);
	}
	EXPECT_EQ(dla_fabric_link(&f, 0, 4, 4, 4), 0); /* x0 - y1 */
	EXPECT_EQ(dla_fabric_link(&f, 0, 5, 3, 4), 0); /* x0 - y0 */
	EXPECT_EQ(dla_fabric_link(&f, 1, 4, 3, 5), 0); /* x1 - y0 */
	EXPECT_EQ(dla_groups_from_labels(&g, labels, 6), 0);
	EXPECT_EQ(dla_routes_build(&f, &g, NULL, &r, err, sizeof(err)), 0);
	EXPECT_EQ(longer_than_lgl(&f, &g, &r), 0);
	dla_routes_free(&r);
	dla_groups_free(&g);
	dla_fabric_free(&f);
}

void test_route(void)
{
	minimal_exits();
	static const uint8_t one_class[16];
	static const uint8_t four[16] = {0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0};
	struct df d;

	df_build(&d, 4, 2, 2, 9);
	check_routes(&d, 0x3);
	df_free(&d);
	df_build(&d, 3, 2, 3, 7);
	check_routes(&d, 0x3);
	df_free(&d);
	df_build(&d, 4, 2, 2, 5);
	check_routes(&d, 0x3);
	df_free(&d);

	/* several global links per pair: per-link route counts stay within one destination's
	 * worth of routes of each other */
	{
		struct dla_groups g;
		struct dla_routes r;
		char err[256];

		df_build(&d, 4, 2, 2, 5);
		int exact;

		dla_groups_discover(&d.f, 0, &g, &exact, err, sizeof(err));
		dla_routes_build(&d.f, &g, NULL, &r, err, sizeof(err));
		for (uint32_t x = 0; x < g.ngroups; x++)
			for (uint32_t y = 0; y < g.ngroups; y++) {
				uint32_t lo = UINT32_MAX, hi = 0;

				if (x == y)
					continue;
				for (uint32_t s = 0; s < d.f.nsw; s++)
					for (unsigned p = 1; p < d.f.sw[s].num_ports; p++) {
						const struct dla_port *pt = &d.f.sw[s].ports[p];
						uint32_t n;

						if (dla_port_role(&r, s, p) != DLA_ROLE_GLOBAL ||
						    g.group_of[s] != x ||
						    g.group_of[pt->peer_sw] != y)
							continue;
						n = r.routes[r.port_off[s] + p];
						lo = n < lo ? n : lo;
						hi = n > hi ? n : hi;
					}
				/* 4 switches x 12 LIDs per group: at most one switch's share apart */
				EXPECT(hi - lo <= 2 * 12);
			}
		EXPECT_EQ(longer_than_lgl(&d.f, &g, &r), 0);
		dla_routes_free(&r);
		dla_groups_free(&g);
		df_free(&d);
	}

	EXPECT_EQ(dla_vls_needed(one_class, 2, 2), 2);
	EXPECT_EQ(dla_vls_needed(one_class, 3, 1), 1);
	EXPECT_EQ(dla_vls_needed(four, 2, 2), 8);
	EXPECT_EQ(dla_vls_needed(four, 3, 3), 12);
	EXPECT_EQ(dla_vl(four, 2, 5, 1), 5);
	EXPECT_EQ(dla_vl(four, 3, 5, 2), 8);
	EXPECT_EQ(dla_vl(four, 2, 7, 0), 6);
}
