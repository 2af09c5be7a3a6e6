/*
 * Copy the switch graph out of OpenSM. Only live links count: a port that is down, has no
 * remote or whose link OpenSM marked unhealthy is treated as unconnected, as minhop does.
 */
#include "ibqos_plugin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_guid(const void *a, const void *b)
{
	const struct ibqos_guid_idx *x = a, *y = b;

	return (x->guid > y->guid) - (x->guid < y->guid);
}

int32_t ibqos_switch_index(const struct ibqos_sweep *sw, uint64_t guid)
{
	struct ibqos_guid_idx key = {.guid = guid};
	const struct ibqos_guid_idx *hit;

	if (!sw->by_guid)
		return -1;
	hit = bsearch(&key, sw->by_guid, sw->fabric.nsw, sizeof(key), cmp_guid);
	return hit ? (int32_t)hit->idx : -1;
}

void ibqos_sweep_free(struct ibqos_sweep *sw)
{
	dla_result_free(&sw->dla);
	dla_fabric_free(&sw->fabric);
	ibqos_tables_free(&sw->tables);
	free(sw->osw);
	free(sw->by_guid);
	memset(sw, 0, sizeof(*sw));
}

static osm_physp_t *live_remote(osm_node_t *node, unsigned p)
{
	osm_physp_t *physp = osm_node_get_physp_ptr(node, p), *remote;

	if (!physp || !osm_physp_is_valid(physp) ||
	    osm_physp_get_port_state(physp) == IB_LINK_DOWN || !osm_link_is_healthy(physp))
		return NULL;
	remote = osm_physp_get_remote(physp);
	if (!remote || !osm_physp_is_valid(remote) ||
	    osm_physp_get_port_state(remote) == IB_LINK_DOWN)
		return NULL;
	return remote;
}

int ibqos_snapshot(struct ibqos_ctx *ctx, struct ibqos_sweep *sw, char *err, size_t len)
{
	cl_qmap_t *tbl = &ctx->osm->subn.sw_guid_tbl;
	uint32_t n = (uint32_t)cl_qmap_count(tbl), i = 0;
	uint16_t max_lid = 0;
	osm_switch_t *p_sw;
	int ret;

	for (p_sw = (osm_switch_t *)cl_qmap_head(tbl); p_sw != (osm_switch_t *)cl_qmap_end(tbl);
	     p_sw = (osm_switch_t *)cl_qmap_next(&p_sw->map_item))
		if (p_sw->max_lid_ho > max_lid)
			max_lid = p_sw->max_lid_ho;
	ret = dla_fabric_init(&sw->fabric, n, max_lid);
	if (ret)
		return ret;
	sw->osw = calloc(n ? n : 1, sizeof(*sw->osw));
	sw->by_guid = calloc(n ? n : 1, sizeof(*sw->by_guid));
	if (!sw->osw || !sw->by_guid)
		return -ENOMEM;
	for (p_sw = (osm_switch_t *)cl_qmap_head(tbl); p_sw != (osm_switch_t *)cl_qmap_end(tbl);
	     p_sw = (osm_switch_t *)cl_qmap_next(&p_sw->map_item), i++) {
		osm_node_t *node = p_sw->p_node;
		uint64_t guid = cl_ntoh64(osm_node_get_node_guid(node));

		ret = dla_fabric_set_switch(&sw->fabric, i, guid, node->print_desc,
					    cl_ntoh16(osm_node_get_base_lid(node, 0)),
					    p_sw->num_ports);
		if (ret)
			return ret;
		sw->osw[i] = p_sw;
		sw->by_guid[i] = (struct ibqos_guid_idx){.guid = guid, .idx = i};
	}
	qsort(sw->by_guid, n, sizeof(*sw->by_guid), cmp_guid);
	for (i = 0; i < n; i++) {
		osm_node_t *node = sw->osw[i]->p_node;

		for (unsigned p = 1; p < sw->osw[i]->num_ports; p++) {
			osm_physp_t *remote = live_remote(node, p);
			osm_node_t *rnode;

			if (!remote)
				continue;
			rnode = osm_physp_get_node_ptr(remote);
			if (osm_node_get_type(rnode) == IB_NODE_TYPE_SWITCH) {
				int32_t j = ibqos_switch_index(
					sw, cl_ntoh64(osm_node_get_node_guid(rnode)));

				if (j < 0) {
					snprintf(err, len,
						 "switch 0x%016" PRIx64 " port %u leads "
						 "to a switch OpenSM does not list",
						 sw->fabric.sw[i].guid, p);
					return -EINVAL;
				}
				ret = dla_fabric_link(&sw->fabric, i, (uint8_t)p, (uint32_t)j,
						      osm_physp_get_port_num(remote));
			} else {
				ret = dla_fabric_attach_endport(
					&sw->fabric, i, (uint8_t)p,
					cl_ntoh16(osm_physp_get_base_lid(remote)));
			}
			if (ret)
				return ret;
		}
	}
	return 0;
}
