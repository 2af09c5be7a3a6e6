/* Simulation lifecycle: create (sim_config.c checks and copies the configuration), the event
 * loop, destroy. Results and the audit are in sim_results.c and sim_audit.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

const char *ibs_version(void)
{
	/* the ABI of ibqos_sim.h: bump with any change to a struct it exposes (2: input_reads,
	 * read_errors; 3: pair_sl; 4: voq_buffers; 5: port_sl_bytes, port_vl_wait_ps) */
	return "ibqos-sim 5";
}

/* ---- events, packets, kicks ------------------------------------------------ */

/* A busy port is not kicked: run_kicks() would pass over it (nothing in the event makes a port
 * idle after something kicked it: a transmission's end frees its port first). An arrival behind
 * a busy output and a sender's own kick from its next send pass cost about 20 instructions
 * each in the kick list. */
void sim_kick(struct ibs_sim *s, uint32_t gport)
{
	if (s->pflags[gport] & (PORT_KICKED | PORT_BUSY))
		return;
	/* |=: a port kicked between sends keeps PORT_IN_TURN, which port_nothing_to_arbitrate()
	 * reads to know vlarb_decide() has a turn to end */
	s->pflags[gport] |= PORT_KICKED;
	s->kick[s->n_kick++] = gport; /* at most one entry per port: never overflows */
}

static void run_kicks(struct ibs_sim *s)
{
	for (uint32_t i = 0; i < s->n_kick; i++) {
		uint32_t g = s->kick[i];
		s->pflags[g] &= (uint8_t)~PORT_KICKED;
		if (port_busy(s, g) || s->at[g].peer < 0)
			continue;
		sim_try_send(s, g);
	}
	s->n_kick = 0;
}

/* The VLs a port can ever send on: what the SL2VL rows it sends by map some SL to, below its
 * operational VLs (sw_arrive drops the rest; a CA's flows are checked against them). A switch
 * output is fed by every input's (in, out) row, a CA port by its (0, port) row. Rows out of
 * range are refused later (setup_nodes, the endpoints' check) and add nothing here. */
static uint16_t port_reach(const struct ibs_sim *s, uint32_t g, const uint16_t *row_vls)
{
	const struct ibs_config *c = &s->cfg;
	const struct port *p = &s->ports[g];
	uint32_t node = s->port_node[g];
	const uint16_t *idx = c->sl2vl_idx + c->node_sl2vl_off[node];
	uint32_t nports = c->node_nports[node], ins = c->node_is_switch[node] ? nports : 1;
	uint16_t vls = 0;

	for (uint32_t in = 0; in < ins; in++) {
		uint16_t r = idx[in * nports + p->num];

		if (r < c->n_sl2vl_rows)
			vls |= row_vls[r];
	}
	return vls & (uint16_t)((1u << p->nvl) - 1);
}

static int port_arb_init(struct ibs_sim *s, uint32_t g, const uint16_t *row_vls, char *err,
			 size_t errlen)
{
	const struct ibs_config *c = &s->cfg;
	uint16_t reach = port_reach(s, g, row_vls);

	/* input buffer keys, request maps and the per-(port, VL) arrays span the VLs some port
	 * can send on, not every operational one (dla on Debian's 8 VLs: 2) */
	while (reach >> s->nvl)
		s->nvl++;

	if (c->port_arb_high_len[g] + c->port_arb_low_len[g] == 0)
		return sim_fail(err, errlen, -EINVAL, "port %u: no VLArb table", g);
	if (vlarb_init(&s->ports[g].arb, c->arb_entries + c->port_arb_high_off[g],
		       c->port_arb_high_len[g], c->arb_entries + c->port_arb_low_off[g],
		       c->port_arb_low_len[g], c->port_arb_limit[g], c->accounting, reach))
		return sim_fail(err, errlen, -EINVAL,
				"port %u: VLArb table over 64 entries or VL above 14", g);
	return 0;
}

static int setup_ports(struct ibs_sim *s, char *err, size_t errlen)
{
	const struct ibs_config *c = &s->cfg;

	for (uint32_t n = 0; n < c->n_nodes; n++)
		for (uint32_t i = 0; i < c->node_nports[n]; i++) {
			uint32_t g = c->node_port_base[n] + i;

			if (s->port_node[g] != NIL)
				return sim_fail(err, errlen, -EINVAL,
						"port %u: claimed by two nodes", g);
			s->port_node[g] = n;
			s->ports[g].num = (uint16_t)i;
		}
	for (uint32_t g = 0; g < c->n_ports; g++) {
		struct port *p = &s->ports[g];
		int32_t q = c->port_peer[g];

		s->at[g].peer = q;
		if (s->port_node[g] == NIL)
			return sim_fail(err, errlen, -EINVAL, "port %u: belongs to no node", g);
		if (q < 0)
			continue;
		if ((uint32_t)q >= c->n_ports || c->port_peer[q] != (int32_t)g)
			return sim_fail(err, errlen, -EINVAL, "port %u: peer %d does not link back",
					g, q);
		if (p->num == 0)
			return sim_fail(err, errlen, -EINVAL, "port %u: port 0 cannot be linked",
					g);
		uint8_t nvl = c->port_op_vls[g] < c->port_op_vls[q] ? c->port_op_vls[g]
								    : c->port_op_vls[q];
		if (nvl < 1 || nvl > IBS_MAX_VLS)
			return sim_fail(err, errlen, -EINVAL, "port %u: %u operational VLs", g,
					nvl);
		if (!(c->port_rate_gbps[g] > 0))
			return sim_fail(err, errlen, -EINVAL, "port %u: rate must be positive", g);
		p->nvl = nvl;
		p->ps_per_byte = 8000.0 / c->port_rate_gbps[g];
		for (uint32_t v = 0; v < nvl; v++)
			*port_credits(p, v) = c->buf_credits;
	}
	uint16_t *row_vls = calloc(c->n_sl2vl_rows ? c->n_sl2vl_rows : 1, sizeof(*row_vls));

	if (!row_vls)
		return -ENOMEM;
	for (uint32_t r = 0; r < c->n_sl2vl_rows; r++)
		for (uint32_t sl = 0; sl < 16; sl++)
			if (c->sl2vl_rows[r * 16 + sl] < IBS_MAX_VLS)
				row_vls[r] |= (uint16_t)(1u << c->sl2vl_rows[r * 16 + sl]);
	int rc = 0;
	for (uint32_t g = 0; g < c->n_ports && !rc; g++) {
		struct port *p = &s->ports[g];

		if (s->at[g].peer < 0)
			continue;
		p->peer_sw = c->node_is_switch[s->port_node[s->at[g].peer]] != 0;
		rc = port_arb_init(s, g, row_vls, err, errlen);
		if (!rc &&
		    (vlarb_served(&p->arb) >> PORT_NEAR_VLS ||
		     p->arb.high.n + p->arb.low.n > PORT_NEAR_ENTRIES))
			s->port_far = true;
	}
	free(row_vls);
	if (!s->nvl)
		s->nvl = 1;
	s->nvl_inv = ((1ull << 32) + s->nvl - 1) / s->nvl;
	return rc;
}

/* Switches whose SL2VL index matrices are equal read one copy of it: an arrival reads its
 * switch's (in, out) entry, and with a matrix per switch that line missed on 0.7 hops in 1 at
 * 2550 CAs (510 matrices of 800 bytes, 0.4 MB); a fabric's switches mostly share one (dla's
 * 2550-CA dragonfly: all 510). Compared with the first SL2VL_SHARED distinct ones only, so
 * set-up stays linear in the switches. */
enum { SL2VL_SHARED = 16 };

static void share_sl2vl(struct sw *w, const struct sw **distinct, uint32_t *n)
{
	size_t bytes = (size_t)w->nports * w->nports * sizeof(*w->sl2vl);

	for (uint32_t i = 0; i < *n; i++)
		if (distinct[i]->nports == w->nports &&
		    !memcmp(distinct[i]->sl2vl, w->sl2vl, bytes)) {
			w->sl2vl = distinct[i]->sl2vl;
			return;
		}
	if (*n < SL2VL_SHARED)
		distinct[(*n)++] = w;
}

static int setup_nodes(struct ibs_sim *s, char *err, size_t errlen)
{
	const struct ibs_config *c = &s->cfg;

	for (uint32_t n = 0; n < c->n_nodes; n++) {
		s->node_sw[n] = c->node_is_switch[n] ? (int32_t)s->n_sw++ : -1;
		s->node_ep[n] = -1;
	}
	s->sws = calloc(s->n_sw ? s->n_sw : 1, sizeof(*s->sws));
	if (!s->sws)
		return -ENOMEM;
	for (uint32_t g = 0; g < c->n_ports; g++) {
		const struct port *p = &s->ports[g];

		s->at[g] = (struct port_at){.sw = s->node_sw[s->port_node[g]],
					    .num = p->num,
					    .nvl = p->nvl,
					    .peer = s->at[g].peer,
					    .peer_sw = -1};
	}
	for (uint32_t g = 0; g < c->n_ports; g++)
		if (s->at[g].peer >= 0) {
			const struct port_at *q = &s->at[s->at[g].peer];

			s->at[g].peer_sw = q->sw;
			s->at[g].peer_num = (uint8_t)q->num;
		}
	const struct sw *distinct[SL2VL_SHARED];
	uint32_t n_distinct = 0;

	for (uint32_t n = 0; n < c->n_nodes; n++) {
		if (s->node_sw[n] < 0)
			continue;
		struct sw *w = &s->sws[s->node_sw[n]];

		w->node = n;
		w->nports = c->node_nports[n];
		w->port_base = c->node_port_base[n];
		w->route = c->routes + c->node_route_off[n];
		w->sl2vl = c->sl2vl_idx + c->node_sl2vl_off[n];
		for (uint32_t i = 0; i < w->nports * w->nports; i++)
			if (w->sl2vl[i] >= c->n_sl2vl_rows)
				return sim_fail(err, errlen, -EINVAL,
						"node %u: SL2VL row out of range", n);
		share_sl2vl(w, distinct, &n_distinct);
	}
	for (uint32_t e = 0; e < s->n_ep; e++) {
		uint32_t g = c->ep_port[e];

		if (g >= c->n_ports)
			return sim_fail(err, errlen, -EINVAL, "endpoint %u: port %u out of range",
					e, g);
		struct port *p = &s->ports[g];
		uint32_t node = s->port_node[g];

		if (is_switch(s, node) || s->at[g].peer < 0 || s->port_ep[g] >= 0)
			return sim_fail(err, errlen, -EINVAL,
					"endpoint %u: port %u is not a linked CA port", e, g);
		if (c->sl2vl_idx[c->node_sl2vl_off[node] + p->num] >= c->n_sl2vl_rows)
			return sim_fail(err, errlen, -EINVAL, "endpoint %u: SL2VL row out of range",
					e);
		s->port_ep[g] = (int32_t)e;
		s->eps[e].gport = g;
		s->eps[e].node = node;
		if (s->node_ep[node] < 0)
			s->node_ep[node] = (int32_t)e;
	}
	return 0;
}

static int alloc_stats(struct ibs_sim *s)
{
	int rc = 0;

	s->klass = calloc(s->cfg.n_classes, sizeof(*s->klass));
	s->klass_out = calloc(s->cfg.n_classes, sizeof(*s->klass_out));
	s->nsl = s->cfg.pair_sl ? IBS_NUM_SLS : 1;
	for (uint32_t i = 0; i < s->cfg.n_flows; i++)
		if (s->cfg.flows[i].sl >= s->nsl)
			s->nsl = s->cfg.flows[i].sl + 1u;
	s->port_vl_bytes = calloc((size_t)s->n_ports * (s->nvl ? s->nvl : 1), sizeof(uint64_t));
	s->port_sl_bytes = calloc((size_t)s->n_ports * s->nsl, sizeof(uint64_t));
	s->pub_vl_bytes = calloc((size_t)s->n_ports * 16, sizeof(uint64_t));
	s->pub_sl_bytes = calloc((size_t)s->n_ports * 16, sizeof(uint64_t));
	s->port_vl_wait_ps = calloc((size_t)s->n_ports * 16, sizeof(uint64_t));
	s->vl_last_tx = calloc((size_t)s->n_ports * (s->nvl ? s->nvl : 1), sizeof(uint32_t));
	s->ep_rx = calloc(s->n_ep ? s->n_ep : 1, sizeof(uint64_t));
	s->ep_tx = calloc(s->n_ep ? s->n_ep : 1, sizeof(uint64_t));
	if (!s->klass || !s->klass_out || !s->port_vl_bytes || !s->port_sl_bytes ||
	    !s->pub_vl_bytes || !s->pub_sl_bytes || !s->port_vl_wait_ps || !s->vl_last_tx ||
	    !s->ep_rx || !s->ep_tx)
		return -ENOMEM;
	for (uint32_t i = 0; i < IBS_NUM_SLS && !rc; i++)
		if (!(rc = hist_init(&s->sl[i].lat)))
			rc = hist_init(&s->sl[i].net);
	for (uint32_t i = 0; i < s->cfg.n_classes && !rc; i++)
		if (!(rc = hist_init(&s->klass[i].lat)))
			rc = hist_init(&s->klass[i].net);
	return rc;
}

int ibs_create(const struct ibs_config *cfg, struct ibs_sim **out, char *err, size_t errlen)
{
	struct ibs_sim *s;
	int rc;

	if (err && errlen)
		err[0] = 0;
	if (!cfg || !out)
		return sim_fail(err, errlen, -EINVAL, "no configuration");
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->free_pkt = NIL;
	s->evq_ops = ibs_evq_find(cfg->evq);
	if (!s->evq_ops) {
		rc = sim_fail(err, errlen, -EINVAL,
			      "event queue '%s': unknown (calendar, heap, list)", cfg->evq);
		goto bad;
	}
	if ((rc = sim_copy_config(s, cfg, err, errlen)) ||
	    (rc = sim_check_params(&s->cfg, err, errlen)))
		goto bad;
	s->n_nodes = cfg->n_nodes;
	s->n_ports = cfg->n_ports;
	s->n_ep = cfg->n_endpoints;
	s->ports = aligned_alloc(64, (size_t)s->n_ports * sizeof(*s->ports));
	if (s->ports) /* zeroed at once: ibs_destroy() reads every port's arbiter */
		memset(s->ports, 0, (size_t)s->n_ports * sizeof(*s->ports));
	s->node_sw = malloc((size_t)s->n_nodes * sizeof(int32_t));
	s->node_ep = malloc((size_t)s->n_nodes * sizeof(int32_t));
	s->port_ep = malloc((size_t)s->n_ports * sizeof(int32_t));
	s->eps = calloc(s->n_ep ? s->n_ep : 1, sizeof(*s->eps));
	s->flows = aligned_alloc(64, (cfg->n_flows ? cfg->n_flows : 1) * sizeof(*s->flows));
	if (s->flows)
		memset(s->flows, 0, (cfg->n_flows ? cfg->n_flows : 1) * sizeof(*s->flows));
	s->at = calloc(s->n_ports ? s->n_ports : 1, sizeof(*s->at));
	s->port_node = malloc((s->n_ports ? s->n_ports : 1) * sizeof(*s->port_node));
	s->reading = calloc(s->n_ports ? s->n_ports : 1, 1);
	s->kick = malloc((size_t)s->n_ports * sizeof(uint32_t));
	s->pflags = calloc(s->n_ports ? s->n_ports : 1, 1);
	rc = -ENOMEM;
	if (cfg->audit && !(s->credits_back = calloc((size_t)s->n_ports * 16, sizeof(uint32_t))))
		goto bad;
	if (!s->ports || !s->at || !s->port_node || !s->reading || !s->node_sw || !s->node_ep ||
	    !s->port_ep || !s->eps || !s->flows || !s->kick || !s->pflags)
		goto bad;
	for (uint32_t g = 0; g < s->n_ports; g++) {
		s->port_node[g] = NIL;
		s->port_ep[g] = -1;
	}
	if ((rc = setup_ports(s, err, errlen)) || (rc = setup_nodes(s, err, errlen)) ||
	    (rc = sw_setup(s)) || (rc = alloc_stats(s)) || (rc = ca_setup(s, err, errlen)) ||
	    (rc = s->evq_ops->create(&s->evq)))
		goto bad;
	if (s->evq_ops == &ibs_evq_calendar)
		s->cal = s->evq;
	s->prefetch = sim_prefetch_pays(s);
	s->res.status = IBS_RUNNING;
	for (uint32_t e = 0; e < s->n_ep; e++)
		sim_kick(s, s->eps[e].gport);
	if (s->cfg.deadlock_ps)
		sim_schedule(s, s->cfg.deadlock_ps, EV_CHECK, 0, 0, 0);
	*out = s;
	return 0;
bad:
	if (rc == -ENOMEM && err && errlen && !err[0])
		sim_fail(err, errlen, rc, "out of memory");
	ibs_destroy(s);
	return rc;
}

void ibs_destroy(struct ibs_sim *s)
{
	if (!s)
		return;
	if (s->evq)
		s->evq_ops->destroy(s->evq);
	for (uint32_t i = 0; i < EVQ_FIXED; i++)
		evq_fifo_free(&s->fixed[i]);
	for (uint32_t i = 0; i < IBS_NUM_SLS; i++) {
		hist_free(&s->sl[i].lat);
		hist_free(&s->sl[i].net);
	}
	if (s->klass)
		for (uint32_t i = 0; i < s->cfg.n_classes; i++) {
			hist_free(&s->klass[i].lat);
			hist_free(&s->klass[i].net);
		}
	sim_free_config(&s->cfg);
	if (s->ports)
		for (uint32_t g = 0; g < s->n_ports; g++)
			vlarb_free(&s->ports[g].arb);
	free(s->ports);
	free(s->at);
	free(s->port_node);
	free(s->reading);
	free(s->node_sw);
	free(s->node_ep);
	free(s->port_ep);
	free(s->sws);
	free(s->queues);
	free(s->credits_back);
	free(s->oq_credits);
	free(s->oq_back);
	free(s->outs_all);
	free(s->eps);
	free(s->flows);
	pkt_pool_free(s);
	free(s->kick);
	free(s->pflags);
	free(s->klass);
	free(s->klass_out);
	free(s->port_vl_bytes);
	free(s->port_sl_bytes);
	free(s->pub_vl_bytes);
	free(s->pub_sl_bytes);
	free(s->port_vl_wait_ps);
	free(s->vl_last_tx);
	free(s->ep_rx);
	free(s->ep_tx);
	free(s->witness);
	free(s);
}

/* ---- event loop ---------------------------------------------------------- */

static void dispatch(struct ibs_sim *s, const struct ibs_event *ev)
{
	switch (ev->kind) {
	case EV_ARRIVE:
		ca_arrive(s, ev->obj, ev->arg);
		break;
	case EV_ARRIVE_SW:
		sw_arrive(s, ev);
		break;
	case EV_TXDONE:
		link_tx_done(s, ev);
		break;
	case EV_CREDIT:
		link_credit(s, ev->obj, ev->vl, ev->arg);
		break;
	case EV_WAKE:
		ca_wake(s, ev->obj);
		break;
	case EV_CHECK: {
		bool still = s->in_flight && s->now - s->res.last_move_ps >= s->cfg.deadlock_ps;
		int rc = deadlock_check(s, still);

		if (rc)
			s->error = rc;
		else if (s->res.status == IBS_RUNNING)
			sim_schedule(s, s->now + (s->cfg.deadlock_ps + 1) / 2, EV_CHECK, 0, 0, 0);
		break;
	}
	}
}

/* The earliest of the queue's next event and the FIFOs' heads; *from: 0 the queue, i + 1 FIFO i.
 * (An empty FIFO holding a sentinel that every event comes before, instead of the test of n,
 * cost 0.67 M instructions more at 72 CAs: the credits' FIFO is mostly empty, and the test is
 * cheaper than the comparison.) */
static inline const struct ibs_event *next_event(const struct ibs_sim *s, uint32_t *from)
{
	const struct ibs_event *next = s->cal ? cal_peek(s->cal) : s->evq_ops->peek_next(s->evq);

	*from = 0;
	for (uint32_t i = 0; i < EVQ_FIXED; i++)
		if (s->fixed[i].n) {
			const struct ibs_event *h = evq_fifo_head(&s->fixed[i]);

			if (!next || ibs_event_before(h, next)) {
				next = h;
				*from = i + 1;
			}
		}
	return next;
}

int ibs_run(struct ibs_sim *s, uint64_t until)
{
	struct ibs_event ev;

	if (!s)
		return -EINVAL;
	if (s->error)
		return s->error;
	if (until > s->cfg.end_ps)
		until = s->cfg.end_ps;
	run_kicks(s); /* the CAs kicked by ibs_create() start at time 0 */
	while (s->res.status == IBS_RUNNING) {
		uint32_t from;
		const struct ibs_event *next = next_event(s, &from);

		if (!next || next->ts >= until) {
			if (!next && s->in_flight) { /* nothing can happen any more */
				int rc = deadlock_check(s, true);
				if (rc)
					return rc;
				if (s->res.status != IBS_RUNNING)
					break;
			}
			if (until > s->now)
				s->now = until;
			if (until == s->cfg.end_ps)
				s->res.status = IBS_DONE;
			break;
		}
		if (from)
			evq_fifo_pop(&s->fixed[from - 1], &ev);
		else if (s->cal && s->cal->ring)
			cal_pop_ring(s->cal, &ev); /* as remove_next(), without the second look */
		else
			s->evq_ops->remove_next(s->evq, &ev);
		if (s->prefetch)
			sim_prefetch(s, &ev);
		s->now = ev.ts;
		s->res.events++;
		s->pending--;
		dispatch(s, &ev);
		run_kicks(s);
		if (s->error)
			return s->error;
	}
	return 0;
}
