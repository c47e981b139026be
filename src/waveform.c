/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waveform.c — reference waveforms and windows (see waveform.h).
 *
 * Everything is computed in double precision and rounded to float once, at
 * the end, so the reference handed to pc_create() is as exact as cf32 allows.
 * Runs at setup/reload only; allocation is fine here.
 */
#include "waveform.h"
#include "errbuf.h"
#include "names.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

void wf_params_init(struct wf_params *p)
{
	memset(p, 0, sizeof(*p));
	p->type = WF_LFM;
	p->sample_rate_hz = 25e6;
	p->bandwidth_hz = 10e6;
	p->pulse_width_s = 20e-6;
	p->chip_samples = 1;
	p->file = NULL;
	p->window = WIN_RECT;
	p->taylor_nbar = 4;
	p->taylor_sll_db = 35.0;
}

/* The names are names.c's, the one table config reads them from too. */
const char *wf_type_name(enum wf_type t)
{
	return names_of(names_wf_type, t);
}

const char *wf_window_name(enum wf_window w)
{
	return names_of(names_window, w);
}

int wf_type_parse(const char *s, enum wf_type *t)
{
	int v;

	if (!s || !t || names_value_nocase(names_wf_type, s, &v) < 0)
		return -EINVAL;
	*t = (enum wf_type)v;
	return 0;
}

int wf_window_parse(const char *s, enum wf_window *w)
{
	int v;

	if (!s || !w || names_value_nocase(names_window, s, &v) < 0)
		return -EINVAL;
	*w = (enum wf_window)v;
	return 0;
}

/*
 * Taylor window as scipy.signal.windows.taylor(n, nbar, sll_db, norm=True,
 * sym=True): the standard Taylor distribution with nbar nearly constant-level
 * sidelobes adjacent to the main lobe at -sll_db dB, scaled so the value at
 * the centre (the maximum) is 1.
 */
static int taylor_fill(unsigned nbar, double sll_db, double *w, size_t n)
{
	double B, A, A2, s2, *Fm = NULL;
	int rc = -EINVAL;

	if (nbar < 1 || !(sll_db > 0.0) || !isfinite(sll_db))
		goto out;
	Fm = calloc(nbar, sizeof(*Fm));
	if (!Fm) {
		rc = -ENOMEM;
		goto out;
	}
	B = pow(10.0, sll_db / 20.0);
	A = acosh(B) / M_PI;
	A2 = A * A;
	s2 = (double)nbar * nbar / (A2 + (nbar - 0.5) * (nbar - 0.5));
	for (unsigned m = 1; m < nbar; m++) {
		double m2 = (double)m * m, numer = 1.0, denom = 1.0;

		for (unsigned i = 1; i < nbar; i++) {
			numer *= 1.0 - m2 / s2 / (A2 + (i - 0.5) * (i - 0.5));
			if (i != m)
				denom *= 1.0 - m2 / ((double)i * i);
		}
		Fm[m] = ((m % 2) ? 1.0 : -1.0) * numer / (2.0 * denom);
	}

	/* W(x) = 1 + 2 sum_m Fm cos(2 pi m (x - n/2 + 1/2) / n) */
	double scale = 1.0;
	for (int pass = 0; pass < 2; pass++) {
		size_t count = pass == 0 ? 1 : n;
		for (size_t k = 0; k < count; k++) {
			double x = pass == 0 ? (n - 1) / 2.0 : (double)k;
			double v = 1.0;

			for (unsigned m = 1; m < nbar; m++)
				v += 2.0 * Fm[m] *
				     cos(2.0 * M_PI * m * (x - n / 2.0 + 0.5) / n);
			if (pass == 0)
				scale = 1.0 / v;
			else
				w[k] = v * scale;
		}
	}
	rc = 0;
out:
	free(Fm);
	return rc;
}

int wf_window_fill(enum wf_window win, unsigned nbar, double sll_db,
		   double *w, size_t n)
{
	if (!w || n == 0)
		return -EINVAL;
	if (win == WIN_TAYLOR)
		return taylor_fill(nbar, sll_db, w, n);
	if (n == 1) {
		if ((unsigned)win > WIN_TAYLOR)
			return -EINVAL;
		w[0] = 1.0;
		return 0;
	}
	/* Symmetric forms: the phase runs over [0, 2 pi] across n samples. */
	for (size_t k = 0; k < n; k++) {
		double ph = 2.0 * M_PI * (double)k / (double)(n - 1);

		switch (win) {
		case WIN_RECT:
			w[k] = 1.0;
			break;
		case WIN_HAMMING:
			w[k] = 0.54 - 0.46 * cos(ph);
			break;
		case WIN_HANN:
			w[k] = 0.5 - 0.5 * cos(ph);
			break;
		case WIN_BLACKMAN:
			w[k] = 0.42 - 0.5 * cos(ph) + 0.08 * cos(2.0 * ph);
			if (w[k] < 0.0)   /* -1.4e-17 at the ends: rounding */
				w[k] = 0.0;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Read a cf32_le reference from path. max_len bounds L (= R). Returns 0 with
 * *out (2*L doubles) or a negative errno with the reason.
 */
/* The open file's sample count in *n: a non-empty regular file of whole
 * cf32_le samples, at most max_len of them. */
static int cf32_file_samples(int fd, const char *path, unsigned max_len, size_t *n,
			     char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "waveform file %s: fstat: %s", path, strerror(errno));
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		errbuf_set(err, errlen, "waveform file %s: not a regular file", path);
		return -EINVAL;
	}
	if (st.st_size == 0) {
		errbuf_set(err, errlen, "waveform file %s: empty (need cf32_le samples, 8 bytes each)", path);
		return -EINVAL;
	}
	if (st.st_size % 8 != 0) {
		errbuf_set(err, errlen,
			   "waveform file %s: size %lld bytes is not a multiple of 8 (cf32_le: 8 bytes per sample)",
			   path, (long long)st.st_size);
		return -EINVAL;
	}
	if ((unsigned long long)st.st_size / 8 > max_len) {
		errbuf_set(err, errlen,
			   "pulse length L=%lld samples (waveform file %s) exceeds range samples R=%u",
			   (long long)st.st_size / 8, path, max_len);
		return -EINVAL;
	}
	*n = (size_t)st.st_size / 8;
	return 0;
}

/* Read exactly nbytes into buf; a file that ends early changed under us. */
static int cf32_read_all(int fd, const char *path, void *buf, size_t nbytes,
			 char *err, size_t errlen)
{
	size_t got = 0;
	int rc;

	while (got < nbytes) {
		ssize_t r = read(fd, (char *)buf + got, nbytes - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			errbuf_set(err, errlen, "waveform file %s: read: %s", path, strerror(errno));
			return rc;
		}
		if (r == 0) {
			errbuf_set(err, errlen, "waveform file %s: short read (%zu of %zu bytes; file changed?)",
				   path, got, nbytes);
			return -EIO;
		}
		got += (size_t)r;
	}
	return 0;
}

/* 2*n little-endian floats in raw to doubles in d; every one finite. */
static int cf32_decode(const uint32_t *raw, size_t n, double *d, const char *path,
		       char *err, size_t errlen)
{
	for (size_t i = 0; i < 2 * n; i++) {
		uint32_t u = le32toh(raw[i]);
		float f;

		memcpy(&f, &u, sizeof(f));
		if (!isfinite(f)) {
			errbuf_set(err, errlen, "waveform file %s: sample %zu is not finite", path, i / 2);
			return -EINVAL;
		}
		d[i] = f;
	}
	return 0;
}

static int read_cf32_file(const char *path, unsigned max_len, double **out,
			  size_t *len, char *err, size_t errlen)
{
	uint32_t *raw = NULL;
	double *d = NULL;
	size_t n = 0;
	int fd = -1, rc;

	if (!path || !*path) {
		errbuf_set(err, errlen, "waveform type file needs a file path");
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "waveform file %s: cannot open: %s", path, strerror(errno));
		goto out;
	}
	rc = cf32_file_samples(fd, path, max_len, &n, err, errlen);
	if (rc < 0)
		goto out;
	raw = malloc(n * 8);
	d = malloc(2 * n * sizeof(*d));
	if (!raw || !d) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "waveform file %s: out of memory for %zu samples", path, n);
		goto out;
	}
	rc = cf32_read_all(fd, path, raw, n * 8, err, errlen);
	if (rc < 0)
		goto out;
	rc = cf32_decode(raw, n, d, path, err, errlen);
	if (rc < 0)
		goto out;
	*out = d;
	*len = n;
	d = NULL;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(raw);
	free(d);
	return rc;
}

/* The one out-of-memory message of wf_build, naming the reference size. */
static int wf_nomem(size_t L, char *err, size_t errlen)
{
	errbuf_set(err, errlen, "out of memory building a %zu-sample reference", L);
	return -ENOMEM;
}

/* The argument and window checks that need no samples; -EINVAL with the
 * reason in err, 0 when the parameters can be built. */
static int wf_check_args(const struct wf_params *p, unsigned range_samples,
			 float **ref, size_t *len, char *err, size_t errlen)
{
	if (!p || !ref || !len) {
		errbuf_set(err, errlen, "wf_build: missing argument");
		return -EINVAL;
	}
	if (range_samples < 1) {
		errbuf_set(err, errlen, "range samples R=0: need at least 1");
		return -EINVAL;
	}
	if ((unsigned)p->window > WIN_TAYLOR) {
		errbuf_set(err, errlen, "window: unknown window %d", (int)p->window);
		return -EINVAL;
	}
	if (p->window == WIN_TAYLOR) {
		if (p->taylor_nbar < 1) {
			errbuf_set(err, errlen, "taylor_nbar %u: must be at least 1", p->taylor_nbar);
			return -EINVAL;
		}
		if (!(p->taylor_sll_db > 0.0) || !isfinite(p->taylor_sll_db)) {
			errbuf_set(err, errlen, "taylor_sll_db %g: must be a positive number of dB", p->taylor_sll_db);
			return -EINVAL;
		}
	}
	return 0;
}

/* The LFM pulse, interleaved complex doubles in *s (caller frees), *L samples.
 * -EINVAL or -ENOMEM with the reason in err. */
static int wf_pulse_lfm(const struct wf_params *p, unsigned range_samples,
			double **s, size_t *L, char *err, size_t errlen)
{
	double fs = p->sample_rate_hz, B = p->bandwidth_hz, tau = p->pulse_width_s, Ld;
	double *v;

	if (!(fs > 0.0) || !isfinite(fs)) {
		errbuf_set(err, errlen, "sample_rate_hz %g: must be positive", fs);
		return -EINVAL;
	}
	if (!(B > 0.0) || !isfinite(B)) {
		errbuf_set(err, errlen, "bandwidth_hz %g: must be positive", B);
		return -EINVAL;
	}
	if (B > fs) {
		errbuf_set(err, errlen, "bandwidth_hz %g exceeds sample_rate_hz %g", B, fs);
		return -EINVAL;
	}
	if (!(tau > 0.0) || !isfinite(tau)) {
		errbuf_set(err, errlen, "pulse_width_s %g: must be positive", tau);
		return -EINVAL;
	}
	Ld = (double)wf_pulse_len(p);
	if (Ld < 1.0) {
		errbuf_set(err, errlen,
			   "pulse length L=0 samples (pulse_width_s*sample_rate_hz = %g): need at least 1",
			   tau * fs);
		return -EINVAL;
	}
	if (Ld > (double)range_samples) {
		errbuf_set(err, errlen,
			   "pulse length L=%.0f samples (pulse_width_s*sample_rate_hz) exceeds range samples R=%u",
			   Ld, range_samples);
		return -EINVAL;
	}
	*L = (size_t)Ld;
	v = malloc(2 * *L * sizeof(*v));
	if (!v)
		return wf_nomem(*L, err, errlen);
	/* s[k] = exp(j pi (B/tau) t_k^2), t_k = k/fs - tau/2 */
	for (size_t k = 0; k < *L; k++) {
		double t = (double)k / fs - tau / 2.0;
		double ph = M_PI * (B / tau) * t * t;

		v[2 * k] = cos(ph);
		v[2 * k + 1] = sin(ph);
	}
	*s = v;
	return 0;
}

unsigned long long wf_pulse_len(const struct wf_params *p)
{
	double n;

	switch (p->type) {
	case WF_LFM:
		n = p->pulse_width_s * p->sample_rate_hz;
		return isfinite(n) && n >= 0.5 ? (unsigned long long)llround(n) : 0;
	case WF_BARKER13:
		return 13ull * p->chip_samples;
	case WF_FILE:
		break;
	}
	return 0;
}

/* The Barker-13 pulse, chip_samples samples per chip; same contract as
 * wf_pulse_lfm. */
static int wf_pulse_barker13(const struct wf_params *p, unsigned range_samples,
			     double **s, size_t *L, char *err, size_t errlen)
{
	static const int chips[13] = { 1, 1, 1, 1, 1, -1, -1, 1, 1, -1, 1, -1, 1 };
	unsigned cs = p->chip_samples;
	double *v;

	if (cs < 1) {
		errbuf_set(err, errlen, "chip_samples 0: must be at least 1");
		return -EINVAL;
	}
	if (wf_pulse_len(p) > range_samples) {
		errbuf_set(err, errlen,
			   "pulse length L=%llu samples (13*chip_samples) exceeds range samples R=%u",
			   wf_pulse_len(p), range_samples);
		return -EINVAL;
	}
	*L = (size_t)wf_pulse_len(p);
	v = malloc(2 * *L * sizeof(*v));
	if (!v)
		return wf_nomem(*L, err, errlen);
	for (size_t k = 0; k < *L; k++) {
		v[2 * k] = chips[k / cs];
		v[2 * k + 1] = 0.0;
	}
	*s = v;
	return 0;
}

/* The unwindowed pulse of p->type; same contract as wf_pulse_lfm. */
static int wf_pulse(const struct wf_params *p, unsigned range_samples,
		    double **s, size_t *L, char *err, size_t errlen)
{
	switch (p->type) {
	case WF_LFM:
		return wf_pulse_lfm(p, range_samples, s, L, err, errlen);
	case WF_BARKER13:
		return wf_pulse_barker13(p, range_samples, s, L, err, errlen);
	case WF_FILE:
		return read_cf32_file(p->file, range_samples, s, L, err, errlen);
	default:
		errbuf_set(err, errlen, "waveform type %d: unknown", (int)p->type);
		return -EINVAL;
	}
}

/* h = window * s as interleaved complex floats in *out (caller frees).
 * A reference with no energy is refused: it would correlate to zeros.
 * < 0 with the reason in err. */
static int wf_apply_window(const struct wf_params *p, const double *s, size_t L,
			   float **out, char *err, size_t errlen)
{
	double *w = malloc(L * sizeof(*w)), energy = 0.0;
	float *h = malloc(2 * L * sizeof(*h));
	int rc;

	if (!w || !h) {
		rc = wf_nomem(L, err, errlen);
		goto out;
	}
	rc = wf_window_fill(p->window, p->taylor_nbar, p->taylor_sll_db, w, L);
	if (rc < 0) {
		errbuf_set(err, errlen, "window %s: cannot build for L=%zu", wf_window_name(p->window), L);
		goto out;
	}
	for (size_t k = 0; k < L; k++) {
		h[2 * k] = (float)(w[k] * s[2 * k]);
		h[2 * k + 1] = (float)(w[k] * s[2 * k + 1]);
		energy += (double)h[2 * k] * h[2 * k] + (double)h[2 * k + 1] * h[2 * k + 1];
	}
	if (!(energy > 0.0)) {
		rc = -EINVAL;
		errbuf_set(err, errlen, "reference waveform is all zeros (after the %s window): nothing to correlate with",
			   wf_window_name(p->window));
		goto out;
	}
	*out = h;
	h = NULL;
	rc = 0;
out:
	free(w);
	free(h);
	return rc;
}

int wf_build(const struct wf_params *p, unsigned range_samples,
	     float **ref, size_t *len, char *err, size_t errlen)
{
	double *s = NULL;
	float *h = NULL;
	size_t L = 0;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	rc = wf_check_args(p, range_samples, ref, len, err, errlen);
	if (rc < 0)
		return rc;
	rc = wf_pulse(p, range_samples, &s, &L, err, errlen);
	if (rc == 0)
		rc = wf_apply_window(p, s, L, &h, err, errlen);
	free(s);
	if (rc < 0)
		return rc;
	*ref = h;
	*len = L;
	return 0;
}
