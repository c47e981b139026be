/* SPDX-License-Identifier: Apache-2.0 */
/*
 * radar.h — the radar chain after pulse compression (MTI, Doppler FFT,
 * map, CFAR, detection list; definition in chirp/pc.h, RADAR CHAIN),
 * resolved once for every backend: private to the pc module (pc.c,
 * pc_cpu.c, radar.c, radar_cpu.c, src/cuda/).
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
	unsigned channels, pulses, samples;  /* C, P, R                   */
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
						CHIRP_DET_NO_VELOCITY      */
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
 * The false-alarm probability the tables are solved from (radar.c, CFAR
 * MODEL): a cell of noise crossing alpha x noise, for method with cells of
 * Gamma(C) (C = 1 per channel), n training cells (lead / lag in the two
 * halves, for go/so) and rank (os). Exposed for the tests.
 */
double radar_cfar_pfa(enum pc_cfar method, unsigned C, unsigned n, unsigned lead, unsigned lag,
		      unsigned rank, double alpha);

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_RADAR_H */
