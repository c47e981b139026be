/* SPDX-License-Identifier: Apache-2.0 */
/*
 * beam_gpu.cu — beamforming on device data (src/cuda/cu_beam.cu): the
 * product Y = W X (B x C times C x N) by the fused kernel (the default
 * pick and other beam-group / column pairs), by cublasCgemm, and a
 * device-to-device copy of the same bytes (the ceiling), plus the per-CPI
 * steps beside it: the weights formed from a pointing, MVDR (gather,
 * covariance, solve) with K = 2 C training cells, and the monopulse angles
 * of a list of 256 detections (cu_beam_mono: variant mono256).
 *
 * Per shape (--shapes C:B,... default 16:16,64:8,64:32; N = --pulses x
 * --gates, default 128 x 4096): random inputs (never zeros), each variant
 * run --warmup times, then --reps times between two CUDA events each,
 * every call checked. Each product variant's output (poisoned with NaN
 * before a checked call) is compared with the CPU's beam_form over the
 * first --check columns (relative L2 <= 1e-5), so a wrong kernel cannot
 * pass for a fast one. Bytes of a product: (C + B) N x 8 (each input read
 * once, each output written once); of the copy: the same bytes, read and
 * written. Not run by CI (scripts/perf-run.sh gpu ... beam runs it).
 *
 *   beam_gpu [--shapes C:B,...] [--pulses P] [--gates R] [--reps N]
 *            [--warmup N] [--check COLS] [--gpu I] [--tsv FILE]
 *
 * One line per variant and shape, key=value, microseconds over the reps:
 *   beam_gpu variant=… C=… B=… N=… reps=… min_us=… median_us=… max_us=… gbps=…
 * (gbps: bytes / median, 1e9 bytes per second; 0 for the weights, mvdr
 * and mono256 steps, which move next to nothing), and with --tsv the same as a
 * table: variant C B N reps min_us median_us max_us gbps.
 * Exit 0; 1 on a CUDA or cuBLAS error or a wrong result; 2 usage; 77 no
 * usable CUDA device.
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chirp/detect.h"
#include "cuda/cu_beam.h"

#define CK(call)                                                               \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "beam_gpu: %s:%d: %s: %s\n", __FILE__,  \
				__LINE__, #call, cudaGetErrorString(e_));      \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define TOL 1e-5
#define MAX_REPS 1000
#define CARRIER_HZ 3e9
#define MONO_RECORDS 256         /* records of the monopulse step's list */

struct opts {
	unsigned P, R, reps, warmup, check;
	int gpu;
	const char *shapes, *tsv;
};

/* One shape's device buffers and its CPU reference. */
struct shape {
	unsigned C, B;
	size_t N;
	struct cu_beam *bm, *mv;
	struct beam_set *s;
	struct array *a;
	float2 *d_x, *d_y, *d_w, *d_wm, *d_copy;   /* d_wm: MVDR's weights */
	double2 *d_wd;           /* the weights in double (monopulse)      */
	void *d_list;            /* a list of MONO_RECORDS records          */
	float2 *d_mono;          /* their Doppler outputs, 3 each           */
	int *d_status;
	float *h_x, *h_w, *h_ref, *h_y;   /* the reference: check columns only */
	cudaStream_t st;
	cudaEvent_t e0, e1;
	FILE *tsv;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void)   /* [-1, 1) */
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (float)(((rng * 0x2545f4914f6cdd1dull) >> 40) * (2.0 / 16777216.0) - 1.0);
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* What one timed variant does: 0 or exits. */
typedef void (*call_fn)(struct shape *sh, const void *arg);

/* warmup + reps calls, each between two events; prints and records. */
static void timed(struct shape *sh, const struct opts *o, const char *name, call_fn fn,
		  const void *arg, double bytes)
{
	static float t[MAX_REPS];
	float med;

	for (unsigned i = 0; i < o->warmup; i++)
		fn(sh, arg);
	for (unsigned i = 0; i < o->reps; i++) {
		CK(cudaEventRecord(sh->e0, sh->st));
		fn(sh, arg);
		CK(cudaEventRecord(sh->e1, sh->st));
		CK(cudaEventSynchronize(sh->e1));
		CK(cudaEventElapsedTime(&t[i], sh->e0, sh->e1));
	}
	qsort(t, o->reps, sizeof(t[0]), cmp_f);
	med = o->reps % 2 ? t[o->reps / 2] : 0.5f * (t[o->reps / 2 - 1] + t[o->reps / 2]);
	printf("beam_gpu variant=%s C=%u B=%u N=%zu reps=%u min_us=%.1f median_us=%.1f "
	       "max_us=%.1f gbps=%.1f\n", name, sh->C, sh->B, sh->N, o->reps, 1e3 * t[0],
	       1e3 * med, 1e3 * t[o->reps - 1], bytes > 0 ? bytes / (1e6 * med) : 0.0);
	if (sh->tsv)
		fprintf(sh->tsv, "%s\t%u\t%u\t%zu\t%u\t%.1f\t%.1f\t%.1f\t%.1f\n", name, sh->C, sh->B,
			sh->N, o->reps, 1e3 * t[0], 1e3 * med, 1e3 * t[o->reps - 1],
			bytes > 0 ? bytes / (1e6 * med) : 0.0);
	fflush(stdout);
}

static struct cu_beam_io io_of(const struct shape *sh, const struct opts *o)
{
	struct cu_beam_io io;

	io.x = sh->d_x;
	io.x_ch = sh->N;
	io.x_pulse = o->R;
	io.y = sh->d_y;
	io.y_ch = sh->N;
	io.y_pulse = o->R;
	io.P = o->P;
	io.R = o->R;
	return io;
}

struct variant {
	unsigned bg, nc;     /* fused; 0 0: cuBLAS */
	const struct opts *o;
};

static void call_product(struct shape *sh, const void *arg)
{
	const struct variant *v = (const struct variant *)arg;
	struct cu_beam_io io = io_of(sh, v->o);
	const char *what;

	if (v->bg) {
		CK(cu_beam_form_variant(sh->d_w, sh->B, sh->C, &io, v->bg, v->nc, sh->st));
	} else if (cu_beam_gemm(sh->bm, sh->d_w, &io, sh->st, &what) < 0) {
		fprintf(stderr, "beam_gpu: cublasCgemm: %s\n", what ? what : "bad layout");
		exit(1);
	}
}

static void call_copy(struct shape *sh, const void *arg)
{
	size_t bytes = *(const size_t *)arg;

	CK(cudaMemcpyAsync(sh->d_copy, sh->d_x, bytes, cudaMemcpyDeviceToDevice, sh->st));
}

static void call_weights(struct shape *sh, const void *arg)
{
	(void)arg;
	CK(cu_beam_weights(sh->bm, 0.01, 0.0, sh->d_w, NULL, sh->st));
}

static void call_mono(struct shape *sh, const void *arg)
{
	const struct chirp_det_header *h = (const struct chirp_det_header *)sh->d_list;

	(void)arg;
	CK(cu_beam_mono(sh->bm, (const double *)sh->d_wd, 0.01, 0.0, 1, h,
			(struct chirp_det_record *)(h + 1), MONO_RECORDS, sh->d_mono, sh->st));
}

/* A list of MONO_RECORDS records over every beam, a target between two
 * beams in each (random phases), for the monopulse step. */
static void make_list(struct shape *sh)
{
	size_t bytes = CHIRP_DET_BYTES(MONO_RECORDS);
	struct chirp_det_header *h = (struct chirp_det_header *)calloc(1, bytes);
	struct chirp_det_record *r = (struct chirp_det_record *)(h + 1);
	float2 *y = (float2 *)calloc(3 * MONO_RECORDS, sizeof(float2));

	if (!h || !y) {
		fprintf(stderr, "beam_gpu: out of memory\n");
		exit(1);
	}
	h->count = MONO_RECORDS;
	for (unsigned i = 0; i < MONO_RECORDS; i++) {
		r[i].beam = (int32_t)(i % sh->B);
		r[i].noise = 1.0f;
		for (int j = 0; j < 3; j++)
			y[3 * i + j] = make_float2(10.0f * frand() + (j == 1 ? 30.0f : 0.0f),
						   10.0f * frand());
	}
	CK(cudaMalloc(&sh->d_list, bytes));
	CK(cudaMalloc((void **)&sh->d_mono, 3 * MONO_RECORDS * sizeof(float2)));
	CK(cudaMalloc((void **)&sh->d_wd, (size_t)sh->B * sh->C * sizeof(double2)));
	CK(cudaMemcpy(sh->d_list, h, bytes, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(sh->d_mono, y, 3 * MONO_RECORDS * sizeof(float2), cudaMemcpyHostToDevice));
	CK(cu_beam_weights(sh->bm, 0.01, 0.0, sh->d_w, sh->d_wd, sh->st));
	CK(cudaStreamSynchronize(sh->st));
	free(h);
	free(y);
}

static void call_mvdr(struct shape *sh, const void *arg)
{
	const struct opts *o = (const struct opts *)arg;

	CK(cu_beam_mvdr(sh->mv, sh->d_x, sh->N, o->R, 0.01, 0.0, sh->d_wm, sh->d_status, sh->st));
}

/* The variant's output over the check columns against the CPU's. */
static void check(struct shape *sh, const struct opts *o, const char *name,
		  const struct variant *v)
{
	size_t n = o->check < sh->N ? o->check : sh->N;
	double num = 0.0, den = 0.0;

	CK(cudaMemsetAsync(sh->d_y, 0xff, (size_t)sh->B * sh->N * sizeof(float2), sh->st));
	call_product(sh, v);
	CK(cudaMemcpy2DAsync(sh->h_y, n * sizeof(float2), sh->d_y, sh->N * sizeof(float2),
			     n * sizeof(float2), sh->B, cudaMemcpyDeviceToHost, sh->st));
	CK(cudaStreamSynchronize(sh->st));
	for (size_t i = 0; i < 2 * (size_t)sh->B * n; i++) {
		double d = (double)sh->h_y[i] - sh->h_ref[i];

		num += d * d;
		den += (double)sh->h_ref[i] * sh->h_ref[i];
	}
	if (!(sqrt(num / den) <= TOL)) {
		fprintf(stderr, "beam_gpu: %s at C %u B %u: relative L2 %.3g against the CPU\n",
			name, sh->C, sh->B, sqrt(num / den));
		exit(1);
	}
}

static void setup(struct shape *sh, const struct opts *o)
{
	char err[256];
	struct beam_params p;
	struct mvdr_params mp;
	size_t n = o->check < sh->N ? o->check : sh->N, nx = (size_t)sh->C * sh->N;

	sh->a = array_create_ula(sh->C, 0.5 * BEAM_C0_MPS / CARRIER_HZ, err, sizeof(err));
	beam_params_init(&p);
	p.carrier_hz = CARRIER_HZ;
	p.count = sh->B;
	p.fan_spacing_u = 1.0 / sh->B;
	p.taper = WIN_TAYLOR;
	sh->s = sh->a ? beam_set_create(sh->a, &p, err, sizeof(err)) : NULL;
	mvdr_params_init(&mp);
	mp.snapshots = 2 * sh->C;
	mp.gate_stride = 29;
	sh->bm = sh->s ? cu_beam_create(sh->s, NULL, o->P, o->R, err, sizeof(err)) : NULL;
	sh->mv = sh->bm ? cu_beam_create(sh->s, &mp, o->P, o->R, err, sizeof(err)) : NULL;
	if (!sh->mv) {
		fprintf(stderr, "beam_gpu: C %u B %u: %s\n", sh->C, sh->B, err);
		exit(1);
	}
	sh->h_x = (float *)malloc(2 * nx * sizeof(float));
	sh->h_ref = (float *)malloc(2 * (size_t)sh->B * n * sizeof(float));
	sh->h_y = (float *)malloc(2 * (size_t)sh->B * n * sizeof(float));
	if (!sh->h_x || !sh->h_ref || !sh->h_y) {
		fprintf(stderr, "beam_gpu: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < 2 * nx; i++)
		sh->h_x[i] = frand();
	CK(cudaStreamCreateWithFlags(&sh->st, cudaStreamNonBlocking));
	CK(cudaEventCreate(&sh->e0));
	CK(cudaEventCreate(&sh->e1));
	CK(cudaMalloc(&sh->d_x, nx * sizeof(float2)));
	CK(cudaMalloc(&sh->d_copy, nx * sizeof(float2)));
	CK(cudaMalloc(&sh->d_y, (size_t)sh->B * sh->N * sizeof(float2)));
	CK(cudaMalloc(&sh->d_w, (size_t)sh->B * sh->C * sizeof(float2)));
	CK(cudaMalloc(&sh->d_wm, (size_t)sh->B * sh->C * sizeof(float2)));
	CK(cudaMalloc(&sh->d_status, sizeof(int)));
	CK(cudaMemcpy(sh->d_x, sh->h_x, nx * sizeof(float2), cudaMemcpyHostToDevice));
	/* the weights of a pointing, from the device, and the CPU's product
	 * with the same weights over the check columns */
	sh->h_w = (float *)malloc(2 * (size_t)sh->B * sh->C * sizeof(float));
	CK(cu_beam_weights(sh->bm, 0.01, 0.0, sh->d_w, NULL, sh->st));
	CK(cudaMemcpyAsync(sh->h_w, sh->d_w, (size_t)sh->B * sh->C * sizeof(float2),
			   cudaMemcpyDeviceToHost, sh->st));
	CK(cudaStreamSynchronize(sh->st));
	beam_form(sh->h_w, sh->B, sh->C, sh->h_x, sh->N, sh->h_ref, n, 0, n);
}

static void teardown(struct shape *sh)
{
	cu_beam_destroy(sh->bm);
	cu_beam_destroy(sh->mv);
	beam_set_destroy(sh->s);
	array_destroy(sh->a);
	cudaFree(sh->d_x);
	cudaFree(sh->d_copy);
	cudaFree(sh->d_y);
	cudaFree(sh->d_w);
	cudaFree(sh->d_wm);
	cudaFree(sh->d_wd);
	cudaFree(sh->d_list);
	cudaFree(sh->d_mono);
	cudaFree(sh->d_status);
	cudaEventDestroy(sh->e0);
	cudaEventDestroy(sh->e1);
	cudaStreamDestroy(sh->st);
	free(sh->h_x);
	free(sh->h_w);
	free(sh->h_ref);
	free(sh->h_y);
}

static void run_shape(struct shape *sh, const struct opts *o)
{
	static const unsigned pairs[][2] = { { 32, 2 }, { 32, 1 }, { 16, 4 }, { 16, 2 },
					     { 8, 4 }, { 8, 2 } };
	double bytes = (double)(sh->C + sh->B) * sh->N * sizeof(float2);
	size_t copy_bytes = (size_t)bytes / 2;   /* read + written = bytes */
	struct variant v = { 0, 0, o };
	char name[64];

	setup(sh, o);
	cu_beam_form_pick(sh->B, sh->C, &v.bg, &v.nc);
	check(sh, o, "fused", &v);
	timed(sh, o, "fused", call_product, &v, bytes);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct variant w = { pairs[i][0], pairs[i][1], o };

		if (w.bg > 2 * sh->B && w.bg > 8)   /* groups far above B: idle lanes */
			continue;
		snprintf(name, sizeof(name), "fused-bg%u-nc%u", w.bg, w.nc);
		check(sh, o, name, &w);
		timed(sh, o, name, call_product, &w, bytes);
	}
	v.bg = v.nc = 0;
	check(sh, o, "cublas", &v);
	timed(sh, o, "cublas", call_product, &v, bytes);
	if (copy_bytes > (size_t)sh->C * sh->N * sizeof(float2))
		copy_bytes = (size_t)sh->C * sh->N * sizeof(float2);
	timed(sh, o, "copy", call_copy, &copy_bytes, 2.0 * copy_bytes);
	timed(sh, o, "weights", call_weights, NULL, 0.0);
	timed(sh, o, "mvdr", call_mvdr, o, 0.0);
	make_list(sh);
	timed(sh, o, "mono256", call_mono, NULL, 0.0);
	teardown(sh);
}

static int usage(void)
{
	fprintf(stderr, "usage: beam_gpu [--shapes C:B,...] [--pulses P] [--gates R] [--reps N] "
			"[--warmup N] [--check COLS] [--gpu I] [--tsv FILE]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct opts o = { 128, 4096, 20, 5, 65536, 0, "16:16,64:8,64:32", NULL };
	FILE *tsv = NULL;
	int ndev = 0;
	char *list, *tok, *save;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage();
		if (!strcmp(a, "--shapes"))
			o.shapes = v;
		else if (!strcmp(a, "--pulses"))
			o.P = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--gates"))
			o.R = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--reps"))
			o.reps = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--warmup"))
			o.warmup = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--check"))
			o.check = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--gpu"))
			o.gpu = atoi(v);
		else if (!strcmp(a, "--tsv"))
			o.tsv = v;
		else
			return usage();
		i++;
	}
	if (o.P < 1 || o.R < 1 || o.reps < 1 || o.reps > MAX_REPS || o.check < 1)
		return usage();
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
		fprintf(stderr, "beam_gpu: no usable CUDA device\n");
		return 77;
	}
	CK(cudaSetDevice(o.gpu));
	if (o.tsv) {
		tsv = fopen(o.tsv, "w");
		if (!tsv) {
			fprintf(stderr, "beam_gpu: %s: %s\n", o.tsv, strerror(errno));
			return 1;
		}
		fprintf(tsv, "variant\tC\tB\tN\treps\tmin_us\tmedian_us\tmax_us\tgbps\n");
	}
	list = strdup(o.shapes);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct shape sh = {};

		if (sscanf(tok, "%u:%u", &sh.C, &sh.B) != 2 || sh.C < 1 || sh.C > MVDR_MAX_CHANNELS ||
		    sh.B < 1 || sh.B > BEAM_MAX) {
			fprintf(stderr, "beam_gpu: shape '%s': want C:B, 1 <= C <= %u\n", tok,
				MVDR_MAX_CHANNELS);
			return 2;
		}
		sh.N = (size_t)o.P * o.R;
		sh.tsv = tsv;
		run_shape(&sh, &o);
	}
	free(list);
	if (tsv && fclose(tsv) != 0) {
		fprintf(stderr, "beam_gpu: %s: %s\n", o.tsv, strerror(errno));
		return 1;
	}
	return 0;
}
