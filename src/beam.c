/* SPDX-License-Identifier: Apache-2.0 */
/*
 * beam.c — beam directions, weights and the beamforming product (beam.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "beam.h"
#include "errbuf.h"

#define DEG (M_PI / 180.0)
#define VISIBLE_SLACK 1e-12          /* u^2 + v^2 rounding at endfire */

struct beam_set {
	const struct array *a;
	unsigned B, C;
	enum beam_layout layout;
	double lambda_m;
	double *pos;                 /* 3 C: element positions, metres      */
	double *cal;                 /* 2 C: g_c                            */
	double *taper;               /* C: t_c / sum t                      */
	double *uv0;                 /* 2 B: directions at zero pointing    */
	double *uv;                  /* 2 B: under the current pointing     */
	double *wd;                  /* 2 B C: weights, double              */
	float *wf;                   /* 2 B C: weights, float               */
};

void beam_params_init(struct beam_params *p)
{
	memset(p, 0, sizeof(*p));
	p->layout = BEAM_FAN;
	p->count = 1;
	p->fan_spacing_u = 0.1;
	p->taper = WIN_RECT;
	p->taylor_nbar = 4;
	p->taylor_sll_db = 30.0;
}

void beam_uv_of(double az_deg, double el_deg, double *u, double *v)
{
	*u = sin(az_deg * DEG) * cos(el_deg * DEG);
	*v = sin(el_deg * DEG);
}

int beam_azel_of(double u, double v, double *az_deg, double *el_deg)
{
	double r2 = u * u + v * v, ce;

	if (!(r2 <= 1.0 + VISIBLE_SLACK))
		return -EDOM;
	if (v > 1.0)
		v = 1.0;
	if (v < -1.0)
		v = -1.0;
	*el_deg = asin(v) / DEG;
	ce = sqrt(fmax(0.0, 1.0 - v * v));
	*az_deg = ce > 0.0 ? asin(fmax(-1.0, fmin(1.0, u / ce))) / DEG : 0.0;
	return 0;
}

/* a_c(u, v) g_c for every channel into resp (2 C). */
void beam_response(const struct beam_set *s, double u, double v, double *resp)
{
	double w = sqrt(fmax(0.0, 1.0 - u * u - v * v)), k = 2.0 * M_PI / s->lambda_m;

	for (unsigned c = 0; c < s->C; c++) {
		const double *p = s->pos + 3 * c, *g = s->cal + 2 * c;
		double ph = k * (p[0] * u + p[1] * v + p[2] * w), ar = cos(ph), ai = sin(ph);

		resp[2 * c] = ar * g[0] - ai * g[1];
		resp[2 * c + 1] = ar * g[1] + ai * g[0];
	}
}

void beam_pattern(const struct beam_set *s, const double *w, double u, double v, double out[2])
{
	double kw = sqrt(fmax(0.0, 1.0 - u * u - v * v)), k = 2.0 * M_PI / s->lambda_m;
	double re = 0.0, im = 0.0;

	for (unsigned c = 0; c < s->C; c++) {
		const double *p = s->pos + 3 * c, *g = s->cal + 2 * c;
		double ph = k * (p[0] * u + p[1] * v + p[2] * kw), ar = cos(ph), ai = sin(ph);
		double xr = ar * g[0] - ai * g[1], xi = ar * g[1] + ai * g[0];

		re += w[2 * c] * xr - w[2 * c + 1] * xi;
		im += w[2 * c] * xi + w[2 * c + 1] * xr;
	}
	out[0] = re;
	out[1] = im;
}

double beam_noise_gain(const struct beam_set *s, const double *w)
{
	double n = 0.0;

	for (unsigned c = 0; c < s->C; c++) {
		const double *g = s->cal + 2 * c;

		n += (w[2 * c] * w[2 * c] + w[2 * c + 1] * w[2 * c + 1]) * (g[0] * g[0] + g[1] * g[1]);
	}
	return n;
}

/* W[b][c] = t_c conj(a_c(u_b, v_b)) / g_c, t already divided by sum t. */
static void compute_weights(struct beam_set *s)
{
	for (unsigned b = 0; b < s->B; b++) {
		double *w = s->wd + 2 * (size_t)b * s->C;
		double u = s->uv[2 * b], v = s->uv[2 * b + 1];
		double kw = sqrt(fmax(0.0, 1.0 - u * u - v * v)), k = 2.0 * M_PI / s->lambda_m;

		for (unsigned c = 0; c < s->C; c++) {
			const double *p = s->pos + 3 * c, *g = s->cal + 2 * c;
			double ph = k * (p[0] * u + p[1] * v + p[2] * kw);
			double ar = cos(ph), ai = -sin(ph);             /* conj(a_c) */
			double g2 = g[0] * g[0] + g[1] * g[1];
			double ir = g[0] / g2, ii = -g[1] / g2;         /* 1 / g_c   */

			w[2 * c] = s->taper[c] * (ar * ir - ai * ii);
			w[2 * c + 1] = s->taper[c] * (ar * ii + ai * ir);
		}
	}
	for (size_t i = 0; i < 2 * (size_t)s->B * s->C; i++)
		s->wf[i] = (float)s->wd[i];
}

/* Every beam of uv0 translated by (du, dv) inside the visible region?
 * Writes the reason for the first that is not. */
static int check_visible(const struct beam_set *s, double du, double dv, const char *what,
			 char *err, size_t errlen)
{
	for (unsigned b = 0; b < s->B; b++) {
		double u = s->uv0[2 * b] + du, v = s->uv0[2 * b + 1] + dv, r2 = u * u + v * v;

		if (!(r2 <= 1.0 + VISIBLE_SLACK)) {
			errbuf_set(err, errlen,
				   "%sbeam %u at u %.6g, v %.6g: outside the visible region "
				   "(u^2 + v^2 = %.4g > 1)", what, b, u, v, r2);
			return -EDOM;
		}
	}
	return 0;
}

static int check_params(const struct beam_params *p, char *err, size_t errlen)
{
	if (!(p->carrier_hz > 0.0) || !isfinite(p->carrier_hz)) {
		errbuf_set(err, errlen, "carrier_hz %g: must be a positive frequency", p->carrier_hz);
		return -EINVAL;
	}
	if (p->count < 1 || p->count > BEAM_MAX) {
		errbuf_set(err, errlen, "beams %u: must be 1..%u", p->count, BEAM_MAX);
		return -EINVAL;
	}
	if (p->layout == BEAM_FAN) {
		if (!(fabs(p->fan_az_deg) <= 90.0) || !(fabs(p->fan_el_deg) <= 90.0)) {
			errbuf_set(err, errlen, "fan centre az %g, el %g: each must be within -90..90 degrees",
				   p->fan_az_deg, p->fan_el_deg);
			return -EINVAL;
		}
		if (!(p->fan_spacing_u > 0.0) || !(p->fan_spacing_u <= 2.0)) {
			errbuf_set(err, errlen, "fan spacing_u %g: must be in (0, 2]", p->fan_spacing_u);
			return -EINVAL;
		}
	} else if (p->layout == BEAM_LIST) {
		if (!p->list_deg) {
			errbuf_set(err, errlen, "beam list: no directions given");
			return -EINVAL;
		}
		for (unsigned b = 0; b < p->count; b++) {
			double az = p->list_deg[2 * b], el = p->list_deg[2 * b + 1];

			if (!(fabs(az) <= 90.0) || !(fabs(el) <= 90.0)) {
				errbuf_set(err, errlen,
					   "beam %u at az %g, el %g: outside the visible region "
					   "(each angle must be within -90..90 degrees)", b, az, el);
				return -EDOM;
			}
		}
	} else {
		errbuf_set(err, errlen, "beam layout %d: unknown", (int)p->layout);
		return -EINVAL;
	}
	return 0;
}

/* Directions at zero pointing into s->uv0. */
static void nominal_directions(struct beam_set *s, const struct beam_params *p)
{
	for (unsigned b = 0; b < s->B; b++) {
		double *uv = s->uv0 + 2 * b;

		if (p->layout == BEAM_FAN) {
			beam_uv_of(p->fan_az_deg, p->fan_el_deg, &uv[0], &uv[1]);
			uv[0] += (b - (s->B - 1) / 2.0) * p->fan_spacing_u;
		} else {
			beam_uv_of(p->list_deg[2 * b], p->list_deg[2 * b + 1], &uv[0], &uv[1]);
		}
	}
}

/* The taper over the C channels, divided by its sum (unit gain). */
static int make_taper(struct beam_set *s, const struct beam_params *p, char *err, size_t errlen)
{
	double sum = 0.0;
	int rc = 0;

	if (p->taper_coef)
		memcpy(s->taper, p->taper_coef, s->C * sizeof(double));
	else
		rc = wf_window_fill(p->taper, p->taylor_nbar, p->taylor_sll_db, s->taper, s->C);
	if (rc < 0) {
		errbuf_set(err, errlen, "taper %s (nbar %u, sll_db %g): %s", wf_window_name(p->taper),
			   p->taylor_nbar, p->taylor_sll_db,
			   rc == -ENOMEM ? "out of memory" : "invalid parameters");
		return rc;
	}
	for (unsigned c = 0; c < s->C; c++)
		sum += s->taper[c];
	/* Symmetric windows of C >= 3 are positive inside; hann and blackman
	 * of C <= 2 are all zeros, which steer nothing. */
	if (!(sum > 0.0) || !isfinite(sum)) {
		errbuf_set(err, errlen, "taper %s over %u channels sums to zero",
			   p->taper_coef ? "coefficients" : wf_window_name(p->taper), s->C);
		return -EINVAL;
	}
	for (unsigned c = 0; c < s->C; c++)
		s->taper[c] /= sum;
	return 0;
}

struct beam_set *beam_set_create(const struct array *a, const struct beam_params *p, char *err,
				 size_t errlen)
{
	struct beam_set *s;
	size_t BC;

	if (check_params(p, err, errlen) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto nomem;
	s->a = a;
	s->B = p->count;
	s->C = array_channels(a);
	s->layout = p->layout;
	s->lambda_m = BEAM_C0_MPS / p->carrier_hz;
	BC = (size_t)s->B * s->C;
	s->pos = calloc(3 * (size_t)s->C, sizeof(double));
	s->cal = calloc(2 * (size_t)s->C, sizeof(double));
	s->taper = calloc(s->C, sizeof(double));
	s->uv0 = calloc(2 * (size_t)s->B, sizeof(double));
	s->uv = calloc(2 * (size_t)s->B, sizeof(double));
	s->wd = calloc(2 * BC, sizeof(double));
	s->wf = calloc(2 * BC, sizeof(float));
	if (!s->pos || !s->cal || !s->taper || !s->uv0 || !s->uv || !s->wd || !s->wf)
		goto nomem;
	for (unsigned c = 0; c < s->C; c++) {
		array_position(a, c, s->pos + 3 * c);
		array_cal(a, c, s->cal + 2 * c);
	}
	if (make_taper(s, p, err, errlen) < 0)
		goto fail;
	nominal_directions(s, p);
	if (check_visible(s, 0.0, 0.0, p->layout == BEAM_FAN ? "fan: " : "list: ", err, errlen) < 0)
		goto fail;
	memcpy(s->uv, s->uv0, 2 * (size_t)s->B * sizeof(double));
	compute_weights(s);
	return s;
nomem:
	errbuf_set(err, errlen, "out of memory for %u beams x %u channels", p->count,
		   array_channels(a));
fail:
	beam_set_destroy(s);
	return NULL;
}

void beam_set_destroy(struct beam_set *s)
{
	if (!s)
		return;
	free(s->pos);
	free(s->cal);
	free(s->taper);
	free(s->uv0);
	free(s->uv);
	free(s->wd);
	free(s->wf);
	free(s);
}

int beam_set_point(struct beam_set *s, double az_deg, double el_deg, char *err, size_t errlen)
{
	char what[96];
	double du, dv;

	if (!(fabs(az_deg) <= 90.0) || !(fabs(el_deg) <= 90.0)) {
		errbuf_set(err, errlen, "pointing az %g, el %g: each must be within -90..90 degrees",
			   az_deg, el_deg);
		return -EDOM;
	}
	beam_uv_of(az_deg, el_deg, &du, &dv);
	snprintf(what, sizeof(what), "pointing az %g, el %g: ", az_deg, el_deg);
	if (check_visible(s, du, dv, what, err, errlen) < 0)
		return -EDOM;
	for (unsigned b = 0; b < s->B; b++) {
		s->uv[2 * b] = s->uv0[2 * b] + du;
		s->uv[2 * b + 1] = s->uv0[2 * b + 1] + dv;
	}
	compute_weights(s);
	return 0;
}

unsigned beam_count(const struct beam_set *s) { return s->B; }
unsigned beam_channels(const struct beam_set *s) { return s->C; }
const struct array *beam_array(const struct beam_set *s) { return s->a; }
double beam_wavelength_m(const struct beam_set *s) { return s->lambda_m; }
enum beam_layout beam_layout_of(const struct beam_set *s) { return s->layout; }
const float *beam_weights(const struct beam_set *s) { return s->wf; }
const double *beam_weights_d(const struct beam_set *s) { return s->wd; }

void beam_uv_nominal(const struct beam_set *s, unsigned b, double *u, double *v)
{
	*u = s->uv0[2 * b];
	*v = s->uv0[2 * b + 1];
}

const double *beam_taper(const struct beam_set *s) { return s->taper; }

void beam_uv(const struct beam_set *s, unsigned b, double *u, double *v)
{
	*u = s->uv[2 * b];
	*v = s->uv[2 * b + 1];
}

void beam_azel(const struct beam_set *s, unsigned b, double *az_deg, double *el_deg)
{
	/* uv is inside the visible region: beam_set_point checked it. */
	(void)beam_azel_of(s->uv[2 * b], s->uv[2 * b + 1], az_deg, el_deg);
}

/*
 * Up to 4 beams over one column block: each input value is loaded once
 * for 4 beams, and the 4 output rows (4 x BEAM_FORM_COLS complex, 8 KiB)
 * stay in L1 while the C input rows of the block (C x 2 KiB) stream from
 * L2 once per 4 beams. Two complex values per 16-byte vector (GCC/clang
 * vector extensions: SSE2 on any x86-64, NEON on arm64, wider where the
 * build allows): w x = wr [xr xi] + wi [-xi xr], the swap one shuffle.
 */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f swap_pairs(v4f x)
{
#if defined(__clang__)
	return __builtin_shufflevector(x, x, 1, 0, 3, 2);
#else
	return __builtin_shuffle(x, (__attribute__((vector_size(16))) int){ 1, 0, 3, 2 });
#endif
}

static void form_block(const float *W, unsigned nb, unsigned C, const float *X, size_t ld_x,
		       float *Y, size_t ld_y, size_t n0, size_t n)
{
	v4f acc[4][BEAM_FORM_COLS / 2];
	size_t nv = n / 2;

	memset(acc, 0, sizeof(acc));
	for (unsigned c = 0; c < C; c++) {
		const float *x = X + 2 * (c * ld_x + n0);
		v4f wr[4], wi[4];

		for (unsigned j = 0; j < 4; j++) {
			float r = j < nb ? W[2 * ((size_t)j * C + c)] : 0.0f;
			float i = j < nb ? W[2 * ((size_t)j * C + c) + 1] : 0.0f;

			wr[j] = (v4f){ r, r, r, r };
			wi[j] = (v4f){ -i, i, -i, i };
		}
		for (size_t k = 0; k < nv; k++) {
			v4f xv, xs;

			memcpy(&xv, x + 4 * k, sizeof(xv));
			xs = swap_pairs(xv);
			for (unsigned j = 0; j < 4; j++)
				acc[j][k] += wr[j] * xv + wi[j] * xs;
		}
		if (n & 1) {   /* the odd last column: lanes 0 and 1 of acc[j][nv] */
			v4f xv = { x[4 * nv], x[4 * nv + 1], 0.0f, 0.0f };
			v4f xs = swap_pairs(xv);

			for (unsigned j = 0; j < 4; j++)
				acc[j][nv] += wr[j] * xv + wi[j] * xs;
		}
	}
	for (unsigned j = 0; j < nb; j++)
		memcpy(Y + 2 * (j * ld_y + n0), acc[j], 2 * n * sizeof(float));
}

void beam_form(const float *W, unsigned B, unsigned C, const float *X, size_t ld_x, float *Y,
	       size_t ld_y, size_t col0, size_t col1)
{
	for (size_t n0 = col0; n0 < col1; n0 += BEAM_FORM_COLS) {
		size_t n = col1 - n0 < BEAM_FORM_COLS ? col1 - n0 : BEAM_FORM_COLS;

		for (unsigned b = 0; b < B; b += 4) {
			unsigned nb = B - b < 4 ? B - b : 4;

			form_block(W + 2 * (size_t)b * C, nb, C, X, ld_x, Y + 2 * (size_t)b * ld_y, ld_y,
				   n0, n);
		}
	}
}
