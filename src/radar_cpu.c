/* SPDX-License-Identifier: Apache-2.0 */
/*
 * radar_cpu.c — the radar chain on the CPU (radar_cpu.h), exactly as
 * chirp/pc.h's RADAR CHAIN defines it, with the tables of radar.h.
 *
 * Steps per CPI, each over the whole cube:
 *   1. MTI and window: z[c][p][n] = w[p] g_d mti(y)[c][p][n] for p < P',
 *      in float; rows P'..Nd-1 of z are zero from create on (nothing
 *      writes them).
 *   2. One FFTW guru plan does every Doppler FFT: length Nd along pulses
 *      (stride R), R x C of them, out of place into d.
 *   3. Power with the shift: M[c][k][n] = |d[c][(k - floor(Nd/2)) mod
 *      Nd][n]|^2, and I = sum_c M (channels in order) when integrating.
 *   4. Map out (map_power, or map_db = 10 log10(max(M, PC_POWER_FLOOR))).
 *   5. CFAR per map, row k at a time:
 *        ca/go/so: the Doppler sums A[n] = sum_{|dk| <= gd+td} and B[n] =
 *          sum_{|dk| <= gd} of the row's column, in double; range prefix
 *          sums of A and B then give any half's training sum in O(1), so
 *          a cell costs O(gd + td), not O(window);
 *        os: the training cells gathered into a stack array and the k_n-th
 *          picked by quickselect: O(N) a cell.
 *      noise = float(S x norm[n]); a crossing is M > float(alpha[n] x
 *      noise). A training set that holds a NaN or Inf (non-finite input)
 *      gives noise NaN: no crossing there, as a mean with a NaN would.
 *   6. The local-maximum rule and the records, in (channel, k, n) order;
 *      the first max_det are kept, found counts them all.
 * Single-threaded on the backend's caller (the workers only compress).
 */
#include "radar_cpu.h"
#include "errbuf.h"

#include <errno.h>
#include <fftw3.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct radar_cpu {
	const struct radar_setup *rs;
	size_t C, P, R, Pm, Nd, cells;   /* cells: Nd * R, one map          */
	float *cube;                     /* C*P*R complex: compressed rows  */
	fftwf_complex *z, *d;            /* C*Nd*R: Doppler in, out         */
	fftwf_plan plan;
	float *map;                      /* C*Nd*R: M, shifted              */
	float *imap;                     /* Nd*R: I (integrate), else NULL  */
	double *a, *b;                   /* R: the row's Doppler sums       */
	double *pa, *pb;                 /* R+1: their prefix sums, finite
					    terms only                       */
	unsigned *na, *nb;               /* R+1: prefix counts of non-finite */
	pthread_mutex_t *lock;
};

/* The detection list being written. */
struct det_out {
	struct chirp_det_header *h;
	struct chirp_det_record *rec;
	uint32_t max, count, found;
	uint64_t crossings;
};

float *radar_cpu_cube(struct radar_cpu *rc)
{
	return rc->cube;
}

void radar_cpu_destroy(struct radar_cpu *rc)
{
	if (!rc)
		return;
	if (rc->plan) {
		pthread_mutex_lock(rc->lock);
		fftwf_destroy_plan(rc->plan);
		pthread_mutex_unlock(rc->lock);
	}
	fftwf_free(rc->cube);
	fftwf_free(rc->z);
	fftwf_free(rc->d);
	fftwf_free(rc->map);
	fftwf_free(rc->imap);
	free(rc->a);
	free(rc->b);
	free(rc->pa);
	free(rc->pb);
	free(rc->na);
	free(rc->nb);
	free(rc);
}

static int alloc_all(struct radar_cpu *rc)
{
	size_t cube = rc->C * rc->P * rc->R, dop = rc->C * rc->cells;

	rc->cube = fftwf_malloc(cube * 2 * sizeof(float));
	rc->z = fftwf_malloc(dop * sizeof(fftwf_complex));
	rc->d = fftwf_malloc(dop * sizeof(fftwf_complex));
	rc->map = fftwf_malloc(dop * sizeof(float));
	if (!rc->cube || !rc->z || !rc->d || !rc->map)
		return -ENOMEM;
	if (rc->rs->integrate && rc->rs->cfar) {
		rc->imap = fftwf_malloc(rc->cells * sizeof(float));
		if (!rc->imap)
			return -ENOMEM;
	}
	rc->a = calloc(rc->R, sizeof(double));
	rc->b = calloc(rc->R, sizeof(double));
	rc->pa = calloc(rc->R + 1, sizeof(double));
	rc->pb = calloc(rc->R + 1, sizeof(double));
	rc->na = calloc(rc->R + 1, sizeof(unsigned));
	rc->nb = calloc(rc->R + 1, sizeof(unsigned));
	if (!rc->a || !rc->b || !rc->pa || !rc->pb || !rc->na || !rc->nb)
		return -ENOMEM;
	return 0;
}

/* Every Doppler FFT of the CPI in one plan: length Nd at stride R, for R
 * gates and C channels. Planned before z is zeroed (a measuring planner
 * writes into its arrays). */
static int make_plan(struct radar_cpu *rc, unsigned flags, char *err, size_t errlen)
{
	fftw_iodim dim = { .n = (int)rc->Nd, .is = (int)rc->R, .os = (int)rc->R };
	fftw_iodim many[2] = {
		{ .n = (int)rc->R, .is = 1, .os = 1 },
		{ .n = (int)rc->C, .is = (int)rc->cells, .os = (int)rc->cells },
	};

	pthread_mutex_lock(rc->lock);
	rc->plan = fftwf_plan_guru_dft(1, &dim, 2, many, rc->z, rc->d, FFTW_FORWARD, flags);
	pthread_mutex_unlock(rc->lock);
	if (!rc->plan) {
		errbuf_set(err, errlen, "cpu: fftwf_plan_guru_dft(Doppler n=%zu, %zu x %zu) failed",
			   rc->Nd, rc->R, rc->C);
		return -EINVAL;
	}
	memset(rc->z, 0, rc->C * rc->cells * sizeof(fftwf_complex));
	return 0;
}

struct radar_cpu *radar_cpu_create(const struct radar_setup *rs, unsigned fftw_flags,
				   pthread_mutex_t *fftw_lock, char *err, size_t errlen)
{
	struct radar_cpu *rc = calloc(1, sizeof(*rc));

	if (!rc) {
		errbuf_set(err, errlen, "cpu: out of memory for the radar chain");
		return NULL;
	}
	rc->rs = rs;
	rc->lock = fftw_lock;
	rc->C = rs->channels;
	rc->P = rs->pulses;
	rc->R = rs->samples;
	rc->Pm = rs->pulses_mti;
	rc->Nd = rs->nd;
	rc->cells = rc->Nd * rc->R;
	if (rc->C * rc->cells > (size_t)INT32_MAX) {
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

/* z = window x MTI(y), pulses p < P' (the rest of z stays zero). */
static void mti_window(struct radar_cpu *rc)
{
	const float *w = rc->rs->window;
	size_t R = rc->R;

	for (size_t c = 0; c < rc->C; c++) {
		const float *y = rc->cube + c * rc->P * R * 2;
		float *z = (float *)(rc->z + c * rc->cells);

		for (size_t p = 0; p < rc->Pm; p++) {
			const float *y0 = y + p * R * 2, *y1 = y0 + R * 2, *y2 = y1 + R * 2;
			float *zp = z + p * R * 2, g = w[p];

			switch (rc->rs->mti) {
			case PC_MTI_NONE:
				for (size_t i = 0; i < 2 * R; i++)
					zp[i] = g * y0[i];
				break;
			case PC_MTI_TWO:
				for (size_t i = 0; i < 2 * R; i++)
					zp[i] = g * (y1[i] - y0[i]);
				break;
			case PC_MTI_THREE:
				for (size_t i = 0; i < 2 * R; i++)
					zp[i] = g * (y0[i] - 2.0f * y1[i] + y2[i]);
				break;
			}
		}
	}
}

/* M = |d|^2 with the shift (bin k holds m = k - floor(Nd/2)); I = sum_c M. */
static void power_maps(struct radar_cpu *rc)
{
	size_t R = rc->R, Nd = rc->Nd, h = Nd / 2;

	for (size_t c = 0; c < rc->C; c++)
		for (size_t k = 0; k < Nd; k++) {
			const float *d = (const float *)(rc->d + c * rc->cells + ((k + Nd - h) % Nd) * R);
			float *m = rc->map + c * rc->cells + k * R;

			for (size_t n = 0; n < R; n++)
				m[n] = d[2 * n] * d[2 * n] + d[2 * n + 1] * d[2 * n + 1];
		}
	if (!rc->imap)
		return;
	memcpy(rc->imap, rc->map, rc->cells * sizeof(float));
	for (size_t c = 1; c < rc->C; c++) {
		const float *m = rc->map + c * rc->cells;

		for (size_t i = 0; i < rc->cells; i++)
			rc->imap[i] += m[i];
	}
}

static void write_map(const struct radar_cpu *rc, float *out)
{
	size_t n = rc->C * rc->cells;

	if (rc->rs->out_mode == PC_OUT_MAP_POWER) {
		memcpy(out, rc->map, n * sizeof(float));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		float p = rc->map[i];

		/* NaN stays NaN (fmaxf would hide it) */
		out[i] = isnan(p) ? p : (float)(10.0 * log10(p > PC_POWER_FLOOR ? p : PC_POWER_FLOOR));
	}
}

/* ---- step 5: the CFAR statistic ------------------------------------------- */

/* Row k's Doppler sums A (|dk| <= gd+td) and B (|dk| <= gd), cyclic, and
 * their prefix sums along range with non-finite terms counted apart. */
static void doppler_sums(struct radar_cpu *rc, const float *m, size_t k)
{
	const struct radar_setup *rs = rc->rs;
	size_t R = rc->R, Nd = rc->Nd;
	long wt = (long)(rs->gd + rs->td), wg = (long)rs->gd;

	for (size_t n = 0; n < R; n++)
		rc->a[n] = rc->b[n] = 0.0;
	for (long dk = -wt; dk <= wt; dk++) {
		const float *row = m + ((k + Nd + (size_t)(dk + (long)Nd)) % Nd) * R;
		int guard = dk >= -wg && dk <= wg;

		for (size_t n = 0; n < R; n++) {
			rc->a[n] += row[n];
			if (guard)
				rc->b[n] += row[n];
		}
	}
	for (size_t n = 0; n < R; n++) {
		int fa = isfinite(rc->a[n]), fb = isfinite(rc->b[n]);

		rc->pa[n + 1] = rc->pa[n] + (fa ? rc->a[n] : 0.0);
		rc->na[n + 1] = rc->na[n] + !fa;
		rc->pb[n + 1] = rc->pb[n] + (fb ? rc->b[n] : 0.0);
		rc->nb[n + 1] = rc->nb[n] + !fb;
	}
}

/* Sum of A over columns [lo, hi] minus B over [glo, ghi] (empty when
 * lo > hi); NaN when a term is not finite. */
static double window_sum(const struct radar_cpu *rc, long lo, long hi, long glo, long ghi)
{
	double s = 0.0;

	if (lo <= hi) {
		if (rc->na[hi + 1] != rc->na[lo])
			return NAN;
		s += rc->pa[hi + 1] - rc->pa[lo];
	}
	if (glo <= ghi) {
		if (rc->nb[ghi + 1] != rc->nb[glo])
			return NAN;
		s -= rc->pb[ghi + 1] - rc->pb[glo];
	}
	return s;
}

/* ca/go/so statistic at gate n of the row whose sums are loaded. */
static double stat_mean(const struct radar_cpu *rc, long n)
{
	const struct radar_setup *rs = rc->rs;
	long span = (long)(rs->gr + rs->tr), gr = (long)rs->gr, R = (long)rc->R;
	long wd = 2 * (long)(rs->gd + rs->td) + 1, wg = 2 * (long)rs->gd + 1;
	long l0 = n - span < 0 ? 0 : n - span, g0 = n - gr < 0 ? 0 : n - gr;
	long l1 = n + span > R - 1 ? R - 1 : n + span, g1 = n + gr > R - 1 ? R - 1 : n + gr;
	long nlead = (n - l0) * wd - (n - g0) * wg, nlag = (l1 - n) * wd - (g1 - n) * wg;
	long ncen = wd - wg;
	double lead = window_sum(rc, l0, n - 1, g0, n - 1);
	double lag = window_sum(rc, n + 1, l1, n + 1, g1);
	double ml, mg;

	if (rs->method == PC_CFAR_CA)
		return (lead + lag + window_sum(rc, n, n, n, n)) / (double)(nlead + nlag + ncen);
	if (nlead == 0)
		return lag / (double)nlag;
	if (nlag == 0)
		return lead / (double)nlead;
	ml = lead / (double)nlead;
	mg = lag / (double)nlag;
	if (isnan(ml) || isnan(mg))
		return NAN;
	if (rs->method == PC_CFAR_GO)
		return ml > mg ? ml : mg;
	return ml < mg ? ml : mg;
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

/* os statistic at cell (k, n) of map m: gather, then select. */
static double stat_os(const struct radar_cpu *rc, const float *m, size_t k, long n)
{
	const struct radar_setup *rs = rc->rs;
	float v[PC_CFAR_OS_MAX_CELLS];
	long span = (long)(rs->gr + rs->tr), wt = (long)(rs->gd + rs->td), R = (long)rc->R;
	size_t cnt = 0, Nd = rc->Nd;

	for (long dk = -wt; dk <= wt; dk++) {
		const float *row = m + ((k + Nd + (size_t)(dk + (long)Nd)) % Nd) * rc->R;
		int gk = dk >= -(long)rs->gd && dk <= (long)rs->gd;

		for (long dn = -span; dn <= span; dn++) {
			long nn = n + dn;

			if (nn < 0 || nn >= R || (gk && dn >= -(long)rs->gr && dn <= (long)rs->gr))
				continue;
			if (!isfinite(row[nn]))
				return NAN;
			v[cnt++] = row[nn];
		}
	}
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
}

/* CFAR, maxima and records of one map. */
static void cfar_map(struct radar_cpu *rc, const float *m, int32_t channel, struct det_out *o)
{
	const struct radar_setup *rs = rc->rs;
	int os = rs->method == PC_CFAR_OS;

	for (size_t k = 0; k < rc->Nd; k++) {
		const float *row = m + k * rc->R;

		if (!os)
			doppler_sums(rc, m, k);
		for (size_t n = 0; n < rc->R; n++) {
			double s = os ? stat_os(rc, m, k, (long)n) : stat_mean(rc, (long)n);
			float noise = (float)(s * rs->norm[n]), thr = rs->alpha[n] * noise;

			if (!(row[n] > thr))
				continue;
			o->crossings++;
			if (local_max(rc, m, k, n))
				add_record(rc, o, channel, k, n, row[n], noise);
		}
	}
}

static void detect(struct radar_cpu *rc, void *det, uint32_t mode)
{
	const struct radar_setup *rs = rc->rs;
	struct det_out o = {
		.h = det,
		.rec = (struct chirp_det_record *)((char *)det + sizeof(struct chirp_det_header)),
		.max = rs->max_det,
	};

	if (rs->integrate)
		cfar_map(rc, rc->imap ? rc->imap : rc->map, CHIRP_DET_CHANNEL_ALL, &o);
	else
		for (size_t c = 0; c < rc->C; c++)
			cfar_map(rc, rc->map + c * rc->cells, (int32_t)c, &o);
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

void radar_cpu_run(struct radar_cpu *rc, void *out, void *det, uint32_t mode)
{
	const struct radar_setup *rs = rc->rs;

	mti_window(rc);
	fftwf_execute(rc->plan);
	power_maps(rc);
	if (out && (rs->out_mode == PC_OUT_MAP_POWER || rs->out_mode == PC_OUT_MAP_DB))
		write_map(rc, out);
	if (det && rs->cfar)
		detect(rc, det, mode);
}
