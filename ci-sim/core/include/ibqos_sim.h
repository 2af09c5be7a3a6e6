/* ibqos packet-level simulator: public API.
 *
 * The caller (ci-sim/ibqos_sim/sim/, through ctypes) flattens a read-back fabric model
 * into the arrays of struct ibs_config; the core never recomputes routes. All memory
 * the config points to is copied or read during ibs_create() only.
 *
 * Units: time in picoseconds, sizes in bytes, buffers and credits in 64-byte units.
 * Every function returns 0 or a negative errno; none exits or asserts on bad input.
 */
#ifndef IBQOS_SIM_H
#define IBQOS_SIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IBS_MAX_VLS 15 /* data VLs */
#define IBS_NUM_SLS 16
#define IBS_NO_ROUTE 255 /* LFT entry: destination unrouted */
#define IBS_CREDIT 64	 /* bytes per credit */

enum ibs_accounting { IBS_ACCT_BYTE = 0, IBS_ACCT_PACKET = 1 }; /* docs/arbiter.md */
enum ibs_process { IBS_CBR = 0, IBS_POISSON = 1, IBS_SATURATE = 2 };
enum ibs_dest_mode {
	IBS_DEST_SET = 0, /* uniform over dests[dest_off .. +dest_len) */
	IBS_DEST_UNIFORM = 1
}; /* uniform over all endpoints but the source  */
enum ibs_status { IBS_RUNNING = 0, IBS_DONE = 1, IBS_DEADLOCK = 2, IBS_STALLED = 3 };

struct ibs_vlarb_entry {
	uint8_t vl, weight;
};

/* One traffic source: messages of msg_bytes split into packets of at most pkt_bytes. */
struct ibs_flow {
	uint32_t src; /* endpoint index */
	uint8_t sl;
	uint8_t process; /* enum ibs_process */
	uint16_t klass;	 /* class index for per-class statistics, < n_classes */
	uint32_t pkt_bytes;
	uint32_t msg_bytes;
	double rate_gbps;   /* mean offered rate; ignored for IBS_SATURATE */
	uint32_t dest_mode; /* enum ibs_dest_mode */
	uint32_t dest_off, dest_len;
};

struct ibs_config {
	/* nodes: ports 0..nports-1 of node n are global ports port_base[n] + num */
	uint32_t n_nodes;
	const uint8_t *node_is_switch;
	const uint32_t *node_nports;
	const uint32_t *node_port_base;
	const uint32_t *node_route_off; /* switches: offset of its n_endpoints entries in routes */
	const uint32_t *node_sl2vl_off; /* offset of its nports*nports matrix in sl2vl_idx */

	uint32_t n_ports;
	const int32_t *port_peer;   /* global index of the remote port, -1 if unlinked */
	const uint8_t *port_op_vls; /* data VLs, 1..15 */
	const double *port_rate_gbps;
	const uint32_t *port_arb_high_off, *port_arb_high_len;
	const uint32_t *port_arb_low_off, *port_arb_low_len;
	const uint8_t *port_arb_limit; /* VLHighLimit, 4096-byte units, 255 = none */
	const struct ibs_vlarb_entry *arb_entries;

	const uint8_t *routes;	   /* output port number per (switch, endpoint) */
	const uint16_t *sl2vl_idx; /* (in, out) -> row; CAs use (0, port) */
	const uint8_t *sl2vl_rows; /* 16 VLs per row */
	uint32_t n_sl2vl_rows;

	uint32_t n_endpoints;
	const uint32_t *ep_port; /* global port index of each endpoint (a CA port) */

	uint32_t n_flows;
	const struct ibs_flow *flows;
	uint32_t n_dests;
	const uint32_t *dests;
	uint32_t n_classes;

	uint32_t buf_credits; /* input buffer per (port, VL) */
	uint32_t mtu;
	uint64_t prop_ps;	/* link propagation delay */
	uint64_t sw_latency_ps; /* head arrival to earliest forwarding */
	uint8_t voq;		/* 1: input queues split by output port */
	uint8_t accounting;	/* enum ibs_accounting */
	uint64_t seed;
	uint64_t warmup_ps, end_ps; /* statistics window [warmup, end) */
	uint64_t deadlock_ps;	    /* no switch moved a packet this long: stop */
	const char *evq; /* event queue implementation: "calendar" (default), "heap", "list" */
	uint8_t audit;	 /* keep the bookkeeping ibs_audit() needs (a little slower) */
	/* Packets one switch input port may feed through the crossbar at once: 1 (its buffer is
	 * read at link rate, one packet at a time) or 0 = no limit (one per VL queue, or per VOQ). */
	uint8_t input_reads;
	/* SL of each (source, destination) endpoint pair, row-major [n_endpoints^2], for engines
	 * that give each path its own SL (lash, dfsssp); 255 or NULL: the flow's own SL. */
	const uint8_t *pair_sl;
	/* With voq: 0 = the VOQs of an (input, VL) share its buffer and its per-VL credits (IB
	 * flow control); 1 = every (input, VL, output) queue has a buffer of buf_credits of its
	 * own, and the sender keeps credits per (VL, the next switch's output for the packet):
	 * route-aware credits (docs/simulator.md, "Switch model"). Ignored without voq. */
	uint8_t voq_buffers;
};

struct ibs_latency {
	uint64_t count;
	double mean_ps;
	uint64_t p50_ps, p99_ps, max_ps;
};

/* Delivered traffic of one SL or one class inside the statistics window. */
struct ibs_group {
	uint64_t rx_pkts, rx_bytes;	/* delivered */
	uint64_t tx_pkts, tx_bytes;	/* injected */
	struct ibs_latency latency;	/* generation to delivery (includes source queueing) */
	struct ibs_latency net_latency; /* injection start to delivery */
};

struct ibs_results {
	uint32_t status; /* enum ibs_status */
	uint64_t now_ps;
	uint64_t window_ps; /* statistics window actually simulated */
	/* whole run, for conservation: injected == delivered + in_flight + dropped_* */
	uint64_t injected, delivered, in_flight, dropped_route, dropped_vl;
	uint64_t hops, events;
	uint64_t max_pending; /* largest event queue seen */
	uint64_t last_move_ps;
	struct ibs_group sl[IBS_NUM_SLS];
	uint32_t n_classes;
	const struct ibs_group *klass;
	const uint64_t *port_vl_bytes; /* [n_ports][16]: bytes sent inside the window */
	/* [n_ports][16]: bytes sent inside the window per SL (what PortXmitDataSL counts) */
	const uint64_t *port_sl_bytes;
	/* [n_ports][16]: switch outputs, per VL: time the VL had a packet offered to the
	 * output while the output started sending another VL's packet (the arbitration part of
	 * PortVLXmitWait), in ps, inside the window */
	const uint64_t *port_vl_wait_ps;
	const uint64_t *ep_rx_bytes; /* [n_endpoints] */
	const uint64_t *ep_tx_bytes;
	uint32_t witness_len; /* deadlock/stall: (node, in port, vl) triples */
	const uint32_t *witness;
};

/* Consistency audit of a paused or finished simulation (tests); needs cfg.audit. */
struct ibs_audit {
	uint64_t queued;	/* packets found by walking every input queue */
	uint64_t on_link;	/* allocated packets not in a queue */
	uint64_t credit_errors; /* (port, VL) where credits + occupancy + in-flight != buffer */
	uint64_t queue_errors;	/* queue walks that disagree with packet states */
	uint64_t read_errors;	/* switch inputs feeding more outputs than input_reads allows,
					     or marked reading while feeding none */
};

struct ibs_sim;

int ibs_create(const struct ibs_config *cfg, struct ibs_sim **out, char *err, size_t errlen);
/* Run until simulated time `until_ps` (capped at end_ps), a deadlock, or the end. */
int ibs_run(struct ibs_sim *sim, uint64_t until_ps);
const struct ibs_results *ibs_results(struct ibs_sim *sim);
int ibs_audit(const struct ibs_sim *sim, struct ibs_audit *out);
void ibs_destroy(struct ibs_sim *sim);
const char *ibs_version(void);

#ifdef __cplusplus
}
#endif
#endif
