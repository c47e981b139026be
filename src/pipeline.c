/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.c — the data thread. See pipeline.h for the contract.
 *
 * The loop, per iteration (heartbeat++ each time):
 *   1. While fewer than depth CPIs are in flight and we are not pausing,
 *      stopping or swapping: peek an input block, check it, pick where the
 *      result goes, pc_submit_job with the block's radar mode (a mode the
 *      pc does not have: zeroed and done at once, take_unknown_mode).
 *   2. pc_poll; mark records done.
 *   3. Retire the FIFO of records in input order: release inputs, hand
 *      results and JSON lines to the file sinks (a copy into their queue:
 *      sink.h; the writes happen on the sinks' threads), commit results
 *      (latency = now - input commit time), count.
 *   4. If nothing happened: with CPIs in flight and busy_poll (pc_info), go
 *      round again at once (poll, never sleep: see wait_for_work); otherwise
 *      wait on the input ring (or on the pc when CPIs are in flight) for a
 *      few ms, so stop/pause/swap requests are seen within ~5 ms.
 *   Every retired CPI leaves a record in the flight recorder (trace.h).
 *   Checkpoints at the top of the loop, before pc_submit and before each
 *   record measure the gaps between them (stall.h): a gap of 200 us or more
 *   in a loop that never sleeps on purpose is a stall of the data thread,
 *   counted (data_stalls) and charged to the CPIs it delayed, with what
 *   the thread was doing meanwhile. Deliberate waits and pc_submit's own
 *   time (the CPU backend computes in it) re-mark instead.
 * The control thread never holds a lock the data thread waits for except
 * the short swap handshake (a mutex taken for a pointer exchange).
 */
#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chirp/detect.h"
#include "live.h"
#include "log.h"
#include "sink.h"
#include "stall.h"
#include "timeutil.h"
#include "trace.h"
#include "zpub.h"

#define PIPE_MAX_DEPTH   64        /* sanity bound on pc_info.depth       */
#define IDLE_WAIT_NS     5000000   /* 5 ms: reaction time to stop/pause   */
#define STALE_GRACE_NS   3000000000ull  /* -ESTALE input without a swap   */
#define BAD_HEADER_NS    1000000000ull  /* corrupt input header: give up   */
/* File sinks (sink.h): each queue holds SINK_RECORDS records of the
 * largest size (a CPI's result; a list's JSON line at max_detections), and
 * gets SINK_DRAIN_MS to write what it holds when its generation goes. */
#define SINK_RECORDS     4
#define SINK_DRAIN_MS    1000
/* A JSON line: at most JSON_HEAD_MAX bytes around the records and
 * JSON_RECORD_MAX per record (the longest is ~205 without beams, ~310
 * with: every number at its widest); the line buffer holds at most JSON_LINE_MAX bytes (lists of
 * more than ~65000 detections are not written, counted as dropped). */
#define JSON_HEAD_MAX    512
#define JSON_RECORD_MAX  384
#define JSON_LINE_MAX    (16u << 20)

enum out_kind {
	OUT_RING = 0,        /* computed in place into its reserved output slot  */
	OUT_FILE_ONLY,       /* output ring full: computed into scratch for the
				[output] file and the detections only            */
	OUT_SKIP,            /* output ring full, no file, no detections: not
				computed                                         */
	OUT_NONE,            /* [output] mode none: computed for the detections,
				no result (the pc writes no output)              */
};

struct flight {
	uint64_t seq, timestamp_ns, first_sample;
	uint32_t mode;               /* the input block's radar mode           */
	float pointing_az_deg;       /* the input block's pointing, degrees:   */
	float pointing_el_deg;       /* steers its beams, handed on to the
					output and list blocks                 */
	int unknown;                 /* the pc has no such mode: not computed,
					result zeroed and flagged              */
	int bad_pointing;            /* not computed: the pointing is not one
					the beams can take (flagged)           */
	uint32_t flags;              /* flags for the output block: the carry
					(gaps before it) taken at reservation */
	uint32_t in_incomplete;      /* the input's CHIRP_RING_INCOMPLETE, and */
	uint32_t missing;            /* its missing samples: passed on         */
	uint32_t nonfinite_rows;
	enum out_kind kind;
	void *out;                   /* where the pc writes                      */
	int done_in, done_out, released;
	int redelivered;             /* skipped duplicate: no result, no stats  */
	uint64_t t_peek, t_submit, t_done;   /* CLOCK_MONOTONIC ns             */
	uint64_t t_in_commit;        /* producer's commit, converted to MONOTONIC */
	uint64_t t_submitted, t_in_done, t_release;
	uint64_t device_ns;          /* backend's own time for the CPI (0: none) */
	uint32_t recomputed;         /* pc_done.recomputed                       */
	uint32_t chunks;             /* pc_done.chunks                           */
	uint32_t woken;              /* pc_done.woken                            */
	uint32_t absent;             /* pc_done.absent                           */
	uint32_t fill, in_flight;    /* input blocks waiting at peek; CPIs in the
					backend at submit                      */
	int out_dropped;             /* counted in output_drops                 */
	void *det;                   /* where the pc writes the detection list
					(NULL: the pc does not detect)         */
	int det_ring;                /* det is a reserved detection ring slot  */
	int det_dropped;             /* detection ring full: det is scratch,
					counted in detection_drops             */
	uint32_t det_flags;          /* ring flags for the list: the carry    */
	uint64_t stall_ns, stall_cpu_ns;     /* the longest data-thread stall
						that overlapped it (trace.h)   */
	uint32_t stall_kind, stall_where;
	int live;                    /* [live]: a frame is due when it retires
					(decided at submit: live_due_req)     */
	struct live_req live_req;    /* what its frame's maps are           */
	float *snap;                 /* where the pc writes the snapshot of
					the watched maps (NULL: none asked)   */
};

struct pipeline_gen {
	struct chirp_ring *in, *out;
	struct pc *pc;
	int out_fd;                  /* the caller's [output] file (-1: none)   */
	struct sink *out_sink;       /* its writer (made when handed to a
					pipeline, gen_make_sinks)              */
	unsigned depth;
	size_t in_bytes, out_bytes;
	uint64_t samples_per_cpi;
	uint32_t channels, pulses, samples;   /* the input CPI's geometry    */
	uint32_t map_maps, map_doppler, map_range; /* a range-Doppler map output
						 (map_maps x map_doppler x
						 map_range float32: channels,
						 or beams; 0: none)           */
	void *staging;               /* file-only scratch: depth * out_stride,
					page aligned; NULL without [output] file */
	size_t out_stride;
	size_t staging_len;
	int staging_registered;
	int busy_poll;               /* pc_info.busy_poll: never sleep on the pc */
	/* detections (pipeline_gen_set_detections) */
	struct chirp_ring *det;      /* detection ring (NULL: none)             */
	int det_fd;                  /* [detections] file (-1: none)            */
	struct sink *det_sink;       /* its writer, as out_sink                 */
	size_t det_bytes;            /* pc_det_bytes (0: the pc does not detect) */
	void *det_scratch;           /* depth lists for those no ring slot holds */
	size_t det_stride, det_scratch_len;
	int det_scratch_registered;
	char *jbuf;                  /* one list's JSON line, jbuf_len bytes    */
	size_t jbuf_len;
	int64_t idle_spin_ns;        /* pc_info.idle_spin_us: poll an idle input
					ring until this long after the last CPI
					taken before sleeping on it            */
	/* [live] snapshots (chirp/pc.h, SNAPSHOTS), with a pc that makes
	 * them: depth buffers of snap_cells floats, taken round robin like
	 * the detection scratch (at most depth records are in the FIFO) */
	float *snap;                 /* NULL: no snapshots (live_put instead) */
	size_t snap_cells;
	uint32_t snap_maps, snap_doppler, snap_range;  /* the maps snapshots
					select from: C (B), Nd x R           */
};

struct pipeline {
	pthread_t thread;
	int thread_started;
	struct stats *st;
	int notify_fd;
	struct sysnuma_plan plan;
	int have_plan;
	struct sysnuma_applied applied;
	struct trace *trace;         /* flight recorder (NULL: none)            */
	struct zpub *_Atomic pub;    /* [publish] (NULL: none; zpub.h)          */
	struct live *_Atomic live;   /* [live] (NULL: none; live.h)             */
	_Atomic uint64_t budget_ns;  /* latency budget (0: none)                */
	_Atomic uint64_t over_last;  /* 1 + trace record number of the newest
					over-budget CPI (0: none yet)          */
	_Atomic uint32_t point_az_bits, point_el_bits; /* the pointing of the
					newest CPI submitted, float bits (the
					data thread stores, status reads)     */
	_Atomic uint64_t unknown_last; /* 1 + the mode of the newest CPI of an
					unknown mode (0: none yet)             */

	/* start handshake */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int started;                 /* 1 ok, -1 refused (start_err)            */
	char start_err[256];

	/* swap handshake (under lock) */
	struct pipeline_gen *pending;    /* NULL with pending_set: park        */
	int pending_set;
	struct pipeline_gen *retired;
	uint64_t swap_gen_done;
	atomic_int swap_requested;

	struct pipeline_gen *cur;    /* data thread's; read by control under lock */
	atomic_int state;
	atomic_int stop_requested;
	atomic_int pause_requested;
	_Atomic uint64_t heartbeat;
	char error[256];             /* written before state = FAILED (release) */

	/* data-thread only */
	struct flight fl[PIPE_MAX_DEPTH];
	unsigned head, count, nsub;  /* FIFO of records; nsub submitted to pc  */
	uint64_t staged;             /* file-only results sent to scratch so far */
	uint64_t det_staged;         /* lists sent to detection scratch so far  */
	uint64_t snap_staged;        /* snapshots asked for so far              */
	uint32_t det_carry;          /* DISCONTINUITY for the next list reserved */
	int have_last_seq;
	uint64_t last_seq;
	uint32_t carry_flags;        /* DISCONTINUITY for the next reservation   */
	uint32_t commit_carry;       /* DISCONTINUITY for the next commit (an
					earlier commit failed)                 */
	uint64_t overrun_base;       /* overruns of input rings no longer used  */
	uint64_t ring_overruns;      /* last overruns read from the current ring */
	uint64_t in_epoch;           /* epoch of the current input ring         */
	uint64_t stale_since;
	uint64_t bad_blocks, bad_logged_ns, bad_header_since;
	int bad_pause;               /* last peek was invalid: wait a little    */
	struct stall_watch sw;       /* the loop's last checkpoint (stall.h)    */
#ifdef CHIRP_TEST_HOOKS
	unsigned test_retire_ms;     /* CHIRP_PIPELINE_TEST_RETIRE_MS           */
#endif
	struct stall last_stall;     /* the newest stall, for CPIs committed
					during it and peeked after it          */
	enum trace_where last_where;
};

static const char *const state_names[] = {
	[PIPE_STARTING] = "starting", [PIPE_RUNNING] = "running", [PIPE_PAUSED] = "paused",
	[PIPE_STOPPED] = "stopped", [PIPE_FAILED] = "failed",
};

const char *pipeline_state_name(enum pipeline_state s)
{
	return (unsigned)s <= PIPE_FAILED ? state_names[s] : "?";
}

/* ---- generations -------------------------------------------------------- */

/* The rings' CPIs must be the sizes the pc reads and writes. */
static int check_cpi_sizes(const struct pipeline_gen *g, char *err, size_t errlen)
{
	struct chirp_ring_geometry gi, go;

	chirp_ring_geometry(g->in, &gi);
	if (g->out)
		chirp_ring_geometry(g->out, &go);
	if (chirp_ring_cpi_bytes(&gi) != g->in_bytes) {
		snprintf(err, errlen, "input ring CPI is %llu bytes, pulse compression expects %zu",
			 (unsigned long long)chirp_ring_cpi_bytes(&gi), g->in_bytes);
		return -1;
	}
	if (g->out && chirp_ring_cpi_bytes(&go) != g->out_bytes) {
		snprintf(err, errlen, "output ring CPI is %llu bytes, pulse compression writes %zu",
			 (unsigned long long)chirp_ring_cpi_bytes(&go), g->out_bytes);
		return -1;
	}
	return 0;
}

/* In-place DMA from/to the rings (the CPU backend ignores this); a ring
 * the backend cannot register is staged by it instead. */
static void register_rings(struct pipeline_gen *g)
{
	void *base;
	size_t len;
	int ret;

	chirp_ring_data(g->in, &base, &len);
	ret = pc_register_host(g->pc, base, len);
	if (ret < 0)
		log_warn("pc_register_host(input ring): %s; the backend stages copies", strerror(-ret));
	if (!g->out)
		return;
	chirp_ring_data(g->out, &base, &len);
	ret = pc_register_host(g->pc, base, len);
	if (ret < 0)
		log_warn("pc_register_host(output ring): %s; the backend stages copies", strerror(-ret));
}

/*
 * Every result goes straight into its own output ring slot (one
 * reservation per CPI in flight, chirp_ring_reserve_next). Scratch is
 * needed only for results the ring has no room for that still go to the
 * [output] file: one page-aligned buffer per CPI in flight, on numa_node
 * (>= 0), faulted in now so the data path never does.
 */
static int make_staging(struct pipeline_gen *g, int numa_node, char *err, size_t errlen)
{
	/* A result without a ring slot is still computed when it has a
	 * file to go to, or detections to be made from it. */
	unsigned nbuf = (g->out_fd >= 0 || g->det_bytes) && g->out_bytes ? g->depth : 0;
	int ret;

	g->out_stride = (g->out_bytes + 4095) & ~(size_t)4095;
	if (!nbuf)
		return 0;
	ret = posix_memalign(&g->staging, CHIRP_RING_PAGE_BYTES, g->out_stride * nbuf);
	if (ret) {
		snprintf(err, errlen, "staging buffers (%zu bytes): %s",
			 g->out_stride * nbuf, strerror(ret));
		return -1;
	}
	g->staging_len = g->out_stride * nbuf;
	if (numa_node >= 0 &&
	    sysnuma_bind_memory(g->staging, g->staging_len, numa_node, err, errlen) < 0)
		log_warn("file-only scratch buffers: %s", err);
	memset(g->staging, 0, g->staging_len);   /* fault pages in now */
	ret = pc_register_host(g->pc, g->staging, g->out_stride * nbuf);
	if (ret == 0)
		g->staging_registered = 1;
	return 0;
}

/* The output is a range-Doppler map when the radar chain's Doppler
 * processing is on and the ring holds real values of Nd rows per channel
 * (map_power, map_db; chirp/pc.h): what [publish] maps_hz samples. */
static void find_map(struct pipeline_gen *g, const struct pc_info *info)
{
	struct chirp_ring_geometry go;

	if (!g->out || !info->doppler_nfft)
		return;
	chirp_ring_geometry(g->out, &go);
	if (go.format != CHIRP_RING_RF32 || go.pulses != info->doppler_nfft ||
	    (uint64_t)go.channels * go.pulses * go.samples * sizeof(float) != g->out_bytes)
		return;
	g->map_maps = go.channels;   /* the output's: beams replace channels */
	g->map_doppler = go.pulses;
	g->map_range = go.samples;
}

/* The snapshot buffers, when the pc makes snapshots of its maps (the
 * live view's frames come from them, in every output mode). */
static int make_snaps(struct pipeline_gen *g, const struct pc_info *info, char *err,
		      size_t errlen)
{
	size_t bytes = g->depth * info->snapshot_cells * sizeof(float);

	if (!info->snapshot_cells || !info->map_count || !info->doppler_nfft)
		return 0;
	g->snap = malloc(bytes);
	if (!g->snap) {
		snprintf(err, errlen, "snapshot buffers (%zu bytes): out of memory", bytes);
		return -1;
	}
	memset(g->snap, 0, bytes);   /* fault pages in now */
	g->snap_cells = info->snapshot_cells;
	g->snap_maps = info->map_count;
	g->snap_doppler = info->doppler_nfft;
	g->snap_range = g->samples;
	return 0;
}

struct pipeline_gen *pipeline_gen_create(struct chirp_ring *in, struct chirp_ring *out,
					 struct pc *pc, int out_fd, int numa_node,
					 char *err, size_t errlen)
{
	struct pipeline_gen *g = NULL;
	struct chirp_ring_geometry gi;
	struct pc_info info;

	if (!in || !pc || (!out && pc_out_bytes(pc))) {
		snprintf(err, errlen, "pipeline generation needs input ring, output ring and pc");
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->in = in;
	g->out = out;
	g->pc = pc;
	g->out_fd = out_fd;
	pc_get_info(pc, &info);
	g->depth = info.depth ? info.depth : 1;
	g->busy_poll = info.busy_poll;
	g->idle_spin_ns = (int64_t)info.idle_spin_us * 1000;
	if (g->depth > PIPE_MAX_DEPTH)
		g->depth = PIPE_MAX_DEPTH;
	g->in_bytes = pc_in_bytes(pc);
	g->out_bytes = pc_out_bytes(pc);
	g->det_bytes = pc_det_bytes(pc);
	g->det_fd = -1;
	if (check_cpi_sizes(g, err, errlen) < 0)
		goto fail;
	chirp_ring_geometry(in, &gi);
	g->samples_per_cpi = (uint64_t)gi.channels * gi.pulses * gi.samples;
	g->channels = gi.channels;
	g->pulses = gi.pulses;
	g->samples = gi.samples;
	find_map(g, &info);
	register_rings(g);
	if (make_staging(g, numa_node, err, errlen) < 0 || make_snaps(g, &info, err, errlen) < 0)
		goto fail;
	return g;
fail:
	pipeline_gen_destroy(g);
	return NULL;
}

void pipeline_gen_destroy(struct pipeline_gen *g)
{
	void *base;
	size_t len;

	if (!g)
		return;
	if (g->staging_registered)
		pc_unregister_host(g->pc, g->staging);
	if (g->det_scratch_registered)
		pc_unregister_host(g->pc, g->det_scratch);
	chirp_ring_data(g->in, &base, &len);
	pc_unregister_host(g->pc, base);
	if (g->out) {
		chirp_ring_data(g->out, &base, &len);
		pc_unregister_host(g->pc, base);
	}
	if (g->det) {
		chirp_ring_data(g->det, &base, &len);
		pc_unregister_host(g->pc, base);
	}
	sink_destroy(g->out_sink);   /* writes what it holds first */
	sink_destroy(g->det_sink);
	free(g->staging);
	free(g->det_scratch);
	free(g->jbuf);
	free(g->snap);
	free(g);
}

/*
 * Detections: a list of det_bytes per CPI goes to a reserved slot of the
 * detection ring, or, when the ring is full or there is none, to one of
 * depth scratch lists (records retire in order, so scratch list n % depth
 * is free again when list n + depth is taken), so the [detections] file
 * and the counters see every CPI. All of it made here, none per CPI.
 */
int pipeline_gen_set_detections(struct pipeline_gen *g, struct chirp_ring *det, int det_fd,
				int numa_node, char *err, size_t errlen)
{
	struct chirp_ring_geometry gd;
	void *base;
	size_t len;
	int ret;

	if (!g->det_bytes) {
		if (det || det_fd >= 0) {
			snprintf(err, errlen, "a detection ring or file, but pulse compression does not detect");
			return -EINVAL;
		}
		return 0;
	}
	if (det) {
		chirp_ring_geometry(det, &gd);
		if (gd.format != CHIRP_RING_DET || chirp_ring_cpi_bytes(&gd) != g->det_bytes) {
			snprintf(err, errlen, "detection ring slot is %llu bytes, pulse compression writes lists of %zu",
				 (unsigned long long)chirp_ring_cpi_bytes(&gd), g->det_bytes);
			return -EINVAL;
		}
		chirp_ring_data(det, &base, &len);
		ret = pc_register_host(g->pc, base, len);
		if (ret < 0)
			log_warn("pc_register_host(detection ring): %s; the backend stages copies",
				 strerror(-ret));
	}
	g->det = det;
	g->det_fd = det_fd;
	g->det_stride = (g->det_bytes + 4095) & ~(size_t)4095;
	g->det_scratch_len = g->det_stride * g->depth;
	ret = posix_memalign(&g->det_scratch, CHIRP_RING_PAGE_BYTES, g->det_scratch_len);
	if (ret) {
		g->det_scratch = NULL;
		snprintf(err, errlen, "detection scratch (%zu bytes): %s", g->det_scratch_len,
			 strerror(ret));
		return -ret;
	}
	if (numa_node >= 0 &&
	    sysnuma_bind_memory(g->det_scratch, g->det_scratch_len, numa_node, err, errlen) < 0)
		log_warn("detection scratch: %s", err);
	memset(g->det_scratch, 0, g->det_scratch_len);   /* fault pages in now */
	if (pc_register_host(g->pc, g->det_scratch, g->det_scratch_len) == 0)
		g->det_scratch_registered = 1;
	if (det_fd >= 0) {
		size_t room = (g->det_bytes - sizeof(struct chirp_det_header)) /
			      sizeof(struct chirp_det_record);

		g->jbuf_len = room < (JSON_LINE_MAX - JSON_HEAD_MAX) / JSON_RECORD_MAX ?
			      JSON_HEAD_MAX + room * JSON_RECORD_MAX : JSON_LINE_MAX;
		g->jbuf = malloc(g->jbuf_len);
		if (!g->jbuf) {
			snprintf(err, errlen, "JSON line buffer (%zu bytes): out of memory", g->jbuf_len);
			return -ENOMEM;
		}
		memset(g->jbuf, 0, g->jbuf_len);   /* fault pages in now */
	}
	return 0;
}

/* A sink for fd: a writer thread of its own, queue made and faulted in
 * now. Returns 0 or -1 with a reason. */
static int make_sink(struct sink **sp, const char *what, int fd, size_t record_max,
		     struct stats *st, enum stats_counter c_bytes, enum stats_counter c_drops,
		     enum stats_counter c_dropped_bytes, enum stats_counter c_errors,
		     char *err, size_t errlen)
{
	struct sink_params prm = {
		.what = what, .fd = fd, .record_max = record_max, .records = SINK_RECORDS,
		.drain_ms = SINK_DRAIN_MS, .st = st, .c_bytes = c_bytes, .c_drops = c_drops,
		.c_dropped_bytes = c_dropped_bytes, .c_errors = c_errors,
	};

	*sp = sink_create(&prm, err, errlen);
	return *sp ? 0 : -1;
}

/*
 * The generation's file sinks, made when it is handed to a pipeline (which
 * has the counters), on the control thread: their writers inherit its CPU
 * affinity, never the data thread's. Held until the swap starts them.
 */
static int gen_make_sinks(struct pipeline_gen *g, struct stats *st, char *err, size_t errlen)
{
	if (g->out_fd >= 0 && g->out_bytes && !g->out_sink &&
	    make_sink(&g->out_sink, "[output] file", g->out_fd, g->out_bytes, st,
		      ST_OUTPUT_FILE_BYTES, ST_OUTPUT_FILE_DROPS, ST_OUTPUT_FILE_DROPPED_BYTES,
		      ST_OUTPUT_FILE_ERRORS, err, errlen) < 0)
		return -1;
	if (g->det_fd >= 0 && g->jbuf && !g->det_sink &&
	    make_sink(&g->det_sink, "[detections] file", g->det_fd, g->jbuf_len - 1, st,
		      ST_DET_FILE_BYTES, ST_DET_FILE_DROPS, ST_DET_FILE_DROPPED_BYTES,
		      ST_DET_FILE_ERRORS, err, errlen) < 0)
		return -1;
	return 0;
}

/*
 * g's sinks start writing: at once, or, where old (the generation g
 * replaces) writes the same file (the caller kept the descriptor across
 * a reload), once old's sink has written what it holds (sink_follow), so
 * the file keeps input order. Data thread, under p->lock (the links are
 * the control thread's once the swap returns).
 */
static void gen_start_sinks(struct pipeline_gen *g, const struct pipeline_gen *old)
{
	if (g->out_sink)
		sink_follow(g->out_sink, old && old->out_fd == g->out_fd ? old->out_sink : NULL);
	if (g->det_sink)
		sink_follow(g->det_sink, old && old->det_fd == g->det_fd ? old->det_sink : NULL);
}

/* ---- data thread -------------------------------------------------------- */

#ifdef CHIRP_TEST_HOOKS
/*
 * Test hook (CHIRP_PIPELINE_TEST_RETIRE_MS=N, test builds only: the test
 * binaries and build/tests/chirpd-hooks): the data thread sleeps N ms
 * before each CPI's record, as a blocking call there would, so tests of
 * the stall recorder have a stall to record (the data path itself makes
 * no blocking call there). Read once, at pipeline_create.
 */
static void test_hooks_init(struct pipeline *p)
{
	const char *s = getenv("CHIRP_PIPELINE_TEST_RETIRE_MS");

	p->test_retire_ms = s ? (unsigned)strtoul(s, NULL, 10) : 0;
	if (p->test_retire_ms > 10000)
		p->test_retire_ms = 10000;
}

static void test_retire_sleep(const struct pipeline *p)
{
	struct timespec ts = { p->test_retire_ms / 1000,
			       (long)(p->test_retire_ms % 1000) * 1000000L };

	if (p->test_retire_ms)
		nanosleep(&ts, NULL);
}
#else
static inline void test_hooks_init(struct pipeline *p) { (void)p; }
static inline void test_retire_sleep(const struct pipeline *p) { (void)p; }
#endif

static void notify(struct pipeline *p)
{
	uint64_t one = 1;

	if (p->notify_fd >= 0 && write(p->notify_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err("pipeline: eventfd write: %s", strerror(errno));
}

static void set_state(struct pipeline *p, enum pipeline_state s)
{
	atomic_store_explicit(&p->state, s, memory_order_release);
}

static void fail(struct pipeline *p, const char *call, int ret)
{
	struct pipeline_gen *g = p->cur;
	const char *be = g && g->pc ? pc_last_error(g->pc) : "";

	snprintf(p->error, sizeof(p->error), "%s: %s%s%s", call, strerror(-ret),
		 be && *be ? ": " : "", be ? be : "");
	log_err("data path failed: %s", p->error);
	stats_write_begin(p->st);
	stats_count(p->st, ST_BACKEND_ERRORS, 1);
	stats_write_end(p->st);
	set_state(p, PIPE_FAILED);
	notify(p);
}

static void update_overruns(struct pipeline *p)
{
	struct chirp_ring_stats rs;

	if (p->cur && chirp_ring_stats(p->cur->in, &rs) == 0) {
		p->ring_overruns = rs.overruns;
		stats_set(p->st, ST_INPUT_OVERRUNS, p->overrun_base + rs.overruns);
	}
}

/* update_overruns in its own stats write section. */
static void count_overruns(struct pipeline *p)
{
	stats_write_begin(p->st);
	update_overruns(p);
	stats_write_end(p->st);
}

static int progress(struct pipeline *p, int timeout_ms);

/*
 * Whether the output ring's newest result is this block's or a later one's
 * (results carry their input's timestamp_ns and first_sample, in order).
 */
static int already_delivered(const struct pipeline_gen *g, const struct chirp_ring_block *b)
{
	struct chirp_ring_block last;
	/* Without an output ring the detection ring says what was delivered. */
	struct chirp_ring *r = g->out ? g->out : g->det;

	if (!r || chirp_ring_last_commit(r, &last) < 0)
		return 0;
	return last.timestamp_ns > b->timestamp_ns ||
	       (last.timestamp_ns == b->timestamp_ns && last.first_sample >= b->first_sample);
}

/*
 * peek said -EBADMSG: a slot descriptor failed validation (the ring skipped
 * and counted it) or the shared header itself is corrupt (every peek fails).
 * Count, say so in the log (at most once a second: this is the data
 * thread), and give up on a header that stays corrupt for BAD_HEADER_NS:
 * the data path fails, the watchdog stops, and a restarted chirpd
 * re-validates (and if need be re-creates) the ring. Returns 0 (so the
 * loop waits instead of spinning) or -1 when failed.
 */
static int bad_input(struct pipeline *p)
{
	struct pipeline_gen *g = p->cur;
	char why[160] = "";
	uint64_t now = mono_ns(), bad;
	int hdr = chirp_ring_check(g->in, why, sizeof(why));

	stats_write_begin(p->st);
	stats_count(p->st, ST_BAD_BLOCKS, 1);
	stats_write_end(p->st);
	bad = ++p->bad_blocks;
	if (hdr == -EBADMSG) {
		if (!p->bad_header_since)
			p->bad_header_since = now;
		if (now - p->bad_header_since > BAD_HEADER_NS) {
			snprintf(p->error, sizeof(p->error), "input ring %s: header corrupt: %s",
				 chirp_ring_name(g->in), why);
			log_err("data path failed: %s", p->error);
			set_state(p, PIPE_FAILED);
			notify(p);
			return -1;
		}
	} else {
		p->bad_header_since = 0;
	}
	if (now - p->bad_logged_ns >= 1000000000ull) {
		log_err("input ring %s: corrupt %s: %s (%llu invalid blocks so far)",
			chirp_ring_name(g->in), hdr == -EBADMSG ? "header" : "block descriptor",
			why[0] ? why : "skipped by the ring", (unsigned long long)bad);
		p->bad_logged_ns = now;
	}
	p->bad_pause = 1;
	return 0;
}

/* Keep the longer of f's stall and s (noticed at where). */
static void charge_stall(struct flight *f, const struct stall *s, enum trace_where where)
{
	uint64_t ns = s->end_ns - s->start_ns;

	if (ns <= f->stall_ns)
		return;
	f->stall_ns = ns;
	f->stall_cpu_ns = s->cpu_ns;
	f->stall_kind = (uint32_t)s->kind;
	f->stall_where = (uint32_t)where;
}

/*
 * A checkpoint of the data thread's loop: a gap of STALL_THRESHOLD_NS or
 * more since the previous one (or since the last deliberate wait, which
 * re-marks) is a stall. It is counted, charged to every CPI in chirpd now,
 * and kept for the CPIs committed during it that are peeked later. Not
 * inside a stats write section (it opens its own). A failed read of the
 * thread's counters loses only this figure.
 */
static void watch(struct pipeline *p, enum trace_where where)
{
	struct stall s;

	if (stall_watch_check(&p->sw, STALL_THRESHOLD_NS, &s) <= 0)
		return;
	p->last_stall = s;
	p->last_where = where;
	for (unsigned k = 0; k < p->count; k++)
		charge_stall(&p->fl[(p->head + k) % PIPE_MAX_DEPTH], &s, where);
	stats_write_begin(p->st);
	stats_count(p->st, ST_DATA_STALLS, 1);
	stats_write_end(p->st);
}

/* After a wait the loop asked for: the next gap starts here. */
static void rewatch(struct pipeline *p)
{
	(void)stall_watch_mark(&p->sw);
}

/*
 * peek said -ESTALE: our own reload re-creates the ring just before handing
 * the new generation over, so a stale ring is waited out for STALE_GRACE_NS;
 * after that it is a second creator and the data path fails. Returns 0
 * (wait) or -1 when failed.
 */
static int stale_input(struct pipeline *p)
{
	uint64_t now = mono_ns();

	if (!p->stale_since)
		p->stale_since = now;
	else if (now - p->stale_since > STALE_GRACE_NS) {
		fail(p, "chirp_ring_peek(input)", -ESTALE);
		return -1;
	}
	return 0;
}

/* Peek the next input block into *blk. Returns 1 if there is one, 0 if
 * none is to be taken now (empty, stale within its grace, invalid), < 0 on
 * a fatal error (already reported). */
static int peek_input(struct pipeline *p, struct chirp_ring_block *blk)
{
	int ret = chirp_ring_peek(p->cur->in, blk);

	if (ret == -EAGAIN)
		return 0;
	if (ret == -ESTALE)
		return stale_input(p);
	if (ret == -EBADMSG)
		return bad_input(p);
	if (ret < 0) {
		fail(p, "chirp_ring_peek(input)", ret);
		return -1;
	}
	p->stale_since = 0;
	p->bad_header_since = 0;
	return 1;
}

/* The FIFO's next record, cleared and named after blk; *idx is its slot
 * (the tag given to pc_submit). Not counted in the FIFO yet. */
static struct flight *new_record(struct pipeline *p, const struct chirp_ring_block *blk,
				 unsigned *idx)
{
	struct flight *f;

	*idx = (p->head + p->count) % PIPE_MAX_DEPTH;
	f = &p->fl[*idx];
	memset(f, 0, sizeof(*f));
	f->seq = blk->seq;
	f->timestamp_ns = blk->timestamp_ns;
	f->first_sample = blk->first_sample;
	f->mode = blk->mode;
	f->pointing_az_deg = blk->pointing_az_deg;
	f->pointing_el_deg = blk->pointing_el_deg;
	f->in_incomplete = blk->flags & CHIRP_RING_INCOMPLETE;
	f->missing = blk->missing;
	return f;
}

/* A previous chirpd took this block, committed its result and died before
 * releasing it: do not deliver it twice. The record has no result and no
 * stats, and is released in order like any other. Returns 1 (taken). */
static int skip_redelivered(struct pipeline *p, const struct chirp_ring_block *blk)
{
	unsigned idx;
	struct flight *f = new_record(p, blk, &idx);

	f->kind = OUT_SKIP;
	f->done_in = f->done_out = 1;
	f->redelivered = 1;
	p->count++;
	p->have_last_seq = 1;
	p->last_seq = blk->seq;
	stats_write_begin(p->st);
	stats_count(p->st, ST_REDELIVERED_SKIPPED, 1);
	stats_write_end(p->st);
	return 1;
}

/* The record's peek stamps: peek time, the producer's commit and how full
 * the input ring is; a CPI that waited in the ring through the newest
 * stall is charged with it. */
static void stamp_peek(struct pipeline *p, struct flight *f, const struct chirp_ring_block *blk)
{
	/* The producer stamps CLOCK_REALTIME; the recorder keeps one clock,
	 * MONOTONIC, so convert with the offset read now. */
	uint64_t rt = real_ns(), mt = mono_ns(), off = rt - mt;

	f->t_peek = mt;
	f->t_in_commit = blk->timestamp_ns > off ? blk->timestamp_ns - off : 0;
	f->fill = (uint32_t)chirp_ring_available(p->cur->in) + 1;
	if (f->t_in_commit && p->last_stall.end_ns > f->t_in_commit)
		charge_stall(f, &p->last_stall, p->last_where);
}

/* Count an input block taken: a sequence gap or the producer's own
 * DISCONTINUITY is carried to the next result. Inside a stats write
 * section. */
static void count_input(struct pipeline *p, const struct chirp_ring_block *blk)
{
	if (p->have_last_seq && blk->seq != p->last_seq + 1) {
		if (blk->seq > p->last_seq)
			stats_count(p->st, ST_SEQUENCE_GAPS, blk->seq - p->last_seq - 1);
		p->carry_flags |= CHIRP_RING_DISCONTINUITY;
		p->det_carry |= CHIRP_RING_DISCONTINUITY;   /* lists are missing too */
	}
	if (blk->flags & CHIRP_RING_DISCONTINUITY) {
		p->carry_flags |= CHIRP_RING_DISCONTINUITY;
		p->det_carry |= CHIRP_RING_DISCONTINUITY;
	}
	p->have_last_seq = 1;
	p->last_seq = blk->seq;
	stats_count(p->st, ST_CPIS_IN, 1);
	update_overruns(p);
}

/*
 * Where f's result goes; returns the buffer (NULL for OUT_SKIP). The
 * output slot is reserved now, so the backend writes the result in place
 * (GPU: DMA into the registered ring). At most depth records are in the
 * FIFO, so at most depth reservations are outstanding; they are committed
 * in this same order by finish_one. Inside a stats write section.
 */
static void *pick_output(struct pipeline *p, struct flight *f)
{
	struct pipeline_gen *g = p->cur;
	void *outp = NULL;

	if (!g->out) {
		f->kind = OUT_NONE;
		return NULL;
	}
	if (chirp_ring_reserve_next(g->out, &outp) == 0) {
		f->kind = OUT_RING;
		f->flags = p->carry_flags;    /* gaps before this result */
		p->carry_flags = 0;
		return outp;
	}
	/* -ENOBUFS (consumer slow or absent), -ESTALE: never wait. */
	stats_count(p->st, ST_OUTPUT_DROPS, 1);
	f->out_dropped = 1;
	p->carry_flags |= CHIRP_RING_DISCONTINUITY;
	if (g->out_fd < 0 && !g->det_bytes) {
		f->kind = OUT_SKIP;
		return NULL;
	}
	/* Round robin over depth buffers: records retire in order and at
	 * most depth are in the FIFO, so buffer n % depth is free again when
	 * file-only record n + depth is taken. (idx % depth would collide
	 * where depth does not divide PIPE_MAX_DEPTH.) */
	f->kind = OUT_FILE_ONLY;
	return (char *)g->staging + (size_t)(p->staged++ % g->depth) * g->out_stride;
}

/*
 * Where f's detection list goes (with a pc that detects): a reserved slot
 * of the detection ring, reserved now like the output slot and committed
 * in the same order; when the ring is full (or there is none), scratch, so
 * the file and the counters still see it. A full ring never blocks: the
 * list is dropped from the ring and counted, and the next one committed
 * carries DISCONTINUITY. Inside a stats write section.
 */
static void pick_det(struct pipeline *p, struct flight *f)
{
	struct pipeline_gen *g = p->cur;
	void *slot = NULL;

	if (!g->det_bytes)
		return;
	if (g->det) {
		if (chirp_ring_reserve_next(g->det, &slot) == 0) {
			f->det = slot;
			f->det_ring = 1;
			f->det_flags = p->det_carry;
			p->det_carry = 0;
			return;
		}
		stats_count(p->st, ST_DET_DROPS, 1);
		f->det_dropped = 1;
		p->det_carry |= CHIRP_RING_DISCONTINUITY;
	}
	f->det = (char *)g->det_scratch + (size_t)(p->det_staged++ % g->depth) * g->det_stride;
}

/*
 * A CPI whose pointing the beams cannot take (pc_submit_job said -EDOM:
 * not finite, beyond +-90 degrees, or a beam outside the visible region):
 * never beamformed with other weights. As an unknown mode: its results
 * are pc_write_skipped's, the output and the list flagged
 * CHIRP_RING_BAD_POINTING, done at once (retired in input order), counted.
 */
static int take_bad_pointing(struct pipeline *p, struct flight *f, void *outp)
{
	f->bad_pointing = 1;
	f->done_in = f->done_out = 1;
	pc_write_skipped(p->cur->pc, outp, f->det, f->mode);
	f->flags |= CHIRP_RING_BAD_POINTING;
	f->det_flags |= CHIRP_RING_BAD_POINTING;
	stats_write_begin(p->st);
	stats_count(p->st, ST_BAD_POINTING_CPIS, 1);
	stats_write_end(p->st);
	return 1;
}

/*
 * [live]: whether f's frame is due (live.h), decided as it is submitted,
 * so that with a pc that makes snapshots the watched maps' max-hold is
 * asked for with the job (job->snap = sn): the backend reduces its own
 * maps, in any output mode, and only the reduced cells come back. A pc
 * without snapshots: the frame comes from the map output (live_put).
 */
static void live_request(struct pipeline *p, struct flight *f, struct pc_job *job,
			 struct pc_snap *sn, uint64_t now)
{
	struct live *l = atomic_load_explicit(&p->live, memory_order_acquire);
	const struct pipeline_gen *g = p->cur;

	if (!l)
		return;
	if (!g->snap) {
		f->live = live_due(l, now);
		return;
	}
	f->live = live_due_req(l, now, g->snap_maps, g->snap_doppler, g->snap_range, &f->live_req);
	if (!f->live || !f->live_req.map_mask)
		return;
	f->snap = g->snap + (size_t)(p->snap_staged++ % g->depth) * g->snap_cells;
	*sn = (struct pc_snap){ .cells = f->snap, .cells_len = g->snap_cells,
				.map_mask = f->live_req.map_mask, .dd = f->live_req.dd,
				.dr = f->live_req.dr };
	job->snap = sn;
}

/* Hand the CPI in record idx to the backend. Returns 1, or < 0 on a fatal
 * error (already reported). */
static int submit_cpi(struct pipeline *p, struct flight *f, unsigned idx, const void *in,
		      void *outp)
{
	struct pipeline_gen *g = p->cur;
	struct pc_job job = { .in = in, .out = outp, .det = f->det, .tag = idx, .mode = f->mode,
			      .pointing_az_deg = f->pointing_az_deg, .pointing_el_deg = f->pointing_el_deg };
	struct pc_snap snap;
	int ret;

	f->out = outp;
	f->in_flight = p->nsub;
	watch(p, TW_TAKE);
	f->t_submit = mono_ns();
	live_request(p, f, &job, &snap, f->t_submit);
	/* What waits behind this CPI: the backend cuts for latency only when
	 * nothing does (pc_queue_hint). */
	pc_queue_hint(g->pc, f->fill > 1 ? f->fill - 1 : 0);
	ret = pc_submit_job(g->pc, &job);
	if (ret == -EINVAL && job.snap) {
		/* the view's request refused (our bug, never the data's): the
		 * CPI goes on without it, its frame without a map */
		job.snap = NULL;
		f->snap = NULL;
		f->live_req.map_mask = 0;
		ret = pc_submit_job(g->pc, &job);
	}
	for (int tries = 0; ret == -EAGAIN && tries < 1000; tries++) {
		/* Cannot happen while nsub < depth; if the backend counts
		 * differently, let it finish something instead of failing. */
		if (progress(p, 1) < 0)
			return -1;
		ret = pc_submit_job(g->pc, &job);
	}
	/* pc_submit's own time is the record's submit..submitted (the CPU
	 * backend computes in it): not a gap of the loop. */
	rewatch(p);
	if (ret == -EDOM)
		return take_bad_pointing(p, f, outp);
	if (ret < 0) {
		fail(p, "pc_submit", ret);
		return -1;
	}
	{
		uint32_t az, el;

		memcpy(&az, &f->pointing_az_deg, sizeof(az));
		memcpy(&el, &f->pointing_el_deg, sizeof(el));
		atomic_store_explicit(&p->point_az_bits, az, memory_order_relaxed);
		atomic_store_explicit(&p->point_el_bits, el, memory_order_relaxed);
	}
	f->t_submitted = mono_ns();
	p->nsub++;
	return 1;
}

/*
 * A CPI of a mode the pc does not have (take_one checked pc_has_mode): it
 * is never compressed with another mode's filter. Its results are written
 * in place by pc_write_skipped (the reserved output slot or the file-only
 * scratch: every value NaN; the list slot: an empty list flagged
 * CHIRP_DET_SKIPPED, so list n is CPI n's; no allocation), the output
 * flagged CHIRP_RING_UNKNOWN_MODE, and the record is done at once, so the
 * FIFO retires it in input order behind the CPIs still in the backend:
 * nothing is reordered. The main thread logs it (pipeline_unknown_mode_last).
 */
static int take_unknown_mode(struct pipeline *p, struct flight *f, void *outp)
{
	f->unknown = 1;
	f->done_in = f->done_out = 1;
	pc_write_skipped(p->cur->pc, outp, f->det, f->mode);
	if (outp)
		f->flags |= CHIRP_RING_UNKNOWN_MODE;
	atomic_store_explicit(&p->unknown_last, (uint64_t)f->mode + 1, memory_order_relaxed);
	return 1;
}

/* Count a CPI by its mode; returns 1 if the pc has it. Inside a stats
 * write section. */
static int count_mode(struct pipeline *p, const struct flight *f)
{
	if (!pc_has_mode(p->cur->pc, f->mode)) {
		stats_count(p->st, ST_UNKNOWN_MODE_CPIS, 1);
		return 0;
	}
	stats_count_mode(p->st, f->mode, 1);
	return 1;
}

/* Take one input block and submit it. Returns 1 if a block was taken, 0 if
 * none is available, < 0 on a fatal error (already reported). */
static int take_one(struct pipeline *p)
{
	int known;
	struct chirp_ring_block blk;
	struct flight *f;
	unsigned idx;
	void *outp;
	int ret = peek_input(p, &blk);

	if (ret <= 0)
		return ret;
	if ((blk.flags & CHIRP_RING_REDELIVERED) && already_delivered(p->cur, &blk))
		return skip_redelivered(p, &blk);
	f = new_record(p, &blk, &idx);
	stamp_peek(p, f, &blk);
	p->count++;

	stats_write_begin(p->st);
	count_input(p, &blk);
	if (blk.len != p->cur->in_bytes) {
		/* The ring validated its descriptor; this is a geometry mismatch
		 * we must not feed the backend. Released in order, no result. */
		stats_count(p->st, ST_BAD_BLOCKS, 1);
		f->kind = OUT_SKIP;
		f->done_in = f->done_out = 1;
		p->carry_flags |= CHIRP_RING_DISCONTINUITY;
		p->det_carry |= CHIRP_RING_DISCONTINUITY;
		stats_write_end(p->st);
		return 1;
	}
	known = count_mode(p, f);
	outp = pick_output(p, f);
	if (f->kind != OUT_SKIP)
		pick_det(p, f);
	stats_write_end(p->st);
	if (!known)
		return take_unknown_mode(p, f, outp);
	if (f->kind == OUT_SKIP) {
		f->done_in = f->done_out = 1;
		return 1;
	}
	return submit_cpi(p, f, idx, blk.payload, outp);
}

/*
 * Drained to a stop: if no gap is waiting to be carried by a result (every
 * CPI taken was delivered or its loss already flagged on a committed one),
 * leave the output ring's clean mark, so a restarted chirpd continues the
 * stream without a DISCONTINUITY (chirp_ring_mark_clean; the successor
 * opted in with chirp_ring_set_continuous). Called on the data thread,
 * which drives the output ring's producer handle.
 */
static void mark_clean(struct pipeline *p)
{
	int ret;

	if (p->carry_flags || p->commit_carry) {
		log_notice("stopping with a gap not yet carried by a result: "
			   "the next chirpd's first result will be flagged");
		return;
	}
	if (p->cur->out) {
		ret = chirp_ring_mark_clean(p->cur->out);
		if (ret < 0)
			log_notice("output ring: no clean mark (%s): the next chirpd's first result "
				   "will be flagged", strerror(-ret));
	}
	if (p->cur->det && !p->det_carry) {
		ret = chirp_ring_mark_clean(p->cur->det);
		if (ret < 0)
			log_notice("detection ring: no clean mark (%s): the next chirpd's first "
				   "list will be flagged", strerror(-ret));
	}
}

/*
 * The retired CPI's record for the flight recorder; returns 1 if it was
 * over the latency budget. Stores only: the main thread reads and logs
 * (chirpd's tick), so nothing here waits on I/O.
 */
static int record(struct pipeline *p, const struct flight *f, uint64_t t_commit,
		  uint64_t latency_ns, uint32_t out_flags, int delivered)
{
	uint64_t budget = atomic_load_explicit(&p->budget_ns, memory_order_relaxed);
	struct trace_cpi r = {
		.seq = f->seq, .first_sample = f->first_sample, .timestamp_ns = f->timestamp_ns,
		.mode = f->mode,
		.latency_ns = latency_ns, .device_ns = f->device_ns,
		.fill = f->fill, .in_flight = f->in_flight, .recomputed = f->recomputed,
		.chunks = f->chunks, .woken = f->woken, .absent = f->absent,
		.stall_ns = f->stall_ns, .stall_cpu_ns = f->stall_cpu_ns,
		.stall_kind = f->stall_kind, .stall_where = f->stall_where,
	};
	int over = delivered && budget && latency_ns > budget;

	r.t[TR_IN_COMMIT] = f->t_in_commit;
	r.t[TR_PEEK] = f->t_peek;
	r.t[TR_SUBMIT] = f->t_submit;
	r.t[TR_SUBMITTED] = f->t_submitted;
	r.t[TR_INPUT_DONE] = f->t_in_done;
	r.t[TR_OUTPUT_DONE] = f->kind == OUT_SKIP || f->unknown || f->bad_pointing ? 0 : f->t_done;
	r.t[TR_RELEASE] = f->t_release;
	r.t[TR_OUT_COMMIT] = delivered ? t_commit : 0;
	if (delivered)
		r.flags |= TRACE_DELIVERED;
	else
		r.flags |= f->out_dropped ? TRACE_DROPPED : TRACE_SKIPPED;
	if (over)
		r.flags |= TRACE_OVER_BUDGET;
	if (f->nonfinite_rows)
		r.flags |= TRACE_NONFINITE;
	if (out_flags & CHIRP_RING_DISCONTINUITY)
		r.flags |= TRACE_DISCONT;
	if (f->unknown)
		r.flags |= TRACE_UNKNOWN_MODE;
	if (p->trace) {
		uint64_t k = trace_total(p->trace);

		trace_put(p->trace, &r);
		if (over)
			atomic_store_explicit(&p->over_last, k + 1, memory_order_release);
	}
	return over;
}

/*
 * Publish an OUT_RING result under cflags: the oldest reservation is this
 * record's, since records retire in the order they reserved. (p->carry_flags
 * belongs to records not yet reserved: not used here.) Returns 1 delivered,
 * 0 dropped (the output ring was retired for good), or < 0 when the ring's
 * header is corrupt. Inside a stats write section.
 */
static int commit_result(struct pipeline *p, struct flight *f, uint32_t cflags)
{
	struct chirp_ring_cpi cpi = {
		.timestamp_ns = f->timestamp_ns, .first_sample = f->first_sample,
		.flags = cflags | f->in_incomplete, .mode = f->mode, .missing = f->missing,
		.pointing_az_deg = f->pointing_az_deg, .pointing_el_deg = f->pointing_el_deg,
	};
	int ret = chirp_ring_commit_cpi(p->cur->out, &cpi);

	if (ret == 0) {
		p->commit_carry = 0;
		return 1;
	}
	if (ret == -ESTALE) {
		/* Retired for good: every later reserve and commit on this
		 * handle fails too, so the reservation left outstanding is
		 * never published. */
		stats_count(p->st, ST_OUTPUT_DROPS, 1);
		f->out_dropped = 1;
		p->commit_carry |= CHIRP_RING_DISCONTINUITY;
		return 0;
	}
	return ret;
}

/* Count a retired record: its samples and stage times (output_ns: file
 * write, checkpoint and commit) if it was computed, its latency if it was
 * delivered. Returns the latency (0: not delivered). Inside a stats write
 * section. */
static uint64_t count_retired(struct pipeline *p, const struct flight *f, uint64_t output_ns,
			      int delivered)
{
	uint64_t latency = 0;

	if (f->nonfinite_rows) {
		stats_count(p->st, ST_NONFINITE_CPIS, 1);
		stats_count(p->st, ST_NONFINITE_ROWS, f->nonfinite_rows);
	}
	if (f->kind != OUT_SKIP && !f->unknown && !f->bad_pointing) {
		stats_count(p->st, ST_SAMPLES_IN, p->cur->samples_per_cpi);
		stats_stage(p->st, STG_INPUT, f->t_submit - f->t_peek);
		stats_stage(p->st, STG_COMPUTE, f->t_done - f->t_submit);
		stats_stage(p->st, STG_OUTPUT, output_ns);
	}
	if (delivered) {
		uint64_t rt = real_ns();

		latency = rt > f->timestamp_ns ? rt - f->timestamp_ns : 0;
		stats_count(p->st, ST_CPIS_OUT, 1);
		stats_latency(p->st, latency);
	}
	return latency;
}

/* Publish f's list in the detection ring under its carry, and the input
 * CPI's INCOMPLETE flag and missing count. Returns 1 committed, 0 dropped
 * (the ring was retired), < 0 with a corrupt header. Inside a stats write
 * section. */
static int commit_det(struct pipeline *p, struct flight *f)
{
	struct chirp_ring_cpi cpi = {
		.timestamp_ns = f->timestamp_ns, .first_sample = f->first_sample,
		.flags = f->det_flags | f->in_incomplete, .mode = f->mode, .missing = f->missing,
		.pointing_az_deg = f->pointing_az_deg, .pointing_el_deg = f->pointing_el_deg,
	};
	int ret = chirp_ring_commit_cpi(p->cur->det, &cpi);

	if (ret == -ESTALE) {
		stats_count(p->st, ST_DET_DROPS, 1);
		p->det_carry |= CHIRP_RING_DISCONTINUITY;
		return 0;
	}
	return ret < 0 ? ret : 1;
}

/* Records in f's list that fit its slot (the backend's count, bounded by
 * what the slot holds, so a bad count never reads past it). */
static uint32_t det_count(const struct pipeline_gen *g, const struct chirp_det_header *h)
{
	size_t room = (g->det_bytes - sizeof(*h)) / sizeof(struct chirp_det_record);

	return h->count < room ? h->count : (uint32_t)room;
}

/* The list's counters. Inside a stats write section. */
static void count_det(struct pipeline *p, const struct flight *f)
{
	const struct chirp_det_header *h = f->det;

	stats_count(p->st, ST_DET_LISTS, 1);
	stats_count(p->st, ST_DETECTIONS, det_count(p->cur, h));
	if (h->flags & CHIRP_DET_OVERFLOW)
		stats_count(p->st, ST_DET_OVERFLOWS, 1);
	stats_count(p->st, ST_CFAR_CELLS, h->cells);
	stats_count(p->st, ST_CFAR_CROSSINGS, h->crossings);
}

/* A float as JSON: %.9g, or null when it is not finite (velocity_mps
 * without a carrier is NaN; JSON has no NaN). */
static int json_float(char *b, size_t n, float v)
{
	return isfinite(v) ? snprintf(b, n, "%.9g", (double)v) : snprintf(b, n, "null");
}

/* A JSON line being formatted into a fixed buffer: o counts every byte of
 * the line, also those past the end. A line is whole in the buffer when
 * o < cap (vsnprintf keeps a byte for its NUL), which is why the sink takes
 * lines of at most cap - 1 bytes and drops longer ones. */
struct jline {
	char *b;
	size_t cap, o;
};

static void __attribute__((format(printf, 2, 3))) jput(struct jline *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = j->o < j->cap ? vsnprintf(j->b + j->o, j->cap - j->o, fmt, ap) :
			    vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->o += (size_t)n;
}

/*
 * f's list as one JSON line into the generation's line buffer, handed to
 * the [detections] file's sink whole (a line longer than the buffer is
 * counted as dropped there). The buffer and the sink's queue were made
 * with the generation: nothing is allocated, nothing waits on the file.
 * Returns 1 if the line is queued, 0 if it was dropped (counted).
 */
static int det_json(struct pipeline *p, const struct flight *f)
{
	const struct chirp_det_header *h = f->det;
	const struct chirp_det_record *r = (const void *)(h + 1);
	struct jline j = { .b = p->cur->jbuf, .cap = p->cur->jbuf_len };
	uint32_t n = det_count(p->cur, h);
	int beams = !!(h->flags & CHIRP_DET_BEAMS);
	char paz[32], pel[32];

	json_float(paz, sizeof(paz), f->pointing_az_deg);
	json_float(pel, sizeof(pel), f->pointing_el_deg);
	jput(&j, "{\"seq\":%llu,\"timestamp_ns\":%llu,\"first_sample\":%llu,\"mode\":%u,"
		 "\"pointing_az_deg\":%s,\"pointing_el_deg\":%s,\"count\":%u,\"found\":%u,"
		 "\"overflow\":%s,\"skipped\":%s,\"incomplete\":%s,\"beams\":%s,\"detections\":[",
	     (unsigned long long)h->seq, (unsigned long long)h->timestamp_ns,
	     (unsigned long long)h->first_sample, h->mode, paz, pel, n, h->found,
	     (h->flags & CHIRP_DET_OVERFLOW) ? "true" : "false",
	     (h->flags & CHIRP_DET_SKIPPED) ? "true" : "false",
	     (h->flags & CHIRP_DET_INCOMPLETE) ? "true" : "false", beams ? "true" : "false");
	for (uint32_t i = 0; i < n; i++, r++) {
		char rm[32], vm[32], pw[32], nz[32], sn[32], az[32], el[32];

		json_float(rm, sizeof(rm), r->range_m);
		json_float(vm, sizeof(vm), r->velocity_mps);
		json_float(pw, sizeof(pw), r->power);
		json_float(nz, sizeof(nz), r->noise);
		json_float(sn, sizeof(sn), r->snr_db);
		jput(&j, "%s{\"channel\":%d,\"range_gate\":%u,\"doppler_bin\":%d,\"range_m\":%s,"
			 "\"velocity_mps\":%s,\"power\":%s,\"noise\":%s,\"snr_db\":%s",
		     i ? "," : "", r->channel, r->range_gate, r->doppler_bin, rm, vm, pw, nz, sn);
		if (beams) {
			json_float(az, sizeof(az), r->azimuth_deg);
			json_float(el, sizeof(el), r->elevation_deg);
			jput(&j, ",\"beam\":%d,\"azimuth_deg\":%s,\"elevation_deg\":%s,"
				 "\"angle_quality\":%u", r->beam, az, el, (unsigned)r->angle_quality);
		}
		jput(&j, "}");
	}
	jput(&j, "]}\n");
	return sink_put(p->cur->det_sink, j.b, j.o) == 0;
}

/* f's list is complete: the input's identity into its header (the
 * backend leaves seq, timestamp_ns and first_sample to us), then the
 * [detections] file. Returns 1 if the list is on its way to the file.
 * Not inside a stats write section. */
static int det_complete(struct pipeline *p, struct flight *f)
{
	struct chirp_det_header *h = f->det;

	h->magic = CHIRP_DET_MAGIC;
	h->version = CHIRP_DET_VERSION;
	h->record_bytes = sizeof(struct chirp_det_record);
	h->seq = f->seq;
	h->timestamp_ns = f->timestamp_ns;
	h->first_sample = f->first_sample;
	h->mode = f->mode;
	if (f->in_incomplete)   /* a list of a CPI with holes says so */
		h->flags |= CHIRP_DET_INCOMPLETE;
	return p->cur->det_sink ? det_json(p, f) : 0;
}

/*
 * f's list and, when one is due, its map to the publisher: a copy into
 * its queue each (zpub.h), never a wait. The map pass reads the whole map
 * once; it is the publisher's deliberate cost, not a stall.
 */
static void publish(struct pipeline *p, const struct flight *f, uint64_t now)
{
	struct zpub *z = atomic_load_explicit(&p->pub, memory_order_acquire);
	const struct pipeline_gen *g = p->cur;
	struct zpub_cpi c;

	if (!z)
		return;
	c = (struct zpub_cpi){
		.seq = f->seq, .timestamp_ns = f->timestamp_ns, .first_sample = f->first_sample,
		.mode = f->mode, .channels = g->channels, .pulses = g->pulses,
		.samples = g->samples, .pointing_az_deg = f->pointing_az_deg,
		.pointing_el_deg = f->pointing_el_deg,
	};
	if (f->det)
		(void)zpub_put_det(z, f->det, g->det_bytes, &c);   /* full: counted */
	if (g->map_range && f->out && f->kind != OUT_SKIP && !f->unknown && !f->bad_pointing &&
	    zpub_map_due(z, now)) {
		(void)zpub_put_map(z, f->out, g->map_maps, g->map_doppler, g->map_range, &c);
		rewatch(p);
	}
}

/*
 * [live]: f's frame, when one was due at its submit (live_request): the
 * backend's snapshot of its maps (a copy of the reduced cells), or, from
 * a pc without snapshots, its map output reduced by max-hold here (one
 * read of the map), and its list, into the view's snapshot (live.h);
 * never a wait. A CPI not computed (unknown mode, bad pointing, skipped
 * for a full ring) is never submitted, so it has no frame.
 */
static void live_sample(struct pipeline *p, const struct flight *f)
{
	struct live *l = atomic_load_explicit(&p->live, memory_order_acquire);
	const struct pipeline_gen *g = p->cur;
	struct live_cpi c;
	const float *map;

	if (!l || !f->live || f->unknown || f->bad_pointing)
		return;
	c = (struct live_cpi){ .seq = f->seq, .timestamp_ns = f->timestamp_ns, .mode = f->mode };
	if (g->snap) {
		live_put_cells(l, &c, f->snap, g->snap_maps, g->snap_doppler, g->snap_range,
			       &f->live_req, f->det, g->det_bytes);
	} else {
		map = g->map_range && f->out && f->kind != OUT_SKIP ? f->out : NULL;
		live_put(l, &c, map, g->map_maps, g->map_doppler, g->map_range, f->det,
			 g->det_bytes);
	}
	rewatch(p);
}

/* Retire the FIFO's head f: the file sinks (a copy each, never a wait),
 * the output ring's commit, the counters and the flight recorder. Returns
 * 0, or -1 failed (reported). */
static int finish_one(struct pipeline *p, struct flight *f)
{
	struct pipeline_gen *g = p->cur;
	uint32_t flags = 0, cflags = 0;
	uint64_t t0 = mono_ns(), now, latency;
	int delivered = 0, in_file = 0, ret;

	if (f->nonfinite_rows)
		flags |= CHIRP_RING_NONFINITE;
	if (f->kind != OUT_SKIP && f->out && g->out_sink)
		(void)sink_put(g->out_sink, f->out, g->out_bytes);   /* full: counted */
	if (f->det)
		in_file = det_complete(p, f);
	publish(p, f, t0);
	live_sample(p, f);
	test_retire_sleep(p);
	watch(p, TW_RETIRE);

	stats_write_begin(p->st);
	if (f->kind == OUT_RING) {
		cflags = flags | f->flags | p->commit_carry;
		ret = commit_result(p, f, cflags);
		if (ret < 0) {
			/* -EBADMSG (header corrupt): the reservation stays the
			 * oldest, so a later commit that succeeded would publish
			 * this slot under the next result's descriptor. Never
			 * mislabel data: fail the data path (the watchdog stops;
			 * a restarted chirpd re-validates the ring). */
			stats_write_end(p->st);
			fail(p, "chirp_ring_commit(output)", ret);
			return -1;
		}
		delivered = ret;
	}
	if (f->det_ring) {
		ret = commit_det(p, f);
		if (ret < 0) {
			stats_write_end(p->st);
			fail(p, "chirp_ring_commit(detections)", ret);
			return -1;
		}
		/* Without an output ring a CPI is delivered with its list. */
		if (f->kind == OUT_NONE)
			delivered = ret;
	} else if (f->kind == OUT_NONE) {
		/* no detection ring: delivered when its list went to the
		 * [detections] file's queue (dropped there: counted, not
		 * delivered) */
		delivered = in_file;
	}
	if (f->det)
		count_det(p, f);
	now = mono_ns();
	latency = count_retired(p, f, now - t0, delivered);
	if (record(p, f, now, latency, cflags, delivered))
		stats_count(p->st, ST_OVER_BUDGET, 1);
	stats_write_end(p->st);
	return 0;
}

/* Mark the records the backend reported done (pc_poll's n entries). */
static void absorb_done(struct pipeline *p, const struct pc_done *done, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned idx = (unsigned)(done[i].tag % PIPE_MAX_DEPTH);
		struct flight *f = &p->fl[idx];

		if ((done[i].flags & PC_DONE_INPUT) && !f->done_in) {
			f->done_in = 1;
			f->t_in_done = mono_ns();
		}
		if ((done[i].flags & PC_DONE_OUTPUT) && !f->done_out) {
			f->done_out = 1;
			f->t_done = mono_ns();
			f->nonfinite_rows = done[i].nonfinite_rows;
			f->device_ns = done[i].device_ns;
			f->recomputed = done[i].recomputed;
			f->chunks = done[i].chunks;
			f->woken = done[i].woken;
			f->absent = done[i].absent;
			/* mvdr found no weights in the CPI's training cells (a
			 * set of zeros, NaN or Inf): every value NaN */
			if (done[i].flags & PC_DONE_SKIPPED)
				f->flags |= CHIRP_RING_NONFINITE;
			p->nsub--;
		}
	}
}

/* Release inputs in order, as far as the backend is done reading. Returns
 * 0, or < 0 on failure (reported). */
static int release_inputs(struct pipeline *p)
{
	for (unsigned k = 0; k < p->count; k++) {
		struct flight *f = &p->fl[(p->head + k) % PIPE_MAX_DEPTH];
		int ret;

		if (f->released)
			continue;
		if (!f->done_in)
			break;
		ret = chirp_ring_release(p->cur->in);
		if (ret < 0 && ret != -ESTALE) {
			fail(p, "chirp_ring_release(input)", ret);
			return ret;
		}
		f->released = 1;
		f->t_release = mono_ns();
	}
	return 0;
}

/* Deliver results in order: retire the FIFO's head while it is released
 * and computed. Returns the number retired, < 0 on failure (reported). */
static int deliver_results(struct pipeline *p)
{
	int retired = 0;

	while (p->count) {
		struct flight *f = &p->fl[p->head];

		if (!f->released || !f->done_out)
			break;
		if (finish_one(p, f) < 0)
			return -EIO;   /* failed, already reported */
		p->head = (p->head + 1) % PIPE_MAX_DEPTH;
		p->count--;
		retired++;
	}
	return retired;
}

/* Poll the pc (waiting up to timeout_ms) and retire finished records in
 * input order. Returns the number of records retired, < 0 on failure. */
static int progress(struct pipeline *p, int timeout_ms)
{
	struct pc_done done[PIPE_MAX_DEPTH];
	int n = 0, ret;

	if (p->nsub) {
		n = pc_poll(p->cur->pc, done, PIPE_MAX_DEPTH, timeout_ms);
		if (n < 0) {
			fail(p, "pc_poll", n);
			return n;
		}
		/* A wait on the backend was asked for (busy_poll off, or a
		 * submit the backend refused): not a stall. */
		if (timeout_ms > 0)
			rewatch(p);
	}
	absorb_done(p, done, n);
	ret = release_inputs(p);
	if (ret < 0)
		return ret;
	return deliver_results(p);
}

static void do_swap(struct pipeline *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->pending_set) {
		struct pipeline_gen *old = p->cur;
		struct chirp_ring_stats rs;

		if (old)
			count_overruns(p);
		if (p->pending && chirp_ring_stats(p->pending->in, &rs) == 0 &&
		    rs.epoch != p->in_epoch) {
			/* A new input ring: sequence numbers start over, and the
			 * old ring's overruns become history. */
			p->overrun_base += p->ring_overruns;
			p->ring_overruns = rs.overruns;
			p->in_epoch = rs.epoch;
			p->have_last_seq = 0;
		}
		p->cur = p->pending;          /* NULL: parked, no ring touched */
		p->pending = NULL;
		p->pending_set = 0;
		p->retired = old;
		p->swap_gen_done++;
		p->stale_since = 0;
		if (p->cur)
			gen_start_sinks(p->cur, old);
	}
	atomic_store(&p->swap_requested, 0);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* What the control side asks of the data thread, read once per round. */
struct requests {
	int stop, swap, pause;
	int any;                     /* one of them: take no new input     */
};

static struct requests read_requests(struct pipeline *p)
{
	struct requests rq;

	rq.stop = atomic_load_explicit(&p->stop_requested, memory_order_acquire);
	rq.swap = atomic_load_explicit(&p->swap_requested, memory_order_acquire);
	rq.pause = atomic_load_explicit(&p->pause_requested, memory_order_relaxed);
	rq.any = rq.stop || rq.swap || rq.pause;
	return rq;
}

/* How a round of the loop ends. */
enum step {
	STEP_NEXT,                   /* go round again                       */
	STEP_STOP,                   /* drained to a stop: PIPE_STOPPED      */
	STEP_FAIL,                   /* failed, PIPE_FAILED already set      */
};

/* Apply the NUMA plan to this thread and tell pipeline_create the outcome.
 * Returns 0, or -1 refused (start_err says why). */
static int start_handshake(struct pipeline *p)
{
	struct sysnuma_plan none = { .node = -1 };
	char err[256] = "";
	int ret = sysnuma_apply_thread(p->have_plan ? &p->plan : &none, &p->applied, err,
				       sizeof(err));

	pthread_mutex_lock(&p->lock);
	if (ret < 0) {
		snprintf(p->start_err, sizeof(p->start_err), "%s", err);
		p->started = -1;
	} else {
		p->started = 1;
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return ret < 0 ? -1 : 0;
}

/* Parked for a reload that re-creates a ring: no ring is touched; a swap
 * is taken at once, otherwise sleep 1 ms. */
static enum step parked_round(struct pipeline *p, const struct requests *rq)
{
	struct timespec ts = { 0, 1000000 };

	if (rq->stop)
		return STEP_STOP;
	if (rq->swap) {
		do_swap(p);
		return STEP_NEXT;
	}
	nanosleep(&ts, NULL);
	rewatch(p);
	return STEP_NEXT;
}

/* Take input blocks while fewer than depth CPIs are in flight. Returns 1 if
 * one was taken, 0 if none, < 0 on a fatal error (already reported). */
static int fill_pipeline(struct pipeline *p)
{
	int took = 0, ret;

	while (p->count < p->cur->depth) {
		ret = take_one(p);
		if (ret < 0)
			return ret;
		if (ret == 0)
			break;
		took = 1;
	}
	return took;
}

/* Nothing in flight with a stop or swap asked for: the CPI boundary. A
 * stop leaves the clean mark and ends the loop; a swap exchanges the
 * generation. */
static enum step at_boundary(struct pipeline *p, const struct requests *rq)
{
	if (rq->stop) {
		mark_clean(p);
		return STEP_STOP;
	}
	do_swap(p);
	return STEP_NEXT;
}

/* PIPE_PAUSED once a pause has drained the CPIs in flight; RUNNING
 * otherwise. */
static void publish_pause(struct pipeline *p, const struct requests *rq)
{
	if (rq->pause && !rq->stop && !rq->swap) {
		enum pipeline_state want = p->count ? PIPE_RUNNING : PIPE_PAUSED;

		if (atomic_load(&p->state) != (int)want)
			set_state(p, want);
	} else if (atomic_load(&p->state) == PIPE_PAUSED) {
		set_state(p, PIPE_RUNNING);
	}
}

/* Nothing in flight and no input to take (paused, stopping, swapping, a
 * stale ring or an invalid block): sleep 1 ms. */
static void nap(struct pipeline *p)
{
	struct timespec ts = { 0, 1000000 };

	p->bad_pause = 0;
	nanosleep(&ts, NULL);
	if (!p->stale_since)
		count_overruns(p);   /* paused: the producer's overruns keep counting */
}

/*
 * Nothing in flight: wait on the input ring for up to IDLE_WAIT_NS,
 * polling it until [processing] idle_spin_us after the last CPI taken
 * (chirp_ring_set_spin; an idle daemon sleeps at once in every later wait),
 * then sleeping on its futex. The handle may be shared with the previous
 * generation: only this thread sets or reads its spin. A sleeping data
 * thread is woken by the producer's commit, which on a VM can take 1-2 ms:
 * polling keeps that wake-up out of chirpd's latency tail (the figures are
 * in doc/performance.md). Returns 0, or < 0 on a fatal error (reported).
 */
static int wait_input(struct pipeline *p)
{
	struct pipeline_gen *g = p->cur;
	int ret;

	if (chirp_ring_get_spin(g->in) != g->idle_spin_ns &&
	    (ret = chirp_ring_set_spin(g->in, g->idle_spin_ns)) < 0) {
		fail(p, "chirp_ring_set_spin(input)", ret);
		return ret;
	}
	ret = chirp_ring_wait(g->in, IDLE_WAIT_NS);
	if (ret < 0 && ret != -ETIMEDOUT && ret != -EINTR && ret != -ESTALE) {
		fail(p, "chirp_ring_wait(input)", ret);
		return ret;
	}
	if (ret == 0 || ret == -ETIMEDOUT)
		count_overruns(p);
	return 0;
}

/*
 * A round in which nothing was taken or retired. With CPIs in flight and
 * busy_poll, go round again at once; otherwise wait on the backend (1 ms),
 * nap, or wait on the input ring, and re-mark the stall watch: every wait
 * here is deliberate. Returns 0, or < 0 on a fatal error (reported).
 */
static int wait_for_work(struct pipeline *p, const struct requests *rq)
{
	int ret = 0;

	if (p->nsub && p->cur->busy_poll && !rq->any) {
		/* CPIs in flight: poll the backend and the input ring without
		 * sleeping. A sleep on the backend leaves new input waiting
		 * until the backend's wake-up (up to 1 ms, plus the host's
		 * wake-up tail), and a wake-up through another thread costs
		 * tens of microseconds of idle copy engines per CPI. One core
		 * is busy while work is in flight: [processing] busy_poll =
		 * false trades it back. */
		cpu_relax();
		return 0;
	}
	if (p->nsub)
		ret = progress(p, 1);   /* wait for the backend, 1 ms */
	else if (rq->any || p->stale_since || p->bad_pause)
		nap(p);
	else
		ret = wait_input(p);
	if (ret < 0)
		return ret;
	rewatch(p);
	return 0;
}

/* One round of the loop (see the top of this file). */
static enum step run_round(struct pipeline *p)
{
	struct requests rq = read_requests(p);
	int busy = 0, ret;

	atomic_fetch_add_explicit(&p->heartbeat, 1, memory_order_relaxed);
	watch(p, TW_POLL);
	if (!p->cur)
		return parked_round(p, &rq);
	if (!rq.any) {
		ret = fill_pipeline(p);
		if (ret < 0)
			return STEP_FAIL;
		busy = ret;
	}
	ret = progress(p, 0);
	if (ret < 0)
		return STEP_FAIL;
	busy |= ret > 0;
	if (p->count == 0 && (rq.stop || rq.swap))
		return at_boundary(p, &rq);
	publish_pause(p, &rq);
	if (busy)
		return STEP_NEXT;
	return wait_for_work(p, &rq) < 0 ? STEP_FAIL : STEP_NEXT;
}

static void *data_thread(void *arg)
{
	struct pipeline *p = arg;
	enum step s;

	if (start_handshake(p) < 0)
		return NULL;
	set_state(p, atomic_load(&p->pause_requested) ? PIPE_PAUSED : PIPE_RUNNING);
	rewatch(p);
	do
		s = run_round(p);
	while (s == STEP_NEXT);
	if (s == STEP_FAIL)
		return NULL;
	set_state(p, PIPE_STOPPED);
	notify(p);
	return NULL;
}

/* ---- control side ------------------------------------------------------- */

struct pipeline *pipeline_create(struct pipeline_gen *g, struct stats *st,
				 const struct sysnuma_plan *plan, int notify_fd,
				 struct trace *trace, char *err, size_t errlen)
{
	struct pipeline *p;
	int ret;

	if (!g || !st) {
		snprintf(err, errlen, "pipeline needs a generation and stats");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (gen_make_sinks(g, st, err, errlen) < 0) {
		free(p);
		return NULL;
	}
	gen_start_sinks(g, NULL);
	test_hooks_init(p);
	p->cur = g;
	p->st = st;
	p->trace = trace;
	{
		struct chirp_ring_stats rs;

		if (chirp_ring_stats(g->in, &rs) == 0) {
			p->in_epoch = rs.epoch;
			p->overrun_base = 0;
		}
	}
	p->notify_fd = notify_fd;
	if (plan) {
		p->plan = *plan;
		p->have_plan = 1;
	}
	atomic_init(&p->state, PIPE_STARTING);
	pthread_mutex_init(&p->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	ret = pthread_create(&p->thread, NULL, data_thread, p);
	if (ret) {
		snprintf(err, errlen, "pthread_create: %s", strerror(ret));
		goto fail;
	}
	p->thread_started = 1;
	pthread_mutex_lock(&p->lock);
	while (p->started == 0)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
	if (p->started < 0) {
		snprintf(err, errlen, "%s", p->start_err);
		pthread_join(p->thread, NULL);
		goto fail;
	}
	return p;
fail:
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return NULL;
}

void pipeline_applied(const struct pipeline *p, struct sysnuma_applied *a)
{
	*a = p->applied;   /* written before the start handshake, never after */
}

enum pipeline_state pipeline_state(const struct pipeline *p)
{
	return atomic_load_explicit(&((struct pipeline *)p)->state, memory_order_acquire);
}

uint64_t pipeline_heartbeat(const struct pipeline *p)
{
	return atomic_load_explicit(&((struct pipeline *)p)->heartbeat, memory_order_relaxed);
}

const char *pipeline_error(const struct pipeline *p)
{
	/* p->error is written before the release store of PIPE_FAILED. */
	return pipeline_state(p) == PIPE_FAILED ? p->error : "";
}

void pipeline_set_live(struct pipeline *p, struct live *l)
{
	atomic_store_explicit(&p->live, l, memory_order_release);
}

void pipeline_set_publisher(struct pipeline *p, struct zpub *z)
{
	atomic_store_explicit(&p->pub, z, memory_order_release);
}

void pipeline_set_budget(struct pipeline *p, uint64_t budget_ns)
{
	atomic_store_explicit(&p->budget_ns, budget_ns, memory_order_relaxed);
}

uint64_t pipeline_over_budget_last(const struct pipeline *p)
{
	return atomic_load_explicit(&((struct pipeline *)p)->over_last, memory_order_acquire);
}

void pipeline_last_pointing(const struct pipeline *p, double *az_deg, double *el_deg)
{
	struct pipeline *q = (struct pipeline *)p;
	uint32_t a = atomic_load_explicit(&q->point_az_bits, memory_order_relaxed);
	uint32_t e = atomic_load_explicit(&q->point_el_bits, memory_order_relaxed);
	float fa, fe;

	memcpy(&fa, &a, sizeof(fa));
	memcpy(&fe, &e, sizeof(fe));
	*az_deg = fa;
	*el_deg = fe;
}

uint64_t pipeline_unknown_mode_last(const struct pipeline *p)
{
	return atomic_load_explicit(&((struct pipeline *)p)->unknown_last, memory_order_relaxed);
}

unsigned pipeline_auto_slots(double buffer_ms, double cps, uint64_t slot_bytes,
			     uint64_t mem_budget, unsigned min_slots)
{
	double want = cps > 0 && buffer_ms > 0 ? ceil(buffer_ms * 1e-3 * cps) : 0;
	unsigned n;

	if (min_slots < 2)
		min_slots = 2;
	n = want >= CHIRP_RING_MAX_SLOTS ? CHIRP_RING_MAX_SLOTS : (unsigned)want;
	if (n < min_slots)
		n = min_slots;
	if (mem_budget && slot_bytes && (uint64_t)n * slot_bytes > mem_budget) {
		uint64_t fit = mem_budget / slot_bytes;

		n = fit < 2 ? 2 : (unsigned)fit;
	}
	return n;
}

void pipeline_pause(struct pipeline *p, int paused)
{
	atomic_store(&p->pause_requested, paused ? 1 : 0);
}

void pipeline_stop(struct pipeline *p)
{
	atomic_store_explicit(&p->stop_requested, 1, memory_order_release);
}

struct pipeline_gen *pipeline_current(const struct pipeline *p)
{
	struct pipeline *w = (struct pipeline *)p;
	struct pipeline_gen *g;

	pthread_mutex_lock(&w->lock);
	g = w->cur;
	pthread_mutex_unlock(&w->lock);
	return g;
}

/* clock's time now plus ms milliseconds. */
static struct timespec deadline_after(clockid_t clock, int ms)
{
	struct timespec t;

	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static int ts_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* A swap is refused once the data path has failed or stopped: -EIO with
 * err saying so (during: while the swap waited), else 0. Under p->lock. */
static int swap_refused(const struct pipeline *p, int during, char *err, size_t errlen)
{
	enum pipeline_state s = pipeline_state(p);

	if (s != PIPE_FAILED && s != PIPE_STOPPED)
		return 0;
	if (during)
		snprintf(err, errlen, "data path %s during the swap", pipeline_state_name(s));
	else
		snprintf(err, errlen, "data path is %s", pipeline_state_name(s));
	return -EIO;
}

/* Wait under p->lock until the data thread has taken swap number want, it
 * fails or stops, or the MONOTONIC deadline dl passes. Returns 0, -EIO or
 * -ETIMEDOUT (err says why). */
static int wait_swap_done(struct pipeline *p, uint64_t want, const struct timespec *dl,
			  int timeout_ms, char *err, size_t errlen)
{
	while (p->swap_gen_done < want) {
		struct timespec step;
		int ret = swap_refused(p, 1, err, errlen);

		if (ret)
			return ret;
		/* Wake up now and then to see a failure (no broadcast then). */
		step = deadline_after(CLOCK_MONOTONIC, 50);
		if (ts_after(&step, dl))
			step = *dl;
		ret = pthread_cond_timedwait(&p->cond, &p->lock, &step);
		if (ret == ETIMEDOUT && step.tv_sec == dl->tv_sec && step.tv_nsec == dl->tv_nsec) {
			if (p->swap_gen_done >= want)
				break;
			snprintf(err, errlen, "data path did not reach a CPI boundary within %d ms",
				 timeout_ms);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

int pipeline_swap(struct pipeline *p, struct pipeline_gen *g, struct pipeline_gen **old,
		  int timeout_ms, char *err, size_t errlen)
{
	struct timespec dl = deadline_after(CLOCK_MONOTONIC, timeout_ms);
	int ret;

	*old = NULL;
	if (g && gen_make_sinks(g, p->st, err, errlen) < 0)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	ret = swap_refused(p, 0, err, errlen);
	if (ret) {
		pthread_mutex_unlock(&p->lock);
		return ret;
	}
	p->pending = g;
	p->pending_set = 1;
	p->retired = NULL;
	atomic_store_explicit(&p->swap_requested, 1, memory_order_release);
	ret = wait_swap_done(p, p->swap_gen_done + 1, &dl, timeout_ms, err, errlen);
	if (ret) {
		/* Withdraw: the data thread takes pending only under the lock. */
		p->pending = NULL;
		p->pending_set = 0;
		atomic_store(&p->swap_requested, 0);
	} else {
		*old = p->retired;
		p->retired = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

int pipeline_destroy(struct pipeline *p, int timeout_ms)
{
	struct timespec dl;
	int rc;

	if (!p)
		return 0;
	pipeline_stop(p);
	if (p->thread_started) {
		dl = deadline_after(CLOCK_REALTIME, timeout_ms);   /* pthread_timedjoin_np */
		rc = pthread_timedjoin_np(p->thread, NULL, &dl);
		if (rc == ETIMEDOUT) {
			log_err("data thread did not stop within %d ms; leaving it", timeout_ms);
			pthread_detach(p->thread);
			return -ETIMEDOUT;
		}
	}
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return 0;
}
