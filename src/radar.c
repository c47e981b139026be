/* SPDX-License-Identifier: Apache-2.0 */
/*
 * radar.c — the radar chain resolved once for every backend (radar.h;
 * definition in chirp/pc.h, RADAR CHAIN).
 *
 * What is resolved here, in double precision:
 *   - the Doppler window with its gain folded in: w[p] g_d, g_d =
 *     1 / sqrt(G_mti sum w^2), G_mti = 1, 2, 6 (the noise gain of the MTI
 *     filters 1; 1, -1; 1, -2, 1), so white noise keeps its power in the map;
 *   - Nd, the range and velocity scales, the list's flags and size;
 *   - per range gate n, the CFAR's alpha[n], norm[n] and (os) rank[n].
 *
 * CFAR MODEL
 *   A map cell of white noise is Exponential (|complex Gaussian|^2); an
 *   integrated cell is the sum of C of them, Gamma(C). The scale cancels
 *   in every threshold, so cells are taken as Gamma(C, 1) below (mean C).
 *   With N cells of training at gate n (leading N1, lagging N2, the rest in
 *   the test cell's own range column):
 *     ca  S = mean of N cells: N S ~ Gamma(N C);
 *     go  S = max(S1, S2), so S = min(S1, S2), S_i the mean of half i
 *         (N_i S_i ~ Gamma(N_i C)); the column dn = 0 is in neither half
 *         (pc.h); a half with no cell gives way to the other;
 *     os  S = the k_n-th smallest of the N cells.
 *   noise = S norm, with norm = 1 for ca/go/so (a mean of cells is already
 *   an unbiased mean-power estimate) and, for os, norm = C / E[S] =
 *   1 / E[k-th order statistic of N unit-mean cells]: noise is then an
 *   unbiased estimate of the cells' mean power too, and snr_db reads the
 *   same whatever the method.
 *   Pfa(a) = P(X > a noise) for a test cell X independent of the training;
 *   alpha[n] solves Pfa(alpha) = pfa (bisection on log alpha).
 *     ca, closed form (X ~ Gamma(C), t = alpha / N, M = N C):
 *       Pfa = sum_{k<C} binom(M+k-1, k) t^k (1+t)^-(M+k)
 *     os with C = 1, closed form: Pfa = prod_{i<k} (N-i) / (N-i+b),
 *       b = alpha norm;
 *     go, so, os with C > 1: Pfa = int f_X(x) P(S < x / b) dx by Simpson's
 *       rule, the CDFs from the regularized incomplete gamma function
 *       (series and continued fraction, in log space) and, for os, the
 *       binomial tail of the cell CDF.
 *   Only gates within gr + tr of a range edge see fewer cells, so gates are
 *   grouped by their counts (N1, N2, N) and each group is solved once: a
 *   few dozen solves whatever R is.
 *
 * LIMITS
 *   The model assumes independent cells: true for white noise with rect
 *   window, no MTI and Nd = P'. A window, zero padding (Nd > P') or MTI
 *   correlate neighbouring Doppler bins (MTI also shapes the noise across
 *   Doppler), and the false-alarm rate then departs from pfa.
 */
#include "radar.h"
#include "beam.h"
#include "errbuf.h"
#include "monopulse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- special functions ---------------------------------------------------- */

#define GAMMA_EPS   1e-15
#define GAMMA_ITMAX 1000000

/* ln of x^a e^-x / Gamma(a), the prefactor of both expansions below. */
static double gamma_lpre(double a, double x)
{
	return a * log(x) - x - lgamma(a);
}

/* P(a, x) by its series (x < a + 1). */
static double gammp_series(double a, double x)
{
	double ap = a, del = 1.0 / a, sum = del;

	for (int i = 0; i < GAMMA_ITMAX; i++) {
		ap += 1.0;
		del *= x / ap;
		sum += del;
		if (fabs(del) < fabs(sum) * GAMMA_EPS)
			break;
	}
	return sum * exp(gamma_lpre(a, x));
}

/* Q(a, x) by its continued fraction (x >= a + 1), modified Lentz. */
static double gammq_cf(double a, double x)
{
	const double tiny = 1e-300;
	double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;

	for (int i = 1; i < GAMMA_ITMAX; i++) {
		double an = -i * (i - a), del;

		b += 2.0;
		d = an * d + b;
		if (fabs(d) < tiny)
			d = tiny;
		c = b + an / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1.0 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1.0) < GAMMA_EPS)
			break;
	}
	return exp(gamma_lpre(a, x)) * h;
}

/* Regularized lower incomplete gamma P(a, x), each of P and Q computed
 * directly where it is the small one, so neither loses its tail. */
static double gammp(double a, double x)
{
	if (x <= 0.0)
		return 0.0;
	if (x < a + 1.0)
		return gammp_series(a, x);
	return 1.0 - gammq_cf(a, x);
}

static double gammq(double a, double x)
{
	if (x <= 0.0)
		return 1.0;
	if (x < a + 1.0)
		return 1.0 - gammp_series(a, x);
	return gammq_cf(a, x);
}

/*
 * P(at least k of n cells are below s) for cells of CDF F = F(s), 1 - F =
 * Q, the binomial tail, summed from its largest term with the ratio
 * recurrence (one exp a call): upward from k when the mode n F is below k,
 * else 1 - the lower part downward from k - 1.
 */
static double binom_tail(unsigned n, unsigned k, double F, double Q)
{
	double lF, lQ, t, sum;

	if (F <= 0.0)
		return 0.0;
	if (Q <= 0.0)
		return 1.0;
	lF = log(F);
	lQ = log(Q);
	if ((double)n * F <= (double)k) {
		t = exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + k * lF +
			(n - k) * lQ);
		sum = t;
		for (unsigned j = k; j < n && t > sum * 1e-17; j++) {
			t *= (double)(n - j) / (double)(j + 1) * F / Q;
			sum += t;
		}
		return sum > 1.0 ? 1.0 : sum;
	}
	t = exp(lgamma(n + 1.0) - lgamma(k) - lgamma(n - k + 2.0) + (k - 1) * lF +
		(n - k + 1) * lQ);
	sum = t;
	for (unsigned j = k - 1; j > 0 && t > sum * 1e-17; j--) {
		t *= (double)j / (double)(n - j + 1) * Q / F;
		sum += t;
	}
	return sum > 1.0 ? 0.0 : 1.0 - sum;
}

/* ---- false-alarm probability ---------------------------------------------- */

/* One gate's training, as the Pfa sees it. */
struct cfar_cells {
	unsigned n;          /* N_n: training cells                          */
	unsigned lead, lag;  /* go/so: cells of the two halves               */
	unsigned rank;       /* os: k_n                                      */
};

struct pfa_model {
	enum pc_cfar method;
	double C;            /* cells are Gamma(C, 1)                        */
	struct cfar_cells c;
	double norm;         /* noise = S norm                               */
};

/* ca: the closed form (module comment). b = alpha norm = alpha. */
static double pfa_ca(double C, unsigned n, double b)
{
	double t = b / n, M = (double)n * C, l1t = log1p(t), lt = log(t), sum = 0.0;

	for (unsigned k = 0; k < (unsigned)C; k++)
		sum += exp(lgamma(M + k) - lgamma(k + 1.0) - lgamma(M) + k * lt - (M + k) * l1t);
	return sum;
}

/* P(S < s) of the statistic, for the numerical Pfa. */
static double stat_cdf(const struct pfa_model *m, double s)
{
	const struct cfar_cells *c = &m->c;
	double p1, p2;

	switch (m->method) {
	case PC_CFAR_GO:
	case PC_CFAR_SO:
		if (c->lead == 0 || c->lag == 0) {
			unsigned h = c->lead ? c->lead : c->lag;

			return gammp(h * m->C, h * s);
		}
		p1 = gammp(c->lead * m->C, c->lead * s);
		p2 = gammp(c->lag * m->C, c->lag * s);
		if (m->method == PC_CFAR_GO)
			return p1 * p2;
		return p1 + p2 * gammq(c->lead * m->C, c->lead * s);  /* no cancellation */
	case PC_CFAR_OS:
		return binom_tail(c->n, c->rank, gammp(m->C, s), gammq(m->C, s));
	case PC_CFAR_CA:
		break;
	}
	return gammp(c->n * m->C, c->n * s);
}

#define PFA_INTERVALS 1024   /* Simpson intervals: see the accuracy note */

/*
 * Pfa = int_0^xmax f_X(x) P(S < x / b) dx, X ~ Gamma(C, 1); xmax leaves a
 * tail of X below 1e-4 pfa. The integrand's narrowest feature is the
 * statistic's CDF, of relative width ~ 1/sqrt(N C) around the threshold;
 * 2048 intervals resolve it for every N C the checks allow with a
 * relative error far below the 1e-3 that matters for alpha.
 */
static double pfa_numeric(const struct pfa_model *m, double b, double xmax)
{
	double h = xmax / PFA_INTERVALS, sum = 0.0, lg = lgamma(m->C);

	for (int i = 1; i <= PFA_INTERVALS; i++) {
		double x = i * h, f, w = i == PFA_INTERVALS ? 1.0 : (i & 1) ? 4.0 : 2.0;

		f = exp((m->C - 1.0) * log(x) - x - lg) * stat_cdf(m, x / b);
		sum += w * f;
	}
	return sum * h / 3.0;
}

static double pfa_of(const struct pfa_model *m, double alpha, double xmax)
{
	double b = alpha * m->norm;

	if (m->method == PC_CFAR_CA)
		return pfa_ca(m->C, m->c.n, b);
	if (m->method == PC_CFAR_OS && m->C == 1.0) {
		double p = 1.0;

		for (unsigned i = 0; i < m->c.rank; i++)
			p *= (double)(m->c.n - i) / (double)(m->c.n - i + b);
		return p;
	}
	return pfa_numeric(m, b, xmax);
}

/* E[k-th smallest of n Gamma(C, 1) cells] = int_0^inf P(S > s) ds. */
static double os_mean(double C, unsigned n, unsigned k)
{
	double smax = C + 1.0, h, sum = 0.0;

	if (C == 1.0) {   /* exponential order statistics: sum of 1/(n-i) */
		for (unsigned i = 0; i < k; i++)
			sum += 1.0 / (double)(n - i);
		return sum;
	}
	while (n * gammq(C, smax) > 1e-14)
		smax *= 1.25;
	h = smax / PFA_INTERVALS;
	for (int i = 0; i <= PFA_INTERVALS; i++) {
		double s = i * h, w = (i == 0 || i == PFA_INTERVALS) ? 1.0 : (i & 1) ? 4.0 : 2.0;

		sum += w * (1.0 - binom_tail(n, k, gammp(C, s), gammq(C, s)));
	}
	return sum * h / 3.0;
}

/* ln Pfa(e^u) - ln pfa: decreasing in u. */
static double pfa_gap(const struct pfa_model *m, double u, double xmax, double lpfa)
{
	double p = pfa_of(m, exp(u), xmax);

	return (p > 0.0 ? log(p) : -1e300) - lpfa;
}

/*
 * alpha with Pfa(alpha) = pfa. ln Pfa is close to linear in ln alpha, so
 * the Illinois variant of regula falsi on u = ln alpha converges in a
 * handful of Pfa evaluations (each a numerical integral for go/so/os)
 * where bisection needs thirty; the bracket keeps it as safe as
 * bisection. Stops at |ln Pfa - ln pfa| < 1e-10 or a bracket of 1e-12.
 */
static double solve_alpha(const struct pfa_model *m, double pfa)
{
	double xmax = m->C + 1.0, lpfa = log(pfa), lo = 0.0, hi = 0.0, flo, fhi;
	int side = 0;

	while (gammq(m->C, xmax) > 1e-4 * pfa)
		xmax *= 1.25;
	flo = fhi = pfa_gap(m, 0.0, xmax, lpfa);
	while (fhi > 0.0 && hi < 700.0) {   /* Pfa(alpha) > pfa: go up */
		lo = hi;
		flo = fhi;
		hi += 1.0;
		fhi = pfa_gap(m, hi, xmax, lpfa);
	}
	while (flo < 0.0 && lo > -700.0) {  /* Pfa(1) < pfa already: go down */
		hi = lo;
		fhi = flo;
		lo -= 1.0;
		flo = pfa_gap(m, lo, xmax, lpfa);
	}
	for (int i = 0; i < 200 && hi - lo > 1e-12; i++) {
		double u = (lo * fhi - hi * flo) / (fhi - flo), fu = pfa_gap(m, u, xmax, lpfa);

		if (fabs(fu) < 1e-10)
			return exp(u);
		if (fu > 0.0) {
			lo = u;
			flo = fu;
			if (side == 1)
				fhi /= 2.0;
			side = 1;
		} else {
			hi = u;
			fhi = fu;
			if (side == -1)
				flo /= 2.0;
			side = -1;
		}
	}
	return exp(0.5 * (lo + hi));
}

double radar_cfar_pfa(enum pc_cfar method, unsigned C, unsigned n, unsigned lead, unsigned lag,
		      unsigned rank, double alpha)
{
	struct pfa_model m = {
		.method = method, .C = C,
		.c = { .n = n, .lead = lead, .lag = lag, .rank = rank },
		.norm = method == PC_CFAR_OS ? C / os_mean(C, n, rank) : 1.0,
	};
	double xmax = C + 1.0;

	while (gammq(C, xmax) > 1e-20)
		xmax *= 1.25;
	return pfa_of(&m, alpha, xmax);
}

/* ---- per-gate training ------------------------------------------------------ */

/* Training cells at gate n (pc.h): columns |dn| <= gr hold 2 td cells,
 * the others 2 (gd + td) + 1; only columns inside [0, R) count. */
static struct cfar_cells gate_cells(const struct radar_setup *rs, unsigned n, unsigned N,
				    unsigned k)
{
	unsigned wd = 2 * (rs->gd + rs->td) + 1, wg = 2 * rs->td, span = rs->gr + rs->tr;
	unsigned before = n, after = rs->samples - 1 - n, cols, g;
	struct cfar_cells c;

	cols = before < span ? before : span;
	g = before < rs->gr ? before : rs->gr;
	c.lead = g * wg + (cols - g) * wd;
	cols = after < span ? after : span;
	g = after < rs->gr ? after : rs->gr;
	c.lag = g * wg + (cols - g) * wd;
	c.n = c.lead + c.lag + wg;
	c.rank = 0;
	if (rs->method == PC_CFAR_OS) {
		/* k_n = max(1, round(k N_n / N)), in integers */
		c.rank = (unsigned)((2ull * k * c.n + N) / (2ull * N));
		if (c.rank < 1)
			c.rank = 1;
	}
	return c;
}

/* Solved groups: gates with equal counts share alpha and norm. */
struct gate_group {
	struct cfar_cells c;
	double alpha, norm;
};

static int same_cells(const struct cfar_cells *a, const struct cfar_cells *b, enum pc_cfar m)
{
	if (a->n != b->n || a->rank != b->rank)
		return 0;
	/* go/so: the halves' counts, in either order (max and min are
	 * symmetric), so the two range edges share their solves */
	return (m != PC_CFAR_GO && m != PC_CFAR_SO) || (a->lead == b->lead && a->lag == b->lag) ||
	       (a->lead == b->lag && a->lag == b->lead);
}

/* alpha, norm and rank for every gate. */
static int cfar_tables(struct radar_setup *rs, const struct pc_radar *r, char *err,
		       size_t errlen)
{
	unsigned R = rs->samples, span = rs->gr + rs->tr;
	unsigned ngroups = 0, maxgroups = 2 * span + 2, N, k;
	struct gate_group *g;
	double C = rs->integrate ? rs->channels : 1.0;

	rs->alpha = malloc(R * sizeof(*rs->alpha));
	rs->norm = malloc(R * sizeof(*rs->norm));
	rs->rank = calloc(R, sizeof(*rs->rank));
	rs->ncells = calloc(R, sizeof(*rs->ncells));
	rs->nlead = calloc(R, sizeof(*rs->nlead));
	rs->nlag = calloc(R, sizeof(*rs->nlag));
	g = calloc(maxgroups, sizeof(*g));
	if (!rs->alpha || !rs->norm || !rs->rank || !rs->ncells || !rs->nlead || !rs->nlag || !g) {
		free(g);
		errbuf_set(err, errlen, "out of memory for the CFAR tables of %u gates", R);
		return -ENOMEM;
	}
	/* N: the interior count, which os_rank (and its auto 3N/4) refers to */
	N = (2 * (rs->gd + rs->td) + 1) * (2 * span + 1) - (2 * rs->gd + 1) * (2 * rs->gr + 1);
	k = r->os_rank ? r->os_rank : (unsigned)((3ull * N + 2) / 4);
	if (k < 1)
		k = 1;
	for (unsigned n = 0; n < R; n++) {
		struct cfar_cells c = gate_cells(rs, n, N, k);
		unsigned i;

		for (i = 0; i < ngroups; i++)
			if (same_cells(&g[i].c, &c, rs->method))
				break;
		if (i == ngroups) {
			struct pfa_model m = { .method = rs->method, .C = C, .c = c, .norm = 1.0 };

			if (ngroups == maxgroups) {   /* cannot happen: at most 2 span + 1 */
				free(g);
				errbuf_set(err, errlen, "cfar: more distinct edge gates than expected");
				return -EINVAL;
			}
			if (rs->method == PC_CFAR_OS)
				m.norm = C / os_mean(C, c.n, c.rank);
			g[i].c = c;
			g[i].norm = m.norm;
			g[i].alpha = solve_alpha(&m, r->pfa);
			ngroups++;
		}
		rs->alpha[n] = (float)g[i].alpha;
		rs->norm[n] = (float)g[i].norm;
		rs->rank[n] = c.rank;
		rs->ncells[n] = c.n;
		rs->nlead[n] = c.lead;
		rs->nlag[n] = c.lag;
	}
	free(g);
	return 0;
}

/* ---- the setup --------------------------------------------------------------- */

/* w[p] g_d: the window (or rect) with the Doppler gain folded in. */
static int make_window(struct radar_setup *rs, const struct pc_radar *r, char *err,
		       size_t errlen)
{
	static const double gmti[] = { 1.0, 2.0, 6.0 };
	double e = 0.0, g;

	rs->window = malloc(rs->pulses_mti * sizeof(*rs->window));
	if (!rs->window) {
		errbuf_set(err, errlen, "out of memory for the Doppler window");
		return -ENOMEM;
	}
	for (unsigned p = 0; p < rs->pulses_mti; p++) {
		double w = r->window ? r->window[p] : 1.0;

		e += w * w;
	}
	if (!(e > 0.0) || !isfinite(e)) {
		errbuf_set(err, errlen, "doppler window: its energy is %g (all zeros or not finite)", e);
		return -EINVAL;
	}
	g = 1.0 / sqrt(gmti[rs->mti] * e);
	for (unsigned p = 0; p < rs->pulses_mti; p++)
		rs->window[p] = (float)((r->window ? r->window[p] : 1.0) * g);
	return 0;
}

/* Geometry, scales and flags. */
static void make_scalars(struct radar_setup *rs, const struct pc_params *p)
{
	const struct pc_radar *r = &p->radar;

	rs->beams = p->beams.mode != PC_BEAMS_OFF ? p->beams.count : 0;
	rs->channels = rs->beams ? rs->beams : p->channels;
	rs->pulses = p->pulses;
	rs->samples = p->samples;
	rs->mti = r->mti;
	rs->pulses_mti = radar_pulses_after_mti(p->pulses, r->mti);
	rs->nd = radar_doppler_nfft(p->pulses, r->mti, r->nfft);
	rs->out_mode = p->out_mode;
	rs->cfar = r->cfar ? 1 : 0;
	rs->method = r->method;
	rs->integrate = r->integrate ? 1 : 0;
	rs->maps = rs->integrate ? 1 : rs->channels;
	rs->gr = r->guard_range;
	rs->gd = r->guard_doppler;
	rs->tr = r->train_range;
	rs->td = r->train_doppler;
	rs->mr = r->maxima_range;
	rs->md = r->maxima_doppler;
	rs->max_det = rs->cfar ? r->max_detections : 0;
	rs->range_m_per_gate = r->sample_rate_hz > 0.0
				       ? (float)(RADAR_C_MPS / (2.0 * r->sample_rate_hz)) : NAN;
	rs->mps_per_bin = r->prf_hz > 0.0 && r->carrier_hz > 0.0
				  ? (float)(r->prf_hz / rs->nd * RADAR_C_MPS / (2.0 * r->carrier_hz))
				  : NAN;
	rs->det_flags = (rs->integrate ? CHIRP_DET_INTEGRATED : 0) |
			(isnan(rs->mps_per_bin) ? CHIRP_DET_NO_VELOCITY : 0) |
			(rs->beams ? CHIRP_DET_BEAMS : 0);
	rs->det_bytes = rs->cfar ? CHIRP_DET_BYTES(rs->max_det) : 0;
}

void radar_beam_record(const struct beam_set *s, const double *w, int monopulse, unsigned b,
		       const float *y, struct chirp_det_record *rec)
{
	struct mono_angle a;
	double az, el;

	rec->channel = (int32_t)b;
	rec->beam = (int32_t)b;
	rec->reserved = 0;
	if (monopulse && mono_estimate(s, w, b, y, rec->noise, &a) == 0) {
		rec->azimuth_deg = (float)a.az_deg;
		rec->elevation_deg = (float)a.el_deg;
		rec->angle_quality = (uint16_t)a.quality;
		return;
	}
	beam_azel(s, b, &az, &el);
	rec->azimuth_deg = (float)az;
	rec->elevation_deg = (float)el;
	rec->angle_quality = monopulse ? CHIRP_DET_ANGLE_NO_NEIGHBOUR : 0;
}

int radar_setup_make(struct radar_setup *rs, const struct pc_params *p, char *err,
		     size_t errlen)
{
	int rc;

	memset(rs, 0, sizeof(*rs));
	if (!p->radar.doppler) {
		errbuf_set(err, errlen, "radar chain is off (doppler 0)");
		return -EINVAL;
	}
	make_scalars(rs, p);
	rc = make_window(rs, &p->radar, err, errlen);
	if (rc == 0 && rs->cfar)
		rc = cfar_tables(rs, &p->radar, err, errlen);
	if (rc < 0)
		radar_setup_free(rs);
	return rc;
}

void radar_setup_free(struct radar_setup *rs)
{
	if (!rs)
		return;
	free(rs->window);
	free(rs->alpha);
	free(rs->norm);
	free(rs->rank);
	free(rs->ncells);
	free(rs->nlead);
	free(rs->nlag);
	memset(rs, 0, sizeof(*rs));
}

/* ---- the rules (radar.h) ------------------------------------------------ */

unsigned radar_pulses_after_mti(unsigned pulses, enum pc_mti mti)
{
	unsigned drop = mti == PC_MTI_TWO ? 1 : mti == PC_MTI_THREE ? 2 : 0;

	return pulses > drop ? pulses - drop : 0;
}

unsigned radar_doppler_nfft(unsigned pulses, enum pc_mti mti, unsigned nfft)
{
	unsigned pm = radar_pulses_after_mti(pulses, mti);

	if (!pm)
		return 0;
	return nfft ? nfft : (unsigned)pc_good_fft_size(pm);
}

static int fault(struct radar_fault *f, enum radar_param param, unsigned params,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fault(struct radar_fault *f, enum radar_param param, unsigned params,
		 const char *fmt, ...)
{
	va_list ap;

	f->param = param;
	f->params = RADAR_BIT(param) | params;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Nd's own parameters: the pulses, the MTI and a given length. */
#define ND_PARAMS (RADAR_BIT(RADAR_P_NFFT) | RADAR_BIT(RADAR_P_PULSES) | RADAR_BIT(RADAR_P_MTI))

/* The MTI against the pulses, and Nd >= P' within its bound. */
static int check_doppler(const struct pc_radar *r, unsigned pulses, unsigned *nd,
			 struct radar_fault *f)
{
	unsigned pm;

	if (r->mti < PC_MTI_NONE || r->mti > PC_MTI_THREE)
		return fault(f, RADAR_P_MTI, 0, "mti %d: unknown (none, two_pulse or three_pulse)",
			     (int)r->mti);
	pm = radar_pulses_after_mti(pulses, r->mti);
	if (pm == 0)
		return fault(f, RADAR_P_MTI, RADAR_BIT(RADAR_P_PULSES),
			     "mti %s needs at least %u pulses per CPI, not %u",
			     r->mti == PC_MTI_THREE ? "three_pulse" : "two_pulse",
			     r->mti == PC_MTI_THREE ? 3u : 2u, pulses);
	*nd = radar_doppler_nfft(pulses, r->mti, r->nfft);
	if (*nd < pm)
		return fault(f, RADAR_P_NFFT, ND_PARAMS,
			     "Doppler FFT length %u is shorter than the %u pulses left after MTI",
			     *nd, pm);
	if (*nd == 0 || *nd > RADAR_MAX_DOPPLER_NFFT)
		return fault(f, RADAR_P_NFFT, ND_PARAMS, "Doppler FFT length %u: must be at most %u",
			     *nd, RADAR_MAX_DOPPLER_NFFT);
	return 0;
}

/* The CFAR window, 2 x (guard + train) + 1 cells on each axis, within the
 * map (R gates x Nd bins), with training cells, and what each method
 * needs of them. */
static int check_window(const struct pc_radar *r, unsigned samples, unsigned nd,
			struct radar_fault *f)
{
	uint64_t wr = 2ull * ((uint64_t)r->guard_range + r->train_range) + 1;
	uint64_t wd = 2ull * ((uint64_t)r->guard_doppler + r->train_doppler) + 1;
	uint64_t n = wr * wd - (2ull * r->guard_range + 1) * (2ull * r->guard_doppler + 1);

	if (wr > samples)
		return fault(f, RADAR_P_TRAIN_RANGE,
			     RADAR_BIT(RADAR_P_GUARD_RANGE) | RADAR_BIT(RADAR_P_SAMPLES),
			     "CFAR window of 2 x (guard_range %u + train_range %u) + 1 = %llu gates is wider than the %u range gates",
			     r->guard_range, r->train_range, (unsigned long long)wr, samples);
	if (wd > nd)
		return fault(f, RADAR_P_TRAIN_DOPPLER, RADAR_BIT(RADAR_P_GUARD_DOPPLER) | ND_PARAMS,
			     "CFAR window of 2 x (guard_doppler %u + train_doppler %u) + 1 = %llu bins is wider than the %u Doppler bins",
			     r->guard_doppler, r->train_doppler, (unsigned long long)wd, nd);
	if (n == 0)
		return fault(f, RADAR_P_TRAIN_RANGE, RADAR_BIT(RADAR_P_TRAIN_DOPPLER),
			     "no training cells (train_range and train_doppler are 0)");
	if ((r->method == PC_CFAR_GO || r->method == PC_CFAR_SO) && r->train_range < 1)
		return fault(f, RADAR_P_TRAIN_RANGE, RADAR_BIT(RADAR_P_METHOD),
			     "cfar %s needs train_range >= 1: its halves are the leading and lagging range cells",
			     r->method == PC_CFAR_GO ? "go" : "so");
	if (r->method == PC_CFAR_OS && n > PC_CFAR_OS_MAX_CELLS)
		return fault(f, RADAR_P_METHOD,
			     RADAR_BIT(RADAR_P_TRAIN_RANGE) | RADAR_BIT(RADAR_P_TRAIN_DOPPLER),
			     "os CFAR sorts at most %u training cells per cell, this window has %llu",
			     PC_CFAR_OS_MAX_CELLS, (unsigned long long)n);
	if (r->method == PC_CFAR_OS && r->os_rank > n)
		return fault(f, RADAR_P_OS_RANK, RADAR_BIT(RADAR_P_METHOD),
			     "os_rank %u exceeds the %llu training cells (1..%llu, or 0 for auto)",
			     r->os_rank, (unsigned long long)n, (unsigned long long)n);
	return 0;
}

/* The detector: method, pfa, list size, window, local maxima. */
static int check_cfar(const struct pc_radar *r, unsigned samples, unsigned nd,
		      struct radar_fault *f)
{
	if (r->method < PC_CFAR_CA || r->method > PC_CFAR_OS)
		return fault(f, RADAR_P_METHOD, 0, "cfar method %d: unknown (ca, go, so or os)",
			     (int)r->method);
	if (!(r->pfa > 0.0 && r->pfa < 1.0))
		return fault(f, RADAR_P_PFA, 0, "pfa %g must be in (0, 1)", r->pfa);
	if (r->pfa < 1e-300)
		return fault(f, RADAR_P_PFA, 0, "pfa %g is below 1e-300", r->pfa);
	if (r->max_detections < 1 || r->max_detections > PC_MAX_DETECTIONS)
		return fault(f, RADAR_P_MAX_DETECTIONS, 0, "max_detections %u must be 1..%u",
			     r->max_detections, PC_MAX_DETECTIONS);
	if (check_window(r, samples, nd, f) < 0)
		return -EINVAL;
	if (2ull * r->maxima_doppler + 1 > nd)
		return fault(f, RADAR_P_MAXIMA_DOPPLER, ND_PARAMS,
			     "maxima_doppler %u: the neighbourhood (2 x %u + 1 bins) is wider than the %u Doppler bins",
			     r->maxima_doppler, r->maxima_doppler, nd);
	if (r->maxima_range >= samples)
		return fault(f, RADAR_P_MAXIMA_RANGE, RADAR_BIT(RADAR_P_SAMPLES),
			     "maxima_range %u: must be below the %u range gates", r->maxima_range,
			     samples);
	return 0;
}

int radar_check_outputs(enum pc_output out_mode, const struct pc_radar *r,
			struct radar_fault *f)
{
	const unsigned doppler = RADAR_BIT(RADAR_P_DOPPLER);

	memset(f, 0, sizeof(*f));
	if (r->cfar && !r->doppler)
		return fault(f, RADAR_P_CFAR, doppler,
			     "[cfar] needs [doppler] enable = true (the CFAR runs on the range-Doppler map)");
	if ((out_mode == PC_OUT_MAP_POWER || out_mode == PC_OUT_MAP_DB) && !r->doppler)
		return fault(f, RADAR_P_OUT_MODE, doppler, "output mode %s needs [doppler] enable = true",
			     out_mode == PC_OUT_MAP_DB ? "map_db" : "map_power");
	if (out_mode == PC_OUT_NONE && !(r->doppler && r->cfar))
		return fault(f, RADAR_P_OUT_MODE, RADAR_BIT(RADAR_P_CFAR),
			     "output mode none leaves detections as the only result: needs [cfar] enable");
	return 0;
}

int radar_check_scales(const struct pc_radar *r, struct radar_fault *f)
{
	const double v[3] = { r->sample_rate_hz, r->prf_hz, r->carrier_hz };
	static const char *const name[3] = { "sample_rate_hz", "prf_hz", "carrier_hz" };
	static const enum radar_param param[3] = { RADAR_P_SAMPLE_RATE, RADAR_P_PRF,
						   RADAR_P_CARRIER };

	memset(f, 0, sizeof(*f));
	for (int i = 0; i < 3; i++)
		if (!(v[i] >= 0.0) || !isfinite(v[i]))
			return fault(f, param[i], 0, "radar %s %g must be finite and >= 0 (0: not given)",
				     name[i], v[i]);
	if (r->velocity && !(r->prf_hz > 0.0 && r->carrier_hz > 0.0))
		return fault(f, RADAR_P_VELOCITY, RADAR_BIT(RADAR_P_PRF) | RADAR_BIT(RADAR_P_CARRIER),
			     "velocity = on needs prf_hz and carrier_hz (prf_hz %g, carrier_hz %g)",
			     r->prf_hz, r->carrier_hz);
	return 0;
}

int radar_check(const struct pc_radar *r, unsigned pulses, unsigned samples,
		struct radar_fault *f)
{
	unsigned nd = 0;

	memset(f, 0, sizeof(*f));
	if (check_doppler(r, pulses, &nd, f) < 0)
		return -EINVAL;
	if (r->cfar && check_cfar(r, samples, nd, f) < 0)
		return -EINVAL;
	return 0;
}
