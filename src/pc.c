/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc.c — the backend-independent part of pulse compression (see chirp/pc.h).
 *
 * Validates parameters, chooses nfft and the backend, computes each mode's
 * filter
 *
 *     filt_m[f] = g_m * conj(FFT_nfft(h_m)[f]) / nfft
 *
 * once in double precision, and dispatches submit/poll to the backend's ops
 * table (pc_backend.h) with the filter index of the CPI's mode (a mode id
 * -> index map made at create, so pc_submit_mode looks it up with no
 * allocation). Nothing here includes fftw3.h or CUDA headers.
 *
 * Failure policy: once a backend call fails (anything but -EAGAIN from
 * submit), the pc is "failed" and every later data-path call returns -EIO;
 * the owner destroys it and builds a new one. That keeps a half-working GPU
 * from silently producing garbage.
 */
#include "chirp/pc.h"
#include "chirp/ring.h"
#include "errbuf.h"
#include "hcopy.h"
#include "pc_backend.h"
#include "log.h"
#include "names.h"
#include "radar.h"
#include "timeutil.h"
#include "array.h"
#include "beam.h"
#include "mvdr.h"
#include "maxhold.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pc {
	const struct pc_backend_ops *ops;
	void *be;
	enum pc_backend backend;     /* the one chosen                      */
	struct pc_setup setup;
	float *filts;                /* nfilts x 2*nfft floats, one filter a
					mode (setup.filts points here)      */
	unsigned filt_mode[PC_MAX_MODES]; /* filter index -> mode id        */
	int mode_filt[PC_MAX_MODES]; /* mode id -> filter index, -1: none    */
	char *gpu_bus_id;            /* copy, setup.gpu_bus_id points here  */
	size_t in_bytes, out_bytes;
	struct radar_setup radar;    /* the radar chain (setup.radar points
					here when pc_params.radar.doppler)  */
	size_t det_bytes;            /* pc_det_bytes                        */
	void *det_scratch;           /* pc_execute's list when the caller
					gives none (made at create)         */
	char depth_choice[96];       /* pc_info.depth_choice                */
	/* Beams (setup.beams points at beams when on): the array and the
	 * parameters' copies the backend builds from, and pc.c's own set,
	 * which checks each CPI's pointing before the backend sees it. */
	struct pc_beam_setup beams;
	struct array *array;
	double *beam_list;           /* 2 B: list directions, or NULL       */
	double *beam_taper;          /* C: taper coefficients, or NULL      */
	struct beam_set *point_set;  /* pointed at the last CPI submitted   */
	bool failed;
	char err[256];               /* why it failed (pc_last_error)       */
};

/* The names are names.c's, the one table config reads them from too. */
const char *pc_format_name(enum pc_format f)
{
	return names_of(names_format, f);
}

const char *pc_output_name(enum pc_output m)
{
	return names_of(names_output, m);
}

const char *pc_backend_name(enum pc_backend b)
{
	return names_of(names_backend, b);
}

void pc_params_init(struct pc_params *p)
{
	memset(p, 0, sizeof(*p));
	p->channels = 1;
	p->pulses = 1;
	p->samples = 1;
	p->in_format = PC_FMT_CF32;
	p->out_mode = PC_OUT_COMPLEX;
	p->normalize = PC_NORM_NOISE;
	p->ref = NULL;
	p->ref_len = 0;
	p->nfft = 0;
	p->backend = PC_BACKEND_AUTO;
	p->cpu_threads = 1;
	p->gpu = 0;
	p->gpu_bus_id = NULL;
	p->streams = 2;
	p->cpu_depth = 1;
	p->staging = PC_STAGING_AUTO;
	p->staging_threads = 1;
	p->busy_poll = 0;
	p->idle_spin_us = 0;
	p->tune.fftw_planner = PC_FFTW_ESTIMATE;
	p->tune.fftw_wisdom = NULL;
	p->tune.takeover = PC_SWITCH_AUTO;
	p->tune.block_kib = 0;
	p->tune.cuda_graphs = 1;
	p->tune.cuda_chunks = 0;
	p->tune.cuda_idle_chunks = 1;
	p->tune.cuda_spin_us = PC_CUDA_SPIN_US;
	p->tune.staging_nt = 1;
	p->tune.cuda_fused = PC_SWITCH_AUTO;
	p->radar.doppler = 0;
	p->radar.mti = PC_MTI_NONE;
	p->radar.window = NULL;
	p->radar.nfft = 0;
	p->radar.cfar = 0;
	p->radar.method = PC_CFAR_CA;
	p->radar.integrate = 1;
	p->radar.guard_range = PC_CFAR_GUARD_RANGE;
	p->radar.guard_doppler = PC_CFAR_GUARD_DOPPLER;
	p->radar.train_range = PC_CFAR_TRAIN_RANGE;
	p->radar.train_doppler = PC_CFAR_TRAIN_DOPPLER;
	p->radar.os_rank = 0;
	p->radar.pfa = 1e-6;
	p->radar.maxima_range = 1;
	p->radar.maxima_doppler = 1;
	p->radar.max_detections = 1024;
	p->radar.sample_rate_hz = 0;
	p->radar.prf_hz = 0;
	p->radar.carrier_hz = 0;
	p->radar.velocity = 0;
	p->beams.mode = PC_BEAMS_OFF;
	p->beams.count = 1;
	p->beams.layout = PC_BEAMS_FAN;
	p->beams.fan_spacing_u = 0.1;
	p->beams.snapshots = 0;      /* 0: 2 C */
	p->beams.first_gate = 0;
	p->beams.gate_stride = 1;
	p->beams.pulse_stride = 1;
	p->beams.loading = 0.01;
	p->beams.monopulse = 0;
}

/* The rows the chain runs on per pulse: B with beams, else C. */
static unsigned chain_rows(const struct pc_params *p)
{
	return p->beams.mode != PC_BEAMS_OFF ? p->beams.count : p->channels;
}

/* pc_params.tune's ranges (a zeroed struct is valid: every 0 is a default
 * or a plain setting). */
static int check_tuning(const struct pc_tuning *t, char *err, size_t errlen)
{
	if (t->fftw_planner < PC_FFTW_ESTIMATE || t->fftw_planner > PC_FFTW_PATIENT) {
		errbuf_set(err, errlen, "fftw_planner %d: must be estimate, measure or patient",
			   (int)t->fftw_planner);
		return -EINVAL;
	}
	if (t->takeover < PC_SWITCH_AUTO || t->takeover > PC_SWITCH_ON) {
		errbuf_set(err, errlen, "takeover %d: must be auto, on or off", (int)t->takeover);
		return -EINVAL;
	}
	if (t->cuda_fused < PC_SWITCH_AUTO || t->cuda_fused > PC_SWITCH_ON) {
		errbuf_set(err, errlen, "cuda_fused %d: must be auto, on or off", (int)t->cuda_fused);
		return -EINVAL;
	}
	if (t->block_kib > PC_MAX_BLOCK_KIB) {
		errbuf_set(err, errlen, "block_kib %u: must be 1..%u, or 0 for auto", t->block_kib,
			   PC_MAX_BLOCK_KIB);
		return -EINVAL;
	}
	if (t->cuda_chunks > PC_MAX_CHUNKS || t->cuda_idle_chunks > PC_MAX_CHUNKS) {
		errbuf_set(err, errlen, "cuda chunks %u / idle chunks %u: must be 1..%u (chunks: 0 for auto)",
			   t->cuda_chunks, t->cuda_idle_chunks, PC_MAX_CHUNKS);
		return -EINVAL;
	}
	if (t->cuda_spin_us > PC_MAX_CUDA_SPIN_US) {
		errbuf_set(err, errlen, "cuda_spin_us %u: must be 0..%u", t->cuda_spin_us,
			   PC_MAX_CUDA_SPIN_US);
		return -EINVAL;
	}
	return 0;
}

/* ||h||^2 in double; -1 if any sample is not finite. */
static double ref_energy(const float *ref, size_t len)
{
	double e = 0.0;

	for (size_t i = 0; i < 2 * len; i++) {
		if (!isfinite(ref[i]))
			return -1.0;
		e += (double)ref[i] * ref[i];
	}
	return e;
}

/* The CPI geometry: every dimension at least 1. */
static int check_geometry(const struct pc_params *p, char *err, size_t errlen)
{
	if (p->channels < 1 || p->pulses < 1 || p->samples < 1) {
		errbuf_set(err, errlen, "CPI geometry channels=%u pulses=%u samples=%u: each must be at least 1",
			   p->channels, p->pulses, p->samples);
		return -EINVAL;
	}
	return 0;
}

/* The enumerated modes: input format, output mode, normalisation, backend,
 * staging. */
static int check_modes(const struct pc_params *p, char *err, size_t errlen)
{
	if (pc_format_sample_bytes(p->in_format) == 0) {
		errbuf_set(err, errlen, "format %d: unknown input format (cf32 or sc16)", (int)p->in_format);
		return -EINVAL;
	}
	if (p->out_mode < PC_OUT_COMPLEX || p->out_mode > PC_OUT_NONE) {
		errbuf_set(err, errlen, "output mode %d: unknown (complex, magnitude, power_db, map_power, map_db or none)",
			   (int)p->out_mode);
		return -EINVAL;
	}
	if (p->normalize != PC_NORM_NOISE && p->normalize != PC_NORM_NONE) {
		errbuf_set(err, errlen, "normalize %d: unknown (noise or none)", (int)p->normalize);
		return -EINVAL;
	}
	if (p->backend != PC_BACKEND_AUTO && p->backend != PC_BACKEND_CPU &&
	    p->backend != PC_BACKEND_CUDA) {
		errbuf_set(err, errlen, "backend %d: unknown (auto, cpu or cuda)", (int)p->backend);
		return -EINVAL;
	}
	if (p->staging != PC_STAGING_AUTO && p->staging != PC_STAGING_REGISTER &&
	    p->staging != PC_STAGING_COPY) {
		errbuf_set(err, errlen, "staging %d: unknown (auto, register or copy)", (int)p->staging);
		return -EINVAL;
	}
	return 0;
}

/*
 * The modes pc_params describes: its modes table, or (nmodes 0) the single
 * ref/ref_len as mode 0, written to *one. Returns how many.
 */
static unsigned params_modes(const struct pc_params *p, struct pc_mode *one,
			     const struct pc_mode **modes)
{
	if (p->nmodes == 0) {
		one->id = 0;
		one->ref = p->ref;
		one->ref_len = p->ref_len;
		*modes = one;
		return 1;
	}
	*modes = p->modes;
	return p->nmodes;
}

/* One reference waveform: 1 <= L <= R, finite, not all zeros. what names
 * it in the reason ("" for the single reference, "mode 3: " in a table). */
static int check_one_reference(const float *ref, size_t L, size_t R, const char *what,
			       char *err, size_t errlen)
{
	double e;

	if (L < 1 || !ref) {
		errbuf_set(err, errlen, "%spulse length L=0: the reference waveform is empty", what);
		return -EINVAL;
	}
	if (L > R) {
		errbuf_set(err, errlen, "%spulse length L=%zu samples exceeds range samples R=%zu",
			   what, L, R);
		return -EINVAL;
	}
	e = ref_energy(ref, L);
	if (e < 0.0) {
		errbuf_set(err, errlen, "%sreference waveform holds a NaN or Inf sample", what);
		return -EINVAL;
	}
	if (!(e > 0.0)) {
		errbuf_set(err, errlen, "%sreference waveform is all zeros: nothing to correlate with",
			   what);
		return -EINVAL;
	}
	return 0;
}

/*
 * The mode table: at most PC_MAX_MODES, ids below PC_MAX_MODES and distinct
 * (a CPI names its filter by id), each reference valid. *maxL: the longest
 * L, which sets the FFT length every mode shares.
 */
static int check_mode_table(const struct pc_params *p, size_t *maxL, char *err, size_t errlen)
{
	struct pc_mode one;
	const struct pc_mode *m;
	unsigned n;
	uint64_t seen = 0;

	if (p->nmodes > PC_MAX_MODES) {
		errbuf_set(err, errlen, "%u modes: at most %u", p->nmodes, PC_MAX_MODES);
		return -EINVAL;
	}
	if (p->nmodes > 0 && !p->modes) {
		errbuf_set(err, errlen, "%u modes but no mode table", p->nmodes);
		return -EINVAL;
	}
	n = params_modes(p, &one, &m);
	*maxL = 0;
	for (unsigned i = 0; i < n; i++) {
		char what[32] = "";

		if (p->nmodes > 0)
			snprintf(what, sizeof(what), "mode %u: ", m[i].id);
		if (m[i].id >= PC_MAX_MODES) {
			errbuf_set(err, errlen, "mode id %u: must be 0..%u", m[i].id, PC_MAX_MODES - 1);
			return -EINVAL;
		}
		if (seen & (UINT64_C(1) << m[i].id)) {
			errbuf_set(err, errlen, "mode id %u appears twice: ids must be distinct", m[i].id);
			return -EINVAL;
		}
		seen |= UINT64_C(1) << m[i].id;
		if (check_one_reference(m[i].ref, m[i].ref_len, p->samples, what, err, errlen) < 0)
			return -EINVAL;
		if (m[i].ref_len > *maxL)
			*maxL = m[i].ref_len;
	}
	return 0;
}

/* The reference waveforms and the FFT size they need: nfft >= R+L-1 for
 * the longest L, so no mode's correlation wraps. */
static int check_reference(const struct pc_params *p, char *err, size_t errlen)
{
	size_t R = p->samples, L, need, tmp;

	if (check_mode_table(p, &L, err, errlen) < 0)
		return -EINVAL;
	need = (size_t)pc_nfft_need(R, L);
	if (p->nfft != 0 && p->nfft < need) {
		errbuf_set(err, errlen, "nfft %zu < R+L-1 = %zu%s: the correlation would wrap", p->nfft,
			   need, p->nmodes > 0 ? " (the longest mode's L)" : "");
		return -EINVAL;
	}
	tmp = p->nfft ? p->nfft : pc_good_fft_size(need);
	if (tmp == 0 || tmp > INT_MAX) {
		errbuf_set(err, errlen, "nfft %zu for R+L-1 = %zu is too large (limit %d)", tmp, need, INT_MAX);
		return -EINVAL;
	}
	return 0;
}

/* The whole CPI, at 8 bytes a sample, must be addressable in a size_t. */
static int check_cpi_size(const struct pc_params *p, char *err, size_t errlen)
{
	size_t rows = (size_t)p->channels * p->pulses, tmp;

	if (__builtin_mul_overflow(rows, (size_t)p->samples, &tmp) ||
	    __builtin_mul_overflow(tmp, (size_t)8, &tmp)) {
		errbuf_set(err, errlen, "CPI of %u x %u x %u samples is too large to address",
			   p->channels, p->pulses, p->samples);
		return -EINVAL;
	}
	return 0;
}

/* The backend options: threads, depths, spin, tuning, GPU selection, and a
 * CUDA backend only where chirpd was built with CUDA. */
static int check_backend_opts(const struct pc_params *p, char *err, size_t errlen)
{
	if (p->cpu_threads < 1 || p->cpu_threads > 1024) {
		errbuf_set(err, errlen, "cpu_threads %d: must be 1..1024", p->cpu_threads);
		return -EINVAL;
	}
	if (p->staging_threads > HCOPY_MAX_THREADS) {   /* 0 (a zeroed struct) means 1 */
		errbuf_set(err, errlen, "staging_threads %u: must be 1..%u", p->staging_threads,
			   HCOPY_MAX_THREADS);
		return -EINVAL;
	}
	if (p->snapshot_cells > PC_MAX_SNAPSHOT_CELLS) {
		errbuf_set(err, errlen, "snapshot_cells %zu: must be 0..%u", p->snapshot_cells,
			   PC_MAX_SNAPSHOT_CELLS);
		return -EINVAL;
	}
	if (p->idle_spin_us > PC_MAX_IDLE_SPIN_US) {
		errbuf_set(err, errlen, "idle_spin_us %u: must be 0..%u", p->idle_spin_us,
			   PC_MAX_IDLE_SPIN_US);
		return -EINVAL;
	}
	if (check_tuning(&p->tune, err, errlen) < 0)
		return -EINVAL;
	if (p->cpu_depth > 64) {   /* 0 (a zeroed struct) means 1 */
		errbuf_set(err, errlen, "cpu_depth %u: must be 1..64", p->cpu_depth);
		return -EINVAL;
	}
	if (p->backend != PC_BACKEND_CPU) {
		if (p->streams > 64) {   /* 0: auto */
			errbuf_set(err, errlen, "streams %u: must be 1..64, or 0 for auto", p->streams);
			return -EINVAL;
		}
		if (p->gpu < -1) {
			errbuf_set(err, errlen, "gpu %d: must be a device index >= 0, or -1 with gpu_bus_id", p->gpu);
			return -EINVAL;
		}
		if (p->gpu == -1 && (!p->gpu_bus_id || !*p->gpu_bus_id)) {
			errbuf_set(err, errlen, "gpu -1 needs gpu_bus_id (a PCI bus id like 0000:41:00.0)");
			return -EINVAL;
		}
	}
#ifndef CHIRP_HAVE_CUDA
	if (p->backend == PC_BACKEND_CUDA) {
		errbuf_set(err, errlen, "backend cuda: this chirpd was built without CUDA (no nvcc at build time); use backend cpu or auto");
		return -EINVAL;
	}
#endif
	return 0;
}

/* ---- the radar chain's parameters (pc.h, RADAR CHAIN) ------------------- */

/* The map's size and the window over the P' pulses (radar_check has
 * checked the MTI and Nd). */
static int check_radar_map(const struct pc_params *p, char *err, size_t errlen)
{
	const struct pc_radar *r = &p->radar;
	unsigned pm = radar_pulses_after_mti(p->pulses, r->mti);
	unsigned nd = radar_doppler_nfft(p->pulses, r->mti, r->nfft);

	if ((uint64_t)chain_rows(p) * nd * p->samples > ((uint64_t)1 << 40)) {
		errbuf_set(err, errlen, "range-Doppler map of %u x %u x %u cells is too large",
			   chain_rows(p), nd, p->samples);
		return -EINVAL;
	}
	if (r->window) {
		double e = 0.0;

		for (unsigned i = 0; i < pm; i++) {
			if (!isfinite(r->window[i])) {
				errbuf_set(err, errlen, "doppler window coefficient %u is not finite", i);
				return -EINVAL;
			}
			e += (double)r->window[i] * r->window[i];
		}
		if (!(e > 0.0)) {
			errbuf_set(err, errlen, "doppler window is all zeros");
			return -EINVAL;
		}
	}
	return 0;
}

static int check_radar(const struct pc_params *p, char *err, size_t errlen)
{
	struct radar_fault f;

	if (radar_check_outputs(p->out_mode, &p->radar, &f) < 0) {
		errbuf_set(err, errlen, "%s", f.why);
		return -EINVAL;
	}
	if (!p->radar.doppler)
		return 0;   /* the rest is ignored */
	if (radar_check(&p->radar, p->pulses, p->samples, &f) < 0 ||
	    radar_check_scales(&p->radar, &f) < 0) {
		errbuf_set(err, errlen, "%s", f.why);
		return -EINVAL;
	}
	if (check_radar_map(p, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

/* beam_params and mvdr_params of p->beams (list and taper point into
 * p's arrays; pc_create points them at its copies). */
static void beams_to_params(const struct pc_params *p, struct beam_params *bp,
			    struct mvdr_params *mp)
{
	const struct pc_beams *b = &p->beams;

	beam_params_init(bp);
	bp->carrier_hz = b->carrier_hz;
	bp->layout = b->layout == PC_BEAMS_LIST ? BEAM_LIST : BEAM_FAN;
	bp->count = b->count;
	bp->fan_az_deg = b->fan_az_deg;
	bp->fan_el_deg = b->fan_el_deg;
	bp->fan_spacing_u = b->fan_spacing_u;
	bp->list_deg = b->list_deg;
	bp->taper_coef = b->mode == PC_BEAMS_CONVENTIONAL ? b->taper : NULL;
	mvdr_params_init(mp);
	mp->snapshots = b->snapshots ? b->snapshots : 2 * p->channels;
	mp->first_gate = b->first_gate;
	mp->gate_stride = b->gate_stride;
	mp->pulse_stride = b->pulse_stride;
	mp->loading = b->loading;
}

/* The array, the beam set and (mvdr) the training rule of p, built;
 * their constructors are the checks. *a and *s owned by the caller. */
static int beams_build(const struct pc_params *p, struct array **a, struct beam_set **s,
		       char *err, size_t errlen)
{
	struct beam_params bp;
	struct mvdr_params mp;
	struct mvdr *m;
	char why[256];

	beams_to_params(p, &bp, &mp);
	*s = NULL;
	*a = array_create_xyz(p->channels, p->beams.positions_m, p->beams.cal, why, sizeof(why));
	if (!*a) {
		errbuf_set(err, errlen, "beams: array: %s", why);
		return -EINVAL;
	}
	*s = beam_set_create(*a, &bp, why, sizeof(why));
	if (!*s) {
		errbuf_set(err, errlen, "beams: %s", why);
		return -EINVAL;
	}
	if (p->beams.mode != PC_BEAMS_MVDR)
		return 0;
	m = mvdr_create(p->channels, p->pulses, p->samples, p->beams.count, &mp, why, sizeof(why));
	if (!m) {
		errbuf_set(err, errlen, "beams: mvdr: %s", why);
		return -EINVAL;
	}
	mvdr_destroy(m);
	return 0;
}

/* Beams: the mode, B, the arrays given, MVDR's channel bound, no
 * integrated CFAR (a sum over beams is not a map of anything), then
 * what the constructors check (array, directions, taper, visibility,
 * the training rule). */
static int check_beams(const struct pc_params *p, char *err, size_t errlen)
{
	const struct pc_beams *b = &p->beams;
	struct array *a = NULL;
	struct beam_set *s = NULL;
	int rc;

	if (b->mode == PC_BEAMS_OFF)
		return 0;
	if (b->mode != PC_BEAMS_CONVENTIONAL && b->mode != PC_BEAMS_MVDR) {
		errbuf_set(err, errlen, "beams: mode %d unknown", (int)b->mode);
		return -EINVAL;
	}
	if (b->count < 1 || b->count > PC_MAX_BEAMS) {
		errbuf_set(err, errlen, "beams: count %u must be 1..%u", b->count, PC_MAX_BEAMS);
		return -EINVAL;
	}
	if (!b->positions_m) {
		errbuf_set(err, errlen, "beams: no element positions");
		return -EINVAL;
	}
	if (b->mode == PC_BEAMS_MVDR && p->channels > PC_MAX_MVDR_CHANNELS) {
		errbuf_set(err, errlen, "beams: mvdr needs at most %u channels, not %u",
			   PC_MAX_MVDR_CHANNELS, p->channels);
		return -EINVAL;
	}
	if (p->radar.doppler && p->radar.cfar && p->radar.integrate) {
		errbuf_set(err, errlen, "beams: the CFAR cannot integrate over beams (integrate 0)");
		return -EINVAL;
	}
	rc = beams_build(p, &a, &s, err, errlen);
	beam_set_destroy(s);
	array_destroy(a);
	return rc;
}

int pc_params_check(const struct pc_params *p, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!p) {
		errbuf_set(err, errlen, "no parameters");
		return -EINVAL;
	}
	if (check_geometry(p, err, errlen) < 0 || check_modes(p, err, errlen) < 0 ||
	    check_reference(p, err, errlen) < 0 || check_cpi_size(p, err, errlen) < 0 ||
	    check_backend_opts(p, err, errlen) < 0 || check_radar(p, err, errlen) < 0 ||
	    check_beams(p, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

/* ---- reference spectrum, double precision ---------------------------- */

/* nfft <= INT_MAX (checked), so the index products below fit in uint64_t. */

struct cplx { double re, im; };

static size_t smallest_factor(size_t n)
{
	static const size_t small[] = { 2, 3, 5, 7 };

	for (size_t i = 0; i < 4; i++)
		if (n % small[i] == 0)
			return small[i];
	for (size_t f = 11; f * f <= n; f += 2)
		if (n % f == 0)
			return f;
	return n;
}

/*
 * Recursive mixed-radix decimation-in-time DFT of n points of in (stride
 * istride) into out[0..n-1]. tw[m] = exp(-2 pi i m / N) for the full size
 * N; twstride = N / n. tmp holds at least the largest factor. Cost
 * O(n * sum of prime factors): fine for setup, and exact twiddles (no
 * recurrences) keep the error at the double rounding level.
 */
static void dft_rec(const struct cplx *in, size_t istride, struct cplx *out,
		    size_t n, const struct cplx *tw, size_t N, size_t twstride,
		    struct cplx *tmp)
{
	size_t p, m;

	if (n == 1) {
		out[0] = in[0];
		return;
	}
	p = smallest_factor(n);
	m = n / p;
	for (size_t r = 0; r < p; r++)
		dft_rec(in + r * istride, istride * p, out + r * m, m, tw, N,
			twstride * p, tmp);
	/* X[k + q m] = sum_r W_n^{r (k + q m)} Y_r[k] */
	for (size_t k = 0; k < m; k++) {
		for (size_t r = 0; r < p; r++)
			tmp[r] = out[r * m + k];
		for (size_t q = 0; q < p; q++) {
			size_t idx = k + q * m;
			double sr = 0.0, si = 0.0;

			for (size_t r = 0; r < p; r++) {
				/* W_n^e = W_N^(e * N/n), reduced mod N */
				size_t e = (size_t)((uint64_t)r * idx % n) * twstride;
				const struct cplx *w = &tw[e];

				sr += tmp[r].re * w->re - tmp[r].im * w->im;
				si += tmp[r].re * w->im + tmp[r].im * w->re;
			}
			out[idx].re = sr;
			out[idx].im = si;
		}
	}
}

/* Largest prime factor of n. */
static size_t largest_factor(size_t n)
{
	size_t big = 1;

	while (n > 1) {
		size_t f = smallest_factor(n);

		big = f;
		n /= f;
	}
	return big;
}

/*
 * filt[f] = g conj(H[f]) / nfft with H = DFT_nfft of h zero-padded.
 * Returns 0 or -ENOMEM.
 */
static int make_filter(const float *ref, size_t L, size_t nfft, double g, float *filt)
{
	struct cplx *tw = NULL, *x = NULL, *X = NULL, *tmp = NULL;
	size_t pmax = largest_factor(nfft);
	int rc = -ENOMEM;

	tw = malloc(nfft * sizeof(*tw));
	X = malloc(nfft * sizeof(*X));
	if (!tw || !X)
		goto out;
	for (size_t m = 0; m < nfft; m++) {
		double a = -2.0 * M_PI * (double)m / (double)nfft;

		tw[m].re = cos(a);
		tw[m].im = sin(a);
	}
	/* Mixed-radix costs ~nfft * pmax, the direct sum L * nfft: take the cheaper. */
	if ((double)nfft * (double)(pmax < L ? pmax : L) > 1e10)
		log_warn("nfft %zu has a prime factor %zu: building the reference spectrum is slow; "
			 "prefer an nfft of the form 2^a 3^b 5^c 7^d", nfft, pmax);
	if (pmax <= L) {
		x = calloc(nfft, sizeof(*x));
		tmp = malloc(pmax * sizeof(*tmp));
		if (!x || !tmp)
			goto out;
		for (size_t k = 0; k < L; k++) {
			x[k].re = ref[2 * k];
			x[k].im = ref[2 * k + 1];
		}
		dft_rec(x, 1, X, nfft, tw, nfft, 1, tmp);
	} else {
		/* Direct DFT over the L nonzero samples: O(L nfft). */
		for (size_t f = 0; f < nfft; f++) {
			double sr = 0.0, si = 0.0;

			for (size_t k = 0; k < L; k++) {
				size_t e = (size_t)((uint64_t)k * f % nfft);
				double hr = ref[2 * k], hi = ref[2 * k + 1];

				sr += hr * tw[e].re - hi * tw[e].im;
				si += hr * tw[e].im + hi * tw[e].re;
			}
			X[f].re = sr;
			X[f].im = si;
		}
	}
	for (size_t f = 0; f < nfft; f++) {
		filt[2 * f] = (float)(g * X[f].re / (double)nfft);
		filt[2 * f + 1] = (float)(-g * X[f].im / (double)nfft);
	}
	rc = 0;
out:
	free(tw);
	free(x);
	free(X);
	free(tmp);
	return rc;
}

/* ---- lifecycle --------------------------------------------------------- */

int pc_device_identity(const struct pc_params *p, char *buf, size_t len)
{
	enum pc_backend b = p->backend;

	if (b == PC_BACKEND_AUTO)
		b = pc_cuda_available() ? PC_BACKEND_CUDA : PC_BACKEND_CPU;
	if (b == PC_BACKEND_CPU) {
		pc_cpu_identity(p->cpu_threads, buf, len);
		return 0;
	}
#ifdef CHIRP_HAVE_CUDA
	return pc_cuda_identity(p->gpu, p->gpu_bus_id, buf, len);
#else
	snprintf(buf, len, "this build has no CUDA backend");
	return -ENODEV;
#endif
}

int pc_cuda_available(void)
{
#ifdef CHIRP_HAVE_CUDA
	return pc_cuda_probe() > 0;
#else
	return 0;
#endif
}

int pc_auto_pick(const unsigned *depths, const double *cpi_per_s, int n)
{
	int best = -1;

	for (int i = 0; i < n; i++)
		if (cpi_per_s[i] > 0 && (best < 0 || cpi_per_s[i] > cpi_per_s[best]))
			best = i;
	/* The shallowest within the margin of the fastest. */
	for (int i = 0; best >= 0 && i < best; i++)
		if (cpi_per_s[i] > 0 && depths[i] < depths[best] &&
		    cpi_per_s[i] >= cpi_per_s[best] * (1.0 - PC_AUTO_MARGIN))
			return i;
	return best;
}

/* Scratch CPIs for calibrate_ns: n input and n output buffers of in_len /
 * out_len bytes (page-rounded), the inputs holding random samples. */
struct calib_scratch {
	void *in, *out, *det;
	size_t in_len, out_len, det_len;
	unsigned n;
};

static int calib_scratch_make(const struct pc *pc, unsigned n, struct calib_scratch *cs,
			      char *err, size_t errlen);
static void calib_scratch_free(struct calib_scratch *cs);
static int calibrate_ns(struct pc *pc, const struct calib_scratch *cs, uint64_t min_ns,
			uint64_t max_ns, double *cpi_per_s, char *err, size_t errlen);

/* streams = auto times each depth over up to this many bytes of distinct
 * input and output buffers (at most PC_CALIB_MAX_BUFS CPIs), not one CPI's
 * buffers over and over: the daemon streams through a ring of hundreds of
 * slots. Made once for all the depths. */
#define PC_CALIB_POOL_BYTES (512ull << 20)
#define PC_CALIB_MAX_BUFS   16u

#ifdef CHIRP_HAVE_CUDA
/*
 * streams = 0: build the backend at each of PC_AUTO_DEPTHS in turn, time
 * each (150-500 ms of random CPIs, pc_calibrate's method), keep the one
 * pc_auto_pick names and destroy the others as soon as they lose, so at
 * most two are alive at once. No single depth serves every CPI shape: the
 * copy engines need two or three CPIs in flight for small CPIs and fewer
 * for large ones, and chunking follows the depth (chunk_policy.c). Takes a
 * second or two at start; a depth that cannot be built (device memory) or
 * measured is skipped and said so. Returns the backend, or NULL with why
 * when no depth could be both built and measured.
 */
static void *create_auto_depth(struct pc *pc, char *why, size_t whylen)
{
	static const unsigned depths[PC_AUTO_DEPTHS_N] = PC_AUTO_DEPTHS;
	double cps[PC_AUTO_DEPTHS_N] = { 0 };
	void *kept = NULL;
	int kept_i = -1;
	size_t o = 0;
	unsigned long long per = (unsigned long long)pc->in_bytes + pc->out_bytes;
	unsigned nbuf = per ? (unsigned)(PC_CALIB_POOL_BYTES / per) : 1;
	struct calib_scratch cs;

	if (nbuf < 1)
		nbuf = 1;
	if (nbuf > PC_CALIB_MAX_BUFS)
		nbuf = PC_CALIB_MAX_BUFS;
	if (calib_scratch_make(pc, nbuf, &cs, why, whylen) < 0)
		return NULL;

	for (int i = 0; i < PC_AUTO_DEPTHS_N; i++) {
		char e[256];
		void *be;

		pc->setup.streams = depths[i];
		be = pc->ops->create(&pc->setup, e, sizeof(e));
		if (!be) {
			log_warn("streams = auto: depth %u cannot be built: %s", depths[i], e);
			if (!kept)
				errbuf_set(why, whylen, "%s", e);
			continue;
		}
		pc->be = be;
		pc->failed = false;
		if (calibrate_ns(pc, &cs, 150000000ull, 500000000ull, &cps[i], e, sizeof(e)) < 0) {
			log_warn("streams = auto: depth %u not measured: %s", depths[i], e);
			if (!kept)
				errbuf_set(why, whylen, "depth %u not measured: %s", depths[i], e);
			cps[i] = 0;
		}
		if (pc_auto_pick(depths, cps, i + 1) == i) {
			if (kept)
				pc->ops->destroy(kept);
			kept = be;
			kept_i = i;
		} else {
			pc->ops->destroy(be);
		}
		pc->be = NULL;
	}
	calib_scratch_free(&cs);
	pc->failed = false;
	if (!kept)   /* pc_auto_pick keeps only a depth that was measured */
		return NULL;
	pc->setup.streams = depths[kept_i];
	o = (size_t)snprintf(pc->depth_choice, sizeof(pc->depth_choice), "auto:");
	for (int i = 0; i < PC_AUTO_DEPTHS_N && o < sizeof(pc->depth_choice); i++)
		o += (size_t)snprintf(pc->depth_choice + o, sizeof(pc->depth_choice) - o,
				      "%s %u %.0f", i ? "," : "", depths[i], cps[i]);
	if (o < sizeof(pc->depth_choice))
		snprintf(pc->depth_choice + o, sizeof(pc->depth_choice) - o, " CPI/s");
	log_info("streams = auto: depth %u (measured CPI/s at depth %s)", depths[kept_i],
		 pc->depth_choice + 5);
	return kept;
}
#endif

/* The longest L of p's modes: the one the shared FFT length is made for. */
static size_t longest_ref_len(const struct pc_params *p)
{
	struct pc_mode one;
	const struct pc_mode *m;
	unsigned n = params_modes(p, &one, &m);
	size_t L = 0;

	for (unsigned i = 0; i < n; i++)
		if (m[i].ref_len > L)
			L = m[i].ref_len;
	return L;
}

/*
 * The radar chain, resolved once for the backend (radar.h); a map is
 * C x Nd x R cells, and pc_execute gets a list of its own for when its
 * caller gives none.
 */
static int setup_radar(struct pc *pc, const struct pc_params *p, char *err, size_t errlen)
{
	int rc = radar_setup_make(&pc->radar, p, err, errlen);

	if (rc < 0)
		return rc;
	pc->setup.radar = &pc->radar;
	if (p->out_mode == PC_OUT_MAP_POWER || p->out_mode == PC_OUT_MAP_DB)
		pc->out_bytes = (size_t)chain_rows(p) * pc->radar.nd * p->samples * sizeof(float);
	pc->det_bytes = pc->radar.det_bytes;
	if (pc->det_bytes) {
		if (posix_memalign(&pc->det_scratch, 64, pc->det_bytes) != 0) {
			pc->det_scratch = NULL;
			errbuf_set(err, errlen, "out of memory for a %zu-byte detection list", pc->det_bytes);
			return -ENOMEM;
		}
	}
	return 0;
}

/* pc->setup from checked parameters, zeroed fields read as their documented
 * defaults; the GPU bus id is copied so p need not outlive pc. */
static int setup_from_params(struct pc *pc, const struct pc_params *p, char *err, size_t errlen)
{
	pc->setup.channels = p->channels;
	pc->setup.pulses = p->pulses;
	pc->setup.samples = p->samples;
	pc->setup.rows = (size_t)p->channels * p->pulses;
	pc->setup.ref_len = longest_ref_len(p);
	pc->setup.nfft = p->nfft ? p->nfft
				 : pc_good_fft_size((size_t)p->samples + pc->setup.ref_len - 1);
	pc->setup.in_format = p->in_format;
	pc->setup.out_mode = p->out_mode;
	pc->setup.cpu_threads = p->cpu_threads;
	pc->setup.gpu = p->gpu;
	pc->setup.streams = p->streams;
	pc->setup.cpu_depth = p->cpu_depth ? p->cpu_depth : 1;
	pc->setup.staging = p->staging;
	pc->setup.staging_threads = p->staging_threads ? p->staging_threads : 1;
	pc->setup.busy_poll = p->busy_poll ? 1 : 0;
	pc->setup.idle_spin_us = p->idle_spin_us;
	pc->setup.tune = p->tune;
	pc->setup.snapshot_cells = p->radar.doppler ? p->snapshot_cells : 0;
	if (!pc->setup.tune.cuda_idle_chunks)   /* 0 (a zeroed struct) means 1 */
		pc->setup.tune.cuda_idle_chunks = 1;
	if (p->gpu_bus_id) {
		pc->gpu_bus_id = strdup(p->gpu_bus_id);
		if (!pc->gpu_bus_id) {
			errbuf_set(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	pc->setup.gpu_bus_id = pc->gpu_bus_id;
	pc->in_bytes = pc->setup.rows * p->samples * pc_format_sample_bytes(p->in_format);
	pc->out_bytes = (size_t)chain_rows(p) * p->pulses * p->samples *
			pc_output_sample_bytes(p->out_mode);
	return p->radar.doppler ? setup_radar(pc, p, err, errlen) : 0;
}

/*
 * Beams: the array and copies of the directions and the taper, which
 * setup.beams hands the backend, and pc.c's set for checking pointings.
 */
static int setup_beams(struct pc *pc, const struct pc_params *p, char *err, size_t errlen)
{
	const struct pc_beams *b = &p->beams;
	struct pc_beam_setup *bs = &pc->beams;
	struct mvdr_params mp;

	if (b->mode == PC_BEAMS_OFF)
		return 0;
	if (beams_build(p, &pc->array, &pc->point_set, err, errlen) < 0)
		return -EINVAL;
	bs->beams = b->count;
	bs->channels = p->channels;
	bs->mode = b->mode;
	bs->array = pc->array;
	beams_to_params(p, &bs->bp, &mp);
	bs->mvdr = mp;
	bs->monopulse = b->monopulse && b->count >= 2;
	if (b->layout == PC_BEAMS_LIST) {
		pc->beam_list = malloc(2 * (size_t)b->count * sizeof(double));
		if (!pc->beam_list)
			goto nomem;
		memcpy(pc->beam_list, b->list_deg, 2 * (size_t)b->count * sizeof(double));
	}
	if (bs->bp.taper_coef) {
		pc->beam_taper = malloc((size_t)p->channels * sizeof(double));
		if (!pc->beam_taper)
			goto nomem;
		memcpy(pc->beam_taper, b->taper, (size_t)p->channels * sizeof(double));
	}
	bs->bp.list_deg = pc->beam_list;
	bs->bp.taper_coef = pc->beam_taper;
	pc->setup.beams = bs;
	return 0;
nomem:
	errbuf_set(err, errlen, "out of memory for the beams");
	return -ENOMEM;
}

/*
 * Every mode's spectrum, the table the backends multiply by (filter i is
 * mode filt_mode[i]'s, in the order of pc_params.modes), each scaled to
 * unit noise gain by its own reference's energy when normalize is noise:
 * a mode's filter is exactly the one a pc built with that mode alone gets.
 * The id -> index map lets pc_submit_mode pick one with no search.
 */
static int setup_filters(struct pc *pc, const struct pc_params *p, char *err, size_t errlen)
{
	size_t nfft = pc->setup.nfft;
	struct pc_mode one;
	const struct pc_mode *m;
	unsigned n = params_modes(p, &one, &m);

	for (unsigned id = 0; id < PC_MAX_MODES; id++)
		pc->mode_filt[id] = -1;
	pc->filts = malloc((size_t)n * 2 * nfft * sizeof(float));
	if (!pc->filts) {
		errbuf_set(err, errlen, "out of memory for %u %zu-point reference spectra", n, nfft);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		double g = p->normalize == PC_NORM_NOISE ? 1.0 / sqrt(ref_energy(m[i].ref, m[i].ref_len))
							 : 1.0;

		if (make_filter(m[i].ref, m[i].ref_len, nfft, g, pc->filts + (size_t)i * 2 * nfft) < 0) {
			errbuf_set(err, errlen, "out of memory computing the reference spectrum (nfft %zu)",
				   nfft);
			return -ENOMEM;
		}
		pc->filt_mode[i] = m[i].id;
		pc->mode_filt[m[i].id] = (int)i;
	}
	pc->setup.filts = pc->filts;
	pc->setup.nfilts = n;
	return 0;
}

/* Create the backend: auto picks CUDA where a device is usable and falls
 * back to the CPU (with a warning naming why) where it is not. */
static int backend_open(struct pc *pc, const struct pc_params *p, char *err, size_t errlen)
{
	char why[256] = "";

	pc->backend = p->backend;
	if (pc->backend == PC_BACKEND_AUTO)
		pc->backend = pc_cuda_available() ? PC_BACKEND_CUDA : PC_BACKEND_CPU;
#ifdef CHIRP_HAVE_CUDA
	if (pc->backend == PC_BACKEND_CUDA) {
		pc->ops = &pc_cuda_ops;
		if (p->streams == 0)
			pc->be = create_auto_depth(pc, why, sizeof(why));
		else
			pc->be = pc->ops->create(&pc->setup, why, sizeof(why));
		if (!pc->be && p->backend == PC_BACKEND_AUTO) {
			log_warn("backend auto: CUDA device unusable (%s); using the CPU backend", why);
			pc->backend = PC_BACKEND_CPU;
		}
	}
#endif
	if (pc->backend == PC_BACKEND_CPU) {
		pc->ops = &pc_cpu_ops;
		if (pc->setup.beams && !pc->ops->beams) {
			errbuf_set(err, errlen, "backend cpu: beams are not implemented");
			return -1;
		}
		pc->be = pc->ops->create(&pc->setup, why, sizeof(why));
	}
	if (!pc->be) {
		errbuf_set(err, errlen, "backend %s: %s", pc_backend_name(pc->backend),
			   why[0] ? why : "cannot be created");
		return -1;
	}
	return 0;
}

struct pc *pc_create(const struct pc_params *p, char *err, size_t errlen)
{
	struct pc *pc = NULL;
	int rc;

	rc = pc_params_check(p, err, errlen);
	if (rc < 0)
		return NULL;
	pc = calloc(1, sizeof(*pc));
	if (!pc) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	if (setup_from_params(pc, p, err, errlen) < 0 || setup_filters(pc, p, err, errlen) < 0 ||
	    setup_beams(pc, p, err, errlen) < 0 || backend_open(pc, p, err, errlen) < 0) {
		pc_destroy(pc);
		return NULL;
	}
	return pc;
}

void pc_destroy(struct pc *pc)
{
	if (!pc)
		return;
	if (pc->be)
		pc->ops->destroy(pc->be);
	free(pc->filts);
	free(pc->gpu_bus_id);
	free(pc->det_scratch);
	radar_setup_free(&pc->radar);
	beam_set_destroy(pc->point_set);
	array_destroy(pc->array);
	free(pc->beam_list);
	free(pc->beam_taper);
	free(pc);
}

void pc_get_info(const struct pc *pc, struct pc_info *info)
{
	memset(info, 0, sizeof(*info));
	info->numa_node = -1;
	snprintf(info->staging, sizeof(info->staging), "none");
	if (pc->ops->info)
		pc->ops->info(pc->be, info);
	info->backend = pc->backend;
	info->nfft = pc->setup.nfft;
	info->ref_len = pc->setup.ref_len;
	info->busy_poll = pc->setup.busy_poll;
	info->idle_spin_us = pc->setup.idle_spin_us;
	snprintf(info->depth_choice, sizeof(info->depth_choice), "%s", pc->depth_choice);
	info->pulses_mti = pc->setup.radar ? pc->radar.pulses_mti : 0;
	info->doppler_nfft = pc->setup.radar ? pc->radar.nd : 0;
	info->det_bytes = pc->det_bytes;
	info->map_count = pc->setup.radar ? pc->radar.channels : 0;
	info->snapshot_cells = pc->setup.snapshot_cells;
}

size_t pc_in_bytes(const struct pc *pc)
{
	return pc->in_bytes;
}

size_t pc_out_bytes(const struct pc *pc)
{
	return pc->out_bytes;
}

int pc_register_host(struct pc *pc, void *base, size_t len)
{
	if (pc->failed)
		return -EIO;
	if (!pc->ops->register_host)
		return 0;
	return pc->ops->register_host(pc->be, base, len);
}

void pc_unregister_host(struct pc *pc, void *base)
{
	if (pc->ops->unregister_host)
		pc->ops->unregister_host(pc->be, base);
}

/* Mark the pc failed after a backend error rc; keep the backend's words. */
static int pc_fail(struct pc *pc, int rc, const char *call)
{
	const char *why = pc->ops->last_error ? pc->ops->last_error(pc->be) : "";

	if (!pc->failed) {
		pc->failed = true;
		snprintf(pc->err, sizeof(pc->err), "%s", why && *why ? why : strerror(-rc));
		log_err("pulse compression (%s backend) failed in %s: %s",
			pc_backend_name(pc->backend), call, pc->err);
	}
	return rc;
}

/*
 * An unknown mode is the producer's business, not a backend failure:
 * -ENOENT, nothing queued, the pc stays usable (the daemon flags the CPI
 * CHIRP_RING_UNKNOWN_MODE).
 */
/*
 * A snapshot request (chirp/pc.h, SNAPSHOTS) checked and resolved into
 * *sn: sn->maps 0 when it selects no map (nothing to do). -EINVAL when
 * it is one this pc cannot serve.
 */
static int check_snap(const struct pc *pc, const struct pc_snap *q, struct pc_snap_cmd *sn)
{
	const struct radar_setup *rs = pc->setup.radar;
	size_t cells;

	memset(sn, 0, sizeof(*sn));
	if (!rs || !pc->setup.snapshot_cells || !pc->ops->submit_cpi || !pc->ops->snapshots ||
	    !q->cells || (uintptr_t)q->cells % 4 != 0 || q->dd < 1 || q->dr < 1)
		return -EINVAL;
	sn->dd = q->dd < rs->nd ? q->dd : rs->nd;   /* blocks no larger than the map */
	sn->dr = q->dr < rs->samples ? q->dr : rs->samples;
	sn->maps = maxhold_sel_count(q->map_mask, rs->channels);
	sn->rows = maxhold_ceil_div(rs->nd, sn->dd);
	sn->cols = maxhold_ceil_div(rs->samples, sn->dr);
	cells = (size_t)sn->maps * sn->rows * sn->cols;
	if (cells > q->cells_len || cells > pc->setup.snapshot_cells)
		return -EINVAL;
	sn->cells = q->cells;
	sn->map_mask = q->map_mask;
	return 0;
}

int pc_submit_job(struct pc *pc, const struct pc_job *j)
{
	struct pc_snap_cmd snap = { 0 };
	int rc, fi;

	if (pc->failed)
		return -EIO;
	/* Bad arguments are the caller's bug, not a backend failure: in and
	 * out (unless nothing is written to it) 4-byte aligned, det (when
	 * detecting; ignored otherwise) 8-byte aligned for its 64-bit fields. */
	if (!j->in || (uintptr_t)j->in % 4 != 0)
		return -EINVAL;
	if (pc->out_bytes && (!j->out || (uintptr_t)j->out % 4 != 0))
		return -EINVAL;
	if (pc->det_bytes && (!j->det || (uintptr_t)j->det % 8 != 0))
		return -EINVAL;
	fi = j->mode < PC_MAX_MODES ? pc->mode_filt[j->mode] : -1;
	if (fi < 0)
		return -ENOENT;
	if (j->snap && check_snap(pc, j->snap, &snap) < 0)
		return -EINVAL;
	if (pc_check_pointing(pc, j->pointing_az_deg, j->pointing_el_deg, NULL, 0) < 0)
		return -EDOM;
	if (pc->ops->submit_cpi) {
		struct pc_cpi_cmd cmd = {
			.in = j->in, .out = pc->out_bytes ? j->out : NULL,
			.det = pc->det_bytes ? j->det : NULL, .tag = j->tag,
			.filt = (unsigned)fi, .mode = j->mode,
			.pointing_az_deg = j->pointing_az_deg, .pointing_el_deg = j->pointing_el_deg,
			.snap = snap.maps ? &snap : NULL,
		};

		rc = pc->ops->submit_cpi(pc->be, &cmd);
	} else {
		rc = pc->ops->submit(pc->be, j->in, pc->out_bytes ? j->out : NULL,
				     pc->det_bytes ? j->det : NULL, j->tag, (unsigned)fi, j->mode);
	}
	if (rc < 0 && rc != -EAGAIN)
		return pc_fail(pc, rc, "submit");
	return rc;
}

int pc_submit_mode(struct pc *pc, const void *in, void *out, uint64_t tag, unsigned mode)
{
	struct pc_job j = { .in = in, .out = out, .det = NULL, .tag = tag, .mode = mode };

	return pc_submit_job(pc, &j);
}

size_t pc_det_bytes(const struct pc *pc)
{
	return pc->det_bytes;
}

int pc_submit(struct pc *pc, const void *in, void *out, uint64_t tag)
{
	return pc_submit_mode(pc, in, out, tag, 0);
}

/* pc.c's set takes the pointing (and keeps it, for pc_beam_azel) or
 * refuses it and keeps the last good one. */
int pc_check_pointing(struct pc *pc, double az_deg, double el_deg, char *err, size_t errlen)
{
	if (!pc->point_set)
		return 0;
	return beam_set_point(pc->point_set, az_deg, el_deg, err, errlen);
}

unsigned pc_beam_count(const struct pc *pc)
{
	return pc->point_set ? beam_count(pc->point_set) : 0;
}

void pc_beam_azel(const struct pc *pc, unsigned b, double *az_deg, double *el_deg)
{
	beam_azel(pc->point_set, b, az_deg, el_deg);
}

int pc_has_mode(const struct pc *pc, unsigned mode)
{
	return mode < PC_MAX_MODES && pc->mode_filt[mode] >= 0;
}

void pc_write_skipped(const struct pc *pc, void *out, void *det, unsigned mode)
{
	if (out) {
		float *o = out;
		const float nan = NAN;   /* a quiet NaN, 0x7fc00000 */

		for (size_t i = 0; i < pc->out_bytes / sizeof(float); i++)
			o[i] = nan;
	}
	if (det && pc->det_bytes) {
		struct chirp_det_header *h = det;

		memset(h, 0, sizeof(*h));
		h->magic = CHIRP_DET_MAGIC;
		h->version = CHIRP_DET_VERSION;
		h->record_bytes = sizeof(struct chirp_det_record);
		h->mode = mode;
		h->flags = CHIRP_DET_SKIPPED;
		h->doppler_bins = pc->radar.nd;
		h->range_gates = pc->radar.samples;
	}
}

int pc_poll(struct pc *pc, struct pc_done *done, int max, int timeout_ms)
{
	int rc;

	if (pc->failed)
		return -EIO;
	if (!done || max < 1)
		return -EINVAL;
	rc = pc->ops->poll(pc->be, done, max, timeout_ms);
	if (rc < 0)
		return pc_fail(pc, rc, "poll");
	return rc;
}

void pc_queue_hint(struct pc *pc, unsigned waiting)
{
	if (pc->ops->queue_hint)
		pc->ops->queue_hint(pc->be, waiting);
}

unsigned pc_in_flight(const struct pc *pc)
{
	return pc->ops->in_flight(pc->be);
}

/*
 * Needs nothing else in flight (-EBUSY otherwise): entries polled here
 * belong to this CPI only, so no other CPI's completion is swallowed.
 */
int pc_execute_job(struct pc *pc, const struct pc_job *job, uint32_t *nonfinite_rows)
{
	const uint64_t tag = job->tag;
	struct pc_done d[4];
	int rc, n;

	if (pc->failed)
		return -EIO;
	if (pc_in_flight(pc) != 0)
		return -EBUSY;
	rc = pc_submit_job(pc, job);
	if (rc < 0)
		return rc;
	for (;;) {
		n = pc_poll(pc, d, 4, -1);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			if (d[i].tag == tag && (d[i].flags & PC_DONE_OUTPUT)) {
				if (nonfinite_rows)
					*nonfinite_rows = d[i].nonfinite_rows;
				return 0;
			}
		}
		if (n == 0 && pc_in_flight(pc) == 0) {
			/* The backend lost our CPI: a bug, never silently pass. */
			snprintf(pc->err, sizeof(pc->err), "CPI vanished from the backend queue");
			pc->failed = true;
			return -EIO;
		}
	}
}

/* With a detecting pc the list goes to a scratch list made at create. */
int pc_execute(struct pc *pc, const void *in, void *out, uint32_t *nonfinite_rows)
{
	struct pc_job j = {
		.in = in, .out = out, .det = pc->det_scratch,
		.tag = UINT64_C(0x7063657865637574), /* "pcexecut" */
		.mode = 0,
	};

	return pc_execute_job(pc, &j, nonfinite_rows);
}

/* Poll until CPIs are reported done; returns how many outputs, < 0 on error. */
static int calib_drain(struct pc *pc, int wait_all)
{
	struct pc_done d[64];
	int outs = 0, n;

	do {
		n = pc_poll(pc, d, 64, wait_all ? -1 : 0);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			outs += (d[i].flags & PC_DONE_OUTPUT) != 0;
	} while (wait_all && pc_in_flight(pc) > 0);
	return outs;
}

int pc_calibrate(struct pc *pc, double *cpi_per_s, char *err, size_t errlen)
{
	struct calib_scratch cs;
	int rc;

	*cpi_per_s = 0;
	rc = calib_scratch_make(pc, 1, &cs, err, errlen);
	if (rc < 0)
		return rc;
	rc = calibrate_ns(pc, &cs, 30000000ull, 300000000ull, cpi_per_s, err, errlen);
	calib_scratch_free(&cs);
	return rc;
}

int pc_warm_up(struct pc *pc, char *err, size_t errlen)
{
	struct calib_scratch cs;
	double cps;
	int rc;

	rc = calib_scratch_make(pc, 1, &cs, err, errlen);
	if (rc < 0)
		return rc;
	/* min_ns = max_ns = 0: the untimed depth CPIs and the 2 timed ones
	 * calibrate_ns always runs; the rate of 2 CPIs means nothing. */
	rc = calibrate_ns(pc, &cs, 0, 0, &cps, err, errlen);
	calib_scratch_free(&cs);
	return rc;
}

static int calib_scratch_make(const struct pc *pc, unsigned n, struct calib_scratch *cs,
			      char *err, size_t errlen)
{
	/* Scratch CPIs stand in for ring slots: aligned and padded as those. */
	const size_t page = CHIRP_RING_PAGE_BYTES;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	memset(cs, 0, sizeof(*cs));
	cs->n = n < 1 ? 1 : n;
	cs->in_len = (pc->in_bytes + page - 1) & ~(size_t)(page - 1);
	cs->out_len = (pc->out_bytes + page - 1) & ~(size_t)(page - 1);
	cs->det_len = (pc->det_bytes + 63) & ~(size_t)63;
	if (cs->out_len == 0)   /* PC_OUT_NONE: one page, never written */
		cs->out_len = page;
	if (posix_memalign(&cs->in, page, cs->in_len * cs->n) != 0 ||
	    posix_memalign(&cs->out, page, cs->out_len * cs->n) != 0 ||
	    (cs->det_len && posix_memalign(&cs->det, 64, cs->det_len * cs->n) != 0)) {
		errbuf_set(err, errlen, "no memory for %u x (%zu + %zu) bytes of scratch CPIs", cs->n,
			   cs->in_len, cs->out_len);
		calib_scratch_free(cs);
		return -ENOMEM;
	}
	/* Random payload (xorshift64): finite cf32 in [-1, 1) or any sc16. */
	if (pc->setup.in_format == PC_FMT_CF32) {
		float *f = cs->in;

		for (size_t i = 0; i < pc->in_bytes / sizeof(float); i++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			f[i] = (float)((double)(x >> 11) * 0x1p-52 - 1.0);
		}
	} else {
		uint16_t *s = cs->in;

		for (size_t i = 0; i < pc->in_bytes / sizeof(uint16_t); i++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			s[i] = (uint16_t)(x >> 48);
		}
	}
	for (unsigned b = 1; b < cs->n; b++)   /* the same payload in every buffer */
		memcpy((char *)cs->in + (size_t)b * cs->in_len, cs->in, pc->in_bytes);
	memset(cs->out, 0, cs->out_len * cs->n);
	return 0;
}

static void calib_scratch_free(struct calib_scratch *cs)
{
	free(cs->in);
	free(cs->out);
	free(cs->det);
	cs->in = cs->out = cs->det = NULL;
}

/* Submit scratch CPI b (input, output and list b) as tag. */
static int calib_submit(struct pc *pc, const struct calib_scratch *cs, unsigned b, uint64_t tag,
			unsigned mode)
{
	struct pc_job j = {
		.in = (char *)cs->in + (size_t)b * cs->in_len,
		.out = (char *)cs->out + (size_t)b * cs->out_len,
		.det = cs->det ? (char *)cs->det + (size_t)b * cs->det_len : NULL,
		.tag = tag,
		.mode = mode,
	};

	return pc_submit_job(pc, &j);
}

/* pc_calibrate for at least min_ns (and 8 x depth CPIs), at most max_ns,
 * CPI k reading input buffer k mod cs->n and writing output buffer k mod
 * cs->n (registered with this pc's backend for the call, one region each
 * way). */
static int calibrate_ns(struct pc *pc, const struct calib_scratch *cs, uint64_t min_ns,
			uint64_t max_ns, double *cpi_per_s, char *err, size_t errlen)
{
	struct pc_info info;
	size_t in_len = cs->in_len, out_len = cs->out_len;
	unsigned depth, min_cpis, nbuf = cs->n;
	void *in = cs->in, *out = cs->out;
	unsigned mode = pc->filt_mode[0];   /* the first mode's filter: all cost the same */
	int reg_in = 0, reg_out = 0, reg_det = 0, rc, n;
	uint64_t t0, now, done = 0, submitted = 0;

	*cpi_per_s = 0;
	if (pc->failed || pc_in_flight(pc) != 0) {
		errbuf_set(err, errlen, "backend busy or failed");
		return -EBUSY;
	}
	pc_get_info(pc, &info);
	depth = info.depth ? info.depth : 1;
	min_cpis = 8 * depth;
	reg_in = pc_register_host(pc, in, in_len * nbuf) == 0;
	reg_out = pc_register_host(pc, out, out_len * nbuf) == 0;
	reg_det = cs->det && pc_register_host(pc, cs->det, cs->det_len * nbuf) == 0;
	pc_queue_hint(pc, UINT_MAX);   /* saturated: always something waiting */

	/* Warm-up: depth CPIs, untimed. Every CPI reads one of the inputs and writes
	 * one output buffer: the rate is what counts, not the results. */
	for (unsigned i = 0; i < depth; i++) {
		rc = calib_submit(pc, cs, i % nbuf, i, mode);
		if (rc < 0)
			goto fail;
	}
	rc = calib_drain(pc, 1);
	if (rc < 0)
		goto fail;
	t0 = now = mono_ns();
	for (;;) {
		/* Submit while short of min_cpis or min_ns and before max_ns;
		 * past max_ns still until 2 CPIs are done or in flight, so that a
		 * backend slower than max_ns a CPI gets a rate, not a hang. */
		while (pc_in_flight(pc) < depth &&
		       (((done + pc_in_flight(pc) < min_cpis || now - t0 < min_ns) &&
			 now - t0 < max_ns) ||
			done + pc_in_flight(pc) < 2)) {
			unsigned b = (unsigned)(submitted % nbuf);

			rc = calib_submit(pc, cs, b, submitted, mode);
			submitted++;
			if (rc < 0)
				goto fail;
		}
		n = calib_drain(pc, 0);
		if (n < 0) {
			rc = n;
			goto fail;
		}
		done += (uint64_t)n;
		now = mono_ns();
		if (pc_in_flight(pc) == 0 && done >= 2 &&
		    ((done >= min_cpis && now - t0 >= min_ns) || now - t0 >= max_ns))
			break;
	}
	*cpi_per_s = (double)done / ((double)(now - t0) * 1e-9);
	rc = 0;
	goto out;
fail:
	errbuf_set(err, errlen, "%s: %s", strerror(-rc), pc_last_error(pc));
	if (pc_in_flight(pc) > 0)
		(void)calib_drain(pc, 1);
out:
	pc_queue_hint(pc, 0);
	if (reg_in)
		pc_unregister_host(pc, in);
	if (reg_out)
		pc_unregister_host(pc, out);
	if (reg_det)
		pc_unregister_host(pc, cs->det);
	return rc;
}

int pc_bind_threads(struct pc *pc, const cpu_set_t *cpus)
{
	if (!pc->ops->bind_threads)
		return 0;
	return pc->ops->bind_threads(pc->be, cpus);
}

const char *pc_last_error(const struct pc *pc)
{
	if (pc->failed)
		return pc->err;
	if (pc->ops->last_error)
		return pc->ops->last_error(pc->be);
	return "";
}

int pc_inject_fault(struct pc *pc)
{
	if (!pc->ops->inject_fault)
		return -ENOTSUP;
	return pc->ops->inject_fault(pc->be);
}
