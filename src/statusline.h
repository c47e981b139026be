/* SPDX-License-Identifier: Apache-2.0 */
/*
 * statusline.h — the daemon's state in a word and in one line (statusline.c).
 * A leaf of chirpd's own files: chirpd.c's event loop, reload.c and
 * ctlcmd.c call it; it calls none of them.
 */
#ifndef CHIRP_STATUSLINE_H
#define CHIRP_STATUSLINE_H

#include <stddef.h>

struct daemon;

/* "running", "paused", ..., "failed", "stopping", "starting". */
const char *daemon_state_name(const struct daemon *d);
/* One line: state, rates, p99, counters, a failed reload (at most len - 1
 * characters, always terminated). */
void daemon_status_line(struct daemon *d, char *buf, size_t len);
/* The status line to systemd (STATUS=); nothing without a service manager. */
void daemon_notify_status(struct daemon *d);

#endif /* CHIRP_STATUSLINE_H */
