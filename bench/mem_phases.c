/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mem_phases.c — does this host's memory bandwidth change in steps of
 * seconds? (a program that prints a series; not a test)
 *
 *   mem_phases [--threads T] [--mib M] [--seconds S] [--pin LIST]
 *
 * T threads (default 8, the CPU backend's default cpu_threads) each copy
 * their own M MiB (default 16: with T = 8, 128 MiB read and 128 MiB written
 * per round, far beyond any last-level cache) from one buffer to another
 * with memcpy, over and over, for S seconds (default 20). Printed: the
 * bytes moved (read + written) per second by all threads together, each
 * second, oldest first, then the minimum, median and maximum of those.
 *
 * Why: a multi-threaded CPU backend (bench_pc_tail --series, CPIs coming
 * from memory) can run at two speeds some 15-20 % apart for seconds at a
 * time on a shared host, while one thread holds steady and a
 * single-threaded compute block sees no such thing. The backend streams
 * memory; if this plain copy steps too, the steps are the host's memory
 * bandwidth, not chirpd's code.
 * --pin LIST puts thread t on the (t mod n)-th CPU of LIST alone (0-7,9):
 * whether the steps follow where the scheduler puts the threads (two on
 * one core's hyperthreads: bench/cpu_pairs) or come with any placement.
 * Run it with nothing else busy.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "sysnuma.h"

#define MAX_SECONDS 600

struct worker {
	pthread_t th;
	int cpu;                   /* -1: not pinned */
	char *src, *dst;
	size_t bytes;
	_Atomic uint64_t rounds;   /* copies of bytes finished */
};

static atomic_int stop;

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	if (w->cpu >= 0) {
		cpu_set_t one;
		int rc;

		CPU_ZERO(&one);
		CPU_SET(w->cpu, &one);
		rc = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
		if (rc != 0) {
			fprintf(stderr, "mem_phases: cannot pin a thread to cpu %d: %s\n", w->cpu,
				strerror(rc));
			exit(1);
		}
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		memcpy(w->dst, w->src, w->bytes);
		atomic_fetch_add_explicit(&w->rounds, 1, memory_order_relaxed);
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int threads = 8, seconds = 20, pin[CPU_SETSIZE], npin = 0;
	const char *pin_arg = NULL;
	size_t mib = 16;
	double gbs[MAX_SECONDS], sorted[MAX_SECONDS];
	struct worker *w;
	uint64_t prev = 0, t_prev;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			printf("usage: mem_phases [--threads T] [--mib M] [--seconds S] [--pin LIST]\n");
			return 0;
		}
		if (!v) {
			fprintf(stderr, "mem_phases: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--threads"))
			threads = atoi(v);
		else if (!strcmp(a, "--mib"))
			mib = (size_t)atol(v);
		else if (!strcmp(a, "--seconds"))
			seconds = atoi(v);
		else if (!strcmp(a, "--pin")) {
			cpu_set_t set;
			char perr[128];

			pin_arg = v;
			if (sysnuma_parse_cpus(v, &set, perr, sizeof(perr)) == 0)
				for (int c = 0; c < CPU_SETSIZE; c++)
					if (CPU_ISSET(c, &set))
						pin[npin++] = c;
			if (npin == 0) {
				fprintf(stderr, "mem_phases: --pin %s: want a cpu list (0-7,9)\n", v);
				return 2;
			}
		}
		else {
			fprintf(stderr, "mem_phases: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	if (threads < 1 || threads > 256 || mib < 1 || mib > 4096 || seconds < 1 ||
	    seconds > MAX_SECONDS) {
		fprintf(stderr, "mem_phases: threads 1..256, mib 1..4096, seconds 1..%d\n",
			MAX_SECONDS);
		return 2;
	}
	w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 1;
	for (int t = 0; t < threads; t++) {
		w[t].bytes = mib << 20;
		w[t].cpu = npin ? pin[t % npin] : -1;
		w[t].src = malloc(w[t].bytes);
		w[t].dst = malloc(w[t].bytes);
		if (!w[t].src || !w[t].dst) {
			fprintf(stderr, "mem_phases: out of memory for %d x 2 x %zu MiB\n", threads, mib);
			return 1;
		}
		memset(w[t].src, t + 1, w[t].bytes);   /* fault the pages in */
		memset(w[t].dst, 0, w[t].bytes);
	}
	for (int t = 0; t < threads; t++)
		if (pthread_create(&w[t].th, NULL, worker_main, &w[t]) != 0) {
			fprintf(stderr, "mem_phases: pthread_create failed\n");
			return 1;
		}
	t_prev = now_ns();
	for (int s = 0; s < seconds; s++) {
		struct timespec one = { 1, 0 };
		uint64_t total = 0, t_now;

		nanosleep(&one, NULL);
		t_now = now_ns();
		for (int t = 0; t < threads; t++)
			total += atomic_load_explicit(&w[t].rounds, memory_order_relaxed) * 2 * w[t].bytes;
		gbs[s] = (double)(total - prev) / (double)(t_now - t_prev);   /* bytes/ns = GB/s */
		prev = total;
		t_prev = t_now;
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < threads; t++)
		pthread_join(w[t].th, NULL);

	printf("mem_phases: %d threads, %zu MiB each (copied with memcpy), %d s, %s%s\n", threads,
	       mib, seconds, pin_arg ? "pinned to " : "not pinned", pin_arg ? pin_arg : "");
	printf("series GB/s (read + written) of each second:");
	for (int s = 0; s < seconds; s++)
		printf(" %.2f", gbs[s]);
	printf("\n");
	memcpy(sorted, gbs, (size_t)seconds * sizeof(double));
	qsort(sorted, (size_t)seconds, sizeof(double), cmp_d);
	printf("min %.2f median %.2f max %.2f GB/s; max/min %.2f\n", sorted[0],
	       sorted[seconds / 2], sorted[seconds - 1], sorted[seconds - 1] / sorted[0]);
	for (int t = 0; t < threads; t++) {
		free(w[t].src);
		free(w[t].dst);
	}
	free(w);
	return 0;
}
