/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chunk_policy.h — how the CUDA backend cuts one CPI's rows into chunks.
 *
 * A plain C module (no CUDA types), built into every build so that the
 * decision is tested where there is no GPU (tests/test_chunk_policy.c).
 * The CUDA backend calls it once, at create, and builds its streams, cuFFT
 * plans and graphs for the layouts it returns.
 *
 * A layout cuts rows into nchunks chunks of chunk_rows rows, the last of
 * rem_rows (1 <= rem_rows <= chunk_rows), handed round-robin to the first
 * nstreams chunk streams. Rows are never split and no chunk is empty.
 *
 * Two layouts per backend: the depth's (made for throughput, used whenever
 * the GPU is behind) and the idle one (used for a CPI that arrives while
 * the GPU is not behind, where its latency is what the cut decides).
 */
#ifndef CHIRP_CHUNK_POLICY_H
#define CHIRP_CHUNK_POLICY_H

#include <stddef.h>

#include "chirp/pc.h"   /* PC_MAX_CHUNKS */

#ifdef __cplusplus
extern "C" {
#endif

struct chunk_layout {
	unsigned nchunks;        /* 1..PC_MAX_CHUNKS, <= rows               */
	unsigned nstreams;       /* chunk streams used: min(nchunks, streams) */
	size_t chunk_rows;       /* rows of every chunk but the last         */
	size_t rem_rows;         /* rows of the last chunk                   */
};

struct chunk_plan {
	struct chunk_layout depth;   /* the depth's layout                   */
	struct chunk_layout idle;    /* the idle layout (= depth when none)  */
	int have_idle;               /* idle.nchunks != depth.nchunks        */
	unsigned nstreams;           /* chunk streams to make: max of both   */
};

/*
 * Chunks the depth's layout asks for when tune.cuda_chunks is 0 (auto), by
 * the depth (CPIs in flight, >= 1) and the larger direction's bytes
 * max(in_bytes, out_bytes) of one CPI:
 *   depth 1:  one per 2 MiB, at most 16;
 *   depth 2:  one per 4 MiB, at most 8;
 *   deeper:   2 from 16 MiB (halves of at least 8 MiB), else 1.
 * Always >= 1 (a CPI under a cut is one chunk); before rows limit it.
 */
unsigned chunk_policy_auto(unsigned depth, size_t in_bytes, size_t out_bytes);

/*
 * Cut rows (>= 1) into at most k chunks (k < 1 counts as 1, k > rows as
 * rows, k > PC_MAX_CHUNKS as PC_MAX_CHUNKS) of equal rows but a shorter
 * last one, over at most streams (>= 1) chunk streams. Equal rows round
 * up, so fewer than k chunks may result (10 rows in 7: 5 chunks of 2).
 * Returns 0, or -EINVAL (rows or streams 0; *l untouched).
 */
int chunk_layout_set(struct chunk_layout *l, size_t rows, unsigned k, unsigned streams);

/*
 * Both layouts of a CPI of rows rows at depth depth (>= 1), with
 * in_bytes/out_bytes per CPI, over at most streams chunk streams:
 *   chunks (tune.cuda_chunks): 0 = chunk_policy_auto, else as given;
 *   idle_chunks (tune.cuda_idle_chunks, 0 counts as 1): the idle layout,
 *   made only where the depth's is one chunk (a chunked layout already
 *   overlaps a lone CPI's copies); elsewhere idle = depth.
 * Returns 0, or -EINVAL (rows, depth or streams 0; *p untouched).
 */
int chunk_policy_plan(struct chunk_plan *p, size_t rows, unsigned depth, size_t in_bytes,
		      size_t out_bytes, unsigned chunks, unsigned idle_chunks, unsigned streams);

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_CHUNK_POLICY_H */
