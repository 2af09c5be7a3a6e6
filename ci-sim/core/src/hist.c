#include <errno.h>
#include <stdlib.h>

#include "hist.h"

int hist_init(struct hist *h)
{
	h->count = h->max = 0;
	h->sum = 0;
	h->bucket = calloc(HIST_BUCKETS, sizeof(*h->bucket));
	return h->bucket ? 0 : -ENOMEM;
}

void hist_free(struct hist *h)
{
	free(h->bucket);
	h->bucket = NULL;
}

static uint32_t bucket_of(uint64_t v)
{
	const uint32_t sub = 1u << HIST_SUB_BITS;

	if (v < sub)
		return (uint32_t)v;
	int e = 63 - __builtin_clzll(v);
	if (e > 50)
		return HIST_BUCKETS - 1;
	return (uint32_t)(e - HIST_SUB_BITS + 1) * sub +
		(uint32_t)((v >> (e - HIST_SUB_BITS)) & (sub - 1));
}

/* midpoint of the values that fall in bucket b */
static uint64_t bucket_value(uint32_t b)
{
	const uint32_t sub = 1u << HIST_SUB_BITS;

	if (b < sub)
		return b;
	int e = (int)(b / sub) + HIST_SUB_BITS - 1;
	uint64_t lo = ((uint64_t)(sub + b % sub)) << (e - HIST_SUB_BITS);
	return lo + (1ull << (e - HIST_SUB_BITS)) / 2;
}

void hist_add(struct hist *h, uint64_t v)
{
	h->count++;
	h->sum += (double)v;
	if (v > h->max)
		h->max = v;
	h->bucket[bucket_of(v)]++;
}

static uint64_t quantile(const struct hist *h, double q, uint64_t hi)
{
	uint64_t rank = (uint64_t)(q * (double)h->count), seen = 0;

	if (rank >= h->count)
		rank = h->count - 1;
	for (uint32_t b = 0; b < HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen > rank) {
			uint64_t v = bucket_value(b);
			return v > hi ? hi : v;
		}
	}
	return hi;
}

void hist_summary(const struct hist *h, struct ibs_latency *out)
{
	out->count = h->count;
	out->mean_ps = h->count ? h->sum / (double)h->count : 0;
	out->max_ps = h->max;
	out->p50_ps = h->count ? quantile(h, 0.50, h->max) : 0;
	out->p99_ps = h->count ? quantile(h, 0.99, h->max) : 0;
}
