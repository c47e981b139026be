/* SPDX-License-Identifier: Apache-2.0 */
/*
 * copy_floor.cu — the lossless floor of chirpd's GPU data path: the copies
 * alone, no chirpd, no FFT, paced as the producer paces chirpd and, like a
 * lossless pipeline, never skipping a CPI.
 *
 * Paced mode (--rate): CPI k is due at t0 + k / rate on an absolute
 * CLOCK_MONOTONIC schedule that never restarts. Every due CPI is queued at
 * once: its input bytes host->device and its output bytes device->host, in
 * --chunks pieces over --streams streams (chunk i on stream i % streams, its
 * H2D then its D2H), from cudaHostRegister'ed MAP_SHARED slots (what a
 * ring's data region is) taken in turn, one event per stream after its last
 * copy. Completion is polled (cudaEventQuery, oldest CPI first), as chirpd's
 * data thread polls; with nothing in flight the loop sleeps until the next
 * due time. Latency of a CPI = its completion − the time it was DUE, so a
 * late wake-up or a backlog is counted exactly as a lossless pipeline pays
 * it. At most min(--slots, --out-slots) CPIs are in flight (a ring holds
 * that many); a CPI that falls due while they are all taken is lost (the
 * producer would find the input ring full), counted, never queued.
 *
 *   copy_floor --in-bytes N --out-bytes M --rate CPI_PER_S [--seconds 10]
 *              [--warmup 2] [--chunks 4] [--streams 2] [--slots 16]
 *              [--out-slots N] [--gpu 0] [--raw FILE]
 *   copy_floor --self-check [--in-bytes N] [--slots 1]
 *   copy_floor --limit --in-bytes N --out-bytes M [--seconds 10] [--start-at UNIX_S]
 *              [--chunks 4] [--streams 2] [--gpu 0|0000:41:00.0]
 *              [--row-bytes N --pitch P] [--slots 1]
 *
 * --gpu takes a CUDA device index or a PCI bus id (nvidia-smi's
 * "00000000:41:00.0" or sysfs's "0000:41:00.0"): CUDA's device order need
 * not be nvidia-smi's, so scripts that address GPUs by bus id use it here too.
 *
 * Paced output (stdout), one line, key=value, microseconds (nearest-rank),
 * over the CPIs due inside the measured window (after --warmup):
 *   copy rate=… in_bytes=… out_bytes=… chunks=… streams=… slots=… due=… n=…
 *        lost=… max_inflight=… p50_us=… p90_us=… p99_us=… p999_us=… max_us=…
 * (due: CPIs due in the window; n: those delivered; lost: those dropped on
 * a full set of slots; --raw FILE: n latencies, one per line.)
 * --limit: the copy limit of this GPU for these byte counts, both directions
 * at once: CPIs enqueued back to back through the same chunked path (no
 * pacing, no per-CPI wait: a synchronisation every 4 CPIs keeps the queue
 * full and bounded) for --seconds, timed by the host clock. --start-at
 * sleeps until that CLOCK_REALTIME instant (seconds since the epoch) after
 * set-up and warm-up, so several copy_floor processes, one per GPU, measure
 * over the same interval (scripts/bench-multi-gpu.sh: each GPU's limit
 * while the others copy too); late_start=1 says set-up ran past it. One line:
 *   copylimit gpu=… bus=… in_bytes=… out_bytes=… cpis=… seconds=…
 *             cpi_per_s=… in_gbps=… out_gbps=… start_unix=… late_start=0|1
 * --row-bytes N --pitch P (--limit): the H2D is a cudaMemcpy2DAsync of
 * in_bytes / N rows of N bytes into device rows P bytes apart, as chirpd's
 * cf32 H2D lands in its pitched FFT rows (chunks then cut whole rows); the
 * copylimit line ends with row_bytes=N pitch=P (0 0 for linear copies).
 * --slots N: N host buffers of each direction (--out-slots: of the output),
 * taken in turn CPI by CPI as a ring's slots are, so that the DMA walks as
 * many registered bytes as chirpd's rings do (default 16 paced, else 1).
 * --self-check: copies a pattern through the same chunked path with a
 * device-to-device copy in between (out = in) and compares the bytes (with
 * --slots, a different pattern per slot, every slot);
 * prints "copy_floor: self-check ok" or fails.
 * Exit 0; 1 on a CUDA or other error; 2 usage; 77 no usable CUDA device.
 */
#include <cuda_runtime.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench.h"

#define CK(call)                                                               \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "copy_floor: %s:%d: %s: %s\n", __FILE__, \
				__LINE__, #call, cudaGetErrorString(e_));      \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define MAX_STREAMS 8
#define MAX_SLOTS 1024u

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "copy_floor: mmap %zu bytes: %s\n", len, strerror(errno));
		exit(1);
	}
	return p;
}

struct path {
	int chunks, nstreams;
	size_t in_bytes, out_bytes;
	size_t row_bytes, pitch;  /* 2D H2D (--row-bytes, --pitch); 0: linear */
	unsigned slots, slot;     /* input host buffers taken in turn; the next */
	unsigned out_slots, out_slot;   /* output host buffers; the next */
	unsigned char *h_in_all, *h_out_all;   /* slots x in_bytes, out_slots x out_bytes */
	unsigned char *h_in, *h_out, *d_in, *d_out;   /* h_*: this CPI's slots */
	cudaStream_t s[MAX_STREAMS];
};

/* Bytes [*off, *off + *len) of chunk i of total (the last takes the rest). */
static void chunk(size_t total, int chunks, int i, size_t *off, size_t *len)
{
	size_t per = total / (size_t)chunks;

	*off = per * (size_t)i;
	*len = i == chunks - 1 ? total - *off : per;
}

/* One CPI: every chunk's H2D then D2H on its stream (plus, for the
 * self-check, a D2D in between), queued only. */
static void enqueue_cpi(struct path *p, int d2d)
{
	/* The next slots, as a ring's consumer and producer take them: the DMA
	 * walks as many registered bytes as chirpd's rings hold. */
	p->h_in = p->h_in_all + (size_t)p->slot * p->in_bytes;
	p->h_out = p->h_out_all + (size_t)p->out_slot * p->out_bytes;
	p->slot = (p->slot + 1) % p->slots;
	p->out_slot = (p->out_slot + 1) % p->out_slots;
	for (int i = 0; i < p->chunks; i++) {
		cudaStream_t s = p->s[i % p->nstreams];
		size_t oi, li, oo, lo;

		chunk(p->out_bytes, p->chunks, i, &oo, &lo);
		chunk(p->in_bytes, p->chunks, i, &oi, &li);
		if (p->pitch) {   /* whole rows per chunk, into pitched device rows */
			size_t r0, nr;

			chunk(p->in_bytes / p->row_bytes, p->chunks, i, &r0, &nr);
			CK(cudaMemcpy2DAsync(p->d_in + r0 * p->pitch, p->pitch,
					     p->h_in + r0 * p->row_bytes, p->row_bytes, p->row_bytes,
					     nr, cudaMemcpyHostToDevice, s));
		} else {
			CK(cudaMemcpyAsync(p->d_in + oi, p->h_in + oi, li, cudaMemcpyHostToDevice, s));
		}
		if (d2d)   /* out = in, chunk by chunk (self-check: in_bytes == out_bytes) */
			CK(cudaMemcpyAsync(p->d_out + oo, p->d_in + oi, lo, cudaMemcpyDeviceToDevice, s));
		CK(cudaMemcpyAsync(p->h_out + oo, p->d_out + oo, lo, cudaMemcpyDeviceToHost, s));
	}
}

static void sync_all(struct path *p)
{
	for (int i = 0; i < p->nstreams; i++)
		CK(cudaStreamSynchronize(p->s[i]));
}

/* One CPI queued, then waited for on every stream. */
static void one_cpi(struct path *p, int d2d)
{
	enqueue_cpi(p, d2d);
	sync_all(p);
}

/* Sleep until the realtime instant start_at (seconds since the epoch);
 * *late = 1 when it had passed already. 0, or 1 on a clock error. */
static int sleep_until_unix(double start_at, int *late)
{
	struct timespec ts = { (time_t)start_at, (long)((start_at - floor(start_at)) * 1e9) };
	struct timespec now;
	int r;

	if (clock_gettime(CLOCK_REALTIME, &now) < 0) {
		fprintf(stderr, "copy_floor: clock_gettime: %s\n", strerror(errno));
		return 1;
	}
	*late = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 > start_at;
	do
		r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
	while (r == EINTR);
	if (r) {
		fprintf(stderr, "copy_floor: clock_nanosleep: %s\n", strerror(r));
		return 1;
	}
	return 0;
}

/* --limit: back to back for `seconds`, from `start_at` (CLOCK_REALTIME
 * seconds; 0 = now). Prints the copylimit line. */
static int copy_limit(struct path *p, int dev, double seconds, double start_at)
{
	char bus[32] = "";
	uint64_t n = 0, t0, t1, end;
	double start_unix, el;
	struct timespec now;
	int late = 0;

	CK(cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), dev));
	for (int k = 0; k < 20; k++)   /* warm up: first-use costs, clocks */
		one_cpi(p, 0);
	if (start_at > 0 && sleep_until_unix(start_at, &late) != 0)
		return 1;
	clock_gettime(CLOCK_REALTIME, &now);
	start_unix = (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
	t0 = mono_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	do {
		for (int k = 0; k < 4; k++)
			enqueue_cpi(p, 0);
		sync_all(p);
		n += 4;
		t1 = mono_ns();
	} while (t1 < end);
	el = (double)(t1 - t0) / 1e9;
	printf("copylimit gpu=%d bus=%s in_bytes=%zu out_bytes=%zu cpis=%llu seconds=%.3f "
	       "cpi_per_s=%.2f in_gbps=%.3f out_gbps=%.3f start_unix=%.3f late_start=%d "
	       "row_bytes=%zu pitch=%zu\n",
	       dev, bus, p->in_bytes, p->out_bytes, (unsigned long long)n, el, (double)n / el,
	       (double)n * (double)p->in_bytes / el / 1e9, (double)n * (double)p->out_bytes / el / 1e9,
	       start_unix, late, p->row_bytes, p->pitch);
	return 0;
}

static double pct(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);

	if (!n)
		return NAN;
	i = i < 1 ? 0 : i - 1;
	return v[i < n ? i : n - 1];
}

/* The paced loop's state: CPIs in flight, oldest first (a FIFO of at most
 * `cap` entries, each with one event per stream and its due time), and what
 * the measured window counted. */
struct paced {
	cudaEvent_t (*ev)[MAX_STREAMS];
	uint64_t *due;
	unsigned cap, head, count, max_count;
	uint64_t open_ns, close_ns, ndue, lost;
	double *lat;
	size_t n, nmax;
};

/* Queue the CPI due at `due`, or count it lost when every slot is taken. */
static void paced_issue(struct path *p, struct paced *q, uint64_t due)
{
	int in_win = due >= q->open_ns;
	unsigned at;

	q->ndue += in_win;
	if (q->count == q->cap) {   /* the producer finds the ring full */
		q->lost += in_win;
		return;
	}
	at = (q->head + q->count) % q->cap;
	enqueue_cpi(p, 0);
	for (int i = 0; i < p->nstreams; i++)
		CK(cudaEventRecord(q->ev[at][i], p->s[i]));
	q->due[at] = due;
	if (++q->count > q->max_count)
		q->max_count = q->count;
}

/* Retire the CPIs whose copies have all completed, oldest first (in order,
 * as a ring is released). */
static void paced_retire(struct path *p, struct paced *q)
{
	while (q->count) {
		unsigned h = q->head;
		uint64_t end;

		for (int i = 0; i < p->nstreams; i++) {
			cudaError_t e = cudaEventQuery(q->ev[h][i]);

			if (e == cudaErrorNotReady)
				return;
			CK(e);
		}
		end = mono_ns();
		if (q->due[h] >= q->open_ns && q->n < q->nmax)
			q->lat[q->n++] = (double)(end - q->due[h]) / 1e3;
		q->head = (h + 1) % q->cap;
		q->count--;
	}
}

/* Sleep until the absolute CLOCK_MONOTONIC time t (ns). */
static int sleep_until_ns(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
	int r;

	do
		r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	while (r == EINTR);
	if (r)
		fprintf(stderr, "copy_floor: clock_nanosleep: %s\n", strerror(r));
	return r ? 1 : 0;
}

/* The paced loop: CPI k due at t0 + k / rate, never skipped, never
 * restarted (a late wake issues every CPI that fell due, each timed from
 * its own due time); polls while CPIs are in flight, sleeps otherwise. */
static int paced_run(struct path *p, struct paced *q, double rate, double warmup,
		     double seconds)
{
	double period_ns = 1e9 / rate;
	uint64_t t0, k = 0, next;

	for (int w = 0; w < 20; w++)   /* warm up: first-use costs, clocks */
		one_cpi(p, 0);
	t0 = mono_ns() + 1000000;
	q->open_ns = t0 + (uint64_t)(warmup * 1e9);
	q->close_ns = q->open_ns + (uint64_t)(seconds * 1e9);
	for (;;) {
		uint64_t now = mono_ns();

		/* retire first: a slot whose copies are done is free for the
		 * CPI falling due now, as a ring's released slot is */
		paced_retire(p, q);
		next = t0 + (uint64_t)((double)k * period_ns);
		while (next <= now && next < q->close_ns) {
			paced_issue(p, q, next);
			next = t0 + (uint64_t)((double)++k * period_ns);
		}
		if (next >= q->close_ns && !q->count)
			return 0;
		if (!q->count && next < q->close_ns && sleep_until_ns(next) != 0)
			return 1;
	}
}

static int paced_mode(struct path *p, double rate, double warmup, double seconds,
		      const char *raw)
{
	struct paced q;
	int rc = 1;

	memset(&q, 0, sizeof(q));
	q.cap = p->slots < p->out_slots ? p->slots : p->out_slots;
	q.nmax = (size_t)(rate * seconds * 1.1) + 16;
	q.ev = (cudaEvent_t (*)[MAX_STREAMS])calloc(q.cap, sizeof(*q.ev));
	q.due = (uint64_t *)calloc(q.cap, sizeof(*q.due));
	q.lat = (double *)calloc(q.nmax, sizeof(double));
	if (!q.ev || !q.due || !q.lat) {
		fprintf(stderr, "copy_floor: out of memory for %zu samples\n", q.nmax);
		goto out;
	}
	for (unsigned i = 0; i < q.cap; i++)
		for (int j = 0; j < p->nstreams; j++)
			CK(cudaEventCreateWithFlags(&q.ev[i][j], cudaEventDisableTiming));
	if (paced_run(p, &q, rate, warmup, seconds) != 0)
		goto out;
	if (raw) {
		FILE *rf = fopen(raw, "w");

		if (!rf) {
			fprintf(stderr, "copy_floor: %s: %s\n", raw, strerror(errno));
			goto out;
		}
		for (size_t i = 0; i < q.n; i++)
			fprintf(rf, "%.3f\n", q.lat[i]);
		if (fclose(rf) != 0) {
			fprintf(stderr, "copy_floor: writing %s: %s\n", raw, strerror(errno));
			goto out;
		}
	}
	qsort(q.lat, q.n, sizeof(double), cmp_d);
	printf("copy rate=%.2f in_bytes=%zu out_bytes=%zu chunks=%d streams=%d slots=%u due=%llu "
	       "n=%zu lost=%llu max_inflight=%u p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f "
	       "max_us=%.1f\n", rate, p->in_bytes, p->out_bytes, p->chunks, p->nstreams, q.cap,
	       (unsigned long long)q.ndue, q.n, (unsigned long long)q.lost, q.max_count,
	       pct(q.lat, q.n, 0.5), pct(q.lat, q.n, 0.9), pct(q.lat, q.n, 0.99),
	       pct(q.lat, q.n, 0.999), q.n ? q.lat[q.n - 1] : NAN);
	for (unsigned i = 0; i < q.cap; i++)
		for (int j = 0; j < p->nstreams; j++)
			CK(cudaEventDestroy(q.ev[i][j]));
	rc = 0;
out:
	free(q.ev);
	free(q.due);
	free(q.lat);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: copy_floor --in-bytes N --out-bytes M --rate CPI_PER_S [--seconds 10]\n"
		   "                  [--warmup 2] [--chunks 4] [--streams 2] [--slots 16]\n"
		   "                  [--out-slots N] [--gpu 0] [--raw FILE]\n"
		   "       copy_floor --limit --in-bytes N --out-bytes M [--seconds 10] [--start-at UNIX_S]\n"
		   "                  [--chunks 4] [--streams 2] [--gpu 0] [--slots 1]\n"
		   "                  [--row-bytes N --pitch P] (a 2D H2D into pitched rows)\n"
		   "       copy_floor --self-check [--in-bytes N] [--slots 1] [--gpu 0]\n"
		   "--gpu: a CUDA device index or a PCI bus id (0000:41:00.0); --slots, --out-slots:\n"
		   "host buffers taken in turn, as a ring's slots, 1..%u\n", MAX_SLOTS);
}

static int num(const char *s, double *v)
{
	char *e;

	errno = 0;
	*v = strtod(s, &e);
	return errno || e == s || *e || !isfinite(*v) || *v < 0 ? -1 : 0;
}

/* The command line; 0, or 2 on a usage error (printed). */
struct opts {
	double rate, seconds, warmup, start_at;
	const char *raw, *gpu;
	int self_check, limit;
};

static unsigned slot_arg(double v)
{
	return v < 1 || v > MAX_SLOTS || v != floor(v) ? MAX_SLOTS + 1 : (unsigned)v;
}

static int parse(int argc, char **argv, struct path *p, struct opts *o)
{
	double v = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *b = i + 1 < argc ? argv[i + 1] : NULL;
		int str = !strcmp(a, "--raw") || !strcmp(a, "--gpu");

		if (!strcmp(a, "--self-check")) { o->self_check = 1; continue; }
		if (!strcmp(a, "--limit")) { o->limit = 1; continue; }
		if (!b || (!str && num(b, &v) < 0))
			goto bad;
		i++;
		if (!strcmp(a, "--in-bytes")) p->in_bytes = (size_t)v;
		else if (!strcmp(a, "--out-bytes")) p->out_bytes = (size_t)v;
		else if (!strcmp(a, "--rate")) o->rate = v;
		else if (!strcmp(a, "--seconds")) o->seconds = v;
		else if (!strcmp(a, "--warmup")) o->warmup = v;
		else if (!strcmp(a, "--chunks")) p->chunks = (int)v;
		else if (!strcmp(a, "--streams")) p->nstreams = (int)v;
		else if (!strcmp(a, "--gpu")) o->gpu = b;
		else if (!strcmp(a, "--start-at")) o->start_at = v;
		else if (!strcmp(a, "--raw")) o->raw = b;
		else if (!strcmp(a, "--row-bytes")) p->row_bytes = (size_t)v;
		else if (!strcmp(a, "--pitch")) p->pitch = (size_t)v;
		/* 0 or too many: MAX_SLOTS + 1, refused below (0 means "not given") */
		else if (!strcmp(a, "--slots")) p->slots = slot_arg(v);
		else if (!strcmp(a, "--out-slots")) p->out_slots = slot_arg(v);
		else goto bad;
	}
	if (o->self_check) {
		if (!p->in_bytes)
			p->in_bytes = (size_t)4 * 128 * 4096 * 8 + 12345;   /* not a chunk multiple */
		p->out_bytes = p->in_bytes;
	}
	if (!p->slots)   /* not given: 16 paced (a small ring), else 1 */
		p->slots = (o->self_check || o->limit) ? 1 : 16;
	if (!p->out_slots)
		p->out_slots = p->slots;
	if (!p->in_bytes || !p->out_bytes || p->chunks < 1 || p->chunks > 64 || p->nstreams < 1 ||
	    p->nstreams > MAX_STREAMS || p->slots < 1 || p->slots > MAX_SLOTS ||
	    p->out_slots < 1 || p->out_slots > MAX_SLOTS ||
	    (!o->self_check && !o->limit && o->rate <= 0) ||
	    (!o->self_check && o->seconds <= 0) || (o->self_check && o->limit) ||
	    (!p->row_bytes != !p->pitch) ||
	    (p->pitch && (!o->limit || p->pitch < p->row_bytes || p->in_bytes % p->row_bytes != 0 ||
			  p->in_bytes / p->row_bytes < (size_t)p->chunks)))
		goto bad;
	return 0;
bad:
	usage(stderr);
	return 2;
}

/* --gpu as a device index or a PCI bus id; 0, 1 (CUDA error) or 2 (usage). */
static int pick_gpu(const char *arg, int ndev, int *gpu)
{
	double v;

	if (strchr(arg, ':')) {
		if (cudaDeviceGetByPCIBusId(gpu, arg) != cudaSuccess) {
			fprintf(stderr, "copy_floor: --gpu %s: cudaDeviceGetByPCIBusId: %s\n", arg,
				cudaGetErrorString(cudaGetLastError()));
			return 1;
		}
		return 0;
	}
	if (num(arg, &v) < 0 || v != floor(v) || v >= ndev) {
		fprintf(stderr, "copy_floor: --gpu %s: want a device index below %d or a PCI bus id\n",
			arg, ndev);
		return 2;
	}
	*gpu = (int)v;
	return 0;
}

/* Host slots (shared mappings registered in place, as chirpd registers its
 * rings), device buffers, streams. */
static void setup(struct path *p, int pattern)
{
	size_t in_all = p->slots * p->in_bytes, out_all = p->out_slots * p->out_bytes;

	p->h_in_all = (unsigned char *)map_shared(in_all);
	p->h_out_all = (unsigned char *)map_shared(out_all);
	if (pattern)   /* a different pattern per slot: the self-check tells them apart */
		for (size_t i = 0; i < in_all; i++)
			p->h_in_all[i] = (unsigned char)((i % p->in_bytes) * 131u + 7u +
							 (i / p->in_bytes) * 29u);
	else
		memset(p->h_in_all, 0x5a, in_all);
	memset(p->h_out_all, 0, out_all);
	CK(cudaHostRegister(p->h_in_all, in_all, cudaHostRegisterDefault));
	CK(cudaHostRegister(p->h_out_all, out_all, cudaHostRegisterDefault));
	p->h_in = p->h_in_all;
	p->h_out = p->h_out_all;
	CK(cudaMalloc((void **)&p->d_in, p->pitch ? p->in_bytes / p->row_bytes * p->pitch
						   : p->in_bytes));
	CK(cudaMalloc((void **)&p->d_out, p->out_bytes));
	CK(cudaMemset(p->d_out, 0, p->out_bytes));
	for (int i = 0; i < p->nstreams; i++)
		CK(cudaStreamCreateWithFlags(&p->s[i], cudaStreamNonBlocking));
	CK(cudaDeviceSynchronize());
}

static void teardown(struct path *p)
{
	for (int i = 0; i < p->nstreams; i++)
		CK(cudaStreamDestroy(p->s[i]));
	CK(cudaFree(p->d_in));
	CK(cudaFree(p->d_out));
	CK(cudaHostUnregister(p->h_in_all));
	CK(cudaHostUnregister(p->h_out_all));
	munmap(p->h_in_all, p->slots * p->in_bytes);
	munmap(p->h_out_all, p->out_slots * p->out_bytes);
}

/* At least 3 CPIs, and one through every slot: each slot's output must
 * then equal that slot's own input. */
static int self_check(struct path *p)
{
	for (unsigned k = 0; k < (p->slots > 3 ? p->slots : 3); k++)
		one_cpi(p, 1);
	if (memcmp(p->h_in_all, p->h_out_all, p->slots * p->in_bytes) != 0) {
		fprintf(stderr, "copy_floor: self-check FAILED: bytes differ after H2D, D2D, D2H\n");
		return 1;
	}
	printf("copy_floor: self-check ok (%zu bytes, %d chunks over %d streams, %u slot%s)\n",
	       p->in_bytes, p->chunks, p->nstreams, p->slots, p->slots == 1 ? "" : "s");
	return 0;
}

int main(int argc, char **argv)
{
	struct path p;
	struct opts o = { 0, 10, 2, 0, NULL, "0", 0, 0 };
	int gpu = 0, ndev = 0, rc;

	memset(&p, 0, sizeof(p));
	p.chunks = 4;
	p.nstreams = 2;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
	if (parse(argc, argv, &p, &o) != 0)
		return 2;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "copy_floor: no usable CUDA device: skipped\n");
		return 77;
	}
	rc = pick_gpu(o.gpu, ndev, &gpu);
	if (rc)
		return rc;
	CK(cudaSetDevice(gpu));
	/* the self-check's out_slots = slots: out = in, slot by slot */
	if (o.self_check)
		p.out_slots = p.slots;
	setup(&p, o.self_check);
	if (o.self_check)
		rc = self_check(&p);
	else if (o.limit)
		rc = copy_limit(&p, gpu, o.seconds, o.start_at);
	else
		rc = paced_mode(&p, o.rate, o.warmup, o.seconds, o.raw);
	if (rc)
		return rc;
	teardown(&p);
	return fflush(stdout) == 0 ? 0 : 1;
}
