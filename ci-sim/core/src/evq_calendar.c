/* Calendar queue (after R. Brown, CACM 1988): a ring of fixed-width time buckets over a
 * horizon of NB buckets, plus a binary heap for the events beyond it. Only the current
 * bucket is kept sorted; others are sorted when the ring reaches them. The simulator's
 * events land a few hundred ns to a few us ahead, so almost every operation is O(1).
 *
 * Invariant after every operation: if the queue is not empty, bucket `cur` holds the
 * earliest events, sorted from `head`; every ring event has cur <= ts>>SHIFT < cur+NB;
 * every overflow event has ts>>SHIFT >= cur+NB at the time it was placed, and is moved to
 * the ring as soon as cur comes close enough. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evq.h"

/* Bucket width 2048 ps, 4096 buckets: an 8.4 us horizon. At 2550 CAs and full load a bucket
 * holds ~45 events; 1024 ps with twice the buckets measured 1.11x slower (8192 bucket
 * headers and their arrays cycle through the cache), 512 and 256 ps slower still, 4096 ps
 * within noise of 2048. */
#define SHIFT 11
#define NB 4096u

struct bucket {
	struct ibs_event *a;
	uint32_t n, cap, head;
	bool sorted;
};

/* A drained bucket's array, kept for the next bucket that needs one. */
struct spare {
	struct ibs_event *a;
	uint32_t cap;
};

struct cal {
	struct bucket *b;
	struct spare *spare; /* [NB]: LIFO, so a new bucket gets the array read last (cached) */
	uint32_t n_spare;
	uint64_t busy[NB / 64]; /* bit per slot: holds events */
	uint64_t cur;		/* absolute bucket number of the ring's first bucket */
	size_t ring;		/* events in the ring */
	void *over;		/* events beyond the horizon: ibs_evq_heap */
};

static inline uint64_t abs_bucket(uint64_t ts)
{
	return ts >> SHIFT;
}

static int cal_create(void **q)
{
	struct cal *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->b = calloc(NB, sizeof(*c->b));
	c->spare = calloc(NB, sizeof(*c->spare));
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
	for (uint32_t i = 0; i < NB; i++)
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
static void drain(struct cal *c, struct bucket *k)
{
	k->n = k->head = 0;
	k->sorted = true;
	if (k->a) {
		c->spare[c->n_spare++] = (struct spare){k->a, k->cap};
		k->a = NULL;
		k->cap = 0;
	}
}

/* Room for one more event in a full (or array-less) bucket: a spare array, else a larger
 * one. Out of line: the insert's common path only compares n with cap. */
static __attribute__((noinline)) int make_room(struct cal *c, struct bucket *k)
{
	if (!k->cap && c->n_spare) {
		struct spare *sp = &c->spare[--c->n_spare];

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
static void sort_bucket(struct bucket *k)
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

static inline int ring_insert(struct cal *c, const struct ibs_event *ev)
{
	uint32_t slot = (uint32_t)(abs_bucket(ev->ts) & (NB - 1));
	struct bucket *k = &c->b[slot];
	bool before_tail = k->n > k->head && ibs_event_before(ev, &k->a[k->n - 1]);

	c->busy[slot / 64] |= 1ull << (slot % 64);
	if (k->n == k->cap && make_room(c, k))
		return -ENOMEM;
	if (before_tail && k->sorted) {
		/* into the sorted current bucket, at its place */
		uint32_t j = k->n++;

		while (j > k->head && ibs_event_before(ev, &k->a[j - 1])) {
			k->a[j] = k->a[j - 1];
			j--;
		}
		k->a[j] = *ev;
	} else {
		k->a[k->n++] = *ev;
		if (before_tail)
			k->sorted = false;
	}
	c->ring++;
	return 0;
}

static int migrate(struct cal *c)
{
	const struct ibs_event *top;
	struct ibs_event ev;

	while ((top = ibs_evq_heap.peek_next(c->over)) && abs_bucket(top->ts) < c->cur + NB) {
		ibs_evq_heap.remove_next(c->over, &ev);
		if (ring_insert(c, &ev))
			return -ENOMEM;
	}
	return 0;
}

/* Buckets from cur on, in ring order, to the first busy slot. */
static uint64_t gap_to_busy(const struct cal *c)
{
	uint32_t start = (uint32_t)(c->cur & (NB - 1));
	uint32_t w = start / 64;
	uint64_t bits = c->busy[w] & (~0ull << (start % 64));

	for (uint32_t n = 0; n <= NB / 64; n++) {
		if (bits) {
			uint32_t slot = w * 64 + (uint32_t)__builtin_ctzll(bits);
			return (slot - start) & (NB - 1);
		}
		w = (w + 1) % (NB / 64);
		bits = c->busy[w];
	}
	return 0; /* not reached while the ring holds events */
}

/* Move `cur` to the earliest non-empty bucket and sort it. */
static int settle_move(struct cal *c)
{
	for (;;) {
		if (!c->ring) {
			const struct ibs_event *top = ibs_evq_heap.peek_next(c->over);

			if (!top)
				return 0;
			c->cur = abs_bucket(top->ts);
			if (migrate(c))
				return -ENOMEM;
			continue;
		}
		struct bucket *k = &c->b[c->cur & (NB - 1)];
		if (k->head < k->n) {
			if (!k->sorted)
				sort_bucket(k);
			return 0;
		}
		uint32_t slot = (uint32_t)(c->cur & (NB - 1));
		drain(c, k);
		c->busy[slot / 64] &= ~(1ull << (slot % 64));
		c->cur += gap_to_busy(c);
		/* overflow events have ts >= old cur + NB > new cur: the horizon only grows */
		if (migrate(c))
			return -ENOMEM;
	}
}

/* An event before the ring's first bucket k0 = cur: the ring moves back to bucket k.
 * The slots of buckets k .. cur-1 held events NB buckets later (cur+NB-(cur-k) .. cur+NB-1),
 * which now fall beyond the horizon: those go to the overflow heap. Usually cur - k is
 * a few empty buckets that settle() skipped. */
static int rewind_to(struct cal *c, uint64_t k)
{
	uint64_t span = c->cur - k < NB ? c->cur - k : NB;

	for (uint64_t i = 0; i < span; i++) {
		struct bucket *b = &c->b[(k + i) & (NB - 1)];

		for (uint32_t j = b->head; j < b->n; j++)
			if (ibs_evq_heap.insert(c->over, &b->a[j]))
				return -ENOMEM;
		c->ring -= b->n - b->head;
		drain(c, b);
		c->busy[((k + i) & (NB - 1)) / 64] &= ~(1ull << (((k + i) & (NB - 1)) % 64));
	}
	c->cur = k;
	return migrate(c);
}

/* settle_move() when the current bucket is drained or unsorted. After almost every insert and
 * removal it is neither, and the call's cost (about 50 instructions, 2 per event) is saved. */
static inline int settle(struct cal *c)
{
	const struct bucket *k = &c->b[c->cur & (NB - 1)];

	if (c->ring && k->head < k->n && k->sorted)
		return 0;
	return settle_move(c);
}

/* An insert into an empty ring, before it or beyond its horizon. */
static __attribute__((noinline)) int insert_far(struct cal *c, const struct ibs_event *ev)
{
	uint64_t k = abs_bucket(ev->ts);
	int rc;

	if (!c->ring && ibs_evq_heap.is_empty(c->over))
		c->cur = k;
	if (k < c->cur && (rc = rewind_to(c, k)))
		return rc;
	if (k >= c->cur + NB)
		return ibs_evq_heap.insert(c->over, ev) ? -ENOMEM : settle(c);
	if ((rc = ring_insert(c, ev)))
		return rc;
	return settle(c);
}

/* The common insert, into the ring's horizon, without the rest's stack frame. */
static int cal_insert(void *q, const struct ibs_event *ev)
{
	struct cal *c = q;
	uint64_t k = abs_bucket(ev->ts);

	if (!c->ring || k < c->cur || k >= c->cur + NB)
		return insert_far(c, ev);
	int rc = ring_insert(c, ev);

	return rc ? rc : settle(c);
}

static bool cal_is_empty(const void *q)
{
	const struct cal *c = q;

	return !c->ring && ibs_evq_heap.is_empty(c->over);
}

static const struct ibs_event *cal_peek_next(const void *q)
{
	const struct cal *c = q;
	const struct bucket *k = &c->b[c->cur & (NB - 1)];

	if (c->ring)
		return &k->a[k->head];
	return ibs_evq_heap.peek_next(c->over); /* settle() keeps the ring filled first */
}

/* The current bucket, which settle() keeps sorted. */
static const struct ibs_event *cal_peek_run(const void *q, uint32_t *len)
{
	const struct cal *c = q;
	const struct bucket *k = &c->b[c->cur & (NB - 1)];

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

	if (!c->ring)
		return -ENOENT;
	struct bucket *k = &c->b[c->cur & (NB - 1)];
	*out = k->a[k->head++];
	c->ring--;
	return settle(c);
}

static int cal_remove(void *q, uint64_t ts, uint64_t uid)
{
	struct cal *c = q;
	uint64_t kb = abs_bucket(ts);

	if (kb < c->cur || kb >= c->cur + NB) {
		int rc = ibs_evq_heap.remove(c->over, ts, uid);
		return rc ? rc : settle(c);
	}
	struct bucket *k = &c->b[kb & (NB - 1)];
	for (uint32_t j = k->head; j < k->n; j++)
		if (k->a[j].ts == ts && k->a[j].uid == uid) {
			memmove(&k->a[j], &k->a[j + 1], (k->n - j - 1) * sizeof(*k->a));
			k->n--;
			c->ring--;
			return settle(c);
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
