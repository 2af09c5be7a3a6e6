/* Calendar queue (after R. Brown, CACM 1988): a ring of fixed-width time buckets over a
 * horizon of CAL_NB buckets, plus a binary heap for the events beyond it. Only the current
 * bucket is kept sorted; others are sorted when the ring reaches them. The simulator's
 * events land a few hundred ns to a few us ahead, so almost every operation is O(1).
 *
 * Invariant after every operation: if the queue is not empty, bucket `cur` holds the
 * earliest events, sorted from `head`; every ring event has cur <= ts>>CAL_SHIFT < cur+CAL_NB;
 * every overflow event has ts>>CAL_SHIFT >= cur+CAL_NB at the time it was placed, and is moved to
 * the ring as soon as cur comes close enough. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evq_calendar.h"

static int cal_create(void **q)
{
	struct cal *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->b = calloc(CAL_NB, sizeof(*c->b));
	c->spare = calloc(CAL_NB, sizeof(*c->spare));
	if (!c->b || !c->spare || ibs_evq_heap.create(&c->over)) {
		free(c->b);
		free(c->spare);
		free(c);
		return -ENOMEM;
	}
	*q = c;
	return 0;
}

static void cal_destroy(void *q)
{
	struct cal *c = q;

	if (!c)
		return;
	for (uint32_t i = 0; i < CAL_NB; i++)
		free(c->b[i].a);
	for (uint32_t i = 0; i < c->n_spare; i++)
		free(c->spare[i].a);
	free(c->b);
	free(c->spare);
	ibs_evq_heap.destroy(c->over);
	free(c);
}

/* An emptied bucket gives its array back. Each slot's own array would be written again
 * only when the ring comes round, 8 us later and long evicted: every insert then missed
 * on the bucket's tail. The array drained last is still in cache. */
static void drain(struct cal *c, struct cal_bucket *k)
{
	k->n = k->head = 0;
	k->sorted = true;
	if (k->a) {
		c->spare[c->n_spare++] = (struct cal_spare){k->a, k->cap};
		k->a = NULL;
		k->cap = 0;
	}
}

/* Room for one more event in a full (or array-less) bucket: a spare array, else a larger
 * one. Out of line: the insert's common path only compares n with cap. */
__attribute__((noinline)) int cal_make_room(struct cal *c, struct cal_bucket *k)
{
	if (!k->cap && c->n_spare) {
		struct cal_spare *sp = &c->spare[--c->n_spare];

		k->a = sp->a;
		k->cap = sp->cap;
	}
	if (k->n == k->cap) {
		uint32_t cap = k->cap ? 2 * k->cap : 8;
		struct ibs_event *a = realloc(k->a, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		k->a = a;
		k->cap = cap;
	}
	return 0;
}

/* insertion sort: buckets are short and mostly in order already */
static void sort_bucket(struct cal_bucket *k)
{
	for (uint32_t i = k->head + 1; i < k->n; i++) {
		struct ibs_event ev = k->a[i];
		uint32_t j = i;

		while (j > k->head && ibs_event_before(&ev, &k->a[j - 1])) {
			k->a[j] = k->a[j - 1];
			j--;
		}
		k->a[j] = ev;
	}
	k->sorted = true;
}

static int migrate(struct cal *c)
{
	const struct ibs_event *top;
	struct ibs_event ev;

	while ((top = ibs_evq_heap.peek_next(c->over)) &&
	       cal_abs_bucket(top->ts) < c->cur + CAL_NB) {
		ibs_evq_heap.remove_next(c->over, &ev);
		if (cal_ring_insert(c, &ev))
			return -ENOMEM;
	}
	return 0;
}

/* Buckets from cur on, in ring order, to the first busy slot. */
static uint64_t gap_to_busy(const struct cal *c)
{
	uint32_t start = (uint32_t)(c->cur & (CAL_NB - 1));
	uint32_t w = start / 64;
	uint64_t bits = c->busy[w] & (~0ull << (start % 64));

	for (uint32_t n = 0; n <= CAL_NB / 64; n++) {
		if (bits) {
			uint32_t slot = w * 64 + (uint32_t)__builtin_ctzll(bits);
			return (slot - start) & (CAL_NB - 1);
		}
		w = (w + 1) % (CAL_NB / 64);
		bits = c->busy[w];
	}
	return 0; /* not reached while the ring holds events */
}

/* Move `cur` to the earliest non-empty bucket and sort it. */
int cal_settle_move(struct cal *c)
{
	for (;;) {
		if (!c->ring) {
			const struct ibs_event *top = ibs_evq_heap.peek_next(c->over);

			if (!top)
				return 0;
			c->cur = cal_abs_bucket(top->ts);
			if (migrate(c))
				return -ENOMEM;
			continue;
		}
		struct cal_bucket *k = &c->b[c->cur & (CAL_NB - 1)];
		if (k->head < k->n) {
			if (!k->sorted)
				sort_bucket(k);
			return 0;
		}
		uint32_t slot = (uint32_t)(c->cur & (CAL_NB - 1));
		drain(c, k);
		c->busy[slot / 64] &= ~(1ull << (slot % 64));
		c->cur += gap_to_busy(c);
		/* overflow events have ts >= old cur + CAL_NB > new cur: the horizon only grows */
		if (migrate(c))
			return -ENOMEM;
	}
}

/* An event before the ring's first bucket k0 = cur: the ring moves back to bucket k.
 * The slots of buckets k .. cur-1 held events CAL_NB buckets later (cur+CAL_NB-(cur-k) .. cur+CAL_NB-1),
 * which now fall beyond the horizon: those go to the overflow heap. Usually cur - k is
 * a few empty buckets that cal_settle() skipped. */
static int rewind_to(struct cal *c, uint64_t k)
{
	uint64_t span = c->cur - k < CAL_NB ? c->cur - k : CAL_NB;

	for (uint64_t i = 0; i < span; i++) {
		struct cal_bucket *b = &c->b[(k + i) & (CAL_NB - 1)];

		for (uint32_t j = b->head; j < b->n; j++)
			if (ibs_evq_heap.insert(c->over, &b->a[j]))
				return -ENOMEM;
		c->ring -= b->n - b->head;
		drain(c, b);
		c->busy[((k + i) & (CAL_NB - 1)) / 64] &=
			~(1ull << (((k + i) & (CAL_NB - 1)) % 64));
	}
	c->cur = k;
	return migrate(c);
}

/* An insert into an empty ring, before it or beyond its horizon. */
__attribute__((noinline)) int cal_insert_far(struct cal *c, const struct ibs_event *ev)
{
	uint64_t k = cal_abs_bucket(ev->ts);
	int rc;

	if (!c->ring && ibs_evq_heap.is_empty(c->over))
		c->cur = k;
	if (k < c->cur && (rc = rewind_to(c, k)))
		return rc;
	if (k >= c->cur + CAL_NB)
		return ibs_evq_heap.insert(c->over, ev) ? -ENOMEM : cal_settle(c);
	if ((rc = cal_ring_insert(c, ev)))
		return rc;
	return cal_settle(c);
}

static int cal_insert(void *q, const struct ibs_event *ev)
{
	return cal_insert_ev(q, ev);
}

static bool cal_is_empty(const void *q)
{
	const struct cal *c = q;

	return !c->ring && ibs_evq_heap.is_empty(c->over);
}

static const struct ibs_event *cal_peek_next(const void *q)
{
	return cal_peek(q);
}

/* The current bucket, which cal_settle() keeps sorted. */
static const struct ibs_event *cal_peek_run(const void *q, uint32_t *len)
{
	const struct cal *c = q;
	const struct cal_bucket *k = &c->b[c->cur & (CAL_NB - 1)];

	if (!c->ring) {
		*len = 0;
		return NULL;
	}
	*len = k->n - k->head;
	return &k->a[k->head];
}

static int cal_remove_next(void *q, struct ibs_event *out)
{
	struct cal *c = q;

	return c->ring ? cal_pop_ring(c, out) : -ENOENT;
}

static int cal_remove(void *q, uint64_t ts, uint64_t uid)
{
	struct cal *c = q;
	uint64_t kb = cal_abs_bucket(ts);

	if (kb < c->cur || kb >= c->cur + CAL_NB) {
		int rc = ibs_evq_heap.remove(c->over, ts, uid);
		return rc ? rc : cal_settle(c);
	}
	struct cal_bucket *k = &c->b[kb & (CAL_NB - 1)];
	for (uint32_t j = k->head; j < k->n; j++)
		if (k->a[j].ts == ts && k->a[j].uid == uid) {
			memmove(&k->a[j], &k->a[j + 1], (k->n - j - 1) * sizeof(*k->a));
			k->n--;
			c->ring--;
			return cal_settle(c);
		}
	return ibs_evq_heap.remove(c->over, ts, uid);
}

const struct ibs_evq_ops ibs_evq_calendar = {
	.name = "calendar",
	.create = cal_create,
	.destroy = cal_destroy,
	.insert = cal_insert,
	.is_empty = cal_is_empty,
	.peek_next = cal_peek_next,
	.remove_next = cal_remove_next,
	.remove = cal_remove,
	.peek_run = cal_peek_run,
};
