/* The configuration a simulation is created from: checked and copied whole, so the caller's
 * arrays may go away once ibs_create() returns, and freed with the simulation. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int sim_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
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

int sim_copy_config(struct ibs_sim *s, const struct ibs_config *cfg, char *err, size_t errlen)
{
	struct ibs_config *c = &s->cfg;
	size_t n_arb = 0, n_route = 0, n_idx = 0;

	*c = *cfg;
	c->evq = NULL;
	if (!cfg->n_nodes || !cfg->n_ports)
		return sim_fail(err, errlen, -EINVAL, "empty fabric");
	for (uint32_t n = 0; n < cfg->n_nodes; n++) {
		uint64_t np = cfg->node_nports[n];

		if (!np || cfg->node_port_base[n] + np > cfg->n_ports)
			return sim_fail(err, errlen, -EINVAL,
					"node %u: ports outside the port table", n);
		if (np > 255)
			return sim_fail(err, errlen, -EINVAL, "node %u: more than 254 ports", n);
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

void sim_free_config(struct ibs_config *c)
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

int sim_check_params(const struct ibs_config *c, char *err, size_t errlen)
{
	if (c->mtu < 1 || c->mtu > 65535)
		return sim_fail(err, errlen, -EINVAL, "mtu %u: outside 1..65535", c->mtu);
	if ((uint64_t)c->buf_credits * IBS_CREDIT < c->mtu || c->buf_credits > 1u << 20)
		return sim_fail(err, errlen, -EINVAL,
				"buffer of %u credits cannot hold one %u-byte packet",
				c->buf_credits, c->mtu);
	if (c->voq_buffers > 1)
		return sim_fail(err, errlen, -EINVAL,
				"voq_buffers %u: unknown (0 shared, 1 per output)", c->voq_buffers);
	if (c->accounting > IBS_ACCT_PACKET)
		return sim_fail(err, errlen, -EINVAL, "accounting %u: unknown", c->accounting);
	if (c->end_ps <= c->warmup_ps)
		return sim_fail(err, errlen, -EINVAL, "end time must be after the warm-up");
	if (!c->n_classes || c->n_classes > 4096)
		return sim_fail(err, errlen, -EINVAL, "n_classes %u: outside 1..4096",
				c->n_classes);
	for (uint32_t r = 0; r < (uint64_t)c->n_sl2vl_rows * 16; r++)
		if (c->sl2vl_rows[r] > 15)
			return sim_fail(err, errlen, -EINVAL, "sl2vl row %u: VL %u above 15",
					r / 16, c->sl2vl_rows[r]);
	for (uint32_t i = 0; i < c->n_flows; i++) {
		const struct ibs_flow *f = &c->flows[i];

		if (f->src >= c->n_endpoints)
			return sim_fail(err, errlen, -EINVAL,
					"flow %u: source %u is not an endpoint", i, f->src);
		if (f->sl >= IBS_NUM_SLS || f->klass >= c->n_classes)
			return sim_fail(err, errlen, -EINVAL,
					"flow %u: SL %u or class %u out of range", i, f->sl,
					f->klass);
		if (f->process > IBS_SATURATE)
			return sim_fail(err, errlen, -EINVAL, "flow %u: unknown injection process",
					i);
		if (!f->pkt_bytes || f->pkt_bytes > c->mtu || !f->msg_bytes)
			return sim_fail(err, errlen, -EINVAL,
					"flow %u: packet of %u bytes with MTU %u", i, f->pkt_bytes,
					c->mtu);
		if (f->process != IBS_SATURATE && !(f->rate_gbps > 0))
			return sim_fail(err, errlen, -EINVAL, "flow %u: rate must be positive", i);
		if (f->dest_mode == IBS_DEST_UNIFORM) {
			if (c->n_endpoints < 2)
				return sim_fail(err, errlen, -EINVAL,
						"flow %u: uniform traffic needs two endpoints", i);
		} else if (f->dest_mode != IBS_DEST_SET || !f->dest_len ||
			   (uint64_t)f->dest_off + f->dest_len > c->n_dests) {
			return sim_fail(err, errlen, -EINVAL,
					"flow %u: destination set out of range", i);
		}
	}
	for (uint32_t i = 0; i < c->n_dests; i++)
		if (c->dests[i] >= c->n_endpoints)
			return sim_fail(err, errlen, -EINVAL, "destination %u is not an endpoint",
					c->dests[i]);
	return 0;
}
