/* ibs_results(): the counters of the statistics window as the public structs, refreshed at
 * every call (the caller may ask mid-run). */
#include <string.h>

#include "sim.h"

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
	for (uint32_t g = 0; g < s->n_ports; g++) {
		memcpy(&s->pub_vl_bytes[(size_t)g * 16], &s->port_vl_bytes[(size_t)g * s->nvl],
		       s->nvl * sizeof(uint64_t));
		for (uint32_t v = 0; v < PORT_LAST_VLS && v < s->nvl; v++)
			s->pub_vl_bytes[(size_t)g * 16 + v] += s->ports[g].win_bytes[v];
		memcpy(&s->pub_sl_bytes[(size_t)g * 16], &s->port_sl_bytes[(size_t)g * s->nsl],
		       s->nsl * sizeof(uint64_t));
		/* every packet carries SL 0: the port's SL bytes are its VL bytes, counted at the
		 * same transmissions (link_start_tx counts them once; a line more a hop) */
		if (s->nsl == 1) {
			s->pub_sl_bytes[(size_t)g * 16] = 0;
			for (uint32_t v = 0; v < s->nvl; v++)
				s->pub_sl_bytes[(size_t)g * 16] +=
					s->pub_vl_bytes[(size_t)g * 16 + v];
		}
	}
	r->port_vl_bytes = s->pub_vl_bytes;
	r->port_sl_bytes = s->pub_sl_bytes;
	r->port_vl_wait_ps = s->port_vl_wait_ps;
	r->ep_rx_bytes = s->ep_rx;
	r->ep_tx_bytes = s->ep_tx;
	r->witness_len = s->witness_len;
	r->witness = s->witness;
	return r;
}
