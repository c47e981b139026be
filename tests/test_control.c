/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_control.c — the control socket server: reply shapes, bad input,
 * abuse (oversized, binary, half-sent, 1000 malformed requests, 200 and
 * more simultaneous clients, a client that never reads), authority,
 * stale-socket handling.
 *
 * Each test runs a real server on a temp socket with fake handlers; a
 * server thread loops poll(control_fd) + control_dispatch, as chirpd's event
 * loop does. The struct control is touched only by that thread once it
 * runs (test hooks are set before it starts), so the test is TSan-clean.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "config.h"
#include "control.h"
#include "log.h"

struct fixture {
	char dir[64];
	char path[128];
	struct control *ctl;
	pthread_t thr;
	atomic_int stop;
	atomic_int mut_calls;
	int running;
};

/* ---- fake handlers (run on the server thread) ---- */

static int h_status(void *ctx, const char *args, const struct control_peer *peer,
		    json_t *reply, char *err, size_t errlen)
{
	struct fixture *f = ctx;
	struct control_stats st;

	control_get_stats(f->ctl, &st);
	json_object_set_new(reply, "state", json_string("running"));
	json_object_set_new(reply, "answer", json_integer(42));
	json_object_set_new(reply, "clients", json_integer(st.clients));
	json_object_set_new(reply, "dropped", json_integer((json_int_t)st.dropped));
	json_object_set_new(reply, "refused", json_integer((json_int_t)st.refused));
	json_object_set_new(reply, "peer_uid", json_integer(peer->uid));
	json_object_set_new(reply, "peer_pid", json_integer(peer->pid));
	return 0;
}

static int h_fail(void *ctx, const char *args, const struct control_peer *peer,
		  json_t *reply, char *err, size_t errlen)
{
	json_object_set_new(reply, "errors", json_pack("[s]", "x.conf:3: [cpi] foo: unknown key"));
	snprintf(err, errlen, "boom");
	return -EIO;
}

static int h_noerr(void *ctx, const char *args, const struct control_peer *peer,
		   json_t *reply, char *err, size_t errlen)
{
	return -EINVAL;
}

static int h_echo(void *ctx, const char *args, const struct control_peer *peer,
		  json_t *reply, char *err, size_t errlen)
{
	json_object_set_new(reply, "args", json_string(args));
	return 0;
}

static int h_mut(void *ctx, const char *args, const struct control_peer *peer,
		 json_t *reply, char *err, size_t errlen)
{
	struct fixture *f = ctx;
	atomic_fetch_add(&f->mut_calls, 1);
	return 0;
}

static int h_metrics(void *ctx, const char *args, const struct control_peer *peer,
		     json_t *reply, char *err, size_t errlen)
{
	json_object_set_new(reply, "text", json_string("# TYPE x counter\nx_total 7\n"));
	return 0;
}

static int h_stats(void *ctx, const char *args, const struct control_peer *peer,
		   json_t *reply, char *err, size_t errlen)
{
	static int calls;      /* server thread only */
	json_object_set_new(reply, "cpis_in", json_integer(100 * ++calls));
	return 0;
}

/* One reply larger than the backlog cap (1 MiB). */
static int h_big(void *ctx, const char *args, const struct control_peer *peer,
		 json_t *reply, char *err, size_t errlen)
{
	size_t n = 3u << 20;
	char *t = malloc(n + 1);
	if (!t)
		return -ENOMEM;
	memset(t, 'm', n);
	t[n] = '\0';
	json_object_set_new(reply, "text", json_string(t));
	free(t);
	return 0;
}

/* Like chirpd's: the configuration as JSON (here the defaults, with one
 * value that does not print exactly in 6 digits). */
static int h_config(void *ctx, const char *args, const struct control_peer *peer,
		    json_t *reply, char *err, size_t errlen)
{
	struct chirp_config c;
	config_defaults(&c);
	c.wf.sample_rate_hz = c.modes[0].wf.sample_rate_hz = 1e8 / 3;
	c.wf.bandwidth_hz = c.modes[0].wf.bandwidth_hz = 1e7 / 3;
	json_object_set_new(reply, "path", json_string("/etc/chirpd/chirpd.conf"));
	json_object_set_new(reply, "config", config_to_json(&c));
	return 0;
}

static const struct control_cmd cmds[] = {
	{ .name = "config", .fn = h_config, .help = "fake config" },
	{ .name = "metrics", .fn = h_metrics, .help = "fake metrics" },
	{ .name = "big", .fn = h_big, .help = "a 3 MiB reply" },
	{ .name = "stats", .fn = h_stats, .help = "fake stats" },
	{ .name = "status", .fn = h_status, .help = "fake status" },
	{ .name = "fail", .fn = h_fail, .help = "always fails" },
	{ .name = "noerr", .fn = h_noerr, .help = "fails without a message" },
	{ .name = "echo", .fn = h_echo, .usage = "WORDS", .help = "echo args" },
	{ .name = "mut", .fn = h_mut, .mutating = 1, .help = "mutating" },
	{ .name = NULL },
};

static void *server(void *arg)
{
	struct fixture *f = arg;
	struct pollfd p = { .fd = control_fd(f->ctl), .events = POLLIN };

	while (!atomic_load(&f->stop)) {
		if (poll(&p, 1, 10) > 0)
			control_dispatch(f->ctl);
	}
	return NULL;
}

static void start(struct fixture *f)
{
	assert_int_equal(pthread_create(&f->thr, NULL, server, f), 0);
	f->running = 1;
}

static void stop(struct fixture *f)
{
	if (f->running) {
		atomic_store(&f->stop, 1);
		pthread_join(f->thr, NULL);
		f->running = 0;
	}
}

/* Build a server; hooks may be applied by the test before start(). */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256];

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/chirp-tctl-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	/* A subdirectory that does not exist yet: control_create makes it. */
	snprintf(f->path, sizeof(f->path), "%s/run/control.sock", f->dir);
	/* A strict umask must not narrow the directory or the socket. */
	mode_t um = umask(077);
	f->ctl = control_create(f->path, 0660, "", cmds, f, err, sizeof(err));
	umask(um);
	if (!f->ctl) {
		fprintf(stderr, "control_create: %s\n", err);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char sub[160];

	stop(f);
	control_destroy(f->ctl);
	snprintf(sub, sizeof(sub), "%s/run", f->dir);
	rmdir(sub);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ---- client helpers ---- */

static int cl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void cl_send(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		assert_true(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

/* Send, ignoring errors: the server may already have hung up on us. */
static void cl_send_any(int fd, const void *buf, size_t n)
{
	ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
	(void)w;
}

/*
 * Read one line (without '\n') into buf within timeout_ms. Returns its
 * length, 0 on EOF before any byte, -1 on timeout. Reads one byte at a
 * time so pipelined replies stay in the socket for the next call.
 */
static int cl_line(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char ch;
		ssize_t r;

		if (poll(&p, 1, timeout_ms) <= 0)
			return -1;
		r = recv(fd, &ch, 1, 0);
		if (r < 0 && errno == ECONNRESET)
			return n ? (int)n : 0;
		assert_true(r >= 0);
		if (r == 0)
			return (int)n;
		if (ch == '\n') {
			buf[n] = '\0';
			return (int)n;
		}
		if (n + 1 < len)
			buf[n++] = ch;
	}
}

/* True if the server closed the connection (EOF) within timeout_ms. */
static int cl_closed(int fd, int timeout_ms)
{
	char buf[256];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;
		if (poll(&p, 1, timeout_ms) <= 0)
			return 0;
		r = recv(fd, buf, sizeof(buf), 0);
		if (r <= 0)
			return 1;
	}
}

/* Send request (adds '\n') on fd, read and parse the reply. */
static json_t *ask_fd(int fd, const char *req)
{
	char line[65536];
	json_error_t je;
	json_t *j;

	cl_send(fd, req, strlen(req));
	cl_send(fd, "\n", 1);
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	j = json_loads(line, 0, &je);
	if (!j)
		fail_msg("reply is not JSON: %s (%s)", line, je.text);
	assert_true(json_is_object(j));
	assert_int_equal(json_integer_value(json_object_get(j, "proto")), CONTROL_PROTO);
	return j;
}

static json_t *ask(struct fixture *f, const char *req)
{
	int fd = cl_connect(f->path);
	json_t *j;

	assert_true(fd >= 0);
	j = ask_fd(fd, req);
	close(fd);
	return j;
}

static int is_ok(json_t *j)
{
	return json_is_true(json_object_get(j, "ok"));
}

static const char *error_of(json_t *j)
{
	const char *e = json_string_value(json_object_get(j, "error"));
	return e ? e : "";
}

/* ---- tests ---- */

static void test_reply_shapes(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	json_t *j;

	/* Socket file: created in a new directory with mode 0660. */
	assert_int_equal(stat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
	{
		char sub[160];
		snprintf(sub, sizeof(sub), "%s/run", f->dir);
		assert_int_equal(stat(sub, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0755);
	}
	start(f);

	j = ask(f, "ping");
	assert_true(is_ok(j));
	assert_true(json_is_true(json_object_get(j, "pong")));
	json_decref(j);

	j = ask(f, "status");
	assert_true(is_ok(j));
	assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
	assert_int_equal(json_integer_value(json_object_get(j, "answer")), 42);
	assert_int_equal(json_integer_value(json_object_get(j, "peer_uid")), getuid());
	assert_int_equal(json_integer_value(json_object_get(j, "peer_pid")), getpid());
	json_decref(j);

	j = ask(f, "help");
	assert_true(is_ok(j));
	{
		json_t *arr = json_object_get(j, "commands"), *e;
		size_t i;
		int seen_echo = 0, seen_mut = 0;
		assert_true(json_is_array(arr));
		assert_int_equal(json_array_size(arr), 11);  /* 9 + help + ping */
		json_array_foreach(arr, i, e) {
			const char *n = json_string_value(json_object_get(e, "name"));
			assert_non_null(n);
			if (!strcmp(n, "echo")) {
				seen_echo = 1;
				assert_string_equal(json_string_value(json_object_get(e, "usage")), "WORDS");
			}
			if (!strcmp(n, "mut")) {
				seen_mut = 1;
				assert_true(json_is_true(json_object_get(e, "mutating")));
			}
		}
		assert_true(seen_echo && seen_mut);
	}
	json_decref(j);

	/* A failing handler: ok false, its message, and its extra fields. */
	j = ask(f, "fail");
	assert_false(is_ok(j));
	assert_string_equal(error_of(j), "boom");
	assert_true(json_is_array(json_object_get(j, "errors")));
	json_decref(j);

	j = ask(f, "noerr");
	assert_false(is_ok(j));
	assert_string_equal(error_of(j), strerror(EINVAL));
	json_decref(j);

	/* A reply over the backlog cap still arrives whole. */
	{
		int fd = cl_connect(f->path);
		char *big = malloc(4u << 20);
		assert_non_null(big);
		size_t n = 0;
		cl_send(fd, "big\n", 4);
		while (n == 0 || big[n - 1] != '\n') {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			assert_true(poll(&p, 1, 10000) == 1);
			ssize_t r = recv(fd, big + n, (4u << 20) - 1 - n, 0);
			assert_true(r > 0);
			n += (size_t)r;
		}
		big[n - 1] = '\0';
		assert_true(n > (3u << 20));
		j = json_loads(big, 0, NULL);
		assert_non_null(j);
		assert_int_equal(strlen(json_string_value(json_object_get(j, "text"))), 3u << 20);
		json_decref(j);
		free(big);
		close(fd);
	}

	j = ask(f, "mut");
	assert_true(is_ok(j));   /* we are root or the owner */
	json_decref(j);
	assert_int_equal(atomic_load(&f->mut_calls), 1);
}

static void test_unknown_and_args(void **state)
{
	struct fixture *f = *state;
	json_t *j;
	int fd;

	start(f);
	j = ask(f, "frobnicate now");
	assert_false(is_ok(j));
	assert_string_equal(error_of(j), "unknown command 'frobnicate' (try 'help')");
	json_decref(j);

	j = ask(f, "echo   hello  world \t ");
	assert_true(is_ok(j));
	assert_string_equal(json_string_value(json_object_get(j, "args")), "hello  world");
	json_decref(j);

	j = ask(f, "echo");
	assert_true(is_ok(j));
	assert_string_equal(json_string_value(json_object_get(j, "args")), "");
	json_decref(j);

	j = ask(f, "status now");
	assert_false(is_ok(j));
	assert_string_equal(error_of(j), "'status' takes no arguments");
	json_decref(j);

	/* CRLF line ending and leading blanks are fine. */
	fd = cl_connect(f->path);
	j = ask_fd(fd, "  ping\r");
	assert_true(is_ok(j));
	json_decref(j);
	/* An empty line is an error, and the connection stays usable. */
	j = ask_fd(fd, "");
	assert_false(is_ok(j));
	assert_non_null(strstr(error_of(j), "empty request"));
	json_decref(j);
	j = ask_fd(fd, "ping");
	assert_true(is_ok(j));
	json_decref(j);
	close(fd);
}

static void test_pipelined_and_eof(void **state)
{
	struct fixture *f = *state;
	char line[4096];
	int fd;

	start(f);
	fd = cl_connect(f->path);
	cl_send(fd, "ping\nstatus\necho a b\n", 21);
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	assert_non_null(strstr(line, "\"pong\":true"));
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	assert_non_null(strstr(line, "\"state\":\"running\""));
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	assert_non_null(strstr(line, "\"args\":\"a b\""));

	/* Many requests in one write (more than fit one dispatch's burst):
	 * all answered without the client sending anything more. */
	{
		static char many[400 * 5];
		for (int i = 0; i < 400; i++)
			memcpy(many + 5 * i, "ping\n", 5);
		cl_send(fd, many, sizeof(many));
		for (int i = 0; i < 400; i++) {
			assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
			if (!strstr(line, "\"pong\":true")) fail_msg("reply %d: %s", i, line);
		}
	}
	close(fd);

	/* A last request without '\n' before shutdown(WR) is answered. */
	fd = cl_connect(f->path);
	cl_send(fd, "ping", 4);
	shutdown(fd, SHUT_WR);
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	assert_non_null(strstr(line, "\"ok\":true"));
	assert_true(cl_closed(fd, 5000));
	close(fd);
}

static void test_oversized(void **state)
{
	struct fixture *f = *state;
	char *big = malloc(3 * CONTROL_REQ_MAX);
	char line[8192];
	json_t *j;
	int fd;

	assert_non_null(big);
	start(f);
	/* Longest allowed line (4095 bytes + '\n'): answered, stays open. */
	fd = cl_connect(f->path);
	memset(big, 'a', CONTROL_REQ_MAX - 1);
	big[CONTROL_REQ_MAX - 1] = '\0';
	j = ask_fd(fd, big);
	assert_false(is_ok(j));
	assert_non_null(strstr(error_of(j), "unknown command"));
	json_decref(j);
	j = ask_fd(fd, "ping");
	assert_true(is_ok(j));
	json_decref(j);
	close(fd);

	/* Over the limit without newline: error reply, then closed. */
	fd = cl_connect(f->path);
	memset(big, 'b', 3 * CONTROL_REQ_MAX);
	cl_send(fd, big, 3 * CONTROL_REQ_MAX);
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	j = json_loads(line, 0, NULL);
	assert_non_null(j);
	assert_false(is_ok(j));
	assert_non_null(strstr(error_of(j), "request longer than 4095 bytes"));
	json_decref(j);
	assert_true(cl_closed(fd, 5000));
	close(fd);

	j = ask(f, "ping");
	assert_true(is_ok(j));
	json_decref(j);
	free(big);
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;
	static const char nul[] = "pi\0ng\n";
	static const char bin[] = "\x01\x02\xff\xfe\n";
	char line[4096];
	unsigned seed = 12345;
	json_t *j;
	int fd;

	start(f);
	/* NUL inside a line: error, then hang up. */
	fd = cl_connect(f->path);
	cl_send(fd, nul, sizeof(nul) - 1);
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	assert_non_null(strstr(line, "\"ok\":false"));
	assert_non_null(strstr(line, "malformed request: byte 0x00 at offset 2"));
	assert_true(cl_closed(fd, 5000));
	close(fd);

	fd = cl_connect(f->path);
	cl_send(fd, bin, sizeof(bin) - 1);
	assert_true(cl_line(fd, line, sizeof(line), 5000) > 0);
	assert_non_null(strstr(line, "malformed request"));
	close(fd);

	/* 1000 malformed requests of random bytes and lengths, each on its
	 * own connection, some cut short; the server keeps answering. */
	for (int i = 0; i < 1000; i++) {
		char req[600];
		size_t n = (size_t)(rand_r(&seed) % sizeof(req)) + 1;
		for (size_t k = 0; k < n; k++)
			req[k] = (char)(rand_r(&seed) & 0xff);
		fd = cl_connect(f->path);
		assert_true(fd >= 0);
		cl_send_any(fd, req, n);
		if (i % 2)
			cl_send_any(fd, "\n", 1);
		close(fd);   /* without reading: the server must cope */
	}
	j = ask(f, "ping");
	assert_true(is_ok(j));
	json_decref(j);
	j = ask(f, "status");
	assert_true(is_ok(j));
	json_decref(j);
}

static void test_half_sent(void **state)
{
	struct fixture *f = *state;
	char line[256];
	struct timespec t0, t1;
	json_t *j;
	int silent, quiet;

	control_set_idle_ms(f->ctl, 300);
	start(f);
	silent = cl_connect(f->path);
	cl_send(silent, "sta", 3);              /* and then nothing */
	quiet = cl_connect(f->path);            /* connects, sends nothing */

	/* Others are answered at once meanwhile. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 20; i++) {
		j = ask(f, "ping");
		assert_true(is_ok(j));
		json_decref(j);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* Generous safety bound: 20 pings must not wait for the idle clients. */
	assert_true(t1.tv_sec - t0.tv_sec < 5);

	/* Both idle clients are closed after the timeout (0.3 s; bound 10 s). */
	assert_true(cl_closed(silent, 10000));
	assert_true(cl_closed(quiet, 10000));
	close(silent);
	close(quiet);
	j = ask(f, "status");
	assert_int_equal(json_integer_value(json_object_get(j, "clients")), 1);
	assert_true(json_integer_value(json_object_get(j, "dropped")) >= 1);
	json_decref(j);
	(void)line;
}

static void raise_nofile(rlim_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void test_many_clients(void **state)
{
	struct fixture *f = *state;
	enum { N = 200, OVER = CONTROL_MAX_CLIENTS + 20 };
	static int fds[OVER];
	struct rlimit rl;
	char line[512];
	int refused = 0, ok = 0;
	json_t *j;

	raise_nofile(4096);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 2 * OVER + 64)
		skip();   /* cannot open enough fds here */
	/* Refusal at the cap, not eviction (test_evict_idle): however slowly a
	 * sanitizer build runs, none of these counts as idle. */
	control_set_evict_ms(f->ctl, 600000);
	start(f);

	/* 200 connected at once, all sending before any reads. */
	for (int i = 0; i < N; i++) {
		fds[i] = cl_connect(f->path);
		assert_true(fds[i] >= 0);
	}
	for (int i = 0; i < N; i++)
		cl_send(fds[i], "ping\n", 5);
	for (int i = 0; i < N; i++) {
		assert_true(cl_line(fds[i], line, sizeof(line), 10000) > 0);
		assert_non_null(strstr(line, "\"ok\":true"));
	}
	/* All 200 still connected and usable. */
	for (int i = 0; i < N; i++) {
		j = ask_fd(fds[i], "status");
		assert_true(is_ok(j));
		assert_int_equal(json_integer_value(json_object_get(j, "clients")), N);
		json_decref(j);
	}
	/* Over the cap: the extra ones get "too many clients". */
	for (int i = N; i < OVER; i++) {
		fds[i] = cl_connect(f->path);
		assert_true(fds[i] >= 0);
	}
	for (int i = N; i < OVER; i++) {
		cl_send_any(fds[i], "ping\n", 5);
		int n = cl_line(fds[i], line, sizeof(line), 10000);
		assert_true(n > 0);
		if (strstr(line, "too many clients"))
			refused++;
		else if (strstr(line, "\"ok\":true"))
			ok++;
	}
	assert_int_equal(ok, CONTROL_MAX_CLIENTS - N);
	assert_int_equal(refused, OVER - CONTROL_MAX_CLIENTS);
	for (int i = 0; i < OVER; i++)
		close(fds[i]);
}

/*
 * A full table of silent clients must not lock the operator out: the
 * newcomer gets its answer and the client silent longest is closed; with
 * every client recently active the newcomer is refused instead.
 */
static void test_evict_idle(void **state)
{
	struct fixture *f = *state;
	static int fds[CONTROL_MAX_CLIENTS];
	struct rlimit rl;
	char line[512];
	int fd, closed = 0;
	json_t *j;

	raise_nofile(4096);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 2 * CONTROL_MAX_CLIENTS + 64)
		skip();
	control_set_idle_ms(f->ctl, 600000);   /* no idle sweep in this test */
	control_set_evict_ms(f->ctl, 600000);  /* first: no client counts as idle */
	start(f);
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		fds[i] = cl_connect(f->path);
		assert_true(fds[i] >= 0);
		cl_send(fds[i], "ping\n", 5);   /* accepted and answered: in the table */
		assert_true(cl_line(fds[i], line, sizeof(line), 10000) > 0);
	}
	/* All 256 just spoke: a newcomer is refused. */
	fd = cl_connect(f->path);
	assert_true(fd >= 0);
	cl_send_any(fd, "ping\n", 5);
	assert_true(cl_line(fd, line, sizeof(line), 10000) > 0);
	assert_non_null(strstr(line, "too many clients"));
	close(fd);
	/* Now 300 ms of silence makes a client evictable (hooks are set while
	 * the server thread is stopped; the clients stay connected). */
	stop(f);
	control_set_evict_ms(f->ctl, 300);
	atomic_store(&f->stop, 0);
	start(f);
	/* Client 0 speaks again; the others stay silent past the threshold. */
	usleep(400000);
	cl_send(fds[0], "ping\n", 5);
	assert_true(cl_line(fds[0], line, sizeof(line), 10000) > 0);
	/* Now the newcomer is served, on a connection that stays usable. */
	fd = cl_connect(f->path);
	assert_true(fd >= 0);
	j = ask_fd(fd, "status");
	assert_true(is_ok(j));
	assert_int_equal(json_integer_value(json_object_get(j, "clients")), CONTROL_MAX_CLIENTS);
	assert_int_equal(json_integer_value(json_object_get(j, "dropped")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "refused")), 1);
	json_decref(j);
	/* Exactly one silent client was closed, and not the one that spoke. */
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		char b;
		ssize_t r = recv(fds[i], &b, 1, MSG_DONTWAIT);

		if (r == 0)
			closed++;
		if (i == 0)
			assert_true(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
	}
	assert_int_equal(closed, 1);
	close(fd);
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		close(fds[i]);
}

static void test_slow_reader(void **state)
{
	struct fixture *f = *state;
	char req[5 * 1024];
	int fd, flags, dropped = 0;
	json_t *j;

	start(f);
	fd = cl_connect(f->path);
	/* Shrink our receive buffer so replies back up quickly. */
	int small = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	flags = MSG_NOSIGNAL | MSG_DONTWAIT;
	for (size_t i = 0; i + 5 <= sizeof(req); i += 5)
		memcpy(req + i, "help\n", 5);
	/* Keep asking, never read; stop when the server hangs up (or after
	 * a generous bound of requests). */
	for (int round = 0; round < 20000 && !dropped; round++) {
		ssize_t w = send(fd, req, sizeof(req), flags);
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			dropped = 1;
		else if (w < 0 && errno == EAGAIN)
			usleep(1000);
		/* Others are still served while this goes on. */
		if (round % 500 == 0) {
			j = ask(f, "ping");
			assert_true(is_ok(j));
			json_decref(j);
		}
	}
	assert_true(dropped);
	close(fd);
	j = ask(f, "status");
	assert_true(is_ok(j));
	json_decref(j);
}

static void test_authority(void **state)
{
	struct fixture *f = *state;
	json_t *j;

	/* Pretend the daemon runs as uid 54321 and root is nobody special. */
	control_set_owner_uid(f->ctl, 54321, 0);
	control_set_group_gid(f->ctl, (gid_t)-1);
	start(f);
	if (getuid() == 54321)
		skip();
	j = ask(f, "mut");
	assert_false(is_ok(j));
	assert_non_null(strstr(error_of(j), "permission denied: 'mut' needs root or uid 54321"));
	json_decref(j);
	assert_int_equal(atomic_load(&f->mut_calls), 0);
	/* Read-only commands still work for the same peer. */
	j = ask(f, "status");
	assert_true(is_ok(j));
	json_decref(j);
	j = ask(f, "help");
	assert_true(is_ok(j));
	json_decref(j);
}

static void test_authority_group(void **state)
{
	struct fixture *f = *state;
	json_t *j;

	control_set_owner_uid(f->ctl, 54321, 0);
	control_set_group_gid(f->ctl, getgid());   /* our primary group */
	start(f);
	if (getuid() == 54321)
		skip();
	j = ask(f, "mut");
	assert_true(is_ok(j));
	json_decref(j);
	assert_int_equal(atomic_load(&f->mut_calls), 1);
}

static void test_stale_and_live_socket(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char err[256], path[100];
	struct control *c2;
	int fd;

	/* A live server on the path: refuse to take it over. */
	c2 = control_create(f->path, 0660, "", cmds, f, err, sizeof(err));
	assert_null(c2);
	assert_non_null(strstr(err, "another chirpd is running on"));

	/* A stale socket (bound, nobody listening) is replaced. */
	snprintf(path, sizeof(path), "%s/stale.sock", f->dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	c2 = control_create(path, 0660, "", cmds, f, err, sizeof(err));
	if (!c2)
		fail_msg("stale socket not replaced: %s", err);
	control_destroy(c2);
	assert_int_equal(access(path, F_OK), -1);   /* destroy unlinks */

	/* A regular file is never removed. */
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	c2 = control_create(path, 0660, "", cmds, f, err, sizeof(err));
	assert_null(c2);
	assert_non_null(strstr(err, "is not a socket"));
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);

	/* Relative paths and unknown groups are refused with a reason. */
	c2 = control_create("relative.sock", 0660, "", cmds, f, err, sizeof(err));
	assert_null(c2);
	assert_non_null(strstr(err, "absolute"));
	c2 = control_create(path, 0660, "no-such-group-chirp", cmds, f, err, sizeof(err));
	assert_null(c2);
	assert_non_null(strstr(err, "no-such-group-chirp"));
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* Out of file descriptors: the server must not spin on a listening socket
 * it cannot accept from, and must accept again once fds are free. */
static void test_out_of_fds(void **state)
{
	struct fixture *f = *state;
	struct rlimit old, lim;
	int fds[64], n = 0, probe;
	double c0, c1;
	json_t *j;

	start(f);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	probe = dup(0);                  /* lowest free fd now */
	assert_true(probe >= 0);
	close(probe);
	lim = old;
	lim.rlim_cur = (rlim_t)probe + 6;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	/* Connect until our own socket() fails; the server runs out first
	 * or at the same time (it needs one fd per accepted client). */
	while (n < 64) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		if (fd < 0)
			break;
		memcpy(sa.sun_path, f->path, strlen(f->path) + 1);   /* < 108, see setup */
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(fd);
			break;
		}
		fds[n++] = fd;
		usleep(20000);
	}
	assert_true(n >= 1);
	c0 = cpu_s();
	usleep(500000);
	c1 = cpu_s();
	print_message("cpu while out of fds: %.3f s\n", c1 - c0);
	/* A spinning loop burns 0.3-0.5 s of CPU here; generous bound. */
	if (c1 - c0 > 0.15)
		fail_msg("control loop used %.2f s CPU in 0.5 s while out of fds", c1 - c0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	/* Accepting again (the listening socket returns on a timer tick). */
	j = ask(f, "ping");
	assert_true(is_ok(j));
	json_decref(j);
}

/* ---- chirpctl against this server ---- */

static char chirpctl[600];

/* Run a shell command; stdout and stderr into buf. Returns exit status. */
static int run(char *buf, size_t len, const char *fmt, ...)
{
	char cmd[2048], tmp[] = "/tmp/chirp-tctl-out-XXXXXX";
	va_list ap;
	int fd = mkstemp(tmp), st;
	ssize_t n;

	assert_true(fd >= 0);
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " >", sizeof(cmd) - strlen(cmd) - 1);
	strncat(cmd, tmp, sizeof(cmd) - strlen(cmd) - 1);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	st = system(cmd);
	n = read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(tmp);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_chirpctl(void **state)
{
	struct fixture *f = *state;
	char out[16384];
	json_t *j;

	if (!chirpctl[0] || access(chirpctl, X_OK) != 0)
		skip();      /* chirpctl not built next to this test */
	start(f);
	assert_int_equal(run(out, sizeof(out), "%s -s %s ping", chirpctl, f->path), 0);
	assert_string_equal(out, "pong: yes\n");

	/* Aligned key: value lines. */
	assert_int_equal(run(out, sizeof(out), "%s -s %s status", chirpctl, f->path), 0);
	assert_non_null(strstr(out, "state:    running\n"));
	assert_non_null(strstr(out, "answer:   42\n"));
	assert_null(strstr(out, "proto"));

	/* --json: the reply as sent, for scripts. */
	assert_int_equal(run(out, sizeof(out), "%s -s %s --json status", chirpctl, f->path), 0);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_true(is_ok(j));
	json_decref(j);

	/* metrics: the text, raw. */
	assert_int_equal(run(out, sizeof(out), "%s -s %s metrics", chirpctl, f->path), 0);
	assert_string_equal(out, "# TYPE x counter\nx_total 7\n");

	/* config: printed as an INI file that loads back to the same values. */
	assert_int_equal(run(out, sizeof(out), "%s -s %s config", chirpctl, f->path), 0);
	assert_non_null(strstr(out, "# effective configuration of chirpd (read from /etc/chirpd/chirpd.conf)\n"));
	assert_non_null(strstr(out, "[waveform]\ntype = lfm\n"));
	{
		struct chirp_config c, d;
		char *errs = NULL;
		size_t elen = 0;
		FILE *m = open_memstream(&errs, &elen);
		int n = config_load_string(&c, "from-chirpctl", out, m);
		fclose(m);
		if (n)
			fail_msg("chirpctl config output does not load: %s\n%s", errs, out);
		free(errs);
		config_defaults(&d);
		d.wf.sample_rate_hz = d.modes[0].wf.sample_rate_hz = 1e8 / 3;
		d.wf.bandwidth_hz = d.modes[0].wf.bandwidth_hz = 1e7 / 3;
		memset(c.path, 0, sizeof(c.path));
		memset(d.path, 0, sizeof(d.path));
		assert_memory_equal(&c, &d, sizeof(c));
	}

	/* Arguments are joined; $CHIRPD_SOCKET is the default socket. */
	assert_int_equal(run(out, sizeof(out), "CHIRPD_SOCKET=%s %s echo a b", f->path, chirpctl), 0);
	assert_string_equal(out, "args: a b\n");

	/* {"ok":false} exits 1 with the reason (and listed errors). */
	assert_int_equal(run(out, sizeof(out), "%s -s %s fail", chirpctl, f->path), 1);
	assert_non_null(strstr(out, "chirpctl: fail: boom\n"));
	assert_non_null(strstr(out, "  x.conf:3: [cpi] foo: unknown key\n"));
	assert_int_equal(run(out, sizeof(out), "%s -s %s --json fail", chirpctl, f->path), 1);
	assert_int_equal(run(out, sizeof(out), "%s -s %s status extra", chirpctl, f->path), 1);
	assert_non_null(strstr(out, "takes no arguments"));

	/* Connection and usage problems exit 2 with a clear message. */
	assert_int_equal(run(out, sizeof(out), "%s -s %s/none.sock ping", chirpctl, f->dir), 2);
	assert_non_null(strstr(out, "cannot connect to"));
	assert_non_null(strstr(out, "No such file or directory — is chirpd running?"));
	assert_int_equal(run(out, sizeof(out), "%s", chirpctl), 2);
	assert_non_null(strstr(out, "usage:"));
	assert_int_equal(run(out, sizeof(out), "%s --timeout x ping", chirpctl), 2);

	/* watch: N refreshes, plain when piped, ends by itself. */
	assert_int_equal(run(out, sizeof(out), "%s -s %s watch --count 2 --interval 0.1",
			     chirpctl, f->path), 0);
	{
		int headers = 0;
		for (char *p = out; (p = strstr(p, "chirpd on ")); p++)
			headers++;
		assert_int_equal(headers, 2);
		assert_non_null(strstr(out, "state:"));
		assert_non_null(strstr(out, "/s)"));       /* a rate on the second refresh */
		assert_null(strstr(out, "\033["));     /* no screen control when piped */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reply_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_and_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_and_eof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evict_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_authority, setup, teardown),
		cmocka_unit_test_setup_teardown(test_authority_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_and_live_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chirpctl, setup, teardown),
	};
	/* chirpctl sits in ../bin next to this test binary (BUILD/tests). */
	{
		char self[512];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			char *slash = strrchr(self, '/');
			if (slash) {
				*slash = '\0';
				snprintf(chirpctl, sizeof(chirpctl), "%s/../bin/chirpctl", self);
			}
		}
	}

	log_init("test_control");
	log_set_level(LOG_WARNING);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
