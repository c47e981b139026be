/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ring_stress.c — fork-based crash stress of libchirpring.
 *
 * The parent is the consumer (it created the ring). Over many rounds it
 * forks a producer process, lets it run for a random 1..15 ms and kills it
 * with SIGKILL at whatever point it has reached (often half-way through
 * writing a slot: writes are chunked with random pauses), then forks the
 * next one. Both sides pause at random, so the ring runs full (overruns)
 * and empty (futex sleeps).
 *
 * Every payload is a pure function of its block's first_sample (the
 * producers' shared attempt counter), so any torn or stale word is caught.
 * At the end:
 *   - no delivered block is torn or corrupt;
 *   - every sequence gap is flagged DISCONTINUITY and the gaps add up to the
 *     overruns counter exactly;
 *   - every first_sample jump is flagged DISCONTINUITY, and the blocks lost
 *     with a killed producer are at most one per kill.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "chirp/ring.h"
#include "ring/ring_private.h"

#define ROUNDS 200

struct shared {
	_Atomic uint64_t attempts;   /* next first_sample: shared by all producers */
	_Atomic uint64_t attached;   /* producers that got as far as attaching     */
};

static uint64_t key_word(uint64_t key, uint64_t i)
{
	uint64_t x = (key + 0x1234567) * 0x9e3779b97f4a7c15ull ^ (i * 0xbf58476d1ce4e5b9ull);

	x ^= x >> 29;
	return x * 0x94d049bb133111ebull;
}

static uint64_t xrand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The producer process: never returns. */
static void producer_main(const char *name, struct shared *sh, uint64_t seed)
{
	struct chirp_ring *p = NULL;
	struct chirp_ring_geometry g;
	uint64_t s = seed | 1, words, k, i, sum;
	uint64_t *w;
	void *pl;
	int rc, tries;

	for (tries = 0; !p && tries < 2000; tries++) {
		p = chirp_ring_attach(name, CHIRP_RING_PRODUCER, NULL, NULL, 0);
		if (!p)
			usleep(500);   /* the previous producer's lock goes with its death */
	}
	if (!p)
		_exit(2);
	atomic_fetch_add(&sh->attached, 1);
	chirp_ring_geometry(p, &g);
	words = chirp_ring_cpi_bytes(&g) / 8;
	for (;;) {
		k = atomic_fetch_add(&sh->attempts, 1);
		rc = chirp_ring_reserve(p, &pl);
		if (rc == -ENOBUFS) {
			if (xrand(&s) % 4 == 0)
				usleep(xrand(&s) % 200);
			continue;
		}
		if (rc != 0)
			_exit(3);
		w = pl;
		sum = 0;
		/* Write in chunks with pauses so that kills land mid-write. */
		for (i = 0; i + 1 < words; i++) {
			w[i] = key_word(k, i);
			sum += w[i] * (2 * i + 1);
			if (i % 512 == 511) {
				uint64_t r = xrand(&s) % 64;

				if (r == 0)
					usleep(xrand(&s) % 300);
				else if (r < 4)
					sched_yield();
			}
		}
		w[words - 1] = sum;
		if (chirp_ring_commit(p, 0, k, 0) != 0)
			_exit(4);
		if (xrand(&s) % 16 == 0)
			usleep(xrand(&s) % 100);
	}
}

struct tally {
	uint64_t delivered, torn, seq_gap_blocks, fs_gap_blocks, unflagged, backwards;
	uint64_t last_seq, last_fs, redelivered;
	int have_last;
	uint64_t words;
};

static void check_block(struct tally *t, const struct chirp_ring_block *b)
{
	const uint64_t *w = b->payload;
	uint64_t i, sum = 0, k = b->first_sample;
	int jump;

	t->delivered++;
	if (b->len != t->words * 8) {
		t->torn++;
	} else {
		for (i = 0; i + 1 < t->words; i++) {
			if (w[i] != key_word(k, i)) {
				t->torn++;
				break;
			}
			sum += w[i] * (2 * i + 1);
		}
		if (i + 1 == t->words && w[t->words - 1] != sum)
			t->torn++;
	}
	if (b->flags & CHIRP_RING_REDELIVERED)
		t->redelivered++;
	if (!t->have_last) {
		t->seq_gap_blocks += b->seq;      /* the ring starts at seq 0 */
		t->fs_gap_blocks += b->first_sample;
		jump = b->seq != 0 || b->first_sample != 0;
	} else {
		if (b->seq <= t->last_seq || b->first_sample <= t->last_fs) {
			t->backwards++;
			return;
		}
		t->seq_gap_blocks += b->seq - t->last_seq - 1;
		t->fs_gap_blocks += b->first_sample - t->last_fs - 1;
		jump = b->seq != t->last_seq + 1 || b->first_sample != t->last_fs + 1;
	}
	if (jump && !(b->flags & CHIRP_RING_DISCONTINUITY))
		t->unflagged++;
	t->last_seq = b->seq;
	t->last_fs = b->first_sample;
	t->have_last = 1;
}

/* Consume until deadline (or until empty when deadline is 0). */
static void consume(struct chirp_ring *c, struct tally *t, int64_t deadline, uint64_t *s)
{
	struct chirp_ring_block b;
	int held = 0, rc;

	for (;;) {
		rc = chirp_ring_peek(c, &b);
		if (rc == 0) {
			check_block(t, &b);
			held++;
			if (held > (int)(xrand(s) % 4)) {
				while (held) {
					assert_int_equal(chirp_ring_release(c), 0);
					held--;
				}
			}
			if (xrand(s) % 64 == 0)
				usleep(xrand(s) % 2000);   /* fall behind: overruns */
			continue;
		}
		assert_int_equal(rc, -EAGAIN);
		while (held) {
			assert_int_equal(chirp_ring_release(c), 0);
			held--;
		}
		if (deadline == 0 || now_ns() >= deadline)
			break;
		rc = chirp_ring_wait(c, 1000000);
		assert_true(rc == 0 || rc == -ETIMEDOUT || rc == -EINTR);
	}
}

static void test_sigkill_producers(void **state)
{
	struct chirp_ring_geometry g = {
		.channels = 2, .pulses = 3, .samples = 517, .format = CHIRP_RING_CF32,
		.slots = 8, .sample_rate_hz = 10e6,
	};
	struct shared *sh;
	struct chirp_ring *c;
	struct chirp_ring_stats st;
	struct tally t = { 0 };
	char name[64], err[256] = "";
	uint64_t s = 0x2545F4914F6CDD1Dull ^ (uint64_t)getpid(), attempts, lost, trailing;
	int round, status;
	pid_t pid;

	snprintf(name, sizeof(name), "/chirp-test-stress-%d", (int)getpid());
	chirp_ring_unlink(name);
	c = chirp_ring_create(name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_non_null(c);
	t.words = chirp_ring_cpi_bytes(&g) / 8;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	atomic_store(&sh->attempts, 0);
	atomic_store(&sh->attached, 0);

	for (round = 0; round < ROUNDS; round++) {
		uint64_t seed = xrand(&s);

		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			/* never outlive a failed (or killed) test */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			producer_main(name, sh, seed);
		}
		consume(c, &t, now_ns() + 1000000 + (int64_t)(xrand(&s) % 14000000), &s);
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		/* it must have died by our hand, not by an error exit */
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), SIGKILL);
	}
	consume(c, &t, 0, &s);
	assert_int_equal(chirp_ring_available(c), 0);
	chirp_ring_stats(c, &st);
	attempts = atomic_load(&sh->attempts);
	lost = attempts - t.delivered - st.overruns;
	trailing = st.committed + st.overruns - (t.last_seq + 1);
	print_message("%d producers killed: %llu attempts, %llu delivered, %llu overruns, "
		      "%llu lost with killed producers, %llu re-attaches\n", ROUNDS,
		      (unsigned long long)attempts, (unsigned long long)t.delivered,
		      (unsigned long long)st.overruns, (unsigned long long)lost,
		      (unsigned long long)atomic_load(&sh->attached));

	assert_int_equal(t.torn, 0);
	assert_int_equal(t.backwards, 0);
	assert_int_equal(t.unflagged, 0);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(t.delivered, st.committed);
	assert_int_equal(st.released, st.committed);
	/* every sequence gap is a counted overrun and vice versa */
	assert_int_equal(t.seq_gap_blocks + trailing, st.overruns);
	/* a killed producer takes at most the block it was writing with it */
	assert_true(attempts >= t.delivered + st.overruns);
	assert_true(lost <= ROUNDS);
	assert_true(t.delivered > ROUNDS);   /* it did real work */
	/* (a kill may land before a producer got to attach) */
	assert_true(atomic_load(&sh->attached) > ROUNDS / 2);
	chirp_ring_detach(c);
	chirp_ring_unlink(name);
	munmap(sh, sizeof(*sh));
}

/*
 * The consumer is killed instead: a new consumer process re-attaches and
 * must see every committed block exactly once, except those the dead one
 * held unreleased, which come again flagged REDELIVERED, with their mode.
 * 11 slots: a count that is not a power of two (slot = position % 11).
 */
static void test_sigkill_consumers(void **state)
{
	struct chirp_ring_geometry g = {
		.channels = 1, .pulses = 2, .samples = 999, .format = CHIRP_RING_SC16,
		.slots = 11, .sample_rate_hz = 1e6,
	};
	struct chirp_ring *p;
	struct chirp_ring_stats st;
	char name[64], err[256] = "";
	uint64_t *seen, s = 77, k = 0;
	int round, status;
	uint64_t words;
	pid_t pid;
	enum { N = 10000, CROUNDS = 100 };

	snprintf(name, sizeof(name), "/chirp-test-stressc-%d", (int)getpid());
	chirp_ring_unlink(name);
	/* the producer owns the geometry here (as chirpd does on its output) */
	p = chirp_ring_create(name, &g, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_non_null(p);
	words = chirp_ring_cpi_bytes(&g) / 8;
	/* seen[k]: how many times block k was delivered (written by children) */
	seen = mmap(NULL, (N + 1) * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(seen != MAP_FAILED);

	for (round = 0; round < CROUNDS; round++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct chirp_ring *c = NULL;
			struct chirp_ring_block b;
			uint64_t cs = (uint64_t)getpid() * 2654435761u, i;
			int held = 0;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (int tries = 0; !c && tries < 2000; tries++)
				if (!(c = chirp_ring_attach(name, CHIRP_RING_CONSUMER, NULL, NULL, 0)))
					usleep(500);
			if (!c)
				_exit(2);
			for (;;) {
				int prc = chirp_ring_peek(c, &b);

				if (prc == -EAGAIN) {
					while (held > 0) {
						chirp_ring_release(c);
						held--;
					}
					chirp_ring_wait(c, 1000000);
					continue;
				}
				if (prc != 0)
					_exit(8);
				const uint64_t *w = b.payload;
				for (i = 0; i < words; i++)
					if (w[i] != key_word(b.first_sample, i))
						_exit(5);
				if (b.first_sample >= N || b.slot >= 11)
					_exit(6);
				if (b.mode != (uint32_t)(b.first_sample % 64))
					_exit(9);
				/* a second delivery must say so */
				if (seen[b.first_sample] && !(b.flags & CHIRP_RING_REDELIVERED))
					_exit(7);
				seen[b.first_sample]++;
				if (b.flags & CHIRP_RING_REDELIVERED)
					seen[N]++;
				if (++held > (int)(xrand(&cs) % 5)) {
					while (held--)
						chirp_ring_release(c);
					held = 0;
				}
				if (xrand(&cs) % 4 == 0)
					usleep(200);     /* busy with what it holds */
			}
		}
		int64_t until = now_ns() + 2000000 + (int64_t)(xrand(&s) % 8000000);
		uint64_t target = (uint64_t)(round + 1) * N / CROUNDS;

		int64_t bound = now_ns() + 60000000000LL;   /* safety only */

		/* the last round also finishes the N blocks */
		while (now_ns() < until || (round == CROUNDS - 1 && k < N && now_ns() < bound)) {
			void *pl;

			if (k >= target) {
				usleep(200);
				continue;
			}
			if (chirp_ring_wait(p, 1000000) != 0)
				continue;
			assert_int_equal(chirp_ring_reserve(p, &pl), 0);
			for (uint64_t i = 0; i < words; i++)
				((uint64_t *)pl)[i] = key_word(k, i);
			assert_int_equal(chirp_ring_commit_mode(p, 0, k, 0, (uint32_t)(k % 64)), 0);
			k++;
		}
		if (round == CROUNDS - 1) {
			/* let the last consumer drain before it is killed */
			while (chirp_ring_stats(p, &st) == 0 && st.released < N &&
			       waitpid(pid, &status, WNOHANG) == 0 && now_ns() < bound)
				usleep(1000);
		}
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status))
			print_error("consumer exited with %d (5 torn, 6 bad index, 7 unflagged "
				    "second delivery, 8 peek error, 9 wrong mode)\n",
				    WEXITSTATUS(status));
		assert_true(WIFSIGNALED(status));
	}
	chirp_ring_stats(p, &st);
	print_message("%d consumers killed, %llu blocks, %llu redelivered\n", round,
		      (unsigned long long)k, (unsigned long long)seen[N]);
	assert_int_equal(k, N);
	assert_int_equal(st.overruns, 0);   /* the producer waited for space */
	assert_int_equal(st.released, N);
	for (k = 0; k < N; k++)
		assert_true(seen[k] >= 1);       /* nothing lost */
	chirp_ring_detach(p);
	chirp_ring_unlink(name);
	munmap(seen, (N + 1) * sizeof(uint64_t));
}

/* A failed assertion skips the test's own unlink: never leave rings behind. */
static int cleanup(void **state)
{
	char name[64];

	snprintf(name, sizeof(name), "/chirp-test-stress-%d", (int)getpid());
	chirp_ring_unlink(name);
	snprintf(name, sizeof(name), "/chirp-test-stressc-%d", (int)getpid());
	chirp_ring_unlink(name);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sigkill_producers, cleanup),
		cmocka_unit_test_teardown(test_sigkill_consumers, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
