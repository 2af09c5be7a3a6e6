/*
 * The routing-engine hooks. build_lid_matrices computes everything into a private sweep and
 * checks it; only a complete, checked result replaces the previous one. ucast_build_fwd_tables
 * then copies it into OpenSM's new_lft and hop tables. Any refusal returns -1 before OpenSM's
 * tables are touched, so OpenSM falls back to the next engine with nothing half-built.
 */
#include "ibqos_plugin.h"
#include "dla_sl2vl.h"
#include "ibqos_vlarb.h"

#include <opensm/osm_console_io.h>

#include <errno.h>
#include <sys/resource.h>
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

static double clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wall time is what a sweep waits; this thread's CPU time is what dla spent of it, which on a
 * loaded machine can be much less. */
struct stopwatch {
	double wall, cpu;
	long faults;
};

static long thread_faults(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_minflt;
}

static struct stopwatch stopwatch_start(void)
{
	return (struct stopwatch){clock_ms(CLOCK_MONOTONIC), clock_ms(CLOCK_THREAD_CPUTIME_ID),
				  thread_faults()};
}

/* CPU ms since *w, which moves on to now */
static double lap_cpu(struct stopwatch *w)
{
	double now = clock_ms(CLOCK_THREAD_CPUTIME_ID), d = now - w->cpu;

	w->cpu = now;
	return d;
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
	struct stopwatch t0 = stopwatch_start(), lap = t0;
	double snap_cpu, compute_cpu;
	struct ibqos_sweep next;
	const char *refusal;
	char err[ERRLEN] = "";
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
	snap_cpu = lap_cpu(&lap);
	if (!ret && reusable(&ctx->sweep, &next)) {
		/* the result depends on the fabric, the table file, the stored group map and the
		 * numbering: the last two are what the previous sweep left, so it is this one's */
		next.dla = ctx->sweep.dla;
		memset(&ctx->sweep.dla, 0, sizeof(ctx->sweep.dla));
		ibqos_log(ctx, OSM_LOG_VERBOSE, "dla: fabric unchanged: the previous routes hold");
	} else if (!ret) {
		ret = ibqos_compute(ctx, &next, err, sizeof(err));
	}
	compute_cpu = lap_cpu(&lap);
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
	ibqos_log(ctx, OSM_LOG_VERBOSE,
		  "dla: groups, routes and checks took %.3f ms (CPU %.3f ms: snapshot %.3f, "
		  "groups and routes %.3f, checks and logs %.3f; %ld page faults)",
		  clock_ms(CLOCK_MONOTONIC) - t0.wall, clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0.cpu,
		  snap_cpu, compute_cpu, lap_cpu(&lap), thread_faults() - t0.faults);
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
		if (!*err) /* every refusal names its switch, port or group; this one did not */
			snprintf(err, sizeof(err),
				 "no reason given (a dla defect: report it with this log) "
				 "[rule: every refusal says why]");
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

/* The switch each LID belongs to: its own (port 0) or the one an end port is attached to;
 * DLA_NO_SWITCH for LIDs the fabric does not hold. NULL when out of memory. */
static uint32_t *lid_switches(const struct dla_fabric *f, unsigned max_lid)
{
	uint32_t *at = malloc(((size_t)max_lid + 1) * sizeof(*at));

	if (!at)
		return NULL;
	for (unsigned lid = 0; lid <= max_lid; lid++)
		at[lid] = DLA_NO_SWITCH;
	for (uint32_t s = 0; s < f->nsw; s++) {
		const struct dla_switch *w = &f->sw[s];

		if (w->lid <= max_lid)
			at[w->lid] = s;
		for (unsigned p = 1; p < w->num_ports; p++)
			if (w->ports[p].peer_kind == DLA_PEER_ENDPORT &&
			    w->ports[p].endport_lid <= max_lid)
				at[w->ports[p].endport_lid] = s;
	}
	return at;
}

/*
 * OpenSM's hop rows (p_sw->hops[lid], one malloc of num_ports bytes each on the first sweep)
 * for the LIDs its readers look up. Outside minhop's own path (osm_ucast_mgr.c, which dla
 * replaces), OpenSM 3.3.23 reads hop counts only towards a switch's base LID and reaches an
 * end port through the switch it is attached to, adding one: osm_switch_recommend_mcast_path
 * and osm_switch_get_port_least_hops (multicast trees), mcast_mgr_compute_max_hops, and
 * dump_ucast_routes (opensm.fdbs) when the end port's LID has no row of its own. So every
 * switch LID gets its row, with the hop count through the LFT port (its only entry, as
 * before: the multicast trees are unchanged). An end port's row is needed only where that
 * fallback would print something else: its LFT port or hop count differ from its switch's
 * (+1). dump_ucast_routes never resets the flag a first row of an end port sets (no +1 for
 * every end port after it on that switch), so from the first end port that needs a row, every
 * routed end port after it in LID order gets one, and opensm.fdbs reads as when every LID had
 * a row. On a pristine dragonfly no end port needs one: 510 x 510 rows at 2550 CAs, not
 * 510 x 3060. opensm-lid-matrix.dump lists the LIDs with a row.
 */
static int write_hops(osm_switch_t *p_sw, uint32_t s, const uint8_t *lft, const uint8_t *hops,
		      const uint32_t *at, const struct dla_fabric *f, unsigned top)
{
	int all_endports = 0;

	for (unsigned lid = 1; lid <= top; lid++) {
		uint32_t t = at[lid];

		if (lft[lid] == DLA_NO_PATH || t == DLA_NO_SWITCH)
			continue;
		if (f->sw[t].lid != lid && !all_endports && t != s) {
			uint16_t base = f->sw[t].lid;

			all_endports = base > top || lft[base] != lft[lid] ||
				hops[base] == DLA_NO_PATH || hops[base] + 1 != hops[lid];
		}
		if ((f->sw[t].lid == lid || all_endports) &&
		    osm_switch_set_hops(p_sw, (uint16_t)lid, lft[lid], hops[lid]))
			return -1;
	}
	return 0;
}

/* The LIDs a switch's rows hold: its LFT top, at most the LIDs dla routed. */
static unsigned lft_top(const osm_switch_t *p_sw, const struct dla_routes *r)
{
	return p_sw->max_lid_ho < r->max_lid ? p_sw->max_lid_ho : r->max_lid;
}

/* Every switch's hop rows from the sweep's result; on out of memory none (rows cleared). */
static int write_all_hops(struct ibqos_sweep *sw)
{
	uint32_t *at = lid_switches(&sw->fabric, sw->dla.routes.max_lid);

	for (uint32_t s = 0; at && s < sw->fabric.nsw; s++) {
		osm_switch_t *p_sw = sw->osw[s];

		if (write_hops(p_sw, s, dla_lft_row(&sw->dla.routes, s),
			       dla_hops_row(&sw->dla.routes, s), at, &sw->fabric,
			       lft_top(p_sw, &sw->dla.routes))) {
			free(at);
			at = NULL;
		}
	}
	if (at) {
		free(at);
		return 0;
	}
	for (uint32_t s = 0; s < sw->fabric.nsw; s++)
		osm_switch_clear_hops(sw->osw[s]);
	return -1;
}

/*
 * Whether the hop rows wait for OSM_EVENT_ID_UCAST_ROUTING_DONE (docs/hop-rows.md has the
 * argument from OpenSM 3.3.23's source). Without a console OpenSM routes only in a heavy
 * sweep, where nothing between the routing and that event reads a hop row and the event
 * always follows unless OpenSM is exiting. The console's reroute command routes outside a
 * heavy sweep, where an SMP error skips the event: then the rows are written here, at once.
 */
static int hop_rows_deferred(const struct ibqos_ctx *ctx)
{
	const char *console = ctx->osm->subn.opt.console;

	return !console || !strcmp(console, OSM_DISABLE_CONSOLE);
}

int ibqos_build_fwd_tables(void *context)
{
	struct ibqos_ctx *ctx = context;
	struct ibqos_sweep *sw = &ctx->sweep;
	struct stopwatch t0 = stopwatch_start();
	int deferred;

	if (!sw->valid)
		return -1;
	for (uint32_t s = 0; s < sw->fabric.nsw; s++) {
		osm_switch_t *p_sw = sw->osw[s];
		unsigned top = lft_top(p_sw, &sw->dla.routes);

		if (top)
			memcpy(p_sw->new_lft + 1, dla_lft_row(&sw->dla.routes, s) + 1, top);
	}
	deferred = hop_rows_deferred(ctx);
	if (!deferred && write_all_hops(sw)) {
		unwrite(sw);
		ibqos_log(ctx, OSM_LOG_ERROR,
			  "ERR D1A5: dla: cannot store hop "
			  "counts (out of memory); tables cleared, falling back to "
			  "the next routing engine");
		/* a refusal as build_lid_matrices' are: recorded, and the next engine sizes its SL
		 * layers from the OperVLs the link manager will program */
		ibqos_record_refusal(ctx, "D1A5", "cannot store hop counts (out of memory)");
		ibqos_sweep_free(sw);
		ibqos_settle_op_vls(ctx);
		return -1;
	}
	sw->hops_pending = deferred;
	ibqos_log(ctx, OSM_LOG_VERBOSE,
		  "dla: writing LFTs%s took %.3f ms (CPU %.3f ms; %ld page faults)",
		  deferred ? " (hop rows after the routing)" : " and hop tables",
		  clock_ms(CLOCK_MONOTONIC) - t0.wall, lap_cpu(&t0), thread_faults() - t0.faults);
	return 0;
}

void ibqos_fill_hop_rows(struct ibqos_ctx *ctx)
{
	struct ibqos_sweep *sw = &ctx->sweep;
	struct osm_routing_engine *re = ctx->osm->routing_engine_used;
	int ret;

	/* only rows this sweep's dla routing left pending: not after a refusal (another engine
	 * routed and filled its own), nor after OpenSM's unicast cache replaced the routing */
	if (!sw->valid || !sw->hops_pending || !re || re->context != ctx)
		return;
	sw->hops_pending = 0;
	struct stopwatch t0 = stopwatch_start();
	/* the multicast manager and the dumps read the rows under this lock */
	cl_plock_excl_acquire(&ctx->osm->lock);
	ret = write_all_hops(sw);
	if (ret) /* a full heavy sweep again, once memory allows */
		ctx->osm->subn.subnet_initialization_error = TRUE;
	cl_plock_release(&ctx->osm->lock);
	if (ret) {
		ibqos_log(ctx, OSM_LOG_ERROR,
			  "ERR D1A5: dla: cannot store hop counts (out of memory); hop rows "
			  "cleared, multicast trees wait for the next heavy sweep");
		return;
	}
	ibqos_log(
		ctx, OSM_LOG_VERBOSE,
		"dla: hop rows filled after the routing in %.3f ms (CPU %.3f ms; %ld page faults)",
		clock_ms(CLOCK_MONOTONIC) - t0.wall, lap_cpu(&t0), thread_faults() - t0.faults);
}

void ibqos_engine_destroy(void *context)
{
	struct ibqos_ctx *ctx = context;

	ibqos_sweep_free(&ctx->sweep);
	dla_numbering_free(&ctx->numbering);
}
