/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_print.c — the effective configuration written out: as an INI file
 * config_load reads back (config_print), as JSON (config_to_json, the
 * `config` reply), and the keys that need a restart (config_restart_keys,
 * config_hold_restart_keys), all from the table (config_table.c).
 */
#include "config_private.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- output ------------------------------------------------------------ */

/* Mode i is [waveform]'s: written there, not as a [mode NAME] section.
 * collect_modes puts it first, as id 0 named default. */
static int is_wave_mode(const struct chirp_config *c, unsigned i)
{
	return i == 0 && c->nmodes > 0 && c->modes[0].id == 0 &&
	       !strcmp(c->modes[0].name, "default");
}

/* Every [mode NAME] section: its id, then its mode keys in table order. */
static void print_modes(const struct chirp_config *c, FILE *out)
{
	char val[512];

	for (unsigned i = 0; i < c->nmodes && i < CFG_MAX_MODES; i++) {
		const struct cfg_mode *m = &c->modes[i];

		if (is_wave_mode(c, i))
			continue;
		fprintf(out, "\n[mode %s]\nid = %u\n", m->name, m->id);
		for (size_t j = 0; j < cfg_nkeys; j++) {
			const struct cfg_key *k = &cfg_tab[j];
			if (!(k->in_mode) || !strcmp(k->section, "mode"))
				continue;
			cfg_format_value(k, c, m, val, sizeof(val));
			fprintf(out, "%s =%s%s\n", k->name, val[0] ? " " : "", val);
		}
	}
}

void config_print(const struct chirp_config *c, FILE *out)
{
	const char *sec = NULL;
	char val[512];

	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!strcmp(k->section, "mode")) {
			/* The [mode] template's own keys (the id) appear in
			 * each [mode NAME] section. */
			if (strcmp(cfg_tab[i - 1].section, "mode"))
				print_modes(c, out);
			continue;
		}
		/* [waveform]'s mode keys, unless a [mode] section has id 0 */
		if ((k->in_mode) && !is_wave_mode(c, 0))
			continue;
		if (!sec || strcmp(sec, k->section)) {
			fprintf(out, "%s[%s]\n", sec ? "\n" : "", k->section);
			sec = k->section;
		}
		cfg_format_value(k, c, &c->modes[0], val, sizeof(val));
		fprintf(out, "%s =%s%s\n", k->name, val[0] ? " " : "", val);
	}
}

/* k's value in c (in m for a mode key) as JSON. */
static json_t *key_json(const struct cfg_key *k, const struct chirp_config *c,
			const struct cfg_mode *m)
{
	const char *base = cfg_key_base(k, (struct chirp_config *)c, (struct cfg_mode *)m);
	char val[512];

	switch (k->type) {
	case T_BOOL:
		return json_boolean(*(const int *)base);
	case T_INT:
		return json_integer(*(const int *)base);
	case T_UINT:
		return json_integer(*(const unsigned *)base);
	case T_DOUBLE:
		return json_real(*(const double *)base);
	case T_AUTO_INT:
	case T_NFFT:
	case T_NUMA:
	case T_GPU:
		cfg_format_value(k, c, m, val, sizeof(val));
		if (isdigit((unsigned char)val[0]) && !strchr(val, ':'))
			return json_integer(strtoll(val, NULL, 10));
		return json_string(val);
	default:
		cfg_format_value(k, c, m, val, sizeof(val));
		return json_string(val);
	}
}

/* "modes": [{"id", "name", "section", then every mode key}, ...] in
 * c->modes order; "section" is where the file sets the mode: "waveform"
 * or "mode NAME" (what config_print writes). */
static json_t *modes_json(const struct chirp_config *c)
{
	json_t *arr = json_array();
	char sec[48];

	for (unsigned i = 0; arr && i < c->nmodes && i < CFG_MAX_MODES; i++) {
		const struct cfg_mode *m = &c->modes[i];
		json_t *o = json_object();

		if (is_wave_mode(c, i))
			snprintf(sec, sizeof(sec), "waveform");
		else
			snprintf(sec, sizeof(sec), "mode %s", m->name);
		if (!o || json_array_append_new(arr, o) < 0 ||
		    json_object_set_new(o, "id", json_integer(m->id)) < 0 ||
		    json_object_set_new(o, "name", json_string(m->name)) < 0 ||
		    json_object_set_new(o, "section", json_string(sec)) < 0)
			goto fail;
		for (size_t j = 0; j < cfg_nkeys; j++) {
			const struct cfg_key *k = &cfg_tab[j];
			if (!(k->in_mode) || !strcmp(k->section, "mode"))
				continue;
			if (json_object_set_new(o, k->name, key_json(k, c, m)) < 0)
				goto fail;
		}
	}
	return arr;
fail:
	json_decref(arr);
	return NULL;
}

struct json_t *config_to_json(const struct chirp_config *c)
{
	json_t *root = json_object(), *sec = NULL;
	const char *secname = NULL;

	if (!root)
		return NULL;
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];

		if (!strcmp(k->section, "mode")) {
			if (strcmp(cfg_tab[i - 1].section, "mode") &&
			    json_object_set_new(root, "modes", modes_json(c)) < 0)
				goto fail;
			continue;
		}
		if (!secname || strcmp(secname, k->section)) {
			sec = json_object();
			if (!sec || json_object_set_new(root, k->section, sec) < 0)
				goto fail;
			secname = k->section;
		}
		/* "waveform" holds what config_print writes under [waveform]:
		 * its mode's keys unless a [mode NAME] section has id 0. */
		if ((k->in_mode) && !is_wave_mode(c, 0))
			continue;
		if (json_object_set_new(sec, k->name, key_json(k, c, &c->modes[0])) < 0)
			goto fail;
	}
	return root;
fail:
	json_decref(root);
	return NULL;
}

int config_restart_keys(const struct chirp_config *a, const struct chirp_config *b,
			char *buf, size_t len)
{
	char va[512], vb[512];
	size_t n = 0;
	int count = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		/* A mode's keys are all reloadable (test_config checks it): a
		 * new generation builds its backend with the new modes. */
		if (k->reload || (k->in_mode))
			continue;
		cfg_format_value(k, a, NULL, va, sizeof(va));
		cfg_format_value(k, b, NULL, vb, sizeof(vb));
		if (!strcmp(va, vb))
			continue;
		count++;
		if (n < len) {
			int w = snprintf(buf + n, len - n, "%s%s.%s", count > 1 ? "," : "",
					 k->section, k->name);
			if (w > 0)
				n += (size_t)w;
		}
	}
	return count;
}

int config_key_reloadable(const char *section, const char *name)
{
	const struct cfg_key *k = cfg_find_key(section, name);
	return k ? (int)k->reload : -ENOENT;
}

/* ---- restart-only keys ------------------------------------------------- */

/* Bytes of the value k stores at its offset (T_GPU: gpu only; its bus id
 * is copied beside it by the caller). */
static size_t key_bytes(const struct cfg_key *k)
{
	switch (k->type) {
	case T_STR:
		return k->size;
	case T_DOUBLE:
		return sizeof(double);
	case T_NFFT:
		return sizeof(size_t);
	case T_UINT:
		return sizeof(unsigned);
	case T_BOOL:
	case T_INT:
	case T_ENUM:
	case T_NUMA:
	case T_GPU:
	case T_AUTO_INT:
		return sizeof(int);
	}
	return 0;
}

_Static_assert(sizeof(unsigned) == sizeof(int), "T_AUTO_INT fields are int or unsigned");

void config_hold_restart_keys(const struct chirp_config *running, struct chirp_config *next)
{
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];

		/* Mode keys are reloadable; their offsets are into struct
		 * cfg_mode, not struct chirp_config. */
		if (k->reload || (k->in_mode))
			continue;
		memcpy((char *)next + k->off, (const char *)running + k->off, key_bytes(k));
		/* T_GPU is two fields: the index, and the bus id it stands
		 * for when the index is -1. */
		if (k->type == T_GPU)
			memcpy(next->gpu_bus_id, running->gpu_bus_id, sizeof(next->gpu_bus_id));
	}
	/* next's waveform files are next's own buffers, never running's
	 * (config_wf, config_mode_wf). */
	config_wf(next);
	for (unsigned i = 0; i < next->nmodes && i < CFG_MAX_MODES; i++)
		config_mode_wf(next, i);
}

int config_key_at(size_t i, const char **section, const char **name)
{
	if (i >= cfg_nkeys)
		return -ENOENT;
	*section = cfg_tab[i].section;
	*name = cfg_tab[i].name;
	return (int)cfg_tab[i].reload;
}
