/* Internal state of one simulation. Everything lives in struct ibs_sim: no globals,
 * so several simulations can run in one process. */
#ifndef IBS_SIM_INTERNAL_H
#define IBS_SIM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "evq.h"
#include "evq_calendar.h"
#include "evq_fifo.h"
#include "hist.h"
#include "ibqos_sim.h"
#include "rng.h"
#include "vlarb.h"

#define NIL UINT32_MAX

/* EV_ARRIVE at a CA port, EV_ARRIVE_SW at a switch port: that one carries the switch (aux) and
 * the port's number there (vl), so an arrival reads no s->at entry (link_start_tx()). */
enum ev_kind { EV_ARRIVE, EV_ARRIVE_SW, EV_TXDONE, EV_CREDIT, EV_WAKE, EV_CHECK };
/* The FIFOs of events at a fixed delay (evq_fifo.h): an arrival at a switch port
 * (prop_ps + sw_latency_ps) and a credit return (prop_ps), made at a send; an arrival at a CA,
 * made when the transmission ends (prop_ps after it, with the uid it had at the send: the
 * transmission's end's + 1, so the FIFO is in {ts, uid} order too; link_tx_done()). A
 * transmission's end is in order only mostly (a shorter packet, a packet waiting for its tail):
 * with FIFOs for the ends too, taking the queue's events where they were not, the calendar's
 * buckets held a few events each and cost more per event (72 CAs: 181.0 -> 186.5 M
 * instructions). */
enum { EVQ_ARRIVE_SW, EVQ_CREDIT, EVQ_ARRIVE_CA, EVQ_FIXED };
enum pkt_state { PKT_FREE, PKT_LINK, PKT_QUEUED };

/* A packet's hot record: what forwarding reads on every hop. 32 bytes on a 32-byte
 * boundary, so one hop touches one cache line of it (the old 56-byte record straddled
 * two most of the time). Where the packet is follows from `up`: the peer of that port. */
struct pkt {
	uint64_t tail_ps; /* tail arrival at the buffer the packet is in or heading to */
	uint32_t next;	  /* queue or free-list link */
	uint32_t dst;	  /* destination endpoint */
	uint32_t up;	  /* the port that sent it to its buffer: credits go back to it */
	uint16_t bytes;
	uint16_t nx_bytes; /* queued: size, output and output VL of the packet behind it, */
	uint8_t nx_out,
		nx_out_vl; /* copied when that one is linked, so a dequeue reads no other record */
	uint8_t sl, vl;	   /* vl of the buffer the packet is in or heading to */
	uint8_t out, out_vl; /* at a switch: chosen output port and its VL */
	uint8_t state;
};

/* A packet's cold record: read only at injection and delivery. */
struct pkt_meta {
	uint64_t gen_ps, inj_ps;
	uint16_t klass;
};

struct queue {
	uint32_t head, tail;
	uint32_t head_bytes;
};

/* Everything a hop reads about a port lives in this one block, in the order of use: the
 * header with the first PORT_NEAR_VLS VLs' credits in the first cache line, the arbiter's
 * state with its first two table entries in the second, the other entries and VLs' credits
 * after them. A port that sends on VLs below PORT_NEAR_VLS with up to two weighted entries
 * (dla's dragonflies with Debian's tables: VL0-1, one entry each) sends reading two lines;
 * with the credits of all 16 VLs in the first two lines the arbiter's state and entries took
 * a third, missed on 0.9 hops in 1 at 2550 CAs. What a transmission only updates (the VL's
 * last send for the deadlock detector, its bytes for the results) is in the header for the
 * first PORT_LAST_VLS VLs, in dense per-(port, VL) arrays of ibs_sim for the others. Ports
 * are 64-byte aligned and never move (the arbiter points into itself). */
#define PORT_NEAR_VLS 4
#define PORT_NEAR_ENTRIES 2
#define PORT_LAST_VLS 2
struct port {
	_Alignas(64) uint8_t nvl;
	uint8_t tx_vl;
	bool peer_sw; /* the peer is a switch port (cut-through at its end) */
	/* What a send of VLs 0 and 1 counts, in the line it writes anyway (port_last_tx(),
	 * port_count_bytes()), where the node, switch index and peer were (s->at has them): the
	 * last send in 1024-ps units, and the bytes sent inside the window since they were last carried into
	 * port_vl_bytes (before an add would overflow). */
	uint32_t last_tx[PORT_LAST_VLS];
	uint32_t win_bytes[PORT_LAST_VLS];
	uint16_t num;
	uint16_t tx_credits; /* packet in transmission: space it frees in input buffer */
	uint32_t tx_from;    /* ... tx_from (switch), filled by its peer */
	/* ... whose credits go back to tx_up (the packet's `up`, the peer of tx_from): at the
	 * transmission's end s->at's entry of tx_from was a line missed on 0.24 hops in 1 at 2550
	 * CAs; the send reads the packet anyway (room made by busy and req_mask, which moved to
	 * s->pflags and the output's record) */
	uint32_t tx_up;
	double ps_per_byte;
	uint64_t busy_until; /* end of the transmission in progress */
	/* per VL: free space in the peer's input buffer (port_credits()) */
	uint32_t credits[PORT_NEAR_VLS];
	_Alignas(64) struct vlarb arb; /* linked ports only */
	uint32_t credits_far[IBS_MAX_VLS - PORT_NEAR_VLS];
};
_Static_assert(__builtin_offsetof(struct port, arb) == 64, "the port's header is one line");

static inline uint32_t *port_credits(struct port *p, uint32_t vl)
{
	return vl < PORT_NEAR_VLS ? &p->credits[vl] : &p->credits_far[vl - PORT_NEAR_VLS];
}

static inline uint32_t port_credit(const struct port *p, uint32_t vl)
{
	return vl < PORT_NEAR_VLS ? p->credits[vl] : p->credits_far[vl - PORT_NEAR_VLS];
}

/* Where a port is: 16 bytes a port, in one array (a 2550-CA fabric: 200 KB), so that a send
 * pass reads no line of the block for it; and where its peer is, which a send to a switch
 * gives the arrival event, so an arrival reads no entry here (at 2550 CAs the first touch of an
 * event's entry missed on 0.66 hops in 1). Set once. */
struct port_at {
	int32_t sw; /* switch index, -1 for a CA's port */
	uint16_t num;
	uint8_t nvl;
	uint8_t peer_num; /* the peer's number (a node has at most 255 ports) */
	int32_t peer;
	int32_t peer_sw; /* the peer's switch index, -1 for none or a CA's port */
};

/* A switch output's arbitration state, one record per output (sw_out()), out_words u64 long:
 * the VLs some input queue asks for (u16), each VL's round robin (u16 [nvl]: the key served
 * last), then each VL's request bitmap (u64 [nvl][words]: the keys asking for (out, VL)). An
 * arrival that opens a queue sets a bit and the mask, a send pass reads all three: one line
 * for up to 2 VLs of a 64-key switch (the records are 32 bytes there), where the maps, the
 * round robins and the mask in the output port's header were three, the header missed
 * whenever the port was busy (it is read again when its transmission ends). */
struct sw {
	uint32_t node, nports, port_base;
	uint32_t words;	       /* u64 words of one request bitmap */
	uint32_t q_base;       /* first queue of this switch */
	uint32_t out_words;    /* u64 words of one output's record */
	uint64_t *outs;	       /* [nports] records: sw_out() */
	const uint8_t *route;  /* [n_endpoints] */
	const uint16_t *sl2vl; /* [nports][nports] row index */
};

/* What an injection reads (the state and the head of spec) fits the first cache line;
 * the random stream, used once per message, comes after. */
struct flow {
	_Alignas(64) uint64_t cur_gen; /* generation time of the current message */
	uint64_t interval_ps;	       /* mean time between messages */
	uint32_t cur_left;	       /* packets of the current message not yet injected */
	uint32_t cur_dst;
	uint32_t msg_pkts, last_bytes;
	uint32_t sl2vl_row; /* the CA port's SL2VL, for per-pair SLs */
	uint8_t vl, sl;	    /* of the current message */
	bool wake_pending;
	struct ibs_flow spec;
	struct rng rng;
};

struct ep {
	uint32_t gport, node;
	uint32_t flow_base, nflows;
	uint32_t rr[IBS_MAX_VLS];
};

struct group_acc {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	struct hist lat, net;
};

/* The prefetch pipeline's look-ahead (prefetch.c): copies of the next LOOKAHEAD events merged
 * from the queue's run and the FIFOs, kept from one event to the next. */
#define LOOKAHEAD 5
struct lookahead {
	struct ibs_event e[8]; /* ring, from `first` */
	uint32_t first, n;
	uint32_t taken[1 + EVQ_FIXED]; /* events of each source (the queue, FIFO i) in e */
	uint8_t from[8];
};

struct ibs_sim {
	struct ibs_config cfg; /* array pointers are owned copies */
	const struct ibs_evq_ops *evq_ops;
	void *evq;
	struct cal *cal; /* evq when it is the calendar: its operations inline (evq_calendar.h) */
	struct evq_fifo fixed[EVQ_FIXED]; /* events at a fixed delay (evq_fifo.h) */
	uint64_t now, next_uid;
	uint64_t pending;    /* events in the queue */
	uint32_t nvl;	     /* VLs per input buffer key: the highest a port can send on, + 1 */
	uint64_t nvl_inv;    /* ceil(2^32 / nvl): key_input() */
	bool prefetch;	     /* run the prefetch pipeline (prefetch.c) */
	bool port_far;	     /* some port sends reading the last two lines of its block */
	bool oq;	     /* per-output VOQ buffers (cfg.voq && cfg.voq_buffers): oq_credits */
	struct lookahead la; /* the prefetch pipeline's */

	uint32_t n_nodes, n_ports, n_sw, n_ep;
	struct port *ports;
	struct port_at *at;  /* [port] */
	uint32_t *port_node; /* [port] its node (set-up, the deadlock witness) */
	uint8_t *reading;    /* [port] switch input: transmissions reading its buffer now */
	int32_t *node_sw;    /* node -> switch index, -1 for CAs */
	int32_t *node_ep;    /* node -> first endpoint, -1 if none */
	int32_t *port_ep;    /* global port -> endpoint, -1 */
	struct sw *sws;
	struct queue *queues;
	uint32_t *credits_back; /* [port][16] credits travelling back; only with cfg.audit */
	uint64_t n_queues;
	uint64_t *outs_all; /* the switches' output records (struct sw) */
	uint32_t out_hdr;   /* u64 words of a record's mask and round robins */

	struct ep *eps;
	struct flow *flows;

	struct pkt *pkts;      /* hot records, 64-byte aligned */
	struct pkt_meta *meta; /* cold records, same index */
	uint32_t cap_pkts, free_pkt;
	uint64_t in_flight;

	uint32_t *kick; /* ports waiting for an arbitration pass */
	uint32_t n_kick, cap_kick;
	/* [port] PORT_KICKED, PORT_BUSY: dense, so that a kick (an arrival that opens a queue of a
	 * busy output) reads no line of the port's block */
	uint8_t *pflags;

	/* statistics */
	struct group_acc sl[IBS_NUM_SLS];
	struct group_acc *klass;
	struct ibs_group sl_out[IBS_NUM_SLS];
	struct ibs_group *klass_out;
	/* Added to at every hop, so dense: [port][nvl] and [port][nsl] (2550 CAs, 2 VLs: 200 KB
	 * each, stays in cache; [port][16] was 1.6 MB each and missed on every hop). The
	 * public [port][16] copies are filled by ibs_results(). */
	uint32_t nsl; /* SLs a packet can carry: the largest flow SL + 1, 16 with pair_sl */
	uint64_t *port_vl_bytes; /* [port][nvl]: bytes sent inside the measured window */
	uint64_t *port_sl_bytes; /* [port][nsl]: counted at each transmission in the window */
	uint32_t *vl_last_tx;	 /* [port][nvl]: VLs from PORT_LAST_VLS (port_last_tx()) */
	uint64_t *pub_vl_bytes, *pub_sl_bytes; /* [port][16]: the above for ibs_results */
	uint64_t *port_vl_wait_ps;	       /* [port][16]: sw_try_send, in the window */
	uint64_t *ep_rx, *ep_tx;
	struct ibs_results res;
	uint32_t *witness;
	uint32_t witness_len;
	int error; /* first internal error (-ENOMEM) */

	/* Per-output VOQ buffers: a port whose peer is a switch keeps its credits per (VL, the
	 * peer's output for the packet), not in port.vl[]. Last, so the hot fields above keep
	 * the layout they had before. */
	uint32_t oq_stride;   /* outputs per (port, VL): the largest switch's port count */
	uint32_t *oq_credits; /* [port][nvl][oq_stride] */
	uint32_t *oq_back;    /* the same shape, credits travelling back; only with cfg.audit */
};

/* s->pflags: PORT_IN_TURN, its arbiter's vlarb_in_turn() as it was left (port_note_turn()) */
enum { PORT_KICKED = 1, PORT_BUSY = 2, PORT_IN_TURN = 4 };

static inline bool port_busy(const struct ibs_sim *s, uint32_t g)
{
	return s->pflags[g] & PORT_BUSY;
}

static inline void port_note_turn(struct ibs_sim *s, uint32_t g, const struct vlarb *a)
{
	s->pflags[g] =
		(uint8_t)((s->pflags[g] & ~PORT_IN_TURN) | (vlarb_in_turn(a) ? PORT_IN_TURN : 0));
}

/* A send pass that has no active VL (none with a packet and its credits) and whose arbiter is
 * in no turn would call vlarb_decide() for -1 and no change: it ends there without reading the
 * arbiter's line (at 2550 CAs about 0.4 passes a hop send nothing, each a line missed). */
static inline bool port_nothing_to_arbitrate(const struct ibs_sim *s, uint32_t g, uint16_t active)
{
	return !active && !(s->pflags[g] & PORT_IN_TURN);
}

/* Output o's record at switch w (struct sw): the mask, VL v's round robin and its map. */
static inline uint64_t *sw_out(const struct ibs_sim *s, const struct sw *w, uint32_t o)
{
	(void)s;
	return w->outs + (size_t)o * w->out_words;
}

static inline uint16_t *out_mask(uint64_t *rec)
{
	return (uint16_t *)rec;
}

/* The output port's operational VLs, 0 when it is not linked */
static inline uint16_t *out_nvl(uint64_t *rec)
{
	return (uint16_t *)rec + 1;
}

static inline uint16_t *out_rr(uint64_t *rec, uint32_t v)
{
	return (uint16_t *)rec + 2 + v;
}

static inline uint64_t *out_map(const struct ibs_sim *s, const struct sw *w, uint64_t *rec,
				uint32_t v)
{
	return rec + s->out_hdr + (size_t)v * w->words;
}

static inline bool in_window(const struct ibs_sim *s)
{
	return s->now >= s->cfg.warmup_ps && s->now < s->cfg.end_ps;
}

/* The last send of port g on vl, in 1024-ps units (deadlock.c): VLs 0 and 1 in the port's
 * header, which a send writes anyway (in the dense array it missed on 0.30 hops in 1 at 2550
 * CAs), the others in vl_last_tx. */
static inline uint32_t *port_last_tx(struct ibs_sim *s, uint32_t g, uint32_t vl)
{
	return vl < PORT_LAST_VLS ? &s->ports[g].last_tx[vl]
				  : &s->vl_last_tx[(size_t)g * s->nvl + vl];
}

/* A send inside the window of `bytes` by port g on vl: VLs 0 and 1 count in the header (the
 * dense array's line missed on 0.36 hops in 1 at 2550 CAs), carried into port_vl_bytes before
 * the 32-bit count would overflow; ibs_results() adds what is left. */
static inline void port_count_bytes(struct ibs_sim *s, uint32_t g, uint32_t vl, uint32_t bytes)
{
	uint64_t *dense = &s->port_vl_bytes[(size_t)g * s->nvl + vl];

	if (vl >= PORT_LAST_VLS) {
		*dense += bytes;
		return;
	}
	uint32_t *near = &s->ports[g].win_bytes[vl]; /* only now: win_bytes[vl] may not exist */

	if (*near > UINT32_MAX - bytes) {
		*dense += *near;
		*near = 0;
	}
	*near += bytes;
}

static inline uint32_t credits_of(uint32_t bytes)
{
	return (bytes + IBS_CREDIT - 1) / IBS_CREDIT;
}

/* Prefetch hints for a port about to arbitrate and send: its header with the first VLs'
 * credits and its arbiter's state with the first entries, and the other entries and VLs'
 * credits only where some port uses them (the header alone misses on all of them). */
static inline void port_prefetch_send(const struct ibs_sim *s, const struct port *p)
{
	const char *b = (const char *)p;

	__builtin_prefetch(b);
	__builtin_prefetch(b + 64);
	if (s->port_far) {
		__builtin_prefetch(b + 128);
		__builtin_prefetch(b + 192);
	}
}

/* For a port that gets credits back: its header (busy), which holds the first VLs' credits. */
static inline void port_prefetch_credits(const struct port *p)
{
	__builtin_prefetch(p);
}

/* Per-output VOQ buffers: the queue that a packet port g sends to destination dst joins at
 * the next switch, as that switch's LFT decides; 0 (no queue: port 0 never forwards) for a
 * packet the switch will drop as unrouted. The sender reads the receiver's LFT: that is
 * what route-aware credits assume. */
static inline uint32_t oq_slot(const struct ibs_sim *s, uint32_t g, uint32_t dst)
{
	const struct sw *w = &s->sws[s->at[s->at[g].peer].sw];
	uint32_t out = dst < s->n_ep ? w->route[dst] : 0;

	return out < w->nports ? out : 0;
}

static inline uint32_t *oq_cell(uint32_t *base, const struct ibs_sim *s, uint32_t g, uint32_t vl,
				uint32_t slot)
{
	return &base[((size_t)g * s->nvl + vl) * s->oq_stride + slot];
}

/* The credits port g spends to send a packet to dst on vl: the VL's, or with per-output VOQ
 * buffers at a switch peer the (VL, next output)'s. */
static inline uint32_t *send_credits(struct ibs_sim *s, uint32_t g, uint32_t vl, uint32_t dst)
{
	struct port *p = &s->ports[g];

	if (s->oq && p->peer_sw)
		return oq_cell(s->oq_credits, s, g, vl, oq_slot(s, g, dst));
	return port_credits(p, vl);
}

static inline bool port_on_switch(const struct ibs_sim *s, uint32_t gport)
{
	return s->at[gport].sw >= 0;
}

static inline bool is_switch(const struct ibs_sim *s, uint32_t node)
{
	return s->node_sw[node] >= 0;
}

/* The queue of input key (input * nvl + VL) at switch w for output out: with VOQ one per
 * (key, output), else one per key. A key needs no division into its input and VL here. */
static inline uint32_t key_queue(const struct ibs_sim *s, const struct sw *w, uint32_t key,
				 uint32_t out)
{
	return w->q_base + (s->cfg.voq ? key * w->nports + out : key);
}

/* The input of a buffer key (input * nvl + VL) without a division (20-40 cycles, once per
 * send): keys are below 2^12 (255 ports, 16 VLs), so the rounded-up reciprocal's error,
 * key / 2^32, never reaches the next multiple. */
static inline uint32_t key_input(const struct ibs_sim *s, uint32_t key)
{
	return (uint32_t)((key * s->nvl_inv) >> 32);
}

/* sim_config.c */
int sim_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int sim_copy_config(struct ibs_sim *s, const struct ibs_config *cfg, char *err, size_t errlen);
void sim_free_config(struct ibs_config *c);
int sim_check_params(const struct ibs_config *c, char *err, size_t errlen);

static inline void sim_scheduled(struct ibs_sim *s, int rc)
{
	if (++s->pending > s->res.max_pending)
		s->res.max_pending = s->pending;
	if (rc && !s->error)
		s->error = rc;
}

static inline int sim_insert(struct ibs_sim *s, const struct ibs_event *ev)
{
	return s->cal ? cal_insert_ev(s->cal, ev) : s->evq_ops->insert(s->evq, ev);
}

/* Inline: two per hop (as a call, 6 % of the core's instructions went to building the event
 * and saving registers around it). aux: a transmission's end's packet (link_tx_done()). */
static inline void sim_schedule(struct ibs_sim *s, uint64_t ts, uint8_t kind, uint32_t obj,
				uint32_t arg, uint32_t aux)
{
	struct ibs_event ev = {
		.ts = ts, .uid = s->next_uid++, .obj = obj, .arg = arg, .kind = kind, .aux = aux};

	sim_scheduled(s, sim_insert(s, &ev));
}

/* An event `delay` after now into FIFO `fifo`, whose events all have that delay: in order
 * behind the ones already there. */
static inline void sim_schedule_fixed(struct ibs_sim *s, uint32_t fifo, uint64_t delay,
				      uint8_t kind, uint32_t obj, uint32_t arg, uint8_t vl,
				      uint32_t aux)
{
	struct ibs_event ev = {.ts = s->now + delay,
			       .uid = s->next_uid++,
			       .obj = obj,
			       .arg = arg,
			       .kind = kind,
			       .vl = vl,
			       .aux = aux};

	sim_scheduled(s, evq_fifo_push(&s->fixed[fifo], &ev));
}

/* sim.c */
void sim_kick(struct ibs_sim *s, uint32_t gport);

/* pkt.c: the packet pool */
uint32_t pkt_alloc(struct ibs_sim *s);
void pkt_free(struct ibs_sim *s, uint32_t id);
void pkt_pool_free(struct ibs_sim *s);

/* link.c: transmission and credits, shared by switches and CAs */
void link_start_tx(struct ibs_sim *s, uint32_t gport, uint32_t pid, uint8_t vl,
		   uint64_t earliest_end, uint16_t offered);
void link_tx_done(struct ibs_sim *s, const struct ibs_event *ev);
void link_credit(struct ibs_sim *s, uint32_t gport, uint8_t vl, uint32_t arg);
void link_return_credits(struct ibs_sim *s, uint32_t up, uint8_t vl, uint32_t n, uint32_t slot);

/* switch.c */
int sw_setup(struct ibs_sim *s);
void sw_arrive(struct ibs_sim *s, const struct ibs_event *ev);
void sw_try_send(struct ibs_sim *s, uint32_t gport, struct sw *w);
void sw_input_free(struct ibs_sim *s, uint32_t in_gport);
uint32_t sw_queue_of(const struct ibs_sim *s, const struct sw *w, uint32_t in, uint32_t vl,
		     uint32_t out);
void sw_prefetch_arrive(const struct ibs_sim *s, const struct ibs_event *ev, int stage);
void sw_prefetch_send(const struct ibs_sim *s, uint32_t gport, int stage);

/* prefetch.c */
bool sim_prefetch_pays(const struct ibs_sim *s);
void sim_prefetch(struct ibs_sim *s, const struct ibs_event *ev);

/* ca.c */
int ca_setup(struct ibs_sim *s, char *err, size_t errlen);
void ca_try_send(struct ibs_sim *s, uint32_t gport);
void ca_arrive(struct ibs_sim *s, uint32_t gport, uint32_t pid);
void ca_wake(struct ibs_sim *s, uint32_t flow);
void ca_prefetch_arrive(const struct ibs_sim *s, uint32_t pid);
void ca_prefetch_send(const struct ibs_sim *s, uint32_t gport, int stage);

/* A send pass of an idle linked port; a switch's pass is given the switch read here for the
 * test (it read s->at again after the call). */
static inline void sim_try_send(struct ibs_sim *s, uint32_t gport)
{
	int32_t sw = s->at[gport].sw;

	if (sw >= 0)
		sw_try_send(s, gport, &s->sws[sw]);
	else
		ca_try_send(s, gport);
}

/* deadlock.c */
int deadlock_check(struct ibs_sim *s, bool nothing_moves);

#endif
