/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_gpu.cu — what the CUDA backend achieves against what the hardware
 * allows, on one GPU, in one run.
 *
 *   (a) pinned copy limits: host->device alone, device->host alone, both at
 *       once (two streams), with the byte counts of each configuration;
 *       plus one line comparing cudaHostAlloc with a cudaHostRegister'ed
 *       MAP_SHARED mapping (what a ring is).
 *   (b) a naive baseline: per CPI one cudaMemcpy2DAsync in (into zeroed,
 *       padded rows), forward FFT, a multiply kernel, inverse FFT, one
 *       cudaMemcpy2DAsync out, alternating over two streams. It moves cf32
 *       in and complex out, whatever the configuration asks for.
 *   (b0) the naive pipeline's compute alone, on the device: per CPI three
 *       launches (forward FFT of the zero-padded rows, the multiply
 *       kernel, inverse FFT), input and output in device memory, two
 *       streams; what (c) is held against for its compute.
 *   Every pc is made with chirpd's busy_poll = true (the caller polls).
 *   (c) chirpd's backend alone through the pc API with the data already on
 *       the device (pc_submit given device pointers: no PCIe), with its
 *       default FFT engine (tune.cuda_fused = auto, named in the TSV's
 *       fft_engine) and again with cuFFT (c_device_cufft); its slot 0 is
 *       checked against the CPU backend too.
 *   (c') chirpd's backend through the pc API from registered MAP_SHARED host
 *       memory (a ring's data region without the daemon around it).
 *       Mode switch: a pc of three radar modes (LFM of L, L/2 and L/4
 *       samples) runs the same CPIs (c') does, all of one mode and with
 *       the mode changing every CPI, alternately 5 times; the median of
 *       the pairs' rate ratios (switching / one mode, 1 = free) is the
 *       TSV's last column,
 *       c_registered_mode_switch: a CUDA graph re-points its multiply
 *       nodes at the new mode's filter before each such CPI.
 *   (c'') copy staging (staging = copy, the fallback when a ring cannot be
 *       registered): the same CPIs from MAP_SHARED host memory that is not
 *       registered, at every depth, with chirpd's default copy threads
 *       (staging_threads = auto: one per online cpu, at most 16). The TSV's
 *       c_copy is its best depth (what streams = auto picks for a copy-
 *       staged pipeline); c_copy / c_registered is its share of (c').
 *   (d) the whole daemon is measured by scripts/gpu-run.sh (chirp-feed
 *       --prefilled -> chirpd -> drain); pass its results with
 *       --daemon-tsv FILE (lines "geometry fmt mode gsps") to get the
 *       ratios (d)/(a) and (d)/(b) in the table.
 *
 * Sizes: 4x128x4096 with a 512-sample LFM, 16x128x9000 with a 1000-sample
 * LFM (the MatX radar example's size). Formats cf32 and sc16, outputs
 * complex and magnitude. Rates are GS/s of complex input samples
 * (C*P*R per CPI). Every figure is the median of REPS repeats after a
 * warm-up, timed with CUDA events (a, b) or the host monotonic clock
 * around a full queue (c, c'). A repeat on device data ((b0), (c)) runs
 * enough CPIs for about 4e9 samples (dev_cpis), the others the geometry's
 * count. Inputs are random, never zeros; one CPI of (c') and of (b) is
 * checked against the CPU backend (relative L2).
 *
 * Usage: bench_gpu [--gpu N] [--depths 2,3,4] [--reps 5] [--quick]
 *                  [--only 4x128x4096|16x128x9000] [--tsv FILE] [--daemon-tsv FILE]
 * Exits 77 (skipped) when there is no usable CUDA device.
 */
#include <cuda_runtime.h>
#include <cufft.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>

#include "bench.h"
#include "chirp/pc.h"
extern "C" {
#include "waveform.h"
}

#define CK(call)                                                               \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "bench_gpu: %s:%d: %s: %s\n", __FILE__, \
				__LINE__, #call, cudaGetErrorString(e_));      \
			exit(1);                                               \
		}                                                              \
	} while (0)
#define CKF(call)                                                              \
	do {                                                                   \
		cufftResult r_ = (call);                                       \
		if (r_ != CUFFT_SUCCESS) {                                     \
			fprintf(stderr, "bench_gpu: %s:%d: %s: cufft error %d\n", \
				__FILE__, __LINE__, #call, (int)r_);           \
			exit(1);                                               \
		}                                                              \
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "bench_gpu: %s\n", what);
	exit(1);
}

/* The fastest and the slowest repeat (seconds) of the last median() call:
 * the TSV's min/max columns, read right after the call that set them. */
static double rep_lo, rep_hi;

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	rep_lo = v[0];
	rep_hi = v[n - 1];
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t rng = 0x1234567887654321ull;

static inline uint64_t xs(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Random, never zero-filled, input of n complex samples in format f. */
static void fill(void *buf, enum pc_format f, size_t n)
{
	if (f == PC_FMT_CF32) {
		float *x = (float *)buf;

		for (size_t i = 0; i < 2 * n; i++)
			x[i] = (float)((int32_t)(xs() >> 32)) * (1.0f / 2147483648.0f);
	} else {
		int16_t *x = (int16_t *)buf;

		for (size_t i = 0; i < 2 * n; i++)
			x[i] = (int16_t)((int32_t)(xs() >> 40) % 30000);
	}
}

static void *map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap failed");
	return p;
}

/* ---- configuration ---------------------------------------------------------- */

struct geom {
	const char *name;
	unsigned C, P, R;
	size_t L;
	int ncpi;              /* CPIs per timed repeat */
};

struct mode {
	enum pc_format f;
	enum pc_output m;
};

static const struct mode modes[] = {
	{ PC_FMT_CF32, PC_OUT_COMPLEX },
	{ PC_FMT_CF32, PC_OUT_MAGNITUDE },
	{ PC_FMT_SC16, PC_OUT_COMPLEX },
	{ PC_FMT_SC16, PC_OUT_MAGNITUDE },
};
#define NMODES 4

static int reps = 5;
static int gpu;
static unsigned depths[8] = { 2, 3, 4 };
static int ndepths = 3;

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

/* modes != NULL: a pc of nmodes radar modes (ref and L unused). */
/* tune.cuda_fused of every pc made here: chirpd's default, except for
 * (c)'s cuFFT line. */
static enum pc_switch bench_fused = PC_SWITCH_AUTO;

static struct pc *make_pc_ms(const struct geom *g, const struct mode *md, enum pc_backend be,
			     unsigned streams, const float *ref, const struct pc_mode *modes,
			     unsigned nmodes, enum pc_staging staging, unsigned staging_threads)
{
	struct pc_params p;
	char err[256];
	struct pc *pc;

	pc_params_init(&p);
	p.channels = g->C;
	p.pulses = g->P;
	p.samples = g->R;
	p.in_format = md->f;
	p.out_mode = md->m;
	p.ref = ref;
	p.ref_len = g->L;
	p.modes = modes;
	p.nmodes = nmodes;
	p.backend = be;
	p.cpu_threads = 8;
	p.gpu = gpu;
	p.streams = streams;
	p.staging = staging;
	p.staging_threads = staging_threads;
	p.tune.cuda_fused = bench_fused;
	p.busy_poll = 1;   /* chirpd's default ([processing] busy_poll) */
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		die(err);
	return pc;
}

static struct pc *make_pc_m(const struct geom *g, const struct mode *md, enum pc_backend be,
			    unsigned streams, const float *ref, const struct pc_mode *modes,
			    unsigned nmodes)
{
	return make_pc_ms(g, md, be, streams, ref, modes, nmodes, PC_STAGING_AUTO, 1);
}

static struct pc *make_pc(const struct geom *g, const struct mode *md, enum pc_backend be,
			  unsigned streams, const float *ref)
{
	return make_pc_m(g, md, be, streams, ref, NULL, 0);
}

/* chirpd's [processing] staging_threads = auto without [numa] cpus: one
 * thread per online cpu, at most 16 (plan_staging_threads). */
static unsigned staging_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1u : n > 16 ? 16u : (unsigned)n;
}

/*
 * CPIs per timed repeat on device data ((b0), (c)): at least n, and enough
 * for about 4e9 samples (50 ms at 80 GS/s; a quarter with --quick), so that
 * a repeat of a 25 us CPI is not a few milliseconds that one host hiccup
 * decides.
 */
static int dev_cpis(size_t S, int n, int quick)
{
	double want = (quick ? 1e9 : 4e9) / (double)S;

	return want > n ? (int)(want + 0.5) : n;
}

/* A CUDA pc with the given staging and staging threads. */
static struct pc *make_pc_st(const struct geom *g, const struct mode *md, unsigned streams,
			     const float *ref, enum pc_staging staging, unsigned threads)
{
	return make_pc_ms(g, md, PC_BACKEND_CUDA, streams, ref, NULL, 0, staging, threads);
}

/* The mode-switch measurement's three modes: LFM of L, L/2 and L/4 samples
 * (ids 0, 1, 2), references in refs[] (the caller frees them). */
#define NSWITCH 3
#define SWITCH_PAIRS 5
static void make_switch_modes(const struct geom *g, float *refs[NSWITCH],
			      struct pc_mode modes[NSWITCH])
{
	for (unsigned i = 0; i < NSWITCH; i++) {
		size_t L = g->L >> i;

		refs[i] = make_ref(L, g->R);
		modes[i].id = i;
		modes[i].ref = refs[i];
		modes[i].ref_len = L;
	}
}

/* ---- (a) copy limits ----------------------------------------------------------- */

#define NBUF 3

/*
 * Median seconds per CPI for n copies of hbytes H2D and/or dbytes D2H
 * (0 = that direction idle), both directions on their own stream.
 */
static double copy_time(void **hin, void **hout, void *din, void *dout, size_t hbytes,
			size_t dbytes, int n)
{
	cudaStream_t sa, sb;
	cudaEvent_t e0, ea, eb;
	double t[32];

	CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&ea));
	CK(cudaEventCreate(&eb));
	for (int r = -1; r < reps; r++) {   /* r = -1: warm-up */
		float ma = 0, mb = 0;

		CK(cudaEventRecord(e0, sa));
		CK(cudaStreamWaitEvent(sb, e0, 0));
		for (int i = 0; i < n; i++) {
			if (hbytes)
				CK(cudaMemcpyAsync(din, hin[i % NBUF], hbytes, cudaMemcpyHostToDevice, sa));
			if (dbytes)
				CK(cudaMemcpyAsync(hout[i % NBUF], dout, dbytes, cudaMemcpyDeviceToHost, sb));
		}
		CK(cudaEventRecord(ea, sa));
		CK(cudaEventRecord(eb, sb));
		CK(cudaEventSynchronize(ea));
		CK(cudaEventSynchronize(eb));
		CK(cudaEventElapsedTime(&ma, e0, ea));
		CK(cudaEventElapsedTime(&mb, e0, eb));
		if (r >= 0)
			t[r] = (ma > mb ? ma : mb) * 1e-3 / n;
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(ea));
	CK(cudaEventDestroy(eb));
	CK(cudaStreamDestroy(sa));
	CK(cudaStreamDestroy(sb));
	return median(t, reps);
}

/* ---- (b) naive baseline ---------------------------------------------------------- */

__global__ void naive_cmul(float2 *x, const float2 *h, size_t nfft, size_t total)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < total) {
		float2 a = x[i], b = h[i % nfft];

		x[i] = make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
	}
}

/*
 * Seconds per CPI of the naive pipeline, cf32 in, complex out, two
 * streams; one result checked against the CPU backend (*err).
 */
static double naive_time(const struct geom *g, const float *ref, int n, double *err)
{
	size_t rows = (size_t)g->C * g->P, R = g->R;
	size_t nfft = pc_good_fft_size(R + g->L - 1), total = rows * nfft;
	size_t bytes = rows * R * 8;
	struct mode md = { PC_FMT_CF32, PC_OUT_COMPLEX };
	struct pc *cpu = make_pc(g, &md, PC_BACKEND_CPU, 1, ref);
	float2 *h_host, *d_h, *d_x[2];
	void *hin[2], *hout[2];
	cudaStream_t st[2];
	cufftHandle plan[2];
	cudaEvent_t e0, e1[2];
	double t[32], g_norm = 0;
	float *want;

	/* The naive filter: conj(FFT(h)) g / nfft computed on the GPU in float. */
	for (size_t k = 0; k < g->L; k++)
		g_norm += (double)ref[2 * k] * ref[2 * k] + (double)ref[2 * k + 1] * ref[2 * k + 1];
	g_norm = 1.0 / sqrt(g_norm);
	h_host = (float2 *)calloc(nfft, sizeof(float2));
	want = (float *)malloc(bytes);
	if (!h_host || !want)
		die("out of memory");
	for (size_t k = 0; k < g->L; k++)
		h_host[k] = make_float2(ref[2 * k], ref[2 * k + 1]);
	CK(cudaMalloc((void **)&d_h, nfft * sizeof(float2)));
	CK(cudaMemcpy(d_h, h_host, nfft * sizeof(float2), cudaMemcpyHostToDevice));
	{
		cufftHandle p1;

		CKF(cufftPlan1d(&p1, (int)nfft, CUFFT_C2C, 1));
		CKF(cufftExecC2C(p1, (cufftComplex *)d_h, (cufftComplex *)d_h, CUFFT_FORWARD));
		CK(cudaMemcpy(h_host, d_h, nfft * sizeof(float2), cudaMemcpyDeviceToHost));
		CKF(cufftDestroy(p1));
		for (size_t f = 0; f < nfft; f++)
			h_host[f] = make_float2((float)(h_host[f].x * g_norm / nfft),
						(float)(-h_host[f].y * g_norm / nfft));
		CK(cudaMemcpy(d_h, h_host, nfft * sizeof(float2), cudaMemcpyHostToDevice));
	}
	for (int s = 0; s < 2; s++) {
		CK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
		CK(cudaMalloc((void **)&d_x[s], total * sizeof(float2)));
		CK(cudaHostAlloc(&hin[s], bytes, cudaHostAllocDefault));
		CK(cudaHostAlloc(&hout[s], bytes, cudaHostAllocDefault));
		fill(hin[s], PC_FMT_CF32, rows * R);
		CKF(cufftPlan1d(&plan[s], (int)nfft, CUFFT_C2C, (int)rows));
		CKF(cufftSetStream(plan[s], st[s]));
		CK(cudaEventCreate(&e1[s]));
	}
	CK(cudaEventCreate(&e0));
	for (int r = -1; r < reps; r++) {
		float ms[2];

		CK(cudaEventRecord(e0, st[0]));
		CK(cudaStreamWaitEvent(st[1], e0, 0));
		for (int i = 0; i < n; i++) {
			int s = i & 1;
			unsigned blocks = (unsigned)((total + 255) / 256);

			CK(cudaMemsetAsync(d_x[s], 0, total * sizeof(float2), st[s]));
			CK(cudaMemcpy2DAsync(d_x[s], nfft * 8, hin[s], R * 8, R * 8, rows,
					     cudaMemcpyHostToDevice, st[s]));
			CKF(cufftExecC2C(plan[s], (cufftComplex *)d_x[s], (cufftComplex *)d_x[s], CUFFT_FORWARD));
			naive_cmul<<<blocks, 256, 0, st[s]>>>(d_x[s], d_h, nfft, total);
			CK(cudaGetLastError());
			CKF(cufftExecC2C(plan[s], (cufftComplex *)d_x[s], (cufftComplex *)d_x[s], CUFFT_INVERSE));
			CK(cudaMemcpy2DAsync(hout[s], R * 8, d_x[s], nfft * 8, R * 8, rows,
					     cudaMemcpyDeviceToHost, st[s]));
		}
		for (int s = 0; s < 2; s++)
			CK(cudaEventRecord(e1[s], st[s]));
		for (int s = 0; s < 2; s++) {
			CK(cudaEventSynchronize(e1[s]));
			CK(cudaEventElapsedTime(&ms[s], e0, e1[s]));
		}
		if (r >= 0)
			t[r] = (ms[0] > ms[1] ? ms[0] : ms[1]) * 1e-3 / n;
	}
	/* hout[(n-1)&1] holds the result of hin[(n-1)&1]. */
	if (pc_execute(cpu, hin[(n - 1) & 1], want, NULL) != 0)
		die("CPU backend failed");
	{
		double num = 0, den = 0;
		const float *got = (const float *)hout[(n - 1) & 1];

		for (size_t i = 0; i < 2 * rows * R; i++) {
			double d = (double)got[i] - want[i];

			num += d * d;
			den += (double)want[i] * want[i];
		}
		*err = sqrt(num / den);
	}
	for (int s = 0; s < 2; s++) {
		CKF(cufftDestroy(plan[s]));
		CK(cudaStreamDestroy(st[s]));
		CK(cudaFree(d_x[s]));
		CK(cudaFreeHost(hin[s]));
		CK(cudaFreeHost(hout[s]));
		CK(cudaEventDestroy(e1[s]));
	}
	CK(cudaEventDestroy(e0));
	CK(cudaFree(d_h));
	free(h_host);
	free(want);
	pc_destroy(cpu);
	return median(t, reps);
}

/*
 * (b0): seconds per CPI of the naive pipeline's three launches on data
 * already on the device: forward FFT out of place from zero-padded rows,
 * the multiply, inverse FFT in place; two streams alternating.
 */
static double naive_device_time(const struct geom *g, const float *ref, int n)
{
	size_t rows = (size_t)g->C * g->P, R = g->R;
	size_t nfft = pc_good_fft_size(R + g->L - 1), total = rows * nfft;
	float2 *h_host, *d_h, *d_in[2], *d_x[2];
	cudaStream_t st[2];
	cufftHandle plan[2], p1;
	cudaEvent_t e0, e1[2];
	double t[32];

	h_host = (float2 *)calloc(nfft, sizeof(float2));
	if (!h_host)
		die("out of memory");
	/* the filter conj(FFT(h)) / nfft, as (b) makes it (gain left out: the
	 * result is not checked here, (b) checks the same kernels) */
	for (size_t k = 0; k < g->L; k++)
		h_host[k] = make_float2(ref[2 * k], ref[2 * k + 1]);
	CK(cudaMalloc((void **)&d_h, nfft * sizeof(float2)));
	CK(cudaMemcpy(d_h, h_host, nfft * sizeof(float2), cudaMemcpyHostToDevice));
	CKF(cufftPlan1d(&p1, (int)nfft, CUFFT_C2C, 1));
	CKF(cufftExecC2C(p1, (cufftComplex *)d_h, (cufftComplex *)d_h, CUFFT_FORWARD));
	CK(cudaMemcpy(h_host, d_h, nfft * sizeof(float2), cudaMemcpyDeviceToHost));
	CKF(cufftDestroy(p1));
	for (size_t f = 0; f < nfft; f++)
		h_host[f] = make_float2(h_host[f].x / nfft, -h_host[f].y / nfft);
	CK(cudaMemcpy(d_h, h_host, nfft * sizeof(float2), cudaMemcpyHostToDevice));
	for (int s = 0; s < 2; s++) {
		CK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
		CK(cudaMalloc((void **)&d_in[s], total * sizeof(float2)));
		CK(cudaMalloc((void **)&d_x[s], total * sizeof(float2)));
		CK(cudaMemset(d_in[s], 0, total * sizeof(float2)));
		for (size_t r = 0; r < rows; r++) {   /* random rows, zero padding */
			fill(h_host, PC_FMT_CF32, R < nfft ? R : nfft);
			CK(cudaMemcpy(d_in[s] + r * nfft, h_host, R * sizeof(float2),
				      cudaMemcpyHostToDevice));
		}
		CKF(cufftPlan1d(&plan[s], (int)nfft, CUFFT_C2C, (int)rows));
		CKF(cufftSetStream(plan[s], st[s]));
		CK(cudaEventCreate(&e1[s]));
	}
	CK(cudaEventCreate(&e0));
	for (int r = -1; r < reps; r++) {   /* r = -1: warm-up */
		float ms[2];

		CK(cudaEventRecord(e0, st[0]));
		CK(cudaStreamWaitEvent(st[1], e0, 0));
		for (int i = 0; i < n; i++) {
			int s = i & 1;
			unsigned blocks = (unsigned)((total + 255) / 256);

			CKF(cufftExecC2C(plan[s], (cufftComplex *)d_in[s], (cufftComplex *)d_x[s],
					 CUFFT_FORWARD));
			naive_cmul<<<blocks, 256, 0, st[s]>>>(d_x[s], d_h, nfft, total);
			CK(cudaGetLastError());
			CKF(cufftExecC2C(plan[s], (cufftComplex *)d_x[s], (cufftComplex *)d_x[s],
					 CUFFT_INVERSE));
		}
		for (int s = 0; s < 2; s++)
			CK(cudaEventRecord(e1[s], st[s]));
		for (int s = 0; s < 2; s++) {
			CK(cudaEventSynchronize(e1[s]));
			CK(cudaEventElapsedTime(&ms[s], e0, e1[s]));
		}
		if (r >= 0)
			t[r] = (ms[0] > ms[1] ? ms[0] : ms[1]) * 1e-3 / n;
	}
	for (int s = 0; s < 2; s++) {
		CKF(cufftDestroy(plan[s]));
		CK(cudaStreamDestroy(st[s]));
		CK(cudaFree(d_in[s]));
		CK(cudaFree(d_x[s]));
		CK(cudaEventDestroy(e1[s]));
	}
	CK(cudaEventDestroy(e0));
	CK(cudaFree(d_h));
	free(h_host);
	return median(t, reps);
}

/* ---- (c), (c') the backend through the pc API --------------------------------------- */

/* CPI k's mode: k mod pump_modes (1: always mode 0; NSWITCH: the mode
 * changes every CPI). */
static unsigned pump_modes = 1;

/*
 * Push n CPIs through pc with the queue kept full, rotating over nslots
 * input/output slots. Returns wall seconds.
 */
static double pump(struct pc *pc, char *in, size_t istride, char *out, size_t ostride,
		   int nslots, int n)
{
	struct pc_done d[16];
	int sub = 0, outs = 0;
	double t0 = now_s();

	while (outs < n) {
		while (sub < n) {
			int rc = pc_submit_mode(pc, in + (size_t)(sub % nslots) * istride,
						out + (size_t)(sub % nslots) * ostride, (uint64_t)sub,
						(unsigned)sub % pump_modes);

			if (rc == -EAGAIN)
				break;
			if (rc < 0) {
				fprintf(stderr, "bench_gpu: pc_submit: %s\n", pc_last_error(pc));
				exit(1);
			}
			sub++;
		}
		int k = pc_poll(pc, d, 16, 5000);

		if (k < 0) {
			fprintf(stderr, "bench_gpu: pc_poll: %s\n", pc_last_error(pc));
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

static double pc_time(struct pc *pc, char *in, size_t istride, char *out, size_t ostride,
		      int nslots, int n)
{
	double t[32];

	pump(pc, in, istride, out, ostride, nslots, 2 * nslots);   /* warm-up */
	for (int r = 0; r < reps; r++)
		t[r] = pump(pc, in, istride, out, ostride, nslots, n) / n;
	return median(t, reps);
}

/*
 * (c') on a pc of NSWITCH modes: the rate with the mode changing every CPI
 * over the rate with every CPI of mode 0 (the same pc, slots and CPIs).
 */
static double mode_switch_ratio(const struct geom *g, const struct mode *md, unsigned streams,
				char *rin, size_t is, char *rout, size_t os, int nslots, int n)
{
	float *refs[NSWITCH];
	struct pc_mode modes[NSWITCH];
	struct pc *pc;
	double one, sw, ratio[SWITCH_PAIRS];

	make_switch_modes(g, refs, modes);
	pc = make_pc_m(g, md, PC_BACKEND_CUDA, streams, NULL, modes, NSWITCH);
	if (pc_register_host(pc, rin, is * nslots) != 0 ||
	    pc_register_host(pc, rout, os * nslots) != 0)
		die("pc_register_host failed");
	/* One-mode and switching runs alternate, SWITCH_PAIRS times: a slow
	 * stretch of the host's copy engines then hits both, and the median of
	 * the pairs' ratios is the cost of switching, not the host's drift. */
	for (int k = 0; k < SWITCH_PAIRS; k++) {
		pump_modes = 1;
		one = pc_time(pc, rin, is, rout, os, nslots, n);
		pump_modes = NSWITCH;
		sw = pc_time(pc, rin, is, rout, os, nslots, n);
		ratio[k] = one / sw;
	}
	pump_modes = 1;
	pc_destroy(pc);
	for (unsigned i = 0; i < NSWITCH; i++)
		free(refs[i]);
	return median(ratio, SWITCH_PAIRS);   /* seconds per CPI: one mode over switching */
}

/* ---- table ------------------------------------------------------------------------------ */

struct result {
	const char *geom;
	struct mode md;
	double a_h2d, a_d2h, a_both;     /* GS/s */
	double b;                        /* naive, GS/s (cf32->complex) */
	double b0;                       /* naive on the device, GS/s   */
	double c3;                       /* (c'') copy staging at its best
					    depth, GS/s                  */
	double c3d[8];                   /* (c'') per depth, GS/s        */
	double c[8], c2[8];              /* per depth, GS/s */
	double cf[8];                    /* (c) with the cuFFT engine (tune.cuda_fused
					    = off), per depth, GS/s */
	char engine[64];                 /* (c)'s pc_info.fft_engine */
	double err_dev;                  /* (c) vs CPU, relative L2 */
	double sw[8];                    /* per depth: (c') rate with the mode
					    changing every CPI / with one mode */
	/* slowest and fastest repeat, GS/s: [0] min, [1] max */
	double a_both_r[2], b_r[2], c_r[8][2], c2_r[8][2];
	double err;                      /* (c') vs CPU, relative L2 */
	double d;                        /* daemon, GS/s (from --daemon-tsv), 0 = none */
};

static double daemon_gsps(const char *file, const char *geom, const struct mode *md)
{
	char g[64], f[16], m[16];
	double v, found = 0;
	FILE *fp;

	if (!file)
		return 0;
	fp = fopen(file, "r");
	if (!fp)
		return 0;
	while (fscanf(fp, "%63s %15s %15s %lf", g, f, m, &v) == 4)
		if (!strcmp(g, geom) && !strcmp(f, pc_format_name(md->f)) &&
		    !strcmp(m, pc_output_name(md->m)))
			found = v;
	fclose(fp);
	return found;
}

int main(int argc, char **argv)
{
	static const struct geom geoms[] = {
		{ "4x128x4096", 4, 128, 4096, 512, 200 },
		{ "16x128x9000", 16, 128, 9000, 1000, 30 },
	};
	struct result res[2 * NMODES];
	const char *tsv = NULL, *dtsv = NULL;
	struct cudaDeviceProp prop;
	int nres = 0, quick = 0;
	const char *only = NULL;
	FILE *out = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gpu") && i + 1 < argc) {
			gpu = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
			if (reps < 1 || reps > 31)
				die("--reps: 1..31");
		} else if (!strcmp(argv[i], "--depths") && i + 1 < argc) {
			char *s = argv[++i], *e;

			ndepths = 0;
			while (*s && ndepths < 8) {
				long v = strtol(s, &e, 10);

				if (e == s || v < 1 || v > 16)
					die("--depths: a list like 2,3,4 (1..16)");
				depths[ndepths++] = (unsigned)v;
				s = *e == ',' ? e + 1 : e;
			}
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--tsv") && i + 1 < argc) {
			tsv = argv[++i];
		} else if (!strcmp(argv[i], "--daemon-tsv") && i + 1 < argc) {
			dtsv = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--gpu N] [--depths 2,3,4] [--reps 5] [--quick] "
				"[--only GEOMETRY] [--tsv FILE] [--daemon-tsv FILE]\n", argv[0]);
			return 2;
		}
	}
	if (!pc_cuda_available()) {
		printf("bench_gpu: no usable CUDA device: skipped\n");
		return 77;
	}
	CK(cudaSetDevice(gpu));
	CK(cudaGetDeviceProperties(&prop, gpu));
	printf("bench_gpu: %s, %d SMs, reps %d (median), depths", prop.name,
	       prop.multiProcessorCount, reps);
	for (int i = 0; i < ndepths; i++)
		printf(" %u", depths[i]);
	printf("\n");

	/* Registered MAP_SHARED vs cudaHostAlloc, 256 MiB each way. */
	{
		size_t sz = 256u << 20;
		void *hp[NBUF], *hr[NBUF], *d1, *d2;
		double tp, tr, tpb, trb;

		CK(cudaMalloc(&d1, sz));
		CK(cudaMalloc(&d2, sz));
		for (int i = 0; i < NBUF; i++) {
			CK(cudaHostAlloc(&hp[i], sz, cudaHostAllocDefault));
			hr[i] = map_shared(sz);
			CK(cudaHostRegister(hr[i], sz, cudaHostRegisterPortable));
			fill(hp[i], PC_FMT_CF32, sz / 8);
			memcpy(hr[i], hp[i], sz);
		}
		CK(cudaMemcpy(d2, hp[0], sz, cudaMemcpyHostToDevice));
		tp = copy_time(hp, hp, d1, d2, sz, 0, 8);
		tr = copy_time(hr, hr, d1, d2, sz, 0, 8);
		tpb = copy_time(hp, hp, d1, d2, sz, sz, 8);
		trb = copy_time(hr, hr, d1, d2, sz, sz, 8);
		printf("(a) 256 MiB copies, GB/s: H2D cudaHostAlloc %.1f, registered MAP_SHARED %.1f; "
		       "both directions (sum) cudaHostAlloc %.1f, registered %.1f\n",
		       sz / tp / 1e9, sz / tr / 1e9, 2 * sz / tpb / 1e9, 2 * sz / trb / 1e9);
		tp = copy_time(hp, hp, d1, d2, 0, sz, 8);
		tr = copy_time(hr, hr, d1, d2, 0, sz, 8);
		printf("(a) 256 MiB copies, GB/s: D2H cudaHostAlloc %.1f, registered MAP_SHARED %.1f\n",
		       sz / tp / 1e9, sz / tr / 1e9);
		for (int i = 0; i < NBUF; i++) {
			CK(cudaFreeHost(hp[i]));
			CK(cudaHostUnregister(hr[i]));
			munmap(hr[i], sz);
		}
		CK(cudaFree(d1));
		CK(cudaFree(d2));
	}
	fflush(stdout);

	for (int gi = 0; gi < 2; gi++) {
		const struct geom *g = &geoms[gi];

		if (only && strcmp(only, g->name) != 0)
			continue;
		size_t S = (size_t)g->C * g->P * g->R;
		float *ref = make_ref(g->L, g->R);
		int n = quick ? g->ncpi / 4 : g->ncpi;
		int nd = dev_cpis(S, n, quick);
		double b_err = 0, b = S / naive_time(g, ref, n, &b_err) / 1e9;
		double b_r[2] = { S / rep_hi / 1e9, S / rep_lo / 1e9 };

		double b0 = S / naive_device_time(g, ref, nd) / 1e9;

		printf("(b) %s naive baseline cf32->complex: %.3f GS/s (vs CPU rel L2 %.1e); "
		       "(b0) its three launches on the device: %.3f GS/s\n", g->name, b, b_err, b0);
		fflush(stdout);
		for (int mi = 0; mi < NMODES; mi++) {
			const struct mode *md = &modes[mi];
			struct result *rs = &res[nres++];
			size_t ib = S * pc_format_sample_bytes(md->f), ob = S * pc_output_sample_bytes(md->m);
			size_t is = (ib + 4095) & ~(size_t)4095, os = (ob + 4095) & ~(size_t)4095;
			const int nslots = 4;
			void *hin[NBUF], *hout[NBUF], *din, *dout;
			char *rin, *rout, *dsin, *dsout;
			struct pc *cpu;
			float *want;

			memset(rs, 0, sizeof(*rs));
			rs->geom = g->name;
			rs->md = *md;
			rs->b = b;
			rs->b0 = b0;
			memcpy(rs->b_r, b_r, sizeof(b_r));
			/* (a) with this configuration's byte counts */
			CK(cudaMalloc(&din, ib));
			CK(cudaMalloc(&dout, ob));
			for (int i = 0; i < NBUF; i++) {
				CK(cudaHostAlloc(&hin[i], ib, cudaHostAllocDefault));
				CK(cudaHostAlloc(&hout[i], ob, cudaHostAllocDefault));
				fill(hin[i], md->f, S);
			}
			CK(cudaMemcpy(dout, hin[0], ob < ib ? ob : ib, cudaMemcpyHostToDevice));
			rs->a_h2d = S / copy_time(hin, hout, din, dout, ib, 0, n) / 1e9;
			rs->a_d2h = S / copy_time(hin, hout, din, dout, 0, ob, n) / 1e9;
			rs->a_both = S / copy_time(hin, hout, din, dout, ib, ob, n) / 1e9;
			rs->a_both_r[0] = S / rep_hi / 1e9;
			rs->a_both_r[1] = S / rep_lo / 1e9;
			for (int i = 0; i < NBUF; i++) {
				CK(cudaFreeHost(hin[i]));
				CK(cudaFreeHost(hout[i]));
			}
			CK(cudaFree(din));
			CK(cudaFree(dout));

			/* ring-like registered host memory and device-resident slots */
			rin = (char *)map_shared(is * nslots);
			rout = (char *)map_shared(os * nslots);
			for (int k = 0; k < nslots; k++)
				fill(rin + k * is, md->f, S);
			memset(rout, 0xff, os * nslots);
			CK(cudaMalloc((void **)&dsin, is * nslots));
			CK(cudaMalloc((void **)&dsout, os * nslots));
			CK(cudaMemcpy(dsin, rin, is * nslots, cudaMemcpyHostToDevice));
			for (int di = 0; di < ndepths; di++) {
				struct pc *pc = make_pc(g, md, PC_BACKEND_CUDA, depths[di], ref);
				struct pc_info info;

				rs->c[di] = S / pc_time(pc, dsin, is, dsout, os, nslots, nd) / 1e9;
				rs->c_r[di][0] = S / rep_hi / 1e9;
				rs->c_r[di][1] = S / rep_lo / 1e9;
				pc_get_info(pc, &info);
				snprintf(rs->engine, sizeof(rs->engine), "%s", info.fft_engine);
				if (pc_register_host(pc, rin, is * nslots) != 0 ||
				    pc_register_host(pc, rout, os * nslots) != 0)
					die("pc_register_host failed");
				rs->c2[di] = S / pc_time(pc, rin, is, rout, os, nslots, n) / 1e9;
				rs->c2_r[di][0] = S / rep_hi / 1e9;
				rs->c2_r[di][1] = S / rep_lo / 1e9;
				pc_get_info(pc, &info);
				if (strcmp(info.staging, "registered") != 0)
					fprintf(stderr, "bench_gpu: staging is \"%s\", not registered\n",
						info.staging);
				pc_destroy(pc);
			}
			/* (c'') copy staging at every depth, from the same
			 * MAP_SHARED memory unregistered: its best depth is
			 * the one chirpd's streams = auto would pick for it */
			for (int di = 0; di < ndepths; di++) {
				struct pc *pc = make_pc_st(g, md, depths[di], ref, PC_STAGING_COPY,
							   staging_threads());
				struct pc_info info;

				rs->c3d[di] = S / pc_time(pc, rin, is, rout, os, nslots, n) / 1e9;
				if (rs->c3d[di] > rs->c3)
					rs->c3 = rs->c3d[di];
				pc_get_info(pc, &info);
				if (strcmp(info.staging, "copy") != 0)
					fprintf(stderr, "bench_gpu: staging is \"%s\", not copy\n",
						info.staging);
				pc_destroy(pc);
			}
			/* check the last CPI written to slot 0 of (c') against the CPU */
			cpu = make_pc(g, md, PC_BACKEND_CPU, 1, ref);
			want = (float *)malloc(ob);
			if (!want || pc_execute(cpu, rin, want, NULL) != 0)
				die("CPU backend failed");
			{
				double num = 0, den = 0;
				const float *got = (const float *)rout;

				for (size_t i = 0; i < ob / 4; i++) {
					double d = (double)got[i] - want[i];

					num += d * d;
					den += (double)want[i] * want[i];
				}
				rs->err = isfinite(num) ? sqrt(num / den) : INFINITY;
			}
			/* and (c)'s slot 0, on the device, holds the same CPI's result */
			{
				float *got = (float *)malloc(ob);
				double num = 0, den = 0;

				if (!got)
					die("out of memory");
				CK(cudaMemcpy(got, dsout, ob, cudaMemcpyDeviceToHost));
				for (size_t i = 0; i < ob / 4; i++) {
					double d = (double)got[i] - want[i];

					num += d * d;
					den += (double)want[i] * want[i];
				}
				rs->err_dev = isfinite(num) ? sqrt(num / den) : INFINITY;
				free(got);
			}
			/* (c) again with the cuFFT engine, same slots, same run
			 * (after the check: it writes the slots too) */
			bench_fused = PC_SWITCH_OFF;
			for (int di = 0; di < ndepths; di++) {
				struct pc *pc = make_pc(g, md, PC_BACKEND_CUDA, depths[di], ref);

				rs->cf[di] = S / pc_time(pc, dsin, is, dsout, os, nslots, nd) / 1e9;
				pc_destroy(pc);
			}
			bench_fused = PC_SWITCH_AUTO;
			free(want);
			pc_destroy(cpu);
			/* After the check: the switching run leaves other modes'
			 * results in the output slots. */
			for (int di = 0; di < ndepths; di++)
				rs->sw[di] = mode_switch_ratio(g, md, depths[di], rin, is, rout, os,
							       nslots, n);
			CK(cudaFree(dsin));
			CK(cudaFree(dsout));
			munmap(rin, is * nslots);
			munmap(rout, os * nslots);
			rs->d = daemon_gsps(dtsv, g->name, md);

			printf("%s %s->%s: (a) H2D %.3f D2H %.3f both %.3f GS/s | (c) device-resident",
			       g->name, pc_format_name(md->f), pc_output_name(md->m), rs->a_h2d,
			       rs->a_d2h, rs->a_both);
			for (int di = 0; di < ndepths; di++)
				printf(" d%u %.3f", depths[di], rs->c[di]);
			printf(" [%s]; cufft", rs->engine);
			for (int di = 0; di < ndepths; di++)
				printf(" d%u %.3f", depths[di], rs->cf[di]);
			printf(" | (c') registered host");
			for (int di = 0; di < ndepths; di++)
				printf(" d%u %.3f", depths[di], rs->c2[di]);
			printf(" GS/s | mode switch / one mode");
			for (int di = 0; di < ndepths; di++)
				printf(" d%u %.3f", depths[di], rs->sw[di]);
			printf(" | (c'') copy staging");
			for (int di = 0; di < ndepths; di++)
				printf(" d%u %.3f", depths[di], rs->c3d[di]);
			printf(" GS/s | rel L2 vs CPU %.1e, (c) %.1e\n", rs->err, rs->err_dev);
			fflush(stdout);
		}
		free(ref);
	}

	/* The table, last (the end of the output is what a remote run shows). */
	if (tsv)
		out = fopen(tsv, "w");
	if (out)
		fprintf(out, "geometry\tformat\toutput\ta_h2d\ta_d2h\ta_both\tb_naive\tdepth\tc_device\t"
			     "c_registered\td_daemon\trel_l2\treps\ta_both_min\ta_both_max\tb_naive_min\t"
			     "b_naive_max\tc_device_min\tc_device_max\tc_registered_min\t"
			     "c_registered_max\tc_registered_mode_switch\tb0_naive_device\tc_copy\tc_device_cufft\tfft_engine\n");
	printf("\nGS/s (complex input samples/s), %s, median of %d; best depth shown; "
	       "ratios use (c') or (d) when given\n", prop.name, reps);
	printf("%-12s %-5s %-9s %7s %7s %7s %7s %6s %7s %7s %7s %7s %7s %8s\n", "geometry", "in",
	       "out", "a:h2d", "a:d2h", "a:both", "b:naive", "depth", "c:dev", "c':reg", "d:daem",
	       "x/a", "x/b", "relL2");
	for (int i = 0; i < nres; i++) {
		struct result *rs = &res[i];
		int best = 0;
		double x;

		for (int di = 0; di < ndepths; di++) {
			if (rs->c2[di] > rs->c2[best])
				best = di;
			if (out)
				fprintf(out, "%s\t%s\t%s\t%.4f\t%.4f\t%.4f\t%.4f\t%u\t%.4f\t%.4f\t%.4f\t%.2e"
					"\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f"
					"\t%.4f\t%.4f\t%.4f\t%s\n",
					rs->geom, pc_format_name(rs->md.f), pc_output_name(rs->md.m),
					rs->a_h2d, rs->a_d2h, rs->a_both, rs->b, depths[di], rs->c[di],
					rs->c2[di], rs->d, rs->err, reps, rs->a_both_r[0],
					rs->a_both_r[1], rs->b_r[0], rs->b_r[1], rs->c_r[di][0],
					rs->c_r[di][1], rs->c2_r[di][0], rs->c2_r[di][1], rs->sw[di],
					rs->b0, rs->c3, rs->cf[di], rs->engine);
		}
		x = rs->d > 0 ? rs->d : rs->c2[best];
		printf("%-12s %-5s %-9s %7.3f %7.3f %7.3f %7.3f %6u %7.3f %7.3f %7.3f %6.0f%% %6.2fx %8.1e\n",
		       rs->geom, pc_format_name(rs->md.f), pc_output_name(rs->md.m), rs->a_h2d,
		       rs->a_d2h, rs->a_both, rs->b, depths[best], rs->c[best], rs->c2[best], rs->d,
		       100.0 * x / rs->a_both, x / rs->b, rs->err);
	}
	if (out)
		fclose(out);
	for (int i = 0; i < nres; i++)
		if (!(res[i].err <= 1e-5) || !(res[i].err_dev <= 1e-5)) {
			printf("bench_gpu: FAILED: %s %s->%s differs from the CPU backend (rel L2 %.2e, "
			       "device-resident %.2e)\n", res[i].geom, pc_format_name(res[i].md.f),
			       pc_output_name(res[i].md.m), res[i].err, res[i].err_dev);
			return 1;
		}
	return 0;
}
