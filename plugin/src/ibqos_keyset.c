#include "ibqos_keyset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: GUIDs share long vendor prefixes, so mix every bit. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static struct ibqos_keyset_slot *find(struct ibqos_keyset_slot *slot, size_t cap, uint64_t guid,
				      unsigned port)
{
	size_t i = mix(guid ^ ((uint64_t)port << 56 | port)) & (cap - 1);

	while (slot[i].line && (slot[i].guid != guid || slot[i].port != port))
		i = (i + 1) & (cap - 1);
	return &slot[i];
}

static int grow(struct ibqos_keyset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	struct ibqos_keyset_slot *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slot[i].line)
			*find(slot, cap, s->slot[i].guid, s->slot[i].port) = s->slot[i];
	free(s->slot);
	s->slot = slot;
	s->cap = cap;
	return 0;
}

int ibqos_keyset_add(struct ibqos_keyset *s, uint64_t guid, unsigned port, unsigned line,
		     unsigned *first)
{
	struct ibqos_keyset_slot *hit;

	if ((s->n + 1) * 2 > s->cap && grow(s)) /* load factor <= 1/2 keeps probes short */
		return -ENOMEM;
	hit = find(s->slot, s->cap, guid, port);
	if (hit->line) {
		*first = hit->line;
		return 1;
	}
	*hit = (struct ibqos_keyset_slot){.guid = guid, .port = port, .line = line};
	s->n++;
	return 0;
}

void ibqos_keyset_free(struct ibqos_keyset *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}
