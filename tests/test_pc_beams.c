/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pc_beams.c — beams through the whole chain (pc_create / pc_submit,
 * the CPU backend; chirp/pc.h, BEAMS): maps and detections against an
 * independent double-precision reference (direct sums for the weights, the
 * beams, the correlation and the Doppler DFT) for a fan, a list with a
 * calibration file, MVDR and sc16 input; a 20 dB target between two beams
 * detected with its monopulse angle against the Cramer-Rao bound; the
 * pointing changing every CPI; an MVDR jammer null; invisible pointings.
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
#include "chirp/detect.h"
#include "chirp/pc.h"
#include "monopulse.h"
#include "waveform.h"

#define CARRIER_HZ 3e9
#define LAMBDA (299792458.0 / CARRIER_HZ)

#define TEST_RNG_SEED 0x2545f4914f6cdd1dull
#include "test_rng.h"

/* --- the case: geometry, array, beams ----------------------------------- */

struct beam_case {
	unsigned C, P, R, L, B;
	enum pc_beams_mode mode;
	enum pc_beams_layout layout;
	double pos[3 * 64];
	double cal[2 * 64];
	int has_cal;
	double taper[64];
	int has_taper;
	double list_deg[2 * 16];
	double fan_az, fan_el, du;
	double point_az, point_el;
	unsigned snapshots, first_gate, gate_stride, pulse_stride;
	double loading;
	enum pc_format fmt;
};

static void ula_positions(struct beam_case *k, double d)
{
	for (unsigned c = 0; c < k->C; c++) {
		k->pos[3 * c] = (c - (k->C - 1) / 2.0) * d;
		k->pos[3 * c + 1] = 0;
		k->pos[3 * c + 2] = 0;
	}
}

static void params_of(const struct beam_case *k, struct pc_params *p, const float *ref)
{
	pc_params_init(p);
	p->channels = k->C;
	p->pulses = k->P;
	p->samples = k->R;
	p->in_format = k->fmt;
	p->ref = ref;
	p->ref_len = k->L;
	p->backend = PC_BACKEND_CPU;
	p->cpu_threads = 2;
	p->beams.mode = k->mode;
	p->beams.count = k->B;
	p->beams.positions_m = k->pos;
	p->beams.cal = k->has_cal ? k->cal : NULL;
	p->beams.carrier_hz = CARRIER_HZ;
	p->beams.layout = k->layout;
	p->beams.fan_az_deg = k->fan_az;
	p->beams.fan_el_deg = k->fan_el;
	p->beams.fan_spacing_u = k->du;
	p->beams.list_deg = k->list_deg;
	p->beams.taper = k->has_taper ? k->taper : NULL;
	p->beams.snapshots = k->snapshots;
	p->beams.first_gate = k->first_gate;
	p->beams.gate_stride = k->gate_stride ? k->gate_stride : 1;
	p->beams.pulse_stride = k->pulse_stride ? k->pulse_stride : 1;
	p->beams.loading = k->loading;
	p->beams.monopulse = k->B >= 2;
}

/* Beam b's direction (u, v) under the case's pointing, independently. */
static void ref_uv(const struct beam_case *k, unsigned b, double *u, double *v)
{
	double d2r = M_PI / 180, up, vp;

	if (k->layout == PC_BEAMS_FAN) {
		*u = sin(k->fan_az * d2r) * cos(k->fan_el * d2r) + (b - (k->B - 1) / 2.0) * k->du;
		*v = sin(k->fan_el * d2r);
	} else {
		*u = sin(k->list_deg[2 * b] * d2r) * cos(k->list_deg[2 * b + 1] * d2r);
		*v = sin(k->list_deg[2 * b + 1] * d2r);
	}
	up = sin(k->point_az * d2r) * cos(k->point_el * d2r);
	vp = sin(k->point_el * d2r);
	*u += up;
	*v += vp;
}

static double complex ref_gain(const struct beam_case *k, unsigned c)
{
	return k->has_cal ? k->cal[2 * c] + I * k->cal[2 * c + 1] : 1.0;
}

/* g_c a_c(u, v). */
static double complex ref_resp(const struct beam_case *k, unsigned c, double u, double v)
{
	double w = sqrt(1 - u * u - v * v);
	const double *p = k->pos + 3 * c;

	return ref_gain(k, c) * cexp(I * 2 * M_PI / LAMBDA * (p[0] * u + p[1] * v + p[2] * w));
}

/* Solve A x = y (n x n complex, row-major, destroyed) by Gaussian
 * elimination with partial pivoting. */
static void ref_solve(double complex *A, double complex *y, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned piv = i;

		for (unsigned r = i + 1; r < n; r++)
			if (cabs(A[r * n + i]) > cabs(A[piv * n + i]))
				piv = r;
		for (unsigned c = 0; c < n; c++) {
			double complex t = A[i * n + c];

			A[i * n + c] = A[piv * n + c];
			A[piv * n + c] = t;
		}
		{
			double complex t = y[i];

			y[i] = y[piv];
			y[piv] = t;
		}
		for (unsigned r = i + 1; r < n; r++) {
			double complex f = A[r * n + i] / A[i * n + i];

			for (unsigned c = i; c < n; c++)
				A[r * n + c] -= f * A[i * n + c];
			y[r] -= f * y[i];
		}
	}
	for (int i = (int)n - 1; i >= 0; i--) {
		for (unsigned c = (unsigned)i + 1; c < n; c++)
			y[i] -= A[i * n + c] * y[c];
		y[i] /= A[i * n + i];
	}
}

/* The weights W[b][c], independently: conventional from the definition,
 * MVDR from the training cells of X (double). */
static void ref_weights(const struct beam_case *k, const double complex *X, double complex *W)
{
	unsigned C = k->C, B = k->B;

	if (k->mode == PC_BEAMS_CONVENTIONAL) {
		double sum = 0;

		for (unsigned c = 0; c < C; c++)
			sum += k->has_taper ? k->taper[c] : 1.0;
		for (unsigned b = 0; b < B; b++) {
			double u, v;

			ref_uv(k, b, &u, &v);
			for (unsigned c = 0; c < C; c++) {
				double t = k->has_taper ? k->taper[c] : 1.0;
				double complex a = ref_resp(k, c, u, v) / ref_gain(k, c);

				W[b * C + c] = t * conj(a) / ref_gain(k, c) / sum;
			}
		}
		return;
	}
	{
		double complex *Rm = xcalloc((size_t)C * C, sizeof(*Rm)), *A = xcalloc((size_t)C * C, sizeof(*A));
		double complex y[64];
		unsigned K = k->snapshots, got = 0;
		double tr = 0;

		for (unsigned p = 0; p < k->P && got < K; p += k->pulse_stride)
			for (unsigned r = k->first_gate; r < k->R && got < K; r += k->gate_stride, got++)
				for (unsigned i = 0; i < C; i++)
					for (unsigned j = 0; j < C; j++)
						Rm[i * C + j] += X[((size_t)i * k->P + p) * k->R + r] *
								 conj(X[((size_t)j * k->P + p) * k->R + r]);
		assert_int_equal(got, K);
		for (unsigned i = 0; i < C * C; i++)
			Rm[i] /= K;
		for (unsigned i = 0; i < C; i++)
			tr += creal(Rm[i * C + i]);
		for (unsigned b = 0; b < B; b++) {
			double u, v;
			double complex den = 0;

			ref_uv(k, b, &u, &v);
			memcpy(A, Rm, (size_t)C * C * sizeof(*A));
			for (unsigned i = 0; i < C; i++) {
				A[i * C + i] += k->loading * tr / C;
				y[i] = ref_resp(k, i, u, v);
			}
			ref_solve(A, y, C);
			for (unsigned c = 0; c < C; c++)
				den += conj(ref_resp(k, c, u, v)) * y[c];
			for (unsigned c = 0; c < C; c++)
				W[b * C + c] = conj(y[c] / den);
		}
		free(Rm);
		free(A);
	}
}

/*
 * The map, independently in double: beams by direct sums, compression by
 * direct correlation with g = 1/||h||, Doppler by a direct DFT (no MTI,
 * rect, Nd bins, g_d = 1/sqrt(P)), M = |D|^2 with zero Doppler in the
 * middle. M: B x Nd x R; D (if not NULL): the same layout, complex.
 */
static void ref_map(const struct beam_case *k, const double complex *X, const float *ref,
		    unsigned Nd, double *M, double complex *D)
{
	unsigned C = k->C, B = k->B, P = k->P, R = k->R, L = k->L;
	double complex *W = xcalloc((size_t)B * C, sizeof(*W));
	double complex *Y = xcalloc((size_t)B * P * R, sizeof(*Y));
	double complex *Z = xcalloc((size_t)B * P * R, sizeof(*Z));
	double e = 0;

	ref_weights(k, X, W);
	for (unsigned b = 0; b < B; b++)
		for (size_t n = 0; n < (size_t)P * R; n++) {
			double complex s = 0;

			for (unsigned c = 0; c < C; c++)
				s += W[b * C + c] * X[c * (size_t)P * R + n];
			Y[b * (size_t)P * R + n] = s;
		}
	for (unsigned l = 0; l < L; l++)
		e += ref[2 * l] * (double)ref[2 * l] + ref[2 * l + 1] * (double)ref[2 * l + 1];
	for (size_t row = 0; row < (size_t)B * P; row++)
		for (unsigned n = 0; n < R; n++) {
			double complex s = 0;

			for (unsigned l = 0; l < L && n + l < R; l++)
				s += Y[row * R + n + l] * conj(ref[2 * l] + I * ref[2 * l + 1]);
			Z[row * R + n] = s / sqrt(e);
		}
	for (unsigned b = 0; b < B; b++)
		for (unsigned kb = 0; kb < Nd; kb++) {
			int m = (int)kb - (int)(Nd / 2);

			for (unsigned n = 0; n < R; n++) {
				double complex s = 0;

				for (unsigned p = 0; p < P; p++)
					s += Z[((size_t)b * P + p) * R + n] * cexp(-2 * M_PI * I * p * m / Nd);
				s /= sqrt((double)P);
				M[((size_t)b * Nd + kb) * R + n] = creal(s) * creal(s) + cimag(s) * cimag(s);
				if (D)
					D[((size_t)b * Nd + kb) * R + n] = s;
			}
		}
	free(W);
	free(Y);
	free(Z);
}

/* A CPI of noise (power 1 per element sample) and a target of amplitude
 * amp from (ut, vt) whose echo (the reference) starts at gate d, Doppler
 * bin mt; written to X (double) and to the input (cf32 or sc16 x scale). */
static void make_cpi(const struct beam_case *k, const float *ref, double ut, double vt,
		     double complex amp, unsigned d, int mt, unsigned Nd, double noise,
		     double complex *X, void *in, double sc16_scale)
{
	unsigned C = k->C, P = k->P, R = k->R;

	for (unsigned c = 0; c < C; c++) {
		double complex g = ref_resp(k, c, ut, vt);

		for (unsigned p = 0; p < P; p++)
			for (unsigned r = 0; r < R; r++) {
				size_t i = ((size_t)c * P + p) * R + r;
				double complex x = noise > 0 ? cgauss(noise) : 0;

				if (amp != 0 && r >= d && r - d < k->L)
					x += amp * g * cexp(2 * M_PI * I * p * mt / Nd) *
					     (ref[2 * (r - d)] + I * ref[2 * (r - d) + 1]);
				if (k->fmt == PC_FMT_SC16) {   /* the values the backend reads */
					int16_t *s = in;
					double re = round(creal(x) * sc16_scale), im = round(cimag(x) * sc16_scale);

					s[2 * i] = (int16_t)re;
					s[2 * i + 1] = (int16_t)im;
					x = (re + I * im) / 32768.0;
				} else {
					float *f = in;

					f[2 * i] = (float)creal(x);
					f[2 * i + 1] = (float)cimag(x);
					x = (double)f[2 * i] + I * (double)f[2 * i + 1];
				}
				X[i] = x;
			}
	}
}

static void make_ref(float *ref, unsigned L)
{
	for (unsigned l = 0; l < L; l++) {
		double ph = M_PI * l * l / L;   /* a chirp */

		ref[2 * l] = (float)cos(ph);
		ref[2 * l + 1] = (float)sin(ph);
	}
}

/* --- parity ----------------------------------------------------------- */

/*
 * The map (map_power) and the detection list of one CPI against the
 * reference: relative L2 of the maps <= 1e-5; every record in beam b at
 * (k, n) holds the reference map's value there and is a local maximum of
 * the reference over range, Doppler and beam; the target's cell is
 * detected in its strongest beam.
 */
static void check_parity(struct beam_case *k, const char *name)
{
	unsigned C = k->C, P = k->P, R = k->R, B = k->B;
	float ref[2 * 64];
	struct pc_params p;
	struct pc *pc;
	struct pc_info info;
	char err[256];
	size_t in_bytes = (size_t)C * P * R * (k->fmt == PC_FMT_SC16 ? 4 : 8);
	void *in = xcalloc(1, in_bytes);
	double complex *X = xcalloc((size_t)C * P * R, sizeof(*X));
	double *M, num = 0, den = 0, ut, vt, scale = 32768.0 / 16;
	float *out;
	void *det;
	struct pc_job job;
	const struct chirp_det_header *h;
	const struct chirp_det_record *rec;
	unsigned Nd, d = 11, found_target = 0;
	int mt = 2;

	make_ref(ref, k->L);
	params_of(k, &p, ref);
	p.out_mode = PC_OUT_MAP_POWER;
	p.radar.doppler = 1;
	p.radar.cfar = 1;
	p.radar.integrate = 0;
	p.radar.pfa = 1e-5;
	p.radar.guard_range = 1;
	p.radar.train_range = 4;
	p.radar.guard_doppler = 1;
	p.radar.train_doppler = 1;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("%s: pc_create: %s", name, err);
	pc_get_info(pc, &info);
	Nd = info.doppler_nfft;
	assert_int_equal(pc_out_bytes(pc), (size_t)B * Nd * R * sizeof(float));
	out = xcalloc(1, pc_out_bytes(pc));
	det = xcalloc(1, pc_det_bytes(pc));
	M = xcalloc((size_t)B * Nd * R, sizeof(double));
	/* the target halfway between beams 1 and 2 */
	{
		double u1, u2, v1;

		ref_uv(k, 1, &u1, &v1);
		ref_uv(k, 2, &u2, &v1);
		ut = (u1 + u2) / 2;
		vt = v1;
	}
	make_cpi(k, ref, ut, vt, 3.0, d, mt, Nd, 1.0, X, in, scale);
	memset(&job, 0, sizeof(job));
	job.in = in;
	job.out = out;
	job.det = det;
	job.pointing_az_deg = k->point_az;
	job.pointing_el_deg = k->point_el;
	assert_int_equal(pc_execute_job(pc, &job, NULL), 0);
	ref_map(k, X, ref, Nd, M, NULL);
	for (size_t i = 0; i < (size_t)B * Nd * R; i++) {
		num += (out[i] - M[i]) * (out[i] - M[i]);
		den += M[i] * M[i];
	}
	h = det;
	rec = (const void *)(h + 1);
	printf("%s: %u beams x %u x %u map, relative L2 %.2e against the reference; %u detections\n",
	       name, B, Nd, R, sqrt(num / den), h->count);
	assert_true(sqrt(num / den) <= 1e-5);
	assert_true(h->flags & CHIRP_DET_BEAMS);
	assert_int_equal(h->maps, B);
	assert_int_equal(h->version, CHIRP_DET_VERSION);
	for (unsigned i = 0; i < h->count; i++) {
		const struct chirp_det_record *r = &rec[i];
		unsigned kb = (unsigned)(r->doppler_bin + (int)(Nd / 2)), b = (unsigned)r->beam;
		double m = M[((size_t)b * Nd + kb) * R + r->range_gate];

		assert_int_equal(r->channel, r->beam);
		assert_true(r->beam >= 0 && r->beam < (int)B);
		assert_true(fabs(r->power - m) <= 1e-4 * m);
		if (b > 0)
			assert_true(m > M[((size_t)(b - 1) * Nd + kb) * R + r->range_gate]);
		if (b + 1 < B)
			assert_true(m >= M[((size_t)(b + 1) * Nd + kb) * R + r->range_gate]);
		assert_true(isfinite(r->azimuth_deg) && isfinite(r->elevation_deg));
		if (r->range_gate == d && r->doppler_bin == mt)
			found_target++;
	}
	assert_true(found_target >= 1);
	pc_destroy(pc);
	free(in);
	free(X);
	free(M);
	free(out);
	free(det);
}

static void test_parity_fan(void **state)
{
	struct beam_case k = { .C = 6, .P = 9, .R = 83, .L = 7, .B = 4, .du = 0.25 };

	(void)state;
	k.mode = PC_BEAMS_CONVENTIONAL;
	k.layout = PC_BEAMS_FAN;
	ula_positions(&k, LAMBDA / 2);
	k.fan_az = 5;
	k.point_az = -3;
	k.point_el = 0;
	check_parity(&k, "fan");
}

/* A list over an irregular planar array, a Taylor-like taper, a
 * calibration read from a file (array_cal_load: the daemon's path). */
static void test_parity_list_cal(void **state)
{
	struct beam_case k = { .C = 7, .P = 8, .R = 71, .L = 5, .B = 3 };
	char path[] = "/tmp/test_pc_beams_calXXXXXX";
	int fd = mkstemp(path);
	FILE *f;
	struct array *a;
	char err[256];

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (unsigned c = 0; c < k.C; c++)
		fprintf(f, "%.3f %.2f   # channel %u\n", 0.8 + 0.05 * c, -20.0 + 7.0 * c, c);
	fclose(f);
	k.mode = PC_BEAMS_CONVENTIONAL;
	k.layout = PC_BEAMS_LIST;
	for (unsigned c = 0; c < k.C; c++) {
		k.pos[3 * c] = 0.05 * c + 0.01 * (c % 2);
		k.pos[3 * c + 1] = 0.04 * (c % 3);
		k.pos[3 * c + 2] = 0.002 * c;
		k.taper[c] = 0.6 + 0.4 * sin(M_PI * (c + 0.5) / k.C);
	}
	k.has_taper = 1;
	a = array_create_xyz(k.C, k.pos, NULL, err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(array_cal_load(a, path, err, sizeof(err)), 0);
	for (unsigned c = 0; c < k.C; c++)
		array_cal(a, c, k.cal + 2 * c);
	k.has_cal = 1;
	array_destroy(a);
	unlink(path);
	k.list_deg[0] = -20;
	k.list_deg[1] = 5;
	k.list_deg[2] = -8;
	k.list_deg[3] = 5;
	k.list_deg[4] = 4;
	k.list_deg[5] = 5;
	k.point_az = 2;
	k.point_el = -1;
	check_parity(&k, "list, calibration file");
}

static void test_parity_mvdr(void **state)
{
	struct beam_case k = { .C = 8, .P = 10, .R = 67, .L = 5, .B = 5, .du = 0.2 };

	(void)state;
	k.mode = PC_BEAMS_MVDR;
	k.layout = PC_BEAMS_FAN;
	ula_positions(&k, LAMBDA / 2);
	k.snapshots = 40;
	k.first_gate = 30;   /* past the target's echo */
	k.gate_stride = 2;
	k.pulse_stride = 3;
	k.loading = 0.05;
	k.point_az = 4;
	check_parity(&k, "mvdr");
}

static void test_parity_sc16(void **state)
{
	struct beam_case k = { .C = 5, .P = 7, .R = 61, .L = 6, .B = 3, .du = 0.3 };

	(void)state;
	k.mode = PC_BEAMS_CONVENTIONAL;
	k.layout = PC_BEAMS_FAN;
	k.fmt = PC_FMT_SC16;
	ula_positions(&k, LAMBDA / 2);
	check_parity(&k, "fan, sc16 input");
}

/* --- detection and monopulse ------------------------------------------ */

/*
 * 16-element half-wave ULA, 8 beams 0.12 apart in u, Taylor 4/30 dB, the
 * fan pointed 7 degrees off boresight per CPI; a target at an array SNR of
 * 20 dB in its cell, 0.6 of the way from beam 3 to beam 4, 200 CPIs: found
 * in >= 99 %, RMS angle error <= 0.1 beamwidth and <= 2 x the Cramer-Rao
 * bound (mono_crb_u).
 */
static void test_monopulse_chain(void **state)
{
	enum { TRIALS = 200 };
	struct beam_case k = { .C = 16, .P = 8, .R = 48, .L = 1, .B = 8, .du = 0.12 };
	const double snr = 100.0;
	float ref[2] = { 1, 0 };
	double taper[16];
	struct pc_params p;
	struct pc *pc;
	struct pc_info info;
	struct array *a;
	char err[256];
	void *in;
	double complex *X;
	void *det;
	double u3, u4, v, ut, crb, se = 0, bw = 0.1407, amp;
	unsigned found = 0, Nd, d = 20;

	(void)state;
	k.mode = PC_BEAMS_CONVENTIONAL;
	k.layout = PC_BEAMS_FAN;
	ula_positions(&k, LAMBDA / 2);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 4, 30, taper, 16), 0);
	memcpy(k.taper, taper, sizeof(taper));
	k.has_taper = 1;
	k.point_az = 7;
	ref_uv(&k, 3, &u3, &v);
	ref_uv(&k, 4, &u4, &v);
	ut = u3 + 0.6 * (u4 - u3);
	params_of(&k, &p, ref);
	p.out_mode = PC_OUT_NONE;
	p.radar.doppler = 1;
	p.radar.cfar = 1;
	p.radar.integrate = 0;
	p.radar.pfa = 1e-6;
	p.radar.guard_range = 1;
	p.radar.train_range = 8;
	p.radar.guard_doppler = 1;
	p.radar.train_doppler = 2;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	pc_get_info(pc, &info);
	Nd = info.doppler_nfft;
	in = xcalloc((size_t)k.C * k.P * k.R, 8);
	X = xcalloc((size_t)k.C * k.P * k.R, sizeof(*X));
	det = xcalloc(1, pc_det_bytes(pc));
	a = array_create_xyz(k.C, k.pos, NULL, err, sizeof(err));
	assert_non_null(a);
	crb = sqrt(mono_crb_u(a, LAMBDA, ut, v, snr));
	/* array SNR at the cell: C P |s|^2 / 1 (Doppler gain P, h = [1]) */
	amp = sqrt(snr / (k.C * k.P));
	for (int t = 0; t < TRIALS; t++) {
		struct pc_job job = { .in = in, .det = det, .tag = (uint64_t)t,
				      .pointing_az_deg = k.point_az };
		const struct chirp_det_header *h = det;
		const struct chirp_det_record *rec = (const void *)(h + 1);

		make_cpi(&k, ref, ut, v, amp * cexp(2 * M_PI * I * urand()), d, 1, Nd, 1.0, X, in, 0);
		assert_int_equal(pc_execute_job(pc, &job, NULL), 0);
		for (unsigned i = 0; i < h->count; i++) {
			double u;

			if (rec[i].range_gate != d || rec[i].doppler_bin != 1)
				continue;
			found++;
			u = sin(rec[i].azimuth_deg * M_PI / 180) * cos(rec[i].elevation_deg * M_PI / 180);
			se += (u - ut) * (u - ut);
			break;
		}
	}
	se = sqrt(se / (found ? found : 1));
	printf("monopulse through the chain, 20 dB array SNR: found in %u of %d CPIs; RMS error "
	       "%.5f u = %.4f beamwidths (%.4f u) = %.2f x the Cramer-Rao bound %.5f u\n",
	       found, TRIALS, se, se / bw, bw, se / crb, crb);
	assert_true(found >= TRIALS * 99 / 100);
	assert_true(se <= 0.1 * bw);
	assert_true(se <= 2.0 * crb);
	array_destroy(a);
	pc_destroy(pc);
	free(in);
	free(X);
	free(det);
}

/*
 * The pointing changes every CPI among three values, three CPIs in flight
 * (cpu_depth 3) before any is polled: a strong target at u = 0.24 appears
 * in beam 4, 3 and 2 of a 5-beam fan (0.12 apart at boresight) for the
 * pointings u_p = 0, 0.12 and 0.24: each CPI used its own weights.
 */
static void test_pointing_per_cpi(void **state)
{
	enum { ROUNDS = 4, DEPTH = 3 };
	struct beam_case k = { .C = 12, .P = 6, .R = 40, .L = 1, .B = 5, .du = 0.12 };
	float ref[2] = { 1, 0 };
	const double up[3] = { 0, 0.12, 0.24 };
	const unsigned want[3] = { 4, 3, 2 };
	struct pc_params p;
	struct pc *pc;
	char err[256];
	void *in[DEPTH], *det[DEPTH];
	double complex *X;
	unsigned Nd = 6;

	(void)state;
	k.mode = PC_BEAMS_CONVENTIONAL;
	k.layout = PC_BEAMS_FAN;
	ula_positions(&k, LAMBDA / 2);
	assert_int_equal(wf_window_fill(WIN_TAYLOR, 4, 30, k.taper, k.C), 0);
	k.has_taper = 1;
	params_of(&k, &p, ref);
	p.out_mode = PC_OUT_NONE;
	p.cpu_depth = DEPTH;
	p.radar.doppler = 1;
	p.radar.cfar = 1;
	p.radar.integrate = 0;
	p.radar.guard_range = 1;
	p.radar.train_range = 6;
	p.radar.train_doppler = 1;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	X = xcalloc((size_t)k.C * k.P * k.R, sizeof(*X));
	for (int i = 0; i < DEPTH; i++) {
		in[i] = xcalloc((size_t)k.C * k.P * k.R, 8);
		det[i] = xcalloc(1, pc_det_bytes(pc));
	}
	for (int round = 0; round < ROUNDS; round++) {
		struct pc_done done[DEPTH];
		int n = 0;

		for (int i = 0; i < DEPTH; i++) {
			unsigned s = (unsigned)(round + i) % 3;
			struct pc_job job = { .in = in[i], .det = det[i], .tag = s,
					      .pointing_az_deg = asin(up[s]) * 180 / M_PI };

			make_cpi(&k, ref, 0.24, 0, 2.0, 15, 0, Nd, 1.0, X, in[i], 0);
			assert_int_equal(pc_submit_job(pc, &job), 0);
		}
		while (n < DEPTH) {
			int got = pc_poll(pc, done + n, DEPTH - n, -1);

			assert_true(got >= 0);
			n += got;
		}
		for (int i = 0; i < DEPTH; i++) {
			const struct chirp_det_header *h = det[i];
			const struct chirp_det_record *rec = (const void *)(h + 1);
			unsigned s = (unsigned)done[i].tag;
			int best = -1;

			for (unsigned j = 0; j < h->count; j++)
				if (rec[j].range_gate == 15 && rec[j].doppler_bin == 0 &&
				    (best < 0 || rec[j].power > rec[best].power))
					best = (int)j;
			assert_true(best >= 0);
			assert_int_equal(rec[best].beam, want[s]);
		}
	}
	pc_destroy(pc);
	free(X);
	for (int i = 0; i < DEPTH; i++) {
		free(in[i]);
		free(det[i]);
	}
}

/* --- MVDR through the chain ------------------------------------------- */

/*
 * 16-element half-wave ULA, 7 beams 0.1 apart, a noise jammer 40 dB above
 * the element noise at u = 0.6125. The training cells (gates 0..99 of
 * pulse 0.., K = 64) hold noise and jammer; gates 120..139 the jammer
 * alone and gates 150..169 a target alone at u = 0.04, so the complex
 * output there measures each beam's gain on either exactly. Compression
 * is the identity (h = [1], normalize none). MVDR puts the jammer >= 30 dB
 * lower than the conventional beam does, the target's gain in the beams
 * that see it moves < 1 dB.
 */
static void mvdr_gains(enum pc_beams_mode mode, double *gj, double *gt)
{
	enum { C = 16, B = 7, P = 4, R = 200 };
	struct beam_case k = { .C = C, .P = P, .R = R, .L = 1, .B = B, .du = 0.1 };
	float ref[2] = { 1, 0 };
	struct pc_params p;
	struct pc *pc;
	char err[256];
	float *in = xcalloc((size_t)C * P * R, 8), *out;
	const double uj = 0.6125, ut = 0.04, inr = 1e4;

	rng_state = 0x1234567887654321ull;
	k.mode = mode;
	k.layout = PC_BEAMS_FAN;
	ula_positions(&k, LAMBDA / 2);
	k.snapshots = 64;
	k.loading = 1e-3;
	params_of(&k, &p, ref);
	p.normalize = PC_NORM_NONE;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create: %s", err);
	out = xcalloc(1, pc_out_bytes(pc));
	for (unsigned pp = 0; pp < P; pp++)
		for (unsigned r = 0; r < R; r++) {
			double complex j = r < 100 || (r >= 120 && r < 140) ? cgauss(inr) : 0;
			double complex t = r >= 150 && r < 170 ? cexp(2 * M_PI * I * urand()) : 0;

			for (unsigned c = 0; c < C; c++) {
				double complex x = (r < 100 ? cgauss(1) : 0) + j * ref_resp(&k, c, uj, 0) +
						   t * ref_resp(&k, c, ut, 0);
				size_t i = ((size_t)c * P + pp) * R + r;

				in[2 * i] = (float)creal(x);
				in[2 * i + 1] = (float)cimag(x);
			}
		}
	{
		struct pc_job job = { .in = in, .out = out };

		assert_int_equal(pc_execute_job(pc, &job, NULL), 0);
	}
	for (unsigned b = 0; b < B; b++) {
		double sj = 0, st = 0;

		for (unsigned pp = 0; pp < P; pp++)
			for (unsigned r = 120; r < 170; r++) {
				const float *y = out + 2 * (((size_t)b * P + pp) * R + r);
				double e = (double)y[0] * y[0] + (double)y[1] * y[1];

				if (r < 140)
					sj += e;
				else if (r >= 150)
					st += e;
			}
		gj[b] = 10 * log10(sj / (20.0 * P * inr) + 1e-30);
		gt[b] = 10 * log10(st / (20.0 * P) + 1e-30);
	}
	pc_destroy(pc);
	free(in);
	free(out);
}

static void test_mvdr_chain(void **state)
{
	double cj[7], ct[7], aj[7], at[7];

	(void)state;
	mvdr_gains(PC_BEAMS_CONVENTIONAL, cj, ct);
	mvdr_gains(PC_BEAMS_MVDR, aj, at);
	for (unsigned b = 0; b < 7; b++) {
		printf("beam %u: jammer conventional %.1f dB, mvdr %.1f dB (%.1f dB more); target "
		       "%.2f / %.2f dB\n", b, cj[b], aj[b], cj[b] - aj[b], ct[b], at[b]);
		assert_true(cj[b] - aj[b] >= 30.0);
		if (ct[b] > -10)
			assert_true(fabs(at[b] - ct[b]) < 1.0);
	}
}

/* --- refusals ----------------------------------------------------------- */

/* An invisible or non-finite pointing: -EDOM, nothing queued, the pc
 * usable; the set keeps the last good pointing. */
static void test_bad_pointing(void **state)
{
	struct beam_case k = { .C = 8, .P = 4, .R = 32, .L = 3, .B = 5, .du = 0.2 };
	float ref[6] = { 1, 0, 0.5, 0.5, 0, 1 };
	struct pc_params p;
	struct pc *pc;
	char err[256];
	float *in = xcalloc((size_t)8 * 4 * 32, 8), *out;
	struct pc_job job;
	double az, el;

	(void)state;
	k.mode = PC_BEAMS_CONVENTIONAL;
	k.layout = PC_BEAMS_FAN;
	ula_positions(&k, LAMBDA / 2);
	params_of(&k, &p, ref);
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	out = xcalloc(1, pc_out_bytes(pc));
	assert_int_equal(pc_out_bytes(pc), (size_t)5 * 4 * 32 * 8);
	memset(&job, 0, sizeof(job));
	job.in = in;
	job.out = out;
	job.pointing_az_deg = 10;
	assert_int_equal(pc_execute_job(pc, &job, NULL), 0);
	job.pointing_az_deg = 60;   /* beam 4 at u 0.866 + 0.4 */
	assert_int_equal(pc_submit_job(pc, &job), -EDOM);
	assert_int_equal(pc_check_pointing(pc, 60, 0, err, sizeof(err)), -EDOM);
	assert_non_null(strstr(err, "outside the visible region"));
	job.pointing_az_deg = NAN;
	assert_int_equal(pc_submit_job(pc, &job), -EDOM);
	job.pointing_az_deg = 91;
	assert_int_equal(pc_submit_job(pc, &job), -EDOM);
	assert_int_equal(pc_in_flight(pc), 0);
	assert_int_equal(pc_beam_count(pc), 5);
	pc_beam_azel(pc, 2, &az, &el);
	assert_true(fabs(az - 10) < 1e-9);
	job.pointing_az_deg = 0;
	assert_int_equal(pc_execute_job(pc, &job, NULL), 0);   /* still usable */
	pc_destroy(pc);
	free(in);
	free(out);
}

/* pc_params_check: what beams need and refuse. */
static void test_params_refused(void **state)
{
	struct beam_case k = { .C = 4, .P = 4, .R = 32, .L = 3, .B = 3, .du = 0.2 };
	float ref[6] = { 1, 0, 0.5, 0.5, 0, 1 };
	struct pc_params p;
	char err[256];

	(void)state;
	k.mode = PC_BEAMS_CONVENTIONAL;
	k.layout = PC_BEAMS_FAN;
	ula_positions(&k, LAMBDA / 2);
	params_of(&k, &p, ref);
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), 0);
	p.beams.carrier_hz = 0;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "carrier_hz"));
	params_of(&k, &p, ref);
	p.beams.fan_az_deg = 80;   /* beam 2 at 0.985 + 0.2 */
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "outside the visible region"));
	params_of(&k, &p, ref);
	p.radar.doppler = 1;
	p.radar.cfar = 1;
	p.radar.integrate = 1;
	p.radar.guard_doppler = 0;
	p.radar.train_doppler = 1;
	p.out_mode = PC_OUT_NONE;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
	if (!strstr(err, "integrate"))
		fail_msg("%s", err);
	params_of(&k, &p, ref);
	k.pos[3] = k.pos[0];   /* two elements at one place */
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "same position"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parity_fan),
		cmocka_unit_test(test_parity_list_cal),
		cmocka_unit_test(test_parity_mvdr),
		cmocka_unit_test(test_parity_sc16),
		cmocka_unit_test(test_monopulse_chain),
		cmocka_unit_test(test_pointing_per_cpi),
		cmocka_unit_test(test_mvdr_chain),
		cmocka_unit_test(test_bad_pointing),
		cmocka_unit_test(test_params_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
