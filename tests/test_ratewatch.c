/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ratewatch.c — the input rate against the capacity (ratewatch.c):
 * over only once the rate over a whole second exceeds the capacity, one
 * event per episode, cleared below the hysteresis, never over without a
 * capacity, and a re-created ring's counts starting over.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ratewatch.h"

#define TICK_NS 100000000ull   /* chirpd's main-loop tick */

/* Feed ticks from *t at rate_cps (offered counted in *offered, fractional
 * CPIs carried); returns the sum of the transitions seen, and in *first
 * the tick (1-based) of the first non-zero one (0: none). */
static int run(struct ratewatch *w, uint64_t *t, double *offered, double rate_cps,
	       double cap, int ticks, int *first)
{
	int sum = 0;

	*first = 0;
	for (int i = 1; i <= ticks; i++) {
		int r;

		*t += TICK_NS;
		*offered += rate_cps * TICK_NS * 1e-9;
		r = ratewatch_update(w, *t, (uint64_t)*offered, cap);
		if (r && !*first)
			*first = i;
		sum += r;
	}
	return sum;
}

static void test_over_and_clear(void **state)
{
	struct ratewatch w;
	uint64_t t = 1000 * TICK_NS;
	double offered = 0;
	int first;

	(void)state;
	ratewatch_init(&w);
	assert_true(w.rate_cps < 0);
	/* CPI/s, capacity 1000 (the offered count is whole CPIs: 1 in 1000 of noise).
	 * Below capacity for 3 s: never over. */
	assert_int_equal(run(&w, &t, &offered, 900, 1000, 30, &first), 0);
	assert_false(w.over);
	assert_true(w.rate_cps > 890 && w.rate_cps < 910);
	/* 1200 CPI/s: over once the last second's rate exceeds 1000, within a
	 * second and a tick, and only one event however long it lasts. */
	assert_int_equal(run(&w, &t, &offered, 1200, 1000, 30, &first), 1);
	assert_true(first >= 2 && first <= 11);
	assert_true(w.over);
	assert_int_equal(w.events, 1);
	/* At 990 CPI/s (above 98 % of it) it stays over; at 900 it clears. */
	assert_int_equal(run(&w, &t, &offered, 990, 1000, 30, &first), 0);
	assert_true(w.over);
	assert_int_equal(run(&w, &t, &offered, 900, 1000, 30, &first), -1);
	assert_false(w.over);
	/* A second episode is a second event. */
	assert_int_equal(run(&w, &t, &offered, 1500, 1000, 20, &first), 1);
	assert_int_equal(w.events, 2);
}

static void test_short_burst_and_no_capacity(void **state)
{
	struct ratewatch w;
	uint64_t t = TICK_NS;
	double offered = 0;
	int first;

	(void)state;
	ratewatch_init(&w);
	/* Nothing before a whole window: a burst at start is not judged. */
	assert_int_equal(run(&w, &t, &offered, 1000, 100, 5, &first), 0);
	assert_false(w.over);
	assert_true(w.rate_cps < 0);
	/* Capacity unknown (0): never over, whatever the rate. */
	assert_int_equal(run(&w, &t, &offered, 1000, 0, 30, &first), 0);
	assert_false(w.over);
	assert_int_equal(w.events, 0);
}

static void test_counts_go_back(void **state)
{
	struct ratewatch w;
	uint64_t t = TICK_NS;
	double offered = 1e6;
	int first;

	(void)state;
	ratewatch_init(&w);
	assert_int_equal(run(&w, &t, &offered, 50, 100, 20, &first), 0);
	/* The ring was re-created: its count restarts at 0, which is no
	 * negative rate and no event; the rate is judged afresh. */
	offered = 0;
	assert_int_equal(run(&w, &t, &offered, 50, 100, 5, &first), 0);
	assert_true(w.rate_cps < 0);
	assert_int_equal(run(&w, &t, &offered, 50, 100, 20, &first), 0);
	assert_true(w.rate_cps > 45 && w.rate_cps < 55);
	assert_false(w.over);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_over_and_clear),
		cmocka_unit_test(test_short_burst_and_no_capacity),
		cmocka_unit_test(test_counts_go_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
