/* The arbiter against cases worked out by hand from docs/arbiter.md and seed 002. */
#include <string.h>

#include "check.h"
#include "vlarb.h"

/* Seed 002 Table 1 (SL i on VL i): config A or B, VL0 on even entries, VL1 and VL2 alternating on odd. */
static int table1(struct ibs_vlarb_entry *high, struct ibs_vlarb_entry *low, int config_b)
{
	int n1 = 0, n2 = 0, n0 = 0;

	for (int i = 0; i < 64; i++) {
		if (i % 2 == 0) {
			high[i].vl = 0;
			high[i].weight = config_b ? 22 : (n0++ < 8 ? 9 : 8); /* 8x9 + 24x8 = 264 */
		} else if (i % 4 == 1) {
			high[i].vl = 1;
			high[i].weight =
				config_b ? 27 : (n1++ < 14 ? 10 : 9); /* 14x10 + 2x9 = 158 */
		} else {
			high[i].vl = 2;
			high[i].weight = config_b ? 18 : (n2++ < 10 ? 7 : 6); /* 10x7 + 6x6 = 106 */
		}
	}
	low[0] = (struct ibs_vlarb_entry){3, config_b ? 2 : 6};
	return 64;
}

static int reinit(struct vlarb *a, const struct ibs_vlarb_entry *high, uint32_t nhigh,
		  const struct ibs_vlarb_entry *low, uint32_t nlow, uint8_t limit, uint8_t mode)
{
	vlarb_free(a);
	return vlarb_init(a, high, nhigh, low, nlow, limit, mode, 0xffff);
}

/* Saturation: every VL always active, fixed packet size. Returns bytes per VL. */
static void saturate(struct vlarb *a, uint32_t size, long packets, double share[4])
{
	uint32_t head[IBS_MAX_VLS];
	double bytes[IBS_MAX_VLS] = {0}, total = 0;

	for (int v = 0; v < IBS_MAX_VLS; v++)
		head[v] = size;
	for (long i = 0; i < packets; i++) {
		int vl = vlarb_decide(a, 0xf, 0xf, head);
		if (vl < 0)
			break;
		vlarb_commit(a, size);
		bytes[vl] += size;
		total += size;
	}
	for (int v = 0; v < 4; v++)
		share[v] = 100.0 * bytes[v] / total;
}

static void config_shares(void)
{
	struct ibs_vlarb_entry high[64], low[1];
	struct vlarb a = {0};
	double sh[4];

	for (int b = 0; b <= 1; b++) {
		int n = table1(high, low, b);
		double wl = b ? 2 : 6, wh[3] = {b ? 704 : 264, b ? 432 : 158, b ? 288 : 106};
		double hsum = wh[0] + wh[1] + wh[2];

		/* byte mode: a limit of 1 lets 4096 high bytes through per low entry's 64*w bytes */
		EXPECT(reinit(&a, high, n, low, 1, 1, IBS_ACCT_BYTE) == 0);
		saturate(&a, 4096, 2000000, sh);
		double low_share = 100.0 * wl / (64 + wl);
		EXPECT_NEAR(sh[3], low_share, 0.01);
		for (int v = 0; v < 3; v++)
			EXPECT_NEAR(sh[v], (100.0 - low_share) * wh[v] / hsum, 0.01);

		/* packet mode, 4096-byte packets: each entry sends one packet and the limit
		 * (4096 bytes) is reached after every high packet: low gets every other packet */
		EXPECT(reinit(&a, high, n, low, 1, 1, IBS_ACCT_PACKET) == 0);
		saturate(&a, 4096, 64000, sh);
		EXPECT_NEAR(sh[3], 50.0, 1e-9);
		EXPECT_NEAR(sh[0], 25.0, 1e-9);
		EXPECT_NEAR(sh[1], 12.5, 1e-9);
		EXPECT_NEAR(sh[2], 12.5, 1e-9);
	}
	/* with 64-byte packets both modes are Algorithm 1 and agree */
	double sb[4], sp[4];
	int n = table1(high, low, 0);
	reinit(&a, high, n, low, 1, 1, IBS_ACCT_BYTE);
	saturate(&a, 64, 534 * 1000, sb);
	reinit(&a, high, n, low, 1, 1, IBS_ACCT_PACKET);
	saturate(&a, 64, 534 * 1000, sp);
	for (int v = 0; v < 4; v++)
		EXPECT_NEAR(sb[v], sp[v], 1e-9);
	vlarb_free(&a);
}

/* Seed 002 Fig. 2: limit 1, counter at 3968, VL0 (high, weight 3) has 3 packets, VL2 (low) 2. */
static void figure2(void)
{
	struct ibs_vlarb_entry high[] = {{0, 3}}, low[] = {{2, 2}};
	uint32_t head[IBS_MAX_VLS] = {[0] = 64, [2] = 64};
	int left[3] = {3, 0, 2}, order[5], want[5] = {0, 0, 2, 2, 0};
	struct vlarb a = {0};

	EXPECT(reinit(&a, high, 1, low, 1, 1, IBS_ACCT_BYTE) == 0);
	a.hi_count = 3968;
	for (int i = 0; i < 5; i++) {
		uint16_t act = (uint16_t)((left[0] ? 1 : 0) | (left[2] ? 4 : 0));
		order[i] = vlarb_decide(&a, act, act, head);
		EXPECT(order[i] == want[i]);
		if (order[i] < 0)
			break;
		vlarb_commit(&a, 64);
		left[order[i]]--;
	}
	EXPECT(vlarb_decide(&a, 0, 0, head) == -1);
	vlarb_free(&a);
}

static void special_limits(void)
{
	struct ibs_vlarb_entry high[] = {{0, 64}, {1, 0}}, low[] = {{2, 255}};
	uint32_t head[IBS_MAX_VLS] = {4096, 4096, 4096};
	struct vlarb a = {0};
	int sent[3] = {0};

	/* 255: the low table is served only when no high VL is active */
	reinit(&a, high, 2, low, 1, 255, IBS_ACCT_BYTE);
	for (int i = 0; i < 100; i++) {
		int vl = vlarb_decide(&a, 0x7, 0x7, head);
		vlarb_commit(&a, 4096);
		sent[vl]++;
	}
	EXPECT(sent[0] == 100 && sent[1] == 0 && sent[2] == 0); /* weight 0: VL1 never */
	EXPECT(vlarb_decide(&a, 0x6, 0x6, head) == 2);		/* VL1 only in a weight-0 entry */
	vlarb_commit(&a, 4096);
	EXPECT(vlarb_decide(&a, 0x2, 0x2, head) == -1);

	/* 0: one high packet, then a low turn */
	struct ibs_vlarb_entry low1[] = {{2, 1}};
	reinit(&a, high, 2, low1, 1, 0, IBS_ACCT_PACKET);
	int seq[6];
	for (int i = 0; i < 6; i++) {
		seq[i] = vlarb_decide(&a, 0x5, 0x5, head);
		vlarb_commit(&a, 4096);
	}
	EXPECT(seq[0] == 0 && seq[1] == 2 && seq[2] == 0 && seq[3] == 2 && seq[4] == 0 &&
	       seq[5] == 2);

	/* byte mode: an emptied VL loses its unused deficit, a credit-starved one keeps it */
	struct ibs_vlarb_entry h2[] = {{0, 128}, {1, 128}};
	uint32_t small[IBS_MAX_VLS] = {64, 64};
	reinit(&a, h2, 2, NULL, 0, 255, IBS_ACCT_BYTE);
	EXPECT(vlarb_decide(&a, 0x3, 0x3, small) == 0);
	vlarb_commit(&a, 64);				/* VL0 deficit 8192-64 */
	EXPECT(vlarb_decide(&a, 0x2, 0x3, small) == 1); /* VL0 starved: keeps it */
	EXPECT(a.high.e[0].left == 8192 - 64);
	vlarb_commit(&a, 64);
	EXPECT(vlarb_decide(&a, 0x1, 0x1, small) == 0); /* VL1 empty: its turn ends */
	EXPECT(a.high.e[1].left == 0);
	vlarb_commit(&a, 64);
	EXPECT(a.high.e[0].left == (8192 - 64) + 8192 - 64); /* carried, plus a new turn */
	vlarb_free(&a);
}

/* Entries of VLs outside the port's reach are left out, and for every active mask within
 * reach the arbiter decides as with them: Debian's tables (VL0 high, VL1-7 low, limit 0) on
 * dla's two VLs, and a low table whose unreachable entries sit between reachable ones. */
static void reach_same_decisions(void)
{
	struct ibs_vlarb_entry deb_hi[8], deb_lo[8],
		mix_lo[] = {{1, 3}, {5, 9}, {2, 1}, {6, 2}, {1, 1}, {7, 4}, {2, 5}};
	struct {
		const struct ibs_vlarb_entry *lo;
		uint32_t nlo;
		uint16_t reach;
		uint8_t kept_lo;
	} cases[] = {{deb_lo, 8, 0x3, 1}, {mix_lo, 7, 0x7, 4}};
	uint32_t rnd = 12345;

	for (int v = 0; v < 8; v++) {
		deb_hi[v] = (struct ibs_vlarb_entry){(uint8_t)v, v == 0 ? 4 : 0};
		deb_lo[v] = (struct ibs_vlarb_entry){(uint8_t)v, v == 0 ? 0 : 4};
	}
	for (uint8_t mode = IBS_ACCT_BYTE; mode <= IBS_ACCT_PACKET; mode++)
		for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			struct vlarb all = {0}, cut = {0};
			int same = 1;

			EXPECT(vlarb_init(&all, deb_hi, 8, cases[c].lo, cases[c].nlo, 0, mode,
					  0xffff) == 0);
			EXPECT(vlarb_init(&cut, deb_hi, 8, cases[c].lo, cases[c].nlo, 0, mode,
					  cases[c].reach) == 0);
			EXPECT(cut.low.n == cases[c].kept_lo && all.low.n > cut.low.n);
			for (int i = 0; i < 200000 && same; i++) {
				uint32_t head[IBS_MAX_VLS] = {0};

				rnd = rnd * 1103515245u + 12345u;
				uint16_t nonempty = (uint16_t)((rnd >> 8) & cases[c].reach);
				uint16_t active = (uint16_t)(nonempty & (rnd >> 16));
				for (int v = 0; v < IBS_MAX_VLS; v++)
					head[v] = (rnd >> 20) & 1 ? 4096
								  : 64u * (1 + (rnd >> 24) % 64);
				int a = vlarb_decide(&all, active, nonempty, head);
				int b = vlarb_decide(&cut, active, nonempty, head);
				same = a == b;
				if (a >= 0 && same) {
					vlarb_commit(&all, head[a]);
					vlarb_commit(&cut, head[a]);
				}
			}
			EXPECT(same);
			vlarb_free(&all);
			vlarb_free(&cut);
		}
}

/* A send pass with no active VL skips vlarb_decide() when no turn is in progress
 * (port_nothing_to_arbitrate()): there decide must return -1 and change nothing but pending.
 * Random steps on Debian's tables and a mixed one, with VLHighLimit, in both modes. */
static void idle_decide_changes_nothing(void)
{
	struct ibs_vlarb_entry hi[] = {{0, 4}, {2, 1}}, lo[] = {{1, 4}, {3, 2}, {2, 1}};
	uint32_t rnd = 777, skipped = 0;

	for (uint8_t mode = IBS_ACCT_BYTE; mode <= IBS_ACCT_PACKET; mode++)
		for (uint8_t limit = 0; limit < 3; limit++) {
			struct vlarb a = {0};

			EXPECT(vlarb_init(&a, hi, 2, lo, 3, limit, mode, 0xf) == 0);
			for (int i = 0; i < 100000; i++) {
				uint32_t head[IBS_MAX_VLS] = {0};

				rnd = rnd * 1103515245u + 12345u;
				uint16_t nonempty = (uint16_t)((rnd >> 8) & 0xf);
				uint16_t active = (uint16_t)(nonempty & (rnd >> 16));
				for (int v = 0; v < IBS_MAX_VLS; v++)
					head[v] = (rnd >> 20) & 1 ? 4096
								  : 64u * (1 + (rnd >> 24) % 64);
				if (!active && !vlarb_in_turn(&a)) {
					struct vlarb before; /* the entries are inline */

					memcpy(&before, &a, sizeof(a));
					EXPECT(vlarb_decide(&a, 0, nonempty, head) == -1);
					before.pending = a.pending;
					EXPECT(a.high.e == a.small &&
					       !memcmp(&before, &a, sizeof(a)));
					skipped++;
					continue;
				}
				int vl = vlarb_decide(&a, active, nonempty, head);
				if (vl >= 0)
					vlarb_commit(&a, head[vl]);
			}
			vlarb_free(&a);
		}
	EXPECT(skipped > 1000);
}

int main(void)
{
	struct ibs_vlarb_entry too_many[65];
	struct vlarb a = {0};

	memset(too_many, 0, sizeof(too_many));
	EXPECT(reinit(&a, too_many, 65, NULL, 0, 1, 0) != 0);
	too_many[0] = (struct ibs_vlarb_entry){15, 1};
	EXPECT(reinit(&a, too_many, 1, NULL, 0, 1, 0) != 0);
	vlarb_free(&a);
	config_shares();
	figure2();
	special_limits();
	reach_same_decisions();
	idle_decide_changes_nothing();
	TEST_DONE();
}
