/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ring.c — libchirpring: lock-free SPSC ring of CPIs in POSIX shared memory.
 *
 * CONCURRENCY CONTRACT
 *
 *  One producer and one consumer, each possibly in its own process, each
 *  with its own mapping. Neither takes a lock. Exactly one handle of each
 *  role may be attached at a time (enforced with an OFD lock on byte 0
 *  (producer) / byte 1 (consumer) of the shm object; the kernel drops it
 *  when the holder dies, so a crashed peer never blocks a restart).
 *
 *  hdr.prod   free-running u64, written only by the producer. Its release
 *             store in chirp_ring_commit() publishes the slot payload and
 *             the descriptor; it pairs with the acquire load in
 *             chirp_ring_peek()/chirp_ring_available(). Commit is the ONLY
 *             publication: a producer killed before it leaves a reserved
 *             slot that nobody ever reads and the next producer overwrites.
 *  hdr.cons   free-running u64, written only by the consumer. Its release
 *             store in chirp_ring_release() hands the slot back (the
 *             consumer's reads of the payload happen-before the producer's
 *             next writes to it); it pairs with the acquire load in
 *             chirp_ring_reserve()/chirp_ring_reserve_next().
 *  Invariant  0 <= prod - cons <= slots (mod 2^64). The slot of position p
 *             is p % slots (slot_of: a mask for a power-of-two count); its
 *             payload and descriptor may be written only while
 *             p - cons < slots, read only while cons <= p < prod.
 *  Wrap       slots is any count 2..65536. p % slots runs on across the
 *             2^64 wrap only for a power-of-two count, so the positions of
 *             any other count stay at or below RING_POS_LIMIT (2^64 - 2^32,
 *             centuries away; ring_private.h): the producer refuses to
 *             reserve beyond it and validation refuses such a header.
 *  Descriptor the producer writes every field of a position's descriptor
 *             (seq, timestamp, first sample, length, flags, mode) before
 *             its release store of hdr.prod; the consumer reads them after
 *             its acquire load, each exactly once.
 *  Reserved   the producer may hold nres reservations (0 <= nres <= slots,
 *             producer-private, never in shared memory): positions prod ..
 *             prod + nres - 1, each with p - cons < slots when it was
 *             handed out. chirp_ring_commit publishes only position prod
 *             (the oldest), so commits are in reservation order and a
 *             reservation is visible to nobody until committed. Block
 *             numbers are assigned at reservation (a drop between two
 *             reservations takes the number between theirs and flags the
 *             later one); hdr.next_seq excludes outstanding reservations so
 *             the derived counters never count them (ring_private.h).
 *  Caches     each side keeps a private copy of the other's index and
 *             reloads it only when the copy says full (producer) / empty
 *             (consumer), so the shared lines bounce once per batch.
 *  Sleeping   a waiter (chirp_ring_wait) reads the futex word, stores
 *             "sleeping" (seq_cst), fences, re-checks the index, and only
 *             then FUTEX_WAITs on the word. The other side stores its index
 *             (release), fences (seq_cst), and issues FUTEX_WAKE only if it
 *             sees "sleeping" — after incrementing the word so a waiter
 *             between its check and its sleep does not sleep. The fences
 *             make this a Dekker pair: either the waiter sees the new index
 *             or the waker sees "sleeping". Futexes are shared (not
 *             _PRIVATE) because the two sides are different processes.
 *  Counters   next_seq/pending_flags (producer) and skipped/taken
 *             and released (consumer) are single-writer atomics read
 *             relaxed by anyone. committed/overruns are derived from them
 *             (see ring_private.h), so a SIGKILL between two stores can
 *             never make a lost block uncounted.
 *
 *  Untrusted  every field read from the shared mapping is validated before
 *             it is used for addressing. Immutable geometry is validated
 *             once at attach and kept in a private copy; the data path
 *             addresses memory only through that copy and the position's
 *             slot (always < slots), so a peer that scribbles on the header
 *             can produce -EBADMSG, never an out-of-bounds access.
 *
 *  Not handled: a peer that ftruncate()s the object smaller makes our next
 *  access SIGBUS (POSIX offers no way to forbid it short of sealing, which
 *  shm_open objects do not support). Both sides must trust the owner uid;
 *  that is what the 0600/0660 mode and the owner check are for.
 */
#include "chirp/detect.h"
#include "ring_private.h"
#include "timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct ring_hdr) <= RING_HDR_BYTES, "header fits page 0");
_Static_assert(sizeof(struct ring_desc) == RING_DESC_BYTES, "descriptor is 128 bytes");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free in shm");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free in shm");

#define KNOWN_FLAGS (CHIRP_RING_DISCONTINUITY | CHIRP_RING_NONFINITE | CHIRP_RING_REDELIVERED | \
		     CHIRP_RING_UNKNOWN_MODE | CHIRP_RING_INCOMPLETE | CHIRP_RING_BAD_POINTING)
/*
 * Flags a descriptor may carry: those a producer commits. REDELIVERED is
 * the consumer's own finding (peek), never a producer's. Flags enter the
 * ring at commit (from the caller) and leave it at peek (from shared memory
 * another process writes): both mask with DESC_FLAGS, so a caller's stray
 * bits never reach the ring and bits this library does not define, written
 * by a newer or hostile peer, never reach the consumer's pipeline, where
 * they could mean anything.
 */
#define DESC_FLAGS (KNOWN_FLAGS & ~CHIRP_RING_REDELIVERED)

/* Spin this many polls before sleeping on the futex (about 10-50 us). */
#define WAIT_SPIN 2000
/* Longest single futex sleep, so a retired ring or a lost wake is noticed. */
#define WAIT_SLICE_NS 100000000LL

struct chirp_ring {
	char name[NAME_MAX + 1];
	char path[PATH_MAX];         /* hugetlbfs file, "" for POSIX shm      */
	int fd;                      /* -1 for a memory image                 */
	enum chirp_ring_role role;
	uint8_t *base;
	size_t map_bytes;
	int own_map;                 /* munmap at detach                      */
	struct ring_hdr *h;
	struct ring_desc *desc;
	uint8_t *data;
	struct ring_layout L;        /* validated immutable copy              */
	uint64_t mask;               /* slots - 1 when slots is a power of two */
	int pow2;                    /* slots is a power of two: slot = p & mask */

	/* producer: its own state is kept here and only mirrored into the
	 * header, so a peer scribbling on the header cannot steer it */
	uint64_t prod;               /* position of the next commit           */
	uint64_t next_seq;           /* block number of the next block        */
	uint32_t pending;            /* flags for the next commit             */
	uint64_t cons_cache;
	uint32_t nres;               /* outstanding reservations, at positions
					prod .. prod + nres - 1 (producer-private) */
	int res_single;              /* the one held came from chirp_ring_reserve */
	uint64_t *res_seq;           /* [slots] block number of each reservation,
					indexed by slot_of(position)           */
	uint32_t *res_flags;         /* [slots] flags it carries (a drop before it) */
	int first_commit;            /* flag DISCONTINUITY on a resumed ring  */
	uint32_t gen;                /* our prod_gen                          */
	int prev_clean;              /* our predecessor left a clean mark     */
	int marked;                  /* we left a clean mark (mark_clean)     */

	/* consumer */
	uint64_t cons;               /* oldest held (next to release)         */
	uint64_t taken;              /* next to peek                          */
	uint64_t prod_cache;
	uint64_t redeliver_end;      /* positions < this were taken by a dead consumer */
	int redelivering;            /* still before redeliver_end            */
	uint64_t last_seq;
	int have_last;
	uint8_t *bad;                /* bitmap: held position failed validation */

	uint64_t late_wakes;         /* full futex slices that then found work  */
	uint64_t sleeps;             /* futex sleeps (tests)                     */
	int64_t spin_ns;             /* chirp_ring_set_spin: poll in
					chirp_ring_wait until this long after
					last_ok_ns before sleeping (0: only the
					WAIT_SPIN polls)                         */
	int64_t last_ok_ns;          /* with spin_ns: when this handle last took
					a block (peek) or a slot (reserve); 0:
					never                                    */
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Deadlines and spin windows are signed (a past deadline is negative
 * time left); CLOCK_MONOTONIC in ns fits int64_t for 292 years of uptime. */
static inline int64_t now_mono_ns(void)
{
	return (int64_t)mono_ns();
}

/*
 * Full fence for the sleeping handshake. ThreadSanitizer does not model
 * standalone fences (GCC warns under -fsanitize=thread), so its builds use
 * a seq_cst read-modify-write instead, which is a full barrier in hardware
 * on x86 (lock prefix).
 */
static inline void full_fence(void)
{
#if defined(__SANITIZE_THREAD__)
	static _Atomic uint32_t tsan_fence;

	atomic_fetch_add_explicit(&tsan_fence, 0, memory_order_seq_cst);
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

static int futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = timeout_ns / 1000000000LL,
		.tv_nsec = timeout_ns % 1000000000LL,
	};
	long rc = syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, &ts, NULL, 0);

	return rc == 0 ? 0 : -errno;
}

static void futex_wake(_Atomic uint32_t *addr)
{
	atomic_fetch_add_explicit(addr, 1, memory_order_relaxed);
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * The slot of position p: p % slots, a mask when slots is a power of two
 * (a division costs tens of cycles; the branch is the same every call).
 */
static inline uint64_t slot_of(const struct chirp_ring *r, uint64_t p)
{
	return __builtin_expect(r->pow2, 1) ? p & r->mask : p % r->L.slots;
}

static int is_pow2(uint32_t n)
{
	return n && !(n & (n - 1));
}

/* ---- geometry and layout -------------------------------------------------- */

static uint64_t sample_bytes(uint32_t format)
{
	switch (format) {
	case CHIRP_RING_CF32: return 8;
	case CHIRP_RING_SC16: return 4;
	case CHIRP_RING_RF32: return 4;
	case CHIRP_RING_DET: return sizeof(struct chirp_det_record);
	default: return 0;
	}
}

static int geometry_check(const struct chirp_ring_geometry *g, uint64_t *cpi, char *err,
			  size_t errlen)
{
	uint64_t n, sb = sample_bytes(g->format);

	if (g->channels < 1 || g->pulses < 1 || g->samples < 1) {
		seterr(err, errlen, "geometry %ux%ux%u: channels, pulses and samples must be >= 1",
		       g->channels, g->pulses, g->samples);
		return -EINVAL;
	}
	if (sb == 0) {
		seterr(err, errlen, "sample format %u unknown (0 cf32, 1 sc16, 2 rf32, 3 det)",
		       g->format);
		return -EINVAL;
	}
	/* A detection list is one header and `samples` records. */
	if (g->format == CHIRP_RING_DET && (g->channels != 1 || g->pulses != 1)) {
		seterr(err, errlen, "geometry %ux%ux%u: a det ring is 1x1xmax_detections",
		       g->channels, g->pulses, g->samples);
		return -EINVAL;
	}
	if (g->slots < 2 || g->slots > CHIRP_RING_MAX_SLOTS) {
		seterr(err, errlen, "slots %u: must be 2..%u", g->slots, CHIRP_RING_MAX_SLOTS);
		return -EINVAL;
	}
	/* !(x > 0) also rejects NaN */
	if (!(g->sample_rate_hz > 0) || g->sample_rate_hz > 1e15) {
		seterr(err, errlen, "sample_rate_hz %g: must be > 0 and finite", g->sample_rate_hz);
		return -EINVAL;
	}
	if (__builtin_mul_overflow((uint64_t)g->channels, (uint64_t)g->pulses, &n) ||
	    __builtin_mul_overflow(n, (uint64_t)g->samples, &n) ||
	    __builtin_mul_overflow(n, sb, &n) || n > RING_MAX_TOTAL / 2) {
		seterr(err, errlen, "geometry %ux%ux%u: CPI larger than %llu bytes", g->channels,
		       g->pulses, g->samples, (unsigned long long)(RING_MAX_TOTAL / 2));
		return -EINVAL;
	}
	if (g->format == CHIRP_RING_DET)
		n += sizeof(struct chirp_det_header);
	*cpi = n;
	return 0;
}

uint64_t chirp_ring_cpi_bytes(const struct chirp_ring_geometry *g)
{
	uint64_t n;

	if (!g || geometry_check(g, &n, NULL, 0) < 0)
		return 0;
	return n;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

int ring_layout_compute(const struct chirp_ring_geometry *g, uint32_t align_bytes,
			struct ring_layout *L, char *err, size_t errlen)
{
	uint64_t cpi, slot, data, total;
	int rc;

	rc = geometry_check(g, &cpi, err, errlen);
	if (rc < 0)
		return rc;
	if (align_bytes != RING_PAGE && align_bytes != RING_HUGE_PAGE) {
		seterr(err, errlen, "alignment %u: must be %u or 2 MiB", align_bytes,
		       CHIRP_RING_PAGE_BYTES);
		return -EINVAL;
	}
	slot = align_up(cpi, align_bytes);
	data = align_up(RING_HDR_BYTES + (uint64_t)g->slots * RING_DESC_BYTES, align_bytes);
	if (__builtin_mul_overflow(slot, (uint64_t)g->slots, &total) ||
	    __builtin_add_overflow(total, data, &total) || total > RING_MAX_TOTAL) {
		seterr(err, errlen, "ring of %u slots of %llu bytes exceeds %llu bytes", g->slots,
		       (unsigned long long)slot, (unsigned long long)RING_MAX_TOTAL);
		return -EINVAL;
	}
	memset(L, 0, sizeof(*L));
	L->g = *g;
	L->total_bytes = total;
	L->desc_offset = RING_HDR_BYTES;
	L->data_offset = data;
	L->slot_bytes = slot;
	L->payload_bytes = cpi;
	L->slots = g->slots;
	L->align_bytes = align_bytes;
	return 0;
}

/*
 * Mark every descriptor as written one lap before position base, i.e. not
 * committed: a committed position p always has desc.pos == p, a slot not
 * yet written in this lap has desc.pos == p - slots.
 */
static void mark_unwritten(void *img, const struct ring_layout *L, uint64_t base)
{
	struct ring_desc *d = (struct ring_desc *)((uint8_t *)img + L->desc_offset);
	uint64_t n = L->slots, b = is_pow2(L->slots) ? base & (n - 1) : base % n;

	for (uint64_t i = 0; i < n; i++) {
		/* the first position >= base that uses slot i (base % slots == b) */
		uint64_t pos = base + (i + n - b) % n;

		atomic_store_explicit(&d[i].pos, pos - L->slots, memory_order_relaxed);
	}
}

void ring_format_image(void *img, const struct ring_layout *L)
{
	struct ring_hdr *h = img;

	/* Whole header + descriptor region to zero: positions 0, counters 0. */
	memset(img, 0, L->data_offset);
	h->abi_version = CHIRP_RING_ABI_VERSION;
	h->header_bytes = RING_HDR_BYTES;
	h->epoch = L->epoch;
	h->total_bytes = L->total_bytes;
	h->desc_offset = L->desc_offset;
	h->data_offset = L->data_offset;
	h->slot_bytes = L->slot_bytes;
	h->payload_bytes = L->payload_bytes;
	h->slots = L->slots;
	h->desc_bytes = RING_DESC_BYTES;
	h->channels = L->g.channels;
	h->pulses = L->g.pulses;
	h->samples = L->g.samples;
	h->format = L->g.format;
	h->align_bytes = L->align_bytes;
	h->sample_rate_hz = L->g.sample_rate_hz;
	h->created_ns = real_ns();
	mark_unwritten(img, L, 0);
	h->magic = RING_MAGIC;
	/* Publishes everything above to an attacher's acquire load of state. */
	atomic_store_explicit(&h->state, RING_STATE_READY, memory_order_release);
}

int ring_validate_header(const void *img, size_t img_bytes, struct ring_layout *L,
			 char *err, size_t errlen)
{
	/* The image is shared with another process: cast away const only to
	 * read atomics; nothing is written. */
	struct ring_hdr *h = (struct ring_hdr *)img;
	struct chirp_ring_geometry g;
	struct ring_layout want;
	uint64_t magic, prod, cons, taken;
	uint32_t state, version, align;
	int rc;

	/* length first */
	if (!img || img_bytes < RING_HDR_BYTES) {
		seterr(err, errlen, "object is %zu bytes, smaller than a ring header (%u)",
		       img_bytes, RING_HDR_BYTES);
		return -EBADMSG;
	}
	/* then state (acquire: pairs with ring_format_image's release) */
	state = atomic_load_explicit(&h->state, memory_order_acquire);
	magic = h->magic;
	if (state == RING_STATE_INIT && magic == 0) {
		seterr(err, errlen, "ring is being created (or its creator died mid-way)");
		return -EAGAIN;
	}
	if (magic != RING_MAGIC) {
		seterr(err, errlen, "not a chirp ring (magic %#llx)", (unsigned long long)magic);
		return -EBADMSG;
	}
	/* then version */
	version = h->abi_version;
	if (version != CHIRP_RING_ABI_VERSION) {
		seterr(err, errlen, "ABI version %u, this library speaks %u", version,
		       CHIRP_RING_ABI_VERSION);
		return -EPROTO;
	}
	if (state == RING_STATE_RETIRED) {
		seterr(err, errlen, "ring was retired (re-created with another geometry): re-attach");
		return -ESTALE;
	}
	if (state != RING_STATE_READY) {
		seterr(err, errlen, "ring header state %#x is invalid", state);
		return -EBADMSG;
	}
	if (h->header_bytes != RING_HDR_BYTES || h->desc_bytes != RING_DESC_BYTES) {
		seterr(err, errlen, "ring header/descriptor size %u/%u, expected %u/%u",
		       h->header_bytes, h->desc_bytes, RING_HDR_BYTES, RING_DESC_BYTES);
		return -EBADMSG;
	}
	/* then geometry: recompute the layout and insist on equality */
	g.channels = h->channels;
	g.pulses = h->pulses;
	g.samples = h->samples;
	g.format = h->format;
	g.slots = h->slots;
	g.sample_rate_hz = h->sample_rate_hz;
	align = h->align_bytes;
	rc = ring_layout_compute(&g, align, &want, err, errlen);
	if (rc < 0)
		return -EBADMSG;
	if (h->total_bytes != want.total_bytes || h->desc_offset != want.desc_offset ||
	    h->data_offset != want.data_offset || h->slot_bytes != want.slot_bytes ||
	    h->payload_bytes != want.payload_bytes) {
		seterr(err, errlen, "ring layout fields disagree with its geometry");
		return -EBADMSG;
	}
	want.epoch = h->epoch;
	if (want.epoch == 0) {
		seterr(err, errlen, "ring epoch is 0");
		return -EBADMSG;
	}
	if (want.total_bytes > img_bytes) {
		seterr(err, errlen, "ring needs %llu bytes but the object has %zu",
		       (unsigned long long)want.total_bytes, img_bytes);
		return -EBADMSG;
	}
	/* then indices */
	prod = atomic_load_explicit(&h->prod, memory_order_acquire);
	cons = atomic_load_explicit(&h->cons, memory_order_acquire);
	taken = atomic_load_explicit(&h->taken, memory_order_relaxed);
	if (prod - cons > want.slots) {
		seterr(err, errlen, "ring indices corrupt: producer %llu, consumer %llu, %u slots",
		       (unsigned long long)prod, (unsigned long long)cons, want.slots);
		return -EBADMSG;
	}
	if (!is_pow2(want.slots) && (prod > RING_POS_LIMIT || cons > RING_POS_LIMIT)) {
		seterr(err, errlen, "ring indices corrupt: producer %llu, consumer %llu within "
		       "2^32 of the 2^64 wrap, which a ring of %u slots (not a power of two) "
		       "never reaches", (unsigned long long)prod, (unsigned long long)cons,
		       want.slots);
		return -EBADMSG;
	}
	(void)taken; /* may be stale by design; clamped by the consumer at attach */
	*L = want;
	return 0;
}

/* Field by field: struct padding is not copied by assignment. */
static int layout_equal(const struct ring_layout *a, const struct ring_layout *b)
{
	return a->g.channels == b->g.channels && a->g.pulses == b->g.pulses &&
	       a->g.samples == b->g.samples && a->g.format == b->g.format &&
	       a->g.slots == b->g.slots &&
	       memcmp(&a->g.sample_rate_hz, &b->g.sample_rate_hz, sizeof(double)) == 0 &&
	       a->epoch == b->epoch && a->total_bytes == b->total_bytes &&
	       a->desc_offset == b->desc_offset && a->data_offset == b->data_offset &&
	       a->slot_bytes == b->slot_bytes && a->payload_bytes == b->payload_bytes &&
	       a->slots == b->slots && a->align_bytes == b->align_bytes;
}

/* ---- handles ------------------------------------------------------------ */

static int lock_role(int fd, enum chirp_ring_role role, int try_only)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = role == CHIRP_RING_PRODUCER ? 0 : 1,
		.l_len = 1,
	};

	if (try_only) {
		if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
			return -errno;
		return fl.l_type == F_UNLCK ? 0 : 1;
	}
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
		return -errno;
	return 0;
}

/* Set up a handle over a validated mapping. */
static int handle_init(struct chirp_ring *r, const struct ring_layout *L)
{
	struct ring_hdr *h = (struct ring_hdr *)r->base;
	uint64_t prod, cons, taken;
	uint32_t gen;

	r->h = h;
	r->L = *L;
	r->mask = L->slots - 1;
	r->pow2 = is_pow2(L->slots);
	r->desc = (struct ring_desc *)(r->base + L->desc_offset);
	r->data = r->base + L->data_offset;
	prod = atomic_load_explicit(&h->prod, memory_order_acquire);
	cons = atomic_load_explicit(&h->cons, memory_order_acquire);
	if (r->role == CHIRP_RING_PRODUCER) {
		r->prod = prod;
		r->cons_cache = cons;
		r->nres = 0;
		r->res_single = 0;
		r->res_seq = calloc(L->slots, sizeof(*r->res_seq));
		r->res_flags = calloc(L->slots, sizeof(*r->res_flags));
		if (!r->res_seq || !r->res_flags)
			return -ENOMEM;
		r->first_commit = prod != h->pos_base;
		if (r->first_commit) {
			/* A producer killed between storing prod and next_seq left
			 * next_seq one behind: repair it. The descriptor records the
			 * value its commit was about to store (count_after; 0 from
			 * producers built before it existed, which assigned block
			 * numbers at commit, so seq + 1 is that value for them). */
			struct ring_desc *d = &r->desc[slot_of(r, prod - 1)];
			uint64_t seq = atomic_load_explicit(&d->seq, memory_order_relaxed);
			uint64_t after = atomic_load_explicit(&d->count_after, memory_order_relaxed);
			uint64_t next = atomic_load_explicit(&h->next_seq, memory_order_relaxed);

			if (atomic_load_explicit(&d->pos, memory_order_relaxed) == prod - 1) {
				if (after == next + 1)
					atomic_store_explicit(&h->next_seq, after, memory_order_relaxed);
				else if (seq - next < (1ull << 63))
					atomic_store_explicit(&h->next_seq, seq + 1,
							      memory_order_relaxed);
			}
		}
		r->next_seq = atomic_load_explicit(&h->next_seq, memory_order_relaxed);
		r->pending = atomic_load_explicit(&h->pending_flags, memory_order_relaxed) &
			     DESC_FLAGS;
		/* prod_gen before our increment is our predecessor's number; its
		 * clean mark counts only if it is that number (a producer that
		 * attached since and died without a mark breaks the chain). */
		gen = atomic_fetch_add_explicit(&h->prod_gen, 1, memory_order_relaxed);
		r->gen = gen + 1;
		r->prev_clean = gen != 0 &&
				atomic_load_explicit(&h->clean_gen, memory_order_acquire) == gen;
		r->marked = 0;
	} else {
		r->bad = calloc(L->slots / 8 + 1, 1);
		if (!r->bad)
			return -ENOMEM;
		taken = atomic_load_explicit(&h->taken, memory_order_relaxed);
		/* Blocks a dead consumer took but did not release are delivered
		 * again, flagged REDELIVERED; a bogus taken is ignored. */
		if (taken - cons > prod - cons)
			taken = cons;
		r->cons = cons;
		r->taken = cons;
		r->prod_cache = prod;
		r->redeliver_end = taken;
		r->redelivering = taken != cons;
		r->have_last = 0;
		/* h->taken stays at the dead consumer's mark until we pass it, so a
		 * second crash during redelivery still flags those blocks. */
		atomic_store_explicit(&h->taken, taken, memory_order_relaxed);
		atomic_store_explicit(&h->cons_sleeping, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&h->cons_gen, 1, memory_order_relaxed);
	}
	return 0;
}

static struct chirp_ring *handle_alloc(const char *name, enum chirp_ring_role role, char *err,
				       size_t errlen)
{
	struct chirp_ring *r;

	if (role != CHIRP_RING_PRODUCER && role != CHIRP_RING_CONSUMER) {
		seterr(err, errlen, "role %d: must be producer or consumer", (int)role);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	r->fd = -1;
	r->role = role;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "(image)");
	return r;
}

static void handle_free(struct chirp_ring *r)
{
	if (!r)
		return;
	if (r->own_map && r->base)
		munmap(r->base, r->map_bytes);
	if (r->fd >= 0)
		close(r->fd);   /* drops the OFD role lock */
	free(r->bad);
	free(r->res_seq);
	free(r->res_flags);
	free(r);
}

struct chirp_ring *ring_open_image(void *img, size_t img_bytes, enum chirp_ring_role role,
				   char *err, size_t errlen)
{
	struct chirp_ring *r;
	struct ring_layout L;

	if (ring_validate_header(img, img_bytes, &L, err, errlen) < 0)
		return NULL;
	r = handle_alloc(NULL, role, err, errlen);
	if (!r)
		return NULL;
	r->base = img;
	r->map_bytes = img_bytes;
	if (handle_init(r, &L) < 0) {
		seterr(err, errlen, "out of memory");
		handle_free(r);
		return NULL;
	}
	return r;
}

static int name_check(const char *name, char *err, size_t errlen)
{
	size_t n;

	if (!name || name[0] != '/') {
		seterr(err, errlen, "ring name \"%s\": must start with '/' (e.g. /chirpd-in)",
		       name ? name : "");
		return -EINVAL;
	}
	n = strlen(name);
	if (n < 2 || n > 200 || strchr(name + 1, '/')) {
		seterr(err, errlen, "ring name \"%s\": one '/' then 1..199 characters, no other '/'",
		       name);
		return -EINVAL;
	}
	return 0;
}

/*
 * Where rings with huge pages live: the hugetlbfs mount, /dev/hugepages
 * (where systemd mounts it) unless the environment variable
 * CHIRP_HUGETLBFS names another. An environment variable, not a field of
 * struct chirp_ring_opts, because the directory belongs to the host, not to
 * a ring, and chirp_ring_attach must find a huge-page ring without being
 * told it is one: every program that attaches (a digitizer driver, the
 * tools, the Python binding, most passing no opts at all) then agrees on
 * the directory with no configuration of its own, and the opts struct,
 * which callers allocate, keeps its size. chirpd(8) and doc/ring.md list
 * it as a deployment setting.
 */
static const char *hugetlbfs_dir(void)
{
	const char *d = getenv("CHIRP_HUGETLBFS");

	return d && *d ? d : "/dev/hugepages";
}

/*
 * A ring created with hugepages must get huge pages: refuse a directory
 * that is not a hugetlbfs mount (a mistyped CHIRP_HUGETLBFS would
 * otherwise give a ring of ordinary pages, silently, on whatever file
 * system it names).
 */
static int hugetlbfs_check(const char *name, char *err, size_t errlen)
{
	const char *dir = hugetlbfs_dir();
	struct statfs sf;

	if (statfs(dir, &sf) < 0) {
		int rc = -errno;

		seterr(err, errlen, "create ring %s on hugetlbfs %s%s: %s", name, dir,
		       getenv("CHIRP_HUGETLBFS") ? " (CHIRP_HUGETLBFS)" : "", strerror(-rc));
		return rc;
	}
	if (sf.f_type != HUGETLBFS_MAGIC) {
		seterr(err, errlen, "create ring %s with huge pages: %s%s is not a hugetlbfs mount",
		       name, dir, getenv("CHIRP_HUGETLBFS") ? " (CHIRP_HUGETLBFS)" : "");
		return -ENOTSUP;
	}
	return 0;
}

/* Open the object; with O_CREAT it is created exclusively. */
static int obj_open(struct chirp_ring *r, int hugepages, int flags, mode_t mode)
{
	int fd;

	if (hugepages) {
		snprintf(r->path, sizeof(r->path), "%s%s", hugetlbfs_dir(), r->name);
		fd = open(r->path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
	} else {
		r->path[0] = '\0';
		fd = shm_open(r->name, flags, mode);  /* O_CLOEXEC implied */
	}
	return fd < 0 ? -errno : fd;
}

static int obj_unlink(const struct chirp_ring *r)
{
	int rc = r->path[0] ? unlink(r->path) : shm_unlink(r->name);

	return rc < 0 ? -errno : 0;
}

static int owner_check(struct chirp_ring *r, const struct stat *st,
		       const struct chirp_ring_opts *opts, char *err, size_t errlen)
{
	if (opts && opts->allow_foreign_owner)
		return 0;
	if (st->st_uid != geteuid()) {
		seterr(err, errlen,
		       "ring %s is owned by uid %u, not by us (uid %u): refusing "
		       "(allow_foreign_owner to accept)", r->name, (unsigned)st->st_uid,
		       (unsigned)geteuid());
		return -EPERM;
	}
	if (st->st_mode & S_IWOTH) {
		seterr(err, errlen, "ring %s is world-writable (mode %04o): refusing", r->name,
		       (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/*
 * Bytes to map to read a header: one page, or one huge page on hugetlbfs
 * (whose mappings are in huge-page units).
 */
static size_t probe_bytes(const struct chirp_ring *r)
{
	return r->path[0] ? RING_HUGE_PAGE : RING_HDR_BYTES;
}

/* fstat the open object into *st and check its owner (owner_check). */
static int stat_owned(struct chirp_ring *r, struct stat *st, const struct chirp_ring_opts *opts,
		      char *err, size_t errlen)
{
	if (fstat(r->fd, st) < 0) {
		int rc = -errno;

		seterr(err, errlen, "fstat %s: %s", r->name, strerror(-rc));
		return rc;
	}
	return owner_check(r, st, opts, err, errlen);
}

/* Map the validated object and set the handle up. fd already open. */
static int map_and_init(struct chirp_ring *r, const struct chirp_ring_opts *opts, char *err,
			size_t errlen)
{
	struct ring_layout L, L2;
	struct stat st;
	char why[200];
	void *p;
	int rc;

	rc = stat_owned(r, &st, opts, err, errlen);
	if (rc < 0)
		return rc;
	if ((uint64_t)st.st_size < probe_bytes(r)) {
		seterr(err, errlen, "ring %s is %lld bytes, shorter than a ring header: being "
		       "created, or a stale object (remove it if nothing is creating it)",
		       r->name, (long long)st.st_size);
		return -EAGAIN;
	}
	/* Header page alone first: validate before trusting any size in it. */
	p = mmap(NULL, probe_bytes(r), PROT_READ, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		seterr(err, errlen, "mmap %s header: %s", r->name, strerror(-rc));
		return rc;
	}
	rc = ring_validate_header(p, (size_t)st.st_size, &L, why, sizeof(why));
	munmap(p, probe_bytes(r));
	if (rc < 0) {
		seterr(err, errlen, "ring %s: %s", r->name, why);   /* name the object */
		return rc;
	}
	p = mmap(NULL, L.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		seterr(err, errlen, "mmap %s (%llu bytes): %s", r->name,
		       (unsigned long long)L.total_bytes, strerror(-rc));
		return rc;
	}
	r->base = p;
	r->map_bytes = L.total_bytes;
	r->own_map = 1;
	/* The header may have changed between the two mappings. */
	rc = ring_validate_header(p, L.total_bytes, &L2, why, sizeof(why));
	if (rc < 0) {
		seterr(err, errlen, "ring %s: %s", r->name, why);
		return rc;
	}
	if (!layout_equal(&L, &L2)) {
		seterr(err, errlen, "ring %s changed while attaching: retry", r->name);
		return -EAGAIN;
	}
	rc = lock_role(r->fd, r->role, 0);
	if (rc < 0) {
		if (rc == -EAGAIN || rc == -EACCES)
			seterr(err, errlen, "ring %s already has a live %s", r->name,
			       r->role == CHIRP_RING_PRODUCER ? "producer" : "consumer");
		else
			seterr(err, errlen, "lock %s: %s", r->name, strerror(-rc));
		return rc == -EAGAIN || rc == -EACCES ? -EBUSY : rc;
	}
	rc = handle_init(r, &L);
	if (rc < 0)
		seterr(err, errlen, "out of memory");
	return rc;
}

struct chirp_ring *chirp_ring_attach(const char *name, enum chirp_ring_role role,
				     const struct chirp_ring_opts *opts, char *err,
				     size_t errlen)
{
	struct chirp_ring *r;
	int rc, huge = opts && opts->hugepages;

	if (name_check(name, err, errlen) < 0) {
		errno = EINVAL;
		return NULL;
	}
	r = handle_alloc(name, role, err, errlen);
	if (!r) {
		errno = role == CHIRP_RING_PRODUCER || role == CHIRP_RING_CONSUMER ? ENOMEM : EINVAL;
		return NULL;
	}
	rc = obj_open(r, huge, O_RDWR, 0);
	if (rc == -ENOENT && !huge)   /* a huge-page ring lives elsewhere */
		rc = obj_open(r, 1, O_RDWR, 0);
	if (rc < 0) {
		if (rc == -ENOENT)
			seterr(err, errlen, "no ring %s: is its creator (chirpd) running?", name);
		else
			seterr(err, errlen, "open ring %s: %s", name, strerror(-rc));
		goto fail;
	}
	r->fd = rc;
	rc = map_and_init(r, opts, err, errlen);
	if (rc < 0)
		goto fail;
	return r;
fail:
	handle_free(r);
	errno = -rc;
	return NULL;
}

static void retire(struct ring_hdr *h)
{
	atomic_store_explicit(&h->state, RING_STATE_RETIRED, memory_order_release);
	futex_wake(&h->cons_futex);
	futex_wake(&h->prod_futex);
}

static uint64_t new_epoch(uint64_t old)
{
	uint64_t e = 0;

	while (e == 0 || e == old) {
		if (getrandom(&e, sizeof(e), 0) != sizeof(e))
			e = real_ns() ^ ((uint64_t)getpid() << 32) ^ old;
	}
	return e;
}

/*
 * An object of our name exists. Returns 1 if it was re-attached (r set up),
 * 0 if it was retired and unlinked (create anew), <0 on a refusal.
 */
static int take_over_existing(struct chirp_ring *r, const struct ring_layout *want,
			      const struct chirp_ring_opts *opts, uint64_t *old_epoch,
			      char *err, size_t errlen)
{
	struct ring_layout have;
	struct stat st;
	char why[160] = "";
	int rc, incomplete = 1;   /* no READY/retired header of ours yet */
	void *p;

	rc = obj_open(r, r->path[0] != '\0', O_RDWR, 0);
	if (rc < 0)
		return rc == -ENOENT ? 0 : rc;   /* vanished: create */
	r->fd = rc;
	rc = stat_owned(r, &st, opts, err, errlen);
	if (rc < 0)
		return rc;
	if ((uint64_t)st.st_size >= probe_bytes(r)) {
		p = mmap(NULL, probe_bytes(r), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (p == MAP_FAILED) {
			rc = -errno;
			seterr(err, errlen, "mmap %s header: %s", r->name, strerror(-rc));
			return rc;
		}
		rc = ring_validate_header(p, (size_t)st.st_size, &have, why, sizeof(why));
		if (rc == -EBADMSG && ((struct ring_hdr *)p)->magic != RING_MAGIC) {
			munmap(p, probe_bytes(r));
			seterr(err, errlen, "%s exists and %s: not touching it (remove it if it is "
			       "stale)", r->name, why);
			return -EEXIST;
		}
		if (rc == 0 && have.g.channels == want->g.channels &&
		    have.g.pulses == want->g.pulses && have.g.samples == want->g.samples &&
		    have.g.format == want->g.format && have.g.slots == want->g.slots &&
		    have.g.sample_rate_hz == want->g.sample_rate_hz &&
		    have.align_bytes == want->align_bytes) {
			munmap(p, probe_bytes(r));
			/* Same geometry and ABI: keep state, resume. (The sample rate
			 * is part of the match: consumers label data with it.) */
			rc = map_and_init(r, opts, err, errlen);
			return rc < 0 ? rc : 1;
		}
		/* Never retire a ring from under a live holder of our own role
		 * (a second chirpd): that one must stop first. */
		if (lock_role(r->fd, r->role, 1) == 1) {
			munmap(p, probe_bytes(r));
			seterr(err, errlen, "ring %s (other geometry) already has a live %s",
			       r->name, r->role == CHIRP_RING_PRODUCER ? "producer" : "consumer");
			return -EBUSY;
		}
		incomplete = rc == -EAGAIN;
		*old_epoch = ((struct ring_hdr *)p)->epoch;
		/* Retire it: attached peers see -ESTALE at their next call. The
		 * header is ours (magic matched or creation was abandoned). */
		if (((struct ring_hdr *)p)->magic == RING_MAGIC)
			retire(p);
		munmap(p, probe_bytes(r));
	}
	/* A half-made object with a live holder is another creator at work. */
	if (incomplete && (lock_role(r->fd, CHIRP_RING_PRODUCER, 1) == 1 ||
			   lock_role(r->fd, CHIRP_RING_CONSUMER, 1) == 1)) {
		seterr(err, errlen, "ring %s is being created by another process", r->name);
		return -EBUSY;
	}
	close(r->fd);
	r->fd = -1;
	rc = obj_unlink(r);
	if (rc < 0 && rc != -ENOENT) {
		seterr(err, errlen, "unlink stale ring %s: %s", r->name, strerror(-rc));
		return rc;
	}
	return 0;
}

/* The arguments chirp_ring_create checks before it touches any object; fills
 * *L for the page size asked. < 0 with the reason in err. */
static int create_args_check(const char *name, const struct chirp_ring_geometry *g, int huge,
			     struct ring_layout *L, char *err, size_t errlen)
{
	int rc;

	if (name_check(name, err, errlen) < 0)
		return -EINVAL;
	if (!g) {
		seterr(err, errlen, "no geometry");
		return -EINVAL;
	}
	if (ring_layout_compute(g, huge ? RING_HUGE_PAGE : RING_PAGE, L, err, errlen) < 0)
		return -EINVAL;
	if (huge && (rc = hugetlbfs_check(name, err, errlen)) < 0)
		return rc;
	return 0;
}

/* Create the object exclusively, taking over (or retiring) one that is there.
 * A retired object is unlinked and created again, up to 8 times, so two
 * creators racing cannot loop forever. 1: re-attached to a live ring of the
 * same layout (state kept); 0: created, r->fd open on the new empty object;
 * < 0 with the reason in err. */
static int create_exclusive(struct chirp_ring *r, const char *name, const struct ring_layout *L,
			    const struct chirp_ring_opts *opts, int huge, mode_t mode,
			    uint64_t *old_epoch, char *err, size_t errlen)
{
	int rc, tries, fd = -1;

	for (tries = 0; tries < 8; tries++) {
		rc = obj_open(r, huge, O_RDWR | O_CREAT | O_EXCL, mode);
		if (rc >= 0) {
			fd = rc;
			break;
		}
		if (rc != -EEXIST) {
			seterr(err, errlen, "create ring %s%s: %s", huge ? "on hugetlbfs " : "",
			       huge ? r->path : name, strerror(-rc));
			return rc;
		}
		rc = take_over_existing(r, L, opts, old_epoch, err, errlen);
		if (rc == 1)
			return 1;            /* re-attached, state kept */
		if (rc < 0)
			return rc;
		/* retired and unlinked (or vanished): create again */
	}
	if (fd < 0) {
		seterr(err, errlen, "create ring %s: lost a race with another creator 8 times",
		       name);
		return -EEXIST;
	}
	r->fd = fd;
	return 0;
}

/* Take our role on the new object and give it its exact mode and group. */
static int create_claim(struct chirp_ring *r, const char *name, enum chirp_ring_role role,
			mode_t mode, int grouped, const struct chirp_ring_opts *opts,
			char *err, size_t errlen)
{
	int rc;

	/* Take our role at once, so a second creator racing us sees a live
	 * holder instead of a half-made object it may remove. */
	rc = lock_role(r->fd, role, 0);
	if (rc < 0) {
		seterr(err, errlen, "lock %s: %s", name, strerror(-rc));
		return rc;
	}
	/* The mode given to open() was filtered by the umask: set it exactly. */
	if (fchmod(r->fd, mode) < 0) {
		rc = -errno;
		seterr(err, errlen, "fchmod %s %04o: %s", name, (unsigned)mode, strerror(-rc));
		return rc;
	}
	if (grouped && fchown(r->fd, (uid_t)-1, opts->group) < 0) {
		rc = -errno;
		seterr(err, errlen, "chown %s to group %u: %s", name, (unsigned)opts->group,
		       strerror(-rc));
		return rc;
	}
	return 0;
}

/* Size the new object to the layout and reserve its memory. */
static int create_reserve(struct chirp_ring *r, const char *name, const struct ring_layout *L,
			  char *err, size_t errlen)
{
	int rc;

	if (ftruncate(r->fd, (off_t)L->total_bytes) < 0) {
		rc = -errno;
		seterr(err, errlen, "size ring %s to %llu bytes: %s", name,
		       (unsigned long long)L->total_bytes, strerror(-rc));
		return rc;
	}
	/* Reserve the memory now, so a full /dev/shm is an error here and not a
	 * SIGBUS in the data path. */
	rc = posix_fallocate(r->fd, 0, (off_t)L->total_bytes);
	if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
		seterr(err, errlen, "reserve %llu bytes for ring %s: %s",
		       (unsigned long long)L->total_bytes, name, strerror(rc));
		return -rc;
	}
	return 0;
}

/* Map the new object, write its header image under a fresh epoch and set up
 * the handle over it. */
static int create_map(struct chirp_ring *r, const char *name, struct ring_layout *L,
		      uint64_t old_epoch, char *err, size_t errlen)
{
	int rc;
	void *p;

	p = mmap(NULL, L->total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		seterr(err, errlen, "mmap ring %s (%llu bytes): %s", name,
		       (unsigned long long)L->total_bytes, strerror(-rc));
		return rc;
	}
	r->base = p;
	r->map_bytes = L->total_bytes;
	r->own_map = 1;
	L->epoch = new_epoch(old_epoch);
	ring_format_image(p, L);
	if (handle_init(r, L) < 0) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

struct chirp_ring *chirp_ring_create(const char *name, const struct chirp_ring_geometry *g,
				     enum chirp_ring_role role,
				     const struct chirp_ring_opts *opts, char *err,
				     size_t errlen)
{
	struct chirp_ring *r = NULL;
	struct ring_layout L;
	uint64_t old_epoch = 0;
	int grouped = opts && opts->group != (gid_t)-1 && opts->group != 0;
	mode_t mode = opts && opts->mode ? (opts->mode & 0777) : grouped ? 0660 : 0600;
	int huge = opts && opts->hugepages;
	int rc;

	rc = create_args_check(name, g, huge, &L, err, errlen);
	if (rc < 0)
		goto fail;
	r = handle_alloc(name, role, err, errlen);
	if (!r) {
		rc = role == CHIRP_RING_PRODUCER || role == CHIRP_RING_CONSUMER ? -ENOMEM : -EINVAL;
		goto fail;
	}
	rc = create_exclusive(r, name, &L, opts, huge, mode, &old_epoch, err, errlen);
	if (rc == 1)
		return r;
	if (rc < 0)
		goto fail;
	rc = create_claim(r, name, role, mode, grouped, opts, err, errlen);
	if (rc < 0)
		goto fail_unlink;
	rc = create_reserve(r, name, &L, err, errlen);
	if (rc < 0)
		goto fail_unlink;
	rc = create_map(r, name, &L, old_epoch, err, errlen);
	if (rc < 0)
		goto fail_unlink;
	return r;

fail_unlink:
	obj_unlink(r);
fail:
	handle_free(r);
	errno = -rc;
	return NULL;
}

void chirp_ring_detach(struct chirp_ring *r)
{
	handle_free(r);
}

int chirp_ring_unlink(const char *name)
{
	struct chirp_ring *r;
	struct stat st;
	void *p;
	int rc = -ENOENT, fd, huge;

	if (name_check(name, NULL, 0) < 0)
		return -EINVAL;
	r = handle_alloc(name, CHIRP_RING_CONSUMER, NULL, 0);
	if (!r)
		return -ENOMEM;
	for (huge = 0; huge <= 1; huge++) {
		fd = obj_open(r, huge, O_RDWR, 0);
		if (fd < 0)
			continue;
		/* Tell attached peers (-ESTALE) before the name goes away. */
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_size >= probe_bytes(r)) {
			p = mmap(NULL, probe_bytes(r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (p != MAP_FAILED) {
				if (((struct ring_hdr *)p)->magic == RING_MAGIC)
					retire(p);
				munmap(p, probe_bytes(r));
			}
		}
		close(fd);
		if (obj_unlink(r) == 0)
			rc = 0;
	}
	handle_free(r);
	return rc;
}

int chirp_ring_role_held(const char *name, enum chirp_ring_role role)
{
	struct chirp_ring *r;
	int rc = -ENOENT, fd, huge;

	if (name_check(name, NULL, 0) < 0 ||
	    (role != CHIRP_RING_PRODUCER && role != CHIRP_RING_CONSUMER))
		return -EINVAL;
	r = handle_alloc(name, role, NULL, 0);
	if (!r)
		return -ENOMEM;
	for (huge = 0; huge <= 1 && rc != 1; huge++) {
		int held;

		fd = obj_open(r, huge, O_RDONLY, 0);
		if (fd < 0) {
			if (fd != -ENOENT && rc == -ENOENT)
				rc = fd;
			continue;
		}
		held = lock_role(fd, role, 1);
		close(fd);
		if (held >= 0 || rc == -ENOENT)
			rc = held;
	}
	handle_free(r);
	return rc;
}

/* Read the header of the object r names (open on r->fd) into *L. */
static int probe_header(struct chirp_ring *r, struct ring_layout *L, char *err, size_t errlen)
{
	struct stat st;
	char why[160];
	void *p;
	int rc;

	if (fstat(r->fd, &st) < 0) {
		rc = -errno;
		seterr(err, errlen, "fstat %s: %s", r->name, strerror(-rc));
		return rc;
	}
	if ((uint64_t)st.st_size < probe_bytes(r)) {
		seterr(err, errlen, "ring %s is shorter than a ring header", r->name);
		return -EAGAIN;
	}
	p = mmap(NULL, probe_bytes(r), PROT_READ, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		seterr(err, errlen, "mmap %s header: %s", r->name, strerror(-rc));
		return rc;
	}
	rc = ring_validate_header(p, (size_t)st.st_size, L, why, sizeof(why));
	munmap(p, probe_bytes(r));
	if (rc < 0)
		seterr(err, errlen, "ring %s: %s", r->name, why);
	return rc;
}

int chirp_ring_probe(const char *name, const struct chirp_ring_opts *opts,
		     struct chirp_ring_geometry *g, uint64_t *epoch, char *err, size_t errlen)
{
	struct chirp_ring *r;
	struct ring_layout L;
	int rc;

	if (name_check(name, err, errlen) < 0)
		return -EINVAL;
	r = handle_alloc(name, CHIRP_RING_CONSUMER, err, errlen);
	if (!r)
		return -ENOMEM;
	rc = obj_open(r, opts && opts->hugepages, O_RDONLY, 0);
	if (rc < 0) {
		if (rc == -ENOENT)
			seterr(err, errlen, "no ring %s", name);
		else
			seterr(err, errlen, "open ring %s: %s", name, strerror(-rc));
		goto out;
	}
	r->fd = rc;
	rc = probe_header(r, &L, err, errlen);
	if (rc == 0) {
		*g = L.g;
		*epoch = L.epoch;
	}
out:
	handle_free(r);
	return rc;
}

/* ---- accessors -------------------------------------------------------- */

void chirp_ring_geometry(const struct chirp_ring *r, struct chirp_ring_geometry *g)
{
	*g = r->L.g;
}

void chirp_ring_data(const struct chirp_ring *r, void **base, size_t *len)
{
	*base = r->data;
	*len = (size_t)(r->L.slot_bytes * r->L.slots);
}

uint64_t chirp_ring_slot_bytes(const struct chirp_ring *r)
{
	return r->L.slot_bytes;
}

const char *chirp_ring_name(const struct chirp_ring *r)
{
	return r->name;
}

int chirp_ring_stats(const struct chirp_ring *r, struct chirp_ring_stats *st)
{
	struct ring_hdr *h = r->h;

	uint64_t n1, n2, prod, skipped, ov = 0;
	int i;

	/* prod and next_seq move one after the other (commit: prod, then
	 * next_seq): read until a consistent pair; a producer that died between
	 * the two stores leaves overruns at most 1 high until it is replaced. */
	for (i = 0; i < 64; i++) {
		n1 = atomic_load_explicit(&h->next_seq, memory_order_acquire);
		prod = atomic_load_explicit(&h->prod, memory_order_acquire);
		n2 = atomic_load_explicit(&h->next_seq, memory_order_acquire);
		ov = n2 - h->seq_base - (prod - h->pos_base);
		if (n1 == n2 && ov < (1ull << 63))
			break;
	}
	if (ov >= (1ull << 63))
		ov = 0;
	skipped = atomic_load_explicit(&h->skipped, memory_order_relaxed);
	st->committed = prod - h->pos_base;
	st->overruns = ov;
	st->skipped = skipped;
	st->released = atomic_load_explicit(&h->released, memory_order_relaxed);
	st->epoch = r->L.epoch;
	return 0;
}

int chirp_ring_peer_attached(const struct chirp_ring *r)
{
	if (r->fd < 0)
		return -ENOTSUP;
	return lock_role(r->fd, r->role == CHIRP_RING_PRODUCER ? CHIRP_RING_CONSUMER
							       : CHIRP_RING_PRODUCER, 1);
}

static int state_check(struct chirp_ring *r)
{
	uint32_t s = atomic_load_explicit(&r->h->state, memory_order_relaxed);

	if (__builtin_expect(s == RING_STATE_READY, 1))
		return 0;
	return s == RING_STATE_RETIRED ? -ESTALE : -EBADMSG;
}

/* A producer call on a live ring: -EPERM for a consumer handle, else state_check. */
static int producer_ready(struct chirp_ring *r)
{
	return r->role == CHIRP_RING_PRODUCER ? state_check(r) : -EPERM;
}

int chirp_ring_check(struct chirp_ring *r, char *err, size_t errlen)
{
	struct ring_layout L;
	struct stat a, b;
	int rc;

	rc = ring_validate_header(r->base, r->map_bytes, &L, err, errlen);
	if (rc < 0)
		return rc == -ESTALE ? -ESTALE : -EBADMSG;
	if (!layout_equal(&L, &r->L)) {
		if (L.epoch != r->L.epoch) {
			seterr(err, errlen, "ring %s epoch changed: re-attach", r->name);
			return -ESTALE;
		}
		seterr(err, errlen, "ring %s header changed under us (corrupt)", r->name);
		return -EBADMSG;
	}
	/* Our side's view of the indices (what peek/reserve check). */
	if (r->role == CHIRP_RING_CONSUMER) {
		uint64_t p = atomic_load_explicit(&r->h->prod, memory_order_acquire);
		struct ring_desc *d = &r->desc[slot_of(r, p - 1)];

		if (p - r->cons > r->L.slots || p - r->cons < r->taken - r->cons) {
			seterr(err, errlen, "ring %s producer index %llu is outside what we hold "
			       "(%llu..%llu): corrupt", r->name, (unsigned long long)p,
			       (unsigned long long)r->cons, (unsigned long long)r->taken);
			return -EBADMSG;
		}
		if (p != r->taken &&
		    atomic_load_explicit(&d->pos, memory_order_relaxed) == p - 1 - r->L.slots) {
			seterr(err, errlen, "ring %s producer index %llu is ahead of the data it "
			       "published: corrupt", r->name, (unsigned long long)p);
			return -EBADMSG;
		}
	} else {
		uint64_t c = atomic_load_explicit(&r->h->cons, memory_order_acquire);

		if (r->prod - c > r->L.slots) {
			seterr(err, errlen, "ring %s consumer index %llu is ahead of ours (%llu): "
			       "corrupt", r->name, (unsigned long long)c,
			       (unsigned long long)r->prod);
			return -EBADMSG;
		}
	}
	if (r->fd >= 0) {
		/* The name may now denote another object (or none). */
		char path[PATH_MAX];

		if (r->path[0])
			snprintf(path, sizeof(path), "%s", r->path);
		else
			snprintf(path, sizeof(path), "/dev/shm%s", r->name);
		if (fstat(r->fd, &a) == 0 &&
		    (stat(path, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
			seterr(err, errlen, "ring %s was removed or replaced: re-attach", r->name);
			return -ESTALE;
		}
	}
	return 0;
}

/* ---- producer ------------------------------------------------------------ */

/*
 * Reserve position prod + nres (the slot after those already reserved).
 * Block numbers are handed out here, in reservation order, so a block
 * dropped while earlier ones are still reserved gets the number after
 * theirs and the gap (DISCONTINUITY) lands on the next reservation after
 * it, not on an earlier block that commits later.
 */
static int reserve_at_end(struct chirp_ring *r, void **payload)
{
	uint64_t p = r->prod + r->nres, c, used, s;

	if (r->nres >= r->L.slots) {
		/* every slot is ours already: this block cannot have one */
		goto drop;
	}
	if (__builtin_expect(p >= RING_POS_LIMIT, 0) && !r->pow2)
		return -EOVERFLOW;   /* slot_of would jump at the wrap (ring_private.h) */
	if (p - r->cons_cache >= r->L.slots) {
		/* Our own index is ours alone: put it back if scribbled on. */
		if (atomic_load_explicit(&r->h->prod, memory_order_relaxed) != r->prod)
			atomic_store_explicit(&r->h->prod, r->prod, memory_order_release);
		/* acquire: the consumer is done with the slot before we write it */
		c = atomic_load_explicit(&r->h->cons, memory_order_acquire);
		used = r->prod - c;
		if (used > r->L.slots)
			return -EBADMSG;   /* consumer index ahead of us: corrupt */
		r->cons_cache = c;
		if (p - c >= r->L.slots)
			goto drop;
	}
	if (r->marked) {
		/* more data after the mark: it no longer says "nothing lost" */
		atomic_store_explicit(&r->h->clean_gen, 0, memory_order_relaxed);
		r->marked = 0;
	}
	s = slot_of(r, p);
	r->res_seq[s] = r->next_seq++;
	r->res_flags[s] = r->pending;
	r->pending = 0;      /* hdr.pending_flags stays set until it is committed */
	r->nres++;
	*payload = r->data + s * r->L.slot_bytes;
	if (r->spin_ns)
		r->last_ok_ns = now_mono_ns();
	return 0;
drop:
	/* Full: drop this block. It still takes a block number, so the
	 * consumer sees the gap; the next reservation is flagged. */
	r->pending |= CHIRP_RING_DISCONTINUITY;
	atomic_store_explicit(&r->h->pending_flags, CHIRP_RING_DISCONTINUITY,
			      memory_order_relaxed);
	r->next_seq++;
	/* the one store that counts the drop (see ring_private.h) */
	atomic_store_explicit(&r->h->next_seq, r->next_seq - r->nres, memory_order_release);
	return -ENOBUFS;
}

int chirp_ring_reserve(struct chirp_ring *r, void **payload)
{
	int rc;

	rc = producer_ready(r);
	if (rc < 0)
		return rc;
	if (r->nres > 1)
		return -EBUSY;   /* several held via reserve_next: ambiguous */
	if (r->nres == 1) {
		*payload = r->data + slot_of(r, r->prod) * r->L.slot_bytes;
		return 0;
	}
	rc = reserve_at_end(r, payload);
	if (rc == 0)
		r->res_single = 1;
	return rc;
}

int chirp_ring_reserve_next(struct chirp_ring *r, void **payload)
{
	int rc;

	rc = producer_ready(r);
	if (rc < 0)
		return rc;
	rc = reserve_at_end(r, payload);
	if (rc == 0)
		r->res_single = 0;
	return rc;
}

uint32_t chirp_ring_reserved(const struct chirp_ring *r)
{
	return r->role == CHIRP_RING_PRODUCER ? r->nres : 0;
}

int chirp_ring_commit(struct chirp_ring *r, uint64_t timestamp_ns, uint64_t first_sample,
		      uint32_t flags)
{
	return chirp_ring_commit_mode(r, timestamp_ns, first_sample, flags, 0);
}

int chirp_ring_commit_mode(struct chirp_ring *r, uint64_t timestamp_ns,
			   uint64_t first_sample, uint32_t flags, uint32_t mode)
{
	return chirp_ring_commit_partial(r, timestamp_ns, first_sample, flags, mode, 0);
}

int chirp_ring_commit_partial(struct chirp_ring *r, uint64_t timestamp_ns,
			      uint64_t first_sample, uint32_t flags, uint32_t mode,
			      uint32_t missing)
{
	struct chirp_ring_cpi cpi = {
		.timestamp_ns = timestamp_ns, .first_sample = first_sample,
		.flags = flags, .mode = mode, .missing = missing,
	};

	return chirp_ring_commit_cpi(r, &cpi);
}

/* The descriptor word of a pointing: the two float32's bits, azimuth low. */
static uint64_t pointing_pack(float az_deg, float el_deg)
{
	uint32_t az, el;

	memcpy(&az, &az_deg, sizeof(az));
	memcpy(&el, &el_deg, sizeof(el));
	return (uint64_t)az | (uint64_t)el << 32;
}

static void pointing_unpack(uint64_t w, struct chirp_ring_block *blk)
{
	uint32_t az = (uint32_t)w, el = (uint32_t)(w >> 32);

	memcpy(&blk->pointing_az_deg, &az, sizeof(az));
	memcpy(&blk->pointing_el_deg, &el, sizeof(el));
}

int chirp_ring_commit_cpi(struct chirp_ring *r, const struct chirp_ring_cpi *cpi)
{
	struct ring_hdr *h = r->h;
	struct ring_desc *d;
	uint64_t p = r->prod, s, seq, after;
	uint64_t timestamp_ns, first_sample;
	uint32_t pending, left = 0, flags, mode, missing;
	int rc;

	if (r->role != CHIRP_RING_PRODUCER)
		return -EPERM;
	if (r->nres == 0 || !cpi)
		return -EINVAL;
	timestamp_ns = cpi->timestamp_ns;
	first_sample = cpi->first_sample;
	flags = cpi->flags;
	mode = cpi->mode;
	missing = cpi->missing;
	rc = state_check(r);
	if (rc < 0)
		return rc;
	if (timestamp_ns == 0)
		timestamp_ns = real_ns();
	s = slot_of(r, p);
	seq = r->res_seq[s];
	pending = r->res_flags[s];
	if (r->first_commit)
		pending |= CHIRP_RING_DISCONTINUITY;  /* new producer on a used ring */
	if (missing)
		flags |= CHIRP_RING_INCOMPLETE;
	flags = (flags | pending) & DESC_FLAGS;
	/* hdr.next_seq = next unassigned - outstanding, one fewer outstanding */
	after = r->next_seq - (r->nres - 1);

	d = &r->desc[s];
	atomic_store_explicit(&d->pos, p, memory_order_relaxed);
	atomic_store_explicit(&d->seq, seq, memory_order_relaxed);
	atomic_store_explicit(&d->timestamp_ns, timestamp_ns, memory_order_relaxed);
	atomic_store_explicit(&d->first_sample, first_sample, memory_order_relaxed);
	atomic_store_explicit(&d->len, r->L.payload_bytes, memory_order_relaxed);
	atomic_store_explicit(&d->flags, flags, memory_order_relaxed);
	atomic_store_explicit(&d->mode, mode, memory_order_relaxed);
	atomic_store_explicit(&d->missing, (flags & CHIRP_RING_INCOMPLETE) ? missing : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&d->pointing, pointing_pack(cpi->pointing_az_deg,
							  cpi->pointing_el_deg),
			      memory_order_relaxed);
	atomic_store_explicit(&d->count_after, after, memory_order_relaxed);
	/* The publication: pairs with the consumer's acquire load of prod. */
	atomic_store_explicit(&h->prod, p + 1, memory_order_release);
	atomic_store_explicit(&h->next_seq, after, memory_order_release);
	r->prod = p + 1;
	r->nres--;
	r->first_commit = 0;
	/* A drop not yet carried by a committed block keeps pending_flags set
	 * (a successor producer then flags its first commit). */
	if (pending) {
		for (uint32_t i = 0; i < r->nres; i++)
			left |= r->res_flags[slot_of(r, r->prod + i)];
		left |= r->pending;
		if (!left)
			atomic_store_explicit(&h->pending_flags, 0, memory_order_relaxed);
	}
	/* Dekker with chirp_ring_wait(): store prod; fence; load sleeping. */
	full_fence();
	if (atomic_load_explicit(&h->cons_sleeping, memory_order_relaxed))
		futex_wake(&h->cons_futex);
	return 0;
}

int chirp_ring_set_continuous(struct chirp_ring *r)
{
	if (r->role != CHIRP_RING_PRODUCER)
		return -EPERM;
	/* Our first commit continues the predecessor's stream: no flag for the
	 * change of producer (a drop still pending flags it all the same). */
	if (r->first_commit && r->prev_clean)
		r->first_commit = 0;
	return !r->first_commit && !r->pending ? 1 : 0;
}

int chirp_ring_mark_clean(struct chirp_ring *r)
{
	int rc;

	rc = producer_ready(r);
	if (rc < 0)
		return rc;
	if (r->nres || r->pending ||
	    atomic_load_explicit(&r->h->pending_flags, memory_order_relaxed))
		return -EBUSY;          /* something reserved, or a drop not yet carried */
	if (r->gen == 0)
		return -EOVERFLOW;      /* prod_gen wrapped to 0: 0 means "no mark" */
	/* release: our last commit's stores are visible before the mark */
	atomic_store_explicit(&r->h->clean_gen, r->gen, memory_order_release);
	r->marked = 1;
	return 0;
}

int chirp_ring_last_commit(const struct chirp_ring *r, struct chirp_ring_block *blk)
{
	struct ring_desc *d;
	uint64_t p;

	if (r->role != CHIRP_RING_PRODUCER)
		return -EPERM;
	if (r->prod == r->h->pos_base)
		return -ENOENT;
	p = r->prod - 1;
	d = &r->desc[slot_of(r, p)];
	if (atomic_load_explicit(&d->pos, memory_order_relaxed) != p)
		return -EBADMSG;
	memset(blk, 0, sizeof(*blk));
	blk->seq = atomic_load_explicit(&d->seq, memory_order_relaxed);
	blk->timestamp_ns = atomic_load_explicit(&d->timestamp_ns, memory_order_relaxed);
	blk->first_sample = atomic_load_explicit(&d->first_sample, memory_order_relaxed);
	blk->flags = atomic_load_explicit(&d->flags, memory_order_relaxed) & DESC_FLAGS;
	blk->mode = atomic_load_explicit(&d->mode, memory_order_relaxed);
	if (blk->flags & CHIRP_RING_INCOMPLETE)
		blk->missing = atomic_load_explicit(&d->missing, memory_order_relaxed);
	pointing_unpack(atomic_load_explicit(&d->pointing, memory_order_relaxed), blk);
	blk->slot = (uint32_t)slot_of(r, p);
	blk->len = r->L.payload_bytes;
	blk->payload = NULL;   /* may already be in the consumer's hands */
	return 0;
}

/* ---- consumer ------------------------------------------------------------ */

/* Reload prod and validate it against what we hold. */
static int load_prod(struct chirp_ring *r)
{
	uint64_t p = atomic_load_explicit(&r->h->prod, memory_order_acquire);

	/* Our own index is ours alone: put it back if scribbled on. */
	if (atomic_load_explicit(&r->h->cons, memory_order_relaxed) != r->cons)
		atomic_store_explicit(&r->h->cons, r->cons, memory_order_release);

	/* cons <= taken <= prod <= cons + slots */
	if (p - r->cons > r->L.slots || p - r->cons < r->taken - r->cons)
		return -EBADMSG;
	r->prod_cache = p;
	return 0;
}

uint64_t chirp_ring_available(const struct chirp_ring *r)
{
	uint64_t p;

	if (r->role != CHIRP_RING_CONSUMER)
		return 0;
	p = atomic_load_explicit(&r->h->prod, memory_order_acquire);
	if (p - r->cons > r->L.slots || p - r->cons < r->taken - r->cons)
		return 0;
	return p - r->taken;
}

static void bad_set(struct chirp_ring *r, uint64_t pos, int on)
{
	uint64_t i = slot_of(r, pos);

	if (on)
		r->bad[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		r->bad[i / 8] &= (uint8_t)~(1u << (i % 8));
}

static int bad_get(const struct chirp_ring *r, uint64_t pos)
{
	uint64_t i = slot_of(r, pos);

	return (r->bad[i / 8] >> (i % 8)) & 1;
}

static void publish_cons(struct chirp_ring *r, uint64_t c, uint64_t nreleased)
{
	struct ring_hdr *h = r->h;

	if (nreleased)
		atomic_store_explicit(&h->released,
			atomic_load_explicit(&h->released, memory_order_relaxed) + nreleased,
			memory_order_relaxed);
	/* Hands the slots back: pairs with the producer's acquire of cons. */
	atomic_store_explicit(&h->cons, c, memory_order_release);
	r->cons = c;
	full_fence();
	if (atomic_load_explicit(&h->prod_sleeping, memory_order_relaxed))
		futex_wake(&h->prod_futex);
}

int chirp_ring_peek(struct chirp_ring *r, struct chirp_ring_block *blk)
{
	struct ring_hdr *h = r->h;
	struct ring_desc *d;
	uint64_t t = r->taken, s, pos, seq, len;
	uint32_t flags, mode;
	int rc, redelivered;

	if (r->role != CHIRP_RING_CONSUMER)
		return -EPERM;
	rc = state_check(r);
	if (rc < 0)
		return rc;
	if (t == r->prod_cache) {
		rc = load_prod(r);
		if (rc < 0)
			return rc;
		if (t == r->prod_cache)
			return -EAGAIN;
	}
	s = slot_of(r, t);
	d = &r->desc[s];
	pos = atomic_load_explicit(&d->pos, memory_order_relaxed);
	seq = atomic_load_explicit(&d->seq, memory_order_relaxed);
	len = atomic_load_explicit(&d->len, memory_order_relaxed);
	flags = atomic_load_explicit(&d->flags, memory_order_relaxed) & DESC_FLAGS;
	mode = atomic_load_explicit(&d->mode, memory_order_relaxed);
	if (pos == t - r->L.slots) {
		/* The slot still holds the previous lap: it was never committed,
		 * so the producer index is ahead of the data (scribbled on).
		 * Take nothing; reload the index next time (a real commit
		 * rewrites it). */
		r->prod_cache = t;
		return -EBADMSG;
	}
	r->taken = t + 1;
	redelivered = r->redelivering;
	if (r->redelivering && t + 1 == r->redeliver_end)
		r->redelivering = 0;
	if (!r->redelivering)
		atomic_store_explicit(&h->taken, t + 1, memory_order_relaxed);
	if (pos != t || len == 0 || len > r->L.payload_bytes) {
		/* Skip it and count it. Released with the held block before it,
		 * or now if none is held. */
		atomic_store_explicit(&h->skipped,
				      atomic_load_explicit(&h->skipped, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		if (r->cons == t)
			publish_cons(r, t + 1, 0);
		else
			bad_set(r, t, 1);
		return -EBADMSG;
	}
	/* The consumer trusts only seq; a number that went backwards (a
	 * producer's count scribbled on) is a discontinuity too, not a reason
	 * to refuse every block from now on. */
	if (r->have_last && seq != r->last_seq + 1)
		flags |= CHIRP_RING_DISCONTINUITY;
	r->last_seq = seq;
	r->have_last = 1;
	if (redelivered)
		flags |= CHIRP_RING_REDELIVERED;
	blk->seq = seq;
	blk->timestamp_ns = atomic_load_explicit(&d->timestamp_ns, memory_order_relaxed);
	blk->first_sample = atomic_load_explicit(&d->first_sample, memory_order_relaxed);
	blk->flags = flags;
	blk->slot = (uint32_t)s;
	blk->mode = mode;
	blk->missing = (flags & CHIRP_RING_INCOMPLETE) ?
		       atomic_load_explicit(&d->missing, memory_order_relaxed) : 0;
	pointing_unpack(atomic_load_explicit(&d->pointing, memory_order_relaxed), blk);
	blk->len = len;
	blk->payload = r->data + s * r->L.slot_bytes;
	if (r->spin_ns)
		r->last_ok_ns = now_mono_ns();
	return 0;
}

int chirp_ring_release(struct chirp_ring *r)
{
	uint64_t c = r->cons;

	if (r->role != CHIRP_RING_CONSUMER)
		return -EPERM;
	if (c == r->taken)
		return -EINVAL;   /* nothing held */
	c++;
	/* Skipped (invalid) blocks behind it go back too. */
	while (c != r->taken && bad_get(r, c)) {
		bad_set(r, c, 0);
		c++;
	}
	publish_cons(r, c, 1);
	return 0;
}

/* ---- waiting ---------------------------------------------------------- */

static int ready(struct chirp_ring *r)
{
	if (atomic_load_explicit(&r->h->state, memory_order_relaxed) != RING_STATE_READY)
		return 1;   /* let the caller's next call report it */
	if (r->role == CHIRP_RING_CONSUMER)
		return atomic_load_explicit(&r->h->prod, memory_order_acquire) != r->taken;
	/* chirp_ring_reserve would hand back the slot it holds */
	if (r->nres == 1 && r->res_single)
		return 1;
	if (r->nres >= r->L.slots)
		return 0;   /* every slot is reserved: commit first */
	if (r->prod + r->nres - r->cons_cache < r->L.slots)
		return 1;   /* the cached index already says there is room */
	/* room for one more (or corrupt: reserve will say so) */
	return r->prod + r->nres - atomic_load_explicit(&r->h->cons, memory_order_acquire) <
	       r->L.slots ||
	       r->prod - atomic_load_explicit(&r->h->cons, memory_order_relaxed) > r->L.slots;
}

int chirp_ring_set_spin(struct chirp_ring *r, int64_t spin_ns)
{
	if (!r || spin_ns < 0 || spin_ns > CHIRP_RING_MAX_SPIN_NS)
		return -EINVAL;
	r->spin_ns = spin_ns;
	return 0;
}

int64_t chirp_ring_get_spin(const struct chirp_ring *r)
{
	return r->spin_ns;
}

int chirp_ring_wait(struct chirp_ring *r, int64_t timeout_ns)
{
	_Atomic uint32_t *word, *sleeping;
	int64_t deadline, left;
	uint32_t v;
	int i, rc;

	/* timeout 0 is a poll: one look, no spinning */
	for (i = 0; i < (timeout_ns == 0 ? 1 : WAIT_SPIN); i++) {
		if (ready(r))
			return 0;
		cpu_relax();
	}
	if (timeout_ns == 0)
		return -ETIMEDOUT;
	deadline = timeout_ns < 0 ? INT64_MAX : now_mono_ns() + timeout_ns;
	if (r->spin_ns > 0) {
		/* chirp_ring_set_spin: keep polling until spin_ns after the
		 * last block or slot this handle took (from now if none yet),
		 * never past the deadline, reading the clock every 64 polls.
		 * A handle idle for longer than the spin sleeps at once, so a
		 * caller that waits in slices does not spin in every slice. */
		int64_t t = now_mono_ns();
		int64_t end = (r->last_ok_ns ? r->last_ok_ns : t) + r->spin_ns;

		if (end > deadline)
			end = deadline;
		for (i = 1; t < end; i++) {
			if (ready(r))
				return 0;   /* the peek or reserve after it stamps last_ok_ns */
			cpu_relax();
			if ((i & 63) == 0)
				t = now_mono_ns();
		}
	}
	if (r->role == CHIRP_RING_CONSUMER) {
		word = &r->h->cons_futex;
		sleeping = &r->h->cons_sleeping;
	} else {
		word = &r->h->prod_futex;
		sleeping = &r->h->prod_sleeping;
	}
	for (;;) {
		v = atomic_load_explicit(word, memory_order_acquire);
		atomic_store_explicit(sleeping, 1, memory_order_seq_cst);
		full_fence();
		if (ready(r)) {
			rc = 0;
			break;
		}
		left = deadline == INT64_MAX ? WAIT_SLICE_NS : deadline - now_mono_ns();
		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (left > WAIT_SLICE_NS)
			left = WAIT_SLICE_NS;
		r->sleeps++;
		rc = futex_wait(word, v, left);
		if (rc == -EINTR)
			break;
		/* Slept a whole slice and there was work: a wake-up was lost
		 * (or the peer stalled as long). Counted for the tests. */
		if (rc == -ETIMEDOUT && left == WAIT_SLICE_NS && ready(r))
			r->late_wakes++;
		/* 0 (woken), -EAGAIN (word moved), -ETIMEDOUT (slice): re-check */
	}
	atomic_store_explicit(sleeping, 0, memory_order_relaxed);
	if (rc == 0 || rc == -EINTR)
		return rc;
	return ready(r) ? 0 : -ETIMEDOUT;
}

/* ---- test hooks ----------------------------------------------------------- */

int ring_debug_set_seq(struct chirp_ring *r, uint64_t pos, uint64_t seq)
{
	struct ring_hdr *h = r->h;
	uint64_t p = atomic_load_explicit(&h->prod, memory_order_acquire);

	if (p != atomic_load_explicit(&h->cons, memory_order_acquire) || r->nres ||
	    (r->role == CHIRP_RING_CONSUMER && r->taken != r->cons))
		return -EBUSY;
	if (!r->pow2 && pos > RING_POS_LIMIT)
		return -EINVAL;   /* past the wrap rule: validation would refuse it */
	atomic_store_explicit(&h->cons, pos, memory_order_release);
	atomic_store_explicit(&h->taken, pos, memory_order_relaxed);
	atomic_store_explicit(&h->prod, pos, memory_order_release);
	atomic_store_explicit(&h->next_seq, seq, memory_order_relaxed);
	h->pos_base = pos;
	h->seq_base = seq;
	mark_unwritten(r->base, &r->L, pos);
	r->next_seq = seq;
	r->pending = 0;
	r->prod = r->cons_cache = r->cons = r->taken = r->prod_cache = pos;
	r->redeliver_end = pos;
	r->redelivering = 0;
	r->have_last = 0;
	return 0;
}

struct ring_hdr *ring_debug_hdr(struct chirp_ring *r)
{
	return r->h;
}

uint64_t ring_debug_late_wakes(const struct chirp_ring *r)
{
	return r->late_wakes;
}

uint64_t ring_debug_sleeps(const struct chirp_ring *r)
{
	return r->sleeps;
}
