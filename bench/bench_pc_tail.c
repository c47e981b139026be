/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_pc_tail.c — the CPU backend's per-CPI time distribution with and
 * without the straggler take-over (pc_cpu.c, wait_blocks), side by side in
 * one run (a program that prints a table; not a test).
 *
 *   bench_pc_tail [--cpi CxPxR:L] [--threads T] [--seconds S] [--rounds N]
 *                 [--noise K] [--noise-duty PCT] [--rate CPI_PER_S] [--spin]
 *                 [--idle-spin-us US] [--buffers B]
 *                 [--compare takeover|pacing|blocks] [--block-kib K] [--series]
 *
 * Each round runs the same pc configuration twice, S seconds each, and
 * pools every CPI's submit-to-result time per mode; the order alternates
 * between rounds so drift in the machine's load hits both alike. The two
 * modes (--compare): takeover (default) tune.takeover on against off, at
 * --rate; pacing: back to back against paced at --rate (which then must be
 * set), the take-over as the backend chooses; blocks: the backend's own
 * block size (balanced over the threads, pc_cpu.c) against a fixed
 * tune.block_kib = K (--block-kib, default 256: the size before the
 * balancing), at --rate. --rate paces the CPIs on an
 * absolute schedule (never bursting; a late CPI restarts the schedule), as
 * a front end would; 0 runs them back to back. --spin waits for each tick
 * by polling the clock instead of sleeping (the calling thread's CPU never
 * idles). --idle-spin-us is pc_params.idle_spin_us (the workers' poll
 * between CPIs; chirpd's default is 2000, this program's 0). --buffers B
 * cycles the CPIs through B input and B output buffers, as ring slots do,
 * so that they come from memory rather than the cache (default 1).
 * --series also prints, per mode and round, the median time per CPI of
 * each second, oldest first ("-" for a second in which no CPI started):
 * whether the host's speed drifts over seconds (phases), which
 * percentiles over the whole run hide.
 * --noise K starts K threads that each spin for a random 0.2-4 ms and sleep
 * so that they are busy PCT % of the time (--noise-duty, default 50):
 * other work on the same CPUs, which is what descheduling a worker in the
 * middle of its block looks like on a shared host or a VM. Defaults:
 * 1x128x4096:512, T = online CPUs (at most 8), S = 3, N = 4, K = 0, rate 0.
 *
 * Printed per mode: CPIs, p50, p99, p99.9, max (ms), the blocks the caller
 * recomputed, and how many threads computed none of a CPI's blocks
 * (pc_done.absent: mean, and the share of CPIs with any); last, the ratios
 * of p99.9 and max.
 */
#include "bench.h"
#include "chirp/pc.h"
#include "timeutil.h"
#include "waveform.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mode_stats {
	double *t;               /* seconds per CPI, pooled over rounds */
	uint64_t *at;            /* its start, ns after its round's start */
	size_t *round_end;       /* n at the end of each round          */
	int rounds;
	size_t n, cap;
	uint64_t recomputed;
	uint64_t absent;         /* sum of pc_done.absent                */
	uint64_t with_absent;    /* CPIs with absent > 0                 */
};

static atomic_int noise_stop;
static int spin_wait;     /* --spin: wait for the next tick by polling the clock */
static int series;        /* --series: per-second medians */
static int noise_duty = 50;

/* Busy for a random 0.2-4 ms, then asleep long enough for the duty cycle. */
static void *noise_main(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;

	while (!atomic_load(&noise_stop)) {
		uint64_t busy, end;
		struct timespec ts;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		busy = 200000 + x % 3800000;
		end = mono_ns() + busy;
		while (mono_ns() < end)
			;
		busy = busy * (uint64_t)(100 - noise_duty) / (uint64_t)noise_duty;
		ts.tv_sec = (time_t)(busy / 1000000000ull);
		ts.tv_nsec = (long)(busy % 1000000000ull);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* takeover: pc_params.tune.takeover (AUTO leaves it to the backend);
 * block_kib: tune.block_kib, 0 for the backend's choice. */
static int run_mode(const struct pc_params *p0, enum pc_switch takeover, unsigned block_kib,
		    double seconds, double rate,
		    char *const *in, char *const *out, int nbuf, struct mode_stats *st)
{
	struct pc_params p = *p0;
	struct pc_done d[4];
	struct pc *pc;
	char err[256];
	uint64_t period = rate > 0 ? (uint64_t)(1e9 / rate) : 0, next, end;
	int rc = -1;

	p.tune.takeover = takeover;
	p.tune.block_kib = block_kib;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc) {
		fprintf(stderr, "bench_pc_tail: pc_create: %s\n", err);
		return -1;
	}
	for (int i = 0; i < 3; i++)   /* warm-up */
		if (pc_execute(pc, in[0], out[0], NULL) < 0)
			goto fail;
	next = mono_ns();
	end = next + (uint64_t)(seconds * 1e9);
	uint64_t start = next;
	while (mono_ns() < end && st->n < st->cap) {
		uint64_t t0;

		if (period) {
			struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };

			if (spin_wait)
				while (mono_ns() < next)
					;
			else
				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			if (mono_ns() > next + period / 2)
				next = mono_ns();   /* late: restart, never burst */
			next += period;
		}
		t0 = mono_ns();
		if (pc_submit(pc, in[st->n % (size_t)nbuf], out[st->n % (size_t)nbuf], st->n) < 0 ||
		    pc_poll(pc, d, 4, -1) != 1)
			goto fail;
		st->at[st->n] = t0 - start;
		st->t[st->n++] = (double)(mono_ns() - t0) * 1e-9;
		st->recomputed += d[0].recomputed;
		st->absent += d[0].absent;
		st->with_absent += d[0].absent > 0;
	}
	st->round_end[st->rounds++] = st->n;
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "bench_pc_tail: %s\n", pc_last_error(pc));
out:
	pc_destroy(pc);
	return rc;
}

static double pct(const double *t, size_t n, double q)
{
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);

	return t[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
	unsigned C = 1, P = 128, R = 4096;
	size_t L = 512, hl;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = ncpu > 8 ? 8 : ncpu < 1 ? 1 : (int)ncpu, rounds = 4, nnoise = 0;
	int nbuf = 1;
	enum { CMP_TAKEOVER, CMP_PACING, CMP_BLOCKS } cmp = CMP_TAKEOVER;   /* --compare */
	unsigned idle_spin_us = 0;
	char kib_label[16], block_kib[16] = "256";
	const char *label[3][2] = { { "on", "off" }, { "b2b", "paced" }, { "balanced", kib_label } };
	double seconds = 3, rate = 0, p999[2] = { 0 }, mx[2] = { 0 };
	struct mode_stats st[2] = { { 0 } };
	struct wf_params wp;
	struct pc_params p;
	pthread_t noise[64];
	float *h = NULL;
	char **in, **out;
	char err[256];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--spin")) {
			spin_wait = 1;
			continue;
		}
		if (!strcmp(a, "--series")) {
			series = 1;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			printf("usage: bench_pc_tail [--cpi CxPxR:L] [--threads T] [--seconds S] [--rounds N]\n"
			       "                     [--noise K] [--noise-duty PCT] [--rate CPI_PER_S] [--spin]\n"
			       "                     [--idle-spin-us US] [--buffers B]\n"
			       "                     [--compare takeover|pacing|blocks] [--block-kib K] [--series]\n");
			return 0;
		}
		if (!v) {
			fprintf(stderr, "bench_pc_tail: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--cpi")) {
			if (sscanf(v, "%ux%ux%u:%zu", &C, &P, &R, &L) != 4) {
				fprintf(stderr, "bench_pc_tail: --cpi wants CxPxR:L\n");
				return 2;
			}
		} else if (!strcmp(a, "--threads")) {
			threads = atoi(v);
		} else if (!strcmp(a, "--seconds")) {
			seconds = atof(v);
		} else if (!strcmp(a, "--rounds")) {
			rounds = atoi(v);
		} else if (!strcmp(a, "--noise")) {
			nnoise = atoi(v);
		} else if (!strcmp(a, "--noise-duty")) {
			noise_duty = atoi(v);
		} else if (!strcmp(a, "--rate")) {
			rate = atof(v);
		} else if (!strcmp(a, "--idle-spin-us")) {
			idle_spin_us = (unsigned)atoi(v);
		} else if (!strcmp(a, "--buffers")) {
			nbuf = atoi(v);
		} else if (!strcmp(a, "--compare")) {
			if (!strcmp(v, "pacing"))
				cmp = CMP_PACING;
			else if (!strcmp(v, "blocks"))
				cmp = CMP_BLOCKS;
			else if (strcmp(v, "takeover")) {
				fprintf(stderr, "bench_pc_tail: --compare takeover, pacing or blocks\n");
				return 2;
			}
		} else if (!strcmp(a, "--block-kib")) {
			int k = atoi(v);

			if (k < 1 || k > 65536) {
				fprintf(stderr, "bench_pc_tail: --block-kib wants 1..65536\n");
				return 2;
			}
			snprintf(block_kib, sizeof(block_kib), "%d", k);
		} else {
			fprintf(stderr, "bench_pc_tail: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	if (threads < 1 || rounds < 1 || seconds <= 0 || nnoise < 0 || nnoise > 64 ||
	    noise_duty < 1 || noise_duty > 99 || nbuf < 1 || nbuf > 4096 ||
	    idle_spin_us > PC_MAX_IDLE_SPIN_US || (cmp == CMP_PACING && rate <= 0)) {
		fprintf(stderr, "bench_pc_tail: bad option value\n");
		return 2;
	}
	wf_params_init(&wp);
	wp.type = WF_LFM;
	wp.sample_rate_hz = 100e6;
	wp.bandwidth_hz = 40e6;
	wp.pulse_width_s = (double)L / 100e6;
	wp.window = WIN_HAMMING;
	if (wf_build(&wp, R, &h, &hl, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_pc_tail: waveform: %s\n", err);
		return 1;
	}
	pc_params_init(&p);
	p.channels = C;
	p.pulses = P;
	p.samples = R;
	p.ref = h;
	p.ref_len = hl;
	p.backend = PC_BACKEND_CPU;
	p.cpu_threads = threads;
	p.idle_spin_us = idle_spin_us;
	in = calloc((size_t)nbuf, sizeof(*in));
	out = calloc((size_t)nbuf, sizeof(*out));
	if (!in || !out)
		return 1;
	for (int b = 0; b < nbuf; b++) {
		in[b] = malloc((size_t)C * P * R * 8);
		out[b] = malloc((size_t)C * P * R * 8);
		if (!in[b] || !out[b]) {
			fprintf(stderr, "bench_pc_tail: out of memory for %d buffers\n", nbuf);
			return 1;
		}
	}
	snprintf(kib_label, sizeof(kib_label), "kib%s", block_kib);
	for (int m = 0; m < 2; m++) {
		st[m].cap = 4000000;
		st[m].t = malloc(st[m].cap * sizeof(double));
		st[m].at = malloc(st[m].cap * sizeof(uint64_t));
		st[m].round_end = calloc((size_t)rounds, sizeof(size_t));
		if (!st[m].t || !st[m].at || !st[m].round_end)
			return 1;
	}
	srand(12345);
	for (int b = 0; b < nbuf; b++) {
		for (size_t i = 0; i < (size_t)C * P * R * 2; i++)
			((float *)in[b])[i] = (float)rand() / RAND_MAX - 0.5f;
		memset(out[b], 0, (size_t)C * P * R * 8);
	}
	for (int k = 0; k < nnoise; k++)
		if (pthread_create(&noise[k], NULL, noise_main, (void *)(uintptr_t)(k + 1)) != 0) {
			fprintf(stderr, "bench_pc_tail: pthread_create failed\n");
			return 1;
		}
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < 2; j++) {
			int m = (r + j) % 2;   /* mode 0 first in even rounds */

			if (run_mode(&p, cmp != CMP_TAKEOVER ? PC_SWITCH_AUTO :
				     m == 0 ? PC_SWITCH_ON : PC_SWITCH_OFF,
				     cmp == CMP_BLOCKS && m == 1 ? (unsigned)atoi(block_kib) : 0,
				     seconds, cmp == CMP_PACING && m == 0 ? 0 : rate,
				     in, out, nbuf, &st[m]) < 0)
				return 1;
		}
	atomic_store(&noise_stop, 1);
	for (int k = 0; k < nnoise; k++)
		pthread_join(noise[k], NULL);

	printf("bench_pc_tail: CPU backend %ux%ux%u L %zu, %d threads, %d rounds x %.1f s per mode, "
	       "%s, idle spin %u us, %d buffer%s, %d noise thread%s at %d %% duty, %ld online CPUs\n",
	       C, P, R, L, threads, rounds, seconds,
	       cmp == CMP_PACING ? "back to back against paced" :
	       cmp == CMP_BLOCKS ? (rate > 0 ? "paced, blocks balanced against fixed" :
			      "back to back, blocks balanced against fixed") :
	       rate > 0 ? "paced" : "back to back",
	       idle_spin_us, nbuf, nbuf == 1 ? "" : "s", nnoise, nnoise == 1 ? "" : "s",
	       noise_duty, ncpu);
	if (rate > 0)
		printf("rate %.0f CPI/s\n", rate);
	printf("%-10s %8s %8s %8s %8s %8s %11s %11s %11s\n",
	       cmp != CMP_TAKEOVER ? "mode" : "takeover", "CPIs", "p50_ms", "p99_ms", "p99.9_ms",
	       "max_ms", "recomputed", "absent_avg", "absent_cpis");
	for (int m = 0; m < 2; m++) {
		struct mode_stats *s = &st[m];
		double *t;

		if (s->n == 0)
			continue;
		t = malloc(s->n * sizeof(double));   /* sorted copy: --series needs the order */
		if (!t)
			return 1;
		memcpy(t, s->t, s->n * sizeof(double));
		qsort(t, s->n, sizeof(double), cmp_d);
		p999[m] = pct(t, s->n, 0.999);
		mx[m] = t[s->n - 1];
		printf("%-10s %8zu %8.3f %8.3f %8.3f %8.3f %11llu %11.2f %10.1f%%\n", label[cmp][m],
		       s->n, pct(t, s->n, 0.5) * 1e3, pct(t, s->n, 0.99) * 1e3,
		       p999[m] * 1e3, mx[m] * 1e3, (unsigned long long)s->recomputed,
		       (double)s->absent / (double)s->n,
		       100.0 * (double)s->with_absent / (double)s->n);
		free(t);
	}
	if (p999[0] > 0 && mx[0] > 0)
		printf("%s/%s: p99.9 %.2fx, max %.2fx\n", label[cmp][1], label[cmp][0],
		       p999[1] / p999[0], mx[1] / mx[0]);
	for (int m = 0; series && m < 2; m++) {
		struct mode_stats *s = &st[m];
		double *sec = malloc(s->n * sizeof(double) + 1);

		if (!sec)
			return 1;
		for (int r = 0; r < s->rounds; r++) {
			size_t lo = r ? s->round_end[r - 1] : 0, hi = s->round_end[r];

			printf("series %s round %d, median ms per CPI of each second:", label[cmp][m], r + 1);
			/* at[] rises within a round: one pass, a second at a time */
			for (size_t i = lo, k; i < hi;) {
				uint64_t w = s->at[i] / 1000000000ull;

				for (k = 0; i < hi && s->at[i] / 1000000000ull == w; i++)
					sec[k++] = s->t[i];
				qsort(sec, k, sizeof(double), cmp_d);
				printf(" %.3f", sec[k / 2] * 1e3);
				if (i < hi)   /* seconds in which no CPI started */
					for (uint64_t e = w + 1; e < s->at[i] / 1000000000ull; e++)
						printf(" -");
			}
			printf("\n");
		}
		free(sec);
	}
	for (int m = 0; m < 2; m++) {
		free(st[m].t);
		free(st[m].at);
		free(st[m].round_end);
	}
	for (int b = 0; b < nbuf; b++) {
		free(in[b]);
		free(out[b]);
	}
	free(in);
	free(out);
	free(h);
	return 0;
}
