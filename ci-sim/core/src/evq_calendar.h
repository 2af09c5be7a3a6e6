/* The calendar queue's layout and its common operations, inline: the event loop calls them
 * directly when the simulation runs on the calendar (the default) instead of through
 * ibs_evq_ops, where a removal peeked at the next event twice (the loop's look, then the
 * removal's) and every call paid its frame (evq_calendar.c has the rest). */
#ifndef IBS_EVQ_CALENDAR_H
#define IBS_EVQ_CALENDAR_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evq.h"

/* Bucket width 2048 ps, 4096 buckets: an 8.4 us horizon. At 2550 CAs and full load a bucket
 * holds ~45 events; 1024 ps with twice the buckets measured 1.11x slower (8192 bucket
 * headers and their arrays cycle through the cache), 512 and 256 ps slower still, 4096 ps
 * within noise of 2048. */
#define CAL_SHIFT 11
#define CAL_NB 4096u

struct cal_bucket {
	struct ibs_event *a;
	uint32_t n, cap, head;
	bool sorted;
};

/* A drained bucket's array, kept for the next bucket that needs one. */
struct cal_spare {
	struct ibs_event *a;
	uint32_t cap;
};

struct cal {
	struct cal_bucket *b;
	struct cal_spare *spare; /* [NB]: LIFO, so a new bucket gets the array read last (cached) */
	uint32_t n_spare;
	uint64_t busy[CAL_NB / 64]; /* bit per slot: holds events */
	uint64_t cur;		    /* absolute bucket number of the ring's first bucket */
	size_t ring;		    /* events in the ring */
	void *over;		    /* events beyond the horizon: ibs_evq_heap */
};

/* evq_calendar.c: the uncommon paths, out of line */
int cal_make_room(struct cal *c, struct cal_bucket *k);
int cal_settle_move(struct cal *c);
int cal_insert_far(struct cal *c, const struct ibs_event *ev);

static inline uint64_t cal_abs_bucket(uint64_t ts)
{
	return ts >> CAL_SHIFT;
}

static inline struct cal_bucket *cal_cur(const struct cal *c)
{
	return &c->b[c->cur & (CAL_NB - 1)];
}

static inline int cal_ring_insert(struct cal *c, const struct ibs_event *ev)
{
	uint32_t slot = (uint32_t)(cal_abs_bucket(ev->ts) & (CAL_NB - 1));
	struct cal_bucket *k = &c->b[slot];
	bool before_tail = k->n > k->head && ibs_event_before(ev, &k->a[k->n - 1]);

	c->busy[slot / 64] |= 1ull << (slot % 64);
	if (k->n == k->cap && !k->cap && c->n_spare) {
		/* the common way a bucket fills again: the array drained last (cal_make_room()'s
		 * first case, here without the call) */
		const struct cal_spare *sp = &c->spare[--c->n_spare];

		k->a = sp->a;
		k->cap = sp->cap;
	}
	if (k->n == k->cap && cal_make_room(c, k))
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

/* cal_settle_move() when the current bucket is drained or unsorted. After almost every insert
 * and removal it is neither, and the call's cost (about 50 instructions, 2 per event) is saved. */
static inline int cal_settle(struct cal *c)
{
	const struct cal_bucket *k = cal_cur(c);

	if (c->ring && k->head < k->n && k->sorted)
		return 0;
	return cal_settle_move(c);
}

/* The common insert, into the ring's horizon. */
static inline int cal_insert_ev(struct cal *c, const struct ibs_event *ev)
{
	uint64_t k = cal_abs_bucket(ev->ts);

	if (!c->ring || k < c->cur || k >= c->cur + CAL_NB)
		return cal_insert_far(c, ev);
	int rc = cal_ring_insert(c, ev);

	return rc ? rc : cal_settle(c);
}

/* The next event, NULL when there is none. */
static inline const struct ibs_event *cal_peek(const struct cal *c)
{
	const struct cal_bucket *k = cal_cur(c);

	if (c->ring)
		return &k->a[k->head];
	return ibs_evq_heap.peek_next(c->over); /* cal_settle() keeps the ring filled first */
}

/* Removes the next event, which cal_peek() showed in the ring (c->ring > 0). */
static inline int cal_pop_ring(struct cal *c, struct ibs_event *out)
{
	struct cal_bucket *k = cal_cur(c);

	*out = k->a[k->head++];
	c->ring--;
	if (k->head < k->n) /* the current bucket stays sorted: a removal leaves it so */
		return 0;
	return cal_settle_move(c);
}

#endif
