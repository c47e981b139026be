/* SPDX-License-Identifier: Apache-2.0 */
/* tool.c — helpers for chirp-feed and chirp-tap; see tool.h. */
#include "tool.h"
#include "array.h"
#include "log.h"
#include "synth.h"
#include "timeutil.h"

#include <errno.h>
#include <linux/sock_diag.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_MEMINFO
#define SO_MEMINFO 55
#endif

int tool_bad_arg(const char *opt, const char *val, const char *want)
{
	log_err("%s '%s': %s", opt, val, want);
	return -EINVAL;
}

int tool_parse_u64(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *e;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &e, 10);
	if (errno || *e)
		return -EINVAL;
	*v = x;
	return 0;
}

int tool_parse_double(const char *s, double *v)
{
	char *e;
	double x;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	x = strtod(s, &e);
	if (errno || *e || !isfinite(x))
		return -EINVAL;
	*v = x;
	return 0;
}

int tool_parse_doubles(const char *s, double *v, int max)
{
	int n = 0;

	if (!s)
		return -EINVAL;
	for (;;) {
		char item[64];
		const char *c = strchr(s, ',');
		size_t len = c ? (size_t)(c - s) : strlen(s);

		if (n >= max || len == 0 || len >= sizeof(item))
			return -EINVAL;
		memcpy(item, s, len);
		item[len] = '\0';
		if (tool_parse_double(item, &v[n]) < 0)
			return -EINVAL;
		n++;
		if (!c)
			return n;
		s = c + 1;
	}
}

int tool_parse_geometry(const char *s, unsigned *c, unsigned *p, unsigned *r)
{
	unsigned long v[3];
	const char *q = s;
	char *e;

	for (int i = 0; i < 3; i++) {
		if (*q < '0' || *q > '9')
			return -EINVAL;
		errno = 0;
		v[i] = strtoul(q, &e, 10);
		if (errno || v[i] < 1 || v[i] > (1ul << 24))
			return -EINVAL;
		if (i < 2 && *e != ',' && *e != 'x')
			return -EINVAL;
		if (i == 2 && *e)
			return -EINVAL;
		q = e + 1;
	}
	*c = (unsigned)v[0];
	*p = (unsigned)v[1];
	*r = (unsigned)v[2];
	return 0;
}

static const char *const fmt_names[] = {
	[CHIRP_RING_CF32] = "cf32", [CHIRP_RING_SC16] = "sc16", [CHIRP_RING_RF32] = "rf32",
	[CHIRP_RING_DET] = "det",
};
#define NFMT (sizeof(fmt_names) / sizeof(fmt_names[0]))

int tool_parse_ring_format(const char *s, uint32_t *fmt)
{
	for (uint32_t i = 0; i < NFMT; i++) {
		if (strcmp(s, fmt_names[i]) == 0) {
			*fmt = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *tool_ring_format_name(uint32_t fmt)
{
	return fmt < NFMT ? fmt_names[fmt] : "?";
}

int tool_sleep(double s)
{
	struct timespec ts;

	if (s <= 0)
		return 0;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	return nanosleep(&ts, NULL) < 0 ? -errno : 0;
}

int tool_socket_fill(int fd, double *frac)
{
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	socklen_t len = sizeof(mi);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0)
		return -errno;
	if (len < (SK_MEMINFO_RCVBUF + 1) * sizeof(mi[0]) || !mi[SK_MEMINFO_RCVBUF])
		return -EPROTO;
	*frac = (double)mi[SK_MEMINFO_RMEM_ALLOC] / (double)mi[SK_MEMINFO_RCVBUF];
	return 0;
}

struct chirp_ring *tool_attach_wait(const char *name, enum chirp_ring_role role,
				    const struct chirp_ring_opts *opts, double wait_s, volatile sig_atomic_t *stop,
				    char *err, size_t errlen)
{
	double deadline = mono_s() + wait_s;
	struct chirp_ring *r;

	for (;;) {
		r = chirp_ring_attach(name, role, opts, err, errlen);
		if (r)
			return r;
		if ((stop && *stop) || mono_s() >= deadline)
			return NULL;
		tool_sleep(0.05);
	}
}

static volatile sig_atomic_t *sig_flag;

static void on_signal(int sig)
{
	/* Only set the flag: the main loop does the work. */
	if (sig_flag)
		*sig_flag = sig;
}

int tool_catch_signals(volatile sig_atomic_t *flag)
{
	struct sigaction sa;

	sig_flag = flag;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;   /* no SA_RESTART: sleeps return EINTR */
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void tool_progress_init(struct tool_progress *p, int quiet)
{
	memset(p, 0, sizeof(*p));
	p->on = !quiet && isatty(STDERR_FILENO);
}

void tool_progress(struct tool_progress *p, int force, const char *fmt, ...)
{
	char line[256];
	double now;
	va_list ap;
	int n;

	if (!p->on)
		return;
	now = mono_s();
	if (!force && now - p->last < 0.25)
		return;
	p->last = now;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* \r and erase-to-end-of-line: one line that updates in place. */
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->shown = 1;
}

void tool_progress_end(struct tool_progress *p)
{
	if (p->on && p->shown) {
		fputc('\n', stderr);
		p->shown = 0;
	}
}

int tool_geom_opt(struct tool_geom_opts *o, const char *name, const char *arg,
		  const char *formats_hint)
{
	char opt[32];
	const char *want;
	uint64_t u;

	snprintf(opt, sizeof(opt), "--%s", name);
	if (!strcmp(name, "geometry")) {
		want = "want CHANNELS,PULSES,SAMPLES";
		if (tool_parse_geometry(arg, &o->c, &o->p, &o->r) < 0)
			goto bad;
		o->have_geometry = 1;
	} else if (!strcmp(name, "format")) {
		want = formats_hint;
		if (tool_parse_ring_format(arg, &o->fmt) < 0)
			goto bad;
		o->have_format = 1;
	} else if (!strcmp(name, "slots")) {
		/* ring ABI 2: any count, not only powers of two */
		want = "want a slot count 2..65536 (CHIRP_RING_MAX_SLOTS)";
		if (tool_parse_u64(arg, &u) < 0 || u < 2 || u > CHIRP_RING_MAX_SLOTS)
			goto bad;
		o->slots = (unsigned)u;
		o->have_slots = 1;
	} else if (!strcmp(name, "sample-rate")) {
		want = "want Hz > 0";
		if (tool_parse_double(arg, &o->sample_rate_hz) < 0 || o->sample_rate_hz <= 0)
			goto bad;
		o->have_rate_hz = 1;
	} else {
		log_err("%s: not a geometry option", opt);
		return -EINVAL;
	}
	return 0;
bad:
	return tool_bad_arg(opt, arg, want);
}

int tool_geom_given(const struct tool_geom_opts *o)
{
	return o->have_geometry || o->have_format || o->have_slots || o->have_rate_hz;
}

void tool_geom_apply(const struct tool_geom_opts *o, struct chirp_ring_geometry *g)
{
	if (o->have_geometry) {
		g->channels = o->c;
		g->pulses = o->p;
		g->samples = o->r;
	}
	if (o->have_format)
		g->format = o->fmt;
	if (o->have_slots)
		g->slots = o->slots;
	if (o->have_rate_hz)
		g->sample_rate_hz = o->sample_rate_hz;
}

int tool_ring_fits_config(const struct chirp_ring_geometry *g, const struct chirp_config *c,
			  enum plan_ring_kind which)
{
	struct chirp_ring_geometry want;

	plan_ring_geometry(c, which, &want);
	return g->channels == want.channels && g->pulses == want.pulses &&
	       g->samples == want.samples && g->format == want.format;
}

void tool_synth_opts_init(struct tool_synth_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
}

int tool_synth_opt(struct tool_synth_opts *o, int c, const char *arg)
{
	switch (c) {
	case TOOL_O_TARGET:
		if (o->ntarget >= SYNTH_MAX_TARGETS) {
			log_err("--target: more than %d targets", SYNTH_MAX_TARGETS);
			return -EINVAL;
		}
		o->target[o->ntarget++] = arg;
		return 1;
	case TOOL_O_TARGETS:
		log_err("--targets '%s': not an option; give each echo as --target "
			"GATE,AMP_DB[,DOPPLER] (repeatable; DOPPLER in Hz, or CYCLES/pulse)", arg);
		return -EINVAL;
	case TOOL_O_PRF:
		if (tool_parse_double(arg, &o->prf_hz) < 0 || o->prf_hz <= 0)
			return tool_bad_arg("--prf", arg, "want a frequency in Hz > 0");
		return 1;
	case TOOL_O_SNR:
		if (tool_parse_double(arg, &o->snr_db) < 0)
			return tool_bad_arg("--snr-db", arg, "want a number of dB");
		o->have_snr = 1;
		return 1;
	case TOOL_O_NOISE:
		if (tool_parse_double(arg, &o->noise_dbfs) < 0 || o->noise_dbfs > 20)
			return tool_bad_arg("--noise-dbfs", arg, "want a number of dB <= 20");
		o->have_noise_dbfs = 1;
		return 1;
	case TOOL_O_NOISELESS:
		o->noiseless = 1;
		return 1;
	case TOOL_O_SEED:
		if (tool_parse_u64(arg, &o->seed) < 0)
			return tool_bad_arg("--seed", arg, "want an unsigned integer");
		return 1;
	case TOOL_O_JAMMER:
		if (o->njammer >= SYNTH_MAX_JAMMERS) {
			log_err("--jammer: more than %d jammers", SYNTH_MAX_JAMMERS);
			return -EINVAL;
		}
		o->jammer[o->njammer++] = arg;
		return 1;
	case TOOL_O_ASPACING:
		if (tool_parse_double(arg, &o->array_spacing_m) < 0 || !(o->array_spacing_m > 0))
			return tool_bad_arg("--array-spacing", arg, "want metres > 0");
		return 1;
	case TOOL_O_AFILE:
		o->array_file = arg;
		return 1;
	case TOOL_O_CAL:
		o->calibration = arg;
		return 1;
	default:
		return 0;
	}
}

int tool_synth_given(const struct tool_synth_opts *o)
{
	return o->ntarget > 0;
}

int tool_synth_check(const struct tool_synth_opts *o)
{
	if (o->prf_hz > 0 && !o->ntarget) {
		log_err("--prf applies to --target (a DOPPLER in Hz)");
		return -EINVAL;
	}
	if (o->have_snr + o->have_noise_dbfs + o->noiseless > 1) {
		log_err("--snr-db, --noise-dbfs and --noiseless are alternatives");
		return -EINVAL;
	}
	if ((o->have_snr || o->have_noise_dbfs || o->noiseless) && !o->ntarget) {
		log_err("--snr-db, --noise-dbfs and --noiseless apply to synthetic echoes (--target)");
		return -EINVAL;
	}
	if ((o->njammer || o->array_spacing_m > 0 || o->array_file || o->calibration) &&
	    !o->ntarget) {
		log_err("--jammer, --array-spacing, --array-file and --calibration apply to "
			"synthetic echoes (--target)");
		return -EINVAL;
	}
	if (o->array_spacing_m > 0 && o->array_file) {
		log_err("--array-spacing and --array-file are alternatives");
		return -EINVAL;
	}
	if (o->calibration && !(o->array_spacing_m > 0 || o->array_file)) {
		log_err("--calibration applies to an array (--array-spacing or --array-file)");
		return -EINVAL;
	}
	return 0;
}

/* The PRF a DOPPLER in Hz is turned with: --prf, else [radar] prf_hz. */
static double synth_prf_hz(const struct tool_synth_opts *o, const struct chirp_config *c,
			   const char *config_path)
{
	struct pc_params pp;

	if (!c)
		return o->prf_hz;
	plan_pc_params(c, &pp);
	if (o->prf_hz <= 0)
		return pp.radar.prf_hz;
	if (pp.radar.prf_hz > 0 && fabs(pp.radar.prf_hz - o->prf_hz) > 1e-9 * o->prf_hz)
		log_warn("--prf %.9g Hz differs from [radar] prf_hz %.9g Hz of %s: the "
			 "targets' Doppler bins will not be where chirpd expects them",
			 o->prf_hz, pp.radar.prf_hz, config_path);
	return o->prf_hz;
}

/*
 * The receive array for C channels: the options' (--array-spacing or
 * --array-file), else the configuration's [array] when it has one (so
 * that echoes come from the array chirpd forms its beams for); the
 * calibration of --calibration, else [array] calibration. NULL when there
 * is none (*err stays empty) or it is refused (the reason in err, an
 * [array] file's FILE:LINE in it).
 */
static struct array *synth_array_of(const struct tool_synth_opts *o, const struct chirp_config *c,
				    char *err, size_t errlen)
{
	int mine = o->array_spacing_m > 0 || o->array_file;
	const char *cal = o->calibration;
	struct array *a = NULL;

	err[0] = '\0';
	if (o->array_spacing_m > 0)
		a = array_create_ula(c->channels, o->array_spacing_m, err, errlen);
	else if (o->array_file)
		a = array_load(o->array_file, c->channels, err, errlen);
	else if (c->array_geometry == CFG_ARRAY_FILE && c->array_file[0])
		a = array_load(c->array_file, c->channels, err, errlen);
	else if (c->array_geometry == CFG_ARRAY_ULA && c->array_spacing_m > 0)
		a = array_create_ula(c->channels, c->array_spacing_m, err, errlen);
	if (!cal && !mine && c->array_calibration[0])
		cal = c->array_calibration;
	if (a && cal && array_cal_load(a, cal, err, errlen) < 0) {
		array_destroy(a);
		a = NULL;
	}
	return a;
}

struct synth *tool_synth_create(const struct tool_synth_opts *o, const struct chirp_config *c,
				const struct synth_target *t, size_t nt, double noise_power)
{
	struct synth_jammer jam[SYNTH_MAX_JAMMERS];
	struct synth_array sa = { .carrier_hz = c->carrier_hz };
	struct synth *s = NULL;
	struct array *a;
	char err[512];

	for (size_t i = 0; i < o->njammer; i++) {
		if (synth_parse_jammer(o->jammer[i], &jam[i], err, sizeof(err)) < 0) {
			log_err("--jammer %s", err);
			return NULL;
		}
	}
	a = synth_array_of(o, c, err, sizeof(err));
	sa.array = a;
	if (!a && err[0]) {
		log_err("%s", err);
		return NULL;
	}
	s = synth_create_from_config_array(c, t, nt, jam, o->njammer, sa.array ? &sa : NULL,
					   noise_power, o->seed, err, sizeof(err));
	if (!s)
		log_err("%s", err);
	array_destroy(a);
	return s;
}

int tool_synth_targets(const struct tool_synth_opts *o, const struct chirp_config *c,
		       const char *config_path, struct synth_target *t, size_t *nt,
		       double *noise_power)
{
	double prf = synth_prf_hz(o, c, config_path);
	char err[512];

	*nt = 0;
	for (size_t i = 0; i < o->ntarget; i++) {
		int folded;

		if (synth_parse_target(o->target[i], prf, &t[i], &folded, err, sizeof(err)) < 0) {
			log_err("--target %s", err);
			return -EINVAL;
		}
		if (folded)
			log_notice("--target %s: the shift is beyond +-PRF/2 (%.6g Hz) and aliases "
				   "to %.6g Hz", o->target[i], prf / 2, t[i].doppler * prf);
	}
	*nt = o->ntarget;
	if (o->noiseless)
		*noise_power = 0;
	else if (o->have_snr)
		*noise_power = synth_noise_power_for_snr(t, *nt, o->snr_db);
	else
		*noise_power = pow(10.0, (o->have_noise_dbfs ? o->noise_dbfs
							     : SYNTH_DEFAULT_NOISE_DBFS) / 10.0);
	return 0;
}
