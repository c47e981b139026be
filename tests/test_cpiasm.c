/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cpiasm.c — CPI assembly by timestamp (src/cpiasm.c), without
 * sockets or a ring: packets fed in order, shuffled, lost, late, twice,
 * across pulses and CPIs, with wild timestamps; the slots' contents, flags
 * and missing counts checked against the placement rule.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chirp/ring.h"
#include "cpiasm.h"
#include "vrt.h"

/* Geometry: C=2 channels, P=3 pulses, R=5 gates in a pulse period of 8
 * samples (3 outside the receive window), t0 = 100. */
#define C 2
#define P 3
#define R 5
#define PRI 8
#define T0 100
#define CPI_LEN (P * PRI)
#define CPI_SAMPLES (C * P * R)
#define POOL 8
#define MAXREC 64

struct rec {
	uint64_t first_sample;
	uint32_t flags, missing;
	int16_t data[2 * CPI_SAMPLES];
};

struct tsink {
	int16_t pool[POOL][2 * CPI_SAMPLES];
	unsigned head, nres;
	int full;                  /* reserve says -ENOBUFS */
	int fail;                  /* reserve says -ESTALE  */
	struct rec rec[MAXREC];
	unsigned nrec;
};

static int t_reserve(void *ctx, void **payload)
{
	struct tsink *t = ctx;
	int16_t *s;

	if (t->fail)
		return -ESTALE;
	if (t->full || t->nres == POOL)
		return -ENOBUFS;
	s = t->pool[(t->head + t->nres) % POOL];
	memset(s, 0xab, sizeof(t->pool[0]));   /* stale data: holes must be zeroed */
	t->nres++;
	*payload = s;
	return 0;
}

static int t_commit(void *ctx, uint64_t first_sample, uint32_t flags, uint32_t missing)
{
	struct tsink *t = ctx;
	struct rec *r;

	assert_true(t->nres > 0);
	assert_true(t->nrec < MAXREC);
	r = &t->rec[t->nrec++];
	r->first_sample = first_sample;
	r->flags = flags;
	r->missing = missing;
	memcpy(r->data, t->pool[t->head], sizeof(r->data));
	t->head = (t->head + 1) % POOL;
	t->nres--;
	return 0;
}

/* The stream: channel ch's sample at stream index s. */
static int16_t val_i(unsigned ch, uint64_t s) { return (int16_t)(ch * 1000 + s % 997); }
static int16_t val_q(unsigned ch, uint64_t s) { return (int16_t)-(int)(ch * 1000 + s % 991); }

/* n samples of channel ch from s, as sc16 big-endian. */
static void make_be(uint8_t *b, unsigned ch, uint64_t s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint16_t I = (uint16_t)val_i(ch, s + i), Q = (uint16_t)val_q(ch, s + i);

		b[4 * i] = (uint8_t)(I >> 8);
		b[4 * i + 1] = (uint8_t)I;
		b[4 * i + 2] = (uint8_t)(Q >> 8);
		b[4 * i + 3] = (uint8_t)Q;
	}
}

struct pkt {
	unsigned ch;
	uint64_t s;
	size_t n;
};

static struct cpiasm *mk(struct tsink *t, unsigned horizon)
{
	struct cpiasm_params p = {
		.channels = C, .pulses = P, .samples = R, .ring_format = CHIRP_RING_SC16,
		.pri_samples = PRI, .t0_sample = T0, .horizon = horizon,
		.deadline_ns = 1000000, .epoch_jump_cpis = 16,
	};
	struct cpiasm_sink s = { .ctx = t, .reserve = t_reserve, .commit = t_commit };
	char err[200];
	struct cpiasm *a;

	memset(t, 0, sizeof(*t));
	a = cpiasm_create(&p, &s, err, sizeof(err));
	assert_non_null(a);
	return a;
}

static int put(struct cpiasm *a, const struct pkt *k, uint64_t now)
{
	uint8_t b[4 * 256];

	assert_true(k->n <= 256);
	make_be(b, k->ch, k->s, k->n);
	return cpiasm_put(a, k->ch, k->s, b, k->n, VRT_PLAIN_SC16_BE, now);
}

/* Packets of n samples covering CPIs [k0, k1) of both channels. */
static size_t packets(struct pkt *out, size_t max, uint64_t k0, uint64_t k1, size_t n)
{
	size_t m = 0;

	uint64_t end = T0 + k1 * CPI_LEN;

	for (uint64_t s = T0 + k0 * CPI_LEN; s < end; s += n)
		for (unsigned ch = 0; ch < C; ch++) {
			assert_true(m < max);
			out[m++] = (struct pkt){ ch, s, end - s < n ? end - s : n };
		}
	return m;
}

static void shuffle(struct pkt *p, size_t n, uint64_t seed)
{
	for (size_t i = n; i > 1; i--) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		size_t j = (size_t)(seed >> 33) % i;
		struct pkt t = p[i - 1];

		p[i - 1] = p[j];
		p[j] = t;
	}
}

/* Check a committed CPI against the stream; samples in `lost` (a
 * per-channel-and-sample predicate) must read zero. */
static void check_cpi(const struct rec *r, uint64_t k, const uint8_t *lost)
{
	assert_int_equal(r->first_sample, k * P * R);
	for (unsigned ch = 0; ch < C; ch++)
		for (unsigned p = 0; p < P; p++)
			for (unsigned g = 0; g < R; g++) {
				uint64_t s = T0 + k * CPI_LEN + p * PRI + g;
				size_t i = ((size_t)ch * P + p) * R + g;
				int gone = lost && lost[i];

				assert_int_equal(r->data[2 * i], gone ? 0 : val_i(ch, s));
				assert_int_equal(r->data[2 * i + 1], gone ? 0 : val_q(ch, s));
			}
}

static void test_in_order(void **state)
{
	static struct tsink t;
	struct cpiasm *a = mk(&t, 2);
	struct pkt pk[256];
	size_t n = packets(pk, 256, 0, 3, 4);

	for (size_t i = 0; i < n; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	/* whole CPIs are committed at once, without waiting */
	assert_int_equal(t.nrec, 3);
	for (unsigned k = 0; k < 3; k++) {
		check_cpi(&t.rec[k], k, NULL);
		assert_int_equal(t.rec[k].flags, 0);
		assert_int_equal(t.rec[k].missing, 0);
	}
	assert_int_equal(cpiasm_stats(a)->cpis_complete, 3);
	assert_int_equal(cpiasm_stats(a)->outside_samples, 3 * C * P * (PRI - R));
	assert_int_equal(cpiasm_stats(a)->epochs, 1);
	cpiasm_destroy(a);
}

static void test_shuffled(void **state)
{
	static struct tsink t;

	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct cpiasm *a = mk(&t, 4);
		struct pkt pk[256];
		size_t n = packets(pk, 256, 0, 4, 3 + seed % 5);

		/* any order, but the epoch starts at CPI 0's (the first packet
		 * sets it; one of a later CPI would make CPI 0 late) */
		shuffle(pk + 1, n - 1, seed);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
		assert_int_equal(cpiasm_flush(a), 0);
		assert_int_equal(t.nrec, 4);
		for (unsigned k = 0; k < 4; k++) {
			check_cpi(&t.rec[k], k, NULL);
			assert_int_equal(t.rec[k].flags, 0);
		}
		cpiasm_destroy(a);
	}
}

/* A lost packet leaves a zeroed hole, the CPI flagged with its count;
 * the CPI is committed when a packet beyond the horizon arrives. */
static void test_lost(void **state)
{
	static struct tsink t;
	static uint8_t lost[4][CPI_SAMPLES];
	struct cpiasm *a = mk(&t, 2);
	struct pkt pk[256];
	size_t n = packets(pk, 256, 0, 4, 4);
	uint32_t want[4] = { 0 };

	memset(lost, 0, sizeof(lost));
	for (size_t i = 0; i < n; i++) {
		if (i % 7 == 3) {   /* lose it: note which in-window samples */
			for (uint64_t s = pk[i].s; s < pk[i].s + pk[i].n; s++) {
				uint64_t d = s - T0, k = d / CPI_LEN, p = d % CPI_LEN / PRI,
					 g = d % PRI;

				if (g < R) {
					lost[k][(pk[i].ch * P + p) * R + g] = 1;
					want[k]++;
				}
			}
			continue;
		}
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	}
	/* CPIs 0, 1 went out when CPI 2, 3 arrived; 2 and 3 wait */
	assert_int_equal(t.nrec, 2);
	assert_int_equal(cpiasm_flush(a), 0);
	assert_int_equal(t.nrec, 4);
	for (unsigned k = 0; k < 4; k++) {
		check_cpi(&t.rec[k], k, lost[k]);
		assert_int_equal(t.rec[k].missing, want[k]);
		assert_true(want[k] > 0);
		assert_int_equal(t.rec[k].flags, 0);   /* INCOMPLETE is the sink's (ring's) */
	}
	assert_int_equal(cpiasm_stats(a)->cpis_partial, 4);
	assert_int_equal(cpiasm_stats(a)->missing_samples,
			 (uint64_t)want[0] + want[1] + want[2] + want[3]);
	cpiasm_destroy(a);
}

static void test_late_and_duplicate(void **state)
{
	static struct tsink t;
	struct cpiasm *a = mk(&t, 2);
	struct pkt pk[256];
	size_t n = packets(pk, 256, 0, 2, 4);

	for (size_t i = 0; i < n / 2; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 1);
	/* CPI 0 is out: its packets are late, and change nothing */
	assert_int_equal(put(a, &pk[0], 1), CPIASM_LATE);
	/* CPI 1 in part: a packet twice is a duplicate, so is an overlap */
	assert_int_equal(put(a, &pk[n / 2], 1), CPIASM_PLACED);
	assert_int_equal(put(a, &pk[n / 2], 1), CPIASM_DUPLICATE);
	{
		struct pkt o = pk[n / 2];

		o.s += 2;
		assert_int_equal(put(a, &o, 1), CPIASM_DUPLICATE);
	}
	for (size_t i = n / 2 + 1; i < n; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 2);
	check_cpi(&t.rec[0], 0, NULL);
	check_cpi(&t.rec[1], 1, NULL);
	assert_int_equal(t.rec[1].missing, 0);
	cpiasm_destroy(a);
}

/* The wall-clock deadline commits a CPI missing packets, never later. */
static void test_deadline(void **state)
{
	static struct tsink t;
	struct cpiasm *a = mk(&t, 4);
	struct pkt one = { 0, T0, 4 }, two = { 1, T0 + CPI_LEN, 4 };

	assert_int_equal(put(a, &one, 5000), CPIASM_PLACED);
	assert_int_equal(put(a, &two, 5000 + 400000), CPIASM_PLACED);
	assert_int_equal(cpiasm_next_deadline(a, 5000), 1000000);
	assert_int_equal(cpiasm_tick(a, 5000 + 999999), 0);
	assert_int_equal(t.nrec, 0);
	assert_int_equal(cpiasm_tick(a, 5000 + 1000000), 0);
	assert_int_equal(t.nrec, 1);
	assert_int_equal(t.rec[0].missing, CPI_SAMPLES - 4);
	assert_int_equal(cpiasm_next_deadline(a, 5000 + 1000000), 400000);
	assert_int_equal(cpiasm_tick(a, 5000 + 1400000), 0);
	assert_int_equal(t.nrec, 2);
	assert_int_equal(t.rec[1].first_sample, P * R);
	assert_int_equal(cpiasm_next_deadline(a, 0), UINT64_MAX);
	/* a later packet of CPI 1 is late */
	two.s += 4;
	assert_int_equal(put(a, &two, 1), CPIASM_LATE);
	cpiasm_destroy(a);
}

/* A CPI a packet skipped over (every packet lost) is committed too, all
 * missing, so that every CPI reaches the consumer. */
static void test_whole_cpi_lost(void **state)
{
	static struct tsink t;
	static uint8_t all[CPI_SAMPLES];
	struct cpiasm *a = mk(&t, 2);
	struct pkt pk[256];
	size_t n;

	memset(all, 1, sizeof(all));
	n = packets(pk, 256, 0, 1, 4);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	n = packets(pk, 256, 4, 5, 4);   /* CPIs 1..3 never came */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(cpiasm_flush(a), 0);
	assert_int_equal(t.nrec, 5);
	for (unsigned k = 0; k < 5; k++) {
		check_cpi(&t.rec[k], k, k >= 1 && k <= 3 ? all : NULL);
		assert_int_equal(t.rec[k].missing, k >= 1 && k <= 3 ? CPI_SAMPLES : 0);
	}
	cpiasm_destroy(a);
}

/* Timestamps that jump forward or go back start a new epoch: what is in
 * flight is committed, the new epoch's first CPI is flagged, no CPI holds
 * samples of two epochs. */
static void test_epochs(void **state)
{
	static struct tsink t;
	struct cpiasm *a = mk(&t, 2);
	struct pkt pk[256];
	size_t n = packets(pk, 256, 0, 2, 4);

	for (size_t i = 0; i < n - 2; i++)   /* CPI 1 lacks its last packets */
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 1);
	n = packets(pk, 256, 1000, 1001, 4);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 3);
	assert_int_equal(t.rec[1].first_sample, 1 * P * R);
	/* the lost packets held samples 20..23 of CPI 1: pulse 2, gates
	 * 4..7, of which gate 4 is in the window, on both channels */
	assert_int_equal(t.rec[1].missing, 2);
	assert_int_equal(t.rec[1].flags, 0);
	check_cpi(&t.rec[2], 1000, NULL);
	assert_int_equal(t.rec[2].flags, CHIRP_RING_DISCONTINUITY);
	/* back in time, far: a third epoch */
	n = packets(pk, 256, 3, 4, 4);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 4);
	check_cpi(&t.rec[3], 3, NULL);
	assert_int_equal(t.rec[3].flags, CHIRP_RING_DISCONTINUITY);
	assert_int_equal(cpiasm_stats(a)->epochs, 3);
	/* a little back is late, not a new epoch */
	assert_int_equal(put(a, &pk[0], 1), CPIASM_LATE);
	assert_int_equal(cpiasm_stats(a)->epochs, 3);
	/* random timestamps: no hang, every commit is in order */
	uint64_t seed = 7;
	for (int i = 0; i < 20000; i++) {
		struct pkt r;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r.ch = (unsigned)(seed >> 60) % C;
		r.s = T0 + (seed >> 20) % (CPI_LEN * 200);
		r.n = 1 + (seed >> 8) % 40;
		if (t.nrec > MAXREC - 24)   /* one put commits at most 2 + 16 */
			t.nrec = 0;
		assert_true(put(a, &r, 1 + (uint64_t)i) >= 0);
	}
	cpiasm_destroy(a);
}

static void test_ring_full(void **state)
{
	static struct tsink t;
	struct cpiasm *a = mk(&t, 2);
	struct pkt pk[256];
	size_t n = packets(pk, 256, 0, 3, 4);

	t.full = 1;
	assert_int_equal(put(a, &pk[0], 1), CPIASM_RING_FULL);
	t.full = 0;
	for (size_t i = 1; i < n; i++) {
		uint64_t k = (pk[i].s - T0) / CPI_LEN;

		/* a dropped CPI leaves the window at once; the rest of its
		 * packets are still counted as ring_full, not late */
		assert_int_equal(put(a, &pk[i], 1), k == 0 ? CPIASM_RING_FULL : CPIASM_PLACED);
	}
	assert_int_equal(cpiasm_stats(a)->cpis_dropped, 1);
	assert_int_equal(t.nrec, 2);
	check_cpi(&t.rec[0], 1, NULL);
	check_cpi(&t.rec[1], 2, NULL);
	/* a failing sink is reported, and reset starts over */
	t.fail = 1;
	n = packets(pk, 256, 3, 4, 4);
	assert_int_equal(put(a, &pk[0], 1), -ESTALE);
	cpiasm_reset(a);
	t.fail = 0;
	t.nres = 0;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 3);
	check_cpi(&t.rec[2], 3, NULL);
	cpiasm_destroy(a);
}

/* One packet across pulses and CPIs; bad channel; before t0. */
static void test_spans_and_refusals(void **state)
{
	static struct tsink t;
	struct cpiasm *a = mk(&t, 2);
	struct pkt whole[C];
	uint8_t b[16];

	for (unsigned ch = 0; ch < C; ch++) {
		whole[ch] = (struct pkt){ ch, T0, 2 * CPI_LEN };
		assert_int_equal(put(a, &whole[ch], 1), CPIASM_PLACED);
	}
	assert_int_equal(t.nrec, 2);
	check_cpi(&t.rec[0], 0, NULL);
	check_cpi(&t.rec[1], 1, NULL);
	memset(b, 0, sizeof(b));
	assert_int_equal(cpiasm_put(a, C, T0, b, 1, VRT_PLAIN_SC16_BE, 1), CPIASM_BAD_CHANNEL);
	assert_int_equal(cpiasm_put(a, 0, T0 - 1, b, 1, VRT_PLAIN_SC16_BE, 1), CPIASM_BEFORE_T0);
	assert_int_equal(cpiasm_put(a, 0, UINT64_MAX - 1, b, 4, VRT_PLAIN_SC16_BE, 1),
			 CPIASM_BEFORE_T0);
	assert_int_equal(cpiasm_put(a, 0, T0, b, 1, 99, 1), -EINVAL);
	cpiasm_destroy(a);
}

/* Conversions on the one copy: big- and little-endian sc16 and cf32 into
 * cf32 and sc16 rings (sc16 from cf32 rounds and saturates). */
struct fsink {
	union { float f[8]; int16_t i[8]; } buf;
	int committed;
};

static int f_reserve(void *ctx, void **payload)
{
	struct fsink *f = ctx;

	memset(&f->buf, 0x5a, sizeof(f->buf));
	*payload = &f->buf;
	return 0;
}

static int f_commit(void *ctx, uint64_t first_sample, uint32_t flags, uint32_t missing)
{
	struct fsink *f = ctx;

	assert_int_equal(missing, 0);
	f->committed++;
	return 0;
}

/*
 * cpiasm_push_lacks: a packet beyond the window would push out CPI 0 while
 * channel 1's part of it is missing (another receive thread's to wait
 * for), channel 0's being whole; in the window, at a new epoch's
 * distance, or once CPI 0 is whole and gone, nothing is pushed.
 */
static void test_push_lacks(void **state)
{
	static struct tsink t;
	struct cpiasm *a = mk(&t, 2);
	struct pkt pk[256];
	size_t n = packets(pk, 256, 0, 1, 4);
	uint64_t cpi2 = T0 + 2 * CPI_LEN, cpi1 = T0 + CPI_LEN;

	(void)state;
	assert_int_equal(cpiasm_push_lacks(a, cpi2, 1), 0);   /* no epoch yet */
	for (size_t i = 0; i < n; i++)
		if (pk[i].ch == 0 || pk[i].s < T0 + PRI)   /* channel 1: its first pulse only */
			assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 0);
	assert_int_equal(cpiasm_push_lacks(a, cpi2, 1), 1);
	assert_int_equal(cpiasm_push_lacks(a, cpi2 + 3, 1), 1);
	assert_int_equal(cpiasm_push_lacks(a, cpi2, 0), 0);   /* channel 0 is whole */
	assert_int_equal(cpiasm_push_lacks(a, cpi1, 1), 0);   /* in the window */
	assert_int_equal(cpiasm_push_lacks(a, T0 + 40 * CPI_LEN, 1), 0);   /* a new epoch */
	assert_int_equal(cpiasm_push_lacks(a, cpi2, C), 0);   /* no such channel */
	for (size_t i = 0; i < n; i++)
		if (pk[i].ch == 1 && pk[i].s >= T0 + PRI)
			assert_int_equal(put(a, &pk[i], 1), CPIASM_PLACED);
	assert_int_equal(t.nrec, 1);   /* whole: committed, the window moved */
	assert_int_equal(cpiasm_push_lacks(a, cpi2, 1), 0);
	cpiasm_destroy(a);
}

/* A sink of one slot of up to 64 cf32 samples (the copy-length test). */
static union { float f[128]; int16_t i[128]; } big;

static int big_reserve(void *ctx, void **payload)
{
	(void)ctx;
	memset(&big, 0x5a, sizeof(big));
	*payload = &big;
	return 0;
}

static int big_commit(void *ctx, uint64_t first_sample, uint32_t flags, uint32_t missing)
{
	(void)first_sample;
	(void)flags;
	(*(int *)ctx)++;
	assert_int_equal(missing, 0);
	return 0;
}

/*
 * The width-keeping copies (big-endian sc16 into an sc16 ring, cf32 into
 * cf32) at lengths that are and are not whole steps of their vector loop:
 * every value against its byte-by-byte big-endian reading.
 */
static void test_copy_lengths(void **state)
{
	static const unsigned lens[] = { 1, 3, 4, 5, 8, 37, 64 };
	uint8_t src[64 * 8];
	int committed = 0;
	struct cpiasm_sink s = { .ctx = &committed, .reserve = big_reserve, .commit = big_commit };
	char err[200];

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 37 + 11);
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		unsigned n = lens[li];
		struct cpiasm_params p = {
			.channels = 1, .pulses = 1, .samples = n, .ring_format = CHIRP_RING_SC16,
			.pri_samples = n, .horizon = 1, .deadline_ns = 1, .epoch_jump_cpis = 4,
		};
		struct cpiasm *a = cpiasm_create(&p, &s, err, sizeof(err));

		assert_non_null(a);
		committed = 0;
		assert_int_equal(cpiasm_put(a, 0, 0, src, n, VRT_PLAIN_SC16_BE, 1), CPIASM_PLACED);
		assert_int_equal(committed, 1);
		for (unsigned k = 0; k < 2 * n; k++)
			assert_int_equal(big.i[k], (int16_t)(src[2 * k] << 8 | src[2 * k + 1]));
		cpiasm_destroy(a);

		p.ring_format = CHIRP_RING_CF32;
		a = cpiasm_create(&p, &s, err, sizeof(err));
		assert_non_null(a);
		assert_int_equal(cpiasm_put(a, 0, 0, src, n, VRT_PLAIN_CF32_BE, 1), CPIASM_PLACED);
		for (unsigned k = 0; k < 2 * n; k++) {
			uint32_t u = (uint32_t)src[4 * k] << 24 | (uint32_t)src[4 * k + 1] << 16 |
				     (uint32_t)src[4 * k + 2] << 8 | src[4 * k + 3];
			uint32_t got;

			memcpy(&got, &big.f[k], 4);
			assert_int_equal(got, u);
		}
		cpiasm_destroy(a);
	}
}

static void test_formats(void **state)
{
	struct cpiasm_params p = {
		.channels = 1, .pulses = 1, .samples = 4, .ring_format = CHIRP_RING_CF32,
		.pri_samples = 4, .horizon = 1, .deadline_ns = 1, .epoch_jump_cpis = 4,
	};
	const float want[8] = { 0.5f, -0.25f, 1.0f / 32768, -1.0f, 0.75f, 2.0f, -3.0f, 0.0f };
	const int16_t want16[4] = { 24576, 32767, -32768, 0 };
	const uint8_t sc16be[8] = { 0x40, 0x00, 0xe0, 0x00, 0x00, 0x01, 0x80, 0x00 };
	const uint8_t sc16le[8] = { 0x00, 0x40, 0x00, 0xe0, 0x01, 0x00, 0x00, 0x80 };
	const uint8_t cf32be[16] = { 0x3f, 0x40, 0, 0, 0x40, 0, 0, 0, 0xc0, 0x40, 0, 0, 0, 0, 0, 0 };
	const uint8_t cf32le[16] = { 0, 0, 0x40, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0xc0, 0, 0, 0, 0 };
	struct fsink f = { .committed = 0 };
	struct cpiasm_sink s = { .ctx = &f, .reserve = f_reserve, .commit = f_commit };
	char err[200];
	struct cpiasm *a = cpiasm_create(&p, &s, err, sizeof(err));

	assert_non_null(a);
	assert_int_equal(cpiasm_put(a, 0, 0, sc16be, 2, VRT_PLAIN_SC16_BE, 1), CPIASM_PLACED);
	assert_int_equal(cpiasm_put(a, 0, 2, cf32be, 2, VRT_PLAIN_CF32_BE, 1), CPIASM_PLACED);
	assert_int_equal(f.committed, 1);
	assert_memory_equal(f.buf.f, want, sizeof(want));
	assert_int_equal(cpiasm_put(a, 0, 4, sc16le, 2, VRT_PLAIN_SC16_LE, 1), CPIASM_PLACED);
	assert_int_equal(cpiasm_put(a, 0, 6, cf32le, 2, VRT_PLAIN_CF32_LE, 1), CPIASM_PLACED);
	assert_int_equal(f.committed, 2);
	assert_memory_equal(f.buf.f, want, sizeof(want));
	cpiasm_destroy(a);

	p.ring_format = CHIRP_RING_SC16;
	p.samples = p.pri_samples = 2;
	a = cpiasm_create(&p, &s, err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(cpiasm_put(a, 0, 0, cf32be, 2, VRT_PLAIN_CF32_BE, 1), CPIASM_PLACED);
	assert_int_equal(f.committed, 3);
	assert_memory_equal(f.buf.i, want16, sizeof(want16));
	assert_int_equal(cpiasm_put(a, 0, 2, sc16le, 2, VRT_PLAIN_SC16_LE, 1), CPIASM_PLACED);
	assert_int_equal(f.buf.i[0], 16384);
	assert_int_equal(f.buf.i[3], -32768);
	assert_int_equal(cpiasm_put(a, 0, 4, sc16be, 2, VRT_PLAIN_SC16_BE, 1), CPIASM_PLACED);
	assert_int_equal(f.buf.i[0], 16384);
	assert_int_equal(f.buf.i[1], -8192);
	assert_int_equal(f.buf.i[2], 1);
	assert_int_equal(f.buf.i[3], -32768);
	cpiasm_destroy(a);

	/* refused parameters */
	p.pri_samples = 1;
	assert_null(cpiasm_create(&p, &s, err, sizeof(err)));
	assert_non_null(strstr(err, "pulse period"));
	p.pri_samples = 2;
	p.horizon = CPIASM_MAX_HORIZON + 1;
	assert_null(cpiasm_create(&p, &s, err, sizeof(err)));
	assert_non_null(strstr(err, "horizon must be 1..256"));
	p.horizon = CPIASM_MAX_HORIZON;   /* the most is taken */
	a = cpiasm_create(&p, &s, err, sizeof(err));
	assert_non_null(a);
	cpiasm_destroy(a);
	p.horizon = 1;
	p.ring_format = CHIRP_RING_RF32;
	assert_null(cpiasm_create(&p, &s, err, sizeof(err)));
}

/* Deferred copies (cpiasm_defer): a whole CPI waits for its copies to be
 * run, cpiasm_drain commits it then; a commit that cannot wait runs the
 * caller's queue first; a full queue copies at once. */
static void test_deferred_copies(void **state)
{
	static struct tsink t;
	static uint8_t src[256][4 * 4];
	struct cpiasm_copy qc[64];
	struct cpiasm_copies q = { .c = qc, .cap = 64 };
	struct cpiasm *a = mk(&t, 4);
	struct pkt pk[256];
	size_t n = packets(pk, 256, 0, 3, 4), m;

	cpiasm_defer(a, &q);
	for (size_t i = 0; i < n; i++) {
		make_be(src[i], pk[i].ch, pk[i].s, pk[i].n);
		assert_int_equal(cpiasm_put(a, pk[i].ch, pk[i].s, src[i], pk[i].n,
					    VRT_PLAIN_SC16_BE, 1), CPIASM_PLACED);
	}
	assert_int_equal(t.nrec, 0);   /* whole, but not copied yet */
	assert_true(q.n > 0);
	cpiasm_defer(a, NULL);
	cpiasm_run_copies(&q);
	assert_int_equal(q.n, 0);
	assert_int_equal(cpiasm_drain(a), 0);
	assert_int_equal(t.nrec, 3);
	for (unsigned k = 0; k < 3; k++) {
		check_cpi(&t.rec[k], k, NULL);
		assert_int_equal(t.rec[k].missing, 0);
	}

	/* CPI 3 whole and queued; a packet of CPI 7 pushes it out at once */
	cpiasm_defer(a, &q);
	m = packets(pk, 256, 3, 4, 4);
	for (size_t i = 0; i < m; i++) {
		make_be(src[i], pk[i].ch, pk[i].s, pk[i].n);
		assert_int_equal(cpiasm_put(a, pk[i].ch, pk[i].s, src[i], pk[i].n,
					    VRT_PLAIN_SC16_BE, 1), CPIASM_PLACED);
	}
	assert_int_equal(t.nrec, 3);
	make_be(src[m], 0, T0 + 7 * CPI_LEN, 4);
	assert_int_equal(cpiasm_put(a, 0, T0 + 7 * CPI_LEN, src[m], 4, VRT_PLAIN_SC16_BE, 1),
			 CPIASM_PLACED);
	assert_int_equal(t.nrec, 4);
	check_cpi(&t.rec[3], 3, NULL);
	assert_int_equal(t.rec[3].missing, 0);
	assert_int_equal(q.n, 1);      /* CPI 7's packet, queued */
	cpiasm_run_copies(&q);

	/* a queue of one: the rest are copied at once */
	q.cap = 1;
	m = packets(pk, 256, 8, 9, 4);
	for (size_t i = 0; i < m; i++) {
		make_be(src[i], pk[i].ch, pk[i].s, pk[i].n);
		assert_int_equal(cpiasm_put(a, pk[i].ch, pk[i].s, src[i], pk[i].n,
					    VRT_PLAIN_SC16_BE, 1), CPIASM_PLACED);
	}
	assert_int_equal(q.n, 1);
	cpiasm_defer(a, NULL);
	cpiasm_run_copies(&q);
	assert_int_equal(cpiasm_flush(a), 0);
	assert_int_equal(t.nrec, 9);   /* 4..7 partial, then 8 whole */
	check_cpi(&t.rec[8], 8, NULL);
	assert_int_equal(t.rec[8].missing, 0);
	cpiasm_destroy(a);
}

/* One wide CPI (1 channel x 2 pulses x 150 gates: 300 samples, the
 * bitmap's five words with a partial last) for test_holes_across_words. */
#define WR 150
#define WN (2 * WR)
struct wsink {
	int16_t slot[2 * WN];
	int16_t got[2 * WN];
	uint32_t missing;
	unsigned nres, nrec;
};

static int w_reserve(void *ctx, void **payload)
{
	struct wsink *t = ctx;

	assert_int_equal(t->nres, 0);
	memset(t->slot, 0xab, sizeof(t->slot));   /* stale data: holes must be zeroed */
	t->nres = 1;
	*payload = t->slot;
	return 0;
}

static int w_commit(void *ctx, uint64_t first_sample, uint32_t flags, uint32_t missing)
{
	struct wsink *t = ctx;

	(void)first_sample;
	(void)flags;
	assert_int_equal(t->nres, 1);
	memcpy(t->got, t->slot, sizeof(t->got));
	t->missing = missing;
	t->nres = 0;
	t->nrec++;
	return 0;
}

/*
 * Holes of every shape the bitmap has (64 samples a word): the first
 * sample, one sample, a run ending at a word boundary, one starting at a
 * boundary after a word placed whole, a run across two boundaries that
 * takes a word whole, the tail of the partial last word with the last
 * sample; everything else placed, sample by sample, so each hole is
 * exact. The holes read zero, every other sample its value, the count is
 * exact.
 */
static void test_holes_across_words(void **state)
{
	static const uint64_t holes[][2] = {   /* [from, to) in the CPI's samples */
		{ 0, 1 }, { 5, 6 }, { 60, 64 }, { 128, 130 }, { 150, 260 }, { 270, 271 },
		{ 290, 300 },
	};
	static struct wsink t;
	struct cpiasm_params p = {
		.channels = 1, .pulses = 2, .samples = WR, .ring_format = CHIRP_RING_SC16,
		.pri_samples = WR, .t0_sample = T0, .horizon = 2,
		.deadline_ns = 1000000, .epoch_jump_cpis = 16,
	};
	struct cpiasm_sink sk = { .ctx = &t, .reserve = w_reserve, .commit = w_commit };
	uint8_t lost[WN] = { 0 }, b[4];
	uint32_t want = 0;
	char err[200];
	struct cpiasm *a;

	(void)state;
	memset(&t, 0, sizeof(t));
	a = cpiasm_create(&p, &sk, err, sizeof(err));
	assert_non_null(a);
	for (size_t h = 0; h < sizeof(holes) / sizeof(holes[0]); h++)
		for (uint64_t i = holes[h][0]; i < holes[h][1]; i++) {
			lost[i] = 1;
			want++;
		}
	for (uint64_t i = 0; i < WN; i++) {
		if (lost[i])
			continue;
		make_be(b, 0, T0 + i, 1);
		assert_int_equal(cpiasm_put(a, 0, T0 + i, b, 1, VRT_PLAIN_SC16_BE, 1),
				 CPIASM_PLACED);
	}
	assert_int_equal(t.nrec, 0);
	assert_int_equal(cpiasm_flush(a), 0);
	assert_int_equal(t.nrec, 1);
	assert_int_equal(t.missing, want);
	for (uint64_t i = 0; i < WN; i++) {
		assert_int_equal(t.got[2 * i], lost[i] ? 0 : val_i(0, T0 + i));
		assert_int_equal(t.got[2 * i + 1], lost[i] ? 0 : val_q(0, T0 + i));
	}
	cpiasm_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_shuffled),
		cmocka_unit_test(test_lost),
		cmocka_unit_test(test_late_and_duplicate),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_whole_cpi_lost),
		cmocka_unit_test(test_holes_across_words),
		cmocka_unit_test(test_epochs),
		cmocka_unit_test(test_ring_full),
		cmocka_unit_test(test_spans_and_refusals),
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_copy_lengths),
		cmocka_unit_test(test_push_lacks),
		cmocka_unit_test(test_deferred_copies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
