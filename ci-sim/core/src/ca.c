/* Channel adapters: unbounded per-flow application queues (kept implicit: a flow only
 * remembers the generation time of its current message), SL -> VL by the CA's SL2VL,
 * injection arbitrated by the CA port's VLArb, and the sink that delivers packets. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim.h"

static uint32_t draw_dst(struct ibs_sim *s, struct flow *f)
{
	const struct ibs_flow *sp = &f->spec;

	if (sp->dest_mode == IBS_DEST_UNIFORM) {
		uint32_t d = rng_below(&f->rng, s->n_ep - 1);
		return d >= sp->src ? d + 1 : d;
	}
	return s->cfg.dests[sp->dest_off + rng_below(&f->rng, sp->dest_len)];
}

static uint64_t draw_gap(struct flow *f)
{
	if (f->spec.process == IBS_POISSON)
		return (uint64_t)(rng_exp(&f->rng, (double)f->interval_ps) + 0.5);
	return f->interval_ps;
}

/* The SL and VL of the flow's current message: its pair's SL when the engine gives each
 * path its own, else the flow's. */
static void message_sl(const struct ibs_sim *s, struct flow *f)
{
	uint8_t sl = f->spec.sl;

	if (s->cfg.pair_sl) {
		uint8_t p = s->cfg.pair_sl[(uint64_t)f->spec.src * s->n_ep + f->cur_dst];

		if (p < 16)
			sl = p;
	}
	f->sl = sl;
	f->vl = s->cfg.sl2vl_rows[f->sl2vl_row * 16 + sl];
}

static void next_message(struct ibs_sim *s, struct flow *f)
{
	f->cur_left = f->msg_pkts;
	f->cur_dst = draw_dst(s, f);
	message_sl(s, f);
	if (f->spec.process != IBS_SATURATE)
		f->cur_gen += draw_gap(f);
}

/* Every pair SL of the sources' flows must land on a VL their CA port runs. */
static int check_pair_sls(struct ibs_sim *s, char *err, size_t errlen)
{
	const struct ibs_config *c = &s->cfg;

	for (uint32_t e = 0; e < s->n_ep; e++) {
		const struct port *p = &s->ports[s->eps[e].gport];
		uint32_t row = c->sl2vl_idx[c->node_sl2vl_off[s->eps[e].node] + p->num];

		for (uint32_t d = 0; d < s->n_ep; d++) {
			uint8_t sl = c->pair_sl[(uint64_t)e * s->n_ep + d];

			if (sl < 16 && c->sl2vl_rows[row * 16 + sl] >= p->nvl) {
				snprintf(err, errlen,
					 "pair %u -> %u: SL %u maps to VL %u, not operational on "
					 "its CA port",
					 e, d, sl, c->sl2vl_rows[row * 16 + sl]);
				return -EINVAL;
			}
		}
	}
	return 0;
}

int ca_setup(struct ibs_sim *s, char *err, size_t errlen)
{
	const struct ibs_config *c = &s->cfg;
	uint32_t *count = calloc(s->n_ep + 1, sizeof(*count));

	if (!count)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->n_flows; i++)
		count[c->flows[i].src]++;
	uint32_t base = 0;
	for (uint32_t e = 0; e < s->n_ep; e++) {
		s->eps[e].flow_base = base;
		s->eps[e].nflows = 0;
		base += count[e];
	}
	free(count);

	for (uint32_t i = 0; i < c->n_flows; i++) {
		const struct ibs_flow *sp = &c->flows[i];
		struct ep *e = &s->eps[sp->src];
		struct flow *f = &s->flows[e->flow_base + e->nflows++];
		const struct port *p = &s->ports[e->gport];
		uint32_t row = c->sl2vl_idx[c->node_sl2vl_off[e->node] + p->num]; /* (0, port) */

		f->spec = *sp;
		f->sl2vl_row = row;
		f->sl = sp->sl;
		f->vl = c->sl2vl_rows[row * 16 + sp->sl];
		if (f->vl >= p->nvl) {
			snprintf(err, errlen,
				 "flow %u: SL %u maps to VL %u, not operational on its CA port", i,
				 sp->sl, f->vl);
			return -EINVAL;
		}
		rng_seed(&f->rng, c->seed, i);
		f->msg_pkts = (sp->msg_bytes + sp->pkt_bytes - 1) / sp->pkt_bytes;
		f->last_bytes = sp->msg_bytes - (f->msg_pkts - 1) * sp->pkt_bytes;
		if (sp->process != IBS_SATURATE) {
			f->interval_ps =
				(uint64_t)((double)sp->msg_bytes * 8000.0 / sp->rate_gbps + 0.5);
			if (!f->interval_ps)
				f->interval_ps = 1;
			/* a random phase, so CBR sources do not start in lockstep */
			f->cur_gen = sp->process == IBS_CBR ? rng_next(&f->rng) % f->interval_ps
							    : draw_gap(f);
		}
		f->cur_left = f->msg_pkts;
		f->cur_dst = draw_dst(s, f);
		message_sl(s, f);
	}
	if (c->pair_sl) {
		int ret = check_pair_sls(s, err, errlen);

		if (ret)
			return ret;
	}
	for (uint32_t e = 0; e < s->n_ep; e++)
		for (uint32_t v = 0; v < IBS_MAX_VLS; v++)
			s->eps[e].rr[v] = s->eps[e].nflows ? s->eps[e].nflows - 1 : 0;
	return 0;
}

/* Prefetch hints for a delivery: the packet's cold record, and the switch port that
 * gets its credits back (not otherwise touched since it sent the packet). */
void ca_prefetch_arrive(const struct ibs_sim *s, uint32_t pid)
{
	__builtin_prefetch(&s->meta[pid]);
	port_prefetch_credits(&s->ports[s->pkts[pid].up]);
}

/* Prefetch hints for an injection pass of CA port gport: its endpoint, then the first
 * lines of its flows, which the round robin reads (a handful: one per class usually). */
void ca_prefetch_send(const struct ibs_sim *s, uint32_t gport, int stage)
{
	const struct ep *e = &s->eps[s->port_ep[gport]];

	if (stage == 0) {
		__builtin_prefetch(e);
		return;
	}
	for (uint32_t i = 0; i < e->nflows && i < 4; i++)
		__builtin_prefetch(&s->flows[e->flow_base + i]);
}

static bool flow_ready(struct ibs_sim *s, struct flow *f, uint32_t id)
{
	if (f->spec.process == IBS_SATURATE || f->cur_gen <= s->now)
		return true;
	if (!f->wake_pending) {
		f->wake_pending = true;
		sim_schedule(s, f->cur_gen, EV_WAKE, id, 0, 0);
	}
	return false;
}

void ca_wake(struct ibs_sim *s, uint32_t flow)
{
	struct flow *f = &s->flows[flow];

	f->wake_pending = false;
	sim_kick(s, s->eps[f->spec.src].gport);
}

void ca_try_send(struct ibs_sim *s, uint32_t gport)
{
	struct port *p = &s->ports[gport];
	struct ep *e = &s->eps[s->port_ep[gport]];
	uint32_t head_bytes[IBS_MAX_VLS], cand[IBS_MAX_VLS];
	uint16_t active = 0, nonempty = 0, ready_seen = 0;
	uint32_t n = e->nflows, vls = 0;

	if (!n)
		return;
	/* The VLs some flow's current message is on, in ascending order as before: the others
	 * have nothing to look at (a CA port runs up to 8 VLs, a flow mix uses one or a few). */
	for (uint32_t i = 0; i < n; i++)
		vls |= 1u << s->flows[e->flow_base + i].vl;
	/* per VL, the first ready flow after the one served last (round robin) */
	for (; vls; vls &= vls - 1) {
		uint32_t v = (uint32_t)__builtin_ctz(vls), i = e->rr[v];

		for (uint32_t j = 1; j <= n; j++) {
			i = i + 1 == n ? 0 : i + 1; /* (rr + j) % n, without a division */
			uint32_t id = e->flow_base + i;
			struct flow *f = &s->flows[id];

			if (f->vl != v)
				continue;
			if (!flow_ready(s, f, id))
				continue;
			if (ready_seen & (1u << v))
				continue;
			ready_seen |= (uint16_t)(1u << v);
			nonempty |= (uint16_t)(1u << v);
			uint32_t bytes = f->cur_left == 1 ? f->last_bytes : f->spec.pkt_bytes;
			uint32_t have =
				s->oq ? *send_credits(s, gport, v, f->cur_dst) : port_credit(p, v);
			if (have >= credits_of(bytes)) {
				active |= (uint16_t)(1u << v);
				head_bytes[v] = bytes;
				cand[v] = i;
			}
		}
	}
	if (port_nothing_to_arbitrate(s, gport, active))
		return;
	int vl = vlarb_decide(&p->arb, active, nonempty, head_bytes);
	if (vl < 0) { /* else link_start_tx() notes the turn after its commit */
		port_note_turn(s, gport, &p->arb);
		return;
	}

	uint32_t i = cand[vl], id = e->flow_base + i;
	struct flow *f = &s->flows[id];
	uint32_t pid = pkt_alloc(s);
	if (pid == NIL) {
		port_note_turn(s, gport, &p->arb);
		return;
	}
	struct pkt *k = &s->pkts[pid];
	struct pkt_meta *m = &s->meta[pid];

	e->rr[vl] = i;
	k->bytes = (uint16_t)head_bytes[vl];
	k->sl = f->sl;
	k->dst = f->cur_dst;
	k->tail_ps = 0;
	m->klass = f->spec.klass;
	m->gen_ps = f->spec.process == IBS_SATURATE ? s->now : f->cur_gen;
	m->inj_ps = s->now;
	s->res.injected++;
	if (in_window(s)) {
		s->sl[k->sl].tx_pkts++;
		s->sl[k->sl].tx_bytes += k->bytes;
		s->klass[m->klass].tx_pkts++;
		s->klass[m->klass].tx_bytes += k->bytes;
		s->ep_tx[f->spec.src] += k->bytes;
	}
	if (--f->cur_left == 0)
		next_message(s, f);
	p->tx_credits = 0;
	link_start_tx(s, gport, pid, (uint8_t)vl, 0, 0);
}

void ca_arrive(struct ibs_sim *s, uint32_t gport, uint32_t pid)
{
	struct pkt *k = &s->pkts[pid];

	link_return_credits(s, k->up, k->vl, credits_of(k->bytes), 0); /* a CA: credits per VL */
	if ((int32_t)k->dst != s->port_ep[gport]) {
		s->res.dropped_route++; /* misrouted: the LFTs sent it to another CA */
		pkt_free(s, pid);
		return;
	}
	s->res.delivered++;
	if (in_window(s)) {
		const struct pkt_meta *m = &s->meta[pid];
		uint64_t lat = s->now - m->gen_ps, net = s->now - m->inj_ps;
		struct group_acc *g[2] = {&s->sl[k->sl], &s->klass[m->klass]};

		for (int i = 0; i < 2; i++) {
			g[i]->rx_pkts++;
			g[i]->rx_bytes += k->bytes;
			hist_add(&g[i]->lat, lat);
			hist_add(&g[i]->net, net);
		}
		s->ep_rx[k->dst] += k->bytes;
	}
	pkt_free(s, pid);
}
