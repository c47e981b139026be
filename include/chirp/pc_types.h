/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_types.h — the value types of pulse compression's parameters (formats,
 * output modes, backend choices, the radar chain's MTI and CFAR methods)
 * and their limits, without the interface: chirp/pc.h includes it, and so
 * do the modules that name or configure these values without building a
 * pc (names.h, config.h). A leaf: it includes nothing, so the config
 * module can store these enums while knowing nothing of pc, rings or the
 * machine.
 */
#ifndef CHIRP_PC_TYPES_H
#define CHIRP_PC_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

enum pc_format    { PC_FMT_CF32 = 0, PC_FMT_SC16 = 1 };
enum pc_output    { PC_OUT_COMPLEX = 0, PC_OUT_MAGNITUDE = 1, PC_OUT_POWER_DB = 2,
		    /* with pc_params.radar.doppler (below): */
		    PC_OUT_MAP_POWER = 3,  /* float32 M[c][k][n], [channel][doppler][range] */
		    PC_OUT_MAP_DB = 4,     /* float32 10 log10(max(M, PC_POWER_FLOOR))      */
		    PC_OUT_NONE = 5 };     /* no output: detections only (pc_out_bytes 0)   */
enum pc_normalize { PC_NORM_NOISE = 0, PC_NORM_NONE = 1 };
enum pc_backend   { PC_BACKEND_AUTO = 0, PC_BACKEND_CPU = 1, PC_BACKEND_CUDA = 2 };
enum pc_staging   { PC_STAGING_AUTO = 0, PC_STAGING_REGISTER = 1, PC_STAGING_COPY = 2 };

/* FFTW planner effort (CPU backend): plan time against FFT speed. */
enum pc_fftw_planner {
	PC_FFTW_ESTIMATE = 0,        /* no measurement: start-up in ms (default) */
	PC_FFTW_MEASURE,             /* times candidate plans: seconds at start  */
	PC_FFTW_PATIENT,             /* wider search: up to minutes at start     */
};

/* A three-way switch: auto lets the backend decide. */
enum pc_switch { PC_SWITCH_AUTO = -1, PC_SWITCH_OFF = 0, PC_SWITCH_ON = 1 };

#define PC_MAX_CHUNKS 16
#define PC_MAX_BLOCK_KIB 1048576u
#define PC_MAX_CUDA_SPIN_US 10000u

/* The radar chain (chirp/pc.h, RADAR CHAIN). */
enum pc_mti  { PC_MTI_NONE = 0, PC_MTI_TWO = 1, PC_MTI_THREE = 2 };
enum pc_cfar { PC_CFAR_CA = 0, PC_CFAR_GO = 1, PC_CFAR_SO = 2, PC_CFAR_OS = 3 };

#define PC_MAX_DETECTIONS   1048576u /* max_detections upper bound          */
#define PC_CFAR_OS_MAX_CELLS 256u    /* os: training cells per cell, at most */

/* The CFAR's windows by default, cells on each side (pc_params_init's and
 * the [cfar] keys'): the CUDA backend compiles its CFAR kernel for them. */
#define PC_CFAR_GUARD_RANGE   2
#define PC_CFAR_GUARD_DOPPLER 1
#define PC_CFAR_TRAIN_RANGE   8
#define PC_CFAR_TRAIN_DOPPLER 2

/* The shortest FFT length a range line of R samples correlated with a
 * reference of L samples (L >= 1) needs without wrap-around: a forced
 * nfft below it is refused (pc_params_check, and the configuration's
 * check of [processing] nfft). */
static inline unsigned long long pc_nfft_need(unsigned long long R, unsigned long long L)
{
	return R + (L ? L : 1) - 1;
}

/* Beams (chirp/pc.h, BEAMS). */
enum pc_beams_mode   { PC_BEAMS_OFF = 0, PC_BEAMS_CONVENTIONAL = 1, PC_BEAMS_MVDR = 2 };
enum pc_beams_layout { PC_BEAMS_FAN = 0, PC_BEAMS_LIST = 1 };
#define PC_MAX_BEAMS        256u     /* B at most                           */
#define PC_MAX_MVDR_CHANNELS 64u     /* C at most for mvdr                  */

/* Radar modes a pc holds at most. */
#define PC_MAX_MODES 64

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_PC_TYPES_H */
