/* Software pipelining of cache misses across events.
 *
 * On a large fabric almost every event touches state that is not in cache (its port,
 * packet, LFT entry, queue), and each handler waits for its loads in turn. The events
 * just behind the next one are already known, and their loads are independent, so the
 * loop starts them early: the event DEPTH places ahead gets its first lines prefetched,
 * the next closer one the lines that depend on those (now likely arrived), and so on.
 * Pure hints: nothing here writes simulation state, so results cannot change. */
#include "sim.h"

/* Stages: port and packet; LFT entry or request maps; output port and queue; head packet
 * (at a CA: its endpoint, then its flows; the packet's cold record and upstream port).
 * One event apart (two apart measured slower). Three stages since the port block holds the
 * arbiter's entries: at 2550 CAs 1.12x over the core's before, against 1.04-1.10x with four
 * (the head-packet stage costs more than it saves), same run. */
enum { DEPTH = 3 };

static void stage(const struct ibs_sim *s, const struct ibs_event *e, int st)
{
	const struct port *p = e->kind <= EV_CREDIT ? &s->ports[e->obj] : NULL;

	/* where a sending port is: the next stage reads it (whether it is a switch's), and so do
	 * the handlers; s->at is 16 bytes a port but does not stay cached at 2550 CAs (its first
	 * touch here missed on 0.85 hops in 1). Arrivals read none. */
	if (st == 0 && (e->kind == EV_TXDONE || e->kind == EV_CREDIT))
		__builtin_prefetch(&s->at[e->obj]);
	switch (e->kind) {
	case EV_ARRIVE: /* the port's block is not read */
		if (st == 0)
			__builtin_prefetch(&s->pkts[e->arg]);
		else if (st == 1)
			ca_prefetch_arrive(s, e->arg);
		break;
	case EV_ARRIVE_SW: /* where it arrives is in the event */
		if (st == 0)
			__builtin_prefetch(&s->pkts[e->arg]);
		else if (st <= 2)
			sw_prefetch_arrive(s, e, st - 1);
		break;
	case EV_TXDONE:
	case EV_CREDIT:
		if (st == 0) {
			port_prefetch_send(s, p);
			if (e->kind == EV_TXDONE && e->arg != NIL)
				port_prefetch_credits(&s->ports[e->arg]);
		} else if (port_on_switch(s, e->obj)) {
			sw_prefetch_send(s, e->obj, st - 1);
		} else if (st <= 2) {
			ca_prefetch_send(s, e->obj, st - 1);
		}
		break;
	case EV_WAKE:
		if (st == 0)
			__builtin_prefetch(&s->flows[e->obj]);
		break;
	default:
		break;
	}
}

/* The pipeline costs instructions on every event; it pays only when the per-hop state
 * (ports, queues, LFT rows) is far beyond cache. Measured on the dla dragonflies: 72 CAs
 * (~0.2 MB of it) 1.5x slower with it, 1056 CAs (~4 MB) 1.15x slower, 2550 CAs (~11 MB)
 * 1.26x faster. The bound sits between the last two. */
bool sim_prefetch_pays(const struct ibs_sim *s)
{
	uint64_t bytes = (uint64_t)s->n_ports * sizeof(struct port) +
		s->n_queues * sizeof(struct queue) + (uint64_t)s->n_sw * s->n_ep; /* LFT rows */

	return bytes > (8u << 20);
}

/* The look-ahead after event ev left: its first entry goes if it is ev (else, an event was
 * inserted before the ones it holds, it starts again), and it is filled up with the earliest
 * of each source's next event not in it, by time alone. Merging the next events anew for each
 * event cost 240 instructions an event at 2550 CAs; this is one comparison per source. A hint,
 * as the queue's run is: an insert into the queue's current bucket before events it holds
 * shifts them, and the look-ahead starts again when that shows. */
static void lookahead_next(struct ibs_sim *s, const struct ibs_event *ev)
{
	struct lookahead *la = &s->la;
	uint32_t len;
	const struct ibs_event *run = s->evq_ops->peek_run(s->evq, &len);

	if (la->n && la->e[la->first].uid == ev->uid) {
		la->taken[la->from[la->first]]--;
		la->first = (la->first + 1) & 7;
		la->n--;
	} else {
		la->n = 0;
		for (uint32_t j = 0; j <= EVQ_FIXED; j++)
			la->taken[j] = 0;
	}
	while (la->n < LOOKAHEAD) {
		const struct ibs_event *best = la->taken[0] < len ? &run[la->taken[0]] : NULL;
		uint32_t from = 0;

		for (uint32_t i = 0; i < EVQ_FIXED; i++)
			if (la->taken[i + 1] < s->fixed[i].n) {
				const struct ibs_event *h =
					evq_fifo_at(&s->fixed[i], la->taken[i + 1]);

				if (!best || h->ts < best->ts) {
					best = h;
					from = i + 1;
				}
			}
		if (!best)
			break;
		uint32_t at = (la->first + la->n++) & 7;
		la->e[at] = *best;
		la->from[at] = (uint8_t)from;
		la->taken[from]++;
	}
	/* The queue's events were written microseconds ago and have left the cache: the one the
	 * look-ahead will copy after the next (about four events on; the FIFOs' are in cache). */
	if (la->taken[0] + 2 < len)
		__builtin_prefetch(&run[la->taken[0] + 2]);
}

void sim_prefetch(struct ibs_sim *s, const struct ibs_event *ev)
{
	const struct lookahead *la = &s->la;

	lookahead_next(s, ev);
	for (uint32_t st = 0; st < DEPTH; st++) {
		uint32_t at = DEPTH - 1 - st;

		if (at < la->n)
			stage(s, &la->e[(la->first + at) & 7], (int)st);
	}
}
