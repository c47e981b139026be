/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hcopy.h — a parallel host memory copier: memcpy of one large buffer cut
 * into slices that a few threads copy at once (the CUDA backend's copy
 * staging: one thread's memcpy of a 16 MiB CPI into pinned memory was the
 * whole CPI's budget at ~140 CPI/s; see doc/cuda.md, "Copy staging").
 *
 * CONTRACT
 *   hcopy_create makes threads-1 worker threads (threads counts the caller);
 *   they sleep on a condition variable between copies and start with every
 *   signal blocked (the daemon takes signals through a signalfd), inheriting
 *   the creator's CPU affinity and scheduling policy. One thread at a time
 *   calls hcopy_run on one hcopy (not concurrently: the data thread's submit
 *   and poll, one after the other, are fine). The caller copies too and
 *   returns only when every slice is copied: on return, all of dst is
 *   written and visible to the caller (each slice's completion is counted
 *   with a release, the caller reads the count with an acquire), so it may
 *   hand dst to a DMA engine or another thread at once.
 *
 *   Copies below HCOPY_PARALLEL_MIN bytes, and every copy with threads = 1,
 *   are one memcpy by the caller, with no wake-up. Larger ones are cut at
 *   64-byte boundaries of dst (no two threads write one cache line), into
 *   slices of HCOPY_SLICE_MIN..HCOPY_SLICE_MAX bytes, about two per thread.
 *   A worker that wakes late finds no slice left and costs nothing: the
 *   caller takes every slice nobody has claimed, and then waits only for
 *   slices other threads have already claimed, at most one each (longer
 *   only if such a thread is preempted in the middle of its slice).
 *
 *   Nothing is allocated in hcopy_run.
 */
#ifndef CHIRP_HCOPY_H
#define CHIRP_HCOPY_H

#include <sched.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCOPY_MAX_THREADS   64u
#define HCOPY_PARALLEL_MIN  (1u << 20)     /* bytes: below this, one memcpy */
#define HCOPY_SLICE_MIN     (256u << 10)   /* bytes per slice, at least     */
#define HCOPY_SLICE_MAX     (1u << 20)     /* ... and at most               */

struct hcopy;

/*
 * threads: 1..HCOPY_MAX_THREADS, the caller included. Returns NULL with the
 * reason in err (bad count, out of memory, pthread_create failed); never
 * half-built.
 */
struct hcopy *hcopy_create(unsigned threads, char *err, size_t errlen);

/*
 * Copy bytes from src to dst (which must not overlap), as memcpy. Returns 0,
 * or -EINVAL if h is NULL, or src or dst is NULL with bytes > 0 (nothing is
 * copied then).
 */
int hcopy_run(struct hcopy *h, void *dst, const void *src, size_t bytes);

/* Threads a copy uses, the caller included (as created). */
unsigned hcopy_threads(const struct hcopy *h);

/*
 * Non-temporal stores from now on (on != 0) or memcpy (0, the default).
 * Streaming stores skip reading each destination line before writing it
 * and leave the cache alone: less memory traffic for copies far larger
 * than the cache whose destination is read next by a DMA engine or another
 * process, not by this core. Not while a copy runs (the caller's thread
 * only). x86-64 only; elsewhere memcpy either way.
 */
void hcopy_set_nt(struct hcopy *h, int on);
int hcopy_nt(const struct hcopy *h);

/* memcpy with non-temporal stores (x86-64; memcpy elsewhere), fenced. */
void hcopy_memcpy_nt(void *dst, const void *src, size_t n);

/*
 * Pin the copier's worker threads (not the caller) to cpus. Returns how
 * many were pinned, or a negative errno (the first pthread_setaffinity_np
 * failure; the others are still tried).
 */
int hcopy_bind(struct hcopy *h, const cpu_set_t *cpus);

/* Stop and join the workers, free h. NULL is fine. No copy may be running. */
void hcopy_destroy(struct hcopy *h);

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_HCOPY_H */
