/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — one logger for every chirp program.
 *
 * Messages go to stderr. Under journald (JOURNAL_STREAM names our stderr)
 * or when CHIRP_LOG_PREFIX=1, each line starts with the sd-daemon priority
 * prefix "<N>" so journald keeps the level; on a terminal it reads
 * "chirpd: error: ...". The level can change at run time (log-level).
 * Thread-safe: one write(2) per line.
 */
#ifndef CHIRP_LOG_H
#define CHIRP_LOG_H

#include <stdarg.h>
#include <syslog.h>   /* LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG */

void log_init(const char *progname);
void log_set_level(int level);
/* "error", "warning", "notice", "info", "debug" <-> LOG_*; -1 if unknown. */
int log_level_parse(const char *s);
const char *log_level_name(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(int level, const char *fmt, va_list ap);

#define log_err(...)     log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)    log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)  log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)    log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)   log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* CHIRP_LOG_H */
