/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_zpub.c — [publish] (zpub.h) against a real ZeroMQ SUB socket over
 * tcp://127.0.0.1 (a port the system picks): detection lists arrive as
 * three frames with the topic, a JSON header naming the CPI and the list's
 * bytes as on the detection ring; a map arrives reduced by max-hold (NaN
 * cells ignored); status arrives as given; a subscriber that never reads
 * makes drops, counted (sent + dropped = put), while every put stays fast;
 * [publish] is off by default and a bad endpoint is refused with a reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <zmq.h>

#include "config.h"
#include "stats.h"
#include "timeutil.h"
#include "zpub.h"

#define MAXDET 64

struct fix {
	struct stats *st;
	struct zpub *z;
	void *ctx, *sub;
};

static struct zpub_params params(struct stats *st)
{
	return (struct zpub_params){
		.listen = "tcp://127.0.0.1:*", .detections = 1, .maps_hz = 0,
		.map_max_range = 10, .map_max_doppler = 4, .hwm = 1000, .queue = 64,
		.det_bytes = CHIRP_DET_BYTES(MAXDET), .st = st,
	};
}

static uint64_t counter(struct stats *st, enum stats_counter c)
{
	static struct stats_snapshot sn;

	stats_snapshot(st, &sn);
	return sn.counter[c];
}

/* Receive one message of at most 3 frames; returns the frames received. */
static int recv_msg(void *sub, char *topic, size_t tn, char *hdr, size_t hn, void *pay,
		    size_t pn, size_t *plen, int timeout_ms)
{
	zmq_pollitem_t pi = { .socket = sub, .events = ZMQ_POLLIN };
	int more = 0, n, frames = 0;
	size_t ml = sizeof(more);

	if (zmq_poll(&pi, 1, timeout_ms) <= 0)
		return 0;
	n = zmq_recv(sub, topic, tn - 1, 0);
	assert_true(n >= 0);
	topic[n < (int)tn ? n : (int)tn - 1] = 0;
	frames++;
	zmq_getsockopt(sub, ZMQ_RCVMORE, &more, &ml);
	assert_int_equal(more, 1);
	n = zmq_recv(sub, hdr, hn - 1, 0);
	assert_true(n >= 0 && n < (int)hn);
	hdr[n] = 0;
	frames++;
	zmq_getsockopt(sub, ZMQ_RCVMORE, &more, &ml);
	assert_int_equal(more, 1);
	n = zmq_recv(sub, pay, pn, 0);
	assert_true(n >= 0 && (size_t)n <= pn);
	*plen = (size_t)n;
	frames++;
	zmq_getsockopt(sub, ZMQ_RCVMORE, &more, &ml);
	assert_int_equal(more, 0);
	return frames;
}

/* A SUB socket on z's endpoint, subscribed to every topic, and joined:
 * status messages are put until one arrives (a PUB socket sends nothing
 * to a subscription it has not heard of yet). */
static void *subscribe(struct fix *f, int rcvhwm)
{
	char topic[16], hdr[512], pay[64];
	size_t pl;
	void *sub = zmq_socket(f->ctx, ZMQ_SUB);

	assert_non_null(sub);
	assert_int_equal(zmq_setsockopt(sub, ZMQ_RCVHWM, &rcvhwm, sizeof(rcvhwm)), 0);
	assert_int_equal(zmq_connect(sub, zpub_endpoint(f->z)), 0);
	assert_int_equal(zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0), 0);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(zpub_put_status(f->z, "{\"hello\":1}", 11), 0);
		if (recv_msg(sub, topic, sizeof(topic), hdr, sizeof(hdr), pay, sizeof(pay), &pl, 50)) {
			assert_string_equal(topic, "status");
			assert_int_equal(pl, 11);
			assert_memory_equal(pay, "{\"hello\":1}", 11);
			assert_non_null(strstr(hdr, "\"timestamp_ns\":"));
			/* drain the other hellos */
			while (recv_msg(sub, topic, sizeof(topic), hdr, sizeof(hdr), pay,
					sizeof(pay), &pl, 100))
				;
			return sub;
		}
	}
	fail_msg("the subscriber never joined");
	return NULL;
}

static void setup_fix(struct fix *f, const struct zpub_params *p)
{
	char err[256] = "";

	f->z = zpub_create(p, err, sizeof(err));
	assert_non_null(f->z);
	assert_non_null(strstr(zpub_endpoint(f->z), "tcp://127.0.0.1:"));
	f->ctx = zmq_ctx_new();
	assert_non_null(f->ctx);
}

static void teardown_fix(struct fix *f)
{
	int zero = 0;

	zpub_destroy(f->z);
	if (f->sub) {
		zmq_setsockopt(f->sub, ZMQ_LINGER, &zero, sizeof(zero));
		zmq_close(f->sub);
	}
	zmq_ctx_term(f->ctx);
	stats_destroy(f->st);
}

/* List k: count k % (MAXDET + 1) records made from k. */
static size_t make_list(uint8_t *buf, uint32_t k)
{
	struct chirp_det_header *h = (void *)buf;
	struct chirp_det_record *r = (void *)(h + 1);

	memset(buf, 0, CHIRP_DET_BYTES(MAXDET));
	h->magic = CHIRP_DET_MAGIC;
	h->version = CHIRP_DET_VERSION;
	h->record_bytes = sizeof(*r);
	h->seq = 1000 + k;
	h->timestamp_ns = 5000000000ull + k;
	h->count = k % (MAXDET + 1);
	h->found = h->count + (k & 1);
	h->flags = (k & 1) ? CHIRP_DET_OVERFLOW : 0;
	for (uint32_t i = 0; i < h->count; i++) {
		r[i].channel = -1;
		r[i].range_gate = k * 7 + i;
		r[i].doppler_bin = (int32_t)i - 3;
		r[i].power = (float)(k + i);
	}
	return sizeof(*h) + h->count * sizeof(*r);
}

static void test_det_arrives(void **state)
{
	struct fix f = { .st = stats_create() };
	struct zpub_params p = params(f.st);
	static uint8_t list[CHIRP_DET_BYTES(MAXDET)], got[CHIRP_DET_BYTES(MAXDET) + 1];
	char topic[16], hdr[1024], want[256];
	size_t pl;
	const uint32_t n = 100;

	(void)state;
	setup_fix(&f, &p);
	f.sub = subscribe(&f, 1000);
	for (uint32_t k = 0; k < n; k++) {
		struct zpub_cpi c = { .seq = 1000 + k, .timestamp_ns = 5000000000ull + k,
				      .first_sample = 77ull * k, .mode = k % 3,
				      .channels = 4, .pulses = 16, .samples = 512,
				      .pointing_az_deg = (k & 2) ? NAN : 0.25f * (float)k,
				      .pointing_el_deg = -1.5f };

		make_list(list, k);
		assert_int_equal(zpub_put_det(f.z, (void *)list, sizeof(list), &c), 0);
	}
	for (uint32_t k = 0; k < n; k++) {
		size_t len = make_list(list, k);

		assert_int_equal(recv_msg(f.sub, topic, sizeof(topic), hdr, sizeof(hdr), got,
					  sizeof(got), &pl, 5000), 3);
		assert_string_equal(topic, "det");
		assert_int_equal(pl, len);
		assert_memory_equal(got, list, len);
		char az[32];

		if (k & 2)
			snprintf(az, sizeof(az), "null");
		else
			snprintf(az, sizeof(az), "%.9g", 0.25 * k);
		snprintf(want, sizeof(want), "{\"seq\":%u,\"timestamp_ns\":%llu,\"first_sample\":%llu,"
			 "\"mode\":%u,\"pointing_az_deg\":%s,\"pointing_el_deg\":-1.5,\"count\":%u,",
			 1000 + k, 5000000000ull + k, 77ull * k, k % 3, az, k % (MAXDET + 1));
		assert_memory_equal(hdr, want, strlen(want));
		assert_non_null(strstr(hdr, (k & 1) ? "\"overflow\":true" : "\"overflow\":false"));
		assert_non_null(strstr(hdr, "\"channels\":4,\"pulses\":16,\"samples\":512}"));
	}
	assert_int_equal(zpub_wait_idle(f.z, 5000), 0);
	assert_int_equal(counter(f.st, ST_PUB_DET_MESSAGES), n);
	assert_int_equal(counter(f.st, ST_PUB_DET_DROPS), 0);
	assert_int_equal(counter(f.st, ST_PUB_ERRORS), 0);
	teardown_fix(&f);
}

static void test_map_max_hold(void **state)
{
	struct fix f = { .st = stats_create() };
	struct zpub_params p = params(f.st);
	enum { C = 2, ND = 7, R = 95 };             /* 4 x 10 cells of 2 x 10 */
	static float map[C * ND * R], got[64];
	float want[4][10];
	struct zpub_cpi c = { .seq = 9, .timestamp_ns = 123, .mode = 1 };
	char topic[16], hdr[1024];
	size_t pl;

	(void)state;
	p.maps_hz = 1000;
	setup_fix(&f, &p);
	f.sub = subscribe(&f, 1000);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 10; j++)
			want[i][j] = -INFINITY;
	srand(3);
	for (int ch = 0; ch < C; ch++)
		for (int k = 0; k < ND; k++)
			for (int n = 0; n < R; n++) {
				float v = (float)(rand() % 100000) - 50000.0f;
				float *w = &want[k / 2][n / 10];

				if ((ch + k + n) % 17 == 0)
					v = NAN;
				else if (v > *w)
					*w = v;
				map[(ch * ND + k) * R + n] = v;
			}
	assert_true(zpub_map_due(f.z, mono_ns()));
	assert_false(zpub_map_due(f.z, mono_ns()));   /* at most 1000 a second */
	assert_int_equal(zpub_put_map(f.z, map, C, ND, R, &c), 0);
	assert_int_equal(recv_msg(f.sub, topic, sizeof(topic), hdr, sizeof(hdr), got,
				  sizeof(got), &pl, 5000), 3);
	assert_string_equal(topic, "map");
	assert_int_equal(pl, sizeof(want));
	assert_memory_equal(got, want, sizeof(want));
	assert_non_null(strstr(hdr, "\"seq\":9,"));
	assert_non_null(strstr(hdr, "\"rows\":4,\"cols\":10,\"doppler_bins\":7,\"range_gates\":95,"
				    "\"channels\":2,\"doppler_decimation\":2,\"range_decimation\":10,"));
	assert_int_equal(zpub_wait_idle(f.z, 5000), 0);
	assert_int_equal(counter(f.st, ST_PUB_MAP_MESSAGES), 1);
	teardown_fix(&f);
}

/*
 * A subscriber that never reads: its pipe fills to the high-water marks
 * (and the kernel's socket buffers), then sends find no room and drop,
 * counted; the producer's puts never wait on it.
 */
static void test_stalled_subscriber(void **state)
{
	struct fix f = { .st = stats_create() };
	struct zpub_params p = params(f.st);
	static uint8_t list[CHIRP_DET_BYTES(MAXDET)];
	struct zpub_cpi c = { 0 };
	const uint32_t n = 20000;
	uint64_t slow = 0, worst = 0, sent, drops;

	(void)state;
	p.hwm = 1;
	setup_fix(&f, &p);
	f.sub = subscribe(&f, 1);
	make_list(list, MAXDET);                    /* a full list: 2 KiB */
	for (uint32_t k = 0; k < n; k++) {
		uint64_t t0 = mono_ns(), dt;

		c.seq = k;
		(void)zpub_put_det(f.z, (void *)list, sizeof(list), &c);
		dt = mono_ns() - t0;
		worst = dt > worst ? dt : worst;
		slow += dt > 1000000;
	}
	assert_int_equal(zpub_wait_idle(f.z, 10000), 0);
	sent = counter(f.st, ST_PUB_DET_MESSAGES);
	drops = counter(f.st, ST_PUB_DET_DROPS);
	print_message("puts %u: sent %llu, dropped %llu; puts over 1 ms %llu, worst %.3f ms\n", n,
		      (unsigned long long)sent, (unsigned long long)drops,
		      (unsigned long long)slow, (double)worst * 1e-6);
	assert_int_equal(sent + drops, n);
	assert_true(drops > 0);
	assert_true(sent > 0);
	/* A put is a copy into memory: none waits for the subscriber. A
	 * busy shared machine may preempt a few; a wait would slow them all. */
	assert_true(slow <= n / 100);
	assert_int_equal(counter(f.st, ST_PUB_DROPPED_BYTES),
			 drops * (72 + sizeof(list)));
	teardown_fix(&f);
}

/*
 * The same subscriber with the queue never full (each put waits until the
 * sender is idle): every drop is a send refused at the high-water mark.
 * 1 MiB maps fill the socket buffers in a few dozen.
 */
static void test_hwm_drops(void **state)
{
	struct fix f = { .st = stats_create() };
	struct zpub_params p = params(f.st);
	enum { ND = 256, R = 1024, N = 80 };
	float *map = calloc((size_t)ND * R, sizeof(float));
	struct zpub_cpi c = { 0 };
	uint64_t sent, drops;

	(void)state;
	assert_non_null(map);
	p.hwm = 1;
	p.maps_hz = 1e6;
	p.map_max_range = R;
	p.map_max_doppler = ND;
	setup_fix(&f, &p);
	f.sub = subscribe(&f, 1);
	for (int k = 0; k < N; k++) {
		while (!zpub_map_due(f.z, mono_ns()))
			;
		c.seq = (uint64_t)k;
		assert_int_equal(zpub_put_map(f.z, map, 1, ND, R, &c), 0);
		assert_int_equal(zpub_wait_idle(f.z, 5000), 0);
	}
	sent = counter(f.st, ST_PUB_MAP_MESSAGES);
	drops = counter(f.st, ST_PUB_MAP_DROPS);
	print_message("maps %d: sent %llu, dropped at the high-water mark %llu\n", N,
		      (unsigned long long)sent, (unsigned long long)drops);
	assert_int_equal(sent + drops, N);
	assert_true(drops > 0 && sent > 0);
	assert_int_equal(counter(f.st, ST_PUB_ERRORS), 0);
	free(map);
	teardown_fix(&f);
}

static void test_off_by_default_and_checks(void **state)
{
	struct chirp_config cfg;
	struct zpub_params p = params(NULL);
	char err[256];

	(void)state;
	config_defaults(&cfg);
	assert_string_equal(cfg.pub_listen, "");
	assert_int_equal(zpub_check_endpoint("", err, sizeof(err)), 0);
	assert_int_equal(zpub_check_endpoint("tcp://127.0.0.1:5556", err, sizeof(err)), 0);
	assert_int_equal(zpub_check_endpoint("tcp://*:*", err, sizeof(err)), 0);
	assert_int_equal(zpub_check_endpoint("ipc:///run/chirpd/pub", err, sizeof(err)), 0);
	assert_int_equal(zpub_check_endpoint("tcp://127.0.0.1:0", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "port '0'"));
	assert_int_equal(zpub_check_endpoint("tcp://127.0.0.1", err, sizeof(err)), -EINVAL);
	assert_int_equal(zpub_check_endpoint("udp://1.2.3.4:5", err, sizeof(err)), -EINVAL);
	assert_int_equal(zpub_check_endpoint("tcp://a b:5", err, sizeof(err)), -EINVAL);
	/* A bad endpoint in a file: FILE:LINE: [section] key: reason. */
	{
		char *buf = NULL;
		size_t blen = 0;
		FILE *m = open_memstream(&buf, &blen);

		assert_non_null(m);
		assert_true(config_load_string(&cfg, "t.conf", "[publish]\nlisten = tcp://h:99999\n",
					       m) > 0);
		fclose(m);
		assert_non_null(strstr(buf, "t.conf:2: [publish] listen: port '99999' is not 1..65535"));
		free(buf);
	}
	/* An address no interface has: refused with the endpoint named. */
	p.listen = "tcp://192.0.2.1:5556";
	assert_null(zpub_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "[publish] listen tcp://192.0.2.1:5556: "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_by_default_and_checks),
		cmocka_unit_test(test_det_arrives),
		cmocka_unit_test(test_map_max_hold),
		cmocka_unit_test(test_stalled_subscriber),
		cmocka_unit_test(test_hwm_drops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
