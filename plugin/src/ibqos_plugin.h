/*
 * OpenSM side of libibqos: the one context every callback gets, and the glue between OpenSM's
 * objects and the OpenSM-free routing library (dla_*, ibqos_tables, ibqos_vlarb).
 */
#ifndef IBQOS_PLUGIN_H
#define IBQOS_PLUGIN_H

#define _GNU_SOURCE
#include <opensm/osm_config.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_switch.h>

#include "dla_fabric.h"
#include "dla_groups.h"
#include "dla_route.h"
#include "dla_compute.h"
#include "ibqos_tables.h"

#define IBQOS_ENGINE_NAME "dla"

struct ibqos_guid_idx {
	uint64_t guid;
	uint32_t idx;
};

/* Everything one routing pass computed; rebuilt by every build_lid_matrices. */
struct ibqos_sweep {
	int valid; /* routes computed and checked: the hooks may use them */
	struct dla_fabric fabric;
	struct dla_result dla;		/* groups, routes, VL level of every turn */
	osm_switch_t **osw;		/* [nsw] the OpenSM switch behind each index */
	struct ibqos_guid_idx *by_guid; /* [nsw] sorted */
	struct ibqos_tables tables;	/* applied table file; empty when none or rejected */
	uint8_t sl2class[IBQOS_NUM_SL];
	unsigned stride; /* VLs per class: class c owns VLs stride*c .. stride*c+stride-1 */
	int counts_logged;
	int hops_pending; /* LFTs written; OpenSM's hop rows wait for UCAST_ROUTING_DONE */
};

#define IBQOS_RECORD_ENTRIES 64

/* What the vlarb hook sent to one port (entries as written, in table order). */
struct ibqos_port_record {
	uint64_t guid;
	uint8_t port, limit, nlow, nhigh;
	const char *role; /* a static keyword */
	uint8_t low_vl[IBQOS_RECORD_ENTRIES], low_w[IBQOS_RECORD_ENTRIES];
	uint8_t high_vl[IBQOS_RECORD_ENTRIES], high_w[IBQOS_RECORD_ENTRIES];
};

/* The last heavy sweep, as record.c writes it to dump_files_dir/ibqos-dla.json. Kept apart
 * from the sweep because a refusal frees the sweep but must still be recorded. */
struct ibqos_record {
	unsigned sweep; /* heavy sweeps routed by this plugin since OpenSM started */
	/* OpenSM's own sweep state, from its events: how tools learn that a sweep ended without
	 * reading the log (which log_max_size truncates) */
	unsigned heavy_sweeps; /* OSM_EVENT_ID_HEAVY_SWEEP_START seen by this OpenSM process */
	unsigned subnet_up;    /* OSM_EVENT_ID_SUBNET_UP seen by this OpenSM process */
	int sweeping;	       /* a heavy sweep started and its SUBNET_UP has not come yet */
	int refused, tables_rejected, incomplete, dirty;
	char error[8]; /* "D1A0" .. */
	char reason[1024], tables_reason[1024];
	char write_error
		[4200]; /* why the last write failed ("file: errno text"), "" after one worked */
	struct ibqos_port_record *ports;
	size_t nports, cap;
};

struct ibqos_ctx {
	osm_opensm_t *osm;
	struct ibqos_sweep sweep;
	/* the last routed sweep's destination numbering (dla_route.h): kept across refusals so
	 * that routes survive a fault and its repair where they were */
	struct dla_numbering numbering;
	struct ibqos_record rec;
	/* routing_engine entries set up on this context: only the first routes */
	unsigned engine_places;
	/* the lines said about the stored group map not read, not stored ("" once it was) */
	char map_not_read[1024], map_not_stored[1024];
};

/* log.c */
void ibqos_log(struct ibqos_ctx *ctx, osm_log_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A failure that comes back every sweep (a directory where a file should be, a full disk) is
 * said once: the line is logged unless it is the one last[len] holds, then last holds it. The
 * caller empties last when the failure is over. */
void ibqos_log_changed(struct ibqos_ctx *ctx, char *last, size_t len, osm_log_level_t level,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* snapshot.c */
int ibqos_snapshot(struct ibqos_ctx *ctx, struct ibqos_sweep *sw, char *err, size_t len);
int32_t ibqos_switch_index(const struct ibqos_sweep *sw, uint64_t guid);
void ibqos_sweep_free(struct ibqos_sweep *sw);

/* group_sources.c: dla_compute() with the admin's pins and the stored group map, what it chose
 * logged; and the stored map updated after a successful sweep. */
int ibqos_compute(struct ibqos_ctx *ctx, struct ibqos_sweep *sw, char *err, size_t len);
void ibqos_store_groups(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw);

/* record.c */
void ibqos_record_begin(struct ibqos_ctx *ctx);
void ibqos_record_refusal(struct ibqos_ctx *ctx, const char *id, const char *reason);
void ibqos_record_tables_rejected(struct ibqos_ctx *ctx, const char *reason);
void ibqos_record_vlarb(struct ibqos_ctx *ctx, uint64_t guid, uint8_t port, const char *role,
			unsigned limit, unsigned block_num, unsigned n, const uint8_t *vl,
			const uint8_t *weight);
void ibqos_record_write(struct ibqos_ctx *ctx);
void ibqos_record_sweep_event(struct ibqos_ctx *ctx, int heavy_start);
void ibqos_record_free(struct ibqos_record *r);

/* engine.c: the LFT hooks */
int ibqos_build_lid_matrices(void *context);
int ibqos_build_fwd_tables(void *context);
/* at OSM_EVENT_ID_UCAST_ROUTING_DONE: OpenSM's hop rows, if this sweep's routing left them */
void ibqos_fill_hop_rows(struct ibqos_ctx *ctx);
void ibqos_engine_destroy(void *context);

/* engine_tables.c; ibqos_reject_tables: ERR D1A3, the record, and class 0 for every SL */
void ibqos_load_tables(struct ibqos_ctx *ctx, struct ibqos_sweep *sw);
void ibqos_reject_tables(struct ibqos_ctx *ctx, struct ibqos_sweep *sw, const char *why);

/* fallback_vls.c: before a refusal, switch ports' cached OperVLs as the link manager will set
 * them (max_op_vls applied); returns how many changed */
unsigned ibqos_settle_op_vls(struct ibqos_ctx *ctx);

/* engine_checks.c: 0, or -EINVAL with the reason in err */
int ibqos_check_vls(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, char *err, size_t len);
int ibqos_check_vlarb_caps(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, char *err,
			   size_t len);

/* engine_report.c; per_link 0: the one-line summary; 1: one line per global link (0x40) */
void ibqos_log_link_counts(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw, int per_link);
void ibqos_log_route_shapes(struct ibqos_ctx *ctx, const struct ibqos_sweep *sw);

/* sl2vl_hook.c, vlarb_hook.c */
void ibqos_update_sl2vl(void *context, osm_physp_t *port, uint8_t in_port_num, uint8_t out_port_num,
			ib_slvl_table_t *t);
void ibqos_update_vlarb(void *context, osm_physp_t *port, uint8_t port_num,
			ib_vl_arb_table_t *block, unsigned block_length, unsigned block_num);
/* The table-file spec and role name for an OpenSM port (NULL spec: keep OpenSM's own). */
const struct ibqos_vlarb_spec *ibqos_port_spec(const struct ibqos_sweep *sw, osm_physp_t *p,
					       const char **role_name);

#endif
