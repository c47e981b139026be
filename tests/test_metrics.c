/* SPDX-License-Identifier: Apache-2.0 */
/* test_metrics.c — Prometheus exposition: syntax of every line, HELP/TYPE
 * for every family, values equal to the snapshot; listen parsing; a GET
 * against the HTTP endpoint driven like the daemon's event loop. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "metrics.h"
#include "stats.h"

static struct stats *mk_stats(void)
{
	struct stats *s = stats_create();
	assert_non_null(s);
	stats_write_begin(s);
	stats_count(s, ST_CPIS_IN, 12345);
	stats_count(s, ST_CPIS_OUT, 12340);
	stats_count(s, ST_OUTPUT_DROPS, 5);
	for (int i = 1; i <= 1000; i++)
		stats_latency(s, (uint64_t)i * 1000);
	stats_stage(s, STG_COMPUTE, 2500000);
	stats_write_end(s);
	return s;
}

/* A sample line: name{labels} value — name [a-zA-Z_:][a-zA-Z0-9_:]* */
static int valid_sample(const char *l, char *name, size_t nlen, double *v)
{
	size_t i = 0;
	const char *p = l;
	char *end;

	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':'))
		return 0;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '_' || *p == ':') {
		if (i + 1 < nlen)
			name[i++] = *p;
		p++;
	}
	name[i] = 0;
	if (*p == '{') {
		const char *rb = strchr(p, '}');
		if (!rb || strchr(p, '=') == NULL || strchr(p, '"') == NULL)
			return 0;
		p = rb + 1;
	}
	if (*p != ' ')
		return 0;
	*v = strtod(p + 1, &end);
	return end != p + 1 && *end == 0;
}

static void test_exposition(void **state)
{
	(void)state;
	struct stats *s = mk_stats();
	static struct stats_snapshot sn;
	struct metrics_info mi = { .state = "running", .backend = "cpu", .version = "t",
				   .uptime_s = 3.5, .samples_per_s = 1e6, .numa_node = -1 };
	char *buf = malloc(65536), *line, *save;
	char helped[200][64];
	int nhelp = 0, nsamples = 0, found_in = 0, found_q = 0;

	stats_snapshot(s, &sn);
	int n = metrics_format(&sn, &mi, buf, 65536);
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_int_equal(metrics_format(&sn, &mi, buf, 100), -ENOSPC);
	n = metrics_format(&sn, &mi, buf, 65536);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128];
		double v;
		if (!strncmp(line, "# HELP ", 7)) {
			sscanf(line + 7, "%63s", helped[nhelp]);
			nhelp++;
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			char fam[64], type[32];
			assert_int_equal(sscanf(line + 7, "%63s %31s", fam, type), 2);
			assert_true(!strcmp(type, "counter") || !strcmp(type, "gauge") || !strcmp(type, "summary"));
			assert_string_equal(fam, helped[nhelp - 1]);   /* TYPE follows its HELP */
			continue;
		}
		if (!valid_sample(line, name, sizeof(name), &v))
			fail_msg("bad line: %s", line);
		nsamples++;
		/* the sample belongs to a family with HELP */
		int ok = 0;
		for (int i = 0; i < nhelp; i++)
			if (!strncmp(name, helped[i], strlen(helped[i])))
				ok = 1;
		assert_true(ok);
		if (!strcmp(name, "chirpd_cpis_in_total")) {
			assert_true(v == 12345);
			found_in = 1;
		}
		if (strstr(line, "chirpd_cpi_latency_seconds{quantile=\"0.5\"}")) {
			/* 500 us, one bucket (1/16) of resolution */
			assert_true(v >= 500e-6 && v <= 500e-6 * (1 + 1.0 / 16) + 1e-9);
			found_q = 1;
		}
		if (!strcmp(name, "chirpd_cpi_latency_seconds_count"))
			assert_true(v == 1000);
	}
	assert_true(found_in && found_q);
	assert_true(nsamples > ST_COUNTERS);
	free(buf);
	stats_destroy(s);
}

/* chirpd_mode_cpis_total: one sample per configured mode (labels id and
 * name, a name's quote and backslash escaped), plus ids no longer
 * configured that counted CPIs (name ""); and the unknown-mode counter. */
static void test_mode_counters(void **state)
{
	(void)state;
	struct stats *s = stats_create();
	static struct stats_snapshot sn;
	static const struct metrics_mode modes[] = {
		{ 0, "default" }, { 5, "long" }, { 9, "we\"ird\\" },
	};
	struct metrics_info mi = { .state = "running", .backend = "cpu", .version = "t",
				   .numa_node = -1, .modes = modes, .nmodes = 3 };
	char *buf = malloc(65536);
	int n;

	assert_non_null(s);
	assert_non_null(buf);
	stats_write_begin(s);
	stats_count_mode(s, 0, 11);
	stats_count_mode(s, 5, 22);
	stats_count_mode(s, 40, 4);          /* a mode a reload removed */
	stats_count(s, ST_UNKNOWN_MODE_CPIS, 3);
	stats_write_end(s);
	stats_snapshot(s, &sn);
	n = metrics_format(&sn, &mi, buf, 65536);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "# TYPE chirpd_mode_cpis_total counter\n"));
	assert_non_null(strstr(buf, "\nchirpd_mode_cpis_total{mode=\"0\",name=\"default\"} 11\n"));
	assert_non_null(strstr(buf, "\nchirpd_mode_cpis_total{mode=\"5\",name=\"long\"} 22\n"));
	assert_non_null(strstr(buf, "\nchirpd_mode_cpis_total{mode=\"9\",name=\"we\\\"ird\\\\\"} 0\n"));
	assert_non_null(strstr(buf, "\nchirpd_mode_cpis_total{mode=\"40\",name=\"\"} 4\n"));
	assert_null(strstr(buf, "chirpd_mode_cpis_total{mode=\"1\""));
	assert_non_null(strstr(buf, "\nchirpd_unknown_mode_cpis_total 3\n"));
	free(buf);
	stats_destroy(s);
}

static void test_parse_listen(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	char err[200];
	assert_int_equal(metrics_parse_listen("127.0.0.1:9464", &ss, err, sizeof(err)), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9464);
	assert_int_equal(metrics_parse_listen("[::1]:80", &ss, err, sizeof(err)), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	const char *bad[] = { "", "9464", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:70000",
			      "localhost:9464", "[::1]9464", "[::1:9464", "1.2.3.4:12x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(metrics_parse_listen(bad[i], &ss, err, sizeof(err)), -EINVAL);
}

/* The live view's counters appear only with the view, typed and named. */
static void test_live_counters(void **state)
{
	struct stats *s = mk_stats();
	static struct stats_snapshot sn;
	struct live_counters lc = { .frames = 7, .frames_sent = 20, .frames_skipped = 3,
				    .clients_refused = 1, .clients_dropped = 2, .clients = 4 };
	struct metrics_info mi = { .state = "running", .backend = "cpu", .numa_node = -1 };
	char *buf = malloc(65536);

	(void)state;
	stats_snapshot(s, &sn);
	assert_true(metrics_format(&sn, &mi, buf, 65536) > 0);
	assert_null(strstr(buf, "chirpd_live_"));
	mi.live = &lc;
	assert_true(metrics_format(&sn, &mi, buf, 65536) > 0);
	assert_non_null(strstr(buf, "# TYPE chirpd_live_frames_total counter\nchirpd_live_frames_total 7\n"));
	assert_non_null(strstr(buf, "\nchirpd_live_frames_sent_total 20\n"));
	assert_non_null(strstr(buf, "\nchirpd_live_frames_skipped_total 3\n"));
	assert_non_null(strstr(buf, "\nchirpd_live_clients_refused_total 1\n"));
	assert_non_null(strstr(buf, "\nchirpd_live_clients_dropped_total 2\n"));
	assert_non_null(strstr(buf, "# TYPE chirpd_live_clients gauge\nchirpd_live_clients 4\n"));
	free(buf);
	stats_destroy(s);
}

/* Loopback is 127.0.0.0/8, ::1 and v4-mapped 127/8; the wildcards are not. */
static void test_loopback(void **state)
{
	static const char *const yes[] = { "127.0.0.1:1", "127.255.0.9:80", "[::1]:9464",
					   "[::ffff:127.0.0.1]:9464" };
	static const char *const no[] = { "0.0.0.0:9464", "10.0.0.1:9464", "128.0.0.1:1",
					  "[::]:9464", "[fe80::1]:9464", "[::ffff:10.0.0.1]:9464" };
	struct sockaddr_storage ss;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		assert_int_equal(metrics_parse_listen(yes[i], &ss, err, sizeof(err)), 0);
		assert_int_equal(metrics_listen_is_loopback(&ss), 1);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		assert_int_equal(metrics_parse_listen(no[i], &ss, err, sizeof(err)), 0);
		assert_int_equal(metrics_listen_is_loopback(&ss), 0);
	}
}

static struct stats *g_stats;
static int render(void *ctx, char *buf, size_t len)
{
	static struct stats_snapshot sn;
	struct metrics_info mi = { .state = "running", .backend = "cpu", .numa_node = -1 };
	(void)ctx;
	stats_snapshot(g_stats, &sn);
	return metrics_format(&sn, &mi, buf, len);
}

struct client { int port; char reply[65536]; size_t got; const char *req; };
static void *client_thread(void *arg)
{
	struct client *c = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return NULL;
	if (write(fd, c->req, strlen(c->req)) < 0) {
		close(fd);
		return NULL;
	}
	ssize_t n;
	while ((n = read(fd, c->reply + c->got, sizeof(c->reply) - 1 - c->got)) > 0)
		c->got += (size_t)n;
	c->reply[c->got] = 0;
	close(fd);
	return NULL;
}

static void http_get(struct metrics_http *m, int port, const char *req, struct client *c)
{
	pthread_t th;
	memset(c, 0, sizeof(*c));
	c->port = port;
	c->req = req;
	assert_int_equal(pthread_create(&th, NULL, client_thread, c), 0);
	/* the daemon's loop: poll the one fd, run */
	for (int i = 0; i < 500 && pthread_tryjoin_np(th, NULL) == EBUSY; i++) {
		struct pollfd p = { .fd = metrics_http_fd(m), .events = POLLIN };
		poll(&p, 1, 10);
		metrics_http_run(m);
	}
	pthread_join(th, NULL);
}

static void test_http_roundtrip(void **state)
{
	(void)state;
	char err[256], listen[64];
	struct metrics_http *m = NULL;
	int port = 0;
	static struct client c;

	g_stats = mk_stats();
	for (int tries = 0; tries < 20 && !m; tries++) {
		port = 20000 + (int)((getpid() * 7 + tries * 131) % 40000);
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
		m = metrics_http_create(listen, render, NULL, err, sizeof(err));
	}
	if (!m)
		skip();   /* no free local port: cannot run here */
	assert_true(metrics_http_fd(m) >= 0);
	http_get(m, port, "GET /metrics HTTP/1.0\r\n\r\n", &c);
	assert_non_null(strstr(c.reply, "200 OK"));
	assert_non_null(strstr(c.reply, "text/plain; version=0.0.4"));
	assert_non_null(strstr(c.reply, "chirpd_cpis_in_total 12345\n"));
	http_get(m, port, "GET /nope HTTP/1.0\r\n\r\n", &c);
	assert_non_null(strstr(c.reply, "404"));
	http_get(m, port, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n", &c);
	assert_non_null(strstr(c.reply, "405"));
	metrics_http_destroy(m);
	/* a bad listen string is refused with a reason */
	assert_null(metrics_http_create("nowhere", render, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "nowhere"));
	stats_destroy(g_stats);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_mode_counters),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_loopback),
		cmocka_unit_test(test_live_counters),
		cmocka_unit_test(test_http_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
