/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_doc.c — the reference documentation of every key, from the table
 * (config_table.c): conf/chirpd.conf (config_write_reference) and
 * doc/config.md (config_write_markdown). test_config checks that both files
 * are exactly this output.
 */
#include "config_private.h"

#include <stdio.h>
#include <string.h>

/* ---- reference documentation ------------------------------------------- */

static void key_range(const struct cfg_key *k, char *buf, size_t len)
{
	switch (k->type) {
	case T_ENUM:
		cfg_choices_list(k->choices, buf, len);
		return;
	case T_BOOL:
		snprintf(buf, len, "true|false");
		return;
	case T_INT:
	case T_UINT:
		snprintf(buf, len, "%.15g..%.15g", k->min, k->max);
		return;
	case T_DOUBLE:
		snprintf(buf, len, "%s %g .. %s%g", k->min_excl ? ">" : ">=", k->min,
			 k->max_excl ? "< " : "", k->max);
		return;
	case T_AUTO_INT:
	case T_NFFT:
		snprintf(buf, len, "auto|%.15g..%.15g", k->min, k->max);
		return;
	case T_NUMA:
		snprintf(buf, len, "auto|none|0..%.15g", k->max);
		return;
	case T_GPU:
		snprintf(buf, len, "0..%.15g|PCI bus id", k->max);
		return;
	case T_STR:
		snprintf(buf, len, "text");
		return;
	}
	buf[0] = '\0';
}

/* Write text wrapped at ~76 columns, each line starting with prefix. */
static void wrap(FILE *out, const char *prefix, const char *text)
{
	const size_t width = 76;
	size_t col = 0;

	fputs(prefix, out);
	col = strlen(prefix);
	while (*text) {
		size_t w = strcspn(text, " ");
		if (col > strlen(prefix) && col + 1 + w > width) {
			fputc('\n', out);
			fputs(prefix, out);
			col = strlen(prefix);
		} else if (col > strlen(prefix)) {
			fputc(' ', out);
			col++;
		}
		fwrite(text, 1, w, out);
		col += w;
		text += w;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

/* The [mode NAME] section, as the reference documents it: what a mode is,
 * then its own key (id), then an example. */
static const char mode_help[] =
	"Radar modes: a multi-function radar changes its waveform from one CPI to the next. "
	"The digitizer commits each CPI with a mode id (chirp_ring_commit_mode; chirp_ring_commit "
	"gives id 0), and chirpd compresses it with that mode's reference, without a reload, and "
	"hands the id on with the result; a CPI with an id that no mode has is flagged unknown "
	"(CHIRP_RING_UNKNOWN_MODE) in the output ring. Each [mode NAME] section (NAME: 1 to 31 "
	"characters of A-Z a-z 0-9 _ -) takes an id and the keys of [waveform] but sample_rate_hz, "
	"which is the radar's and every mode's; a key left out takes its default, as in [waveform]. "
	"The [waveform] section is mode 0, named default, unless a [mode NAME] section takes id 0. "
	"At most 64 modes; each mode's pulse must fit a range line ([cpi] samples) and its "
	"bandwidth the sample rate. Modes can change on reload.";
static const char mode_example_intro[] =
	"Example: a short pulse for near range and a long one for far range, next to [waveform]'s "
	"mode 0:";
static const char *const mode_example[] = {
	"[mode short]", "id = 1", "pulse_width_s = 2e-6", "bandwidth_hz = 10e6", "",
	"[mode long]", "id = 2", "pulse_width_s = 40e-6", "bandwidth_hz = 5e6", NULL,
};

/* "(RANGE[, required]; reload|restart)" of k. */
static void key_meta(const struct cfg_key *k, char *buf, size_t len)
{
	char range[160];

	key_range(k, range, sizeof(range));
	snprintf(buf, len, "(%s%s; %s)", range, (k->required) ? ", required" : "",
		 k->reload ? "reload" : "restart");
}

/* The commented [mode NAME] block of conf/chirpd.conf (scripts/gen-conf-man.sh
 * turns it into chirpd.conf(5)'s [mode NAME] section). */
static void reference_modes(FILE *out)
{
	char meta[200];

	fputs("\n#[mode NAME]\n#\n", out);
	wrap(out, "# ", mode_help);
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (strcmp(k->section, "mode"))
			continue;
		fputs("#\n", out);
		wrap(out, "# ", k->help);
		key_meta(k, meta, sizeof(meta));
		fprintf(out, "# %s\n#%s =%s%s\n", meta, k->name, k->def[0] ? " " : "", k->def);
	}
	fputs("#\n", out);
	wrap(out, "# ", mode_example_intro);
	fputs("#\n", out);
	for (size_t i = 0; mode_example[i]; i++)
		fprintf(out, "#%s\n", mode_example[i]);
}

void config_write_reference(FILE *out)
{
	const char *sec = NULL;
	char range[200];

	fputs("# chirpd.conf — chirpd's configuration (INI). Every key is shown with its\n"
	      "# default; a key left out keeps the default. Generated from the table in\n"
	      "# src/config_table.c (build/tests/test_config --write-docs); test_config\n"
	      "# checks that this file matches it.\n"
	      "#\n"
	      "# Check a file with:  chirpd --check -c FILE\n"
	      "# Apply changes with: chirpctl reload (or SIGHUP); keys marked\n"
	      "# \"restart\" only take effect when chirpd restarts.\n", out);
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!strcmp(k->section, "mode")) {
			if (strcmp(cfg_tab[i - 1].section, "mode"))
				reference_modes(out);
			continue;
		}
		if (!sec || strcmp(sec, k->section)) {
			fprintf(out, "\n[%s]\n", k->section);
			sec = k->section;
		}
		key_meta(k, range, sizeof(range));
		fputc('\n', out);
		wrap(out, "# ", k->help);
		fprintf(out, "# %s\n", range);
		fprintf(out, "%s =%s%s\n", k->name, k->def[0] ? " " : "", k->def);
	}
}

/* Text inside a Markdown table cell: '|' would end the cell. */
static void md_cell(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', out);
		fputc(*s, out);
	}
}

void config_write_markdown(FILE *out)
{
	const char *sec = NULL;
	char range[160];

	fputs("# chirpd configuration reference\n\n"
	      "<!-- Generated from the table in src/config_table.c by\n"
	      "     `build/tests/test_config --write-docs`; test_config fails if this\n"
	      "     file and the table disagree. Edit the table, not this file. -->\n\n"
	      "chirpd reads one INI file (`chirpd -c FILE`, default\n"
	      "`/etc/chirpd/chirpd.conf`). Lines are `key = value` under a `[section]`;\n"
	      "`#` or `;` start a comment (at the start of a line, or after a blank\n"
	      "inside a line). Lines are at most 197 characters. A key left out keeps its\n"
	      "default. Unknown sections and keys, repeated sections or keys, values out\n"
	      "of range and inconsistent combinations are errors; each is reported as\n"
	      "`FILE:LINE: [section] key: reason`, all of them, not just the first:\n\n"
	      "    $ chirpd --check -c bad.conf\n"
	      "    bad.conf:5: [cpi] sample: unknown key (did you mean samples?)\n"
	      "    bad.conf:3: [waveform] bandwidth_hz: 4e+07 exceeds sample_rate_hz 2.5e+07\n"
	      "    bad.conf: 2 errors\n\n"
	      "Errors in single keys come first, in file order, then the consistency\n"
	      "checks below.\n\n"
	      "`chirpd --check -c FILE` prints the effective configuration (every key)\n"
	      "or the errors, and exits non-zero on error. `chirpctl config` shows the\n"
	      "configuration the daemon runs.\n\n"
	      "**Reload.** `chirpctl reload` or SIGHUP parses the file again. If it has\n"
	      "any error the daemon keeps the old configuration and reports the errors.\n"
	      "Keys marked *restart* below cannot change on reload: if they differ the\n"
	      "reload reply names them (`restart_keys`) and the rest is applied.\n\n"
	      "**Consistency checks** (reported at the line of the key that makes the\n"
	      "combination wrong, the later of the two):\n\n"
	      "- lfm: `bandwidth_hz` <= `sample_rate_hz`; L = round(`pulse_width_s` x\n"
	      "  `sample_rate_hz`) >= 1;\n"
	      "- pulse length L (lfm as above, barker13: 13 x `chip_samples`, file: size/8)\n"
	      "  <= `[cpi] samples`;\n"
	      "- the two checks above for every mode, `[waveform]`'s and each `[mode NAME]`'s;\n"
	      "- each `[mode NAME]` has an `id`, one no other mode has; a `[mode NAME]` with\n"
	      "  id 0 leaves `[waveform]` only `sample_rate_hz`; mode names are distinct;\n"
	      "- `type = file` needs `file`, a regular file of cf32 samples;\n"
	      "- a forced `nfft` >= samples + L - 1 (no circular wrap-around);\n"
	      "- one CPI <= 4 GiB; each ring (slots x CPI) fits the machine's memory;\n"
	      "- input and output rings have different names;\n"
	      "- `backend = cuda` needs a build with CUDA;\n"
	      "- `[cfar] enable` and `[output] mode` map_power or map_db need `[doppler]\n"
	      "  enable`; a `[detections]` ring or file needs `[cfar] enable`; `[output]\n"
	      "  mode = none` needs `[cfar] enable` and a `[detections]` ring or file;\n"
	      "- `[radar] velocity = on` needs `prf_hz` and `carrier_hz`;\n"
	      "- MTI leaves at least one pulse; a forced `[doppler] fft` >= the pulses\n"
	      "  left after MTI;\n"
	      "- the CFAR window, 2 x (guard + train) + 1 cells, fits each axis (range\n"
	      "  gates, Doppler bins) and leaves training cells; `go` and `so` need\n"
	      "  `train_range` >= 1; `os`: at most 256 of them and `os_rank` among them;\n"
	      "- the local-maximum neighbourhood fits the map: 2 x `maxima_doppler` + 1\n"
	      "  <= the Doppler bins, `maxima_range` < the range gates;\n"
	      "- `[beams]` (mode not off) needs `[radar] carrier_hz`; the array has `[cpi]\n"
	      "  channels` elements (`[array] spacing_m` > 0 with `ula`; `[array] file` and\n"
	      "  `calibration` files are checked line by line, their errors naming their\n"
	      "  own FILE:LINE); `mvdr` needs at most 64 channels and a training rule that\n"
	      "  reaches `snapshots` cells; `[cfar] integrate = none`; every beam of the fan\n"
	      "  or list visible at zero pointing (u^2 + v^2 <= 1); a list of `count`\n"
	      "  directions; one CPI's B beams and maps within half the machine's memory;\n"
	      "- what pulse compression's own check (pc_params_check) says of the radar\n"
	      "  chain built from the file.\n\n", out);
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!strcmp(k->section, "mode") && strcmp(cfg_tab[i - 1].section, "mode")) {
			fputs("\n## [mode NAME]\n\n", out);
			wrap(out, "", mode_help);
			fputs("\n| key | default | values | on reload | meaning |\n"
			      "|---|---|---|---|---|\n", out);
			sec = k->section;
		}
		if (!sec || strcmp(sec, k->section)) {
			fprintf(out, "\n## [%s]\n\n", k->section);
			fputs("| key | default | values | on reload | meaning |\n"
			      "|---|---|---|---|---|\n", out);
			sec = k->section;
		}
		key_range(k, range, sizeof(range));
		if (k->required)
			fprintf(out, "| `%s` | required | ", k->name);
		else
			fprintf(out, "| `%s` | `%s` | ", k->name, k->def[0] ? k->def : "\"\"");
		md_cell(out, range);
		fprintf(out, " | %s | ", k->reload ? "applied" : "restart");
		md_cell(out, k->help);
		fputs(" |\n", out);
		if (!strcmp(k->section, "mode") &&
		    (i + 1 == cfg_nkeys || strcmp(cfg_tab[i + 1].section, "mode"))) {
			fputc('\n', out);
			wrap(out, "", mode_example_intro);
			fputc('\n', out);
			for (size_t j = 0; mode_example[j]; j++)
				fprintf(out, "%s%s\n", mode_example[j][0] ? "    " : "", mode_example[j]);
		}
	}
}
