/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h — Prometheus text exposition (format 0.0.4) of chirpd's stats,
 * for the `metrics` control command and the optional HTTP endpoint
 * ([metrics] listen = 127.0.0.1:9464, off by default).
 *
 * Names: chirpd_<counter>_total for counters (chirpd_cpis_in_total, ...),
 * gauges for state/rates/uptime, and a summary chirpd_cpi_latency_seconds
 * with quantiles 0.5, 0.99, 0.999 and 1 (max), _sum and _count, plus
 * chirpd_stage_seconds_total{stage=...} per pipeline stage, and
 * chirpd_mode_cpis_total{mode="ID",name="NAME"} per radar mode (the
 * configured ones, and ids a reload removed that counted CPIs, name "").
 *
 * The HTTP endpoint runs inside the daemon's event loop (libmicrohttpd in
 * external-epoll mode: one fd to poll, no thread of its own) and answers
 * GET /metrics (and /), and the live view's /live URLs when one is set
 * (live.h; chirpd_live_* counters then).
 */
#ifndef CHIRP_METRICS_H
#define CHIRP_METRICS_H

#include <stddef.h>

#include "live.h"
#include "stats.h"

/* A configured radar mode, for its per-mode counter's labels. */
struct metrics_mode {
	unsigned id;                  /* 0 .. STATS_MAX_MODES-1                 */
	const char *name;             /* [mode NAME]; "default" for [waveform]  */
};

/* What the exposition adds to the stats snapshot. */
struct metrics_info {
	const char *state;            /* "running", "paused", "failed", ...     */
	const char *backend;          /* "cpu", "cuda"                          */
	const char *version;
	double uptime_s;
	double samples_per_s;         /* over the last stats interval           */
	double cpis_per_s;
	double input_rate_cps;        /* offered over the last second, -1 unknown */
	double capacity_cps;          /* sustainable (measured or cached), 0 unknown */
	int input_over_capacity;      /* ratewatch.h                            */
	int numa_node;                /* applied, -1 none                       */
	int realtime;                 /* SCHED_FIFO applied                     */
	unsigned control_clients;
	const struct metrics_mode *modes;  /* the running configuration's modes */
	unsigned nmodes;
	const struct live_counters *live;  /* [live] enable (NULL: off)         */
	unsigned beams;               /* B, 0 without beams                    */
	double pointing_az_deg;       /* the newest CPI's pointing, degrees    */
	double pointing_el_deg;
};

/*
 * Write the exposition into buf. Returns the length (excluding the NUL), or
 * -ENOSPC if len is too small (64 KiB always suffices).
 */
int metrics_format(const struct stats_snapshot *sn, const struct metrics_info *mi,
		   char *buf, size_t len);

/* Fills buf (len bytes) with the current exposition; returns length or -errno. */
typedef int (*metrics_render_fn)(void *ctx, char *buf, size_t len);

struct metrics_http;

/*
 * Listen on "HOST:PORT" ("127.0.0.1:9464", "[::1]:9464"). render is called
 * from metrics_http_run() (the caller's thread) for each GET /metrics.
 * Returns NULL with a reason ("listen 127.0.0.1:9464: Address in use").
 */
struct metrics_http *metrics_http_create(const char *listen, metrics_render_fn render,
					 void *ctx, char *err, size_t errlen);

/* A pollable fd (EPOLLIN) for the event loop; call metrics_http_run when
 * readable and once a second (connection timeouts). */
int metrics_http_fd(const struct metrics_http *m);

/* Serve the live view's /live URLs through this listener (l outlives m;
 * metrics_http_destroy ends its streams first). */
void metrics_http_set_live(struct metrics_http *m, struct live *l);
int metrics_http_run(struct metrics_http *m);
void metrics_http_destroy(struct metrics_http *m);

/*
 * Parse "HOST:PORT" or "[V6]:PORT" into a sockaddr: HOST a numeric IPv4
 * address, V6 a numeric IPv6 address (no name lookup), PORT 1..65535. 0, or
 * -EINVAL with the reason in err. config.c validates [metrics] listen with
 * it, so what --check accepts is what the listener binds.
 */
struct sockaddr_storage;
int metrics_parse_listen(const char *listen, struct sockaddr_storage *ss,
			 char *err, size_t errlen);

/* 1 if ss (metrics_parse_listen's) is a loopback address: 127.0.0.0/8,
 * ::1 or ::ffff:127.0.0.0/104; 0 otherwise (the wildcard included). */
int metrics_listen_is_loopback(const struct sockaddr_storage *ss);

#endif /* CHIRP_METRICS_H */
