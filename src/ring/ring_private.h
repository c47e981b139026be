/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ring_private.h — shared-memory layout of a chirp ring and the internals
 * that ring.c, the tests, the fuzz target and the benchmark share. Nothing
 * here is public ABI except the layout itself, which is versioned by
 * CHIRP_RING_ABI_VERSION (change the layout => bump the version).
 *
 * Object layout (all offsets from the start of the shm object):
 *
 *   0                 struct ring_hdr (one page, 4096 bytes)
 *   desc_offset=4096  struct ring_desc[slots] (64 bytes each)
 *   data_offset       slot 0 payload, slot 1 payload, ... each slot_bytes
 *                     apart; data_offset and slot_bytes are multiples of
 *                     align_bytes (4096, or 2 MiB with huge pages)
 *   total_bytes       = data_offset + slots * slot_bytes
 */
#ifndef CHIRP_RING_PRIVATE_H
#define CHIRP_RING_PRIVATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "chirp/ring.h"

#define RING_MAGIC        0x474e525052494843ull /* "CHIRPRNG" little-endian */
#define RING_HDR_BYTES    4096u
#define RING_DESC_BYTES   128u
#define RING_PAGE         ((uint64_t)CHIRP_RING_PAGE_BYTES)
#define RING_HUGE_PAGE    (2ull << 20)
#define RING_MAX_TOTAL    (1ull << 40)          /* 1 TiB: sanity bound  */

/*
 * The slot of position p is p % slots. That is continuous across the 2^64
 * wrap of the free-running positions only when 2^64 is a multiple of slots,
 * i.e. for a power-of-two count. A ring of any other count therefore never
 * lets a position pass RING_POS_LIMIT: the producer refuses to reserve
 * there (-EOVERFLOW: re-create the ring), and a header whose prod or cons
 * lies beyond it is refused as corrupt. Positions start at 0 on creation;
 * 2^64 - 2^32 blocks take about 584 years at a billion blocks a second, so
 * no real ring reaches it; the 2^32 margin makes a near-wrap value read as
 * what it is, scribbled on.
 */
#define RING_POS_LIMIT    (~0ull - 0xffffffffull)  /* 2^64 - 2^32 */

/* hdr.state */
#define RING_STATE_INIT    0u                    /* being created         */
#define RING_STATE_READY   0x59444552u           /* "REDY"                */
#define RING_STATE_RETIRED 0x44524954u           /* "TIRD": re-created    */

#define RING_LINE 128

/*
 * Page 0. Line 0 is written once by the creator before state becomes
 * READY (release) and only read afterwards. Each later line has a single
 * writer, so the two sides never write the same cache line in the data
 * path (128 bytes: the adjacent-line prefetcher pairs 64-byte lines).
 */
struct ring_hdr {
	/* --- line 0: identity and geometry (creator, immutable) --- */
	uint64_t magic;
	uint32_t abi_version;
	uint32_t header_bytes;      /* RING_HDR_BYTES                         */
	uint64_t epoch;             /* random, != 0, new on every creation    */
	uint64_t total_bytes;
	uint64_t desc_offset;
	uint64_t data_offset;
	uint64_t slot_bytes;        /* payload stride                         */
	uint64_t payload_bytes;     /* one CPI: chirp_ring_cpi_bytes()         */
	uint32_t slots;
	uint32_t desc_bytes;        /* RING_DESC_BYTES                        */
	uint32_t channels, pulses, samples, format;
	uint32_t align_bytes;       /* 4096 or 2 MiB                          */
	uint32_t pad0;
	double sample_rate_hz;
	_Atomic uint32_t state;     /* RING_STATE_*                           */
	uint32_t pad1;
	uint64_t created_ns;        /* CLOCK_REALTIME, informational          */
	uint64_t pos_base;          /* prod/cons at creation (0; tests move it) */
	uint64_t seq_base;          /* next_seq at creation                    */

	/* --- line 1: written by the producer only --- */
	_Alignas(RING_LINE) _Atomic uint64_t prod;  /* next position to commit */
	_Atomic uint64_t next_seq;      /* block number of the next block      */
	_Atomic uint32_t pending_flags; /* ORed into the next commit            */
	_Atomic uint32_t prod_gen;      /* +1 per producer attach               */
	_Atomic uint32_t clean_gen;     /* prod_gen of a producer that left with
					   nothing lost (chirp_ring_mark_clean);
					   0 = none. Zero in rings made before it
					   existed: older libraries neither set
					   nor read it (no ABI change). */

	/* --- line 2: written by the consumer only --- */
	_Alignas(RING_LINE) _Atomic uint64_t cons;  /* next position to release */
	_Atomic uint64_t taken;         /* next position to peek (for resume)   */
	_Atomic uint64_t released;      /* counter (consumer statistics)        */
	_Atomic uint64_t skipped;       /* descriptors that failed validation   */
	_Atomic uint32_t cons_gen;      /* +1 per consumer attach               */

	/* --- line 3: consumer sleeps here, producer wakes --- */
	_Alignas(RING_LINE) _Atomic uint32_t cons_futex;
	_Atomic uint32_t cons_sleeping;

	/* --- line 4: producer sleeps here, consumer wakes --- */
	_Alignas(RING_LINE) _Atomic uint32_t prod_futex;
	_Atomic uint32_t prod_sleeping;

	_Alignas(RING_LINE) uint8_t reserved_tail[1];
};

/*
 * Counters are derived, not counted, so that a producer killed between any
 * two of its stores leaves them consistent:
 *   committed = prod - pos_base           (each position is one commit)
 *   overruns  = next_seq - seq_base - committed
 *                                          (each block number is either
 *                                           committed or dropped)
 * so hdr.next_seq is NOT always the block number of the next block: with
 * several reservations outstanding (chirp_ring_reserve_next) each already
 * holds its block number privately, and
 *   hdr.next_seq = seq_base + committed + dropped
 *                = (producer's next unassigned number) - (outstanding)
 * A drop is the single store next_seq + 1 (after setting pending_flags, so
 * a crash in between yields a spare DISCONTINUITY, never a missing one).
 * A commit stores prod, then next_seq + 1; a producer that attaches after a
 * crash between the two repairs next_seq from the last descriptor
 * (count_after = the value that commit was about to store).
 */

/*
 * One per slot, written by the producer before the release store of
 * hdr.prod, read by the consumer after its acquire load. Fields are
 * atomics accessed relaxed so that each is read exactly once (a hostile
 * or crashing peer cannot make us validate one value and use another).
 *
 * 128 bytes (two cache lines, a pair for the adjacent-line prefetcher):
 * the pointing needs 8 bytes, and 64 bytes hold only 4 beyond the fields
 * below. The second line is spare, zero, for later versions. What the
 * consumer reads per block still lies in the first line.
 */
struct ring_desc {
	_Atomic uint64_t pos;          /* ring position this was written for */
	_Atomic uint64_t seq;          /* block number                       */
	_Atomic uint64_t timestamp_ns;
	_Atomic uint64_t first_sample;
	_Atomic uint64_t len;          /* payload bytes, 1..payload_bytes    */
	_Atomic uint32_t flags;
	_Atomic uint32_t mode;         /* the CPI's radar mode (any value;
					  chirp_ring_commit_mode, ABI 2)     */
	_Atomic uint64_t count_after;  /* hdr.next_seq this commit stores after
					  hdr.prod (crash repair only)       */
	_Atomic uint64_t pointing;     /* the CPI's pointing (ABI 3): two
					  IEEE-754 float32 in degrees, azimuth
					  in the low half, elevation in the
					  high half; 0 = boresight           */
	_Atomic uint32_t missing;      /* samples missing, read only with
					  CHIRP_RING_INCOMPLETE              */
	uint32_t pad1;
	uint64_t spare[7];             /* 0                                  */
};

/* Validated, process-local copy of the immutable part of a header. */
struct ring_layout {
	struct chirp_ring_geometry g;
	uint64_t epoch;
	uint64_t total_bytes;
	uint64_t desc_offset;
	uint64_t data_offset;
	uint64_t slot_bytes;
	uint64_t payload_bytes;
	uint32_t slots;
	uint32_t align_bytes;
};

/* Internal to libchirpring: not exported from libchirpring.so (still
 * linkable from the static library, which the tests and fuzzer use). */
#pragma GCC visibility push(hidden)

/*
 * Compute the layout for a geometry (epoch left 0). align_bytes is
 * RING_PAGE or RING_HUGE_PAGE. Returns 0 or -EINVAL with a reason.
 */
int ring_layout_compute(const struct chirp_ring_geometry *g, uint32_t align_bytes,
			struct ring_layout *L, char *err, size_t errlen);

/*
 * Validate the header of a ring image of img_bytes bytes (a mapping of the
 * shm object, or fuzz input): magic, version, sizes, geometry, layout,
 * state and indices, reading each shared field once. On success fills *L.
 * Returns 0; -EAGAIN (being created); -ESTALE (retired); -EPROTO (ABI
 * version); -EBADMSG (not a ring, or corrupt); with a reason in err.
 */
int ring_validate_header(const void *img, size_t img_bytes, struct ring_layout *L,
			 char *err, size_t errlen);

/* Initialise an image of L->total_bytes as a new, READY, empty ring. */
void ring_format_image(void *img, const struct ring_layout *L);

/*
 * Open a ring handle on a memory image instead of shared memory (tests,
 * fuzzing). The image must stay valid until chirp_ring_detach(), which
 * does not free it. No locks, no futex wakes across processes needed.
 */
struct chirp_ring *ring_open_image(void *img, size_t img_bytes, enum chirp_ring_role role,
				   char *err, size_t errlen);

/*
 * Test only: move an EMPTY ring (prod == cons == taken) to position pos and
 * next block number seq, so tests can cross 2^32 and 2^64. Peers attached
 * before the call keep stale caches: attach them afterwards.
 */
int ring_debug_set_seq(struct chirp_ring *r, uint64_t pos, uint64_t seq);

/* The mapped header, for tests that corrupt it on purpose. */
struct ring_hdr *ring_debug_hdr(struct chirp_ring *r);

/*
 * Futex sleeps of this handle that lasted a full slice (100 ms) and then
 * found work: each is a lost wake-up unless the peer stalled that long.
 */
uint64_t ring_debug_late_wakes(const struct chirp_ring *r);

/* Futex sleeps of this handle so far. */
uint64_t ring_debug_sleeps(const struct chirp_ring *r);

#pragma GCC visibility pop

#endif /* CHIRP_RING_PRIVATE_H */
