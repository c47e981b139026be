/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_private.h — what the files of the CUDA (cuFFT) pulse-compression
 * backend share; nothing outside src/cuda/ includes it. The backend's only
 * exports are pc_cuda_probe and pc_cuda_ops (pc_backend.h).
 *
 * It computes exactly the definition in chirp/pc.h, with the filter pc.c
 * hands over in struct pc_setup. The files, by concern:
 *   cu_error.cu     failures: cu_fail, the CK/CKF checks, event queries
 *   cu_kernels.cu   the pad / multiply / output kernels and their launches
 *   cu_fused.cu     the same compression as one kernel per row (its own
 *                   shared-memory FFT), when nfft allows (tune.cuda_fused)
 *   cu_host.cu      host memory: registration for DMA, pinned staging
 *   cu_chunks.cu    the chunk layouts (chunk_policy.c) and the pick per CPI
 *   cu_enqueue.cu   one CPI's calls on a set (call by call, or captured)
 *   cu_graph.cu     a CPI as one CUDA graph, its copies re-pointed per CPI
 *   cu_radar.cu     the radar chain after compression (MTI, Doppler FFT,
 *                   map, CFAR, local maxima, the detection list)
 *   cu_beam.cu      beams on device data (cu_beam.h): weights, MVDR, the
 *                   product, each record's monopulse angle
 *   cu_beams.cu     the backend with beams: the beam stage before
 *                   compression, skipped MVDR CPIs
 *   cu_setup.cu     probe, create, destroy
 *   cu_pipeline.cu  submit, poll, info, and the ops table pc_cuda_ops
 *
 * DATA PATH (one CPI)
 *   Every CPI runs on one "set": its streams, device buffers, cuFFT plans
 *   and events. CPI k uses set k mod N (N = streams, the depth). Within a
 *   CPI, the rows are cut into chunks (cu_chunks.cu); per chunk:
 *
 *     H2D    cf32: cudaMemcpy2DAsync from the packed slot (rows x R
 *            float2) straight into the pitched FFT rows d_fft (nfft float2
 *            per row, the pitch from cudaMallocPitch, never assumed); in a
 *            graph (cu_graph.cu) 1-D into a packed d_in, spread by the
 *            packed pad kernel. sc16: cudaMemcpyAsync into a packed d_in
 *            (rows x R short2: half the PCIe bytes). Straight from the
 *            ring slot when it lies in memory registered with
 *            cudaHostRegister, else copied into a pinned staging buffer
 *            first ("copy" staging), chunk by chunk just before the chunk's
 *            H2D, by staging_threads threads (hcopy.h). ev_in is recorded
 *            after every chunk's H2D: the input slot may then be reused.
 *     pad    cf32: in place, zero [R, nfft) of each row and count rows
 *            holding NaN/Inf (one atomicAdd per bad row). sc16: d_in ->
 *            d_fft, value / 32768 as the CPU backend, zero [R, nfft).
 *     FFT    cufftExecC2C forward, in place, batched over the chunk's rows
 *            (plans made at create: idist = pitch / sizeof(float2)).
 *     mul    d_fft[r][f] *= filt[f], filt the CPI's mode's filter (g_m
 *            conj(H_m) / nfft): every mode's filter is uploaded once, at
 *            create, into d_filts ([nfilts][nfft]); the kernel is given
 *            the one of the CPI (call by call: at its launch; in a graph:
 *            the multiply nodes' parameter, updated when the mode changes,
 *            cu_graph.cu).
 *     IFFT   cufftExecC2C inverse, in place.
 *     out    gates 0..R-1 -> d_out packed rows x R, in the output mode
 *            (complex / magnitude / power_db): only the bytes asked for
 *            cross PCIe.
 *     D2H    d_out -> output slot (registered) or pinned staging (copied to
 *            the slot in pc_poll, by the same threads); then the
 *            non-finite row count is published (cu_nf_publish) to mapped
 *            host memory. ev_out is recorded after every chunk's D2H and
 *            the publish: the output slot and the count are then complete.
 *
 *   Fused (be->fused, cu_fused.cu): pad, FFT, mul, IFFT and out are one
 *   kernel that reads the chunk's packed input rows (d_in: every input
 *   goes there 1-D, cf32 too) and writes d_out, or the fft rows for the
 *   radar chain (only then does a fused set have d_fft). Input and output
 *   that are device memory are read and written in place: no copy in or
 *   out, one launch for the whole CPI.
 *
 *   With the radar chain (pc_setup.radar), the chunks stop after the IFFT
 *   unless the output is a cube (complex / magnitude / power_db: out and
 *   D2H per chunk as above), and the set's stream, once every chunk is
 *   done (the Doppler FFT needs every pulse), runs the chain on the
 *   compressed rows still in d_fft (cu_radar.cu) and copies back the map
 *   (map output modes) and the detection list (cfar) before ev_out; a
 *   CPI that asks for a max-hold snapshot of its maps has it there too
 *   when queued call by call, or right after its graph (then ev_snap).
 *
 *   Sets run on their own streams, so the H2D of CPI k+1 overlaps the FFTs
 *   of k and the D2H of k-1 (the copy engines of each direction run
 *   independently). No device-wide synchronisation, no allocation after
 *   create (the pinned staging pool is allocated once, the first time an
 *   unregistered buffer is seen, unless staging = copy made it at create).
 *
 * FAILURE
 *   Every CUDA and cuFFT call is checked. A failure records "call: error
 *   string" (pc_last_error), logs it once, and marks the backend failed:
 *   every later submit/poll returns -EIO. There is no CPU fallback here;
 *   the daemon decides (and says) what to do. pc_inject_fault makes the
 *   next submit launch a kernel with an invalid configuration, so the real
 *   error path is exercised.
 *
 * THREADS
 *   One caller thread at a time (pc.h). cudaSetDevice is called at the top
 *   of every entry point, because the current device is per host thread
 *   and the daemon's data thread is not the thread that created us.
 */
#ifndef CHIRP_CU_PRIVATE_H
#define CHIRP_CU_PRIVATE_H

#include <cuda_runtime.h>
#include <cufft.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "pc_backend.h"
#include "chunk_policy.h"
#include "names.h"

struct hcopy;
struct cu_beam;
struct chirp_det_header;

#define CU_THREADS       256     /* threads per block of our kernels       */
#define CU_MAX_REGIONS   16      /* host regions pc_register_host accepts   */
#define CU_WAIT_SLICE_MS 1000    /* an endless wait re-queries this often  */

/*
 * A set's work is split into row chunks over CU_CHUNK_STREAMS streams of its
 * own, so even one CPI keeps both copy directions busy (cu_chunks.cu).
 */
#define CU_CHUNK_STREAMS 3

/* The layouts of a backend (cu_chunks.cu): the depth's, the idle one, and
 * (fused) the whole CPI in one chunk for input in device memory. */
enum { CU_LAY_DEPTH, CU_LAY_IDLE, CU_LAY_WHOLE, CU_NLAY };

/* A host region this pc may DMA from or to (pc_register_host). */
struct cu_region {
	char *base;
	size_t len;
	int owned;               /* holds a reference on a process-wide
				    registration (cu_host.cu)             */
};

struct cu_chunk_stream {
	cudaStream_t stream;
	/* per layout: chunk_rows / rem_rows rows batched (an idle layout
	 * equal to the depth's shares its plans: have_* 0 there) */
	cufftHandle plan[CU_NLAY], plan_rem[CU_NLAY];
	int have_plan[CU_NLAY], have_plan_rem[CU_NLAY];
	cudaEvent_t ev_h2d, ev_done; /* its last H2D copy / all its work done  */
	int have_ev_h2d, have_ev_done;
};

/*
 * A set's radar chain buffers (cu_radar.cu), allocated at create when the
 * chain is on; layouts [map][doppler bin][gate], maps = 1 (integrate) or C.
 */
struct cu_radar_set {
	float2 *d_zin;           /* [Nd][C][R]: MTI x window in pulses
				    0..P'-1; pulses P'..Nd-1 zeroed once at
				    create (the FFT is out of place, so the
				    padding is never written again)      */
	float2 *d_dop;           /* [Nd][C][R]: the Doppler transform, on
				    cuFFT's path only (k_doppler keeps none) */
	cufftHandle plan;        /* Nd-point FFTs along pulses, on s->stream */
	int have_plan;
	float *d_map;            /* M [C][Nd][R], zero Doppler in the middle */
	float *d_imap;           /* I [Nd][R] (cfar on I), else NULL        */
	float *d_sf, *d_st;      /* ca/go/so: per cell the Doppler window's
				    full column sum and its training part
				    (guard rows left out) [maps][Nd][R]    */
	float *d_noise;          /* CFAR noise estimate [maps][Nd][R]      */
	unsigned char *d_mask;   /* 1: a detection [maps][Nd][R]           */
	unsigned *d_rowcnt;      /* detections per map row [maps x Nd]     */
	unsigned *d_rowoff;      /* their exclusive scan                   */
	unsigned long long *d_cross; /* crossings of this CPI              */
	void *d_det;             /* the list as the device writes it
				    (det_bytes)                            */
	float2 *d_mono;          /* beams: per record slot the Doppler
				    outputs of beams b-1, b, b+1 at its cell
				    (k_records or k_dop_cells, for
				    cu_beam_mono), max_det x 3 */
	void *h_det;             /* pinned staging for it (copy staging)   */
	float *d_snap;           /* snapshots (be->snap_cells floats, else
				    NULL): k_maxhold writes the selected
				    maps' cells here, back to back       */
	float *h_snap;           /* pinned: their one copy back, taken to
				    the caller's buffer in pc_poll        */
	cudaEvent_t ev_snap;     /* after that copy, for a snapshot queued
				    behind its CPI's graph               */
};

/* Beams (cu_beams.cu): what a set keeps for its CPI's beam stage. */
struct cu_beam_set {
	struct cu_beam *cb;      /* the weights' kernels and MVDR's scratch  */
	void *d_raw;             /* the caller's input, C x P x R samples    */
	float2 *d_x;             /* sc16: it as cf32                         */
	float2 *d_w;             /* the CPI's weights, B x C                 */
	double2 *d_wd;           /* conventional: the same in double (mvdr:
				    cu_beam_mvdr_weights_d)                 */
	int *h_status, *hd_status;   /* mvdr: the solve's status, mapped     */
	double up, vp;           /* the CPI's pointing in (u, v)             */
	cudaEvent_t ev_w;        /* by chunk: the CPI's weights are made     */
	cudaEvent_t ev_copy[PC_MAX_CHUNKS];   /* by chunk: chunk i's input in  */
};

/* Beams in the backend (pc_setup.beams), NULL without. */
struct cu_beams {
	const struct pc_beam_setup *bs;
	struct beam_set *set;    /* the host's copy (geometry for cu_beam)   */
	unsigned B, C, P;
	int mvdr;
	enum pc_format in_format;   /* the caller's input (C x P rows)       */
	size_t in_bytes;
};

struct cu_set {
	cudaStream_t stream;     /* orders CPIs on this set; ev_in, ev_out */
	struct cu_chunk_stream cs[CU_CHUNK_STREAMS];
	cudaEvent_t ev_start;    /* chunk streams wait for it              */
	int have_ev_start;
	void *d_in;              /* packed input rows: sc16 always, cf32 with
				    graphs (their input copy must be 1-D) */
	float2 *d_fft;           /* rows x pitch bytes, nfft used per row;
				    NULL for the fused kernel without the
				    chain and with a cube output (nothing
				    uses them there: cu_alloc_fft_rows) */
	void *d_out;             /* rows * R * out_sample_bytes, packed    */
	unsigned *d_nonfinite;   /* rows with NaN/Inf in this CPI: zero at
				    its start (zeroed at create, and by the
				    publish that ends every CPI)           */
	unsigned *h_nonfinite;   /* mapped pinned word the publish writes  */
	unsigned *hd_nonfinite;  /* the same word, as the device sees it   */
	void *h_in, *h_out;      /* pinned staging ("copy" staging only)   */
	cudaEvent_t ev_in, ev_out;
	int have_ev_in, have_ev_out;

	/* Per layout, the whole CPI as one graph, made on first use
	 * (cu_graph.cu). g_state 0 not made yet, 1 made, -1 could not be
	 * made (the call-by-call path). */
	cudaGraph_t g[CU_NLAY];
	cudaGraphExec_t gx[CU_NLAY];
	int g_state[CU_NLAY];
	cudaGraphNode_t g_h2d[CU_NLAY][PC_MAX_CHUNKS];   /* chunk i's input copy  */
	cudaGraphNode_t g_d2h[CU_NLAY][PC_MAX_CHUNKS];   /* chunk i's output copy */
	cudaGraphNode_t g_mul[CU_NLAY][PC_MAX_CHUNKS];   /* chunk i's multiply    */
	cudaGraphNode_t g_map[CU_NLAY];   /* the map's copy back (map modes)   */
	cudaGraphNode_t g_det[CU_NLAY];   /* the detection list's copy back    */
	cudaGraphNode_t g_bw[CU_NLAY];    /* beams: the weights kernel         */
	cudaGraphNode_t g_bmono[CU_NLAY]; /* beams: the monopulse kernel (NULL
					     without a list)                */
	unsigned g_filt[CU_NLAY];   /* filter the multiply nodes of gx hold   */
	double g_az[CU_NLAY], g_el[CU_NLAY];   /* beams: the pointing its
					     weights and monopulse hold   */
	cudaEvent_t ev_fork;     /* capture only: the chunk streams fork off it */
	int have_ev_fork;

	/* The CPI in flight on this set. */
	uint64_t tag;
	uint32_t mode;           /* its mode's id (pc_done.mode)           */
	unsigned nchunks;        /* row chunks it was cut into             */
	int h2d_done;            /* ev_in seen complete (staged input: in_done
				    comes at submit, its DMA later)      */
	void *out;               /* caller's output (staged: copy in poll) */
	int stage_out;
	void *det;               /* caller's detection list, or NULL       */
	int stage_det;           /* det comes through r.h_det (in poll)    */
	struct cu_radar_set r;
	struct cu_beam_set b;    /* with beams                             */
	int out_dev, det_dev;    /* out / det are device memory            */
	int in_done;             /* input consumed (staged: at submit)     */
	int in_reported, out_reported;
	float *snap;             /* caller's snapshot cells, or NULL (none) */
	size_t snap_n;           /* floats of it                           */
	int snap_tail;           /* the snapshot runs after the CPI's graph:
				    complete at ev_snap, not ev_out       */
};

struct cu_be {
	int dev;
	char device[128];
	int numa_node;

	size_t rows, R, nfft, pitch_elems;   /* rows: compression's, C x P, or
					       B x P with beams            */
	struct chunk_layout lay[CU_NLAY];  /* CU_LAY_DEPTH, CU_LAY_IDLE     */
	int have_idle;           /* lay[CU_LAY_IDLE] differs from the depth's */
	unsigned waiting;        /* pc_queue_hint: CPIs behind the next submit */
	unsigned ncs;            /* chunk streams made (max of both layouts) */
	enum pc_format in_format;   /* compression's input (beams: cf32)     */
	enum pc_output out_mode;
	size_t in_bytes, out_bytes;   /* in_bytes: compression's input rows
					 (beams: the caller's is bm->in_bytes);
					 out_bytes: a map mode's C x Nd x R
					 floats, 0 with PC_OUT_NONE          */
	int cube_out;            /* out_mode is a cube (complex, magnitude,
				    power_db): per chunk, as without the
				    chain                                 */

	/* The radar chain (pc_setup.radar, owned by pc.c, valid for our
	 * lifetime), or NULL; its per-gate tables on the device. */
	const struct radar_setup *rs;
	struct cu_beams *bm;     /* beams (cu_beams.cu), or NULL           */
	float *d_win;            /* [P'] window x g_d                      */
	float2 *d_dtw;           /* k_doppler's twiddles e^{-2 pi i m / Nd},
				    m < Nd / 2, or NULL: cuFFT's path       */
	float *d_alpha, *d_norm; /* [R]                                    */
	unsigned *d_rank;        /* [R] (os)                               */
	size_t det_bytes;        /* rs->det_bytes, 0 without cfar          */
	size_t snap_cells;       /* pc_setup.snapshot_cells: r.d_snap and
				    r.h_snap per set (0: none)           */

	float2 *d_filts;         /* nfilts x nfft: filter i at i * nfft     */
	unsigned nfilts;
	struct cu_set *sets;
	unsigned nsets;
	unsigned head, count;    /* in-flight CPIs: sets head .. head+count-1 */

	enum pc_staging staging;
	struct cu_region regions[CU_MAX_REGIONS];
	unsigned nregions;
	int reg_failed;          /* a registration fell back to copies     */
	int have_staging;        /* pinned staging buffers exist           */
	struct hcopy *hc;        /* copies to/from them (with have_staging) */
	cpu_set_t bind_cpus;     /* pc_bind_threads: for hc's threads, also */
	int have_bind;           /* when hc is made after the call          */
	unsigned staging_threads;   /* hc's threads, from pc_setup         */
	int staging_nt;          /* hc copies with streaming stores
				    (tune.staging_nt; else memcpy)         */
	int warned_unregistered;
	uint64_t staged_cpis;    /* CPIs that went through staging copies  */

	/* Completion notification (host functions on two streams). */
	cudaStream_t notify_in, notify_out;
	int have_notify_in, have_notify_out;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int have_sync;
	uint64_t notify_seq;     /* under mu                                */

	unsigned spin_us;        /* tail spin in pc_poll (tune.cuda_spin_us) */
	int busy_poll;           /* caller polls: no host functions, pc_poll
				    with a timeout polls instead of sleeping */
	struct cu_fused *fused;  /* the one-kernel compression (cu_fused.cu),
				    or NULL: pad, cuFFT, multiply, cuFFT,
				    output                                 */
	char fft_engine[64];     /* pc_info.fft_engine                     */
	int graphs;              /* CPIs from registered memory run as one
				    CUDA graph (tune.cuda_graphs)          */
	uint64_t graph_cpis;     /* CPIs launched as a graph               */
	int failed;
	int fault_armed;
	char last_error[256];
};

/* Row r0 of set s's FFT rows, or NULL where the set has none (d_fft NULL:
 * no pointer arithmetic on it). */
static inline float2 *cu_fft_row(const struct cu_be *be, const struct cu_set *s, size_t r0)
{
	return s->d_fft ? s->d_fft + r0 * be->pitch_elems : NULL;
}

/* ---- cu_error.cu ----------------------------------------------------------- */

const char *cu_cufft_str(cufftResult r);

/*
 * Record the first failure: "call: what", log it once, mark the backend
 * failed. cu_fail keeps call's function name only (up to "(" or "<");
 * cu_fail_n prints its first n characters.
 */
void cu_fail(struct cu_be *be, const char *call, const char *what);
void cu_fail_n(struct cu_be *be, const char *call, size_t n, const char *what);

/* Event ev: 1 done, 0 not yet, -EIO failed (recorded as what). */
int cu_query(struct cu_be *be, cudaEvent_t ev, const char *what);

/* Check a CUDA / cuFFT call in a function with `be`, `int rc` and `out:`. */
#define CK(call)                                                             \
	do {                                                                 \
		cudaError_t e_ = (call);                                     \
		if (e_ != cudaSuccess) {                                     \
			cu_fail(be, #call, cudaGetErrorString(e_));          \
			rc = -EIO;                                           \
			goto out;                                            \
		}                                                            \
	} while (0)

#define CKF(call)                                                            \
	do {                                                                 \
		cufftResult r_ = (call);                                     \
		if (r_ != CUFFT_SUCCESS) {                                   \
			cu_fail(be, #call, cu_cufft_str(r_));                \
			rc = -EIO;                                           \
			goto out;                                            \
		}                                                            \
	} while (0)

/* ---- cu_kernels.cu --------------------------------------------------------- */

/*
 * Launch one kernel over rows rows on st; each returns cudaGetLastError()
 * after the launch (a launch reports its failure there). pe: the pitch of
 * the fft rows in elements.
 *   pad_cf32         fft rows already hold R samples: zero [R, nfft), count
 *                    rows with NaN/Inf into *nonfinite;
 *   pad_cf32_packed  in (packed rows x R) -> fft rows, as pad_cf32;
 *   pad_sc16         in (packed rows x R short2) -> fft rows as value/32768;
 *   cmul             fft[r][f] *= filt[f];
 *   cmul_node_set    the parameters of a graph's multiply node (captured
 *                    from cu_cmul on rows rows) set to filter filt, as
 *                    cu_cmul would launch it;
 *   out              gates 0..R-1 of each fft row -> packed out, in mode;
 *   nf_publish       one thread: *h = *d (h mapped host memory, as the
 *                    device sees it), then *d = 0 for the next CPI. A
 *                    kernel's store to mapped memory, not a copy: a 4-byte
 *                    D2H per CPI would cost the busiest copy engine a
 *                    copy's fixed time between two CPIs' bulk copies;
 *   fault            an invalid launch (pc_inject_fault), never runs.
 */
cudaError_t cu_pad_cf32(float2 *fft, size_t pe, unsigned R, unsigned nfft, unsigned *nonfinite,
			unsigned rows, cudaStream_t st);
cudaError_t cu_pad_cf32_packed(const float2 *in, float2 *fft, size_t pe, unsigned R,
			       unsigned nfft, unsigned *nonfinite, unsigned rows, cudaStream_t st);
cudaError_t cu_pad_sc16(const short2 *in, float2 *fft, size_t pe, unsigned R, unsigned nfft,
			unsigned rows, cudaStream_t st);
cudaError_t cu_cmul(float2 *fft, size_t pe, unsigned nfft, unsigned rows, const float2 *filt,
		    cudaStream_t st);
cudaError_t cu_cmul_node_set(cudaGraphExec_t gx, cudaGraphNode_t node, float2 *fft, size_t pe,
			     unsigned nfft, unsigned rows, const float2 *filt);
cudaError_t cu_out(enum pc_output mode, const float2 *fft, size_t pe, unsigned R, void *out,
		   unsigned rows, cudaStream_t st);
cudaError_t cu_nf_publish(unsigned *d, unsigned *h, cudaStream_t st);
cudaError_t cu_fault(cudaStream_t st);

/* cudaFuncGetAttributes of one of our kernels: fails when this build has
 * no code for the current device. */
cudaError_t cu_kernels_attributes(struct cudaFuncAttributes *fa);

/* ---- cu_fused.cu ----------------------------------------------------------- */

#define CU_FMAX_PASS 16          /* passes of the fused kernel's FFT        */
struct cu_fused;

/* One launch of the fused kernel: groups of rows rows from in (row stride
 * istride input samples) to out (row stride ostride samples of mode:
 * complex for the radar chain's fft rows), group g's rows igroup / ogroup
 * samples further on (a pulse chunk of beams: a run of rows in each
 * beam's), filter number filt, rows with NaN/Inf counted into *nonfinite
 * (cf32). cu_fused_job makes a chunk's (cu_enqueue.cu). */
struct cu_fjob {
	const void *in;
	void *out;
	size_t istride, ostride;
	size_t igroup, ogroup;
	enum pc_output mode;
	unsigned filt;           /* the filter's (mode's) index             */
	unsigned *nonfinite;
	unsigned rows, groups;
};

/*
 * cu_fused_create: be->fused (or NULL for cuFFT) and be->fft_engine, by
 * tune.cuda_fused, with its copy of the filters filts (pc_setup.filts); -ENOTSUP with why set when it is ON and nfft cannot be
 * fused, -EIO on a CUDA failure. cu_fused_launch: the launch on st (its
 * error, as cudaGetLastError after a launch). cu_fused_node_set: a graph
 * node captured from cu_fused_launch re-pointed at job j (its filter).
 */
int cu_fused_create(struct cu_be *be, enum pc_switch want, const float *filts, char *why,
		    size_t whylen);
void cu_fused_free(struct cu_be *be);
cudaError_t cu_fused_launch(const struct cu_be *be, const struct cu_fjob *j, cudaStream_t st);
cudaError_t cu_fused_node_set(const struct cu_be *be, cudaGraphExec_t gx, cudaGraphNode_t node,
			      const struct cu_fjob *j);

/* ---- cu_host.cu ------------------------------------------------------------ */

struct cu_err;
int cu_alloc_staging(struct cu_be *be);
int cu_stage_in(struct cu_be *be, struct cu_set *s, const void *in, size_t off, size_t len,
		struct cu_err *ce);
int cu_register_host(void *p, void *base, size_t len);
void cu_unregister_host(void *p, void *base);
void cu_release_regions(struct cu_be *be);   /* cu_destroy: every region */
int cu_dma_ok(struct cu_be *be, const void *p, size_t len, int *is_device);

/* ---- cu_chunks.cu ---------------------------------------------------------- */

int cu_choose_chunks(struct cu_be *be, const struct pc_tuning *tune);
unsigned cu_chunk(const struct cu_be *be, const struct chunk_layout *lay, unsigned i,
		  size_t *r0, size_t *ioff, size_t *ooff);
int cu_pick_layout(struct cu_be *be, int in_dev);

/* ---- cu_enqueue.cu --------------------------------------------------------- */

/*
 * The first failed call of cu_enqueue: its text and the error's. The
 * caller decides what it means (the stream path: the backend has failed;
 * a capture: no graph, the stream path instead).
 */
struct cu_err {
	const char *call, *what;
	int len;                 /* of call, to print: a kernel's name whole,
				    a runtime call up to its "(" (cu_fail) */
};

/* In a step that fills a struct cu_err *ce: a failed call recorded, -EIO
 * returned (EQ: a runtime call; EQF: cuFFT; EQK: a kernel launch, reported
 * by the kernel's name). */
#define EQ(x)                                                                \
	do {                                                                 \
		cudaError_t e_ = (x);                                        \
		if (e_ != cudaSuccess) {                                     \
			ce->call = #x;                                       \
			ce->len = (int)strcspn(#x, "(<");                    \
			ce->what = cudaGetErrorString(e_);                   \
			return -EIO;                                         \
		}                                                            \
	} while (0)
#define EQF(x)                                                               \
	do {                                                                 \
		cufftResult r_ = (x);                                        \
		if (r_ != CUFFT_SUCCESS) {                                   \
			ce->call = #x;                                       \
			ce->len = (int)strcspn(#x, "(<");                    \
			ce->what = cu_cufft_str(r_);                         \
			return -EIO;                                         \
		}                                                            \
	} while (0)
#define EQK(name, x)                                                         \
	do {                                                                 \
		cudaError_t e_ = (x);                                        \
		if (e_ != cudaSuccess) {                                     \
			ce->call = name;                                     \
			ce->len = (int)strlen(name);                         \
			ce->what = cudaGetErrorString(e_);                   \
			return -EIO;                                         \
		}                                                            \
	} while (0)

/* Where one CPI's results go: out and det (or the set's pinned staging). */
struct cu_dst {
	void *out;               /* out_bytes, NULL when 0                  */
	void *det;               /* det_bytes, NULL without cfar            */
	int in_dev, out_dev;     /* the caller's input / out is device
				    memory (the fused kernel reads / writes
				    it in place)                          */
	double az_deg, el_deg;   /* beams: the CPI's pointing              */
	const struct pc_snap_cmd *snap;  /* its snapshot, or NULL: none (never
				    captured: behind a graph it is
				    cu_radar_snap_tail's)                 */
};

int cu_enqueue(struct cu_be *be, struct cu_set *s, int li, unsigned filt, const void *in,
	       const void *src, const struct cu_dst *dst, int stage_in, int capture,
	       struct cu_err *ce);

unsigned cu_fused_job(const struct cu_be *be, const struct cu_set *s,
		      const struct chunk_layout *lay, unsigned i, int beam_chunk,
		      const void *in_dev, void *out_dev, unsigned filt, struct cu_fjob *j);

/* ---- cu_graph.cu ----------------------------------------------------------- */

int cu_graph_ok(const struct cu_be *be, const struct cu_set *s, int li, int staged,
		int on_device);
int cu_graph_launch(struct cu_be *be, struct cu_set *s, int li, unsigned filt, const void *in,
		    const struct cu_dst *dst);
void cu_graph_free(struct cu_set *s);

/* ---- cu_radar.cu ----------------------------------------------------------- */

/*
 * cu_radar_create: the chain's shared tables (window, alpha, norm, rank)
 * on the device; cu_radar_make_set: set s's buffers and Doppler plan;
 * cu_radar_free_set / cu_radar_free: their release (errors ignored, as in
 * cu_destroy). 0 or a negative errno with the failure recorded.
 * cu_radar_enqueue: on s->stream, after every chunk of the CPI is done,
 * the chain from d_fft to the map (and dst->out for a map mode) and the
 * detection list (and its copy to dst->det), and dst->snap's max-hold
 * into r.d_snap with its one copy to r.h_snap. cu_radar_stamp: in pc_poll,
 * once the CPI is complete, the list's staged copy to the caller and the
 * CPI's mode in its header. cu_radar_make_snap: set s's snapshot buffers
 * (be->snap_cells floats on the device and pinned; freed with the set's);
 * cu_radar_snap_done: the snapshot's cells to the caller (every cell
 * -INFINITY for a skipped CPI).
 */
int cu_radar_create(struct cu_be *be);
int cu_radar_make_set(struct cu_be *be, struct cu_set *s);
void cu_radar_free_set(struct cu_set *s);
void cu_radar_free(struct cu_be *be);
int cu_radar_enqueue(struct cu_be *be, struct cu_set *s, const struct cu_dst *dst,
		     struct cu_err *ce);
int cu_radar_stamp(struct cu_be *be, struct cu_set *s);
int cu_radar_make_snap(struct cu_be *be, struct cu_set *s);
/* A snapshot behind the CPI's graph on s->stream: its kernel, its copy,
 * then ev_snap (cu_submit_cpi; the call-by-call path has it before ev_out). */
int cu_radar_snap_tail(struct cu_be *be, struct cu_set *s, const struct pc_snap_cmd *q,
		       struct cu_err *ce);
void cu_radar_snap_done(struct cu_set *s, int skipped);

/* ---- cu_beams.cu ------------------------------------------------------------ */

/*
 * cu_beams_create: be->bm from pc_setup.beams (its host beam_set);
 * cu_beams_make_set: set s's beam buffers; the frees (errors ignored).
 * cu_beams_enqueue: the CPI's beam stage on s->stream (input, weights for
 * the pointing or MVDR, the product into s->d_in), whole, before the
 * chunks; or, where cu_beams_by_chunk, chunk by chunk on its stream:
 * cu_beams_pulses (the chunk's pulses), cu_beams_copy_chunk (its copy
 * into d_raw on the set's stream), cu_beams_input_chunk (that copy, or in
 * a capture the wait for it, on the chunk's stream), cu_beams_form_chunk
 * (its beams into d_in; the first makes the CPI's weights) and
 * cu_beams_job_chunk (compression's job for its rows of every beam);
 * cu_beams_graph_point (a CPI graph's weights and monopulse nodes set to
 * the CPI's pointing); cu_beams_mono: after
 * k_records, every record's beam fields and monopulse angle. At
 * completion: cu_beams_skipped (MVDR found no weights),
 * cu_beams_write_skipped (pc_write_skipped's results). 0 or a negative
 * errno with the failure recorded (enqueue, mono: in *ce).
 */
int cu_beams_create(struct cu_be *be, const struct pc_setup *su);
void cu_beams_free(struct cu_be *be);
int cu_beams_make_set(struct cu_be *be, struct cu_set *s);
void cu_beams_free_set(struct cu_set *s);
int cu_beams_enqueue(struct cu_be *be, struct cu_set *s, const void *in, const void *src,
		     int stage_in, int in_dev, double az_deg, double el_deg, struct cu_err *ce);
int cu_beams_by_chunk(const struct cu_be *be, int in_dev);
unsigned cu_beams_pulses(const struct cu_be *be, const struct chunk_layout *lay, unsigned i,
			 unsigned *p0);
int cu_beams_copy_chunk(struct cu_be *be, struct cu_set *s, const void *in, const void *src,
			int stage_in, unsigned i, unsigned p0, unsigned np, struct cu_err *ce);
int cu_beams_input_chunk(struct cu_be *be, struct cu_set *s, const void *in, const void *src,
			 int stage_in, int capture, unsigned i, unsigned p0, unsigned np,
			 cudaStream_t st, struct cu_err *ce);
int cu_beams_form_chunk(struct cu_be *be, struct cu_set *s, unsigned i, unsigned nstreams,
			unsigned p0, unsigned np, double az_deg, double el_deg, cudaStream_t st,
			struct cu_err *ce);
void cu_beams_job_chunk(const struct cu_be *be, const struct cu_set *s, unsigned p0,
			unsigned np, struct cu_fjob *j);
cudaError_t cu_beams_graph_point(struct cu_be *be, struct cu_set *s, cudaGraphExec_t gx,
				 cudaGraphNode_t wn, cudaGraphNode_t mn, double az_deg,
				 double el_deg);
int cu_beams_skipped(const struct cu_be *be, const struct cu_set *s);
int cu_beams_write_skipped(struct cu_be *be, struct cu_set *s);
int cu_beams_mono(struct cu_be *be, struct cu_set *s, struct cu_err *ce);

/* ---- cu_setup.cu / cu_pipeline.cu ------------------------------------------ */

void *cu_create(const struct pc_setup *su, char *err, size_t errlen);
void cu_destroy(void *p);

#endif /* CHIRP_CU_PRIVATE_H */
