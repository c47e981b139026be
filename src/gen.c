/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen.c — chirpd's generations (daemon.h): everything one configuration
 * uses (reference, pc, rings, output file, pipeline generation), built next
 * to the running one on a reload so that what is unchanged is kept, and
 * the sizing of rings with slots = auto from the capacity measured on the
 * new pc.
 */
#include "daemon.h"

#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "waveform.h"
#include "workkey.h"

#define AUTO_SLOTS_MIN     16       /* slots = auto never sizes below this    */

/* huge: back with huge pages; foreign: adopt an existing object owned by
 * another uid ([input]/[output] allow_foreign_owner). */
static void ring_opts(const struct chirp_config *c, struct chirp_ring_opts *o, int huge,
		      int foreign)
{
	memset(o, 0, sizeof(*o));
	o->hugepages = huge;
	o->allow_foreign_owner = foreign;
	o->group = (gid_t)-1;
	if (c->control_group[0]) {
		/* The control group also gets the rings (digitizer, consumers). */
		struct group *gr = getgrnam(c->control_group);

		if (gr) {
			o->group = gr->gr_gid;
			o->mode = 0660;
		}
	}
}

void gen_destroy(struct gen *g)
{
	if (!g)
		return;
	pipeline_gen_destroy(g->pg);      /* before the pc it registered with */
	pc_destroy(g->pc);
	for (int k = 0; k < PLAN_RINGS; k++)
		if (g->ring[k] && !g->ring_borrowed[k])
			chirp_ring_detach(g->ring[k]);
	for (int k = 0; k < PLAN_FILES; k++)
		if (g->file_fd[k] >= 0 && !g->file_borrowed[k])
			close(g->file_fd[k]);
	for (unsigned i = 0; i < g->nmodes; i++)
		free(g->mode_ref[i]);
	free(g);
}

/* Whether a and b's pcs do the same work on the same device, so a
 * capacity measured for one holds for the other (a reload that changed
 * nothing of the kind need not measure again under live load): what the
 * pcs chose (backend, FFT length, depth) and the plans' side of it
 * (plan_compare: the fields workkey.c's table marks for the capacity). The
 * capacity cache's key (gen_cache_key) prints every field of the same
 * table. */
static int same_work(const struct gen *a, const struct gen *b)
{
	struct plan_diff d;

	plan_compare(&a->plan, &b->plan, &d);
	return a->info.backend == b->info.backend && a->info.nfft == b->info.nfft &&
	       a->info.depth == b->info.depth && d.same_work;
}

/*
 * slots = auto for a ring of cpi-byte slots (pipeline_auto_slots): as many
 * as hold [input] buffer_ms of CPIs at the measured capacity, rounded up to
 * a whole slot (a ring need not be a power of two: rounding up to one
 * would pin up to twice the memory asked for, and with CUDA every byte of
 * a ring is page-locked), at least AUTO_SLOTS_MIN, and no more than an
 * eighth of the machine's memory (then as many as fit, with a warning: the
 * operator asked for more slack than the host can pin). The output ring
 * gets the same time as the input ring: after a stall chirpd delivers its
 * backlog at full capacity, and a consumer must be able to fall behind by
 * as long without results lost.
 */
static unsigned auto_slots(const struct gen *g, uint64_t cpi, const char *which)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t budget = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 8 : 0;
	unsigned want = pipeline_auto_slots(g->cfg.input_buffer_ms, g->capacity_cps, cpi, 0,
					    AUTO_SLOTS_MIN);
	unsigned n = pipeline_auto_slots(g->cfg.input_buffer_ms, g->capacity_cps, cpi, budget,
					 AUTO_SLOTS_MIN);

	if (n < want)
		log_warn("[%s] slots = auto: %u slots (%.0f ms at %.0f CPI/s) would take more "
			 "than an eighth of this machine's memory; using %u",
			 which, want, g->cfg.input_buffer_ms, g->capacity_cps, n);
	return n;
}

double gen_sustainable_cps(const struct gen *g)
{
	return g->shared_cps > 0 ? g->shared_cps : g->capacity_cps;
}

int gen_set_shared(struct gen *g, double shared_cps, int *stored, char *err, size_t errlen)
{
	int64_t now_s = (int64_t)time(NULL);
	int rc;

	*stored = 0;
	if (!isfinite(shared_cps) || shared_cps < 0) {
		snprintf(err, errlen, "shared capacity %g: want a rate > 0 CPI/s, or 0", shared_cps);
		return -EINVAL;
	}
	if (g->cache_path[0] && g->capacity_cps > 0) {
		rc = capcache_store_shared(g->cache_path, g->cache_key, shared_cps, now_s, err,
					   errlen);
		if (rc < 0)
			return rc;
		*stored = 1;
	}
	g->shared_cps = shared_cps;
	g->shared_measured_s = shared_cps > 0 ? now_s : 0;
	return 0;
}

double gen_ring_ms(unsigned n, double cps)
{
	return cps > 0 ? (double)n / cps * 1e3 : 0;
}

unsigned gen_in_slots(const struct gen *g)
{
	struct chirp_ring_geometry geo;

	if (!g->ring[PLAN_RING_IN])
		return g->cfg.input_slots;
	chirp_ring_geometry(g->ring[PLAN_RING_IN], &geo);
	return geo.slots;
}

void gen_report_slack(const struct gen *g)
{
	unsigned n = gen_in_slots(g);
	double ms = gen_ring_ms(n, g->capacity_cps);

	if (g->capacity_cps <= 0) {
		log_warn("input ring %s: %u slots; capacity unknown (measurement failed), so the "
			 "time they hold is unknown", g->cfg.input_ring, n);
		return;
	}
	log_info("input ring %s: %u slots = %.1f ms at the measured capacity of %.0f CPI/s "
		 "(%s, buffer_ms %g); output ring %s: %u slots = %.1f ms", g->cfg.input_ring, n, ms,
		 g->capacity_cps, g->slots_requested ? "slots fixed" : "slots = auto",
		 g->cfg.input_buffer_ms, g->ring[PLAN_RING_OUT] ? g->cfg.output_ring : "(none)",
		 g->ring[PLAN_RING_OUT] ? g->cfg.output_slots : 0,
		 gen_ring_ms(g->ring[PLAN_RING_OUT] ? g->cfg.output_slots : 0, g->capacity_cps));
	if (g->ring[PLAN_RING_DET])
		log_info("detection ring %s: %u slots = %.1f ms (%s)", g->cfg.det_ring,
			 g->cfg.det_slots, gen_ring_ms(g->cfg.det_slots, g->capacity_cps),
			 g->det_slots_requested ? "slots fixed" : "slots = auto");
	if (ms < g->cfg.input_buffer_ms) {
		unsigned need = pipeline_auto_slots(g->cfg.input_buffer_ms, g->capacity_cps, 0, 0, 2);

		log_warn("input ring %s holds only %.1f ms of CPIs at capacity, less than [input] "
			 "buffer_ms = %g: a stall longer than that loses CPIs (slots = auto sizes it; "
			 "a fixed slots needs at least %u)", g->cfg.input_ring, ms, g->cfg.input_buffer_ms, need);
	}
}

void gen_ring_memory(const struct gen *g, size_t *in_bytes, size_t *out_bytes,
		     size_t *in_pinned, size_t *out_pinned)
{
	/* "registered" or "registered+copy" (file-only scratch staged): the
	 * rings are page-locked in place. "copy (register failed)" counts
	 * none, though one ring may have been registered before the other
	 * failed: the backend does not say which. */
	int pinned = !strncmp(g->info.staging, "registered", 10);
	void *base;

	*in_bytes = *out_bytes = 0;
	if (g->ring[PLAN_RING_IN])
		chirp_ring_data(g->ring[PLAN_RING_IN], &base, in_bytes);
	if (g->ring[PLAN_RING_OUT])
		chirp_ring_data(g->ring[PLAN_RING_OUT], &base, out_bytes);
	*in_pinned = pinned ? *in_bytes : 0;
	*out_pinned = pinned ? *out_bytes : 0;
}

void gen_log_modes(const struct gen *g)
{
	char line[1024];
	size_t o = 0;

	line[0] = '\0';
	for (unsigned i = 0; i < g->nmodes && o < sizeof(line); i++) {
		const struct cfg_mode *m = &g->cfg.modes[i];
		int n = snprintf(line + o, sizeof(line) - o, "%s%u %s (%s, L %zu)", i ? ", " : "",
				 m->id, m->name, wf_type_name(m->wf.type), g->modes[i].ref_len);

		if (n < 0)
			break;
		o += (size_t)n;
	}
	log_info("%u radar mode%s: %s", g->nmodes, g->nmodes == 1 ? "" : "s", line);
}

/*
 * The backend's own threads (FFTW workers, staging copiers) were made by
 * the main thread and inherit its affinity; run them on the data path's
 * cpus ([numa] cpus, or the node's), as the data thread is. Not fatal:
 * unpinned threads compute the same, with a warning.
 */
void daemon_bind_backend_threads(const struct daemon *d, struct pc *pc)
{
	char cpus[256];
	int n;

	if (!d->plan.have_cpus)
		return;
	n = pc_bind_threads(pc, &d->plan.cpus);
	if (n < 0) {
		log_warn("numa: backend threads not pinned: pthread_setaffinity_np: %s", strerror(-n));
		return;
	}
	if (n > 0) {
		sysnuma_format_cpus(&d->plan.cpus, cpus, sizeof(cpus));
		log_info("numa: %d backend thread%s pinned to cpus %s", n, n == 1 ? "" : "s", cpus);
	}
}

/*
 * Every mode's windowed reference (the generation owns them for its life)
 * into g->modes, which pc_params.modes points at: pc_create makes each
 * mode's filter spectrum once, so a CPI of any mode needs no reload.
 */
static int gen_build_modes(struct gen *g, char *err, size_t errlen)
{
	char why[256];

	if (g->cfg.nmodes < 1 || g->cfg.nmodes > PC_MAX_MODES) {
		snprintf(err, errlen, "%u radar modes configured (1..%d)", g->cfg.nmodes,
			 PC_MAX_MODES);
		return -EINVAL;
	}
	for (unsigned i = 0; i < g->cfg.nmodes; i++) {
		const struct cfg_mode *m = &g->cfg.modes[i];

		if (wf_build(config_mode_wf(&g->cfg, i), g->cfg.samples, &g->mode_ref[i],
			     &g->modes[i].ref_len, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "[%s%s] %s", strcmp(m->name, "default") ? "mode " : "waveform",
				 strcmp(m->name, "default") ? m->name : "", why);
			return -EINVAL;
		}
		g->nmodes = i + 1;
		g->modes[i].id = m->id;
		g->modes[i].ref = g->mode_ref[i];
	}
	return 0;
}

/* [doppler] window over the P' pulses left after MTI, as float for
 * pc_params.radar.window (*w NULL without doppler; the caller frees it
 * once pc_create has copied it). Made at build time only. */
static int gen_doppler_window(const struct gen *g, float **w, char *err, size_t errlen)
{
	unsigned n = g->plan.doppler_pulses;
	double *dw;

	*w = NULL;
	if (!n)
		return 0;
	dw = malloc((size_t)n * sizeof(*dw));
	*w = malloc((size_t)n * sizeof(**w));
	if (!dw || !*w) {
		free(dw);
		free(*w);
		*w = NULL;
		snprintf(err, errlen, "out of memory for the Doppler window");
		return -ENOMEM;
	}
	if (wf_window_fill(g->cfg.doppler_window, g->cfg.doppler_taylor_nbar,
			   g->cfg.doppler_taylor_sll_db, dw, n) < 0) {
		free(dw);
		free(*w);
		*w = NULL;
		snprintf(err, errlen, "[doppler] window %s over %u pulses: cannot be made",
			 wf_window_name(g->cfg.doppler_window), n);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++)
		(*w)[i] = (float)dw[i];
	free(dw);
	return 0;
}

/* ---- the start-up decisions' cache (capcache.h) ---------------------- */

/* [processing] capacity_cache resolved: auto is the unit's StateDirectory
 * (systemd sets $STATE_DIRECTORY; the first of a list), none outside it. */
static void gen_cache_path(const struct chirp_config *c, char *path, size_t len)
{
	const char *sd = getenv("STATE_DIRECTORY");

	path[0] = '\0';
	if (strcmp(c->capacity_cache, "auto") != 0)
		snprintf(path, len, "%s", c->capacity_cache);
	else if (sd && sd[0] == '/')
		snprintf(path, len, "%.*s/capacity", (int)strcspn(sd, ":"), sd);
}

/* 64-bit FNV-1a: the key's digest of everything the figures depend on. */
static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/*
 * The cache key of g's work: chirpd's version and build (the running
 * binary's size and mtime: a rebuild or an upgrade measures afresh), the
 * device line (pc_device_identity: GPU, driver, CUDA libraries, or CPU
 * and FFTW), the CPI, and a digest of the device line, the filters'
 * lengths (they decide nfft = auto) and every field of workkey.c's table
 * (workkey_describe: [processing], the formats, the radar chain). 0, or
 * -1 when the device cannot be named or the description does not fit
 * (then nothing is cached: a truncated one could name two works alike).
 */
static int gen_cache_key(const struct gen *g, const struct pc_params *pp, char *key, size_t len)
{
	const struct chirp_config *c = &g->cfg;
	char dev[256], desc[WORKKEY_DESC_MAX], mode[48];
	struct stat sb;
	uint64_t h;

	if (pc_device_identity(pp, dev, sizeof(dev)) < 0)
		return -1;
	if (workkey_describe(c, desc, sizeof(desc)) >= sizeof(desc)) {
		log_warn("capacity cache: the work's description exceeds %zu bytes; not cached",
			 sizeof(desc));
		return -1;
	}
	if (stat("/proc/self/exe", &sb) != 0)
		memset(&sb, 0, sizeof(sb));
	h = fnv1a(dev, 14695981039346656037ull);
	for (unsigned i = 0; i < g->nmodes; i++) {
		snprintf(mode, sizeof(mode), "mode=%u:%zu ", g->modes[i].id, g->modes[i].ref_len);
		h = fnv1a(mode, h);
	}
	h = fnv1a(desc, h);
	snprintf(key, len, "chirpd %s build %lld-%lld | %s | %ux%ux%u | %016llx", chirpd_version,
		 (long long)sb.st_size, (long long)sb.st_mtime, dev, c->channels, c->pulses,
		 c->samples, (unsigned long long)h);
	return 0;
}

/* Look g's entry up before its pc is built (g->cache_hit, g->cached). */
static void gen_cache_lookup(struct gen *g, const struct pc_params *pp)
{
	char err[256];
	int rc;

	gen_cache_path(&g->cfg, g->cache_path, sizeof(g->cache_path));
	if (!g->cache_path[0] || gen_cache_key(g, pp, g->cache_key, sizeof(g->cache_key)) < 0) {
		g->cache_path[0] = '\0';
		return;
	}
	rc = capcache_lookup(g->cache_path, g->cache_key, &g->cached, err, sizeof(err));
	if (rc < 0)
		log_warn("capacity cache: %s; measuring", err);
	g->cache_hit = rc == 1;
}

/* References and pc for g->cfg. streams = auto measures depths on the GPU
 * for a second or two: on a reload that leaves the CPI's shape alone, the
 * depth chosen at start is kept rather than measured next to the live data
 * path. */
static int gen_build_pc(const struct daemon *d, struct gen *g, const struct gen *old,
			char *err, size_t errlen)
{
	float *window = NULL;
	struct pc_params pp = g->plan.pc;
	struct plan_diff diff;
	struct plan_beams beams;
	struct config_fault f;
	char why[256];
	int kept = 0, ret = gen_build_modes(g, err, errlen);

	if (ret < 0)
		return ret;
	if ((ret = gen_doppler_window(g, &window, err, errlen)) < 0)
		return ret;
	/* the array's files are read again: a reload takes what they hold now */
	if (plan_beams_make(&g->cfg, &beams, &f) < 0) {
		free(window);
		snprintf(err, errlen, "%s: %s", f.keys[0] ? f.keys[0] : "beams", f.why);
		return -EINVAL;
	}
	plan_beams_apply(&beams, &pp);
	pp.radar.window = window;
	pp.ref = g->modes[0].ref;
	pp.ref_len = g->modes[0].ref_len;
	pp.modes = g->modes;
	pp.nmodes = g->nmodes;
	gen_cache_lookup(g, &pp);
	if (old)
		plan_compare(&old->plan, &g->plan, &diff);
	if (old && pp.streams == 0 && old->cfg.streams == 0 && old->info.depth_choice[0] &&
	    diff.same_shape) {
		pp.streams = old->info.depth;
		kept = 1;
	} else if (pp.streams == 0 && g->cache_hit) {   /* auto: the depth measured before */
		pp.streams = g->cached.depth;
	}
	g->pc = pc_create(&pp, why, sizeof(why));
	free(window);          /* pc_create copied it, and the beams' arrays */
	g->beam_spacing_u = beams.spacing_u;
	plan_beams_free(&beams);
	if (!g->pc) {
		snprintf(err, errlen, "pulse compression (%s backend): %s",
			 pc_backend_name(pp.backend), why);
		return -EINVAL;
	}
	pc_get_info(g->pc, &g->info);
	g->beams = pc_beam_count(g->pc);   /* at zero pointing: no CPI yet */
	for (unsigned b = 0; b < g->beams; b++)
		pc_beam_azel(g->pc, b, &g->beam_dir[2 * b], &g->beam_dir[2 * b + 1]);
	if (g->beams)
		log_info("beams: %s, %u beams from az %.2f to %.2f deg at zero pointing%s",
			 g->cfg.beams_mode == PC_BEAMS_MVDR ? "mvdr" : "conventional", g->beams,
			 g->beam_dir[0], g->beam_dir[2 * (g->beams - 1)],
			 g->cfg.beams_monopulse && g->beams >= 2 ? ", monopulse" : "");
	if (kept)   /* auto, depth kept from old (above) */
		snprintf(g->info.depth_choice, sizeof(g->info.depth_choice), "%s",
			 old->info.depth_choice);
	else if (pp.streams && !g->cfg.streams)   /* auto, from the cache */
		snprintf(g->info.depth_choice, sizeof(g->info.depth_choice),
			 "auto: depth %u from the capacity cache", pp.streams);
	/* A reload's pc: its threads where the data path runs, before it is
	 * measured (the first pc is pinned once the plan exists). */
	if (d->plan_ready)
		daemon_bind_backend_threads(d, g->pc);
	return 0;
}

/*
 * Capacity, for slots = auto and for saying what the ring holds: old's
 * when the work is the same; the cache's when it holds g's entry (then
 * only the warm-up runs, pc_warm_up: a restart is back on its data within
 * a fraction of a second, and measuring next to live neighbours would
 * find another figure and re-size the rings they hold); else measured and
 * stored in the cache. 0 when the measurement fails and nothing else is
 * known.
 */
static void gen_measure_capacity(struct gen *g, const struct gen *old)
{
	char why[256];
	double now_cps = 0;
	int64_t now_s = (int64_t)time(NULL);

	if (old && same_work(old, g) && old->capacity_cps > 0) {
		g->capacity_cps = old->capacity_cps;
		g->capacity_measured_s = old->capacity_measured_s;
		g->shared_cps = old->shared_cps;
		g->shared_measured_s = old->shared_measured_s;
		snprintf(g->capacity_source, sizeof(g->capacity_source), "kept");
		return;
	}
	if (g->cache_hit && g->cached.depth == g->info.depth) {
		if (pc_warm_up(g->pc, why, sizeof(why)) < 0)
			log_warn("backend warm-up failed: %s", why);
		g->capacity_cps = g->cached.capacity_cps;
		g->capacity_measured_s = g->cached.measured_s;
		g->shared_cps = g->cached.shared_cps;
		g->shared_measured_s = g->cached.shared_measured_s;
		snprintf(g->capacity_source, sizeof(g->capacity_source), "cache");
		log_info("capacity: %.0f CPI/s with depth %u from the capacity cache %s (not "
			 "measured again)", g->capacity_cps, g->info.depth, g->cache_path);
		if (g->shared_cps > 0)
			log_info("capacity shared with the host's other instances: %.0f CPI/s "
				 "(host calibration, from the capacity cache)", g->shared_cps);
		return;
	}
	if (pc_calibrate(g->pc, &now_cps, why, sizeof(why)) < 0) {
		log_warn("capacity measurement failed: %s", why);
		now_cps = 0;
	}
	g->capacity_cps = now_cps;
	g->capacity_measured_s = now_s;
	snprintf(g->capacity_source, sizeof(g->capacity_source), now_cps > 0 ? "measured" : "none");
	if (now_cps <= 0)
		return;
	log_info("capacity: %.0f CPI/s (%.2f GS/s) measured with depth %u", g->capacity_cps,
		 g->capacity_cps * g->cfg.channels * g->cfg.pulses * g->cfg.samples * 1e-9,
		 g->info.depth);
	if (g->cache_path[0]) {
		struct capcache_entry e = { .depth = g->info.depth,
					    .capacity_cps = g->capacity_cps, .measured_s = now_s };

		if (capcache_store(g->cache_path, g->cache_key, &e, why, sizeof(why)) < 0)
			log_warn("capacity cache: %s: not stored", why);
	}
}

/* The geometries a and b but for the slot count. */
static int same_shape(const struct chirp_ring_geometry *a, const struct chirp_ring_geometry *b)
{
	return a->channels == b->channels && a->pulses == b->pulses &&
	       a->samples == b->samples && a->format == b->format &&
	       a->sample_rate_hz == b->sample_rate_hz;
}

/* Ring k's object as it is before g attaches it, into g->found*: what a
 * restart finds of the rings a crashed chirpd left to its peers. */
static void gen_probe_ring(struct gen *g, enum plan_ring_kind k)
{
	const struct plan_ring *pr = &g->plan.ring[k];
	struct chirp_ring_opts o;

	ring_opts(&g->cfg, &o, pr->hugepages, pr->allow_foreign_owner);
	g->found_rc[k] = chirp_ring_probe(pr->name, &o, &g->found[k], &g->found_epoch[k],
					  g->found_why[k], sizeof(g->found_why[k]));
}

/*
 * slots = auto for ring k (auto_slots), or the count of the ring that is
 * there when it has k's shape and holds from 7/8 of the rule's count to
 * twice it: a restart measures again (no capacity cache) within a few per
 * cent of the figure its predecessor sized by, and re-creating the ring
 * for that would detach the producer and consumers that stayed. A ring
 * holding less than buffer_ms is still said so (gen_report_slack).
 */
static unsigned auto_slots_ring(struct gen *g, enum plan_ring_kind k, uint64_t cpi,
				const char *which)
{
	unsigned want = auto_slots(g, cpi, which), have = g->found[k].slots;

	g->auto_want[k] = want;
	if (g->found_rc[k] == 0 && same_shape(&g->found[k], &g->plan.ring[k].geo) &&
	    have >= AUTO_SLOTS_MIN && have >= want - want / 8 && have <= 2 * (uint64_t)want)
		return have;
	return want;
}

/* slots = auto becomes a count (auto_slots_ring); a reload that changed
 * neither the work nor buffer_ms keeps the rings it has. */
static void gen_size_rings(struct gen *g, const struct gen *old)
{
	int keep = old && same_work(old, g) && old->cfg.input_buffer_ms == g->cfg.input_buffer_ms;

	for (int k = 0; k < PLAN_RINGS; k++)
		if (g->plan.ring[k].used)
			gen_probe_ring(g, (enum plan_ring_kind)k);
		else
			g->found_rc[k] = -ENOENT;
	g->slots_requested = g->cfg.input_slots;
	g->out_slots_requested = g->cfg.output_slots;
	if (!g->cfg.input_slots)
		g->cfg.input_slots = keep && !old->slots_requested ? old->cfg.input_slots :
			auto_slots_ring(g, PLAN_RING_IN,
					chirp_ring_cpi_bytes(&g->plan.ring[PLAN_RING_IN].geo), "input");
	if (!g->cfg.output_slots && g->cfg.out_mode != PC_OUT_NONE)
		g->cfg.output_slots = keep && !old->out_slots_requested ? old->cfg.output_slots :
			auto_slots_ring(g, PLAN_RING_OUT, pc_out_bytes(g->pc), "output");
	g->det_slots_requested = g->cfg.det_slots;
	if (!g->cfg.det_slots && pc_det_bytes(g->pc))
		g->cfg.det_slots = keep && !old->det_slots_requested && old->cfg.det_slots ?
			old->cfg.det_slots : auto_slots_ring(g, PLAN_RING_DET, pc_det_bytes(g->pc),
							     "detections");
	plan_set_slots(&g->plan, PLAN_RING_IN, g->cfg.input_slots);
	plan_set_slots(&g->plan, PLAN_RING_OUT, g->cfg.output_slots);
	plan_set_slots(&g->plan, PLAN_RING_DET, g->cfg.det_slots);
}

/* Borrow old's rings that the two plans share unchanged (geometry, name,
 * huge pages). */
static void gen_borrow_rings(struct gen *g, const struct gen *old)
{
	struct plan_diff d;

	plan_compare(&old->plan, &g->plan, &d);
	for (int k = 0; k < PLAN_RINGS; k++) {
		if (d.ring_kept[k] && old->ring[k]) {
			g->ring[k] = old->ring[k];
			g->ring_borrowed[k] = 1;
		}
	}
}

/* Result file k of the plan: old's descriptor for the same path (a reload
 * keeps appending to it, in order), else opened to append. */
static int gen_open_file(struct gen *g, const struct gen *old, enum plan_file_kind k,
			 char *err, size_t errlen)
{
	const struct plan_file *f = &g->plan.file[k];

	if (!f->path)
		return 0;
	if (old && old->file_fd[k] >= 0 && !strcmp(old->plan.file[k].path, f->path)) {
		g->file_fd[k] = old->file_fd[k];
		g->file_borrowed[k] = 1;
		return 0;
	}
	g->file_fd[k] = open(f->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (g->file_fd[k] < 0) {
		int e = errno;

		snprintf(err, errlen, "%s %s: %s", f->what, f->path, strerror(e));
		return -e;
	}
	return 0;
}

int gen_has_rings(const struct gen *g)
{
	for (int k = 0; k < PLAN_RINGS; k++)
		if (g->plan.ring[k].used && !g->ring[k])
			return 0;
	return 1;
}

/* Add the time since t0 to phase p; returns now. */
static uint64_t gen_lap(struct gen *g, enum gen_phase p, uint64_t t0)
{
	uint64_t now = mono_ns();

	g->t_ns[p] += now - t0;
	return now;
}

struct gen *gen_create(const struct daemon *d, const struct chirp_config *cfg,
		       struct gen *old, char *err, size_t errlen)
{
	struct gen *g = calloc(1, sizeof(*g));
	struct config_fault f;
	uint64_t t = mono_ns();

	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->cfg = *cfg;
	config_wf(&g->cfg);
	for (unsigned i = 0; i < g->cfg.nmodes; i++)
		config_mode_wf(&g->cfg, i);
	for (int k = 0; k < PLAN_FILES; k++)
		g->file_fd[k] = -1;
	if (plan_build(&g->plan, &g->cfg, &f) < 0) {
		snprintf(err, errlen, "%s: %s", f.keys[0] ? f.keys[0] : "configuration", f.why);
		goto fail;
	}
	t = gen_lap(g, GEN_T_PLAN, t);
	if (gen_build_pc(d, g, old, err, errlen) < 0)
		goto fail;
	t = gen_lap(g, GEN_T_BACKEND, t);
	gen_measure_capacity(g, old);
	t = gen_lap(g, GEN_T_CAPACITY, t);
	gen_size_rings(g, old);
	if (old)
		gen_borrow_rings(g, old);
	for (int k = 0; k < PLAN_FILES; k++)
		if (gen_open_file(g, old, (enum plan_file_kind)k, err, errlen) < 0)
			goto fail;
	return g;
fail:
	gen_destroy(g);
	return NULL;
}

/* A producer's ring continues the previous chirpd's stream when it
 * stopped cleanly: we resume the input where it left off, and input gaps
 * come flagged (doc/ring.md, "Continuity across a restart"). */
static void gen_continue_stream(struct chirp_ring *r, const struct plan_ring *pr)
{
	struct chirp_ring_stats rst;
	int cont = chirp_ring_set_continuous(r);

	if (chirp_ring_stats(r, &rst) != 0 || rst.committed == 0)
		return;
	if (cont == 1)
		log_notice("%s ring %s: the previous chirpd stopped cleanly; continuing its stream",
			   pr->what, pr->name);
	else
		log_notice("%s ring %s: the previous producer did not stop cleanly; the first "
			   "record carries DISCONTINUITY", pr->what, pr->name);
}

/* The first field in which have and want differ, "slots 240, want 264",
 * into buf ("" when none does). */
static void geo_diff(const struct chirp_ring_geometry *have,
		     const struct chirp_ring_geometry *want, char *buf, size_t len)
{
	static const struct { const char *name; size_t off; } f[] = {
		{ "channels", offsetof(struct chirp_ring_geometry, channels) },
		{ "pulses", offsetof(struct chirp_ring_geometry, pulses) },
		{ "samples", offsetof(struct chirp_ring_geometry, samples) },
		{ "format", offsetof(struct chirp_ring_geometry, format) },
		{ "slots", offsetof(struct chirp_ring_geometry, slots) },
	};

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint32_t a, b;

		memcpy(&a, (const char *)have + f[i].off, sizeof(a));
		memcpy(&b, (const char *)want + f[i].off, sizeof(b));
		if (a != b) {
			snprintf(buf, len, "%s %u, want %u", f[i].name, a, b);
			return;
		}
	}
	if (have->sample_rate_hz != want->sample_rate_hz)
		snprintf(buf, len, "sample_rate_hz %g, want %g", have->sample_rate_hz,
			 want->sample_rate_hz);
}

/*
 * Say what became of ring k's object (g->found*, probed at build): reused
 * (its epoch kept: the peers attached to it stay), created (none was
 * there) or re-created, with why: its peers see -ESTALE and must attach
 * again.
 */
static void gen_log_ring_fate(struct gen *g, enum plan_ring_kind k)
{
	const struct plan_ring *pr = &g->plan.ring[k];
	struct chirp_ring_stats st;
	char why[200];

	g->ring_reused[k] = g->found_rc[k] == 0 && chirp_ring_stats(g->ring[k], &st) == 0 &&
			    st.epoch == g->found_epoch[k];
	if (g->ring_reused[k]) {
		if (g->auto_want[k] && g->auto_want[k] != pr->geo.slots)
			log_info("%s ring %s: reused (%u slots; slots = auto gives %u, within "
				 "7/8..2x of it)", pr->what, pr->name, pr->geo.slots,
				 g->auto_want[k]);
		else
			log_info("%s ring %s: reused (%u slots)", pr->what, pr->name,
				 pr->geo.slots);
		return;
	}
	if (g->found_rc[k] == -ENOENT) {
		log_info("%s ring %s: created (%u slots)", pr->what, pr->name, pr->geo.slots);
		return;
	}
	if (g->found_rc[k] == 0) {
		geo_diff(&g->found[k], &pr->geo, why, sizeof(why));
		if (!why[0])
			snprintf(why, sizeof(why), "another layout or ABI");
	} else {
		snprintf(why, sizeof(why), "%s", g->found_why[k]);
	}
	log_notice("%s ring %s: %s: re-created (its peers attach again)", pr->what, pr->name, why);
}

/* Ring k of g's plan, created (the input ring as the consumer, re-attached
 * by chirp_ring_create; the others as the producer) and bound to the data
 * path's node. */
static int gen_attach_ring(const struct daemon *d, struct gen *g, enum plan_ring_kind k,
			   char *err, size_t errlen)
{
	const struct plan_ring *pr = &g->plan.ring[k];
	struct chirp_ring_opts opts;
	char why[256];
	void *base;
	size_t len;

	ring_opts(&g->cfg, &opts, pr->hugepages, pr->allow_foreign_owner);
	g->ring[k] = chirp_ring_create(pr->name, &pr->geo, pr->role, &opts, why, sizeof(why));
	if (!g->ring[k]) {
		snprintf(err, errlen, "%s ring %s: %s", pr->what, pr->name, why);
		return -EIO;
	}
	gen_log_ring_fate(g, k);
	if (pr->role == CHIRP_RING_PRODUCER)
		gen_continue_stream(g->ring[k], pr);
	if (d->plan.node >= 0) {
		chirp_ring_data(g->ring[k], &base, &len);
		if (sysnuma_bind_memory(base, len, d->plan.node, why, sizeof(why)) < 0)
			log_warn("%s ring: %s", pr->what, why);
	}
	return 0;
}

int gen_attach(const struct daemon *d, struct gen *g, int *created, char *err, size_t errlen)
{
	char why[256];
	uint64_t t;
	int rc;

	t = mono_ns();

	if (created)
		*created = 0;
	for (int k = 0; k < PLAN_RINGS; k++) {
		if (g->ring[k] || !g->plan.ring[k].used)
			continue;
		if ((rc = gen_attach_ring(d, g, (enum plan_ring_kind)k, err, errlen)) < 0)
			return rc;
		if (created)
			*created |= 1 << k;
	}
	t = gen_lap(g, GEN_T_RINGS, t);
	if (!g->pg) {
		g->pg = pipeline_gen_create(g->ring[PLAN_RING_IN], g->ring[PLAN_RING_OUT], g->pc,
					    g->file_fd[PLAN_FILE_OUT], d->plan.node, why, sizeof(why));
		if (g->pg && pipeline_gen_set_detections(g->pg, g->ring[PLAN_RING_DET], g->file_fd[PLAN_FILE_DET],
							 d->plan.node,
							 why, sizeof(why)) < 0) {
			pipeline_gen_destroy(g->pg);
			g->pg = NULL;
		}
		if (!g->pg) {
			snprintf(err, errlen, "%s", why);
			return -EINVAL;
		}
	}
	gen_lap(g, GEN_T_PIPELINE, t);
	{
		/* staging may have changed; the depth's story is gen_build_pc's */
		char choice[sizeof(g->info.depth_choice)];

		memcpy(choice, g->info.depth_choice, sizeof(choice));
		pc_get_info(g->pc, &g->info);
		memcpy(g->info.depth_choice, choice, sizeof(choice));
	}
	return 0;
}
