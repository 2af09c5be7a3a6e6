/*
 * The routing-engine hooks. build_lid_matrices computes everything into a private sweep and
 * checks it; only a complete, checked result replaces the previous one. ucast_build_fwd_tables
 * then copies it into OpenSM's new_lft and hop tables. Any refusal returns -1 before OpenSM's
 * tables are touched, so OpenSM falls back to the next engine with nothing half-built.
 */
#include "ibqos_plugin.h"
#include "dla_sl2vl.h"
#include "ibqos_vlarb.h"

#include <errno.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 1024

static void refuse(struct ibqos_ctx *ctx, const char *id, const char *why)
{
	ibqos_log(ctx, OSM_LOG_ERROR, "ERR %s: dla: fabric refused: %s; falling back to the next "
		  "routing engine", id, why);
}

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
static int check_vls(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, char *err, size_t len)
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
					snprintf(err, len, "switch %s port %u (terminal, CA port "
						 "0x%016" PRIx64 ") runs %u data VL(s) but needs %u "
						 "[rule: SL class c starts at VL %uc]",
						 label(sw, s, lb, sizeof(lb)), p,
						 cl_ntoh64(osm_physp_get_port_guid(remote)), have, need,
						 sw->stride);
				else
					snprintf(err, len, "switch %s port %u (%s) runs %u data VL(s) "
						 "but needs %u [rule: SL class c uses VLs %uc to %uc+%u]",
						 label(sw, s, lb, sizeof(lb)), p, dla_role_name(role), have,
						 need, sw->stride, sw->stride, levels ? levels - 1 : 0);
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
		ibqos_log(ctx, OSM_LOG_INFO, "dla: %u port(s) still run fewer OperVLs than DLA "
			  "needs; requesting another heavy sweep", not_yet);
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
		return 0;	/* OpenSM sends no VLArb to single-VL ports */
	return ibqos_vlarb_check_caps(&sw->tables, spec, role, where, pi->vl_arb_high_cap,
				      pi->vl_arb_low_cap, err, len);
}

/* Every port that will get a table must hold it: decided before anything is applied. */
static int check_vlarb_caps(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, char *err,
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

static void load_tables(struct ibqos_ctx *ctx, struct ibqos_sweep *sw)
{
	const char *path = ctx->osm->subn.opt.event_plugin_options;
	char err[ERRLEN];

	/* without a table file: one class, with all DLA_MAX_LEVELS VLs to route around faults */
	sw->stride = DLA_MAX_LEVELS;
	if (!path || !*path || !strcmp(path, "(null)"))
		return;
	if (ibqos_tables_load(path, &sw->tables, err, sizeof(err))) {
		ibqos_log(ctx, OSM_LOG_ERROR, "ERR D1A3: dla: table file rejected: %s; SL2VL uses "
			  "class 0 for every SL and OpenSM keeps its own VLArb", err);
		return;
	}
	for (size_t i = 0; i < sw->tables.nwarnings; i++)
		ibqos_log(ctx, OSM_LOG_INFO, "dla: table file warning: %s", sw->tables.warnings[i]);
	memcpy(sw->sl2class, sw->tables.sl2class, sizeof(sw->sl2class));
	sw->stride = sw->tables.vls_per_class ? sw->tables.vls_per_class : 2;
	ibqos_log(ctx, OSM_LOG_INFO, "dla: table file %s: sl2class %s, %u role(s), %zu port "
		  "override(s)", path, sw->tables.has_sl2class ? "given" : "default",
		  (unsigned)(sw->tables.role[0].present + sw->tables.role[1].present +
			     sw->tables.role[2].present + sw->tables.role[3].present +
			     sw->tables.role[4].present), sw->tables.nports);
}

void ibqos_log_link_counts(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, int per_link)
{
	const struct dla_routes *r = &sw->dla.routes;
	const struct dla_fabric *f = &sw->fabric;
	uint32_t nlinks = 0, lo = UINT32_MAX, hi = 0;
	char l1[200], l2[200];

	for (uint32_t s = 0; s < f->nsw; s++)
		for (unsigned p = 1; p < f->sw[s].num_ports; p++) {
			const struct dla_port *pt = &f->sw[s].ports[p];
			uint32_t n = r->routes[r->port_off[s] + p];

			if (dla_port_role(r, s, p) != DLA_ROLE_GLOBAL)
				continue;
			nlinks++;
			lo = n < lo ? n : lo;
			hi = n > hi ? n : hi;
			if (per_link)
				ibqos_log(ctx, OSM_LOG_ROUTING, "dla: global link %s port %u -> %s port %u "
				  "(group %u -> %u): %u routes, %u LIDs", label(sw, s, l1, sizeof(l1)),
				  p, label(sw, pt->peer_sw, l2, sizeof(l2)), pt->peer_port,
				  sw->dla.groups.group_of[s], sw->dla.groups.group_of[pt->peer_sw], n,
				  r->lids[r->port_off[s] + p]);
		}
	if (per_link)
		return;
	ibqos_log(ctx, OSM_LOG_INFO, "dla: %u groups of %u switches, %u global link ends, "
		  "routes per global link min %u max %u", sw->dla.groups.ngroups,
		  sw->dla.groups.ngroups ? sw->dla.groups.first[1] - sw->dla.groups.first[0] : 0, nlinks,
		  nlinks ? lo : 0, hi);
}

/* What a degraded fabric cost: detours, routes through a third group, VL levels. */
static void log_route_shapes(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw)
{
	const struct dla_routes *r = &sw->dla.routes;

	ibqos_log(ctx, OSM_LOG_INFO, "dla: %u VL(s) per class in use (of %u), %u turn(s) shifted; "
		  "LFT entries: %u through a third group, %u with two local hops, %u by nearest "
		  "neighbour, %u unreachable", sw->dla.vl.levels, sw->stride, sw->dla.vl.shifted,
		  r->via_intermediate, r->local_detours, r->fallback, r->unreachable);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int ibqos_build_lid_matrices(void *context)
{
	struct ibqos_ctx *ctx = context;
	double t0 = now_ms();
	struct ibqos_sweep next;
	char err[ERRLEN];
	int ret;

	memset(&next, 0, sizeof(next));
	ibqos_sweep_free(&ctx->sweep);
	if (ctx->osm->subn.opt.lmc) {
		snprintf(err, sizeof(err), "LMC %u is set but dla routes one LID per port "
			 "[rule: lmc 0]", ctx->osm->subn.opt.lmc);
		refuse(ctx, "D1A1", err);
		return -1;
	}
	load_tables(ctx, &next);
	ret = ibqos_snapshot(ctx, &next, err, sizeof(err));
	if (!ret)
		ret = ibqos_compute(ctx, &next, err, sizeof(err));
	if (ret == -ENOMEM) {
		ibqos_log(ctx, OSM_LOG_ERROR, "ERR D1A4: dla: out of memory; falling back to the "
			  "next routing engine");
		goto fail;
	}
	if (ret) {
		refuse(ctx, "D1A0", err);
		goto fail;
	}
	if (next.tables.path && check_vlarb_caps(ctx, &next, err, sizeof(err))) {
		ibqos_log(ctx, OSM_LOG_ERROR, "ERR D1A3: dla: table file rejected: %s; SL2VL uses "
			  "class 0 for every SL and OpenSM keeps its own VLArb", err);
		ibqos_tables_free(&next.tables);
		memset(next.sl2class, 0, sizeof(next.sl2class));
	}
	if (next.tables.path && check_vls(ctx, &next, err, sizeof(err))) {
		/* the file's classes need VLs the fabric's ports do not run: reject the file,
		 * not the fabric (class 0 may still fit) */
		ibqos_log(ctx, OSM_LOG_ERROR, "ERR D1A3: dla: table file rejected: %s: %s; SL2VL "
			  "uses class 0 for every SL and OpenSM keeps its own VLArb",
			  next.tables.path, err);
		ibqos_tables_free(&next.tables);
		memset(next.sl2class, 0, sizeof(next.sl2class));
	}
	if (check_vls(ctx, &next, err, sizeof(err))) {
		refuse(ctx, "D1A2", err);
		goto fail;
	}
	ibqos_log_link_counts(ctx, &next, 0);
	log_route_shapes(ctx, &next);
	ibqos_store_groups(ctx, &next);
	ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: groups, routes and checks took %.3f ms",
		  now_ms() - t0);
	next.valid = 1;
	ctx->sweep = next;
	return 0;
fail:
	ibqos_sweep_free(&next);
	return -1;
}

static void unwrite(struct ibqos_sweep *sw)
{
	for (uint32_t s = 0; s < sw->fabric.nsw; s++) {
		osm_switch_t *p_sw = sw->osw[s];

		memset(p_sw->new_lft, OSM_NO_PATH, p_sw->lft_size);
		osm_switch_clear_hops(p_sw);
	}
}

int ibqos_build_fwd_tables(void *context)
{
	struct ibqos_ctx *ctx = context;
	struct ibqos_sweep *sw = &ctx->sweep;

	double t0 = now_ms();

	if (!sw->valid)
		return -1;
	for (uint32_t s = 0; s < sw->fabric.nsw; s++) {
		osm_switch_t *p_sw = sw->osw[s];
		const uint8_t *lft = dla_lft_row(&sw->dla.routes, s), *hops = dla_hops_row(&sw->dla.routes, s);
		unsigned top = p_sw->max_lid_ho < sw->dla.routes.max_lid ? p_sw->max_lid_ho :
			sw->dla.routes.max_lid;

		for (unsigned lid = 1; lid <= top; lid++) {
			p_sw->new_lft[lid] = lft[lid];
			if (lft[lid] != DLA_NO_PATH &&
			    osm_switch_set_hops(p_sw, (uint16_t)lid, lft[lid], hops[lid])) {
				unwrite(sw);
				ibqos_log(ctx, OSM_LOG_ERROR, "ERR D1A5: dla: cannot store hop "
					  "counts (out of memory); tables cleared, falling back to "
					  "the next routing engine");
				ibqos_sweep_free(sw);
				return -1;
			}
		}
	}
	ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: writing LFTs and hop tables took %.3f ms",
		  now_ms() - t0);
	return 0;
}

uint8_t ibqos_path_sl(void *context, uint8_t path_sl_hint, const ib_net16_t slid,
		      const ib_net16_t dlid)
{
	/* DLA routes every SL alike, so the SA answers with the SL that was asked for. */
	(void)context;
	(void)slid;
	(void)dlid;
	return path_sl_hint;
}

void ibqos_engine_destroy(void *context)
{
	struct ibqos_ctx *ctx = context;

	ibqos_sweep_free(&ctx->sweep);
}
