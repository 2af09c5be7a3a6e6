/* Sorted doubly linked list: obviously correct, O(n) insert. The semantics reference. */
#include <errno.h>
#include <stdlib.h>

#include "evq.h"

struct node {
	struct ibs_event ev;
	struct node *prev, *next;
};

struct list {
	struct node head; /* sentinel: head.next is the earliest event */
};

static int list_create(void **q)
{
	struct list *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->head.next = l->head.prev = &l->head;
	*q = l;
	return 0;
}

static void list_destroy(void *q)
{
	struct list *l = q;

	if (!l)
		return;
	for (struct node *n = l->head.next, *nx; n != &l->head; n = nx) {
		nx = n->next;
		free(n);
	}
	free(l);
}

static int list_insert(void *q, const struct ibs_event *ev)
{
	struct list *l = q;
	struct node *n = malloc(sizeof(*n)), *at = l->head.prev;

	if (!n)
		return -ENOMEM;
	n->ev = *ev;
	/* scan from the back: new events are usually the latest */
	while (at != &l->head && ibs_event_before(ev, &at->ev))
		at = at->prev;
	n->prev = at;
	n->next = at->next;
	at->next->prev = n;
	at->next = n;
	return 0;
}

static bool list_is_empty(const void *q)
{
	const struct list *l = q;

	return l->head.next == &l->head;
}

static const struct ibs_event *list_peek_next(const void *q)
{
	const struct list *l = q;

	return list_is_empty(q) ? NULL : &l->head.next->ev;
}

/* Nodes are not one array: a run of one. */
static const struct ibs_event *list_peek_run(const void *q, uint32_t *len)
{
	const struct list *l = q;
	const struct node *x = l->head.next;

	*len = x != &l->head;
	return *len ? &x->ev : NULL;
}

static void unlink_node(struct node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	free(n);
}

static int list_remove_next(void *q, struct ibs_event *out)
{
	struct list *l = q;

	if (list_is_empty(q))
		return -ENOENT;
	*out = l->head.next->ev;
	unlink_node(l->head.next);
	return 0;
}

static int list_remove(void *q, uint64_t ts, uint64_t uid)
{
	struct list *l = q;

	for (struct node *n = l->head.next; n != &l->head; n = n->next)
		if (n->ev.ts == ts && n->ev.uid == uid) {
			unlink_node(n);
			return 0;
		}
	return -ENOENT;
}

const struct ibs_evq_ops ibs_evq_list = {
	.name = "list",
	.create = list_create,
	.destroy = list_destroy,
	.insert = list_insert,
	.is_empty = list_is_empty,
	.peek_next = list_peek_next,
	.remove_next = list_remove_next,
	.remove = list_remove,
	.peek_run = list_peek_run,
};
