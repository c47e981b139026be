/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.c — the name tables of names.h. The order of each table is the
 * order the documentation lists the choices in (config_doc.c prints them
 * as "a|b|c"), so it is part of the generated reference.
 */
#include "names.h"

#include <errno.h>
#include <syslog.h>
#include <string.h>
#include <strings.h>

const struct name_entry names_format[] = {
	{ "cf32", PC_FMT_CF32 }, { "sc16", PC_FMT_SC16 }, { NULL, 0 },
};
const struct name_entry names_output[] = {
	{ "complex", PC_OUT_COMPLEX }, { "magnitude", PC_OUT_MAGNITUDE },
	{ "power_db", PC_OUT_POWER_DB }, { "map_power", PC_OUT_MAP_POWER },
	{ "map_db", PC_OUT_MAP_DB }, { "none", PC_OUT_NONE }, { NULL, 0 },
};
const struct name_entry names_normalize[] = {
	{ "noise", PC_NORM_NOISE }, { "none", PC_NORM_NONE }, { NULL, 0 },
};
const struct name_entry names_backend[] = {
	{ "auto", PC_BACKEND_AUTO }, { "cuda", PC_BACKEND_CUDA }, { "cpu", PC_BACKEND_CPU },
	{ NULL, 0 },
};
const struct name_entry names_staging[] = {
	{ "auto", PC_STAGING_AUTO }, { "register", PC_STAGING_REGISTER },
	{ "copy", PC_STAGING_COPY }, { NULL, 0 },
};
const struct name_entry names_fftw_planner[] = {
	{ "estimate", PC_FFTW_ESTIMATE }, { "measure", PC_FFTW_MEASURE },
	{ "patient", PC_FFTW_PATIENT }, { NULL, 0 },
};
const struct name_entry names_switch[] = {
	{ "auto", PC_SWITCH_AUTO }, { "on", PC_SWITCH_ON }, { "off", PC_SWITCH_OFF },
	{ NULL, 0 },
};
const struct name_entry names_mti[] = {
	{ "none", PC_MTI_NONE }, { "two_pulse", PC_MTI_TWO }, { "three_pulse", PC_MTI_THREE },
	{ NULL, 0 },
};
const struct name_entry names_cfar[] = {
	{ "ca", PC_CFAR_CA }, { "go", PC_CFAR_GO }, { "so", PC_CFAR_SO }, { "os", PC_CFAR_OS },
	{ NULL, 0 },
};
const struct name_entry names_wf_type[] = {
	{ "lfm", WF_LFM }, { "barker13", WF_BARKER13 }, { "file", WF_FILE }, { NULL, 0 },
};
const struct name_entry names_window[] = {
	{ "rect", WIN_RECT }, { "hamming", WIN_HAMMING }, { "hann", WIN_HANN },
	{ "blackman", WIN_BLACKMAN }, { "taylor", WIN_TAYLOR }, { NULL, 0 },
};

const struct name_entry names_log_level[] = {
	{ "error", LOG_ERR }, { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
	{ "info", LOG_INFO }, { "debug", LOG_DEBUG }, { NULL, 0 },
};

const char *names_of(const struct name_entry *t, int value)
{
	for (; t->name; t++)
		if (t->value == value)
			return t->name;
	return "?";
}

int names_value(const struct name_entry *t, const char *name, int *value)
{
	for (; name && t->name; t++) {
		if (!strcmp(t->name, name)) {
			*value = t->value;
			return 0;
		}
	}
	return -EINVAL;
}

int names_value_nocase(const struct name_entry *t, const char *name, int *value)
{
	for (; name && t->name; t++) {
		if (!strcasecmp(t->name, name)) {
			*value = t->value;
			return 0;
		}
	}
	return -EINVAL;
}
