/* SPDX-License-Identifier: Apache-2.0 */
/*
 * monopulse.h — an angle finer than the beam spacing for a detection, from
 * the outputs of its beam and the neighbouring beams (simultaneous-lobe,
 * amplitude-and-phase comparison monopulse), and the Cramer-Rao bound it
 * is measured against. doc/beams.md, MONOPULSE, qualifies it.
 *
 * ESTIMATOR
 *   A detection in beam b at cell (k, n) with the beams' complex outputs
 *   y[0..B-1] there (the Doppler output D of each beam, or any linear stage
 *   of it). The neighbours of b are b - 1 and b + 1 where they differ from
 *   b in u only (every fan; a list laid out as one row). With the M <= 3
 *   beams j of b and its neighbours, F_j(u) = beam_pattern of beam j's
 *   weights (exact for the configured array, taper and calibration) and Q
 *   their outputs' noise covariance (Q_ij = sum_c W_i[c] conj(W_j[c])
 *   |g_c|^2), û is the maximum likelihood angle of one plane wave in white
 *   element noise, its amplitude unknown:
 *       û = argmax_u |F(u)^H Q^-1 y|^2 / (F(u)^H Q^-1 F(u)),   v = v_b,
 *   over u from neighbour to neighbour (half a spacing beyond b where it
 *   has none), by a grid of 24 steps and a golden-section search. At high
 *   SNR it is unbiased and its variance is the bound of the M beams' data.
 *
 * QUALITY (bits; 0 = a good estimate inside the fan)
 *   MONO_OUTSIDE     û beyond b on a side with no neighbour (the fan's
 *                    first or last beam): one beam pair only, less exact
 *   MONO_CLAMPED     the maximum is at an end of the search interval: the
 *                    target is beyond it, or noise
 *   MONO_UNRESOLVED  the outputs are not one plane wave: the misfit
 *                    y^H Q^-1 y - J(û), over the element noise power,
 *                    exceeds its chi-square limit at 1e-4 false alarms
 *                    (two targets in the cell, a jammer, multipath)
 *   MONO_NOT_PEAK    a neighbour is stronger than b (the chain reports a
 *                    target in its strongest beam)
 *   MONO_NO_NEIGHBOUR  one beam, no neighbour in u, or beams the channels
 *                    cannot tell apart: û is b's direction
 */
#ifndef CHIRP_MONOPULSE_H
#define CHIRP_MONOPULSE_H

#include "beam.h"

#define MONO_OUTSIDE       (1u << 0)
#define MONO_CLAMPED       (1u << 1)
#define MONO_UNRESOLVED    (1u << 2)
#define MONO_NOT_PEAK      (1u << 3)
#define MONO_NO_NEIGHBOUR  (1u << 4)

struct mono_angle {
	double u, v;                 /* the estimate, direction cosines      */
	double az_deg, el_deg;       /* the same as angles                   */
	unsigned quality;            /* MONO_* bits, 0 = good                */
	int neighbour;               /* the beam compared with b, -1: none   */
	double misfit;               /* the fit's residual over the element
					noise power (~ chi^2 / 2 of 2M-3
					degrees for one target), 0 without noise */
};

/*
 * y: the B beams' outputs at the cell, interleaved (re, im). w: the
 * weights the outputs were formed with, 2 B C doubles [b][c] (the set's
 * beam_weights_d, or the adapted ones). noise: the noise power in beam
 * b's output (y's units: |y|^2; the CFAR's estimate), > 0, for the
 * misfit test (0: no test). No allocation (some 16 KiB of stack).
 * Returns 0, or -EINVAL for b out of range.
 */
int mono_estimate(const struct beam_set *s, const double *w, unsigned b, const float *y,
		  double noise, struct mono_angle *out);

/*
 * Cramer-Rao bound on the variance of u for one target at (u, v) in white
 * noise, from one snapshot of the C elements, the complex amplitude
 * unknown: var(u) >= 1 / (2 (snr / C) sum_c (phi'_c - mean phi')^2),
 * phi'_c = 2 pi / lambda (x_c - z_c u / w), the phase slope along u at
 * fixed v. snr: the array SNR, C |s|^2 / s_n^2 (a uniform beam's SNR at
 * its peak), linear. Calibration is taken as exact.
 */
double mono_crb_u(const struct array *a, double lambda_m, double u, double v, double snr);

#endif /* CHIRP_MONOPULSE_H */
