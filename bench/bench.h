/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.h — the clocks, the sort order and the shared option parsers of the
 * benchmark programs here (header-only: each bench/NAME.c and bench/NAME.cu
 * is its own program).
 */
#ifndef CHIRP_BENCH_H
#define CHIRP_BENCH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "chirp/pc.h"

/* CLOCK_MONOTONIC, seconds. */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process (all its threads), seconds. */
static inline double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort order for doubles, ascending. */
static inline int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * --block-kib V of PROG: chirpd's [processing] cpu_block_kib, a whole number
 * 1..PC_MAX_BLOCK_KIB. 0 with *kib set, or -EINVAL after the message.
 */
static inline int bench_parse_block_kib(const char *prog, const char *v, unsigned *kib)
{
	char *end;
	unsigned long long k;

	errno = 0;
	k = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || k < 1 || k > PC_MAX_BLOCK_KIB) {
		fprintf(stderr, "%s: --block-kib '%s': want 1..%u\n", prog, v, PC_MAX_BLOCK_KIB);
		return -EINVAL;
	}
	*kib = (unsigned)k;
	return 0;
}

#endif /* CHIRP_BENCH_H */
