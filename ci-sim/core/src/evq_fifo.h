/* Events at one fixed delay from the simulation's time (an arrival at a switch: link and
 * switch latency; a credit return: the link's), kept apart from the event queue. Time never
 * goes back, so such events are made in {ts, uid} order: a FIFO holds them sorted, and the
 * loop takes the earliest of the queue's next event and the FIFOs' heads. An append writes the
 * line the last one wrote and a removal reads the oldest, a few hundred events behind: both
 * in cache, where the calendar's insert read a bucket's tail and its sort moved the events
 * again, long evicted (the bucket tail and the sort: 1.18 lines a hop at 2550 CAs). */
#ifndef IBS_EVQ_FIFO_H
#define IBS_EVQ_FIFO_H

#include <errno.h>
#include <stdint.h>

#include "evq.h"

struct evq_fifo {
	struct ibs_event *a; /* ring of cap events, cap a power of two (or 0) */
	uint32_t cap, head, n;
};

int evq_fifo_grow(struct evq_fifo *f); /* 0 or -ENOMEM */
void evq_fifo_free(struct evq_fifo *f);

/* The head: the earliest event, n > 0. */
static inline const struct ibs_event *evq_fifo_head(const struct evq_fifo *f)
{
	return &f->a[f->head];
}

static inline int evq_fifo_push(struct evq_fifo *f, const struct ibs_event *ev)
{
	if (f->n == f->cap && evq_fifo_grow(f))
		return -ENOMEM;
	f->a[(f->head + f->n++) & (f->cap - 1)] = *ev;
	return 0;
}

/* The i-th event from the head, i < n. */
static inline const struct ibs_event *evq_fifo_at(const struct evq_fifo *f, uint32_t i)
{
	return &f->a[(f->head + i) & (f->cap - 1)];
}

static inline void evq_fifo_pop(struct evq_fifo *f, struct ibs_event *out)
{
	*out = f->a[f->head];
	f->head = (f->head + 1) & (f->cap - 1);
	f->n--;
}

#endif
