/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stall.c — a polling thread's gaps and what it was doing in them. See
 * stall.h for the contract.
 */
#include "stall.h"

#include <errno.h>
#include <sys/resource.h>   /* RUSAGE_THREAD: _GNU_SOURCE, set by the Makefile */
#include <time.h>

#include "timeutil.h"

static const char *const kind_names[STALL_KINDS] = {
	[STALL_NONE] = "none",
	[STALL_RUNNING] = "running",
	[STALL_BLOCKED] = "blocked",
	[STALL_PREEMPTED] = "preempted",
	[STALL_STOLEN] = "stolen",
};

const char *stall_kind_name(enum stall_kind k)
{
	return (unsigned)k < STALL_KINDS ? kind_names[k] : "?";
}

enum stall_kind stall_classify(uint64_t gap_ns, uint64_t cpu_ns, uint64_t nvcsw,
			       uint64_t nivcsw)
{
	if (gap_ns == 0)
		return STALL_NONE;
	if (cpu_ns >= gap_ns / 2)
		return STALL_RUNNING;
	if (nvcsw)
		return STALL_BLOCKED;
	if (nivcsw)
		return STALL_PREEMPTED;
	return STALL_STOLEN;
}

static int read_counters(struct stall_watch *w)
{
	struct rusage ru;
	struct timespec ts;

	w->wall_ns = mono_ns();
	/* The thread's CPU time from its own clock (the scheduler's runtime,
	 * in ns): getrusage's utime + stime is that runtime split by tick
	 * samples and clamped to never go back, so over a gap of a few
	 * hundred microseconds it can lag and then jump by milliseconds (a
	 * 0.2 ms gap can read as 4 ms of CPU). */
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return -errno;
	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return -errno;
	w->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	w->nvcsw = (uint64_t)ru.ru_nvcsw;
	w->nivcsw = (uint64_t)ru.ru_nivcsw;
	return 0;
}

int stall_watch_mark(struct stall_watch *w)
{
	return read_counters(w);
}

int stall_watch_check(struct stall_watch *w, uint64_t threshold_ns, struct stall *out)
{
	struct stall_watch now;
	uint64_t gap;
	int ret;

	ret = read_counters(&now);
	if (ret < 0) {
		w->wall_ns = now.wall_ns;
		return ret;
	}
	gap = now.wall_ns > w->wall_ns ? now.wall_ns - w->wall_ns : 0;
	if (gap < threshold_ns || gap == 0) {
		*w = now;
		return 0;
	}
	out->start_ns = w->wall_ns;
	out->end_ns = now.wall_ns;
	out->cpu_ns = now.cpu_ns > w->cpu_ns ? now.cpu_ns - w->cpu_ns : 0;
	out->nvcsw = (uint32_t)(now.nvcsw - w->nvcsw);
	out->nivcsw = (uint32_t)(now.nivcsw - w->nivcsw);
	out->kind = stall_classify(gap, out->cpu_ns, out->nvcsw, out->nivcsw);
	*w = now;
	return 1;
}
