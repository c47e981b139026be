/* SPDX-License-Identifier: Apache-2.0 */
/* log.c — see log.h. */
#include "log.h"
#include "names.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *log_prog = "chirp";
static atomic_int log_level = LOG_INFO;
static int log_prefix;          /* sd-daemon "<N>" prefixes */


/* True if JOURNAL_STREAM ("dev:ino") names the file behind fd 2. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

/*
 * CHIRP_LOG_PREFIX (1 or 0) forces the priority prefixes on or off; unset,
 * they follow JOURNAL_STREAM. An environment variable (listed in
 * chirpd(8), ENVIRONMENT) and not a configuration key because it applies
 * before the configuration is read, and to the tools, which have none; it
 * changes how lines look, never what a program does.
 */
void log_init(const char *progname)
{
	const char *p = getenv("CHIRP_LOG_PREFIX");

	if (progname) {
		const char *slash = strrchr(progname, '/');
		log_prog = slash ? slash + 1 : progname;
	}
	log_prefix = p ? atoi(p) != 0 : stderr_is_journal();
}

void log_set_level(int level)
{
	if (level < LOG_EMERG)
		level = LOG_EMERG;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;
	atomic_store(&log_level, level);
}

/* The names are names.c's (the configuration's too); "err" and "warn",
 * syslog's short forms, are accepted as well. */
int log_level_parse(const char *s)
{
	int level;

	if (!s)
		return -1;
	if (names_value(names_log_level, s, &level) == 0)
		return level;
	if (!strcmp(s, "err"))
		return LOG_ERR;
	if (!strcmp(s, "warn"))
		return LOG_WARNING;
	return -1;
}

const char *log_level_name(int level)
{
	return names_of(names_log_level, level);
}

void log_vmsg(int level, const char *fmt, va_list ap)
{
	char line[2048];
	int n;

	if (level > atomic_load(&log_level))
		return;
	if (log_prefix)
		n = snprintf(line, sizeof(line), "<%d>", level);
	else if (level <= LOG_WARNING)
		n = snprintf(line, sizeof(line), "%s: %s: ", log_prog,
			     log_level_name(level < LOG_ERR ? LOG_ERR : level));
	else
		n = snprintf(line, sizeof(line), "%s: ", log_prog);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(line) - 1) {
		int m = vsnprintf(line + n, sizeof(line) - 1 - n, fmt, ap);
		if (m > 0)
			n += m;
	}
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so threads do not interleave; errors ignored:
	 * there is nowhere left to report them. */
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
