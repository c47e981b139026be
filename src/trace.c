/* SPDX-License-Identifier: Apache-2.0 */
/* trace.c — see trace.h for the concurrency contract. */
#include "trace.h"
#include "stall.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* A record as words, so every field is one relaxed atomic. */
enum {
	W_NUM = 0,          /* record number k: tells record k from k + n */
	W_SEQ, W_FIRST, W_TS, W_T0,
	W_LAT = W_T0 + TR_STAMPS, W_DEV, W_FILL, W_INFL, W_FLAGS, W_RECOMP, W_CHUNKS,
	W_WOKEN, W_ABSENT, W_STALL, W_STALL_CPU, W_STALL_KIND, W_STALL_WHERE, W_MODE,
	W_WORDS
};

struct trace_slot {
	_Atomic uint64_t ver;            /* odd while being written            */
	_Atomic uint64_t w[W_WORDS];
};

struct trace {
	unsigned n;
	_Atomic uint64_t total;          /* records written (release)          */
	struct trace_slot *slot;
};

static const char *const stamp_names[TR_STAMPS] = {
	[TR_IN_COMMIT] = "in_commit", [TR_PEEK] = "peek", [TR_SUBMIT] = "submit",
	[TR_SUBMITTED] = "submitted", [TR_INPUT_DONE] = "input_done",
	[TR_OUTPUT_DONE] = "output_done", [TR_RELEASE] = "release",
	[TR_OUT_COMMIT] = "out_commit",
};

const char *trace_stamp_name(enum trace_stamp s)
{
	return (unsigned)s < TR_STAMPS ? stamp_names[s] : "?";
}

static const char *const where_names[TW_WHERES] = {
	[TW_NONE] = "none", [TW_TAKE] = "take", [TW_RETIRE] = "retire", [TW_POLL] = "poll",
};

const char *trace_where_name(enum trace_where w)
{
	return (unsigned)w < TW_WHERES ? where_names[w] : "?";
}

struct trace *trace_create(unsigned n)
{
	struct trace *t;

	if (n < 1 || n > TRACE_MAX_RECORDS)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	/* calloc: all-zero atomics are valid, and the pages are touched here
	 * rather than on the data thread's first lap. */
	t->slot = calloc(n, sizeof(*t->slot));
	if (!t->slot) {
		free(t);
		return NULL;
	}
	for (unsigned i = 0; i < n; i++)
		atomic_init(&t->slot[i].ver, 0);
	t->n = n;
	return t;
}

void trace_destroy(struct trace *t)
{
	if (!t)
		return;
	free(t->slot);
	free(t);
}

unsigned trace_capacity(const struct trace *t)
{
	return t->n;
}

#define ST(s, i, v) atomic_store_explicit(&(s)->w[i], (v), memory_order_relaxed)
#define LD(s, i)    atomic_load_explicit(&(s)->w[i], memory_order_relaxed)

void trace_put(struct trace *t, const struct trace_cpi *r)
{
	uint64_t k = atomic_load_explicit(&t->total, memory_order_relaxed);
	struct trace_slot *s = &t->slot[k % t->n];
	uint64_t v = atomic_load_explicit(&s->ver, memory_order_relaxed);

	atomic_store_explicit(&s->ver, v + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);   /* odd before the fields */
	ST(s, W_NUM, k);
	ST(s, W_SEQ, r->seq);
	ST(s, W_FIRST, r->first_sample);
	ST(s, W_TS, r->timestamp_ns);
	for (int i = 0; i < TR_STAMPS; i++)
		ST(s, W_T0 + i, r->t[i]);
	ST(s, W_LAT, r->latency_ns);
	ST(s, W_DEV, r->device_ns);
	ST(s, W_FILL, r->fill);
	ST(s, W_INFL, r->in_flight);
	ST(s, W_FLAGS, r->flags);
	ST(s, W_RECOMP, r->recomputed);
	ST(s, W_CHUNKS, r->chunks);
	ST(s, W_WOKEN, r->woken);
	ST(s, W_ABSENT, r->absent);
	ST(s, W_STALL, r->stall_ns);
	ST(s, W_STALL_CPU, r->stall_cpu_ns);
	ST(s, W_STALL_KIND, r->stall_kind);
	ST(s, W_STALL_WHERE, r->stall_where);
	ST(s, W_MODE, r->mode);
	atomic_store_explicit(&s->ver, v + 2, memory_order_release);
	atomic_store_explicit(&t->total, k + 1, memory_order_release);
}

uint64_t trace_total(const struct trace *t)
{
	return atomic_load_explicit(&((struct trace *)t)->total, memory_order_acquire);
}

/* Copy slot of record k; 0, or -EAGAIN if the writer was on it or it
 * already holds a later record. */
static int read_slot(const struct trace *t, uint64_t k, struct trace_cpi *out)
{
	struct trace_slot *s = &t->slot[k % t->n];
	uint64_t v1, v2, num;

	v1 = atomic_load_explicit(&s->ver, memory_order_acquire);
	if (v1 & 1)
		return -EAGAIN;
	num = LD(s, W_NUM);
	out->seq = LD(s, W_SEQ);
	out->first_sample = LD(s, W_FIRST);
	out->timestamp_ns = LD(s, W_TS);
	for (int i = 0; i < TR_STAMPS; i++)
		out->t[i] = LD(s, W_T0 + i);
	out->latency_ns = LD(s, W_LAT);
	out->device_ns = LD(s, W_DEV);
	out->fill = (uint32_t)LD(s, W_FILL);
	out->in_flight = (uint32_t)LD(s, W_INFL);
	out->flags = (uint32_t)LD(s, W_FLAGS);
	out->recomputed = (uint32_t)LD(s, W_RECOMP);
	out->chunks = (uint32_t)LD(s, W_CHUNKS);
	out->woken = (uint32_t)LD(s, W_WOKEN);
	out->absent = (uint32_t)LD(s, W_ABSENT);
	out->stall_ns = LD(s, W_STALL);
	out->stall_cpu_ns = LD(s, W_STALL_CPU);
	out->stall_kind = (uint32_t)LD(s, W_STALL_KIND);
	out->stall_where = (uint32_t)LD(s, W_STALL_WHERE);
	out->mode = (uint32_t)LD(s, W_MODE);
	atomic_thread_fence(memory_order_acquire);   /* the copy before the re-check */
	v2 = atomic_load_explicit(&s->ver, memory_order_relaxed);
	return v1 == v2 && num == k ? 0 : -EAGAIN;
}

int trace_get(const struct trace *t, uint64_t k, struct trace_cpi *out)
{
	uint64_t total = trace_total(t);

	/* Record k lives in slot k % n until record k + n is written. */
	if (k >= total || total - k > t->n)
		return -ENOENT;
	/* A consistent copy that says it is record k: the writer laps a slot
	 * only by writing record k + n into it, which the number tells. */
	return read_slot(t, k, out) < 0 ? -ENOENT : 0;
}

unsigned trace_read(const struct trace *t, struct trace_cpi *out, unsigned max)
{
	uint64_t total = trace_total(t), first;
	unsigned got = 0;

	if (max > t->n)
		max = t->n;
	first = total > max ? total - max : 0;
	for (uint64_t k = first; k < total; k++)
		if (trace_get(t, k, &out[got]) == 0)
			got++;
	return got;
}

/*
 * snprintf at *o into buf[len] (nothing written once *o >= len, as
 * snprintf with a size of 0), advancing *o by what it would have written,
 * so the total is snprintf's: the length untruncated. 0, or < 0 on error.
 */
static int appendf(char *buf, size_t len, size_t *o, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int appendf(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*o < len ? buf + *o : NULL, *o < len ? len - *o : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return n;
	*o += (size_t)n;
	return 0;
}

int trace_format(const struct trace_cpi *r, uint64_t budget_ns, char *buf, size_t len)
{
	const uint64_t t0 = r->t[TR_IN_COMMIT];
	size_t o = 0;
	int n;

	if (len)
		buf[0] = '\0';
	n = appendf(buf, len, &o, "seq %llu mode %u%s latency %.3f ms (budget %.3f ms):",
		    (unsigned long long)r->seq, r->mode,
		    r->flags & TRACE_UNKNOWN_MODE ? " (unknown)" : "", (double)r->latency_ns * 1e-6,
		    (double)budget_ns * 1e-6);
	for (int i = TR_PEEK; n == 0 && i < TR_STAMPS; i++)
		if (r->t[i])
			n = appendf(buf, len, &o, " %s +%.3f", stamp_names[i],
				    (double)(int64_t)(r->t[i] - t0) * 1e-6);
	if (n == 0)
		n = appendf(buf, len, &o, " ms; input ring fill %u, in flight %u", r->fill,
			    r->in_flight);
	if (n == 0 && r->device_ns)
		n = appendf(buf, len, &o, ", device %.3f ms", (double)r->device_ns * 1e-6);
	if (n == 0 && r->recomputed)
		n = appendf(buf, len, &o, ", %u block%s recomputed (stalled worker)", r->recomputed,
			    r->recomputed == 1 ? "" : "s");
	if (n == 0 && r->woken)
		n = appendf(buf, len, &o, ", %u worker%s woken", r->woken, r->woken == 1 ? "" : "s");
	if (n == 0 && r->absent)
		n = appendf(buf, len, &o, ", %u thread%s computed nothing", r->absent,
			    r->absent == 1 ? "" : "s");
	if (n == 0 && r->stall_ns)
		n = appendf(buf, len, &o, ", data thread stalled %.3f ms (%s, in %s)",
			    (double)r->stall_ns * 1e-6, stall_kind_name((enum stall_kind)r->stall_kind),
			    trace_where_name((enum trace_where)r->stall_where));
	return n < 0 ? n : (int)o;
}
