#include "dla_fabric.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dla_fabric_init(struct dla_fabric *f, uint32_t nsw, uint16_t max_lid)
{
	memset(f, 0, sizeof(*f));
	if (nsw) {
		f->sw = calloc(nsw, sizeof(*f->sw));
		if (!f->sw)
			return -ENOMEM;
	}
	f->nsw = nsw;
	f->max_lid = max_lid;
	return 0;
}

int dla_fabric_set_switch(struct dla_fabric *f, uint32_t idx, uint64_t guid, const char *name,
			  uint16_t lid, uint8_t num_ports)
{
	struct dla_switch *s;

	if (idx >= f->nsw || num_ports == 0)
		return -EINVAL;
	s = &f->sw[idx];
	free(s->ports);
	s->ports = calloc(num_ports, sizeof(*s->ports));
	if (!s->ports)
		return -ENOMEM;
	s->guid = guid;
	s->name = name;
	s->lid = lid;
	s->num_ports = num_ports;
	return 0;
}

static struct dla_port *port_of(struct dla_fabric *f, uint32_t s, uint8_t p)
{
	if (s >= f->nsw || p == 0 || p >= f->sw[s].num_ports)
		return NULL;
	return &f->sw[s].ports[p];
}

int dla_fabric_link(struct dla_fabric *f, uint32_t s1, uint8_t p1, uint32_t s2, uint8_t p2)
{
	struct dla_port *a = port_of(f, s1, p1), *b = port_of(f, s2, p2);

	if (!a || !b || a == b)
		return -EINVAL;
	a->peer_kind = b->peer_kind = DLA_PEER_SWITCH;
	a->peer_sw = s2;
	a->peer_port = p2;
	b->peer_sw = s1;
	b->peer_port = p1;
	return 0;
}

int dla_fabric_attach_endport(struct dla_fabric *f, uint32_t s, uint8_t p, uint16_t lid)
{
	struct dla_port *a = port_of(f, s, p);

	if (!a)
		return -EINVAL;
	a->peer_kind = DLA_PEER_ENDPORT;
	a->endport_lid = lid;
	return 0;
}

void dla_fabric_free(struct dla_fabric *f)
{
	for (uint32_t i = 0; i < f->nsw; i++)
		free(f->sw[i].ports);
	free(f->sw);
	memset(f, 0, sizeof(*f));
}

const char *dla_switch_label(const struct dla_fabric *f, uint32_t s, char *buf, size_t len)
{
	if (s >= f->nsw)
		snprintf(buf, len, "(no switch)");
	else if (f->sw[s].name && *f->sw[s].name)
		snprintf(buf, len, "0x%016" PRIx64 " \"%s\"", f->sw[s].guid, f->sw[s].name);
	else
		snprintf(buf, len, "0x%016" PRIx64, f->sw[s].guid);
	return buf;
}

int dla_fabric_equal(const struct dla_fabric *a, const struct dla_fabric *b)
{
	if (a->nsw != b->nsw || a->max_lid != b->max_lid)
		return 0;
	for (uint32_t s = 0; s < a->nsw; s++) {
		const struct dla_switch *x = &a->sw[s], *y = &b->sw[s];

		if (x->guid != y->guid || x->lid != y->lid || x->num_ports != y->num_ports)
			return 0;
		for (unsigned p = 0; p < x->num_ports; p++) {
			const struct dla_port *u = &x->ports[p], *v = &y->ports[p];

			if (u->peer_kind != v->peer_kind || u->peer_port != v->peer_port ||
			    u->endport_lid != v->endport_lid || u->peer_sw != v->peer_sw)
				return 0;
		}
	}
	return 1;
}
