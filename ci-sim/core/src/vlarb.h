/* The IB output arbiter (high/low VLArb tables + VLHighLimit), exactly as docs/arbiter.md.
 *
 * Decide and commit are separate (BookSim's Arbitrate / UpdateState): vlarb_decide()
 * names the VL whose packet goes next given which VLs are active, and remembers the
 * entry it picked; vlarb_commit() charges that packet once it is actually sent.
 */
#ifndef IBS_VLARB_H
#define IBS_VLARB_H

#include <stdbool.h>
#include <stdint.h>

#include "ibqos_sim.h"

#define VLARB_MAX_ENTRIES 64
#define VLARB_INLINE 8 /* entries kept inside struct vlarb (no extra cache line) */

struct vlarb_slot {
	uint8_t vl, weight;
	int32_t left; /* byte mode: deficit; packet mode: packets left */
};

struct vlarb_table {
	uint8_t n;   /* entries with weight > 0, in table order */
	uint8_t idx; /* current (or next) entry */
	bool in_turn;
	uint16_t mask;	      /* VLs named by some entry */
	struct vlarb_slot *e; /* sized to the table: one or two cache lines */
};

struct vlarb {
	struct vlarb_table high, low;
	uint8_t limit;	   /* VLHighLimit */
	uint8_t mode;	   /* enum ibs_accounting */
	uint8_t pending;   /* 0 none, 1 high, 2 low: set by decide, used by commit */
	uint64_t hi_count; /* high-table bytes since the last low turn */
	/* Both tables' entries (high.e points at them): here, or one allocation. The first two
	 * share the cache line of the fields above when the arbiter starts a line (struct port). */
	struct vlarb_slot small[VLARB_INLINE];
};

/* Fails (-EINVAL) on more than 64 entries or a VL above 14, -ENOMEM. vlarb_free() after.
 * The tables may point into *a: an initialised arbiter must not be copied or moved.
 * reach: the VLs that can ever be active at this port; entries of other VLs are left out
 * (Debian's low table names VL1-7, dla's SL2VL uses VL0-1: every low turn scanned six
 * entries for nothing). The decisions are the same as with them for every active mask
 * within reach. */
int vlarb_init(struct vlarb *a, const struct ibs_vlarb_entry *high, uint32_t nhigh,
	       const struct ibs_vlarb_entry *low, uint32_t nlow, uint8_t limit, uint8_t mode,
	       uint16_t reach);

void vlarb_free(struct vlarb *a);

/* active: VLs with a packet and credits for it; nonempty: VLs with a packet;
 * head_bytes[vl]: size of the packet each active VL would send next.
 * Returns the VL to send or -1 (idle). */
int vlarb_decide(struct vlarb *a, uint16_t active, uint16_t nonempty, const uint32_t *head_bytes);

/* The packet picked by the last vlarb_decide() was sent. */
void vlarb_commit(struct vlarb *a, uint32_t bytes);

/* Whether a turn is in progress. Without one, vlarb_decide() with no active VL returns -1 and
 * changes nothing: a send pass that finds nothing to send need not look at the arbiter. */
static inline bool vlarb_in_turn(const struct vlarb *a)
{
	return a->high.in_turn || a->low.in_turn;
}

/* VLs the arbiter can ever send (named in a table and within reach). */
static inline uint16_t vlarb_served(const struct vlarb *a)
{
	return a->high.mask | a->low.mask;
}

#endif
