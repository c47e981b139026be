/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plan.h — what one configuration builds, derived once.
 *
 * The config module parses and checks each key (config.h); the plan turns
 * a checked configuration into what the daemon and the tools build from:
 * pulse compression's parameters (struct pc_params, the radar chain
 * included), the Doppler axis (P' and Nd), the thread counts, the three
 * rings' geometries as an array indexed by ring kind, and the latency
 * budget in ns. chirpd builds a generation from a plan (gen.c) and a
 * reload compares two plans (plan_compare); nothing re-derives a value on
 * the way.
 *
 * The rules between keys that another module owns (the radar chain's:
 * radar_check; the CPI's size against a ring slot and the machine) are
 * checked here for the config module: config.h declares the interface
 * (config_check_rules, struct config_fault) and plan.c implements it, so
 * config calls down into no other module and the plan uses only config's
 * types, never its functions. config reports each fault at the FILE:LINE
 * of the key that makes the combination wrong.
 */
#ifndef CHIRP_PLAN_H
#define CHIRP_PLAN_H

#include <stdint.h>

#include "chirp/pc.h"
#include "chirp/ring.h"
#include "config.h"
#include "live.h"
#include "zpub.h"

/* Where the live view listens when [metrics] listen is empty: loopback. */
#define PLAN_LIVE_LISTEN "127.0.0.1:9464"

/* chirpd's rings, in the order a generation attaches them. */
enum plan_ring_kind { PLAN_RING_IN, PLAN_RING_OUT, PLAN_RING_DET, PLAN_RINGS };

struct plan_ring {
	int used;                    /* 0: the configuration has no such ring
					(output mode none; no [cfar] or no
					[detections] ring); the rest is zero */
	struct chirp_ring_geometry geo;  /* slots 0 = auto: the generation
					sizes the ring at start (gen.c)     */
	const char *name;            /* shm name (points into the config)   */
	const char *what;            /* "input", "output", "detection"      */
	int role;                    /* CHIRP_RING_CONSUMER (input) or
					CHIRP_RING_PRODUCER                  */
	int hugepages;               /* [input] hugepages (input only)      */
	int allow_foreign_owner;     /* [section] allow_foreign_owner       */
};

/* The files results are also appended to ([output] file, [detections]
 * file), written by sink threads off the data path (sink.c). */
enum plan_file_kind { PLAN_FILE_OUT, PLAN_FILE_DET, PLAN_FILES };

struct plan_file {
	const char *path;            /* NULL: none (empty key, output mode
					none, or no [cfar]); else points
					into the config                      */
	const char *what;            /* "[output] file", "[detections] file" */
};

struct plan {
	const struct chirp_config *cfg;  /* what it was built from: the plan
					    points into it (names, the wisdom
					    file, the GPU's bus id) and is
					    valid while it is               */
	struct pc_params pc;         /* all but the references (pc.ref,
					pc.modes) and the Doppler window
					(pc.radar.window), which the
					builder makes                        */
	unsigned doppler_pulses;     /* P' after MTI, 0 without [doppler]   */
	unsigned doppler_nfft;       /* Nd, 0 without [doppler]             */
	struct plan_ring ring[PLAN_RINGS];
	struct plan_file file[PLAN_FILES];
	uint64_t latency_budget_ns;  /* [trace] latency_budget_ms, 0 = none */
	struct zpub_params publish;  /* [publish] (listen "" = off); the
					daemon adds det_bytes, which the pc
					reports, and its counters            */
	double publish_status_hz;    /* [publish] status_hz, 0 = none       */
	int live_enable;             /* [live] enable                       */
	struct live_params live;     /* [live]                              */
	const char *http_listen;     /* the HTTP listener's address: [metrics]
					listen, else PLAN_LIVE_LISTEN with
					[live] enable, else NULL (none)      */
};

/*
 * Derive p from c (a configuration config_load accepted). Returns 0, or
 * -EINVAL with f filled: the keys of the rule that failed and why (a
 * configuration that config_load accepted passes). f may be NULL.
 */
int plan_build(struct plan *p, const struct chirp_config *c, struct config_fault *f);

/* A ring sized after the plan was built (slots = auto): n slots. */
void plan_set_slots(struct plan *p, enum plan_ring_kind which, unsigned n);

/* What a reload changes between the running plan a and the next b (the
 * keys that need a restart are the configuration's: config_restart_keys). */
struct plan_diff {
	int same_shape;              /* a CPI of b keeps a's depth choice
					(workkey.c, WORKKEY_SHAPE)           */
	int same_work;               /* the configuration's side of "the same
					work" (WORKKEY_CAPACITY): the caller
					adds what the two pcs chose          */
	int ring_kept[PLAN_RINGS];   /* b uses the ring a has, unchanged:
					geometry, name and huge pages        */
};
void plan_compare(const struct plan *a, const struct plan *b, struct plan_diff *d);

/* The pieces plan_build is made of, for the tools that need one of them
 * without a plan. Each is the one definition of its value. */

/* pc_params from c (pc.ref, pc.modes and pc.radar.window left empty;
 * pointers into c, valid while c is). */
void plan_pc_params(const struct chirp_config *c, struct pc_params *p);

/* The geometry of ring which for c, the one place that decides it. Input:
 * [cpi] shape, [input] format. Output: [output] mode: complex is cf32
 * C x P x R, magnitude and power_db rf32 C x P x R, map_power and map_db
 * rf32 C x Nd x R. Detections: format det, 1 x 1 x max_detections. Each
 * with [waveform] sample_rate_hz and its section's slots as configured
 * (0 = auto). Returns 1, or 0 when c has no such ring (*g zeroed). */
int plan_ring_geometry(const struct chirp_config *c, enum plan_ring_kind which,
		       struct chirp_ring_geometry *g);

/* P' and Nd of c ([doppler]; 0 without it, or P' 0 when the MTI leaves
 * no pulse): radar_pulses_after_mti and radar_doppler_nfft. */
unsigned plan_doppler_pulses(const struct chirp_config *c);
unsigned plan_doppler_nfft(const struct chirp_config *c);

/* FFTW threads: cpu_threads, or for auto (0) the cpus in [numa] cpus,
 * else online cpus, at most 8. Copy-staging threads: staging_threads, or
 * for auto the same count, at most 16. */
int plan_cpu_threads(const struct chirp_config *c);
int plan_staging_threads(const struct chirp_config *c);

/* The rows per pulse the chain runs on: [beams] count with beams, else
 * [cpi] channels (the output's channels). */
unsigned plan_chain_rows(const struct chirp_config *c);

/*
 * The beams' arrays pc_params.beams points at (plan_pc_params leaves them
 * NULL): the element positions (a ULA of [array] spacing_m, or [array]
 * file, read now), the calibration ([array] calibration, read now), the
 * taper over the channels and the list's directions; spacing_u resolved
 * (auto: lambda over the aperture). plan_beams_make returns 0, or -EINVAL
 * with f naming the key (a file's error keeps the file's own FILE:LINE in
 * f->why); with [beams] mode off it makes nothing. plan_beams_apply points
 * p->beams at them (they must outlive pc_create, which copies them).
 */
struct plan_beams {
	double *pos, *cal, *taper, *list;
	double spacing_u;
};
int plan_beams_make(const struct chirp_config *c, struct plan_beams *b, struct config_fault *f);
void plan_beams_apply(const struct plan_beams *b, struct pc_params *p);
void plan_beams_free(struct plan_beams *b);

/* [trace] latency_budget_ms in ns (0 = no budget). */
uint64_t plan_budget_ns(const struct chirp_config *c);

#endif /* CHIRP_PLAN_H */
