/* Per-flow random streams: xoshiro256** seeded through splitmix64 (Blackman & Vigna).
 * Each flow owns its stream, so results do not depend on the order events interleave. */
#ifndef IBS_RNG_H
#define IBS_RNG_H

#include <math.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return out;
}

/* uniform in [0, n); the modulo bias is below 2^-32 for any n < 2^32 */
static inline uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(rng_next(r) % n);
}

/* uniform in (0, 1] */
static inline double rng_unit(struct rng *r)
{
	return ((rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

static inline double rng_exp(struct rng *r, double mean)
{
	return -log(rng_unit(r)) * mean;
}

#endif
