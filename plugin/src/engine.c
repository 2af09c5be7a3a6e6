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
	ibqos_log(ctx, OSM_LOG_ERROR,
		  "ERR %s: dla: fabric refused: %s; falling back to the next "
		  "routing engine",
		  id, why);
	ibqos_record_refusal(ctx, id, why);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The previous sweep's result holds for next: same fabric, no table file then or now, and the
 * same VLs per class. */
static int reusable(const struct ibqos_sweep *prev, const struct ibqos_sweep *next)
{
	return prev->valid && !prev->tables.path && !next->tables.path &&
		prev->stride == next->stride && dla_fabric_equal(&prev->fabric, &next->fabric);
}

int ibqos_build_lid_matrices(void *context)
{
	struct ibqos_ctx *ctx = context;
	double t0 = now_ms();
	struct ibqos_sweep next;
	const char *refusal;
	char err[ERRLEN];
	int ret;

	memset(&next, 0, sizeof(next));
	ibqos_record_begin(ctx);
	if (ctx->osm->subn.opt.lmc) {
		snprintf(err, sizeof(err),
			 "LMC %u is set but dla routes one LID per port "
			 "[rule: lmc 0]",
			 ctx->osm->subn.opt.lmc);
		refusal = "D1A1";
		goto fail;
	}
	ibqos_load_tables(ctx, &next);
	ret = ibqos_snapshot(ctx, &next, err, sizeof(err));
	if (!ret && reusable(&ctx->sweep, &next)) {
		/* the result depends on the fabric, the table file, the stored group map and the
		 * numbering: the last two are what the previous sweep left, so it is this one's */
		next.dla = ctx->sweep.dla;
		memset(&ctx->sweep.dla, 0, sizeof(ctx->sweep.dla));
		ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: fabric unchanged: the previous routes hold");
	} else if (!ret) {
		ret = ibqos_compute(ctx, &next, err, sizeof(err));
	}
	if (ret) {
		refusal = ret == -ENOMEM ? "D1A4" : "D1A0";
		goto fail;
	}
	if (next.tables.path && ibqos_check_vlarb_caps(ctx, &next, err, sizeof(err)))
		ibqos_reject_tables(ctx, &next, err);
	ret = ibqos_check_vls(ctx, &next, err, sizeof(err));
	if (ret && next.tables.path) {
		/* the file's classes need VLs the fabric's ports do not run: reject the file,
		 * not the fabric, and check class 0 alone (it may still fit) */
		char why[ERRLEN + 256];

		snprintf(why, sizeof(why), "%s: %s", next.tables.path, err);
		ibqos_reject_tables(ctx, &next, why);
		ret = ibqos_check_vls(ctx, &next, err, sizeof(err));
	}
	if (ret) {
		refusal = "D1A2";
		goto fail;
	}
	ibqos_log_link_counts(ctx, &next, 0);
	ibqos_log_route_shapes(ctx, &next);
	ibqos_store_groups(ctx, &next);
	if (next.dla.routes.numbering.e) { /* computed now, not the previous result reused */
		dla_numbering_free(&ctx->numbering);
		ctx->numbering = next.dla.routes.numbering;
		memset(&next.dla.routes.numbering, 0, sizeof(next.dla.routes.numbering));
	}
	ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: groups, routes and checks took %.3f ms",
		  now_ms() - t0);
	next.valid = 1;
	/* complete and checked: only now does it replace the previous sweep's result, which
	 * stayed whole (and valid for the hooks) until here */
	ibqos_sweep_free(&ctx->sweep);
	ctx->sweep = next;
	return 0;
fail:
	/* no result this sweep: the previous one no longer describes the fabric (the next
	 * engine routes it), and the record written with the refusal must not show it */
	ibqos_sweep_free(&ctx->sweep);
	if (!strcmp(refusal, "D1A4")) {
		ibqos_log(ctx, OSM_LOG_ERROR,
			  "ERR D1A4: dla: out of memory; falling back to the "
			  "next routing engine");
		ibqos_record_refusal(ctx, "D1A4", "out of memory");
	} else {
		refuse(ctx, refusal, err);
	}
	/* OpenSM goes on to the next engine, which sizes its SL layers from the ports' OperVLs:
	 * set the ones the link manager will program (fallback_vls.c), once for every refusal */
	ibqos_settle_op_vls(ctx);
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
		const uint8_t *lft = dla_lft_row(&sw->dla.routes, s),
			      *hops = dla_hops_row(&sw->dla.routes, s);
		unsigned top = p_sw->max_lid_ho < sw->dla.routes.max_lid ? p_sw->max_lid_ho
									 : sw->dla.routes.max_lid;

		for (unsigned lid = 1; lid <= top; lid++) {
			p_sw->new_lft[lid] = lft[lid];
			if (lft[lid] != DLA_NO_PATH &&
			    osm_switch_set_hops(p_sw, (uint16_t)lid, lft[lid], hops[lid])) {
				unwrite(sw);
				ibqos_log(ctx, OSM_LOG_ERROR,
					  "ERR D1A5: dla: cannot store hop "
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

void ibqos_engine_destroy(void *context)
{
	struct ibqos_ctx *ctx = context;

	ibqos_sweep_free(&ctx->sweep);
	dla_numbering_free(&ctx->numbering);
}
