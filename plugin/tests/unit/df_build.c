#include "unit.h"

#include <stdlib.h>

/* "sw-g%u-s%u" with two 10-digit numbers is 26 bytes plus NUL: gcc 12 checks the worst case */
static char names[4096][32];

void deal_global_links(unsigned g, unsigned slots,
		       void (*link)(void *ctx, unsigned G, unsigned nG, unsigned H, unsigned nH),
		       void *ctx)
{
	unsigned *used = calloc(g, sizeof(*used));

	for (int progress = 1; progress;) {
		progress = 0;
		for (unsigned dist = 1; dist <= g / 2; dist++)
			for (unsigned G = 0; G < g; G++) {
				unsigned H = (G + dist) % g;

				if (2 * dist == g && H < G)
					continue;
				if (used[G] < slots && used[H] < slots) {
					link(ctx, G, used[G]++, H, used[H]++);
					progress = 1;
				}
			}
	}
	free(used);
}

/* group G's n-th global slot is switch n % a, port p + a + n / a */
static void df_link(void *ctx, unsigned G, unsigned nG, unsigned H, unsigned nH)
{
	struct df *d = ctx;
	unsigned a = d->a, p = d->p;

	dla_fabric_link(&d->f, df_sw(d, G, nG % a), (uint8_t)(p + a + nG / a), df_sw(d, H, nH % a),
			(uint8_t)(p + a + nH / a));
}

int df_build(struct df *d, unsigned a, unsigned p, unsigned h, unsigned g)
{
	unsigned nports = 1 + p + (a - 1) + h, lid = 1;

	d->a = a, d->p = p, d->h = h, d->g = g;
	if (dla_fabric_init(&d->f, a * g, 0xbfff))
		return -1;
	d->group = calloc(a * g, sizeof(*d->group));
	for (unsigned G = 0; G < g; G++)
		for (unsigned i = 0; i < a; i++) {
			unsigned s = df_sw(d, G, i);

			snprintf(names[s % 4096], sizeof(names[0]), "sw-g%u-s%u", G, i);
			dla_fabric_set_switch(&d->f, s, 0x1000 + s, names[s % 4096],
					      (uint16_t)lid++, (uint8_t)nports);
			d->group[s] = G;
			for (unsigned j = 0; j < p; j++)
				dla_fabric_attach_endport(&d->f, s, (uint8_t)(1 + j),
							  (uint16_t)lid++);
		}
	for (unsigned G = 0; G < g; G++)
		for (unsigned i = 0; i < a; i++)
			for (unsigned k = i + 1; k < a; k++)
				dla_fabric_link(&d->f, df_sw(d, G, i), (uint8_t)(p + 1 + k - 1),
						df_sw(d, G, k), (uint8_t)(p + 1 + i));
	deal_global_links(g, a * h, df_link, d);
	d->f.max_lid = (uint16_t)(lid - 1);
	return 0;
}

void df_unlink(struct df *d, unsigned s, unsigned port)
{
	struct dla_port *pt = &d->f.sw[s].ports[port];

	if (pt->peer_kind == DLA_PEER_SWITCH)
		memset(&d->f.sw[pt->peer_sw].ports[pt->peer_port], 0, sizeof(*pt));
	memset(pt, 0, sizeof(*pt));
}

void df_free(struct df *d)
{
	dla_fabric_free(&d->f);
	free(d->group);
}

int fat_tree_build(struct dla_fabric *f, unsigned leaves, unsigned spines, unsigned hosts)
{
	unsigned lid = 1;

	if (dla_fabric_init(f, leaves + spines, 0xbfff))
		return -1;
	for (unsigned s = 0; s < spines; s++)
		dla_fabric_set_switch(f, s, 0x2000 + s, "spine", (uint16_t)lid++,
				      (uint8_t)(1 + leaves));
	for (unsigned l = 0; l < leaves; l++) {
		unsigned s = spines + l;

		dla_fabric_set_switch(f, s, 0x3000 + l, "leaf", (uint16_t)lid++,
				      (uint8_t)(1 + hosts + spines));
		for (unsigned j = 0; j < hosts; j++)
			dla_fabric_attach_endport(f, s, (uint8_t)(1 + j), (uint16_t)lid++);
		for (unsigned k = 0; k < spines; k++)
			dla_fabric_link(f, s, (uint8_t)(1 + hosts + k), k, (uint8_t)(1 + l));
	}
	f->max_lid = (uint16_t)(lid - 1);
	return 0;
}

uint32_t *labels_without(const unsigned *group, uint32_t nsw, uint32_t dead)
{
	uint32_t *l = malloc(nsw * sizeof(*l)), i = 0;

	for (uint32_t s = 0; s < nsw; s++)
		if (s != dead)
			l[i++] = group[s];
	return l;
}

int fabric_without_switch(const struct dla_fabric *src, uint32_t dead, struct dla_fabric *dst)
{
	uint32_t n = src->nsw - (dead < src->nsw); /* DLA_NO_SWITCH: a plain copy */

	if (dla_fabric_init(dst, n, src->max_lid))
		return -1;
	for (uint32_t s = 0, i = 0; s < src->nsw; s++) {
		if (s == dead)
			continue;
		dla_fabric_set_switch(dst, i, src->sw[s].guid, src->sw[s].name, src->sw[s].lid,
				      src->sw[s].num_ports);
		i++;
	}
	for (uint32_t s = 0; s < src->nsw; s++) {
		uint32_t i = s - (s > dead);

		if (s == dead)
			continue;
		for (unsigned p = 1; p < src->sw[s].num_ports; p++) {
			const struct dla_port *pt = &src->sw[s].ports[p];

			if (pt->peer_kind == DLA_PEER_ENDPORT)
				dla_fabric_attach_endport(dst, i, (uint8_t)p, pt->endport_lid);
			else if (pt->peer_kind == DLA_PEER_SWITCH && pt->peer_sw != dead &&
				 pt->peer_sw > s)
				dla_fabric_link(dst, i, (uint8_t)p,
						pt->peer_sw - (pt->peer_sw > dead), pt->peer_port);
		}
	}
	return 0;
}
