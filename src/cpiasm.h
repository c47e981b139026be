/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpiasm.h — CPI assembly by timestamp: the state machine of chirp-recv,
 * with no sockets and no ring (both reach it through struct cpiasm_sink),
 * so that it can be fed packets in any order by a test.
 *
 * PLACEMENT
 *   Each channel is a stream of complex samples numbered by its timestamp
 *   (a sample index at sample_rate_hz). CPI k starts at sample
 *       t0_sample + k * pulses * pri_samples
 *   and its pulse p at that + p * pri_samples; the sample at offset g of a
 *   pulse (its gate) lands at [channel][p][g] of CPI k's slot when
 *   g < samples (the receive window; later ones are not stored). A packet
 *   may cross pulse and CPI boundaries. So a packet lands where its
 *   timestamp says whatever order it arrives in, and a lost one leaves a
 *   hole. CPI k is committed with first_sample k * pulses * samples.
 *
 * WINDOW
 *   At most `horizon` consecutive CPIs [lo, lo + horizon) are in flight,
 *   each holding a ring reservation taken in CPI order when a packet first
 *   touches it or one after it. CPIs are committed in order, never twice:
 *     - the oldest at once when it is whole;
 *     - every CPI before k when a packet of CPI k >= lo + horizon arrives;
 *     - every CPI up to the newest one whose first packet arrived
 *       deadline_ns ago or more (cpiasm_tick);
 *     - all of them at cpiasm_flush.
 *   A CPI committed with samples missing has them zeroed and carries
 *   CHIRP_RING_INCOMPLETE and the count (complex samples, all channels).
 *   A packet for a CPI already committed is late, one for samples already
 *   placed is a duplicate: both dropped and counted, nothing written.
 *
 * EPOCHS
 *   A packet more than epoch_jump_cpis CPIs before lo or after the window
 *   means the timestamps went backwards or jumped: every CPI in flight is
 *   committed (flagged as above), and a new epoch starts at the packet's
 *   CPI; its first CPI carries CHIRP_RING_DISCONTINUITY. No CPI mixes
 *   epochs, and no amount of wild timestamps makes the module wait.
 *
 * DEFERRED COPIES
 *   Receive threads that share one assembler under a lock need not hold
 *   it for the bulk of the work, the copy into the slot: between
 *   cpiasm_defer(a, q) and cpiasm_defer(a, NULL), cpiasm_put decides and
 *   records everything (bitmap, counts, window) but queues each copy in
 *   q, and the caller runs q with cpiasm_run_copies after letting the lock
 *   go, then takes it again for cpiasm_drain. A CPI with copies not yet
 *   run is never committed: cpiasm_drain passes it by (its copier drains
 *   after copying), and a commit that cannot wait (horizon, deadline,
 *   epoch, flush, reset) runs the caller's own queue first and then waits
 *   for the other threads' copies, which take no lock and so always end.
 *   A queue that is full copies at once, under the lock.
 *
 * COST
 *   cpiasm_create allocates everything (one bitmap of C*P*R bits and C
 *   counts per CPI in flight); put, tick, drain and flush allocate
 *   nothing. One thread at a time, but for cpiasm_run_copies.
 */
#ifndef CHIRP_CPIASM_H
#define CHIRP_CPIASM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Where CPIs go: chirp-recv's ring, or a test's buffers. */
struct cpiasm_sink {
	void *ctx;
	/* Reserve the next CPI's payload (the ring's chirp_ring_reserve_next):
	 * 0 and *payload; -ENOBUFS: no room, that CPI is dropped (the sink
	 * counts it); another negative errno: the sink failed (cpiasm_put
	 * returns it; call cpiasm_reset before going on). */
	int (*reserve)(void *ctx, void **payload);
	/* Publish the oldest reservation (chirp_ring_commit_partial). */
	int (*commit)(void *ctx, uint64_t first_sample, uint32_t flags, uint32_t missing);
};

struct cpiasm_params {
	unsigned channels, pulses, samples;  /* the ring's C, P, R, >= 1        */
	uint32_t ring_format;                /* CHIRP_RING_CF32 or CHIRP_RING_SC16 */
	uint64_t pri_samples;                /* pulse period, samples, >= samples
						(samples: a stream that holds
						only the receive windows)  */
	uint64_t t0_sample;                  /* CPI 0's first sample            */
	unsigned horizon;                    /* CPIs in flight, 1..CPIASM_MAX_HORIZON */
	uint64_t deadline_ns;                /* > 0                             */
	uint64_t epoch_jump_cpis;            /* >= 1                            */
};

/* At most: enough CPIs for a socket buffer of hundreds of MiB (the lag a
 * receive thread may take without loss) at any CPI of a few MiB a socket. */
#define CPIASM_MAX_HORIZON 256

/* What became of a packet (cpiasm_put). */
enum cpiasm_result {
	CPIASM_PLACED = 0,     /* some samples written (or all outside the window) */
	CPIASM_LATE,           /* its CPI was committed already          */
	CPIASM_DUPLICATE,      /* its samples were placed already        */
	CPIASM_RING_FULL,      /* its CPI was dropped: no ring slot (also
				  after that CPI left the window)         */
	CPIASM_BAD_CHANNEL,    /* channel >= channels                    */
	CPIASM_BEFORE_T0,      /* timestamp before t0_sample             */
};

struct cpiasm_stats {
	uint64_t cpis_complete, cpis_partial, cpis_dropped;  /* committed whole,
						committed with holes, no slot */
	uint64_t missing_samples;            /* zeroed, over every partial CPI  */
	uint64_t epochs;                     /* epochs started (the first too)  */
	uint64_t outside_samples;            /* past the receive window, skipped */
};

struct cpiasm;

/* NULL with a reason in err when p is out of range or memory is short. */
struct cpiasm *cpiasm_create(const struct cpiasm_params *p, const struct cpiasm_sink *sink,
			     char *err, size_t errlen);
void cpiasm_destroy(struct cpiasm *a);

/*
 * Place n complex samples of `channel` starting at stream sample `sample`,
 * read from src in source format src_fmt (enum vrt_plain_format: sc16 or
 * cf32, big- or little-endian), converted once into the ring's format in
 * the reserved slot. now_ns (CLOCK_MONOTONIC) starts the deadline of a CPI
 * this packet touches first. Returns an enum cpiasm_result, or a negative
 * errno from the sink.
 */
int cpiasm_put(struct cpiasm *a, unsigned channel, uint64_t sample, const void *src,
	       size_t n, unsigned src_fmt, uint64_t now_ns);

/*
 * 1 when placing `sample` would commit the oldest CPI in flight to make
 * room for its CPI (beyond the window, not so far as to start a new
 * epoch) while that oldest CPI still lacks samples of `channel`. A
 * receiver whose channels arrive on several threads asks before it
 * places a packet that runs ahead: when another thread has `channel`'s
 * datagrams waiting, it may hold the packet back for a while rather than
 * make the oldest CPI incomplete (chirp-recv). Reads only.
 */
int cpiasm_push_lacks(const struct cpiasm *a, uint64_t sample, unsigned channel);

/* Commit what is due at now_ns. 0 or a negative errno from the sink. */
int cpiasm_tick(struct cpiasm *a, uint64_t now_ns);

/* Nanoseconds until the next deadline (UINT64_MAX: none pending). */
uint64_t cpiasm_next_deadline(const struct cpiasm *a, uint64_t now_ns);

/* Commit every CPI in flight. 0 or a negative errno from the sink. */
int cpiasm_flush(struct cpiasm *a);

/* Forget every CPI in flight without committing (the sink was replaced:
 * its reservations are gone). The next packet starts a new epoch. */
void cpiasm_reset(struct cpiasm *a);

const struct cpiasm_stats *cpiasm_stats(const struct cpiasm *a);

/* One copy cpiasm_put queued (DEFERRED COPIES). */
struct cpiasm_copy {
	uint8_t *dst;                        /* into a reserved slot            */
	const uint8_t *src;                  /* into the caller's datagram      */
	size_t n;                            /* complex samples                 */
	unsigned src_fmt;                    /* enum vrt_plain_format           */
	uint32_t ring_format;
	_Atomic uint32_t *pending;           /* its CPI's copies not yet run    */
};

/* A receive thread's queue: c[0..n), room for cap. The sources must stay
 * as they are until the queue is run. */
struct cpiasm_copies {
	struct cpiasm_copy *c;
	size_t n, cap;
};

/* Queue cpiasm_put's copies in q (lock held), or copy at once: q NULL
 * (the default). */
void cpiasm_defer(struct cpiasm *a, struct cpiasm_copies *q);

/* Run q's copies and empty it. Needs no lock: it touches only the slots'
 * bytes and each CPI's pending count. */
void cpiasm_run_copies(struct cpiasm_copies *q);

/* Commit the leading CPIs that are whole and copied. 0 or a negative
 * errno from the sink. */
int cpiasm_drain(struct cpiasm *a);

/* Return once no copy is pending: the queue given to cpiasm_defer is run,
 * the other threads' copies waited for (before the sink's memory goes). */
void cpiasm_wait_copies(struct cpiasm *a);

#endif /* CHIRP_CPIASM_H */
