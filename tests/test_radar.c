/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_radar.c — the radar chain after pulse compression (chirp/pc.h,
 * RADAR CHAIN; radar.c, radar_cpu.c, the CPU backend) against its
 * definition:
 *   - maps against an independent double-precision reference (direct
 *     correlation, then MTI, window and a direct DFT along pulses), at
 *     sizes that are not powers of two, every MTI, both map outputs;
 *   - the CFAR's false-alarm rate on white complex Gaussian noise, per
 *     channel and integrated, for ca/go/so/os, over the whole map and at
 *     the range edges;
 *   - detection of a target at its gate and bin, its range and velocity;
 *   - the local-maximum rule (one detection per target, ties to the lower
 *     index), the list's overflow, the parameter checks.
 * The statistical tests use fixed seeds: they are repeatable, and their
 * bounds (0.5x to 2x of pfa over >= 1000 expected counts) leave a margin
 * of many standard deviations.
 */
#include <complex.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "chirp/detect.h"
#include "chirp/pc.h"
#include "radar.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static void seed(uint64_t s)
{
	rng_state = s ? s : 1;
}

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* uniform in (0, 1] */
static double u01(void)
{
	return ((double)(rnd() >> 11) + 1.0) / 9007199254740992.0;
}

static double urand(void)
{
	return u01() * 2.0 - 1.0;
}

/* n complex Gaussian samples of power s2 (Box-Muller), cf32 */
static void gauss_fill(float *x, size_t n, double s2)
{
	double sd = sqrt(s2 / 2.0);

	for (size_t i = 0; i < n; i++) {
		double r = sqrt(-2.0 * log(u01())) * sd, t = 2.0 * M_PI * u01();

		x[2 * i] = (float)(r * cos(t));
		x[2 * i + 1] = (float)(r * sin(t));
	}
}

static const float unit_ref[2] = { 1.0f, 0.0f };   /* L = 1: compression is the identity */

static void base(struct pc_params *p, unsigned C, unsigned P, unsigned R)
{
	pc_params_init(p);
	p->channels = C;
	p->pulses = P;
	p->samples = R;
	p->ref = unit_ref;
	p->ref_len = 1;
	p->backend = PC_BACKEND_CPU;
	p->radar.doppler = 1;
}

static void *xalloc(size_t n)
{
	void *b = NULL;

	assert_int_equal(posix_memalign(&b, 64, n ? n : 64), 0);
	memset(b, 0, n);
	return b;
}

static struct pc *make(const struct pc_params *p)
{
	char err[256];
	struct pc *pc = pc_create(p, err, sizeof(err));

	if (!pc)
		fail_msg("pc_create: %s", err);
	return pc;
}

static const struct chirp_det_record *records(const void *det)
{
	return (const struct chirp_det_record *)((const char *)det +
						 sizeof(struct chirp_det_header));
}

/* Run one CPI of pc: in -> out, det. */
static void run(struct pc *pc, const void *in, void *out, void *det)
{
	struct pc_job j = { .in = in, .out = out, .det = det, .tag = 9, .mode = 0 };
	uint32_t nf = 99;

	assert_int_equal(pc_execute_job(pc, &j, &nf), 0);
	assert_int_equal(nf, 0);
}

/* ---- maps against a double-precision reference -------------------------- */

/* The whole chain up to M, in double, straight from the definition. */
static void ref_map(const struct pc_params *p, const float *x, const float *h, size_t L,
		    const float *w, unsigned nd, double *M)
{
	unsigned C = p->channels, P = p->pulses, R = p->samples;
	unsigned drop = p->radar.mti == PC_MTI_TWO ? 1 : p->radar.mti == PC_MTI_THREE ? 2 : 0;
	unsigned Pm = P - drop;
	static const double gm[3] = { 1, 2, 6 };
	double e = 0, gd, g = 0;
	double complex *y = calloc((size_t)C * P * R, sizeof(*y));
	double complex *z = calloc((size_t)Pm * R, sizeof(*z));

	assert_non_null(y);
	assert_non_null(z);
	for (size_t k = 0; k < 2 * L; k++)
		g += (double)h[k] * h[k];
	g = 1.0 / sqrt(g);
	for (unsigned q = 0; q < Pm; q++)
		e += (w ? (double)w[q] : 1.0) * (w ? (double)w[q] : 1.0);
	gd = 1.0 / sqrt(gm[p->radar.mti] * e);
	for (size_t r = 0; r < (size_t)C * P; r++)
		for (size_t n = 0; n < R; n++) {
			double complex s = 0;

			for (size_t k = 0; k < L && n + k < R; k++) {
				const float *xs = x + 2 * (r * R + n + k);

				s += ((double)xs[0] + I * (double)xs[1]) *
				     ((double)h[2 * k] - I * (double)h[2 * k + 1]);
			}
			y[r * R + n] = g * s;
		}
	for (unsigned c = 0; c < C; c++) {
		const double complex *yc = y + (size_t)c * P * R;

		for (unsigned q = 0; q < Pm; q++)
			for (unsigned n = 0; n < R; n++) {
				double complex a = yc[(size_t)q * R + n], v;

				if (p->radar.mti == PC_MTI_TWO)
					v = yc[(size_t)(q + 1) * R + n] - a;
				else if (p->radar.mti == PC_MTI_THREE)
					v = a - 2.0 * yc[(size_t)(q + 1) * R + n] + yc[(size_t)(q + 2) * R + n];
				else
					v = a;
				z[(size_t)q * R + n] = v * (w ? (double)w[q] : 1.0) * gd;
			}
		for (unsigned k = 0; k < nd; k++) {
			long m = (long)k - (long)(nd / 2);

			for (unsigned n = 0; n < R; n++) {
				double complex s = 0;

				for (unsigned q = 0; q < Pm; q++)
					s += z[(size_t)q * R + n] *
					     cexp(-2.0 * M_PI * I * (double)(((long)q * m) % (long)nd) / nd);
				M[((size_t)c * nd + k) * R + n] = creal(s) * creal(s) + cimag(s) * cimag(s);
			}
		}
	}
	free(y);
	free(z);
}

static void check_map(enum pc_output mode, const float *out, const double *M, size_t n)
{
	double num = 0, den = 0, tol = mode == PC_OUT_MAP_DB ? 3e-5 : 1e-5, rel;

	for (size_t i = 0; i < n; i++) {
		double v = out[i];

		assert_false(isnan(out[i]));
		if (mode == PC_OUT_MAP_DB) {
			assert_true(out[i] >= PC_POWER_DB_FLOOR);
			v = M[i] < PC_POWER_FLOOR ? M[i] : pow(10.0, v / 10.0);
		}
		num += (v - M[i]) * (v - M[i]);
		den += M[i] * M[i];
	}
	rel = sqrt(num / den);
	if (!(rel <= tol))
		fail_msg("%s: relative L2 error %g > %g", pc_output_name(mode), rel, tol);
}

static void test_maps_reference(void **state)
{
	const unsigned C = 2, P = 13, R = 37;
	const size_t L = 5;
	float h[2 * 5], win[13], *x;
	double *M;

	(void)state;
	seed(11);
	for (size_t k = 0; k < 2 * L; k++)
		h[k] = (float)urand();
	for (unsigned q = 0; q < P; q++)
		win[q] = (float)(0.3 + 0.7 * u01());
	x = xalloc((size_t)C * P * R * 8);
	for (size_t i = 0; i < (size_t)C * P * R * 2; i++)
		x[i] = (float)urand();
	for (int mti = PC_MTI_NONE; mti <= PC_MTI_THREE; mti++)
		for (int forced = 0; forced < 2; forced++)
			for (int wi = 0; wi < 2; wi++)
				for (int om = PC_OUT_MAP_POWER; om <= PC_OUT_MAP_DB; om++) {
					struct pc_params p;
					struct pc_info info;
					struct pc *pc;
					float *out;
					unsigned nd;

					base(&p, C, P, R);
					p.ref = h;
					p.ref_len = L;
					p.out_mode = (enum pc_output)om;
					p.radar.mti = (enum pc_mti)mti;
					p.radar.nfft = forced ? 19 : 0;   /* prime, > P' */
					p.radar.window = wi ? win : NULL;
					pc = make(&p);
					pc_get_info(pc, &info);
					nd = info.doppler_nfft;
					assert_int_equal(info.pulses_mti, P - (unsigned)mti);
					assert_int_equal(nd, forced ? 19u : (unsigned)pc_good_fft_size(P - mti));
					assert_int_equal(pc_out_bytes(pc), (size_t)C * nd * R * 4);
					assert_int_equal(pc_det_bytes(pc), 0);
					out = xalloc(pc_out_bytes(pc));
					M = calloc((size_t)C * nd * R, sizeof(*M));
					assert_non_null(M);
					run(pc, x, out, NULL);
					ref_map(&p, x, h, L, p.radar.window, nd, M);
					check_map(p.out_mode, out, M, (size_t)C * nd * R);
					free(M);
					free(out);
					pc_destroy(pc);
				}
	free(x);
}

/* A tone at Doppler bin m peaks at bin k = m + floor(Nd/2), positive m
 * closing; with the Doppler gain white noise keeps its power. */
static void test_map_tone_and_gain(void **state)
{
	const unsigned P = 24, R = 16;
	struct pc_params p;
	struct pc *pc;
	float *x, *out;
	double mean = 0;

	(void)state;
	base(&p, 1, P, R);
	p.out_mode = PC_OUT_MAP_POWER;
	pc = make(&p);   /* Nd = 24 */
	x = xalloc((size_t)P * R * 8);
	out = xalloc(pc_out_bytes(pc));
	for (unsigned q = 0; q < P; q++) {   /* m = -5 at gate 3 */
		x[2 * (q * R + 3)] = (float)cos(2 * M_PI * -5.0 * q / 24);
		x[2 * (q * R + 3) + 1] = (float)sin(2 * M_PI * -5.0 * q / 24);
	}
	run(pc, x, out, NULL);
	for (unsigned k = 0; k < 24; k++)
		if (k == 12 - 5)
			assert_float_equal(out[k * R + 3], 24.0, 1e-4);   /* |P / sqrt(P)|^2 */
		else
			assert_true(out[k * R + 3] < 1e-9);
	seed(3);
	gauss_fill(x, (size_t)P * R, 2.0);
	run(pc, x, out, NULL);
	for (size_t i = 0; i < (size_t)24 * R; i++)
		mean += out[i];
	mean /= 24.0 * R;
	assert_true(fabs(mean - 2.0) < 0.3);
	free(x);
	free(out);
	pc_destroy(pc);
}

/* ---- the noise model with MTI ------------------------------------------------- */

static void add_target(float *x, unsigned C, unsigned P, unsigned R, unsigned n, double m,
		       double A, double phase);

/*
 * The documented noise power of Doppler signed bin m for white input of
 * power 1 (pc.h, RADAR CHAIN, "Noise"): with the MTI filter's taps h
 * (G = sum h^2), r_l = sum_j h_j h_{j+l} and the window's lag sums
 * A_l = sum_{p < P'-l} w_p w_{p+l},
 *     N(m) = 1 + (2 / (G A_0)) sum_{l >= 1} r_l A_l cos(2 pi l m / Nd).
 */
static double mti_noise(enum pc_mti mti, const float *w, unsigned Pm, unsigned Nd, int m)
{
	static const double r[3][3] = { { 1, 0, 0 }, { 2, -1, 0 }, { 6, -4, 1 } };
	double A[3] = { 0, 0, 0 }, v = 1.0;

	for (unsigned l = 0; l < 3; l++)
		for (unsigned q = 0; q + l < Pm; q++)
			A[l] += (w ? w[q] : 1.0) * (w ? w[q + l] : 1.0);
	for (unsigned l = 1; l < 3; l++)
		v += 2.0 * r[mti][l] * A[l] * cos(2 * M_PI * l * m / Nd) / (r[mti][0] * A[0]);
	return v;
}

/*
 * White noise of power s2 through MTI (two- and three-pulse, rect and
 * Hamming, Nd = P' and zero-padded) and the Doppler FFT: the map's mean
 * power per Doppler bin, over many gates and CPIs, is s2 N(m) within
 * 6 standard deviations of its estimate; from ~0 at the notch to 2 s2
 * (two-pulse) and 8/3 s2 (three-pulse) at the edge of the band.
 */
static void test_mti_noise_per_bin(void **state)
{
	const unsigned C = 2, P = 17, R = 64, ncpi = 150;
	const double s2 = 2.0;
	static const struct { enum pc_mti mti; int hamming; unsigned nd; } cases[] = {
		{ PC_MTI_NONE, 1, 0 }, { PC_MTI_TWO, 0, 0 }, { PC_MTI_TWO, 1, 20 },
		{ PC_MTI_THREE, 0, 0 }, { PC_MTI_THREE, 1, 16 },
	};

	(void)state;
	seed(515);
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		unsigned Pm = P - (cases[ci].mti == PC_MTI_TWO ? 1 : cases[ci].mti == PC_MTI_THREE ? 2 : 0);
		float w[17];
		double sum[32] = { 0 }, peak = 0.0, dip = 1e9;
		struct pc_params p;
		struct pc_info info;
		struct pc *pc;
		float *x, *out;
		unsigned Nd;

		for (unsigned q = 0; q < Pm; q++)
			w[q] = (float)(0.54 - 0.46 * cos(2 * M_PI * q / (Pm - 1)));
		base(&p, C, P, R);
		p.out_mode = PC_OUT_MAP_POWER;
		p.radar.mti = cases[ci].mti;
		p.radar.window = cases[ci].hamming ? w : NULL;
		p.radar.nfft = cases[ci].nd;
		pc = make(&p);
		pc_get_info(pc, &info);
		Nd = info.doppler_nfft;
		assert_true(Nd <= 32);
		x = xalloc((size_t)C * P * R * 8);
		out = xalloc(pc_out_bytes(pc));
		for (unsigned i = 0; i < ncpi; i++) {
			gauss_fill(x, (size_t)C * P * R, s2);
			run(pc, x, out, NULL);
			for (unsigned c = 0; c < C; c++)
				for (unsigned k = 0; k < Nd; k++)
					for (unsigned n = 0; n < R; n++)
						sum[k] += out[((size_t)c * Nd + k) * R + n];
		}
		for (unsigned k = 0; k < Nd; k++) {
			int m = (int)k - (int)(Nd / 2);
			double cnt = (double)ncpi * C * R, got = sum[k] / cnt;
			double want = s2 * mti_noise(cases[ci].mti, cases[ci].hamming ? w : NULL, Pm, Nd, m);

			/* cells are exponential (std = mean): the mean of cnt of
			 * them is within 6 / sqrt(cnt) of its expectation */
			if (fabs(got / want - 1.0) > 6.0 / sqrt(cnt))
				fail_msg("mti %d %s Nd %u: bin %d: noise %.4f, model %.4f", (int)cases[ci].mti,
					 cases[ci].hamming ? "hamming" : "rect", Nd, m, got, want);
			peak = want > peak ? want : peak;
			dip = want < dip ? want : dip;
		}
		printf("test_radar: mti %d %s Nd %u: noise from %.3f to %.3f s^2 across Doppler, as modelled\n",
		       (int)cases[ci].mti, cases[ci].hamming ? "hamming" : "rect", Nd, dip / s2, peak / s2);
		if (cases[ci].mti == PC_MTI_NONE)
			assert_true(peak / s2 < 1.0 + 1e-9 && dip / s2 > 1.0 - 1e-9);
		if (cases[ci].mti == PC_MTI_TWO && !cases[ci].hamming)   /* m = -8 of 16: cos = -1 */
			assert_float_equal(peak / s2, 2.0 - 1.0 / Pm, 1e-9);
		if (cases[ci].mti == PC_MTI_THREE && !cases[ci].hamming)   /* Nd = 15: near -pi */
			assert_true(peak / s2 > 2.4 && peak / s2 < 8.0 / 3.0);
		free(x);
		free(out);
		pc_destroy(pc);
	}
}

/*
 * A target near the MTI notch (two-pulse, rect, Nd = P' = 32, bin 2,
 * 30 dB over its bin's noise): the CFAR's noise estimate is the mean of
 * N over its training cells, weighted by how many cells each Doppler
 * offset contributes, so it reads the notch's slope, not the bin's own
 * noise; the record's snr_db is low by 10 log10(Nbar / N(m0)), 2.3 dB
 * here, as documented, and its noise is s2 Nbar.
 */
static void test_snr_near_notch(void **state)
{
	const unsigned C = 1, P = 33, Pm = 32, R = 96, n0 = 50, ncpi = 300;
	const unsigned gd = 1, td = 2, gr = 1, tr = 4;
	const int m0 = 2;
	const double s2 = 1.0;
	struct pc_params p;
	struct pc *pc;
	float *x;
	void *det;
	const struct chirp_det_header *hd;
	double nbar = 0.0, cw = 0.0, ncell, S, A, psum = 0.0, nsum = 0.0, want_def, got_def;
	unsigned hits = 0;

	(void)state;
	seed(2024);
	/* Nbar: weights 2 tr (guard rows) and 2 (gr + tr) + 1 (training rows) */
	for (int dk = -(int)(gd + td); dk <= (int)(gd + td); dk++) {
		double c = abs(dk) <= (int)gd ? 2.0 * tr : 2.0 * (gr + tr) + 1.0;

		nbar += c * mti_noise(PC_MTI_TWO, NULL, Pm, Pm, m0 + dk);
		cw += c;
	}
	nbar /= cw;
	ncell = mti_noise(PC_MTI_TWO, NULL, Pm, Pm, m0);
	/* power in the map: A^2 P' (1 - cos phi), phi = 2 pi m0 / Nd */
	S = 1000.0 * s2 * ncell;
	A = sqrt(S / (Pm * (1.0 - cos(2 * M_PI * m0 / Pm))));
	base(&p, C, P, R);
	p.out_mode = PC_OUT_NONE;
	p.radar.mti = PC_MTI_TWO;
	p.radar.cfar = 1;
	p.radar.method = PC_CFAR_CA;
	p.radar.integrate = 0;
	p.radar.guard_doppler = gd;
	p.radar.train_doppler = td;
	p.radar.guard_range = gr;
	p.radar.train_range = tr;
	p.radar.pfa = 1e-6;
	pc = make(&p);
	x = xalloc((size_t)C * P * R * 8);
	det = xalloc(pc_det_bytes(pc));
	hd = det;
	for (unsigned i = 0; i < ncpi; i++) {
		gauss_fill(x, (size_t)C * P * R, s2);
		add_target(x, C, P, R, n0, m0 * (double)P / Pm, A, u01() * 2 * M_PI);
		run(pc, x, NULL, det);
		for (uint32_t r = 0; r < hd->count; r++) {
			const struct chirp_det_record *d = &records(det)[r];

			if (d->range_gate != n0 || d->doppler_bin != m0)
				continue;
			hits++;
			psum += d->power;
			nsum += d->noise;
		}
	}
	assert_int_equal(hits, ncpi);
	/* the estimate: mean of 68 cells, ~12 % each; over 300 CPIs < 1 % */
	if (fabs(nsum / hits / (s2 * nbar) - 1.0) > 0.04)
		fail_msg("noise near the notch %.5f, model s2 Nbar %.5f", nsum / hits, s2 * nbar);
	want_def = 10 * log10(nbar / ncell);
	got_def = 10 * log10((psum / nsum) / ((S + s2 * ncell) / (s2 * ncell)));
	printf("test_radar: bin %d of the two-pulse notch: snr low by %.2f dB (model %.2f dB)\n",
	       m0, -got_def, want_def);
	assert_true(want_def > 2.0 && want_def < 2.6);
	assert_true(fabs(-got_def - want_def) < 0.25);
	free(x);
	free(det);
	pc_destroy(pc);
}

/* ---- false alarms ------------------------------------------------------------ */

struct fa {
	double cells, crossings;            /* over the whole maps         */
	double edge_cells, edge_crossings;  /* gates within gr+tr of an edge */
};

/*
 * ncpi CPIs of white noise through pc (maxima 0/0: every crossing is a
 * record, so the records give the crossings' gates). Noise of power 1 per
 * channel (the CFAR is scale-free; 1 keeps the numbers readable).
 */
static struct fa fa_run(const struct pc_params *p, unsigned ncpi)
{
	struct pc *pc = make(p);
	size_t n = (size_t)p->channels * p->pulses * p->samples;
	float *x = xalloc(n * 8);
	void *det = xalloc(pc_det_bytes(pc));
	const struct chirp_det_header *hd = det;
	unsigned span = p->radar.guard_range + p->radar.train_range, R = p->samples;
	struct fa f = { 0 };

	for (unsigned i = 0; i < ncpi; i++) {
		gauss_fill(x, n, 1.0);
		run(pc, x, NULL, det);
		assert_int_equal(hd->magic, CHIRP_DET_MAGIC);
		assert_int_equal(hd->flags & CHIRP_DET_OVERFLOW, 0);
		assert_int_equal(hd->count, hd->crossings);   /* maxima 0/0 */
		f.cells += (double)hd->cells;
		f.crossings += (double)hd->crossings;
		for (uint32_t r = 0; r < hd->count; r++) {
			uint32_t g = records(det)[r].range_gate;

			f.edge_crossings += g < span || g >= R - span;
		}
		f.edge_cells += (double)hd->maps * hd->doppler_bins * 2.0 * span;
	}
	free(x);
	free(det);
	pc_destroy(pc);
	return f;
}

static void fa_params(struct pc_params *p, unsigned C, unsigned P, unsigned R, enum pc_cfar m,
		      int integrate, double pfa)
{
	base(p, C, P, R);
	p->out_mode = PC_OUT_NONE;
	p->radar.cfar = 1;
	p->radar.method = m;
	p->radar.integrate = integrate;
	p->radar.pfa = pfa;
	p->radar.maxima_range = 0;
	p->radar.maxima_doppler = 0;
	p->radar.max_detections = PC_MAX_DETECTIONS;
}

static void expect_rate(const char *what, double crossings, double cells, double pfa)
{
	double r = crossings / cells;

	printf("test_radar: %s: %.0f crossings in %.3g cells, rate %.3g (pfa %.3g, x%.2f)\n", what,
	       crossings, cells, r, pfa, r / pfa);
	if (!(r >= 0.5 * pfa && r <= 2.0 * pfa))
		fail_msg("%s: false-alarm rate %g is not within 0.5x..2x of pfa %g", what, r, pfa);
}

/* ca over >= 10^7 cells at pfa 1e-4, per channel and integrated. */
static void test_fa_ca(void **state)
{
	struct pc_params p;
	struct fa f;

	(void)state;
	seed(101);
	fa_params(&p, 2, 32, 8192, PC_CFAR_CA, 0, 1e-4);
	f = fa_run(&p, 20);   /* 2 x 32 x 8192 x 20 = 1.05e7 cells */
	assert_true(f.cells >= 1e7);
	expect_rate("ca per channel", f.crossings, f.cells, 1e-4);
	fa_params(&p, 2, 32, 8192, PC_CFAR_CA, 1, 1e-4);
	f = fa_run(&p, 39);   /* 32 x 8192 x 39 = 1.02e7 cells of Gamma(2) */
	assert_true(f.cells >= 1e7);
	expect_rate("ca integrated", f.crossings, f.cells, 1e-4);
}

/* go, so, os at pfa 1e-3 over ~2e6 cells, per channel and integrated. */
static void test_fa_go_so_os(void **state)
{
	static const enum pc_cfar ms[] = { PC_CFAR_GO, PC_CFAR_SO, PC_CFAR_OS };
	static const char *names[] = { "go", "so", "os" };

	(void)state;
	seed(202);
	for (int i = 0; i < 3; i++)
		for (int integ = 0; integ < 2; integ++) {
			struct pc_params p;
			struct fa f;
			char what[64];

			fa_params(&p, 2, 32, 4096, ms[i], integ, 1e-3);
			p.radar.train_range = 4;   /* os: 50 cells, a cheaper sort */
			p.radar.train_doppler = 1;
			f = fa_run(&p, integ ? 16 : 8);   /* 2.1e6 cells */
			snprintf(what, sizeof(what), "%s %s", names[i], integ ? "integrated" : "per channel");
			expect_rate(what, f.crossings, f.cells, 1e-3);
		}
}

/* At the range edges fewer cells train the CFAR; alpha follows, so the
 * rate there is still pfa (>= 10^6 edge cells each). */
static void test_fa_edges(void **state)
{
	static const char *names[] = { "ca", "go", "so", "os" };

	(void)state;
	seed(303);
	for (int m = PC_CFAR_CA; m <= PC_CFAR_OS; m++) {
		struct pc_params p;
		struct fa f;
		char what[64];

		fa_params(&p, 1, 32, 64, (enum pc_cfar)m, 0, 1e-3);
		p.radar.guard_range = 2;
		p.radar.train_range = 6;   /* 16 of the 64 gates are edge gates */
		p.radar.train_doppler = 1;
		f = fa_run(&p, 2000);
		assert_true(f.edge_cells >= 1e6);
		snprintf(what, sizeof(what), "%s range edges", names[m]);
		expect_rate(what, f.edge_crossings, f.edge_cells, 1e-3);
	}
}

/* The Pfa the tables come from against closed forms it does not use for
 * go/so: one empty half is ca over the other. */
static void test_pfa_model(void **state)
{
	(void)state;
	for (double a = 5; a <= 20; a += 5) {
		double ca = pow(1.0 + a / 40.0, -40.0);

		assert_float_equal(radar_cfar_pfa(PC_CFAR_CA, 1, 40, 20, 16, 0, a), ca, ca * 1e-9);
		assert_float_equal(radar_cfar_pfa(PC_CFAR_GO, 1, 44, 0, 40, 0, a), ca, ca * 1e-5);
		assert_float_equal(radar_cfar_pfa(PC_CFAR_SO, 1, 44, 40, 0, 0, a), ca, ca * 1e-5);
		/* go is the max of the two halves: fewer crossings than so */
		assert_true(radar_cfar_pfa(PC_CFAR_GO, 2, 44, 20, 20, 0, a) <
			    radar_cfar_pfa(PC_CFAR_SO, 2, 44, 20, 20, 0, a));
	}
	/* C = 2 ca: 1 - ... sum of two terms; os numeric (C = 2) vs its limit
	 * k = N, where the max of N cells is rarely below a cell */
	assert_true(radar_cfar_pfa(PC_CFAR_OS, 2, 30, 0, 0, 20, 3.0) > 0.0);
}

/* ---- detection -------------------------------------------------------------- */

/* Add a target of amplitude A per pulse and channel at gate n, Doppler bin
 * m (of Nd = P): power A^2 P per channel in the map. */
static void add_target(float *x, unsigned C, unsigned P, unsigned R, unsigned n, double m,
		       double A, double phase)
{
	for (unsigned c = 0; c < C; c++)
		for (unsigned q = 0; q < P; q++) {
			double t = 2 * M_PI * m * q / P + phase + c;
			float *s = x + 2 * (((size_t)c * P + q) * R + n);

			s[0] += (float)(A * cos(t));
			s[1] += (float)(A * sin(t));
		}
}

/* 15 dB over the integrated noise: found at its gate and bin in >= 99 %
 * of CPIs, with its range and velocity. */
static void test_target_detected(void **state)
{
	const unsigned C = 2, P = 32, R = 256, n0 = 100, ncpi = 200;
	const int m0 = -5;
	struct pc_params p;
	struct pc *pc;
	float *x;
	void *det;
	const struct chirp_det_header *hd;
	unsigned hits = 0;
	double A = sqrt(pow(10.0, 1.5) / P);   /* A^2 P C / (C x noise 1) = 15 dB */

	(void)state;
	seed(404);
	base(&p, C, P, R);
	p.out_mode = PC_OUT_NONE;
	p.radar.cfar = 1;
	p.radar.pfa = 1e-6;
	p.radar.sample_rate_hz = 10e6;
	p.radar.prf_hz = 2000;
	p.radar.carrier_hz = 3e9;
	p.radar.velocity = 1;
	pc = make(&p);
	x = xalloc((size_t)C * P * R * 8);
	det = xalloc(pc_det_bytes(pc));
	hd = det;
	for (unsigned i = 0; i < ncpi; i++) {
		gauss_fill(x, (size_t)C * P * R, 1.0);
		add_target(x, C, P, R, n0, m0, A, u01() * 2 * M_PI);
		run(pc, x, NULL, det);
		assert_int_equal(hd->flags, CHIRP_DET_INTEGRATED);
		assert_int_equal(hd->maps, 1);
		assert_int_equal(hd->doppler_bins, 32);
		assert_int_equal(hd->range_gates, R);
		for (uint32_t r = 0; r < hd->count; r++) {
			const struct chirp_det_record *d = &records(det)[r];

			if (d->range_gate != n0 || d->doppler_bin != m0)
				continue;
			hits++;
			assert_int_equal(d->channel, CHIRP_DET_CHANNEL_ALL);
			assert_float_equal(d->range_m, n0 * RADAR_C_MPS / (2 * 10e6), 1e-2);
			assert_float_equal(d->velocity_mps, m0 * 2000.0 / 32 * RADAR_C_MPS / (2 * 3e9),
					   1e-3);
			assert_true(d->velocity_mps < 0);   /* negative bin: opening */
			assert_float_equal(d->snr_db, 10 * log10(d->power / d->noise), 1e-3);
		}
	}
	printf("test_radar: 15 dB target found in %u of %u CPIs\n", hits, ncpi);
	assert_true(hits >= ncpi * 99 / 100);
	free(x);
	free(det);
	pc_destroy(pc);
}

/*
 * A strong target spread over Doppler bins (an off-bin tone through the
 * Blackman window's main lobe, whose far sidelobes stay under the noise)
 * and over two range gates (a reference of two equal samples) crosses in
 * several cells but is one detection, at its peak.
 */
static void test_one_detection_per_target(void **state)
{
	const unsigned P = 32, R = 200;
	static const float ref2[4] = { 1, 0, 1, 0 };   /* an echo peaks at two gates */
	struct pc_params p;
	struct pc *pc;
	float *x, win[32];
	void *det;
	const struct chirp_det_header *hd;

	(void)state;
	seed(505);
	for (unsigned q = 0; q < P; q++)
		win[q] = (float)(0.42 - 0.5 * cos(2 * M_PI * q / (P - 1)) +
				 0.08 * cos(4 * M_PI * q / (P - 1)));
	base(&p, 1, P, R);
	p.ref = ref2;
	p.ref_len = 2;
	p.out_mode = PC_OUT_NONE;
	p.radar.cfar = 1;
	p.radar.pfa = 1e-6;
	p.radar.window = win;
	pc = make(&p);
	x = xalloc((size_t)P * R * 8);
	det = xalloc(pc_det_bytes(pc));
	hd = det;
	for (int i = 0; i < 20; i++) {
		unsigned near = 0;

		gauss_fill(x, (size_t)P * R, 1.0);
		add_target(x, 1, P, R, 120, 3.3, 40.0, u01() * 2 * M_PI);   /* ~ 47 dB */
		run(pc, x, NULL, det);
		assert_true(hd->crossings >= 4);
		for (uint32_t r = 0; r < hd->count; r++) {
			const struct chirp_det_record *d = &records(det)[r];

			if (d->range_gate >= 110 && d->range_gate <= 130) {
				near++;
				assert_int_equal(d->doppler_bin, 3);
				assert_true(d->range_gate == 119 || d->range_gate == 120);
			}
		}
		assert_int_equal(near, 1);
	}
	free(x);
	free(det);
	pc_destroy(pc);
}

/* Equal cells: the one of lowest index k R + n is the detection. Nd = 4
 * and nfft = 4 have only exact twiddles (+-1, +-i), so the plateau is
 * exact. */
static void test_ties(void **state)
{
	struct pc_params p;
	struct pc *pc;
	float x[4 * 4 * 2] = { 0 };
	void *det;
	const struct chirp_det_header *hd;

	(void)state;
	base(&p, 1, 4, 4);
	p.out_mode = PC_OUT_NONE;
	p.radar.cfar = 1;
	p.radar.guard_range = 0;
	p.radar.guard_doppler = 0;
	p.radar.train_range = 1;
	p.radar.train_doppler = 1;
	p.radar.pfa = 0.5;
	p.radar.maxima_range = 1;
	p.radar.maxima_doppler = 1;
	pc = make(&p);
	det = xalloc(pc_det_bytes(pc));
	hd = det;
	for (unsigned q = 0; q < 4; q++)   /* zero Doppler at gates 1, 2, 3 */
		for (unsigned n = 1; n < 4; n++)
			x[2 * (q * 4 + n)] = 1.0f;
	for (int rep = 0; rep < 3; rep++) {
		run(pc, x, NULL, det);
		assert_int_equal(hd->count, 1);
		assert_int_equal(records(det)[0].range_gate, 1);
		assert_int_equal(records(det)[0].doppler_bin, 0);
		assert_float_equal(records(det)[0].power, 4.0, 0.0);
		assert_true(isnan(records(det)[0].range_m));
		assert_true(isnan(records(det)[0].velocity_mps));
		assert_int_equal(hd->flags, CHIRP_DET_INTEGRATED | CHIRP_DET_NO_VELOCITY);
	}
	free(det);
	pc_destroy(pc);
}

/* More detections than fit: the first max in (channel, bin, gate) order,
 * found counts them all, the overflow flag is set. */
static void test_overflow(void **state)
{
	const unsigned C = 2, P = 16, R = 300;
	struct pc_params p;
	struct pc *small, *big;
	float *x;
	void *d1, *d2;
	const struct chirp_det_header *h1, *h2;

	(void)state;
	seed(606);
	base(&p, C, P, R);
	p.out_mode = PC_OUT_NONE;
	p.radar.cfar = 1;
	p.radar.integrate = 0;
	p.radar.max_detections = 1024;
	big = make(&p);
	p.radar.max_detections = 5;
	small = make(&p);
	assert_int_equal(pc_det_bytes(small), CHIRP_DET_BYTES(5));
	x = xalloc((size_t)C * P * R * 8);
	d1 = xalloc(pc_det_bytes(small));
	d2 = xalloc(pc_det_bytes(big));
	h1 = d1;
	h2 = d2;
	gauss_fill(x, (size_t)C * P * R, 1.0);
	for (unsigned t = 0; t < 20; t++)
		add_target(x, C, P, R, 20 + 13 * t, (double)(t % 7) - 3.0, 3.0, t);
	run(small, x, NULL, d1);
	run(big, x, NULL, d2);
	assert_true(h2->found >= 40);   /* 20 targets in 2 channels */
	assert_int_equal(h2->count, h2->found);
	assert_int_equal(h2->flags & CHIRP_DET_OVERFLOW, 0);
	assert_int_equal(h1->count, 5);
	assert_int_equal(h1->found, h2->found);
	assert_int_equal(h1->crossings, h2->crossings);
	assert_true(h1->flags & CHIRP_DET_OVERFLOW);
	assert_int_equal(memcmp(records(d1), records(d2), 5 * sizeof(struct chirp_det_record)), 0);
	for (uint32_t r = 1; r < h2->count; r++) {   /* (channel, bin, gate) ascending */
		const struct chirp_det_record *a = &records(d2)[r - 1], *b = &records(d2)[r];

		assert_true(a->channel < b->channel ||
			    (a->channel == b->channel && (a->doppler_bin < b->doppler_bin ||
			     (a->doppler_bin == b->doppler_bin && a->range_gate < b->range_gate))));
	}
	free(x);
	free(d1);
	free(d2);
	pc_destroy(small);
	pc_destroy(big);
}

/*
 * A NaN in the input: the row is counted; compression spreads it over the
 * row (an FFT), so the channel's map is NaN, and no cell of it crosses
 * (noise NaN); the other channel is detected as usual.
 */
static void test_nonfinite(void **state)
{
	const unsigned C = 2, P = 16, R = 128;
	struct pc_params p;
	struct pc *pc;
	float *x, *out;
	void *det;
	const struct chirp_det_header *hd;
	struct pc_job j;
	uint32_t nf = 0;
	int found = 0;

	(void)state;
	seed(707);
	base(&p, C, P, R);
	p.out_mode = PC_OUT_MAP_DB;
	p.radar.cfar = 1;
	p.radar.integrate = 0;
	pc = make(&p);
	x = xalloc((size_t)C * P * R * 8);
	out = xalloc(pc_out_bytes(pc));
	det = xalloc(pc_det_bytes(pc));
	hd = det;
	gauss_fill(x, (size_t)C * P * R, 1.0);
	add_target(x, C, P, R, 100, 2, 10.0, 0.0);
	x[2 * ((size_t)(0 * P + 5) * R + 30)] = NAN;   /* channel 0, pulse 5, gate 30 */
	j = (struct pc_job){ .in = x, .out = out, .det = det, .tag = 1 };
	assert_int_equal(pc_execute_job(pc, &j, &nf), 0);
	assert_int_equal(nf, 1);
	for (size_t i = 0; i < (size_t)16 * R; i++) {
		assert_true(isnan(out[i]));                  /* channel 0 */
		assert_false(isnan(out[16 * R + i]));        /* channel 1 */
	}
	for (uint32_t r = 0; r < hd->count; r++) {
		const struct chirp_det_record *d = &records(det)[r];

		assert_int_equal(d->channel, 1);
		assert_false(isnan(d->noise));
		found |= d->range_gate == 100 && d->doppler_bin == 2;
	}
	assert_true(found);
	free(x);
	free(out);
	free(det);
	pc_destroy(pc);
}

/* ---- CFAR against the definition, cell by cell ------------------------------ */

/* The statistic at (k, n) of map m (Nd x R), straight from pc.h, in
 * double: the training cells by their offsets, the halves by dn's sign,
 * os by sorting. */
static double ref_stat(const double *m, unsigned Nd, unsigned R, const struct pc_radar *r,
		       unsigned rank, unsigned k, unsigned n)
{
	long gd = r->guard_doppler, td = r->train_doppler, gr = r->guard_range, tr = r->train_range;
	double sum = 0, lead = 0, lag = 0, v[1024];
	unsigned cnt = 0, nl = 0, ng = 0;

	for (long dk = -(gd + td); dk <= gd + td; dk++)
		for (long dn = -(gr + tr); dn <= gr + tr; dn++) {
			long nn = (long)n + dn, kk = (((long)k + dk) % (long)Nd + Nd) % Nd;
			double x;

			if (nn < 0 || nn >= (long)R || (labs(dk) <= gd && labs(dn) <= gr))
				continue;
			x = m[kk * R + nn];
			v[cnt++] = x;
			sum += x;
			if (dn < 0) {
				lead += x;
				nl++;
			} else if (dn > 0) {
				lag += x;
				ng++;
			}
		}
	switch (r->method) {
	case PC_CFAR_CA:
		return sum / cnt;
	case PC_CFAR_GO:
	case PC_CFAR_SO:
		if (!nl)
			return lag / ng;
		if (!ng)
			return lead / nl;
		return r->method == PC_CFAR_GO ? fmax(lead / nl, lag / ng) : fmin(lead / nl, lag / ng);
	case PC_CFAR_OS:
		for (unsigned i = 1; i < cnt; i++)   /* insertion sort */
			for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
				double t = v[j];

				v[j] = v[j - 1];
				v[j - 1] = t;
			}
		return v[rank - 1];
	}
	return NAN;
}

/* The cell (k, n) of the float map m is a local maximum (pc.h's rule). */
static int ref_local_max(const float *m, unsigned Nd, unsigned R, unsigned md, unsigned mr,
			 unsigned k, unsigned n)
{
	size_t idx = (size_t)k * R + n;

	for (long dk = -(long)md; dk <= (long)md; dk++)
		for (long dn = -(long)mr; dn <= (long)mr; dn++) {
			long nn = (long)n + dn, kk = (((long)k + dk) % (long)Nd + Nd) % Nd;
			size_t j;

			if (nn < 0 || nn >= (long)R || (dk == 0 && dn == 0))
				continue;
			j = (size_t)kk * R + (size_t)nn;
			if (j < idx ? !(m[idx] > m[j]) : !(m[idx] >= m[j]))
				return 0;
		}
	return 1;
}

/*
 * The same CPI with maxima 2 (range) / 1 (Doppler): the list is exactly
 * the crossings of all (the list det of maxima 0/0) that are local maxima
 * of the map, in order. The integrated map is summed in float in channel
 * order, as the chain sums it.
 */
static void check_maxima(const struct pc_params *p0, const float *x, const float *out,
			 const void *all)
{
	struct pc_params p = *p0;
	const struct chirp_det_header *ha = all, *hd;
	unsigned C = p.channels, R = p.samples, Nd, want = 0;
	struct pc_info info;
	struct pc *pc;
	float *isum = NULL;
	void *det;

	p.radar.maxima_range = 2;
	p.radar.maxima_doppler = 1;
	p.out_mode = PC_OUT_NONE;
	pc = make(&p);
	pc_get_info(pc, &info);
	Nd = info.doppler_nfft;
	det = xalloc(pc_det_bytes(pc));
	hd = det;
	run(pc, x, NULL, det);
	if (p.radar.integrate) {
		isum = calloc((size_t)Nd * R, sizeof(*isum));
		assert_non_null(isum);
		for (unsigned c = 0; c < C; c++)
			for (size_t i = 0; i < (size_t)Nd * R; i++)
				isum[i] += out[c * (size_t)Nd * R + i];
	}
	assert_int_equal(hd->crossings, ha->crossings);
	for (uint32_t j = 0; j < ha->count; j++) {
		const struct chirp_det_record *a = &records(all)[j];
		unsigned k = (unsigned)(a->doppler_bin + (int)Nd / 2);
		const float *m = isum ? isum : out + (size_t)a->channel * Nd * R;

		if (!ref_local_max(m, Nd, R, 1, 2, k, a->range_gate))
			continue;
		assert_true(want < hd->count);
		assert_int_equal(memcmp(a, &records(det)[want], sizeof(*a)), 0);
		want++;
	}
	assert_int_equal(want, hd->count);
	assert_true(hd->count < ha->count);
	free(isum);
	free(det);
	pc_destroy(pc);
}

/*
 * Every crossing (maxima 0/0 lists them all, pfa 0.1 makes many) and its
 * noise against ref_stat on the map the pc wrote, with the tables of
 * radar_setup_make; cells within 1e-4 of their threshold may go either
 * way (float against double).
 */
static void test_cfar_reference(void **state)
{
	const unsigned C = 2, P = 8, R = 60;

	(void)state;
	seed(909);
	for (int m = PC_CFAR_CA; m <= PC_CFAR_OS; m++)
		for (int integ = 0; integ < 2; integ++) {
			struct pc_params p;
			struct radar_setup rs;
			struct pc *pc;
			float *x, *out;
			double *map;
			void *det;
			const struct chirp_det_header *hd;
			unsigned Nd, maps, listed = 0, expected = 0;
			char err[256];

			base(&p, C, P, R);
			p.out_mode = PC_OUT_MAP_POWER;
			p.radar.cfar = 1;
			p.radar.method = (enum pc_cfar)m;
			p.radar.integrate = integ;
			p.radar.pfa = 0.1;
			p.radar.guard_range = 1;
			p.radar.train_range = 3;
			p.radar.maxima_range = 0;
			p.radar.maxima_doppler = 0;
			assert_int_equal(radar_setup_make(&rs, &p, err, sizeof(err)), 0);
			pc = make(&p);
			Nd = rs.nd;
			maps = rs.maps;
			x = xalloc((size_t)C * P * R * 8);
			out = xalloc(pc_out_bytes(pc));
			det = xalloc(pc_det_bytes(pc));
			hd = det;
			map = calloc((size_t)maps * Nd * R, sizeof(*map));
			assert_non_null(map);
			gauss_fill(x, (size_t)C * P * R, 1.0);
			add_target(x, C, P, R, 3, 2, 3.0, 0);    /* at an edge */
			add_target(x, C, P, R, 20, -1, 1.0, 0);
			run(pc, x, out, det);
			for (unsigned c = 0; c < C; c++)
				for (size_t i = 0; i < (size_t)Nd * R; i++)
					map[(integ ? 0 : c) * (size_t)Nd * R + i] += out[c * (size_t)Nd * R + i];
			for (unsigned mi = 0; mi < maps; mi++)
				for (unsigned k = 0; k < Nd; k++)
					for (unsigned n = 0; n < R; n++) {
						const double *mm = map + (size_t)mi * Nd * R;
						double s = ref_stat(mm, Nd, R, &p.radar, rs.rank[n], k, n);
						double noise = s * rs.norm[n], thr = rs.alpha[n] * noise;
						double v = mm[k * R + n];
						const struct chirp_det_record *d = NULL;

						for (uint32_t j = 0; j < hd->count; j++) {
							const struct chirp_det_record *e = &records(det)[j];

							if (e->range_gate == n && e->doppler_bin == (int)k - (int)Nd / 2 &&
							    e->channel == (integ ? -1 : (int)mi))
								d = e;
						}
						if (fabs(v - thr) <= 1e-4 * thr) {
							listed += d != NULL;
							expected += d != NULL;
							continue;
						}
						if (v > thr) {
							expected++;
							if (!d)
								fail_msg("cfar %d integ %d: (map %u, k %u, n %u) %g > %g not listed",
									 m, integ, mi, k, n, v, thr);
							assert_float_equal(d->noise, noise, 1e-5 * noise);
							assert_float_equal(d->power, v, 1e-5 * v);
						} else if (d) {
							fail_msg("cfar %d integ %d: (map %u, k %u, n %u) %g <= %g listed",
								 m, integ, mi, k, n, v, thr);
						}
						listed += d != NULL;
					}
			assert_int_equal(listed, hd->count);
			assert_int_equal(hd->crossings, hd->count);
			assert_true(expected > 20);
			check_maxima(&p, x, out, det);
			free(map);
			free(x);
			free(out);
			free(det);
			radar_setup_free(&rs);
			pc_destroy(pc);
		}
}

/* The chain's stages run on the backend's threads: any thread count gives
 * the same map and list, bit for bit, CPI after CPI (the compression
 * jobs and the chain's jobs take turns on one pool). */
static void test_threads_same(void **state)
{
	const unsigned C = 3, P = 20, R = 300;
	struct pc_params p;
	struct pc *one, *many;
	float *x, *o1, *o2;
	void *d1, *d2;

	(void)state;
	seed(808);
	base(&p, C, P, R);
	p.out_mode = PC_OUT_MAP_DB;
	p.radar.cfar = 1;
	p.radar.integrate = 0;
	p.radar.mti = PC_MTI_TWO;
	one = make(&p);
	p.cpu_threads = 3;
	p.idle_spin_us = 200;   /* workers polling, take-over on */
	many = make(&p);
	x = xalloc((size_t)C * P * R * 8);
	o1 = xalloc(pc_out_bytes(one));
	o2 = xalloc(pc_out_bytes(one));
	d1 = xalloc(pc_det_bytes(one));
	d2 = xalloc(pc_det_bytes(one));
	for (int i = 0; i < 10; i++) {
		gauss_fill(x, (size_t)C * P * R, 1.0);
		add_target(x, C, P, R, 50 + 20 * i, 3 + i % 4, 3.0, i);   /* clear of MTI's notch */
		run(one, x, o1, d1);
		run(many, x, o2, d2);
		assert_int_equal(memcmp(o1, o2, pc_out_bytes(one)), 0);
		assert_int_equal(memcmp(d1, d2, pc_det_bytes(one)), 0);
		assert_true(((struct chirp_det_header *)d1)->count >= 1);
	}
	free(x);
	free(o1);
	free(o2);
	free(d1);
	free(d2);
	pc_destroy(one);
	pc_destroy(many);
}

/* ---- the interface ------------------------------------------------------------ */

static void test_submit_rules(void **state)
{
	struct pc_params p;
	struct pc *pc;
	struct pc_info info;
	float *x;
	void *det;
	struct pc_job j = { 0 };
	double cps = 0;
	char err[256];
	uint32_t nf;

	(void)state;
	base(&p, 2, 8, 64);
	p.out_mode = PC_OUT_NONE;
	p.radar.cfar = 1;
	p.radar.mti = PC_MTI_TWO;
	pc = make(&p);
	pc_get_info(pc, &info);
	assert_int_equal(info.pulses_mti, 7);
	assert_int_equal(info.doppler_nfft, 7);
	assert_int_equal(info.det_bytes, CHIRP_DET_BYTES(1024));
	assert_int_equal(pc_out_bytes(pc), 0);
	x = xalloc(pc_in_bytes(pc));
	det = xalloc(pc_det_bytes(pc));
	j.in = x;
	j.det = NULL;
	assert_int_equal(pc_submit_job(pc, &j), -EINVAL);   /* detecting: det required */
	j.det = (char *)det + 4;
	assert_int_equal(pc_submit_job(pc, &j), -EINVAL);   /* misaligned */
	j.det = det;
	assert_int_equal(pc_execute_job(pc, &j, &nf), 0);   /* out NULL: nothing to write */
	assert_int_equal(((struct chirp_det_header *)det)->magic, CHIRP_DET_MAGIC);
	assert_int_equal(pc_execute(pc, x, NULL, &nf), 0);  /* its own list */
	assert_int_equal(pc_calibrate(pc, &cps, err, sizeof(err)), 0);
	assert_true(cps > 0);
	pc_destroy(pc);

	/* complex out with the chain on: the cube as without it */
	base(&p, 1, 4, 16);
	pc = make(&p);
	pc_get_info(pc, &info);
	assert_int_equal(info.doppler_nfft, 4);
	assert_int_equal(pc_det_bytes(pc), 0);
	assert_int_equal(pc_out_bytes(pc), 4 * 16 * 8);
	pc_destroy(pc);
	free(x);
	free(det);
}

/*
 * A CPI of an unknown mode (pc_write_skipped): both map outputs all NaN
 * (0 dB or 0 would pass for data), the list empty and flagged SKIPPED with
 * the map's size; a computed CPI of the same pc has neither.
 */
static void test_skipped_cpi(void **state)
{
	const unsigned C = 2, P = 9, R = 40;

	(void)state;
	for (int om = PC_OUT_MAP_POWER; om <= PC_OUT_MAP_DB; om++) {
		struct pc_params p;
		struct pc *pc;
		float *x, *out;
		void *det;
		const struct chirp_det_header *hd;
		size_t nf;

		base(&p, C, P, R);
		p.out_mode = (enum pc_output)om;
		p.radar.mti = PC_MTI_TWO;
		p.radar.cfar = 1;
		p.radar.integrate = 0;
		pc = make(&p);
		nf = pc_out_bytes(pc) / sizeof(float);
		assert_int_equal(nf, (size_t)C * 8 * R);   /* Nd = P' = 8 */
		x = xalloc((size_t)C * P * R * 8);
		out = xalloc(pc_out_bytes(pc));
		det = xalloc(pc_det_bytes(pc));
		hd = det;
		memset(det, 0xa5, pc_det_bytes(pc));
		assert_false(pc_has_mode(pc, 5));
		pc_write_skipped(pc, out, det, 5);
		for (size_t i = 0; i < nf; i++)
			if (!isnan(out[i]))
				fail_msg("%s: skipped map value %zu is %g, not NaN",
					 pc_output_name(p.out_mode), i, out[i]);
		assert_int_equal(hd->magic, CHIRP_DET_MAGIC);
		assert_int_equal(hd->version, CHIRP_DET_VERSION);
		assert_int_equal(hd->record_bytes, sizeof(struct chirp_det_record));
		assert_int_equal(hd->mode, 5);
		assert_int_equal(hd->flags, CHIRP_DET_SKIPPED);
		assert_int_equal(hd->count, 0);
		assert_int_equal(hd->found, 0);
		assert_int_equal(hd->maps, 0);
		assert_int_equal(hd->cells, 0);
		assert_int_equal(hd->crossings, 0);
		assert_int_equal(hd->doppler_bins, 8);
		assert_int_equal(hd->range_gates, R);
		seed(77);
		gauss_fill(x, (size_t)C * P * R, 1.0);
		run(pc, x, out, det);
		for (size_t i = 0; i < nf; i++)
			assert_true(isfinite(out[i]));
		assert_int_equal(hd->flags & CHIRP_DET_SKIPPED, 0);
		assert_int_equal(hd->maps, C);
		free(x);
		free(out);
		free(det);
		pc_destroy(pc);
	}
}

static void expect_reject(const struct pc_params *p, const char *needle)
{
	char err[256];

	assert_int_equal(pc_params_check(p, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("expected \"%s\" in \"%s\"", needle, err);
}

static void test_checks(void **state)
{
	struct pc_params p;
	char err[256];

	(void)state;
	base(&p, 1, 128, 16);
	p.radar.mti = PC_MTI_THREE;
	p.radar.nfft = 100;
	expect_reject(&p, "Doppler FFT length 100 is shorter than the 126 pulses left after MTI");
	base(&p, 1, 2, 16);
	p.radar.mti = PC_MTI_THREE;
	expect_reject(&p, "mti three_pulse needs at least 3 pulses");
	base(&p, 1, 1, 16);
	p.radar.mti = PC_MTI_TWO;
	expect_reject(&p, "mti two_pulse needs at least 2 pulses");
	base(&p, 1, 32, 16);
	p.radar.cfar = 1;
	expect_reject(&p, "CFAR window of 2 x (guard_range 2 + train_range 8) + 1 = 21 gates is wider than the 16 range gates");
	base(&p, 1, 4, 100);
	p.radar.cfar = 1;
	expect_reject(&p, "CFAR window of 2 x (guard_doppler 1 + train_doppler 2) + 1 = 7 bins is wider than the 4 Doppler bins");
	base(&p, 1, 32, 100);
	p.radar.cfar = 1;
	p.radar.pfa = 1.5;
	expect_reject(&p, "pfa 1.5 must be in (0, 1)");
	p.radar.pfa = 0;
	expect_reject(&p, "pfa 0 must be in (0, 1)");
	p.radar.pfa = NAN;
	expect_reject(&p, "must be in (0, 1)");
	base(&p, 1, 32, 100);
	p.radar.velocity = 1;
	p.radar.prf_hz = 1000;
	expect_reject(&p, "velocity = on needs prf_hz and carrier_hz");
	base(&p, 1, 32, 100);
	p.radar.doppler = 0;
	p.radar.cfar = 1;
	expect_reject(&p, "[cfar] needs [doppler] enable = true");
	p.radar.cfar = 0;
	p.out_mode = PC_OUT_MAP_DB;
	expect_reject(&p, "output mode map_db needs [doppler] enable = true");
	base(&p, 1, 32, 100);
	p.out_mode = PC_OUT_NONE;
	expect_reject(&p, "output mode none leaves detections as the only result");
	base(&p, 1, 32, 100);
	p.radar.cfar = 1;
	p.radar.method = PC_CFAR_GO;
	p.radar.train_range = 0;
	expect_reject(&p, "cfar go needs train_range >= 1");
	p.radar.method = PC_CFAR_SO;
	expect_reject(&p, "cfar so needs train_range >= 1");
	p.radar.method = PC_CFAR_CA;
	p.radar.train_doppler = 0;
	expect_reject(&p, "no training cell");
	base(&p, 1, 32, 100);
	p.radar.cfar = 1;
	p.radar.method = PC_CFAR_OS;
	p.radar.train_range = 20;   /* 7 x 45 - 15 = 300 cells */
	expect_reject(&p, "os CFAR sorts at most 256 training cells per cell, this window has 300");
	p.radar.train_range = 8;    /* 7 x 21 - 15 = 132 */
	p.radar.os_rank = 133;
	expect_reject(&p, "os_rank 133 exceeds the 132 training cells (1..132");
	p.radar.os_rank = 132;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
	p.radar.max_detections = 0;
	expect_reject(&p, "max_detections 0 must be 1..");
	p.radar.max_detections = PC_MAX_DETECTIONS + 1;
	expect_reject(&p, "max_detections");
	p.radar.max_detections = 10;
	p.radar.maxima_doppler = 16;
	expect_reject(&p, "maxima_doppler 16");
	base(&p, 1, 32, 100);
	p.radar.prf_hz = -1;
	expect_reject(&p, "prf_hz -1 must be finite and >= 0");
	base(&p, 1, 32, 100);
	p.radar.mti = (enum pc_mti)5;
	expect_reject(&p, "mti 5: unknown");
	base(&p, 1, 32, 100);
	p.radar.cfar = 1;
	p.radar.method = (enum pc_cfar)9;
	expect_reject(&p, "cfar method 9: unknown");
	base(&p, 1, 4, 100);
	{
		float zero[4] = { 0 };

		p.radar.window = zero;
		expect_reject(&p, "doppler window is all zeros");
	}
	/* doppler off: the rest is not looked at */
	base(&p, 1, 1, 10);
	p.radar.doppler = 0;
	p.radar.mti = PC_MTI_THREE;
	p.radar.pfa = 7;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_submit_rules),
		cmocka_unit_test(test_skipped_cpi),
		cmocka_unit_test(test_pfa_model),
		cmocka_unit_test(test_maps_reference),
		cmocka_unit_test(test_map_tone_and_gain),
		cmocka_unit_test(test_mti_noise_per_bin),
		cmocka_unit_test(test_snr_near_notch),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_one_detection_per_target),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_nonfinite),
		cmocka_unit_test(test_threads_same),
		cmocka_unit_test(test_cfar_reference),
		cmocka_unit_test(test_target_detected),
		cmocka_unit_test(test_fa_ca),
		cmocka_unit_test(test_fa_go_so_os),
		cmocka_unit_test(test_fa_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
