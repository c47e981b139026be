/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_fused.cu — pulse compression as one kernel per row: the row's R
 * samples are read once from global memory, zero-padded, transformed,
 * multiplied by the filter, transformed back and written once, in the
 * output mode. Everything between the read and the write stays in shared
 * memory: against pad + FFT + multiply + IFFT + output (five launches,
 * each a read and a write of the whole CPI) the CPI crosses device memory
 * twice instead of ten times.
 *
 * THE TRANSFORM
 *   A Stockham autosort FFT of nfft = r_0 r_1 ... r_{P-1} points (radices
 *   2 to 10, 12 and 16, the cheapest such plan), P passes over two shared buffers of
 *   nfft float2. Pass p (radix r, Ns = r_0 ... r_{p-1}) takes, for each
 *   butterfly j < nfft/r, the r points j + m nfft/r, multiplies point m by
 *   W^{m k} (k = j mod Ns, W = exp(-2 pi i / (Ns r))), transforms them
 *   (exp(-2 pi i / r)) and stores them at (j - k) r + k + m Ns: natural
 *   order in, natural order out.
 *
 *   The inverse uses ifft(x) = conj(fft(conj(x))) with the radices in the
 *   reverse order. The forward's last pass and the inverse's first then
 *   treat the very same points j + m nfft/r in the same thread: the filter
 *   multiply and the conjugate go between them in registers, and the pass
 *   in between needs no trip through shared memory. The first pass reads
 *   global memory (zero beyond R: the padding is never stored), the last
 *   writes it (gates < R only, converted to the output mode).
 *
 *   Twiddles: W^k from a table per direction made once at create in double
 *   precision (Ns entries per pass, read through the read-only cache), its
 *   powers W^{mk} by multiplication in the butterfly. The fixed twiddles inside a composite
 *   or 16 butterfly are compile-time constants.
 *
 * WHEN
 *   tune.cuda_fused: AUTO takes it when nfft factors into those radices in
 *   at most CU_FMAX_PASS passes of at least two and the two buffers (17/16
 *   nfft float2 each, cf_pad) fit in the device's shared memory per block
 *   (on an H100, nfft up to 13 000 or so); ON requires it; OFF never.
 *   The result is the definition in chirp/pc.h, held to the CPU backend
 *   like the cuFFT path (tests/test_pc_cuda.c).
 */
#include "cu_private.h"
extern "C" {
#include "log.h"
}

#include <math.h>
#include <stdio.h>

/* ---- compile-time twiddles ------------------------------------------------ */

/* sin and cos by Taylor series, |x| <= pi: exact to double rounding. For
 * the constants inside a butterfly, evaluated by the compiler. */
__host__ __device__ constexpr double cf_sin(double x)
{
	double t = x, s = x;

	for (int i = 1; i < 18; i++) {
		t *= -x * x / ((2.0 * i) * (2.0 * i + 1.0));
		s += t;
	}
	return s;
}

__host__ __device__ constexpr double cf_cos(double x)
{
	double t = 1.0, s = 1.0;

	for (int i = 1; i < 18; i++) {
		t *= -x * x / ((2.0 * i - 1.0) * (2.0 * i));
		s += t;
	}
	return s;
}

/* exp(-2 pi i m / n) for 0 <= m < n, the angle first brought to [-pi, pi]. */
__host__ __device__ constexpr float2 cf_w(int m, int n)
{
	double a = -2.0 * 3.14159265358979323846 * (double)(m % n) / (double)n;

	if (a < -3.14159265358979323846)
		a += 2.0 * 3.14159265358979323846;
	return float2{ (float)cf_cos(a), (float)cf_sin(a) };
}

/* ---- complex helpers ------------------------------------------------------ */

__device__ __forceinline__ float2 cadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 csub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
__device__ __forceinline__ float2 cmul(float2 a, float2 b)
{
	return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
/* a * (-i) */
__device__ __forceinline__ float2 cmnj(float2 a) { return make_float2(a.y, -a.x); }
__device__ __forceinline__ float2 cconj(float2 a) { return make_float2(a.x, -a.y); }

/* ---- butterflies: v[k] = sum_n v[n] exp(-2 pi i n k / R), in place ------- */

template <int R> struct cf_dft;

template <> struct cf_dft<2> {
	static __device__ __forceinline__ void run(float2 *v)
	{
		float2 a = v[0], b = v[1];

		v[0] = cadd(a, b);
		v[1] = csub(a, b);
	}
};

template <> struct cf_dft<4> {
	static __device__ __forceinline__ void run(float2 *v)
	{
		float2 t0 = cadd(v[0], v[2]), t1 = csub(v[0], v[2]);
		float2 t2 = cadd(v[1], v[3]), t3 = cmnj(csub(v[1], v[3]));

		v[0] = cadd(t0, t2);
		v[2] = csub(t0, t2);
		v[1] = cadd(t1, t3);
		v[3] = csub(t1, t3);
	}
};

/*
 * Odd R: pairs n and R-n share their cosines and sines, halving the
 * multiplies. X[k] = v0 + sum_n (s_n cos - i d_n sin), X[R-k] its mirror.
 */
template <int R> struct cf_dft_odd {
	static __device__ __forceinline__ void run(float2 *v)
	{
		constexpr int H = (R - 1) / 2;
		float2 s[H], d[H], x0 = v[0], sum = v[0];

#pragma unroll
		for (int n = 1; n <= H; n++) {
			s[n - 1] = cadd(v[n], v[R - n]);
			d[n - 1] = csub(v[n], v[R - n]);
			sum = cadd(sum, s[n - 1]);
		}
		v[0] = sum;
#pragma unroll
		for (int k = 1; k <= H; k++) {
			float2 re = x0, im = make_float2(0.0f, 0.0f);

#pragma unroll
			for (int n = 1; n <= H; n++) {
				/* w = exp(-2 pi i n k / R) = c - i sn */
				const float c = cf_w(n * k, R).x, sn = -cf_w(n * k, R).y;

				re.x += s[n - 1].x * c;
				re.y += s[n - 1].y * c;
				im.x += d[n - 1].x * sn;
				im.y += d[n - 1].y * sn;
			}
			/* -i im: (im.y, -im.x) */
			v[k] = make_float2(re.x + im.y, re.y - im.x);
			v[R - k] = make_float2(re.x - im.y, re.y + im.x);
		}
	}
};
template <> struct cf_dft<3> : cf_dft_odd<3> {};
template <> struct cf_dft<5> : cf_dft_odd<5> {};
template <> struct cf_dft<7> : cf_dft_odd<7> {};

/*
 * R = A B, Cooley-Tukey in registers: n = B n1 + n2, k = k1 + A k2.
 * B transforms of A points, the twiddles W_R^{n2 k1}, A transforms of B.
 */
template <int A, int B> struct cf_dft_ab {
	static __device__ __forceinline__ void run(float2 *v)
	{
		constexpr int R = A * B;
		float2 t[R];   /* t[n2 * A + k1] */

#pragma unroll
		for (int n2 = 0; n2 < B; n2++) {
			float2 u[A];

#pragma unroll
			for (int n1 = 0; n1 < A; n1++)
				u[n1] = v[B * n1 + n2];
			cf_dft<A>::run(u);
#pragma unroll
			for (int k1 = 0; k1 < A; k1++)
				t[n2 * A + k1] = (n2 * k1) % R == 0 ? u[k1] : cmul(u[k1], cf_w(n2 * k1, R));
		}
#pragma unroll
		for (int k1 = 0; k1 < A; k1++) {
			float2 u[B];

#pragma unroll
			for (int n2 = 0; n2 < B; n2++)
				u[n2] = t[n2 * A + k1];
			cf_dft<B>::run(u);
#pragma unroll
			for (int k2 = 0; k2 < B; k2++)
				v[k1 + A * k2] = u[k2];
		}
	}
};
template <> struct cf_dft<8> : cf_dft_ab<2, 4> {};
template <> struct cf_dft<6> : cf_dft_ab<2, 3> {};
template <> struct cf_dft<9> : cf_dft_ab<3, 3> {};
template <> struct cf_dft<10> : cf_dft_ab<2, 5> {};
template <> struct cf_dft<12> : cf_dft_ab<3, 4> {};
template <> struct cf_dft<16> : cf_dft_ab<4, 4> {};

/* ---- the kernel ----------------------------------------------------------- */

/* What one launch needs, by value (kernel parameter space). */
struct cu_fargs {
	const void *in;          /* rows x istride samples (cf32 / sc16)   */
	void *out;               /* rows x ostride samples (out mode)      */
	size_t istride, ostride; /* elements between rows                  */
	const float2 *filt;      /* nfft: g conj(H) / nfft                 */
	const float2 *tw;        /* twiddle tables: forward at tw_f[p],
				    inverse at tw_i[p]                     */
	unsigned *nonfinite;     /* rows with NaN/Inf (cf32), or NULL      */
	unsigned n, gates, npass;      /* nfft, R, passes */
	unsigned char rad[CU_FMAX_PASS];    /* forward order */
	unsigned ns_f[CU_FMAX_PASS], ns_i[CU_FMAX_PASS];     /* Ns per pass */
	unsigned mg_f[CU_FMAX_PASS], mg_i[CU_FMAX_PASS];     /* ceil(2^32 / Ns) */
	unsigned tw_f[CU_FMAX_PASS], tw_i[CU_FMAX_PASS];     /* table offsets */
};

template <int IN> struct cf_in;
template <> struct cf_in<PC_FMT_CF32> {
	typedef float2 T;
	static __device__ __forceinline__ float2 get(const float2 *p, int *bad)
	{
		float2 v = *p;

		/* exponent all ones: Inf or NaN, a bit test immune to fast math */
		*bad |= (__float_as_uint(v.x) & 0x7f800000u) == 0x7f800000u;
		*bad |= (__float_as_uint(v.y) & 0x7f800000u) == 0x7f800000u;
		return v;
	}
};
template <> struct cf_in<PC_FMT_SC16> {
	typedef short2 T;
	static __device__ __forceinline__ float2 get(const short2 *p, int *)
	{
		short2 v = *p;
		const float s = 1.0f / 32768.0f;   /* exact: a power of two */

		return make_float2((float)v.x * s, (float)v.y * s);
	}
};

template <int OUT> __device__ __forceinline__ void cf_put(void *out, size_t i, float2 y)
{
	if (OUT == PC_OUT_COMPLEX) {
		((float2 *)out)[i] = y;
	} else {
		float p = y.x * y.x + y.y * y.y;

		if (OUT == PC_OUT_MAGNITUDE) {
			/* hypotf only where p overflows, as the CPU backend */
			((float *)out)[i] = p <= 3.402823466e38f ? sqrtf(p) : hypotf(y.x, y.y);
		} else {
			/* clamp below, but let NaN through: corruption shows */
			if (p < PC_POWER_FLOOR)
				p = PC_POWER_FLOOR;
			((float *)out)[i] = 10.0f * log10f(p);
		}
	}
}

/* j = q Ns + k with the magic mg = ceil(2^32 / Ns): exact for j, Ns < 2^16. */
__device__ __forceinline__ unsigned cf_quot(unsigned j, unsigned ns, unsigned mg)
{
	return ns == 1 ? j : __umulhi(j, mg);
}

/*
 * Points m of butterfly k times W^{m k}: W^k from the pass's table, its
 * powers by multiplication (one load per butterfly instead of r - 1: the
 * loads share the L1 pipe with shared memory, the busiest unit here; the
 * products add about r float roundings, far below the test tolerance).
 */
template <int R>
__device__ __forceinline__ void cf_twiddle(float2 *v, const float2 *__restrict__ tw, unsigned k)
{
	float2 w, wm;

	if (k == 0)
		return;
	w = __ldg(tw + k);
	wm = w;
	v[1] = cmul(v[1], w);
#pragma unroll
	for (int m = 2; m < R; m++) {
		wm = cmul(wm, w);
		v[m] = cmul(v[m], wm);
	}
}

/*
 * Shared memory is indexed with one pad element after every 16 (CF_PAD):
 * a pass whose butterflies store r consecutive points (Ns = 1) then hits
 * distinct banks for r = 8 and 16, instead of 8 and 16 threads on one.
 */
__device__ __forceinline__ unsigned cf_pad(unsigned i) { return i + (i >> 4); }
#define CF_PADDED(n) ((n) + ((n) >> 4) + 1)

/* A middle pass: shared src -> shared dst. */
template <int R>
__device__ void cf_pass(const float2 *__restrict__ src, float2 *__restrict__ dst, unsigned n,
			unsigned ns, unsigned mg,
			const float2 *__restrict__ tw)
{
	unsigned nb = n / R;

	for (unsigned j = threadIdx.x; j < nb; j += blockDim.x) {
		float2 v[R];
		unsigned q = cf_quot(j, ns, mg), k = j - q * ns, d = q * ns * R + k;

#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = src[cf_pad(j + m * nb)];
		cf_twiddle<R>(v, tw, k);
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++)
			dst[cf_pad(d + m * ns)] = v[m];
	}
}

/* The first pass (Ns = 1): global row -> shared dst, zero beyond R. */
template <int IN, int R>
__device__ int cf_first(const typename cf_in<IN>::T *__restrict__ x, unsigned Rg, float2 *dst,
			unsigned n)
{
	unsigned nb = n / R;
	int bad = 0;

	for (unsigned j = threadIdx.x; j < nb; j += blockDim.x) {
		float2 v[R];

#pragma unroll
		for (int m = 0; m < R; m++) {
			unsigned i = j + m * nb;

			v[m] = i < Rg ? cf_in<IN>::get(x + i, &bad) : make_float2(0.0f, 0.0f);
		}
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++)
			dst[cf_pad(j * R + m)] = v[m];
	}
	return bad;
}

/*
 * The forward's last pass (Ns = n/R, so k = j), the filter and conjugate,
 * and the inverse's first pass (Ns = 1) on the same points.
 */
template <int R>
__device__ void cf_turn(const float2 *src, float2 *dst, unsigned n, const float2 *__restrict__ tw,
			const float2 *__restrict__ filt)
{
	unsigned nb = n / R;

	for (unsigned j = threadIdx.x; j < nb; j += blockDim.x) {
		float2 v[R];

#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = src[cf_pad(j + m * nb)];
		cf_twiddle<R>(v, tw, j);
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = cconj(cmul(v[m], __ldg(filt + j + m * nb)));
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++)
			dst[cf_pad(j * R + m)] = v[m];
	}
}

/* The inverse's last pass (Ns = n/R): shared src -> gates < Rg of the
 * output row, conjugated back and converted. */
template <int OUT, int R>
__device__ void cf_last(const float2 *src, void *out, size_t o0, unsigned n, unsigned Rg,
			const float2 *__restrict__ tw)
{
	unsigned nb = n / R;

	for (unsigned j = threadIdx.x; j < nb; j += blockDim.x) {
		float2 v[R];

		if (j >= Rg)   /* every point of this butterfly is a gate >= R */
			break;
#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = src[cf_pad(j + m * nb)];
		cf_twiddle<R>(v, tw, j);
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++) {
			unsigned i = j + m * nb;

			if (i < Rg)
				cf_put<OUT>(out, o0 + i, cconj(v[m]));
		}
	}
}

/*
 * Dispatch on a pass's radix (uniform over the block: no divergence). The
 * small variant (SMALL = 1) has no 12 or 16: its largest butterfly fits in
 * the registers two blocks per SM leave each thread.
 */
#define CF_RADIX_SWITCH(r, CALL)                                               \
	switch (r) {                                                           \
	case 2: CALL(2); break;                                                \
	case 3: CALL(3); break;                                                \
	case 4: CALL(4); break;                                                \
	case 5: CALL(5); break;                                                \
	case 6: CALL(6); break;                                                \
	case 7: CALL(7); break;                                                \
	case 8: CALL(8); break;                                                \
	case 9: CALL(9); break;                                                \
	case 10: CALL(10); break;                                              \
	case 12: if constexpr (!SMALL) CALL(12); break;                        \
	case 16: if constexpr (!SMALL) CALL(16); break;                        \
	}

#define CF_SMALL_THREADS 576     /* the small variant: 2 blocks of at most
				    this many threads per SM              */

/* One block per row; dynamic shared memory 2 CF_PADDED(n) float2. */
template <int IN, int OUT, int SMALL>
__global__ void __launch_bounds__(SMALL ? CF_SMALL_THREADS : 1024, SMALL ? 2 : 1)
k_fused(const struct cu_fargs a)
{
	extern __shared__ float2 cf_sm[];
	float2 *src = cf_sm, *dst = cf_sm + CF_PADDED(a.n), *t;
	const unsigned P = a.npass, row = blockIdx.x;
	const typename cf_in<IN>::T *x = (const typename cf_in<IN>::T *)a.in + (size_t)row * a.istride;
	int bad = 0;

#define CF_FIRST(K) bad = cf_first<IN, K>(x, a.gates, src, a.n)
	CF_RADIX_SWITCH(a.rad[0], CF_FIRST);
	__syncthreads();
	for (unsigned p = 1; p + 1 < P; p++) {
#define CF_MID_F(K) cf_pass<K>(src, dst, a.n, a.ns_f[p], a.mg_f[p], a.tw + a.tw_f[p])
		CF_RADIX_SWITCH(a.rad[p], CF_MID_F);
		__syncthreads();
		t = src, src = dst, dst = t;
	}
#define CF_TURN(K) cf_turn<K>(src, dst, a.n, a.tw + a.tw_f[P - 1], a.filt)
	CF_RADIX_SWITCH(a.rad[P - 1], CF_TURN);
	__syncthreads();
	t = src, src = dst, dst = t;
	for (unsigned p = 1; p + 1 < P; p++) {
#define CF_MID_I(K) cf_pass<K>(src, dst, a.n, a.ns_i[p], a.mg_i[p], a.tw + a.tw_i[p])
		CF_RADIX_SWITCH(a.rad[P - 1 - p], CF_MID_I);
		__syncthreads();
		t = src, src = dst, dst = t;
	}
#define CF_LAST(K) cf_last<OUT, K>(src, a.out, (size_t)row * a.ostride, a.n, a.gates, a.tw + a.tw_i[P - 1])
	CF_RADIX_SWITCH(a.rad[0], CF_LAST);
	if (IN == PC_FMT_CF32 && a.nonfinite) {
		bad = __syncthreads_or(bad);
		if (bad && threadIdx.x == 0)
			atomicAdd(a.nonfinite, 1u);
	}
}

/* ---- the plan (host) ------------------------------------------------------ */

struct cu_fused {
	unsigned n, npass, threads;
	int small;                           /* the small variant (k_fused) */
	size_t smem;                         /* bytes per block              */
	unsigned char rad[CU_FMAX_PASS];
	float2 *d_tw;                        /* 2 n entries                  */
	unsigned ns_f[CU_FMAX_PASS], ns_i[CU_FMAX_PASS];
	unsigned tw_f[CU_FMAX_PASS], tw_i[CU_FMAX_PASS];
};

template <int SMALL> static const void *cf_kernel_v(enum pc_format in, enum pc_output out)
{
	if (in == PC_FMT_SC16) {
		if (out == PC_OUT_MAGNITUDE)
			return (const void *)k_fused<PC_FMT_SC16, PC_OUT_MAGNITUDE, SMALL>;
		if (out == PC_OUT_POWER_DB)
			return (const void *)k_fused<PC_FMT_SC16, PC_OUT_POWER_DB, SMALL>;
		return (const void *)k_fused<PC_FMT_SC16, PC_OUT_COMPLEX, SMALL>;
	}
	if (out == PC_OUT_MAGNITUDE)
		return (const void *)k_fused<PC_FMT_CF32, PC_OUT_MAGNITUDE, SMALL>;
	if (out == PC_OUT_POWER_DB)
		return (const void *)k_fused<PC_FMT_CF32, PC_OUT_POWER_DB, SMALL>;
	return (const void *)k_fused<PC_FMT_CF32, PC_OUT_COMPLEX, SMALL>;
}

static const void *cf_kernel(const struct cu_fused *f, enum pc_format in, enum pc_output out)
{
	return f->small ? cf_kernel_v<1>(in, out) : cf_kernel_v<0>(in, out);
}

/* The butterflies the kernel has (cf_dft), largest first. */
static const unsigned cf_radices[] = { 16, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2 };

/* A plan's threads (its largest pass's butterflies in warps, at most
 * tmax) and cost: per pass the butterflies each thread runs times the
 * radix, plus a barrier's worth. */
static unsigned cf_cost(unsigned n, const unsigned char *rad, unsigned np, unsigned tmax,
			unsigned *threads)
{
	unsigned c = 0, maxb = 0;

	for (unsigned p = 0; p < np; p++)
		if (n / rad[p] > maxb)
			maxb = n / rad[p];
	*threads = (maxb + 31) / 32 * 32;
	if (*threads > tmax)
		*threads = tmax;
	for (unsigned p = 0; p < np; p++)
		c += (n / rad[p] + *threads - 1) / *threads * rad[p] + 8;
	return c;
}

/* A plan being searched for: the best so far, and its limits. */
struct cf_plan {
	unsigned char rad[CU_FMAX_PASS];
	unsigned np, cost, threads;
	unsigned tmax;           /* threads per block at most              */
};

/*
 * The cheapest way to write m (what is left of n) as radices no larger
 * than maxr (each multiset once), after the np in rad[]: kept in *best. A
 * search over at most a few hundred plans, once at create.
 */
static void cf_search(unsigned n, unsigned m, unsigned maxr, unsigned char *rad, unsigned np,
		      struct cf_plan *best)
{
	unsigned t, c;

	if (m == 1) {
		if (np < 2)
			return;
		c = cf_cost(n, rad, np, best->tmax, &t);
		if (best->np == 0 || c < best->cost) {
			memcpy(best->rad, rad, np);
			best->np = np;
			best->cost = c;
			best->threads = t;
		}
		return;
	}
	if (np == CU_FMAX_PASS)
		return;
	for (size_t i = 0; i < sizeof(cf_radices) / sizeof(cf_radices[0]); i++) {
		unsigned r = cf_radices[i];

		if (r > maxr || m % r != 0)
			continue;
		rad[np] = (unsigned char)r;
		cf_search(n, m / r, r, rad, np + 1, best);
	}
}

/*
 * The plan for n: the small variant (radices up to 10, two blocks per SM,
 * at most two butterflies per thread and pass) where two blocks' shared
 * memory fits on an SM, else the large one (up to 16, one block of up to
 * 1024 threads). 0 when n cannot be planned.
 */
static int cf_plan(unsigned n, size_t smem, int sm_bytes, struct cf_plan *pl, int *small)
{
	unsigned char rad[CU_FMAX_PASS];
	struct cf_plan s = { {0}, 0, 0, 0, CF_SMALL_THREADS };
	int ok = 1;

	cf_search(n, n, 10, rad, 0, &s);
	for (unsigned p = 0; p < s.np; p++)
		ok &= (n / s.rad[p] + s.threads - 1) / s.threads <= 2;
	if (s.np && ok && 2 * (smem + 1024) <= (size_t)sm_bytes) {
		*pl = s;
		*small = 1;
		return 1;
	}
	memset(pl, 0, sizeof(*pl));
	pl->tmax = 1024;
	cf_search(n, n, 16, rad, 0, pl);
	*small = 0;
	return pl->np != 0;
}

/* The twiddles of one direction's passes, W^k for k < Ns at tw + off[p]
 * (at most n in all); Ns per pass. */
static void cf_tables(unsigned n, const unsigned char *rad, unsigned np, int reverse,
		      float2 *tw, unsigned *ns, unsigned *off)
{
	unsigned s = 1, o = 0;

	for (unsigned q = 0; q < np; q++) {
		unsigned r = rad[reverse ? np - 1 - q : q];

		ns[q] = s;
		off[q] = o;
		for (unsigned k = 0; k < s; k++) {
			double a = -2.0 * M_PI * (double)k / (double)(s * r);

			tw[o++] = make_float2((float)cos(a), (float)sin(a));
		}
		s *= r;
	}
}

static void cf_describe(const struct cu_fused *f, char *buf, size_t len)
{
	int k = snprintf(buf, len, "fused (%u = ", f->n);

	for (unsigned p = 0; p < f->npass && k > 0 && (size_t)k < len; p++)
		k += snprintf(buf + k, len - (size_t)k, "%s%u", p ? "x" : "", f->rad[p]);
	if (k > 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, ")");
}

/*
 * Decide between the fused kernel and cuFFT (be->fused, be->fft_engine)
 * and make the fused kernel's tables. 0; -ENOTSUP when want is ON and the
 * size cannot be fused (why says so); -EIO on a CUDA failure (recorded).
 */
int cu_fused_create(struct cu_be *be, enum pc_switch want, char *why, size_t whylen)
{
	struct cu_fused *f;
	struct cf_plan pl;
	unsigned n = (unsigned)be->nfft;
	size_t smem = 2 * CF_PADDED(be->nfft) * sizeof(float2);
	int smax = 0, sm_bytes = 0, small = 0, planned = 0, rc = 0;
	float2 *tw = NULL;
	const enum pc_output outs[3] = { PC_OUT_COMPLEX, PC_OUT_MAGNITUDE, PC_OUT_POWER_DB };

	snprintf(be->fft_engine, sizeof(be->fft_engine), "cufft");
	if (want == PC_SWITCH_OFF)
		return 0;
	CK(cudaDeviceGetAttribute(&smax, cudaDevAttrMaxSharedMemoryPerBlockOptin, be->dev));
	CK(cudaDeviceGetAttribute(&sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, be->dev));
	if (be->nfft <= 65535)
		planned = cf_plan(n, smem, sm_bytes, &pl, &small);
	if (!planned || smem > (size_t)smax) {
		if (want == PC_SWITCH_ON) {
			snprintf(why, whylen, "cuda_fused = on: nfft %zu %s", be->nfft,
				 !planned ? "does not factor into 2, 3, 5 and 7 in at most 16 passes"
					  : "does not fit in the GPU's shared memory twice");
			return -ENOTSUP;
		}
		return 0;
	}
	f = (struct cu_fused *)calloc(1, sizeof(*f));
	tw = (float2 *)malloc(2 * be->nfft * sizeof(float2));
	if (!f || !tw) {
		free(f);
		free(tw);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	be->fused = f;
	f->n = n;
	f->npass = pl.np;
	f->threads = pl.threads;
	f->small = small;
	memcpy(f->rad, pl.rad, pl.np);
	f->smem = smem;
	cf_tables(n, f->rad, f->npass, 0, tw, f->ns_f, f->tw_f);
	cf_tables(n, f->rad, f->npass, 1, tw + n, f->ns_i, f->tw_i);
	for (unsigned p = 0; p < f->npass; p++)
		f->tw_i[p] += n;
	CK(cudaMalloc((void **)&f->d_tw, 2 * be->nfft * sizeof(float2)));
	CK(cudaMemcpy(f->d_tw, tw, 2 * be->nfft * sizeof(float2), cudaMemcpyHostToDevice));
	/* the shared memory a block asks for; the small variant's two blocks
	 * per SM as the carveout (the rest of the SM's L1 caches twiddles
	 * and the filter) */
	for (int i = 0; i < 2; i++)
		for (int o = 0; o < 3; o++) {
			const void *k = cf_kernel(f, i ? PC_FMT_SC16 : PC_FMT_CF32, outs[o]);

			CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
						(int)f->smem));
			if (small)
				CK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
							(int)((200 * (f->smem + 1024) + sm_bytes - 1) /
							      sm_bytes)));
		}
	cf_describe(f, be->fft_engine, sizeof(be->fft_engine));
out:
	free(tw);
	return rc;
}

void cu_fused_free(struct cu_be *be)
{
	if (!be->fused)
		return;
	(void)cudaFree(be->fused->d_tw);
	free(be->fused);
	be->fused = NULL;
}

/* The kernel, its arguments and its geometry for one launch. */
static void cf_args(const struct cu_be *be, const struct cu_fjob *j, struct cu_fargs *a)
{
	const struct cu_fused *f = be->fused;

	memset(a, 0, sizeof(*a));
	a->in = j->in;
	a->out = j->out;
	a->istride = j->istride;
	a->ostride = j->ostride;
	a->filt = j->filt;
	a->tw = f->d_tw;
	a->nonfinite = be->in_format == PC_FMT_CF32 ? j->nonfinite : NULL;
	a->n = f->n;
	a->gates = (unsigned)be->R;
	a->npass = f->npass;
	for (unsigned p = 0; p < f->npass; p++) {
		a->rad[p] = f->rad[p];
		a->ns_f[p] = f->ns_f[p];
		a->ns_i[p] = f->ns_i[p];
		/* ceil(2^32 / Ns); Ns = 1 is special-cased in the kernel */
		a->mg_f[p] = f->ns_f[p] > 1 ? (unsigned)((0x100000000ull + f->ns_f[p] - 1) / f->ns_f[p]) : 0;
		a->mg_i[p] = f->ns_i[p] > 1 ? (unsigned)((0x100000000ull + f->ns_i[p] - 1) / f->ns_i[p]) : 0;
		a->tw_f[p] = f->tw_f[p];
		a->tw_i[p] = f->tw_i[p];
	}
}

cudaError_t cu_fused_launch(const struct cu_be *be, const struct cu_fjob *j, cudaStream_t st)
{
	struct cu_fargs a;
	void *args[] = { &a };

	cf_args(be, j, &a);
	return cudaLaunchKernel(cf_kernel(be->fused, be->in_format, j->mode), dim3(j->rows),
				dim3(be->fused->threads), args, be->fused->smem, st);
}

/*
 * The same launch, written into a graph's kernel node (captured from
 * cu_fused_launch with the same job but another filter): the runtime
 * copies the argument values, so they may live on this stack.
 */
cudaError_t cu_fused_node_set(const struct cu_be *be, cudaGraphExec_t gx, cudaGraphNode_t node,
			      const struct cu_fjob *j)
{
	struct cu_fargs a;
	void *args[] = { &a };
	struct cudaKernelNodeParams p = {};

	cf_args(be, j, &a);
	p.func = (void *)cf_kernel(be->fused, be->in_format, j->mode);
	p.gridDim = dim3(j->rows);
	p.blockDim = dim3(be->fused->threads);
	p.sharedMemBytes = (unsigned)be->fused->smem;
	p.kernelParams = args;
	p.extra = NULL;
	return cudaGraphExecKernelNodeSetParams(gx, node, &p);
}
