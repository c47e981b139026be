/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_radar.cu — the radar chain on the GPU (chirp/pc.h, RADAR CHAIN), run
 * on a set's stream once every chunk of its CPI is compressed: the
 * compressed rows y[c][p][0..R-1] are still in the pitched FFT rows d_fft.
 *
 *   1 k_mti       z = MTI(y) x window (g_d folded in) -> d_zin [Nd][C][R],
 *                 pulses 0..P'-1; P'..Nd-1 (the Doppler FFT's padding)
 *                 were zeroed at create and are never written.
 *   2 cuFFT       Nd-point FFTs along pulses, d_zin -> d_dop (out of
 *                 place: the padding stays zero, and the cube's zero
 *                 half is not written again every CPI). The corner turn is
 *                 in the plan's strides, not in a transpose: d_dop is laid
 *                 out pulse-major ([pulse][channel][gate]), so the C x R
 *                 transforms are batched with istride = C R and idist = 1.
 *                 Consecutive transforms are then consecutive addresses,
 *                 and each of cuFFT's passes reads and writes whole rows
 *                 of C R points coalesced; a transpose to pulse-contiguous
 *                 rows would add a full read and write of the cube for
 *                 nothing the FFT needs (bench/corner_turn.cu times both).
 *   3 k_map       M = |D|^2 with zero Doppler in the middle (bin k holds
 *                 m = k - floor(Nd/2)) -> d_map [C][Nd][R]; I = sum_c M ->
 *                 d_imap; the map output (map_db: in dB) -> d_out.
 *   1-3 k_doppler  the three in one pass where Nd is a power of two up to
 *                 CU_DOP_MAX and no integration is asked for: a block
 *                 takes DG gates of one channel, MTI and window into shared
 *                 memory (bit-reversed, the padding zero), the Nd-point
 *                 radix-2 transform there (twiddles from a table made in
 *                 double), then M (and map_db) -> d_map. The compressed
 *                 rows are read once, d_zin is neither written nor read,
 *                 and D is not kept: the only reader of D is monopulse,
 *                 at a few cells (k_dop_cells), and writing the whole
 *                 complex cube for them would double the pass's traffic.
 *   4 k_cfar_fused  ca/go/so, one pass per tile of 16 Doppler rows x 128
 *                 gates of a map: the tile and its halo into shared
 *                 memory; per column the Doppler window's sums (training
 *                 rows, and all rows, cyclic), direct; along range the
 *                 window sums of the training columns by van Herk's blocks
 *                 (a suffix of one block plus a prefix of the next); per
 *                 cell two of those and the guard columns. No sum is a
 *                 difference of running or prefix sums: the cells are
 *                 powers, so nothing cancels, a strong target in the
 *                 window leaves the noise's digits alone, and a NaN or Inf
 *                 reaches exactly the windows that hold it. The cost per
 *                 cell grows with the Doppler window and the range guard,
 *                 not with the range training. A tile too wide for shared
 *                 memory takes two passes instead (k_cfar_dop to d_sf/d_st,
 *                 k_cfar_range_wide).
 *     k_cfar_os   os: the training cells of each cell gathered (at most
 *                 PC_CFAR_OS_MAX_CELLS) and the rank[n]-th smallest
 *                 selected (Wirth's selection in registers / local memory).
 *                 Both write noise = S x norm[n] -> d_noise.
 *   5 k_locmax    per map row: crossing (value > alpha[n] x noise) and
 *                 local maximum (strictly greater than the neighbours of
 *                 lower index k'R + n', not less than those of higher
 *                 index; Doppler cyclic, range clipped) -> d_mask; counts
 *                 per row -> d_rowcnt, crossings -> d_cross. For ca/go/so
 *                 k_cfar_fused does this itself, with each cell's noise
 *                 still in a register, and writes the noise only where a
 *                 detection needs it.
 *   6 k_scan      exclusive scan of the row counts -> d_rowoff, and the
 *                 list's header (found, count = min(found, max), flags).
 *     k_records   per row, the detections in gate order at rowoff + their
 *                 rank in the row, written only below max_det: the list
 *                 is the same on every run and every GPU, in the order
 *                 chirp/detect.h gives, whatever the thread schedule.
 *                 With beams, each record's D in beams b-1, b, b+1 ->
 *                 d_mono (monopulse's input), read from d_dop where
 *                 cuFFT's path keeps it.
 *     k_dop_cells  with beams on k_doppler's path: those D summed at the
 *                 record's cell directly from the compressed rows (MTI,
 *                 window, the Doppler bin's DFT), a warp per value.
 *   7 copies      the map to out (map modes), the whole list slot
 *                 (det_bytes) to det. The slot, not header + count
 *                 records: the count is known only on the device, and a
 *                 host round trip per CPI would cost more than the
 *                 copy's extra bytes at the list sizes chirpd uses (a
 *                 limit for max_detections in the hundreds of thousands).
 *   8 k_maxhold   only for a CPI with a snapshot request: the selected
 *                 maps of M reduced by max-hold (one thread a cell) into
 *                 d_snap, and one copy of those cells to the pinned
 *                 h_snap, taken to the caller's buffer in pc_poll.
 *
 * The header's mode is the host's: pc_poll writes it into the caller's
 * list (cu_radar_stamp), so one captured graph serves every mode. The
 * sums' order is fixed, so a CPI's list is the same on every run.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cu_private.h"
extern "C" {
#include "hcopy.h"
#include "maxhold.h"
}

#define CU_RT 256                /* threads per block of the chain kernels  */
#define CU_SMEM_MAX (46 * 1024)  /* k_cfar_fused's tile, at most (bytes)    */

/* k mod nd in 0..nd-1: one add or subtract for the windows' offsets
 * (|k| within a period of the axis), a division only past that. */
__device__ __forceinline__ unsigned cu_wrap(int k, unsigned nd)
{
	int n = (int)nd, m = k < 0 ? k + n : (k >= n ? k - n : k);

	if ((unsigned)m >= nd) {   /* a window wider than the axis */
		m = k % n;
		m = m < 0 ? m + n : m;
	}
	return (unsigned)m;
}

/* MTI's output at pulse p of a gate, y the compressed sample there and
 * pe the elements between pulses: y, y[1] - y, or y - 2 y[1] + y[2] (the
 * pulses p .. p + 2 < P read; P' = P - MTI's drop). Every kernel that
 * takes MTI's output computes it here. */
__device__ __forceinline__ float2 cu_mti(const float2 *y, size_t pe, int mti)
{
	float2 a = y[0];

	if (mti == PC_MTI_TWO) {
		float2 b = y[pe];

		a = make_float2(b.x - a.x, b.y - a.y);
	} else if (mti == PC_MTI_THREE) {
		float2 b = y[pe], d = y[2 * pe];

		a = make_float2(a.x - 2.0f * b.x + d.x, a.y - 2.0f * b.y + d.y);
	}
	return a;
}

/* 1. MTI and window: row (c, p) of d_zin's [p][c][n], p < P'. Grid: x
 * over gates, y strides over the C x P' rows (c major). */
__global__ void k_mti(const float2 *__restrict__ fft, size_t pe, unsigned C, unsigned P,
		      unsigned R, unsigned Pm, unsigned Nd, int mti, const float *__restrict__ win,
		      float2 *__restrict__ dop)
{
	unsigned n = blockIdx.x * blockDim.x + threadIdx.x;

	if (n >= R)
		return;
	for (size_t row = blockIdx.y; row < (size_t)C * Pm; row += gridDim.y) {
		unsigned c = (unsigned)(row / Pm), p = (unsigned)(row % Pm);
		float2 a = cu_mti(fft + ((size_t)c * P + p) * pe + n, pe, mti);

		dop[((size_t)p * C + c) * R + n] = make_float2(win[p] * a.x, win[p] * a.y);
	}
}

/* 3. Power, fftshift, integration and the map output. Grid: x over gates,
 * y strides over the Nd bins. dbout: map_db's output, else NULL. */
__global__ void k_map(const float2 *__restrict__ dop, unsigned C, unsigned R, unsigned Nd,
		      float *__restrict__ map, float *__restrict__ imap, float *__restrict__ dbout)
{
	unsigned n = blockIdx.x * blockDim.x + threadIdx.x;

	if (n >= R)
		return;
	for (unsigned k = blockIdx.y; k < Nd; k += gridDim.y) {
		unsigned f = (k + Nd - Nd / 2) % Nd;   /* FFT bin of m = k - floor(Nd/2) */
		float sum = 0.0f;

		for (unsigned c = 0; c < C; c++) {
			float2 d = dop[((size_t)f * C + c) * R + n];
			float m = d.x * d.x + d.y * d.y;
			size_t o = ((size_t)c * Nd + k) * R + n;

			map[o] = m;
			if (dbout)   /* clamp below, NaN through: as power_db */
				dbout[o] = 10.0f * log10f(m < PC_POWER_FLOOR ? PC_POWER_FLOOR : m);
			sum += m;
		}
		if (imap)
			imap[(size_t)k * R + n] = sum;
	}
}

/* 1-3 in one pass (k_doppler): Nd a power of two up to CU_DOP_MAX; a
 * block of CU_DOP_T threads takes dg = min(16, CU_DOP_CELLS / Nd) gates
 * of channel blockIdx.y, its Nd x dg transform in shared memory. */
#define CU_DOP_MAX 4096
#define CU_DOP_CELLS 4096   /* complex cells of a block's transform (32 KiB) */
#define CU_DOP_T 256
#define CU_DLB 8            /* k_doppler's pulse loads in flight per thread */

/*
 * lv consecutive radix-2 stages of k_doppler's transform (spans h, 2h, ...
 * 2^(lv-1) h) in one pass: a thread takes a group of 2^lv points b + m h
 * (b's offset in its block of 2^lv h points below h) into registers and
 * does the group's butterflies of every stage there. The butterflies,
 * their twiddles and their order per point are the stage-by-stage
 * transform's exactly (the same roundings), with one read and one write
 * of shared memory per point instead of lv. Threads k0, k0 + step, ...
 * take the Nd / 2^lv groups; a group's points are apart in shared memory
 * by h rows of dg gates.
 */
#define CU_DOP_L 3   /* stages per pass, at most */
__device__ __forceinline__ void cu_dop_pass(float2 *z, unsigned dg, unsigned g, unsigned k0,
					    unsigned step, unsigned Nd, unsigned h, unsigned ts,
					    unsigned lv, const float2 *__restrict__ tw)
{
	unsigned n = 1u << lv;

	for (unsigned k = k0; k < Nd >> lv; k += step) {
		unsigned j = k & (h - 1), b = ((k - j) << lv) + j;
		float2 x[1 << CU_DOP_L];

#pragma unroll
		for (unsigned m = 0; m < (1u << CU_DOP_L); m++)
			if (m < n)
				x[m] = z[(b + m * h) * dg + g];
#pragma unroll
		for (unsigned l = 0; l < CU_DOP_L; l++) {
			if (l >= lv)
				break;
#pragma unroll
			for (unsigned m = 0; m < (1u << CU_DOP_L); m++) {
				if (m >= n || (m >> l) & 1u)
					continue;
				/* points m and m + 2^l at span h 2^l: twiddle
				 * index (j + (m mod 2^l) h) ts / 2^l */
				unsigned jl = j + (m & ((1u << l) - 1u)) * h;
				float2 w = tw[jl * (ts >> l)], u = x[m], v = x[m + (1u << l)];
				float2 t = make_float2(w.x * v.x - w.y * v.y, w.x * v.y + w.y * v.x);

				x[m] = make_float2(u.x + t.x, u.y + t.y);
				x[m + (1u << l)] = make_float2(u.x - t.x, u.y - t.y);
			}
		}
#pragma unroll
		for (unsigned m = 0; m < (1u << CU_DOP_L); m++)
			if (m < n)
				z[(b + m * h) * dg + g] = x[m];
	}
}

__global__ void __launch_bounds__(CU_DOP_T, 5)   /* 48 registers, no spill */
k_doppler(const float2 *__restrict__ fft, size_t pe, unsigned C, unsigned P, unsigned R,
	  unsigned Pm, unsigned Nd, unsigned lg, unsigned dg, int mti,
	  const float *__restrict__ win, const float2 *__restrict__ tw, float2 *__restrict__ dop,
	  float *__restrict__ map, float *__restrict__ dbout)
{
	__shared__ float2 z[CU_DOP_CELLS];   /* [bin][gate] */
	unsigned c = blockIdx.y, n0 = blockIdx.x * dg, g = threadIdx.x % dg;
	unsigned step = CU_DOP_T / dg, n = n0 + g;

	/* MTI and window, pulse p into row bitrev(p) (a decimation in time);
	 * CU_DLB pulses' loads in flight per thread before their stores */
	for (unsigned p0 = threadIdx.x / dg; p0 < Nd; p0 += CU_DLB * step) {
		float2 v[CU_DLB];

#pragma unroll
		for (unsigned j = 0; j < CU_DLB; j++) {
			unsigned p = p0 + j * step;
			float2 a = make_float2(0.0f, 0.0f);

			if (p < Pm && n < R) {
				a = cu_mti(fft + ((size_t)c * P + p) * pe + n, pe, mti);
				a = make_float2(win[p] * a.x, win[p] * a.y);
			}
			v[j] = a;
		}
#pragma unroll
		for (unsigned j = 0; j < CU_DLB; j++) {
			unsigned p = p0 + j * step;

			if (p < Nd)
				z[(__brev(p) >> (32 - lg)) * dg + g] = v[j];
		}
	}
	__syncthreads();
	/* the stages: butterflies of span h, twiddle e^{-2 pi i j / 2h}, up
	 * to CU_DOP_L of them per pass over shared memory */
	for (unsigned h = 1, ts = Nd / 2, lv; h < Nd; h <<= lv, ts >>= lv) {
		lv = min((unsigned)CU_DOP_L, lg - (31 - __clz(h)));
		cu_dop_pass(z, dg, g, threadIdx.x / dg, step, Nd, h, ts, lv, tw);
		__syncthreads();
	}
	if (n >= R)
		return;
	for (unsigned f = threadIdx.x / dg; f < Nd; f += step) {
		float2 d = z[f * dg + g];
		unsigned k = (f + Nd / 2) & (Nd - 1);   /* zero Doppler in the middle */
		float m = d.x * d.x + d.y * d.y;
		size_t o = ((size_t)c * Nd + k) * R + n;

		if (dop)
			dop[((size_t)f * C + c) * R + n] = d;
		map[o] = m;
		if (dbout)   /* clamp below, NaN through: as power_db */
			dbout[o] = 10.0f * log10f(m < PC_POWER_FLOOR ? PC_POWER_FLOOR : m);
	}
}

/* 4a'. (wide halos) ca/go/so: Doppler column sums per cell, cyclic: sf over |dk| <=
 * gd+td, st over gd < |dk| <= gd+td. A thread walks CU_DSEG bins of one
 * (map, gate) column with running sums: two reads per bin instead of the
 * window's width, and no modulo. The running sums are double and skip
 * non-finite cells (counted instead), so a strong target leaving the
 * window leaves no residue in the noise's digits and a NaN does not
 * poison the rest of the column: a window holding one reads NaN, as a
 * direct sum would. Grid: x over gates, y strides over maps x segments. */
#define CU_DSEG 32
__global__ void k_cfar_dop(const float *__restrict__ x, unsigned maps, unsigned Nd, unsigned R,
			   unsigned gd, unsigned td, float *__restrict__ sf, float *__restrict__ st)
{
	unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned nseg = (Nd + CU_DSEG - 1) / CU_DSEG;
	int w = (int)(gd + td), g = (int)gd, nd = (int)Nd;

	if (n >= R)
		return;
	for (unsigned seg = blockIdx.y; seg < maps * nseg; seg += gridDim.y) {
		unsigned mp = seg / nseg, k0 = (seg % nseg) * CU_DSEG;
		unsigned k1 = min(Nd, k0 + CU_DSEG);
		const float *col = x + (size_t)mp * Nd * R + n;
		double full = 0.0, guard = 0.0;
		int bf = 0, bg = 0;   /* non-finite cells in each window */

		for (int dk = -w; dk <= w; dk++) {
			float v = col[(size_t)cu_wrap((int)k0 + dk, Nd) * R];
			int nf = !isfinite(v);

			full += nf ? 0.0 : (double)v;
			bf += nf;
			if (dk >= -g && dk <= g) {
				guard += nf ? 0.0 : (double)v;
				bg += nf;
			}
		}
		for (unsigned k = k0; k < k1; k++) {
			size_t o = ((size_t)mp * Nd + k) * R + n;
			int in_f = (int)k + w + 1, out_f = (int)k - w;
			int in_g = (int)k + g + 1, out_g = (int)k - g;
			float a, b, c, d;

			sf[o] = bf ? NAN : (float)full;
			st[o] = bf - bg ? NAN : (float)(full - guard);
			/* slide to k + 1 (indices wrapped by one period at most) */
			a = col[(size_t)(in_f >= nd ? in_f - nd : in_f) * R];
			b = col[(size_t)(out_f < 0 ? out_f + nd : out_f) * R];
			c = col[(size_t)(in_g >= nd ? in_g - nd : in_g) * R];
			d = col[(size_t)(out_g < 0 ? out_g + nd : out_g) * R];
			full += (isfinite(a) ? (double)a : 0.0) - (isfinite(b) ? (double)b : 0.0);
			bf += !isfinite(a) - !isfinite(b);
			guard += (isfinite(c) ? (double)c : 0.0) - (isfinite(d) ? (double)d : 0.0);
			bg += !isfinite(c) - !isfinite(d);
		}
	}
}

/* What the CFAR kernels need besides their buffers. */
struct cu_cfar_args {
	unsigned Nd, R, gr, tr, gd, td;
	int method;
};

/* What k_locmax needs besides its buffers. */
struct cu_max_args {
	unsigned Nd, R, md, mr;
	unsigned maps;
	int beams;               /* maps are beams: the rule runs across them */
};

/* With beams (chirp/pc.h, BEAMS): cell idx of map mp, value v, is not
 * below the same cell of the neighbouring beams and greater than the
 * lower one's. map: map mp's first cell. */
__device__ __forceinline__ int cu_beam_max(const float *__restrict__ map,
					   const struct cu_max_args &a, unsigned mp, unsigned idx,
					   float v)
{
	size_t plane = (size_t)a.Nd * a.R;

	if (!a.beams)
		return 1;
	if (mp > 0 && !(v > (map - plane)[idx]))
		return 0;
	if (mp + 1 < a.maps && !(v >= (map + plane)[idx]))
		return 0;
	return 1;
}

/* The local-maximum rule (chirp/pc.h) at cell (k, n) of a map, value v at
 * index idx = k R + n: greater than the neighbours of lower index, not
 * less than those of higher index; Doppler cyclic, range clipped. */
__device__ __forceinline__ int cu_is_max(const float *__restrict__ map, const struct cu_max_args &a,
					 unsigned k, unsigned n, unsigned idx, float v)
{
	for (int dk = -(int)a.md; dk <= (int)a.md; dk++) {
		unsigned kr = cu_wrap((int)k + dk, a.Nd) * a.R;

		for (int dn = -(int)a.mr; dn <= (int)a.mr; dn++) {
			int g = (int)n + dn;
			unsigned j;
			float u;

			if (g < 0 || g >= (int)a.R)
				continue;
			j = kr + (unsigned)g;
			if (j == idx)
				continue;
			u = map[j];
			if (j < idx ? !(v > u) : !(v >= u))
				return 0;
		}
	}
	return 1;
}

#define CU_TK 16     /* Doppler rows of a tile                          */
#define CU_TG 128    /* gates of a tile                                 */
#define CU_TMAX 256  /* k_cfar_fused's threads, at most                 */

/*
 * w[i] = x[i] + ... + x[i+L-1] for i = 0..n-L, in each of `lines` rows of
 * ld floats, by the block's threads: van Herk's blocks of L, where the
 * window starting at b L + j is a suffix of block b (x[bL+j..bL+L-1]) and
 * a prefix of block b+1 (x[bL+L..bL+L+j-1]). Two short scans per block,
 * additions only: with every term >= 0 nothing cancels, whatever the
 * window holds, and a NaN or Inf reaches exactly the windows holding it.
 * L >= 1; w and x apart.
 */
__device__ __forceinline__ void cu_winsum(const float *x, float *w, unsigned lines, unsigned n,
					  unsigned ld, unsigned L)
{
	unsigned nb = (n - L) / L + 1;   /* blocks that start a window */

	for (unsigned it = threadIdx.x; it < lines * nb; it += blockDim.x) {
		unsigned line = it / nb, i0 = (it - line * nb) * L;
		unsigned m = min(L, n - L + 1 - i0);   /* the block's window starts */
		const float *xl = x + (size_t)line * ld + i0;
		float *wl = w + (size_t)line * ld + i0;
		float s = 0.0f, p = 0.0f;
		unsigned j = L;

#pragma unroll 1
		for (; j > m; j--)   /* suffixes of block b, past its last start */
			s += xl[j - 1];
#pragma unroll 1
		for (; j > 0; j--) {   /* ... and at its starts */
			s += xl[j - 1];
			wl[j - 1] = s;
		}
#pragma unroll 1
		for (j = 1; j < m; j++) {   /* plus prefixes of block b + 1 */
			p += xl[L + j - 1];
			wl[j] += p;
		}
	}
}

/* x[0] + x[ld] + ... + x[(n-1) ld], in that order (0 when n is 0). A
 * plain loop: a switch unrolling the short windows measured slower. */
__device__ __forceinline__ float cu_colsum(const float *x, unsigned n, unsigned ld)
{
	float s = 0.0f;

#pragma unroll 1
	for (; n > 0; n--, x += ld)
		s += *x;
	return s;
}

/* cu_colsum with n = N known at compile time (N >= 0): unrolled, the same
 * additions in the same order; N < 0: cu_colsum's loop over n. */
template <int N>
__device__ __forceinline__ float cu_colsum_k(const float *x, unsigned n, unsigned ld)
{
	if constexpr (N < 0) {
		return cu_colsum(x, n, ld);
	} else {
		float s = 0.0f;

#pragma unroll
		for (int i = 0; i < N; i++)
			s += x[(size_t)i * ld];
		return s;
	}
}

/* cu_winsum with the window L >= 1 known at compile time: the same two
 * scans per block, unrolled, each addition where cu_winsum makes it;
 * L < 1: cu_winsum with Lr. */
template <int L>
__device__ __forceinline__ void cu_winsum_k(const float *x, float *w, unsigned lines, unsigned n,
					    unsigned ld, unsigned Lr)
{
	if constexpr (L < 1) {
		cu_winsum(x, w, lines, n, ld, Lr);
		return;
	}
	const unsigned Lc = L < 1 ? 1u : (unsigned)L;   /* a constant */
	unsigned nb = (n - Lc) / Lc + 1;

	for (unsigned it = threadIdx.x; it < lines * nb; it += blockDim.x) {
		unsigned line = it / nb, i0 = (it - line * nb) * Lc;
		unsigned m = min(Lc, n - Lc + 1 - i0);
		const float *xl = x + (size_t)line * ld + i0;
		float *wl = w + (size_t)line * ld + i0;
		float s = 0.0f, p = 0.0f;

#pragma unroll
		for (unsigned j = Lc; j > 0; j--) {   /* suffixes of block b */
			s += xl[j - 1];
			if (j <= m)
				wl[j - 1] = s;
		}
#pragma unroll
		for (unsigned j = 1; j < Lc; j++) {   /* plus prefixes of block b + 1 */
			if (j < m) {
				p += xl[Lc + j - 1];
				wl[j] += p;
			}
		}
	}
}

/*
 * 4. ca/go/so in one pass over a tile of CU_TK Doppler rows x CU_TG gates
 * of one map, cu_cfar_threads threads (block x: a map's row tile, y: a
 * gate tile).
 *   a. A thread per column (gate of the tile or of its range halo of
 *      gr+tr gates each side, zero outside the map's range) loads the
 *      column's cells, with a halo of gd+td rows each side (cyclic), into
 *      shared memory, and sums its Doppler windows there, directly: t over
 *      the training rows (gd < |dk| <= gd+td), f over all 2(gd+td)+1; t
 *      is NaN where f is not finite (a column with a NaN or Inf anywhere
 *      in its window, guard cells included, leaves no estimate to the
 *      windows that use it).
 *   b. Along range, the window sums of f over tr columns (cu_winsum).
 *   c. Per cell: the leading sum, one window of f and the gr columns of t
 *      before the cell; the lagging sum likewise after it; then the noise,
 *      the crossing and the local maximum (k_locmax's work, done here
 *      while the noise is in a register: the noise is written only where
 *      a detection needs it, k_records' only reader).
 * No sum is a difference: the map's cells are powers (>= 0), so a strong
 * target in a window cancels none of the noise's digits. A window whose
 * float sum passes FLT_MAX counts as one holding an Inf. A tile too wide
 * for shared memory takes two passes (k_cfar_dop, k_cfar_range_wide)
 * instead. Offsets within a map are 32-bit (checked at create).
 * TD, GD, GR, TR: the windows (train_doppler, guard_doppler, guard_range,
 * train_range) compiled in, their short sums unrolled, or -1 for a's: the
 * same sums in the same order either way (cu_cfar_kernel picks).
 */
template <int TD, int GD, int GR, int TR>
__global__ void __launch_bounds__(CU_TMAX)
k_cfar_fused(const float *__restrict__ x, struct cu_cfar_args a, const float *__restrict__ norm,
	     const float *__restrict__ alpha, struct cu_max_args ma, float *__restrict__ noise,
	     unsigned char *__restrict__ mask, unsigned *__restrict__ rowcnt,
	     unsigned long long *cross)
{
	extern __shared__ float sm[];
	unsigned tiles = (a.Nd + CU_TK - 1) / CU_TK, mp = blockIdx.x / tiles;
	unsigned k0 = (blockIdx.x - mp * tiles) * CU_TK, nk = min(CU_TK, a.Nd - k0);
	unsigned n0 = blockIdx.y * CU_TG;
	const unsigned td = TD >= 0 ? (unsigned)TD : a.td, gd = GD >= 0 ? (unsigned)GD : a.gd;
	const unsigned gr = GR >= 0 ? (unsigned)GR : a.gr, trn = TR >= 0 ? (unsigned)TR : a.tr;
	int h = (int)(gr + trn), lo = (int)n0 - h, R = (int)a.R;
	unsigned w = gd + td, gw = 2 * gd + 1;
	unsigned span = CU_TG + 2 * (unsigned)h, rows = nk + 2 * w, NdR = a.Nd * a.R;
	const float *map = x + (size_t)mp * a.Nd * a.R;
	/* raw: the cells (a), then the range sums of f (b); sf, st: the
	 * Doppler sums (a) */
	float *raw = sm, *sf = sm + (size_t)(CU_TK + 2 * w) * span, *st = sf + CU_TK * span;
	float *wf = raw;

	/* a: a column at a time, its cells then its Doppler sums */
	for (unsigned c = threadIdx.x; c < span; c += blockDim.x) {
		int gg = lo + (int)c;
		unsigned off = cu_wrap((int)k0 - (int)w, a.Nd) * a.R + (unsigned)gg;
		float *col = raw + c;

		if (gg >= 0 && gg < R) {
			for (unsigned r = 0; r < rows; r++) {
				col[r * span] = map[off];
				off += a.R;
				off = off >= NdR ? off - NdR : off;
			}
		} else {
			for (unsigned r = 0; r < rows; r++)
				col[r * span] = 0.0f;
		}
		for (unsigned r = 0; r < nk; r++, col += span) {
			/* the window of row r: raw rows r .. r + 2w */
			float ts = cu_colsum_k<TD>(col, td, span) +
				   cu_colsum_k<TD>(col + (td + gw) * span, td, span);
			float fs = cu_colsum_k<GD < 0 ? -1 : 2 * GD + 1>(col + td * span, gw, span) + ts;

			sf[r * span + c] = fs;
			st[r * span + c] = isfinite(fs) ? ts : NAN;
		}
	}
	__syncthreads();
	/* b: the range window sums of f (raw is free now) */
	if (trn)
		cu_winsum_k<TR>(sf, wf, nk, span, span, trn);
	__syncthreads();
	/* c: the cells, a thread per gate of the tile; c the gate's column
	 * in the span (the threads past CU_TG, whole warps, only loaded) */
	if (threadIdx.x >= CU_TG)
		return;
	int n = (int)n0 + (int)threadIdx.x;
	unsigned c = threadIdx.x + (unsigned)h, ncross = 0;
	float nrm = 0.0f, thr = 0.0f, il = 0.0f, ir = 0.0f, ia = 0.0f;
	int half = 0;   /* go/so: 0 both halves, -1 lagging only, 1 leading only */

	if (n < R) {   /* the cell counts (chirp/pc.h) of this gate, as 1 / count */
		float cf = 2.0f * w + 1.0f, ct = 2.0f * td;   /* per column */
		int g = (int)gr;
		float nl = (float)max(n - g - max(n - h, 0), 0) * cf + (float)min(g, n) * ct;
		float nr = (float)max(min(n + h, R - 1) - n - g, 0) * cf + (float)min(g, R - 1 - n) * ct;

		nrm = norm[n];
		thr = alpha[n];
		ia = 1.0f / (nl + ct + nr);
		il = 1.0f / nl;
		ir = 1.0f / nr;
		half = nl == 0.0f ? -1 : nr == 0.0f ? 1 : 0;
		if (nl == 0.0f && nr == 0.0f)
			half = 2;   /* no training gate either side: ca's mean */
	}
	for (unsigned r = 0; r < nk; r++) {
		unsigned det = 0;

		if (n < R) {
			unsigned k = k0 + r, idx = k * a.R + (unsigned)n;
			size_t o = (size_t)mp * NdR + idx;   /* the cell in the maps */
			const float *fr = wf + r * span + c, *tr = st + r * span + c;
			float lead = cu_colsum_k<GR>(tr - gr, gr, 1), lag = cu_colsum_k<GR>(tr + 1, gr, 1);
			float v = map[idx], z, ml, mr;

			if (trn) {
				lead += fr[-h];
				lag += fr[gr + 1];
			}
			if (a.method == PC_CFAR_CA || half == 2) {
				z = lead + *tr + lag;
				z = isfinite(z) ? z * ia * nrm : NAN;
			} else {
				ml = half < 0 ? lag * ir : lead * il;
				mr = half > 0 ? ml : lag * ir;
				z = isfinite(ml) && isfinite(mr) ?
					    (a.method == PC_CFAR_GO ? fmaxf(ml, mr) : fminf(ml, mr)) * nrm :
					    NAN;
			}
			if (v > thr * z) {
				ncross++;
				det = cu_is_max(map, ma, k, (unsigned)n, idx, v) &&
				      cu_beam_max(map, ma, mp, idx, v);
				if (det)
					noise[o] = z;
			}
			mask[o] = (unsigned char)det;
		}
		det = __reduce_add_sync(0xffffffffu, det);
		if ((threadIdx.x & 31) == 0 && det)
			atomicAdd(&rowcnt[(size_t)mp * a.Nd + k0 + r], det);
	}
	ncross = __reduce_add_sync(0xffffffffu, ncross);
	if ((threadIdx.x & 31) == 0 && ncross)
		atomicAdd(cross, (unsigned long long)ncross);
}

/* ca/go/so with a halo too wide for shared memory: direct sums per cell,
 * ascending dn, from global memory (the L1/L2 caches serve). */
__global__ void k_cfar_range_wide(const float *__restrict__ sf, const float *__restrict__ st,
				  struct cu_cfar_args a, const float *__restrict__ norm,
				  float *__restrict__ noise)
{
	unsigned row = blockIdx.x, n = blockIdx.y * blockDim.x + threadIdx.x;
	int h = (int)(a.gr + a.tr);
	const float *gf = sf + (size_t)row * a.R, *gt = st + (size_t)row * a.R;
	double cf = 2.0 * (a.gd + a.td) + 1.0, ct = 2.0 * a.td;
	double sl = 0.0, sr = 0.0, nl = 0.0, nr = 0.0, mean;
	int badl = 0, badr = 0, bad;

	if (n >= a.R)
		return;
	for (int dn = -h; dn <= h; dn++) {
		int g = (int)n + dn, guard = dn >= -(int)a.gr && dn <= (int)a.gr;
		float full, v;

		if (dn == 0 || g < 0 || g >= (int)a.R)
			continue;
		full = gf[g];
		v = guard ? gt[g] : full;
		if (dn < 0) {
			sl += isfinite(v) ? v : 0.0;
			nl += guard ? ct : cf;
			badl |= !isfinite(full);
		} else {
			sr += isfinite(v) ? v : 0.0;
			nr += guard ? ct : cf;
			badr |= !isfinite(full);
		}
	}
	if (a.method == PC_CFAR_CA || (nl == 0.0 && nr == 0.0)) {
		mean = (sl + (double)gt[n] + sr) / (nl + ct + nr);
		bad = badl | badr | !isfinite(gf[n]);
	} else if (nl == 0.0) {
		mean = sr / nr;
		bad = badr;
	} else if (nr == 0.0) {
		mean = sl / nl;
		bad = badl;
	} else {
		double ml = sl / nl, mr = sr / nr;

		mean = a.method == PC_CFAR_GO ? fmax(ml, mr) : fmin(ml, mr);
		bad = badl | badr;
	}
	noise[(size_t)row * a.R + n] = bad ? NAN : (float)mean * norm[n];
}

/* 4c. os, one thread per cell (x: gates, y strides over rows): the
 * rank[n]-th smallest training cell, by Wirth's selection. */
__global__ void k_cfar_os(const float *__restrict__ x, unsigned rows, struct cu_cfar_args a,
			  const unsigned *__restrict__ rank, const float *__restrict__ norm,
			  float *__restrict__ noise)
{
	float c[PC_CFAR_OS_MAX_CELLS];
	unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
	int w = (int)(a.gd + a.td), h = (int)(a.gr + a.tr);

	if (n >= a.R)
		return;
	for (unsigned row = blockIdx.y; row < rows; row += gridDim.y) {
		unsigned mp = row / a.Nd, k = row % a.Nd;
		const float *map = x + (size_t)mp * a.Nd * a.R;
		int cnt = 0, bad = 0, kk, l, m;

		for (int dk = -w; dk <= w; dk++) {
			const float *r = map + (size_t)cu_wrap((int)k + dk, a.Nd) * a.R;
			int gk = dk >= -(int)a.gd && dk <= (int)a.gd;

			for (int dn = -h; dn <= h; dn++) {
				int g = (int)n + dn;

				if (g < 0 || g >= (int)a.R || (gk && dn >= -(int)a.gr && dn <= (int)a.gr))
					continue;
				if (cnt < (int)PC_CFAR_OS_MAX_CELLS)
					c[cnt++] = r[g];
				bad |= !isfinite(r[g]);
			}
		}
		if (bad) {   /* no estimate from a non-finite training set */
			noise[(size_t)row * a.R + n] = NAN;
			continue;
		}
		kk = (int)rank[n] - 1;
		if (kk >= cnt)
			kk = cnt - 1;
		if (kk < 0)
			kk = 0;
		l = 0;
		m = cnt - 1;
		while (l < m) {
			float t = c[kk];
			int i = l, j = m;

			do {
				while (c[i] < t)
					i++;
				while (t < c[j])
					j--;
				if (i <= j) {
					float s = c[i];

					c[i] = c[j];
					c[j] = s;
					i++;
					j--;
				}
			} while (i <= j);
			if (j < kk)
				l = i;
			if (kk < i)
				m = j;
		}
		noise[(size_t)row * a.R + n] = (cnt > 0 ? c[kk] : 0.0f) * norm[n];
	}
}


/*
 * 5. One block per map row (mp, k): crossings and local maxima, the
 * row's detections counted into rowcnt, its crossings added to *cross.
 */
__global__ void k_locmax(const float *__restrict__ x, const float *__restrict__ noise,
			 const float *__restrict__ alpha, struct cu_max_args a,
			 unsigned char *__restrict__ mask, unsigned *__restrict__ rowcnt,
			 unsigned long long *cross)
{
	__shared__ unsigned sdet, scross;
	unsigned row = blockIdx.x, mp = row / a.Nd, k = row % a.Nd;
	const float *map = x + (size_t)mp * a.Nd * a.R;   /* this map; 32-bit offsets in it */
	const float *nz = noise + (size_t)row * a.R;
	unsigned char *mk = mask + (size_t)row * a.R;
	unsigned ndet = 0, ncross = 0, idx0 = k * a.R;

	if (threadIdx.x == 0)
		sdet = scross = 0;
	__syncthreads();
	for (unsigned n = threadIdx.x; n < a.R; n += blockDim.x) {
		unsigned idx = idx0 + n;
		float v = map[idx];
		int over = v > alpha[n] * nz[n], det = over;

		/* the neighbourhood only where the threshold is crossed (rare) */
		det = det && cu_is_max(map, a, k, n, idx, v) && cu_beam_max(map, a, mp, idx, v);
		mk[n] = (unsigned char)det;
		ndet += (unsigned)det;
		ncross += (unsigned)over;
	}
	/* the row's counts: per warp, then one shared add per warp */
	ndet = __reduce_add_sync(0xffffffffu, ndet);
	ncross = __reduce_add_sync(0xffffffffu, ncross);
	if ((threadIdx.x & 31) == 0 && (ndet | ncross)) {
		atomicAdd(&sdet, ndet);
		atomicAdd(&scross, ncross);
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		rowcnt[row] = sdet;
		if (scross)
			atomicAdd(cross, (unsigned long long)scross);
	}
}

/* What k_scan writes into the header besides the counts. */
struct cu_hdr_args {
	unsigned maps, Nd, R, max_det;
	uint32_t flags;
};

/*
 * 6a. One block of CU_SCAN threads: the exclusive scan of rows row counts
 * (each thread a contiguous run of rows), then the header. The threads'
 * partial sums are scanned in two levels of warp shuffles (within each
 * warp, then across the warps' totals): log steps, not a walk by one
 * thread over all CU_SCAN of them.
 */
#define CU_SCAN 1024
__global__ void k_scan(const unsigned *__restrict__ rowcnt, unsigned rows,
		       unsigned *__restrict__ rowoff, const unsigned long long *cross,
		       struct cu_hdr_args a, struct chirp_det_header *hdr)
{
	__shared__ unsigned wtot[CU_SCAN / 32];
	unsigned per = (rows + CU_SCAN - 1) / CU_SCAN, lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
	unsigned r0 = threadIdx.x * per, r1 = min(rows, r0 + per), sum = 0, inc, run;

	for (unsigned r = r0; r < r1; r++)
		sum += rowcnt[r];
	inc = sum;   /* inclusive scan within the warp */
	for (unsigned o = 1; o < 32; o <<= 1) {
		unsigned t = __shfl_up_sync(0xffffffffu, inc, o);

		inc += lane >= o ? t : 0u;
	}
	if (lane == 31)
		wtot[wp] = inc;
	__syncthreads();
	if (wp == 0) {   /* the warps' totals, inclusive, in place */
		unsigned t = wtot[lane], x = t;

		for (unsigned o = 1; o < 32; o <<= 1) {
			unsigned y = __shfl_up_sync(0xffffffffu, x, o);

			x += lane >= o ? y : 0u;
		}
		wtot[lane] = x;
	}
	__syncthreads();
	run = wtot[CU_SCAN / 32 - 1];   /* the rows' total */
	if (threadIdx.x == 0) {
		hdr->magic = CHIRP_DET_MAGIC;
		hdr->version = CHIRP_DET_VERSION;
		hdr->record_bytes = (uint16_t)sizeof(struct chirp_det_record);
		hdr->seq = 0;
		hdr->timestamp_ns = 0;
		hdr->first_sample = 0;
		hdr->mode = 0;   /* the host's: cu_radar_stamp */
		hdr->flags = a.flags | (run > a.max_det ? CHIRP_DET_OVERFLOW : 0u);
		hdr->count = run < a.max_det ? run : a.max_det;
		hdr->found = run;
		hdr->maps = a.maps;
		hdr->doppler_bins = a.Nd;
		hdr->range_gates = a.R;
		hdr->reserved = 0;
		hdr->cells = (uint64_t)a.maps * a.Nd * a.R;
		hdr->crossings = *cross;
	}
	sum = inc - sum + (wp > 0 ? wtot[wp - 1] : 0u);   /* exclusive */
	for (unsigned r = r0; r < r1; r++) {
		rowoff[r] = sum;
		sum += rowcnt[r];
	}
}

/* What k_records needs besides its buffers. */
struct cu_rec_args {
	unsigned Nd, R, max_det;
	int integrate;
	float range_m_per_gate, mps_per_bin;
	unsigned beams;          /* B with beams, else 0                    */
	const float2 *dop;       /* beams: the Doppler outputs [f][b][n],
				    NULL on k_doppler's path (k_dop_cells) */
	float2 *mono;            /* beams: per record D of beams b-1, b, b+1 */
};

/*
 * 6b. One block per map row (CU_RT threads, whole warps): the row's
 * detections in gate order, at rowoff[row] + their rank in the row (warp
 * ballots, then the warps in order), written only below max_det.
 */
__global__ void k_records(const float *__restrict__ x, const float *__restrict__ noise,
			  const unsigned char *__restrict__ mask, const unsigned *__restrict__ rowcnt,
			  const unsigned *__restrict__ rowoff, struct cu_rec_args a,
			  struct chirp_det_record *rec)
{
	__shared__ unsigned wsum[CU_RT / 32];
	__shared__ unsigned base;
	unsigned row = blockIdx.x, mp = row / a.Nd, k = row % a.Nd;
	unsigned lane = threadIdx.x & 31, wp = threadIdx.x >> 5;

	/* most rows hold no detection, or none that fits: nothing to scan */
	if (rowcnt[row] == 0 || rowoff[row] >= a.max_det)
		return;

	if (threadIdx.x == 0)
		base = rowoff[row];
	for (unsigned n0 = 0; n0 < a.R; n0 += blockDim.x) {
		unsigned n = n0 + threadIdx.x, off, tot = 0;
		size_t cell = (size_t)row * a.R + n;
		int f = n < a.R && mask[cell];
		unsigned bal = __ballot_sync(0xffffffffu, f);

		if (lane == 0)
			wsum[wp] = __popc(bal);
		__syncthreads();
		off = base + __popc(bal & ((1u << lane) - 1u));
		for (unsigned i = 0; i < blockDim.x / 32; i++) {
			if (i < wp)
				off += wsum[i];
			tot += wsum[i];
		}
		if (f && off < a.max_det) {
			struct chirp_det_record *r = rec + off;
			float v = x[(size_t)mp * a.Nd * a.R + (size_t)k * a.R + n];
			float z = noise[cell];
			int bin = (int)k - (int)(a.Nd / 2);

			r->channel = a.integrate ? CHIRP_DET_CHANNEL_ALL : (int32_t)mp;
			r->range_gate = n;
			r->doppler_bin = bin;
			r->range_m = (float)n * a.range_m_per_gate;
			r->velocity_mps = (float)bin * a.mps_per_bin;
			r->power = v;
			r->noise = z;
			r->snr_db = 10.0f * log10f(v / (z > PC_POWER_FLOOR ? z : PC_POWER_FLOOR));
			r->beam = a.beams ? (int32_t)mp : CHIRP_DET_BEAM_NONE;
			r->azimuth_deg = NAN;      /* beams: the host's (cu_radar_stamp) */
			r->elevation_deg = NAN;
			r->angle_quality = 0;
			r->reserved = 0;
			if (a.beams && a.dop) {   /* the cell's D in beams mp - 1 .. mp + 1 */
				unsigned f = (k + a.Nd - a.Nd / 2) % a.Nd;

				for (int j = 0; j < 3; j++) {
					int b = (int)mp - 1 + j;

					a.mono[3 * (size_t)off + j] =
						b < 0 || b >= (int)a.beams ? make_float2(0.0f, 0.0f)
						: a.dop[((size_t)f * a.beams + b) * a.R + n];
				}
			}
		}
		__syncthreads();
		if (threadIdx.x == 0)
			base += tot;
	}
}

/* What k_dop_cells needs besides its buffers. */
struct cu_dcell_args {
	size_t pe;               /* elements between compressed rows        */
	unsigned P, Pm, Nd, B, max_det;
	int mti;
};

/*
 * 6c. With beams on k_doppler's path, which keeps no D: for record slot
 * i < count and j = 0..2, D of beam b - 1 + j at the record's cell (bin
 * f, gate n) -> mono[3 i + j], zero for a beam outside the fan. D is k_doppler's
 * definition summed directly, sum over p < P' of win[p] MTI(y)[p]
 * e^{-2 pi i f p / Nd} (Nd a power of two, tw[m] = e^{-2 pi i m / Nd} for
 * m < Nd / 2, the other half its negation): one warp per value, lanes
 * over pulses, a butterfly sum. It equals the transform's bin to float
 * rounding, as the CPU's FFT does.
 */
#define CU_DC_WARPS 8
__global__ void __launch_bounds__(32 * CU_DC_WARPS)
k_dop_cells(const float2 *__restrict__ fft, struct cu_dcell_args a, const float *__restrict__ win,
	    const float2 *__restrict__ tw, const struct chirp_det_header *__restrict__ hdr,
	    const struct chirp_det_record *__restrict__ rec, float2 *__restrict__ mono)
{
	unsigned v = blockIdx.x * CU_DC_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
	unsigned i = v / 3, j = v - 3 * i, cnt = min(hdr->count, a.max_det);
	float sx = 0.0f, sy = 0.0f;
	int b;

	if (i >= cnt)
		return;
	b = rec[i].beam - 1 + (int)j;
	if (b >= 0 && b < (int)a.B) {
		unsigned f = (unsigned)(rec[i].doppler_bin + (int)a.Nd) & (a.Nd - 1);
		const float2 *y0 = fft + (size_t)b * a.P * a.pe + rec[i].range_gate;

		for (unsigned p = lane; p < a.Pm; p += 32) {
			unsigned m = (f * p) & (a.Nd - 1);
			float2 x = cu_mti(y0 + (size_t)p * a.pe, a.pe, a.mti);
			float2 w = m < a.Nd / 2 ? tw[m] : tw[m - a.Nd / 2];

			if (m >= a.Nd / 2)
				w = make_float2(-w.x, -w.y);
			x = make_float2(win[p] * x.x, win[p] * x.y);
			sx += x.x * w.x - x.y * w.y;
			sy += x.x * w.y + x.y * w.x;
		}
		for (unsigned o = 16; o > 0; o >>= 1) {
			sx += __shfl_xor_sync(0xffffffffu, sx, o);
			sy += __shfl_xor_sync(0xffffffffu, sy, o);
		}
	}
	if (lane == 0)
		mono[3 * (size_t)i + j] = make_float2(sx, sy);
}

/*
 * 8 snapshot (a CPI with a request only, chirp/pc.h SNAPSHOTS): cell
 * (i, j) of selected map t is the max of M[map][i dd .. + dd)[j dr .. +
 * dr) clipped to the map, NaN ignored (v > m is false for NaN), -INFINITY
 * for a block of NaN: maxhold.h's rule, a selection, so exactly the map's
 * own values. A thread per cell; the map is read once in all. Which map
 * the t-th selected is: the first nlow from low[], the rest consecutive
 * from 63 (bit 63 of the mask).
 */
struct cu_snap_args {
	unsigned nd, R, dd, dr, rows, cols, nlow;
	unsigned char low[63];
};

__global__ static void k_maxhold(const float *__restrict__ map, struct cu_snap_args a,
				 unsigned maps, float *__restrict__ out)
{
	size_t cells = (size_t)a.rows * a.cols;
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (idx >= (size_t)maps * cells)
		return;
	{
		unsigned t = (unsigned)(idx / cells), c = (unsigned)(idx % cells);
		unsigned i = c / a.cols, j = c % a.cols;
		unsigned m = t < a.nlow ? a.low[t] : 63 + (t - a.nlow);
		unsigned k1 = min((i + 1) * a.dd, a.nd), n1 = min((j + 1) * a.dr, a.R);
		const float *mp = map + (size_t)m * a.nd * a.R;
		float v = -INFINITY;

		for (unsigned k = i * a.dd; k < k1; k++)
			for (unsigned n = j * a.dr; n < n1; n++) {
				float x = mp[(size_t)k * a.R + n];

				if (x > v)
					v = x;
			}
		out[idx] = v;
	}
}

/* ---- launches ----------------------------------------------------------------- */

/* A grid of gates (x) by rows (y, strided past the y limit). */
static dim3 cu_rgrid(unsigned R, size_t rows)
{
	return dim3((R + CU_RT - 1) / CU_RT, rows < 65535 ? (unsigned)rows : 65535u);
}

/* k_cfar_fused's shared memory: the tile's cells with their halo (then
 * the range sums of f), and f and t over the tile's rows and range halo. */
static size_t cu_cfar_smem(const struct radar_setup *rs)
{
	return sizeof(float) * (3 * CU_TK + 2 * (size_t)(rs->gd + rs->td)) *
	       (CU_TG + 2 * (size_t)(rs->gr + rs->tr));
}

/* k_cfar_fused for the windows: compiled for chirpd's default ones
 * (PC_CFAR_TRAIN_DOPPLER ...: chirp/pc_types.h), their short sums
 * unrolled, the same sums in the same order; any other windows in a's. */
typedef void (*cu_cfar_fn)(const float *, struct cu_cfar_args, const float *, const float *,
			   struct cu_max_args, float *, unsigned char *, unsigned *,
			   unsigned long long *);

static cu_cfar_fn cu_cfar_kernel(const struct radar_setup *rs)
{
	if (rs->td == PC_CFAR_TRAIN_DOPPLER && rs->gd == PC_CFAR_GUARD_DOPPLER &&
	    rs->gr == PC_CFAR_GUARD_RANGE && rs->tr == PC_CFAR_TRAIN_RANGE)
		return k_cfar_fused<PC_CFAR_TRAIN_DOPPLER, PC_CFAR_GUARD_DOPPLER, PC_CFAR_GUARD_RANGE,
				    PC_CFAR_TRAIN_RANGE>;
	return k_cfar_fused<-1, -1, -1, -1>;
}

/* k_cfar_fused's threads: a warp more for every 32 columns of the range
 * halo, so that step a gives every thread one column (a thread with two
 * holds the whole block at the barrier), up to CU_TMAX. */
static unsigned cu_cfar_threads(const struct radar_setup *rs)
{
	size_t t = CU_TG + (2 * (size_t)(rs->gr + rs->tr) + 31) / 32 * 32;

	return t <= CU_TMAX ? (unsigned)t : CU_TG;
}

/* Whether ca/go/so runs as k_cfar_fused (which also finds the maxima). */
static int cu_cfar_fuses(const struct radar_setup *rs)
{
	return rs->method != PC_CFAR_OS && cu_cfar_smem(rs) <= CU_SMEM_MAX;
}

/* The CFAR's input: I when integrated, else the channels' maps. */
static const float *cu_cfar_in(const struct cu_be *be, const struct cu_set *s)
{
	return be->rs->integrate ? s->r.d_imap : s->r.d_map;
}

/* 4: noise per cell, by the method. */
static int cu_enq_cfar(struct cu_be *be, struct cu_set *s, struct cu_err *ce)
{
	const struct radar_setup *rs = be->rs;
	struct cu_radar_set *r = &s->r;
	unsigned R = rs->samples, rows = rs->maps * rs->nd;
	struct cu_cfar_args a = { rs->nd, R, rs->gr, rs->tr, rs->gd, rs->td, (int)rs->method };
	cudaStream_t st = s->stream;

	EQ(cudaMemsetAsync(r->d_cross, 0, sizeof(*r->d_cross), st));

	if (rs->method == PC_CFAR_OS) {
		k_cfar_os<<<cu_rgrid(R, rows), CU_RT, 0, st>>>(cu_cfar_in(be, s), rows, a, be->d_rank,
							      be->d_norm, r->d_noise);
		EQK("k_cfar_os", cudaGetLastError());
		return 0;
	}
	{
		size_t smem = cu_cfar_smem(rs);
		unsigned nseg = (rs->nd + CU_DSEG - 1) / CU_DSEG;
		unsigned rtiles = rs->maps * ((rs->nd + CU_TK - 1) / CU_TK);

		/* row tiles on x: no 65535 limit */
		if (cu_cfar_fuses(rs)) {
			struct cu_max_args ma = { rs->nd, R, rs->md, rs->mr, rs->maps,
						  rs->beams > 0 };

			EQ(cudaMemsetAsync(r->d_rowcnt, 0, (size_t)rows * sizeof(unsigned), st));
			cu_cfar_kernel(rs)<<<dim3(rtiles, (R + CU_TG - 1) / CU_TG), cu_cfar_threads(rs),
					     smem, st>>>(
				cu_cfar_in(be, s), a, be->d_norm, be->d_alpha, ma, r->d_noise, r->d_mask,
				r->d_rowcnt, r->d_cross);
		} else {   /* a halo too wide for shared memory: two passes */
			k_cfar_dop<<<cu_rgrid(R, (size_t)rs->maps * nseg), CU_RT, 0, st>>>(
				cu_cfar_in(be, s), rs->maps, rs->nd, R, rs->gd, rs->td, r->d_sf,
				r->d_st);
			EQK("k_cfar_dop", cudaGetLastError());
			k_cfar_range_wide<<<dim3(rows, (R + CU_RT - 1) / CU_RT), CU_RT, 0, st>>>(
				r->d_sf, r->d_st, a, be->d_norm, r->d_noise);
		}
		EQK("k_cfar_fused / k_cfar_range_wide", cudaGetLastError());
	}
	return 0;
}

/* 5 and 6: local maxima, the scan and header, the records. */
static int cu_enq_list(struct cu_be *be, struct cu_set *s, struct cu_err *ce)
{
	const struct radar_setup *rs = be->rs;
	struct cu_radar_set *r = &s->r;
	unsigned rows = rs->maps * rs->nd;
	struct cu_max_args ma = { rs->nd, rs->samples, rs->md, rs->mr, rs->maps, rs->beams > 0 };
	struct cu_hdr_args ha = { rs->maps, rs->nd, rs->samples, rs->max_det, rs->det_flags };
	struct cu_rec_args ra = { rs->nd, rs->samples, rs->max_det, rs->integrate,
				  rs->range_m_per_gate, rs->mps_per_bin, rs->beams, r->d_dop,
				  r->d_mono };
	struct cu_dcell_args da = { be->pitch_elems, rs->pulses, rs->pulses_mti, rs->nd,
				    rs->beams, rs->max_det, (int)rs->mti };
	struct chirp_det_header *hdr = (struct chirp_det_header *)r->d_det;
	cudaStream_t st = s->stream;

	if (!cu_cfar_fuses(rs)) {   /* else k_cfar_fused did the maxima and counts */
		k_locmax<<<rows, CU_RT, 0, st>>>(cu_cfar_in(be, s), r->d_noise, be->d_alpha, ma,
						 r->d_mask, r->d_rowcnt, r->d_cross);
		EQK("k_locmax", cudaGetLastError());
	}
	k_scan<<<1, CU_SCAN, 0, st>>>(r->d_rowcnt, rows, r->d_rowoff, r->d_cross, ha, hdr);
	EQK("k_scan", cudaGetLastError());
	k_records<<<rows, CU_RT, 0, st>>>(cu_cfar_in(be, s), r->d_noise, r->d_mask, r->d_rowcnt,
					  r->d_rowoff, ra,
					  (struct chirp_det_record *)(hdr + 1));
	EQK("k_records", cudaGetLastError());
	if (rs->beams && !r->d_dop) {   /* k_doppler's path: D at the records' cells */
		unsigned warps = 3 * rs->max_det;

		k_dop_cells<<<(warps + CU_DC_WARPS - 1) / CU_DC_WARPS, 32 * CU_DC_WARPS, 0, st>>>(
			s->d_fft, da, be->d_win, be->d_dtw, hdr,
			(const struct chirp_det_record *)(hdr + 1), r->d_mono);
		EQK("k_dop_cells", cudaGetLastError());
	}
	if (be->bm && cu_beams_mono(be, s, ce) < 0)   /* the records' angles */
		return -EIO;
	return 0;
}

/* 8: the snapshot's max-hold of M (the maps a map_power output copies:
 * d_map, per channel or beam, also when the CFAR runs on I) into d_snap,
 * and one copy of just those cells to the pinned h_snap. pc.c checked the
 * request (maps x rows x cols <= snap_cells). */
static int cu_enq_snap(struct cu_be *be, struct cu_set *s, const struct pc_snap_cmd *q,
		       struct cu_err *ce)
{
	const struct radar_setup *rs = be->rs;
	struct cu_radar_set *r = &s->r;
	size_t n = (size_t)q->maps * q->rows * q->cols;
	struct cu_snap_args a;

	memset(&a, 0, sizeof(a));
	a.nd = rs->nd;
	a.R = rs->samples;
	a.dd = q->dd;
	a.dr = q->dr;
	a.rows = q->rows;
	a.cols = q->cols;
	for (unsigned t = 0; t < q->maps && maxhold_sel_map(q->map_mask, t) < 63; t++)
		a.low[a.nlow++] = (unsigned char)maxhold_sel_map(q->map_mask, t);
	k_maxhold<<<(unsigned)((n + CU_RT - 1) / CU_RT), CU_RT, 0, s->stream>>>(r->d_map, a,
										  q->maps, r->d_snap);
	EQK("k_maxhold", cudaGetLastError());
	EQ(cudaMemcpyAsync(r->h_snap, r->d_snap, n * sizeof(float), cudaMemcpyDeviceToHost,
			   s->stream));
	return 0;
}

int cu_radar_enqueue(struct cu_be *be, struct cu_set *s, const struct cu_dst *dst,
		     struct cu_err *ce)
{
	const struct radar_setup *rs = be->rs;
	struct cu_radar_set *r = &s->r;
	unsigned C = rs->channels, R = rs->samples, Nd = rs->nd;
	cudaStream_t st = s->stream;
	cufftComplex *z = (cufftComplex *)r->d_dop;

	if (be->d_dtw) {   /* 1-3 in one pass */
		unsigned lg = 0, dg = CU_DOP_CELLS / Nd < 16 ? CU_DOP_CELLS / Nd : 16;

		while ((1u << lg) < Nd)
			lg++;
		k_doppler<<<dim3((R + dg - 1) / dg, C), CU_DOP_T, 0, st>>>(
			s->d_fft, be->pitch_elems, C, rs->pulses, R, rs->pulses_mti, Nd, lg, dg,
			(int)rs->mti, be->d_win, be->d_dtw, NULL, r->d_map,
			be->out_mode == PC_OUT_MAP_DB ? (float *)s->d_out : NULL);
		EQK("k_doppler", cudaGetLastError());
	} else {
		k_mti<<<cu_rgrid(R, (size_t)C * rs->pulses_mti), CU_RT, 0, st>>>(
			s->d_fft, be->pitch_elems, C, rs->pulses, R, rs->pulses_mti, Nd,
			(int)rs->mti, be->d_win, r->d_zin);
		EQK("k_mti", cudaGetLastError());
		EQF(cufftExecC2C(r->plan, (cufftComplex *)r->d_zin, z, CUFFT_FORWARD));
		k_map<<<cu_rgrid(R, Nd), CU_RT, 0, st>>>(r->d_dop, C, R, Nd, r->d_map, r->d_imap,
							 be->out_mode == PC_OUT_MAP_DB ?
								 (float *)s->d_out : NULL);
		EQK("k_map", cudaGetLastError());
	}
	if (rs->cfar) {
		if (cu_enq_cfar(be, s, ce) < 0 || cu_enq_list(be, s, ce) < 0)
			return -EIO;
	}
	if (be->out_mode == PC_OUT_MAP_POWER || be->out_mode == PC_OUT_MAP_DB)
		EQ(cudaMemcpyAsync(dst->out,
				   be->out_mode == PC_OUT_MAP_DB ? s->d_out : (void *)r->d_map,
				   be->out_bytes, cudaMemcpyDefault, st));
	if (rs->cfar)
		EQ(cudaMemcpyAsync(dst->det, r->d_det, be->det_bytes, cudaMemcpyDefault, st));
	if (dst->snap && cu_enq_snap(be, s, dst->snap, ce) < 0)
		return -EIO;
	return 0;
}

/* ---- pc_poll ---------------------------------------------------------------------- */

int cu_radar_stamp(struct cu_be *be, struct cu_set *s)
{
	struct chirp_det_header *h = (struct chirp_det_header *)s->det;

	if (!s->det)
		return 0;
	if (s->stage_det) {
		const struct chirp_det_header *sh = (const struct chirp_det_header *)s->r.h_det;
		size_t n = sh->count < be->rs->max_det ? sh->count : be->rs->max_det;
		int hr = hcopy_run(be->hc, s->det, s->r.h_det,
				   sizeof(*sh) + n * sizeof(struct chirp_det_record));

		if (hr < 0) {
			cu_fail(be, "hcopy_run(detections)", strerror(-hr));
			return -EIO;
		}
	}
	h->mode = s->mode;
	return 0;
}

int cu_radar_make_snap(struct cu_be *be, struct cu_set *s)
{
	struct cu_radar_set *r = &s->r;
	int rc = 0;

	CK(cudaMalloc((void **)&r->d_snap, be->snap_cells * sizeof(float)));
	CK(cudaHostAlloc((void **)&r->h_snap, be->snap_cells * sizeof(float), cudaHostAllocDefault));
	CK(cudaEventCreateWithFlags(&r->ev_snap, cudaEventDisableTiming));
out:
	return rc;
}

int cu_radar_snap_tail(struct cu_be *be, struct cu_set *s, const struct pc_snap_cmd *q,
		       struct cu_err *ce)
{
	if (cu_enq_snap(be, s, q, ce) < 0)
		return -EIO;
	EQ(cudaEventRecord(s->r.ev_snap, s->stream));
	return 0;
}

void cu_radar_snap_done(struct cu_set *s, int skipped)
{
	if (!s->snap)
		return;
	if (skipped)
		for (size_t i = 0; i < s->snap_n; i++)
			s->snap[i] = -INFINITY;
	else
		memcpy(s->snap, s->r.h_snap, s->snap_n * sizeof(float));
}

/* ---- create / destroy -------------------------------------------------------------- */

/* *d: a device copy of bytes bytes at host. */
static int cu_upload(struct cu_be *be, void **d, const void *host, size_t bytes)
{
	int rc = 0;

	CK(cudaMalloc(d, bytes));
	CK(cudaMemcpy(*d, host, bytes, cudaMemcpyHostToDevice));
out:
	return rc;
}

/* Whether 1-3 run as k_doppler: Nd a power of two, 2 .. CU_DOP_MAX, and
 * no integration (I sums the channels, which k_doppler's blocks split). */
static int cu_doppler_fuses(const struct radar_setup *rs)
{
	return !rs->integrate && rs->nd >= 2 && rs->nd <= CU_DOP_MAX && !(rs->nd & (rs->nd - 1));
}

/* k_doppler's table: e^{-2 pi i m / Nd}, m < Nd / 2, made in double. */
static int cu_doppler_twiddles(struct cu_be *be)
{
	unsigned Nd = be->rs->nd;
	float2 *h = (float2 *)malloc(Nd / 2 * sizeof(float2));
	int rc;

	if (!h) {
		snprintf(be->last_error, sizeof(be->last_error), "out of memory");
		return -ENOMEM;
	}
	for (unsigned m = 0; m < Nd / 2; m++) {
		double a = -2.0 * M_PI * m / Nd;

		h[m] = make_float2((float)cos(a), (float)sin(a));
	}
	rc = cu_upload(be, (void **)&be->d_dtw, h, Nd / 2 * sizeof(float2));
	free(h);
	return rc;
}

int cu_radar_create(struct cu_be *be)
{
	const struct radar_setup *rs = be->rs;
	size_t R = rs->samples;
	int rc;

	if (rs->channels != be->rows / rs->pulses || rs->samples != be->R || rs->nd < 1 ||
	    rs->pulses_mti < 1 || rs->pulses_mti > rs->nd || !rs->window ||
	    (rs->cfar && (!rs->alpha || !rs->norm || !rs->rank || rs->max_det < 1))) {
		snprintf(be->last_error, sizeof(be->last_error),
			 "invalid radar setup (C %u, P %u, R %u, P' %u, Nd %u)", rs->channels,
			 rs->pulses, rs->samples, rs->pulses_mti, rs->nd);
		return -EINVAL;
	}
	/* grid limits: a block per map row (x), CU_RT-gate tiles on y; a
	 * map's cells addressed with 32-bit offsets (k_cfar_fused) */
	if ((size_t)rs->maps * rs->nd > INT_MAX || (R + CU_RT - 1) / CU_RT > 65535 ||
	    (size_t)rs->nd * R > INT_MAX) {
		snprintf(be->last_error, sizeof(be->last_error),
			 "radar chain: %u x %u map rows of %u gates exceed the CUDA backend's grid "
			 "(at most %d rows, %u gates)", rs->maps, rs->nd, rs->samples, INT_MAX,
			 65535u * CU_RT);
		return -EINVAL;
	}
	be->det_bytes = rs->cfar ? rs->det_bytes : 0;
	rc = cu_upload(be, (void **)&be->d_win, rs->window, rs->pulses_mti * sizeof(float));
	if (rc == 0 && cu_doppler_fuses(rs))
		rc = cu_doppler_twiddles(be);
	if (rc == 0 && rs->cfar)
		rc = cu_upload(be, (void **)&be->d_alpha, rs->alpha, R * sizeof(float));
	if (rc == 0 && rs->cfar)
		rc = cu_upload(be, (void **)&be->d_norm, rs->norm, R * sizeof(float));
	if (rc == 0 && rs->cfar)
		rc = cu_upload(be, (void **)&be->d_rank, rs->rank, R * sizeof(unsigned));
	return rc;
}

void cu_radar_free(struct cu_be *be)
{
	(void)cudaFree(be->d_win);
	(void)cudaFree(be->d_dtw);
	be->d_dtw = NULL;
	(void)cudaFree(be->d_alpha);
	(void)cudaFree(be->d_norm);
	(void)cudaFree(be->d_rank);
}

/*
 * The Doppler plan: Nd-point transforms along pulses of d_dop
 * ([pulse][channel][gate]), istride = C R, idist = 1, batch C R (the
 * strided corner turn: see the top of this file), d_zin to d_dop (out of place), on s->stream.
 */
static int cu_radar_plan(struct cu_be *be, struct cu_set *s)
{
	const struct radar_setup *rs = be->rs;
	long long cr = (long long)rs->channels * rs->samples;
	long long n[1] = { (long long)rs->nd }, emb[1] = { (long long)rs->nd };
	size_t work = 0;
	int rc = 0;

	CKF(cufftCreate(&s->r.plan));
	s->r.have_plan = 1;
	CKF(cufftMakePlanMany64(s->r.plan, 1, n, emb, cr, 1, emb, cr, 1, CUFFT_C2C, cr, &work));
	CKF(cufftSetStream(s->r.plan, s->stream));
out:
	return rc;
}

int cu_radar_make_set(struct cu_be *be, struct cu_set *s)
{
	const struct radar_setup *rs = be->rs;
	struct cu_radar_set *r = &s->r;
	size_t cube = (size_t)rs->channels * rs->nd * rs->samples;
	size_t cells = (size_t)rs->maps * rs->nd * rs->samples, rows = (size_t)rs->maps * rs->nd;
	int rc = 0;

	/* k_mti reads the compressed rows: a set with the chain always has
	 * them (cu_alloc_fft_rows); a set without would be our own bug */
	if (!s->d_fft) {
		snprintf(be->last_error, sizeof(be->last_error),
			 "radar chain on a set without FFT rows");
		return -EINVAL;
	}
	if (!be->d_dtw) {   /* cuFFT's path: k_mti's output and the transform */
		CK(cudaMalloc((void **)&r->d_zin, cube * sizeof(float2)));
		CK(cudaMemset(r->d_zin, 0, cube * sizeof(float2)));   /* the padding, once */
		CK(cudaMalloc((void **)&r->d_dop, cube * sizeof(float2)));
	}
	CK(cudaMalloc((void **)&r->d_map, cube * sizeof(float)));
	if (rs->integrate && rs->cfar)
		CK(cudaMalloc((void **)&r->d_imap, (size_t)rs->nd * rs->samples * sizeof(float)));
	if (rs->cfar) {
		if (rs->method != PC_CFAR_OS && cu_cfar_smem(rs) > CU_SMEM_MAX) {
			CK(cudaMalloc((void **)&r->d_sf, cells * sizeof(float)));
			CK(cudaMalloc((void **)&r->d_st, cells * sizeof(float)));
		}
		CK(cudaMalloc((void **)&r->d_noise, cells * sizeof(float)));
		CK(cudaMalloc((void **)&r->d_mask, cells));
		CK(cudaMalloc((void **)&r->d_rowcnt, rows * sizeof(unsigned)));
		CK(cudaMalloc((void **)&r->d_rowoff, rows * sizeof(unsigned)));
		CK(cudaMalloc((void **)&r->d_cross, sizeof(*r->d_cross)));
		CK(cudaMalloc(&r->d_det, be->det_bytes));
		/* records past a CPI's count are copied too: never stale garbage */
		CK(cudaMemset(r->d_det, 0, be->det_bytes));
		if (rs->beams) {
			CK(cudaMalloc((void **)&r->d_mono, (size_t)rs->max_det * 3 * sizeof(float2)));
		}
	}
	rc = be->d_dtw ? 0 : cu_radar_plan(be, s);
out:
	return rc;
}

void cu_radar_free_set(struct cu_set *s)
{
	struct cu_radar_set *r = &s->r;

	if (r->have_plan)
		(void)cufftDestroy(r->plan);
	(void)cudaFree(r->d_zin);
	(void)cudaFree(r->d_dop);
	(void)cudaFree(r->d_map);
	(void)cudaFree(r->d_imap);
	(void)cudaFree(r->d_sf);
	(void)cudaFree(r->d_st);
	(void)cudaFree(r->d_noise);
	(void)cudaFree(r->d_mask);
	(void)cudaFree(r->d_rowcnt);
	(void)cudaFree(r->d_rowoff);
	(void)cudaFree(r->d_cross);
	(void)cudaFree(r->d_det);
	(void)cudaFree(r->d_mono);
	if (r->h_det)
		(void)cudaFreeHost(r->h_det);
	(void)cudaFree(r->d_snap);
	if (r->h_snap)
		(void)cudaFreeHost(r->h_snap);
	if (r->ev_snap)
		(void)cudaEventDestroy(r->ev_snap);
}
