/*
 * Copy the switch graph out of OpenSM. Only live links count: a port that is down, has no
 * remote or whose link OpenSM marked unhealthy is treated as unconnected, as minhop does. So is
 * a port cabled to itself (a loopback plug; ibsim takes a net file linking a port to itself):
 * like a cable between two ports of one switch, it leads nowhere a route could go.
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

/* Port p of switch i leads to remote: record the link or the end port. The fabric refuses
 * only what OpenSM's own view rules out (port numbers past a node's ports). */
static int add_link(struct ibqos_sweep *sw, uint32_t i, unsigned p, osm_physp_t *remote, char *err,
		    size_t len)
{
	osm_node_t *rnode = osm_physp_get_node_ptr(remote);
	unsigned rp = osm_physp_get_port_num(remote);
	char lb[200];
	int32_t j = -1;
	int ret;

	if (osm_node_get_type(rnode) != IB_NODE_TYPE_SWITCH) {
		ret = dla_fabric_attach_endport(&sw->fabric, i, (uint8_t)p,
						cl_ntoh16(osm_physp_get_base_lid(remote)));
	} else {
		j = ibqos_switch_index(sw, cl_ntoh64(osm_node_get_node_guid(rnode)));
		if (j < 0) {
			snprintf(err, len,
				 "switch %s port %u leads to switch 0x%016" PRIx64
				 ", which OpenSM does not list [rule: every link joins two "
				 "switches OpenSM discovered]",
				 dla_switch_label(&sw->fabric, i, lb, sizeof(lb)), p,
				 cl_ntoh64(osm_node_get_node_guid(rnode)));
			return -EINVAL;
		}
		ret = dla_fabric_link(&sw->fabric, i, (uint8_t)p, (uint32_t)j, (uint8_t)rp);
	}
	if (ret == -EINVAL)
		snprintf(err, len,
			 "switch %s port %u leads to port %u of %s 0x%016" PRIx64
			 ", a port number past that node's ports [rule: a link joins two "
			 "ports that exist]",
			 dla_switch_label(&sw->fabric, i, lb, sizeof(lb)), p, rp,
			 j < 0 ? "end node" : "switch", cl_ntoh64(osm_node_get_node_guid(rnode)));
	return ret;
}

int ibqos_snapshot(struct ibqos_ctx *ctx, struct ibqos_sweep *sw, char *err, size_t len)
{
	char lb[200];
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
		if (ret == -EINVAL)
			snprintf(err, len,
				 "switch 0x%016" PRIx64 " \"%s\" has %u ports [rule: a switch has "
				 "port 0]",
				 guid, node->print_desc, p_sw->num_ports);
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

			if (!remote)
				continue;
			if (remote == osm_node_get_physp_ptr(node, p)) {
				ibqos_log(ctx, OSM_LOG_INFO,
					  "dla: switch %s port %u is cabled to itself: no route "
					  "uses it",
					  dla_switch_label(&sw->fabric, i, lb, sizeof(lb)), p);
				continue;
			}
			ret = add_link(sw, i, p, remote, err, len);
			if (ret)
				return ret;
		}
	}
	return 0;
}
