/*
 * dla on dragonflies our generator would not draw: global links in group-pair order (the
 * 42-node CELLIA fabric of seed 003 5.3 among them), the absolute, relative and circulant
 * arrangements, random matchings, shuffled port numbers, several links per group pair.
 * Every one must be found exact and routed as Fig. 4 with Fig. 8's two VLs.
 */
#include "unit.h"
#include "judge.h"
#include "dla_compute.h"

static const char *wname[] = {"pair-order", "absolute", "relative", "circulant", "random"};

static void wired_ok(unsigned a, unsigned p, unsigned h, unsigned g, enum df_wiring w,
		     unsigned seed, int shuffle)
{
	struct df d;
	struct dla_result res;
	struct verdict v;
	char note[512], err[768] = "";
	int ret;

	df_build_wired(&d, a, p, h, g, w, seed, shuffle);
	ret = dla_compute(&d.f, NULL, NULL, NULL, 2, &res, note, sizeof(note), err, sizeof(err));
	if (ret) {
		fprintf(stderr, "  %s a=%u h=%u g=%u seed %u shuffle %d: %s\n", wname[w], a, h, g,
			seed, shuffle, err);
		EXPECT_EQ(ret, 0);
		df_free(&d);
		return;
	}
	judge(&d.f, &res.groups, &res.routes, &res.vl, 2, &v);
	EXPECT_EQ(res.source, DLA_GROUPS_FOUND);
	EXPECT_EQ(res.groups.ngroups, g);
	EXPECT_EQ(v.delivered, v.routes);
	EXPECT(!v.cyclic);
	EXPECT(v.max_hops <= 3 && v.max_globals <= 1 && v.max_locals_after_global <= 1);
	EXPECT_EQ(res.vl.levels, 2);
	if (v.delivered != v.routes || v.cyclic || v.max_hops > 3 || res.vl.levels != 2)
		fprintf(stderr,
			"  %s a=%u h=%u g=%u seed %u shuffle %d: delivered %u/%u hops %u "
			"levels %u\n",
			wname[w], a, h, g, seed, shuffle, v.delivered, v.routes, v.max_hops,
			res.vl.levels);
	dla_result_free(&res);
	df_free(&d);
}

void test_wirings(void)
{
	static const unsigned dealt[][4] = {
		/* a, p, h, g: several links per pair allowed */
		{3, 2, 3, 7}, {3, 2, 3, 5},  {2, 2, 2, 4}, {4, 2, 2, 9},
		{4, 2, 2, 5}, {6, 3, 3, 19}, {2, 1, 1, 3}, {3, 1, 2, 4},
	};
	static const unsigned full[][3] = {
		/* a, p, h with g = a*h + 1 */
		{3, 2, 3}, {4, 2, 2}, {6, 3, 3}, {3, 2, 2}, {2, 2, 2},
	};

	for (int shuffle = 0; shuffle < 2; shuffle++) {
		for (size_t i = 0; i < sizeof(dealt) / sizeof(dealt[0]); i++) {
			const unsigned *x = dealt[i];

			wired_ok(x[0], x[1], x[2], x[3], DF_PAIR_ORDER, 7, shuffle);
			for (unsigned seed = 1; seed <= 4; seed++)
				wired_ok(x[0], x[1], x[2], x[3], DF_RANDOM, seed, shuffle);
		}
		for (size_t i = 0; i < sizeof(full) / sizeof(full[0]); i++) {
			const unsigned *x = full[i], g = x[0] * x[2] + 1;

			wired_ok(x[0], x[1], x[2], g, DF_ABSOLUTE, 3, shuffle);
			wired_ok(x[0], x[1], x[2], g, DF_RELATIVE, 3, shuffle);
			if (x[0] * x[2] % 2 == 0)
				wired_ok(x[0], x[1], x[2], g, DF_CIRCULANT, 3, shuffle);
		}
	}
}
