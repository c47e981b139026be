/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_control — control socket round trip and throughput.
 *
 * A control server runs on its own thread (poll + control_dispatch, as in
 * chirpd's event loop) with two handlers: ping (built in) and a "status"
 * that returns a ~1 KiB object. Measured, each for a fixed number of
 * requests:
 *   1. one client, one request at a time: latency p50/p99/max, requests/s;
 *   2. the same while 250 other clients sit connected with half a request
 *      (the abuse case: they must not slow anyone down);
 *   3. 64 clients, each with one request in flight, multiplexed by one
 *      thread: requests/s.
 * Figures are for comparison on one machine, not pass/fail.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "control.h"
#include "log.h"

static struct control *srv;
static atomic_int stop_srv;
static char path[108];

static int h_status(void *ctx, const char *args, const struct control_peer *peer,
		    json_t *reply, char *err, size_t errlen)
{
	for (int i = 0; i < 40; i++) {
		char k[32];
		snprintf(k, sizeof(k), "counter_%02d", i);
		json_object_set_new(reply, k, json_integer(1234567 + i));
	}
	return 0;
}

static const struct control_cmd cmds[] = {
	{ .name = "status", .fn = h_status, .help = "about 1 KiB" },
	{ .name = NULL },
};

static void *server(void *arg)
{
	struct pollfd p = { .fd = control_fd(srv), .events = POLLIN };

	(void)arg;
	while (!atomic_load(&stop_srv))
		if (poll(&p, 1, 10) > 0)
			control_dispatch(srv);
	return NULL;
}

static int connect_srv(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send req, read until '\n'. 0 or -1. */
static int round_trip(int fd, const char *req, size_t len)
{
	char buf[4096];

	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return -1;
	for (;;) {
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r <= 0)
			return -1;
		if (buf[r - 1] == '\n')
			return 0;
	}
}

static int latency(const char *label, const char *req, int n)
{
	double *lat = malloc((size_t)n * sizeof(double)), t0, t1;
	int fd = connect_srv();

	if (!lat || fd < 0)
		return -1;
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		double a = now_s();
		if (round_trip(fd, req, strlen(req)) < 0) {
			fprintf(stderr, "bench_control: round trip failed\n");
			return -1;
		}
		lat[i] = now_s() - a;
	}
	t1 = now_s();
	close(fd);
	qsort(lat, (size_t)n, sizeof(double), cmp_d);
	printf("%-34s %8d %9.1f %9.1f %9.1f %10.0f\n", label, n, lat[n / 2] * 1e6,
	       lat[(size_t)(n * 0.99)] * 1e6, lat[n - 1] * 1e6, n / (t1 - t0));
	free(lat);
	return 0;
}

static int throughput(int clients, int per_client)
{
	int *fds = calloc((size_t)clients, sizeof(int));
	struct pollfd *p = calloc((size_t)clients, sizeof(*p));
	int *left = calloc((size_t)clients, sizeof(int));
	long done = 0, total = (long)clients * per_client;
	double t0;

	if (!fds || !p || !left)
		return -1;
	for (int i = 0; i < clients; i++) {
		fds[i] = connect_srv();
		if (fds[i] < 0)
			return -1;
		p[i].fd = fds[i];
		p[i].events = POLLIN;
		left[i] = per_client;
	}
	t0 = now_s();
	for (int i = 0; i < clients; i++)
		if (send(fds[i], "ping\n", 5, MSG_NOSIGNAL) != 5)
			return -1;
	while (done < total) {
		if (poll(p, (nfds_t)clients, 5000) <= 0)
			return -1;
		for (int i = 0; i < clients; i++) {
			char buf[4096];
			if (!(p[i].revents & POLLIN))
				continue;
			ssize_t r = recv(fds[i], buf, sizeof(buf), 0);
			if (r <= 0)
				return -1;
			for (ssize_t k = 0; k < r; k++) {
				if (buf[k] != '\n')
					continue;
				done++;
				if (--left[i] > 0 && send(fds[i], "ping\n", 5, MSG_NOSIGNAL) != 5)
					return -1;
			}
		}
	}
	printf("%-34s %8ld %9s %9s %9s %10.0f\n", "ping, 64 clients in parallel", total,
	       "-", "-", "-", total / (now_s() - t0));
	for (int i = 0; i < clients; i++)
		close(fds[i]);
	free(fds);
	free(p);
	free(left);
	return 0;
}

int main(void)
{
	char err[256], dir[] = "/tmp/chirp-bench-ctl-XXXXXX";
	int idle[250], rc = 0;
	pthread_t thr;
	struct rlimit rl;

	log_init("bench_control");
	log_set_level(LOG_ERR);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2048) {
		rl.rlim_cur = rl.rlim_max < 2048 ? rl.rlim_max : 2048;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/c.sock", dir);
	srv = control_create(path, 0660, "", cmds, NULL, err, sizeof(err));
	if (!srv) {
		fprintf(stderr, "bench_control: %s\n", err);
		return 1;
	}
	pthread_create(&thr, NULL, server, NULL);

	printf("%-34s %8s %9s %9s %9s %10s\n", "case", "requests", "p50 us", "p99 us",
	       "max us", "req/s");
	rc |= latency("ping, one client", "ping\n", 20000);
	rc |= latency("status (1 KiB reply), one client", "status\n", 20000);
	for (int i = 0; i < 250; i++) {
		idle[i] = connect_srv();
		if (idle[i] >= 0 && send(idle[i], "sta", 3, MSG_NOSIGNAL) != 3)
			rc = -1;
	}
	rc |= latency("ping, 250 half-sent clients idle", "ping\n", 20000);
	for (int i = 0; i < 250; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	usleep(100000);
	rc |= throughput(64, 500);

	atomic_store(&stop_srv, 1);
	pthread_join(thr, NULL);
	control_destroy(srv);
	rmdir(dir);
	return rc ? 1 : 0;
}
