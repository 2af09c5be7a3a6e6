/*
 * One routing pass of dla, OpenSM-free: groups, routes and VL levels. The engine and the unit
 * tests run exactly this.
 */
#ifndef IBQOS_DLA_COMPUTE_H
#define IBQOS_DLA_COMPUTE_H

#include "dla_vl.h"

#define DLA_MAX_ALTERNATIVES 8 /* degraded partitions tried when one needs too many VLs */

struct dla_result {
	struct dla_groups groups;
	struct dla_routes routes;
	struct dla_vl vl;
	enum dla_groups_source source;
	unsigned alternative; /* which degraded partition was routed (0: the first found) */
};

/*
 * pinned, stored: see dla_groups_choose. known: the previous sweep's destination numbering
 * (dla_routes_build; NULL: none). budget: VLs per class. 0 with out filled; -EINVAL
 * with err naming the rule (and the switch, group pair or turn) that stops dla; -ENOMEM.
 * note: as dla_groups_choose, of the partition routed, or on a refusal of the one err names
 * (the first). out is empty on error.
 */
int dla_compute(const struct dla_fabric *f, const uint32_t *pinned, const uint32_t *stored,
		const struct dla_numbering *known, unsigned budget, struct dla_result *out,
		char *note, size_t note_len, char *err, size_t len);
void dla_result_free(struct dla_result *r);

#endif
