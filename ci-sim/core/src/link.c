/* Links: serialization, virtual cut-through timing and per-VL credit flow control. */
#include <errno.h>

#include "sim.h"

static uint64_t ser_ps(const struct port *p, uint32_t bytes)
{
	return (uint64_t)((double)bytes * p->ps_per_byte + 0.5);
}

/* Send packet pid on VL vl out of gport. The transmission cannot end before
 * earliest_end (the tail must have reached this switch: cut-through). offered: the VLs with a
 * packet at a switch output (0 at a CA); the others of them wait while this one is sent
 * (port_vl_wait_ps), counted here, where the window and the serialization time are known
 * anyway (a switch's send pass worked both out again). */
__attribute__((always_inline)) inline void link_start_tx(struct ibs_sim *s, uint32_t gport,
							 uint32_t pid, uint8_t vl,
							 uint64_t earliest_end, uint16_t offered)
{
	struct port *p = &s->ports[gport];
	struct pkt *k = &s->pkts[pid];
	uint32_t c = credits_of(k->bytes);
	uint64_t ser = ser_ps(p, k->bytes), end = s->now + ser;
	uint32_t peer = (uint32_t)s->at[gport].peer;

	if (end < earliest_end)
		end = earliest_end;
	if (s->oq)
		*send_credits(s, gport, vl, k->dst) -= c;
	else
		*port_credits(p, vl) -= c;
	p->busy_until = end;
	*port_last_tx(s, gport, vl) = (uint32_t)(s->now >> 10);
	s->res.last_move_ps = s->now;
	if (in_window(s)) {
		port_count_bytes(s, gport, vl, k->bytes);
		if (s->nsl > 1) /* one SL: the port's VL bytes add up to it (ibs_results()) */
			s->port_sl_bytes[(size_t)gport * s->nsl + k->sl] += k->bytes;
		for (uint16_t m = offered & (uint16_t) ~(1u << vl); m; m &= (uint16_t)(m - 1))
			s->port_vl_wait_ps[(size_t)gport * 16 + (unsigned)__builtin_ctz(m)] += ser;
	}
	s->res.hops++;
	vlarb_commit(&p->arb, k->bytes);
	/* not kicked: a port sends from its own pass, which run_kicks() starts after clearing the
	 * mark and link_tx_done() only for a port that was busy (never kicked) */
	s->pflags[gport] = (uint8_t)(PORT_BUSY | (vlarb_in_turn(&p->arb) ? PORT_IN_TURN : 0));

	k->up = gport;
	k->vl = vl;
	k->state = PKT_LINK;
	/* arg: the port this transmission will return credits to (a prefetch hint) */
	sim_schedule(s, end, EV_TXDONE, gport, p->tx_credits ? p->tx_up : NIL, pid);
	k->tail_ps = end + s->cfg.prop_ps;
	if (p->peer_sw) {
		/* the head can be forwarded after the switch latency; the tail arrives later */
		const struct port_at *at = &s->at[gport];

		sim_schedule_fixed(s, EVQ_ARRIVE_SW, s->cfg.prop_ps + s->cfg.sw_latency_ps,
				   EV_ARRIVE_SW, peer, pid, at->peer_num, (uint32_t)at->peer_sw);
	} else {
		/* At a CA the packet arrives prop_ps after the transmission's end: link_tx_done()
		 * makes that event, with the uid it gets here, into a FIFO instead of the calendar
		 * (an insert and a removal there cost about 130 instructions). Counted pending now,
		 * as it was when it was made here. */
		s->next_uid++;
		sim_scheduled(s, 0);
	}
}

void link_tx_done(struct ibs_sim *s, const struct ibs_event *ev)
{
	uint32_t gport = ev->obj;
	struct port *p = &s->ports[gport];

	if (!p->peer_sw) {
		struct ibs_event arr = {.ts = s->now + s->cfg.prop_ps,
					.uid = ev->uid + 1,
					.obj = (uint32_t)s->at[gport].peer,
					.arg = ev->aux,
					.kind = EV_ARRIVE};

		if (evq_fifo_push(&s->fixed[EVQ_ARRIVE_CA], &arr) && !s->error)
			s->error = -ENOMEM;
	}
	s->pflags[gport] &= (uint8_t)~PORT_BUSY;
	if (p->tx_credits) { /* the packet has left a switch input buffer */
		/* the packet left the VOQ of this output: with per-output buffers, that queue's
		 * credits go back */
		link_return_credits(s, p->tx_up, p->tx_vl, p->tx_credits, s->oq ? p->num : 0);
		p->tx_credits = 0;
		sw_input_free(s, p->tx_from);
	}
	/* The port's kick would be the event's only one: its send pass at once, as run_kicks()
	 * would call it right after (the pass's own kicks still go to the list, after it). */
	if (s->n_kick)
		sim_kick(s, gport);
	else
		sim_try_send(s, gport);
}

/* Space freed in an input buffer on VL vl (with per-output VOQ buffers: in its queue for
 * output `slot`): tell its sender `up` after the link delay. */
void link_return_credits(struct ibs_sim *s, uint32_t up, uint8_t vl, uint32_t n, uint32_t slot)
{
	struct port *u = &s->ports[up];
	bool oq = s->oq && u->peer_sw;

	/* The sender is busy until after the credits would arrive: it first looks at them
	 * when its transmission ends, so they can be added now without an event. (Strictly
	 * after: at a tie the transmission's end is processed first, without them.) */
	if (port_busy(s, up) && u->busy_until > s->now + s->cfg.prop_ps) {
		if (oq)
			*oq_cell(s->oq_credits, s, up, vl, slot) += n;
		else
			*port_credits(u, vl) += n;
		return;
	}
	if (s->credits_back) {
		if (oq)
			*oq_cell(s->oq_back, s, up, vl, slot) += n;
		else
			s->credits_back[(size_t)up * 16 + vl] += n;
	}
	/* n is at most 1024 credits (a 64 KB packet): the slot rides in the upper half */
	sim_schedule_fixed(s, EVQ_CREDIT, s->cfg.prop_ps, EV_CREDIT, up, n | (oq ? slot << 16 : 0),
			   vl, 0);
}

void link_credit(struct ibs_sim *s, uint32_t gport, uint8_t vl, uint32_t arg)
{
	struct port *p = &s->ports[gport];
	uint32_t n = arg & 0xffff, slot = arg >> 16;

	if (s->oq && p->peer_sw) {
		if (s->credits_back)
			*oq_cell(s->oq_back, s, gport, vl, slot) -= n;
		*oq_cell(s->oq_credits, s, gport, vl, slot) += n;
	} else {
		if (s->credits_back)
			s->credits_back[(size_t)gport * 16 + vl] -= n;
		*port_credits(p, vl) += n;
	}
	sim_kick(s, gport);
}
