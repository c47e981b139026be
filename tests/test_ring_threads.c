/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ring_threads.c — producer and consumer on two threads, also run
 * under ThreadSanitizer (tests/tsan.list).
 *
 *  - two mappings of one shm ring (what two processes see), lossless
 *    (producer waits for space) and lossy (producer never waits; every
 *    dropped block must show up as a counted overrun and a sequence gap
 *    flagged DISCONTINUITY);
 *  - two handles on ONE mapping (a memory image), so that TSan, which
 *    tracks virtual addresses, sees the payload accesses of both sides at
 *    the same addresses and checks they are ordered by the index
 *    acquire/release pairs.
 *
 * Payloads carry a pattern derived from their first_sample, and each
 * block a mode derived from it; the consumer verifies every pattern word
 * and the mode, and holds 1..4 blocks in flight. Rings of 16 slots, and of
 * 13 (not a power of two: slot = position % slots).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "chirp/ring.h"
#include "ring/ring_private.h"

#ifdef __SANITIZE_THREAD__
#define NBLOCKS 4000
#define PACE_US 2000   /* instrumented spinning is slow: pace so waits sleep */
#else
#define NBLOCKS 40000
#define PACE_US 200
#endif

struct ctx {
	struct chirp_ring *p, *c;
	int lossy;
	unsigned kres;           /* 0: reserve/commit; else reserve_next with up
				    to kres outstanding, committed oldest first */
	uint64_t nblocks;
	_Atomic int done;        /* producer finished: set after its last commit */
	/* producer results */
	uint64_t drops;
	int prod_err;
	/* consumer results */
	uint64_t got, gaps, gap_blocks, bad, last;
	int cons_err;
	unsigned seed;
};

static uint64_t key_word(uint64_t key, uint64_t i)
{
	uint64_t x = (key + 1) * 0x9e3779b97f4a7c15ull ^ (i * 0xbf58476d1ce4e5b9ull);

	x ^= x >> 31;
	return x;
}

static void fill(void *p, uint64_t len, uint64_t key)
{
	uint64_t *w = p;

	for (uint64_t i = 0; i < len / 8; i++)
		w[i] = key_word(key, i);
}

static int verify(const void *p, uint64_t len, uint64_t key)
{
	const uint64_t *w = p;

	for (uint64_t i = 0; i < len / 8; i++)
		if (w[i] != key_word(key, i))
			return 0;
	return 1;
}

/* The mode the block of this key is committed with: any 32-bit value. */
static uint32_t key_mode(uint64_t key)
{
	return (uint32_t)(key * 2654435761u);
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 16) & 0x7fff;
}

static void *producer(void *arg)
{
	struct ctx *x = arg;
	uint64_t len = chirp_ring_cpi_bytes(&(struct chirp_ring_geometry){
		.channels = 1, .pulses = 1, .samples = 300, .format = CHIRP_RING_CF32,
		.slots = 16, .sample_rate_hz = 1 });
	unsigned s = x->seed * 7 + 1;
	uint64_t held[16];       /* keys of outstanding reservations, oldest first */
	unsigned nheld = 0;
	void *pl;
	int rc;

	for (uint64_t k = 0; k < x->nblocks; k++) {
		if (x->kres) {
			/* like a GPU: up to kres blocks written at once; commit
			 * the oldest when kres are out (or now and then early) */
			if (nheld == x->kres || (nheld && rnd(&s) % 3 == 0)) {
				rc = chirp_ring_commit_mode(x->p, held[0] + 1, held[0], 0,
							    key_mode(held[0]));
				if (rc != 0) {
					x->prod_err = rc;
					break;
				}
				memmove(held, held + 1, --nheld * sizeof(held[0]));
			}
			if (!x->lossy) {
				rc = chirp_ring_wait(x->p, 10000000000LL);
				if (rc != 0) {
					x->prod_err = rc;
					break;
				}
			}
			rc = chirp_ring_reserve_next(x->p, &pl);
			if (rc == -ENOBUFS) {
				x->drops++;
				if (rnd(&s) % 4 == 0)
					usleep(20);
				continue;
			}
			if (rc != 0) {
				x->prod_err = rc;
				break;
			}
			if (chirp_ring_reserved(x->p) != nheld + 1) {
				x->prod_err = -EPROTO;
				break;
			}
			fill(pl, len, k);
			held[nheld++] = k;
			if (x->lossy && rnd(&s) % 64 == 0)
				sched_yield();
			continue;
		}
		if (!x->lossy) {
			rc = chirp_ring_wait(x->p, 10000000000LL);
			if (rc != 0) {
				x->prod_err = rc;
				atomic_store(&x->done, 1);
				return NULL;
			}
		}
		rc = chirp_ring_reserve(x->p, &pl);
		if (rc == -ENOBUFS) {
			/* hardware keeps its cadence: the block is gone, time passes */
			x->drops++;
			if (rnd(&s) % 4 == 0)
				usleep(20);
			continue;
		}
		if (rc != 0) {
			x->prod_err = rc;
			atomic_store(&x->done, 1);
			return NULL;
		}
		fill(pl, len, k);
		rc = chirp_ring_commit_mode(x->p, k + 1, k, 0, key_mode(k));
		if (rc != 0) {
			x->prod_err = rc;
			atomic_store(&x->done, 1);
			return NULL;
		}
		if (x->lossy && rnd(&s) % 64 == 0)
			sched_yield();
	}
	for (unsigned i = 0; i < nheld && !x->prod_err; i++) {
		rc = chirp_ring_commit_mode(x->p, held[i] + 1, held[i], 0, key_mode(held[i]));
		if (rc != 0)
			x->prod_err = rc;
	}
	atomic_store(&x->done, 1);
	return NULL;
}

static void *consumer(void *arg)
{
	struct ctx *x = arg;
	struct chirp_ring_block b;
	unsigned s = x->seed;
	uint64_t last = UINT64_MAX;
	int held = 0, want = 1, rc;

	for (;;) {
		rc = chirp_ring_peek(x->c, &b);
		if (rc == -EAGAIN) {
			/* drain what we hold before sleeping: the producer may need it */
			while (held) {
				chirp_ring_release(x->c);
				held--;
			}
			if (atomic_load(&x->done) && chirp_ring_available(x->c) == 0)
				break;   /* done was set after the last commit: nothing can follow */
			rc = chirp_ring_wait(x->c, 50000000LL);
			if (rc != 0 && rc != -ETIMEDOUT) {
				x->cons_err = rc;
				return NULL;
			}
			continue;
		}
		if (rc != 0) {
			x->cons_err = rc;
			return NULL;
		}
		x->got++;
		if (b.first_sample != b.seq || b.timestamp_ns != b.seq + 1 ||
		    b.mode != key_mode(b.first_sample) || b.reserved != 0 ||
		    !verify(b.payload, b.len, b.first_sample))
			x->bad++;
		if (last != UINT64_MAX && b.seq != last + 1) {
			x->gaps++;
			x->gap_blocks += b.seq - last - 1;
			if (!(b.flags & CHIRP_RING_DISCONTINUITY))
				x->bad++;
		} else if (last != UINT64_MAX && (b.flags & CHIRP_RING_DISCONTINUITY)) {
			x->bad++;
		}
		if (last == UINT64_MAX && b.seq != 0) {
			x->gaps++;
			x->gap_blocks += b.seq;
		}
		last = b.seq;
		if (++held >= want) {
			while (held) {
				chirp_ring_release(x->c);
				held--;
			}
			want = 1 + rnd(&s) % 4;
			if (x->lossy && rnd(&s) % 64 == 0)
				usleep(50);
		}
	}
	while (held) {
		chirp_ring_release(x->c);
		held--;
	}
	x->last = last;
	return NULL;
}

static void run_k(struct chirp_ring *c, struct chirp_ring *p, int lossy, unsigned seed,
		  unsigned kres)
{
	struct ctx x = { .p = p, .c = c, .lossy = lossy, .nblocks = NBLOCKS, .seed = seed,
			 .kres = kres };
	struct chirp_ring_stats st;
	pthread_t tp, tc;

	assert_int_equal(pthread_create(&tc, NULL, consumer, &x), 0);
	assert_int_equal(pthread_create(&tp, NULL, producer, &x), 0);
	assert_int_equal(pthread_join(tp, NULL), 0);
	assert_int_equal(pthread_join(tc, NULL), 0);
	chirp_ring_stats(c, &st);
	print_message("lossy=%d kres=%u: %llu delivered, %llu dropped in %llu gaps\n", lossy, kres,
		      (unsigned long long)x.got, (unsigned long long)x.drops,
		      (unsigned long long)x.gaps);
	assert_int_equal(x.prod_err, 0);
	assert_int_equal(x.cons_err, 0);
	assert_int_equal(x.bad, 0);
	assert_int_equal(st.overruns, x.drops);
	assert_int_equal(st.committed, x.got);
	assert_int_equal(st.released, x.got);
	/* every block is either delivered or counted as dropped */
	assert_int_equal(x.got + x.drops, x.nblocks);
	/* drops show as gaps, except those after the last delivered block */
	assert_true(x.last != UINT64_MAX);
	assert_int_equal(x.gap_blocks + (x.nblocks - 1 - x.last), x.drops);
	if (!lossy)
		assert_int_equal(x.drops, 0);
}

static void run(struct chirp_ring *c, struct chirp_ring *p, int lossy, unsigned seed)
{
	run_k(c, p, lossy, seed, 0);
}

static struct chirp_ring_geometry geo(unsigned slots)
{
	struct chirp_ring_geometry g = {
		.channels = 1, .pulses = 1, .samples = 300, .format = CHIRP_RING_CF32,
		.slots = slots, .sample_rate_hz = 1,
	};
	return g;
}

static void shm_case(int lossy, unsigned slots)
{
	struct chirp_ring_geometry g = geo(slots);
	char name[64], err[256] = "";
	struct chirp_ring *c, *p;

	snprintf(name, sizeof(name), "/chirp-test-thr-%d-%d-%u", (int)getpid(), lossy, slots);
	chirp_ring_unlink(name);
	c = chirp_ring_create(name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_non_null(c);
	p = chirp_ring_attach(name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_non_null(p);
	run(c, p, lossy, 11 + lossy);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
	chirp_ring_unlink(name);
}

static void test_two_mappings_lossless(void **state) { shm_case(0, 16); }
static void test_two_mappings_lossy(void **state) { shm_case(1, 16); }
static void test_odd_slots_lossless(void **state) { shm_case(0, 13); }
static void test_odd_slots_lossy(void **state) { shm_case(1, 13); }

static void image_case(int lossy)
{
	struct chirp_ring_geometry g = geo(16);
	struct ring_layout L;
	struct chirp_ring *c, *p;
	char err[256] = "";
	void *img;

	assert_int_equal(ring_layout_compute(&g, RING_PAGE, &L, err, sizeof(err)), 0);
	L.epoch = 1;
	img = aligned_alloc(4096, L.total_bytes);
	assert_non_null(img);
	ring_format_image(img, &L);
	c = ring_open_image(img, L.total_bytes, CHIRP_RING_CONSUMER, err, sizeof(err));
	assert_non_null(c);
	p = ring_open_image(img, L.total_bytes, CHIRP_RING_PRODUCER, err, sizeof(err));
	assert_non_null(p);
	run(c, p, lossy, 21 + lossy);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
	free(img);
}

/* Producer holding K outstanding reservations (reserve_next) against a
 * consumer in another mapping: K = 4 and K = slots (16, and 13). */
static void multi_case(int lossy, unsigned kres, unsigned slots)
{
	struct chirp_ring_geometry g = geo(slots);
	char name[64], err[256] = "";
	struct chirp_ring *c, *p;

	snprintf(name, sizeof(name), "/chirp-test-thrk-%d-%d-%u-%u", (int)getpid(), lossy, kres,
		 slots);
	chirp_ring_unlink(name);
	c = chirp_ring_create(name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_non_null(c);
	p = chirp_ring_attach(name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_non_null(p);
	run_k(c, p, lossy, 31 + lossy + kres, kres);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
	chirp_ring_unlink(name);
}

static void test_reserve_next_lossless(void **state) { multi_case(0, 4, 16); }
static void test_reserve_next_lossy(void **state) { multi_case(1, 4, 16); }
static void test_reserve_next_all_slots_lossy(void **state) { multi_case(1, 16, 16); }
static void test_reserve_next_odd_slots_lossy(void **state) { multi_case(1, 13, 13); }

static void test_one_mapping_lossless(void **state) { image_case(0); }
static void test_one_mapping_lossy(void **state) { image_case(1); }

/*
 * The futex handshake: a paced producer (one block per PACE_US) and a
 * consumer that sleeps in chirp_ring_wait() before every block; then the
 * roles reversed (a consumer paced the same way frees slots of a full ring
 * for a producer asleep waiting for room). A lost wake-up would show as a
 * sleep of a whole 100 ms slice that then found work.
 */
struct pace {
	struct chirp_ring *r;
	int n, err;
	uint64_t base;   /* blocks committed before the phase */
};

static void *paced_producer(void *arg)
{
	struct pace *x = arg;
	void *pl;

	for (int i = 0; i < x->n; ) {
		usleep(PACE_US);
		int rc = chirp_ring_reserve(x->r, &pl);

		if (rc == -ENOBUFS)
			continue;   /* consumer descheduled: drop, try block i again */
		if (rc != 0 || chirp_ring_commit(x->r, 1, i, 0) != 0)
			x->err++;
		i++;
		/* ping-pong: nothing more until the consumer has it, so a lost
		 * wake-up cannot be covered up by the next block's wake-up */
		struct chirp_ring_stats st;
		do {
			usleep(50);
			chirp_ring_stats(x->r, &st);
		} while (st.released < (uint64_t)i);
	}
	return NULL;
}

static void *paced_consumer(void *arg)
{
	struct pace *x = arg;
	struct chirp_ring_block b;

	struct chirp_ring_stats st;

	for (int i = 0; i < x->n; ) {
		usleep(PACE_US);
		if (chirp_ring_peek(x->r, &b) == 0) {
			chirp_ring_release(x->r);
			i++;
			/* wait until the (sleeping) producer refilled the slot */
			do {
				usleep(50);
				chirp_ring_stats(x->r, &st);
			} while (i + 2 <= x->n && st.committed < x->base + (uint64_t)i + 2);
		}
	}
	return NULL;
}

/* A ring of `slots` slots in one memory image, with a consumer and a
 * producer handle on it (freed by close_pair). */
static void open_pair(unsigned slots, void **img, struct chirp_ring **c, struct chirp_ring **p)
{
	struct chirp_ring_geometry g = geo(slots);
	struct ring_layout L;
	char err[256] = "";

	assert_int_equal(ring_layout_compute(&g, RING_PAGE, &L, err, sizeof(err)), 0);
	L.epoch = 1;
	*img = aligned_alloc(4096, L.total_bytes);
	assert_non_null(*img);
	ring_format_image(*img, &L);
	*c = ring_open_image(*img, L.total_bytes, CHIRP_RING_CONSUMER, err, sizeof(err));
	*p = ring_open_image(*img, L.total_bytes, CHIRP_RING_PRODUCER, err, sizeof(err));
	assert_non_null(*c);
	assert_non_null(*p);
}

static void close_pair(void *img, struct chirp_ring *c, struct chirp_ring *p)
{
	chirp_ring_detach(p);
	chirp_ring_detach(c);
	free(img);
}

/* x->n blocks from a paced_producer thread on x->r, each waited for on c
 * (chirp_ring_wait) and released; first_sample checked when check_fs. */
static void consume_paced(struct chirp_ring *c, struct pace *x, int check_fs)
{
	struct chirp_ring_block b;
	pthread_t t;
	int rc;

	assert_int_equal(pthread_create(&t, NULL, paced_producer, x), 0);
	for (int i = 0; i < x->n; i++) {
		while ((rc = chirp_ring_wait(c, 10000000000LL)) == -EINTR)
			;
		assert_int_equal(rc, 0);
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		if (check_fs)
			assert_int_equal(b.first_sample, i);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(x->err, 0);
}

static void test_futex_handshake(void **state)
{
	struct chirp_ring *c, *p;
	struct pace x = { .n = 500 };
	pthread_t t;
	void *img, *pl;
	int rc;

	open_pair(2, &img, &c, &p);

	/* consumer sleeps, producer wakes */
	x.r = p;
	consume_paced(c, &x, 1);

	/* producer sleeps on a full ring, consumer wakes */
	x.r = c;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(chirp_ring_reserve(p, &pl), 0);
		assert_int_equal(chirp_ring_commit(p, 1, i, 0), 0);
	}
	x.base = x.n;
	assert_int_equal(pthread_create(&t, NULL, paced_consumer, &x), 0);
	for (int i = 2; i < x.n; i++) {
		while ((rc = chirp_ring_wait(p, 10000000000LL)) == -EINTR)
			;
		assert_int_equal(rc, 0);
		assert_int_equal(chirp_ring_reserve(p, &pl), 0);
		assert_int_equal(chirp_ring_commit(p, 1, i, 0), 0);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("futex sleeps: consumer %llu, producer %llu; late wake-ups: %llu, %llu\n",
		      (unsigned long long)ring_debug_sleeps(c),
		      (unsigned long long)ring_debug_sleeps(p),
		      (unsigned long long)ring_debug_late_wakes(c),
		      (unsigned long long)ring_debug_late_wakes(p));
	/* the test is about sleeping: most waits must have slept */
	assert_true(ring_debug_sleeps(c) > (uint64_t)x.n / 4);
	assert_true(ring_debug_sleeps(p) > (uint64_t)x.n / 4);
	assert_int_equal(ring_debug_late_wakes(c), 0);
	assert_int_equal(ring_debug_late_wakes(p), 0);
	close_pair(img, c, p);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * chirp_ring_set_spin: a consumer whose spin outlasts the gap between
 * blocks never sleeps on the futex (it sees every block while polling),
 * one idle for longer than its spin sleeps at once,
 * a spin never runs past the wait's timeout (a timeout shorter than the
 * spin ends in -ETIMEDOUT without a sleep), a timeout of 0 stays one
 * poll, and bad values are refused.
 */
static void test_wait_spin(void **state)
{
	struct chirp_ring *c, *p;
	struct pace x = { .n = 50 };
	void *img;
	double t0;

	open_pair(2, &img, &c, &p);

	assert_int_equal(chirp_ring_get_spin(c), 0);
	assert_int_equal(chirp_ring_set_spin(c, -1), -EINVAL);
	assert_int_equal(chirp_ring_set_spin(c, CHIRP_RING_MAX_SPIN_NS + 1), -EINVAL);
	assert_int_equal(chirp_ring_set_spin(NULL, 0), -EINVAL);
	assert_int_equal(chirp_ring_get_spin(c), 0);
	assert_int_equal(chirp_ring_set_spin(c, CHIRP_RING_MAX_SPIN_NS), 0);
	assert_int_equal(chirp_ring_get_spin(c), CHIRP_RING_MAX_SPIN_NS);

	/* timeout 0: one look, whatever the spin */
	t0 = mono_s();
	assert_int_equal(chirp_ring_wait(c, 0), -ETIMEDOUT);
	/* a 20 ms timeout ends the 1 s spin, and nothing sleeps */
	assert_int_equal(chirp_ring_wait(c, 20000000), -ETIMEDOUT);
	assert_true(mono_s() - t0 < 0.9);
	assert_int_equal(ring_debug_sleeps(c), 0);

	/* paced blocks (one per PACE_US, each only after the previous one
	 * was released) all arrive while the consumer polls: no sleep */
	x.r = p;
	consume_paced(c, &x, 1);
	assert_int_equal(ring_debug_sleeps(c), 0);

	/* The spin counts from the last block taken: a handle idle for longer
	 * than its spin sleeps at once in its next wait, so a caller waiting
	 * in slices does not spin in each one.
	 * (Spinning from the wait's start instead, a 20 ms spin would
	 * outlast this 10 ms wait and end it without a sleep.) */
	assert_int_equal(chirp_ring_set_spin(c, 20000000), 0);
	usleep(100000);
	assert_int_equal(chirp_ring_wait(c, 10000000), -ETIMEDOUT);
	assert_int_equal(ring_debug_sleeps(c), 1);

	/* spin 0 again: the same stream sleeps between blocks */
	assert_int_equal(chirp_ring_set_spin(c, 0), 0);
	x.n = 20;
	consume_paced(c, &x, 0);
	assert_true(ring_debug_sleeps(c) > 0);
	close_pair(img, c, p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_mappings_lossless),
		cmocka_unit_test(test_two_mappings_lossy),
		cmocka_unit_test(test_one_mapping_lossless),
		cmocka_unit_test(test_one_mapping_lossy),
		cmocka_unit_test(test_futex_handshake),
		cmocka_unit_test(test_wait_spin),
		cmocka_unit_test(test_reserve_next_lossless),
		cmocka_unit_test(test_reserve_next_lossy),
		cmocka_unit_test(test_reserve_next_all_slots_lossy),
		cmocka_unit_test(test_odd_slots_lossless),
		cmocka_unit_test(test_odd_slots_lossy),
		cmocka_unit_test(test_reserve_next_odd_slots_lossy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
