/*
 * The plugin's record of what it did in the last heavy sweep, for tools rather than people:
 * dump_files_dir/ibqos-dla.json (schema in plugin/README.md). Simulators such as ibsim do not
 * store VLHighLimit and OpenSM logs refusals only as text, so this file, not the log, is how
 * ibqos learns whether dla routed, why it refused, which groups it used and which VLArb
 * tables and limits it sent to every port. Written atomically (temporary file, rename) once
 * QoS setup has run (UCAST_ROUTING_DONE), at once on a refusal, and at OpenSM's own
 * HEAVY_SWEEP_START and SUBNET_UP events with the process's sweep counters and PID, which is how
 * `ibqos apply` learns that the sweep it asked for ended (a restart changes the PID). The
 * plugin's version is there because OpenSM keeps the plugin it loaded at start: after a package
 * upgrade the old one runs until OpenSM restarts, and ibqos refuses to apply through it.
 */
#include "ibqos_plugin.h"
#include "ibqos_atomic.h"
#include "ibqos_vlarb.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECORD_FILE "ibqos-dla.json"

void ibqos_record_begin(struct ibqos_ctx *ctx)
{
	struct ibqos_record *r = &ctx->rec;

	r->sweep++;
	r->refused = 0;
	r->error[0] = r->reason[0] = 0;
	r->tables_rejected = 0;
	r->tables_reason[0] = 0;
	r->nports = 0;
	r->incomplete = 0;
	r->dirty = 1;
}

void ibqos_record_refusal(struct ibqos_ctx *ctx, const char *id, const char *reason)
{
	struct ibqos_record *r = &ctx->rec;

	r->refused = 1;
	snprintf(r->error, sizeof(r->error), "%s", id);
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	ibqos_record_write(ctx);
}

void ibqos_record_tables_rejected(struct ibqos_ctx *ctx, const char *reason)
{
	ctx->rec.tables_rejected = 1;
	snprintf(ctx->rec.tables_reason, sizeof(ctx->rec.tables_reason), "%s", reason);
}

static struct ibqos_port_record *port_slot(struct ibqos_record *r, uint64_t guid, uint8_t port)
{
	/* OpenSM sends a port's blocks one after the other: the last slot is the usual hit */
	for (size_t i = r->nports; i-- > 0;)
		if (r->ports[i].guid == guid && r->ports[i].port == port)
			return &r->ports[i];
	if (r->nports == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct ibqos_port_record *p = realloc(r->ports, cap * sizeof(*p));

		if (!p)
			return NULL;
		r->ports = p;
		r->cap = cap;
	}
	memset(&r->ports[r->nports], 0, sizeof(r->ports[0]));
	r->ports[r->nports].guid = guid;
	r->ports[r->nports].port = port;
	return &r->ports[r->nports++];
}

void ibqos_record_vlarb(struct ibqos_ctx *ctx, uint64_t guid, uint8_t port, const char *role,
			unsigned limit, unsigned block_num, unsigned n, const uint8_t *vl,
			const uint8_t *weight)
{
	struct ibqos_port_record *p = port_slot(&ctx->rec, guid, port);
	/* OpenSM's blocks 0, 1: low entries 0-31, 32-63; 2, 3: high (osm_qos.c) */
	int high = block_num >= 2;
	unsigned off = (block_num & 1) * IBQOS_VLARB_BLOCK;
	uint8_t *dvl, *dw, *count;

	if (!p) {
		ctx->rec.incomplete = 1;
		return;
	}
	dvl = high ? p->high_vl : p->low_vl;
	dw = high ? p->high_w : p->low_w;
	count = high ? &p->nhigh : &p->nlow;
	p->role = role;
	p->limit = (uint8_t)limit;
	for (unsigned i = 0; i < n && off + i < IBQOS_RECORD_ENTRIES; i++) {
		dvl[off + i] = vl[i];
		dw[off + i] = weight[i];
	}
	if (off + n > *count)
		*count = (uint8_t)(off + n < IBQOS_RECORD_ENTRIES ? off + n : IBQOS_RECORD_ENTRIES);
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void put_entries(FILE *f, const uint8_t *vl, const uint8_t *w, unsigned n)
{
	fputc('[', f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s[%u, %u]", i ? ", " : "", vl[i], w[i]);
	fputc(']', f);
}

static void put_groups(FILE *f, const struct ibqos_sweep *sw)
{
	const struct dla_groups *g = &sw->dla.groups;

	fputs("{\"source\": ", f);
	put_string(f, dla_groups_source_name(sw->dla.source));
	fprintf(f, ", \"alternative\": %u, \"members\": [", sw->dla.alternative);
	for (uint32_t k = 0; k < g->ngroups; k++) {
		fprintf(f, "%s[", k ? ", " : "");
		for (uint32_t i = g->first[k]; i < g->first[k + 1]; i++)
			fprintf(f, "%s\"0x%016" PRIx64 "\"", i > g->first[k] ? ", " : "",
				sw->fabric.sw[g->members[i]].guid);
		fputc(']', f);
	}
	fputs("]}", f);
}

static void put_record(FILE *f, const struct ibqos_ctx *ctx)
{
	const struct ibqos_record *r = &ctx->rec;
	const struct ibqos_sweep *sw = &ctx->sweep;
	const char *tables = sw->tables.path;

	fprintf(f,
		"{\"schema\": \"ibqos.dla-record/2\", \"plugin_version\": \"%s\",\n"
		" \"osm_pid\": %ld, \"heavy_sweeps\": %u, \"subnet_up\": %u, \"state\": \"%s\",\n"
		" \"sweep\": %u, \"engine\": ",
		IBQOS_VERSION, (long)getpid(), r->heavy_sweeps, r->subnet_up,
		r->sweeping ? "sweeping" : "up", r->sweep);
	if (!r->sweep) {
		/* dla is not in routing_engine (or has not been asked yet): it programmed nothing */
		fputs("{\"status\": \"unused\"},\n", f);
	} else if (r->refused) {
		fputs("{\"status\": \"refused\", \"error\": ", f);
		put_string(f, r->error);
		fputs(", \"reason\": ", f);
		put_string(f, r->reason);
		fputs("},\n", f);
	} else {
		fputs("{\"status\": \"routed\"},\n", f);
	}
	fputs(" \"table_file\": ", f);
	if (r->tables_rejected) {
		fputs("{\"status\": \"rejected\", \"reason\": ", f);
		put_string(f, r->tables_reason);
		fputs("},\n", f);
	} else if (tables) {
		fputs("{\"status\": \"applied\", \"path\": ", f);
		put_string(f, tables);
		fputs("},\n", f);
	} else {
		fputs("{\"status\": \"none\"},\n", f);
	}
	if (!r->refused && sw->valid) {
		fputs(" \"groups\": ", f);
		put_groups(f, sw);
		fprintf(f, ",\n \"vls_per_class\": %u, \"levels\": %u, \"turns_shifted\": %u,\n",
			sw->stride, sw->dla.vl.levels, sw->dla.vl.shifted);
		fprintf(f,
			" \"routes\": {\"through_third_group\": %u, \"local_detours\": %u, "
			"\"nearest_neighbour\": %u, \"unreachable\": %u},\n",
			sw->dla.routes.via_intermediate, sw->dla.routes.local_detours,
			sw->dla.routes.fallback, sw->dla.routes.unreachable);
	}
	fprintf(f, " \"ports_complete\": %s,\n \"ports\": [", r->incomplete ? "false" : "true");
	for (size_t i = 0; i < r->nports; i++) {
		const struct ibqos_port_record *p = &r->ports[i];

		fprintf(f, "%s\n  {\"guid\": \"0x%016" PRIx64 "\", \"port\": %u, \"role\": ",
			i ? "," : "", p->guid, p->port);
		put_string(f, p->role ? p->role : "none");
		fprintf(f, ", \"high_limit\": %u, \"high\": ", p->limit);
		put_entries(f, p->high_vl, p->high_w, p->nhigh);
		fputs(", \"low\": ", f);
		put_entries(f, p->low_vl, p->low_w, p->nlow);
		fputc('}', f);
	}
	fputs("]}\n", f);
}

void ibqos_record_write(struct ibqos_ctx *ctx)
{
	const char *dir = ctx->osm->subn.opt.dump_files_dir;
	struct ibqos_atomic a;
	char path[4096];
	int ret;

	if (!dir || !*dir)
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, RECORD_FILE) >= sizeof(path))
		return;
	ret = ibqos_atomic_open(&a, path);
	if (!ret) {
		put_record(a.f, ctx);
		ret = ibqos_atomic_commit(&a);
	}
	if (ret) {
		/* a directory at the record's name fails each of its three writes a sweep */
		ibqos_log_changed(
			ctx, ctx->rec.write_error, sizeof(ctx->rec.write_error), OSM_LOG_ERROR,
			"ERR D1A8: dla: cannot write %s: %s; the record is not kept until it "
			"can be, OpenSM routes on (said once)",
			a.failed ? a.failed : path, strerror(-ret));
	} else {
		if (ctx->rec.write_error[0])
			ibqos_log(ctx, OSM_LOG_INFO, "dla: %s written again", path);
		ctx->rec.write_error[0] = '\0';
		ctx->rec.dirty = 0;
	}
	ibqos_atomic_free(&a);
}

void ibqos_record_sweep_event(struct ibqos_ctx *ctx, int heavy_start)
{
	struct ibqos_record *r = &ctx->rec;

	if (heavy_start) {
		r->heavy_sweeps++;
		r->sweeping = 1;
	} else {
		r->subnet_up++;
		r->sweeping = 0;
	}
	ibqos_record_write(ctx);
}

void ibqos_record_free(struct ibqos_record *r)
{
	free(r->ports);
	memset(r, 0, sizeof(*r));
}
