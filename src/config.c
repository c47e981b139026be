/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — chirpd's configuration file: lines, sections, keys, modes
 * and the consistency checks (see config.h; the keys are config_table.c's).
 *
 * Radar modes: a [mode NAME] section takes the id and every mode key
 * (MODE_* rows of the table); [waveform] takes its mode keys for the mode
 * "default" (id 0) and sample_rate_hz, the radar's, for all modes. The
 * reader opens a mode at each [mode NAME] header; collect_modes puts the
 * modes into struct chirp_config once the file is read.
 *
 * Consistency: the checks here are those of the file's own keys (a
 * mode's pulse against the CPI, the rings' names, where detections go);
 * the rules that another module owns (the radar chain, a CPI against a
 * ring slot) come from config_check_rules (plan.c), as faults naming
 * their keys, and are reported at the line of the key the file set last.
 *
 * Parsing uses inih through ini_parse_stream with our own line reader. The
 * reader counts lines (inih calls the handler for a line before reading
 * the next, so the count is the handler's line number), and rejects what
 * inih would silently accept or misreport: lines with no '=', section
 * headers with junk after ']', unknown or repeated sections, control
 * characters and over-long lines. It also strips leading blanks, which
 * turns off inih's multi-line continuation (a continuation would look like
 * a duplicate key), and inline comments that start with " #" or " ;".
 * Every problem is reported, not just the first.
 */
#include "config_private.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* Largest config file we read: a real one is a few KiB. */
#define CFG_FILE_MAX (1u << 20)

static const char *const cfg_sections[] = {
	"daemon", "numa", "input", "cpi", "waveform", "processing", "output", "radar", "doppler",
	"cfar", "array", "beams", "detections", "metrics", "live", "publish", "trace", NULL,
};
#define NSECTIONS (sizeof(cfg_sections) / sizeof(cfg_sections[0]) - 1)

static int section_index(const char *s)
{
	for (size_t i = 0; i < NSECTIONS; i++)
		if (!strcmp(cfg_sections[i], s))
			return (int)i;
	return -1;
}

/* ---- defaults ---------------------------------------------------------- */

/* The defaults of every mode key (in_mode) into m: a [mode NAME] section
 * starts from them, as [waveform] does. The id has none (F_REQUIRED). */
static void mode_defaults(struct cfg_mode *m)
{
	char err[256];

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!(k->in_mode) || (k->required))
			continue;
		if (cfg_parse_value(k, NULL, m, k->def, err, sizeof(err)) < 0)
			log_err("config: bad built-in default for [%s] %s: %s",
				k->section, k->name, err);
	}
}

/*
 * After the modes are set: every mode's wf gets [waveform] sample_rate_hz
 * (the radar's rate, not a mode's) and its own file pointer, and c->wf /
 * c->wf_file become a copy of mode id 0, the waveform of code that knows a
 * single one.
 */
static void modes_finish(struct chirp_config *c)
{
	double rate = c->wf.sample_rate_hz;
	int i0 = config_mode_index(c, 0);
	const struct cfg_mode *m0 = &c->modes[i0 >= 0 ? i0 : 0];

	for (unsigned i = 0; i < c->nmodes; i++) {
		c->modes[i].wf.sample_rate_hz = rate;
		config_mode_wf(c, i);
	}
	c->wf = m0->wf;
	memcpy(c->wf_file, m0->wf_file, sizeof(c->wf_file));
	config_wf(c);
}

void config_defaults(struct chirp_config *c)
{
	char err[256];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < cfg_nkeys; i++) {
		if (cfg_tab[i].in_mode)
			continue;
		/* The defaults are valid by construction; test_config checks it. */
		if (cfg_parse_value(&cfg_tab[i], c, NULL, cfg_tab[i].def, err, sizeof(err)) < 0)
			log_err("config: bad built-in default for [%s] %s: %s",
				cfg_tab[i].section, cfg_tab[i].name, err);
	}
	/* One mode: [waveform]'s, id 0, "default". */
	mode_defaults(&c->modes[0]);
	snprintf(c->modes[0].name, sizeof(c->modes[0].name), "default");
	c->nmodes = 1;
	modes_finish(c);
}

const struct wf_params *config_wf(struct chirp_config *c)
{
	c->wf.file = c->wf_file[0] ? c->wf_file : NULL;
	return &c->wf;
}

const struct wf_params *config_mode_wf(struct chirp_config *c, unsigned i)
{
	struct cfg_mode *m;

	if (i >= c->nmodes || i >= CFG_MAX_MODES)
		return NULL;
	m = &c->modes[i];
	m->wf.file = m->wf_file[0] ? m->wf_file : NULL;
	return &m->wf;
}

int config_mode_index(const struct chirp_config *c, unsigned id)
{
	for (unsigned i = 0; i < c->nmodes && i < CFG_MAX_MODES; i++)
		if (c->modes[i].id == id)
			return (int)i;
	return -1;
}

/* ---- loading ----------------------------------------------------------- */

struct load {
	struct chirp_config *c;
	const char *name;           /* file name for messages                 */
	FILE *errs;
	int nerr;
	int line;                   /* line being parsed                      */
	const char *text, *pos;     /* reader state                           */
	const char *end;
	int sec_line[NSECTIONS];    /* line of each section header, 0 = none */
	int sec_known;              /* current section header was valid       */
	int hdr_seen;               /* any section header line seen           */
	int key_line[CFG_KEYS_MAX];        /* line each key was set at, 0 = default;
				       [waveform]'s mode keys included      */
	char base_dir[CFG_PATH_MAX];/* config file's directory ("" = cwd)     */
	struct cfg_mode wave;       /* [waveform]'s mode (defaults if absent) */
	struct mode_load {          /* each [mode NAME] section, in file order */
		struct cfg_mode m;
		int line;           /* of its header                          */
		int key_line[CFG_KEYS_MAX];/* as above, for this section's keys      */
	} modes[CFG_MAX_MODES];
	unsigned nmodes;
	int cur;                    /* the [mode] section being read, or -1   */
	int wave_is_mode;           /* [waveform] is mode 0 ("default")       */
	const struct mode_load *check_mode; /* the [mode] check_pulse checks  */
};

static void report(struct load *ld, int line, const char *section, const char *key,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void report(struct load *ld, int line, const char *section, const char *key,
		   const char *fmt, ...)
{
	va_list ap;

	ld->nerr++;
	if (!ld->errs)
		return;
	if (line > 0)
		fprintf(ld->errs, "%s:%d: ", ld->name, line);
	else
		fprintf(ld->errs, "%s: ", ld->name);
	if (section && key)
		fprintf(ld->errs, "[%s] %s: ", section, key);
	else if (section)
		fprintf(ld->errs, "[%s]: ", section);
	va_start(ap, fmt);
	vfprintf(ld->errs, fmt, ap);
	va_end(ap);
	fputc('\n', ld->errs);
}

/* Well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF)? */
static int utf8_ok(const unsigned char *p, const unsigned char *e)
{
	while (p < e) {
		unsigned c = *p++, need, min, cp;
		if (c < 0x80)
			continue;
		if (c >= 0xC2 && c <= 0xDF)
			need = 1, min = 0x80, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			need = 2, min = 0x800, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			need = 3, min = 0x10000, cp = c & 0x07;
		else
			return 0;
		if ((size_t)(e - p) < need)
			return 0;
		for (unsigned i = 0; i < need; i++, p++) {
			if ((*p & 0xC0) != 0x80)
				return 0;
			cp = (cp << 6) | (*p & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
	}
	return 1;
}

/* The next raw line as [*p, *e): without its newline, a UTF-8 BOM on line 1,
 * a trailing CR and leading blanks. Advances ld->pos and ld->line. */
static void reader_next_line(struct load *ld, const char **p, const char **e)
{
	const char *nl = memchr(ld->pos, '\n', (size_t)(ld->end - ld->pos));

	ld->line++;
	*p = ld->pos;
	*e = nl ? nl : ld->end;
	ld->pos = nl ? nl + 1 : ld->end;

	if (ld->line == 1 && *e - *p >= 3 && !memcmp(*p, "\xEF\xBB\xBF", 3))
		*p += 3;                                   /* UTF-8 BOM */
	if (*e > *p && (*e)[-1] == '\r')
		(*e)--;
	while (*p < *e && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* A line with a control character (but tab) or invalid UTF-8 is reported
 * and skipped: -1. */
static int reader_chars_check(struct load *ld, const char *p, const char *e)
{
	for (const char *q = p; q < e; q++) {
		if ((unsigned char)*q < 0x20 && *q != '\t') {
			report(ld, ld->line, NULL, NULL,
			       "control character 0x%02x in line", (unsigned char)*q);
			return -1;
		}
		if (*q == 0x7f) {
			report(ld, ld->line, NULL, NULL, "control character 0x7f in line");
			return -1;
		}
	}
	if (!utf8_ok((const unsigned char *)p, (const unsigned char *)e)) {
		report(ld, ld->line, NULL, NULL, "line is not valid UTF-8");
		return -1;
	}
	return 0;
}

/* The end of [p, e) without an inline comment (a blank then '#' or ';') and
 * without trailing blanks. */
static const char *reader_strip_comment(const char *p, const char *e)
{
	for (const char *q = p + 1; q < e; q++) {
		if ((*q == '#' || *q == ';') && (q[-1] == ' ' || q[-1] == '\t')) {
			e = q;
			break;
		}
	}
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	return e;
}

/* A mode's name: 1..CFG_MODE_NAME_MAX-1 characters of A-Z a-z 0-9 _ -
 * (it names the mode in logs, metrics labels and file names). */
static int mode_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n >= CFG_MODE_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return 0;
	return 1;
}

/* A "[mode NAME]" header (sec is the text between the brackets): a new
 * mode with every mode key at its default, passed on to inih as
 * "[mode NAME]\n" (0); a bad or repeated name, or one mode too many, is
 * reported (-1) and the section's keys are skipped. */
static int reader_mode(struct load *ld, const char *sec, char *str, int num)
{
	const char *name = sec + 4;
	struct mode_load *ml;

	while (*name == ' ' || *name == '\t')
		name++;
	if (!mode_name_ok(name)) {
		report(ld, ld->line, sec, NULL,
		       *name ? "mode name must be 1..%d characters of A-Z a-z 0-9 _ -" :
			       "a mode section needs a name, like [mode short] (at most %d characters of A-Z a-z 0-9 _ -)",
		       CFG_MODE_NAME_MAX - 1);
		return -1;
	}
	for (unsigned j = 0; j < ld->nmodes; j++) {
		if (!strcmp(ld->modes[j].m.name, name)) {
			report(ld, ld->line, sec, NULL, "duplicate mode name (first at line %d)",
			       ld->modes[j].line);
			return -1;
		}
	}
	if (ld->nmodes >= CFG_MAX_MODES) {
		report(ld, ld->line, sec, NULL, "more than %d modes", CFG_MAX_MODES);
		return -1;
	}
	ml = &ld->modes[ld->nmodes];
	mode_defaults(&ml->m);
	ml->m.id = UINT_MAX;   /* none yet: an id that failed to parse stays so */
	snprintf(ml->m.name, sizeof(ml->m.name), "%s", name);
	ml->line = ld->line;
	ld->cur = (int)ld->nmodes++;
	ld->sec_known = 1;
	snprintf(str, (size_t)num, "[mode %s]\n", name);
	return 0;
}

/* A section header line [p, e) of n bytes: a known section seen once is
 * written to str as "[name]\n" (0); anything else is reported (-1), and the
 * keys under it are skipped without a report of their own. */
static int reader_section(struct load *ld, const char *p, const char *e, size_t n,
			  char *str, int num)
{
	const char *rb = memchr(p, ']', n), *s0, *s1;
	char sec[64];
	size_t sl;
	int si;

	ld->sec_known = 0;
	ld->hdr_seen = 1;
	if (!rb || rb != e - 1) {
		report(ld, ld->line, NULL, NULL,
		       rb ? "text after ']' in section header" :
			    "section header without ']'");
		/* Keys until the next good header are not reported again. */
		return -1;
	}
	s0 = p + 1;
	s1 = rb;
	while (s0 < s1 && (*s0 == ' ' || *s0 == '\t'))
		s0++;
	while (s1 > s0 && (s1[-1] == ' ' || s1[-1] == '\t'))
		s1--;
	sl = (size_t)(s1 - s0);
	if (sl >= sizeof(sec)) {
		report(ld, ld->line, NULL, NULL, "unknown section (name too long)");
		return -1;
	}
	memcpy(sec, s0, sl);
	sec[sl] = '\0';
	ld->cur = -1;
	if (cfg_is_mode_section(sec))
		return reader_mode(ld, sec, str, num);
	si = section_index(sec);
	if (si < 0) {
		report(ld, ld->line, sec, NULL,
		       "unknown section (sections: daemon, numa, input, cpi, waveform, mode NAME, processing, output, radar, doppler, cfar, array, beams, detections, metrics, live, publish, trace)");
		return -1;
	}
	if (ld->sec_line[si]) {
		report(ld, ld->line, sec, NULL, "duplicate section (first at line %d)",
		       ld->sec_line[si]);
		return -1;
	}
	ld->sec_line[si] = ld->line;
	ld->sec_known = 1;
	snprintf(str, (size_t)num, "[%s]\n", sec);
	return 0;
}

/* A key line [p, e) of n bytes is passed on (0) only with a key name and a
 * '=' or ':' inside a known section; else -1, reported unless the section
 * it is in was reported already. */
static int reader_key_check(struct load *ld, const char *p, const char *e, size_t n)
{
	if (!memchr(p, '=', n) && !memchr(p, ':', n)) {
		report(ld, ld->line, NULL, NULL, "syntax error: expected 'key = value' or '[section]'");
		return -1;
	}
	if (*p == '=' || *p == ':') {
		report(ld, ld->line, NULL, NULL, "syntax error: missing key name before '%c'", *p);
		return -1;
	}
	if (!ld->sec_known) {
		/* Outside any section, or in a rejected one. Only the first
		 * case is news; inih would pass section "" or the bad name. */
		if (!ld->hdr_seen) {
			/* No valid section seen yet: say so for this key. */
			char key[64];
			const char *eq = p;
			while (eq < e && *eq != '=' && *eq != ':')
				eq++;
			while (eq > p && (eq[-1] == ' ' || eq[-1] == '\t'))
				eq--;
			snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
			report(ld, ld->line, NULL, NULL,
			       "%s: key outside any known section (put it under [section])", key);
		}
		return -1;
	}
	return 0;
}

/*
 * inih reader: hands inih one cleaned line at a time (see the top of the
 * file). str has room for num bytes. A line that is reported, or a comment,
 * reaches inih as an empty line, so its line numbers stay right.
 */
static char *reader(char *str, int num, void *stream)
{
	struct load *ld = stream;
	const char *p, *e;
	size_t n;

	if (ld->pos >= ld->end || num < 4)
		return NULL;
	reader_next_line(ld, &p, &e);
	if (reader_chars_check(ld, p, e) < 0)
		goto blank;
	if (p == e || *p == '#' || *p == ';')
		goto blank;
	e = reader_strip_comment(p, e);
	n = (size_t)(e - p);
	if (n > (size_t)num - 3) {
		report(ld, ld->line, NULL, NULL, "line too long (%zu characters, at most %d)",
		       n, num - 3);
		goto blank;
	}
	if (*p == '[') {
		if (reader_section(ld, p, e, n, str, num) < 0)
			goto blank;
		return str;
	}
	if (reader_key_check(ld, p, e, n) < 0)
		goto blank;
	memcpy(str, p, n);
	str[n] = '\n';
	str[n + 1] = '\0';
	return str;
blank:
	str[0] = '\n';
	str[1] = '\0';
	return str;
}

/* Edit distance of two short strings (capped at 64 characters). */
static unsigned edit_distance(const char *a, const char *b)
{
	unsigned prev[65], cur[65];
	size_t la = strlen(a), lb = strlen(b);

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned d = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
		}
		memcpy(prev, cur, (lb + 1) * sizeof(unsigned));
	}
	return prev[lb];
}

/*
 * The key a user probably meant: the same name in another section, else
 * a name within 2 edits in this section (a typo: sample -> samples).
 */
static const struct cfg_key *suggest(const char *section, const char *name)
{
	const struct cfg_key *best = NULL;
	unsigned bestd = 3;

	for (size_t i = 0; i < cfg_nkeys; i++)
		if (!strcmp(cfg_tab[i].name, name))
			return &cfg_tab[i];
	for (size_t i = 0; i < cfg_nkeys; i++) {
		unsigned d;
		if (!cfg_key_in_section(&cfg_tab[i], section))
			continue;
		d = edit_distance(cfg_tab[i].name, name);
		if (d < bestd) {
			bestd = d;
			best = &cfg_tab[i];
		}
	}
	return best;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct load *ld = user;
	const struct cfg_key *k;
	struct cfg_mode *m = &ld->wave;   /* where a mode key goes */
	int *lines = ld->key_line;
	char err[256];
	size_t i;

	/* inih built with INI_CALL_HANDLER_ON_NEW_SECTION calls us with no
	 * name at each header (the reader has checked it already). */
	if (!section || !name)
		return 1;
	if (!value)
		value = "";     /* INI_ALLOW_NO_VALUE; the reader rejects such lines */
	if (cfg_is_mode_section(section)) {
		/* The reader passes a [mode NAME] header only after opening
		 * its mode (ld->cur), and its keys before the next header. */
		if (ld->cur < 0)
			return 1;
		m = &ld->modes[ld->cur].m;
		lines = ld->modes[ld->cur].key_line;
	}
	k = cfg_find_key(section, name);
	if (!k) {
		const struct cfg_key *s = suggest(section, name);
		if (s && !cfg_key_in_section(s, section))
			report(ld, ld->line, section, name, "unknown key (did you mean [%s] %s?)",
			       cfg_key_section_label(s), s->name);
		else if (s)
			report(ld, ld->line, section, name, "unknown key (did you mean %s?)", s->name);
		else
			report(ld, ld->line, section, name, "unknown key");
		return 1;
	}
	i = (size_t)(k - cfg_tab);
	if (lines[i]) {
		report(ld, ld->line, section, name, "duplicate key (first set at line %d)",
		       lines[i]);
		return 1;
	}
	lines[i] = ld->line;
	/* inih drops blanks around a value, and the reader cuts " ;" / " #"
	 * comments, so a value can still start with ';' or '#' ("listen=;:9").
	 * config_print would write it as "key = ;..." and that line reads back
	 * as an empty value with a comment: what --check and "chirpctl config"
	 * print would mean something else than what runs. No key needs such a
	 * value, so refuse it rather than invent a quoting syntax. */
	if (value[0] == ';' || value[0] == '#') {
		report(ld, ld->line, section, name,
		       "value starts with '%c', which reads as a comment when written back; not allowed",
		       value[0]);
		return 1;
	}
	err[0] = '\0';
	if (cfg_parse_value(k, ld->c, m, value, err, sizeof(err)) < 0) {
		report(ld, ld->line, section, name, "%s", err);
		return 1;
	}
	/* Relative file paths are relative to the config file's directory,
	 * stored resolved so the daemon's cwd does not matter. */
	if (k->check == cfg_check_file_path && value[0] && value[0] != '/' && ld->base_dir[0]) {
		char *dst = cfg_key_base(k, ld->c, m);
		int w = snprintf(dst, k->size, "%s/%s", ld->base_dir, value);
		if (w < 0 || (size_t)w >= k->size) {
			report(ld, ld->line, section, name,
			       "%s/%s is longer than %zu characters", ld->base_dir, value, k->size - 1);
			dst[0] = '\0';
		}
	}
	return 1;
}

/* The line a key was set at (0 = default). A mode's key in a "mode NAME"
 * section is looked up in the mode being checked (ld->check_mode). */
static int key_line(const struct load *ld, const char *section, const char *name)
{
	const struct cfg_key *k = cfg_find_key(section, name);

	if (!k)
		return 0;
	if (cfg_is_mode_section(section))
		return ld->check_mode ? ld->check_mode->key_line[k - cfg_tab] : 0;
	return ld->key_line[k - cfg_tab];
}

/* The latest-set of two keys: the one whose line makes the combination wrong. */
static const char *later(const struct load *ld, const char *sa, const char *ka,
			 const char *sb, const char *kb, const char **sec, int *line)
{
	int la = key_line(ld, sa, ka), lb = key_line(ld, sb, kb);

	if (lb > la) {
		*sec = sb;
		*line = lb;
		return kb;
	}
	*sec = sa;
	*line = la;
	return ka;
}

/* A mode being checked: its waveform, the section its keys are reported
 * under ("waveform" or "mode NAME") and, for a [mode NAME] section, " for
 * [mode NAME]" to name it in messages about keys of other sections. */
struct mode_check {
	const struct cfg_mode *m;
	const char *sec;
	const char *whose;
};

/* Pulse length L in samples of mode mc, 0 if unknown. */
static unsigned long long ref_len(const struct mode_check *mc, double rate, struct load *ld)
{
	const struct cfg_mode *m = mc->m;

	switch (m->wf.type) {
	case WF_LFM:
	case WF_BARKER13: {
		struct wf_params wf = m->wf;

		wf.sample_rate_hz = rate;   /* the radar's: modes_finish sets it last */
		return wf_pulse_len(&wf);
	}
	case WF_FILE: {
		struct stat st;
		int line = key_line(ld, mc->sec, "file");
		if (!m->wf_file[0]) {
			report(ld, line ? line : key_line(ld, mc->sec, "type"), mc->sec, "file",
			       "type = file needs a file");
			return 0;
		}
		if (stat(m->wf_file, &st) < 0) {
			report(ld, line, mc->sec, "file", "%s: %s", m->wf_file, strerror(errno));
			return 0;
		}
		if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size % 8) {
			report(ld, line, mc->sec, "file",
			       "%s: not a regular file of cf32 samples (size %lld is not a positive multiple of 8)",
			       m->wf_file, (long long)st.st_size);
			return 0;
		}
		return (unsigned long long)st.st_size / 8;
	}
	}
	return 0;
}

/* An lfm sweep must fit the sample rate (complex sampling: |f| <= fs/2). */
static void check_bandwidth(struct load *ld, const struct mode_check *mc, double rate)
{
	const struct wf_params *wf = &mc->m->wf;
	const char *sec, *key;
	int line;

	if (wf->type != WF_LFM || wf->bandwidth_hz <= rate)
		return;
	key = later(ld, mc->sec, "bandwidth_hz", "waveform", "sample_rate_hz", &sec, &line);
	if (!strcmp(key, "bandwidth_hz"))
		report(ld, line, sec, key, "%g exceeds sample_rate_hz %g", wf->bandwidth_hz, rate);
	else
		report(ld, line, sec, key, "%g is below bandwidth_hz %g%s", rate, wf->bandwidth_hz,
		       mc->whose);
}

/* A mode's pulse against the sampling and the CPI: bandwidth within the
 * sample rate, at least one sample, no longer than a range line, and an
 * nfft that holds the whole correlation. */
static void check_pulse(struct load *ld, const struct mode_check *mc)
{
	struct chirp_config *c = ld->c;
	const struct wf_params *wf = &mc->m->wf;
	double rate = c->wf.sample_rate_hz;
	const char *sec, *key;
	unsigned long long L, R = c->samples, need;
	int line;

	check_bandwidth(ld, mc, rate);
	L = ref_len(mc, rate, ld);
	if (wf->type == WF_LFM && L == 0) {
		key = later(ld, mc->sec, "pulse_width_s", "waveform", "sample_rate_hz", &sec, &line);
		report(ld, line, sec, key,
		       "pulse is shorter than one sample (pulse_width_s %g * sample_rate_hz %g < 0.5)%s",
		       wf->pulse_width_s, rate, mc->whose);
	}
	if (L > R) {
		const char *wkey = wf->type == WF_LFM ? "pulse_width_s" :
				   wf->type == WF_BARKER13 ? "chip_samples" : "file";
		key = later(ld, mc->sec, wkey, "cpi", "samples", &sec, &line);
		if (wf->type == WF_LFM && key_line(ld, "waveform", "sample_rate_hz") > line) {
			sec = "waveform";
			key = "sample_rate_hz";
			line = key_line(ld, "waveform", "sample_rate_hz");
		}
		report(ld, line, sec, key, "pulse length L=%llu exceeds range samples R=%llu%s",
		       L, R, strcmp(sec, mc->sec) ? mc->whose : "");
	}
	need = pc_nfft_need(R, L);
	if (c->nfft && L && c->nfft < need) {
		key = later(ld, "processing", "nfft", "cpi", "samples", &sec, &line);
		report(ld, line, sec, key, "nfft %zu is below samples + L - 1 = %llu (no wrap-around allowed)%s",
		       c->nfft, need, mc->whose);
	}
}

/* check_pulse for every mode: [waveform]'s (when it is one) and each
 * [mode NAME] section's. */
static void check_modes_pulse(struct load *ld)
{
	struct mode_check mc = { &ld->wave, "waveform", "" };
	char sec[48], whose[64];

	if (ld->wave_is_mode) {
		ld->check_mode = NULL;
		check_pulse(ld, &mc);
	}
	for (unsigned j = 0; j < ld->nmodes; j++) {
		snprintf(sec, sizeof(sec), "mode %s", ld->modes[j].m.name);
		snprintf(whose, sizeof(whose), " for [mode %s]", ld->modes[j].m.name);
		mc.m = &ld->modes[j].m;
		mc.sec = sec;
		mc.whose = whose;
		ld->check_mode = &ld->modes[j];
		check_pulse(ld, &mc);
	}
	ld->check_mode = NULL;
}

/* What the file's own keys need: detections need cfar, and output mode
 * none somewhere for the detections to go and no [output] file. What the
 * radar chain needs (cfar and the maps need doppler, none needs cfar,
 * velocity = on needs prf_hz and carrier_hz) is the radar module's rule
 * (config_check_rules). */
static void check_radar_needs(struct load *ld)
{
	struct chirp_config *c = ld->c;
	const char *sec, *key;
	int line;

	if (c->out_mode == PC_OUT_NONE && c->cfar && !c->det_ring[0] && !c->det_file[0]) {
		key = later(ld, "output", "mode", "cfar", "enable", &sec, &line);
		report(ld, line, sec, key,
		       "output mode none leaves detections as the only result: needs a [detections] ring or file");
	}
	if (c->out_mode == PC_OUT_NONE && c->output_file[0]) {
		key = later(ld, "output", "file", "output", "mode", &sec, &line);
		report(ld, line, sec, key, "output mode none writes no results: [output] file has nothing to record");
	}
	if (!c->cfar && (c->det_ring[0] || c->det_file[0])) {
		const char *dk = c->det_ring[0] ? "ring" : "file";

		key = later(ld, "detections", dk, "cfar", "enable", &sec, &line);
		report(ld, line, sec, key, "[detections] %s is set but [cfar] enable is false: there are no detections", dk);
	}
}

/* The line of "section.key" (0 = default). */
static int fault_key_line(const struct load *ld, const char *key, char *sec, size_t len,
			  const char **name)
{
	const char *dot = strchr(key, '.');

	snprintf(sec, len, "%.*s", dot ? (int)(dot - key) : 0, key);
	*name = dot ? dot + 1 : key;
	return key_line(ld, sec, *name);
}

/* A rule another module owns, at the line of the key of its combination
 * that the file set last (its first key when none is set). */
static void report_fault(struct load *ld, const struct config_fault *f)
{
	char sec[32], best_sec[32];
	const char *name, *best_name;
	int line, best;

	best = fault_key_line(ld, f->keys[0], best_sec, sizeof(best_sec), &best_name);
	for (int i = 1; i < CONFIG_FAULT_KEYS && f->keys[i]; i++) {
		line = fault_key_line(ld, f->keys[i], sec, sizeof(sec), &name);
		if (line > best) {
			best = line;
			memcpy(best_sec, sec, sizeof(sec));
			best_name = name;
		}
	}
	report(ld, best, best_sec, best_name, "%s", f->why);
}

/* The rules other modules own (config_check_rules: the plan, the radar
 * chain); a residual one only on a file without other errors, so one
 * mistake is not reported twice. */
static void check_rules(struct load *ld)
{
	struct config_fault f[8];
	int before = ld->nerr;
	int n = config_check_rules(ld->c, f, 8);

	for (int i = 0; i < n && i < 8; i++)
		if (!f[i].residual || before == 0)
			report_fault(ld, &f[i]);
}

/* Cross-key checks; each error at the line of the key that breaks it. */
static void check_consistency(struct load *ld)
{
	struct chirp_config *c = ld->c;
	const char *sec, *key;
	int line;

	check_modes_pulse(ld);
	check_radar_needs(ld);
	check_rules(ld);
	if (!strcmp(c->input_ring, c->output_ring)) {
		key = later(ld, "input", "ring", "output", "ring", &sec, &line);
		report(ld, line, sec, key, "input and output ring have the same name %s",
		       c->input_ring);
	}
#ifndef CHIRP_HAVE_CUDA
	if (c->backend == PC_BACKEND_CUDA)
		report(ld, key_line(ld, "processing", "backend"), "processing", "backend",
		       "this chirpd was built without CUDA (use auto or cpu)");
#endif
	/* Keys that only matter for another choice (rt_priority with
	 * realtime = off, taylor_* with another window, gpu with backend =
	 * cpu) are accepted silently, so one template can serve many hosts. */
}

/* The first [waveform] line that sets a mode key (one a [mode] taking id 0
 * would clash with), or 0. */
static int wave_mode_key_line(const struct load *ld)
{
	int first = 0;

	for (size_t i = 0; i < cfg_nkeys; i++)
		if ((cfg_tab[i].in_mode) && ld->key_line[i] &&
		    (!first || ld->key_line[i] < first))
			first = ld->key_line[i];
	return first;
}

/* Each [mode NAME] needs an id, one no other mode has. Returns the index
 * in ld->modes of the first mode with id 0, or -1. */
static int check_mode_ids(struct load *ld)
{
	const size_t id_key = (size_t)(cfg_find_key("mode", "id") - cfg_tab);
	int claim0 = -1;
	char sec[48];

	for (unsigned j = 0; j < ld->nmodes; j++) {
		const struct mode_load *a = &ld->modes[j];

		snprintf(sec, sizeof(sec), "mode %s", a->m.name);
		if (!a->key_line[id_key]) {
			report(ld, a->line, sec, "id", "missing (every [mode NAME] needs an id 0..%d)",
			       CFG_MAX_MODES - 1);
			continue;
		}
		if (a->m.id >= CFG_MAX_MODES)
			continue;      /* out of range: reported by the handler */
		for (unsigned i = 0; i < j; i++) {
			const struct mode_load *b = &ld->modes[i];
			if (b->key_line[id_key] && b->m.id == a->m.id) {
				report(ld, a->key_line[id_key], sec, "id",
				       "%u is already the id of [mode %s] (line %d)",
				       a->m.id, b->m.name, b->key_line[id_key]);
				break;
			}
		}
		if (a->m.id == 0 && claim0 < 0)
			claim0 = (int)j;
	}
	return claim0;
}

/*
 * The modes of the file into c->modes: [waveform]'s first as id 0
 * "default", unless a [mode NAME] section takes id 0, then every [mode
 * NAME] in file order. A [mode] with id 0 next to mode keys in [waveform]
 * is an error: two waveforms for id 0.
 */
static void collect_modes(struct load *ld)
{
	struct chirp_config *c = ld->c;
	const size_t id_key = (size_t)(cfg_find_key("mode", "id") - cfg_tab);
	int claim0 = check_mode_ids(ld), wl = wave_mode_key_line(ld);
	unsigned n = 0;
	char sec[48];

	ld->wave_is_mode = claim0 < 0;
	if (claim0 >= 0 && wl) {
		const struct mode_load *a = &ld->modes[claim0];
		snprintf(sec, sizeof(sec), "mode %s", a->m.name);
		report(ld, a->key_line[id_key], sec, "id",
		       "0 is the id of [waveform]'s mode, which line %d configures (move the waveform keys into one of the two sections)",
		       wl);
	}
	if (ld->wave_is_mode) {
		c->modes[n] = ld->wave;
		c->modes[n].id = 0;
		snprintf(c->modes[n].name, sizeof(c->modes[n].name), "default");
		n++;
	}
	for (unsigned j = 0; j < ld->nmodes; j++) {
		const struct mode_load *a = &ld->modes[j];
		snprintf(sec, sizeof(sec), "mode %s", a->m.name);
		if (ld->wave_is_mode && !strcmp(a->m.name, "default")) {
			report(ld, a->line, sec, NULL,
			       "duplicate mode name: default is the name of [waveform]'s mode (id 0)");
			continue;
		}
		if (n >= CFG_MAX_MODES) {
			report(ld, a->line, sec, NULL,
			       "more than %d modes ([waveform]'s mode default is one of them)",
			       CFG_MAX_MODES);
			break;
		}
		c->modes[n++] = a->m;
	}
	c->nmodes = n;
	modes_finish(c);
}

static int load_text(struct chirp_config *c, const char *name, const char *base_dir,
		     const char *text, size_t len, FILE *errs)
{
	struct load *ld = calloc(1, sizeof(*ld));
	int rc;

	if (!ld)
		return -ENOMEM;
	config_defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", name);
	ld->c = c;
	ld->name = name;
	ld->errs = errs;
	ld->cur = -1;
	ld->wave = c->modes[0];   /* [waveform]'s mode starts at the defaults */
	if (base_dir)
		snprintf(ld->base_dir, sizeof(ld->base_dir), "%s", base_dir);
	ld->text = ld->pos = text;
	ld->end = text + len;
	/* A NUL byte would end inih's line early; refuse the line instead. */
	for (const char *z = memchr(text, '\0', len); z; ) {
		int line = 1;
		for (const char *q = text; q < z; q++)
			line += *q == '\n';
		report(ld, line, NULL, NULL, "NUL byte in file");
		ld->end = z;    /* parse up to it, not beyond */
		break;
	}
	rc = ini_parse_stream(reader, ld, handler, ld);
	if (rc == -2) {
		free(ld);
		return -ENOMEM;
	}
	/* rc > 0 is inih's first bad line; the reader already reported it. */
	collect_modes(ld);
	/* Cross-key checks run even after errors so --check lists everything;
	 * a key that failed to parse keeps its default. */
	check_consistency(ld);
	rc = ld->nerr;
	free(ld);
	return rc;
}

int config_load_string(struct chirp_config *c, const char *name, const char *text, FILE *errs)
{
	return load_text(c, name ? name : "(string)", NULL, text, strlen(text), errs);
}

int config_load(struct chirp_config *c, const char *file, FILE *errs)
{
	FILE *f = fopen(file, "rb");
	char *buf = NULL;
	size_t n;
	int rc;

	if (!f) {
		rc = -errno;
		if (errs)
			fprintf(errs, "%s: %s\n", file, strerror(-rc));
		return rc;
	}
	buf = malloc(CFG_FILE_MAX + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	errno = 0;
	n = fread(buf, 1, CFG_FILE_MAX + 1, f);
	if (ferror(f)) {
		rc = errno ? -errno : -EIO;
		if (errs)
			fprintf(errs, "%s: %s\n", file, strerror(-rc));
		goto out;
	}
	if (n > CFG_FILE_MAX) {
		rc = -EFBIG;
		if (errs)
			fprintf(errs, "%s: larger than %u bytes; not a chirpd configuration\n",
				file, CFG_FILE_MAX);
		goto out;
	}
	{
		/* Directory of the file, for relative paths inside it. */
		char dir[CFG_PATH_MAX];
		const char *slash = strrchr(file, '/');
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == file)
			snprintf(dir, sizeof(dir), "/");
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file);
		rc = load_text(c, file, dir, buf, n, errs);
	}
out:
	free(buf);
	fclose(f);
	return rc;
}
