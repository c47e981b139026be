/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sink.c — a file written by a thread of its own. See sink.h.
 *
 * The writer hands each record to write(2) (writev), or to the sink's
 * emit function (sink_emit_fn: zpub.c sends it on ZeroMQ) when it has one;
 * the queue, its ordering and the drop rule are the same for both.
 *
 * THE QUEUE (one producer, one consumer, no lock)
 *   A byte ring of cap bytes (a multiple of 8) and two free-running byte
 *   counts: head, advanced only by the producer (sink_put, the data
 *   thread), and tail, advanced only by the consumer (the writer). Bytes
 *   [tail, head) are queued records: an 8-byte header holding the
 *   record's length, then the record, padded to 8 bytes. A header never
 *   straddles the end of the ring (every offset is a multiple of 8); a
 *   record may, and is written with writev of its two parts, so the ring
 *   holds exactly cap bytes of records however they fall.
 *   - The producer writes the header and the record, then stores head:
 *     the store releases them, and the writer's load of head acquires
 *     them, so the writer reads only bytes already written.
 *   - The writer writes a record to the file, then stores tail: the store
 *     releases its reads of the record, and the producer's load of tail
 *     acquires them, so the producer never overwrites bytes the writer
 *     still reads.
 *   Each count has one writer, so neither needs a read-modify-write, and
 *   head - tail never exceeds cap, so the counts (64 bits) never wrap in
 *   practice.
 *
 * WAKING THE WRITER (no lock either)
 *   An idle writer sleeps on a futex word (wake). It announces itself
 *   (sleeping = 1), then looks at head once more; the producer publishes
 *   head, then looks at sleeping. Both store and load sequentially
 *   consistent, so at least one of them sees the other's store (Dekker):
 *   either the writer sees the record and does not sleep, or the producer
 *   sees the sleeper, bumps wake and wakes it (a futex wait on a value
 *   that has changed returns at once). The wait has a timeout (100 ms) on
 *   top, so nothing depends on this alone for more than that. The
 *   producer makes a system call only when the writer sleeps: at most one
 *   per record, never one that blocks.
 */
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "timeutil.h"

#define HDR_BYTES        8u
#define IDLE_WAIT_MS     100          /* writer's sleep when idle or held   */
#define FULL_WAIT_MS     100          /* writer's poll on a full pipe       */
#define ERROR_LOG_NS     60000000000ull  /* write errors: a line a minute  */
#define JOIN_MARGIN_MS   2000         /* beyond drain_ms before giving up   */
#define SINK_MAX_PARTS   4            /* sink_putv's iovcnt                 */

struct sink {
	/* producer's */
	_Alignas(64) _Atomic uint64_t head;
	uint64_t tail_seen;          /* the producer's last load of tail     */

	/* writer's */
	_Alignas(64) _Atomic uint64_t tail;
	uint64_t errors_unlogged;    /* write errors since the last log line */
	uint64_t error_logged_ns;
	int error_logged;

	/* shared, each field its own atomic */
	_Alignas(64) _Atomic uint32_t wake;   /* futex word                   */
	atomic_int sleeping;         /* the writer is (about to be) asleep   */
	atomic_int held;             /* 1: the writer writes nothing yet     */
	atomic_int stop;             /* sink_destroy: drain, then exit       */
	_Atomic uint64_t deadline_ns;   /* CLOCK_MONOTONIC end of the drain  */
	atomic_int abandoned;        /* sink_destroy gave up on the writer:
					it touches the counters no more     */

	/* constant after create */
	char *ring;
	size_t cap;
	int fd;                      /* our own duplicate                    */
	struct sink_params sp;
	char what[48];
	pthread_t thread;

	/* control thread's (see sink.h, THREADS) */
	struct sink *prev, *next;    /* sink_follow chain                    */
};

static size_t pad8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

/* A counter of the caller's stats. A writer left running by sink_destroy
 * stops counting, since the stats may go before it returns (shutdown);
 * that leaves only the moment between this check and the add. */
static void count(struct sink *s, enum stats_counter c, uint64_t n)
{
	if (s->sp.st && n && !atomic_load_explicit(&s->abandoned, memory_order_acquire))
		stats_add(s->sp.st, c, n);
}

static void futex_wake_one(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_wait_ms(_Atomic uint32_t *w, uint32_t val, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

/* Wake the writer whatever it waits for (control side: start, stop). */
static void kick(struct sink *s)
{
	atomic_fetch_add_explicit(&s->wake, 1, memory_order_release);
	futex_wake_one(&s->wake);
}

/* ---- producer ----------------------------------------------------------- */

static void drop(struct sink *s, size_t len)
{
	count(s, s->sp.c_drops, 1);
	count(s, s->sp.c_dropped_bytes, len);
}

/* Copy len bytes to ring offset off, wrapping at the end. */
static void ring_copy_in(struct sink *s, size_t off, const void *buf, size_t len)
{
	size_t first = len < s->cap - off ? len : s->cap - off;

	memcpy(s->ring + off, buf, first);
	memcpy(s->ring, (const char *)buf + first, len - first);
}

int sink_putv(struct sink *s, const struct iovec *iov, int iovcnt)
{
	uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t hdr = 0;
	size_t need, off;

	for (int i = 0; i < iovcnt; i++)
		hdr += iov[i].iov_len;
	if (iovcnt < 1 || iovcnt > SINK_MAX_PARTS || hdr > s->sp.record_max) {
		drop(s, (size_t)hdr);
		return -EMSGSIZE;
	}
	need = HDR_BYTES + pad8((size_t)hdr);
	if (s->cap - (head - s->tail_seen) < need) {
		s->tail_seen = atomic_load_explicit(&s->tail, memory_order_acquire);
		if (s->cap - (head - s->tail_seen) < need) {
			drop(s, (size_t)hdr);
			return -ENOBUFS;
		}
	}
	off = (size_t)(head % s->cap);
	memcpy(s->ring + off, &hdr, HDR_BYTES);
	off = (off + HDR_BYTES) % s->cap;
	for (int i = 0; i < iovcnt; i++) {
		ring_copy_in(s, off, iov[i].iov_base, iov[i].iov_len);
		off = (off + iov[i].iov_len) % s->cap;
	}
	atomic_store_explicit(&s->head, head + need, memory_order_seq_cst);
	if (atomic_load_explicit(&s->sleeping, memory_order_seq_cst)) {
		atomic_fetch_add_explicit(&s->wake, 1, memory_order_relaxed);
		futex_wake_one(&s->wake);
	}
	return 0;
}

int sink_put(struct sink *s, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return sink_putv(s, &iov, 1);
}

/* ---- writer ------------------------------------------------------------- */

static int past_deadline(struct sink *s)
{
	return atomic_load_explicit(&s->stop, memory_order_acquire) &&
	       mono_ns() >= atomic_load_explicit(&s->deadline_ns, memory_order_relaxed);
}

/* A failed write: counted; the first logged at once, the others at most
 * once a minute with their number. */
static void write_failed(struct sink *s, int e)
{
	uint64_t now = mono_ns();

	count(s, s->sp.c_errors, 1);
	if (!s->error_logged) {
		log_err("%s: write: %s (further errors are counted, logged at most once a minute)",
			s->what, e ? strerror(e) : "wrote nothing");
		s->error_logged = 1;
		s->error_logged_ns = now;
		return;
	}
	s->errors_unlogged++;
	if (now - s->error_logged_ns >= ERROR_LOG_NS) {
		log_err("%s: %llu more write errors, the last: %s", s->what,
			(unsigned long long)s->errors_unlogged, e ? strerror(e) : "wrote nothing");
		s->errors_unlogged = 0;
		s->error_logged_ns = now;
	}
}

/* The record of len bytes at ring position pos as at most two iovecs. */
static int record_iov(const struct sink *s, uint64_t pos, size_t len, struct iovec *iov)
{
	size_t off = (size_t)(pos % s->cap), first = len < s->cap - off ? len : s->cap - off;

	iov[0].iov_base = s->ring + off;
	iov[0].iov_len = first;
	iov[1].iov_base = s->ring;
	iov[1].iov_len = len - first;
	return len > first ? 2 : 1;
}

static void iov_advance(struct iovec *iov, int *n, size_t done)
{
	while (*n && done >= iov[0].iov_len) {
		done -= iov[0].iov_len;
		iov[0] = iov[1];
		(*n)--;
	}
	if (*n) {
		iov[0].iov_base = (char *)iov[0].iov_base + done;
		iov[0].iov_len -= done;
	}
}

/* The record to the sink's emit function: taken, dropped (the consumer has
 * no room) or failed, each counted (sink.h, sink_emit_fn). */
static void emit_record(struct sink *s, const struct iovec *iov, int n, size_t len)
{
	int ret = s->sp.emit(s->sp.emit_ctx, iov, n, len);

	if (ret == 0) {
		count(s, s->sp.c_bytes, len);
		if (s->sp.count_records)
			count(s, s->sp.c_records, 1);
	} else if (ret == -EAGAIN) {
		drop(s, len);
	} else {
		write_failed(s, -ret);
		count(s, s->sp.c_dropped_bytes, len);
	}
}

/*
 * Write the record of len bytes at pos, all of it: a full pipe (EAGAIN) is
 * waited on, a signal retried. A failed write ends the record (counted); so
 * does the drain deadline (the unwritten rest counts as dropped).
 */
static void write_record(struct sink *s, uint64_t pos, size_t len)
{
	struct iovec iov[2];
	int n = record_iov(s, pos, len, iov);
	size_t left = len;

	if (s->sp.emit) {
		emit_record(s, iov, n, len);
		return;
	}
	while (left) {
		ssize_t w = writev(s->fd, iov, n);

		if (w > 0) {
			count(s, s->sp.c_bytes, (uint64_t)w);
			left -= (size_t)w;
			iov_advance(iov, &n, (size_t)w);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = s->fd, .events = POLLOUT };

			if (past_deadline(s)) {
				drop(s, left);
				return;
			}
			(void)poll(&pf, 1, FULL_WAIT_MS);
			continue;
		}
		write_failed(s, w < 0 ? errno : 0);
		count(s, s->sp.c_dropped_bytes, left);
		return;
	}
	if (s->sp.count_records)
		count(s, s->sp.c_records, 1);
}

/* Sleep until the producer or the control side wakes us (or 100 ms):
 * while held, or while the queue is empty at tail. */
static void writer_sleep(struct sink *s, int held, uint64_t tail)
{
	uint32_t w = atomic_load_explicit(&s->wake, memory_order_acquire);

	atomic_store_explicit(&s->sleeping, 1, memory_order_seq_cst);
	if ((held ? atomic_load_explicit(&s->held, memory_order_acquire) :
		    atomic_load_explicit(&s->head, memory_order_seq_cst) == tail) &&
	    !atomic_load_explicit(&s->stop, memory_order_acquire))
		futex_wait_ms(&s->wake, w, IDLE_WAIT_MS);
	atomic_store_explicit(&s->sleeping, 0, memory_order_relaxed);
}

/* Count every queued record as dropped and empty the queue. */
static void drop_queued(struct sink *s, uint64_t tail)
{
	uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);

	while (tail != head) {
		uint64_t len;

		memcpy(&len, s->ring + tail % s->cap, HDR_BYTES);
		drop(s, (size_t)len);
		tail += HDR_BYTES + pad8((size_t)len);
	}
	atomic_store_explicit(&s->tail, tail, memory_order_release);
}

static void *writer(void *arg)
{
	struct sink *s = arg;
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);

	for (;;) {
		int stop = atomic_load_explicit(&s->stop, memory_order_acquire);
		uint64_t head, len;

		if (atomic_load_explicit(&s->held, memory_order_acquire)) {
			if (stop)
				break;         /* never started: nothing is written */
			writer_sleep(s, 1, tail);
			continue;
		}
		head = atomic_load_explicit(&s->head, memory_order_acquire);
		if (tail == head) {
			if (stop)
				break;
			writer_sleep(s, 0, tail);
			continue;
		}
		if (past_deadline(s))
			break;
		memcpy(&len, s->ring + tail % s->cap, HDR_BYTES);
		write_record(s, tail + HDR_BYTES, (size_t)len);
		tail += HDR_BYTES + pad8((size_t)len);
		atomic_store_explicit(&s->tail, tail, memory_order_release);
	}
	if (s->errors_unlogged)
		log_err("%s: %llu more write errors", s->what, (unsigned long long)s->errors_unlogged);
	drop_queued(s, tail);
	return NULL;
}

/* ---- control ------------------------------------------------------------ */

static int check_params(const struct sink_params *sp, char *err, size_t errlen)
{
	if ((sp->fd < 0 && !sp->emit) || !sp->record_max || !sp->records || sp->drain_ms < 0) {
		snprintf(err, errlen, "%s: sink needs a descriptor, a record size and a depth",
			 sp->what ? sp->what : "file");
		return -EINVAL;
	}
	if (sp->record_max > (SIZE_MAX / 2) / sp->records) {
		snprintf(err, errlen, "%s: queue of %u records of %zu bytes is too large",
			 sp->what ? sp->what : "file", sp->records, sp->record_max);
		return -EINVAL;
	}
	return 0;
}

/* Our own descriptor for the file, non-blocking so a full pipe never
 * keeps the writer from seeing a stop. */
static int dup_fd(struct sink *s, int fd, char *err, size_t errlen)
{
	int fl;

	s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (s->fd < 0) {
		snprintf(err, errlen, "%s: fcntl(F_DUPFD_CLOEXEC): %s", s->what, strerror(errno));
		return -1;
	}
	fl = fcntl(s->fd, F_GETFL);
	if (fl < 0 || fcntl(s->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "%s: fcntl(O_NONBLOCK): %s", s->what, strerror(errno));
		return -1;
	}
	return 0;
}

struct sink *sink_create(const struct sink_params *sp, char *err, size_t errlen)
{
	struct sink *s;
	int ret;

	if (check_params(sp, err, errlen) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->fd = -1;
	s->sp = *sp;
	snprintf(s->what, sizeof(s->what), "%s", sp->what ? sp->what : "file");
	s->sp.what = s->what;
	atomic_init(&s->held, 1);
	s->cap = (HDR_BYTES + pad8(sp->record_max)) * sp->records;
	s->ring = malloc(s->cap);
	if (!s->ring) {
		snprintf(err, errlen, "%s: queue of %zu bytes: out of memory", s->what, s->cap);
		goto fail;
	}
	memset(s->ring, 0, s->cap);          /* fault the pages in now */
	if (!sp->emit && dup_fd(s, sp->fd, err, errlen) < 0)
		goto fail;
	ret = pthread_create(&s->thread, NULL, writer, s);
	if (ret) {
		snprintf(err, errlen, "%s: pthread_create: %s", s->what, strerror(ret));
		goto fail;
	}
	return s;
fail:
	if (s->fd >= 0)
		close(s->fd);
	free(s->ring);
	free(s);
	return NULL;
}

void sink_start(struct sink *s)
{
	atomic_store_explicit(&s->held, 0, memory_order_release);
	kick(s);
}

void sink_follow(struct sink *s, struct sink *prev)
{
	if (!prev || prev == s) {
		sink_start(s);
		return;
	}
	while (prev->next)
		prev = prev->next;
	prev->next = s;
	s->prev = prev;
}

int sink_wait_idle(struct sink *s, int timeout_ms)
{
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (atomic_load_explicit(&s->tail, memory_order_acquire) !=
	       atomic_load_explicit(&s->head, memory_order_acquire)) {
		struct timespec ts = { 0, 1000000 };

		if (mono_ns() >= end)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* s leaves the chain: a sink held behind s waits for s's predecessor
 * instead, or starts when s had none. */
static void unchain(struct sink *s)
{
	struct sink *next = s->next;

	if (s->prev)
		s->prev->next = next;
	if (next) {
		next->prev = s->prev;
		if (!s->prev)
			sink_start(next);
	}
	s->prev = s->next = NULL;
}

void sink_destroy(struct sink *s)
{
	struct timespec dl;
	uint64_t end_ns;
	int ret;

	if (!s)
		return;
	end_ns = mono_ns() + (uint64_t)s->sp.drain_ms * 1000000ull;
	atomic_store_explicit(&s->deadline_ns, end_ns, memory_order_relaxed);
	atomic_store_explicit(&s->stop, 1, memory_order_release);
	kick(s);
	clock_gettime(CLOCK_REALTIME, &dl);   /* pthread_timedjoin_np's clock */
	dl.tv_sec += (s->sp.drain_ms + JOIN_MARGIN_MS) / 1000;
	dl.tv_nsec += (long)((s->sp.drain_ms + JOIN_MARGIN_MS) % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	ret = pthread_timedjoin_np(s->thread, NULL, &dl);
	unchain(s);
	if (ret) {
		/* Stuck in the kernel: leave it its memory and descriptor. */
		atomic_store_explicit(&s->abandoned, 1, memory_order_release);
		log_err("%s: writer did not stop (%s); left running", s->what, strerror(ret));
		pthread_detach(s->thread);
		return;
	}
	if (s->fd >= 0)
		close(s->fd);
	free(s->ring);
	free(s);
}
