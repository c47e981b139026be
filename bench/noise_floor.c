/* SPDX-License-Identifier: Apache-2.0 */
/*
 * noise_floor.c — the host's own latency noise on a set of CPUs: what a
 * fixed job suffers from the machine alone (interrupts, other tasks, SMIs,
 * frequency changes, hypervisor steal), for scripts/bench-latency.sh.
 *
 *   noise_floor [--cpus LIST] [--block-us 250] [--samples 20000]
 *               [--sleeps 2000] [--sleep-us 1000]
 *
 * LIST is like "2-5,8" (default: every CPU this process may run on); the
 * thread is pinned to that set (sched_setaffinity), as chirpd's data thread
 * is pinned to its [numa] cpus, and the scheduler picks a CPU in it.
 *
 *  1. Compute block: a fixed chain of dependent integer and floating-point
 *     operations (no memory traffic, no system calls) calibrated so that
 *     its median duration is about --block-us (250 µs), then timed
 *     --samples times back to back with CLOCK_MONOTONIC. Reported: the raw
 *     p50/p99/p99.9/max and the *excess* p99 − p50, p99.9 − p50, max − p50:
 *     the extra time a job of fixed work suffers on this host. That excess
 *     is what scripts/bench-latency.sh calls the host noise at p99/p99.9.
 *  2. Sleep lateness: --sleeps absolute sleeps (clock_nanosleep
 *     TIMER_ABSTIME) of --sleep-us each on a fixed schedule; lateness = wake
 *     time − due time: p50/p99/p99.9/max (the timer and wake-up path; a
 *     paced producer and a sleeping consumer pay it).
 *
 * Output (stdout), two lines, key=value, microseconds:
 *   noise cpus=LIST block_us=… n=… p50_us=… p99_us=… p999_us=… max_us=…
 *         ex_p99_us=… ex_p999_us=… ex_max_us=…
 *   sleep period_us=… n=… p50_us=… p99_us=… p999_us=… max_us=…
 * Percentiles are nearest-rank. Exit 0, 1 on error, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static volatile uint64_t sink;   /* keeps the block from being optimised away */

/* The fixed job: iters rounds of a dependent xorshift + multiply-add chain. */
static __attribute__((noinline)) void block(uint64_t iters)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	double y = 1.0;

	for (uint64_t i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		y = y * 0.999999 + (double)(x & 0xff) * 1e-9;
	}
	sink = x + (uint64_t)y;
}

static double pct(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);

	i = i < 1 ? 0 : i - 1;
	return v[i < n ? i : n - 1];
}

/* "2-5,8" into set; 0, or -1 with a message. */
static int parse_cpus(const char *s, cpu_set_t *set)
{
	const char *p = s;

	CPU_ZERO(set);
	while (*p) {
		char *e;
		long a = strtol(p, &e, 10), b;

		if (e == p || a < 0 || a >= CPU_SETSIZE)
			goto bad;
		b = a;
		if (*e == '-') {
			p = e + 1;
			b = strtol(p, &e, 10);
			if (e == p || b < a || b >= CPU_SETSIZE)
				goto bad;
		}
		for (long c = a; c <= b; c++)
			CPU_SET((int)c, set);
		if (*e == ',')
			e++;
		else if (*e)
			goto bad;
		p = e;
	}
	if (CPU_COUNT(set) > 0)
		return 0;
bad:
	fprintf(stderr, "noise_floor: --cpus '%s': want a list like 2-5,8\n", s);
	return -1;
}

/* The set back as a list, for the output line. */
static void format_cpus(const cpu_set_t *set, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE && o + 16 < len; c++) {
		int e = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		o += (size_t)snprintf(buf + o, len - o, e > c ? "%s%d-%d" : "%s%d", o ? "," : "", c, e);
		c = e;
	}
}

static int parse_pos(const char *s, double *v)
{
	char *e;

	errno = 0;
	*v = strtod(s, &e);
	return errno || e == s || *e || !(*v > 0) || !isfinite(*v) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cpus", required_argument, NULL, 'c' }, { "block-us", required_argument, NULL, 'b' },
		{ "samples", required_argument, NULL, 'n' }, { "sleeps", required_argument, NULL, 's' },
		{ "sleep-us", required_argument, NULL, 'u' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double block_us = 250, nsamp = 20000, nsleep = 2000, sleep_us = 1000, v;
	cpu_set_t set;
	char list[512];
	double *t = NULL, *w = NULL, med, per;
	uint64_t iters = 1000;
	size_t n, ns;
	int c, rc = 1;

	if (sched_getaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "noise_floor: sched_getaffinity: %s\n", strerror(errno));
		return 1;
	}
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': if (parse_cpus(optarg, &set) < 0) return 2; break;
		case 'b': if (parse_pos(optarg, &block_us)) goto usage; break;
		case 'n': if (parse_pos(optarg, &nsamp) || nsamp < 100) goto usage; break;
		case 's': if (parse_pos(optarg, &v) || v < 10) goto usage; nsleep = v; break;
		case 'u': if (parse_pos(optarg, &sleep_us)) goto usage; break;
		case 'h':
		default:
usage:
			fprintf(c == 'h' ? stdout : stderr, "usage: noise_floor [--cpus LIST] "
				"[--block-us 250] [--samples 20000] [--sleeps 2000] [--sleep-us 1000]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "noise_floor: sched_setaffinity: %s\n", strerror(errno));
		return 1;
	}
	format_cpus(&set, list, sizeof(list));
	n = (size_t)nsamp;
	ns = (size_t)nsleep;
	t = calloc(n, sizeof(*t));
	w = calloc(ns, sizeof(*w));
	if (!t || !w) {
		fprintf(stderr, "noise_floor: out of memory\n");
		goto out;
	}

	/* Calibrate: median of 51 runs, scaled, three rounds (the first at a
	 * guess, the next two correct for the guess's error and the clock). */
	for (int round = 0; round < 3; round++) {
		double d[51];

		for (int i = 0; i < 51; i++) {
			double a = now_s();

			block(iters);
			d[i] = now_s() - a;
		}
		qsort(d, 51, sizeof(d[0]), cmp_d);
		iters = (uint64_t)fmax(1000.0, (double)iters * (block_us * 1e-6) / fmax(d[25], 1e-9));
	}

	/* 1. the compute block */
	for (size_t i = 0; i < n; i++) {
		double a = now_s();

		block(iters);
		t[i] = (now_s() - a) * 1e6;
	}
	qsort(t, n, sizeof(*t), cmp_d);
	med = pct(t, n, 0.5);
	printf("noise cpus=%s block_us=%.1f n=%zu p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f"
	       " ex_p99_us=%.1f ex_p999_us=%.1f ex_max_us=%.1f\n", list, block_us, n, med,
	       pct(t, n, 0.99), pct(t, n, 0.999), t[n - 1], pct(t, n, 0.99) - med,
	       pct(t, n, 0.999) - med, t[n - 1] - med);

	/* 2. absolute sleeps on a fixed schedule */
	{
		struct timespec ts;
		uint64_t due, start, now;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		start = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		per = sleep_us * 1e3;
		for (size_t i = 0; i < ns; i++) {
			int r;

			due = start + (uint64_t)((double)(i + 1) * per);
			ts.tv_sec = (time_t)(due / 1000000000ull);
			ts.tv_nsec = (long)(due % 1000000000ull);
			do
				r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			while (r == EINTR);
			if (r) {
				fprintf(stderr, "noise_floor: clock_nanosleep: %s\n", strerror(r));
				goto out;
			}
			clock_gettime(CLOCK_MONOTONIC, &ts);
			now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			w[i] = now > due ? (double)(now - due) / 1e3 : 0;
			if (now > due + (uint64_t)per)   /* overslept a whole period: re-base, no burst */
				start = now - (uint64_t)((double)(i + 1) * per);
		}
		qsort(w, ns, sizeof(*w), cmp_d);
		printf("sleep period_us=%.1f n=%zu p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f\n",
		       sleep_us, ns, pct(w, ns, 0.5), pct(w, ns, 0.99), pct(w, ns, 0.999), w[ns - 1]);
	}
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	free(t);
	free(w);
	return rc;
}
