/*
 * Every way the routing library refuses a fabric (-EINVAL from dla_compute, which the engine
 * logs as D1A0 and records as the reason) says why: what it names (a switch label, or that
 * there are no switches) and the rule broken. An empty reason is one line an admin cannot act
 * on. One small fabric per refusal, by the stage that refuses: groups, routes, VL levels. The
 * group-discovery refusals of the dragonfly+ reading and the unlinked groups are the golden
 * vectors' (test_group_vectors.c); the two budget ones need fabrics too large for a unit test.
 */
#include "unit.h"
#include "dla_compute.h"

#include <errno.h>

/* dla_compute on f refuses with a reason holding want, a rule, and subject (NULL: a switch
 * label, "0x"). */
static void refuses(const struct dla_fabric *f, unsigned budget, const char *want,
		    const char *subject, const char *what)
{
	struct dla_result res;
	char note[1024] = "", err[1024] = "";
	int ret = dla_compute(f, NULL, NULL, NULL, budget, &res, note, sizeof(note), err,
			      sizeof(err));

	EXPECT_EQ(ret, -EINVAL);
	EXPECT(*err);
	EXPECT_STR_HAS(err, want);
	EXPECT_STR_HAS(err, subject ? subject : "0x");
	EXPECT_STR_HAS(err, "[rule: ");
	if (ret != -EINVAL || !strstr(err, want) || !strstr(err, "[rule: "))
		fprintf(stderr, "  refusal %s: ret %d, reason '%s'\n", what, ret, err);
	if (!ret)
		dla_result_free(&res);
}

/* The port of switch u cabled to switch v (0: none). */
static unsigned port_to(const struct dla_fabric *f, uint32_t u, uint32_t v)
{
	for (unsigned p = 1; p < f->sw[u].num_ports; p++)
		if (f->sw[u].ports[p].peer_kind == DLA_PEER_SWITCH &&
		    f->sw[u].ports[p].peer_sw == v)
			return p;
	return 0;
}

/* Groups: no switches at all; a fat tree (no clique partition). */
static void groups_refused(void)
{
	struct dla_fabric f;

	dla_fabric_init(&f, 0, 0);
	refuses(&f, 2, "no switches", "no switches", "no switches");
	dla_fabric_free(&f);
	fat_tree_build(&f, 4, 2, 4);
	refuses(&f, 2, "do not split into groups that are cliques of", NULL, "fat tree");
	dla_fabric_free(&f);
}

/* Routes: an end port's LID past the LFT top the fabric declares; the reason names the
 * switch and port it hangs on. */
static void lid_above_top(void)
{
	struct df d;

	df_build(&d, 2, 1, 1, 3); /* switch 0: LID 1, its CA on port 1: LID 2 */
	d.f.sw[0].ports[1].endport_lid = (uint16_t)(d.f.max_lid + 1);
	refuses(&d.f, 2, "is above the LFT top", "\"sw-g0-s0\" port 1:", "LID above the top");
	df_free(&d);
}

/* VL levels: a pristine dragonfly needs 2 VLs per class, a fault 3 (the 72-CA dragonfly
 * without a global link, as test_faults.c's refusal_note). */
static void too_few_vls(void)
{
	struct df d;

	df_build(&d, 2, 1, 1, 3);
	refuses(&d.f, 1, "but 1 are available", NULL, "pristine, 1 VL");
	df_free(&d);
	df_build(&d, 4, 2, 2, 9);
	for (uint32_t t = 0; t < d.f.nsw; t++)
		if (d.group[t] != d.group[0] && port_to(&d.f, 0, t)) {
			df_unlink(&d, 0, port_to(&d.f, 0, t));
			break;
		}
	refuses(&d.f, 2, "need 3 VLs per class, but 2 are available", NULL, "global link down");
	df_free(&d);
}

/* What the plugin's snapshot never passes on (it treats the port as unplugged): the library
 * refuses a link from a port to itself, and port numbers past a switch's ports. */
static void links_refused(void)
{
	struct dla_fabric f;

	dla_fabric_init(&f, 2, 4);
	EXPECT_EQ(dla_fabric_set_switch(&f, 0, 0x10, "a", 1, 4), 0);
	EXPECT_EQ(dla_fabric_set_switch(&f, 1, 0x11, "b", 2, 4), 0);
	EXPECT_EQ(dla_fabric_set_switch(&f, 1, 0x11, "b", 2, 0), -EINVAL);
	EXPECT_EQ(dla_fabric_link(&f, 0, 2, 0, 2), -EINVAL);
	EXPECT_EQ(dla_fabric_link(&f, 0, 2, 0, 3), 0); /* a loopback cable: two ports */
	EXPECT_EQ(dla_fabric_link(&f, 0, 1, 1, 4), -EINVAL);
	EXPECT_EQ(dla_fabric_attach_endport(&f, 1, 4, 3), -EINVAL);
	dla_fabric_free(&f);
}

void test_refusals(void)
{
	groups_refused();
	lid_above_top();
	too_few_vls();
	links_refused();
}
