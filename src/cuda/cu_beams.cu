/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_beams.cu — the CUDA backend with beams (pc_setup.beams; chirp/pc.h
 * BEAMS, pc_backend.h): the beam stage in front of pulse compression, and
 * the records' beam fields at completion. The math is cu_beam.cu's.
 *
 * PER CPI, on the set's stream, before its chunk streams fork:
 *   1. the caller's input (C x P x R, cf32 or sc16) into the set's d_raw
 *      (one copy: staged input through h_in first; cf32 in device memory
 *      is read where it lies); sc16 -> cf32 into d_x (value / 32768, as
 *      the CPU backend);
 *   2. the CPI's weights into the set's d_w (and in double, for
 *      monopulse): conventional, one kernel from the pointing (u_p, v_p);
 *      MVDR, the covariance of the CPI's training cells and the FP64
 *      solve, its status into mapped host memory;
 *   3. the fused beamforming kernel X -> d_in, B x P packed cf32 rows:
 *      what compression then reads as its input (the backend's rows are
 *      B x P, its input format cf32: cu_alloc_be).
 * Beams are formed before compression (B < C makes it the cheaper side,
 * and the product is the fused kernel's, the faster engine at these
 * shapes: cu_beam.cu). The chain then runs on B rows per pulse as it runs
 * on channels (radar_setup.channels is B), its local maximum across beams
 * (cu_radar.cu, cu_beam_max), and k_records gathers each record's Doppler
 * outputs of beams b - 1, b, b + 1 into d_mono.
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
 * host memory). Not with CUDA graphs (a CPI with beams is queued call by
 * call).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cu_private.h"
#include "cu_beam.h"
extern "C" {
#include "hcopy.h"
}

/* sc16 -> cf32, value / 32768. */
__global__ void k_beam_sc16(const short2 *__restrict__ in, float2 *__restrict__ out, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		short2 v = in[i];

		out[i] = make_float2(v.x * (1.0f / 32768.0f), v.y * (1.0f / 32768.0f));
	}
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
	if (stage_in) {
		int hr = hcopy_run(be->hc, s->h_in, in, bm->in_bytes);

		if (hr < 0) {
			ce->call = "hcopy_run(input)";
			ce->len = (int)strlen(ce->call);
			ce->what = strerror(-hr);
			return -EIO;
		}
	}
	EQ(cudaMemcpyAsync(b->d_raw, src, bm->in_bytes, cudaMemcpyDefault, s->stream));
	if (bm->in_format == PC_FMT_SC16) {
		unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);

		k_beam_sc16<<<blocks, 256, 0, s->stream>>>((const short2 *)b->d_raw, b->d_x, n);
		EQK("k_beam_sc16", cudaGetLastError());
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
