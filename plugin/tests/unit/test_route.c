#include "unit.h"
#include "dla_route.h"
#include "dla_sl2vl.h"

#include <stdlib.h>

/* Channel = (switch, out port, VL); edges between consecutive channels of every route. */
struct cdg {
	uint32_t nch;
	uint8_t *adj;	/* nch x nch */
};

static uint32_t ch(const struct dla_routes *r, uint32_t s, unsigned p, unsigned vl)
{
	return (r->port_off[s] + p) * 8 + vl;
}

static int cyclic_from(const struct cdg *c, uint32_t v, uint8_t *state)
{
	state[v] = 1;
	for (uint32_t w = 0; w < c->nch; w++) {
		if (!c->adj[(size_t)v * c->nch + w])
			continue;
		if (state[w] == 1 || (state[w] == 0 && cyclic_from(c, w, state)))
			return 1;
	}
	state[v] = 2;
	return 0;
}

static void check_routes(struct df *d, const uint8_t sl2class[16], int expect_hi_vl)
{
	struct dla_groups g;
	struct dla_routes r;
	struct cdg c;
	char err[512] = "";
	unsigned max_hops = 0, vls_used = 0;

	EXPECT_EQ(dla_groups_discover(&d->f, &g, err, sizeof(err)), 0);
	EXPECT_EQ(dla_routes_build(&d->f, &g, &r, err, sizeof(err)), 0);
	c.nch = r.port_off[d->f.nsw] * 8;
	c.adj = calloc((size_t)c.nch * c.nch, 1);
	for (uint32_t src = 0; src < d->f.nsw; src++)
		for (unsigned lid = 1; lid <= d->f.max_lid; lid++) {
			uint32_t s = src, prev_ch = UINT32_MAX;
			unsigned in = 1, hops = 0, globals = 0, sl = lid % 16;	/* in: a terminal */
			enum dla_role in_role = DLA_ROLE_TERMINAL;

			if (dla_lft_row(&r, src)[lid] == DLA_NO_PATH) {
				EXPECT(!"LID without a route");
				continue;
			}
			for (;;) {
				uint8_t out = dla_lft_row(&r, s)[lid];
				enum dla_role out_role;
				unsigned vl;
				uint32_t chn;

				if (out == 0 || d->f.sw[s].ports[out].peer_kind == DLA_PEER_ENDPORT) {
					if (out == 0)
						EXPECT_EQ(d->f.sw[s].lid, lid);
					else
						EXPECT_EQ(d->f.sw[s].ports[out].endport_lid, lid);
					break;
				}
				out_role = dla_port_role(&r, s, out);
				vl = dla_switch_vl(sl2class, sl, in_role, out_role);
				vls_used |= 1u << vl;
				chn = ch(&r, s, out, vl);
				if (prev_ch != UINT32_MAX)
					c.adj[(size_t)prev_ch * c.nch + chn] = 1;
				prev_ch = chn;
				globals += out_role == DLA_ROLE_GLOBAL;
				in = d->f.sw[s].ports[out].peer_port;
				s = d->f.sw[s].ports[out].peer_sw;
				in_role = dla_port_role(&r, s, in);
				if (++hops > 3)
					break;
			}
			EXPECT(hops <= 3);
			EXPECT(globals <= 1);
			max_hops = hops > max_hops ? hops : max_hops;
		}
	{
		uint8_t *state = calloc(c.nch, 1);
		int cyc = 0;

		for (uint32_t v = 0; v < c.nch && !cyc; v++)
			if (!state[v])
				cyc = cyclic_from(&c, v, state);
		EXPECT(!cyc);
		free(state);
	}
	EXPECT_EQ(max_hops, d->a > 1 ? 3 : 1);
	EXPECT_EQ(vls_used, expect_hi_vl);
	/* global links of one group pair share the routes evenly (within one destination) */
	for (uint32_t s = 0; s < d->f.nsw; s++)
		for (unsigned p = 1; p < d->f.sw[s].num_ports; p++)
			if (dla_port_role(&r, s, p) == DLA_ROLE_GLOBAL)
				EXPECT(r.routes[r.port_off[s] + p] > 0);
	free(c.adj);
	dla_routes_free(&r);
	dla_groups_free(&g);
}

void test_route(void)
{
	static const uint8_t one_class[16];
	static const uint8_t four[16] = { 0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct df d;

	df_build(&d, 4, 2, 2, 9);
	check_routes(&d, one_class, 0x3);
	check_routes(&d, four, 0xff);
	df_free(&d);
	df_build(&d, 3, 2, 3, 7);
	check_routes(&d, one_class, 0x3);
	df_free(&d);
	df_build(&d, 4, 2, 2, 5);
	check_routes(&d, one_class, 0x3);
	df_free(&d);

	/* several global links per pair: per-link route counts stay within one destination's
	 * worth of routes of each other */
	{
		struct dla_groups g;
		struct dla_routes r;
		char err[256];

		df_build(&d, 4, 2, 2, 5);
		dla_groups_discover(&d.f, &g, err, sizeof(err));
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
						    g.group_of[s] != x || g.group_of[pt->peer_sw] != y)
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

	EXPECT_EQ(dla_vls_needed(one_class, 1), 2);
	EXPECT_EQ(dla_vls_needed(one_class, 0), 1);
	EXPECT_EQ(dla_vls_needed(four, 1), 8);
	EXPECT_EQ(dla_vls_from_code(4), 8);
	EXPECT_EQ(dla_switch_vl(four, 5, DLA_ROLE_GLOBAL, DLA_ROLE_LOCAL), 5);
	EXPECT_EQ(dla_switch_vl(four, 5, DLA_ROLE_LOCAL, DLA_ROLE_GLOBAL), 4);
	EXPECT_EQ(dla_switch_vl(four, 5, DLA_ROLE_GLOBAL, DLA_ROLE_TERMINAL), 4);
	EXPECT_EQ(dla_ca_vl(four, 7), 6);
}
