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

#include "beam.h"
#include "mvdr.h"

/*
 * BEAMS: what a backend that forms beams (pc_backend_ops.beams = 1)
 * receives, and what it must do (chirp/pc.h, BEAMS; doc/beams.md).
 *
 * At create (pc_setup.beams, NULL without beams): the array (element
 * positions, calibration) and the beam parameters (directions, taper,
 * carrier), all checked by pc.c, from which the backend makes its own
 * beam_set(s) (beam_set_create(array, &bp); the set pc.c checks pointings
 * with is pc.c's). The chain then runs on B rows per pulse: pc_setup's
 * rows is C x P (the input's), radar->channels is B, radar->maps B.
 *
 * Per CPI (submit_cpi, cmd->pointing_*): the pointing, already checked by
 * pc.c (pc_check_pointing), so beam_set_point on a set made from the same
 * array and parameters succeeds. The backend must
 *   1. form the beams with this CPI's weights only: conventional, the
 *      set's beam_weights() after beam_set_point(pointing) (2 B C floats,
 *      [b][c]; a host copy made per CPI in flight, so a CPI in flight keeps
 *      its own); mvdr, the weights of mvdr_solve from this CPI's input
 *      (mvdr_covariance's rule and loading, in double, against the set
 *      pointed at the CPI) - when the solve fails (-EDOM: a training set
 *      of zeros, NaN or Inf) the CPI's results are pc_write_skipped's
 *      (every output float NaN, the list CHIRP_DET_SKIPPED) and its
 *      pc_done has PC_DONE_SKIPPED;
 *   2. run compression and the chain on the B beam rows;
 *   3. apply the local-maximum rule across beams (chirp/pc.h);
 *   4. fill every record's beam fields: channel = beam = b; with
 *      monopulse, mono_estimate(set pointed at the CPI, the CPI's weights
 *      in double, b, y, noise) with y = the B complex Doppler outputs D at
 *      the record's cell (only b - 1, b, b + 1 are read), noise = the
 *      record's CFAR noise, giving azimuth_deg, elevation_deg and
 *      angle_quality (the MONO_* bits); without monopulse, the beam's
 *      direction under the pointing and angle_quality 0; the header has
 *      CHIRP_DET_BEAMS and maps = B.
 * radar_beam_record() (radar.h) does step 4 for one record from those
 * inputs, the same code on every backend.
 */
struct pc_beam_setup {
	unsigned beams, channels;            /* B, C                        */
	enum pc_beams_mode mode;             /* CONVENTIONAL or MVDR        */
	const struct array *array;           /* owned by pc.c               */
	struct beam_params bp;               /* owned by pc.c (list_deg and
						taper_coef point into it)    */
	struct mvdr_params mvdr;             /* mvdr: the training rule     */
	int monopulse;                       /* 1: an angle per record      */
};

/*
 * A snapshot request as pc.c hands it to submit_cpi (chirp/pc.h,
 * SNAPSHOTS), checked: maps >= 1 maps selected by map_mask among the
 * radar's channels (B with beams), each reduced to rows x cols cells
 * (dd <= Nd, dr <= R), maps x rows x cols <= snapshot_cells, back to back
 * into cells (host memory), written by completion. The backend copies
 * what it needs at submit. A skipped CPI's cells are all -INFINITY.
 */
struct pc_snap_cmd {
	float *cells;
	uint64_t map_mask;
	uint32_t dd, dr, rows, cols, maps;
};

/* One CPI as pc.c hands it to submit_cpi. */
struct pc_cpi_cmd {
	const void *in;
	void *out;                           /* NULL when out_mode is NONE  */
	void *det;                           /* non-NULL exactly when the
						chain detects               */
	uint64_t tag;
	unsigned filt;                       /* < nfilts, checked           */
	uint32_t mode;                       /* the mode's id               */
	double pointing_az_deg;              /* beams: checked (visible)    */
	double pointing_el_deg;
	const struct pc_snap_cmd *snap;      /* NULL: no snapshot (only with
						pc_backend_ops.snapshots)   */
};

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
	size_t snapshot_cells;               /* a snapshot's cells at most
						(0: none; 0 without radar)  */
	/* The radar chain (radar.h), or NULL when pc_params.radar.doppler
	 * is 0. Owned by pc.c and valid for the backend's lifetime. With it,
	 * out_mode may be a map mode or PC_OUT_NONE. */
	const struct radar_setup *radar;
	/* The beams (BEAMS above), or NULL without. Owned by pc.c and valid
	 * for the backend's lifetime. */
	const struct pc_beam_setup *beams;
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
	/* Optional: one CPI with its pointing (pc_cpi_cmd); pc.c calls it
	 * instead of submit when present. Required for beams. */
	int (*submit_cpi)(void *be, const struct pc_cpi_cmd *cmd);
	/* 1: the backend forms beams (BEAMS above); pc_create refuses beams
	 * on a backend without. */
	int beams;
	/* 1: the backend serves snapshots (submit_cpi's snap); pc.c
	 * refuses a request on a backend without. */
	int snapshots;
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
