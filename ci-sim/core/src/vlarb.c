#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vlarb.h"

/* An entry of weight 0, or of a VL outside reach, is never in turn: start_turn() passes over
 * it, and every other entry is visited in the same cyclic order without it. */
static bool kept(const struct ibs_vlarb_entry *e, uint16_t reach)
{
	return e->weight && (reach & (1u << e->vl));
}

static int table_init(struct vlarb_table *t, struct vlarb_slot *slots,
		      const struct ibs_vlarb_entry *e, uint32_t n, uint16_t reach)
{
	memset(t, 0, sizeof(*t));
	t->e = slots;
	for (uint32_t i = 0; i < n; i++) {
		if (e[i].vl >= IBS_MAX_VLS)
			return -EINVAL;
		if (!kept(&e[i], reach))
			continue;
		t->e[t->n] = (struct vlarb_slot){e[i].vl, e[i].weight, 0};
		t->mask |= (uint16_t)(1u << e[i].vl);
		t->n++;
	}
	return 0;
}

int vlarb_init(struct vlarb *a, const struct ibs_vlarb_entry *high, uint32_t nhigh,
	       const struct ibs_vlarb_entry *low, uint32_t nlow, uint8_t limit, uint8_t mode,
	       uint16_t reach)
{
	int rc;

	memset(a, 0, sizeof(*a));
	if (mode > IBS_ACCT_PACKET || nhigh > VLARB_MAX_ENTRIES || nlow > VLARB_MAX_ENTRIES)
		return -EINVAL;
	/* the tables of most ports fit inside the arbiter (weight-0 entries take no slot):
	 * a separate allocation costs a cache miss on every arbitration of a large fabric */
	uint32_t used = 0;

	for (uint32_t i = 0; i < nhigh; i++)
		used += high[i].vl < IBS_MAX_VLS && kept(&high[i], reach);
	for (uint32_t i = 0; i < nlow; i++)
		used += low[i].vl < IBS_MAX_VLS && kept(&low[i], reach);
	struct vlarb_slot *slots = a->small;

	if (used > VLARB_INLINE && !(slots = calloc(nhigh + nlow, sizeof(*slots))))
		return -ENOMEM;
	if ((rc = table_init(&a->high, slots, high, nhigh, reach)) ||
	    (rc = table_init(&a->low, slots + a->high.n, low, nlow, reach))) {
		vlarb_free(a);
		return rc;
	}
	a->limit = limit;
	a->mode = mode;
	return 0;
}

void vlarb_free(struct vlarb *a)
{
	if (a->high.e != a->small)
		free(a->high.e);
	a->high.e = a->low.e = NULL;
}

/* The entry after i, cyclically (no division: a modulo by the table's length was the
 * costliest instruction of an arbitration) */
static uint8_t next_idx(const struct vlarb_table *t, uint8_t i)
{
	return (uint8_t)(i + 1 == t->n ? 0 : i + 1);
}

static uint64_t limit_bytes(const struct vlarb *a)
{
	return a->limit ? 4096u * (uint64_t)a->limit : 1;
}

static void end_turn(struct vlarb *a, struct vlarb_table *t, uint16_t nonempty)
{
	int32_t *left = &t->e[t->idx].left;

	/* packet mode carries nothing; byte mode forgets credit only of an emptied VL */
	if (a->mode == IBS_ACCT_PACKET || (*left > 0 && !(nonempty & (1u << t->e[t->idx].vl))))
		*left = 0;
	t->in_turn = false;
	t->idx = next_idx(t, t->idx);
}

/* Byte mode: credit whole rounds of the table at once while no active entry could come
 * out of debt, instead of visiting every entry 4096/64 times for a large packet and a
 * small weight. Exact: in those rounds no packet is sent and no other state changes. */
static void skip_debt_rounds(struct vlarb_table *t, uint16_t active)
{
	int64_t k = INT64_MAX;

	for (uint32_t i = 0; i < t->n && k; i++) {
		if (!(active & (1u << t->e[i].vl)))
			continue;
		int64_t rounds = t->e[i].left < 0
			? -(int64_t)t->e[i].left / (IBS_CREDIT * t->e[i].weight)
			: 0;
		if (rounds < k)
			k = rounds;
	}
	if (k == INT64_MAX || !k)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		if (active & (1u << t->e[i].vl))
			t->e[i].left += (int32_t)(k * IBS_CREDIT * t->e[i].weight);
}

/* Start the turn of the next entry (from idx, in table order) whose VL is active.
 * may_skip: nothing outside this table changes while its turns send nothing. */
static void start_turn(struct vlarb *a, struct vlarb_table *t, uint16_t active,
		       const uint32_t *head_bytes, bool may_skip)
{
	uint8_t i = t->idx;

	/* A table of one entry (dla's ports with Debian's tables: VL0 high, VL1 low, one entry
	 * each; 201 K turns for 174 K sends at 72 CAs): what the loops below do for it, without
	 * them. In debt, skip_debt_rounds() credits -left / (64 * weight) rounds, at least one. */
	if (t->n == 1 && a->mode == IBS_ACCT_BYTE) {
		struct vlarb_slot *e = t->e;
		int32_t turn = IBS_CREDIT * e->weight;

		if (!(active & (1u << e->vl)))
			return;
		t->in_turn = true;
		if (may_skip && e->left + turn <= 0)
			e->left += (int32_t)(-(int64_t)e->left / turn * turn);
		e->left += turn;
		return;
	}

	for (uint32_t k = 0; k < t->n; k++, i = next_idx(t, i)) {
		uint8_t vl = t->e[i].vl;

		if (!(active & (1u << vl)))
			continue;
		t->idx = i;
		t->in_turn = true;
		if (a->mode == IBS_ACCT_BYTE) {
			if (may_skip && t->e[i].left + IBS_CREDIT * t->e[i].weight <= 0)
				skip_debt_rounds(t, active);
			t->e[i].left += IBS_CREDIT * t->e[i].weight;
		} else {
			uint32_t size = head_bytes[vl] ? head_bytes[vl] : 1;
			uint32_t pkts = (IBS_CREDIT * t->e[i].weight + size - 1) / size;

			t->e[i].left = pkts ? (int32_t)pkts : 1;
		}
		return;
	}
}

static void start_low_turn(struct vlarb *a, uint16_t active, const uint32_t *head_bytes,
			   bool may_skip)
{
	start_turn(a, &a->low, active, head_bytes, may_skip);
	if (a->mode == IBS_ACCT_BYTE && a->limit) {
		uint64_t lb = limit_bytes(a);

		a->hi_count = a->hi_count > lb ? a->hi_count - lb : 0;
	} else {
		a->hi_count = 0;
	}
}

/* Inlined into its two callers (sw_try_send, ca_try_send; with LTO): as a call it saved and
 * restored six registers around every decision, 19 of its 110 instructions. */
__attribute__((always_inline)) inline int
vlarb_decide(struct vlarb *a, uint16_t active, uint16_t nonempty, const uint32_t *head_bytes)
{
	struct vlarb_table *hi = &a->high, *lo = &a->low;

	a->pending = 0;
	/* Each pass ends a turn or starts one (adding weight, or lowering hi_count),
	 * so the loop ends; the bound only guards against a logic error. */
	for (int guard = 0; guard < 1 << 20; guard++) {
		if (lo->in_turn) { /* a low turn is never interrupted */
			if ((active & (1u << lo->e[lo->idx].vl)) && lo->e[lo->idx].left > 0) {
				a->pending = 2;
				return lo->e[lo->idx].vl;
			}
			end_turn(a, lo, nonempty);
			continue;
		}
		if (hi->in_turn && !(active & (1u << hi->e[hi->idx].vl))) {
			end_turn(a, hi, nonempty);
			continue;
		}
		uint16_t hi_active = active & hi->mask, lo_active = active & lo->mask;

		if (a->limit != 255 && lo_active && a->hi_count >= limit_bytes(a)) {
			start_low_turn(a, active, head_bytes, false); /* rule 1 */
			continue;
		}
		if (hi_active) { /* rule 2 */
			/* A turn started here is of an active entry (hi_active names one), and a
			 * second pass would come back to this point with nothing else changed:
			 * the turn's credit is looked at now, without that pass. */
			if (!hi->in_turn)
				start_turn(a, hi, active, head_bytes, true);
			if (hi->e[hi->idx].left > 0) {
				a->pending = 1;
				return hi->e[hi->idx].vl;
			}
			end_turn(a, hi, nonempty);
			continue;
		}
		if (lo_active) { /* rule 3 */
			a->hi_count = 0;
			start_low_turn(a, active, head_bytes, true);
			continue;
		}
		return -1; /* rule 4 */
	}
	return -1;
}

void vlarb_commit(struct vlarb *a, uint32_t bytes)
{
	struct vlarb_table *t;

	if (a->pending == 1) {
		t = &a->high;
		a->hi_count += bytes;
	} else if (a->pending == 2) {
		t = &a->low;
	} else {
		return;
	}
	t->e[t->idx].left -= a->mode == IBS_ACCT_BYTE ? (int32_t)bytes : 1;
	if (t->e[t->idx].left <= 0) { /* the turn is used up; byte debt is carried */
		if (a->mode == IBS_ACCT_PACKET)
			t->e[t->idx].left = 0;
		t->in_turn = false;
		t->idx = next_idx(t, t->idx);
	}
	a->pending = 0;
}
