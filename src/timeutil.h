/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timeutil.h — the clocks and the polling pause, written once for the
 * daemon, the ring library and the tools. Header-only: every call is a vDSO
 * clock read or one instruction, inlined where it is polled.
 */
#ifndef CHIRP_TIMEUTIL_H
#define CHIRP_TIMEUTIL_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds (deadlines and rates in the tools). */
static inline double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CLOCK_REALTIME in ns (the clock ring timestamps are written in). */
static inline uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A pause inside a polling loop: yields the core's pipeline to a sibling
 * hyperthread and saves power; no system call. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif /* CHIRP_TIMEUTIL_H */
