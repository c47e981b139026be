/* SPDX-License-Identifier: Apache-2.0 */
/*
 * radar.h — the radar chain after pulse compression (MTI, Doppler FFT,
 * map, CFAR, detection list; definition in chirp/pc.h, RADAR CHAIN),
 * resolved once for every backend: private to the pc module (pc.c,
 * pc_cpu.c, radar.c, radar_cpu.c, src/cuda/), but for the rules at the
 * end, which the plan (plan.c) and the work's key (workkey.c) call too.
 *
 * radar_setup_make() turns a checked pc_params into what a backend runs:
 * the window with the Doppler gain folded in, Nd, and per range gate the
 * CFAR's alpha, norm and (os) rank, computed in double precision, so that
 * backends only sum, sort, compare and write records. radar_cpu.h is the
 * CPU implementation (the reference the GPU is tested against); radar.c
 * states the CFAR model the tables are solved from.
 */
#ifndef CHIRP_RADAR_H
#define CHIRP_RADAR_H

#include <stddef.h>
#include <stdint.h>

#include "chirp/detect.h"
#include "chirp/pc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RADAR_C_MPS 299792458.0      /* speed of light, m/s              */

struct radar_setup {
	unsigned channels, pulses, samples;  /* C, P, R; with beams C is B:
						the chain's rows are beams */
	unsigned beams;                      /* B with beams (maps are beams,
						the local maximum runs across
						them, records carry beam
						fields), else 0            */
	enum pc_mti mti;
	unsigned pulses_mti;                 /* P'                         */
	unsigned nd;                         /* Nd                         */
	float *window;                       /* P' coefficients x g_d      */
	enum pc_output out_mode;             /* cube, map or none          */
	int cfar;                            /* 1: detect                  */
	enum pc_cfar method;
	int integrate;                       /* 1: CFAR on I               */
	unsigned maps;                       /* 1 if integrate, else C     */
	unsigned gr, gd, tr, td;             /* guard / training per axis  */
	unsigned mr, md;                     /* local-maximum neighbourhood */
	float *alpha;                        /* [R] threshold factor       */
	float *norm;                         /* [R] noise = statistic x norm */
	unsigned *rank;                      /* [R] os: k_n (1-based); else 0 */
	unsigned *ncells;                    /* [R] N_n: training cells at gate
						n (fewer near the range edges) */
	unsigned *nlead, *nlag;              /* [R] the leading (dn < 0) and
						lagging (dn > 0) halves' cells
						(go/so's means divide by them) */
	unsigned max_det;                    /* records per CPI            */
	float range_m_per_gate;              /* NaN without a sample rate  */
	float mps_per_bin;                   /* NaN without prf and carrier */
	uint32_t det_flags;                  /* CHIRP_DET_INTEGRATED,
						CHIRP_DET_NO_VELOCITY,
						CHIRP_DET_BEAMS            */
	size_t det_bytes;                    /* CHIRP_DET_BYTES(max_det), 0
						without cfar               */
};

/*
 * Resolve p->radar (p already passed pc_params_check) into rs. Returns 0,
 * or -EINVAL / -ENOMEM with the reason in err; rs is then empty.
 */
int radar_setup_make(struct radar_setup *rs, const struct pc_params *p, char *err,
		     size_t errlen);
void radar_setup_free(struct radar_setup *rs);

/*
 * The beam fields of one record (chirp/pc.h, BEAMS; pc_backend.h says
 * which backend calls it): rec->channel and rec->beam = b; with
 * monopulse, the angle of mono_estimate(s, w, b, y, rec->noise) (s
 * pointed at the CPI's pointing, w its weights in double, 2 B C; y the B
 * beams' complex Doppler outputs at the record's cell, interleaved, only
 * b - 1 .. b + 1 read), else beam b's direction and quality 0. No
 * allocation.
 */
struct beam_set;
struct chirp_det_record;
void radar_beam_record(const struct beam_set *s, const double *w, int monopulse, unsigned b,
		       const float *y, struct chirp_det_record *rec);

/*
 * The false-alarm probability the tables are solved from (radar.c, CFAR
 * MODEL): a cell of noise crossing alpha x noise, for method with cells of
 * Gamma(C) (C = 1 per channel), n training cells (lead / lag in the two
 * halves, for go/so) and rank (os). Exposed for the tests.
 */
double radar_cfar_pfa(enum pc_cfar method, unsigned C, unsigned n, unsigned lead, unsigned lag,
		      unsigned rank, double alpha);


/*
 * The radar chain's rules, each written once: pc_params_check (pc.c) and
 * the plan (plan.c, which turns a failure into the FILE:LINE of the
 * configuration key) both call these.
 *
 * A failure names the parameter its reason is about (param) and every
 * parameter of the combination (params, RADAR_BIT of each): the caller
 * that knows where each was set reports the one set last.
 */
enum radar_param {
	RADAR_P_PULSES,              /* pc_params.pulses (P)                */
	RADAR_P_SAMPLES,             /* pc_params.samples (R)               */
	RADAR_P_MTI,
	RADAR_P_NFFT,                /* Nd as given (0 = auto)              */
	RADAR_P_METHOD,
	RADAR_P_GUARD_RANGE,
	RADAR_P_GUARD_DOPPLER,
	RADAR_P_TRAIN_RANGE,
	RADAR_P_TRAIN_DOPPLER,
	RADAR_P_OS_RANK,
	RADAR_P_PFA,
	RADAR_P_MAXIMA_RANGE,
	RADAR_P_MAXIMA_DOPPLER,
	RADAR_P_MAX_DETECTIONS,
	RADAR_P_SAMPLE_RATE,         /* sample_rate_hz                      */
	RADAR_P_PRF,                 /* prf_hz                              */
	RADAR_P_CARRIER,             /* carrier_hz                          */
	RADAR_P_VELOCITY,            /* velocity (required)                 */
	RADAR_P_OUT_MODE,            /* pc_params.out_mode                  */
	RADAR_P_DOPPLER,             /* doppler (on/off)                    */
	RADAR_P_CFAR,                /* cfar (on/off)                       */
	RADAR_P_COUNT
};
#define RADAR_BIT(p) (1u << (p))

struct radar_fault {
	enum radar_param param;      /* what the reason is about            */
	unsigned params;             /* RADAR_BIT of each parameter involved */
	char why[256];
};

#define RADAR_MAX_DOPPLER_NFFT (1u << 24)

/* P', the pulses left after the MTI: P, P - 1 or P - 2; 0 when the CPI
 * has too few pulses for it. */
unsigned radar_pulses_after_mti(unsigned pulses, enum pc_mti mti);

/* Nd, the Doppler FFT length: nfft when given (> 0), else
 * pc_good_fft_size(P'); 0 when P' is 0. The one definition of the rule
 * (pc.h: "Nd >= P' bins (auto: pc_good_fft_size(P'))"). */
unsigned radar_doppler_nfft(unsigned pulses, enum pc_mti mti, unsigned nfft);

/*
 * Check the radar chain r for a CPI of pulses x samples (r->doppler set;
 * the window is pc_params_check's, the scales radar_check_scales'): the MTI
 * against the pulses, Nd, and with r->cfar the method, the CFAR window
 * (2 x (guard + train) + 1 cells on each axis), its training cells, the
 * os rank, pfa in (0, 1), the list size and the local-maximum
 * neighbourhood. Returns 0, or -EINVAL with f filled (f may not be NULL).
 */
int radar_check(const struct pc_radar *r, unsigned pulses, unsigned samples,
		struct radar_fault *f);

/* The output mode against the chain: the map outputs and the CFAR need
 * Doppler processing, output none needs the CFAR (its detections are then
 * the only result). Returns 0, or -EINVAL with f filled. */
int radar_check_outputs(enum pc_output out_mode, const struct pc_radar *r,
			struct radar_fault *f);

/* The physical scales of r: sample_rate_hz, prf_hz and carrier_hz finite
 * and >= 0 (0: not given), and r->velocity (required) with both prf_hz
 * and carrier_hz. Returns 0, or -EINVAL with f filled. */
int radar_check_scales(const struct pc_radar *r, struct radar_fault *f);

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_RADAR_H */
