/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.h — the names of enumerated values, each table written once: the
 * words a configuration file takes ([input] format = sc16), the words the
 * logs, replies and tools print (pc_format_name, wf_window_name), and the
 * config module's choices are the same table. A leaf module: it includes
 * only the leaf headers that define the enums (chirp/pc_types.h,
 * waveform_types.h).
 */
#ifndef CHIRP_NAMES_H
#define CHIRP_NAMES_H

#include "chirp/pc_types.h"
#include "waveform_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One name and its value; a table ends with a NULL name. */
struct name_entry {
	const char *name;
	int value;
};

extern const struct name_entry names_format[];       /* enum pc_format       */
extern const struct name_entry names_output[];       /* enum pc_output       */
extern const struct name_entry names_normalize[];    /* enum pc_normalize    */
extern const struct name_entry names_backend[];      /* enum pc_backend      */
extern const struct name_entry names_staging[];      /* enum pc_staging      */
extern const struct name_entry names_fftw_planner[]; /* enum pc_fftw_planner */
extern const struct name_entry names_switch[];       /* enum pc_switch       */
extern const struct name_entry names_mti[];          /* enum pc_mti          */
extern const struct name_entry names_cfar[];         /* enum pc_cfar         */
extern const struct name_entry names_wf_type[];      /* enum wf_type         */
extern const struct name_entry names_window[];       /* enum wf_window       */
extern const struct name_entry names_log_level[];    /* LOG_* of syslog.h: the
							levels [daemon] log_level
							and `log-level` take  */

/* The name of value in table t, or "?" when it has none. */
const char *names_of(const struct name_entry *t, int value);

/* The value named name in t (exact match: 0), or -EINVAL. */
int names_value(const struct name_entry *t, const char *name, int *value);

/* The same, ignoring case (tools' options). */
int names_value_nocase(const struct name_entry *t, const char *name, int *value);

#ifdef __cplusplus
}
#endif

#endif /* CHIRP_NAMES_H */
