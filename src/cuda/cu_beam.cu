/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_beam.cu — digital beamforming on the GPU (cu_beam.h): the weights
 * formed on the device from the CPI's pointing, MVDR's covariance and
 * solve, and the product Y = W X by a fused kernel or by cuBLAS.
 *
 * THE PRODUCT. Y = W X, B x C times C x N (N = P R columns), is a thin
 * matrix product: at C = B = 16 it does 8 B C = 2048 flops per column
 * against (C + B) 8 = 256 bytes, 8 flops per byte, under the ~15 of an
 * H200's float rate over its memory rate, so it is bound by memory there;
 * at C = 64, B = 32 (40 flops per byte) by arithmetic. k_beam_form reads
 * each input sample once from memory for every beam of a group: a thread
 * keeps NC columns x BG beams of accumulators in registers, the group's
 * weights sit in shared memory (one broadcast load serves the warp), and
 * a warp's loads and stores are 32 consecutive float2 of one row (its
 * columns are r0 + j x 128). B above a group (cu_beam_form_pick) re-reads
 * the block's columns from L1/L2 per group, not from memory. cuBLAS's cgemm reads the
 * row-major arrays as column-major, Y^T = X^T W^T (m = N, n = B, k = C):
 * its tiles are made for large n and k, and at n = B <= 32 they leave
 * most of the tile idle. The default engine is the fused kernel: where
 * the product is bound by memory (B, C up to 16, or few beams of many
 * channels) it moves about twice cuBLAS's bytes per second, because it
 * reads each input once and writes each output once with no tile left
 * idle; where it is bound by arithmetic (64 channels x 32 beams) cuBLAS's
 * register tiling is some 15 % faster, short of the 30 % that would pay
 * for a second engine in the chain: a cuBLAS handle and workspace per
 * stream in flight, layouts restricted to one column run. cuBLAS stays
 * for the benchmark and cu_beam_run's cross-check (doc/performance.md,
 * table (n), holds the measurement).
 *
 * THE WEIGHTS are computed in double exactly as beam.c computes them (the
 * phase without fused multiply-adds) and rounded once to float, so the
 * device's conventional weights equal beam_set_point's to float rounding.
 *
 * MVDR: k_mvdr_gather copies the K training cells (mvdr.h's rule) into a
 * K x C scratch, k_mvdr_cov forms R (upper triangle, double, one block per
 * row, the snapshots staged through shared memory), k_mvdr_solve (one
 * block) adds the loading, factors R_l = L L^H in shared memory
 * (right-looking, FP64, one barrier per column) and solves each beam with
 * one warp (each lane holds rows lane and lane + 32 of the vector: a
 * forward and a backward substitution of C broadcasts each), then writes W
 * only once every beam's solve is valid (all or nothing, as mvdr_solve).
 */
#include <cublas_v2.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chirp/detect.h"
#include "cu_beam.h"
extern "C" {
#include "errbuf.h"
#include "monopulse.h"
}

#define CU_BW_THREADS 256        /* k_beam_weights                           */
#define CU_BF_THREADS 128        /* k_beam_form: columns per row of a block x NC */
#define CU_BF_SMEM (48 * 1024)   /* k_beam_form's weight tile, at most       */
#define CU_BG_PICK 16            /* beams per group of cu_beam_form         */
#define CU_MV_THREADS 1024       /* k_mvdr_solve: 32 warps, a beam each     */
#define CU_BLAS_WS (32u << 20)   /* cuBLAS workspace (Hopper's default size) */
#define CU_TWO_PI 6.283185307179586476925286766559

/* The array and beams as the kernels see them (device pointers into one
 * allocation, cu_beam.d_geo). */
struct cu_bgeo {
	const double *pos;       /* 3 C: x, y, z, metres                      */
	const double *cal;       /* 2 C: g_c                                  */
	const double *taper;     /* C: t_c / sum t                            */
	const double *uv0;       /* 2 B: nominal directions                   */
	unsigned B, C;
	double k;                /* 2 pi / lambda, rad / m                    */
};

struct cu_beam {
	struct cu_bgeo g;
	double *d_geo;
	int mvdr;
	struct mvdr_params mp;
	unsigned P, R, nr;       /* MVDR: nr gates of a pulse the rule takes  */
	float2 *d_snap;          /* K x C training snapshots                  */
	double2 *d_cov;          /* C x C: R                                  */
	double2 *d_z;            /* B x C: the solve's weights before the check */
	size_t solve_smem;
	cublasHandle_t blas;     /* made by the first cu_beam_gemm          */
	int have_blas;
	void *d_blas_ws;
	char blas_err[160];
};

static int make_blas(struct cu_beam *bm, char *err, size_t errlen);

/* ---- the weights ---------------------------------------------------------- */

/* a_c(u, v) = (cos ph, sin ph), ph = k (x u + y v + z w) rounded step by
 * step as beam.c computes it (no contraction into fused multiply-adds). */
__device__ __forceinline__ void cu_steer(const struct cu_bgeo &g, unsigned c, double u, double v,
					 double *ar, double *ai)
{
	const double *p = g.pos + 3 * c;
	double w = sqrt(fmax(0.0, __dadd_rn(__dadd_rn(1.0, -__dmul_rn(u, u)), -__dmul_rn(v, v))));
	double s = __dadd_rn(__dadd_rn(__dmul_rn(p[0], u), __dmul_rn(p[1], v)), __dmul_rn(p[2], w));

	sincos(__dmul_rn(g.k, s), ai, ar);
}

/* W[b][c] = t_c conj(a_c(u_b + up, v_b + vp)) / g_c, thread b C + c; Wd
 * (NULL: none) the same before rounding to float. */
__global__ void k_beam_weights(struct cu_bgeo g, double up, double vp, float2 *__restrict__ W,
			       double2 *__restrict__ Wd)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= g.B * g.C)
		return;
	unsigned b = i / g.C, c = i % g.C;
	const double *gc = g.cal + 2 * c;
	double ar, s, ai, t = g.taper[c];
	double g2 = __dadd_rn(__dmul_rn(gc[0], gc[0]), __dmul_rn(gc[1], gc[1]));
	double ir = gc[0] / g2, ii = -gc[1] / g2;

	cu_steer(g, c, g.uv0[2 * b] + up, g.uv0[2 * b + 1] + vp, &ar, &s);
	ai = -s;
	double wr = __dmul_rn(t, __dadd_rn(__dmul_rn(ar, ir), -__dmul_rn(ai, ii)));
	double wi = __dmul_rn(t, __dadd_rn(__dmul_rn(ar, ii), __dmul_rn(ai, ir)));

	W[i] = make_float2((float)wr, (float)wi);
	if (Wd)
		Wd[i] = make_double2(wr, wi);
}

static dim3 cu_bw_grid(const struct cu_beam *bm)
{
	return dim3((bm->g.B * bm->g.C + CU_BW_THREADS - 1) / CU_BW_THREADS);
}

/* ---- the product ---------------------------------------------------------- */

/*
 * Y[b][p][r] = sum_c W[b][c] X[c][p][r]. Block: CU_BF_THREADS x NC columns
 * of one pulse row (x: column tiles, y: pulses, strided). Per beam group
 * of BG: the group's weights into shared memory as [c][b] (a thread's BG
 * weights of one channel are consecutive: wide loads), then each thread
 * accumulates its NC columns (r0 + j CU_BF_THREADS: each load of a warp is
 * 32 consecutive float2) for all BG beams over the C channels.
 */
template <int BG, int NC>
__global__ void __launch_bounds__(CU_BF_THREADS)
k_beam_form(const float2 *__restrict__ W, unsigned B, unsigned C, struct cu_beam_io io)
{
	extern __shared__ float4 sw4[];
	float2 *sw = (float2 *)sw4;   /* [c][b], BG x C */
	const unsigned T = CU_BF_THREADS;
	unsigned r0 = blockIdx.x * (T * NC) + threadIdx.x;

	for (unsigned b0 = 0; b0 < B; b0 += BG) {
		unsigned nb = min(B - b0, (unsigned)BG);

		__syncthreads();   /* the last group's readers are done */
		for (unsigned i = threadIdx.x; i < BG * C; i += T) {
			unsigned c = i / BG, j = i % BG;

			sw[i] = j < nb ? W[(size_t)(b0 + j) * C + c] : make_float2(0.0f, 0.0f);
		}
		__syncthreads();
		for (unsigned p = blockIdx.y; p < io.P; p += gridDim.y) {
			const float2 *x = io.x + (size_t)p * io.x_pulse + r0;
			float2 acc[BG][NC];

#pragma unroll
			for (int b = 0; b < BG; b++)
#pragma unroll
				for (int j = 0; j < NC; j++)
					acc[b][j] = make_float2(0.0f, 0.0f);
#pragma unroll 4
			for (unsigned c = 0; c < C; c++, x += io.x_ch) {
				float2 xv[NC];

#pragma unroll
				for (int j = 0; j < NC; j++)
					xv[j] = r0 + j * T < io.R ? __ldg(x + j * T) : make_float2(0.0f, 0.0f);
#pragma unroll
				for (int b = 0; b < BG; b++) {
					float2 w = sw[c * BG + b];

#pragma unroll
					for (int j = 0; j < NC; j++) {
						acc[b][j].x = fmaf(w.x, xv[j].x, fmaf(-w.y, xv[j].y, acc[b][j].x));
						acc[b][j].y = fmaf(w.x, xv[j].y, fmaf(w.y, xv[j].x, acc[b][j].y));
					}
				}
			}
			float2 *y = io.y + (size_t)b0 * io.y_ch + (size_t)p * io.y_pulse + r0;

#pragma unroll
			for (int b = 0; b < BG; b++) {
				if ((unsigned)b >= nb)
					break;
#pragma unroll
				for (int j = 0; j < NC; j++)
					if (r0 + j * T < io.R)
						y[(size_t)b * io.y_ch + j * T] = acc[b][j];
			}
		}
	}
}

/* Launch k_beam_form<bg, nc> (bench/beam_gpu.cu times the variants). */
template <int BG, int NC>
static cudaError_t cu_form_launch(const float2 *W, unsigned B, unsigned C,
				  const struct cu_beam_io *io, cudaStream_t st)
{
	unsigned cols = CU_BF_THREADS * NC;
	dim3 grid((io->R + cols - 1) / cols, io->P < 65535u ? io->P : 65535u);
	size_t smem = (size_t)BG * C * sizeof(float2);

	if (smem > CU_BF_SMEM)
		return cudaErrorInvalidValue;
	k_beam_form<BG, NC><<<grid, CU_BF_THREADS, smem, st>>>(W, B, C, *io);
	return cudaGetLastError();
}

#define CU_NC_CASES(BG)                                                          \
	case BG:                                                                 \
		switch (nc) {                                                    \
		case 1: return cu_form_launch<BG, 1>(W, B, C, io, st);          \
		case 2: return cu_form_launch<BG, 2>(W, B, C, io, st);          \
		case 4: return cu_form_launch<BG, 4>(W, B, C, io, st);          \
		default: return cudaErrorInvalidValue;                           \
		}

/* bg beams per group (1..32, a power of two), nc columns per thread (1, 2,
 * 4; bg 32: 1 or 2). cudaErrorInvalidValue for another pair, or a weight
 * tile over CU_BF_SMEM. */
cudaError_t cu_beam_form_variant(const float2 *W, unsigned B, unsigned C,
				 const struct cu_beam_io *io, unsigned bg, unsigned nc,
				 cudaStream_t st)
{
	switch (bg) {
	CU_NC_CASES(1)
	CU_NC_CASES(2)
	CU_NC_CASES(4)
	CU_NC_CASES(8)
	CU_NC_CASES(16)
	case 32:
		if (nc == 1)
			return cu_form_launch<32, 1>(W, B, C, io, st);
		if (nc == 2)
			return cu_form_launch<32, 2>(W, B, C, io, st);
		return cudaErrorInvalidValue;
	default:
		return cudaErrorInvalidValue;
	}
}

/*
 * The default group and columns for B beams of C channels, from the
 * measured variants (bench/beam_gpu.cu; doc/performance.md, table (n)):
 * every beam in one group up to 16; 2 columns per thread at 16 beams,
 * since 4 take 185 registers a thread and halve the warps in flight, which
 * a kernel bound by memory needs; 4 columns below 16 beams, where the
 * registers allow them. Above 16 beams the groups re-read the block's
 * columns from L1/L2, not from memory, and two groups of 16 ran at least
 * as fast as one of 32 (206 registers). The weight tile fits CU_BF_SMEM.
 */
void cu_beam_form_pick(unsigned B, unsigned C, unsigned *bg, unsigned *nc)
{
	unsigned g = 1;

	while (g < B && g < CU_BG_PICK)
		g *= 2;
	while (g > 1 && (size_t)g * C * sizeof(float2) > CU_BF_SMEM)
		g /= 2;
	*bg = g;
	*nc = g >= 16 ? 2 : 4;
}

cudaError_t cu_beam_form(const struct cu_beam *bm, const float2 *W, const struct cu_beam_io *io,
			 cudaStream_t st)
{
	unsigned bg, nc;

	cu_beam_form_pick(bm->g.B, bm->g.C, &bg, &nc);
	return cu_beam_form_variant(W, bm->g.B, bm->g.C, io, bg, nc, st);
}

int cu_beam_gemm(struct cu_beam *bm, const float2 *W, const struct cu_beam_io *io,
		 cudaStream_t st, const char **what)
{
	const cuComplex one = { 1.0f, 0.0f }, zero = { 0.0f, 0.0f };
	size_t m = (size_t)(io->P - 1) * io->x_pulse + io->R;
	cublasStatus_t r;

	*what = NULL;
	if (!bm->have_blas) {   /* the first call: its handle and workspace */
		char err[160];

		if (make_blas(bm, err, sizeof(err)) < 0) {
			snprintf(bm->blas_err, sizeof(bm->blas_err), "%s", err);
			*what = bm->blas_err;
			return -EIO;
		}
	}
	if (io->x_ch != (size_t)io->P * io->x_pulse || io->y_ch != (size_t)io->P * io->y_pulse ||
	    io->x_pulse != io->y_pulse || io->x_ch > 0x7fffffffu || io->y_ch > 0x7fffffffu)
		return -EINVAL;
	r = cublasSetStream(bm->blas, st);
	if (r == CUBLAS_STATUS_SUCCESS)
		r = cublasCgemm(bm->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)bm->g.B, (int)bm->g.C,
				&one, (const cuComplex *)io->x, (int)io->x_ch, (const cuComplex *)W,
				(int)bm->g.C, &zero, (cuComplex *)io->y, (int)io->y_ch);
	if (r != CUBLAS_STATUS_SUCCESS) {
		*what = cublasGetStatusString(r);
		return -EIO;
	}
	return 0;
}

/* ---- MVDR ----------------------------------------------------------------- */

/* S[k][c] = X[c][p_k][r_k], the rule's cell k (mvdr.h): nr gates a pulse. */
__global__ void k_mvdr_gather(const float2 *__restrict__ x, size_t x_ch, size_t x_pulse,
			      unsigned C, unsigned K, unsigned nr, unsigned first_gate,
			      unsigned gate_stride, unsigned pulse_stride, float2 *__restrict__ S)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= K * C)
		return;
	unsigned k = i / C, c = i % C;
	size_t p = (size_t)(k / nr) * pulse_stride, r = first_gate + (size_t)(k % nr) * gate_stride;

	S[i] = x[c * x_ch + p * x_pulse + r];
}

/* R[i][j] = (1/K) sum_k S[k][i] conj(S[k][j]) in double: block i, thread
 * j >= i, and R[j][i] its conjugate. The snapshots pass through shared
 * memory CU_COV_TK at a time: every load coalesced and in flight at once
 * (a loop of dependent loads from L2 would cost their latency K times). */
#define CU_COV_TK 32
__global__ void __launch_bounds__(64) k_mvdr_cov(const float2 *__restrict__ S, unsigned C,
						 unsigned K, double2 *__restrict__ cov)
{
	__shared__ float2 t[CU_COV_TK * 64];
	unsigned i = blockIdx.x, j = threadIdx.x;
	double sr = 0.0, si = 0.0;

	for (unsigned k0 = 0; k0 < K; k0 += CU_COV_TK) {
		unsigned nk = min(K - k0, (unsigned)CU_COV_TK);

		__syncthreads();
		for (unsigned x = threadIdx.x; x < nk * C; x += blockDim.x)
			t[x] = S[(size_t)k0 * C + x];
		__syncthreads();
		if (j < i || j >= C)
			continue;
		for (unsigned k = 0; k < nk; k++) {
			float2 a = t[k * C + i], b = t[k * C + j];

			sr += (double)a.x * b.x + (double)a.y * b.y;
			si += (double)a.y * b.x - (double)a.x * b.y;
		}
	}
	if (j < i || j >= C)
		return;
	cov[(size_t)i * C + j] = make_double2(sr / K, si / K);
	cov[(size_t)j * C + i] = make_double2(sr / K, -si / K);
}

__device__ __forceinline__ double2 cmul(double2 a, double2 b)
{
	return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__device__ __forceinline__ double2 cmulc(double2 a, double2 b)   /* a conj(b) */
{
	return make_double2(a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y);
}

__device__ __forceinline__ double2 cshfl(double2 a, unsigned lane)
{
	return make_double2(__shfl_sync(0xffffffffu, a.x, lane), __shfl_sync(0xffffffffu, a.y, lane));
}

/*
 * Cholesky of R + load I, R_l = L L^H, in A (row stride C + 1: a column's
 * elements fall in different banks), right-looking, one barrier a step:
 * step j reads column j of the trailing matrix as it stands, updates the
 * lower trailing part (rows and columns > j), and writes L's column j as
 * its conjugate into row j's upper part (A[j][i] = conj(L[i][j]), i > j),
 * which no update reads or writes, and 1 / L[j][j] into rdg[j]. 0, or 1
 * when a pivot is not positive and finite (every thread sees the same
 * pivot). Every thread of the block calls it.
 */
__device__ int cu_cholesky(double2 *A, double *rdg, const double2 *__restrict__ cov, unsigned C,
			   double loading)
{
	__shared__ double load;
	unsigned tid = threadIdx.x, nt = blockDim.x, ld = C + 1;

	for (unsigned i = tid; i < C * C; i += nt)
		A[(i / C) * ld + i % C] = cov[i];
	if (tid == 0) {
		double tr = 0.0;

		for (unsigned c = 0; c < C; c++)
			tr += cov[(size_t)c * C + c].x;
		load = loading * tr / C;
	}
	__syncthreads();
	for (unsigned j = 0; j < C; j++) {
		double d = A[j * ld + j].x + load, r, rr;
		unsigned n = C - j - 1;

		if (!(d > 0.0) || !isfinite(d))
			return 1;
		r = 1.0 / sqrt(d);
		rr = 1.0 / d;
		if (tid == 0)
			rdg[j] = r;
		for (unsigned i = j + 1 + tid; i < C; i += nt) {
			double2 a = A[i * ld + j];

			A[j * ld + i] = make_double2(a.x * r, -a.y * r);
		}
		for (unsigned t = tid; t < n * n; t += nt) {
			unsigned i = j + 1 + t / n, k = j + 1 + t % n;

			if (k <= i) {
				double2 u = cmulc(A[i * ld + j], A[k * ld + j]);

				A[i * ld + k].x -= u.x * rr;
				A[i * ld + k].y -= u.y * rr;
			}
		}
		__syncthreads();
	}
	return 0;
}

/* One beam by one warp: z = R_l^-1 v by L y = v, L^H z = y, then
 * w = conj(z) / (v^H z). Lane l holds rows l and l + 32 (C <= 64).
 * Returns v^H z's real part (the check's), w into zs[0..C-1]. */
__device__ double cu_mvdr_beam(const struct cu_bgeo &g, const double2 *A, const double *rdg,
			       unsigned b, double up, double vp, double2 *zs)
{
	unsigned lane = threadIdx.x & 31, C = g.C, ld = C + 1;
	double2 v[2], y[2];
	double q = 0.0;

	for (int s = 0; s < 2; s++) {
		unsigned c = lane + 32 * s;
		double ar = 0.0, ai = 0.0;

		if (c < C) {
			const double *gc = g.cal + 2 * c;

			cu_steer(g, c, g.uv0[2 * b] + up, g.uv0[2 * b + 1] + vp, &ar, &ai);
			v[s] = make_double2(ar * gc[0] - ai * gc[1], ar * gc[1] + ai * gc[0]);
		} else {
			v[s] = make_double2(0.0, 0.0);
		}
		y[s] = v[s];
	}
	for (unsigned i = 0; i < C; i++) {   /* forward: L y = v */
		unsigned o = i & 31;
		double2 yi = i < 32 ? y[0] : y[1];
		double d = rdg[i];

		yi = make_double2(yi.x * d, yi.y * d);
		if (lane == o) {
			if (i < 32)
				y[0] = yi;
			else
				y[1] = yi;
		}
		yi = cshfl(yi, o);
		for (int s = 0; s < 2; s++) {
			unsigned c = lane + 32 * s;

			if (c > i && c < C) {   /* L[c][i] = conj(A[i][c]) */
				double2 u = cmulc(yi, A[i * ld + c]);

				y[s].x -= u.x;
				y[s].y -= u.y;
			}
		}
	}
	for (unsigned i = C; i-- > 0;) {     /* backward: L^H z = y */
		unsigned o = i & 31;
		double2 zi = i < 32 ? y[0] : y[1];
		double d = rdg[i];

		zi = make_double2(zi.x * d, zi.y * d);
		if (lane == o) {
			if (i < 32)
				y[0] = zi;
			else
				y[1] = zi;
		}
		zi = cshfl(zi, o);
		for (int s = 0; s < 2; s++) {
			unsigned c = lane + 32 * s;

			if (c < i) {   /* conj(L[i][c]) = A[c][i] */
				double2 u = cmul(A[c * ld + i], zi);

				y[s].x -= u.x;
				y[s].y -= u.y;
			}
		}
	}
	for (int s = 0; s < 2; s++)   /* Re(v^H z) */
		q += v[s].x * y[s].x + v[s].y * y[s].y;
	for (int o = 16; o > 0; o >>= 1)
		q += __shfl_xor_sync(0xffffffffu, q, o);
	for (int s = 0; s < 2; s++) {
		unsigned c = lane + 32 * s;

		if (c < C)
			zs[c] = make_double2(y[s].x / q, -y[s].y / q);
	}
	return q;
}

/* The loading, the factorisation and every beam's solve in one block;
 * W written only when all are valid, status 0 or -EDOM. */
__global__ void __launch_bounds__(CU_MV_THREADS)
k_mvdr_solve(struct cu_bgeo g, const double2 *__restrict__ cov, double loading, double up,
	     double vp, double2 *__restrict__ zs, float2 *__restrict__ W, int *status)
{
	extern __shared__ double2 A[];   /* C x (C + 1), then C doubles: rdg */
	__shared__ int bad;
	double *rdg = (double *)(A + (size_t)g.C * (g.C + 1));
	unsigned warp = threadIdx.x >> 5, nw = blockDim.x >> 5;

	if (threadIdx.x == 0)
		bad = 0;
	if (cu_cholesky(A, rdg, cov, g.C, loading)) {   /* its barriers order bad = 0 */
		if (threadIdx.x == 0)
			*status = -EDOM;
		return;
	}
	for (unsigned b = warp; b < g.B; b += nw) {
		double q = cu_mvdr_beam(g, A, rdg, b, up, vp, zs + (size_t)b * g.C);

		if (!(q > 0.0) || !isfinite(q))
			bad = 1;
	}
	__syncthreads();
	if (bad) {
		if (threadIdx.x == 0)
			*status = -EDOM;
		return;
	}
	for (unsigned i = threadIdx.x; i < g.B * g.C; i += blockDim.x)
		W[i] = make_float2((float)zs[i].x, (float)zs[i].y);
	if (threadIdx.x == 0)
		*status = 0;
}

/* ---- monopulse ------------------------------------------------------------- */

/*
 * The angle of every record of a CPI's list (monopulse.c's estimator,
 * radar_beam_record's fields), one block of CU_MONO_WARPS warps per record.
 * The grid's 25 points and the golden section's, five steps at a time with
 * the 31 points those may take, are evaluated a lane each
 * (cu_mono_maximise), each warp summing a share of the channels (c = warp
 * mod CU_MONO_WARPS) and the shares added through shared memory in warp
 * order: the steps are a chain of evaluations, each a chain of complex
 * exponentials, and the warps cut that chain's length by their number (a
 * CPI's few hundred records leave most of the GPU idle otherwise). The
 * noise covariance and the single evaluations (the section's first two
 * points, the misfit) split the channels over the lanes, a butterfly
 * leaving every lane the totals. All lanes take the same path through the
 * search: the same steps, grid, golden-section iterations, limits and
 * quality bits as monopulse.c; its sums in another order (by lane and
 * warp), so the estimate agrees to rounding. Every warp of the block takes
 * that path too, with the same totals. Per record some 280 pattern
 * evaluations of C complex exponentials, 12 in sequence: in parallel over
 * the records, the points and the channels, no host work at completion.
 */
#define CU_MONO_GRID 24
#define CU_MONO_ITERS 40
#define CU_MONO_WARPS 4
#define CU_GOLDEN (0.5 * (sqrt(5.0) - 1.0))   /* monopulse.c's ratio */
#define CU_DEG (3.14159265358979323846 / 180.0)

struct cu_mfit {
	const double2 *w[3];     /* the M beams' weights, C each          */
	double2 y[3];            /* their outputs at the cell             */
	double2 qi[9];           /* Q^-1, M x M, row stride 3             */
	unsigned M;
	double v;
};

__device__ __forceinline__ double2 cadd(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ double2 cconjd(double2 a) { return make_double2(a.x, -a.y); }

__device__ __forceinline__ double2 cdiv(double2 a, double2 b)
{
	double d = b.x * b.x + b.y * b.y;

	return make_double2((a.x * b.x + a.y * b.y) / d, (a.y * b.x - a.x * b.y) / d);
}

__device__ __forceinline__ double cu_warp_sum(double x)
{
	for (int o = 16; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

__device__ __forceinline__ void cu_buv(const struct cu_bgeo &g, unsigned b, double up, double vp,
				       double *u, double *v)
{
	*u = g.uv0[2 * b] + up;
	*v = g.uv0[2 * b + 1] + vp;
}

__device__ int cu_mono_neighbour(const struct cu_bgeo &g, double up, double vp, unsigned b, long j)
{
	double ub, vb, uj, vj;

	if (j < 0 || j >= (long)g.B)
		return 0;
	cu_buv(g, b, up, vp, &ub, &vb);
	cu_buv(g, (unsigned)j, up, vp, &uj, &vj);
	return fabs(vj - vb) <= 1e-9 && uj != ub;
}

/* Q^-1 of the fit's beams (Gauss-Jordan, M <= 3); -1 when dependent. */
__device__ int cu_mono_qinv(const struct cu_bgeo &g, struct cu_mfit &f, double *q_bb, unsigned ib)
{
	unsigned M = f.M, lane = threadIdx.x & 31;
	double2 a[3][6];

	for (unsigned i = 0; i < M; i++) {
		for (unsigned j = 0; j < M; j++) {
			double qr = 0.0, qq = 0.0;

			for (unsigned c = lane; c < g.C; c += 32) {
				const double *gc = g.cal + 2 * c;
				double2 t = cmulc(f.w[i][c], f.w[j][c]);
				double m = gc[0] * gc[0] + gc[1] * gc[1];

				qr += t.x * m;
				qq += t.y * m;
			}
			a[i][j] = make_double2(cu_warp_sum(qr), cu_warp_sum(qq));
			a[i][M + j] = make_double2(i == j ? 1.0 : 0.0, 0.0);
		}
	}
	*q_bb = a[ib][ib].x;
	for (unsigned k = 0; k < M; k++) {
		double piv = hypot(a[k][k].x, a[k][k].y);

		if (!(piv > 1e-12 * *q_bb))
			return -1;
		for (unsigned j = 0; j < 2 * M; j++)
			if (j != k)
				a[k][j] = cdiv(a[k][j], a[k][k]);
		a[k][k] = make_double2(1.0, 0.0);
		for (unsigned i = 0; i < M; i++) {
			double2 m = a[i][k];

			if (i == k)
				continue;
			for (unsigned j = 0; j < 2 * M; j++) {
				double2 t = cmul(m, a[k][j]);

				a[i][j].x -= t.x;
				a[i][j].y -= t.y;
			}
		}
	}
	for (unsigned i = 0; i < M; i++)
		for (unsigned j = 0; j < M; j++)
			f.qi[i * 3 + j] = a[i][M + j];
	return 0;
}

/* Channel c's terms of F_j = sum_c w_j[c] g_c a_c(u, v), added to F (the
 * loops run to 3 with M as a guard, so F, y and Q^-1 stay in registers). */
__device__ __forceinline__ void cu_mono_add(const struct cu_bgeo &g, const struct cu_mfit &f,
					    unsigned c, double u, double2 F[3])
{
	const double *gc = g.cal + 2 * c;
	double ar, ai;
	double2 r;

	cu_steer(g, c, u, f.v, &ar, &ai);
	r = make_double2(ar * gc[0] - ai * gc[1], ar * gc[1] + ai * gc[0]);
#pragma unroll
	for (unsigned j = 0; j < 3; j++)
		if (j < f.M)
			F[j] = cadd(F[j], cmul(f.w[j][c], r));
}

/* J = |F^H Q^-1 y|^2 / (F^H Q^-1 F) of the sums F. */
__device__ __forceinline__ double cu_mono_j(const struct cu_mfit &f, const double2 F[3])
{
	double2 a = { 0.0, 0.0 };
	double d = 0.0;

#pragma unroll
	for (unsigned i = 0; i < 3; i++) {
#pragma unroll
		for (unsigned j = 0; j < 3; j++) {
			if (i >= f.M || j >= f.M)
				continue;
			double2 t = cmul(cconjd(F[i]), f.qi[i * 3 + j]);

			a = cadd(a, cmul(t, f.y[j]));
			d += cmul(t, F[j]).x;
		}
	}
	return d > 0.0 ? (a.x * a.x + a.y * a.y) / d : 0.0;
}

/* J(u), the warp together: the lanes split the channels, a butterfly
 * leaves every lane the sums. */
__device__ double cu_mono_explained(const struct cu_bgeo &g, const struct cu_mfit &f, double u)
{
	unsigned lane = threadIdx.x & 31;
	double2 F[3] = { { 0.0, 0.0 }, { 0.0, 0.0 }, { 0.0, 0.0 } };

	for (unsigned c = lane; c < g.C; c += 32)
		cu_mono_add(g, f, c, u, F);
#pragma unroll
	for (unsigned j = 0; j < 3; j++)
		if (j < f.M)
			F[j] = make_double2(cu_warp_sum(F[j].x), cu_warp_sum(F[j].y));
	return cu_mono_j(f, F);
}

/* The warps' shares of the sums F of each lane's point, in shared memory
 * (k_beam_mono's). */
struct cu_mshare {
	double2 F[CU_MONO_WARPS][32][3];
};

/* J(u) at each lane's point, the block together: the lane's channels of
 * its warp's share (c = warp, warp + CU_MONO_WARPS, ...), then the shares
 * added in warp order, so every warp holds the same totals. Every thread
 * of the block calls it; a lane that is not active gets idle. */
__device__ double cu_mono_explained_lane(const struct cu_bgeo &g, const struct cu_mfit &f, double u,
					 int active, double idle, struct cu_mshare *sh)
{
	unsigned lane = threadIdx.x & 31, wq = threadIdx.x >> 5;
	double2 F[3] = { { 0.0, 0.0 }, { 0.0, 0.0 }, { 0.0, 0.0 } };

	if (active)
		for (unsigned c = wq; c < g.C; c += CU_MONO_WARPS)
			cu_mono_add(g, f, c, u, F);
	__syncthreads();   /* the previous evaluation's shares are read */
#pragma unroll
	for (unsigned j = 0; j < 3; j++)
		sh->F[wq][lane][j] = F[j];
	__syncthreads();
#pragma unroll
	for (unsigned j = 0; j < 3; j++) {
		F[j] = sh->F[0][lane][j];
		for (unsigned q = 1; q < CU_MONO_WARPS; q++)
			F[j] = cadd(F[j], sh->F[q][lane][j]);
	}
	return active ? cu_mono_j(f, F) : idle;
}

__device__ double cu_mono_total(const struct cu_mfit &f)
{
	double e = 0.0;

	for (unsigned i = 0; i < f.M; i++)
		for (unsigned j = 0; j < f.M; j++)
			e += cmul(cmul(cconjd(f.y[i]), f.qi[i * 3 + j]), f.y[j]).x;
	return e;
}

/* One golden-section step on [a, z] with inner points x1 < x2: up (the
 * value at x1 below that at x2) keeps [x1, z], else [a, x2]; returns the
 * step's new point (the new x2, or the new x1). monopulse.c's arithmetic. */
__device__ __forceinline__ double cu_golden_step(double *a, double *z, double *x1, double *x2,
						 int up)
{
	const double gr = CU_GOLDEN;

	if (up) {
		*a = *x1;
		*x1 = *x2;
		*x2 = *a + gr * (*z - *a);
		return *x2;
	}
	*z = *x2;
	*x2 = *x1;
	*x1 = *z - gr * (*z - *a);
	return *x1;
}

/*
 * monopulse.c's maximise, the warp together. The grid: a point per lane.
 * The golden-section steps, CU_MONO_SPEC at a time: a step's new point
 * depends only on the decisions so far, so the points of the next
 * CU_MONO_SPEC steps under every outcome of the undecided comparisons
 * (1 + 2 + ... + 2^(CU_MONO_SPEC-1) = 31, a tree) are evaluated a lane
 * each at once, and the warp then walks the tree by the values, taking
 * exactly the steps, points and decisions of the sequential search.
 */
#define CU_MONO_SPEC 5
__device__ double cu_mono_maximise(const struct cu_bgeo &g, const struct cu_mfit &f, double lo,
				   double hi, int *at_end, struct cu_mshare *sh)
{
	const double gr = CU_GOLDEN;
	double best, a, z, x1, x2, j1, j2, step = (hi - lo) / CU_MONO_GRID;
	unsigned lane = threadIdx.x & 31;
	int kb;

	{   /* the grid, a point per lane; the first of the largest wins */
		int k = (int)lane;

		best = cu_mono_explained_lane(g, f, lo + k * step, k <= CU_MONO_GRID, -2.0, sh);
		kb = k;
		for (int o = 16; o > 0; o >>= 1) {
			double ob = __shfl_xor_sync(0xffffffffu, best, o);
			int ok = __shfl_xor_sync(0xffffffffu, kb, o);

			if (ob > best || (ob == best && ok < kb)) {
				best = ob;
				kb = ok;
			}
		}
	}
	a = lo + (kb > 0 ? kb - 1 : 0) * step;
	z = lo + (kb < CU_MONO_GRID ? kb + 1 : CU_MONO_GRID) * step;
	x1 = z - gr * (z - a);
	x2 = a + gr * (z - a);
	j1 = cu_mono_explained(g, f, x1);
	j2 = cu_mono_explained(g, f, x2);
	static_assert(CU_MONO_ITERS % CU_MONO_SPEC == 0 && (1 << CU_MONO_SPEC) <= 32,
		      "whole rounds of a tree a warp holds");
	for (int i = 0; i < CU_MONO_ITERS; i += CU_MONO_SPEC) {
		double jl, px = 0.0;
		int node = 1, act = lane > 0 && lane < (1u << CU_MONO_SPEC);

		if (act) {
			/* lane = node 1 d1 d2 ... (binary): the point of the step
			 * at its depth after the decisions d1, d2, ... */
			double la = a, lz = z, l1 = x1, l2 = x2;
			int depth = 31 - __clz((int)lane);

			px = cu_golden_step(&la, &lz, &l1, &l2, j1 < j2);
			for (int t = depth - 1; t >= 0; t--)
				px = cu_golden_step(&la, &lz, &l1, &l2, (int)(lane >> t) & 1);
		}
		jl = cu_mono_explained_lane(g, f, px, act, 0.0, sh);
		for (int t = 0; t < CU_MONO_SPEC; t++) {   /* the walk, every lane alike */
			int up = j1 < j2;
			double jn;

			if (t > 0)
				node = 2 * node + up;
			jn = __shfl_sync(0xffffffffu, jl, node);
			(void)cu_golden_step(&a, &z, &x1, &x2, up);
			if (up) {   /* the kept inner point moved to the other side */
				j1 = j2;
				j2 = jn;
			} else {
				j2 = j1;
				j1 = jn;
			}
		}
	}
	a = 0.5 * (a + z);
	*at_end = fabs(a - lo) < 1e-6 * (hi - lo) || fabs(a - hi) < 1e-6 * (hi - lo);
	return a;
}

/* beam_azel_of: NaN outside the visible region. */
__device__ void cu_azel_of(double u, double v, float *az, float *el)
{
	double r2 = u * u + v * v, ce;

	if (!(r2 <= 1.0 + 1e-12)) {
		*az = *el = NAN;
		return;
	}
	v = fmin(1.0, fmax(-1.0, v));
	*el = (float)(asin(v) / CU_DEG);
	ce = sqrt(fmax(0.0, 1.0 - v * v));
	*az = (float)(ce > 0.0 ? asin(fmax(-1.0, fmin(1.0, u / ce))) / CU_DEG : 0.0);
}

/* The fit's beams j0..j1 that nb keeps (b among them), then Q^-1. */
__device__ int cu_mono_load(const struct cu_bgeo &g, struct cu_mfit &f, const double2 *Wd,
			    const double2 *y3, unsigned b, unsigned j0, unsigned j1, const int nb[2],
			    unsigned *ib, double *q_bb)
{
	f.M = 0;
	for (unsigned j = j0; j <= j1; j++) {
		if (j != b && !nb[j > b])
			continue;
		if (j == b)
			*ib = f.M;
		f.w[f.M] = Wd + (size_t)j * g.C;
		f.y[f.M] = y3[j + 1 - b];
		f.M++;
	}
	return cu_mono_qinv(g, f, q_bb, *ib);
}

/* mono_estimate for beam b: u and the quality bits. */
__device__ unsigned cu_mono_estimate(const struct cu_bgeo &g, const double2 *Wd, double up,
				     double vp, unsigned b, const double2 *y3, double noise,
				     double *u_out, struct cu_mshare *sh)
{
	unsigned ib = 0, n, q = 0;
	int nb[2], at_end;
	double ub, vb, lo, hi, u, q_bb, u_end[2], un, vn, edge;
	struct cu_mfit f;

	cu_buv(g, b, up, vp, &ub, &vb);
	nb[0] = cu_mono_neighbour(g, up, vp, b, (long)b - 1);
	nb[1] = cu_mono_neighbour(g, up, vp, b, (long)b + 1);
	if (!nb[0] && !nb[1])
		goto centre;
	{
		double p0 = y3[0].x * y3[0].x + y3[0].y * y3[0].y;
		double p1 = y3[1].x * y3[1].x + y3[1].y * y3[1].y;
		double p2 = y3[2].x * y3[2].x + y3[2].y * y3[2].y;

		n = !nb[1] ? b - 1 : !nb[0] ? b + 1 : p0 > p2 ? b - 1 : b + 1;
		if ((n < b ? p0 : p2) > p1)
			q |= MONO_NOT_PEAK;
	}
	f.v = vb;
	if (cu_mono_load(g, f, Wd, y3, b, nb[0] ? b - 1 : b, nb[1] ? b + 1 : b, nb, &ib, &q_bb) < 0) {
		nb[n < b ? 1 : 0] = 0;
		if (cu_mono_load(g, f, Wd, y3, b, n < b ? n : b, n < b ? b : n, nb, &ib, &q_bb) < 0)
			goto centre;
	}
	for (int side = 0; side < 2; side++) {   /* search_interval */
		if (nb[side]) {
			cu_buv(g, side ? b + 1 : b - 1, up, vp, &un, &vn);
			u_end[side] = un;
		} else {
			cu_buv(g, side ? b - 1 : b + 1, up, vp, &un, &vn);
			u_end[side] = ub - 0.5 * (un - ub);
		}
	}
	edge = sqrt(fmax(0.0, 1.0 - vb * vb));
	lo = fmax(fmin(u_end[0], u_end[1]), -edge);
	hi = fmin(fmax(u_end[0], u_end[1]), edge);
	u = cu_mono_maximise(g, f, lo, hi, &at_end, sh);
	if (at_end)
		q |= MONO_CLAMPED;
	for (int side = 0; side < 2; side++)
		if (!nb[side] && (u - ub) * (u_end[side] - ub) > 0.0)
			q |= MONO_OUTSIDE;
	if (noise > 0.0 && q_bb > 0.0) {
		double misfit = (cu_mono_total(f) - cu_mono_explained(g, f, u)) / (noise / q_bb);

		if (misfit > (f.M == 2 ? 15.14 / 2.0 : 21.11 / 2.0))
			q |= MONO_UNRESOLVED;
	}
	*u_out = u;
	return q;
centre:
	*u_out = ub;
	return q | MONO_NO_NEIGHBOUR;
}

/* One block per record: radar_beam_record's fields. y3: the record's
 * Doppler outputs of beams b - 1, b, b + 1 (k_records, k_dop_cells). The
 * returns are the block's alike (the record's), so every warp reaches
 * every barrier. */
__global__ void __launch_bounds__(32 * CU_MONO_WARPS)
k_beam_mono(struct cu_bgeo g, const double2 *__restrict__ Wd, double up, double vp, int monopulse,
	    const struct chirp_det_header *__restrict__ hdr, struct chirp_det_record *rec,
	    unsigned max_det, const float2 *__restrict__ mono)
{
	__shared__ struct cu_mshare sh;
	unsigned i = blockIdx.x;
	unsigned n = min(hdr->count, max_det), b, q;
	struct chirp_det_record *r = rec + i;
	double2 y3[3];
	double u, v;
	float az, el;

	if (i >= n)
		return;
	b = (unsigned)r->beam;
	if (b >= g.B)
		return;
	for (int j = 0; j < 3; j++)
		y3[j] = make_double2(mono[3 * (size_t)i + j].x, mono[3 * (size_t)i + j].y);
	cu_buv(g, b, up, vp, &u, &v);
	q = monopulse ? cu_mono_estimate(g, Wd, up, vp, b, y3, r->noise, &u, &sh) : 0;
	if (threadIdx.x == 0) {
		cu_azel_of(u, v, &az, &el);
		r->channel = (int32_t)b;
		r->reserved = 0;
		r->azimuth_deg = az;
		r->elevation_deg = el;
		r->angle_quality = (uint16_t)q;
	}
}

cudaError_t cu_beam_mono(const struct cu_beam *bm, const double *Wd, double up, double vp,
			 int monopulse, const struct chirp_det_header *hdr,
			 struct chirp_det_record *rec, unsigned max_det, const float2 *mono,
			 cudaStream_t st)
{
	k_beam_mono<<<max_det, 32 * CU_MONO_WARPS, 0, st>>>(
		bm->g, (const double2 *)Wd, up, vp, monopulse, hdr, rec, max_det, mono);
	return cudaGetLastError();
}

cudaError_t cu_beam_mono_node_set(const struct cu_beam *bm, cudaGraphExec_t gx,
				  cudaGraphNode_t node, const double *Wd, double up, double vp,
				  int monopulse, const struct chirp_det_header *hdr,
				  struct chirp_det_record *rec, unsigned max_det,
				  const float2 *mono)
{
	struct cu_bgeo g = bm->g;
	const double2 *wd = (const double2 *)Wd;
	void *args[] = { &g, &wd, &up, &vp, &monopulse, &hdr, &rec, &max_det, &mono };
	struct cudaKernelNodeParams p = {};

	p.func = (void *)k_beam_mono;
	p.gridDim = dim3(max_det);
	p.blockDim = dim3(32 * CU_MONO_WARPS);
	p.sharedMemBytes = 0;
	p.kernelParams = args;
	p.extra = NULL;
	return cudaGraphExecKernelNodeSetParams(gx, node, &p);
}

enum cu_beam_node cu_beam_node_kind(const void *func)
{
	if (func == (const void *)k_beam_weights)
		return CU_BEAM_NODE_WEIGHTS;
	if (func == (const void *)k_beam_mono)
		return CU_BEAM_NODE_MONO;
	return CU_BEAM_NODE_OTHER;
}

/* ---- entry points ----------------------------------------------------------- */

unsigned cu_beam_count(const struct cu_beam *bm) { return bm->g.B; }
const double *cu_beam_mvdr_weights_d(const struct cu_beam *bm) { return (const double *)bm->d_z; }
unsigned cu_beam_channels(const struct cu_beam *bm) { return bm->g.C; }

void cu_beam_uv_of_pointing(double az_deg, double el_deg, double *up, double *vp)
{
	beam_uv_of(az_deg, el_deg, up, vp);
}

cudaError_t cu_beam_weights(const struct cu_beam *bm, double up, double vp, float2 *W,
			    double2 *Wd, cudaStream_t st)
{
	k_beam_weights<<<cu_bw_grid(bm), CU_BW_THREADS, 0, st>>>(bm->g, up, vp, W, Wd);
	return cudaGetLastError();
}

cudaError_t cu_beam_weights_node_set(const struct cu_beam *bm, cudaGraphExec_t gx,
				     cudaGraphNode_t node, double up, double vp, float2 *W,
				     double2 *Wd)
{
	struct cu_bgeo g = bm->g;
	void *args[] = { &g, &up, &vp, &W, &Wd };
	struct cudaKernelNodeParams p = {};

	p.func = (void *)k_beam_weights;
	p.gridDim = cu_bw_grid(bm);
	p.blockDim = dim3(CU_BW_THREADS);
	p.sharedMemBytes = 0;
	p.kernelParams = args;
	p.extra = NULL;
	return cudaGraphExecKernelNodeSetParams(gx, node, &p);
}

cudaError_t cu_beam_mvdr(const struct cu_beam *bm, const float2 *x, size_t x_ch, size_t x_pulse,
			 double up, double vp, float2 *W, int *status, cudaStream_t st)
{
	unsigned C = bm->g.C, K = bm->mp.snapshots;
	cudaError_t e;

	if (!bm->mvdr)
		return cudaErrorInvalidValue;
	k_mvdr_gather<<<(K * C + 255) / 256, 256, 0, st>>>(x, x_ch, x_pulse, C, K, bm->nr,
							    bm->mp.first_gate, bm->mp.gate_stride,
							    bm->mp.pulse_stride, bm->d_snap);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	k_mvdr_cov<<<C, 64, 0, st>>>(bm->d_snap, C, K, bm->d_cov);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	k_mvdr_solve<<<1, CU_MV_THREADS, bm->solve_smem, st>>>(bm->g, bm->d_cov, bm->mp.loading, up,
								vp, bm->d_z, W, status);
	return cudaGetLastError();
}

/* ---- create / destroy ------------------------------------------------------- */

#define CKC(call)                                                                \
	do {                                                                     \
		cudaError_t e_ = (call);                                         \
		if (e_ != cudaSuccess) {                                         \
			errbuf_set(err, errlen, "%.*s: %s", (int)strcspn(#call, "("), \
				   #call, cudaGetErrorString(e_));               \
			goto fail;                                               \
		}                                                                \
	} while (0)

/* The host copy of d_geo: pos 3C, cal 2C, taper C, uv0 2B. */
static void fill_geo(const struct beam_set *s, double *h)
{
	unsigned B = beam_count(s), C = beam_channels(s);
	const struct array *a = beam_array(s);
	const double *t = beam_taper(s);

	for (unsigned c = 0; c < C; c++) {
		array_position(a, c, h + 3 * c);
		array_cal(a, c, h + 3 * C + 2 * c);
		h[5 * C + c] = t[c];
	}
	for (unsigned b = 0; b < B; b++)
		beam_uv_nominal(s, b, h + 6 * C + 2 * b, h + 6 * C + 2 * b + 1);
}

static int make_mvdr(struct cu_beam *bm, const struct mvdr_params *mp, char *err, size_t errlen)
{
	unsigned B = bm->g.B, C = bm->g.C, K = mp->snapshots;
	struct mvdr *m = mvdr_create(C, bm->P, bm->R, B, mp, err, errlen);   /* its checks */

	if (!m)
		return -EINVAL;
	mvdr_destroy(m);
	bm->mvdr = 1;
	bm->mp = *mp;
	bm->nr = (bm->R - mp->first_gate + mp->gate_stride - 1) / mp->gate_stride;
	bm->solve_smem = (size_t)C * (C + 1) * sizeof(double2) + C * sizeof(double);
	CKC(cudaMalloc(&bm->d_snap, (size_t)K * C * sizeof(float2)));
	CKC(cudaMalloc(&bm->d_cov, (size_t)C * C * sizeof(double2)));
	CKC(cudaMalloc(&bm->d_z, (size_t)B * C * sizeof(double2)));
	CKC(cudaFuncSetAttribute(k_mvdr_solve, cudaFuncAttributeMaxDynamicSharedMemorySize,
				 (int)bm->solve_smem));
	return 0;
fail:
	return -EIO;
}

static int make_blas(struct cu_beam *bm, char *err, size_t errlen)
{
	cublasStatus_t r = cublasCreate(&bm->blas);

	if (r != CUBLAS_STATUS_SUCCESS) {
		errbuf_set(err, errlen, "cublasCreate: %s", cublasGetStatusString(r));
		return -EIO;
	}
	bm->have_blas = 1;
	/* A workspace of our own: cuBLAS then allocates nothing per call
	 * (nor inside a graph's capture). */
	CKC(cudaMalloc(&bm->d_blas_ws, CU_BLAS_WS));
	r = cublasSetWorkspace(bm->blas, bm->d_blas_ws, CU_BLAS_WS);
	if (r != CUBLAS_STATUS_SUCCESS) {
		errbuf_set(err, errlen, "cublasSetWorkspace: %s", cublasGetStatusString(r));
		return -EIO;
	}
	return 0;
fail:
	return -EIO;
}

extern "C" struct cu_beam *cu_beam_create(const struct beam_set *s, const struct mvdr_params *mp,
					  unsigned pulses, unsigned samples, char *err,
					  size_t errlen)
{
	unsigned B = beam_count(s), C = beam_channels(s);
	size_t ngeo = 6 * (size_t)C + 2 * (size_t)B;
	struct cu_beam *bm = (struct cu_beam *)calloc(1, sizeof(*bm));
	double *h = (double *)calloc(ngeo, sizeof(double));

	if (!bm || !h) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	if (pulses < 1 || samples < 1) {
		errbuf_set(err, errlen, "beams on the GPU: pulses %u, samples %u: each must be >= 1",
			   pulses, samples);
		goto fail;
	}
	if ((size_t)C * sizeof(float2) > CU_BF_SMEM) {
		errbuf_set(err, errlen, "beams on the GPU: %u channels: at most %zu", C,
			   (size_t)CU_BF_SMEM / sizeof(float2));
		goto fail;
	}
	bm->P = pulses;
	bm->R = samples;
	bm->g.B = B;
	bm->g.C = C;
	bm->g.k = CU_TWO_PI / beam_wavelength_m(s);
	fill_geo(s, h);
	CKC(cudaMalloc(&bm->d_geo, ngeo * sizeof(double)));
	CKC(cudaMemcpy(bm->d_geo, h, ngeo * sizeof(double), cudaMemcpyHostToDevice));
	bm->g.pos = bm->d_geo;
	bm->g.cal = bm->d_geo + 3 * C;
	bm->g.taper = bm->d_geo + 5 * C;
	bm->g.uv0 = bm->d_geo + 6 * C;
	if (mp && make_mvdr(bm, mp, err, errlen) < 0)
		goto fail;
	free(h);
	return bm;
fail:
	free(h);
	cu_beam_destroy(bm);
	return NULL;
}

extern "C" void cu_beam_destroy(struct cu_beam *bm)
{
	if (!bm)
		return;
	if (bm->have_blas)
		cublasDestroy(bm->blas);
	cudaFree(bm->d_blas_ws);
	cudaFree(bm->d_geo);
	cudaFree(bm->d_snap);
	cudaFree(bm->d_cov);
	cudaFree(bm->d_z);
	free(bm);
}

/* ---- cu_beam_run: one CPI from host memory (tests, tools) ----------------- */

struct cu_run_buf {
	float2 *x, *y, *w;
	int *status;
	cudaStream_t st;
	int have_st;
	cudaGraph_t g;
	cudaGraphExec_t gx;
};

static void run_free(struct cu_run_buf *r)
{
	if (r->gx)
		cudaGraphExecDestroy(r->gx);
	if (r->g)
		cudaGraphDestroy(r->g);
	if (r->have_st)
		cudaStreamDestroy(r->st);
	cudaFree(r->x);
	cudaFree(r->y);
	cudaFree(r->w);
	cudaFree(r->status);
}

/* The conventional weights through a graph: captured at zero pointing,
 * its one node re-pointed, launched. */
static int run_graph_weights(const struct cu_beam *bm, struct cu_run_buf *r, double up, double vp,
			     char *err, size_t errlen)
{
	cudaGraphNode_t node;
	size_t n = 1;

	CKC(cudaStreamBeginCapture(r->st, cudaStreamCaptureModeThreadLocal));
	CKC(cu_beam_weights(bm, 0.0, 0.0, r->w, NULL, r->st));
	CKC(cudaStreamEndCapture(r->st, &r->g));
	CKC(cudaGraphInstantiate(&r->gx, r->g, 0));
	CKC(cudaGraphGetNodes(r->g, &node, &n));
	CKC(cu_beam_weights_node_set(bm, r->gx, node, up, vp, r->w, NULL));
	CKC(cudaGraphLaunch(r->gx, r->st));
	return 0;
fail:
	return -EIO;
}

/* One engine's product into y (poisoned first: NaN where not written). */
static int run_product(struct cu_beam *bm, struct cu_run_buf *r, struct cu_beam_io *io, int eng,
		       float *y, char *err, size_t errlen)
{
	size_t pe = io->y_pulse, rows = (size_t)bm->g.B * bm->P;
	const char *what;
	int rc;

	CKC(cudaMemsetAsync(r->y, 0xff, rows * pe * sizeof(float2), r->st));
	if (eng == CU_BEAM_FUSED) {
		CKC(cu_beam_form(bm, r->w, io, r->st));
	} else if ((rc = cu_beam_gemm(bm, r->w, io, r->st, &what)) < 0) {
		errbuf_set(err, errlen, "cublasCgemm: %s", what ? what : "layout is not one column run");
		return rc;
	}
	CKC(cudaMemcpy2DAsync(y, bm->R * sizeof(float2), r->y, pe * sizeof(float2),
			      bm->R * sizeof(float2), rows, cudaMemcpyDeviceToHost, r->st));
	CKC(cudaStreamSynchronize(r->st));
	return 0;
fail:
	return -EIO;
}

extern "C" int cu_beam_run(struct cu_beam *bm, const struct cu_beam_job *j, char *err,
			   size_t errlen)
{
	struct cu_run_buf r = {};
	unsigned B = bm->g.B, C = bm->g.C, P = bm->P, R = bm->R;
	size_t pe = (size_t)R + j->pad;
	struct cu_beam_io io;
	double up, vp;
	int rc = -EIO, status = 0;

	beam_uv_of(j->az_deg, j->el_deg, &up, &vp);
	CKC(cudaStreamCreateWithFlags(&r.st, cudaStreamNonBlocking));
	r.have_st = 1;
	CKC(cudaMalloc(&r.x, (size_t)C * P * pe * sizeof(float2)));
	CKC(cudaMalloc(&r.y, (size_t)B * P * pe * sizeof(float2)));
	CKC(cudaMalloc(&r.w, (size_t)B * C * sizeof(float2)));
	CKC(cudaMalloc(&r.status, sizeof(int)));
	CKC(cudaMemcpy2DAsync(r.x, pe * sizeof(float2), j->x, R * sizeof(float2),
			      R * sizeof(float2), (size_t)C * P, cudaMemcpyHostToDevice, r.st));
	CKC(cudaMemsetAsync(r.w, 0xff, (size_t)B * C * sizeof(float2), r.st));
	if (bm->mvdr) {
		CKC(cu_beam_mvdr(bm, r.x, P * pe, pe, up, vp, r.w, r.status, r.st));
		CKC(cudaMemcpyAsync(&status, r.status, sizeof(int), cudaMemcpyDeviceToHost, r.st));
		CKC(cudaStreamSynchronize(r.st));
		if (status) {
			errbuf_set(err, errlen, "mvdr: the loaded covariance is not positive definite");
			rc = status;
			goto out;
		}
	} else if (j->graph) {
		if (run_graph_weights(bm, &r, up, vp, err, errlen) < 0)
			goto out;
	} else {
		CKC(cu_beam_weights(bm, up, vp, r.w, NULL, r.st));
	}
	CKC(cudaMemcpyAsync(j->w, r.w, (size_t)B * C * sizeof(float2), cudaMemcpyDeviceToHost, r.st));
	io.x = r.x;
	io.x_ch = (size_t)P * pe;
	io.x_pulse = pe;
	io.y = r.y;
	io.y_ch = (size_t)P * pe;
	io.y_pulse = pe;
	io.P = P;
	io.R = R;
	if (j->y_fused && (rc = run_product(bm, &r, &io, CU_BEAM_FUSED, j->y_fused, err, errlen)) < 0)
		goto out;
	if (j->y_gemm && (rc = run_product(bm, &r, &io, CU_BEAM_GEMM, j->y_gemm, err, errlen)) < 0)
		goto out;
	CKC(cudaStreamSynchronize(r.st));
	rc = 0;
	goto out;
fail:
	rc = -EIO;
out:
	run_free(&r);
	return rc;
}
