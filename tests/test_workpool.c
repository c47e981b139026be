/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_workpool.c — the worker pool (workpool.c) that the CPU backend and
 * the copy staging run on: every item of every job is done exactly once,
 * by 1 to 8 threads, with idle workers that sleep (spin 0) and that poll
 * (spin > 0), over more jobs than the 64 before the ticket's 32-bit gen
 * wraps; what the caller wrote before submitting a job is what a claimer
 * sees; the counts a job reports (joined, woken, left); a job split into
 * submit / claim / item_done / finished by hand; binding the workers;
 * destroying a pool that is idle, asleep or polling; the constructor's
 * bounds. Also run under ThreadSanitizer (tests/tsan.list).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "workpool.h"

#define MAX_ITEMS 64

/*
 * The test's job: each item k of job gen writes out[k] = base + k, where
 * base is written by the caller before workpool_submit (the job
 * description a claimer must see), and counts itself in hits[k].
 */
struct job_ctx {
	struct workpool *wp;
	uint64_t base;                    /* caller-written per job          */
	uint64_t out[MAX_ITEMS];          /* written by the item's claimer   */
	atomic_uint hits[MAX_ITEMS];
	atomic_uint calls;                /* fn calls on workers, all jobs   */
	atomic_uint stale;                /* claims of a gen not the newest  */
	_Atomic uint64_t newest;          /* gen the caller submitted last   */
};

static void do_items(void *arg, unsigned thread, uint64_t gen)
{
	struct job_ctx *c = arg;
	size_t k;

	if (thread != 0)
		atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
	while (workpool_claim(c->wp, thread, gen, &k)) {
		if (gen != atomic_load_explicit(&c->newest, memory_order_relaxed))
			atomic_fetch_add_explicit(&c->stale, 1, memory_order_relaxed);
		c->out[k] = c->base + k;
		atomic_fetch_add_explicit(&c->hits[k], 1, memory_order_relaxed);
		workpool_item_done(c->wp);
	}
}

static struct workpool *make_pool(struct job_ctx *c, unsigned threads, uint64_t spin_ns)
{
	struct workpool_params p = {
		.threads = threads, .spin_ns = spin_ns, .name = "test", .fn = do_items, .ctx = c,
	};
	char err[128];

	memset(c, 0, sizeof(*c));
	c->wp = workpool_create(&p, err, sizeof(err));
	if (!c->wp)
		fail_msg("workpool_create(%u threads): %s", threads, err);
	return c->wp;
}

/* One job of n items through workpool_run, checked item by item. */
static void run_checked(struct job_ctx *c, size_t n, uint64_t base)
{
	unsigned woken = 99, threads = workpool_threads(c->wp), joined;
	uint64_t gen, before = workpool_gen(c->wp);

	for (size_t k = 0; k < MAX_ITEMS; k++) {
		atomic_store_explicit(&c->hits[k], 0, memory_order_relaxed);
		c->out[k] = 0;
	}
	c->base = base;
	atomic_store_explicit(&c->newest, before + 1, memory_order_relaxed);
	gen = workpool_run(c->wp, n, &woken);
	assert_int_equal(gen, before + 1);
	assert_int_equal(workpool_gen(c->wp), gen);
	assert_true(workpool_finished(c->wp));
	assert_int_equal(workpool_left(c->wp, gen), 0);
	assert_true(woken <= threads - 1);
	for (size_t k = 0; k < MAX_ITEMS; k++) {
		unsigned h = atomic_load_explicit(&c->hits[k], memory_order_relaxed);

		if (h != (k < n ? 1u : 0u))
			fail_msg("gen %llu, %zu items, %u threads: item %zu done %u times",
				 (unsigned long long)gen, n, threads, k, h);
		if (k < n && c->out[k] != base + k)
			fail_msg("gen %llu item %zu: %llu, want %llu (the job's base unseen)",
				 (unsigned long long)gen, k, (unsigned long long)c->out[k],
				 (unsigned long long)(base + k));
	}
	/* The caller claims until none is left, so someone joined every job
	 * with items; joined is exact here: every claimer counted its items. */
	joined = workpool_joined(c->wp);
	assert_true(joined <= threads);
	assert_true(n == 0 ? joined == 0 : joined >= 1);
	if (threads == 1)
		assert_int_equal(joined, n ? 1 : 0);
}

/* Many jobs of changing sizes (0, 1, fewer and more items than threads):
 * past the gen wrap, and with the item count's two slots alternating. */
static void many_jobs(unsigned threads, uint64_t spin_ns, unsigned jobs, unsigned pause_us)
{
	struct job_ctx *c = malloc(sizeof(*c));
	uint64_t x = 0x9e3779b97f4a7c15ull;

	assert_non_null(c);
	make_pool(c, threads, spin_ns);
	assert_int_equal(workpool_gen(c->wp), WORKPOOL_GEN_START);
	for (unsigned j = 0; j < jobs; j++) {
		size_t n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		n = j % 17 == 5 ? 0 : j % 3 == 0 ? 1 : (size_t)(x % MAX_ITEMS) + 1;
		run_checked(c, n, x);
		if (pause_us && j % 16 == 15)
			usleep(pause_us);
	}
	assert_true(workpool_gen(c->wp) > (uint64_t)UINT32_MAX);   /* through the wrap */
	assert_int_equal(atomic_load(&c->stale), 0);
	workpool_destroy(c->wp);
	free(c);
}

static void test_exactly_once_sleeping(void **state)
{
	static const unsigned threads[] = { 1, 2, 3, 4, 8 };

	(void)state;
	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++)
		many_jobs(threads[i], 0, 300, 200);
}

static void test_exactly_once_polling(void **state)
{
	static const unsigned threads[] = { 1, 2, 3, 4, 8 };

	(void)state;
	/* 200 us of polling: back-to-back jobs are seen while polling, the
	 * 2 ms pauses outlast it and the workers go to sleep in between */
	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++)
		many_jobs(threads[i], 200000, 300, 2000);
}

/*
 * Workers that poll long (1 s) take every job from the poll, so after the
 * first job none is asleep to be woken; workers that never poll are all
 * asleep after a pause, and each job wakes them.
 */
static void test_woken(void **state)
{
	struct job_ctx *c = malloc(sizeof(*c));
	unsigned woken, sum = 0;

	(void)state;
	assert_non_null(c);
	make_pool(c, 4, 1000000000ull);
	run_checked(c, 16, 1);
	for (int j = 0; j < 5; j++) {
		usleep(2000);
		c->base = 7;
		workpool_run(c->wp, 16, &woken);
		assert_int_equal(woken, 0);
	}
	workpool_destroy(c->wp);
	make_pool(c, 4, 0);
	for (int j = 0; j < 5; j++) {
		usleep(50000);
		workpool_run(c->wp, 16, &woken);
		assert_true(woken <= 3);
		sum += woken;
	}
	print_message("spin 0: woken per job, 5 jobs after 50 ms pauses: %u (of 15)\n", sum);
	assert_true(sum >= 5);   /* asleep after 50 ms idle, however busy the host */
	workpool_destroy(c->wp);
	free(c);
}

/*
 * A job run by hand, as pc_cpu.c does: submit, the caller's own claims
 * (here it takes only one, then counts it done late), workpool_left and
 * workpool_finished seen from the caller, and an item the caller counts
 * done for a claimer (the straggler take-over) without the job finishing
 * twice.
 */
struct split_ctx {
	struct workpool *wp;
	atomic_uint hits[8];
};

static void split_worker(void *arg, unsigned thread, uint64_t gen)
{
	struct split_ctx *c = arg;
	size_t k;

	while (workpool_claim(c->wp, thread, gen, &k)) {
		atomic_fetch_add(&c->hits[k], 1);
		workpool_item_done(c->wp);
	}
}

static void test_split_job(void **state)
{
	struct split_ctx c;
	struct workpool_params p = { .threads = 1, .name = "split", .fn = split_worker, .ctx = &c };
	char err[128];
	uint64_t gen;
	size_t k;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.wp = workpool_create(&p, err, sizeof(err));
	assert_non_null(c.wp);
	gen = workpool_submit(c.wp, 3, NULL);
	assert_int_equal(workpool_left(c.wp, gen), 3);
	assert_int_equal(workpool_left(c.wp, gen + 1), 0);   /* not that job's ticket */
	assert_false(workpool_claim(c.wp, 0, gen - 1, &k));   /* an older job: nothing */
	assert_true(workpool_claim(c.wp, 0, gen, &k));
	assert_int_equal(k, 0);
	assert_int_equal(workpool_left(c.wp, gen), 2);
	assert_false(workpool_finished(c.wp));
	split_worker(&c, 0, gen);                             /* items 1 and 2 */
	assert_int_equal(workpool_left(c.wp, gen), 0);
	assert_false(workpool_finished(c.wp));                /* item 0 not counted */
	workpool_item_done(c.wp);
	assert_true(workpool_finished(c.wp));
	assert_int_equal(workpool_joined(c.wp), 1);
	assert_int_equal(atomic_load(&c.hits[0]), 0);
	assert_int_equal(atomic_load(&c.hits[1]), 1);
	assert_int_equal(atomic_load(&c.hits[2]), 1);
	/* the next job: a claim for the finished one finds nothing */
	gen = workpool_submit(c.wp, 2, NULL);
	assert_false(workpool_claim(c.wp, 0, gen - 1, &k));
	split_worker(&c, 0, gen);
	assert_true(workpool_finished(c.wp));
	/* a job of no items is finished at once */
	gen = workpool_submit(c.wp, 0, NULL);
	assert_true(workpool_finished(c.wp));
	assert_false(workpool_claim(c.wp, 0, gen, &k));
	workpool_destroy(c.wp);
}

/* workpool_bind pins the workers (not the caller), and jobs still run. */
static void test_bind(void **state)
{
	struct job_ctx *c = malloc(sizeof(*c));
	cpu_set_t cpus, before, after;
	struct workpool *one;

	(void)state;
	assert_non_null(c);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &cpus);
	make_pool(c, 4, 0);
	assert_int_equal(workpool_bind(c->wp, &cpus), 3);     /* threads - 1 workers */
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));              /* the caller untouched */
	for (int j = 0; j < 50; j++)
		run_checked(c, 40, (uint64_t)j * 1000);
	workpool_destroy(c->wp);
	one = make_pool(c, 1, 0);
	assert_int_equal(workpool_bind(one, &cpus), 0);       /* the caller alone */
	run_checked(c, 5, 3);
	workpool_destroy(one);
	free(c);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Destroy while idle: right after create (workers maybe not yet waiting),
 * after jobs with the workers asleep, and with the workers polling for a
 * second, which destroy must not wait out (a loose bound, not a timing
 * measurement). A worker that never ran a job is joined as well.
 */
static void test_destroy_idle(void **state)
{
	struct job_ctx *c = malloc(sizeof(*c));
	double t0;

	(void)state;
	assert_non_null(c);
	for (int i = 0; i < 20; i++) {
		make_pool(c, 1 + (unsigned)i % 8, i % 2 ? 1000000ull : 0);
		workpool_destroy(c->wp);
	}
	make_pool(c, 4, 0);
	run_checked(c, 10, 1);
	usleep(20000);   /* the workers go to sleep */
	workpool_destroy(c->wp);
	make_pool(c, 4, 1000000000ull);
	run_checked(c, 10, 1);
	t0 = now_s();
	workpool_destroy(c->wp);
	assert_true(now_s() - t0 < 0.5);
	workpool_destroy(NULL);
	free(c);
}

static void test_create_bounds(void **state)
{
	struct job_ctx c;
	struct workpool_params p = { .threads = 0, .name = "bounds", .fn = do_items, .ctx = &c };
	char err[128];

	(void)state;
	assert_null(workpool_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "0 threads"));
	p.threads = WORKPOOL_MAX_THREADS + 1;
	assert_null(workpool_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "threads"));
	p.threads = 2;
	p.fn = NULL;
	assert_null(workpool_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "function"));
	assert_null(workpool_create(NULL, err, sizeof(err)));
	assert_int_equal(workpool_threads(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_bounds),
		cmocka_unit_test(test_exactly_once_sleeping),
		cmocka_unit_test(test_exactly_once_polling),
		cmocka_unit_test(test_woken),
		cmocka_unit_test(test_split_job),
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_destroy_idle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
