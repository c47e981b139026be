/* SPDX-License-Identifier: Apache-2.0 */
/*
 * statusline.c — the daemon's state in a word and in one line, for
 * systemd (STATUS=), `status` and the metrics. The event loop, the reload
 * and the control commands all report through it, so it calls none of
 * them. Main thread only.
 */
#include "statusline.h"

#include <stdio.h>

#include <systemd/sd-daemon.h>

#include "daemon.h"

const char *daemon_state_name(const struct daemon *d)
{
	if (d->stopping)
		return "stopping";
	if (d->broken)
		return "failed";
	return d->pl ? pipeline_state_name(pipeline_state(d->pl)) : "starting";
}

void daemon_status_line(struct daemon *d, char *buf, size_t len)
{
	uint64_t p99 = 0;
	const struct stats_snapshot *s = d->snap_now;
	char unknown[40] = "", det[96] = "";

	if (d->pl && pipeline_state(d->pl) == PIPE_FAILED) {
		snprintf(buf, len, "failed: %s", pipeline_error(d->pl));
		return;
	}
	if (d->broken) {
		snprintf(buf, len, "failed: %s", d->broken_why);
		return;
	}
	if (d->snap_delta->lat_count)
		p99 = stats_percentile(d->snap_delta, 0.99);
	/* CPIs of an unknown radar mode: only when there were any (a
	 * misconfigured digitizer or a missing [mode] section). */
	if (s->counter[ST_UNKNOWN_MODE_CPIS])
		snprintf(unknown, sizeof(unknown), ", unknown mode %llu",
			 (unsigned long long)s->counter[ST_UNKNOWN_MODE_CPIS]);
	/* Detections: only with [cfar] on. */
	if (d->g->cfg.cfar)
		snprintf(det, sizeof(det), ", detections %llu in %llu lists (overflow %llu, drops %llu)",
			 (unsigned long long)s->counter[ST_DETECTIONS],
			 (unsigned long long)s->counter[ST_DET_LISTS],
			 (unsigned long long)s->counter[ST_DET_OVERFLOWS],
			 (unsigned long long)s->counter[ST_DET_DROPS]);
	snprintf(buf, len, "%s: %.1f CPI/s, %.2f MS/s, p99 %.2f ms, in %llu out %llu, "
		 "drops %llu, overruns %llu, gaps %llu%s%s%s%s",
		 daemon_state_name(d), d->cpis_per_s, d->samples_per_s * 1e-6, (double)p99 * 1e-6,
		 (unsigned long long)s->counter[ST_CPIS_IN], (unsigned long long)s->counter[ST_CPIS_OUT],
		 (unsigned long long)s->counter[ST_OUTPUT_DROPS],
		 (unsigned long long)s->counter[ST_INPUT_OVERRUNS],
		 (unsigned long long)s->counter[ST_SEQUENCE_GAPS], unknown, det,
		 d->last_reload_error[0] ? "; last reload failed: " : "", d->last_reload_error);
}

void daemon_notify_status(struct daemon *d)
{
	char line[512];

	daemon_status_line(d, line, sizeof(line));
	sd_notifyf(0, "STATUS=%s", line);
}
