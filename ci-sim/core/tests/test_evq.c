/* One semantics test, run against every event queue implementation. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "evq.h"

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
		ev = (struct ibs_event){ .ts = lcg(&x) % 50, .uid = uid, .obj = (uint32_t)uid };
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
			struct ibs_event late = { .ts = 1000 + i, .uid = N + i };
			EXPECT(ops->insert(q, &late) == 0);
			EXPECT(ops->remove(q, late.ts, late.uid) == 0);
		}
	}
	EXPECT(ops->is_empty(q));
	ops->destroy(q);
}

int main(void)
{
	const char *names[] = { "heap", "list" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct ibs_evq_ops *ops = ibs_evq_find(names[i]);

		EXPECT(ops != NULL);
		if (ops)
			semantics(ops);
	}
	EXPECT(ibs_evq_find(NULL) == &ibs_evq_heap);
	EXPECT(ibs_evq_find("calendar") == NULL);
	TEST_DONE();
}
