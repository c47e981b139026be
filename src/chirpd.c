/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirpd — real-time radar pulse-compression daemon.
 *
 *   chirpd -c FILE            run in the foreground (systemd Type=notify)
 *   chirpd --check -c FILE    validate FILE, print the effective configuration
 *   chirpd --remove-rings -c FILE   remove the rings FILE names (ringrm.c)
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
 * This file holds main: options, --check, start-up in order, the event loop
 * and its handlers. The generations are in gen.c, the reload in reload.c,
 * the control commands in ctlcmd.c (daemon.h).
 */
#include "daemon.h"

#include <errno.h>
#include <getopt.h>
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
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "live.h"
#include "log.h"
#include "ringrm.h"
#include "statusline.h"
#include "waveform.h"
#include "zpub.h"

#define TICK_MS            100      /* timerfd period                        */
#define STATS_PERIOD_NS    1000000000ull
#define DRAIN_TIMEOUT_MS   1800     /* SIGTERM: exit within 2 s              */
#define OVER_LOG_NS        1000000000ull   /* over-budget lines: at most 1/s  */
#define UNKNOWN_LOG_NS     1000000000ull   /* unknown-mode lines: at most 1/s */

enum ev_tag { EV_SIGNAL = 1, EV_TIMER, EV_CONTROL, EV_PIPE, EV_HTTP, EV_LIVE };

/* ---- placement and rates -------------------------------------------------- */

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
		trace_format(&r, d->g->plan.latency_budget_ns, line, sizeof(line));
		log_warn("CPI over the latency budget: %s (%llu over budget since start, %llu since "
			 "the last such line)", line, (unsigned long long)count,
			 (unsigned long long)(count - d->over_count_logged));
	}
	d->over_count_logged = count;
}

/*
 * CPIs of a mode the running configuration does not have: the data thread
 * counts them and publishes the newest one's mode; here, on the main
 * thread, one line at most every UNKNOWN_LOG_NS with the newest mode id
 * and how many there were since the last line.
 */
static void log_unknown_modes(struct daemon *d, uint64_t now)
{
	static struct stats_snapshot sn;   /* main thread only; 8 KiB off the stack */
	uint64_t last, count;

	if (!d->pl || now - d->unknown_log_ns < UNKNOWN_LOG_NS)
		return;
	last = pipeline_unknown_mode_last(d->pl);
	if (!last)
		return;
	stats_snapshot(d->st, &sn);
	count = sn.counter[ST_UNKNOWN_MODE_CPIS];
	if (count == d->unknown_count_logged)
		return;
	log_warn("CPIs of an unknown radar mode: %llu since the last such line (%llu since start), "
		 "the newest of mode %llu; configured modes are [waveform] and [mode NAME] "
		 "sections; their results are zeroed and flagged UNKNOWN_MODE",
		 (unsigned long long)(count - d->unknown_count_logged), (unsigned long long)count,
		 (unsigned long long)(last - 1));
	d->unknown_count_logged = count;
	d->unknown_log_ns = now;
}

/* CPIs whose pointing the beams cannot take (pipeline.c counts them): one
 * line at most every UNKNOWN_LOG_NS with how many since the last, as for
 * unknown modes, and the newest pointing the data path steered to. */
static void log_bad_pointings(struct daemon *d, uint64_t now)
{
	static struct stats_snapshot sn;   /* main thread only; 8 KiB off the stack */
	uint64_t count;
	double az, el;

	if (!d->pl || now - d->bad_pointing_log_ns < UNKNOWN_LOG_NS)
		return;
	stats_snapshot(d->st, &sn);
	count = sn.counter[ST_BAD_POINTING_CPIS];
	if (count == d->bad_pointing_logged)
		return;
	pipeline_last_pointing(d->pl, &az, &el);
	log_warn("CPIs pointed where the beams cannot steer (not finite, beyond 90 degrees or a "
		 "beam outside the visible region): %llu since the last such line (%llu since "
		 "start); their results are NaN and flagged BAD_POINTING; the newest good "
		 "pointing: az %g, el %g", (unsigned long long)(count - d->bad_pointing_logged),
		 (unsigned long long)count, az, el);
	d->bad_pointing_logged = count;
	d->bad_pointing_log_ns = now;
}

/*
 * The producer's offered rate (committed + dropped blocks of the input
 * ring) against the rate the generation sustains (the host calibration's
 * shared figure when there is one, gen_sustainable_cps), each tick: a warning
 * when it has stayed above for a second (ratewatch.h), before a ring of
 * buffer_ms fills at a modest excess, and one line when it falls back.
 */
static void watch_input_rate(struct daemon *d, uint64_t now)
{
	struct chirp_ring *in = d->g ? d->g->ring[PLAN_RING_IN] : NULL;
	struct chirp_ring_stats rs;
	double cap;
	int r;

	if (!in || chirp_ring_stats(in, &rs) != 0)
		return;
	cap = gen_sustainable_cps(d->g);
	r = ratewatch_update(&d->rw, now, rs.committed + rs.overruns, cap);
	if (r > 0) {
		stats_add(d->st, ST_INPUT_OVER_CAPACITY_EVENTS, 1);
		log_warn("input rate %.0f CPI/s has stayed above the capacity of %.0f CPI/s (%s) for "
			 "a second: the input ring (%.1f ms at capacity) fills and CPIs will be lost",
			 d->rw.rate_cps, cap, d->g->shared_cps > 0 ? "shared with the host's "
			 "other instances" : d->g->capacity_source,
			 gen_ring_ms(gen_in_slots(d->g), cap));
	} else if (r < 0) {
		log_notice("input rate %.0f CPI/s is back below the capacity of %.0f CPI/s",
			   d->rw.rate_cps, cap);
	}
}

/* At [publish] status_hz (as started), chirpctl status's JSON. */
static void publish_status(struct daemon *d, uint64_t now)
{
	json_t *o;
	char *s;

	if (!d->pub || d->pub_status_hz <= 0 ||
	    (double)(now - d->pub_status_ns) < 1e9 / d->pub_status_hz)
		return;
	d->pub_status_ns = now;
	o = json_object();
	if (!o)
		return;
	daemon_status_json(d, o);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return;
	(void)zpub_put_status(d->pub, s, strlen(s));   /* full: counted */
	free(s);
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
			daemon_notify_status(d);
	}
	watch_input_rate(d, now);
	log_over_budget(d, now);
	log_unknown_modes(d, now);
	log_bad_pointings(d, now);
	publish_status(d, now);
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
			daemon_reload(d, NULL, err, sizeof(err));
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
			case EV_LIVE:   /* frames to the streams it resumed */
				live_run(d->live);
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
	      "       chirpd --remove-rings [--if-configured] -c FILE\n"
	      "\n"
	      "  -c, --config FILE   configuration file (default /etc/chirpd/chirpd.conf)\n"
	      "  -n, --check         check the configuration and exit (0 valid, 1 errors)\n"
	      "      --remove-rings  remove the input, output and detection rings FILE names\n"
	      "                      and exit (1: refused, chirpd holds them: nothing removed)\n"
	      "      --if-configured with --remove-rings: only if [daemon] remove_rings_on_stop\n"
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
	float *refs[PC_MAX_MODES] = { NULL };
	struct pc_mode modes[PC_MAX_MODES];
	struct pc_params pp;
	struct plan_beams beams = { 0 };
	struct config_fault f;
	unsigned nm = 0;
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
	/* What config_load cannot see: each mode's waveform file and the pc's
	 * checks (every mode's L against the samples and nfft). */
	if (c->nmodes < 1) {
		fprintf(stderr, "%s: no radar mode ([waveform] or [mode NAME])\n", path);
		goto out;
	}
	for (; nm < c->nmodes && nm < PC_MAX_MODES; nm++) {
		const char *name = c->modes[nm].name;

		if (wf_build(config_mode_wf(c, nm), c->samples, &refs[nm], &modes[nm].ref_len, why,
			     sizeof(why)) < 0) {
			if (!strcmp(name, "default"))
				fprintf(stderr, "%s: [waveform] %s\n", path, why);
			else
				fprintf(stderr, "%s: [mode %s] %s\n", path, name, why);
			goto out;
		}
		modes[nm].id = c->modes[nm].id;
		modes[nm].ref = refs[nm];
	}
	plan_pc_params(c, &pp);
	if (plan_beams_make(c, &beams, &f) < 0) {   /* config_load passed it: a file changed */
		fprintf(stderr, "%s: %s: %s\n", path, f.keys[0] ? f.keys[0] : "beams", f.why);
		goto out;
	}
	plan_beams_apply(&beams, &pp);
	pp.ref = refs[0];
	pp.ref_len = modes[0].ref_len;
	pp.modes = modes;
	pp.nmodes = nm;
	if (pc_params_check(&pp, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: [processing] %s\n", path, why);
		goto out;
	}
	config_print(c, stdout);
	ret = 0;
out:
	for (unsigned i = 0; i < PC_MAX_MODES; i++)
		free(refs[i]);
	plan_beams_free(&beams);
	free(c);
	return ret;
}


enum { ACT_RUN, ACT_CHECK, ACT_REMOVE, ACT_REMOVE_IF };
enum { O_REMOVE = 256, O_IFCONF };

/* Options: -1 to go on with *path and *action set, else the exit code. */
static int parse_args(int argc, char **argv, const char **path, int *action)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ "remove-rings", no_argument, NULL, O_REMOVE },
		{ "if-configured", no_argument, NULL, O_IFCONF },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, check = 0, remove = 0, ifconf = 0;

	while ((opt = getopt_long(argc, argv, "c:nhV", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': *path = optarg; break;
		case 'n': check = 1; break;
		case O_REMOVE: remove = 1; break;
		case O_IFCONF: ifconf = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("chirpd %s\n", chirpd_version); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (check && remove) || (ifconf && !remove)) {
		usage(stderr);
		return 2;
	}
	*action = check ? ACT_CHECK : !remove ? ACT_RUN : ifconf ? ACT_REMOVE_IF : ACT_REMOVE;
	return -1;
}

/* The buffers the main thread uses for rates, replies and counters. */
static int alloc_state(struct daemon *d)
{
	d->snap_prev = calloc(1, sizeof(*d->snap_prev));
	d->snap_now = calloc(1, sizeof(*d->snap_now));
	d->snap_delta = calloc(1, sizeof(*d->snap_delta));
	d->mbuf = malloc(METRICS_BUF);
	d->st = stats_create();
	if (!d->snap_prev || !d->snap_now || !d->snap_delta || !d->mbuf || !d->st) {
		log_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Signals go to a signalfd (threads created later inherit the mask); the
 * eventfd, timerfd and epoll fd of the event loop. */
static int open_event_fds(struct daemon *d)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		log_err("sigprocmask: %s", strerror(errno));
		return -errno;
	}
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_err("signal(SIGPIPE): %s", strerror(errno));
		return -errno;
	}
	d->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sigfd < 0 || d->efd < 0 || d->tfd < 0 || d->epfd < 0) {
		log_err("signalfd/eventfd/timerfd/epoll_create1: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

/* mlockall when [numa] lock_memory asks; fatal only with realtime = required. */
static int lock_memory(struct daemon *d, const struct chirp_config *cfg)
{
	struct sysnuma_applied a = { 0 };
	char err[512];

	snprintf(d->memory_note, sizeof(d->memory_note), "not requested");
	if (!cfg->lock_memory)
		return 0;
	if (sysnuma_lock_memory(&a, err, sizeof(err)) < 0) {
		if (cfg->realtime == CFG_RT_REQUIRED) {
			log_err("realtime = required: %s", err);
			return -EPERM;
		}
		log_warn("lock_memory: %s; continuing with unlocked memory", err);
	}
	d->memory_locked = a.memory_locked;
	snprintf(d->memory_note, sizeof(d->memory_note), "%s", a.memory_note);
	return 0;
}

/* Where the data path runs: the plan from [numa] (node = auto with the GPU
 * given by index: the backend knows its device's node, pc_info.numa_node),
 * the backend's threads pinned to it, the main loop moved off its cpus,
 * memory locked. */
static int place_data_path(struct daemon *d, const struct chirp_config *cfg)
{
	struct sysnuma_req req = {
		.node = cfg->numa_node, .gpu_bus_id = cfg->gpu_bus_id, .cpus = cfg->cpus,
		.realtime = cfg->realtime, .rt_priority = cfg->rt_priority,
		.lock_memory = cfg->lock_memory,
	};
	int from_backend = cfg->numa_node == CFG_NUMA_AUTO && !cfg->gpu_bus_id[0] &&
			   d->g->info.numa_node >= 0;
	char err[512];

	if (from_backend)
		req.node = d->g->info.numa_node;
	if (sysnuma_resolve(&req, NULL, &d->plan, err, sizeof(err)) < 0) {
		log_err("%s: [numa] %s", d->config_path, err);
		return -EINVAL;
	}
	if (from_backend)
		snprintf(d->plan.node_source, sizeof(d->plan.node_source),
			 "auto: %.60s numa_node %d", d->g->info.device, d->g->info.numa_node);
	d->plan_ready = 1;
	daemon_bind_backend_threads(d, d->g->pc);
	move_housekeeping(d, cfg);
	return lock_memory(d, cfg);
}

static void log_backend(const struct daemon *d)
{
	const struct pc_info *in = &d->g->info;
	char staging_note[40] = "";   /* " (8 copy threads)" when copying */

	if (in->staging_threads)
		snprintf(staging_note, sizeof(staging_note), " (%u copy thread%s)",
			 in->staging_threads, in->staging_threads == 1 ? "" : "s");
	log_info("backend %s: %s, nfft %zu, depth %u, staging %s%s, %s, idle spin %u us",
		 pc_backend_name(in->backend), in->device, in->nfft, in->depth, in->staging,
		 staging_note, in->busy_poll ? "busy poll" : "sleeping poll", in->idle_spin_us);
}

/* The flight recorder, and a reply buffer that may hold all of it
 * (bench-latency reads every CPI of its window): both allocated once here. */
static int start_trace(struct daemon *d, const struct chirp_config *cfg)
{
	d->trace = trace_create(cfg->trace_records);
	d->trace_buf = calloc(cfg->trace_records, sizeof(*d->trace_buf));
	if (!d->trace || !d->trace_buf) {
		log_err("flight recorder of %u records: out of memory", cfg->trace_records);
		return -ENOMEM;
	}
	return 0;
}

/* The metrics listener (optional), the tick, and every fd in the epoll set. */
static int start_event_sources(struct daemon *d, const struct chirp_config *cfg)
{
	struct itimerspec its = {
		.it_interval = { 0, TICK_MS * 1000000L },
		.it_value = { 0, TICK_MS * 1000000L },
	};
	char err[512];

	const char *listen = d->g->plan.http_listen;

	if (listen) {
		d->mh = metrics_http_create(listen, daemon_render_metrics, d,
					    err, sizeof(err));
		if (!d->mh) {
			log_err("%s", err);
			return -EIO;
		}
	}
	if (d->mh && d->g->plan.live_enable) {
		d->live = live_create(&d->g->plan.live, daemon_render_live_state, d, err,
				      sizeof(err));
		if (!d->live) {
			log_err("%s", err);
			return -EIO;
		}
		metrics_http_set_live(d->mh, d->live);
		log_notice("live view: http://%s/live (%g frames/s at most, %u clients)",
			   listen, d->g->plan.live.fps, d->g->plan.live.max_clients);
	}
	if (timerfd_settime(d->tfd, 0, &its, NULL) < 0) {
		log_err("timerfd_settime: %s", strerror(errno));
		return -errno;
	}
	if (ep_add(d->epfd, d->sigfd, EV_SIGNAL, err, sizeof(err)) < 0 ||
	    ep_add(d->epfd, d->tfd, EV_TIMER, err, sizeof(err)) < 0 ||
	    ep_add(d->epfd, d->efd, EV_PIPE, err, sizeof(err)) < 0 ||
	    ep_add(d->epfd, control_fd(d->ctl), EV_CONTROL, err, sizeof(err)) < 0 ||
	    (d->mh && ep_add(d->epfd, metrics_http_fd(d->mh), EV_HTTP, err, sizeof(err)) < 0) ||
	    (d->live && ep_add(d->epfd, live_fd(d->live), EV_LIVE, err, sizeof(err)) < 0)) {
		log_err("%s", err);
		return -EIO;
	}
	return 0;
}

/* [publish]: the PUB socket and its sender threads, before the data thread
 * that feeds them. Its keys change only on restart: a reload keeps it. */
static int start_publisher(struct daemon *d)
{
	struct zpub_params prm = d->g->plan.publish;
	char err[512];

	if (!prm.listen[0])
		return 0;
	prm.det_bytes = d->g->info.det_bytes;
	prm.st = d->st;
	d->pub = zpub_create(&prm, err, sizeof(err));
	if (!d->pub) {
		log_err("%s", err);
		return -EIO;
	}
	log_info("publish: %s (detections %s, maps %g/s, status %g/s, hwm %u)",
		 zpub_endpoint(d->pub), prm.detections && prm.det_bytes ? "on" : "off",
		 prm.maps_hz, d->g->plan.publish_status_hz, prm.hwm);
	return 0;
}

/* The data thread, and the watchdog and rates that follow it. */
static int start_pipeline(struct daemon *d, const struct chirp_config *cfg)
{
	char err[512];
	int mem = d->memory_locked;

	d->pl = pipeline_create(d->g->pg, d->st, &d->plan, d->efd, d->trace, err, sizeof(err));
	if (!d->pl) {
		log_err("data path: %s", err);
		return -EIO;
	}
	pipeline_set_publisher(d->pl, d->pub);
	pipeline_set_live(d->pl, d->live);
	pipeline_set_budget(d->pl, d->g->plan.latency_budget_ns);
	pipeline_applied(d->pl, &d->applied);
	d->applied.memory_locked = mem;
	if (sd_watchdog_enabled(0, &d->wd_usec) <= 0)
		d->wd_usec = 0;
	d->wd_last_ns = mono_ns();
	d->wd_last_hb = pipeline_heartbeat(d->pl);
	stats_snapshot(d->st, d->snap_now);
	*d->snap_prev = *d->snap_now;
	return 0;
}

/*
 * Everything chirpd runs with, in order: the control socket first (a
 * second chirpd on the same socket is refused before it touches the
 * running one's rings; requests wait in the backlog until the event loop
 * runs), then the pc (its device's NUMA node), then the plan, then the
 * rings bound to the node, the recorder, the event sources and the data
 * thread.
 */
static int start(struct daemon *d, const struct chirp_config *cfg)
{
	char err[512];

	d->ctl = control_create(cfg->control_socket, 0660, cfg->control_group, daemon_commands, d,
				err, sizeof(err));
	if (!d->ctl) {
		log_err("control socket %s: %s", cfg->control_socket, err);
		return -EIO;
	}
	d->g = gen_create(d, cfg, NULL, err, sizeof(err));
	if (!d->g) {
		log_err("%s", err);
		return -EINVAL;
	}
	if (place_data_path(d, cfg) < 0)
		return -EINVAL;
	if (gen_attach(d, d->g, NULL, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return -EIO;
	}
	log_backend(d);
	gen_log_modes(d->g);
	gen_report_slack(d->g);
	d->pub_status_hz = d->g->plan.publish_status_hz;
	if (start_trace(d, cfg) < 0 || start_event_sources(d, cfg) < 0 ||
	    start_publisher(d) < 0 || start_pipeline(d, cfg) < 0)
		return -EIO;
	return 0;
}

static void log_running(const struct daemon *d, const struct chirp_config *cfg)
{
	size_t ib, ob, ip, op;

	gen_ring_memory(d->g, &ib, &ob, &ip, &op);
	log_notice("running: %ux%ux%u %s -> %s, %u mode%s, input %s, output %s, rings %.1f MiB "
		   "(%.1f MiB pinned), control %s, numa node %d (%s), cpus %s, realtime %s%s",
		   cfg->channels, cfg->pulses, cfg->samples, pc_format_name(cfg->format),
		   pc_output_name(cfg->out_mode), d->g->nmodes, d->g->nmodes == 1 ? "" : "s",
		   cfg->input_ring, cfg->out_mode == PC_OUT_NONE ? "none" : cfg->output_ring,
		   (double)(ib + ob) / 1048576.0,
		   (double)(ip + op) / 1048576.0,
		   control_path(d->ctl), d->applied.node, d->plan.node_source, d->applied.cpus,
		   d->applied.realtime ? "SCHED_FIFO" : "off",
		   d->wd_usec ? ", watchdog on" : "");
}

/*
 * Where start-up went, in monotonic ms from main's first line to the
 * data thread running: the configuration and the plan, the backend (its
 * device context, plans, streams = auto's depths), the capacity (measured,
 * or the warm-up alone when cached), the rings (created or re-attached),
 * the pipeline (registering, that is pinning, the rings with a GPU), and
 * the rest (NUMA placement, recorder, event sources, data thread). What a
 * restart after a crash costs its peers is in this line.
 */
static void log_startup(struct daemon *d, uint64_t cfg_ns, uint64_t end_ns)
{
	const struct gen *g = d->g;
	uint64_t sum = cfg_ns - d->start_ns;
	double *ms = d->startup_ms;
	int reused = 0, rings = 0;

	for (int k = 0; k < GEN_T_N; k++)
		sum += g->t_ns[k];
	for (int k = 0; k < PLAN_RINGS; k++) {
		rings += g->ring[k] != NULL;
		reused += g->ring_reused[k];
	}
	ms[STARTUP_TOTAL] = (double)(end_ns - d->start_ns) * 1e-6;
	ms[STARTUP_CONFIG_PLAN] = (double)(cfg_ns - d->start_ns + g->t_ns[GEN_T_PLAN]) * 1e-6;
	ms[STARTUP_BACKEND] = (double)g->t_ns[GEN_T_BACKEND] * 1e-6;
	ms[STARTUP_CAPACITY] = (double)g->t_ns[GEN_T_CAPACITY] * 1e-6;
	ms[STARTUP_RINGS] = (double)g->t_ns[GEN_T_RINGS] * 1e-6;
	ms[STARTUP_PIPELINE] = (double)g->t_ns[GEN_T_PIPELINE] * 1e-6;
	ms[STARTUP_THREADS] = end_ns > d->start_ns + sum ?
		(double)(end_ns - d->start_ns - sum) * 1e-6 : 0.0;
	log_notice("start-up %.1f ms: config+plan %.1f, backend %.1f, capacity %.1f (%s), rings "
		   "%.1f (%d of %d reused), pipeline %.1f, threads %.1f", ms[STARTUP_TOTAL],
		   ms[STARTUP_CONFIG_PLAN], ms[STARTUP_BACKEND], ms[STARTUP_CAPACITY],
		   g->capacity_source, ms[STARTUP_RINGS], reused, rings, ms[STARTUP_PIPELINE],
		   ms[STARTUP_THREADS]);
}

/* Stop the data thread and free everything; what start left NULL is skipped. */
static void shut_down(struct daemon *d)
{
	struct stats_snapshot *s = d->snap_now;

	if (d->pl && pipeline_destroy(d->pl, 500) < 0) {
		/* The thread may still touch the rings and the pc: leave
		 * them to the kernel instead of freeing under it. */
		log_err("data thread stuck; exiting without cleanup");
		_exit(1);
	}
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
	zpub_destroy(d->pub);        /* after the data thread that feeds it */
	metrics_http_destroy(d->mh); /* ends the live streams first */
	live_destroy(d->live);       /* after the data thread and the listener */
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
}

int main(int argc, char **argv)
{
	static struct daemon dd;
	struct daemon *d = &dd;
	struct chirp_config *cfg = NULL;
	const char *path = "/etc/chirpd/chirpd.conf";
	int action = ACT_RUN, n, ret = 1;
	uint64_t cfg_ns;

	log_init(argv[0]);
	n = parse_args(argc, argv, &path, &action);
	if (n >= 0)
		return n;
	if (action == ACT_CHECK)
		return check_config(path);
	if (action == ACT_REMOVE || action == ACT_REMOVE_IF)
		return ringrm_run(path, action == ACT_REMOVE_IF, stdout);

	d->epfd = d->sigfd = d->tfd = d->efd = -1;
	d->config_path = path;
	d->start_ns = mono_ns();
	d->stats_last_ns = d->start_ns;
	ratewatch_init(&d->rw);
	cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		log_err("out of memory");
		goto out;
	}
	if (alloc_state(d) < 0)
		goto out;
	n = config_load(cfg, path, stderr);
	if (n != 0) {
		log_err("%s: %s", path, n < 0 ? strerror(-n) : "invalid configuration (errors above)");
		/* EX_CONFIG: restarting cannot help until someone edits the file;
		 * the units stop systemd's retries on it (RestartPreventExitStatus). */
		ret = EX_CONFIG;
		goto out;
	}
	log_set_level(cfg->log_level);
	cfg_ns = mono_ns();
	if (open_event_fds(d) < 0 || start(d, cfg) < 0)
		goto out;
	log_startup(d, cfg_ns, mono_ns());
	log_running(d, cfg);
	sd_notify(0, "READY=1");
	daemon_notify_status(d);

	ret = run_loop(d) == 0 ? 0 : 1;
	if (ret == 0 && pipeline_state(d->pl) == PIPE_FAILED) {
		log_err("exiting with the data path failed: %s", pipeline_error(d->pl));
		ret = 1;
	}
out:
	shut_down(d);
	free(cfg);
	return ret;
}
