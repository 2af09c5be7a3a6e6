/* Input-queued switch: per-(input, VL) FIFOs (or VOQs split by output), round-robin
 * among requesting inputs per (output, VL), VLArb per output port.
 * Routes come from the LFT and VLs from the per-(in, out) SL2VL; nothing is recomputed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Per-output VOQ buffers: every (port, VL, next output) starts with a full buffer of credits.
 * Rows are as wide as the largest switch; a CA peer's ports keep using port.credits[]. */
static int oq_setup(struct ibs_sim *s)
{
	size_t cells;

	s->oq = true;
	s->oq_stride = 1;
	for (uint32_t i = 0; i < s->n_sw; i++)
		if (s->sws[i].nports > s->oq_stride)
			s->oq_stride = s->sws[i].nports;
	cells = (size_t)s->n_ports * s->nvl * s->oq_stride;
	s->oq_credits = malloc(cells * sizeof(uint32_t));
	if (!s->oq_credits)
		return -ENOMEM;
	for (size_t i = 0; i < cells; i++)
		s->oq_credits[i] = s->cfg.buf_credits;
	if (s->cfg.audit && !(s->oq_back = calloc(cells, sizeof(uint32_t))))
		return -ENOMEM;
	return 0;
}

/* An output record's u64 words: a power of two up to a line (the record never straddles two),
 * whole lines beyond. */
static uint32_t out_words(uint32_t need)
{
	uint32_t n = 1;

	if (need > 8)
		return (need + 7) / 8 * 8;
	while (n < need)
		n *= 2;
	return n;
}

int sw_setup(struct ibs_sim *s)
{
	uint64_t words = 0, queues = 0;

	s->out_hdr = ((2 + s->nvl) * (uint32_t)sizeof(uint16_t) + 7) / 8;
	for (uint32_t i = 0; i < s->n_sw; i++) {
		struct sw *w = &s->sws[i];
		uint32_t keys = w->nports * s->nvl;

		w->words = (keys + 63) / 64;
		w->out_words = out_words(s->out_hdr + s->nvl * w->words);
		w->q_base = (uint32_t)queues;
		queues += (uint64_t)keys * (s->cfg.voq ? w->nports : 1);
		words += ((uint64_t)w->nports * w->out_words + 7) / 8 * 8; /* lines of their own */
	}
	if (queues >= NIL)
		return -E2BIG;
	s->n_queues = queues;
	s->queues = malloc((queues ? queues : 1) * sizeof(*s->queues));
	s->outs_all = aligned_alloc(64, (words ? words : 8) * sizeof(uint64_t));
	if (!s->queues || !s->outs_all)
		return -ENOMEM;
	memset(s->outs_all, 0, (words ? words : 8) * sizeof(uint64_t));
	if (s->cfg.voq && s->cfg.voq_buffers) {
		int rc = oq_setup(s);

		if (rc)
			return rc;
	}
	for (uint64_t q = 0; q < queues; q++)
		s->queues[q] = (struct queue){NIL, NIL, 0};
	words = 0;
	for (uint32_t i = 0; i < s->n_sw; i++) {
		struct sw *w = &s->sws[i];
		uint32_t keys = w->nports * s->nvl;

		w->outs = s->outs_all + words;
		for (uint32_t o = 0; o < w->nports; o++) {
			const struct port_at *at = &s->at[w->port_base + o];

			*out_nvl(sw_out(s, w, o)) = at->peer < 0 ? 0 : at->nvl;
			for (uint32_t v = 0; v < s->nvl; v++) /* the first pass starts at key 0 */
				*out_rr(sw_out(s, w, o), v) = (uint16_t)(keys - 1);
		}
		words += ((uint64_t)w->nports * w->out_words + 7) / 8 * 8;
	}
	return 0;
}

uint32_t sw_queue_of(const struct ibs_sim *s, const struct sw *w, uint32_t in, uint32_t vl,
		     uint32_t out)
{
	return key_queue(s, w, in * s->nvl + vl, out);
}

static void req_set(struct ibs_sim *s, struct sw *w, uint32_t out, uint32_t vl, uint32_t key)
{
	uint64_t *rec = sw_out(s, w, out);

	out_map(s, w, rec, vl)[key >> 6] |= 1ull << (key & 63);
	*out_mask(rec) |= (uint16_t)(1u << vl);
}

static void req_clear(struct ibs_sim *s, struct sw *w, uint32_t out, uint32_t vl, uint32_t key)
{
	uint64_t *rec = sw_out(s, w, out), *m = out_map(s, w, rec, vl);

	m[key >> 6] &= ~(1ull << (key & 63));
	for (uint32_t i = 0; i < w->words; i++)
		if (m[i])
			return;
	*out_mask(rec) &= (uint16_t) ~(1u << vl);
}

/* First requesting key after `after`, cyclically. The map is known to be non-empty. */
static uint32_t next_key(const uint64_t *m, uint32_t words, uint32_t nkeys, uint32_t after)
{
	uint32_t start = after + 1 >= nkeys ? 0 : after + 1;
	uint32_t wi = start >> 6;
	uint64_t bits = m[wi] & (~0ull << (start & 63));

	for (uint32_t n = 0; n <= words; n++) {
		if (bits)
			return (wi << 6) + (uint32_t)__builtin_ctzll(bits);
		wi = wi + 1 == words ? 0 : wi + 1;
		bits = m[wi];
	}
	return NIL;
}

/* Prefetch hints for an arrival at in_gport, in stages: each needs the lines the one
 * before it loaded (packet -> LFT entry -> output port, SL2VL index and queue). */
void sw_prefetch_arrive(const struct ibs_sim *s, const struct ibs_event *ev, int stage)
{
	const struct sw *w = &s->sws[ev->aux];
	const struct pkt *k = &s->pkts[ev->arg];

	if (k->dst >= s->n_ep)
		return;
	if (stage == 0) {
		__builtin_prefetch(&w->route[k->dst]);
		return;
	}
	uint32_t out = w->route[k->dst];
	if (out == 0 || out >= w->nports)
		return;
	port_prefetch_send(s, &s->ports[w->port_base + out]);
	__builtin_prefetch(sw_out(s, w, out));
	__builtin_prefetch(&w->sl2vl[ev->vl * w->nports + out]);
	__builtin_prefetch(&s->queues[sw_queue_of(s, w, ev->vl, k->vl, out)]);
}

/* Prefetch hints for a send pass of output gport: its record (mask, round robins, maps),
 * then the queue each VL's round robin offers, then that queue's head packet. */
void sw_prefetch_send(const struct ibs_sim *s, uint32_t gport, int stage)
{
	const struct port_at *at = &s->at[gport];
	const struct sw *w = &s->sws[at->sw];
	uint32_t o = at->num, nkeys = w->nports * s->nvl;
	uint64_t *rec = sw_out(s, w, o);

	if (stage == 0) {
		__builtin_prefetch(rec);
		return;
	}
	for (uint16_t m = *out_mask(rec); m; m &= (uint16_t)(m - 1)) {
		uint32_t v = (uint32_t)__builtin_ctz(m);
		const uint64_t *map = out_map(s, w, rec, v);
		uint32_t key = next_key(map, w->words, nkeys, *out_rr(rec, v));
		if (key == NIL)
			continue;
		const struct queue *q = &s->queues[key_queue(s, w, key, o)];
		if (stage == 1)
			__builtin_prefetch(q);
		else if (q->head != NIL)
			__builtin_prefetch(&s->pkts[q->head]);
	}
}

static void drop(struct ibs_sim *s, uint32_t pid, uint64_t *counter)
{
	struct pkt *k = &s->pkts[pid];

	link_return_credits(s, k->up, k->vl, credits_of(k->bytes),
			    s->oq ? oq_slot(s, k->up, k->dst) : 0);
	pkt_free(s, pid);
	(*counter)++;
}

/* An arrival at a switch port (EV_ARRIVE_SW: the switch in ev->aux, the port's number in
 * ev->vl): whether the output is linked and its VLs are in the output's record. */
void sw_arrive(struct ibs_sim *s, const struct ibs_event *ev)
{
	struct sw *w = &s->sws[ev->aux];
	uint32_t pid = ev->arg;
	struct pkt *k = &s->pkts[pid];
	uint32_t in = ev->vl, out = w->route[k->dst];
	uint64_t *rec;

	if (out == IBS_NO_ROUTE || out == 0 || out >= w->nports ||
	    !*out_nvl(rec = sw_out(s, w, out))) {
		drop(s, pid, &s->res.dropped_route);
		return;
	}
	uint8_t ovl = s->cfg.sl2vl_rows[(uint32_t)w->sl2vl[in * w->nports + out] * 16 + k->sl];
	if (ovl >= *out_nvl(rec)) { /* includes VL15: the spec drops */
		drop(s, pid, &s->res.dropped_vl);
		return;
	}
	k->out = (uint8_t)out;
	k->out_vl = ovl;
	k->state = PKT_QUEUED;
	k->next = NIL;

	struct queue *q = &s->queues[sw_queue_of(s, w, in, k->vl, out)];
	if (q->head == NIL) {
		q->head = q->tail = pid;
		q->head_bytes = k->bytes;
		req_set(s, w, out, ovl, in * s->nvl + k->vl);
		sim_kick(s, w->port_base + out);
	} else {
		struct pkt *t = &s->pkts[q->tail];

		t->next = pid;
		t->nx_bytes = k->bytes;
		t->nx_out = k->out;
		t->nx_out_vl = k->out_vl;
		q->tail = pid;
	}
}

/* With per-output VOQ buffers: whether the head of key's queue for output o has credits in
 * the queue it will join at the next switch. */
static bool head_fits(struct ibs_sim *s, const struct sw *w, uint32_t o, uint32_t v, uint32_t key)
{
	const struct queue *q = &s->queues[key_queue(s, w, key, o)];

	return *send_credits(s, w->port_base + o, v, s->pkts[q->head].dst) >=
		credits_of(q->head_bytes);
}

/* The key the round robin of (output o, VL v) offers: the first requesting key after the one
 * served last, skipping inputs that are already feeding another output when inputs read one
 * packet at a time, and, with per-output VOQ buffers, heads whose next queue has no room
 * (their credits differ per key; with shared buffers all keys of a VL share one count, so
 * the caller checks it once). NIL if no requesting key can go. */
static uint32_t offered_key(struct ibs_sim *s, const struct sw *w, uint64_t *rec, uint32_t o,
			    uint32_t v, uint32_t nkeys)
{
	const uint64_t *map = out_map(s, w, rec, v);
	uint32_t key = next_key(map, w->words, nkeys, *out_rr(rec, v)), first = key;

	while ((s->cfg.input_reads &&
		s->reading[w->port_base + key_input(s, key)] >= s->cfg.input_reads) ||
	       (s->oq && !head_fits(s, w, o, v, key))) {
		key = next_key(map, w->words, nkeys, key);
		if (key == first)
			return NIL;
	}
	return key;
}

/* A switch input finished feeding an output: outputs it blocked may go now. */
void sw_input_free(struct ibs_sim *s, uint32_t in_gport)
{
	s->reading[in_gport]--;
	if (!s->cfg.input_reads)
		return;
	/* only now: without input_reads the input's s->at entry was a line missed for nothing */
	const struct sw *w = &s->sws[s->at[in_gport].sw];

	for (uint32_t o = 1; o < w->nports; o++)
		if (*out_mask(sw_out(s, w, o)))
			sim_kick(s, w->port_base + o);
}

void sw_try_send(struct ibs_sim *s, uint32_t gport, struct sw *w)
{
	struct port *p = &s->ports[gport];
	uint32_t o = p->num, nkeys = w->nports * s->nvl;
	/* vlarb_decide() reads head_bytes[] of active VLs only (as ca_try_send's): not zeroed,
	 * 64 bytes a pass for nothing */
	uint32_t head_bytes[IBS_MAX_VLS], cand[IBS_MAX_VLS];
	uint64_t *rec = sw_out(s, w, o);
	uint16_t active = 0, nonempty = *out_mask(rec);

	for (uint16_t m = nonempty; m; m &= (uint16_t)(m - 1)) {
		uint32_t v = (uint32_t)__builtin_ctz(m);
		uint32_t key = offered_key(s, w, rec, o, v, nkeys);

		if (key == NIL)
			continue; /* backlogged but blocked, like a VL without credits */
		const struct queue *q = &s->queues[key_queue(s, w, key, o)];
		uint32_t bytes = q->head_bytes;

		if (s->oq || port_credit(p, v) >= credits_of(bytes)) {
			active |= (uint16_t)(1u << v);
			head_bytes[v] = bytes;
			cand[v] = key;
		}
	}
	if (port_nothing_to_arbitrate(s, gport, active))
		return;
	int vl = vlarb_decide(&p->arb, active, nonempty, head_bytes);
	if (vl < 0) { /* else link_start_tx() notes the turn after its commit */
		port_note_turn(s, gport, &p->arb);
		return;
	}

	uint32_t key = cand[vl], in = key_input(s, key), ivl = key - in * s->nvl;
	struct queue *q = &s->queues[key_queue(s, w, key, o)];
	uint32_t pid = q->head;
	struct pkt *k = &s->pkts[pid];

	q->head = k->next;
	if (q->head == NIL)
		q->tail = NIL;
	*out_rr(rec, (uint32_t)vl) = (uint16_t)key;
	if (q->head == NIL) {
		req_clear(s, w, o, (uint32_t)vl, key);
	} else { /* the new head, as recorded in k when it was linked behind it */
		q->head_bytes = k->nx_bytes;
		if (k->nx_out != o || k->nx_out_vl != vl) {
			req_clear(s, w, o, (uint32_t)vl, key);
			req_set(s, w, k->nx_out, k->nx_out_vl, key);
			sim_kick(s, w->port_base + k->nx_out);
		}
	}
	p->tx_from = w->port_base + in;
	p->tx_up = k->up;
	s->reading[p->tx_from]++;
	p->tx_vl = (uint8_t)ivl;
	p->tx_credits = (uint16_t)credits_of(k->bytes);
	link_start_tx(s, gport, pid, (uint8_t)vl, k->tail_ps + s->cfg.sw_latency_ps, nonempty);
}
