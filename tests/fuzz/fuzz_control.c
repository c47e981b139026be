/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_control — libFuzzer target for the control socket's request path.
 *
 * One server (fake handlers) lives for the whole run on a socket in a temp
 * directory. Each input is sent by a fresh client connection, in chunks
 * whose sizes come from the input, then the client shuts down its side and
 * the server is dispatched until it closes the connection. Bit 0 of the
 * first byte decides whether this client may run mutating commands.
 * Oracles: no crash/leak/UB; the server always finishes with the client
 * (no hang); every reply is one line holding a JSON object with a boolean
 * "ok" and "proto":1; at most one reply per request line.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "control.h"
#include "log.h"

static struct control *srv;
static char sock_path[108];

static int h_ok(void *ctx, const char *args, const struct control_peer *peer,
		json_t *reply, char *err, size_t errlen)
{
	json_object_set_new(reply, "args", json_string(args));
	return 0;
}

static int h_fail(void *ctx, const char *args, const struct control_peer *peer,
		  json_t *reply, char *err, size_t errlen)
{
	snprintf(err, errlen, "rejected '%s'", args);
	return -EINVAL;
}

static const struct control_cmd cmds[] = {
	{ .name = "status", .fn = h_ok, .help = "x" },
	{ .name = "log-level", .fn = h_fail, .usage = "LEVEL", .mutating = 1, .help = "x" },
	{ .name = "reload", .fn = h_ok, .mutating = 1, .help = "x" },
	{ .name = "echo", .fn = h_ok, .usage = "ARGS", .help = "x" },
	{ .name = NULL },
};

static char sock_dir[64];

static void cleanup(void)
{
	control_destroy(srv);       /* unlinks the socket */
	srv = NULL;
	rmdir(sock_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[256], *dir = sock_dir;

	(void)argc; (void)argv;
	log_init("fuzz_control");
	log_set_level(LOG_ERR);
	snprintf(sock_dir, sizeof(sock_dir), "/tmp/chirp-fuzzctl-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(sock_path, sizeof(sock_path), "%s/c.sock", dir);
	srv = control_create(sock_path, 0660, "", cmds, NULL, err, sizeof(err));
	if (!srv) {
		fprintf(stderr, "control_create: %s\n", err);
		abort();
	}
	atexit(cleanup);
	return 0;
}

static void check_replies(char *buf, size_t len, size_t requests)
{
	size_t n = 0;
	char *p = buf, *e = buf + len;

	while (p < e) {
		char *nl = memchr(p, '\n', (size_t)(e - p));
		json_t *j;
		if (!nl)
			abort();                 /* partial reply line */
		*nl = '\0';
		j = json_loads(p, 0, NULL);
		if (!j || !json_is_object(j) || !json_is_boolean(json_object_get(j, "ok")) ||
		    json_integer_value(json_object_get(j, "proto")) != CONTROL_PROTO)
			abort();
		json_decref(j);
		n++;
		p = nl + 1;
	}
	if (n > requests)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *out = NULL;
	size_t outlen = 0, outcap = 0, off = 1, lines = 1;
	int fd, done = 0;

	if (size < 1)
		return 0;
	control_set_owner_uid(srv, (data[0] & 1) ? geteuid() : 4242, !(data[0] & 1) ? 0 : 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		abort();
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	for (size_t i = 1; i < size; i++)
		lines += data[i] == '\n';
	if (off >= size)
		shutdown(fd, SHUT_WR);   /* nothing to send */

	for (int iter = 0; iter < 100000 && !done; iter++) {
		/* Send the next chunk (1..256 bytes, size from the data). */
		if (off < size) {
			size_t chunk = 1 + data[off] % 256;
			if (chunk > size - off)
				chunk = size - off;
			ssize_t w = send(fd, data + off, chunk, MSG_NOSIGNAL);
			if (w > 0)
				off += (size_t)w;
			else if (w < 0 && errno != EAGAIN)
				off = size;      /* server hung up on us: fine */
			if (off >= size)
				shutdown(fd, SHUT_WR);
		}
		if (control_dispatch(srv) < 0)
			abort();
		/* Read whatever came back. */
		for (;;) {
			if (outcap - outlen < 4096) {
				outcap = outcap ? outcap * 2 : 8192;
				out = realloc(out, outcap);
				if (!out)
					abort();
			}
			ssize_t r = recv(fd, out + outlen, outcap - outlen, 0);
			if (r > 0) {
				outlen += (size_t)r;
				continue;
			}
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
				done = 1;
			break;
		}
		if (off >= size && !done) {
			struct pollfd p = { .fd = control_fd(srv), .events = POLLIN };
			poll(&p, 1, 1);
		}
	}
	if (!done) {
		fprintf(stderr, "server did not finish with the client\n");
		abort();
	}
	close(fd);
	check_replies(out, outlen, lines);
	free(out);
	/* Let the server notice the close before the next input. */
	control_dispatch(srv);
	return 0;
}
