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
	EXPECT_EQ(dla_routes_build(&d->f, &g, &r, err, sizeof(err)), 0);
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

void test_route(void)
{
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
		dla_routes_build(&d.f, &g, &r, err, sizeof(err));
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
		dla_routes_free(&r);
		dla_groups_free(&g);
		df_free(&d);
	}

	EXPECT_EQ(dla_vls_needed(one_class, 2, 2), 2);
	EXPECT_EQ(dla_vls_needed(one_class, 3, 1), 1);
	EXPECT_EQ(dla_vls_needed(four, 2, 2), 8);
	EXPECT_EQ(dla_vls_needed(four, 3, 3), 12);
	EXPECT_EQ(dla_vls_from_code(4), 8);
	EXPECT_EQ(dla_vl(four, 2, 5, 1), 5);
	EXPECT_EQ(dla_vl(four, 3, 5, 2), 8);
	EXPECT_EQ(dla_vl(four, 2, 7, 0), 6);
}
