/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_waveform.c — reference waveforms and windows: names, window shapes
 * (Taylor against values printed by scipy.signal.windows.taylor 1.10.1),
 * LFM sweep, Barker-13 autocorrelation, cf32 files and every rejection.
 */
#include <complex.h>
#include <errno.h>
#include <fcntl.h>
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

#include "waveform.h"

static void test_names(void **state)
{
	static const char *const types[] = { "lfm", "barker13", "file" };
	static const char *const wins[] = { "rect", "hamming", "hann", "blackman", "taylor" };
	enum wf_type t;
	enum wf_window w;

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wf_type_parse(types[i], &t), 0);
		assert_int_equal(t, i);
		assert_string_equal(wf_type_name(t), types[i]);
	}
	for (int i = 0; i < 5; i++) {
		assert_int_equal(wf_window_parse(wins[i], &w), 0);
		assert_int_equal(w, i);
		assert_string_equal(wf_window_name(w), wins[i]);
	}
	assert_int_equal(wf_type_parse("chirp", &t), -EINVAL);
	assert_int_equal(wf_type_parse("", &t), -EINVAL);
	assert_int_equal(wf_window_parse("kaiser", &w), -EINVAL);
	assert_int_equal(wf_window_parse(NULL, &w), -EINVAL);
}

static void test_windows_classic(void **state)
{
	double w[101];

	(void)state;
	for (size_t n = 1; n <= 101; n += 25) {
		for (int win = WIN_RECT; win <= WIN_BLACKMAN; win++) {
			assert_int_equal(wf_window_fill((enum wf_window)win, 0, 0, w, n), 0);
			for (size_t k = 0; k < n; k++) {
				double x = n == 1 ? 0.0 : 2 * M_PI * k / (n - 1.0), v;

				switch (win) {
				case WIN_RECT: v = 1.0; break;
				case WIN_HAMMING: v = 0.54 - 0.46 * cos(x); break;
				case WIN_HANN: v = 0.5 - 0.5 * cos(x); break;
				default: v = 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x); break;
				}
				if (n == 1)
					v = 1.0;
				assert_true(fabs(w[k] - v) < 1e-12);
				assert_true(fabs(w[k] - w[n - 1 - k]) < 1e-12);   /* symmetric */
			}
			if (n % 2 == 1)
				assert_true(fabs(w[n / 2] - 1.0) < 1e-12);   /* peak 1 */
		}
	}
	assert_int_equal(wf_window_fill(WIN_HAMMING, 0, 0, w, 0), -EINVAL);
	assert_int_equal(wf_window_fill((enum wf_window)42, 0, 0, w, 5), -EINVAL);
}

static void test_window_taylor(void **state)
{
	/* scipy.signal.windows.taylor(16, 4, 35) and taylor(7, 5, 30) */
	static const double t16[16] = {
		0.177836934268069, 0.253676680702793, 0.38458571707054, 0.540825559674755,
		0.696440222109351, 0.833138182543708, 0.936410824112546, 0.992708688377413,
		0.992708688377413, 0.936410824112546, 0.833138182543708, 0.696440222109351,
		0.540825559674755, 0.38458571707054, 0.253676680702793, 0.177836934268069,
	};
	static const double t7[7] = {
		0.293537172171379, 0.579397181199916, 0.877551300926156, 1.0,
		0.877551300926156, 0.579397181199916, 0.293537172171379,
	};
	double w[16];

	(void)state;
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 4, 35.0, w, 16), 0);
	for (int k = 0; k < 16; k++)
		assert_true(fabs(w[k] - t16[k]) < 1e-12);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 5, 30.0, w, 7), 0);
	for (int k = 0; k < 7; k++)
		assert_true(fabs(w[k] - t7[k]) < 1e-12);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 4, 35.0, w, 1), 0);
	assert_true(fabs(w[0] - 1.0) < 1e-12);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 0, 35.0, w, 16), -EINVAL);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 4, 0.0, w, 16), -EINVAL);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 4, NAN, w, 16), -EINVAL);
}

static struct wf_params lfm(double fs, double B, double tau)
{
	struct wf_params p;

	wf_params_init(&p);
	p.type = WF_LFM;
	p.sample_rate_hz = fs;
	p.bandwidth_hz = B;
	p.pulse_width_s = tau;
	p.window = WIN_RECT;
	return p;
}

static void test_lfm(void **state)
{
	struct wf_params p = lfm(25e6, 10e6, 12.34e-6);   /* L = round(308.5) = 309 */
	float *h;
	size_t L;
	char err[256];

	(void)state;
	assert_int_equal(wf_build(&p, 1000, &h, &L, err, sizeof(err)), 0);
	assert_int_equal(L, (size_t)round(12.34e-6 * 25e6));
	for (size_t k = 0; k < L; k++) {
		double complex s = h[2 * k] + I * h[2 * k + 1];
		double t = k / 25e6 - 12.34e-6 / 2;

		assert_true(fabs(cabs(s) - 1.0) < 1e-6);   /* rect: unit modulus */
		assert_true(cabs(s - cexp(I * M_PI * (10e6 / 12.34e-6) * t * t)) < 1e-5);
	}
	/* Instantaneous frequency sweeps -B/2 .. +B/2 across the pulse: the
	 * phase step per sample is 2 pi f / fs. */
	double complex a = (h[2] + I * h[3]) * conj(h[0] + I * h[1]);
	double complex b = (h[2 * (L - 1)] + I * h[2 * (L - 1) + 1]) *
			   conj(h[2 * (L - 2)] + I * h[2 * (L - 2) + 1]);
	double f0 = carg(a) / 2 / (2 * M_PI) * 25e6 * 2;   /* over 2 steps */
	double f1 = carg(b) / (2 * M_PI) * 25e6;
	assert_true(fabs(f0 - (-5e6)) < 0.1e6);
	assert_true(fabs(f1 - 5e6) < 0.1e6);
	free(h);

	/* a window multiplies in time: hamming reference = hamming . rect */
	float *hw;
	size_t Lw;
	double w[309];

	assert_int_equal(wf_build(&p, 1000, &h, &L, err, sizeof(err)), 0);
	p.window = WIN_HAMMING;
	assert_int_equal(wf_build(&p, 1000, &hw, &Lw, err, sizeof(err)), 0);
	assert_int_equal(Lw, L);
	assert_int_equal(wf_window_fill(WIN_HAMMING, 0, 0, w, L), 0);
	for (size_t k = 0; k < L; k++) {
		assert_true(fabs(hw[2 * k] - w[k] * h[2 * k]) < 1e-6);
		assert_true(fabs(hw[2 * k + 1] - w[k] * h[2 * k + 1]) < 1e-6);
	}
	free(h);
	free(hw);
}

static void expect_err(const struct wf_params *p, unsigned R, int rc, const char *needle)
{
	float *h = (float *)0x1;
	size_t L = 12345;
	char err[256] = "";

	assert_int_equal(wf_build(p, R, &h, &L, err, sizeof(err)), rc);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not say \"%s\"", err, needle);
	assert_ptr_equal(h, (float *)0x1);   /* untouched on error */
	assert_int_equal(L, 12345);
}

static void test_lfm_rejections(void **state)
{
	struct wf_params p;

	(void)state;
	p = lfm(25e6, 40e6, 10e-6);
	expect_err(&p, 1000, -EINVAL, "bandwidth_hz 4e+07 exceeds sample_rate_hz 2.5e+07");
	p = lfm(25e6, 10e6, 24e-6);
	expect_err(&p, 500, -EINVAL,
		   "pulse length L=600 samples (pulse_width_s*sample_rate_hz) exceeds range samples R=500");
	p = lfm(25e6, 10e6, 1e-8);   /* 0.25 samples */
	expect_err(&p, 500, -EINVAL, "pulse length L=0");
	p = lfm(0, 10e6, 1e-6);
	expect_err(&p, 500, -EINVAL, "sample_rate_hz");
	p = lfm(25e6, 0, 1e-6);
	expect_err(&p, 500, -EINVAL, "bandwidth_hz");
	p = lfm(25e6, 10e6, -1e-6);
	expect_err(&p, 500, -EINVAL, "pulse_width_s");
	p = lfm(25e6, 10e6, 1e30);   /* absurd: must not overflow */
	expect_err(&p, 500, -EINVAL, "exceeds range samples R=500");
	p = lfm(25e6, 10e6, 1e-6);
	p.window = WIN_TAYLOR;
	p.taylor_nbar = 0;
	expect_err(&p, 500, -EINVAL, "taylor_nbar");
	p.taylor_nbar = 4;
	p.taylor_sll_db = -3;
	expect_err(&p, 500, -EINVAL, "taylor_sll_db");
	p = lfm(25e6, 10e6, 1e-6);
	expect_err(&p, 0, -EINVAL, "R=0");
	/* B = fs is allowed, L = R is allowed */
	p = lfm(25e6, 25e6, 20e-6);
	float *h;
	size_t L;
	char err[256];
	assert_int_equal(wf_build(&p, 500, &h, &L, err, sizeof(err)), 0);
	assert_int_equal(L, 500);
	free(h);
}

static void test_barker(void **state)
{
	static const int code[13] = { 1, 1, 1, 1, 1, -1, -1, 1, 1, -1, 1, -1, 1 };
	struct wf_params p;
	float *h;
	size_t L;
	char err[256];

	(void)state;
	wf_params_init(&p);
	p.type = WF_BARKER13;
	p.window = WIN_RECT;
	for (unsigned cs = 1; cs <= 4; cs++) {
		p.chip_samples = cs;
		assert_int_equal(wf_build(&p, 100, &h, &L, err, sizeof(err)), 0);
		assert_int_equal(L, 13 * cs);
		for (size_t k = 0; k < L; k++) {
			assert_true(h[2 * k] == (float)code[k / cs]);
			assert_true(h[2 * k + 1] == 0.0f);
		}
		/* aperiodic autocorrelation: peak 13 cs, and beyond the main
		 * lobe (lags >= one chip) sidelobes <= cs */
		for (size_t lag = 0; lag < L; lag++) {
			double s = 0;

			for (size_t k = 0; k + lag < L; k++)
				s += h[2 * k] * h[2 * (k + lag)];
			if (lag == 0)
				assert_true(fabs(s - 13.0 * cs) < 1e-9);
			else if (lag >= cs)
				assert_true(fabs(s) <= cs + 1e-9);
		}
		free(h);
	}
	p.chip_samples = 0;
	expect_err(&p, 100, -EINVAL, "chip_samples");
	p.chip_samples = 8;
	expect_err(&p, 100, -EINVAL, "pulse length L=104 samples (13*chip_samples) exceeds range samples R=100");
}

static char tmpdir[64];

static int make_tmpdir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_waveform.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	if (len)
		assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_file(void **state)
{
	char path[128];
	float v[2 * 50], *h;
	size_t L;
	char err[256];
	struct wf_params p;

	(void)state;
	for (int i = 0; i < 100; i++)
		v[i] = (float)sin(i * 0.37) * (i % 7 + 1);
	snprintf(path, sizeof(path), "%s/ref.cf32", tmpdir);
	write_file(path, v, sizeof(v));   /* x86: little-endian already */
	wf_params_init(&p);
	p.type = WF_FILE;
	p.file = path;
	p.window = WIN_RECT;
	assert_int_equal(wf_build(&p, 50, &h, &L, err, sizeof(err)), 0);
	assert_int_equal(L, 50);
	assert_memory_equal(h, v, sizeof(v));
	free(h);
	p.window = WIN_HANN;   /* window applies to file waveforms too */
	assert_int_equal(wf_build(&p, 50, &h, &L, err, sizeof(err)), 0);
	assert_true(h[0] == 0.0f && h[1] == 0.0f);
	free(h);
	p.window = WIN_RECT;

	expect_err(&p, 49, -EINVAL, "exceeds range samples R=49");

	snprintf(path, sizeof(path), "%s/empty.cf32", tmpdir);
	write_file(path, v, 0);
	expect_err(&p, 50, -EINVAL, "empty");
	snprintf(path, sizeof(path), "%s/odd.cf32", tmpdir);
	write_file(path, v, 12);
	expect_err(&p, 50, -EINVAL, "size 12 bytes is not a multiple of 8");
	snprintf(path, sizeof(path), "%s/nan.cf32", tmpdir);
	v[1] = NAN;
	write_file(path, v, 16);
	expect_err(&p, 50, -EINVAL, "not finite");
	snprintf(path, sizeof(path), "%s/zero.cf32", tmpdir);
	memset(v, 0, sizeof(v));
	write_file(path, v, 16);
	expect_err(&p, 50, -EINVAL, "all zeros");
	snprintf(path, sizeof(path), "%s/missing.cf32", tmpdir);
	expect_err(&p, 50, -ENOENT, "missing.cf32: cannot open");
	p.file = tmpdir;   /* a directory */
	expect_err(&p, 50, -EINVAL, "not a regular file");
	p.file = NULL;
	expect_err(&p, 50, -EINVAL, "needs a file path");
	p.type = (enum wf_type)9;
	expect_err(&p, 50, -EINVAL, "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_windows_classic),
		cmocka_unit_test(test_window_taylor),
		cmocka_unit_test(test_lfm),
		cmocka_unit_test(test_lfm_rejections),
		cmocka_unit_test(test_barker),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
