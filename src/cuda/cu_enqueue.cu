/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_enqueue.cu — one CPI's calls on a set, in steps: start (reset the
 * non-finite count, release the chunk streams), per chunk its input (host
 * staging copy, H2D) and its compute and output (pad, FFT, multiply, IFFT,
 * output mode, D2H), then the join. With beams (cu_beams.cu) the beam
 * stage runs whole before the chunks, or per chunk (its pulses of every
 * channel in, their beams formed, then compressed). The call-by-call path
 * runs them on the streams; cu_graph.cu captures the very same calls into
 * a graph.
 */
#include "cu_private.h"

/* What one CPI's steps share. */
struct cu_cpi {
	struct cu_set *s;
	int li;                          /* layout index, CU_LAY_*          */
	const struct chunk_layout *lay;
	const void *in;                  /* the caller's input              */
	const void *src;                 /* what the H2D reads (in or h_in) */
	const struct cu_dst *dst;        /* what the D2Hs write (out or h_out,
					    det or h_det)                   */
	int stage_in, capture;
	int packed;                      /* input goes through d_in         */
	int in_place;                    /* fused: the kernel reads src
					    (device memory) itself, or the
					    beams in d_in                  */
	int beams;                       /* the beam stage writes d_in,
					    whole, before the chunks       */
	int beam_chunks;                 /* ... or chunk by chunk: each
					    chunk's input is its pulses of
					    every channel (cu_beams.cu)    */
	int bgraph;                      /* a capture of beams by chunk:
					    the host queues the copies and
					    ev_start, ev_in (cu_graph.cu);
					    the graph waits for ev_copy   */
	int out_place;                   /* fused: the kernel writes
					    dst->out (device memory)       */
	unsigned filt;                   /* the CPI's filter index          */
};

/* One chunk of it: chunk stream, rows, offsets, its FFT rows; by beam
 * chunk its pulses p0 .. p0 + np - 1 instead. */
struct cu_piece {
	struct cu_chunk_stream *c;
	unsigned i, nr;
	size_t r0, ioff, ooff;
	float2 *fft;
	unsigned p0, np;
};

/*
 * Main stream: release the chunk streams (everything earlier on this set
 * is ordered before ev_start; the non-finite count is zero, as the last
 * CPI's publish left it). A capture records ev_start as a node the host
 * reads, and forks off ev_fork.
 */
static int cu_enq_start(struct cu_be *be, const struct cu_cpi *q, struct cu_err *ce)
{
	struct cu_set *s = q->s;
	unsigned rec = q->capture ? cudaEventRecordExternal : cudaEventRecordDefault;
	cudaEvent_t fork = q->capture || q->beams ? s->ev_fork : s->ev_start;

	if (!q->bgraph)
		EQ(cudaEventRecordWithFlags(s->ev_start, s->stream, rec));
	if (q->beams && cu_beams_enqueue(be, s, q->in, q->src, q->stage_in, q->dst->in_dev,
					 q->dst->az_deg, q->dst->el_deg, ce) < 0)
		return -EIO;
	if (q->capture || q->beams)
		EQ(cudaEventRecord(s->ev_fork, s->stream));
	for (unsigned k = 0; k < q->lay->nstreams; k++)
		EQ(cudaStreamWaitEvent(s->cs[k].stream, fork, 0));
	return 0;
}

/*
 * A chunk's input: staged input is copied into h_in just before its H2D
 * is queued, so the DMA of chunk i runs while the host copies chunk i+1
 * (the set is free, so no DMA still reads h_in). cf32 call by call lands
 * 2-D in the pitched rows; sc16 and a capture go 1-D into d_in (a graph's
 * copy can take new pointers only when it is 1-D). Each chunk stream's
 * last H2D records its ev_h2d. An armed fault is launched here.
 */
static int cu_enq_input(struct cu_be *be, const struct cu_cpi *q, const struct cu_piece *k,
			struct cu_err *ce)
{
	size_t in_sz = pc_format_sample_bytes(be->in_format);
	size_t bytes = (size_t)k->nr * be->R * in_sz;
	cudaStream_t st = k->c->stream;

	if (q->in_place)   /* read by the kernel; ev_h2d after it (compute) */
		goto fault;
	if (q->beams) {    /* in d_in already: the beam stage read the input */
		if (k->i + q->lay->nstreams >= q->lay->nchunks)
			EQ(cudaEventRecord(k->c->ev_h2d, st));
		goto fault;
	}
	if (q->beam_chunks) {
		if (cu_beams_input_chunk(be, q->s, q->in, q->src, q->stage_in, q->bgraph, k->i,
					 k->p0, k->np, st, ce) < 0)
			return -EIO;
		if (q->bgraph)   /* ev_in: the host's, after its copies */
			goto fault;
		goto copied;
	}
	if (q->stage_in && cu_stage_in(be, q->s, q->in, k->ioff, bytes, ce) < 0)
		return -EIO;
	if (!q->packed)   /* cf32, call by call: packed slot rows -> pitched rows */
		EQ(cudaMemcpy2DAsync(k->fft, be->pitch_elems * sizeof(float2),
				     (const char *)q->src + k->ioff, (size_t)be->R * in_sz,
				     (size_t)be->R * in_sz, k->nr, cudaMemcpyDefault, st));
	else
		EQ(cudaMemcpyAsync((char *)q->s->d_in + k->ioff, (const char *)q->src + k->ioff,
				   bytes, cudaMemcpyDefault, st));
copied:
	if (k->i + q->lay->nstreams >= q->lay->nchunks)   /* this stream's last H2D */
		EQ(cudaEventRecord(k->c->ev_h2d, st));
fault:
	if (be->fault_armed && !q->capture) {
		be->fault_armed = 0;
		EQK("k_fault<<<1,4096>>> (injected fault)", cu_fault(st));
	}
	return 0;
}

/*
 * In a capture, the node just captured on st: the multiply, whose filter
 * pointer cu_graph.cu sets per CPI. The stream's capture dependencies
 * right after a launch are that launch's node alone.
 */
static int cu_enq_last_node(cudaStream_t st, cudaGraphNode_t *node, struct cu_err *ce)
{
	enum cudaStreamCaptureStatus cs;
	const cudaGraphNode_t *deps = NULL;
	size_t n = 0;

#if CUDART_VERSION >= 13000
	EQ(cudaStreamGetCaptureInfo(st, &cs, NULL, NULL, &deps, NULL, &n));
#elif CUDART_VERSION >= 12000
	EQ(cudaStreamGetCaptureInfo(st, &cs, NULL, NULL, &deps, &n));
#else
	EQ(cudaStreamGetCaptureInfo_v2(st, &cs, NULL, NULL, &deps, &n));
#endif
	if (cs != cudaStreamCaptureStatusActive || n != 1 || !deps) {
		ce->call = "cudaStreamGetCaptureInfo(multiply node)";
		ce->len = (int)strlen(ce->call);
		ce->what = "not one node after the launch";
		return -EIO;
	}
	*node = deps[0];
	return 0;
}

/*
 * The fused kernel's job for chunk i of layout lay on set s: its rows
 * (from d_in, or in_dev: device memory, in place) into d_out (or out_dev,
 * in place), or, with the radar chain, into the complex fft rows the chain
 * reads (a cube output is then made from them as on the cuFFT path). By
 * beam chunk (beam_chunk) its pulses of every beam instead, a group of
 * rows per beam (cu_beams_job_chunk). The rows of one group: 0 for a
 * beam chunk without pulses (more chunks than pulses: no launch).
 */
unsigned cu_fused_job(const struct cu_be *be, const struct cu_set *s,
		      const struct chunk_layout *lay, unsigned i, int beam_chunk,
		      const void *in_dev, void *out_dev, unsigned filt, struct cu_fjob *j)
{
	size_t r0, ioff, ooff;
	unsigned nr = cu_chunk(be, lay, i, &r0, &ioff, &ooff), p0, np;

	j->in = (const char *)(in_dev ? in_dev : s->d_in) + ioff;
	j->istride = be->R;
	if (be->cube_out && !be->rs) {
		j->out = (char *)(out_dev ? out_dev : s->d_out) + ooff;
		j->ostride = be->R;
		j->mode = be->out_mode;
	} else {
		j->out = cu_fft_row(be, s, r0);
		j->ostride = be->pitch_elems;
		j->mode = PC_OUT_COMPLEX;
	}
	j->filt = filt;
	j->nonfinite = s->d_nonfinite;
	j->rows = nr;
	j->groups = 1;
	j->igroup = 0;
	j->ogroup = 0;
	if (beam_chunk) {
		np = cu_beams_pulses(be, lay, i, &p0);
		cu_beams_job_chunk(be, s, p0, np, j);
	}
	return j->rows;
}

/* Fused: the chunk's one kernel (a capture records its node: the filter
 * is its parameter), then its D2H unless written in place. By beam chunk
 * the chunk's beams first, and the kernel on its pulses of every beam. */
static int cu_enq_fused(struct cu_be *be, const struct cu_cpi *q, const struct cu_piece *k,
			struct cu_err *ce)
{
	struct cu_set *s = q->s;
	cudaStream_t st = k->c->stream;
	struct cu_fjob j;

	if (q->beam_chunks && cu_beams_form_chunk(be, s, k->i, q->lay->nstreams, k->p0, k->np,
						  q->dst->az_deg, q->dst->el_deg, st, ce) < 0)
		return -EIO;
	if (cu_fused_job(be, s, q->lay, k->i, q->beam_chunks,
			 q->in_place && !q->beams ? q->src : NULL, q->out_place ? q->dst->out : NULL,
			 q->filt, &j) == 0) {
		s->g_mul[q->li][k->i] = NULL;   /* no pulses: no kernel */
		return 0;
	}
	EQK("k_fused", cu_fused_launch(be, &j, st));
	if (q->capture && cu_enq_last_node(st, &s->g_mul[q->li][k->i], ce) < 0)
		return -EIO;
	if (q->in_place && k->i + q->lay->nstreams >= q->lay->nchunks)
		EQ(cudaEventRecord(k->c->ev_h2d, st));   /* the input is read */
	if (!be->cube_out || q->out_place)
		return 0;
	if (be->rs)   /* the cube from the rows the chain keeps */
		EQK("k_out", cu_out(be->out_mode, k->fft, be->pitch_elems, (unsigned)be->R,
				    (char *)s->d_out + k->ooff, k->nr, st));
	EQ(cudaMemcpyAsync((char *)q->dst->out + k->ooff, (char *)s->d_out + k->ooff,
			   (size_t)k->nr * be->R * pc_output_sample_bytes(be->out_mode),
			   cudaMemcpyDefault, st));
	return 0;
}

/* A chunk's pad, FFT, multiply (the CPI's filter), IFFT, output mode and
 * D2H (the output mode and D2H only for a cube output). A capture records
 * the multiply's node. */
static int cu_enq_compute(struct cu_be *be, const struct cu_cpi *q, const struct cu_piece *k,
			  struct cu_err *ce)
{
	struct cu_set *s = q->s;
	unsigned R = (unsigned)be->R, nfft = (unsigned)be->nfft;
	size_t pe = be->pitch_elems;
	const char *cin = q->packed ? (const char *)s->d_in + k->ioff : NULL;
	void *cout;
	cufftHandle plan = k->nr == q->lay->chunk_rows ? k->c->plan[q->li] : k->c->plan_rem[q->li];
	cudaStream_t st = k->c->stream;
	cufftComplex *z = (cufftComplex *)k->fft;

	if (be->fused)
		return cu_enq_fused(be, q, k, ce);
	if (be->in_format == PC_FMT_SC16)
		EQK("k_pad", cu_pad_sc16((const short2 *)cin, k->fft, pe, R, nfft, k->nr, st));
	else if (q->packed)
		EQK("k_pad", cu_pad_cf32_packed((const float2 *)cin, k->fft, pe, R, nfft,
						s->d_nonfinite, k->nr, st));
	else
		EQK("k_pad", cu_pad_cf32(k->fft, pe, R, nfft, s->d_nonfinite, k->nr, st));
	EQF(cufftExecC2C(plan, z, z, CUFFT_FORWARD));
	EQK("k_cmul", cu_cmul(k->fft, pe, nfft, k->nr, be->d_filts + (size_t)q->filt * be->nfft, st));
	if (q->capture && cu_enq_last_node(st, &s->g_mul[q->li][k->i], ce) < 0)
		return -EIO;
	EQF(cufftExecC2C(plan, z, z, CUFFT_INVERSE));
	if (!be->cube_out)   /* the radar chain makes the output, after all chunks */
		return 0;
	cout = (char *)s->d_out + k->ooff;
	EQK("k_out", cu_out(be->out_mode, k->fft, pe, R, cout, k->nr, st));
	EQ(cudaMemcpyAsync((char *)q->dst->out + k->ooff, cout,
			   (size_t)k->nr * be->R * pc_output_sample_bytes(be->out_mode),
			   cudaMemcpyDefault, st));
	return 0;
}

/* Join: ev_in after every H2D; the radar chain (if on) after every
 * chunk's work; ev_out after every D2H and the count's publish. */
static int cu_enq_join(struct cu_be *be, const struct cu_cpi *q, struct cu_err *ce)
{
	struct cu_set *s = q->s;
	unsigned rec = q->capture ? cudaEventRecordExternal : cudaEventRecordDefault;

	for (unsigned k = 0; k < q->lay->nstreams; k++) {
		EQ(cudaEventRecord(s->cs[k].ev_done, s->cs[k].stream));
		if (!q->bgraph)
			EQ(cudaStreamWaitEvent(s->stream, s->cs[k].ev_h2d, 0));
	}
	if (!q->bgraph)
		EQ(cudaEventRecordWithFlags(s->ev_in, s->stream, rec));
	for (unsigned k = 0; k < q->lay->nstreams; k++)
		EQ(cudaStreamWaitEvent(s->stream, s->cs[k].ev_done, 0));
	if (be->rs && cu_radar_enqueue(be, s, q->dst, ce) < 0)
		return -EIO;
	EQK("k_nf_publish", cu_nf_publish(s->d_nonfinite, s->hd_nonfinite, s->stream));
	EQ(cudaEventRecordWithFlags(s->ev_out, s->stream, rec));
	return 0;
}

/*
 * Queue one CPI's work on set s, cut as layout li, multiplied by filter
 * filt (its mode's): src/dst are what the copies read and write (the
 * caller's buffers, or s->h_in/h_out/r.h_det when staged; `in` is the caller's
 * input, copied into h_in chunk by chunk when stage_in). capture: the
 * calls are being captured into the set's graph (cu_graph.cu), and each
 * chunk's multiply node is kept in s->g_mul: the input copy is 1-D into
 * d_in and padded from there, the events the host reads (ev_start, ev_in,
 * ev_out) become event-record nodes, and the chunk streams fork off
 * ev_fork. 0, or -EIO with *ce set.
 *
 * Chunk i runs on chunk stream i mod nstreams. The copy engines serve the
 * streams in turn, so the H2D of chunk i+1 runs while chunk i computes
 * and the D2H of chunk i-1 drains: both directions stay busy even with
 * one CPI in flight. ev_start is recorded before the chunks are queued:
 * for a CPI queued call by call, device_ns includes any time the GPU
 * waited for the host to queue the rest (and, staged, for those host
 * copies); a graph has it all at once.
 */
int cu_enqueue(struct cu_be *be, struct cu_set *s, int li, unsigned filt, const void *in,
	       const void *src, const struct cu_dst *dst, int stage_in, int capture,
	       struct cu_err *ce)
{
	struct cu_cpi q;
	int rc;

	q.s = s;
	q.li = li;
	q.lay = &be->lay[li];
	q.in = in;
	q.src = src;
	q.dst = dst;
	q.stage_in = stage_in;
	q.capture = capture;
	q.filt = filt;
	q.beam_chunks = be->bm && cu_beams_by_chunk(be, dst->in_dev);
	q.beams = be->bm && !q.beam_chunks;
	q.bgraph = capture && q.beam_chunks;
	q.packed = be->in_format == PC_FMT_SC16 || capture || be->fused || be->bm;
	q.in_place = be->fused && (dst->in_dev || q.beams);
	q.out_place = be->fused && be->cube_out && !be->rs && dst->out_dev;
	rc = cu_enq_start(be, &q, ce);
	for (unsigned i = 0; rc == 0 && i < q.lay->nchunks; i++) {
		struct cu_piece k;

		k.i = i;
		k.c = &s->cs[i % q.lay->nstreams];
		k.nr = cu_chunk(be, q.lay, i, &k.r0, &k.ioff, &k.ooff);
		k.fft = cu_fft_row(be, s, k.r0);
		k.p0 = 0;
		k.np = q.beam_chunks ? cu_beams_pulses(be, q.lay, i, &k.p0) : 0;
		rc = cu_enq_input(be, &q, &k, ce);
		if (rc == 0)
			rc = cu_enq_compute(be, &q, &k, ce);
	}
	if (rc == 0)
		rc = cu_enq_join(be, &q, ce);
	return rc;
}
