/* SPDX-License-Identifier: Apache-2.0 */
/* log.c — see log.h. */
#include "log.h"

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

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
	[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

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

int log_level_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = LOG_EMERG; i <= LOG_DEBUG; i++)
		if (!strcmp(s, level_names[i]))
			return i;
	if (!strcmp(s, "err"))
		return LOG_ERR;
	if (!strcmp(s, "warn"))
		return LOG_WARNING;
	return -1;
}

const char *log_level_name(int level)
{
	if (level < LOG_EMERG || level > LOG_DEBUG)
		return "?";
	return level_names[level];
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
		n = snprintf(line, sizeof(line), "%s: %s: ", log_prog, level_names[level]);
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
