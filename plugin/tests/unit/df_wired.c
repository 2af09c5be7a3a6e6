/*
 * Dragonflies wired the way installers do it, not only the way ci-sim's generator does:
 * global links dealt in group-pair order, the absolute, relative and circulant arrangements,
 * random matchings, and every switch's port numbers shuffled.
 */
#include "unit.h"

#include <stdlib.h>

static char names[4096][32];

static unsigned rnd(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) & 0x7fff;
}

struct glink {
	unsigned G, n, H, m; /* group G's global slot n to group H's slot m */
};

/* Global links by arrangement; returns how many. Slot n of a group is switch n % a. */
static unsigned deal(unsigned a, unsigned h, unsigned g, enum df_wiring w, unsigned *seed,
		     struct glink *out)
{
	unsigned slots = a * h, *used = calloc(g, sizeof(*used)), k = 0;

	switch (w) {
	case DF_PAIR_ORDER:
		for (int progress = 1; progress;) {
			progress = 0;
			for (unsigned G = 0; G < g; G++)
				for (unsigned H = G + 1; H < g; H++)
					if (used[G] < slots && used[H] < slots) {
						out[k++] =
							(struct glink){G, used[G]++, H, used[H]++};
						progress = 1;
					}
		}
		break;
	case DF_ABSOLUTE: /* g = slots + 1: slot j of group i goes to group j (skipping i) */
		for (unsigned G = 0; G < g; G++)
			for (unsigned H = G + 1; H < g; H++)
				out[k++] = (struct glink){G, H - 1, H, G};
		break;
	case DF_RELATIVE: /* slot j of group i goes to group i + j + 1 */
		for (unsigned G = 0; G < g; G++)
			for (unsigned j = 0; j < slots; j++) {
				unsigned H = (G + j + 1) % g;

				if (G < H)
					out[k++] = (struct glink){G, j, H, g - 2 - j};
			}
		break;
	case DF_CIRCULANT: /* slot 2m to group i + m + 1, slot 2m + 1 to group i - m - 1 */
		for (unsigned G = 0; G < g; G++)
			for (unsigned m = 0; 2 * m + 1 < slots; m++) {
				unsigned H = (G + m + 1) % g;

				out[k++] = (struct glink){G, 2 * m, H, 2 * m + 1};
			}
		break;
	case DF_RANDOM: {
		/* one link per pair in random order, then random matching of the ports left */
		unsigned npairs = g * (g - 1) / 2, *order = malloc(npairs * sizeof(*order));

		for (unsigned i = 0; i < npairs; i++)
			order[i] = i;
		for (unsigned i = npairs; i > 1; i--) {
			unsigned j = rnd(seed) % i, t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (unsigned i = 0; i < npairs; i++) {
			unsigned x = order[i], G = 0;

			while (x >= g - 1 - G)
				x -= g - 1 - G, G++;
			if (used[G] < slots && used[G + 1 + x] < slots)
				out[k++] =
					(struct glink){G, used[G]++, G + 1 + x, used[G + 1 + x]++};
		}
		for (unsigned tries = 0; tries < 10000; tries++) {
			unsigned G = rnd(seed) % g, H = rnd(seed) % g;

			if (G != H && used[G] < slots && used[H] < slots)
				out[k++] = (struct glink){G, used[G]++, H, used[H]++};
		}
		free(order);
		break;
	}
	}
	free(used);
	return k;
}

int df_build_wired(struct df *d, unsigned a, unsigned p, unsigned h, unsigned g, enum df_wiring w,
		   unsigned seed, int shuffle)
{
	unsigned nports = 1 + p + (a - 1) + h, lid = 1, n = a * g, k;
	unsigned *perm = malloc((size_t)n * nports * sizeof(*perm));
	struct glink *gl = malloc((size_t)g * a * h * sizeof(*gl) + sizeof(*gl));

	d->a = a, d->p = p, d->h = h, d->g = g;
	if (!perm || !gl || dla_fabric_init(&d->f, n, 0xbfff))
		return -1;
	d->group = calloc(n, sizeof(*d->group));
	/* perm[s][logical port] = physical port */
	for (unsigned s = 0; s < n; s++) {
		unsigned *ps = perm + (size_t)s * nports;

		for (unsigned q = 0; q < nports; q++)
			ps[q] = q;
		for (unsigned q = nports - 1; shuffle && q > 1; q--) {
			unsigned j = 1 + rnd(&seed) % q, t = ps[q];

			ps[q] = ps[j];
			ps[j] = t;
		}
	}
#define PORT(s, q) ((uint8_t)perm[(size_t)(s)*nports + (q)])
	for (unsigned G = 0; G < g; G++)
		for (unsigned i = 0; i < a; i++) {
			unsigned s = df_sw(d, G, i);

			snprintf(names[s % 4096], sizeof(names[0]), "sw-g%u-s%u", G, i);
			dla_fabric_set_switch(&d->f, s, 0x1000 + s, names[s % 4096],
					      (uint16_t)lid++, (uint8_t)nports);
			d->group[s] = G;
			for (unsigned j = 0; j < p; j++)
				dla_fabric_attach_endport(&d->f, s, PORT(s, 1 + j),
							  (uint16_t)lid++);
		}
	for (unsigned G = 0; G < g; G++)
		for (unsigned i = 0; i < a; i++)
			for (unsigned j = i + 1; j < a; j++)
				dla_fabric_link(&d->f, df_sw(d, G, i), PORT(df_sw(d, G, i), p + j),
						df_sw(d, G, j), PORT(df_sw(d, G, j), p + 1 + i));
	k = deal(a, h, g, w, &seed, gl);
	for (unsigned i = 0; i < k; i++) {
		unsigned s = df_sw(d, gl[i].G, gl[i].n % a), t = df_sw(d, gl[i].H, gl[i].m % a);

		dla_fabric_link(&d->f, s, PORT(s, p + a + gl[i].n / a), t,
				PORT(t, p + a + gl[i].m / a));
	}
#undef PORT
	d->f.max_lid = (uint16_t)(lid - 1);
	free(perm);
	free(gl);
	return 0;
}
