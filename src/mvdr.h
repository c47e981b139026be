/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mvdr.h — adaptive beams: MVDR weights by sample-matrix inversion (SMI)
 * with diagonal loading, for the beams of a beam_set (beam.h).
 *
 * DEFINITION (doc/beams.md)
 *   Training snapshots: x_k = X[.][p_k][r_k], the C channels' input at K
 *   cells of the same CPI, before pulse compression (beam.h, WHERE IN THE
 *   CHAIN). The cells, in this order, first K of:
 *       p = 0, pulse_stride, 2 pulse_stride, ... < P     (outer)
 *       r = first_gate, first_gate + gate_stride, ... < R (inner)
 *   Detections are not known when the weights are made, so no cell is
 *   excluded for holding a target: before compression a target's power
 *   per sample is its compressed SNR less the compression gain, and the
 *   loading keeps it from nulling itself (doc/beams.md).
 *
 *   R = (1/K) sum_k x_k x_k^H,  R_l = R + delta tr(R) / C I,
 *   and for beam b with v = the channels' response to its direction
 *   (beam_response: g_c a_c(u_b, v_b)),
 *       w_b = R_l^-1 v / (v^H R_l^-1 v),   W[b][c] = conj(w_b[c]),
 *   so Y = sum_c W[b][c] X[c] = w_b^H x, with unit gain towards the look
 *   direction (as the conventional beams, beam.h) and the least output
 *   power under that constraint. The taper does not apply: the loading
 *   sets how far the adapted beam may leave the untapered one.
 *
 *   Solved by a complex Cholesky factorisation R_l = L L^H in double
 *   (C <= MVDR_MAX_CHANNELS), once per CPI; each beam is then two
 *   triangular solves (the beams are a batch of right-hand sides).
 *
 * LIFECYCLE
 *   mvdr_create (validates the training rule against the CPI's geometry,
 *   allocates), mvdr_covariance and mvdr_solve per CPI (no allocation),
 *   mvdr_destroy. One thread at a time.
 */
#ifndef CHIRP_MVDR_H
#define CHIRP_MVDR_H

#include <stddef.h>

#include "beam.h"

#define MVDR_MAX_CHANNELS 64u

struct mvdr_params {
	unsigned snapshots;          /* K >= 1; K >= C when loading is 0;
					2 C or more keeps the SMI loss near
					or under 3 dB (Reed-Mallett-Brennan) */
	unsigned first_gate;         /* r of the first training cell, < R    */
	unsigned gate_stride;        /* >= 1                                 */
	unsigned pulse_stride;       /* >= 1                                 */
	double loading;              /* delta, 0 .. 1e3 (default 0.01)       */
};

void mvdr_params_init(struct mvdr_params *p);

struct mvdr;

/* For CPIs of C channels x P pulses x R samples and beams B. NULL with
 * the reason ("snapshots 500: the rule reaches 320 cells of the CPI"). */
struct mvdr *mvdr_create(unsigned channels, unsigned pulses, unsigned samples, unsigned beams,
			 const struct mvdr_params *p, char *err, size_t errlen);
void mvdr_destroy(struct mvdr *m);

/* R from the CPI X (cf32 [channel][pulse][range], interleaved float),
 * summed in double. */
void mvdr_covariance(struct mvdr *m, const float *X);

/* R (before loading), C x C interleaved (re, im), row-major. */
const double *mvdr_covariance_d(const struct mvdr *m);

/*
 * The adapted weights of every beam of s (s's channels and beams must be
 * the create's) from the last mvdr_covariance: wf (2 B C floats, [b][c],
 * the layout of beam_weights) and, if not NULL, wd (the same in double).
 * 0, or -EDOM when R_l is not positive definite (a training set of zeros,
 * NaN or Inf in it, or K < C without loading): nothing is written, and
 * the caller decides what the CPI becomes.
 */
int mvdr_solve(struct mvdr *m, const struct beam_set *s, float *wf, double *wd);

#endif /* CHIRP_MVDR_H */
