/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mvdr.c — MVDR / SMI weights with diagonal loading (mvdr.h).
 */
#include <complex.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "mvdr.h"

struct mvdr {
	unsigned C, P, R, B;
	struct mvdr_params p;
	double complex *cov;         /* C x C: R                              */
	double complex *chol;        /* C x C: L, lower triangle              */
	double complex *v, *z;       /* C: steering, the solve's vector       */
	double *resp;                /* 2 C: beam_response's output           */
};

void mvdr_params_init(struct mvdr_params *p)
{
	memset(p, 0, sizeof(*p));
	p->snapshots = 1;
	p->gate_stride = 1;
	p->pulse_stride = 1;
	p->loading = 0.01;
}

/* Cells the training rule reaches in a CPI of P x R. */
static unsigned long long rule_cells(const struct mvdr_params *p, unsigned P, unsigned R)
{
	unsigned long long np = (P + p->pulse_stride - 1ull) / p->pulse_stride;
	unsigned long long nr = (R - p->first_gate + p->gate_stride - 1ull) / p->gate_stride;

	return np * nr;
}

static int check(unsigned C, unsigned P, unsigned R, unsigned B, const struct mvdr_params *p,
		 char *err, size_t errlen)
{
	if (C < 1 || C > MVDR_MAX_CHANNELS) {
		errbuf_set(err, errlen, "mvdr: channels %u: must be 1..%u", C, MVDR_MAX_CHANNELS);
		return -EINVAL;
	}
	if (P < 1 || R < 1 || B < 1 || B > BEAM_MAX) {
		errbuf_set(err, errlen, "mvdr: pulses %u, samples %u, beams %u: each must be >= 1 (beams <= %u)",
			   P, R, B, BEAM_MAX);
		return -EINVAL;
	}
	if (p->gate_stride < 1 || p->pulse_stride < 1) {
		errbuf_set(err, errlen, "mvdr: gate_stride %u, pulse_stride %u: must be >= 1",
			   p->gate_stride, p->pulse_stride);
		return -EINVAL;
	}
	if (p->first_gate >= R) {
		errbuf_set(err, errlen, "mvdr: first_gate %u: must be below the %u range samples",
			   p->first_gate, R);
		return -EINVAL;
	}
	if (!(p->loading >= 0.0 && p->loading <= 1e3)) {
		errbuf_set(err, errlen, "mvdr: loading %g: must be 0..1000 (x tr(R) / C)", p->loading);
		return -EINVAL;
	}
	if (p->snapshots < 1 || p->snapshots > rule_cells(p, P, R)) {
		errbuf_set(err, errlen, "mvdr: snapshots %u: the rule reaches %llu cells of the CPI",
			   p->snapshots, rule_cells(p, P, R));
		return -EINVAL;
	}
	if (p->loading == 0.0 && p->snapshots < C) {
		errbuf_set(err, errlen,
			   "mvdr: snapshots %u < %u channels without loading: the covariance is singular",
			   p->snapshots, C);
		return -EINVAL;
	}
	return 0;
}

struct mvdr *mvdr_create(unsigned channels, unsigned pulses, unsigned samples, unsigned beams,
			 const struct mvdr_params *p, char *err, size_t errlen)
{
	struct mvdr *m;
	size_t C = channels;

	if (check(channels, pulses, samples, beams, p, err, errlen) < 0)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (m) {
		m->cov = calloc(C * C, sizeof(*m->cov));
		m->chol = calloc(C * C, sizeof(*m->chol));
		m->v = calloc(C, sizeof(*m->v));
		m->z = calloc(C, sizeof(*m->z));
		m->resp = calloc(2 * C, sizeof(*m->resp));
	}
	if (!m || !m->cov || !m->chol || !m->v || !m->z || !m->resp) {
		mvdr_destroy(m);
		errbuf_set(err, errlen, "mvdr: out of memory");
		return NULL;
	}
	m->C = channels;
	m->P = pulses;
	m->R = samples;
	m->B = beams;
	m->p = *p;
	return m;
}

void mvdr_destroy(struct mvdr *m)
{
	if (!m)
		return;
	free(m->cov);
	free(m->chol);
	free(m->v);
	free(m->z);
	free(m->resp);
	free(m);
}

/* Upper triangle summed over the K cells, then mirrored: R is Hermitian. */
void mvdr_covariance(struct mvdr *m, const float *X)
{
	size_t C = m->C, plane = (size_t)m->P * m->R;
	unsigned k = 0;

	memset(m->cov, 0, C * C * sizeof(*m->cov));
	for (unsigned p = 0; p < m->P && k < m->p.snapshots; p += m->p.pulse_stride) {
		for (unsigned r = m->p.first_gate; r < m->R && k < m->p.snapshots;
		     r += m->p.gate_stride, k++) {
			size_t cell = (size_t)p * m->R + r;

			for (size_t i = 0; i < C; i++) {
				const float *xi = X + 2 * (i * plane + cell);
				double complex a = xi[0] + I * (double)xi[1];

				for (size_t j = i; j < C; j++) {
					const float *xj = X + 2 * (j * plane + cell);

					m->cov[i * C + j] += a * (xj[0] - I * (double)xj[1]);
				}
			}
		}
	}
	for (size_t i = 0; i < C; i++) {
		for (size_t j = i; j < C; j++) {
			m->cov[i * C + j] /= m->p.snapshots;
			m->cov[j * C + i] = conj(m->cov[i * C + j]);
		}
	}
}

const double *mvdr_covariance_d(const struct mvdr *m)
{
	return (const double *)m->cov;
}

/* R_l = L L^H, L lower triangular with a real positive diagonal. -EDOM
 * when a pivot is not positive (or NaN). */
static int cholesky(struct mvdr *m)
{
	size_t C = m->C;
	double tr = 0.0, load;

	for (size_t i = 0; i < C; i++)
		tr += creal(m->cov[i * C + i]);
	load = m->p.loading * tr / C;
	for (size_t j = 0; j < C; j++) {
		double complex *Lj = m->chol + j * C;
		double d = creal(m->cov[j * C + j]) + load;

		for (size_t k = 0; k < j; k++)
			d -= creal(Lj[k] * conj(Lj[k]));
		if (!(d > 0.0) || !isfinite(d))
			return -EDOM;
		d = sqrt(d);
		Lj[j] = d;
		for (size_t i = j + 1; i < C; i++) {
			double complex *Li = m->chol + i * C, s = m->cov[i * C + j];

			for (size_t k = 0; k < j; k++)
				s -= Li[k] * conj(Lj[k]);
			Li[j] = s / d;
		}
	}
	return 0;
}

/* z = R_l^-1 v by L y = v, L^H z = y (in place in m->z). */
static void solve(struct mvdr *m)
{
	size_t C = m->C;

	for (size_t i = 0; i < C; i++) {
		double complex s = m->v[i];

		for (size_t k = 0; k < i; k++)
			s -= m->chol[i * C + k] * m->z[k];
		m->z[i] = s / creal(m->chol[i * C + i]);
	}
	for (size_t i = C; i-- > 0;) {
		double complex s = m->z[i];

		for (size_t k = i + 1; k < C; k++)
			s -= conj(m->chol[k * C + i]) * m->z[k];
		m->z[i] = s / creal(m->chol[i * C + i]);
	}
}

int mvdr_solve(struct mvdr *m, const struct beam_set *s, float *wf, double *wd)
{
	size_t C = m->C;

	if (beam_channels(s) != m->C || beam_count(s) != m->B || cholesky(m) < 0)
		return -EDOM;
	/* Validate every beam before writing any: all or nothing. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned b = 0; b < m->B; b++) {
			double u, v, vrv;
			double complex q = 0.0;

			beam_uv(s, b, &u, &v);
			beam_response(s, u, v, m->resp);
			for (size_t c = 0; c < C; c++)
				m->v[c] = m->resp[2 * c] + I * m->resp[2 * c + 1];
			solve(m);
			for (size_t c = 0; c < C; c++)
				q += conj(m->v[c]) * m->z[c];
			vrv = creal(q);    /* v^H R_l^-1 v: real, > 0 */
			if (!(vrv > 0.0) || !isfinite(vrv))
				return -EDOM;
			if (pass == 0)
				continue;
			for (size_t c = 0; c < C; c++) {
				double complex w = conj(m->z[c]) / vrv;
				size_t o = 2 * ((size_t)b * C + c);

				wf[o] = (float)creal(w);
				wf[o + 1] = (float)cimag(w);
				if (wd) {
					wd[o] = creal(w);
					wd[o + 1] = cimag(w);
				}
			}
		}
	}
	return 0;
}
