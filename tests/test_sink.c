/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sink.c — the file sink (sink.h): records reach the file whole and in
 * order, with no loss while the queue has room (records of every size,
 * also across the end of the ring); a blocked file never blocks
 * sink_put, which drops whole records and counts them (records and bytes:
 * written + dropped = put); write errors are counted; a held sink writes
 * nothing; a follower writes after the sink it follows is destroyed; a
 * writer stuck on a full pipe gives up at its drain deadline; one producer
 * thread and the writer under TSan (tests/tsan.list).
 *
 * A record: its index (u32), its length (u32), then bytes made from both,
 * so a reader of the file can tell every record, its order and whether it
 * is whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "sink.h"
#include "stats.h"
#include "timeutil.h"

#define RMAX 1000                /* record_max of the tests' sinks */

static uint8_t pattern(uint32_t idx, uint32_t i)
{
	return (uint8_t)(idx * 131u + i * 7u + 1u);
}

/* Record idx of len bytes (>= 8) into buf. */
static void make_record(uint8_t *buf, uint32_t idx, uint32_t len)
{
	memcpy(buf, &idx, 4);
	memcpy(buf + 4, &len, 4);
	for (uint32_t i = 8; i < len; i++)
		buf[i] = pattern(idx, i);
}

/* Parse a stream of records: their indices into idx (at most max), the
 * count returned; fails the test on a record cut short or corrupt. */
static size_t parse_records(const uint8_t *b, size_t n, uint32_t *idx, size_t max)
{
	size_t o = 0, k = 0;

	while (o < n) {
		uint32_t id, len;

		assert_true(n - o >= 8);
		memcpy(&id, b + o, 4);
		memcpy(&len, b + o + 4, 4);
		assert_true(len >= 8 && len <= RMAX);
		assert_true(n - o >= len);          /* whole */
		for (uint32_t i = 8; i < len; i++)
			assert_int_equal(b[o + i], pattern(id, i));
		assert_true(k < max);
		idx[k++] = id;
		o += len;
	}
	return k;
}

static uint64_t counter(struct stats *st, enum stats_counter c)
{
	static struct stats_snapshot s;   /* big: off the stack */

	stats_snapshot(st, &s);
	return s.counter[c];
}

static struct sink *make(int fd, unsigned records, int drain_ms, struct stats *st)
{
	struct sink_params p = {
		.what = "test file", .fd = fd, .record_max = RMAX, .records = records,
		.drain_ms = drain_ms, .st = st, .c_bytes = ST_OUTPUT_FILE_BYTES,
		.c_drops = ST_OUTPUT_FILE_DROPS, .c_dropped_bytes = ST_OUTPUT_FILE_DROPPED_BYTES,
		.c_errors = ST_OUTPUT_FILE_ERRORS,
	};
	char err[256];
	struct sink *s = sink_create(&p, err, sizeof(err));

	if (!s)
		fail_msg("sink_create: %s", err);
	return s;
}

/* The whole content of fd (a memfd or a file). */
static uint8_t *slurp(int fd, size_t *n)
{
	off_t end = lseek(fd, 0, SEEK_END);
	uint8_t *b = malloc(end > 0 ? (size_t)end : 1);

	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)end, 0), end);
	*n = (size_t)end;
	return b;
}

static uint32_t len_of(uint32_t k)
{
	return 8 + (k * 37u) % (RMAX - 7);      /* 8 .. RMAX, not multiples of 8 */
}

/* ---- order and no loss while there is room ------------------------------ */

static void test_in_order_no_loss(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct stats *st = stats_create();
	int fd = memfd_create("test-sink", MFD_CLOEXEC);
	uint8_t rec[RMAX];
	uint32_t got[N];
	uint64_t put_bytes = 0;
	size_t n, k;
	uint8_t *b;
	struct sink *s;

	assert_non_null(st);
	assert_true(fd >= 0);
	s = make(fd, 3, 1000, st);
	sink_start(s);
	for (uint32_t i = 0; i < N; i++) {
		/* a queue of 3 records of RMAX: empty, it has room for any 3,
		 * so none is dropped (and the ring wraps mid-record often) */
		if (i % 3 == 0)
			assert_int_equal(sink_wait_idle(s, 5000), 0);
		make_record(rec, i, len_of(i));
		assert_int_equal(sink_put(s, rec, len_of(i)), 0);
		put_bytes += len_of(i);
	}
	assert_int_equal(sink_wait_idle(s, 5000), 0);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPS), 0);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_ERRORS), 0);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_BYTES), put_bytes);
	b = slurp(fd, &n);
	assert_int_equal(n, put_bytes);
	k = parse_records(b, n, got, N);
	assert_int_equal(k, N);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(got[i], i);
	free(b);
	sink_destroy(s);
	close(fd);
	stats_destroy(st);
}

/* A queue of 4 records of RMAX takes 4 at once whatever their sizes; a
 * record over record_max is refused and counted. */
static void test_capacity_and_too_large(void **state)
{
	(void)state;
	struct stats *st = stats_create();
	int fd = memfd_create("test-sink", MFD_CLOEXEC);
	uint8_t rec[RMAX + 8];
	struct sink *s;

	assert_true(fd >= 0);
	s = make(fd, 4, 1000, st);          /* held: nothing is written */
	for (uint32_t i = 0; i < 4; i++) {
		make_record(rec, i, RMAX);
		assert_int_equal(sink_put(s, rec, RMAX), 0);
	}
	make_record(rec, 4, 8);
	assert_int_equal(sink_put(s, rec, 8), -ENOBUFS);
	assert_int_equal(sink_put(s, rec, RMAX + 1), -EMSGSIZE);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPS), 2);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPPED_BYTES), 8 + RMAX + 1);
	usleep(50000);
	assert_int_equal(lseek(fd, 0, SEEK_END), 0);    /* held */
	sink_start(s);
	assert_int_equal(sink_wait_idle(s, 5000), 0);
	assert_int_equal(lseek(fd, 0, SEEK_END), 4 * RMAX);
	assert_int_equal(sink_put(s, rec, 8), 0);       /* room again */
	sink_destroy(s);                                 /* drains */
	assert_int_equal(lseek(fd, 0, SEEK_END), 4 * RMAX + 8);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_BYTES), 4 * RMAX + 8);
	close(fd);
	stats_destroy(st);
}

/* ---- a blocked file ----------------------------------------------------- */

/*
 * The file is a pipe nobody reads (its buffer: one page). sink_put never
 * waits: records go to the pipe until it is full, then to the queue until
 * it is full, then are dropped whole and counted. Once the pipe is read,
 * what was queued arrives, whole and in order; every record is either read
 * or counted as dropped, and the bytes add up.
 */
static void test_blocked_file_drops_and_counts(void **state)
{
	(void)state;
	enum { N = 400 };
	struct stats *st = stats_create();
	uint8_t rec[RMAX], *buf = malloc(N * RMAX);
	uint32_t got[N];
	uint64_t put_bytes = 0, slowest = 0;
	size_t have = 0, k;
	int pfd[2], drops = 0;
	struct sink *s;

	assert_non_null(buf);
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	assert_true(fcntl(pfd[1], F_SETPIPE_SZ, 4096) >= 4096);
	s = make(pfd[1], 4, 1000, st);
	sink_start(s);
	for (uint32_t i = 0; i < N; i++) {
		uint64_t t0 = mono_ns();
		int ret;

		make_record(rec, i, len_of(i));
		ret = sink_put(s, rec, len_of(i));
		if (mono_ns() - t0 > slowest)
			slowest = mono_ns() - t0;
		assert_true(ret == 0 || ret == -ENOBUFS);
		drops += ret == -ENOBUFS;
		put_bytes += len_of(i);
		if (i % 50 == 0)
			usleep(2000);               /* let the writer fill the pipe */
	}
	assert_true(slowest < 20000000);        /* never waits for the file */
	assert_true(drops > N / 2);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPS), drops);
	/* Read the pipe until everything queued has been written. */
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (uint64_t end = mono_ns() + 5000000000ull; mono_ns() < end;) {
		ssize_t r = read(pfd[0], buf + have, N * RMAX - have);

		if (r > 0)
			have += (size_t)r;
		else if (counter(st, ST_OUTPUT_FILE_BYTES) + counter(st, ST_OUTPUT_FILE_DROPPED_BYTES) ==
			 put_bytes && sink_wait_idle(s, 0) == 0)
			break;
		else
			usleep(1000);
	}
	assert_int_equal(counter(st, ST_OUTPUT_FILE_BYTES), have);
	assert_int_equal(have + counter(st, ST_OUTPUT_FILE_DROPPED_BYTES), put_bytes);
	k = parse_records(buf, have, got, N);
	assert_int_equal(k + (size_t)drops, N);
	for (size_t i = 1; i < k; i++)
		assert_true(got[i] > got[i - 1]);   /* input order */
	assert_int_equal(got[0], 0);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_ERRORS), 0);
	sink_destroy(s);
	close(pfd[0]);
	close(pfd[1]);
	free(buf);
	stats_destroy(st);
}

/* A writer on a pipe that stays full gives up at its drain deadline: the
 * rest is dropped and counted, and sink_destroy returns. */
static void test_destroy_gives_up_on_blocked_file(void **state)
{
	(void)state;
	struct stats *st = stats_create();
	uint8_t rec[RMAX];
	uint64_t put_bytes = 0, t0;
	int pfd[2];
	struct sink *s;

	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	assert_true(fcntl(pfd[1], F_SETPIPE_SZ, 4096) >= 4096);
	s = make(pfd[1], 8, 200, st);
	sink_start(s);
	for (uint32_t i = 0; i < 20; i++) {
		make_record(rec, i, RMAX);
		if (sink_put(s, rec, RMAX) == 0)
			put_bytes += RMAX;
		usleep(1000);
	}
	t0 = mono_ns();
	sink_destroy(s);
	assert_true(mono_ns() - t0 < 1500000000ull);
	assert_true(mono_ns() - t0 >= 150000000ull);
	assert_true(counter(st, ST_OUTPUT_FILE_BYTES) <= 4096 + 0u);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_BYTES) + counter(st, ST_OUTPUT_FILE_DROPPED_BYTES),
			 20 * RMAX);
	(void)put_bytes;
	close(pfd[0]);
	close(pfd[1]);
	stats_destroy(st);
}

/* Every write fails (/dev/full): one error per record, its bytes counted
 * as not written, sink_put still never fails for it. */
static void test_write_errors_counted(void **state)
{
	(void)state;
	struct stats *st = stats_create();
	uint8_t rec[RMAX];
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	struct sink *s;

	if (fd < 0)
		skip();
	s = make(fd, 4, 1000, st);
	sink_start(s);
	for (uint32_t i = 0; i < 10; i++) {
		make_record(rec, i, 100);
		assert_int_equal(sink_put(s, rec, 100), 0);
		assert_int_equal(sink_wait_idle(s, 5000), 0);
	}
	assert_int_equal(counter(st, ST_OUTPUT_FILE_ERRORS), 10);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPPED_BYTES), 1000);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_BYTES), 0);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPS), 0);
	sink_destroy(s);
	close(fd);
	stats_destroy(st);
}

/* ---- two sinks on one file: the follower writes after ------------------- */

static void test_follow_keeps_order(void **state)
{
	(void)state;
	struct stats *st = stats_create();
	int fd = memfd_create("test-sink", MFD_CLOEXEC);
	uint8_t rec[RMAX], *b;
	uint32_t got[16];
	struct sink *a, *bs, *c;
	size_t n;

	assert_true(fd >= 0);
	a = make(fd, 8, 1000, st);
	bs = make(fd, 8, 1000, st);
	c = make(fd, 8, 1000, st);
	sink_start(a);
	sink_follow(bs, a);
	for (uint32_t i = 0; i < 4; i++) {
		make_record(rec, 10 + i, 50);
		assert_int_equal(sink_put(bs, rec, 50), 0);   /* later records */
		make_record(rec, i, 50);
		assert_int_equal(sink_put(a, rec, 50), 0);
	}
	assert_int_equal(sink_wait_idle(a, 5000), 0);
	usleep(50000);
	assert_int_equal(lseek(fd, 0, SEEK_END), 4 * 50);   /* b waits */
	/* c follows b, which is itself held: c takes b's place when b goes */
	sink_follow(c, bs);
	make_record(rec, 20, 50);
	assert_int_equal(sink_put(c, rec, 50), 0);
	sink_destroy(a);
	assert_int_equal(sink_wait_idle(bs, 5000), 0);
	usleep(50000);
	assert_int_equal(lseek(fd, 0, SEEK_END), 8 * 50);   /* c still waits */
	sink_destroy(bs);
	assert_int_equal(sink_wait_idle(c, 5000), 0);
	b = slurp(fd, &n);
	assert_int_equal(parse_records(b, n, got, 16), 9);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(got[i], i);
		assert_int_equal(got[4 + i], 10 + i);
	}
	assert_int_equal(got[8], 20);
	free(b);
	sink_destroy(c);
	close(fd);
	stats_destroy(st);
}

/* A held sink that is destroyed writes nothing; what it held is dropped
 * and counted. */
static void test_held_destroyed(void **state)
{
	(void)state;
	struct stats *st = stats_create();
	int fd = memfd_create("test-sink", MFD_CLOEXEC);
	uint8_t rec[RMAX];
	struct sink *s;

	assert_true(fd >= 0);
	s = make(fd, 4, 1000, st);
	make_record(rec, 0, 64);
	assert_int_equal(sink_put(s, rec, 64), 0);
	sink_destroy(s);
	assert_int_equal(lseek(fd, 0, SEEK_END), 0);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPS), 1);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPPED_BYTES), 64);
	close(fd);
	stats_destroy(st);
}

/* ---- a producer thread against the writer (TSan) ------------------------ */

struct prod {
	struct sink *s;
	uint32_t n;
	uint64_t put_bytes;
	int drops;
};

static void *producer(void *arg)
{
	struct prod *p = arg;
	uint8_t rec[RMAX];

	for (uint32_t i = 0; i < p->n; i++) {
		int ret;

		make_record(rec, i, len_of(i));
		ret = sink_put(p->s, rec, len_of(i));
		p->drops += ret != 0;
		p->put_bytes += len_of(i);
		if (i % 16 == 0)
			sched_yield();
	}
	return NULL;
}

struct reader {
	int fd;
	uint8_t *buf;
	size_t cap, have;
	atomic_int stop;
};

static void *reader(void *arg)
{
	struct reader *r = arg;

	for (;;) {
		ssize_t n = read(r->fd, r->buf + r->have, r->cap - r->have);

		if (n > 0) {
			r->have += (size_t)n;
			continue;
		}
		if (atomic_load(&r->stop))
			break;
		usleep(200);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	enum { N = 20000 };
	struct stats *st = stats_create();
	struct prod p = { .n = N };
	struct reader r = { .cap = (size_t)N * RMAX };
	uint32_t *got = malloc(N * sizeof(*got));
	pthread_t tp, tr;
	int pfd[2];
	size_t k;

	r.buf = malloc(r.cap);
	assert_non_null(r.buf);
	assert_non_null(got);
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	r.fd = pfd[0];
	p.s = make(pfd[1], 4, 1000, st);
	sink_start(p.s);
	assert_int_equal(pthread_create(&tr, NULL, reader, &r), 0);
	assert_int_equal(pthread_create(&tp, NULL, producer, &p), 0);
	assert_int_equal(pthread_join(tp, NULL), 0);
	assert_int_equal(sink_wait_idle(p.s, 10000), 0);
	sink_destroy(p.s);
	usleep(20000);
	atomic_store(&r.stop, 1);
	assert_int_equal(pthread_join(tr, NULL), 0);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_DROPS), p.drops);
	assert_int_equal(counter(st, ST_OUTPUT_FILE_BYTES), r.have);
	assert_int_equal(r.have + counter(st, ST_OUTPUT_FILE_DROPPED_BYTES), p.put_bytes);
	k = parse_records(r.buf, r.have, got, N);
	assert_int_equal(k + (size_t)p.drops, N);
	for (size_t i = 1; i < k; i++)
		assert_true(got[i] > got[i - 1]);
	close(pfd[0]);
	close(pfd[1]);
	free(r.buf);
	free(got);
	stats_destroy(st);
}

static void test_bad_params(void **state)
{
	(void)state;
	struct sink_params p = { .what = "x", .fd = -1, .record_max = 10, .records = 1 };
	char err[256];

	assert_null(sink_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "x:"));
	p.fd = 1;
	p.records = 0;
	assert_null(sink_create(&p, err, sizeof(err)));
	p.records = 1;
	p.record_max = 0;
	assert_null(sink_create(&p, err, sizeof(err)));
	sink_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_no_loss),
		cmocka_unit_test(test_capacity_and_too_large),
		cmocka_unit_test(test_blocked_file_drops_and_counts),
		cmocka_unit_test(test_destroy_gives_up_on_blocked_file),
		cmocka_unit_test(test_write_errors_counted),
		cmocka_unit_test(test_follow_keeps_order),
		cmocka_unit_test(test_held_destroyed),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_bad_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
