/* evq_fifo.h: growing the ring. Out of line: an append's common path compares n with cap. */
#include <stdlib.h>
#include <string.h>

#include "evq_fifo.h"

int evq_fifo_grow(struct evq_fifo *f)
{
	uint32_t cap = f->cap ? 2 * f->cap : 256;
	struct ibs_event *a = malloc((size_t)cap * sizeof(*a));

	if (!a || cap < f->cap) {
		free(a);
		return -ENOMEM;
	}
	/* unwrap: the events in order from index 0 */
	for (uint32_t i = 0; i < f->n; i++)
		a[i] = *evq_fifo_at(f, i);
	free(f->a);
	f->a = a;
	f->cap = cap;
	f->head = 0;
	return 0;
}

void evq_fifo_free(struct evq_fifo *f)
{
	free(f->a);
	*f = (struct evq_fifo){0};
}
