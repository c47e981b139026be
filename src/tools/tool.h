/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tool.h — small helpers shared by the chirp-feed and chirp-tap programs
 * (strict number parsing, geometry strings, waiting for a ring to appear,
 * the terminal progress line). Not used by chirpd.
 */
#ifndef CHIRP_TOOL_H
#define CHIRP_TOOL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "chirp/ring.h"
#include "config.h"
#include "plan.h"
#include "synth.h"

/* Strict parsers: the whole string must be the number. 0 or -EINVAL. */
int tool_parse_u64(const char *s, uint64_t *v);
int tool_parse_double(const char *s, double *v);   /* finite only */
/* "X[,Y...]": 1..max finite numbers separated by commas into v; returns
 * how many, or -EINVAL (empty item, junk, more than max). */
int tool_parse_doubles(const char *s, double *v, int max);

/* Log "OPT 'VAL': WANT" (a rejected option value); returns -EINVAL. */
int tool_bad_arg(const char *opt, const char *val, const char *want);

/* "C,P,R" or "CxPxR", each 1..2^24. 0 or -EINVAL. */
int tool_parse_geometry(const char *s, unsigned *c, unsigned *p, unsigned *r);

/* "cf32" | "sc16" | "rf32" | "det" <-> enum chirp_ring_format. */
int tool_parse_ring_format(const char *s, uint32_t *fmt);
const char *tool_ring_format_name(uint32_t fmt);

/*
 * The ring geometry options of --create shared by chirp-feed and chirp-tap:
 * --geometry C,P,R, --format F, --slots N, --sample-rate HZ. Each one given
 * overrides what the configuration or recording says.
 */
struct tool_geom_opts {
	int have_geometry, have_format, have_slots, have_rate_hz;
	unsigned c, p, r, slots;
	uint32_t fmt;
	double sample_rate_hz;
};

/* Parse ARG of the long option NAME ("geometry", "format", "slots",
 * "sample-rate": getopt_long's long_opts[longindex].name) into o;
 * formats_hint completes the --format error ("want cf32, sc16 or rf32").
 * 0, or -EINVAL with the error logged. */
int tool_geom_opt(struct tool_geom_opts *o, const char *name, const char *arg,
		  const char *formats_hint);
/* Whether any of the four was given. */
int tool_geom_given(const struct tool_geom_opts *o);
/* Apply the given ones to g. */
void tool_geom_apply(const struct tool_geom_opts *o, struct chirp_ring_geometry *g);

/* 1 if ring geometry g holds CPIs of the shape and format that chirpd's
 * input or output ring has for configuration c (plan_ring_geometry; the
 * slot count and sample rate may differ), else 0. */
int tool_ring_fits_config(const struct chirp_ring_geometry *g, const struct chirp_config *c,
			  enum plan_ring_kind which);

/*
 * --target GATE,AMP_DB[,DOPPLER_HZ] (chirp-feed, chirp-tap --verify):
 * append specs[0..n-1] to t[*nt..] (SYNTH_MAX_TARGETS in all). The PRF
 * that turns Hz into cycles per pulse is prf_hz when > 0, else the
 * configuration's [radar] prf_hz (through plan_pc_params, as chirpd
 * reads it), so that a target lands in the Doppler bin chirpd computes;
 * a prf_hz that differs from the configuration's is warned about. 0, or
 * -EINVAL with the reason logged.
 * The synthesis options chirp-feed and chirp-tap (--verify, --verify-input)
 * share, parsed by one function so that the tap regenerates exactly what
 * the feed produced from the same options:
 *   --target GATE,AMP_DB[,DOPPLER]  (repeatable; synth_parse_target)
 *   --prf HZ                        the PRF for a DOPPLER in Hz
 *   --snr-db X | --noise-dbfs X | --noiseless   the noise (default:
 *                                   SYNTH_DEFAULT_NOISE_DBFS)
 *   --seed N                        noise seed (default 1)
 * TOOL_SYNTH_LONG_OPTS goes into a program's getopt_long table; the
 * program passes every option it does not know itself to tool_synth_opt.
 */
enum {
	TOOL_O_TARGET = 0x1000, TOOL_O_TARGETS, TOOL_O_PRF, TOOL_O_SNR, TOOL_O_NOISE,
	TOOL_O_NOISELESS, TOOL_O_SEED, TOOL_O_JAMMER, TOOL_O_ASPACING, TOOL_O_AFILE,
	TOOL_O_CAL,
};
#define TOOL_SYNTH_LONG_OPTS \
	{ "target", required_argument, NULL, TOOL_O_TARGET }, \
	{ "targets", required_argument, NULL, TOOL_O_TARGETS }, \
	{ "prf", required_argument, NULL, TOOL_O_PRF }, \
	{ "snr-db", required_argument, NULL, TOOL_O_SNR }, \
	{ "noise-dbfs", required_argument, NULL, TOOL_O_NOISE }, \
	{ "noiseless", no_argument, NULL, TOOL_O_NOISELESS }, \
	{ "seed", required_argument, NULL, TOOL_O_SEED }, \
	{ "jammer", required_argument, NULL, TOOL_O_JAMMER }, \
	{ "array-spacing", required_argument, NULL, TOOL_O_ASPACING }, \
	{ "array-file", required_argument, NULL, TOOL_O_AFILE }, \
	{ "calibration", required_argument, NULL, TOOL_O_CAL }

/* The --help lines of the options above (the same for both programs). */
#define TOOL_SYNTH_USAGE \
"      --target GATE,AMP_DB[,DOPPLER][,az=DEG[,el=DEG]]  an echo (repeatable):\n" \
"                         at range sample GATE, peak amplitude AMP_DB dB full\n" \
"                         scale, Doppler shift DOPPLER in Hz (800 or 800Hz; beyond\n" \
"                         +-PRF/2 it aliases, as in a radar) or in cycles per\n" \
"                         pulse (0.125/pulse), from direction az, el (degrees\n" \
"                         from boresight: each channel's phase from the array)\n" \
"      --jammer noise|cw,AZ_DEG,POWER_DB[,el=DEG][,f=CYCLES]  an emitter at a\n" \
"                         direction on every sample, POWER_DB dBFS per sample at\n" \
"                         an element: white noise, or a tone of f cycles per\n" \
"                         sample (default 0.1); repeatable\n" \
"      --array-spacing M  the array for directions: a uniform line of the\n" \
"                         channels M metres apart along x, centred\n" \
"      --array-file PATH  or any geometry: x_m y_m z_m per channel (doc/beams.md)\n" \
"      --calibration PATH  gain phase_deg per channel (default: gain 1)\n" \
"                         (default: the [array] of -c; the carrier: [radar]\n" \
"                         carrier_hz of -c)\n" \
"      --prf HZ           PRF for a DOPPLER in Hz (default: [radar] prf_hz of -c)\n" \
"      --noise-dbfs X     complex white noise of power X dBFS (default -40: a\n" \
"                         target's per-sample SNR is AMP_DB + 40 dB)\n" \
"      --snr-db X         noise for a per-sample SNR X dB of the strongest target\n" \
"      --noiseless        no noise: exact echoes (a detector thresholds rounding\n" \
"                         residue on a noiseless map)\n" \
"      --seed N           noise seed (default 1); CPI k depends only on seed and k\n"

struct tool_synth_opts {
	const char *target[SYNTH_MAX_TARGETS];   /* --target specs, in order */
	size_t ntarget;
	double prf_hz;                  /* --prf; 0: [radar] prf_hz of -c     */
	double snr_db, noise_dbfs;
	int have_snr, have_noise_dbfs, noiseless;
	uint64_t seed;                  /* --seed, default 1                   */
	const char *jammer[SYNTH_MAX_JAMMERS];   /* --jammer specs          */
	size_t njammer;
	double array_spacing_m;         /* --array-spacing; 0: none            */
	const char *array_file;         /* --array-file                        */
	const char *calibration;        /* --calibration                       */
};

void tool_synth_opts_init(struct tool_synth_opts *o);

/* Option c (getopt_long's return) with its argument: 1 if it is one of
 * TOOL_SYNTH_LONG_OPTS and was taken, 0 if it is not one of them,
 * -EINVAL with the reason logged. */
int tool_synth_opt(struct tool_synth_opts *o, int c, const char *arg);

/* 1 if any --target was given. */
int tool_synth_given(const struct tool_synth_opts *o);

/* The options that exclude or need one another (--prf without --target,
 * two noise options, a noise option without --target). 0 or -EINVAL. */
int tool_synth_check(const struct tool_synth_opts *o);

/*
 * The targets and noise power the options describe, with configuration c
 * (read from config_path) for the PRF: a --prf that differs from its
 * [radar] prf_hz is warned about, since the targets would not land in the
 * Doppler bins chirpd computes. 0, or -EINVAL with the reason logged.
 */
int tool_synth_targets(const struct tool_synth_opts *o, const struct chirp_config *c,
		       const char *config_path, struct synth_target *t, size_t *nt,
		       double *noise_power);

/*
 * The generator the options describe for configuration c: targets t[0..nt)
 * (tool_synth_targets), the --jammer emitters and, when a target or
 * jammer has a direction, the receive array of --array-spacing or
 * --array-file (with --calibration), else the [array] of c, at [radar]
 * carrier_hz of c. NULL with the reason logged (an array file's errors
 * name its FILE:LINE).
 */
struct synth *tool_synth_create(const struct tool_synth_opts *o, const struct chirp_config *c,
				const struct synth_target *t, size_t nt, double noise_power);

/* Clocks: mono_s() and mono_ns() in timeutil.h. */

/*
 * Sleep up to s seconds; returns early (-EINTR) when a signal arrives, so
 * the caller can look at its stop flag.
 */
int tool_sleep(double s);

/*
 * How full socket fd's receive buffer is: the bytes the kernel charges to
 * it (datagrams waiting, with their overhead) over the buffer's size, in
 * *frac (0..1, more when the kernel went over). Returns 0, or -errno
 * (SO_MEMINFO unknown to the kernel: Linux before 4.6).
 */
int tool_socket_fill(int fd, double *frac);

/*
 * Attach to ring NAME in role, retrying every 50 ms for up to wait_s
 * seconds (0 = one try) while *stop stays 0. opts as for
 * chirp_ring_attach (NULL = defaults: refuse a ring another uid owns).
 * Returns NULL with the last reason in err ("no ring /x: is its creator
 * (chirpd) running?").
 */
struct chirp_ring *tool_attach_wait(const char *name, enum chirp_ring_role role,
				    const struct chirp_ring_opts *opts,
				    double wait_s, volatile sig_atomic_t *stop,
				    char *err, size_t errlen);

/* Install handlers for SIGINT/SIGTERM that only set *flag (no SA_RESTART). */
int tool_catch_signals(volatile sig_atomic_t *flag);

/* Progress line on stderr, only when stderr is a terminal and !quiet. */
struct tool_progress {
	int on;
	double last;            /* mono_s() of the last line             */
	int shown;              /* a line is on screen (needs a newline)  */
};
void tool_progress_init(struct tool_progress *p, int quiet);
/* Print "\r<line>" at most 4 times a second (force = now). */
void tool_progress(struct tool_progress *p, int force, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* End the line (before other output or at exit). */
void tool_progress_end(struct tool_progress *p);

#endif /* CHIRP_TOOL_H */
