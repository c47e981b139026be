/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live_snap_case.h — the chains test_live_snap (CPU) and
 * test_live_snap_cuda (CUDA against CPU) take map snapshots of
 * (chirp/pc.h, SNAPSHOTS): channels or beams, one target in noise.
 * Included after cmocka.h; each test is its own program, so the fixture
 * is static.
 */
#ifndef CHIRP_TEST_LIVE_SNAP_CASE_H
#define CHIRP_TEST_LIVE_SNAP_CASE_H

#include <complex.h>
#include <math.h>

#define SNAP_CARRIER_HZ 3e9
#define SNAP_LAMBDA (299792458.0 / SNAP_CARRIER_HZ)
#define SNAP_GATE 37                 /* the target's echo starts here      */
#define SNAP_BIN 3.0                 /* its Doppler, in bins of P          */

struct snap_case {
	unsigned C, P, R, L;
	unsigned B;                      /* 0: channels; else B beams (fan)    */
	int integrate;                   /* CFAR on the channels' sum          */
	unsigned streams;                /* CUDA sets / CPU completion depth   */
	double pos[3 * 16];
};

static uint64_t snap_rng = 0x9e3779b97f4a7c15ull;

static double snap_urand(void)
{
	snap_rng ^= snap_rng >> 12;
	snap_rng ^= snap_rng << 25;
	snap_rng ^= snap_rng >> 27;
	return ((snap_rng * 0x2545f4914f6cdd1dull) >> 11) * (1.0 / 9007199254740992.0);
}

static void snap_ref(float *ref, unsigned L)
{
	for (unsigned l = 0; l < L; l++) {
		ref[2 * l] = (float)cos(M_PI * l * l / L);
		ref[2 * l + 1] = (float)sin(M_PI * l * l / L);
	}
}

/* A pc of the case: out_mode, the given backend, room for snapshots of
 * snapshot_cells (0: none). */
static struct pc *snap_pc(struct snap_case *k, const float *ref, enum pc_output out,
			  enum pc_backend backend, size_t snapshot_cells)
{
	struct pc_params p;
	struct pc *pc;
	char err[256];

	pc_params_init(&p);
	p.channels = k->C;
	p.pulses = k->P;
	p.samples = k->R;
	p.ref = ref;
	p.ref_len = k->L;
	p.backend = backend;
	p.cpu_threads = 2;
	p.streams = k->streams ? k->streams : 1;
	p.cpu_depth = p.streams;
	p.out_mode = out;
	p.snapshot_cells = snapshot_cells;
	p.radar.doppler = 1;
	p.radar.cfar = 1;
	p.radar.integrate = k->integrate;
	p.radar.pfa = 1e-5;
	p.radar.guard_range = 1;
	p.radar.train_range = 4;
	p.radar.guard_doppler = 1;
	p.radar.train_doppler = 1;
	if (k->B) {
		for (unsigned c = 0; c < k->C; c++) {
			k->pos[3 * c] = (c - (k->C - 1) / 2.0) * SNAP_LAMBDA / 2;
			k->pos[3 * c + 1] = 0;
			k->pos[3 * c + 2] = 0;
		}
		p.beams.mode = PC_BEAMS_CONVENTIONAL;
		p.beams.count = k->B;
		p.beams.positions_m = k->pos;
		p.beams.carrier_hz = SNAP_CARRIER_HZ;
		p.beams.layout = PC_BEAMS_FAN;
		p.beams.fan_az_deg = 0;
		p.beams.fan_spacing_u = 2.0 / k->C;   /* lambda / aperture */
	}
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create (%s): %s", backend == PC_BACKEND_CUDA ? "cuda" : "cpu", err);
	return pc;
}

/* cf32 noise of power 1 and a target of amplitude amp from boresight at
 * SNAP_GATE and SNAP_BIN, channel c's echo scaled by 1 + c / 2 (so the
 * channels' maps differ). */
static void snap_cpi(const struct snap_case *k, const float *ref, double amp, float *in)
{
	for (unsigned c = 0; c < k->C; c++)
		for (unsigned q = 0; q < k->P; q++)
			for (unsigned r = 0; r < k->R; r++) {
				size_t i = ((size_t)c * k->P + q) * k->R + r;
				double u1 = snap_urand(), u2 = snap_urand();
				double rad = sqrt(-log(u1 > 0 ? u1 : 1e-300));
				double complex x = rad * cexp(2 * M_PI * I * u2);

				if (r >= SNAP_GATE && r - SNAP_GATE < k->L)
					x += amp * (1 + c / 2.0) *
					     cexp(2 * M_PI * I * q * SNAP_BIN / k->P) *
					     (ref[2 * (r - SNAP_GATE)] + I * ref[2 * (r - SNAP_GATE) + 1]);
				in[2 * i] = (float)creal(x);
				in[2 * i + 1] = (float)cimag(x);
			}
}

#endif /* CHIRP_TEST_LIVE_SNAP_CASE_H */
