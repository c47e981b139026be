/* SPDX-License-Identifier: Apache-2.0 */
/* live.c — see live.h. */
#include "live.h"

#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "log.h"
#include "outbuf.h"
#include "maxhold.h"
#include "timeutil.h"

#define LIVE_FULL_MAPS     4          /* maps a slot holds at full size; with
					 more, each is reduced further so all
					 fit (the slot's size is fixed)     */
#define LIVE_RECORD_MAX    64         /* record_bytes a slot keeps at most  */
#define LIVE_RECORD_V1     32         /* detect.h version 1's record_bytes  */
#define LIVE_CACHE         4          /* encoded frames kept (map indices)  */
#define LIVE_STATE_MAX     (16 * 1024)
#define LIVE_HEARTBEAT_NS  1000000000ull  /* a "state" event while no frame */
#define LIVE_WATCH_NS      1500000000ull  /* sampling goes on this long after
					     the last watcher was seen      */
#define LIVE_WAIT_NS       1000000000ull  /* a frame request waits this long
					     for a fresh frame              */
#define LIVE_MAX_INDEX     4096       /* ?map= at most                      */
#define FRESH              4u         /* triple buffer: middle slot is new  */

/* One snapshot: a sampled CPI's reduced maps and its detection list. */
struct slot {
	struct live_cpi cpi;
	uint32_t maps, doppler, range;    /* the CPI's map (maps 0: none)    */
	uint32_t dd, dr, rows, cols;      /* reduction: blocks and the result */
	uint64_t have;                    /* map_bit() of the maps reduced    */
	float *map;                       /* maps x rows x cols              */
	size_t det_len;                   /* bytes in det (0: none)          */
	unsigned char *det;
};

struct cache_entry {
	uint64_t seq;                     /* frame_seq it was encoded from (0: empty) */
	int map;
	size_t len, json_off, json_len;   /* the SSE event, and its JSON inside */
	char *buf;
};

enum req_kind { REQ_STREAM = 1, REQ_WAIT };

struct client {
	enum req_kind kind;
	struct live *l;
	struct MHD_Connection *conn;
	int map;
	int suspended;
	uint64_t frame_seq, hb_seq;       /* last sent                         */
	uint64_t deadline_ns;             /* REQ_WAIT                          */
	size_t len, off;                  /* REQ_STREAM: the event being sent  */
	char *buf;                        /* frame_max bytes                   */
};

struct live {
	struct live_params prm;
	live_state_fn state_fn;
	void *state_ctx;
	int tfd;
	uint64_t period_ns;
	size_t cells_cap, det_cap, frame_max;

	/* triple buffer */
	struct slot slots[3];
	_Atomic unsigned mid;             /* index | FRESH                      */
	unsigned back;                    /* data thread's                      */
	unsigned front;                   /* main thread's (valid if frame_seq) */
	_Atomic uint64_t watch_until_ns;  /* main -> data: sample until then    */
	_Atomic uint64_t want;            /* main -> data: map_bit()s watched   */
	uint64_t next_ns;                 /* data thread: next turn             */
	_Atomic uint64_t frames;          /* data thread's count                */

	/* main thread */
	uint64_t frame_seq, frame_ns;     /* frames taken from the buffer       */
	uint64_t hb_seq, hb_ns;
	uint64_t wanted_ns[64];           /* per map_bit: last asked for        */
	char *state;                      /* the newest state JSON              */
	size_t state_len;
	struct live_scales scales;
	char hb[LIVE_STATE_MAX + 64];     /* the newest "state" event           */
	size_t hb_len;
	struct cache_entry cache[LIVE_CACHE];
	unsigned cache_next;
	float *scratch;                   /* one map's dB values (cells_cap / 4) */
	float *scratch2;
	struct client *clients[LIVE_MAX_CLIENTS];
	unsigned nclients;
	struct client *waits[LIVE_MAX_CLIENTS];
	unsigned nwaits;
	int closing;
	struct live_counters cnt;
};

/* The want/have bit of map index m: its own below 63; 63 stands for every
 * index from 63 on. */
static uint64_t map_bit(uint32_t m)
{
	return 1ull << (m < 63 ? m : 63);
}

/* ---- create / destroy --------------------------------------------------- */

static int make_slots(struct live *l)
{
	for (int i = 0; i < 3; i++) {
		l->slots[i].map = malloc(l->cells_cap * sizeof(float));
		l->slots[i].det = malloc(l->det_cap);
		if (!l->slots[i].map || !l->slots[i].det)
			return -ENOMEM;
		/* fault the pages in now: the data thread writes them */
		memset(l->slots[i].map, 0, l->cells_cap * sizeof(float));
		memset(l->slots[i].det, 0, l->det_cap);
	}
	return 0;
}

static int make_cache(struct live *l)
{
	size_t one = l->cells_cap / LIVE_FULL_MAPS;

	for (int i = 0; i < LIVE_CACHE; i++)
		if (!(l->cache[i].buf = malloc(l->frame_max)))
			return -ENOMEM;
	l->scratch = malloc(one * sizeof(float));
	l->scratch2 = malloc(one * sizeof(float));
	l->state = malloc(LIVE_STATE_MAX);
	if (!l->scratch || !l->scratch2 || !l->state)
		return -ENOMEM;
	strcpy(l->state, "{}");
	l->state_len = 2;
	l->scales = (struct live_scales){ NAN, NAN, 0 };
	return 0;
}

static int start_timer(struct live *l, char *err, size_t errlen)
{
	/* Twice the frame rate: a frame waits at most half a period. */
	uint64_t ns = l->period_ns / 2;
	struct itimerspec its = {
		.it_interval = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) },
		.it_value = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) },
	};

	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->tfd < 0 || timerfd_settime(l->tfd, 0, &its, NULL) < 0) {
		snprintf(err, errlen, "[live] timer: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

struct live *live_create(const struct live_params *p, live_state_fn state, void *ctx,
			 char *err, size_t errlen)
{
	struct live *l;
	size_t one;

	if (!p || !state || !(p->fps >= 1 && p->fps <= 50) || p->max_clients < 1 ||
	    p->max_clients > LIVE_MAX_CLIENTS || p->max_rows < 8 || p->max_cols < 8 ||
	    (size_t)p->max_rows * p->max_cols > (1u << 22)) {
		snprintf(err, errlen, "[live]: needs fps 1..50, max_clients 1..%d and a map of "
			 "8..4M cells", LIVE_MAX_CLIENTS);
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "[live]: out of memory");
		return NULL;
	}
	l->tfd = -1;
	l->prm = *p;
	l->state_fn = state;
	l->state_ctx = ctx;
	l->period_ns = (uint64_t)(1e9 / p->fps);
	one = (size_t)p->max_rows * p->max_cols;
	l->cells_cap = one * LIVE_FULL_MAPS;
	l->det_cap = sizeof(struct chirp_det_header) + (size_t)LIVE_MAX_RECORDS * LIVE_RECORD_MAX;
	/* base64 of one map, the records (< 240 bytes each as JSON), the state */
	l->frame_max = 4 * ((one + 2) / 3) + (size_t)LIVE_MAX_RECORDS * 240 + LIVE_STATE_MAX +
		       4096;
	l->back = 0;
	atomic_init(&l->mid, 1u);
	l->front = 2;
	if (make_slots(l) < 0 || make_cache(l) < 0) {
		snprintf(err, errlen, "[live]: out of memory (%zu-cell maps)", l->cells_cap);
		live_destroy(l);
		return NULL;
	}
	if (start_timer(l, err, errlen) < 0) {
		live_destroy(l);
		return NULL;
	}
	return l;
}

static void free_client(struct client *c)
{
	if (!c)
		return;
	free(c->buf);
	free(c);
}

void live_destroy(struct live *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->nclients; i++)
		free_client(l->clients[i]);
	for (unsigned i = 0; i < l->nwaits; i++)
		free_client(l->waits[i]);
	for (int i = 0; i < 3; i++) {
		free(l->slots[i].map);
		free(l->slots[i].det);
	}
	for (int i = 0; i < LIVE_CACHE; i++)
		free(l->cache[i].buf);
	free(l->scratch);
	free(l->scratch2);
	free(l->state);
	if (l->tfd >= 0)
		close(l->tfd);
	free(l);
}

/* ---- data thread -------------------------------------------------------- */

int live_due(struct live *l, uint64_t now_ns)
{
	if (now_ns >= atomic_load_explicit(&l->watch_until_ns, memory_order_relaxed) ||
	    now_ns < l->next_ns)
		return 0;
	/* the next turn a period after this one, or after now when late */
	l->next_ns += l->period_ns;
	if (l->next_ns <= now_ns)
		l->next_ns = now_ns + l->period_ns;
	return 1;
}

/* The reduction of maps x doppler x range that fits the slot: at most
 * max_rows x max_cols per map, and every map in cells_cap (then coarser
 * in range first, the longer axis on a screen). 0: no room at all. */
static int fit_map(const struct live *l, struct slot *s)
{
	s->dd = maxhold_ceil_div(s->doppler, l->prm.max_rows);
	s->dr = maxhold_ceil_div(s->range, l->prm.max_cols);
	for (;;) {
		s->rows = maxhold_ceil_div(s->doppler, s->dd);
		s->cols = maxhold_ceil_div(s->range, s->dr);
		if ((size_t)s->maps * s->rows * s->cols <= l->cells_cap)
			return 1;
		if (s->cols > 1 && s->cols >= s->rows)
			s->dr += (s->dr + 1) / 2;
		else if (s->rows > 1)
			s->dd += (s->dd + 1) / 2;
		else
			return 0;
	}
}

/* The list's header and its first records, by its own record_bytes. */
static size_t copy_det(const struct live *l, unsigned char *dst,
		       const struct chirp_det_header *h, size_t bytes)
{
	size_t rb, n, len;

	if (!h || bytes < sizeof(*h) || h->magic != CHIRP_DET_MAGIC ||
	    h->record_bytes < LIVE_RECORD_V1 || h->record_bytes > LIVE_RECORD_MAX)
		return 0;
	rb = h->record_bytes;
	n = h->count;
	if (n > (bytes - sizeof(*h)) / rb)
		n = (bytes - sizeof(*h)) / rb;
	if (n > LIVE_MAX_RECORDS)
		n = LIVE_MAX_RECORDS;
	len = sizeof(*h) + n * rb;
	if (len > l->det_cap)
		return 0;
	memcpy(dst, h, len);
	((struct chirp_det_header *)dst)->count = (uint32_t)n;
	return len;
}

/* The back slot's list, then the slot to the reader (the exchange). */
static void put_slot(struct live *l, struct slot *s, const struct chirp_det_header *det,
		     size_t det_bytes)
{
	s->det_len = copy_det(l, s->det, det, det_bytes);
	l->back = atomic_exchange_explicit(&l->mid, l->back | FRESH, memory_order_acq_rel) & 3u;
	atomic_fetch_add_explicit(&l->frames, 1, memory_order_relaxed);
}

void live_put(struct live *l, const struct live_cpi *c, const float *map, uint32_t maps,
	      uint32_t doppler, uint32_t range, const struct chirp_det_header *det,
	      size_t det_bytes)
{
	struct slot *s = &l->slots[l->back];
	/* only the maps a client watches: a page shows one index at a time */
	uint64_t want = atomic_load_explicit(&l->want, memory_order_relaxed);

	s->cpi = *c;
	s->maps = map && doppler && range ? maps : 0;
	s->doppler = doppler;
	s->range = range;
	s->have = 0;
	if (s->maps && !fit_map(l, s))
		s->maps = 0;
	for (uint32_t m = 0; m < s->maps; m++) {
		if (!(want & map_bit(m)))
			continue;
		s->have |= map_bit(m);
		maxhold_map(s->map + (size_t)m * s->rows * s->cols,
			    map + (size_t)m * doppler * range, 1, doppler, range, s->dd, s->dr,
			    s->rows, s->cols);
	}
	put_slot(l, s, det, det_bytes);
}

size_t live_cells_cap(const struct live_params *p)
{
	return (size_t)p->max_rows * p->max_cols * LIVE_FULL_MAPS;
}

int live_due_req(struct live *l, uint64_t now_ns, uint32_t maps, uint32_t doppler,
		 uint32_t range, struct live_req *q)
{
	struct slot t = { .maps = maps, .doppler = doppler, .range = range };

	if (!live_due(l, now_ns))
		return 0;
	*q = (struct live_req){ 0, 1, 1 };
	if (maps && doppler && range && fit_map(l, &t)) {
		/* map_bit()'s encoding is pc_snap's: bit 63, every map from 63 on */
		q->map_mask = atomic_load_explicit(&l->want, memory_order_relaxed);
		q->dd = t.dd;
		q->dr = t.dr;
	}
	return 1;
}

void live_put_cells(struct live *l, const struct live_cpi *c, const float *cells, uint32_t maps,
		    uint32_t doppler, uint32_t range, const struct live_req *q,
		    const struct chirp_det_header *det, size_t det_bytes)
{
	struct slot *s = &l->slots[l->back];
	uint32_t n;

	s->cpi = *c;
	s->maps = cells && doppler && range && q->map_mask ? maps : 0;
	s->doppler = doppler;
	s->range = range;
	s->have = 0;
	s->dd = q->dd ? q->dd : 1;
	s->dr = q->dr ? q->dr : 1;
	s->rows = maxhold_ceil_div(doppler, s->dd);
	s->cols = maxhold_ceil_div(range, s->dr);
	if ((size_t)s->maps * s->rows * s->cols > l->cells_cap)   /* not live_due_req's */
		s->maps = 0;
	n = s->maps ? maxhold_sel_count(q->map_mask, s->maps) : 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = maxhold_sel_map(q->map_mask, i);
		size_t one = (size_t)s->rows * s->cols;

		memcpy(s->map + m * one, cells + i * one, one * sizeof(float));
		s->have |= map_bit(m);
	}
	put_slot(l, s, det, det_bytes);
}

/* ---- encoding (main thread) --------------------------------------------- */

/* A JSON number, or null for NaN and infinities; fmt a %g of bounded
 * width (a record's JSON stays under the 240 bytes frame_max counts). */
static void put_num(struct outbuf *o, const char *key, double v, const char *fmt)
{
	outbuf_put(o, "\"%s\":", key);
	if (isfinite(v))
		outbuf_put(o, fmt, v);
	else
		outbuf_put(o, "null");
}

static void put_base64(struct outbuf *o, const unsigned char *p, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t need = 4 * ((n + 2) / 3);

	if (o->overflow || need >= o->len - o->off) {
		o->overflow = 1;
		return;
	}
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		char *d = o->buf + o->off;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		d[0] = tab[(v >> 18) & 63];
		d[1] = tab[(v >> 12) & 63];
		d[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		d[3] = i + 2 < n ? tab[v & 63] : '=';
		o->off += 4;
	}
	o->buf[o->off] = '\0';
}

/* The k-th smallest of a[0..n) (a is reordered), n >= 1. */
static float select_kth(float *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		float pivot = a[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j) {
				float t = a[i];

				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return a[k];
}

/*
 * Map m of the front slot as uint8 over [db_lo, db_hi]: db_lo 3 dB under
 * the median cell (the reduced noise floor), db_hi the strongest cell and
 * at least db_lo + 20 dB, so noise stays dark and a target bright.
 */
static void put_map(struct live *l, struct outbuf *o, const struct slot *s, int m)
{
	size_t n = (size_t)s->rows * s->cols, finite = 0;
	const float *v = s->map + (size_t)m * n;
	float *db = l->scratch, lo, hi = -INFINITY;
	unsigned char *q = (unsigned char *)l->scratch2;

	for (size_t i = 0; i < n; i++) {
		float x = l->scales.map_db ? v[i] : (v[i] > 0 ? 10.0f * log10f(v[i]) : -INFINITY);

		db[i] = x;
		if (isfinite(x)) {
			l->scratch2[finite++] = x;
			if (x > hi)
				hi = x;
		}
	}
	lo = finite ? select_kth(l->scratch2, finite, finite / 2) - 3.0f : 0.0f;
	if (!finite)
		hi = 0.0f;
	if (hi < lo + 20.0f)
		hi = lo + 20.0f;
	for (size_t i = 0; i < n; i++) {
		float t = isfinite(db[i]) ? (db[i] - lo) / (hi - lo) * 255.0f : 0.0f;

		q[i] = (unsigned char)(t < 0 ? 0 : t > 255 ? 255 : t + 0.5f);
	}
	outbuf_put(o, "\"map\":{\"index\":%d,\"maps\":%u,\"rows\":%u,\"cols\":%u,\"doppler_bins\":%u,"
	       "\"range_gates\":%u,\"dec_doppler\":%u,\"dec_range\":%u,\"db_lo\":%.2f,"
	       "\"db_hi\":%.2f,\"units\":\"%s\",\"b64\":\"",
	    m, s->maps, s->rows, s->cols, s->doppler, s->range, s->dd, s->dr, (double)lo,
	    (double)hi, l->scales.map_db ? "map_db" : "map_power");
	put_base64(o, q, n);
	outbuf_put(o, "\"},");
}

/* A record of record_bytes (LIVE_RECORD_V1 in version 1: the fields
 * before beam);
 * the beam fields are read only when the header says beams and the
 * records hold them. */
static void put_record(struct outbuf *o, const unsigned char *p, size_t rb, int beams)
{
	struct chirp_det_record r;

	memset(&r, 0, sizeof(r));
	memcpy(&r, p, rb < sizeof(r) ? rb : sizeof(r));
	outbuf_put(o, "{\"map\":%d,\"gate\":%u,\"bin\":%d,", r.channel, r.range_gate, r.doppler_bin);
	put_num(o, "range_m", r.range_m, "%.7g");
	outbuf_put(o, ",");
	put_num(o, "velocity_mps", r.velocity_mps, "%.7g");
	outbuf_put(o, ",");
	put_num(o, "snr_db", r.snr_db, "%.5g");
	if (beams) {
		outbuf_put(o, ",\"beam\":%d,", r.beam);
		put_num(o, "azimuth_deg", r.azimuth_deg, "%.6g");
		outbuf_put(o, ",");
		put_num(o, "elevation_deg", r.elevation_deg, "%.6g");
		outbuf_put(o, ",\"angle_quality\":%u", r.angle_quality);
	}
	outbuf_put(o, "}");
}

static void put_det(struct outbuf *o, const struct slot *s)
{
	struct chirp_det_header h;
	int beams;

	if (!s->det_len) {
		outbuf_put(o, "\"det\":null,");
		return;
	}
	memcpy(&h, s->det, sizeof(h));
	beams = (h.flags & CHIRP_DET_BEAMS) && h.record_bytes >= sizeof(struct chirp_det_record);
	outbuf_put(o, "\"det\":{\"version\":%u,\"mode\":%u,\"count\":%u,\"found\":%u,\"maps\":%u,"
	       "\"overflow\":%s,\"integrated\":%s,\"skipped\":%s,\"beams\":%s,\"list\":[",
	    h.version, h.mode, h.count, h.found, h.maps,
	    h.flags & CHIRP_DET_OVERFLOW ? "true" : "false",
	    h.flags & CHIRP_DET_INTEGRATED ? "true" : "false",
	    h.flags & CHIRP_DET_SKIPPED ? "true" : "false", beams ? "true" : "false");
	for (uint32_t i = 0; i < h.count; i++) {
		if (i)
			outbuf_put(o, ",");
		put_record(o, s->det + sizeof(h) + (size_t)i * h.record_bytes, h.record_bytes, beams);
	}
	outbuf_put(o, "]},");
}

/* The frame of map index m from the front slot (or an empty one before
 * the first), encoded into e. */
static void encode(struct live *l, struct cache_entry *e, int m)
{
	struct outbuf o = { e->buf, l->frame_max, 0, 0 };
	const struct slot *s = l->frame_seq ? &l->slots[l->front] : NULL;

	outbuf_put(&o, "event: frame\ndata: ");
	e->json_off = o.off;
	outbuf_put(&o, "{\"seq\":%llu,\"fps\":%g,", (unsigned long long)l->frame_seq, l->prm.fps);
	if (s) {
		outbuf_put(&o, "\"cpi\":{\"seq\":%llu,\"timestamp_ns\":%llu,\"mode\":%u},",
		    (unsigned long long)s->cpi.seq, (unsigned long long)s->cpi.timestamp_ns,
		    s->cpi.mode);
		outbuf_put(&o, "\"maps\":%u,", s->maps);
	} else {
		outbuf_put(&o, "\"cpi\":null,\"maps\":0,");
	}
	put_num(&o, "range_m_per_gate", l->scales.range_m_per_gate, "%.6g");
	outbuf_put(&o, ",");
	put_num(&o, "mps_per_bin", l->scales.mps_per_bin, "%.6g");
	outbuf_put(&o, ",");
	if (s && m < (int)s->maps && (s->have & map_bit((uint32_t)m)))
		put_map(l, &o, s, m);
	else
		outbuf_put(&o, "\"map\":null,");
	if (s)
		put_det(&o, s);
	else
		outbuf_put(&o, "\"det\":null,");
	outbuf_put(&o, "\"state\":%s}", l->state);
	e->json_len = o.off - e->json_off;
	outbuf_put(&o, "\n\n");
	if (o.overflow) {   /* cannot happen with frame_max's sum; say so */
		o.off = 0;
		outbuf_put(&o, "event: frame\ndata: ");
		e->json_off = o.off;
		outbuf_put(&o, "{\"seq\":%llu,\"error\":\"frame too large\",\"state\":{}}",
		    (unsigned long long)l->frame_seq);
		e->json_len = o.off - e->json_off;
		outbuf_put(&o, "\n\n");
	}
	e->len = o.off;
	e->seq = l->frame_seq;
	e->map = m;
}

/* The newest frame of map m, encoded once per frame and index. */
static const struct cache_entry *frame_for(struct live *l, int m)
{
	struct cache_entry *e;

	for (int i = 0; i < LIVE_CACHE; i++)
		if (l->cache[i].seq == l->frame_seq && l->cache[i].len && l->cache[i].map == m)
			return &l->cache[i];
	e = &l->cache[l->cache_next++ % LIVE_CACHE];
	encode(l, e, m);
	return e;
}

static void refresh_state(struct live *l)
{
	struct live_scales sc = { NAN, NAN, 0 };
	int n = l->state_fn(l->state_ctx, &sc, l->state, LIVE_STATE_MAX);

	if (n < 0) {
		strcpy(l->state, "{}");
		n = 2;
	}
	l->state_len = (size_t)n;
	l->scales = sc;
}

/* ---- HTTP (main thread) -------------------------------------------------- */

/* The next event for c into its buffer: the newest frame if c has not
 * sent it, else a heartbeat if newer. 0: nothing new. */
static int next_event(struct client *c)
{
	struct live *l = c->l;
	const struct cache_entry *e;

	if (l->frame_seq > c->frame_seq) {
		e = frame_for(l, c->map);
		memcpy(c->buf, e->buf, e->len);
		c->len = e->len;
		if (c->frame_seq)
			l->cnt.frames_skipped += l->frame_seq - c->frame_seq - 1;
		c->frame_seq = l->frame_seq;
		c->hb_seq = l->hb_seq;
		l->cnt.frames_sent++;
	} else if (l->hb_seq > c->hb_seq) {
		memcpy(c->buf, l->hb, l->hb_len);
		c->len = l->hb_len;
		c->hb_seq = l->hb_seq;
	} else {
		return 0;
	}
	c->off = 0;
	return 1;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct client *c = cls;
	size_t n;

	(void)pos;
	if (c->l->closing)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (c->off == c->len && !next_event(c)) {
		MHD_suspend_connection(c->conn);
		c->suspended = 1;
		return 0;
	}
	n = c->len - c->off < max ? c->len - c->off : max;
	memcpy(buf, c->buf + c->off, n);
	c->off += n;
	return (ssize_t)n;
}

static enum MHD_Result reply_n(struct MHD_Connection *conn, unsigned status, const char *type,
			       const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *body)
{
	return reply_n(conn, status, "text/plain; charset=utf-8", body, strlen(body));
}

/* ?map=I: 0 .. LIVE_MAX_INDEX-1 (absent: 0), -1 when malformed. */
static int map_arg(struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "map");
	char *end;
	long m;

	if (!v || !*v)
		return 0;
	errno = 0;
	m = strtol(v, &end, 10);
	if (*end || errno || m < 0 || m >= LIVE_MAX_INDEX)
		return -1;
	return (int)m;
}

static struct client *new_client(struct live *l, struct MHD_Connection *conn, enum req_kind k,
				 int map)
{
	struct client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->kind = k;
	c->l = l;
	c->conn = conn;
	c->map = map;
	if (k == REQ_STREAM && !(c->buf = malloc(l->frame_max))) {
		free(c);
		return NULL;
	}
	return c;
}

/* Someone watches map m (-1: the clients as they are): sampling goes on
 * for LIVE_WATCH_NS, reducing the maps asked for in that time. */
static void watch(struct live *l, uint64_t now, int m)
{
	uint64_t want = 0;

	if (m >= 0)
		l->wanted_ns[__builtin_ctzll(map_bit((uint32_t)m))] = now;
	for (unsigned i = 0; i < l->nclients; i++)
		l->wanted_ns[__builtin_ctzll(map_bit((uint32_t)l->clients[i]->map))] = now;
	for (unsigned i = 0; i < l->nwaits; i++)
		l->wanted_ns[__builtin_ctzll(map_bit((uint32_t)l->waits[i]->map))] = now;
	for (int b = 0; b < 64; b++)
		if (l->wanted_ns[b] && now - l->wanted_ns[b] < LIVE_WATCH_NS)
			want |= 1ull << b;
	atomic_store_explicit(&l->want, want, memory_order_relaxed);
	atomic_store_explicit(&l->watch_until_ns, now + LIVE_WATCH_NS, memory_order_relaxed);
}

/*
 * A stream's kernel send buffer, LIVE_SNDBUF (the kernel doubles it): with
 * the client's one frame this bounds what a client that stops reading
 * holds, and it stops being writable after about a frame, so the
 * listener's idle timeout disconnects it seconds later, not after the
 * autotuned buffer (megabytes) has filled. Best effort: a failure leaves
 * the system's default.
 */
#define LIVE_SNDBUF (256 * 1024)
static void bound_socket(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	int v = LIVE_SNDBUF;

	if (ci && setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) < 0)
		log_debug("[live] SO_SNDBUF: %s", strerror(errno));
}

static enum MHD_Result answer_stream(struct live *l, struct MHD_Connection *conn, int map,
				     void **con_cls)
{
	static const char hello[] = "retry: 1000\n\n";
	struct MHD_Response *r;
	struct client *c;
	enum MHD_Result ret;

	if (l->nclients >= l->prm.max_clients) {
		l->cnt.clients_refused++;
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			     "too many live clients ([live] max_clients)\n");
	}
	c = new_client(l, conn, REQ_STREAM, map);
	if (!c)
		return MHD_NO;
	memcpy(c->buf, hello, sizeof(hello) - 1);
	c->len = sizeof(hello) - 1;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, stream_reader, c, NULL);
	if (!r) {
		free_client(c);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	if (ret != MHD_YES) {
		free_client(c);
		return ret;
	}
	*con_cls = c;
	l->clients[l->nclients++] = c;
	bound_socket(conn);
	watch(l, mono_ns(), map);
	return MHD_YES;
}

static enum MHD_Result reply_frame(struct live *l, struct MHD_Connection *conn, int map)
{
	const struct cache_entry *e = frame_for(l, map);

	return reply_n(conn, MHD_HTTP_OK, "application/json", e->buf + e->json_off, e->json_len);
}

/* Whether the newest frame can answer for map index m: it has that map
 * (only watched maps are reduced), or the output has no such index. */
static int frame_has(const struct live *l, int m)
{
	const struct slot *s = &l->slots[l->front];

	return l->frame_seq && ((uint32_t)m >= s->maps || (s->have & map_bit((uint32_t)m)));
}

/* A frame request: the newest frame when it is fresh and has the map,
 * else wait (suspended) up to LIVE_WAIT_NS for the data thread to sample
 * one. */
static enum MHD_Result answer_frame(struct live *l, struct MHD_Connection *conn, int map,
				    void **con_cls)
{
	uint64_t now = mono_ns();
	struct client *c = *con_cls;

	if (c)   /* resumed */
		return reply_frame(l, conn, map);
	watch(l, now, map);   /* a client that polls keeps the sampling on */
	if ((frame_has(l, map) && now - l->frame_ns < 2 * l->period_ns) ||
	    l->nwaits >= LIVE_MAX_CLIENTS)
		return reply_frame(l, conn, map);
	c = new_client(l, conn, REQ_WAIT, map);
	if (!c)
		return MHD_NO;
	c->frame_seq = l->frame_seq;
	c->deadline_ns = now + LIVE_WAIT_NS;
	*con_cls = c;
	l->waits[l->nwaits++] = c;
	MHD_suspend_connection(conn);
	c->suspended = 1;
	return MHD_YES;
}

int live_answer(struct live *l, struct MHD_Connection *conn, const char *url, void **con_cls)
{
	int map = map_arg(conn);

	if (!strcmp(url, "/live") || !strcmp(url, "/live/")) {
		struct MHD_Response *r = MHD_create_response_from_buffer(
			strlen(live_page_html), (void *)live_page_html, MHD_RESPMEM_PERSISTENT);
		enum MHD_Result ret;

		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
		MHD_add_response_header(r, "Cache-Control", "no-store");
		MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
		MHD_add_response_header(r, "X-Frame-Options", "DENY");
		MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'none'; script-src 'unsafe-inline'; "
					"style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:");
		ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strcmp(url, "/live/events") && strcmp(url, "/live/frame.json"))
		return reply(conn, MHD_HTTP_NOT_FOUND,
			     "not found; try /live, /live/frame.json or /live/events\n");
	if (map < 0)
		return reply(conn, MHD_HTTP_BAD_REQUEST, "map: an index 0..4095\n");
	if (!strcmp(url, "/live/events"))
		return answer_stream(l, conn, map, con_cls);
	return answer_frame(l, conn, map, con_cls);
}

static void drop_from(struct client **arr, unsigned *n, const struct client *c)
{
	for (unsigned i = 0; i < *n; i++)
		if (arr[i] == c) {
			arr[i] = arr[--*n];
			return;
		}
}

void live_completed(struct live *l, void *con_cls, int timed_out)
{
	struct client *c = con_cls;

	if (!c)
		return;
	if (c->kind == REQ_STREAM) {
		drop_from(l->clients, &l->nclients, c);
		if (timed_out)
			l->cnt.clients_dropped++;
	} else {
		drop_from(l->waits, &l->nwaits, c);
	}
	free_client(c);
}

static void resume(struct client *c)
{
	if (!c->suspended)
		return;
	c->suspended = 0;
	MHD_resume_connection(c->conn);
}

/* A new frame from the triple buffer, or a heartbeat when none came for
 * a while and someone watches. 1 when clients have something new. */
static int take_frame(struct live *l, uint64_t now)
{
	if (atomic_load_explicit(&l->mid, memory_order_relaxed) & FRESH) {
		l->front = atomic_exchange_explicit(&l->mid, l->front, memory_order_acq_rel) & 3u;
		l->frame_seq++;
		l->frame_ns = now;
		refresh_state(l);
		return 1;
	}
	if (l->nclients && now - l->hb_ns >= LIVE_HEARTBEAT_NS &&
	    now - l->frame_ns >= LIVE_HEARTBEAT_NS) {
		struct outbuf o = { l->hb, sizeof(l->hb), 0, 0 };

		refresh_state(l);
		outbuf_put(&o, "event: state\ndata: {\"seq\":%llu,\"state\":%s}\n\n",
		    (unsigned long long)l->frame_seq, l->state);
		if (o.overflow)
			return 0;
		l->hb_len = o.off;
		l->hb_seq++;
		l->hb_ns = now;
		return 1;
	}
	return 0;
}

void live_run(struct live *l)
{
	uint64_t exp, now = mono_ns();
	int fresh;

	if (read(l->tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
		log_err("[live] timer read: %s", strerror(errno));
	fresh = take_frame(l, now);
	if (l->nclients || l->nwaits)
		watch(l, now, -1);
	for (unsigned i = 0; i < l->nclients; i++)
		if (fresh)
			resume(l->clients[i]);
	for (unsigned i = 0; i < l->nwaits; i++) {
		struct client *c = l->waits[i];

		if ((l->frame_seq > c->frame_seq && frame_has(l, c->map)) || now >= c->deadline_ns)
			resume(c);
	}
}

/* Before the listener stops: every stream ends, every waiting request is
 * answered (the listener closes no suspended connection). */
void live_shutdown(struct live *l)
{
	l->closing = 1;
	for (unsigned i = 0; i < l->nclients; i++)
		resume(l->clients[i]);
	for (unsigned i = 0; i < l->nwaits; i++)
		resume(l->waits[i]);
}

int live_fd(const struct live *l)
{
	return l->tfd;
}

void live_get_counters(const struct live *l, struct live_counters *c)
{
	*c = l->cnt;
	c->frames = atomic_load_explicit(&l->frames, memory_order_relaxed);
	c->clients = l->nclients;
}

/* The page, built in from src/live_page.html (no file is read at run time:
 * the view works wherever chirpd runs). */
__asm__(".section .rodata\n"
	".global live_page_html\n"
	".type live_page_html, @object\n"
	"live_page_html:\n"
	".incbin \"src/live_page.html\"\n"
	".byte 0\n"
	".size live_page_html, . - live_page_html\n"
	".previous\n");
