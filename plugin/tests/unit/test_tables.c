#define _POSIX_C_SOURCE 200809L
#include "unit.h"
#include "ibqos_tables.h"
#include "ibqos_vlarb.h"

#include <stdio.h>

static const char *contract =
	"# ibqos dla plugin tables (rendered by ibqos render from plan abc)\n"
	"version 1\n"
	"sl2class 0,0,1,1,2,2,3,3,0,0,0,0,0,0,0,0\n"
	"\n"
	"vlarb ca       high 0:32,1:32 low 2:8,3:8 limit 1\n"
	"vlarb sw0      high 0:64 low - limit 255\n"
	"vlarb terminal high 0:32,1:32 low 2:8,3:8 limit 1   # trailing comment\n"
	"vlarb local    high 0:32,1:32 low 2:8,3:8 limit 1\n"
	"vlarb global   high 0:40,1:40 low 2:8,3:8 limit 2\n"
	"vlarb port 0x0002c903000a1b2c 7 high 0:16 low 2:16 limit 0\n";

static int parse(const char *text, struct ibqos_tables *t, char *err, size_t len)
{
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	int r = ibqos_tables_parse(in, "plan.tables", t, err, len);

	fclose(in);
	return r;
}

static void bad(const char *text, const char *want)
{
	struct ibqos_tables t;
	char err[512] = "";

	EXPECT_EQ(parse(text, &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, want);
	EXPECT(t.path == NULL && t.ports == NULL);
}

void test_tables(void)
{
	struct ibqos_tables t;
	const struct ibqos_vlarb_spec *s;
	char err[512] = "";
	uint8_t vl[32], w[32];

	EXPECT_EQ(parse(contract, &t, err, sizeof(err)), 0);
	EXPECT(t.has_sl2class);
	EXPECT_EQ(t.sl2class[7], 3);
	EXPECT_EQ(t.sl2class[15], 0);
	s = ibqos_tables_lookup(&t, IBQOS_ROLE_GLOBAL, 0x1234, 3);
	EXPECT(s == &t.role[IBQOS_ROLE_GLOBAL]);
	EXPECT_EQ(s->high.n, 2);
	EXPECT_EQ(s->high.weight[1], 40);
	EXPECT_EQ(s->limit, 2);
	s = ibqos_tables_lookup(&t, IBQOS_ROLE_GLOBAL, 0x0002c903000a1b2cULL, 7);
	EXPECT_EQ(s->limit, 0);
	EXPECT_EQ(s->low.vl[0], 2);
	EXPECT_EQ(t.role[IBQOS_ROLE_SW0].low.n, 0);
	ibqos_vlarb_block(&t.role[IBQOS_ROLE_CA], 2, 8, vl, w);
	EXPECT_EQ(vl[1], 1);
	EXPECT_EQ(w[1], 32);
	EXPECT_EQ(w[2], 0);
	ibqos_vlarb_block(&t.role[IBQOS_ROLE_CA], 0, 8, vl, w);
	EXPECT_EQ(vl[1], 3);
	EXPECT_EQ(w[1], 8);
	EXPECT_EQ(ibqos_vlarb_check_caps(&t, &t.role[IBQOS_ROLE_CA], "ca", "CA x", 8, 8, err,
					 sizeof(err)), 0);
	EXPECT_EQ(ibqos_vlarb_check_caps(&t, &t.role[IBQOS_ROLE_CA], "ca", "CA x", 1, 8, err,
					 sizeof(err)), -22);
	EXPECT_STR_HAS(err, "plan.tables:5: vlarb ca: high table has 2 entries but port CA x "
		       "holds 1 (VLArbitrationHighCap)");
	ibqos_tables_free(&t);

	/* roles not given keep OpenSM's configuration: no spec */
	EXPECT_EQ(parse("version 1\nvlarb global high 0:1 low - limit 3\n", &t, err, sizeof(err)), 0);
	EXPECT(ibqos_tables_lookup(&t, IBQOS_ROLE_LOCAL, 1, 1) == NULL);
	EXPECT(!t.has_sl2class);
	ibqos_tables_free(&t);

	bad("", "plan.tables:1: no 'version 1'");
	bad("sl2class 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n", "plan.tables:1: expected 'version 1'");
	bad("version 2\n", "plan.tables:1: unsupported version '2'");
	bad("version 1\nversion 1\n", "plan.tables:2: version given twice");
	bad("version 1\nsl2class 0,0,0\n", "plan.tables:2: sl2class: 3 values, need exactly 16");
	bad("version 1\nsl2class 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,8\n",
	    "plan.tables:2: sl2class: SL 15: class 8 out of range 0..7");
	bad("version 1\n\n# c\nvlarb ca high 0:1,15:2 low - limit 1\n",
	    "plan.tables:4: high: entry 2: VL 15 out of range 0..14");
	bad("version 1\nvlarb ca high 0:256 low - limit 1\n",
	    "plan.tables:2: high: entry 1: weight 256 out of range 0..255");
	bad("version 1\nvlarb ca high 0:1 low - limit 256\n", "plan.tables:2: limit: 256 out of range");
	bad("version 1\nvlarb ca low 0:1 high - limit 1\n", "expected 'high LIST low LIST limit N'");
	bad("version 1\nvlarb ca high 0:1 low - limit 1 extra\n", "unexpected 'extra'");
	bad("version 1\nvlarb ca high 0:1 low - limit 1\nvlarb ca high 0:1 low - limit 1\n",
	    "plan.tables:3: vlarb ca given twice (first on line 2)");
	bad("version 1\nvlarb router high 0:1 low - limit 1\n", "unknown role 'router'");
	bad("version 1\nvlarb port 12 3 high 0:1 low - limit 1\n", "'12' is not a GUID");
	bad("version 1\nvlarb port 0x1 3 high 0:1 low - limit 1\nvlarb port 0x01 3 high - low - limit 1\n",
	    "plan.tables:3: vlarb port 0x0000000000000001 3 given twice");
	bad("version 1\nvlarb ca high 0:1,,1:2 low - limit 1\n", "empty entry");
	bad("version 1\nvlarb ca high 0-1 low - limit 1\n", "entry '0-1' is not vl:weight");
	bad("version 1\nqos on\n", "plan.tables:2: unknown keyword 'qos'");
	{
		char big[1024] = "version 1\nvlarb ca high ";

		for (int i = 0; i < 65; i++)
			strcat(big, i ? ",0:1" : "0:1");
		strcat(big, " low - limit 1\n");
		bad(big, "high: more than 64 entries");
	}
	EXPECT_EQ(ibqos_tables_load("/nonexistent/t", &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, "/nonexistent/t:0: cannot open");
}
