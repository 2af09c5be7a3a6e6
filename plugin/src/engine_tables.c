/*
 * The table file named by event_plugin_options, read again at every heavy sweep so new
 * contents at an unchanged path take effect on SIGHUP.
 */
#include "ibqos_plugin.h"

#include <string.h>

#define ERRLEN 1024

void ibqos_load_tables(struct ibqos_ctx *ctx, struct ibqos_sweep *sw)
{
	const char *path = ctx->osm->subn.opt.event_plugin_options;
	char err[ERRLEN];

	/* without a table file: one class, with all DLA_MAX_LEVELS VLs to route around faults */
	sw->stride = DLA_MAX_LEVELS;
	if (!path || !*path || !strcmp(path, "(null)"))
		return;
	if (ibqos_tables_load(path, &sw->tables, err, sizeof(err))) {
		ibqos_reject_tables(ctx, sw, err);
		return;
	}
	for (size_t i = 0; i < sw->tables.nwarnings; i++)
		ibqos_log(ctx, OSM_LOG_INFO, "dla: table file warning: %s", sw->tables.warnings[i]);
	memcpy(sw->sl2class, sw->tables.sl2class, sizeof(sw->sl2class));
	sw->stride = sw->tables.vls_per_class ? sw->tables.vls_per_class : 2;
	ibqos_log(ctx, OSM_LOG_INFO,
		  "dla: table file %s: sl2class %s, %u role(s), %zu port "
		  "override(s)",
		  path, sw->tables.has_sl2class ? "given" : "default",
		  (unsigned)(sw->tables.role[0].present + sw->tables.role[1].present +
			     sw->tables.role[2].present + sw->tables.role[3].present +
			     sw->tables.role[4].present),
		  sw->tables.nports);
}

/* The one place the table file is refused for a sweep, whether it did not parse or asks what
 * the fabric's ports cannot hold: the sweep routes class 0 alone. */
void ibqos_reject_tables(struct ibqos_ctx *ctx, struct ibqos_sweep *sw, const char *why)
{
	ibqos_log(ctx, OSM_LOG_ERROR,
		  "ERR D1A3: dla: table file rejected: %s; SL2VL uses "
		  "class 0 for every SL and OpenSM keeps its own VLArb",
		  why);
	ibqos_record_tables_rejected(ctx, why);
	ibqos_tables_free(&sw->tables);
	memset(sw->sl2class, 0, sizeof(sw->sl2class));
}
