/* SPDX-License-Identifier: Apache-2.0 */
/*
 * monopulse.c — the beam-space monopulse angle and the angle CRB
 * (monopulse.h).
 *
 * Cost: a detection takes about 70 evaluations of the channels' response
 * (C complex exponentials) and of M <= 3 beam patterns (C = 16: some
 * 20 us); the chain runs it on the reported detections only, at most
 * max_detections per CPI.
 */
#include <complex.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "monopulse.h"

#define MONO_MAX_BEAMS 3             /* b and its two neighbours          */
#define MONO_GRID 24                 /* grid points over the interval    */
#define MONO_GOLDEN_ITERS 40         /* 0.618^40: 4e-9 of a grid step    */

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
	return (double)y[2 * j] * y[2 * j] + (double)y[2 * j + 1] * y[2 * j + 1];
}

/* The fit: M beams (b and its neighbours), their outputs, and the inverse
 * of their noise covariance. */
struct fit {
	const struct beam_set *s;
	unsigned M;
	const double *w[MONO_MAX_BEAMS];
	double complex y[MONO_MAX_BEAMS];
	double complex qi[MONO_MAX_BEAMS * MONO_MAX_BEAMS];   /* Q^-1        */
	double v;                                             /* v_b         */
	double resp[2 * ARRAY_MAX_CHANNELS];                  /* scratch     */
};

/*
 * Q[i][j] = sum_c W_i[c] conj(W_j[c]) |g_c|^2, the outputs' noise
 * covariance per unit element noise, inverted by Gauss-Jordan (M <= 3).
 * -EDOM when the beams are linearly dependent (C < M).
 */
static int noise_inverse(struct fit *f, double *q_bb, unsigned ib)
{
	unsigned M = f->M, C = beam_channels(f->s);
	double complex a[MONO_MAX_BEAMS][2 * MONO_MAX_BEAMS] = { { 0 } };
	const struct array *arr = beam_array(f->s);

	for (unsigned i = 0; i < M; i++) {
		for (unsigned j = 0; j < M; j++) {
			double complex q = 0;

			for (unsigned c = 0; c < C; c++) {
				double g[2];

				array_cal(arr, c, g);
				q += (f->w[i][2 * c] + I * f->w[i][2 * c + 1]) *
				     (f->w[j][2 * c] - I * f->w[j][2 * c + 1]) * (g[0] * g[0] + g[1] * g[1]);
			}
			a[i][j] = q;
			a[i][M + j] = i == j;
		}
	}
	*q_bb = creal(a[ib][ib]);
	for (unsigned k = 0; k < M; k++) {
		double piv = cabs(a[k][k]);

		if (!(piv > 1e-12 * *q_bb))
			return -EDOM;   /* Hermitian positive semi-definite: no swap needed */
		for (unsigned j = 0; j < 2 * M; j++)
			a[k][j] = j == k ? a[k][j] : a[k][j] / a[k][k];
		a[k][k] = 1;
		for (unsigned i = 0; i < M; i++) {
			double complex m = a[i][k];

			if (i == k)
				continue;
			for (unsigned j = 0; j < 2 * M; j++)
				a[i][j] -= m * a[k][j];
		}
	}
	for (unsigned i = 0; i < M; i++)
		for (unsigned j = 0; j < M; j++)
			f->qi[i * M + j] = a[i][M + j];
	return 0;
}

/* J(u) = |F^H Q^-1 y|^2 / (F^H Q^-1 F): the output energy one plane wave
 * from u explains. */
static double explained(struct fit *f, double u)
{
	unsigned M = f->M, C = beam_channels(f->s);
	double complex F[MONO_MAX_BEAMS], a = 0;
	double d = 0;

	beam_response(f->s, u, f->v, f->resp);
	for (unsigned j = 0; j < M; j++) {
		double complex acc = 0;

		for (unsigned c = 0; c < C; c++)
			acc += (f->w[j][2 * c] + I * f->w[j][2 * c + 1]) *
			       (f->resp[2 * c] + I * f->resp[2 * c + 1]);
		F[j] = acc;
	}
	for (unsigned i = 0; i < M; i++) {
		for (unsigned j = 0; j < M; j++) {
			a += conj(F[i]) * f->qi[i * M + j] * f->y[j];
			d += creal(conj(F[i]) * f->qi[i * M + j] * F[j]);
		}
	}
	return d > 0.0 ? creal(a * conj(a)) / d : 0.0;
}

/* y^H Q^-1 y: all the outputs' energy in the same metric. */
static double total_energy(const struct fit *f)
{
	double complex e = 0;

	for (unsigned i = 0; i < f->M; i++)
		for (unsigned j = 0; j < f->M; j++)
			e += conj(f->y[i]) * f->qi[i * f->M + j] * f->y[j];
	return creal(e);
}

/* The maximum of J over [lo, hi]: a grid, then a golden-section search
 * between the best point's grid neighbours. *at_end: the maximum is an
 * end of the interval. */
static double maximise(struct fit *f, double lo, double hi, int *at_end)
{
	const double g = 0.5 * (sqrt(5.0) - 1.0);
	double best = -1.0, a, z, x1, x2, j1, j2, step = (hi - lo) / MONO_GRID;
	int kb = 0;

	for (int k = 0; k <= MONO_GRID; k++) {
		double j = explained(f, lo + k * step);

		if (j > best) {
			best = j;
			kb = k;
		}
	}
	a = lo + (kb > 0 ? kb - 1 : 0) * step;
	z = lo + (kb < MONO_GRID ? kb + 1 : MONO_GRID) * step;
	x1 = z - g * (z - a);
	x2 = a + g * (z - a);
	j1 = explained(f, x1);
	j2 = explained(f, x2);
	for (int i = 0; i < MONO_GOLDEN_ITERS; i++) {
		if (j1 < j2) {
			a = x1;
			x1 = x2;
			j1 = j2;
			x2 = a + g * (z - a);
			j2 = explained(f, x2);
		} else {
			z = x2;
			x2 = x1;
			j2 = j1;
			x1 = z - g * (z - a);
			j1 = explained(f, x1);
		}
	}
	a = 0.5 * (a + z);
	*at_end = fabs(a - lo) < 1e-6 * (hi - lo) || fabs(a - hi) < 1e-6 * (hi - lo);
	return a;
}

/* Chi-square thresholds of the misfit at false-alarm probability 1e-4,
 * by its degrees of freedom 2M - 3 (M = 2: 1, M = 3: 3), halved: the
 * misfit over the noise power is chi^2 / 2. */
static double misfit_limit(unsigned M)
{
	return M == 2 ? 15.14 / 2.0 : 21.11 / 2.0;
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

/* Fill the fit with beams j0..j1 (b among them) that nb keeps; *ib: b's
 * place. Then invert their noise covariance: 0 or -EDOM. */
static int load_beams(struct fit *f, const double *w, const float *y, unsigned b, unsigned j0,
		      unsigned j1, const int nb[2], unsigned *ib, double *q_bb)
{
	unsigned C = beam_channels(f->s);

	f->M = 0;
	for (unsigned j = j0; j <= j1; j++) {
		if (j != b && !nb[j > b])
			continue;
		if (j == b)
			*ib = f->M;
		f->w[f->M] = w + 2 * (size_t)j * C;
		f->y[f->M] = y[2 * j] + I * (double)y[2 * j + 1];
		f->M++;
	}
	return noise_inverse(f, q_bb, *ib);
}

/* From neighbour to neighbour, half a spacing beyond b where it has none
 * (u_end[side]: that end), inside the visible region. */
static void search_interval(const struct beam_set *s, unsigned b, const int nb[2],
			    double u_end[2], double *lo, double *hi)
{
	double ub, vb, un, vn, edge;

	beam_uv(s, b, &ub, &vb);
	for (int side = 0; side < 2; side++) {
		if (nb[side]) {
			beam_uv(s, side ? b + 1 : b - 1, &un, &vn);
			u_end[side] = un;
		} else {
			beam_uv(s, side ? b - 1 : b + 1, &un, &vn);
			u_end[side] = ub - 0.5 * (un - ub);
		}
	}
	edge = sqrt(fmax(0.0, 1.0 - vb * vb));
	*lo = fmax(fmin(u_end[0], u_end[1]), -edge);
	*hi = fmin(fmax(u_end[0], u_end[1]), edge);
}

int mono_estimate(const struct beam_set *s, const double *w, unsigned b, const float *y,
		  double noise, struct mono_angle *out)
{
	unsigned ib = 0, n;
	int nb[2], at_end;
	double ub, vb, lo, hi, u, q_bb, u_end[2];
	struct fit f;    /* ~16 KiB on the stack (the scratch response) */

	if (b >= beam_count(s))
		return -EINVAL;
	beam_uv(s, b, &ub, &vb);
	out->quality = 0;
	out->neighbour = -1;
	out->misfit = 0.0;
	nb[0] = is_neighbour(s, b, (long)b - 1);
	nb[1] = is_neighbour(s, b, (long)b + 1);
	if (!nb[0] && !nb[1])
		goto centre;
	n = !nb[1] ? b - 1 : !nb[0] ? b + 1 : power_of(y, b - 1) > power_of(y, b + 1) ? b - 1 : b + 1;
	out->neighbour = (int)n;
	if (power_of(y, n) > power_of(y, b))
		out->quality |= MONO_NOT_PEAK;

	f.s = s;
	f.v = vb;
	if (load_beams(&f, w, y, b, nb[0] ? b - 1 : b, nb[1] ? b + 1 : b, nb, &ib, &q_bb) < 0) {
		/* three beams from fewer channels: b and the stronger neighbour */
		nb[n < b ? 1 : 0] = 0;
		if (load_beams(&f, w, y, b, n < b ? n : b, n < b ? b : n, nb, &ib, &q_bb) < 0)
			goto centre;
	}
	search_interval(s, b, nb, u_end, &lo, &hi);
	u = maximise(&f, lo, hi, &at_end);
	if (at_end)
		out->quality |= MONO_CLAMPED;
	for (int side = 0; side < 2; side++)
		if (!nb[side] && (u - ub) * (u_end[side] - ub) > 0.0)
			out->quality |= MONO_OUTSIDE;
	if (noise > 0.0 && q_bb > 0.0) {
		out->misfit = (total_energy(&f) - explained(&f, u)) / (noise / q_bb);
		if (out->misfit > misfit_limit(f.M))
			out->quality |= MONO_UNRESOLVED;
	}
	finish(out, u, vb);
	return 0;
centre:
	out->quality |= MONO_NO_NEIGHBOUR;
	finish(out, ub, vb);
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
