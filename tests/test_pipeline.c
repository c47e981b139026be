/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline.c — the data thread end to end inside one process: real
 * rings (this test is the digitizer and the downstream consumer), the CPU
 * backend, and checks of order, loss accounting, flags, timestamps, the
 * numerical result against a direct double-precision correlation, reload
 * swaps under load with zero loss/duplication, pause, stop, heartbeat,
 * radar modes per CPI (each CPI its own mode's filter, unknown modes
 * flagged and zeroed in order) and the sizing of slots = auto.
 *
 * The main cases run at backend depth 1, 2 and 4 (the CPU backend's
 * cpu_depth: completions through pc_poll with up to depth CPIs in flight),
 * so the depth > 1 path — one output ring reservation per CPI in flight,
 * results written in place, commits in order — is tested without a GPU.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <complex.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "chirp/pc.h"
#include "chirp/ring.h"
#include "pipeline.h"
#include "stall.h"
#include "stats.h"
#include "waveform.h"

/* Geometry: not powers of two. */
#define C 2
#define P 3
#define R 257

struct fx {
	char in_name[64], out_name[64];
	struct chirp_ring *in_c, *out_p;     /* the pipeline's ends           */
	struct chirp_ring *in_p, *out_c;     /* the test's ends               */
	struct pc *pc;
	float *ref;
	size_t ref_len;
	struct pipeline_gen *gen;
	struct stats *st;
	int efd;
	struct pipeline *pl;
	struct trace *tr;
};

static unsigned g_depth = 1;   /* cpu_depth of the pcs the fixture makes */

static int set_depth1(void **state) { (void)state; g_depth = 1; return 0; }
static int set_depth2(void **state) { (void)state; g_depth = 2; return 0; }
static int set_depth4(void **state) { (void)state; g_depth = 4; return 0; }

static uint64_t rs = 88172645463325252ull;
static double urand(void)
{
	rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
	return (double)(rs >> 11) / 9007199254740992.0;
}

static struct pc *make_pc(struct fx *f, enum wf_window win, unsigned depth, char *err,
			  size_t len)
{
	struct wf_params w;
	struct pc_params p;
	struct pc *pc;

	wf_params_init(&w);
	w.type = WF_LFM;
	w.sample_rate_hz = 25e6;
	w.bandwidth_hz = 8e6;
	w.pulse_width_s = 1.24e-6;      /* L = 31 */
	w.window = win;
	free(f->ref);
	f->ref = NULL;
	if (wf_build(&w, R, &f->ref, &f->ref_len, err, len) < 0)
		return NULL;
	pc_params_init(&p);
	p.channels = C; p.pulses = P; p.samples = R;
	p.in_format = PC_FMT_CF32;
	p.out_mode = PC_OUT_COMPLEX;
	p.normalize = PC_NORM_NOISE;
	p.ref = f->ref;
	p.ref_len = f->ref_len;
	p.backend = PC_BACKEND_CPU;
	p.cpu_threads = 1;
	p.cpu_depth = depth;
	pc = pc_create(&p, err, len);
	if (pc) {
		struct pc_info info;

		pc_get_info(pc, &info);
		assert_int_equal(info.depth, depth);
	}
	return pc;
}

static void fx_open_fd(struct fx *f, unsigned in_slots, unsigned out_slots, int out_fd)
{
	char err[256];
	struct chirp_ring_geometry gi = { C, P, R, CHIRP_RING_CF32, in_slots, 25e6 };
	struct chirp_ring_geometry go = { C, P, R, CHIRP_RING_CF32, out_slots, 25e6 };

	memset(f, 0, sizeof(*f));
	snprintf(f->in_name, sizeof(f->in_name), "/test-pipeline-%d-in", (int)getpid());
	snprintf(f->out_name, sizeof(f->out_name), "/test-pipeline-%d-out", (int)getpid());
	chirp_ring_unlink(f->in_name);
	chirp_ring_unlink(f->out_name);
	f->in_c = chirp_ring_create(f->in_name, &gi, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	if (!f->in_c) fail_msg("in ring: %s", err);
	f->out_p = chirp_ring_create(f->out_name, &go, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	if (!f->out_p) fail_msg("out ring: %s", err);
	f->in_p = chirp_ring_attach(f->in_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	if (!f->in_p) fail_msg("attach in: %s", err);
	f->out_c = chirp_ring_attach(f->out_name, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	if (!f->out_c) fail_msg("attach out: %s", err);
	f->pc = make_pc(f, WIN_HAMMING, g_depth, err, sizeof(err));
	if (!f->pc) fail_msg("pc: %s", err);
	f->gen = pipeline_gen_create(f->in_c, f->out_p, f->pc, out_fd, -1, err, sizeof(err));
	if (!f->gen) fail_msg("gen: %s", err);
	f->st = stats_create();
	assert_non_null(f->st);
	f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(f->efd >= 0);
}

static void fx_open(struct fx *f, unsigned in_slots, unsigned out_slots)
{
	fx_open_fd(f, in_slots, out_slots, -1);
}

static void fx_start(struct fx *f)
{
	char err[256];

	f->tr = trace_create(256);
	assert_non_null(f->tr);
	f->pl = pipeline_create(f->gen, f->st, NULL, f->efd, f->tr, err, sizeof(err));
	if (!f->pl) fail_msg("pipeline: %s", err);
}

static void fx_close(struct fx *f)
{
	if (f->pl)
		assert_int_equal(pipeline_destroy(f->pl, 5000), 0);
	pipeline_gen_destroy(f->gen);
	pc_destroy(f->pc);
	chirp_ring_detach(f->in_p);
	chirp_ring_detach(f->out_c);
	chirp_ring_detach(f->in_c);
	chirp_ring_detach(f->out_p);
	chirp_ring_unlink(f->in_name);
	chirp_ring_unlink(f->out_name);
	stats_destroy(f->st);
	trace_destroy(f->tr);
	free(f->ref);
	close(f->efd);
}

/* Fill CPI k: noise plus a copy of the reference at gate 40 + k % 100. */
static void fill_cpi(float *x, uint64_t k)
{
	for (size_t i = 0; i < 2u * C * P * R; i++)
		x[i] = (float)(urand() - 0.5) * 0.1f;
	(void)k;
}

static int produce(struct fx *f, uint64_t k, float *copy)
{
	void *pl;
	int ret = chirp_ring_reserve(f->in_p, &pl);

	if (ret)
		return ret;
	fill_cpi(pl, k);
	if (copy)
		memcpy(copy, pl, sizeof(float) * 2 * C * P * R);
	return chirp_ring_commit(f->in_p, 1000000000ull + k, k * (uint64_t)P * R, 0);
}

static void snap(struct fx *f, struct stats_snapshot *s)
{
	stats_snapshot(f->st, s);
}

/* Wait until cond() holds, at most 20 s (a safety bound, not a speed goal). */
#define WAIT_UNTIL(cond) do { \
	for (int _i = 0; _i < 20000 && !(cond); _i++) { struct timespec _t = { 0, 1000000 }; nanosleep(&_t, NULL); } \
	assert_true(cond); } while (0)

static uint64_t counter(struct fx *f, enum stats_counter c)
{
	static struct stats_snapshot s;   /* big: keep it off the stack */
	snap(f, &s);
	return s.counter[c];
}

/* Input blocks the pipeline has handed back to the ring. */
static uint64_t in_released(struct fx *f)
{
	struct chirp_ring_stats st;

	assert_int_equal(chirp_ring_stats(f->in_p, &st), 0);
	return st.released;
}

/* Direct correlation in double: y[n] = g sum_k x[n+k] conj(h[k]). */
static void reference(const float *x, const float *h, size_t L, double complex *y)
{
	double e = 0;

	for (size_t k = 0; k < L; k++)
		e += (double)h[2 * k] * h[2 * k] + (double)h[2 * k + 1] * h[2 * k + 1];
	double g = 1.0 / sqrt(e);
	for (size_t n = 0; n < R; n++) {
		double complex acc = 0;
		for (size_t k = 0; k < L && n + k < R; k++)
			acc += ((double)x[2 * (n + k)] + I * (double)x[2 * (n + k) + 1]) *
			       conj((double)h[2 * k] + I * (double)h[2 * k + 1]);
		y[n] = g * acc;
	}
}

static void test_order_values_timestamps(void **state)
{
	(void)state;
	struct fx f;
	const unsigned N = 60;
	float *copy = malloc(sizeof(float) * 2 * C * P * R * N);
	double complex y[R];

	assert_non_null(copy);
	fx_open(&f, 8, 64);
	fx_start(&f);
	WAIT_UNTIL(pipeline_state(f.pl) == PIPE_RUNNING);
	for (unsigned k = 0; k < N; k++) {
		/* the test may outrun the pipeline: retry until a slot is free */
		int ret;
		while ((ret = produce(&f, k, copy + (size_t)k * 2 * C * P * R)) == -ENOBUFS)
			chirp_ring_wait(f.in_p, 1000000);
		assert_int_equal(ret, 0);
	}
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);
	/* The producer's retries counted overruns in the ring; with seq
	 * numbers counting dropped blocks they appear as gaps too. */
	uint64_t gaps = counter(&f, ST_SEQUENCE_GAPS);
	assert_int_equal(gaps, counter(&f, ST_INPUT_OVERRUNS));
	for (unsigned k = 0; k < N; k++) {
		struct chirp_ring_block b;
		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(b.first_sample, (uint64_t)k * P * R);
		assert_int_equal(b.timestamp_ns, 1000000000ull + k);
		assert_int_equal(b.len, sizeof(float) * 2 * C * P * R);
		assert_int_equal(b.flags & CHIRP_RING_NONFINITE, 0);
		if (k % 13 == 0) {
			const float *out = b.payload;
			for (unsigned row = 0; row < C * P; row++) {
				reference(copy + (size_t)k * 2 * C * P * R + (size_t)row * 2 * R, f.ref, f.ref_len, y);
				double num = 0, den = 0;
				for (unsigned n = 0; n < R; n++) {
					double complex o = out[2 * (row * R + n)] + I * out[2 * (row * R + n) + 1];
					num += cabs(o - y[n]) * cabs(o - y[n]);
					den += cabs(y[n]) * cabs(y[n]);
				}
				assert_true(sqrt(num / den) < 1e-4);
			}
		}
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}
	assert_int_equal(counter(&f, ST_CPIS_IN), N);
	assert_int_equal(counter(&f, ST_OUTPUT_DROPS), 0);
	assert_int_equal(counter(&f, ST_SAMPLES_IN), (uint64_t)N * C * P * R);
	static struct stats_snapshot s;
	snap(&f, &s);
	assert_int_equal(s.lat_count, N);
	assert_true(stats_percentile(&s, 0.5) > 0);
	assert_int_equal(s.stage_count[STG_COMPUTE], N);
	fx_close(&f);
	free(copy);
}

static uint64_t now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The flight recorder: one record per CPI in input order, the stages in
 * time order, latency = output commit - input commit; a budget below every
 * latency counts and flags each CPI and publishes the newest; results the
 * full output ring could not take are recorded as dropped, not delivered.
 */
static void test_trace_records(void **state)
{
	(void)state;
	struct fx f;
	const unsigned N = 24, OUT = 4;
	struct trace_cpi r[64];
	unsigned got;

	fx_open(&f, 8, 64);
	fx_start(&f);
	pipeline_set_budget(f.pl, 1);   /* 1 ns: every CPI is over */
	WAIT_UNTIL(pipeline_state(f.pl) == PIPE_RUNNING);
	for (unsigned k = 0; k < N; k++) {
		void *pl;
		int ret;

		while ((ret = chirp_ring_reserve(f.in_p, &pl)) == -ENOBUFS)
			chirp_ring_wait(f.in_p, 1000000);
		assert_int_equal(ret, 0);
		fill_cpi(pl, k);
		assert_int_equal(chirp_ring_commit(f.in_p, now_real_ns(), (uint64_t)k * P * R, 0), 0);
	}
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);
	WAIT_UNTIL(trace_total(f.tr) == N);
	got = trace_read(f.tr, r, 64);
	assert_int_equal(got, N);
	for (unsigned k = 0; k < N; k++) {
		const struct trace_cpi *x = &r[k];

		assert_int_equal(x->first_sample, (uint64_t)k * P * R);
		if (k)   /* a reserve on a full ring counts a drop: seq skips */
			assert_true(x->seq > r[k - 1].seq);
		assert_true(x->flags & TRACE_DELIVERED);
		assert_true(x->flags & TRACE_OVER_BUDGET);
		assert_false(x->flags & (TRACE_DROPPED | TRACE_SKIPPED));
		assert_true(x->t[TR_IN_COMMIT] > 0);
		for (int s = TR_PEEK; s < TR_STAMPS; s++)
			assert_true(x->t[s] > 0);
		assert_true(x->t[TR_IN_COMMIT] <= x->t[TR_PEEK]);
		assert_true(x->t[TR_PEEK] <= x->t[TR_SUBMIT]);
		assert_true(x->t[TR_SUBMIT] <= x->t[TR_SUBMITTED]);
		assert_true(x->t[TR_SUBMITTED] <= x->t[TR_OUTPUT_DONE]);
		assert_true(x->t[TR_INPUT_DONE] <= x->t[TR_RELEASE]);
		assert_true(x->t[TR_RELEASE] <= x->t[TR_OUT_COMMIT]);
		assert_true(x->t[TR_OUTPUT_DONE] <= x->t[TR_OUT_COMMIT]);
		assert_true(x->fill >= 1 && x->fill <= 8);
		assert_true(x->latency_ns > 0);
		/* latency is measured in REALTIME, the stamps in MONOTONIC:
		 * the two spans agree within the clocks' skew over one CPI */
		assert_true(llabs((long long)x->latency_ns -
				  (long long)(x->t[TR_OUT_COMMIT] - x->t[TR_IN_COMMIT])) < 2000000);
		assert_true(x->device_ns > 0);   /* CPU backend: compute time */
		/* A data-thread stall (a loaded machine may have them): all or nothing */
		if (x->stall_ns) {
			assert_true(x->stall_ns >= STALL_THRESHOLD_NS);
			assert_true(x->stall_kind > STALL_NONE && x->stall_kind < STALL_KINDS);
			assert_true(x->stall_where > TW_NONE && x->stall_where < TW_WHERES);
		} else {
			assert_int_equal(x->stall_kind, STALL_NONE);
			assert_int_equal(x->stall_where, TW_NONE);
			assert_int_equal(x->stall_cpu_ns, 0);
		}
	}
	assert_int_equal(counter(&f, ST_OVER_BUDGET), N);
	assert_int_equal(pipeline_over_budget_last(f.pl), N);   /* record N-1, plus 1 */
	for (unsigned k = 0; k < N; k++) {
		struct chirp_ring_block b;

		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}

	/* No budget, and nobody reads: the ring's OUT slots fill, the rest is
	 * dropped and recorded as such. */
	fx_close(&f);
	fx_open(&f, 8, OUT);
	fx_start(&f);
	pipeline_set_budget(f.pl, 0);
	for (unsigned k = 0; k < N; k++) {
		int ret;

		while ((ret = produce(&f, k, NULL)) == -ENOBUFS)
			chirp_ring_wait(f.in_p, 1000000);
		assert_int_equal(ret, 0);
	}
	WAIT_UNTIL(trace_total(f.tr) == N);
	got = trace_read(f.tr, r, 64);
	assert_int_equal(got, N);
	{
		unsigned delivered = 0, dropped = 0;

		for (unsigned k = 0; k < N; k++) {
			assert_false(r[k].flags & TRACE_OVER_BUDGET);
			if (r[k].flags & TRACE_DELIVERED) {
				delivered++;
				assert_true(r[k].t[TR_OUT_COMMIT] > 0);
			} else {
				assert_true(r[k].flags & TRACE_DROPPED);
				assert_int_equal(r[k].t[TR_OUT_COMMIT], 0);
				assert_int_equal(r[k].latency_ns, 0);
				dropped++;
			}
		}
		assert_int_equal(delivered, OUT);
		assert_int_equal(dropped, N - OUT);
		assert_int_equal(dropped, counter(&f, ST_OUTPUT_DROPS));
	}
	assert_int_equal(counter(&f, ST_OVER_BUDGET), 0);
	assert_int_equal(pipeline_over_budget_last(f.pl), 0);
	fx_close(&f);
}

/* Nobody reads the output: the pipeline keeps taking input, counts drops,
 * and marks the first result after the drops DISCONTINUITY. */
static void test_slow_consumer_never_stalls(void **state)
{
	(void)state;
	struct fx f;
	const unsigned OUT = 4, N = 40;

	fx_open(&f, 8, OUT);
	fx_start(&f);
	for (unsigned k = 0; k < N; k++) {
		int ret;
		while ((ret = produce(&f, k, NULL)) == -ENOBUFS)
			chirp_ring_wait(f.in_p, 1000000);
		assert_int_equal(ret, 0);
	}
	WAIT_UNTIL(counter(&f, ST_CPIS_IN) == N);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) + counter(&f, ST_OUTPUT_DROPS) == N);
	assert_int_equal(counter(&f, ST_CPIS_OUT), OUT);
	assert_int_equal(counter(&f, ST_OUTPUT_DROPS), N - OUT);
	/* drain, then one more CPI: it carries DISCONTINUITY */
	struct chirp_ring_block b;
	for (unsigned k = 0; k < OUT; k++) {
		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(b.first_sample, (uint64_t)k * P * R);
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}
	assert_int_equal(produce(&f, N, NULL), 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == OUT + 1);
	assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
	assert_int_equal(b.first_sample, (uint64_t)N * P * R);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_int_equal(chirp_ring_release(f.out_c), 0);
	fx_close(&f);
}

/* Paused, the input ring fills and the producer overruns; after resume the
 * lost blocks show as sequence gaps, equal to the ring's overruns, and the
 * first result after the gap is marked. */
static void test_pause_gaps_overruns(void **state)
{
	(void)state;
	struct fx f;
	const unsigned IN = 4, EXTRA = 7;
	struct chirp_ring_block b;

	fx_open(&f, IN, 64);
	fx_start(&f);
	pipeline_pause(f.pl, 1);
	WAIT_UNTIL(pipeline_state(f.pl) == PIPE_PAUSED);
	uint64_t hb = pipeline_heartbeat(f.pl);
	WAIT_UNTIL(pipeline_heartbeat(f.pl) > hb + 3);   /* idle, still beating */
	unsigned ok = 0, dropped = 0;
	for (unsigned k = 0; k < IN + EXTRA; k++) {
		int ret = produce(&f, k, NULL);
		if (ret == 0) ok++;
		else { assert_int_equal(ret, -ENOBUFS); dropped++; }
	}
	assert_int_equal(ok, IN);
	assert_int_equal(dropped, EXTRA);
	assert_int_equal(counter(&f, ST_CPIS_IN), 0);
	pipeline_pause(f.pl, 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == IN);
	assert_int_equal(produce(&f, 100, NULL), 0);   /* after the gap */
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == IN + 1);
	assert_int_equal(counter(&f, ST_SEQUENCE_GAPS), EXTRA);
	assert_int_equal(counter(&f, ST_INPUT_OVERRUNS), EXTRA);
	for (unsigned k = 0; k < IN; k++) {
		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(b.flags & CHIRP_RING_DISCONTINUITY, 0);
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}
	assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
	assert_true(b.flags & CHIRP_RING_DISCONTINUITY);
	assert_int_equal(chirp_ring_release(f.out_c), 0);
	fx_close(&f);
}

static void test_nonfinite_flagged(void **state)
{
	(void)state;
	struct fx f;
	void *pl;
	struct chirp_ring_block b;

	fx_open(&f, 4, 4);
	fx_start(&f);
	assert_int_equal(chirp_ring_reserve(f.in_p, &pl), 0);
	fill_cpi(pl, 0);
	((float *)pl)[2 * (1 * R + 17)] = NAN;          /* row 1 */
	((float *)pl)[2 * (4 * R + 3) + 1] = INFINITY;  /* row 4 */
	assert_int_equal(chirp_ring_commit(f.in_p, 0, 0, 0), 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == 1);
	assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
	assert_true(b.flags & CHIRP_RING_NONFINITE);
	assert_int_equal(chirp_ring_release(f.out_c), 0);
	assert_int_equal(counter(&f, ST_NONFINITE_CPIS), 1);
	assert_int_equal(counter(&f, ST_NONFINITE_ROWS), 2);
	fx_close(&f);
}

/* A producer thread streams CPIs while the control side swaps in a new pc
 * (different window) 20 times: every CPI comes out exactly once, in order. */
struct feeder { struct fx *f; unsigned n; atomic_int done; };
static void *feed_thread(void *arg)
{
	struct feeder *fd = arg;
	for (unsigned k = 0; k < fd->n; k++) {
		int ret;
		while ((ret = produce(fd->f, k, NULL)) == -ENOBUFS)
			chirp_ring_wait(fd->f->in_p, 1000000);
		if (ret) break;
		if (k % 8 == 0) { struct timespec t = { 0, 200000 }; nanosleep(&t, NULL); }
	}
	atomic_store(&fd->done, 1);
	return NULL;
}

struct reader { struct fx *f; unsigned n; unsigned got; int order_ok; uint32_t flags_or; };
static void *read_thread(void *arg)
{
	struct reader *rd = arg;
	struct chirp_ring_block b;
	rd->order_ok = 1;
	for (int idle = 0; rd->got < rd->n && idle < 20000;) {
		if (chirp_ring_peek(rd->f->out_c, &b) == 0) {
			if (b.first_sample != (uint64_t)rd->got * P * R)
				rd->order_ok = 0;
			rd->flags_or |= b.flags;
			rd->got++;
			chirp_ring_release(rd->f->out_c);
			idle = 0;
		} else {
			chirp_ring_wait(rd->f->out_c, 1000000);
			idle++;
		}
	}
	return NULL;
}

static void test_swap_under_load_no_loss(void **state)
{
	(void)state;
	struct fx f;
	const unsigned N = 600;
	struct feeder fd = { .n = N };
	struct reader rd = { .n = N };
	pthread_t tf, tr;
	char err[256];
	static const enum wf_window wins[] = { WIN_HANN, WIN_RECT, WIN_BLACKMAN, WIN_HAMMING };

	/* Output ring larger than N: a reader starved by a loaded machine must
	 * not turn into output drops; this test is about the swaps. */
	fx_open(&f, 64, 1024);
	fx_start(&f);
	fd.f = &f;
	rd.f = &f;
	assert_int_equal(pthread_create(&tr, NULL, read_thread, &rd), 0);
	assert_int_equal(pthread_create(&tf, NULL, feed_thread, &fd), 0);
	for (int i = 0; i < 20; i++) {
		/* the depth changes across swaps too: 1 -> 2 -> 4 -> ... */
		static const unsigned depths[] = { 1, 2, 4 };
		struct pc *npc = make_pc(&f, wins[i % 4], depths[(i + g_depth) % 3], err,
					 sizeof(err));
		struct pipeline_gen *ng, *old = NULL;
		if (!npc) fail_msg("pc: %s", err);
		ng = pipeline_gen_create(f.in_c, f.out_p, npc, -1, -1, err, sizeof(err));
		if (!ng) fail_msg("gen: %s", err);
		assert_int_equal(pipeline_swap(f.pl, ng, &old, 10000, err, sizeof(err)), 0);
		assert_ptr_equal(old, f.gen);
		assert_ptr_equal(pipeline_current(f.pl), ng);
		pipeline_gen_destroy(old);
		pc_destroy(f.pc);
		f.pc = npc;
		f.gen = ng;
		struct timespec t = { 0, 3000000 };
		nanosleep(&t, NULL);
	}
	assert_int_equal(pthread_join(tf, NULL), 0);
	assert_int_equal(pthread_join(tr, NULL), 0);
	assert_int_equal(rd.got, N);
	assert_true(rd.order_ok);
	assert_int_equal(counter(&f, ST_CPIS_IN), N);
	/* the data thread counts a CPI just after committing it: the reader
	 * may have taken the last block before the count moved */
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);
	assert_int_equal(counter(&f, ST_OUTPUT_DROPS), 0);
	assert_int_equal(counter(&f, ST_SEQUENCE_GAPS), counter(&f, ST_INPUT_OVERRUNS));
	fx_close(&f);
}

/* The gate where the first row of a complex result peaks. */
static unsigned peak_gate(const float *y)
{
	unsigned best = 0;
	float bp = -1;

	for (unsigned n = 0; n < R; n++) {
		float p = y[2 * n] * y[2 * n] + y[2 * n + 1] * y[2 * n + 1];

		if (p > bp) {
			bp = p;
			best = n;
		}
	}
	return best;
}

/* Feed fe->n CPIs, one a millisecond (a file writer on a memfd keeps up):
 * CPI k is an impulse at sample 40 + k of every row, so the gate its
 * result peaks at moves with k by the same offset for every window. */
static void *paced_feed_thread(void *arg)
{
	struct feeder *fe = arg;

	for (unsigned k = 0; k < fe->n; k++) {
		struct timespec t = { 0, 1000000 };
		float *x;
		int ret;

		while ((ret = chirp_ring_reserve(fe->f->in_p, (void **)&x)) == -ENOBUFS)
			chirp_ring_wait(fe->f->in_p, 1000000);
		if (ret)
			break;
		memset(x, 0, sizeof(float) * 2u * C * P * R);
		for (unsigned row = 0; row < C * P; row++)
			x[2 * ((size_t)row * R + 40 + k)] = 1.0f;
		if (chirp_ring_commit(fe->f->in_p, 1000000000ull + k, k * (uint64_t)P * R, 0))
			break;
		nanosleep(&t, NULL);
	}
	atomic_store(&fe->done, 1);
	return NULL;
}

/*
 * [output] file kept across swaps under load (every generation gets the
 * same descriptor, as a reload that keeps the path does): each new
 * generation's file writer starts once the old one is destroyed, so the
 * file gets the results of every generation (a writer left held would
 * drop all of them after the first swap), whole and in input order, and
 * written + dropped bytes = every result.
 */
static void test_swap_keeps_file(void **state)
{
	(void)state;
	enum { N = 90 };
	const size_t cpi_bytes = sizeof(float) * 2u * C * P * R;
	int fd = memfd_create("test-pipeline-swap-file", MFD_CLOEXEC);
	struct fx f;
	struct feeder fe = { .n = N };
	struct reader rd = { .n = N };
	pthread_t tf, tr;
	char err[256];
	float *buf = malloc(cpi_bytes);
	uint64_t written;
	int first = 0, last = -1;

	assert_true(fd >= 0);
	assert_non_null(buf);
	fx_open_fd(&f, 64, 1024, fd);
	fx_start(&f);
	fe.f = &f;
	rd.f = &f;
	assert_int_equal(pthread_create(&tr, NULL, read_thread, &rd), 0);
	assert_int_equal(pthread_create(&tf, NULL, paced_feed_thread, &fe), 0);
	for (int i = 0; i < 6; i++) {
		struct pc *npc = make_pc(&f, i % 2 ? WIN_HANN : WIN_HAMMING, g_depth, err, sizeof(err));
		struct pipeline_gen *ng, *old = NULL;
		struct timespec t = { 0, 10000000 };

		if (!npc) fail_msg("pc: %s", err);
		ng = pipeline_gen_create(f.in_c, f.out_p, npc, fd, -1, err, sizeof(err));
		if (!ng) fail_msg("gen: %s", err);
		assert_int_equal(pipeline_swap(f.pl, ng, &old, 10000, err, sizeof(err)), 0);
		pipeline_gen_destroy(old);
		pc_destroy(f.pc);
		f.pc = npc;
		f.gen = ng;
		nanosleep(&t, NULL);
	}
	assert_int_equal(pthread_join(tf, NULL), 0);
	assert_int_equal(pthread_join(tr, NULL), 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);   /* counted just after the commit */
	WAIT_UNTIL(counter(&f, ST_OUTPUT_FILE_BYTES) + counter(&f, ST_OUTPUT_FILE_DROPPED_BYTES) ==
		   N * cpi_bytes);
	written = counter(&f, ST_OUTPUT_FILE_BYTES) / cpi_bytes;
	assert_int_equal(written, N - counter(&f, ST_OUTPUT_FILE_DROPS));
	/* a queue of 4 on a memfd keeps up but for a rare hiccup; a writer
	 * left held after a swap would lose every later generation's results */
	assert_true(written >= N * 3 / 4);
	assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)(written * cpi_bytes));
	for (uint64_t w = 0; w < written; w++) {
		int g;

		assert_int_equal(pread(fd, buf, cpi_bytes, (off_t)(w * cpi_bytes)), (ssize_t)cpi_bytes);
		g = (int)peak_gate(buf);
		assert_true(g > last);      /* whole results, in input order */
		if (w == 0)
			first = g;
		last = g;
	}
	assert_true(last - first <= N - 1);
	fx_close(&f);
	close(fd);
	free(buf);
}

/* Park, re-create the input ring (new slots = new geometry, new epoch), swap
 * back in: CPIs flow from the new ring, its restarted sequence numbers are
 * not counted as gaps, and overruns of the old ring stay counted. */
static void test_park_and_new_input_ring(void **state)
{
	(void)state;
	struct fx f;
	char err[256];
	struct pipeline_gen *old = NULL, *ng;
	struct chirp_ring_geometry g = { C, P, R, CHIRP_RING_CF32, 8, 25e6 };

	fx_open(&f, 2, 16);
	fx_start(&f);
	pipeline_pause(f.pl, 1);
	WAIT_UNTIL(pipeline_state(f.pl) == PIPE_PAUSED);
	for (int k = 0; k < 5; k++)
		produce(&f, k, NULL);                     /* 2 fit, 3 overrun */
	WAIT_UNTIL(counter(&f, ST_INPUT_OVERRUNS) == 3);
	pipeline_pause(f.pl, 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == 2);
	assert_int_equal(pipeline_swap(f.pl, NULL, &old, 5000, err, sizeof(err)), 0);
	assert_ptr_equal(old, f.gen);
	assert_null(pipeline_current(f.pl));
	uint64_t hb = pipeline_heartbeat(f.pl);
	WAIT_UNTIL(pipeline_heartbeat(f.pl) > hb + 2);  /* parked, still beating */
	pipeline_gen_destroy(old);
	chirp_ring_detach(f.in_c);
	f.in_c = chirp_ring_create(f.in_name, &g, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	if (!f.in_c) fail_msg("re-create: %s", err);
	chirp_ring_detach(f.in_p);
	f.in_p = chirp_ring_attach(f.in_name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_non_null(f.in_p);
	ng = pipeline_gen_create(f.in_c, f.out_p, f.pc, -1, -1, err, sizeof(err));
	assert_non_null(ng);
	f.gen = ng;
	assert_int_equal(pipeline_swap(f.pl, ng, &old, 5000, err, sizeof(err)), 0);
	assert_null(old);
	for (int k = 0; k < 6; k++)
		assert_int_equal(produce(&f, 100 + k, NULL), 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == 8);
	/* The old ring's overruns were never followed by a block there (no gap
	 * seen), and the new ring's seq restarting at 0 is not a gap either. */
	assert_int_equal(counter(&f, ST_SEQUENCE_GAPS), 0);
	assert_int_equal(counter(&f, ST_INPUT_OVERRUNS), 3);
	fx_close(&f);
}

/* A previous chirpd took CPIs 0 and 1, committed CPI 0's result and died
 * holding both. The new pipeline gets both again flagged REDELIVERED: CPI 0
 * is skipped (its result is already in the output ring), CPI 1 is
 * processed, then CPI 2 as usual — each result exactly once. */
static void test_redelivered_exactly_once(void **state)
{
	(void)state;
	struct fx f;
	char err[256];
	struct chirp_ring_block b;
	struct chirp_ring_geometry gi = { C, P, R, CHIRP_RING_CF32, 8, 25e6 };
	void *slot;

	fx_open(&f, 8, 16);
	for (unsigned k = 0; k < 3; k++)
		assert_int_equal(produce(&f, k, NULL), 0);
	assert_int_equal(chirp_ring_peek(f.in_c, &b), 0);
	assert_int_equal(chirp_ring_reserve(f.out_p, &slot), 0);
	memset(slot, 0, sizeof(float) * 2 * C * P * R);
	assert_int_equal(chirp_ring_commit(f.out_p, b.timestamp_ns, b.first_sample, 0), 0);
	assert_int_equal(chirp_ring_peek(f.in_c, &b), 0);
	pipeline_gen_destroy(f.gen);
	chirp_ring_detach(f.in_c);                 /* "dies" holding two blocks */
	f.in_c = chirp_ring_create(f.in_name, &gi, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	if (!f.in_c) fail_msg("re-attach: %s", err);
	f.gen = pipeline_gen_create(f.in_c, f.out_p, f.pc, -1, -1, err, sizeof(err));
	assert_non_null(f.gen);
	fx_start(&f);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == 2);
	assert_int_equal(counter(&f, ST_REDELIVERED_SKIPPED), 1);
	for (unsigned k = 0; k < 3; k++) {
		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(b.first_sample, (uint64_t)k * P * R);
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}
	assert_int_equal(chirp_ring_peek(f.out_c, &b), -EAGAIN);
	fx_close(&f);
}

static void test_stop_drains_and_notifies(void **state)
{
	(void)state;
	struct fx f;
	uint64_t v;
	struct pollfd pfd;

	fx_open(&f, 8, 8);
	fx_start(&f);
	for (unsigned k = 0; k < 5; k++)
		assert_int_equal(produce(&f, k, NULL), 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == 5);
	pipeline_stop(f.pl);
	pfd.fd = f.efd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(read(f.efd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(pipeline_state(f.pl), PIPE_STOPPED);
	assert_string_equal(pipeline_error(f.pl), "");
	/* a swap on a stopped pipeline is refused, nothing changes */
	struct pipeline_gen *old = (void *)1;
	char err[128];
	assert_int_equal(pipeline_swap(f.pl, f.gen, &old, 100, err, sizeof(err)), -EIO);
	assert_null(old);
	fx_close(&f);
}

/* RMS error of one CPI's complex output against the direct reference. */
static double cpi_error(const float *out, const float *in, const struct fx *f)
{
	double complex y[R];
	double num = 0, den = 0;

	for (unsigned row = 0; row < C * P; row++) {
		reference(in + (size_t)row * 2 * R, f->ref, f->ref_len, y);
		for (unsigned n = 0; n < R; n++) {
			double complex o = out[2 * (row * R + n)] + I * out[2 * (row * R + n) + 1];
			num += cabs(o - y[n]) * cabs(o - y[n]);
			den += cabs(y[n]) * cabs(y[n]);
		}
	}
	return sqrt(num / den);
}

/*
 * A consumer that stalls between bursts: each burst of B CPIs meets an
 * output ring with F free slots. With up to depth CPIs in flight, each
 * holding its own reservation, exactly the first min(B, F) of the burst
 * are delivered — written in place, checked against the direct reference —
 * and the rest are dropped: counted exactly, each taking its block number
 * (out seq == input index), DISCONTINUITY on exactly the first delivered
 * result after a drop. Every result, delivered or not, also goes to the
 * [output] file in input order (dropped ones via the scratch buffers):
 * written whole, or dropped by the file's sink and counted.
 */
static void test_stalled_consumer_exact(void **state)
{
	(void)state;
	enum { OUT = 4, ROUNDS = 12, MAXN = 8 * ROUNDS };
	const size_t cpi_floats = 2u * C * P * R, cpi_bytes = sizeof(float) * cpi_floats;
	struct fx f;
	struct chirp_ring_block b;
	float *copy = malloc(cpi_bytes * MAXN), *buf = malloc(cpi_bytes);
	uint64_t fifo[OUT], total = 0, delivered = 0, drops = 0, last_read = UINT64_MAX;
	unsigned nheld = 0;
	int fd = memfd_create("test-pipeline-out", MFD_CLOEXEC);

	assert_non_null(copy);
	assert_non_null(buf);
	assert_true(fd >= 0);
	fx_open_fd(&f, 8, OUT, fd);
	fx_start(&f);
	WAIT_UNTIL(pipeline_state(f.pl) == PIPE_RUNNING);
	for (unsigned r = 0; r < ROUNDS; r++) {
		/* the consumer reads 0, 1 or everything it has, then stalls */
		unsigned nread = r % 3 == 0 ? 0 : r % 3 == 1 ? (nheld ? 1 : 0) : nheld;

		for (unsigned i = 0; i < nread; i++) {
			uint64_t k = fifo[0];

			assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
			assert_int_equal(b.first_sample, k * P * R);
			assert_int_equal(b.timestamp_ns, 1000000000ull + k);
			assert_int_equal(b.seq, k);        /* drops took their numbers */
			assert_int_equal(!!(b.flags & CHIRP_RING_DISCONTINUITY),
					 last_read != UINT64_MAX && k != last_read + 1);
			assert_true(cpi_error(b.payload, copy + k * cpi_floats, &f) < 1e-4);
			assert_int_equal(chirp_ring_release(f.out_c), 0);
			last_read = k;
			memmove(fifo, fifo + 1, --nheld * sizeof(fifo[0]));
		}
		unsigned burst = 2 + (r * 5) % 7;      /* 2..8: fits the input ring */
		unsigned freeslots = OUT - nheld;
		for (unsigned i = 0; i < burst; i++) {
			uint64_t k = total++;

			assert_int_equal(produce(&f, k, copy + k * cpi_floats), 0);
			if (i < freeslots) {
				fifo[nheld++] = k;
				delivered++;
			} else {
				drops++;
			}
		}
		/* A drop is counted when its CPI is submitted, before its input
		 * slot is released: wait for the releases too, or the next burst
		 * of 8 may find the 8-slot input ring one slot short. */
		WAIT_UNTIL(counter(&f, ST_CPIS_IN) == total &&
			   counter(&f, ST_CPIS_OUT) + counter(&f, ST_OUTPUT_DROPS) == total &&
			   in_released(&f) == total);
		assert_int_equal(counter(&f, ST_CPIS_OUT), delivered);
		assert_int_equal(counter(&f, ST_OUTPUT_DROPS), drops);
		assert_int_equal(chirp_ring_available(f.out_c), nheld);
	}
	assert_true(drops > 10 && delivered > 10);
	while (nheld) {
		uint64_t k = fifo[0];

		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(b.seq, k);
		assert_int_equal(!!(b.flags & CHIRP_RING_DISCONTINUITY),
				 last_read != UINT64_MAX && k != last_read + 1);
		assert_true(cpi_error(b.payload, copy + k * cpi_floats, &f) < 1e-4);
		assert_int_equal(chirp_ring_release(f.out_c), 0);
		last_read = k;
		memmove(fifo, fifo + 1, --nheld * sizeof(fifo[0]));
	}
	assert_int_equal(chirp_ring_peek(f.out_c, &b), -EAGAIN);
	struct chirp_ring_stats rst;
	assert_int_equal(chirp_ring_stats(f.out_c, &rst), 0);
	assert_int_equal(rst.committed, delivered);
	assert_int_equal(rst.overruns, drops);
	/* the file: every CPI its queue had room for, whole and in input
	 * order; the others counted (written + dropped = every CPI) */
	WAIT_UNTIL(counter(&f, ST_OUTPUT_FILE_BYTES) + counter(&f, ST_OUTPUT_FILE_DROPPED_BYTES) ==
		   total * cpi_bytes);
	uint64_t written = total - counter(&f, ST_OUTPUT_FILE_DROPS), k = 0;
	assert_int_equal(counter(&f, ST_OUTPUT_FILE_ERRORS), 0);
	assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)(written * cpi_bytes));
	for (uint64_t w = 0; w < written; w++, k++) {
		assert_int_equal(pread(fd, buf, cpi_bytes, (off_t)(w * cpi_bytes)),
				 (ssize_t)cpi_bytes);
		while (k < total && cpi_error(buf, copy + k * cpi_floats, &f) >= 1e-4)
			k++;   /* dropped from the file */
		assert_true(k < total);
	}
	fx_close(&f);
	close(fd);
	free(copy);
	free(buf);
}

static void test_gen_rejects_mismatch(void **state)
{
	(void)state;
	struct fx f;
	char err[256];
	struct chirp_ring_geometry g = { C, P, R + 1, CHIRP_RING_CF32, 4, 25e6 };
	char name[64];
	struct chirp_ring *other;

	fx_open(&f, 4, 4);
	snprintf(name, sizeof(name), "/test-pipeline-%d-x", (int)getpid());
	other = chirp_ring_create(name, &g, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	assert_non_null(other);
	assert_null(pipeline_gen_create(f.in_c, other, f.pc, -1, -1, err, sizeof(err)));
	assert_non_null(strstr(err, "output ring"));
	assert_null(pipeline_gen_create(NULL, f.out_p, f.pc, -1, -1, err, sizeof(err)));
	chirp_ring_detach(other);
	chirp_ring_unlink(name);
	fx_close(&f);
}

#define AT(f, d) { #f "@depth" #d, f, set_depth##d, NULL, NULL }

/* ---- a data thread that stalls: counted and charged to its CPIs ------- */

/*
 * A data thread that blocks before each CPI's record (the test hook
 * CHIRP_PIPELINE_TEST_RETIRE_MS: a sleep where a blocking call would be).
 * Every CPI's record says it was delayed by a stall of the data thread,
 * "blocked" (it slept in a call), noticed before the record ("retire"),
 * and data_stalls counts them. Only lower bounds are asserted.
 */
static void test_stall_recorded(void **state)
{
	(void)state;
	enum { N = 4 };
	struct trace_cpi r[N];
	struct fx f;

	assert_int_equal(setenv("CHIRP_PIPELINE_TEST_RETIRE_MS", "20", 1), 0);
	fx_open(&f, 8, 8);
	fx_start(&f);
	assert_int_equal(unsetenv("CHIRP_PIPELINE_TEST_RETIRE_MS"), 0);
	WAIT_UNTIL(pipeline_state(f.pl) == PIPE_RUNNING);
	for (unsigned k = 0; k < N; k++)
		assert_int_equal(produce(&f, k, NULL), 0);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);
	WAIT_UNTIL(trace_total(f.tr) == N);
	assert_int_equal(trace_read(f.tr, r, N), N);
	for (unsigned k = 0; k < N; k++) {
		assert_true(r[k].flags & TRACE_DELIVERED);
		assert_true(r[k].stall_ns >= 5000000);
		assert_int_equal(r[k].stall_kind, STALL_BLOCKED);
		assert_int_equal(r[k].stall_where, TW_RETIRE);
		assert_true(r[k].stall_cpu_ns < r[k].stall_ns / 2);
	}
	assert_true(counter(&f, ST_DATA_STALLS) >= N);
	fx_close(&f);
}

/* ---- radar modes per CPI ------------------------------------------------ */

/* Three modes of different waveforms and lengths under ids that are not
 * 0, 1, 2 in order: each CPI must get its own mode's filter. */
#define NMODES 3
static const unsigned mode_ids[NMODES] = { 0, 7, 3 };

struct modes_fx {
	float *ref[NMODES];
	struct pc_mode m[NMODES];
};

static struct pc *make_pc_modes(struct modes_fx *mf, const unsigned *ids, unsigned n,
				unsigned depth, char *err, size_t len)
{
	struct pc_params p;

	for (unsigned i = 0; i < n; i++) {
		struct wf_params w;

		wf_params_init(&w);
		w.sample_rate_hz = 25e6;
		w.window = WIN_HAMMING;
		if (i % 3 == 0) {
			w.type = WF_LFM;
			w.bandwidth_hz = 8e6;
			w.pulse_width_s = 1.24e-6;       /* L = 31 */
		} else if (i % 3 == 1) {
			w.type = WF_LFM;
			w.bandwidth_hz = 3e6;
			w.pulse_width_s = 2.2e-6;        /* L = 55 */
			w.window = WIN_RECT;
		} else {
			w.type = WF_BARKER13;
			w.chip_samples = 4;              /* L = 52 */
			w.window = WIN_RECT;
		}
		free(mf->ref[i]);
		mf->ref[i] = NULL;
		if (wf_build(&w, R, &mf->ref[i], &mf->m[i].ref_len, err, len) < 0)
			return NULL;
		mf->m[i].id = ids[i];
		mf->m[i].ref = mf->ref[i];
	}
	pc_params_init(&p);
	p.channels = C; p.pulses = P; p.samples = R;
	p.in_format = PC_FMT_CF32;
	p.out_mode = PC_OUT_COMPLEX;
	p.normalize = PC_NORM_NOISE;
	p.modes = mf->m;
	p.nmodes = n;
	p.backend = PC_BACKEND_CPU;
	p.cpu_threads = 1;
	p.cpu_depth = depth;
	return pc_create(&p, err, len);
}

static void modes_free(struct modes_fx *mf)
{
	for (unsigned i = 0; i < NMODES; i++)
		free(mf->ref[i]);
}

/* The fixture's pc replaced by one with the modes of mf (before fx_start). */
static void fx_use_modes(struct fx *f, struct modes_fx *mf, const unsigned *ids, unsigned n)
{
	char err[256];
	struct pc *pc = make_pc_modes(mf, ids, n, g_depth, err, sizeof(err));

	if (!pc) fail_msg("pc with modes: %s", err);
	pipeline_gen_destroy(f->gen);
	pc_destroy(f->pc);
	f->pc = pc;
	f->gen = pipeline_gen_create(f->in_c, f->out_p, f->pc, -1, -1, err, sizeof(err));
	if (!f->gen) fail_msg("gen: %s", err);
}

/* Commit CPI k of mode m (keeping a copy of its input). */
static void produce_mode(struct fx *f, uint64_t k, uint32_t m, float *copy)
{
	void *pl;
	int ret;

	while ((ret = chirp_ring_reserve(f->in_p, &pl)) == -ENOBUFS)
		chirp_ring_wait(f->in_p, 1000000);
	assert_int_equal(ret, 0);
	fill_cpi(pl, k);
	memcpy(copy, pl, sizeof(float) * 2 * C * P * R);
	assert_int_equal(chirp_ring_commit_mode(f->in_p, 1000000000ull + k, k * (uint64_t)P * R,
						0, m), 0);
}

/* Relative L2 error of one output CPI against the direct correlation with h. */
static double mode_error(const float *in, const float *out, const float *h, size_t L)
{
	double complex y[R];
	double num = 0, den = 0;

	for (unsigned row = 0; row < C * P; row++) {
		reference(in + (size_t)row * 2 * R, h, L, y);
		for (unsigned n = 0; n < R; n++) {
			double complex o = out[2 * (row * R + n)] + I * out[2 * (row * R + n) + 1];

			num += cabs(o - y[n]) * cabs(o - y[n]);
			den += cabs(y[n]) * cabs(y[n]);
		}
	}
	return sqrt(num / den);
}

/*
 * CPIs of modes 0, 7, 3 interleaved (the mode changes every CPI) with CPIs
 * of modes the pc does not have (5, and 64: beyond any id) among them.
 * The input ring holds every CPI before the data thread starts, so with
 * depth > 1 an unknown CPI is taken while CPIs before it are still in the
 * backend. Each result carries its input's mode and matches the direct
 * correlation with that mode's reference; the unknown ones are in their
 * place, flagged UNKNOWN_MODE and zeroed; nothing is lost or reordered;
 * counters and the flight recorder agree.
 */
static void test_modes_interleaved_unknown(void **state)
{
	(void)state;
	struct fx f;
	struct modes_fx mf;
	enum { N = 40 };
	static float copy[N][2 * C * P * R];
	uint32_t mode[N];
	unsigned per_mode[NMODES] = { 0 }, unknown = 0;
	struct trace_cpi r[N];
	static struct stats_snapshot s;

	memset(&mf, 0, sizeof(mf));
	fx_open(&f, 64, 64);
	fx_use_modes(&f, &mf, mode_ids, NMODES);
	for (unsigned k = 0; k < N; k++) {
		mode[k] = mode_ids[k % NMODES];
		if (k == 9 || k == 10 || k == 22)
			mode[k] = 5;
		if (k == 31)
			mode[k] = 64;
		produce_mode(&f, k, mode[k], copy[k]);
	}
	fx_start(&f);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);
	for (unsigned k = 0; k < N; k++) {
		struct chirp_ring_block b;
		int idx = -1;

		for (unsigned i = 0; i < NMODES; i++)
			if (mode_ids[i] == mode[k])
				idx = (int)i;
		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(b.first_sample, (uint64_t)k * P * R);
		assert_int_equal(b.timestamp_ns, 1000000000ull + k);
		assert_int_equal(b.mode, mode[k]);
		if (idx < 0) {
			const float *o = b.payload;

			assert_true(b.flags & CHIRP_RING_UNKNOWN_MODE);
			for (size_t i = 0; i < 2u * C * P * R; i++)
				assert_true(isnan(o[i]));
			unknown++;
		} else {
			double e = mode_error(copy[k], b.payload, mf.ref[idx], mf.m[idx].ref_len);

			assert_false(b.flags & CHIRP_RING_UNKNOWN_MODE);
			if (e >= 1e-4)
				fail_msg("CPI %u of mode %u: relative error %g", k, mode[k], e);
			/* and not what another mode's filter makes */
			assert_true(mode_error(copy[k], b.payload, mf.ref[(idx + 1) % NMODES],
					      mf.m[(idx + 1) % NMODES].ref_len) > 0.1);
			per_mode[idx]++;
		}
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}
	WAIT_UNTIL(in_released(&f) == N);
	snap(&f, &s);
	assert_int_equal(s.counter[ST_CPIS_IN], N);
	assert_int_equal(s.counter[ST_CPIS_OUT], N);
	assert_int_equal(s.counter[ST_UNKNOWN_MODE_CPIS], unknown);
	assert_int_equal(unknown, 4);
	assert_int_equal(s.counter[ST_SAMPLES_IN], (uint64_t)(N - unknown) * C * P * R);
	assert_int_equal(s.counter[ST_OUTPUT_DROPS], 0);
	assert_int_equal(s.counter[ST_SEQUENCE_GAPS], 0);
	assert_int_equal(s.stage_count[STG_COMPUTE], N - unknown);
	for (unsigned i = 0; i < NMODES; i++)
		assert_int_equal(s.mode_cpis[mode_ids[i]], per_mode[i]);
	for (unsigned id = 0; id < STATS_MAX_MODES; id++)
		if (id != 0 && id != 7 && id != 3)
			assert_int_equal(s.mode_cpis[id], 0);
	assert_int_equal(pipeline_unknown_mode_last(f.pl), 64 + 1);
	WAIT_UNTIL(trace_total(f.tr) == N);
	assert_int_equal(trace_read(f.tr, r, N), N);
	for (unsigned k = 0; k < N; k++) {
		int unk = mode[k] == 5 || mode[k] == 64;

		assert_int_equal(r[k].mode, mode[k]);
		assert_int_equal(r[k].first_sample, (uint64_t)k * P * R);
		assert_true(r[k].flags & TRACE_DELIVERED);
		assert_int_equal(!!(r[k].flags & TRACE_UNKNOWN_MODE), unk);
		if (unk) {
			assert_int_equal(r[k].t[TR_SUBMIT], 0);
			assert_int_equal(r[k].t[TR_OUTPUT_DONE], 0);
		}
	}
	fx_close(&f);
	modes_free(&mf);
}

/*
 * A swap to a pc whose modes differ (7 removed, 5 added) while CPIs of
 * modes 0, 5, 7 flow: a CPI is processed with the modes of the generation
 * that took it, never lost: before the swap 5 is unknown and 7 known,
 * after it the other way round; every CPI is delivered once, in order.
 */
static void test_modes_swap(void **state)
{
	(void)state;
	struct fx f;
	struct modes_fx a, b;
	static const unsigned ids_a[2] = { 0, 7 }, ids_b[2] = { 0, 5 };
	static const uint32_t seq_modes[3] = { 0, 5, 7 };
	enum { N = 60 };
	static float copy[N][2 * C * P * R];
	struct pipeline_gen *ng, *old = NULL;
	struct pc *npc;
	char err[256];
	unsigned unknown = 0;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	fx_open(&f, 64, 64);
	fx_use_modes(&f, &a, ids_a, 2);
	fx_start(&f);
	for (unsigned k = 0; k < N / 2; k++)
		produce_mode(&f, k, seq_modes[k % 3], copy[k]);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N / 2);
	npc = make_pc_modes(&b, ids_b, 2, g_depth, err, sizeof(err));
	if (!npc) fail_msg("pc: %s", err);
	ng = pipeline_gen_create(f.in_c, f.out_p, npc, -1, -1, err, sizeof(err));
	if (!ng) fail_msg("gen: %s", err);
	assert_int_equal(pipeline_swap(f.pl, ng, &old, 10000, err, sizeof(err)), 0);
	pipeline_gen_destroy(old);
	pc_destroy(f.pc);
	f.pc = npc;
	f.gen = ng;
	for (unsigned k = N / 2; k < N; k++)
		produce_mode(&f, k, seq_modes[k % 3], copy[k]);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);
	for (unsigned k = 0; k < N; k++) {
		struct chirp_ring_block blk;
		uint32_t m = seq_modes[k % 3];
		int after = k >= N / 2;
		int unk = (!after && m == 5) || (after && m == 7);

		assert_int_equal(chirp_ring_peek(f.out_c, &blk), 0);
		assert_int_equal(blk.first_sample, (uint64_t)k * P * R);
		assert_int_equal(blk.mode, m);
		assert_int_equal(!!(blk.flags & CHIRP_RING_UNKNOWN_MODE), unk);
		if (unk) {
			unknown++;
		} else {
			const struct modes_fx *mf = after ? &b : &a;
			unsigned i = m == 0 ? 0 : 1;

			assert_true(mode_error(copy[k], blk.payload, mf->ref[i], mf->m[i].ref_len) < 1e-4);
		}
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}
	assert_int_equal(counter(&f, ST_UNKNOWN_MODE_CPIS), unknown);
	assert_int_equal(counter(&f, ST_CPIS_IN), N);
	fx_close(&f);
	modes_free(&a);
	modes_free(&b);
}

/* slots = auto: buffer_ms at the capacity rounded up to one slot (no power
 * of two), within the minimum, 65536 and the memory budget. */
static void test_auto_slots(void **state)
{
	(void)state;
	const uint64_t cpi = 4ull * 128 * 4096 * 8;   /* 4x128x4096 cf32: 16 MiB */

	/* 100 ms at 2700 CPI/s: 270 slots (4.2 GiB), not 512 (8 GiB) */
	assert_int_equal(pipeline_auto_slots(100, 2700, cpi, 0, 16), 270);
	assert_int_equal(pipeline_auto_slots(100, 2701, cpi, 0, 16), 271);   /* 270.1 */
	assert_int_equal(pipeline_auto_slots(100, 2699.99, cpi, 0, 16), 270);
	/* never below the minimum, nor 2 */
	assert_int_equal(pipeline_auto_slots(100, 10, cpi, 0, 16), 16);
	assert_int_equal(pipeline_auto_slots(1, 10, cpi, 0, 0), 2);
	/* capacity unknown (0): the minimum */
	assert_int_equal(pipeline_auto_slots(100, 0, cpi, 0, 16), 16);
	/* at most 65536 */
	assert_int_equal(pipeline_auto_slots(10000, 1e7, 64, 0, 16), 65536);
	/* memory budget: as many as fit, at least 2 */
	assert_int_equal(pipeline_auto_slots(100, 2700, cpi, 100 * cpi + cpi / 2, 16), 100);
	assert_int_equal(pipeline_auto_slots(100, 2700, cpi, cpi, 16), 2);
	assert_int_equal(pipeline_auto_slots(100, 2700, cpi, 270 * cpi, 16), 270);
	/* the result is a valid ring */
	for (double cps = 1; cps < 1e6; cps *= 3.7) {
		unsigned n = pipeline_auto_slots(50, cps, cpi, 0, 16);

		assert_true(n >= 16 && n <= 65536);
		assert_true((double)n >= 50e-3 * cps || n == 65536);
		assert_true((double)n < 50e-3 * cps + 1 || n == 16);
	}
}

/*
 * Beams with the pointing per CPI (chirp/pc.h, BEAMS): a pc forming B = C
 * beams of a two-element half-wave array (a fan 0.5 apart in u, rect
 * taper), CPIs committed with a pointing that changes every CPI, some of
 * which the beams cannot take (a beam outside the visible region, NaN,
 * beyond 90 degrees). The input ring holds them all before the data
 * thread starts, so at depth > 1 a CPI is submitted while CPIs of other
 * pointings are in the backend. Each good CPI's result equals beams
 * formed in double with its own pointing's weights, then the direct
 * correlation, and carries its pointing; each bad one is in its place,
 * flagged BAD_POINTING, every value NaN, counted; nothing is lost or
 * reordered, and status sees the newest pointing.
 */
#define BEAM_CARRIER_HZ 3e9
#define BEAM_LAMBDA (299792458.0 / BEAM_CARRIER_HZ)

static struct pc *make_pc_beams(struct fx *f, unsigned depth, char *err, size_t len)
{
	static const double pos[2 * 3] = { -BEAM_LAMBDA / 4, 0, 0, BEAM_LAMBDA / 4, 0, 0 };
	struct wf_params w;
	struct pc_params p;

	wf_params_init(&w);
	w.type = WF_LFM;
	w.sample_rate_hz = 25e6;
	w.bandwidth_hz = 8e6;
	w.pulse_width_s = 1.24e-6;
	w.window = WIN_HAMMING;
	free(f->ref);
	f->ref = NULL;
	if (wf_build(&w, R, &f->ref, &f->ref_len, err, len) < 0)
		return NULL;
	pc_params_init(&p);
	p.channels = C; p.pulses = P; p.samples = R;
	p.ref = f->ref;
	p.ref_len = f->ref_len;
	p.backend = PC_BACKEND_CPU;
	p.cpu_threads = 1;
	p.cpu_depth = depth;
	p.beams.mode = PC_BEAMS_CONVENTIONAL;
	p.beams.count = C;
	p.beams.positions_m = pos;
	p.beams.carrier_hz = BEAM_CARRIER_HZ;
	p.beams.fan_spacing_u = 0.5;
	return pc_create(&p, err, len);
}

/* Relative L2 error of a beamformed, compressed CPI against the double
 * reference for pointing az (degrees, el 0). */
static double beams_error(const float *in, const float *out, const float *h, size_t L,
			  double az)
{
	double up = sin(az * M_PI / 180), num = 0, den = 0;
	static float y[2 * R];
	double complex ref[R];

	for (unsigned b = 0; b < C; b++) {
		double u = (b - 0.5) * 0.5 + up;
		double complex wgt[C];

		for (unsigned c = 0; c < C; c++) {
			double x = (c - 0.5) * BEAM_LAMBDA / 2;

			wgt[c] = cexp(-I * 2 * M_PI / BEAM_LAMBDA * x * u) / C;
		}
		for (unsigned p = 0; p < P; p++) {
			for (unsigned n = 0; n < R; n++) {
				double complex acc = 0;

				for (unsigned c = 0; c < C; c++) {
					const float *x = in + 2 * (((size_t)c * P + p) * R + n);

					acc += wgt[c] * (x[0] + I * x[1]);
				}
				y[2 * n] = (float)creal(acc);   /* the beams in float, as the
								   backend's input to compression */
				y[2 * n + 1] = (float)cimag(acc);
			}
			reference(y, h, L, ref);
			for (unsigned n = 0; n < R; n++) {
				const float *o = out + 2 * (((size_t)b * P + p) * R + n);
				double complex d = o[0] + I * o[1] - ref[n];

				num += creal(d) * creal(d) + cimag(d) * cimag(d);
				den += cabs(ref[n]) * cabs(ref[n]);
			}
		}
	}
	return sqrt(num / den);
}

static void test_beams_pointing(void **state)
{
	(void)state;
	struct fx f;
	enum { N = 24 };
	static float copy[N][2 * C * P * R];
	const float point[6] = { 0, 10, -20, 80 /* beam 1 at u 1.23 */, 5, NAN };
	char err[256];
	unsigned bad = 0;
	double az, el;

	fx_open(&f, 64, 64);
	pipeline_gen_destroy(f.gen);
	pc_destroy(f.pc);
	f.pc = make_pc_beams(&f, g_depth, err, sizeof(err));
	if (!f.pc) fail_msg("pc with beams: %s", err);
	f.gen = pipeline_gen_create(f.in_c, f.out_p, f.pc, -1, -1, err, sizeof(err));
	if (!f.gen) fail_msg("gen: %s", err);
	for (unsigned k = 0; k < N; k++) {
		struct chirp_ring_cpi cpi = {
			.timestamp_ns = 1000000000ull + k, .first_sample = k * (uint64_t)P * R,
			.pointing_az_deg = k == 16 ? 95.0f : point[k % 6], .pointing_el_deg = 0,
		};
		void *pl;

		assert_int_equal(chirp_ring_reserve(f.in_p, &pl), 0);
		fill_cpi(pl, k);
		memcpy(copy[k], pl, sizeof(copy[k]));
		assert_int_equal(chirp_ring_commit_cpi(f.in_p, &cpi), 0);
	}
	fx_start(&f);
	WAIT_UNTIL(counter(&f, ST_CPIS_OUT) == N);
	for (unsigned k = 0; k < N; k++) {
		struct chirp_ring_block b;
		float pa = k == 16 ? 95.0f : point[k % 6];
		int is_bad = k == 16 || k % 6 == 3 || k % 6 == 5;

		assert_int_equal(chirp_ring_peek(f.out_c, &b), 0);
		assert_int_equal(b.first_sample, (uint64_t)k * P * R);
		if (isnan(pa))
			assert_true(isnan(b.pointing_az_deg));
		else
			assert_true(b.pointing_az_deg == pa);
		if (is_bad) {
			const float *o = b.payload;

			assert_true(b.flags & CHIRP_RING_BAD_POINTING);
			for (size_t i = 0; i < 2u * C * P * R; i++)
				assert_true(isnan(o[i]));
			bad++;
		} else {
			double e = beams_error(copy[k], b.payload, f.ref, f.ref_len, pa);

			assert_false(b.flags & CHIRP_RING_BAD_POINTING);
			if (e >= 1e-5)
				fail_msg("CPI %u, pointing %g: relative error %g", k, pa, e);
			/* and not what the previous CPI's weights make */
			if (pa != point[(k + 5) % 6] && !isnan(point[(k + 5) % 6]) && (k + 5) % 6 != 3)
				assert_true(beams_error(copy[k], b.payload, f.ref, f.ref_len,
							point[(k + 5) % 6]) > 1e-2);
		}
		assert_int_equal(chirp_ring_release(f.out_c), 0);
	}
	WAIT_UNTIL(in_released(&f) == N);
	assert_int_equal(counter(&f, ST_BAD_POINTING_CPIS), bad);
	assert_int_equal(bad, 9);
	assert_int_equal(counter(&f, ST_SEQUENCE_GAPS), 0);
	pipeline_last_pointing(f.pl, &az, &el);
	assert_true(az == 5.0 && el == 0.0);   /* CPI 22, the newest submitted */
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		AT(test_beams_pointing, 1),
		AT(test_beams_pointing, 2),
		AT(test_beams_pointing, 4),
		AT(test_order_values_timestamps, 1),
		AT(test_order_values_timestamps, 2),
		AT(test_order_values_timestamps, 4),
		AT(test_slow_consumer_never_stalls, 1),
		AT(test_slow_consumer_never_stalls, 2),
		AT(test_slow_consumer_never_stalls, 4),
		AT(test_stalled_consumer_exact, 1),
		AT(test_stalled_consumer_exact, 2),
		AT(test_stalled_consumer_exact, 4),
		AT(test_pause_gaps_overruns, 1),
		AT(test_pause_gaps_overruns, 4),
		AT(test_nonfinite_flagged, 1),
		AT(test_nonfinite_flagged, 4),
		AT(test_swap_under_load_no_loss, 1),
		AT(test_swap_under_load_no_loss, 2),
		AT(test_swap_keeps_file, 1),
		AT(test_swap_keeps_file, 4),
		AT(test_park_and_new_input_ring, 1),
		AT(test_park_and_new_input_ring, 4),
		AT(test_redelivered_exactly_once, 1),
		AT(test_redelivered_exactly_once, 4),
		AT(test_stop_drains_and_notifies, 2),
		AT(test_gen_rejects_mismatch, 1),
		AT(test_trace_records, 1),
		AT(test_trace_records, 4),
		AT(test_stall_recorded, 1),
		AT(test_stall_recorded, 2),
		AT(test_modes_interleaved_unknown, 1),
		AT(test_modes_interleaved_unknown, 2),
		AT(test_modes_interleaved_unknown, 4),
		AT(test_modes_swap, 1),
		AT(test_modes_swap, 4),
		cmocka_unit_test(test_auto_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
