/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc.h — pulse compression, defined once for every backend.
 *
 * DEFINITION
 *   A CPI is C channels x P pulses x R range samples, laid out
 *   [channel][pulse][range] with range contiguous, everywhere (ring slots,
 *   host buffers, device buffers modulo pitch, output).
 *
 *   For each pulse row x[0..R-1], output gate n = 0..R-1 is
 *
 *       y[n] = g * sum_{k=0}^{L-1} x[n+k] * conj(h[k]),   x[m] = 0 for m >= R
 *
 *   where h = w . s is the reference waveform s (length L) times the window w
 *   (applied in time). A target echo that starts at sample d peaks at gate d.
 *   g = 1/||h||_2 (normalize = noise, the default: white noise keeps its
 *   power) or g = 1 (normalize = none).
 *
 *   It is computed by fast convolution with an FFT of length nfft >= R+L-1
 *   (no wrap-around): Y = FFT(x) . conj(FFT(h)), y = IFFT(Y)[0..R-1].
 *   nfft = the smallest 2^a 3^b 5^c 7^d >= R+L-1 unless forced; a forced
 *   nfft < R+L-1 is rejected.
 *
 *   Input formats:  cf32 — interleaved float32 I,Q;
 *                   sc16 — interleaved int16 I,Q, value = int16 / 32768.
 *   Output modes:   complex   — cf32 y[n];
 *                   magnitude — float32 |y[n]|;
 *                   power_db  — float32 10 log10(|y[n]|^2), with
 *                               |y|^2 clamped below at PC_POWER_FLOOR so a
 *                               zero output reads PC_POWER_DB_FLOOR dB
 *                               instead of -inf.
 *   A CPI that is not computed (its mode unknown, pc_write_skipped) has
 *   every float32 of its output a quiet NaN, in every output mode: no
 *   computed value takes it unless the input held NaN or Inf.
 *
 *   Noise: white input noise of power s^2 per sample reads s^2 in y
 *   (normalize = noise) at gates n <= R-L; past that the sum runs off the
 *   row (x[m] = 0) and y[n] holds s^2 sum_{k < R-n} |h[k]|^2 / ||h||^2.
 *
 * Every backend (CPU/FFTW, CUDA/cuFFT) implements exactly this; the CPU
 * backend is the reference the GPU is tested against.
 *
 * LIFECYCLE
 *   pc_create() validates, builds plans, buffers and the reference spectrum;
 *   pc_submit()/pc_poll() run CPIs with no allocation; pc_destroy() frees.
 *   A struct pc is used by one thread at a time.
 */
#ifndef CHIRP_PC_H
#define CHIRP_PC_H

#include <sched.h>      /* cpu_set_t (_GNU_SOURCE) */
#include <stddef.h>
#include <stdint.h>

#include "chirp/pc_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PC_POWER_FLOOR     1e-30f   /* |y|^2 floor for power_db            */
#define PC_POWER_DB_FLOOR  (-300.0f) /* = 10 log10(PC_POWER_FLOOR)         */


/* Bytes of one input sample / one output gate (or map cell). */
size_t pc_format_sample_bytes(enum pc_format f);   /* cf32: 8, sc16: 4     */
size_t pc_output_sample_bytes(enum pc_output m);   /* complex: 8, none: 0,
						      else 4               */

const char *pc_format_name(enum pc_format f);      /* "cf32", "sc16"       */
const char *pc_output_name(enum pc_output m);      /* "complex", ...       */
const char *pc_backend_name(enum pc_backend b);    /* "auto", "cpu", "cuda"*/

/*
 * Smallest 2^a 3^b 5^c 7^d >= n (n >= 1). Returns 0 if none fits in size_t.
 */
size_t pc_good_fft_size(size_t n);

/* One radar mode of pc_params.modes. */
struct pc_mode {
	unsigned id;                 /* 0 .. PC_MAX_MODES-1                  */
	const float *ref;            /* windowed reference, interleaved float32
					(re, im), ref_len complex samples      */
	size_t ref_len;              /* L: 1 <= L <= samples                 */
};


/*
 * Tuning that changes speed, never results. Every field is declared as a
 * configuration key ([processing] in chirpd.conf) and has the default that
 * pc_params_init writes; a backend ignores the fields of the other.
 */
struct pc_tuning {
	/* CPU backend (FFTW) */
	enum pc_fftw_planner fftw_planner;
	const char *fftw_wisdom;     /* FFTW wisdom file (read during pc_create
					only), read before planning and
					written after a measure/patient plan;
					NULL or "" = none                    */
	enum pc_switch takeover;     /* straggler take-over: a block still not
					stored after the grace is computed again
					by a waiting thread. AUTO: on when the
					workers spin (idle_spin_us > 0)      */
	unsigned block_kib;          /* rows per work block, in KiB of FFT rows:
					0 = auto (at most 256 KiB, balanced over
					the threads), else 1..1048576 taken as
					given                                */
	/* CUDA backend */
	int cuda_graphs;             /* 1: a CPI from registered memory runs as
					one CUDA graph (default); 0: call by call */
	unsigned cuda_chunks;        /* chunks a CPI's copies are cut into:
					0 = auto (by depth and size), else
					1..PC_MAX_CHUNKS                     */
	unsigned cuda_idle_chunks;   /* chunks of a CPI that arrives with none in
					flight: 1..PC_MAX_CHUNKS (default 1) */
	unsigned cuda_spin_us;       /* pc_poll: spin this long on the oldest
					CPI's event before sleeping, 0..10000 us
					(default PC_CUDA_SPIN_US)            */
	int staging_nt;              /* copy staging: 1 = non-temporal stores
					into the pinned buffers (default), 0 =
					plain memcpy                         */
	enum pc_switch cuda_fused;   /* one kernel per row for pad, forward
					FFT, multiply, inverse FFT and output
					(chirpd's own shared-memory FFT) instead
					of five launches around cuFFT. AUTO
					(default): fused when nfft factors into
					2, 3, 5 and 7 and a row fits in shared
					memory (pc_info.fft_engine says which);
					ON: fused or pc_create fails; OFF: cuFFT */
};
#define PC_CUDA_SPIN_US 300u

/*
 * RADAR CHAIN (optional, after pulse compression, on the same device)
 *
 *   Let y[c][p][n] be the compressed CPI above (P pulses, gates n < R).
 *
 *   MTI along pulses:   none:  z[p] = y[p]                       P' = P
 *                       two:   z[p] = y[p+1] - y[p]              P' = P-1
 *                       three: z[p] = y[p] - 2 y[p+1] + y[p+2]   P' = P-2
 *
 *   Doppler, Nd >= P' bins (auto: pc_good_fft_size(P')), bin k = 0..Nd-1
 *   holding signed bin m = k - floor(Nd/2) (zero Doppler in the middle):
 *
 *       D[c][k][n] = g_d * sum_{p<P'} w[p] z[c][p][n] exp(-2 pi i p m / Nd)
 *
 *   w = the window (P' coefficients, the caller's; chirpd's [doppler]
 *   window is a symmetric one, doc/radar.md), g_d = 1 / sqrt(G_mti *
 *   sum w[p]^2) with G_mti = sum of the MTI taps squared = 1, 2, 6 (none,
 *   two, three). A tone exp(2 pi i f p / prf) peaks at m = f Nd / prf:
 *   positive m is a closing target.
 *
 *   Noise with MTI. White noise of power s^2 in y (independent pulses)
 *   has in D, at signed bin m, theta = 2 pi m / Nd, the power s^2 N(m):
 *       N(m) = 1 + 2 / (G_mti A_0) sum_{l >= 1} r_l A_l cos(l theta)
 *   with r_l = sum_j h_j h_{j+l} of the MTI taps h (two: r_1 = -1; three:
 *   r_1 = -4, r_2 = 1) and the window's lag sums A_l = sum_{p < P'-l}
 *   w[p] w[p+l]; with rho_l = A_l / A_0 (rect: 1 - l / P'):
 *       none   N = 1 in every bin;
 *       two    N = 1 - rho_1 cos theta                     (0 .. 2);
 *       three  N = 1 - 4/3 rho_1 cos theta + 1/3 rho_2 cos 2 theta
 *                                                          (0 .. 8/3).
 *   As P' grows N tends to the filter's power response over its noise
 *   gain, |H(theta)|^2 / G_mti: 2 sin^2(theta/2) and 8/3 sin^4(theta/2),
 *   0 at zero Doppler (the notch) and largest at m = -Nd/2 (+-prf/2). g_d
 *   makes the mean of N over the Nd bins 1 (Nd >= 3): the map's noise
 *   averages s^2, but only without MTI is it s^2 in every bin. A tone's
 *   power in its bin is scaled by |H(theta)|^2 / G_mti too.
 *
 *   Map M[c][k][n] = |D[c][k][n]|^2; integrated I[k][n] = sum_c M[c][k][n].
 *
 *   CFAR, on each channel's map or on I (integrate): for cell (k, n) the
 *   training cells are (k+dk mod Nd, n+dn) with |dk| <= gd+td,
 *   |dn| <= gr+tr, 0 <= n+dn < R, and not (|dk| <= gd and |dn| <= gr):
 *   the Doppler axis is cyclic, and at the range edges only the cells that
 *   exist are used. The statistic S over them:
 *       ca  mean of the training cells (the column dn = 0 included);
 *       go  max of the means of the leading (dn < 0) and lagging (dn > 0)
 *           halves; so  their min; a half with no cell (gates 0 and R-1;
 *           with td = 0, every gate within gr of an edge) gives way to the
 *           other, a half cut by the edge is the mean of the cells it has;
 *           the cells of the test cell's own range column (dn = 0) are in
 *           neither half;
 *       os  the k_n-th smallest (1-based) of the N_n cells at gate n,
 *           k_n = max(1, floor((2 k N_n + N) / (2 N))) (k N_n / N rounded,
 *           halves up), N = (2(gd+td)+1)(2(gr+tr)+1) - (2gd+1)(2gr+1) the
 *           interior count, k = os_rank or, for 0, floor((3N + 2) / 4)
 *           (3N/4 rounded, halves up), at least 1.
 *   noise[n] = S * norm[n] and the threshold alpha[n] * noise[n], where
 *   norm (1 except os: 1 / E[k_n-th smallest of N_n unit-mean cells]) and
 *   alpha (from pfa and the cells actually used at gate n: N_n, and for
 *   go/so the two halves' counts; for exponential cells, or Gamma(C) ones,
 *   sums of C exponentials, when integrated) are computed once at create
 *   in double precision (radar.c states the model), then kept as float.
 *   So every gate, the edges included, has its own factor for the same
 *   pfa on independent cells of one mean. In float: noise =
 *   float(S norm[n]), threshold = alpha[n] noise; S is NaN when a training
 *   cell is NaN or Inf (non-finite input), so no cell crosses there.
 *   Those cells are independent and of one mean for white noise with no
 *   MTI, a rect window and Nd = P'. MTI makes the mean vary across Doppler
 *   (N(m) above): near the notch the estimate, a mean of N over the
 *   training cells' bins, exceeds the bin's own noise (fewer false alarms
 *   than pfa there, and snr_db reads low: chirp/detect.h, doc/radar.md).
 *   A cell is a crossing if its value > threshold,
 *   and a detection if it is also a local maximum: greater than every
 *   cell (k', n') with |k'-k| <= md (cyclic), |n'-n| <= mr (in range)
 *   whose index k' R + n' is lower, and not less than those whose index is
 *   higher. Detections go out as a list (chirp/detect.h).
 *
 *   Every backend implements exactly this; pc_params_check rejects what
 *   cannot be computed (training wider than an axis, pfa outside (0, 1),
 *   Nd < P', velocities without a carrier, a maxima neighbourhood wider
 *   than the Doppler axis (2 md + 1 > Nd) or the range (mr >= R), ...).
 *   The output mode goes with it: map_power / map_db need doppler, none
 *   needs cfar; complex / magnitude / power_db still write the compressed
 *   cube while the chain runs on it.
 */

/*
 * BEAMS (optional, before pulse compression; pc_params.beams)
 *
 *   The array: channel c's element at p_c = (x_c, y_c, z_c) metres (x right
 *   along the face, y up, z boresight), its channel's complex gain g_c
 *   (calibration; 1 without). A direction (az, el), degrees from boresight,
 *   az > 0 towards +x, el > 0 towards +y, is (u, v) = (sin az cos el,
 *   sin el), w = sqrt(1 - u^2 - v^2); visible: u^2 + v^2 <= 1.
 *
 *   Beams b = 0..B-1 at (u_b, v_b): a fan u_b = u0 + (b - (B-1)/2) du,
 *   v_b = v0, or a list. A CPI's pointing (az_p, el_p) moves every beam by
 *   (u_p, v_p) = (sin az_p cos el_p, sin el_p); a CPI whose pointing puts a
 *   beam outside the visible region is not processed (pc_submit_job says
 *   -EDOM; the caller writes pc_write_skipped).
 *
 *   a_c(u, v) = exp(+j 2 pi / lambda (x_c u + y_c v + z_c w)),
 *   lambda = 299792458 / carrier_hz.
 *   Conventional: W[b][c] = t_c conj(a_c(u_b, v_b)) / g_c / sum t, t the
 *   taper over the channels. MVDR: W[b][c] = conj(w_b[c]),
 *   w_b = R_l^-1 v_b / (v_b^H R_l^-1 v_b), v_b[c] = g_c a_c(u_b, v_b),
 *   R_l = R + delta tr(R)/C I, R = (1/K) sum_k x_k x_k^H over K training
 *   cells x_k = x[.][p_k][r_k] of the same CPI's input (the rule: p = 0,
 *   pulse_stride, ... < P outer, r = first_gate, first_gate + gate_stride,
 *   ... < R inner, the first K), solved in double. Either has unit gain
 *   towards its beam's direction.
 *
 *       x'[b][p][r] = sum_c W[b][c] x[c][p][r]
 *
 *   and x' (B rows per pulse) is the input to pulse compression above: the
 *   chain below runs on beams where it says channels (maps, CFAR and
 *   detections per beam). White element noise s^2 reads s^2 sum_c |W[b][c]
 *   g_c|^2 in beam b (conventional: s^2 / (C eta), eta the taper
 *   efficiency). Beamforming commutes with pulse compression: a backend may
 *   form the beams after it; results agree to float rounding. The output
 *   cube (complex, magnitude, power_db) is B x P x R, a map B x Nd x R.
 *
 *   With beams the local-maximum rule below also runs across beams: a
 *   detection in beam b is, besides its range-Doppler rule, not less than
 *   the same cell (k, n) in beams b - 1 and b + 1 (greater than beam b - 1's,
 *   not less than beam b + 1's: one target gives one detection, in its
 *   strongest beam). With monopulse, each record's angle is the maximum-
 *   likelihood estimate from the complex Doppler outputs D[b-1], D[b],
 *   D[b+1] at its cell (monopulse.h; doc/beams.md), else the beam's
 *   direction; the list's records carry beam, azimuth_deg, elevation_deg and
 *   angle_quality (chirp/detect.h version 2), channel = the beam.
 */

struct pc_beams {
	enum pc_beams_mode mode;     /* OFF (default): channels go through the
					chain as they are; the rest is unused */
	unsigned count;              /* B: 1..PC_MAX_BEAMS                   */
	const double *positions_m;   /* 3 C: x, y, z of channel c's element,
					metres, finite, |.| <= 1e4, distinct  */
	const double *cal;           /* 2 C: g_c (re, im), |g_c| > 0, or NULL
					(g_c = 1)                            */
	double carrier_hz;           /* > 0: lambda = 299792458 / carrier_hz */
	enum pc_beams_layout layout;
	double fan_az_deg, fan_el_deg; /* fan: the centre's direction, degrees */
	double fan_spacing_u;        /* fan: du, (0, 2]                      */
	const double *list_deg;      /* list: B (az, el) pairs, degrees, each
					within -90..90                       */
	const double *taper;         /* C coefficients t_c (> 0 sum), or NULL
					(rect); conventional only            */
	unsigned snapshots;          /* mvdr: K >= 1 (>= C without loading)  */
	unsigned first_gate, gate_stride, pulse_stride; /* mvdr: the rule     */
	double loading;              /* mvdr: delta, 0..1000                 */
	int monopulse;               /* 1: an angle per detection (B >= 2)   */
};

struct pc_radar {
	int doppler;                 /* 1: MTI, Doppler FFT and the map after
					compression (required by cfar and the
					map outputs); 0: everything below is
					ignored                              */
	enum pc_mti mti;
	const float *window;         /* w: P' coefficients along pulses, or
					NULL for rect; copied by pc_create   */
	unsigned nfft;               /* Nd: 0 = auto, else >= P'           */
	int cfar;                    /* 1: detect, into pc_job.det         */
	enum pc_cfar method;
	int integrate;               /* 1: CFAR on I (one list, channel
					CHIRP_DET_CHANNEL_ALL); 0: per channel */
	unsigned guard_range, guard_doppler;   /* gr, gd (cells each side) */
	unsigned train_range, train_doppler;   /* tr, td (cells each side) */
	unsigned os_rank;            /* os: k, 1..N, or 0 = auto (3N/4)    */
	double pfa;                  /* false-alarm probability, (0, 1)    */
	unsigned maxima_range, maxima_doppler; /* mr, md                   */
	unsigned max_detections;     /* records per CPI, 1..PC_MAX_DETECTIONS */
	double sample_rate_hz;       /* > 0: range_m = float(n) x float(c /
					(2 fs)), c = 299792458 m/s, gate 0
					at range 0; 0: range_m NaN         */
	double prf_hz;               /* pulse repetition frequency, Hz     */
	double carrier_hz;           /* > 0 with prf_hz > 0: velocity_mps =
					float(m) x float(prf / Nd x c / (2
					carrier)), positive closing; 0 and
					0: velocity_mps NaN                */
	int velocity;                /* 1: velocities required (check fails
					without prf_hz and carrier_hz)       */
};

struct pc_params {
	/* Geometry: channels >= 1, pulses >= 1, samples (R) >= 1. */
	unsigned channels;
	unsigned pulses;
	unsigned samples;

	enum pc_format    in_format;
	enum pc_output    out_mode;
	enum pc_normalize normalize;

	/*
	 * Windowed reference h = w . s, interleaved float32 (re, im),
	 * ref_len (L) complex samples, 1 <= L <= samples. Copied by pc_create;
	 * the caller keeps ownership.
	 */
	const float *ref;
	size_t ref_len;

	/*
	 * Radar modes: nmodes 0 = one mode, id 0, whose reference is ref /
	 * ref_len above. nmodes 1..PC_MAX_MODES = these modes (ref and
	 * ref_len are then unused), each with its own windowed reference
	 * and its own normalisation gain; ids distinct, 0..PC_MAX_MODES-1.
	 * The FFT length is common: nfft >= R + (the longest L) - 1. Every
	 * mode's filter spectrum is made in pc_create and stays resident, so
	 * pc_submit_mode picks one per CPI with no allocation and no plan.
	 * Copied by pc_create; the caller keeps ownership.
	 */
	const struct pc_mode *modes;
	unsigned nmodes;

	size_t nfft;                 /* 0 = auto, else >= R+L-1             */

	enum pc_backend backend;     /* AUTO: CUDA if a usable device, else CPU */
	int cpu_threads;             /* CPU backend: FFTW threads, >= 1      */
	int gpu;                     /* CUDA: device index (>= 0), or -1 to use gpu_bus_id */
	const char *gpu_bus_id;      /* CUDA: PCI bus id "0000:41:00.0", or NULL */
	unsigned streams;            /* CUDA: ping-pong depth, 1..64, or 0 = auto:
					pc_create builds the backend at each of
					PC_AUTO_DEPTHS, measures each
					(pc_calibrate) and keeps the fastest,
					the shallower unless a deeper one is
					PC_AUTO_MARGIN faster (default 2)    */
	enum pc_staging staging;     /* CUDA: register ring memory or copy   */
	unsigned staging_threads;    /* CUDA, copy staging: threads that copy
					each CPI to and from the pinned
					staging buffers, the caller included,
					1..64 (default 1; 0 also means 1) */
	unsigned cpu_depth;          /* CPU: completion-queue depth, 1..64 (default 1;
					0 also means 1).
					> 1 computes in pc_submit as always but
					reports through pc_poll, with up to
					cpu_depth CPIs "in flight": lets the
					depth > 1 paths of callers (the daemon's
					pipeline) run and be tested without a GPU */
	int busy_poll;               /* 1: the caller polls (pc_poll with timeout
					0) while CPIs are in flight and never
					sleeps in pc_poll, so backends skip
					their wake-up machinery (CUDA: no host
					functions per CPI) and a pc_poll with a
					timeout polls instead of sleeping.
					Default 0. */
	unsigned idle_spin_us;       /* CPU backend: how long, in µs, each
					worker thread keeps polling for the next
					CPI after its last block before it
					sleeps on a condition variable
					(0..PC_MAX_IDLE_SPIN_US, default 0). A
					sleeping worker on a VM can take 1-2 ms
					to wake, and the CPI waits for it: a spin
					a little longer than the gap between CPIs
					keeps the workers awake while CPIs flow.
					The caller uses the same budget for its
					own waits (pc_info.idle_spin_us). */
	struct pc_tuning tune;       /* backend tuning; pc_params_init sets
					each field's default             */
	struct pc_radar radar;       /* the radar chain; pc_params_init:
					off, with defaults for the rest      */
	struct pc_beams beams;       /* beams; pc_params_init: off. Copied by
					pc_create (the arrays too)           */
	size_t snapshot_cells;       /* the most float32 cells one map
					snapshot may hold (SNAPSHOTS below),
					0..PC_MAX_SNAPSHOT_CELLS; 0 (the
					default): snapshots refused. The CUDA
					backend keeps this many cells twice
					per set (device and pinned host)     */
};
#define PC_MAX_IDLE_SPIN_US 1000000u   /* 1 s */

/* streams = 0: the depths tried, and how much faster (a fraction) a deeper
 * one must be to be kept over a shallower one (more sets cost device
 * memory and, when the backend saturates, latency). */
#define PC_AUTO_DEPTHS_N 3
#define PC_AUTO_DEPTHS { 2, 3, 4 }
#define PC_AUTO_MARGIN 0.03

/*
 * The choice streams = 0 makes, as a function: of n depths (ascending)
 * and their measured CPI/s (<= 0: not measured), the index of the one to
 * keep: the fastest, unless a shallower one is within PC_AUTO_MARGIN of
 * it. -1 if none was measured.
 */
int pc_auto_pick(const unsigned *depths, const double *cpi_per_s, int n);

/* Fill p with defaults (cf32, complex, noise, auto nfft, 1 thread, 2 streams). */
void pc_params_init(struct pc_params *p);

/*
 * Check p without building anything. Returns 0, or -EINVAL with a precise
 * reason in err ("pulse length L=600 exceeds range samples R=500").
 */
int pc_params_check(const struct pc_params *p, char *err, size_t errlen);

struct pc;

/*
 * Build a pulse compressor. Returns NULL with the reason in err (never
 * half-built). Plans, device buffers and the reference spectrum are made
 * here, once.
 */
struct pc *pc_create(const struct pc_params *p, char *err, size_t errlen);
void pc_destroy(struct pc *pc);

/* What was built: backend actually chosen, device, staging, nfft, depth. */
struct pc_info {
	enum pc_backend backend;
	size_t nfft;
	size_t ref_len;              /* L; with modes, the longest mode's    */
	unsigned depth;              /* CPIs that may be in flight at once   */
	char device[128];            /* "cpu (fftw3f, 4 threads)" / "NVIDIA H200 (0000:41:00.0)" */
	char staging[32];            /* "none" / "registered" / "copy"       */
	unsigned staging_threads;    /* threads copying staged CPIs (caller
					included), 0 while no CPI is staged */
	int numa_node;               /* device's NUMA node, -1 if unknown    */
	int busy_poll;               /* pc_params.busy_poll as created       */
	unsigned idle_spin_us;       /* pc_params.idle_spin_us as created    */
	char depth_choice[96];       /* streams = 0: "auto: 2 1980, 3 2210, 4
					2235 CPI/s" (what was measured); ""
					when the depth was given             */
	unsigned long long graph_cpis; /* CUDA: CPIs launched as one CUDA
					graph so far (0 on the CPU)      */
	unsigned pulses_mti;         /* radar chain: P' (0 when off)      */
	unsigned doppler_nfft;       /* radar chain: Nd (0 when off)      */
	size_t det_bytes;            /* = pc_det_bytes()                  */
	char fft_engine[64];         /* CUDA: "fused (4608 = 9x8x8x8)" or
					"cufft"; CPU: "fftw3f"               */
	unsigned map_count;          /* radar chain: the maps a map output
					or snapshot has, C (B with beams); 0
					when off                          */
	size_t snapshot_cells;       /* pc_params.snapshot_cells as created
					(0 without the radar chain)       */
};
void pc_get_info(const struct pc *pc, struct pc_info *info);

/* Bytes of one input CPI / one output CPI (packed, no padding); a map
 * output is C x Nd x R float32 (B x Nd x R with beams, as the cube is
 * B x P x R), PC_OUT_NONE 0. */
size_t pc_in_bytes(const struct pc *pc);
size_t pc_out_bytes(const struct pc *pc);

/* Bytes of one CPI's detection list, CHIRP_DET_BYTES(max_detections), or
 * 0 when the pc does not detect. */
size_t pc_det_bytes(const struct pc *pc);

/*
 * Tell the backend that [base, base+len) is host memory that CPIs will be
 * read from or written to (a ring's data region). The CUDA backend
 * registers it for in-place DMA (cudaHostRegister); if that fails it falls
 * back to pinned staging copies and says so in pc_info.staging. The CPU
 * backend ignores it. Call before the first pc_submit; unregistered on
 * pc_destroy or pc_unregister_host.
 */
int pc_register_host(struct pc *pc, void *base, size_t len);
void pc_unregister_host(struct pc *pc, void *base);

/*
 * Asynchronous execution, the same for every backend.
 *
 * pc_submit queues one CPI: read pc_in_bytes() from in, write
 * pc_out_bytes() to out. in and out must stay valid until the CPI is
 * reported by pc_poll with PC_DONE_INPUT (in may be reused) and
 * PC_DONE_OUTPUT (out holds the result), respectively. Returns 0, -EAGAIN
 * if depth CPIs are already in flight, or another negative errno on a
 * backend failure (the pc is then failed: every later call returns -EIO).
 *
 * The CPU backend computes in pc_submit and reports both flags at once
 * (in the next pc_poll; with cpu_depth > 1 up to cpu_depth CPIs wait there).
 */
enum {
	PC_DONE_INPUT  = 1u << 0,
	PC_DONE_OUTPUT = 1u << 1,
	PC_DONE_SKIPPED = 1u << 2,   /* with PC_DONE_OUTPUT: the CPI was not
					computed (mvdr: its training cells
					gave no weights, a set of zeros, NaN
					or Inf); its results are
					pc_write_skipped's                   */
};

struct pc_done {
	uint64_t tag;                /* as given to pc_submit                */
	uint32_t mode;               /* as given to pc_submit_mode (0 by
					pc_submit)                           */
	unsigned flags;              /* PC_DONE_*                            */
	uint32_t nonfinite_rows;     /* rows whose input held NaN or Inf     */
	uint64_t device_ns;          /* with PC_DONE_OUTPUT: the backend's own
					time for this CPI from its start on the
					device to its result (CUDA: events on
					the GPU; CPU: compute time), 0 if not
					measured                             */
	uint32_t recomputed;         /* with PC_DONE_OUTPUT: blocks of rows the
					CPU backend computed a second time
					because the worker that had them was
					stalled (0 elsewhere)                */
	uint32_t woken;              /* with PC_DONE_OUTPUT: CPU backend worker
					threads that were asleep when the CPI was
					handed out and had to be woken (the rest
					were polling: pc_params.idle_spin_us);
					0 elsewhere                          */
	uint32_t absent;             /* with PC_DONE_OUTPUT: CPU backend threads
					(of cpu_threads, the caller included)
					that computed none of the CPI's blocks:
					asleep, descheduled or late to the
					hand-off while the others took them all
					(always some when the CPI has fewer
					blocks than threads); 0 elsewhere    */
	uint32_t chunks;             /* with PC_DONE_OUTPUT: row chunks the CUDA
					backend cut this CPI into (more than one
					overlaps its copies with its compute:
					doc/cuda.md, *Chunks*); 0 elsewhere  */
};

int pc_submit(struct pc *pc, const void *in, void *out, uint64_t tag);

/*
 * The general submit. out may be NULL when pc_out_bytes is 0; det
 * (pc_det_bytes() bytes) must be non-NULL when the pc detects, and is
 * written like out (valid with PC_DONE_OUTPUT): a chirp_det_header with
 * mode, flags, count, found, maps, doppler_bins, range_gates, cells and
 * crossings filled, seq / timestamp_ns / first_sample 0 (the caller's),
 * then the records. Registered memory (pc_register_host) is written in
 * place, as out is. in and out are 4-byte aligned, det 8-byte aligned
 * (-EINVAL otherwise, the pc not failed); a pc that does not detect
 * ignores det. pc_submit_mode(pc, in, out, tag, mode) is pc_submit_job
 * with det NULL (so -EINVAL on a pc that detects).
 */
struct pc_job {
	const void *in;
	void *out;
	void *det;
	uint64_t tag;
	unsigned mode;
	/* With beams: the CPI's pointing, degrees (BEAMS above; 0, 0 is the
	 * configured set). A pointing that is not finite, beyond +-90 or puts
	 * a beam outside the visible region: -EDOM, nothing queued, the pc
	 * not failed (the caller writes pc_write_skipped and flags the CPI).
	 * Ignored without beams. */
	double pointing_az_deg, pointing_el_deg;
	/* A snapshot of the CPI's maps (SNAPSHOTS below), or NULL: none. */
	const struct pc_snap *snap;
};
int pc_submit_job(struct pc *pc, const struct pc_job *job);

/*
 * SNAPSHOTS: a CPI's range-Doppler maps reduced to a screen's size on the
 * backend (the live view, doc/live.md), in every output mode, PC_OUT_NONE
 * included. Map m is the map a map_power output holds at m (C maps, B with
 * beams: pc_info.map_count, Nd x R each); its snapshot is
 *
 *     cell[i][j] = max over Doppler bins i dd .. i dd + dd - 1 and range
 *                  gates j dr .. j dr + dr - 1 (clipped to the map) of map m,
 *
 * rows = ceil(Nd / dd), cols = ceil(R / dr); NaN cells are ignored and a
 * block of NaN only reads -INFINITY (max-hold exactly as chirpd's host
 * reduction: a selection, no arithmetic, so every backend gives the map's
 * own values). map_mask selects maps: bit m (m < 63) map m, bit 63 every
 * map from 63 on; maps past map_count are ignored. cells gets the selected
 * maps' snapshots back to back in ascending map order (rows x cols each),
 * nothing else, and is written like det (valid with PC_DONE_OUTPUT). A CPI
 * the pc skips (PC_DONE_SKIPPED) has every cell -INFINITY. The request is
 * read at submit: its struct may be reused at once. pc_submit_job says
 * -EINVAL (nothing queued, the pc not failed) for a request on a pc
 * without the radar chain or with snapshot_cells 0, dd or dr 0, cells
 * NULL or not 4-byte aligned, or more cells than cells_len or
 * snapshot_cells; a request that selects no map is ignored. A CPI without
 * a request costs nothing: no kernel, no copy.
 */
#define PC_MAX_SNAPSHOT_CELLS (1u << 24)
struct pc_snap {
	float *cells;                /* host memory, cells_len float32      */
	size_t cells_len;
	uint64_t map_mask;           /* maps selected (above)                */
	uint32_t dd, dr;             /* block: Doppler bins x range gates    */
};

/*
 * With beams: whether pointing (az_deg, el_deg) is one a CPI may take
 * (finite, within +-90 degrees, every beam visible): 0, or -EDOM with the
 * reason ("pointing az 10, el 0: beam 2 at u 1.03967, v 0: outside the
 * visible region ..."). Without beams every pointing is 0. No allocation.
 */
int pc_check_pointing(struct pc *pc, double az_deg, double el_deg, char *err, size_t errlen);

/* What the beams are, for status lines: B (0 without beams), and beam
 * b's direction at the pointing of the last CPI submitted (degrees). */
unsigned pc_beam_count(const struct pc *pc);
void pc_beam_azel(const struct pc *pc, unsigned b, double *az_deg, double *el_deg);

/*
 * pc_submit with the CPI's mode: the CPI is compressed with that mode's
 * filter. -ENOENT if no mode has that id (nothing is queued and the pc is
 * not failed: the caller decides what the CPI becomes). pc_submit is
 * pc_submit_mode with mode 0.
 */
int pc_submit_mode(struct pc *pc, const void *in, void *out, uint64_t tag, unsigned mode);

/* 1 if the pc has a mode with this id, else 0. */
int pc_has_mode(const struct pc *pc, unsigned mode);

/*
 * The results of a CPI that is not computed because the pc has no such
 * mode (pc_submit_job said -ENOENT), written in place of the backend's:
 *   out (NULL: none): pc_out_bytes(pc) bytes, every float32 of it a quiet
 *     NaN, in every output mode (complex: both parts; magnitude, power_db,
 *     map_power, map_db: every value). No computed output holds a NaN
 *     unless its input did (pc_done.nonfinite_rows), and then only in
 *     those rows; a 0 would read as a plausible result (0 dB is the noise
 *     level under normalize = noise), a NaN compares false with every
 *     threshold and poisons every sum it enters;
 *   det (NULL, or a pc that does not detect: none): a list of no records,
 *     flags CHIRP_DET_SKIPPED, the mode, doppler_bins and range_gates of
 *     the pc, maps and cells 0 (nothing was tested).
 * The caller flags the output block (the daemon: CHIRP_RING_UNKNOWN_MODE).
 */
void pc_write_skipped(const struct pc *pc, void *out, void *det, unsigned mode);

/*
 * Report progress of CPIs in submission order. Writes at most max entries
 * to done; an entry appears once with PC_DONE_INPUT and again (or in the
 * same entry) with PC_DONE_OUTPUT. timeout_ms: 0 = do not wait, > 0 = wait
 * up to that long for at least one event, < 0 = wait until one arrives
 * (or nothing is in flight). Returns the number of entries, or a negative
 * errno on backend failure.
 */
int pc_poll(struct pc *pc, struct pc_done *done, int max, int timeout_ms);

/* Number of CPIs submitted and not yet reported with PC_DONE_OUTPUT. */
unsigned pc_in_flight(const struct pc *pc);

/*
 * How many CPIs wait behind the next one the caller submits (the daemon:
 * its input ring's backlog), until the next call; 0 until called. A backend
 * may trade one CPI's latency against the pipeline's throughput by it: the
 * CUDA backend cuts a CPI into chunks (lower latency, more API calls) only
 * when nothing waits and the GPU is not behind (doc/cuda.md, *Layouts*);
 * with a backlog it keeps the depth's layout, made for throughput. Only a
 * hint: results never depend on it. pc_calibrate counts as saturated.
 */
void pc_queue_hint(struct pc *pc, unsigned waiting);

/*
 * Synchronous convenience: submit and wait for this CPI's output.
 * Returns 0 or a negative errno; *nonfinite_rows (may be NULL) is set.
 * The CPI is of mode 0, as with pc_submit (-ENOENT without one).
 */
int pc_execute(struct pc *pc, const void *in, void *out, uint32_t *nonfinite_rows);

/*
 * pc_execute of a whole job (its mode, its detection list, its tag): the
 * synchronous form of pc_submit_job. pc_execute is this with mode 0 and,
 * on a pc that detects, a list of the pc's own that is thrown away.
 */
int pc_execute_job(struct pc *pc, const struct pc_job *job, uint32_t *nonfinite_rows);

/*
 * Measure this pc's capacity: CPIs per second it sustains with its full
 * depth in flight, on random data (never zeros) in page-aligned scratch
 * buffers registered like a ring (pc_register_host), after a warm-up of
 * depth CPIs that also takes first-use costs (module load, plan
 * initialisation, page faults) out of the first live CPIs. Runs at least
 * 8 x depth CPIs and ~30 ms, at most ~300 ms (at least 2 CPIs). Nothing
 * may be in flight. Returns 0 with *cpi_per_s, or a negative errno with a
 * reason in err (scratch memory, or the backend failed).
 */
int pc_calibrate(struct pc *pc, double *cpi_per_s, char *err, size_t errlen);

/*
 * pc_calibrate's warm-up alone (depth + 2 CPIs, untimed in effect): the
 * first-use costs out of the first live CPIs when the capacity is known
 * already (chirpd's capacity cache). Nothing may be in flight. 0, or a
 * negative errno with a reason in err.
 */
int pc_warm_up(struct pc *pc, char *err, size_t errlen);

/*
 * Pin the threads the backend runs of its own (CPU: the cpu_threads - 1
 * FFTW workers; CUDA: the staging copiers, also those made later) to cpus,
 * as the daemon pins its data thread: threads made at create inherit the
 * creator's affinity, which is not the data path's. Returns how many
 * threads were pinned now (0 when the backend has none), or a negative
 * errno from pthread_setaffinity_np.
 */
int pc_bind_threads(struct pc *pc, const cpu_set_t *cpus);

/* Last backend error text ("cufftExecC2C: CUFFT_EXEC_FAILED"), or "". */
const char *pc_last_error(const struct pc *pc);

/*
 * Test hook: make the next CPI submitted fail as a device error would, so
 * fault handling can be tested without a broken GPU: the CUDA backend
 * launches an invalid kernel with it, the CPU backend's pc_submit returns
 * -EIO. Compiled in on both; the CPU backend built with
 * -DCHIRP_NO_FAULT_INJECT returns -ENOTSUP here. Returns 0 if armed.
 */
int pc_inject_fault(struct pc *pc);

/*
 * What a pc built from p would run on, as one line that changes when the
 * device, its driver or the FFT library does ("cuda NVIDIA H100 ...
 * driver 13000 runtime 13000 cufft 12000", "cpu AMD EPYC ..., fftw-3.3.10,
 * 4 threads"), without building it: a key for figures measured on it.
 * 0, or -ENODEV with the reason in buf.
 */
int pc_device_identity(const struct pc_params *p, char *buf, size_t len);

/* Whether a usable CUDA device exists (and the build has CUDA). */
int pc_cuda_available(void);

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_PC_H */
