/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pc_beams_cuda.c — beams through the whole chain on the CUDA backend
 * against the CPU backend (the reference, itself held to a double
 * reference by test_pc_beams.c): the maps (map_power) within 1e-5
 * relative L2, and the detection lists record by record (beam, cell,
 * power and noise within 1e-4, the monopulse angle within 1e-3 degrees,
 * the angle-quality bits equal), for a fan pointed off boresight with
 * either FFT engine, a list over a planar array with a calibration and a
 * taper, MVDR, sc16 input, the pointing changing every CPI with three
 * CPIs in flight, an MVDR training set of zeros (the CPI skipped on both
 * backends), a pointing outside the visible region (refused, -EDOM),
 * each MTI canceller with a power-of-two Doppler length and another, and
 * registered buffers (every CPI one CUDA graph, its pointing set per CPI).
 * The CPIs are cut into chunks as the daemon's are: by pulses, each
 * chunk's beams formed behind its copy (uneven cuts, more chunks than
 * pulses, sc16, several CPIs in flight), and whole where beamforming
 * cannot go by chunk (MVDR, the cuFFT engine).
 *
 * Every test skips (cmocka skip(): reported skipped, never passed) when
 * pc_cuda_available() is 0: no GPU, no driver, or a build without CUDA.
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
#include <sys/mman.h>
#include <cmocka.h>

#include "chirp/detect.h"
#include "chirp/pc.h"

#define CARRIER_HZ 3e9
#define LAMBDA (299792458.0 / CARRIER_HZ)
#define TOL 1e-5

#define NEED_GPU()                                                           \
	do {                                                                 \
		if (!pc_cuda_available()) {                                  \
			print_message("no usable CUDA device: skipped\n");   \
			skip();                                              \
		}                                                            \
	} while (0)

#define TEST_RNG_SEED 0x9e3779b97f4a7c15ull
#include "test_rng.h"

struct bcase {
	unsigned C, P, R, L, B, streams;
	unsigned chunks;             /* tune.cuda_chunks (0: auto)           */
	enum pc_beams_mode mode;
	enum pc_beams_layout layout;
	double pos[3 * 64], cal[2 * 64], taper[64], list_deg[2 * 16];
	int has_cal, has_taper;
	double fan_az, du;
	unsigned snapshots, first_gate, gate_stride, pulse_stride;
	double loading;
	enum pc_format fmt;
	enum pc_switch fused;
	double target_u, target_v;   /* the target's direction at zero pointing */
	double zero;                 /* 1: the input is all zeros            */
	enum pc_mti mti;             /* the MTI canceller                    */
	unsigned nfft;               /* Nd (0: auto)                         */
	int registered;              /* the CUDA backend's buffers registered
					(pc_register_host): by chunk, every
					CPI is then one CUDA graph          */
};

static void ula(struct bcase *k)
{
	for (unsigned c = 0; c < k->C; c++) {
		k->pos[3 * c] = (c - (k->C - 1) / 2.0) * LAMBDA / 2;
		k->pos[3 * c + 1] = 0;
		k->pos[3 * c + 2] = 0;
	}
}

static struct pc *make_pc(const struct bcase *k, const float *ref, enum pc_backend backend)
{
	struct pc_params p;
	struct pc *pc;
	char err[256];

	pc_params_init(&p);
	p.channels = k->C;
	p.pulses = k->P;
	p.samples = k->R;
	p.in_format = k->fmt;
	p.ref = ref;
	p.ref_len = k->L;
	p.backend = backend;
	p.cpu_threads = 2;
	p.streams = k->streams ? k->streams : 1;
	p.cpu_depth = p.streams;
	p.tune.cuda_fused = k->fused;
	p.tune.cuda_chunks = k->chunks;
	p.out_mode = PC_OUT_MAP_POWER;
	p.radar.doppler = 1;
	p.radar.mti = k->mti;
	p.radar.nfft = k->nfft;
	p.radar.cfar = 1;
	p.radar.integrate = 0;   /* a CFAR per beam */
	p.radar.pfa = 1e-5;
	p.radar.guard_range = 1;
	p.radar.train_range = 4;
	p.radar.guard_doppler = 1;
	p.radar.train_doppler = 1;
	p.beams.mode = k->mode;
	p.beams.count = k->B;
	p.beams.positions_m = k->pos;
	p.beams.cal = k->has_cal ? k->cal : NULL;
	p.beams.carrier_hz = CARRIER_HZ;
	p.beams.layout = k->layout;
	p.beams.fan_az_deg = k->fan_az;
	p.beams.fan_spacing_u = k->du;
	p.beams.list_deg = k->list_deg;
	p.beams.taper = k->has_taper ? k->taper : NULL;
	p.beams.snapshots = k->snapshots;
	p.beams.first_gate = k->first_gate;
	p.beams.gate_stride = k->gate_stride ? k->gate_stride : 1;
	p.beams.pulse_stride = k->pulse_stride ? k->pulse_stride : 1;
	p.beams.loading = k->loading;
	p.beams.monopulse = k->B >= 2;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create (%s): %s", backend == PC_BACKEND_CUDA ? "cuda" : "cpu", err);
	return pc;
}

/* Noise of power 1 per element sample and a target of amplitude 3 from
 * (ut + up, vt + vp), its echo (the reference) at gate 11, Doppler bin 2. */
static void make_cpi(const struct bcase *k, const float *ref, double az, double el, unsigned Nd,
		     void *in)
{
	double up = sin(az * M_PI / 180) * cos(el * M_PI / 180), vp = sin(el * M_PI / 180);
	double u = k->target_u + up, v = k->target_v + vp, w = sqrt(1 - u * u - v * v);

	for (unsigned c = 0; c < k->C; c++) {
		const double *p = k->pos + 3 * c;
		double complex g = k->has_cal ? k->cal[2 * c] + I * k->cal[2 * c + 1] : 1.0;
		double complex a = g * cexp(I * 2 * M_PI / LAMBDA * (p[0] * u + p[1] * v + p[2] * w));

		for (unsigned q = 0; q < k->P; q++)
			for (unsigned r = 0; r < k->R; r++) {
				size_t i = ((size_t)c * k->P + q) * k->R + r;
				double complex x = k->zero ? 0 : cgauss(1.0);

				if (!k->zero && r >= 11 && r - 11 < k->L)
					x += 3.0 * a * cexp(2 * M_PI * I * q * 2.0 / Nd) *
					     (ref[2 * (r - 11)] + I * ref[2 * (r - 11) + 1]);
				if (k->fmt == PC_FMT_SC16) {
					int16_t *s = in;

					s[2 * i] = (int16_t)lrint(creal(x) * 2048.0);
					s[2 * i + 1] = (int16_t)lrint(cimag(x) * 2048.0);
				} else {
					float *f = in;

					f[2 * i] = (float)creal(x);
					f[2 * i + 1] = (float)cimag(x);
				}
			}
	}
}

static void make_ref(float *ref, unsigned L)
{
	for (unsigned l = 0; l < L; l++) {
		ref[2 * l] = (float)cos(M_PI * l * l / L);
		ref[2 * l + 1] = (float)sin(M_PI * l * l / L);
	}
}

static int close_to(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) || (isnan(a) && isnan(b));
}

/* One CPI's map and list, GPU against CPU. */
static void compare(const char *name, const float *mg, const float *mc, size_t nmap,
		    const void *dg, const void *dc)
{
	const struct chirp_det_header *hg = dg, *hc = dc;
	const struct chirp_det_record *rg = (const void *)(hg + 1), *rc = (const void *)(hc + 1);
	double num = 0, den = 0;

	for (size_t i = 0; i < nmap; i++) {
		double d = (double)mg[i] - mc[i];

		num += d * d;
		den += (double)mc[i] * mc[i];
	}
	print_message("%s: maps %.2e relative L2 (GPU vs CPU), %u / %u detections\n", name,
		      sqrt(num / den), hg->count, hc->count);
	assert_true(sqrt(num / den) <= TOL);
	assert_int_equal(hg->version, hc->version);
	assert_int_equal(hg->flags, hc->flags);
	assert_int_equal(hg->maps, hc->maps);
	assert_int_equal(hg->count, hc->count);
	assert_int_equal(hg->found, hc->found);
	for (unsigned i = 0; i < hc->count; i++) {
		assert_int_equal(rg[i].channel, rc[i].channel);
		assert_int_equal(rg[i].beam, rc[i].beam);
		assert_int_equal(rg[i].range_gate, rc[i].range_gate);
		assert_int_equal(rg[i].doppler_bin, rc[i].doppler_bin);
		assert_true(close_to(rg[i].power, rc[i].power, 1e-4));
		assert_true(close_to(rg[i].noise, rc[i].noise, 1e-4));
		assert_true(fabs(rg[i].azimuth_deg - rc[i].azimuth_deg) <= 1e-3 ||
			    (isnan(rg[i].azimuth_deg) && isnan(rc[i].azimuth_deg)));
		assert_true(fabs(rg[i].elevation_deg - rc[i].elevation_deg) <= 1e-3 ||
			    (isnan(rg[i].elevation_deg) && isnan(rc[i].elevation_deg)));
		assert_int_equal(rg[i].angle_quality, rc[i].angle_quality);
	}
}

#define MAX_CPIS 8

/* Poll gpu once (up to 5 s) and count its outputs, in order, into *done. */
static void poll_outputs(struct pc *gpu, unsigned *done, int skipped)
{
	struct pc_done d[8];
	int m = pc_poll(gpu, d, 8, 5000);

	assert_true(m > 0);
	for (int j = 0; j < m; j++) {
		if (!(d[j].flags & PC_DONE_OUTPUT))
			continue;
		assert_int_equal(d[j].tag, *done);
		assert_int_equal(!!(d[j].flags & PC_DONE_SKIPPED), skipped);
		(*done)++;
	}
}

static size_t page_up(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

/*
 * n CPIs (n <= MAX_CPIS) with pointings az[i] (el 0): the CPU backend one
 * by one, the CUDA backend as many in flight as its depth allows, each
 * compared; skipped: the CPIs are expected skipped on both. Registered
 * (k->registered): the CUDA backend's input, map and list in one
 * registered region, and every CPI launched as a graph (more CPIs than
 * sets: a set's graph takes each later CPI's pointing).
 */
static void run_case(struct bcase *k, const char *name, unsigned n, const double *az, int skipped)
{
	float ref[2 * 64];
	struct pc *cpu, *gpu;
	struct pc_info info;
	size_t in_bytes = (size_t)k->C * k->P * k->R * (k->fmt == PC_FMT_SC16 ? 4 : 8);
	size_t out_bytes, det_bytes, slot = 0;
	void *in[MAX_CPIS], *dg[MAX_CPIS], *dc[MAX_CPIS];
	float *mg[MAX_CPIS], *mc[MAX_CPIS];
	char *region = NULL;
	unsigned done_out = 0;

	assert_true(n <= MAX_CPIS);
	make_ref(ref, k->L);
	gpu = make_pc(k, ref, PC_BACKEND_CUDA);
	cpu = make_pc(k, ref, PC_BACKEND_CPU);
	pc_get_info(gpu, &info);
	out_bytes = pc_out_bytes(gpu);
	det_bytes = pc_det_bytes(gpu);
	assert_int_equal(out_bytes, pc_out_bytes(cpu));
	if (k->registered) {   /* as the daemon's rings are */
		slot = page_up(in_bytes) + page_up(out_bytes) + page_up(det_bytes);
		region = mmap(NULL, slot * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			      -1, 0);
		assert_true(region != MAP_FAILED);
		assert_int_equal(pc_register_host(gpu, region, slot * n), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		struct pc_job job;
		int rc;

		if (region) {
			in[i] = region + i * slot;
			mg[i] = (float *)(region + i * slot + page_up(in_bytes));
			dg[i] = region + i * slot + page_up(in_bytes) + page_up(out_bytes);
		} else {
			in[i] = xcalloc(1, in_bytes);
			mg[i] = xcalloc(1, out_bytes);
			dg[i] = xcalloc(1, det_bytes);
		}
		mc[i] = xcalloc(1, out_bytes);
		dc[i] = xcalloc(1, det_bytes);
		make_cpi(k, ref, az[i], 0.0, info.doppler_nfft, in[i]);
		memset(&job, 0, sizeof(job));
		job.in = in[i];
		job.out = mc[i];
		job.det = dc[i];
		job.tag = i;
		job.pointing_az_deg = az[i];
		assert_int_equal(pc_execute_job(cpu, &job, NULL), 0);
		job.out = mg[i];
		job.det = dg[i];
		while (i - done_out >= info.depth)
			poll_outputs(gpu, &done_out, skipped);
		rc = pc_submit_job(gpu, &job);
		if (rc != 0)
			fail_msg("%s: pc_submit_job: %d", name, rc);
	}
	while (done_out < n)
		poll_outputs(gpu, &done_out, skipped);
	if (k->registered) {
		pc_get_info(gpu, &info);
		print_message("%s: %llu of %u CPIs as CUDA graphs\n", name, info.graph_cpis, n);
		assert_true(info.graph_cpis == n);
	}
	for (unsigned i = 0; i < n; i++) {
		char what[96];

		snprintf(what, sizeof(what), "%s, CPI %u (az %g)", name, i, az[i]);
		if (skipped) {
			const struct chirp_det_header *h = dg[i];

			assert_true(h->flags & CHIRP_DET_SKIPPED);
			assert_true(((const struct chirp_det_header *)dc[i])->flags & CHIRP_DET_SKIPPED);
			assert_true(isnan(mg[i][0]));
		} else {
			compare(what, mg[i], mc[i], out_bytes / sizeof(float), dg[i], dc[i]);
		}
		if (!region) {
			free(in[i]);
			free(mg[i]);
			free(dg[i]);
		}
		free(mc[i]);
		free(dc[i]);
	}
	pc_destroy(gpu);
	pc_destroy(cpu);
	if (region)
		munmap(region, slot * n);
}

static void fan(struct bcase *k, unsigned C, unsigned B, double du)
{
	memset(k, 0, sizeof(*k));
	k->C = C;
	k->B = B;
	k->P = 9;
	k->R = 300;
	k->L = 13;
	k->mode = PC_BEAMS_CONVENTIONAL;
	k->layout = PC_BEAMS_FAN;
	k->du = du;
	k->fused = PC_SWITCH_AUTO;
	ula(k);
}

static void test_fan(void **state)
{
	struct bcase k;
	double az = -3.0;

	(void)state;
	NEED_GPU();
	fan(&k, 8, 4, 0.25);
	k.fan_az = 5;
	k.target_u = sin(5 * M_PI / 180);
	run_case(&k, "fan, fused", 1, &az, 0);
	k.chunks = 4;   /* 3, 2, 2, 2 pulses over three streams */
	run_case(&k, "fan, fused, 4 chunks", 1, &az, 0);
}

static void test_fan_cufft(void **state)
{
	struct bcase k;
	double az = 2.0;

	(void)state;
	NEED_GPU();
	fan(&k, 7, 5, 0.2);
	k.fused = PC_SWITCH_OFF;
	k.R = 257;
	k.target_u = 0.1;
	k.chunks = 3;   /* the beam stage whole, compression in 3 chunks */
	run_case(&k, "fan, cuFFT", 1, &az, 0);
}

/* A 3 x 3 planar array off its plane, a list of 4 beams, a calibration
 * and a taper. */
static void test_list_cal(void **state)
{
	static const double list[] = { -8, 0, 0, 0, 8, 0, 3, 10 };
	struct bcase k;
	double az = 1.5;

	(void)state;
	NEED_GPU();
	fan(&k, 9, 4, 0.0);
	k.layout = PC_BEAMS_LIST;
	memcpy(k.list_deg, list, sizeof(list));
	for (unsigned c = 0; c < 9; c++) {
		k.pos[3 * c] = (c % 3 - 1.0) * 0.55 * LAMBDA;
		k.pos[3 * c + 1] = (c / 3 - 1.0) * 0.5 * LAMBDA;
		k.pos[3 * c + 2] = 0.002 * (c % 2);
		k.cal[2 * c] = (0.8 + 0.05 * c) * cos(0.3 * c);
		k.cal[2 * c + 1] = (0.8 + 0.05 * c) * sin(0.3 * c);
		k.taper[c] = 0.6 + 0.4 * sin(M_PI * (c + 0.5) / 9);
	}
	k.has_cal = 1;
	k.has_taper = 1;
	k.target_u = sin(-4 * M_PI / 180);
	k.chunks = 16;   /* more chunks than pulses: some carry none */
	run_case(&k, "list, planar, calibration, taper", 1, &az, 0);
}

static void test_mvdr(void **state)
{
	struct bcase k;
	double az = 4.0;

	(void)state;
	NEED_GPU();
	fan(&k, 8, 5, 0.2);
	k.mode = PC_BEAMS_MVDR;
	k.snapshots = 40;
	k.first_gate = 30;
	k.gate_stride = 2;
	k.pulse_stride = 3;
	k.loading = 0.05;
	k.target_u = 0.05;
	k.chunks = 2;   /* the beam stage whole (the weights need the CPI) */
	run_case(&k, "mvdr", 1, &az, 0);
}

static void test_sc16(void **state)
{
	struct bcase k;
	double az = 0.0;

	(void)state;
	NEED_GPU();
	fan(&k, 5, 3, 0.3);
	k.fmt = PC_FMT_SC16;
	k.target_u = 0.15;
	run_case(&k, "fan, sc16", 1, &az, 0);
	k.chunks = 5;
	run_case(&k, "fan, sc16, 5 chunks", 1, &az, 0);
}

/* Three CPIs in flight, each with its own pointing. */
static void test_pointing_per_cpi(void **state)
{
	struct bcase k;
	double az[3] = { -6.0, 0.0, 7.5 };

	(void)state;
	NEED_GPU();
	fan(&k, 12, 6, 0.15);
	k.streams = 3;
	k.target_u = 0.075;
	k.chunks = 2;
	run_case(&k, "pointing per CPI, depth 3", 3, az, 0);
}

/* Registered buffers, by chunk: every CPI one CUDA graph, whose
 * weights and monopulse nodes take each CPI's pointing (two sets, the
 * pointing changing every CPI and repeating; three chunks of pulses;
 * sc16 in five chunks; more chunks than pulses), equal to the CPU's. */
static void test_graph(void **state)
{
	struct bcase k;
	double az[6] = { -6.0, 0.0, 7.5, 7.5, -6.0, 0.0 };

	(void)state;
	NEED_GPU();
	fan(&k, 12, 6, 0.15);
	k.streams = 2;
	k.target_u = 0.075;
	k.chunks = 3;
	k.registered = 1;
	run_case(&k, "graph, pointing per CPI", 6, az, 0);
	fan(&k, 5, 3, 0.3);
	k.fmt = PC_FMT_SC16;
	k.target_u = 0.15;
	k.chunks = 5;
	k.registered = 1;
	run_case(&k, "graph, sc16, 5 chunks", 3, az, 0);
	fan(&k, 8, 4, 0.25);
	k.target_u = 0.1;
	k.chunks = 16;   /* 9 pulses: seven chunks without any */
	k.registered = 1;
	run_case(&k, "graph, more chunks than pulses", 3, az + 2, 0);
}

/* The monopulse's input, each record's D in three beams: summed at the
 * cell from the compressed rows behind each MTI canceller (a power-of-two
 * Doppler length, whose transform keeps no D), and gathered from the
 * transform where it is kept (a length of 18, cuFFT's). */
static void test_mti_doppler(void **state)
{
	static const struct {
		enum pc_mti mti;
		unsigned nfft;
		const char *name;
	} v[] = {
		{ PC_MTI_TWO, 0, "fan, two-pulse MTI" },
		{ PC_MTI_THREE, 0, "fan, three-pulse MTI, 3 chunks" },
		{ PC_MTI_NONE, 18, "fan, Doppler 18" },
		{ PC_MTI_TWO, 18, "fan, two-pulse MTI, Doppler 18" },
	};
	struct bcase k;
	double az = 1.0;

	(void)state;
	NEED_GPU();
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		fan(&k, 8, 4, 0.25);
		k.P = 14;
		k.target_u = 0.1;
		k.mti = v[i].mti;
		k.nfft = v[i].nfft;
		k.chunks = i == 1 ? 3 : 0;
		run_case(&k, v[i].name, 1, &az, 0);
	}
}

/* MVDR without loading on a CPI of zeros: no weights, the CPI skipped. */
static void test_mvdr_zeros(void **state)
{
	struct bcase k;
	double az = 0.0;

	(void)state;
	NEED_GPU();
	fan(&k, 6, 3, 0.3);
	k.mode = PC_BEAMS_MVDR;
	k.snapshots = 12;
	k.loading = 0.0;
	k.zero = 1;
	run_case(&k, "mvdr, zeros", 1, &az, 1);
}

/* A pointing that puts a beam outside the visible region: refused before
 * the backend (-EDOM, nothing queued, the pc not failed); the next CPI,
 * pointed within it, runs and matches the CPU backend. */
static void test_bad_pointing(void **state)
{
	struct bcase k;
	float ref[2 * 64];
	struct pc *gpu;
	struct pc_job job;
	double az = 3.0;
	void *in;

	(void)state;
	NEED_GPU();
	fan(&k, 8, 4, 0.25);
	make_ref(ref, k.L);
	gpu = make_pc(&k, ref, PC_BACKEND_CUDA);
	in = xcalloc(1, (size_t)k.C * k.P * k.R * 8);
	memset(&job, 0, sizeof(job));
	job.in = in;
	job.out = xcalloc(1, pc_out_bytes(gpu));
	job.det = xcalloc(1, pc_det_bytes(gpu));
	job.pointing_az_deg = 80.0;   /* beam 3 at u 0.98 + 0.375 */
	assert_int_equal(pc_submit_job(gpu, &job), -EDOM);
	assert_int_equal(pc_in_flight(gpu), 0);
	free(job.out);
	free(job.det);
	free(in);
	pc_destroy(gpu);
	k.target_u = 0.0;
	run_case(&k, "after a refused pointing", 1, &az, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fan),
		cmocka_unit_test(test_fan_cufft),
		cmocka_unit_test(test_list_cal),
		cmocka_unit_test(test_mvdr),
		cmocka_unit_test(test_sc16),
		cmocka_unit_test(test_pointing_per_cpi),
		cmocka_unit_test(test_mti_doppler),
		cmocka_unit_test(test_graph),
		cmocka_unit_test(test_mvdr_zeros),
		cmocka_unit_test(test_bad_pointing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
