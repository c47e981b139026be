/* SPDX-License-Identifier: Apache-2.0 */
/* test_stats.c — stats module: histogram buckets, percentiles against an
 * exact sort, seqlock snapshots under a concurrent writer, deltas. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <cmocka.h>

#include "stats.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, independent of libc rand */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static void test_bucket_edges(void **state)
{
	(void)state;
	/* Every value lies within its bucket, and buckets are monotone and
	 * contiguous: upper(b-1) < v <= upper(b). */
	for (int i = 0; i < 200000; i++) {
		uint64_t v = rnd() >> (rnd() % 64);
		unsigned b = stats_bucket(v);
		assert_true(b < STATS_HIST_BUCKETS);
		assert_true(stats_bucket_upper(b) >= v);
		if (b > 0)
			assert_true(stats_bucket_upper(b - 1) < v);
		/* resolution: bucket width <= v/16 above the linear range */
		if (v >= 32)
			assert_true(stats_bucket_upper(b) - v <= v / 16);
	}
	assert_int_equal(stats_bucket(0), 0);
	assert_int_equal(stats_bucket(31), 31);
	assert_int_equal(stats_bucket(UINT64_MAX), STATS_HIST_BUCKETS - 1);
	assert_true(stats_bucket_upper(STATS_HIST_BUCKETS - 1) == UINT64_MAX);
	for (unsigned b = 1; b < STATS_HIST_BUCKETS; b++)
		assert_true(stats_bucket_upper(b) > stats_bucket_upper(b - 1));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_percentiles_vs_sort(void **state)
{
	(void)state;
	const size_t n = 20011;   /* not a round number */
	uint64_t *v = malloc(n * sizeof(*v));
	struct stats *s = stats_create();
	struct stats_snapshot *sn = malloc(sizeof(*sn));
	const double qs[] = { 0.5, 0.9, 0.99, 0.999, 1.0 };
	uint64_t max = 0;

	assert_non_null(v);
	assert_non_null(s);
	assert_non_null(sn);
	stats_snapshot(s, sn);
	assert_int_equal(stats_percentile(sn, 0.5), 0);   /* empty */
	for (size_t i = 0; i < n; i++) {
		/* log-uniform between 1 us and 100 ms, like real latencies */
		double e = 3.0 + 5.0 * (double)(rnd() % 1000000) / 1e6;
		v[i] = (uint64_t)__builtin_exp(e * 2.302585092994046);
		if (v[i] > max)
			max = v[i];
		stats_write_begin(s);
		stats_latency(s, v[i]);
		stats_write_end(s);
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	stats_snapshot(s, sn);
	assert_true(sn->consistent);
	assert_int_equal(sn->lat_count, n);
	assert_int_equal(sn->lat_max_ns, max);
	for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		size_t rank = (size_t)__builtin_ceil(qs[k] * (double)n);
		uint64_t exact = v[rank - 1];
		uint64_t got = stats_percentile(sn, qs[k]);
		/* never understates, overstates by at most one bucket (1/16) */
		assert_true(got >= exact);
		assert_true((double)got <= (double)exact * (1.0 + 1.0 / 16.0) + 1.0);
	}
	assert_int_equal(stats_percentile(sn, 1.0), max);
	free(sn);
	stats_destroy(s);
	free(v);
}

static void test_counters_and_delta(void **state)
{
	(void)state;
	struct stats *s = stats_create();
	struct stats_snapshot *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *d = malloc(sizeof(*d));
	uint64_t n = 3 + rnd() % 1000;

	assert_non_null(s);
	for (int c = 0; c < ST_COUNTERS; c++)
		assert_string_not_equal(stats_counter_name(c), "?");
	stats_snapshot(s, a);
	for (uint64_t i = 0; i < n; i++) {
		stats_write_begin(s);
		stats_count(s, ST_CPIS_IN, 1);
		stats_count(s, ST_SAMPLES_IN, 1000);
		stats_stage(s, STG_COMPUTE, 100 + i);
		stats_set(s, ST_INPUT_OVERRUNS, i);
		stats_write_end(s);
	}
	stats_add(s, ST_RELOADS, 2);
	stats_snapshot(s, b);
	stats_delta(a, b, d);
	assert_int_equal(d->counter[ST_CPIS_IN], n);
	assert_int_equal(d->counter[ST_SAMPLES_IN], 1000 * n);
	assert_int_equal(d->counter[ST_INPUT_OVERRUNS], n - 1);
	assert_int_equal(d->counter[ST_RELOADS], 2);
	assert_int_equal(d->stage_count[STG_COMPUTE], n);
	assert_int_equal(d->stage_sum_ns[STG_COMPUTE], 100 * n + n * (n - 1) / 2);
	assert_int_equal(d->stage_max_ns[STG_COMPUTE], 100 + n - 1);
	/* a counter going backwards (ring re-created) clamps at 0 */
	stats_delta(b, a, d);
	assert_int_equal(d->counter[ST_CPIS_IN], 0);
	free(a); free(b); free(d);
	stats_destroy(s);
}

/* Per-mode CPIs: counted by id inside a write section, ids beyond
 * STATS_MAX_MODES ignored, snapshot and delta per id; the unknown-mode
 * counter is an ordinary counter. */
static void test_mode_counters(void **state)
{
	(void)state;
	struct stats *s = stats_create();
	struct stats_snapshot *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *d = malloc(sizeof(*d));

	assert_non_null(s);
	assert_string_equal(stats_counter_name(ST_UNKNOWN_MODE_CPIS), "unknown_mode_cpis");
	stats_write_begin(s);
	stats_count_mode(s, 0, 5);
	stats_count_mode(s, 63, 2);
	stats_write_end(s);
	stats_snapshot(s, a);
	assert_int_equal(a->mode_cpis[0], 5);
	assert_int_equal(a->mode_cpis[63], 2);
	for (unsigned i = 0; i < 30; i++) {
		stats_write_begin(s);
		stats_count_mode(s, i % 3 == 2 ? 7 : i % 3, 1);
		stats_count_mode(s, STATS_MAX_MODES, 1);      /* ignored */
		stats_count_mode(s, 1000000, 1);              /* ignored */
		stats_count(s, ST_UNKNOWN_MODE_CPIS, i % 10 == 0);
		stats_write_end(s);
	}
	stats_snapshot(s, b);
	assert_int_equal(b->mode_cpis[0], 15);
	assert_int_equal(b->mode_cpis[1], 10);
	assert_int_equal(b->mode_cpis[7], 10);
	assert_int_equal(b->mode_cpis[63], 2);
	assert_int_equal(b->counter[ST_UNKNOWN_MODE_CPIS], 3);
	stats_delta(a, b, d);
	assert_int_equal(d->mode_cpis[0], 10);
	assert_int_equal(d->mode_cpis[1], 10);
	assert_int_equal(d->mode_cpis[7], 10);
	assert_int_equal(d->mode_cpis[63], 0);
	for (unsigned id = 0; id < STATS_MAX_MODES; id++)
		if (id != 0 && id != 1 && id != 7 && id != 63)
			assert_int_equal(b->mode_cpis[id], 0);
	free(a); free(b); free(d);
	stats_destroy(s);
}

/* A writer updates three counters in one write section; every snapshot a
 * reader calls consistent must show them equal. */
static atomic_int stop_writer;
static void *writer(void *arg)
{
	struct stats *s = arg;
	uint64_t i = 0;

	while (!atomic_load(&stop_writer) || i < 1000) {
		stats_write_begin(s);
		stats_count(s, ST_CPIS_IN, 1);
		stats_count(s, ST_CPIS_OUT, 1);
		stats_latency(s, 1000 + (i++ % 5000));
		stats_write_end(s);
	}
	return NULL;
}

static void test_snapshot_consistent_under_writer(void **state)
{
	(void)state;
	struct stats *s = stats_create();
	struct stats_snapshot *sn = malloc(sizeof(*sn));
	pthread_t th;
	int consistent = 0;
	uint64_t last = 0;

	assert_non_null(s);
	atomic_store(&stop_writer, 0);
	assert_int_equal(pthread_create(&th, NULL, writer, s), 0);
	for (int k = 0; k < 2000; k++) {
		stats_snapshot(s, sn);
		if (!sn->consistent)
			continue;
		consistent++;
		assert_int_equal(sn->counter[ST_CPIS_IN], sn->counter[ST_CPIS_OUT]);
		assert_int_equal(sn->counter[ST_CPIS_IN], sn->lat_count);
		uint64_t h = 0;
		for (int i = 0; i < STATS_HIST_BUCKETS; i++)
			h += sn->hist[i];
		assert_int_equal(h, sn->lat_count);
		assert_true(sn->lat_count >= last);   /* monotone */
		last = sn->lat_count;
	}
	atomic_store(&stop_writer, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	stats_snapshot(s, sn);
	assert_true(sn->consistent);     /* no writer: must be consistent */
	assert_int_equal(sn->counter[ST_CPIS_IN], sn->lat_count);
	assert_true(consistent > 0);
	free(sn);
	stats_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_edges),
		cmocka_unit_test(test_percentiles_vs_sort),
		cmocka_unit_test(test_counters_and_delta),
		cmocka_unit_test(test_mode_counters),
		cmocka_unit_test(test_snapshot_consistent_under_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
