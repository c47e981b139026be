/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h — chirpd's flight recorder: the stage timestamps of the last N
 * CPIs, kept in memory allocated once, so an operator can see afterwards
 * why one CPI was late (chirpctl trace).
 *
 * WHAT A RECORD HOLDS
 *   One record per CPI the data thread retired (delivered, dropped for a
 *   full output ring, or skipped), in retirement order = input order. The
 *   stamps are CLOCK_MONOTONIC nanoseconds; the input commit time, which
 *   the producer writes as CLOCK_REALTIME (timestamp_ns), is converted with
 *   the offset between the two clocks read at peek. A stamp of 0 means the
 *   stage did not happen for this CPI (a dropped result has no output
 *   commit).
 *
 * CONCURRENCY CONTRACT
 *   One writer (the data thread) calls trace_put(); any number of readers
 *   on other threads call trace_read()/trace_get() without ever blocking
 *   the writer. Each record is a seqlock of its own: the writer makes its
 *   version odd, stores the fields (relaxed atomics) with the record's
 *   number, makes it even with a release store; a reader loads the version
 *   (acquire), copies, fences (acquire) and loads the version again, and
 *   drops the copy when the two differ, were odd, or the number is not the
 *   one it wanted (the writer lapped it: that record is no longer one of
 *   the last N anyway). The count of records written is a release store
 *   after the record's even version, so a reader that sees the count sees
 *   the record. Nothing allocates after trace_create().
 */
#ifndef CHIRP_TRACE_H
#define CHIRP_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_MAX_RECORDS 1048576u   /* sanity bound on [trace] records */

/* Stage stamps of one CPI, CLOCK_MONOTONIC ns (0 = did not happen). */
enum trace_stamp {
	TR_IN_COMMIT = 0,   /* producer committed the input block (converted) */
	TR_PEEK,            /* data thread took it from the input ring         */
	TR_SUBMIT,          /* handed to the backend (pc_submit called)        */
	TR_SUBMITTED,       /* pc_submit returned (host cost of the submission) */
	TR_INPUT_DONE,      /* backend reported the input slot consumed        */
	TR_OUTPUT_DONE,     /* backend reported the result complete            */
	TR_RELEASE,         /* input slot released to the producer             */
	TR_OUT_COMMIT,      /* result committed to the output ring             */
	TR_STAMPS
};

/* Where in the data thread's loop a stall was noticed: the checkpoint at
 * its end (the gap ran from the previous checkpoint). */
enum trace_where {
	TW_NONE = 0,
	TW_TAKE,            /* before pc_submit: input peek, checks, output
			       reservation                                  */
	TW_RETIRE,          /* before a CPI's record: pc_poll, input release,
			       output commit, copies into the file sinks    */
	TW_POLL,            /* top of the loop: a round of polling that
			       retired nothing                              */
	TW_WHERES
};

/* Record flags. */
#define TRACE_DELIVERED    0x01u  /* result committed to the output ring   */
#define TRACE_DROPPED      0x02u  /* output ring full: result not delivered */
#define TRACE_SKIPPED      0x04u  /* not computed (bad length, redelivered) */
#define TRACE_OVER_BUDGET  0x08u  /* latency above the budget              */
#define TRACE_NONFINITE    0x10u  /* input held NaN/Inf                    */
#define TRACE_DISCONT      0x20u  /* result flagged DISCONTINUITY          */
#define TRACE_UNKNOWN_MODE 0x40u  /* the CPI's mode is not configured: no
				     filter applied, result zeroed         */

struct trace_cpi {
	uint64_t seq;               /* input block number                      */
	uint64_t first_sample;
	uint64_t timestamp_ns;      /* producer's commit time, CLOCK_REALTIME  */
	uint32_t mode;              /* the CPI's radar mode, as the producer
				       committed it (chirp_ring_block.mode)   */
	uint64_t t[TR_STAMPS];      /* CLOCK_MONOTONIC ns, see enum trace_stamp */
	uint64_t latency_ns;        /* output commit - input commit (0: none)   */
	uint64_t device_ns;         /* the backend's own time for the CPI, e.g.
				       GPU events from start to result (0 =
				       not measured)                          */
	uint32_t fill;              /* input blocks waiting at peek, this one
				       included (queueing in front of chirpd) */
	uint32_t in_flight;         /* CPIs in the backend when it was submitted */
	uint32_t recomputed;        /* CPU backend: blocks of rows recomputed
				       because their worker was stalled      */
	uint32_t chunks;            /* CUDA backend: row chunks the CPI was cut
				       into (0: not said)                     */
	uint32_t woken;             /* CPU backend: worker threads asleep when
				       the CPI was handed out (pc_done.woken) */
	uint32_t absent;            /* CPU backend: threads that computed none
				       of the CPI's blocks (pc_done.absent)  */
	uint32_t flags;             /* TRACE_*                                 */
	uint64_t stall_ns;          /* the longest data-thread stall (stall.h)
				       that overlapped the CPI's time in
				       chirpd, input commit to result: a gap
				       of STALL_THRESHOLD_NS or more between
				       two checkpoints of its polling loop
				       (0: none)                              */
	uint64_t stall_cpu_ns;      /* the data thread's CPU time within it    */
	uint32_t stall_kind;        /* enum stall_kind: what the thread was
				       doing (running, blocked, preempted,
				       stolen)                                */
	uint32_t stall_where;       /* enum trace_where: the checkpoint that
				       noticed it                             */
};

struct trace;

/* A recorder of the last n records (1..TRACE_MAX_RECORDS); NULL on ENOMEM
 * or a bad n. */
struct trace *trace_create(unsigned n);
void trace_destroy(struct trace *t);
unsigned trace_capacity(const struct trace *t);

/* ---- the data thread (single writer) ---------------------------------- */
void trace_put(struct trace *t, const struct trace_cpi *r);

/* ---- any thread -------------------------------------------------------- */

/* Records written since create (the newest has number total - 1). */
uint64_t trace_total(const struct trace *t);

/*
 * Copy the newest records, at most max, oldest first, into out. Returns
 * how many were copied (records the writer overwrote while they were being
 * read are left out, so fewer than max can come back on a busy recorder).
 */
unsigned trace_read(const struct trace *t, struct trace_cpi *out, unsigned max);

/* Record number k (0 = the first ever written): 0 and *out filled, or
 * -ENOENT if it is not (or no longer) in the recorder. */
int trace_get(const struct trace *t, uint64_t k, struct trace_cpi *out);

/* "in_commit", "peek", ... for the stamps (JSON keys, log lines). */
const char *trace_stamp_name(enum trace_stamp s);

/* "take", "retire", "poll"; "none" for TW_NONE. */
const char *trace_where_name(enum trace_where w);

/*
 * One line for the log: "seq 123 mode 2 latency 12.31 ms (budget 10 ms): peek
 * +0.04, submit +0.05, ..." with every stamp relative to the input commit
 * in ms, and the CPI's data-thread stall if it had one. Returns snprintf's
 * value.
 */
int trace_format(const struct trace_cpi *r, uint64_t budget_ns, char *buf, size_t len);

#endif /* CHIRP_TRACE_H */
