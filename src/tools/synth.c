/* SPDX-License-Identifier: Apache-2.0 */
/* synth.c — deterministic synthetic echoes; the model is in synth.h. */
#include "synth.h"
#include "errbuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "config.h"
#include "waveform.h"

/* One mode's transmitted pulse, normalised to peak 1. */
struct synth_wave {
	unsigned id;
	size_t L;
	double *s;                     /* 2*L                                 */
};

struct synth {
	unsigned C, P, R;
	enum pc_format format;
	struct synth_wave w[SYNTH_MAX_MODES];
	size_t nw;
	struct synth_target t[SYNTH_MAX_TARGETS];
	double amp[SYNTH_MAX_TARGETS]; /* linear amplitudes                   */
	size_t nt;
	double noise_sigma;            /* sqrt(noise_power)                   */
	uint64_t seed;
	double *row;                   /* 2*R scratch, one range line         */
	uint64_t clipped;
	/* directions (ANGLES in synth.h): per target then per jammer, C
	 * complex gains g_c a_c each; NULL when nothing has a direction */
	double *steer;                 /* 2*C*(nt + nj)                        */
	struct synth_jammer j[SYNTH_MAX_JAMMERS];
	double jamp[SYNTH_MAX_JAMMERS];   /* linear amplitude (cw) or sigma    */
	size_t nj;
	double *jrow;                  /* 2*R scratch: a jammer's line         */
};

void synth_params_init(struct synth_params *p)
{
	memset(p, 0, sizeof(*p));
	p->format = PC_FMT_CF32;
}

/* A strict double from s up to (not past) the end or a ','; *end after it. */
static int parse_field(const char *s, const char **end, double *v)
{
	char *e;

	errno = 0;
	*v = strtod(s, &e);
	if (errno || e == s || (*e && *e != ',') || !isfinite(*v))
		return -EINVAL;
	*end = e;
	return 0;
}

/*
 * The DOPPLER field: a number of Hz ("800", "800Hz"; *per_pulse = 0) or of
 * cycles per pulse ("0.125/pulse"; *per_pulse = 1), to the end of s.
 */
static int parse_doppler(const char *s, double *v, int *per_pulse)
{
	char *e;

	errno = 0;
	*v = strtod(s, &e);
	if (errno || e == s || !isfinite(*v))
		return -EINVAL;
	*per_pulse = strcmp(e, "/pulse") == 0;
	return *per_pulse || !*e || strcmp(e, "Hz") == 0 ? 0 : -EINVAL;
}

/*
 * The direction fields of a spec, "az=DEG[,el=DEG]" (el= alone too when
 * allow_el_only), each within +-90. 0 or -EINVAL.
 */
static int parse_direction(const char *s, int allow_el_only, double *az, double *el)
{
	const char *e;
	int have_az = 0, have_el = 0;

	*az = *el = 0;
	while (*s) {
		double *v;

		if (!strncmp(s, "az=", 3) && !have_az && !have_el) {
			v = az;
			have_az = 1;
		} else if (!strncmp(s, "el=", 3) && !have_el && (have_az || allow_el_only)) {
			v = el;
			have_el = 1;
		} else {
			return -EINVAL;
		}
		if (parse_field(s + 3, &e, v) < 0 || fabs(*v) > 90)
			return -EINVAL;
		s = *e ? e + 1 : e;
		if (*e && !*s)
			return -EINVAL;
	}
	return have_az || have_el ? 0 : -EINVAL;
}

/* Split spec at its first ",az=" into buf (the positional fields) and
 * *dir (after the comma; NULL when there is none). 0 or -EINVAL (too long). */
static int split_direction(const char *spec, char *buf, size_t len, const char **dir)
{
	const char *a = strstr(spec, ",az=");
	size_t n = a ? (size_t)(a - spec) : strlen(spec);

	if (n >= len)
		return -EINVAL;
	memcpy(buf, spec, n);
	buf[n] = '\0';
	*dir = a ? a + 1 : NULL;
	return 0;
}

int synth_parse_target(const char *spec, double prf_hz, struct synth_target *t,
		       int *folded, char *err, size_t errlen)
{
	const char *p, *e, *dir = NULL;
	double gate, amp, dop = 0, d, az = 0, el = 0;
	int per_pulse = 0;
	char pos[256];

	*folded = 0;
	if (spec && (split_direction(spec, pos, sizeof(pos), &dir) < 0 ||
		     (dir && parse_direction(dir, 0, &az, &el) < 0))) {
		errbuf_set(err, errlen, "'%s': want ...,az=DEG[,el=DEG] after the other fields, "
			   "each -90..90 degrees from boresight", spec);
		return -EINVAL;
	}
	p = spec ? pos : NULL;
	if (spec && strchr(spec, ':')) {
		errbuf_set(err, errlen, "'%s': fields are separated by commas: want "
			   "GATE,AMP_DB[,DOPPLER_HZ] or GATE,AMP_DB,CYCLES/pulse", spec);
		return -EINVAL;
	}
	if (!spec || parse_field(p, &e, &gate) < 0 || *e != ',' || *p < '0' || *p > '9' ||
	    gate != floor(gate) || gate > 0x7fffffff) {
		errbuf_set(err, errlen, "'%s': want GATE,AMP_DB[,DOPPLER] with GATE a sample index",
			   spec ? spec : "");
		return -EINVAL;
	}
	p = e + 1;
	if (parse_field(p, &e, &amp) < 0 || amp < -300 || amp > 300) {
		errbuf_set(err, errlen, "'%s': AMP_DB is not a number in -300..300", spec);
		return -EINVAL;
	}
	if (*e == ',' && parse_doppler(e + 1, &dop, &per_pulse) < 0) {
		errbuf_set(err, errlen, "'%s': DOPPLER is not a number of Hz (800, 800Hz) or of "
			   "cycles per pulse (0.125/pulse)%s", spec,
			   strchr(e + 1, ',') ? "; a fourth field is not supported" : "");
		return -EINVAL;
	}
	if (per_pulse && fabs(dop) > 0.5) {
		errbuf_set(err, errlen, "'%s': cycles per pulse must be in -0.5..0.5", spec);
		return -EINVAL;
	}
	if (!per_pulse && dop != 0 && !(prf_hz > 0 && isfinite(prf_hz))) {
		errbuf_set(err, errlen, "'%s': a Doppler shift in Hz needs the PRF ([radar] prf_hz "
			   "of the configuration, or --prf HZ); or give CYCLES/pulse", spec);
		return -EINVAL;
	}
	d = per_pulse ? dop : dop != 0 ? dop / prf_hz : 0;
	if (fabs(d) > 0.5) {
		d -= nearbyint(d);      /* alias into [-0.5, 0.5] */
		*folded = 1;
	}
	t->gate = (unsigned)gate;
	t->amp_db = amp;
	t->doppler = d;
	t->has_angle = dir != NULL;
	t->az_deg = az;
	t->el_deg = el;
	return 0;
}

int synth_parse_jammer(const char *spec, struct synth_jammer *j, char *err, size_t errlen)
{
	const char *p = spec, *e;
	double az, pw, f = 0.1, el = 0;

	memset(j, 0, sizeof(*j));
	if (spec && !strncmp(spec, "noise,", 6)) {
		j->kind = SYNTH_JAM_NOISE;
		p = spec + 6;
	} else if (spec && !strncmp(spec, "cw,", 3)) {
		j->kind = SYNTH_JAM_CW;
		p = spec + 3;
	} else {
		errbuf_set(err, errlen, "'%s': want noise|cw,AZ_DEG,POWER_DB[,el=DEG][,f=CYCLES]",
			   spec ? spec : "");
		return -EINVAL;
	}
	if (parse_field(p, &e, &az) < 0 || fabs(az) > 90 || *e != ',' ||
	    parse_field(e + 1, &e, &pw) < 0 || pw < -300 || pw > 40) {
		errbuf_set(err, errlen, "'%s': AZ_DEG (-90..90) and POWER_DB (dBFS per sample, "
			   "-300..40) must be numbers", spec);
		return -EINVAL;
	}
	while (*e == ',') {
		p = e + 1;
		if (!strncmp(p, "el=", 3) && parse_field(p + 3, &e, &el) == 0 && fabs(el) <= 90)
			continue;
		if (!strncmp(p, "f=", 2) && j->kind == SYNTH_JAM_CW && parse_field(p + 2, &e, &f) == 0 &&
		    fabs(f) <= 0.5)
			continue;
		errbuf_set(err, errlen, "'%s': '%s' is not el=DEG (-90..90)%s", spec, p,
			   j->kind == SYNTH_JAM_CW ? " or f=CYCLES per sample (-0.5..0.5)" : "");
		return -EINVAL;
	}
	j->az_deg = az;
	j->el_deg = el;
	j->power_db = pw;
	j->cycles_per_sample = j->kind == SYNTH_JAM_CW ? f : 0;
	return 0;
}

double synth_noise_power_for_snr(const struct synth_target *t, size_t n, double snr_db)
{
	double amax_db = n ? -INFINITY : 0.0;

	for (size_t i = 0; i < n; i++)
		if (t[i].amp_db > amax_db)
			amax_db = t[i].amp_db;
	return pow(10.0, (amax_db - snr_db) / 10.0);
}

/* Geometry, format, pulse length, target count and noise power. */
static int synth_check_shape(const struct synth_params *p, char *err, size_t errlen)
{
	uint64_t cells;

	if (!p->channels || !p->pulses || !p->samples) {
		errbuf_set(err, errlen, "geometry %ux%ux%u: channels, pulses and samples must be >= 1",
			   p->channels, p->pulses, p->samples);
		return -EINVAL;
	}
	cells = (uint64_t)p->channels * p->pulses * p->samples;
	if (cells > (1ull << 32)) {
		errbuf_set(err, errlen, "geometry %ux%ux%u is too large", p->channels, p->pulses, p->samples);
		return -EINVAL;
	}
	if (p->format != PC_FMT_CF32 && p->format != PC_FMT_SC16) {
		errbuf_set(err, errlen, "format %d: want cf32 or sc16", (int)p->format);
		return -EINVAL;
	}
	if (p->nmodes > SYNTH_MAX_MODES || (p->nmodes && !p->modes)) {
		errbuf_set(err, errlen, "%zu modes: at most %d", p->nmodes, SYNTH_MAX_MODES);
		return -EINVAL;
	}
	if (p->ntargets > SYNTH_MAX_TARGETS || (p->ntargets && !p->targets)) {
		errbuf_set(err, errlen, "%zu targets: at most %d", p->ntargets, SYNTH_MAX_TARGETS);
		return -EINVAL;
	}
	if (!isfinite(p->noise_power) || p->noise_power < 0) {
		errbuf_set(err, errlen, "noise power %g must be finite and >= 0", p->noise_power);
		return -EINVAL;
	}
	if (p->njammers > SYNTH_MAX_JAMMERS || (p->njammers && !p->jammers)) {
		errbuf_set(err, errlen, "%zu jammers: at most %d", p->njammers, SYNTH_MAX_JAMMERS);
		return -EINVAL;
	}
	return 0;
}

/* Whether anything of p has a direction (and so needs the array). */
static int synth_has_directions(const struct synth_params *p)
{
	for (size_t i = 0; i < p->ntargets; i++)
		if (p->targets[i].has_angle)
			return 1;
	return p->njammers > 0;
}

/* (u, v, w) of a direction in degrees; 0, or -EDOM outside the visible
 * region. */
static int synth_uvw(double az_deg, double el_deg, double k[3])
{
	const double d2r = M_PI / 180.0;
	double u = sin(az_deg * d2r) * cos(el_deg * d2r), v = sin(el_deg * d2r);
	double w2 = 1.0 - u * u - v * v;

	if (w2 < 0)
		return -EDOM;
	k[0] = u;
	k[1] = v;
	k[2] = sqrt(w2);
	return 0;
}

/* The C gains g_c a_c of direction (az, el) into g[0..2C). */
static int synth_steer(const struct synth_array *a, unsigned C, double az_deg, double el_deg,
		       double *g)
{
	const double twopi_over_lambda = 2.0 * M_PI * a->carrier_hz / 299792458.0;
	double k[3];

	if (synth_uvw(az_deg, el_deg, k) < 0)
		return -EDOM;
	for (unsigned c = 0; c < C; c++) {
		double xyz[3], cal[2], ph, ar, ai;

		array_position(a->array, c, xyz);
		array_cal(a->array, c, cal);
		ph = twopi_over_lambda * (xyz[0] * k[0] + xyz[1] * k[1] + xyz[2] * k[2]);
		ar = cos(ph);
		ai = sin(ph);
		g[2 * c] = cal[0] * ar - cal[1] * ai;
		g[2 * c + 1] = cal[0] * ai + cal[1] * ar;
	}
	return 0;
}

/* Every target and jammer's gains into s->steer, when one has a direction:
 * the array must be given and have C channels. */
static int synth_set_directions(struct synth *s, const struct synth_params *p, char *err,
				size_t errlen)
{
	const struct synth_array *a = p->array;

	if (!synth_has_directions(p))
		return 0;
	if (!a || !a->array || !(a->carrier_hz > 0) || !isfinite(a->carrier_hz)) {
		errbuf_set(err, errlen, "a target or jammer at an angle needs the receive array "
			   "and the carrier frequency ([radar] carrier_hz)");
		return -EINVAL;
	}
	if (array_channels(a->array) != s->C) {
		errbuf_set(err, errlen, "the array has %u elements, the CPI %u channels",
			   array_channels(a->array), s->C);
		return -EINVAL;
	}
	s->steer = malloc(2 * (size_t)s->C * (s->nt + s->nj) * sizeof(double));
	s->jrow = malloc(2 * (size_t)s->R * sizeof(double));
	if (!s->steer || !s->jrow) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nt + s->nj; i++) {
		double az = i < s->nt ? s->t[i].az_deg : s->j[i - s->nt].az_deg;
		double el = i < s->nt ? s->t[i].el_deg : s->j[i - s->nt].el_deg;
		int dir = i >= s->nt || s->t[i].has_angle;
		double *g = s->steer + 2 * (size_t)s->C * i;

		if (!dir) {
			for (unsigned c = 0; c < s->C; c++) {
				g[2 * c] = 1.0;
				g[2 * c + 1] = 0.0;
			}
		} else if (synth_steer(a, s->C, az, el, g) < 0) {
			errbuf_set(err, errlen, "%s %zu at az %g, el %g: outside the visible region",
				   i < s->nt ? "target" : "jammer", i < s->nt ? i + 1 : i - s->nt + 1,
				   az, el);
			return -EDOM;
		}
	}
	return 0;
}

/* A pulse's peak magnitude in *peak: 1 <= L <= R, finite samples, not all
 * zeros. */
static int synth_pulse_peak(const struct synth_mode *m, unsigned R, double *peak,
			    char *err, size_t errlen)
{
	*peak = 0;
	if (!m->pulse || m->pulse_len < 1 || m->pulse_len > R) {
		errbuf_set(err, errlen, "mode %u: pulse length L=%zu must be 1..R=%u", m->id,
			   m->pulse_len, R);
		return -EINVAL;
	}
	for (size_t i = 0; i < m->pulse_len; i++) {
		double re = m->pulse[2 * i], im = m->pulse[2 * i + 1];
		double a = sqrt(re * re + im * im);

		if (!isfinite(a)) {
			errbuf_set(err, errlen, "mode %u: pulse sample %zu is not finite", m->id, i);
			return -EINVAL;
		}
		if (a > *peak)
			*peak = a;
	}
	if (*peak <= 0) {
		errbuf_set(err, errlen, "mode %u: pulse is all zeros", m->id);
		return -EINVAL;
	}
	return 0;
}

/* Copy mode m's pulse into wave w, scaled to peak 1; ids distinct. */
static int synth_add_wave(struct synth *s, const struct synth_mode *m, char *err, size_t errlen)
{
	struct synth_wave *w = &s->w[s->nw];
	double peak;

	if (synth_pulse_peak(m, s->R, &peak, err, errlen) < 0)
		return -EINVAL;
	if (synth_has_mode(s, m->id)) {
		errbuf_set(err, errlen, "mode %u is given twice", m->id);
		return -EINVAL;
	}
	w->s = malloc(2 * m->pulse_len * sizeof(double));
	if (!w->s) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->id = m->id;
	w->L = m->pulse_len;
	for (size_t i = 0; i < 2 * w->L; i++)
		w->s[i] = m->pulse[i] / peak;
	s->nw++;
	return 0;
}

/* Each target inside the range line with a finite amplitude and a Doppler
 * in [-0.5, 0.5] cycles per pulse; for sc16, no overlap that could clip. */
static int synth_check_targets(const struct synth_params *p, char *err, size_t errlen)
{
	double sum = 0;

	for (size_t i = 0; i < p->ntargets; i++) {
		const struct synth_target *t = &p->targets[i];

		if (t->gate >= p->samples) {
			errbuf_set(err, errlen, "target %zu gate %u is outside the range line (R=%u)",
				   i + 1, t->gate, p->samples);
			return -EINVAL;
		}
		if (!isfinite(t->amp_db) || !isfinite(t->doppler) ||
		    t->doppler < -0.5 || t->doppler > 0.5) {
			errbuf_set(err, errlen, "target %zu: amplitude or doppler out of range", i + 1);
			return -EINVAL;
		}
		sum += pow(10.0, t->amp_db / 20.0);
	}
	/*
	 * sc16 saturates at full scale. Echoes can only overlap up to the sum
	 * of their amplitudes, so refuse a set that could clip without noise;
	 * noise peaks are rare and are saturated and counted instead.
	 */
	if (p->format == PC_FMT_SC16 && sum > 1.0) {
		errbuf_set(err, errlen, "sc16: targets sum to %+.1f dBFS and would clip; lower AMP_DB",
			   20 * log10(sum));
		return -EINVAL;
	}
	return 0;
}

struct synth *synth_create(const struct synth_params *p, char *err, size_t errlen)
{
	struct synth_mode one = { .id = 0, .pulse = p->pulse, .pulse_len = p->pulse_len };
	const struct synth_mode *modes = p->nmodes ? p->modes : &one;
	size_t nmodes = p->nmodes ? p->nmodes : 1;
	struct synth *s = NULL;

	if (synth_check_shape(p, err, errlen) < 0 || synth_check_targets(p, err, errlen) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	s->C = p->channels;
	s->P = p->pulses;
	s->R = p->samples;
	s->format = p->format;
	s->nt = p->ntargets;
	s->noise_sigma = sqrt(p->noise_power);
	s->seed = p->seed;
	s->row = malloc(2 * (size_t)s->R * sizeof(double));
	if (!s->row) {
		errbuf_set(err, errlen, "out of memory");
		synth_destroy(s);
		return NULL;
	}
	for (size_t i = 0; i < nmodes; i++) {
		if (synth_add_wave(s, &modes[i], err, errlen) < 0) {
			synth_destroy(s);
			return NULL;
		}
	}
	for (size_t i = 0; i < s->nt; i++) {
		s->t[i] = p->targets[i];
		s->amp[i] = pow(10.0, p->targets[i].amp_db / 20.0);
	}
	s->nj = p->njammers;
	for (size_t i = 0; i < s->nj; i++) {
		s->j[i] = p->jammers[i];
		s->jamp[i] = pow(10.0, p->jammers[i].power_db / 20.0);
	}
	if (synth_set_directions(s, p, err, errlen) < 0) {
		synth_destroy(s);
		return NULL;
	}
	return s;
}

void synth_destroy(struct synth *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nw; i++)
		free(s->w[i].s);
	free(s->row);
	free(s->steer);
	free(s->jrow);
	free(s);
}

size_t synth_cpi_bytes(const struct synth *s)
{
	return (size_t)s->C * s->P * s->R * pc_format_sample_bytes(s->format);
}

uint64_t synth_first_sample(const struct synth *s, uint64_t k)
{
	return k * s->P * s->R;
}

int synth_cpi_index(const struct synth *s, uint64_t first_sample, uint64_t *k)
{
	uint64_t pr = (uint64_t)s->P * s->R;

	if (first_sample % pr)
		return -EINVAL;
	*k = first_sample / pr;
	return 0;
}

uint64_t synth_clipped(const struct synth *s)
{
	return s->clipped;
}

/* The wave of mode id, or NULL. A linear search: at most 64 modes. */
static const struct synth_wave *synth_wave_of(const struct synth *s, uint32_t id)
{
	for (size_t i = 0; i < s->nw; i++)
		if (s->w[i].id == id)
			return &s->w[i];
	return NULL;
}

int synth_has_mode(const struct synth *s, uint32_t mode)
{
	return synth_wave_of(s, mode) != NULL;
}

size_t synth_nmodes(const struct synth *s)
{
	return s->nw;
}

unsigned synth_mode_id(const struct synth *s, size_t i)
{
	return i < s->nw ? s->w[i].id : 0;
}

/*
 * splitmix64 (Steele, Lea, Flood 2014): a counter-based generator whose
 * output passes BigCrush; seeding it with a hash of (seed, CPI) gives each
 * CPI an independent stream with no state carried between CPIs.
 */
static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline int16_t to_sc16(double v, uint64_t *clipped)
{
	double q = nearbyint(v * 32768.0);

	if (q > 32767.0) {
		(*clipped)++;
		return 32767;
	}
	if (q < -32768.0) {
		(*clipped)++;
		return -32768;
	}
	return (int16_t)q;
}

/* One range line of complex Gaussian noise of power sigma^2 into x, drawn
 * from the stream st (zeros when sigma is 0). */
static inline void synth_gauss_row(unsigned R, double sigma, uint64_t *st, double *x)
{
	if (sigma > 0) {
		/*
		 * Marsaglia's polar method: (u, v) uniform in the unit
		 * disc, then (u, v) * sqrt(-2 ln q / q), q = u^2 + v^2,
		 * are two independent N(0, 1). One log and one sqrt per
		 * complex sample (no sin/cos): about twice as fast as
		 * Box-Muller, which matters for big CPIs.
		 */
		const float k2 = (float)(sigma * M_SQRT1_2);

		for (unsigned i = 0; i < R; i++) {
			float u, v, q, f;

			do {
				/* u, v from the two 32-bit halves of one draw */
				uint64_t z = splitmix64(st);

				u = (float)(int32_t)(z >> 32) * 0x1.0p-31f;
				v = (float)(int32_t)(uint32_t)z * 0x1.0p-31f;
				q = u * u + v * v;
			} while (q >= 1.0f || q == 0.0f);
			/* single precision is plenty for noise and 2-3x faster */
			f = k2 * sqrtf(-2.0f * logf(q) / q);
			x[2 * i] = u * f;
			x[2 * i + 1] = v * f;
		}
	} else {
		memset(x, 0, 2 * (size_t)R * sizeof(double));
	}
}

static inline void synth_noise_row(const struct synth *s, uint64_t *st, double *x)
{
	synth_gauss_row(s->R, s->noise_sigma, st, x);
}

/* Add every target's echo of pulse n (global index), transmitted with
 * wave w, to channel c's range line x. */
static inline void synth_add_echoes(const struct synth *s, const struct synth_wave *w,
				    unsigned c, uint64_t n, double *x)
{
	const double twopi = 6.283185307179586476925286766559;

	for (size_t t = 0; t < s->nt; t++) {
		double ph = 0, cr = s->amp[t], ci = 0;
		unsigned g = s->t[t].gate;
		size_t m = w->L;

		if (s->t[t].doppler != 0) {
			/* fractional part first keeps precision for large n */
			double f = s->t[t].doppler * (double)(n % (1ull << 40));

			ph = twopi * (f - floor(f));
			cr = s->amp[t] * cos(ph);
			ci = s->amp[t] * sin(ph);
		}
		if (s->t[t].has_angle) {
			const double *gc = s->steer + 2 * ((size_t)s->C * t + c);
			double r = cr * gc[0] - ci * gc[1];

			ci = cr * gc[1] + ci * gc[0];
			cr = r;
		}
		if (g + m > s->R)
			m = s->R - g;
		for (size_t i = 0; i < m; i++) {
			double sr = w->s[2 * i], si = w->s[2 * i + 1];

			x[2 * (g + i)] += cr * sr - ci * si;
			x[2 * (g + i) + 1] += cr * si + ci * sr;
		}
	}
}

/*
 * Add every jammer to channel c's range line x of CPI k's pulse p: the
 * jammer's line is the same for every channel (its own stream, keyed by
 * seed, k, p and the jammer: regenerated per channel rather than kept),
 * times the channel's gain.
 */
static void synth_add_jammers(struct synth *s, uint64_t k, unsigned p, unsigned c, double *x)
{
	const double twopi = 6.283185307179586476925286766559;

	for (size_t j = 0; j < s->nj; j++) {
		const double *gc = s->steer + 2 * ((size_t)s->C * (s->nt + j) + c);
		double *y = s->jrow;

		if (s->j[j].kind == SYNTH_JAM_NOISE) {
			uint64_t st = s->seed ^ 0x2545f4914f6cdd1dull;

			(void)splitmix64(&st);
			st ^= (k * s->P + p) * 0xd1342543de82ef95ull + j * 0x9e3779b97f4a7c15ull;
			(void)splitmix64(&st);
			synth_gauss_row(s->R, s->jamp[j], &st, y);
		} else {
			uint64_t n0 = (k * s->P + p) * (uint64_t)s->R;

			for (unsigned r = 0; r < s->R; r++) {
				double f = s->j[j].cycles_per_sample * (double)((n0 + r) % (1ull << 40));
				double ph = twopi * (f - floor(f));

				y[2 * r] = s->jamp[j] * cos(ph);
				y[2 * r + 1] = s->jamp[j] * sin(ph);
			}
		}
		for (unsigned r = 0; r < s->R; r++) {
			x[2 * r] += y[2 * r] * gc[0] - y[2 * r + 1] * gc[1];
			x[2 * r + 1] += y[2 * r] * gc[1] + y[2 * r + 1] * gc[0];
		}
	}
}

/* Store the range line x as row `row` of out in the CPI's format. */
static inline void synth_store_row(struct synth *s, void *out, size_t row, const double *x)
{
	if (s->format == PC_FMT_CF32) {
		float *o = (float *)out + 2 * row * s->R;

		for (size_t i = 0; i < 2 * (size_t)s->R; i++)
			o[i] = (float)x[i];
	} else {
		int16_t *o = (int16_t *)out + 2 * row * s->R;

		for (size_t i = 0; i < 2 * (size_t)s->R; i++)
			o[i] = to_sc16(x[i], &s->clipped);
	}
}

/* CPI k with wave w into out (checked by the callers). */
static void synth_generate_wave(struct synth *s, const struct synth_wave *w, uint64_t k,
				void *out)
{
	uint64_t st = s->seed ^ 0x5851f42d4c957f2dull;

	/* Key the stream by (seed, k): mix the seed, then the CPI index. */
	(void)splitmix64(&st);
	st ^= k * 0xd1342543de82ef95ull;
	(void)splitmix64(&st);

	for (unsigned c = 0; c < s->C; c++) {
		for (unsigned p = 0; p < s->P; p++) {
			size_t row = (size_t)c * s->P + p;
			uint64_t n = k * s->P + p;       /* global pulse index */

			synth_noise_row(s, &st, s->row);
			synth_add_echoes(s, w, c, n, s->row);
			if (s->nj)
				synth_add_jammers(s, k, p, c, s->row);
			synth_store_row(s, out, row, s->row);
		}
	}
}

int synth_generate(struct synth *s, uint64_t k, void *out, size_t len)
{
	if (!out || len < synth_cpi_bytes(s))
		return -EINVAL;
	synth_generate_wave(s, &s->w[0], k, out);
	return 0;
}

int synth_generate_mode(struct synth *s, uint64_t k, uint32_t mode, void *out, size_t len)
{
	const struct synth_wave *w = synth_wave_of(s, mode);

	if (!w)
		return -ENOENT;
	if (!out || len < synth_cpi_bytes(s))
		return -EINVAL;
	synth_generate_wave(s, w, k, out);
	return 0;
}

/* Mode i of c's transmitted pulse (window rect) into m; *pulse is
 * malloc'd. 0 or -EINVAL with a reason. */
static int synth_config_pulse(const struct chirp_config *c, unsigned i, struct synth_mode *m,
			      float **pulse, char *err, size_t errlen)
{
	const struct cfg_mode *cm = &c->modes[i];
	struct wf_params wf = cm->wf;
	char why[256] = "";
	size_t len = 0;

	/* The echo is the transmitted pulse s, not the windowed reference. */
	wf.window = WIN_RECT;
	wf.file = cm->wf_file[0] ? cm->wf_file : NULL;
	if (wf_build(&wf, c->samples, pulse, &len, why, sizeof(why)) < 0) {
		errbuf_set(err, errlen, "%s: mode %s (%u): waveform: %s",
			   c->path[0] ? c->path : "config", cm->name, cm->id, why);
		return -EINVAL;
	}
	m->id = cm->id;
	m->pulse = *pulse;
	m->pulse_len = len;
	return 0;
}

struct synth *synth_create_from_config(const struct chirp_config *c,
				       const struct synth_target *t, size_t n,
				       double noise_power, uint64_t seed,
				       char *err, size_t errlen)
{
	return synth_create_from_config_array(c, t, n, NULL, 0, NULL, noise_power, seed, err,
					      errlen);
}

struct synth *synth_create_from_config_array(const struct chirp_config *c,
					     const struct synth_target *t, size_t n,
					     const struct synth_jammer *jam, size_t njam,
					     const struct synth_array *array,
					     double noise_power, uint64_t seed,
					     char *err, size_t errlen)
{
	struct synth_mode modes[SYNTH_MAX_MODES];
	float *pulses[SYNTH_MAX_MODES] = { NULL };
	struct synth_params p;
	struct synth *s = NULL;
	unsigned i;

	if (c->nmodes < 1 || c->nmodes > SYNTH_MAX_MODES) {
		errbuf_set(err, errlen, "%s: %u modes (want 1..%d)",
			   c->path[0] ? c->path : "config", c->nmodes, SYNTH_MAX_MODES);
		return NULL;
	}
	for (i = 0; i < c->nmodes; i++)
		if (synth_config_pulse(c, i, &modes[i], &pulses[i], err, errlen) < 0)
			goto out;
	synth_params_init(&p);
	p.channels = c->channels;
	p.pulses = c->pulses;
	p.samples = c->samples;
	p.format = c->format;
	p.modes = modes;
	p.nmodes = c->nmodes;
	p.targets = t;
	p.ntargets = n;
	p.noise_power = noise_power;
	p.seed = seed;
	p.jammers = jam;
	p.njammers = njam;
	p.array = array;
	s = synth_create(&p, err, errlen);
out:
	for (i = 0; i < c->nmodes; i++)
		free(pulses[i]);
	return s;
}
