/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plan.c — a configuration turned into what the daemon builds from
 * (plan.h), and the rules between keys that other modules own, checked
 * for the config module (config_check_rules).
 */
#include "plan.h"
#include "metrics.h"
#include "array.h"
#include "beam.h"
#include "radar.h"
#include "sysnuma.h"
#include "workkey.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- derived values ----------------------------------------------------- */

unsigned plan_doppler_pulses(const struct chirp_config *c)
{
	return c->doppler ? radar_pulses_after_mti(c->pulses, c->mti) : 0;
}

unsigned plan_doppler_nfft(const struct chirp_config *c)
{
	return c->doppler ? radar_doppler_nfft(c->pulses, c->mti, c->doppler_fft) : 0;
}

/* cpus in a list like "2-5,8" (validated already), 0 if empty. */
static int cpulist_count(const char *s)
{
	cpu_set_t set;
	char why[128];

	if (!s[0] || sysnuma_parse_cpus(s, &set, why, sizeof(why)) < 0)
		return 0;
	return CPU_COUNT(&set);
}

/* auto thread counts: cpus in [numa] cpus, else online cpus, at most max */
static int auto_threads(const struct chirp_config *c, int max)
{
	int n = cpulist_count(c->cpus);

	if (n <= 0) {
		long on = sysconf(_SC_NPROCESSORS_ONLN);
		n = on > 0 ? (int)on : 1;
	}
	return n > max ? max : n;
}

int plan_cpu_threads(const struct chirp_config *c)
{
	return c->cpu_threads > 0 ? c->cpu_threads : auto_threads(c, 8);
}

int plan_staging_threads(const struct chirp_config *c)
{
	/* 16: a 16 MiB copy into pinned memory with streaming stores keeps
	 * gaining bandwidth up to 16 threads on a 16-vCPU host (bench_hcopy;
	 * the figures are in doc/performance.md) */
	return c->staging_threads > 0 ? c->staging_threads : auto_threads(c, 16);
}

uint64_t plan_budget_ns(const struct chirp_config *c)
{
	return (uint64_t)(c->latency_budget_ms * 1e6);
}

/* pc_params.radar from [radar], [doppler], [cfar]; the window stays NULL
 * (rect) for the builder to fill over plan_doppler_pulses(c) pulses. */
static void radar_params(const struct chirp_config *c, struct pc_radar *r)
{
	r->doppler = c->doppler;
	r->mti = c->mti;
	r->window = NULL;
	r->nfft = c->doppler_fft;
	r->cfar = c->cfar;
	r->method = c->cfar_method;
	r->integrate = c->cfar_integrate;
	r->guard_range = c->guard_range;
	r->guard_doppler = c->guard_doppler;
	r->train_range = c->train_range;
	r->train_doppler = c->train_doppler;
	r->os_rank = c->os_rank;
	r->pfa = c->pfa;
	r->maxima_range = c->maxima_range;
	r->maxima_doppler = c->maxima_doppler;
	r->max_detections = c->max_detections;
	r->sample_rate_hz = c->wf.sample_rate_hz;
	/* velocity = off hides what is known; auto and on hand both on
	 * (on has been checked to have them). */
	r->prf_hz = c->velocity == PC_SWITCH_OFF ? 0 : c->prf_hz;
	r->carrier_hz = c->velocity == PC_SWITCH_OFF ? 0 : c->carrier_hz;
	r->velocity = c->velocity == PC_SWITCH_ON;
}

unsigned plan_chain_rows(const struct chirp_config *c)
{
	return c->beams_mode != PC_BEAMS_OFF ? c->beams_count : c->channels;
}

/* pc_params.beams' values from [array], [beams] and [radar] carrier_hz;
 * the arrays (positions, calibration, taper, list) are plan_beams_make's. */
static void beams_params(const struct chirp_config *c, struct pc_beams *b)
{
	b->mode = c->beams_mode;
	b->count = c->beams_count;
	b->carrier_hz = c->carrier_hz;
	b->layout = c->beams_layout;
	b->fan_az_deg = c->beams_azimuth_deg;
	b->fan_el_deg = c->beams_elevation_deg;
	b->fan_spacing_u = c->beams_spacing_u;
	b->snapshots = c->beams_snapshots;
	b->first_gate = c->beams_first_gate;
	b->gate_stride = c->beams_gate_stride;
	b->pulse_stride = c->beams_pulse_stride;
	b->loading = c->beams_loading;
	b->monopulse = c->beams_monopulse;
}

void plan_pc_params(const struct chirp_config *c, struct pc_params *p)
{
	pc_params_init(p);   /* the defaults of what the config does not set (tune) */
	p->channels = c->channels;
	p->pulses = c->pulses;
	p->samples = c->samples;
	p->in_format = c->format;
	p->out_mode = c->out_mode;
	p->normalize = c->normalize;
	p->ref = NULL;
	p->ref_len = 0;
	p->nfft = c->nfft;
	p->backend = c->backend;
	p->cpu_threads = plan_cpu_threads(c);
	p->gpu = c->gpu;
	p->gpu_bus_id = c->gpu < 0 ? c->gpu_bus_id : NULL;
	p->streams = c->streams;
	p->staging = c->staging;
	p->staging_threads = plan_staging_threads(c);
	p->busy_poll = c->busy_poll;
	p->idle_spin_us = c->idle_spin_us;
	p->tune.fftw_planner = c->fftw_planner;
	p->tune.fftw_wisdom = c->fftw_wisdom[0] ? c->fftw_wisdom : NULL;
	p->tune.takeover = c->takeover;
	p->tune.block_kib = c->cpu_block_kib;
	p->tune.cuda_graphs = c->cuda_graphs;
	p->tune.cuda_chunks = c->cuda_chunks;
	p->tune.cuda_idle_chunks = c->cuda_idle_chunks;
	p->tune.cuda_spin_us = c->cuda_spin_us;
	p->tune.staging_nt = c->staging_nt;
	p->tune.cuda_fused = c->cuda_fused;
	radar_params(c, &p->radar);
	beams_params(c, &p->beams);
	/* [live] frames come from the backend's snapshots of its maps (any
	 * output mode): room for the largest frame the view keeps */
	if (c->live_enable && c->doppler) {
		struct live_params lp = { .max_rows = c->live_map_max_doppler,
					  .max_cols = c->live_map_max_range };

		p->snapshot_cells = live_cells_cap(&lp);
	}
}

/* ---- the beams' arrays -------------------------------------------------- */

void plan_beams_free(struct plan_beams *b)
{
	free(b->pos);
	free(b->cal);
	free(b->taper);
	free(b->list);
	memset(b, 0, sizeof(*b));
}

static int beams_fault(struct config_fault *f, const char *k0, const char *k1, const char *fmt,
		       const char *why)
{
	memset(f, 0, sizeof(*f));
	f->keys[0] = k0;
	f->keys[1] = k1;
	snprintf(f->why, sizeof(f->why), fmt, why);
	return -EINVAL;
}

/* The element positions: a ULA of spacing_m, or [array] file (its own
 * FILE:LINE errors), and [array] calibration. */
static int beams_array(const struct chirp_config *c, struct plan_beams *b, struct config_fault *f)
{
	struct array *a;
	char why[256];
	unsigned C = c->channels;

	if (c->array_geometry == CFG_ARRAY_ULA) {
		if (!(c->array_spacing_m > 0)) {
			beams_fault(f, "array.spacing_m", "array.geometry", "%s",
				    "a uniform linear array needs its element spacing (spacing_m > 0)");
			f->keys[2] = "beams.mode";
			return -EINVAL;
		}
		a = array_create_ula(C, c->array_spacing_m, why, sizeof(why));
	} else {
		if (!c->array_file[0]) {
			beams_fault(f, "array.file", "array.geometry", "%s",
				    "geometry file needs [array] file");
			f->keys[2] = "beams.mode";
			return -EINVAL;
		}
		a = array_load(c->array_file, C, why, sizeof(why));
	}
	if (!a)   /* at the key naming the file, which says its own FILE:LINE */
		return beams_fault(f, c->array_geometry == CFG_ARRAY_ULA ? "array.spacing_m" : "array.file",
				   NULL, "%s", why);
	if (c->array_calibration[0] &&
	    array_cal_load(a, c->array_calibration, why, sizeof(why)) < 0) {
		array_destroy(a);
		return beams_fault(f, "array.calibration", NULL, "%s", why);
	}
	b->pos = malloc(3 * (size_t)C * sizeof(double));
	b->cal = array_has_cal(a) ? malloc(2 * (size_t)C * sizeof(double)) : NULL;
	if (!b->pos || (array_has_cal(a) && !b->cal)) {
		array_destroy(a);
		return beams_fault(f, "beams.mode", NULL, "%s", "out of memory for the array");
	}
	for (unsigned i = 0; i < C; i++) {
		array_position(a, i, b->pos + 3 * i);
		if (b->cal)
			array_cal(a, i, b->cal + 2 * i);
	}
	array_destroy(a);
	return 0;
}

/* [beams] list: count "az,el" pairs separated by ';'. */
static int beams_list(const struct chirp_config *c, struct plan_beams *b, struct config_fault *f)
{
	const char *s = c->beams_list;
	char why[160];

	b->list = calloc(2 * (size_t)c->beams_count, sizeof(double));
	if (!b->list)
		return beams_fault(f, "beams.list", NULL, "%s", "out of memory");
	for (unsigned i = 0; i < c->beams_count; i++) {
		char *end;
		double az, el;

		az = strtod(s, &end);
		if (end == s || *end != ',') {
			snprintf(why, sizeof(why), "direction %u: want 'az,el' in degrees (%u directions)",
				 i, c->beams_count);
			return beams_fault(f, "beams.list", "beams.count", "%s", why);
		}
		s = end + 1;
		el = strtod(s, &end);
		while (*end == ' ' || *end == '\t')
			end++;
		if (end == s || (*end != ';' && *end != '\0') || !isfinite(az) || !isfinite(el)) {
			snprintf(why, sizeof(why), "direction %u: want 'az,el' in degrees (%u directions)",
				 i, c->beams_count);
			return beams_fault(f, "beams.list", "beams.count", "%s", why);
		}
		if (*end == '\0' && i + 1 < c->beams_count) {
			snprintf(why, sizeof(why), "%u directions for count %u", i + 1, c->beams_count);
			return beams_fault(f, "beams.list", "beams.count", "%s", why);
		}
		b->list[2 * i] = az;
		b->list[2 * i + 1] = el;
		s = *end ? end + 1 : end;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s) {
		snprintf(why, sizeof(why), "more directions than count %u", c->beams_count);
		return beams_fault(f, "beams.list", "beams.count", "%s", why);
	}
	return 0;
}

/* spacing_u = 0: lambda over the aperture along x (C d for a ULA). */
static double auto_spacing_u(const struct chirp_config *c, const double *pos)
{
	double lo = pos[0], hi = pos[0], ap;

	for (unsigned i = 1; i < c->channels; i++) {
		lo = fmin(lo, pos[3 * i]);
		hi = fmax(hi, pos[3 * i]);
	}
	ap = c->channels > 1 ? (hi - lo) * c->channels / (c->channels - 1) : 0;
	if (!(ap > 0) || !(c->carrier_hz > 0))
		return 0.1;
	return fmin(2.0, BEAM_C0_MPS / c->carrier_hz / ap);
}

int plan_beams_make(const struct chirp_config *c, struct plan_beams *b, struct config_fault *f)
{
	memset(b, 0, sizeof(*b));
	if (c->beams_mode == PC_BEAMS_OFF)
		return 0;
	if (beams_array(c, b, f) < 0 ||
	    (c->beams_layout == PC_BEAMS_LIST && beams_list(c, b, f) < 0))
		goto fail;
	b->taper = malloc((size_t)c->channels * sizeof(double));
	if (!b->taper || wf_window_fill(c->beams_taper, c->beams_taylor_nbar, c->beams_taylor_sll_db,
					b->taper, c->channels) < 0) {
		beams_fault(f, "beams.taper", NULL, "%s", "the taper cannot be made over the channels");
		goto fail;
	}
	b->spacing_u = c->beams_spacing_u > 0 ? c->beams_spacing_u : auto_spacing_u(c, b->pos);
	return 0;
fail:
	plan_beams_free(b);
	return -EINVAL;
}

void plan_beams_apply(const struct plan_beams *b, struct pc_params *p)
{
	if (p->beams.mode == PC_BEAMS_OFF)
		return;
	p->beams.positions_m = b->pos;
	p->beams.cal = b->cal;
	p->beams.taper = b->taper;
	p->beams.list_deg = b->list;
	p->beams.fan_spacing_u = b->spacing_u;
}

int plan_ring_geometry(const struct chirp_config *c, enum plan_ring_kind which,
		       struct chirp_ring_geometry *g)
{
	memset(g, 0, sizeof(*g));
	switch (which) {
	case PLAN_RING_IN:
		g->channels = c->channels;
		g->pulses = c->pulses;
		g->format = c->format == PC_FMT_SC16 ? CHIRP_RING_SC16 : CHIRP_RING_CF32;
		g->slots = c->input_slots;
		break;
	case PLAN_RING_OUT:
		if (c->out_mode == PC_OUT_NONE)
			return 0;
		g->channels = plan_chain_rows(c);   /* beams replace channels */
		/* a map's rows are Doppler bins, not pulses */
		g->pulses = c->out_mode == PC_OUT_MAP_POWER || c->out_mode == PC_OUT_MAP_DB ?
			plan_doppler_nfft(c) : c->pulses;
		g->format = c->out_mode == PC_OUT_COMPLEX ? CHIRP_RING_CF32 : CHIRP_RING_RF32;
		g->slots = c->output_slots;
		break;
	case PLAN_RING_DET:
		if (!c->cfar || !c->det_ring[0])
			return 0;
		g->channels = 1;
		g->pulses = 1;
		g->format = CHIRP_RING_DET;
		g->slots = c->det_slots;
		g->samples = c->max_detections;
		g->sample_rate_hz = c->wf.sample_rate_hz;
		return 1;
	default:
		return 0;
	}
	g->samples = c->samples;
	g->sample_rate_hz = c->wf.sample_rate_hz;
	return 1;
}

/* Ring which of c: its geometry, name and options. */
static void plan_ring_make(struct plan_ring *r, const struct chirp_config *c, enum plan_ring_kind which)
{
	memset(r, 0, sizeof(*r));
	r->used = plan_ring_geometry(c, which, &r->geo);
	if (!r->used)
		return;
	switch (which) {
	case PLAN_RING_IN:
		r->name = c->input_ring;
		r->what = "input";
		r->role = CHIRP_RING_CONSUMER;
		r->hugepages = c->input_hugepages;
		r->allow_foreign_owner = c->input_allow_foreign_owner;
		break;
	case PLAN_RING_OUT:
		r->name = c->output_ring;
		r->what = "output";
		r->role = CHIRP_RING_PRODUCER;
		r->hugepages = c->output_hugepages;
		r->allow_foreign_owner = c->output_allow_foreign_owner;
		break;
	default:
		r->name = c->det_ring;
		r->what = "detection";
		r->role = CHIRP_RING_PRODUCER;
		r->allow_foreign_owner = c->det_allow_foreign_owner;
		break;
	}
}

/* Result file k: [output] file when there is an output, [detections] file
 * when there are lists. */
static void plan_file_make(struct plan_file *f, const struct chirp_config *c, enum plan_file_kind k)
{
	if (k == PLAN_FILE_OUT) {
		f->what = "[output] file";
		f->path = c->output_file[0] && c->out_mode != PC_OUT_NONE ? c->output_file : NULL;
	} else {
		f->what = "[detections] file";
		f->path = c->det_file[0] && c->cfar ? c->det_file : NULL;
	}
}

/* ---- the rules between keys that other modules own ---------------------- */

/* Each radar_param's key in chirpd.conf. */
static const char *const radar_keys[RADAR_P_COUNT] = {
	[RADAR_P_PULSES] = "cpi.pulses",
	[RADAR_P_SAMPLES] = "cpi.samples",
	[RADAR_P_MTI] = "doppler.mti",
	[RADAR_P_NFFT] = "doppler.fft",
	[RADAR_P_METHOD] = "cfar.method",
	[RADAR_P_GUARD_RANGE] = "cfar.guard_range",
	[RADAR_P_GUARD_DOPPLER] = "cfar.guard_doppler",
	[RADAR_P_TRAIN_RANGE] = "cfar.train_range",
	[RADAR_P_TRAIN_DOPPLER] = "cfar.train_doppler",
	[RADAR_P_OS_RANK] = "cfar.os_rank",
	[RADAR_P_PFA] = "cfar.pfa",
	[RADAR_P_MAXIMA_RANGE] = "cfar.maxima_range",
	[RADAR_P_MAXIMA_DOPPLER] = "cfar.maxima_doppler",
	[RADAR_P_MAX_DETECTIONS] = "cfar.max_detections",
	[RADAR_P_SAMPLE_RATE] = "waveform.sample_rate_hz",
	[RADAR_P_PRF] = "radar.prf_hz",
	[RADAR_P_CARRIER] = "radar.carrier_hz",
	[RADAR_P_VELOCITY] = "radar.velocity",
	[RADAR_P_OUT_MODE] = "output.mode",
	[RADAR_P_DOPPLER] = "doppler.enable",
	[RADAR_P_CFAR] = "cfar.enable",
};

/* A radar_check failure as a config fault: the parameter the reason is
 * about first, then the rest of the combination. */
static void radar_fault_keys(const struct radar_fault *rf, struct config_fault *f)
{
	int n = 0;

	memset(f, 0, sizeof(*f));
	f->keys[n++] = radar_keys[rf->param];
	for (int p = 0; p < RADAR_P_COUNT && n < CONFIG_FAULT_KEYS; p++)
		if ((rf->params & RADAR_BIT(p)) && p != (int)rf->param)
			f->keys[n++] = radar_keys[p];
	snprintf(f->why, sizeof(f->why), "%s", rf->why);
}

static int add_fault(struct config_fault *out, int n, int max, const struct config_fault *f)
{
	if (n < max)
		out[n] = *f;
	return n + 1;
}

/* Each ring, slots x slot bytes, must fit this machine's memory: a ring
 * that cannot be reserved would fail only at start. */
static int check_ring_memory(const struct chirp_config *c, unsigned long long in_b,
			     unsigned long long out_b, struct config_fault *out, int n, int max)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	unsigned long long phys = pages > 0 && psz > 0 ?
		(unsigned long long)pages * (unsigned long long)psz : 0;
	struct config_fault f;

	if (phys && c->input_slots && in_b * c->input_slots > phys) {
		memset(&f, 0, sizeof(f));
		f.keys[0] = "input.slots";
		snprintf(f.why, sizeof(f.why),
			 "input ring of %u slots x %.1f MiB = %.1f GiB exceeds this machine's memory (%.1f GiB)",
			 c->input_slots, (double)in_b / (1 << 20),
			 (double)in_b * c->input_slots / (1u << 30), (double)phys / (1u << 30));
		n = add_fault(out, n, max, &f);
	}
	if (phys && c->output_slots && out_b * c->output_slots > phys) {
		memset(&f, 0, sizeof(f));
		f.keys[0] = "output.slots";
		snprintf(f.why, sizeof(f.why),
			 "output ring of %u slots x %.1f MiB = %.1f GiB exceeds this machine's memory (%.1f GiB)",
			 c->output_slots, (double)out_b / (1 << 20),
			 (double)out_b * c->output_slots / (1u << 30), (double)phys / (1u << 30));
		n = add_fault(out, n, max, &f);
	}
	return n;
}

/* One CPI must fit a ring slot a 64-bit process can map (4 GiB); then the
 * rings must fit the machine. */
static int check_cpi_size(const struct chirp_config *c, struct config_fault *out, int n, int max)
{
	unsigned long long R = c->samples;
	unsigned long long cpi = (unsigned long long)c->channels * c->pulses * R;
	unsigned long long in_b = cpi * pc_format_sample_bytes(c->format);
	unsigned long long out_b = (unsigned long long)plan_chain_rows(c) *
		(c->out_mode == PC_OUT_MAP_POWER || c->out_mode == PC_OUT_MAP_DB ?
		 plan_doppler_nfft(c) : c->pulses) * R * pc_output_sample_bytes(c->out_mode);
	const unsigned long long lim = 4ull << 30;
	struct config_fault f = { .keys = { "cpi.pulses", "cpi.samples", "cpi.channels" } };

	if (in_b <= lim && out_b <= lim)
		return check_ring_memory(c, in_b, out_b, out, n, max);
	snprintf(f.why, sizeof(f.why),
		 "a CPI of %u x %u x %llu samples is %.1f GiB, more than the 4 GiB a ring slot holds",
		 c->channels, c->pulses, R, (double)(in_b > out_b ? in_b : out_b) / (1u << 30));
	return add_fault(out, n, max, &f);
}

/*
 * The radar chain's rules (what the outputs need, its scales and velocity
 * with or without Doppler processing, radar_check with it), then what
 * pulse compression's
 * own check says of the parameters built from c with a one-sample
 * stand-in reference (the real ones are the modes', checked by config):
 * that one is residual, reported at [cfar] or [doppler] enable.
 */
static int check_radar(const struct chirp_config *c, struct config_fault *out, int n, int max)
{
	static const float one[2] = { 1.0f, 0.0f };
	struct radar_fault rf;
	struct config_fault f;
	struct pc_params pp;

	plan_pc_params(c, &pp);
	if (radar_check_outputs(pp.out_mode, &pp.radar, &rf) < 0) {
		radar_fault_keys(&rf, &f);
		return add_fault(out, n, max, &f);
	}
	if (radar_check_scales(&pp.radar, &rf) < 0) {
		radar_fault_keys(&rf, &f);
		n = add_fault(out, n, max, &f);
	}
	if (!c->doppler)
		return n;
	if (radar_check(&pp.radar, pp.pulses, pp.samples, &rf) < 0) {
		radar_fault_keys(&rf, &f);
		return add_fault(out, n, max, &f);
	}
	pp.ref = one;
	pp.ref_len = 1;
	pp.beams.mode = PC_BEAMS_OFF;   /* the beams are check_beams' */
	memset(&f, 0, sizeof(f));
	if (pc_params_check(&pp, f.why, sizeof(f.why)) < 0) {
		f.keys[0] = c->cfar ? "cfar.enable" : "doppler.enable";
		f.residual = 1;
		return add_fault(out, n, max, &f);
	}
	return n;
}

/*
 * The HTTP listener: an address other than loopback only with
 * allow_remote (it has no authentication: metrics.h, doc/live.md).
 */
static int check_listener(const struct chirp_config *c, struct config_fault *out, int n, int max)
{
	struct sockaddr_storage ss;
	struct config_fault f;
	char why[128];

	if (c->metrics_listen[0] && !c->metrics_allow_remote &&
	    metrics_parse_listen(c->metrics_listen, &ss, why, sizeof(why)) == 0 &&
	    !metrics_listen_is_loopback(&ss)) {
		memset(&f, 0, sizeof(f));
		f.keys[0] = "metrics.listen";
		f.keys[1] = "metrics.allow_remote";
		snprintf(f.why, sizeof(f.why),
			 "%s is not a loopback address: other hosts could read the metrics%s without "
			 "authentication; set [metrics] allow_remote = true to mean it",
			 c->metrics_listen, c->live_enable ? " and the live view" : "");
		n = add_fault(out, n, max, &f);
	}
	return n;
}

/* Beams need, as the pc would say (pc_params_check of the beams alone,
 * a stand-in reference): a failure's keys by what it is about. */
static int check_beams_pc(const struct chirp_config *c, const struct plan_beams *pb,
			  struct config_fault *f)
{
	static const float one[2] = { 1.0f, 0.0f };
	struct pc_params pp;

	plan_pc_params(c, &pp);
	plan_beams_apply(pb, &pp);
	pp.ref = one;
	pp.ref_len = 1;
	pp.out_mode = PC_OUT_COMPLEX;
	pp.radar.doppler = 0;   /* the chain is check_radar's */
	pp.radar.cfar = 0;
	memset(f, 0, sizeof(*f));
	if (pc_params_check(&pp, f->why, sizeof(f->why)) == 0)
		return 0;
	if (!strncmp(f->why, "beams: ", 7))   /* the key says it */
		memmove(f->why, f->why + 7, strlen(f->why + 7) + 1);
	if (strstr(f->why, "mvdr: ")) {
		f->keys[0] = "beams.snapshots";
		f->keys[1] = "beams.first_gate";
		f->keys[2] = "beams.gate_stride";
		f->keys[3] = "beams.pulse_stride";
	} else if (c->beams_layout == PC_BEAMS_LIST) {
		f->keys[0] = "beams.list";
		f->keys[1] = "beams.layout";
	} else {
		f->keys[0] = "beams.azimuth_deg";
		f->keys[1] = "beams.elevation_deg";
		f->keys[2] = "beams.spacing_u";
		f->keys[3] = "beams.count";
	}
	return -EINVAL;
}

/* One CPI's beams and maps in memory (the CPU backend's buffers: the
 * beams and their compressed cube, B x P x R complex each; the Doppler
 * input and output, B x Nd x R complex each; the map and the CFAR's
 * marks, B x Nd x R float each): at most half this machine's memory. */
static int check_beams_memory(const struct chirp_config *c, struct config_fault *f)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	double phys = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
	double nd = c->doppler ? plan_doppler_nfft(c) : 0;
	double bytes = (double)c->beams_count * c->samples * (16.0 * c->pulses + 24.0 * nd);

	if (!phys || bytes <= phys / 2)
		return 0;
	memset(f, 0, sizeof(*f));
	f->keys[0] = "beams.count";
	snprintf(f->why, sizeof(f->why),
		 "%u beams of %u x %u samples need %.1f GiB for one CPI's beams and maps, more "
		 "than half this machine's memory (%.1f GiB)", c->beams_count, c->pulses, c->samples,
		 bytes / (1u << 30), phys / (1u << 30));
	return -EINVAL;
}

/*
 * The beams' rules: the carrier, MVDR's channels, no integration over
 * beams, then the array and the directions as plan_beams_make and the pc
 * read them, then the memory. The array's files keep their own FILE:LINE
 * in the reason.
 */
static int check_beams(const struct chirp_config *c, struct config_fault *out, int n, int max)
{
	struct config_fault f;
	struct plan_beams pb;

	if (c->beams_mode == PC_BEAMS_OFF)
		return n;
	memset(&f, 0, sizeof(f));
	if (!(c->carrier_hz > 0)) {
		beams_fault(&f, "radar.carrier_hz", "beams.mode", "%s",
			    "beams need the carrier frequency (the wavelength steers them)");
		return add_fault(out, n, max, &f);
	}
	if (c->beams_mode == PC_BEAMS_MVDR && c->channels > PC_MAX_MVDR_CHANNELS) {
		char why[96];

		snprintf(why, sizeof(why), "mvdr needs at most %u channels, not %u",
			 PC_MAX_MVDR_CHANNELS, c->channels);
		beams_fault(&f, "beams.mode", "cpi.channels", "%s", why);
		return add_fault(out, n, max, &f);
	}
	if (c->cfar && c->cfar_integrate) {
		beams_fault(&f, "cfar.integrate", "beams.mode", "%s",
			    "noncoherent integration over beams is not a map of anything: use "
			    "integrate = none with beams");
		n = add_fault(out, n, max, &f);
	}
	if (plan_beams_make(c, &pb, &f) < 0)
		return add_fault(out, n, max, &f);
	if (check_beams_pc(c, &pb, &f) < 0)
		n = add_fault(out, n, max, &f);
	else if (check_beams_memory(c, &f) < 0)
		n = add_fault(out, n, max, &f);
	plan_beams_free(&pb);
	return n;
}

int config_check_rules(const struct chirp_config *c, struct config_fault *f, int max)
{
	int n = check_cpi_size(c, f, 0, max);

	n = check_listener(c, f, n, max);
	n = check_beams(c, f, n, max);
	return check_radar(c, f, n, max);
}

/* ---- the plan ----------------------------------------------------------- */

/* [publish]'s parameters; the daemon fills in what only a running pc
 * and its counters know (det_bytes, st). */
static void plan_publish(struct plan *p, const struct chirp_config *c)
{
	p->publish = (struct zpub_params){
		.listen = c->pub_listen, .detections = c->pub_detections,
		.maps_hz = c->pub_maps_hz, .map_max_range = c->pub_map_max_range,
		.map_max_doppler = c->pub_map_max_doppler, .hwm = c->pub_hwm,
		.queue = c->pub_queue,
	};
	p->publish_status_hz = c->pub_status_hz;
}

int plan_build(struct plan *p, const struct chirp_config *c, struct config_fault *f)
{
	struct config_fault faults[1];

	memset(p, 0, sizeof(*p));
	if (config_check_rules(c, faults, 1) > 0) {
		if (f)
			*f = faults[0];
		return -EINVAL;
	}
	p->cfg = c;
	plan_pc_params(c, &p->pc);
	p->doppler_pulses = plan_doppler_pulses(c);
	p->doppler_nfft = plan_doppler_nfft(c);
	for (int k = 0; k < PLAN_RINGS; k++)
		plan_ring_make(&p->ring[k], c, (enum plan_ring_kind)k);
	for (int k = 0; k < PLAN_FILES; k++)
		plan_file_make(&p->file[k], c, (enum plan_file_kind)k);
	p->latency_budget_ns = plan_budget_ns(c);
	plan_publish(p, c);
	p->live = (struct live_params){
		.fps = c->live_fps, .max_clients = c->live_max_clients,
		.max_rows = c->live_map_max_doppler, .max_cols = c->live_map_max_range,
	};
	p->live_enable = c->live_enable;
	p->http_listen = c->metrics_listen[0] ? c->metrics_listen :
			 c->live_enable ? PLAN_LIVE_LISTEN : NULL;
	return 0;
}

void plan_set_slots(struct plan *p, enum plan_ring_kind which, unsigned n)
{
	if (which < PLAN_RINGS && p->ring[which].used)
		p->ring[which].geo.slots = n;
}

static int same_geometry(const struct chirp_ring_geometry *a, const struct chirp_ring_geometry *b)
{
	return a->channels == b->channels && a->pulses == b->pulses && a->samples == b->samples &&
	       a->format == b->format && a->slots == b->slots &&
	       a->sample_rate_hz == b->sample_rate_hz;
}

void plan_compare(const struct plan *a, const struct plan *b, struct plan_diff *d)
{
	memset(d, 0, sizeof(*d));
	d->same_shape = workkey_same(a->cfg, b->cfg, WORKKEY_SHAPE);
	d->same_work = workkey_same(a->cfg, b->cfg, WORKKEY_CAPACITY);
	for (int k = 0; k < PLAN_RINGS; k++) {
		const struct plan_ring *ra = &a->ring[k], *rb = &b->ring[k];

		d->ring_kept[k] = ra->used && rb->used && same_geometry(&ra->geo, &rb->geo) &&
				  !strcmp(ra->name, rb->name) && ra->hugepages == rb->hugepages;
	}
}
