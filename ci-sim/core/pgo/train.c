/* The training run of the core's profile-guided build (ci-sim/core/pgo/CMakeLists.txt): what
 * `make bench` simulates, built here with nothing but the core's public API. Dragonflies as
 * ibqos_sim.harness.topology.dragonfly() wires them (a switches a group, p CAs a switch, h
 * global links a switch, g = a*h + 1 groups, one link between every two groups), routed
 * minimally with dla's two VLs (VL1 from a global link's input to the next local hop), Debian's
 * 8/8 VLArb tables (VL0 high, VL1-7 low, weight 4), QDR, 4 KB packets, 16-packet buffers, VOQ,
 * Poisson uniform traffic at full load, seed 1: deterministic, so the profile is too. The
 * 72-CA run is the instruction-bound case; a short 2550-CA run trains the prefetch pipeline,
 * which runs only on large fabrics. Exits 1 if a run does not finish as it should. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibqos_sim.h"

#define PS_PER_US 1000000ull

struct dragonfly {
	uint32_t a, p, h, g;
	uint32_t n_sw, n_ca, n_nodes, n_ports, sw_ports;
	uint8_t *is_sw, *op_vls, *limit, *routes;
	uint32_t *nports, *base, *route_off, *sl2vl_off, *hoff, *hlen, *loff, *llen, *ep_port;
	int32_t *peer;
	double *rate;
	uint16_t *sl2vl_idx;
	struct ibs_flow *flows;
};

/* A switch's ports: 0 management, 1..p CAs, then a-1 local links (to the group's other
 * switches in order), then h global links. */
static uint32_t local_port(const struct dragonfly *d, uint32_t i, uint32_t j)
{
	return 1 + d->p + (j < i ? j : j - 1);
}

static uint32_t global_port(const struct dragonfly *d, uint32_t k)
{
	return 1 + d->p + d->a - 1 + k % d->h;
}

static uint32_t sw_of(const struct dragonfly *d, uint32_t group, uint32_t i)
{
	return group * d->a + i;
}

static void link_ports(struct dragonfly *d, uint32_t na, uint32_t pa, uint32_t nb, uint32_t pb)
{
	d->peer[d->base[na] + pa] = (int32_t)(d->base[nb] + pb);
	d->peer[d->base[nb] + pb] = (int32_t)(d->base[na] + pa);
}

/* Global link k of a group (switch k / h, its global port k % h) goes to group
 * (group + k + 1) mod g, and arrives there as that group's link g - 2 - k. */
static void wire(struct dragonfly *d)
{
	for (uint32_t grp = 0; grp < d->g; grp++)
		for (uint32_t i = 0; i < d->a; i++) {
			uint32_t s = sw_of(d, grp, i);

			for (uint32_t c = 0; c < d->p; c++)
				link_ports(d, s, 1 + c, d->n_sw + s * d->p + c, 1);
			for (uint32_t j = i + 1; j < d->a; j++)
				link_ports(d, s, local_port(d, i, j), sw_of(d, grp, j),
					   local_port(d, j, i));
			for (uint32_t k = i * d->h; k < (i + 1) * d->h; k++) {
				uint32_t to = (grp + k + 1) % d->g, kk = d->g - 2 - k;

				if (to > grp)
					link_ports(d, s, global_port(d, k), sw_of(d, to, kk / d->h),
						   global_port(d, kk));
			}
		}
}

/* Minimal routes: the CA's own switch, else the switch in this group holding the global link
 * to the CA's group, else that link. */
static void route(struct dragonfly *d)
{
	for (uint32_t s = 0; s < d->n_sw; s++) {
		uint32_t grp = s / d->a, i = s % d->a;

		for (uint32_t e = 0; e < d->n_ca; e++) {
			uint32_t t = e / d->p, tgrp = t / d->a, k = (tgrp + d->g - grp - 1) % d->g;
			uint32_t via = tgrp == grp ? t % d->a : k / d->h;
			uint8_t out;

			if (t == s)
				out = (uint8_t)(1 + e % d->p);
			else if (via != i)
				out = (uint8_t)local_port(d, i, via);
			else
				out = (uint8_t)global_port(d, k);
			d->routes[d->route_off[s] + e] = out;
		}
	}
}

static void *must_calloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "ibqos_sim_train: out of memory\n");
		exit(1);
	}
	return p;
}

static void build(struct dragonfly *d, uint32_t a, uint32_t p, uint32_t h)
{
	memset(d, 0, sizeof(*d));
	d->a = a;
	d->p = p;
	d->h = h;
	d->g = a * h + 1;
	d->n_sw = a * d->g;
	d->n_ca = d->n_sw * p;
	d->n_nodes = d->n_sw + d->n_ca;
	d->sw_ports = 1 + p + a - 1 + h;
	d->n_ports = d->n_sw * d->sw_ports + d->n_ca * 2;
	d->is_sw = must_calloc(d->n_nodes, 1);
	d->nports = must_calloc(d->n_nodes, sizeof(uint32_t));
	d->base = must_calloc(d->n_nodes, sizeof(uint32_t));
	d->route_off = must_calloc(d->n_nodes, sizeof(uint32_t));
	d->sl2vl_off = must_calloc(d->n_nodes, sizeof(uint32_t));
	d->peer = must_calloc(d->n_ports, sizeof(int32_t));
	d->op_vls = must_calloc(d->n_ports, 1);
	d->limit = must_calloc(d->n_ports, 1);
	d->rate = must_calloc(d->n_ports, sizeof(double));
	d->hoff = must_calloc(d->n_ports, sizeof(uint32_t));
	d->hlen = must_calloc(d->n_ports, sizeof(uint32_t));
	d->loff = must_calloc(d->n_ports, sizeof(uint32_t));
	d->llen = must_calloc(d->n_ports, sizeof(uint32_t));
	d->routes = must_calloc((size_t)d->n_sw * d->n_ca, 1);
	d->ep_port = must_calloc(d->n_ca, sizeof(uint32_t));
	d->flows = must_calloc(d->n_ca, sizeof(struct ibs_flow));

	uint32_t port = 0, idx = 0;

	for (uint32_t n = 0; n < d->n_nodes; n++) {
		d->is_sw[n] = n < d->n_sw;
		d->nports[n] = d->is_sw[n] ? d->sw_ports : 2;
		d->base[n] = port;
		d->route_off[n] = d->is_sw[n] ? n * d->n_ca : 0;
		d->sl2vl_off[n] = idx;
		port += d->nports[n];
		idx += d->nports[n] * d->nports[n];
	}
	d->sl2vl_idx = must_calloc(idx, sizeof(uint16_t));
	for (uint32_t q = 0; q < d->n_ports; q++) {
		d->peer[q] = -1;
		d->op_vls[q] = 8;
		d->rate[q] = 32.0; /* QDR 4X */
		d->hlen[q] = d->llen[q] = 8;
		d->loff[q] = 8;
	}
	/* dla's VL step: a packet that came in on a global link goes on to a local one on VL1 */
	for (uint32_t s = 0; s < d->n_sw; s++)
		for (uint32_t in = d->sw_ports - h; in < d->sw_ports; in++)
			for (uint32_t out = 1 + p; out < d->sw_ports - h; out++)
				d->sl2vl_idx[d->sl2vl_off[s] + in * d->sw_ports + out] = 1;
	for (uint32_t e = 0; e < d->n_ca; e++) {
		d->ep_port[e] = d->base[d->n_sw + e] + 1;
		d->flows[e] = (struct ibs_flow){.src = e,
						.process = IBS_POISSON,
						.pkt_bytes = 4096,
						.msg_bytes = 4096,
						.rate_gbps = 32.0, /* load 1.0 */
						.dest_mode = IBS_DEST_UNIFORM};
	}
	wire(d);
	route(d);
}

static void release(struct dragonfly *d)
{
	void *all[] = {d->is_sw,  d->nports, d->base,	 d->route_off, d->sl2vl_off, d->peer,
		       d->op_vls, d->limit,  d->rate,	 d->hoff,      d->hlen,	     d->loff,
		       d->llen,	  d->routes, d->ep_port, d->flows,     d->sl2vl_idx};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]);
}

static int run(uint32_t a, uint32_t p, uint32_t h, uint64_t warmup_us, uint64_t time_us)
{
	/* Debian's ibsim tables as OpenSM leaves them: VL0 the high table's one entry, VL1-7 low */
	static const struct ibs_vlarb_entry arb[16] = {
		{0, 4}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 0}, {7, 0},
		{0, 0}, {1, 4}, {2, 4}, {3, 4}, {4, 4}, {5, 4}, {6, 4}, {7, 4}};
	static const uint8_t rows[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	struct dragonfly d;
	struct ibs_sim *sim = NULL;
	char err[256];
	int rc = 1;

	build(&d, a, p, h);
	const struct ibs_config cfg = {
		.n_nodes = d.n_nodes,
		.node_is_switch = d.is_sw,
		.node_nports = d.nports,
		.node_port_base = d.base,
		.node_route_off = d.route_off,
		.node_sl2vl_off = d.sl2vl_off,
		.n_ports = d.n_ports,
		.port_peer = d.peer,
		.port_op_vls = d.op_vls,
		.port_rate_gbps = d.rate,
		.port_arb_high_off = d.hoff,
		.port_arb_high_len = d.hlen,
		.port_arb_low_off = d.loff,
		.port_arb_low_len = d.llen,
		.port_arb_limit = d.limit,
		.arb_entries = arb,
		.routes = d.routes,
		.sl2vl_idx = d.sl2vl_idx,
		.sl2vl_rows = rows,
		.n_sl2vl_rows = 2,
		.n_endpoints = d.n_ca,
		.ep_port = d.ep_port,
		.n_flows = d.n_ca,
		.flows = d.flows,
		.n_classes = 1,
		.buf_credits = 16 * 4096 / IBS_CREDIT,
		.mtu = 4096,
		.prop_ps = 10000,
		.sw_latency_ps = 100000,
		.voq = 1,
		.seed = 1,
		.warmup_ps = warmup_us * PS_PER_US,
		.end_ps = (warmup_us + time_us) * PS_PER_US,
		.deadlock_ps = 50 * PS_PER_US,
	};

	if (ibs_create(&cfg, &sim, err, sizeof(err))) {
		fprintf(stderr, "ibqos_sim_train: %u CAs: %s\n", d.n_ca, err);
	} else if (ibs_run(sim, UINT64_MAX)) {
		fprintf(stderr, "ibqos_sim_train: %u CAs: the run failed\n", d.n_ca);
	} else {
		const struct ibs_results *r = ibs_results(sim);

		printf("ibqos_sim_train: %u CAs, %llu us: %llu packet-hops, %llu events\n", d.n_ca,
		       (unsigned long long)(warmup_us + time_us), (unsigned long long)r->hops,
		       (unsigned long long)r->events);
		/* a deadlock, or nothing delivered, would train the wrong paths */
		rc = r->status == IBS_DONE && r->delivered > 0 ? 0 : 1;
		if (rc)
			fprintf(stderr, "ibqos_sim_train: %u CAs: status %u, %llu delivered\n",
				d.n_ca, r->status, (unsigned long long)r->delivered);
	}
	ibs_destroy(sim);
	release(&d);
	return rc;
}

int main(void)
{
	/* make bench's two sizes: 72 CAs for 1 + 5 ms, 2550 CAs briefly */
	int rc = run(4, 2, 2, 1000, 5000);

	return rc | run(10, 5, 5, 20, 30);
}
