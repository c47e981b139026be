/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.h — chirpd's data path: one thread that takes CPIs from the
 * input ring, runs pulse compression and commits results to the output
 * ring, never waiting on the control plane.
 *
 * GENERATIONS
 *   A struct pipeline_gen bundles what one configuration uses: the input
 *   ring (consumer), the output ring (producer), the pc, an optional output
 *   file, plus the staging buffers the pipeline needs for that pc. The
 *   caller (chirpd's main thread) owns the rings, the pc and the file; a gen
 *   only borrows them, so two generations may share a ring when a reload
 *   keeps its geometry. Destroy a gen before the pc it uses.
 *
 * FILES
 *   [output] file and [detections] file are written off the data thread,
 *   each by a sink (sink.h) the generation gets when it is handed to the
 *   pipeline (pipeline_create, pipeline_swap): the data thread copies a
 *   CPI's result, or its list's JSON line, into the sink's bounded queue
 *   and a writer thread writes it. A file that is slow, full or blocked
 *   never stalls a CPI: a record the queue has no room for is dropped
 *   whole and counted (output_file_drops, detection_file_drops and their
 *   _dropped_bytes), write errors are counted (*_file_errors) and logged
 *   by the writer. Records reach the file in input order, also across a
 *   swap to a generation that keeps the file descriptor (its sink starts
 *   once the old one is destroyed). pipeline_gen_destroy gives a sink a
 *   second to write what it holds, then drops the rest (counted).
 *
 * RELOAD
 *   pipeline_swap() hands a new generation to the data thread, which stops
 *   taking CPIs, finishes every CPI in flight on the old pc (inputs released,
 *   results committed), switches, and goes on with the next block of the
 *   input ring: no CPI is lost or processed twice when the input ring is
 *   kept. The call returns once the swap is done (or times out, in which
 *   case nothing changed).
 *
 * RADAR MODES
 *   Each input block carries its CPI's mode (chirp_ring_block.mode); the
 *   CPI is compressed with that mode's filter (pc_submit_job) and its
 *   result committed with the same mode (chirp_ring_commit_mode). A mode
 *   the pc does not have is never processed with another's filter: the
 *   result is committed in its place in the order, zeroed and flagged
 *   CHIRP_RING_UNKNOWN_MODE, and counted (ST_UNKNOWN_MODE_CPIS).
 *
 * ORDER AND LOSS
 *   Inputs are released and results committed in input order. A full output
 *   ring never blocks: the result is dropped and counted (output_drops); the
 *   next result committed carries CHIRP_RING_DISCONTINUITY. Missing input
 *   sequence numbers are counted (sequence_gaps) and marked the same way.
 *   Each result carries its input's timestamp_ns and first_sample.
 *
 * THREADING
 *   pipeline_* calls come from one control thread. The data thread talks
 *   back through atomics (state, heartbeat), the stats seqlock, and an
 *   eventfd (notify_fd) it writes 1 to whenever its state changes to
 *   FAILED or STOPPED.
 */
#ifndef CHIRP_PIPELINE_H
#define CHIRP_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "chirp/pc.h"
#include "chirp/ring.h"
#include "stats.h"
#include "sysnuma.h"
#include "trace.h"

enum pipeline_state {
	PIPE_STARTING = 0,
	PIPE_RUNNING,
	PIPE_PAUSED,
	PIPE_STOPPED,            /* drained and exited after pipeline_stop     */
	PIPE_FAILED,             /* backend or ring failure; see pipeline_error */
};

const char *pipeline_state_name(enum pipeline_state s);  /* "running", ... */

struct pipeline_gen;
struct pipeline;

/*
 * A generation over borrowed in/out rings and pc (out NULL when the pc
 * writes no output: pc_out_bytes 0). out_fd: file the results
 * are also appended to (-1 = none; the fd stays the caller's). Checks that
 * the pc's input/output CPI sizes match the rings' slots, registers the
 * rings' data regions with the pc (GPU DMA in place) and allocates staging
 * only for [output] file results the output ring has no room for, bound to
 * numa_node (-1 = no binding) before it is touched or registered. NULL with
 * a reason on failure.
 */
struct pipeline_gen *pipeline_gen_create(struct chirp_ring *in, struct chirp_ring *out,
					 struct pc *pc, int out_fd, int numa_node,
					 char *err, size_t errlen);

/*
 * With a pc that detects (pc_det_bytes > 0), before the generation is
 * swapped in: det = the detection ring (producer; NULL = none), det_fd =
 * the [detections] file for JSON lines (-1 = none; the fd stays the
 * caller's). Checks the ring's slots hold the pc's lists, registers it
 * with the pc, and makes the scratch lists and the line buffer (bound to
 * numa_node >= 0). With a pc that does not detect both must be none.
 * Returns 0 or a negative errno with a reason.
 *
 * DETECTIONS: each CPI's list goes to a detection ring slot reserved with
 * its output slot and committed after it, in input order, under the CPI's
 * mode, with the input's seq, timestamp_ns and first_sample in its header.
 * A full detection ring never blocks: the list is dropped from it and
 * counted (detection_drops) and the next list committed carries
 * CHIRP_RING_DISCONTINUITY; the file still gets it. A CPI of an unknown
 * mode gets an empty list flagged CHIRP_DET_SKIPPED. The file has one JSON
 * object per CPI per line (FILES above). With [output] mode
 * none (out NULL in pipeline_gen_create, pc_out_bytes 0) a CPI counts as
 * delivered (cpis_out, latency) when its list is committed, or, when there
 * is no detection ring, when its line went to the file's queue (a line
 * the queue has no room for is dropped, counted in detection_file_drops,
 * and its CPI not delivered).
 */
int pipeline_gen_set_detections(struct pipeline_gen *g, struct chirp_ring *det, int det_fd,
				int numa_node, char *err, size_t errlen);
/* Frees g; its file sinks first write what they hold (up to a second). */
void pipeline_gen_destroy(struct pipeline_gen *g);

/*
 * Start the data thread on generation g. The thread applies plan (cpu
 * affinity, NUMA, SCHED_FIFO) to itself first; if that fails because
 * realtime = required is not permitted, the thread exits and this returns
 * NULL with the reason. plan may be NULL. stats, the eventfd notify_fd
 * (-1 = none) and the flight recorder trace (NULL = none; one record per
 * retired CPI, see trace.h) must outlive the pipeline.
 */
struct pipeline *pipeline_create(struct pipeline_gen *g, struct stats *st,
				 const struct sysnuma_plan *plan, int notify_fd,
				 struct trace *trace, char *err, size_t errlen);

/*
 * Latency budget (output commit - input commit), ns; 0 = none. A delivered
 * CPI over it is counted (ST_OVER_BUDGET), flagged TRACE_OVER_BUDGET in its
 * trace record, and its record number published for
 * pipeline_over_budget_last(); the data thread itself never logs it. Any
 * thread, any time (takes effect from the next CPI retired).
 */
void pipeline_set_budget(struct pipeline *p, uint64_t budget_ns);

/*
 * [publish] (zpub.h): from the next CPI retired, each CPI's detection list
 * and, at the publisher's maps_hz, its range-Doppler map (an output of
 * map_power or map_db) are copied into z's queues; NULL stops it. z must
 * outlive the pipeline, or be unset and the pipeline stopped before it
 * goes. Any thread.
 */
struct zpub;
void pipeline_set_publisher(struct pipeline *p, struct zpub *z);

/*
 * [live] (live.h): from the next CPI retired, a CPI's map (max-held) and
 * detection list go to l's snapshot whenever live_due says a frame is
 * due; NULL stops it. Same lifetime rule as the publisher. Any thread.
 */
struct live;
void pipeline_set_live(struct pipeline *p, struct live *l);

/* 1 + the trace record number of the newest over-budget CPI, 0 if none. */
uint64_t pipeline_over_budget_last(const struct pipeline *p);

/* 1 + the radar mode of the newest CPI whose mode the running pc does not
 * have (ST_UNKNOWN_MODE_CPIS counts them), 0 if none yet. The data thread
 * never logs them; the main thread does, at most once a second. */
uint64_t pipeline_unknown_mode_last(const struct pipeline *p);

/* The pointing (degrees) of the newest CPI handed to the backend (0, 0
 * before any): the input block's, which steered its beams. Any thread. */
void pipeline_last_pointing(const struct pipeline *p, double *az_deg, double *el_deg);

/*
 * slots = auto: the slots a ring needs to hold buffer_ms of CPIs at cps
 * CPI/s (the measured capacity), rounded up to a whole slot, at least
 * min_slots (and 2), at most CHIRP_RING_MAX_SLOTS; if that many slot_bytes slots exceed
 * mem_budget bytes (0 = no limit), as many as fit (at least 2). Pure: the
 * caller compares with the uncapped count (mem_budget 0) to warn.
 */
unsigned pipeline_auto_slots(double buffer_ms, double cps, uint64_t slot_bytes,
			     uint64_t mem_budget, unsigned min_slots);

/* What the data thread applied to itself (valid after pipeline_create). */
void pipeline_applied(const struct pipeline *p, struct sysnuma_applied *a);

enum pipeline_state pipeline_state(const struct pipeline *p);

/* Advances on every loop iteration of the data thread, busy or idle. */
uint64_t pipeline_heartbeat(const struct pipeline *p);

/* Reason of PIPE_FAILED ("pc_submit: ..."), "" otherwise. */
const char *pipeline_error(const struct pipeline *p);

/* Stop / resume taking CPIs (CPIs in flight complete). */
void pipeline_pause(struct pipeline *p, int paused);

/*
 * Hand g to the data thread and wait up to timeout_ms for it to be in use.
 * On success returns 0 and *old is the previous generation (destroy it and
 * whatever of its rings/pc the new one does not share). -ETIMEDOUT: the data
 * thread did not reach a CPI boundary in time; the swap is withdrawn and g
 * is not in use. -EIO: the pipeline is failed or stopped. -ENOMEM: g's
 * file sinks could not be made (err says why).
 *
 * g == NULL parks the data thread: it finishes the CPIs in flight and then
 * touches no ring until the next swap (a reload that re-creates a ring
 * must first let go of the old one). *old is then the generation it left;
 * a later swap from the parked state returns *old == NULL.
 */
int pipeline_swap(struct pipeline *p, struct pipeline_gen *g, struct pipeline_gen **old,
		  int timeout_ms, char *err, size_t errlen);

/* The generation in use (NULL while parked). */
struct pipeline_gen *pipeline_current(const struct pipeline *p);

/* Ask the data thread to stop taking CPIs, drain the ones in flight, exit.
 * Does not wait; state becomes PIPE_STOPPED (notify_fd is written). */
void pipeline_stop(struct pipeline *p);

/*
 * Stop (if not yet) and join the thread, waiting at most timeout_ms; if the
 * thread does not exit in time (hung backend) it is left detached, the
 * pipeline is leaked on purpose and -ETIMEDOUT returned. Returns 0 when
 * freed. The current generation is not destroyed.
 */
int pipeline_destroy(struct pipeline *p, int timeout_ms);

#endif /* CHIRP_PIPELINE_H */
