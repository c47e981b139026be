/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirp/ring.h — lock-free single-producer/single-consumer ring of CPIs in
 * POSIX shared memory. Stable public ABI of libchirpring (pkg-config
 * chirpring): a digitizer driver links it to hand CPIs to chirpd, and
 * chirpd uses it to hand results to downstream consumers.
 *
 * (The concurrency contract, memory layout and crash rules are stated in
 * full at the top of src/ring/ring.c and in src/ring/ring_private.h, and
 * summarised here.)
 *
 *  - One producer process and one consumer process per ring, each with its
 *    own mapping; a second one of either role is refused (-EBUSY). No locks
 *    in the data path. Each handle is driven by one thread; stats,
 *    geometry, data, name and peer_attached may be called from any thread.
 *  - Indices are free-running u64 positions on separate 128-byte lines;
 *    position p uses slot p % slots (any count 2..65536; a count that is
 *    not a power of two stops at 2^64 - 2^32 positions, centuries away).
 *    The producer's release store of its index in chirp_ring_commit()
 *    publishes payload and descriptor (mode and pointing included); it
 *    pairs with the consumer's acquire load in chirp_ring_peek(). The
 *    consumer's release store in chirp_ring_release() hands the slot back;
 *    it pairs with the producer's acquire load in
 *    chirp_ring_reserve[_next](). Each side caches the other's index and
 *    reloads it only when the cache says full/empty.
 *  - Slots are fixed size, one CPI each, payloads aligned to >= 4096 bytes
 *    (2 MiB with huge pages), so a block never wraps and the data region
 *    can be registered for GPU DMA in place.
 *  - The producer never blocks: chirp_ring_reserve() on a full ring drops
 *    the block, counts it (overruns) and marks the next committed block
 *    CHIRP_RING_DISCONTINUITY. Block sequence numbers count dropped blocks
 *    too, so the consumer sees every gap.
 *  - The producer may hold up to slots reservations at once
 *    (chirp_ring_reserve_next) and commits them in reservation order.
 *  - Commit is the only publication: a producer killed mid-write never
 *    delivers a torn block.
 *  - Every field read from shared memory is validated; a corrupted header
 *    yields an error, never a crash.
 *
 * Functions return 0 or a negative errno and, where they take err/errlen,
 * a sentence a person can read.
 */
#ifndef CHIRP_RING_H
#define CHIRP_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The shared layout's version. 3: each block carries the CPI's pointing,
 * the direction the radar's scheduler steered the beams to
 * (chirp_ring_commit_cpi, chirp_ring_block.pointing_az_deg/_el_deg). 2 added
 * the CPI's radar mode (chirp_ring_commit_mode, chirp_ring_block.mode) and
 * slot counts that are not powers of two. A library attaching to a ring of
 * another version fails with EPROTO and a message naming both versions;
 * the soname follows it (libchirpring.so.3).
 */
#define CHIRP_RING_ABI_VERSION 3u

/* Slots a ring may have: chirp_ring_geometry.slots is 2..CHIRP_RING_MAX_SLOTS. */
#define CHIRP_RING_MAX_SLOTS 65536u
/* Bytes a payload is aligned to, at least (one page; 2 MiB with huge
 * pages). A buffer that stands in for a slot (a copy of a CPI, a scratch
 * CPI) is aligned the same, so it behaves like one for copies and DMA. */
#define CHIRP_RING_PAGE_BYTES 4096u

/* Sample formats of a ring's payload. */
enum chirp_ring_format {
	CHIRP_RING_CF32 = 0,   /* interleaved float32 I,Q                   */
	CHIRP_RING_SC16 = 1,   /* interleaved int16 I,Q (value / 32768)     */
	CHIRP_RING_RF32 = 2,   /* real float32 (magnitude, power_db, maps)  */
	CHIRP_RING_DET = 3,    /* detection lists (chirp/detect.h): geometry
				  1 x 1 x max_detections, a slot holds a
				  header and up to samples records        */
};

/* Block flags (chirp_ring_block.flags). A ring carries only these: other
 * bits given to chirp_ring_commit are dropped, and peek drops any other bit
 * found in shared memory (written by a peer), so a consumer sees no flag it
 * does not know. */
#define CHIRP_RING_DISCONTINUITY  (1u << 0) /* blocks were lost before this one */
#define CHIRP_RING_NONFINITE      (1u << 1) /* payload holds NaN/Inf (set by chirpd on output) */
#define CHIRP_RING_REDELIVERED    (1u << 2) /* set by peek: a previous consumer took this
					       block and died before releasing it; it may
					       have been (partly) processed already */
#define CHIRP_RING_UNKNOWN_MODE   (1u << 3) /* set by chirpd on output: the input
					       CPI's mode is not configured, so no
					       filter was applied; every float32
					       of the payload is NaN            */
#define CHIRP_RING_INCOMPLETE     (1u << 4) /* set by a producer (chirp-recv): samples
					       of this CPI never arrived; they read
					       zero, and chirp_ring_block.missing
					       counts them (0: not counted) */
#define CHIRP_RING_BAD_POINTING   (1u << 5) /* set by chirpd on output: the input
					       CPI's pointing is not finite, beyond
					       +-90 degrees, or puts a beam outside
					       the visible region, so it was not
					       processed (never with other weights);
					       every float32 of the payload is NaN */
/*
 * CHIRP_RING_INCOMPLETE and the missing-sample count need no new ABI
 * version: the count lives in a descriptor word every version-2 library
 * leaves alone (it wrote 0 there, or nothing), and is read only when the
 * flag is set. A version-2 library that predates the flag drops it at
 * commit and at peek, as it drops every bit it does not define: its
 * consumers see the block as a whole one (the holes read zero) and
 * blk->missing 0; its producers never set the flag, so a stale count in
 * that word is never read.
 */

enum chirp_ring_role { CHIRP_RING_PRODUCER = 1, CHIRP_RING_CONSUMER = 2 };

/* What the creator of a ring decides. */
struct chirp_ring_geometry {
	uint32_t channels;        /* >= 1                                     */
	uint32_t pulses;          /* >= 1                                     */
	uint32_t samples;         /* range samples per pulse, >= 1            */
	uint32_t format;          /* enum chirp_ring_format                   */
	uint32_t slots;           /* 2 .. CHIRP_RING_MAX_SLOTS (any count)     */
	double sample_rate_hz;    /* informational, > 0                        */
};

struct chirp_ring_opts {
	int hugepages;            /* back with hugetlbfs (/dev/hugepages)      */
	mode_t mode;              /* shm object mode; 0 = 0600 (0660 w/ group) */
	gid_t group;              /* chown to this group; 0 or (gid_t)-1 = no  */
	int allow_foreign_owner;  /* attach to a ring owned by another uid    */
};

/* One committed block as the consumer sees it. */
struct chirp_ring_block {
	uint64_t seq;             /* block number; counts dropped blocks too  */
	uint64_t timestamp_ns;    /* producer's CLOCK_REALTIME at commit, or its own */
	uint64_t first_sample;    /* index of the first sample of the block    */
	uint32_t flags;           /* CHIRP_RING_*                               */
	uint32_t slot;            /* slot index (for GPU bookkeeping)          */
	uint32_t mode;            /* the CPI's radar mode, as the producer
				     committed it (0 from chirp_ring_commit) */
	union {
		uint32_t missing;  /* CHIRP_RING_INCOMPLETE: complex samples of
				      the CPI (all channels) that never arrived,
				      saturated at 2^32 - 1; 0 otherwise     */
		uint32_t reserved; /* (its former name)                      */
	};
	float pointing_az_deg;    /* the CPI's pointing, degrees from boresight:
				     azimuth (> 0 towards the array's +x, to
				     the right looking out) and elevation (> 0
				     up), as the producer committed it (any
				     value, NaN included); 0, 0 = boresight,
				     and what chirp_ring_commit[_mode] writes */
	float pointing_el_deg;
	uint64_t len;             /* payload bytes                              */
	void *payload;            /* valid until chirp_ring_release()          */
};

/* Counters kept in the shared header. */
struct chirp_ring_stats {
	uint64_t committed;       /* blocks published by the producer          */
	uint64_t released;        /* blocks released by the consumer           */
	uint64_t overruns;        /* blocks the producer dropped (ring full)   */
	uint64_t skipped;         /* blocks a (re)attaching consumer skipped   */
	uint64_t epoch;           /* changes whenever the ring is re-created   */
};

struct chirp_ring;

/* Payload bytes of one CPI for a geometry (0 if invalid). */
uint64_t chirp_ring_cpi_bytes(const struct chirp_ring_geometry *g);

/*
 * Create the ring NAME ("/chirpd-in") with geometry g, taking role. If a
 * ring of that name exists with the same geometry and ABI it is re-attached
 * (state kept, so a restarted consumer resumes); with a different geometry
 * or version it is retired (producers attached to it see -ESTALE) and
 * re-created with a new epoch. opts may be NULL.
 */
struct chirp_ring *chirp_ring_create(const char *name,
				     const struct chirp_ring_geometry *g,
				     enum chirp_ring_role role,
				     const struct chirp_ring_opts *opts,
				     char *err, size_t errlen);

/*
 * Attach to an existing ring by name. The header is validated (magic,
 * version, sizes, geometry, indices) before anything else is touched.
 * Returns NULL with a reason (e.g. "no ring /chirpd-in: is chirpd
 * running?", "ring /chirpd-in: ABI version 2, this library speaks 3") and
 * errno set: ENOENT (no ring yet), EAGAIN (being created), EBUSY (that role already
 * has a live process), EPERM (owner/mode refused), EPROTO (ABI version),
 * ESTALE (retired), EBADMSG (not a ring, or corrupt). Looks in /dev/shm,
 * then on hugetlbfs. One producer and one consumer at a time; a crashed
 * holder frees its role at once (kernel-held lock).
 */
struct chirp_ring *chirp_ring_attach(const char *name, enum chirp_ring_role role,
				     const struct chirp_ring_opts *opts,
				     char *err, size_t errlen);

void chirp_ring_detach(struct chirp_ring *r);

/* Remove the name (the memory lives until every mapping is gone). */
int chirp_ring_unlink(const char *name);

/*
 * 1 if a live process holds role `role` of the ring called name (its
 * kernel-held lock; a crashed holder reads as 0 at once), 0 if not,
 * -ENOENT if there is no such ring, another negative errno on error.
 * Attaches nothing and changes nothing: a check before chirp_ring_unlink
 * (chirpd --remove-rings refuses while chirpd holds its rings).
 */
int chirp_ring_role_held(const char *name, enum chirp_ring_role role);

/*
 * The geometry and epoch of the existing ring called name (on hugetlbfs
 * when opts->hugepages), read from its validated header. Attaches nothing,
 * takes no role and changes nothing: a creator that sizes a ring itself
 * (chirpd's slots = auto) asks what is there before chirp_ring_create, to
 * keep a ring its peers are attached to. 0, -ENOENT (no such ring), or
 * another negative errno with a reason in err (-EAGAIN being created,
 * -EPROTO another ABI, -EBADMSG not a ring).
 */
int chirp_ring_probe(const char *name, const struct chirp_ring_opts *opts,
		     struct chirp_ring_geometry *g, uint64_t *epoch, char *err, size_t errlen);

/*
 * 1 if the other role is attached by a live process, 0 if not, negative
 * errno on error. (Kernel-held lock: a crashed peer reads as 0 at once.)
 */
int chirp_ring_peer_attached(const struct chirp_ring *r);

/* The name the ring was created/attached with. */
const char *chirp_ring_name(const struct chirp_ring *r);

/* Geometry, data region (for cudaHostRegister), stats, epoch. */
void chirp_ring_geometry(const struct chirp_ring *r, struct chirp_ring_geometry *g);
void chirp_ring_data(const struct chirp_ring *r, void **base, size_t *len);
uint64_t chirp_ring_slot_bytes(const struct chirp_ring *r);  /* payload stride */
int chirp_ring_stats(const struct chirp_ring *r, struct chirp_ring_stats *st);

/*
 * Re-validate the shared header and our view of the indices (after a
 * wait, or periodically, or after peek returned -EBADMSG: 0 then means one
 * descriptor was skipped, -EBADMSG that the ring itself is corrupt).
 * Returns 0, -ESTALE if the ring was retired/re-created/removed (re-attach
 * by name), or -EBADMSG if it is corrupt.
 */
int chirp_ring_check(struct chirp_ring *r, char *err, size_t errlen);

/* ---- producer -------------------------------------------------------- */

/*
 * Reserve the next slot for writing in place. Never blocks. Returns 0 and
 * sets *payload; -ENOBUFS if the ring is full (the block is counted as an
 * overrun and the next commit carries CHIRP_RING_DISCONTINUITY); -ESTALE if
 * the ring was re-created; -EOVERFLOW as chirp_ring_reserve_next. A
 * second reserve without commit returns the same slot. -EBUSY if more
 * than one reservation is outstanding (made with chirp_ring_reserve_next:
 * which one to return would be ambiguous).
 */
int chirp_ring_reserve(struct chirp_ring *r, void **payload);

/*
 * Reserve the slot AFTER those already reserved, so that several blocks
 * can be written at once (e.g. by GPU DMA, one per CPI in flight). Up to
 * slots reservations may be outstanding; chirp_ring_commit() publishes
 * them strictly in reservation order (always the oldest). Never blocks.
 * Returns 0 and sets *payload; -ENOBUFS if no slot is free beyond those
 * reserved: that block is dropped, counted as an overrun, consumes its
 * block number (the one after the outstanding reservations'), and the
 * next reservation after it carries CHIRP_RING_DISCONTINUITY when it is
 * committed (earlier outstanding ones do not); -ESTALE, -EBADMSG as
 * chirp_ring_reserve; -EOVERFLOW (nothing dropped) when a ring whose slot
 * count is not a power of two has used up its 2^64 - 2^32 positions
 * (re-create it). Block numbers are assigned here, in reservation
 * order. A reservation never committed (producer killed) is never
 * delivered; its block number is never seen, and the next producer's first
 * commit carries DISCONTINUITY.
 *
 * Mixing: with none outstanding, chirp_ring_reserve and
 * chirp_ring_reserve_next do the same; with one outstanding,
 * chirp_ring_reserve returns it and chirp_ring_reserve_next reserves
 * another; with more, chirp_ring_reserve says -EBUSY.
 */
int chirp_ring_reserve_next(struct chirp_ring *r, void **payload);

/* Reservations outstanding (producer; 0 for a consumer handle). */
uint32_t chirp_ring_reserved(const struct chirp_ring *r);

/*
 * Publish the oldest reserved slot (release store of the producer index).
 * timestamp_ns 0 = now (CLOCK_REALTIME). Wakes a sleeping consumer.
 * -EINVAL if nothing is reserved; -ESTALE (retired: every later call fails
 * too) or -EBADMSG (header corrupt) leave the reservation outstanding, and
 * it stays the one the next successful commit publishes.
 */
int chirp_ring_commit(struct chirp_ring *r, uint64_t timestamp_ns,
		      uint64_t first_sample, uint32_t flags);

/*
 * chirp_ring_commit with the CPI's radar mode: the waveform (matched
 * filter) the transmit scheduler used for this CPI, an id of chirpd's
 * [mode] configuration. The ring carries any value; chirpd flags CPIs of
 * a mode it does not know (CHIRP_RING_UNKNOWN_MODE on output).
 * chirp_ring_commit is chirp_ring_commit_mode with mode 0.
 */
int chirp_ring_commit_mode(struct chirp_ring *r, uint64_t timestamp_ns,
			   uint64_t first_sample, uint32_t flags, uint32_t mode);

/*
 * chirp_ring_commit_mode for a CPI of which `missing` complex samples (over
 * all channels) never arrived and were zeroed by the producer: missing > 0
 * adds CHIRP_RING_INCOMPLETE, and the consumer reads the count in
 * chirp_ring_block.missing. missing 0 commits as chirp_ring_commit_mode.
 */
int chirp_ring_commit_partial(struct chirp_ring *r, uint64_t timestamp_ns,
			      uint64_t first_sample, uint32_t flags, uint32_t mode,
			      uint32_t missing);

/*
 * Everything a producer says about one CPI when it publishes it
 * (chirp_ring_commit_cpi). Zero-initialise it and set what applies: all
 * zero is chirp_ring_commit(r, 0, 0, 0).
 */
struct chirp_ring_cpi {
	uint64_t timestamp_ns;    /* 0 = now (CLOCK_REALTIME)                  */
	uint64_t first_sample;    /* index of the CPI's first sample           */
	uint32_t flags;           /* CHIRP_RING_* a producer sets               */
	uint32_t mode;            /* radar mode, as chirp_ring_commit_mode      */
	float pointing_az_deg;    /* the pointing (chirp_ring_block), degrees:
				     the direction the whole set of beams is
				     steered to for this CPI, carried as the
				     float32 given (the ring checks nothing;
				     chirpd flags CHIRP_RING_BAD_POINTING)     */
	float pointing_el_deg;
	uint32_t missing;         /* as chirp_ring_commit_partial: > 0 adds
				     CHIRP_RING_INCOMPLETE                     */
	uint32_t reserved;        /* 0                                          */
};

/*
 * Publish the oldest reserved slot with everything cpi says: the one
 * commit call every other one is a case of (chirp_ring_commit_partial is
 * this with pointing 0, 0). Returns as chirp_ring_commit; -EINVAL also
 * for a NULL cpi.
 */
int chirp_ring_commit_cpi(struct chirp_ring *r, const struct chirp_ring_cpi *cpi);

/*
 * The newest committed block's descriptor (payload NULL): lets a restarted
 * producer (chirpd on its output ring) see what it published before it
 * died, e.g. to skip REDELIVERED input it had already processed. -ENOENT
 * if nothing was ever committed.
 */
int chirp_ring_last_commit(const struct chirp_ring *r, struct chirp_ring_block *blk);

/*
 * Continuity across a clean restart (producer, opt-in on both ends).
 *
 * By default the first block a new producer commits on a used ring carries
 * CHIRP_RING_DISCONTINUITY: a restarted digitizer driver has lost samples
 * before the ring, and the consumer must be told. A producer whose stream
 * does continue where its predecessor stopped (chirpd on its output ring:
 * it resumes its input ring at the block after the last one it released,
 * and the input's own flags carry any gap) opts in:
 *
 *  - chirp_ring_mark_clean(), as the last thing before chirp_ring_detach()
 *    when nothing it took on was lost: leaves a mark in the header naming
 *    this producer. -EBUSY (no mark) while a reservation is outstanding or
 *    a drop has not yet been carried by a committed block. A reservation
 *    made after the mark erases it. A producer that dies without marking
 *    leaves no mark.
 *  - chirp_ring_set_continuous(), after attach and before the first commit:
 *    that commit is not flagged if the previous producer, and no producer
 *    attached since, left the mark (block numbers then continue without a
 *    gap, so the consumer sees one stream). Returns 1 if that is so, 0 if
 *    the first commit will still be flagged (no mark, or a drop pending).
 *
 * Either side without opt-in (or a library older than these calls, which
 * leaves the header word 0) keeps the conservative flag. Returns -EPERM on
 * a consumer handle; mark_clean also -ESTALE/-EBADMSG as chirp_ring_check.
 */
int chirp_ring_mark_clean(struct chirp_ring *r);
int chirp_ring_set_continuous(struct chirp_ring *r);

/* ---- consumer -------------------------------------------------------- */

/*
 * Take the next committed block not yet taken, leaving it in the ring
 * (zero copy). Several may be held at once; they are released in order.
 * Returns 0, -EAGAIN if none is committed, -ESTALE/-EBADMSG as
 * chirp_ring_check, -EBADMSG also for a descriptor that fails validation
 * (the block is then skipped and counted). blk->flags has DISCONTINUITY
 * whenever blk->seq is not the previous block's + 1, and REDELIVERED for
 * blocks a dead consumer had taken but not released.
 */
int chirp_ring_peek(struct chirp_ring *r, struct chirp_ring_block *blk);

/* Release the oldest held block back to the producer. */
int chirp_ring_release(struct chirp_ring *r);

/* Number of committed blocks not yet taken by peek. */
uint64_t chirp_ring_available(const struct chirp_ring *r);

/*
 * Wait until a block is committed (consumer) or a slot is free beyond those
 * reserved (producer; also at once when chirp_ring_reserve holds one),
 * spinning briefly then sleeping on a shared futex, at most timeout_ns
 * (0: one poll; < 0: no limit, each sleep still re-checks every 100 ms).
 * Returns 0 when ready (also when the ring was retired: the next call
 * says -ESTALE), -ETIMEDOUT, -EINTR. The peer issues FUTEX_WAKE only
 * while we sleep.
 */
int chirp_ring_wait(struct chirp_ring *r, int64_t timeout_ns);

/*
 * Let chirp_ring_wait on this handle keep polling, before it sleeps on the
 * futex, until spin_ns after the handle last took a block (peek) or a slot
 * (reserve) (from the wait's start if it never did); 0..CHIRP_RING_MAX_SPIN_NS, default 0: only the built-in
 * ~10-50 us spin. A sleeping thread is woken by the peer's FUTEX_WAKE, and
 * on a virtual machine an idle vCPU can take 1-2 ms to run again
 * (doc/latency.md); a consumer that must see each block within a fraction
 * of that sets a spin a little longer than the gap between blocks: it then
 * polls while blocks keep coming (one busy core) and sleeps once they have
 * stopped for spin_ns, however it slices its waits. Never past the wait's
 * own timeout; a timeout of 0 stays one poll. Per handle, not shared with
 * the peer. Returns 0 or -EINVAL (NULL, out of range).
 */
#define CHIRP_RING_MAX_SPIN_NS 1000000000LL   /* 1 s */
int chirp_ring_set_spin(struct chirp_ring *r, int64_t spin_ns);
int64_t chirp_ring_get_spin(const struct chirp_ring *r);

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_RING_H */
