/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.h — chirpd's counters, latency histogram and per-stage times.
 *
 * CONCURRENCY CONTRACT
 *   One writer updates the data-path counters (the data thread), between
 *   stats_write_begin() and stats_write_end(); any number of readers take
 *   consistent snapshots with stats_snapshot() without ever blocking the
 *   writer (a seqlock: the writer makes the sequence odd, updates, makes it
 *   even; a reader retries while it saw an odd or changed sequence). Every
 *   field is a C11 atomic accessed relaxed, the sequence with
 *   release/acquire fences, so the scheme is also race-free for TSan.
 *   Counters of other threads (reloads, reload_failures, the file sinks'
 *   and the publisher's bytes, drops and errors) go through
 *   stats_add(), an atomic add outside the seqlock; they are exact but not
 *   necessarily consistent with the data-path counters of the same snapshot.
 *   Nothing here allocates after stats_create().
 *
 * LATENCY
 *   A log-linear histogram of nanoseconds: exact below 32 ns, then 16
 *   buckets per power of two (relative resolution 1/16 = 6.25 %). A
 *   percentile reports the upper edge of its bucket (never understates),
 *   capped at the exact maximum.
 */
#ifndef CHIRP_STATS_H
#define CHIRP_STATS_H

#include <stddef.h>
#include <stdint.h>

enum stats_counter {
	ST_CPIS_IN = 0,        /* CPIs taken from the input ring              */
	ST_CPIS_OUT,           /* results committed to the output ring        */
	ST_INPUT_OVERRUNS,     /* blocks the producer dropped (ring full); set from the ring */
	ST_SEQUENCE_GAPS,      /* input blocks missing by sequence number     */
	ST_OUTPUT_DROPS,       /* results not delivered: output ring full     */
	ST_NONFINITE_CPIS,     /* CPIs whose input held NaN/Inf               */
	ST_NONFINITE_ROWS,     /* pulse rows whose input held NaN/Inf         */
	ST_BAD_BLOCKS,         /* input blocks rejected (bad length / descriptor) */
	ST_BACKEND_ERRORS,     /* pulse-compression backend failures          */
	ST_SAMPLES_IN,         /* complex input samples processed             */
	ST_RELOADS,            /* successful reloads (stats_add)              */
	ST_RELOAD_FAILURES,    /* rejected reloads (stats_add)                */
	ST_OUTPUT_FILE_ERRORS, /* failed writes to [output] file              */
	ST_REDELIVERED_SKIPPED,/* redelivered input whose result a previous
				  chirpd had already committed (not redone)  */
	ST_OVER_BUDGET,        /* delivered CPIs whose latency exceeded
				  [trace] latency_budget_ms                  */
	ST_DATA_STALLS,        /* gaps of 200 us or more in the data thread's
				  polling loop (stall.h)                     */
	ST_UNKNOWN_MODE_CPIS,  /* CPIs whose radar mode the running
				  configuration does not have: committed
				  zeroed, flagged CHIRP_RING_UNKNOWN_MODE    */
	ST_DET_LISTS,          /* detection lists made (one per CPI detected,
				  unknown-mode ones included)                */
	ST_DETECTIONS,         /* detection records in those lists            */
	ST_DET_OVERFLOWS,      /* lists with more detections than
				  max_detections (truncated, CHIRP_DET_OVERFLOW) */
	ST_DET_DROPS,          /* lists not delivered: detection ring full    */
	ST_CFAR_CELLS,         /* map cells the CFAR tested                   */
	ST_CFAR_CROSSINGS,     /* cells over their threshold (before the
				  local-maximum rule): / cells = the observed
				  false-alarm rate on noise                  */
	ST_DET_FILE_ERRORS,    /* failed writes to [detections] file          */
	ST_OUTPUT_FILE_BYTES,  /* bytes written to [output] file (its writer
				  thread, stats_add; sink.h)                 */
	ST_OUTPUT_FILE_DROPS,  /* results not written to [output] file: its
				  queue was full (a slow or blocked file)    */
	ST_OUTPUT_FILE_DROPPED_BYTES, /* bytes of those, and the unwritten
				  rest of results whose write failed         */
	ST_DET_FILE_BYTES,     /* the same three for [detections] file, whose
				  records are JSON lines                     */
	ST_DET_FILE_DROPS,
	ST_DET_FILE_DROPPED_BYTES,
	ST_PUB_DET_MESSAGES,   /* [publish] "det" messages sent (its sender
				  thread, stats_add; zpub.h)                 */
	ST_PUB_DET_DROPS,      /* "det" messages dropped: the queue was full or
				  a subscriber at its high-water mark        */
	ST_PUB_MAP_MESSAGES,   /* the same two for "map"                      */
	ST_PUB_MAP_DROPS,
	ST_PUB_STATUS_MESSAGES,/* the same two for "status"                   */
	ST_PUB_STATUS_DROPS,
	ST_PUB_BYTES,          /* payload bytes (with the 64-byte record
				  header each) of the messages sent          */
	ST_PUB_DROPPED_BYTES,  /* the same of the messages dropped            */
	ST_PUB_ERRORS,         /* sends that failed for another reason        */
	ST_INPUT_OVER_CAPACITY_EVENTS, /* times the input's offered rate turned
				  above the capacity for a second (the main
				  loop, stats_add; ratewatch.h)              */
	ST_BAD_POINTING_CPIS,  /* CPIs whose pointing is not finite, beyond
				  +-90 degrees or puts a beam outside the
				  visible region: not processed, results NaN,
				  flagged CHIRP_RING_BAD_POINTING            */
	ST_COUNTERS
};

enum stats_stage {
	STG_INPUT = 0,         /* peek + checks + output reservation          */
	STG_COMPUTE,           /* submit to result reported (backend time)    */
	STG_OUTPUT,            /* output commit / copy / file / release       */
	STG_STAGES
};

#define STATS_HIST_BUCKETS 976   /* covers every uint64_t value */
#define STATS_MAX_MODES    64    /* radar mode ids 0..63 (= PC_MAX_MODES) */

struct stats;

/* A copy readers work on (plain values). */
struct stats_snapshot {
	uint64_t counter[ST_COUNTERS];
	uint64_t lat_count;                    /* CPIs with a latency sample  */
	uint64_t lat_sum_ns;
	uint64_t lat_max_ns;
	uint64_t hist[STATS_HIST_BUCKETS];
	uint64_t stage_sum_ns[STG_STAGES];
	uint64_t stage_count[STG_STAGES];
	uint64_t stage_max_ns[STG_STAGES];
	uint64_t mode_cpis[STATS_MAX_MODES];   /* CPIs taken per radar mode id
						  that the running configuration
						  has (unknown ones: the counter
						  ST_UNKNOWN_MODE_CPIS)       */
	uint64_t taken_ns;                     /* CLOCK_MONOTONIC when taken  */
	int consistent;                        /* 0 if the writer kept racing */
};

struct stats *stats_create(void);
void stats_destroy(struct stats *s);

/* ---- the data thread (single writer) ---------------------------------- */
void stats_write_begin(struct stats *s);
void stats_write_end(struct stats *s);
void stats_count(struct stats *s, enum stats_counter c, uint64_t n);  /* += n */
void stats_set(struct stats *s, enum stats_counter c, uint64_t v);    /* = v  */
void stats_latency(struct stats *s, uint64_t ns);
void stats_stage(struct stats *s, enum stats_stage st, uint64_t ns);
/* A CPI of radar mode id mode (< STATS_MAX_MODES; others are ignored). */
void stats_count_mode(struct stats *s, unsigned mode, uint64_t n);

/* ---- any thread -------------------------------------------------------- */
void stats_add(struct stats *s, enum stats_counter c, uint64_t n);    /* atomic += n */
void stats_snapshot(const struct stats *s, struct stats_snapshot *out);

/* out = b - a (counters, histogram, stage sums; max of b). For "since last tick". */
void stats_delta(const struct stats_snapshot *a, const struct stats_snapshot *b,
		 struct stats_snapshot *out);

/* Latency at quantile q (0 < q <= 1) in ns; 0 if there are no samples. */
uint64_t stats_percentile(const struct stats_snapshot *sn, double q);

/* Histogram bucket of a value and the bucket's inclusive upper edge. */
unsigned stats_bucket(uint64_t ns);
uint64_t stats_bucket_upper(unsigned bucket);

const char *stats_counter_name(enum stats_counter c);  /* "cpis_in", ... */
const char *stats_stage_name(enum stats_stage st);     /* "input", ...   */

#endif /* CHIRP_STATS_H */
