/* One semantics test, run against every event queue implementation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "evq.h"
#include "evq_fifo.h"

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

static int cmp(const void *a, const void *b)
{
	const struct ibs_event *x = a, *y = b;

	return ibs_event_before(x, y) ? -1 : ibs_event_before(y, x) ? 1 : 0;
}

static void semantics(const struct ibs_evq_ops *ops)
{
	enum { N = 2000 };
	static struct ibs_event ref[N];
	struct ibs_event ev;
	void *q;
	uint64_t x = 42;
	size_t n = 0;

	EXPECT(ops->create(&q) == 0);
	EXPECT(ops->is_empty(q));
	EXPECT(ops->peek_next(q) == NULL);
	EXPECT(ops->remove_next(q, &ev) == -ENOENT);
	EXPECT(ops->remove(q, 1, 1) == -ENOENT);

	/* many ties on ts: order must follow uid (insertion order) */
	for (uint64_t uid = 0; uid < N; uid++) {
		ev = (struct ibs_event){.ts = lcg(&x) % 50, .uid = uid, .obj = (uint32_t)uid};
		EXPECT(ops->insert(q, &ev) == 0);
		ref[n++] = ev;
	}
	/* remove every 7th event by key; it must disappear and only it */
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 7 == 3)
			EXPECT(ops->remove(q, ref[i].ts, ref[i].uid) == 0);
		else
			ref[kept++] = ref[i];
	}
	EXPECT(ops->remove(q, ref[0].ts, ref[0].uid + N) == -ENOENT);
	qsort(ref, kept, sizeof(ref[0]), cmp);
	for (size_t i = 0; i < kept; i++) {
		const struct ibs_event *p = ops->peek_next(q);

		EXPECT(!ops->is_empty(q));
		EXPECT(p && p->ts == ref[i].ts && p->uid == ref[i].uid);
		EXPECT(ops->remove_next(q, &ev) == 0);
		EXPECT(ev.ts == ref[i].ts && ev.uid == ref[i].uid && ev.obj == ref[i].obj);
		/* interleave inserts of later events, as the simulator does */
		if (i % 5 == 0) {
			struct ibs_event late = {.ts = 1000 + i, .uid = N + i};
			EXPECT(ops->insert(q, &late) == 0);
			EXPECT(ops->remove(q, late.ts, late.uid) == 0);
		}
	}
	EXPECT(ops->is_empty(q));
	ops->destroy(q);
}

/* Simulator-like use with wide time spreads (across buckets and beyond any horizon),
 * checked in lockstep against a plain sorted array. With `delays`, half the inserts are
 * at one of 7 constant delays after `now`, as the simulator's are (ties among them and with
 * the others; now and then one at a delay's time from an earlier `now`, before its stream's
 * last). */
static void holds_order(const struct ibs_evq_ops *ops, uint64_t spread, const uint64_t *delays)
{
	enum { N = 4000 };
	static struct ibs_event ref[N];
	struct ibs_event ev;
	size_t n = 0;
	uint64_t x = spread, now = 0, uid = 0;
	void *q;

	EXPECT(ops->create(&q) == 0);
	for (int step = 0; step < 30000; step++) {
		uint64_t r = lcg(&x);
		if (n < N && (r % 3 || n == 0)) {
			/* mostly in the future; now and then at `now` or even in the past */
			uint64_t ts = r % 17 == 0	    ? now
				: r % 29 == 0 && now > 5000 ? now - 5000
							    : now + lcg(&x) % spread;
			if (delays && r % 3 == 1)
				ts = (r % 97 == 0 && now > 2000 ? now - 2000 : now) +
					delays[lcg(&x) % 7];
			ev = (struct ibs_event){.ts = ts, .uid = uid++, .obj = (uint32_t)step};
			EXPECT(ops->insert(q, &ev) == 0);
			size_t i = n++;
			while (i > 0 && ibs_event_before(&ev, &ref[i - 1])) {
				ref[i] = ref[i - 1];
				i--;
			}
			ref[i] = ev;
		} else {
			EXPECT(ops->remove_next(q, &ev) == 0);
			EXPECT(ev.ts == ref[0].ts && ev.uid == ref[0].uid && ev.obj == ref[0].obj);
			memmove(ref, ref + 1, (--n) * sizeof(ref[0]));
			now = ev.ts;
			if (r % 11 == 0 && n > 2) { /* cancel one at random */
				size_t k = lcg(&x) % n;
				EXPECT(ops->remove(q, ref[k].ts, ref[k].uid) == 0);
				memmove(ref + k, ref + k + 1, (--n - k) * sizeof(ref[0]));
			}
		}
		const struct ibs_event *p = ops->peek_next(q);
		EXPECT(n ? p && p->ts == ref[0].ts && p->uid == ref[0].uid : p == NULL);
		uint32_t len;
		const struct ibs_event *run = ops->peek_run(q, &len);

		EXPECT(run == p && (len > 0) == (n > 0) && len <= n);
		for (uint32_t a = 1; a < len; a++) /* a hint, but a right one */
			EXPECT(run[a].ts == ref[a].ts && run[a].uid == ref[a].uid);
		EXPECT(ops->is_empty(q) == (n == 0));
		if (failures > 10)
			break;
	}
	while (n--) {
		EXPECT(ops->remove_next(q, &ev) == 0);
	}
	EXPECT(ops->is_empty(q));
	ops->destroy(q);
}

/* The FIFO of events at a fixed delay keeps insertion order when it grows with its ring
 * wrapped (the head past the middle): grow unwraps the events in order. */
static void fifo_order(void)
{
	struct evq_fifo f = {0};
	struct ibs_event ev;
	uint64_t pushed = 0, popped = 0;

	for (int round = 0; round < 6; round++) {
		/* more pushes than pops each round: the ring wraps, then grows while wrapped */
		for (int i = 0; i < 300; i++) {
			ev = (struct ibs_event){.ts = pushed, .uid = pushed};
			pushed++;
			EXPECT(evq_fifo_push(&f, &ev) == 0);
		}
		for (int i = 0; i < 200; i++) {
			EXPECT(evq_fifo_at(&f, 0)->uid == popped);
			evq_fifo_pop(&f, &ev);
			EXPECT(ev.uid == popped);
			popped++;
		}
		EXPECT(f.n == pushed - popped);
		EXPECT(evq_fifo_at(&f, f.n - 1)->uid == pushed - 1);
	}
	while (f.n) {
		evq_fifo_pop(&f, &ev);
		EXPECT(ev.uid == popped++);
	}
	EXPECT(popped == pushed);
	evq_fifo_free(&f);
}

int main(void)
{
	static const uint64_t delays[] = {0, 50, 1000, 1050, 1000, 70000, 3};
	const char *names[] = {"calendar", "heap", "list"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct ibs_evq_ops *ops = ibs_evq_find(names[i]);

		EXPECT(ops != NULL);
		if (ops) {
			semantics(ops);
			holds_order(ops, 3000, NULL);	    /* within one bucket or two */
			holds_order(ops, 5000000, NULL);    /* a few us: the common case */
			holds_order(ops, 1ull << 40, NULL); /* far beyond the horizon */
			holds_order(ops, 5000, delays);
			holds_order(ops, 1ull << 40, delays);
		}
	}
	fifo_order();
	EXPECT(ibs_evq_find(NULL) == &ibs_evq_calendar);
	EXPECT(ibs_evq_find("splay") == NULL);
	TEST_DONE();
}
