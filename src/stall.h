/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stall.h — notices when a polling thread made no progress for longer than
 * a threshold, and says what the thread was doing meanwhile, from its own
 * counters: its CPU time (CLOCK_THREAD_CPUTIME_ID) and its voluntary and
 * involuntary context switches (getrusage(RUSAGE_THREAD)) over the gap.
 *
 * WHY
 *   The data thread polls: between two of its checkpoints it never sleeps
 *   on purpose. A gap of milliseconds there delays every CPI in chirpd and
 *   every CPI that arrives meanwhile, and the flight recorder alone cannot
 *   tell whose it was. The counters can:
 *     running    CPU time over at least half the gap: the thread ran (our
 *                code, or a library call that spins; on a VM also time
 *                the host spent handling an exit of this vCPU, which the
 *                guest cannot tell from its own running)
 *     blocked    it slept inside a call (a voluntary switch: a lock, a
 *                write to a full pipe, a page fault served from disk)
 *     preempted  another thread of this machine took its CPU (an
 *                involuntary switch)
 *     stolen     none of these: it was neither running nor switched out,
 *                so its virtual CPU was not running (the hypervisor took
 *                it; the guest's steal time). This relies on the kernel
 *                leaving steal out of a thread's CPU time
 *                (CONFIG_PARAVIRT_TIME_ACCOUNTING, the distributions'
 *                default); without it, stolen time reads as running.
 *   The order above is the order of precedence when several apply.
 *
 * CONTRACT
 *   A struct stall_watch belongs to one thread: stall_watch_mark and
 *   stall_watch_check read that thread's counters. Each is one vDSO clock
 *   read plus two system calls (the thread's CPU clock, getrusage), no
 *   allocation, no lock: about 1.5 us a check on a small VM
 *   (doc/performance.md), so a polling loop reacts that much later. Mark
 *   after every deliberate wait (a sleep the thread asked for is not a
 *   stall); check at each checkpoint of the loop.
 */
#ifndef CHIRP_STALL_H
#define CHIRP_STALL_H

#include <stdint.h>

#define STALL_THRESHOLD_NS 200000ull   /* 200 us: a gap at least this long is a stall */

enum stall_kind {
	STALL_NONE = 0,
	STALL_RUNNING,
	STALL_BLOCKED,
	STALL_PREEMPTED,
	STALL_STOLEN,
	STALL_KINDS
};

/* The thread's counters at one instant. */
struct stall_watch {
	uint64_t wall_ns;     /* CLOCK_MONOTONIC                           */
	uint64_t cpu_ns;      /* the thread's CPU time (its runtime)       */
	uint64_t nvcsw;       /* voluntary context switches                */
	uint64_t nivcsw;      /* involuntary context switches              */
};

/* One stall: [start_ns, end_ns) on CLOCK_MONOTONIC. */
struct stall {
	uint64_t start_ns, end_ns;
	uint64_t cpu_ns;      /* the thread's CPU time within it           */
	uint32_t nvcsw, nivcsw;
	enum stall_kind kind;
};

/* Read the calling thread's counters into *w. 0, or -errno of the failed
 * call. */
int stall_watch_mark(struct stall_watch *w);

/*
 * Compare the calling thread's counters now with *w, then store now in *w.
 * Returns 1 and fills *out when the wall-clock gap is at least
 * threshold_ns, 0 when it is shorter, -errno when a read failed (*w
 * then holds the wall clock only, so the next check still measures from
 * here).
 */
int stall_watch_check(struct stall_watch *w, uint64_t threshold_ns, struct stall *out);

/* The kind of a gap of gap_ns in which the thread ran cpu_ns and switched
 * nvcsw times voluntarily, nivcsw involuntarily (see WHY). gap_ns 0 is
 * STALL_NONE. */
enum stall_kind stall_classify(uint64_t gap_ns, uint64_t cpu_ns, uint64_t nvcsw,
			       uint64_t nivcsw);

/* "running", "blocked", "preempted", "stolen"; "none" for STALL_NONE. */
const char *stall_kind_name(enum stall_kind k);

#endif /* CHIRP_STALL_H */
