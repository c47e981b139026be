/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.h — the clocks and the sort order every benchmark program here
 * uses (header-only: each bench/NAME.c and bench/NAME.cu is its own program).
 */
#ifndef CHIRP_BENCH_H
#define CHIRP_BENCH_H

#include <time.h>

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

#endif /* CHIRP_BENCH_H */
