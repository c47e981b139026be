/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon.h — what chirpd's own files share: a generation (struct gen, one
 * configuration's resources), the daemon's state (struct daemon, owned by
 * the main thread) and the functions of each part:
 *   gen.c      generations: build, attach rings, destroy; ring sizing
 *   reload.c   re-read the configuration and swap generations between CPIs
 *   ctlcmd.c   the control commands and the metrics text
 *   statusline.c  the state and the one-line status (statusline.h)
 *   version.c  the version (version.h; in libchirpcore, chirpctl prints it too)
 *   chirpd.c   main: options, --check, start-up, the event loop, signals
 * Everything here runs on the main thread; the data thread (pipeline.c)
 * sees only the pipeline generation a struct gen hands it.
 */
#ifndef CHIRP_DAEMON_H
#define CHIRP_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "chirp/pc.h"
#include "chirp/ring.h"
#include "capcache.h"
#include "config.h"
#include "control.h"
#include "metrics.h"
#include "pipeline.h"
#include "plan.h"
#include "ratewatch.h"
#include "stats.h"
#include "sysnuma.h"
#include "timeutil.h"
#include "trace.h"

#define SWAP_TIMEOUT_MS    5000     /* reload: data path reaches a CPI boundary */
#define METRICS_BUF        (64 * 1024)

#include "version.h"   /* chirpd_version */

/* The start-up line's phases, in its order (status "startup"). */
enum daemon_startup {
	STARTUP_TOTAL, STARTUP_CONFIG_PLAN, STARTUP_BACKEND, STARTUP_CAPACITY, STARTUP_RINGS,
	STARTUP_PIPELINE, STARTUP_THREADS, DAEMON_STARTUP_N
};

/* The phases of building a generation, timed for the start-up line. */
enum gen_phase { GEN_T_PLAN, GEN_T_BACKEND, GEN_T_CAPACITY, GEN_T_RINGS, GEN_T_PIPELINE, GEN_T_N };

/* One configuration's resources, built from its plan. Rings and the
 * output fd may be shared with the previous generation (borrowed) until
 * the swap succeeds. */
struct gen {
	struct chirp_config cfg;
	struct plan plan;                     /* from cfg (points into it)    */
	struct pc_mode modes[PC_MAX_MODES];   /* cfg.modes[i]'s reference: what
						 pc_params.modes points at  */
	float *mode_ref[PC_MAX_MODES];        /* owned: modes[i].ref          */
	unsigned nmodes;
	struct pc *pc;
	struct pc_info info;
	/* The beams as built (status): B (0 without), each beam's direction
	 * at zero pointing (az, el degrees), the fan's spacing in u. */
	unsigned beams;
	double beam_dir[2 * PC_MAX_BEAMS];
	double beam_spacing_u;
	struct chirp_ring *ring[PLAN_RINGS];  /* by kind; NULL: the plan has
						 none (plan.ring[k].used 0) or
						 not attached yet          */
	int ring_borrowed[PLAN_RINGS];
	int file_fd[PLAN_FILES];              /* by kind, -1: none            */
	int file_borrowed[PLAN_FILES];        /* the old generation's (reload) */
	struct pipeline_gen *pg;
	double capacity_cps;              /* pc_calibrate at creation, CPI/s (0: unknown) */
	char capacity_source[16];         /* "measured", "cache", "kept" (a
					     reload's, same work) or "none"  */
	int64_t capacity_measured_s;      /* when it was measured (realtime s) */
	double shared_cps;                /* with the host's instances saturated
					     at once (chirpd-calibrate-host,
					     capcache.h), CPI/s; 0: unknown  */
	int64_t shared_measured_s;        /* when it was calibrated (realtime s) */
	char cache_path[CFG_PATH_MAX];    /* capacity_cache resolved, "" = none */
	char cache_key[CAPCACHE_MAX_KEY + 1]; /* this generation's entry's key  */
	int cache_hit;                    /* the entry was found at build     */
	struct capcache_entry cached;     /* it, when cache_hit               */
	unsigned slots_requested;         /* [input] slots as configured (0 = auto) */
	unsigned out_slots_requested;     /* [output] slots as configured (0 = auto) */
	unsigned det_slots_requested;     /* [detections] slots as configured (0 = auto) */
	/* What was there of each ring before this generation attached it
	 * (chirp_ring_probe): a restart after a crash keeps the rings its
	 * peers hold when it can, and says why when it cannot. */
	int found_rc[PLAN_RINGS];         /* 0: found; -ENOENT: none; else unreadable */
	struct chirp_ring_geometry found[PLAN_RINGS];
	uint64_t found_epoch[PLAN_RINGS];
	char found_why[PLAN_RINGS][160];  /* found_rc's reason when unreadable */
	unsigned auto_want[PLAN_RINGS];   /* slots = auto's own count (0: fixed) */
	int ring_reused[PLAN_RINGS];      /* attached to the ring found, state kept */
	uint64_t t_ns[GEN_T_N];           /* start-up phases (monotonic ns) */
};

struct daemon {
	const char *config_path;
	struct gen *g;
	struct stats *st;
	struct pipeline *pl;
	struct control *ctl;
	struct metrics_http *mh;
	struct live *live;                /* [live] (NULL: off; live.h)        */
	struct zpub *pub;                 /* [publish] (NULL: off; zpub.h)     */
	uint64_t pub_status_ns;           /* last status published (MONOTONIC) */
	double pub_status_hz;             /* [publish] status_hz as started    */
	int epfd, sigfd, tfd, efd;

	struct sysnuma_plan plan;
	int plan_ready;                   /* plan resolved (after the first pc) */
	struct sysnuma_applied applied;   /* data thread + memory lock        */
	char housekeeping[256];           /* cpus of the main thread when moved
					     off [numa] cpus ("" = not moved) */
	int memory_locked;
	char memory_note[160];

	uint64_t start_ns;                /* CLOCK_MONOTONIC                   */
	/* Where start-up went (log_startup; status "startup"), ms: */
	double startup_ms[DAEMON_STARTUP_N];
	uint64_t wd_usec;                 /* 0 = no watchdog                   */
	uint64_t wd_last_ns, wd_last_hb;
	uint64_t wd_pings;
	int wd_stalled;                   /* logged once per stall              */

	struct trace *trace;              /* flight recorder ([trace] records) */
	struct trace_cpi *trace_buf;      /* the recorder's size, for replies   */
	uint64_t over_logged;             /* over_last value already logged    */
	uint64_t over_count_logged;       /* ST_OVER_BUDGET when last logged   */
	uint64_t over_log_ns;
	uint64_t unknown_count_logged;    /* ST_UNKNOWN_MODE_CPIS when last logged */
	uint64_t bad_pointing_log_ns;     /* last bad-pointing line (monotonic ns) */
	uint64_t bad_pointing_logged;     /* ST_BAD_POINTING_CPIS when last logged */
	uint64_t unknown_log_ns;

	struct stats_snapshot *snap_prev, *snap_now, *snap_delta;
	uint64_t stats_last_ns;
	double samples_per_s, cpis_per_s;
	struct ratewatch rw;              /* input rate against capacity       */

	int stopping;
	uint64_t stop_deadline_ns;
	int failed_reported;
	int exit_code;
	char *mbuf;                       /* metrics text for the control reply */
	char last_reload_error[256];
	char restart_keys[512];           /* restart-only keys whose value in the
					     file differs from the running one, as
					     the last applied reload found them
					     ("a.b,c.d"; "" = none)            */
	int broken;                       /* a failed reload left no rings     */
	char broken_why[320];
};

/* ---- gen.c ---------------------------------------------------------------- */

/*
 * Build a generation for cfg, in two steps. gen_create: reference, pc,
 * output file, and the rings of old (a reload; NULL at start) whose
 * geometry is unchanged (borrowed); a ring that must change is left NULL.
 * gen_attach: create the missing rings (a new input ring retires the old
 * one: producers see -ESTALE and re-attach) and the pipeline generation;
 * *created (may be NULL) gets bit k (1 << enum plan_ring_kind) for each
 * ring it created. Between the two a reload parks the data thread and lets go
 * of the old rings, because a ring cannot be re-created while we are still
 * attached to it. The rings are the input ring, the output ring (none
 * with [output] mode none) and the detection ring ([cfar] with a
 * [detections] ring). Both return NULL / a negative errno with err set.
 */
struct gen *gen_create(const struct daemon *d, const struct chirp_config *cfg,
		       struct gen *old, char *err, size_t errlen);
int gen_attach(const struct daemon *d, struct gen *g, int *created, char *err, size_t errlen);
/* Whether g has every ring its configuration needs (all borrowed after
 * gen_create: a reload can swap without re-creating one). */
int gen_has_rings(const struct gen *g);
/* Frees g and what it owns (not what it borrowed); g may be NULL. */
void gen_destroy(struct gen *g);

/* Slots of g's input ring (as configured while it has none). */
unsigned gen_in_slots(const struct gen *g);
/* The rate g sustains, CPI/s, what the input is compared with: the shared
 * figure when the host was calibrated, else the figure alone (0: unknown). */
double gen_sustainable_cps(const struct gen *g);
/* Record the host calibration's figure for g (shared_cps > 0, CPI/s; 0
 * forgets it) and store it in g's capacity cache entry when there is one.
 * Returns 0 (*stored: 1 when the cache holds it now), or a negative errno
 * with the reason in err (the figure is then not applied either). */
int gen_set_shared(struct gen *g, double shared_cps, int *stored, char *err, size_t errlen);
/* Milliseconds of input a ring of n slots holds at rate cps (0: unknown). */
double gen_ring_ms(unsigned n, double cps);
/* Log how much time the input ring holds at capacity; warn below buffer_ms. */
void gen_report_slack(const struct gen *g);
/* Bytes of g's rings' data regions, and of those page-locked for the
 * backend's DMA (rings registered in place: pc_info.staging "registered"
 * or "registered+copy"; the CPU backend pins none). A ring g has not
 * attached counts 0. */
void gen_ring_memory(const struct gen *g, size_t *in_bytes, size_t *out_bytes,
		     size_t *in_pinned, size_t *out_pinned);
/* One log line with g's radar modes: id, name, waveform type, L. */
void gen_log_modes(const struct gen *g);

/* Pin pc's own threads to the data path's cpus (d->plan); warns on failure. */
void daemon_bind_backend_threads(const struct daemon *d, struct pc *pc);

/* ---- reload.c ------------------------------------------------------------- */

/*
 * Parse the configuration file again and apply it between CPIs. reply may
 * be NULL (SIGHUP). Returns 0 or a negative errno with err set; the old
 * configuration keeps running on any error.
 */
int daemon_reload(struct daemon *d, json_t *reply, char *err, size_t errlen);

/* ---- ctlcmd.c ------------------------------------------------------------- */

/* The control socket's commands; ctx is the struct daemon. */
extern const struct control_cmd daemon_commands[];

/* What chirpctl status replies, into reply (an object). Also [publish]'s
 * status messages. */
void daemon_status_json(struct daemon *d, json_t *reply);

/* Prometheus text into buf (metrics_http's callback; ctx is the daemon). */
int daemon_render_metrics(void *ctx, char *buf, size_t len);

/* The live view's state JSON and map scales (live_state_fn; ctx is the
 * daemon). */
struct live_scales;
int daemon_render_live_state(void *ctx, struct live_scales *sc, char *buf, size_t len);

#endif /* CHIRP_DAEMON_H */
