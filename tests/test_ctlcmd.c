/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ctlcmd.c — chirpd's control commands (ctlcmd.c) behind a real
 * control socket (control.c), against a daemon set up here: the statistics,
 * flight recorder, configuration and generation a running chirpd has, but
 * no backend, rings or data thread (d.pl is NULL: the state is "starting").
 * Checked: the table (which commands mutate, which take arguments), bad
 * arguments refused with doc/control.md's errors, mutating commands refused
 * to an unprivileged peer (and not run), and the reply fields doc/control.md
 * promises for version, status, stats, trace, config, metrics, log-level and
 * a reload whose file has an error. pause and resume with a data thread are
 * left to tests/e2e/daemon_control.sh.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "daemon.h"
#include "log.h"

#define TRACE_N 8u               /* the recorder's size in these tests */
#define OTHER_UID 4242u          /* the daemon's uid for an unprivileged peer */

struct fx {
	char dir[64], sock[96], conf[96];
	struct daemon d;
	struct gen g;
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct daemon *d;
	char err[256];

	assert_non_null(f);
	unsetenv("NOTIFY_SOCKET");   /* sd_notify: never a real service manager */
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_ctlcmd-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/control.sock", f->dir);
	snprintf(f->conf, sizeof(f->conf), "%s/chirpd.conf", f->dir);
	write_file(f->conf, "[cpi]\nchannels = 2\n");

	config_defaults(&f->g.cfg);
	f->g.nmodes = 1;
	f->g.modes[0].ref_len = 100;
	f->g.info.backend = PC_BACKEND_CPU;
	snprintf(f->g.info.device, sizeof(f->g.info.device), "cpu (test)");
	snprintf(f->g.info.staging, sizeof(f->g.info.staging), "none");
	f->g.file_fd[PLAN_FILE_OUT] = f->g.file_fd[PLAN_FILE_DET] = -1;

	d = &f->d;
	d->config_path = f->conf;
	d->g = &f->g;
	d->epfd = d->sigfd = d->tfd = d->efd = -1;
	d->start_ns = mono_ns();
	d->st = stats_create();
	d->snap_prev = calloc(1, sizeof(*d->snap_prev));
	d->snap_now = calloc(1, sizeof(*d->snap_now));
	d->snap_delta = calloc(1, sizeof(*d->snap_delta));
	d->trace = trace_create(TRACE_N);
	d->trace_buf = calloc(TRACE_N, sizeof(*d->trace_buf));
	d->mbuf = malloc(METRICS_BUF);
	assert_true(d->st && d->snap_prev && d->snap_now && d->snap_delta && d->trace &&
		    d->trace_buf && d->mbuf);
	d->ctl = control_create(f->sock, 0660, "", daemon_commands, d, err, sizeof(err));
	if (!d->ctl)
		fail_msg("control_create: %s", err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct daemon *d = &f->d;

	control_destroy(d->ctl);
	stats_destroy(d->st);
	trace_destroy(d->trace);
	free(d->trace_buf);
	free(d->snap_prev);
	free(d->snap_now);
	free(d->snap_delta);
	free(d->mbuf);
	unlink(f->conf);
	rmdir(f->dir);
	free(f);
	log_set_level(LOG_NOTICE);
	return 0;
}

/* Treat the peer as unprivileged (the daemon runs as OTHER_UID, root is not
 * special, no control group) or as the daemon's own uid. */
static void set_privileged(struct fx *f, int yes)
{
	if (yes) {
		control_set_owner_uid(f->d.ctl, geteuid(), 1);
	} else {
		control_set_owner_uid(f->d.ctl, geteuid() == OTHER_UID ? OTHER_UID + 1 : OTHER_UID, 0);
		control_set_group_gid(f->d.ctl, (gid_t)-1);
	}
}

/* Send one request on a new connection, run the control socket until the
 * reply line comes (2 s at most) and return it parsed. */
static json_t *request(struct fx *f, const char *line)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[1 << 16];
	size_t got = 0;
	json_error_t je;
	json_t *j;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	assert_int_equal(write(fd, "\n", 1), 1);
	for (int i = 0; i < 200 && !memchr(buf, '\n', got); i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		assert_true(control_dispatch(f->d.ctl) >= 0);
		if (poll(&p, 1, 10) <= 0)
			continue;
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	if (!memchr(buf, '\n', got))
		fail_msg("'%s': no reply line within 2 s (got '%s')", line, buf);
	j = json_loads(buf, 0, &je);
	if (!j)
		fail_msg("'%s': reply is not JSON (%s): %s", line, je.text, buf);
	return j;
}

/* The request succeeds; returns the reply. */
static json_t *ok(struct fx *f, const char *line)
{
	json_t *j = request(f, line);

	if (!json_is_true(json_object_get(j, "ok")))
		fail_msg("'%s' failed: %s", line, json_string_value(json_object_get(j, "error")));
	assert_int_equal(json_integer_value(json_object_get(j, "proto")), CONTROL_PROTO);
	return j;
}

/* The request fails with exactly this error. */
static void refused(struct fx *f, const char *line, const char *error)
{
	json_t *j = request(f, line);
	const char *e = json_string_value(json_object_get(j, "error"));

	if (!json_is_false(json_object_get(j, "ok")) || !e || strcmp(e, error))
		fail_msg("'%s': want error '%s', got ok %d error '%s'", line, error,
			 json_is_true(json_object_get(j, "ok")), e ? e : "(none)");
	json_decref(j);
}

/* Every key of keys[] (NULL-terminated) is in object o. */
static void has_keys(json_t *o, const char *what, const char *const *keys)
{
	assert_true(json_is_object(o));
	for (; *keys; keys++)
		if (!json_object_get(o, *keys))
			fail_msg("%s: no '%s'", what, *keys);
}

/* Whether a message at level reaches stderr now. */
static int logged(int level)
{
	char buf[256] = "";
	FILE *t = tmpfile();
	int saved = dup(2);
	size_t n;

	assert_non_null(t);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(t), 2) >= 0);
	log_msg(level, "ctlcmd probe");
	fflush(stderr);
	assert_true(dup2(saved, 2) >= 0);
	close(saved);
	rewind(t);
	n = fread(buf, 1, sizeof(buf) - 1, t);
	buf[n] = '\0';
	fclose(t);
	return strstr(buf, "ctlcmd probe") != NULL;
}

static const struct control_cmd *find(const char *name)
{
	for (const struct control_cmd *c = daemon_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* ---- the table ------------------------------------------------------------ */

/* doc/control.md: the commands, which of them mutate, which take arguments. */
static void test_table(void **state)
{
	static const struct { const char *name, *usage; int mutating; } want[] = {
		{ "version", NULL, 0 }, { "status", NULL, 0 }, { "stats", NULL, 0 },
		{ "config", NULL, 0 }, { "trace", "[N]", 0 }, { "metrics", NULL, 0 },
		{ "reload", NULL, 1 }, { "pause", NULL, 1 }, { "resume", NULL, 1 },
		{ "log-level", "LEVEL", 1 }, { "capacity-shared", "CPS|clear", 1 },
	};
	unsigned n = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct control_cmd *c = find(want[i].name);

		if (!c)
			fail_msg("no command '%s'", want[i].name);
		assert_non_null(c->fn);
		assert_non_null(c->help);
		if (c->mutating != want[i].mutating)
			fail_msg("'%s': mutating %d, doc/control.md says %d", c->name, c->mutating,
				 want[i].mutating);
		if (!want[i].usage ? c->usage != NULL : !c->usage || strcmp(c->usage, want[i].usage))
			fail_msg("'%s': usage '%s', want '%s'", c->name, c->usage ? c->usage : "(none)",
				 want[i].usage ? want[i].usage : "(none)");
	}
	for (const struct control_cmd *c = daemon_commands; c->name; c++)
		n++;
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
}

/* ---- authority ------------------------------------------------------------ */

/* An unprivileged peer reads everything and changes nothing. */
static void test_unprivileged(void **state)
{
	struct fx *f = *state;
	static const char *const reads[] = { "version", "status", "stats", "config", "trace",
					     "metrics", "help", NULL };
	char want[128];
	unsigned owner = geteuid() == OTHER_UID ? OTHER_UID + 1 : OTHER_UID;

	set_privileged(f, 0);
	for (const char *const *r = reads; *r; r++)
		json_decref(ok(f, *r));

	log_set_level(LOG_NOTICE);
	snprintf(want, sizeof(want), "permission denied: 'log-level' needs root or uid %u", owner);
	refused(f, "log-level debug", want);
	assert_false(logged(LOG_DEBUG));
	snprintf(want, sizeof(want), "permission denied: 'reload' needs root or uid %u", owner);
	refused(f, "reload", want);
	assert_string_equal(f->d.last_reload_error, "");   /* not even parsed */
	snprintf(want, sizeof(want), "permission denied: 'pause' needs root or uid %u", owner);
	refused(f, "pause", want);
	snprintf(want, sizeof(want), "permission denied: 'resume' needs root or uid %u", owner);
	refused(f, "resume", want);
	snprintf(want, sizeof(want), "permission denied: 'capacity-shared' needs root or uid %u",
		 owner);
	refused(f, "capacity-shared 100", want);
	assert_true(f->d.g->shared_cps == 0);

	set_privileged(f, 1);
	json_decref(ok(f, "log-level debug"));
	assert_true(logged(LOG_DEBUG));
}

/* ---- arguments ------------------------------------------------------------ */

static void test_bad_arguments(void **state)
{
	struct fx *f = *state;
	static const char *const none[] = { "version", "status", "stats", "config", "metrics",
					    "reload", "pause", "resume", NULL };
	static const char *const bad_n[] = { "0", "-1", "abc", "9", "3x", "99999999999999999999",
					     NULL };
	char line[64], want[160];

	for (const char *const *c = none; *c; c++) {
		snprintf(line, sizeof(line), "%s 1", *c);
		snprintf(want, sizeof(want), "'%s' takes no arguments", *c);
		refused(f, line, want);
	}
	for (const char *const *n = bad_n; *n; n++) {
		snprintf(line, sizeof(line), "trace %s", *n);
		snprintf(want, sizeof(want), "trace: N must be a number of CPIs 1..%u "
			 "(the recorder's size, [trace] records), not '%s'", TRACE_N, *n);
		refused(f, line, want);
	}
	/* error..debug only: the levels above error are not offered */
	refused(f, "log-level loud", "unknown level 'loud' (error|warning|notice|info|debug)");
	refused(f, "log-level crit", "unknown level 'crit' (error|warning|notice|info|debug)");
	refused(f, "log-level", "unknown level '' (error|warning|notice|info|debug)");
}

/* ---- replies -------------------------------------------------------------- */

static void test_version(void **state)
{
	json_t *j = ok(*state, "version");

	assert_string_equal(json_string_value(json_object_get(j, "version")), chirpd_version);
	assert_int_equal(json_integer_value(json_object_get(j, "ring_abi")), CHIRP_RING_ABI_VERSION);
	assert_true(json_is_boolean(json_object_get(j, "cuda_built")));
	json_decref(j);
}

static void test_status(void **state)
{
	struct fx *f = *state;
	static const char *const top[] = { "state", "summary", "version", "pid", "uptime_s",
		"config_path", "backend", "device", "geometry", "rings", "modes", "radar",
		"unknown_mode_cpis", "numa", "realtime", "control_socket", NULL };
	static const char *const geometry[] = { "channels", "pulses", "samples", "format",
						"output", "sample_rate_hz", NULL };
	static const char *const rings[] = { "input", "output", "input_slots", "output_slots",
		"input_memory", "output_memory", "pinned_bytes", "capacity_cpi_per_s", NULL };
	static const char *const memory[] = { "bytes", "pinned_bytes", NULL };
	static const char *const mode[] = { "id", "name", "type", "L", "cpis", NULL };
	json_t *j = ok(f, "status"), *m;

	has_keys(j, "status", top);
	has_keys(json_object_get(j, "geometry"), "status.geometry", geometry);
	has_keys(json_object_get(j, "rings"), "status.rings", rings);
	has_keys(json_object_get(json_object_get(j, "rings"), "input_memory"), "input_memory", memory);
	has_keys(json_object_get(json_object_get(j, "rings"), "output_memory"), "output_memory", memory);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "starting");
	assert_int_equal(strncmp(json_string_value(json_object_get(j, "summary")), "starting: ", 10), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), getpid());
	assert_string_equal(json_string_value(json_object_get(j, "config_path")), f->conf);
	assert_string_equal(json_string_value(json_object_get(j, "backend")), "cpu");
	assert_string_equal(json_string_value(json_object_get(j, "device")), "cpu (test)");
	assert_string_equal(json_string_value(json_object_get(j, "control_socket")), f->sock);
	assert_int_equal(json_array_size(json_object_get(j, "modes")), f->g.cfg.nmodes);
	m = json_array_get(json_object_get(j, "modes"), 0);
	has_keys(m, "status.modes[0]", mode);
	assert_int_equal(json_integer_value(json_object_get(m, "L")), 100);
	assert_null(json_object_get(j, "last_reload_error"));
	json_decref(j);

	/* a failed reload left no rings: the reason, and no input ring to ask */
	f->d.broken = 1;
	snprintf(f->d.broken_why, sizeof(f->d.broken_why), "no rings");
	j = ok(f, "status");
	assert_string_equal(json_string_value(json_object_get(j, "state")), "failed");
	assert_string_equal(json_string_value(json_object_get(j, "summary")), "failed: no rings");
	json_decref(j);
	f->d.broken = 0;
	f->d.stopping = 1;
	j = ok(f, "status");
	assert_string_equal(json_string_value(json_object_get(j, "state")), "stopping");
	json_decref(j);
}

static void test_stats(void **state)
{
	struct fx *f = *state;
	static const char *const top[] = { "cpis_in", "cpis_out", "input_overruns", "sequence_gaps",
		"output_drops", "unknown_mode_cpis", "samples_per_s", "cpis_per_s", "latency",
		"latency_last_interval", "stages", "modes", "cfar_false_alarm_rate", NULL };
	static const char *const lat[] = { "count", "mean_ns", "p50_ns", "p99_ns", "p999_ns",
					   "max_ns", NULL };
	json_t *j, *modes, *m;

	stats_write_begin(f->d.st);
	stats_count(f->d.st, ST_CPIS_IN, 5);
	stats_count(f->d.st, ST_CPIS_OUT, 4);
	stats_count_mode(f->d.st, 0, 3);
	stats_count_mode(f->d.st, 7, 2);    /* a mode no longer configured */
	stats_latency(f->d.st, 2000000);
	stats_write_end(f->d.st);
	f->d.cpis_per_s = 12.5;

	j = ok(f, "stats");
	has_keys(j, "stats", top);
	has_keys(json_object_get(j, "latency"), "stats.latency", lat);
	assert_int_equal(json_integer_value(json_object_get(j, "cpis_in")), 5);
	assert_int_equal(json_integer_value(json_object_get(j, "cpis_out")), 4);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "latency"), "count")), 1);
	assert_true(json_real_value(json_object_get(j, "cpis_per_s")) == 12.5);
	for (int st = 0; st < STG_STAGES; st++)
		assert_non_null(json_object_get(json_object_get(j, "stages"), stats_stage_name(st)));
	modes = json_object_get(j, "modes");
	m = json_object_get(modes, "0");
	assert_string_equal(json_string_value(json_object_get(m, "name")), f->g.cfg.modes[0].name);
	assert_int_equal(json_integer_value(json_object_get(m, "cpis")), 3);
	m = json_object_get(modes, "7");
	assert_true(json_is_null(json_object_get(m, "name")));
	assert_int_equal(json_integer_value(json_object_get(m, "cpis")), 2);
	assert_int_equal(json_object_size(modes), 2);
	json_decref(j);
}

static void test_trace(void **state)
{
	struct fx *f = *state;
	json_t *j, *cpis;

	for (uint64_t s = 10; s < 13; s++) {
		struct trace_cpi r = { .seq = s };

		trace_put(f->d.trace, &r);
	}
	j = ok(f, "trace 2");
	assert_int_equal(json_integer_value(json_object_get(j, "records")), TRACE_N);
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 3);
	assert_non_null(json_object_get(j, "latency_budget_ms"));
	cpis = json_object_get(j, "cpis");
	assert_int_equal(json_array_size(cpis), 2);       /* the last two, oldest first */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(cpis, 0), "seq")), 11);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(cpis, 1), "seq")), 12);
	json_decref(j);
	j = ok(f, "trace");                                /* default: up to 100 */
	assert_int_equal(json_array_size(json_object_get(j, "cpis")), 3);
	json_decref(j);
	j = ok(f, "trace 8");                              /* the recorder's size */
	assert_int_equal(json_array_size(json_object_get(j, "cpis")), 3);
	json_decref(j);
}

static void test_config(void **state)
{
	struct fx *f = *state;
	json_t *j, *keys;

	snprintf(f->d.restart_keys, sizeof(f->d.restart_keys), "cpi.samples,input.ring");
	j = ok(f, "config");
	assert_string_equal(json_string_value(json_object_get(j, "path")), f->conf);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(j,
		"config"), "cpi"), "channels")), f->g.cfg.channels);
	keys = json_object_get(j, "restart_keys");
	assert_int_equal(json_array_size(keys), 2);
	assert_string_equal(json_string_value(json_array_get(keys, 0)), "cpi.samples");
	assert_string_equal(json_string_value(json_array_get(keys, 1)), "input.ring");
	json_decref(j);
}

static void test_metrics(void **state)
{
	json_t *j = ok(*state, "metrics");
	const char *t = json_string_value(json_object_get(j, "text"));
	char want[96];

	assert_non_null(t);
	snprintf(want, sizeof(want), "chirpd_info{version=\"%s\",backend=\"cpu\"} 1\n", chirpd_version);
	assert_non_null(strstr(t, want));
	assert_non_null(strstr(t, "\nchirpd_up "));
	json_decref(j);
}

static void test_log_level(void **state)
{
	struct fx *f = *state;
	json_t *j = ok(f, "log-level error");

	assert_string_equal(json_string_value(json_object_get(j, "level")), "error");
	json_decref(j);
	assert_false(logged(LOG_WARNING));
	assert_true(logged(LOG_ERR));
	j = ok(f, "log-level debug");
	assert_string_equal(json_string_value(json_object_get(j, "level")), "debug");
	json_decref(j);
	assert_true(logged(LOG_DEBUG));
}

/* capacity-shared: a rate or clear, nothing else; the figure goes into
 * status (shared, sustainable) and back out with clear. No capacity cache
 * here: applied, not stored. */
static void test_capacity_shared(void **state)
{
	struct fx *f = *state;
	static const char *const bad[] = { "abc", "-5", "0", "nan", "inf", "1e10", "12x", NULL };
	char line[64], want[160];
	json_t *j, *c;

	refused(f, "capacity-shared", "capacity-shared: want CPS (CPI/s, > 0) or clear");
	for (const char *const *b = bad; *b; b++) {
		snprintf(line, sizeof(line), "capacity-shared %s", *b);
		snprintf(want, sizeof(want), "capacity-shared: '%s': want CPS (CPI/s, > 0 and at "
			 "most 1e9) or clear", *b);
		refused(f, line, want);
	}
	assert_true(f->d.g->shared_cps == 0);
	j = ok(f, "capacity-shared 1234.5");
	assert_true(json_real_value(json_object_get(j, "shared_cpi_per_s")) == 1234.5);
	assert_true(json_real_value(json_object_get(j, "sustainable_cpi_per_s")) == 1234.5);
	assert_true(json_is_false(json_object_get(j, "stored")));
	json_decref(j);
	j = ok(f, "status");
	c = json_object_get(j, "capacity");
	assert_true(json_real_value(json_object_get(json_object_get(c, "shared"), "cpi_per_s")) ==
		    1234.5);
	assert_true(json_real_value(json_object_get(c, "sustainable_cpi_per_s")) == 1234.5);
	json_decref(j);
	j = ok(f, "capacity-shared clear");
	assert_true(json_is_null(json_object_get(j, "shared_cpi_per_s")));
	json_decref(j);
	j = ok(f, "status");
	c = json_object_get(j, "capacity");
	assert_true(json_is_null(json_object_get(c, "shared")));
	assert_true(json_real_value(json_object_get(c, "sustainable_cpi_per_s")) ==
		    f->d.g->capacity_cps);
	json_decref(j);
}

/* Without a data thread (start-up) or while stopping there is nothing to
 * pause or resume: refused, and the daemon stays as it is. */
static void test_pause_refused(void **state)
{
	struct fx *f = *state;

	refused(f, "pause", "data path is starting");
	refused(f, "resume", "data path is starting");
	f->d.stopping = 1;
	refused(f, "pause", "data path is stopping");
	refused(f, "resume", "data path is stopping");
}

/* A file with an error: ok false, each error as FILE:LINE, the running
 * configuration kept, and status says the last reload failed. */
static void test_reload_error(void **state)
{
	struct fx *f = *state;
	unsigned channels = f->g.cfg.channels;
	json_t *j, *errors;
	char want[160];
	const char *e, *summary;

	log_set_level(LOG_CRIT);   /* the reload logs its errors; keep the output short */
	write_file(f->conf, "[cpi]\nchannels = 2\nchannels_typo = 3\n");
	j = request(f, "reload");
	assert_true(json_is_false(json_object_get(j, "ok")));
	errors = json_object_get(j, "errors");
	assert_int_equal(json_array_size(errors), 1);
	e = json_string_value(json_array_get(errors, 0));
	snprintf(want, sizeof(want), "%s:3: [cpi] channels_typo", f->conf);
	if (!e || strncmp(e, want, strlen(want)))
		fail_msg("reload error '%s', want it to start '%s'", e ? e : "(none)", want);
	json_decref(j);
	assert_int_equal(f->g.cfg.channels, channels);
	assert_true(f->d.last_reload_error[0] != '\0');

	j = ok(f, "status");
	assert_string_equal(json_string_value(json_object_get(j, "last_reload_error")),
			    f->d.last_reload_error);
	summary = json_string_value(json_object_get(j, "summary"));
	assert_non_null(strstr(summary, "; last reload failed: "));
	json_decref(j);
	j = ok(f, "stats");
	assert_int_equal(json_integer_value(json_object_get(j, stats_counter_name(ST_RELOAD_FAILURES))), 1);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test_setup_teardown(test_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_level, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capacity_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pause_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_error, setup, teardown),
	};

	log_init("test_ctlcmd");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
