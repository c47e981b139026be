/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_ring.c — libFuzzer target for libchirpring's validation of what it
 * reads from shared memory.
 *
 * The input is a ring image (header page + descriptors, as another process
 * could have left it), zero-extended to IMG_BYTES. It goes through
 * ring_validate_header(); if accepted, a consumer and a producer handle are
 * opened on it and driven (peek/release/reserve/commit/check/stats, the
 * producer opted in to continuity and leaving clean marks, committing
 * with a mode), while
 * the last bytes of the input, read as (offset, value) pokes, scribble on
 * the header and descriptors between calls — a hostile or crashing peer.
 * Nothing may crash, read or write outside the image, or hang.
 *
 * FUZZ_RING_WRITE_SEEDS=dir writes valid seed images into dir and exits
 * (that is how tests/fuzz/corpus/fuzz_ring/ was made: ABI 2 images, slot
 * counts that are and are not powers of two, one of them next to the
 * position limit of a count that is not).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chirp/ring.h"
#include "ring/ring_private.h"

#define IMG_BYTES (1u << 20)
#define POKE_BYTES 10   /* u16 offset into header+descriptors, u64 value */

static uint8_t *img;
static size_t dirty;   /* bytes of img the previous input may have changed */

static void poke(const uint8_t *p, uint64_t limit)
{
	uint16_t off;
	uint64_t v;

	memcpy(&off, p, 2);
	memcpy(&v, p + 2, 8);
	off &= (uint16_t)~7u;          /* fields are 8-byte aligned */
	if (off + 8u <= limit)
		__atomic_store_n((uint64_t *)(img + off), v, __ATOMIC_RELAXED);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chirp_ring *c = NULL, *p = NULL;
	struct chirp_ring_block b;
	struct chirp_ring_stats st;
	struct ring_layout L;
	size_t npokes = 0, pk = 0, n;
	char err[256];
	void *pl;
	int i, rc;

	n = size < IMG_BYTES ? size : IMG_BYTES;
	memset(img, 0, dirty > n ? dirty : n);   /* each run starts from the input alone */
	memcpy(img, data, n);
	dirty = n;
	if (n > RING_HDR_BYTES + 4 * POKE_BYTES)
		npokes = 4;
	if (ring_validate_header(img, IMG_BYTES, &L, err, sizeof(err)) < 0)
		goto out;
	c = ring_open_image(img, IMG_BYTES, CHIRP_RING_CONSUMER, err, sizeof(err));
	p = ring_open_image(img, IMG_BYTES, CHIRP_RING_PRODUCER, err, sizeof(err));
	if (!c || !p)
		goto out;
	chirp_ring_set_continuous(p);   /* reads the clean mark a peer may have forged */
	dirty = IMG_BYTES;
	for (i = 0; i < 3 * (int)L.slots + 4 && i < 600; i++) {
		rc = chirp_ring_peek(c, &b);
		if (rc == 0) {
			/* touch both ends of what we were handed */
			volatile uint8_t x = ((uint8_t *)b.payload)[0];
			x ^= ((uint8_t *)b.payload)[b.len - 1];
			x ^= (uint8_t)b.mode;
			/* the missing-sample count is read only with its flag */
			if (b.slot >= L.slots ||
			    (b.missing != 0 && !(b.flags & CHIRP_RING_INCOMPLETE)))
				abort();
			(void)x;
			if (i & 1)
				chirp_ring_release(c);
		} else if (rc == -EAGAIN) {
			while (chirp_ring_release(c) == 0)
				;
		}
		if (pk < npokes && (i % 5) == 4) {
			poke(data + n - (pk + 1) * POKE_BYTES, L.data_offset);
			pk++;
		}
		if (i % 3 == 2) {
			/* two outstanding reservations, committed in order */
			for (int k = 0; k < 2; k++)
				if (chirp_ring_reserve_next(p, &pl) == 0)
					memset(pl, 0x5a, L.payload_bytes);
			while (chirp_ring_reserved(p) &&
			       chirp_ring_commit_mode(p, 1, (uint64_t)i, 0, (uint32_t)i * 7u) == 0)
				;
		} else {
			rc = chirp_ring_reserve(p, &pl);
			if (rc == 0) {
				memset(pl, 0xa5, L.payload_bytes);
				chirp_ring_commit(p, 1, (uint64_t)i, 0);
			}
		}
		chirp_ring_available(c);
		chirp_ring_stats(c, &st);
		chirp_ring_check(c, err, sizeof(err));
		chirp_ring_last_commit(p, &b);
		if (i % 7 == 6)
			chirp_ring_mark_clean(p);   /* then reservations must erase it */
	}
out:
	chirp_ring_detach(c);
	chirp_ring_detach(p);
	return 0;
}

static void write_seeds(const char *dir)
{
	static const struct chirp_ring_geometry geos[] = {
		{ 1, 1, 1, CHIRP_RING_CF32, 2, 1.0 },
		{ 3, 5, 17, CHIRP_RING_SC16, 4, 25e6 },
		{ 2, 2, 100, CHIRP_RING_RF32, 16, 1e6 },
		{ 1, 3, 7, CHIRP_RING_CF32, 64, 5e6 },
		{ 1, 1, 16, CHIRP_RING_CF32, 3, 1e6 },
		{ 2, 1, 9, CHIRP_RING_SC16, 5, 2e6 },
		{ 1, 1, 4, CHIRP_RING_RF32, 100, 1e6 },
		{ 1, 1, 8, CHIRP_RING_CF32, 7, 1e6 },   /* next to the position limit */
	};
	char path[512], err[256];

	for (size_t k = 0; k < sizeof(geos) / sizeof(geos[0]); k++) {
		struct ring_layout L;
		struct chirp_ring *p, *c;
		struct chirp_ring_block b;
		void *pl;
		FILE *f;

		if (ring_layout_compute(&geos[k], RING_PAGE, &L, err, sizeof(err)) < 0 ||
		    L.total_bytes > IMG_BYTES)
			continue;
		L.epoch = 0x1234 + k;
		memset(img, 0, IMG_BYTES);
		ring_format_image(img, &L);
		p = ring_open_image(img, IMG_BYTES, CHIRP_RING_PRODUCER, err, sizeof(err));
		if (k == 7 && ring_debug_set_seq(p, RING_POS_LIMIT - L.slots, 1000) < 0)
			abort();
		c = ring_open_image(img, IMG_BYTES, CHIRP_RING_CONSUMER, err, sizeof(err));
		if (k > 0) {
			/* some history: committed, taken, released, an overrun */
			for (uint32_t i = 0; i < L.slots + 1; i++)
				if (chirp_ring_reserve(p, &pl) == 0)
					chirp_ring_commit_mode(p, 100 + i, i * 10, 0, i % 5);
			for (uint32_t i = 0; i < L.slots / 2; i++)
				chirp_ring_peek(c, &b);
			chirp_ring_release(c);
		}
		chirp_ring_detach(p);
		chirp_ring_detach(c);
		snprintf(path, sizeof(path), "%s/seed-%zu", dir, k);
		f = fopen(path, "wb");
		if (!f || fwrite(img, 1, L.data_offset, f) != L.data_offset) {
			perror(path);
			exit(1);
		}
		fclose(f);
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_RING_WRITE_SEEDS");

	img = aligned_alloc(4096, IMG_BYTES);
	if (!img)
		abort();
	memset(img, 0, IMG_BYTES);
	if (dir)
		write_seeds(dir);
	return 0;
}
