/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_kernels.cu — the CUDA backend's kernels (pad, multiply, output) and
 * the host functions that launch them (cu_private.h). Kernels are launched
 * only from here: the other files are compiled without relocatable device
 * code and see the launch functions, not the kernels.
 */
#include "cu_private.h"

__device__ __forceinline__ int cu_nonfinite(float x)
{
	/* Exponent all ones: Inf or NaN. Bit test, immune to fast-math. */
	return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u;
}

/*
 * cf32, one block per pitched fft row (pe elements) that the H2D already
 * filled with R samples: zero [R, nfft) and count the row if it holds
 * NaN/Inf.
 */
__global__ void k_pad_cf32(float2 *__restrict__ fft, size_t pe, unsigned R, unsigned nfft,
			   unsigned *nonfinite)
{
	float2 *row = fft + (size_t)blockIdx.x * pe;
	int bad = 0;

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		float2 v = row[n];

		bad |= cu_nonfinite(v.x) | cu_nonfinite(v.y);
	}
	for (unsigned n = R + threadIdx.x; n < nfft; n += blockDim.x)
		row[n] = make_float2(0.0f, 0.0f);
	bad = __syncthreads_or(bad);
	if (bad && threadIdx.x == 0)
		atomicAdd(nonfinite, 1u);
}

/*
 * cf32 with graphs, one block per row: in (packed rows x R float2) -> fft
 * row (pitch pe elements), zero [R, nfft), count the row if it holds
 * NaN/Inf. The same values as the 2-D copy + k_pad_cf32 of the stream path.
 */
__global__ void k_pad_cf32_packed(const float2 *__restrict__ in, float2 *__restrict__ fft,
				  size_t pe, unsigned R, unsigned nfft, unsigned *nonfinite)
{
	const float2 *src = in + (size_t)blockIdx.x * R;
	float2 *row = fft + (size_t)blockIdx.x * pe;
	int bad = 0;

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		float2 v = src[n];

		bad |= cu_nonfinite(v.x) | cu_nonfinite(v.y);
		row[n] = v;
	}
	for (unsigned n = R + threadIdx.x; n < nfft; n += blockDim.x)
		row[n] = make_float2(0.0f, 0.0f);
	bad = __syncthreads_or(bad);
	if (bad && threadIdx.x == 0)
		atomicAdd(nonfinite, 1u);
}

/*
 * sc16, one block per row: in (packed rows x R short2) -> fft row (pitch pe
 * elements) as value / 32768, zero [R, nfft). Always finite.
 */
__global__ void k_pad_sc16(const short2 *__restrict__ in, float2 *__restrict__ fft,
			   size_t pe, unsigned R, unsigned nfft)
{
	const short2 *src = in + (size_t)blockIdx.x * R;
	float2 *dst = fft + (size_t)blockIdx.x * pe;
	const float s = 1.0f / 32768.0f;   /* exact: a power of two */

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		short2 v = src[n];

		dst[n] = make_float2((float)v.x * s, (float)v.y * s);
	}
	for (unsigned n = R + threadIdx.x; n < nfft; n += blockDim.x)
		dst[n] = make_float2(0.0f, 0.0f);
}

/* fft[r][f] *= filt[f]: x blocks over f, y blocks stride over rows. */
__global__ void k_cmul(float2 *__restrict__ fft, size_t pe, unsigned nfft,
		       size_t rows, const float2 *__restrict__ filt)
{
	unsigned f = blockIdx.x * blockDim.x + threadIdx.x;
	float2 h;

	if (f >= nfft)
		return;
	h = filt[f];
	for (size_t r = blockIdx.y; r < rows; r += gridDim.y) {
		float2 x = fft[r * pe + f];

		fft[r * pe + f] = make_float2(x.x * h.x - x.y * h.y, x.x * h.y + x.y * h.x);
	}
}

/* One block per row: gates 0..R-1 of the fft row -> packed output row. */
template <int MODE>
__global__ void k_out(const float2 *__restrict__ fft, size_t pe, unsigned R,
		      void *__restrict__ out)
{
	size_t row = blockIdx.x;
	const float2 *src = fft + row * pe;

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		float2 y = src[n];

		if (MODE == PC_OUT_COMPLEX) {
			((float2 *)out)[row * R + n] = y;
		} else {
			float p = y.x * y.x + y.y * y.y;

			if (MODE == PC_OUT_MAGNITUDE) {
				/* hypotf only where p overflows, as the CPU backend */
				((float *)out)[row * R + n] = p <= 3.402823466e38f ? sqrtf(p) : hypotf(y.x, y.y);
			} else {
				/* Clamp below, but let NaN through: corruption shows. */
				if (p < PC_POWER_FLOOR)
					p = PC_POWER_FLOOR;
				((float *)out)[row * R + n] = 10.0f * log10f(p);
			}
		}
	}
}

/* The CPI's non-finite count to the host's mapped word, and zero for the
 * next CPI (cu_nf_publish). */
__global__ void k_nf_publish(unsigned *d, unsigned *h)
{
	*h = *d;
	*d = 0;
}

cudaError_t cu_nf_publish(unsigned *d, unsigned *h, cudaStream_t st)
{
	k_nf_publish<<<1, 1, 0, st>>>(d, h);
	return cudaGetLastError();
}

/* Launched with an invalid block size by pc_inject_fault. Never runs. */
__global__ void k_fault(void)
{
}

cudaError_t cu_pad_cf32(float2 *fft, size_t pe, unsigned R, unsigned nfft, unsigned *nonfinite,
			unsigned rows, cudaStream_t st)
{
	k_pad_cf32<<<rows, CU_THREADS, 0, st>>>(fft, pe, R, nfft, nonfinite);
	return cudaGetLastError();
}

cudaError_t cu_pad_cf32_packed(const float2 *in, float2 *fft, size_t pe, unsigned R,
			       unsigned nfft, unsigned *nonfinite, unsigned rows, cudaStream_t st)
{
	k_pad_cf32_packed<<<rows, CU_THREADS, 0, st>>>(in, fft, pe, R, nfft, nonfinite);
	return cudaGetLastError();
}

cudaError_t cu_pad_sc16(const short2 *in, float2 *fft, size_t pe, unsigned R, unsigned nfft,
			unsigned rows, cudaStream_t st)
{
	k_pad_sc16<<<rows, CU_THREADS, 0, st>>>(in, fft, pe, R, nfft);
	return cudaGetLastError();
}

/* k_cmul's grid: rows beyond the grid's 65535 y blocks are strided over
 * by each block. */
static dim3 cu_cmul_grid(unsigned nfft, unsigned rows)
{
	return dim3((nfft + CU_THREADS - 1) / CU_THREADS, rows < 65535 ? rows : 65535);
}

cudaError_t cu_cmul(float2 *fft, size_t pe, unsigned nfft, unsigned rows, const float2 *filt,
		    cudaStream_t st)
{
	k_cmul<<<cu_cmul_grid(nfft, rows), CU_THREADS, 0, st>>>(fft, pe, nfft, rows, filt);
	return cudaGetLastError();
}

/*
 * The same launch as cu_cmul, written into a graph's kernel node: the
 * kernel, grid, block and arguments k_cmul is launched with, filt the
 * only one that changes. The runtime copies the argument values here, so
 * they may live on this stack; the launches of gx already queued keep
 * their filter.
 */
cudaError_t cu_cmul_node_set(cudaGraphExec_t gx, cudaGraphNode_t node, float2 *fft, size_t pe,
			     unsigned nfft, unsigned rows, const float2 *filt)
{
	size_t nrows = rows;   /* k_cmul's rows is a size_t */
	void *args[] = { &fft, &pe, &nfft, &nrows, &filt };
	struct cudaKernelNodeParams p = {};

	p.func = (void *)k_cmul;
	p.gridDim = cu_cmul_grid(nfft, rows);
	p.blockDim = dim3(CU_THREADS);
	p.sharedMemBytes = 0;
	p.kernelParams = args;
	p.extra = NULL;
	return cudaGraphExecKernelNodeSetParams(gx, node, &p);
}

cudaError_t cu_out(enum pc_output mode, const float2 *fft, size_t pe, unsigned R, void *out,
		   unsigned rows, cudaStream_t st)
{
	switch (mode) {
	case PC_OUT_COMPLEX:
		k_out<PC_OUT_COMPLEX><<<rows, CU_THREADS, 0, st>>>(fft, pe, R, out);
		break;
	case PC_OUT_MAGNITUDE:
		k_out<PC_OUT_MAGNITUDE><<<rows, CU_THREADS, 0, st>>>(fft, pe, R, out);
		break;
	case PC_OUT_POWER_DB:
		k_out<PC_OUT_POWER_DB><<<rows, CU_THREADS, 0, st>>>(fft, pe, R, out);
		break;
	default:   /* a map or none: the radar chain's output (cu_radar.cu) */
		return cudaErrorInvalidValue;
	}
	return cudaGetLastError();
}

/* More than 1024 threads per block: an invalid configuration. */
cudaError_t cu_fault(cudaStream_t st)
{
	k_fault<<<1, 4096, 0, st>>>();
	return cudaGetLastError();
}

cudaError_t cu_kernels_attributes(struct cudaFuncAttributes *fa)
{
	return cudaFuncGetAttributes(fa, k_cmul);
}
