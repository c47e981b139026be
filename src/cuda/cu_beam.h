/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_beam.h — digital beamforming on the GPU (cu_beam.cu): the definition
 * of beam.h and mvdr.h (doc/beams.md), computed on device data.
 *
 * STATE ON THE DEVICE
 *   struct cu_beam holds what does not change from CPI to CPI: the element
 *   positions, the channels' calibration g_c, the taper t_c / sum t and the
 *   beams' nominal directions (u_b, v_b) (uploaded once, at create: a
 *   reload makes a new one), and for MVDR the training rule's scratch. The
 *   weights of a CPI, W [b][c] float2 (B x C), live in a buffer of the
 *   caller's (one per CPI in flight, so that a CPI keeps its weights while
 *   the next one's are formed).
 *
 * PER CPI (no allocation, no host round trip; every step a kernel whose
 * parameters are the CPI's, so a captured graph re-points it with
 * cudaGraphExecKernelNodeSetParams)
 *   cu_beam_weights   conventional: one kernel of B x C threads forms
 *                     W[b][c] = t_c conj(a_c(u_b + u_p, v_b + v_p)) / g_c
 *                     in double from the pointing (u_p, v_p), rounded to
 *                     float: beam_set_point's weights to float rounding.
 *   cu_beam_mvdr      adaptive: the K training cells gathered, R in double,
 *                     then one block factors R_l = L L^H (FP64, complex
 *                     Cholesky in shared memory) and solves every beam
 *                     (a warp per beam) -> W. mvdr_solve's weights to float
 *                     rounding; a status word says -EDOM (R_l not positive
 *                     definite) and W is then left as it was.
 *   cu_beam_form      Y[b][p][r] = sum_c W[b][c] X[c][p][r] by the fused
 *                     kernel; cu_beam_gemm the same by cublasCgemm.
 *
 * LAYOUT
 *   X and Y are [row][pulse][range] float2 with any strides (the backend's
 *   pitched rows): element (c, p, r) at c * ch + p * pulse + r. cu_beam_gemm
 *   needs ch = P * pulse on both sides and equal pulse strides (it treats
 *   the P pulses of a row as one column run, padding included).
 *
 * THREADS
 *   One host thread at a time per struct cu_beam; its kernels may run on
 *   any number of streams at once, except cu_beam_gemm (one cuBLAS handle
 *   and workspace: one stream at a time) and cu_beam_mvdr (one scratch).
 */
#ifndef CHIRP_CU_BEAM_H
#define CHIRP_CU_BEAM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "beam.h"
#include "mvdr.h"
#ifdef __cplusplus
}
#endif

struct cu_beam;

/* The engine of cu_beam_run's product (and the benchmark's variants). */
enum cu_beam_engine { CU_BEAM_FUSED = 0, CU_BEAM_GEMM = 1 };

#ifdef __cplusplus
extern "C" {
#endif

/*
 * For the beams of s (its array, taper, nominal directions, carrier) on
 * the current CUDA device; mp non-NULL: MVDR with that training rule over
 * CPIs of pulses x samples (mvdr_create's checks). NULL with the reason
 * in err. Allocates; not for the data path.
 */
struct cu_beam *cu_beam_create(const struct beam_set *s, const struct mvdr_params *mp,
			       unsigned pulses, unsigned samples, char *err, size_t errlen);
void cu_beam_destroy(struct cu_beam *bm);

/*
 * Tests and tools: one CPI from host memory through the device and back
 * (allocates; not for the data path). x: C x P x R cf32 packed, uploaded
 * into pitched device rows (pad: extra elements per pulse row, so the
 * device strides differ from R). The pointing (az_deg, el_deg) is taken as
 * given (the caller checks visibility: beam_set_point). graph: the
 * conventional weights through a captured graph whose weights node is
 * re-pointed (cudaGraphExecKernelNodeSetParams) rather than a launch.
 * Writes w (2 B C floats, [b][c]) and, where not NULL, y_fused / y_gemm
 * (B x P x R cf32 packed) by each engine. 0; -EDOM: MVDR's R_l not
 * positive definite (w, y untouched); -EIO: a CUDA or cuBLAS failure
 * (err says which call).
 */
struct cu_beam_job {
	const float *x;
	double az_deg, el_deg;
	unsigned pad;
	int graph;
	float *w;
	float *y_fused, *y_gemm;
};
int cu_beam_run(struct cu_beam *bm, const struct cu_beam_job *j, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>

/* A CPI's input and output on the device (LAYOUT above). */
struct cu_beam_io {
	const float2 *x;
	size_t x_ch, x_pulse;
	float2 *y;
	size_t y_ch, y_pulse;
	unsigned P, R;
};

unsigned cu_beam_count(const struct cu_beam *bm);
unsigned cu_beam_channels(const struct cu_beam *bm);

/* The pointing's translation in (u, v), as beam_set_point makes it. */
void cu_beam_uv_of_pointing(double az_deg, double el_deg, double *up, double *vp);

/* Launch errors are returned as cudaGetLastError after the launch. */
/* W (B x C float2) and, where Wd is not NULL, the same in double (the
 * monopulse fit's, cu_beam_mono). */
cudaError_t cu_beam_weights(const struct cu_beam *bm, double up, double vp, float2 *W,
			    double2 *Wd, cudaStream_t st);
cudaError_t cu_beam_weights_node_set(const struct cu_beam *bm, cudaGraphExec_t gx,
				     cudaGraphNode_t node, double up, double vp, float2 *W,
				     double2 *Wd);
/* The fused kernel with bg beams per group (1..32, a power of two) and nc
 * columns per thread (1, 2, 4; with bg 32: 1, 2): the benchmark's
 * variants; cudaErrorInvalidValue for another pair. cu_beam_form_pick:
 * the pair cu_beam_form uses for B beams of C channels. */
cudaError_t cu_beam_form_variant(const float2 *W, unsigned B, unsigned C,
				 const struct cu_beam_io *io, unsigned bg, unsigned nc,
				 cudaStream_t st);
void cu_beam_form_pick(unsigned B, unsigned C, unsigned *bg, unsigned *nc);
/*
 * Every record of a CPI's list (hdr on the device, records after it, at
 * most max_det) gets radar_beam_record's beam fields: with monopulse the
 * estimate of monopulse.c from its Doppler outputs mono[3 i .. 3 i + 2]
 * (beams b - 1, b, b + 1; zeros where absent) and the CPI's weights in
 * double Wd (2 B C), else its beam's direction; for the pointing
 * (up, vp). One warp per record.
 */
struct chirp_det_header;
struct chirp_det_record;
cudaError_t cu_beam_mono(const struct cu_beam *bm, const double *Wd, double up, double vp,
			 int monopulse, const struct chirp_det_header *hdr,
			 struct chirp_det_record *rec, unsigned max_det, const float2 *mono,
			 cudaStream_t st);
/* The same launch written into a graph's kernel node captured from
 * cu_beam_mono (a CPI's pointing, up and vp, set per launch). */
cudaError_t cu_beam_mono_node_set(const struct cu_beam *bm, cudaGraphExec_t gx,
				  cudaGraphNode_t node, const double *Wd, double up, double vp,
				  int monopulse, const struct chirp_det_header *hdr,
				  struct chirp_det_record *rec, unsigned max_det,
				  const float2 *mono);
/* Which of this module's per-CPI kernels a graph's kernel node runs (its
 * cudaKernelNodeParams.func): how a captured CPI finds the nodes whose
 * pointing it sets. */
enum cu_beam_node { CU_BEAM_NODE_OTHER = 0, CU_BEAM_NODE_WEIGHTS, CU_BEAM_NODE_MONO };
enum cu_beam_node cu_beam_node_kind(const void *func);
/* MVDR: the last solve's weights in double, 2 B C ([b][c] interleaved,
 * device memory; valid where its status was 0). */
const double *cu_beam_mvdr_weights_d(const struct cu_beam *bm);
/* status: device int, 0 or -EDOM, written by every call. */
cudaError_t cu_beam_mvdr(const struct cu_beam *bm, const float2 *x, size_t x_ch, size_t x_pulse,
			 double up, double vp, float2 *W, int *status, cudaStream_t st);
cudaError_t cu_beam_form(const struct cu_beam *bm, const float2 *W, const struct cu_beam_io *io,
			 cudaStream_t st);
/* 0, -EINVAL (layout not one column run), -EIO (cuBLAS: why in *what).
 * The first call makes the cuBLAS handle and its workspace (allocates). */
int cu_beam_gemm(struct cu_beam *bm, const float2 *W, const struct cu_beam_io *io,
		 cudaStream_t st, const char **what);
#endif

#endif /* CHIRP_CU_BEAM_H */
