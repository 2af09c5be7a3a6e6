/*
 * OpenSM's update_sl2vl hook, called by osm_qos_setup() after a successful dla routing pass
 * (OpenSM calls it only on the engine it actually used): every (in, out) turn gets its class's
 * VL at the level the routing pass gave the turn (seed 003 Fig. 8, plus fault levels). Without
 * a valid sweep it changes nothing, so OpenSM's own qos_*_sl2vl stays in force.
 */
#include "ibqos_plugin.h"
#include "dla_sl2vl.h"

void ibqos_update_sl2vl(void *context, osm_physp_t *port, uint8_t in_port_num, uint8_t out_port_num,
			ib_slvl_table_t *t)
{
	struct ibqos_ctx *ctx = context;
	const struct ibqos_sweep *sw = &ctx->sweep;
	osm_node_t *node = osm_physp_get_node_ptr(port);
	unsigned level = 0;
	int32_t s;

	if (!sw->valid)
		return;
	if (osm_node_get_type(node) == IB_NODE_TYPE_SWITCH) {
		s = ibqos_switch_index(sw, cl_ntoh64(osm_node_get_node_guid(node)));
		if (s < 0)
			return;
		level = dla_turn_level(&sw->dla.vl, (uint32_t)s, in_port_num, out_port_num);
	}
	for (unsigned sl = 0; sl < IBQOS_NUM_SL; sl++)
		ib_slvl_table_set(t, (uint8_t)sl, dla_vl(sw->sl2class, sw->stride, sl, level));
}
