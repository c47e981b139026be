/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h — chirpd's configuration, declared once.
 *
 * One table in config_table.c (name, section, type, default, min, max, whether it
 * can change on reload, help text) drives parsing (inih), defaults, range
 * checks, --check output, the `config` control reply, `make`'s generated
 * documentation and conf/chirpd.conf's comments. Errors read
 * "FILE:LINE: [section] key: reason".
 */
#ifndef CHIRP_CONFIG_H
#define CHIRP_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Leaf headers only: the enums the configuration stores (pc_types.h,
 * waveform.h). What is derived from a configuration is the plan's
 * (plan.h), so config knows nothing of pc, rings or the machine. */
#include "chirp/pc_types.h"
#include "waveform.h"

struct json_t;

enum cfg_numa_node { CFG_NUMA_AUTO = -2, CFG_NUMA_NONE = -1 /* >= 0: node */ };
enum cfg_realtime  { CFG_RT_OFF = 0, CFG_RT_PREFERRED = 1, CFG_RT_REQUIRED = 2 };
enum cfg_array     { CFG_ARRAY_ULA = 0, CFG_ARRAY_FILE = 1 };

#define CFG_PATH_MAX 256

/*
 * A radar mode: a full waveform description under a small id. [mode NAME]
 * sections declare them (id = 0..CFG_MAX_MODES-1 and the [waveform] keys);
 * a [waveform] section is the mode "default" with id 0, so a file with
 * only [waveform] has exactly one mode, as before modes existed.
 */
#define CFG_MAX_MODES PC_MAX_MODES   /* 64                             */
#define CFG_MODE_NAME_MAX 32
struct cfg_mode {
	unsigned id;                         /* 0 .. CFG_MAX_MODES-1         */
	char name[CFG_MODE_NAME_MAX];        /* [mode NAME]; "default" for [waveform] */
	struct wf_params wf;                 /* wf.file: use config_mode_wf  */
	char wf_file[CFG_PATH_MAX];
};

struct chirp_config {
	char path[CFG_PATH_MAX];             /* file it was read from       */

	/* [daemon] */
	char control_socket[CFG_PATH_MAX];   /* default /run/chirpd/control.sock */
	int log_level;                       /* LOG_* from syslog.h         */
	char control_group[64];              /* group allowed to mutate ("" = none) */
	int remove_rings_on_stop;            /* chirpd --remove-rings --if-configured */

	/* [numa] */
	int numa_node;                       /* CFG_NUMA_AUTO, CFG_NUMA_NONE, or node */
	char cpus[128];                      /* cpu list "2-5,8" ("" = node's cpus) */
	int realtime;                        /* enum cfg_realtime           */
	int rt_priority;                     /* SCHED_FIFO 1..99            */
	int lock_memory;                     /* mlockall                    */

	/* [input] */
	char input_ring[CFG_PATH_MAX];       /* default /chirpd-in          */
	unsigned input_slots;                /* power of two, 0 = auto (sized
						from input_buffer_ms and the
						capacity measured at start) */
	double input_buffer_ms;              /* slack the input ring holds at
						capacity, ms                */
	enum pc_format format;
	int input_hugepages;
	int input_allow_foreign_owner;       /* adopt a ring another uid owns */

	/* [cpi] */
	unsigned channels, pulses, samples;

	/* [waveform]: sample_rate_hz (the radar's, every mode's) is set here;
	 * the rest of wf and wf_file is a copy of mode id 0's waveform, for
	 * code that knows one waveform (config_load and config_defaults
	 * make it; the modes below are what the file says). */
	struct wf_params wf;                 /* wf.file points at wf_file   */
	char wf_file[CFG_PATH_MAX];

	/* [mode NAME] sections and [waveform]: every configured mode, in the
	 * order of the file, ids distinct; nmodes >= 1. [waveform]'s mode
	 * ("default", id 0) is first unless a [mode NAME] section has id 0;
	 * each mode's wf.sample_rate_hz is [waveform] sample_rate_hz. */
	struct cfg_mode modes[CFG_MAX_MODES];
	unsigned nmodes;

	/* [processing] */
	enum pc_backend backend;
	int gpu;                             /* index, or -1 with gpu_bus_id */
	char gpu_bus_id[32];
	unsigned streams;                     /* 0 = auto (pc_params.streams) */
	size_t nfft;                         /* 0 = auto                    */
	enum pc_normalize normalize;
	int cpu_threads;                     /* 0 = auto (plan_cpu_threads) */
	enum pc_staging staging;
	int staging_threads;                 /* 0 = auto (plan_staging_threads) */
	int busy_poll;                       /* poll, never sleep, with CPIs in flight */
	unsigned idle_spin_us;               /* poll this long before sleeping, µs */
	/* [processing] backend tuning: struct pc_tuning (plan_pc_params) */
	enum pc_fftw_planner fftw_planner;
	char fftw_wisdom[CFG_PATH_MAX];      /* wisdom file ("" = none);
						tune.fftw_wisdom points here */
	char capacity_cache[CFG_PATH_MAX];   /* start-up decisions' cache:
						"auto", "" (none) or a path */
	enum pc_switch takeover;             /* auto: on when idle_spin_us > 0 */
	unsigned cpu_block_kib;              /* 0 = auto                    */
	int cuda_graphs;                     /* bool                        */
	unsigned cuda_chunks;                /* 0 = auto                    */
	unsigned cuda_idle_chunks;           /* 1..PC_MAX_CHUNKS            */
	unsigned cuda_spin_us;               /* 0..PC_MAX_CUDA_SPIN_US      */
	int staging_nt;                      /* bool: non-temporal staging copies */
	enum pc_switch cuda_fused;           /* auto: fused where nfft and shared
						memory allow, else cuFFT    */

	/* [output] */
	enum pc_output out_mode;
	char output_ring[CFG_PATH_MAX];      /* default /chirpd-out         */
	unsigned output_slots;
	char output_file[CFG_PATH_MAX];      /* also append results here ("" = off) */
	int output_allow_foreign_owner;      /* adopt a ring another uid owns */
	int output_hugepages;                /* back the ring with 2 MiB pages */

	/* [radar]: what turns bins into metres and metres per second */
	double prf_hz;                       /* pulse repetition frequency, 0 = unknown */
	double carrier_hz;                   /* carrier frequency, 0 = unknown */
	enum pc_switch velocity;             /* auto: on when both are set  */

	/* [doppler] (pc_params.radar; the window is filled by the caller
	 * with wf_window_fill over P' pulses, plan_doppler_pulses) */
	int doppler;                         /* bool                        */
	enum pc_mti mti;
	enum wf_window doppler_window;
	unsigned doppler_taylor_nbar;
	double doppler_taylor_sll_db;
	unsigned doppler_fft;                /* Nd, 0 = auto                */

	/* [cfar] */
	int cfar;                            /* bool                        */
	enum pc_cfar cfar_method;
	int cfar_integrate;                  /* 1 noncoherent, 0 none       */
	unsigned guard_range, guard_doppler;
	unsigned train_range, train_doppler;
	unsigned os_rank;                    /* 0 = auto                    */
	double pfa;
	unsigned maxima_range, maxima_doppler;
	unsigned max_detections;

	/* [array] (pc_params.beams: the element positions and calibration,
	 * read by plan_beams_make) */
	int array_geometry;                  /* CFG_ARRAY_ULA or CFG_ARRAY_FILE */
	double array_spacing_m;              /* ula: element spacing, 0 = unset */
	char array_file[CFG_PATH_MAX];       /* file: x y z per channel     */
	char array_calibration[CFG_PATH_MAX];/* gain phase per channel, "" = none */

	/* [beams] (pc_params.beams) */
	enum pc_beams_mode beams_mode;       /* off, conventional, mvdr     */
	enum pc_beams_layout beams_layout;   /* fan or list                 */
	unsigned beams_count;                /* B                           */
	double beams_azimuth_deg, beams_elevation_deg; /* the fan's centre  */
	double beams_spacing_u;              /* fan: du, 0 = auto (lambda / aperture) */
	char beams_list[1024];               /* list: "az,el; az,el; ..."   */
	enum wf_window beams_taper;
	unsigned beams_taylor_nbar;
	double beams_taylor_sll_db;
	unsigned beams_snapshots;            /* mvdr: K, 0 = auto (2 C)     */
	unsigned beams_first_gate, beams_gate_stride, beams_pulse_stride;
	double beams_loading;                /* mvdr: delta                 */
	int beams_monopulse;                 /* bool                        */

	/* [detections] */
	char det_ring[CFG_PATH_MAX];         /* "" = no detection ring      */
	unsigned det_slots;                  /* 0 = auto                    */
	char det_file[CFG_PATH_MAX];         /* JSON lines ("" = none)      */
	int det_allow_foreign_owner;

	/* [metrics] */
	char metrics_listen[64];             /* "127.0.0.1:9464", "" = off  */
	int metrics_allow_remote;            /* a non-loopback listen       */

	/* [live] */
	int live_enable;
	double live_fps;
	unsigned live_max_clients;
	unsigned live_map_max_range, live_map_max_doppler;

	/* [publish] */
	char pub_listen[256];                /* ZeroMQ endpoint, "" = off   */
	int pub_detections;
	double pub_status_hz, pub_maps_hz;   /* 0 = none                    */
	unsigned pub_map_max_range, pub_map_max_doppler;
	unsigned pub_hwm;                    /* ZMQ_SNDHWM, messages        */
	unsigned pub_queue;                  /* det queue, lists            */

	/* [trace] */
	unsigned trace_records;              /* flight recorder: last N CPIs */
	double latency_budget_ms;            /* 0 = no budget               */
};

/* Defaults for every key. */
void config_defaults(struct chirp_config *c);

/*
 * Parse FILE into c (defaults first). Every error is written to errs as
 * one line "FILE:LINE: [section] key: reason" (errs may be NULL) and
 * counted; returns the number of errors (0 = valid), or -errno if the
 * file cannot be read. Consistency checks (pulse longer than a range line,
 * bandwidth above the sample rate, ...) are included, with the line of the
 * key that makes the combination wrong.
 */
int config_load(struct chirp_config *c, const char *file, FILE *errs);

/* Same, from a string in memory (name is used in messages). */
int config_load_string(struct chirp_config *c, const char *name,
		       const char *text, FILE *errs);

/* Write the effective configuration as an INI file that config_load reads back. */
void config_print(const struct chirp_config *c, FILE *out);

/* The effective configuration as a JSON object (jansson json_t *; caller
 * decrefs): {section: {key: value}} as config_print writes it, and
 * "modes": [{"id", "name", "section" ("waveform" or "mode NAME"), and the
 * mode's [waveform] keys but sample_rate_hz}] for every mode. */
struct json_t *config_to_json(const struct chirp_config *c);

/*
 * Keys whose values differ between a and b and that cannot change on
 * reload: writes "section.key" names, comma separated, into buf; returns
 * how many. The modes are never among them: they change on reload.
 */
int config_restart_keys(const struct chirp_config *a, const struct chirp_config *b,
			char *buf, size_t len);

/* Write conf/chirpd.conf-style documentation of every key to out
 * (conf/chirpd.conf is exactly this output; test_config checks it). */
void config_write_reference(FILE *out);

/* The same reference as Markdown (doc/config.md is exactly this output). */
void config_write_markdown(FILE *out);

/*
 * &c->wf with wf.file pointing at c->wf_file (or NULL if empty). Use it
 * instead of &c->wf after copying a struct chirp_config (struct copies
 * carry the old wf.file pointer).
 */
const struct wf_params *config_wf(struct chirp_config *c);

/* 1 if [section] key can change on reload, 0 if it needs a restart,
 * -ENOENT if there is no such key. */
int config_key_reloadable(const char *section, const char *name);

/*
 * The keys that cannot change on reload (those config_restart_keys names)
 * keep their running values: copies each of them from running into next,
 * and points next->wf.file and each mode's wf.file at next's own files
 * (config_wf, config_mode_wf); next's modes stay. After it,
 * config_restart_keys(running, next) reports none. A reload calls it on
 * the freshly loaded configuration before applying it, so what runs, what
 * `config` shows and what the reply calls a restart key agree.
 */
void config_hold_restart_keys(const struct chirp_config *running, struct chirp_config *next);

/*
 * The table's key i (0, 1, ... in table order): *section and *name, and
 * returns 1 if it can change on reload, 0 if it needs a restart, -ENOENT
 * past the last key. For tests and tools that walk every key.
 */
int config_key_at(size_t i, const char **section, const char **name);

/* Mode i's waveform (0 <= i < nmodes) with wf.file pointing at that
 * mode's wf_file (or NULL if empty), as config_wf does for [waveform];
 * NULL for i >= nmodes. */
const struct wf_params *config_mode_wf(struct chirp_config *c, unsigned i);

/* The index in c->modes of the mode with this id, or -1. */
int config_mode_index(const struct chirp_config *c, unsigned id);

/*
 * A rule between keys that another module owns (the radar chain's, the
 * CPI against a ring slot), as that module reports it: the keys of the
 * combination as "section.key", the one the reason is about first (NULL
 * after the last), and the reason. config_load reports it at the line of
 * whichever of the keys the file set last.
 */
#define CONFIG_FAULT_KEYS 6
struct config_fault {
	const char *keys[CONFIG_FAULT_KEYS];
	int residual;                /* a catch-all check after the owned
					rules passed: reported only when the
					file has no other error            */
	char why[256];
};

/*
 * The rules between keys that other modules own, checked on c: fills up
 * to max faults into f and returns how many there are (0 = none). Defined
 * by the plan module (plan.c), which derives what those modules are given;
 * config_load calls it after its own checks, so that --check and a reload
 * report every rule at FILE:LINE.
 */
int config_check_rules(const struct chirp_config *c, struct config_fault *f, int max);

#endif /* CHIRP_CONFIG_H */
