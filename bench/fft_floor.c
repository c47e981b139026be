/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fft_floor.c — the FFTs alone, for the CPU backend and for GNU Radio's
 * fft_filter_ccc on the same CPI (a program that prints a table; not a
 * test).
 *
 *   fft_floor [--cpi CxPxR:L]... [--seconds S] [--block-kib N] [--wisdom FILE] [--tsv]
 *
 * What it answers: how fast could chirpd's CPU backend be if its own code
 * (load, spectral multiply, store) cost nothing, and how fast are GNU
 * Radio's FFTs alone? Both use FFTW, so the ratio of the two floors bounds
 * the chirpd / GNU Radio ratio that any amount of tuning around FFTW can
 * reach; "chirpd floor / GNU Radio measured" (scripts/bench-compare.sh)
 * bounds it against GNU Radio as it really runs.
 *
 * chirpd floor: exactly the FFTW calls pc_cpu.c makes per CPI and nothing
 *   else. nfft = pc_good_fft_size(R+L-1); rows 64-byte aligned (dist =
 *   nfft rounded up to 8); blocks of --block-kib (default 256, the most
 *   chirpd's cpu_block_kib = auto takes) KiB of rows; per block one batched forward FFT out of place, one batched
 *   inverse FFT in place; FFTW_PATIENT plans (chirpd's fastest setting;
 *   --wisdom FILE keeps them, as bench_pc's --wisdom does, and they are the
 *   same plans bench_pc makes). One thread.
 * GNU Radio floor: fftsize F = 2 * 2^ceil(log2 L), nsamples = F - L + 1
 *   outputs per FFT pair (gr::filter::kernel::fft_filter_ccc); the same
 *   output as chirpd needs each row followed by L-1 zeros, so one CPI is
 *   ceil(C*P*(R+L-1) / nsamples) pairs of one forward and one inverse
 *   F-point FFT, out of place (GNU Radio's gr::fft::fft_complex). Timed
 *   with FFTW_MEASURE plans (what GNU Radio asks for) and, as GNU Radio's
 *   best case, with FFTW_PATIENT plans.
 *
 * Buffers hold random data and are reused: this is the FFTs' in-cache
 * speed, what the real programs get when their blocks stay in cache. Per
 * configuration: 2 warm-up CPIs, then CPIs until S seconds (default 2) and
 * at least 5 have run; the median CPU time of the process per CPI is
 * reported as MS/s of C*P*R input samples (the unit bench_pc and
 * gr_fft_filter use).
 *
 * "+ copies": chirpd's FFT calls plus copying each row in from a CPI-sized
 * input array (a vector copy) and out to a CPI-sized output array (streaming
 * stores, as chirpd): the bytes any implementation must move, without
 * chirpd's NaN/Inf check and multiply.
 *
 * TSV (--tsv): floor CxPxR L nfft chirpd_MS/s chirpd+copies_MS/s F
 *              gr_measure_MS/s gr_patient_MS/s
 */
#include "bench.h"
#include "chirp/pc.h"

#include <errno.h>
#include <fftw3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

struct cpi { unsigned C, P, R; size_t L; };

static void usage(FILE *f)
{
	fprintf(f, "usage: fft_floor [--cpi CxPxR:L]... [--seconds S] [--block-kib N] [--wisdom FILE] [--tsv]\n"
		   "  --block-kib N   rows per FFT call of the chirpd floor, in KiB, 1..%u (default 256)\n"
		   "  --wisdom FILE   FFTW wisdom: read before the patient plans, written after\n",
		PC_MAX_BLOCK_KIB);
}

static void fill(fftwf_complex *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		x[i][0] = (float)rand() / RAND_MAX - 0.5f;
		x[i][1] = (float)rand() / RAND_MAX - 0.5f;
	}
}

/* One "CPI" of work for a floor; the median CPU seconds per call. */
struct job {
	fftwf_plan fwd, inv, fwd_tail, inv_tail;
	fftwf_complex *a, *b, *c;    /* forward a -> b, inverse b -> c        */
	size_t calls, tail;          /* full-size calls, then one tail call if tail */
	/* With move: copy each block's rows in from cpi_in before the forward
	 * FFT and out to cpi_out after the inverse (memcpy, R samples a row). */
	const fftwf_complex *cpi_in;
	fftwf_complex *cpi_out;
	size_t R, dist, br;
};

/*
 * In with a plain vector copy, not memcpy: glibc's memcpy takes `rep movsb`
 * at these sizes, which on this AMD EPYC (Zen 3) ran about a third slower
 * than chirpd's own load loop when source and destination share their
 * page offset, and a floor must not be slower than the real thing.
 */
static void move_in(const struct job *j, size_t r0, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		const float *x = (const float *)(j->cpi_in + (r0 + i) * j->R);
		float *w = (float *)(j->a + i * j->dist);
		size_t k = 0, n = 2 * j->R;

#ifdef __SSE2__
		for (; k + 8 <= n; k += 8) {
			__m128 a = _mm_loadu_ps(x + k), b = _mm_loadu_ps(x + k + 4);

			_mm_store_ps(w + k, a);        /* rows are 64-byte aligned */
			_mm_store_ps(w + k + 4, b);
		}
#endif
		for (; k < n; k++)
			w[k] = x[k];
	}
}

/*
 * Out with streaming stores, as chirpd's store_cplx: the output goes to
 * DRAM and a normal store would first read each line (read-for-ownership).
 * The cheapest way to write the CPI out, so the floor stays a floor.
 */
static void move_out(const struct job *j, size_t r0, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		float *y = (float *)(j->cpi_out + (r0 + i) * j->R);
		const float *w = (const float *)(j->c + i * j->dist);
		size_t k = 0, n = 2 * j->R;

#ifdef __SSE2__
		while (k < n && ((uintptr_t)(y + k) & 15) != 0) {
			y[k] = w[k];
			k++;
		}
		for (; k + 4 <= n; k += 4)
			_mm_stream_ps(y + k, _mm_loadu_ps(w + k));
#endif
		for (; k < n; k++)
			y[k] = w[k];
	}
#ifdef __SSE2__
	_mm_sfence();
#endif
}

static void run_job(const struct job *j)
{
	for (size_t i = 0; i < j->calls; i++) {
		if (j->cpi_in)
			move_in(j, i * j->br, j->br);
		fftwf_execute_dft(j->fwd, j->a, j->b);
		fftwf_execute_dft(j->inv, j->b, j->c);
		if (j->cpi_out)
			move_out(j, i * j->br, j->br);
	}
	if (j->tail) {
		if (j->cpi_in)
			move_in(j, j->calls * j->br, j->tail);
		fftwf_execute_dft(j->fwd_tail, j->a, j->b);
		fftwf_execute_dft(j->inv_tail, j->b, j->c);
		if (j->cpi_out)
			move_out(j, j->calls * j->br, j->tail);
	}
}

/* Destroy j's plans and free its buffers (c may alias b). */
static void job_free(struct job *j)
{
	fftwf_plan plans[] = { j->fwd, j->inv, j->fwd_tail, j->inv_tail };

	for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++)
		if (plans[i])
			fftwf_destroy_plan(plans[i]);
	if (j->c != j->b)
		fftwf_free(j->c);
	fftwf_free(j->a);
	fftwf_free(j->b);
}

/* GNU Radio's fft_filter_ccc FFT size for ntaps L: 2 * 2^ceil(log2 L). */
static size_t gr_fftsize(size_t L)
{
	size_t F = 1;

	while (F < L)
		F <<= 1;
	return 2 * F;
}

static double time_job(const struct job *j, double seconds)
{
	enum { MAXREP = 100000 };
	static double t[MAXREP];
	size_t reps = 0;
	double end;

	for (int i = 0; i < 2; i++)
		run_job(j);
	end = cpu_s() + seconds;
	while (reps < MAXREP && (reps < 5 || cpu_s() < end)) {
		double c0 = cpu_s();

		run_job(j);
		t[reps++] = cpu_s() - c0;
	}
	qsort(t, reps, sizeof(*t), cmp_d);
	return t[reps / 2];
}

/*
 * chirpd's FFT calls for one CPI (mirrors pc_cpu.c: block_rows, dist,
 * plans); *tmove gets the same with each row copied in from and out to
 * CPI-sized arrays (the bytes any implementation must move), or -1.
 */
static double chirpd_floor(const struct cpi *c, size_t nfft, size_t kib, double seconds,
			   double *tmove)
{
	size_t rows = (size_t)c->C * c->P, dist = (nfft + 7) & ~(size_t)7;
	size_t br, tail;
	int n = (int)nfft;
	struct job j = { 0 };
	fftwf_complex *cin = NULL, *cout = NULL;
	double t = -1;

	*tmove = -1;
	br = kib * 1024 / (dist * sizeof(fftwf_complex));
	if (br < 1)
		br = 1;
	if (br > rows)
		br = rows;
	tail = rows % br;
	j.a = fftwf_malloc(br * dist * sizeof(fftwf_complex));
	j.b = fftwf_malloc(br * dist * sizeof(fftwf_complex));
	if (!j.a || !j.b)
		goto out;
	j.fwd = fftwf_plan_many_dft(1, &n, (int)br, j.a, NULL, 1, (int)dist, j.b, NULL, 1, (int)dist,
				    FFTW_FORWARD, FFTW_PATIENT);
	j.inv = fftwf_plan_many_dft(1, &n, (int)br, j.b, NULL, 1, (int)dist, j.b, NULL, 1, (int)dist,
				    FFTW_BACKWARD, FFTW_PATIENT);
	j.c = j.b;                   /* the inverse runs in place */
	j.calls = rows / br;
	j.tail = tail;
	j.fwd_tail = fftwf_plan_many_dft(1, &n, (int)(tail ? tail : 1), j.a, NULL, 1, (int)dist, j.b,
					 NULL, 1, (int)dist, FFTW_FORWARD, FFTW_PATIENT);
	j.inv_tail = fftwf_plan_many_dft(1, &n, (int)(tail ? tail : 1), j.b, NULL, 1, (int)dist, j.b,
					 NULL, 1, (int)dist, FFTW_BACKWARD, FFTW_PATIENT);
	if (!j.fwd || !j.inv || !j.fwd_tail || !j.inv_tail)
		goto out;
	srand(12345);
	fill(j.a, br * dist);
	t = time_job(&j, seconds);

	*tmove = -1;
	j.R = c->R;
	j.dist = dist;
	j.br = br;
	j.cpi_in = cin = fftwf_malloc(rows * c->R * sizeof(fftwf_complex));
	j.cpi_out = cout = fftwf_malloc(rows * c->R * sizeof(fftwf_complex));
	if (cin && cout) {
		fill(cin, rows * c->R);
		memset(cout, 0, rows * c->R * sizeof(fftwf_complex));
		*tmove = time_job(&j, seconds);
	}
out:
	if (t < 0)
		fprintf(stderr, "fft_floor: chirpd plans for nfft %zu failed\n", nfft);
	else if (*tmove < 0) {
		fprintf(stderr, "fft_floor: out of memory for the CPI\n");
		t = -1;
	}
	fftwf_free(cin);
	fftwf_free(cout);
	job_free(&j);
	return t;
}

/* GNU Radio's FFT pairs for one CPI, same output as chirpd. */
static double gr_floor(const struct cpi *c, size_t F, unsigned flags, double seconds)
{
	size_t ns = F - c->L + 1, pairs;
	int n = (int)F;
	struct job j = { 0 };
	double t = -1;

	pairs = ((size_t)c->C * c->P * (c->R + c->L - 1) + ns - 1) / ns;
	j.a = fftwf_malloc(F * sizeof(fftwf_complex));
	j.b = fftwf_malloc(F * sizeof(fftwf_complex));
	j.c = fftwf_malloc(F * sizeof(fftwf_complex));
	if (!j.a || !j.b || !j.c)
		goto out;
	/* each out of place, as gr::fft::fft_complex */
	j.fwd = fftwf_plan_dft_1d(n, j.a, j.b, FFTW_FORWARD, flags);
	j.inv = fftwf_plan_dft_1d(n, j.b, j.c, FFTW_BACKWARD, flags);
	if (!j.fwd || !j.inv)
		goto out;
	j.calls = pairs;
	srand(12345);
	fill(j.a, F);
	t = time_job(&j, seconds);
out:
	if (t < 0)
		fprintf(stderr, "fft_floor: GNU Radio plans for F %zu failed\n", F);
	job_free(&j);
	return t;
}

int main(int argc, char **argv)
{
	struct cpi cpis[8] = { { 4, 128, 4096, 512 }, { 16, 128, 9000, 1000 } };
	int ncpi = 2, user_cpi = 0, tsv = 0, rc = 0;
	double seconds = 2.0;
	const char *wisdom = NULL;
	size_t block_kib = 256;
	double grm[8];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--tsv")) {
			tsv = 1;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!v) {
			usage(stderr);
			return 2;
		} else if (!strcmp(a, "--cpi")) {
			struct cpi c;
			char tail;

			if (sscanf(v, "%ux%ux%u:%zu%c", &c.C, &c.P, &c.R, &c.L, &tail) != 4 ||
			    !c.C || !c.P || !c.R || !c.L || c.L > c.R || c.L > (1u << 24)) {
				fprintf(stderr, "fft_floor: --cpi '%s': want CxPxR:L, 1 <= L <= R\n", v);
				return 2;
			}
			if (!user_cpi)
				ncpi = 0;
			user_cpi = 1;
			if (ncpi == 8) {
				fprintf(stderr, "fft_floor: at most 8 --cpi\n");
				return 2;
			}
			cpis[ncpi++] = c;
			i++;
		} else if (!strcmp(a, "--block-kib")) {
			unsigned k;

			if (bench_parse_block_kib("fft_floor", v, &k) < 0)
				return 2;
			block_kib = k;
			i++;
		} else if (!strcmp(a, "--wisdom")) {
			wisdom = v;
			i++;
		} else if (!strcmp(a, "--seconds")) {
			char *end;

			seconds = strtod(v, &end);
			if (*end || !(seconds > 0 && seconds <= 3600)) {
				fprintf(stderr, "fft_floor: --seconds '%s': want 0 < S <= 3600\n", v);
				return 2;
			}
			i++;
		} else {
			usage(stderr);
			return 2;
		}
	}

	/*
	 * GNU Radio's FFTW_MEASURE plans first, before any wisdom is loaded:
	 * FFTW answers a measure request with patient wisdom when it has
	 * some, which would not be what GNU Radio runs.
	 */
	for (int k = 0; k < ncpi; k++)
		grm[k] = gr_floor(&cpis[k], gr_fftsize(cpis[k].L), FFTW_MEASURE, seconds);
	if (wisdom && *wisdom)
		fftwf_import_wisdom_from_filename(wisdom);   /* absent on the first run */

	if (!tsv) {
		printf("FFTs alone, 1 thread, MS/s of C*P*R input samples per CPU-second (median over %.1f s)\n",
		       seconds);
		printf("%-14s %5s %6s %13s %13s %6s %15s %15s %12s\n", "CPI CxPxR", "L", "nfft", "chirpd floor",
		       "+ copies", "F", "gr floor (msr)", "gr floor (pat)", "floor ratio");
	}
	for (int k = 0; k < ncpi; k++) {
		const struct cpi *c = &cpis[k];
		size_t nfft = pc_good_fft_size(c->R + c->L - 1), F = gr_fftsize(c->L);
		double n = (double)c->C * c->P * c->R, tc, tm, tgp;

		tc = chirpd_floor(c, nfft, block_kib, seconds, &tm);
		tgp = gr_floor(c, F, FFTW_PATIENT, seconds);
		if (tc < 0 || tgp < 0 || grm[k] < 0) {
			rc = 1;
			continue;
		}
		if (tsv)
			printf("floor\t%ux%ux%u\t%zu\t%zu\t%.2f\t%.2f\t%zu\t%.2f\t%.2f\n", c->C, c->P, c->R,
			       c->L, nfft, n / tc / 1e6, n / tm / 1e6, F, n / grm[k] / 1e6, n / tgp / 1e6);
		else {
			char geom[48];

			snprintf(geom, sizeof(geom), "%ux%ux%u", c->C, c->P, c->R);
			printf("%-14s %5zu %6zu %13.1f %13.1f %6zu %15.1f %15.1f %11.2fx\n",
			       geom, c->L, nfft, n / tc / 1e6, n / tm / 1e6, F, n / grm[k] / 1e6,
			       n / tgp / 1e6, grm[k] / tc);
		}
		fflush(stdout);
	}
	if (wisdom && *wisdom && !fftwf_export_wisdom_to_filename(wisdom))
		fprintf(stderr, "fft_floor: cannot write FFTW wisdom to %s\n", wisdom);
	return rc;
}
