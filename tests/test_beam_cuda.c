/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_beam_cuda.c — beams on the GPU (src/cuda/cu_beam.cu) against the
 * CPU modules that define them (beam.c, mvdr.c) and against direct
 * double-precision sums: the weights formed on the device from the
 * pointing, the product by the fused kernel and by cuBLAS, MVDR's
 * covariance and solve.
 *
 * Every test skips (cmocka skip(): reported skipped, never passed) when
 * pc_cuda_available() is 0: no GPU, no driver, or a build without CUDA.
 *
 * Cases: a fan of a uniform linear array with a Taylor taper pointed off
 * boresight; a list over a planar array from a file (elements off the
 * face's plane too) through the graph path (the weights node re-pointed);
 * a calibration file; more beams than one group of the fused kernel (40)
 * over sizes that are no multiple of its tiles; MVDR with a jammer, and a
 * training set of zeros (-EDOM, nothing written). Device rows are pitched
 * (pad) so that their strides differ from R. Tolerances: weights within
 * 1e-6 of beam.c's float weights (float rounding), outputs within 1e-5
 * (relative L2) of beam_form with the CPU's weights and of direct double
 * sums with the double weights; MVDR weights within 1e-5 of mvdr_solve's.
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

#include "array.h"
#include "beam.h"
#include "chirp/pc.h"
#include "mvdr.h"
#ifdef CHIRP_HAVE_CUDA
#include "cuda/cu_beam.h"
#endif

#define CARRIER_HZ 3e9
#define LAMBDA (BEAM_C0_MPS / CARRIER_HZ)
#define TOL_W 1e-6
#define TOL 1e-5

#define NEED_GPU()                                                           \
	do {                                                                 \
		if (!pc_cuda_available()) {                                  \
			print_message("no usable CUDA device: skipped\n");   \
			skip();                                              \
		}                                                            \
	} while (0)

#define TEST_RNG_SEED 0x2545f4914f6cdd1dull
#include "test_rng.h"

static float *random_cpi(size_t n)   /* n complex values in [-1, 1) */
{
	float *x = xcalloc(2 * n, sizeof(float));

	for (size_t i = 0; i < 2 * n; i++)
		x[i] = (float)(2.0 * urand() - 1.0);
	return x;
}

static double rel_l2(const float *a, const float *ref, size_t n)
{
	double num = 0.0, den = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = (double)a[i] - ref[i];

		num += d * d;
		den += (double)ref[i] * ref[i];
	}
	return isfinite(num) ? sqrt(num / den) : INFINITY;
}

static double rel_l2_d(const float *a, const double *ref, size_t n)
{
	double num = 0.0, den = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = (double)a[i] - ref[i];

		num += d * d;
		den += ref[i] * ref[i];
	}
	return isfinite(num) ? sqrt(num / den) : INFINITY;
}

/* Y = W X by direct double sums (wd: 2 B C doubles). */
static double *direct(const double *wd, unsigned B, unsigned C, const float *x, size_t N)
{
	double *y = xcalloc(2 * (size_t)B * N, sizeof(double));

	for (unsigned b = 0; b < B; b++) {
		for (size_t n = 0; n < N; n++) {
			double complex s = 0.0;

			for (unsigned c = 0; c < C; c++) {
				size_t o = 2 * ((size_t)b * C + c), xo = 2 * ((size_t)c * N + n);

				s += (wd[o] + I * wd[o + 1]) * (x[xo] + I * (double)x[xo + 1]);
			}
			y[2 * ((size_t)b * N + n)] = creal(s);
			y[2 * ((size_t)b * N + n) + 1] = cimag(s);
		}
	}
	return y;
}

/* What one case compares: the set, pointed (CPU) where the GPU is told. */
struct gcase {
	const struct beam_set *s;
	const struct mvdr_params *mp;   /* NULL: conventional */
	unsigned P, R, pad;
	double az, el;
	int graph;
};

#ifdef CHIRP_HAVE_CUDA
/*
 * The GPU's weights and both engines' outputs for c against the CPU's:
 * wf/wd the CPU's weights (float, double) for the same CPI x.
 */
static void check_case(const struct gcase *c, const float *x, const float *wf, const double *wd)
{
	unsigned B = beam_count(c->s), C = beam_channels(c->s);
	size_t N = (size_t)c->P * c->R, nw = 2 * (size_t)B * C, ny = 2 * (size_t)B * N;
	float *w = xcalloc(nw, sizeof(float)), *yf = xcalloc(ny, sizeof(float));
	float *yg = xcalloc(ny, sizeof(float)), *ycpu = xcalloc(ny, sizeof(float));
	double *yd = direct(wd, B, C, x, N);
	char err[256] = "";
	struct cu_beam *bm = cu_beam_create(c->s, c->mp, c->P, c->R, err, sizeof(err));
	struct cu_beam_job j = { .x = x, .az_deg = c->az, .el_deg = c->el, .pad = c->pad,
				 .graph = c->graph, .w = w, .y_fused = yf, .y_gemm = yg };
	double ew, ef, eg, efd;

	if (!bm)
		fail_msg("cu_beam_create: %s", err);
	if (cu_beam_run(bm, &j, err, sizeof(err)) != 0)
		fail_msg("cu_beam_run: %s", err);
	beam_form(wf, B, C, x, N, ycpu, N, 0, N);
	ew = rel_l2(w, wf, nw);
	ef = rel_l2(yf, ycpu, ny);
	eg = rel_l2(yg, ycpu, ny);
	efd = rel_l2_d(yf, yd, ny);
	print_message("B %u C %u P %u R %u: weights %.2e, fused %.2e (double %.2e), cublas %.2e\n",
		      B, C, c->P, c->R, ew, ef, efd, eg);
	assert_true(ew <= (c->mp ? TOL : TOL_W));
	assert_true(ef <= TOL);
	assert_true(efd <= TOL);
	assert_true(eg <= TOL);
	cu_beam_destroy(bm);
	free(w);
	free(yf);
	free(yg);
	free(ycpu);
	free(yd);
}
#else
static void check_case(const struct gcase *c, const float *x, const float *wf, const double *wd)
{
	(void)c, (void)x, (void)wf, (void)wd;
	fail_msg("no CUDA in this build");
}
#endif

/* A conventional case: the CPU set pointed at (az, el), then the GPU. */
static void conventional(struct gcase *c)
{
	char err[256];
	size_t N = (size_t)c->P * c->R;
	float *x = random_cpi((size_t)beam_channels(c->s) * N);

	assert_int_equal(beam_set_point((struct beam_set *)c->s, c->az, c->el, err, sizeof(err)), 0);
	check_case(c, x, beam_weights(c->s), beam_weights_d(c->s));
	free(x);
}

static void test_fan_ula(void **state)
{
	char err[256];
	struct beam_params p;
	struct array *a;
	struct beam_set *s;
	struct gcase c = { .P = 7, .R = 1000, .pad = 24, .az = 5.0, .el = 0.0 };

	(void)state;
	NEED_GPU();
	a = array_create_ula(16, LAMBDA / 2, err, sizeof(err));
	assert_non_null(a);
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = 16;
	p.fan_az_deg = 7.0;
	p.fan_spacing_u = 0.06;
	p.taper = WIN_TAYLOR;
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	c.s = s;
	conventional(&c);
	beam_set_destroy(s);
	array_destroy(a);
}

/* A 4 x 3 planar array, its elements slightly off the face, 5 beams of a
 * list; the weights formed through a graph's re-pointed node. */
static void test_list_planar_graph(void **state)
{
	static const double list[] = { -20, -10, -5, 0, 0, 0, 10, 5, 25, 12 };
	char err[256], text[1024];
	size_t n = 0;
	struct beam_params p;
	struct array *a;
	struct beam_set *s;
	struct gcase c = { .P = 5, .R = 777, .pad = 1, .az = -3.0, .el = 4.0, .graph = 1 };

	(void)state;
	NEED_GPU();
	for (unsigned i = 0; i < 12; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%.6f %.6f %.6f\n",
				      (i % 4 - 1.5) * LAMBDA * 0.55, (i / 4 - 1.0) * LAMBDA * 0.6,
				      0.003 * (i % 3));
	a = array_parse(text, n, "planar.txt", 12, err, sizeof(err));
	assert_non_null(a);
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.layout = BEAM_LIST;
	p.count = 5;
	p.list_deg = list;
	p.taper = WIN_HAMMING;
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	c.s = s;
	conventional(&c);
	beam_set_destroy(s);
	array_destroy(a);
}

static void test_calibration(void **state)
{
	char err[256], text[1024];
	size_t n = 0;
	struct beam_params p;
	struct array *a;
	struct beam_set *s;
	struct gcase c = { .P = 9, .R = 513, .pad = 7, .az = -12.0, .el = 0.0, .graph = 1 };

	(void)state;
	NEED_GPU();
	a = array_create_ula(12, LAMBDA / 2, err, sizeof(err));
	assert_non_null(a);
	for (unsigned i = 0; i < 12; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%.4f %.3f\n", 0.7 + 0.05 * i,
				      -170.0 + 31.0 * i);
	assert_int_equal(array_cal_parse(a, text, n, "cal.txt", err, sizeof(err)), 0);
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = 7;
	p.fan_spacing_u = 0.12;
	p.taper = WIN_BLACKMAN;
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	c.s = s;
	conventional(&c);
	beam_set_destroy(s);
	array_destroy(a);
}

/* 40 beams: two groups of the fused kernel; odd R, one pulse. */
static void test_many_beams(void **state)
{
	char err[256];
	struct beam_params p;
	struct array *a;
	struct beam_set *s;
	struct gcase c = { .P = 3, .R = 1201, .pad = 0, .az = 0.0, .el = 2.0 };

	(void)state;
	NEED_GPU();
	a = array_create_ula(20, LAMBDA / 2, err, sizeof(err));
	assert_non_null(a);
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = 40;
	p.fan_spacing_u = 0.04;
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	c.s = s;
	conventional(&c);
	beam_set_destroy(s);
	array_destroy(a);
}

/* A CPI of noise and a jammer 30 dB up at u = 0.35 on a 16-element ULA. */
static float *jammed_cpi(unsigned C, size_t N)
{
	float *x = random_cpi((size_t)C * N);

	for (size_t n = 0; n < N; n++) {
		double ph = 2 * M_PI * urand(), amp = 30.0 * urand();

		for (unsigned c = 0; c < C; c++) {
			double e = ph + M_PI * (c - (C - 1) / 2.0) * 0.35;   /* half-wave spacing */

			x[2 * ((size_t)c * N + n)] += (float)(amp * cos(e));
			x[2 * ((size_t)c * N + n) + 1] += (float)(amp * sin(e));
		}
	}
	return x;
}

static void test_mvdr(void **state)
{
	char err[256];
	struct beam_params p;
	struct mvdr_params mp;
	struct array *a;
	struct beam_set *s;
	struct mvdr *m;
	unsigned C = 16, B = 7;
	struct gcase c = { .P = 6, .R = 700, .pad = 3, .az = 4.0, .el = 0.0, .mp = &mp };
	size_t N = (size_t)c.P * c.R;
	float *x, *wf;
	double *wd;

	(void)state;
	NEED_GPU();
	x = jammed_cpi(C, N);
	wf = xcalloc(2 * (size_t)B * C, sizeof(float));
	wd = xcalloc(2 * (size_t)B * C, sizeof(double));
	a = array_create_ula(C, LAMBDA / 2, err, sizeof(err));
	assert_non_null(a);
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = B;
	p.fan_spacing_u = 0.1;
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	mvdr_params_init(&mp);
	mp.snapshots = 64;
	mp.first_gate = 5;
	mp.gate_stride = 23;   /* 3 pulses x 31 gates: 93 cells for 64 */
	mp.pulse_stride = 2;
	mp.loading = 1e-3;
	m = mvdr_create(C, c.P, c.R, B, &mp, err, sizeof(err));
	assert_non_null(m);
	assert_int_equal(beam_set_point(s, c.az, c.el, err, sizeof(err)), 0);
	mvdr_covariance(m, x);
	assert_int_equal(mvdr_solve(m, s, wf, wd), 0);
	c.s = s;
	check_case(&c, x, wf, wd);
	mvdr_destroy(m);
	beam_set_destroy(s);
	array_destroy(a);
	free(x);
	free(wf);
	free(wd);
}

/* Training cells of zeros without loading: R_l = 0 is not positive
 * definite; -EDOM, and the weights are not written. */
static void test_mvdr_zeros(void **state)
{
	char err[256] = "";
	struct beam_params p;
	struct mvdr_params mp;
	struct array *a;
	struct beam_set *s;
	unsigned C = 8, B = 3, P = 4, R = 100;
	float *x;
	float w[2 * 3 * 8];

	(void)state;
	NEED_GPU();
	x = xcalloc(2 * (size_t)C * P * R, sizeof(float));
#ifdef CHIRP_HAVE_CUDA
	a = array_create_ula(C, LAMBDA / 2, err, sizeof(err));
	assert_non_null(a);
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = B;
	s = beam_set_create(a, &p, err, sizeof(err));
	assert_non_null(s);
	mvdr_params_init(&mp);
	mp.snapshots = 2 * C;
	mp.loading = 0.0;
	{
		struct cu_beam *bm = cu_beam_create(s, &mp, P, R, err, sizeof(err));
		struct cu_beam_job j = { .x = x, .w = w };

		if (!bm)
			fail_msg("cu_beam_create: %s", err);
		for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
			w[i] = 1234.0f;
		assert_int_equal(cu_beam_run(bm, &j, err, sizeof(err)), -EDOM);
		for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
			assert_true(w[i] == 1234.0f);
		cu_beam_destroy(bm);
	}
	beam_set_destroy(s);
	array_destroy(a);
#else
	(void)p, (void)mp, (void)a, (void)s, (void)w, (void)P, (void)R;
#endif
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fan_ula),
		cmocka_unit_test(test_list_planar_graph),
		cmocka_unit_test(test_calibration),
		cmocka_unit_test(test_many_beams),
		cmocka_unit_test(test_mvdr),
		cmocka_unit_test(test_mvdr_zeros),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
