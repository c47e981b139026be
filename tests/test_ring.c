/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ring.c — unit tests of libchirpring (src/ring/ring.c): lifecycle,
 * zero-copy handoff, overruns, wrap-around at 2^32 and 2^64, re-attach and
 * redelivery, retire on geometry change, validation of corrupted headers
 * and descriptors, permissions, waiting, each block's radar mode, the ABI
 * version check, and slot counts that are not powers of two.
 *
 * Each test uses its own ring name (/chirp-test-<pid>-<n>) so parallel runs
 * and other suites never collide; every ring is unlinked at the end.
 */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "chirp/ring.h"
#include "ring/ring_private.h"

static char g_name[64];
static int g_counter;

static int setup(void **state)
{
	snprintf(g_name, sizeof(g_name), "/chirp-test-%d-%d", (int)getpid(), g_counter++);
	chirp_ring_unlink(g_name);
	return 0;
}

static int teardown(void **state)
{
	chirp_ring_unlink(g_name);
	return 0;
}

/* A non-power-of-two CPI: 3 x 5 x 1000 cf32 = 120000 bytes. */
static struct chirp_ring_geometry geo(uint32_t slots)
{
	struct chirp_ring_geometry g = {
		.channels = 3, .pulses = 5, .samples = 1000,
		.format = CHIRP_RING_CF32, .slots = slots, .sample_rate_hz = 25e6,
	};
	return g;
}

static struct chirp_ring *mk(const struct chirp_ring_geometry *g, enum chirp_ring_role role)
{
	char err[256] = "";
	struct chirp_ring *r = chirp_ring_create(g_name, g, role, NULL, err, sizeof(err));

	if (!r)
		print_error("create %s: %s\n", g_name, err);
	assert_non_null(r);
	return r;
}

static struct chirp_ring *att(enum chirp_ring_role role)
{
	char err[256] = "";
	struct chirp_ring *r = chirp_ring_attach(g_name, role, NULL, err, sizeof(err));

	if (!r)
		print_error("attach %s: %s\n", g_name, err);
	assert_non_null(r);
	return r;
}

/* Payload pattern determined by a key, so the reader can verify it. */
static void fill(void *p, uint64_t len, uint64_t key)
{
	uint64_t *w = p, x = key * 0x9e3779b97f4a7c15ull + 1;

	for (uint64_t i = 0; i < len / 8; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		w[i] = x;
	}
}

static int check_fill(const void *p, uint64_t len, uint64_t key)
{
	const uint64_t *w = p;
	uint64_t x = key * 0x9e3779b97f4a7c15ull + 1;

	for (uint64_t i = 0; i < len / 8; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		if (w[i] != x)
			return 0;
	}
	return 1;
}

static void push(struct chirp_ring *p, uint64_t key, uint32_t flags)
{
	void *pl;

	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	fill(pl, chirp_ring_slot_bytes(p) < 120000 ? 0 : 120000, key);
	assert_int_equal(chirp_ring_commit(p, 1000 + key, key * 5000, flags), 0);
}

/* ------------------------------------------------------------------------- */

static void test_geometry(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	char err[256];

	assert_int_equal(chirp_ring_cpi_bytes(&g), 3ull * 5 * 1000 * 8);
	g.format = CHIRP_RING_SC16;
	assert_int_equal(chirp_ring_cpi_bytes(&g), 3ull * 5 * 1000 * 4);
	g.format = 9;
	assert_int_equal(chirp_ring_cpi_bytes(&g), 0);
	g = geo(6);     /* not a power of two: any count 2..65536 */
	assert_int_equal(chirp_ring_cpi_bytes(&g), 3ull * 5 * 1000 * 8);
	g = geo(65535);
	assert_int_equal(chirp_ring_cpi_bytes(&g), 3ull * 5 * 1000 * 8);
	g = geo(2);
	assert_int_equal(chirp_ring_cpi_bytes(&g), 3ull * 5 * 1000 * 8);
	g = geo(1);
	assert_int_equal(chirp_ring_cpi_bytes(&g), 0);
	assert_null(chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "2..65536"));
	g = geo(65537);
	assert_int_equal(chirp_ring_cpi_bytes(&g), 0);
	g = geo(131072);
	assert_int_equal(chirp_ring_cpi_bytes(&g), 0);
	g = geo(8);
	g.channels = 0;
	assert_int_equal(chirp_ring_cpi_bytes(&g), 0);
	g = geo(8);
	g.sample_rate_hz = 0.0 / 0.0;
	assert_int_equal(chirp_ring_cpi_bytes(&g), 0);
	g = geo(8);
	g.channels = g.pulses = g.samples = 0xffffffffu;   /* overflows */
	assert_int_equal(chirp_ring_cpi_bytes(&g), 0);
	assert_null(chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err)));
	g = geo(8);
	assert_null(chirp_ring_create("no-slash", &g, CHIRP_RING_CONSUMER, NULL, err,
				      sizeof(err)));
	assert_non_null(strstr(err, "'/'"));
	assert_null(chirp_ring_create("/a/b", &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err)));
	assert_null(chirp_ring_create(g_name, &g, 7, NULL, err, sizeof(err)));
}

static void test_create_attach_layout(void **state)
{
	struct chirp_ring_geometry g = geo(8), g2;
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p;
	struct chirp_ring_stats st;
	struct stat sb;
	char path[128];
	void *base;
	size_t len;

	p = att(CHIRP_RING_PRODUCER);
	chirp_ring_geometry(p, &g2);
	assert_int_equal(g2.channels, 3);
	assert_int_equal(g2.pulses, 5);
	assert_int_equal(g2.samples, 1000);
	assert_int_equal(g2.slots, 8);
	assert_true(g2.sample_rate_hz == 25e6);
	assert_int_equal(chirp_ring_slot_bytes(p) % 4096, 0);
	assert_true(chirp_ring_slot_bytes(p) >= 120000);
	chirp_ring_data(c, &base, &len);
	assert_int_equal((uintptr_t)base % 4096, 0);
	assert_int_equal(len, 8 * chirp_ring_slot_bytes(c));
	assert_int_equal(chirp_ring_stats(c, &st), 0);
	assert_int_not_equal(st.epoch, 0);
	assert_int_equal(st.committed, 0);
	assert_string_equal(chirp_ring_name(c), g_name);
	assert_int_equal(chirp_ring_peer_attached(c), 1);
	assert_int_equal(chirp_ring_peer_attached(p), 1);
	snprintf(path, sizeof(path), "/dev/shm%s", g_name);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(chirp_ring_check(c, NULL, 0), 0);
	assert_int_equal(chirp_ring_check(p, NULL, 0), 0);
	chirp_ring_detach(p);
	assert_int_equal(chirp_ring_peer_attached(c), 0);
	chirp_ring_detach(c);
}

static void test_attach_missing(void **state)
{
	char err[256] = "";

	assert_null(chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "no ring"));
	assert_int_equal(chirp_ring_unlink(g_name), -ENOENT);
}

static void test_single_role(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p, *p2, *c2;
	char err[256] = "";

	p = att(CHIRP_RING_PRODUCER);
	p2 = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_null(p2);
	assert_non_null(strstr(err, "live producer"));
	c2 = chirp_ring_attach(g_name, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_null(c2);
	assert_non_null(strstr(err, "live consumer"));
	/* a second creator in the consumer role is refused as well */
	assert_null(chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "live consumer"));
	g.slots = 8; /* even with another geometry: never retire a live consumer's ring */
	assert_null(chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err)));
	chirp_ring_detach(p);
	p = att(CHIRP_RING_PRODUCER);   /* the role is free again */
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* chirp_ring_role_held reads each role's kernel-held lock without
 * attaching: held while a handle has the role, free after its detach. */
static void test_role_held(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c, *p;

	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_CONSUMER), -ENOENT);
	assert_int_equal(chirp_ring_role_held("no-slash", CHIRP_RING_CONSUMER), -EINVAL);
	c = mk(&g, CHIRP_RING_CONSUMER);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_CONSUMER), 1);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_PRODUCER), 0);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_PRODUCER), 1);
	assert_int_equal(chirp_ring_peer_attached(c), 1);   /* the probe took nothing */
	chirp_ring_detach(c);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_CONSUMER), 0);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_PRODUCER), 1);
	chirp_ring_detach(p);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_PRODUCER), 0);
	assert_int_equal(chirp_ring_unlink(g_name), 0);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_PRODUCER), -ENOENT);
}

/* chirp_ring_probe reads an existing ring's geometry and epoch and takes
 * nothing: a crashed holder's ring is found, and re-created rings read
 * with their new epoch. */
static void test_probe(void **state)
{
	struct chirp_ring_geometry g = geo(4), got, g8 = geo(8);
	struct chirp_ring_stats st;
	struct chirp_ring *c, *c2;
	uint64_t epoch = 0;
	char err[200];

	assert_int_equal(chirp_ring_probe(g_name, NULL, &got, &epoch, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no ring"));
	assert_int_equal(chirp_ring_probe("no-slash", NULL, &got, &epoch, err, sizeof(err)),
			 -EINVAL);
	c = mk(&g, CHIRP_RING_CONSUMER);
	assert_int_equal(chirp_ring_probe(g_name, NULL, &got, &epoch, err, sizeof(err)), 0);
	assert_int_equal(got.slots, 4);
	assert_int_equal(got.samples, g.samples);
	assert_int_equal(chirp_ring_stats(c, &st), 0);
	assert_true(epoch == st.epoch);
	assert_int_equal(chirp_ring_role_held(g_name, CHIRP_RING_PRODUCER), 0);  /* took no role */
	chirp_ring_detach(c);
	/* The same geometry re-attaches (epoch kept); another re-creates. */
	c = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(chirp_ring_stats(c, &st), 0);
	assert_true(st.epoch == epoch);
	chirp_ring_detach(c);
	c2 = chirp_ring_create(g_name, &g8, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_non_null(c2);
	assert_int_equal(chirp_ring_probe(g_name, NULL, &got, &epoch, err, sizeof(err)), 0);
	assert_int_equal(got.slots, 8);
	assert_int_equal(chirp_ring_stats(c2, &st), 0);
	assert_true(st.epoch == epoch);
	chirp_ring_detach(c2);
	assert_int_equal(chirp_ring_unlink(g_name), 0);
}

static void test_handoff_and_inflight(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b[4];
	void *pl, *pl2;
	int i;

	assert_int_equal(chirp_ring_peek(c, &b[0]), -EAGAIN);
	assert_int_equal(chirp_ring_release(c), -EINVAL);
	assert_int_equal(chirp_ring_commit(p, 0, 0, 0), -EINVAL);   /* nothing reserved */
	assert_int_equal(chirp_ring_reserve(c, &pl), -EPERM);
	assert_int_equal(chirp_ring_peek(p, &b[0]), -EPERM);

	/* reserve twice -> same slot */
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	assert_int_equal(chirp_ring_reserve(p, &pl2), 0);
	assert_ptr_equal(pl, pl2);
	assert_int_equal((uintptr_t)pl % 4096, 0);
	fill(pl, 120000, 0);
	assert_int_equal(chirp_ring_available(c), 0);   /* not published yet */
	assert_int_equal(chirp_ring_commit(p, 777, 0, CHIRP_RING_NONFINITE), 0);
	for (i = 1; i < 4; i++)
		push(p, i, 0);
	assert_int_equal(chirp_ring_available(c), 4);

	/* hold all four at once, release in order */
	for (i = 0; i < 4; i++) {
		assert_int_equal(chirp_ring_peek(c, &b[i]), 0);
		assert_int_equal(b[i].seq, i);
		assert_int_equal(b[i].first_sample, i * 5000);
		assert_int_equal(b[i].len, 120000);
		assert_int_equal(b[i].slot, i);
		assert_true(check_fill(b[i].payload, 120000, i));
	}
	assert_int_equal(b[0].timestamp_ns, 777);
	assert_int_equal(b[0].flags, CHIRP_RING_NONFINITE);
	assert_int_equal(b[1].flags, 0);
	assert_int_equal(b[1].timestamp_ns, 1001);
	assert_int_equal(chirp_ring_peek(c, &b[0]), -EAGAIN);
	assert_int_equal(chirp_ring_available(c), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_release(c), -EINVAL);

	/* timestamp 0 = now */
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	assert_int_equal(chirp_ring_commit(p, 0, 1, 0), 0);
	assert_int_equal(chirp_ring_peek(c, &b[0]), 0);
	assert_true(b[0].timestamp_ns > 1500000000ull * 1000000000ull);
	assert_int_equal(chirp_ring_release(c), 0);

	struct chirp_ring_stats st;
	chirp_ring_stats(p, &st);
	assert_int_equal(st.committed, 5);
	assert_int_equal(st.released, 5);
	assert_int_equal(st.overruns, 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* Drops on a full ring of n slots: each counted, each taking a block
 * number, the next committed block flagged. */
static void overrun_with(uint32_t n)
{
	struct chirp_ring_geometry g = geo(n);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	void *pl;
	uint32_t i;

	for (i = 0; i < n; i++)
		push(p, i, 0);
	/* full: three blocks dropped, each counted, each taking a number */
	for (i = 0; i < 3; i++)
		assert_int_equal(chirp_ring_reserve(p, &pl), -ENOBUFS);
	chirp_ring_stats(p, &st);
	assert_int_equal(st.overruns, 3);
	assert_int_equal(st.committed, n);
	/* consumer holds one, releases one: space for exactly one */
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	push(p, n + 3, 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), -ENOBUFS);   /* n + 4 dropped */
	for (i = 1; i < n; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.slot, i % n);
		assert_int_equal(b.flags & CHIRP_RING_DISCONTINUITY, 0);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, n + 3);                   /* n .. n + 2 were dropped */
	assert_int_equal(b.slot, 0);                      /* position n */
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_true(check_fill(b.payload, 120000, n + 3));
	assert_int_equal(chirp_ring_release(c), 0);
	push(p, n + 5, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, n + 5);                   /* n + 4 dropped */
	assert_int_equal(b.slot, 1 % n);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_int_equal(chirp_ring_release(c), 0);
	push(p, n + 6, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, n + 6);
	assert_int_equal(b.flags, 0);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.overruns, 4);
	assert_int_equal(st.committed, n + 3);
	/* every number is accounted for: committed + overruns = next seq */
	assert_int_equal(st.committed + st.overruns, n + 7);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_overrun(void **state)
{
	overrun_with(4);
}

static void test_overrun_odd_slots(void **state)
{
	overrun_with(3);
	chirp_ring_unlink(g_name);
	overrun_with(5);
	chirp_ring_unlink(g_name);
	overrun_with(7);
}

/* Run many blocks across a free-running index near base. */
static void wrap_at(uint64_t pos, uint64_t seq)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p;
	struct chirp_ring_block b;
	void *pl;
	uint64_t expect = seq, k, delivered = 0;
	int held = 0;

	assert_int_equal(ring_debug_set_seq(c, pos, seq), 0);
	p = att(CHIRP_RING_PRODUCER);
	for (k = 0; k < 40; k++) {
		if (k % 7 == 3) {
			/* fill up and drop one to cross the wrap with a gap too */
			while (chirp_ring_reserve(p, &pl) == 0) {
				fill(pl, 120000, expect);
				assert_int_equal(chirp_ring_commit(p, 1, expect, 0), 0);
				expect++;
			}
			expect++;   /* the dropped one */
		} else if (chirp_ring_reserve(p, &pl) == 0) {
			fill(pl, 120000, expect);
			assert_int_equal(chirp_ring_commit(p, 1, expect, 0), 0);
			expect++;
		} else {
			expect++;
		}
		/* consume everything, holding two at a time */
		while (chirp_ring_peek(c, &b) == 0) {
			assert_int_equal(b.first_sample, b.seq);
			assert_true(check_fill(b.payload, 120000, b.seq));
			assert_int_equal(b.slot, (uint32_t)((pos + delivered) & 3));
			delivered++;
			if (++held == 2) {
				assert_int_equal(chirp_ring_release(c), 0);
				held--;
			}
		}
		while (held) {
			assert_int_equal(chirp_ring_release(c), 0);
			held--;
		}
		assert_int_equal(chirp_ring_check(c, NULL, 0), 0);
	}
	assert_int_equal(b.seq, expect - 1);
	/* really crossed: the position wrapped past the base */
	uint64_t now = atomic_load(&ring_debug_hdr(c)->prod);
	assert_true(now - pos > 40);
	if (pos > UINT64_MAX - 1000)
		assert_true(now < 1000);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_wrap_2_32(void **state)
{
	wrap_at((1ull << 32) - 13, (1ull << 32) - 17);
}

static void test_wrap_2_64(void **state)
{
	wrap_at(UINT64_MAX - 12, UINT64_MAX - 16);
}

static void test_consumer_restart_redelivers(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	uint64_t epoch;
	int i;

	chirp_ring_stats(c, &st);
	epoch = st.epoch;
	for (i = 0; i < 6; i++)
		push(p, i, 0);
	/* consumer takes 0..3, releases 0..1, then "crashes" */
	for (i = 0; i < 4; i++)
		assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(c);

	/* restart as the creator with the same geometry: state is kept */
	c = mk(&g, CHIRP_RING_CONSUMER);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.epoch, epoch);
	for (i = 2; i < 6; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_true(check_fill(b.payload, 120000, i));
		if (i < 4)
			assert_true(b.flags & CHIRP_RING_REDELIVERED);
		else
			assert_false(b.flags & CHIRP_RING_REDELIVERED);
		if (i == 2) {
			/* crash again during redelivery: 2..3 still flagged */
			chirp_ring_detach(c);
			c = att(CHIRP_RING_CONSUMER);
			assert_int_equal(chirp_ring_peek(c, &b), 0);
			assert_int_equal(b.seq, 2);
			assert_true(b.flags & CHIRP_RING_REDELIVERED);
		}
		assert_int_equal(chirp_ring_release(c), 0);
	}
	/* the producer never noticed */
	push(p, 6, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 6);
	assert_int_equal(b.flags, 0);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_producer_restart(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b, last;
	void *pl;

	assert_int_equal(chirp_ring_last_commit(p, &last), -ENOENT);
	push(p, 0, 0);
	push(p, 1, 0);
	assert_int_equal(chirp_ring_last_commit(p, &last), 0);
	assert_int_equal(last.seq, 1);
	assert_int_equal(last.first_sample, 5000);
	/* reserved, half written, producer dies */
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	memset(pl, 0xee, 1000);
	chirp_ring_detach(p);
	assert_int_equal(chirp_ring_available(c), 2);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_last_commit(p, &last), 0);
	assert_int_equal(last.seq, 1);
	push(p, 2, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_true(check_fill(b.payload, 120000, i));   /* never the torn one */
		/* a new producer on a used ring: its first block is flagged */
		assert_int_equal(!!(b.flags & CHIRP_RING_DISCONTINUITY), i == 2);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/*
 * Indices scribbled on by a third party while both sides run: nobody
 * crashes, nothing unwritten is delivered, and the ring heals itself as
 * soon as each side stores its own index again.
 */
static void test_scribbled_indices_heal(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct chirp_ring_block b;
	char err[256] = "";
	void *pl;
	int i;

	push(p, 0, 0);
	push(p, 1, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	/* producer index moved ahead, inside the window: slots 2..5 unwritten */
	atomic_store(&h->prod, 6);
	atomic_store(&h->next_seq, 12345);
	assert_int_equal(chirp_ring_peek(c, &b), 0);    /* 1 is real (cached) */
	assert_int_equal(b.seq, 1);
	assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);   /* 2 was never written */
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);   /* still nothing taken */
	assert_int_equal(chirp_ring_check(c, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "ahead of the data"));
	/* the producer's next commit rewrites its index (and its own count) */
	push(p, 2, 0);
	assert_int_equal(chirp_ring_check(c, NULL, 0), 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 2);                      /* scribbled count not used */
	assert_int_equal(b.flags & CHIRP_RING_DISCONTINUITY, 0);
	assert_true(check_fill(b.payload, 120000, 2));
	assert_int_equal(chirp_ring_release(c), 0);
	/* consumer index scribbled ahead: the producer refuses, the consumer
	 * puts its index back at its next look, the producer goes on */
	for (i = 3; i < 11; i++)
		push(p, i, 0);   /* 3..10 fill the ring */
	atomic_store(&h->cons, 40);
	assert_int_equal(chirp_ring_reserve(p, &pl), -EBADMSG);
	for (i = 3; i < 11; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_int_equal(chirp_ring_peek(c, &b), -EAGAIN);    /* repairs cons */
	assert_int_equal(atomic_load(&h->cons), 11);
	push(p, 11, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 11);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* Producer killed between publishing prod and advancing next_seq. */
static void test_producer_crash_mid_commit(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	void *pl;

	push(p, 0, 0);
	push(p, 1, 0);
	atomic_store(&h->next_seq, 1);             /* as if killed before the store */
	chirp_ring_stats(c, &st);
	assert_int_equal(st.committed, 2);
	assert_int_equal(st.overruns, 0);          /* never negative */
	chirp_ring_detach(p);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(atomic_load(&h->next_seq), 2);   /* repaired */
	push(p, 2, 0);
	/* and a drop that set the flag but died before counting */
	for (int i = 3; i < 8; i++)
		push(p, i, 0);
	atomic_fetch_or(&h->pending_flags, CHIRP_RING_DISCONTINUITY);
	chirp_ring_detach(p);                      /* ...and died there */
	p = att(CHIRP_RING_PRODUCER);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);               /* no duplicate, no gap */
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	assert_int_equal(chirp_ring_commit(p, 1, 8, 0), 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);   /* spare flag, never a missing one */
	chirp_ring_stats(c, &st);
	assert_int_equal(st.overruns, 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_retire_on_new_geometry(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	uint64_t epoch;
	void *pl;
	char err[256] = "";

	chirp_ring_stats(c, &st);
	epoch = st.epoch;
	push(p, 0, 0);
	chirp_ring_detach(c);
	g.samples = 2000;
	c = mk(&g, CHIRP_RING_CONSUMER);
	chirp_ring_stats(c, &st);
	assert_int_not_equal(st.epoch, epoch);
	assert_int_equal(st.committed, 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), -ESTALE);
	assert_int_equal(chirp_ring_check(p, err, sizeof(err)), -ESTALE);
	assert_true(strlen(err) > 0);
	assert_int_equal(chirp_ring_wait(p, 1000000), 0);   /* returns at once */
	chirp_ring_detach(p);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	memset(pl, 1, 240000);
	assert_int_equal(chirp_ring_commit(p, 1, 2, 0), 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.len, 240000);
	assert_int_equal(b.seq, 0);
	assert_int_equal(chirp_ring_release(c), 0);
	/* unlink retires too */
	assert_int_equal(chirp_ring_unlink(g_name), 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), -ESTALE);
	assert_int_equal(chirp_ring_peek(c, &b), -ESTALE);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_version_mismatch(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p;
	char err[256] = "";

	ring_debug_hdr(c)->abi_version = 7;
	p = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_null(p);
	assert_non_null(strstr(err, "ABI version 7"));
	assert_int_equal(chirp_ring_check(c, err, sizeof(err)), -EBADMSG);
	chirp_ring_detach(c);
	/* the creator replaces a ring of another version */
	c = mk(&g, CHIRP_RING_CONSUMER);
	p = att(CHIRP_RING_PRODUCER);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* The expected refusal of an attach to the ring g_name, for both roles. */
static void expect_refused(int want_errno, const char *want_msg)
{
	enum chirp_ring_role roles[] = { CHIRP_RING_PRODUCER, CHIRP_RING_CONSUMER };
	char err[256];

	for (int i = 0; i < 2; i++) {
		err[0] = '\0';
		errno = 0;
		assert_null(chirp_ring_attach(g_name, roles[i], NULL, err, sizeof(err)));
		assert_int_equal(errno, want_errno);
		if (!strstr(err, want_msg))
			print_error("error \"%s\" lacks \"%s\"\n", err, want_msg);
		assert_non_null(strstr(err, want_msg));
	}
}

/*
 * Rings of older ABIs: the magic and the version sit where ABI 1 put them
 * (offsets 0 and 8), so each library reads the other's version before
 * anything else and refuses with one error naming both (an ABI 2 library
 * says "ring ABI version 3, this library speaks 2": its check is this one
 * with the numbers swapped). A header written as ABI 2 (or 1) is refused
 * here for either role, never read as blocks (its 64-byte descriptors
 * would be misread as 128-byte ones); chirp_ring_create retires it (the
 * older peers still attached see the state word they know, RETIRED) and
 * makes an ABI 3 ring with a new epoch.
 */
static void test_old_abi_ring(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(p);   /* the producer's mapping: it stays */
	const uint8_t *raw = (const uint8_t *)h;
	struct chirp_ring_stats st;
	char want[128];
	uint32_t v;
	uint64_t magic, epoch;
	void *pl;

	/* where an ABI 1 library looks: magic at 0, version at 8, state word */
	memcpy(&magic, raw, 8);
	memcpy(&v, raw + 8, 4);
	assert_true(magic == RING_MAGIC);
	assert_int_equal(v, CHIRP_RING_ABI_VERSION);
	assert_int_equal(CHIRP_RING_ABI_VERSION, 3);
	assert_int_equal(offsetof(struct ring_hdr, abi_version), 8);
	assert_int_equal(offsetof(struct ring_hdr, state), 104);

	push(p, 0, 0);
	chirp_ring_stats(c, &st);
	epoch = st.epoch;
	chirp_ring_detach(c);
	/* the object now reads as an ABI 2 ring (p stands for its producer) */
	h->abi_version = 2;
	snprintf(want, sizeof(want), "ring %s: ABI version 2, this library speaks 3", g_name);
	expect_refused(EPROTO, want);
	h->abi_version = 1;
	snprintf(want, sizeof(want), "ring %s: ABI version 1, this library speaks 3", g_name);
	expect_refused(EPROTO, want);
	/* create retires it and makes a new ring: the old producer is told */
	c = mk(&g, CHIRP_RING_CONSUMER);
	chirp_ring_stats(c, &st);
	assert_int_not_equal(st.epoch, epoch);
	assert_int_equal(st.committed, 0);
	assert_int_equal(atomic_load(&h->state), RING_STATE_RETIRED);
	assert_int_equal(chirp_ring_reserve(p, &pl), -ESTALE);
	chirp_ring_detach(p);
	/* a newer ABI is refused the same way */
	ring_debug_hdr(c)->abi_version = 4;
	snprintf(want, sizeof(want), "ring %s: ABI version 4, this library speaks 3", g_name);
	expect_refused(EPROTO, want);
	ring_debug_hdr(c)->abi_version = CHIRP_RING_ABI_VERSION;
	p = att(CHIRP_RING_PRODUCER);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* A block's mode goes through the ring unchanged: peek and last_commit
 * show it, commit is mode 0, redelivered blocks keep theirs. */
static void test_mode_round_trip(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	const uint32_t modes[] = { 0, 5, 63, 0xffffffffu, 0, 7 };
	struct chirp_ring_block b;
	void *pl;
	int i;

	for (i = 0; i < 6; i++) {
		assert_int_equal(chirp_ring_reserve(p, &pl), 0);
		fill(pl, 120000, i);
		if (i == 4)   /* plain commit: mode 0, even after a nonzero one */
			assert_int_equal(chirp_ring_commit(p, 1, i, 0), 0);
		else
			assert_int_equal(chirp_ring_commit_mode(p, 1, i, 0, modes[i]), 0);
		memset(&b, 0xa5, sizeof(b));
		assert_int_equal(chirp_ring_last_commit(p, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.mode, modes[i]);
		assert_int_equal(b.reserved, 0);
	}
	/* take 0..3, release 0..1, crash: 2 and 3 are redelivered */
	for (i = 0; i < 4; i++) {
		memset(&b, 0xa5, sizeof(b));
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.mode, modes[i]);
		assert_int_equal(b.reserved, 0);
		assert_true(check_fill(b.payload, 120000, i));
	}
	assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(c);
	c = att(CHIRP_RING_CONSUMER);
	for (i = 2; i < 6; i++) {
		memset(&b, 0xa5, sizeof(b));
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.mode, modes[i]);
		assert_int_equal(b.reserved, 0);
		assert_int_equal(!!(b.flags & CHIRP_RING_REDELIVERED), i < 4);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	/* a consumer handle cannot commit */
	assert_int_equal(chirp_ring_commit_mode(c, 1, 0, 0, 3), -EPERM);
	assert_int_equal(chirp_ring_commit_mode(p, 1, 0, 0, 3), -EINVAL);   /* none reserved */
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_foreign_object_untouched(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	char err[256] = "", buf[8192];
	int fd = shm_open(g_name, O_CREAT | O_EXCL | O_RDWR, 0600);

	assert_true(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
	assert_null(chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "not a chirp ring"));
	assert_non_null(strstr(err, g_name + 1));           /* says which object */
	assert_null(chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "not a chirp ring"));
	fd = shm_open(g_name, O_RDONLY, 0);
	assert_true(fd >= 0);   /* still there, not clobbered */
	assert_int_equal(read(fd, buf, 4), 4);
	assert_memory_equal(buf, "xxxx", 4);
	close(fd);
}

/* A half-made object: removed if abandoned, left alone while its creator lives. */
static void test_half_created(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 1, .l_len = 1 };
	struct chirp_ring *c, *p;
	char err[256] = "";
	int fd = shm_open(g_name, O_CREAT | O_EXCL | O_RDWR, 0600);

	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);   /* a live creator */
	assert_null(chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	assert_int_equal(errno, EAGAIN);
	assert_non_null(strstr(err, "being created"));
	assert_non_null(strstr(err, g_name + 1));
	assert_non_null(strstr(err, "stale"));             /* and what else it may be */
	assert_null(chirp_ring_create(g_name, &g, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	assert_int_equal(errno, EBUSY);
	assert_non_null(strstr(err, "being created by another process"));
	/* it grows to a zeroed page: still being created */
	assert_int_equal(ftruncate(fd, 65536), 0);
	assert_null(chirp_ring_create(g_name, &g, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	assert_int_equal(errno, EBUSY);
	close(fd);                                           /* the creator died */
	c = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_non_null(c);
	p = att(CHIRP_RING_PRODUCER);
	push(p, 0, 0);
	assert_int_equal(chirp_ring_available(c), 1);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_permissions(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring_opts o = { .mode = 0, .group = 12345 };
	struct chirp_ring *c, *p;
	char err[256] = "", path[128];
	struct stat sb;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm%s", g_name);
	c = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, &o, err, sizeof(err));
	if (!c && geteuid() != 0) {
		skip();   /* chown to an arbitrary group needs root */
	}
	assert_non_null(c);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0660);
	assert_int_equal(sb.st_gid, 12345);
	chirp_ring_detach(c);
	chirp_ring_unlink(g_name);

	if (geteuid() != 0)
		skip();
	c = mk(&g, CHIRP_RING_CONSUMER);
	fd = shm_open(g_name, O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 4321, (gid_t)-1), 0);
	close(fd);
	p = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_null(p);
	assert_non_null(strstr(err, "owned by uid 4321"));
	o.group = (gid_t)-1;
	o.allow_foreign_owner = 1;
	p = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, &o, err, sizeof(err));
	assert_non_null(p);
	chirp_ring_detach(p);
	/* world-writable is refused too */
	fd = shm_open(g_name, O_RDWR, 0);
	assert_int_equal(fchown(fd, geteuid(), (gid_t)-1), 0);
	assert_int_equal(fchmod(fd, 0666), 0);
	close(fd);
	p = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_null(p);
	assert_non_null(strstr(err, "world-writable"));
	chirp_ring_detach(c);
}

static void test_corrupt_indices(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct chirp_ring_block b;
	char err[256] = "";
	void *pl;

	push(p, 0, 0);
	push(p, 1, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);   /* loads prod = 2 */
	/* producer index far ahead: the consumer must refuse, not read */
	atomic_store(&h->prod, 1000);
	assert_int_equal(chirp_ring_peek(c, &b), 0);   /* still within the cached 2 */
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);
	assert_int_equal(chirp_ring_available(c), 0);
	assert_int_equal(chirp_ring_check(c, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "indices"));
	assert_null(chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	/* index behind what we already took: refused as well */
	atomic_store(&h->prod, 1);
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);
	assert_int_equal(chirp_ring_check(c, err, sizeof(err)), -EBADMSG);
	atomic_store(&h->prod, 2);
	assert_int_equal(chirp_ring_check(c, NULL, 0), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	/* consumer index ahead of the producer */
	atomic_store(&h->cons, 50);
	push(p, 2, 0);       /* the cached consumer index lets these through */
	push(p, 3, 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), -EBADMSG);
	assert_int_equal(chirp_ring_check(p, err, sizeof(err)), -EBADMSG);
	atomic_store(&h->cons, 2);
	/* geometry scribbled: check() notices */
	h->slots = 64;
	assert_int_equal(chirp_ring_check(p, err, sizeof(err)), -EBADMSG);
	h->slots = 4;
	h->slot_bytes += 4096;
	assert_int_equal(chirp_ring_check(p, err, sizeof(err)), -EBADMSG);
	h->slot_bytes -= 4096;
	assert_int_equal(chirp_ring_check(p, NULL, 0), 0);
	atomic_store(&h->state, 12345);
	assert_int_equal(chirp_ring_reserve(p, &pl), -EBADMSG);
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);
	atomic_store(&h->state, RING_STATE_READY);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_corrupt_descriptor_skipped(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct ring_desc *d = (struct ring_desc *)((uint8_t *)h + h->desc_offset);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	int i;

	for (i = 0; i < 6; i++)
		push(p, i, 0);
	atomic_store(&d[1].len, 1ull << 40);       /* beyond the slot */
	atomic_store(&d[2].pos, 99);               /* stale descriptor */
	atomic_store(&d[4].len, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);  /* 0 held */
	assert_int_equal(b.seq, 0);
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 3);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_int_equal(chirp_ring_release(c), 0);   /* releases 0, 1, 2 */
	assert_int_equal(atomic_load(&h->cons), 3);
	assert_int_equal(chirp_ring_release(c), 0);   /* 3 */
	assert_int_equal(chirp_ring_peek(c, &b), -EBADMSG);   /* 4, none held: freed now */
	assert_int_equal(atomic_load(&h->cons), 5);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 5);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.skipped, 3);
	assert_int_equal(st.released, 3);
	/* a block number going backwards (the producer's count scribbled on)
	 * is a discontinuity, not a reason to refuse this and every later block */
	push(p, 6, 0);
	push(p, 7, 0);
	atomic_store(&d[6].seq, 2);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 2);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 7);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/*
 * Flags outside the ones this library defines never reach a consumer: a
 * producer's stray bits are dropped at commit, and bits a peer writes into
 * a descriptor in shared memory (including REDELIVERED, which only the
 * consumer's own peek may set) are dropped at peek.
 */
static void test_unknown_flags_masked(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct ring_desc *d = (struct ring_desc *)((uint8_t *)h + h->desc_offset);
	const uint32_t known = CHIRP_RING_DISCONTINUITY | CHIRP_RING_NONFINITE |
			       CHIRP_RING_REDELIVERED | CHIRP_RING_UNKNOWN_MODE |
			       CHIRP_RING_INCOMPLETE | CHIRP_RING_BAD_POINTING;
	struct chirp_ring_block b;

	/* 0: the caller passes unknown bits and REDELIVERED: only NONFINITE
	 * and UNKNOWN_MODE (a producer's flags, chirpd's on output) are
	 * committed. */
	push(p, 0, CHIRP_RING_NONFINITE | CHIRP_RING_UNKNOWN_MODE | CHIRP_RING_REDELIVERED |
		   (1u << 9) | (1u << 31));
	assert_int_equal(atomic_load(&d[0].flags), CHIRP_RING_NONFINITE | CHIRP_RING_UNKNOWN_MODE);
	assert_int_equal(chirp_ring_last_commit(p, &b), 0);
	assert_int_equal(b.flags, CHIRP_RING_NONFINITE | CHIRP_RING_UNKNOWN_MODE);
	/* 1, 2: committed clean, then another process writes unknown bits
	 * (and REDELIVERED) into the descriptors. */
	push(p, 1, 0);
	push(p, 2, CHIRP_RING_NONFINITE);
	atomic_store(&d[1].flags, (1u << 6) | (1u << 17) | (1u << 31));
	atomic_store(&d[2].flags, ~0u);
	assert_int_equal(chirp_ring_last_commit(p, &b), 0);
	assert_int_equal(b.flags & ~known, 0);
	assert_int_equal(b.flags, CHIRP_RING_DISCONTINUITY | CHIRP_RING_NONFINITE |
				  CHIRP_RING_UNKNOWN_MODE | CHIRP_RING_INCOMPLETE |
				  CHIRP_RING_BAD_POINTING);

	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 0);
	assert_int_equal(b.flags, CHIRP_RING_NONFINITE | CHIRP_RING_UNKNOWN_MODE);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 1);
	assert_int_equal(b.flags, 0);               /* every bit written was unknown */
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 2);
	/* all ones: the five a producer may set; not REDELIVERED (this block
	 * was never taken by a consumer before) */
	assert_int_equal(b.flags, CHIRP_RING_DISCONTINUITY | CHIRP_RING_NONFINITE |
				  CHIRP_RING_UNKNOWN_MODE | CHIRP_RING_INCOMPLETE |
				  CHIRP_RING_BAD_POINTING);
	assert_int_equal(b.missing, 0);   /* committed whole: no count stored */
	for (int i = 0; i < 3; i++)
		assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/*
 * CHIRP_RING_INCOMPLETE and its count travel from commit to peek (and
 * last_commit); the count is read only with the flag, so a stale word in
 * a descriptor written by a producer without the flag is never seen.
 */
static void test_incomplete_count(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct ring_desc *d = (struct ring_desc *)((uint8_t *)h + h->desc_offset);
	const uint32_t missing[] = { 0, 1, 4096, 0xffffffffu };
	struct chirp_ring_block b;
	void *pl;

	for (int i = 0; i < 4; i++) {
		assert_int_equal(chirp_ring_reserve(p, &pl), 0);
		assert_int_equal(chirp_ring_commit_partial(p, 1, i, 0, 3, missing[i]), 0);
		assert_int_equal(chirp_ring_last_commit(p, &b), 0);
		assert_int_equal(!!(b.flags & CHIRP_RING_INCOMPLETE), missing[i] != 0);
		assert_int_equal(b.missing, missing[i]);
	}
	/* the flag without a count: INCOMPLETE, missing 0 (not counted) */
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	assert_int_equal(chirp_ring_commit_mode(p, 1, 4, CHIRP_RING_INCOMPLETE, 0), 0);
	/* a whole block over a stale count: the count is not read */
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	assert_int_equal(chirp_ring_commit(p, 1, 5, 0), 0);
	atomic_store(&d[5].missing, 77);
	for (int i = 0; i < 6; i++) {
		memset(&b, 0xa5, sizeof(b));
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.missing, i < 4 ? missing[i] : 0);
		assert_int_equal(!!(b.flags & CHIRP_RING_INCOMPLETE), (i > 0 && i < 5));
		assert_int_equal(b.mode, i < 4 ? 3 : 0);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/*
 * A CPI's pointing travels from chirp_ring_commit_cpi to peek and
 * last_commit as the float32 given (NaN and values beyond +-90 too: the
 * ring checks nothing), in the descriptor word at offset 56, azimuth in
 * the low half; the older commit calls write boresight (0, 0) over a
 * previous lap's pointing; redelivered blocks keep theirs.
 */
static void test_pointing_round_trip(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct ring_desc *d = (struct ring_desc *)((uint8_t *)h + h->desc_offset);
	const float az[] = { 12.5f, -60.0f, NAN, 400.0f, 0.0f, 0.0f };
	const float el[] = { -3.25f, 0.0f, 1.0f, -90.0f, 0.0f, 0.0f };
	struct chirp_ring_block b;
	uint64_t w;
	uint32_t lo;
	void *pl;

	assert_int_equal(offsetof(struct ring_desc, pointing), 56);
	assert_int_equal(offsetof(struct chirp_ring_cpi, pointing_az_deg), 24);
	for (int i = 0; i < 6; i++) {
		struct chirp_ring_cpi cpi = {
			.timestamp_ns = 1, .first_sample = (uint64_t)i, .mode = (uint32_t)i,
			.pointing_az_deg = az[i], .pointing_el_deg = el[i],
			.missing = i == 3 ? 9 : 0,
		};
		assert_int_equal(chirp_ring_reserve(p, &pl), 0);
		if (i == 4) {   /* an older call over a slot given a pointing */
			atomic_store(&d[4].pointing, 0x4120000041200000ull);
			assert_int_equal(chirp_ring_commit_mode(p, 1, 4, 0, 4), 0);
		} else {
			assert_int_equal(chirp_ring_commit_cpi(p, &cpi), 0);
		}
		memset(&b, 0xa5, sizeof(b));
		assert_int_equal(chirp_ring_last_commit(p, &b), 0);
		assert_memory_equal(&b.pointing_az_deg, &az[i], sizeof(float));
		assert_memory_equal(&b.pointing_el_deg, &el[i], sizeof(float));
	}
	w = atomic_load(&d[0].pointing);
	lo = (uint32_t)w;
	assert_memory_equal(&lo, &az[0], sizeof(float));
	assert_int_equal(chirp_ring_commit_cpi(p, NULL), -EINVAL);
	for (int i = 0; i < 4; i++) {
		memset(&b, 0xa5, sizeof(b));
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.mode, i);
		assert_memory_equal(&b.pointing_az_deg, &az[i], sizeof(float));
		assert_memory_equal(&b.pointing_el_deg, &el[i], sizeof(float));
		assert_int_equal(b.missing, i == 3 ? 9 : 0);
		assert_int_equal(!!(b.flags & CHIRP_RING_INCOMPLETE), i == 3);
	}
	/* release 0..1 and crash: 2 and 3 come back with their pointing */
	assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(c);
	c = att(CHIRP_RING_CONSUMER);
	for (int i = 2; i < 6; i++) {
		memset(&b, 0xa5, sizeof(b));
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(!!(b.flags & CHIRP_RING_REDELIVERED), i < 4);
		assert_memory_equal(&b.pointing_az_deg, &az[i], sizeof(float));
		assert_memory_equal(&b.pointing_el_deg, &el[i], sizeof(float));
		assert_int_equal(chirp_ring_release(c), 0);
	}
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* CHIRP_RING_BAD_POINTING is a producer flag the ring carries. */
static void test_bad_pointing_flag(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_cpi cpi = { .flags = CHIRP_RING_BAD_POINTING | (1u << 30),
				      .pointing_az_deg = 95.0f };
	struct chirp_ring_block b;
	void *pl;

	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	assert_int_equal(chirp_ring_commit_cpi(p, &cpi), 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.flags, CHIRP_RING_BAD_POINTING);
	assert_true(b.pointing_az_deg == 95.0f);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_wait_timeout(void **state)
{
	struct chirp_ring_geometry g = geo(2);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct timespec a, z;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(chirp_ring_wait(c, 30000000), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &z);
	dt = (z.tv_sec - a.tv_sec) + (z.tv_nsec - a.tv_nsec) * 1e-9;
	assert_true(dt >= 0.029);
	assert_true(dt < 10);    /* generous safety bound only */
	assert_int_equal(atomic_load(&ring_debug_hdr(c)->cons_sleeping), 0);
	assert_int_equal(chirp_ring_wait(p, 0), 0);       /* free space */
	push(p, 0, 0);
	push(p, 1, 0);
	assert_int_equal(chirp_ring_wait(p, 20000000), -ETIMEDOUT);   /* full */
	assert_int_equal(chirp_ring_wait(c, 0), 0);
	assert_int_equal(chirp_ring_wait(p, 0), -ETIMEDOUT);   /* a poll */
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* Producer in a child process wakes a consumer asleep on the futex. */
static void test_wait_wakes_across_processes(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER);
	struct chirp_ring_block b;
	int st, i;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct chirp_ring *p = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, NULL, 0);
		void *pl;

		if (!p)
			_exit(2);
		for (i = 0; i < 20; i++) {
			usleep(2000);
			if (chirp_ring_wait(p, 5000000000LL) != 0 || chirp_ring_reserve(p, &pl) != 0)
				_exit(3);
			fill(pl, 120000, i);
			if (chirp_ring_commit(p, 0, i, 0) != 0)
				_exit(4);
		}
		chirp_ring_detach(p);
		_exit(0);
	}
	for (i = 0; i < 20; i++) {
		int rc;

		while ((rc = chirp_ring_wait(c, 5000000000LL)) == -EINTR)
			;
		assert_int_equal(rc, 0);
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_true(check_fill(b.payload, 120000, i));
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	chirp_ring_detach(c);
}

static void test_image_validation(void **state)
{
	struct chirp_ring_geometry g = geo(2);
	struct ring_layout L, L2;
	char err[256];
	void *img;

	assert_int_equal(ring_layout_compute(&g, RING_PAGE, &L, err, sizeof(err)), 0);
	assert_int_equal(L.data_offset % 4096, 0);
	assert_int_equal(L.slot_bytes, 122880);
	L.epoch = 42;
	img = aligned_alloc(4096, L.total_bytes);
	assert_non_null(img);
	ring_format_image(img, &L);
	assert_int_equal(ring_validate_header(img, L.total_bytes, &L2, err, sizeof(err)), 0);
	assert_int_equal(L2.epoch, 42);
	assert_int_equal(ring_validate_header(img, L.total_bytes - 1, &L2, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(ring_validate_header(img, 100, &L2, err, sizeof(err)), -EBADMSG);
	((struct ring_hdr *)img)->magic ^= 1;
	assert_int_equal(ring_validate_header(img, L.total_bytes, &L2, err, sizeof(err)),
			 -EBADMSG);
	((struct ring_hdr *)img)->magic ^= 1;
	((struct ring_hdr *)img)->epoch = 0;
	assert_int_equal(ring_validate_header(img, L.total_bytes, &L2, err, sizeof(err)),
			 -EBADMSG);
	((struct ring_hdr *)img)->epoch = 1;
	((struct ring_hdr *)img)->data_offset += 4096;
	assert_int_equal(ring_validate_header(img, L.total_bytes, &L2, err, sizeof(err)),
			 -EBADMSG);
	memset(img, 0, 4096);
	assert_int_equal(ring_validate_header(img, L.total_bytes, &L2, err, sizeof(err)),
			 -EAGAIN);
	/* huge-page layout: everything 2 MiB aligned */
	assert_int_equal(ring_layout_compute(&g, RING_HUGE_PAGE, &L, err, sizeof(err)), 0);
	assert_int_equal(L.data_offset, 2u << 20);
	assert_int_equal(L.slot_bytes, 2u << 20);
	assert_int_equal(ring_layout_compute(&g, 8192, &L, err, sizeof(err)), -EINVAL);
	free(img);
}

static void test_hugepages(void **state)
{
	struct chirp_ring_geometry g = geo(2);
	struct chirp_ring_opts o = { .hugepages = 1, .group = (gid_t)-1 };
	struct chirp_ring *c, *p;
	char err[256] = "";
	void *base;
	size_t len;

	/* CHIRP_HUGETLBFS names the hugetlbfs mount (default /dev/hugepages) */
	c = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, &o, err, sizeof(err));
	if (!c) {
		print_message("hugepages unavailable here: %s\n", err);
		skip();
	}
	chirp_ring_data(c, &base, &len);
	assert_int_equal((uintptr_t)base % (2u << 20), 0);
	/* attach without saying hugepages: found on hugetlbfs all the same */
	p = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(chirp_ring_slot_bytes(p), 2u << 20);
	push(p, 0, 0);
	assert_int_equal(chirp_ring_check(p, err, sizeof(err)), 0);
	assert_int_equal(chirp_ring_available(c), 1);
	/* resume, then retire on a new geometry, as with POSIX shm */
	chirp_ring_detach(c);
	c = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, &o, err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(chirp_ring_available(c), 1);
	chirp_ring_detach(c);
	g.slots = 4;
	c = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, &o, err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(chirp_ring_reserve(p, &base), -ESTALE);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/*
 * CHIRP_HUGETLBFS names the hugetlbfs mount; a ring with huge pages is
 * refused, naming the directory and the variable, when it is not one (a
 * directory of ordinary files would silently give ordinary pages), and
 * nothing is left there. An attach looks there too, after /dev/shm.
 */
static void test_hugetlbfs_dir(void **state)
{
	struct chirp_ring_geometry g = geo(2);
	struct chirp_ring_opts o = { .hugepages = 1, .group = (gid_t)-1 };
	char dir[] = "/tmp/chirp-huge-XXXXXX", missing[64], path[128], err[256] = "";
	const char *was = getenv("CHIRP_HUGETLBFS");
	char *saved = was ? strdup(was) : NULL;   /* the caller's, restored below */
	struct chirp_ring *r;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(setenv("CHIRP_HUGETLBFS", dir, 1), 0);
	r = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, &o, err, sizeof(err));
	assert_null(r);
	assert_int_equal(errno, ENOTSUP);
	assert_non_null(strstr(err, dir));
	assert_non_null(strstr(err, "(CHIRP_HUGETLBFS) is not a hugetlbfs mount"));
	snprintf(path, sizeof(path), "%s%s", dir, g_name);
	assert_int_equal(access(path, F_OK), -1);   /* nothing created */

	/* a directory that does not exist: named, with the system's reason */
	snprintf(missing, sizeof(missing), "%s/none", dir);
	assert_int_equal(setenv("CHIRP_HUGETLBFS", missing, 1), 0);
	r = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, &o, err, sizeof(err));
	assert_null(r);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, missing));
	assert_non_null(strstr(err, "CHIRP_HUGETLBFS"));

	/* attach: /dev/shm first, then the named directory; a ring in neither
	 * is "no ring", whatever the variable says */
	r = chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_null(r);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "no ring"));

	/* without huge pages the variable plays no part */
	r = chirp_ring_create(g_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	assert_non_null(r);
	chirp_ring_detach(r);
	if (saved)
		setenv("CHIRP_HUGETLBFS", saved, 1);
	else
		unsetenv("CHIRP_HUGETLBFS");
	free(saved);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- several outstanding reservations (chirp_ring_reserve_next) ---------- */

static void test_reserve_next_basic(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	void *pl[8], *x;
	int i;

	assert_int_equal(chirp_ring_reserve_next(c, &x), -EPERM);
	assert_int_equal(chirp_ring_reserved(c), 0);
	assert_int_equal(chirp_ring_commit(p, 1, 0, 0), -EINVAL);   /* none reserved */
	for (i = 0; i < 5; i++) {
		assert_int_equal(chirp_ring_reserve_next(p, &pl[i]), 0);
		assert_int_equal(chirp_ring_reserved(p), i + 1);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(pl[i], pl[j]);   /* five distinct slots */
		fill(pl[i], 120000, 100 + i);
	}
	/* more than one held: reserve cannot say which */
	assert_int_equal(chirp_ring_reserve(p, &x), -EBUSY);
	/* nothing is visible and nothing counted until committed */
	assert_int_equal(chirp_ring_available(c), 0);
	assert_int_equal(chirp_ring_peek(c, &b), -EAGAIN);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.overruns, 0);
	/* commits publish the oldest first */
	for (i = 0; i < 4; i++) {
		assert_int_equal(chirp_ring_commit(p, 500 + i, 100 + i, 0), 0);
		assert_int_equal(chirp_ring_reserved(p), 4 - i);
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.first_sample, 100 + i);
		assert_int_equal(b.timestamp_ns, 500 + i);
		assert_int_equal(b.flags, 0);
		assert_int_equal(b.slot, i);   /* separate mappings: compare slots */
		assert_true(check_fill(b.payload, 120000, 100 + i));
		assert_int_equal(chirp_ring_release(c), 0);
	}
	/* one held: reserve returns it (old behaviour), reserve_next adds one */
	assert_int_equal(chirp_ring_reserve(p, &x), 0);
	assert_ptr_equal(x, pl[4]);
	assert_int_equal(chirp_ring_reserve(p, &x), 0);
	assert_ptr_equal(x, pl[4]);
	assert_int_equal(chirp_ring_reserved(p), 1);
	assert_int_equal(chirp_ring_reserve_next(p, &x), 0);
	assert_ptr_not_equal(x, pl[4]);
	fill(x, 120000, 105);
	assert_int_equal(chirp_ring_commit(p, 504, 104, 0), 0);
	assert_int_equal(chirp_ring_commit(p, 505, 105, 0), 0);
	assert_int_equal(chirp_ring_commit(p, 506, 106, 0), -EINVAL);
	for (i = 4; i < 6; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.first_sample, 100 + i);
		assert_true(check_fill(b.payload, 120000, 100 + i));
		assert_int_equal(chirp_ring_release(c), 0);
	}
	chirp_ring_stats(c, &st);
	assert_int_equal(st.committed, 6);
	assert_int_equal(st.overruns, 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* Drops while earlier reservations are outstanding: the gap and the
 * DISCONTINUITY flag land after them, the counts are exact throughout. */
static void test_reserve_next_drops(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	void *pl;
	uint64_t want_seq[] = { 0, 1, 2, 3, 6, 7 };
	uint32_t want_disc[] = { 0, 0, 0, 0, 1, 0 };
	int i;

	for (i = 0; i < 4; i++) {                            /* A B C D = 0..3 */
		assert_int_equal(chirp_ring_reserve_next(p, &pl), 0);
		fill(pl, 120000, i);
	}
	assert_int_equal(chirp_ring_reserve_next(p, &pl), -ENOBUFS);   /* 4 dropped */
	assert_int_equal(chirp_ring_reserve(p, &pl), -EBUSY);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.overruns, 1);                   /* counted at once */
	assert_int_equal(st.committed, 0);
	assert_int_equal(chirp_ring_wait(p, 0), -ETIMEDOUT); /* every slot reserved */
	assert_int_equal(chirp_ring_commit(p, 1, 0, 0), 0);
	assert_int_equal(chirp_ring_commit(p, 1, 1, 0), 0);
	/* consumer has released nothing: still full */
	assert_int_equal(chirp_ring_reserve_next(p, &pl), -ENOBUFS);   /* 5 dropped */
	chirp_ring_stats(c, &st);
	assert_int_equal(st.overruns, 2);
	assert_int_equal(st.committed, 2);
	for (i = 0; i < 2; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_int_equal(chirp_ring_wait(p, 0), 0);
	for (i = 6; i < 8; i++) {                           /* E F = 6, 7 */
		assert_int_equal(chirp_ring_reserve_next(p, &pl), 0);
		fill(pl, 120000, i);
	}
	assert_int_equal(chirp_ring_reserved(p), 4);
	assert_int_equal(chirp_ring_commit(p, 1, 2, 0), 0);    /* C */
	assert_int_equal(chirp_ring_commit(p, 1, 3, 0), 0);    /* D */
	assert_int_equal(chirp_ring_commit(p, 1, 6, CHIRP_RING_NONFINITE), 0);   /* E */
	assert_int_equal(chirp_ring_commit(p, 1, 7, 0), 0);    /* F */
	for (i = 2; i < 6; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, want_seq[i]);
		assert_int_equal(b.first_sample, want_seq[i]);
		assert_int_equal(!!(b.flags & CHIRP_RING_DISCONTINUITY), want_disc[i]);
		assert_true(check_fill(b.payload, 120000, want_seq[i]));
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_true(b.flags == 0);
	assert_int_equal(atomic_load(&ring_debug_hdr(c)->pending_flags), 0);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.committed, 6);
	assert_int_equal(st.overruns, 2);
	assert_int_equal(st.committed + st.overruns, 8);     /* every number accounted */
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/*
 * Random mix of reserve_next / commit / peek / release against a model,
 * starting at position pos and block number seq (so the indices cross 2^64
 * with reservations outstanding): payload, seq, flags and counters exact.
 */
static void reserve_next_model(uint32_t slots, uint64_t pos, uint64_t seq)
{
	struct chirp_ring_geometry g = geo(slots);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p;
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	uint64_t res[16], next = seq, last = 0, got = 0, drops = 0, commits = 0;
	unsigned nres = 0, held = 0, s = 12345;
	int have_last = 0, gap_pending = 0;
	void *pl;

	assert_int_equal(ring_debug_set_seq(c, pos, seq), 0);
	p = att(CHIRP_RING_PRODUCER);
	for (int k = 0; k < 3000; k++) {
		s = s * 1103515245u + 12345u;
		switch ((s >> 16) % 4) {
		case 0:
		case 1: {
			int rc = chirp_ring_reserve_next(p, &pl);

			if (nres + held + (commits - got) >= slots) {
				/* model: every slot reserved, committed or held */
				assert_int_equal(rc, -ENOBUFS);
				drops++;
				next++;
				gap_pending = 1;
			} else {
				assert_int_equal(rc, 0);
				fill(pl, 120000, next);
				res[nres++] = next++;
			}
			break;
		}
		case 2:
			if (!nres) {
				assert_int_equal(chirp_ring_commit(p, 1, 0, 0), -EINVAL);
				break;
			}
			assert_int_equal(chirp_ring_commit(p, 1, res[0], 0), 0);
			memmove(res, res + 1, --nres * sizeof(res[0]));
			commits++;
			break;
		default:
			if (chirp_ring_peek(c, &b) == 0) {
				assert_true(commits > got);
				assert_int_equal(b.seq, b.first_sample);
				assert_int_equal(b.slot, (pos + got) % slots);
				assert_true(check_fill(b.payload, 120000, b.seq));
				if (have_last) {
					assert_int_equal(!!(b.flags & CHIRP_RING_DISCONTINUITY),
							 b.seq != last + 1);
				}
				last = b.seq;
				have_last = 1;
				got++;
				held++;
			} else {
				assert_int_equal(commits, got);
			}
			if (held && ((s >> 8) & 1)) {
				assert_int_equal(chirp_ring_release(c), 0);
				held--;
			}
			break;
		}
		assert_int_equal(chirp_ring_reserved(p), nres);
		chirp_ring_stats(c, &st);
		assert_int_equal(st.committed, commits);
		assert_int_equal(st.overruns, drops);
	}
	(void)gap_pending;
	assert_true(drops > 0 && commits > 100);
	assert_true(atomic_load(&ring_debug_hdr(c)->prod) - pos == commits);
	if (pos > UINT64_MAX - 1000)
		assert_true(atomic_load(&ring_debug_hdr(c)->prod) < 5000);   /* wrapped */
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

static void test_reserve_next_model(void **state)
{
	reserve_next_model(8, 0, 0);
}

static void test_reserve_next_wrap_2_64(void **state)
{
	reserve_next_model(8, UINT64_MAX - 5, UINT64_MAX - 9);
}

/* Several reservations outstanding on rings of 3, 5, 7 and 13 slots,
 * also crossing 2^32 and ending next to the position limit. */
static void test_reserve_next_odd_slots(void **state)
{
	const uint32_t n[] = { 3, 5, 7, 13 };

	for (int i = 0; i < 4; i++) {
		reserve_next_model(n[i], (uint64_t)i * 1000, 0);
		chirp_ring_unlink(g_name);
	}
	reserve_next_model(5, (1ull << 32) - 1000, 77);
	chirp_ring_unlink(g_name);
	reserve_next_model(7, RING_POS_LIMIT - 3000, UINT64_MAX - 9);
}

/* A producer killed with reservations outstanding (and a drop after them):
 * none of them is ever delivered, the counts stay exact, the successor's
 * first commit is a DISCONTINUITY. Also the crash between the two stores
 * of a commit when a later drop is already counted. */
static void test_reserve_next_crash(void **state)
{
	struct chirp_ring_geometry g = geo(4);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct ring_hdr *h = ring_debug_hdr(c);
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	void *pl;
	int i;

	for (i = 0; i < 3; i++)                             /* 0 1 2 */
		assert_int_equal(chirp_ring_reserve_next(p, &pl), 0);
	assert_int_equal(chirp_ring_commit(p, 1, 0, 0), 0);  /* 0 out */
	assert_int_equal(chirp_ring_reserve_next(p, &pl), 0);    /* 3 */
	assert_int_equal(chirp_ring_reserve_next(p, &pl), -ENOBUFS);   /* 4 dropped */
	/* commit 1 but "die" between storing prod and next_seq */
	assert_int_equal(chirp_ring_commit(p, 1, 1, 0), 0);
	atomic_store(&h->next_seq, atomic_load(&h->next_seq) - 1);
	chirp_ring_detach(p);                                /* 2, 3 never committed */
	p = att(CHIRP_RING_PRODUCER);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.committed, 2);
	assert_int_equal(st.overruns, 1);                    /* repaired: 4's drop kept */
	for (i = 0; i < 2; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	assert_int_equal(chirp_ring_peek(c, &b), -EAGAIN);   /* 2, 3 never delivered */
	assert_int_equal(chirp_ring_reserve_next(p, &pl), 0);
	assert_int_equal(chirp_ring_commit(p, 1, 9, 0), 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_true(b.seq > 1);
	assert_int_equal(b.first_sample, 9);
	assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.committed, 3);
	assert_int_equal(st.overruns, 1);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* Take the next block: it must be seq, flagged DISCONTINUITY or not. */
static void expect_block(struct chirp_ring *c, uint64_t seq, int disc)
{
	struct chirp_ring_block b;

	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, seq);
	assert_int_equal(!!(b.flags & CHIRP_RING_DISCONTINUITY), disc);
	assert_int_equal(chirp_ring_release(c), 0);
}

/*
 * Opt-in continuity across a restart: a producer that leaves a clean mark,
 * followed directly by one that opts in, gives one stream (no flag, no
 * gap); every other combination keeps the conservative flag.
 */
static void test_continuity(void **state)
{
	struct chirp_ring_geometry g = geo(8);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p;
	uint64_t seq = 0;
	void *pl;

	assert_int_equal(chirp_ring_mark_clean(c), -EPERM);
	assert_int_equal(chirp_ring_set_continuous(c), -EPERM);

	/* fresh ring: never flagged; the producer stops cleanly */
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_set_continuous(p), 1);
	push(p, seq, 0);
	expect_block(c, seq++, 0);
	assert_int_equal(chirp_ring_mark_clean(p), 0);
	chirp_ring_detach(p);

	/* marked, successor opts in: one stream */
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_set_continuous(p), 1);
	push(p, seq, 0);
	expect_block(c, seq++, 0);
	push(p, seq, 0);
	expect_block(c, seq++, 0);
	chirp_ring_detach(p);                          /* no mark: as if killed */

	/* no mark: flagged although the successor opts in */
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_set_continuous(p), 0);
	push(p, seq, 0);
	expect_block(c, seq++, 1);
	assert_int_equal(chirp_ring_mark_clean(p), 0);
	chirp_ring_detach(p);

	/* marked, successor does not opt in (a restarted driver): flagged */
	p = att(CHIRP_RING_PRODUCER);
	push(p, seq, 0);
	expect_block(c, seq++, 1);
	assert_int_equal(chirp_ring_mark_clean(p), 0);
	chirp_ring_detach(p);

	/* the mark holds for the next producer only: one in between that
	 * leaves without a mark breaks the chain */
	p = att(CHIRP_RING_PRODUCER);
	chirp_ring_detach(p);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_set_continuous(p), 0);
	push(p, seq, 0);
	expect_block(c, seq++, 1);

	/* no mark while a reservation is outstanding; a reservation made after
	 * the mark erases it (that block is lost when we leave) */
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	assert_int_equal(chirp_ring_mark_clean(p), -EBUSY);
	assert_int_equal(chirp_ring_commit(p, 1, seq * 5000, 0), 0);
	expect_block(c, seq++, 0);
	assert_int_equal(chirp_ring_mark_clean(p), 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), 0);
	chirp_ring_detach(p);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_set_continuous(p), 0);
	push(p, seq, 0);                               /* takes the lost one's number */
	expect_block(c, seq++, 1);

	/* a drop not yet carried by a committed block: no mark */
	for (int i = 0; i < 8; i++)
		push(p, seq + i, 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), -ENOBUFS);   /* seq + 8 dropped */
	assert_int_equal(chirp_ring_mark_clean(p), -EBUSY);
	for (int i = 0; i < 8; i++)
		expect_block(c, seq++, 0);
	seq++;                                         /* the dropped one */
	push(p, seq, 0);
	expect_block(c, seq++, 1);                     /* carries the drop */
	assert_int_equal(chirp_ring_mark_clean(p), 0);
	chirp_ring_detach(p);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_set_continuous(p), 1);
	push(p, seq, 0);
	expect_block(c, seq++, 0);

	/* a drop the predecessor left pending still flags an opted-in successor */
	for (int i = 0; i < 8; i++)
		push(p, seq + i, 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), -ENOBUFS);
	chirp_ring_detach(p);
	for (int i = 0; i < 8; i++)
		expect_block(c, seq++, 0);
	seq++;
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_set_continuous(p), 0);
	push(p, seq, 0);
	expect_block(c, seq++, 1);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/* A small CPI (1 x 1 x 16 cf32: 128 bytes, one page a slot), so that
 * rings of many slots stay small. */
static struct chirp_ring_geometry geo_small(uint32_t slots)
{
	struct chirp_ring_geometry g = {
		.channels = 1, .pulses = 1, .samples = 16,
		.format = CHIRP_RING_CF32, .slots = slots, .sample_rate_hz = 1e6,
	};
	return g;
}

/*
 * Many laps of a ring of n slots (any count): bursts of 1 .. n blocks, the
 * consumer holding up to n at a time and releasing in varying steps, a
 * drop whenever the producer finds it full (every fifth burst does). Every block's seq, slot
 * (position % n), mode, first sample and payload is checked, and every
 * gap is flagged. Large counts run on a memory image (ring_open_image: the
 * same code) so that the test does not need 256 MiB of /dev/shm.
 */
static void laps_with(uint32_t n, uint64_t blocks)
{
	struct chirp_ring_geometry g = geo_small(n);
	struct chirp_ring *c, *p;
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	struct ring_layout L;
	uint64_t seq = 0, pos = 0, got = 0, last = 0, drops = 0, held = 0;
	unsigned s = 777;
	void *pl, *img = NULL;
	char err[256] = "";

	if (n > 1024) {
		assert_int_equal(ring_layout_compute(&g, RING_PAGE, &L, err, sizeof(err)), 0);
		L.epoch = 7;
		img = aligned_alloc(4096, L.total_bytes);
		assert_non_null(img);
		ring_format_image(img, &L);
		c = ring_open_image(img, L.total_bytes, CHIRP_RING_CONSUMER, err, sizeof(err));
		p = ring_open_image(img, L.total_bytes, CHIRP_RING_PRODUCER, err, sizeof(err));
		assert_non_null(c);
		assert_non_null(p);
	} else {
		c = mk(&g, CHIRP_RING_CONSUMER);
		p = att(CHIRP_RING_PRODUCER);
	}

	for (uint64_t round = 0; seq < blocks; round++) {
		/* every fifth burst is one more than the ring holds: it overruns */
		uint64_t burst = round % 5 == 4 ? (uint64_t)n + 1 :
				 1 + (s = s * 1103515245u + 12345u, (s >> 8) % n);

		for (uint64_t k = 0; k < burst; k++, seq++) {
			if (chirp_ring_reserve(p, &pl) < 0) {
				drops++;
				continue;
			}
			fill(pl, 128, seq);
			assert_int_equal(chirp_ring_commit_mode(p, seq + 1, seq, 0,
								(uint32_t)(seq % 64)), 0);
		}
		while (chirp_ring_peek(c, &b) == 0) {
			assert_int_equal(b.first_sample, b.seq);
			assert_int_equal(b.timestamp_ns, b.seq + 1);
			assert_int_equal(b.mode, b.seq % 64);
			assert_int_equal(b.slot, pos % n);
			assert_int_equal(b.len, 128);
			assert_true(check_fill(b.payload, 128, b.seq));
			if (got)
				assert_int_equal(!!(b.flags & CHIRP_RING_DISCONTINUITY),
						 b.seq != last + 1);
			last = b.seq;
			got++;
			pos++;
			held++;
			/* release in uneven steps, keeping up to n held */
			while (held && (held == n || ((s >> (held % 16)) & 1))) {
				assert_int_equal(chirp_ring_release(c), 0);
				held--;
			}
		}
	}
	while (held--)
		assert_int_equal(chirp_ring_release(c), 0);
	chirp_ring_stats(c, &st);
	assert_int_equal(st.committed, got);
	assert_int_equal(st.overruns, drops);
	assert_int_equal(got + drops, seq);            /* every number accounted */
	assert_true(drops > 0);                        /* the ring did fill */
	assert_true(got > 3 * (uint64_t)n);          /* several laps */
	assert_int_equal(chirp_ring_check(c, NULL, 0), 0);
	assert_int_equal(chirp_ring_check(p, NULL, 0), 0);
	chirp_ring_detach(p);
	chirp_ring_detach(c);
	free(img);
}

static void test_laps_odd_slots(void **state)
{
	laps_with(3, 5000);
	chirp_ring_unlink(g_name);
	laps_with(5, 5000);
	chirp_ring_unlink(g_name);
	laps_with(100, 20000);
	chirp_ring_unlink(g_name);
	laps_with(2, 3000);
	chirp_ring_unlink(g_name);
	laps_with(65535, 65535 * 4);
}

/*
 * A consumer that dies holding blocks on a ring of 5 slots whose held
 * blocks straddle the end of the slot array: its successor gets them
 * again, flagged REDELIVERED, same slots, payloads and modes.
 */
static void test_redeliver_odd_slots(void **state)
{
	struct chirp_ring_geometry g = geo_small(5);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p = att(CHIRP_RING_PRODUCER);
	struct chirp_ring_block b;
	void *pl;
	uint64_t i;

	for (i = 0; i < 13; i++) {                /* 13 positions: 2 laps and 3 */
		assert_int_equal(chirp_ring_reserve(p, &pl), 0);
		fill(pl, 128, i);
		assert_int_equal(chirp_ring_commit_mode(p, 1, i, 0, (uint32_t)i * 3), 0);
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	for (i = 13; i < 17; i++) {               /* slots 3, 4, 0, 1 */
		assert_int_equal(chirp_ring_reserve(p, &pl), 0);
		fill(pl, 128, i);
		assert_int_equal(chirp_ring_commit_mode(p, 1, i, 0, (uint32_t)i * 3), 0);
	}
	for (i = 13; i < 16; i++)
		assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(chirp_ring_release(c), 0);   /* 13 done; 14, 15 held */
	chirp_ring_detach(c);                         /* dies */
	c = att(CHIRP_RING_CONSUMER);
	for (i = 14; i < 17; i++) {
		assert_int_equal(chirp_ring_peek(c, &b), 0);
		assert_int_equal(b.seq, i);
		assert_int_equal(b.slot, i % 5);
		assert_int_equal(b.mode, i * 3);
		assert_true(check_fill(b.payload, 128, i));
		assert_int_equal(!!(b.flags & CHIRP_RING_REDELIVERED), i < 16);
		assert_int_equal(chirp_ring_release(c), 0);
	}
	chirp_ring_detach(p);
	chirp_ring_detach(c);
}

/*
 * The wrap rule for counts that are not powers of two: positions stop at
 * RING_POS_LIMIT (the producer says -EOVERFLOW, counting nothing), and a
 * header whose positions lie beyond it is refused as corrupt. A power-of-
 * two ring at the same positions runs on (test_wrap_2_64).
 */
static void test_position_limit_odd_slots(void **state)
{
	struct chirp_ring_geometry g = geo_small(5);
	struct chirp_ring *c = mk(&g, CHIRP_RING_CONSUMER), *p;
	struct ring_hdr *h;
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	char err[256] = "";
	void *pl;

	assert_int_equal(ring_debug_set_seq(c, RING_POS_LIMIT + 1, 0), -EINVAL);
	assert_int_equal(ring_debug_set_seq(c, RING_POS_LIMIT - 2, 40), 0);
	p = att(CHIRP_RING_PRODUCER);
	assert_int_equal(chirp_ring_reserve_next(p, &pl), 0);
	assert_int_equal(chirp_ring_reserve_next(p, &pl), 0);
	assert_int_equal(chirp_ring_reserve_next(p, &pl), -EOVERFLOW);
	assert_int_equal(chirp_ring_commit_mode(p, 1, 0, 0, 9), 0);
	assert_int_equal(chirp_ring_commit_mode(p, 1, 1, 0, 9), 0);
	assert_int_equal(chirp_ring_reserve(p, &pl), -EOVERFLOW);
	chirp_ring_stats(p, &st);
	assert_int_equal(st.committed, 2);
	assert_int_equal(st.overruns, 0);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 40);
	assert_int_equal(b.slot, (RING_POS_LIMIT - 2) % 5);
	assert_int_equal(chirp_ring_peek(c, &b), 0);
	assert_int_equal(b.seq, 41);
	assert_int_equal(b.mode, 9);
	assert_int_equal(chirp_ring_release(c), 0);
	assert_int_equal(chirp_ring_release(c), 0);
	/* at the limit exactly: still a valid header */
	assert_int_equal(atomic_load(&ring_debug_hdr(c)->prod), RING_POS_LIMIT);
	assert_int_equal(chirp_ring_check(c, NULL, 0), 0);
	chirp_ring_detach(p);
	/* past it: corrupt */
	h = ring_debug_hdr(c);
	atomic_store(&h->prod, RING_POS_LIMIT + 1);
	atomic_store(&h->cons, RING_POS_LIMIT + 1);
	assert_null(chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	assert_int_equal(errno, EBADMSG);
	assert_non_null(strstr(err, "not a power of two"));
	assert_int_equal(chirp_ring_check(c, err, sizeof(err)), -EBADMSG);
	atomic_store(&h->prod, UINT64_MAX);
	atomic_store(&h->cons, UINT64_MAX - 3);
	assert_null(chirp_ring_attach(g_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err)));
	assert_int_equal(errno, EBADMSG);
	chirp_ring_detach(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_geometry),
		T(test_create_attach_layout),
		T(test_attach_missing),
		T(test_single_role),
		T(test_role_held),
		T(test_probe),
		T(test_handoff_and_inflight),
		T(test_overrun),
		T(test_overrun_odd_slots),
		T(test_laps_odd_slots),
		T(test_redeliver_odd_slots),
		T(test_position_limit_odd_slots),
		T(test_wrap_2_32),
		T(test_wrap_2_64),
		T(test_consumer_restart_redelivers),
		T(test_producer_restart),
		T(test_continuity),
		T(test_scribbled_indices_heal),
		T(test_producer_crash_mid_commit),
		T(test_retire_on_new_geometry),
		T(test_version_mismatch),
		T(test_old_abi_ring),
		T(test_mode_round_trip),
		T(test_foreign_object_untouched),
		T(test_half_created),
		T(test_permissions),
		T(test_corrupt_indices),
		T(test_corrupt_descriptor_skipped),
		T(test_unknown_flags_masked),
		T(test_incomplete_count),
		T(test_pointing_round_trip),
		T(test_bad_pointing_flag),
		T(test_wait_timeout),
		T(test_wait_wakes_across_processes),
		T(test_image_validation),
		T(test_hugepages),
		T(test_hugetlbfs_dir),
		T(test_reserve_next_basic),
		T(test_reserve_next_drops),
		T(test_reserve_next_model),
		T(test_reserve_next_wrap_2_64),
		T(test_reserve_next_odd_slots),
		T(test_reserve_next_crash),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
