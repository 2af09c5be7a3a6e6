/* Whole-simulator tests on small fabrics built here: a star (the seed 002 two-node
 * method) and a ring of three switches (a credit loop when routed one way round). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ibqos_sim.h"

#define MAXN 16
#define MAXP 64

struct fab {
	uint32_t n_nodes, n_ports, n_ep;
	uint8_t is_sw[MAXN];
	uint32_t nports[MAXN], base[MAXN], route_off[MAXN], sl2vl_off[MAXN];
	int32_t peer[MAXP];
	uint8_t op_vls[MAXP], limit[MAXP];
	double rate[MAXP];
	uint32_t hoff[MAXP], hlen[MAXP], loff[MAXP], llen[MAXP];
	struct ibs_vlarb_entry arb[80];
	uint8_t routes[MAXN * MAXN];
	uint16_t sl2vl_idx[MAXN * MAXP];
	uint8_t rows[16];
	uint32_t ep_port[MAXN];
	struct ibs_flow flows[64];
	uint32_t n_flows;
	struct ibs_config cfg;
};

static uint32_t add_node(struct fab *f, int sw, uint32_t nports)
{
	uint32_t n = f->n_nodes++;

	f->is_sw[n] = (uint8_t)sw;
	f->nports[n] = nports;
	f->base[n] = f->n_ports;
	f->sl2vl_off[n] = n * MAXP;
	f->route_off[n] = n * MAXN;
	for (uint32_t i = 0; i < nports; i++) {
		f->peer[f->n_ports + i] = -1;
		f->op_vls[f->n_ports + i] = 4;
		f->rate[f->n_ports + i] = 100.0;
		f->limit[f->n_ports + i] = 1;
	}
	f->n_ports += nports;
	if (!sw)
		f->ep_port[f->n_ep++] = f->base[n] + 1;
	return n;
}

static void link_ports(struct fab *f, uint32_t a, uint32_t pa, uint32_t b, uint32_t pb)
{
	f->peer[f->base[a] + pa] = (int32_t)(f->base[b] + pb);
	f->peer[f->base[b] + pb] = (int32_t)(f->base[a] + pa);
}

/* Seed 002 config A on every port (SL i -> VL i). */
static void vlarb_config_a(struct fab *f)
{
	int n0 = 0, n1 = 0, n2 = 0;

	for (int i = 0; i < 64; i++) {
		struct ibs_vlarb_entry *e = &f->arb[i];
		if (i % 2 == 0)
			*e = (struct ibs_vlarb_entry){0, (uint8_t)(n0++ < 8 ? 9 : 8)};
		else if (i % 4 == 1)
			*e = (struct ibs_vlarb_entry){1, (uint8_t)(n1++ < 14 ? 10 : 9)};
		else
			*e = (struct ibs_vlarb_entry){2, (uint8_t)(n2++ < 10 ? 7 : 6)};
	}
	f->arb[64] = (struct ibs_vlarb_entry){3, 6};
	for (uint32_t p = 0; p < f->n_ports; p++) {
		f->hoff[p] = 0;
		f->hlen[p] = 64;
		f->loff[p] = 64;
		f->llen[p] = 1;
	}
	for (int i = 0; i < 16; i++)
		f->rows[i] = (uint8_t)(i < 4 ? i : 0);
}

static void finish(struct fab *f, uint32_t buf_credits, uint64_t end_ps)
{
	struct ibs_config *c = &f->cfg;

	static uint32_t identity[MAXN];

	for (uint32_t i = 0; i < MAXN; i++)
		identity[i] = i;
	memset(c, 0, sizeof(*c));
	c->dests = identity; /* endpoint i at index i: DEST_SET with dest_len 1 is "to i" */
	c->n_dests = f->n_ep;
	c->n_nodes = f->n_nodes;
	c->node_is_switch = f->is_sw;
	c->node_nports = f->nports;
	c->node_port_base = f->base;
	c->node_route_off = f->route_off;
	c->node_sl2vl_off = f->sl2vl_off;
	c->n_ports = f->n_ports;
	c->port_peer = f->peer;
	c->port_op_vls = f->op_vls;
	c->port_rate_gbps = f->rate;
	c->port_arb_high_off = f->hoff;
	c->port_arb_high_len = f->hlen;
	c->port_arb_low_off = f->loff;
	c->port_arb_low_len = f->llen;
	c->port_arb_limit = f->limit;
	c->arb_entries = f->arb;
	c->routes = f->routes;
	c->sl2vl_idx = f->sl2vl_idx;
	c->sl2vl_rows = f->rows;
	c->n_sl2vl_rows = 1;
	c->n_endpoints = f->n_ep;
	c->ep_port = f->ep_port;
	c->n_flows = f->n_flows;
	c->flows = f->flows;
	c->n_classes = 4;
	c->buf_credits = buf_credits;
	c->mtu = 4096;
	c->prop_ps = 10000;
	c->sw_latency_ps = 100000;
	c->seed = 7;
	c->warmup_ps = end_ps / 10;
	c->end_ps = end_ps;
	c->deadlock_ps = 50000000;
	c->audit = 1;
}

/* Switch with CAs on ports 1..ncas. */
static void star(struct fab *f, uint32_t ncas)
{
	memset(f, 0, sizeof(*f));
	uint32_t sw = add_node(f, 1, ncas + 1);
	for (uint32_t i = 0; i < ncas; i++) {
		uint32_t ca = add_node(f, 0, 2);
		link_ports(f, sw, i + 1, ca, 1);
		f->routes[f->route_off[sw] + i] = (uint8_t)(i + 1);
	}
	vlarb_config_a(f);
}

static void saturating(struct fab *f, uint32_t src, uint32_t dst_ep, uint8_t sl)
{
	struct ibs_flow *fl = &f->flows[f->n_flows++];

	*fl = (struct ibs_flow){.src = src,
				.sl = sl,
				.process = IBS_SATURATE,
				.klass = sl,
				.pkt_bytes = 4096,
				.msg_bytes = 4096,
				.dest_mode = IBS_DEST_SET,
				.dest_off = dst_ep,
				.dest_len = 1};
}

static void check_conservation(struct ibs_sim *s)
{
	const struct ibs_results *r = ibs_results(s);
	struct ibs_audit a;

	EXPECT(r->injected == r->delivered + r->in_flight + r->dropped_route + r->dropped_vl);
	EXPECT(ibs_audit(s, &a) == 0);
	EXPECT(a.queue_errors == 0);
	EXPECT(a.credit_errors == 0);
	EXPECT(a.queued + a.on_link == r->in_flight);
}

/* Creates and runs f's simulation to its end and checks conservation; NULL (a failure
 * counted) if it cannot be created. */
static struct ibs_sim *run_checked(struct fab *f)
{
	struct ibs_sim *s = NULL;
	char err[256];

	EXPECT(ibs_create(&f->cfg, &s, err, sizeof(err)) == 0);
	if (!s) {
		fprintf(stderr, "%s\n", err);
		failures++;
		return NULL;
	}
	EXPECT(ibs_run(s, UINT64_MAX) == 0);
	check_conservation(s);
	return s;
}

static void two_node(uint8_t accounting)
{
	struct fab f;
	struct ibs_sim *s = NULL;
	char err[256];

	star(&f, 2);
	for (uint8_t sl = 0; sl < 4; sl++)
		saturating(&f, 0, 1, sl);
	uint32_t nf = f.n_flows;
	finish(&f, 16 * 64, 20000000000ull); /* 20 ms */
	f.cfg.n_flows = nf;
	f.cfg.accounting = accounting;
	EXPECT(ibs_create(&f.cfg, &s, err, sizeof(err)) == 0);
	if (!s) {
		fprintf(stderr, "%s\n", err);
		failures++;
		return;
	}
	EXPECT(ibs_run(s, 7000000000ull) == 0);
	check_conservation(s);
	EXPECT(ibs_run(s, UINT64_MAX) == 0);
	const struct ibs_results *r = ibs_results(s);
	EXPECT(r->status == IBS_DONE);
	check_conservation(s);
	double tot = 0, share[4];
	for (int i = 0; i < 4; i++)
		tot += (double)r->sl[i].rx_bytes;
	for (int i = 0; i < 4; i++)
		share[i] = 100.0 * (double)r->sl[i].rx_bytes / tot;
	/* the link is saturated: 100 Gb/s over the window */
	EXPECT_NEAR(tot * 8 / ((double)r->window_ps / 1000.0), 100.0, 0.2);
	if (accounting == IBS_ACCT_BYTE) {
		double low = 100.0 * 6 / 70;
		EXPECT_NEAR(share[3], low, 0.1);
		EXPECT_NEAR(share[0], (100 - low) * 264 / 528, 0.1);
		EXPECT_NEAR(share[1], (100 - low) * 158 / 528, 0.1);
		EXPECT_NEAR(share[2], (100 - low) * 106 / 528, 0.1);
	} else {
		EXPECT_NEAR(share[3], 50.0, 0.1);
		EXPECT_NEAR(share[0], 25.0, 0.1);
	}
	ibs_destroy(s);
}

/* Two simulations in one process, stepped alternately, give identical results. */
static void determinism(void)
{
	struct fab f;
	struct ibs_sim *a = NULL, *b = NULL;
	char err[256];

	star(&f, 6);
	for (uint32_t i = 0; i < 6; i++) {
		struct ibs_flow *fl = &f.flows[f.n_flows++];
		*fl = (struct ibs_flow){.src = i,
					.sl = (uint8_t)(i % 4),
					.process = IBS_POISSON,
					.klass = (uint16_t)(i % 4),
					.pkt_bytes = 2048,
					.msg_bytes = 8192,
					.rate_gbps = 70.0,
					.dest_mode = IBS_DEST_UNIFORM};
	}
	finish(&f, 16 * 64, 2000000000ull);
	EXPECT(ibs_create(&f.cfg, &a, err, sizeof(err)) == 0);
	EXPECT(ibs_create(&f.cfg, &b, err, sizeof(err)) == 0);
	if (!a || !b)
		return;
	for (uint64_t t = 100000000; t <= 2000000000ull; t += 100000000) {
		ibs_run(a, t);
		ibs_run(b, t + 50000000);
	}
	const struct ibs_results *ra = ibs_results(a), *rb = ibs_results(b);
	EXPECT(ra->status == IBS_DONE && rb->status == IBS_DONE);
	EXPECT(ra->events == rb->events && ra->hops == rb->hops && ra->delivered == rb->delivered);
	EXPECT(ra->delivered > 1000);
	EXPECT(memcmp(ra->sl, rb->sl, sizeof(ra->sl)) == 0);
	check_conservation(a);
	ibs_destroy(a);
	ibs_destroy(b);
}

/* Three switches in a ring, one CA each. clockwise: every route goes round the same
 * way, a credit loop on one VL; otherwise routes take the short way and cannot loop. */
static void ring(int clockwise)
{
	struct fab f;
	uint32_t sw[3], ca[3];

	memset(&f, 0, sizeof(f));
	for (int i = 0; i < 3; i++)
		sw[i] = add_node(&f, 1, 4); /* 1: CA, 2: next, 3: previous */
	for (int i = 0; i < 3; i++) {
		ca[i] = add_node(&f, 0, 2);
		link_ports(&f, sw[i], 1, ca[i], 1);
		link_ports(&f, sw[i], 2, sw[(i + 1) % 3], 3);
	}
	for (int i = 0; i < 3; i++)
		for (int d = 0; d < 3; d++)
			f.routes[f.route_off[sw[i]] + d] =
				(uint8_t)(d == i				  ? 1
						  : clockwise || d == (i + 1) % 3 ? 2
										  : 3);
	vlarb_config_a(&f);
	for (uint32_t p = 0; p < f.n_ports; p++)
		f.op_vls[p] = 1;
	for (uint32_t i = 0; i < 3; i++) {
		struct ibs_flow *fl = &f.flows[f.n_flows++];
		/* to the CA two hops clockwise */
		*fl = (struct ibs_flow){.src = i,
					.sl = 0,
					.process = IBS_SATURATE,
					.pkt_bytes = 4096,
					.msg_bytes = 4096,
					.dest_mode = IBS_DEST_SET,
					.dest_off = (i + 2) % 3,
					.dest_len = 1};
	}
	finish(&f, 64, 200000000ull);
	f.cfg.deadlock_ps = 10000000;
	f.cfg.n_classes = 1;
	struct ibs_sim *s = run_checked(&f);
	if (!s)
		return;
	const struct ibs_results *r = ibs_results(s);
	if (clockwise) {
		EXPECT(r->status == IBS_DEADLOCK);
		EXPECT(r->witness_len == 3);
		for (uint32_t i = 0; i < r->witness_len; i++) {
			EXPECT(r->witness[3 * i] < 3);	    /* a switch */
			EXPECT(r->witness[3 * i + 1] == 3); /* its input from the previous switch */
			EXPECT(r->witness[3 * i + 2] == 0);
		}
	} else {
		EXPECT(r->status == IBS_DONE);
		EXPECT(r->delivered > 100);
	}
	ibs_destroy(s);
}

/* Three switches in a line, a CA on each end, each switch with its own SL2VL index matrix:
 * s0 and s2 map every (in, out) to VL1, s1 to VL2 (s0's and s2's are equal and may be
 * one copy in the core, s1's must stay its own). The packets leave each switch on its VL. */
static void sl2vl_per_switch(void)
{
	struct fab f;
	uint32_t sw[3], ca[2];
	const uint8_t vl_of[3] = {1, 2, 1};

	memset(&f, 0, sizeof(f));
	for (int i = 0; i < 3; i++)
		sw[i] = add_node(&f, 1, 4); /* 1: CA, 2: next, 3: previous */
	for (int i = 0; i < 2; i++)
		ca[i] = add_node(&f, 0, 2);
	link_ports(&f, sw[0], 1, ca[0], 1);
	link_ports(&f, sw[2], 1, ca[1], 1);
	link_ports(&f, sw[0], 2, sw[1], 3);
	link_ports(&f, sw[1], 2, sw[2], 3);
	f.routes[f.route_off[sw[0]] + 1] = 2;
	f.routes[f.route_off[sw[1]] + 1] = 2;
	f.routes[f.route_off[sw[2]] + 1] = 1;
	vlarb_config_a(&f);
	for (int i = 0; i < 3; i++)
		for (uint32_t e = 0; e < 16; e++)
			f.sl2vl_idx[f.sl2vl_off[sw[i]] + e] = vl_of[i];
	uint8_t rows[3 * 16];
	for (int i = 0; i < 3 * 16; i++)
		rows[i] = (uint8_t)(i / 16);
	saturating(&f, 0, 1, 0);
	finish(&f, 64, 200000000ull);
	f.cfg.sl2vl_rows = rows;
	f.cfg.n_sl2vl_rows = 3;
	struct ibs_sim *s = run_checked(&f);
	if (!s)
		return;
	const struct ibs_results *r = ibs_results(s);
	EXPECT(r->delivered > 100);
	for (int i = 0; i < 3; i++) {
		uint32_t out = f.base[sw[i]] + (i == 2 ? 1 : 2);

		for (uint32_t vl = 0; vl < 4; vl++)
			EXPECT((r->port_vl_bytes[(size_t)out * 16 + vl] > 0) == (vl == vl_of[i]));
	}
	ibs_destroy(s);
}

/* Four switches in a ring, one CA each, every route clockwise, every CA saturating the CA
 * three hops ahead, one VL, 1-packet buffers, VOQ. The queues (input from the previous
 * switch, output to the next) wait for each other round the ring: a credit loop with shared
 * buffers and also with per-output buffers, where the wait-for graph's nodes are those
 * queues. Checks the deadlock and its witness: the four switches' inputs from the ring. */
static void ring4_deadlock(uint8_t voq_buffers)
{
	struct fab f;
	uint32_t sw[4];

	memset(&f, 0, sizeof(f));
	for (int i = 0; i < 4; i++)
		sw[i] = add_node(&f, 1, 4); /* 1: CA, 2: next, 3: previous */
	for (int i = 0; i < 4; i++) {
		link_ports(&f, sw[i], 1, add_node(&f, 0, 2), 1);
		link_ports(&f, sw[i], 2, sw[(i + 1) % 4], 3);
	}
	for (int i = 0; i < 4; i++)
		for (int d = 0; d < 4; d++)
			f.routes[f.route_off[sw[i]] + d] = (uint8_t)(d == i ? 1 : 2);
	vlarb_config_a(&f);
	for (uint32_t p = 0; p < f.n_ports; p++)
		f.op_vls[p] = 1;
	for (uint32_t i = 0; i < 4; i++)
		saturating(&f, i, (i + 3) % 4, 0);
	finish(&f, 64, 200000000ull);
	f.cfg.deadlock_ps = 10000000;
	f.cfg.voq = 1;
	f.cfg.voq_buffers = voq_buffers;
	struct ibs_sim *s = run_checked(&f);
	if (!s)
		return;
	const struct ibs_results *r = ibs_results(s);
	EXPECT(r->status == IBS_DEADLOCK);
	EXPECT(r->witness_len == 4);
	for (uint32_t i = 0; i < r->witness_len; i++) {
		EXPECT(r->witness[3 * i] < 4);
		EXPECT(r->witness[3 * i + 1] == 3);
		EXPECT(r->witness[3 * i + 2] == 0);
	}
	ibs_destroy(s);
}

/* Two switches: a0, a1 on s1; b0, b1, c0, c1 on s2; s1 port 3 to s2 port 3. a0, c0 and c1
 * saturate b0, a1 saturates b1, one VL, 1-packet buffers, VOQ. With the VOQs sharing s2's
 * input buffer (per-VL credits), a packet for the busy b0 holds the whole buffer, so a1's
 * packets to the idle b1 cross s1 -> s2 only as often as b0 takes a0's: about a third of
 * the link. With per-output buffers (route-aware credits) b1's queue has its own space and
 * a1 gets most of what a0 leaves of the link. Returns b1's throughput in Gb/s;
 * checks conservation and the credit audit mid-run and at the end. */
static double hol_b1_gbps(uint8_t voq, uint8_t voq_buffers, uint8_t input_reads)
{
	struct fab f;
	struct ibs_sim *s = NULL;
	char err[256];
	uint32_t s1, s2, ep_b0 = 2, ep_b1 = 3;
	double gbps = -1;

	memset(&f, 0, sizeof(f));
	s1 = add_node(&f, 1, 4);
	s2 = add_node(&f, 1, 6);
	for (uint32_t i = 0; i < 2; i++)
		link_ports(&f, s1, i + 1, add_node(&f, 0, 2), 1); /* a0, a1: endpoints 0, 1 */
	for (uint32_t i = 0; i < 2; i++)
		link_ports(&f, s2, i + 1, add_node(&f, 0, 2), 1); /* b0, b1: endpoints 2, 3 */
	for (uint32_t i = 0; i < 2; i++)
		link_ports(&f, s2, i + 4, add_node(&f, 0, 2), 1); /* c0, c1: endpoints 4, 5 */
	link_ports(&f, s1, 3, s2, 3);
	const uint8_t r1[6] = {1, 2, 3, 3, 3, 3}, r2[6] = {3, 3, 1, 2, 4, 5};
	for (uint32_t d = 0; d < 6; d++) {
		f.routes[f.route_off[s1] + d] = r1[d];
		f.routes[f.route_off[s2] + d] = r2[d];
	}
	vlarb_config_a(&f);
	for (uint32_t p = 0; p < f.n_ports; p++)
		f.op_vls[p] = 1;
	saturating(&f, 0, ep_b0, 0);
	saturating(&f, 1, ep_b1, 0);
	saturating(&f, 4, ep_b0, 0);
	saturating(&f, 5, ep_b0, 0);
	finish(&f, 64, 2000000000ull); /* 2 ms, one 4 KB packet per buffer */
	f.cfg.voq = voq;
	f.cfg.voq_buffers = voq_buffers;
	f.cfg.input_reads = input_reads;
	EXPECT(ibs_create(&f.cfg, &s, err, sizeof(err)) == 0);
	if (!s) {
		fprintf(stderr, "%s\n", err);
		failures++;
		return gbps;
	}
	EXPECT(ibs_run(s, 700000000ull) == 0);
	check_conservation(s);
	EXPECT(ibs_run(s, UINT64_MAX) == 0);
	const struct ibs_results *r = ibs_results(s);
	EXPECT(r->status == IBS_DONE);
	check_conservation(s);
	/* b0 stays saturated whatever the model (94 Gb/s: with 1-packet buffers the three
	 * inputs' credit round trips and cut-through waits leave it idle now and then) */
	EXPECT((double)r->ep_rx_bytes[ep_b0] * 8 / ((double)r->window_ps / 1000.0) > 90.0);
	gbps = (double)r->ep_rx_bytes[ep_b1] * 8 / ((double)r->window_ps / 1000.0);
	ibs_destroy(s);
	return gbps;
}

static void voq_buffers(void)
{
	for (uint8_t reads = 0; reads <= 1; reads++) {
		double fifo = hol_b1_gbps(0, 0, reads), shared = hol_b1_gbps(1, 0, reads);
		double own = hol_b1_gbps(1, 1, reads);

		EXPECT_NEAR(shared, 100.0 / 3, 4.0);
		/* 58 Gb/s: less than the two thirds a0 leaves, as b1's own 1-packet hops wait
		 * for their credits' round trips */
		EXPECT(own > 50.0 && own > 1.5 * shared);
		EXPECT(fifo < shared + 1.0);
		/* without VOQ there is one queue per (input, VL): per-output buffers change nothing */
		EXPECT(hol_b1_gbps(0, 1, reads) == fifo);
	}
}

static void bad_input(void)
{
	struct fab f;
	struct ibs_sim *s = NULL;
	char err[256];

	star(&f, 2);
	saturating(&f, 0, 1, 0);
	finish(&f, 16, 1000000); /* 16 credits cannot hold 4096 bytes */
	EXPECT(ibs_create(&f.cfg, &s, err, sizeof(err)) < 0 && s == NULL);
	EXPECT(strstr(err, "cannot hold") != NULL);
	finish(&f, 64, 1000000);
	f.peer[1] = 5; /* one-sided link */
	EXPECT(ibs_create(&f.cfg, &s, err, sizeof(err)) < 0 && strstr(err, "link back"));
	star(&f, 2);
	saturating(&f, 0, 1, 0);
	finish(&f, 64, 1000000);
	f.cfg.evq = "splay";
	EXPECT(ibs_create(&f.cfg, &s, err, sizeof(err)) < 0 && strstr(err, "splay"));
	f.cfg.evq = "list";
	EXPECT(ibs_create(&f.cfg, &s, err, sizeof(err)) == 0);
	ibs_destroy(s);
	s = NULL;
	f.cfg.voq_buffers = 2;
	EXPECT(ibs_create(&f.cfg, &s, err, sizeof(err)) < 0 && strstr(err, "voq_buffers"));
}

/* A port's bytes on a VL past 2^32 in one window: VLs 0 and 1 count them in 32 bits in the
 * port's header and carry into 64 bits before an add would overflow (port_count_bytes());
 * each port's VL bytes must still sum to its SL bytes, counted apart in 64 bits (fails when
 * the header's count wraps). */
static void vl_bytes_past_32_bits(void)
{
	struct fab f;
	uint64_t most = 0;

	star(&f, 2);
	saturating(&f, 0, 1, 1); /* SL 1: SL bytes are counted apart only with more than SL 0 */
	for (uint32_t g = 0; g < MAXP; g++)
		f.rate[g] = 10000.0;	     /* 10 Tb/s: 4.3 GB in about 9 ms */
	finish(&f, 16 * 64, 11000000000ull); /* 11 ms, 1.1 ms warm-up */
	f.cfg.deadlock_ps = 0;
	struct ibs_sim *s = run_checked(&f);
	if (!s)
		return;
	const struct ibs_results *r = ibs_results(s);
	for (uint32_t g = 0; g < f.n_ports; g++) {
		uint64_t vl = 0, sl = 0;

		for (uint32_t i = 0; i < 16; i++) {
			vl += r->port_vl_bytes[(size_t)g * 16 + i];
			sl += r->port_sl_bytes[(size_t)g * 16 + i];
		}
		EXPECT(vl == sl);
		if (vl > most)
			most = vl;
	}
	EXPECT(most > (1ull << 32));
	ibs_destroy(s);
}

/* Every packet on SL 0: a port's SL 0 bytes are not counted per hop but summed from its VL
 * bytes in ibs_results(); a source CA's port sent in the window what its endpoint injected
 * there, counted at injection (fails when the sum is left out). */
static void sl_bytes_one_sl(void)
{
	struct fab f;

	star(&f, 2);
	saturating(&f, 0, 1, 0);
	finish(&f, 16 * 64, 200000000ull); /* 200 us */
	struct ibs_sim *s = run_checked(&f);
	if (!s)
		return;
	const struct ibs_results *r = ibs_results(s);
	uint32_t g = f.ep_port[0];

	EXPECT(r->ep_tx_bytes[0] > 0);
	EXPECT(r->port_sl_bytes[(size_t)g * 16] == r->ep_tx_bytes[0]);
	ibs_destroy(s);
}

/* An arrival finds whether its output is linked and how many VLs it runs in the output's
 * record (sw_arrive()): a switch with CAs on ports 1 and 2 and port 3 unlinked; ca1's packets
 * are routed to port 3 (dropped, no route), ca0's go to ca1 on SL 2 -> VL 2, but the link to
 * ca1 runs one VL (dropped, VL). Nothing is delivered (fails when either check reads another
 * port's or no port's state). */
static void drops_at_the_output(void)
{
	struct fab f;

	memset(&f, 0, sizeof(f));
	uint32_t sw = add_node(&f, 1, 4);
	for (uint32_t i = 0; i < 2; i++)
		link_ports(&f, sw, i + 1, add_node(&f, 0, 2), 1);
	f.routes[f.route_off[sw] + 0] = 3;
	f.routes[f.route_off[sw] + 1] = 2;
	vlarb_config_a(&f);
	f.op_vls[f.base[sw] + 2] = 1;
	saturating(&f, 0, 1, 2);
	saturating(&f, 1, 0, 0);
	finish(&f, 16 * 64, 20000000ull); /* 20 us */
	struct ibs_sim *s = run_checked(&f);
	if (!s)
		return;
	const struct ibs_results *r = ibs_results(s);

	EXPECT(r->dropped_route > 10 && r->dropped_vl > 10 && r->delivered == 0);
	ibs_destroy(s);
}

int main(void)
{
	two_node(IBS_ACCT_BYTE);
	two_node(IBS_ACCT_PACKET);
	determinism();
	ring(1);
	ring(0);
	voq_buffers();
	sl2vl_per_switch();
	ring4_deadlock(0);
	ring4_deadlock(1);
	bad_input();
	vl_bytes_past_32_bits();
	sl_bytes_one_sl();
	drops_at_the_output();
	TEST_DONE();
}
