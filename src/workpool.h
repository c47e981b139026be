/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workpool.h — a fixed set of worker threads that share the items of one
 * job at a time with the thread that submits it (the caller). The CPU
 * backend runs a CPI's blocks of rows on it (pc_cpu.c), the copy staging a
 * copy's slices (hcopy.c).
 *
 * LIFECYCLE
 *   workpool_create   threads - 1 workers (threads counts the caller), made
 *                     with every signal blocked (the daemon takes signals
 *                     through a signalfd), named "NAME/1", "NAME/2" ...,
 *                     inheriting the creator's CPU affinity and policy.
 *   workpool_submit   publish job gen of nitems items and wake the workers
 *                     that sleep; every worker that sees it calls
 *                     fn(ctx, thread, gen) once (thread 1..threads-1).
 *   workpool_claim    inside fn, and on the caller (thread 0): take the
 *                     next item of job gen, false when none is left.
 *   workpool_item_done  count one item finished (exactly once per item,
 *                     by whichever thread finished it).
 *   workpool_finished / workpool_wait   the caller: every item counted.
 *   workpool_run      submit + fn(ctx, 0, gen) on the caller + wait.
 *   workpool_bind     pin the workers (never the caller).
 *   workpool_destroy  stop and join the workers.
 *   One thread (the caller) submits, runs, waits and binds; it submits job
 *   gen + 1 only once job gen is finished. Nothing allocates after create.
 *
 * WAITING
 *   The caller waits for items, never for workers: it claims every item
 *   nobody has, so a job finishes even if no worker ever wakes, and a
 *   worker that wakes after its job finished finds nothing to claim and
 *   costs the job nothing. Waiting for every worker to check in would make
 *   each job as slow as the slowest wake-up of threads - 1 threads, the
 *   latency tail on a shared host or a VM.
 *   Idle workers poll for the next job for spin_ns, then sleep on a
 *   condition variable. Polling is there because waking a sleeping thread
 *   goes through the kernel (and on a VM through the hypervisor: 1-2 ms at
 *   p99, doc/latency.md) while the caller computes alone.
 *
 * ORDERING CONTRACT (the kfifo way: which store releases what, which load
 * acquires it)
 *   ticket = (gen mod 2^32) << 32 | next item to claim. workpool_submit
 *     stores it with a release, after the job's item count and after the
 *     done and joined counters are zeroed; so whatever the caller wrote
 *     before workpool_submit (the user's job description: buffers, sizes)
 *     is released with it. A claim is a seq_cst compare-and-swap of the
 *     ticket, which reads from that store or from an earlier claim's CAS
 *     (its release sequence): a thread that claimed an item of gen sees the
 *     job description of gen. Each item is claimed by one thread only (the
 *     CAS), and only while the ticket still carries the claimer's gen: a
 *     worker that is handed gen late claims nothing of gen + 1.
 *     The ticket's load and CAS are seq_cst (not just acquire) so that a
 *     user may count itself into a counter of its own with a seq_cst RMW
 *     before it claims, and a caller that has seen every item done and
 *     then that counter at zero knows no thread will claim, or read the
 *     job, later (pc_cpu.c's loading: no late reader of a CPI's input).
 *   nitems[gen & 1]: each job's item count, stored relaxed before the
 *     ticket's release and read by claimers after a ticket load that shows
 *     gen (so they see gen's count). The slot is rewritten for gen + 2
 *     only after the ticket has moved past gen, so a claimer that reads a
 *     newer count can only meet a CAS that fails.
 *   done: workpool_item_done is a release increment after the item's
 *     writes; workpool_finished's acquire load that sees nitems sees every
 *     item's writes. Non-temporal (streaming) stores are not ordered by a
 *     release: a user that makes them issues a store fence (sfence) before
 *     counting the item.
 *   joined: threads that claimed at least one item of the job (a relaxed
 *     increment at a thread's first claim of it, before that claim's item
 *     is counted done). Exact once the caller has synchronized with every
 *     claimer: through done for items a claimer counted itself, or through
 *     the user's own counter (pc_cpu.c's loading, when the caller counted
 *     a straggler's item for it).
 *   gen_pub: the job's gen, stored with a release after the ticket; a
 *     polling worker loads it with an acquire, so its claims read the
 *     ticket of that gen or a later one, never an earlier one.
 *   quit_pub: destroy's flag, read relaxed by polling workers, which then
 *     confirm it under the lock.
 *   No lock on the fast path: a polling worker takes the job from gen_pub
 *   without the lock, because threads - 1 workers that see it at one
 *   instant and all reach for one mutex would queue on it in the kernel (a
 *   plain glibc mutex sleeps at its first failed try), one futex wake-up
 *   after another, the very wait the polling is there to avoid. Claims and
 *   counts are single atomic operations on cache lines of their own.
 *   The mutex protects gen (the last job as sleepers see it), quit and
 *   asleep (workers in, or entering, pthread_cond_wait); the condition
 *   variable is broadcast when gen or quit changes and asleep > 0. A worker
 *   checks gen and quit under the lock before it waits, so no broadcast is
 *   lost; the count of sleepers read under the lock is exact, which is
 *   what workpool_submit's woken reports.
 *
 * WHAT IS NOT SHARED, AND WHY
 *   The items themselves and what a thread does between claims are the
 *   user's. hcopy.c claims and copies, and waits with workpool_run.
 *   pc_cpu.c runs submit / its own claims / its own wait: it brackets each
 *   claim with its input-reader count (a CPI's input slot is handed back
 *   once the CPI is reported, so no straggler may read it later), and its
 *   wait may compute a straggler's block again and count it done itself
 *   (the straggler take-over). Either rule inside the pool would cost the
 *   copier a counter and a clock read per slice for nothing, so the pool
 *   offers the steps and pc_cpu.c puts its rules between them. The spin is
 *   a parameter: pc_cpu.c polls (idle_spin_us), hcopy.c sleeps (spin 0).
 *
 * GENERATIONS
 *   The first job's gen is WORKPOOL_GEN_START + 1, 64 jobs below the wrap
 *   of the ticket's 32-bit gen field, so that every process (and test) that
 *   runs more than 64 jobs goes through the wrap, not only one that runs
 *   2^32. Gens as the API returns them are 64-bit and never wrap.
 */
#ifndef CHIRP_WORKPOOL_H
#define CHIRP_WORKPOOL_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WORKPOOL_MAX_THREADS 1024u
#define WORKPOOL_MAX_ITEMS   0x7fffffffu           /* per job: the ticket's 32 bits */
#define WORKPOOL_GEN_START   ((uint64_t)UINT32_MAX - 64u)

struct workpool;

/*
 * A worker's share of job gen: claim items with workpool_claim(wp, thread,
 * gen, ...) until it returns false. thread: 1..threads-1 on the workers
 * (the caller is 0). Runs once per job on each worker that sees the job in
 * time; it may return at once.
 */
typedef void (*workpool_fn)(void *ctx, unsigned thread, uint64_t gen);

struct workpool_params {
	unsigned threads;     /* 1..WORKPOOL_MAX_THREADS, the caller included */
	uint64_t spin_ns;     /* idle workers poll this long, then sleep      */
	const char *name;     /* thread names: "name/1" ... (at most 15 chars) */
	workpool_fn fn;
	void *ctx;            /* fn's first argument                          */
};

/*
 * Returns NULL with the reason in err (bad count, out of memory,
 * pthread_create failed); never half-built.
 */
struct workpool *workpool_create(const struct workpool_params *p, char *err, size_t errlen);

/*
 * Publish the next job, of nitems items, and wake the sleeping workers.
 * nitems <= WORKPOOL_MAX_ITEMS (the ticket counts items in 32 bits; users
 * bound their item counts at create); 0 is a job finished at once. The
 * previous job must be finished. Returns the job's gen; *woken (may be
 * NULL) is how many workers were asleep and were woken.
 */
uint64_t workpool_submit(struct workpool *wp, size_t nitems, unsigned *woken);

/*
 * Claim the next item of job gen as thread (0 = the caller). Returns true
 * with *item in 0..nitems-1, or false when every item of gen is claimed or
 * the pool has moved on to another job.
 */
bool workpool_claim(struct workpool *wp, unsigned thread, uint64_t gen, size_t *item);

/* Count one item of the current job finished (a release: see above). */
void workpool_item_done(struct workpool *wp);

/* The caller: is every item of the current job counted done (acquire)? */
bool workpool_finished(const struct workpool *wp);

/* The caller: poll until workpool_finished. */
void workpool_wait(const struct workpool *wp);

/* Submit, run fn(ctx, 0, gen) on the caller, wait. Returns the gen. */
uint64_t workpool_run(struct workpool *wp, size_t nitems, unsigned *woken);

/* Items of job gen not claimed yet (0 once the pool has moved on). */
size_t workpool_left(const struct workpool *wp, uint64_t gen);

/* Threads that claimed an item of the current job (see joined above). */
unsigned workpool_joined(const struct workpool *wp);

/* The last job's gen (WORKPOOL_GEN_START before the first). The caller. */
uint64_t workpool_gen(const struct workpool *wp);

/* Threads, the caller included, as created. */
unsigned workpool_threads(const struct workpool *wp);

/*
 * Pin the workers (not the caller) to cpus. Returns how many were pinned,
 * or a negative errno (the first pthread_setaffinity_np failure; the
 * others are still tried).
 */
int workpool_bind(struct workpool *wp, const cpu_set_t *cpus);

/* Stop and join the workers, free wp. NULL is fine. The last job must be
 * finished; a worker still inside fn returns from it first. */
void workpool_destroy(struct workpool *wp);

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_WORKPOOL_H */
