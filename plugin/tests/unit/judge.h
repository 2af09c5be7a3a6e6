/*
 * An independent judge of what dla would program: it walks every (source switch, LID) route
 * through the LFTs, takes each hop's VL from the SL2VL the turn table gives, and checks
 * delivery, hop counts and that the channel dependency graph over (link, VL) is acyclic.
 * It shares nothing with dla_vl.c's reasoning, only its output.
 */
#ifndef IBQOS_JUDGE_H
#define IBQOS_JUDGE_H

#include "dla_compute.h"

struct verdict {
	unsigned routes, delivered, looped;
	unsigned max_hops, max_globals, max_locals_after_global;
	unsigned vls_mask; /* VLs used by class 0 */
	int cyclic;
	unsigned hop_hist[16];
};

void judge(const struct dla_fabric *f, const struct dla_groups *g, const struct dla_routes *r,
	   const struct dla_vl *v, unsigned stride, struct verdict *out);

/* One dla routing pass (dla_compute, stored map, stride VLs per class), judged. With keep, a
 * routed result stays in *keep for the caller to read and free. */
struct outcome {
	int ret;
	enum dla_groups_source src;
	unsigned levels;
	struct verdict v;
	char err[768];
};

void judged_compute(const struct dla_fabric *f, const uint32_t *stored, unsigned stride,
		    struct outcome *o, struct dla_result *keep);

#endif
