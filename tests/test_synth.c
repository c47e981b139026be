/* SPDX-License-Identifier: Apache-2.0 */
/* test_synth.c — the synthetic echo generator (src/synth.c). */
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
#include "config.h"
#include "tools/synth.h"
#include "tools/tool.h"

/* Random unit-modulus pulse (random phases): not a power-of-two length. */
static float *random_pulse(size_t L, unsigned seed)
{
	float *p = malloc(2 * L * sizeof(float));

	srand(seed);
	for (size_t i = 0; i < L; i++) {
		double th = 2 * M_PI * rand() / (double)RAND_MAX;
		p[2 * i] = (float)cos(th);
		p[2 * i + 1] = (float)sin(th);
	}
	return p;
}

static struct synth *make(unsigned C, unsigned P, unsigned R, enum pc_format f,
			  const float *pulse, size_t L, const struct synth_target *t,
			  size_t nt, double noise, uint64_t seed)
{
	struct synth_params p;
	char err[256] = "";
	struct synth *s;

	synth_params_init(&p);
	p.channels = C;
	p.pulses = P;
	p.samples = R;
	p.format = f;
	p.pulse = pulse;
	p.pulse_len = L;
	p.targets = t;
	p.ntargets = nt;
	p.noise_power = noise;
	p.seed = seed;
	s = synth_create(&p, err, sizeof(err));
	if (!s)
		print_error("synth_create: %s\n", err);
	return s;
}

static void test_determinism(void **state)
{
	struct synth_target t[2] = { { 37, -6, 0.1, 0, 0, 0 }, { 200, -20, 0, 0, 0, 0 } };
	float *pulse = random_pulse(51, 1);
	struct synth *a = make(3, 5, 333, PC_FMT_CF32, pulse, 51, t, 2, 0.1, 42);
	struct synth *b = make(3, 5, 333, PC_FMT_CF32, pulse, 51, t, 2, 0.1, 42);
	struct synth *c = make(3, 5, 333, PC_FMT_CF32, pulse, 51, t, 2, 0.1, 43);
	size_t n;
	char *x, *y, *z;

	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	n = synth_cpi_bytes(a);
	assert_int_equal(n, 3 * 5 * 333 * 8);
	x = malloc(n);
	y = malloc(n);
	z = malloc(n);
	/* CPI 7 from a fresh generator equals CPI 7 after other CPIs. */
	assert_int_equal(synth_generate(a, 7, x, n), 0);
	assert_int_equal(synth_generate(b, 0, y, n), 0);
	assert_int_equal(synth_generate(b, 123456789, y, n), 0);
	assert_int_equal(synth_generate(b, 7, y, n), 0);
	assert_memory_equal(x, y, n);
	/* Another CPI index or seed gives other noise. */
	assert_int_equal(synth_generate(b, 8, y, n), 0);
	assert_memory_not_equal(x, y, n);
	assert_int_equal(synth_generate(c, 7, z, n), 0);
	assert_memory_not_equal(x, z, n);
	/* Too small a buffer is refused. */
	assert_int_equal(synth_generate(a, 0, x, n - 1), -EINVAL);
	free(x);
	free(y);
	free(z);
	free(pulse);
	synth_destroy(a);
	synth_destroy(b);
	synth_destroy(c);
}

/*
 * Independent double-precision reference: direct time-domain correlation
 * of each row with the pulse; the peak must be at each target's gate, and
 * the noise-free samples must equal a * s exactly (to float rounding).
 */
static void test_target_placement(void **state)
{
	const unsigned C = 2, P = 3, R = 997;
	const size_t L = 61;
	struct synth_target t[3] = { { 100, -3, 0, 0, 0, 0 }, { 450, -9, 0.25, 0, 0, 0 },
				     { 960, -6, 0, 0, 0, 0 } };
	float *pulse = random_pulse(L, 2);
	struct synth *s = make(C, P, R, PC_FMT_CF32, pulse, L, t, 3,
			       synth_noise_power_for_snr(t, 3, 10.0), 9);
	struct synth *q = make(C, P, R, PC_FMT_CF32, pulse, L, t, 1, 0, 9);
	size_t n = synth_cpi_bytes(s);
	float *x = malloc(n), *y = malloc(n);
	double *corr = malloc(R * sizeof(double));

	assert_non_null(s);
	assert_non_null(q);
	assert_int_equal(synth_generate(s, 5, x, n), 0);
	for (unsigned row = 0; row < C * P; row++) {
		const float *r = x + 2 * (size_t)row * R;

		for (unsigned g = 0; g < R; g++) {
			double re = 0, im = 0;

			for (size_t k = 0; k < L && g + k < R; k++) {
				double xr = r[2 * (g + k)], xi = r[2 * (g + k) + 1];
				double hr = pulse[2 * k], hi = -pulse[2 * k + 1];

				re += xr * hr - xi * hi;
				im += xr * hi + xi * hr;
			}
			corr[g] = re * re + im * im;
		}
		/* Each target is a local maximum well above the rest. */
		for (int i = 0; i < 3; i++) {
			unsigned g = t[i].gate;
			for (int d = -5; d <= 5; d++) {
				if (d == 0 || (int)g + d < 0 || g + d >= R)
					continue;
				assert_true(corr[g] > corr[g + d]);
			}
		}
		/* The global peak is the strongest target. */
		unsigned best = 0;
		for (unsigned g = 1; g < R; g++)
			if (corr[g] > corr[best])
				best = g;
		assert_int_equal(best, 100);
	}

	/* Noise free, one target: x[g+k] = a * s[k], zero elsewhere. */
	assert_int_equal(synth_generate(q, 3, y, n), 0);
	double a = pow(10.0, -3 / 20.0);
	for (unsigned row = 0; row < C * P; row++) {
		const float *r = y + 2 * (size_t)row * R;
		for (unsigned i = 0; i < R; i++) {
			double er = 0, ei = 0;
			if (i >= 100 && i < 100 + L) {
				er = a * pulse[2 * (i - 100)];
				ei = a * pulse[2 * (i - 100) + 1];
			}
			assert_true(fabs(r[2 * i] - er) < 1e-6);
			assert_true(fabs(r[2 * i + 1] - ei) < 1e-6);
		}
	}
	free(x);
	free(y);
	free(corr);
	free(pulse);
	synth_destroy(s);
	synth_destroy(q);
}

/* Echo truncated at the end of the row; Doppler rotates pulse to pulse. */
static void test_truncation_and_doppler(void **state)
{
	const unsigned P = 4, R = 101;
	const size_t L = 20;
	struct synth_target t = { 90, 0, 0.125, 0, 0, 0 };
	float *pulse = random_pulse(L, 3);
	struct synth *s = make(1, P, R, PC_FMT_CF32, pulse, L, &t, 1, 0, 0);
	size_t n = synth_cpi_bytes(s);
	float *x = malloc(n);
	const uint64_t k = 2;

	assert_non_null(s);
	assert_int_equal(synth_generate(s, k, x, n), 0);
	for (unsigned p = 0; p < P; p++) {
		const float *r = x + 2 * (size_t)p * R;
		double ph = 2 * M_PI * 0.125 * (double)(k * P + p);
		for (unsigned i = 90; i < R; i++) {
			double sr = pulse[2 * (i - 90)], si = pulse[2 * (i - 90) + 1];
			double er = cos(ph) * sr - sin(ph) * si;
			double ei = cos(ph) * si + sin(ph) * sr;
			assert_true(fabs(r[2 * i] - er) < 1e-6);
			assert_true(fabs(r[2 * i + 1] - ei) < 1e-6);
		}
		for (unsigned i = 0; i < 90; i++)
			assert_true(r[2 * i] == 0 && r[2 * i + 1] == 0);
	}
	free(x);
	free(pulse);
	synth_destroy(s);
}

/* Noise power, and the pulse is normalised to peak 1 whatever its scale. */
static void test_noise_power(void **state)
{
	const unsigned R = 1009, P = 50;
	float *pulse = random_pulse(7, 4);
	struct synth *s = make(2, P, R, PC_FMT_CF32, pulse, 7, NULL, 0, 0.25, 77);
	size_t n = synth_cpi_bytes(s), cnt = n / 8;
	float *x = malloc(n);
	double pw = 0, mre = 0, mim = 0, cross = 0;

	assert_non_null(s);
	assert_int_equal(synth_generate(s, 1, x, n), 0);
	for (size_t i = 0; i < cnt; i++) {
		pw += (double)x[2 * i] * x[2 * i] + (double)x[2 * i + 1] * x[2 * i + 1];
		mre += x[2 * i];
		mim += x[2 * i + 1];
		cross += (double)x[2 * i] * x[2 * i + 1];
	}
	pw /= cnt;
	mre /= cnt;
	mim /= cnt;
	cross /= cnt;
	/* ~100k samples: standard error of the power ~0.3 %. */
	assert_true(fabs(pw - 0.25) < 0.25 * 0.03);
	assert_true(fabs(mre) < 0.01 && fabs(mim) < 0.01);
	assert_true(fabs(cross) < 0.01);   /* I and Q uncorrelated */
	assert_true(fabs(synth_noise_power_for_snr(NULL, 0, 20) - 0.01) < 1e-12);
	free(x);
	free(pulse);
	synth_destroy(s);

	/* A pulse of amplitude 5 is scaled to peak 1. */
	float big[4] = { 5, 0, 0, 3 };
	struct synth_target t = { 0, 0, 0, 0, 0, 0 };
	s = make(1, 1, 4, PC_FMT_CF32, big, 2, &t, 1, 0, 0);
	assert_non_null(s);
	float y[8];
	assert_int_equal(synth_generate(s, 0, y, sizeof(y)), 0);
	assert_true(fabs(y[0] - 1.0) < 1e-7 && fabs(y[3] - 0.6) < 1e-7);
	synth_destroy(s);
}

static void test_sc16(void **state)
{
	const unsigned R = 257;
	float *pulse = random_pulse(13, 5);
	struct synth_target t = { 10, -6.0206, 0, 0, 0, 0 };   /* a = 0.5 */
	struct synth *s = make(1, 2, R, PC_FMT_SC16, pulse, 13, &t, 1, 0, 0);
	size_t n;
	int16_t *x;

	assert_non_null(s);
	n = synth_cpi_bytes(s);
	assert_int_equal(n, 2 * R * 4);
	x = malloc(n);
	assert_int_equal(synth_generate(s, 0, x, n), 0);
	for (unsigned i = 0; i < 13; i++) {
		double a = pow(10.0, -6.0206 / 20);
		assert_true(abs(x[2 * (10 + i)] - (int)lrint(a * pulse[2 * i] * 32768)) <= 1);
		assert_true(abs(x[2 * (10 + i) + 1] - (int)lrint(a * pulse[2 * i + 1] * 32768)) <= 1);
	}
	assert_int_equal(synth_clipped(s), 0);
	synth_destroy(s);
	free(x);

	/* Targets that sum above full scale are refused for sc16... */
	struct synth_target two[2] = { { 10, -3, 0, 0, 0, 0 }, { 11, -3, 0, 0, 0, 0 } };
	struct synth_params p;
	char err[256] = "";
	synth_params_init(&p);
	p.channels = 1;
	p.pulses = 1;
	p.samples = R;
	p.format = PC_FMT_SC16;
	p.pulse = pulse;
	p.pulse_len = 13;
	p.targets = two;
	p.ntargets = 2;
	assert_null(synth_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "clip"));
	/* ...but are fine for cf32. */
	p.format = PC_FMT_CF32;
	s = synth_create(&p, err, sizeof(err));
	assert_non_null(s);
	synth_destroy(s);

	/* Loud noise saturates and is counted. */
	s = make(1, 1, R, PC_FMT_SC16, pulse, 13, NULL, 0, 4.0, 1);
	assert_non_null(s);
	x = malloc(synth_cpi_bytes(s));
	assert_int_equal(synth_generate(s, 0, x, synth_cpi_bytes(s)), 0);
	assert_true(synth_clipped(s) > 0);
	free(x);
	synth_destroy(s);
	free(pulse);
}

static void test_create_rejects(void **state)
{
	float pulse[2 * 10] = { 1, 0 };
	struct synth_target t = { 50, -6, 0, 0, 0, 0 };
	struct synth_params p;
	char err[256];

	synth_params_init(&p);
	p.channels = 1;
	p.pulses = 1;
	p.samples = 50;
	p.pulse = pulse;
	p.pulse_len = 10;
	p.targets = &t;
	p.ntargets = 1;
	err[0] = 0;
	assert_null(synth_create(&p, err, sizeof(err)));   /* gate 50 >= R */
	assert_non_null(strstr(err, "gate 50"));
	t.gate = 0;
	p.pulse_len = 51;
	assert_null(synth_create(&p, err, sizeof(err)));   /* L > R */
	assert_non_null(strstr(err, "L=51"));
	p.pulse_len = 10;
	p.channels = 0;
	assert_null(synth_create(&p, err, sizeof(err)));
	p.channels = 1;
	p.noise_power = -1;
	assert_null(synth_create(&p, err, sizeof(err)));
	p.noise_power = NAN;
	assert_null(synth_create(&p, err, sizeof(err)));
	p.noise_power = 0;
	memset(pulse, 0, sizeof(pulse));
	assert_null(synth_create(&p, err, sizeof(err)));    /* all-zero pulse */
	assert_non_null(strstr(err, "zeros"));
	pulse[0] = 1;
	p.format = (enum pc_format)7;
	assert_null(synth_create(&p, err, sizeof(err)));
	p.format = PC_FMT_CF32;
	struct synth *s = synth_create(&p, err, sizeof(err));
	assert_non_null(s);
	uint64_t k = 0;
	assert_int_equal(synth_first_sample(s, 3), 150);
	assert_int_equal(synth_cpi_index(s, 150, &k), 0);
	assert_int_equal(k, 3);
	assert_int_equal(synth_cpi_index(s, 151, &k), -EINVAL);
	synth_destroy(s);
}

/*
 * Per-mode synthesis: a generator of three modes (pulses of different
 * lengths, ids not 0..2) gives, for CPI k of mode m, exactly what a
 * one-mode generator of m's pulse gives, whatever the order of the CPIs
 * and modes asked for; an unknown mode is refused and writes nothing.
 */
static void test_modes(void **state)
{
	const unsigned C = 2, P = 3, R = 211;
	const size_t L[3] = { 17, 61, 40 };
	const unsigned id[3] = { 5, 0, 63 };
	struct synth_target t[2] = { { 20, -6, 0.125, 0, 0, 0 }, { 150, -12, 0, 0, 0, 0 } };
	enum pc_format fmts[2] = { PC_FMT_CF32, PC_FMT_SC16 };

	(void)state;
	for (int f = 0; f < 2; f++) {
		struct synth_mode modes[3];
		float *pulse[3];
		struct synth *one[3], *multi;
		struct synth_params p;
		char err[256] = "";
		size_t n;
		uint8_t *x, *y;

		for (int i = 0; i < 3; i++) {
			pulse[i] = random_pulse(L[i], 10 + (unsigned)i);
			modes[i] = (struct synth_mode){ .id = id[i], .pulse = pulse[i],
							.pulse_len = L[i] };
			one[i] = make(C, P, R, fmts[f], pulse[i], L[i], t, 2, 0.01, 77);
			assert_non_null(one[i]);
		}
		synth_params_init(&p);
		p.channels = C;
		p.pulses = P;
		p.samples = R;
		p.format = fmts[f];
		p.modes = modes;
		p.nmodes = 3;
		p.targets = t;
		p.ntargets = 2;
		p.noise_power = 0.01;
		p.seed = 77;
		multi = synth_create(&p, err, sizeof(err));
		assert_non_null(multi);
		assert_int_equal(synth_nmodes(multi), 3);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(synth_mode_id(multi, (size_t)i), id[i]);
			assert_true(synth_has_mode(multi, id[i]));
		}
		assert_false(synth_has_mode(multi, 1));
		n = synth_cpi_bytes(multi);
		x = malloc(n);
		y = malloc(n);
		/* A schedule that changes mode every CPI, and goes back. */
		for (uint64_t k = 0; k < 9; k++) {
			int i = (int)((k * 7 + 1) % 3);

			assert_int_equal(synth_generate_mode(multi, k, id[i], x, n), 0);
			assert_int_equal(synth_generate(one[i], k, y, n), 0);
			assert_memory_equal(x, y, n);
		}
		/* Two modes of one CPI differ (only the pulse does). */
		assert_int_equal(synth_generate_mode(multi, 4, id[0], x, n), 0);
		assert_int_equal(synth_generate_mode(multi, 4, id[1], y, n), 0);
		assert_memory_not_equal(x, y, n);
		/* synth_generate is the first mode. */
		assert_int_equal(synth_generate(multi, 4, y, n), 0);
		assert_memory_equal(x, y, n);
		/* Unknown mode: -ENOENT, nothing written. */
		memset(y, 0x5a, n);
		memcpy(x, y, n);
		assert_int_equal(synth_generate_mode(multi, 4, 1, y, n), -ENOENT);
		assert_int_equal(synth_generate_mode(multi, 4, 64, y, n), -ENOENT);
		assert_memory_equal(x, y, n);
		assert_int_equal(synth_generate_mode(multi, 4, id[2], y, n - 1), -EINVAL);
		free(x);
		free(y);
		synth_destroy(multi);

		/* Bad mode sets: a duplicate id, a pulse longer than R (named),
		 * too many modes. */
		modes[2].id = 5;
		assert_null(synth_create(&p, err, sizeof(err)));
		assert_non_null(strstr(err, "mode 5 is given twice"));
		modes[2].id = 63;
		modes[1].pulse_len = R + 1;
		assert_null(synth_create(&p, err, sizeof(err)));
		assert_non_null(strstr(err, "mode 0: pulse length L=212"));
		modes[1].pulse_len = L[1];
		p.nmodes = SYNTH_MAX_MODES + 1;
		assert_null(synth_create(&p, err, sizeof(err)));
		for (int i = 0; i < 3; i++) {
			synth_destroy(one[i]);
			free(pulse[i]);
		}
	}
}

/*
 * From a configuration of three modes ([waveform] and two [mode NAME]
 * sections of other types, lengths and windows): one pulse per mode in the
 * file's order, each the transmitted pulse (rect, peak 1, whatever the
 * receiver's window) of that mode's length; an undeclared id is refused.
 */
static void test_from_config(void **state)
{
	static const char conf[] =
		"[cpi]\nchannels = 1\npulses = 2\nsamples = 300\n"
		"[waveform]\ntype = lfm\nsample_rate_hz = 10e6\nbandwidth_hz = 2e6\n"
		"pulse_width_s = 10e-6\nwindow = hamming\n"
		"[mode short]\nid = 3\ntype = barker13\nchip_samples = 2\nwindow = hann\n"
		"[mode long]\nid = 9\ntype = lfm\nbandwidth_hz = 1e6\npulse_width_s = 20e-6\n"
		"window = taylor\n";
	const unsigned id[3] = { 0, 3, 9 };
	const size_t L[3] = { 100, 26, 200 };
	struct synth_target t = { 40, -6, 0, 0, 0, 0 };
	char path[] = "/tmp/test_synth.XXXXXX";
	struct chirp_config *c = calloc(1, sizeof(*c));
	char err[512] = "";
	struct synth *s;
	float *x;
	size_t n;
	int fd;

	(void)state;
	assert_non_null(c);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, conf, sizeof(conf) - 1), (ssize_t)(sizeof(conf) - 1));
	close(fd);
	assert_int_equal(config_load(c, path, stderr), 0);
	unlink(path);
	assert_int_equal(c->nmodes, 3);
	s = synth_create_from_config(c, &t, 1, 0, 1, err, sizeof(err));
	if (!s)
		print_error("synth_create_from_config: %s\n", err);
	assert_non_null(s);
	assert_int_equal(synth_nmodes(s), 3);
	n = synth_cpi_bytes(s);
	x = malloc(n);
	for (int i = 0; i < 3; i++) {
		double a = pow(10.0, -6 / 20.0), peak = 0;
		size_t first = 300, last = 0;

		assert_int_equal(synth_mode_id(s, (size_t)i), id[i]);
		assert_int_equal(synth_generate_mode(s, 5, id[i], x, n), 0);
		for (size_t k = 0; k < 300; k++) {
			double m = hypot(x[2 * k], x[2 * k + 1]);

			if (m > 0) {
				first = k < first ? k : first;
				last = k;
			}
			peak = m > peak ? m : peak;
		}
		/* the echo of mode i's L samples at gate 40, unwindowed */
		assert_int_equal(first, 40);
		assert_int_equal(last, 40 + L[i] - 1);
		assert_true(fabs(peak - a) < 1e-6);
		assert_true(fabs(hypot(x[80], x[81]) - a) < 1e-6);   /* rect: |s[0]| = 1 */
	}
	assert_int_equal(synth_generate_mode(s, 5, 1, x, n), -ENOENT);
	free(x);
	synth_destroy(s);
	free(c);
}

/* DOPPLER in cycles per pulse: "X/pulse", no PRF needed, -0.5..0.5; the
 * colon-separated form is refused with the comma syntax named. */
static void test_parse_target_per_pulse(void **state)
{
	struct synth_target t;
	char err[256];
	int folded = 9;

	assert_int_equal(synth_parse_target("250,-20.5,0.25/pulse", 0, &t, &folded, err,
					    sizeof(err)), 0);
	assert_int_equal(t.gate, 250);
	assert_true(t.amp_db == -20.5 && t.doppler == 0.25 && folded == 0);
	assert_int_equal(synth_parse_target("3,-6,-0.125/pulse", 1000, &t, &folded, err,
					    sizeof(err)), 0);
	assert_true(t.doppler == -0.125);
	assert_int_equal(synth_parse_target("3,-6,250Hz", 1000, &t, &folded, err, sizeof(err)), 0);
	assert_true(t.doppler == 0.25);

	const char *bad[] = { "3,-6,0.7/pulse", "3,-6,0.1/pulses", "3,-6,/pulse", "3,-6,1kHz",
			      NULL };
	for (int i = 0; bad[i]; i++) {
		err[0] = 0;
		assert_int_equal(synth_parse_target(bad[i], 1000, &t, &folded, err, sizeof(err)),
				 -EINVAL);
		assert_true(err[0] != 0);
	}
	assert_int_equal(synth_parse_target("100:-6:0.1", 1000, &t, &folded, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "GATE,AMP_DB[,DOPPLER_HZ]"));
}

/* The options chirp-feed and chirp-tap share: noise at
 * SYNTH_DEFAULT_NOISE_DBFS unless --snr-db, --noise-dbfs or --noiseless,
 * which exclude one another; --targets is refused. */
static void test_synth_opts(void **state)
{
	struct tool_synth_opts o;
	struct synth_target t[SYNTH_MAX_TARGETS];
	size_t n;
	double np = -1;

	tool_synth_opts_init(&o);
	assert_int_equal(o.seed, 1);
	assert_int_equal(tool_synth_check(&o), 0);
	assert_int_equal(tool_synth_given(&o), 0);
	assert_int_equal(tool_synth_opt(&o, TOOL_O_TARGET, "100,-6"), 1);
	assert_int_equal(tool_synth_opt(&o, TOOL_O_TARGET, "300,-20,0.125/pulse"), 1);
	assert_int_equal(tool_synth_opt(&o, 'x', "1"), 0);
	assert_int_equal(tool_synth_targets(&o, NULL, NULL, t, &n, &np), 0);
	assert_int_equal(n, 2);
	assert_true(t[1].gate == 300 && t[1].doppler == 0.125);
	assert_true(fabs(10 * log10(np) - SYNTH_DEFAULT_NOISE_DBFS) < 1e-9);
	assert_true(SYNTH_DEFAULT_NOISE_DBFS < -20);

	assert_int_equal(tool_synth_opt(&o, TOOL_O_NOISELESS, NULL), 1);
	assert_int_equal(tool_synth_check(&o), 0);
	assert_int_equal(tool_synth_targets(&o, NULL, NULL, t, &n, &np), 0);
	assert_true(np == 0);
	assert_int_equal(tool_synth_opt(&o, TOOL_O_NOISE, "-30"), 1);
	assert_int_equal(tool_synth_check(&o), -EINVAL);         /* two noise options */
	o.noiseless = 0;
	assert_int_equal(tool_synth_check(&o), 0);
	assert_int_equal(tool_synth_targets(&o, NULL, NULL, t, &n, &np), 0);
	assert_true(fabs(10 * log10(np) + 30) < 1e-9);
	assert_int_equal(tool_synth_opt(&o, TOOL_O_SNR, "10"), 1);
	assert_int_equal(tool_synth_check(&o), -EINVAL);

	assert_int_equal(tool_synth_opt(&o, TOOL_O_TARGETS, "100:-6"), -EINVAL);
	assert_int_equal(tool_synth_opt(&o, TOOL_O_SEED, "x"), -EINVAL);
	assert_int_equal(tool_synth_opt(&o, TOOL_O_PRF, "0"), -EINVAL);

	tool_synth_opts_init(&o);
	assert_int_equal(tool_synth_opt(&o, TOOL_O_NOISELESS, NULL), 1);
	assert_int_equal(tool_synth_check(&o), -EINVAL);         /* noise without --target */
}

/* --target GATE,AMP_DB,DOPPLER_HZ: the pulse-to-pulse phase of the echo is
 * 2 pi DOPPLER_HZ / prf (folded into one PRF when beyond +-prf/2), and
 * the fields are checked. */
static void test_parse_target_hz(void **state)
{
	const double prf = 1000;
	const struct { const char *spec; double hz; int folded; } ok[] = {
		{ "30,-6,250", 250, 0 }, { "7,-20.5,-125.5", -125.5, 0 },
		{ "9,0", 0, 0 }, { "11,-3,-1250", -250, 1 }, { "12,-3,1600", -400, 1 },
	};
	struct synth_target t;
	char err[256];
	int folded;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		float *pulse = random_pulse(5, 3);
		struct synth *s;
		float *x;

		assert_int_equal(synth_parse_target(ok[i].spec, prf, &t, &folded, err,
						       sizeof(err)), 0);
		assert_int_equal(folded, ok[i].folded);
		assert_true(fabs(t.doppler - ok[i].hz / prf) < 1e-12);
		/* The echo's first sample over 6 pulses (no noise): each pulse
		 * turns it by 2 pi hz / prf, compared in double. */
		s = make(1, 6, 64, PC_FMT_CF32, pulse, 5, &t, 1, 0, 1);
		assert_non_null(s);
		x = malloc(synth_cpi_bytes(s));
		assert_int_equal(synth_generate(s, 2, x, synth_cpi_bytes(s)), 0);
		for (unsigned p = 0; p + 1 < 6; p++) {
			const float *a = x + 2 * ((size_t)p * 64 + t.gate), *b = a + 2 * 64;
			double ph = atan2((double)b[1] * a[0] - (double)b[0] * a[1],
					  (double)b[0] * a[0] + (double)b[1] * a[1]);
			double want = remainder(2 * M_PI * ok[i].hz / prf, 2 * M_PI);

			assert_true(fabs(remainder(ph - want, 2 * M_PI)) < 1e-5);
		}
		free(x);
		free(pulse);
		synth_destroy(s);
	}
	const char *bad[] = { "", "300", "x,3", "300,", "300,abc", "-5,3", "300,-6,",
			      "300,-6,1x", "300,-6,10,2", "300,1e999", "1.5,-6",
			      "99999999999,0", "300:-6", NULL };
	for (int i = 0; bad[i]; i++) {
		err[0] = 0;
		assert_int_equal(synth_parse_target(bad[i], prf, &t, &folded, err, sizeof(err)),
				 -EINVAL);
		assert_true(err[0] != 0);
	}
	/* A shift without a PRF is refused, none is fine. */
	assert_int_equal(synth_parse_target("300,-6,10", 0, &t, &folded, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "prf_hz"));
	assert_int_equal(synth_parse_target("300,-6,0", 0, &t, &folded, err, sizeof(err)), 0);
	assert_int_equal(synth_parse_target(NULL, prf, &t, &folded, err, sizeof(err)), -EINVAL);
}

/* Directions in target specs: az= and el= after the other fields. */
static void test_parse_target_angle(void **state)
{
	const char *bad[] = { "100,-6,az=91", "100,-6,el=5", "100,-6,az=1,el=2,x=3",
			      "100,-6,az=", "100,-6,az=1,", "100,-6,az=1,az=2", "100,-6,0,az=x",
			      NULL };
	struct synth_target t;
	char err[256];
	int folded;

	assert_int_equal(synth_parse_target("100,-6,0.125/pulse,az=12.5,el=-3", 0, &t, &folded,
					    err, sizeof(err)), 0);
	assert_true(t.has_angle && t.az_deg == 12.5 && t.el_deg == -3 && t.doppler == 0.125);
	assert_int_equal(synth_parse_target("100,-6,az=-40", 0, &t, &folded, err, sizeof(err)), 0);
	assert_true(t.has_angle && t.az_deg == -40 && t.el_deg == 0 && t.doppler == 0);
	assert_int_equal(synth_parse_target("100,-6", 0, &t, &folded, err, sizeof(err)), 0);
	assert_false(t.has_angle);
	for (int i = 0; bad[i]; i++) {
		err[0] = 0;
		if (synth_parse_target(bad[i], 1000, &t, &folded, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(err[0] != 0);
	}
}

static void test_parse_jammer(void **state)
{
	const char *bad[] = { "tone,10,0", "noise,10", "noise,95,0", "noise,10,0,f=0.1",
			      "cw,10,0,f=0.7", "cw,10,0,el=", "noise,10,50", "noise,10,0,", NULL };
	struct synth_jammer j;
	char err[256];

	assert_int_equal(synth_parse_jammer("noise,20,-10", &j, err, sizeof(err)), 0);
	assert_true(j.kind == SYNTH_JAM_NOISE && j.az_deg == 20 && j.power_db == -10 && j.el_deg == 0);
	assert_int_equal(synth_parse_jammer("cw,-30,0,f=0.2,el=5", &j, err, sizeof(err)), 0);
	assert_true(j.kind == SYNTH_JAM_CW && j.az_deg == -30 && j.cycles_per_sample == 0.2 &&
		    j.el_deg == 5);
	assert_int_equal(synth_parse_jammer("cw,0,-3", &j, err, sizeof(err)), 0);
	assert_true(j.cycles_per_sample == 0.1);
	for (int i = 0; bad[i]; i++) {
		err[0] = 0;
		if (synth_parse_jammer(bad[i], &j, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(err[0] != 0);
	}
}

/* A generator on a 5-channel array: ULA of spacing d, or a file's
 * positions, with a calibration. */
static struct synth *make_array(const struct synth_target *t, size_t nt,
				const struct synth_jammer *j, size_t nj, struct array *a,
				double noise, char *err, size_t errlen, const float *pulse)
{
	struct synth_array sa = { .array = a, .carrier_hz = 3e9 };
	struct synth_params p;

	synth_params_init(&p);
	p.channels = 5;
	p.pulses = 3;
	p.samples = 61;
	p.pulse = pulse;
	p.pulse_len = 7;
	p.targets = t;
	p.ntargets = nt;
	p.jammers = j;
	p.njammers = nj;
	p.array = a ? &sa : NULL;
	p.noise_power = noise;
	p.seed = 9;
	return synth_create(&p, err, errlen);
}

/* g_c a_c(u, v) in double, straight from doc/beams.md's formula. */
static void ref_gain(const double xyz[3], const double g[2], double az, double el, double out[2])
{
	double lambda = 299792458.0 / 3e9, d2r = M_PI / 180;
	double u = sin(az * d2r) * cos(el * d2r), v = sin(el * d2r), w = sqrt(1 - u * u - v * v);
	double ph = 2 * M_PI / lambda * (xyz[0] * u + xyz[1] * v + xyz[2] * w);

	out[0] = g[0] * cos(ph) - g[1] * sin(ph);
	out[1] = g[0] * sin(ph) + g[1] * cos(ph);
}

static const char ARRAY_TXT[] =
	"-0.1 0 0\n-0.05 0.02 0\n0 0 0.01\n0.05 -0.03 0\n0.11 0 0.002\n";
static const char CAL_TXT[] = "1 0\n0.9 12.5\n1.1 -30\n1 90\n0.8 181\n";

/*
 * A target at a direction reaches channel c as g_c a_c(u, v) times the
 * echo without one (every channel alike), for any geometry and
 * calibration; a target without a direction is unchanged by the array.
 */
static void test_target_direction(void **state)
{
	struct synth_target t[2] = { { 12, -6, 0.1, 1, 23.5, -7 }, { 40, -10, 0, 0, 0, 0 } };
	struct synth_target t0[2];
	float *pulse = random_pulse(7, 3);
	char err[256] = "";
	struct array *a = array_parse(ARRAY_TXT, strlen(ARRAY_TXT), "array.txt", 5, err,
				      sizeof(err));
	struct synth *s, *s0;
	float *x, *x0;
	size_t n = 5 * 3 * 61;
	double worst = 0;

	assert_non_null(a);
	assert_int_equal(array_cal_parse(a, CAL_TXT, strlen(CAL_TXT), "cal.txt", err, sizeof(err)), 0);
	memcpy(t0, t, sizeof(t));
	t0[0].has_angle = 0;
	s = make_array(t, 1, NULL, 0, a, 0, err, sizeof(err), pulse);
	assert_non_null(s);
	s0 = make_array(t0, 1, NULL, 0, NULL, 0, err, sizeof(err), pulse);
	assert_non_null(s0);
	x = malloc(n * 8);
	x0 = malloc(n * 8);
	assert_int_equal(synth_generate(s, 2, x, n * 8), 0);
	assert_int_equal(synth_generate(s0, 2, x0, n * 8), 0);
	for (unsigned c = 0; c < 5; c++) {
		double xyz[3], g[2], k[2];

		array_position(a, c, xyz);
		array_cal(a, c, g);
		ref_gain(xyz, g, 23.5, -7, k);
		for (size_t i = 0; i < 3 * 61; i++) {
			size_t o = 2 * ((size_t)c * 3 * 61 + i);
			double wr = k[0] * x0[o] - k[1] * x0[o + 1], wi = k[0] * x0[o + 1] + k[1] * x0[o];
			double e = hypot(x[o] - wr, x[o + 1] - wi);

			if (e > worst)
				worst = e;
		}
	}
	print_message("target at 23.5, -7 deg: worst |error| %.3g (peak 0.5)\n", worst);
	assert_true(worst < 1e-6);
	assert_true(x[2 * (2 * 3 * 61 + 12)] != x0[2 * (2 * 3 * 61 + 12)]);   /* not vacuous */
	synth_destroy(s);
	/* the second target has no direction: the same with or without the array */
	s = make_array(t, 2, NULL, 0, a, 0, err, sizeof(err), pulse);
	synth_destroy(s0);
	s0 = make_array(t0, 2, NULL, 0, a, 0, err, sizeof(err), pulse);
	assert_non_null(s);
	assert_non_null(s0);
	assert_int_equal(synth_generate(s, 0, x, n * 8), 0);
	assert_int_equal(synth_generate(s0, 0, x0, n * 8), 0);
	for (unsigned c = 0; c < 5; c++)   /* gate 40.. of every row: the second only */
		assert_true(x[2 * ((size_t)c * 3 * 61 + 45)] == x0[2 * ((size_t)c * 3 * 61 + 45)]);
	synth_destroy(s);
	synth_destroy(s0);
	/* refused: a direction without an array, a wrong element count */
	assert_null(make_array(t, 1, NULL, 0, NULL, 0, err, sizeof(err), pulse));
	assert_non_null(strstr(err, "needs the receive array"));
	array_destroy(a);
	a = array_create_ula(4, 0.05, err, sizeof(err));
	assert_null(make_array(t, 1, NULL, 0, a, 0, err, sizeof(err), pulse));
	assert_non_null(strstr(err, "the array has 4 elements, the CPI 5 channels"));
	array_destroy(a);
	free(x);
	free(x0);
	free(pulse);
}

/*
 * A jammer is the same signal on every channel times g_c a_c: noise of
 * its power, or a tone whose phase runs on over the global sample index.
 */
static void test_jammers(void **state)
{
	struct synth_jammer j[2] = {
		{ SYNTH_JAM_NOISE, 30, 0, -10, 0 },
		{ SYNTH_JAM_CW, -20, 5, -20, 0.15 },
	};
	struct synth_target t = { 12, -60, 0, 0, 0, 0 };
	float *pulse = random_pulse(7, 4);
	char err[256] = "";
	struct array *a = array_create_ula(5, 0.05, err, sizeof(err));
	struct synth *s;
	size_t n = 5 * 3 * 61;
	float *x = malloc(n * 8);
	double g0[2] = { 1, 0 }, k[5][2], pw = 0;

	assert_non_null(a);
	for (unsigned c = 0; c < 5; c++) {
		double xyz[3];

		array_position(a, c, xyz);
		ref_gain(xyz, g0, 30, 0, k[c]);
	}
	/* noise alone: channel c = k_c / k_0 times channel 0, power -10 dBFS */
	s = make_array(&t, 1, j, 1, a, 0, err, sizeof(err), pulse);
	assert_non_null(s);
	assert_int_equal(synth_generate(s, 1, x, n * 8), 0);
	for (unsigned c = 1; c < 5; c++) {
		for (size_t i = 20; i < 3 * 61; i++) {   /* clear of the weak echo */
			size_t o = 2 * ((size_t)c * 3 * 61 + i), o0 = 2 * i;
			double rr = (k[c][0] * k[0][0] + k[c][1] * k[0][1]);
			double ri = (k[c][1] * k[0][0] - k[c][0] * k[0][1]);
			double wr = rr * x[o0] - ri * x[o0 + 1], wi = rr * x[o0 + 1] + ri * x[o0];

			if (i % 61 < 12 || i % 61 >= 19)
				assert_true(hypot(x[o] - wr, x[o + 1] - wi) < 1e-5);
		}
	}
	for (size_t i = 0; i < n; i++)
		pw += (double)x[2 * i] * x[2 * i] + (double)x[2 * i + 1] * x[2 * i + 1];
	pw /= n;
	print_message("noise jammer: %.2f dBFS per sample (-10 wanted)\n", 10 * log10(pw));
	assert_true(fabs(10 * log10(pw) + 10) < 0.6);
	synth_destroy(s);
	/* the tone: channel c, pulse p, sample r of CPI k */
	s = make_array(&t, 1, j + 1, 1, a, 0, err, sizeof(err), pulse);
	assert_non_null(s);
	assert_int_equal(synth_generate(s, 3, x, n * 8), 0);
	for (unsigned c = 0; c < 5; c++) {
		double xyz[3], kc[2];

		array_position(a, c, xyz);
		ref_gain(xyz, g0, -20, 5, kc);
		for (unsigned p = 0; p < 3; p++) {
			for (unsigned r = 30; r < 61; r++) {
				double ph = 2 * M_PI * 0.15 * (double)((3 * 3 + p) * 61 + r), A = 0.1;
				double yr = A * cos(ph), yi = A * sin(ph);
				size_t o = 2 * (((size_t)c * 3 + p) * 61 + r);

				assert_true(fabs(x[o] - (yr * kc[0] - yi * kc[1])) < 1e-6);
				assert_true(fabs(x[o + 1] - (yr * kc[1] + yi * kc[0])) < 1e-6);
			}
		}
	}
	synth_destroy(s);
	array_destroy(a);
	free(x);
	free(pulse);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_target_placement),
		cmocka_unit_test(test_truncation_and_doppler),
		cmocka_unit_test(test_noise_power),
		cmocka_unit_test(test_sc16),
		cmocka_unit_test(test_create_rejects),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_from_config),
		cmocka_unit_test(test_parse_target_per_pulse),
		cmocka_unit_test(test_synth_opts),
		cmocka_unit_test(test_parse_target_hz),
		cmocka_unit_test(test_parse_target_angle),
		cmocka_unit_test(test_parse_jammer),
		cmocka_unit_test(test_target_direction),
		cmocka_unit_test(test_jammers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
