/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workpool.c — worker threads that share one job's items with the caller.
 *
 * The contract, and which store releases what to which load, is at the top
 * of workpool.h; the comments here point back to it. In short: the ticket
 * (release by submit, seq_cst CAS by claimers) hands out items and carries
 * the job description with it; done (release per item, acquire by the
 * caller) carries the items' results back; gen_pub (release, acquire)
 * lets polling workers see a job without the lock; the mutex and the
 * condition variable serve only the workers that sleep, and destroy.
 */
#include "workpool.h"
#include "errbuf.h"
#include "timeutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WP_LINE 64u               /* a cache line: counters each on their own */
#define WP_GEN_MASK 0xffffffffu   /* the ticket's gen field and item field    */

/*
 * One thread's slot, a cache line each: joined_gen is written by its own
 * thread at every claim, and must not share a line with another's.
 */
struct wp_thread {
	_Alignas(WP_LINE) struct workpool *wp;
	pthread_t th;
	unsigned index;              /* 0: the caller                            */
	uint64_t joined_gen;         /* last gen this thread claimed an item of  */
};

struct workpool {
	unsigned threads;            /* the caller included                      */
	uint64_t spin_ns;
	workpool_fn fn;
	void *ctx;
	struct wp_thread *t;         /* threads entries; t[0] is the caller      */
	unsigned started;            /* workers running (joined on destroy)      */
	size_t cur_items;            /* the current job's nitems (caller only)   */

	/* Sleepers and destroy (workpool.h: what the mutex protects). */
	pthread_mutex_t lock;
	pthread_cond_t go;
	bool sync_ok;                /* lock and go initialized                  */
	uint64_t gen;                /* the last job; written by the caller under
					lock (without it while there are no
					workers), read by sleepers under it      */
	bool quit;
	unsigned asleep;             /* workers in or entering pthread_cond_wait */

	/* Read by every polling worker and claimer, written once per job. */
	_Alignas(WP_LINE) _Atomic uint64_t gen_pub;
	atomic_bool quit_pub;
	_Atomic size_t nitems[2];    /* job gen's item count at [gen & 1]         */

	/* Written at every claim / every finished item. */
	_Alignas(WP_LINE) _Atomic uint64_t ticket;   /* (gen << 32) | next item  */
	_Alignas(WP_LINE) atomic_size_t done;        /* items counted (release)  */
	_Alignas(WP_LINE) atomic_uint joined;        /* threads that claimed     */
};

/*
 * Poll gen_pub for a job after seen, or for quit, for up to spin_ns.
 * Returns the gen it saw: seen when the time ran out or quit was asked.
 * The clock is read every 64 polls (a vDSO call costs more than a pause).
 */
static uint64_t spin_for_gen(struct workpool *wp, uint64_t seen)
{
	uint64_t end = mono_ns() + wp->spin_ns;

	for (unsigned i = 1;; i++) {
		uint64_t g = atomic_load_explicit(&wp->gen_pub, memory_order_acquire);

		if (atomic_load_explicit(&wp->quit_pub, memory_order_relaxed))
			return seen;
		if (g != seen)
			return g;
		cpu_relax();
		if ((i & 63) == 0 && mono_ns() >= end)
			return seen;
	}
}

/*
 * Sleep until a job after seen (true, its gen in *gen) or quit (false).
 * gen and quit are checked under the lock before waiting, and the caller
 * changes them under it, so no wake-up is lost between the check and the
 * wait.
 */
static bool sleep_for_gen(struct workpool *wp, uint64_t seen, uint64_t *gen)
{
	bool quit;

	pthread_mutex_lock(&wp->lock);
	if (!wp->quit && wp->gen == seen) {
		wp->asleep++;
		while (!wp->quit && wp->gen == seen)
			pthread_cond_wait(&wp->go, &wp->lock);
		wp->asleep--;
	}
	quit = wp->quit;
	*gen = wp->gen;
	pthread_mutex_unlock(&wp->lock);
	return !quit;
}

/*
 * Worker loop: wait for the next job (poll, then sleep), run fn on it. A
 * worker that was handed gen late may see gen + k instead: it runs the
 * newest, and a gen it skipped was finished by the others.
 */
static void *worker_main(void *arg)
{
	struct wp_thread *t = arg;
	struct workpool *wp = t->wp;
	uint64_t seen = WORKPOOL_GEN_START;

	for (;;) {
		uint64_t g = wp->spin_ns ? spin_for_gen(wp, seen) : seen;

		if (g == seen && !sleep_for_gen(wp, seen, &g))
			break;
		seen = g;
		wp->fn(wp->ctx, t->index, g);
	}
	return NULL;
}

void workpool_destroy(struct workpool *wp)
{
	if (!wp)
		return;
	if (wp->sync_ok) {
		pthread_mutex_lock(&wp->lock);
		wp->quit = true;
		atomic_store_explicit(&wp->quit_pub, true, memory_order_relaxed);
		pthread_cond_broadcast(&wp->go);
		pthread_mutex_unlock(&wp->lock);
		for (unsigned k = 1; k <= wp->started; k++)
			pthread_join(wp->t[k].th, NULL);
		pthread_cond_destroy(&wp->go);
		pthread_mutex_destroy(&wp->lock);
	}
	free(wp->t);
	free(wp);
}

/* Zeroed memory aligned to a cache line, or NULL. */
static void *alloc_lines(size_t bytes)
{
	void *mem;

	if (posix_memalign(&mem, WP_LINE, bytes) != 0)
		return NULL;
	memset(mem, 0, bytes);
	return mem;
}

/*
 * Start workers 1..threads-1 with every signal blocked (the caller's mask
 * is restored), each named "name/k" (visible in top -H and ps -L).
 */
static int start_workers(struct workpool *wp, const char *name, char *err, size_t errlen)
{
	sigset_t all, old;
	int rc = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned k = 1; k < wp->threads; k++) {
		char tname[16];

		rc = pthread_create(&wp->t[k].th, NULL, worker_main, &wp->t[k]);
		if (rc != 0) {
			errbuf_set(err, errlen, "%s: pthread_create for worker %u of %u: %s",
				   name, k, wp->threads - 1, strerror(rc));
			break;
		}
		wp->started++;
		snprintf(tname, sizeof(tname), "%.10s/%u", name, k % 10000u);
		pthread_setname_np(wp->t[k].th, tname);   /* cosmetic: ignore errors */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc ? -rc : 0;
}

struct workpool *workpool_create(const struct workpool_params *p, char *err, size_t errlen)
{
	const char *name = p && p->name ? p->name : "workpool";
	struct workpool *wp;

	if (!p || p->threads < 1 || p->threads > WORKPOOL_MAX_THREADS) {
		errbuf_set(err, errlen, "%s: %u threads: must be 1..%u", name, p ? p->threads : 0,
			   WORKPOOL_MAX_THREADS);
		return NULL;
	}
	if (!p->fn) {
		errbuf_set(err, errlen, "%s: no function for the threads to run", name);
		return NULL;
	}
	wp = alloc_lines(sizeof(*wp));
	if (!wp) {
		errbuf_set(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	wp->threads = p->threads;
	wp->spin_ns = p->spin_ns;
	wp->fn = p->fn;
	wp->ctx = p->ctx;
	wp->gen = WORKPOOL_GEN_START;
	atomic_init(&wp->gen_pub, WORKPOOL_GEN_START);
	atomic_init(&wp->quit_pub, false);
	atomic_init(&wp->nitems[0], 0);
	atomic_init(&wp->nitems[1], 0);
	atomic_init(&wp->ticket, (WORKPOOL_GEN_START & WP_GEN_MASK) << 32);
	atomic_init(&wp->done, 0);
	atomic_init(&wp->joined, 0);
	wp->t = alloc_lines(p->threads * sizeof(*wp->t));
	if (!wp->t) {
		errbuf_set(err, errlen, "%s: out of memory for %u threads", name, p->threads);
		goto fail;
	}
	for (unsigned k = 0; k < p->threads; k++) {
		wp->t[k].wp = wp;
		wp->t[k].index = k;
		wp->t[k].joined_gen = WORKPOOL_GEN_START;
	}
	if (pthread_mutex_init(&wp->lock, NULL) != 0) {
		errbuf_set(err, errlen, "%s: pthread_mutex_init failed", name);
		goto fail;
	}
	if (pthread_cond_init(&wp->go, NULL) != 0) {
		pthread_mutex_destroy(&wp->lock);
		errbuf_set(err, errlen, "%s: pthread_cond_init failed", name);
		goto fail;
	}
	wp->sync_ok = true;
	if (start_workers(wp, name, err, errlen) < 0)
		goto fail;
	return wp;
fail:
	workpool_destroy(wp);
	return NULL;
}

/*
 * The counters are zeroed before the ticket's release (workpool.h): the
 * previous job is finished, so no thread counts into them until it has
 * claimed an item of this one.
 */
uint64_t workpool_submit(struct workpool *wp, size_t nitems, unsigned *woken)
{
	uint64_t gen = wp->gen + 1;
	unsigned n = 0;

	atomic_store_explicit(&wp->done, 0, memory_order_relaxed);
	atomic_store_explicit(&wp->joined, 0, memory_order_relaxed);
	atomic_store_explicit(&wp->nitems[gen & 1], nitems, memory_order_relaxed);
	wp->cur_items = nitems;
	atomic_store_explicit(&wp->ticket, (gen & WP_GEN_MASK) << 32, memory_order_release);
	if (wp->started) {
		pthread_mutex_lock(&wp->lock);
		wp->gen = gen;
		atomic_store_explicit(&wp->gen_pub, gen, memory_order_release);
		n = wp->asleep;   /* exact: nobody enters or leaves its sleep now */
		if (n)
			pthread_cond_broadcast(&wp->go);
		pthread_mutex_unlock(&wp->lock);
	} else {
		wp->gen = gen;
	}
	if (woken)
		*woken = n;
	return gen;
}

bool workpool_claim(struct workpool *wp, unsigned thread, uint64_t gen, size_t *item)
{
	uint64_t g32 = gen & WP_GEN_MASK;
	uint64_t v = atomic_load_explicit(&wp->ticket, memory_order_seq_cst);
	struct wp_thread *t = &wp->t[thread];

	do {
		if ((v >> 32) != g32 ||
		    (v & WP_GEN_MASK) >= atomic_load_explicit(&wp->nitems[gen & 1],
							     memory_order_relaxed))
			return false;   /* nothing left of job gen */
	} while (!atomic_compare_exchange_weak_explicit(&wp->ticket, &v, v + 1,
							memory_order_seq_cst,
							memory_order_seq_cst));
	if (t->joined_gen != gen) {
		t->joined_gen = gen;
		atomic_fetch_add_explicit(&wp->joined, 1, memory_order_relaxed);
	}
	*item = (size_t)(v & WP_GEN_MASK);
	return true;
}

void workpool_item_done(struct workpool *wp)
{
	atomic_fetch_add_explicit(&wp->done, 1, memory_order_release);
}

bool workpool_finished(const struct workpool *wp)
{
	return atomic_load_explicit(&wp->done, memory_order_acquire) >= wp->cur_items;
}

void workpool_wait(const struct workpool *wp)
{
	while (!workpool_finished(wp))
		cpu_relax();
}

uint64_t workpool_run(struct workpool *wp, size_t nitems, unsigned *woken)
{
	uint64_t gen = workpool_submit(wp, nitems, woken);

	wp->fn(wp->ctx, 0, gen);
	workpool_wait(wp);
	return gen;
}

size_t workpool_left(const struct workpool *wp, uint64_t gen)
{
	uint64_t v = atomic_load_explicit(&wp->ticket, memory_order_acquire);
	size_t n, next = (size_t)(v & WP_GEN_MASK);

	if ((v >> 32) != (gen & WP_GEN_MASK))
		return 0;
	n = atomic_load_explicit(&wp->nitems[gen & 1], memory_order_relaxed);
	return next < n ? n - next : 0;
}

unsigned workpool_joined(const struct workpool *wp)
{
	return atomic_load_explicit(&wp->joined, memory_order_relaxed);
}

uint64_t workpool_gen(const struct workpool *wp)
{
	return wp->gen;
}

unsigned workpool_threads(const struct workpool *wp)
{
	return wp ? wp->threads : 0;
}

int workpool_bind(struct workpool *wp, const cpu_set_t *cpus)
{
	int n = 0, first = 0;

	for (unsigned k = 1; k <= wp->started; k++) {
		int rc = pthread_setaffinity_np(wp->t[k].th, sizeof(*cpus), cpus);

		if (rc == 0)
			n++;
		else if (!first)
			first = -rc;
	}
	return first ? first : n;
}
