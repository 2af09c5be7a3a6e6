/*
 * Checks on a computed sweep against the ports OpenSM will program: every port runs the VLs
 * its classes use there, and holds the VLArb table the file gives it. Both are decided before
 * anything is applied, so a failing check refuses the file or the fabric with nothing written.
 */
#include "ibqos_plugin.h"
#include "dla_sl2vl.h"
#include "ibqos_vlarb.h"

#include <errno.h>
#include <stdio.h>

static const char *label(const struct ibqos_sweep *sw, uint32_t s, char *buf, size_t len)
{
	return dla_switch_label(&sw->fabric, s, buf, len);
}

/*
 * The data VLs a link will run with once the link manager has programmed it, as OpenSM
 * computes them: the lower VLCap of the two ends, capped by max_op_vls. OperVLs itself is
 * still the power-up value during the first sweep (the link manager runs after routing).
 */
static unsigned link_vls(struct ibqos_ctx *ctx, osm_physp_t *physp, osm_physp_t *remote)
{
	uint8_t code = ib_port_info_get_vl_cap(&physp->port_info);

	if (remote && ib_port_info_get_vl_cap(&remote->port_info) < code)
		code = ib_port_info_get_vl_cap(&remote->port_info);
	if (!remote)
		code = ib_port_info_get_op_vls(&physp->port_info);
	if (code > ctx->osm->subn.opt.max_op_vls)
		code = ctx->osm->subn.opt.max_op_vls;
	return dla_vls_from_code(code);
}

/* Every port must carry the VLs its classes use there: the levels its turns were given on
 * top of the class's first VL (seed 003 Fig. 8, per class, plus fault levels). */
int ibqos_check_vls(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, char *err, size_t len)
{
	unsigned not_yet = 0;
	char lb[200];

	for (uint32_t s = 0; s < sw->fabric.nsw; s++) {
		osm_node_t *node = sw->osw[s]->p_node;

		for (unsigned p = 1; p < sw->fabric.sw[s].num_ports; p++) {
			enum dla_role role = dla_port_role(&sw->dla.routes, s, p);
			osm_physp_t *physp = osm_node_get_physp_ptr(node, p), *remote;
			unsigned need, have, levels;

			if (role == DLA_ROLE_NONE || !physp)
				continue;
			remote = osm_physp_get_remote(physp);
			levels = sw->dla.vl.port_levels[sw->dla.routes.port_off[s] + p];
			need = dla_vls_needed(sw->sl2class, sw->stride, levels ? levels : 1);
			have = link_vls(ctx, physp, remote);
			if (have < need) {
				if (role == DLA_ROLE_TERMINAL && remote)
					snprintf(err, len,
						 "switch %s port %u (terminal, CA port "
						 "0x%016" PRIx64
						 ") runs %u data VL(s) but needs %u "
						 "[rule: SL class c starts at VL %uc]",
						 label(sw, s, lb, sizeof(lb)), p,
						 cl_ntoh64(osm_physp_get_port_guid(remote)), have,
						 need, sw->stride);
				else
					snprintf(err, len,
						 "switch %s port %u (%s) runs %u data VL(s) "
						 "but needs %u [rule: SL class c uses VLs %uc to "
						 "%uc+%u]",
						 label(sw, s, lb, sizeof(lb)), p,
						 dla_role_name(role), have, need, sw->stride,
						 sw->stride, levels ? levels - 1 : 0);
				return -EINVAL;
			}
			not_yet += dla_vls_from_code(ib_port_info_get_op_vls(&physp->port_info)) <
				need;
		}
	}
	if (not_yet) {
		/* OpenSM masks SL2VL entries with the current OperVLs: sweep again once the link
		 * manager has raised them, so the tables are programmed unmasked. */
		ctx->osm->subn.force_heavy_sweep = TRUE;
		ibqos_log(ctx, OSM_LOG_INFO,
			  "dla: %u port(s) still run fewer OperVLs than DLA "
			  "needs; requesting another heavy sweep",
			  not_yet);
	}
	return 0;
}

static int check_one_cap(const struct ibqos_sweep *sw, osm_physp_t *physp, const char *where,
			 char *err, size_t len)
{
	const char *role;
	const struct ibqos_vlarb_spec *spec = ibqos_port_spec(sw, physp, &role);
	const ib_port_info_t *pi = &physp->port_info;

	if (!spec || ib_port_info_get_vl_cap(pi) == 1)
		return 0; /* OpenSM sends no VLArb to single-VL ports */
	return ibqos_vlarb_check_caps(&sw->tables, spec, role, where, pi->vl_arb_high_cap,
				      pi->vl_arb_low_cap, err, len);
}

/* Every port that will get a table must hold it: decided before anything is applied. */
int ibqos_check_vlarb_caps(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, char *err,
			   size_t len)
{
	cl_qmap_t *ports = &ctx->osm->subn.port_guid_tbl;
	char lb[240];

	for (uint32_t s = 0; s < sw->fabric.nsw; s++) {
		osm_switch_t *p_sw = sw->osw[s];
		unsigned first = ib_switch_info_is_enhanced_port0(&p_sw->switch_info) ? 0 : 1;

		for (unsigned p = first; p < p_sw->num_ports; p++) {
			osm_physp_t *physp = osm_node_get_physp_ptr(p_sw->p_node, p);
			char where[260];

			if (!physp || (p && dla_port_role(&sw->dla.routes, s, p) == DLA_ROLE_NONE))
				continue;
			snprintf(where, sizeof(where), "%s:%u", label(sw, s, lb, sizeof(lb)), p);
			if (check_one_cap(sw, physp, where, err, len))
				return -EINVAL;
		}
	}
	for (cl_map_item_t *it = cl_qmap_head(ports); it != cl_qmap_end(ports);
	     it = cl_qmap_next(it)) {
		osm_port_t *port = (osm_port_t *)it;
		char where[64];

		if (osm_node_get_type(port->p_node) != IB_NODE_TYPE_CA || !port->p_physp)
			continue;
		snprintf(where, sizeof(where), "CA 0x%016" PRIx64,
			 cl_ntoh64(osm_physp_get_port_guid(port->p_physp)));
		if (check_one_cap(sw, port->p_physp, where, err, len))
			return -EINVAL;
	}
	return 0;
}
