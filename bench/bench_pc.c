/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_pc.c — throughput of the CPU pulse-compression backend (a program
 * that prints a table; not a test).
 *
 *   bench_pc [--threads LIST] [--cpi CxPxR:L]... [--format cf32|sc16]
 *            [--out complex|magnitude|power_db] [--nfft N] [--seconds S] [--tsv]
 *            [--planner estimate|measure|patient] [--estimate]
 *            [--wisdom FILE] [--block-kib N] [--chain]
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
 *
 * --chain runs the radar chain after compression instead of writing the
 * compressed cube: no MTI, a Hamming window over the pulses, 256 Doppler
 * bins, CA-CFAR on each channel's map (guard 2 range x 1 Doppler, training
 * 8 x 2, pfa 1e-5, 3 x 3 local maxima), detections only (out mode none),
 * as bench/compare/scipy_chain.py runs it in numpy/scipy and radar_gpu on
 * the GPU; the TSV's tool column reads "chirpd-chain".
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
		   "                [--wisdom FILE] [--block-kib N] [--chain]\n"
		   "  --planner P     FFTW planner (chirpd.conf fftw_planner), default patient\n"
		   "  --wisdom FILE   FFTW wisdom file (fftw_wisdom): read before planning,\n"
		   "                  written after a measure or patient search\n"
		   "  --block-kib N   rows per work block in KiB (cpu_block_kib), 1..%u;\n"
		   "                  default auto\n"
		   "  --chain         the radar chain (Doppler, CA-CFAR, detections only)\n",
		   PC_MAX_BLOCK_KIB);
}

#define CHAIN_ND 256
static int chain;          /* --chain */

/* The radar chain of --chain on p (win: p->pulses Hamming coefficients). */
static void set_chain(struct pc_params *p, float *win)
{
	double w[4096];
	unsigned n = p->pulses < 4096 ? p->pulses : 4096;

	wf_window_fill(WIN_HAMMING, 4, 35.0, w, n);
	for (unsigned i = 0; i < n; i++)
		win[i] = (float)w[i];
	p->out_mode = PC_OUT_NONE;
	p->radar.doppler = 1;
	p->radar.mti = PC_MTI_NONE;
	p->radar.window = win;
	p->radar.nfft = CHAIN_ND;
	p->radar.cfar = 1;
	p->radar.method = PC_CFAR_CA;
	p->radar.integrate = 0;
	p->radar.guard_range = 2;
	p->radar.guard_doppler = 1;
	p->radar.train_range = 8;
	p->radar.train_doppler = 2;
	p->radar.pfa = 1e-5;
	p->radar.maxima_range = 1;
	p->radar.maxima_doppler = 1;
	p->radar.max_detections = 4096;
}

/* One CPI, synchronously: pc_execute with the detection list. */
static int exec_one(struct pc *pc, const void *in, void *out, void *det)
{
	struct pc_job j = { .in = in, .out = out, .det = det, .tag = 0, .mode = 0 };
	struct pc_done d[4];
	int rc = pc_submit_job(pc, &j), got = 0;

	while (rc == 0 && !got) {
		int k = pc_poll(pc, d, 4, -1);

		if (k < 0)
			return k;
		for (int i = 0; i < k; i++)
			got |= (d[i].flags & PC_DONE_OUTPUT) != 0;
	}
	return rc;
}

/* Run one configuration; 0 on success. */
static int run(const struct cpi *c, int threads, enum pc_format fmt, enum pc_output mode,
	       size_t nfft, const struct pc_tuning *tune, double seconds, int tsv)
{
	struct wf_params wp;
	struct pc_params p;
	struct pc_info info;
	struct pc *pc = NULL;
	float *h = NULL, win[4096];
	void *in = NULL, *out = NULL, *det = NULL;
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
	if (chain)
		set_chain(&p, win);
	t_create = now_s();
	pc = pc_create(&p, err, sizeof(err));
	if (!pc) {
		fprintf(stderr, "bench_pc: pc_create: %s\n", err);
		goto out;
	}
	t_create = now_s() - t_create;
	pc_get_info(pc, &info);
	in = malloc(pc_in_bytes(pc));
	out = malloc(pc_out_bytes(pc) ? pc_out_bytes(pc) : 1);
	det = malloc(pc_det_bytes(pc) ? pc_det_bytes(pc) : 1);
	t = malloc(maxrep * sizeof(*t));
	tc = malloc(maxrep * sizeof(*tc));
	if (!in || !out || !det || !t || !tc) {
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
	memset(det, 0, pc_det_bytes(pc));
	for (int i = 0; i < 2; i++) {
		if (exec_one(pc, in, pc_out_bytes(pc) ? out : NULL, chain ? det : NULL) < 0) {
			fprintf(stderr, "bench_pc: pc_execute: %s\n", pc_last_error(pc));
			goto out;
		}
	}
	double t_end = now_s() + seconds;
	while (reps < maxrep && (reps < 5 || now_s() < t_end)) {
		double t0 = now_s(), c0 = cpu_s();

		if (exec_one(pc, in, pc_out_bytes(pc) ? out : NULL, chain ? det : NULL) < 0) {
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
		printf("%s\t%ux%ux%u\t%zu\t%zu\t%d\t%s\t%s\t%.4f\t%.2f\t%.2f\t%.4f\t%.4f\t%.2f\n",
		       chain ? "chirpd-chain" : "chirpd", c->C, c->P, c->R, L, info.nfft, threads,
		       pc_format_name(fmt), pc_output_name(chain ? PC_OUT_NONE : mode), med * 1e3, msps, msps / threads, best * 1e3,
		       cmed * 1e3, cpu_msps);
	else
		printf("%-14s %5zu %6zu %7d %5s %-9s %9.2f %9.2f %9.1f %11.1f %11.1f %6zu %8.2f\n",
		       "", L, info.nfft, threads, pc_format_name(fmt),
		       pc_output_name(chain ? PC_OUT_NONE : mode),
		       med * 1e3, best * 1e3, msps, msps / threads, cpu_msps, reps, t_create);
	rc = 0;
out:
	pc_destroy(pc);
	free(h);
	free(in);
	free(out);
	free(det);
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
		} else if (!strcmp(a, "--chain")) {
			chain = 1;
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
