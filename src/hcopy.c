/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hcopy.c — parallel host memory copy (contract in hcopy.h).
 *
 * The threads, the hand-off and the slices' claims are workpool.c's: a
 * copy is a job whose items are its slices. The workers sleep between
 * copies (spin 0): polling would burn cores that the data thread and the
 * GPU backend's host threads need, and a worker that wakes late costs only
 * parallelism, since the caller copies every slice nobody has claimed. The
 * caller waits for the copy's slices, never for the workers.
 *
 * Why not more threads or smaller slices: a copy is bound by memory
 * bandwidth, which a few cores saturate (doc/cuda.md, "Copy staging"); each
 * slice costs a compare-and-swap on a shared line (~0.1 us), small against
 * copying 256 KiB to 1 MiB (tens of us at 5-20 GB/s per core).
 */
#include "hcopy.h"
#include "errbuf.h"
#include "workpool.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>
#define HCOPY_HAVE_NT 1
#endif

#define HCOPY_LINE 64u           /* slice boundaries: cache lines of dst */

/* One copy, cut into nslices: slice 0 is [0, first), slice k > 0 is
 * [first + (k-1) slice, first + k slice) clipped to bytes. */
struct hcopy_job {
	char *dst;
	const char *src;
	size_t bytes;
	size_t first;                /* end of slice 0: dst + first is aligned */
	size_t slice;                /* bytes of the slices after the first    */
	size_t nslices;
	bool nt;                     /* non-temporal stores (hcopy_set_nt)     */
};

/*
 * The job is written by the caller before workpool_submit and read by a
 * thread only between claiming a slice and counting it done (workpool.h),
 * so the caller rewrites it for the next copy with no thread reading.
 */
struct hcopy {
	unsigned threads;            /* caller included                        */
	bool nt;                     /* hcopy_set_nt                           */
	struct workpool *pool;
	struct hcopy_job job;
};

/*
 * memcpy with non-temporal (streaming) stores for the 16-byte-aligned body
 * of dst: the lines go to memory without being read first (a normal store
 * reads each destination line before writing it: 3 bytes of memory traffic
 * per byte copied instead of 2) and without evicting the cache. The sfence
 * at the end orders the streaming stores before whatever the caller does
 * next (hcopy's release of the slice count, a DMA after hcopy_run).
 * Elsewhere than x86-64, memcpy.
 */
void hcopy_memcpy_nt(void *dst, const void *src, size_t n)
{
#ifdef HCOPY_HAVE_NT
	char *d = dst;
	const char *s = src;
	size_t head = (16u - (uintptr_t)d % 16u) % 16u;

	if (n < 256) {
		memcpy(d, s, n);
		return;
	}
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, n);
	_mm_sfence();
#else
	memcpy(dst, src, n);
#endif
}

/* One run of bytes, the copier's way (n may be 0, with any pointers). */
static void copy_bytes(bool nt, char *dst, const char *src, size_t n)
{
	if (n == 0)
		return;
	if (nt)
		hcopy_memcpy_nt(dst, src, n);
	else
		memcpy(dst, src, n);
}

static void copy_slice(const struct hcopy_job *j, size_t k)
{
	size_t lo = k == 0 ? 0 : j->first + (k - 1) * j->slice;
	size_t hi = k == 0 ? j->first : lo + j->slice;

	if (hi > j->bytes)
		hi = j->bytes;
	copy_bytes(j->nt, j->dst + lo, j->src + lo, hi - lo);
}

/*
 * A thread's share of copy gen: claim slices until none is left. Each
 * finished slice is counted with a release (workpool_item_done; the
 * streaming stores of hcopy_memcpy_nt are fenced before it), so the caller
 * that sees every slice counted sees every byte.
 */
static void copy_share(void *ctx, unsigned thread, uint64_t gen)
{
	struct hcopy *h = ctx;
	size_t k;

	while (workpool_claim(h->pool, thread, gen, &k)) {
		copy_slice(&h->job, k);
		workpool_item_done(h->pool);
	}
}

void hcopy_destroy(struct hcopy *h)
{
	if (!h)
		return;
	workpool_destroy(h->pool);
	free(h);
}

struct hcopy *hcopy_create(unsigned threads, char *err, size_t errlen)
{
	struct workpool_params wpp = { 0 };
	struct hcopy *h;

	if (threads < 1 || threads > HCOPY_MAX_THREADS) {
		errbuf_set(err, errlen, "hcopy: %u threads: must be 1..%u", threads,
			   HCOPY_MAX_THREADS);
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		errbuf_set(err, errlen, "hcopy: out of memory");
		return NULL;
	}
	h->threads = threads;
	wpp.threads = threads;
	wpp.spin_ns = 0;
	wpp.name = "hcopy";
	wpp.fn = copy_share;
	wpp.ctx = h;
	h->pool = workpool_create(&wpp, err, errlen);
	if (!h->pool) {
		free(h);
		return NULL;
	}
	return h;
}

int hcopy_bind(struct hcopy *h, const cpu_set_t *cpus)
{
	return workpool_bind(h->pool, cpus);
}

unsigned hcopy_threads(const struct hcopy *h)
{
	return h ? h->threads : 0;
}

void hcopy_set_nt(struct hcopy *h, int on)
{
	if (h)
		h->nt = on != 0;   /* read only by the caller's hcopy_run */
}

int hcopy_nt(const struct hcopy *h)
{
	return h && h->nt;
}

/* Cut bytes (>= HCOPY_PARALLEL_MIN) at dst into about two slices per thread. */
static void plan_job(const struct hcopy *h, struct hcopy_job *j, void *dst,
		     const void *src, size_t bytes)
{
	size_t slice = bytes / (2 * (size_t)h->threads);
	size_t head = (HCOPY_LINE - (uintptr_t)dst % HCOPY_LINE) % HCOPY_LINE;

	slice = (slice + HCOPY_LINE - 1) / HCOPY_LINE * HCOPY_LINE;
	if (slice < HCOPY_SLICE_MIN)
		slice = HCOPY_SLICE_MIN;
	if (slice > HCOPY_SLICE_MAX)
		slice = HCOPY_SLICE_MAX;
	/* The pool counts items in 32 bits: huge copies get bigger slices. */
	if (bytes / slice >= WORKPOOL_MAX_ITEMS)
		slice = (bytes / WORKPOOL_MAX_ITEMS + HCOPY_LINE) / HCOPY_LINE * HCOPY_LINE;
	j->dst = dst;
	j->src = src;
	j->bytes = bytes;
	j->nt = h->nt;
	j->slice = slice;
	j->first = head + slice;
	if (j->first >= bytes) {
		j->first = bytes;
		j->nslices = 1;
	} else {
		j->nslices = 1 + (bytes - j->first + slice - 1) / slice;
	}
}

int hcopy_run(struct hcopy *h, void *dst, const void *src, size_t bytes)
{
	if (!h || (bytes > 0 && (!dst || !src)))
		return -EINVAL;
	if (h->threads == 1 || bytes < HCOPY_PARALLEL_MIN) {
		copy_bytes(h->nt, dst, src, bytes);
		return 0;
	}
	plan_job(h, &h->job, dst, src, bytes);
	/* Slices other threads claimed are at most one slice's copy each. */
	workpool_run(h->pool, h->job.nslices, NULL);
	return 0;
}
