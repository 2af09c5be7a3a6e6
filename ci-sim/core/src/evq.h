/* Event queue behind a five-operation interface (after ns-3's Scheduler), plus a
 * look-ahead hint for prefetching.
 *
 * Events are ordered by {ts, uid}; uids are unique and increase with insertion,
 * so events at the same time leave in insertion order, whatever the implementation.
 * One file per implementation; tests/test_evq.c runs one semantics test on each.
 */
#ifndef IBS_EVQ_H
#define IBS_EVQ_H

#include <stdbool.h>
#include <stdint.h>

struct ibs_event {
	uint64_t ts;
	uint64_t uid;
	uint32_t obj; /* port or flow index */
	uint32_t arg; /* packet index or credit count */
	uint8_t kind;
	uint8_t vl;
	uint32_t aux; /* a transmission's end: the packet (in the struct's padding) */
};

static inline bool ibs_event_before(const struct ibs_event *a, const struct ibs_event *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->uid < b->uid);
}

struct ibs_evq_ops {
	const char *name;
	int (*create)(void **q);
	void (*destroy)(void *q);
	int (*insert)(void *q, const struct ibs_event *ev); /* 0 or -ENOMEM */
	bool (*is_empty)(const void *q);
	const struct ibs_event *(*peek_next)(const void *q); /* NULL when empty */
	int (*remove_next)(void *q, struct ibs_event *out);  /* 0 or -ENOENT */
	int (*remove)(void *q, uint64_t ts, uint64_t uid);   /* 0 or -ENOENT */
	/* The next event (NULL when empty) and in *len how many events, it included, follow in
	 * order in one array from it: run[i] is the event i places after the next one, for
	 * i < *len. Only a hint: later inserts may still come before them. One call instead
	 * of one per event looked at (the prefetch pipeline looks at five per event). */
	const struct ibs_event *(*peek_run)(const void *q, uint32_t *len);
};

extern const struct ibs_evq_ops ibs_evq_heap;	  /* binary heap, O(log n) */
extern const struct ibs_evq_ops ibs_evq_list;	  /* sorted list, O(n) insert: the reference */
extern const struct ibs_evq_ops ibs_evq_calendar; /* time buckets + overflow heap, ~O(1) */

/* NULL for an unknown name. NULL or "" selects the default (calendar). */
const struct ibs_evq_ops *ibs_evq_find(const char *name);

#endif
