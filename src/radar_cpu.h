/* SPDX-License-Identifier: Apache-2.0 */
/*
 * radar_cpu.h — the radar chain on the CPU (FFTW), after the CPU backend's
 * pulse compression (private to pc_cpu.c; definition in chirp/pc.h, RADAR
 * CHAIN; resolved setup in radar.h). The reference the CUDA chain is
 * tested against.
 *
 * LIFECYCLE
 *   radar_cpu_create  buffers (the compressed cube, the Doppler input and
 *                     output, the maps, the CFAR's rows) and the Doppler
 *                     plan, once;
 *   radar_cpu_cube    where the backend writes each compressed row,
 *                     cf32 [channel][pulse][range];
 *   radar_cpu_run     the chain on the cube: map out (map modes) and the
 *                     detection list (cfar); no allocation;
 *   radar_cpu_destroy.
 *   One thread at a time (the backend's caller).
 */
#ifndef CHIRP_RADAR_CPU_H
#define CHIRP_RADAR_CPU_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "radar.h"

struct radar_cpu;

/*
 * rs must outlive the chain. threads: how many threads may run items
 * (each gets its own CFAR rows; thread ids 0..threads-1). fftw_flags: the
 * planner flag (FFTW_ESTIMATE...); fftw_lock serializes the FFTW planner
 * with the backend's own plans. Returns NULL with the reason in err.
 */
struct radar_cpu *radar_cpu_create(const struct radar_setup *rs, unsigned threads,
				   unsigned fftw_flags, pthread_mutex_t *fftw_lock, char *err,
				   size_t errlen);
void radar_cpu_destroy(struct radar_cpu *rc);

/*
 * Beams (rs->beams): the set pointed at each CPI's pointing and that
 * CPI's weights in double (2 B C), both the caller's and updated by it
 * before each CPI; monopulse 1: records get radar_beam_record's angle
 * from the complex Doppler outputs. Call once after create.
 */
struct beam_set;
void radar_cpu_set_beams(struct radar_cpu *rc, const struct beam_set *s, const double *w,
			 int monopulse);

/* The compressed cube: C x P x R complex samples, interleaved float
 * (with beams C is B). */
float *radar_cpu_cube(struct radar_cpu *rc);

/* The maps of the last CPI run: M [C][Nd][R] power, zero Doppler in
 * the middle row (with beams C is B), exactly what a map_power output
 * holds; valid until the next CPI. */
const float *radar_cpu_map(const struct radar_cpu *rc);

/*
 * One CPI, in steps: radar_cpu_begin (out: the map output, used with a
 * map out_mode), then for each stage 0..RADAR_CPU_STAGES-1 in turn every
 * item 0..radar_cpu_items()-1 once, on any threads, in any order (a stage
 * starts only when the previous one's items are all done, with the
 * happens-before that implies), then radar_cpu_finish on the caller: the
 * list (rs->det_bytes) to det with header mode = mode (cfar only).
 * radar_cpu_run does all of it on the calling thread.
 */
#define RADAR_CPU_STAGES 3
void radar_cpu_begin(struct radar_cpu *rc, void *out);
size_t radar_cpu_items(const struct radar_cpu *rc, unsigned stage);
void radar_cpu_item(struct radar_cpu *rc, unsigned stage, size_t item, unsigned thread);
void radar_cpu_finish(struct radar_cpu *rc, void *det, uint32_t mode);
void radar_cpu_run(struct radar_cpu *rc, void *out, void *det, uint32_t mode);

#endif /* CHIRP_RADAR_CPU_H */
