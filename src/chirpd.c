/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirpd — real-time radar pulse-compression daemon.
 *
 *   chirpd -c FILE            run in the foreground (systemd Type=notify)
 *   chirpd --check -c FILE    validate FILE, print the effective configuration
 *
 * Structure (doc/daemon.md has the operator's view):
 *   - main thread: one epoll loop over a signalfd (TERM/INT: drain and exit
 *     0; HUP: reload), a timerfd (100 ms: watchdog, rates, STATUS), the
 *     control socket's fd, the metrics HTTP fd (optional) and an eventfd
 *     the data thread writes when it fails or stops. Every control command
 *     and reload runs here.
 *   - data thread (pipeline.c): input ring -> pc -> output ring, pinned,
 *     optionally SCHED_FIFO, never waiting on the main thread.
 *   - a "generation" (struct gen) is everything one configuration uses:
 *     rings, pc, output file, reference. A reload builds a new generation
 *     next to the running one (sharing rings whose geometry is unchanged),
 *     hands it to the data thread at a CPI boundary and destroys the old.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-daemon.h>

#include "chirp/pc.h"
#include "chirp/ring.h"
#include "config.h"
#include "control.h"
#include "log.h"
#include "metrics.h"
#include "pipeline.h"
#include "stall.h"
#include "stats.h"
#include "sysnuma.h"
#include "trace.h"
#include "waveform.h"

#ifndef CHIRP_VERSION
#define CHIRP_VERSION "0.1"
#endif

#define TICK_MS            100      /* timerfd period                        */
#define STATS_PERIOD_NS    1000000000ull
#define DRAIN_TIMEOUT_MS   1800     /* SIGTERM: exit within 2 s              */
#define SWAP_TIMEOUT_MS    5000     /* reload: data path reaches a CPI boundary */
#define METRICS_BUF        (64 * 1024)
#define AUTO_SLOTS_MIN     16       /* slots = auto never sizes below this    */
#define OVER_LOG_NS        1000000000ull   /* over-budget lines: at most 1/s  */

enum ev_tag { EV_SIGNAL = 1, EV_TIMER, EV_CONTROL, EV_PIPE, EV_HTTP };

/* One configuration's resources. Rings and the output fd may be shared
 * with the previous generation (borrowed) until the swap succeeds. */
struct gen {
	struct chirp_config cfg;
	float *ref;
	size_t ref_len;
	struct pc *pc;
	struct pc_info info;
	struct chirp_ring *in, *out;
	int in_borrowed, out_borrowed;
	int out_fd, fd_borrowed;
	struct pipeline_gen *pg;
	double capacity_cps;              /* pc_calibrate at creation, CPI/s (0: unknown) */
	unsigned slots_requested;         /* [input] slots as configured (0 = auto) */
	unsigned out_slots_requested;     /* [output] slots as configured (0 = auto) */
};

struct daemon {
	const char *config_path;
	struct gen *g;
	struct stats *st;
	struct pipeline *pl;
	struct control *ctl;
	struct metrics_http *mh;
	int epfd, sigfd, tfd, efd;

	struct sysnuma_plan plan;
	int plan_ready;                   /* plan resolved (after the first pc) */
	struct sysnuma_applied applied;   /* data thread + memory lock        */
	char housekeeping[256];           /* cpus of the main thread when moved
					     off [numa] cpus ("" = not moved) */
	int memory_locked;
	char memory_note[160];

	uint64_t start_ns;                /* CLOCK_MONOTONIC                   */
	uint64_t wd_usec;                 /* 0 = no watchdog                   */
	uint64_t wd_last_ns, wd_last_hb;
	uint64_t wd_pings;
	int wd_stalled;                   /* logged once per stall              */

	struct trace *trace;              /* flight recorder ([trace] records) */
	struct trace_cpi *trace_buf;      /* the recorder's size, for replies   */
	uint64_t over_logged;             /* over_last value already logged    */
	uint64_t over_count_logged;       /* ST_OVER_BUDGET when last logged   */
	uint64_t over_log_ns;

	struct stats_snapshot *snap_prev, *snap_now, *snap_delta;
	uint64_t stats_last_ns;
	double samples_per_s, cpis_per_s;

	int stopping;
	uint64_t stop_deadline_ns;
	int failed_reported;
	int exit_code;
	char *mbuf;                       /* metrics text for the control reply */
	char last_reload_error[256];
	int broken;                       /* a failed reload left no rings     */
	char broken_why[320];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- generations ------------------------------------------------------ */

static int same_geometry(const struct chirp_ring_geometry *a, const struct chirp_ring_geometry *b)
{
	return a->channels == b->channels && a->pulses == b->pulses && a->samples == b->samples &&
	       a->format == b->format && a->slots == b->slots &&
	       a->sample_rate_hz == b->sample_rate_hz;
}

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

static void gen_destroy(struct gen *g)
{
	if (!g)
		return;
	pipeline_gen_destroy(g->pg);      /* before the pc it registered with */
	pc_destroy(g->pc);
	if (g->in && !g->in_borrowed)
		chirp_ring_detach(g->in);
	if (g->out && !g->out_borrowed)
		chirp_ring_detach(g->out);
	if (g->out_fd >= 0 && !g->fd_borrowed)
		close(g->out_fd);
	free(g->ref);
	free(g);
}

/*
 * Build a generation for cfg, in two steps. gen_create: reference, pc,
 * output file, and the rings of old (a reload) whose geometry is unchanged
 * (borrowed); a ring that must change is left NULL. gen_attach: create the
 * missing rings (a new input ring retires the old one: producers see
 * -ESTALE and re-attach) and the pipeline generation. Between the two a
 * reload parks the data thread and lets go of the old rings, because a
 * ring cannot be re-created while we are still attached to it.
 */
/* Whether CPIs of x's and y's configurations are the same work for the
 * backend: shape, formats, device and how it is fed (what both tests
 * below need; the keys that are restart-only are equal on a reload). */
static int same_cpi(const struct chirp_config *x, const struct chirp_config *y)
{
	return x->channels == y->channels && x->pulses == y->pulses &&
	       x->samples == y->samples && x->format == y->format && x->out_mode == y->out_mode &&
	       x->gpu == y->gpu && x->busy_poll == y->busy_poll && x->staging == y->staging &&
	       x->idle_spin_us == y->idle_spin_us &&
	       x->staging_threads == y->staging_threads;
}

/* Whether a CPI of x's configuration keeps the CUDA depth streams = auto
 * chose for y's (checked before the new pc exists). */
static int same_shape(const struct chirp_config *x, const struct chirp_config *y)
{
	return same_cpi(x, y) && x->backend == y->backend &&
	       !strcmp(x->gpu_bus_id, y->gpu_bus_id) && x->nfft == y->nfft;
}

/* Whether a and b's pcs do the same work on the same device, so a
 * capacity measured for one holds for the other (a reload that changed
 * nothing of the kind need not measure again under live load). */
static int same_work(const struct gen *a, const struct gen *b)
{
	return a->info.backend == b->info.backend && a->info.nfft == b->info.nfft &&
	       a->info.depth == b->info.depth && same_cpi(&a->cfg, &b->cfg) &&
	       a->cfg.cpu_threads == b->cfg.cpu_threads;
}

/*
 * slots = auto for a ring of cpi-byte slots: the smallest power of two
 * that holds [input] buffer_ms of CPIs at the measured capacity, at least
 * AUTO_SLOTS_MIN, and no more than an eighth of the machine's memory (then
 * the largest that fits, with a warning: the operator asked for more slack
 * than the host can pin). The output ring gets the same time as the input
 * ring: after a stall chirpd delivers its backlog at full capacity, and a
 * consumer must be able to fall behind by as long without results lost.
 */
static unsigned auto_slots(const struct gen *g, uint64_t cpi, const char *which)
{
	double want = ceil(g->cfg.input_buffer_ms * 1e-3 * g->capacity_cps);
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t budget = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 8 : 0;
	unsigned n = AUTO_SLOTS_MIN;

	while (n < 65536 && n < want)
		n *= 2;
	if (budget && cpi) {
		unsigned fit = n;

		while (fit > 2 && (uint64_t)fit * cpi > budget)
			fit /= 2;
		if (fit < n) {
			log_warn("[%s] slots = auto: %u slots (%.0f ms at %.0f CPI/s) would take more "
				 "than an eighth of this machine's memory; using %u",
				 which, n, g->cfg.input_buffer_ms, g->capacity_cps, fit);
			n = fit;
		}
	}
	return n;
}

/* Milliseconds of input the ring of n slots holds at rate cps (0: unknown). */
static double ring_ms(unsigned n, double cps)
{
	return cps > 0 ? (double)n / cps * 1e3 : 0;
}

static unsigned in_ring_slots(const struct gen *g)
{
	struct chirp_ring_geometry geo;

	if (!g->in)
		return g->cfg.input_slots;
	chirp_ring_geometry(g->in, &geo);
	return geo.slots;
}

/* Say how much time the input ring holds at capacity; warn below buffer_ms. */
static void report_slack(const struct gen *g)
{
	unsigned n = in_ring_slots(g);
	double ms = ring_ms(n, g->capacity_cps);

	if (g->capacity_cps <= 0) {
		log_warn("input ring %s: %u slots; capacity unknown (measurement failed), so the "
			 "time they hold is unknown", g->cfg.input_ring, n);
		return;
	}
	log_info("input ring %s: %u slots = %.1f ms at the measured capacity of %.0f CPI/s "
		 "(%s, buffer_ms %g); output ring %s: %u slots = %.1f ms", g->cfg.input_ring, n, ms,
		 g->capacity_cps, g->slots_requested ? "slots fixed" : "slots = auto",
		 g->cfg.input_buffer_ms, g->cfg.output_ring, g->cfg.output_slots,
		 ring_ms(g->cfg.output_slots, g->capacity_cps));
	if (ms < g->cfg.input_buffer_ms) {
		unsigned need = 2;

		while (need < 65536 && ring_ms(need, g->capacity_cps) < g->cfg.input_buffer_ms)
			need *= 2;
		log_warn("input ring %s holds only %.1f ms of CPIs at capacity, less than [input] "
			 "buffer_ms = %g: a stall longer than that loses CPIs (slots = auto, or "
			 "slots = %u)", g->cfg.input_ring, ms, g->cfg.input_buffer_ms, need);
	}
}

/*
 * The backend's own threads (FFTW workers, staging copiers) were made by
 * the main thread and inherit its affinity; run them on the data path's
 * cpus ([numa] cpus, or the node's), as the data thread is. Not fatal:
 * unpinned threads compute the same, with a warning.
 */
static void bind_backend_threads(const struct daemon *d, struct pc *pc)
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
 * With [numa] cpus naming the data path's CPUs, the main thread (the event
 * loop, the control socket, the FFT planning of a reload) and every thread
 * it starts from now on (the metrics server; the data thread and the
 * backend's workers pin themselves after) move to the node's other CPUs,
 * so that nothing of chirpd's own competes with the data path for its
 * CPUs. Unless none is left: then they stay where they are. Without
 * [numa] cpus the data path has the whole node and nothing moves.
 */
static void move_housekeeping(struct daemon *d, const struct chirp_config *cfg)
{
	cpu_set_t allowed, node_cpus, hk;
	char data[256];
	int rc, have_node;

	d->housekeeping[0] = '\0';
	if (!cfg->cpus[0] || !d->plan.have_cpus)
		return;
	rc = pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed);
	if (rc) {
		log_warn("numa: pthread_getaffinity_np: %s; the main thread stays where it is",
			 strerror(rc));
		return;
	}
	have_node = d->plan.node >= 0 && sysnuma_node_cpus(d->plan.node, &node_cpus) > 0;
	sysnuma_format_cpus(&d->plan.cpus, data, sizeof(data));
	if (sysnuma_housekeeping(&allowed, have_node ? &node_cpus : NULL, &d->plan.cpus, &hk) == 0) {
		log_info("numa: no cpu besides the data path's (%s) for the main loop: it shares them",
			 data);
		return;
	}
	rc = pthread_setaffinity_np(pthread_self(), sizeof(hk), &hk);
	if (rc) {
		log_warn("numa: main loop not moved off the data path's cpus: pthread_setaffinity_np: %s",
			 strerror(rc));
		return;
	}
	sysnuma_format_cpus(&hk, d->housekeeping, sizeof(d->housekeeping));
	log_info("numa: main loop, control and metrics on cpus %s (the data path has %s)",
		 d->housekeeping, data);
}

static struct gen *gen_create(const struct daemon *d, const struct chirp_config *cfg,
			      struct gen *old, char *err, size_t errlen)
{
	struct gen *g = calloc(1, sizeof(*g));
	struct chirp_ring_geometry gi, go, ogi, ogo;
	struct pc_params pp;
	char why[256];

	(void)d;
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->cfg = *cfg;
	g->out_fd = -1;
	if (wf_build(config_wf(&g->cfg), g->cfg.samples, &g->ref, &g->ref_len, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "[waveform] %s", why);
		goto fail;
	}
	config_pc_params(&g->cfg, &pp);
	pp.ref = g->ref;
	pp.ref_len = g->ref_len;
	/* streams = auto measures depths on the GPU for a second or two: on a
	 * reload that leaves the CPI's shape alone, keep the depth chosen at
	 * start rather than measure next to the live data path. */
	if (old && pp.streams == 0 && old->cfg.streams == 0 && old->info.depth_choice[0] &&
	    same_shape(&old->cfg, &g->cfg))
		pp.streams = old->info.depth;
	g->pc = pc_create(&pp, why, sizeof(why));
	if (!g->pc) {
		snprintf(err, errlen, "pulse compression (%s backend): %s",
			 pc_backend_name(pp.backend), why);
		goto fail;
	}
	pc_get_info(g->pc, &g->info);
	if (pp.streams && !g->cfg.streams)   /* auto, depth kept from old (above) */
		snprintf(g->info.depth_choice, sizeof(g->info.depth_choice), "%s",
			 old->info.depth_choice);
	/* A reload's pc: its threads where the data path runs, before it is
	 * measured (the first pc is pinned once the plan exists). */
	if (d->plan_ready)
		bind_backend_threads(d, g->pc);

	/* Capacity, for slots = auto and for saying what the ring holds. The
	 * measurement also warms the backend up before live data. */
	g->slots_requested = cfg->input_slots;
	if (old && same_work(old, g) && old->capacity_cps > 0) {
		g->capacity_cps = old->capacity_cps;
	} else if (pc_calibrate(g->pc, &g->capacity_cps, why, sizeof(why)) < 0) {
		log_warn("capacity measurement failed: %s", why);
		g->capacity_cps = 0;
	} else {
		log_info("capacity: %.0f CPI/s (%.2f GS/s) measured with depth %u",
			 g->capacity_cps, g->capacity_cps * g->cfg.channels * g->cfg.pulses *
			 g->cfg.samples * 1e-9, g->info.depth);
	}
	g->out_slots_requested = cfg->output_slots;
	{
		int keep = old && same_work(old, g) &&
			   old->cfg.input_buffer_ms == g->cfg.input_buffer_ms;
		uint64_t rows = (uint64_t)g->cfg.channels * g->cfg.pulses * g->cfg.samples;

		/* A reload that changed neither keeps the rings it has. */
		if (!g->cfg.input_slots)
			g->cfg.input_slots = keep && !old->slots_requested ? old->cfg.input_slots :
				auto_slots(g, rows * pc_format_sample_bytes(g->cfg.format), "input");
		if (!g->cfg.output_slots)
			g->cfg.output_slots = keep && !old->out_slots_requested ? old->cfg.output_slots :
				auto_slots(g, rows * pc_output_sample_bytes(g->cfg.out_mode), "output");
	}

	if (old) {
		config_ring_geometry(&g->cfg, CONFIG_RING_INPUT, &gi);
		config_ring_geometry(&g->cfg, CONFIG_RING_OUTPUT, &go);
		config_ring_geometry(&old->cfg, CONFIG_RING_INPUT, &ogi);
		config_ring_geometry(&old->cfg, CONFIG_RING_OUTPUT, &ogo);
		if (old->in && same_geometry(&gi, &ogi) &&
		    old->cfg.input_hugepages == g->cfg.input_hugepages &&
		    !strcmp(old->cfg.input_ring, g->cfg.input_ring)) {
			g->in = old->in;
			g->in_borrowed = 1;
		}
		if (old->out && same_geometry(&go, &ogo) &&
		    !strcmp(old->cfg.output_ring, g->cfg.output_ring)) {
			g->out = old->out;
			g->out_borrowed = 1;
		}
	}
	if (g->cfg.output_file[0]) {
		if (old && old->out_fd >= 0 && !strcmp(old->cfg.output_file, g->cfg.output_file)) {
			g->out_fd = old->out_fd;
			g->fd_borrowed = 1;
		} else {
			g->out_fd = open(g->cfg.output_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (g->out_fd < 0) {
				snprintf(err, errlen, "[output] file %s: %s", g->cfg.output_file, strerror(errno));
				goto fail;
			}
		}
	}
	return g;
fail:
	gen_destroy(g);
	return NULL;
}

/* Create g's missing rings and its pipeline generation. *created gets bit 0
 * for a new input ring, bit 1 for a new output ring. */
static int gen_attach(const struct daemon *d, struct gen *g, int *created, char *err, size_t errlen)
{
	struct chirp_ring_geometry geo;
	struct chirp_ring_opts opts;
	struct chirp_ring_stats rst;
	char why[256];
	void *base;
	size_t len;
	int cont;

	if (created)
		*created = 0;
	if (!g->in) {
		config_ring_geometry(&g->cfg, CONFIG_RING_INPUT, &geo);
		ring_opts(&g->cfg, &opts, g->cfg.input_hugepages, g->cfg.input_allow_foreign_owner);
		g->in = chirp_ring_create(g->cfg.input_ring, &geo, CHIRP_RING_CONSUMER, &opts,
					  why, sizeof(why));
		if (!g->in) {
			snprintf(err, errlen, "input ring %s: %s", g->cfg.input_ring, why);
			return -EIO;
		}
		if (created)
			*created |= 1;
		if (d->plan.node >= 0) {
			chirp_ring_data(g->in, &base, &len);
			if (sysnuma_bind_memory(base, len, d->plan.node, why, sizeof(why)) < 0)
				log_warn("input ring: %s", why);
		}
	}
	if (!g->out) {
		config_ring_geometry(&g->cfg, CONFIG_RING_OUTPUT, &geo);
		ring_opts(&g->cfg, &opts, 0, g->cfg.output_allow_foreign_owner);
		g->out = chirp_ring_create(g->cfg.output_ring, &geo, CHIRP_RING_PRODUCER, &opts,
					   why, sizeof(why));
		if (!g->out) {
			snprintf(err, errlen, "output ring %s: %s", g->cfg.output_ring, why);
			return -EIO;
		}
		if (created)
			*created |= 2;
		/* Our results continue the previous chirpd's when it stopped
		 * cleanly: we resume the input where it left off, and input gaps
		 * come flagged (doc/ring.md, "Continuity across a restart"). */
		cont = chirp_ring_set_continuous(g->out);
		if (chirp_ring_stats(g->out, &rst) == 0 && rst.committed > 0) {
			if (cont == 1)
				log_notice("output ring %s: the previous chirpd stopped cleanly; "
					   "continuing its stream", g->cfg.output_ring);
			else
				log_notice("output ring %s: the previous producer did not stop "
					   "cleanly; the first result carries DISCONTINUITY",
					   g->cfg.output_ring);
		}
		if (d->plan.node >= 0) {
			chirp_ring_data(g->out, &base, &len);
			if (sysnuma_bind_memory(base, len, d->plan.node, why, sizeof(why)) < 0)
				log_warn("output ring: %s", why);
		}
	}
	if (!g->pg) {
		g->pg = pipeline_gen_create(g->in, g->out, g->pc, g->out_fd, d->plan.node,
					    why, sizeof(why));
		if (!g->pg) {
			snprintf(err, errlen, "%s", why);
			return -EINVAL;
		}
	}
	pc_get_info(g->pc, &g->info);     /* staging may have changed */
	return 0;
}

/* ---- systemd ------------------------------------------------------------ */

static const char *state_name(const struct daemon *d)
{
	if (d->stopping)
		return "stopping";
	if (d->broken)
		return "failed";
	return d->pl ? pipeline_state_name(pipeline_state(d->pl)) : "starting";
}

static void status_line(struct daemon *d, char *buf, size_t len)
{
	uint64_t p99 = 0;
	const struct stats_snapshot *s = d->snap_now;

	if (d->pl && pipeline_state(d->pl) == PIPE_FAILED) {
		snprintf(buf, len, "failed: %s", pipeline_error(d->pl));
		return;
	}
	if (d->broken) {
		snprintf(buf, len, "failed: %s", d->broken_why);
		return;
	}
	if (d->snap_delta->lat_count)
		p99 = stats_percentile(d->snap_delta, 0.99);
	snprintf(buf, len, "%s: %.1f CPI/s, %.2f MS/s, p99 %.2f ms, in %llu out %llu, "
		 "drops %llu, overruns %llu, gaps %llu%s%s",
		 state_name(d), d->cpis_per_s, d->samples_per_s * 1e-6, (double)p99 * 1e-6,
		 (unsigned long long)s->counter[ST_CPIS_IN], (unsigned long long)s->counter[ST_CPIS_OUT],
		 (unsigned long long)s->counter[ST_OUTPUT_DROPS],
		 (unsigned long long)s->counter[ST_INPUT_OVERRUNS],
		 (unsigned long long)s->counter[ST_SEQUENCE_GAPS],
		 d->last_reload_error[0] ? "; last reload failed: " : "", d->last_reload_error);
}

static void notify_status(struct daemon *d)
{
	char line[512];

	status_line(d, line, sizeof(line));
	sd_notifyf(0, "STATUS=%s", line);
}

/* ---- stats -------------------------------------------------------------- */

static void stats_tick(struct daemon *d)
{
	struct stats_snapshot *t;
	double dt;

	t = d->snap_prev;
	d->snap_prev = d->snap_now;
	d->snap_now = t;
	stats_snapshot(d->st, d->snap_now);
	stats_delta(d->snap_prev, d->snap_now, d->snap_delta);
	dt = (double)d->snap_delta->taken_ns * 1e-9;
	if (dt > 0) {
		d->samples_per_s = (double)d->snap_delta->counter[ST_SAMPLES_IN] / dt;
		d->cpis_per_s = (double)d->snap_delta->counter[ST_CPIS_OUT] / dt;
	}
}

static int render_metrics(void *ctx, char *buf, size_t len)
{
	struct daemon *d = ctx;
	static struct stats_snapshot sn;   /* main thread only; 8 KiB off the stack */
	struct control_stats cs = { 0 };
	struct metrics_info mi = {
		.state = state_name(d),
		.backend = pc_backend_name(d->g->info.backend),
		.version = CHIRP_VERSION,
		.uptime_s = (double)(mono_ns() - d->start_ns) * 1e-9,
		.samples_per_s = d->samples_per_s,
		.cpis_per_s = d->cpis_per_s,
		.numa_node = d->applied.node,
		.realtime = d->applied.realtime,
	};

	if (d->ctl) {
		control_get_stats(d->ctl, &cs);
		mi.control_clients = cs.clients;
	}
	stats_snapshot(d->st, &sn);
	return metrics_format(&sn, &mi, buf, len);
}

/* ---- reload ------------------------------------------------------------- */

static uint64_t mono_usec(void)
{
	return mono_ns() / 1000;
}

/*
 * Parse the configuration file again and apply it between CPIs. reply may
 * be NULL (SIGHUP). Returns 0 or a negative errno with err set; the old
 * configuration keeps running on any error.
 */
static int do_reload(struct daemon *d, json_t *reply, char *err, size_t errlen)
{
	struct chirp_config *nc = NULL;
	struct gen *ng = NULL;
	struct pipeline_gen *oldpg = NULL;
	char *ebuf = NULL, keys[512], why[256];
	size_t elen = 0;
	FILE *ef = NULL;
	int nerr, recreated = 0, ret;
	uint64_t t0 = mono_ns();

	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
		   (unsigned long long)mono_usec(), d->config_path);
	log_info("reloading %s", d->config_path);
	if (d->stopping) {
		snprintf(err, errlen, "chirpd is stopping");
		ret = -ESHUTDOWN;
		goto out;
	}
	nc = malloc(sizeof(*nc));
	ef = open_memstream(&ebuf, &elen);
	if (!nc || !ef) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	nerr = config_load(nc, d->config_path, ef);
	fclose(ef);
	ef = NULL;
	if (nerr != 0) {
		json_t *arr = json_array();
		char *line, *save = NULL;

		if (nerr < 0)
			snprintf(err, errlen, "%s: %s", d->config_path, strerror(-nerr));
		else
			snprintf(err, errlen, "%d error%s in %s; keeping the running configuration",
				 nerr, nerr == 1 ? "" : "s", d->config_path);
		for (line = strtok_r(ebuf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			log_err("reload: %s", line);
			if (arr)
				json_array_append_new(arr, json_string(line));
			if (nerr > 0 && arr && json_array_size(arr) == 1)
				snprintf(err, errlen, "%s (%d error%s; running configuration kept)",
					 line, nerr, nerr == 1 ? "" : "s");
		}
		if (reply && arr)
			json_object_set_new(reply, "errors", arr);
		else
			json_decref(arr);
		ret = -EINVAL;
		goto out;
	}
	/* Restart-only keys keep their running values: what runs, what
	 * `config` shows and the reply's restart_keys agree. */
	if (config_restart_keys(&d->g->cfg, nc, keys, sizeof(keys)) > 0)
		log_warn("reload: changed keys need a restart and keep their running values: %s", keys);
	config_hold_restart_keys(&d->g->cfg, nc);

	ng = gen_create(d, nc, d->g, err, errlen);
	if (!ng) {
		ret = -EINVAL;
		goto out;
	}
	if (ng->in && ng->out) {
		/* Rings kept: build next to the running generation, swap at a
		 * CPI boundary. */
		ret = gen_attach(d, ng, &recreated, err, errlen);
		if (ret < 0)
			goto out;
		ret = pipeline_swap(d->pl, ng->pg, &oldpg, SWAP_TIMEOUT_MS, why, sizeof(why));
		if (ret < 0) {
			snprintf(err, errlen, "reload not applied: %s", why);
			goto out;
		}
	} else {
		struct gen *og = d->g;

		/* A ring changes: park the data thread (CPIs in flight finish),
		 * let go of the old ring(s), create the new ones, swap in. */
		ret = pipeline_swap(d->pl, NULL, &oldpg, SWAP_TIMEOUT_MS, why, sizeof(why));
		if (ret < 0) {
			snprintf(err, errlen, "reload not applied: %s", why);
			goto out;
		}
		pipeline_gen_destroy(og->pg);
		og->pg = NULL;
		if (!ng->in && og->in) {
			chirp_ring_detach(og->in);
			og->in = NULL;
		}
		if (!ng->out && og->out) {
			chirp_ring_detach(og->out);
			og->out = NULL;
		}
		ret = gen_attach(d, ng, &recreated, err, errlen);
		if (ret == 0) {
			ret = pipeline_swap(d->pl, ng->pg, &oldpg, SWAP_TIMEOUT_MS, why, sizeof(why));
			if (ret < 0)
				snprintf(err, errlen, "reload not applied: %s", why);
		}
		if (ret < 0) {
			/* Roll back to the old geometry: drop what the new
			 * generation created first (a ring cannot be re-created
			 * while attached), then restore the old rings. */
			char e2[256];

			gen_destroy(ng);
			ng = NULL;
			if (gen_attach(d, og, NULL, e2, sizeof(e2)) < 0 ||
			    pipeline_swap(d->pl, og->pg, &oldpg, SWAP_TIMEOUT_MS, e2, sizeof(e2)) < 0) {
				d->broken = 1;
				snprintf(d->broken_why, sizeof(d->broken_why),
					 "reload could not restore the previous rings: %s", e2);
				log_err("%s; data path parked", d->broken_why);
				sd_notifyf(0, "STATUS=failed: %s", d->broken_why);
			}
			goto out;
		}
	}
	/* The new generation now owns what it borrowed. */
	if (ng->in_borrowed) {
		d->g->in = NULL;
		ng->in_borrowed = 0;
	}
	if (ng->out_borrowed) {
		d->g->out = NULL;
		ng->out_borrowed = 0;
	}
	if (ng->fd_borrowed) {
		d->g->out_fd = -1;
		ng->fd_borrowed = 0;
	}
	gen_destroy(d->g);
	d->g = ng;
	pipeline_set_budget(d->pl, (uint64_t)(ng->cfg.latency_budget_ms * 1e6));
	report_slack(ng);
	ng = NULL;
	log_set_level(d->g->cfg.log_level);
	stats_add(d->st, ST_RELOADS, 1);
	d->last_reload_error[0] = 0;
	d->broken = 0;
	log_notice("reloaded %s in %.1f ms%s%s%s%s", d->config_path, (double)(mono_ns() - t0) * 1e-6,
		   recreated & 1 ? "; input ring re-created (new epoch)" : "",
		   recreated & 2 ? "; output ring re-created" : "",
		   keys[0] ? "; needs restart: " : "", keys);
	if (reply) {
		json_t *rk = json_array();
		char *k, *save = NULL;

		for (k = strtok_r(keys, ",", &save); k && rk; k = strtok_r(NULL, ",", &save))
			json_array_append_new(rk, json_string(k));
		json_object_set_new(reply, "reloaded", json_true());
		json_object_set_new(reply, "config", json_string(d->config_path));
		json_object_set_new(reply, "restart_keys", rk ? rk : json_array());
		json_object_set_new(reply, "input_ring_recreated", json_boolean(recreated & 1));
		json_object_set_new(reply, "output_ring_recreated", json_boolean(recreated & 2));
		json_object_set_new(reply, "ms", json_real((double)(mono_ns() - t0) * 1e-6));
	}
	ret = 0;
out:
	if (ef)
		fclose(ef);
	free(ebuf);
	if (ng) {
		/* Borrowed rings stay with the running generation. */
		gen_destroy(ng);
	}
	free(nc);
	if (ret < 0) {
		stats_add(d->st, ST_RELOAD_FAILURES, 1);
		snprintf(d->last_reload_error, sizeof(d->last_reload_error), "%s", err);
		log_err("reload failed: %s", err);
	}
	sd_notify(0, "READY=1");
	notify_status(d);
	return ret;
}

/* ---- control commands --------------------------------------------------- */

static int cmd_version(void *ctx, const char *args, const struct control_peer *peer,
		       json_t *reply, char *err, size_t errlen)
{
	(void)ctx; (void)args; (void)peer; (void)err; (void)errlen;
	json_object_set_new(reply, "version", json_string(CHIRP_VERSION));
	json_object_set_new(reply, "ring_abi", json_integer(CHIRP_RING_ABI_VERSION));
	json_object_set_new(reply, "cuda_built", json_boolean(
#ifdef CHIRP_HAVE_CUDA
		1
#else
		0
#endif
		));
	return 0;
}

static int cmd_status(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	const struct chirp_config *c = &d->g->cfg;
	static const char *const rt_names[] = { "off", "preferred", "required" };
	struct chirp_ring_stats rs;
	char line[512];

	(void)args; (void)peer; (void)err; (void)errlen;
	json_object_set_new(reply, "state", json_string(state_name(d)));
	if (d->pl && pipeline_state(d->pl) == PIPE_FAILED)
		json_object_set_new(reply, "error", json_string(pipeline_error(d->pl)));
	status_line(d, line, sizeof(line));
	json_object_set_new(reply, "summary", json_string(line));
	json_object_set_new(reply, "version", json_string(CHIRP_VERSION));
	json_object_set_new(reply, "pid", json_integer(getpid()));
	json_object_set_new(reply, "uptime_s", json_real((double)(mono_ns() - d->start_ns) * 1e-9));
	json_object_set_new(reply, "config_path", json_string(d->config_path));
	json_object_set_new(reply, "backend", json_string(pc_backend_name(d->g->info.backend)));
	json_object_set_new(reply, "device", json_string(d->g->info.device));
	json_object_set_new(reply, "staging", json_string(d->g->info.staging));
	json_object_set_new(reply, "staging_threads", json_integer(d->g->info.staging_threads));
	json_object_set_new(reply, "nfft", json_integer((json_int_t)d->g->info.nfft));
	json_object_set_new(reply, "depth", json_integer(d->g->info.depth));
	json_object_set_new(reply, "depth_choice", json_string(d->g->info.depth_choice));
	json_object_set_new(reply, "busy_poll", json_boolean(d->g->info.busy_poll));
	json_object_set_new(reply, "idle_spin_us", json_integer(d->g->info.idle_spin_us));
	json_object_set_new(reply, "geometry", json_pack("{s:i, s:i, s:i, s:s, s:s, s:f}",
		"channels", (int)c->channels, "pulses", (int)c->pulses, "samples", (int)c->samples,
		"format", pc_format_name(c->format), "output", pc_output_name(c->out_mode),
		"sample_rate_hz", c->wf.sample_rate_hz));
	json_t *rings = json_object();
	json_object_set_new(rings, "input", json_string(c->input_ring));
	json_object_set_new(rings, "output", json_string(c->output_ring));
	if (chirp_ring_stats(d->g->in, &rs) == 0)
		json_object_set_new(rings, "input_epoch", json_integer((json_int_t)rs.epoch));
	json_object_set_new(rings, "input_slots", json_integer(in_ring_slots(d->g)));
	json_object_set_new(rings, "input_slots_auto", json_boolean(!d->g->slots_requested));
	json_object_set_new(rings, "output_slots", json_integer(c->output_slots));
	json_object_set_new(rings, "output_slots_auto", json_boolean(!d->g->out_slots_requested));
	json_object_set_new(rings, "output_ms_at_capacity",
			    json_real(ring_ms(c->output_slots, d->g->capacity_cps)));
	/* Buffer by time: what the input ring rides out, at capacity and now. */
	json_object_set_new(rings, "capacity_cpi_per_s", json_real(d->g->capacity_cps));
	json_object_set_new(rings, "input_ms_at_capacity",
			    json_real(ring_ms(in_ring_slots(d->g), d->g->capacity_cps)));
	json_object_set_new(rings, "input_ms_at_current_rate",
			    json_real(ring_ms(in_ring_slots(d->g), d->cpis_per_s)));
	json_object_set_new(rings, "buffer_ms", json_real(c->input_buffer_ms));
	json_object_set_new(reply, "rings", rings);
	json_object_set_new(reply, "numa", json_pack("{s:i, s:s, s:s, s:s, s:b, s:s}",
		"node", d->applied.node, "source", d->plan.node_source, "cpus", d->applied.cpus,
		"housekeeping_cpus", d->housekeeping,
		"memory_locked", d->memory_locked, "memory", d->memory_note));
	json_object_set_new(reply, "realtime", json_pack("{s:s, s:b, s:i, s:s}",
		"requested", rt_names[c->realtime >= 0 && c->realtime <= 2 ? c->realtime : 0],
		"applied", d->applied.realtime, "priority", d->applied.rt_priority,
		"note", d->applied.realtime_note));
	json_object_set_new(reply, "watchdog_usec", json_integer((json_int_t)d->wd_usec));
	json_object_set_new(reply, "control_socket", json_string(control_path(d->ctl)));
	json_object_set_new(reply, "metrics_listen", json_string(c->metrics_listen));
	if (d->last_reload_error[0])
		json_object_set_new(reply, "last_reload_error", json_string(d->last_reload_error));
	return 0;
}

static json_t *stage_json(const struct stats_snapshot *s, int st)
{
	uint64_t n = s->stage_count[st];

	return json_pack("{s:I, s:I, s:I}", "count", (json_int_t)n,
			 "mean_ns", (json_int_t)(n ? s->stage_sum_ns[st] / n : 0),
			 "max_ns", (json_int_t)s->stage_max_ns[st]);
}

static int cmd_stats(void *ctx, const char *args, const struct control_peer *peer,
		     json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	static struct stats_snapshot s;   /* main thread only */
	json_t *lat, *stages, *recent;

	(void)args; (void)peer; (void)err; (void)errlen;
	stats_snapshot(d->st, &s);
	for (int c = 0; c < ST_COUNTERS; c++)
		json_object_set_new(reply, stats_counter_name(c), json_integer((json_int_t)s.counter[c]));
	json_object_set_new(reply, "samples_per_s", json_real(d->samples_per_s));
	json_object_set_new(reply, "cpis_per_s", json_real(d->cpis_per_s));
	lat = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
			"count", (json_int_t)s.lat_count,
			"mean_ns", (json_int_t)(s.lat_count ? s.lat_sum_ns / s.lat_count : 0),
			"p50_ns", (json_int_t)stats_percentile(&s, 0.5),
			"p99_ns", (json_int_t)stats_percentile(&s, 0.99),
			"p999_ns", (json_int_t)stats_percentile(&s, 0.999),
			"max_ns", (json_int_t)s.lat_max_ns);
	json_object_set_new(reply, "latency", lat);
	recent = json_pack("{s:I, s:I, s:I}",
			   "count", (json_int_t)d->snap_delta->lat_count,
			   "p50_ns", (json_int_t)stats_percentile(d->snap_delta, 0.5),
			   "p99_ns", (json_int_t)stats_percentile(d->snap_delta, 0.99));
	json_object_set_new(reply, "latency_last_interval", recent);
	stages = json_object();
	for (int st = 0; st < STG_STAGES; st++)
		json_object_set_new(stages, stats_stage_name(st), stage_json(&s, st));
	json_object_set_new(reply, "stages", stages);
	json_object_set_new(reply, "consistent", json_boolean(s.consistent));
	json_object_set_new(reply, "watchdog_pings", json_integer((json_int_t)d->wd_pings));
	return 0;
}

static const char *const trace_flag_names[] = {
	"delivered", "dropped", "skipped", "over_budget", "nonfinite", "discontinuity",
};

/* One flight-recorder record: stage stamps in us after the input commit. */
static json_t *trace_json(const struct trace_cpi *r)
{
	json_t *o = json_object(), *t = json_object(), *fl = json_array();

	if (!o || !t || !fl) {
		json_decref(o);
		json_decref(t);
		json_decref(fl);
		return NULL;
	}
	json_object_set_new(o, "seq", json_integer((json_int_t)r->seq));
	json_object_set_new(o, "first_sample", json_integer((json_int_t)r->first_sample));
	json_object_set_new(o, "timestamp_ns", json_integer((json_int_t)r->timestamp_ns));
	json_object_set_new(o, "in_commit_mono_ns", json_integer((json_int_t)r->t[TR_IN_COMMIT]));
	for (int i = TR_PEEK; i < TR_STAMPS; i++)
		json_object_set_new(t, trace_stamp_name(i), r->t[i] && r->t[TR_IN_COMMIT] ?
				    json_real((double)(int64_t)(r->t[i] - r->t[TR_IN_COMMIT]) * 1e-3) :
				    json_null());
	json_object_set_new(o, "t_us", t);
	json_object_set_new(o, "latency_us", json_real((double)r->latency_ns * 1e-3));
	json_object_set_new(o, "device_us", r->device_ns ? json_real((double)r->device_ns * 1e-3)
							  : json_null());
	json_object_set_new(o, "fill", json_integer(r->fill));
	json_object_set_new(o, "in_flight", json_integer(r->in_flight));
	json_object_set_new(o, "recomputed", json_integer(r->recomputed));
	json_object_set_new(o, "chunks", json_integer(r->chunks));
	json_object_set_new(o, "woken", json_integer(r->woken));
	json_object_set_new(o, "absent", json_integer(r->absent));
	if (r->stall_ns) {
		/* The longest gap of the data thread's loop while this CPI
		 * was in chirpd (stall.h): how long, the thread's CPU time in
		 * it, what it was doing, where in the loop it was noticed. */
		json_t *st = json_pack("{s:f, s:f, s:s, s:s}",
				       "us", (double)r->stall_ns * 1e-3,
				       "cpu_us", (double)r->stall_cpu_ns * 1e-3,
				       "kind", stall_kind_name((enum stall_kind)r->stall_kind),
				       "in", trace_where_name((enum trace_where)r->stall_where));
		json_object_set_new(o, "stall", st ? st : json_null());
	} else {
		json_object_set_new(o, "stall", json_null());
	}
	for (unsigned b = 0; b < sizeof(trace_flag_names) / sizeof(trace_flag_names[0]); b++)
		if (r->flags & (1u << b))
			json_array_append_new(fl, json_string(trace_flag_names[b]));
	json_object_set_new(o, "flags", fl);
	return o;
}

static int cmd_trace(void *ctx, const char *args, const struct control_peer *peer,
		     json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	unsigned long n = 100;
	unsigned got;
	json_t *arr;

	(void)peer;
	if (*args) {
		char *end;

		errno = 0;
		n = strtoul(args, &end, 10);
		if (errno || *end || n < 1 || n > trace_capacity(d->trace) || args[0] == '-') {
			snprintf(err, errlen, "trace: N must be a number of CPIs 1..%u "
				 "(the recorder's size, [trace] records), not '%s'",
				 trace_capacity(d->trace), args);
			return -EINVAL;
		}
	}
	got = trace_read(d->trace, d->trace_buf, (unsigned)n);
	arr = json_array();
	if (!arr)
		return -ENOMEM;
	for (unsigned i = 0; i < got; i++) {
		json_t *o = trace_json(&d->trace_buf[i]);

		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return -ENOMEM;
		}
	}
	json_object_set_new(reply, "records", json_integer(trace_capacity(d->trace)));
	json_object_set_new(reply, "total", json_integer((json_int_t)trace_total(d->trace)));
	json_object_set_new(reply, "latency_budget_ms", json_real(d->g->cfg.latency_budget_ms));
	json_object_set_new(reply, "stamps", json_string(
		"t_us: microseconds after the producer committed the input (in_commit); "
		"null = the stage did not happen"));
	json_object_set_new(reply, "cpis", arr);
	return 0;
}

static int cmd_config(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	json_t *c = config_to_json(&d->g->cfg);

	(void)args; (void)peer;
	if (!c) {
		snprintf(err, errlen, "cannot render the configuration");
		return -ENOMEM;
	}
	json_object_set_new(reply, "path", json_string(d->config_path));
	json_object_set_new(reply, "config", c);
	return 0;
}

static int cmd_reload(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	(void)args;
	log_info("reload requested by pid %d uid %u", (int)peer->pid, (unsigned)peer->uid);
	return do_reload(ctx, reply, err, errlen);
}

/* Wait (bounded) until the data path shows the wanted state. */
static void wait_state(struct daemon *d, enum pipeline_state want, int ms)
{
	for (int i = 0; i < ms && pipeline_state(d->pl) != want; i++) {
		struct timespec t = { 0, 1000000 };
		nanosleep(&t, NULL);
	}
}

/* pause (on = 1) or resume (on = 0) the data thread and wait until it says so. */
static int set_paused(struct daemon *d, int on, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	if (pipeline_state(d->pl) == PIPE_FAILED || d->stopping) {
		snprintf(err, errlen, "data path is %s", state_name(d));
		return -EIO;
	}
	pipeline_pause(d->pl, on);
	wait_state(d, on ? PIPE_PAUSED : PIPE_RUNNING, 1000);
	log_notice("%s (pid %d)", on ? "paused" : "resumed", (int)peer->pid);
	json_object_set_new(reply, "state", json_string(state_name(d)));
	notify_status(d);
	return 0;
}

static int cmd_pause(void *ctx, const char *args, const struct control_peer *peer,
		     json_t *reply, char *err, size_t errlen)
{
	(void)args;
	return set_paused(ctx, 1, peer, reply, err, errlen);
}

static int cmd_resume(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	(void)args;
	return set_paused(ctx, 0, peer, reply, err, errlen);
}

static int cmd_metrics(void *ctx, const char *args, const struct control_peer *peer,
		       json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	int n;

	(void)args; (void)peer;
	n = render_metrics(d, d->mbuf, METRICS_BUF);
	if (n < 0) {
		snprintf(err, errlen, "metrics: %s", strerror(-n));
		return n;
	}
	json_object_set_new(reply, "text", json_stringn(d->mbuf, (size_t)n));
	return 0;
}

static int cmd_log_level(void *ctx, const char *args, const struct control_peer *peer,
			 json_t *reply, char *err, size_t errlen)
{
	int lv = log_level_parse(args);

	(void)ctx;
	if (lv < 0 || lv < LOG_ERR) {
		snprintf(err, errlen, "unknown level '%.32s' (error|warning|notice|info|debug)", args);
		return -EINVAL;
	}
	log_set_level(lv);
	log_notice("log level %s (pid %d)", log_level_name(lv), (int)peer->pid);
	json_object_set_new(reply, "level", json_string(log_level_name(lv)));
	return 0;
}

static const struct control_cmd commands[] = {
	{ .name = "version", .fn = cmd_version, .help = "chirpd version and build" },
	{ .name = "status", .fn = cmd_status,
	  .help = "state, backend and device, NUMA/real-time applied, uptime, config, geometry" },
	{ .name = "stats", .fn = cmd_stats,
	  .help = "counters, rates, latency p50/p99/p999/max, time per stage" },
	{ .name = "config", .fn = cmd_config, .help = "the effective configuration" },
	{ .name = "trace", .fn = cmd_trace, .usage = "[N]",
	  .help = "flight recorder: stage timestamps of the last N CPIs (default 100)" },
	{ .name = "metrics", .fn = cmd_metrics, .help = "Prometheus text exposition" },
	{ .name = "reload", .mutating = 1, .fn = cmd_reload,
	  .help = "re-read the configuration file and apply it between CPIs" },
	{ .name = "pause", .mutating = 1, .fn = cmd_pause, .help = "stop taking CPIs" },
	{ .name = "resume", .mutating = 1, .fn = cmd_resume, .help = "take CPIs again" },
	{ .name = "log-level", .mutating = 1, .fn = cmd_log_level, .usage = "LEVEL",
	  .help = "set the log level (error|warning|notice|info|debug)" },
	{ .name = NULL },
};

/* ---- event loop ------------------------------------------------------------ */

static void begin_stop(struct daemon *d, const char *why)
{
	if (d->stopping)
		return;
	d->stopping = 1;
	d->stop_deadline_ns = mono_ns() + DRAIN_TIMEOUT_MS * 1000000ull;
	log_notice("%s: draining CPIs in flight and stopping", why);
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	pipeline_stop(d->pl);
}

static void on_pipeline_event(struct daemon *d)
{
	uint64_t v;

	if (read(d->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_err("eventfd read: %s", strerror(errno));
	if (pipeline_state(d->pl) == PIPE_FAILED && !d->failed_reported) {
		d->failed_reported = 1;
		log_err("data path failed: %s; no more watchdog pings", pipeline_error(d->pl));
		sd_notifyf(0, "STATUS=failed: %s", pipeline_error(d->pl));
	}
}

/*
 * The data thread only counts and flags CPIs over the latency budget; here,
 * on the main thread, the newest one is logged with its timeline, at most
 * once per OVER_LOG_NS, with how many others there were since the last
 * line.
 */
static void log_over_budget(struct daemon *d, uint64_t now)
{
	static struct stats_snapshot sn;   /* main thread only; 8 KiB off the stack */
	uint64_t last = pipeline_over_budget_last(d->pl), count;
	struct trace_cpi r;
	char line[512];

	if (last == d->over_logged || now - d->over_log_ns < OVER_LOG_NS)
		return;
	stats_snapshot(d->st, &sn);
	count = sn.counter[ST_OVER_BUDGET];
	d->over_logged = last;
	d->over_log_ns = now;
	if (trace_get(d->trace, last - 1, &r) < 0) {
		log_warn("CPI over the latency budget of %g ms (%llu in all; its record was "
			 "overwritten before it could be logged: [trace] records is small for this rate)",
			 d->g->cfg.latency_budget_ms, (unsigned long long)count);
	} else {
		trace_format(&r, (uint64_t)(d->g->cfg.latency_budget_ms * 1e6), line, sizeof(line));
		log_warn("CPI over the latency budget: %s (%llu over budget since start, %llu since "
			 "the last such line)", line, (unsigned long long)count,
			 (unsigned long long)(count - d->over_count_logged));
	}
	d->over_count_logged = count;
}

static void on_tick(struct daemon *d)
{
	uint64_t now = mono_ns(), exp;

	if (read(d->tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
		log_err("timerfd read: %s", strerror(errno));
	if (d->wd_usec && now - d->wd_last_ns >= d->wd_usec * 1000ull / 2) {
		uint64_t hb = pipeline_heartbeat(d->pl);
		enum pipeline_state s = pipeline_state(d->pl);

		/* Ping only for a data path that is alive and making rounds: a
		 * hung backend call stops the heartbeat, and systemd restarts us. */
		if (hb != d->wd_last_hb && (s == PIPE_RUNNING || s == PIPE_PAUSED) && !d->broken) {
			sd_notify(0, "WATCHDOG=1");
			d->wd_pings++;
			if (d->wd_stalled)
				log_notice("watchdog: data path heartbeat advances again");
			d->wd_stalled = 0;
		} else if (s != PIPE_FAILED && !d->wd_stalled) {
			log_warn("watchdog: data path heartbeat stalled (state %s); not pinging",
				 pipeline_state_name(s));
			d->wd_stalled = 1;
		}
		d->wd_last_hb = hb;
		d->wd_last_ns = now;
	}
	if (now - d->stats_last_ns >= STATS_PERIOD_NS) {
		d->stats_last_ns = now;
		stats_tick(d);
		if (!d->stopping)
			notify_status(d);
	}
	log_over_budget(d, now);
	if (d->mh)
		metrics_http_run(d->mh);
}

static void on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;
	char err[CONTROL_ERR_MAX];

	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			begin_stop(d, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		case SIGHUP:
			do_reload(d, NULL, err, sizeof(err));
			break;
		default:
			break;
		}
	}
}

static int ep_add(int epfd, int fd, enum ev_tag tag, char *err, size_t errlen)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		snprintf(err, errlen, "epoll_ctl(ADD, %d): %s", (int)tag, strerror(errno));
		return -errno;
	}
	return 0;
}

static int run_loop(struct daemon *d)
{
	struct epoll_event evs[8];

	for (;;) {
		int n = epoll_wait(d->epfd, evs, 8, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("epoll_wait: %s", strerror(errno));
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			switch (evs[i].data.u32) {
			case EV_SIGNAL:
				on_signal(d);
				break;
			case EV_TIMER:
				on_tick(d);
				break;
			case EV_CONTROL: {
				int r = control_dispatch(d->ctl);
				if (r < 0)
					log_err("control socket: %s", strerror(-r));
				break;
			}
			case EV_PIPE:
				on_pipeline_event(d);
				break;
			case EV_HTTP:
				metrics_http_run(d->mh);
				break;
			}
		}
		if (d->stopping) {
			if (pipeline_state(d->pl) == PIPE_STOPPED || pipeline_state(d->pl) == PIPE_FAILED)
				return 0;
			if (mono_ns() > d->stop_deadline_ns) {
				log_err("data path did not drain within %d ms", DRAIN_TIMEOUT_MS);
				return -ETIMEDOUT;
			}
		}
	}
}

/* ---- startup ------------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("usage: chirpd -c FILE            run (foreground; systemd Type=notify)\n"
	      "       chirpd --check -c FILE    validate FILE and print the effective configuration\n"
	      "\n"
	      "  -c, --config FILE   configuration file (default /etc/chirpd/chirpd.conf)\n"
	      "  -n, --check         check the configuration and exit (0 valid, 1 errors)\n"
	      "  -h, --help          this text\n"
	      "  -V, --version       print the version\n"
	      "\n"
	      "Signals: SIGTERM/SIGINT drain and exit 0, SIGHUP reloads the configuration.\n"
	      "Control: chirpctl -s SOCKET help\n", out);
}

static int check_config(const char *path)
{
	struct chirp_config *c = malloc(sizeof(*c));
	char why[256];
	float *ref = NULL;
	size_t len = 0;
	struct pc_params pp;
	int n, ret = 1;

	if (!c) {
		fprintf(stderr, "chirpd: out of memory\n");
		return 1;
	}
	n = config_load(c, path, stderr);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(-n));
		goto out;
	}
	if (n > 0) {
		fprintf(stderr, "%s: %d error%s\n", path, n, n == 1 ? "" : "s");
		goto out;
	}
	/* What config_load cannot see: the waveform file and the pc's checks. */
	if (wf_build(config_wf(c), c->samples, &ref, &len, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: [waveform] %s\n", path, why);
		goto out;
	}
	config_pc_params(c, &pp);
	pp.ref = ref;
	pp.ref_len = len;
	if (pc_params_check(&pp, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: [processing] %s\n", path, why);
		goto out;
	}
	config_print(c, stdout);
	ret = 0;
out:
	free(ref);
	free(c);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct daemon dd;
	struct daemon *d = &dd;
	struct chirp_config *cfg = NULL;
	const char *path = "/etc/chirpd/chirpd.conf";
	char err[512];
	int check = 0, opt, n, ret = 1;
	sigset_t mask;

	log_init(argv[0]);
	while ((opt = getopt_long(argc, argv, "c:nhV", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'n': check = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("chirpd %s\n", CHIRP_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (check)
		return check_config(path);

	d->epfd = d->sigfd = d->tfd = d->efd = -1;
	d->config_path = path;
	d->start_ns = mono_ns();
	d->stats_last_ns = d->start_ns;

	cfg = malloc(sizeof(*cfg));
	d->snap_prev = calloc(1, sizeof(*d->snap_prev));
	d->snap_now = calloc(1, sizeof(*d->snap_now));
	d->snap_delta = calloc(1, sizeof(*d->snap_delta));
	d->mbuf = malloc(METRICS_BUF);
	d->st = stats_create();
	if (!cfg || !d->snap_prev || !d->snap_now || !d->snap_delta || !d->mbuf || !d->st) {
		log_err("out of memory");
		goto out;
	}
	n = config_load(cfg, path, stderr);
	if (n != 0) {
		log_err("%s: %s", path, n < 0 ? strerror(-n) : "invalid configuration (errors above)");
		/* EX_CONFIG: restarting cannot help until someone edits the file;
		 * the units stop systemd's retries on it (RestartPreventExitStatus). */
		ret = EX_CONFIG;
		goto out;
	}
	log_set_level(cfg->log_level);

	/* Signals go to the signalfd; threads created later inherit the mask. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		log_err("sigprocmask: %s", strerror(errno));
		goto out;
	}
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_err("signal(SIGPIPE): %s", strerror(errno));
		goto out;
	}
	d->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sigfd < 0 || d->efd < 0 || d->tfd < 0 || d->epfd < 0) {
		log_err("signalfd/eventfd/timerfd/epoll_create1: %s", strerror(errno));
		goto out;
	}

	/* The control socket first: a second chirpd on the same socket is
	 * refused before it touches the running one's rings. Requests wait
	 * in the backlog until the event loop runs. */
	d->ctl = control_create(cfg->control_socket, 0660, cfg->control_group, commands, d,
				err, sizeof(err));
	if (!d->ctl) {
		log_err("control socket %s: %s", cfg->control_socket, err);
		goto out;
	}
	/* The pc first (its device's NUMA node), then the plan, then the
	 * rings bound to the node. */
	d->g = gen_create(d, cfg, NULL, err, sizeof(err));
	if (!d->g) {
		log_err("%s", err);
		goto out;
	}
	/* Where the data path runs. */
	{
		struct sysnuma_req req = {
			.node = cfg->numa_node, .gpu_bus_id = cfg->gpu_bus_id, .cpus = cfg->cpus,
			.realtime = cfg->realtime, .rt_priority = cfg->rt_priority,
			.lock_memory = cfg->lock_memory,
		};
		/* node = auto with the GPU given by index: the backend knows
		 * its device's node (pc_info.numa_node). */
		int from_backend = cfg->numa_node == CFG_NUMA_AUTO && !cfg->gpu_bus_id[0] &&
				   d->g->info.numa_node >= 0;

		if (from_backend)
			req.node = d->g->info.numa_node;
		if (sysnuma_resolve(&req, NULL, &d->plan, err, sizeof(err)) < 0) {
			log_err("%s: [numa] %s", path, err);
			goto out;
		}
		if (from_backend)
			snprintf(d->plan.node_source, sizeof(d->plan.node_source),
				 "auto: %.60s numa_node %d", d->g->info.device, d->g->info.numa_node);
		d->plan_ready = 1;
		bind_backend_threads(d, d->g->pc);
		move_housekeeping(d, cfg);
		snprintf(d->memory_note, sizeof(d->memory_note), "not requested");
		if (cfg->lock_memory) {
			struct sysnuma_applied a = { 0 };

			if (sysnuma_lock_memory(&a, err, sizeof(err)) < 0) {
				if (cfg->realtime == CFG_RT_REQUIRED) {
					log_err("realtime = required: %s", err);
					goto out;
				}
				log_warn("lock_memory: %s; continuing with unlocked memory", err);
			}
			d->memory_locked = a.memory_locked;
			snprintf(d->memory_note, sizeof(d->memory_note), "%s", a.memory_note);
		}
	}

	if (gen_attach(d, d->g, NULL, err, sizeof(err)) < 0) {
		log_err("%s", err);
		goto out;
	}
	{
		char staging_note[40] = "";   /* " (8 copy threads)" when copying */

		if (d->g->info.staging_threads)
			snprintf(staging_note, sizeof(staging_note), " (%u copy thread%s)",
				 d->g->info.staging_threads,
				 d->g->info.staging_threads == 1 ? "" : "s");
		log_info("backend %s: %s, nfft %zu, depth %u, staging %s%s, %s, idle spin %u us",
			 pc_backend_name(d->g->info.backend), d->g->info.device, d->g->info.nfft,
			 d->g->info.depth, d->g->info.staging, staging_note,
			 d->g->info.busy_poll ? "busy poll" : "sleeping poll", d->g->info.idle_spin_us);
	}
	report_slack(d->g);
	d->trace = trace_create(cfg->trace_records);
	/* A reply may hold the whole recorder (bench-latency reads every CPI
	 * of its window); allocated once here, like the recorder. */
	d->trace_buf = calloc(cfg->trace_records, sizeof(*d->trace_buf));
	if (!d->trace || !d->trace_buf) {
		log_err("flight recorder of %u records: out of memory", cfg->trace_records);
		goto out;
	}

	if (cfg->metrics_listen[0]) {
		d->mh = metrics_http_create(cfg->metrics_listen, render_metrics, d, err, sizeof(err));
		if (!d->mh) {
			log_err("%s", err);
			goto out;
		}
	}
	{
		struct itimerspec its = {
			.it_interval = { 0, TICK_MS * 1000000L },
			.it_value = { 0, TICK_MS * 1000000L },
		};
		if (timerfd_settime(d->tfd, 0, &its, NULL) < 0) {
			log_err("timerfd_settime: %s", strerror(errno));
			goto out;
		}
	}
	if (ep_add(d->epfd, d->sigfd, EV_SIGNAL, err, sizeof(err)) < 0 ||
	    ep_add(d->epfd, d->tfd, EV_TIMER, err, sizeof(err)) < 0 ||
	    ep_add(d->epfd, d->efd, EV_PIPE, err, sizeof(err)) < 0 ||
	    ep_add(d->epfd, control_fd(d->ctl), EV_CONTROL, err, sizeof(err)) < 0 ||
	    (d->mh && ep_add(d->epfd, metrics_http_fd(d->mh), EV_HTTP, err, sizeof(err)) < 0)) {
		log_err("%s", err);
		goto out;
	}

	d->pl = pipeline_create(d->g->pg, d->st, &d->plan, d->efd, d->trace, err, sizeof(err));
	if (!d->pl) {
		log_err("data path: %s", err);
		goto out;
	}
	pipeline_set_budget(d->pl, (uint64_t)(cfg->latency_budget_ms * 1e6));
	{
		int mem = d->memory_locked;
		pipeline_applied(d->pl, &d->applied);
		d->applied.memory_locked = mem;
	}
	if (sd_watchdog_enabled(0, &d->wd_usec) <= 0)
		d->wd_usec = 0;
	d->wd_last_ns = mono_ns();
	d->wd_last_hb = pipeline_heartbeat(d->pl);
	stats_snapshot(d->st, d->snap_now);
	*d->snap_prev = *d->snap_now;

	log_notice("running: %ux%ux%u %s -> %s, input %s, output %s, control %s, numa node %d "
		   "(%s), cpus %s, realtime %s%s",
		   cfg->channels, cfg->pulses, cfg->samples, pc_format_name(cfg->format),
		   pc_output_name(cfg->out_mode), cfg->input_ring, cfg->output_ring,
		   control_path(d->ctl), d->applied.node, d->plan.node_source, d->applied.cpus,
		   d->applied.realtime ? "SCHED_FIFO" : "off",
		   d->wd_usec ? ", watchdog on" : "");
	sd_notify(0, "READY=1");
	notify_status(d);

	ret = run_loop(d) == 0 ? 0 : 1;
	if (ret == 0 && pipeline_state(d->pl) == PIPE_FAILED) {
		log_err("exiting with the data path failed: %s", pipeline_error(d->pl));
		ret = 1;
	}
out:
	if (d->pl) {
		if (pipeline_destroy(d->pl, 500) < 0) {
			/* The thread may still touch the rings and the pc: leave
			 * them to the kernel instead of freeing under it. */
			log_err("data thread stuck; exiting without cleanup");
			_exit(1);
		}
	}
	{
		struct stats_snapshot *s = d->snap_now;
		if (s && d->st && d->pl) {
			stats_snapshot(d->st, s);
			log_notice("stopped: %llu CPIs in, %llu out, %llu output drops, %llu overruns, "
				   "%llu sequence gaps",
				   (unsigned long long)s->counter[ST_CPIS_IN],
				   (unsigned long long)s->counter[ST_CPIS_OUT],
				   (unsigned long long)s->counter[ST_OUTPUT_DROPS],
				   (unsigned long long)s->counter[ST_INPUT_OVERRUNS],
				   (unsigned long long)s->counter[ST_SEQUENCE_GAPS]);
		}
	}
	metrics_http_destroy(d->mh);
	control_destroy(d->ctl);
	gen_destroy(d->g);
	trace_destroy(d->trace);
	free(d->trace_buf);
	if (d->epfd >= 0) close(d->epfd);
	if (d->sigfd >= 0) close(d->sigfd);
	if (d->tfd >= 0) close(d->tfd);
	if (d->efd >= 0) close(d->efd);
	stats_destroy(d->st);
	free(d->snap_prev);
	free(d->snap_now);
	free(d->snap_delta);
	free(d->mbuf);
	free(cfg);
	return ret;
}
