/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live.h — the live view: a read-only web page served by the metrics
 * HTTP listener ([metrics] listen, [live] enable) that shows the
 * range-Doppler map of one map index (a channel; a beam when the chain
 * forms beams) with its detections, a detection table, a range-time view
 * and chirpd's state, pushed as Server-Sent Events.
 *
 * URLS (GET only; nothing on the page changes chirpd)
 *   /live                   the page: one self-contained HTML document
 *   /live/frame.json?map=I  the newest frame of map I as one JSON object
 *   /live/events?map=I      frames as SSE events ("frame"; "state" once a
 *                           second while no frame is new)
 *   doc/live.md lists the frame's keys.
 *
 * DATA PATH (never waits)
 *   Frames are sampled between CPIs, at most fps a second and only while
 *   a page or a frame request is watching: the data thread asks
 *   live_due() (two loads and a compare) and, when it says 1, live_put()
 *   reduces the CPI's map by max-hold (maxhold.h) to at most
 *   max_rows x max_cols cells per map, only for the map indices a client
 *   asked for in the last 1.5 s, and copies the detection list into
 *   the back slot of a triple buffer, then swaps it with the middle slot
 *   (one atomic exchange). The main thread takes the middle slot by
 *   another exchange when it is fresh. One writer and one reader, no lock:
 *   each exchange is acq_rel, so the writer's slot stores happen before
 *   the reader's loads of that slot, and the reader's loads of the slot it
 *   gives back happen before the writer's next stores into it. The data
 *   thread never waits for the reader: a frame the reader has not taken is
 *   overwritten by the next.
 *
 *   With the radar chain the max-hold runs on the backend (chirp/pc.h,
 *   SNAPSHOTS): the data thread decides when it submits a CPI
 *   (live_due_req) and asks for the watched maps' snapshot with the job;
 *   the backend reduces its own maps (the CUDA backend on the GPU, copying
 *   back only the reduced cells), in every output mode, none included;
 *   when the CPI is done live_put_cells copies the cells into the back
 *   slot. A CPI without a request costs nothing. live_put reduces a map
 *   output on the host instead (a pc that makes no snapshots).
 *
 * CLIENTS (bounded)
 *   At most max_clients event streams at once (more are answered 503 and
 *   counted). Each holds one encoded frame (its buffer, allocated when it
 *   connects) and is given the newest frame whenever it has sent the
 *   previous one: a slow client skips frames (counted), never queues them.
 *   A client that reads nothing for the listener's connection timeout
 *   (5 s) is disconnected (counted). Encoding happens on the main thread,
 *   once per frame and map index (a small cache shared by the clients).
 *
 * THREADS
 *   live_due, live_put: the data thread. Everything else: the main thread
 *   (the event loop that runs the HTTP listener).
 */
#ifndef CHIRP_LIVE_H
#define CHIRP_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "chirp/detect.h"

#define LIVE_MAX_CLIENTS   16     /* [live] max_clients at most: the
				     listener has 32 connections in all  */
#define LIVE_MAX_RECORDS   256    /* detections a frame lists at most     */

struct live;
struct MHD_Connection;

struct live_params {
	double fps;                  /* frames a second at most, 1..50       */
	unsigned max_clients;        /* event streams at once, 1..LIVE_MAX_CLIENTS */
	unsigned max_rows;           /* Doppler rows of a map at most, >= 8  */
	unsigned max_cols;           /* range columns of a map at most, >= 8 */
};

/* What the page needs to label a frame; filled by the state callback. */
struct live_scales {
	double range_m_per_gate;     /* NaN: unknown (no sample rate)        */
	double mps_per_bin;          /* NaN: unknown (no PRF or carrier)     */
	int map_db;                  /* 1: map values are dB already
					(map_db); 0: power (map_power)     */
};

/*
 * Main thread: chirpd's state as one JSON object (no newline) into buf
 * (len bytes) and the map's scales into *sc. Returns the length, or a
 * negative errno.
 */
typedef int (*live_state_fn)(void *ctx, struct live_scales *sc, char *buf, size_t len);

/* The CPI a frame comes from. */
struct live_cpi {
	uint64_t seq, timestamp_ns;
	uint32_t mode;
};

/* What the metrics report of the view (main thread). */
struct live_counters {
	uint64_t frames;             /* frames the data thread sampled       */
	uint64_t frames_sent;        /* events written to clients            */
	uint64_t frames_skipped;     /* newer frames a slow client skipped   */
	uint64_t clients_refused;    /* over max_clients (503)               */
	uint64_t clients_dropped;    /* disconnected for not reading         */
	unsigned clients;            /* event streams now                    */
};

/*
 * Checks p and allocates everything the view uses: three snapshot slots
 * (faulted in here, never on the data thread), the encoding cache and the
 * timer. NULL with a reason.
 */
struct live *live_create(const struct live_params *p, live_state_fn state, void *ctx,
			 char *err, size_t errlen);
void live_destroy(struct live *l);

/* Data thread: 1 when a frame is due at now_ns (CLOCK_MONOTONIC): someone
 * watches and 1/fps has passed; a 1 takes the turn. */
int live_due(struct live *l, uint64_t now_ns);

/*
 * Data thread: publish a frame. map (NULL: none) is maps x doppler x
 * range float32 as [output] mode map_power / map_db writes it; det (NULL:
 * none) a detection list of at most det_bytes, read by its header's
 * count and record_bytes (any version of chirp/detect.h; the first
 * LIVE_MAX_RECORDS records are kept). Nothing allocated, no system call.
 */
void live_put(struct live *l, const struct live_cpi *c, const float *map, uint32_t maps,
	      uint32_t doppler, uint32_t range, const struct chirp_det_header *det,
	      size_t det_bytes);

/*
 * Map snapshots (the backend reduces the map: chirp/pc.h, SNAPSHOTS), for
 * a chain whose map need not be an output at all:
 *   live_cells_cap   the cells of a frame's maps at most: what a snapshot
 *                    must be able to hold (pc_params.snapshot_cells);
 *   live_due_req     data thread, when the CPI is submitted: live_due and,
 *                    when it says 1, in *q the reduction a frame of maps x
 *                    doppler x range takes and the maps watched now (as
 *                    pc_snap's map_mask; 0: no map is wanted or fits);
 *   live_put_cells   data thread, when that CPI is done: publish it, cells
 *                    holding the maps q selects back to back in ascending
 *                    order, ceil(doppler / dd) x ceil(range / dr) each
 *                    (cells NULL: a frame without maps); det as live_put.
 *                    A copy of at most live_cells_cap floats, no system call.
 */
struct live_req {
	uint64_t map_mask;
	uint32_t dd, dr;             /* blocks: Doppler bins x range gates   */
};
size_t live_cells_cap(const struct live_params *p);
int live_due_req(struct live *l, uint64_t now_ns, uint32_t maps, uint32_t doppler,
		 uint32_t range, struct live_req *q);
void live_put_cells(struct live *l, const struct live_cpi *c, const float *cells, uint32_t maps,
		    uint32_t doppler, uint32_t range, const struct live_req *q,
		    const struct chirp_det_header *det, size_t det_bytes);

/* Main thread: the timer's fd (EPOLLIN); call live_run when readable,
 * then run the HTTP listener (resumed streams are written then). */
int live_fd(const struct live *l);
void live_run(struct live *l);

/*
 * Main thread, from the listener's request handler: answer a GET for a
 * /live URL. *con_cls is the request's slot (NULL on its first call).
 * Returns an enum MHD_Result.
 */
int live_answer(struct live *l, struct MHD_Connection *conn, const char *url,
		void **con_cls);

/* Main thread, from the listener's completion notice: the request whose
 * slot is con_cls ended; timed_out: the listener closed it for idling. */
void live_completed(struct live *l, void *con_cls, int timed_out);

/* Main thread, before the listener stops: streams end and waiting
 * requests are answered (the listener closes no suspended connection). */
void live_shutdown(struct live *l);

void live_get_counters(const struct live *l, struct live_counters *c);

/* The page (a NUL-terminated HTML document, built in). */
extern const char live_page_html[];

#endif /* CHIRP_LIVE_H */
