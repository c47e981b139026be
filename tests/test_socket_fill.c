/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_socket_fill.c — tool_socket_fill (src/tools/tool.c), what
 * chirp-recv's hold rule reads: a hold ends once the holding thread's own
 * socket is half full. On loopback: an empty socket reads 0, one fed
 * datagrams that nobody reads passes half full before the kernel drops
 * any, and reading them back empties it again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tools/tool.h"

#define DGRAM 1000

/* A UDP socket on 127.0.0.1, kernel-chosen port, receive buffer rcvbuf
 * bytes asked for (the kernel doubles it); its address in *a. */
static int udp_socket(int rcvbuf, struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	if (rcvbuf)
		assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)a, &len), 0);
	return fd;
}

/* The fill, once loopback has delivered what was sent: it is queued from
 * a softirq, which may run just after sendto returns (up to 1 s). */
static double fill_settled(int fd, double at_least)
{
	double f = 0;

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(tool_socket_fill(fd, &f), 0);
		if (f >= at_least)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return f;
}

static void test_fill(void **state)
{
	struct sockaddr_in a, b;
	int rx = udp_socket(64 * 1024, &a), tx = udp_socket(0, &b);
	char buf[DGRAM] = { 0 };
	double f = -1, last = 0;
	int sent = 0;

	(void)state;
	assert_int_equal(tool_socket_fill(rx, &f), 0);
	assert_true(f == 0.0);
	/* fill it, nobody reading, until it reads half full: each datagram
	 * raises the fill (and the kernel drops nothing before that) */
	while (last < 0.5) {
		assert_int_equal(sendto(tx, buf, sizeof(buf), 0, (struct sockaddr *)&a, sizeof(a)),
				 (ssize_t)sizeof(buf));
		sent++;
		f = fill_settled(rx, last + 1e-9);
		assert_true(f > last);
		last = f;
		assert_true(sent < 10000);
	}
	/* everything sent is there to read, and reading it empties the socket */
	for (int i = 0; i < sent; i++)
		assert_int_equal(recv(rx, buf, sizeof(buf), MSG_DONTWAIT), (ssize_t)sizeof(buf));
	assert_int_equal(recv(rx, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(tool_socket_fill(rx, &f), 0);
	assert_true(f == 0.0);
	close(tx);
	close(rx);
}

/* Not a socket: an error, and *frac untouched. */
static void test_not_a_socket(void **state)
{
	double f = 7;
	int fd[2];

	(void)state;
	assert_int_equal(pipe(fd), 0);
	assert_int_equal(tool_socket_fill(fd[0], &f), -ENOTSOCK);
	assert_true(f == 7);
	close(fd[0]);
	close(fd[1]);
	assert_int_equal(tool_socket_fill(-1, &f), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill),
		cmocka_unit_test(test_not_a_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
