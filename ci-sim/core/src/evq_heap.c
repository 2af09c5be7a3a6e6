/* Binary min-heap of events stored by value: the hot path touches one array. */
#include <errno.h>
#include <stdlib.h>

#include "evq.h"

struct heap {
	struct ibs_event *a;
	size_t n, cap;
};

static int heap_create(void **q)
{
	struct heap *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->cap = 1024;
	h->a = malloc(h->cap * sizeof(*h->a));
	if (!h->a) {
		free(h);
		return -ENOMEM;
	}
	*q = h;
	return 0;
}

static void heap_destroy(void *q)
{
	struct heap *h = q;

	if (h)
		free(h->a);
	free(h);
}

static void sift_up(struct heap *h, size_t i)
{
	struct ibs_event ev = h->a[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ibs_event_before(&ev, &h->a[p]))
			break;
		h->a[i] = h->a[p];
		i = p;
	}
	h->a[i] = ev;
}

static void sift_down(struct heap *h, size_t i)
{
	struct ibs_event ev = h->a[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && ibs_event_before(&h->a[c + 1], &h->a[c]))
			c++;
		if (!ibs_event_before(&h->a[c], &ev))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	h->a[i] = ev;
}

static int heap_insert(void *q, const struct ibs_event *ev)
{
	struct heap *h = q;

	if (h->n == h->cap) {
		struct ibs_event *a = realloc(h->a, 2 * h->cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		h->a = a;
		h->cap *= 2;
	}
	h->a[h->n++] = *ev;
	sift_up(h, h->n - 1);
	return 0;
}

static bool heap_is_empty(const void *q)
{
	return ((const struct heap *)q)->n == 0;
}

static const struct ibs_event *heap_peek_next(const void *q)
{
	const struct heap *h = q;

	return h->n ? &h->a[0] : NULL;
}

/* Beyond the root, heap order says nothing cheap about the order of the rest. */
static const struct ibs_event *heap_peek_run(const void *q, uint32_t *len)
{
	const struct ibs_event *e = heap_peek_next(q);

	*len = e != NULL;
	return e;
}

static void remove_at(struct heap *h, size_t i)
{
	h->n--;
	if (i == h->n)
		return;
	h->a[i] = h->a[h->n];
	if (i > 0 && ibs_event_before(&h->a[i], &h->a[(i - 1) / 2]))
		sift_up(h, i);
	else
		sift_down(h, i);
}

static int heap_remove_next(void *q, struct ibs_event *out)
{
	struct heap *h = q;

	if (!h->n)
		return -ENOENT;
	*out = h->a[0];
	remove_at(h, 0);
	return 0;
}

/* Linear search, as in ns-3's HeapScheduler: the simulator never cancels events. */
static int heap_remove(void *q, uint64_t ts, uint64_t uid)
{
	struct heap *h = q;

	for (size_t i = 0; i < h->n; i++)
		if (h->a[i].ts == ts && h->a[i].uid == uid) {
			remove_at(h, i);
			return 0;
		}
	return -ENOENT;
}

const struct ibs_evq_ops ibs_evq_heap = {
	.name = "heap",
	.create = heap_create,
	.destroy = heap_destroy,
	.insert = heap_insert,
	.is_empty = heap_is_empty,
	.peek_next = heap_peek_next,
	.remove_next = heap_remove_next,
	.remove = heap_remove,
	.peek_run = heap_peek_run,
};
