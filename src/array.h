/* SPDX-License-Identifier: Apache-2.0 */
/*
 * array.h — the receive array: where each channel's element is, and how
 * each channel's receiver changes what its element hears (calibration).
 * The beamformer (beam.h) steers from it; doc/beams.md gives the frame.
 *
 * FRAME
 *   Positions are metres in the array's frame: x to the right along the
 *   face, y up, z out of the face (boresight). The origin is the phase
 *   reference of every steering vector; a uniform linear array is laid
 *   along x and centred on it, x_c = (c - (C-1)/2) d.
 *
 * CALIBRATION
 *   Channel c reports g_c times what its element received, g_c = gain x
 *   exp(j phase) (the same factor for signal and for noise entering at the
 *   element). Without a calibration g_c = 1. The beamformer divides by g_c.
 *
 * FILES (untrusted: every error is "FILE:LINE: reason")
 *   Both are text, one channel per line in channel order, numbers separated
 *   by blanks, '#' to the end of a line a comment, blank lines ignored;
 *   exactly one line per channel.
 *     array file:        x_m y_m z_m        finite, |value| <= ARRAY_MAX_EXTENT_M,
 *                                           no two elements at one place
 *     calibration file:  gain phase_deg     gain finite and > 0 (linear
 *                                           amplitude), phase finite
 *
 * LIFECYCLE
 *   array_create_ula / array_parse / array_load build it (NULL with the
 *   reason, never half-built); array_cal_parse / array_cal_load attach a
 *   calibration (all or nothing); array_destroy. Read-only afterwards, so
 *   any number of threads may read it.
 */
#ifndef CHIRP_ARRAY_H
#define CHIRP_ARRAY_H

#include <stddef.h>

#define ARRAY_MAX_CHANNELS   1024u
#define ARRAY_MAX_EXTENT_M   1e4        /* |x|, |y|, |z| bound, metres   */
#define ARRAY_MAX_FILE_BYTES (1u << 20)

struct array;

/* channels elements spacing_m apart along x, centred: 1..ARRAY_MAX_CHANNELS,
 * 0 < spacing_m <= ARRAY_MAX_EXTENT_M / channels. */
struct array *array_create_ula(unsigned channels, double spacing_m, char *err, size_t errlen);

/* An array file's text (len bytes, need not be terminated); name is the
 * file name the errors quote. */
struct array *array_parse(const char *text, size_t len, const char *name, unsigned channels,
			  char *err, size_t errlen);
struct array *array_load(const char *path, unsigned channels, char *err, size_t errlen);

/* Attach a calibration; on error the array keeps the one it had. 0 or
 * -EINVAL / -errno with the reason. */
int array_cal_parse(struct array *a, const char *text, size_t len, const char *name, char *err,
		    size_t errlen);
int array_cal_load(struct array *a, const char *path, char *err, size_t errlen);

/* From values already in memory (pc_params.beams): xyz 3 C metres, cal
 * 2 C (re, im) or NULL; checked as the files are, errors name channel c
 * ("positions:c: ..."). */
struct array *array_create_xyz(unsigned channels, const double *xyz, const double *cal, char *err,
				size_t errlen);

void array_destroy(struct array *a);

unsigned array_channels(const struct array *a);
/* Element c's position, metres: xyz[0..2]. */
void array_position(const struct array *a, unsigned c, double xyz[3]);
/* Channel c's response g_c as (re, im); (1, 0) without a calibration. */
void array_cal(const struct array *a, unsigned c, double g[2]);
int array_has_cal(const struct array *a);

#endif /* CHIRP_ARRAY_H */
