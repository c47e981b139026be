/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_beams.cu — the CUDA backend with beams (pc_setup.beams; chirp/pc.h
 * BEAMS, pc_backend.h): the beam stage in front of pulse compression, and
 * the records' beam fields at completion. The math is cu_beam.cu's.
 *
 * PER CPI:
 *   1. the caller's input (C x P x R, cf32 or sc16) into the set's d_raw
 *      (staged input through h_in first; cf32 in device memory is read
 *      where it lies); sc16 -> cf32 into d_x (value / 32768, as the CPU
 *      backend);
 *   2. the CPI's weights into the set's d_w (and in double, for
 *      monopulse): conventional, one kernel from the pointing (u_p, v_p);
 *      MVDR, the covariance of the CPI's training cells and the FP64
 *      solve, its status into mapped host memory;
 *   3. the fused beamforming kernel X -> d_in, B x P packed cf32 rows:
 *      what compression then reads as its input (the backend's rows are
 *      B x P, its input format cf32: cu_alloc_be).
 * Two ways (cu_beams_by_chunk):
 *   - by chunk: the CPI is cut by pulses, one cut per chunk of the
 *     layout. A chunk's input is its pulses of every channel (one 2-D
 *     copy, C runs of np R samples), its beams are formed on its own
 *     stream as soon as they are in, and the fused kernel compresses its
 *     pulses of every beam (a group of rows per beam). Beamforming and
 *     compression then run behind the copies, and after the last byte
 *     only the last chunk's remain. The copies are all queued on the
 *     set's stream, one after the other, each chunk stream waiting for
 *     its chunk's (ev_copy): a copy queued on a chunk stream would wait
 *     behind that stream's kernels, which wait for the SMs the previous
 *     CPI's chain fills, and the copy engine would idle. The first
 *     chunk makes the CPI's weights after its copy (queued ahead of it,
 *     the kernel would hold the copy behind whatever the GPU still runs),
 *     and the other streams' first chunks wait for them (ev_w).
 *   - whole, on the set's stream before its chunk streams fork: MVDR
 *     (its weights need the whole CPI's training cells), the cuFFT engine
 *     (its plans take runs of rows, not a group per beam), a cube output
 *     (its copies out go by rows) and input in device memory (no copy to
 *     hide anything behind).
 * Beams are formed before compression (B < C makes it the cheaper side,
 * and the product is the fused kernel's, the faster engine at these
 * shapes: cu_beam.cu). The chain then runs on B rows per pulse as it runs
 * on channels (radar_setup.channels is B), its local maximum across beams
 * (cu_radar.cu, cu_beam_max), and each record's Doppler outputs of beams
 * b - 1, b, b + 1 go into d_mono (k_records gathers them from cuFFT's
 * transform, k_dop_cells sums them at the cell on k_doppler's path).
 *
 * After the list (k_records), cu_beam_mono gives every record its beam
 * fields and monopulse angle on the device, one warp per record, from the
 * CPI's weights in double: monopulse.c's estimator costs some 70 pattern
 * evaluations of C complex exponentials per detection, tens of
 * microseconds of one core, which on the host would land on the polling
 * thread once per detection; on the device the records run in parallel
 * (a list of 256 in about the time of a few host records: table (n) of
 * doc/performance.md).
 *
 * AT COMPLETION (pc_poll): an MVDR CPI whose solve failed is
 * pc_write_skipped's (its status word, written by the solve, in mapped
 * host memory). MVDR is never a CUDA graph: a CPI with beams is one only
 * by chunk (cu_graph.cu: the host queues its chunks' copies, the graph
 * waits for them, and cu_beams_graph_point sets its pointing).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cu_private.h"
#include "cu_beam.h"

/* sc16 -> cf32, value / 32768: `lines` runs of w samples, ld apart. */
__global__ void k_beam_sc16(const short2 *__restrict__ in, float2 *__restrict__ out,
			    unsigned lines, size_t w, size_t ld)
{
	size_t n = lines * w;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t line = i / w, o = line * ld + (i - line * w);
		short2 v = in[o];

		out[o] = make_float2(v.x * (1.0f / 32768.0f), v.y * (1.0f / 32768.0f));
	}
}

static cudaError_t cu_beams_sc16(const short2 *in, float2 *out, unsigned lines, size_t w,
				 size_t ld, cudaStream_t st)
{
	size_t n = lines * w;
	unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);

	k_beam_sc16<<<blocks, 256, 0, st>>>(in, out, lines, w, ld);
	return cudaGetLastError();
}

int cu_beams_create(struct cu_be *be, const struct pc_setup *su)
{
	const struct pc_beam_setup *bs = su->beams;
	struct cu_beams *bm = (struct cu_beams *)calloc(1, sizeof(*bm));
	char err[200];

	if (!bm) {
		snprintf(be->last_error, sizeof(be->last_error), "out of memory");
		return -ENOMEM;
	}
	be->bm = bm;
	bm->bs = bs;
	bm->B = bs->beams;
	bm->C = bs->channels;
	bm->P = su->pulses;
	bm->mvdr = bs->mode == PC_BEAMS_MVDR;
	bm->in_format = su->in_format;
	bm->in_bytes = su->rows * su->samples * pc_format_sample_bytes(su->in_format);
	bm->set = beam_set_create(bs->array, &bs->bp, err, sizeof(err));
	if (!bm->set) {
		snprintf(be->last_error, sizeof(be->last_error), "beams: %s", err);
		return -EINVAL;
	}
	return 0;
}

void cu_beams_free(struct cu_be *be)
{
	if (!be->bm)
		return;
	beam_set_destroy(be->bm->set);
	free(be->bm);
	be->bm = NULL;
}

int cu_beams_make_set(struct cu_be *be, struct cu_set *s)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	size_t cpr = (size_t)bm->C * bm->P * be->R, BC = (size_t)bm->B * bm->C;
	char err[200];
	int rc = 0;

	b->cb = cu_beam_create(bm->set, bm->mvdr ? &bm->bs->mvdr : NULL, bm->P, (unsigned)be->R,
			       err, sizeof(err));
	if (!b->cb) {
		snprintf(be->last_error, sizeof(be->last_error), "beams: %s", err);
		return -EIO;
	}
	CK(cudaMalloc(&b->d_raw, bm->in_bytes));
	if (bm->in_format == PC_FMT_SC16)
		CK(cudaMalloc((void **)&b->d_x, cpr * sizeof(float2)));
	CK(cudaMalloc((void **)&b->d_w, BC * sizeof(float2)));
	CK(cudaEventCreateWithFlags(&b->ev_w, cudaEventDisableTiming));
	for (unsigned i = 0; i < PC_MAX_CHUNKS; i++)
		CK(cudaEventCreateWithFlags(&b->ev_copy[i], cudaEventDisableTiming));
	if (!bm->mvdr)
		CK(cudaMalloc((void **)&b->d_wd, BC * sizeof(double2)));
	if (bm->mvdr) {
		CK(cudaHostAlloc((void **)&b->h_status, sizeof(int),
				 cudaHostAllocPortable | cudaHostAllocMapped));
		CK(cudaHostGetDevicePointer((void **)&b->hd_status, b->h_status, 0));
		*b->h_status = 0;
	}
out:
	return rc;
}

void cu_beams_free_set(struct cu_set *s)
{
	struct cu_beam_set *b = &s->b;

	cu_beam_destroy(b->cb);
	(void)cudaFree(b->d_raw);
	(void)cudaFree(b->d_x);
	(void)cudaFree(b->d_w);
	(void)cudaFree(b->d_wd);
	if (b->ev_w)
		(void)cudaEventDestroy(b->ev_w);
	for (unsigned i = 0; i < PC_MAX_CHUNKS; i++)
		if (b->ev_copy[i])
			(void)cudaEventDestroy(b->ev_copy[i]);
	if (b->h_status)
		(void)cudaFreeHost(b->h_status);
	memset(b, 0, sizeof(*b));
}

/* Step 1: the input as cf32 on the device, C x P x R packed. */
static int cu_beams_input(struct cu_be *be, struct cu_set *s, const void *in, const void *src,
			  int stage_in, int in_dev, const float2 **x, struct cu_err *ce)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	size_t n = (size_t)bm->C * bm->P * be->R;

	if (in_dev && bm->in_format == PC_FMT_CF32) {   /* read where it lies */
		*x = (const float2 *)in;
		return 0;
	}
	if (stage_in && cu_stage_in(be, s, in, 0, bm->in_bytes, ce) < 0)
		return -EIO;
	EQ(cudaMemcpyAsync(b->d_raw, src, bm->in_bytes, cudaMemcpyDefault, s->stream));
	if (bm->in_format == PC_FMT_SC16) {
		EQK("k_beam_sc16", cu_beams_sc16((const short2 *)b->d_raw, b->d_x, 1, n, n, s->stream));
		*x = b->d_x;
	} else {
		*x = (const float2 *)b->d_raw;
	}
	return 0;
}

int cu_beams_enqueue(struct cu_be *be, struct cu_set *s, const void *in, const void *src,
		     int stage_in, int in_dev, double az_deg, double el_deg, struct cu_err *ce)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	size_t pr = (size_t)bm->P * be->R;
	struct cu_beam_io io;
	const float2 *x;
	double up, vp;

	if (cu_beams_input(be, s, in, src, stage_in, in_dev, &x, ce) < 0)
		return -EIO;
	cu_beam_uv_of_pointing(az_deg, el_deg, &up, &vp);
	b->up = up;
	b->vp = vp;
	if (bm->mvdr)
		EQK("k_mvdr_gather / k_mvdr_cov / k_mvdr_solve",
		    cu_beam_mvdr(b->cb, x, pr, be->R, up, vp, b->d_w, b->hd_status, s->stream));
	else
		EQK("k_beam_weights", cu_beam_weights(b->cb, up, vp, b->d_w, b->d_wd, s->stream));
	io.x = x;
	io.x_ch = pr;
	io.x_pulse = be->R;
	io.y = (float2 *)s->d_in;
	io.y_ch = pr;
	io.y_pulse = be->R;
	io.P = bm->P;
	io.R = (unsigned)be->R;
	EQK("k_beam_form", cu_beam_form(b->cb, b->d_w, &io, s->stream));
	return 0;
}

/* Whether a CPI's beams go chunk by chunk (the header: which go whole). */
int cu_beams_by_chunk(const struct cu_be *be, int in_dev)
{
	return !be->bm->mvdr && be->fused && !be->cube_out && !in_dev;
}

/* Chunk i's pulses of nchunks, as even as they come (none when there
 * are more chunks than pulses): p0 .. p0 + the count - 1. */
unsigned cu_beams_pulses(const struct cu_be *be, const struct chunk_layout *lay, unsigned i,
			 unsigned *p0)
{
	uint64_t P = be->bm->P, n = lay->nchunks;
	unsigned a = (unsigned)((i * P + n - 1) / n), b = (unsigned)(((i + 1) * P + n - 1) / n);

	*p0 = a;
	return b - a;
}

/* Chunk i's input: its np pulses from p0 of every channel into d_raw,
 * one 2-D copy on the set's stream, then ev_copy[i] (staged, each
 * channel's run through h_in first). */
int cu_beams_copy_chunk(struct cu_be *be, struct cu_set *s, const void *in, const void *src,
			int stage_in, unsigned i, unsigned p0, unsigned np, struct cu_err *ce)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	size_t isz = pc_format_sample_bytes(bm->in_format), pr = (size_t)bm->P * be->R;
	size_t pitch = pr * isz, off = (size_t)p0 * be->R * isz, width = (size_t)np * be->R * isz;

	if (np == 0)
		return 0;
	for (unsigned c = 0; stage_in && c < bm->C; c++)
		if (cu_stage_in(be, s, in, c * pitch + off, width, ce) < 0)
			return -EIO;
	if (width == pitch)   /* every pulse: the whole input, contiguous */
		EQ(cudaMemcpyAsync(b->d_raw, src, bm->C * pitch, cudaMemcpyDefault, s->stream));
	else
		EQ(cudaMemcpy2DAsync((char *)b->d_raw + off, pitch, (const char *)src + off, pitch,
				     width, bm->C, cudaMemcpyDefault, s->stream));
	EQ(cudaEventRecord(b->ev_copy[i], s->stream));
	return 0;
}

/* Chunk i's input on its chunk stream st: the copy (unless captured: a
 * CPI graph's copies are queued by the host before its launch, and the
 * graph waits for ev_copy[i] as an external event), then, sc16, as cf32. */
int cu_beams_input_chunk(struct cu_be *be, struct cu_set *s, const void *in, const void *src,
			 int stage_in, int capture, unsigned i, unsigned p0, unsigned np,
			 cudaStream_t st, struct cu_err *ce)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	size_t pr = (size_t)bm->P * be->R;

	if (np == 0)
		return 0;
	if (!capture && cu_beams_copy_chunk(be, s, in, src, stage_in, i, p0, np, ce) < 0)
		return -EIO;
	EQ(cudaStreamWaitEvent(st, b->ev_copy[i], capture ? cudaEventWaitExternal : 0));
	if (bm->in_format == PC_FMT_SC16)
		EQK("k_beam_sc16", cu_beams_sc16((const short2 *)b->d_raw + (size_t)p0 * be->R,
						 b->d_x + (size_t)p0 * be->R, bm->C,
						 (size_t)np * be->R, pr, st));
	return 0;
}

/* A chunk's beams into d_in, on its stream st: chunk 0 first makes the
 * CPI's weights for the pointing (and records ev_w), the other streams'
 * first chunks wait for them. */
int cu_beams_form_chunk(struct cu_be *be, struct cu_set *s, unsigned i, unsigned nstreams,
			unsigned p0, unsigned np, double az_deg, double el_deg, cudaStream_t st,
			struct cu_err *ce)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	size_t pr = (size_t)bm->P * be->R, first = (size_t)p0 * be->R;
	struct cu_beam_io io;

	if (i == 0) {
		cu_beam_uv_of_pointing(az_deg, el_deg, &b->up, &b->vp);
		EQK("k_beam_weights", cu_beam_weights(b->cb, b->up, b->vp, b->d_w, b->d_wd, st));
		EQ(cudaEventRecord(b->ev_w, st));
	} else if (i < nstreams) {
		EQ(cudaStreamWaitEvent(st, b->ev_w, 0));
	}
	if (np == 0)
		return 0;
	io.x = (bm->in_format == PC_FMT_SC16 ? b->d_x : (const float2 *)b->d_raw) + first;
	io.x_ch = pr;
	io.x_pulse = be->R;
	io.y = (float2 *)s->d_in + first;
	io.y_ch = pr;
	io.y_pulse = be->R;
	io.P = np;
	io.R = (unsigned)be->R;
	EQK("k_beam_form", cu_beam_form(b->cb, b->d_w, &io, st));
	return 0;
}

/* Compression's job for a chunk's pulses: np rows of each beam's (a group
 * per beam) from d_in to the chain's fft rows. */
void cu_beams_job_chunk(const struct cu_be *be, const struct cu_set *s, unsigned p0,
			unsigned np, struct cu_fjob *j)
{
	size_t P = be->bm->P;

	j->in = (const float2 *)s->d_in + (size_t)p0 * be->R;
	j->istride = be->R;
	j->igroup = P * be->R;
	j->out = cu_fft_row(be, s, p0);
	j->ostride = be->pitch_elems;
	j->ogroup = P * be->pitch_elems;
	j->rows = np;
	j->groups = be->bm->B;
}

/* The pointing (az_deg, el_deg) into a CPI graph of set s: the weights
 * node (wn) and the monopulse node (mn, NULL without a detection list) as cu_beams_form_chunk and
 * cu_beams_mono would launch them for it. */
cudaError_t cu_beams_graph_point(struct cu_be *be, struct cu_set *s, cudaGraphExec_t gx,
				 cudaGraphNode_t wn, cudaGraphNode_t mn, double az_deg,
				 double el_deg)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	const struct chirp_det_header *hdr = (const struct chirp_det_header *)s->r.d_det;
	cudaError_t e;

	cu_beam_uv_of_pointing(az_deg, el_deg, &b->up, &b->vp);
	e = cu_beam_weights_node_set(b->cb, gx, wn, b->up, b->vp, b->d_w, b->d_wd);
	if (e == cudaSuccess && mn)   /* mn: NULL without a list */
		e = cu_beam_mono_node_set(b->cb, gx, mn, (const double *)b->d_wd, b->up, b->vp,
					  bm->bs->monopulse, hdr,
					  (struct chirp_det_record *)(hdr + 1), be->rs->max_det,
					  s->r.d_mono);
	return e;
}

int cu_beams_skipped(const struct cu_be *be, const struct cu_set *s)
{
	return be->bm && be->bm->mvdr && *s->b.h_status != 0;
}

/* pc_write_skipped's results in the CPI's output and list (host memory;
 * device memory: its bytes set to 0xff, a quiet NaN in every float). */
int cu_beams_write_skipped(struct cu_be *be, struct cu_set *s)
{
	const struct radar_setup *rs = be->rs;
	int rc = 0;

	if (s->out && be->out_bytes) {
		if (s->out_dev) {
			CK(cudaMemset(s->out, 0xff, be->out_bytes));
		} else {
			float *o = (float *)s->out;

			for (size_t i = 0; i < be->out_bytes / sizeof(float); i++)
				o[i] = NAN;
		}
	}
	if (s->det && !s->det_dev) {
		struct chirp_det_header *h = (struct chirp_det_header *)s->det;

		memset(h, 0, sizeof(*h));
		h->magic = CHIRP_DET_MAGIC;
		h->version = CHIRP_DET_VERSION;
		h->record_bytes = sizeof(struct chirp_det_record);
		h->mode = s->mode;
		h->flags = CHIRP_DET_SKIPPED;
		h->doppler_bins = rs ? rs->nd : 0;
		h->range_gates = (uint32_t)be->R;
	}
out:
	return rc;
}

/* After k_records: every record's beam fields and angle, on the device
 * (cu_beam_mono: one warp per record, no host work at completion). */
int cu_beams_mono(struct cu_be *be, struct cu_set *s, struct cu_err *ce)
{
	struct cu_beams *bm = be->bm;
	struct cu_beam_set *b = &s->b;
	const struct chirp_det_header *hdr = (const struct chirp_det_header *)s->r.d_det;
	const double *wd = bm->mvdr ? cu_beam_mvdr_weights_d(b->cb) : (const double *)b->d_wd;

	EQK("k_beam_mono", cu_beam_mono(b->cb, wd, b->up, b->vp, bm->bs->monopulse, hdr,
					 (struct chirp_det_record *)(hdr + 1), be->rs->max_det,
					 s->r.d_mono, s->stream));
	return 0;
}
