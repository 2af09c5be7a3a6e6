/*
 * Before dla hands the sweep to the next engine of routing_engine (dfsssp, lash): those engines
 * size their deadlock-free layers by the OperVLs of the switch ports as OpenSM last read them
 * (3.3.23 osm_ucast_dfsssp.c get_avail_vl_in_subn, osm_ucast_lash.c init_lash_structures),
 * and on a first sweep that is the power-up value: the link manager applies max_op_vls only
 * after routing. dfsssp then spreads its paths over every VL it believes in (ibsim: VLCap
 * VL0-7), the SLs past the VLs the ports will run share the last VL, and the layers collapse
 * into a credit loop (docs/fallback.md). So the OperVLs the link manager is about to program
 * in this same sweep go into OpenSM's copy of each switch port's PortInfo first. The link
 * manager still sends them: to every switch port on a master's first sweep, and with the
 * state change to every port that comes up later.
 */
#include "ibqos_plugin.h"
#include "dla_sl2vl.h"

unsigned ibqos_settle_op_vls(struct ibqos_ctx *ctx)
{
	cl_qmap_t *sws = &ctx->osm->subn.sw_guid_tbl;
	unsigned changed = 0, low = 0;

	for (cl_map_item_t *it = cl_qmap_head(sws); it != cl_qmap_end(sws); it = cl_qmap_next(it)) {
		osm_node_t *node = ((osm_switch_t *)it)->p_node;

		for (uint8_t p = 1; p < osm_node_get_num_physp(node); p++) {
			osm_physp_t *physp = osm_node_get_physp_ptr(node, p);
			ib_port_info_t *pi;
			uint8_t now, will;

			if (!physp || !osm_physp_get_remote(physp))
				continue;
			pi = &physp->port_info;
			now = ib_port_info_get_op_vls(pi);
			will = osm_physp_calc_link_op_vls(&ctx->osm->log, &ctx->osm->subn, physp,
							  now);
			if (!low || will < low)
				low = will;
			if (will == now)
				continue;
			ib_port_info_set_op_vls(pi, will);
			changed++;
		}
	}
	if (changed)
		ibqos_log(ctx, OSM_LOG_INFO,
			  "dla: %u switch port(s) set to the OperVLs the link manager will "
			  "program (max_op_vls %u), so the next engine layers within %u data VL(s)",
			  changed, ctx->osm->subn.opt.max_op_vls, dla_vls_from_code(low));
	return changed;
}
