/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waveform_types.h — the waveform's enumerated values (waveform.h), in a
 * leaf header: the name tables (names.h) and the configuration
 * (config.h) name and store them without depending on the waveform
 * module, which itself uses the name tables.
 */
#ifndef CHIRP_WAVEFORM_TYPES_H
#define CHIRP_WAVEFORM_TYPES_H

enum wf_type   { WF_LFM = 0, WF_BARKER13 = 1, WF_FILE = 2 };
enum wf_window { WIN_RECT = 0, WIN_HAMMING, WIN_HANN, WIN_BLACKMAN, WIN_TAYLOR };

#endif /* CHIRP_WAVEFORM_TYPES_H */
