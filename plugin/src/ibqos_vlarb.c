#include "ibqos_vlarb.h"

#include <errno.h>
#include <stdio.h>

void ibqos_vlarb_block(const struct ibqos_vlarb_spec *spec, unsigned block_num, unsigned block_len,
		       uint8_t vl[], uint8_t weight[])
{
	const struct ibqos_vlarb_table *tab = block_num >= 2 ? &spec->high : &spec->low;
	unsigned base = (block_num % 2) * IBQOS_VLARB_BLOCK;

	for (unsigned i = 0; i < block_len && i < IBQOS_VLARB_BLOCK; i++) {
		unsigned k = base + i;

		vl[i] = k < tab->n ? tab->vl[k] : 0;
		weight[i] = k < tab->n ? tab->weight[k] : 0;
	}
}

int ibqos_vlarb_check_caps(const struct ibqos_tables *t, const struct ibqos_vlarb_spec *spec,
			   const char *what, const char *port_label, unsigned high_cap,
			   unsigned low_cap, char *err, size_t len)
{
	const char *path = t->path ? t->path : "(tables)";

	if (spec->high.n > high_cap) {
		snprintf(err, len,
			 "%s:%u: vlarb %s: high table has %u entries but port %s holds "
			 "%u (VLArbitrationHighCap)",
			 path, spec->line, what, spec->high.n, port_label, high_cap);
		return -EINVAL;
	}
	if (spec->low.n > low_cap) {
		snprintf(err, len,
			 "%s:%u: vlarb %s: low table has %u entries but port %s holds "
			 "%u (VLArbitrationLowCap)",
			 path, spec->line, what, spec->low.n, port_label, low_cap);
		return -EINVAL;
	}
	return 0;
}
