/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pc.c — pulse compression (pc.c + the CPU backend) against the
 * definition in chirp/pc.h, checked with an independent direct
 * double-precision time-domain correlation on fresh random data.
 *
 * The seed comes from the clock unless CHIRP_TEST_SEED is set; it is
 * printed so a failure can be replayed.
 */
#include <complex.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "chirp/pc.h"
#include "waveform.h"

#include "tri_modes.h"   /* after cmocka.h and waveform.h */

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* uniform in [-1, 1) */
static double urand(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static int setup_seed(void **state)
{
	const char *s = getenv("CHIRP_TEST_SEED");

	(void)state;
	rng_state = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (rng_state == 0)
		rng_state = 1;
	printf("test_pc: CHIRP_TEST_SEED=%llu\n", (unsigned long long)rng_state);
	return 0;
}

/* Direct correlation y[n] = g sum_k x[n+k] conj(h[k]), x = 0 beyond R. */
static void ref_corr(const double complex *x, size_t rows, size_t R,
		     const float *h, size_t L, double g, double complex *y)
{
	for (size_t r = 0; r < rows; r++) {
		const double complex *xr = x + r * R;

		for (size_t n = 0; n < R; n++) {
			double complex s = 0;
			size_t kmax = R - n < L ? R - n : L;

			for (size_t k = 0; k < kmax; k++)
				s += xr[n + k] * ((double)h[2 * k] - I * (double)h[2 * k + 1]);
			y[r * R + n] = g * s;
		}
	}
}

static double ref_gain(const float *h, size_t L, enum pc_normalize norm)
{
	double e = 0;

	if (norm == PC_NORM_NONE)
		return 1.0;
	for (size_t k = 0; k < 2 * L; k++)
		e += (double)h[k] * h[k];
	return 1.0 / sqrt(e);
}

static float *random_ref(size_t L)
{
	float *h = malloc(2 * L * sizeof(*h));

	assert_non_null(h);
	for (size_t k = 0; k < 2 * L; k++)
		h[k] = (float)urand();
	return h;
}

/* Random input in the given format plus its exact value in double. */
static void *random_input(enum pc_format fmt, size_t n, double complex *xd)
{
	void *buf = malloc(n * pc_format_sample_bytes(fmt));

	assert_non_null(buf);
	for (size_t i = 0; i < n; i++) {
		if (fmt == PC_FMT_CF32) {
			float *f = buf;

			f[2 * i] = (float)urand();
			f[2 * i + 1] = (float)urand();
			xd[i] = (double)f[2 * i] + I * (double)f[2 * i + 1];
		} else {
			int16_t *s = buf;

			s[2 * i] = (int16_t)(rnd() >> 48);
			s[2 * i + 1] = (int16_t)(rnd() >> 48);
			xd[i] = s[2 * i] / 32768.0 + I * (s[2 * i + 1] / 32768.0);
		}
	}
	return buf;
}

static void poison(void *buf, size_t bytes)
{
	float *f = buf;

	for (size_t i = 0; i < bytes / sizeof(float); i++)
		f[i] = NAN;
}

static void base_params(struct pc_params *p, unsigned C, unsigned P, unsigned R,
			const float *h, size_t L)
{
	pc_params_init(p);
	p->channels = C;
	p->pulses = P;
	p->samples = R;
	p->ref = h;
	p->ref_len = L;
	p->backend = PC_BACKEND_CPU;
}

/* Compare pc output in mode m against the double reference y. */
static void check_output(enum pc_output m, const void *out, const double complex *y, size_t n)
{
	double num = 0, den = 0;

	for (size_t i = 0; i < n; i++) {
		double yr = creal(y[i]), yi = cimag(y[i]), a2 = yr * yr + yi * yi;

		switch (m) {
		case PC_OUT_COMPLEX: {
			const float *o = out;

			assert_false(isnan(o[2 * i]) || isnan(o[2 * i + 1]));
			num += (o[2 * i] - yr) * (o[2 * i] - yr) + (o[2 * i + 1] - yi) * (o[2 * i + 1] - yi);
			den += a2;
			break;
		}
		case PC_OUT_MAGNITUDE: {
			const float *o = out;

			assert_false(isnan(o[i]));
			assert_true(o[i] >= 0.0f);
			num += (o[i] - sqrt(a2)) * (o[i] - sqrt(a2));
			den += a2;
			break;
		}
		case PC_OUT_POWER_DB: {
			const float *o = out;
			double p;

			assert_false(isnan(o[i]));
			assert_true(o[i] >= PC_POWER_DB_FLOOR);
			p = pow(10.0, o[i] / 10.0);
			if (a2 < PC_POWER_FLOOR)
				p = a2;   /* floored: checked by test_power_floor */
			num += (p - a2) * (p - a2);
			den += a2 * a2;
			break;
		}
		case PC_OUT_MAP_POWER:
		case PC_OUT_MAP_DB:
		case PC_OUT_NONE:
			fail_msg("%s: a radar chain output (test_radar checks those)", pc_output_name(m));
		}
	}
	if (den == 0)
		return;
	/* power is |y|^2: its relative error is twice that of y */
	double tol = m == PC_OUT_POWER_DB ? 3e-5 : 1e-5;
	double rel = sqrt(num / den);

	if (!(rel <= tol))
		fail_msg("%s output: relative L2 error %g > %g", pc_output_name(m), rel, tol);
}

/* ---- accuracy on random data ------------------------------------------- */

struct acc_case {
	unsigned C, P, R;
	size_t L;
	enum pc_format fmt;
	enum pc_normalize norm;
	int threads;
	size_t nfft;          /* 0 = auto */
	unsigned block_kib;   /* pc_params.tune.block_kib, 0 = auto */
};

static void run_case(const struct acc_case *c)
{
	size_t rows = (size_t)c->C * c->P, n = rows * c->R;
	double complex *xd = malloc(n * sizeof(*xd)), *y = malloc(n * sizeof(*y));
	float *h = random_ref(c->L);
	void *in, *out;
	char err[256];

	assert_non_null(xd);
	assert_non_null(y);
	in = random_input(c->fmt, n, xd);
	ref_corr(xd, rows, c->R, h, c->L, ref_gain(h, c->L, c->norm), y);
	out = malloc(n * 8);
	assert_non_null(out);
	for (int m = PC_OUT_COMPLEX; m <= PC_OUT_POWER_DB; m++) {
		struct pc_params p;
		struct pc *pc;
		struct pc_info info;
		uint32_t nf = 99;

		base_params(&p, c->C, c->P, c->R, h, c->L);
		p.in_format = c->fmt;
		p.out_mode = (enum pc_output)m;
		p.normalize = c->norm;
		p.cpu_threads = c->threads;
		p.nfft = c->nfft;
		p.tune.block_kib = c->block_kib;
		pc = pc_create(&p, err, sizeof(err));
		if (!pc)
			fail_msg("pc_create R=%u L=%zu: %s", c->R, c->L, err);
		pc_get_info(pc, &info);
		assert_int_equal(info.backend, PC_BACKEND_CPU);
		assert_int_equal(info.ref_len, c->L);
		assert_int_equal(info.nfft, c->nfft ? c->nfft : pc_good_fft_size(c->R + c->L - 1));
		assert_int_equal(pc_out_bytes(pc), n * pc_output_sample_bytes((enum pc_output)m));
		poison(out, pc_out_bytes(pc));
		assert_int_equal(pc_execute(pc, in, out, &nf), 0);
		assert_int_equal(nf, 0);
		check_output((enum pc_output)m, out, y, n);
		pc_destroy(pc);
	}
	free(xd);
	free(y);
	free(h);
	free(in);
	free(out);
}

static void test_accuracy_random(void **state)
{
	static const struct acc_case cases[] = {
		{ 1, 3, 1000, 200, PC_FMT_CF32, PC_NORM_NOISE, 1, 0, 0 },
		{ 1, 3, 1000, 200, PC_FMT_SC16, PC_NORM_NONE, 1, 0, 0 },
		{ 2, 1, 9000, 1000, PC_FMT_CF32, PC_NORM_NOISE, 1, 0, 0 },
		{ 1, 1, 9000, 1000, PC_FMT_SC16, PC_NORM_NOISE, 1, 0, 0 },
		{ 1, 2, 257, 257, PC_FMT_CF32, PC_NORM_NOISE, 1, 0, 0 },   /* L = R */
		{ 1, 1, 1, 1, PC_FMT_CF32, PC_NORM_NOISE, 1, 0, 0 },       /* smallest */
		{ 2, 3, 777, 1, PC_FMT_SC16, PC_NORM_NONE, 1, 0, 0 },      /* L = 1 */
		{ 3, 2, 4096, 512, PC_FMT_SC16, PC_NORM_NOISE, 1, 0, 0 },
		{ 2, 5, 1000, 77, PC_FMT_CF32, PC_NORM_NOISE, 2, 0, 0 },   /* threads */
		/* small blocks: several full blocks plus a tail block */
		{ 1, 7, 1000, 100, PC_FMT_CF32, PC_NORM_NOISE, 1, 0, 16 },
		{ 3, 5, 1000, 100, PC_FMT_SC16, PC_NORM_NOISE, 2, 0, 24 },
		/* forced nfft: prime (direct DFT path) and 2*5*11^2 (radix 11) */
		{ 1, 2, 1000, 200, PC_FMT_CF32, PC_NORM_NOISE, 1, 1201, 0 },
		{ 1, 2, 1000, 200, PC_FMT_CF32, PC_NORM_NOISE, 1, 1210, 0 },
		{ 1, 2, 1000, 200, PC_FMT_CF32, PC_NORM_NOISE, 1, 4096, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

/* ---- nfft --------------------------------------------------------------- */

static int smooth7(size_t v)
{
	static const size_t f[] = { 2, 3, 5, 7 };

	for (int i = 0; i < 4; i++)
		while (v % f[i] == 0)
			v /= f[i];
	return v == 1;
}

static void test_good_fft_size(void **state)
{
	size_t expect = 1;

	(void)state;
	/* against a brute-force scan for every n up to 20000 */
	for (size_t n = 1; n <= 20000; n++) {
		if (expect < n)
			for (expect = n; !smooth7(expect); expect++)
				;
		assert_int_equal(pc_good_fft_size(n), expect);
	}
	/* random larger n */
	for (int i = 0; i < 200; i++) {
		size_t n = (size_t)(rnd() % 50000000) + 1, v;

		for (v = n; !smooth7(v); v++)
			;
		assert_int_equal(pc_good_fft_size(n), v);
	}
	assert_int_equal(pc_good_fft_size(0), 1);
	assert_int_equal(pc_good_fft_size(SIZE_MAX), 0);
}

static void test_nfft_selection_and_rejection(void **state)
{
	float *h = random_ref(500);
	struct pc_params p;
	struct pc_info info;
	struct pc *pc;
	char err[256];

	(void)state;
	base_params(&p, 1, 2, 1000, h, 500);
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info);
	assert_int_equal(info.nfft, 1500);   /* 1499 -> 2^2 3 5^3 */
	pc_destroy(pc);

	p.nfft = 1024;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "nfft 1024 < R+L-1 = 1499: the correlation would wrap");
	assert_null(pc_create(&p, err, sizeof(err)));
	assert_string_equal(err, "nfft 1024 < R+L-1 = 1499: the correlation would wrap");

	p.nfft = 1499;   /* exactly R+L-1: allowed */
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info);
	assert_int_equal(info.nfft, 1499);
	pc_destroy(pc);
	free(h);
}

/* ---- parameter rejection ---------------------------------------------- */

static void expect_reject(const struct pc_params *p, const char *needle)
{
	char err[256] = "";

	assert_int_equal(pc_params_check(p, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
	err[0] = '\0';
	assert_null(pc_create(p, err, sizeof(err)));
	if (!strstr(err, needle))
		fail_msg("pc_create error \"%s\" does not mention \"%s\"", err, needle);
}

static void test_rejections(void **state)
{
	float *h = random_ref(600), zero[8] = { 0 };
	struct pc_params p;

	(void)state;
	base_params(&p, 1, 1, 500, h, 600);
	expect_reject(&p, "pulse length L=600 samples exceeds range samples R=500");
	base_params(&p, 1, 1, 500, h, 0);
	expect_reject(&p, "L=0");
	base_params(&p, 1, 1, 500, NULL, 10);
	expect_reject(&p, "empty");
	base_params(&p, 0, 1, 500, h, 10);
	expect_reject(&p, "channels=0");
	base_params(&p, 1, 0, 500, h, 10);
	expect_reject(&p, "pulses=0");
	base_params(&p, 1, 1, 0, h, 10);
	expect_reject(&p, "samples=0");
	base_params(&p, 1, 1, 500, zero, 4);
	expect_reject(&p, "all zeros");
	base_params(&p, 1, 1, 500, h, 10);
	h[3] = NAN;
	expect_reject(&p, "NaN");
	h[3] = 0.5f;
	base_params(&p, 1, 1, 500, h, 10);
	p.in_format = (enum pc_format)7;
	expect_reject(&p, "format");
	base_params(&p, 1, 1, 500, h, 10);
	p.out_mode = (enum pc_output)7;
	expect_reject(&p, "output mode");
	base_params(&p, 1, 1, 500, h, 10);
	p.normalize = (enum pc_normalize)7;
	expect_reject(&p, "normalize");
	base_params(&p, 1, 1, 500, h, 10);
	p.cpu_threads = 0;
	expect_reject(&p, "cpu_threads 0");
	base_params(&p, 1, 1, 500, h, 10);
	p.backend = (enum pc_backend)9;
	expect_reject(&p, "backend");
	base_params(&p, 1, 1, 500, h, 10);
	p.idle_spin_us = PC_MAX_IDLE_SPIN_US + 1;
	expect_reject(&p, "idle_spin_us 1000001");
	base_params(&p, 65536, 65536, 4000000000u, h, 10);
	expect_reject(&p, "too large");
	free(h);
}

/* streams = auto: the shallowest depth within PC_AUTO_MARGIN of the fastest. */
static void test_auto_pick(void **state)
{
	static const unsigned d[3] = PC_AUTO_DEPTHS;
	double a[3] = { 1000, 1500, 1600 };   /* 4 is 6.7 % faster than 3 */
	double b[3] = { 1000, 1590, 1600 };   /* 3 within 0.6 % of 4: keep 3 */
	double c[3] = { 2000, 1990, 2100 };   /* 4 is 5 % faster than 2 */
	double e[3] = { 2090, 1990, 2100 };   /* 2 within 0.5 %: keep 2 */
	double f[3] = { 0, 0, 1200 };         /* only 4 measured */
	double g[3] = { 0, -1, 0 };           /* none measured */
	double h1[3] = { 1500, 0, 0 };        /* a prefix: the loop's view after depth 2 */

	(void)state;
	assert_int_equal(d[0], 2);
	assert_int_equal(pc_auto_pick(d, a, 3), 2);
	assert_int_equal(pc_auto_pick(d, b, 3), 1);
	assert_int_equal(pc_auto_pick(d, c, 3), 2);
	assert_int_equal(pc_auto_pick(d, e, 3), 0);
	assert_int_equal(pc_auto_pick(d, f, 3), 2);
	assert_int_equal(pc_auto_pick(d, g, 3), -1);
	assert_int_equal(pc_auto_pick(d, h1, 1), 0);
	assert_int_equal(pc_auto_pick(d, a, 2), 1);   /* 3 is 50 % faster than 2 */
}

/* streams = 0 (auto) is accepted for every backend; the CPU ignores it. */
static void test_auto_streams_params(void **state)
{
	float *h = random_ref(10);
	struct pc_params p;
	struct pc_info info;
	struct pc *pc;
	char err[256] = "";

	(void)state;
	base_params(&p, 1, 2, 100, h, 10);
	p.streams = 0;
	p.backend = PC_BACKEND_AUTO;   /* checked as for CUDA; a CPU-only build has no CUDA */
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
	p.streams = 65;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "streams 65: must be 1..64, or 0 for auto"));
	p.streams = 0;
	p.backend = PC_BACKEND_CPU;
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info);
	assert_string_equal(info.depth_choice, "");   /* nothing to choose on the CPU */
	pc_destroy(pc);
	free(h);
}

static void test_backend_choice(void **state)
{
	float *h = random_ref(10);
	struct pc_params p;
	struct pc_info info;
	struct pc *pc;
	char err[256] = "";

	(void)state;
	base_params(&p, 1, 1, 100, h, 10);
	p.backend = PC_BACKEND_AUTO;
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info);
	assert_int_equal(info.backend, pc_cuda_available() ? PC_BACKEND_CUDA : PC_BACKEND_CPU);
	pc_destroy(pc);
	if (!pc_cuda_available()) {
		/* Without a usable device, asking for CUDA is a clear error. */
		p.backend = PC_BACKEND_CUDA;
		assert_null(pc_create(&p, err, sizeof(err)));
		assert_true(strstr(err, "cuda") != NULL);
	}
	assert_string_equal(pc_backend_name(PC_BACKEND_CPU), "cpu");
	assert_string_equal(pc_backend_name(PC_BACKEND_CUDA), "cuda");
	assert_string_equal(pc_backend_name(PC_BACKEND_AUTO), "auto");
	assert_string_equal(pc_format_name(PC_FMT_CF32), "cf32");
	assert_string_equal(pc_format_name(PC_FMT_SC16), "sc16");
	assert_string_equal(pc_output_name(PC_OUT_COMPLEX), "complex");
	assert_string_equal(pc_output_name(PC_OUT_MAGNITUDE), "magnitude");
	assert_string_equal(pc_output_name(PC_OUT_POWER_DB), "power_db");
	free(h);
}

/* ---- sizes, semantics, faults ----------------------------------------- */

static void test_bytes(void **state)
{
	float *h = random_ref(10);
	struct pc_params p;
	char err[256];

	(void)state;
	assert_int_equal(pc_format_sample_bytes(PC_FMT_CF32), 8);
	assert_int_equal(pc_format_sample_bytes(PC_FMT_SC16), 4);
	assert_int_equal(pc_output_sample_bytes(PC_OUT_COMPLEX), 8);
	assert_int_equal(pc_output_sample_bytes(PC_OUT_MAGNITUDE), 4);
	assert_int_equal(pc_output_sample_bytes(PC_OUT_POWER_DB), 4);
	for (int f = PC_FMT_CF32; f <= PC_FMT_SC16; f++) {
		for (int m = PC_OUT_COMPLEX; m <= PC_OUT_POWER_DB; m++) {
			struct pc *pc;

			base_params(&p, 3, 5, 101, h, 10);
			p.in_format = (enum pc_format)f;
			p.out_mode = (enum pc_output)m;
			pc = pc_create(&p, err, sizeof(err));
			assert_non_null(pc);
			assert_int_equal(pc_in_bytes(pc), 3 * 5 * 101 * (f == PC_FMT_CF32 ? 8 : 4));
			assert_int_equal(pc_out_bytes(pc), 3 * 5 * 101 * (m == PC_OUT_COMPLEX ? 8 : 4));
			pc_destroy(pc);
		}
	}
	free(h);
}

static void test_submit_poll(void **state)
{
	float *h = random_ref(20);
	struct pc_params p;
	struct pc_done d[4];
	struct pc_info info;
	struct pc *pc;
	char err[256];
	float *in, *out, *out2;
	size_t n = 2 * 3 * 300;
	double complex *xd = malloc(n * sizeof(*xd)), *y = malloc(n * sizeof(*y));

	(void)state;
	assert_non_null(xd);
	assert_non_null(y);
	base_params(&p, 2, 3, 300, h, 20);
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info);
	assert_true(info.depth >= 1);
	assert_true(info.device[0] != '\0');
	in = random_input(PC_FMT_CF32, n, xd);
	ref_corr(xd, 6, 300, h, 20, ref_gain(h, 20, PC_NORM_NOISE), y);
	out = malloc(pc_out_bytes(pc));
	out2 = malloc(pc_out_bytes(pc));
	poison(out, pc_out_bytes(pc));

	assert_int_equal(pc_in_flight(pc), 0);
	assert_int_equal(pc_poll(pc, d, 4, 0), 0);
	assert_int_equal(pc_poll(pc, d, 4, -1), 0);   /* nothing in flight: no wait */
	assert_int_equal(pc_submit(pc, in, out, 42), 0);
	assert_int_equal(pc_in_flight(pc), 1);
	/* depth reached: -EAGAIN, and the pc is not failed by it */
	for (unsigned i = 1; i < info.depth; i++)
		assert_int_equal(pc_submit(pc, in, out2, 43 + i), 0);
	assert_int_equal(pc_submit(pc, in, out2, 99), -EAGAIN);
	assert_int_equal(pc_execute(pc, in, out2, NULL), -EBUSY);
	assert_int_equal(pc_poll(pc, d, 1, 100), 1);
	assert_int_equal(d[0].tag, 42);
	assert_true(d[0].flags & PC_DONE_INPUT);
	assert_true(d[0].flags & PC_DONE_OUTPUT);
	assert_int_equal(d[0].nonfinite_rows, 0);
	check_output(PC_OUT_COMPLEX, out, y, n);
	while (pc_in_flight(pc))
		assert_true(pc_poll(pc, d, 4, -1) >= 0);
	assert_int_equal(pc_poll(pc, d, 4, 0), 0);
	/* bad arguments: -EINVAL without failing the pc */
	assert_int_equal(pc_submit(pc, NULL, out, 1), -EINVAL);
	assert_int_equal(pc_submit(pc, (char *)in + 1, out, 1), -EINVAL);
	assert_int_equal(pc_submit(pc, in, out, 7), 0);
	assert_int_equal(pc_poll(pc, d, 4, -1), 1);
	assert_int_equal(d[0].tag, 7);
	assert_string_equal(pc_last_error(pc), "");
	pc_destroy(pc);
	free(in);
	free(out);
	free(out2);
	free(xd);
	free(y);
	free(h);
}

/*
 * Straggler take-over: worker 1 is held after computing each block it
 * claims (CHIRP_PC_TEST_STALL_MS, as if its vCPU were taken away) until
 * another thread has stored that block. The caller must store it itself,
 * every output must still be right, and no thread may read a CPI's input
 * after the CPI is reported: each CPI's input is a fresh copy freed at
 * once (ASan flags a late read). With tune.takeover off the caller waits
 * for the stalled worker instead (a short stall), and recomputes nothing.
 * The hook is in test builds only (tests link libchirpcore-hooks).
 */
static void run_stalled(enum pc_switch takeover, unsigned spin_us, const char *stall_ms,
			unsigned min_cpis, unsigned max_cpis, uint32_t *recomputed)
{
	enum { C = 2, P = 16, R = 1000, L = 77 };
	size_t n = (size_t)C * P * R;
	float *h = random_ref(L);
	double complex *xd = malloc(n * sizeof(*xd)), *y = malloc(n * sizeof(*y));
	void *in;
	float *out;
	struct pc_params p;
	struct pc_done d[4];
	struct pc *pc;
	char err[256];

	assert_non_null(xd);
	assert_non_null(y);
	in = random_input(PC_FMT_CF32, n, xd);
	ref_corr(xd, (size_t)C * P, R, h, L, ref_gain(h, L, PC_NORM_NOISE), y);
	setenv("CHIRP_PC_TEST_STALL_MS", stall_ms, 1);
	base_params(&p, C, P, R, h, L);
	p.cpu_threads = 2;   /* the caller and worker 1, the one held */
	p.idle_spin_us = spin_us;
	p.tune.block_kib = 16;   /* 2 rows a block: 16 blocks */
	p.tune.takeover = takeover;
	pc = pc_create(&p, err, sizeof(err));
	unsetenv("CHIRP_PC_TEST_STALL_MS");
	if (!pc)
		fail_msg("pc_create: %s", err);
	out = malloc(pc_out_bytes(pc));
	assert_non_null(out);
	*recomputed = 0;
	for (unsigned i = 0; i < max_cpis && (i < min_cpis || *recomputed == 0); i++) {
		void *copy = malloc(pc_in_bytes(pc));

		assert_non_null(copy);
		memcpy(copy, in, pc_in_bytes(pc));
		poison(out, pc_out_bytes(pc));
		assert_int_equal(pc_submit(pc, copy, out, i), 0);
		assert_int_equal(pc_poll(pc, d, 4, -1), 1);
		free(copy);   /* reported done: nothing may read it now */
		assert_int_equal(d[0].tag, i);
		assert_true(d[0].flags & PC_DONE_OUTPUT);
		assert_int_equal(d[0].nonfinite_rows, 0);
		check_output(PC_OUT_COMPLEX, out, y, n);
		*recomputed += d[0].recomputed;
	}
	pc_destroy(pc);
	free(out);
	free(in);
	free(xd);
	free(y);
	free(h);
}

static void test_straggler_takeover(void **state)
{
	uint32_t recomputed;

	(void)state;
	/* Held for up to 0.3 s a block: without the take-over the CPI waits. */
	run_stalled(PC_SWITCH_ON, 0, "300", 10, 100, &recomputed);
	assert_true(recomputed >= 1);
	run_stalled(PC_SWITCH_OFF, 0, "2", 5, 5, &recomputed);
	assert_int_equal(recomputed, 0);
	/* Auto with sleeping workers (idle_spin_us 0): off (doc/pc.md: a late
	 * block is then mostly a late wake-up, and a second copy competes
	 * with the worker it waits for). */
	run_stalled(PC_SWITCH_AUTO, 0, "2", 5, 5, &recomputed);
	assert_int_equal(recomputed, 0);
	/* Auto with spinning workers: on (the default idle_spin_us). */
	run_stalled(PC_SWITCH_AUTO, 2000, "300", 10, 100, &recomputed);
	assert_true(recomputed >= 1);
	/* ... unless turned off explicitly. */
	run_stalled(PC_SWITCH_OFF, 2000, "2", 5, 5, &recomputed);
	assert_int_equal(recomputed, 0);
}

/*
 * pc_calibrate on a backend slower than its time limit (300 ms): every CPI
 * waits for a worker held 400 ms (the stall hook, take-over off), so the
 * first timed CPI already ends past the limit. It must still finish with
 * the rate of the two CPIs it needs, not wait for a CPI it never submits.
 */
static void test_calibrate_slow_backend(void **state)
{
	enum { C = 2, P = 16, R = 1000, L = 77 };
	float *h = random_ref(L);
	struct pc_params p;
	struct pc *pc;
	double cps = -1;
	char err[256];

	(void)state;
	setenv("CHIRP_PC_TEST_STALL_MS", "400", 1);
	base_params(&p, C, P, R, h, L);
	p.cpu_threads = 2;
	p.tune.block_kib = 16;
	p.tune.takeover = PC_SWITCH_OFF;
	pc = pc_create(&p, err, sizeof(err));
	unsetenv("CHIRP_PC_TEST_STALL_MS");
	if (!pc)
		fail_msg("pc_create: %s", err);
	assert_int_equal(pc_calibrate(pc, &cps, err, sizeof(err)), 0);
	/* Two CPIs of at least 0.4 s each, timed: under 5 CPI/s, above 0. */
	assert_true(cps > 0 && cps < 5.0);
	pc_destroy(pc);
	free(h);
}

/*
 * idle_spin_us on the CPU backend: with a spin longer than the pause
 * between CPIs the workers are still polling when the next CPI comes
 * (pc_done.woken 0: none had to be woken); without one they are asleep
 * after a 100 ms pause and the hand-off wakes them. Every output is
 * checked, and destroying a pc whose workers spin does not wait out the
 * spin (quit is seen while polling).
 */
static double run_idle(unsigned spin_us, unsigned pause_us, unsigned ncpi, uint32_t *woken)
{
	enum { C = 2, P = 16, R = 1000, L = 77, T = 4 };
	size_t n = (size_t)C * P * R;
	float *h = random_ref(L);
	double complex *xd = malloc(n * sizeof(*xd)), *y = malloc(n * sizeof(*y));
	struct pc_params p;
	struct pc_info info;
	struct pc_done d[4];
	struct pc *pc;
	struct timespec t0, t1;
	char err[256];
	void *in;
	float *out;

	assert_non_null(xd);
	assert_non_null(y);
	in = random_input(PC_FMT_CF32, n, xd);
	ref_corr(xd, (size_t)C * P, R, h, L, ref_gain(h, L, PC_NORM_NOISE), y);
	base_params(&p, C, P, R, h, L);
	p.cpu_threads = T;
	p.idle_spin_us = spin_us;
	p.tune.block_kib = 16;   /* 2 rows a block: 16 blocks */
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	pc_get_info(pc, &info);
	assert_int_equal(info.idle_spin_us, spin_us);
	out = malloc(pc_out_bytes(pc));
	assert_non_null(out);
	for (unsigned i = 0; i < ncpi; i++) {
		if (i)
			usleep(pause_us);
		poison(out, pc_out_bytes(pc));
		assert_int_equal(pc_submit(pc, in, out, i), 0);
		assert_int_equal(pc_poll(pc, d, 4, -1), 1);
		assert_int_equal(d[0].tag, i);
		check_output(PC_OUT_COMPLEX, out, y, n);
		assert_true(d[0].woken <= T - 1);
		woken[i] = d[0].woken;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pc_destroy(pc);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(out);
	free(in);
	free(xd);
	free(y);
	free(h);
	return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

static void test_idle_spin(void **state)
{
	uint32_t woken[5], sum = 0;
	double destroy_s;

	(void)state;
	/* 1 s spin, 5 ms between CPIs: nobody sleeps after the first CPI */
	destroy_s = run_idle(1000000, 5000, 5, woken);
	for (int i = 1; i < 5; i++)
		assert_int_equal(woken[i], 0);
	/* destroy right after a CPI, the workers mid-spin: it must not wait
	 * out their 1 s spin (a loose bound, not a timing measurement) */
	assert_true(destroy_s < 0.6);
	/* no spin, 100 ms between CPIs: the workers sleep and are woken */
	run_idle(0, 100000, 5, woken);
	for (int i = 1; i < 5; i++)
		sum += woken[i];
	print_message("idle_spin_us 0: workers woken per CPI %u %u %u %u (of 3)\n",
		      woken[1], woken[2], woken[3], woken[4]);
	assert_true(sum >= 6);
}

/*
 * Polling workers take the job without the lock (pc_cpu.c, worker_main),
 * so one may read the pointers of a later CPI than the gen it saw. CPIs
 * back to back and with short pauses, alternating between two inputs and
 * two outputs, each output checked against its own input: a worker that
 * computed a stale gen's block from the other CPI's buffers would show.
 * pc_done.absent: never more than T - 1 (the caller always claims first
 * or finds the CPI taken); with two rows (a row a block) at least T - 2
 * (two threads at most, or one that took both); with one thread, 0.
 */
static void test_spin_handoff(void **state)
{
	enum { C = 1, P = 16, R = 1000, L = 77, T = 4, N = 300 };
	size_t n = (size_t)C * P * R;
	float *h = random_ref(L);
	double complex *xd[2], *y[2];
	void *in[2];
	float *out[2];
	struct pc_params p;
	struct pc_done d[4];
	struct pc *pc;
	char err[256];
	unsigned absent_max = 0;

	(void)state;
	for (int k = 0; k < 2; k++) {
		xd[k] = malloc(n * sizeof(*xd[k]));
		y[k] = malloc(n * sizeof(*y[k]));
		assert_non_null(xd[k]);
		assert_non_null(y[k]);
		in[k] = random_input(PC_FMT_CF32, n, xd[k]);
		ref_corr(xd[k], (size_t)C * P, R, h, L, ref_gain(h, L, PC_NORM_NOISE), y[k]);
	}
	base_params(&p, C, P, R, h, L);
	p.cpu_threads = T;
	p.idle_spin_us = 1000000;
	p.tune.block_kib = 16;   /* 2 rows a block: 8 blocks */
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	for (int k = 0; k < 2; k++) {
		out[k] = malloc(pc_out_bytes(pc));
		assert_non_null(out[k]);
	}
	for (unsigned i = 0; i < N; i++) {
		int k = (int)(i & 1);

		if (i % 7 == 3)
			usleep(50 * (i % 5));
		poison(out[k], pc_out_bytes(pc));
		assert_int_equal(pc_submit(pc, in[k], out[k], i), 0);
		assert_int_equal(pc_poll(pc, d, 4, -1), 1);
		assert_int_equal(d[0].tag, i);
		assert_int_equal(d[0].woken, 0);
		assert_true(d[0].absent <= T - 1);
		if (d[0].absent > absent_max)
			absent_max = d[0].absent;
		check_output(PC_OUT_COMPLEX, out[k], y[k], n);
	}
	print_message("8 blocks over %d threads: at most %u computed nothing\n", T, absent_max);
	pc_destroy(pc);

	/* Two rows, two blocks of a row (the first rows of the same inputs;
	 * rows are independent): at most two threads compute; then one
	 * thread alone, which is never absent. */
	p.pulses = 2;
	for (int c = 0; c < 2; c++) {
		/* absent: threads less the (one or two) that computed */
		unsigned threads = c == 0 ? T : 1, lo = threads > 1 ? threads - 2 : 0;

		p.cpu_threads = (int)threads;
		pc = pc_create(&p, err, sizeof(err));
		if (!pc)
			fail_msg("pc_create: %s", err);
		for (unsigned i = 0; i < 20; i++) {
			int k = (int)(i & 1);

			poison(out[k], pc_out_bytes(pc));
			assert_int_equal(pc_submit(pc, in[k], out[k], i), 0);
			assert_int_equal(pc_poll(pc, d, 4, -1), 1);
			assert_true(d[0].absent >= lo && d[0].absent <= threads - 1);
			check_output(PC_OUT_COMPLEX, out[k], y[k], 2 * (size_t)R);
		}
		pc_destroy(pc);
	}
	for (int k = 0; k < 2; k++) {
		free(out[k]);
		free(in[k]);
		free(xd[k]);
		free(y[k]);
	}
	free(h);
}

/* CPU backend with cpu_depth > 1: up to depth CPIs queued, completions in
 * submission order through pc_poll (max honoured), each output right. */
static void test_cpu_depth(void **state)
{
	enum { D = 3, N = 5 };
	float *h = random_ref(17);
	struct pc_params p;
	struct pc_done d[8];
	struct pc_info info;
	struct pc *pc;
	char err[256];
	size_t n = 2 * 2 * 211;
	double complex *xd[N], *y[N];
	float *in[N], *out[N];
	uint64_t next_tag = 0;

	(void)state;
	base_params(&p, 2, 2, 211, h, 17);
	p.cpu_depth = 65;
	assert_null(pc_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "cpu_depth"));
	p.cpu_depth = D;
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info);
	assert_int_equal(info.depth, D);
	for (int i = 0; i < N; i++) {
		xd[i] = malloc(n * sizeof(*xd[i]));
		y[i] = malloc(n * sizeof(*y[i]));
		assert_non_null(xd[i]);
		assert_non_null(y[i]);
		in[i] = random_input(PC_FMT_CF32, n, xd[i]);
		ref_corr(xd[i], 4, 211, h, 17, ref_gain(h, 17, PC_NORM_NOISE), y[i]);
		out[i] = malloc(pc_out_bytes(pc));
		poison(out[i], pc_out_bytes(pc));
	}
	for (int i = 0; i < D; i++) {
		assert_int_equal(pc_submit(pc, in[i], out[i], 100 + i), 0);
		assert_int_equal(pc_in_flight(pc), i + 1);
	}
	assert_int_equal(pc_submit(pc, in[D], out[D], 100 + D), -EAGAIN);
	assert_int_equal(pc_execute(pc, in[D], out[D], NULL), -EBUSY);
	/* max honoured, order kept */
	assert_int_equal(pc_poll(pc, d, 2, 0), 2);
	assert_int_equal(d[0].tag, 100);
	assert_int_equal(d[1].tag, 101);
	assert_int_equal(pc_in_flight(pc), D - 2);
	for (int i = D; i < N; i++)
		assert_int_equal(pc_submit(pc, in[i], out[i], 100 + i), 0);
	assert_int_equal(pc_in_flight(pc), N - 2);
	next_tag = 102;
	while (pc_in_flight(pc)) {
		int k = pc_poll(pc, d, 8, -1);

		assert_true(k > 0);
		for (int j = 0; j < k; j++) {
			assert_int_equal(d[j].tag, next_tag++);
			assert_int_equal(d[j].flags, PC_DONE_INPUT | PC_DONE_OUTPUT);
		}
	}
	assert_int_equal(next_tag, 100 + N);
	for (int i = 0; i < N; i++)
		check_output(PC_OUT_COMPLEX, out[i], y[i], n);
	assert_int_equal(pc_execute(pc, in[0], out[1], NULL), 0);
	check_output(PC_OUT_COMPLEX, out[1], y[0], n);
	pc_destroy(pc);
	for (int i = 0; i < N; i++) {
		free(xd[i]);
		free(y[i]);
		free(in[i]);
		free(out[i]);
	}
	free(h);
}

/*
 * pc_calibrate: a positive rate from a full-depth run, the pc left idle and
 * still correct afterwards; refused while a CPI is in flight; a failing
 * backend fails the measurement with its reason. device_ns is reported.
 */
static void test_calibrate(void **state)
{
	float *h = random_ref(17);
	struct pc_params p;
	struct pc_done d[4];
	struct pc *pc;
	char err[256];
	size_t n = 3 * 5 * 301;
	double complex *xd = malloc(n * sizeof(*xd)), *y = malloc(n * sizeof(*y));
	float *in, *out;
	double cps = -1;

	(void)state;
	assert_non_null(xd);
	assert_non_null(y);
	base_params(&p, 3, 5, 301, h, 17);
	p.cpu_depth = 3;
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	in = random_input(PC_FMT_CF32, n, xd);
	ref_corr(xd, 15, 301, h, 17, ref_gain(h, 17, PC_NORM_NOISE), y);
	out = malloc(pc_out_bytes(pc));
	assert_non_null(out);
	assert_int_equal(pc_calibrate(pc, &cps, err, sizeof(err)), 0);
	assert_true(cps > 0);
	assert_int_equal(pc_in_flight(pc), 0);
	/* Busy: refused, nothing changed. */
	assert_int_equal(pc_submit(pc, in, out, 7), 0);
	assert_int_equal(pc_calibrate(pc, &cps, err, sizeof(err)), -EBUSY);
	assert_int_equal(cps, 0);
	assert_int_equal(pc_poll(pc, d, 4, -1), 1);
	assert_int_equal(d[0].tag, 7);
	assert_true(d[0].device_ns > 0);
	/* Still computes the definition after the measurement. */
	poison(out, pc_out_bytes(pc));
	assert_int_equal(pc_execute(pc, in, out, NULL), 0);
	check_output(PC_OUT_COMPLEX, out, y, n);
	if (pc_inject_fault(pc) == 0) {
		assert_true(pc_calibrate(pc, &cps, err, sizeof(err)) < 0);
		assert_non_null(strstr(err, "inject"));
	}
	pc_destroy(pc);
	free(in);
	free(out);
	free(xd);
	free(y);
	free(h);
}

static void test_fault_injection(void **state)
{
	float *h = random_ref(8);
	struct pc_params p;
	struct pc_done d[2];
	struct pc *pc;
	char err[256];
	float *in = calloc(2 * 64, sizeof(float)), *out = calloc(2 * 64, sizeof(float));

	(void)state;
	base_params(&p, 1, 1, 64, h, 8);
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	if (pc_inject_fault(pc) != 0) {
		pc_destroy(pc);
		free(h); free(in); free(out);
		skip();   /* built with CHIRP_NO_FAULT_INJECT */
	}
	assert_int_equal(pc_submit(pc, in, out, 1), -EIO);
	/* failed: every later call says -EIO, and says why */
	assert_int_equal(pc_submit(pc, in, out, 2), -EIO);
	assert_int_equal(pc_poll(pc, d, 2, 0), -EIO);
	assert_int_equal(pc_execute(pc, in, out, NULL), -EIO);
	assert_true(strstr(pc_last_error(pc), "inject") != NULL);
	pc_destroy(pc);
	free(h);
	free(in);
	free(out);
}

static void test_nonfinite_rows(void **state)
{
	const unsigned C = 2, P = 4, R = 300;
	float *h = random_ref(30);
	struct pc_params p;
	struct pc *pc;
	char err[256];
	size_t n = (size_t)C * P * R;
	double complex *xd = malloc(n * sizeof(*xd));
	float *in, *out = malloc(n * 8);
	uint32_t nf = 0;

	(void)state;
	base_params(&p, C, P, R, h, 30);
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	in = random_input(PC_FMT_CF32, n, xd);
	assert_int_equal(pc_execute(pc, in, out, &nf), 0);
	assert_int_equal(nf, 0);
	in[2 * (1 * R + 17)] = NAN;              /* row 1: NaN in I */
	in[2 * (5 * R + 299) + 1] = INFINITY;    /* row 5: +Inf in Q, last sample */
	in[2 * (5 * R + 3)] = -INFINITY;         /* row 5 again: still one row */
	in[2 * (7 * R)] = -INFINITY;             /* row 7, first sample */
	assert_int_equal(pc_execute(pc, in, out, &nf), 0);
	assert_int_equal(nf, 3);
	/* rows without bad input stay finite */
	for (size_t i = 0; i < R; i++)
		assert_true(isfinite(out[2 * (2 * R + i)]));
	pc_destroy(pc);
	free(in);
	free(out);
	free(xd);
	free(h);
}

static void test_power_floor(void **state)
{
	float *h = random_ref(16);
	struct pc_params p;
	struct pc *pc;
	char err[256];
	int16_t *in = calloc(2 * 2 * 200, sizeof(int16_t));
	float *out = malloc(2 * 200 * sizeof(float));

	(void)state;
	base_params(&p, 1, 2, 200, h, 16);
	p.in_format = PC_FMT_SC16;
	p.out_mode = PC_OUT_POWER_DB;
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	in[2 * (200 + 50)] = 32767;   /* row 1: one impulse */
	poison(out, 2 * 200 * sizeof(float));
	assert_int_equal(pc_execute(pc, in, out, NULL), 0);
	for (size_t i = 0; i < 200; i++)   /* row 0 all zero: exactly the floor */
		assert_true(out[i] == PC_POWER_DB_FLOOR);
	/* row 1: the impulse at 50 shows at gates 50-15..50, floor elsewhere */
	for (size_t i = 0; i < 200; i++) {
		if (i + 15 >= 50 && i <= 50)
			assert_true(out[200 + i] > -100.0f);
		else
			assert_true(out[200 + i] <= -100.0f);
	}
	assert_true(fabsf(10.0f * log10f(PC_POWER_FLOOR) - PC_POWER_DB_FLOOR) < 1e-3f);
	pc_destroy(pc);
	free(in);
	free(out);
	free(h);
}

/*
 * Output modes over the whole float range: h = [1], L = 1, normalize none,
 * so y = x; one nonzero sample per row, |x| from 1e-16 to 3e19 (|x|^2 above
 * FLT_MAX: the overflow path), plus NaN and Inf rows.
 */
static void test_output_range(void **state)
{
	const unsigned P = 80, R = 4;
	float one[2] = { 1.0f, 0.0f };
	float *in = calloc(2 * (size_t)P * R, sizeof(float));
	float *mag = malloc((size_t)P * R * sizeof(float)), *db = malloc((size_t)P * R * sizeof(float));
	double amp[80];
	struct pc_params p;
	struct pc *pc;
	char err[256];
	uint32_t nf;

	(void)state;
	for (unsigned r = 0; r < P - 2; r++) {
		double ph = urand() * M_PI;

		amp[r] = pow(10.0, -16.0 + 35.5 * r / (P - 3));   /* 1e-16 .. 3.2e19 */
		in[2 * (r * R + r % R)] = (float)(amp[r] * cos(ph));
		in[2 * (r * R + r % R) + 1] = (float)(amp[r] * sin(ph));
		amp[r] = hypot(in[2 * (r * R + r % R)], in[2 * (r * R + r % R) + 1]);
	}
	in[2 * ((P - 2) * R + 1)] = NAN;
	in[2 * ((P - 1) * R + 2) + 1] = INFINITY;
	base_params(&p, 1, P, R, one, 1);
	p.normalize = PC_NORM_NONE;
	for (int m = PC_OUT_MAGNITUDE; m <= PC_OUT_POWER_DB; m++) {
		p.out_mode = (enum pc_output)m;
		pc = pc_create(&p, err, sizeof(err));
		assert_non_null(pc);
		assert_int_equal(pc_execute(pc, in, m == PC_OUT_MAGNITUDE ? mag : db, &nf), 0);
		assert_int_equal(nf, 2);
		pc_destroy(pc);
	}
	for (unsigned r = 0; r < P - 2; r++) {
		for (unsigned g = 0; g < R; g++) {
			size_t i = r * R + g;

			if (g != r % R) {
				assert_true(mag[i] == 0.0f);
				assert_true(db[i] == PC_POWER_DB_FLOOR);
				continue;
			}
			double want_db = 20.0 * log10(amp[r]);

			if (!(fabs(mag[i] / amp[r] - 1.0) < 1e-6))
				fail_msg("row %u: |y| %g, want %g", r, mag[i], amp[r]);
			if (want_db < PC_POWER_DB_FLOOR)
				want_db = PC_POWER_DB_FLOOR;
			if (!(fabs(db[i] - want_db) < 1e-4))
				fail_msg("row %u: %.6f dB, want %.6f dB", r, db[i], want_db);
		}
	}
	/* NaN in, NaN out; Inf in (the FFT turns it into NaN), non-finite out:
	 * never a made-up finite number */
	assert_true(isnan(mag[(P - 2) * R + 1]) && isnan(db[(P - 2) * R + 1]));
	assert_true(!isfinite(mag[(P - 1) * R + 2]) && !isfinite(db[(P - 1) * R + 2]));
	free(in);
	free(mag);
	free(db);
}

/* ---- targets and sidelobes -------------------------------------------- */

/* Compress one row with the echo s (unwindowed) starting at gates d[]. */
static float *compress_echoes(const struct wf_params *wp, unsigned R, const size_t *d,
			      const double *amp, int ntargets, size_t *Lout)
{
	struct wf_params raw = *wp;
	float *h, *s, *in, *out;
	size_t L, Ls;
	struct pc_params p;
	struct pc *pc;
	char err[256];

	assert_int_equal(wf_build(wp, R, &h, &L, err, sizeof(err)), 0);
	raw.window = WIN_RECT;
	assert_int_equal(wf_build(&raw, R, &s, &Ls, err, sizeof(err)), 0);
	assert_int_equal(Ls, L);
	in = calloc(2 * (size_t)R, sizeof(float));
	out = malloc((size_t)R * sizeof(float));
	for (int t = 0; t < ntargets; t++)
		for (size_t k = 0; k < L && d[t] + k < R; k++) {
			in[2 * (d[t] + k)] += (float)amp[t] * s[2 * k];
			in[2 * (d[t] + k) + 1] += (float)amp[t] * s[2 * k + 1];
		}
	base_params(&p, 1, 1, R, h, L);
	p.out_mode = PC_OUT_MAGNITUDE;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	assert_int_equal(pc_execute(pc, in, out, NULL), 0);
	pc_destroy(pc);
	free(h);
	free(s);
	free(in);
	*Lout = L;
	return out;
}

static size_t argmax(const float *v, size_t n)
{
	size_t best = 0;

	for (size_t i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

static void lfm_bt100(struct wf_params *wp, enum wf_window win)
{
	wf_params_init(wp);
	wp->type = WF_LFM;
	wp->bandwidth_hz = 5e6;
	wp->sample_rate_hz = 10e6;   /* 2 x B */
	wp->pulse_width_s = 20e-6;   /* B tau = 100, L = 200 */
	wp->window = win;
	wp->taylor_nbar = 4;
	wp->taylor_sll_db = 35.0;
}

static void test_point_target(void **state)
{
	struct wf_params wp;
	size_t L;

	(void)state;
	for (int i = 0; i < 6; i++) {
		size_t d = (size_t)(rnd() % 800);
		double a = 1.0;
		float *y;

		lfm_bt100(&wp, i % 2 ? WIN_HAMMING : WIN_RECT);
		y = compress_echoes(&wp, 1000, &d, &a, 1, &L);
		assert_int_equal(argmax(y, 1000), d);
		free(y);
	}
	/* Barker-13 too, 3 samples per chip */
	wf_params_init(&wp);
	wp.type = WF_BARKER13;
	wp.chip_samples = 3;
	for (int i = 0; i < 3; i++) {
		size_t d = (size_t)(rnd() % 900);
		double a = 1.0;
		float *y = compress_echoes(&wp, 1000, &d, &a, 1, &L);

		assert_int_equal(L, 39);
		assert_int_equal(argmax(y, 1000), d);
		free(y);
	}
}

static void test_two_targets_resolved(void **state)
{
	struct wf_params wp;
	size_t d[2], L;
	double a[2] = { 1.0, 0.7 };
	float *y;

	(void)state;
	lfm_bt100(&wp, WIN_HAMMING);
	/* 10 samples apart = 5 resolution cells (c/2B), far less than L = 200 */
	d[0] = 300 + (size_t)(rnd() % 100);
	d[1] = d[0] + 10;
	y = compress_echoes(&wp, 1000, d, a, 2, &L);
	assert_true(d[1] - d[0] < L);
	for (int t = 0; t < 2; t++) {
		/* each target is a local peak ... */
		assert_true(y[d[t]] > y[d[t] - 1] && y[d[t]] > y[d[t] + 1]);
		/* ... of about its own amplitude (the other's sidelobes are < -40 dB) */
		assert_true(fabs(y[d[t]] / y[d[0]] - a[t] / a[0]) < 0.05);
	}
	/* and a clear dip between them: < -6 dB of the smaller peak */
	float dip = y[d[0] + 1];
	for (size_t i = d[0] + 1; i < d[1]; i++)
		if (y[i] < dip)
			dip = y[i];
	assert_true(20 * log10(dip / y[d[1]]) < -6.0);
	free(y);
}

/* Peak sidelobe (dB) of a compressed point target: the largest value outside
 * the main lobe, which ends at the first local minimum on each side. */
static double peak_sidelobe_db(const float *y, size_t n)
{
	size_t pk = argmax(y, n), lo = pk, hi = pk;
	float side = 0;

	while (lo > 0 && y[lo - 1] < y[lo])
		lo--;
	while (hi + 1 < n && y[hi + 1] < y[hi])
		hi++;
	for (size_t i = 0; i < n; i++)
		if ((i < lo || i > hi) && y[i] > side)
			side = y[i];
	return 20.0 * log10((double)side / y[pk]);
}

static void test_sidelobes(void **state)
{
	struct wf_params wp;
	size_t d = 400, L;
	double a = 1.0, psl;
	float *y;

	(void)state;
	lfm_bt100(&wp, WIN_RECT);
	y = compress_echoes(&wp, 1000, &d, &a, 1, &L);
	assert_int_equal(L, 200);
	psl = peak_sidelobe_db(y, 1000);
	print_message("LFM BT=100 fs=2B rect: peak sidelobe %.2f dB\n", psl);
	assert_true(psl <= -13.0 && psl >= -14.0);
	free(y);

	lfm_bt100(&wp, WIN_HAMMING);
	y = compress_echoes(&wp, 1000, &d, &a, 1, &L);
	psl = peak_sidelobe_db(y, 1000);
	print_message("LFM BT=100 fs=2B hamming: peak sidelobe %.2f dB\n", psl);
	assert_true(psl <= -40.0);
	free(y);

	lfm_bt100(&wp, WIN_TAYLOR);
	y = compress_echoes(&wp, 1000, &d, &a, 1, &L);
	psl = peak_sidelobe_db(y, 1000);
	print_message("LFM BT=100 fs=2B taylor(4, 35 dB): peak sidelobe %.2f dB\n", psl);
	assert_true(psl <= -34.0);
	free(y);
}

/* normalize=noise keeps white-noise power: E|y|^2 = E|x|^2. */
static void test_noise_gain(void **state)
{
	const unsigned R = 4000, P = 16;
	struct wf_params wp;
	struct pc_params p;
	struct pc *pc;
	float *h, *in, *out;
	size_t L, n = (size_t)R * P;
	double pin = 0, pout = 0;
	char err[256];

	(void)state;
	lfm_bt100(&wp, WIN_HAMMING);
	assert_int_equal(wf_build(&wp, R, &h, &L, err, sizeof(err)), 0);
	base_params(&p, 1, P, R, h, L);
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	in = malloc(n * 8);
	out = malloc(n * 8);
	for (size_t i = 0; i < 2 * n; i++) {
		/* Gaussian by Box-Muller */
		double u1 = (urand() + 1.0) / 2.0 + 1e-300, u2 = urand();

		in[i] = (float)(sqrt(-2.0 * log(u1)) * cos(M_PI * u2));
	}
	assert_int_equal(pc_execute(pc, in, out, NULL), 0);
	for (size_t r = 0; r < P; r++)
		for (size_t i = 0; i + L <= R; i++) {   /* gates with full overlap */
			size_t j = r * R + i;

			pin += (double)in[2 * j] * in[2 * j] + (double)in[2 * j + 1] * in[2 * j + 1];
			pout += (double)out[2 * j] * out[2 * j] + (double)out[2 * j + 1] * out[2 * j + 1];
		}
	assert_true(fabs(pout / pin - 1.0) < 0.05);
	pc_destroy(pc);
	free(in);
	free(out);
	free(h);
}

/* ---- planner options and concurrent creation ------------------------- */

/* One random CPI, its reference result, and runs of it through pcs made
 * with different tuning (which changes speed, never results). */
struct tuned_case {
	unsigned C, P, R;
	size_t L, n;
	float *h;
	void *in;
	double complex *y;
};

static void tuned_case_init(struct tuned_case *t, unsigned C, unsigned P, unsigned R, size_t L)
{
	double complex *xd;

	t->C = C;
	t->P = P;
	t->R = R;
	t->L = L;
	t->n = (size_t)C * P * R;
	t->h = random_ref(L);
	xd = malloc(t->n * sizeof(*xd));
	t->y = malloc(t->n * sizeof(*t->y));
	assert_non_null(xd);
	assert_non_null(t->y);
	t->in = random_input(PC_FMT_CF32, t->n, xd);
	ref_corr(xd, (size_t)C * P, R, t->h, L, ref_gain(t->h, L, PC_NORM_NOISE), t->y);
	free(xd);
}

static void tuned_case_free(struct tuned_case *t)
{
	free(t->h);
	free(t->in);
	free(t->y);
}

/* The complex output of t through a fresh pc with these threads and
 * tuning, checked against the reference (the caller frees it). */
static float *tuned_run(const struct tuned_case *t, int threads, const struct pc_tuning *tune)
{
	float *out = malloc(t->n * 8);
	struct pc_params p;
	struct pc *pc;
	char err[256];

	assert_non_null(out);
	base_params(&p, t->C, t->P, t->R, t->h, t->L);
	p.cpu_threads = threads;
	p.tune = *tune;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create %ux%ux%u T=%d: %s", t->C, t->P, t->R, threads, err);
	poison(out, t->n * 8);
	assert_int_equal(pc_execute(pc, t->in, out, NULL), 0);
	check_output(PC_OUT_COMPLEX, out, t->y, t->n);
	pc_destroy(pc);
	return out;
}

/* Relative L2 distance between two complex outputs of n samples. */
static double rel_diff(const float *a, const float *b, size_t n)
{
	double num = 0, den = 0;

	for (size_t i = 0; i < 2 * n; i++) {
		num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		den += (double)b[i] * b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/*
 * tune.fftw_planner and tune.fftw_wisdom: measured plans write the wisdom
 * file (which did not exist: a missing file is fine) and read it again on
 * the next create; their results agree with estimated plans' to float
 * rounding (FFTW may pick another algorithm: the same to the last bit is
 * not promised). A planner outside the enum is refused by pc_create.
 */
static void test_planner_and_wisdom(void **state)
{
	char path[] = "/tmp/test_pc_wisdom.XXXXXX";
	int fd = mkstemp(path);
	struct tuned_case t;
	struct pc_params p;
	struct pc_tuning tune;
	struct pc *pc;
	char err[256];
	float *est, *meas;
	off_t size;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	unlink(path);   /* a missing wisdom file is fine */
	tuned_case_init(&t, 1, 5, 96, 17);
	pc_params_init(&p);
	tune = p.tune;
	est = tuned_run(&t, 1, &tune);
	tune.fftw_planner = PC_FFTW_MEASURE;
	tune.fftw_wisdom = path;
	meas = tuned_run(&t, 1, &tune);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);   /* measured plans were written back */
	size = lseek(fd, 0, SEEK_END);
	close(fd);
	assert_true(size > 0);
	assert_true(rel_diff(meas, est, t.n) < 1e-6);
	free(meas);
	meas = tuned_run(&t, 2, &tune);   /* and read again */
	assert_true(rel_diff(meas, est, t.n) < 1e-6);
	free(meas);
	free(est);

	base_params(&p, 1, 5, 96, t.h, 17);
	p.tune.fftw_planner = (enum pc_fftw_planner)7;
	pc = pc_create(&p, err, sizeof(err));
	assert_null(pc);
	assert_non_null(strstr(err, "fftw_planner"));
	tuned_case_free(&t);
	unlink(path);
}

/*
 * tune.cuda_fused: auto by default, auto/on/off accepted and anything else
 * refused by pc_params_check and pc_create, naming the field. The CPU
 * backend ignores it (a CUDA field) and says its FFT is FFTW's
 * (pc_info.fft_engine).
 */
static void test_cuda_fused_field(void **state)
{
	static const int bad[] = { PC_SWITCH_AUTO - 1, PC_SWITCH_ON + 1, 1000 };
	float *h = random_ref(10);
	struct pc_params p;
	struct pc_info info;
	struct pc *pc;
	char err[256];

	(void)state;
	pc_params_init(&p);
	assert_int_equal(p.tune.cuda_fused, PC_SWITCH_AUTO);
	base_params(&p, 1, 2, 100, h, 10);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[64];

		p.tune.cuda_fused = (enum pc_switch)bad[i];
		err[0] = 0;
		assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "cuda_fused %d: must be auto, on or off", bad[i]);
		assert_non_null(strstr(err, want));
		assert_null(pc_create(&p, err, sizeof(err)));
		assert_non_null(strstr(err, "cuda_fused"));
	}
	for (int v = PC_SWITCH_AUTO; v <= PC_SWITCH_ON; v++) {
		p.tune.cuda_fused = (enum pc_switch)v;
		assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
		pc = pc_create(&p, err, sizeof(err));
		if (!pc)
			fail_msg("cuda_fused %d on the CPU backend: %s", v, err);
		pc_get_info(pc, &info);
		assert_int_equal(info.backend, PC_BACKEND_CPU);
		assert_string_equal(info.fft_engine, "fftw3f");
		pc_destroy(pc);
	}
	free(h);
}

/*
 * tune.block_kib changes how a CPI is cut into blocks, never its result:
 * explicit sizes (a row a block, several rows plus a tail block, the whole
 * CPI in one) give the same output as the balanced default, over 1 and 3
 * threads, to the last bit: every row goes through the same per-row
 * arithmetic (estimated plans of one row length, rows 64-byte aligned),
 * only the batching differs, and which thread computes a row must not
 * matter either.
 */
static void test_block_kib_results(void **state)
{
	static const unsigned kibs[] = { 1, 16, 24, 1024 };
	static const int threads[] = { 1, 3 };
	struct tuned_case t;
	struct pc_params p;
	float *ref;

	(void)state;
	tuned_case_init(&t, 3, 7, 1000, 100);
	pc_params_init(&p);
	ref = tuned_run(&t, 1, &p.tune);
	for (size_t i = 0; i < sizeof(kibs) / sizeof(kibs[0]); i++)
		for (size_t j = 0; j < sizeof(threads) / sizeof(threads[0]); j++) {
			struct pc_tuning tune = p.tune;
			float *out;
			double d;

			tune.block_kib = kibs[i];
			out = tuned_run(&t, threads[j], &tune);
			d = rel_diff(out, ref, t.n);
			if (memcmp(out, ref, t.n * 8) != 0)
				fail_msg("block_kib %u, %d threads: not the default blocks' result "
					 "(relative L2 difference %g)", kibs[i], threads[j], d);
			free(out);
		}
	free(ref);
	tuned_case_free(&t);
}

/*
 * Reload while running: pcs built, run and destroyed from several threads
 * at once (the FFTW planner is not thread-safe; pc_cpu serializes it). Data
 * and references are made on the main thread; workers only report errors
 * (cmocka's asserts belong to the main thread).
 */
struct cjob {
	unsigned R;
	size_t L;
	int threads;
	float *h;
	float *in;
	double complex *y;
	double rel;          /* result: relative L2 error, or -1 on failure */
};

#define CJOBS 6

static void *create_loop(void *arg)
{
	struct cjob *j = arg;

	for (int i = 0; i < CJOBS; i++, j++) {
		size_t n = 5 * (size_t)j->R;
		float *out = malloc(n * 8);
		struct pc_params p;
		struct pc *pc;
		char err[256];
		double num = 0, den = 0;

		j->rel = -1;
		base_params(&p, 1, 5, j->R, j->h, j->L);
		p.cpu_threads = j->threads;
		pc = pc_create(&p, err, sizeof(err));
		if (!pc || !out || pc_execute(pc, j->in, out, NULL) != 0) {
			pc_destroy(pc);
			free(out);
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			double complex d = out[2 * k] + I * out[2 * k + 1] - j->y[k];

			num += creal(d) * creal(d) + cimag(d) * cimag(d);
			den += creal(j->y[k]) * creal(j->y[k]) + cimag(j->y[k]) * cimag(j->y[k]);
		}
		j->rel = sqrt(num / den);
		pc_destroy(pc);
		free(out);
	}
	return NULL;
}

/* The device string names the blocks a CPI is cut into (pc_cpu.c,
 * balanced_block_rows): by default the size under the 256 KiB cap that
 * lets the threads finish together; an explicit tune.block_kib as it is. */
static void expect_blocks(unsigned C, unsigned P, unsigned R, size_t L, int T,
			  unsigned kib, const char *want)
{
	float *h = random_ref(L);
	struct pc_params p;
	struct pc_info info;
	struct pc *pc;
	char err[256];

	base_params(&p, C, P, R, h, L);
	p.cpu_threads = T;
	p.tune.block_kib = kib;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create %ux%ux%u T=%d: %s", C, P, R, T, err);
	pc_get_info(pc, &info);
	if (!strstr(info.device, want))
		fail_msg("%ux%ux%u L=%zu T=%d block_kib=%u: device \"%s\", want \"%s\"", C, P, R,
			 L, T, kib, info.device, want);
	pc_destroy(pc);
	free(h);
}

static void test_balanced_blocks(void **state)
{
	(void)state;
	/* nfft 4608: 36 KiB rows, 7 under 256 KiB. 8 threads: 19 blocks of 7
	 * take 3 rounds (21 row times), 32 of 4 take 4 (16, the least). */
	expect_blocks(1, 128, 4096, 512, 8, 0, "32 blocks of 4 rows");
	expect_blocks(1, 128, 4096, 512, 8, 256, "19 blocks of 7 rows");
	expect_blocks(1, 128, 4096, 512, 4, 0, "32 blocks of 4 rows");
	/* One thread: any size is as fast; the cap (fewest FFTW calls) stays. */
	expect_blocks(1, 128, 4096, 512, 1, 0, "1 thread, 19 blocks of 7 rows");
	/* 6 threads: 64 of 2 rows (11 rounds: 22 row times) against 19 of 7
	 * (3 rounds and the 2-row rest alone: 23). */
	expect_blocks(1, 128, 4096, 512, 6, 0, "64 blocks of 2 rows");
	/* Fewer rows than threads x cap: a block each at most. */
	expect_blocks(1, 6, 1000, 100, 8, 0, "6 blocks of 1 row");
}

/*
 * pc_bind_threads pins the CPU backend's workers (not the caller) and the
 * results stay right; with one thread there is nothing to pin.
 */
static void test_bind_threads(void **state)
{
	struct tuned_case t;
	struct pc_params p;
	struct pc *pc;
	char err[256];
	cpu_set_t cpus, before, after;
	float *out;

	(void)state;
	tuned_case_init(&t, 1, 6, 500, 40);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &cpus);
	for (int threads = 1; threads <= 3; threads += 2) {
		uint32_t nf = 99;

		base_params(&p, t.C, t.P, t.R, t.h, t.L);
		p.cpu_threads = threads;
		pc = pc_create(&p, err, sizeof(err));
		if (!pc)
			fail_msg("pc_create: %s", err);
		assert_int_equal(pc_bind_threads(pc, &cpus), threads - 1);
		assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
		assert_true(CPU_EQUAL(&before, &after));   /* the caller untouched */
		out = malloc(pc_out_bytes(pc));
		assert_non_null(out);
		poison(out, pc_out_bytes(pc));
		assert_int_equal(pc_execute(pc, t.in, out, &nf), 0);
		assert_int_equal(nf, 0);
		check_output(PC_OUT_COMPLEX, out, t.y, t.n);
		free(out);
		pc_destroy(pc);
	}
	tuned_case_free(&t);
}

static void test_concurrent_create(void **state)
{
	struct cjob jobs[3][CJOBS];
	pthread_t th[3];

	(void)state;
	for (int t = 0; t < 3; t++)
		for (int i = 0; i < CJOBS; i++) {
			struct cjob *j = &jobs[t][i];
			size_t n;
			double complex *xd;

			j->R = 100 + 37 * (unsigned)(i + t);
			j->L = 1 + 5 * (size_t)i;
			j->threads = 1 + (i + t) % 2;
			n = 5 * (size_t)j->R;
			xd = malloc(n * sizeof(*xd));
			j->y = malloc(n * sizeof(*j->y));
			assert_non_null(xd);
			assert_non_null(j->y);
			j->h = random_ref(j->L);
			j->in = random_input(PC_FMT_CF32, n, xd);
			ref_corr(xd, 5, j->R, j->h, j->L, ref_gain(j->h, j->L, PC_NORM_NOISE), j->y);
			free(xd);
		}
	for (int t = 0; t < 3; t++)
		assert_int_equal(pthread_create(&th[t], NULL, create_loop, jobs[t]), 0);
	for (int t = 0; t < 3; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	for (int t = 0; t < 3; t++)
		for (int i = 0; i < CJOBS; i++) {
			struct cjob *j = &jobs[t][i];

			if (!(j->rel >= 0 && j->rel <= 1e-5))
				fail_msg("thread %d job %d (R=%u L=%zu): relative error %g", t, i, j->R, j->L, j->rel);
			free(j->h);
			free(j->in);
			free(j->y);
		}
}

/* ---- radar modes: a filter per CPI ------------------------------------- */


/* A pc of the three modes (or, with only >= 0, of mode `only` alone as the
 * single reference, nmodes 0, at the FFT length nfft). */
static struct pc *tri_pc(const struct tri_modes *t, int only, unsigned C, unsigned P, unsigned R,
			 enum pc_format fmt, enum pc_output om, int threads, size_t nfft)
{
	struct pc_params p;
	struct pc *pc;
	char err[256];

	base_params(&p, C, P, R, NULL, 0);
	if (only >= 0) {
		p.ref = t->h[only];
		p.ref_len = t->L[only];
	} else {
		p.modes = t->m;
		p.nmodes = NTRI;
	}
	p.in_format = fmt;
	p.out_mode = om;
	p.cpu_threads = threads;
	p.cpu_depth = 3;
	p.nfft = nfft;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create (%s): %s", only >= 0 ? "one mode" : "three modes", err);
	return pc;
}

/*
 * The mode changes every CPI, with up to three CPIs queued: each output is
 * checked against the direct correlation with ITS mode's reference and
 * gain, each report carries its mode, and each equals bit for bit what a
 * pc built with that mode alone (at the same FFT length) makes of it.
 */
static void modes_round_trip(enum pc_format fmt, enum pc_output om, int threads)
{
	enum { C = 2, P = 3, R = 1000, NCPI = 9 };
	size_t rows = (size_t)C * P, n = rows * R;
	struct tri_modes t;
	struct pc *pc, *one[NTRI];
	struct pc_info info;
	double complex *xd = malloc(NCPI * n * sizeof(*xd)), *y = malloc(n * sizeof(*y));
	void *in[NCPI];
	char *out, *solo;
	size_t ob;

	assert_non_null(xd);
	assert_non_null(y);
	tri_modes_make(&t, R);
	pc = tri_pc(&t, -1, C, P, R, fmt, om, threads, 0);
	pc_get_info(pc, &info);
	assert_int_equal(info.ref_len, 300);   /* the longest */
	assert_int_equal(info.nfft, pc_good_fft_size(R + 300 - 1));
	for (int i = 0; i < NTRI; i++) {
		assert_true(pc_has_mode(pc, t.m[i].id));
		one[i] = tri_pc(&t, i, C, P, R, fmt, om, threads, info.nfft);
	}
	assert_false(pc_has_mode(pc, 1));
	assert_false(pc_has_mode(pc, 64));
	ob = pc_out_bytes(pc);
	out = malloc(NCPI * ob);
	solo = malloc(ob);
	assert_non_null(out);
	assert_non_null(solo);
	poison(out, NCPI * ob);
	for (int k = 0; k < NCPI; k++)
		in[k] = random_input(fmt, n, xd + (size_t)k * n);
	/* Three at a time in flight, the mode changing every CPI. */
	for (int k0 = 0; k0 < NCPI; k0 += 3) {
		struct pc_done d[8];
		int got = 0;

		for (int k = k0; k < k0 + 3; k++)
			assert_int_equal(pc_submit_mode(pc, in[k], out + (size_t)k * ob, 100 + k,
							t.m[k % NTRI].id), 0);
		while (got < 3) {
			int nd = pc_poll(pc, d, 8, -1);

			assert_true(nd > 0);
			for (int i = 0; i < nd; i++, got++) {
				int k = k0 + got;

				assert_int_equal(d[i].tag, 100 + k);
				assert_int_equal(d[i].mode, t.m[k % NTRI].id);
				assert_true(d[i].flags & PC_DONE_OUTPUT);
			}
		}
	}
	for (int k = 0; k < NCPI; k++) {
		int mi = k % NTRI;

		ref_corr(xd + (size_t)k * n, rows, R, t.h[mi], t.L[mi],
			 ref_gain(t.h[mi], t.L[mi], PC_NORM_NOISE), y);
		check_output(om, out + (size_t)k * ob, y, n);
		poison(solo, ob);
		assert_int_equal(pc_execute(one[mi], in[k], solo, NULL), 0);
		if (memcmp(solo, out + (size_t)k * ob, ob) != 0)
			fail_msg("%s->%s, %d threads: CPI %d (mode %u) differs from a pc of that mode alone",
				 pc_format_name(fmt), pc_output_name(om), threads, k, t.m[mi].id);
	}
	for (int k = 0; k < NCPI; k++)
		free(in[k]);
	for (int i = 0; i < NTRI; i++)
		pc_destroy(one[i]);
	pc_destroy(pc);
	tri_modes_free(&t);
	free(out);
	free(solo);
	free(xd);
	free(y);
}

static void test_modes_per_cpi(void **state)
{
	(void)state;
	for (int f = PC_FMT_CF32; f <= PC_FMT_SC16; f++)
		for (int m = PC_OUT_COMPLEX; m <= PC_OUT_POWER_DB; m++)
			modes_round_trip((enum pc_format)f, (enum pc_output)m, 1 + (m + f) % 3);
}

/*
 * An unknown mode: -ENOENT, nothing queued, the pc not failed, and the
 * next CPI of a known mode is right. pc_submit is mode 0, which a table
 * without id 0 lacks; pc_calibrate runs on the table's first mode.
 */
static void test_modes_unknown(void **state)
{
	enum { R = 400 };
	struct tri_modes t;
	struct pc_params p;
	struct pc_done d[4];
	struct pc *pc;
	double complex *xd = malloc(R * sizeof(*xd)), *y = malloc(R * sizeof(*y));
	void *in;
	float *out = malloc(R * 8);
	char err[256];
	double cps = 0;

	(void)state;
	assert_non_null(xd);
	assert_non_null(y);
	assert_non_null(out);
	tri_modes_make(&t, R);
	in = random_input(PC_FMT_CF32, R, xd);
	base_params(&p, 1, 1, R, NULL, 0);
	p.modes = t.m;
	p.nmodes = NTRI;
	p.cpu_threads = 2;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	assert_int_equal(pc_submit_mode(pc, in, out, 1, 5), -ENOENT);
	assert_int_equal(pc_submit_mode(pc, in, out, 2, 64), -ENOENT);
	assert_int_equal(pc_submit_mode(pc, in, out, 3, UINT32_MAX), -ENOENT);
	assert_int_equal(pc_in_flight(pc), 0);
	assert_int_equal(pc_poll(pc, d, 4, 0), 0);
	assert_string_equal(pc_last_error(pc), "");
	poison(out, R * 8);
	assert_int_equal(pc_submit_mode(pc, in, out, 4, 63), 0);
	assert_int_equal(pc_poll(pc, d, 4, -1), 1);
	assert_int_equal(d[0].tag, 4);
	assert_int_equal(d[0].mode, 63);
	ref_corr(xd, 1, R, t.h[2], t.L[2], ref_gain(t.h[2], t.L[2], PC_NORM_NOISE), y);
	check_output(PC_OUT_COMPLEX, out, y, R);
	pc_destroy(pc);

	/* Without id 0: pc_submit has no mode; calibration uses the first. */
	t.m[1].id = 12;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	assert_false(pc_has_mode(pc, 0));
	assert_int_equal(pc_submit(pc, in, out, 5), -ENOENT);
	assert_int_equal(pc_in_flight(pc), 0);
	assert_int_equal(pc_calibrate(pc, &cps, err, sizeof(err)), 0);
	assert_true(cps > 0);
	poison(out, R * 8);
	assert_int_equal(pc_submit_mode(pc, in, out, 6, 12), 0);
	assert_int_equal(pc_poll(pc, d, 4, -1), 1);
	assert_int_equal(d[0].mode, 12);
	ref_corr(xd, 1, R, t.h[1], t.L[1], ref_gain(t.h[1], t.L[1], PC_NORM_NOISE), y);
	check_output(PC_OUT_COMPLEX, out, y, R);
	pc_destroy(pc);

	/* nmodes 0: the single reference is mode 0, and only it. */
	base_params(&p, 1, 1, R, t.h[0], t.L[0]);
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	assert_true(pc_has_mode(pc, 0));
	assert_false(pc_has_mode(pc, 7));
	assert_int_equal(pc_submit_mode(pc, in, out, 7, 7), -ENOENT);
	assert_int_equal(pc_submit(pc, in, out, 8), 0);
	assert_int_equal(pc_poll(pc, d, 4, -1), 1);
	assert_int_equal(d[0].mode, 0);
	ref_corr(xd, 1, R, t.h[0], t.L[0], ref_gain(t.h[0], t.L[0], PC_NORM_NOISE), y);
	check_output(PC_OUT_COMPLEX, out, y, R);
	pc_destroy(pc);
	tri_modes_free(&t);
	free(in);
	free(out);
	free(xd);
	free(y);
}

/*
 * A CPI of an unknown mode, written by pc_write_skipped: every float32 of
 * the output a NaN in every output mode (so no consumer takes it for data:
 * 0 dB would be the noise level), nothing past pc_out_bytes touched, while
 * the same input of a known mode computes to finite values.
 */
static void test_modes_unknown_output(void **state)
{
	enum { C = 2, P = 3, R = 400 };
	struct tri_modes t;
	struct pc_params p;
	double complex *xd = malloc((size_t)C * P * R * sizeof(*xd));
	void *in;
	char err[256];

	(void)state;
	assert_non_null(xd);
	tri_modes_make(&t, R);
	in = random_input(PC_FMT_CF32, (size_t)C * P * R, xd);
	for (int m = PC_OUT_COMPLEX; m <= PC_OUT_POWER_DB; m++) {
		struct pc *pc;
		struct pc_done d;
		size_t ob, nf;
		float *out;

		base_params(&p, C, P, R, NULL, 0);
		p.modes = t.m;
		p.nmodes = NTRI;
		p.out_mode = (enum pc_output)m;
		pc = pc_create(&p, err, sizeof(err));
		if (!pc)
			fail_msg("pc_create: %s", err);
		ob = pc_out_bytes(pc);
		nf = ob / sizeof(float);
		out = malloc(ob + 64);
		assert_non_null(out);
		assert_int_equal(pc_submit_mode(pc, in, out, 1, 9), -ENOENT);
		memset(out, 0, ob + 64);
		pc_write_skipped(pc, out, NULL, 9);
		for (size_t i = 0; i < nf; i++)
			if (!isnan(out[i]))
				fail_msg("%s: skipped output float %zu is %g, not NaN",
					 pc_output_name(p.out_mode), i, out[i]);
		for (size_t i = nf; i < nf + 16; i++)
			assert_true(out[i] == 0.0f);
		/* the det argument of a pc that does not detect is ignored */
		pc_write_skipped(pc, NULL, out + nf, 9);
		assert_true(out[nf] == 0.0f);
		/* the same input of a known mode: every value a number */
		assert_int_equal(pc_submit_mode(pc, in, out, 2, t.m[0].id), 0);
		assert_int_equal(pc_poll(pc, &d, 1, -1), 1);
		assert_true(d.flags & PC_DONE_OUTPUT);
		for (size_t i = 0; i < nf; i++)
			assert_true(isfinite(out[i]));
		pc_destroy(pc);
		free(out);
	}
	tri_modes_free(&t);
	free(in);
	free(xd);
}

/* The mode table's rejections, each with its reason. */
static void test_modes_rejections(void **state)
{
	enum { R = 500 };
	struct tri_modes t;
	struct pc_mode many[PC_MAX_MODES + 1];
	struct pc_params p;
	float *big = random_ref(R + 1), zero[8] = { 0 };
	char err[256];

	(void)state;
	tri_modes_make(&t, R);
	base_params(&p, 1, 1, R, NULL, 0);
	p.modes = t.m;
	p.nmodes = NTRI;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
	t.m[2].id = 7;
	expect_reject(&p, "mode id 7 appears twice");
	t.m[2].id = 64;
	expect_reject(&p, "mode id 64: must be 0..63");
	t.m[2].id = 63;
	t.m[2].ref = big;
	t.m[2].ref_len = R + 1;
	expect_reject(&p, "mode 63: pulse length L=501 samples exceeds range samples R=500");
	t.m[2].ref_len = 0;
	expect_reject(&p, "mode 63: pulse length L=0");
	t.m[2].ref = zero;
	t.m[2].ref_len = 4;
	expect_reject(&p, "mode 63: reference waveform is all zeros");
	t.m[2].ref = t.h[2];
	t.m[2].ref_len = t.L[2];
	/* nfft is shared: R + the longest L (300) - 1 */
	p.nfft = R + 300 - 2;
	expect_reject(&p, "nfft 798 < R+L-1 = 799");
	p.nfft = R + 300 - 1;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
	p.nfft = 0;
	p.modes = NULL;
	expect_reject(&p, "no mode table");
	for (unsigned i = 0; i <= PC_MAX_MODES; i++) {
		many[i].id = i;
		many[i].ref = t.h[0];
		many[i].ref_len = t.L[0];
	}
	p.modes = many;
	p.nmodes = PC_MAX_MODES + 1;
	expect_reject(&p, "65 modes: at most 64");
	p.nmodes = PC_MAX_MODES;   /* ids 0..63: all of them */
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
	free(big);
	tri_modes_free(&t);
}

/*
 * The straggler take-over recomputes a block with the CPI's own filter:
 * two modes alternate while worker 1 stalls on every block it claims (the
 * stall hook), until a CPI of the second mode had a block taken over.
 */
static void test_modes_takeover(void **state)
{
	enum { C = 2, P = 16, R = 1000 };
	static const size_t L[2] = { 77, 300 };
	size_t n = (size_t)C * P * R;
	double complex *xd = malloc(n * sizeof(*xd)), *y[2];
	float *h[2], *out;
	struct pc_mode m[2];
	struct pc_params p;
	struct pc_done d[4];
	struct pc *pc;
	uint32_t second = 0;
	void *in;
	char err[256];

	(void)state;
	assert_non_null(xd);
	in = random_input(PC_FMT_CF32, n, xd);
	for (int i = 0; i < 2; i++) {
		h[i] = random_ref(L[i]);
		y[i] = malloc(n * sizeof(*y[i]));
		assert_non_null(y[i]);
		ref_corr(xd, (size_t)C * P, R, h[i], L[i], ref_gain(h[i], L[i], PC_NORM_NOISE), y[i]);
		m[i].id = 10 + 20 * (unsigned)i;
		m[i].ref = h[i];
		m[i].ref_len = L[i];
	}
	setenv("CHIRP_PC_TEST_STALL_MS", "300", 1);
	base_params(&p, C, P, R, NULL, 0);
	p.modes = m;
	p.nmodes = 2;
	p.cpu_threads = 2;
	p.tune.block_kib = 16;
	p.tune.takeover = PC_SWITCH_ON;
	pc = pc_create(&p, err, sizeof(err));
	unsetenv("CHIRP_PC_TEST_STALL_MS");
	if (!pc)
		fail_msg("pc_create: %s", err);
	out = malloc(pc_out_bytes(pc));
	assert_non_null(out);
	for (unsigned k = 0; k < 100 && (k < 6 || second == 0); k++) {
		int mi = (int)(k % 2);

		poison(out, pc_out_bytes(pc));
		assert_int_equal(pc_submit_mode(pc, in, out, k, m[mi].id), 0);
		assert_int_equal(pc_poll(pc, d, 4, -1), 1);
		assert_int_equal(d[0].mode, m[mi].id);
		check_output(PC_OUT_COMPLEX, out, y[mi], n);
		if (mi == 1)
			second += d[0].recomputed;
	}
	assert_true(second >= 1);
	pc_destroy(pc);
	for (int i = 0; i < 2; i++) {
		free(h[i]);
		free(y[i]);
	}
	free(out);
	free(in);
	free(xd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_fft_size),
		cmocka_unit_test(test_nfft_selection_and_rejection),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_backend_choice),
		cmocka_unit_test(test_auto_pick),
		cmocka_unit_test(test_auto_streams_params),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_submit_poll),
		cmocka_unit_test(test_cpu_depth),
		cmocka_unit_test(test_straggler_takeover),
		cmocka_unit_test(test_calibrate_slow_backend),
		cmocka_unit_test(test_idle_spin),
		cmocka_unit_test(test_spin_handoff),
		cmocka_unit_test(test_fault_injection),
		cmocka_unit_test(test_calibrate),
		cmocka_unit_test(test_nonfinite_rows),
		cmocka_unit_test(test_power_floor),
		cmocka_unit_test(test_output_range),
		cmocka_unit_test(test_accuracy_random),
		cmocka_unit_test(test_point_target),
		cmocka_unit_test(test_two_targets_resolved),
		cmocka_unit_test(test_sidelobes),
		cmocka_unit_test(test_noise_gain),
		cmocka_unit_test(test_planner_and_wisdom),
		cmocka_unit_test(test_cuda_fused_field),
		cmocka_unit_test(test_block_kib_results),
		cmocka_unit_test(test_balanced_blocks),
		cmocka_unit_test(test_bind_threads),
		cmocka_unit_test(test_concurrent_create),
		cmocka_unit_test(test_modes_per_cpi),
		cmocka_unit_test(test_modes_unknown),
		cmocka_unit_test(test_modes_unknown_output),
		cmocka_unit_test(test_modes_rejections),
		cmocka_unit_test(test_modes_takeover),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
