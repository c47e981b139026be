/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_chunk_policy.c — how the CUDA backend cuts a CPI's rows into chunks
 * (chunk_policy.c), without a GPU: the automatic cut by depth and size at
 * and around its 2, 4, 8 and 16 MiB steps and its caps, an explicit
 * tune.cuda_chunks, the idle layout (only where the depth's layout is one
 * chunk), short last chunks, fewer rows than chunks, the chunk-stream
 * count, and the rejected inputs. An exhaustive sweep checks that every
 * layout covers its rows exactly with no empty chunk.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "chunk_policy.h"

#define MIB ((size_t)1 << 20)
#define STREAMS 3u   /* the CUDA backend's chunk streams per set */

/* chunk_policy_auto(depth, bytes, bytes) == want, with the case in the message. */
static void want_auto(unsigned depth, size_t in, size_t out, unsigned want)
{
	unsigned got = chunk_policy_auto(depth, in, out);

	if (got != want)
		fail_msg("depth %u, in %zu B, out %zu B: %u chunks, want %u", depth, in, out, got,
			 want);
}

static void want_layout(const struct chunk_layout *l, unsigned nchunks, size_t chunk_rows,
			size_t rem_rows, unsigned nstreams)
{
	if (l->nchunks != nchunks || l->chunk_rows != chunk_rows || l->rem_rows != rem_rows ||
	    l->nstreams != nstreams)
		fail_msg("layout %u x %zu rows (last %zu) on %u streams, want %u x %zu (last %zu) on %u",
			 l->nchunks, l->chunk_rows, l->rem_rows, l->nstreams, nchunks, chunk_rows,
			 rem_rows, nstreams);
}

/* Depth 1: one chunk per 2 MiB of the larger direction, at most 16. */
static void test_auto_depth1(void **state)
{
	(void)state;
	want_auto(1, 0, 0, 1);
	want_auto(1, 2 * MIB - 1, 2 * MIB - 1, 1);
	want_auto(1, 2 * MIB, 2 * MIB, 1);
	want_auto(1, 4 * MIB - 1, 4 * MIB - 1, 1);
	want_auto(1, 4 * MIB, 4 * MIB, 2);
	want_auto(1, 16 * MIB, 16 * MIB, 8);
	want_auto(1, 32 * MIB - 1, 32 * MIB - 1, 15);
	want_auto(1, 32 * MIB, 32 * MIB, 16);
	want_auto(1, 34 * MIB, 34 * MIB, 16);     /* 17 asked: the cap */
	want_auto(1, 1024 * MIB, 1024 * MIB, 16);
	/* The larger direction counts, whichever it is. */
	want_auto(1, 1 * MIB, 6 * MIB, 3);
	want_auto(1, 6 * MIB, 1 * MIB, 3);
}

/* Depth 2: one per 4 MiB, at most 8. */
static void test_auto_depth2(void **state)
{
	(void)state;
	want_auto(2, 0, 0, 1);
	want_auto(2, 4 * MIB - 1, 4 * MIB - 1, 1);
	want_auto(2, 4 * MIB, 4 * MIB, 1);
	want_auto(2, 8 * MIB - 1, 8 * MIB - 1, 1);
	want_auto(2, 8 * MIB, 8 * MIB, 2);
	want_auto(2, 16 * MIB, 16 * MIB, 4);
	want_auto(2, 32 * MIB, 32 * MIB, 8);
	want_auto(2, 36 * MIB, 36 * MIB, 8);      /* 9 asked: the cap */
	want_auto(2, 2 * MIB, 12 * MIB, 3);
}

/* Deeper: two halves from 16 MiB (halves of 8 MiB or more), else whole,
 * however large. */
static void test_auto_deeper(void **state)
{
	(void)state;
	for (unsigned depth = 3; depth <= 64; depth++) {
		want_auto(depth, 0, 0, 1);
		want_auto(depth, 8 * MIB, 8 * MIB, 1);
		want_auto(depth, 16 * MIB - 1, 16 * MIB - 1, 1);
		want_auto(depth, 16 * MIB, 16 * MIB, 2);
		want_auto(depth, 1024 * MIB, 1024 * MIB, 2);
		want_auto(depth, 1 * MIB, 16 * MIB, 2);
		want_auto(depth, 16 * MIB, 1 * MIB, 2);
	}
	/* 4x128x4096: cf32 in and complex out are 16 MiB each way: halves;
	 * sc16 in and magnitude out are 8 MiB each way: whole; sc16 in (8 MiB)
	 * and complex out (16 MiB): halves, by the larger direction. */
	want_auto(3, 4u * 128 * 4096 * 8, 4u * 128 * 4096 * 8, 2);
	want_auto(4, 4u * 128 * 4096 * 4, 4u * 128 * 4096 * 4, 1);
	want_auto(4, 4u * 128 * 4096 * 4, 4u * 128 * 4096 * 8, 2);
}

/* Equal chunks, the last one shorter; fewer chunks than asked where equal
 * rows round up; never more chunks than rows; the stream count. */
static void test_layout_cuts(void **state)
{
	struct chunk_layout l;

	(void)state;
	assert_int_equal(chunk_layout_set(&l, 16, 3, STREAMS), 0);
	want_layout(&l, 3, 6, 4, 3);                 /* 6+6+4 */
	assert_int_equal(chunk_layout_set(&l, 16, 4, STREAMS), 0);
	want_layout(&l, 4, 4, 4, 3);                 /* even: the last is full */
	assert_int_equal(chunk_layout_set(&l, 10, 7, STREAMS), 0);
	want_layout(&l, 5, 2, 2, 3);                 /* 7 asked, 2 rows each: 5 */
	assert_int_equal(chunk_layout_set(&l, 5, 16, STREAMS), 0);
	want_layout(&l, 5, 1, 1, 3);                 /* more chunks than rows */
	assert_int_equal(chunk_layout_set(&l, 1, 4, STREAMS), 0);
	want_layout(&l, 1, 1, 1, 1);
	assert_int_equal(chunk_layout_set(&l, 2, 2, STREAMS), 0);
	want_layout(&l, 2, 1, 1, 2);                 /* fewer chunks than streams */
	assert_int_equal(chunk_layout_set(&l, 1000, 0, STREAMS), 0);
	want_layout(&l, 1, 1000, 1000, 1);           /* 0 counts as 1 */
	assert_int_equal(chunk_layout_set(&l, 1000, 16, STREAMS), 0);
	want_layout(&l, 16, 63, 55, 3);              /* 15 x 63 + 55 */
	assert_int_equal(chunk_layout_set(&l, 1000, 17, STREAMS), 0);
	want_layout(&l, 16, 63, 55, 3);              /* capped at PC_MAX_CHUNKS */
	assert_int_equal(chunk_layout_set(&l, 1000, 5, 2), 0);
	want_layout(&l, 5, 200, 200, 2);             /* two streams only */
}

static void test_layout_rejects(void **state)
{
	struct chunk_layout l, before;

	(void)state;
	memset(&l, 0x5a, sizeof(l));
	before = l;
	assert_int_equal(chunk_layout_set(&l, 0, 4, STREAMS), -EINVAL);
	assert_int_equal(chunk_layout_set(&l, 16, 4, 0), -EINVAL);
	assert_memory_equal(&l, &before, sizeof(l));
}

/* Every rows x k x streams: the chunks cover the rows exactly, none empty. */
static void test_layout_sweep(void **state)
{
	(void)state;
	for (size_t rows = 1; rows <= 300; rows++)
		for (unsigned k = 0; k <= PC_MAX_CHUNKS + 4; k++)
			for (unsigned st = 1; st <= 4; st++) {
				struct chunk_layout l;
				unsigned kk = k < 1 ? 1 : k > PC_MAX_CHUNKS ? PC_MAX_CHUNKS : k;

				assert_int_equal(chunk_layout_set(&l, rows, k, st), 0);
				if (l.nchunks < 1 || l.nchunks > kk || l.nchunks > rows ||
				    l.rem_rows < 1 || l.rem_rows > l.chunk_rows ||
				    (size_t)(l.nchunks - 1) * l.chunk_rows + l.rem_rows != rows ||
				    l.nstreams != (l.nchunks < st ? l.nchunks : st))
					fail_msg("rows %zu, k %u, streams %u: %u x %zu (last %zu) on %u",
						 rows, k, st, l.nchunks, l.chunk_rows, l.rem_rows,
						 l.nstreams);
				/* As many chunks as asked whenever rows divide evenly enough. */
				if (rows % kk == 0 && kk <= rows && l.nchunks != kk)
					fail_msg("rows %zu in %u: %u chunks", rows, kk, l.nchunks);
			}
}

/* The plan at the daemon's geometry 4x128x4096 cf32 -> complex (16 MiB
 * each way, 512 rows) at each depth, automatic cut, no idle layout. */
static void test_plan_auto(void **state)
{
	static const struct { unsigned depth, nchunks; size_t rows; } cases[] = {
		{ 1, 8, 64 }, { 2, 4, 128 }, { 3, 2, 256 }, { 4, 2, 256 }, { 64, 2, 256 },
	};
	const size_t bytes = 16 * MIB;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct chunk_plan p;

		assert_int_equal(chunk_policy_plan(&p, 512, cases[c].depth, bytes, bytes, 0, 1,
						   STREAMS), 0);
		want_layout(&p.depth, cases[c].nchunks, cases[c].rows, cases[c].rows,
			    cases[c].nchunks < STREAMS ? cases[c].nchunks : STREAMS);
		want_layout(&p.idle, cases[c].nchunks, cases[c].rows, cases[c].rows,
			    p.depth.nstreams);
		assert_false(p.have_idle);
		assert_int_equal(p.nstreams, p.depth.nstreams);
	}
}

/* tune.cuda_chunks overrides the automatic cut, up or down. */
static void test_plan_explicit(void **state)
{
	struct chunk_plan p;

	(void)state;
	/* A small CPI (whole by default) in 3: 16 rows as 6+6+4. */
	assert_int_equal(chunk_policy_plan(&p, 16, 3, 64000, 64000, 3, 1, STREAMS), 0);
	want_layout(&p.depth, 3, 6, 4, 3);
	assert_false(p.have_idle);
	/* A large CPI at depth 1 (8 chunks by default) kept whole. */
	assert_int_equal(chunk_policy_plan(&p, 512, 1, 16 * MIB, 16 * MIB, 1, 1, STREAMS), 0);
	want_layout(&p.depth, 1, 512, 512, 1);
	assert_int_equal(p.nstreams, 1);
	/* More chunks than rows: one row each. */
	assert_int_equal(chunk_policy_plan(&p, 5, 1, 40000, 40000, 16, 1, STREAMS), 0);
	want_layout(&p.depth, 5, 1, 1, 3);
	/* The most there is. */
	assert_int_equal(chunk_policy_plan(&p, 512, 4, 1000, 1000, PC_MAX_CHUNKS, 1, STREAMS), 0);
	want_layout(&p.depth, 16, 32, 32, 3);
}

/* The idle layout exists only where asked (idle_chunks > 1) and where the
 * depth's layout is one chunk; the streams made cover both layouts. */
static void test_plan_idle(void **state)
{
	struct chunk_plan p;

	(void)state;
	/* Depth's layout whole, idle in 3. */
	assert_int_equal(chunk_policy_plan(&p, 16, 3, 64000, 64000, 1, 3, STREAMS), 0);
	want_layout(&p.depth, 1, 16, 16, 1);
	want_layout(&p.idle, 3, 6, 4, 3);
	assert_true(p.have_idle);
	assert_int_equal(p.nstreams, 3);
	/* The automatic cut whole too: the same. */
	assert_int_equal(chunk_policy_plan(&p, 16, 3, 64000, 64000, 0, 3, STREAMS), 0);
	want_layout(&p.idle, 3, 6, 4, 3);
	assert_true(p.have_idle);
	/* Not asked for (1, and 0 counts as 1): none. */
	for (unsigned idle = 0; idle <= 1; idle++) {
		assert_int_equal(chunk_policy_plan(&p, 16, 3, 64000, 64000, 1, idle, STREAMS), 0);
		assert_false(p.have_idle);
		want_layout(&p.idle, 1, 16, 16, 1);
		assert_int_equal(p.nstreams, 1);
	}
	/* The depth's layout already chunked: idle = depth, whatever is asked. */
	assert_int_equal(chunk_policy_plan(&p, 512, 3, 16 * MIB, 16 * MIB, 0, 8, STREAMS), 0);
	want_layout(&p.depth, 2, 256, 256, 2);
	want_layout(&p.idle, 2, 256, 256, 2);
	assert_false(p.have_idle);
	assert_int_equal(p.nstreams, 2);
	/* One row: an idle cut cannot differ. */
	assert_int_equal(chunk_policy_plan(&p, 1, 3, 8000, 8000, 0, 4, STREAMS), 0);
	want_layout(&p.idle, 1, 1, 1, 1);
	assert_false(p.have_idle);
	/* 5 rows, idle in 2 (3+2): two streams, more than the depth's one. */
	assert_int_equal(chunk_policy_plan(&p, 5, 2, 40000, 40000, 0, 2, STREAMS), 0);
	want_layout(&p.depth, 1, 5, 5, 1);
	want_layout(&p.idle, 2, 3, 2, 2);
	assert_true(p.have_idle);
	assert_int_equal(p.nstreams, 2);
}

static void test_plan_rejects(void **state)
{
	struct chunk_plan p, before;

	(void)state;
	memset(&p, 0x5a, sizeof(p));
	before = p;
	assert_int_equal(chunk_policy_plan(&p, 0, 1, 8, 8, 0, 1, STREAMS), -EINVAL);
	assert_int_equal(chunk_policy_plan(&p, 16, 0, 8, 8, 0, 1, STREAMS), -EINVAL);
	assert_int_equal(chunk_policy_plan(&p, 16, 1, 8, 8, 0, 1, 0), -EINVAL);
	assert_memory_equal(&p, &before, sizeof(p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto_depth1),
		cmocka_unit_test(test_auto_depth2),
		cmocka_unit_test(test_auto_deeper),
		cmocka_unit_test(test_layout_cuts),
		cmocka_unit_test(test_layout_rejects),
		cmocka_unit_test(test_layout_sweep),
		cmocka_unit_test(test_plan_auto),
		cmocka_unit_test(test_plan_explicit),
		cmocka_unit_test(test_plan_idle),
		cmocka_unit_test(test_plan_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
