/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_beams.c — the CPU chain with beams on one thread: B beams of a
 * C-element half-wave line formed before pulse compression (chirp/pc.h,
 * BEAMS), compression, a Hamming Doppler FFT over the P pulses, B maps,
 * CA-CFAR per beam, the local maximum over range, Doppler and beam,
 * monopulse on every detection, detections only (no output cube), on
 * random data; or, with --maps, up to the B maps (map_power out, no
 * CFAR): the work numpy_beams.py does. Prints one TSV line per CPI shape
 * for scripts/bench-beams-cpu.sh, beside bench/compare/numpy_beams.py:
 *
 *   tool cpi L B mode median_ms cpu_median_ms best_ms reps
 *
 * (tool chirpd-beams for the chain, chirpd-beams-maps with --maps)
 *
 * B = 0 runs the same chain on the C channels, without beams. --nd sets
 * the Doppler FFT length (0: P). --backend cuda runs the chain on the GPU
 * one CPI at a time (pc_execute_job; input and list in registered host
 * memory, so each CPI is its copy in, its compute and its list back): the
 * figure is then one CPI's latency, and the program is what a kernel
 * profiler is run on to see where that time goes (ncu, its kernels one by
 * one).
 *
 *   bench_beams [--cpi CxPxR:L:B]... [--mode conventional|mvdr] [--maps]
 *               [--seconds S] [--planner estimate|measure|patient]
 *               [--nd N] [--backend cpu|cuda]
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "chirp/pc.h"
#include "waveform.h"

#define CARRIER_HZ 3e9

struct shape {
	unsigned C, P, R, L, B;
};

/* What every shape runs with (the command line). */
struct opts {
	enum pc_beams_mode mode;
	enum pc_fftw_planner planner;
	enum pc_backend backend;
	double seconds;
	unsigned nd;
	int maps;
};

static void usage(void)
{
	fprintf(stderr, "usage: bench_beams [--cpi CxPxR:L:B]... [--mode conventional|mvdr] [--maps]\n"
			"                   [--seconds S] [--planner estimate|measure|patient]\n"
			"                   [--nd N] [--backend cpu|cuda]\n");
	exit(2);
}

/* n bytes of page-aligned memory (registrable with pc_register_host), or NULL. */
static void *map_bytes(size_t n)
{
	void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void unmap_bytes(void *p, size_t n)
{
	if (p)
		munmap(p, n ? n : 1);
}

/* One shape: the median of >= 5 CPIs over seconds. 0, or -1 (said why). */
static int run(const struct shape *s, const struct opts *o)
{
	enum pc_beams_mode mode = o->mode;
	int maps = o->maps;
	struct wf_params wp;
	struct pc_params p;
	struct pc *pc = NULL;
	float *h = NULL, *win = NULL;
	double *pos = NULL, *taper = NULL, *t = NULL, *tc = NULL;
	void *in = NULL, *det = NULL, *out = NULL;
	size_t in_n = 0, det_n = 0, out_n = 0;
	size_t L, reps = 0, maxrep = 100000, n = (size_t)s->C * s->P * s->R;
	struct pc_job job;
	char err[256];
	int rc = -1;

	wf_params_init(&wp);
	wp.type = WF_LFM;
	wp.sample_rate_hz = 100e6;
	wp.bandwidth_hz = 40e6;
	wp.pulse_width_s = s->L / 100e6;
	wp.window = WIN_HAMMING;
	pos = calloc(3 * (size_t)s->C, sizeof(double));
	taper = calloc(s->C, sizeof(double));
	win = calloc(s->P, sizeof(float));
	t = malloc(maxrep * sizeof(*t));
	tc = malloc(maxrep * sizeof(*tc));
	if (!pos || !taper || !win || !t || !tc || wf_build(&wp, s->R, &h, &L, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_beams: setup: %s\n", h ? "out of memory" : err);
		goto out;
	}
	for (unsigned c = 0; c < s->C; c++)
		pos[3 * c] = (c - (s->C - 1) / 2.0) * 299792458.0 / CARRIER_HZ / 2;
	{
		double tw[4096];

		if (s->C > 4096 || wf_window_fill(WIN_TAYLOR, 4, 30, taper, s->C) < 0 ||
		    s->P > 4096 || wf_window_fill(WIN_HAMMING, 0, 0, tw, s->P) < 0) {
			fprintf(stderr, "bench_beams: windows\n");
			goto out;
		}
		for (unsigned i = 0; i < s->P; i++)
			win[i] = (float)tw[i];
	}
	pc_params_init(&p);
	p.channels = s->C;
	p.pulses = s->P;
	p.samples = s->R;
	p.ref = h;
	p.ref_len = L;
	p.out_mode = maps ? PC_OUT_MAP_POWER : PC_OUT_NONE;
	p.backend = o->backend;
	p.cpu_threads = 1;
	p.tune.fftw_planner = o->planner;
	p.radar.nfft = o->nd;
	p.radar.doppler = 1;
	p.radar.window = win;
	p.radar.cfar = !maps;
	p.radar.integrate = 0;
	p.radar.pfa = 1e-5;
	p.beams.mode = s->B ? mode : PC_BEAMS_OFF;
	p.beams.count = s->B;
	p.beams.positions_m = pos;
	p.beams.carrier_hz = CARRIER_HZ;
	p.beams.fan_spacing_u = s->B ? 1.6 / s->B : 0;
	p.beams.taper = taper;
	p.beams.snapshots = 2 * s->C;
	p.beams.monopulse = 1;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc) {
		fprintf(stderr, "bench_beams: pc_create: %s\n", err);
		goto out;
	}
	in_n = pc_in_bytes(pc);
	det_n = pc_det_bytes(pc);
	out_n = pc_out_bytes(pc);
	in = map_bytes(in_n);
	det = map_bytes(det_n);
	out = map_bytes(out_n);
	if (!in || !det || !out) {
		fprintf(stderr, "bench_beams: out of memory\n");
		goto out;
	}
	if (o->backend == PC_BACKEND_CUDA &&
	    (pc_register_host(pc, in, in_n) < 0 || (det_n && pc_register_host(pc, det, det_n) < 0) ||
	     (out_n && pc_register_host(pc, out, out_n) < 0))) {
		fprintf(stderr, "bench_beams: pc_register_host: %s\n", pc_last_error(pc));
		goto out;
	}
	srand(12345);
	for (size_t i = 0; i < 2 * n; i++)
		((float *)in)[i] = (float)rand() / RAND_MAX - 0.5f;
	memset(out, 0, pc_out_bytes(pc));   /* fault pages in before timing */
	memset(&job, 0, sizeof(job));
	job.in = in;
	job.det = maps ? NULL : det;
	job.out = maps ? out : NULL;
	for (int i = 0; i < 2; i++)   /* first-use costs out of the timing */
		if (pc_execute_job(pc, &job, NULL) < 0)
			goto fail;
	double t_end = now_s() + o->seconds;
	while (reps < maxrep && (reps < 5 || now_s() < t_end)) {
		double t0 = now_s(), c0 = cpu_s();

		job.pointing_az_deg = (reps % 3) * 2.0;   /* steered every CPI */
		if (pc_execute_job(pc, &job, NULL) < 0)
			goto fail;
		t[reps] = now_s() - t0;
		tc[reps++] = cpu_s() - c0;
	}
	qsort(t, reps, sizeof(*t), cmp_d);
	qsort(tc, reps, sizeof(*tc), cmp_d);
	printf("%s%s\t%ux%ux%u\t%zu\t%u\t%s\t%.4f\t%.4f\t%.4f\t%zu\n",
	       maps ? "chirpd-beams-maps" : "chirpd-beams",
	       o->backend == PC_BACKEND_CUDA ? "-cuda" : "", s->C, s->P, s->R, L, s->B,
	       !s->B ? "none" : mode == PC_BEAMS_MVDR ? "mvdr" : "conventional", t[reps / 2] * 1e3,
	       tc[reps / 2] * 1e3, t[0] * 1e3, reps);
	fflush(stdout);
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "bench_beams: pc_execute_job: %s\n", pc_last_error(pc));
out:
	pc_destroy(pc);   /* first: it unregisters the memory freed below */
	free(h);
	free(win);
	free(pos);
	free(taper);
	free(t);
	free(tc);
	unmap_bytes(in, in_n);
	unmap_bytes(det, det_n);
	unmap_bytes(out, out_n);
	return rc;
}

int main(int argc, char **argv)
{
	struct shape shapes[16] = { { 16, 128, 4096, 512, 16 } };
	int nshape = 1, user = 0;
	struct opts o = { PC_BEAMS_CONVENTIONAL, PC_FFTW_MEASURE, PC_BACKEND_CPU, 2.0, 0, 0 };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--maps")) {
			o.maps = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--cpi")) {
			struct shape s;

			if (sscanf(v, "%ux%ux%u:%u:%u", &s.C, &s.P, &s.R, &s.L, &s.B) != 5 || nshape >= 16)
				usage();
			if (!user)
				nshape = 0;
			user = 1;
			shapes[nshape++] = s;
		} else if (!strcmp(a, "--mode")) {
			if (!strcmp(v, "mvdr"))
				o.mode = PC_BEAMS_MVDR;
			else if (strcmp(v, "conventional"))
				usage();
		} else if (!strcmp(a, "--seconds")) {
			o.seconds = atof(v);
		} else if (!strcmp(a, "--nd")) {
			o.nd = (unsigned)atoi(v);
		} else if (!strcmp(a, "--backend")) {
			if (!strcmp(v, "cuda"))
				o.backend = PC_BACKEND_CUDA;
			else if (strcmp(v, "cpu"))
				usage();
		} else if (!strcmp(a, "--planner")) {
			o.planner = !strcmp(v, "patient") ? PC_FFTW_PATIENT :
				  !strcmp(v, "estimate") ? PC_FFTW_ESTIMATE : PC_FFTW_MEASURE;
		} else {
			usage();
		}
	}
	for (int k = 0; k < nshape; k++)
		if (run(&shapes[k], &o) < 0)
			return 1;
	return 0;
}
