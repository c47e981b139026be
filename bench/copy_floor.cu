/* SPDX-License-Identifier: Apache-2.0 */
/*
 * copy_floor.cu — the GPU platform's latency floor for chirpd's data path:
 * the raw copy path alone, no chirpd, no FFT. At a paced rate, each tick
 * moves one CPI's input bytes host->device and its output bytes
 * device->host from cudaHostRegister'ed MAP_SHARED memory (what a ring's
 * data region is), in --chunks pieces over --streams streams (chunk i on
 * stream i % streams, its H2D then its D2H), and waits for completion with
 * cudaStreamSynchronize on every stream. Latency of a tick = completion −
 * the tick's start (CLOCK_MONOTONIC just after the paced wake, the moment a
 * producer would commit): the transfer alone. Also, from the tick: completion
 * − the tick's scheduled time, which adds this process's wake-up lateness,
 * as the issue's paced copy loop measured its floor (a real consumer of a
 * paced stream pays one wake-up too; chirpd's own latency includes its data
 * thread's). One CPI in flight at a time.
 *
 *   copy_floor --in-bytes N --out-bytes M --rate CPI_PER_S [--seconds 10]
 *              [--warmup 4] [--chunks 4] [--streams 2] [--gpu 0] [--raw FILE]
 *              [--raw-tick FILE]
 *   copy_floor --self-check [--in-bytes N]
 *   copy_floor --limit --in-bytes N --out-bytes M [--seconds 10] [--start-at UNIX_S]
 *              [--chunks 4] [--streams 2] [--gpu 0|0000:41:00.0]
 *              [--row-bytes N --pitch P]
 *
 * --gpu takes a CUDA device index or a PCI bus id (nvidia-smi's
 * "00000000:41:00.0" or sysfs's "0000:41:00.0"): CUDA's device order need
 * not be nvidia-smi's, so scripts that address GPUs by bus id use it here too.
 *
 * Pacing is chirp-feed's: an absolute CLOCK_MONOTONIC schedule; a wake more
 * than half a period late (or a copy that ran past the next tick) restarts
 * the schedule from now and counts a late tick — never a burst.
 *
 * Output (stdout), one line, key=value, microseconds (nearest-rank):
 *   copy rate=… in_bytes=… out_bytes=… n=… p50_us=… p90_us=… p99_us=…
 *        p999_us=… max_us=… late_ticks=… tick_p50_us=… tick_p99_us=…
 *        tick_p999_us=… tick_max_us=…
 * (tick_*: from the scheduled tick; --raw-tick FILE writes those.)
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
 * --row-bytes N --pitch P (either mode, not --self-check): the H2D is a
 * cudaMemcpy2DAsync of in_bytes / N rows of N bytes into device rows P
 * bytes apart, as chirpd's cf32 H2D lands in its pitched FFT rows (chunks
 * then cut whole rows); the copylimit line ends with row_bytes=N pitch=P
 * (0 0 for linear copies). Compares the 2D copy with the linear one.
 * --slots N (either mode): N host buffers of each direction, taken in turn
 * CPI by CPI as a ring's slots are (default 1: the same buffers every
 * tick); --slots 16 makes the DMA walk as many registered bytes as
 * chirpd's 16-slot input and output rings do.
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
	unsigned slots, slot;     /* host buffers taken in turn (--slots); the next */
	unsigned char *h_in_all, *h_out_all;   /* slots x in_bytes, slots x out_bytes */
	unsigned char *h_in, *h_out, *d_in, *d_out;   /* h_*: this CPI's slot */
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
	/* The next slot, as a ring's consumer takes them: with --slots 16 the
	 * DMA walks as many registered bytes as chirpd's 16-slot rings. */
	p->h_in = p->h_in_all + (size_t)p->slot * p->in_bytes;
	p->h_out = p->h_out_all + (size_t)p->slot * p->out_bytes;
	p->slot = (p->slot + 1) % p->slots;
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

/* --limit: back to back for `seconds`, from `start_at` (CLOCK_REALTIME
 * seconds; 0 = now). Prints the copylimit line. */
static int copy_limit(struct path *p, int dev, double seconds, double start_at)
{
	char bus[32] = "";
	uint64_t n = 0, t0, t1, end;
	double start_unix, el;
	int late = 0;

	CK(cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), dev));
	for (int k = 0; k < 20; k++)   /* warm up: first-use costs, clocks */
		one_cpi(p, 0);
	if (start_at > 0) {
		struct timespec ts = { (time_t)start_at, (long)((start_at - floor(start_at)) * 1e9) };
		struct timespec now;
		int r;

		if (clock_gettime(CLOCK_REALTIME, &now) < 0) {
			fprintf(stderr, "copy_floor: clock_gettime: %s\n", strerror(errno));
			return 1;
		}
		late = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 > start_at;
		do
			r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
		while (r == EINTR);
		if (r) {
			fprintf(stderr, "copy_floor: clock_nanosleep: %s\n", strerror(r));
			return 1;
		}
	}
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		start_unix = (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
	}
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

static void usage(FILE *f)
{
	fprintf(f, "usage: copy_floor --in-bytes N --out-bytes M --rate CPI_PER_S [--seconds 10]\n"
		   "                  [--warmup 4] [--chunks 4] [--streams 2] [--gpu 0] [--raw FILE]\n"
		   "                  [--raw-tick FILE]\n"
		   "       copy_floor --limit --in-bytes N --out-bytes M [--seconds 10] [--start-at UNIX_S]\n"
		   "                  [--chunks 4] [--streams 2] [--gpu 0]\n"
		   "       (either: [--row-bytes N --pitch P] for a 2D H2D into pitched rows,\n"
		   "        [--slots 1] host buffers taken in turn, as a ring's slots)\n"
		   "       copy_floor --self-check [--in-bytes N] [--slots 1] [--gpu 0]\n"
		   "--gpu: a CUDA device index or a PCI bus id (0000:41:00.0)\n");
}

static int num(const char *s, double *v)
{
	char *e;

	errno = 0;
	*v = strtod(s, &e);
	return errno || e == s || *e || !isfinite(*v) || *v < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct path p;
	double rate = 0, seconds = 10, warmup = 4, start_at = 0, v;
	const char *raw = NULL, *raw_tick = NULL, *gpu_arg = "0";
	int gpu = 0, self_check = 0, limit = 0, ndev = 0;

	memset(&p, 0, sizeof(p));
	p.chunks = 4;
	p.slots = 1;
	p.nstreams = 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *b = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--self-check")) { self_check = 1; continue; }
		if (!strcmp(a, "--limit")) { limit = 1; continue; }
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
		if (!b || num(b, &v) < 0) {
			if (!(b && (!strcmp(a, "--raw") || !strcmp(a, "--raw-tick") ||
				    !strcmp(a, "--gpu")))) {
				usage(stderr);
				return 2;
			}
		}
		i++;
		if (!strcmp(a, "--in-bytes")) p.in_bytes = (size_t)v;
		else if (!strcmp(a, "--out-bytes")) p.out_bytes = (size_t)v;
		else if (!strcmp(a, "--rate")) rate = v;
		else if (!strcmp(a, "--seconds")) seconds = v;
		else if (!strcmp(a, "--warmup")) warmup = v;
		else if (!strcmp(a, "--chunks")) p.chunks = (int)v;
		else if (!strcmp(a, "--streams")) p.nstreams = (int)v;
		else if (!strcmp(a, "--gpu")) gpu_arg = b;
		else if (!strcmp(a, "--start-at")) start_at = v;
		else if (!strcmp(a, "--raw")) raw = b;
		else if (!strcmp(a, "--raw-tick")) raw_tick = b;
		else if (!strcmp(a, "--row-bytes")) p.row_bytes = (size_t)v;
		else if (!strcmp(a, "--pitch")) p.pitch = (size_t)v;
		else if (!strcmp(a, "--slots")) p.slots = (unsigned)v;
		else { usage(stderr); return 2; }
	}
	if (self_check) {
		if (!p.in_bytes)
			p.in_bytes = (size_t)4 * 128 * 4096 * 8 + 12345;   /* not a chunk multiple */
		p.out_bytes = p.in_bytes;
	}
	if (!p.in_bytes || !p.out_bytes || p.chunks < 1 || p.chunks > 64 || p.nstreams < 1 ||
	    p.slots < 1 || p.slots > 1024 ||
	    p.nstreams > MAX_STREAMS || (!self_check && !limit && rate <= 0) ||
	    (!self_check && seconds <= 0) || (self_check && limit) ||
	    (!p.row_bytes != !p.pitch) || (p.pitch && (self_check || p.pitch < p.row_bytes ||
						       p.in_bytes % p.row_bytes != 0 ||
						       p.in_bytes / p.row_bytes < (size_t)p.chunks))) {
		usage(stderr);
		return 2;
	}
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "copy_floor: no usable CUDA device: skipped\n");
		return 77;
	}
	if (strchr(gpu_arg, ':')) {
		if (cudaDeviceGetByPCIBusId(&gpu, gpu_arg) != cudaSuccess) {
			fprintf(stderr, "copy_floor: --gpu %s: cudaDeviceGetByPCIBusId: %s\n", gpu_arg,
				cudaGetErrorString(cudaGetLastError()));
			return 1;
		}
	} else if (num(gpu_arg, &v) < 0 || v != floor(v) || v >= ndev) {
		fprintf(stderr, "copy_floor: --gpu %s: want a device index below %d or a PCI bus id\n",
			gpu_arg, ndev);
		return 2;
	} else {
		gpu = (int)v;
	}
	CK(cudaSetDevice(gpu));

	/* Host side: shared mappings registered in place, as chirpd does with
	 * its rings (staging = register). */
	p.h_in_all = (unsigned char *)map_shared(p.slots * p.in_bytes);
	p.h_out_all = (unsigned char *)map_shared(p.slots * p.out_bytes);
	/* A different pattern in each slot, so the self-check can tell them apart. */
	for (size_t i = 0; i < p.slots * p.in_bytes; i++)
		p.h_in_all[i] = (unsigned char)((i % p.in_bytes) * 131u + 7u + (i / p.in_bytes) * 29u);
	memset(p.h_out_all, 0, p.slots * p.out_bytes);
	CK(cudaHostRegister(p.h_in_all, p.slots * p.in_bytes, cudaHostRegisterDefault));
	CK(cudaHostRegister(p.h_out_all, p.slots * p.out_bytes, cudaHostRegisterDefault));
	p.h_in = p.h_in_all;
	p.h_out = p.h_out_all;
	CK(cudaMalloc((void **)&p.d_in, p.pitch ? p.in_bytes / p.row_bytes * p.pitch : p.in_bytes));
	CK(cudaMalloc((void **)&p.d_out, p.out_bytes));
	CK(cudaMemset(p.d_out, 0, p.out_bytes));
	for (int i = 0; i < p.nstreams; i++)
		CK(cudaStreamCreateWithFlags(&p.s[i], cudaStreamNonBlocking));
	CK(cudaDeviceSynchronize());

	if (self_check) {
		/* At least 3 CPIs, and one through every slot: each slot's
		 * output must then equal that slot's own input. */
		for (unsigned k = 0; k < (p.slots > 3 ? p.slots : 3); k++)
			one_cpi(&p, 1);
		if (memcmp(p.h_in_all, p.h_out_all, p.slots * p.in_bytes) != 0) {
			fprintf(stderr, "copy_floor: self-check FAILED: bytes differ after H2D, D2D, D2H\n");
			return 1;
		}
		printf("copy_floor: self-check ok (%zu bytes, %d chunks over %d streams, %u slot%s)\n",
		       p.in_bytes, p.chunks, p.nstreams, p.slots, p.slots == 1 ? "" : "s");
		return 0;
	}
	if (limit) {
		if (copy_limit(&p, gpu, seconds, start_at) != 0)
			return 1;
	} else {
		double period_ns = 1e9 / rate;
		size_t cap = (size_t)(rate * seconds * 1.1) + 16, n = 0;
		double *lat = (double *)calloc(cap, sizeof(double));
		double *tick = (double *)calloc(cap, sizeof(double));   /* from the due time */
		uint64_t t0, sched_n = 0, late = 0, open_ns, close_ns;
		FILE *rf = NULL;

		if (!lat || !tick) {
			fprintf(stderr, "copy_floor: out of memory for %zu samples\n", cap);
			return 1;
		}
		for (int k = 0; k < 20; k++)   /* warm up: first-use costs, clocks */
			one_cpi(&p, 0);
		t0 = mono_ns();
		open_ns = t0 + (uint64_t)(warmup * 1e9);
		close_ns = open_ns + (uint64_t)(seconds * 1e9);
		for (;;) {
			uint64_t due = t0 + (uint64_t)((double)sched_n * period_ns), start, end;
			struct timespec ts = { (time_t)(due / 1000000000ull), (long)(due % 1000000000ull) };
			int r;

			do
				r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			while (r == EINTR);
			if (r) {
				fprintf(stderr, "copy_floor: clock_nanosleep: %s\n", strerror(r));
				return 1;
			}
			start = mono_ns();
			if (start >= close_ns)
				break;
			if (start > due && (double)(start - due) > 0.5 * period_ns) {
				if (start >= open_ns)
					late++;
				t0 = start;   /* restart the schedule: no catch-up burst */
				sched_n = 0;
			}
			sched_n++;
			one_cpi(&p, 0);
			end = mono_ns();
			if (start >= open_ns && n < cap) {
				tick[n] = (double)(end - (due < start ? due : start)) / 1e3;
				lat[n++] = (double)(end - start) / 1e3;
			}
		}
		for (int k = 0; k < 2; k++) {
			const char *path = k ? raw_tick : raw;
			const double *v = k ? tick : lat;

			if (!path)
				continue;
			rf = fopen(path, "w");
			if (!rf) {
				fprintf(stderr, "copy_floor: %s: %s\n", path, strerror(errno));
				return 1;
			}
			for (size_t i = 0; i < n; i++)
				fprintf(rf, "%.3f\n", v[i]);
			if (fclose(rf) != 0) {
				fprintf(stderr, "copy_floor: writing %s: %s\n", path, strerror(errno));
				return 1;
			}
		}
		qsort(lat, n, sizeof(double), cmp_d);
		qsort(tick, n, sizeof(double), cmp_d);
		printf("copy rate=%.2f in_bytes=%zu out_bytes=%zu n=%zu p50_us=%.1f p90_us=%.1f "
		       "p99_us=%.1f p999_us=%.1f max_us=%.1f late_ticks=%llu tick_p50_us=%.1f "
		       "tick_p99_us=%.1f tick_p999_us=%.1f tick_max_us=%.1f\n", rate, p.in_bytes,
		       p.out_bytes, n, pct(lat, n, 0.5), pct(lat, n, 0.9), pct(lat, n, 0.99),
		       pct(lat, n, 0.999), n ? lat[n - 1] : NAN, (unsigned long long)late,
		       pct(tick, n, 0.5), pct(tick, n, 0.99), pct(tick, n, 0.999),
		       n ? tick[n - 1] : NAN);
		free(lat);
		free(tick);
	}
	for (int i = 0; i < p.nstreams; i++)
		CK(cudaStreamDestroy(p.s[i]));
	CK(cudaFree(p.d_in));
	CK(cudaFree(p.d_out));
	CK(cudaHostUnregister(p.h_in_all));
	CK(cudaHostUnregister(p.h_out_all));
	munmap(p.h_in_all, p.slots * p.in_bytes);
	munmap(p.h_out_all, p.slots * p.out_bytes);
	return fflush(stdout) == 0 ? 0 : 1;
}
