#include "unit.h"
#include "dla_groups.h"

#include <stdlib.h>

/* "sw-g%u-l%u": two 10-digit numbers, 26 bytes plus NUL (gcc 12 checks the worst case) */
static char names[4096][32];

static uint32_t next_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* logical port -> physical port of switch s (identity unless shuffled) */
static uint8_t phys(const struct dfp *d, unsigned s, unsigned logical)
{
	return d->perm ? d->perm[s * 256 + logical] : (uint8_t)logical;
}

/* group G's n-th global slot is spine n % S, port L+1 + n/S */
static void dfp_link(void *ctx, unsigned G, unsigned nG, unsigned H, unsigned nH)
{
	struct dfp *d = ctx;
	unsigned L = d->spec.leaves, S = d->spec.spines, per = L + S;
	unsigned a = G * per + L + nG % S, b = H * per + L + nH % S;

	dla_fabric_link(&d->f, a, phys(d, a, L + 1 + nG / S), b, phys(d, b, L + 1 + nH / S));
}

int dfp_build(struct dfp *d, const struct dfp_spec *sp)
{
	unsigned L = sp->leaves, S = sp->spines, g = sp->groups, per = L + S, lid = 1;
	unsigned pmax = sp->uneven ? 2 * sp->hosts : sp->hosts;
	uint32_t rnd = 2463534242u + sp->seed;

	memset(d, 0, sizeof(*d));
	d->spec = *sp;
	if (dla_fabric_init(&d->f, per * g, 0xbfff))
		return -1;
	d->group = calloc(per * g, sizeof(*d->group));
	d->role = calloc(per * g, 1);
	if (sp->shuffle) {
		d->perm = calloc((size_t)per * g * 256, 1);
		for (unsigned s = 0; s < per * g; s++) {
			unsigned n = (s % per) < L ? pmax + S : L + sp->globals;

			for (unsigned k = 0; k <= n; k++)
				d->perm[s * 256 + k] = (uint8_t)k;
			for (unsigned k = n; k > 1; k--) {
				unsigned j = 1 + next_rand(&rnd) % k;
				uint8_t t = d->perm[s * 256 + k];

				d->perm[s * 256 + k] = d->perm[s * 256 + j];
				d->perm[s * 256 + j] = t;
			}
		}
	}
	for (unsigned G = 0; G < g; G++)
		for (unsigned i = 0; i < per; i++) {
			unsigned s = G * per + i, leaf = i < L;
			unsigned hosts = !leaf ? 0
				: sp->uneven   ? next_rand(&rnd) % (2 * sp->hosts + 1)
					       : sp->hosts;

			if (G == 0 && i == 0 && !hosts)
				hosts = 1;
			snprintf(names[s % 4096], sizeof(names[0]), "sw-g%u-%s%u", G,
				 leaf ? "l" : "s", leaf ? i : i - L);
			dla_fabric_set_switch(&d->f, s, 0x1000 + s, names[s % 4096],
					      (uint16_t)lid++,
					      (uint8_t)(1 + (leaf ? pmax + S : L + sp->globals)));
			d->group[s] = G;
			d->role[s] = leaf ? DLA_SW_LEAF : DLA_SW_SPINE;
			for (unsigned j = 0; j < hosts; j++)
				dla_fabric_attach_endport(&d->f, s, phys(d, s, 1 + j),
							  (uint16_t)lid++);
		}
	for (unsigned G = 0; G < g; G++)
		for (unsigned i = 0; i < L; i++)
			for (unsigned j = 0; j < S; j++) {
				unsigned l = G * per + i, s = G * per + L + j;

				dla_fabric_link(&d->f, l, phys(d, l, pmax + 1 + j), s,
						phys(d, s, 1 + i));
			}
	deal_global_links(g, S * sp->globals, dfp_link, d);
	d->f.max_lid = (uint16_t)(lid - 1);
	return 0;
}

void dfp_free(struct dfp *d)
{
	dla_fabric_free(&d->f);
	free(d->group);
	free(d->role);
	free(d->perm);
	memset(d, 0, sizeof(*d));
}
