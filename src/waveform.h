/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waveform.h — reference waveforms and windows for pulse compression.
 *
 * wf_build() returns h = w . s, the windowed reference that pc_params.ref
 * takes (see chirp/pc.h for the definition it feeds).
 *
 *   lfm:      L = round(pulse_width_s * sample_rate_hz),
 *             t_k = k/fs - tau/2,  s[k] = exp(j*pi*(B/tau)*t_k^2), 0 Hz centred.
 *   barker13: the 13-chip Barker code (+1 +1 +1 +1 +1 -1 -1 +1 +1 -1 +1 -1 +1),
 *             chip_samples samples per chip, L = 13 * chip_samples.
 *   file:     cf32_le samples read from a file (L = file size / 8).
 *
 * Windows are applied in time over the L reference samples:
 *   rect, hamming, hann, blackman (symmetric forms), taylor(nbar, sll_db).
 */
#ifndef CHIRP_WAVEFORM_H
#define CHIRP_WAVEFORM_H

#include <stddef.h>

#include "waveform_types.h"

struct wf_params {
	enum wf_type type;
	double sample_rate_hz;      /* fs > 0                                 */
	double bandwidth_hz;        /* lfm: 0 < B <= fs                       */
	double pulse_width_s;       /* lfm: tau > 0, 1 <= round(tau*fs)       */
	unsigned chip_samples;      /* barker13: >= 1                         */
	const char *file;           /* file: path of cf32_le samples          */
	enum wf_window window;
	unsigned taylor_nbar;       /* taylor: >= 1                           */
	double taylor_sll_db;       /* taylor: sidelobe level, > 0 (e.g. 35)  */
};

void wf_params_init(struct wf_params *p);

const char *wf_type_name(enum wf_type t);       /* "lfm", "barker13", "file" */
const char *wf_window_name(enum wf_window w);   /* "rect", "hamming", ...    */
int wf_type_parse(const char *s, enum wf_type *t);        /* 0 or -EINVAL */
int wf_window_parse(const char *s, enum wf_window *w);    /* 0 or -EINVAL */

/*
 * Build the windowed reference for a range line of range_samples (R).
 * On success *ref is a malloc'd array of 2*(*len) floats (re, im) and 0 is
 * returned. On error returns -EINVAL (or -errno for file errors) with a
 * precise reason in err, e.g. "bandwidth_hz 4e+07 exceeds sample_rate_hz
 * 2.5e+07", "pulse length L=600 exceeds range samples R=500".
 */
int wf_build(const struct wf_params *p, unsigned range_samples,
	     float **ref, size_t *len, char *err, size_t errlen);

/*
 * L, the pulse's length in samples, as wf_build makes it: lfm
 * round(pulse_width_s * sample_rate_hz), barker13 13 * chip_samples; 0 for
 * file (the file's size / 8, known once it is read) and for a pulse
 * shorter than half a sample or parameters that are not finite. The one
 * definition the configuration's checks use too.
 */
unsigned long long wf_pulse_len(const struct wf_params *p);

/* Window of length n into w[0..n-1] (double). 0 or -EINVAL. */
int wf_window_fill(enum wf_window win, unsigned nbar, double sll_db,
		   double *w, size_t n);

#endif /* CHIRP_WAVEFORM_H */
