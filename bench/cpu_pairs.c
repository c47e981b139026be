/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_pairs.c — which of this machine's CPUs share a physical core, as the
 * work sees it? (a program that prints a table; not a test)
 *
 *   cpu_pairs [--cpus LIST] [--ms MS] [--passes N]
 *
 * A guest's topology (lscpu, thread_siblings_list) says what the hypervisor
 * chose to show, not where its vCPUs run. This measures it: a compute loop
 * (independent vector multiply-adds on an L1-resident array, the kind of
 * work an FFT keeps a core busy with) runs pinned to CPU i alone, pinned to
 * CPU j alone, then on both at once, for every pair of LIST (default: every
 * CPU this process may use). Printed per pair: each side's rate beside the
 * other / its rate alone just before (the solo runs sit next to the pair
 * run, since a vCPU's own speed may drift over the pass). Two vCPUs on one core's hyperthreads
 * run at ~0.5-0.7 of their solo rate together; on separate cores ~1.0. The
 * last lines name the pairs below 0.85 ("share a core") and, with
 * --passes 2 or more, whether the same pairs showed in every pass: a host
 * that moves its vCPUs between cores shows different pairs each pass, and
 * the CPU backend's speed then changes with where the host put them.
 * Last, per CPU, the spread of its solo rates over the pass (max / min):
 * how much one vCPU's speed at a fixed job changed with nothing else of
 * this guest running.
 *
 * Each measurement lasts MS milliseconds (default 100) after the threads
 * have started; 16 CPUs take 3 x 120 measurements per pass (~45 s at the
 * default). Run it with nothing else busy.
 */
#include <errno.h>
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

#define MAX_CPUS 256
#define ARR 1024                /* floats: 4 KiB per thread, in L1 */

struct spinner {
	pthread_t th;
	int cpu;
	atomic_int go;          /* 1: count, 2: leave */
	atomic_int ready;
	_Atomic uint64_t iters;
	int err;
	float a[ARR] __attribute__((aligned(64)));
};

static void *spin_main(void *arg)
{
	struct spinner *s = arg;
	cpu_set_t set;
	uint64_t n = 0;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	s->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	for (int k = 0; k < ARR; k++)
		s->a[k] = 1.0f + (float)k * 1e-6f;
	atomic_store(&s->ready, 1);
	while (atomic_load_explicit(&s->go, memory_order_acquire) == 0)
		;
	while (atomic_load_explicit(&s->go, memory_order_relaxed) == 1) {
		/* 8 independent chains per element group: FMA-bound, no memory. */
		for (int k = 0; k < ARR; k++)
			s->a[k] = s->a[k] * 0.999999f + 1e-7f;
		n++;
		if ((n & 15) == 0)
			atomic_store_explicit(&s->iters, n, memory_order_relaxed);
	}
	atomic_store(&s->iters, n);
	return NULL;
}

/* Run the loop on cpus[0..k-1] at once for ms; rates (iterations/s) out. */
static int measure(const int *cpus, int k, int ms, double *rate)
{
	struct spinner *s[2];
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
	double t0, t1;
	uint64_t i0[2];

	for (int i = 0; i < k; i++) {
		s[i] = aligned_alloc(64, sizeof(*s[i]));
		if (!s[i])
			return -ENOMEM;
		memset(s[i], 0, sizeof(*s[i]));
		s[i]->cpu = cpus[i];
		if (pthread_create(&s[i]->th, NULL, spin_main, s[i]) != 0)
			return -EAGAIN;
	}
	for (int i = 0; i < k; i++)
		while (!atomic_load(&s[i]->ready))
			sched_yield();
	for (int i = 0; i < k; i++)
		atomic_store_explicit(&s[i]->go, 1, memory_order_release);
	/* 20 ms to settle, then count. */
	nanosleep(&(struct timespec){ 0, 20000000L }, NULL);
	t0 = now_s();
	for (int i = 0; i < k; i++)
		i0[i] = atomic_load(&s[i]->iters);
	nanosleep(&d, NULL);
	t1 = now_s();
	for (int i = 0; i < k; i++)
		rate[i] = (double)(atomic_load(&s[i]->iters) - i0[i]) / (t1 - t0);
	for (int i = 0; i < k; i++)
		atomic_store(&s[i]->go, 2);
	for (int i = 0; i < k; i++) {
		int err;

		pthread_join(s[i]->th, NULL);
		err = s[i]->err;
		free(s[i]);
		if (err)
			return -err;
	}
	return 0;
}

static double solo_min[MAX_CPUS], solo_max[MAX_CPUS];

static void note_solo(int i, double r)
{
	if (r < solo_min[i])
		solo_min[i] = r;
	if (r > solo_max[i])
		solo_max[i] = r;
}

int main(int argc, char **argv)
{
	int cpus[MAX_CPUS], n = 0, ms = 100, passes = 1;
	static double ratio[8][MAX_CPUS][MAX_CPUS];
	int shared_all = 0, shared_some = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			printf("usage: cpu_pairs [--cpus LIST] [--ms MS] [--passes N]\n");
			return 0;
		}
		if (!v) {
			fprintf(stderr, "cpu_pairs: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--cpus")) {
			cpu_set_t set;
			char perr[128];

			n = 0;
			if (sysnuma_parse_cpus(v, &set, perr, sizeof(perr)) == 0)
				for (int c = 0; c < CPU_SETSIZE && n < MAX_CPUS; c++)
					if (CPU_ISSET(c, &set))
						cpus[n++] = c;
			if (n < 2) {
				fprintf(stderr, "cpu_pairs: --cpus %s: want a list of 2 or more CPUs (0-7,9)\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--ms"))
			ms = atoi(v);
		else if (!strcmp(a, "--passes"))
			passes = atoi(v);
		else {
			fprintf(stderr, "cpu_pairs: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	if (ms < 10 || ms > 10000 || passes < 1 || passes > 8) {
		fprintf(stderr, "cpu_pairs: ms 10..10000, passes 1..8\n");
		return 2;
	}
	if (n == 0) {
		cpu_set_t set;

		if (sched_getaffinity(0, sizeof(set), &set) != 0) {
			perror("cpu_pairs: sched_getaffinity");
			return 1;
		}
		for (int c = 0; c < CPU_SETSIZE && n < MAX_CPUS; c++)
			if (CPU_ISSET(c, &set))
				cpus[n++] = c;
		if (n < 2) {
			fprintf(stderr, "cpu_pairs: this process may use %d CPU; nothing to pair\n", n);
			return 2;
		}
	}

	for (int p = 0; p < passes; p++) {
		for (int i = 0; i < n; i++) {
			solo_min[i] = 1e300;
			solo_max[i] = 0;
		}
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++) {
				int pair[2] = { cpus[i], cpus[j] };
				double si, sj, r[2];
				int rc = measure(&cpus[i], 1, ms, &si);

				if (!rc)
					rc = measure(&cpus[j], 1, ms, &sj);
				if (!rc)
					rc = measure(pair, 2, ms, r);
				if (rc) {
					fprintf(stderr, "cpu_pairs: cpus %d,%d: %s\n", cpus[i], cpus[j],
						strerror(-rc));
					return 1;
				}
				ratio[p][i][j] = r[0] / si;
				ratio[p][j][i] = r[1] / sj;
				note_solo(i, si);
				note_solo(j, sj);
			}
		printf("pass %d: rate beside the column's CPU / alone (row's CPU)\n     ", p + 1);
		for (int j = 0; j < n; j++)
			printf(" %4d", cpus[j]);
		printf("\n");
		for (int i = 0; i < n; i++) {
			printf("%4d ", cpus[i]);
			for (int j = 0; j < n; j++)
				if (i == j)
					printf("    -");
				else
					printf(" %4.2f", ratio[p][i][j]);
			printf("\n");
		}
		printf("pass %d: pairs below 0.85 (share a core):", p + 1);
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++) {
				double m = ratio[p][i][j] < ratio[p][j][i] ? ratio[p][i][j] : ratio[p][j][i];

				if (m < 0.85)
					printf(" %d+%d(%.2f)", cpus[i], cpus[j], m);
			}
		printf("\npass %d: solo rate per CPU over the pass, Mloops/s min-max (max/min):", p + 1);
		for (int i = 0; i < n; i++)
			printf(" %d:%.2f-%.2f(%.2f)", cpus[i], solo_min[i] * 1e-6, solo_max[i] * 1e-6,
			       solo_max[i] / solo_min[i]);
		printf("\n");
		fflush(stdout);
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			int k = 0;

			for (int p = 0; p < passes; p++)
				k += (ratio[p][i][j] < 0.85 || ratio[p][j][i] < 0.85);
			shared_all += k == passes;
			shared_some += k > 0 && k < passes;
		}
	printf("cpu_pairs: %d CPUs, %d passes of %d ms: %d pairs below 0.85 in every pass, "
	       "%d in some passes only\n", n, passes, ms, shared_all, shared_some);
	return 0;
}
