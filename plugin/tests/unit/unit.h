/* Minimal test helpers: a failure counter and EXPECT macros, no framework. */
#ifndef IBQOS_UNIT_H
#define IBQOS_UNIT_H

#include <stdio.h>
#include <string.h>

#include "dla_fabric.h"

extern int unit_failures;

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);        \
			unit_failures++;                                                           \
		}                                                                                  \
	} while (0)
#define EXPECT_EQ(a, b)                                                                            \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__,      \
				__LINE__, #a, _a, #b, _b);                                         \
			unit_failures++;                                                           \
		}                                                                                  \
	} while (0)
#define EXPECT_STR_HAS(s, sub)                                                                     \
	do {                                                                                       \
		if (!strstr((s), (sub))) {                                                         \
			fprintf(stderr, "%s:%d: '%s' lacks '%s'\n", __FILE__, __LINE__, (s),       \
				(sub));                                                            \
			unit_failures++;                                                           \
		}                                                                                  \
	} while (0)

/* A dragonfly built like ci-sim's generator (hosts, local ports by peer index, globals dealt
 * round-robin over group pairs). group[s] receives each switch's true group. */
struct df {
	struct dla_fabric f;
	unsigned a, p, h, g;
	unsigned *group;
};
int df_build(struct df *d, unsigned a, unsigned p, unsigned h, unsigned g);
/* Global links as the generator deals them: over group pairs by distance, round-robin while
 * both groups have free slots (slots per group); link(ctx, G, nG, H, nH) joins G's nG-th slot
 * to H's nH-th. */
void deal_global_links(unsigned g, unsigned slots,
		       void (*link)(void *ctx, unsigned G, unsigned nG, unsigned H, unsigned nH),
		       void *ctx);
/* Other global wirings (df_wired.c); absolute, relative and circulant need g = a*h + 1
 * (circulant also a*h even); shuffle permutes every switch's port numbers. */
enum df_wiring { DF_PAIR_ORDER, DF_ABSOLUTE, DF_RELATIVE, DF_CIRCULANT, DF_RANDOM };
int df_build_wired(struct df *d, unsigned a, unsigned p, unsigned h, unsigned g, enum df_wiring w,
		   unsigned seed, int shuffle);
void df_unlink(struct df *d, unsigned s, unsigned port);
/* index of switch i of group G */
static inline unsigned df_sw(const struct df *d, unsigned G, unsigned i)
{
	return G * d->a + i;
}
void df_free(struct df *d);
int fat_tree_build(struct dla_fabric *f, unsigned leaves, unsigned spines, unsigned hosts);
/* A copy of src without switch `dead` (its end ports go with it); indices above it shift.
 * DLA_NO_SWITCH: a plain copy. */
/* The group labels of nsw switches without switch `dead` (DLA_NO_SWITCH: all): a stored map
 * after the switch died. Malloc'd. */
uint32_t *labels_without(const unsigned *group, uint32_t nsw, uint32_t dead);
int fabric_without_switch(const struct dla_fabric *src, uint32_t dead, struct dla_fabric *dst);

/* A dragonfly+ (dfp_build.c): per group `leaves` leaves with `hosts` CAs each (uneven: 0 ..
 * 2*hosts, seeded) and `spines` spines with `globals` global ports each, every leaf linked to
 * every spine; global slots dealt over group pairs by distance as df_build does; shuffle
 * permutes every switch's port numbers. Switch i of group G is G*(leaves+spines)+i, leaves
 * first. group[s] and role[s] (enum dla_sw_role) are the truth. */
struct dfp_spec {
	unsigned leaves, spines, hosts, globals, groups, seed;
	int shuffle, uneven;
};
struct dfp {
	struct dla_fabric f;
	struct dfp_spec spec;
	unsigned *group;
	uint8_t *role;
	uint8_t *perm;
};
int dfp_build(struct dfp *d, const struct dfp_spec *sp);
void dfp_free(struct dfp *d);
void test_dfplus(void);
void test_discover(void);
void test_route(void);
void test_tables(void);
void test_faults(void);
void test_wirings(void);
void test_refusals(void);
void test_vlcap(void);
void test_group_vectors(void);
void test_groupmap(void);

#endif
