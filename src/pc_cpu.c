/*
 * pc_cpu.c — CPU pulse-compression backend on FFTW3 single precision
 * (implements pc_backend.h; the reference the CUDA backend is tested
 * against).
 *
 * Per CPI, rows are processed in blocks of block_rows rows that fit in the
 * L2 cache (CHIRP_PC_BLOCK_KIB, default 256 KiB per thread): load + convert
 * + zero-pad the block into one work buffer, batched forward FFT over the
 * block, multiply by the filter, batched inverse FFT, write gates 0..R-1 in
 * the output mode. Doing the five passes on a cache-sized block instead of
 * the whole CPI keeps memory traffic at one read of the input and one write
 * of the output. The batched plans (one for a full block, one for the
 * remainder) and the work buffer are made once in create; submit/poll
 * allocate nothing.
 *
 * Planning: FFTW_ESTIMATE by default (create stays fast: tests, reloads);
 * FFTW_MEASURE when the environment has CHIRP_FFTW_MEASURE=1 (the benchmark
 * sets it) — better plans, but create then takes up to seconds. The FFTW
 * planner is not thread-safe, so every plan/destroy call in this process
 * goes through fftw_lock; fftwf_init_threads runs once (pthread_once).
 * cpu_threads > 1 plans with fftwf_plan_with_nthreads: FFTW splits each
 * block's rows between threads; the convert/multiply/store passes stay on
 * the calling thread.
 *
 * Fault injection (pc_inject_fault) is compiled in unless built with
 * -DCHIRP_NO_FAULT_INJECT: the next submit then fails with -EIO as a device
 * error would, so the daemon's fault handling can be tested without a GPU.
 */
#include "pc_backend.h"

#include <errno.h>
#include <float.h>
#include <fftw3.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CHIRP_NO_FAULT_INJECT
#define CHIRP_FAULT_INJECT 1
#endif

static pthread_mutex_t fftw_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fftw_once = PTHREAD_ONCE_INIT;
static int fftw_threads_ok;

static void fftw_threads_init(void)
{
	fftw_threads_ok = fftwf_init_threads() != 0;
}

struct cpu_be {
	size_t R, L, rows, nfft;
	size_t dist;                 /* complex samples between rows in work */
	enum pc_format fmt;
	enum pc_output mode;
	int threads;
	size_t block_rows;
	fftwf_complex *work;         /* block_rows * dist                   */
	fftwf_complex *filt;         /* nfft                                */
	fftwf_plan fwd, inv;         /* block_rows rows                     */
	fftwf_plan fwd_tail, inv_tail; /* rows % block_rows rows, or NULL   */
	bool pending;                /* depth 1: one finished CPI to report */
	struct pc_done done;
	bool fault_armed;
	bool measure;
	char err[256];
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static size_t env_size(const char *name, size_t dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0)
		return dflt;
	return (size_t)v;
}

/* Plan howmany rows in place on b->work, under fftw_lock. NULL on failure. */
static fftwf_plan plan_rows(struct cpu_be *b, size_t howmany, int sign)
{
	int n = (int)b->nfft;
	fftwf_plan p;

	pthread_mutex_lock(&fftw_lock);
	if (fftw_threads_ok)
		fftwf_plan_with_nthreads(b->threads);
	p = fftwf_plan_many_dft(1, &n, (int)howmany,
				b->work, NULL, 1, (int)b->dist,
				b->work, NULL, 1, (int)b->dist,
				sign, b->measure ? FFTW_MEASURE : FFTW_ESTIMATE);
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

static void cpu_destroy(void *be)
{
	struct cpu_be *b = be;

	if (!b)
		return;
	destroy_plan(b->fwd);
	destroy_plan(b->inv);
	destroy_plan(b->fwd_tail);
	destroy_plan(b->inv_tail);
	fftwf_free(b->work);
	fftwf_free(b->filt);
	free(b);
}

static void *cpu_create(const struct pc_setup *s, char *err, size_t errlen)
{
	struct cpu_be *b;
	size_t row_bytes, target, tail;
	const char *m;

	if (s->nfft < s->samples + s->ref_len - 1 || s->nfft > INT_MAX || s->rows < 1) {
		seterr(err, errlen, "cpu: invalid setup (nfft %zu, R %u, L %zu, rows %zu)",
		       s->nfft, s->samples, s->ref_len, s->rows);
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		seterr(err, errlen, "cpu: out of memory");
		return NULL;
	}
	b->R = s->samples;
	b->L = s->ref_len;
	b->rows = s->rows;
	b->nfft = s->nfft;
	b->fmt = s->in_format;
	b->mode = s->out_mode;
	b->threads = s->cpu_threads > 0 ? s->cpu_threads : 1;
	m = getenv("CHIRP_FFTW_MEASURE");
	b->measure = m && strcmp(m, "1") == 0;
	/* Rows start on 64-byte boundaries so every row is SIMD-aligned. */
	b->dist = (b->nfft + 7) & ~(size_t)7;

	pthread_once(&fftw_once, fftw_threads_init);
	if (b->threads > 1 && !fftw_threads_ok) {
		seterr(err, errlen, "cpu: fftwf_init_threads failed: cannot use cpu_threads %d", b->threads);
		goto fail;
	}

	/* Block: as many rows as fit in target bytes (at least one row). */
	row_bytes = b->dist * sizeof(fftwf_complex);
	target = env_size("CHIRP_PC_BLOCK_KIB", 256) * 1024 * (size_t)b->threads;
	b->block_rows = target / row_bytes;
	if (b->block_rows < 1)
		b->block_rows = 1;
	if (b->block_rows > (size_t)b->threads && b->threads > 1)
		b->block_rows -= b->block_rows % (size_t)b->threads; /* even split */
	if (b->block_rows > b->rows)
		b->block_rows = b->rows;
	if (b->block_rows > INT_MAX / b->dist)
		b->block_rows = INT_MAX / b->dist;

	b->work = fftwf_malloc(b->block_rows * row_bytes);
	b->filt = fftwf_malloc(b->nfft * sizeof(fftwf_complex));
	if (!b->work || !b->filt) {
		seterr(err, errlen, "cpu: out of memory for a %zu x %zu work buffer",
		       b->block_rows, b->dist);
		goto fail;
	}
	memcpy(b->filt, s->filt, b->nfft * sizeof(fftwf_complex));

	b->fwd = plan_rows(b, b->block_rows, FFTW_FORWARD);
	b->inv = plan_rows(b, b->block_rows, FFTW_BACKWARD);
	if (!b->fwd || !b->inv) {
		seterr(err, errlen, "cpu: fftwf_plan_many_dft(n=%zu, howmany=%zu) failed",
		       b->nfft, b->block_rows);
		goto fail;
	}
	tail = b->rows % b->block_rows;
	if (tail) {
		b->fwd_tail = plan_rows(b, tail, FFTW_FORWARD);
		b->inv_tail = plan_rows(b, tail, FFTW_BACKWARD);
		if (!b->fwd_tail || !b->inv_tail) {
			seterr(err, errlen, "cpu: fftwf_plan_many_dft(n=%zu, howmany=%zu) failed",
			       b->nfft, tail);
			goto fail;
		}
	}
	return b;
fail:
	cpu_destroy(b);
	return NULL;
}

static void cpu_info(void *be, struct pc_info *info)
{
	struct cpu_be *b = be;

	info->depth = 1;
	snprintf(info->device, sizeof(info->device), "cpu (fftw3f, %d thread%s, %s)",
		 b->threads, b->threads == 1 ? "" : "s", b->measure ? "measured plans" : "estimated plans");
	snprintf(info->staging, sizeof(info->staging), "none");
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
 * Load row x (R samples) into w, zero-padded to nfft. Returns 1 if x holds
 * a NaN or Inf. !(|v| <= FLT_MAX) is true exactly for NaN and +-Inf, and
 * the or-reduction vectorizes.
 */
static int load_cf32(const float *restrict x, float *restrict w, size_t R, size_t nfft)
{
	int bad = 0;

	for (size_t i = 0; i < 2 * R; i++) {
		float v = x[i];

		w[i] = v;
		bad |= !(fabsf(v) <= FLT_MAX);
	}
	memset(w + 2 * R, 0, (nfft - R) * 2 * sizeof(float));
	return bad;
}

static void load_sc16(const int16_t *restrict x, float *restrict w, size_t R, size_t nfft)
{
	const float scale = 1.0f / 32768.0f;

	for (size_t i = 0; i < 2 * R; i++)
		w[i] = (float)x[i] * scale;
	memset(w + 2 * R, 0, (nfft - R) * 2 * sizeof(float));
}

static void mul_filt(float *restrict w, const float *restrict f, size_t nfft)
{
	for (size_t i = 0; i < nfft; i++) {
		float a = w[2 * i], bq = w[2 * i + 1], c = f[2 * i], d = f[2 * i + 1];

		w[2 * i] = a * c - bq * d;
		w[2 * i + 1] = a * d + bq * c;
	}
}

static void store_mag(const float *restrict w, float *restrict y, size_t R)
{
	for (size_t i = 0; i < R; i++) {
		float re = w[2 * i], im = w[2 * i + 1];
		float p = re * re + im * im;

		/* hypotf only where re^2+im^2 overflows (|y| > ~1.8e19) */
		y[i] = p <= FLT_MAX ? sqrtf(p) : hypotf(re, im);
	}
}

static void store_db(const float *restrict w, float *restrict y, size_t R)
{
	for (size_t i = 0; i < R; i++) {
		float re = w[2 * i], im = w[2 * i + 1];
		float p = re * re + im * im;

		if (p < PC_POWER_FLOOR)
			p = PC_POWER_FLOOR;
		y[i] = 10.0f * log10f(p);
	}
}

static int cpu_submit(void *be, const void *in, void *out, uint64_t tag)
{
	struct cpu_be *b = be;
	size_t in_row = b->R * pc_format_sample_bytes(b->fmt);
	size_t out_row = b->R * pc_output_sample_bytes(b->mode);
	uint32_t nonfinite = 0;

	if (b->pending)
		return -EAGAIN;
#ifdef CHIRP_FAULT_INJECT
	if (b->fault_armed) {
		b->fault_armed = false;
		snprintf(b->err, sizeof(b->err), "injected fault (pc_inject_fault)");
		return -EIO;
	}
#endif
	for (size_t r0 = 0; r0 < b->rows; r0 += b->block_rows) {
		size_t nr = b->rows - r0 < b->block_rows ? b->rows - r0 : b->block_rows;
		bool tail = nr != b->block_rows;

		for (size_t i = 0; i < nr; i++) {
			const char *x = (const char *)in + (r0 + i) * in_row;
			float *w = (float *)(b->work + i * b->dist);

			if (b->fmt == PC_FMT_CF32)
				nonfinite += (uint32_t)load_cf32((const float *)x, w, b->R, b->nfft);
			else
				load_sc16((const int16_t *)x, w, b->R, b->nfft);
		}
		fftwf_execute(tail ? b->fwd_tail : b->fwd);
		for (size_t i = 0; i < nr; i++)
			mul_filt((float *)(b->work + i * b->dist), (const float *)b->filt, b->nfft);
		fftwf_execute(tail ? b->inv_tail : b->inv);
		for (size_t i = 0; i < nr; i++) {
			const float *w = (const float *)(b->work + i * b->dist);
			char *y = (char *)out + (r0 + i) * out_row;

			switch (b->mode) {
			case PC_OUT_COMPLEX:
				memcpy(y, w, out_row);
				break;
			case PC_OUT_MAGNITUDE:
				store_mag(w, (float *)y, b->R);
				break;
			case PC_OUT_POWER_DB:
				store_db(w, (float *)y, b->R);
				break;
			}
		}
	}
	b->done.tag = tag;
	b->done.flags = PC_DONE_INPUT | PC_DONE_OUTPUT;
	b->done.nonfinite_rows = nonfinite;
	b->pending = true;
	return 0;
}

/* Everything finished in submit: nothing ever to wait for. */
static int cpu_poll(void *be, struct pc_done *done, int max, int timeout_ms)
{
	struct cpu_be *b = be;

	if (!b->pending || max < 1)
		return 0;
	done[0] = b->done;
	b->pending = false;
	return 1;
}

static unsigned cpu_in_flight(void *be)
{
	struct cpu_be *b = be;

	return b->pending ? 1 : 0;
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
};
