/*
 * docs/group-vectors.txt (shared with manager/tests/test_group_vectors.py) against fresh group
 * discovery and the roles routing gives every switch port (spec: docs/groups.md). The format
 * is described at the top of the file.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "unit.h"
#include "dla_route.h"

#include <stdlib.h>

#define MAX_SW 256
#define MAX_PORT 64
/* A tenth of the discovery's step budget (dla_discover.c): today's fabrics stay well below. */
#define MAX_STEPS 1000000L

struct vec {
	char name[64];
	uint32_t nsw;
	unsigned nports[MAX_SW];
	int peer[MAX_SW][MAX_PORT]; /* -1 unconnected, -2 CA, else switch * 256 + port */
	uint32_t group[MAX_SW];	    /* expected label, DLA_NO_GROUP before `groups` */
	char role[MAX_SW][MAX_PORT][12];
	char swrole[MAX_SW][8]; /* `switch_roles`; empty: member */
	char refused[128];
};

static int build(const struct vec *v, struct dla_fabric *f)
{
	uint16_t lid = (uint16_t)(v->nsw + 1);

	if (dla_fabric_init(f, v->nsw, (uint16_t)(v->nsw * MAX_PORT + v->nsw + 1)))
		return -1;
	for (uint32_t s = 0; s < v->nsw; s++)
		if (dla_fabric_set_switch(f, s, 0x1000 + s, v->name, (uint16_t)(s + 1),
					  (uint8_t)(v->nports[s] + 1)))
			return -1;
	for (uint32_t s = 0; s < v->nsw; s++)
		for (unsigned p = 1; p <= v->nports[s]; p++) {
			int q = v->peer[s][p];

			if (q == -2 && dla_fabric_attach_endport(f, s, (uint8_t)p, lid++))
				return -1;
			/* each cable once: from its lower (switch, port) end */
			if (q >= 0 && (uint32_t)q > s * 256 + p &&
			    dla_fabric_link(f, s, (uint8_t)p, (uint32_t)q / 256,
					    (uint8_t)(q % 256)))
				return -1;
		}
	return 0;
}

static void check(const struct vec *v)
{
	struct dla_fabric f = {0};
	struct dla_groups g;
	struct dla_routes r;
	char err[768] = "";
	int exact;
	long steps;

	if (build(v, &f)) {
		EXPECT(!"vector fabric could not be built");
		dla_fabric_free(&f);
		return;
	}
	if (*v->refused) {
		EXPECT_EQ(dla_groups_discover_steps(&f, 0, &g, &exact, &steps, err, sizeof(err)),
			  -22);
		fprintf(stderr, "  group vector %s: refused in %ld search steps\n", v->name, steps);
		EXPECT_STR_HAS(err, v->refused);
		dla_fabric_free(&f);
		return;
	}
	EXPECT_EQ(dla_groups_discover_steps(&f, 0, &g, &exact, &steps, err, sizeof(err)), 0);
	fprintf(stderr, "  group vector %s: %u groups in %ld search steps\n", v->name, g.ngroups,
		steps);
	EXPECT(steps < MAX_STEPS);
	if (*err || !g.group_of) {
		fprintf(stderr, "  %s: %s\n", v->name, err);
		dla_fabric_free(&f);
		return;
	}
	for (uint32_t s = 0; s < v->nsw; s++)
		for (uint32_t t = 0; t < v->nsw; t++)
			if ((g.group_of[s] == g.group_of[t]) != (v->group[s] == v->group[t])) {
				fprintf(stderr, "  %s: switches %u and %u\n", v->name, s, t);
				EXPECT(!"partition differs from the vector's");
				s = t = v->nsw - 1;
			}
	EXPECT_EQ(dla_routes_build(&f, &g, NULL, &r, err, sizeof(err)), 0);
	for (uint32_t s = 0; s < v->nsw; s++) {
		const char *want = *v->swrole[s] ? v->swrole[s] : "member";

		if (strcmp(dla_sw_role_name(r.swrole[s]), want)) {
			fprintf(stderr, "  %s: switch %u is a %s, vector says %s\n", v->name, s,
				dla_sw_role_name(r.swrole[s]), want);
			unit_failures++;
		}
	}
	for (uint32_t s = 0; s < v->nsw; s++)
		for (unsigned p = 1; p <= v->nports[s]; p++) {
			const char *want = *v->role[s][p] ? v->role[s][p] : "none";
			const char *got = dla_role_name(dla_port_role(&r, s, p));

			if (strcmp(got, want)) {
				fprintf(stderr, "  %s: switch %u port %u is %s, vector says %s\n",
					v->name, s, p, got, want);
				unit_failures++;
			}
		}
	dla_routes_free(&r);
	dla_groups_free(&g);
	dla_fabric_free(&f);
}

/* One line of the file into v; returns 1 at `end`. */
static int parse_line(struct vec *v, char *line)
{
	char *save, *word = strtok_r(line, " \n", &save), *tok;

	if (!word || *word == '#')
		return 0;
	if (!strcmp(word, "fabric")) {
		memset(v, 0, sizeof(*v));
		memset(v->peer, -1, sizeof(v->peer));
		snprintf(v->name, sizeof(v->name), "%s", strtok_r(NULL, " \n", &save));
	} else if (!strcmp(word, "switch")) {
		uint32_t s = (uint32_t)atoi(strtok_r(NULL, " \n", &save));

		v->nports[s] = (unsigned)atoi(strtok_r(NULL, " \n", &save));
		v->nsw = s + 1;
		while ((tok = strtok_r(NULL, " \n", &save))) {
			unsigned p = (unsigned)atoi(tok), ps, pp;
			const char *peer = strchr(tok, ':') + 1;

			if (!strcmp(peer, "ca"))
				v->peer[s][p] = -2;
			else if (sscanf(peer, "%u.%u", &ps, &pp) == 2)
				v->peer[s][p] = (int)(ps * 256 + pp);
		}
	} else if (!strcmp(word, "groups")) {
		uint32_t k = 0;

		while ((tok = strtok_r(NULL, " \n", &save)))
			if (!strcmp(tok, "|"))
				k++;
			else
				v->group[atoi(tok)] = k;
	} else if (!strcmp(word, "roles")) {
		uint32_t s = (uint32_t)atoi(strtok_r(NULL, " \n", &save));

		while ((tok = strtok_r(NULL, " \n", &save)))
			snprintf(v->role[s][atoi(tok)], sizeof(v->role[s][0]), "%s",
				 strchr(tok, ':') + 1);
	} else if (!strcmp(word, "switch_roles")) {
		while ((tok = strtok_r(NULL, " \n", &save)))
			snprintf(v->swrole[atoi(tok) % MAX_SW], sizeof(v->swrole[0]), "%s",
				 strchr(tok, ':') + 1);
	} else if (!strcmp(word, "refused")) {
		snprintf(v->refused, sizeof(v->refused), "%s", save);
		v->refused[strcspn(v->refused, "\n")] = 0;
	} else if (!strcmp(word, "end")) {
		return 1;
	}
	return 0;
}

/* The step counts of the bench dragonflies (seed 003 sizes), for docs/groups.md "Budgets". */
static void bench_steps(unsigned a, unsigned p, unsigned h, unsigned g)
{
	struct df d;
	struct dla_groups grp;
	char err[512] = "";
	int exact = 0;
	long steps;

	df_build(&d, a, p, h, g);
	EXPECT_EQ(dla_groups_discover_steps(&d.f, 0, &grp, &exact, &steps, err, sizeof(err)), 0);
	EXPECT_EQ(grp.ngroups, g);
	EXPECT(steps < MAX_STEPS);
	fprintf(stderr, "  dragonfly a=%u p=%u h=%u g=%u (%u CAs): %ld search steps\n", a, p, h, g,
		a * p * g, steps);
	dla_groups_free(&grp);
	df_free(&d);
}

/*
 * Big groups with a dead switch: the candidate list, refilled for every group size, once grew
 * for a small size and was then written past for a larger one (a heap overflow, a crash
 * here). The search must end within its step budget, refused or not.
 */
static void big_groups_dead_switch(void)
{
	struct df d;
	struct dla_fabric f;
	struct dla_groups grp;
	char err[512] = "";
	int exact = 0, ret;
	long steps;

	df_build(&d, 40, 1, 1, 10);
	EXPECT_EQ(fabric_without_switch(&d.f, 3, &f), 0);
	ret = dla_groups_discover_steps(&f, 0, &grp, &exact, &steps, err, sizeof(err));
	EXPECT(ret == 0 || ret == -22);
	EXPECT(steps <= 10100000L);
	fprintf(stderr, "  dragonfly a=40 g=10 less a switch: %s after %ld search steps\n",
		ret ? "refused" : "grouped", steps);
	if (!ret)
		dla_groups_free(&grp);
	dla_fabric_free(&f);
	df_free(&d);
}

void test_group_vectors(void)
{
	FILE *fp = fopen(IBQOS_GROUP_VECTORS, "r");
	static struct vec v;
	char line[8192];
	unsigned n = 0;

	if (!fp) {
		EXPECT(!"cannot open " IBQOS_GROUP_VECTORS);
		return;
	}
	while (fgets(line, sizeof(line), fp))
		if (parse_line(&v, line))
			check(&v), n++;
	fclose(fp);
	EXPECT(n >= 8);
	bench_steps(6, 3, 3, 19);
	bench_steps(8, 4, 4, 33);
	bench_steps(10, 5, 5, 51);
	big_groups_dead_switch();
}
