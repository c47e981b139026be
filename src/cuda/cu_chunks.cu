/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_chunks.cu — how the CUDA backend cuts a CPI's rows into chunks.
 *
 * A CPI occupies its set until its output is reported, so without help
 * both copy directions would stay busy only with three or more CPIs in
 * flight, and a daemon that runs at depth 1 (to DMA straight into the one
 * output slot its ring lets it reserve) would copy in, compute and copy out
 * one after the other. So each CPI's rows are cut into chunks (rows never
 * split), handed round-robin to CU_CHUNK_STREAMS streams of the set, each
 * with its own cuFFT plans (and work area). The H2D of chunk i+1 then runs
 * while chunk i computes and chunk i-1 drains: one CPI in flight keeps
 * both directions busy except for one chunk at each end. The set's own
 * stream starts the chunk streams (ev_start) and joins them: ev_in after
 * their last H2D, ev_out after all their work.
 *
 * How many chunks is decided once, at create, by chunk_policy.c (a plain
 * C module, tested without a GPU): the depth's layout by depth and size,
 * or tune.cuda_chunks; the idle layout (tune.cuda_idle_chunks) for a CPI
 * that arrives while the GPU is not behind, off unless asked for.
 * pc_done.chunks says how each CPI was cut.
 */
#include <stdio.h>

#include "cu_private.h"

/* Both layouts, from the backend's geometry and depth and the tuning. */
int cu_choose_chunks(struct cu_be *be, const struct pc_tuning *tune)
{
	struct chunk_plan p;

	if (chunk_policy_plan(&p, be->rows, be->nsets, be->in_bytes, be->out_bytes,
			      tune->cuda_chunks, tune->cuda_idle_chunks, CU_CHUNK_STREAMS) < 0) {
		snprintf(be->last_error, sizeof(be->last_error),
			 "no chunk layout for %zu rows at depth %u", be->rows, be->nsets);
		return -EINVAL;
	}
	be->lay[CU_LAY_DEPTH] = p.depth;
	be->lay[CU_LAY_IDLE] = p.idle;
	be->lay[CU_LAY_WHOLE].nchunks = 1;
	be->lay[CU_LAY_WHOLE].nstreams = 1;
	be->lay[CU_LAY_WHOLE].chunk_rows = be->rows;
	be->lay[CU_LAY_WHOLE].rem_rows = be->rows;
	be->have_idle = p.have_idle;
	be->ncs = p.nstreams;
	return 0;
}

/*
 * Chunk i of layout lay: its rows (returned), its first row, and where it
 * starts in a CPI's input and output bytes. The call-by-call path, the
 * capture of a graph and the re-pointing of its copies all cut a CPI with
 * this, so the copies found in a graph are the ones re-pointed.
 */
unsigned cu_chunk(const struct cu_be *be, const struct chunk_layout *lay, unsigned i,
		  size_t *r0, size_t *ioff, size_t *ooff)
{
	*r0 = (size_t)i * lay->chunk_rows;
	*ioff = *r0 * be->R * pc_format_sample_bytes(be->in_format);
	*ooff = *r0 * be->R * pc_output_sample_bytes(be->out_mode);
	return (unsigned)(i == lay->nchunks - 1 ? lay->rem_rows : lay->chunk_rows);
}

/*
 * The layout for the next CPI: the idle one when nothing waits behind it
 * (pc_queue_hint) and no CPI in flight still has input to copy in, i.e.
 * the H2D engine has nothing of ours queued and the new CPI's latency, not
 * the pipeline's throughput, is what the cut decides; else the depth's.
 * A backlog always gets the depth's layout: a chunked CPI costs the
 * submitting thread over twice the runtime calls of a whole one, and where
 * the host's calls slow down those calls could take longer than the gap
 * between CPIs, where a whole CPI's keep up. One event query per in-flight
 * CPI whose input is not yet known to be done (depth - 1 at most),
 * stopping at the first still busy. Input in device memory with the fused
 * kernel: the whole CPI, one launch (there is no copy in to overlap, and
 * the kernel reads it in place). Returns the layout or -EIO.
 */
int cu_pick_layout(struct cu_be *be, int in_dev)
{
	if (be->fused && in_dev)
		return CU_LAY_WHOLE;
	if (!be->have_idle || be->waiting > 0)
		return CU_LAY_DEPTH;
	for (unsigned i = be->count; i-- > 0;) {   /* youngest first: likeliest busy */
		struct cu_set *s = &be->sets[(be->head + i) % be->nsets];
		int r;

		if (s->h2d_done)
			continue;
		r = cu_query(be, s->ev_in, "cudaEventQuery(input)");
		if (r < 0)
			return r;
		if (!r)
			return CU_LAY_DEPTH;
		s->h2d_done = 1;
	}
	return CU_LAY_IDLE;
}
