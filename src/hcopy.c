/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hcopy.c — parallel host memory copy (contract in hcopy.h).
 *
 * The hand-off is pc_cpu.c's: a generation counter under a mutex and a
 * condition variable wakes the workers; the slices of one copy are claimed
 * through an atomic ticket, (gen << 32) | next slice, so a worker claims a
 * slice only of the copy whose generation it read with the job, and a
 * worker that wakes after its copy finished claims nothing of the next one.
 * The caller waits for the copy's slices, never for the workers.
 *
 * Why not more threads or smaller slices: a copy is bound by memory
 * bandwidth, which a few cores saturate (doc/cuda.md, "Copy staging"); each
 * slice costs a compare-and-swap on a shared line (~0.1 us), small against
 * copying 256 KiB to 1 MiB (tens of us at 5-20 GB/s per core).
 */
#include "hcopy.h"
#include "errbuf.h"
#include "timeutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>
#define HCOPY_HAVE_NT 1
#endif

#define HCOPY_LINE 64u           /* slice boundaries: cache lines of dst */

/*
 * A copy's generation starts this far below the 32-bit wrap of the ticket's
 * generation field, so that every process (and every test) running more than
 * this many copies goes through the wrap, instead of only one that runs 2^32.
 */
#define HCOPY_GEN_START ((uint64_t)UINT32_MAX - 64u)

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

struct hcopy {
	unsigned threads;            /* caller included                        */
	bool nt;                     /* hcopy_set_nt                           */
	pthread_t *th;               /* threads - 1 workers                    */
	unsigned started;            /* workers running (joined on destroy)    */

	/* Hand-off: gen, quit and job change under lock, with a broadcast. */
	pthread_mutex_t lock;
	pthread_cond_t go;
	bool sync_ok;                /* lock and go initialized                */
	uint64_t gen;                /* written by the caller only, under lock */
	bool quit;
	struct hcopy_job job;

	/* Own cache lines: every slice touches them, the lock far less. */
	_Alignas(64) _Atomic uint64_t ticket;   /* (gen << 32) | next slice     */
	_Alignas(64) atomic_size_t slices_done; /* of this copy (release)       */
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
 * Claim slices of copy gen until none is left or the ticket belongs to
 * another copy. Each finished slice is counted with a release, so the caller
 * that sees the count reach nslices (acquire) sees every byte.
 */
static void run_slices(struct hcopy *h, const struct hcopy_job *j, uint64_t gen)
{
	for (;;) {
		uint64_t v = atomic_load_explicit(&h->ticket, memory_order_relaxed);

		if ((v >> 32) != (gen & 0xffffffffu) || (v & 0xffffffffu) >= j->nslices)
			break;
		if (!atomic_compare_exchange_weak_explicit(&h->ticket, &v, v + 1,
							   memory_order_acquire,
							   memory_order_relaxed))
			continue;
		copy_slice(j, (size_t)(v & 0xffffffffu));
		atomic_fetch_add_explicit(&h->slices_done, 1, memory_order_release);
	}
}

static void *worker_main(void *arg)
{
	struct hcopy *h = arg;
	uint64_t seen;

	pthread_mutex_lock(&h->lock);
	seen = h->gen;
	for (;;) {
		while (!h->quit && h->gen == seen)
			pthread_cond_wait(&h->go, &h->lock);
		if (h->quit)
			break;
		seen = h->gen;
		struct hcopy_job j = h->job;
		pthread_mutex_unlock(&h->lock);
		run_slices(h, &j, seen);
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

void hcopy_destroy(struct hcopy *h)
{
	if (!h)
		return;
	if (h->sync_ok) {
		pthread_mutex_lock(&h->lock);
		h->quit = true;
		pthread_cond_broadcast(&h->go);
		pthread_mutex_unlock(&h->lock);
		for (unsigned t = 0; t < h->started; t++)
			pthread_join(h->th[t], NULL);
		pthread_cond_destroy(&h->go);
		pthread_mutex_destroy(&h->lock);
	}
	free(h->th);
	free(h);
}

struct hcopy *hcopy_create(unsigned threads, char *err, size_t errlen)
{
	struct hcopy *h = NULL;
	sigset_t all, old;
	void *mem;
	int rc;

	if (threads < 1 || threads > HCOPY_MAX_THREADS) {
		errbuf_set(err, errlen, "hcopy: %u threads: must be 1..%u", threads,
			   HCOPY_MAX_THREADS);
		return NULL;
	}
	rc = posix_memalign(&mem, 64, sizeof(*h));
	if (rc != 0) {
		errbuf_set(err, errlen, "hcopy: out of memory");
		return NULL;
	}
	h = mem;
	memset(h, 0, sizeof(*h));
	h->threads = threads;
	h->gen = HCOPY_GEN_START;
	atomic_init(&h->ticket, 0);
	atomic_init(&h->slices_done, 0);
	if (threads == 1)
		return h;   /* every copy is the caller's memcpy */

	h->th = calloc(threads - 1, sizeof(*h->th));
	if (!h->th) {
		errbuf_set(err, errlen, "hcopy: out of memory for %u threads", threads);
		goto fail;
	}
	if (pthread_mutex_init(&h->lock, NULL) != 0) {
		errbuf_set(err, errlen, "hcopy: pthread_mutex_init failed");
		goto fail;
	}
	if (pthread_cond_init(&h->go, NULL) != 0) {
		pthread_mutex_destroy(&h->lock);
		errbuf_set(err, errlen, "hcopy: pthread_cond_init failed");
		goto fail;
	}
	h->sync_ok = true;
	/* Workers start with every signal blocked; the caller's mask is restored. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned t = 0; t < threads - 1; t++) {
		char name[16];   /* visible in top -H, ps -L: "hcopy/1" ... */

		rc = pthread_create(&h->th[t], NULL, worker_main, h);
		if (rc != 0) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			errbuf_set(err, errlen, "hcopy: pthread_create for worker %u of %u: %s",
				   t + 1, threads - 1, strerror(rc));
			goto fail;
		}
		h->started++;
		snprintf(name, sizeof(name), "hcopy/%u", (t + 1) % 10000u);
		pthread_setname_np(h->th[t], name);   /* cosmetic: ignore errors */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return h;
fail:
	hcopy_destroy(h);
	return NULL;
}

int hcopy_bind(struct hcopy *h, const cpu_set_t *cpus)
{
	int n = 0, first = 0;

	for (unsigned t = 0; t < h->started; t++) {
		int rc = pthread_setaffinity_np(h->th[t], sizeof(*cpus), cpus);

		if (rc == 0)
			n++;
		else if (!first)
			first = -rc;
	}
	return first ? first : n;
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
	/* The ticket counts slices in 32 bits: huge copies get bigger slices. */
	if (bytes / slice >= 0x7fffffffu)
		slice = (bytes / 0x7fffffffu + HCOPY_LINE) / HCOPY_LINE * HCOPY_LINE;
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
	struct hcopy_job j;
	uint64_t gen;

	if (!h || (bytes > 0 && (!dst || !src)))
		return -EINVAL;
	if (h->threads == 1 || bytes < HCOPY_PARALLEL_MIN) {
		copy_bytes(h->nt, dst, src, bytes);
		return 0;
	}
	plan_job(h, &j, dst, src, bytes);
	/* The previous copy's slices are all done (we waited for them), so
	 * no worker touches these counters until the new ticket is out. */
	atomic_store_explicit(&h->slices_done, 0, memory_order_relaxed);
	gen = h->gen + 1;
	atomic_store_explicit(&h->ticket, (gen & 0xffffffffu) << 32, memory_order_release);
	pthread_mutex_lock(&h->lock);
	h->job = j;
	h->gen = gen;
	pthread_cond_broadcast(&h->go);
	pthread_mutex_unlock(&h->lock);
	run_slices(h, &j, gen);
	/* Slices other threads claimed are at most one slice's copy each. */
	while (atomic_load_explicit(&h->slices_done, memory_order_acquire) < j.nslices)
		cpu_relax();
	return 0;
}
