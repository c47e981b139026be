/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_backend.h — the small table of functions a pulse-compression backend
 * implements (private to the pc module: pc.c, pc_cpu.c, src/cuda/).
 *
 * pc.c validates parameters, chooses nfft, computes each mode's reference
 * spectrum once in double precision and hands each backend a table of
 * ready-to-multiply filters, one per mode:
 *
 *     filt_m[f] = g_m * conj(FFT_nfft(h_m)[f]) / nfft,   f = 0..nfft-1
 *
 * (the 1/nfft folds the unnormalized inverse FFT in; g_m is mode m's own
 * gain). A backend keeps every filter resident and, per row of a CPI: pads
 * x to nfft, forward FFT, multiplies by the filter of the CPI's mode
 * (submit's filter index), inverse FFT, takes gates 0..R-1, applies the
 * output mode. Nothing outside pc_cpu.c includes
 * fftw3.h and nothing outside src/cuda/ includes cufft.h / cuda_runtime.h.
 */
#ifndef CHIRP_PC_BACKEND_H
#define CHIRP_PC_BACKEND_H

#include "chirp/pc.h"
#include "radar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What every backend receives from pc.c (validated, resolved). */
struct pc_setup {
	unsigned channels, pulses, samples;  /* C, P, R                      */
	size_t rows;                         /* C * P                        */
	size_t nfft;
	size_t ref_len;                      /* L of the longest mode         */
	enum pc_format in_format;
	enum pc_output out_mode;
	/* The filters, one per mode, back to back: filter i (0..nfilts-1)
	 * is the 2*nfft floats at filts + i * 2 * nfft (see above). A
	 * backend copies what it needs at create. */
	const float *filts;
	unsigned nfilts;                     /* 1..PC_MAX_MODES              */
	int cpu_threads;
	int gpu;
	const char *gpu_bus_id;
	unsigned streams;
	enum pc_staging staging;
	unsigned staging_threads;            /* copy staging: hcopy threads, 1..64 */
	unsigned cpu_depth;                  /* CPU completion queue, 1..64  */
	int busy_poll;                       /* pc_params.busy_poll          */
	unsigned idle_spin_us;               /* pc_params.idle_spin_us       */
	struct pc_tuning tune;               /* pc_params.tune, checked      */
	/* The radar chain (radar.h), or NULL when pc_params.radar.doppler
	 * is 0. Owned by pc.c and valid for the backend's lifetime. With it,
	 * out_mode may be a map mode or PC_OUT_NONE. */
	const struct radar_setup *radar;
};

struct pc_backend_ops {
	const char *name;
	/* Build backend state. Returns NULL with a reason in err. */
	void *(*create)(const struct pc_setup *s, char *err, size_t errlen);
	void (*destroy)(void *be);
	void (*info)(void *be, struct pc_info *info);
	int (*register_host)(void *be, void *base, size_t len);
	void (*unregister_host)(void *be, void *base);
	/* One CPI with filter filt (< nfilts, checked by pc.c); its
	 * pc_done entries carry tag and mode (the mode's id). det is the
	 * detection list (radar->det_bytes), non-NULL exactly when the
	 * chain detects; out is NULL when out_mode is PC_OUT_NONE. */
	int (*submit)(void *be, const void *in, void *out, void *det, uint64_t tag,
		      unsigned filt, uint32_t mode);
	int (*poll)(void *be, struct pc_done *done, int max, int timeout_ms);
	unsigned (*in_flight)(void *be);
	const char *(*last_error)(void *be);
	int (*inject_fault)(void *be);
	/* Optional: pin the backend's own threads (FFTW workers, staging
	 * copiers; not the caller's) to cpus, now and for threads it makes
	 * later. Returns how many it pinned now, or a negative errno. */
	int (*bind_threads)(void *be, const cpu_set_t *cpus);
	/* Optional: pc_queue_hint (CPIs waiting behind the next submit). */
	void (*queue_hint)(void *be, unsigned waiting);
};

extern const struct pc_backend_ops pc_cpu_ops;
/* The CPU backend's identity line (pc_device_identity). */
void pc_cpu_identity(int threads, char *buf, size_t len);
#ifdef CHIRP_HAVE_CUDA
extern const struct pc_backend_ops pc_cuda_ops;
int pc_cuda_probe(void);             /* >0 if a usable device exists     */
int pc_cuda_identity(int gpu, const char *bus_id, char *buf, size_t len);
#endif

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_PC_BACKEND_H */
