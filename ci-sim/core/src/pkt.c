/* The packet pool: hot and cold records by index, a LIFO free list (a packet freed on
 * delivery is reused at once, while its record is still in cache). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

_Static_assert(sizeof(struct pkt) == 32, "a hot packet record must fill half a cache line");

/* Doubles the pool. The hot array is 64-byte aligned so no record straddles two lines. */
static int grow(struct ibs_sim *s)
{
	uint32_t cap = s->cap_pkts ? 2 * s->cap_pkts : 4096;
	struct pkt *np;
	struct pkt_meta *nm;

	if (cap <= s->cap_pkts)
		return -ENOMEM;
	np = aligned_alloc(64, (size_t)cap * sizeof(*np));
	nm = realloc(s->meta, (size_t)cap * sizeof(*nm));
	if (!np || !nm) {
		free(np);
		if (nm)
			s->meta = nm;
		return -ENOMEM;
	}
	if (s->cap_pkts)
		memcpy(np, s->pkts, (size_t)s->cap_pkts * sizeof(*np));
	free(s->pkts);
	s->pkts = np;
	s->meta = nm;
	for (uint32_t i = cap; i-- > s->cap_pkts;) {
		np[i].state = PKT_FREE;
		np[i].next = s->free_pkt;
		s->free_pkt = i;
	}
	s->cap_pkts = cap;
	return 0;
}

uint32_t pkt_alloc(struct ibs_sim *s)
{
	if (s->free_pkt == NIL && grow(s)) {
		s->error = -ENOMEM;
		return NIL;
	}
	uint32_t id = s->free_pkt;

	s->free_pkt = s->pkts[id].next;
	s->pkts[id].next = NIL;
	s->in_flight++;
	return id;
}

void pkt_free(struct ibs_sim *s, uint32_t id)
{
	s->pkts[id].state = PKT_FREE;
	s->pkts[id].next = s->free_pkt;
	s->free_pkt = id;
	s->in_flight--;
}

void pkt_pool_free(struct ibs_sim *s)
{
	free(s->pkts);
	free(s->meta);
	s->pkts = NULL;
	s->meta = NULL;
}
