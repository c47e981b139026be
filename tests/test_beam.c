/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_beam.c — the array, beams, beamforming, MVDR and monopulse
 * (array.h, beam.h, mvdr.h, monopulse.h) against independent double-
 * precision references (direct sums, a pivoted Gaussian solve), at sizes
 * that are not powers of two; a jammer nulled by MVDR; the monopulse
 * angle's RMS error against the Cramer-Rao bound; every refusal.
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
#include <unistd.h>
#include <cmocka.h>

#include "array.h"
#include "beam.h"
#include "chirp/pc.h"
#include "monopulse.h"
#include "mvdr.h"
#include "workpool.h"

#define CARRIER_HZ 3e9
#define LAMBDA (BEAM_C0_MPS / CARRIER_HZ)

/* --- deterministic random numbers ------------------------------------- */

#define TEST_RNG_SEED 0x9e3779b97f4a7c15ull
#include "test_rng.h"

static void assert_contains(const char *s, const char *needle)
{
	if (!strstr(s, needle))
		fail_msg("\"%s\" does not contain \"%s\"", s, needle);
}

/* Independent steering: g_c exp(+j 2 pi / lambda k . p_c). */
static double complex ref_response(const double *pos, const double complex *g, unsigned c,
				   double u, double v)
{
	double w = sqrt(1 - u * u - v * v);
	double ph = 2 * M_PI / LAMBDA * (pos[3 * c] * u + pos[3 * c + 1] * v + pos[3 * c + 2] * w);

	return g[c] * cexp(I * ph);
}

static double complex wd_at(const double *w, unsigned C, unsigned b, unsigned c)
{
	return w[2 * ((size_t)b * C + c)] + I * w[2 * ((size_t)b * C + c) + 1];
}

/* --- the array and its files ------------------------------------------ */

static void expect_array_error(const char *text, unsigned C, const char *needle)
{
	char err[256] = "";
	struct array *a = array_parse(text, strlen(text), "a.txt", C, err, sizeof(err));

	if (a)
		fail_msg("array accepted: \"%s\"", text);
	assert_contains(err, needle);
}

static void expect_cal_error(const char *text, unsigned C, const char *needle)
{
	char err[256] = "";
	struct array *a = array_create_ula(C, 0.05, err, sizeof(err));
	double g[2];

	assert_non_null(a);
	assert_int_equal(array_cal_parse(a, "1 10\n1 20\n", 10, "c.txt", err, sizeof(err)), 0);
	if (array_cal_parse(a, text, strlen(text), "c.txt", err, sizeof(err)) == 0)
		fail_msg("calibration accepted: \"%s\"", text);
	assert_contains(err, needle);
	array_cal(a, 1, g);   /* the previous calibration stays */
	assert_true(fabs(g[0] - cos(20 * M_PI / 180)) < 1e-12);
	array_destroy(a);
}

static void test_array_files(void **state)
{
	const char *good = "# x y z, metres\n\n 0 0 0\n0.05\t0 0.01 # second\n0.1 0.02 0\r\n";
	char err[256] = "";
	struct array *a;
	double xyz[3], g[2];

	(void)state;
	a = array_parse(good, strlen(good), "a.txt", 3, err, sizeof(err));
	assert_non_null(a);
	array_position(a, 1, xyz);
	assert_true(xyz[0] == 0.05 && xyz[1] == 0 && xyz[2] == 0.01);
	array_position(a, 2, xyz);
	assert_true(xyz[0] == 0.1 && xyz[1] == 0.02);
	assert_false(array_has_cal(a));
	array_cal(a, 2, g);
	assert_true(g[0] == 1 && g[1] == 0);
	{
		const char *cal = "1 0\n2 90\n0.5 -180\n";

		assert_int_equal(array_cal_parse(a, cal, strlen(cal), "c.txt", err, sizeof(err)), 0);
	}
	array_cal(a, 1, g);
	assert_true(fabs(g[0]) < 1e-12 && fabs(g[1] - 2) < 1e-12);
	assert_true(array_has_cal(a));
	array_destroy(a);

	a = array_create_ula(5, 0.1, err, sizeof(err));
	assert_non_null(a);
	array_position(a, 0, xyz);
	assert_true(fabs(xyz[0] + 0.2) < 1e-15 && xyz[1] == 0 && xyz[2] == 0);
	array_position(a, 4, xyz);
	assert_true(fabs(xyz[0] - 0.2) < 1e-15);
	array_destroy(a);

	expect_array_error("0 0 0\n1 0 0\n", 3, "a.txt:2: 2 lines, expected one per channel (3)");
	expect_array_error("0 0 0\n1 0 0\n2 0 0\n3 0 0\n", 3, "a.txt:4: more lines than the 3 channels");
	expect_array_error("0 0 0\n1 nan 0\n2 0 0\n", 3, "a.txt:2: y_m: nan is not finite");
	expect_array_error("0 0 0\n1 0 inf\n2 0 0\n", 3, "a.txt:2: z_m: inf is not finite");
	expect_array_error("0 0 0\n1 0x 0\n2 0 0\n", 3, "a.txt:2: y_m: '0x' is not a number");
	expect_array_error("0 0 0\nabc\n2 0 0\n", 3, "a.txt:2: x_m: 'abc' is not a number");
	expect_array_error("0 0 0\n1 0\n2 0 0\n", 3, "a.txt:2: 2 numbers, expected 3 (x_m y_m z_m)");
	expect_array_error("0 0 0\n1 0 0 4\n2 0 0\n", 3, "a.txt:2: more than 3 numbers");
	expect_array_error("0 0 0\n1 0 0\n0 0 0\n", 3, "a.txt:3: channel 2 at the same position as channel 0 (line 1)");
	expect_array_error("0 0 0\n1 0 2e4\n", 2, "a.txt:2: z_m 20000: beyond");
	expect_array_error("", 2, "0 lines, expected one per channel (2)");
	{
		char nul[] = "0 0 0\n1 \0 0\n";

		assert_null(array_parse(nul, sizeof(nul) - 1, "a.txt", 2, err, sizeof(err)));
		assert_contains(err, "a.txt:2: a NUL byte");
	}
	expect_array_error("0 0 0\n", 0, "channels 0: must be 1..");
	assert_null(array_create_ula(4, 0.0, err, sizeof(err)));
	assert_contains(err, "spacing_m 0: must be > 0");
	assert_null(array_create_ula(4, NAN, err, sizeof(err)));
	assert_null(array_load("/nonexistent/array.txt", 2, err, sizeof(err)));
	assert_contains(err, "/nonexistent/array.txt: No such file");

	expect_cal_error("1 0\n0 0\n", 2, "c.txt:2: gain 0: must be > 0");
	expect_cal_error("1 0\n-1 0\n", 2, "c.txt:2: gain -1: must be > 0");
	expect_cal_error("1 0\ninf 0\n", 2, "c.txt:2: gain: inf is not finite");
	expect_cal_error("1 0\n1 nan\n", 2, "c.txt:2: phase_deg: nan is not finite");
	expect_cal_error("1 0\n", 2, "c.txt:1: 1 line, expected one per channel (2)");
	expect_cal_error("1 0\n1\n", 2, "c.txt:2: 1 number, expected 2 (gain phase_deg)");
}

static void test_array_load_file(void **state)
{
	char path[] = "/tmp/test_beam_XXXXXX", err[256];
	const char *text = "0 0 0\n0.05 0 0\n";
	struct array *a;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	a = array_load(path, 2, err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(array_cal_load(a, path, err, sizeof(err)), -EINVAL);
	assert_contains(err, ":1: more than 2 numbers");
	array_destroy(a);
	assert_null(array_load(path, 3, err, sizeof(err)));
	assert_contains(err, path);
	assert_contains(err, ":2: 2 lines, expected one per channel (3)");
	unlink(path);
}

/* --- beams and weights ------------------------------------------------- */

/* A 3-D array of C elements near a plane, with a random calibration. */
static struct array *random_array(unsigned C, double **pos_out, double complex **g_out)
{
	char text[8192], cal[4096], err[256];
	size_t n = 0, m = 0;
	double *pos = xcalloc(3 * C, sizeof(double));
	double complex *g = xcalloc(C, sizeof(double complex));
	struct array *a;

	for (unsigned c = 0; c < C; c++) {
		double gain = 0.5 + urand(), ph = 360 * urand() - 180;

		pos[3 * c] = (c - C / 2.0) * LAMBDA * 0.5 + 0.01 * (urand() - 0.5);
		pos[3 * c + 1] = 0.05 * (urand() - 0.5);
		pos[3 * c + 2] = 0.02 * (urand() - 0.5);
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%.17g %.17g %.17g\n", pos[3 * c],
				      pos[3 * c + 1], pos[3 * c + 2]);
		m += (size_t)snprintf(cal + m, sizeof(cal) - m, "%.17g %.17g\n", gain, ph);
		g[c] = gain * cexp(I * ph * M_PI / 180);
	}
	a = array_parse(text, n, "r.txt", C, err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(array_cal_parse(a, cal, m, "rc.txt", err, sizeof(err)), 0);
	*pos_out = pos;
	*g_out = g;
	return a;
}

static void test_weights_reference(void **state)
{
	enum { C = 13, B = 5 };
	double *pos, tap[C], tsum = 0, taz = 10, tel = 5, err_max = 0;
	double complex *g;
	struct array *a = random_array(C, &pos, &g);
	struct beam_params p;
	struct beam_set *s;
	char err[256];

	(void)state;
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = B;
	p.fan_az_deg = -4;
	p.fan_el_deg = 3;
	p.fan_spacing_u = 0.11;
	p.taper = WIN_TAYLOR;
	p.taylor_nbar = 4;
	p.taylor_sll_db = 30;
	s = beam_set_create(a, &p, err, sizeof(err));
	if (!s)
		fail_msg("%s", err);
	assert_int_equal(beam_set_point(s, taz, tel, err, sizeof(err)), 0);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 4, 30, tap, C), 0);
	for (unsigned c = 0; c < C; c++)
		tsum += tap[c];
	for (unsigned b = 0; b < B; b++) {
		/* fan centre + pointing, in u; v of the centre plus the pointing's */
		double u = sin(-4 * M_PI / 180) * cos(3 * M_PI / 180) + (b - 2.0) * 0.11 +
			   sin(taz * M_PI / 180) * cos(tel * M_PI / 180);
		double v = sin(3 * M_PI / 180) + sin(tel * M_PI / 180), bu, bv, pat[2], ng = 0;
		double complex gain = 0;

		beam_uv(s, b, &bu, &bv);
		assert_true(fabs(bu - u) < 1e-14 && fabs(bv - v) < 1e-14);
		for (unsigned c = 0; c < C; c++) {
			double complex a_c = ref_response(pos, g, c, u, v) / g[c];
			double complex ref = tap[c] * conj(a_c) / g[c] / tsum;
			double complex got = wd_at(beam_weights_d(s), C, b, c);
			const float *wf = beam_weights(s) + 2 * (b * C + c);

			err_max = fmax(err_max, cabs(got - ref) / cabs(ref));
			assert_true(cabs((wf[0] + I * wf[1]) - ref) <= 1e-6 * cabs(ref));
			gain += ref * ref_response(pos, g, c, u, v);
			ng += pow(cabs(ref * g[c]), 2);
		}
		assert_true(cabs(gain - 1) < 1e-12);        /* unit gain at the look direction */
		beam_pattern(s, beam_weights_d(s) + 2 * b * C, u, v, pat);
		assert_true(fabs(pat[0] - 1) < 1e-12 && fabs(pat[1]) < 1e-12);
		assert_true(fabs(beam_noise_gain(s, beam_weights_d(s) + 2 * b * C) - ng) < 1e-15);
	}
	assert_true(err_max < 1e-12);
	/* noise gain = 1 / (C eta) */
	{
		double t2 = 0, ng = beam_noise_gain(s, beam_weights_d(s));

		for (unsigned c = 0; c < C; c++)
			t2 += tap[c] * tap[c];
		assert_true(fabs(ng - t2 / (tsum * tsum)) < 1e-14);
	}
	beam_set_destroy(s);
	array_destroy(a);
	free(pos);
	free(g);
}

static struct array *ula(unsigned C)
{
	char err[256];
	struct array *a = array_create_ula(C, LAMBDA / 2, err, sizeof(err));

	assert_non_null(a);
	return a;
}

static void test_visible_region(void **state)
{
	struct array *a = ula(8);
	struct beam_params p;
	struct beam_set *s;
	double list[6] = { 0, 0, 30, 0, 95, 0 }, u, v, before[2 * 3 * 8];
	char err[256];

	(void)state;
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = 9;
	p.fan_spacing_u = 0.25;     /* beams at u = -1 .. 1: the last on endfire */
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	beam_uv(s, 8, &u, &v);
	assert_true(u == 1.0);
	beam_set_destroy(s);

	p.count = 10;               /* u = -1.125 .. 1.125 */
	assert_null(beam_set_create(a, &p, err, sizeof(err)));
	assert_string_equal(err, "fan: beam 0 at u -1.125, v 0: outside the visible region (u^2 + v^2 = 1.266 > 1)");

	p.layout = BEAM_LIST;
	p.count = 3;
	p.list_deg = list;
	assert_null(beam_set_create(a, &p, err, sizeof(err)));
	assert_contains(err, "beam 2 at az 95, el 0: outside the visible region");
	list[4] = 60;
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	memcpy(before, beam_weights_d(s), sizeof(before));
	/* beam 2 at u = sin 60 = 0.866: a pointing of 10 degrees adds sin 10 */
	assert_int_equal(beam_set_point(s, 10, 0, err, sizeof(err)), -EDOM);
	assert_contains(err, "pointing az 10, el 0: beam 2 at u 1.03967, v 0: outside the visible region");
	assert_memory_equal(before, beam_weights_d(s), sizeof(before));  /* kept */
	beam_uv(s, 2, &u, &v);
	assert_true(fabs(u - sin(M_PI / 3)) < 1e-15);
	assert_int_equal(beam_set_point(s, 0, 40, err, sizeof(err)), -EDOM);  /* u^2 + v^2 > 1 */
	assert_contains(err, "beam 2 at u 0.866025, v 0.642788");
	assert_int_equal(beam_set_point(s, NAN, 0, err, sizeof(err)), -EDOM);
	assert_contains(err, "pointing az nan, el 0: each must be within -90..90");
	assert_int_equal(beam_set_point(s, -5, 0, err, sizeof(err)), 0);
	beam_set_destroy(s);

	beam_params_init(&p);
	p.carrier_hz = 0;
	assert_null(beam_set_create(a, &p, err, sizeof(err)));
	assert_contains(err, "carrier_hz 0: must be a positive frequency");
	p.carrier_hz = CARRIER_HZ;
	p.count = 0;
	assert_null(beam_set_create(a, &p, err, sizeof(err)));
	assert_contains(err, "beams 0: must be 1..256");
	p.count = 3;
	p.fan_spacing_u = -0.1;
	assert_null(beam_set_create(a, &p, err, sizeof(err)));
	assert_contains(err, "fan spacing_u -0.1");
	array_destroy(a);
	{
		struct array *a2 = ula(2);

		p.fan_spacing_u = 0.1;
		p.taper = WIN_HANN;     /* 2 points of a symmetric hann: zeros */
		assert_null(beam_set_create(a2, &p, err, sizeof(err)));
		assert_contains(err, "taper hann over 2 channels sums to zero");
		array_destroy(a2);
	}
}

/* --- the beamforming product ------------------------------------------- */

static double rel_l2(const float *got, const double complex *ref, size_t n)
{
	double num = 0, den = 0;

	for (size_t i = 0; i < n; i++) {
		double complex d = got[2 * i] + I * got[2 * i + 1] - ref[i];

		num += creal(d * conj(d));
		den += creal(ref[i] * conj(ref[i]));
	}
	return sqrt(num / den);
}

static void test_beam_form_reference(void **state)
{
	enum { B = 7, C = 13, P = 5, R = 203 };
	size_t N = (size_t)P * R;
	float *W = xcalloc(2 * B * C, sizeof(float)), *X = xcalloc(2 * C * N, sizeof(float));
	float *Y = xcalloc(2 * B * N, sizeof(float)), *Y2 = xcalloc(2 * B * N, sizeof(float));
	double complex *ref = xcalloc(B * N, sizeof(double complex));

	(void)state;
	for (size_t i = 0; i < 2 * B * C; i++)
		W[i] = (float)(urand() - 0.5);
	for (size_t i = 0; i < 2 * C * N; i++)
		X[i] = (float)(urand() - 0.5);
	for (unsigned b = 0; b < B; b++)
		for (size_t n = 0; n < N; n++)
			for (unsigned c = 0; c < C; c++)
				ref[b * N + n] += (W[2 * (b * C + c)] + I * (double)W[2 * (b * C + c) + 1]) *
						  (X[2 * (c * N + n)] + I * (double)X[2 * (c * N + n) + 1]);
	beam_form(W, B, C, X, N, Y, N, 0, N);
	printf("beam_form %ux%u x %ux%zu: relative L2 %.3g\n", B, C, C, N, rel_l2(Y, ref, B * N));
	assert_true(rel_l2(Y, ref, B * N) <= 1e-5);
	/* Any split into column ranges gives the same bits. */
	beam_form(W, B, C, X, N, Y2, N, 0, 300);
	beam_form(W, B, C, X, N, Y2, N, 300, 301);
	beam_form(W, B, C, X, N, Y2, N, 301, N);
	assert_memory_equal(Y, Y2, 2 * B * N * sizeof(float));
	free(W);
	free(X);
	free(Y);
	free(Y2);
	free(ref);
}

/* Column blocks over a worker pool, as the CPU backend would run them. */
struct form_job {
	struct workpool *wp;
	const float *W, *X;
	float *Y;
	unsigned B, C;
	size_t N;
};

static void form_items(void *ctx, unsigned thread, uint64_t gen)
{
	struct form_job *j = ctx;
	size_t item;

	while (workpool_claim(j->wp, thread, gen, &item)) {
		size_t c0 = item * BEAM_FORM_COLS, c1 = c0 + BEAM_FORM_COLS < j->N ? c0 + BEAM_FORM_COLS : j->N;

		beam_form(j->W, j->B, j->C, j->X, j->N, j->Y, j->N, c0, c1);
		workpool_item_done(j->wp);
	}
}

static void test_beam_form_threads(void **state)
{
	enum { B = 9, C = 5, N = 3001 };
	float *W = xcalloc(2 * B * C, sizeof(float)), *X = xcalloc(2 * C * N, sizeof(float));
	float *Y = xcalloc(2 * B * N, sizeof(float)), *Y1 = xcalloc(2 * B * N, sizeof(float));
	struct form_job job = { .W = W, .X = X, .Y = Y, .B = B, .C = C, .N = N };
	struct workpool_params wp = { .threads = 3, .spin_ns = 0, .name = "beams", .fn = form_items,
				      .ctx = &job };
	char err[256];

	(void)state;
	for (size_t i = 0; i < 2 * B * C; i++)
		W[i] = (float)(urand() - 0.5);
	for (size_t i = 0; i < 2 * C * N; i++)
		X[i] = (float)(urand() - 0.5);
	beam_form(W, B, C, X, N, Y1, N, 0, N);
	job.wp = workpool_create(&wp, err, sizeof(err));
	if (!job.wp)
		fail_msg("%s", err);
	for (int rep = 0; rep < 3; rep++) {
		memset(Y, 0, 2 * B * N * sizeof(float));
		workpool_run(job.wp, (N + BEAM_FORM_COLS - 1) / BEAM_FORM_COLS, NULL);
		assert_memory_equal(Y, Y1, 2 * B * N * sizeof(float));
	}
	workpool_destroy(job.wp);
	free(W);
	free(X);
	free(Y);
	free(Y1);
}

/* --- before or after pulse compression --------------------------------- */

static void compress(unsigned rows, unsigned P, unsigned R, const float *h, size_t L,
		     const float *in, float *out)
{
	struct pc_params p;
	struct pc *pc;
	char err[256];

	pc_params_init(&p);
	p.channels = rows;
	p.pulses = P;
	p.samples = R;
	p.ref = h;
	p.ref_len = L;
	p.backend = PC_BACKEND_CPU;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	assert_int_equal(pc_execute(pc, in, out, NULL), 0);
	pc_destroy(pc);
}

static void test_before_after_pc(void **state)
{
	enum { C = 6, B = 4, P = 5, R = 257, L = 31 };
	size_t N = (size_t)P * R;
	struct array *a = ula(C);
	struct beam_params bp;
	struct beam_set *s;
	float h[2 * L], *X = xcalloc(2 * C * N, sizeof(float)), *Xc = xcalloc(2 * C * N, sizeof(float));
	float *Yb = xcalloc(2 * B * N, sizeof(float)), *Ya = xcalloc(2 * B * N, sizeof(float));
	float *Yt = xcalloc(2 * B * N, sizeof(float));
	double complex *ref = xcalloc(B * N, sizeof(double complex)), *bf = xcalloc(B * N, sizeof(double complex));
	double hn = 0, e_before, e_after, e_between;
	char err[256];

	(void)state;
	beam_params_init(&bp);
	bp.carrier_hz = CARRIER_HZ;
	bp.count = B;
	bp.fan_spacing_u = 0.3;
	bp.taper = WIN_HAMMING;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(beam_set_point(s, 12, 0, err, sizeof(err)), 0);
	for (int k = 0; k < 2 * L; k++) {
		h[k] = (float)(urand() - 0.5);
		hn += (double)h[k] * h[k];
	}
	for (size_t i = 0; i < 2 * C * N; i++)
		X[i] = (float)(urand() - 0.5);

	/* the reference: direct sums in double, beams then correlation */
	for (unsigned b = 0; b < B; b++)
		for (size_t n = 0; n < N; n++)
			for (unsigned c = 0; c < C; c++)
				bf[b * N + n] += wd_at(beam_weights_d(s), C, b, c) *
						 (X[2 * (c * N + n)] + I * (double)X[2 * (c * N + n) + 1]);
	for (unsigned b = 0; b < B; b++)
		for (unsigned p = 0; p < P; p++)
			for (unsigned n = 0; n < R; n++) {
				double complex acc = 0;

				for (unsigned k = 0; k < L && n + k < R; k++)
					acc += bf[b * N + p * R + n + k] * (h[2 * k] - I * (double)h[2 * k + 1]);
				ref[b * N + p * R + n] = acc / sqrt(hn);
			}

	beam_form(beam_weights(s), B, C, X, N, Yt, N, 0, N);    /* beams first */
	compress(B, P, R, h, L, Yt, Yb);
	compress(C, P, R, h, L, X, Xc);                         /* compression first */
	beam_form(beam_weights(s), B, C, Xc, N, Ya, N, 0, N);
	e_before = rel_l2(Yb, ref, B * N);
	e_after = rel_l2(Ya, ref, B * N);
	for (size_t i = 0; i < B * N; i++)
		bf[i] = Ya[2 * i] + I * (double)Ya[2 * i + 1];
	e_between = rel_l2(Yb, bf, B * N);
	printf("beams before compression %.3g, after %.3g, between the two %.3g (relative L2)\n",
	       e_before, e_after, e_between);
	assert_true(e_before <= 1e-5 && e_after <= 1e-5 && e_between <= 1e-5);
	beam_set_destroy(s);
	array_destroy(a);
	free(X);
	free(Xc);
	free(Yb);
	free(Ya);
	free(Yt);
	free(ref);
	free(bf);
}

/* --- MVDR --------------------------------------------------------------- */

/* x = A^-1 b by Gaussian elimination with partial pivoting (A: n x n,
 * destroyed). */
static void gauss_solve(double complex *A, double complex *b, double complex *x, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		unsigned piv = k;

		for (unsigned i = k + 1; i < n; i++)
			if (cabs(A[i * n + k]) > cabs(A[piv * n + k]))
				piv = i;
		for (unsigned j = 0; j < n; j++) {
			double complex t = A[k * n + j];

			A[k * n + j] = A[piv * n + j];
			A[piv * n + j] = t;
		}
		double complex t = b[k];
		b[k] = b[piv];
		b[piv] = t;
		for (unsigned i = k + 1; i < n; i++) {
			double complex f = A[i * n + k] / A[k * n + k];

			for (unsigned j = k; j < n; j++)
				A[i * n + j] -= f * A[k * n + j];
			b[i] -= f * b[k];
		}
	}
	for (unsigned i = n; i-- > 0;) {
		double complex s = b[i];

		for (unsigned j = i + 1; j < n; j++)
			s -= A[i * n + j] * x[j];
		x[i] = s / A[i * n + i];
	}
}

static void test_mvdr_reference(void **state)
{
	enum { C = 11, B = 3, P = 6, R = 97, K = 40 };
	size_t N = (size_t)P * R;
	double *pos;
	double complex *g, Rm[C * C], A[C * C], v[C], x[C], tr = 0;
	struct array *a = random_array(C, &pos, &g);
	struct beam_params bp;
	struct beam_set *s;
	struct mvdr_params mp;
	struct mvdr *m;
	float *X = xcalloc(2 * C * N, sizeof(float)), wf[2 * B * C];
	double wd[2 * B * C], cov_err = 0, w_err = 0, f_num = 0, f_den = 0;
	unsigned k = 0;
	char err[256];

	(void)state;
	beam_params_init(&bp);
	bp.carrier_hz = CARRIER_HZ;
	bp.count = B;
	bp.fan_spacing_u = 0.2;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(beam_set_point(s, -7, 2, err, sizeof(err)), 0);
	for (size_t i = 0; i < 2 * C * N; i++)
		X[i] = (float)(urand() - 0.5);
	mvdr_params_init(&mp);
	mp.snapshots = K;
	mp.first_gate = 5;
	mp.gate_stride = 7;
	mp.pulse_stride = 2;
	mp.loading = 0.05;
	m = mvdr_create(C, P, R, B, &mp, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	mvdr_covariance(m, X);

	/* R by direct sums over the rule's cells: pulses 0, 2, 4; gates 5, 12, ... 96 */
	memset(Rm, 0, sizeof(Rm));
	for (unsigned p = 0; p < P; p += 2)
		for (unsigned r = 5; r < R && k < K; r += 7, k++)
			for (unsigned i = 0; i < C; i++)
				for (unsigned j = 0; j < C; j++) {
					const float *xi = X + 2 * (i * N + p * R + r), *xj = X + 2 * (j * N + p * R + r);

					Rm[i * C + j] += (xi[0] + I * (double)xi[1]) * (xj[0] - I * (double)xj[1]) / K;
				}
	assert_int_equal(k, K);
	for (unsigned i = 0; i < C * C; i++)
		cov_err = fmax(cov_err, cabs(Rm[i] - (mvdr_covariance_d(m)[2 * i] + I * mvdr_covariance_d(m)[2 * i + 1])));
	assert_true(cov_err < 1e-14);

	assert_int_equal(mvdr_solve(m, s, wf, wd), 0);
	for (unsigned i = 0; i < C; i++)
		tr += Rm[i * C + i];
	for (unsigned b = 0; b < B; b++) {
		double u, vv;
		double complex q = 0, gain = 0;

		beam_uv(s, b, &u, &vv);
		for (unsigned c = 0; c < C; c++)
			v[c] = ref_response(pos, g, c, u, vv);
		memcpy(A, Rm, sizeof(A));
		for (unsigned i = 0; i < C; i++)
			A[i * C + i] += 0.05 * creal(tr) / C;
		gauss_solve(A, v, x, C);
		for (unsigned c = 0; c < C; c++)
			v[c] = ref_response(pos, g, c, u, vv);
		for (unsigned c = 0; c < C; c++)
			q += conj(v[c]) * x[c];
		for (unsigned c = 0; c < C; c++) {
			double complex ref = conj(x[c] / q), got = wd_at(wd, C, b, c);
			double complex gf = wf[2 * (b * C + c)] + I * wf[2 * (b * C + c) + 1];

			w_err = fmax(w_err, cabs(got - ref) / cabs(ref));
			f_num += creal((gf - ref) * conj(gf - ref));
			f_den += creal(ref * conj(ref));
			gain += got * v[c];
		}
		assert_true(cabs(gain - 1) < 1e-12);        /* distortionless */
	}
	printf("mvdr against a pivoted solve: double %.3g (max relative), float %.3g (relative L2)\n",
	       w_err, sqrt(f_num / f_den));
	assert_true(w_err < 1e-10);
	assert_true(sqrt(f_num / f_den) < 1e-6);

	/* zeros, NaN: not positive definite, nothing written */
	memset(X, 0, 2 * C * N * sizeof(float));
	mvdr_covariance(m, X);
	memset(wf, 0x7f, sizeof(wf));
	assert_int_equal(mvdr_solve(m, s, wf, NULL), -EDOM);
	assert_true(wf[0] == wf[1]);
	X[2 * (5)] = NAN;
	mvdr_covariance(m, X);
	assert_int_equal(mvdr_solve(m, s, wf, NULL), -EDOM);
	mvdr_destroy(m);

	/* the rule's refusals */
	mp.snapshots = 46;   /* 3 pulses x 14 gates = 42 cells */
	assert_null(mvdr_create(C, P, R, B, &mp, err, sizeof(err)));
	assert_string_equal(err, "mvdr: snapshots 46: the rule reaches 42 cells of the CPI");
	mp.snapshots = 8;
	mp.loading = 0;
	assert_null(mvdr_create(C, P, R, B, &mp, err, sizeof(err)));
	assert_contains(err, "snapshots 8 < 11 channels without loading");
	mp.loading = 0.01;
	mp.first_gate = R;
	assert_null(mvdr_create(C, P, R, B, &mp, err, sizeof(err)));
	assert_contains(err, "first_gate 97: must be below the 97 range samples");
	mp.first_gate = 0;
	assert_null(mvdr_create(65, P, R, B, &mp, err, sizeof(err)));
	assert_contains(err, "channels 65: must be 1..64");
	beam_set_destroy(s);
	array_destroy(a);
	free(X);
	free(pos);
	free(g);
}

static double db_of(const double *p)
{
	return 10 * log10(p[0] * p[0] + p[1] * p[1]);
}

/*
 * A noise jammer 40 dB over the noise at u = 0.6125 (in the conventional
 * beams' sidelobes, at least 0.0125 in u from any of their nulls), a target between two beams at -10 dB per sample (a
 * pulse before compression) in every training cell: the MVDR beams put the
 * jammer >= 30 dB lower than the conventional ones do, and the target's
 * gain moves < 1 dB.
 */
static void test_mvdr_jammer(void **state)
{
	enum { C = 16, B = 7, P = 8, R = 200 };
	size_t N = (size_t)P * R;
	const double uj = 0.6125, ut = 0.04, inr = 1e4, snr = 0.1;
	struct array *a = ula(C);
	struct beam_params bp;
	struct beam_set *s;
	struct mvdr_params mp;
	struct mvdr *m;
	float *X = xcalloc(2 * C * N, sizeof(float)), wf[2 * B * C];
	double wd[2 * B * C], rj[2 * C], rt[2 * C];
	char err[256];

	(void)state;
	beam_params_init(&bp);
	bp.carrier_hz = CARRIER_HZ;
	bp.count = B;
	bp.fan_spacing_u = 0.1;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	beam_response(s, uj, 0, rj);
	beam_response(s, ut, 0, rt);
	for (size_t n = 0; n < N; n++) {
		double complex j = cgauss(inr), t = sqrt(snr) * cexp(I * 2 * M_PI * urand());

		for (unsigned c = 0; c < C; c++) {
			double complex x = cgauss(1) + j * (rj[2 * c] + I * rj[2 * c + 1]) +
					   t * (rt[2 * c] + I * rt[2 * c + 1]);

			X[2 * (c * N + n)] = (float)creal(x);
			X[2 * (c * N + n) + 1] = (float)cimag(x);
		}
	}
	mvdr_params_init(&mp);
	mp.snapshots = 4 * C;
	mp.gate_stride = 3;
	mp.pulse_stride = 2;
	mp.loading = 1e-3;
	m = mvdr_create(C, P, R, B, &mp, err, sizeof(err));
	assert_non_null(m);
	mvdr_covariance(m, X);
	assert_int_equal(mvdr_solve(m, s, wf, wd), 0);
	for (unsigned b = 0; b < B; b++) {
		double cj[2], aj[2], ct[2], at[2];
		const double *wc = beam_weights_d(s) + 2 * b * C, *wa = wd + 2 * b * C;

		beam_pattern(s, wc, uj, 0, cj);
		beam_pattern(s, wa, uj, 0, aj);
		beam_pattern(s, wc, ut, 0, ct);
		beam_pattern(s, wa, ut, 0, at);
		printf("beam %u: jammer conventional %.1f dB, mvdr %.1f dB; target %.2f / %.2f dB\n", b,
		       db_of(cj), db_of(aj), db_of(ct), db_of(at));
		assert_true(db_of(cj) - db_of(aj) >= 30.0);
		if (db_of(ct) > -10)   /* beams that see the target: their gain on it */
			assert_true(fabs(db_of(at) - db_of(ct)) < 1.0);
	}
	/* The data agree: beam 3's output holds its noise and the target, the
	 * jammer's residue too small to see (predicted within 0.5 dB). */
	{
		float *Y = xcalloc(2 * N, sizeof(float)), *Yc = xcalloc(2 * N, sizeof(float));
		double pa = 0, pc = 0, ng = beam_noise_gain(s, wd + 2 * 3 * C), at[2], want;

		beam_pattern(s, wd + 2 * 3 * C, ut, 0, at);
		want = ng + snr * (at[0] * at[0] + at[1] * at[1]);
		beam_form(wf + 2 * 3 * C, 1, C, X, N, Y, N, 0, N);
		beam_form(beam_weights(s) + 2 * 3 * C, 1, C, X, N, Yc, N, 0, N);
		for (size_t n = 0; n < 2 * N; n++) {
			pa += (double)Y[n] * Y[n];
			pc += (double)Yc[n] * Yc[n];
		}
		pa /= N;
		pc /= N;
		printf("beam 3 output power: conventional %.1f dB, mvdr %.1f dB (noise and target: %.1f dB)\n",
		       10 * log10(pc), 10 * log10(pa), 10 * log10(want));
		assert_true(fabs(10 * log10(pa / want)) < 0.5);
		assert_true(10 * log10(pc / pa) >= 15.0);
		free(Y);
		free(Yc);
	}
	mvdr_destroy(m);
	beam_set_destroy(s);
	array_destroy(a);
	free(X);
}

/* --- monopulse ---------------------------------------------------------- */

/* Beam outputs y (float, interleaved) for element data x (C complex). */
static void beams_of(const struct beam_set *s, const double complex *x, float *y)
{
	unsigned B = beam_count(s), C = beam_channels(s);

	for (unsigned b = 0; b < B; b++) {
		double complex acc = 0;

		for (unsigned c = 0; c < C; c++)
			acc += wd_at(beam_weights_d(s), C, b, c) * x[c];
		y[2 * b] = (float)creal(acc);
		y[2 * b + 1] = (float)cimag(acc);
	}
}

static unsigned strongest(const float *y, unsigned B)
{
	unsigned best = 0;

	for (unsigned b = 1; b < B; b++)
		if (hypotf(y[2 * b], y[2 * b + 1]) > hypotf(y[2 * best], y[2 * best + 1]))
			best = b;
	return best;
}

/* The 3 dB width in u of beam b's pattern (by bisection on each side). */
static double beamwidth_u(const struct beam_set *s, unsigned b)
{
	double u0, v0, w = 0;
	const double *wb = beam_weights_d(s) + 2 * b * beam_channels(s);

	beam_uv(s, b, &u0, &v0);
	for (int side = -1; side <= 1; side += 2) {
		double lo = 0, hi = 0.5, f[2];

		for (int i = 0; i < 60; i++) {
			double mid = 0.5 * (lo + hi);

			beam_pattern(s, wb, u0 + side * mid, v0, f);
			if (f[0] * f[0] + f[1] * f[1] > 0.5)
				lo = mid;
			else
				hi = mid;
		}
		w += lo;
	}
	return w;
}

/*
 * A 20 dB target (array SNR: C |s|^2 / noise) between beams 3 and 4 of an
 * 8-beam Taylor fan on a 16-element half-wave ULA, the fan pointed 7
 * degrees off boresight: 200 trials.
 */
static void test_monopulse_rms(void **state)
{
	enum { C = 16, B = 8, TRIALS = 200 };
	const double snr = 100.0;
	struct array *a = ula(C);
	struct beam_params bp;
	struct beam_set *s;
	double u3, u4, v, ut, bw, crb, se = 0, bias = 0, resp[2 * C], noise_el = C / snr;
	unsigned flagged = 0, wrong_beam = 0;
	char err[256];

	(void)state;
	beam_params_init(&bp);
	bp.carrier_hz = CARRIER_HZ;
	bp.count = B;
	bp.fan_spacing_u = 0.12;
	bp.taper = WIN_TAYLOR;
	bp.taylor_nbar = 4;
	bp.taylor_sll_db = 30;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(beam_set_point(s, 7, 0, err, sizeof(err)), 0);
	beam_uv(s, 3, &u3, &v);
	beam_uv(s, 4, &u4, &v);
	ut = u3 + 0.6 * (u4 - u3);
	bw = beamwidth_u(s, 3);
	crb = sqrt(mono_crb_u(a, LAMBDA, ut, 0, snr));
	beam_response(s, ut, 0, resp);
	for (int t = 0; t < TRIALS; t++) {
		double complex x[C], amp = cexp(I * 2 * M_PI * urand());
		float y[2 * B];
		struct mono_angle ang;
		unsigned b;

		for (unsigned c = 0; c < C; c++)
			x[c] = amp * (resp[2 * c] + I * resp[2 * c + 1]) + cgauss(noise_el);
		beams_of(s, x, y);
		b = strongest(y, B);
		wrong_beam += b != 4;
		assert_int_equal(mono_estimate(s, beam_weights_d(s), b, y,
					       noise_el * beam_noise_gain(s, beam_weights_d(s)), &ang), 0);
		flagged += ang.quality != 0;
		se += (ang.u - ut) * (ang.u - ut);
		bias += ang.u - ut;
	}
	se = sqrt(se / TRIALS);
	bias /= TRIALS;
	printf("monopulse, 20 dB: beamwidth %.4f u, CRB %.5f u (%.4f beamwidths), RMS error %.5f u "
	       "(%.4f beamwidths, %.2f x CRB), bias %.5f u; %u flagged, %u not in beam 4\n",
	       bw, crb, crb / bw, se, se / bw, se / crb, bias, flagged, wrong_beam);
	assert_true(se <= 0.1 * bw);
	assert_true(se <= 2.0 * crb);
	assert_true(flagged <= 2);    /* 1 % */
	beam_set_destroy(s);
	array_destroy(a);
}

/*
 * Two targets of equal power (30 dB array SNR each), 0.8 beam spacings
 * apart between beams 3 and 4, random phases: not one plane wave, flagged
 * in >= 95 % of 200 trials (the single target above: <= 1 %).
 */
static void test_monopulse_two_targets(void **state)
{
	enum { C = 16, B = 8, TRIALS = 200 };
	const double snr = 1000.0, noise_el = C / snr;
	struct array *a = ula(C);
	struct beam_params bp;
	struct beam_set *s;
	double u3, u4, v, r1[2 * C], r2[2 * C];
	unsigned flagged = 0;
	char err[256];

	(void)state;
	beam_params_init(&bp);
	bp.carrier_hz = CARRIER_HZ;
	bp.count = B;
	bp.fan_spacing_u = 0.12;
	bp.taper = WIN_TAYLOR;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	beam_uv(s, 3, &u3, &v);
	beam_uv(s, 4, &u4, &v);
	beam_response(s, u3 + 0.1 * (u4 - u3), 0, r1);
	beam_response(s, u3 + 0.9 * (u4 - u3), 0, r2);
	for (int t = 0; t < TRIALS; t++) {
		double complex x[C], a1 = cexp(I * 2 * M_PI * urand()), a2 = cexp(I * 2 * M_PI * urand());
		float y[2 * B];
		struct mono_angle ang;

		for (unsigned c = 0; c < C; c++)
			x[c] = a1 * (r1[2 * c] + I * r1[2 * c + 1]) + a2 * (r2[2 * c] + I * r2[2 * c + 1]) +
			       cgauss(noise_el);
		beams_of(s, x, y);
		assert_int_equal(mono_estimate(s, beam_weights_d(s), strongest(y, B), y,
					       noise_el * beam_noise_gain(s, beam_weights_d(s)), &ang), 0);
		flagged += (ang.quality & MONO_UNRESOLVED) != 0;
	}
	printf("two targets 0.8 spacings apart, 30 dB each: %u of %u flagged unresolved\n", flagged,
	       TRIALS);
	assert_true(flagged >= TRIALS * 95 / 100);
	beam_set_destroy(s);
	array_destroy(a);
}

/* Noise-free: exact between beams on a calibrated 3-D array; the flags. */
static void test_monopulse_flags(void **state)
{
	enum { C = 12, B = 5 };
	double *pos, u0, u1, v, resp[2 * C], resp2[2 * C];
	double complex *g, x[C];
	struct array *a = random_array(C, &pos, &g);
	struct beam_params bp;
	struct beam_set *s;
	struct mono_angle ang;
	float y[2 * B];
	char err[256];

	(void)state;
	beam_params_init(&bp);
	bp.carrier_hz = CARRIER_HZ;
	bp.count = B;
	bp.fan_el_deg = 4;
	bp.fan_spacing_u = 0.13;
	bp.taper = WIN_HAMMING;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(beam_set_point(s, -3, 1, err, sizeof(err)), 0);

	/* one target between beams 1 and 2, no noise: exact */
	beam_uv(s, 1, &u0, &v);
	beam_uv(s, 2, &u1, &v);
	beam_response(s, u0 + 0.35 * (u1 - u0), v, resp);
	for (unsigned c = 0; c < C; c++)
		x[c] = (0.3 - 0.8 * I) * (resp[2 * c] + I * resp[2 * c + 1]);
	beams_of(s, x, y);
	assert_int_equal(mono_estimate(s, beam_weights_d(s), 1, y, 1e-6, &ang), 0);
	assert_int_equal(ang.quality, 0);
	assert_int_equal(ang.neighbour, 2);
	assert_true(fabs(ang.u - (u0 + 0.35 * (u1 - u0))) < 1e-6 && ang.v == v);
	{
		double az, el;

		assert_int_equal(beam_azel_of(ang.u, ang.v, &az, &el), 0);
		assert_true(fabs(ang.az_deg - az) < 1e-12 && fabs(ang.el_deg - el) < 1e-12);
	}
	/* the same from beam 2's side: NOT_PEAK off, neighbour 1 */
	assert_int_equal(mono_estimate(s, beam_weights_d(s), 2, y, 1e-6, &ang), 0);
	assert_int_equal(ang.quality, MONO_NOT_PEAK);
	assert_true(fabs(ang.u - (u0 + 0.35 * (u1 - u0))) < 1e-6);

	/* beyond the fan's last beam by a quarter spacing: outside, still exact */
	beam_uv(s, 4, &u1, &v);
	beam_response(s, u1 + 0.25 * 0.13, v, resp);
	for (unsigned c = 0; c < C; c++)
		x[c] = resp[2 * c] + I * resp[2 * c + 1];
	beams_of(s, x, y);
	assert_int_equal(mono_estimate(s, beam_weights_d(s), 4, y, 1e-6, &ang), 0);
	assert_true(ang.quality & MONO_OUTSIDE);
	assert_false(ang.quality & MONO_UNRESOLVED);
	assert_true(fabs(ang.u - (u1 + 0.25 * 0.13)) < 1e-6);

	/* two targets in one cell, in quadrature, at beams 1 and 2: unresolved */
	beam_uv(s, 1, &u0, &v);
	beam_uv(s, 2, &u1, &v);
	beam_response(s, u0 + 0.1 * (u1 - u0), v, resp);
	beam_response(s, u0 + 0.8 * (u1 - u0), v, resp2);
	for (unsigned c = 0; c < C; c++)
		x[c] = resp[2 * c] + I * resp[2 * c + 1] + I * 0.8 * (resp2[2 * c] + I * resp2[2 * c + 1]);
	beams_of(s, x, y);
	assert_int_equal(mono_estimate(s, beam_weights_d(s), 1, y, 1e-4, &ang), 0);
	printf("two targets: misfit %.1f\n", ang.misfit);
	assert_true(ang.quality & MONO_UNRESOLVED);
	assert_int_equal(mono_estimate(s, beam_weights_d(s), 9, y, 1e-4, &ang), -EINVAL);
	beam_set_destroy(s);

	/* one beam: its direction, flagged */
	bp.count = 1;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	beams_of(s, x, y);
	assert_int_equal(mono_estimate(s, beam_weights_d(s), 0, y, 1e-4, &ang), 0);
	assert_int_equal(ang.quality, MONO_NO_NEIGHBOUR);
	beam_uv(s, 0, &u0, &v);
	assert_true(ang.u == u0 && ang.v == v);
	beam_set_destroy(s);
	array_destroy(a);
	free(pos);
	free(g);
}

/* Three beams from two channels: their outputs are linearly dependent,
 * so b is compared with its stronger neighbour only, still exactly. */
static void test_monopulse_two_channels(void **state)
{
	struct array *a = ula(2);
	struct beam_params bp;
	struct beam_set *s;
	struct mono_angle ang;
	double resp[4];
	double complex x[2];
	float y[6];
	char err[256];

	(void)state;
	beam_params_init(&bp);
	bp.carrier_hz = CARRIER_HZ;
	bp.count = 3;
	bp.fan_spacing_u = 0.3;
	s = beam_set_create(a, &bp, err, sizeof(err));
	assert_non_null(s);
	beam_response(s, 0.1, 0, resp);
	for (unsigned c = 0; c < 2; c++)
		x[c] = (0.6 + 0.2 * I) * (resp[2 * c] + I * resp[2 * c + 1]);
	beams_of(s, x, y);
	assert_int_equal(mono_estimate(s, beam_weights_d(s), 1, y, 1e-6, &ang), 0);
	assert_int_equal(ang.neighbour, 2);
	assert_int_equal(ang.quality, 0);
	assert_true(fabs(ang.u - 0.1) < 1e-6);
	beam_set_destroy(s);
	array_destroy(a);
}

/* The bound against its closed form for a ULA: var u = 6 / (snr k^2 d^2 (C^2 - 1)). */
static void test_crb(void **state)
{
	struct array *a = ula(16);
	double d = LAMBDA / 2, k = 2 * M_PI / LAMBDA;
	double want = 6.0 / (100.0 * k * k * d * d * (16.0 * 16.0 - 1.0));

	(void)state;
	assert_true(fabs(mono_crb_u(a, LAMBDA, 0.2, 0, 100.0) / want - 1) < 1e-12);
	printf("CRB, 16-element half-wave ULA, 20 dB: sigma_u %.5f\n", sqrt(want));
	assert_true(isinf(mono_crb_u(a, LAMBDA, 0.2, 0, 0.0)));
	array_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_array_files),
		cmocka_unit_test(test_array_load_file),
		cmocka_unit_test(test_weights_reference),
		cmocka_unit_test(test_visible_region),
		cmocka_unit_test(test_beam_form_reference),
		cmocka_unit_test(test_beam_form_threads),
		cmocka_unit_test(test_before_after_pc),
		cmocka_unit_test(test_mvdr_reference),
		cmocka_unit_test(test_mvdr_jammer),
		cmocka_unit_test(test_monopulse_rms),
		cmocka_unit_test(test_monopulse_two_targets),
		cmocka_unit_test(test_monopulse_flags),
		cmocka_unit_test(test_monopulse_two_channels),
		cmocka_unit_test(test_crb),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
