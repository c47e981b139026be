/* SPDX-License-Identifier: Apache-2.0 */
/*
 * radar_gpu.cu — the radar chain (pulse compression, Doppler, CA-CFAR and
 * the detection list) on the CUDA backend against what the hardware
 * allows, in one run.
 *
 *   (a) the host-to-device copy limit: one CPI's input bytes per copy from
 *       pinned memory, back to back on one stream, CUDA events.
 *   (p) pulse compression alone, data already on the device (pc_submit
 *       given device pointers, out mode complex, to device memory).
 *   (c) the chain, data already on the device: out mode none, the
 *       detection lists written to registered host memory (what the daemon
 *       does: only they cross PCIe back).
 *   (e) the chain end to end from registered MAP_SHARED host memory (a
 *       ring's data region without the daemon): detections only. (e)/(a)
 *       is the share of the copy limit the chain keeps.
 *
 * The chain is the comparison's (scripts/bench-cupy.py --chain runs the
 * same in CuPy): no MTI, a Hamming window over the pulses, Nd = 256
 * Doppler bins, CA-CFAR on each channel's map with guard 2 range x 1
 * Doppler, training 8 range x 2 Doppler, pfa 1e-5, 3 x 3 local maxima,
 * up to 4096 detections per CPI. Sizes and reference as bench_gpu: 4x128x4096
 * with a 512-sample LFM, 16x128x9000 with a 1000-sample one (the MatX radar
 * example's). Inputs cf32, random (never zeros). Each figure is the median
 * of --reps repeats after a warm-up, timed by the host monotonic clock
 * around a full queue of the pc's depth (p, c, e) or with events (a).
 *
 * Usage: radar_gpu [--gpu N] [--streams N] [--reps N] [--only GEOMETRY] [--tsv FILE]
 * Exits 77 (skipped) when there is no usable CUDA device.
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"
#include "chirp/detect.h"
#include "chirp/pc.h"
extern "C" {
#include "waveform.h"
}

#define CK(call)                                                               \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "radar_gpu: %s:%d: %s: %s\n", __FILE__, \
				__LINE__, #call, cudaGetErrorString(e_));      \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define NSLOTS 8          /* input / output / list slots rotated over */
#define ND 256            /* Doppler bins                             */

static int gpu, reps = 5;
static unsigned streams = 3;

static void die(const char *what)
{
	fprintf(stderr, "radar_gpu: %s\n", what);
	exit(1);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void fill(float *x, size_t n)
{
	for (size_t i = 0; i < 2 * n; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		x[i] = (float)((int32_t)(rng >> 32)) * (1.0f / 2147483648.0f);
	}
}

struct geom {
	const char *name;
	unsigned C, P, R;
	size_t L;
	int ncpi;                 /* CPIs per timed repeat */
};

static float *make_ref(size_t L, unsigned R)
{
	struct wf_params w;
	char err[256];
	float *ref = NULL;
	size_t len = 0;

	wf_params_init(&w);
	w.type = WF_LFM;
	w.sample_rate_hz = 25e6;
	w.bandwidth_hz = 10e6;
	w.pulse_width_s = (double)L / w.sample_rate_hz;
	w.window = WIN_HAMMING;
	if (wf_build(&w, R, &ref, &len, err, sizeof(err)) != 0)
		die(err);
	return ref;
}

/* chain 0: pulse compression only (complex out); 1: the chain, out none. */
static struct pc *make_pc(const struct geom *g, const float *ref, const float *win, int chain)
{
	struct pc_params p;
	char err[256];
	struct pc *pc;

	pc_params_init(&p);
	p.channels = g->C;
	p.pulses = g->P;
	p.samples = g->R;
	p.in_format = PC_FMT_CF32;
	p.out_mode = chain ? PC_OUT_NONE : PC_OUT_COMPLEX;
	p.ref = ref;
	p.ref_len = g->L;
	p.backend = PC_BACKEND_CUDA;
	p.gpu = gpu;
	p.streams = streams;
	if (chain) {
		p.radar.doppler = 1;
		p.radar.mti = PC_MTI_NONE;
		p.radar.window = win;
		p.radar.nfft = ND;
		p.radar.cfar = 1;
		p.radar.method = PC_CFAR_CA;
		p.radar.integrate = 0;
		p.radar.guard_range = 2;
		p.radar.guard_doppler = 1;
		p.radar.train_range = 8;
		p.radar.train_doppler = 2;
		p.radar.pfa = 1e-5;
		p.radar.maxima_range = 1;
		p.radar.maxima_doppler = 1;
		p.radar.max_detections = 4096;
		p.radar.sample_rate_hz = 25e6;
	}
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		die(err);
	return pc;
}

/* n CPIs through pc with its queue kept full; wall seconds. */
static double pump(struct pc *pc, char *in, size_t is, char *out, size_t os, char *det,
		   size_t ds, int n)
{
	struct pc_done d[16];
	int sub = 0, outs = 0;
	double t0 = now_s();

	while (outs < n) {
		while (sub < n) {
			struct pc_job j;

			j.in = in + (size_t)(sub % NSLOTS) * is;
			j.out = out ? out + (size_t)(sub % NSLOTS) * os : NULL;
			j.det = det ? det + (size_t)(sub % NSLOTS) * ds : NULL;
			j.tag = (uint64_t)sub;
			j.mode = 0;
			int rc = pc_submit_job(pc, &j);

			if (rc == -EAGAIN)
				break;
			if (rc < 0) {
				fprintf(stderr, "radar_gpu: pc_submit_job: %s\n", pc_last_error(pc));
				exit(1);
			}
			sub++;
		}
		int k = pc_poll(pc, d, 16, 5000);

		if (k < 0) {
			fprintf(stderr, "radar_gpu: pc_poll: %s\n", pc_last_error(pc));
			exit(1);
		}
		if (k == 0)
			die("pc_poll: nothing completed in 5 s");
		for (int i = 0; i < k; i++)
			if (d[i].flags & PC_DONE_OUTPUT)
				outs++;
	}
	return now_s() - t0;
}

/* Median seconds per CPI. */
static double pc_time(struct pc *pc, char *in, size_t is, char *out, size_t os, char *det,
		      size_t ds, int n)
{
	double t[32];

	pump(pc, in, is, out, os, det, ds, 2 * NSLOTS);   /* warm-up */
	for (int r = 0; r < reps; r++)
		t[r] = pump(pc, in, is, out, os, det, ds, n) / n;
	return median(t, reps);
}

/* (a): median seconds per CPI of input bytes host-to-device. */
static double h2d_time(void *host, void *dev, size_t bytes, int n)
{
	cudaStream_t s;
	cudaEvent_t e0, e1;
	double t[32];

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (int r = -1; r < reps; r++) {   /* r = -1: warm-up */
		float ms = 0;

		CK(cudaEventRecord(e0, s));
		for (int i = 0; i < n; i++)
			CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (r >= 0)
			t[r] = ms * 1e-3 / n;
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	CK(cudaStreamDestroy(s));
	return median(t, reps);
}

static void *map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap failed");
	return p;
}

/* The first list written must be one: the check that the chain ran. */
static void check_list(const char *det, const char *what)
{
	const struct chirp_det_header *h = (const struct chirp_det_header *)det;

	if (h->magic != CHIRP_DET_MAGIC || h->version != CHIRP_DET_VERSION ||
	    h->doppler_bins != ND || h->cells == 0) {
		fprintf(stderr, "radar_gpu: %s: no valid detection list written\n", what);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static const struct geom geoms[] = {
		{ "4x128x4096", 4, 128, 4096, 512, 200 },
		{ "16x128x9000", 16, 128, 9000, 1000, 30 },
	};
	const char *tsv = NULL, *only = NULL;
	struct cudaDeviceProp prop;
	FILE *out = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gpu") && i + 1 < argc) {
			gpu = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
			if (reps < 1 || reps > 31)
				die("--reps: 1..31");
		} else if (!strcmp(argv[i], "--streams") && i + 1 < argc) {
			streams = (unsigned)atoi(argv[++i]);
			if (streams < 1 || streams > 8)
				die("--streams: 1..8");
		} else if (!strcmp(argv[i], "--tsv") && i + 1 < argc) {
			tsv = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--gpu N] [--streams N] [--reps N] [--only GEOMETRY] "
				"[--tsv FILE]\n", argv[0]);
			return 2;
		}
	}
	if (!pc_cuda_available()) {
		printf("radar_gpu: no usable CUDA device: skipped\n");
		return 77;
	}
	CK(cudaSetDevice(gpu));
	CK(cudaGetDeviceProperties(&prop, gpu));
	printf("radar_gpu: %s, depth %u, reps %d (median); chain: no MTI, Hamming, Nd %d, "
	       "CA-CFAR per channel, pfa 1e-5, detections only\n", prop.name, streams, reps, ND);
	printf("%-12s %9s %9s %9s %9s %8s %8s\n", "geometry", "(a) H2D", "(p) pc", "(c) chain",
	       "(e) e2e", "(e)/(a)", "dets");
	if (tsv) {
		out = fopen(tsv, "w");
		if (!out)
			die("cannot open --tsv file");
		fprintf(out, "geometry\tdepth\treps\ta_h2d_gsps\tp_pc_gsps\tc_chain_gsps\t"
			"e_chain_gsps\te_over_a\tdetections\tgpu\n");
	}
	for (size_t gi = 0; gi < sizeof(geoms) / sizeof(geoms[0]); gi++) {
		const struct geom *g = &geoms[gi];

		if (only && strcmp(only, g->name) != 0)
			continue;
		size_t n = (size_t)g->C * g->P * g->R, is = n * 8, win_n = g->P;
		double win_d[1024];
		float win[1024], *ref = make_ref(g->L, g->R);
		struct pc *pcc, *pch;
		char *hin, *rin, *din, *dout, *det, *pin;
		size_t ds;

		if (wf_window_fill(WIN_HAMMING, 4, 35.0, win_d, win_n) != 0)
			die("wf_window_fill failed");
		for (size_t i = 0; i < win_n; i++)
			win[i] = (float)win_d[i];
		pcc = make_pc(g, ref, win, 0);
		pch = make_pc(g, ref, win, 1);
		ds = pc_det_bytes(pch);
		if (ds == 0)
			die("the chain's pc has no detection list");
		/* inputs: random on the host, copied to the device and to a
		 * registered MAP_SHARED region (a ring's data) */
		hin = (char *)malloc(is);
		if (!hin)
			die("out of memory");
		fill((float *)hin, n);
		CK(cudaMalloc((void **)&din, is * NSLOTS));
		CK(cudaMalloc((void **)&dout, is * NSLOTS));
		rin = (char *)map_shared(is * NSLOTS);
		det = (char *)map_shared(ds * NSLOTS);
		for (int s = 0; s < NSLOTS; s++) {
			CK(cudaMemcpy(din + s * is, hin, is, cudaMemcpyHostToDevice));
			memcpy(rin + s * is, hin, is);
		}
		if (pc_register_host(pch, rin, is * NSLOTS) != 0 ||
		    pc_register_host(pch, det, ds * NSLOTS) != 0)
			die("pc_register_host failed");
		CK(cudaHostAlloc((void **)&pin, is, cudaHostAllocDefault));
		memcpy(pin, hin, is);

		double ta = h2d_time(pin, din, is, g->ncpi);
		double tp = pc_time(pcc, din, is, dout, is, NULL, 0, g->ncpi);
		double tc = pc_time(pch, din, is, NULL, 0, det, ds, g->ncpi);
		check_list(det, "(c)");
		memset(det, 0, ds);
		double te = pc_time(pch, rin, is, NULL, 0, det, ds, g->ncpi);
		check_list(det, "(e)");
		unsigned dets = ((const struct chirp_det_header *)det)->found;
		double gs = (double)n / 1e9;

		printf("%-12s %9.3f %9.3f %9.3f %9.3f %7.1f%% %8u\n", g->name, gs / ta, gs / tp,
		       gs / tc, gs / te, 100.0 * ta / te, dets);
		if (out)
			fprintf(out, "%s\t%u\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%u\t%s\n", g->name,
				streams, reps, gs / ta, gs / tp, gs / tc, gs / te, ta / te, dets,
				prop.name);
		pc_unregister_host(pch, rin);
		pc_unregister_host(pch, det);
		pc_destroy(pch);
		pc_destroy(pcc);
		CK(cudaFreeHost(pin));
		CK(cudaFree(din));
		CK(cudaFree(dout));
		munmap(rin, is * NSLOTS);
		munmap(det, ds * NSLOTS);
		free(hin);
		free(ref);
	}
	if (out)
		fclose(out);
	printf("GS/s of complex input samples (C x P x R per CPI)\n");
	return 0;
}
