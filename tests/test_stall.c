/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stall.c — the data thread's stall watch (stall.c): how a gap is
 * classified from the thread's counters, and that real gaps are measured
 * and named: a sleep inside the watched stretch is "blocked", a stretch of
 * computing is "running" (or "preempted" when the scheduler switched the
 * thread out for most of it), and a quick stretch is no stall at all.
 * Nothing here asserts a duration's upper bound: only that a gap is at
 * least what the test made it, which no load can shorten.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "stall.h"
#include "timeutil.h"

static void test_classify(void **state)
{
	(void)state;
	const uint64_t ms = 1000000;

	assert_int_equal(stall_classify(0, 0, 0, 0), STALL_NONE);
	/* CPU time over half the gap: it ran, whatever else happened. */
	assert_int_equal(stall_classify(2 * ms, 2 * ms, 0, 0), STALL_RUNNING);
	assert_int_equal(stall_classify(2 * ms, 1 * ms, 3, 2), STALL_RUNNING);
	/* Off the CPU: a voluntary switch first, then an involuntary one. */
	assert_int_equal(stall_classify(2 * ms, ms - 1, 1, 0), STALL_BLOCKED);
	assert_int_equal(stall_classify(2 * ms, 0, 1, 4), STALL_BLOCKED);
	assert_int_equal(stall_classify(2 * ms, 0, 0, 1), STALL_PREEMPTED);
	/* Neither ran nor was switched out: its vCPU did not run. */
	assert_int_equal(stall_classify(2 * ms, 10000, 0, 0), STALL_STOLEN);

	assert_string_equal(stall_kind_name(STALL_NONE), "none");
	assert_string_equal(stall_kind_name(STALL_RUNNING), "running");
	assert_string_equal(stall_kind_name(STALL_BLOCKED), "blocked");
	assert_string_equal(stall_kind_name(STALL_PREEMPTED), "preempted");
	assert_string_equal(stall_kind_name(STALL_STOLEN), "stolen");
	assert_string_equal(stall_kind_name(STALL_KINDS), "?");
}

/* A 5 ms sleep between two checkpoints: a stall of at least 5 ms, in
 * which the thread switched out voluntarily and used little CPU. */
static void test_sleep_is_blocked(void **state)
{
	(void)state;
	struct stall_watch w;
	struct stall s;
	struct timespec ts = { 0, 5000000 };

	assert_int_equal(stall_watch_mark(&w), 0);
	assert_int_equal(nanosleep(&ts, NULL), 0);
	assert_int_equal(stall_watch_check(&w, STALL_THRESHOLD_NS, &s), 1);
	assert_true(s.end_ns - s.start_ns >= 5000000);
	assert_true(s.nvcsw >= 1);
	assert_true(s.cpu_ns < (s.end_ns - s.start_ns) / 2);
	assert_int_equal(s.kind, STALL_BLOCKED);
	/* The watch moved to now: checking again at once finds no stall. */
	assert_int_equal(w.wall_ns, s.end_ns);
	assert_int_equal(stall_watch_check(&w, 1000000000ull, &s), 0);
}

/* Computing for 3 ms of the thread's own CPU time: a stall of at least
 * 3 ms with at least 3 ms of CPU time in it, "running" unless the machine
 * took the CPU away for longer than the thread ran. */
static void test_spin_is_running(void **state)
{
	(void)state;
	struct stall_watch w;
	struct stall s;
	struct timespec c0, c;
	volatile double x = 1.0;

	assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0), 0);
	assert_int_equal(stall_watch_mark(&w), 0);
	do {
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 1e-9;
		assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c), 0);
	} while ((c.tv_sec - c0.tv_sec) * 1000000000L + (c.tv_nsec - c0.tv_nsec) < 3000000L);
	assert_int_equal(stall_watch_check(&w, STALL_THRESHOLD_NS, &s), 1);
	assert_true(s.end_ns - s.start_ns >= 3000000);
	/* the same clock the loop above read, from before the mark to after
	 * its last read: at least 3 ms less the few instructions between */
	assert_true(s.cpu_ns >= 2990000);
	/* Running on a quiet machine; on a loaded one the counters say what
	 * took the time (preempted, or the vCPU stolen), never "none". */
	assert_int_equal(s.kind, stall_classify(s.end_ns - s.start_ns, s.cpu_ns, s.nvcsw,
						s.nivcsw));
	if (s.cpu_ns >= (s.end_ns - s.start_ns) / 2)
		assert_int_equal(s.kind, STALL_RUNNING);
	else
		assert_int_not_equal(s.kind, STALL_RUNNING);
}

/* A stretch shorter than the threshold is no stall: *out is left alone
 * and the watch moves on to now. */
static void test_short_gap_is_none(void **state)
{
	(void)state;
	struct stall_watch w;
	struct stall s = { 0 };
	uint64_t before;

	assert_int_equal(stall_watch_mark(&w), 0);
	before = w.wall_ns;
	assert_int_equal(stall_watch_check(&w, 10ull * 1000000000ull, &s), 0);
	assert_true(w.wall_ns >= before);
	assert_int_equal(s.kind, STALL_NONE);
	assert_int_equal(s.end_ns, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_sleep_is_blocked),
		cmocka_unit_test(test_spin_is_running),
		cmocka_unit_test(test_short_gap_is_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
