/* ibs_audit(): walks every queue and buffer and checks the bookkeeping the hot path keeps
 * incrementally (conservation, credits, reads per input). For tests; needs cfg.audit. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Per-output VOQ buffers: every (port whose peer is a switch, VL, next output) has its own
 * buffer; credits + credits travelling back + occupancy of that queue == the buffer. The
 * occupancy of a packet is in the queue oq_slot() names (the one its sender spent credits
 * of), and of a packet still leaving a switch input in the queue of the output sending it. */
static uint64_t audit_oq(const struct ibs_sim *s)
{
	size_t cells = (size_t)s->n_ports * s->nvl * s->oq_stride;
	uint64_t *occ = calloc(cells, sizeof(uint64_t)), errors = 0;

	if (!occ)
		return 1;
	for (uint32_t i = 0; i < s->cap_pkts; i++) {
		const struct pkt *k = &s->pkts[i];

		if (k->state != PKT_FREE && s->ports[k->up].peer_sw)
			occ[((size_t)k->up * s->nvl + k->vl) * s->oq_stride +
			    oq_slot(s, k->up, k->dst)] += credits_of(k->bytes);
	}
	for (uint32_t g = 0; g < s->n_ports; g++) {
		const struct port *p = &s->ports[g];

		if (port_busy(s, g) && p->tx_credits)
			occ[((size_t)s->at[p->tx_from].peer * s->nvl + p->tx_vl) * s->oq_stride +
			    p->num] += p->tx_credits;
	}
	for (uint32_t g = 0; g < s->n_ports; g++) {
		const struct port *p = &s->ports[g];

		if (s->at[g].peer < 0 || !p->peer_sw)
			continue;
		for (uint32_t v = 0; v < p->nvl; v++)
			for (uint32_t o = 0; o < s->oq_stride; o++) {
				size_t c = ((size_t)g * s->nvl + v) * s->oq_stride + o;

				if (s->oq_credits[c] + s->oq_back[c] + occ[c] != s->cfg.buf_credits)
					errors++;
			}
	}
	free(occ);
	return errors;
}

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
		occ[(size_t)s->at[k->up].peer * 16 + k->vl] += credits_of(k->bytes);
	}
	for (uint32_t g = 0; g < s->n_ports; g++) {
		const struct port *p = &s->ports[g];

		if (port_busy(s, g) && p->tx_credits) {
			occ[(size_t)p->tx_from * 16 + p->tx_vl] += p->tx_credits;
			occ[(size_t)p->tx_from * 16 + 15]++; /* VL15 carries no data: a free slot */
		}
	}
	for (uint32_t g = 0; g < s->n_ports; g++) {
		uint64_t feeding = occ[(size_t)g * 16 + 15];

		if (s->at[g].sw >= 0 &&
		    (s->reading[g] != feeding ||
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
						    (uint32_t)s->at[k->up].peer !=
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

		if (s->at[g].peer < 0 || (s->oq && p->peer_sw))
			continue; /* per-output VOQ buffers: audit_oq() */
		for (uint32_t v = 0; v < p->nvl; v++)
			if (port_credit(p, v) + s->credits_back[(size_t)g * 16 + v] +
				    occ[(size_t)s->at[g].peer * 16 + v] !=
			    s->cfg.buf_credits)
				a->credit_errors++;
	}
	if (s->oq)
		a->credit_errors += audit_oq(s);
	free(occ);
	return 0;
}
