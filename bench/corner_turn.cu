/* SPDX-License-Identifier: Apache-2.0 */
/*
 * corner_turn.cu — the Doppler FFT's corner turn, two ways, on one GPU:
 *
 *   strided    the cube laid out [pulse][channel][gate] (what the radar
 *              chain's MTI kernel writes, src/cuda/cu_radar.cu) and one
 *              cuFFT plan of C x R transforms of Nd points with
 *              istride = C R, idist = 1: no transpose;
 *   transpose  the same cube transposed to [channel x gate][pulse] (a
 *              tiled shared-memory transpose) and a plan of contiguous
 *              transforms (istride 1, idist Nd).
 *
 * Each variant is run --warmup times, then timed --repeats times with
 * CUDA events around one corner turn + FFT (the transpose's time included:
 * it is the price of that layout; the transpose back is not), on random
 * data; both results are
 * compared (relative L2 of the transpose variant's output, read back in
 * the strided layout, against the strided one's), so a wrong plan cannot
 * pass for a fast one. Not run by CI (bench-all runs it with defaults).
 *
 *   corner_turn [--channels C] [--pulses Nd] [--gates R] [--repeats N]
 *               [--warmup N] [--gpu I]
 *
 * One line per variant, key=value, microseconds over the repeats:
 *   corner_turn variant=strided C=… Nd=… R=… repeats=… min_us=… median_us=… max_us=…
 * then "corner_turn: results agree (rel L2 …)". Exit 0; 1 on a CUDA or
 * cuFFT error or a disagreement; 2 usage; 77 no usable CUDA device.
 */
#include <cuda_runtime.h>
#include <cufft.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call)                                                               \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "corner_turn: %s:%d: %s: %s\n", __FILE__, \
				__LINE__, #call, cudaGetErrorString(e_));      \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CKF(call)                                                              \
	do {                                                                   \
		cufftResult r_ = (call);                                       \
		if (r_ != CUFFT_SUCCESS) {                                     \
			fprintf(stderr, "corner_turn: %s:%d: %s: cuFFT error %d\n", \
				__FILE__, __LINE__, #call, (int)r_);           \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define TILE 32

/* out[c][r] = in[r][c] for a rows x cols matrix of float2, 32x32 tiles
 * through shared memory (padded against bank conflicts), 32 x 8 threads,
 * one block a tile on a 1-D grid (either side may pass 65535 tiles). */
__global__ void k_transpose(const float2 *__restrict__ in, float2 *__restrict__ out,
			    size_t rows, size_t cols)
{
	__shared__ float2 t[TILE][TILE + 1];
	size_t tiles_x = (cols + TILE - 1) / TILE;
	size_t c0 = (blockIdx.x % tiles_x) * TILE, r0 = (blockIdx.x / tiles_x) * TILE;

	for (unsigned j = threadIdx.y; j < TILE; j += blockDim.y) {
		size_t r = r0 + j, c = c0 + threadIdx.x;

		if (r < rows && c < cols)
			t[j][threadIdx.x] = in[r * cols + c];
	}
	__syncthreads();
	for (unsigned j = threadIdx.y; j < TILE; j += blockDim.y) {
		size_t c = c0 + j, r = r0 + threadIdx.x;

		if (r < rows && c < cols)
			out[c * rows + r] = t[threadIdx.x][j];
	}
}

static void transpose(const float2 *in, float2 *out, size_t rows, size_t cols)
{
	size_t tiles = ((cols + TILE - 1) / TILE) * ((rows + TILE - 1) / TILE);

	if (tiles > 0x7fffffffu) {
		fprintf(stderr, "corner_turn: %zu x %zu is too large to transpose\n", rows, cols);
		exit(2);
	}
	k_transpose<<<(unsigned)tiles, dim3(TILE, 8)>>>(in, out, rows, cols);
	CK(cudaGetLastError());
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static unsigned long parse(const char *opt, const char *v, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long x = strtoul(v, &end, 10);

	if (!*v || *end || x < lo || x > hi) {
		fprintf(stderr, "corner_turn: %s %s: want an integer in %lu..%lu\n", opt, v, lo, hi);
		exit(2);
	}
	return x;
}

struct opts {
	unsigned C, Nd, R, repeats, warmup;
	int gpu;
};

static void usage_exit(void)
{
	fprintf(stderr, "usage: corner_turn [--channels C] [--pulses Nd] [--gates R] "
			"[--repeats N] [--warmup N] [--gpu I]\n");
	exit(2);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	o->C = 4;
	o->Nd = 128;
	o->R = 4000;
	o->repeats = 50;
	o->warmup = 5;
	o->gpu = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (i + 1 >= argc)
			usage_exit();
		if (!strcmp(a, "--channels"))
			o->C = (unsigned)parse(a, argv[++i], 1, 4096);
		else if (!strcmp(a, "--pulses"))
			o->Nd = (unsigned)parse(a, argv[++i], 1, 1u << 20);
		else if (!strcmp(a, "--gates"))
			o->R = (unsigned)parse(a, argv[++i], 1, 1u << 26);
		else if (!strcmp(a, "--repeats"))
			o->repeats = (unsigned)parse(a, argv[++i], 1, 100000);
		else if (!strcmp(a, "--warmup"))
			o->warmup = (unsigned)parse(a, argv[++i], 0, 100000);
		else if (!strcmp(a, "--gpu"))
			o->gpu = (int)parse(a, argv[++i], 0, 1024);
		else
			usage_exit();
	}
}

/* One variant once: the strided plan in place on d_a (t = 0), or the
 * transpose to d_b and the contiguous plan in place there (t = 1). The
 * transpose variant is timed without a transpose back: a map kernel could
 * read the pulse-contiguous layout as it is, so one transpose is its
 * least cost. */
static void run_once(int t, cufftHandle plan, float2 *d_a, float2 *d_b, size_t nd, size_t cr)
{
	if (t == 0) {
		CKF(cufftExecC2C(plan, (cufftComplex *)d_a, (cufftComplex *)d_a, CUFFT_FORWARD));
		return;
	}
	transpose(d_a, d_b, nd, cr);
	CKF(cufftExecC2C(plan, (cufftComplex *)d_b, (cufftComplex *)d_b, CUFFT_FORWARD));
}

/* Time variant t: warm-up, then repeats runs of a fresh copy of the input,
 * each between two events. Prints its line; leaves its last result in d_a
 * (strided) or d_b (transpose, pulse-contiguous). */
static void time_variant(int t, const struct opts *o, cufftHandle plan, const float2 *d_src,
			 float2 *d_a, float2 *d_b, float *ms)
{
	size_t cr = (size_t)o->C * o->R, bytes = cr * o->Nd * sizeof(float2);
	cudaEvent_t e0, e1;

	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (unsigned i = 0; i < o->warmup; i++) {
		CK(cudaMemcpy(d_a, d_src, bytes, cudaMemcpyDeviceToDevice));
		run_once(t, plan, d_a, d_b, o->Nd, cr);
	}
	for (unsigned i = 0; i < o->repeats; i++) {
		CK(cudaMemcpy(d_a, d_src, bytes, cudaMemcpyDeviceToDevice));
		CK(cudaEventRecord(e0, 0));
		run_once(t, plan, d_a, d_b, o->Nd, cr);
		CK(cudaEventRecord(e1, 0));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms[i], e0, e1));
	}
	qsort(ms, o->repeats, sizeof(float), cmp_float);
	printf("corner_turn variant=%s C=%u Nd=%u R=%u repeats=%u min_us=%.1f median_us=%.1f "
	       "max_us=%.1f\n", t == 0 ? "strided" : "transpose", o->C, o->Nd, o->R, o->repeats,
	       ms[0] * 1e3, ms[o->repeats / 2] * 1e3, ms[o->repeats - 1] * 1e3);
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
}

int main(int argc, char **argv)
{
	struct opts o;
	int ndev = 0;
	size_t cr, n;
	float2 *h, *h_ref, *d_src, *d_a, *d_b;
	cufftHandle strided, contig;
	long long len[1], emb[1];
	size_t work;
	float *ms;
	double num = 0, den = 0;

	parse_args(argc, argv, &o);
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev <= o.gpu) {
		printf("corner_turn: no usable CUDA device: skipped\n");
		return 77;
	}
	CK(cudaSetDevice(o.gpu));
	cr = (size_t)o.C * o.R;
	n = cr * o.Nd;
	h = (float2 *)malloc(n * sizeof(float2));
	h_ref = (float2 *)malloc(n * sizeof(float2));
	ms = (float *)malloc(o.repeats * sizeof(float));
	if (!h || !h_ref || !ms) {
		fprintf(stderr, "corner_turn: out of memory\n");
		return 1;
	}
	srand(1);
	for (size_t i = 0; i < n; i++)
		h[i] = make_float2((float)rand() / RAND_MAX - 0.5f, (float)rand() / RAND_MAX - 0.5f);
	CK(cudaMalloc((void **)&d_src, n * sizeof(float2)));
	CK(cudaMalloc((void **)&d_a, n * sizeof(float2)));
	CK(cudaMalloc((void **)&d_b, n * sizeof(float2)));
	CK(cudaMemcpy(d_src, h, n * sizeof(float2), cudaMemcpyHostToDevice));
	len[0] = o.Nd;
	emb[0] = o.Nd;
	CKF(cufftCreate(&strided));
	CKF(cufftMakePlanMany64(strided, 1, len, emb, (long long)cr, 1, emb, (long long)cr, 1,
				CUFFT_C2C, (long long)cr, &work));
	CKF(cufftCreate(&contig));
	CKF(cufftMakePlanMany64(contig, 1, len, emb, 1, o.Nd, emb, 1, o.Nd, CUFFT_C2C,
				(long long)cr, &work));
	time_variant(0, &o, strided, d_src, d_a, d_b, ms);
	CK(cudaMemcpy(h_ref, d_a, n * sizeof(float2), cudaMemcpyDeviceToHost));
	time_variant(1, &o, contig, d_src, d_a, d_b, ms);
	transpose(d_b, d_a, cr, o.Nd);   /* back to [pulse][channel x gate] */
	CK(cudaMemcpy(h, d_a, n * sizeof(float2), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++) {
		double dx = (double)h[i].x - h_ref[i].x, dy = (double)h[i].y - h_ref[i].y;

		num += dx * dx + dy * dy;
		den += (double)h_ref[i].x * h_ref[i].x + (double)h_ref[i].y * h_ref[i].y;
	}
	num = den > 0 ? sqrt(num / den) : sqrt(num);
	if (!(num <= 1e-5)) {
		fprintf(stderr, "corner_turn: the variants disagree (rel L2 %.3e)\n", num);
		return 1;
	}
	printf("corner_turn: results agree (rel L2 %.2e)\n", num);
	CKF(cufftDestroy(strided));
	CKF(cufftDestroy(contig));
	CK(cudaFree(d_src));
	CK(cudaFree(d_a));
	CK(cudaFree(d_b));
	free(h);
	free(h_ref);
	free(ms);
	return 0;
}
