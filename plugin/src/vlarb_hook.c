/*
 * OpenSM's update_vlarb hook: each port gets the table file's VLArb for its role (or its port
 * override) and VLHighLimit. Without a valid sweep or a table file it changes nothing, so
 * OpenSM's own qos_* tables stay in force.
 */
#include "ibqos_plugin.h"
#include "ibqos_vlarb.h"

#include <inttypes.h>

const struct ibqos_vlarb_spec *ibqos_port_spec(const struct ibqos_sweep *sw, osm_physp_t *p,
					       const char **role_name)
{
	osm_node_t *node = osm_physp_get_node_ptr(p);
	uint8_t num = osm_physp_get_port_num(p);
	uint64_t guid = cl_ntoh64(osm_node_get_node_guid(node));
	enum ibqos_vlarb_role role;
	int32_t s;

	*role_name = "none";
	if (!sw->tables.path)
		return NULL;
	switch (osm_node_get_type(node)) {
	case IB_NODE_TYPE_CA:
		role = IBQOS_ROLE_CA;
		break;
	case IB_NODE_TYPE_SWITCH:
		s = ibqos_switch_index(sw, guid);
		if (s < 0 || num >= sw->fabric.sw[s].num_ports)
			return NULL;
		role = num == 0 ? IBQOS_ROLE_SW0
				: dla_vlarb_role(dla_port_role(&sw->dla.routes, (uint32_t)s, num));
		break;
	default:
		return NULL;
	}
	const struct ibqos_vlarb_spec *spec = ibqos_tables_lookup(&sw->tables, role, guid, num);

	*role_name = spec && spec != &sw->tables.role[role] ? "port" : ibqos_role_keyword(role);
	return spec;
}

void ibqos_update_vlarb(void *context, osm_physp_t *port, uint8_t port_num,
			ib_vl_arb_table_t *block, unsigned block_length, unsigned block_num)
{
	struct ibqos_ctx *ctx = context;
	const struct ibqos_vlarb_spec *spec;
	uint8_t vl[IBQOS_VLARB_BLOCK], weight[IBQOS_VLARB_BLOCK];
	const char *role;

	(void)port_num;
	if (!ctx->sweep.valid || block_num > 3)
		return;
	spec = ibqos_port_spec(&ctx->sweep, port, &role);
	if (!spec)
		return;
	if (block_length > IBQOS_VLARB_BLOCK)
		block_length = IBQOS_VLARB_BLOCK;
	ibqos_vlarb_block(spec, block_num, block_length, vl, weight);
	for (unsigned i = 0; i < block_length; i++) {
		block->vl_entry[i].vl = vl[i];
		block->vl_entry[i].weight = weight[i];
	}
	ibqos_record_vlarb(ctx, cl_ntoh64(osm_node_get_node_guid(osm_physp_get_node_ptr(port))),
			   osm_physp_get_port_num(port), role, spec->limit, block_num, block_length,
			   vl, weight);
	/* VLHighLimit is not part of the hook: OpenSM has just set it from qos_*_high_limit
	 * and sends it with PortInfo later in this sweep, so overriding it here is per port. */
	port->vl_high_limit = spec->limit;
	/* Once per port (its first block), for the admin; tools read ibqos-dla.json (record.c). */
	if (block_num == 0 || (block_num == 2 && port->port_info.vl_arb_low_cap == 0))
		ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: port 0x%016" PRIx64 ":%u VLHighLimit %u",
			  cl_ntoh64(osm_node_get_node_guid(osm_physp_get_node_ptr(port))),
			  (unsigned)osm_physp_get_port_num(port), (unsigned)spec->limit);
}
