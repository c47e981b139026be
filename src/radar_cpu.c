/* SPDX-License-Identifier: Apache-2.0 */
/*
 * radar_cpu.c — the radar chain on the CPU (radar_cpu.h), exactly as
 * chirp/pc.h's RADAR CHAIN defines it, with the tables of radar.h.
 *
 * Steps per CPI, in three stages of independent items (the backend's
 * worker pool runs each stage's items on its threads, radar_cpu_item;
 * radar_cpu_run runs them all on the caller) and a last step on the
 * caller:
 *   stage 0, an item per channel and stripe of RADAR_STRIPE gates:
 *   1. MTI and window: z[c][p][n] = w[p] g_d mti(y)[c][p][n] for p < P',
 *      in float; rows P'..Nd-1 of z are zero from create on (nothing
 *      writes them).
 *   2. The stripe's Doppler FFTs: length Nd along pulses (stride R), one
 *      FFTW plan of RADAR_STRIPE transforms (and one for the last, narrower
 *      stripe), planned unaligned so any stripe can run it, out of place
 *      into d.
 *   3. Power with the shift: M[c][k][n] = |d[c][(k - floor(Nd/2)) mod
 *      Nd][n]|^2.
 *   stage 1, an item per Doppler row k: I = sum_c M (channels in order)
 *      when integrating, and
 *   4. map out (map_power, or map_db = 10 log10(max(M, PC_POWER_FLOOR))).
 *   stage 2, an item per map and Doppler row k:
 *   5. CFAR on the row:
 *        ca/go/so: the Doppler sums A[n] = sum_{|dk| <= gd+td} and B[n] =
 *          sum_{|dk| <= gd} of the row's column, in double; range prefix
 *          sums of A and B then give any half's training sum in O(1), so
 *          a cell costs O(gd + td), not O(window). Their limit: a sum
 *          is a difference of two prefixes, off by ~1e-16 of the row's
 *          power up to that gate, so a cell 160 dB over the noise moves
 *          the estimates after it in its row by ~1e-16 x 1e16 = 1 of
 *          the noise (float data runs out of dynamic range about there
 *          anyway); S is clamped at 0 against such rounding;
 *        os: the training cells gathered into a stack array and the k_n-th
 *          picked by quickselect: O(N) a cell.
 *      noise = float(S x norm[n]); a crossing is M > float(alpha[n] x
 *      noise). A training set that holds a NaN or Inf (non-finite input)
 *      gives noise NaN: no crossing there, as a mean with a NaN would.
 *   6. the local-maximum rule; a detection leaves its noise in hit[]
 *      (NaN elsewhere), each row its count of crossings.
 *   last, on the caller: the records, scanning hit[] in (channel, k, n)
 *      order; the first max_det are kept, found counts them all.
 * Nothing is allocated per CPI; each thread has its own CFAR rows.
 */
#include "radar_cpu.h"
#include "beam.h"
#include "errbuf.h"

#include <errno.h>
#include <fftw3.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Gates per stage-0 item: an item's Nd x RADAR_STRIPE complex samples
 * stay in the L1/L2 cache from the MTI through the power. */
#define RADAR_STRIPE 32

/* One thread's CFAR rows. */
#define RADAR_SUM_BLOCK 512   /* gates per block of doppler_sums: 2 x 4 KiB */

struct cfar_rows {
	double *a, *b;                   /* R: the row's Doppler sums       */
	double *pa, *pb;                 /* R+1: their prefix sums, finite
					    terms only                       */
	unsigned *na, *nb;               /* R+1: prefix counts of non-finite */
};

struct radar_cpu {
	const struct radar_setup *rs;
	size_t C, P, R, Pm, Nd, cells;   /* cells: Nd * R, one map          */
	size_t stripes;                  /* stage 0 items per channel       */
	size_t cstride;                  /* complex samples between channels
					    in z and d: cells rounded up to
					    RADAR_STRIPE, so every stripe starts
					    with the alignment its plan was
					    made for (SIMD codelets)         */
	float *cube;                     /* C*P*R complex: compressed rows  */
	fftwf_complex *z, *d;            /* C*cstride: Doppler in, out      */
	fftwf_plan plan, plan_tail;      /* a stripe, the last stripe (or NULL) */
	float *map;                      /* C*Nd*R: M, shifted              */
	float *imap;                     /* Nd*R: I (integrate), else NULL  */
	float *hit;                      /* maps*Nd*R: noise at detections,
					    NaN elsewhere (cfar)             */
	uint32_t *row_cross;             /* maps*Nd: crossings per row      */
	struct cfar_rows *t;             /* per thread                      */
	unsigned threads;
	float *out;                      /* the CPI's map output, or NULL   */
	pthread_mutex_t *lock;
	/* Beams (radar_cpu_set_beams): the set pointed at the CPI and its
	 * weights in double, read by radar_cpu_finish; NULL without. */
	const struct beam_set *bset;
	const double *bw;
	int mono;
};

/* The detection list being written. */
struct det_out {
	struct chirp_det_header *h;
	struct chirp_det_record *rec;
	uint32_t max, count, found;
	uint64_t crossings;
};

void radar_cpu_set_beams(struct radar_cpu *rc, const struct beam_set *s, const double *w,
			 int monopulse)
{
	rc->bset = s;
	rc->bw = w;
	rc->mono = monopulse;
}

float *radar_cpu_cube(struct radar_cpu *rc)
{
	return rc->cube;
}

void radar_cpu_destroy(struct radar_cpu *rc)
{
	if (!rc)
		return;
	pthread_mutex_lock(rc->lock);
	if (rc->plan)
		fftwf_destroy_plan(rc->plan);
	if (rc->plan_tail)
		fftwf_destroy_plan(rc->plan_tail);
	pthread_mutex_unlock(rc->lock);
	fftwf_free(rc->cube);
	fftwf_free(rc->z);
	fftwf_free(rc->d);
	fftwf_free(rc->map);
	fftwf_free(rc->imap);
	fftwf_free(rc->hit);
	free(rc->row_cross);
	for (unsigned i = 0; rc->t && i < rc->threads; i++) {
		free(rc->t[i].a);
		free(rc->t[i].b);
		free(rc->t[i].pa);
		free(rc->t[i].pb);
		free(rc->t[i].na);
		free(rc->t[i].nb);
	}
	free(rc->t);
	free(rc);
}

static int alloc_all(struct radar_cpu *rc)
{
	size_t cube = rc->C * rc->P * rc->R, dop = rc->C * rc->cells;

	rc->cube = fftwf_malloc(cube * 2 * sizeof(float));
	rc->z = fftwf_malloc(rc->C * rc->cstride * sizeof(fftwf_complex));
	rc->d = fftwf_malloc(rc->C * rc->cstride * sizeof(fftwf_complex));
	rc->map = fftwf_malloc(dop * sizeof(float));
	if (!rc->cube || !rc->z || !rc->d || !rc->map)
		return -ENOMEM;
	if (!rc->rs->cfar)
		return 0;
	if (rc->rs->integrate) {
		rc->imap = fftwf_malloc(rc->cells * sizeof(float));
		if (!rc->imap)
			return -ENOMEM;
	}
	rc->hit = fftwf_malloc(rc->rs->maps * rc->cells * sizeof(float));
	rc->row_cross = calloc(rc->rs->maps * rc->Nd, sizeof(*rc->row_cross));
	rc->t = calloc(rc->threads, sizeof(*rc->t));
	if (!rc->hit || !rc->row_cross || !rc->t)
		return -ENOMEM;
	for (unsigned i = 0; i < rc->threads; i++) {
		struct cfar_rows *t = &rc->t[i];

		t->a = calloc(rc->R, sizeof(double));
		t->b = calloc(rc->R, sizeof(double));
		t->pa = calloc(rc->R + 1, sizeof(double));
		t->pb = calloc(rc->R + 1, sizeof(double));
		t->na = calloc(rc->R + 1, sizeof(unsigned));
		t->nb = calloc(rc->R + 1, sizeof(unsigned));
		if (!t->a || !t->b || !t->pa || !t->pb || !t->na || !t->nb)
			return -ENOMEM;
	}
	return 0;
}

/* The Doppler FFTs of width gates: length Nd at stride R. Stripes start
 * at multiples of RADAR_STRIPE gates of a channel that starts at a
 * multiple too (cstride), so all share z's alignment. NULL on failure. */
static fftwf_plan plan_stripe(struct radar_cpu *rc, size_t width, unsigned flags)
{
	int n = (int)rc->Nd;
	fftwf_plan p;

	pthread_mutex_lock(rc->lock);
	p = fftwf_plan_many_dft(1, &n, (int)width, rc->z, NULL, (int)rc->R, 1, rc->d, NULL,
				(int)rc->R, 1, FFTW_FORWARD, flags);
	pthread_mutex_unlock(rc->lock);
	return p;
}

/* A stripe's plan and the last stripe's, planned before z is zeroed (a
 * measuring planner writes into its arrays). */
static int make_plan(struct radar_cpu *rc, unsigned flags, char *err, size_t errlen)
{
	size_t width = rc->R < RADAR_STRIPE ? rc->R : RADAR_STRIPE, tail = rc->R % width;

	rc->stripes = (rc->R + width - 1) / width;
	rc->plan = plan_stripe(rc, width, flags);
	if (rc->plan && tail)
		rc->plan_tail = plan_stripe(rc, tail, flags);
	if (!rc->plan || (tail && !rc->plan_tail)) {
		errbuf_set(err, errlen, "cpu: fftwf_plan_many_dft(Doppler n=%zu, stride %zu) failed",
			   rc->Nd, rc->R);
		return -EINVAL;
	}
	memset(rc->z, 0, rc->C * rc->cstride * sizeof(fftwf_complex));
	return 0;
}

struct radar_cpu *radar_cpu_create(const struct radar_setup *rs, unsigned threads,
				   unsigned fftw_flags, pthread_mutex_t *fftw_lock, char *err,
				   size_t errlen)
{
	struct radar_cpu *rc = calloc(1, sizeof(*rc));

	if (!rc) {
		errbuf_set(err, errlen, "cpu: out of memory for the radar chain");
		return NULL;
	}
	rc->rs = rs;
	rc->threads = threads ? threads : 1;
	rc->lock = fftw_lock;
	rc->C = rs->channels;
	rc->P = rs->pulses;
	rc->R = rs->samples;
	rc->Pm = rs->pulses_mti;
	rc->Nd = rs->nd;
	rc->cells = rc->Nd * rc->R;
	rc->cstride = (rc->cells + RADAR_STRIPE - 1) / RADAR_STRIPE * RADAR_STRIPE;
	if (rc->C * rc->cstride > (size_t)INT32_MAX) {
		errbuf_set(err, errlen, "cpu: range-Doppler map of %zu x %zu x %zu cells exceeds FFTW's int strides",
			   rc->C, rc->Nd, rc->R);
		goto fail;
	}
	if (alloc_all(rc) < 0) {
		errbuf_set(err, errlen, "cpu: out of memory for the radar chain (%zu x %zu x %zu map)",
			   rc->C, rc->Nd, rc->R);
		goto fail;
	}
	if (make_plan(rc, fftw_flags, err, errlen) < 0)
		goto fail;
	return rc;
fail:
	radar_cpu_destroy(rc);
	return NULL;
}

/* ---- steps 1-4: the maps ------------------------------------------------- */

/* Stage 0, item (c, stripe): z = window x MTI(y) for pulses p < P' (the
 * rest of z stays zero), the stripe's Doppler FFTs, M = |d|^2 with the
 * shift (bin k holds m = k - floor(Nd/2)). Gates [n0, n0 + w). */
static void stage_doppler(struct radar_cpu *rc, size_t item)
{
	const float *wn = rc->rs->window;
	size_t R = rc->R, Nd = rc->Nd, h = Nd / 2, c = item / rc->stripes;
	size_t n0 = (item % rc->stripes) * RADAR_STRIPE, w = R - n0 < RADAR_STRIPE ? R - n0 : RADAR_STRIPE;
	const float *y = rc->cube + (c * rc->P * R + n0) * 2;
	float *z = (float *)(rc->z + c * rc->cstride + n0);
	const float *d = (const float *)(rc->d + c * rc->cstride + n0);
	float *m = rc->map + c * rc->cells + n0;

	for (size_t p = 0; p < rc->Pm; p++) {
		const float *y0 = y + p * R * 2, *y1 = y0 + R * 2, *y2 = y1 + R * 2;
		float *zp = z + p * R * 2, g = wn[p];

		switch (rc->rs->mti) {
		case PC_MTI_NONE:
			for (size_t i = 0; i < 2 * w; i++)
				zp[i] = g * y0[i];
			break;
		case PC_MTI_TWO:
			for (size_t i = 0; i < 2 * w; i++)
				zp[i] = g * (y1[i] - y0[i]);
			break;
		case PC_MTI_THREE:
			for (size_t i = 0; i < 2 * w; i++)
				zp[i] = g * (y0[i] - 2.0f * y1[i] + y2[i]);
			break;
		}
	}
	fftwf_execute_dft(w == RADAR_STRIPE || !rc->plan_tail ? rc->plan : rc->plan_tail,
			  rc->z + c * rc->cstride + n0, rc->d + c * rc->cstride + n0);
	for (size_t k = 0; k < Nd; k++) {
		const float *dk = d + ((k + Nd - h) % Nd) * R * 2;
		float *mk = m + k * R;

		for (size_t n = 0; n < w; n++)
			mk[n] = dk[2 * n] * dk[2 * n] + dk[2 * n + 1] * dk[2 * n + 1];
	}
}

/* map_db of one value; NaN stays NaN (a max would hide it). */
static float map_db(float p)
{
	return isnan(p) ? p : (float)(10.0 * log10(p > PC_POWER_FLOOR ? p : PC_POWER_FLOOR));
}

/* Stage 1, item k: row k of I = sum_c M (channels in order), and row k of
 * every channel's map to out. */
static void stage_rows(struct radar_cpu *rc, size_t k)
{
	size_t R = rc->R;

	if (rc->imap) {
		float *im = rc->imap + k * R;

		memcpy(im, rc->map + k * R, R * sizeof(float));
		for (size_t c = 1; c < rc->C; c++) {
			const float *m = rc->map + c * rc->cells + k * R;

			for (size_t n = 0; n < R; n++)
				im[n] += m[n];
		}
	}
	if (!rc->out)
		return;
	for (size_t c = 0; c < rc->C; c++) {
		const float *m = rc->map + c * rc->cells + k * R;
		float *o = rc->out + c * rc->cells + k * R;

		if (rc->rs->out_mode == PC_OUT_MAP_POWER)
			memcpy(o, m, R * sizeof(float));
		else
			for (size_t n = 0; n < R; n++)
				o[n] = map_db(m[n]);
	}
}

/* ---- step 5: the CFAR statistic ------------------------------------------- */

/* Row k's Doppler sums A (|dk| <= gd+td) and B (|dk| <= gd), cyclic, and
 * their prefix sums along range with non-finite terms counted apart. */
static void doppler_sums(const struct radar_cpu *rc, struct cfar_rows *t, const float *m,
			 size_t k)
{
	const struct radar_setup *rs = rc->rs;
	size_t R = rc->R, Nd = rc->Nd;
	long wt = (long)(rs->gd + rs->td), wg = (long)rs->gd;

	/* B over the guard rows, then A = B + the training rows, a block of
	 * gates at a time so that the sums stay in the L1 cache across the
	 * rows' passes (each a plain vectorisable loop), then the block's
	 * prefix sums */
	for (size_t n0 = 0; n0 < R; n0 += RADAR_SUM_BLOCK) {
		size_t n1 = n0 + RADAR_SUM_BLOCK < R ? n0 + RADAR_SUM_BLOCK : R;

		for (size_t n = n0; n < n1; n++)
			t->b[n] = 0.0;
		for (long dk = -wg; dk <= wg; dk++) {
			const float *row = m + ((k + Nd + (size_t)(dk + (long)Nd)) % Nd) * R;

			for (size_t n = n0; n < n1; n++)
				t->b[n] += row[n];
		}
		for (size_t n = n0; n < n1; n++)
			t->a[n] = t->b[n];
		for (long dk = -wt; dk <= wt; dk++) {
			const float *row = m + ((k + Nd + (size_t)(dk + (long)Nd)) % Nd) * R;

			if (dk >= -wg && dk <= wg)
				continue;
			for (size_t n = n0; n < n1; n++)
				t->a[n] += row[n];
		}
		for (size_t n = n0; n < n1; n++) {
			int fa = isfinite(t->a[n]), fb = isfinite(t->b[n]);

			t->pa[n + 1] = t->pa[n] + (fa ? t->a[n] : 0.0);
			t->na[n + 1] = t->na[n] + !fa;
			t->pb[n + 1] = t->pb[n] + (fb ? t->b[n] : 0.0);
			t->nb[n + 1] = t->nb[n] + !fb;
		}
	}
}

static double stat_mean_edge(const struct radar_cpu *rc, const struct cfar_rows *t, long n);

/* Sum of A over columns [lo, hi] minus B over [glo, ghi] (empty when
 * lo > hi); NaN when a term is not finite. */
static double window_sum(const struct cfar_rows *t, long lo, long hi, long glo, long ghi)
{
	double s = 0.0;

	if (lo <= hi) {
		if (t->na[hi + 1] != t->na[lo])
			return NAN;
		s += t->pa[hi + 1] - t->pa[lo];
	}
	if (glo <= ghi) {
		if (t->nb[ghi + 1] != t->nb[glo])
			return NAN;
		s -= t->pb[ghi + 1] - t->pb[glo];
	}
	return s;
}

/* ca/go/so statistic at gate n of the row whose sums are loaded. */
static double stat_mean(const struct radar_cpu *rc, const struct cfar_rows *t, long n)
{
	const struct radar_setup *rs = rc->rs;
	long span = (long)(rs->gr + rs->tr), gr = (long)rs->gr, R = (long)rc->R;

	/* a gate whose whole window exists, in a row with no non-finite sum:
	 * the same sums by fixed offsets (the edges and NaN take the way below) */
	if (n >= span && n + span < R && t->na[R] == 0 && t->nb[R] == 0) {
		double lead = (t->pa[n] - t->pa[n - span]) - (t->pb[n] - t->pb[n - gr]);
		double lag = (t->pa[n + span + 1] - t->pa[n + 1]) - (t->pb[n + gr + 1] - t->pb[n + 1]);
		double ml, mg;

		if (rs->method == PC_CFAR_CA)
			ml = (lead + lag + (t->a[n] - t->b[n])) / (double)rs->ncells[n];
		else {
			ml = lead / (double)rs->nlead[n];
			mg = lag / (double)rs->nlag[n];
			ml = rs->method == PC_CFAR_GO ? (ml > mg ? ml : mg) : (ml < mg ? ml : mg);
		}
		return ml < 0.0 ? 0.0 : ml;
	}
	return stat_mean_edge(rc, t, n);
}

/* stat_mean anywhere: the windows cut by the range edges, non-finite sums. */
static double stat_mean_edge(const struct radar_cpu *rc, const struct cfar_rows *t, long n)
{
	const struct radar_setup *rs = rc->rs;
	long span = (long)(rs->gr + rs->tr), gr = (long)rs->gr, R = (long)rc->R;
	long l0 = n - span < 0 ? 0 : n - span, g0 = n - gr < 0 ? 0 : n - gr;
	long l1 = n + span > R - 1 ? R - 1 : n + span, g1 = n + gr > R - 1 ? R - 1 : n + gr;
	long nlead = rs->nlead[n], nlag = rs->nlag[n];   /* the counts alpha was solved for */
	double lead = window_sum(t, l0, n - 1, g0, n - 1);
	double lag = window_sum(t, n + 1, l1, n + 1, g1);
	double ml, mg;

	if (rs->method == PC_CFAR_CA)
		ml = (lead + lag + window_sum(t, n, n, n, n)) / (double)rs->ncells[n];
	else if (nlead == 0)
		ml = lag / (double)nlag;
	else if (nlag == 0)
		ml = lead / (double)nlead;
	else {
		ml = lead / (double)nlead;
		mg = lag / (double)nlag;
		if (isnan(ml) || isnan(mg))
			return NAN;
		ml = rs->method == PC_CFAR_GO ? (ml > mg ? ml : mg) : (ml < mg ? ml : mg);
	}
	return ml < 0.0 ? 0.0 : ml;   /* NaN passes */
}

/* The k-th smallest (0-based) of v[0..n-1], reordering v: Wirth's
 * selection (Hoare partitions around v[k], narrowing to the side holding
 * k). The values are finite (stat_os returns before NaN gets here). */
static float select_kth(float *v, size_t n, size_t k)
{
	long l = 0, m = (long)n - 1, kk = (long)k;

	while (l < m) {
		float x = v[kk];
		long i = l, j = m;

		do {
			while (v[i] < x)
				i++;
			while (x < v[j])
				j--;
			if (i <= j) {
				float t = v[i];

				v[i] = v[j];
				v[j] = t;
				i++;
				j--;
			}
		} while (i <= j);
		if (j < kk)
			l = i;
		if (kk < i)
			m = j;
	}
	return v[kk];
}

/* Append row[lo..hi] (gates, inclusive; nothing when lo > hi) to v. */
static size_t gather(float *v, size_t cnt, const float *row, long lo, long hi)
{
	if (lo > hi)
		return cnt;
	memcpy(v + cnt, row + lo, (size_t)(hi - lo + 1) * sizeof(float));
	return cnt + (size_t)(hi - lo + 1);
}

/* os statistic at cell (k, n) of map m: the training cells gathered row
 * by row (the guard rows in two pieces), then selected. NaN when one is
 * not finite (exponent bits all ones, found by an integer max). */
static double stat_os(const struct radar_cpu *rc, const float *m, size_t k, long n)
{
	const struct radar_setup *rs = rc->rs;
	float v[PC_CFAR_OS_MAX_CELLS];
	long span = (long)(rs->gr + rs->tr), wt = (long)(rs->gd + rs->td), gr = (long)rs->gr;
	long lo = n - span < 0 ? 0 : n - span, hi = n + span >= (long)rc->R ? (long)rc->R - 1 : n + span;
	size_t cnt = 0, Nd = rc->Nd;
	uint32_t mx = 0;

	for (long dk = -wt; dk <= wt; dk++) {
		const float *row = m + ((k + Nd + (size_t)(dk + (long)Nd)) % Nd) * rc->R;

		if (dk >= -(long)rs->gd && dk <= (long)rs->gd) {
			cnt = gather(v, cnt, row, lo, n - gr - 1 < hi ? n - gr - 1 : hi);
			cnt = gather(v, cnt, row, n + gr + 1 > lo ? n + gr + 1 : lo, hi);
		} else {
			cnt = gather(v, cnt, row, lo, hi);
		}
	}
	for (size_t i = 0; i < cnt; i++) {
		uint32_t u;

		memcpy(&u, &v[i], sizeof(u));
		u &= 0x7fffffffu;
		mx = u > mx ? u : mx;
	}
	if (mx >= 0x7f800000u)
		return NAN;
	return select_kth(v, cnt, rs->rank[n] - 1);
}

/* ---- step 6: maxima and records --------------------------------------------- */

/* The local-maximum rule of pc.h: greater than every neighbour of lower
 * index k' R + n', not less than those of higher index. */
static int local_max(const struct radar_cpu *rc, const float *m, size_t k, size_t n)
{
	long md = (long)rc->rs->md, mr = (long)rc->rs->mr, R = (long)rc->R, Nd = (long)rc->Nd;
	size_t idx = k * rc->R + n;
	float v = m[idx];

	for (long dk = -md; dk <= md; dk++) {
		size_t kk = (size_t)(((long)k + dk + Nd) % Nd);

		for (long dn = -mr; dn <= mr; dn++) {
			long nn = (long)n + dn;
			size_t j;

			if (nn < 0 || nn >= R || (dk == 0 && dn == 0))
				continue;
			j = kk * rc->R + (size_t)nn;
			if (j < idx ? !(v > m[j]) : !(v >= m[j]))
				return 0;
		}
	}
	return 1;
}

/* With beams (chirp/pc.h, BEAMS): not below the same cell in the
 * neighbouring beams, greater than the lower one's. */
static int beam_max(const struct radar_cpu *rc, size_t i, size_t k, size_t n)
{
	size_t j = k * rc->R + n;
	float v = rc->map[i * rc->cells + j];

	if (i > 0 && !(v > rc->map[(i - 1) * rc->cells + j]))
		return 0;
	if (i + 1 < rc->C && !(v >= rc->map[(i + 1) * rc->cells + j]))
		return 0;
	return 1;
}

/* The beams' complex Doppler outputs at shifted cell (k, n) into y (2 B,
 * interleaved): b - 1, b and b + 1, the ones monopulse reads; the rest 0. */
static void beam_outputs(const struct radar_cpu *rc, size_t b, size_t k, size_t n, float *y)
{
	size_t kk = (k + rc->Nd - rc->Nd / 2) % rc->Nd;

	memset(y, 0, 2 * rc->C * sizeof(float));
	for (size_t j = b ? b - 1 : 0; j <= b + 1 && j < rc->C; j++) {
		const float *d = (const float *)(rc->d + j * rc->cstride + kk * rc->R + n);

		y[2 * j] = d[0];
		y[2 * j + 1] = d[1];
	}
}

static void add_record(const struct radar_cpu *rc, struct det_out *o, int32_t channel, size_t k,
		       size_t n, float power, float noise)
{
	const struct radar_setup *rs = rc->rs;
	struct chirp_det_record *r;
	int32_t m = (int32_t)k - (int32_t)(rc->Nd / 2);

	o->found++;
	if (o->count >= o->max)
		return;
	r = &o->rec[o->count++];
	r->channel = channel;
	r->range_gate = (uint32_t)n;
	r->doppler_bin = m;
	r->range_m = (float)n * rs->range_m_per_gate;
	r->velocity_mps = (float)m * rs->mps_per_bin;
	r->power = power;
	r->noise = noise;
	r->snr_db = (float)(10.0 * log10((double)power / (double)noise));
	if (rs->beams && rc->bset) {
		float y[2 * BEAM_MAX];

		beam_outputs(rc, (size_t)channel, k, n, y);
		radar_beam_record(rc->bset, rc->bw, rc->mono, (unsigned)channel, y, r);
	} else {
		r->beam = CHIRP_DET_BEAM_NONE;
		r->azimuth_deg = NAN;
		r->elevation_deg = NAN;
		r->angle_quality = 0;
		r->reserved = 0;
	}
}

/* The map CFAR runs on: I, or channel i's M. */
static const float *cfar_input(const struct radar_cpu *rc, size_t i)
{
	return rc->imap ? rc->imap : rc->map + i * rc->cells;
}

/* Stage 2, item (map i, row k): statistic, threshold and maxima of the
 * row; hit[] gets the noise of each detection, NaN elsewhere. */
static void stage_cfar(struct radar_cpu *rc, size_t item, unsigned thread)
{
	const struct radar_setup *rs = rc->rs;
	struct cfar_rows *t = &rc->t[thread];
	size_t i = item / rc->Nd, k = item % rc->Nd;
	const float *m = cfar_input(rc, i), *row = m + k * rc->R;
	float *hit = rc->hit + i * rc->cells + k * rc->R;
	int os = rs->method == PC_CFAR_OS;
	uint32_t cross = 0;

	if (!os)
		doppler_sums(rc, t, m, k);
	for (size_t n = 0; n < rc->R; n++) {
		double s = os ? stat_os(rc, m, k, (long)n) : stat_mean(rc, t, (long)n);
		float noise = (float)(s * rs->norm[n]), thr = rs->alpha[n] * noise;

		hit[n] = NAN;
		if (!(row[n] > thr))
			continue;
		cross++;
		if (local_max(rc, m, k, n) && (!rs->beams || beam_max(rc, i, k, n)))
			hit[n] = noise;
	}
	rc->row_cross[item] = cross;
}

size_t radar_cpu_items(const struct radar_cpu *rc, unsigned stage)
{
	switch (stage) {
	case 0:
		return rc->C * rc->stripes;
	case 1:
		return rc->imap || rc->out ? rc->Nd : 0;
	case 2:
		return rc->rs->cfar ? rc->rs->maps * rc->Nd : 0;
	}
	return 0;
}

void radar_cpu_item(struct radar_cpu *rc, unsigned stage, size_t item, unsigned thread)
{
	switch (stage) {
	case 0:
		stage_doppler(rc, item);
		break;
	case 1:
		stage_rows(rc, item);
		break;
	case 2:
		stage_cfar(rc, item, thread);
		break;
	}
}

void radar_cpu_begin(struct radar_cpu *rc, void *out)
{
	int map = rc->rs->out_mode == PC_OUT_MAP_POWER || rc->rs->out_mode == PC_OUT_MAP_DB;

	rc->out = map ? out : NULL;
}

/* The list from hit[], in (channel, k, n) order, and its header. */
void radar_cpu_finish(struct radar_cpu *rc, void *det, uint32_t mode)
{
	const struct radar_setup *rs = rc->rs;
	struct det_out o = {
		.h = det,
		.rec = (struct chirp_det_record *)((char *)det + sizeof(struct chirp_det_header)),
		.max = rs->max_det,
	};

	if (!det || !rs->cfar)
		return;
	for (size_t i = 0; i < rs->maps; i++) {
		const float *m = cfar_input(rc, i);
		const float *hit = rc->hit + i * rc->cells;
		int32_t ch = rs->integrate ? CHIRP_DET_CHANNEL_ALL : (int32_t)i;

		for (size_t j = 0; j < rc->cells; j++)
			if (!isnan(hit[j]))
				add_record(rc, &o, ch, j / rc->R, j % rc->R, m[j], hit[j]);
	}
	for (size_t r = 0; r < rs->maps * rc->Nd; r++)
		o.crossings += rc->row_cross[r];
	memset(o.h, 0, sizeof(*o.h));
	o.h->magic = CHIRP_DET_MAGIC;
	o.h->version = CHIRP_DET_VERSION;
	o.h->record_bytes = sizeof(struct chirp_det_record);
	o.h->mode = mode;
	o.h->flags = rs->det_flags | (o.found > o.count ? CHIRP_DET_OVERFLOW : 0);
	o.h->count = o.count;
	o.h->found = o.found;
	o.h->maps = rs->maps;
	o.h->doppler_bins = (uint32_t)rc->Nd;
	o.h->range_gates = (uint32_t)rc->R;
	o.h->cells = (uint64_t)rs->maps * rc->cells;
	o.h->crossings = o.crossings;
}

const float *radar_cpu_map(const struct radar_cpu *rc)
{
	return rc->map;
}

void radar_cpu_run(struct radar_cpu *rc, void *out, void *det, uint32_t mode)
{
	radar_cpu_begin(rc, out);
	for (unsigned s = 0; s < RADAR_CPU_STAGES; s++)
		for (size_t i = 0; i < radar_cpu_items(rc, s); i++)
			radar_cpu_item(rc, s, i, 0);
	radar_cpu_finish(rc, det, mode);
}
