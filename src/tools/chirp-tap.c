/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirp-tap — a consumer of a chirp ring (normally chirpd's output ring):
 * writes CPIs raw and/or as a SigMF recording, reports every gap, and can
 * verify each CPI against a CPU recomputation from synthetic input.
 * Usage and behaviour: chirp-tap --help and doc/tools.md.
 *
 * Gap accounting: block sequence numbers count dropped blocks too, so a
 * jump from seq a to seq b > a+1 means b-a-1 CPIs were lost before b; it
 * is reported once ("gap: N CPIs missing before seq b"). A block flagged
 * DISCONTINUITY with no jump in seq means data was lost upstream of this
 * ring (chirpd's input) and is reported too.
 *
 * Radar modes: each block carries its CPI's mode. --verify checks a CPI
 * against its own mode: the synthetic input of that mode, compressed by a
 * CPU pulse compressor made for that mode alone (one per configured mode,
 * at start), so the check does not rely on the multi-mode dispatch it
 * checks. A block chirpd flagged UNKNOWN_MODE is counted and reported; it
 * passes --verify when its mode is indeed not in -c and its payload is
 * all NaN, as chirpd promises.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chirp/pc.h"
#include "chirp/ring.h"
#include "config.h"
#include "detlist.h"
#include "log.h"
#include "sigmf.h"
#include "synth.h"
#include "timeutil.h"
#include "tool.h"
#include "waveform.h"

/* --verify-targets: the targets checked per CPI, at most. */
#define DET_MAX_TARGETS 64

/* Distinct pointings counted for the summary; further ones go in "others". */
#define TAP_MAX_POINTINGS 16

/* Tolerance of --verify: relative L2 error per CPI (see doc/tools.md). */
#define VERIFY_REL_L2 1e-4

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_TIMEOUT = 3, EXIT_VERIFY = 4, EXIT_GAP = 5 };

struct tap {
	/* options */
	const char *ring_name, *config_path, *out_path, *sigmf_base, *mode;
	struct tool_synth_opts syn;      /* --target --prf --snr-db ... --seed */
	double wait_s, timeout_s;
	uint64_t count, stall_after, delay_ms;
	uint64_t spin_us;                /* --spin-us: chirp_ring_set_spin, µs */
	int have_stall;
	int create, keep, drain, verify, verify_input, fail_on_gap, quiet;
	int print_blocks;                /* --blocks                            */
	struct tool_geom_opts geom;     /* --geometry --format --slots --sample-rate */

	struct chirp_ring_opts ropts;    /* --allow-foreign-owner */

	/* det rings: --list, --jsonl, --verify-targets */
	int list_text, list_jsonl;
	const char *det_targets_spec;
	struct detlist_target det_targets[DET_MAX_TARGETS];
	size_t ndet_targets;
	unsigned tol_gates, tol_bins;    /* --verify-tolerance              */
	double verify_min;               /* --verify-min, fraction of CPIs  */
	int expect_angle, expect_el;     /* --expect-angle AZ[,EL] given    */
	double expect_az_deg, expect_el_deg;
	double angle_tol_deg;            /* --angle-tolerance               */

	/* state */
	int created;
	struct chirp_config cfg;
	int have_cfg;
	struct chirp_ring *ring;
	struct chirp_ring_geometry geo;
	uint64_t cpi_bytes;
	int out_fd, data_fd;
	char meta_path[4096], data_path[4096];
	struct sigmf_meta meta;

	/* verify */
	struct synth_target targets[SYNTH_MAX_TARGETS];
	size_t ntargets;
	struct synth *synth;
	struct pc *pcs[CFG_MAX_MODES];   /* per mode, indexed like cfg.modes */
	struct pc *pc;                   /* pcs[0]: sizes and geometry checks */
	void *vin, *vout;
	void *vdet;                      /* the reference's detection list
					    (pc_det_bytes), NULL when it
					    does not detect */
	float *vcmp;                     /* a dB output converted, out bytes */
	size_t vin_bytes;

	/* counters */
	uint64_t received, gaps, missing, discontinuities, nonfinite, redelivered;
	uint64_t verified, mismatches;
	uint64_t unknown_mode;           /* blocks flagged UNKNOWN_MODE        */
	uint64_t bad_pointing;           /* blocks flagged BAD_POINTING        */
	float pointing[TAP_MAX_POINTINGS][2];   /* distinct pointings seen     */
	uint64_t per_pointing[TAP_MAX_POINTINGS + 1];   /* CPIs of each, others */
	unsigned npointing;
	uint64_t per_mode[CFG_MAX_MODES + 1];  /* CPIs of modes 0..63, then others */
	uint64_t last_seq;
	int have_last;
	uint64_t det_lists, det_records, det_overflows, det_bad;   /* det rings */
	uint64_t det_all_hit;            /* lists holding every target      */
	uint64_t det_hit[DET_MAX_TARGETS];   /* lists holding target i      */
	uint64_t angle_hit;              /* --expect-angle: lists whose every
					    target is at the angle         */
	uint64_t angle_n;                /* target detections measured       */
	double angle_sq;                 /* their squared azimuth errors     */
};

static volatile sig_atomic_t stop_sig;

static void usage(FILE *f)
{
	fprintf(f,
"usage: chirp-tap [OPTIONS]\n"
"Consume CPIs from a chirp ring (normally chirpd's output ring).\n"
"\n"
"  -r, --ring NAME        ring (default: [output] ring of -c ([input] ring with\n"
"                         --verify-input, [detections] ring with --list, --jsonl\n"
"                         or --verify-targets), else /chirpd-out)\n"
"  -c, --config FILE      chirpd configuration (ring name, output mode; --verify)\n"
"  -n, --count N          stop after N CPIs (default: until SIGINT/SIGTERM)\n"
"      --out PATH         write CPIs as raw data in the ring's format and layout\n"
"                         (- = standard output)\n"
"      --sigmf BASE       write BASE.sigmf-data + BASE.sigmf-meta\n"
"      --drain            consume and discard as fast as possible\n"
"      --timeout SEC      give up (exit 3) if N CPIs have not arrived in SEC\n"
"      --wait SEC         wait up to SEC for the ring to appear (default 10)\n"
"      --allow-foreign-owner  use a ring owned by another user (e.g. chirpd's,\n"
"                         shared through its control_group); default: refuse\n"
"      --mode M           label for --sigmf: input, complex, magnitude, power_db,\n"
"                         map_power, map_db\n"
"                         (default: the output mode of -c)\n"
"      --fail-on-gap      exit 5 if any CPI was missing\n"
"      --blocks           print one line per block on stdout: \"block seq=..\n"
"                         mode=.. pointing=AZ,EL first_sample=.. flags=..\"\n"
"      --spin-us N        poll up to N us after each CPI before sleeping on the\n"
"                         ring (chirp_ring_set_spin; default 0): no wake-up delay\n"
"                         while CPIs come closer than N us apart, one busy core\n"
"\n"
"Verification (exit 4 on any mismatch):\n"
"      --verify           recompute each output CPI on the CPU from the synthetic\n"
"                         input (needs -c and the feed's --target, noise and --seed)\n"
"                         with each CPI's own radar mode's waveform of -c; a block\n"
"                         flagged UNKNOWN_MODE is counted, and passes if -c does\n"
"                         not declare its mode and its payload is all NaN\n"
"      --verify-input     check each CPI equals the synthetic input of its mode\n"
"  the feed's synthesis options, the same as chirp-feed's:\n"
TOOL_SYNTH_USAGE
"\n"
"Detection rings (format det: chirpd's [detections] ring):\n"
"      --list             print each CPI's list on stdout: a line \"cpi seq=..\n"
"                         mode=.. pointing=AZ,EL count=.. found=.. overflow=..\"\n"
"                         then one line per detection \"det channel=..\n"
"                         range_gate=.. doppler_bin=.. range_m=.. velocity_mps=..\n"
"                         power=.. noise=.. snr_db=..\" (with beams: beam=..\n"
"                         azimuth_deg=.. elevation_deg=.. angle_quality=..)\n"
"      --jsonl            print each CPI's list as one JSON object per line instead\n"
"      --verify-targets LIST  GATE:BIN[,GATE:BIN...]: count the CPIs whose list\n"
"                         holds a detection at each target's range gate and signed\n"
"                         Doppler bin in every map (each channel, or the integrated\n"
"                         one); exit 4 if the fraction is under --verify-min\n"
"      --verify-tolerance G,B  gates and bins a detection may be off (default 0,0)\n"
"      --verify-min F     fraction of CPIs, 0..1 (default 0.99)\n"
"      --expect-angle AZ[,EL]  with --verify-targets: count a CPI only when each\n"
"                         target's strongest detection has azimuth_deg (and\n"
"                         elevation_deg) within --angle-tolerance of AZ (EL),\n"
"                         degrees from boresight (a list of beams); prints the\n"
"                         RMS azimuth error\n"
"      --angle-tolerance DEG  default 1\n"
"A list that fails its checks (magic, version, record size, count within the\n"
"slot) is reported and counted, and makes the exit status 1.\n"
"\n"
"Without chirpd (tests):\n"
"      --create           create the ring as consumer; removed at exit unless --keep\n"
"      --geometry C,P,R  --format cf32|sc16|rf32|det  --slots N  --sample-rate HZ\n"
"      --keep\n"
"\n"
"Fault models:\n"
"      --delay-ms D       hold each CPI D ms before releasing it (slow consumer)\n"
"      --stall-after N    stop consuming after N CPIs, stay attached until a signal\n"
"\n"
"  -q, --quiet            no progress line (shown only on a terminal anyway)\n"
"  -h, --help\n"
"\n"
"stderr: one line per gap (\"gap: 3 CPIs missing before seq 1234\") or flagged\n"
"  block (naming the block's radar mode), and a summary\n"
"  chirp-tap: received N, gaps G (M CPIs missing), R CPI/s, B MB/s over T s\n"
"  with, when a CPI had a mode other than 0, the CPIs per mode:\n"
"  chirp-tap: CPIs per mode: 0: N0, 1: N1, ...\n"
"Exit status: 0 done (N CPIs written), 1 error, 2 usage, 3 timeout,\n"
"  4 verification mismatch, 5 gap (with --fail-on-gap).\n");
}

enum {
	O_OUT = 256, O_SIGMF, O_DRAIN, O_TIMEOUT, O_WAIT, O_FOREIGN, O_MODE, O_FAILGAP, O_VERIFY,
	O_VERIFY_IN, O_CREATE, O_GEOMETRY, O_FORMAT,
	O_SLOTS, O_SRATE, O_KEEP, O_DELAY, O_STALL, O_SPIN, O_LIST, O_JSONL, O_VTARGETS,
	O_VTOL, O_VMIN, O_BLOCKS, O_EXPANGLE, O_ANGLETOL,
};

static const struct option long_opts[] = {
	{ "ring", required_argument, NULL, 'r' },
	{ "config", required_argument, NULL, 'c' },
	{ "count", required_argument, NULL, 'n' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "out", required_argument, NULL, O_OUT },
	{ "sigmf", required_argument, NULL, O_SIGMF },
	{ "drain", no_argument, NULL, O_DRAIN },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "wait", required_argument, NULL, O_WAIT },
	{ "allow-foreign-owner", no_argument, NULL, O_FOREIGN },
	{ "mode", required_argument, NULL, O_MODE },
	{ "fail-on-gap", no_argument, NULL, O_FAILGAP },
	{ "verify", no_argument, NULL, O_VERIFY },
	{ "verify-input", no_argument, NULL, O_VERIFY_IN },
	TOOL_SYNTH_LONG_OPTS,
	{ "create", no_argument, NULL, O_CREATE },
	{ "geometry", required_argument, NULL, O_GEOMETRY },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "slots", required_argument, NULL, O_SLOTS },
	{ "sample-rate", required_argument, NULL, O_SRATE },
	{ "keep", no_argument, NULL, O_KEEP },
	{ "delay-ms", required_argument, NULL, O_DELAY },
	{ "stall-after", required_argument, NULL, O_STALL },
	{ "spin-us", required_argument, NULL, O_SPIN },
	{ "list", no_argument, NULL, O_LIST },
	{ "jsonl", no_argument, NULL, O_JSONL },
	{ "verify-targets", required_argument, NULL, O_VTARGETS },
	{ "verify-tolerance", required_argument, NULL, O_VTOL },
	{ "verify-min", required_argument, NULL, O_VMIN },
	{ "blocks", no_argument, NULL, O_BLOCKS },
	{ "expect-angle", required_argument, NULL, O_EXPANGLE },
	{ "angle-tolerance", required_argument, NULL, O_ANGLETOL },
	{ NULL, 0, NULL, 0 },
};

/* The detection-ring options. 0, or < 0 after reporting the bad argument. */
static int tap_det_opt(struct tap *t, int c)
{
	char err[256];
	unsigned long g, b;
	char *e;

	switch (c) {
	case O_LIST: t->list_text = 1; break;
	case O_JSONL: t->list_jsonl = 1; break;
	case O_VTARGETS:
		t->det_targets_spec = optarg;
		if (detlist_parse_targets(optarg, t->det_targets, DET_MAX_TARGETS, &t->ndet_targets,
					  err, sizeof(err)) < 0)
			return tool_bad_arg("--verify-targets", optarg, err);
		break;
	case O_VTOL:
		errno = 0;
		g = strtoul(optarg, &e, 10);
		b = *e == ',' && e[1] >= '0' && e[1] <= '9' ? strtoul(e + 1, &e, 10) : ULONG_MAX;
		if (errno || *e || *optarg < '0' || *optarg > '9' || g > 1000000 || b > 1000000)
			return tool_bad_arg("--verify-tolerance", optarg,
					    "want GATES,BINS, each 0..1000000");
		t->tol_gates = (unsigned)g;
		t->tol_bins = (unsigned)b;
		break;
	case O_VMIN:
		if (tool_parse_double(optarg, &t->verify_min) < 0 || t->verify_min < 0 ||
		    t->verify_min > 1)
			return tool_bad_arg("--verify-min", optarg, "want a fraction 0..1");
		break;
	case O_EXPANGLE: {
		double v[2];
		int n = tool_parse_doubles(optarg, v, 2);

		if (n < 1 || fabs(v[0]) > 90 || (n == 2 && fabs(v[1]) > 90))
			return tool_bad_arg("--expect-angle", optarg,
					    "want AZ_DEG[,EL_DEG], each -90..90");
		t->expect_angle = 1;
		t->expect_az_deg = v[0];
		t->expect_el = n == 2;
		t->expect_el_deg = n == 2 ? v[1] : 0;
		break;
	}
	case O_ANGLETOL:
		if (tool_parse_double(optarg, &t->angle_tol_deg) < 0 || !(t->angle_tol_deg > 0) ||
		    t->angle_tol_deg > 180)
			return tool_bad_arg("--angle-tolerance", optarg, "want degrees > 0");
		break;
	default: {
		int rc = tool_synth_opt(&t->syn, c, optarg);

		if (rc == 0)
			usage(stderr);
		return rc > 0 ? 0 : -EINVAL;
	}
	}
	return 0;
}

/* The options for testing without chirpd: verification, ring creation and
 * fault models. 0, or < 0 after reporting the bad argument. */
static int tap_test_opt(struct tap *t, int c, int li)
{
	switch (c) {
	case O_VERIFY: t->verify = 1; break;
	case O_VERIFY_IN: t->verify_input = 1; break;
	case O_CREATE: t->create = 1; break;
	case O_GEOMETRY: case O_FORMAT: case O_SLOTS: case O_SRATE:
		/* long-only options: li names the one matched */
		if (tool_geom_opt(&t->geom, long_opts[li].name, optarg,
				  "want cf32, sc16, rf32 or det") < 0)
			return -EINVAL;
		break;
	case O_KEEP: t->keep = 1; break;
	case O_DELAY:
		if (tool_parse_u64(optarg, &t->delay_ms) < 0 || t->delay_ms > 3600000)
			return tool_bad_arg("--delay-ms", optarg, "want milliseconds");
		break;
	case O_STALL:
		if (tool_parse_u64(optarg, &t->stall_after) < 0)
			return tool_bad_arg("--stall-after", optarg, "want a count");
		t->have_stall = 1;
		break;
	default:
		return tap_det_opt(t, c);
	}
	return 0;
}

/* One option: the capture options here, the rest in tap_test_opt. */
static int tap_opt(struct tap *t, int c, int li)
{
	switch (c) {
	case 'r': t->ring_name = optarg; break;
	case 'c': t->config_path = optarg; break;
	case 'n':
		if (tool_parse_u64(optarg, &t->count) < 0 || t->count == 0)
			return tool_bad_arg("--count", optarg, "want a count >= 1");
		break;
	case 'q': t->quiet = 1; break;
	case 'h': usage(stdout); exit(0);
	case O_OUT: t->out_path = optarg; break;
	case O_SIGMF: t->sigmf_base = optarg; break;
	case O_DRAIN: t->drain = 1; break;
	case O_TIMEOUT:
		if (tool_parse_double(optarg, &t->timeout_s) < 0 || t->timeout_s <= 0)
			return tool_bad_arg("--timeout", optarg, "want seconds > 0");
		break;
	case O_FOREIGN: t->ropts.allow_foreign_owner = 1; break;
	case O_WAIT:
		if (tool_parse_double(optarg, &t->wait_s) < 0 || t->wait_s < 0)
			return tool_bad_arg("--wait", optarg, "want seconds >= 0");
		break;
	case O_MODE:
		if (strcmp(optarg, "input") && strcmp(optarg, "complex") &&
		    strcmp(optarg, "magnitude") && strcmp(optarg, "power_db") &&
		    strcmp(optarg, "map_power") && strcmp(optarg, "map_db"))
			return tool_bad_arg("--mode", optarg, "want input, complex, magnitude, power_db, "
					    "map_power or map_db");
		t->mode = optarg;
		break;
	case O_FAILGAP: t->fail_on_gap = 1; break;
	case O_BLOCKS: t->print_blocks = 1; break;
	case O_SPIN:
		if (tool_parse_u64(optarg, &t->spin_us) < 0 ||
		    t->spin_us * 1000 > (uint64_t)CHIRP_RING_MAX_SPIN_NS)
			return tool_bad_arg("--spin-us", optarg, "want microseconds 0..1000000");
		break;
	default:
		return tap_test_opt(t, c, li);
	}
	return 0;
}

/* --list, --jsonl or --verify-targets: the ring read holds detection lists. */
static int det_opts(const struct tap *t)
{
	return t->list_text || t->list_jsonl || t->det_targets_spec;
}

/* The options that exclude or need one another. */
static int tap_args_check(struct tap *t)
{
	if (t->drain && (t->out_path || t->sigmf_base)) {
		log_err("--drain discards data: not with --out or --sigmf");
		return -EINVAL;
	}
	int det = det_opts(t);

	if (!t->drain && !t->out_path && !t->sigmf_base && !t->verify && !t->verify_input && !det &&
	    !t->print_blocks) {
		log_err("nothing to do: give --out, --sigmf, --drain, --verify, --list, --jsonl, "
			"--verify-targets or --blocks");
		return -EINVAL;
	}
	if (t->print_blocks && ((t->out_path && !strcmp(t->out_path, "-")) || t->list_jsonl)) {
		log_err("--blocks prints on stdout: not with --out - or --jsonl");
		return -EINVAL;
	}
	if (t->expect_angle && !t->det_targets_spec) {
		log_err("--expect-angle checks the detections of --verify-targets: give both");
		return -EINVAL;
	}
	if (t->list_text && t->list_jsonl) {
		log_err("--list and --jsonl are alternatives");
		return -EINVAL;
	}
	if ((t->list_text || t->list_jsonl) && t->out_path && !strcmp(t->out_path, "-")) {
		log_err("--list/--jsonl print on stdout: not with --out -");
		return -EINVAL;
	}
	if (det && (t->verify || t->verify_input || t->sigmf_base)) {
		log_err("--list, --jsonl and --verify-targets read a det ring: not with --verify, "
			"--verify-input or --sigmf");
		return -EINVAL;
	}
	if (t->verify && t->verify_input) {
		log_err("--verify (output ring) and --verify-input (input ring) are alternatives");
		return -EINVAL;
	}
	if ((t->verify || t->verify_input) && (!t->config_path || !tool_synth_given(&t->syn))) {
		log_err("--verify needs -c chirpd.conf and the feed's --target options (and its "
			"noise options and --seed)");
		return -EINVAL;
	}
	if (tool_synth_given(&t->syn) && !t->verify && !t->verify_input) {
		log_err("--target describes the feed for --verify and --verify-input");
		return -EINVAL;
	}
	if (tool_synth_check(&t->syn) < 0)
		return -EINVAL;
	if (!t->create && tool_geom_given(&t->geom)) {
		log_err("--geometry, --format, --slots and --sample-rate only apply with --create");
		return -EINVAL;
	}
	return 0;
}

static int parse_args(struct tap *t, int argc, char **argv)
{
	int c, li = 0;

	t->wait_s = 10;
	tool_synth_opts_init(&t->syn);
	t->verify_min = 0.99;
	t->angle_tol_deg = 1.0;
	while ((c = getopt_long(argc, argv, "r:c:n:qh", long_opts, &li)) != -1) {
		if (tap_opt(t, c, li) < 0)
			return -EINVAL;
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return tap_args_check(t);
}

static const char *ring_default(const struct tap *t)
{
	if (t->ring_name)
		return t->ring_name;
	if (t->have_cfg && det_opts(t) && t->cfg.det_ring[0])
		return t->cfg.det_ring;     /* chirpd's [detections] ring */
	if (t->have_cfg && t->verify_input && t->cfg.input_ring[0])
		return t->cfg.input_ring;   /* --verify-input reads chirpd's input */
	if (t->have_cfg && t->cfg.output_ring[0])
		return t->cfg.output_ring;
	return "/chirpd-out";
}

/*
 * [doppler] window over the P' pulses after MTI, as chirpd makes it for
 * pc_params.radar.window (*w NULL without Doppler processing; the caller
 * frees it after pc_create copied it).
 */
static int verify_doppler_window(const struct tap *t, float **w)
{
	unsigned n = plan_doppler_pulses(&t->cfg);
	double *dw;
	int rc = 0;

	*w = NULL;
	if (!n)
		return 0;
	dw = malloc((size_t)n * sizeof(*dw));
	*w = malloc((size_t)n * sizeof(**w));
	if (!dw || !*w) {
		log_err("out of memory");
		rc = -ENOMEM;
	} else if (wf_window_fill(t->cfg.doppler_window, t->cfg.doppler_taylor_nbar,
				  t->cfg.doppler_taylor_sll_db, dw, n) < 0) {
		log_err("%s: [doppler] window %s over %u pulses cannot be made", t->config_path,
			wf_window_name(t->cfg.doppler_window), n);
		rc = -EINVAL;
	} else {
		for (unsigned k = 0; k < n; k++)
			(*w)[k] = (float)dw[k];
	}
	free(dw);
	if (rc < 0) {
		free(*w);
		*w = NULL;
	}
	return rc;
}

/* The CPU pulse compressor of configured mode i alone: its windowed
 * reference, as chirpd builds it, in a one-mode pc; with the radar chain
 * of -c ([doppler], [cfar]) and its Doppler window, as chirpd's. */
static int setup_verify_pc(struct tap *t, unsigned i)
{
	const struct cfg_mode *m = &t->cfg.modes[i];
	struct pc_params pp;
	struct plan_beams pb;
	struct config_fault f;
	float *ref = NULL, *window = NULL;
	size_t len = 0;
	char err[512];

	if (wf_build(config_mode_wf(&t->cfg, i), t->cfg.samples, &ref, &len, err, sizeof(err)) < 0) {
		log_err("%s: mode %s (%u): waveform: %s", t->config_path, m->name, m->id, err);
		return -EINVAL;
	}
	if (verify_doppler_window(t, &window) < 0) {
		free(ref);
		return -EINVAL;
	}
	/* the beams as chirpd forms them: the array and calibration files
	 * read again, the same plan */
	memset(&pb, 0, sizeof(pb));
	if (plan_beams_make(&t->cfg, &pb, &f) < 0) {
		log_err("verify: %s: [%s]: %s", t->config_path, f.keys[0] ? f.keys[0] : "beams",
			f.why);
		free(ref);
		free(window);
		return -EINVAL;
	}
	plan_pc_params(&t->cfg, &pp);
	plan_beams_apply(&pb, &pp);
	pp.ref = ref;
	pp.ref_len = len;
	pp.modes = NULL;         /* this mode only: see the top of the file */
	pp.nmodes = 0;
	pp.backend = PC_BACKEND_CPU;
	pp.cpu_threads = 1;
	pp.radar.window = window;
	t->pcs[i] = pc_create(&pp, err, sizeof(err));
	plan_beams_free(&pb);
	free(ref);
	free(window);
	if (!t->pcs[i]) {
		log_err("verify: mode %s (%u): pc_create: %s", m->name, m->id, err);
		return -EINVAL;
	}
	return 0;
}

static int setup_verify(struct tap *t)
{
	double noise;

	if (tool_synth_targets(&t->syn, &t->cfg, t->config_path, t->targets, &t->ntargets,
			       &noise) < 0)
		return -EINVAL;
	t->synth = tool_synth_create(&t->syn, &t->cfg, t->targets, t->ntargets, noise);
	if (!t->synth)
		return -EINVAL;
	t->vin_bytes = synth_cpi_bytes(t->synth);
	t->vin = malloc(t->vin_bytes);
	if (!t->vin) {
		log_err("out of memory");
		return -ENOMEM;
	}
	if (t->verify_input)
		return 0;
	/* The references chirpd uses: each mode's configured (windowed) waveform. */
	for (unsigned i = 0; i < t->cfg.nmodes; i++)
		if (setup_verify_pc(t, i) < 0)
			return -EINVAL;
	t->pc = t->pcs[0];
	if (pc_out_bytes(t->pc) == 0) {
		log_err("--verify: %s has [output] mode none: chirpd writes no output to verify "
			"(its detections: --verify-targets on the [detections] ring)", t->config_path);
		return -EINVAL;
	}
	t->vout = malloc(pc_out_bytes(t->pc));
	t->vcmp = malloc(pc_out_bytes(t->pc));
	if (pc_det_bytes(t->pc) && !(t->vdet = malloc(pc_det_bytes(t->pc)))) {
		log_err("out of memory");
		return -ENOMEM;
	}
	if (!t->vout || !t->vcmp) {
		log_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int create_geometry(struct tap *t, struct chirp_ring_geometry *g)
{
	memset(g, 0, sizeof(*g));
	/* chirpd's output ring for this configuration (its input ring with
	 * --verify-input) */
	if (t->have_cfg)
		plan_ring_geometry(&t->cfg, det_opts(t) ? PLAN_RING_DET :
				     t->verify_input ? PLAN_RING_IN : PLAN_RING_OUT, g);
	if (!g->slots)   /* slots = auto: chirpd sizes it; 16 here */
		g->slots = 16;
	tool_geom_apply(&t->geom, g);
	if (!g->channels) {
		log_err("--create needs a geometry: -c chirpd.conf or --geometry C,P,R");
		return -EINVAL;
	}
	if (g->sample_rate_hz <= 0)
		g->sample_rate_hz = 1;
	return 0;
}

/* Check a (re)attached ring against what we already write/verify. */
static int check_geometry(struct tap *t, const struct chirp_ring_geometry *old)
{
	const struct chirp_ring_geometry *g = &t->geo;

	t->cpi_bytes = chirp_ring_cpi_bytes(g);
	if (old && (old->channels != g->channels || old->pulses != g->pulses ||
		    old->samples != g->samples || old->format != g->format) &&
	    (t->out_fd >= 0 || t->data_fd >= 0 || t->synth)) {
		log_err("ring %s changed geometry from %ux%ux%u %s to %ux%ux%u %s mid-capture: stopping",
			ring_default(t), old->channels, old->pulses, old->samples,
			tool_ring_format_name(old->format), g->channels, g->pulses, g->samples,
			tool_ring_format_name(g->format));
		return -EINVAL;
	}
	if (g->format == CHIRP_RING_DET && (t->sigmf_base || t->verify || t->verify_input)) {
		log_err("ring %s holds detection lists: read them with --list, --jsonl, "
			"--verify-targets, --out or --drain (not --sigmf, --verify, --verify-input)",
			ring_default(t));
		return -EINVAL;
	}
	if (g->format != CHIRP_RING_DET && det_opts(t)) {
		log_err("ring %s holds %s, not detection lists (--list, --jsonl and "
			"--verify-targets read a det ring)", ring_default(t),
			tool_ring_format_name(g->format));
		return -EINVAL;
	}
	if (t->verify_input) {
		if (!tool_ring_fits_config(g, &t->cfg, PLAN_RING_IN)) {
			log_err("ring %s (%ux%ux%u %s) is not the input described by %s",
				ring_default(t), g->channels, g->pulses, g->samples,
				tool_ring_format_name(g->format), t->config_path);
			return -EINVAL;
		}
	}
	if (t->verify) {
		if (!tool_ring_fits_config(g, &t->cfg, PLAN_RING_OUT) ||
		    t->cpi_bytes != pc_out_bytes(t->pc)) {
			log_err("ring %s (%ux%ux%u %s) is not the %s output described by %s",
				ring_default(t), g->channels, g->pulses, g->samples,
				tool_ring_format_name(g->format), pc_output_name(t->cfg.out_mode),
				t->config_path);
			return -EINVAL;
		}
	}
	return 0;
}

static int open_ring(struct tap *t)
{
	struct chirp_ring_geometry old = t->geo;
	int had = t->geo.channels != 0, r;
	char err[512];

	if (t->create && !t->created) {
		struct chirp_ring_geometry g;

		if (create_geometry(t, &g) < 0)
			return -EINVAL;
		t->ring = chirp_ring_create(ring_default(t), &g, CHIRP_RING_CONSUMER, &t->ropts,
					    err, sizeof(err));
		t->created = t->ring != NULL;
	} else {
		t->ring = tool_attach_wait(ring_default(t), CHIRP_RING_CONSUMER, &t->ropts, t->wait_s,
					   &stop_sig, err, sizeof(err));
	}
	if (!t->ring) {
		if (stop_sig)
			return -EINTR;
		log_err("%s%s", err, t->create ? "" : " (gave up waiting)");
		return -ENOENT;
	}
	if (t->spin_us && (r = chirp_ring_set_spin(t->ring, (int64_t)t->spin_us * 1000)) < 0) {
		log_err("chirp_ring_set_spin: %s", strerror(-r));
		return r;
	}
	chirp_ring_geometry(t->ring, &t->geo);
	return check_geometry(t, had ? &old : NULL);
}

static int write_all(int fd, const void *buf, size_t len, const char *path)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			log_err("write %s: %s", path, strerror(errno));
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int open_outputs(struct tap *t)
{
	if (t->out_path && strcmp(t->out_path, "-") == 0) {
		t->out_fd = dup(STDOUT_FILENO);   /* closed at exit like a file */
		if (t->out_fd < 0) {
			log_err("dup stdout: %s", strerror(errno));
			return -errno;
		}
	} else if (t->out_path) {
		t->out_fd = open(t->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (t->out_fd < 0) {
			log_err("%s: %s", t->out_path, strerror(errno));
			return -errno;
		}
	}
	if (t->sigmf_base) {
		if (sigmf_paths(t->sigmf_base, t->meta_path, t->data_path, sizeof(t->meta_path)) < 0) {
			log_err("--sigmf %s: name too long", t->sigmf_base);
			return -EINVAL;
		}
		t->data_fd = open(t->data_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (t->data_fd < 0) {
			log_err("%s: %s", t->data_path, strerror(errno));
			return -errno;
		}
		if (t->count && sigmf_meta_reserve(&t->meta, t->count) < 0) {
			log_err("out of memory for %" PRIu64 " captures", t->count);
			return -ENOMEM;
		}
	}
	return 0;
}

static void sigmf_global(struct tap *t)
{
	const struct chirp_ring_geometry *g = &t->geo;
	struct chirp_ring_geometry cfg_out;   /* chirpd's output ring for -c */

	t->meta.datatype = g->format == CHIRP_RING_SC16 ? SIGMF_CI16_LE :
			   g->format == CHIRP_RING_RF32 ? SIGMF_RF32_LE : SIGMF_CF32_LE;
	t->meta.sample_rate_hz = g->sample_rate_hz;
	t->meta.channels = g->channels;
	t->meta.pulses = g->pulses;
	t->meta.samples = g->samples;
	if (t->have_cfg)
		plan_ring_geometry(&t->cfg, PLAN_RING_OUT, &cfg_out);
	if (t->mode)
		snprintf(t->meta.output, sizeof(t->meta.output), "%s", t->mode);
	else if (g->format == CHIRP_RING_SC16)
		snprintf(t->meta.output, sizeof(t->meta.output), "input");
	else if (t->have_cfg && g->format == cfg_out.format)
		snprintf(t->meta.output, sizeof(t->meta.output), "%s", pc_output_name(t->cfg.out_mode));
	/* The names of the modes the captures' chirp:mode ids refer to. */
	for (unsigned i = 0; t->have_cfg && i < t->cfg.nmodes && i < SIGMF_MAX_MODES; i++) {
		t->meta.modes[i].id = t->cfg.modes[i].id;
		snprintf(t->meta.modes[i].name, sizeof(t->meta.modes[i].name), "%s",
			 t->cfg.modes[i].name);
		t->meta.nmodes = i + 1;
	}
	snprintf(t->meta.recorder, sizeof(t->meta.recorder), "chirp-tap");
	snprintf(t->meta.description, sizeof(t->meta.description), "CPIs from ring %.200s",
		 ring_default(t));
}

/* Relative L2 error of got vs want (n floats). */
static double rel_l2(const float *got, const float *want, size_t n)
{
	double num = 0, den = 0;

	for (size_t i = 0; i < n; i++) {
		double d = (double)got[i] - want[i];

		num += d * d;
		den += (double)want[i] * want[i];
	}
	if (!isfinite(num))
		return INFINITY;
	if (den == 0)
		return num == 0 ? 0 : INFINITY;
	return sqrt(num / den);
}

/* power_db (or map_db) -> magnitude, so the comparison weighs cells by
 * their signal. */
static void db_to_mag(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = powf(10.0f, x[i] / 20.0f);
}

/* Report the first few mismatches in full, then only count them. */
#define VERIFY_REPORT_MAX 10

static void mismatch(struct tap *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mismatch(struct tap *t, const char *fmt, ...)
{
	va_list ap;

	t->mismatches++;
	if (t->mismatches > VERIFY_REPORT_MAX)
		return;
	va_start(ap, fmt);
	log_vmsg(LOG_ERR, fmt, ap);
	va_end(ap);
	if (t->mismatches == VERIFY_REPORT_MAX)
		log_err("verify: further mismatches are counted, not shown");
}

/* Every float32 of n bytes a NaN (pc_write_skipped's output). */
static int all_nan(const void *p, size_t n)
{
	const float *f = p;

	for (size_t i = 0; i < n / sizeof(float); i++)
		if (!isnan(f[i]))
			return 0;
	return 1;
}

/*
 * A block chirpd flagged UNKNOWN_MODE: right when -c does not declare its
 * mode and every value of the payload is NaN. 1 if it was such a block (handled).
 */
static int verify_unknown_mode(struct tap *t, const struct chirp_ring_block *b, int idx)
{
	if (!(b->flags & CHIRP_RING_UNKNOWN_MODE))
		return 0;
	if (idx >= 0)
		mismatch(t, "verify: seq %" PRIu64 " is flagged UNKNOWN_MODE but its mode %" PRIu32
			 " is '%s' of %s", b->seq, b->mode, t->cfg.modes[idx].name, t->config_path);
	else if (!all_nan(b->payload, b->len))
		mismatch(t, "verify: seq %" PRIu64 " (mode %" PRIu32 ", UNKNOWN_MODE): payload "
			 "is not all NaN", b->seq, b->mode);
	return 1;
}

/* A CPI the reference could not steer to (bad: its pointing refused)
 * must be flagged BAD_POINTING and all NaN, and only such a CPI may be.
 * 1 when the block is settled here. */
static int verify_bad_pointing(struct tap *t, const struct chirp_ring_block *b, int bad)
{
	int flagged = !!(b->flags & CHIRP_RING_BAD_POINTING);

	if (!bad && !flagged)
		return 0;
	if (bad != flagged)
		mismatch(t, "verify: seq %" PRIu64 ": pointing %g,%g is %s, but the block is %s",
			 b->seq, (double)b->pointing_az_deg, (double)b->pointing_el_deg,
			 bad ? "outside what the beams can steer to" : "one the beams take",
			 flagged ? "flagged BAD_POINTING" : "not flagged BAD_POINTING");
	else if (!all_nan(b->payload, b->len))
		mismatch(t, "verify: seq %" PRIu64 " (BAD_POINTING): payload is not all NaN", b->seq);
	else
		t->verified++;
	return 1;
}

/* The relative L2 error of the received block against t->vout (power_db
 * and map_db: compared as magnitudes). */
static double verify_compare(struct tap *t, const struct chirp_ring_block *b)
{
	size_t n = b->len / 4;

	if (t->cfg.out_mode != PC_OUT_POWER_DB && t->cfg.out_mode != PC_OUT_MAP_DB)
		return rel_l2(b->payload, t->vout, n);
	/* Convert a copy of the received block (the ring's is read-only to us);
	 * b->len is pc_out_bytes, checked by the caller. */
	float *got = t->vcmp;

	memcpy(got, b->payload, b->len);
	db_to_mag(got, n);
	db_to_mag(t->vout, n);
	return rel_l2(got, t->vout, n);
}

static void verify_block(struct tap *t, const struct chirp_ring_block *b)
{
	int idx = config_mode_index(&t->cfg, b->mode);
	uint64_t k;
	double err;
	int rc;

	if (synth_cpi_index(t->synth, b->first_sample, &k) < 0) {
		mismatch(t, "verify: seq %" PRIu64 ": first_sample %" PRIu64 " is not a CPI boundary",
			 b->seq, b->first_sample);
		return;
	}
	/* The feed's CPI k of this mode (an undeclared mode: the first mode's echoes). */
	if (synth_generate_mode(t->synth, k, b->mode, t->vin, t->vin_bytes) == -ENOENT)
		synth_generate(t->synth, k, t->vin, t->vin_bytes);
	if (t->verify_input) {
		if (b->len != t->vin_bytes || memcmp(b->payload, t->vin, t->vin_bytes) != 0) {
			mismatch(t, "verify: seq %" PRIu64 " (CPI %" PRIu64 ", mode %" PRIu32 "): input "
				 "differs from the synthetic CPI", b->seq, k, b->mode);
		} else {
			t->verified++;
		}
		return;
	}
	if (verify_unknown_mode(t, b, idx))
		return;
	if (idx < 0) {
		mismatch(t, "verify: seq %" PRIu64 " (CPI %" PRIu64 "): mode %" PRIu32 " is not in %s "
			 "but the block is not flagged UNKNOWN_MODE", b->seq, k, b->mode, t->config_path);
		return;
	}
	rc = pc_execute_job(t->pcs[idx], &(struct pc_job){
		.in = t->vin, .out = t->vout, .det = t->vdet, .tag = b->seq, .mode = 0,
		.pointing_az_deg = b->pointing_az_deg, .pointing_el_deg = b->pointing_el_deg }, NULL);
	if (verify_bad_pointing(t, b, rc == -EDOM))
		return;
	if (rc < 0) {
		mismatch(t, "verify: pc_execute_job: %s", pc_last_error(t->pcs[idx]));
		return;
	}
	if (b->len != pc_out_bytes(t->pcs[idx])) {
		mismatch(t, "verify: seq %" PRIu64 ": %" PRIu64 " bytes, expected %zu", b->seq, b->len,
			 pc_out_bytes(t->pcs[idx]));
		return;
	}
	err = verify_compare(t, b);
	if (!(err <= VERIFY_REL_L2)) {
		mismatch(t, "verify: seq %" PRIu64 " (CPI %" PRIu64 ", mode %" PRIu32 "): relative L2 "
			 "error %.3g > %.0e", b->seq, k, b->mode, err, VERIFY_REL_L2);
	} else {
		t->verified++;
	}
}

/* The block's pointing in the summary's table: its own entry among the
 * first TAP_MAX_POINTINGS distinct ones (bit for bit), else "others". */
static void count_pointing(struct tap *t, const struct chirp_ring_block *b)
{
	float p[2] = { b->pointing_az_deg, b->pointing_el_deg };
	unsigned i;

	for (i = 0; i < t->npointing; i++)
		if (memcmp(t->pointing[i], p, sizeof(p)) == 0)
			break;
	if (i == t->npointing && i < TAP_MAX_POINTINGS) {
		memcpy(t->pointing[i], p, sizeof(p));
		t->npointing++;
	}
	t->per_pointing[i]++;
}

/* Account for one block's sequence number and flags. The lines about the
 * block itself name its radar mode; those about CPIs lost before it do not
 * (their modes are not known). */
static void track(struct tap *t, const struct chirp_ring_block *b, struct tool_progress *prog)
{
	if (t->have_last && b->seq != t->last_seq + 1) {
		tool_progress_end(prog);
		if (b->seq > t->last_seq) {
			uint64_t n = b->seq - t->last_seq - 1;

			t->gaps++;
			t->missing += n;
			fprintf(stderr, "gap: %" PRIu64 " CPI%s missing before seq %" PRIu64 "\n",
				n, n == 1 ? "" : "s", b->seq);
		} else {
			t->gaps++;
			fprintf(stderr, "gap: seq went back from %" PRIu64 " to %" PRIu64 "\n",
				t->last_seq, b->seq);
		}
	} else if (b->flags & CHIRP_RING_DISCONTINUITY) {
		tool_progress_end(prog);
		t->discontinuities++;
		fprintf(stderr, "discontinuity: data lost upstream before seq %" PRIu64 "\n", b->seq);
	}
	if (b->flags & CHIRP_RING_NONFINITE) {
		tool_progress_end(prog);
		t->nonfinite++;
		fprintf(stderr, "nonfinite: seq %" PRIu64 " (mode %" PRIu32 ") holds NaN/Inf (bad "
			"input samples)\n", b->seq, b->mode);
	}
	if (b->flags & CHIRP_RING_REDELIVERED) {
		tool_progress_end(prog);
		t->redelivered++;
		fprintf(stderr, "redelivered: seq %" PRIu64 " (mode %" PRIu32 ") was taken by a "
			"consumer that died\n", b->seq, b->mode);
	}
	if (b->flags & CHIRP_RING_UNKNOWN_MODE) {
		tool_progress_end(prog);
		t->unknown_mode++;
		fprintf(stderr, "unknown mode: seq %" PRIu64 " is of mode %" PRIu32 ", which chirpd "
			"does not know (no filter applied)\n", b->seq, b->mode);
	}
	if (b->flags & CHIRP_RING_BAD_POINTING) {
		tool_progress_end(prog);
		t->bad_pointing++;
		fprintf(stderr, "bad pointing: seq %" PRIu64 " (mode %" PRIu32 ") is pointed at "
			"%g,%g, which chirpd cannot steer its beams to (not processed)\n", b->seq,
			b->mode, b->pointing_az_deg, b->pointing_el_deg);
	}
	count_pointing(t, b);
	t->per_mode[b->mode < CFG_MAX_MODES ? b->mode : CFG_MAX_MODES]++;
	t->last_seq = b->seq;
	t->have_last = 1;
}

/*
 * --expect-angle: 1 if each target's strongest detection in d lies within
 * --angle-tolerance of the expected direction (a list without beams has
 * no angle: 0). Adds each measured azimuth error to the RMS.
 */
static int angle_block(struct tap *t, const struct detlist *d)
{
	int ok = !!(d->h.flags & CHIRP_DET_BEAMS);

	for (size_t i = 0; i < t->ndet_targets; i++) {
		struct chirp_det_record r;
		double e;

		if (!detlist_target_record(d, &t->det_targets[i], t->tol_gates, t->tol_bins, &r))
			return 0;
		e = r.azimuth_deg - t->expect_az_deg;
		if (!isfinite(e)) {
			ok = 0;
			continue;
		}
		t->angle_n++;
		t->angle_sq += e * e;
		ok &= fabs(e) <= t->angle_tol_deg;
		if (t->expect_el)
			ok &= fabs(r.elevation_deg - t->expect_el_deg) <= t->angle_tol_deg;
	}
	return ok;
}

/* Report the first few corrupt lists in full, then only count them. */
#define DET_REPORT_MAX 10

/*
 * A det ring's block: check the list (detlist_parse: never past the slot),
 * print it (--list, --jsonl) and match it against --verify-targets. A
 * corrupt list is reported and counted, and misses every target.
 */
static void det_block(struct tap *t, const struct chirp_ring_block *b)
{
	struct detlist d;
	char err[256];
	int all = 1;

	t->det_lists++;
	if (detlist_parse(&d, b->payload, b->len, err, sizeof(err)) < 0) {
		t->det_bad++;
		if (t->det_bad <= DET_REPORT_MAX)
			log_err("ring %s seq %" PRIu64 ": detection list rejected: %s%s",
				ring_default(t), b->seq, err,
				t->det_bad == DET_REPORT_MAX ? " (further ones are counted, not shown)" : "");
		return;
	}
	t->det_records += d.h.count;
	t->det_overflows += !!(d.h.flags & CHIRP_DET_OVERFLOW);
	if (t->list_text)
		detlist_print_text(stdout, &d, b->pointing_az_deg, b->pointing_el_deg);
	else if (t->list_jsonl)
		detlist_print_jsonl(stdout, &d, &(struct detlist_ring){
			.seq = b->seq, .flags = b->flags, .missing = b->missing,
			.pointing_az_deg = b->pointing_az_deg, .pointing_el_deg = b->pointing_el_deg });
	for (size_t i = 0; i < t->ndet_targets; i++) {
		int hit = detlist_has_target(&d, &t->det_targets[i], t->tol_gates, t->tol_bins);

		t->det_hit[i] += hit;
		all &= hit;
	}
	t->det_all_hit += all && t->ndet_targets;
	if (t->expect_angle)
		t->angle_hit += all && t->ndet_targets && angle_block(t, &d);
}

static int consume(struct tap *t, const struct chirp_ring_block *b)
{
	struct sigmf_capture c;

	if (b->len != t->cpi_bytes) {
		log_err("seq %" PRIu64 ": block of %" PRIu64 " bytes, ring CPI is %" PRIu64,
			b->seq, b->len, t->cpi_bytes);
		return -EBADMSG;
	}
	if (t->print_blocks)
		printf("block seq=%" PRIu64 " mode=%" PRIu32 " pointing=%.9g,%.9g first_sample=%"
		       PRIu64 " flags=%#x\n", b->seq, b->mode, b->pointing_az_deg,
		       b->pointing_el_deg, b->first_sample, b->flags);
	if (t->synth)
		verify_block(t, b);
	if (t->geo.format == CHIRP_RING_DET)
		det_block(t, b);
	if (t->out_fd >= 0 && write_all(t->out_fd, b->payload, b->len, t->out_path) < 0)
		return -EIO;
	if (t->data_fd >= 0) {
		if (write_all(t->data_fd, b->payload, b->len, t->data_path) < 0)
			return -EIO;
		c.sample_start = t->meta.ncaptures * (uint64_t)t->geo.channels * t->geo.pulses *
				 t->geo.samples;
		c.timestamp_ns = b->timestamp_ns;
		c.seq = b->seq;
		c.first_sample = b->first_sample;
		c.flags = b->flags;
		c.mode = b->mode;
		c.pointing_az_deg = b->pointing_az_deg;
		c.pointing_el_deg = b->pointing_el_deg;
		if (sigmf_meta_add_capture(&t->meta, &c) < 0) {
			log_err("too many captures for one SigMF recording");
			return -E2BIG;
		}
	}
	return 0;
}

static int finish_sigmf(struct tap *t)
{
	char err[512];

	if (t->data_fd < 0)
		return 0;
	if (fsync(t->data_fd) < 0 && errno != EINVAL)
		log_warn("fsync %s: %s", t->data_path, strerror(errno));
	sigmf_global(t);
	if (sigmf_meta_write(&t->meta, t->meta_path, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return -EIO;
	}
	return 0;
}

/* Load the configuration, set up verification, open the outputs and the
 * ring. 0: consume; 1: interrupted while waiting for the ring (exit 0);
 * -1: error (reported). */
static int tap_setup(struct tap *t)
{
	int r;

	if (t->config_path) {
		int n = config_load(&t->cfg, t->config_path, stderr);

		if (n != 0) {
			if (n > 0)
				log_err("%s: %d error%s", t->config_path, n, n == 1 ? "" : "s");
			return -1;
		}
		t->have_cfg = 1;
	}
	if ((t->verify || t->verify_input) && setup_verify(t) < 0)
		return -1;
	if (open_outputs(t) < 0)
		return -1;
	r = open_ring(t);
	if (r < 0)
		return r == -EINTR ? 1 : -1;
	return 0;
}

/* A peek that found no block to take: wait, re-attach, or skip a corrupt
 * descriptor (0: go on); a corrupt ring or another error stops (-1). */
static int tap_peek_failed(struct tap *t, struct tool_progress *prog, int r, double deadline)
{
	if (r == -EAGAIN) {
		double left = deadline - mono_s();
		int64_t ns = left > 0.1 ? 100000000LL : (int64_t)(left * 1e9);

		if (ns > 0)
			chirp_ring_wait(t->ring, ns);
		return 0;
	}
	if (r == -ESTALE) {
		tool_progress_end(prog);
		log_notice("ring %s was re-created: re-attaching (sequence numbers restart)",
			   ring_default(t));
		chirp_ring_detach(t->ring);
		t->ring = NULL;
		t->have_last = 0;
		return 0;
	}
	if (r == -EBADMSG) {
		char why[256] = "";

		tool_progress_end(prog);
		if (chirp_ring_check(t->ring, why, sizeof(why)) == -EBADMSG) {
			log_err("ring %s is corrupt: %s", ring_default(t), why);
			return -1;
		}
		/* Its sequence number is lost with it: the next block shows the gap. */
		log_err("ring %s: a corrupt block descriptor was skipped", ring_default(t));
		return 0;
	}
	log_err("peek on ring %s: %s", ring_default(t), strerror(-r));
	return -1;
}

static void tap_progress_line(struct tap *t, struct tool_progress *prog, double t0)
{
	char of[32] = "";
	double dt = mono_s() - t0;

	if (t->count)
		snprintf(of, sizeof(of), "/%" PRIu64, t->count);
	tool_progress(prog, 0, "received %" PRIu64 "%s  gaps %" PRIu64 " (%" PRIu64
		      " missing)  %.1f CPI/s%s", t->received, of, t->gaps, t->missing,
		      dt > 0 ? t->received / dt : 0,
		      t->synth ? (t->mismatches ? "  MISMATCH" : "  verified") : "");
}

/* One pass of the consume loop: (re-)attach, then take, check, write and
 * release one CPI. 0: go on; 1: the deadline passed; -1: stop on an error. */
static int tap_step(struct tap *t, struct tool_progress *prog, double t0, double deadline)
{
	struct chirp_ring_block b;
	int r;

	if (!t->ring) {
		r = open_ring(t);
		if (r < 0)
			return -1;
	}
	if (mono_s() >= deadline)
		return 1;
	if (t->have_stall && t->received >= t->stall_after) {
		/* Model a stuck consumer: attached, holding nothing, reading nothing. */
		tool_progress(prog, 0, "stalled after %" PRIu64 " CPIs", t->received);
		tool_sleep(fmin(0.1, deadline - mono_s()));
		return 0;
	}
	r = chirp_ring_peek(t->ring, &b);
	if (r < 0)
		return tap_peek_failed(t, prog, r, deadline);
	track(t, &b, prog);
	r = consume(t, &b);
	if (r < 0) {
		chirp_ring_release(t->ring);
		return -1;
	}
	if (t->delay_ms)
		tool_sleep(t->delay_ms / 1000.0);
	r = chirp_ring_release(t->ring);
	if (r < 0 && r != -ESTALE) {
		log_err("release on ring %s: %s", ring_default(t), strerror(-r));
		return -1;
	}
	t->received++;
	if (prog->on)
		tap_progress_line(t, prog, t0);
	return 0;
}

/* Consume until --count, a signal, the deadline or an error; the exit
 * status so far. */
static int tap_consume(struct tap *t, struct tool_progress *prog, double t0, double deadline,
		       int *timed_out)
{
	int r;

	while (!stop_sig && (!t->count || t->received < t->count)) {
		r = tap_step(t, prog, t0, deadline);
		if (r < 0)
			return EXIT_ERR;
		if (r == 1) {
			*timed_out = 1;
			return EXIT_TIMEOUT;
		}
	}
	if (stop_sig && t->count && t->received < t->count && !t->have_stall)
		return EXIT_ERR;       /* interrupted before N: the capture is short */
	return EXIT_OK;
}

static void tap_report_timeout(struct tap *t)
{
	struct chirp_ring_stats st;

	log_err("timeout: %" PRIu64 " of %" PRIu64 " CPIs arrived in %.1f s",
		t->received, t->count, t->timeout_s);
	/* Blocks dropped after the last one we took leave no gap for us
	 * to see; the ring's own count says where the rest went. */
	if (t->ring && chirp_ring_stats(t->ring, &st) == 0 && st.overruns)
		log_err("ring %s: the producer dropped %" PRIu64 " blocks because the ring "
			"was full (consumer attached late or fell behind)",
			ring_default(t), st.overruns);
}

/* The CPIs per radar mode, when any had a mode other than 0, and the
 * blocks flagged UNKNOWN_MODE. */
static void tap_report_modes(const struct tap *t)
{
	const char *sep = "";

	if (t->per_mode[0] != t->received) {
		fprintf(stderr, "chirp-tap: CPIs per mode:");
		for (unsigned m = 0; m <= CFG_MAX_MODES; m++) {
			if (!t->per_mode[m])
				continue;
			if (m < CFG_MAX_MODES)
				fprintf(stderr, "%s %u: %" PRIu64, sep, m, t->per_mode[m]);
			else
				fprintf(stderr, "%s >= %d: %" PRIu64, sep, CFG_MAX_MODES, t->per_mode[m]);
			sep = ",";
		}
		fputc('\n', stderr);
	}
	if (t->unknown_mode && !t->synth)
		fprintf(stderr, "chirp-tap: %" PRIu64 " blocks of an unknown mode (flagged UNKNOWN_MODE)\n",
			t->unknown_mode);
}

/* The CPIs per pointing, when any was not boresight, and the blocks
 * flagged BAD_POINTING:
 *   chirp-tap: CPIs per pointing: 0,0: N, 10,-2.5: N, others: N */
static void tap_report_pointing(const struct tap *t)
{
	if (t->npointing > 1 || (t->npointing == 1 && (t->pointing[0][0] != 0.0f ||
						      t->pointing[0][1] != 0.0f))) {
		fprintf(stderr, "chirp-tap: CPIs per pointing:");
		for (unsigned i = 0; i < t->npointing; i++)
			fprintf(stderr, "%s %g,%g: %" PRIu64, i ? "," : "", t->pointing[i][0],
				t->pointing[i][1], t->per_pointing[i]);
		if (t->per_pointing[TAP_MAX_POINTINGS])
			fprintf(stderr, ", others: %" PRIu64, t->per_pointing[TAP_MAX_POINTINGS]);
		fputc('\n', stderr);
	}
	if (t->bad_pointing)
		fprintf(stderr, "chirp-tap: %" PRIu64 " blocks not processed for their pointing "
			"(flagged BAD_POINTING)\n", t->bad_pointing);
}

/*
 *   chirp-tap: expect-angle: H of N CPIs (x%) hold every target within T deg
 *     of AZ[,EL] (min y%), azimuth RMS error E deg over M detections
 * -1 when the fraction is under --verify-min.
 */
static int angle_report(const struct tap *t)
{
	double frac = t->det_lists ? (double)t->angle_hit / t->det_lists : 0;
	char el[48] = "";

	if (t->expect_el)
		snprintf(el, sizeof(el), ",%g", t->expect_el_deg);
	fprintf(stderr, "chirp-tap: expect-angle: %" PRIu64 " of %" PRIu64 " CPIs (%.2f%%) hold "
		"every target within %g deg of %g%s (min %.2f%%), azimuth RMS error %.4g deg "
		"over %" PRIu64 " detections\n", t->angle_hit, t->det_lists, 100 * frac,
		t->angle_tol_deg, t->expect_az_deg, el, 100 * t->verify_min,
		t->angle_n ? sqrt(t->angle_sq / t->angle_n) : NAN, t->angle_n);
	if (frac < t->verify_min) {
		log_err("expect-angle: %.2f%% of CPIs have every target at the angle, under %.2f%%",
			100 * frac, 100 * t->verify_min);
		return -1;
	}
	return 0;
}

/*
 * The det ring's summary on stderr:
 *   chirp-tap: detection lists N (D detections, O overflowed, B rejected)
 *   chirp-tap: verify-targets: H of N CPIs (x%) hold every target (min y%):
 *     300:5 100.0%, ...
 * -1 when a list was rejected or the fraction is under --verify-min.
 */
static int det_report(struct tap *t)
{
	double frac = t->det_lists ? (double)t->det_all_hit / t->det_lists : 0;
	int bad = t->det_bad > 0;

	fflush(stdout);
	fprintf(stderr, "chirp-tap: detection lists %" PRIu64 " (%" PRIu64 " detections, %" PRIu64
		" overflowed, %" PRIu64 " rejected)\n", t->det_lists, t->det_records,
		t->det_overflows, t->det_bad);
	if (!t->ndet_targets)
		return bad ? -1 : 0;
	fprintf(stderr, "chirp-tap: verify-targets: %" PRIu64 " of %" PRIu64 " CPIs (%.2f%%) hold "
		"every target (min %.2f%%, tolerance %u gates, %u bins):", t->det_all_hit,
		t->det_lists, 100 * frac, 100 * t->verify_min, t->tol_gates, t->tol_bins);
	for (size_t i = 0; i < t->ndet_targets; i++)
		fprintf(stderr, "%s %" PRIu32 ":%" PRId32 " %.2f%%", i ? "," : "",
			t->det_targets[i].gate, t->det_targets[i].bin,
			t->det_lists ? 100.0 * t->det_hit[i] / t->det_lists : 0.0);
	fputc('\n', stderr);
	if (!t->det_lists || frac < t->verify_min) {
		log_err("verify-targets: %.2f%% of CPIs hold every target, under %.2f%%",
			100 * frac, 100 * t->verify_min);
		return -1;
	}
	if (t->expect_angle && angle_report(t) < 0)
		return -1;
	return bad ? -1 : 0;
}

/* Close the outputs and print the summary; the final exit status from rc,
 * the verification and --fail-on-gap. */
static int tap_finish(struct tap *t, struct tool_progress *prog, double t0, int rc,
		      int timed_out)
{
	double dt;

	tool_progress_end(prog);
	dt = mono_s() - t0;
	if (finish_sigmf(t) < 0)
		rc = EXIT_ERR;
	if (t->out_fd >= 0 && close(t->out_fd) < 0) {
		log_err("close %s: %s", t->out_path, strerror(errno));
		rc = EXIT_ERR;
	}
	t->out_fd = -1;
	fprintf(stderr, "chirp-tap: received %" PRIu64 ", gaps %" PRIu64 " (%" PRIu64 " CPIs missing), "
		"%.1f CPI/s, %.1f MB/s over %.2f s%s\n", t->received, t->gaps, t->missing,
		dt > 0 ? t->received / dt : 0.0,
		dt > 0 ? t->received * (double)t->cpi_bytes / dt / 1e6 : 0.0, dt,
		stop_sig ? " (interrupted)" : "");
	if (t->discontinuities || t->nonfinite || t->redelivered)
		fprintf(stderr, "chirp-tap: %" PRIu64 " upstream discontinuities, %" PRIu64
			" non-finite CPIs, %" PRIu64 " redelivered\n",
			t->discontinuities, t->nonfinite, t->redelivered);
	tap_report_modes(t);
	tap_report_pointing(t);
	if (t->synth) {
		/* An unknown-mode block is neither verified nor a mismatch
		 * when it is right (verify_unknown_mode). */
		fprintf(stderr, "chirp-tap: verified %" PRIu64 ", mismatches %" PRIu64
			", unknown mode %" PRIu64 "\n", t->verified, t->mismatches, t->unknown_mode);
		if (t->mismatches && (rc == EXIT_OK || rc == EXIT_GAP))
			rc = EXIT_VERIFY;
	}
	if (t->geo.format == CHIRP_RING_DET && det_report(t) < 0 && rc == EXIT_OK)
		rc = t->det_bad ? EXIT_ERR : EXIT_VERIFY;
	if (timed_out)
		tap_report_timeout(t);
	if (rc == EXIT_OK && t->fail_on_gap && (t->missing || t->discontinuities))
		rc = EXIT_GAP;
	return rc;
}

static void tap_free(struct tap *t)
{
	if (t->out_fd >= 0)
		close(t->out_fd);
	if (t->data_fd >= 0)
		close(t->data_fd);
	if (t->ring) {
		chirp_ring_detach(t->ring);
		if (t->created && !t->keep)
			chirp_ring_unlink(ring_default(t));
	}
	synth_destroy(t->synth);
	for (unsigned i = 0; i < CFG_MAX_MODES; i++)
		pc_destroy(t->pcs[i]);
	free(t->vin);
	free(t->vout);
	free(t->vcmp);
	free(t->vdet);
	sigmf_meta_free(&t->meta);
}

int main(int argc, char **argv)
{
	struct tap t;
	struct tool_progress prog;
	double t0, deadline;
	int rc, r, timed_out = 0;

	memset(&t, 0, sizeof(t));
	t.out_fd = t.data_fd = -1;
	sigmf_meta_init(&t.meta);
	log_init(argv[0]);
	if (parse_args(&t, argc, argv) < 0)
		return EXIT_USAGE;
	if (tool_catch_signals(&stop_sig) < 0) {
		log_err("sigaction: %s", strerror(errno));
		return EXIT_ERR;
	}
	t0 = mono_s();
	deadline = t.timeout_s > 0 ? t0 + t.timeout_s : INFINITY;
	r = tap_setup(&t);
	if (r != 0) {
		rc = r > 0 ? EXIT_OK : EXIT_ERR;
		goto out;
	}
	tool_progress_init(&prog, t.quiet);
	rc = tap_consume(&t, &prog, t0, deadline, &timed_out);
	rc = tap_finish(&t, &prog, t0, rc, timed_out);
out:
	tap_free(&t);
	return rc;
}
