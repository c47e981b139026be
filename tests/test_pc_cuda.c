/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pc_cuda.c — the CUDA backend against the CPU backend (the reference)
 * and against an independent double-precision direct correlation.
 *
 * Every test skips (cmocka skip(): reported skipped, never passed) when
 * pc_cuda_available() is 0: no GPU, no driver, or a build without CUDA.
 *
 * Sizes: R = 1000 and 9000 (row bytes 8000 and 72000 are not multiples of
 * 256, and nfft rows of 1040/10000 points are not either, so the device
 * pitch differs from the packed row), every window, both input formats,
 * every output mode, stream depths 1, 2 and 4, registered and staged host
 * memory, non-finite rows, device selection, an injected device fault,
 * and radar modes changing per CPI (each CPI against the CPU backend for
 * its own mode, with graphs on and off and chunked layouts). Both FFT
 * engines (tune.cuda_fused): the default picks the fused kernel for every
 * size above; test_fused_* hold it and the cuFFT path to the CPU backend
 * over FFT lengths that use each of its butterflies; test_fused_fft_rows
 * that fused sets without the radar chain take no FFT rows' device memory.
 * Tolerance: relative L2 error <= 1e-5 (float32 FFTs on both sides).
 *
 * The radar chain (test_radar_*): maps for every MTI and map mode, the
 * four CFAR methods per channel and integrated, overflow, PC_OUT_NONE,
 * depth, staging, graphs and modes, each CPI against the CPU backend's
 * chain (the reference): maps within 1e-5, detection lists equal.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "chirp/detect.h"
#include "chirp/pc.h"
#include "waveform.h"

#include "tri_modes.h"   /* after cmocka.h and waveform.h */

#define TOL 1e-5

#define NEED_GPU()                                                           \
	do {                                                                 \
		if (!pc_cuda_available()) {                                  \
			print_message("no usable CUDA device: skipped\n");   \
			skip();                                              \
		}                                                            \
	} while (0)

/* ---- helpers -------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	/* splitmix64: deterministic per seed, independent of libc rand(). */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(void)   /* [-1, 1) */
{
	return (double)(rng_next() >> 11) / (double)(1ull << 52) - 1.0;
}

/* Random CPI input: cf32 in [-1,1), or sc16 over most of the int16 range. */
static void fill_input(void *buf, enum pc_format f, size_t samples)
{
	if (f == PC_FMT_CF32) {
		float *x = buf;

		for (size_t i = 0; i < 2 * samples; i++)
			x[i] = (float)rng_unit();
	} else {
		int16_t *x = buf;

		for (size_t i = 0; i < 2 * samples; i++)
			x[i] = (int16_t)(rng_unit() * 30000.0);
	}
}

/* LFM reference of L samples with a window, through the product's wf_build. */
static float *make_ref(enum wf_window win, size_t L, unsigned R)
{
	struct wf_params w;
	char err[256] = "";
	float *ref = NULL;
	size_t len = 0;

	wf_params_init(&w);
	w.type = WF_LFM;
	w.sample_rate_hz = 25e6;
	w.bandwidth_hz = 10e6;
	w.pulse_width_s = (double)L / w.sample_rate_hz;
	w.window = win;
	if (wf_build(&w, R, &ref, &len, err, sizeof(err)) != 0)
		fail_msg("wf_build: %s", err);
	assert_int_equal(len, L);
	return ref;
}

/*
 * The backend tuning every pc made by make_pc gets (pc_params.tune): the
 * defaults of pc_params_init, reset before each test (reset_tune); a test
 * sets fields (cuda_chunks, cuda_graphs...) before it creates its pcs.
 */
static struct pc_tuning tune;

static void tune_defaults(void)
{
	struct pc_params p;

	pc_params_init(&p);
	tune = p.tune;
}

static int reset_tune(void **state)
{
	(void)state;
	tune_defaults();
	return 0;
}

static struct pc *make_pc(enum pc_backend be, unsigned C, unsigned P, unsigned R,
			  enum pc_format f, enum pc_output m, const float *ref, size_t L,
			  unsigned streams, enum pc_staging staging)
{
	struct pc_params p;
	char err[256] = "";
	struct pc *pc;

	pc_params_init(&p);
	p.channels = C;
	p.pulses = P;
	p.samples = R;
	p.in_format = f;
	p.out_mode = m;
	p.ref = ref;
	p.ref_len = L;
	p.backend = be;
	p.streams = streams;
	p.staging = staging;
	p.tune = tune;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create(%s): %s", pc_backend_name(be), err);
	return pc;
}

/* ||a - b|| / ||b|| over n floats (NaN anywhere -> a large number). */
static double rel_l2(const float *a, const float *b, size_t n)
{
	double num = 0.0, den = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = (double)a[i] - (double)b[i];

		num += d * d;
		den += (double)b[i] * b[i];
	}
	if (!isfinite(num) || !isfinite(den))
		return 1e30;
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/*
 * Output comparison. power_db is compared as linear power 10^(dB/10):
 * where the exact result is ~0 (a window that ends in zeros, e.g. blackman,
 * makes the last gates ~1e-17 of the peak), both backends return float
 * rounding noise, and its logarithm differs by tens of dB although both are
 * right to float precision. In the linear domain the usual bound holds.
 */
static double out_err(const float *a, const float *b, size_t n, enum pc_output m)
{
	double num = 0.0, den = 0.0;

	if (m != PC_OUT_POWER_DB)
		return rel_l2(a, b, n);
	for (size_t i = 0; i < n; i++) {
		double pa = pow(10.0, a[i] / 10.0), pb = pow(10.0, b[i] / 10.0);

		num += (pa - pb) * (pa - pb);
		den += pb * pb;
	}
	if (!isfinite(num) || !isfinite(den))
		return 1e30;
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Poison: a NaN bit pattern the GPU never writes for finite inputs. */
static void poison(void *buf, size_t bytes)
{
	memset(buf, 0xff, bytes);
}

/*
 * One CPI of random input (samples complex samples in format f, a fresh
 * draw) through cpu and gpu synchronously, each output poisoned first; the
 * error of gpu's output against cpu's (out_err, mode m), and each one's
 * non-finite row count in *nfc, *nfg.
 */
static double run_vs_cpu(struct pc *cpu, struct pc *gpu, enum pc_format f, enum pc_output m,
			 size_t samples, uint32_t *nfc, uint32_t *nfg)
{
	size_t ib = pc_in_bytes(cpu), ob = pc_out_bytes(cpu);
	void *in = malloc(ib);
	float *yc = malloc(ob), *yg = malloc(ob);
	double e;

	assert_non_null(in);
	assert_non_null(yc);
	assert_non_null(yg);
	fill_input(in, f, samples);
	poison(yc, ob);
	poison(yg, ob);
	assert_int_equal(pc_execute(cpu, in, yc, nfc), 0);
	assert_int_equal(pc_execute(gpu, in, yg, nfg), 0);
	e = out_err(yg, yc, ob / sizeof(float), m);
	free(in);
	free(yc);
	free(yg);
	return e;
}

/* Run one CPI synchronously on both and compare the outputs. */
static double gpu_vs_cpu_once(unsigned C, unsigned P, unsigned R, enum pc_format f,
			      enum pc_output m, enum wf_window win, size_t L,
			      unsigned streams)
{
	float *ref = make_ref(win, L, R);
	struct pc *cpu = make_pc(PC_BACKEND_CPU, C, P, R, f, m, ref, L, 1, PC_STAGING_AUTO);
	struct pc *gpu = make_pc(PC_BACKEND_CUDA, C, P, R, f, m, ref, L, streams, PC_STAGING_AUTO);
	uint32_t nfc = 99, nfg = 99;
	double e;

	assert_int_equal(pc_in_bytes(gpu), pc_in_bytes(cpu));
	assert_int_equal(pc_out_bytes(gpu), pc_out_bytes(cpu));
	e = run_vs_cpu(cpu, gpu, f, m, (size_t)C * P * R, &nfc, &nfg);
	assert_int_equal(nfc, 0);
	assert_int_equal(nfg, 0);
	print_message("  %-4s %-9s %-8s R=%-5u L=%-4zu streams=%u: rel L2 %.2e\n",
		      pc_format_name(f), pc_output_name(m), wf_window_name(win), R, L,
		      streams, e);
	pc_destroy(cpu);
	pc_destroy(gpu);
	free(ref);
	return e;
}

/* ---- tests ------------------------------------------------------------------ */

/* Every window x both formats x both sizes (complex output). */
static void test_windows_formats_sizes(void **state)
{
	static const enum wf_window wins[] = { WIN_RECT, WIN_HAMMING, WIN_HANN, WIN_BLACKMAN, WIN_TAYLOR };
	static const unsigned depths[] = { 1, 2, 4 };
	unsigned k = 0;

	(void)state;
	NEED_GPU();
	for (int f = PC_FMT_CF32; f <= PC_FMT_SC16; f++)
		for (size_t w = 0; w < 5; w++) {
			assert_true(gpu_vs_cpu_once(3, 5, 1000, f, PC_OUT_COMPLEX, wins[w], 137,
						    depths[k++ % 3]) <= TOL);
			assert_true(gpu_vs_cpu_once(2, 3, 9000, f, PC_OUT_COMPLEX, wins[w], 1000,
						    depths[k++ % 3]) <= TOL);
		}
}

/* Every output mode x both formats x both sizes x depths 1, 2, 4. */
static void test_output_modes(void **state)
{
	static const unsigned depths[] = { 1, 2, 4 };

	(void)state;
	NEED_GPU();
	for (int f = PC_FMT_CF32; f <= PC_FMT_SC16; f++)
		for (int m = PC_OUT_COMPLEX; m <= PC_OUT_POWER_DB; m++)
			for (size_t d = 0; d < 3; d++) {
				assert_true(gpu_vs_cpu_once(2, 4, 1000, f, m, WIN_HAMMING, 250,
							    depths[d]) <= TOL);
				assert_true(gpu_vs_cpu_once(1, 3, 9000, f, m, WIN_TAYLOR, 1000,
							    depths[d]) <= TOL);
			}
}

/*
 * One CPI of C x P x R through a GPU pc with this nfft and tune.cuda_fused
 * = want, against the CPU backend; *engine gets pc_info.fft_engine.
 */
static double engine_vs_cpu(unsigned C, unsigned P, unsigned R, size_t L, size_t nfft,
			    enum pc_format f, enum pc_output m, enum pc_switch want,
			    char *engine, size_t elen)
{
	float *ref = make_ref(WIN_HAMMING, L, R);
	struct pc_params p;
	struct pc_info info;
	struct pc *cpu, *gpu;
	char err[256] = "";
	uint32_t nfc = 99, nfg = 99;
	double e;

	pc_params_init(&p);
	p.channels = C;
	p.pulses = P;
	p.samples = R;
	p.in_format = f;
	p.out_mode = m;
	p.ref = ref;
	p.ref_len = L;
	p.nfft = nfft;
	p.streams = 2;
	p.backend = PC_BACKEND_CPU;
	cpu = pc_create(&p, err, sizeof(err));
	if (!cpu)
		fail_msg("pc_create(cpu): %s", err);
	p.backend = PC_BACKEND_CUDA;
	p.tune.cuda_fused = want;
	gpu = pc_create(&p, err, sizeof(err));
	if (!gpu)
		fail_msg("pc_create(cuda, nfft %zu): %s", nfft, err);
	pc_get_info(gpu, &info);
	snprintf(engine, elen, "%s", info.fft_engine);
	e = run_vs_cpu(cpu, gpu, f, m, (size_t)C * P * R, &nfc, &nfg);
	assert_int_equal(nfg, nfc);
	print_message("  nfft %-6zu %-4s %-9s %-34s rel L2 %.2e\n", nfft, pc_format_name(f),
		      pc_output_name(m), engine, e);
	pc_destroy(cpu);
	pc_destroy(gpu);
	free(ref);
	return e;
}

/*
 * The fused kernel over FFT lengths whose plans use every butterfly it
 * has (2..10, 12, 16: powers of two, 3, 5 and 7 alone and mixed, from
 * two passes up), each against the CPU backend, and the cuFFT path on the
 * same CPIs: both within TOL, each named by pc_info.fft_engine.
 */
static void test_fused_lengths(void **state)
{
	static const size_t nffts[] = { 64, 96, 210, 343, 500, 729, 1000, 1024, 1152, 2187,
					3125, 4608, 5120, 7168, 10000, 11200, 12288 };
	char eng[64];

	(void)state;
	NEED_GPU();
	for (size_t i = 0; i < sizeof(nffts) / sizeof(nffts[0]); i++) {
		size_t n = nffts[i], L = n / 5 + 1, R = n - L + 1 - (n % 3);
		int f = i % 2 ? PC_FMT_SC16 : PC_FMT_CF32;

		assert_true(engine_vs_cpu(2, 3, (unsigned)R, L, n, f, PC_OUT_COMPLEX, PC_SWITCH_ON,
					  eng, sizeof(eng)) <= TOL);
		assert_true(strncmp(eng, "fused (", 7) == 0);
		assert_true(engine_vs_cpu(2, 3, (unsigned)R, L, n, f, PC_OUT_COMPLEX, PC_SWITCH_OFF,
					  eng, sizeof(eng)) <= TOL);
		assert_string_equal(eng, "cufft");
	}
}

/* Every output mode and format through both engines, with non-finite rows
 * counted the same; and auto's choice: fused where it can, else cuFFT. */
static void test_fused_modes_auto(void **state)
{
	char eng[64];

	(void)state;
	NEED_GPU();
	for (int f = PC_FMT_CF32; f <= PC_FMT_SC16; f++)
		for (int m = PC_OUT_COMPLEX; m <= PC_OUT_POWER_DB; m++)
			for (int w = PC_SWITCH_OFF; w <= PC_SWITCH_ON; w++)
				assert_true(engine_vs_cpu(3, 4, 3000, 500, 0, f, m, w, eng,
							  sizeof(eng)) <= TOL);
	/* auto: 1040 = 2^4 5 13 has no kernel butterfly for 13 */
	assert_true(engine_vs_cpu(1, 2, 900, 100, 1040, PC_FMT_CF32, PC_OUT_COMPLEX,
				  PC_SWITCH_AUTO, eng, sizeof(eng)) <= TOL);
	assert_string_equal(eng, "cufft");
	assert_true(engine_vs_cpu(1, 2, 900, 100, 1000, PC_FMT_CF32, PC_OUT_COMPLEX,
				  PC_SWITCH_AUTO, eng, sizeof(eng)) <= TOL);
	assert_string_equal(eng, "fused (1000 = 10x10x10)");
}

/* cuda_fused = on where it cannot be: pc_create refuses and says why. */
static void test_fused_refused(void **state)
{
	static const size_t nffts[] = { 1040, 1 << 15 };
	static const char *const why[] = { "does not factor", "shared memory" };
	float *ref;

	(void)state;
	NEED_GPU();
	ref = make_ref(WIN_RECT, 64, 900);
	for (size_t i = 0; i < 2; i++) {
		struct pc_params p;
		char err[256] = "";
		struct pc *pc;

		pc_params_init(&p);
		p.channels = 1;
		p.pulses = 2;
		p.samples = 900;
		p.ref = ref;
		p.ref_len = 64;
		p.nfft = nffts[i];
		p.streams = 1;
		p.backend = PC_BACKEND_CUDA;
		p.tune.cuda_fused = PC_SWITCH_ON;
		pc = pc_create(&p, err, sizeof(err));
		print_message("  nfft %zu, cuda_fused = on: %s\n", nffts[i], err);
		assert_null(pc);
		assert_non_null(strstr(err, "cuda_fused = on"));
		assert_non_null(strstr(err, why[i]));
	}
	free(ref);
}

/*
 * GPU against y[n] = g sum_k x[n+k] conj(h[k]) computed directly in double,
 * with no FFT and no code shared with either backend.
 */
static void test_direct_reference(void **state)
{
	static const unsigned Rs[] = { 1000, 9000 };
	static const size_t Ls[] = { 313, 1000 };

	(void)state;
	NEED_GPU();
	for (size_t t = 0; t < 2; t++) {
		unsigned C = 1, P = 2, R = Rs[t];
		size_t L = Ls[t], rows = (size_t)C * P;
		float *ref = make_ref(WIN_HANN, L, R);
		struct pc *gpu = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX,
					 ref, L, 2, PC_STAGING_AUTO);
		float *x = malloc(rows * R * 8), *y = malloc(rows * R * 8);
		double *yr = malloc(rows * R * 2 * sizeof(double));
		double g = 0.0, num = 0.0, den = 0.0;

		assert_non_null(x);
		assert_non_null(y);
		assert_non_null(yr);
		fill_input(x, PC_FMT_CF32, rows * R);
		poison(y, rows * R * 8);
		assert_int_equal(pc_execute(gpu, x, y, NULL), 0);
		for (size_t k = 0; k < L; k++)
			g += (double)ref[2 * k] * ref[2 * k] + (double)ref[2 * k + 1] * ref[2 * k + 1];
		g = 1.0 / sqrt(g);
		for (size_t r = 0; r < rows; r++)
			for (size_t n = 0; n < R; n++) {
				double sr = 0.0, si = 0.0;
				const float *xr = x + 2 * r * R;

				for (size_t k = 0; k < L && n + k < R; k++) {
					double ar = xr[2 * (n + k)], ai = xr[2 * (n + k) + 1];
					double hr = ref[2 * k], hi = ref[2 * k + 1];

					sr += ar * hr + ai * hi;
					si += ai * hr - ar * hi;
				}
				yr[2 * (r * R + n)] = g * sr;
				yr[2 * (r * R + n) + 1] = g * si;
			}
		for (size_t i = 0; i < 2 * rows * R; i++) {
			double d = (double)y[i] - yr[i];

			num += d * d;
			den += yr[i] * yr[i];
		}
		print_message("  direct reference R=%u L=%zu: rel L2 %.2e\n", R, L, sqrt(num / den));
		assert_true(isfinite(num) && sqrt(num / den) <= TOL);
		pc_destroy(gpu);
		free(x);
		free(y);
		free(yr);
		free(ref);
	}
}

/*
 * Many CPIs through pc_submit/pc_poll with the queue kept full, from host
 * memory registered like a ring (MAP_SHARED), from plain malloc memory
 * (staged), and with staging = copy. Checks every output against the CPU,
 * the order of the reports and that input precedes output. A report must
 * mean what it says, as a ring's producer and consumer rely on: each
 * output is copied away the moment it is reported (a later write would be
 * missed), and each input slot is overwritten the moment its input is
 * reported (a copy still reading it would compute garbage); the CPU
 * reference uses a copy of the input taken before. want_graphs: 1 the
 * registered CPIs must have run as CUDA graphs, 0 none, -1 either.
 */
static void run_pipeline_g(unsigned streams, int use_mmap, enum pc_staging staging,
			   enum pc_format f, enum pc_output m, const char *want_staging,
			   int want_graphs)
{
	const unsigned C = 2, P = 8, R = 1000, K = 13;
	const size_t L = 200;
	float *ref = make_ref(WIN_BLACKMAN, L, R);
	struct pc *cpu = make_pc(PC_BACKEND_CPU, C, P, R, f, m, ref, L, 1, PC_STAGING_AUTO);
	struct pc *gpu = make_pc(PC_BACKEND_CUDA, C, P, R, f, m, ref, L, streams, staging);
	size_t ib = pc_in_bytes(gpu), ob = pc_out_bytes(gpu);
	size_t islot = (ib + 4095) & ~(size_t)4095, oslot = (ob + 4095) & ~(size_t)4095;
	char *inr, *outr;
	float *want = malloc(ob);
	char *orig = malloc(ib * K), *snap = malloc(ob * K);
	uint64_t next_in = 0, next_out = 0, submitted = 0;
	struct pc_info info;
	int in_seen[13] = { 0 };

	assert_non_null(want);
	assert_non_null(orig);
	assert_non_null(snap);
	if (use_mmap) {
		inr = mmap(NULL, islot * K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		outr = mmap(NULL, oslot * K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(inr != MAP_FAILED && outr != MAP_FAILED);
		assert_int_equal(pc_register_host(gpu, inr, islot * K), 0);
		assert_int_equal(pc_register_host(gpu, outr, oslot * K), 0);
	} else {
		inr = malloc(islot * K);
		outr = malloc(oslot * K);
		assert_non_null(inr);
		assert_non_null(outr);
	}
	for (unsigned k = 0; k < K; k++) {
		fill_input(inr + k * islot, f, (size_t)C * P * R);
		memcpy(orig + k * ib, inr + k * islot, ib);
		poison(outr + k * oslot, ob);
	}
	pc_get_info(gpu, &info);
	if (streams == 0) {
		/* auto: one of the depths tried, and what was measured said */
		assert_true(info.depth >= 2 && info.depth <= 4);
		assert_true(strncmp(info.depth_choice, "auto: 2 ", 8) == 0);
		print_message("  streams auto: depth %u (%s)\n", info.depth, info.depth_choice);
		streams = info.depth;
	} else {
		assert_int_equal(info.depth, streams);
		assert_string_equal(info.depth_choice, "");
	}

	/* Keep the queue full; the in-flight count never exceeds the depth. */
	while (next_out < K) {
		struct pc_done d[8];
		int n, rc;

		while (submitted < K) {
			rc = pc_submit(gpu, inr + submitted * islot, outr + submitted * oslot,
				       1000 + submitted);
			if (rc == -EAGAIN) {
				assert_int_equal(pc_in_flight(gpu), streams);
				break;
			}
			assert_int_equal(rc, 0);
			submitted++;
			assert_true(pc_in_flight(gpu) <= streams);
		}
		n = pc_poll(gpu, d, 8, 10000);
		assert_true(n > 0);   /* 10 s: a generous safety bound, not a timing */
		for (int i = 0; i < n; i++) {
			uint64_t k = d[i].tag - 1000;

			assert_true(k < K);
			assert_true(d[i].flags != 0);
			if (d[i].flags & PC_DONE_INPUT) {
				assert_int_equal(k, next_in);   /* inputs in order */
				in_seen[k] = 1;
				next_in++;
				poison(inr + k * islot, ib);    /* the producer reuses it */
			}
			if (d[i].flags & PC_DONE_OUTPUT) {
				assert_int_equal(k, next_out);  /* outputs in order */
				assert_true(in_seen[k]);        /* never before input */
				assert_int_equal(d[i].nonfinite_rows, 0);
				assert_true(d[i].chunks >= 1 && d[i].chunks <= 16);
				memcpy(snap + k * ob, outr + k * oslot, ob);   /* consumed */
				next_out++;
			}
		}
	}
	assert_int_equal(next_in, K);
	assert_int_equal(pc_in_flight(gpu), 0);
	{
		struct pc_done d[2];

		/* Nothing in flight: an endless wait returns at once. */
		assert_int_equal(pc_poll(gpu, d, 2, -1), 0);
	}
	for (unsigned k = 0; k < K; k++) {
		double e;

		poison(want, ob);
		assert_int_equal(pc_execute(cpu, orig + k * ib, want, NULL), 0);
		e = out_err((float *)(snap + k * ob), want, ob / sizeof(float), m);
		if (!(e <= TOL))
			fail_msg("CPI %u (streams %u, %s): rel L2 %.3e", k, streams,
				 use_mmap ? "registered" : "malloc", e);
	}
	pc_get_info(gpu, &info);
	print_message("  pipeline streams=%u %s %s/%s: %u CPIs ok, staging \"%s\", %llu as graphs\n",
		      streams, use_mmap ? "mmap" : "malloc", pc_format_name(f), pc_output_name(m), K,
		      info.staging, info.graph_cpis);
	assert_string_equal(info.staging, want_staging);
	if (want_graphs == 1)
		assert_true(info.graph_cpis == K);
	else if (want_graphs == 0)
		assert_true(info.graph_cpis == 0);
	pc_destroy(gpu);   /* unregisters before the memory goes */
	pc_destroy(cpu);
	if (use_mmap) {
		munmap(inr, islot * K);
		munmap(outr, oslot * K);
	} else {
		free(inr);
		free(outr);
	}
	free(want);
	free(orig);
	free(snap);
	free(ref);
}

static void run_pipeline(unsigned streams, int use_mmap, enum pc_staging staging,
			 enum pc_format f, enum pc_output m, const char *want_staging)
{
	run_pipeline_g(streams, use_mmap, staging, f, m, want_staging, -1);
}

/*
 * CUDA graphs (src/cuda/cu_graph.cu): registered CPIs run as one graph per
 * set and layout, their copies pointed at a new slot each time; staged
 * CPIs and tune.cuda_graphs = 0 run call by call. Same results either way.
 */
static void test_graphs(void **state)
{
	(void)state;
	NEED_GPU();
	assert_int_equal(tune.cuda_graphs, 1);   /* the default */
	run_pipeline_g(1, 1, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_COMPLEX, "registered", 1);
	run_pipeline_g(3, 1, PC_STAGING_AUTO, PC_FMT_SC16, PC_OUT_POWER_DB, "registered", 1);
	tune.cuda_chunks = 3;   /* 16 rows: 6+6+4 */
	run_pipeline_g(2, 1, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_MAGNITUDE, "registered", 1);
	tune.cuda_chunks = 0;
	run_pipeline_g(2, 0, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_COMPLEX, "copy", 0);
	tune.cuda_graphs = 0;
	run_pipeline_g(2, 1, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_COMPLEX, "registered", 0);
	tune_defaults();
}

static void test_pipeline_depths(void **state)
{
	(void)state;
	NEED_GPU();
	run_pipeline(1, 1, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_COMPLEX, "registered");
	run_pipeline(2, 1, PC_STAGING_AUTO, PC_FMT_SC16, PC_OUT_MAGNITUDE, "registered");
	run_pipeline(4, 1, PC_STAGING_REGISTER, PC_FMT_CF32, PC_OUT_POWER_DB, "registered");
	run_pipeline(0, 1, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_COMPLEX, "registered");   /* auto */
	run_pipeline(0, 0, PC_STAGING_COPY, PC_FMT_SC16, PC_OUT_COMPLEX, "copy");
}

static void test_pipeline_staging(void **state)
{
	(void)state;
	NEED_GPU();
	run_pipeline(2, 0, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_COMPLEX, "copy");
	run_pipeline(4, 0, PC_STAGING_AUTO, PC_FMT_SC16, PC_OUT_POWER_DB, "copy");
	run_pipeline(2, 1, PC_STAGING_COPY, PC_FMT_CF32, PC_OUT_MAGNITUDE, "copy");
}

#ifdef CHIRP_HAVE_CUDA
#include <cuda_runtime.h>

/* Whether p lies in page-locked host memory CUDA knows (registered). */
static int host_registered(const void *p)
{
	struct cudaPointerAttributes a;

	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return a.type == cudaMemoryTypeHost;
}
#else
static int host_registered(const void *p) { (void)p; return 0; }
#endif

/*
 * A reload's two generations: the new pc registers the ring mapping the old
 * one holds, and the old one is destroyed while the new one has CPIs in
 * flight from it. The mapping must stay registered until the last holder
 * lets go (were the old pc to unregister it under the new one's DMA, the
 * context would die with "unspecified launch failure"), and the new pc's
 * results must stay exact.
 */
static void test_shared_registration(void **state)
{
	const unsigned C = 2, P = 8, R = 1000, K = 6;
	const size_t L = 200;
	(void)state;
	NEED_GPU();
	float *ref = make_ref(WIN_HAMMING, L, R);
	struct pc *cpu = make_pc(PC_BACKEND_CPU, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 1,
				 PC_STAGING_AUTO);
	struct pc *a = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 2,
			       PC_STAGING_REGISTER);
	struct pc *b = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 2,
			       PC_STAGING_REGISTER);
	size_t ib = pc_in_bytes(b), ob = pc_out_bytes(b);
	size_t islot = (ib + 4095) & ~(size_t)4095, oslot = (ob + 4095) & ~(size_t)4095;
	char *inr = mmap(NULL, islot * K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *outr = mmap(NULL, oslot * K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	float *want = malloc(ob);
	unsigned submitted = 0, done = 0;
	struct pc_info info;

	assert_true(inr != MAP_FAILED && outr != MAP_FAILED);
	assert_non_null(want);
	for (unsigned k = 0; k < K; k++) {
		fill_input(inr + k * islot, PC_FMT_CF32, (size_t)C * P * R);
		poison(outr + k * oslot, ob);
	}
	assert_false(host_registered(inr));
	assert_int_equal(pc_register_host(a, inr, islot * K), 0);
	assert_int_equal(pc_register_host(a, outr, oslot * K), 0);
	assert_int_equal(pc_register_host(b, inr, islot * K), 0);
	assert_int_equal(pc_register_host(b, outr, oslot * K), 0);
	assert_true(host_registered(inr) && host_registered(outr));

	/* b has CPIs in flight when a (the old generation) goes. */
	assert_int_equal(pc_submit(b, inr, outr, 0), 0);
	assert_int_equal(pc_submit(b, inr + islot, outr + oslot, 1), 0);
	submitted = 2;
	pc_destroy(a);
	assert_true(host_registered(inr));
	assert_true(host_registered(outr));
	while (done < K) {
		struct pc_done d[8];
		int n;

		while (submitted < K && pc_submit(b, inr + submitted * islot,
						  outr + submitted * oslot, submitted) == 0)
			submitted++;
		n = pc_poll(b, d, 8, 10000);
		assert_true(n > 0);   /* 10 s: a safety bound, not a timing */
		for (int i = 0; i < n; i++)
			if (d[i].flags & PC_DONE_OUTPUT)
				done++;
	}
	for (unsigned k = 0; k < K; k++) {
		double e;

		poison(want, ob);
		assert_int_equal(pc_execute(cpu, inr + k * islot, want, NULL), 0);
		e = out_err((float *)(outr + k * oslot), want, ob / sizeof(float), PC_OUT_COMPLEX);
		if (!(e <= TOL))
			fail_msg("CPI %u after the other pc went: rel L2 %.3e", k, e);
	}
	pc_get_info(b, &info);
	assert_string_equal(info.staging, "registered");
	pc_destroy(b);   /* the last holder: now it is unregistered */
	assert_false(host_registered(inr));
	assert_false(host_registered(outr));
	print_message("  shared registration: kept while one pc holds it, released by the last\n");
	pc_destroy(cpu);
	munmap(inr, islot * K);
	munmap(outr, oslot * K);
	free(want);
	free(ref);
}

/* Rows with NaN/Inf are counted like the CPU counts them; others are exact. */
static void test_nonfinite_rows(void **state)
{
	const unsigned C = 2, P = 5, R = 1000;
	const size_t L = 100;
	float *ref, *x, *yc, *yg;
	struct pc *cpu, *gpu;
	uint32_t nfc = 0, nfg = 0;
	size_t ob;

	(void)state;
	NEED_GPU();
	ref = make_ref(WIN_HAMMING, L, R);
	cpu = make_pc(PC_BACKEND_CPU, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 1, PC_STAGING_AUTO);
	gpu = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 2, PC_STAGING_AUTO);
	ob = pc_out_bytes(gpu);
	x = malloc(pc_in_bytes(gpu));
	yc = malloc(ob);
	yg = malloc(ob);
	assert_non_null(x);
	assert_non_null(yc);
	assert_non_null(yg);
	fill_input(x, PC_FMT_CF32, (size_t)C * P * R);
	x[2 * (1 * R + 17)] = NAN;
	x[2 * (4 * R + 999) + 1] = INFINITY;
	x[2 * (7 * R + 0)] = -INFINITY;
	x[2 * (7 * R + 5) + 1] = NAN;   /* same row twice: still one row */
	assert_int_equal(pc_execute(cpu, x, yc, &nfc), 0);
	assert_int_equal(pc_execute(gpu, x, yg, &nfg), 0);
	assert_int_equal(nfg, 3);
	assert_int_equal(nfg, nfc);
	for (unsigned r = 0; r < C * P; r++) {
		if (r == 1 || r == 4 || r == 7)
			continue;
		assert_true(rel_l2(yg + 2 * r * R, yc + 2 * r * R, 2 * R) <= TOL);
	}
	pc_destroy(cpu);
	pc_destroy(gpu);
	free(x);
	free(yc);
	free(yg);
	free(ref);
}

/* An injected device error: failed state, -EIO from then on, a reason. */
static void test_fault_injection(void **state)
{
	const unsigned C = 2, P = 4, R = 1000;
	const size_t L = 100;
	float *ref, *x, *y;
	struct pc *gpu, *again;
	struct pc_done d[4];
	int n, rc;

	(void)state;
	NEED_GPU();
	ref = make_ref(WIN_RECT, L, R);
	gpu = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 2, PC_STAGING_AUTO);
	x = malloc(pc_in_bytes(gpu));
	y = malloc(2 * pc_out_bytes(gpu));
	assert_non_null(x);
	assert_non_null(y);
	fill_input(x, PC_FMT_CF32, (size_t)C * P * R);
	assert_int_equal(pc_execute(gpu, x, y, NULL), 0);
	assert_string_equal(pc_last_error(gpu), "");

	/* One CPI in flight, then the fault on the next submit. */
	assert_int_equal(pc_submit(gpu, x, y, 1), 0);
	assert_int_equal(pc_inject_fault(gpu), 0);
	rc = pc_submit(gpu, x, (char *)y + pc_out_bytes(gpu), 2);
	assert_true(rc < 0 && rc != -EAGAIN);
	print_message("  injected fault: submit %d, \"%s\"\n", rc, pc_last_error(gpu));
	assert_non_null(strstr(pc_last_error(gpu), "injected"));
	assert_int_equal(pc_submit(gpu, x, y, 3), -EIO);
	n = pc_poll(gpu, d, 4, 100);
	assert_int_equal(n, -EIO);
	/* The CPI that was in flight is not reported done: the owner counts it lost. */
	assert_int_equal(pc_in_flight(gpu), 1);
	assert_int_equal(pc_execute(gpu, x, y, NULL), -EIO);
	pc_destroy(gpu);

	/* The device itself is fine: a new pc works (how the daemon recovers). */
	again = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 2, PC_STAGING_AUTO);
	assert_int_equal(pc_execute(again, x, y, NULL), 0);
	pc_destroy(again);
	free(x);
	free(y);
	free(ref);
}

/* Info, device by PCI bus id, bad device choices rejected with a reason. */
static void test_device_selection(void **state)
{
	const unsigned R = 1000;
	const size_t L = 100;
	struct pc_params p;
	struct pc_info info, info2;
	char err[256], bus[64] = "";
	const char *lp, *rp;
	float *ref;
	struct pc *pc;

	(void)state;
	NEED_GPU();
	ref = make_ref(WIN_RECT, L, R);
	pc = make_pc(PC_BACKEND_CUDA, 1, 2, R, PC_FMT_SC16, PC_OUT_MAGNITUDE, ref, L, 3, PC_STAGING_AUTO);
	pc_get_info(pc, &info);
	print_message("  device \"%s\", numa %d, nfft %zu, depth %u\n", info.device,
		      info.numa_node, info.nfft, info.depth);
	assert_int_equal(info.backend, PC_BACKEND_CUDA);
	assert_int_equal(info.depth, 3);
	assert_int_equal(info.ref_len, L);
	assert_true(info.nfft >= R + L - 1);
	assert_true(info.numa_node >= -1);
	lp = strrchr(info.device, '(');
	rp = strrchr(info.device, ')');
	assert_non_null(lp);
	assert_non_null(rp);
	assert_true(rp > lp + 1 && (size_t)(rp - lp - 1) < sizeof(bus));
	memcpy(bus, lp + 1, (size_t)(rp - lp - 1));
	pc_destroy(pc);

	pc_params_init(&p);
	p.channels = 1;
	p.pulses = 2;
	p.samples = R;
	p.ref = ref;
	p.ref_len = L;
	p.backend = PC_BACKEND_CUDA;
	p.gpu = -1;
	p.gpu_bus_id = bus;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("by bus id %s: %s", bus, err);
	pc_get_info(pc, &info2);
	assert_string_equal(info2.device, info.device);
	pc_destroy(pc);

	p.gpu_bus_id = "0000:ff:1f.7";
	err[0] = '\0';
	assert_null(pc_create(&p, err, sizeof(err)));
	print_message("  bogus bus id: %s\n", err);
	assert_non_null(strstr(err, "0000:ff:1f.7"));

	p.gpu = 97;
	p.gpu_bus_id = NULL;
	err[0] = '\0';
	assert_null(pc_create(&p, err, sizeof(err)));
	print_message("  gpu 97: %s\n", err);
	assert_non_null(strstr(err, "97"));

	/* auto picks CUDA when a device is usable, and says so. */
	p.gpu = 0;
	p.backend = PC_BACKEND_AUTO;
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info2);
	assert_int_equal(info2.backend, PC_BACKEND_CUDA);
	pc_destroy(pc);
	free(ref);
}

/*
 * Row chunks forced small (tune.cuda_chunks), with a shorter last chunk:
 * every chunk boundary, the per-chunk plans, the join of the chunk streams
 * (input/output order), non-finite counting across chunks and a fault in a
 * chunk stream. (Large CPIs are chunked by default; these sizes would not be.)
 */
static void test_chunked(void **state)
{
	NEED_GPU();
	tune.cuda_chunks = 3;    /* 16 rows: 6+6+4 */
	run_pipeline(1, 1, PC_STAGING_AUTO, PC_FMT_CF32, PC_OUT_COMPLEX, "registered");
	run_pipeline(2, 0, PC_STAGING_AUTO, PC_FMT_SC16, PC_OUT_MAGNITUDE, "copy");
	assert_true(gpu_vs_cpu_once(2, 4, 9000, PC_FMT_CF32, PC_OUT_POWER_DB, WIN_TAYLOR, 1000, 2) <= TOL);
	tune.cuda_chunks = 7;    /* 10 rows: 2+2+2+2+2 */
	test_nonfinite_rows(state);
	assert_true(gpu_vs_cpu_once(1, 10, 1000, PC_FMT_SC16, PC_OUT_COMPLEX, WIN_HANN, 333, 4) <= TOL);
	tune.cuda_chunks = 16;   /* more chunks than rows */
	assert_true(gpu_vs_cpu_once(1, 5, 1000, PC_FMT_CF32, PC_OUT_MAGNITUDE, WIN_RECT, 100, 1) <= TOL);
	test_fault_injection(state);
	tune_defaults();
}

/* The one CPI in flight on gpu: poll until its result is reported and
 * return the row chunks it was cut into (pc_done.chunks). */
static unsigned lone_cpi_chunks(struct pc *gpu)
{
	for (;;) {
		struct pc_done d[8];
		int n = pc_poll(gpu, d, 8, 10000);

		assert_true(n > 0);   /* 10 s: a safety bound, not a timing */
		for (int i = 0; i < n; i++)
			if (d[i].flags & PC_DONE_OUTPUT)
				return d[i].chunks;
	}
}

/*
 * The idle layout (src/cuda/cu_chunks.cu): at depth 3 with the depth's layout
 * forced whole (tune.cuda_chunks = 1) and the idle one to 3 chunks, a CPI
 * submitted with nothing else in flight is cut in 3 (pc_done.chunks == 3),
 * one submitted behind others is cut in 1 or 3 depending on whether their
 * input is still being copied (a race by design; both must compute the
 * same result), and one with a backlog behind it (pc_queue_hint) is whole.
 * Every output is checked against the CPU backend. With the default
 * tune.cuda_idle_chunks (1) a lone CPI stays whole (the idle layout is off
 * by default).
 */
static void test_idle_layout(void **state)
{
	const unsigned C = 2, P = 8, R = 1000, K = 9;
	const size_t L = 200;
	float *ref;
	struct pc *cpu, *gpu;
	size_t ib, ob;
	char *in;
	float *out, *want;
	unsigned whole = 0, cut = 0;

	(void)state;
	NEED_GPU();
	tune.cuda_chunks = 1;
	tune.cuda_idle_chunks = 3;
	ref = make_ref(WIN_HANN, L, R);
	cpu = make_pc(PC_BACKEND_CPU, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 1, PC_STAGING_AUTO);
	gpu = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 3, PC_STAGING_AUTO);
	tune_defaults();
	ib = pc_in_bytes(gpu);
	ob = pc_out_bytes(gpu);
	in = malloc(ib * K);
	out = malloc(ob * K);
	want = malloc(ob);
	assert_non_null(in);
	assert_non_null(out);
	assert_non_null(want);
	for (unsigned k = 0; k < K; k++)
		fill_input(in + k * ib, PC_FMT_CF32, (size_t)C * P * R);
	poison(out, ob * K);

	/* Phase 0: one at a time (nothing else in flight); 1: a burst; 2: one
	 * at a time with a backlog said to wait behind (pc_queue_hint). */
	for (int phase = 0; phase < 3; phase++) {
		unsigned sub = 0, got = 0;
		int burst = phase == 1;

		pc_queue_hint(gpu, phase == 2 ? 5 : 0);
		while (got < K) {
			struct pc_done d[8];
			int n;

			while (sub < K && (burst || pc_in_flight(gpu) == 0)) {
				int rc = pc_submit(gpu, in + sub * ib, (char *)out + sub * ob, sub);

				if (rc == -EAGAIN)
					break;
				assert_int_equal(rc, 0);
				sub++;
			}
			n = pc_poll(gpu, d, 8, 10000);
			assert_true(n > 0);   /* 10 s: a safety bound, not a timing */
			for (int i = 0; i < n; i++) {
				if (!(d[i].flags & PC_DONE_OUTPUT))
					continue;
				assert_int_equal(d[i].tag, got);
				if (phase == 0)
					assert_int_equal(d[i].chunks, 3);
				else if (phase == 2)
					assert_int_equal(d[i].chunks, 1);
				else
					assert_true(d[i].chunks == 1 || d[i].chunks == 3);
				if (d[i].chunks == 1)
					whole++;
				else
					cut++;
				got++;
			}
		}
		for (unsigned k = 0; k < K; k++) {
			double e;

			poison(want, ob);
			assert_int_equal(pc_execute(cpu, in + k * ib, want, NULL), 0);
			e = out_err((float *)((char *)out + k * ob), want, ob / sizeof(float),
				    PC_OUT_COMPLEX);
			if (!(e <= TOL))
				fail_msg("idle layout, phase %d, CPI %u: rel L2 %.3e", phase, k, e);
		}
		poison(out, ob * K);
	}
	print_message("  idle layout: %u CPIs cut in 3, %u whole (the burst's and the backlog's)\n",
		      cut, whole);
	assert_true(cut >= K);
	assert_true(whole >= K);
	pc_destroy(gpu);

	/* The default idle chunks: no idle layout (doc/cuda.md, *Layouts*): a
	 * lone CPI keeps the depth's layout. */
	tune.cuda_chunks = 1;
	gpu = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L, 3, PC_STAGING_AUTO);
	tune_defaults();
	pc_queue_hint(gpu, 0);
	assert_int_equal(pc_submit(gpu, in, out, 0), 0);
	assert_int_equal(lone_cpi_chunks(gpu), 1);
	pc_destroy(cpu);
	pc_destroy(gpu);
	free(in);
	free(out);
	free(want);
	free(ref);
}

/*
 * The default cut at depth 3 (chunk_policy.c, chunk_policy_auto): a CPI whose
 * larger direction is >= 16 MiB goes in two halves, a smaller one whole.
 * 4x128x4096 cf32 -> complex is exactly 16 MiB each way; 4x128x4000 is
 * just under. One CPI each, nothing else in flight, automatic chunks:
 * pc_done.chunks gives the cut, and the result is checked against the CPU
 * backend.
 */
static void test_depth_halves(void **state)
{
	static const struct { unsigned R, chunks; } cases[] = { { 4096, 2 }, { 4000, 1 } };
	const unsigned C = 4, P = 128;
	const size_t L = 512;

	(void)state;
	NEED_GPU();
	assert_int_equal(tune.cuda_chunks, 0);
	assert_int_equal(tune.cuda_idle_chunks, 1);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		unsigned R = cases[c].R;
		float *ref = make_ref(WIN_HANN, L, R);
		struct pc *cpu = make_pc(PC_BACKEND_CPU, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L,
					 1, PC_STAGING_AUTO);
		struct pc *gpu = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_COMPLEX, ref, L,
					 3, PC_STAGING_AUTO);
		size_t ib = pc_in_bytes(gpu), ob = pc_out_bytes(gpu);
		char *in = malloc(ib);
		float *out = malloc(ob), *want = malloc(ob);
		unsigned chunks;
		double e;

		assert_non_null(in);
		assert_non_null(out);
		assert_non_null(want);
		fill_input(in, PC_FMT_CF32, (size_t)C * P * R);
		poison(out, ob);
		assert_int_equal(pc_submit(gpu, in, out, 0), 0);
		chunks = lone_cpi_chunks(gpu);
		if (chunks != cases[c].chunks)
			fail_msg("%ux%ux%u (%zu bytes in) at depth 3: cut in %u, want %u",
				 C, P, R, ib, chunks, cases[c].chunks);
		poison(want, ob);
		assert_int_equal(pc_execute(cpu, in, want, NULL), 0);
		e = out_err(out, want, ob / sizeof(float), PC_OUT_COMPLEX);
		if (!(e <= TOL))
			fail_msg("%ux%ux%u at depth 3: rel L2 %.3e", C, P, R, e);
		pc_destroy(cpu);
		pc_destroy(gpu);
		free(in);
		free(out);
		free(want);
		free(ref);
	}
}

/* ---- radar modes: a filter per CPI ----------------------------------------- */


static struct pc *make_modes_pc(enum pc_backend be, unsigned C, unsigned P, unsigned R,
				enum pc_format f, enum pc_output m, const struct tri_modes *t,
				unsigned streams)
{
	struct pc_params p;
	char err[256] = "";
	struct pc *pc;

	pc_params_init(&p);
	p.channels = C;
	p.pulses = P;
	p.samples = R;
	p.in_format = f;
	p.out_mode = m;
	p.modes = t->m;
	p.nmodes = NTRI;
	p.backend = be;
	p.streams = streams;
	p.tune = tune;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create(%s, 3 modes): %s", pc_backend_name(be), err);
	return pc;
}

/* One CPI of mode `mode` on the CPU backend, synchronously. */
static void cpu_mode_once(struct pc *cpu, const void *in, void *out, unsigned mode)
{
	struct pc_done d[2];

	assert_int_equal(pc_submit_mode(cpu, in, out, 1, mode), 0);
	assert_int_equal(pc_poll(cpu, d, 2, -1), 1);
	assert_int_equal(d[0].mode, mode);
}

/*
 * K CPIs through the GPU with the queue full, CPI k of mode
 * ids[(k / run) % 3] (run 1: the mode changes every CPI, so each set's
 * graph is re-pointed at a new filter each time; run 4: some CPIs keep the
 * graph's filter), every output against the CPU backend for ITS mode, every
 * report carrying its mode. An unknown mode in the middle is refused with
 * nothing queued. use_mmap: registered ring-like memory (graphs when
 * tune.cuda_graphs), else malloc (staged, call by call).
 */
static void run_modes(unsigned streams, int use_mmap, unsigned run, enum pc_format f,
		      enum pc_output m, int want_graphs)
{
	const unsigned C = 2, P = 8, R = 1000, K = 12;
	struct tri_modes t;
	struct pc *cpu, *gpu;
	size_t ib, ob, islot, oslot;
	char *inr, *outr;
	float *want;
	uint64_t submitted = 0, next_out = 0;
	struct pc_info info;

	tri_modes_make(&t, R);
	cpu = make_modes_pc(PC_BACKEND_CPU, C, P, R, f, m, &t, 1);
	gpu = make_modes_pc(PC_BACKEND_CUDA, C, P, R, f, m, &t, streams);
	ib = pc_in_bytes(gpu);
	ob = pc_out_bytes(gpu);
	islot = (ib + 4095) & ~(size_t)4095;
	oslot = (ob + 4095) & ~(size_t)4095;
	want = malloc(ob);
	assert_non_null(want);
	if (use_mmap) {
		inr = mmap(NULL, islot * K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		outr = mmap(NULL, oslot * K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(inr != MAP_FAILED && outr != MAP_FAILED);
		assert_int_equal(pc_register_host(gpu, inr, islot * K), 0);
		assert_int_equal(pc_register_host(gpu, outr, oslot * K), 0);
	} else {
		inr = malloc(islot * K);
		outr = malloc(oslot * K);
		assert_non_null(inr);
		assert_non_null(outr);
	}
	for (unsigned k = 0; k < K; k++) {
		fill_input(inr + k * islot, f, (size_t)C * P * R);
		poison(outr + k * oslot, ob);
	}
	while (next_out < K) {
		struct pc_done d[8];
		int n, rc;

		while (submitted < K) {
			unsigned mode = t.m[(submitted / run) % NTRI].id;

			if (submitted == K / 2 && pc_in_flight(gpu) < streams) {
				/* unknown: refused, nothing queued, the pc fine */
				unsigned before = pc_in_flight(gpu);

				assert_int_equal(pc_submit_mode(gpu, inr, outr, 999, 5), -ENOENT);
				assert_int_equal(pc_in_flight(gpu), before);
			}
			rc = pc_submit_mode(gpu, inr + submitted * islot, outr + submitted * oslot,
					    1000 + submitted, mode);
			if (rc == -EAGAIN)
				break;
			assert_int_equal(rc, 0);
			submitted++;
		}
		n = pc_poll(gpu, d, 8, 10000);
		assert_true(n > 0);   /* 10 s: a safety bound, not a timing */
		for (int i = 0; i < n; i++) {
			uint64_t k = d[i].tag - 1000;

			assert_true(k < K);
			assert_int_equal(d[i].mode, t.m[(k / run) % NTRI].id);
			if (d[i].flags & PC_DONE_OUTPUT) {
				assert_int_equal(k, next_out);
				next_out++;
			}
		}
	}
	for (unsigned k = 0; k < K; k++) {
		unsigned mode = t.m[(k / run) % NTRI].id;
		double e;

		poison(want, ob);
		cpu_mode_once(cpu, inr + k * islot, want, mode);
		e = out_err((float *)(outr + k * oslot), want, ob / sizeof(float), m);
		if (!(e <= TOL))
			fail_msg("CPI %u of mode %u (streams %u, %s, run %u): rel L2 %.3e", k, mode,
				 streams, use_mmap ? "registered" : "malloc", run, e);
	}
	pc_get_info(gpu, &info);
	print_message("  modes streams=%u %s run %u %s/%s: %u CPIs ok, %llu as graphs\n", streams,
		      use_mmap ? "mmap" : "malloc", run, pc_format_name(f), pc_output_name(m), K,
		      info.graph_cpis);
	if (want_graphs == 1)
		assert_true(info.graph_cpis == K);
	else if (want_graphs == 0)
		assert_true(info.graph_cpis == 0);
	pc_destroy(gpu);   /* unregisters before the memory goes */
	pc_destroy(cpu);
	if (use_mmap) {
		munmap(inr, islot * K);
		munmap(outr, oslot * K);
	} else {
		free(inr);
		free(outr);
	}
	free(want);
	tri_modes_free(&t);
}

/*
 * Modes per CPI on the GPU: graphs (one per set and layout, the multiply
 * re-pointed per mode) on and off, whole and chunked layouts, registered
 * and staged memory, both formats, every output mode.
 */
static void test_modes(void **state)
{
	(void)state;
	NEED_GPU();
	assert_int_equal(tune.cuda_graphs, 1);   /* the default */
	run_modes(2, 1, 1, PC_FMT_CF32, PC_OUT_COMPLEX, 1);
	run_modes(3, 1, 4, PC_FMT_SC16, PC_OUT_POWER_DB, 1);
	run_modes(1, 1, 1, PC_FMT_SC16, PC_OUT_MAGNITUDE, 1);
	run_modes(2, 0, 1, PC_FMT_CF32, PC_OUT_MAGNITUDE, 0);
	tune.cuda_chunks = 3;   /* 16 rows: 6+6+4, a multiply node each */
	run_modes(2, 1, 1, PC_FMT_CF32, PC_OUT_POWER_DB, 1);
	run_modes(1, 1, 4, PC_FMT_SC16, PC_OUT_COMPLEX, 1);
	run_modes(2, 0, 1, PC_FMT_SC16, PC_OUT_COMPLEX, 0);
	tune.cuda_graphs = 0;
	run_modes(2, 1, 1, PC_FMT_CF32, PC_OUT_COMPLEX, 0);
	tune.cuda_chunks = 0;
	run_modes(3, 1, 1, PC_FMT_SC16, PC_OUT_MAGNITUDE, 0);
	tune_defaults();
}

/* ---- the radar chain ------------------------------------------------------ */

/*
 * The radar chain (chirp/pc.h, RADAR CHAIN) on the GPU against the CPU
 * backend on the same CPIs: the maps (relative L2 <= TOL, map_db compared
 * as linear power, as power_db is), and the detection lists, header field
 * by field and record by record (the lists are ordered by definition, so
 * equal sequences are equal sets): channel, gate and bin exactly, the
 * float fields within DET_TOL relative.
 */
#define DET_TOL 1e-4

/* A CPI geometry, its radar chain and how the GPU pc is built. */
struct rspec {
	unsigned C, P, R;
	size_t L;
	const struct pc_mode *modes;   /* NULL: one reference of L samples */
	unsigned nmodes;
	enum pc_output out;
	struct pc_radar rad;
	unsigned streams;
	enum pc_staging staging;
	int use_mmap;                  /* registered ring-like memory, else malloc */
	unsigned K;                    /* CPIs, all in flight up to the depth */
	int scene;                     /* 1: targets in noise, 0: noise only */
	int nonfinite;                 /* 1: an Inf in channel 1 (C >= 2)    */
};

/* The chain's settings every radar test starts from: Doppler and CFAR on,
 * ca, per channel, rect window, auto Nd, velocities from fs/prf/carrier. */
static void rspec_init(struct rspec *s, unsigned C, unsigned P, unsigned R)
{
	struct pc_params p;

	pc_params_init(&p);
	memset(s, 0, sizeof(*s));
	s->C = C;
	s->P = P;
	s->R = R;
	s->L = 40;
	s->out = PC_OUT_MAP_POWER;
	s->rad = p.radar;              /* pc_params_init's defaults for the rest */
	s->rad.doppler = 1;
	s->rad.mti = PC_MTI_NONE;
	s->rad.window = NULL;
	s->rad.nfft = 0;
	s->rad.cfar = 1;
	s->rad.method = PC_CFAR_CA;
	s->rad.integrate = 0;
	s->rad.guard_range = 2;
	s->rad.guard_doppler = 1;
	s->rad.train_range = 8;
	s->rad.train_doppler = 4;      /* os: 11 x 21 - 3 x 5 = 216 cells */
	s->rad.os_rank = 0;
	s->rad.pfa = 1e-5;
	s->rad.maxima_range = 2;
	s->rad.maxima_doppler = 1;
	s->rad.max_detections = 256;
	s->rad.sample_rate_hz = 25e6;
	s->rad.prf_hz = 5e3;
	s->rad.carrier_hz = 9.5e9;
	s->rad.velocity = 0;
	s->streams = 2;
	s->staging = PC_STAGING_AUTO;
	s->use_mmap = 1;
	s->K = 3;
	s->scene = 1;
}

static struct pc *make_radar_pc(enum pc_backend be, const struct rspec *s, const float *ref)
{
	struct pc_params p;
	char err[256] = "";
	struct pc *pc;

	pc_params_init(&p);
	p.channels = s->C;
	p.pulses = s->P;
	p.samples = s->R;
	p.in_format = PC_FMT_CF32;
	p.out_mode = s->out;
	p.ref = ref;
	p.ref_len = s->L;
	p.modes = s->modes;
	p.nmodes = s->nmodes;
	p.backend = be;
	p.streams = be == PC_BACKEND_CUDA ? s->streams : 1;
	p.staging = s->staging;
	p.tune = tune;
	p.radar = s->rad;
	pc = pc_create(&p, err, sizeof(err));
	if (!pc)
		fail_msg("pc_create(%s, radar): %s", pc_backend_name(be), err);
	return pc;
}

/* The mode of CPI k: the modes in turn, two CPIs each (id 0 without). */
static unsigned rspec_mode(const struct rspec *s, unsigned k)
{
	return s->nmodes ? s->modes[(k / 2) % s->nmodes].id : 0;
}

/*
 * CPI k's input: complex noise (uniform, [-0.5, 0.5) per part) and, with a
 * scene, three echoes per channel of the reference h (L samples) at
 * gates 60 + 37k, 211 and R - L - 20, each a Doppler tone of its own
 * (0.11, -0.27 and 0.36 cycles per pulse), amplitudes 0.6, 0.3, 1.0.
 */
static void radar_input(float *x, const struct rspec *s, const float *h, size_t L, unsigned k)
{
	const unsigned gate[3] = { 60 + 37 * (k % 5), 211, s->R - (unsigned)L - 20 };
	const double fd[3] = { 0.11, -0.27, 0.36 }, amp[3] = { 0.6, 0.3, 1.0 };
	size_t n = (size_t)s->C * s->P * s->R;

	for (size_t i = 0; i < 2 * n; i++)
		x[i] = (float)(0.5 * rng_unit());
	if (s->nonfinite)   /* pulse 2 of channel 1: its whole map goes NaN */
		x[2 * (((size_t)1 * s->P + 2) * s->R + 5)] = INFINITY;
	if (!s->scene)
		return;
	for (unsigned c = 0; c < s->C; c++)
		for (unsigned p = 0; p < s->P; p++)
			for (int t = 0; t < 3; t++) {
				double ph = 2.0 * M_PI * (fd[t] * p + 0.1 * c + 0.3 * t);
				double cr = amp[t] * cos(ph), ci = amp[t] * sin(ph);
				float *row = x + 2 * (((size_t)c * s->P + p) * s->R + gate[t]);

				for (size_t i = 0; i < L && gate[t] + i < s->R; i++) {
					row[2 * i] += (float)(cr * h[2 * i] - ci * h[2 * i + 1]);
					row[2 * i + 1] += (float)(cr * h[2 * i + 1] + ci * h[2 * i]);
				}
			}
}

/* Map comparison: map_db as linear power (see out_err), else plain. */
static double map_err(const float *a, const float *b, size_t n, enum pc_output m)
{
	return out_err(a, b, n, m == PC_OUT_MAP_DB ? PC_OUT_POWER_DB : m);
}

static int close_rel(double a, double b, double tol)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return fabs(a - b) <= tol * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* The GPU's list g against the CPU's c: everything equal but the floats,
 * which are within DET_TOL; count = min(found, max), CHIRP_DET_OVERFLOW
 * exactly when found > count. Returns the detections found. */
static unsigned compare_det(const void *g, const void *c, unsigned mode, unsigned max,
			    const char *what)
{
	const struct chirp_det_header *hg = g, *hc = c;
	const struct chirp_det_record *rg = (const void *)(hg + 1), *rc = (const void *)(hc + 1);

	if (hg->magic != CHIRP_DET_MAGIC || hg->version != CHIRP_DET_VERSION ||
	    hg->record_bytes != sizeof(struct chirp_det_record))
		fail_msg("%s: GPU list header: magic %#x version %u record_bytes %u", what, hg->magic,
			 hg->version, hg->record_bytes);
	assert_int_equal(hc->magic, CHIRP_DET_MAGIC);
	if (hg->seq || hg->timestamp_ns || hg->first_sample || hg->reserved)
		fail_msg("%s: seq/timestamp/first_sample/reserved not 0", what);
	if (hg->mode != mode || hc->mode != mode)
		fail_msg("%s: mode GPU %u CPU %u, want %u", what, hg->mode, hc->mode, mode);
	if (hg->flags != hc->flags || hg->count != hc->count || hg->found != hc->found ||
	    hg->maps != hc->maps || hg->doppler_bins != hc->doppler_bins ||
	    hg->range_gates != hc->range_gates || hg->cells != hc->cells ||
	    hg->crossings != hc->crossings)
		fail_msg("%s: header GPU flags %#x count %u found %u maps %u Nd %u R %u cells %llu "
			 "crossings %llu; CPU %#x %u %u %u %u %u %llu %llu", what, hg->flags,
			 hg->count, hg->found, hg->maps, hg->doppler_bins, hg->range_gates,
			 (unsigned long long)hg->cells, (unsigned long long)hg->crossings, hc->flags,
			 hc->count, hc->found, hc->maps, hc->doppler_bins, hc->range_gates,
			 (unsigned long long)hc->cells, (unsigned long long)hc->crossings);
	if ((hg->found > hg->count) != ((hg->flags & CHIRP_DET_OVERFLOW) != 0) ||
	    hg->count != (hg->found < max ? hg->found : max))
		fail_msg("%s: count %u of found %u (max %u) with flags %#x", what, hg->count,
			 hg->found, max, hg->flags);
	for (unsigned i = 0; i < hg->count; i++) {
		const struct chirp_det_record *a = &rg[i], *b = &rc[i];

		if (a->channel != b->channel || a->range_gate != b->range_gate ||
		    a->doppler_bin != b->doppler_bin)
			fail_msg("%s: record %u: GPU (ch %d, gate %u, bin %d), CPU (ch %d, gate %u, "
				 "bin %d)", what, i, a->channel, a->range_gate, a->doppler_bin,
				 b->channel, b->range_gate, b->doppler_bin);
		if (!close_rel(a->power, b->power, DET_TOL) ||
		    !close_rel(a->noise, b->noise, DET_TOL) ||
		    !close_rel(a->snr_db, b->snr_db, DET_TOL) ||
		    !close_rel(a->range_m, b->range_m, DET_TOL) ||
		    !close_rel(a->velocity_mps, b->velocity_mps, DET_TOL))
			fail_msg("%s: record %u (ch %d, gate %u, bin %d): GPU power %g noise %g snr "
				 "%g range %g v %g; CPU %g %g %g %g %g", what, i, a->channel,
				 a->range_gate, a->doppler_bin, a->power, a->noise, a->snr_db,
				 a->range_m, a->velocity_mps, b->power, b->noise, b->snr_db, b->range_m,
				 b->velocity_mps);
	}
	return hg->found;
}

/* One CPI on pc (nothing else in flight), synchronously. */
static void job_sync(struct pc *pc, const void *in, void *out, void *det, unsigned mode)
{
	static uint64_t tag = 77000;
	struct pc_job j = { .in = in, .out = out, .det = det, .tag = ++tag, .mode = mode };
	int rc = pc_submit_job(pc, &j);

	if (rc != 0)
		fail_msg("pc_submit_job: %s (%s)", strerror(-rc), pc_last_error(pc));
	for (;;) {
		struct pc_done d[4];
		int n = pc_poll(pc, d, 4, 10000);

		assert_true(n > 0);   /* 10 s: a safety bound, not a timing */
		for (int i = 0; i < n; i++)
			if (d[i].tag == tag && (d[i].flags & PC_DONE_OUTPUT))
				return;
	}
}

/* Host buffers of K slots of len bytes each (page-aligned slots), mmap'ed
 * and registered with gpu, or malloc'ed; NULL for len 0. */
static char *slots_alloc(struct pc *gpu, const struct rspec *s, size_t len, size_t *slot)
{
	char *p;

	*slot = (len + 4095) & ~(size_t)4095;
	if (len == 0)
		return NULL;
	if (s->use_mmap) {
		p = mmap(NULL, *slot * s->K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(p != MAP_FAILED);
		assert_int_equal(pc_register_host(gpu, p, *slot * s->K), 0);
	} else {
		p = malloc(*slot * s->K);
		assert_non_null(p);
	}
	return p;
}

static void slots_free(const struct rspec *s, char *p, size_t slot)
{
	if (!p)
		return;
	if (s->use_mmap)
		munmap(p, slot * s->K);
	else
		free(p);
}

/* The GPU's K CPIs, up to the depth in flight: submitted, polled in
 * order, each result kept (snap_out, snap_det) as a consumer would. */
static void radar_run_gpu(struct pc *gpu, const struct rspec *s, char *inr, size_t islot,
			  char *outr, size_t oslot, char *detr, size_t dslot, char *snap_out,
			  char *snap_det)
{
	size_t ob = pc_out_bytes(gpu), db = pc_det_bytes(gpu);
	uint64_t submitted = 0, next_out = 0;

	while (next_out < s->K) {
		struct pc_done d[8];
		int n;

		while (submitted < s->K) {
			struct pc_job j = {
				.in = inr + submitted * islot,
				.out = outr ? outr + submitted * oslot : NULL,
				.det = detr ? detr + submitted * dslot : NULL,
				.tag = 1000 + submitted,
				.mode = rspec_mode(s, (unsigned)submitted),
			};
			int rc = pc_submit_job(gpu, &j);

			if (rc == -EAGAIN)
				break;
			if (rc != 0)
				fail_msg("pc_submit_job(gpu): %s (%s)", strerror(-rc), pc_last_error(gpu));
			submitted++;
		}
		n = pc_poll(gpu, d, 8, 10000);
		assert_true(n > 0);   /* 10 s: a safety bound, not a timing */
		for (int i = 0; i < n; i++) {
			uint64_t k = d[i].tag - 1000;

			assert_true(k < s->K);
			assert_int_equal(d[i].mode, rspec_mode(s, (unsigned)k));
			if (!(d[i].flags & PC_DONE_OUTPUT))
				continue;
			assert_int_equal(k, next_out);
			if (ob)
				memcpy(snap_out + k * ob, outr + k * oslot, ob);
			if (db)
				memcpy(snap_det + k * db, detr + k * dslot, db);
			next_out++;
		}
	}
	assert_int_equal(pc_in_flight(gpu), 0);
}

/* The reference of CPI k's mode (modes), or ref. */
static const float *rspec_ref(const struct rspec *s, const float *ref, unsigned k, size_t *L)
{
	unsigned id = rspec_mode(s, k);

	*L = s->L;
	for (unsigned i = 0; i < s->nmodes; i++)
		if (s->modes[i].id == id) {
			*L = s->modes[i].ref_len;
			return s->modes[i].ref;
		}
	return ref;
}

/*
 * Run s's K CPIs on the GPU and one by one on the CPU backend; compare the
 * outputs (map or cube) and the lists. Returns the detections found over
 * the K CPIs (0 without cfar); *graphs: CPIs the GPU ran as graphs.
 */
static unsigned run_radar(const struct rspec *s, const char *what, unsigned long long *graphs)
{
	float *ref = make_ref(WIN_HAMMING, s->L, s->R);
	struct pc *cpu = make_radar_pc(PC_BACKEND_CPU, s, ref);
	struct pc *gpu = make_radar_pc(PC_BACKEND_CUDA, s, ref);
	size_t ib = pc_in_bytes(gpu), ob = pc_out_bytes(gpu), db = pc_det_bytes(gpu);
	size_t islot, oslot, dslot;
	char *inr, *outr, *detr;
	char *snap_out = malloc(ob * s->K + 1), *snap_det = malloc(db * s->K + 1);
	char *want_out = malloc(ob + 1), *want_det = malloc(db + 1);
	struct pc_info info;
	unsigned found = 0;
	char label[200];

	assert_true(snap_out && snap_det && want_out && want_det);
	rng_state = 0x7261646172ull;   /* the same CPIs whatever ran before */
	assert_int_equal(ob, pc_out_bytes(cpu));
	assert_int_equal(db, pc_det_bytes(cpu));
	assert_int_equal(db != 0, s->rad.cfar != 0);
	if (s->out == PC_OUT_NONE)
		assert_int_equal(ob, 0);
	inr = slots_alloc(gpu, s, ib, &islot);
	outr = slots_alloc(gpu, s, ob, &oslot);
	detr = slots_alloc(gpu, s, db, &dslot);
	for (unsigned k = 0; k < s->K; k++) {
		size_t L;
		const float *h = rspec_ref(s, ref, k, &L);

		radar_input((float *)(inr + k * islot), s, h, L, k);
		if (outr)
			poison(outr + k * oslot, ob);
		if (detr)
			poison(detr + k * dslot, db);
	}
	radar_run_gpu(gpu, s, inr, islot, outr, oslot, detr, dslot, snap_out, snap_det);
	for (unsigned k = 0; k < s->K; k++) {
		unsigned mode = rspec_mode(s, k);

		snprintf(label, sizeof(label), "%s, CPI %u (mode %u)", what, k, mode);
		poison(want_out, ob);
		poison(want_det, db);
		job_sync(cpu, inr + k * islot, ob ? want_out : NULL, db ? want_det : NULL, mode);
		if (ob) {
			double e = map_err((const float *)(snap_out + k * ob), (const float *)want_out,
					   ob / sizeof(float), s->out);

			if (!(e <= TOL))
				fail_msg("%s: %s rel L2 %.3e", label, pc_output_name(s->out), e);
		}
		if (db)
			found += compare_det(snap_det + k * db, want_det, mode, s->rad.max_detections,
					     label);
	}
	pc_get_info(gpu, &info);
	if (graphs)
		*graphs = info.graph_cpis;
	print_message("  %s: %u CPIs ok, %u detections, %llu as graphs, staging \"%s\"\n", what,
		      s->K, found, info.graph_cpis, info.staging);
	pc_destroy(gpu);   /* unregisters before the memory goes */
	pc_destroy(cpu);
	slots_free(s, inr, islot);
	slots_free(s, outr, oslot);
	slots_free(s, detr, dslot);
	free(snap_out);
	free(snap_det);
	free(want_out);
	free(want_det);
	free(ref);
	return found;
}

/* A Hann window of n coefficients (radar.window). */
static float *hann(unsigned n)
{
	float *w = malloc(n * sizeof(float));

	assert_non_null(w);
	for (unsigned i = 0; i < n; i++)
		w[i] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * (i + 0.5) / n));
	return w;
}

/*
 * Maps: every MTI, map_power and map_db, rect and Hann windows, auto and
 * forced Nd, integrate on and off (the map output is per channel either
 * way), on random data; sizes that are no powers of two (C 3, P 21, R 500,
 * Nd 21/20/19 auto, 27 forced).
 */
static void test_radar_maps(void **state)
{
	static const enum pc_mti mtis[3] = { PC_MTI_NONE, PC_MTI_TWO, PC_MTI_THREE };
	struct rspec s;
	char what[96];

	(void)state;
	NEED_GPU();
	for (int mi = 0; mi < 3; mi++)
		for (int db = 0; db < 2; db++)
			for (int v = 0; v < 2; v++) {
				float *w = NULL;

				rspec_init(&s, 3, 21, 500);
				s.scene = 0;
				s.rad.cfar = 0;
				s.rad.mti = mtis[mi];
				s.out = db ? PC_OUT_MAP_DB : PC_OUT_MAP_POWER;
				s.rad.integrate = v;
				if (v) {   /* Hann window, forced Nd */
					w = hann(21 - (unsigned)mi);
					s.rad.window = w;
					s.rad.nfft = 27;
				}
				snprintf(what, sizeof(what), "map mti %d %s %s", mi,
					 pc_output_name(s.out), v ? "hann Nd 27 integrate" : "rect");
				run_radar(&s, what, NULL);
				free(w);
			}
}

/*
 * Detections: ca, go, so and os, per channel and integrated, on a scene of
 * three targets a channel in noise; the lists must hold at least the
 * targets (so the comparison cannot pass on empty lists) and equal the
 * CPU's. Also the map output beside them, a cube output with the chain,
 * MTI two with Hann, no velocities (NaN, CHIRP_DET_NO_VELOCITY),
 * non-finite input (no crossing where the statistic is NaN), and ca, go
 * and so with chirpd's default windows (a kernel compiled for them).
 */
static void test_radar_cfar(void **state)
{
	static const enum pc_cfar methods[4] = { PC_CFAR_CA, PC_CFAR_GO, PC_CFAR_SO, PC_CFAR_OS };
	static const char *names[4] = { "ca", "go", "so", "os" };
	struct rspec s;
	char what[96];
	float *w;

	(void)state;
	NEED_GPU();
	for (int mi = 0; mi < 4; mi++)
		for (int integ = 0; integ < 2; integ++) {
			unsigned found;

			rspec_init(&s, 3, 24, 500);
			s.rad.method = methods[mi];
			s.rad.integrate = integ;
			s.out = integ ? PC_OUT_MAP_DB : PC_OUT_MAP_POWER;
			snprintf(what, sizeof(what), "cfar %s%s", names[mi], integ ? " integrated" : "");
			found = run_radar(&s, what, NULL);
			assert_true(found >= 3 * s.K * (integ ? 1 : s.C));
		}
	for (int mi = 0; mi < 4; mi++) {   /* chirpd's default windows (their own kernel) */
		rspec_init(&s, 3, 24, 500);
		s.rad.guard_range = PC_CFAR_GUARD_RANGE;
		s.rad.guard_doppler = PC_CFAR_GUARD_DOPPLER;
		s.rad.train_range = PC_CFAR_TRAIN_RANGE;
		s.rad.train_doppler = PC_CFAR_TRAIN_DOPPLER;
		s.nonfinite = mi == 3;         /* ca again, with an Inf in channel 1 */
		s.rad.method = mi == 3 ? PC_CFAR_CA : methods[mi];
		if (s.nonfinite)
			s.out = PC_OUT_NONE;
		snprintf(what, sizeof(what), "cfar %s, the default windows%s", names[mi == 3 ? 0 : mi],
			 s.nonfinite ? ", an Inf in channel 1" : "");
		assert_true(run_radar(&s, what, NULL) >= 3 * s.K * (s.C - (unsigned)s.nonfinite));
	}
	rspec_init(&s, 2, 16, 700);
	s.out = PC_OUT_COMPLEX;        /* the cube goes out and the chain runs */
	s.rad.mti = PC_MTI_TWO;
	w = hann(15);
	s.rad.window = w;
	assert_true(run_radar(&s, "cfar ca, complex cube out, mti two hann", NULL) >= 3 * s.K * s.C);
	free(w);
	rspec_init(&s, 2, 16, 700);
	s.out = PC_OUT_POWER_DB;
	s.rad.method = PC_CFAR_OS;
	s.rad.os_rank = 100;
	s.rad.prf_hz = 0;
	s.rad.carrier_hz = 0;
	s.rad.sample_rate_hz = 0;
	assert_true(run_radar(&s, "cfar os rank 100, power_db out, no velocities", NULL) >= 3 * s.K * s.C);
	for (int mi = 0; mi < 2; mi++) {   /* a range window too wide for one tile */
		rspec_init(&s, 2, 16, 3000);
		s.rad.method = methods[mi];
		s.rad.train_range = 1200;
		snprintf(what, sizeof(what), "cfar %s, training 1200 gates each side", names[mi]);
		assert_true(run_radar(&s, what, NULL) >= 3 * s.K * s.C);
	}
	for (int mi = 0; mi < 4; mi++) {   /* no crossing where the map is NaN */
		rspec_init(&s, 3, 24, 500);
		s.out = PC_OUT_NONE;           /* a NaN map is compared by its lists */
		s.nonfinite = 1;
		s.rad.method = methods[mi];
		snprintf(what, sizeof(what), "cfar %s, an Inf in channel 1", names[mi]);
		assert_true(run_radar(&s, what, NULL) >= 3 * s.K * (s.C - 1));
	}
}

/* More detections than max_detections: CHIRP_DET_OVERFLOW, count = max,
 * found the same on both, the first max records equal. */
static void test_radar_overflow(void **state)
{
	struct rspec s;

	(void)state;
	NEED_GPU();
	rspec_init(&s, 3, 24, 500);
	s.rad.max_detections = 4;
	s.rad.pfa = 1e-3;             /* noise crossings too */
	assert_true(run_radar(&s, "overflow, max 4", NULL) > 4 * s.K);
	s.rad.integrate = 1;
	s.rad.method = PC_CFAR_GO;
	s.rad.max_detections = 1;
	s.out = PC_OUT_NONE;
	assert_true(run_radar(&s, "overflow, max 1, integrated, none", NULL) > s.K);
}

/* PC_OUT_NONE (out NULL): detections only, at depths 1 and 3, registered
 * and copied. */
static void test_radar_out_none(void **state)
{
	struct rspec s;

	(void)state;
	NEED_GPU();
	rspec_init(&s, 2, 20, 600);
	s.out = PC_OUT_NONE;
	s.streams = 1;
	s.K = 4;
	assert_true(run_radar(&s, "none, depth 1, registered", NULL) >= 3 * s.K * s.C);
	s.streams = 3;
	s.use_mmap = 0;
	s.K = 7;
	s.rad.method = PC_CFAR_SO;
	assert_true(run_radar(&s, "none, depth 3, malloc", NULL) >= 3 * s.K * s.C);
}

/*
 * Several CPIs in flight (depth 3, 9 CPIs of different scenes): as CUDA
 * graphs from registered memory (every CPI), call by call through copy
 * staging (none), graphs off, and a chunked layout (the chain after the
 * last of 3 chunks); then modes per CPI (tri_modes), whose lists carry
 * their CPI's mode, with graphs on and off.
 */
static void test_radar_pipeline(void **state)
{
	struct tri_modes t;
	unsigned long long g = 0;
	struct rspec s;

	(void)state;
	NEED_GPU();
	rspec_init(&s, 2, 16, 700);
	s.streams = 3;
	s.K = 9;
	s.out = PC_OUT_MAP_DB;
	run_radar(&s, "depth 3, registered, graphs", &g);
	assert_true(g == s.K);
	s.use_mmap = 0;
	s.staging = PC_STAGING_COPY;
	run_radar(&s, "depth 3, copy staging", &g);
	assert_true(g == 0);
	s.use_mmap = 1;
	s.staging = PC_STAGING_AUTO;
	tune.cuda_graphs = 0;
	s.rad.method = PC_CFAR_OS;
	run_radar(&s, "depth 3, registered, call by call", &g);
	assert_true(g == 0);
	tune.cuda_graphs = 1;
	tune.cuda_chunks = 3;          /* 32 rows: 11 + 11 + 10 */
	s.rad.integrate = 1;
	run_radar(&s, "depth 3, 3 chunks, graphs", &g);
	assert_true(g == s.K);
	tune_defaults();
	tri_modes_make(&t, 700);
	rspec_init(&s, 2, 16, 700);
	s.modes = t.m;
	s.nmodes = NTRI;
	s.streams = 2;
	s.K = 12;
	s.out = PC_OUT_MAP_POWER;
	run_radar(&s, "modes, graphs", &g);
	assert_true(g == s.K);
	tune.cuda_graphs = 0;
	s.staging = PC_STAGING_COPY;
	s.use_mmap = 0;
	run_radar(&s, "modes, copy staging", &g);
	tune_defaults();
	tri_modes_free(&t);
}

/*
 * Input and output in device memory (the fused kernel reads and writes
 * them in place, the cuFFT path copies): K CPIs at depth 3, each input
 * overwritten on the device as soon as PC_DONE_INPUT says it is free, each
 * output read back at PC_DONE_OUTPUT, all against the CPU backend.
 */
#ifdef CHIRP_HAVE_CUDA
static void run_device_memory(enum pc_format f, enum pc_output m, enum pc_switch want)
{
	const unsigned C = 2, P = 6, R = 2000, K = 9;
	const size_t L = 300;
	float *ref = make_ref(WIN_HANN, L, R);
	struct pc *cpu, *gpu;
	size_t ib, ob;
	char *orig, *got, *want_out, *d_in = NULL, *d_out = NULL, *junk;
	unsigned next_out = 0, submitted = 0;

	tune.cuda_fused = want;
	cpu = make_pc(PC_BACKEND_CPU, C, P, R, f, m, ref, L, 1, PC_STAGING_AUTO);
	gpu = make_pc(PC_BACKEND_CUDA, C, P, R, f, m, ref, L, 3, PC_STAGING_AUTO);
	ib = pc_in_bytes(gpu);
	ob = pc_out_bytes(gpu);
	orig = malloc(ib * K);
	got = malloc(ob * K);
	want_out = malloc(ob);
	junk = malloc(ib);
	assert_non_null(orig);
	assert_non_null(got);
	assert_non_null(want_out);
	assert_non_null(junk);
	assert_int_equal(cudaMalloc((void **)&d_in, ib * K), 0);
	assert_int_equal(cudaMalloc((void **)&d_out, ob * K), 0);
	assert_int_equal(cudaMemset(d_out, 0xff, ob * K), 0);
	fill_input(junk, f, (size_t)C * P * R);
	for (unsigned k = 0; k < K; k++) {
		fill_input(orig + k * ib, f, (size_t)C * P * R);
		assert_int_equal(cudaMemcpy(d_in + k * ib, orig + k * ib, ib, cudaMemcpyHostToDevice), 0);
	}
	while (next_out < K) {
		struct pc_done d[8];
		int n, rc;

		while (submitted < K) {
			rc = pc_submit(gpu, d_in + submitted * ib, d_out + submitted * ob, submitted);
			if (rc == -EAGAIN)
				break;
			assert_int_equal(rc, 0);
			submitted++;
		}
		n = pc_poll(gpu, d, 8, 10000);
		assert_true(n > 0);   /* 10 s: a safety bound, not a timing */
		for (int i = 0; i < n; i++) {
			uint64_t k = d[i].tag;

			if (d[i].flags & PC_DONE_INPUT)   /* the producer reuses it */
				assert_int_equal(cudaMemcpy(d_in + k * ib, junk, ib, cudaMemcpyHostToDevice), 0);
			if (d[i].flags & PC_DONE_OUTPUT) {
				assert_int_equal(k, next_out);
				assert_int_equal(cudaMemcpy(got + k * ob, d_out + k * ob, ob, cudaMemcpyDeviceToHost), 0);
				next_out++;
			}
		}
	}
	for (unsigned k = 0; k < K; k++) {
		double e;

		poison(want_out, ob);
		assert_int_equal(pc_execute(cpu, orig + k * ib, want_out, NULL), 0);
		e = out_err((float *)(got + k * ob), (float *)want_out, ob / sizeof(float), m);
		if (!(e <= TOL))
			fail_msg("device memory, CPI %u (%s/%s, cuda_fused %d): rel L2 %.3e", k,
				 pc_format_name(f), pc_output_name(m), (int)want, e);
	}
	print_message("  device memory %s/%s, cuda_fused %d: %u CPIs ok\n", pc_format_name(f),
		      pc_output_name(m), (int)want, K);
	/* an injected fault on a device-memory CPI fails the submit as on
	 * any other: the in-place read skips no step of the path */
	assert_int_equal(pc_inject_fault(gpu), 0);
	{
		int rc = pc_submit(gpu, d_in, d_out, 99);

		assert_true(rc < 0 && rc != -EAGAIN);
		assert_non_null(strstr(pc_last_error(gpu), "injected"));
	}
	assert_int_equal(cudaFree(d_in), 0);
	assert_int_equal(cudaFree(d_out), 0);
	pc_destroy(gpu);
	pc_destroy(cpu);
	free(orig);
	free(got);
	free(want_out);
	free(junk);
	free(ref);
	tune_defaults();
}

static void test_device_memory(void **state)
{
	(void)state;
	NEED_GPU();
	for (int w = PC_SWITCH_OFF; w <= PC_SWITCH_ON; w++) {
		run_device_memory(PC_FMT_CF32, PC_OUT_COMPLEX, (enum pc_switch)w);
		run_device_memory(PC_FMT_SC16, PC_OUT_MAGNITUDE, (enum pc_switch)w);
		run_device_memory(PC_FMT_CF32, PC_OUT_POWER_DB, (enum pc_switch)w);
	}
}
#else
static void test_device_memory(void **state)
{
	(void)state;
	NEED_GPU();   /* a build without CUDA has no device: skipped there */
}
#endif

#ifdef CHIRP_HAVE_CUDA
/* A GPU pc of C x P x R (cf32 in, magnitude out, make_pc) on the engine
 * eng at depth, and the device memory its creation took (bytes): the drop
 * of cudaMemGetInfo's free memory over pc_create. */
static struct pc *make_pc_measured(enum pc_switch eng, unsigned C, unsigned P, unsigned R,
				   const float *ref, size_t L, unsigned depth, long long *took)
{
	size_t before = 0, after = 0, total = 0;
	struct pc *pc;

	tune.cuda_fused = eng;
	assert_int_equal(cudaMemGetInfo(&before, &total), cudaSuccess);
	pc = make_pc(PC_BACKEND_CUDA, C, P, R, PC_FMT_CF32, PC_OUT_MAGNITUDE, ref, L, depth,
		     PC_STAGING_AUTO);
	assert_int_equal(cudaMemGetInfo(&after, &total), cudaSuccess);
	*took = (long long)before - (long long)after;
	return pc;
}

/* One CPI through gpu against cpu (cf32, magnitude), within TOL, with
 * the same non-finite count; gpu's engine must start with engine. */
static void fft_rows_check(struct pc *cpu, struct pc *gpu, size_t samples, const char *engine)
{
	struct pc_info info;
	uint32_t nfc = 99, nfg = 99;
	double e;

	pc_get_info(gpu, &info);
	assert_true(strncmp(info.fft_engine, engine, strlen(engine)) == 0);
	e = run_vs_cpu(cpu, gpu, PC_FMT_CF32, PC_OUT_MAGNITUDE, samples, &nfc, &nfg);
	assert_int_equal(nfg, nfc);
	print_message("  %-34s depth %u: rel L2 %.2e\n", info.fft_engine, info.depth, e);
	assert_true(e <= TOL);
}

/*
 * The fused kernel without the radar chain and with a cube output writes
 * the output itself, so its sets hold no FFT rows (rows x nfft x 8 bytes
 * each; the cuFFT engine's sets do). Seen as the device memory pc_create
 * takes, on a geometry whose FFT rows (nfft >= R + L - 1 = 1999: 16 kB a
 * row) exceed a set's packed input and output (cf32 in, magnitude out:
 * 12 kB a row) by 32 MiB over its 4096 rows: a fused pc of depth 3 takes at least two sets' input
 * and output more than one of depth 1 (the measure sees allocations) but
 * less than two sets of FFT rows more (with them it would take more); a
 * cuFFT pc of depth 3 takes at least three sets of FFT rows more than
 * the fused one. Each engine is created and run once before anything is
 * measured (kernels load on first use and keep their memory), and every
 * pc's result is checked against the CPU backend.
 */
static void test_fused_fft_rows(void **state)
{
	const unsigned C = 8, P = 512, R = 1000;
	const size_t L = 1000, samples = (size_t)C * P * R;
	const long long slack = 16ll << 20;   /* allocation granularity, streams */
	struct pc *cpu, *gpu;
	struct pc_info info;
	long long first, f1, f3, c3, fft, io;   /* bytes */
	float *ref;

	(void)state;
	NEED_GPU();
	assert_int_equal(cudaSetDevice(0), cudaSuccess);   /* make_pc's gpu: what is measured */
	ref = make_ref(WIN_HAMMING, L, R);
	cpu = make_pc(PC_BACKEND_CPU, C, P, R, PC_FMT_CF32, PC_OUT_MAGNITUDE, ref, L, 1,
		      PC_STAGING_AUTO);
	gpu = make_pc_measured(PC_SWITCH_OFF, C, P, R, ref, L, 1, &first);
	fft_rows_check(cpu, gpu, samples, "cufft");
	pc_destroy(gpu);
	gpu = make_pc_measured(PC_SWITCH_ON, C, P, R, ref, L, 1, &first);
	fft_rows_check(cpu, gpu, samples, "fused (");
	pc_destroy(gpu);

	gpu = make_pc_measured(PC_SWITCH_ON, C, P, R, ref, L, 1, &f1);
	pc_destroy(gpu);
	gpu = make_pc_measured(PC_SWITCH_ON, C, P, R, ref, L, 3, &f3);
	fft_rows_check(cpu, gpu, samples, "fused (");
	pc_get_info(gpu, &info);
	fft = (long long)((size_t)C * P * info.nfft * 8);
	io = (long long)(pc_in_bytes(gpu) + pc_out_bytes(gpu));
	pc_destroy(gpu);
	gpu = make_pc_measured(PC_SWITCH_OFF, C, P, R, ref, L, 3, &c3);
	fft_rows_check(cpu, gpu, samples, "cufft");
	pc_destroy(gpu);
	print_message("  device memory taken: fused depth 1 %lld, depth 3 %lld, cufft depth 3 "
		      "%lld B; a set's FFT rows %lld B, its input + output %lld B\n",
		      f1, f3, c3, fft, io);
	assert_true(f3 - f1 >= 2 * io - slack);
	assert_true(f3 - f1 < 2 * fft);
	assert_true(c3 - f3 >= 3 * fft - slack);
	pc_destroy(cpu);
	free(ref);
	tune_defaults();
}
#else
static void test_fused_fft_rows(void **state)
{
	(void)state;
	NEED_GPU();   /* a build without CUDA has no device: skipped there */
}
#endif

/* The cuFFT engine through the pipeline paths the default (fused) takes
 * above: graphs, chunks, depths. */
static void test_cufft_engine(void **state)
{
	NEED_GPU();
	tune.cuda_fused = PC_SWITCH_OFF;
	test_graphs(state);
	tune.cuda_fused = PC_SWITCH_OFF;
	test_chunked(state);
	tune.cuda_fused = PC_SWITCH_OFF;
	test_pipeline_depths(state);
	tune_defaults();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_device_selection, reset_tune),
		cmocka_unit_test_setup(test_direct_reference, reset_tune),
		cmocka_unit_test_setup(test_windows_formats_sizes, reset_tune),
		cmocka_unit_test_setup(test_output_modes, reset_tune),
		cmocka_unit_test_setup(test_fused_lengths, reset_tune),
		cmocka_unit_test_setup(test_fused_modes_auto, reset_tune),
		cmocka_unit_test_setup(test_fused_refused, reset_tune),
		cmocka_unit_test_setup(test_pipeline_depths, reset_tune),
		cmocka_unit_test_setup(test_pipeline_staging, reset_tune),
		cmocka_unit_test_setup(test_graphs, reset_tune),
		cmocka_unit_test_setup(test_shared_registration, reset_tune),
		cmocka_unit_test_setup(test_nonfinite_rows, reset_tune),
		cmocka_unit_test_setup(test_fault_injection, reset_tune),
		cmocka_unit_test_setup(test_chunked, reset_tune),
		cmocka_unit_test_setup(test_idle_layout, reset_tune),
		cmocka_unit_test_setup(test_depth_halves, reset_tune),
		cmocka_unit_test_setup(test_modes, reset_tune),
		cmocka_unit_test_setup(test_radar_maps, reset_tune),
		cmocka_unit_test_setup(test_radar_cfar, reset_tune),
		cmocka_unit_test_setup(test_radar_overflow, reset_tune),
		cmocka_unit_test_setup(test_radar_out_none, reset_tune),
		cmocka_unit_test_setup(test_radar_pipeline, reset_tune),
		cmocka_unit_test_setup(test_device_memory, reset_tune),
		cmocka_unit_test_setup(test_fused_fft_rows, reset_tune),
		cmocka_unit_test_setup(test_cufft_engine, reset_tune),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
