/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_pc.c — throughput of the CPU pulse-compression backend (a program
 * that prints a table; not a test).
 *
 *   bench_pc [--threads LIST] [--cpi CxPxR:L]... [--format cf32|sc16]
 *            [--out complex|magnitude|power_db] [--nfft N] [--seconds S] [--tsv]
 *            [--planner estimate|measure|patient] [--estimate]
 *            [--wisdom FILE] [--block-kib N]
 *
 * Defaults: two CPI shapes (4x128x4096 with a 512-sample chirp,
 * 16x128x9000 with a 1000-sample chirp), cf32 in, complex out, threads
 * "1,2", FFTW_PATIENT plans (--planner sets pc_params.tune.fftw_planner,
 * chirpd's [processing] fftw_planner; --estimate = --planner estimate).
 * Patient planning takes about a minute per CPI shape: --wisdom FILE
 * (fftw_wisdom; make bench passes one) keeps the plans between runs;
 * --block-kib N is cpu_block_kib (default auto). Per configuration: 2 warm-up CPIs, then CPIs until S seconds
 * (default 2) and at least 5 have run; the median CPI time is reported
 * (and the fastest, which on a shared, noisy machine is the steadier
 * figure for comparing two builds).
 * MS/s = input complex samples (C*P*R) per second / 1e6; "per thread"
 * divides by the thread count. MS/cpu-s divides by the process's CPU time
 * instead of wall time: on a shared machine where other jobs steal the CPU
 * it is the steadier per-thread figure.
 */
#include "bench.h"
#include "chirp/pc.h"
#include "waveform.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cpi { unsigned C, P, R; size_t L; };

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_pc [--threads 1,2] [--cpi CxPxR:L]... [--format cf32|sc16]\n"
		   "                [--out complex|magnitude|power_db] [--nfft N] [--seconds S] [--tsv]\n"
		   "                [--planner estimate|measure|patient] [--estimate]\n"
		   "                [--wisdom FILE] [--block-kib N]\n"
		   "  --planner P     FFTW planner (chirpd.conf fftw_planner), default patient\n"
		   "  --wisdom FILE   FFTW wisdom file (fftw_wisdom): read before planning,\n"
		   "                  written after a measure or patient search\n"
		   "  --block-kib N   rows per work block in KiB (cpu_block_kib), 1..%u;\n"
		   "                  default auto\n", PC_MAX_BLOCK_KIB);
}

/* Run one configuration; 0 on success. */
static int run(const struct cpi *c, int threads, enum pc_format fmt, enum pc_output mode,
	       size_t nfft, const struct pc_tuning *tune, double seconds, int tsv)
{
	struct wf_params wp;
	struct pc_params p;
	struct pc_info info;
	struct pc *pc = NULL;
	float *h = NULL;
	void *in = NULL, *out = NULL;
	double *t = NULL, *tc = NULL, t_create;
	size_t L, n, maxrep = 100000, reps = 0;
	char err[256];
	int rc = -1;

	/* LFM at fs = 100 MHz, B = 40 MHz, tau = L / fs */
	wf_params_init(&wp);
	wp.type = WF_LFM;
	wp.sample_rate_hz = 100e6;
	wp.bandwidth_hz = 40e6;
	wp.pulse_width_s = (double)c->L / 100e6;
	wp.window = WIN_HAMMING;
	if (wf_build(&wp, c->R, &h, &L, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_pc: waveform: %s\n", err);
		goto out;
	}
	pc_params_init(&p);
	p.channels = c->C;
	p.pulses = c->P;
	p.samples = c->R;
	p.ref = h;
	p.ref_len = L;
	p.in_format = fmt;
	p.out_mode = mode;
	p.backend = PC_BACKEND_CPU;
	p.cpu_threads = threads;
	p.nfft = nfft;
	p.tune = *tune;
	t_create = now_s();
	pc = pc_create(&p, err, sizeof(err));
	if (!pc) {
		fprintf(stderr, "bench_pc: pc_create: %s\n", err);
		goto out;
	}
	t_create = now_s() - t_create;
	pc_get_info(pc, &info);
	in = malloc(pc_in_bytes(pc));
	out = malloc(pc_out_bytes(pc));
	t = malloc(maxrep * sizeof(*t));
	tc = malloc(maxrep * sizeof(*tc));
	if (!in || !out || !t || !tc) {
		fprintf(stderr, "bench_pc: out of memory\n");
		goto out;
	}
	n = (size_t)c->C * c->P * c->R;
	srand(12345);
	if (fmt == PC_FMT_CF32) {
		float *f = in;

		for (size_t i = 0; i < 2 * n; i++)
			f[i] = (float)rand() / RAND_MAX - 0.5f;
	} else {
		int16_t *s = in;

		for (size_t i = 0; i < 2 * n; i++)
			s[i] = (int16_t)(rand() % 20000 - 10000);
	}
	memset(out, 0, pc_out_bytes(pc));   /* fault pages in before timing */
	for (int i = 0; i < 2; i++) {
		if (pc_execute(pc, in, out, NULL) < 0) {
			fprintf(stderr, "bench_pc: pc_execute: %s\n", pc_last_error(pc));
			goto out;
		}
	}
	double t_end = now_s() + seconds;
	while (reps < maxrep && (reps < 5 || now_s() < t_end)) {
		double t0 = now_s(), c0 = cpu_s();

		if (pc_execute(pc, in, out, NULL) < 0) {
			fprintf(stderr, "bench_pc: pc_execute: %s\n", pc_last_error(pc));
			goto out;
		}
		t[reps] = now_s() - t0;
		tc[reps++] = cpu_s() - c0;
	}
	qsort(t, reps, sizeof(*t), cmp_d);
	qsort(tc, reps, sizeof(*tc), cmp_d);
	double med = t[reps / 2], best = t[0], msps = n / med / 1e6;
	double cmed = tc[reps / 2], cpu_msps = n / cmed / 1e6;

	if (tsv)
		printf("chirpd\t%ux%ux%u\t%zu\t%zu\t%d\t%s\t%s\t%.4f\t%.2f\t%.2f\t%.4f\t%.4f\t%.2f\n",
		       c->C, c->P, c->R, L, info.nfft, threads, pc_format_name(fmt),
		       pc_output_name(mode), med * 1e3, msps, msps / threads, best * 1e3,
		       cmed * 1e3, cpu_msps);
	else
		printf("%-14s %5zu %6zu %7d %5s %-9s %9.2f %9.2f %9.1f %11.1f %11.1f %6zu %8.2f\n",
		       "", L, info.nfft, threads, pc_format_name(fmt), pc_output_name(mode),
		       med * 1e3, best * 1e3, msps, msps / threads, cpu_msps, reps, t_create);
	rc = 0;
out:
	pc_destroy(pc);
	free(h);
	free(in);
	free(out);
	free(t);
	free(tc);
	return rc;
}

int main(int argc, char **argv)
{
	struct cpi cpis[8] = { { 4, 128, 4096, 512 }, { 16, 128, 9000, 1000 } };
	int ncpi = 2, user_cpi = 0, threads[8] = { 1, 2 }, nthreads = 2, tsv = 0;
	const char *planner = "patient";
	struct pc_params defaults;
	struct pc_tuning tune;
	enum pc_format fmt = PC_FMT_CF32;
	enum pc_output mode = PC_OUT_COMPLEX;
	double seconds = 2.0;
	size_t nfft = 0;
	int rc = 0;

	pc_params_init(&defaults);
	tune = defaults.tune;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--tsv")) {
			tsv = 1;
		} else if (!strcmp(a, "--estimate")) {
			planner = "estimate";
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!v) {
			usage(stderr);
			return 2;
		} else if (!strcmp(a, "--threads")) {
			char *s = strdup(v), *tok, *save = NULL;

			nthreads = 0;
			for (tok = strtok_r(s, ",", &save); tok && nthreads < 8;
			     tok = strtok_r(NULL, ",", &save))
				threads[nthreads++] = atoi(tok);
			free(s);
			i++;
		} else if (!strcmp(a, "--planner")) {
			planner = v;
			i++;
		} else if (!strcmp(a, "--wisdom")) {
			tune.fftw_wisdom = v;
			i++;
		} else if (!strcmp(a, "--block-kib")) {
			if (bench_parse_block_kib("bench_pc", v, &tune.block_kib) < 0)
				return 2;
			i++;
		} else if (!strcmp(a, "--nfft")) {
			nfft = strtoull(v, NULL, 10);
			i++;
		} else if (!strcmp(a, "--cpi")) {
			struct cpi c;

			if (sscanf(v, "%ux%ux%u:%zu", &c.C, &c.P, &c.R, &c.L) != 4) {
				fprintf(stderr, "bench_pc: --cpi wants CxPxR:L, got %s\n", v);
				return 2;
			}
			if (!user_cpi)
				ncpi = 0;
			user_cpi = 1;
			if (ncpi < 8)
				cpis[ncpi++] = c;
			i++;
		} else if (!strcmp(a, "--format")) {
			fmt = !strcmp(v, "sc16") ? PC_FMT_SC16 : PC_FMT_CF32;
			i++;
		} else if (!strcmp(a, "--out")) {
			mode = !strcmp(v, "power_db") ? PC_OUT_POWER_DB :
			       !strcmp(v, "magnitude") ? PC_OUT_MAGNITUDE : PC_OUT_COMPLEX;
			i++;
		} else if (!strcmp(a, "--seconds")) {
			seconds = atof(v);
			i++;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!strcmp(planner, "estimate")) {
		tune.fftw_planner = PC_FFTW_ESTIMATE;
	} else if (!strcmp(planner, "measure")) {
		tune.fftw_planner = PC_FFTW_MEASURE;
	} else if (!strcmp(planner, "patient")) {
		tune.fftw_planner = PC_FFTW_PATIENT;
	} else {
		fprintf(stderr, "bench_pc: --planner '%s': want estimate, measure or patient\n", planner);
		return 2;
	}

	if (!tsv) {
		printf("bench_pc: CPU backend (FFTW %s plans%s), median of >= 5 CPIs over %.1f s\n",
		       planner, tune.fftw_wisdom ? ", wisdom file" : "", seconds);
		printf("%-14s %5s %6s %7s %5s %-9s %9s %9s %9s %11s %11s %6s %8s\n", "CPI CxPxR", "L",
		       "nfft", "threads", "in", "out", "ms/CPI", "best_ms", "MS/s", "MS/s/thread",
		       "MS/cpu-s", "reps", "create_s");
		printf("(ms/CPI, MS/s: median wall time; best_ms: fastest CPI; MS/cpu-s: samples per\n"
		       " second of CPU time over all threads, median -- steadier on a loaded machine)\n");
	}
	for (int c = 0; c < ncpi; c++) {
		if (!tsv)
			printf("%ux%ux%u\n", cpis[c].C, cpis[c].P, cpis[c].R);
		for (int t = 0; t < nthreads; t++)
			if (run(&cpis[c], threads[t], fmt, mode, nfft, &tune, seconds, tsv) < 0)
				rc = 1;
	}
	return rc;
}
