/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_cpu.c — CPU pulse-compression backend on FFTW3 single precision
 * (implements pc_backend.h; the reference the CUDA backend is tested
 * against).
 *
 * Per CPI, rows are processed in blocks of block_rows rows whose work
 * buffer fits in the L2 cache (tune.block_kib: 0, the default, takes at
 * most 256 KiB, sized so that the threads finish together:
 * balanced_block_rows; K takes K KiB as it is): load + convert + zero-pad
 * the block, one batched forward FFT over the block, multiply by the
 * filter of the CPI's mode, one batched inverse FFT, write gates 0..R-1 in
 * the output mode. Every mode's filter is made at create and stays
 * resident (fc/fd hold them back to back); a CPI carries its filter index
 * in the job, so a mode change costs nothing and a mode's results are bit
 * for bit those of a pc built with that mode alone (the same filter, the
 * same plans, the same passes).
 * Running the five passes on a cache-sized block instead of on the whole
 * CPI keeps memory traffic at one read of the input and one write of the
 * output.
 *
 * Threads: cpu_threads = T runs a workpool (workpool.h) of T-1 worker
 * threads made at create plus the caller's thread; a CPI is a job whose
 * items are its blocks. Each thread owns a work buffer; all share the two
 * batched plans (one for a full block, one for the remainder) through the
 * new-array execute functions, which FFTW documents as thread-safe. Blocks
 * are claimed one at a time, so a thread slowed by other load simply takes
 * fewer blocks. Every pass (convert, FFT, multiply, store) is parallel,
 * which fftwf_plan_with_nthreads would not give. Idle workers poll for the
 * next CPI for idle_spin_us before they sleep (the pool's spin), since
 * waking a sleeping thread takes 1-2 ms at p99 on a VM (doc/latency.md).
 *
 * Straggler take-over (tune.takeover): a worker that is descheduled while
 * it holds a block would hold the CPI with it; the caller computes such a
 * block again and the first copy done is stored (wait_blocks; pc_done.
 * recomputed counts them). AUTO turns it on while the workers poll between
 * CPIs (idle_spin_us > 0) and off while they sleep: with sleeping workers
 * a late block was mostly a late wake-up, and the second copy competed
 * with the worker it waited for, which made the tail worse (doc/pc.md).
 *
 * No allocation after create: buffers, plans and threads are made there.
 *
 * Planning (tune.fftw_planner): estimate (the default: create stays fast
 * for tests and reloads), measure (create takes seconds) or patient (up to
 * a minute; ~25 % faster FFTs than measure on the CPIs of doc/pc.md). The
 * FFTW planner is not thread-safe, so every plan/destroy call in this
 * process goes through fftw_lock. tune.fftw_wisdom = PATH imports FFTW
 * wisdom from PATH before planning (a missing file is fine) and, with
 * measured or patient plans, writes the updated wisdom back, so the search
 * happens once per machine.
 *
 * Fault injection (pc_inject_fault) is compiled in unless built with
 * -DCHIRP_NO_FAULT_INJECT: the next submit then fails with -EIO as a device
 * error would, so the daemon's fault handling can be tested without a GPU.
 * The stall hook (CHIRP_PC_TEST_STALL_MS, test_stall) exists only in
 * objects built with -DCHIRP_TEST_HOOKS: the test binaries and
 * build/tests/chirpd-hooks, never chirpd itself (it holds a worker for up
 * to a minute a block).
 */
#include "pc_backend.h"
#include "errbuf.h"
#include "log.h"
#include "maxhold.h"
#include "radar_cpu.h"
#include "beam.h"
#include "mvdr.h"
#include "timeutil.h"
#include "workpool.h"

#include <errno.h>
#include <float.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <fftw3.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CHIRP_NO_FAULT_INJECT
#define CHIRP_FAULT_INJECT 1
#endif

/* Serializes the FFTW planner (plan creation and destruction) process-wide. */
static pthread_mutex_t fftw_lock = PTHREAD_MUTEX_INITIALIZER;

/* One thread's buffers (w[0] is the caller's). */
struct cpu_buf {
	fftwf_complex *xin;          /* block_rows * dist: padded input rows */
	fftwf_complex *work;         /* block_rows * dist: spectrum, output  */
};

struct cpu_be {
	size_t R, L, rows, nfft;
	size_t dist;                 /* complex samples between rows in work */
	size_t in_row, out_row;      /* bytes of one input / output row     */
	enum pc_format fmt;
	enum pc_output mode;
	int threads;
	size_t block_rows, nblocks;
	float *fc, *fd;              /* filters as (c, c), (-d, d): filter i
					at i * 2*dist, nfft bins each       */
	unsigned nfilts;
	fftwf_plan fwd, inv;         /* block_rows rows                     */
	fftwf_plan fwd_tail, inv_tail; /* rows % block_rows rows, or NULL   */
	struct cpu_buf *w;           /* threads entries; w[0] is the caller */
	struct workpool *pool;       /* the workers; a CPI's blocks are its
					items                               */
	struct radar_cpu *radar;     /* the radar chain, or NULL (off)      */
	const struct radar_setup *rs; /* its setup (pc.c's), or NULL         */
	/* Beams (pc_setup.beams; doc/beams.md): formed on the input, before
	 * compression, into xb, which compression then reads as its input
	 * (B x P rows of cf32). Per CPI: the set pointed at the CPI's
	 * pointing (conventional) or the MVDR weights from its training
	 * cells, into wf / wd; the chain's records read them (monopulse).
	 * Everything here made at create. */
	struct {
		const struct pc_beam_setup *bs;   /* NULL without beams        */
		struct beam_set *set;
		struct mvdr *mvdr;           /* mvdr mode, else NULL         */
		float *wf;                   /* 2 B C: this CPI's weights    */
		double *wd;
		float *xf;                   /* C P R cf32: sc16 input converted,
						else NULL (cf32 is read in place) */
		float *xb;                   /* B P R cf32: the beams        */
		size_t cols;                 /* P R: columns of the product  */
		size_t in_row;               /* bytes of one input row       */
		enum pc_format in_fmt;       /* the input's format           */
		const float *x;              /* this CPI's cf32 input        */
		const void *in;              /* this CPI's input as given    */
		size_t out_bytes;            /* pc_out_bytes (skipped CPIs)  */
		size_t in_rows;              /* C P                          */
		unsigned nd;                 /* the chain's Nd, 0 without    */
	} bm;
	float *cube;                 /* its input: every compressed row,
					complex, written by store_block     */

	/* The CPI being computed: written by the caller before
	 * workpool_submit, read by a thread only after it claimed a block
	 * and while it counts in loading (run_blocks), so never while the
	 * caller writes the next CPI's. */
	struct {
		const void *in;
		void *out;
		unsigned filt;       /* the CPI's filter index (< nfilts)  */
		int radar_stage;     /* -1: compression blocks; else the
					radar chain's stage whose items
					these are (radar_cpu.h)             */
		int beam_stage;      /* with radar_stage -1: BEAM_STAGE_*,
					the beams' items before compression */
	} job;
	atomic_uint nonfinite;       /* rows of this CPI with NaN/Inf       */
	/* Straggler take-over (see wait_blocks): committed[k] is the gen of
	 * the last CPI whose block k was stored, so block k of CPI gen is
	 * stored by whoever moves it from gen - 1 to gen first. loading
	 * counts threads that may be reading the CPI's input (the caller
	 * returns only when it is 0, so no late worker reads a slot that was
	 * handed back). */
	_Atomic uint64_t *committed; /* nblocks entries                     */
	atomic_uint loading;
	bool takeover;               /* tune.takeover, AUTO resolved        */
	uint64_t block_ns;           /* caller's recent time per block, ns  */
#ifdef CHIRP_TEST_HOOKS
	unsigned test_stall_ms;      /* CHIRP_PC_TEST_STALL_MS: test_stall  */
	_Atomic uint64_t test_claimed; /* gen worker 1 last claimed a block of */
#endif

	/* Finished CPIs not yet reported by poll: a FIFO of depth entries
	 * (cpu_depth; computed in submit, reported in order by poll). */
	struct pc_done *q;
	unsigned depth, qhead, qcount;
	bool fault_armed;
	unsigned planner;            /* FFTW_ESTIMATE / _MEASURE / _PATIENT */
	char err[256];
};

/*
 * The per-sample loops below are written for the vectorizer: GCC builds
 * them at -O3 twice (AVX2 and baseline x86-64) and picks one at load time
 * (target_clones/ifunc), so one binary runs everywhere and uses AVX2 where
 * it exists. Other compilers, and sanitizer builds (an instrumented ifunc
 * resolver runs before the TSan runtime is up and crashes), get the plain
 * loops.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define PC_HOT __attribute__((optimize("O3"), target_clones("avx2", "default")))
#else
#define PC_HOT
#endif

/*
 * Load row x (R samples) into w (padding stays zero). Returns 1 if x holds
 * a NaN or Inf: a float is non-finite exactly when its exponent bits are
 * all ones, i.e. (bits & 0x7fffffff) >= 0x7f800000; the max-reduction over
 * the bit patterns vectorizes, a float compare chain would not.
 */
PC_HOT
static int load_cf32(const float *restrict x, float *restrict w, size_t R)
{
	uint32_t mx = 0;

	for (size_t i = 0; i < 2 * R; i++) {
		float v = x[i];
		uint32_t a;

		w[i] = v;
		memcpy(&a, &v, sizeof(a));
		a &= 0x7fffffffu;
		mx = a > mx ? a : mx;
	}
	return mx >= 0x7f800000u;
}

PC_HOT
static void load_sc16(const int16_t *restrict x, float *restrict w, size_t R)
{
	const float scale = 1.0f / 32768.0f;

	for (size_t i = 0; i < 2 * R; i++)
		w[i] = (float)x[i] * scale;
}

/*
 * w *= filt, complex. fc holds (c, c) and fd (-d, d) per bin, so the
 * product is w * fc + swap(w) * fd: two multiply-adds per float with one
 * in-register swap, no horizontal shuffles of the filter.
 */
PC_HOT
static void mul_filt(float *restrict w, const float *restrict fc,
		     const float *restrict fd, size_t nfft)
{
	for (size_t i = 0; i < 2 * nfft; i += 2) {
		float a = w[i], b = w[i + 1];

		w[i] = a * fc[i] + b * fd[i];
		w[i + 1] = b * fc[i + 1] + a * fd[i + 1];
	}
}

/*
 * Complex output: copy with non-temporal stores. The output CPI goes to
 * DRAM and is not read again by us; streaming stores skip the read-for-
 * ownership a normal store does, a third of the output traffic. The caller
 * issues _mm_sfence before the CPI is reported done.
 */
static void store_cplx(const float *restrict w, float *restrict y, size_t R)
{
#ifdef __SSE2__
	size_t i = 0, n = 2 * R;

	/* y is 4-byte aligned (pc_submit checks); align to 16 bytes */
	while (i < n && ((uintptr_t)(y + i) & 15) != 0) {
		y[i] = w[i];
		i++;
	}
	for (; i + 4 <= n; i += 4)
		_mm_stream_ps(y + i, _mm_loadu_ps(w + i));
	for (; i < n; i++)
		y[i] = w[i];
#else
	memcpy(y, w, R * 2 * sizeof(float));
#endif
}

static void store_fence(void)
{
#ifdef __SSE2__
	_mm_sfence();
#endif
}

/*
 * |y|. sqrtf may set errno, so the compiler will not vectorize it without
 * -fno-math-errno (which the optimize attribute cannot turn on): SSE2, which
 * every x86-64 has, does four at a time by hand.
 */
static void store_mag(const float *restrict w, float *restrict y, size_t R)
{
	size_t i = 0;
	int ovf = 0;

#ifdef __SSE2__
	const __m128 big = _mm_set1_ps(FLT_MAX);
	__m128 o = _mm_setzero_ps();

	for (; i + 4 <= R; i += 4) {
		__m128 a = _mm_loadu_ps(w + 2 * i), b = _mm_loadu_ps(w + 2 * i + 4);

		a = _mm_mul_ps(a, a);
		b = _mm_mul_ps(b, b);
		a = _mm_add_ps(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
			       _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
		o = _mm_or_ps(o, _mm_cmpgt_ps(a, big));
		_mm_storeu_ps(y + i, _mm_sqrt_ps(a));
	}
	ovf = _mm_movemask_ps(o);
#endif
	for (; i < R; i++) {
		float re = w[2 * i], im = w[2 * i + 1];
		float p = re * re + im * im;

		ovf |= p > FLT_MAX;
		y[i] = sqrtf(p);
	}
	/* |y| > ~1.8e19 overflows re^2+im^2: redo those few exactly */
	if (ovf)
		for (i = 0; i < R; i++)
			if (y[i] > FLT_MAX)
				y[i] = hypotf(w[2 * i], w[2 * i + 1]);
}

/*
 * 10 log10(p) for finite p >= PC_POWER_FLOOR (a normal float), in a form the
 * vectorizer takes (log10f is a library call per sample and was two thirds
 * of a power_db CPI). p = 2^e m with m in [sqrt(1/2), sqrt(2)), ln m =
 * 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.172: the odd series to s^9 leaves a
 * truncation error below 4e-10, under float rounding. Measured against
 * log10 in double on every 7th float from the floor to FLT_MAX: at most
 * 6.4e-5 dB (two float ulps of a 360 dB result); test_pc holds it to 1e-4
 * dB. Inf and NaN are the caller's business.
 */
static inline float fast_db(uint32_t u)   /* u: the bits of p */
{
	uint32_t mu, big;
	float m, s, s2, lnm;
	int e;

	mu = (u & 0x007fffffu) | 0x3f800000u;   /* m in [1, 2) */
	big = mu > 0x3fb504f3u;                 /* m > sqrt(2): use m/2, e+1 */
	mu -= big << 23;
	e = (int)(u >> 23) - 127 + (int)big;    /* p > 0: the sign bit is 0 */
	memcpy(&m, &mu, sizeof(m));
	s = (m - 1.0f) / (m + 1.0f);
	s2 = s * s;
	lnm = 2.0f * s * (1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9)))));
	return ((float)e * 0.693147180559945f + lnm) * 4.342944819032518f;   /* 10/ln 10 */
}

PC_HOT
static void store_db(const float *restrict w, float *restrict y, size_t R)
{
	const float floor_f = PC_POWER_FLOOR;
	uint32_t mx = 0, floor_u;

	/*
	 * Work on the bit patterns: for p >= 0 they order like the values, so
	 * the floor is an integer max, and NaN/Inf/overflow (exponent bits all
	 * ones) shows in an integer max-reduction. Float selects with NaN
	 * semantics would keep this loop from vectorizing.
	 */
	memcpy(&floor_u, &floor_f, sizeof(floor_u));
	for (size_t i = 0; i < R; i++) {
		float re = w[2 * i], im = w[2 * i + 1];
		float p = re * re + im * im;
		uint32_t u;

		memcpy(&u, &p, sizeof(u));
		u &= 0x7fffffffu;                  /* p >= 0 (or NaN) */
		mx = u > mx ? u : mx;
		y[i] = fast_db(u > floor_u ? u : floor_u);
	}
	/* rare: redo those in double (NaN stays NaN, |y| > 1.8e19 is finite in dB) */
	if (mx >= 0x7f800000u)
		for (size_t i = 0; i < R; i++) {
			float re = w[2 * i], im = w[2 * i + 1];
			float p = re * re + im * im;

			if (!(p <= FLT_MAX)) {
				double pd = (double)re * re + (double)im * im;

				y[i] = (float)(10.0 * log10(pd));
			}
		}
}

/* Plan howmany rows src -> dst under fftw_lock. NULL on failure. */
static fftwf_plan plan_rows(struct cpu_be *b, fftwf_complex *src, fftwf_complex *dst,
			    size_t howmany, int sign, unsigned flags)
{
	int n = (int)b->nfft;
	fftwf_plan p;

	pthread_mutex_lock(&fftw_lock);
	p = fftwf_plan_many_dft(1, &n, (int)howmany,
				src, NULL, 1, (int)b->dist,
				dst, NULL, 1, (int)b->dist,
				sign, flags | b->planner);
	pthread_mutex_unlock(&fftw_lock);
	return p;
}

static void destroy_plan(fftwf_plan p)
{
	if (!p)
		return;
	pthread_mutex_lock(&fftw_lock);
	fftwf_destroy_plan(p);
	pthread_mutex_unlock(&fftw_lock);
}

/* Block k's rows: [*r0, *r0 + return value). */
static size_t block_span(const struct cpu_be *b, size_t k, size_t *r0)
{
	*r0 = k * b->block_rows;
	return b->rows - *r0 < b->block_rows ? b->rows - *r0 : b->block_rows;
}

/*
 * Rows [r0, r0+nr) through one worker's buffers, up to the result in
 * wk->work, multiplied by filter filt; returns how many rows held NaN/Inf.
 * The forward FFT is out of
 * place and preserves its input, so the zero padding of xin[R..nfft)
 * written at create stays: a load writes only the R samples. The inverse
 * runs in place on work. The thread's count in loading is dropped once the
 * input has been read (the rest touches only its own buffers). With stop
 * (a take-over of block k of CPI gen: stop = &committed[k]), it gives up
 * between passes once *stop == gen (the worker got there first) and
 * returns BLOCK_ABANDONED.
 */
#define BLOCK_ABANDONED UINT32_MAX

static uint32_t compute_block(struct cpu_be *b, struct cpu_buf *wk,
			      const void *in, unsigned filt, size_t r0, size_t nr,
			      const _Atomic uint64_t *stop, uint64_t gen)
{
	bool tail = nr != b->block_rows;
	fftwf_complex *work = wk->work;
	uint32_t nonfinite = 0;
	const float *fc = b->fc + (size_t)filt * 2 * b->dist;
	const float *fd = b->fd + (size_t)filt * 2 * b->dist;

	for (size_t i = 0; i < nr; i++) {
		const char *x = (const char *)in + (r0 + i) * b->in_row;
		float *w = (float *)(wk->xin + i * b->dist);

		if (b->fmt == PC_FMT_CF32)
			nonfinite += (uint32_t)load_cf32((const float *)x, w, b->R);
		else
			load_sc16((const int16_t *)x, w, b->R);
	}
	/* The input is read: from here on only our own buffers. */
	atomic_fetch_sub_explicit(&b->loading, 1, memory_order_release);
	if (stop && atomic_load_explicit(stop, memory_order_relaxed) == gen)
		return BLOCK_ABANDONED;
	fftwf_execute_dft(tail ? b->fwd_tail : b->fwd, wk->xin, work);
	if (stop && atomic_load_explicit(stop, memory_order_relaxed) == gen)
		return BLOCK_ABANDONED;
	for (size_t i = 0; i < nr; i++)
		mul_filt((float *)(work + i * b->dist), fc, fd, b->nfft);
	fftwf_execute_dft(tail ? b->inv_tail : b->inv, work, work);
	return nonfinite;
}

/* Gates 0..R-1 of the block in wk->work to out, in the output mode, and
 * to the radar chain's cube when it is on (a map or no output: out is
 * then the chain's to write). */
static void store_block(struct cpu_be *b, struct cpu_buf *wk, void *out,
			size_t r0, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		const float *w = (const float *)(wk->work + i * b->dist);
		char *y = out ? (char *)out + (r0 + i) * b->out_row : NULL;

		if (b->cube)
			memcpy(b->cube + (r0 + i) * 2 * b->R, w, b->R * 2 * sizeof(float));
		switch (b->mode) {
		case PC_OUT_COMPLEX:
			store_cplx(w, (float *)y, b->R);
			break;
		case PC_OUT_MAGNITUDE:
			store_mag(w, (float *)y, b->R);
			break;
		case PC_OUT_POWER_DB:
			store_db(w, (float *)y, b->R);
			break;
		case PC_OUT_MAP_POWER:
		case PC_OUT_MAP_DB:
		case PC_OUT_NONE:
			break;   /* radar_cpu_run writes out */
		}
	}
}

/*
 * Block k of CPI gen, computed in wk: store it if nobody has (committed
 * moves gen - 1 -> gen exactly once; a thread still busy with an older CPI
 * expects an older value and never matches), then count it done in the
 * pool (a release the caller's workpool_finished acquires); else (the
 * other copy was stored first) throw it away.
 */
static void finish_block(struct cpu_be *b, struct cpu_buf *wk, uint64_t gen, void *out,
			 size_t k, uint32_t nonfinite)
{
	uint64_t expect = gen - 1;
	size_t r0, nr = block_span(b, k, &r0);

	if (!atomic_compare_exchange_strong_explicit(&b->committed[k], &expect, gen,
						     memory_order_acq_rel, memory_order_relaxed))
		return;
	store_block(b, wk, out, r0, nr);
	if (nonfinite)
		atomic_fetch_add_explicit(&b->nonfinite, nonfinite, memory_order_relaxed);
	store_fence();   /* streaming stores visible before "done" */
	workpool_item_done(b->pool);
}

#ifdef CHIRP_TEST_HOOKS
/*
 * Test hook (CHIRP_PC_TEST_STALL_MS=N, test builds only): worker 1 acts
 * descheduled after computing each block it claims, until someone else has
 * stored that block or N ms have passed, so tests can show the caller
 * takes the block over. So that worker 1 holds a block in every CPI,
 * however late it wakes, the caller claims nothing until worker 1 has
 * claimed one, other workers have claimed every block, or N ms have passed
 * (with cpu_threads = 2 worker 1 is the only other thread: it holds a
 * block of every CPI).
 */
static void test_hooks_init(struct cpu_be *b)
{
	const char *s = getenv("CHIRP_PC_TEST_STALL_MS");
	unsigned long v;
	char *end;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end) {
		log_warn("CHIRP_PC_TEST_STALL_MS=%s: not a number of ms; no stall", s);
		return;
	}
	b->test_stall_ms = v > 60000 ? 60000 : (unsigned)v;
}

static void test_wait_claim(struct cpu_be *b, unsigned thread, uint64_t gen)
{
	uint64_t end;

	if (!b->test_stall_ms || b->threads < 2 || thread != 0)
		return;
	end = mono_ns() + (uint64_t)b->test_stall_ms * 1000000ull;
	while (atomic_load_explicit(&b->test_claimed, memory_order_acquire) != gen &&
	       workpool_left(b->pool, gen) > 0 && mono_ns() < end)
		cpu_relax();
}

static void test_claimed(struct cpu_be *b, unsigned thread, uint64_t gen)
{
	if (b->test_stall_ms && thread == 1)
		atomic_store_explicit(&b->test_claimed, gen, memory_order_release);
}

static void test_stall(struct cpu_be *b, unsigned thread, size_t k, uint64_t gen)
{
	uint64_t end;

	if (!b->test_stall_ms || thread != 1)
		return;
	end = mono_ns() + (uint64_t)b->test_stall_ms * 1000000ull;
	while (atomic_load_explicit(&b->committed[k], memory_order_acquire) != gen &&
	       mono_ns() < end) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}
#else
static inline void test_hooks_init(struct cpu_be *b) { (void)b; }
static inline void test_wait_claim(struct cpu_be *b, unsigned thread, uint64_t gen) { }
static inline void test_claimed(struct cpu_be *b, unsigned thread, uint64_t gen) { }
static inline void test_stall(struct cpu_be *b, unsigned thread, size_t k, uint64_t gen) { }
#endif

/*
 * Thread `thread`'s share of CPI gen (the pool's function on the workers;
 * the caller calls it as thread 0): claim blocks until none is left. A
 * thread counts itself in loading (seq_cst) before it claims, and out once
 * it has read the block's input (compute_block), so a caller that sees
 * every block done and then loading == 0 knows no thread will read this
 * CPI's input again: one that counts itself in later finds nothing left to
 * claim (workpool.h: the claim is seq_cst for this). The job's buffers are
 * read after the claim, inside that window. Each stored block is counted
 * done with a release after a store fence for its streaming stores
 * (finish_block), so the caller that sees every block done sees the whole
 * output and the non-finite count.
 */
enum { BEAM_STAGE_NONE = 0, BEAM_STAGE_CONVERT = 1, BEAM_STAGE_FORM = 2 };
#define BEAM_ITEM_COLS (8 * BEAM_FORM_COLS)   /* columns per beamforming item */

/* A beam stage's item k: convert input row k (sc16 -> cf32), or form the
 * beams of columns [k, k + 1) x BEAM_ITEM_COLS. */
static void beam_item(struct cpu_be *b, size_t k)
{
	size_t R = b->R, C = b->bm.bs->channels, B = b->bm.bs->beams, c0, c1;

	if (b->job.beam_stage == BEAM_STAGE_CONVERT) {
		load_sc16((const int16_t *)((const char *)b->bm.in + k * b->bm.in_row),
			  b->bm.xf + k * 2 * R, R);
		return;
	}
	c0 = k * BEAM_ITEM_COLS;
	c1 = c0 + BEAM_ITEM_COLS < b->bm.cols ? c0 + BEAM_ITEM_COLS : b->bm.cols;
	beam_form(b->bm.wf, (unsigned)B, (unsigned)C, b->bm.x, b->bm.cols, b->bm.xb, b->bm.cols,
		  c0, c1);
}

static void run_blocks(void *ctx, unsigned thread, uint64_t gen)
{
	struct cpu_be *b = ctx;
	struct cpu_buf *w = &b->w[thread];

	if (thread == 0 && b->job.radar_stage < 0)   /* the caller's own job */
		test_wait_claim(b, thread, gen);
	for (;;) {
		const void *in;
		void *out;
		unsigned filt;
		uint64_t t0;
		size_t k, r0, nr;
		uint32_t nonfinite;

		atomic_fetch_add_explicit(&b->loading, 1, memory_order_seq_cst);
		if (!workpool_claim(b->pool, thread, gen, &k)) {
			atomic_fetch_sub_explicit(&b->loading, 1, memory_order_release);
			return;   /* nothing left of CPI gen to claim */
		}
		if (b->job.radar_stage >= 0) {   /* reads no input */
			atomic_fetch_sub_explicit(&b->loading, 1, memory_order_release);
			radar_cpu_item(b->radar, (unsigned)b->job.radar_stage, k, thread);
			workpool_item_done(b->pool);
			continue;
		}
		if (b->job.beam_stage != BEAM_STAGE_NONE) {   /* reads the input */
			beam_item(b, k);
			atomic_fetch_sub_explicit(&b->loading, 1, memory_order_release);
			workpool_item_done(b->pool);
			continue;
		}
		in = b->job.in;
		out = b->job.out;
		filt = b->job.filt;
		nr = block_span(b, k, &r0);
		test_claimed(b, thread, gen);
		t0 = thread == 0 ? mono_ns() : 0;
		nonfinite = compute_block(b, w, in, filt, r0, nr, NULL, 0);   /* leaves loading */
		test_stall(b, thread, k, gen);
		finish_block(b, w, gen, out, k, nonfinite);
		if (t0) {   /* the caller's own pace: wait_blocks' grace period */
			uint64_t dt = mono_ns() - t0;

			b->block_ns = b->block_ns ? (7 * b->block_ns + dt) / 8 : dt;
		}
	}
}

/* Row times until T equal threads finish rows in blocks of r (the last
 * block holds the rest; it sets the end when it is alone in its round). */
static size_t block_makespan(size_t rows, size_t r, int T)
{
	size_t nb = (rows + r - 1) / r, rounds = (nb + (size_t)T - 1) / (size_t)T;
	size_t tail = rows - (nb - 1) * r;

	return (rounds - 1) * r + ((nb - 1) % (size_t)T == 0 ? tail : r);
}

/*
 * The block size in [1, cap] rows that lets T threads finish a CPI of
 * `rows` rows soonest, if all run at one speed: the CPI takes
 * ceil(nblocks / T) rounds of up to r rows each. The largest r within 3 %
 * of the best (fewest blocks, fewest FFTW calls) wins. 1x128x4096 at 8
 * threads: the 256 KiB cap is 7 rows, 19 blocks, 3 rounds = 21 row times,
 * with 6 threads idle through the last round; 4 rows make 32 blocks, 4
 * rounds = 16 row times, what 128 rows over 8 threads need (doc/pc.md).
 * More blocks a thread also let the atomic counter even out a thread that
 * runs slower. O(cap) at create.
 */
static size_t balanced_block_rows(size_t rows, size_t cap, int T)
{
	size_t best_t = SIZE_MAX;

	for (size_t r = cap; r >= 1; r--) {
		size_t t = block_makespan(rows, r, T);

		if (t < best_t)
			best_t = t;
	}
	for (size_t r = cap; r > 1; r--)
		if (block_makespan(rows, r, T) * 100 <= best_t * 103)
			return r;
	return 1;
}

static void cpu_destroy(void *be)
{
	struct cpu_be *b = be;

	if (!b)
		return;
	workpool_destroy(b->pool);   /* joins the workers first */
	radar_cpu_destroy(b->radar);
	beam_set_destroy(b->bm.set);
	mvdr_destroy(b->bm.mvdr);
	free(b->bm.wf);
	free(b->bm.wd);
	fftwf_free(b->bm.xf);
	fftwf_free(b->bm.xb);
	destroy_plan(b->fwd);
	destroy_plan(b->inv);
	destroy_plan(b->fwd_tail);
	destroy_plan(b->inv_tail);
	if (b->w)
		for (int t = 0; t < b->threads; t++) {
			fftwf_free(b->w[t].xin);
			fftwf_free(b->w[t].work);
		}
	free(b->w);
	free(b->committed);
	fftwf_free(b->fc);
	fftwf_free(b->fd);
	free(b->q);
	free(b);
}

/* The sizes pc.c resolved, as FFTW's int sizes and the pool can take them. */
static int check_setup(const struct pc_setup *s, char *err, size_t errlen)
{
	if (s->nfft < s->samples + s->ref_len - 1 || s->rows < 1 || !s->filts ||
	    s->nfilts < 1 || s->nfilts > PC_MAX_MODES ||
	    s->rows > WORKPOOL_MAX_ITEMS || s->cpu_threads < 1 || s->cpu_threads > 1024) {
		errbuf_set(err, errlen, "cpu: invalid setup (nfft %zu, R %u, L %zu, rows %zu, threads %d)",
			   s->nfft, s->samples, s->ref_len, s->rows, s->cpu_threads);
		return -EINVAL;
	}
	if (s->nfft > (size_t)INT_MAX - 7) {   /* rows are padded to 8 samples */
		errbuf_set(err, errlen, "cpu: nfft %zu too large for FFTW's int sizes", s->nfft);
		return -EINVAL;
	}
	return 0;
}

/* FFTW's planner flag for tune.fftw_planner. */
static unsigned fftw_flag(enum pc_fftw_planner p)
{
	switch (p) {
	case PC_FFTW_MEASURE:
		return FFTW_MEASURE;
	case PC_FFTW_PATIENT:
		return FFTW_PATIENT;
	case PC_FFTW_ESTIMATE:
		break;
	}
	return FFTW_ESTIMATE;
}

/*
 * Geometry and tuning from the setup. Take-over AUTO: on when the workers
 * spin (idle_spin_us): a block still not stored after the grace is then a
 * stalled worker; with sleeping workers it was mostly a late wake-up.
 */
static void init_fields(struct cpu_be *b, const struct pc_setup *s)
{
	b->R = s->samples;
	b->L = s->ref_len;
	b->rows = s->rows;
	b->nfft = s->nfft;
	b->nfilts = s->nfilts;
	b->fmt = s->in_format;
	b->bm.bs = s->beams;
	b->bm.in_fmt = s->in_format;
	b->bm.in_row = b->R * pc_format_sample_bytes(s->in_format);
	if (s->beams) {   /* compression reads the beams, cf32 */
		b->rows = (size_t)s->beams->beams * s->pulses;
		b->fmt = PC_FMT_CF32;
		b->bm.cols = (size_t)s->pulses * s->samples;
	}
	b->mode = s->out_mode;
	b->in_row = b->R * pc_format_sample_bytes(b->fmt);
	b->out_row = b->R * pc_output_sample_bytes(b->mode);
	b->threads = s->cpu_threads;
	b->depth = s->cpu_depth >= 1 && s->cpu_depth <= 64 ? s->cpu_depth : 1;
	b->planner = fftw_flag(s->tune.fftw_planner);
	b->takeover = s->tune.takeover == PC_SWITCH_AUTO ? s->idle_spin_us > 0
							 : s->tune.takeover == PC_SWITCH_ON;
	/* Rows start on 64-byte boundaries so every row is SIMD-aligned. */
	b->dist = (b->nfft + 7) & ~(size_t)7;
	test_hooks_init(b);
}

/*
 * Rows per block: as many as fit in block_kib KiB (0: the 256 KiB cap, then
 * balanced over the threads; an explicit size is taken as it is, for
 * tuning and the tests), at least one, and few enough that every thread
 * gets a block.
 */
static void choose_blocks(struct cpu_be *b, unsigned block_kib)
{
	size_t row_bytes = b->dist * sizeof(fftwf_complex);

	b->block_rows = (size_t)(block_kib ? block_kib : 256) * 1024 / row_bytes;
	if (b->block_rows < 1)
		b->block_rows = 1;
	if (b->block_rows * (size_t)b->threads > b->rows)
		b->block_rows = (b->rows + b->threads - 1) / b->threads;
	if (!block_kib)
		b->block_rows = balanced_block_rows(b->rows, b->block_rows, b->threads);
	if (b->block_rows > (size_t)INT_MAX / b->dist)
		b->block_rows = (size_t)INT_MAX / b->dist;
	b->nblocks = (b->rows + b->block_rows - 1) / b->block_rows;
}

/* The completion queue, the per-thread buffers, the filters, committed[]. */
static int alloc_buffers(struct cpu_be *b, const float *filts)
{
	size_t bytes = b->block_rows * b->dist * sizeof(fftwf_complex);
	/* Filter i starts at bin i * dist: every filter has the alignment a
	 * single one has, so the multiply runs the same code on each. */
	size_t nf = (size_t)b->nfilts * b->dist;

	b->q = calloc(b->depth, sizeof(*b->q));
	b->committed = calloc(b->nblocks, sizeof(*b->committed));
	b->w = calloc((size_t)b->threads, sizeof(*b->w));
	b->fc = fftwf_malloc(nf * 2 * sizeof(float));
	b->fd = fftwf_malloc(nf * 2 * sizeof(float));
	if (!b->q || !b->committed || !b->w || !b->fc || !b->fd)
		return -ENOMEM;
	for (int t = 0; t < b->threads; t++) {
		b->w[t].xin = fftwf_malloc(bytes);
		b->w[t].work = fftwf_malloc(bytes);
		if (!b->w[t].xin || !b->w[t].work)
			return -ENOMEM;
	}
	memset(b->fc, 0, nf * 2 * sizeof(float));   /* the bins past nfft */
	memset(b->fd, 0, nf * 2 * sizeof(float));
	for (size_t i = 0; i < b->nfilts; i++) {
		const float *filt = filts + i * 2 * b->nfft;
		float *fc = b->fc + i * 2 * b->dist, *fd = b->fd + i * 2 * b->dist;

		for (size_t f = 0; f < b->nfft; f++) {
			fc[2 * f] = fc[2 * f + 1] = filt[2 * f];
			fd[2 * f] = -filt[2 * f + 1];
			fd[2 * f + 1] = filt[2 * f + 1];
		}
	}
	return 0;
}

/* tune.fftw_wisdom: import before planning (a missing file is fine). */
static void import_wisdom(const char *path)
{
	if (!path || !*path)
		return;
	pthread_mutex_lock(&fftw_lock);
	if (!fftwf_import_wisdom_from_filename(path))
		log_debug("fftw_wisdom %s: nothing imported (missing or not FFTW wisdom)", path);
	else
		log_info("cpu: FFTW wisdom imported from %s", path);
	pthread_mutex_unlock(&fftw_lock);
}

/* ... and write it back after a search, so it happens once per machine. */
static void export_wisdom(const char *path, unsigned planner)
{
	if (!path || !*path || planner == FFTW_ESTIMATE)
		return;
	pthread_mutex_lock(&fftw_lock);
	if (!fftwf_export_wisdom_to_filename(path))
		log_warn("fftw_wisdom %s: cannot write FFTW wisdom", path);
	pthread_mutex_unlock(&fftw_lock);
}

/*
 * The forward and inverse plans of a full block and of the remainder.
 * FFTW_MEASURE scribbles on the arrays it plans with: plan on w[0], whose
 * zero padding is written afterwards (zero_padding).
 */
static int make_plans(struct cpu_be *b, const char *wisdom, char *err, size_t errlen)
{
	size_t tail = b->rows % b->block_rows;

	import_wisdom(wisdom);
	b->fwd = plan_rows(b, b->w[0].xin, b->w[0].work, b->block_rows, FFTW_FORWARD,
			   FFTW_PRESERVE_INPUT);
	b->inv = plan_rows(b, b->w[0].work, b->w[0].work, b->block_rows, FFTW_BACKWARD, 0);
	if (!b->fwd || !b->inv) {
		errbuf_set(err, errlen, "cpu: fftwf_plan_many_dft(n=%zu, howmany=%zu) failed",
			   b->nfft, b->block_rows);
		return -EINVAL;
	}
	if (tail) {
		b->fwd_tail = plan_rows(b, b->w[0].xin, b->w[0].work, tail, FFTW_FORWARD,
					FFTW_PRESERVE_INPUT);
		b->inv_tail = plan_rows(b, b->w[0].work, b->w[0].work, tail, FFTW_BACKWARD, 0);
		if (!b->fwd_tail || !b->inv_tail) {
			errbuf_set(err, errlen, "cpu: fftwf_plan_many_dft(n=%zu, howmany=%zu) failed",
				   b->nfft, tail);
			return -EINVAL;
		}
	}
	export_wisdom(wisdom, b->planner);
	return 0;
}

/* After planning: the zero padding of every input row, once (a load
 * writes only the R samples; the forward FFT preserves its input). */
static void zero_padding(struct cpu_be *b)
{
	for (int t = 0; t < b->threads; t++)
		memset(b->w[t].xin, 0, b->block_rows * b->dist * sizeof(fftwf_complex));
}

/*
 * The workers, last: they touch nothing before the first CPI is submitted.
 * committed[] starts at the pool's gen, so block k of the first CPI moves
 * it from gen - 1 to gen as of every later one.
 */
static int start_pool(struct cpu_be *b, unsigned idle_spin_us, char *err, size_t errlen)
{
	struct workpool_params wpp = {
		.threads = (unsigned)b->threads,
		.spin_ns = (uint64_t)idle_spin_us * 1000u,
		.name = "pc-cpu",
		.fn = run_blocks,
		.ctx = b,
	};

	b->pool = workpool_create(&wpp, err, errlen);
	if (!b->pool)
		return -EAGAIN;
	for (size_t k = 0; k < b->nblocks; k++)
		atomic_init(&b->committed[k], workpool_gen(b->pool));
	return 0;
}

/* The bytes pc_out_bytes reports: the cube of the chain's rows, a map,
 * or none. */
static size_t out_bytes_of(const struct cpu_be *b, const struct pc_setup *s)
{
	if (s->out_mode == PC_OUT_MAP_POWER || s->out_mode == PC_OUT_MAP_DB)
		return (size_t)s->radar->channels * s->radar->nd * s->samples * sizeof(float);
	return b->rows * b->R * pc_output_sample_bytes(s->out_mode);
}

/* Beams: the backend's own set (pointed per CPI), MVDR's state, the
 * weights, the beams' buffer and (sc16) the converted input. */
static int beams_create(struct cpu_be *b, const struct pc_setup *s, char *err, size_t errlen)
{
	const struct pc_beam_setup *bs = s->beams;
	size_t BC = (size_t)bs->beams * bs->channels;
	char why[256];

	b->bm.set = beam_set_create(bs->array, &bs->bp, why, sizeof(why));
	if (!b->bm.set) {
		errbuf_set(err, errlen, "cpu: beams: %s", why);
		return -EINVAL;
	}
	if (bs->mode == PC_BEAMS_MVDR) {
		b->bm.mvdr = mvdr_create(bs->channels, s->pulses, s->samples, bs->beams, &bs->mvdr, why,
					 sizeof(why));
		if (!b->bm.mvdr) {
			errbuf_set(err, errlen, "cpu: beams: mvdr: %s", why);
			return -EINVAL;
		}
	}
	b->bm.wf = calloc(2 * BC, sizeof(float));
	b->bm.wd = calloc(2 * BC, sizeof(double));
	b->bm.xb = fftwf_malloc(b->rows * b->R * 2 * sizeof(float));
	if (s->in_format == PC_FMT_SC16)
		b->bm.xf = fftwf_malloc(s->rows * b->R * 2 * sizeof(float));
	if (!b->bm.wf || !b->bm.wd || !b->bm.xb || (s->in_format == PC_FMT_SC16 && !b->bm.xf)) {
		errbuf_set(err, errlen, "cpu: out of memory for %u beams of %zu x %zu samples",
			   bs->beams, (size_t)s->pulses, b->R);
		return -ENOMEM;
	}
	b->bm.out_bytes = out_bytes_of(b, s);
	b->bm.in_rows = s->rows;
	b->bm.nd = s->radar ? s->radar->nd : 0;
	if (b->radar)
		radar_cpu_set_beams(b->radar, b->bm.set, b->bm.wd, bs->monopulse);
	return 0;
}

static void *cpu_create(const struct pc_setup *s, char *err, size_t errlen)
{
	struct cpu_be *b;

	if (check_setup(s, err, errlen) < 0)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b) {
		errbuf_set(err, errlen, "cpu: out of memory");
		return NULL;
	}
	init_fields(b, s);
	choose_blocks(b, s->tune.block_kib);
	if (alloc_buffers(b, s->filts) < 0) {
		errbuf_set(err, errlen, "cpu: out of memory for %d x %zu rows of %zu-point buffers",
			   b->threads, b->block_rows, b->dist);
		goto fail;
	}
	if (make_plans(b, s->tune.fftw_wisdom, err, errlen) < 0)
		goto fail;
	if (s->radar) {
		b->radar = radar_cpu_create(s->radar, (unsigned)b->threads, b->planner, &fftw_lock, err, errlen);
		if (!b->radar)
			goto fail;
		b->cube = radar_cpu_cube(b->radar);
		b->rs = s->radar;
	}
	if (s->beams && beams_create(b, s, err, errlen) < 0)
		goto fail;
	zero_padding(b);
	if (start_pool(b, s->idle_spin_us, err, errlen) < 0)
		goto fail;
	return b;
fail:
	cpu_destroy(b);
	return NULL;
}

static void cpu_info(void *be, struct pc_info *info)
{
	struct cpu_be *b = be;

	info->depth = b->depth;
	snprintf(info->device, sizeof(info->device),
		 "cpu (fftw3f, %d thread%s, %zu block%s of %zu row%s, %s plans)",
		 b->threads, b->threads == 1 ? "" : "s", b->nblocks, b->nblocks == 1 ? "" : "s",
		 b->block_rows, b->block_rows == 1 ? "" : "s",
		 b->planner == FFTW_PATIENT ? "patient" :
		 b->planner == FFTW_MEASURE ? "measured" : "estimated");
	snprintf(info->staging, sizeof(info->staging), "none");
	snprintf(info->fft_engine, sizeof(info->fft_engine), "fftw3f");
	info->numa_node = -1;
}

static int cpu_register_host(void *be, void *base, size_t len)
{
	return 0;   /* host memory is used in place */
}

static void cpu_unregister_host(void *be, void *base)
{
}

/*
 * Compute again the first block of CPI gen that nobody has stored (nor is
 * storing), for wait_blocks; the copy is stored if it is ready first, and
 * given up between passes once the other is. Returns 1 if a copy was
 * computed to the end (pc_done.recomputed counts those), else 0.
 */
static uint32_t take_over_one(struct cpu_be *b, uint64_t gen, const void *in, void *out,
			      unsigned filt)
{
	struct cpu_buf *me = &b->w[0];

	for (size_t k = 0; k < b->nblocks; k++) {
		size_t r0, nr = block_span(b, k, &r0);
		uint32_t nonfinite;

		if (atomic_load_explicit(&b->committed[k], memory_order_acquire) == gen)
			continue;    /* stored, or being stored */
		atomic_fetch_add_explicit(&b->loading, 1, memory_order_relaxed);
		nonfinite = compute_block(b, me, in, filt, r0, nr, &b->committed[k], gen);
		if (nonfinite == BLOCK_ABANDONED)
			return 0;
		finish_block(b, me, gen, out, k, nonfinite);
		return 1;
	}
	return 0;
}

/*
 * The caller has claimed what it could; wait for the blocks other threads
 * claimed. A worker that is descheduled (another thread on its CPU, the
 * hypervisor taking its vCPU) holds its block for as long as it is away,
 * milliseconds on a busy VM, and the CPI with it: the CPU backend's
 * latency tail. So with take-over a block still not stored a grace period
 * after the caller ran out of work (1.5 blocks of the caller's own recent
 * time per block: a healthy worker finishes the block it had started by
 * then) is computed again by the caller, and whichever copy is ready first
 * is stored (finish_block); the other is thrown away. The caller is idle
 * here anyway, so this costs nothing when workers are healthy and bounds
 * the wait to about two blocks when one is not. Returns how many blocks
 * the caller recomputed.
 */
static uint32_t wait_blocks(struct cpu_be *b, uint64_t gen, const void *in, void *out,
			    unsigned filt)
{
	uint32_t recomputed = 0;
	uint64_t since = mono_ns(), grace = b->block_ns + b->block_ns / 2;

	if (grace < 20000)
		grace = 20000;   /* 20 us: below that a wait is cheaper than a block */
	while (!workpool_finished(b->pool)) {
		cpu_relax();
		if (!b->takeover || mono_ns() - since < grace)
			continue;
		recomputed += take_over_one(b, gen, in, out, filt);
		since = mono_ns();   /* one block, then give the others a grace again */
	}
	/* No thread may read the input once we return (run_blocks). */
	while (atomic_load_explicit(&b->loading, memory_order_seq_cst) != 0)
		cpu_relax();
	return recomputed;
}

/* The caller's completion record of the CPI it just computed. */
static void queue_done(struct cpu_be *b, uint64_t tag, uint32_t mode, uint64_t t0,
		       uint32_t recomputed, unsigned woken, unsigned joined)
{
	struct pc_done *d = &b->q[(b->qhead + b->qcount) % b->depth];

	d->tag = tag;
	d->mode = mode;
	d->flags = PC_DONE_INPUT | PC_DONE_OUTPUT;
	d->nonfinite_rows = atomic_load_explicit(&b->nonfinite, memory_order_relaxed);
	d->device_ns = mono_ns() - t0;
	d->recomputed = recomputed;
	d->woken = woken;
	d->absent = (uint32_t)b->threads - joined;
	d->chunks = 0;
	b->qcount++;
}

/*
 * The radar chain on the compressed cube: each stage a job of the pool
 * (every thread takes items, the caller too; a stage waits for the last
 * one's items), the list on the caller. The chain reads no input slot, so
 * its jobs need neither the take-over nor the input-reader count. Blocks
 * of the next CPI expect committed[] at the previous job's gen
 * (finish_block): the chain's jobs took gens, so committed[] moves to the
 * last one.
 */
static void run_radar(struct cpu_be *b, void *out, void *det, uint32_t mode)
{
	uint64_t gen = 0;

	radar_cpu_begin(b->radar, out);
	for (unsigned st = 0; st < RADAR_CPU_STAGES; st++) {
		size_t items = radar_cpu_items(b->radar, st);

		if (!items)
			continue;
		b->job.radar_stage = (int)st;
		gen = workpool_submit(b->pool, items, NULL);
		run_blocks(b, 0, gen);
		while (!workpool_finished(b->pool))
			cpu_relax();
	}
	b->job.radar_stage = -1;
	radar_cpu_finish(b->radar, det, mode);
	if (gen)
		for (size_t k = 0; k < b->nblocks; k++)
			atomic_store_explicit(&b->committed[k], gen, memory_order_relaxed);
}

/* One stage of the beams' items over the pool, the caller included; then
 * committed[] follows the pool's gen, as after run_radar. */
static void run_beam_stage(struct cpu_be *b, int stage, size_t items)
{
	uint64_t gen;

	b->job.radar_stage = -1;
	b->job.beam_stage = stage;
	gen = workpool_submit(b->pool, items, NULL);
	run_blocks(b, 0, gen);
	while (!workpool_finished(b->pool))
		cpu_relax();
	while (atomic_load_explicit(&b->loading, memory_order_seq_cst) != 0)
		cpu_relax();
	b->job.beam_stage = BEAM_STAGE_NONE;
	for (size_t k = 0; k < b->nblocks; k++)
		atomic_store_explicit(&b->committed[k], gen, memory_order_relaxed);
}

/* A CPI whose weights could not be made: pc_write_skipped's results. */
static void write_skipped(struct cpu_be *b, void *out, void *det, uint32_t mode)
{
	if (out) {
		float *o = out;

		for (size_t i = 0; i < b->bm.out_bytes / sizeof(float); i++)
			o[i] = NAN;
	}
	if (det) {
		struct chirp_det_header *h = det;

		memset(h, 0, sizeof(*h));
		h->magic = CHIRP_DET_MAGIC;
		h->version = CHIRP_DET_VERSION;
		h->record_bytes = sizeof(struct chirp_det_record);
		h->mode = mode;
		h->flags = CHIRP_DET_SKIPPED;
		h->doppler_bins = b->bm.nd;
		h->range_gates = (uint32_t)b->R;
	}
}

/*
 * The beams of one CPI into xb (doc/beams.md): its weights (the set
 * pointed at the CPI, or MVDR from its training cells), then W X over the
 * pool in column ranges. Returns 0, 1 when MVDR found no weights (the CPI
 * is skipped), or -EIO (a pointing pc.c passed that the set refuses: a
 * bug).
 */
static int form_beams(struct cpu_be *b, const struct pc_cpi_cmd *cmd)
{
	const struct pc_beam_setup *bs = b->bm.bs;
	size_t BC2 = 2 * (size_t)bs->beams * bs->channels;

	if (beam_set_point(b->bm.set, cmd->pointing_az_deg, cmd->pointing_el_deg, b->err,
			   sizeof(b->err)) < 0)
		return -EIO;
	b->bm.in = cmd->in;
	b->bm.x = cmd->in;
	if (b->bm.xf) {
		run_beam_stage(b, BEAM_STAGE_CONVERT, b->bm.in_rows);
		b->bm.x = b->bm.xf;
	}
	if (b->bm.mvdr) {
		mvdr_covariance(b->bm.mvdr, b->bm.x);
		if (mvdr_solve(b->bm.mvdr, b->bm.set, b->bm.wf, b->bm.wd) < 0)
			return 1;
	} else {
		memcpy(b->bm.wf, beam_weights(b->bm.set), BC2 * sizeof(float));
		memcpy(b->bm.wd, beam_weights_d(b->bm.set), BC2 * sizeof(double));
	}
	run_beam_stage(b, BEAM_STAGE_FORM, (b->bm.cols + BEAM_ITEM_COLS - 1) / BEAM_ITEM_COLS);
	return 0;
}

/*
 * The CPI's snapshot (pc_backend.h, pc_snap_cmd): max-hold of the chain's
 * maps M [C][Nd][R] (power, what a map_power output copies out, in every
 * output mode), on the caller, once the chain is done; every cell
 * -INFINITY for a skipped CPI.
 */
static void write_snap(const struct cpu_be *b, const struct pc_snap_cmd *sn, int skipped)
{
	if (!sn)
		return;
	if (skipped) {
		for (size_t i = 0; i < (size_t)sn->maps * sn->rows * sn->cols; i++)
			sn->cells[i] = -INFINITY;
		return;
	}
	maxhold_select(sn->cells, radar_cpu_map(b->radar), b->rs->channels, sn->map_mask,
		       b->rs->nd, b->rs->samples, sn->dd, sn->dr);
}

/*
 * One CPI, start to end, on the caller's thread: its beams (if any), then
 * publish it to the pool, compute the blocks nobody has claimed, wait for
 * (or take over) the rest. The previous CPI's blocks are all done and no
 * thread reads its input (wait_blocks), so the job and nonfinite are the
 * caller's to reset; the pool's submit releases them with the CPI's
 * ticket.
 */
static int cpu_submit_cpi(void *be, const struct pc_cpi_cmd *cmd)
{
	struct cpu_be *b = be;
	const void *in = cmd->in;
	uint64_t t0, gen;
	uint32_t recomputed;
	unsigned woken, joined;

	if (b->qcount == b->depth)
		return -EAGAIN;
#ifdef CHIRP_FAULT_INJECT
	if (b->fault_armed) {
		b->fault_armed = false;
		snprintf(b->err, sizeof(b->err), "injected fault (pc_inject_fault)");
		return -EIO;
	}
#endif
	t0 = mono_ns();
	atomic_store_explicit(&b->nonfinite, 0, memory_order_relaxed);
	if (b->bm.bs) {
		int rc = form_beams(b, cmd);

		if (rc < 0)
			return rc;
		if (rc > 0) {
			write_skipped(b, cmd->out, cmd->det, cmd->mode);
			write_snap(b, cmd->snap, 1);
			queue_done(b, cmd->tag, cmd->mode, t0, 0, 0, (unsigned)b->threads);
			b->q[(b->qhead + b->qcount - 1) % b->depth].flags |= PC_DONE_SKIPPED;
			return 0;
		}
		in = b->bm.xb;
	}
	b->job.in = in;
	b->job.out = cmd->out;
	b->job.filt = cmd->filt;
	b->job.radar_stage = -1;
	gen = workpool_submit(b->pool, b->nblocks, &woken);
	run_blocks(b, 0, gen);
	recomputed = wait_blocks(b, gen, in, cmd->out, cmd->filt);
	joined = workpool_joined(b->pool);
	if (b->radar) {
		run_radar(b, cmd->out, cmd->det, cmd->mode);
		write_snap(b, cmd->snap, 0);
	}
	queue_done(b, cmd->tag, cmd->mode, t0, recomputed, woken, joined);
	return 0;
}

static int cpu_submit(void *be, const void *in, void *out, void *det, uint64_t tag, unsigned filt,
		      uint32_t mode)
{
	struct pc_cpi_cmd cmd = {
		.in = in, .out = out, .det = det, .tag = tag, .filt = filt, .mode = mode,
	};

	return cpu_submit_cpi(be, &cmd);
}

/* Everything finished in submit: nothing ever to wait for. */
static int cpu_poll(void *be, struct pc_done *done, int max, int timeout_ms)
{
	struct cpu_be *b = be;
	int n = 0;

	while (b->qcount && n < max) {
		done[n++] = b->q[b->qhead];
		b->qhead = (b->qhead + 1) % b->depth;
		b->qcount--;
	}
	return n;
}

static unsigned cpu_in_flight(void *be)
{
	struct cpu_be *b = be;

	return b->qcount;
}

static const char *cpu_last_error(void *be)
{
	struct cpu_be *b = be;

	return b->err;
}

static int cpu_inject_fault(void *be)
{
#ifdef CHIRP_FAULT_INJECT
	struct cpu_be *b = be;

	b->fault_armed = true;
	return 0;
#else
	return -ENOTSUP;
#endif
}

static int cpu_bind_threads(void *be, const cpu_set_t *cpus)
{
	struct cpu_be *b = be;

	return workpool_bind(b->pool, cpus);
}

void pc_cpu_identity(int threads, char *buf, size_t len)
{
	char model[128] = "unknown";
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");

	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && c) {
			snprintf(model, sizeof(model), "%s", c + 2);
			model[strcspn(model, "\n")] = '\0';
			break;
		}
	}
	if (f)
		fclose(f);
	snprintf(buf, len, "cpu %s, %ld cpus, %s, %d threads", model, sysconf(_SC_NPROCESSORS_ONLN),
		 fftwf_version, threads);
}

const struct pc_backend_ops pc_cpu_ops = {
	.name = "cpu",
	.create = cpu_create,
	.destroy = cpu_destroy,
	.info = cpu_info,
	.register_host = cpu_register_host,
	.unregister_host = cpu_unregister_host,
	.submit = cpu_submit,
	.poll = cpu_poll,
	.in_flight = cpu_in_flight,
	.last_error = cpu_last_error,
	.inject_fault = cpu_inject_fault,
	.bind_threads = cpu_bind_threads,
	.submit_cpi = cpu_submit_cpi,
	.beams = 1,
	.snapshots = 1,
};
