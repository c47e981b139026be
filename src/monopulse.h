/* SPDX-License-Identifier: Apache-2.0 */
/*
 * monopulse.h — an angle finer than the beam spacing for a detection, by
 * amplitude comparison of neighbouring beams, and the Cramer-Rao bound it
 * is measured against. doc/beams.md, MONOPULSE, derives and qualifies it.
 *
 * ESTIMATOR
 *   A detection in beam b at cell (k, n) with the beams' complex outputs
 *   y[0..B-1] there (the Doppler output D of each beam, or any linear stage
 *   of it). Neighbours of b are b - 1 and b + 1 when they differ from b in
 *   u only (every fan; a list laid out as one row); the stronger one, n,
 *   is compared with b. With F_j(u) = beam_pattern of beam j's weights
 *   (exact for the configured array, taper and calibration), û solves
 *       ln |F_n(u)|^2 - ln |F_b(u)|^2 = ln |y_n|^2 - ln |y_b|^2,  v = v_b,
 *   by bisection between u_b and u_n, where the difference is monotonic,
 *   and on b's far side as far as it stays monotonic, at most du / 2.
 *   The model is the beams' own patterns, so a single target's estimate
 *   has no model bias; noise biases it slightly (doc/beams.md).
 *
 * QUALITY (bits; 0 = a good interpolation between two beams)
 *   MONO_OUTSIDE     û beyond the fan's first or last beam (extrapolated
 *                    on the outer flank of an edge beam)
 *   MONO_CLAMPED     the ratio has no solution in the search interval (a
 *                    target beyond it, or noise): û is the interval's end
 *   MONO_UNRESOLVED  the complex ratio y_n / y_b disagrees in phase with
 *                    F_n(û) / F_b(û) by more than 4 sigma of its noise:
 *                    not one plane wave (two targets in the cell, a
 *                    jammer, multipath)
 *   MONO_NOT_PEAK    a neighbour is stronger than b: b is not the target's
 *                    beam (the chain reports the strongest beam)
 *   MONO_NO_NEIGHBOUR  one beam, or no neighbour in u: û is b's direction
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
	double phase_resid_rad;      /* arg of the ratio's misfit            */
};

/*
 * y: the B beams' outputs at the cell, interleaved (re, im). w: the
 * weights the outputs were formed with, 2 B C doubles [b][c] (the set's
 * beam_weights_d, or the adapted ones). noise: the noise power in one
 * beam output (y's units: |y|^2; the CFAR's estimate), > 0, for the
 * phase test. Returns 0, or -EINVAL for b out of range.
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
