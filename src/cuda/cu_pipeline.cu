/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_pipeline.cu — the CUDA backend's data path entry points (submit,
 * poll, info, hints) and its table of functions, pc_cuda_ops.
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
 *   events for up to tune.cuda_spin_us before sleeping (cu_spin_tail). A
 *   poll thread thus spins for at most that long per CPI.
 *   With busy_poll (pc_setup; the daemon's default) the caller polls with
 *   timeout 0 while CPIs are in flight: no host functions are queued at
 *   all, and a pc_poll with a timeout polls the events until it expires.
 *   ev_start and ev_out are timing events: their difference is the CPI's
 *   time on the GPU (pc_done.device_ns, the flight recorder's "device").
 */
#include <stdio.h>
#include <time.h>

#include "cu_private.h"
extern "C" {
#include "hcopy.h"
#include "log.h"
}

static void CUDART_CB cu_notify(void *arg)
{
	struct cu_be *be = (struct cu_be *)arg;

	pthread_mutex_lock(&be->mu);
	be->notify_seq++;
	pthread_cond_broadcast(&be->cv);
	pthread_mutex_unlock(&be->mu);
}

/* ---- info ------------------------------------------------------------------- */

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
	snprintf(info->fft_engine, sizeof(info->fft_engine), "%s", be->fft_engine);
}

static void cu_queue_hint(void *p, unsigned waiting)
{
	((struct cu_be *)p)->waiting = waiting;
}

/* ---- submit ----------------------------------------------------------------- */

/* How a CPI's buffers reach the device: through pinned staging, or as
 * device memory (neither: registered host memory, DMA in place). */
struct cu_route {
	int stage_in, stage_out, stage_det;
	int on_device;           /* any of them is device memory            */
	int in_dev, out_dev, det_dev;   /* the input / output / list is     */
};

/* Whether a buffer of len bytes at p needs staging; *dev when it is device
 * memory. A buffer of no bytes (PC_OUT_NONE, no detections) needs none. */
static int cu_needs_staging(struct cu_be *be, const void *p, size_t len, int *dev)
{
	int ok;

	*dev = 0;
	if (len == 0)
		return 0;
	ok = cu_dma_ok(be, p, len, dev);
	if (be->staging == PC_STAGING_COPY)
		return !*dev;
	return !ok;
}

/*
 * Which of a CPI's buffers go through pinned staging and which are device
 * memory; the staging buffers made the first time they are needed. 0 or
 * -EIO.
 */
static int cu_plan_staging(struct cu_be *be, const void *in, void *out, void *det,
			   struct cu_route *rt)
{
	int din, dout, ddet, rc;

	rt->stage_in = cu_needs_staging(be, in, be->bm ? be->bm->in_bytes : be->in_bytes, &din);
	rt->stage_out = cu_needs_staging(be, out, be->out_bytes, &dout);
	rt->stage_det = cu_needs_staging(be, det, be->det_bytes, &ddet);
	rt->on_device = din || dout || ddet;
	rt->in_dev = din;
	rt->out_dev = dout;
	rt->det_dev = ddet;
	if (!rt->stage_in && !rt->stage_out && !rt->stage_det)
		return 0;
	if (!be->have_staging && !be->warned_unregistered) {
		be->warned_unregistered = 1;
		log_warn("cuda: CPI buffers are not in registered memory; staging through "
			 "pinned copies (one host copy per CPI and direction, %u thread%s)",
			 be->staging_threads, be->staging_threads == 1 ? "" : "s");
	}
	rc = cu_alloc_staging(be);
	if (rc < 0)
		return rc;
	be->staged_cpis++;
	return 0;
}

/* Wake-ups for pc_poll, off the compute stream so they delay nothing.
 * A caller that polls (busy_poll) needs none: four API calls and a
 * wake-up of CUDA's callback thread per CPI saved. */
static int cu_queue_notify(struct cu_be *be, struct cu_set *s)
{
	int rc = 0;

	if (be->busy_poll)
		return 0;
	CK(cudaStreamWaitEvent(be->notify_in, s->ev_in, 0));
	CK(cudaLaunchHostFunc(be->notify_in, cu_notify, be));
	CK(cudaStreamWaitEvent(be->notify_out, s->ev_out, 0));
	CK(cudaLaunchHostFunc(be->notify_out, cu_notify, be));
out:
	return rc;
}

static int cu_submit_cpi(void *p, const struct pc_cpi_cmd *cmd)
{
	struct cu_be *be = (struct cu_be *)p;
	const void *in = cmd->in;
	void *out = cmd->out, *det = cmd->det;
	uint64_t tag = cmd->tag;
	unsigned filt = cmd->filt;
	uint32_t mode = cmd->mode;
	struct cu_set *s;
	struct cu_route rt;
	struct cu_dst dst;
	int rc = 0, li, launched = 0, snap_tail = 0;

	if (be->failed)
		return -EIO;
	if (be->count == be->nsets)
		return -EAGAIN;
	CK(cudaSetDevice(be->dev));
	s = &be->sets[(be->head + be->count) % be->nsets];
	if ((be->det_bytes > 0) != (det != NULL) || (be->out_bytes > 0 && !out)) {
		snprintf(be->last_error, sizeof(be->last_error),
			 "submit: %s", det ? "a detection list but no detector" : "no output buffer");
		return -EINVAL;   /* the caller's bug: the backend is not failed */
	}
	rc = cu_plan_staging(be, in, out, det, &rt);
	if (rc < 0)
		goto out;
	dst.out = rt.stage_out ? s->h_out : out;
	dst.det = rt.stage_det ? s->r.h_det : det;
	dst.in_dev = rt.in_dev;
	dst.out_dev = rt.out_dev;
	dst.az_deg = cmd->pointing_az_deg;
	dst.el_deg = cmd->pointing_el_deg;
	dst.snap = cmd->snap;
	/* beams formed whole: compression reads them where the stage left
	 * them (d_in), one launch; by chunk: cut as any CPI */
	li = cu_pick_layout(be, be->bm && !cu_beams_by_chunk(be, rt.in_dev) ? 1 : rt.in_dev);
	if (li < 0) {
		rc = li;
		goto out;
	}
	/* a snapshot's kernel and copy are not in the graph: they follow it
	 * on the set's stream, and the CPI completes at their event */
	if (cu_graph_ok(be, s, li, rt.stage_in || rt.stage_out || rt.stage_det, rt.on_device)) {
		int g = cu_graph_launch(be, s, li, filt, in, &dst);

		if (g < 0) {
			rc = g;
			goto out;
		}
		launched = g == 0;
		if (launched && cmd->snap) {
			struct cu_err ce = { NULL, NULL, 0 };

			rc = cu_radar_snap_tail(be, s, cmd->snap, &ce);
			if (rc < 0) {
				cu_fail_n(be, ce.call, (size_t)ce.len, ce.what);
				goto out;
			}
			snap_tail = 1;
		}
	}
	if (!launched) {
		struct cu_err ce = { NULL, NULL, 0 };

		/* staged input is filled chunk by chunk as it is queued */
		rc = cu_enqueue(be, s, li, filt, in, rt.stage_in ? s->h_in : in, &dst, rt.stage_in,
				0, &ce);
		if (rc < 0) {
			cu_fail_n(be, ce.call, (size_t)ce.len, ce.what);
			goto out;
		}
	}
	rc = cu_queue_notify(be, s);
	if (rc < 0)
		goto out;
	s->tag = tag;
	s->mode = mode;
	s->nchunks = be->lay[li].nchunks;
	s->h2d_done = 0;
	s->out = out;
	s->stage_out = rt.stage_out;
	s->det = det;
	s->stage_det = rt.stage_det;
	s->out_dev = rt.out_dev;
	s->det_dev = rt.det_dev;
	s->in_done = rt.stage_in;    /* staged: the caller's input is free already */
	s->in_reported = 0;
	s->out_reported = 0;
	s->snap = cmd->snap ? cmd->snap->cells : NULL;
	s->snap_n = cmd->snap ? (size_t)cmd->snap->maps * cmd->snap->rows * cmd->snap->cols : 0;
	s->snap_tail = snap_tail;
	be->count++;
out:
	return rc;
}

static int cu_submit(void *p, const void *in, void *out, void *det, uint64_t tag, unsigned filt,
		     uint32_t mode)
{
	struct pc_cpi_cmd cmd = {};

	cmd.in = in;
	cmd.out = out;
	cmd.det = det;
	cmd.tag = tag;
	cmd.filt = filt;
	cmd.mode = mode;
	return cu_submit_cpi(p, &cmd);
}

/* ---- poll ------------------------------------------------------------------- */

/*
 * Set s's news in this pass, as PC_DONE_* flags (0: none), or -EIO.
 * *in_chain / *out_chain: every older CPI's input / output is reported;
 * cleared at the first one that is not, so reports stay in order.
 */
static int cu_set_news(struct cu_be *be, struct cu_set *s, int *in_chain, int *out_chain)
{
	unsigned fl = 0;
	int r;

	if (!s->in_reported) {
		if (!*in_chain)
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
			*in_chain = 0;
		}
	}
	if (!s->out_reported) {
		/* An output never before its own input, nor before older outputs. */
		r = 0;
		if (*out_chain && s->in_done) {
			r = cu_query(be, s->ev_out, "cudaEventQuery(output)");
			if (r > 0 && s->snap_tail)   /* and the snapshot behind the graph */
				r = cu_query(be, s->r.ev_snap, "cudaEventQuery(snapshot)");
			if (r < 0)
				return r;
		}
		if (r && s->stage_out) {
			int hr = hcopy_run(be->hc, s->out, s->h_out, be->out_bytes);

			if (hr < 0) {
				cu_fail(be, "hcopy_run(output)", strerror(-hr));
				return -EIO;
			}
		}
		if (r && cu_beams_skipped(be, s)) {   /* MVDR found no weights */
			if (cu_beams_write_skipped(be, s) < 0)
				return -EIO;
			cu_radar_snap_done(s, 1);
			fl |= PC_DONE_SKIPPED;
		} else if (r) {
			if (cu_radar_stamp(be, s) < 0)
				return -EIO;
			cu_radar_snap_done(s, 0);
		}
		if (r)
			fl |= PC_DONE_OUTPUT;
		else
			*out_chain = 0;
	}
	return (int)fl;
}

/* The report of set s's news fl. */
static void cu_fill_done(const struct cu_set *s, unsigned fl, struct pc_done *d)
{
	d->tag = s->tag;
	d->mode = s->mode;
	d->flags = fl;
	d->nonfinite_rows = (fl & PC_DONE_OUTPUT) ? *s->h_nonfinite : 0;
	d->device_ns = 0;
	d->recomputed = 0;
	d->woken = 0;
	d->absent = 0;
	d->chunks = (fl & PC_DONE_OUTPUT) ? s->nchunks : 0;
	if (fl & PC_DONE_OUTPUT) {
		float ms = 0.0f;

		/* Both events completed; a failure here only loses the
		 * figure, never the CPI. */
		if (cudaEventElapsedTime(&ms, s->ev_start, s->ev_out) == cudaSuccess)
			d->device_ns = (uint64_t)((double)ms * 1e6);
		else
			(void)cudaGetLastError();
	}
}

/* One non-blocking pass: report what completed, in order. */
static int cu_pass(struct cu_be *be, struct pc_done *done, int max)
{
	int n = 0, in_chain = 1, out_chain = 1;

	for (unsigned i = 0; i < be->count && n < max && (in_chain || out_chain); i++) {
		struct cu_set *s = &be->sets[(be->head + i) % be->nsets];
		int fl = cu_set_news(be, s, &in_chain, &out_chain);

		if (fl < 0)
			return fl;
		if (!fl)
			continue;
		if (fl & PC_DONE_INPUT)
			s->in_reported = 1;
		if (fl & PC_DONE_OUTPUT)
			s->out_reported = 1;
		cu_fill_done(s, (unsigned)fl, &done[n]);
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
 * spin_us (tune.cuda_spin_us) instead, and never past the caller's
 * deadline. Earlier in a CPI we sleep. Returns what cu_pass returns (0:
 * keep waiting).
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

/* busy_poll: no notifications are queued; poll until something completes
 * or the deadline passes (timeout < 0: until something does). */
static int cu_poll_busy(struct cu_be *be, struct pc_done *done, int max, int timeout_ms,
			const struct timespec *deadline)
{
	for (;;) {
		struct timespec now;
		int n = cu_pass(be, done, max);

		if (n != 0 || be->count == 0 || timeout_ms == 0)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timeout_ms > 0 && ts_ns(&now) >= ts_ns(deadline))
			return 0;
	}
}

/* Sleep until a notification after seq, the deadline (timeout_ms > 0:
 * returns 1) or a CU_WAIT_SLICE_MS slice (timeout_ms < 0); 0 otherwise. */
static int cu_wait_notify(struct cu_be *be, uint64_t seq, int timeout_ms,
			  const struct timespec *deadline)
{
	struct timespec slice;
	int timed_out = 0;

	pthread_mutex_lock(&be->mu);
	while (be->notify_seq == seq) {
		int w;

		if (timeout_ms > 0) {
			w = pthread_cond_timedwait(&be->cv, &be->mu, deadline);
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
	return timed_out;
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
	struct timespec deadline;
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
	if (be->busy_poll)
		return cu_poll_busy(be, done, max, timeout_ms, &deadline);
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
		timed_out = cu_wait_notify(be, seq, timeout_ms, &deadline);
	}
out:
	return rc;
}

/* ---- the rest of the table -------------------------------------------------- */

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
	cu_submit_cpi,
	1,   /* beams (cu_beams.cu) */
	1,   /* snapshots (cu_radar.cu) */
};
