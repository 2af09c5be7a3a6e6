#include "fabric.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t guid, size_t hcap)
{
	guid ^= guid >> 33;
	guid *= 0xff51afd7ed558ccdULL;
	guid ^= guid >> 33;
	return (size_t)guid & (hcap - 1);
}

void rb_fabric_init(struct rb_fabric *f)
{
	memset(f, 0, sizeof(*f));
}

static void node_free(struct rb_node *n)
{
	if (!n)
		return;
	if (n->ports)
		for (int p = 0; p <= n->nports; p++)
			free(n->ports[p].vlarb);
	free(n->ports);
	free(n->lft);
	free(n->sl2vl);
	free(n->sl2vl_read);
	free(n);
}

void rb_fabric_free(struct rb_fabric *f)
{
	for (size_t i = 0; i < f->n; i++)
		node_free(f->nodes[i]);
	free(f->nodes);
	free(f->hash);
	rb_fabric_init(f);
}

uint32_t rb_find(const struct rb_fabric *f, uint64_t guid)
{
	if (!f->hcap)
		return RB_NO_NODE;
	for (size_t h = slot_of(guid, f->hcap);; h = (h + 1) & (f->hcap - 1)) {
		uint32_t v = f->hash[h];

		if (!v)
			return RB_NO_NODE;
		if (f->nodes[v - 1]->guid == guid)
			return v - 1;
	}
}

static int rehash(struct rb_fabric *f, size_t hcap)
{
	uint32_t *h = calloc(hcap, sizeof(*h));

	if (!h)
		return -1;
	free(f->hash);
	f->hash = h;
	f->hcap = hcap;
	for (size_t i = 0; i < f->n; i++) {
		size_t s = slot_of(f->nodes[i]->guid, hcap);

		while (h[s])
			s = (s + 1) & (hcap - 1);
		h[s] = (uint32_t)i + 1;
	}
	return 0;
}

uint32_t rb_add(struct rb_fabric *f, uint64_t guid, uint8_t type, uint8_t nports)
{
	struct rb_node *n;
	size_t tables = type == IB_NODE_SWITCH ? (size_t)(nports + 1) * (nports + 1) : nports + 1u;

	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 1024;
		struct rb_node **nodes = realloc(f->nodes, cap * sizeof(*nodes));

		if (!nodes)
			return RB_NO_NODE;
		f->nodes = nodes;
		f->cap = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return RB_NO_NODE;
	n->guid = guid;
	n->type = type;
	n->nports = nports;
	n->ports = calloc(nports + 1u, sizeof(*n->ports));
	n->sl2vl = calloc(tables, 8);
	n->sl2vl_read = calloc(tables, 1);
	if (!n->ports || !n->sl2vl || !n->sl2vl_read) {
		node_free(n);
		return RB_NO_NODE;
	}
	if ((f->n + 1) * 2 > f->hcap && rehash(f, f->hcap ? 2 * f->hcap : 4096) < 0) {
		node_free(n);
		return RB_NO_NODE;
	}
	f->nodes[f->n++] = n;
	size_t s = slot_of(guid, f->hcap);
	while (f->hash[s])
		s = (s + 1) & (f->hcap - 1);
	f->hash[s] = (uint32_t)f->n;
	return (uint32_t)f->n - 1;
}
