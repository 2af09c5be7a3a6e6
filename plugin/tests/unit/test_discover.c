#include "unit.h"
#include "dla_groups.h"

/* Discovered groups equal the generator's, up to renumbering. */
static void expect_true_groups(const struct df *d, const struct dla_groups *g)
{
	EXPECT_EQ(g->ngroups, d->g);
	for (uint32_t s = 0; s < d->f.nsw; s++)
		for (uint32_t t = 0; t < d->f.nsw; t++)
			if ((g->group_of[s] == g->group_of[t]) != (d->group[s] == d->group[t])) {
				EXPECT(!"switch grouping differs from the generator's");
				return;
			}
}

static void dragonfly_ok(unsigned a, unsigned p, unsigned h, unsigned g)
{
	struct df d;
	struct dla_groups grp;
	char err[512] = "";

	int exact = 0;

	df_build(&d, a, p, h, g);
	EXPECT_EQ(dla_groups_discover(&d.f, 0, &grp, &exact, err, sizeof(err)), 0);
	EXPECT_EQ(exact, 1);
	if (*err)
		fprintf(stderr, "  a=%u h=%u g=%u: %s\n", a, h, g, err);
	expect_true_groups(&d, &grp);
	dla_groups_free(&grp);
	df_free(&d);
}

static void refused(struct dla_fabric *f, const char *want1, const char *want2)
{
	struct dla_groups grp;
	char err[512] = "";
	int exact;

	EXPECT_EQ(dla_groups_discover(f, 0, &grp, &exact, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, want1);
	EXPECT_STR_HAS(err, want2);
	EXPECT(grp.group_of == NULL);
}

/*
 * Racks cabled by hand: rack r has sizes[r] switches, all linked; then the global cables
 * (rack, index, rack, index). Ports are taken in order; one end port per switch.
 */
static void hand_racks(struct dla_fabric *f, const unsigned *sizes, unsigned nracks,
		       const unsigned (*cables)[4], unsigned ncables, uint32_t *rack_of)
{
	unsigned first[16], n = 0, next[64];

	for (unsigned r = 0; r < nracks; r++)
		first[r] = n, n += sizes[r];
	EXPECT_EQ(dla_fabric_init(f, n, (uint16_t)(2 * n)), 0);
	for (uint32_t s = 0; s < n; s++) {
		EXPECT_EQ(dla_fabric_set_switch(f, s, 0x200 + s, "rack", (uint16_t)(s + 1), 16), 0);
		EXPECT_EQ(dla_fabric_attach_endport(f, s, 1, (uint16_t)(n + s + 1)), 0);
		next[s] = 2;
	}
	for (unsigned r = 0; r < nracks; r++)
		for (unsigned i = 0; i < sizes[r]; i++) {
			rack_of[first[r] + i] = r;
			for (unsigned j = i + 1; j < sizes[r]; j++) {
				uint32_t a = first[r] + i, b = first[r] + j;

				EXPECT_EQ(dla_fabric_link(f, a, (uint8_t)next[a]++, b,
							  (uint8_t)next[b]++),
					  0);
			}
		}
	for (unsigned k = 0; k < ncables; k++) {
		uint32_t a = first[cables[k][0]] + cables[k][1],
			 b = first[cables[k][2]] + cables[k][3];

		EXPECT_EQ(dla_fabric_link(f, a, (uint8_t)next[a]++, b, (uint8_t)next[b]++), 0);
	}
}

/* A rack only half populated (two of four switches, cabled to every other rack): read as
 * exact, groups of 4 and one of 2. */
static void partial_rack(void)
{
	static const unsigned sizes[5] = {4, 4, 4, 4, 2};
	static const unsigned cables[][4] = {{0, 0, 1, 1}, {0, 1, 2, 2}, {0, 2, 3, 3}, {1, 0, 2, 3},
					     {1, 2, 3, 0}, {2, 0, 3, 2}, {4, 0, 0, 3}, {4, 0, 1, 3},
					     {4, 1, 2, 1}, {4, 1, 3, 1}};
	struct dla_fabric f;
	struct dla_groups grp;
	uint32_t rack_of[18];
	char err[512] = "";
	int exact = 0;

	hand_racks(&f, sizes, 5, cables, 10, rack_of);
	EXPECT_EQ(dla_groups_discover(&f, 0, &grp, &exact, err, sizeof(err)), 0);
	EXPECT_EQ(exact, 1);
	EXPECT_EQ(grp.ngroups, 5);
	for (uint32_t s = 0; s < 18 && grp.group_of; s++)
		for (uint32_t t = 0; t < 18; t++)
			EXPECT_EQ(grp.group_of[s] == grp.group_of[t], rack_of[s] == rack_of[t]);
	dla_groups_free(&grp);
	dla_fabric_free(&f);
}

void test_discover(void)
{
	partial_rack();
	struct df d;
	struct dla_fabric ft;

	dragonfly_ok(4, 2, 2, 9);   /* 72 CAs */
	dragonfly_ok(3, 2, 3, 7);   /* 42 CAs: several links per pair, global triangles */
	dragonfly_ok(6, 3, 3, 19);  /* 342 */
	dragonfly_ok(8, 4, 4, 33);  /* 1056 */
	dragonfly_ok(10, 5, 5, 51); /* 2550 */
	dragonfly_ok(4, 2, 2, 5);   /* several links per pair */
	dragonfly_ok(2, 1, 1, 3);

	/* an unconnected group pair (its only global link is down): the groups are still
	 * found, as a degraded partition */
	df_build(&d, 4, 2, 2, 9);
	for (unsigned port = 6; port <= 7; port++)
		for (unsigned i = 0; i < 4; i++) {
			struct dla_port *pt = &d.f.sw[df_sw(&d, 0, i)].ports[port];

			if (pt->peer_kind == DLA_PEER_SWITCH && d.group[pt->peer_sw] == 1)
				df_unlink(&d, df_sw(&d, 0, i), port);
		}
	{
		struct dla_groups grp;
		char err[512] = "";
		int exact = 1;

		EXPECT_EQ(dla_groups_discover(&d.f, 0, &grp, &exact, err, sizeof(err)), 0);
		EXPECT_EQ(exact, 0);
		expect_true_groups(&d, &grp);
		dla_groups_free(&grp);
	}
	df_free(&d);

	fat_tree_build(&ft, 4, 2, 4);
	refused(&ft, "the 6 switches do not split into groups that are cliques of 2", "[rule: ");
	dla_fabric_free(&ft);
	fat_tree_build(&ft, 4, 4, 2); /* K4,4: pairs of (leaf, spine) are cliques of 2 */
	{
		struct dla_groups grp;
		char err[512] = "";
		int exact, r = dla_groups_discover(&ft, 0, &grp, &exact, err, sizeof(err));

		/* a complete bipartite graph is a valid a=2 dragonfly; DLA may route it */
		EXPECT(r == 0 || r == -22);
		dla_groups_free(&grp);
	}
	dla_fabric_free(&ft);

	/* unequal group sizes: a group of 4 and groups of 3 cannot be one dragonfly */
	{
		struct dla_fabric f;
		struct dla_groups grp;
		char err[512] = "";

		int exact;

		dla_fabric_init(&f, 0, 0);
		EXPECT_EQ(dla_groups_discover(&f, 0, &grp, &exact, err, sizeof(err)), -22);
		EXPECT_STR_HAS(err, "no switches");
	}
}
