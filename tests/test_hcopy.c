/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hcopy.c — the parallel host copier (hcopy.c): every byte copied and
 * none outside dst touched, at sizes that are no multiple of a slice, from
 * and to unaligned addresses, with 1, 2, 4 and 8 threads; hundreds of
 * copies in a row on one copier (through the ticket's 32-bit generation
 * wrap, which workpool.c puts 64 jobs after create); the constructor's
 * bounds. Also run under ThreadSanitizer (tests/tsan.list).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hcopy.h"

#define GUARD 256              /* bytes after dst that must stay untouched */
#define GUARD_BYTE 0xa5
#define MAX_OFF 64             /* room for the unaligned offsets below     */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill_random(unsigned char *p, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t v = xorshift();

		memcpy(p + i, &v, 8);
	}
	for (; i < n; i++)
		p[i] = (unsigned char)xorshift();
}

/*
 * Copy n bytes src+soff -> dst+doff with h and check: dst was poisoned with
 * the complement of what belongs there (so a byte left out cannot match by
 * luck), every byte of the copy equals its source, and the bytes before
 * dst+doff and the GUARD bytes after the copy keep GUARD_BYTE.
 */
static void check_copy(struct hcopy *h, const unsigned char *src, size_t soff,
		       unsigned char *dst, size_t doff, size_t n, const char *what)
{
	size_t k = 0;

	memset(dst, GUARD_BYTE, doff);
	/* Eight bytes a step: the same bytes, an eighth of the accesses a
	 * sanitizer instruments. */
	for (; k + 8 <= n; k += 8) {
		uint64_t v;

		memcpy(&v, src + soff + k, 8);
		v = ~v;
		memcpy(dst + doff + k, &v, 8);
	}
	for (; k < n; k++)
		dst[doff + k] = (unsigned char)~src[soff + k];
	memset(dst + doff + n, GUARD_BYTE, GUARD);

	assert_int_equal(hcopy_run(h, dst + doff, src + soff, n), 0);

	if (n && memcmp(dst + doff, src + soff, n) != 0) {
		size_t i = 0;

		while (dst[doff + i] == src[soff + i])
			i++;
		fail_msg("%s: %zu bytes, threads %u, offsets %zu/%zu: byte %zu differs",
			 what, n, hcopy_threads(h), soff, doff, i);
	}
	for (size_t i = 0; i < doff; i++)
		if (dst[i] != GUARD_BYTE)
			fail_msg("%s: %zu bytes, threads %u: byte %zu before dst written",
				 what, n, hcopy_threads(h), doff - i);
	for (size_t i = 0; i < GUARD; i++)
		if (dst[doff + n + i] != GUARD_BYTE)
			fail_msg("%s: %zu bytes, threads %u, offsets %zu/%zu: guard byte %zu after dst written",
				 what, n, hcopy_threads(h), soff, doff, i);
}

static void test_create_bounds(void **state)
{
	char err[128];
	struct hcopy *h;

	(void)state;
	err[0] = '\0';
	assert_null(hcopy_create(0, err, sizeof(err)));
	assert_non_null(strstr(err, "0 threads: must be 1..64"));
	err[0] = '\0';
	assert_null(hcopy_create(HCOPY_MAX_THREADS + 1, err, sizeof(err)));
	assert_non_null(strstr(err, "65 threads: must be 1..64"));
	assert_null(hcopy_create(0, NULL, 0));   /* no buffer for the reason: fine */
	hcopy_destroy(NULL);
	assert_int_equal(hcopy_threads(NULL), 0);

	h = hcopy_create(3, err, sizeof(err));
	assert_non_null(h);
	assert_int_equal(hcopy_threads(h), 3);
	assert_int_equal(hcopy_run(NULL, err, err, 1), -EINVAL);
	assert_int_equal(hcopy_run(h, NULL, err, 1), -EINVAL);
	assert_int_equal(hcopy_run(h, err, NULL, 1), -EINVAL);
	assert_int_equal(hcopy_run(h, NULL, NULL, 0), 0);
	hcopy_destroy(h);
	/* Created and destroyed without a single copy: workers still join. */
	h = hcopy_create(HCOPY_MAX_THREADS, err, sizeof(err));
	assert_non_null(h);
	hcopy_destroy(h);
}

static void test_sizes_threads_offsets(void **state)
{
	static const size_t sizes[] = {
		0, 1, 4095, (1u << 20) - 1, (1u << 20) + 7, (3u << 20) + 4097, (16u << 20) + 12345,
	};
	static const unsigned threads[] = { 1, 2, 4, 8 };
	static const size_t offs[][2] = { { 0, 0 }, { 3, 61 }, { 17, 1 }, { 40, 40 } };
	size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
	unsigned char *src = malloc(max + MAX_OFF), *dst = malloc(max + MAX_OFF + GUARD);
	char err[128];

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	fill_random(src, max + MAX_OFF);
	for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		struct hcopy *h = hcopy_create(threads[t], err, sizeof(err));

		if (!h)
			fail_msg("hcopy_create(%u): %s", threads[t], err);
		/* memcpy, then non-temporal stores (unaligned heads and tails) */
		for (int nt = 0; nt < 2; nt++) {
			hcopy_set_nt(h, nt);
			assert_int_equal(hcopy_nt(h), nt);
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
				for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
					/* The largest size once per thread count: it
					 * is the slow one under the sanitizers. */
					if (sizes[s] == max && o > 1)
						continue;
					check_copy(h, src, offs[o][0], dst, offs[o][1], sizes[s],
						   nt ? "sizes, nt" : "sizes");
				}
		}
		hcopy_destroy(h);
	}
	free(src);
	free(dst);
}

/*
 * Many copies in a row on one copier, alternating parallel and small ones
 * with new contents each time, so a worker that claimed from a stale
 * generation or a slice counter not reset would show as a wrong byte. 300
 * copies pass the ticket's generation wrap (64 copies after create).
 */
/* hcopy_memcpy_nt by itself: every length 0..300 at every offset pair mod
 * 16 (the 256-byte cut-over, the aligned body and both ragged ends). */
static void test_memcpy_nt(void **state)
{
	unsigned char src[300 + 16], dst[300 + 16 + GUARD];

	(void)state;
	fill_random(src, sizeof(src));
	for (size_t n = 0; n <= 300; n += (n < 260 ? 1 : 7))
		for (size_t so = 0; so < 16; so += 5)
			for (size_t d = 0; d < 16; d += 3) {
				memset(dst, GUARD_BYTE, sizeof(dst));
				hcopy_memcpy_nt(dst + d, src + so, n);
				assert_memory_equal(dst + d, src + so, n);
				for (size_t i = 0; i < d; i++)
					assert_int_equal(dst[i], GUARD_BYTE);
				for (size_t i = d + n; i < sizeof(dst); i++)
					assert_int_equal(dst[i], GUARD_BYTE);
			}
}

static void test_many_runs(void **state)
{
	const size_t max = (3u << 20) + 1000;
	unsigned char *src = malloc(max + MAX_OFF), *dst = malloc(max + MAX_OFF + GUARD);
	char err[128];
	struct hcopy *h = hcopy_create(4, err, sizeof(err));

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	if (!h)
		fail_msg("hcopy_create(4): %s", err);
	fill_random(src, max + MAX_OFF);
	for (unsigned k = 0; k < 300; k++) {
		size_t n = (k % 3 == 2) ? (size_t)(xorshift() % 70000)
					: HCOPY_PARALLEL_MIN + (size_t)(xorshift() % (max - HCOPY_PARALLEL_MIN));
		size_t soff = (size_t)(xorshift() % MAX_OFF), doff = (size_t)(xorshift() % MAX_OFF);

		/* New contents where this copy reads. */
		for (size_t i = 0; i < 64 && n > 0; i++)
			src[soff + (size_t)(xorshift() % n)] ^= (unsigned char)(k + 1);
		check_copy(h, src, soff, dst, doff, n, "many");
	}
	hcopy_destroy(h);
	free(src);
	free(dst);
}

/* hcopy_bind pins the workers (not the caller), and copies still work. */
static void test_bind(void **state)
{
	const size_t n = (2u << 20) + 3;
	unsigned char *src = malloc(n + MAX_OFF), *dst = malloc(n + MAX_OFF + GUARD);
	char err[128];
	struct hcopy *h = hcopy_create(3, err, sizeof(err)), *one = hcopy_create(1, err, sizeof(err));
	cpu_set_t cpus, before, after;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(h);
	assert_non_null(one);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &cpus);
	assert_int_equal(hcopy_bind(h, &cpus), 2);     /* threads - 1 workers */
	assert_int_equal(hcopy_bind(one, &cpus), 0);   /* the caller alone */
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));       /* the caller untouched */
	fill_random(src, n + MAX_OFF);
	check_copy(h, src, 0, dst, 0, n, "bound");
	hcopy_destroy(h);
	hcopy_destroy(one);
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_bounds),
		cmocka_unit_test(test_sizes_threads_offsets),
		cmocka_unit_test(test_memcpy_nt),
		cmocka_unit_test(test_many_runs),
		cmocka_unit_test(test_bind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
