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
 * rs must outlive the chain. fftw_flags: the planner flag
 * (FFTW_ESTIMATE...); fftw_lock serializes the FFTW planner with the
 * backend's own plans. Returns NULL with the reason in err.
 */
struct radar_cpu *radar_cpu_create(const struct radar_setup *rs, unsigned fftw_flags,
				   pthread_mutex_t *fftw_lock, char *err, size_t errlen);
void radar_cpu_destroy(struct radar_cpu *rc);

/* The compressed cube: C x P x R complex samples, interleaved float. */
float *radar_cpu_cube(struct radar_cpu *rc);

/*
 * Run the chain on the cube: with a map out_mode write the map
 * (C x Nd x R float32) to out; with cfar write the list (rs->det_bytes)
 * to det, header mode = mode.
 */
void radar_cpu_run(struct radar_cpu *rc, void *out, void *det, uint32_t mode);

#endif /* CHIRP_RADAR_CPU_H */
