/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirpctl — talk to chirpd's control socket.
 *
 *   chirpctl [-s SOCKET] [--json] [--timeout SEC] COMMAND [ARGS...]
 *   chirpctl [-s SOCKET] [--interval SEC] [--count N] watch
 *
 * Options may come before or after the command (chirpctl stats --json is
 * chirpctl --json stats), as GNU getopt permutes them; after "--" every
 * word is an argument of the command even if it starts with '-'.
 *
 * Sends one request line "COMMAND ARGS\n", reads one JSON reply line, and
 * prints it for people (aligned "key: value" lines, nested objects
 * indented; `metrics` prints its text raw) or, with --json, prints the
 * reply as received for scripts. Exit status: 0 ok, 1 the daemon answered
 * {"ok":false}, 2 usage or connection problems.
 *
 * The socket is -s, else $CHIRPD_SOCKET, else /run/chirpd/control.sock.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "control.h"
#include "timeutil.h"
#include "version.h"

#define DEFAULT_SOCKET "/run/chirpd/control.sock"
#define REPLY_MAX      (256u << 20)

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;      /* nothing else: the loop notices */
}

static void usage(FILE *out)
{
	fputs("usage: chirpctl [OPTIONS] COMMAND [ARGS...] [OPTIONS]\n"
	      "       chirpctl [-s SOCKET] [--json] [--timeout SEC] COMMAND [ARGS...]\n"
	      "       chirpctl COMMAND [ARGS...] [-s SOCKET] [--json] [--timeout SEC]\n"
	      "       chirpctl [-s SOCKET] [--interval SEC] [--count N] watch\n"
	      "\n"
	      "Options go before or after the command (chirpctl stats --json = chirpctl --json\n"
	      "stats); after '--' every word is an argument of the command.\n"
	      "\n"
	      "Commands (the daemon lists its own with 'chirpctl help'):\n"
	      "  ping, version, status, stats, config, metrics, help     anyone\n"
	      "  trace [N]                                               anyone\n"
	      "             (stage timelines of the last N CPIs, default 100)\n"
	      "  reload, pause, resume, log-level LEVEL                  owner/root/group\n"
	      "  capacity-shared CPS|clear                               owner/root/group\n"
	      "             (the host calibration's figure, chirpd-calibrate-host)\n"
	      "  watch      status and stats every second, like top (Ctrl-C ends)\n"
	      "\n"
	      "Options:\n"
	      "  -s, --socket PATH   control socket (default $CHIRPD_SOCKET, else " DEFAULT_SOCKET ")\n"
	      "  -j, --json          print the JSON reply as received (for scripts)\n"
	      "  -t, --timeout SEC   wait at most SEC for the reply (default 5)\n"
	      "  -i, --interval SEC  watch: refresh period (default 1)\n"
	      "  -n, --count N       watch: stop after N refreshes\n"
	      "  -h, --help          this text;  -V, --version\n"
	      "\n"
	      "Exit status: 0 ok, 1 chirpd answered with an error, 2 usage or connection error.\n",
	      out);
}

/* ---- talking to the daemon ---- */

struct conn {
	int fd;
	const char *path;
	double timeout_s;
	char *buf;              /* bytes received beyond the last reply */
	size_t len, cap;
};

static int conn_open(struct conn *c, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(c->path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", c->path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		const char *hint = "";
		if (e == ENOENT || e == ECONNREFUSED)
			hint = " — is chirpd running?";
		else if (e == EACCES || e == EPERM)
			hint = " — are you in chirpd's control group?";
		snprintf(err, errlen, "cannot connect to %s: %s%s", c->path, strerror(e), hint);
		close(c->fd);
		c->fd = -1;
		return -e;
	}
	c->len = 0;
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
}

/* Send req and its '\n' whole, retrying after a signal unless told to stop. */
static int conn_send(struct conn *c, const char *req, char *err, size_t errlen)
{
	size_t n = strlen(req);
	char *msg = malloc(n + 2);

	if (!msg) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(msg, req, n);
	msg[n] = '\n';
	for (size_t off = 0; off < n + 1; ) {
		ssize_t w = send(c->fd, msg + off, n + 1 - off, MSG_NOSIGNAL);
		if (w < 0) {
			int e = errno;
			if (e == EINTR && !stop_flag)
				continue;
			free(msg);
			snprintf(err, errlen, "sending to %s: %s", c->path, strerror(e));
			return -e;
		}
		off += (size_t)w;
	}
	free(msg);
	return 0;
}

/* Move the first whole line in c->buf to *line (malloc'd, without '\n').
 * 1: taken; 0: no whole line yet; -ENOMEM with err. */
static int conn_take_line(struct conn *c, char **line, char *err, size_t errlen)
{
	char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
	size_t ll;

	if (!nl)
		return 0;
	ll = (size_t)(nl - c->buf);
	*line = malloc(ll + 1);
	if (!*line) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(*line, c->buf, ll);
	(*line)[ll] = '\0';
	c->len -= ll + 1;
	memmove(c->buf, nl + 1, c->len);
	return 1;
}

/* At least 4 KiB free in c->buf, doubling it (up to REPLY_MAX, checked by
 * the caller). */
static int conn_grow(struct conn *c, char *err, size_t errlen)
{
	if (c->cap - c->len < 4096) {
		size_t cap = c->cap ? c->cap * 2 : 65536;
		char *p = realloc(c->buf, cap);
		if (!p) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		c->buf = p;
		c->cap = cap;
	}
	return 0;
}

/* Wait for reply bytes until deadline and append what one recv gives.
 * 0: go on (bytes read, or a wait or signal to re-check); < 0 with err. */
static int conn_fill(struct conn *c, double deadline, char *err, size_t errlen)
{
	double left = deadline - mono_s();
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t r;
	int pr;

	if (left <= 0) {
		snprintf(err, errlen, "no reply from %s within %g s", c->path, c->timeout_s);
		return -ETIMEDOUT;
	}
	pr = poll(&p, 1, (int)ceil(left * 1000));
	if (pr < 0 && errno == EINTR) {
		if (stop_flag) {
			snprintf(err, errlen, "interrupted");
			return -EINTR;
		}
		return 0;
	}
	if (pr <= 0)
		return 0;       /* the deadline check above ends it */
	r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	if (r < 0) {
		if (errno == EINTR)
			return 0;
		snprintf(err, errlen, "reading from %s: %s", c->path, strerror(errno));
		return -errno;
	}
	if (r == 0) {
		snprintf(err, errlen, "%s closed the connection without a reply", c->path);
		return -ECONNRESET;
	}
	c->len += (size_t)r;
	return 0;
}

/*
 * Send req (one line, no '\n') and read one reply line into *line
 * (malloc'd, NUL-terminated, without '\n'). Returns 0 or -errno with err.
 */
static int conn_ask(struct conn *c, const char *req, char **line, char *err, size_t errlen)
{
	double deadline = mono_s() + c->timeout_s;
	int rc;

	rc = conn_send(c, req, err, errlen);
	if (rc < 0)
		return rc;
	for (;;) {
		rc = conn_take_line(c, line, err, errlen);
		if (rc != 0)
			return rc < 0 ? rc : 0;
		if (c->len >= REPLY_MAX) {
			snprintf(err, errlen, "reply from %s is longer than %u bytes", c->path, REPLY_MAX);
			return -EMSGSIZE;
		}
		rc = conn_grow(c, err, errlen);
		if (rc < 0)
			return rc;
		rc = conn_fill(c, deadline, err, errlen);
		if (rc < 0)
			return rc;
	}
}

/* ---- human-readable rendering ---- */

static void print_scalar(FILE *out, json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		fputs(json_string_value(v), out);
		break;
	case JSON_INTEGER:
		fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL: {
		fprintf(out, "%.6g", json_real_value(v));
		break;
	}
	case JSON_TRUE:
		fputs("yes", out);
		break;
	case JSON_FALSE:
		fputs("no", out);
		break;
	case JSON_NULL:
		fputs("-", out);
		break;
	default:
		break;
	}
}

static int all_scalars(json_t *arr)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e)
		if (json_is_object(e) || json_is_array(e))
			return 0;
	return 1;
}

/* prev (may be NULL) holds the previous values for rates; dt > 0 then. */
static void render(FILE *out, json_t *obj, int indent, json_t *prev, double dt, int top)
{
	const char *key;
	json_t *v;
	int width = 0;

	json_object_foreach(obj, key, v) {
		if (top && (!strcmp(key, "ok") || !strcmp(key, "proto")))
			continue;
		if ((int)strlen(key) > width)
			width = (int)strlen(key);
	}
	json_object_foreach(obj, key, v) {
		if (top && (!strcmp(key, "ok") || !strcmp(key, "proto")))
			continue;
		json_t *pv = prev ? json_object_get(prev, key) : NULL;
		if (json_is_object(v)) {
			fprintf(out, "%*s%s:\n", indent, "", key);
			render(out, v, indent + 2, json_is_object(pv) ? pv : NULL, dt, 0);
		} else if (json_is_array(v) && all_scalars(v)) {
			size_t i;
			json_t *e;
			fprintf(out, "%*s%s:%*s ", indent, "", key, width - (int)strlen(key), "");
			json_array_foreach(v, i, e) {
				if (i)
					fputs(", ", out);
				print_scalar(out, e);
			}
			fputc('\n', out);
		} else if (json_is_array(v)) {
			size_t i;
			json_t *e;
			fprintf(out, "%*s%s:\n", indent, "", key);
			json_array_foreach(v, i, e) {
				if (json_is_object(e)) {
					fprintf(out, "%*s-\n", indent + 2, "");
					render(out, e, indent + 4, NULL, 0, 0);
				} else {
					fprintf(out, "%*s- ", indent + 2, "");
					print_scalar(out, e);
					fputc('\n', out);
				}
			}
		} else {
			fprintf(out, "%*s%s:%*s ", indent, "", key, width - (int)strlen(key), "");
			print_scalar(out, v);
			/* Top-level counters that moved since the last refresh get
			 * a rate (nested objects hold latencies and gauges). */
			size_t kl = strlen(key);
			if (top && pv && dt > 0 && json_is_integer(v) && json_is_integer(pv) &&
			    !(kl > 6 && !strcmp(key + kl - 6, "_per_s")) &&
			    !(kl > 3 && !strcmp(key + kl - 3, "_ns"))) {
				json_int_t d = json_integer_value(v) - json_integer_value(pv);
				if (d > 0)
					fprintf(out, "  (%.1f/s)", (double)d / dt);
			}
			fputc('\n', out);
		}
	}
}

static void render_help(FILE *out, json_t *reply)
{
	json_t *arr = json_object_get(reply, "commands"), *e;
	size_t i;
	int w = 0;

	json_array_foreach(arr, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		const char *u = json_string_value(json_object_get(e, "usage"));
		int l = (int)(strlen(n ? n : "") + (u && *u ? strlen(u) + 1 : 0));
		if (l > w)
			w = l;
	}
	json_array_foreach(arr, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		const char *u = json_string_value(json_object_get(e, "usage"));
		const char *h = json_string_value(json_object_get(e, "help"));
		char nu[256];
		snprintf(nu, sizeof(nu), "%s%s%s", n ? n : "?", u && *u ? " " : "", u ? u : "");
		fprintf(out, "  %-*s  %s%s\n", w, nu, h ? h : "",
			json_is_true(json_object_get(e, "mutating")) ? " [mutating]" : "");
	}
}

/* The keys of one section object as "key = value" lines, but those named
 * in skip (NULL-terminated): what config_print writes. */
static void render_ini_keys(FILE *out, json_t *sec, const char *const *skip)
{
	const char *key;
	json_t *v;

	json_object_foreach(sec, key, v) {
		char num[64];
		int skipped = 0;

		for (size_t i = 0; skip && skip[i]; i++)
			skipped |= !strcmp(key, skip[i]);
		if (skipped)
			continue;
		fprintf(out, "%s =", key);
		switch (json_typeof(v)) {
		case JSON_STRING:
			if (*json_string_value(v))
				fprintf(out, " %s", json_string_value(v));
			break;
		case JSON_INTEGER:
			fprintf(out, " %" JSON_INTEGER_FORMAT, json_integer_value(v));
			break;
		case JSON_REAL:
			/* Shortest text that reads back to the same double. */
			for (int prec = 6; prec <= 17; prec++) {
				snprintf(num, sizeof(num), "%.*g", prec, json_real_value(v));
				if (strtod(num, NULL) == json_real_value(v))
					break;
			}
			fprintf(out, " %s", num);
			break;
		case JSON_TRUE:
			fputs(" true", out);
			break;
		case JSON_FALSE:
			fputs(" false", out);
			break;
		default:
			break;
		}
		fputc('\n', out);
	}
}

/* "modes": each mode that has a [mode NAME] section of its own ("section"
 * other than "waveform", whose keys are in the waveform object). */
static void render_ini_modes(FILE *out, json_t *modes)
{
	static const char *const skip[] = { "name", "section", NULL };
	size_t i;
	json_t *m;

	json_array_foreach(modes, i, m) {
		const char *sec = json_string_value(json_object_get(m, "section"));
		if (!json_is_object(m) || !sec || !strcmp(sec, "waveform"))
			continue;
		fprintf(out, "\n[%s]\n", sec);
		render_ini_keys(out, m, skip);
	}
}

/*
 * status's "modes" (chirpd's configured radar modes, each with its CPIs so
 * far) as a table under the other fields, one line per mode:
 *     modes:   id  name        type       L        cpis
 *               0  default     lfm      100        1234
 * and the CPIs of unknown modes beside it. Fields chirpd does not send are
 * shown as "-"; a reply without "modes" prints as before.
 */
static void render_modes(FILE *out, json_t *modes, json_t *unknown, int indent)
{
	json_t *m;
	size_t i;

	fprintf(out, "%*smodes:\n", indent, "");
	fprintf(out, "%*s%4s  %-16s %-8s %8s %12s\n", indent + 2, "", "id", "name", "type", "L",
		"cpis");
	json_array_foreach(modes, i, m) {
		json_t *name = json_object_get(m, "name"), *type = json_object_get(m, "type");
		char id[24] = "-", len[24] = "-", cpis[24] = "-";

		if (json_is_integer(json_object_get(m, "id")))
			snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(json_object_get(m, "id")));
		if (json_is_integer(json_object_get(m, "L")))
			snprintf(len, sizeof(len), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(json_object_get(m, "L")));
		if (json_is_integer(json_object_get(m, "cpis")))
			snprintf(cpis, sizeof(cpis), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(json_object_get(m, "cpis")));
		fprintf(out, "%*s%4s  %-16s %-8s %8s %12s\n", indent + 2, "", id,
			json_is_string(name) ? json_string_value(name) : "-",
			json_is_string(type) ? json_string_value(type) : "-", len, cpis);
	}
	if (json_is_integer(unknown))
		fprintf(out, "%*s%4s  %-16s %-8s %8s %12" JSON_INTEGER_FORMAT "\n", indent + 2, "",
			"?", "(unknown mode)", "-", "-", json_integer_value(unknown));
}

/* An integer field of o, or 0. */
static long long jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

/*
 * status's "radar" in three lines: what runs, where the lists go, and what
 * the CFAR found so far with its observed false-alarm rate (to compare with
 * the configured pfa on noise):
 *     radar:   doppler on: 15 pulses after MTI, 16 bins; cfar on, pfa 1e-06
 *              lists 120 (detections 345, overflow 0, ring drops 0) -> /chirpd-det, det.jsonl
 *              cfar cells 983040, crossings 1, false-alarm rate 1.02e-06
 */
static void render_radar(FILE *out, json_t *r, int indent)
{
	const char *ring = json_string_value(json_object_get(r, "ring"));
	const char *file = json_string_value(json_object_get(r, "file"));
	json_t *far = json_object_get(r, "false_alarm_rate"), *pfa = json_object_get(r, "pfa");

	if (!json_is_true(json_object_get(r, "doppler"))) {
		fprintf(out, "%*sradar:   off\n", indent, "");
		return;
	}
	fprintf(out, "%*sradar:   doppler on: %lld pulses after MTI, %lld bins; cfar %s", indent, "",
		jint(r, "pulses_mti"), jint(r, "doppler_bins"),
		json_is_true(json_object_get(r, "cfar")) ? "on" : "off");
	if (json_is_true(json_object_get(r, "cfar")) && json_is_number(pfa))
		fprintf(out, ", pfa %g", json_number_value(pfa));
	fputc('\n', out);
	if (!json_is_true(json_object_get(r, "cfar")))
		return;
	fprintf(out, "%*s         lists %lld (detections %lld, overflow %lld, ring drops %lld) -> %s%s%s\n",
		indent, "", jint(r, "lists"), jint(r, "detections"), jint(r, "overflow_lists"),
		jint(r, "ring_drops"), ring && *ring ? ring : "no ring",
		file && *file ? ", " : "", file && *file ? file : "");
	fprintf(out, "%*s         cfar cells %lld, crossings %lld, false-alarm rate %.3g\n", indent, "",
		jint(r, "cfar_cells"), jint(r, "cfar_crossings"),
		json_is_number(far) ? json_number_value(far) : 0.0);
}

/* status: the fields as render() shows them, then the modes table and the
 * radar chain. */
static void render_status(FILE *out, json_t *reply, int indent)
{
	json_t *modes = json_object_get(reply, "modes");
	json_t *unknown = json_object_get(reply, "unknown_mode_cpis");
	json_t *rest;

	if (!json_is_array(modes)) {
		render(out, reply, indent, NULL, 0, 1);
		return;
	}
	rest = json_copy(reply);   /* shallow: the values stay the reply's */
	if (!rest) {
		render(out, reply, indent, NULL, 0, 1);
		return;
	}
	json_object_del(rest, "modes");
	json_object_del(rest, "unknown_mode_cpis");
	json_object_del(rest, "radar");
	render(out, rest, indent, NULL, 0, 1);
	render_modes(out, modes, unknown, indent);
	if (json_is_object(json_object_get(reply, "radar")))
		render_radar(out, json_object_get(reply, "radar"), indent);
	json_decref(rest);
}

/*
 * `config`: {"path":..., "config":{section:{key:value}, "modes":[...]}}
 * printed as the INI file chirpd reads, so `chirpctl config > running.conf`
 * can be checked with chirpd --check or edited and reloaded.
 */
static int render_config_ini(FILE *out, json_t *reply)
{
	json_t *cfg = json_object_get(reply, "config"), *sec, *v;
	const char *sname;
	int first = 1;

	if (!json_is_object(cfg))
		return -1;
	json_object_foreach(cfg, sname, sec)
		if (!json_is_object(sec) && !(json_is_array(sec) && !strcmp(sname, "modes")))
			return -1;
	if (json_is_string(json_object_get(reply, "path")))
		fprintf(out, "# effective configuration of chirpd (read from %s)\n",
			json_string_value(json_object_get(reply, "path")));
	/* Keys the file changed that need a restart: running values below. */
	v = json_object_get(reply, "restart_keys");
	if (json_is_array(v) && json_array_size(v)) {
		fputs("# needs a restart to apply the file's", out);
		for (size_t i = 0; i < json_array_size(v); i++)
			fprintf(out, "%s %s", i ? "," : "", json_string_value(json_array_get(v, i)) ?
				json_string_value(json_array_get(v, i)) : "?");
		fputs(" (running values below)\n", out);
	}
	json_object_foreach(cfg, sname, sec) {
		if (json_is_array(sec)) {
			render_ini_modes(out, sec);
			continue;
		}
		fprintf(out, "%s[%s]\n", first ? "" : "\n", sname);
		first = 0;
		render_ini_keys(out, sec, NULL);
	}
	return 0;
}

/*
 * trace for people: one line per CPI, each stage in ms after the input
 * commit ("-" where it did not happen), then latency, ring fill, CPIs in
 * flight, device time and flags. --json gives every field.
 */
static void render_trace(FILE *out, json_t *reply)
{
	static const char *const st[] = { "peek", "submit", "submitted", "input_done",
					  "output_done", "release", "out_commit" };
	json_t *cpis = json_object_get(reply, "cpis"), *c;
	size_t i;

	fprintf(out, "flight recorder: %lld records kept, %lld CPIs recorded, budget %g ms; "
		"stages in ms after the input commit\n",
		(long long)json_integer_value(json_object_get(reply, "records")),
		(long long)json_integer_value(json_object_get(reply, "total")),
		json_number_value(json_object_get(reply, "latency_budget_ms")));
	fprintf(out, "%10s %4s %8s %8s %9s %8s %8s %8s %8s %8s %5s %4s %8s %5s  %s\n", "seq",
		"mode", "peek", "submit", "submitted", "in_done", "out_done", "release", "commit",
		"latency", "fill", "infl", "device", "recmp", "flags");
	json_array_foreach(cpis, i, c) {
		json_t *t = json_object_get(c, "t_us"), *fl = json_object_get(c, "flags"), *f;
		size_t k;

		fprintf(out, "%10lld", (long long)json_integer_value(json_object_get(c, "seq")));
		if (json_is_integer(json_object_get(c, "mode")))
			fprintf(out, " %4lld", (long long)json_integer_value(json_object_get(c, "mode")));
		else
			fprintf(out, " %4s", "-");
		for (size_t s = 0; s < sizeof(st) / sizeof(st[0]); s++) {
			json_t *v = json_object_get(t, st[s]);
			int w = s == 2 ? 9 : 8;

			if (json_is_number(v))
				fprintf(out, " %*.3f", w, json_number_value(v) * 1e-3);
			else
				fprintf(out, " %*s", w, "-");
		}
		fprintf(out, " %8.3f %5lld %4lld",
			json_number_value(json_object_get(c, "latency_us")) * 1e-3,
			(long long)json_integer_value(json_object_get(c, "fill")),
			(long long)json_integer_value(json_object_get(c, "in_flight")));
		if (json_is_number(json_object_get(c, "device_us")))
			fprintf(out, " %8.3f", json_number_value(json_object_get(c, "device_us")) * 1e-3);
		else
			fprintf(out, " %8s", "-");
		fprintf(out, " %5lld ", (long long)json_integer_value(json_object_get(c, "recomputed")));
		json_array_foreach(fl, k, f)
			fprintf(out, "%s%s", k ? "," : " ", json_string_value(f));
		fputc('\n', out);
	}
}

/* Print a reply for people. Returns the exit status (0 ok, 1 error). */
static int show(const char *cmd, json_t *reply)
{
	if (!json_is_true(json_object_get(reply, "ok"))) {
		const char *e = json_string_value(json_object_get(reply, "error"));
		json_t *errs = json_object_get(reply, "errors"), *x;
		size_t i;
		size_t cl = strlen(cmd);

		/* One "CMD: " prefix: the daemon may name the command in its
		 * reason already ("trace: N must be ..."), and so do we. */
		if (e && !strncmp(e, cmd, cl) && e[cl] == ':' && e[cl + 1] == ' ')
			e += cl + 2;
		fprintf(stderr, "chirpctl: %s: %s\n", cmd, e ? e : "failed (no reason given)");
		json_array_foreach(errs, i, x)
			if (json_is_string(x))
				fprintf(stderr, "  %s\n", json_string_value(x));
		return 1;
	}
	if (!strcmp(cmd, "metrics") && json_is_string(json_object_get(reply, "text"))) {
		fputs(json_string_value(json_object_get(reply, "text")), stdout);
		return 0;
	}
	if (!strcmp(cmd, "config") && render_config_ini(stdout, reply) == 0)
		return 0;
	if (!strcmp(cmd, "trace") && json_is_array(json_object_get(reply, "cpis"))) {
		render_trace(stdout, reply);
		return 0;
	}
	if (!strcmp(cmd, "status")) {
		render_status(stdout, reply, 0);
		return 0;
	}
	if (!strcmp(cmd, "help") && json_is_array(json_object_get(reply, "commands"))) {
		render_help(stdout, reply);
		return 0;
	}
	if (json_object_size(reply) <= 2) {
		puts("ok");
		return 0;
	}
	render(stdout, reply, 0, NULL, 0, 1);
	return 0;
}

/* Request text from argv: words joined by one space, checked. */
static int build_request(int argc, char **argv, char *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < argc; i++) {
		size_t l = strlen(argv[i]);
		for (size_t k = 0; k < l; k++) {
			unsigned char ch = (unsigned char)argv[i][k];
			if (ch < 0x20 || ch > 0x7e) {
				fprintf(stderr, "chirpctl: argument '%s' has a character a request cannot carry\n",
					argv[i]);
				return -EINVAL;
			}
		}
		if (n + l + 2 > len) {
			fprintf(stderr, "chirpctl: request longer than %d bytes\n", CONTROL_REQ_MAX - 1);
			return -E2BIG;
		}
		if (i)
			buf[n++] = ' ';
		memcpy(buf + n, argv[i], l);
		n += l;
	}
	buf[n] = '\0';
	return 0;
}

/* ---- watch ---- */

static json_t *ask_json(struct conn *c, const char *req, char *err, size_t errlen)
{
	char *line = NULL;
	json_error_t je;
	json_t *j;

	if (c->fd < 0 && conn_open(c, err, errlen) < 0)
		return NULL;
	if (conn_ask(c, req, &line, err, errlen) < 0) {
		conn_close(c);
		return NULL;
	}
	j = json_loads(line, 0, &je);
	if (!j || !json_is_object(j)) {
		snprintf(err, errlen, "reply to '%s' is not a JSON object: %s", req, je.text);
		json_decref(j);
		free(line);
		conn_close(c);
		return NULL;
	}
	free(line);
	return j;
}

static int watch(struct conn *c, double interval, long count)
{
	int tty = isatty(STDOUT_FILENO);
	json_t *prev_stats = NULL;
	double prev_t = 0;
	int rc = 0;

	for (long n = 0; !stop_flag && (count <= 0 || n < count); n++) {
		char err[512], ts[64];
		json_t *status, *stats = NULL;
		time_t now = time(NULL);
		double t = mono_s();
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
		status = ask_json(c, "status", err, sizeof(err));
		if (status)
			stats = ask_json(c, "stats", err, sizeof(err));
		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (n)
			fputc('\n', stdout);
		printf("chirpd on %s — %s%s\n", c->path, ts, tty ? "  (Ctrl-C to quit)" : "");
		if (!status || !stats) {
			printf("  %s\n", err);
			rc = 2;
		} else {
			rc = 0;
			if (!json_is_true(json_object_get(status, "ok")) ||
			    !json_is_true(json_object_get(stats, "ok")))
				rc = 1;
			printf("status:\n");
			render_status(stdout, status, 2);
			printf("stats:\n");
			render(stdout, stats, 2, prev_stats, prev_t ? t - prev_t : 0, 1);
			json_decref(prev_stats);
			prev_stats = json_incref(stats);
			prev_t = t;
		}
		fflush(stdout);
		json_decref(status);
		json_decref(stats);
		if (count > 0 && n + 1 >= count)
			break;
		/* Sleep the rest of the interval; a signal cuts it short. */
		double left = interval - (mono_s() - t);
		if (left > 0) {
			struct timespec d = { (time_t)left, (long)((left - floor(left)) * 1e9) };
			nanosleep(&d, NULL);
		}
	}
	json_decref(prev_stats);
	return rc;
}

/* Options of chirpctl besides the socket and the timeout (kept in conn). */
struct ctl_opts {
	int json;                        /* --json: print the reply line as is */
	double interval;                 /* --interval: watch period, s        */
	long count;                      /* --count: watch samples (0: no end) */
};

/* Parse the options into c and o. -1: go on with argv[optind..]; else the
 * exit status (0 after --help or --version, 2 on a bad option). */
static int parse_opts(int argc, char **argv, struct conn *c, struct ctl_opts *o)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int opt;

	/*
	 * No '+': GNU getopt permutes, so options are found before and after
	 * the command, and the command and its arguments end up, in order, at
	 * argv[optind..]. No command argument starts with '-'; one that must
	 * goes after "--". (With POSIXLY_CORRECT set, options must come first.)
	 */
	while ((opt = getopt_long(argc, argv, "s:jt:i:n:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			c->path = optarg;
			break;
		case 'j':
			o->json = 1;
			break;
		case 't':
			c->timeout_s = strtod(optarg, &end);
			if (*end || !(c->timeout_s > 0) || c->timeout_s > 86400) {
				fprintf(stderr, "chirpctl: --timeout %s: need seconds > 0\n", optarg);
				return 2;
			}
			break;
		case 'i':
			o->interval = strtod(optarg, &end);
			if (*end || !(o->interval >= 0.05) || o->interval > 3600) {
				fprintf(stderr, "chirpctl: --interval %s: need 0.05 .. 3600 seconds\n", optarg);
				return 2;
			}
			break;
		case 'n':
			o->count = strtol(optarg, &end, 10);
			if (*end || o->count < 1) {
				fprintf(stderr, "chirpctl: --count %s: need a positive integer\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("chirpctl %s (control protocol %d)\n", chirpd_version, CONTROL_PROTO);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	return -1;
}

/* chirpctl watch: the exit status. */
static int run_watch(struct conn *c, const struct ctl_opts *o, int argc, char **argv)
{
	char err[512];
	int rc;

	/* --count and --interval after the word were taken by getopt. */
	if (optind + 1 < argc) {
		fprintf(stderr, "chirpctl: watch: unexpected '%s' (options: --count N, --interval SEC)\n",
			argv[optind + 1]);
		return 2;
	}
	if (conn_open(c, err, sizeof(err)) < 0) {
		fprintf(stderr, "chirpctl: %s\n", err);
		return 2;
	}
	rc = watch(c, o->interval, o->count);
	conn_close(c);
	free(c->buf);
	return stop_flag ? 0 : rc;
}

/* One command, one reply, shown as JSON or for people: the exit status. */
static int run_command(struct conn *c, const struct ctl_opts *o, int argc, char **argv)
{
	char req[CONTROL_REQ_MAX], err[512];
	char *line = NULL;
	json_t *reply;
	int rc;

	if (build_request(argc - optind, argv + optind, req, sizeof(req)) < 0)
		return 2;
	if (conn_open(c, err, sizeof(err)) < 0) {
		fprintf(stderr, "chirpctl: %s\n", err);
		return 2;
	}
	if (conn_ask(c, req, &line, err, sizeof(err)) < 0) {
		fprintf(stderr, "chirpctl: %s\n", err);
		conn_close(c);
		free(c->buf);
		return 2;
	}
	conn_close(c);
	free(c->buf);

	reply = json_loads(line, 0, NULL);
	if (!reply || !json_is_object(reply)) {
		fprintf(stderr, "chirpctl: reply is not a JSON object: %.200s\n", line);
		json_decref(reply);
		free(line);
		return 2;
	}
	if (o->json) {
		puts(line);
		rc = json_is_true(json_object_get(reply, "ok")) ? 0 : 1;
	} else {
		rc = show(argv[optind], reply);
	}
	json_decref(reply);
	free(line);
	return rc;
}

int main(int argc, char **argv)
{
	struct conn c = { .fd = -1, .timeout_s = 5 };
	struct ctl_opts o = { .interval = 1 };
	const char *env = getenv("CHIRPD_SOCKET");
	struct sigaction sa = { .sa_handler = on_signal };
	int rc;

	c.path = env && *env ? env : DEFAULT_SOCKET;
	rc = parse_opts(argc, argv, &c, &o);
	if (rc >= 0)
		return rc;
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!strcmp(argv[optind], "watch"))
		return run_watch(&c, &o, argc, argv);
	return run_command(&c, &o, argc, argv);
}
