/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_live.c — the live view (live.h) behind a real listener:
 *   - live_create refuses what [live]'s limits exclude;
 *   - nothing is due while nobody watches;
 *   - a writer thread publishing frames as fast as it can while the main
 *     loop answers /live/frame.json: every frame is whole (its map's peak,
 *     its detection list and its CPI agree: the triple buffer never tears),
 *     reduced by max-hold to the configured size, per map index;
 *   - a detect.h version 2 list with beams is read by its record_bytes and
 *     shows its angles; a version 1 list shows none;
 *   - a frame whose maps a backend reduced (a snapshot: live_due_req at
 *     submit, live_put_cells when done) asks for the watched maps at the
 *     view's reduction and shows them where they are.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "live.h"
#include "maxhold.h"
#include "metrics.h"
#include "timeutil.h"

#define MAPS 2
#define ND 16
#define NR 256

static int state_fn(void *ctx, struct live_scales *sc, char *buf, size_t len)
{
	(void)ctx;
	sc->range_m_per_gate = 15.0;
	sc->mps_per_bin = 9.5;
	sc->map_db = 0;
	return snprintf(buf, len, "{\"state\":\"running\",\"lost\":0}");
}

static int render(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	return snprintf(buf, len, "chirpd_up 1\n");
}

static void test_params(void **state)
{
	struct live_params ok = { .fps = 10, .max_clients = 4, .max_rows = 16, .max_cols = 64 };
	struct live_params bad[] = {
		{ .fps = 0.5, .max_clients = 4, .max_rows = 16, .max_cols = 64 },
		{ .fps = 51, .max_clients = 4, .max_rows = 16, .max_cols = 64 },
		{ .fps = 10, .max_clients = 0, .max_rows = 16, .max_cols = 64 },
		{ .fps = 10, .max_clients = LIVE_MAX_CLIENTS + 1, .max_rows = 16, .max_cols = 64 },
		{ .fps = 10, .max_clients = 4, .max_rows = 4, .max_cols = 64 },
	};
	char err[256];
	struct live *l;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_null(live_create(&bad[i], state_fn, NULL, err, sizeof(err)));
		assert_non_null(strstr(err, "[live]"));
	}
	l = live_create(&ok, state_fn, NULL, err, sizeof(err));
	assert_non_null(l);
	assert_true(live_fd(l) >= 0);
	/* nobody watches: never due */
	assert_int_equal(live_due(l, mono_ns()), 0);
	assert_int_equal(live_due(l, mono_ns() + 5000000000ull), 0);
	live_destroy(l);
}

/* ---- a frame writer against the listener ---------------------------------- */


/* Frame i: map m's peak at Doppler bin (i + 3m) % ND, gate (7i) % NR; the
 * list holds 1 + i % 3 records at that gate, doppler_bin = i. */
static void make_frame(unsigned i, float *map, unsigned char *det, size_t *det_len, int v2)
{
	struct chirp_det_header *h = (void *)det;
	unsigned n = 1 + i % 3, gate = (7 * i) % NR;
	/* version 1 records are the first 32 bytes of version 2's */
	size_t rb = v2 ? sizeof(struct chirp_det_record) : 32;

	for (size_t k = 0; k < (size_t)MAPS * ND * NR; k++)
		map[k] = 1e-4f;
	for (unsigned m = 0; m < MAPS; m++)
		map[((size_t)m * ND + (i + 3 * m) % ND) * NR + gate] = 1.0f;
	memset(det, 0, sizeof(*h) + 3 * sizeof(struct chirp_det_record));
	*h = (struct chirp_det_header){
		.magic = CHIRP_DET_MAGIC, .version = v2 ? 2 : 1, .record_bytes = (uint16_t)rb,
		.seq = i, .count = n, .found = n, .maps = MAPS, .doppler_bins = ND,
		.range_gates = NR, .flags = v2 ? CHIRP_DET_BEAMS : 0,
	};
	for (unsigned r = 0; r < n; r++) {
		struct chirp_det_record d = {
			.channel = 0, .range_gate = gate, .doppler_bin = (int32_t)i,
			.range_m = 15.0f * (float)gate, .velocity_mps = 9.5f, .snr_db = 20,
			.beam = 1, .azimuth_deg = 12.5f, .elevation_deg = -3.25f,
		};
		memcpy(det + sizeof(*h) + r * rb, &d, rb);
	}
	*det_len = sizeof(*h) + n * rb;
}

struct writer {
	struct live *l;
	atomic_int stop;
	unsigned puts;
};

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	static float map[MAPS * ND * NR];
	static unsigned char det[4096];
	size_t det_len;

	for (unsigned i = 1; !atomic_load(&w->stop); i++) {
		struct live_cpi c = { .seq = i, .timestamp_ns = i, .mode = 0 };

		make_frame(i, map, det, &det_len, 0);
		if (live_due(w->l, mono_ns())) {
			live_put(w->l, &c, map, MAPS, ND, NR, (void *)det, det_len);
			w->puts++;
		}
		usleep(200);
	}
	return NULL;
}

struct client { int port; char reply[1 << 18]; size_t got; const char *req; };

static void *client_thread(void *arg)
{
	struct client *c = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    write(fd, c->req, strlen(c->req)) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, c->reply + c->got, sizeof(c->reply) - 1 - c->got)) > 0)
		c->got += (size_t)n;
	c->reply[c->got] = 0;
	close(fd);
	return NULL;
}

/* GET req while running the daemon's loop: the listener's fd and the view's
 * timer. Returns the body parsed as JSON (NULL if not JSON). */
static json_t *get_json(struct metrics_http *m, struct live *l, int port, const char *req,
			struct client *c)
{
	pthread_t th;
	const char *body;

	memset(c, 0, sizeof(*c));
	c->port = port;
	c->req = req;
	assert_int_equal(pthread_create(&th, NULL, client_thread, c), 0);
	for (int i = 0; i < 1000 && pthread_tryjoin_np(th, NULL) == EBUSY; i++) {
		struct pollfd p[2] = { { .fd = metrics_http_fd(m), .events = POLLIN },
				       { .fd = live_fd(l), .events = POLLIN } };

		poll(p, 2, 5);
		if (p[1].revents)
			live_run(l);
		metrics_http_run(m);
	}
	pthread_join(th, NULL);
	body = strstr(c->reply, "\r\n\r\n");
	return body ? json_loads(body + 4, 0, NULL) : NULL;
}

static struct metrics_http *listen_any(struct live *l, int *port)
{
	struct metrics_http *m = NULL;
	char err[256], listen[64];

	for (int tries = 0; tries < 20 && !m; tries++) {
		*port = 20000 + (int)((getpid() * 11 + tries * 137) % 40000);
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", *port);
		m = metrics_http_create(listen, render, NULL, err, sizeof(err));
	}
	if (m)
		metrics_http_set_live(m, l);
	return m;
}

/* The frame's map m: the brightest cell's row and column. */
static void peak_of(json_t *map, unsigned *row, unsigned *col)
{
	const char *b64 = json_string_value(json_object_get(map, "b64"));
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned cols = (unsigned)json_integer_value(json_object_get(map, "cols"));
	int best = -1;
	size_t n = 0;

	assert_non_null(b64);
	for (size_t i = 0; b64[i] && b64[i + 1] && b64[i + 2] && b64[i + 3]; i += 4) {
		uint32_t v = 0;

		for (int k = 0; k < 4; k++)
			v = v << 6 | (b64[i + k] == '=' ? 0 : (uint32_t)(strchr(tab, b64[i + k]) - tab));
		for (int k = 0; k < 3; k++, n++) {
			int q = (int)((v >> (16 - 8 * k)) & 255);

			if (b64[i + 1 + k] != '=' && q > best) {
				best = q;
				*row = (unsigned)(n / cols);
				*col = (unsigned)(n % cols);
			}
		}
	}
	assert_int_equal(best, 255);
}

static void test_frames_whole(void **state)
{
	struct live_params prm = { .fps = 50, .max_clients = 4, .max_rows = 8, .max_cols = 64 };
	static struct client c;
	struct writer w = { 0 };
	struct metrics_http *m;
	pthread_t th;
	char err[256];
	int port, checked = 0, distinct = 0;
	unsigned last = 0;

	(void)state;
	w.l = live_create(&prm, state_fn, NULL, err, sizeof(err));
	assert_non_null(w.l);
	m = listen_any(w.l, &port);
	if (!m) {
		live_destroy(w.l);
		skip();   /* no free local port */
	}
	assert_int_equal(pthread_create(&th, NULL, writer_thread, &w), 0);
	for (int k = 0; k < 40; k++) {
		unsigned mi = (unsigned)k % MAPS, row = 0, col = 0;
		char req[128];
		json_t *f, *map, *det, *rec;
		unsigned s, n;

		snprintf(req, sizeof(req), "GET /live/frame.json?map=%u HTTP/1.0\r\n\r\n", mi);
		f = get_json(m, w.l, port, req, &c);
		assert_non_null(f);
		if (json_is_null(json_object_get(f, "cpi"))) {   /* before the first */
			json_decref(f);
			continue;
		}
		s = (unsigned)json_integer_value(json_object_get(json_object_get(f, "cpi"), "seq"));
		map = json_object_get(f, "map");
		det = json_object_get(f, "det");
		/* the reduction: 16 bins -> 8 rows of 2, 256 gates -> 64 of 4 */
		assert_int_equal(json_integer_value(json_object_get(map, "index")), mi);
		assert_int_equal(json_integer_value(json_object_get(map, "rows")), 8);
		assert_int_equal(json_integer_value(json_object_get(map, "cols")), 64);
		assert_int_equal(json_integer_value(json_object_get(map, "dec_doppler")), 2);
		assert_int_equal(json_integer_value(json_object_get(map, "dec_range")), 4);
		peak_of(map, &row, &col);
		/* whole: the map, the list and the CPI are one put's */
		assert_int_equal(row, ((s + 3 * mi) % ND) / 2);
		assert_int_equal(col, ((7 * s) % NR) / 4);
		n = (unsigned)json_integer_value(json_object_get(det, "count"));
		assert_int_equal(n, 1 + s % 3);
		assert_int_equal(json_array_size(json_object_get(det, "list")), n);
		rec = json_array_get(json_object_get(det, "list"), 0);
		assert_int_equal(json_integer_value(json_object_get(rec, "gate")), (7 * s) % NR);
		assert_int_equal(json_integer_value(json_object_get(rec, "bin")), s);
		assert_true(json_is_false(json_object_get(det, "beams")));
		assert_null(json_object_get(rec, "azimuth_deg"));
		assert_string_equal(json_string_value(json_object_get(json_object_get(f, "state"),
								      "state")), "running");
		json_decref(f);
		checked++;
		distinct += s != last;
		last = s;
		usleep(10000);
	}
	atomic_store(&w.stop, 1);
	pthread_join(th, NULL);
	if (checked < 30 || distinct < 10)
		fail_msg("%d frames checked, %d distinct, %u put", checked, distinct, w.puts);
	metrics_http_destroy(m);
	live_destroy(w.l);
}

static void test_beams(void **state)
{
	struct live_params prm = { .fps = 50, .max_clients = 4, .max_rows = 16, .max_cols = 256 };
	static float map[MAPS * ND * NR];
	static unsigned char det[4096];
	static struct client c;
	struct live_cpi cpi = { .seq = 5 };
	struct metrics_http *m;
	struct live *l;
	size_t det_len;
	char err[256];
	json_t *f, *d, *rec;
	int port;

	(void)state;
	l = live_create(&prm, state_fn, NULL, err, sizeof(err));
	assert_non_null(l);
	m = listen_any(l, &port);
	if (!m) {
		live_destroy(l);
		skip();
	}
	/* a first request starts the watch; the frame put then is served */
	f = get_json(m, l, port, "GET /live/frame.json HTTP/1.0\r\n\r\n", &c);
	json_decref(f);
	make_frame(5, map, det, &det_len, 1);
	for (int i = 0; i < 100 && !live_due(l, mono_ns()); i++)
		usleep(5000);
	live_put(l, &cpi, map, MAPS, ND, NR, (void *)det, det_len);
	f = get_json(m, l, port, "GET /live/frame.json?map=1 HTTP/1.0\r\n\r\n", &c);
	assert_non_null(f);
	d = json_object_get(f, "det");
	assert_true(json_is_true(json_object_get(d, "beams")));
	assert_int_equal(json_integer_value(json_object_get(d, "version")), 2);
	assert_int_equal(json_array_size(json_object_get(d, "list")), 1 + 5 % 3);
	rec = json_array_get(json_object_get(d, "list"), 1);
	assert_int_equal(json_integer_value(json_object_get(rec, "gate")), 35);
	assert_int_equal(json_integer_value(json_object_get(rec, "beam")), 1);
	assert_true(fabs(json_number_value(json_object_get(rec, "azimuth_deg")) - 12.5) < 1e-6);
	assert_true(fabs(json_number_value(json_object_get(rec, "elevation_deg")) + 3.25) < 1e-6);
	assert_true(fabs(json_number_value(json_object_get(f, "mps_per_bin")) - 9.5) < 1e-6);
	json_decref(f);
	/* a map index past the last: no map, the rest as usual */
	f = get_json(m, l, port, "GET /live/frame.json?map=7 HTTP/1.0\r\n\r\n", &c);
	assert_non_null(f);
	assert_true(json_is_null(json_object_get(f, "map")));
	assert_int_equal(json_integer_value(json_object_get(f, "maps")), MAPS);
	json_decref(f);
	metrics_http_destroy(m);
	live_destroy(l);
}

static void test_snapshot(void **state)
{
	struct live_params prm = { .fps = 50, .max_clients = 4, .max_rows = 8, .max_cols = 64 };
	static float map[MAPS * ND * NR], cells[MAPS * ND * NR];
	static unsigned char det[4096];
	static struct client c;
	struct live_cpi cpi = { .seq = 5 };
	struct live_req q = { 0 };
	struct metrics_http *m;
	struct live *l;
	size_t det_len;
	unsigned row = 0, col = 0;
	char err[256];
	json_t *f, *mp;
	int port, due = 0;

	(void)state;
	l = live_create(&prm, state_fn, NULL, err, sizeof(err));
	assert_non_null(l);
	assert_int_equal(live_cells_cap(&prm), 4 * 8 * 64);
	m = listen_any(l, &port);
	if (!m) {
		live_destroy(l);
		skip();
	}
	/* nobody watches: no request */
	assert_int_equal(live_due_req(l, mono_ns(), MAPS, ND, NR, &q), 0);
	/* a page on map 1: its frame asks for map 1, 16 x 256 to 8 x 64 */
	f = get_json(m, l, port, "GET /live/frame.json?map=1 HTTP/1.0\r\n\r\n", &c);
	json_decref(f);
	for (int i = 0; i < 100 && !(due = live_due_req(l, mono_ns(), MAPS, ND, NR, &q)); i++)
		usleep(5000);
	assert_int_equal(due, 1);
	assert_true(q.map_mask & 2);
	assert_int_equal(q.dd, 2);
	assert_int_equal(q.dr, 4);
	make_frame(5, map, det, &det_len, 0);
	maxhold_select(cells, map, MAPS, q.map_mask, ND, NR, q.dd, q.dr);
	live_put_cells(l, &cpi, cells, MAPS, ND, NR, &q, (void *)det, det_len);
	f = get_json(m, l, port, "GET /live/frame.json?map=1 HTTP/1.0\r\n\r\n", &c);
	assert_non_null(f);
	mp = json_object_get(f, "map");
	assert_int_equal(json_integer_value(json_object_get(mp, "rows")), 8);
	assert_int_equal(json_integer_value(json_object_get(mp, "cols")), 64);
	assert_string_equal(json_string_value(json_object_get(mp, "units")), "map_power");
	peak_of(mp, &row, &col);
	assert_int_equal(row, ((5 + 3) % ND) / 2);
	assert_int_equal(col, (7 * 5 % NR) / 4);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(f, "cpi"), "seq")), 5);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(f, "det"), "count")),
			 1 + 5 % 3);
	json_decref(f);
	metrics_http_destroy(m);
	live_destroy(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_frames_whole),
		cmocka_unit_test(test_beams),
		cmocka_unit_test(test_snapshot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
