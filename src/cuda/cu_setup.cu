/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_setup.cu — the CUDA backend's probe, create and destroy.
 *
 * cu_create builds everything a CPI needs, in steps: the backend's own
 * state and chunk layouts, the completion lock, the device, the filter
 * and notification streams, per set its streams, events, buffers and
 * cuFFT plans, and (staging = copy) the pinned staging buffers. Any
 * failure destroys what was built and returns NULL with the reason: the
 * backend is never half-built.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cu_private.h"
extern "C" {
#include "hcopy.h"
#include "log.h"
}

/* ---- probe ------------------------------------------------------------------ */

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

/*
 * What a pc on device gpu (or at bus_id when gpu < 0) would run on, as a
 * line that changes with the device, its driver or the CUDA libraries:
 * "cuda NVIDIA H100 80GB HBM3 0000:41:00.0 driver 13000 runtime 13000
 * cufft 12000". 0, or -ENODEV with the reason in buf.
 */
extern "C" int pc_cuda_identity(int gpu, const char *bus_id, char *buf, size_t len)
{
	struct cudaDeviceProp pr;
	int dev = gpu, drv = 0, rt = 0, fft = 0;

	if (gpu < 0 && (!bus_id || cudaDeviceGetByPCIBusId(&dev, bus_id) != cudaSuccess)) {
		(void)cudaGetLastError();
		snprintf(buf, len, "no CUDA device at %s", bus_id ? bus_id : "(none)");
		return -ENODEV;
	}
	if (cudaGetDeviceProperties(&pr, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(buf, len, "no CUDA device %d", dev);
		return -ENODEV;
	}
	(void)cudaDriverGetVersion(&drv);
	(void)cudaRuntimeGetVersion(&rt);
	(void)cufftGetVersion(&fft);
	snprintf(buf, len, "cuda %s %04x:%02x:%02x.0 driver %d runtime %d cufft %d", pr.name,
		 pr.pciDomainID, pr.pciBusID, pr.pciDeviceID, drv, rt, fft);
	return 0;
}

/* ---- destroy ---------------------------------------------------------------- */

static void cu_destroy_chunk_stream(struct cu_chunk_stream *c)
{
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

static void cu_destroy_set(struct cu_set *s)
{
	for (unsigned k = 0; k < CU_CHUNK_STREAMS; k++)
		cu_destroy_chunk_stream(&s->cs[k]);
	cu_graph_free(s);
	cu_radar_free_set(s);    /* its plan is bound to s->stream: before it goes */
	cu_beams_free_set(s);
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

/*
 * Errors are ignored here: after a device fault every call fails, and what
 * the host holds must still be freed. Every stream is drained first, so no
 * copy still reads or writes what is freed or unregistered.
 */
void cu_destroy(void *p)
{
	struct cu_be *be = (struct cu_be *)p;

	if (!be)
		return;
	(void)cudaSetDevice(be->dev);
	for (unsigned i = 0; i < be->nsets; i++)
		if (be->sets[i].stream)
			(void)cudaStreamSynchronize(be->sets[i].stream);
	if (be->have_notify_in)
		(void)cudaStreamSynchronize(be->notify_in);
	if (be->have_notify_out)
		(void)cudaStreamSynchronize(be->notify_out);
	for (unsigned i = 0; i < be->nsets; i++)
		cu_destroy_set(&be->sets[i]);
	hcopy_destroy(be->hc);
	cu_release_regions(be);
	if (be->have_notify_in)
		(void)cudaStreamDestroy(be->notify_in);
	if (be->have_notify_out)
		(void)cudaStreamDestroy(be->notify_out);
	(void)cudaFree(be->d_filts);
	cu_radar_free(be);
	cu_fused_free(be);
	cu_beams_free(be);
	(void)cudaGetLastError();
	if (be->have_sync) {
		pthread_cond_destroy(&be->cv);
		pthread_mutex_destroy(&be->mu);
	}
	free(be->sets);
	free(be);
}

/* ---- create ----------------------------------------------------------------- */

/* be->device, "<device name> (<pci bus id>)", and the NUMA node from sysfs. */
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
 * The backend's state from a checked setup: geometry, formats, staging and
 * the tuning (pc_params.tune, ranges checked by pc_params_check). NULL with
 * the reason in err for an invalid setup or no memory.
 */
static struct cu_be *cu_alloc_be(const struct pc_setup *su, char *err, size_t errlen)
{
	const struct radar_setup *rs = su->radar;
	size_t in_sz = pc_format_sample_bytes(su->in_format);
	size_t out_sz = pc_output_sample_bytes(su->out_mode);
	int cube = su->out_mode == PC_OUT_COMPLEX || su->out_mode == PC_OUT_MAGNITUDE ||
		   su->out_mode == PC_OUT_POWER_DB;
	struct cu_be *be;

	/* A map output or none only with the chain (pc.c checks it; a map's
	 * size needs Nd) */
	if (!in_sz || (!cube && !rs) || su->rows < 1 || su->samples < 1 ||
	    su->nfft < su->samples || su->nfft > INT_MAX || su->rows > INT_MAX ||
	    su->streams < 1 || !su->filts || su->nfilts < 1 || su->nfilts > PC_MAX_MODES ||
	    (rs && (rs->pulses < 1 || rs->maps < 1 || rs->nd < 1))) {
		snprintf(err, errlen, "invalid setup (rows %zu, R %u, nfft %zu, streams %u, out %s)",
			 su->rows, su->samples, su->nfft, su->streams, names_of(names_output, su->out_mode));
		return NULL;
	}
	be = (struct cu_be *)calloc(1, sizeof(*be));
	if (be)
		be->sets = (struct cu_set *)calloc(su->streams, sizeof(*be->sets));
	if (!be || !be->sets) {
		free(be);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	be->nsets = su->streams;
	/* with beams compression runs on the B x P beam rows the beam stage
	 * writes as cf32 (cu_beams.cu) */
	be->rows = su->beams ? (size_t)su->beams->beams * su->pulses : su->rows;
	be->R = su->samples;
	be->nfft = su->nfft;
	be->nfilts = su->nfilts;
	be->in_format = su->beams ? PC_FMT_CF32 : su->in_format;
	be->out_mode = su->out_mode;
	be->in_bytes = be->rows * su->samples * pc_format_sample_bytes(be->in_format);
	be->cube_out = cube;
	be->rs = rs;
	be->snap_cells = rs ? su->snapshot_cells : 0;
	if (cube)
		be->out_bytes = be->rows * su->samples * out_sz;
	else   /* a map: C x Nd x R float32; none: 0 */
		be->out_bytes = (size_t)rs->channels * rs->nd * su->samples * out_sz;
	be->staging = su->staging;
	be->staging_threads = su->staging_threads;   /* 1..HCOPY_MAX_THREADS (pc.c) */
	be->busy_poll = su->busy_poll;
	be->graphs = su->tune.cuda_graphs != 0;
	be->staging_nt = su->tune.staging_nt != 0;
	be->spin_us = su->tune.cuda_spin_us;         /* 0..PC_MAX_CUDA_SPIN_US (pc.c) */
	be->numa_node = -1;
	return be;
}

/* The lock and condition variable pc_poll sleeps on (CLOCK_MONOTONIC). */
static int cu_init_sync(struct cu_be *be)
{
	pthread_condattr_t ca;

	if (pthread_mutex_init(&be->mu, NULL) != 0 || pthread_condattr_init(&ca) != 0) {
		snprintf(be->last_error, sizeof(be->last_error), "pthread_mutex_init failed");
		return -ENOMEM;
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&be->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		pthread_mutex_destroy(&be->mu);
		snprintf(be->last_error, sizeof(be->last_error), "pthread_cond_init failed");
		return -ENOMEM;
	}
	pthread_condattr_destroy(&ca);
	be->have_sync = 1;
	return 0;
}

/* The device, by index or by PCI bus id; usable by this build; current. */
static int cu_open_device(struct cu_be *be, const struct pc_setup *su)
{
	struct cudaFuncAttributes fa;
	char why[160] = "";
	int ndev = 0, rc = 0;
	cudaError_t e;

	CK(cudaGetDeviceCount(&ndev));
	if (su->gpu >= 0) {
		if (su->gpu >= ndev) {
			snprintf(be->last_error, sizeof(be->last_error),
				 "gpu %d: no such device (%d CUDA device%s)", su->gpu, ndev,
				 ndev == 1 ? "" : "s");
			return -ENODEV;
		}
		be->dev = su->gpu;
	} else {
		if (!su->gpu_bus_id || !*su->gpu_bus_id) {
			snprintf(be->last_error, sizeof(be->last_error), "gpu -1 needs gpu_bus_id");
			return -EINVAL;
		}
		if (cudaDeviceGetByPCIBusId(&be->dev, su->gpu_bus_id) != cudaSuccess) {
			(void)cudaGetLastError();
			snprintf(be->last_error, sizeof(be->last_error),
				 "gpu_bus_id %s: no CUDA device at that PCI address", su->gpu_bus_id);
			return -ENODEV;
		}
	}
	if (!cu_device_usable(be->dev, why, sizeof(why))) {
		snprintf(be->last_error, sizeof(be->last_error), "%s", why);
		return -ENODEV;
	}
	CK(cudaSetDevice(be->dev));
	cu_describe(be);
	/* Is there code for this device? (Fails here rather than at launch.) */
	e = cu_kernels_attributes(&fa);
	if (e != cudaSuccess) {
		cu_fail(be, "cudaFuncGetAttributes", cudaGetErrorString(e));
		rc = -EIO;
	}
out:
	return rc;
}

/* Every mode's filter on the device, in one allocation ([nfilts][nfft],
 * the layout pc.c hands over), and the two notification streams. */
static int cu_make_shared(struct cu_be *be, const float *filts)
{
	size_t bytes = (size_t)be->nfilts * be->nfft * sizeof(float2);
	int rc = 0;

	CK(cudaMalloc((void **)&be->d_filts, bytes));
	CK(cudaMemcpy(be->d_filts, filts, bytes, cudaMemcpyHostToDevice));
	CK(cudaStreamCreateWithFlags(&be->notify_in, cudaStreamNonBlocking));
	be->have_notify_in = 1;
	CK(cudaStreamCreateWithFlags(&be->notify_out, cudaStreamNonBlocking));
	be->have_notify_out = 1;
out:
	return rc;
}

/*
 * Set s's pitched FFT rows (the pitch checked: cuFFT takes the row
 * distance in elements, and every set must share the plans' pitch), only
 * where something uses them: the cuFFT engine transforms in them, and the
 * fused kernel writes them for the radar chain, which reads the compressed
 * rows there (a non-cube output implies the chain). The fused kernel
 * without the chain and with a cube output reads the input and writes the
 * output itself (cu_fused_job, the same test), so there d_fft would be
 * rows x pitch bytes per set that nothing touches: it stays NULL, and
 * pitch_elems 0 (nothing on that path uses a pitch; cu_fft_row gives
 * NULL).
 */
static int cu_alloc_fft_rows(struct cu_be *be, struct cu_set *s, unsigned i)
{
	size_t pitch = 0;
	int rc = 0;

	if (be->fused && be->cube_out && !be->rs)
		return 0;
	CK(cudaMallocPitch((void **)&s->d_fft, &pitch, be->nfft * sizeof(float2), be->rows));
	if (pitch % sizeof(float2) != 0) {
		snprintf(be->last_error, sizeof(be->last_error),
			 "cudaMallocPitch returned a pitch of %zu bytes, not a multiple of %zu: "
			 "cuFFT needs the row distance in elements", pitch, sizeof(float2));
		return -EINVAL;
	}
	if (i > 0 && pitch / sizeof(float2) != be->pitch_elems) {
		snprintf(be->last_error, sizeof(be->last_error),
			 "cudaMallocPitch returned different pitches for equal buffers");
		return -EINVAL;
	}
	be->pitch_elems = pitch / sizeof(float2);
out:
	return rc;
}

/*
 * Set i's device buffers: d_in where the input is packed, d_out, the
 * pitched FFT rows where they are used (cu_alloc_fft_rows), the
 * non-finite count and its pinned copy.
 */
static int cu_alloc_set_buffers(struct cu_be *be, struct cu_set *s, unsigned i)
{
	int rc = 0;

	/* cf32 lands in d_fft directly, but a graph's copy must be 1-D and
	 * the fused kernel reads packed rows */
	if (be->in_format == PC_FMT_SC16 || be->graphs || be->fused || be->bm)
		CK(cudaMalloc(&s->d_in, be->in_bytes));
	/* the output as it leaves: a cube's, map_db's (map_power leaves
	 * from the chain's d_map; none has none) */
	if (be->cube_out || be->out_mode == PC_OUT_MAP_DB)
		CK(cudaMalloc(&s->d_out, be->out_bytes));
	rc = cu_alloc_fft_rows(be, s, i);
	if (rc < 0)
		goto out;
	CK(cudaMalloc((void **)&s->d_nonfinite, sizeof(unsigned)));
	CK(cudaMemset(s->d_nonfinite, 0, sizeof(unsigned)));
	CK(cudaHostAlloc((void **)&s->h_nonfinite, sizeof(unsigned),
			 cudaHostAllocPortable | cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&s->hd_nonfinite, s->h_nonfinite, 0));
	*s->h_nonfinite = 0;
out:
	return rc;
}

/*
 * One batched in-place C2C plan over `batch` pitched rows of nfft samples
 * (idist = the pitch in elements), bound to stream st; *have is set as soon
 * as the handle exists, so cu_destroy frees it whatever fails after.
 * Returns 0, or -EIO with the failure recorded.
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

/*
 * Chunk stream k of a set: its stream, events, and per layout that uses it
 * the plans for a full chunk and (where it differs) the last one.
 */
static int cu_make_chunk_stream(struct cu_be *be, struct cu_chunk_stream *c, unsigned k)
{
	int rc = 0;

	CK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&c->ev_h2d, cudaEventDisableTiming));
	c->have_ev_h2d = 1;
	CK(cudaEventCreateWithFlags(&c->ev_done, cudaEventDisableTiming));
	c->have_ev_done = 1;
	for (unsigned l = 0; l < (be->have_idle ? (unsigned)CU_LAY_WHOLE : 1u); l++) {
		const struct chunk_layout *lay = &be->lay[l];

		if (k >= lay->nstreams || be->fused)   /* fused: no cuFFT plans */
			continue;
		rc = cu_make_plan(be, &c->plan[l], &c->have_plan[l], lay->chunk_rows, c->stream);
		if (rc == 0 && lay->rem_rows != lay->chunk_rows)
			rc = cu_make_plan(be, &c->plan_rem[l], &c->have_plan_rem[l], lay->rem_rows,
					  c->stream);
		if (rc < 0)
			goto out;
	}
out:
	return rc;
}

/* Set i: its stream, events, buffers and chunk streams. */
static int cu_make_set(struct cu_be *be, unsigned i)
{
	struct cu_set *s = &be->sets[i];
	int rc = 0, least, greatest;

	/* The set's stream at the device's greatest priority, its chunk
	 * streams at the default, the least: a CPI's radar chain, queued on
	 * the set's stream once its chunks are done, takes the SMs ahead of
	 * the next CPI's chunk kernels, whose work its copies still hide, and
	 * runs as fast as alone. A CUDA graph's nodes take the priority of
	 * the stream it is launched into, except a beams graph's, which keep
	 * the priorities they were captured with (cu_graph.cu). */
	CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	CK(cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, greatest));
	CK(cudaEventCreateWithFlags(&s->ev_in, cudaEventDisableTiming));
	s->have_ev_in = 1;
	/* ev_out and ev_start time the CPI on the GPU (pc_done.device_ns) */
	CK(cudaEventCreateWithFlags(&s->ev_out, cudaEventDefault));
	s->have_ev_out = 1;
	rc = cu_alloc_set_buffers(be, s, i);
	if (rc < 0)
		goto out;
	CK(cudaEventCreateWithFlags(&s->ev_start, cudaEventDefault));
	s->have_ev_start = 1;
	CK(cudaEventCreateWithFlags(&s->ev_fork, cudaEventDisableTiming));
	s->have_ev_fork = 1;
	for (unsigned k = 0; k < be->ncs && rc == 0; k++)
		rc = cu_make_chunk_stream(be, &s->cs[k], k);
	if (rc == 0 && be->rs)
		rc = cu_radar_make_set(be, s);
	if (rc == 0 && be->snap_cells)
		rc = cu_radar_make_snap(be, s);
	if (rc == 0 && be->bm)
		rc = cu_beams_make_set(be, s);
out:
	return rc;
}

/* The line that says what was built. */
static void cu_log_created(const struct cu_be *be)
{
	const struct chunk_layout *d = &be->lay[CU_LAY_DEPTH], *i = &be->lay[CU_LAY_IDLE];
	char idle[96] = "", rows[48] = "no FFT rows";   /* none: cu_alloc_fft_rows */

	if (be->have_idle)
		snprintf(idle, sizeof(idle), " (%u of %zu rows while the GPU is not behind)",
			 i->nchunks, i->chunk_rows);
	if (be->pitch_elems)
		snprintf(rows, sizeof(rows), "row pitch %zu B", be->pitch_elems * sizeof(float2));
	log_info("cuda: %s, nfft %zu (%s), depth %u, %u chunk%s of %zu rows%s, %s, "
		 "%s, %s staging (%u copy thread%s%s when staged)",
		 be->device, be->nfft, be->fft_engine, be->nsets, d->nchunks, d->nchunks == 1 ? "" : "s",
		 d->chunk_rows, idle, rows,
		 be->graphs ? "a registered CPI is one CUDA graph" : "CPIs queued call by call",
		 be->staging == PC_STAGING_COPY ? "copy" : "register/auto",
		 be->staging_threads, be->staging_threads == 1 ? "" : "s",
		 be->staging_nt ? ", streaming stores" : "");
	if (be->rs)
		log_info("cuda: radar chain on the GPU: P' %u, Nd %u (strided Doppler FFT), %s",
			 be->rs->pulses_mti, be->rs->nd,
			 be->rs->cfar ? (be->rs->integrate ? "integrated CFAR" : "CFAR per channel")
				      : "no CFAR");
}

void *cu_create(const struct pc_setup *su, char *err, size_t errlen)
{
	struct cu_be *be;
	int rc;

	be = cu_alloc_be(su, err, errlen);
	if (!be)
		return NULL;
	rc = su->beams ? cu_beams_create(be, su) : 0;
	if (rc == 0)
		rc = cu_choose_chunks(be, &su->tune);
	if (rc == 0)
		rc = cu_init_sync(be);
	if (rc == 0)
		rc = cu_open_device(be, su);
	if (rc == 0)
		rc = cu_make_shared(be, su->filts);
	if (rc == 0)
		rc = cu_fused_create(be, su->tune.cuda_fused, su->filts, err, errlen);
	if (rc == 0 && be->rs)
		rc = cu_radar_create(be);
	for (unsigned i = 0; i < be->nsets && rc == 0; i++)
		rc = cu_make_set(be, i);
	if (rc == 0 && be->staging == PC_STAGING_COPY)
		rc = cu_alloc_staging(be);
	if (rc == 0) {
		cudaError_t e = cudaDeviceSynchronize();   /* setup only: the filter upload */

		if (e != cudaSuccess) {
			cu_fail(be, "cudaDeviceSynchronize", cudaGetErrorString(e));
			rc = -EIO;
		}
	}
	if (rc < 0) {
		if (rc != -ENOTSUP)   /* -ENOTSUP: err says why already */
			snprintf(err, errlen, "%s", be->last_error[0] ? be->last_error : strerror(-rc));
		cu_destroy(be);
		return NULL;
	}
	cu_log_created(be);
	return be;
}
