/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sink.h — a file (or another consumer) written off the data thread: the
 * data thread hands whole records (a CPI's result for [output] file, a
 * CPI's JSON line for [detections] file, a message for [publish]: zpub.h)
 * to a bounded queue; a writer thread of the sink's own writes them to the
 * file, or hands them to the sink's emit function, in order.
 *
 * WHY
 *   A write to a slow disk, a full pipe or a stalled network file system
 *   blocks for as long as the device wants. On the data thread that stalls
 *   every CPI behind it; here it stalls only the writer, and the queue
 *   absorbs the difference until it is full.
 *
 * LOSS
 *   sink_put never waits. A record the queue has no room for is dropped
 *   whole and counted (records and bytes); the file never holds part of a
 *   record because of a drop. A failed write is counted (errors) and
 *   logged, the first at once and then at most one line a minute with the
 *   count; the record it failed on is lost (the file may hold its first
 *   part), the next record is tried. At every moment: bytes written +
 *   bytes dropped + bytes queued = bytes put (a record abandoned half
 *   written counts its unwritten bytes as dropped).
 *
 * LIFETIME AND ORDER
 *   A sink starts held: it queues but writes nothing until sink_start, or,
 *   after sink_follow(s, prev), until prev is destroyed, so two sinks on one
 *   file (a reload that keeps the file hands it from one generation to the
 *   next) write their records in order. sink_destroy gives the writer up to
 *   drain_ms to write what is queued (the rest is dropped and counted),
 *   joins it and closes the sink's own descriptor. The writer inherits the
 *   creating thread's CPU affinity and scheduling: create sinks on the main
 *   thread, never on the data thread's isolated CPU.
 *
 * THREADS
 *   sink_put: one producer thread (the data thread). sink_start,
 *   sink_follow: the producer, or any thread before the first put.
 *   sink_create, sink_destroy, sink_wait_idle: one control thread, which
 *   also destroys every sink linked by sink_follow (the links are handed
 *   over under the caller's own lock: pipeline.c's swap). Nothing is
 *   allocated after sink_create.
 */
#ifndef CHIRP_SINK_H
#define CHIRP_SINK_H

#include <stddef.h>
#include <sys/uio.h>

#include "stats.h"

struct sink;

/*
 * A consumer other than a file: called on the writer thread with one whole
 * record of len bytes in iovcnt (1 or 2) parts. Returns 0 (taken: len
 * counted in c_bytes), -EAGAIN (the consumer has no room: the record is
 * dropped whole, counted in c_drops and c_dropped_bytes) or another
 * negative errno (failed: counted in c_errors and c_dropped_bytes, logged
 * as a failed write). It must not block for long: sink_destroy's drain
 * waits for it.
 */
typedef int (*sink_emit_fn)(void *ctx, const struct iovec *iov, int iovcnt, size_t len);

struct sink_params {
	const char *what;        /* names the file in the log: "[output] file" */
	int fd;                  /* written to; duplicated, the caller's fd
				    stays the caller's. Made non-blocking (the
				    flag is the open file's, shared with fd).
				    Unused (-1) with emit.                    */
	sink_emit_fn emit;       /* NULL: write to fd; else records go here */
	void *emit_ctx;          /* emit's first argument                    */
	size_t record_max;       /* bytes of the largest record, > 0          */
	unsigned records;        /* the queue holds this many records of
				    record_max bytes (more smaller ones), >= 1 */
	int drain_ms;            /* sink_destroy: time to write what is queued */
	struct stats *st;        /* counters (stats_add), NULL: none          */
	enum stats_counter c_bytes;         /* bytes written                  */
	enum stats_counter c_drops;         /* records dropped                */
	enum stats_counter c_dropped_bytes; /* bytes of records dropped       */
	enum stats_counter c_errors;        /* failed writes                  */
	int count_records;                  /* 1: count c_records too         */
	enum stats_counter c_records;       /* records written whole          */
};

/* Allocates the queue (faulted in now) and starts the writer, held. NULL
 * with a reason on failure. */
struct sink *sink_create(const struct sink_params *sp, char *err, size_t errlen);

/*
 * Queue a copy of [buf, buf + len). Returns 0, or -ENOBUFS (no room now) or
 * -EMSGSIZE (len > record_max): the record is dropped and counted. Never
 * blocks, never allocates. Producer only.
 */
int sink_put(struct sink *s, const void *buf, size_t len);

/* The same for one record made of iovcnt (<= 4) parts, queued together:
 * a header and a payload without a copy into a scratch buffer first. */
int sink_putv(struct sink *s, const struct iovec *iov, int iovcnt);

/* Let the writer write. */
void sink_start(struct sink *s);

/*
 * s writes once prev is destroyed (prev NULL or prev == s: sink_start).
 * With prev itself held behind another sink, s takes prev's place in the
 * chain when prev is destroyed.
 */
void sink_follow(struct sink *s, struct sink *prev);

/* Wait up to timeout_ms until every record put so far is written (or
 * dropped). Returns 0 or -ETIMEDOUT. Control thread (tests, shutdown). */
int sink_wait_idle(struct sink *s, int timeout_ms);

/*
 * Drain (up to drain_ms), stop and free; starts the sink that follows s.
 * A writer stuck in a write(2) the kernel does not return from (a dead
 * network file system) is left running with its memory and descriptor,
 * and logged. NULL is a no-op.
 */
void sink_destroy(struct sink *s);

#endif /* CHIRP_SINK_H */
