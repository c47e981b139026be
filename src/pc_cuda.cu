/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_cuda.cu — the CUDA (cuFFT) pulse-compression backend (pc_backend.h).
 *
 * The only file that includes cuda_runtime.h / cufft.h. It computes exactly
 * the definition in chirp/pc.h, with the filter pc.c hands over in
 * struct pc_setup.
 *
 * DATA PATH (one CPI)
 *   Every CPI runs on one "set": its streams, device buffers, cuFFT plans
 *   and events. CPI k uses set k mod N (N = streams, the depth). Within a
 *   CPI, the rows are cut into chunks (CHUNKS below); per chunk:
 *
 *     H2D    cf32: cudaMemcpy2DAsync from the packed slot (rows x R
 *            float2) straight into the pitched FFT rows d_fft (nfft float2
 *            per row, the pitch from cudaMallocPitch, never assumed); in a
 *            graph (GRAPHS) 1-D into a packed d_in, spread by k_pad_cf32_packed.
 *            sc16: cudaMemcpyAsync into a packed d_in (rows x R short2:
 *            half the PCIe bytes). Straight from the ring slot when it lies
 *            in memory registered with cudaHostRegister, else copied into a
 *            pinned staging buffer first ("copy" staging), chunk by chunk
 *            just before the chunk's H2D, by staging_threads threads
 *            (hcopy.h). ev_in is recorded after every chunk's H2D: the
 *            input slot may then be reused.
 *     pad    cf32: in place, zero [R, nfft) of each row and count rows
 *            holding NaN/Inf (one atomicAdd per bad row). sc16: d_in ->
 *            d_fft, value / 32768 as the CPU backend, zero [R, nfft).
 *     FFT    cufftExecC2C forward, in place, batched over the chunk's rows
 *            (plans made at create: idist = pitch / sizeof(float2)).
 *     mul    d_fft[r][f] *= filt[f] (filt = g conj(H) / nfft, uploaded once).
 *     IFFT   cufftExecC2C inverse, in place.
 *     out    gates 0..R-1 -> d_out packed rows x R, in the output mode
 *            (complex / magnitude / power_db): only the bytes asked for
 *            cross PCIe.
 *     D2H    d_out -> output slot (registered) or pinned staging (copied to
 *            the slot in pc_poll, by the same threads), plus the 4-byte
 *            non-finite row count.
 *            ev_out is recorded after every chunk's D2H: the output slot
 *            is then complete.
 *
 *   Sets run on their own streams, so the H2D of CPI k+1 overlaps the FFTs
 *   of k and the D2H of k-1 (the copy engines of each direction run
 *   independently). No device-wide synchronisation, no allocation after
 *   create (the pinned staging pool is allocated once, the first time an
 *   unregistered buffer is seen, unless staging = copy made it at create).
 *
 * CHUNKS
 *   A CPI occupies its set until its output is reported, so without help
 *   both copy directions would stay busy only with three or more CPIs in
 *   flight, and a daemon that runs at depth 1 (to DMA straight into the
 *   one output slot its ring lets it reserve) would copy in, compute and
 *   copy out one after the other: about 45 % of the copy limit. So each
 *   CPI's rows are cut into chunks (rows never split; how many depends on
 *   the depth, cu_choose_chunks), handed round-robin to CU_CHUNK_STREAMS
 *   streams of the set, each
 *   with its own cuFFT plans (and work area). The H2D of chunk i+1 then runs
 *   while chunk i computes and chunk i-1 drains: one CPI in flight keeps
 *   both directions busy except for one chunk at each end. The set's own
 *   stream starts the chunk streams (ev_start) and joins them: ev_in after
 *   their last H2D, ev_out after all their work. Deeper pipelines cut
 *   large CPIs in two (cu_choose_chunks); an optional idle layout cuts
 *   finer the CPIs that arrive while the GPU is not behind (LAYOUTS, off
 *   unless asked for): pc_done.chunks says how each CPI was cut.
 *
 * COMPLETION
 *   pc_poll reports in submission order: input completions (ev_in) in
 *   order, output completions (ev_out) in order, an output never before its
 *   input. It checks events with cudaEventQuery (non-blocking). To wait
 *   without burning a core, each event is followed on one of two
 *   notification streams (inputs, outputs) by a host function that bumps a
 *   counter under a mutex and signals a condition variable; pc_poll sleeps
 *   on that with the caller's timeout (CLOCK_MONOTONIC), then re-queries.
 *   The host function runs on a CUDA runtime thread and touches only the
 *   mutex, the counter and the condition variable. Exception: once the
 *   oldest CPI's input is done (only its tail is left), pc_poll polls the
 *   events for up to CU_SPIN_US (300 us) before sleeping, because the
 *   wake-up through the host function costs tens of microseconds of idle
 *   copy engines per CPI at depth 1. A poll thread thus spins for at most
 *   that long per CPI.
 *   With busy_poll (pc_setup; the daemon's default) the caller polls with
 *   timeout 0 while CPIs are in flight: no host functions are queued at
 *   all, and a pc_poll with a timeout polls the events until it expires.
 *   ev_start and ev_out are timing events: their difference is the CPI's
 *   time on the GPU (pc_done.device_ns, the flight recorder's "device").
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
#include <cuda_runtime.h>
#include <cufft.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pc_backend.h"
extern "C" {
#include "hcopy.h"
#include "log.h"
}

#define CU_THREADS      256      /* threads per block of our kernels       */
#define CU_MAX_REGIONS  16       /* host regions pc_register_host accepts   */
#define CU_WAIT_SLICE_MS 1000    /* an endless wait re-queries this often  */
#define CU_SPIN_US      300      /* pc_poll's tail spin; CHIRP_CUDA_SPIN_US=0..10000 */

struct cu_region {
	char *base;
	size_t len;
	int owned;               /* holds a reference in cu_regs below     */
};

/*
 * Host registrations are per process (per CUDA context), not per pc: during
 * a reload the new generation's pc registers the very ring mapping the old
 * one still holds, and the old one is destroyed while the new one already
 * copies from it. So registrations made here are counted process-wide and
 * the last holder unregisters; a pc never pulls the pinning from under
 * another's DMA. Memory registered outside chirp (cudaHostRegister by the
 * application) is used but never unregistered by us (owned = 0).
 */
#define CU_MAX_REGS     64       /* process-wide registrations we made     */

struct cu_reg {
	char *base;
	size_t len;
	unsigned refs;
};

static pthread_mutex_t cu_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cu_reg cu_regs[CU_MAX_REGS];
static unsigned cu_nregs;

/*
 * Get a hold on [base, base+len) for DMA, under cu_reg_lock so that two pcs
 * never both find it unregistered: a reference on our registration if one
 * covers it, else a new registration (read-only mappings need the ReadOnly
 * flag). Returns 2 (registered now), 1 (shared: a reference on ours), 0
 * (registered by the application: used, never unregistered by us),
 * -ENOSPC (our table is full) or -EIO with *e the CUDA error.
 */
static int cu_reg_acquire(char *base, size_t len, cudaError_t *e)
{
	int rc = 2;

	*e = cudaSuccess;
	pthread_mutex_lock(&cu_reg_lock);
	for (unsigned i = 0; i < cu_nregs; i++)
		if (cu_regs[i].base == base && cu_regs[i].len >= len) {
			cu_regs[i].refs++;
			rc = 1;
			goto out;
		}
	if (cu_nregs == CU_MAX_REGS) {
		rc = -ENOSPC;
		goto out;
	}
	*e = cudaHostRegister(base, len, cudaHostRegisterPortable);
	if (*e == cudaErrorHostMemoryAlreadyRegistered) {
		(void)cudaGetLastError();
		*e = cudaSuccess;
		rc = 0;
		goto out;
	}
	if (*e != cudaSuccess) {
		(void)cudaGetLastError();
		*e = cudaHostRegister(base, len, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
	}
	if (*e != cudaSuccess) {
		(void)cudaGetLastError();
		rc = -EIO;
		goto out;
	}
	cu_regs[cu_nregs].base = base;
	cu_regs[cu_nregs].len = len;
	cu_regs[cu_nregs].refs = 1;
	cu_nregs++;
out:
	pthread_mutex_unlock(&cu_reg_lock);
	return rc;
}

/*
 * Drop a reference; the last one unregisters. The caller has synchronised
 * its own streams; other holders still use the memory, which stays pinned.
 * Returns 0, or -1 if cudaHostUnregister failed.
 */
static int cu_reg_put(char *base)
{
	int rc = 0;

	pthread_mutex_lock(&cu_reg_lock);
	for (unsigned i = 0; i < cu_nregs; i++) {
		if (cu_regs[i].base != base)
			continue;
		if (--cu_regs[i].refs == 0) {
			cu_regs[i] = cu_regs[--cu_nregs];
			if (cudaHostUnregister(base) != cudaSuccess) {
				(void)cudaGetLastError();
				rc = -1;
			}
		}
		break;
	}
	pthread_mutex_unlock(&cu_reg_lock);
	return rc;
}

/*
 * A set's work is split into row chunks over CU_CHUNK_STREAMS streams of its
 * own, so even one CPI keeps both copy directions busy (see CHUNKS above).
 */
#define CU_CHUNK_STREAMS 3
#define CU_MAX_CHUNKS    16

/*
 * How a CPI's rows are cut: nchunks chunks of chunk_rows rows (the last
 * rem_rows), on the first ncs chunk streams. Two per backend (LAYOUTS).
 */
enum { CU_LAY_DEPTH, CU_LAY_IDLE, CU_NLAY };

struct cu_layout {
	unsigned nchunks, ncs;
	size_t chunk_rows, rem_rows;
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

struct cu_set {
	cudaStream_t stream;     /* orders CPIs on this set; ev_in, ev_out */
	struct cu_chunk_stream cs[CU_CHUNK_STREAMS];
	cudaEvent_t ev_start;    /* chunk streams wait for it              */
	int have_ev_start;
	void *d_in;              /* packed input rows: sc16 always, cf32 with
				    graphs (their input copy must be 1-D) */
	float2 *d_fft;           /* rows x pitch bytes, nfft used per row  */
	void *d_out;             /* rows * R * out_sample_bytes, packed    */
	unsigned *d_nonfinite;   /* rows with NaN/Inf in this CPI          */
	unsigned *h_nonfinite;   /* pinned copy of it                      */
	void *h_in, *h_out;      /* pinned staging ("copy" staging only)   */
	cudaEvent_t ev_in, ev_out;
	int have_ev_in, have_ev_out;

	/* GRAPHS: per layout, the whole CPI as one graph, made on first use.
	 * g_state 0 not made yet, 1 made, -1 could not be made (stream path). */
	cudaGraph_t g[CU_NLAY];
	cudaGraphExec_t gx[CU_NLAY];
	int g_state[CU_NLAY];
	cudaGraphNode_t g_h2d[CU_NLAY][CU_MAX_CHUNKS];   /* chunk i's input copy  */
	cudaGraphNode_t g_d2h[CU_NLAY][CU_MAX_CHUNKS];   /* chunk i's output copy */
	cudaEvent_t ev_fork;     /* capture only: the chunk streams fork off it */
	int have_ev_fork;

	/* The CPI in flight on this set. */
	uint64_t tag;
	unsigned nchunks;        /* row chunks it was cut into             */
	int h2d_done;            /* ev_in seen complete (staged input: in_done
				    comes at submit, its DMA later)      */
	void *out;               /* caller's output (staged: copy in poll) */
	int stage_out;
	int in_done;             /* input consumed (staged: at submit)     */
	int in_reported, out_reported;
};

struct cu_be {
	int dev;
	char device[128];
	int numa_node;

	size_t rows, R, nfft, pitch_elems;
	struct cu_layout lay[CU_NLAY];  /* CU_LAY_DEPTH, CU_LAY_IDLE (LAYOUTS) */
	int have_idle;           /* lay[CU_LAY_IDLE] differs from the depth's */
	unsigned waiting;        /* pc_queue_hint: CPIs behind the next submit */
	unsigned ncs;            /* chunk streams made (max of both layouts) */
	enum pc_format in_format;
	enum pc_output out_mode;
	size_t in_bytes, out_bytes;

	float2 *d_filt;
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
	int staging_nt;          /* hc copies with streaming stores (default;
				    CHIRP_CUDA_STAGING_NT=0: memcpy)       */
	int warned_unregistered;
	uint64_t staged_cpis;    /* CPIs that went through staging copies  */

	/* Completion notification (host functions on two streams). */
	cudaStream_t notify_in, notify_out;
	int have_notify_in, have_notify_out;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int have_sync;
	uint64_t notify_seq;     /* under mu                                */

	unsigned spin_us;        /* tail spin in pc_poll (CU_SPIN_US)      */
	int busy_poll;           /* caller polls: no host functions, pc_poll
				    with a timeout polls instead of sleeping */
	int graphs;              /* CPIs from registered memory run as one
				    CUDA graph (GRAPHS; CHIRP_CUDA_GRAPHS=0 off) */
	uint64_t graph_cpis;     /* CPIs launched as a graph               */
	int failed;
	int fault_armed;
	char last_error[256];
};

/* ---- kernels ------------------------------------------------------------ */

__device__ __forceinline__ int cu_nonfinite(float x)
{
	/* Exponent all ones: Inf or NaN. Bit test, immune to fast-math. */
	return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u;
}

/*
 * cf32, one block per pitched fft row (pe elements) that the H2D already
 * filled with R samples: zero [R, nfft) and count the row if it holds
 * NaN/Inf.
 */
__global__ void k_pad_cf32(float2 *__restrict__ fft, size_t pe, unsigned R, unsigned nfft,
			   unsigned *nonfinite)
{
	float2 *row = fft + (size_t)blockIdx.x * pe;
	int bad = 0;

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		float2 v = row[n];

		bad |= cu_nonfinite(v.x) | cu_nonfinite(v.y);
	}
	for (unsigned n = R + threadIdx.x; n < nfft; n += blockDim.x)
		row[n] = make_float2(0.0f, 0.0f);
	bad = __syncthreads_or(bad);
	if (bad && threadIdx.x == 0)
		atomicAdd(nonfinite, 1u);
}

/*
 * cf32 with graphs, one block per row: in (packed rows x R float2) -> fft
 * row (pitch pe elements), zero [R, nfft), count the row if it holds
 * NaN/Inf. The same values as the 2-D copy + k_pad_cf32 of the stream path.
 */
__global__ void k_pad_cf32_packed(const float2 *__restrict__ in, float2 *__restrict__ fft,
				  size_t pe, unsigned R, unsigned nfft, unsigned *nonfinite)
{
	const float2 *src = in + (size_t)blockIdx.x * R;
	float2 *row = fft + (size_t)blockIdx.x * pe;
	int bad = 0;

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		float2 v = src[n];

		bad |= cu_nonfinite(v.x) | cu_nonfinite(v.y);
		row[n] = v;
	}
	for (unsigned n = R + threadIdx.x; n < nfft; n += blockDim.x)
		row[n] = make_float2(0.0f, 0.0f);
	bad = __syncthreads_or(bad);
	if (bad && threadIdx.x == 0)
		atomicAdd(nonfinite, 1u);
}

/*
 * sc16, one block per row: in (packed rows x R short2) -> fft row (pitch pe
 * elements) as value / 32768, zero [R, nfft). Always finite.
 */
__global__ void k_pad_sc16(const short2 *__restrict__ in, float2 *__restrict__ fft,
			   size_t pe, unsigned R, unsigned nfft)
{
	const short2 *src = in + (size_t)blockIdx.x * R;
	float2 *dst = fft + (size_t)blockIdx.x * pe;
	const float s = 1.0f / 32768.0f;   /* exact: a power of two */

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		short2 v = src[n];

		dst[n] = make_float2((float)v.x * s, (float)v.y * s);
	}
	for (unsigned n = R + threadIdx.x; n < nfft; n += blockDim.x)
		dst[n] = make_float2(0.0f, 0.0f);
}

/* fft[r][f] *= filt[f]: x blocks over f, y blocks stride over rows. */
__global__ void k_cmul(float2 *__restrict__ fft, size_t pe, unsigned nfft,
		       size_t rows, const float2 *__restrict__ filt)
{
	unsigned f = blockIdx.x * blockDim.x + threadIdx.x;
	float2 h;

	if (f >= nfft)
		return;
	h = filt[f];
	for (size_t r = blockIdx.y; r < rows; r += gridDim.y) {
		float2 x = fft[r * pe + f];

		fft[r * pe + f] = make_float2(x.x * h.x - x.y * h.y, x.x * h.y + x.y * h.x);
	}
}

/* One block per row: gates 0..R-1 of the fft row -> packed output row. */
template <int MODE>
__global__ void k_out(const float2 *__restrict__ fft, size_t pe, unsigned R,
		      void *__restrict__ out)
{
	size_t row = blockIdx.x;
	const float2 *src = fft + row * pe;

	for (unsigned n = threadIdx.x; n < R; n += blockDim.x) {
		float2 y = src[n];

		if (MODE == PC_OUT_COMPLEX) {
			((float2 *)out)[row * R + n] = y;
		} else {
			float p = y.x * y.x + y.y * y.y;

			if (MODE == PC_OUT_MAGNITUDE) {
				/* hypotf only where p overflows, as the CPU backend */
				((float *)out)[row * R + n] = p <= 3.402823466e38f ? sqrtf(p) : hypotf(y.x, y.y);
			} else {
				/* Clamp below, but let NaN through: corruption shows. */
				if (p < PC_POWER_FLOOR)
					p = PC_POWER_FLOOR;
				((float *)out)[row * R + n] = 10.0f * log10f(p);
			}
		}
	}
}

/* Launched with an invalid block size by pc_inject_fault. Never runs. */
__global__ void k_fault(void)
{
}

/* ---- errors ------------------------------------------------------------- */

static const char *cufft_str(cufftResult r)
{
	switch (r) {
	case CUFFT_SUCCESS:                   return "CUFFT_SUCCESS";
	case CUFFT_INVALID_PLAN:              return "CUFFT_INVALID_PLAN";
	case CUFFT_ALLOC_FAILED:              return "CUFFT_ALLOC_FAILED";
	case CUFFT_INVALID_TYPE:              return "CUFFT_INVALID_TYPE";
	case CUFFT_INVALID_VALUE:             return "CUFFT_INVALID_VALUE";
	case CUFFT_INTERNAL_ERROR:            return "CUFFT_INTERNAL_ERROR";
	case CUFFT_EXEC_FAILED:               return "CUFFT_EXEC_FAILED";
	case CUFFT_SETUP_FAILED:              return "CUFFT_SETUP_FAILED";
	case CUFFT_INVALID_SIZE:              return "CUFFT_INVALID_SIZE";
	case CUFFT_UNALIGNED_DATA:            return "CUFFT_UNALIGNED_DATA";
	case CUFFT_INVALID_DEVICE:            return "CUFFT_INVALID_DEVICE";
	case CUFFT_NO_WORKSPACE:              return "CUFFT_NO_WORKSPACE";
	case CUFFT_NOT_IMPLEMENTED:           return "CUFFT_NOT_IMPLEMENTED";
	case CUFFT_NOT_SUPPORTED:             return "CUFFT_NOT_SUPPORTED";
	default:                              return "cuFFT error";
	}
}

/*
 * Record the first failure: "call: error", log it once, mark failed. call
 * is the stringified expression; only the function name is kept.
 */
static void cu_fail_n(struct cu_be *be, const char *call, size_t n, const char *what)
{
	if (be->failed)
		return;
	be->failed = 1;
	snprintf(be->last_error, sizeof(be->last_error), "%.*s: %s", (int)n, call, what);
	log_err("cuda: %s", be->last_error);
}

static void cu_fail(struct cu_be *be, const char *call, const char *what)
{
	cu_fail_n(be, call, strcspn(call, "(<"), what);
}

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
			cu_fail(be, #call, cufft_str(r_));                   \
			rc = -EIO;                                           \
			goto out;                                            \
		}                                                            \
	} while (0)


/* ---- probe -------------------------------------------------------------- */

/*
 * Lowest compute capability this build has code for (x 10: 90 = 9.0).
 * nvcc lists the virtual architectures of -gencode in __CUDA_ARCH_LIST__;
 * PTX of compute_XY runs on any device >= X.Y.
 */
static int cu_min_cc(void)
{
#ifdef __CUDA_ARCH_LIST__
	static const int archs[] = { __CUDA_ARCH_LIST__ };
	int m = INT_MAX;

	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (archs[i] < m)
			m = archs[i];
	return m / 10;
#else
	return 0;
#endif
}

/* Whether device dev can run our kernels; a reason in why otherwise. */
static int cu_device_usable(int dev, char *why, size_t whylen)
{
	int major = 0, minor = 0, cc;
	cudaError_t e;

	e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
	if (e != cudaSuccess) {
		snprintf(why, whylen, "device %d: cudaDeviceGetAttribute: %s", dev,
			 cudaGetErrorString(e));
		(void)cudaGetLastError();
		return 0;
	}
	cc = major * 10 + minor;
	if (cc < cu_min_cc()) {
		snprintf(why, whylen, "device %d has compute capability %d.%d; this build has code "
			 "for %d.%d and newer (NVCC_ARCH)", dev, major, minor,
			 cu_min_cc() / 10, cu_min_cc() % 10);
		return 0;
	}
	return 1;
}

/*
 * Number of usable devices; 0 when there is no driver, no device, or none
 * this build can run on. Logs one info line the first time it finds none.
 */
extern "C" int pc_cuda_probe(void)
{
	static int logged;
	char why[160] = "";
	int n = 0, usable = 0;
	cudaError_t e;

	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		snprintf(why, sizeof(why), "cudaGetDeviceCount: %s", cudaGetErrorString(e));
		(void)cudaGetLastError();
		n = 0;
	}
	for (int i = 0; i < n; i++)
		usable += cu_device_usable(i, why, sizeof(why));
	if (usable == 0 && !logged) {
		logged = 1;
		log_info("cuda: no usable GPU (%s)", why[0] ? why : "no devices");
	}
	return usable;
}

/* ---- create / destroy ------------------------------------------------------ */

static void CUDART_CB cu_notify(void *arg)
{
	struct cu_be *be = (struct cu_be *)arg;

	pthread_mutex_lock(&be->mu);
	be->notify_seq++;
	pthread_cond_broadcast(&be->cv);
	pthread_mutex_unlock(&be->mu);
}

/* "NVIDIA H200 (0000:41:00.0)" and the NUMA node from sysfs. */
static void cu_describe(struct cu_be *be)
{
	char bus[32] = "", path[96];
	struct cudaDeviceProp prop;
	FILE *f;
	int node;

	be->numa_node = -1;
	if (cudaGetDeviceProperties(&prop, be->dev) != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(prop.name, sizeof(prop.name), "CUDA device %d", be->dev);
	}
	if (cudaDeviceGetPCIBusId(bus, sizeof(bus), be->dev) != cudaSuccess) {
		(void)cudaGetLastError();
		bus[0] = '\0';
	}
	for (char *c = bus; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	snprintf(be->device, sizeof(be->device), "%.90s (%s)", prop.name, bus[0] ? bus : "?");
	if (!bus[0])
		return;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", bus);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%d", &node) == 1 && node >= 0)
		be->numa_node = node;
	fclose(f);
}

/*
 * Pinned staging for every set and the parallel copier that fills and
 * drains it (once: at create for staging = copy, else the first time an
 * unregistered buffer is seen). Returns 0 or -EIO. A copier that cannot
 * start its threads is not fatal: one with the caller alone copies as the
 * backend always did, slower, and says so.
 */
static int cu_alloc_staging(struct cu_be *be)
{
	char why[160];
	int rc = 0;

	if (be->have_staging)
		return 0;
	for (unsigned i = 0; i < be->nsets; i++) {
		struct cu_set *s = &be->sets[i];

		if (!s->h_in)
			CK(cudaHostAlloc(&s->h_in, be->in_bytes, cudaHostAllocPortable));
		if (!s->h_out)
			CK(cudaHostAlloc(&s->h_out, be->out_bytes, cudaHostAllocPortable));
	}
	if (!be->hc) {
		be->hc = hcopy_create(be->staging_threads, why, sizeof(why));
		if (!be->hc && be->staging_threads > 1) {
			log_warn("cuda: %s; staging copies on the data thread alone", why);
			be->hc = hcopy_create(1, why, sizeof(why));
		}
		if (!be->hc) {
			cu_fail(be, "hcopy_create",
				strncmp(why, "hcopy: ", 7) == 0 ? why + 7 : why);
			rc = -EIO;
			goto out;
		}
		/* Streaming stores: the staged bytes are read next by a DMA
		 * engine or by a consumer process, never by this core, and
		 * skip the read-for-ownership of every destination line (a
		 * third less memory traffic; doc/cuda.md, *Copy staging*). */
		hcopy_set_nt(be->hc, be->staging_nt);
		if (be->have_bind) {
			int n = hcopy_bind(be->hc, &be->bind_cpus);

			if (n < 0)   /* not fatal: they copy, only not where asked */
				log_warn("cuda: staging copy threads not pinned: %s", strerror(-n));
		}
	}
	be->have_staging = 1;
out:
	return rc;
}

static void cu_destroy(void *p)
{
	struct cu_be *be = (struct cu_be *)p;

	if (!be)
		return;
	/*
	 * Errors below are ignored: after a device fault they all fail, and
	 * we still free what the host holds.
	 */
	(void)cudaSetDevice(be->dev);
	for (unsigned i = 0; i < be->nsets; i++)
		if (be->sets[i].stream)
			(void)cudaStreamSynchronize(be->sets[i].stream);
	if (be->have_notify_in)
		(void)cudaStreamSynchronize(be->notify_in);
	if (be->have_notify_out)
		(void)cudaStreamSynchronize(be->notify_out);
	for (unsigned i = 0; i < be->nsets; i++) {
		struct cu_set *s = &be->sets[i];

		for (unsigned k = 0; k < CU_CHUNK_STREAMS; k++) {
			struct cu_chunk_stream *c = &s->cs[k];

			if (c->stream)
				(void)cudaStreamSynchronize(c->stream);
			for (unsigned l = 0; l < CU_NLAY; l++) {
				if (c->have_plan[l])
					(void)cufftDestroy(c->plan[l]);
				if (c->have_plan_rem[l])
					(void)cufftDestroy(c->plan_rem[l]);
			}
			if (c->have_ev_h2d)
				(void)cudaEventDestroy(c->ev_h2d);
			if (c->have_ev_done)
				(void)cudaEventDestroy(c->ev_done);
			if (c->stream)
				(void)cudaStreamDestroy(c->stream);
		}
		for (unsigned l = 0; l < CU_NLAY; l++)
			if (s->g_state[l] == 1) {
				(void)cudaGraphExecDestroy(s->gx[l]);
				(void)cudaGraphDestroy(s->g[l]);
			}
		if (s->have_ev_fork)
			(void)cudaEventDestroy(s->ev_fork);
		if (s->have_ev_start)
			(void)cudaEventDestroy(s->ev_start);
		if (s->have_ev_in)
			(void)cudaEventDestroy(s->ev_in);
		if (s->have_ev_out)
			(void)cudaEventDestroy(s->ev_out);
		if (s->stream)
			(void)cudaStreamDestroy(s->stream);
		(void)cudaFree(s->d_in);
		(void)cudaFree(s->d_fft);
		(void)cudaFree(s->d_out);
		(void)cudaFree(s->d_nonfinite);
		if (s->h_nonfinite)
			(void)cudaFreeHost(s->h_nonfinite);
		if (s->h_in)
			(void)cudaFreeHost(s->h_in);
		if (s->h_out)
			(void)cudaFreeHost(s->h_out);
	}
	hcopy_destroy(be->hc);
	for (unsigned i = 0; i < be->nregions; i++)
		if (be->regions[i].owned && cu_reg_put(be->regions[i].base) < 0)
			log_warn("cuda: cudaHostUnregister(%p) failed", (void *)be->regions[i].base);
	if (be->have_notify_in)
		(void)cudaStreamDestroy(be->notify_in);
	if (be->have_notify_out)
		(void)cudaStreamDestroy(be->notify_out);
	(void)cudaFree(be->d_filt);
	(void)cudaGetLastError();
	if (be->have_sync) {
		pthread_cond_destroy(&be->cv);
		pthread_mutex_destroy(&be->mu);
	}
	free(be->sets);
	free(be);
}

/*
 * Row chunks per CPI. Chunks pay for themselves where few CPIs are in
 * flight; each costs ~7 API calls on the submitting thread and smaller
 * launches, which measurably slowed depth 3 at 4x128x4096 (H200, see
 * doc/cuda.md). So: depth 1, one chunk per ~2 MiB of the larger direction,
 * at most 16; depth 2, one per ~4 MiB, at most 8 (whole daemon on an H200,
 * cf32->complex, CHIRP_CUDA_CHUNKS 1/2/4/8: 4x128x4096 4.40/4.48/4.89/4.71
 * GS/s, 16x128x9000 -/5.12/5.13/5.86); deeper, two where the larger
 * direction is >= 8 MiB, else none. Two halves cost a deep pipeline no
 * throughput and take a quarter off each CPI's latency: a whole CPI copies
 * in, computes and copies out one after the other, a halved one overlaps
 * the second half's H2D with the first's compute and D2H (H100 host,
 * 2026-11-25, doc/latency.md g1-g3, 4x128x4096 cf32->complex at depth 4,
 * side by side: capacity 2680 halved / 2604 whole and 2419-2428 / 2353
 * CPI/s; at 80 % chirpd's own p50 0.60 / 0.76 ms, p99.9 1.14 / 1.44 ms).
 * Four chunks cut the latency further (own p50 0.51, p99.9 0.73-0.84 ms)
 * but cost 8-15 % of capacity at depth 3-4 (2313-2317 against 2530;
 * start-up calibration 1994-2209 against 2405-2440 CPI/s), so they are
 * left to CHIRP_CUDA_CHUNKS=4. Never an empty chunk.
 * CHIRP_CUDA_CHUNKS=N (1..16) overrides: a tuning and test knob.
 *
 * LAYOUTS. That is the depth's layout (CU_LAY_DEPTH), made for throughput.
 * A CPI submitted while no other CPI's input is still being copied in (the
 * GPU is not behind: light or moderate load) is latency-bound instead: its
 * result is due one H2D + compute + D2H after its commit, and a whole CPI
 * serialises those (4x128x4096 on an H100: 0.74 ms at depth 4 against 0.49
 * cut in 4). So such a CPI can be cut in N (CU_LAY_IDLE,
 * CHIRP_CUDA_IDLE_CHUNKS=N; depth 2 cuts one chunk per ~4 MiB, at most 8),
 * whatever the depth; when the GPU is behind, the depth's layout keeps its
 * throughput. Where both layouts are
 * the same (depth 1 and 2, small CPIs), there is one.
 *
 * Since 2026-11-25 ~08:00 UTC the idle layout is OFF unless
 * CHIRP_CUDA_IDLE_CHUNKS=N (2..16) asks for it: on the H100 host, at 80 %
 * of 4x128x4096, side by side in one call twice (doc/latency.md, c4),
 * it lowered the median (0.51 against 0.61-0.75 ms) but mixing cut and
 * whole CPIs raised chirpd's own p99.9 to 2.37 and 1.21 ms against 0.85
 * and 0.70 ms with every CPI in the depth's layout. A real-time tail
 * outweighs a median. The mechanism stays (test_pc_cuda: test_idle_layout
 * turns it on) for hosts where it measures better.
 */
static void cu_set_layout(struct cu_layout *l, size_t rows, size_t k)
{
	if (k < 1)
		k = 1;
	if (k > rows)
		k = rows;
	l->chunk_rows = (rows + k - 1) / k;
	l->nchunks = (unsigned)((rows + l->chunk_rows - 1) / l->chunk_rows);
	l->rem_rows = rows - (size_t)(l->nchunks - 1) * l->chunk_rows;
	l->ncs = l->nchunks < CU_CHUNK_STREAMS ? l->nchunks : CU_CHUNK_STREAMS;
}

/* CHIRP_CUDA_CHUNKS-style override: 1..CU_MAX_CHUNKS, else keep k. */
static size_t cu_env_chunks(const char *name, size_t k)
{
	const char *env = getenv(name);
	char *end;
	long v;

	if (!env || !*env)
		return k;
	v = strtol(env, &end, 10);
	if (*end == '\0' && v >= 1 && v <= CU_MAX_CHUNKS)
		return (size_t)v;
	log_warn("cuda: %s=%s ignored (want 1..%d)", name, env, CU_MAX_CHUNKS);
	return k;
}

static void cu_choose_chunks(struct cu_be *be)
{
	size_t big = be->in_bytes > be->out_bytes ? be->in_bytes : be->out_bytes;
	size_t k = 1, k2 = big / (4u << 20);   /* depth 2's cut */
	struct cu_layout *d = &be->lay[CU_LAY_DEPTH], *i = &be->lay[CU_LAY_IDLE];

	if (k2 > 8)
		k2 = 8;
	if (be->nsets == 1) {
		k = big / (2u << 20);
		if (k > 16)
			k = 16;
	} else if (be->nsets == 2) {
		k = k2;
	} else if (big >= (8u << 20)) {
		k = 2;
	}
	k = cu_env_chunks("CHIRP_CUDA_CHUNKS", k);
	cu_set_layout(d, be->rows, k);
	/* Idle layout only where the depth's is one chunk: a chunked one
	 * already overlaps a lone CPI's copies. */
	if (d->nchunks == 1)   /* off (1) unless asked for: LAYOUTS above */
		cu_set_layout(i, be->rows, cu_env_chunks("CHIRP_CUDA_IDLE_CHUNKS", 1));
	else
		*i = *d;
	be->have_idle = i->nchunks != d->nchunks;
	be->ncs = d->ncs > i->ncs ? d->ncs : i->ncs;
}

/*
 * One batched in-place C2C plan over `batch` pitched rows of nfft samples
 * (idist = the pitch in elements), bound to stream st; *have is set as soon
 * as the handle exists, so cu_destroy frees it whatever fails after.
 * Returns 0, or -EIO with the failure recorded (cu_create).
 */
static int cu_make_plan(struct cu_be *be, cufftHandle *plan, int *have, size_t batch,
			cudaStream_t st)
{
	long long n[1] = { (long long)be->nfft }, emb[1] = { (long long)be->pitch_elems };
	size_t work = 0;
	int rc = 0;

	CKF(cufftCreate(plan));
	*have = 1;
	CKF(cufftMakePlanMany64(*plan, 1, n, emb, 1, (long long)be->pitch_elems, emb, 1,
				(long long)be->pitch_elems, CUFFT_C2C, (long long)batch, &work));
	CKF(cufftSetStream(*plan, st));
out:
	return rc;
}

static void *cu_create(const struct pc_setup *su, char *err, size_t errlen)
{
	struct cu_be *be = NULL;
	pthread_condattr_t ca;
	struct cudaFuncAttributes fa;
	size_t in_sz, out_sz, pitch = 0;
	int ndev = 0, rc = 0;
	char why[160] = "";

	in_sz = pc_format_sample_bytes(su->in_format);
	out_sz = pc_output_sample_bytes(su->out_mode);
	if (!in_sz || !out_sz || su->rows < 1 || su->samples < 1 || su->nfft < su->samples ||
	    su->nfft > INT_MAX || su->rows > INT_MAX || su->streams < 1 || !su->filt) {
		snprintf(err, errlen, "invalid setup (rows %zu, R %u, nfft %zu, streams %u)",
			 su->rows, su->samples, su->nfft, su->streams);
		return NULL;
	}
	be = (struct cu_be *)calloc(1, sizeof(*be));
	if (!be) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	be->sets = (struct cu_set *)calloc(su->streams, sizeof(*be->sets));
	if (!be->sets) {
		free(be);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	be->nsets = su->streams;
	be->rows = su->rows;
	be->R = su->samples;
	be->nfft = su->nfft;
	be->in_format = su->in_format;
	be->out_mode = su->out_mode;
	be->in_bytes = su->rows * su->samples * in_sz;
	be->out_bytes = su->rows * su->samples * out_sz;
	be->staging = su->staging;
	be->staging_threads = su->staging_threads;   /* 1..HCOPY_MAX_THREADS (pc.c) */
	be->busy_poll = su->busy_poll;
	{
		const char *env = getenv("CHIRP_CUDA_GRAPHS");

		be->graphs = !(env && strcmp(env, "0") == 0);
	}
	be->numa_node = -1;
	{
		const char *env = getenv("CHIRP_CUDA_STAGING_NT");

		be->staging_nt = !(env && strcmp(env, "0") == 0);
	}
	cu_choose_chunks(be);
	be->spin_us = CU_SPIN_US;
	{
		const char *env = getenv("CHIRP_CUDA_SPIN_US");
		char *end;
		long v;

		if (env && *env) {
			v = strtol(env, &end, 10);
			if (*end == '\0' && v >= 0 && v <= 10000)
				be->spin_us = (unsigned)v;
			else
				log_warn("cuda: CHIRP_CUDA_SPIN_US=%s ignored (want 0..10000)", env);
		}
	}

	if (pthread_mutex_init(&be->mu, NULL) != 0 || pthread_condattr_init(&ca) != 0) {
		snprintf(be->last_error, sizeof(be->last_error), "pthread_mutex_init failed");
		rc = -ENOMEM;
		goto out;
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&be->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		pthread_mutex_destroy(&be->mu);
		snprintf(be->last_error, sizeof(be->last_error), "pthread_cond_init failed");
		rc = -ENOMEM;
		goto out;
	}
	pthread_condattr_destroy(&ca);
	be->have_sync = 1;

	/* Device: by index, or by PCI bus id. */
	CK(cudaGetDeviceCount(&ndev));
	if (su->gpu >= 0) {
		if (su->gpu >= ndev) {
			snprintf(be->last_error, sizeof(be->last_error),
				 "gpu %d: no such device (%d CUDA device%s)", su->gpu, ndev,
				 ndev == 1 ? "" : "s");
			rc = -ENODEV;
			goto out;
		}
		be->dev = su->gpu;
	} else {
		if (!su->gpu_bus_id || !*su->gpu_bus_id) {
			snprintf(be->last_error, sizeof(be->last_error), "gpu -1 needs gpu_bus_id");
			rc = -EINVAL;
			goto out;
		}
		if (cudaDeviceGetByPCIBusId(&be->dev, su->gpu_bus_id) != cudaSuccess) {
			(void)cudaGetLastError();
			snprintf(be->last_error, sizeof(be->last_error),
				 "gpu_bus_id %s: no CUDA device at that PCI address", su->gpu_bus_id);
			rc = -ENODEV;
			goto out;
		}
	}
	if (!cu_device_usable(be->dev, why, sizeof(why))) {
		snprintf(be->last_error, sizeof(be->last_error), "%s", why);
		rc = -ENODEV;
		goto out;
	}
	CK(cudaSetDevice(be->dev));
	cu_describe(be);
	/* Is there code for this device? (Fails here rather than at launch.) */
	CK(cudaFuncGetAttributes(&fa, k_cmul));

	CK(cudaMalloc((void **)&be->d_filt, be->nfft * sizeof(float2)));
	CK(cudaMemcpy(be->d_filt, su->filt, be->nfft * sizeof(float2), cudaMemcpyHostToDevice));
	CK(cudaStreamCreateWithFlags(&be->notify_in, cudaStreamNonBlocking));
	be->have_notify_in = 1;
	CK(cudaStreamCreateWithFlags(&be->notify_out, cudaStreamNonBlocking));
	be->have_notify_out = 1;

	for (unsigned i = 0; i < be->nsets; i++) {
		struct cu_set *s = &be->sets[i];

		CK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
		CK(cudaEventCreateWithFlags(&s->ev_in, cudaEventDisableTiming));
		s->have_ev_in = 1;
		/* ev_out and ev_start time the CPI on the GPU (pc_done.device_ns) */
		CK(cudaEventCreateWithFlags(&s->ev_out, cudaEventDefault));
		s->have_ev_out = 1;
		/* cf32 lands in d_fft directly, but a graph's copy must be 1-D */
		if (be->in_format == PC_FMT_SC16 || be->graphs)
			CK(cudaMalloc(&s->d_in, be->in_bytes));
		CK(cudaMalloc(&s->d_out, be->out_bytes));
		CK(cudaMallocPitch((void **)&s->d_fft, &pitch, be->nfft * sizeof(float2), be->rows));
		if (pitch % sizeof(float2) != 0) {
			snprintf(be->last_error, sizeof(be->last_error),
				 "cudaMallocPitch returned a pitch of %zu bytes, not a multiple of %zu: "
				 "cuFFT needs the row distance in elements", pitch, sizeof(float2));
			rc = -EINVAL;
			goto out;
		}
		if (i > 0 && pitch / sizeof(float2) != be->pitch_elems) {
			snprintf(be->last_error, sizeof(be->last_error),
				 "cudaMallocPitch returned different pitches for equal buffers");
			rc = -EINVAL;
			goto out;
		}
		be->pitch_elems = pitch / sizeof(float2);
		CK(cudaMalloc((void **)&s->d_nonfinite, sizeof(unsigned)));
		CK(cudaHostAlloc((void **)&s->h_nonfinite, sizeof(unsigned), cudaHostAllocPortable));

		CK(cudaEventCreateWithFlags(&s->ev_start, cudaEventDefault));
		s->have_ev_start = 1;
		CK(cudaEventCreateWithFlags(&s->ev_fork, cudaEventDisableTiming));
		s->have_ev_fork = 1;
		for (unsigned k = 0; k < be->ncs; k++) {
			struct cu_chunk_stream *c = &s->cs[k];

			CK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
			CK(cudaEventCreateWithFlags(&c->ev_h2d, cudaEventDisableTiming));
			c->have_ev_h2d = 1;
			CK(cudaEventCreateWithFlags(&c->ev_done, cudaEventDisableTiming));
			c->have_ev_done = 1;
			for (unsigned l = 0; l < (be->have_idle ? CU_NLAY : 1u); l++) {
				const struct cu_layout *lay = &be->lay[l];

				if (k >= lay->ncs)
					continue;
				rc = cu_make_plan(be, &c->plan[l], &c->have_plan[l], lay->chunk_rows,
						  c->stream);
				if (rc == 0 && lay->rem_rows != lay->chunk_rows)
					rc = cu_make_plan(be, &c->plan_rem[l], &c->have_plan_rem[l],
							  lay->rem_rows, c->stream);
				if (rc < 0)
					goto out;
			}
		}
	}
	if (be->staging == PC_STAGING_COPY)
		rc = cu_alloc_staging(be);
	if (rc < 0)
		goto out;
	CK(cudaDeviceSynchronize());   /* setup only: the filter upload */
	{
		const struct cu_layout *d = &be->lay[CU_LAY_DEPTH], *i = &be->lay[CU_LAY_IDLE];
		char idle[96] = "";

		if (be->have_idle)
			snprintf(idle, sizeof(idle), " (%u of %zu rows while the GPU is not behind)",
				 i->nchunks, i->chunk_rows);
		log_info("cuda: %s, nfft %zu, depth %u, %u chunk%s of %zu rows%s, row pitch %zu B, "
			 "%s, %s staging (%u copy thread%s%s when staged)",
			 be->device, be->nfft, be->nsets, d->nchunks, d->nchunks == 1 ? "" : "s",
			 d->chunk_rows, idle, be->pitch_elems * sizeof(float2),
			 be->graphs ? "a registered CPI is one CUDA graph" : "CPIs queued call by call",
			 be->staging == PC_STAGING_COPY ? "copy" : "register/auto",
			 be->staging_threads, be->staging_threads == 1 ? "" : "s",
			 be->staging_nt ? ", streaming stores" : "");
	}
out:
	if (rc < 0) {
		snprintf(err, errlen, "%s", be->last_error[0] ? be->last_error : strerror(-rc));
		cu_destroy(be);
		return NULL;
	}
	return be;
}

/* ---- info / registration -------------------------------------------------- */

static void cu_info(void *p, struct pc_info *info)
{
	struct cu_be *be = (struct cu_be *)p;
	const char *st;

	info->backend = PC_BACKEND_CUDA;
	info->nfft = be->nfft;
	info->depth = be->nsets;
	snprintf(info->device, sizeof(info->device), "%s", be->device);
	info->numa_node = be->numa_node;
	if (be->staging == PC_STAGING_COPY)
		st = "copy";
	else if (be->reg_failed)
		st = "copy (register failed)";
	else if (be->nregions > 0 && be->staged_cpis == 0)
		st = "registered";
	else if (be->nregions > 0)
		st = "registered+copy";
	else if (be->staged_cpis > 0)
		st = "copy";
	else
		st = "none";   /* nothing registered or staged yet */
	snprintf(info->staging, sizeof(info->staging), "%s", st);
	/* Threads copying staged CPIs: once a CPI is (or, for staging = copy,
	 * will be) staged. "registered" and "none" copy nothing. */
	info->staging_threads = 0;
	if (be->hc && (be->staging == PC_STAGING_COPY || be->staged_cpis > 0))
		info->staging_threads = hcopy_threads(be->hc);
	info->graph_cpis = be->graph_cpis;
}

static void cu_add_region(struct cu_be *be, void *base, size_t len, int owned)
{
	struct cu_region *r = &be->regions[be->nregions++];

	r->base = (char *)base;
	r->len = len;
	r->owned = owned;
}

static int cu_register_host(void *p, void *base, size_t len)
{
	struct cu_be *be = (struct cu_be *)p;
	cudaError_t e;
	int rc = 0;

	if (be->failed)
		return -EIO;
	if (!base || len == 0)
		return -EINVAL;
	CK(cudaSetDevice(be->dev));
	if (be->staging == PC_STAGING_COPY)
		return 0;        /* configured: every CPI goes through staging */
	if (be->nregions == CU_MAX_REGIONS) {
		log_warn("cuda: more than %d host regions registered; staging the rest through copies",
			 CU_MAX_REGIONS);
		be->reg_failed = 1;
		return cu_alloc_staging(be);
	}
	rc = cu_reg_acquire((char *)base, len, &e);
	if (rc < 0) {
		if (rc == -ENOSPC)
			log_warn("cuda: more than %d registrations in this process; staging %p "
				 "through pinned copies", CU_MAX_REGS, base);
		else
			log_warn("cuda: cudaHostRegister(%p, %zu bytes): %s; staging through pinned "
				 "copies instead (slower: one host copy per CPI and direction)", base, len,
				 cudaGetErrorString(e));
		be->reg_failed = 1;
		return cu_alloc_staging(be);
	}
	cu_add_region(be, base, len, rc > 0);
	if (rc == 2)
		log_info("cuda: registered %zu bytes at %p for in-place DMA", len, base);
	else if (rc == 1)   /* another pc's: the other generation of a reload */
		log_debug("cuda: %p (%zu bytes) already registered by chirp; shared", base, len);
	rc = 0;
out:
	return rc;
}

static void cu_unregister_host(void *p, void *base)
{
	struct cu_be *be = (struct cu_be *)p;

	(void)cudaSetDevice(be->dev);
	for (unsigned i = 0; i < be->nregions; i++) {
		if (be->regions[i].base != base)
			continue;
		/* Nothing may still be copying from or to it. */
		for (unsigned k = 0; k < be->nsets; k++) {
			(void)cudaStreamSynchronize(be->sets[k].stream);
			for (unsigned j = 0; j < be->ncs; j++)
				(void)cudaStreamSynchronize(be->sets[k].cs[j].stream);
		}
		if (be->regions[i].owned && cu_reg_put((char *)base) < 0)
			log_warn("cuda: cudaHostUnregister(%p) failed", base);
		be->regions[i] = be->regions[--be->nregions];
		return;
	}
}

/*
 * Whether [p, p+len) can be a DMA source/target as is: inside a registered
 * region, or memory CUDA already knows (device memory, cudaHostAlloc or
 * registered elsewhere). Plain pageable memory needs staging.
 */
static int cu_dma_ok(struct cu_be *be, const void *p, size_t len, int *is_device)
{
	struct cudaPointerAttributes a;
	const char *c = (const char *)p;

	*is_device = 0;
	for (unsigned i = 0; i < be->nregions; i++) {
		const struct cu_region *r = &be->regions[i];

		if (c >= r->base && len <= r->len && (size_t)(c - r->base) <= r->len - len)
			return 1;
	}
	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) {
		*is_device = 1;
		return 1;
	}
	return a.type == cudaMemoryTypeHost;
}

/* ---- data path -------------------------------------------------------------- */

/* 1 done, 0 not yet, -EIO failed. */
static int cu_query(struct cu_be *be, cudaEvent_t ev, const char *what)
{
	cudaError_t e = cudaEventQuery(ev);

	if (e == cudaSuccess)
		return 1;
	if (e == cudaErrorNotReady)
		return 0;
	cu_fail(be, what, cudaGetErrorString(e));
	return -EIO;
}

static void cu_queue_hint(void *p, unsigned waiting)
{
	((struct cu_be *)p)->waiting = waiting;
}

/*
 * The layout for the next CPI (LAYOUTS at cu_choose_chunks): the idle one
 * when nothing waits behind it (pc_queue_hint) and no CPI in flight still
 * has input to copy in, i.e. the H2D engine has nothing of ours queued and
 * the new CPI's latency, not the pipeline's throughput, is what the cut
 * decides; else the depth's. A backlog thus always gets the depth's layout:
 * on the GPU host, stretches where every CUDA call took 4-6x longer made a
 * chunked CPI's ~45 calls cost 0.6-1 ms of host time, below an 80 % load's
 * rate, where a whole CPI's ~17 calls kept up. One event query
 * per in-flight CPI whose input is not yet known to be done (depth - 1 at
 * most), stopping at the first still busy. Returns the layout or -EIO.
 */
static int cu_pick_layout(struct cu_be *be)
{
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
			ce->what = cufft_str(r_);                            \
			return -EIO;                                         \
		}                                                            \
	} while (0)
#define EQL(name)                                                            \
	do {                                                                 \
		cudaError_t e_ = cudaGetLastError();                         \
		if (e_ != cudaSuccess) {                                     \
			ce->call = name;                                     \
			ce->len = (int)strlen(name);                         \
			ce->what = cudaGetErrorString(e_);                   \
			return -EIO;                                         \
		}                                                            \
	} while (0)

/*
 * Chunk i of layout lay: its rows (returned), its first row, and where it
 * starts in a CPI's input and output bytes. The call-by-call path, the
 * capture of a graph and the re-pointing of its copies all cut a CPI with
 * this, so the copies found in a graph are the ones re-pointed.
 */
static unsigned cu_chunk(const struct cu_be *be, const struct cu_layout *lay, unsigned i,
			 size_t *r0, size_t *ioff, size_t *ooff)
{
	*r0 = (size_t)i * lay->chunk_rows;
	*ioff = *r0 * be->R * pc_format_sample_bytes(be->in_format);
	*ooff = *r0 * be->R * pc_output_sample_bytes(be->out_mode);
	return (unsigned)(i == lay->nchunks - 1 ? lay->rem_rows : lay->chunk_rows);
}

/*
 * Queue one CPI's work on set s, cut as layout li: src/dst are what the
 * copies read and write (the caller's buffers, or s->h_in/h_out when
 * staged; `in` is the caller's input, copied into h_in chunk by chunk when
 * stage_in). capture: the calls are being captured into the set's graph
 * (cu_make_graph): the input copy is 1-D into d_in (a graph's copy can take
 * new pointers only when it is 1-D) and padded from there, the events the
 * host reads (ev_start, ev_in, ev_out) become event-record nodes, and the
 * chunk streams fork off ev_fork. 0, or -EIO with *ce set.
 */
static int cu_enqueue(struct cu_be *be, struct cu_set *s, int li, const void *in,
		      const void *src, void *dst, int stage_in, int capture, struct cu_err *ce)
{
	const struct cu_layout *lay = &be->lay[li];
	unsigned R = (unsigned)be->R, nfft = (unsigned)be->nfft;
	size_t in_sz = pc_format_sample_bytes(be->in_format);
	size_t out_sz = pc_output_sample_bytes(be->out_mode);
	unsigned rec = capture ? cudaEventRecordExternal : cudaEventRecordDefault;
	cudaEvent_t fork = capture ? s->ev_fork : s->ev_start;
	int packed = be->in_format == PC_FMT_SC16 || capture;
	dim3 gmul;

	/*
	 * Main stream: reset the counter, then release the chunk streams
	 * (everything earlier on this set is ordered before ev_start).
	 */
	EQ(cudaMemsetAsync(s->d_nonfinite, 0, sizeof(unsigned), s->stream));
	EQ(cudaEventRecordWithFlags(s->ev_start, s->stream, rec));
	if (capture)
		EQ(cudaEventRecord(s->ev_fork, s->stream));
	for (unsigned k = 0; k < lay->ncs; k++)
		EQ(cudaStreamWaitEvent(s->cs[k].stream, fork, 0));

	/*
	 * Chunk i on chunk stream i mod ncs: H2D, pad, FFT, multiply, IFFT,
	 * output, D2H. The copy engines serve the streams in turn, so the H2D
	 * of chunk i+1 runs while chunk i computes and the D2H of chunk i-1
	 * drains: both directions stay busy even with one CPI in flight.
	 * Staged input is copied into h_in one chunk at a time, just before
	 * that chunk's H2D is queued, so the DMA of chunk i runs while the
	 * host copies chunk i+1 (the set is free, so no DMA still reads h_in).
	 * ev_start is already recorded then: for a CPI queued call by call,
	 * device_ns includes any time the GPU waited for the host to queue
	 * the rest (and, staged, for those host copies); a graph has it all.
	 */
	for (unsigned i = 0; i < lay->nchunks; i++) {
		struct cu_chunk_stream *c = &s->cs[i % lay->ncs];
		size_t r0, ioff, ooff;
		unsigned nr = cu_chunk(be, lay, i, &r0, &ioff, &ooff);
		const char *cin = packed ? (const char *)s->d_in + ioff : NULL;
		float2 *fft = s->d_fft + r0 * be->pitch_elems;
		void *cout = (char *)s->d_out + ooff;
		cufftHandle plan = nr == lay->chunk_rows ? c->plan[li] : c->plan_rem[li];

		if (stage_in) {
			int hr = hcopy_run(be->hc, (char *)s->h_in + ioff, (const char *)in + ioff,
					   (size_t)nr * be->R * in_sz);

			if (hr < 0) {
				ce->call = "hcopy_run(input)";
				ce->len = (int)strlen(ce->call);
				ce->what = strerror(-hr);
				return -EIO;
			}
		}
		if (!packed)   /* cf32, call by call: packed slot rows -> pitched rows */
			EQ(cudaMemcpy2DAsync(fft, be->pitch_elems * sizeof(float2),
					     (const char *)src + ioff, (size_t)be->R * in_sz,
					     (size_t)be->R * in_sz, nr, cudaMemcpyDefault, c->stream));
		else
			EQ(cudaMemcpyAsync((char *)s->d_in + ioff, (const char *)src + ioff,
					   (size_t)nr * be->R * in_sz, cudaMemcpyDefault, c->stream));
		if (i + lay->ncs >= lay->nchunks)   /* this stream's last H2D */
			EQ(cudaEventRecord(c->ev_h2d, c->stream));
		if (be->fault_armed && !capture) {
			be->fault_armed = 0;
			k_fault<<<1, 4096, 0, c->stream>>>();   /* > 1024 threads: invalid */
			EQL("k_fault<<<1,4096>>> (injected fault)");
		}
		if (be->in_format == PC_FMT_SC16)
			k_pad_sc16<<<nr, CU_THREADS, 0, c->stream>>>((const short2 *)cin, fft,
								     be->pitch_elems, R, nfft);
		else if (packed)
			k_pad_cf32_packed<<<nr, CU_THREADS, 0, c->stream>>>(
				(const float2 *)cin, fft, be->pitch_elems, R, nfft, s->d_nonfinite);
		else
			k_pad_cf32<<<nr, CU_THREADS, 0, c->stream>>>(fft, be->pitch_elems, R, nfft,
								     s->d_nonfinite);
		EQL("k_pad");
		EQF(cufftExecC2C(plan, (cufftComplex *)fft, (cufftComplex *)fft, CUFFT_FORWARD));
		gmul = dim3((nfft + CU_THREADS - 1) / CU_THREADS, nr < 65535 ? nr : 65535);
		k_cmul<<<gmul, CU_THREADS, 0, c->stream>>>(fft, be->pitch_elems, nfft, nr, be->d_filt);
		EQL("k_cmul");
		EQF(cufftExecC2C(plan, (cufftComplex *)fft, (cufftComplex *)fft, CUFFT_INVERSE));
		switch (be->out_mode) {
		case PC_OUT_COMPLEX:
			k_out<PC_OUT_COMPLEX><<<nr, CU_THREADS, 0, c->stream>>>(fft, be->pitch_elems, R, cout);
			break;
		case PC_OUT_MAGNITUDE:
			k_out<PC_OUT_MAGNITUDE><<<nr, CU_THREADS, 0, c->stream>>>(fft, be->pitch_elems, R, cout);
			break;
		case PC_OUT_POWER_DB:
			k_out<PC_OUT_POWER_DB><<<nr, CU_THREADS, 0, c->stream>>>(fft, be->pitch_elems, R, cout);
			break;
		}
		EQL("k_out");
		EQ(cudaMemcpyAsync((char *)dst + ooff, cout, (size_t)nr * be->R * out_sz,
				   cudaMemcpyDefault, c->stream));
	}

	/* Join: ev_in after every H2D, ev_out after every D2H and the count. */
	for (unsigned k = 0; k < lay->ncs; k++) {
		EQ(cudaEventRecord(s->cs[k].ev_done, s->cs[k].stream));
		EQ(cudaStreamWaitEvent(s->stream, s->cs[k].ev_h2d, 0));
	}
	EQ(cudaEventRecordWithFlags(s->ev_in, s->stream, rec));
	for (unsigned k = 0; k < lay->ncs; k++)
		EQ(cudaStreamWaitEvent(s->stream, s->cs[k].ev_done, 0));
	EQ(cudaMemcpyAsync(s->h_nonfinite, s->d_nonfinite, sizeof(unsigned),
			   cudaMemcpyDeviceToHost, s->stream));
	EQ(cudaEventRecordWithFlags(s->ev_out, s->stream, rec));
	return 0;
}

#undef EQ
#undef EQF
#undef EQL

/*
 * GRAPHS
 *   Queued call by call, a CPI costs the host ~35 runtime calls (memset,
 *   events, per chunk a copy, four kernels, two FFTs and a copy back):
 *   ~0.1 ms of the data thread per CPI at 4x128x4096, and when the host
 *   slows down (a shared VM's vCPUs run 2-3x slower for stretches:
 *   doc/latency.md, sixth session) that time grows, and the GPU, which
 *   started at ev_start, waits for the calls still to come. So a CPI
 *   whose buffers are both in registered host memory runs as one CUDA
 *   graph per set and layout: captured from the same calls the first
 *   time that set and layout meet such a CPI (once; the first CPIs after
 *   a start or reload pay for it), then per
 *   CPI only the chunks' copy addresses are set
 *   (cudaGraphExecMemcpyNodeSetParams1D, host-side) and the graph is
 *   launched: 2 x chunks + 1 calls. Staged CPIs, device buffers and an
 *   injected fault take the call-by-call path. If a graph cannot be made
 *   or a CPI's addresses are refused, chirpd says so once and every later
 *   CPI takes that path (CHIRP_CUDA_GRAPHS=0 asks for it from the start).
 *   pc_info.graph_cpis counts the CPIs launched as graphs.
 */
#define CU_GRAPH_MAX_NODES 1024

static int cu_graph_ok(const struct cu_be *be, const struct cu_set *s, int li, int stage_in,
		       int stage_out, int in_dev, int out_dev)
{
	return be->graphs && !stage_in && !stage_out && !in_dev && !out_dev && !be->fault_armed &&
	       s->g_state[li] >= 0;
}

/* Graphs off for good, said once: the first len bytes of call (len < 0:
 * all of it, as printf's precision) failed with what. */
static void cu_graphs_off(struct cu_be *be, const char *call, int len, const char *what)
{
	(void)cudaGetLastError();   /* a failed capture's error is not the next call's */
	be->graphs = 0;
	log_warn("cuda: %.*s: %s; CPIs are queued call by call from now on", len, call, what);
}

/* Capture set s's CPI in layout li (the caller's in/out: registered host
 * memory) into s->g[li] and find each chunk's two copies. */
static void cu_make_graph(struct cu_be *be, struct cu_set *s, int li, const void *in, void *out)
{
	const struct cu_layout *lay = &be->lay[li];
	struct cu_err ce = { NULL, NULL, 0 };
	cudaGraphNode_t nodes[CU_GRAPH_MAX_NODES];
	cudaGraph_t g = NULL;
	cudaGraphExec_t gx;
	size_t n = 0;
	unsigned found = 0;
	cudaError_t e;
	int rc;

	s->g_state[li] = -1;
	e = cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal);
	if (e != cudaSuccess) {
		cu_graphs_off(be, "cudaStreamBeginCapture", -1, cudaGetErrorString(e));
		return;
	}
	rc = cu_enqueue(be, s, li, in, in, out, 0, 1, &ce);
	e = cudaStreamEndCapture(s->stream, &g);   /* always: the stream leaves capture */
	if (rc < 0 || e != cudaSuccess) {
		if (g)
			(void)cudaGraphDestroy(g);
		if (rc < 0)
			cu_graphs_off(be, ce.call, ce.len, ce.what);
		else
			cu_graphs_off(be, "cudaStreamEndCapture", -1, cudaGetErrorString(e));
		return;
	}
	e = cudaGraphGetNodes(g, NULL, &n);
	if (e == cudaSuccess && n > CU_GRAPH_MAX_NODES)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = cudaGraphGetNodes(g, nodes, &n);
	for (size_t k = 0; e == cudaSuccess && k < n; k++) {
		enum cudaGraphNodeType t;
		struct cudaMemcpy3DParms p;
		const char *sp, *dp;

		e = cudaGraphNodeGetType(nodes[k], &t);
		if (e != cudaSuccess || t != cudaGraphNodeTypeMemcpy)
			continue;
		e = cudaGraphMemcpyNodeGetParams(nodes[k], &p);
		if (e != cudaSuccess)
			break;
		sp = (const char *)p.srcPtr.ptr + p.srcPos.x;
		dp = (const char *)p.dstPtr.ptr + p.dstPos.x;
		for (unsigned i = 0; i < lay->nchunks; i++) {
			size_t r0, ioff, ooff;

			(void)cu_chunk(be, lay, i, &r0, &ioff, &ooff);

			if (sp == (const char *)in + ioff && dp == (const char *)s->d_in + ioff) {
				s->g_h2d[li][i] = nodes[k];
				found++;
			} else if (sp == (const char *)s->d_out + ooff && dp == (const char *)out + ooff) {
				s->g_d2h[li][i] = nodes[k];
				found++;
			}
		}
	}
	if (e != cudaSuccess || found != 2 * lay->nchunks) {
		(void)cudaGraphDestroy(g);
		cu_graphs_off(be, "finding a CPI graph's copies", -1,
			      e != cudaSuccess ? cudaGetErrorString(e) : "not one per chunk and direction");
		return;
	}
	e = cudaGraphInstantiate(&gx, g, 0);
	if (e != cudaSuccess) {
		(void)cudaGraphDestroy(g);
		cu_graphs_off(be, "cudaGraphInstantiate", -1, cudaGetErrorString(e));
		return;
	}
	s->g[li] = g;
	s->gx[li] = gx;
	s->g_state[li] = 1;
	log_debug("cuda: set %u, layout %d: a CPI is one graph of %zu nodes",
		  (unsigned)(s - be->sets), li, n);
}

/*
 * Launch set s's graph for layout li with this CPI's buffers (made first
 * if need be). 0 launched; 1 not (no graph, or its copies refused the
 * addresses: the caller queues the CPI call by call); -EIO the launch
 * failed (the backend has failed, as any failed call).
 */
static int cu_graph_launch(struct cu_be *be, struct cu_set *s, int li, const void *in, void *out)
{
	const struct cu_layout *lay = &be->lay[li];
	size_t in_sz = pc_format_sample_bytes(be->in_format);
	size_t out_sz = pc_output_sample_bytes(be->out_mode);
	cudaError_t e = cudaSuccess;

	if (s->g_state[li] == 0)
		cu_make_graph(be, s, li, in, out);
	if (s->g_state[li] != 1)
		return 1;
	for (unsigned i = 0; i < lay->nchunks && e == cudaSuccess; i++) {
		size_t r0, ioff, ooff, nr = cu_chunk(be, lay, i, &r0, &ioff, &ooff);

		e = cudaGraphExecMemcpyNodeSetParams1D(s->gx[li], s->g_h2d[li][i],
						       (char *)s->d_in + ioff,
						       (const char *)in + ioff, nr * be->R * in_sz,
						       cudaMemcpyDefault);
		if (e == cudaSuccess)
			e = cudaGraphExecMemcpyNodeSetParams1D(s->gx[li], s->g_d2h[li][i],
							       (char *)out + ooff,
							       (const char *)s->d_out + ooff,
							       nr * be->R * out_sz, cudaMemcpyDefault);
	}
	if (e != cudaSuccess) {
		cu_graphs_off(be, "cudaGraphExecMemcpyNodeSetParams1D", -1, cudaGetErrorString(e));
		return 1;
	}
	e = cudaGraphLaunch(s->gx[li], s->stream);
	if (e != cudaSuccess) {
		cu_fail(be, "cudaGraphLaunch", cudaGetErrorString(e));
		return -EIO;
	}
	be->graph_cpis++;
	return 0;
}

static int cu_submit(void *p, const void *in, void *out, uint64_t tag)
{
	struct cu_be *be = (struct cu_be *)p;
	struct cu_set *s;
	const void *src = in;
	void *dst = out;
	int stage_in, stage_out, in_dev = 0, out_dev = 0, rc = 0;
	int li, launched = 0;

	if (be->failed)
		return -EIO;
	if (be->count == be->nsets)
		return -EAGAIN;
	CK(cudaSetDevice(be->dev));
	s = &be->sets[(be->head + be->count) % be->nsets];

	stage_in = !cu_dma_ok(be, in, be->in_bytes, &in_dev);
	stage_out = !cu_dma_ok(be, out, be->out_bytes, &out_dev);
	if (be->staging == PC_STAGING_COPY) {
		stage_in = !in_dev;
		stage_out = !out_dev;
	}
	if (stage_in || stage_out) {
		if (!be->have_staging && !be->warned_unregistered) {
			be->warned_unregistered = 1;
			log_warn("cuda: CPI buffers are not in registered memory; staging through "
				 "pinned copies (one host copy per CPI and direction, %u thread%s)",
				 be->staging_threads, be->staging_threads == 1 ? "" : "s");
		}
		rc = cu_alloc_staging(be);
		if (rc < 0)
			goto out;
		be->staged_cpis++;
	}
	if (stage_in)   /* filled chunk by chunk below */
		src = s->h_in;
	if (stage_out)
		dst = s->h_out;
	li = cu_pick_layout(be);
	if (li < 0) {
		rc = li;
		goto out;
	}

	if (cu_graph_ok(be, s, li, stage_in, stage_out, in_dev, out_dev)) {
		int g = cu_graph_launch(be, s, li, in, out);

		if (g < 0) {
			rc = g;
			goto out;
		}
		launched = g == 0;
	}
	if (!launched) {
		struct cu_err ce = { NULL, NULL, 0 };

		rc = cu_enqueue(be, s, li, in, src, dst, stage_in, 0, &ce);
		if (rc < 0) {
			cu_fail_n(be, ce.call, (size_t)ce.len, ce.what);
			goto out;
		}
	}

	/* Wake-ups for pc_poll, off the compute stream so they delay nothing.
	 * A caller that polls (busy_poll) needs none: four API calls and a
	 * wake-up of CUDA's callback thread per CPI saved. */
	if (!be->busy_poll) {
		CK(cudaStreamWaitEvent(be->notify_in, s->ev_in, 0));
		CK(cudaLaunchHostFunc(be->notify_in, cu_notify, be));
		CK(cudaStreamWaitEvent(be->notify_out, s->ev_out, 0));
		CK(cudaLaunchHostFunc(be->notify_out, cu_notify, be));
	}

	s->tag = tag;
	s->nchunks = be->lay[li].nchunks;
	s->h2d_done = 0;
	s->out = out;
	s->stage_out = stage_out;
	s->in_done = stage_in;    /* staged: the caller's input is free already */
	s->in_reported = 0;
	s->out_reported = 0;
	be->count++;
out:
	return rc;
}

/* One non-blocking pass: report what completed, in order. */
static int cu_pass(struct cu_be *be, struct pc_done *done, int max)
{
	int n = 0, in_chain = 1, out_chain = 1, r;

	for (unsigned i = 0; i < be->count && n < max && (in_chain || out_chain); i++) {
		struct cu_set *s = &be->sets[(be->head + i) % be->nsets];
		unsigned fl = 0;

		if (!s->in_reported) {
			if (!in_chain)
				r = 0;
			else if (s->in_done)
				r = 1;
			else
				r = cu_query(be, s->ev_in, "cudaEventQuery(input)");
			if (r < 0)
				return r;
			if (r) {
				if (!s->in_done)   /* staged: in_done at submit */
					s->h2d_done = 1;
				s->in_done = 1;
				fl |= PC_DONE_INPUT;
			} else {
				in_chain = 0;
			}
		}
		if (!s->out_reported) {
			/* An output never before its own input, nor before older outputs. */
			if (out_chain && s->in_done) {
				r = cu_query(be, s->ev_out, "cudaEventQuery(output)");
				if (r < 0)
					return r;
			} else {
				r = 0;
			}
			if (r) {
				if (s->stage_out) {
					int hr = hcopy_run(be->hc, s->out, s->h_out, be->out_bytes);

					if (hr < 0) {
						cu_fail(be, "hcopy_run(output)", strerror(-hr));
						return -EIO;
					}
				}
				fl |= PC_DONE_OUTPUT;
			} else {
				out_chain = 0;
			}
		}
		if (!fl)
			continue;
		if (fl & PC_DONE_INPUT)
			s->in_reported = 1;
		if (fl & PC_DONE_OUTPUT)
			s->out_reported = 1;
		done[n].tag = s->tag;
		done[n].flags = fl;
		done[n].nonfinite_rows = (fl & PC_DONE_OUTPUT) ? *s->h_nonfinite : 0;
		done[n].device_ns = 0;
		done[n].recomputed = 0;
		done[n].woken = 0;
		done[n].absent = 0;
		done[n].chunks = (fl & PC_DONE_OUTPUT) ? s->nchunks : 0;
		if (fl & PC_DONE_OUTPUT) {
			float ms = 0.0f;

			/* Both events completed; a failure here only loses the
			 * figure, never the CPI. */
			if (cudaEventElapsedTime(&ms, s->ev_start, s->ev_out) == cudaSuccess)
				done[n].device_ns = (uint64_t)((double)ms * 1e6);
			else
				(void)cudaGetLastError();
		}
		n++;
	}
	while (be->count > 0 && be->sets[be->head].out_reported) {
		be->head = (be->head + 1) % be->nsets;
		be->count--;
	}
	return n;
}

static void ts_add_ms(struct timespec *t, long ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

/*
 * The tail of the oldest CPI: its input is done, only its last chunk's
 * compute and D2H remain (a fraction of a millisecond). Waking through the
 * host-function notification costs tens of microseconds, which at depth 1
 * is idle time for both copy engines, so here we poll the events for up to
 * CU_SPIN_US instead (and never past the caller's deadline). Earlier in a
 * CPI we sleep. Returns what cu_pass returns (0: keep waiting).
 */

static int cu_spin_tail(struct cu_be *be, struct pc_done *done, int max,
			const struct timespec *deadline)
{
	const struct cu_set *s = &be->sets[be->head];
	struct timespec now;
	uint64_t end;
	int n;

	if (be->count == 0 || !s->in_done || s->out_reported || be->spin_us == 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	end = ts_ns(&now) + be->spin_us * 1000ull;
	if (deadline && ts_ns(deadline) < end)
		end = ts_ns(deadline);
	do {
		n = cu_pass(be, done, max);
		if (n != 0)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (ts_ns(&now) < end);
	return 0;
}

/*
 * timeout_ms: 0 = one pass; > 0 = wait up to that long (CLOCK_MONOTONIC,
 * woken by the host-function notifications, so no busy wait); < 0 = until
 * something completes, re-querying every CU_WAIT_SLICE_MS so a device
 * fault is still noticed.
 */
static int cu_poll(void *p, struct pc_done *done, int max, int timeout_ms)
{
	struct cu_be *be = (struct cu_be *)p;
	struct timespec deadline, slice;
	uint64_t seq;
	int n, rc = 0, timed_out = 0;

	if (be->failed)
		return -EIO;
	if (max < 1)
		return -EINVAL;
	CK(cudaSetDevice(be->dev));
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (timeout_ms > 0)
		ts_add_ms(&deadline, timeout_ms);
	if (be->busy_poll) {
		/* No notifications are queued: poll until something completes
		 * or the deadline passes (timeout < 0: until something does). */
		for (;;) {
			struct timespec now;

			n = cu_pass(be, done, max);
			if (n != 0 || be->count == 0 || timeout_ms == 0)
				return n;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (timeout_ms > 0 && ts_ns(&now) >= ts_ns(&deadline))
				return 0;
		}
	}
	for (;;) {
		pthread_mutex_lock(&be->mu);
		seq = be->notify_seq;
		pthread_mutex_unlock(&be->mu);

		n = cu_pass(be, done, max);
		if (n != 0 || be->count == 0 || timeout_ms == 0 || timed_out)
			return n;
		n = cu_spin_tail(be, done, max, timeout_ms > 0 ? &deadline : NULL);
		if (n != 0)
			return n;

		pthread_mutex_lock(&be->mu);
		while (be->notify_seq == seq) {
			int w;

			if (timeout_ms > 0) {
				w = pthread_cond_timedwait(&be->cv, &be->mu, &deadline);
			} else {
				clock_gettime(CLOCK_MONOTONIC, &slice);
				ts_add_ms(&slice, CU_WAIT_SLICE_MS);
				w = pthread_cond_timedwait(&be->cv, &be->mu, &slice);
			}
			if (w == ETIMEDOUT) {
				if (timeout_ms > 0)
					timed_out = 1;
				break;
			}
		}
		pthread_mutex_unlock(&be->mu);
	}
out:
	return rc;
}

static unsigned cu_in_flight(void *p)
{
	return ((struct cu_be *)p)->count;
}

static const char *cu_last_error(void *p)
{
	return ((struct cu_be *)p)->last_error;
}

static int cu_inject_fault(void *p)
{
	struct cu_be *be = (struct cu_be *)p;

	if (be->failed)
		return -EIO;
	be->fault_armed = 1;
	return 0;
}

static int cu_bind_threads(void *p, const cpu_set_t *cpus)
{
	struct cu_be *be = (struct cu_be *)p;

	be->bind_cpus = *cpus;
	be->have_bind = 1;
	return be->hc ? hcopy_bind(be->hc, cpus) : 0;
}

extern "C" const struct pc_backend_ops pc_cuda_ops = {
	"cuda",
	cu_create,
	cu_destroy,
	cu_info,
	cu_register_host,
	cu_unregister_host,
	cu_submit,
	cu_poll,
	cu_in_flight,
	cu_last_error,
	cu_inject_fault,
	cu_bind_threads,
	cu_queue_hint,
};
