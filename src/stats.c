/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c — see stats.h for the concurrency contract. */
#include "stats.h"
#include "timeutil.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct stats {
	atomic_uint_fast64_t seq;                      /* odd while writing */
	_Atomic uint64_t counter[ST_COUNTERS];
	_Atomic uint64_t lat_count, lat_sum_ns, lat_max_ns;
	_Atomic uint64_t hist[STATS_HIST_BUCKETS];
	_Atomic uint64_t stage_sum_ns[STG_STAGES];
	_Atomic uint64_t stage_count[STG_STAGES];
	_Atomic uint64_t stage_max_ns[STG_STAGES];
	_Atomic uint64_t mode_cpis[STATS_MAX_MODES];
};

static const char *const counter_names[ST_COUNTERS] = {
	[ST_CPIS_IN] = "cpis_in",
	[ST_CPIS_OUT] = "cpis_out",
	[ST_INPUT_OVERRUNS] = "input_overruns",
	[ST_SEQUENCE_GAPS] = "sequence_gaps",
	[ST_OUTPUT_DROPS] = "output_drops",
	[ST_NONFINITE_CPIS] = "nonfinite_cpis",
	[ST_NONFINITE_ROWS] = "nonfinite_rows",
	[ST_BAD_BLOCKS] = "bad_blocks",
	[ST_BACKEND_ERRORS] = "backend_errors",
	[ST_SAMPLES_IN] = "samples_in",
	[ST_RELOADS] = "reloads",
	[ST_RELOAD_FAILURES] = "reload_failures",
	[ST_OUTPUT_FILE_ERRORS] = "output_file_errors",
	[ST_REDELIVERED_SKIPPED] = "redelivered_skipped",
	[ST_OVER_BUDGET] = "over_budget",
	[ST_DATA_STALLS] = "data_stalls",
	[ST_UNKNOWN_MODE_CPIS] = "unknown_mode_cpis",
	[ST_DET_LISTS] = "detection_lists",
	[ST_DETECTIONS] = "detections",
	[ST_DET_OVERFLOWS] = "detection_overflows",
	[ST_DET_DROPS] = "detection_drops",
	[ST_CFAR_CELLS] = "cfar_cells",
	[ST_CFAR_CROSSINGS] = "cfar_crossings",
	[ST_DET_FILE_ERRORS] = "detection_file_errors",
	[ST_OUTPUT_FILE_BYTES] = "output_file_bytes",
	[ST_OUTPUT_FILE_DROPS] = "output_file_drops",
	[ST_OUTPUT_FILE_DROPPED_BYTES] = "output_file_dropped_bytes",
	[ST_DET_FILE_BYTES] = "detection_file_bytes",
	[ST_DET_FILE_DROPS] = "detection_file_drops",
	[ST_DET_FILE_DROPPED_BYTES] = "detection_file_dropped_bytes",
	[ST_PUB_DET_MESSAGES] = "publish_det_messages",
	[ST_PUB_DET_DROPS] = "publish_det_drops",
	[ST_PUB_MAP_MESSAGES] = "publish_map_messages",
	[ST_PUB_MAP_DROPS] = "publish_map_drops",
	[ST_PUB_STATUS_MESSAGES] = "publish_status_messages",
	[ST_PUB_STATUS_DROPS] = "publish_status_drops",
	[ST_PUB_BYTES] = "publish_bytes",
	[ST_PUB_DROPPED_BYTES] = "publish_dropped_bytes",
	[ST_PUB_ERRORS] = "publish_errors",
	[ST_INPUT_OVER_CAPACITY_EVENTS] = "input_over_capacity_events",
	[ST_BAD_POINTING_CPIS] = "bad_pointing_cpis",
};

static const char *const stage_names[STG_STAGES] = {
	[STG_INPUT] = "input", [STG_COMPUTE] = "compute", [STG_OUTPUT] = "output",
};

const char *stats_counter_name(enum stats_counter c)
{
	return (unsigned)c < ST_COUNTERS ? counter_names[c] : "?";
}

const char *stats_stage_name(enum stats_stage st)
{
	return (unsigned)st < STG_STAGES ? stage_names[st] : "?";
}

struct stats *stats_create(void)
{
	struct stats *s = calloc(1, sizeof(*s));  /* all-zero atomics are valid */

	return s;
}

void stats_destroy(struct stats *s)
{
	free(s);
}

/* Relaxed single-writer update: a load and a store, no locked RMW. */
#define W_ADD(a, n) atomic_store_explicit(&(a), atomic_load_explicit(&(a), memory_order_relaxed) + (n), memory_order_relaxed)
#define W_MAX(a, v) do { if ((v) > atomic_load_explicit(&(a), memory_order_relaxed)) \
	atomic_store_explicit(&(a), (v), memory_order_relaxed); } while (0)
#define R(a) atomic_load_explicit(&(a), memory_order_relaxed)

void stats_write_begin(struct stats *s)
{
	atomic_store_explicit(&s->seq, atomic_load_explicit(&s->seq, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* Orders the odd sequence before the field stores that follow. */
	atomic_thread_fence(memory_order_release);
}

void stats_write_end(struct stats *s)
{
	/* Release: field stores happen before the even sequence is seen. */
	atomic_store_explicit(&s->seq, atomic_load_explicit(&s->seq, memory_order_relaxed) + 1,
			      memory_order_release);
}

void stats_count(struct stats *s, enum stats_counter c, uint64_t n)
{
	if ((unsigned)c < ST_COUNTERS)
		W_ADD(s->counter[c], n);
}

void stats_set(struct stats *s, enum stats_counter c, uint64_t v)
{
	if ((unsigned)c < ST_COUNTERS)
		atomic_store_explicit(&s->counter[c], v, memory_order_relaxed);
}

void stats_add(struct stats *s, enum stats_counter c, uint64_t n)
{
	if ((unsigned)c < ST_COUNTERS)
		atomic_fetch_add_explicit(&s->counter[c], n, memory_order_relaxed);
}

unsigned stats_bucket(uint64_t v)
{
	unsigned msb;

	if (v < 32)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	/* v >> (msb-4) is in [16, 31]: 16 sub-buckets per octave. */
	return (msb - 4u) * 16u + (unsigned)(v >> (msb - 4u));
}

uint64_t stats_bucket_upper(unsigned b)
{
	unsigned m, shift;
	uint64_t sub;

	if (b < 32)
		return b;
	if (b >= STATS_HIST_BUCKETS)
		return UINT64_MAX;
	m = b / 16u;
	sub = b % 16u + 16u;
	shift = m - 1u;
	if (sub + 1 == 32 && shift + 5 >= 64)
		return UINT64_MAX;
	return ((sub + 1) << shift) - 1;
}

void stats_latency(struct stats *s, uint64_t ns)
{
	W_ADD(s->hist[stats_bucket(ns)], 1);
	W_ADD(s->lat_count, 1);
	W_ADD(s->lat_sum_ns, ns);
	W_MAX(s->lat_max_ns, ns);
}

void stats_stage(struct stats *s, enum stats_stage st, uint64_t ns)
{
	if ((unsigned)st >= STG_STAGES)
		return;
	W_ADD(s->stage_sum_ns[st], ns);
	W_ADD(s->stage_count[st], 1);
	W_MAX(s->stage_max_ns[st], ns);
}

void stats_count_mode(struct stats *s, unsigned mode, uint64_t n)
{
	if (mode < STATS_MAX_MODES)
		W_ADD(s->mode_cpis[mode], n);
}

static void copy_fields(const struct stats *s, struct stats_snapshot *o)
{
	for (int i = 0; i < ST_COUNTERS; i++)
		o->counter[i] = R(s->counter[i]);
	o->lat_count = R(s->lat_count);
	o->lat_sum_ns = R(s->lat_sum_ns);
	o->lat_max_ns = R(s->lat_max_ns);
	for (int i = 0; i < STATS_HIST_BUCKETS; i++)
		o->hist[i] = R(s->hist[i]);
	for (int i = 0; i < STG_STAGES; i++) {
		o->stage_sum_ns[i] = R(s->stage_sum_ns[i]);
		o->stage_count[i] = R(s->stage_count[i]);
		o->stage_max_ns[i] = R(s->stage_max_ns[i]);
	}
	for (int i = 0; i < STATS_MAX_MODES; i++)
		o->mode_cpis[i] = R(s->mode_cpis[i]);
}

void stats_snapshot(const struct stats *s, struct stats_snapshot *o)
{
	struct stats *w = (struct stats *)s;   /* atomics are read only */
	int tries;

	o->consistent = 0;
	/* The writer holds the sequence odd for well under a microsecond per
	 * CPI; a bounded retry keeps the reader from ever spinning forever. */
	for (tries = 0; tries < 1000; tries++) {
		uint64_t s1 = atomic_load_explicit(&w->seq, memory_order_acquire);

		copy_fields(s, o);
		atomic_thread_fence(memory_order_acquire);
		uint64_t s2 = atomic_load_explicit(&w->seq, memory_order_relaxed);
		if (!(s1 & 1) && s1 == s2) {
			o->consistent = 1;
			break;
		}
	}
	o->taken_ns = mono_ns();
}

static uint64_t sub0(uint64_t b, uint64_t a)
{
	return b >= a ? b - a : 0;
}

void stats_delta(const struct stats_snapshot *a, const struct stats_snapshot *b,
		 struct stats_snapshot *o)
{
	for (int i = 0; i < ST_COUNTERS; i++)
		o->counter[i] = sub0(b->counter[i], a->counter[i]);
	o->lat_count = sub0(b->lat_count, a->lat_count);
	o->lat_sum_ns = sub0(b->lat_sum_ns, a->lat_sum_ns);
	o->lat_max_ns = b->lat_max_ns;
	for (int i = 0; i < STATS_HIST_BUCKETS; i++)
		o->hist[i] = sub0(b->hist[i], a->hist[i]);
	for (int i = 0; i < STG_STAGES; i++) {
		o->stage_sum_ns[i] = sub0(b->stage_sum_ns[i], a->stage_sum_ns[i]);
		o->stage_count[i] = sub0(b->stage_count[i], a->stage_count[i]);
		o->stage_max_ns[i] = b->stage_max_ns[i];
	}
	for (int i = 0; i < STATS_MAX_MODES; i++)
		o->mode_cpis[i] = sub0(b->mode_cpis[i], a->mode_cpis[i]);
	o->taken_ns = sub0(b->taken_ns, a->taken_ns);
	o->consistent = a->consistent && b->consistent;
}

uint64_t stats_percentile(const struct stats_snapshot *sn, double q)
{
	uint64_t total = 0, rank, cum = 0;

	for (int i = 0; i < STATS_HIST_BUCKETS; i++)
		total += sn->hist[i];
	if (total == 0)
		return 0;
	if (!(q > 0))
		q = 1e-12;
	if (q > 1)
		q = 1;
	/* Smallest value v with at least ceil(q * total) samples <= v. */
	rank = (uint64_t)(q * (double)total);
	if ((double)rank < q * (double)total)
		rank++;
	if (rank == 0)
		rank = 1;
	for (int i = 0; i < STATS_HIST_BUCKETS; i++) {
		cum += sn->hist[i];
		if (cum >= rank) {
			uint64_t up = stats_bucket_upper((unsigned)i);
			return (sn->lat_max_ns && up > sn->lat_max_ns) ? sn->lat_max_ns : up;
		}
	}
	return sn->lat_max_ns;
}
