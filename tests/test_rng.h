/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rng.h — the beam tests' random numbers, the same sequence on every
 * run and host (xorshift64*, independent of libc's rand), and their
 * checked allocation. A test defines TEST_RNG_SEED (its own sequence)
 * and includes this after <complex.h>, <math.h> and <cmocka.h>.
 */
#ifndef CHIRP_TEST_RNG_H
#define CHIRP_TEST_RNG_H

#include <stdint.h>
#include <stdlib.h>

#ifndef TEST_RNG_SEED
#error "define TEST_RNG_SEED before including test_rng.h"
#endif

static uint64_t rng_state = TEST_RNG_SEED;

/* Uniform in [0, 1). */
static inline double urand(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return ((rng_state * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
}

/* Circular complex Gaussian of power p (Box-Muller). */
static inline double complex cgauss(double p)
{
	double u1 = urand(), u2 = urand(), r = sqrt(-p * log(u1 > 0 ? u1 : 1e-300));

	return r * cos(2 * M_PI * u2) + I * r * sin(2 * M_PI * u2);
}

/* calloc, the test failing when it cannot. */
static inline void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	assert_non_null(p);
	return p;
}

#endif /* CHIRP_TEST_RNG_H */
