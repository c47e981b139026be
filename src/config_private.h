/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_private.h — what the files of the config module share (config.h
 * is the module's face):
 *   config_table.c  the key table cfg_tab[] and its engine: one value
 *                   parsed, checked, formatted; key lookup
 *   config.c        the INI loader: lines, sections, keys, modes and the
 *                   consistency checks, each at FILE:LINE of its key
 *   config_print.c  the effective configuration as INI and JSON, the
 *                   restart-only keys
 *   config_doc.c    conf/chirpd.conf and doc/config.md from the table
 */
#ifndef CHIRP_CONFIG_PRIVATE_H
#define CHIRP_CONFIG_PRIVATE_H

#include <stddef.h>

#include "config.h"
#include "names.h"

enum ktype {
	T_STR,        /* char[size]; optional check function                  */
	T_BOOL,       /* int 0/1: true|false|yes|no|on|off|1|0                */
	T_INT,        /* int in [min, max]                                    */
	T_UINT,       /* unsigned in [min, max]                               */
	T_DOUBLE,     /* double in [min, max] (min_excl, max_excl: excluded)  */
	T_ENUM,       /* int, one of choices                                  */
	T_NUMA,       /* int: auto | none | node number                       */
	T_GPU,        /* gpu (int) + gpu_bus_id: index or PCI bus id          */
	T_NFFT,       /* size_t: auto (0) | N                                 */
	T_AUTO_INT,   /* int: auto (0) | N in [min, max]                      */
};

/* Whether a key can change on reload. Zero is the safe default: a row
 * that forgets to say needs a restart. */
enum cfg_reload { CFG_RESTART = 0, CFG_RELOAD = 1 };

struct cfg_key {
	const char *section;
	const char *name;
	enum ktype type;
	size_t off;                 /* into struct chirp_config, or struct
				       cfg_mode when in_mode                  */
	size_t size;                /* T_STR: buffer size                     */
	int in_mode;                /* a mode's key ([waveform], [mode NAME]) */
	const char *def;            /* default, as written in a file          */
	int required;               /* no default: the section must set it    */
	double min, max;
	int min_excl;               /* T_DOUBLE: value must be > min          */
	int max_excl;               /* T_DOUBLE: value must be < max          */
	const struct name_entry *choices;   /* T_ENUM, NULL-name terminated   */
	int (*check)(const char *v, char *err, size_t len);  /* T_STR         */
	enum cfg_reload reload;
	const char *help;
};

/* Bound of per-key arrays (the loader's line of each key);
 * config_table.c checks that the table fits. */
#define CFG_KEYS_MAX 128

extern const struct cfg_key cfg_tab[];
extern const size_t cfg_nkeys;

/* Parse v as k's type into c (into m for a mode's key); < 0 with the
 * reason in err, c and m unchanged. */
int cfg_parse_value(const struct cfg_key *k, struct chirp_config *c, struct cfg_mode *m,
		    const char *v, char *err, size_t len);
/* The value of k in c (in m for a mode's key) as a user would write it
 * (round-trips through cfg_parse_value). */
void cfg_format_value(const struct cfg_key *k, const struct chirp_config *c,
		      const struct cfg_mode *m, char *buf, size_t len);
/* Where k's value lives: in mode m for a mode's key, else in c. */
char *cfg_key_base(const struct cfg_key *k, struct chirp_config *c, struct cfg_mode *m);
/* Key name in section: a [mode NAME] section has the id and every mode
 * key of [waveform]; any other section the keys listed under it. */
const struct cfg_key *cfg_find_key(const char *section, const char *name);
/* Whether a file may set k in section (see cfg_find_key). */
int cfg_key_in_section(const struct cfg_key *k, const char *section);
/* "mode NAME" (as inih passes a [mode NAME] header) or "mode" itself. */
int cfg_is_mode_section(const char *s);
/* k's section as a user writes it: "mode NAME" for the id. */
const char *cfg_key_section_label(const struct cfg_key *k);
/* "a|b|c": the names of a choice table. */
void cfg_choices_list(const struct name_entry *ch, char *buf, size_t len);
/* The check of keys holding a file path: the loader resolves their
 * relative values against the config file's directory. */
int cfg_check_file_path(const char *v, char *err, size_t len);

#endif /* CHIRP_CONFIG_PRIVATE_H */
