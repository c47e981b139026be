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
 *   nfft = r_0 r_1 ... r_{P-1} (radices 2 to 10, 12 and 16;
 *   the plan and the kernel variant are chosen at create, cf_plan), in
 *   place in ONE shared buffer. Stage q works on blocks of L_q = nfft /
 *   (r_0 ... r_{q-1}) points, in groups of r_q points at stride s_q = L_q /
 *   r_q: group (block b, j < s_q) is the points b L_q + j + m s_q. Each
 *   thread reads its groups and writes them back to the same places, so a
 *   stage needs no second buffer and one barrier after it.
 *
 *   Forward, decimation in frequency: stages 0 .. P-1, each a transform
 *   of the group (exp(-2 pi i / r)) and then point m times W_{L_q}^{m j}.
 *   The spectrum comes out digit-reversed (cf_permute); each mode's filter
 *   is stored in that order at create, so the multiply needs no
 *   reordering. Inverse: ifft(y) = conj(fft(conj(y))), with the forward's
 *   transpose, decimation in time: stages P-1 .. 0, each the same
 *   twiddles first and then the transform; it takes the digit-reversed
 *   spectrum and gives natural order. The forward's last stage and the
 *   inverse's first are the same groups of r consecutive points without
 *   twiddles: the filter multiply and conjugate go between them in
 *   registers (cf_turn). The first stage reads global memory (zero beyond
 *   R: the padding is never stored), the last writes it (gates < R only,
 *   converted to the output mode).
 *
 *   Twiddles: W_{L_q}^j from one table made at create in double precision
 *   (s_q entries per stage, read through the read-only cache), the powers
 *   W^{mj} by multiplication in the group. The fixed twiddles inside a
 *   composite butterfly are compile-time constants.
 *
 * WHEN
 *   tune.cuda_fused: AUTO takes it when nfft factors into those radices in
 *   at most CU_FMAX_PASS stages of at least two and the buffer (up to 17/16
 *   nfft float2, cf_pad) fits in the device's shared memory per block (on an
 *   H100, nfft up to 27 000 or so); ON requires it; OFF never. The result
 *   is the definition in chirp/pc.h, held to the CPU backend like the cuFFT
 *   path (tests/test_pc_cuda.c).
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
	size_t igroup, ogroup;   /* ... and between groups (block y)       */
	const float2 *filt;      /* nfft, in the order the forward leaves
				    the spectrum (cf_perm): g conj(H) / nfft */
	const float2 *tw;        /* twiddles: stage q's at tw + tw_o[q]    */
	unsigned *nonfinite;     /* rows with NaN/Inf (cf32), or NULL      */
	unsigned n, gates, npass;      /* nfft, R, stages */
	unsigned psh;                  /* shared memory: a pad element after
					  every 2^psh (cf_pad)             */
	unsigned char rad[CU_FMAX_PASS];    /* stage q's radix */
	unsigned st[CU_FMAX_PASS];          /* stage q's stride s_q    */
	unsigned mg[CU_FMAX_PASS];          /* ceil(2^32 / s_q)        */
	unsigned tw_o[CU_FMAX_PASS];        /* table offsets           */
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

/*
 * Points m of group j times W^{m j}: W^j from the stage's table, its
 * powers by multiplication (one load per group instead of r - 1: the
 * loads share the L1 pipe with shared memory, the busiest unit here; the
 * products add about r float roundings, far below the test tolerance).
 */
template <int R>
__device__ __forceinline__ void cf_twiddle(float2 *v, const float2 *__restrict__ tw, unsigned j)
{
	float2 w, wm;

	if (j == 0)
		return;
	w = __ldg(tw + j);
	wm = w;
	v[1] = cmul(v[1], w);
#pragma unroll
	for (int m = 2; m < R; m++) {
		wm = cmul(wm, w);
		v[m] = cmul(v[m], wm);
	}
}

/*
 * Shared memory is indexed with one pad element after every 2^psh
 * (psh 31: none, as i < 2^16). Which spacing spreads a stage's accesses
 * over the banks depends on its stride and radix: one after every 16 gives
 * radix 8 and 16 at stride 1 distinct banks, but puts radix-10 points at
 * stride 1 four to a bank. The plan picks psh (cf_pick_pad).
 */
__device__ __forceinline__ unsigned cf_pad(unsigned i, unsigned psh) { return i + (i >> psh); }
static size_t cf_padded(size_t n, unsigned psh) { return n + (psh < 31 ? n >> psh : 0) + 1; }

/* Group g of a stage of radix R and stride s: its first point, and j
 * (g = b s + j, b by the magic mg = ceil(2^32 / s): exact for g, s < 2^16). */
template <int R>
__device__ __forceinline__ unsigned cf_base(unsigned g, unsigned s, unsigned mg, unsigned *j)
{
	unsigned b = s == 1 ? g : __umulhi(g, mg);

	*j = g - b * s;
	return g + b * s * (R - 1);
}

/*
 * A middle stage in place: DIF = transform, then twiddle (forward); DIT =
 * twiddle, then transform (inverse). Each thread reads and writes back its
 * own groups: no barrier inside a stage.
 */
template <int R, int DIT>
__device__ void cf_stage(float2 *buf, unsigned n, unsigned s, unsigned mg,
			 const float2 *__restrict__ tw, unsigned psh)
{
	unsigned ng = n / R;

	for (unsigned g = threadIdx.x; g < ng; g += blockDim.x) {
		float2 v[R];
		unsigned j, b0 = cf_base<R>(g, s, mg, &j);

#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = buf[cf_pad(b0 + m * s, psh)];
		if (DIT)
			cf_twiddle<R>(v, tw, j);
		cf_dft<R>::run(v);
		if (!DIT)
			cf_twiddle<R>(v, tw, j);
#pragma unroll
		for (int m = 0; m < R; m++)
			buf[cf_pad(b0 + m * s, psh)] = v[m];
	}
}

/* Stage 0 of the forward (s = n/R, group j = g): the global row -> buf,
 * zero beyond R. */
template <int IN, int R>
__device__ int cf_first(const typename cf_in<IN>::T *__restrict__ x, unsigned Rg, float2 *buf,
			unsigned n, const float2 *__restrict__ tw, unsigned psh)
{
	unsigned s = n / R;
	int bad = 0;

	for (unsigned g = threadIdx.x; g < s; g += blockDim.x) {
		float2 v[R];

#pragma unroll
		for (int m = 0; m < R; m++) {
			unsigned i = g + m * s;

			v[m] = i < Rg ? cf_in<IN>::get(x + i, &bad) : make_float2(0.0f, 0.0f);
		}
		cf_dft<R>::run(v);
		cf_twiddle<R>(v, tw, g);
#pragma unroll
		for (int m = 0; m < R; m++)
			buf[cf_pad(g + m * s, psh)] = v[m];
	}
	return bad;
}

/*
 * The last stage of both (s = 1, no twiddles) on the same groups: the
 * forward's transform, the filter and conjugate, the inverse's transform.
 */
template <int R>
__device__ void cf_turn(float2 *buf, unsigned n, const float2 *__restrict__ filt, unsigned psh)
{
	unsigned ng = n / R;

	for (unsigned g = threadIdx.x; g < ng; g += blockDim.x) {
		float2 v[R];

#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = buf[cf_pad(g * R + m, psh)];
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = cconj(cmul(v[m], __ldg(filt + g * R + m)));
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++)
			buf[cf_pad(g * R + m, psh)] = v[m];
	}
}

/* Stage 0 of the inverse (s = n/R): buf -> gates < Rg of the output row,
 * conjugated back and converted. */
template <int OUT, int R>
__device__ void cf_last(const float2 *buf, void *out, size_t o0, unsigned n, unsigned Rg,
			const float2 *__restrict__ tw, unsigned psh)
{
	unsigned s = n / R;

	for (unsigned g = threadIdx.x; g < s; g += blockDim.x) {
		float2 v[R];

		if (g >= Rg)   /* every point of this group is a gate >= R */
			break;
#pragma unroll
		for (int m = 0; m < R; m++)
			v[m] = buf[cf_pad(g + m * s, psh)];
		cf_twiddle<R>(v, tw, g);
		cf_dft<R>::run(v);
#pragma unroll
		for (int m = 0; m < R; m++) {
			unsigned i = g + m * s;

			if (i < Rg)
				cf_put<OUT>(out, o0 + i, cconj(v[m]));
		}
	}
}

/*
 * The kernel's variants: at most cf_vt(V) threads per block, cf_vb(V)
 * blocks per SM (so 65536 / (cf_vt cf_vb) registers per thread), radices
 * up to cf_vr(V). More, smaller blocks per SM hide the barriers where
 * shared memory allows; the large variant takes lengths that need a
 * radix above 10 or a buffer too large for two blocks.
 *   0: 1024 x 1, up to 16     1: 576 x 2, up to 10
 *   2: 384 x 3, up to 10      3: 288 x 4, up to 10
 */
#define CF_NVAR 4
static __host__ __device__ constexpr int cf_vt(int v)
{
	return v == 0 ? 1024 : v == 1 ? 576 : v == 2 ? 384 : 288;
}
static __host__ __device__ constexpr int cf_vb(int v) { return v == 0 ? 1 : v + 1; }
static __host__ __device__ constexpr int cf_vr(int v) { return v == 0 ? 16 : 10; }

/* Dispatch on a pass's radix (uniform over the block: no divergence),
 * the radices above the variant's limit left out of its code. */
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
	case 12: if constexpr (cf_vr(V) >= 12) CALL(12); break;                \
	case 16: if constexpr (cf_vr(V) >= 16) CALL(16); break;                \
	}

/* One block per row (x: the row in its group, y: the group); dynamic
 * shared memory cf_padded(n, psh) float2. */
template <int IN, int OUT, int V>
__global__ void __launch_bounds__(cf_vt(V), cf_vb(V)) k_fused(const struct cu_fargs a)
{
	extern __shared__ float2 cf_sm[];
	float2 *buf = cf_sm;
	const unsigned P = a.npass, row = blockIdx.x;
	const typename cf_in<IN>::T *x = (const typename cf_in<IN>::T *)a.in + blockIdx.y * a.igroup +
					 (size_t)row * a.istride;
	const size_t yo = blockIdx.y * a.ogroup + (size_t)row * a.ostride;
	int bad = 0;

#define CF_FIRST(K) bad = cf_first<IN, K>(x, a.gates, buf, a.n, a.tw + a.tw_o[0], a.psh)
	CF_RADIX_SWITCH(a.rad[0], CF_FIRST);
	__syncthreads();
	for (unsigned q = 1; q + 1 < P; q++) {
#define CF_DIF(K) cf_stage<K, 0>(buf, a.n, a.st[q], a.mg[q], a.tw + a.tw_o[q], a.psh)
		CF_RADIX_SWITCH(a.rad[q], CF_DIF);
		__syncthreads();
	}
#define CF_TURN(K) cf_turn<K>(buf, a.n, a.filt, a.psh)
	CF_RADIX_SWITCH(a.rad[P - 1], CF_TURN);
	__syncthreads();
	for (unsigned q = P - 2; q >= 1; q--) {
#define CF_DIT(K) cf_stage<K, 1>(buf, a.n, a.st[q], a.mg[q], a.tw + a.tw_o[q], a.psh)
		CF_RADIX_SWITCH(a.rad[q], CF_DIT);
		__syncthreads();
	}
#define CF_LAST(K) cf_last<OUT, K>(buf, a.out, yo, a.n, a.gates, a.tw + a.tw_o[0], a.psh)
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
	int var;                             /* k_fused's variant, 0..CF_NVAR-1 */
	unsigned psh;                        /* pad spacing (cf_pad)         */
	size_t smem;                         /* bytes per block              */
	unsigned char rad[CU_FMAX_PASS];
	unsigned st[CU_FMAX_PASS];           /* stage strides s_q            */
	unsigned tw_o[CU_FMAX_PASS];         /* their twiddles at d_tw + tw_o */
	float2 *d_tw;                        /* n entries at most            */
	float2 *d_filtp;                     /* nfilts x n: each mode's filter
						in the forward's output order */
};

template <int V> static const void *cf_kernel_v(enum pc_format in, enum pc_output out)
{
	if (in == PC_FMT_SC16) {
		if (out == PC_OUT_MAGNITUDE)
			return (const void *)k_fused<PC_FMT_SC16, PC_OUT_MAGNITUDE, V>;
		if (out == PC_OUT_POWER_DB)
			return (const void *)k_fused<PC_FMT_SC16, PC_OUT_POWER_DB, V>;
		return (const void *)k_fused<PC_FMT_SC16, PC_OUT_COMPLEX, V>;
	}
	if (out == PC_OUT_MAGNITUDE)
		return (const void *)k_fused<PC_FMT_CF32, PC_OUT_MAGNITUDE, V>;
	if (out == PC_OUT_POWER_DB)
		return (const void *)k_fused<PC_FMT_CF32, PC_OUT_POWER_DB, V>;
	return (const void *)k_fused<PC_FMT_CF32, PC_OUT_COMPLEX, V>;
}

static const void *cf_kernel(const struct cu_fused *f, enum pc_format in, enum pc_output out)
{
	switch (f->var) {
	case 1: return cf_kernel_v<1>(in, out);
	case 2: return cf_kernel_v<2>(in, out);
	case 3: return cf_kernel_v<3>(in, out);
	default: return cf_kernel_v<0>(in, out);
	}
}

/* The butterflies the kernel has (cf_dft), largest first. */
static const unsigned cf_radices[] = { 16, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2 };

/*
 * A plan's threads (its largest stage's groups in warps, at most tmax) and
 * cost: per stage the groups each thread runs times the radix, plus a
 * barrier's worth, CF_BARRIER_COST points. The barrier's weight is what
 * makes more, smaller blocks per SM win where shared memory allows: it
 * picks the faster plan for both lengths bench_gpu measures (4608: 4 blocks
 * of 288 threads over 3 of 384 and 2 of 576; 10000: 10x10x10x10 in 2
 * blocks of 576 over 1 block of 1024; fewer threads per block with radices
 * up to 25 in their registers measured slower for both).
 */
#define CF_BARRIER_COST 16
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
		c += (n / rad[p] + *threads - 1) / *threads * rad[p] + CF_BARRIER_COST;
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
 * The plan for n: per variant whose blocks' shared memory (smem each) fits
 * on an SM, the cheapest plan of its radices (with two blocks per SM, one
 * whose passes need at most two butterflies per thread); of those, the one with the least cost per block
 * slot (cf_cost over the blocks per SM). *var: its variant. 0 when n
 * cannot be planned.
 */
static int cf_plan(unsigned n, size_t smem, int sm_bytes, struct cf_plan *pl, int *var)
{
	double best = 0;
	int found = 0;

	for (int v = 0; v < CF_NVAR; v++) {
		unsigned char rad[CU_FMAX_PASS];
		struct cf_plan c;
		int ok = 1;

		if ((size_t)cf_vb(v) * (smem + 1024) > (size_t)sm_bytes)
			continue;
		memset(&c, 0, sizeof(c));
		c.tmax = (unsigned)cf_vt(v);
		cf_search(n, n, (unsigned)cf_vr(v), rad, 0, &c);
		for (unsigned p = 0; p < c.np && cf_vb(v) > 1; p++)
			ok &= (n / c.rad[p] + c.threads - 1) / c.threads <= 2;
		if (!c.np || !ok)
			continue;
		if (!found || (double)c.cost / cf_vb(v) < best) {
			best = (double)c.cost / cf_vb(v);
			*pl = c;
			*var = v;
			found = 1;
		}
	}
	return found;
}

/* The pad spacings a plan may take (cf_pad): 2^psh, or none (31). */
static const unsigned cf_pshs[] = { 4, 5, 6, 7, 8, 31 };

/*
 * Shared-memory wavefronts of a plan's passes with pad spacing psh: per
 * warp (32 consecutive groups) and point m of its groups, the most points
 * that fall on one pair of banks (a float2 spans two; distinct groups
 * touch distinct points, so none is a broadcast). Every stage but the
 * last runs twice (forward and inverse), the last once (cf_turn).
 */
static unsigned long cf_bank_cost(unsigned n, const unsigned char *rad, unsigned np,
				  const unsigned *st, unsigned psh)
{
	unsigned long c = 0;

	for (unsigned q = 0; q < np; q++) {
		unsigned r = rad[q], s = st[q], ng = n / r;
		unsigned long cq = 0;

		for (unsigned w = 0; w < ng; w += 32)
			for (unsigned m = 0; m < r; m++) {
				unsigned char cnt[16] = { 0 }, top = 0;

				for (unsigned g = w; g < ng && g < w + 32; g++) {
					unsigned b = g / s, i = g + b * s * (r - 1) + m * s;
					unsigned k = (i + (psh < 31 ? i >> psh : 0)) & 15;

					if (++cnt[k] > top)
						top = cnt[k];
				}
				cq += top;
			}
		c += q + 1 < np ? 2 * cq : cq;
	}
	return c;
}

/* The pad spacing with the fewest wavefronts; of equals, the least
 * padding. */
static unsigned cf_pick_pad(unsigned n, const unsigned char *rad, unsigned np,
			    const unsigned *st)
{
	unsigned long best = 0;
	unsigned psh = 4;

	for (size_t i = 0; i < sizeof(cf_pshs) / sizeof(cf_pshs[0]); i++) {
		unsigned long c = cf_bank_cost(n, rad, np, st, cf_pshs[i]);

		if (i == 0 || c <= best) {
			best = c;
			psh = cf_pshs[i];
		}
	}
	return psh;
}

/*
 * Stage q of n = r_0 ... r_{P-1}: on blocks of L_q = n / (r_0 ... r_{q-1})
 * points, groups of r_q points at stride s_q = L_q / r_q; its twiddles
 * W_{L_q}^j for j < s_q at tw + off[q] (sum of the s_q: at most n).
 */
static void cf_tables(unsigned n, const unsigned char *rad, unsigned np, float2 *tw,
		      unsigned *st, unsigned *off)
{
	unsigned L = n, o = 0;

	for (unsigned q = 0; q < np; q++) {
		unsigned s = L / rad[q];

		st[q] = s;
		off[q] = o;
		for (unsigned j = 0; j < s; j++) {
			double a = -2.0 * M_PI * (double)j / (double)L;

			tw[o++] = make_float2((float)cos(a), (float)sin(a));
		}
		L = s;
	}
}

/*
 * Where the forward leaves frequency k: position i = sum_q m_q s_q holds
 * k = m_0 + r_0 (m_1 + r_1 (m_2 + ...)), the digits reversed. Each mode's
 * filter (interleaved re, im, nfilts x n) is stored in that order, so the
 * multiply reads it in place and the inverse needs no reordering either.
 */
static void cf_permute(const struct cu_fused *f, const float *filts, unsigned nfilts,
		       float2 *out)
{
	for (unsigned i = 0; i < f->n; i++) {
		unsigned rem = i, k = 0, mult = 1;

		for (unsigned q = 0; q < f->npass; q++) {
			unsigned m = rem / f->st[q];

			rem -= m * f->st[q];
			k += m * mult;
			mult *= f->rad[q];
		}
		for (unsigned t = 0; t < nfilts; t++)
			out[(size_t)t * f->n + i] = make_float2(filts[2 * ((size_t)t * f->n + k)],
								filts[2 * ((size_t)t * f->n + k) + 1]);
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
int cu_fused_create(struct cu_be *be, enum pc_switch want, const float *filts, char *why,
		    size_t whylen)
{
	struct cu_fused *f;
	struct cf_plan pl;
	unsigned n = (unsigned)be->nfft;
	size_t smem = cf_padded(be->nfft, cf_pshs[0]) * sizeof(float2);   /* the most */
	int smax = 0, sm_bytes = 0, var = 0, planned = 0, rc = 0;
	float2 *tw = NULL;
	const enum pc_output outs[3] = { PC_OUT_COMPLEX, PC_OUT_MAGNITUDE, PC_OUT_POWER_DB };

	snprintf(be->fft_engine, sizeof(be->fft_engine), "cufft");
	if (want == PC_SWITCH_OFF)
		return 0;
	CK(cudaDeviceGetAttribute(&smax, cudaDevAttrMaxSharedMemoryPerBlockOptin, be->dev));
	CK(cudaDeviceGetAttribute(&sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, be->dev));
	if (be->nfft <= 65535)
		planned = cf_plan(n, smem, sm_bytes, &pl, &var);
	if (!planned || smem > (size_t)smax) {
		if (want == PC_SWITCH_ON) {
			snprintf(why, whylen, "cuda_fused = on: nfft %zu %s", be->nfft,
				 smem + 1024 > (size_t)sm_bytes || smem > (size_t)smax
					 ? "does not fit in the GPU's shared memory"
					 : "does not factor into 2, 3, 5 and 7 in at most 16 passes");
			return -ENOTSUP;
		}
		return 0;
	}
	f = (struct cu_fused *)calloc(1, sizeof(*f));
	tw = (float2 *)malloc(be->nfft * sizeof(float2));
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
	f->var = var;
	memcpy(f->rad, pl.rad, pl.np);
	cf_tables(n, f->rad, f->npass, tw, f->st, f->tw_o);
	f->psh = cf_pick_pad(n, f->rad, f->npass, f->st);
	f->smem = cf_padded(be->nfft, f->psh) * sizeof(float2);
	CK(cudaMalloc((void **)&f->d_tw, be->nfft * sizeof(float2)));
	CK(cudaMemcpy(f->d_tw, tw, be->nfft * sizeof(float2), cudaMemcpyHostToDevice));
	free(tw);
	tw = (float2 *)malloc((size_t)be->nfilts * be->nfft * sizeof(float2));
	if (!tw) {
		snprintf(why, whylen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	cf_permute(f, filts, be->nfilts, tw);
	CK(cudaMalloc((void **)&f->d_filtp, (size_t)be->nfilts * be->nfft * sizeof(float2)));
	CK(cudaMemcpy(f->d_filtp, tw, (size_t)be->nfilts * be->nfft * sizeof(float2),
		      cudaMemcpyHostToDevice));
	/* the shared memory a block asks for; the variant's two blocks per
	 * SM as the carveout (the rest of the SM's L1 caches twiddles
	 * and the filter) */
	for (int i = 0; i < 2; i++)
		for (int o = 0; o < 3; o++) {
			const void *k = cf_kernel(f, i ? PC_FMT_SC16 : PC_FMT_CF32, outs[o]);

			CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
						(int)f->smem));
			if (cf_vb(var) > 1)
				CK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
							(int)((100 * cf_vb(var) * (f->smem + 1024) +
							       sm_bytes - 1) / sm_bytes)));
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
	(void)cudaFree(be->fused->d_filtp);
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
	a->igroup = j->igroup;
	a->ogroup = j->ogroup;
	a->filt = f->d_filtp + (size_t)j->filt * f->n;
	a->tw = f->d_tw;
	a->nonfinite = be->in_format == PC_FMT_CF32 ? j->nonfinite : NULL;
	a->n = f->n;
	a->gates = (unsigned)be->R;
	a->npass = f->npass;
	a->psh = f->psh;
	for (unsigned q = 0; q < f->npass; q++) {
		a->rad[q] = f->rad[q];
		a->st[q] = f->st[q];
		/* ceil(2^32 / s); s = 1 is special-cased in the kernel */
		a->mg[q] = f->st[q] > 1 ? (unsigned)((0x100000000ull + f->st[q] - 1) / f->st[q]) : 0;
		a->tw_o[q] = f->tw_o[q];
	}
}

cudaError_t cu_fused_launch(const struct cu_be *be, const struct cu_fjob *j, cudaStream_t st)
{
	struct cu_fargs a;
	void *args[] = { &a };

	cf_args(be, j, &a);
	return cudaLaunchKernel(cf_kernel(be->fused, be->in_format, j->mode), dim3(j->rows, j->groups),
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
	p.gridDim = dim3(j->rows, j->groups);
	p.blockDim = dim3(be->fused->threads);
	p.sharedMemBytes = (unsigned)be->fused->smem;
	p.kernelParams = args;
	p.extra = NULL;
	return cudaGraphExecKernelNodeSetParams(gx, node, &p);
}
