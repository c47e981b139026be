/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp_sink — the host's own UDP receive limits, for scripts/bench-net.sh:
 *
 *   udp_sink sink [--naive] [--port P] [--threads N] [--rcvbuf BYTES]
 *                 [--idle-ms MS] [--header BYTES]
 *       a discard sink on 127.0.0.1:P (0: the kernel's choice, printed as
 *       "udp_sink: listening on port P" on stderr). Default: N threads,
 *       each with its own socket (SO_REUSEPORT), taking up to 64 datagrams
 *       per recvmmsg into buffers that are then dropped: the ceiling of a
 *       kernel-socket receiver on this host. --naive: one thread, one
 *       recvfrom per datagram, the kernel's default socket buffer — the
 *       loop most receivers start as. It counts datagrams and bytes from
 *       the first datagram to the last and exits --idle-ms (default 500)
 *       after the last one, printing one line:
 *           udp_sink mode=M threads=N datagrams=D bytes=B seconds=S
 *           gbps=G kernel_drops=K
 *       gbps counts payload: each datagram's bytes less --header (the
 *       VRT header of chirp-send's packets, so that every row of the
 *       benchmark counts the same bits).
 *
 *   udp_sink blast --dest 127.0.0.1:P --bytes B [--threads N] [--seconds S]
 *       N threads, each on its own socket (its own source port: its own
 *       flow), send B-byte datagrams with sendmmsg, 64 a call, unpaced, for
 *       S seconds (default 5); prints "udp_sink blast datagrams=D bytes=B".
 *
 * Loopback only: the sink binds 127.0.0.1 and the blaster refuses any
 * other destination. Without arguments it says how it is run and exits 77
 * (skipped), so scripts/bench-all.sh passes over it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL 40
#endif

#define BATCH 64
#define MAX_BYTES 65536
#define MAX_THREADS 64

struct opts {
	int naive, port, threads, idle_ms, header, bytes;
	long rcvbuf;
	double seconds;
};

struct worker {
	pthread_t th;
	int fd;
	const struct opts *o;
	uint64_t datagrams, bytes, drops;
	uint64_t first_ns, last_ns;     /* 0: nothing received                 */
};

static _Atomic int stop_all;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int parse_int(const char *what, const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "udp_sink: %s '%s': want an integer in %ld..%ld\n", what, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- sink -------------------------------------------------------------- */

static int open_sink(const struct opts *o, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0) {
		perror("udp_sink: socket");
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) < 0) {
		perror("udp_sink: setsockopt");
		close(fd);
		return -1;
	}
	if (!o->naive && o->rcvbuf > 0) {
		int v = (int)o->rcvbuf;
		/* SO_RCVBUFFORCE passes net.core.rmem_max as root; else the
		 * kernel caps SO_RCVBUF at it */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0 &&
		    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) < 0)
			perror("udp_sink: SO_RCVBUF");
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("udp_sink: bind");
		close(fd);
		return -1;
	}
	return fd;
}

static void note_ovfl(struct worker *w, struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
			uint32_t v;
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			w->drops = v;       /* the socket's running count */
		}
}

static void account(struct worker *w, size_t n, uint64_t bytes)
{
	uint64_t t = now_ns();

	if (!w->first_ns)
		w->first_ns = t;
	w->last_ns = t;
	w->datagrams += n;
	w->bytes += bytes;
}

/* The receive loops poll with a 50 ms timeout (SO_RCVTIMEO) so that they
 * see the idle deadline; the deadline is the last datagram of ANY thread. */
static _Atomic uint64_t last_any_ns;

static int idle_over(const struct opts *o)
{
	uint64_t l = atomic_load(&last_any_ns);

	return atomic_load(&stop_all) ||
	       (l && now_ns() - l > (uint64_t)o->idle_ms * 1000000u);
}

static void *naive_loop(void *arg)
{
	struct worker *w = arg;
	static uint8_t buf[MAX_BYTES];

	while (!idle_over(w->o)) {
		ssize_t n = recvfrom(w->fd, buf, sizeof(buf), 0, NULL, NULL);
		if (n < 0)
			continue;   /* EAGAIN: the poll timeout */
		account(w, 1, (uint64_t)n);
		atomic_store_explicit(&last_any_ns, w->last_ns, memory_order_relaxed);
	}
	return NULL;
}

static void *mmsg_loop(void *arg)
{
	struct worker *w = arg;
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	uint8_t ctl[BATCH][CMSG_SPACE(sizeof(uint32_t))];
	uint8_t (*buf)[MAX_BYTES] = malloc(sizeof(*buf) * BATCH);

	if (!buf) {
		fprintf(stderr, "udp_sink: out of memory\n");
		atomic_store(&stop_all, 1);
		return NULL;
	}
	while (!idle_over(w->o)) {
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ buf[i], MAX_BYTES };
			msg[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1,
				.msg_control = ctl[i], .msg_controllen = sizeof(ctl[i]) };
		}
		int n = recvmmsg(w->fd, msg, BATCH, MSG_WAITFORONE, NULL);
		if (n <= 0)
			continue;
		uint64_t b = 0;
		for (int i = 0; i < n; i++)
			b += msg[i].msg_len;
		note_ovfl(w, &msg[n - 1].msg_hdr);
		account(w, (size_t)n, b);
		atomic_store_explicit(&last_any_ns, w->last_ns, memory_order_relaxed);
	}
	free(buf);
	return NULL;
}

static int run_sink(struct opts *o)
{
	static struct worker w[MAX_THREADS];
	struct timeval tv = { 0, 50000 };
	int nt = o->naive ? 1 : o->threads, port = o->port, rc = 1;
	uint64_t d = 0, b = 0, k = 0, t0 = UINT64_MAX, t1 = 0;

	for (int i = 0; i < nt; i++) {
		w[i] = (struct worker){ .o = o, .fd = open_sink(o, port) };
		if (w[i].fd < 0)
			goto out;
		if (setsockopt(w[i].fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
			perror("udp_sink: SO_RCVTIMEO");
			goto out;
		}
		if (i == 0) {
			struct sockaddr_in a;
			socklen_t al = sizeof(a);
			if (getsockname(w[0].fd, (struct sockaddr *)&a, &al) < 0) {
				perror("udp_sink: getsockname");
				goto out;
			}
			port = ntohs(a.sin_port);
		}
	}
	fprintf(stderr, "udp_sink: listening on port %d\n", port);
	for (int i = 0; i < nt; i++)
		if (pthread_create(&w[i].th, NULL, o->naive ? naive_loop : mmsg_loop, &w[i])) {
			fprintf(stderr, "udp_sink: pthread_create failed\n");
			atomic_store(&stop_all, 1);
			for (int j = 0; j < i; j++)
				pthread_join(w[j].th, NULL);
			goto out;
		}
	for (int i = 0; i < nt; i++) {
		pthread_join(w[i].th, NULL);
		d += w[i].datagrams;
		b += w[i].bytes;
		k += w[i].drops;
		if (w[i].first_ns && w[i].first_ns < t0)
			t0 = w[i].first_ns;
		if (w[i].last_ns > t1)
			t1 = w[i].last_ns;
	}
	double s = d > 1 ? (double)(t1 - t0) * 1e-9 : 0;
	double pay = (double)b - (double)d * o->header;
	printf("udp_sink mode=%s threads=%d datagrams=%" PRIu64 " bytes=%" PRIu64
	       " seconds=%.3f gbps=%.3f kernel_drops=%" PRIu64 "\n", o->naive ? "naive" : "mmsg",
	       nt, d, b, s, s > 0 ? pay * 8 / s / 1e9 : 0.0, k);
	rc = 0;
out:
	for (int i = 0; i < nt; i++)
		if (w[i].fd > 0)
			close(w[i].fd);
	return rc;
}

/* ---- blaster ----------------------------------------------------------- */

struct blaster {
	pthread_t th;
	int fd;
	double seconds;
	int bytes;
	uint64_t sent;
};

static void *blast_loop(void *arg)
{
	struct blaster *bl = arg;
	struct mmsghdr msg[BATCH];
	struct iovec iov;
	uint8_t *buf = calloc(1, (size_t)bl->bytes);
	uint64_t end = now_ns() + (uint64_t)(bl->seconds * 1e9);

	if (!buf)
		return NULL;
	iov = (struct iovec){ buf, (size_t)bl->bytes };
	for (int i = 0; i < BATCH; i++)
		msg[i].msg_hdr = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
	while (now_ns() < end) {
		int n = sendmmsg(bl->fd, msg, BATCH, 0);
		if (n > 0)
			bl->sent += (uint64_t)n;
		/* ECONNREFUSED (no sink yet), ENOBUFS: go on */
	}
	free(buf);
	return NULL;
}

static int run_blast(const struct opts *o, const char *dest)
{
	static struct blaster bl[MAX_THREADS];
	struct sockaddr_in a = { .sin_family = AF_INET };
	char host[64];
	long port;
	const char *colon = strrchr(dest, ':');
	uint64_t sent = 0;
	int rc = 1, nt = o->threads, started = 0;

	if (!colon || (size_t)(colon - dest) >= sizeof(host) ||
	    parse_int("--dest port", colon + 1, 1, 65535, &port) < 0)
		return fprintf(stderr, "udp_sink: --dest '%s': want 127.0.0.1:PORT\n", dest), 2;
	memcpy(host, dest, (size_t)(colon - dest));
	host[colon - dest] = 0;
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1 || ntohl(a.sin_addr.s_addr) >> 24 != 127)
		return fprintf(stderr, "udp_sink: --dest '%s': loopback (127.x.x.x) only\n", dest), 2;
	a.sin_port = htons((uint16_t)port);
	for (int i = 0; i < nt; i++) {
		bl[i] = (struct blaster){ .seconds = o->seconds, .bytes = o->bytes,
			.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) };
		if (bl[i].fd < 0 || connect(bl[i].fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			perror("udp_sink: blaster socket");
			goto out;
		}
	}
	for (; started < nt; started++)
		if (pthread_create(&bl[started].th, NULL, blast_loop, &bl[started])) {
			fprintf(stderr, "udp_sink: pthread_create failed\n");
			break;
		}
	for (int i = 0; i < started; i++) {
		pthread_join(bl[i].th, NULL);
		sent += bl[i].sent;
	}
	if (started == nt) {
		printf("udp_sink blast threads=%d datagrams=%" PRIu64 " bytes=%" PRIu64 "\n", nt, sent,
		       sent * (uint64_t)o->bytes);
		rc = 0;
	}
out:
	for (int i = 0; i < nt; i++)
		if (bl[i].fd > 0)
			close(bl[i].fd);
	return rc;
}

/* ---- main -------------------------------------------------------------- */

static int usage(int rc)
{
	fprintf(stderr, "usage: udp_sink sink [--naive] [--port P] [--threads N] [--rcvbuf BYTES]\n"
			"                     [--idle-ms MS] [--header BYTES]\n"
			"       udp_sink blast --dest 127.0.0.1:P --bytes B [--threads N] [--seconds S]\n"
			"(run by scripts/bench-net.sh)\n");
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { .threads = 1, .idle_ms = 500, .rcvbuf = 64L << 20, .seconds = 5,
			  .bytes = 8220 };
	const char *dest = NULL;
	long v;

	if (argc < 2) {
		fprintf(stderr, "udp_sink: skipped: run by scripts/bench-net.sh\n");
		return usage(77);
	}
	int blast = !strcmp(argv[1], "blast");
	if (!blast && strcmp(argv[1], "sink"))
		return usage(2);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--naive")) {
			o.naive = 1;
			continue;
		}
		if (!val)
			return usage(2);
		i++;
		if (!strcmp(a, "--dest"))
			dest = val;
		else if (!strcmp(a, "--seconds")) {
			if (parse_int(a, val, 1, 3600, &v) < 0)
				return 2;
			o.seconds = (double)v;
		} else {
			static const struct { const char *name; long lo, hi; } t[] = {
				{ "--port", 0, 65535 }, { "--threads", 1, MAX_THREADS },
				{ "--idle-ms", 10, 60000 }, { "--header", 0, 1024 },
				{ "--bytes", 1, 65507 }, { "--rcvbuf", 0, 1L << 30 },
			};
			size_t k;
			for (k = 0; k < sizeof(t) / sizeof(t[0]) && strcmp(a, t[k].name); k++)
				;
			if (k == sizeof(t) / sizeof(t[0]))
				return usage(2);
			if (parse_int(a, val, t[k].lo, t[k].hi, &v) < 0)
				return 2;
			switch (k) {
			case 0: o.port = (int)v; break;
			case 1: o.threads = (int)v; break;
			case 2: o.idle_ms = (int)v; break;
			case 3: o.header = (int)v; break;
			case 4: o.bytes = (int)v; break;
			default: o.rcvbuf = v; break;
			}
		}
	}
	if (blast)
		return dest ? run_blast(&o, dest) : usage(2);
	return run_sink(&o);
}
