/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zpub.h — chirpd's results on ZeroMQ ([publish]): one PUB socket bound to
 * a configured endpoint carries three topics, each message three frames:
 *   1. the topic: "det", "map" or "status";
 *   2. a JSON header (doc/publish.md lists its keys);
 *   3. the payload: a CPI's detection list as on the detection ring
 *      (chirp/detect.h: the header and `count` records, little-endian), a
 *      range-Doppler map decimated by max-hold as float32 [row][col], or
 *      chirpd's status as JSON (what chirpctl status returns).
 *
 * NEVER A WAIT ON A SUBSCRIBER
 *   The data thread only copies a list (or decimates a map) into a bounded
 *   queue (sink.h); a thread of the publisher's own sends it. The socket
 *   has ZMQ_SNDHWM = hwm messages per subscriber and ZMQ_XPUB_NODROP, and
 *   every send is ZMQ_DONTWAIT: a message some subscriber has no room for
 *   is not sent (to anyone) and counted as dropped, like a message the
 *   queue had no room for. So memory is bounded by the queue and hwm, a
 *   slow or stopped subscriber costs drops, never a stall, and every drop
 *   is counted (publish_det_drops, publish_map_drops, publish_status_drops).
 *   Without a subscriber a message is sent to nobody (counted as sent).
 *
 * THREADS
 *   zpub_put_det, zpub_map_due, zpub_put_map: one producer, the data
 *   thread; nothing allocated, no system call but a futex wake when the
 *   sender sleeps. zpub_put_status: one other producer, the main thread.
 *   Each topic has its own queue and sender thread; the senders share the
 *   socket under a mutex (ZeroMQ sockets are not thread-safe; a mutex
 *   gives the full barrier it asks for when a socket changes threads).
 *   zpub_create, zpub_destroy, zpub_wait_idle: the control (main) thread,
 *   which create should run on: the threads inherit its CPU affinity.
 */
#ifndef CHIRP_ZPUB_H
#define CHIRP_ZPUB_H

#include <stddef.h>
#include <stdint.h>

#include "chirp/detect.h"
#include "stats.h"

struct zpub;

struct zpub_params {
	const char *listen;          /* ZeroMQ endpoint, e.g. tcp://127.0.0.1:5556
					(tcp://127.0.0.1:* picks a free port:
					zpub_endpoint says which)             */
	int detections;              /* publish "det"                          */
	double maps_hz;              /* "map" messages per second, 0 = none    */
	unsigned map_max_range;      /* a map's columns at most (range), >= 1  */
	unsigned map_max_doppler;    /* a map's rows at most (Doppler), >= 1   */
	unsigned hwm;                /* ZMQ_SNDHWM, messages per subscriber    */
	unsigned queue;              /* "det" queue: lists of det_bytes, >= 1  */
	size_t det_bytes;            /* the largest list, CHIRP_DET_BYTES(max_detections);
					0: the daemon does not detect          */
	struct stats *st;            /* counters (stats_add), NULL: none       */
};

/* What the header of a "det" or "map" message says of its CPI. */
struct zpub_cpi {
	uint64_t seq, timestamp_ns, first_sample;
	uint32_t mode;
	uint32_t channels, pulses, samples;   /* the input CPI's geometry   */
	float pointing_az_deg, pointing_el_deg;   /* the input CPI's pointing */
};

/* [publish] listen: "" (off), tcp://ADDRESS:PORT (PORT 1..65535 or *) or
 * ipc://PATH, no spaces. 0 or -EINVAL with the reason in err. */
int zpub_check_endpoint(const char *v, char *err, size_t errlen);

/* Binds the socket and starts the sender threads. NULL with a reason
 * ("[publish] listen tcp://...: Address already in use"). */
struct zpub *zpub_create(const struct zpub_params *prm, char *err, size_t errlen);

/* The endpoint bound (ZMQ_LAST_ENDPOINT: the port a * picked). */
const char *zpub_endpoint(const struct zpub *z);

/*
 * Data thread: queue a copy of list h (sizeof *h + count records, count
 * bounded by what bytes holds) as a "det" message. Returns 0, or
 * -ENOBUFS / -EMSGSIZE: dropped and counted. No-op (0) when [publish]
 * detections is off.
 */
int zpub_put_det(struct zpub *z, const struct chirp_det_header *h, size_t bytes,
		 const struct zpub_cpi *c);

/* Data thread: whether a map is due at now_ns (CLOCK_MONOTONIC), at most
 * maps_hz a second; a 1 takes the turn. */
int zpub_map_due(struct zpub *z, uint64_t now_ns);

/*
 * Data thread: map M[c][k][n] (channels x doppler x range float32, as
 * [output] mode map_power / map_db writes it) reduced by max-hold over
 * the channels and over blocks of ceil(doppler / map_max_doppler) bins by
 * ceil(range / map_max_range) gates (NaN cells ignored), queued as a "map"
 * message. O(map) reads; nothing allocated. Returns 0 or a negative errno
 * (dropped and counted).
 */
int zpub_put_map(struct zpub *z, const float *map, uint32_t channels, uint32_t doppler,
		 uint32_t range, const struct zpub_cpi *c);

/* Main thread: queue chirpd's status JSON (len bytes) as a "status"
 * message. Returns 0 or a negative errno (dropped and counted). */
int zpub_put_status(struct zpub *z, const char *json, size_t len);

/* Wait up to timeout_ms until every message queued so far is sent or
 * dropped. 0 or -ETIMEDOUT. Control thread (tests). */
int zpub_wait_idle(struct zpub *z, int timeout_ms);

/* Send what is queued (up to a second), close the socket, free. NULL: no-op. */
void zpub_destroy(struct zpub *z);

#endif /* CHIRP_ZPUB_H */
