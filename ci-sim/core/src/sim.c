/* Simulation lifecycle: validate and copy the configuration, run the event loop,
 * collect results. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

const char *ibs_version(void)
{
	/* the ABI of ibqos_sim.h: bump with any change to a struct it exposes (2: input_reads,
	 * read_errors; 3: pair_sl) */
	return "ibqos-sim 3";
}

/* ---- events, packets, kicks ------------------------------------------------ */

void sim_schedule(struct ibs_sim *s, uint64_t ts, uint8_t kind, uint32_t obj, uint32_t arg,
		  uint8_t vl)
{
	struct ibs_event ev = {
		.ts = ts, .uid = s->next_uid++, .obj = obj, .arg = arg, .kind = kind, .vl = vl};
	int rc = s->evq_ops->insert(s->evq, &ev);

	if (++s->pending > s->res.max_pending)
		s->res.max_pending = s->pending;
	if (rc && !s->error)
		s->error = rc;
}

void sim_kick(struct ibs_sim *s, uint32_t gport)
{
	if (s->kick_mark[gport])
		return;
	s->kick_mark[gport] = 1;
	s->kick[s->n_kick++] = gport; /* at most one entry per port: never overflows */
}

static void run_kicks(struct ibs_sim *s)
{
	for (uint32_t i = 0; i < s->n_kick; i++) {
		uint32_t g = s->kick[i];
		struct port *p = &s->ports[g];

		s->kick_mark[g] = 0;
		if (p->busy || p->peer < 0)
			continue;
		if (is_switch(s, p->node))
			sw_try_send(s, g);
		else
			ca_try_send(s, g);
	}
	s->n_kick = 0;
}

/* ---- configuration ------------------------------------------------------- */

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static void *dup_array(const void *src, size_t n, size_t size)
{
	void *d = malloc(n ? n * size : 1);

	if (d && n)
		memcpy(d, src, n * size);
	return d;
}

#define DUP(field, n)                                                                              \
	do {                                                                                       \
		if (!(c->field = dup_array(cfg->field, (n), sizeof(*cfg->field))))                 \
			return -ENOMEM;                                                            \
	} while (0)

static int copy_config(struct ibs_sim *s, const struct ibs_config *cfg, char *err, size_t errlen)
{
	struct ibs_config *c = &s->cfg;
	size_t n_arb = 0, n_route = 0, n_idx = 0;

	*c = *cfg;
	c->evq = NULL;
	if (!cfg->n_nodes || !cfg->n_ports)
		return fail(err, errlen, -EINVAL, "empty fabric");
	for (uint32_t n = 0; n < cfg->n_nodes; n++) {
		uint64_t np = cfg->node_nports[n];

		if (!np || cfg->node_port_base[n] + np > cfg->n_ports)
			return fail(err, errlen, -EINVAL, "node %u: ports outside the port table",
				    n);
		if (np > 255)
			return fail(err, errlen, -EINVAL, "node %u: more than 254 ports", n);
		if (cfg->node_sl2vl_off[n] + np * np > n_idx)
			n_idx = cfg->node_sl2vl_off[n] + np * np;
		if (cfg->node_is_switch[n] &&
		    cfg->node_route_off[n] + (size_t)cfg->n_endpoints > n_route)
			n_route = cfg->node_route_off[n] + (size_t)cfg->n_endpoints;
	}
	for (uint32_t p = 0; p < cfg->n_ports; p++) {
		size_t h = (size_t)cfg->port_arb_high_off[p] + cfg->port_arb_high_len[p];
		size_t l = (size_t)cfg->port_arb_low_off[p] + cfg->port_arb_low_len[p];

		n_arb = h > n_arb ? h : n_arb;
		n_arb = l > n_arb ? l : n_arb;
	}
	DUP(node_is_switch, cfg->n_nodes);
	DUP(node_nports, cfg->n_nodes);
	DUP(node_port_base, cfg->n_nodes);
	DUP(node_route_off, cfg->n_nodes);
	DUP(node_sl2vl_off, cfg->n_nodes);
	DUP(port_peer, cfg->n_ports);
	DUP(port_op_vls, cfg->n_ports);
	DUP(port_rate_gbps, cfg->n_ports);
	DUP(port_arb_high_off, cfg->n_ports);
	DUP(port_arb_high_len, cfg->n_ports);
	DUP(port_arb_low_off, cfg->n_ports);
	DUP(port_arb_low_len, cfg->n_ports);
	DUP(port_arb_limit, cfg->n_ports);
	DUP(arb_entries, n_arb);
	DUP(routes, n_route);
	DUP(sl2vl_idx, n_idx);
	DUP(sl2vl_rows, (size_t)cfg->n_sl2vl_rows * 16);
	DUP(ep_port, cfg->n_endpoints);
	DUP(flows, cfg->n_flows);
	DUP(dests, cfg->n_dests);
	if (cfg->pair_sl)
		DUP(pair_sl, (size_t)cfg->n_endpoints * cfg->n_endpoints);
	return 0;
}

static void free_config(struct ibs_config *c)
{
	free((void *)c->node_is_switch);
	free((void *)c->node_nports);
	free((void *)c->node_port_base);
	free((void *)c->node_route_off);
	free((void *)c->node_sl2vl_off);
	free((void *)c->port_peer);
	free((void *)c->port_op_vls);
	free((void *)c->port_rate_gbps);
	free((void *)c->port_arb_high_off);
	free((void *)c->port_arb_high_len);
	free((void *)c->port_arb_low_off);
	free((void *)c->port_arb_low_len);
	free((void *)c->port_arb_limit);
	free((void *)c->arb_entries);
	free((void *)c->routes);
	free((void *)c->sl2vl_idx);
	free((void *)c->sl2vl_rows);
	free((void *)c->ep_port);
	free((void *)c->flows);
	free((void *)c->dests);
	free((void *)c->pair_sl);
}

static int check_params(const struct ibs_config *c, char *err, size_t errlen)
{
	if (c->mtu < 1 || c->mtu > 65535)
		return fail(err, errlen, -EINVAL, "mtu %u: outside 1..65535", c->mtu);
	if ((uint64_t)c->buf_credits * IBS_CREDIT < c->mtu || c->buf_credits > 1u << 20)
		return fail(err, errlen, -EINVAL,
			    "buffer of %u credits cannot hold one %u-byte packet", c->buf_credits,
			    c->mtu);
	if (c->accounting > IBS_ACCT_PACKET)
		return fail(err, errlen, -EINVAL, "accounting %u: unknown", c->accounting);
	if (c->end_ps <= c->warmup_ps)
		return fail(err, errlen, -EINVAL, "end time must be after the warm-up");
	if (!c->n_classes || c->n_classes > 4096)
		return fail(err, errlen, -EINVAL, "n_classes %u: outside 1..4096", c->n_classes);
	for (uint32_t r = 0; r < (uint64_t)c->n_sl2vl_rows * 16; r++)
		if (c->sl2vl_rows[r] > 15)
			return fail(err, errlen, -EINVAL, "sl2vl row %u: VL %u above 15", r / 16,
				    c->sl2vl_rows[r]);
	for (uint32_t i = 0; i < c->n_flows; i++) {
		const struct ibs_flow *f = &c->flows[i];

		if (f->src >= c->n_endpoints)
			return fail(err, errlen, -EINVAL, "flow %u: source %u is not an endpoint",
				    i, f->src);
		if (f->sl >= IBS_NUM_SLS || f->klass >= c->n_classes)
			return fail(err, errlen, -EINVAL, "flow %u: SL %u or class %u out of range",
				    i, f->sl, f->klass);
		if (f->process > IBS_SATURATE)
			return fail(err, errlen, -EINVAL, "flow %u: unknown injection process", i);
		if (!f->pkt_bytes || f->pkt_bytes > c->mtu || !f->msg_bytes)
			return fail(err, errlen, -EINVAL, "flow %u: packet of %u bytes with MTU %u",
				    i, f->pkt_bytes, c->mtu);
		if (f->process != IBS_SATURATE && !(f->rate_gbps > 0))
			return fail(err, errlen, -EINVAL, "flow %u: rate must be positive", i);
		if (f->dest_mode == IBS_DEST_UNIFORM) {
			if (c->n_endpoints < 2)
				return fail(err, errlen, -EINVAL,
					    "flow %u: uniform traffic needs two endpoints", i);
		} else if (f->dest_mode != IBS_DEST_SET || !f->dest_len ||
			   (uint64_t)f->dest_off + f->dest_len > c->n_dests) {
			return fail(err, errlen, -EINVAL, "flow %u: destination set out of range",
				    i);
		}
	}
	for (uint32_t i = 0; i < c->n_dests; i++)
		if (c->dests[i] >= c->n_endpoints)
			return fail(err, errlen, -EINVAL, "destination %u is not an endpoint",
				    c->dests[i]);
	return 0;
}

static int setup_ports(struct ibs_sim *s, char *err, size_t errlen)
{
	const struct ibs_config *c = &s->cfg;

	for (uint32_t n = 0; n < c->n_nodes; n++)
		for (uint32_t i = 0; i < c->node_nports[n]; i++) {
			struct port *p = &s->ports[c->node_port_base[n] + i];

			if (p->node != NIL)
				return fail(err, errlen, -EINVAL, "port %u: claimed by two nodes",
					    c->node_port_base[n] + i);
			p->node = n;
			p->num = (uint16_t)i;
		}
	for (uint32_t g = 0; g < c->n_ports; g++) {
		struct port *p = &s->ports[g];
		int32_t q = c->port_peer[g];

		p->peer = q;
		if (p->node == NIL)
			return fail(err, errlen, -EINVAL, "port %u: belongs to no node", g);
		if (q < 0)
			continue;
		if ((uint32_t)q >= c->n_ports || c->port_peer[q] != (int32_t)g)
			return fail(err, errlen, -EINVAL, "port %u: peer %d does not link back", g,
				    q);
		if (p->num == 0)
			return fail(err, errlen, -EINVAL, "port %u: port 0 cannot be linked", g);
		uint8_t nvl = c->port_op_vls[g] < c->port_op_vls[q] ? c->port_op_vls[g]
								    : c->port_op_vls[q];
		if (nvl < 1 || nvl > IBS_MAX_VLS)
			return fail(err, errlen, -EINVAL, "port %u: %u operational VLs", g, nvl);
		if (!(c->port_rate_gbps[g] > 0))
			return fail(err, errlen, -EINVAL, "port %u: rate must be positive", g);
		p->nvl = nvl;
		if (nvl > s->nvl)
			s->nvl = nvl;
		p->ps_per_byte = 8000.0 / c->port_rate_gbps[g];
		for (uint32_t v = 0; v < nvl; v++)
			p->vl[v].credits = c->buf_credits;
	}
	for (uint32_t g = 0; g < c->n_ports; g++) {
		struct port *p = &s->ports[g];

		if (p->peer < 0)
			continue;
		p->peer_sw = c->node_is_switch[s->ports[p->peer].node] != 0;
		if (c->port_arb_high_len[g] + c->port_arb_low_len[g] == 0)
			return fail(err, errlen, -EINVAL, "port %u: no VLArb table", g);
		if (vlarb_init(&p->arb, c->arb_entries + c->port_arb_high_off[g],
			       c->port_arb_high_len[g], c->arb_entries + c->port_arb_low_off[g],
			       c->port_arb_low_len[g], c->port_arb_limit[g], c->accounting))
			return fail(err, errlen, -EINVAL,
				    "port %u: VLArb table over 64 entries or VL above 14", g);
	}
	return 0;
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
	for (uint32_t g = 0; g < c->n_ports; g++)
		s->ports[g].sw = s->node_sw[s->ports[g].node];
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
				return fail(err, errlen, -EINVAL, "node %u: SL2VL row out of range",
					    n);
	}
	for (uint32_t e = 0; e < s->n_ep; e++) {
		uint32_t g = c->ep_port[e];

		if (g >= c->n_ports)
			return fail(err, errlen, -EINVAL, "endpoint %u: port %u out of range", e,
				    g);
		struct port *p = &s->ports[g];
		if (is_switch(s, p->node) || p->peer < 0 || s->port_ep[g] >= 0)
			return fail(err, errlen, -EINVAL,
				    "endpoint %u: port %u is not a linked CA port", e, g);
		if (c->sl2vl_idx[c->node_sl2vl_off[p->node] + p->num] >= c->n_sl2vl_rows)
			return fail(err, errlen, -EINVAL, "endpoint %u: SL2VL row out of range", e);
		s->port_ep[g] = (int32_t)e;
		s->eps[e].gport = g;
		s->eps[e].node = p->node;
		if (s->node_ep[p->node] < 0)
			s->node_ep[p->node] = (int32_t)e;
	}
	return 0;
}

static int alloc_stats(struct ibs_sim *s)
{
	int rc = 0;

	s->klass = calloc(s->cfg.n_classes, sizeof(*s->klass));
	s->klass_out = calloc(s->cfg.n_classes, sizeof(*s->klass_out));
	s->port_vl_bytes = calloc((size_t)s->n_ports * 16, sizeof(uint64_t));
	s->ep_rx = calloc(s->n_ep ? s->n_ep : 1, sizeof(uint64_t));
	s->ep_tx = calloc(s->n_ep ? s->n_ep : 1, sizeof(uint64_t));
	if (!s->klass || !s->klass_out || !s->port_vl_bytes || !s->ep_rx || !s->ep_tx)
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
		return fail(err, errlen, -EINVAL, "no configuration");
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->free_pkt = NIL;
	s->evq_ops = ibs_evq_find(cfg->evq);
	if (!s->evq_ops) {
		rc = fail(err, errlen, -EINVAL, "event queue '%s': unknown (calendar, heap, list)",
			  cfg->evq);
		goto bad;
	}
	if ((rc = copy_config(s, cfg, err, errlen)) || (rc = check_params(&s->cfg, err, errlen)))
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
	s->kick = malloc((size_t)s->n_ports * sizeof(uint32_t));
	s->kick_mark = calloc(s->n_ports, 1);
	rc = -ENOMEM;
	if (cfg->audit && !(s->credits_back = calloc((size_t)s->n_ports * 16, sizeof(uint32_t))))
		goto bad;
	if (!s->ports || !s->node_sw || !s->node_ep || !s->port_ep || !s->eps || !s->flows ||
	    !s->kick || !s->kick_mark)
		goto bad;
	for (uint32_t g = 0; g < s->n_ports; g++) {
		s->ports[g].node = NIL;
		s->port_ep[g] = -1;
	}
	if ((rc = setup_ports(s, err, errlen)) || (rc = setup_nodes(s, err, errlen)) ||
	    (rc = sw_setup(s)) || (rc = alloc_stats(s)) || (rc = ca_setup(s, err, errlen)) ||
	    (rc = s->evq_ops->create(&s->evq)))
		goto bad;
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
		fail(err, errlen, rc, "out of memory");
	ibs_destroy(s);
	return rc;
}

void ibs_destroy(struct ibs_sim *s)
{
	if (!s)
		return;
	if (s->evq)
		s->evq_ops->destroy(s->evq);
	for (uint32_t i = 0; i < IBS_NUM_SLS; i++) {
		hist_free(&s->sl[i].lat);
		hist_free(&s->sl[i].net);
	}
	if (s->klass)
		for (uint32_t i = 0; i < s->cfg.n_classes; i++) {
			hist_free(&s->klass[i].lat);
			hist_free(&s->klass[i].net);
		}
	free_config(&s->cfg);
	if (s->ports)
		for (uint32_t g = 0; g < s->n_ports; g++)
			vlarb_free(&s->ports[g].arb);
	free(s->ports);
	free(s->node_sw);
	free(s->node_ep);
	free(s->port_ep);
	free(s->sws);
	free(s->queues);
	free(s->credits_back);
	free(s->req_words);
	free(s->rr_all);
	free(s->eps);
	free(s->flows);
	pkt_pool_free(s);
	free(s->kick);
	free(s->kick_mark);
	free(s->klass);
	free(s->klass_out);
	free(s->port_vl_bytes);
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
		if (is_switch(s, s->ports[ev->obj].node))
			sw_arrive(s, ev->obj, ev->arg);
		else
			ca_arrive(s, ev->obj, ev->arg);
		break;
	case EV_TXDONE:
		link_tx_done(s, ev->obj);
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
		const struct ibs_event *next = s->evq_ops->peek_next(s->evq);

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
		s->evq_ops->remove_next(s->evq, &ev);
		if (s->prefetch)
			sim_prefetch(s);
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

const struct ibs_results *ibs_results(struct ibs_sim *s)
{
	struct ibs_results *r = &s->res;
	uint64_t end = s->now < s->cfg.end_ps ? s->now : s->cfg.end_ps;

	r->now_ps = s->now;
	r->window_ps = end > s->cfg.warmup_ps ? end - s->cfg.warmup_ps : 0;
	r->in_flight = s->in_flight;
	for (uint32_t i = 0; i < IBS_NUM_SLS + s->cfg.n_classes; i++) {
		const struct group_acc *a =
			i < IBS_NUM_SLS ? &s->sl[i] : &s->klass[i - IBS_NUM_SLS];
		struct ibs_group *g =
			i < IBS_NUM_SLS ? &s->sl_out[i] : &s->klass_out[i - IBS_NUM_SLS];

		g->rx_pkts = a->rx_pkts;
		g->rx_bytes = a->rx_bytes;
		g->tx_pkts = a->tx_pkts;
		g->tx_bytes = a->tx_bytes;
		hist_summary(&a->lat, &g->latency);
		hist_summary(&a->net, &g->net_latency);
	}
	memcpy(r->sl, s->sl_out, sizeof(r->sl));
	r->n_classes = s->cfg.n_classes;
	r->klass = s->klass_out;
	for (uint32_t g = 0; g < s->n_ports; g++)
		for (uint32_t v = 0; v < IBS_MAX_VLS; v++)
			s->port_vl_bytes[(size_t)g * 16 + v] = s->ports[g].vl[v].bytes;
	r->port_vl_bytes = s->port_vl_bytes;
	r->ep_rx_bytes = s->ep_rx;
	r->ep_tx_bytes = s->ep_tx;
	r->witness_len = s->witness_len;
	r->witness = s->witness;
	return r;
}

/* ---- audit --------------------------------------------------------------- */

int ibs_audit(const struct ibs_sim *s, struct ibs_audit *a)
{
	uint64_t *occ, queued_state = 0, alloc = 0;

	if (!s->credits_back)
		return -ENOTSUP; /* created without cfg.audit */
	occ = calloc((size_t)s->n_ports * 16, sizeof(uint64_t));
	if (!occ)
		return -ENOMEM;
	memset(a, 0, sizeof(*a));
	for (uint32_t i = 0; i < s->cap_pkts; i++) {
		const struct pkt *k = &s->pkts[i];

		if (k->state == PKT_FREE)
			continue;
		alloc++;
		queued_state += k->state == PKT_QUEUED;
		occ[(size_t)s->ports[k->up].peer * 16 + k->vl] += credits_of(k->bytes);
	}
	for (uint32_t g = 0; g < s->n_ports; g++) {
		const struct port *p = &s->ports[g];

		if (p->busy && p->tx_credits) {
			occ[(size_t)p->tx_from * 16 + p->tx_vl] += p->tx_credits;
			occ[(size_t)p->tx_from * 16 + 15]++; /* VL15 carries no data: a free slot */
		}
	}
	for (uint32_t g = 0; g < s->n_ports; g++) {
		uint64_t feeding = occ[(size_t)g * 16 + 15];

		if (s->ports[g].sw >= 0 &&
		    (s->ports[g].reading != feeding ||
		     (s->cfg.input_reads && feeding > s->cfg.input_reads)))
			a->read_errors++;
		occ[(size_t)g * 16 + 15] = 0;
	}
	for (uint32_t i = 0; i < s->n_sw; i++) {
		const struct sw *w = &s->sws[i];

		for (uint32_t in = 0; in < w->nports; in++)
			for (uint32_t v = 0; v < s->nvl; v++)
				for (uint32_t o = 0; o < (s->cfg.voq ? w->nports : 1); o++) {
					const struct queue *q =
						&s->queues[sw_queue_of(s, w, in, v, o)];

					for (uint32_t id = q->head; id != NIL;
					     id = s->pkts[id].next) {
						const struct pkt *k = &s->pkts[id];

						a->queued++;
						if (k->state != PKT_QUEUED || k->vl != v ||
						    (uint32_t)s->ports[k->up].peer !=
							    w->port_base + in ||
						    (s->cfg.voq && k->out != o))
							a->queue_errors++;
						if (a->queued > alloc)
							goto done; /* a cycle in a queue */
					}
				}
	}
done:
	if (a->queued != queued_state)
		a->queue_errors++;
	a->on_link = alloc - queued_state;
	if (alloc != s->in_flight)
		a->queue_errors++;
	for (uint32_t g = 0; g < s->n_ports; g++) {
		const struct port *p = &s->ports[g];

		if (p->peer < 0)
			continue;
		for (uint32_t v = 0; v < p->nvl; v++)
			if (p->vl[v].credits + s->credits_back[(size_t)g * 16 + v] +
				    occ[(size_t)p->peer * 16 + v] !=
			    s->cfg.buf_credits)
				a->credit_errors++;
	}
	free(occ);
	return 0;
}
