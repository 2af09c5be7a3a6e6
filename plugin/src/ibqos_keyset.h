/*
 * A set of (guid, port) keys, each remembering the table-file line that added it: duplicate
 * detection in O(1) per line, so a file with 10^5 `vlarb port` lines parses in linear time.
 */
#ifndef IBQOS_KEYSET_H
#define IBQOS_KEYSET_H

#include <stddef.h>
#include <stdint.h>

struct ibqos_keyset_slot {
	uint64_t guid;
	unsigned port;
	unsigned line; /* 0: slot empty (file lines count from 1) */
};

struct ibqos_keyset {
	struct ibqos_keyset_slot *slot;
	size_t cap; /* power of two, or 0 */
	size_t n;
};

/* 0 if added; 1 if already present (*first = its line); -ENOMEM. line must be > 0. */
int ibqos_keyset_add(struct ibqos_keyset *s, uint64_t guid, unsigned port, unsigned line,
		     unsigned *first);
void ibqos_keyset_free(struct ibqos_keyset *s);

#endif
