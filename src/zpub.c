/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zpub.c — [publish]: results on a ZeroMQ PUB socket. See zpub.h.
 *
 * Each topic is a sink (sink.h) whose consumer is send_record instead of a
 * file: the producer queues a fixed struct zrec (what the JSON header
 * needs) and the payload as one record; the sink's thread formats the
 * header and sends the three frames. The queue, its memory ordering, the
 * drop rule and the counters are the sink's: one home for them.
 */
#include "zpub.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "log.h"
#include "maxhold.h"
#include "sink.h"
#include "timeutil.h"

#define ZPUB_DRAIN_MS     1000      /* zpub_destroy: time to send the queue */
#define MAP_RECORDS       2         /* maps queued at most                  */
#define STATUS_RECORDS    4
#define STATUS_MAX_BYTES  (256u << 10)
#define HEADER_MAX        768       /* a JSON header frame                  */

enum ztopic { ZT_DET = 0, ZT_MAP, ZT_STATUS, ZT_TOPICS };

static const char *const topic_names[ZT_TOPICS] = { "det", "map", "status" };

/* What the producer queues before the payload; plain values, host order. */
struct zrec {
	uint64_t seq, timestamp_ns, first_sample;
	uint32_t mode;
	uint32_t channels, pulses, samples;          /* input CPI             */
	uint32_t rows, cols, doppler, range, dec_doppler, dec_range;   /* map */
	float pointing_az_deg, pointing_el_deg;      /* input CPI             */
};
_Static_assert(sizeof(struct zrec) == 72, "publish_bytes counts a 72-byte record header");

struct ztopic_state {
	struct zpub *z;
	enum ztopic t;
	struct sink *q;
	char hdr[HEADER_MAX];        /* its sender's header buffer             */
};

struct zpub {
	void *ctx, *sock;
	pthread_mutex_t lock;        /* the socket, between the senders        */
	struct ztopic_state tp[ZT_TOPICS];
	struct zpub_params prm;
	char endpoint[256];
	/* data thread's */
	uint64_t map_period_ns, map_next_ns;
	float *map;                  /* map_max_doppler x map_max_range        */
	/* main thread's */
	uint64_t status_seq;
};

/* ---- sender (a sink's thread) ------------------------------------------- */

/* Copy len bytes at offset off of the record in iov[0..n) to dst. */
static void gather(const struct iovec *iov, int n, size_t off, void *dst, size_t len)
{
	char *d = dst;

	for (int i = 0; i < n && len; i++) {
		size_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > len)
			l = len;
		memcpy(d, (const char *)iov[i].iov_base + off, l);
		d += l;
		len -= l;
		off = 0;
	}
}

/* A pointing angle as JSON: %.9g, or null when not finite. */
static const char *angle_json(char *b, size_t n, float v)
{
	if (isfinite(v))
		snprintf(b, n, "%.9g", (double)v);
	else
		snprintf(b, n, "null");
	return b;
}

static int det_header(char *b, size_t n, const struct zrec *r, const struct chirp_det_header *h,
		      size_t payload)
{
	char az[32], el[32];

	return snprintf(b, n,
		"{\"seq\":%" PRIu64 ",\"timestamp_ns\":%" PRIu64 ",\"first_sample\":%" PRIu64
		",\"mode\":%u,\"pointing_az_deg\":%s,\"pointing_el_deg\":%s,\"count\":%u,"
		"\"found\":%u,\"flags\":%u,\"overflow\":%s,"
		"\"skipped\":%s,\"integrated\":%s,\"no_velocity\":%s,\"beams\":%s,"
		"\"incomplete\":%s,"
		"\"version\":%u,\"header_bytes\":%zu,\"record_bytes\":%u,\"bytes\":%zu,"
		"\"channels\":%u,\"pulses\":%u,\"samples\":%u}",
		r->seq, r->timestamp_ns, r->first_sample, r->mode,
		angle_json(az, sizeof(az), r->pointing_az_deg),
		angle_json(el, sizeof(el), r->pointing_el_deg), h->count, h->found, h->flags,
		(h->flags & CHIRP_DET_OVERFLOW) ? "true" : "false",
		(h->flags & CHIRP_DET_SKIPPED) ? "true" : "false",
		(h->flags & CHIRP_DET_INTEGRATED) ? "true" : "false",
		(h->flags & CHIRP_DET_NO_VELOCITY) ? "true" : "false",
		(h->flags & CHIRP_DET_BEAMS) ? "true" : "false",
		(h->flags & CHIRP_DET_INCOMPLETE) ? "true" : "false",
		h->version, sizeof(*h), h->record_bytes, payload,
		r->channels, r->pulses, r->samples);
}

static int map_header(char *b, size_t n, const struct zrec *r, size_t payload)
{
	char az[32], el[32];

	return snprintf(b, n,
		"{\"seq\":%" PRIu64 ",\"timestamp_ns\":%" PRIu64 ",\"first_sample\":%" PRIu64
		",\"mode\":%u,\"pointing_az_deg\":%s,\"pointing_el_deg\":%s,\"dtype\":\"float32\",\"rows\":%u,\"cols\":%u,"
		"\"doppler_bins\":%u,\"range_gates\":%u,\"channels\":%u,"
		"\"doppler_decimation\":%u,\"range_decimation\":%u,\"reduce\":\"max\","
		"\"bytes\":%zu,\"pulses\":%u,\"samples\":%u}",
		r->seq, r->timestamp_ns, r->first_sample, r->mode,
		angle_json(az, sizeof(az), r->pointing_az_deg),
		angle_json(el, sizeof(el), r->pointing_el_deg), r->rows, r->cols,
		r->doppler, r->range, r->channels, r->dec_doppler, r->dec_range, payload,
		r->pulses, r->samples);
}

static int status_header(char *b, size_t n, const struct zrec *r, size_t payload)
{
	return snprintf(b, n, "{\"seq\":%" PRIu64 ",\"timestamp_ns\":%" PRIu64 ",\"bytes\":%zu}",
			r->seq, r->timestamp_ns, payload);
}

/* The three frames, under the socket's lock. With ZMQ_XPUB_NODROP a full
 * subscriber refuses the first frame (EAGAIN); once it is taken the
 * others are too (a pipe's fill counts whole messages only). */
static int send_frames(struct zpub *z, const char *topic, const char *hdr, size_t hlen,
		       const struct iovec *iov, int n, size_t off, size_t plen)
{
	zmq_msg_t m;
	int ret = 0;

	if (zmq_msg_init_size(&m, plen) < 0)
		return -ENOMEM;
	gather(iov, n, off, zmq_msg_data(&m), plen);
	pthread_mutex_lock(&z->lock);
	if (zmq_send(z->sock, topic, strlen(topic), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
	    zmq_send(z->sock, hdr, hlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
	    zmq_msg_send(&m, z->sock, ZMQ_DONTWAIT) < 0)
		ret = -zmq_errno();
	pthread_mutex_unlock(&z->lock);
	zmq_msg_close(&m);
	return ret;
}

/* sink_emit_fn: one queued record (struct zrec + payload) as a message. */
static int send_record(void *ctx, const struct iovec *iov, int n, size_t len)
{
	struct ztopic_state *ts = ctx;
	struct chirp_det_header h;
	struct zrec r;
	size_t plen = len - sizeof(r);
	int hl;

	if (len < sizeof(r))
		return -EINVAL;
	gather(iov, n, 0, &r, sizeof(r));
	switch (ts->t) {
	case ZT_DET:
		if (plen < sizeof(h))
			return -EINVAL;
		gather(iov, n, sizeof(r), &h, sizeof(h));
		hl = det_header(ts->hdr, sizeof(ts->hdr), &r, &h, plen);
		break;
	case ZT_MAP:
		hl = map_header(ts->hdr, sizeof(ts->hdr), &r, plen);
		break;
	default:
		hl = status_header(ts->hdr, sizeof(ts->hdr), &r, plen);
		break;
	}
	if (hl < 0 || (size_t)hl >= sizeof(ts->hdr))
		return -EOVERFLOW;
	return send_frames(ts->z, topic_names[ts->t], ts->hdr, (size_t)hl, iov, n, sizeof(r), plen);
}

/* ---- producers ------------------------------------------------------------ */

static int put(struct ztopic_state *ts, const struct zrec *r, const void *payload, size_t len)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *)r, .iov_len = sizeof(*r) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};

	return sink_putv(ts->q, iov, 2);
}

static void cpi_rec(struct zrec *r, const struct zpub_cpi *c)
{
	memset(r, 0, sizeof(*r));
	r->seq = c->seq;
	r->timestamp_ns = c->timestamp_ns;
	r->first_sample = c->first_sample;
	r->mode = c->mode;
	r->channels = c->channels;
	r->pulses = c->pulses;
	r->samples = c->samples;
	r->pointing_az_deg = c->pointing_az_deg;
	r->pointing_el_deg = c->pointing_el_deg;
}

int zpub_put_det(struct zpub *z, const struct chirp_det_header *h, size_t bytes,
		 const struct zpub_cpi *c)
{
	struct zrec r;
	size_t room, n;

	if (!z->tp[ZT_DET].q)
		return 0;
	if (bytes < sizeof(*h))
		return -EINVAL;
	room = (bytes - sizeof(*h)) / sizeof(struct chirp_det_record);
	n = h->count < room ? h->count : room;
	cpi_rec(&r, c);
	return put(&z->tp[ZT_DET], &r, h, sizeof(*h) + n * sizeof(struct chirp_det_record));
}

int zpub_map_due(struct zpub *z, uint64_t now_ns)
{
	if (!z->tp[ZT_MAP].q || now_ns < z->map_next_ns)
		return 0;
	/* The next turn a period after this one, or after now when late:
	 * never a burst to catch up. */
	z->map_next_ns += z->map_period_ns;
	if (z->map_next_ns <= now_ns)
		z->map_next_ns = now_ns + z->map_period_ns;
	return 1;
}

int zpub_put_map(struct zpub *z, const float *map, uint32_t channels, uint32_t doppler,
		 uint32_t range, const struct zpub_cpi *c)
{
	struct zrec r;

	if (!z->tp[ZT_MAP].q)
		return 0;
	if (!channels || !doppler || !range)
		return -EINVAL;
	cpi_rec(&r, c);
	r.doppler = doppler;
	r.range = range;
	r.dec_doppler = maxhold_ceil_div(doppler, z->prm.map_max_doppler);
	r.dec_range = maxhold_ceil_div(range, z->prm.map_max_range);
	r.rows = maxhold_ceil_div(doppler, r.dec_doppler);
	r.cols = maxhold_ceil_div(range, r.dec_range);
	r.channels = channels;
	maxhold_map(z->map, map, channels, doppler, range, r.dec_doppler, r.dec_range, r.rows, r.cols);
	return put(&z->tp[ZT_MAP], &r, z->map, (size_t)r.rows * r.cols * sizeof(float));
}

int zpub_put_status(struct zpub *z, const char *json, size_t len)
{
	struct timespec ts;
	struct zrec r;

	if (!z->tp[ZT_STATUS].q)
		return 0;
	memset(&r, 0, sizeof(r));
	clock_gettime(CLOCK_REALTIME, &ts);
	r.seq = z->status_seq++;
	r.timestamp_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return put(&z->tp[ZT_STATUS], &r, json, len);
}

/* ---- control -------------------------------------------------------------- */

/* "tcp://HOST:PORT": a host and a port 1..65535 or *. */
static int check_tcp(const char *hp, char *err, size_t errlen)
{
	const char *colon = strrchr(hp, ':');
	char *end;
	long port;

	if (!colon || colon == hp) {
		snprintf(err, errlen, "'tcp://%s' has no ADDRESS:PORT", hp);
		return -EINVAL;
	}
	if (!strcmp(colon + 1, "*"))
		return 0;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port < 1 || port > 65535) {
		snprintf(err, errlen, "port '%s' is not 1..65535 or *", colon + 1);
		return -EINVAL;
	}
	return 0;
}

int zpub_check_endpoint(const char *v, char *err, size_t errlen)
{
	if (!v[0])
		return 0;
	for (const char *c = v; *c; c++) {
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			snprintf(err, errlen, "'%s': no spaces or control characters", v);
			return -EINVAL;
		}
	}
	if (!strncmp(v, "tcp://", 6))
		return check_tcp(v + 6, err, errlen);
	if (!strncmp(v, "ipc://", 6) && v[6])
		return 0;
	snprintf(err, errlen, "'%s' is not tcp://ADDRESS:PORT or ipc://PATH", v);
	return -EINVAL;
}

const char *zpub_endpoint(const struct zpub *z)
{
	return z->endpoint;
}

int zpub_wait_idle(struct zpub *z, int timeout_ms)
{
	for (int t = 0; t < ZT_TOPICS; t++)
		if (z->tp[t].q && sink_wait_idle(z->tp[t].q, timeout_ms) < 0)
			return -ETIMEDOUT;
	return 0;
}

static const enum stats_counter c_msgs[ZT_TOPICS] = {
	ST_PUB_DET_MESSAGES, ST_PUB_MAP_MESSAGES, ST_PUB_STATUS_MESSAGES,
};
static const enum stats_counter c_drops[ZT_TOPICS] = {
	ST_PUB_DET_DROPS, ST_PUB_MAP_DROPS, ST_PUB_STATUS_DROPS,
};

/* Topic t's queue of records of payload_max bytes and its sender. */
static int make_topic(struct zpub *z, enum ztopic t, size_t payload_max, unsigned records,
		      char *err, size_t errlen)
{
	char what[32];
	struct sink_params sp = {
		.what = what, .fd = -1, .emit = send_record, .emit_ctx = &z->tp[t],
		.record_max = sizeof(struct zrec) + payload_max, .records = records,
		.drain_ms = ZPUB_DRAIN_MS, .st = z->prm.st,
		.c_bytes = ST_PUB_BYTES, .c_drops = c_drops[t],
		.c_dropped_bytes = ST_PUB_DROPPED_BYTES, .c_errors = ST_PUB_ERRORS,
		.count_records = 1, .c_records = c_msgs[t],
	};

	snprintf(what, sizeof(what), "[publish] %s", topic_names[t]);
	z->tp[t].z = z;
	z->tp[t].t = t;
	z->tp[t].q = sink_create(&sp, err, errlen);
	if (!z->tp[t].q)
		return -1;
	sink_start(z->tp[t].q);
	return 0;
}

static int check_params(const struct zpub_params *p, char *err, size_t errlen)
{
	if (!p->listen || !p->listen[0] || !p->hwm || !p->queue || !p->map_max_range ||
	    !p->map_max_doppler || !(p->maps_hz >= 0) ||
	    (size_t)p->map_max_range * p->map_max_doppler > (64u << 20) / sizeof(float)) {
		snprintf(err, errlen, "[publish]: needs an endpoint, hwm, queue and a map size up to 64 MiB");
		return -EINVAL;
	}
	return 0;
}

static int set_opt(void *sock, int opt, int v, const char *name, char *err, size_t errlen)
{
	if (zmq_setsockopt(sock, opt, &v, sizeof(v)) == 0)
		return 0;
	snprintf(err, errlen, "[publish] zmq_setsockopt(%s): %s", name, zmq_strerror(zmq_errno()));
	return -1;
}

/* The PUB socket, bound: a bounded, counted drop for a full subscriber
 * (SNDHWM, XPUB_NODROP: see zpub.h), no lingering at close. */
static int open_socket(struct zpub *z, char *err, size_t errlen)
{
	size_t len = sizeof(z->endpoint);

	z->ctx = zmq_ctx_new();
	if (!z->ctx) {
		snprintf(err, errlen, "[publish] zmq_ctx_new: %s", zmq_strerror(zmq_errno()));
		return -1;
	}
	z->sock = zmq_socket(z->ctx, ZMQ_PUB);
	if (!z->sock) {
		snprintf(err, errlen, "[publish] zmq_socket: %s", zmq_strerror(zmq_errno()));
		return -1;
	}
	if (set_opt(z->sock, ZMQ_SNDHWM, (int)z->prm.hwm, "ZMQ_SNDHWM", err, errlen) < 0 ||
	    set_opt(z->sock, ZMQ_XPUB_NODROP, 1, "ZMQ_XPUB_NODROP", err, errlen) < 0 ||
	    set_opt(z->sock, ZMQ_LINGER, 0, "ZMQ_LINGER", err, errlen) < 0)
		return -1;
	if (zmq_bind(z->sock, z->prm.listen) < 0) {
		snprintf(err, errlen, "[publish] listen %s: %s", z->prm.listen,
			 zmq_strerror(zmq_errno()));
		return -1;
	}
	if (zmq_getsockopt(z->sock, ZMQ_LAST_ENDPOINT, z->endpoint, &len) < 0)
		snprintf(z->endpoint, sizeof(z->endpoint), "%s", z->prm.listen);
	return 0;
}

struct zpub *zpub_create(const struct zpub_params *prm, char *err, size_t errlen)
{
	struct zpub *z;
	size_t cells;

	if (check_params(prm, err, errlen) < 0)
		return NULL;
	z = calloc(1, sizeof(*z));
	if (!z) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	z->prm = *prm;
	pthread_mutex_init(&z->lock, NULL);
	cells = (size_t)prm->map_max_range * prm->map_max_doppler;
	if (open_socket(z, err, errlen) < 0)
		goto fail;
	z->prm.listen = NULL;        /* the caller's string: create's only */
	if (prm->maps_hz > 0) {
		z->map = calloc(cells, sizeof(float));   /* faulted in: zeroed */
		if (!z->map) {
			snprintf(err, errlen, "[publish] map buffer: out of memory");
			goto fail;
		}
		z->map_period_ns = (uint64_t)(1e9 / prm->maps_hz);
		z->map_next_ns = mono_ns();
		if (make_topic(z, ZT_MAP, cells * sizeof(float), MAP_RECORDS, err, errlen) < 0)
			goto fail;
	}
	if (prm->detections && prm->det_bytes &&
	    make_topic(z, ZT_DET, prm->det_bytes, prm->queue, err, errlen) < 0)
		goto fail;
	if (make_topic(z, ZT_STATUS, STATUS_MAX_BYTES, STATUS_RECORDS, err, errlen) < 0)
		goto fail;
	return z;
fail:
	zpub_destroy(z);
	return NULL;
}

void zpub_destroy(struct zpub *z)
{
	if (!z)
		return;
	for (int t = 0; t < ZT_TOPICS; t++)
		sink_destroy(z->tp[t].q);   /* sends what it holds first */
	if (z->sock)
		zmq_close(z->sock);
	if (z->ctx)
		zmq_ctx_term(z->ctx);
	pthread_mutex_destroy(&z->lock);
	free(z->map);
	free(z);
}
