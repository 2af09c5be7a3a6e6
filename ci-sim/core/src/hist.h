/* Latency histogram: log-linear buckets (64 per power of two, <1.6% error), exact mean/max. */
#ifndef IBS_HIST_H
#define IBS_HIST_H

#include <stdint.h>

#include "ibqos_sim.h"

#define HIST_SUB_BITS 6
#define HIST_BUCKETS ((50 - HIST_SUB_BITS + 1) * (1 << HIST_SUB_BITS))

struct hist {
	uint64_t count, max;
	double sum;
	uint32_t *bucket; /* HIST_BUCKETS counters */
};

int hist_init(struct hist *h);
void hist_free(struct hist *h);
void hist_add(struct hist *h, uint64_t v);
void hist_summary(const struct hist *h, struct ibs_latency *out);

#endif
