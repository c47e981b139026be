/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chunk_policy.c — how a CPI's rows are cut into chunks (chunk_policy.h).
 *
 * WHY CHUNKS
 *   A CPI occupies its set of device buffers until its output is reported,
 *   so with one or two CPIs in flight a whole CPI copies in, computes and
 *   copies out one step after the other, and each copy engine idles while
 *   the others work. Cut into chunks on a few streams, the input copy of
 *   chunk i+1 runs while chunk i computes and chunk i-1 copies out.
 *
 * THE DEPTH'S CUT (chunk_policy_auto)
 *   Each chunk costs the submitting thread about seven more API calls and
 *   makes every launch smaller, so chunks pay for themselves only where few
 *   CPIs are in flight:
 *   - depth 1 overlaps nothing else: one chunk per 2 MiB of the larger
 *     direction, at most 16;
 *   - depth 2 overlaps two CPIs already: one per 4 MiB, at most 8;
 *   - deeper pipelines keep the copy engines busy on their own: a CPI of
 *     16 MiB or more goes in two halves of at least 8 MiB, which costs no
 *     throughput and takes about a quarter off each CPI's latency; a
 *     smaller one stays whole. Each copy costs the engine a few
 *     microseconds besides its bytes, so halves under 8 MiB cost
 *     capacity (an 8 MiB CPI each way at depth 4: 4 % in halves) and
 *     four chunks cost it at any size; both are left to an explicit
 *     cuda_chunks.
 *   The figures behind these cuts: doc/cuda.md, *Chunks*.
 *
 * THE IDLE LAYOUT
 *   A CPI that arrives while the GPU is not behind is latency-bound, and
 *   could be cut finer than the depth's layout. It stays off (one chunk)
 *   unless cuda_idle_chunks asks for it: mixing cut and whole CPIs lowers
 *   the median latency but raises the tail, and a real-time consumer is
 *   served by its tail (doc/cuda.md, *Layouts*). It is made only where the
 *   depth's layout is one chunk: a chunked layout already overlaps a lone
 *   CPI's copies.
 */
#include "chunk_policy.h"

#include <errno.h>

#define MIB ((size_t)1 << 20)

unsigned chunk_policy_auto(unsigned depth, size_t in_bytes, size_t out_bytes)
{
	size_t big = in_bytes > out_bytes ? in_bytes : out_bytes;
	size_t k;

	if (depth <= 1) {
		k = big / (2 * MIB);
		if (k > 16)
			k = 16;
	} else if (depth == 2) {
		k = big / (4 * MIB);
		if (k > 8)
			k = 8;
	} else {
		k = big >= 16 * MIB ? 2 : 1;
	}
	return k < 1 ? 1u : (unsigned)k;
}

int chunk_layout_set(struct chunk_layout *l, size_t rows, unsigned k, unsigned streams)
{
	size_t n = k;

	if (rows == 0 || streams == 0)
		return -EINVAL;
	if (n < 1)
		n = 1;
	if (n > PC_MAX_CHUNKS)
		n = PC_MAX_CHUNKS;
	if (n > rows)
		n = rows;
	l->chunk_rows = (rows + n - 1) / n;
	l->nchunks = (unsigned)((rows + l->chunk_rows - 1) / l->chunk_rows);
	l->rem_rows = rows - (size_t)(l->nchunks - 1) * l->chunk_rows;
	l->nstreams = l->nchunks < streams ? l->nchunks : streams;
	return 0;
}

int chunk_policy_plan(struct chunk_plan *p, size_t rows, unsigned depth, size_t in_bytes,
		      size_t out_bytes, unsigned chunks, unsigned idle_chunks, unsigned streams)
{
	struct chunk_plan q;
	unsigned k;

	if (rows == 0 || depth == 0 || streams == 0)
		return -EINVAL;
	k = chunks ? chunks : chunk_policy_auto(depth, in_bytes, out_bytes);
	(void)chunk_layout_set(&q.depth, rows, k, streams);
	if (q.depth.nchunks == 1)
		(void)chunk_layout_set(&q.idle, rows, idle_chunks ? idle_chunks : 1u, streams);
	else
		q.idle = q.depth;
	q.have_idle = q.idle.nchunks != q.depth.nchunks;
	q.nstreams = q.depth.nstreams > q.idle.nstreams ? q.depth.nstreams : q.idle.nstreams;
	*p = q;
	return 0;
}
