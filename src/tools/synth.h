/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth.h — deterministic synthetic radar echoes, shared by chirp-feed (to
 * produce CPIs) and chirp-tap --verify (to regenerate what was produced).
 *
 * MODEL (documented in doc/tools.md)
 *   A CPI is C channels x P pulses x R range samples, [channel][pulse][range]
 *   as in chirp/pc.h. Sample values are in full-scale units: cf32 as is,
 *   sc16 = round(32768 * value) saturated to [-32768, 32767].
 *
 *   s is the transmitted pulse (the waveform built with a rect window),
 *   scaled by synth_create so that max_k |s[k]| = 1. Each target
 *   (gate, amp_db, doppler) adds, to every channel and pulse row,
 *
 *       x[gate + k] += a * exp(j*2*pi*doppler*n) * s[k],  k = 0..L-1,
 *       a = 10^(amp_db/20)   (amp_db in dB full scale, <= 0 for sc16),
 *       n = k_cpi * P + pulse (global pulse index), doppler in cycles/pulse,
 *
 *   truncated at the end of the row (gate + k >= R is not written), so its
 *   compressed peak is at gate `gate`.
 *
 *   ANGLES: a target given a direction (az, el) (degrees from boresight,
 *   doc/beams.md's frame) reaches channel c as g_c a_c(u, v) times the
 *   above, a_c(u, v) = exp(+j 2 pi / lambda (x_c u + y_c v + z_c w)),
 *   (u, v) = (sin az cos el, sin el), w = sqrt(1 - u^2 - v^2), lambda =
 *   299792458 / carrier_hz, x_c, y_c, z_c and g_c the array's element
 *   position and calibration (array.h): what chirpd's beamformer divides
 *   out. A target without a direction reaches every channel alike (gain
 *   1), as it does without an array. A jammer (synth_jammer) at a direction
 *   adds J[n] g_c a_c(u, v) to every sample, J the same for all channels:
 *   complex white Gaussian noise of power 10^(power_db/10) ("noise"),
 *   drawn from its own stream keyed by (seed, CPI, pulse, jammer), or a
 *   tone of that power at cycles_per_sample, its phase running on over
 *   the global sample index (k P + pulse) R + r ("cw"). Noise (none when noise_power is 0;
 *   the tools default to SYNTH_DEFAULT_NOISE_DBFS) is complex white
 *   Gaussian with power noise_power (full-scale units, E|z|^2), drawn from
 *   a counter-based generator keyed by (seed, CPI index): CPI k depends only
 *   on (parameters, seed, k), so anyone who knows them can regenerate it.
 *
 *   With --snr-db X the tools set noise_power = a_max^2 / 10^(X/10): X is
 *   the per-sample SNR of the strongest target before compression (the
 *   compressed SNR is X + 10 log10(L) dB for a unit-modulus pulse).
 *
 *   first_sample of CPI k is k * P * R (synth_first_sample).
 *
 *   RADAR MODES: a generator may hold up to SYNTH_MAX_MODES transmitted
 *   pulses, one per radar mode id (synth_params.modes). CPI k of mode m
 *   (synth_generate_mode) uses mode m's pulse, each scaled to peak 1 on
 *   its own; the targets, the noise stream and first_sample do not depend
 *   on the mode, so the same (seed, k) in two modes differ only in the
 *   echoes' pulse. Every pulse is copied at synth_create: choosing a mode
 *   per CPI allocates nothing.
 *
 * LIFECYCLE
 *   synth_create() validates and allocates everything; synth_generate()
 *   does no allocation; synth_destroy() frees. One thread at a time.
 */
#ifndef CHIRP_SYNTH_H
#define CHIRP_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "chirp/pc.h"

#define SYNTH_MAX_TARGETS 64

/*
 * The noise the tools add to synthetic echoes unless told otherwise
 * (--snr-db, --noise-dbfs, --noiseless): complex white Gaussian noise of
 * power -40 dBFS, so a target of AMP_DB dBFS has a per-sample SNR of
 * AMP_DB + 40 dB. A detector needs noise: CFAR on a noiseless map
 * thresholds the FFT's rounding residue.
 */
#define SYNTH_DEFAULT_NOISE_DBFS (-40.0)

struct synth_target {
	unsigned gate;               /* start sample of the echo, 0 <= gate < R  */
	double amp_db;               /* peak amplitude, dB full scale             */
	double doppler;              /* cycles per pulse, -0.5 .. 0.5 (0 = none)  */
	int has_angle;               /* az_deg, el_deg given (needs the array)    */
	double az_deg, el_deg;       /* direction, degrees from boresight, within
					the visible region                        */
};

#define SYNTH_MAX_JAMMERS 8

enum synth_jam_kind { SYNTH_JAM_NOISE = 0, SYNTH_JAM_CW = 1 };

/* A jammer: an emitter at a direction, on every sample of every pulse. */
struct synth_jammer {
	enum synth_jam_kind kind;
	double az_deg, el_deg;       /* direction, as a target's               */
	double power_db;             /* power per sample at one element, dBFS  */
	double cycles_per_sample;    /* cw: the tone's frequency, -0.5 .. 0.5   */
};

/* The receive array a direction is synthesised for (synth_params). */
struct array;
struct synth_array {
	const struct array *array;   /* positions and calibration; channels = C */
	double carrier_hz;           /* > 0                                     */
};

#define SYNTH_MAX_MODES PC_MAX_MODES

/* One radar mode's transmitted pulse (synth_params.modes). */
struct synth_mode {
	unsigned id;                         /* radar mode id, distinct         */
	const float *pulse;                  /* s: 2*pulse_len floats (re, im)  */
	size_t pulse_len;                    /* L, 1 <= L <= R                  */
};

struct synth_params {
	unsigned channels, pulses, samples;  /* C, P, R >= 1                    */
	enum pc_format format;               /* PC_FMT_CF32 or PC_FMT_SC16      */
	/* nmodes 0: one mode, id 0, with this pulse; else these modes (pulse
	 * and pulse_len unused), 1..SYNTH_MAX_MODES of them */
	const float *pulse;                  /* s: 2*pulse_len floats (re, im)  */
	size_t pulse_len;                    /* L, 1 <= L <= R                  */
	const struct synth_mode *modes;
	size_t nmodes;
	const struct synth_target *targets;  /* may be NULL when ntargets = 0   */
	size_t ntargets;                     /* <= SYNTH_MAX_TARGETS            */
	double noise_power;                  /* E|z|^2, full-scale units, >= 0  */
	uint64_t seed;
	const struct synth_jammer *jammers;  /* may be NULL when njammers = 0   */
	size_t njammers;                     /* <= SYNTH_MAX_JAMMERS            */
	const struct synth_array *array;     /* needed by a direction; else NULL */
};

void synth_params_init(struct synth_params *p);

/*
 * Parse one target, "GATE,AMP_DB[,DOPPLER][,az=DEG[,el=DEG]]" (the tools'
 * --target), into *t:
 * GATE the sample index the echo starts at, AMP_DB its peak amplitude in dB
 * full scale, DOPPLER (default 0) its Doppler shift, either in Hz ("800" or
 * "800Hz"), turned into cycles per pulse with prf_hz and folded into
 * [-0.5, 0.5] (a pulsed radar sees a shift beyond +-prf/2 aliased, and so
 * does the generated echo: its phase per pulse is the same), or in cycles
 * per pulse ("0.125/pulse", -0.5..0.5, no PRF needed), then its direction
 * az= (and el=, default 0), degrees within +-90 (the array of
 * synth_params.array turns it into each channel's phase). prf_hz may be 0
 * only when the shift is 0 or per pulse. Returns 0, or -EINVAL with the reason
 * ("'300,-6,x': DOPPLER is not a number ..."); a colon-separated spec is
 * refused with the comma syntax named. *folded is set to 1 when the shift
 * was folded (|DOPPLER| > prf_hz / 2), else 0.
 */
int synth_parse_target(const char *spec, double prf_hz, struct synth_target *t,
		       int *folded, char *err, size_t errlen);

/*
 * noise_power for a per-sample SNR of snr_db relative to the strongest
 * target (see MODEL). With no targets the reference is full scale (0 dBFS).
 */
double synth_noise_power_for_snr(const struct synth_target *t, size_t n, double snr_db);

/*
 * Parse one jammer, "noise|cw,AZ_DEG,POWER_DB[,el=DEG][,f=CYCLES]" (the
 * tools' --jammer): its kind, direction, power per sample in dBFS and, for
 * cw, its frequency in cycles per sample (default 0.1). 0, or -EINVAL with
 * the reason.
 */
int synth_parse_jammer(const char *spec, struct synth_jammer *j, char *err, size_t errlen);

struct synth;

/*
 * Validate p and build a generator. NULL with a reason in err, e.g.
 * "target 1 gate 1200 is outside the range line (R=1000)", "sc16: targets
 * sum to +1.2 dBFS and would clip". The pulse and targets are copied.
 */
struct synth *synth_create(const struct synth_params *p, char *err, size_t errlen);
void synth_destroy(struct synth *s);

/* Bytes of one generated CPI (C*P*R * 8 for cf32, * 4 for sc16). */
size_t synth_cpi_bytes(const struct synth *s);

/* first_sample of CPI k (k * P * R). */
uint64_t synth_first_sample(const struct synth *s, uint64_t k);

/* CPI index of a first_sample: 0, or -EINVAL if it is not a multiple of P*R. */
int synth_cpi_index(const struct synth *s, uint64_t first_sample, uint64_t *k);

/*
 * Write CPI k into out (len must be >= synth_cpi_bytes) with the first
 * mode's pulse (the only one of a single-mode generator). No allocation.
 * Returns 0 or -EINVAL (buffer too small). sc16 samples that saturate are
 * counted (synth_clipped).
 */
int synth_generate(struct synth *s, uint64_t k, void *out, size_t len);

/*
 * synth_generate with radar mode `mode`'s pulse. -ENOENT (nothing
 * written) if the generator has no such mode; -EINVAL as above.
 */
int synth_generate_mode(struct synth *s, uint64_t k, uint32_t mode, void *out, size_t len);

/* 1 if the generator holds mode `mode`, else 0. */
int synth_has_mode(const struct synth *s, uint32_t mode);

/* Modes held, and the id of the i-th (0 <= i < synth_nmodes). */
size_t synth_nmodes(const struct synth *s);
unsigned synth_mode_id(const struct synth *s, size_t i);

/* sc16 samples saturated since synth_create. */
uint64_t synth_clipped(const struct synth *s);

/*
 * Build a generator from a chirpd configuration: geometry, input format and
 * one mode per configured mode (c->modes: [mode NAME] sections and
 * [waveform]), in the file's order, each with its waveform's window forced
 * to rect, so the echo is the transmitted pulse. Returns NULL with a
 * reason.
 */
struct chirp_config;
struct synth *synth_create_from_config(const struct chirp_config *c,
				       const struct synth_target *t, size_t n,
				       double noise_power, uint64_t seed,
				       char *err, size_t errlen);

/* synth_create_from_config with jammers and the array directions need
 * (array NULL: no direction may be given). */
struct synth *synth_create_from_config_array(const struct chirp_config *c,
					     const struct synth_target *t, size_t n,
					     const struct synth_jammer *jam, size_t njam,
					     const struct synth_array *array,
					     double noise_power, uint64_t seed,
					     char *err, size_t errlen);

#endif /* CHIRP_SYNTH_H */
