/*
 * libibqos.so: an OpenSM event plugin whose only job is to register the external routing
 * engine "dla" (routing_engine dla,minhop). OpenSM loads it with event_plugin_name ibqos and
 * passes event_plugin_options (the table file path) through its subnet options.
 */
#include "ibqos_plugin.h"

#include <opensm/osm_event_plugin.h>
#include <opensm/osm_version.h>

#include <stdlib.h>

#if OSM_EVENT_PLUGIN_INTERFACE_VER != 2
#error "libibqos is written for OpenSM event plugin interface version 2"
#endif

static int engine_setup(osm_routing_engine_t *re, osm_opensm_t *osm)
{
	struct ibqos_ctx *ctx = re->context; /* OpenSM sets it from the module before setup */

	(void)osm;
	/* "dla,dla": the second place would compute the fabric the first refused and refuse it
	 * again, a second refusal line and record every such sweep */
	if (ctx && ctx->engine_places++) {
		ibqos_log(ctx, OSM_LOG_ERROR,
			  "ERR D1A6: dla: routing_engine names '%s' more than once; only its "
			  "first place routes",
			  IBQOS_ENGINE_NAME);
		return -1;
	}
	/* Only the hooks we implement; OpenSM checks each for NULL. No path_sl: dla routes
	 * every SL alike, so the SA keeps the SL it was asked for. */
	re->build_lid_matrices = ibqos_build_lid_matrices;
	re->ucast_build_fwd_tables = ibqos_build_fwd_tables;
	re->update_sl2vl = ibqos_update_sl2vl;
	re->update_vlarb = ibqos_update_vlarb;
	re->destroy = ibqos_engine_destroy;
	return 0;
}

static void plugin_destroy(void *context)
{
	struct ibqos_ctx *ctx = context;

	if (!ctx)
		return;
	ibqos_sweep_free(&ctx->sweep);
	dla_numbering_free(&ctx->numbering);
	ibqos_record_free(&ctx->rec);
	free(ctx);
}

/*
 * At a heavy sweep's start and at SUBNET_UP: OpenSM's sweep counters in the record. Once
 * routing and QoS setup are done: the sweep's record (record.c), and the per-link route
 * counts in the log, outside the routing-engine time that OpenSM's "building routing" ..
 * "tables configured" lines bracket.
 */
static void plugin_report(void *context, osm_epi_event_id_t event_id, void *event_data)
{
	struct ibqos_ctx *ctx = context;
	struct osm_routing_engine *re;

	(void)event_data;
	/* OpenSM's sweep state, every sweep, whichever engine routes */
	if (ctx &&
	    (event_id == OSM_EVENT_ID_HEAVY_SWEEP_START || event_id == OSM_EVENT_ID_SUBNET_UP))
		ibqos_record_sweep_event(ctx, event_id == OSM_EVENT_ID_HEAVY_SWEEP_START);
	/* the LFTs and QoS tables are on the switches; before the multicast manager reads them:
	 * OpenSM's hop rows (engine.c) */
	if (ctx && event_id == OSM_EVENT_ID_UCAST_ROUTING_DONE)
		ibqos_fill_hop_rows(ctx);
	/* osm_qos_setup() has just run the VLArb hooks: the sweep's record is complete */
	if (ctx && event_id == OSM_EVENT_ID_UCAST_ROUTING_DONE && ctx->rec.dirty)
		ibqos_record_write(ctx);
	if (!ctx || event_id != OSM_EVENT_ID_UCAST_ROUTING_DONE || !ctx->sweep.valid ||
	    ctx->sweep.counts_logged)
		return;
	re = ctx->osm->routing_engine_used;
	if (!re || re->context != ctx)
		return;
	ctx->sweep.counts_logged = 1;
	ibqos_log_link_counts(ctx, &ctx->sweep, 1);
}

static void *plugin_create(osm_opensm_t *osm)
{
	struct ibqos_ctx *ctx = calloc(1, sizeof(*ctx));
	cl_status_t status;
	external_routing_engine_module_t module = {
		.name = IBQOS_ENGINE_NAME,
		.setup = engine_setup,
		.context = NULL,
	};

	if (!ctx)
		return NULL;
	ctx->osm = osm;
	module.context = ctx;
	status = osm_register_external_routing_engine(osm, &module, ctx);
	if (status != CL_SUCCESS) {
		/* the second of "event_plugin_name ibqos ibqos": the first copy routes */
		ibqos_log(ctx, OSM_LOG_ERROR,
			  "ERR D1A6: dla: cannot register the routing engine '%s'%s; this copy of "
			  "the plugin is not loaded",
			  IBQOS_ENGINE_NAME,
			  status == CL_DUPLICATE ? ": an earlier one did (event_plugin_name lists "
						   "ibqos more than once?)"
						 : "");
		plugin_destroy(ctx);
		return NULL;
	}
	ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: routing engine '%s' registered (libibqos, %s)",
		  IBQOS_ENGINE_NAME, OSM_VERSION);
	return ctx;
}

/* The only exported symbol (libibqos.map). */
osm_event_plugin_t osm_event_plugin = {
	.osm_version = OSM_VERSION,
	.create = plugin_create,
	.delete = plugin_destroy,
	.report = plugin_report,
};
