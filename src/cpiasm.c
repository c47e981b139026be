/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpiasm.c — CPI assembly by timestamp (contract in cpiasm.h).
 *
 * State: the window [lo, lo + horizon) of CPI indices; CPIs [lo, next_res)
 * hold a reservation (or were dropped for want of one), in CPI order, each
 * in slot[index % horizon] with a bitmap of the samples placed. Commits
 * pop lo; reservations push next_res; so lo <= next_res <= lo + horizon.
 */
#include "cpiasm.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chirp/ring.h"
#include "vrt.h"

enum { IF_OPEN = 1, IF_DROPPED = 2 };

struct inflight {
	uint64_t index;       /* CPI index                                  */
	int state;            /* IF_OPEN or IF_DROPPED                      */
	uint8_t *payload;     /* the reserved slot (IF_OPEN)                */
	uint64_t filled;      /* samples placed                             */
	uint64_t *ch_filled;  /* [channels]: samples placed of each channel  */
	uint64_t touch_ns;    /* first packet's now_ns; 0: none yet         */
	uint32_t flags;       /* DISCONTINUITY: first CPI of a new epoch    */
	uint64_t *bits;       /* words of the placed-sample bitmap          */
	_Atomic uint32_t copying;  /* deferred copies not yet run: released by
				      their runner, acquired before commit */
};

struct cpiasm {
	struct cpiasm_params p;
	struct cpiasm_sink sink;
	uint64_t cpi_len;       /* stream samples per CPI: pulses * pri_samples */
	uint64_t cpi_samples;   /* samples stored per CPI: C * P * R            */
	size_t ring_sb;         /* bytes of one complex sample in the ring      */
	size_t words;           /* bitmap words per CPI                         */
	int have_epoch;
	uint64_t lo, next_res;
	uint32_t epoch_flags;   /* for the next CPI reserved                    */
	uint64_t dropped_mask;  /* bit i: CPI lo - 1 - i was dropped (no slot):
				   its late packets count as ring_full     */
	struct inflight f[CPIASM_MAX_HORIZON];
	uint64_t *bits;
	uint64_t *ch_filled;    /* horizon x channels                           */
	struct cpiasm_copies *q;  /* cpiasm_defer's queue, NULL: copy at once  */
	struct cpiasm_stats st;
};

static int bad(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "CPI assembly: %s", why);
	return 0;
}

_Static_assert(CPIASM_MAX_HORIZON == 256, "params_ok's message names the limit");

static int params_ok(const struct cpiasm_params *p, char *err, size_t errlen)
{
	if (!p->channels || !p->pulses || !p->samples)
		return bad(err, errlen, "channels, pulses and samples must be >= 1");
	if (p->channels > 65536 || p->pulses > (1u << 24) || p->samples > (1u << 24))
		return bad(err, errlen, "geometry too large");
	if ((uint64_t)p->channels * p->pulses * p->samples > (1ull << 40))
		return bad(err, errlen, "CPI too large");
	if (p->ring_format != CHIRP_RING_CF32 && p->ring_format != CHIRP_RING_SC16)
		return bad(err, errlen, "ring format must be cf32 or sc16");
	if (p->pri_samples < p->samples || p->pri_samples > (1ull << 40))
		return bad(err, errlen, "the pulse period must be >= samples per pulse");
	if (p->horizon < 1 || p->horizon > CPIASM_MAX_HORIZON)
		return bad(err, errlen, "horizon must be 1..256 CPIs");
	if (!p->deadline_ns)
		return bad(err, errlen, "deadline must be > 0");
	if (!p->epoch_jump_cpis)
		return bad(err, errlen, "epoch jump must be >= 1 CPI");
	return 1;
}

struct cpiasm *cpiasm_create(const struct cpiasm_params *p, const struct cpiasm_sink *sink,
			     char *err, size_t errlen)
{
	struct cpiasm *a;

	if (!params_ok(p, err, errlen))
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a) {
		bad(err, errlen, "out of memory");
		return NULL;
	}
	a->p = *p;
	a->sink = *sink;
	a->cpi_len = (uint64_t)p->pulses * p->pri_samples;
	a->cpi_samples = (uint64_t)p->channels * p->pulses * p->samples;
	a->ring_sb = p->ring_format == CHIRP_RING_SC16 ? 4 : 8;
	a->words = (size_t)((a->cpi_samples + 63) / 64);
	a->bits = calloc(a->words * p->horizon, sizeof(uint64_t));
	if (!a->bits) {
		bad(err, errlen, "out of memory for the sample bitmaps");
		free(a);
		return NULL;
	}
	a->ch_filled = calloc((size_t)p->horizon * p->channels, sizeof(uint64_t));
	if (!a->ch_filled) {
		bad(err, errlen, "out of memory for the channel counts");
		free(a->bits);
		free(a);
		return NULL;
	}
	for (unsigned i = 0; i < p->horizon; i++) {
		a->f[i].bits = a->bits + i * a->words;
		a->f[i].ch_filled = a->ch_filled + (size_t)i * p->channels;
	}
	return a;
}

void cpiasm_destroy(struct cpiasm *a)
{
	if (!a)
		return;
	cpiasm_wait_copies(a);   /* no copy may still point at a->f */
	free(a->bits);
	free(a->ch_filled);
	free(a);
}

const struct cpiasm_stats *cpiasm_stats(const struct cpiasm *a)
{
	return &a->st;
}

static struct inflight *slot_of(struct cpiasm *a, uint64_t k)
{
	return &a->f[k % a->p.horizon];
}

/* ---- the bitmap ------------------------------------------------------- */

static uint64_t word_mask(uint64_t from, uint64_t to)   /* bits [from, to) of one word */
{
	uint64_t hi = to >= 64 ? ~0ull : (1ull << to) - 1;

	return hi & ~((1ull << from) - 1);
}

/* Any bit of [b, b + n) set? */
static int range_any(const uint64_t *w, uint64_t b, uint64_t n)
{
	uint64_t e = b + n;

	while (b < e) {
		uint64_t i = b / 64, lo = b % 64, hi = (e - i * 64) < 64 ? e - i * 64 : 64;

		if (w[i] & word_mask(lo, hi))
			return 1;
		b = i * 64 + hi;
	}
	return 0;
}

static void range_set(uint64_t *w, uint64_t b, uint64_t n)
{
	uint64_t e = b + n;

	while (b < e) {
		uint64_t i = b / 64, lo = b % 64, hi = (e - i * 64) < 64 ? e - i * 64 : 64;

		w[i] |= word_mask(lo, hi);
		b = i * 64 + hi;
	}
}

/* The first bit at or after b (below n) that is set in w ^ flip (flip
 * ~0: the first clear bit), or n. A word at a time. */
static uint64_t next_bit(const uint64_t *w, uint64_t b, uint64_t n, uint64_t flip)
{
	while (b < n) {
		uint64_t i = b / 64, x = (w[i] ^ flip) & word_mask(b % 64, 64);

		if (x) {
			b = i * 64 + (uint64_t)__builtin_ctzll(x);
			return b < n ? b : n;
		}
		b = (i + 1) * 64;
	}
	return n;
}

/* Zero every sample of f's slot whose bit is clear: a run of clear bits
 * at a time, one memset each. A CPI the network left half empty is zeroed
 * at memset's speed (and under the caller's lock, where there is one,
 * for that long), not a sample at a time. */
static void zero_holes(const struct cpiasm *a, struct inflight *f)
{
	uint64_t n = a->cpi_samples, s = 0;

	for (;;) {
		uint64_t h0 = next_bit(f->bits, s, n, ~0ull), h1;

		if (h0 == n)
			return;
		h1 = next_bit(f->bits, h0, n, 0);
		memset(f->payload + h0 * a->ring_sb, 0, (size_t)(h1 - h0) * a->ring_sb);
		s = h1;
	}
}

/* ---- the copy --------------------------------------------------------- */

static float be_f32(const uint8_t *b)
{
	uint32_t u = vrt_be32(b);
	float v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static float le_f32(const uint8_t *b)
{
	uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		     (uint32_t)b[3] << 24;
	float v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static int16_t to_sc16(float v)
{
	float x = v * 32768.0f;

	if (!(x > -32768.0f))    /* NaN too */
		return x != x ? 0 : -32768;
	if (x >= 32767.0f)
		return 32767;
	return (int16_t)lrintf(x);
}

/* One scalar (I or Q) of the source, as a float in full-scale units, or
 * as the int16 it is. */
static int16_t src_i16(const uint8_t *s, unsigned fmt)
{
	return fmt == VRT_PLAIN_SC16_BE ? (int16_t)(s[0] << 8 | s[1]) : (int16_t)(s[0] | s[1] << 8);
}

static float src_f32(const uint8_t *s, unsigned fmt)
{
	switch (fmt) {
	case VRT_PLAIN_SC16_BE:
	case VRT_PLAIN_SC16_LE: return (float)src_i16(s, fmt) / 32768.0f;
	case VRT_PLAIN_CF32_BE: return be_f32(s);
	default: return le_f32(s);
	}
}

/* 1: done by a width-keeping copy (the source's width is the ring's; the
 * ring holds host order, which these copies take to be little-endian). */
static int convert_same_width(uint8_t *dst, const uint8_t *src, size_t n, unsigned fmt,
			      uint32_t ring_format)
{
	int ring16 = ring_format == CHIRP_RING_SC16;

	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return 0;
	if (ring16 && fmt == VRT_PLAIN_SC16_LE)
		memcpy(dst, src, 4 * n);
	else if (ring16 && fmt == VRT_PLAIN_SC16_BE)
		vrt_copy_swap16(dst, src, 2 * n);
	else if (!ring16 && fmt == VRT_PLAIN_CF32_LE)
		memcpy(dst, src, 8 * n);
	else if (!ring16 && fmt == VRT_PLAIN_CF32_BE)
		vrt_copy_swap32(dst, src, 2 * n);
	else
		return 0;
	return 1;
}

/* n complex samples from src (format fmt) into dst (ring_format). */
static void convert(uint32_t ring_format, uint8_t *dst, const uint8_t *src, size_t n,
		    unsigned fmt)
{
	size_t ssb = vrt_plain_sample_bytes(fmt) / 2;   /* bytes per scalar */
	int src16 = ssb == 2;

	if (convert_same_width(dst, src, n, fmt, ring_format))
		return;
	if (ring_format == CHIRP_RING_SC16) {
		int16_t *d = (int16_t *)(void *)dst;

		for (size_t i = 0; i < 2 * n; i++)
			d[i] = src16 ? src_i16(src + 2 * i, fmt) : to_sc16(src_f32(src + 4 * i, fmt));
	} else {
		float *d = (float *)(void *)dst;

		for (size_t i = 0; i < 2 * n; i++)
			d[i] = src_f32(src + ssb * i, fmt);
	}
}

/* ---- deferred copies -------------------------------------------------- */

void cpiasm_defer(struct cpiasm *a, struct cpiasm_copies *q)
{
	a->q = q;
}

void cpiasm_run_copies(struct cpiasm_copies *q)
{
	for (size_t i = 0; i < q->n; i++) {
		const struct cpiasm_copy *c = &q->c[i];

		convert(c->ring_format, c->dst, c->src, c->n, c->src_fmt);
		/* release: the bytes are in place before the committer sees 0 */
		atomic_fetch_sub_explicit(c->pending, 1, memory_order_release);
	}
	q->n = 0;
}

/* m samples into f's slot at dst: queued (cpiasm_defer) or at once. */
static void copy(struct cpiasm *a, struct inflight *f, uint8_t *dst, const uint8_t *src,
		 size_t m, unsigned fmt)
{
	struct cpiasm_copies *q = a->q;

	if (!q || q->n == q->cap) {
		convert(a->p.ring_format, dst, src, m, fmt);
		return;
	}
	q->c[q->n++] = (struct cpiasm_copy){ .dst = dst, .src = src, .n = m, .src_fmt = fmt,
					    .ring_format = a->p.ring_format,
					    .pending = &f->copying };
	atomic_fetch_add_explicit(&f->copying, 1, memory_order_relaxed);
}

static int copied(struct inflight *f)
{
	return atomic_load_explicit(&f->copying, memory_order_acquire) == 0;
}

/* Wait for f's copies: ours run now, another thread's end without a lock. */
static void settle(struct cpiasm *a, struct inflight *f)
{
	if (copied(f))
		return;
	if (a->q)
		cpiasm_run_copies(a->q);
	while (!copied(f))
		sched_yield();
}

void cpiasm_wait_copies(struct cpiasm *a)
{
	for (unsigned i = 0; i < a->p.horizon; i++)
		settle(a, &a->f[i]);
}

/* ---- the window ------------------------------------------------------- */

/* Reserve every CPI up to k (in order). */
static int reserve_upto(struct cpiasm *a, uint64_t k)
{
	while (a->next_res <= k) {
		struct inflight *f = slot_of(a, a->next_res);
		void *pl = NULL;
		int rc = a->sink.reserve(a->sink.ctx, &pl);

		memset(f->bits, 0, a->words * sizeof(uint64_t));
		memset(f->ch_filled, 0, a->p.channels * sizeof(uint64_t));
		f->index = a->next_res;
		f->filled = 0;
		f->touch_ns = 0;
		if (rc == 0) {
			f->state = IF_OPEN;
			f->payload = pl;
			f->flags = a->epoch_flags;
			a->epoch_flags = 0;
		} else if (rc == -ENOBUFS) {
			f->state = IF_DROPPED;
			f->payload = NULL;
			a->st.cpis_dropped++;
		} else {
			return rc;
		}
		a->next_res++;
	}
	return 0;
}

/* Commit CPI lo (reserving it first if no packet reached it) and pop it. */
static int commit_head(struct cpiasm *a)
{
	struct inflight *f;
	uint64_t missing;
	int rc;

	if (a->lo == a->next_res) {
		rc = reserve_upto(a, a->lo);
		if (rc < 0)
			return rc;
	}
	f = slot_of(a, a->lo);
	if (f->state == IF_OPEN) {
		settle(a, f);
		missing = a->cpi_samples - f->filled;
		if (missing) {
			zero_holes(a, f);
			a->st.cpis_partial++;
			a->st.missing_samples += missing;
		} else {
			a->st.cpis_complete++;
		}
		rc = a->sink.commit(a->sink.ctx, a->lo * a->p.pulses * a->p.samples, f->flags,
				    missing > UINT32_MAX ? UINT32_MAX : (uint32_t)missing);
		if (rc < 0)
			return rc;
	}
	a->dropped_mask = a->dropped_mask << 1 | (f->state == IF_DROPPED);
	f->state = 0;
	a->lo++;
	return 0;
}

/* Commit the leading CPIs that are whole and copied, or were dropped. */
int cpiasm_drain(struct cpiasm *a)
{
	while (a->lo < a->next_res) {
		struct inflight *f = slot_of(a, a->lo);
		int rc;

		if (f->state == IF_OPEN && (f->filled < a->cpi_samples || !copied(f)))
			break;
		rc = commit_head(a);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int cpiasm_flush(struct cpiasm *a)
{
	while (a->lo < a->next_res) {
		int rc = commit_head(a);

		if (rc < 0)
			return rc;
	}
	return 0;
}

void cpiasm_reset(struct cpiasm *a)
{
	cpiasm_wait_copies(a);
	for (unsigned i = 0; i < a->p.horizon; i++)
		a->f[i].state = 0;
	a->have_epoch = 0;
	a->lo = a->next_res = 0;
	a->dropped_mask = 0;
}

static int new_epoch(struct cpiasm *a, uint64_t k)
{
	int rc = cpiasm_flush(a);

	if (rc < 0)
		return rc;
	a->epoch_flags = a->have_epoch ? CHIRP_RING_DISCONTINUITY : 0;
	a->have_epoch = 1;
	a->lo = a->next_res = k;
	a->dropped_mask = 0;
	a->st.epochs++;
	return 0;
}

/*
 * Bring CPI k into the window: a new epoch when it is far from it, a late
 * packet when it is just behind, older CPIs committed when it is ahead.
 * Returns 0 (k in the window), CPIASM_LATE, or a negative errno.
 */
static int enter_window(struct cpiasm *a, uint64_t k)
{
	uint64_t last = a->lo + a->p.horizon - 1;

	if (!a->have_epoch)
		return new_epoch(a, k);
	if (k < a->lo) {
		if (a->lo - k > a->p.epoch_jump_cpis)
			return new_epoch(a, k);
		if (a->lo - k <= 64 && (a->dropped_mask >> (a->lo - 1 - k) & 1))
			return CPIASM_RING_FULL;   /* its CPI had no slot */
		return CPIASM_LATE;
	}
	if (k <= last)
		return 0;
	if (k - last > a->p.epoch_jump_cpis)
		return new_epoch(a, k);
	while (a->lo + a->p.horizon <= k) {
		int rc = commit_head(a);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Place run samples that fall in one pulse period of CPI k: pulse, gate g. */
static int place(struct cpiasm *a, unsigned ch, uint64_t k, uint64_t pulse, uint64_t g,
		 uint64_t run, const uint8_t *src, unsigned fmt, uint64_t now_ns)
{
	struct inflight *f;
	uint64_t m, b0;
	int rc;

	/* Past the receive window: nothing to store, no CPI to open or
	 * commit, whether or not its CPI is still in flight. */
	if (g >= a->p.samples) {
		a->st.outside_samples += run;
		return CPIASM_PLACED;
	}
	rc = enter_window(a, k);
	if (rc != 0)
		return rc;
	rc = reserve_upto(a, k);
	if (rc < 0)
		return rc;
	f = slot_of(a, k);
	if (f->state == IF_DROPPED)
		return CPIASM_RING_FULL;
	m = run < a->p.samples - g ? run : a->p.samples - g;
	a->st.outside_samples += run - m;
	b0 = ((uint64_t)ch * a->p.pulses + pulse) * a->p.samples + g;
	if (range_any(f->bits, b0, m))
		return CPIASM_DUPLICATE;
	range_set(f->bits, b0, m);
	f->filled += m;
	f->ch_filled[ch] += m;
	if (!f->touch_ns)
		f->touch_ns = now_ns ? now_ns : 1;
	copy(a, f, f->payload + b0 * a->ring_sb, src, (size_t)m, fmt);
	return CPIASM_PLACED;
}

int cpiasm_put(struct cpiasm *a, unsigned channel, uint64_t sample, const void *src,
	       size_t n, unsigned fmt, uint64_t now_ns)
{
	size_t ssb = vrt_plain_sample_bytes(fmt);
	const uint8_t *s = src;
	int first = -1, placed = 0;

	if (!ssb)
		return -EINVAL;
	if (channel >= a->p.channels)
		return CPIASM_BAD_CHANNEL;
	if (sample < a->p.t0_sample || n > UINT64_MAX - sample)
		return CPIASM_BEFORE_T0;
	/* One pulse period at a time: a packet may cross pulses and CPIs. */
	while (n > 0) {
		uint64_t d = sample - a->p.t0_sample, k = d / a->cpi_len, off = d % a->cpi_len;
		uint64_t pulse = off / a->p.pri_samples, g = off % a->p.pri_samples;
		uint64_t run = a->p.pri_samples - g < n ? a->p.pri_samples - g : n;
		int rc = place(a, channel, k, pulse, g, run, s, fmt, now_ns);

		if (rc < 0)
			return rc;
		if (first < 0)
			first = rc;
		placed |= rc == CPIASM_PLACED;
		sample += run;
		s += run * ssb;
		n -= (size_t)run;
	}
	if (first < 0)
		return CPIASM_PLACED;   /* n == 0: nothing to place */
	{
		int rc = cpiasm_drain(a);

		if (rc < 0)
			return rc;
	}
	return placed ? CPIASM_PLACED : first;
}

int cpiasm_tick(struct cpiasm *a, uint64_t now_ns)
{
	uint64_t due = a->lo;   /* commit [lo, due) */

	for (uint64_t k = a->lo; k < a->next_res; k++) {
		struct inflight *f = slot_of(a, k);

		if (f->state == IF_OPEN && f->touch_ns && now_ns - f->touch_ns >= a->p.deadline_ns)
			due = k + 1;
	}
	while (a->lo < due) {
		int rc = commit_head(a);

		if (rc < 0)
			return rc;
	}
	return cpiasm_drain(a);
}

uint64_t cpiasm_next_deadline(const struct cpiasm *a, uint64_t now_ns)
{
	uint64_t best = UINT64_MAX;

	for (uint64_t k = a->lo; k < a->next_res; k++) {
		const struct inflight *f = &a->f[k % a->p.horizon];
		uint64_t at;

		if (f->state != IF_OPEN || !f->touch_ns)
			continue;
		at = f->touch_ns + a->p.deadline_ns;
		if (at <= now_ns)
			return 0;
		if (at - now_ns < best)
			best = at - now_ns;
	}
	return best;
}

int cpiasm_push_lacks(const struct cpiasm *a, uint64_t sample, unsigned channel)
{
	const struct inflight *f;
	uint64_t k, last;

	if (!a->have_epoch || sample < a->p.t0_sample || channel >= a->p.channels ||
	    a->lo == a->next_res)
		return 0;
	k = (sample - a->p.t0_sample) / a->cpi_len;
	last = a->lo + a->p.horizon - 1;
	if (k <= last || k - last > a->p.epoch_jump_cpis)
		return 0;   /* in the window, or a new epoch */
	f = &a->f[a->lo % a->p.horizon];
	return f->state == IF_OPEN &&
	       f->ch_filled[channel] < (uint64_t)a->p.pulses * a->p.samples;
}
