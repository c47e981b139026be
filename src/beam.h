/* SPDX-License-Identifier: Apache-2.0 */
/*
 * beam.h — digital beamforming: beam directions, their weights for an
 * array (array.h), the per-CPI pointing, and the beamforming product.
 * The definition (doc/beams.md, and the BEAMS block of chirp/pc.h):
 *
 * DIRECTIONS
 *   Frame of array.h: x right along the face, y up, z boresight. A
 *   direction (azimuth az, elevation el, degrees from boresight; az > 0
 *   towards +x, el > 0 towards +y) is the unit vector
 *       k = (sin az cos el, sin el, cos az cos el) = (u, v, w),
 *   so u = sin(az) cos(el), v = sin(el), w = sqrt(1 - u^2 - v^2) >= 0.
 *   The visible region is u^2 + v^2 <= 1 (the half-space in front of
 *   the face).
 *
 *   Beams are (u_b, v_b), b = 0..B-1:
 *     fan:  u_b = u0 + (b - (B-1)/2) du,  v_b = v0, (u0, v0) the fan
 *           centre's direction, du > 0 the spacing in u (a phased array's
 *           beams keep their width and crossover in u as they steer);
 *     list: each beam's (az, el), |az|, |el| <= 90.
 *   The pointing (az_p, el_p) of a CPI translates the whole set in (u, v):
 *   beam b of that CPI looks at (u_b + u_p, v_b + v_p), u_p = sin(az_p)
 *   cos(el_p), v_p = sin(el_p) — what one linear phase ramp across the
 *   aperture does. A pointing that puts any beam outside the visible
 *   region is refused (beam_set_point), never used with other weights.
 *
 * STEERING AND WEIGHTS
 *   A unit plane wave from (u, v) reaches channel c as g_c a_c(u, v),
 *       a_c(u, v) = exp(+j 2 pi / lambda (x_c u + y_c v + z_c w)),
 *   lambda = c0 / carrier_hz (c0 = 299792458 m/s), g_c the channel's
 *   calibration (array.h): an element nearer the source hears the wave
 *   earlier, so its baseband phase leads. A receiver whose I and Q are
 *   swapped (spectrum inverted) sees every azimuth mirrored.
 *
 *   The conventional weights, beam b, channel c:
 *       W[b][c] = t_c conj(a_c(u_b, v_b)) / g_c / sum_k t_k
 *   t = the taper (wf_window_fill over the C channels in channel order:
 *   the aperture's order for a linear array). Beam b's output is
 *       Y[b][p][r] = sum_c W[b][c] X[c][p][r]
 *   NORMALISATION: unit gain in the look direction, sum_c W[b][c] g_c
 *   a_c(u_b, v_b) = 1: a target's amplitude (power) in a beam steered at
 *   it is its amplitude (power) at one element. White noise of power s^2
 *   at each element reads s^2 G_n in the beam, the noise gain
 *       G_n = sum_c |W[b][c] g_c|^2 = sum t^2 / (sum t)^2 = 1 / (C eta),
 *   eta = (sum t)^2 / (C sum t^2) the taper efficiency (1 for rect): the
 *   map's noise floor, and so the CFAR's noise estimate, drop by
 *   10 log10(C eta) dB, and a detection's snr_db rises by that much (the
 *   array gain) over one channel's.
 *
 * WHERE IN THE CHAIN
 *   Beams are formed on the input, before pulse compression: both are
 *   linear and act on different axes, so they commute exactly; with
 *   B < C "before" compresses B rows per pulse instead of C, and the
 *   adaptive weights' training cells (mvdr.h) see a target's energy
 *   spread over the pulse, not compressed into one gate. A backend may
 *   form them after compression when B > C: the result is the same up to
 *   float rounding (tests/test_beam.c shows it).
 *
 * LIFECYCLE
 *   beam_set_create (validates, allocates, computes the weights for the
 *   zero pointing), beam_set_point per CPI (no allocation), beam_form on
 *   column ranges (any threads, the set read-only), beam_set_destroy. The
 *   set is written by one thread at a time (beam_set_point); the array
 *   must outlive it.
 */
#ifndef CHIRP_BEAM_H
#define CHIRP_BEAM_H

#include <stddef.h>

#include "array.h"
#include "waveform.h"

#define BEAM_MAX           256u
#define BEAM_C0_MPS        299792458.0
#define BEAM_FORM_COLS     256u   /* columns per cache block of beam_form */

enum beam_layout { BEAM_FAN = 0, BEAM_LIST = 1 };

struct beam_params {
	double carrier_hz;           /* > 0: lambda = c0 / carrier_hz        */
	enum beam_layout layout;
	unsigned count;              /* B: 1..BEAM_MAX                       */
	double fan_az_deg;           /* fan: the centre's direction, degrees */
	double fan_el_deg;
	double fan_spacing_u;        /* fan: du > 0, in u                    */
	const double *list_deg;      /* list: count (az, el) pairs, degrees,
					|az|, |el| <= 90                     */
	enum wf_window taper;        /* the aperture taper t (default rect)  */
	unsigned taylor_nbar;        /* taper taylor: nbar >= 1 (default 4)  */
	double taylor_sll_db;        /* taper taylor: sidelobes, dB > 0 (30) */
	const double *taper_coef;    /* C coefficients, or NULL: when given,
					the taper itself (taper and taylor_*
					unused); their sum must be > 0      */
};

void beam_params_init(struct beam_params *p);

struct beam_set;

/* NULL with the reason in err ("beam 7 of the fan at u 1.0625, v 0:
 * outside the visible region (u^2 + v^2 = 1.13 > 1)"). */
struct beam_set *beam_set_create(const struct array *a, const struct beam_params *p, char *err,
				 size_t errlen);
void beam_set_destroy(struct beam_set *s);

/*
 * Point the set: weights for pointing (az_deg, el_deg). 0, or -EDOM with
 * the reason when a beam would leave the visible region or an angle is not
 * finite; the set then keeps its weights and pointing. No allocation.
 */
int beam_set_point(struct beam_set *s, double az_deg, double el_deg, char *err, size_t errlen);

unsigned beam_count(const struct beam_set *s);
unsigned beam_channels(const struct beam_set *s);
const struct array *beam_array(const struct beam_set *s);
double beam_wavelength_m(const struct beam_set *s);
enum beam_layout beam_layout_of(const struct beam_set *s);

/* Beam b's direction at zero pointing (the set's nominal directions, which
 * a pointing translates), and the taper divided by its sum (C values): what
 * a backend that forms the weights itself (src/cuda/cu_beam.cu) needs. */
void beam_uv_nominal(const struct beam_set *s, unsigned b, double *u, double *v);
const double *beam_taper(const struct beam_set *s);

/* Beam b's direction under the current pointing. */
void beam_uv(const struct beam_set *s, unsigned b, double *u, double *v);
void beam_azel(const struct beam_set *s, unsigned b, double *az_deg, double *el_deg);

/* The weights under the current pointing, [b][c] interleaved (re, im):
 * 2 B C values; float for beam_form, double for references. */
const float *beam_weights(const struct beam_set *s);
const double *beam_weights_d(const struct beam_set *s);

/* The channels' response to a unit plane wave from (u, v): g_c a_c,
 * 2 C doubles into resp. u^2 + v^2 <= 1. */
void beam_response(const struct beam_set *s, double u, double v, double *resp);

/* A weight row's gain towards (u, v): sum_c w[c] g_c a_c(u, v), into
 * out[0..1] (re, im). w: 2 C doubles. */
void beam_pattern(const struct beam_set *s, const double *w, double u, double v, double out[2]);

/* Noise gain of a weight row: sum_c |w[c] g_c|^2. */
double beam_noise_gain(const struct beam_set *s, const double *w);

/* (az, el) in degrees <-> (u, v). beam_azel_of: -EDOM outside the
 * visible region (u^2 + v^2 > 1 or not finite). */
void beam_uv_of(double az_deg, double el_deg, double *u, double *v);
int beam_azel_of(double u, double v, double *az_deg, double *el_deg);

/*
 * Y[b][n] = sum_c W[b][c] X[c][n] for columns n in [col0, col1): one
 * complex matrix product, B x C times C x N, all interleaved float32
 * (W: 2 B C; X: C rows of ld_x complex values; Y: B rows of ld_y). For a
 * CPI, N = P R and a column is one (pulse, range) cell. Threads may run
 * disjoint column ranges at once; BEAM_FORM_COLS-aligned ranges keep each
 * block's C x BEAM_FORM_COLS inputs in cache while all B beams use them.
 *
 * Accumulates in float: each output is a sum of C products, whose
 * rounding error is about sqrt(C) x 2^-24 of sum_c |W||X| (C = 64: 5e-7);
 * relative to the output that stays far below 1e-5 except where the beam
 * cancels a strong signal (an adaptive null), and there the residue,
 * about 1e-6 of the cancelled signal (-120 dB), lies far below the noise.
 */
void beam_form(const float *W, unsigned B, unsigned C, const float *X, size_t ld_x, float *Y,
	       size_t ld_y, size_t col0, size_t col1);

#endif /* CHIRP_BEAM_H */
