/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c — see metrics.h. */
#include "metrics.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "live.h"
#include "log.h"
#include "outbuf.h"

#define METRICS_BUF (64 * 1024)

static const char *const counter_help[ST_COUNTERS] = {
	[ST_CPIS_IN] = "CPIs taken from the input ring.",
	[ST_CPIS_OUT] = "Results committed to the output ring.",
	[ST_INPUT_OVERRUNS] = "Input blocks the producer dropped because the input ring was full.",
	[ST_SEQUENCE_GAPS] = "Input blocks missing by sequence number.",
	[ST_OUTPUT_DROPS] = "Results dropped because the output ring was full (slow or absent consumer).",
	[ST_NONFINITE_CPIS] = "CPIs whose input held NaN or Inf.",
	[ST_NONFINITE_ROWS] = "Pulse rows whose input held NaN or Inf.",
	[ST_BAD_BLOCKS] = "Input blocks rejected (invalid descriptor or size).",
	[ST_BACKEND_ERRORS] = "Pulse-compression backend failures.",
	[ST_SAMPLES_IN] = "Complex input samples processed.",
	[ST_RELOADS] = "Configuration reloads applied.",
	[ST_RELOAD_FAILURES] = "Configuration reloads rejected (old configuration kept).",
	[ST_OUTPUT_FILE_ERRORS] = "Failed writes to the [output] file.",
	[ST_REDELIVERED_SKIPPED] = "Redelivered input blocks whose result a previous chirpd had already committed (not processed twice).",
	[ST_OVER_BUDGET] = "Delivered CPIs whose latency (output commit - input commit) exceeded [trace] latency_budget_ms.",
	[ST_UNKNOWN_MODE_CPIS] = "CPIs whose radar mode the running configuration does not have (committed zeroed, flagged UNKNOWN_MODE).",
	[ST_DET_LISTS] = "Detection lists made, one per CPI the CFAR ran on (unknown-mode CPIs get an empty list flagged SKIPPED).",
	[ST_DETECTIONS] = "Detections (records) in those lists.",
	[ST_DET_OVERFLOWS] = "Detection lists that found more than [cfar] max_detections and were truncated (flagged OVERFLOW).",
	[ST_DET_DROPS] = "Detection lists not delivered because the detection ring was full (slow or absent consumer).",
	[ST_CFAR_CELLS] = "Range-Doppler map cells the CFAR tested.",
	[ST_CFAR_CROSSINGS] = "Map cells over their CFAR threshold, before the local-maximum rule; divided by chirpd_cfar_cells_total it is the observed false-alarm rate on noise.",
	[ST_DET_FILE_ERRORS] = "Failed writes to the [detections] file.",
	[ST_OUTPUT_FILE_BYTES] = "Bytes written to the [output] file (by its writer thread, off the data path).",
	[ST_OUTPUT_FILE_DROPS] = "Results not written to the [output] file because its queue was full (a slow, full or blocked file); the data path never waits for the file.",
	[ST_OUTPUT_FILE_DROPPED_BYTES] = "Bytes not written to the [output] file: dropped results, and the unwritten rest of results whose write failed.",
	[ST_DET_FILE_BYTES] = "Bytes of JSON lines written to the [detections] file (by its writer thread, off the data path).",
	[ST_DET_FILE_DROPS] = "Detection lists not written to the [detections] file because its queue was full (a slow, full or blocked file).",
	[ST_DET_FILE_DROPPED_BYTES] = "Bytes not written to the [detections] file: dropped lines, and the unwritten rest of lines whose write failed.",
	[ST_PUB_DET_MESSAGES] = "Detection lists published on ZeroMQ (topic det, [publish]).",
	[ST_PUB_DET_DROPS] = "Detection lists not published: the publisher's queue was full, or a subscriber was at its high-water mark.",
	[ST_PUB_MAP_MESSAGES] = "Range-Doppler maps published on ZeroMQ (topic map).",
	[ST_PUB_MAP_DROPS] = "Maps not published: the queue was full, or a subscriber was at its high-water mark.",
	[ST_PUB_STATUS_MESSAGES] = "Status messages published on ZeroMQ (topic status).",
	[ST_PUB_STATUS_DROPS] = "Status messages not published: the queue was full, or a subscriber was at its high-water mark.",
	[ST_PUB_BYTES] = "Bytes of the messages published on ZeroMQ (payloads and their queue record headers).",
	[ST_PUB_DROPPED_BYTES] = "Bytes of the messages not published on ZeroMQ.",
	[ST_PUB_ERRORS] = "ZeroMQ sends that failed for a reason other than a full queue or subscriber.",
	[ST_INPUT_OVER_CAPACITY_EVENTS] = "Times the input's offered rate (committed + dropped) stayed above the sustainable capacity for a second.",
	[ST_BAD_POINTING_CPIS] = "CPIs whose pointing is not finite, beyond +-90 degrees or puts a beam outside the visible region (not processed, results NaN, flagged BAD_POINTING).",
	[ST_DATA_STALLS] = "Gaps of 200 us or more in the data thread's polling loop: it was running, blocked, preempted or its vCPU stolen (chirpctl trace says which, per CPI).",
};

/* Whether mode id is one of mi's; its name in *name. */
static int mode_configured(const struct metrics_info *mi, unsigned id, const char **name)
{
	for (unsigned i = 0; i < mi->nmodes; i++)
		if (mi->modes[i].id == id) {
			*name = mi->modes[i].name ? mi->modes[i].name : "";
			return 1;
		}
	return 0;
}

/* chirpd_mode_cpis_total per mode id: the configured ones (0 included)
 * and any other that counted CPIs. Mode names are [mode NAME] section
 * names, which config.c limits to label-safe characters; a quote or a
 * backslash is escaped anyway. */
static void put_modes(struct outbuf *o, const struct stats_snapshot *sn,
		      const struct metrics_info *mi)
{
	outbuf_put(o, "# HELP chirpd_mode_cpis_total CPIs taken per radar mode (unknown modes: "
	       "chirpd_unknown_mode_cpis_total).\n# TYPE chirpd_mode_cpis_total counter\n");
	for (unsigned id = 0; id < STATS_MAX_MODES; id++) {
		const char *name = "";
		char esc[2 * 64 + 1];
		size_t k = 0;

		if (!mode_configured(mi, id, &name) && !sn->mode_cpis[id])
			continue;
		for (const char *c = name; *c && k + 2 < sizeof(esc); c++) {
			if (*c == '"' || *c == '\\' || *c == '\n')
				esc[k++] = '\\';
			esc[k++] = *c == '\n' ? 'n' : *c;
		}
		esc[k] = '\0';
		outbuf_put(o, "chirpd_mode_cpis_total{mode=\"%u\",name=\"%s\"} %llu\n", id, esc,
		    (unsigned long long)sn->mode_cpis[id]);
	}
}

/* The live view's counters ([live] enable). */
static void put_live(struct outbuf *o, const struct live_counters *c)
{
	outbuf_put(o, "# HELP chirpd_live_frames_total Frames the data thread sampled for the live view "
	       "(only while a page watches).\n# TYPE chirpd_live_frames_total counter\n"
	       "chirpd_live_frames_total %llu\n", (unsigned long long)c->frames);
	outbuf_put(o, "# HELP chirpd_live_frames_sent_total Frames sent to live view clients.\n"
	       "# TYPE chirpd_live_frames_sent_total counter\n"
	       "chirpd_live_frames_sent_total %llu\n", (unsigned long long)c->frames_sent);
	outbuf_put(o, "# HELP chirpd_live_frames_skipped_total Newer frames a slow live client skipped "
	       "(it gets the newest when it has sent the last; nothing queues).\n"
	       "# TYPE chirpd_live_frames_skipped_total counter\n"
	       "chirpd_live_frames_skipped_total %llu\n", (unsigned long long)c->frames_skipped);
	outbuf_put(o, "# HELP chirpd_live_clients_refused_total Live event streams refused: "
	       "[live] max_clients were connected.\n"
	       "# TYPE chirpd_live_clients_refused_total counter\n"
	       "chirpd_live_clients_refused_total %llu\n", (unsigned long long)c->clients_refused);
	outbuf_put(o, "# HELP chirpd_live_clients_dropped_total Live clients disconnected for reading "
	       "nothing for the listener's timeout (5 s).\n"
	       "# TYPE chirpd_live_clients_dropped_total counter\n"
	       "chirpd_live_clients_dropped_total %llu\n", (unsigned long long)c->clients_dropped);
	outbuf_put(o, "# HELP chirpd_live_clients Live event streams connected.\n"
	       "# TYPE chirpd_live_clients gauge\nchirpd_live_clients %u\n", c->clients);
}

int metrics_format(const struct stats_snapshot *sn, const struct metrics_info *mi,
		   char *buf, size_t len)
{
	struct outbuf o = { buf, len, 0, 0 };
	static const double qs[] = { 0.5, 0.99, 0.999, 1.0 };

	if (len == 0)
		return -ENOSPC;
	buf[0] = 0;
	outbuf_put(&o, "# HELP chirpd_info Build and backend of this chirpd.\n"
		"# TYPE chirpd_info gauge\n"
		"chirpd_info{version=\"%s\",backend=\"%s\"} 1\n",
	    mi->version ? mi->version : "", mi->backend ? mi->backend : "");
	outbuf_put(&o, "# HELP chirpd_up 1 while the data path is running or paused, 0 when failed or stopped.\n"
		"# TYPE chirpd_up gauge\nchirpd_up %d\n",
	    mi->state && (!strcmp(mi->state, "running") || !strcmp(mi->state, "paused")));
	outbuf_put(&o, "# HELP chirpd_state Data path state (1 for the current one).\n"
		"# TYPE chirpd_state gauge\n");
	{
		static const char *const states[] = { "starting", "running", "paused", "stopped", "failed" };
		for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
			outbuf_put(&o, "chirpd_state{state=\"%s\"} %d\n", states[i],
			    mi->state && !strcmp(mi->state, states[i]));
	}
	outbuf_put(&o, "# HELP chirpd_uptime_seconds Seconds since chirpd started.\n"
		"# TYPE chirpd_uptime_seconds gauge\nchirpd_uptime_seconds %.3f\n", mi->uptime_s);
	for (int c = 0; c < ST_COUNTERS; c++) {
		const char *n = stats_counter_name(c);
		outbuf_put(&o, "# HELP chirpd_%s_total %s\n# TYPE chirpd_%s_total counter\nchirpd_%s_total %llu\n",
		    n, counter_help[c], n, n, (unsigned long long)sn->counter[c]);
	}
	put_modes(&o, sn, mi);
	outbuf_put(&o, "# HELP chirpd_beams Beams formed per CPI ([beams] count; 0 without beams).\n"
		"# TYPE chirpd_beams gauge\nchirpd_beams %u\n", mi->beams);
	if (mi->beams)
		outbuf_put(&o, "# HELP chirpd_pointing_degrees The newest CPI's pointing, degrees from "
			"boresight (the input block's; steers every beam).\n"
			"# TYPE chirpd_pointing_degrees gauge\n"
			"chirpd_pointing_degrees{axis=\"azimuth\"} %.6g\n"
			"chirpd_pointing_degrees{axis=\"elevation\"} %.6g\n",
		    mi->pointing_az_deg, mi->pointing_el_deg);
	outbuf_put(&o, "# HELP chirpd_cfar_false_alarm_rate Observed CFAR crossings per cell tested since "
		"start (compare with [cfar] pfa on noise-only input; 0 before any cell).\n"
		"# TYPE chirpd_cfar_false_alarm_rate gauge\nchirpd_cfar_false_alarm_rate %.9g\n",
	    sn->counter[ST_CFAR_CELLS] ?
	    (double)sn->counter[ST_CFAR_CROSSINGS] / (double)sn->counter[ST_CFAR_CELLS] : 0.0);
	outbuf_put(&o, "# HELP chirpd_samples_per_second Input samples per second over the last interval.\n"
		"# TYPE chirpd_samples_per_second gauge\nchirpd_samples_per_second %.1f\n",
	    mi->samples_per_s);
	outbuf_put(&o, "# HELP chirpd_cpis_per_second CPIs per second over the last interval.\n"
		"# TYPE chirpd_cpis_per_second gauge\nchirpd_cpis_per_second %.3f\n", mi->cpis_per_s);
	outbuf_put(&o, "# HELP chirpd_input_offered_cpis_per_second CPIs per second the producer offered "
		"(committed + dropped) over the last second; -1 before a second has passed.\n"
		"# TYPE chirpd_input_offered_cpis_per_second gauge\n"
		"chirpd_input_offered_cpis_per_second %.3f\n", mi->input_rate_cps);
	outbuf_put(&o, "# HELP chirpd_capacity_cpis_per_second The sustainable rate the input is compared "
		"with (measured or cached; 0 unknown).\n"
		"# TYPE chirpd_capacity_cpis_per_second gauge\n"
		"chirpd_capacity_cpis_per_second %.3f\n", mi->capacity_cps);
	outbuf_put(&o, "# HELP chirpd_input_over_capacity 1 while the input's offered rate has stayed "
		"above the capacity for a second.\n"
		"# TYPE chirpd_input_over_capacity gauge\nchirpd_input_over_capacity %d\n",
	    mi->input_over_capacity);
	outbuf_put(&o, "# HELP chirpd_cpi_latency_seconds From a CPI's commit in the input ring to its "
		"result's commit in the output ring (since start; quantile 1 = max).\n"
		"# TYPE chirpd_cpi_latency_seconds summary\n");
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		outbuf_put(&o, "chirpd_cpi_latency_seconds{quantile=\"%g\"} %.9f\n", qs[i],
		    (double)stats_percentile(sn, qs[i]) * 1e-9);
	outbuf_put(&o, "chirpd_cpi_latency_seconds_sum %.9f\nchirpd_cpi_latency_seconds_count %llu\n",
	    (double)sn->lat_sum_ns * 1e-9, (unsigned long long)sn->lat_count);
	outbuf_put(&o, "# HELP chirpd_stage_seconds_total Time spent per pipeline stage.\n"
		"# TYPE chirpd_stage_seconds_total counter\n");
	for (int s = 0; s < STG_STAGES; s++)
		outbuf_put(&o, "chirpd_stage_seconds_total{stage=\"%s\"} %.9f\n", stats_stage_name(s),
		    (double)sn->stage_sum_ns[s] * 1e-9);
	outbuf_put(&o, "# HELP chirpd_stage_max_seconds Longest time of one CPI per stage.\n"
		"# TYPE chirpd_stage_max_seconds gauge\n");
	for (int s = 0; s < STG_STAGES; s++)
		outbuf_put(&o, "chirpd_stage_max_seconds{stage=\"%s\"} %.9f\n", stats_stage_name(s),
		    (double)sn->stage_max_ns[s] * 1e-9);
	outbuf_put(&o, "# HELP chirpd_numa_node NUMA node the data path is bound to (-1 none).\n"
		"# TYPE chirpd_numa_node gauge\nchirpd_numa_node %d\n", mi->numa_node);
	outbuf_put(&o, "# HELP chirpd_realtime 1 if the data thread runs SCHED_FIFO.\n"
		"# TYPE chirpd_realtime gauge\nchirpd_realtime %d\n", mi->realtime);
	outbuf_put(&o, "# HELP chirpd_control_clients Control socket clients connected.\n"
		"# TYPE chirpd_control_clients gauge\nchirpd_control_clients %u\n", mi->control_clients);
	if (mi->live)
		put_live(&o, mi->live);
	if (o.overflow)
		return -ENOSPC;
	return (int)o.off;
}

/* ---- HTTP --------------------------------------------------------------- */

struct metrics_http {
	struct MHD_Daemon *d;
	struct live *live;           /* /live URLs (NULL: not served)         */
	metrics_render_fn render;
	void *ctx;
	char *buf;
};

int metrics_parse_listen(const char *listen, struct sockaddr_storage *ss,
			 char *err, size_t errlen)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	const char *colon, *h0;
	char host[INET6_ADDRSTRLEN + 1];
	size_t hl;
	char *end;
	long port;
	int v6, ok;

	memset(ss, 0, sizeof(*ss));
	if (!listen)
		listen = "";
	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');

		if (!rb || rb == listen + 1 || rb[1] != ':')
			goto bad;
		h0 = listen + 1;
		hl = (size_t)(rb - h0);
		colon = rb + 1;
		v6 = 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon || colon == listen || memchr(listen, ':', (size_t)(colon - listen)))
			goto bad;
		h0 = listen;
		hl = (size_t)(colon - listen);
		v6 = 0;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (!isdigit((unsigned char)colon[1]) || *end || errno || port < 1 || port > 65535)
		goto bad;
	if (hl >= sizeof(host))
		goto badhost;
	memcpy(host, h0, hl);
	host[hl] = '\0';
	if (v6)
		ok = inet_pton(AF_INET6, host, &a6->sin6_addr) == 1;
	else
		ok = inet_pton(AF_INET, host, &a4->sin_addr) == 1;
	if (!ok)
		goto badhost;
	if (v6) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
	} else {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
	}
	return 0;
badhost:
	snprintf(err, errlen, "'%s': host '%.*s' is not a numeric %s address (names are not looked up; e.g. 127.0.0.1:9464, [::1]:9464)",
		 listen, (int)(hl < 64 ? hl : 64), h0, v6 ? "IPv6" : "IPv4");
	return -EINVAL;
bad:
	snprintf(err, errlen, "'%s' is not host:port (e.g. 127.0.0.1:9464, [::1]:9464) with port 1..65535",
		 listen);
	return -EINVAL;
}

int metrics_listen_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
		       (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127);
	}
	return 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct metrics_http *m = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned status = MHD_HTTP_OK;
	const char *body;
	size_t blen;
	int n;

	(void)version; (void)upload_data;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		body = "only GET\n";
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (*upload_data_size) {
		body = "no body expected\n";
		status = MHD_HTTP_BAD_REQUEST;
	} else if (m->live && !strncmp(url, "/live", 5) && (!url[5] || url[5] == '/')) {
		return (enum MHD_Result)live_answer(m->live, conn, url, con_cls);
	} else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		body = "not found; try /metrics\n";
		status = MHD_HTTP_NOT_FOUND;
	} else {
		n = m->render(m->ctx, m->buf, METRICS_BUF);
		if (n < 0) {
			body = "metrics unavailable\n";
			status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		} else {
			body = m->buf;
		}
	}
	blen = strlen(body);
	resp = MHD_create_response_from_buffer(blen, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	if (status == MHD_HTTP_OK)
		MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* libmicrohttpd's own messages ("Failed to send ... no longer available"
 * each time a browser closes a page): debug level, since what matters is
 * reported by chirpd itself (cannot listen) or counted (live clients). */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("http: %s", msg);
}

/* A request ended: the live view frees what it held for it. */
static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct metrics_http *m = cls;

	(void)conn;
	if (m->live && *con_cls)
		live_completed(m->live, *con_cls, toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED);
	*con_cls = NULL;
}

struct metrics_http *metrics_http_create(const char *listen, metrics_render_fn render,
					 void *ctx, char *err, size_t errlen)
{
	struct metrics_http *m;
	struct sockaddr_storage ss;
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;

	if (metrics_parse_listen(listen, &ss, err, errlen) < 0)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->buf = malloc(METRICS_BUF))) {
		snprintf(err, errlen, "out of memory");
		free(m);
		return NULL;
	}
	m->render = render;
	m->ctx = ctx;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	m->d = MHD_start_daemon(flags, 0, NULL, NULL, answer, m,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)5,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
				MHD_OPTION_NOTIFY_COMPLETED, completed, m,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_END);
	if (!m->d) {
		snprintf(err, errlen, "[metrics] listen %s: cannot listen (address in use or not local?)", listen);
		free(m->buf);
		free(m);
		return NULL;
	}
	return m;
}

int metrics_http_fd(const struct metrics_http *m)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);

	return i ? i->epoll_fd : -1;
}

int metrics_http_run(struct metrics_http *m)
{
	return MHD_run(m->d) == MHD_YES ? 0 : -EIO;
}

void metrics_http_set_live(struct metrics_http *m, struct live *l)
{
	m->live = l;
}

void metrics_http_destroy(struct metrics_http *m)
{
	if (!m)
		return;
	if (m->live) {
		live_shutdown(m->live);
		(void)MHD_run(m->d);   /* ends the resumed streams */
	}
	MHD_stop_daemon(m->d);
	free(m->buf);
	free(m);
}
