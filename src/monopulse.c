/* SPDX-License-Identifier: Apache-2.0 */
/*
 * monopulse.c — amplitude-comparison monopulse and the angle CRB
 * (monopulse.h).
 *
 * Cost: a detection takes about 60 evaluations of two beam patterns, each
 * C complex exponentials (C = 16: some 20 us); the chain runs it on the
 * reported detections only, at most max_detections per CPI.
 */
#include <errno.h>
#include <math.h>

#include "monopulse.h"

#define BRACKET_STEPS 16             /* the flank scan: du / 16 steps    */
#define BISECT_ITERS 40              /* 2^-40 du                         */
#define POWER_FLOOR 1e-300
#define PHASE_SIGMAS 4.0

/* ln |F_n(u)|^2 - ln |F_b(u)|^2 for the weight rows wn and wb. */
static double log_ratio(const struct beam_set *s, const double *wn, const double *wb, double u,
			double v, double fn[2], double fb[2])
{
	beam_pattern(s, wn, u, v, fn);
	beam_pattern(s, wb, u, v, fb);
	return log(fmax(fn[0] * fn[0] + fn[1] * fn[1], POWER_FLOOR)) -
	       log(fmax(fb[0] * fb[0] + fb[1] * fb[1], POWER_FLOOR));
}

/* b's neighbour j (b +- 1) if it exists and differs from b in u only. */
static int is_neighbour(const struct beam_set *s, unsigned b, long j)
{
	double ub, vb, uj, vj;

	if (j < 0 || j >= (long)beam_count(s))
		return 0;
	beam_uv(s, b, &ub, &vb);
	beam_uv(s, (unsigned)j, &uj, &vj);
	return fabs(vj - vb) <= 1e-9 && uj != ub;
}

static double power_of(const float *y, unsigned j)
{
	return fmax((double)y[2 * j] * y[2 * j] + (double)y[2 * j + 1] * y[2 * j + 1], POWER_FLOOR);
}

static void finish(struct mono_angle *out, double u, double v)
{
	out->u = u;
	out->v = v;
	if (beam_azel_of(u, v, &out->az_deg, &out->el_deg) < 0) {
		out->az_deg = NAN;
		out->el_deg = NAN;
	}
}

/*
 * The misfit of the complex ratio y_n / y_b against the model's at û, and
 * its noise's standard deviation (each output's phase noise taken as
 * independent: with overlapping beams it is smaller, so the test errs
 * towards passing one target).
 */
static void phase_test(const float *y, unsigned b, unsigned n, const double fn[2],
		       const double fb[2], double noise, struct mono_angle *out)
{
	double yr = (double)y[2 * n] * y[2 * b] + (double)y[2 * n + 1] * y[2 * b + 1];
	double yi = (double)y[2 * n + 1] * y[2 * b] - (double)y[2 * n] * y[2 * b + 1];
	double mr = fn[0] * fb[0] + fn[1] * fb[1], mi = fn[1] * fb[0] - fn[0] * fb[1];
	double resid = atan2(yi * mr - yr * mi, yr * mr + yi * mi), sigma;

	out->phase_resid_rad = resid;
	if (!(noise > 0.0))
		return;
	sigma = sqrt(noise / (2.0 * power_of(y, b)) + noise / (2.0 * power_of(y, n)));
	if (fabs(resid) > PHASE_SIGMAS * sigma)
		out->quality |= MONO_UNRESOLVED;
}

int mono_estimate(const struct beam_set *s, const double *w, unsigned b, const float *y,
		  double noise, struct mono_angle *out)
{
	unsigned B = beam_count(s), C = beam_channels(s), n;
	int lo_ok, hi_ok;
	double ub, vb, un, vn, m, t_lo = 0.0, t_hi = 0.0, f_lo, f_hi, fn[2], fb[2];
	const double *wb, *wn;

	if (b >= B)
		return -EINVAL;
	beam_uv(s, b, &ub, &vb);
	out->quality = 0;
	out->neighbour = -1;
	out->phase_resid_rad = 0.0;
	lo_ok = is_neighbour(s, b, (long)b - 1);
	hi_ok = is_neighbour(s, b, (long)b + 1);
	if (!lo_ok && !hi_ok) {
		out->quality = MONO_NO_NEIGHBOUR;
		finish(out, ub, vb);
		return 0;
	}
	n = !hi_ok ? b - 1 : !lo_ok ? b + 1 : power_of(y, b - 1) > power_of(y, b + 1) ? b - 1 : b + 1;
	out->neighbour = (int)n;
	if (power_of(y, n) > power_of(y, b))
		out->quality |= MONO_NOT_PEAK;
	beam_uv(s, n, &un, &vn);
	wb = w + 2 * (size_t)b * C;
	wn = w + 2 * (size_t)n * C;
	m = log(power_of(y, n)) - log(power_of(y, b));

	/* u(t) = ub + t (un - ub); f(t) rises from b towards n. Find where it
	 * stops rising, towards n (at most t = 1) and away (at most -1/2). */
	f_lo = f_hi = log_ratio(s, wn, wb, ub, vb, fn, fb);
	for (int dir = 1; dir >= -1; dir -= 2) {
		double t = 0.0, f = f_lo, tmax = dir > 0 ? 1.0 : 0.5;

		for (int k = 1; k <= BRACKET_STEPS * tmax; k++) {
			double tt = dir * (double)k / BRACKET_STEPS, u = ub + tt * (un - ub), ff;

			if (u * u + vb * vb > 1.0)
				break;
			ff = log_ratio(s, wn, wb, u, vb, fn, fb);
			if (dir > 0 ? !(ff > f) : !(ff < f))
				break;
			t = tt;
			f = ff;
		}
		if (dir > 0) {
			t_hi = t;
			f_hi = f;
		} else {
			t_lo = t;
			f_lo = f;
		}
	}

	double t;
	if (!(m > f_lo)) {
		t = t_lo;
		out->quality |= MONO_CLAMPED;
	} else if (!(m < f_hi)) {
		t = t_hi;
		out->quality |= MONO_CLAMPED;
	} else {
		double a = t_lo, z = t_hi;

		for (int i = 0; i < BISECT_ITERS; i++) {
			double mid = 0.5 * (a + z);

			if (log_ratio(s, wn, wb, ub + mid * (un - ub), vb, fn, fb) < m)
				a = mid;
			else
				z = mid;
		}
		t = 0.5 * (a + z);
	}
	if (t < 0.0 && !(n == b + 1 ? lo_ok : hi_ok))
		out->quality |= MONO_OUTSIDE;
	(void)log_ratio(s, wn, wb, ub + t * (un - ub), vb, fn, fb);
	phase_test(y, b, n, fn, fb, noise, out);
	finish(out, ub + t * (un - ub), vb);
	return 0;
}

double mono_crb_u(const struct array *a, double lambda_m, double u, double v, double snr)
{
	unsigned C = array_channels(a);
	double w = sqrt(fmax(0.0, 1.0 - u * u - v * v)), k = 2.0 * M_PI / lambda_m;
	double mean = 0.0, ss = 0.0, xyz[3];

	if (w == 0.0)
		return INFINITY;
	for (unsigned c = 0; c < C; c++) {
		array_position(a, c, xyz);
		mean += k * (xyz[0] - xyz[2] * u / w);
	}
	mean /= C;
	for (unsigned c = 0; c < C; c++) {
		double d;

		array_position(a, c, xyz);
		d = k * (xyz[0] - xyz[2] * u / w) - mean;
		ss += d * d;
	}
	if (!(ss > 0.0) || !(snr > 0.0))
		return INFINITY;
	return 1.0 / (2.0 * (snr / C) * ss);
}
