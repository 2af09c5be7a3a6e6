/*
 * dla on dragonfly+ (dfp_build.c), judged by the independent route walker (judge.c): fresh
 * discovery finds the generator's groups and leaf/spine roles, pristine routes are minimal
 * (leaf, spine, global, spine, leaf) within 2 VLs per class; every single fault (leaf-spine
 * link, spine, global link, leaf) and seeded double faults on the stored groups, and on a
 * fresh start without them, are routed acyclic within 3 VLs or refused with a reason (a
 * single fault at a fresh start as on the stored groups, within as many VLs); wirings the generator does not draw
 * (shuffled ports, uneven hosts, several globals per group pair, a missing spine).
 */
#include "unit.h"
#include "judge.h"
#include "dla_compute.h"

#include <stdlib.h>

struct run {
	struct outcome o;
	uint32_t leaf_ca_hops; /* most links from a leaf to a CA LID */
	uint32_t gmax, gmin, glinks;
	uint64_t gsum;
};

static void route(const struct dla_fabric *f, const uint32_t *stored, unsigned stride,
		  struct run *o)
{
	struct dla_result res;

	memset(o, 0, sizeof(*o));
	o->gmin = UINT32_MAX;
	judged_compute(f, stored, stride, &o->o, &res);
	if (o->o.ret)
		return;
	for (uint32_t s = 0; s < f->nsw; s++) {
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			uint32_t n = res.routes.routes[res.routes.port_off[s] + p];

			if (dla_port_role(&res.routes, s, p) != DLA_ROLE_GLOBAL)
				continue;
			o->glinks++;
			o->gsum += n;
			o->gmax = n > o->gmax ? n : o->gmax;
			o->gmin = n < o->gmin ? n : o->gmin;
		}
		if (res.routes.swrole[s] != DLA_SW_LEAF)
			continue;
		for (uint32_t t = 0; t < f->nsw; t++)
			for (unsigned p = 1; p < f->sw[t].num_ports; p++) {
				uint16_t lid = f->sw[t].ports[p].endport_lid;
				uint8_t h;

				if (f->sw[t].ports[p].peer_kind != DLA_PEER_ENDPORT || !lid)
					continue;
				h = dla_hops_row(&res.routes, s)[lid];
				if (h != DLA_NO_PATH && h > o->leaf_ca_hops)
					o->leaf_ca_hops = h;
			}
	}
	dla_result_free(&res);
}

static int clean(const struct outcome *o, unsigned stride)
{
	return o->ret == 0 && o->v.delivered == o->v.routes && !o->v.looped && !o->v.cyclic &&
		o->levels <= stride;
}

/* Fresh discovery gives the generator's groups and roles; pristine routes are minimal, acyclic,
 * within 2 VLs. */
static void pristine(const struct dfp_spec *sp, const char *what)
{
	struct dfp d;
	struct dla_result res;
	struct run o;
	char note[768], err[768] = "";
	int ret;

	dfp_build(&d, sp);
	ret = dla_compute(&d.f, NULL, NULL, NULL, 2, &res, note, sizeof(note), err, sizeof(err));
	EXPECT_EQ(ret, 0);
	if (ret) {
		fprintf(stderr, "  dragonfly+ %s: %s\n", what, err);
		dfp_free(&d);
		return;
	}
	EXPECT_EQ(res.source, DLA_GROUPS_FOUND);
	EXPECT_EQ(res.groups.ngroups, sp->groups);
	EXPECT_EQ(res.routes.leafspine, sp->groups);
	for (uint32_t s = 0; s < d.f.nsw; s++) {
		for (uint32_t t = s + 1; t < d.f.nsw; t++)
			if ((res.groups.group_of[s] == res.groups.group_of[t]) !=
			    (d.group[s] == d.group[t])) {
				EXPECT(!"groups differ from the generator's");
				t = s = d.f.nsw;
			}
		if (s < d.f.nsw && res.routes.swrole[s] != d.role[s]) {
			fprintf(stderr, "  %s: switch %u is %s, built as %s\n", what, s,
				dla_sw_role_name(res.routes.swrole[s]),
				dla_sw_role_name(d.role[s]));
			unit_failures++;
		}
	}
	dla_result_free(&res);
	route(&d.f, NULL, 2, &o);
	EXPECT(clean(&o.o, 2));
	EXPECT(o.o.levels <= 2);
	EXPECT(o.o.v.max_globals <= 1);
	EXPECT(o.leaf_ca_hops <= 4); /* leaf, spine, global, spine, leaf: 3 links, then the CA */
	fprintf(stderr,
		"  dragonfly+ %s (%u switches): levels %u, delivered %u/%u, cyclic %d, most hops "
		"leaf to CA %u, routes per global link min %u max %u mean %.1f\n",
		what, d.f.nsw, o.o.levels, o.o.v.delivered, o.o.v.routes, o.o.v.cyclic,
		o.leaf_ca_hops, o.gmin, o.gmax, o.glinks ? (double)o.gsum / o.glinks : 0.0);
	dfp_free(&d);
}

struct tally {
	unsigned tried, routed, refused, bad, worst;
};

static void count(struct tally *t, const struct outcome *o, const char *what, const char *fault)
{
	t->tried++;
	if (clean(o, 3)) {
		t->routed++;
		t->worst = o->levels > t->worst ? o->levels : t->worst;
	} else if (o->ret == -22 && *o->err) {
		t->refused++; /* refused with its reason: OpenSM falls back */
		fprintf(stderr, "  %s %s refused: %s\n", what, fault, o->err);
	} else {
		t->bad++;
		fprintf(stderr, "  %s %s: ret %d levels %u delivered %u/%u looped %u cyclic %d\n",
			what, fault, o->ret, o->levels, o->v.delivered, o->v.routes, o->v.looped,
			o->v.cyclic);
	}
}

/* Print and check a campaign: nothing cyclic, lost or beyond 3 levels. */
static void tally_done(const struct tally *t, const char *what, const char *kind)
{
	fprintf(stderr,
		"  dragonfly+ %s %s faults: %u tried, %u routed (at most %u levels), %u refused "
		"with a reason, %u bad\n",
		what, kind, t->tried, t->routed, t->worst, t->refused, t->bad);
	EXPECT_EQ(t->bad, 0);
	EXPECT(t->worst <= 3);
}

static void unlink_port(struct dla_fabric *f, uint32_t s, unsigned p)
{
	struct dla_port *pt = &f->sw[s].ports[p];

	f->sw[pt->peer_sw].ports[pt->peer_port] = (struct dla_port){0};
	*pt = (struct dla_port){0};
}

/* The same fault on a fresh start (no stored map, docs/groups.md step 0): routed whenever the
 * stored map routes it, within as many levels. */
static void fresh_as_stored(struct tally *t, const struct dla_fabric *f, const struct run *stored,
			    const char *what, const char *fault)
{
	struct run o;

	route(f, NULL, 3, &o);
	count(t, &o.o, what, fault);
	if (clean(&stored->o, 3) && !(clean(&o.o, 3) && o.o.levels <= stored->o.levels)) {
		fprintf(stderr, "  %s %s at boot: ret %d levels %u, stored map %u levels: %s\n",
			what, fault, o.o.ret, o.o.levels, stored->o.levels, o.o.err);
		t->bad++;
	}
}

/* Every leaf-spine link, spine, global link and leaf, on the groups a running SM stored, and
 * on a fresh start. */
static void single_faults(const struct dfp_spec *sp, const char *what)
{
	struct dfp d;
	struct tally t = {0}, boot = {0};
	struct run o;
	char fault[64];

	dfp_build(&d, sp);
	for (uint32_t s = 0; s < d.f.nsw; s++)
		for (unsigned p = 1; p < d.f.sw[s].num_ports; p++) {
			struct dla_port keep = d.f.sw[s].ports[p];
			uint32_t *st;

			if (keep.peer_kind != DLA_PEER_SWITCH || keep.peer_sw < s)
				continue;
			st = labels_without(d.group, d.f.nsw, DLA_NO_SWITCH);
			unlink_port(&d.f, s, p);
			route(&d.f, st, 3, &o);
			snprintf(fault, sizeof(fault), "%s link %u/%u",
				 d.group[s] == d.group[keep.peer_sw] ? "leaf-spine" : "global", s,
				 p);
			count(&t, &o.o, what, fault);
			fresh_as_stored(&boot, &d.f, &o, what, fault);
			d.f.sw[s].ports[p] = keep;
			d.f.sw[keep.peer_sw].ports[keep.peer_port] =
				(struct dla_port){.peer_kind = DLA_PEER_SWITCH,
						  .peer_port = (uint8_t)p,
						  .peer_sw = s};
			free(st);
		}
	for (uint32_t s = 0; s < d.f.nsw; s++) {
		struct dla_fabric f;
		uint32_t *st = labels_without(d.group, d.f.nsw, s);

		fabric_without_switch(&d.f, s, &f);
		route(&f, st, 3, &o);
		snprintf(fault, sizeof(fault), "%s %u", dla_sw_role_name(d.role[s]), s);
		count(&t, &o.o, what, fault);
		fresh_as_stored(&boot, &f, &o, what, fault);
		dla_fabric_free(&f);
		free(st);
	}
	tally_done(&t, what, "single");
	tally_done(&boot, what, "single, fresh start,");
	EXPECT(t.routed >= t.tried * 9 / 10);
	EXPECT_EQ(boot.routed, t.routed);
	dfp_free(&d);
}

/* Seeded double faults: two switch-to-switch links, a link and a switch, or two switches. */
static void double_faults(const struct dfp_spec *sp, const char *what, unsigned n)
{
	struct dfp d;
	struct tally t = {0}, boot = {0};
	struct run o;
	uint32_t x = 88172645u;
	char fault[96];

	dfp_build(&d, sp);
	for (unsigned i = 0; i < n; i++) {
		struct dla_fabric f;
		uint32_t dead = DLA_NO_SWITCH, *st;
		unsigned links = 0;

		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		snprintf(fault, sizeof(fault), "double #%u:", i);
		if (i % 3 == 2) {
			dead = x % d.f.nsw;
			snprintf(fault + strlen(fault), sizeof(fault) - strlen(fault), " switch %u",
				 dead);
		}
		fabric_without_switch(&d.f, dead, &f);
		while (links < (i % 3 == 2 ? 1u : 2u)) {
			uint32_t s;
			unsigned p;

			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			s = x % f.nsw;
			p = 1 + (x >> 8) % (f.sw[s].num_ports - 1);
			if (f.sw[s].ports[p].peer_kind != DLA_PEER_SWITCH)
				continue;
			unlink_port(&f, s, p);
			snprintf(fault + strlen(fault), sizeof(fault) - strlen(fault),
				 " link %u/%u", s, p);
			links++;
		}
		st = labels_without(d.group, d.f.nsw, dead);
		route(&f, st, 3, &o);
		count(&t, &o.o, what, fault);
		route(&f, NULL, 3, &o);
		count(&boot, &o.o, what, fault);
		free(st);
		dla_fabric_free(&f);
	}
	tally_done(&t, what, "double");
	tally_done(&boot, what, "double, fresh start,");
	dfp_free(&d);
}

/* A group short of a spine (its group pairs that spine would have linked go through a third
 * group): found afresh, routed within 3 VLs. */
static void missing_spine(const struct dfp_spec *sp)
{
	struct dfp d;
	struct dla_fabric f;
	struct run o;

	dfp_build(&d, sp);
	fabric_without_switch(&d.f, 2 * (sp->leaves + sp->spines) + sp->leaves + 1, &f);
	route(&f, NULL, 3, &o);
	EXPECT(clean(&o.o, 3));
	fprintf(stderr, "  dragonfly+ missing a spine: ret %d levels %u delivered %u/%u %s\n",
		o.o.ret, o.o.levels, o.o.v.delivered, o.o.v.routes, o.o.err);
	dla_fabric_free(&f);
	dfp_free(&d);
}

/*
 * Wirings no installer meant: n seeded random cable swaps (a-b, c-d becomes a-d, c-b) between
 * switch-to-switch links, some links then pulled. Fresh discovery always ends within its step
 * budget, and whatever it finds is usable (docs/groups.md); it may refuse.
 */
static void scrambled(const struct dfp_spec *sp, unsigned n)
{
	struct dfp d;
	uint32_t x = 2463534242u;
	unsigned found = 0, refused = 0;
	long most = 0;

	dfp_build(&d, sp);
	for (unsigned i = 0; i < n; i++) {
		struct dla_fabric f;
		struct dla_groups g;
		struct dla_graph gr;
		char err[768], why[640];
		long steps;
		int exact, ret;

		fabric_without_switch(&d.f, DLA_NO_SWITCH, &f);
		for (unsigned k = 0; k < 1 + i % 6; k++) {
			uint32_t a, c;
			unsigned pa, pc;
			struct dla_port *A, *C;

			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			a = x % f.nsw, pa = 1 + (x >> 8) % (f.sw[a].num_ports - 1);
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			c = x % f.nsw, pc = 1 + (x >> 8) % (f.sw[c].num_ports - 1);
			A = &f.sw[a].ports[pa], C = &f.sw[c].ports[pc];
			if (A->peer_kind != DLA_PEER_SWITCH || C->peer_kind != DLA_PEER_SWITCH ||
			    a == c || A->peer_sw == c || C->peer_sw == a ||
			    A->peer_sw == C->peer_sw)
				continue;
			if (i % 4 == 3) { /* pull a link instead */
				unlink_port(&f, a, pa);
				continue;
			}
			struct dla_port b = *A, dd = *C;

			*A = dd, *C = b;
			f.sw[dd.peer_sw].ports[dd.peer_port].peer_sw = a;
			f.sw[dd.peer_sw].ports[dd.peer_port].peer_port = (uint8_t)pa;
			f.sw[b.peer_sw].ports[b.peer_port].peer_sw = c;
			f.sw[b.peer_sw].ports[b.peer_port].peer_port = (uint8_t)pc;
		}
		ret = dla_groups_discover_steps(&f, 0, &g, &exact, &steps, err, sizeof(err));
		most = steps > most ? steps : most;
		EXPECT(steps <= 10000000L);
		if (ret == 0) {
			found++;
			EXPECT_EQ(dla_graph_build(&f, &gr), 0);
			if (dla_groups_usable(&f, &gr, &g, why, sizeof(why))) {
				fprintf(stderr, "  scrambled #%u: found groups not usable: %s\n", i,
					why);
				EXPECT(!"discovery found unusable groups");
			}
			dla_graph_free(&gr);
			dla_groups_free(&g);
		} else {
			EXPECT_EQ(ret, -22);
			EXPECT(*err);
			refused++;
		}
		dla_fabric_free(&f);
	}
	fprintf(stderr,
		"  dragonfly+ scrambled wirings: %u tried, %u found (usable), %u refused, at most "
		"%ld steps\n",
		n, found, refused, most);
	dfp_free(&d);
}

void test_dfplus(void)
{
	struct dfp_spec small = {.leaves = 3, .spines = 3, .hosts = 2, .globals = 2, .groups = 7};
	struct dfp_spec issue = {.leaves = 4, .spines = 4, .hosts = 4, .globals = 2, .groups = 9};
	struct dfp_spec big = {.leaves = 8, .spines = 8, .hosts = 8, .globals = 2, .groups = 17};
	struct dfp_spec odd = issue;

	pristine(&small, "L3 S3 p2 h2 g7");
	pristine(&issue, "L4 S4 p4 h2 g9");
	pristine(&big, "L8 S8 p8 h2 g17 (1088 CAs)");
	odd.shuffle = 1, odd.seed = 3;
	pristine(&odd, "shuffled ports");
	odd.shuffle = 0, odd.uneven = 1;
	pristine(&odd, "uneven hosts");
	odd.uneven = 0, odd.groups = 5;
	pristine(&odd, "several globals per group pair (g5)");
	missing_spine(&issue);
	odd.leaves = odd.spines = 3, odd.hosts = 2;
	single_faults(&odd, "L3 S3 p2 h2 g5");
	single_faults(&small, "L3 S3 p2 h2 g7");
	single_faults(&issue, "L4 S4 p4 h2 g9");
	double_faults(&small, "L3 S3 p2 h2 g7", 20);
	double_faults(&issue, "L4 S4 p4 h2 g9", 20);
	scrambled(&small, 200);
	small.leaves = small.spines = 2, small.groups = 5;
	scrambled(&small, 200);
}
