/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirp-feed — a producer for a chirpd input ring: replays raw CPIs or a
 * SigMF recording, or synthesises echoes from a chirpd configuration.
 * Usage and behaviour: chirp-feed --help and doc/tools.md.
 *
 * Data model (for the drop/gap accounting a test relies on): the feed
 * models a digitizer. CPI k (k = 0, 1, ...) is produced at its time slot
 * (with --rate) and committed with first_sample = k * P * R. If the ring
 * is full the CPI is lost (counted as dropped; the ring flags the next
 * block DISCONTINUITY and the block sequence number skips), unless
 * --block, which waits for a free slot instead and never drops.
 *
 * Pacing (--rate): CPI k is due on an absolute CLOCK_MONOTONIC schedule
 * (clock_nanosleep TIMER_ABSTIME, so sleep overshoot never accumulates).
 * The feed never bursts to catch up: when it wakes more than half a
 * period after a CPI was due (preempted, stopped, a slow fill), it sends
 * that CPI now, restarts the schedule from now and counts a late tick.
 * Due times are therefore always at least one period apart, and two
 * commits at most half a period closer than that. A digitizer does not
 * fall behind; a feed that does is reported ("late ticks" at exit), so a
 * benchmark can tell a lighter load than asked from a loss.
 * With --prefilled, every free slot is reserved and written before the
 * first commit (reserve_next) and, with --rate, before the clock starts,
 * so the loop only commits: no synthesis on the clock, and no slow first
 * pass through the ring for a saturating (--block) feed either.
 *
 * Radar modes: CPI k is committed with the mode schedule[k mod n] of
 * --modes, else the recording's own mode of that CPI (SigMF chirp:mode),
 * else 0; likewise its pointing (--pointing, chirp:pointing, boresight); synthetic echoes of CPI k use that mode's transmitted pulse (one
 * per configured mode, made at start: choosing costs nothing per CPI).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chirp/ring.h"
#include "config.h"
#include "log.h"
#include "sigmf.h"
#include "synth.h"
#include "timeutil.h"
#include "tool.h"

enum src_kind { SRC_NONE, SRC_SYNTH, SRC_FILE, SRC_SIGMF };

struct feed {
	/* options */
	const char *ring_name;
	const char *config_path;
	struct tool_synth_opts syn;     /* --target --prf --snr-db ... --seed */
	const char *file_path;
	const char *sigmf_base;
	const char *modes_spec;         /* --modes                            */
	const char *pointing_spec;      /* --pointing                         */
	int allow_unknown_modes;
	double rate, wait_s;
	uint64_t count;
	int loop, create, keep, block, prefilled, quiet, ignore_rate;
	int created;                    /* we made the ring (unlink at exit)  */
	struct chirp_ring_opts ropts;   /* --allow-foreign-owner                */
	struct tool_geom_opts geom;     /* --geometry --format --slots --sample-rate */

	/* state */
	enum src_kind src;
	struct chirp_config cfg;
	int have_cfg;
	struct synth_target targets[SYNTH_MAX_TARGETS];
	size_t ntargets;
	double noise_power;
	struct synth *synth;
	const uint8_t *map;             /* mmap'd file / sigmf data           */
	size_t map_len;
	uint32_t src_fmt;               /* ring format of the mapped data     */
	uint64_t src_cpi_bytes;         /* bytes of one CPI in the source     */
	uint64_t src_ncpi;
	struct sigmf_meta meta;
	struct chirp_ring *ring;
	struct chirp_ring_geometry geo;
	uint64_t cpi_bytes;             /* payload bytes of one ring CPI      */
	uint64_t *written;              /* --prefilled: 1 + the mode a slot was
					   written with; 0 = not yet written   */
	uint32_t *schedule;             /* --modes: mode of CPI k is
					   schedule[k % nschedule]             */
	size_t nschedule;
	uint32_t *src_modes;            /* the recording's mode per CPI, or NULL */
	float (*psched)[2];             /* --pointing: CPI k is pointed at
					   psched[k % npsched] (az, el deg) */
	size_t npsched;
	float (*src_pointing)[2];       /* the recording's pointing per CPI, or NULL */
	uint64_t clipped;               /* cf32 -> sc16 saturations           */

	/* pacing (--rate) */
	double period_ns;               /* 1e9 / rate                          */
	uint64_t sched_t0_ns;           /* CLOCK_MONOTONIC origin of the schedule */
	uint64_t sched_n;               /* CPIs due since sched_t0_ns          */
	uint64_t late_ticks;            /* schedule restarts (woke > period/2 late) */
	uint64_t late_max_ns;           /* worst lateness at wake, any tick    */
};

static volatile sig_atomic_t stop_sig;

/*
 * Wait for the next CPI's due time on the absolute schedule. Returns 0 when
 * it is due (the schedule advanced by one CPI), -EINTR when a signal came
 * first (look at the stop flag and call again: the due time is unchanged).
 * Lateness > period / 2 restarts the schedule from now (see the top).
 */
static int pace_tick(struct feed *f)
{
	uint64_t due = f->sched_t0_ns + (uint64_t)((double)f->sched_n * f->period_ns), now;
	struct timespec ts = { .tv_sec = (time_t)(due / 1000000000ull),
			       .tv_nsec = (long)(due % 1000000000ull) };
	int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);

	if (r == EINTR)
		return -EINTR;
	if (r != 0)   /* EINVAL/ENOTSUP: cannot happen for CLOCK_MONOTONIC */
		log_warn("clock_nanosleep: %s", strerror(r));
	now = mono_ns();
	if (now > due && now - due > f->late_max_ns)
		f->late_max_ns = now - due;
	if (now > due && (double)(now - due) > 0.5 * f->period_ns) {
		f->late_ticks++;
		f->sched_t0_ns = now;   /* this CPI goes now, the next one period later */
		f->sched_n = 0;
	}
	f->sched_n++;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: chirp-feed [OPTIONS]\n"
"Produce CPIs into a chirpd input ring.\n"
"\n"
"Source (one of):\n"
"  -c, --config FILE      synthetic echoes with the geometry, format and waveform\n"
"                         of this chirpd configuration, with:\n"
TOOL_SYNTH_USAGE
"      --file PATH        replay raw CPIs in the ring's format and layout\n"
"      --sigmf BASE       replay a SigMF recording (ci16_le or cf32_le)\n"
"\n"
"Radar modes:\n"
"      --modes LIST       commit CPI k with mode LIST[k mod n] (e.g. 0,1,1,2);\n"
"                         synthetic echoes use that mode's waveform of -c.\n"
"                         Default: a recording's own modes (chirp:mode), else 0\n"
"      --allow-unknown-modes  let --modes name ids that -c does not declare\n"
"                         (to test chirpd's flagging: those CPIs carry the echoes\n"
"                         of the first configured mode); default: refuse\n"
"      --pointing AZ,EL[;AZ,EL...]  commit CPI k pointed at entry k mod n, degrees\n"
"                         from boresight (each -360..360: chirpd flags one it\n"
"                         cannot steer to). Default: a recording's own pointing\n"
"                         (chirp:pointing), else 0,0\n"
"\n"
"Ring:\n"
"  -r, --ring NAME        ring (default: [input] ring of -c, else /chirpd-in)\n"
"      --wait SEC         wait up to SEC for the ring to appear (default 10)\n"
"      --allow-foreign-owner  use a ring owned by another user (e.g. chirpd's,\n"
"                         shared through its control_group); default: refuse\n"
"      --create           create the ring (geometry from -c, the recording or\n"
"                         --geometry); removed at exit unless --keep\n"
"      --geometry C,P,R   channels, pulses, range samples (with --create)\n"
"      --format F         cf32 or sc16 (rf32 or det for --file; with --create)\n"
"      --slots N          ring slots, 2..65536 (with --create; default 16)\n"
"      --sample-rate HZ   sample rate recorded in the ring (with --create)\n"
"      --keep             leave a ring made with --create in place\n"
"\n"
"Pacing:\n"
"      --rate CPI_PER_S   pace in real time on an absolute schedule (default: as\n"
"                         fast as possible); never bursts: a wake more than half\n"
"                         a period late restarts the schedule (late ticks, at exit)\n"
"  -n, --count N          stop after N CPIs (sent + dropped; default: no limit,\n"
"                         or the recording's length without --loop)\n"
"      --loop             replay the file or recording again and again\n"
"      --block            wait for a free slot instead of dropping when full\n"
"                         (with --prefilled: a lossless saturating source)\n"
"      --prefilled        write each slot once up front, then only commit\n"
"                         (models a digitizer's DMA, for benchmarks; with\n"
"                         --rate all free slots are written before the clock starts;\n"
"                         a slot is written again for a CPI of another mode)\n"
"      --ignore-rate      replay a recording whose sample rate differs from the ring's\n"
"  -q, --quiet            no progress line (it is shown only on a terminal anyway)\n"
"  -h, --help\n"
"\n"
"At exit (end of data, --count, SIGINT/SIGTERM) a summary goes to stderr:\n"
"  chirp-feed: sent N, dropped D (ring full), R CPI/s, M MB/s over T s\n"
"and with --rate a second line:\n"
"  chirp-feed: pacing R CPI/s: L late ticks (...), max lateness X us\n"
"Exit status: 0 done, 1 error, 2 usage.\n");
}

enum {
	O_FILE = 256, O_SIGMF, O_WAIT, O_FOREIGN, O_CREATE,
	O_GEOMETRY, O_FORMAT, O_SLOTS, O_SRATE, O_KEEP, O_RATE, O_LOOP, O_BLOCK,
	O_PREFILLED, O_IGNRATE, O_MODES, O_UNKMODES, O_POINTING,
};

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "ring", required_argument, NULL, 'r' },
	{ "count", required_argument, NULL, 'n' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	TOOL_SYNTH_LONG_OPTS,
	{ "file", required_argument, NULL, O_FILE },
	{ "sigmf", required_argument, NULL, O_SIGMF },
	{ "wait", required_argument, NULL, O_WAIT },
	{ "allow-foreign-owner", no_argument, NULL, O_FOREIGN },
	{ "create", no_argument, NULL, O_CREATE },
	{ "geometry", required_argument, NULL, O_GEOMETRY },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "slots", required_argument, NULL, O_SLOTS },
	{ "sample-rate", required_argument, NULL, O_SRATE },
	{ "keep", no_argument, NULL, O_KEEP },
	{ "rate", required_argument, NULL, O_RATE },
	{ "loop", no_argument, NULL, O_LOOP },
	{ "block", no_argument, NULL, O_BLOCK },
	{ "prefilled", no_argument, NULL, O_PREFILLED },
	{ "ignore-rate", no_argument, NULL, O_IGNRATE },
	{ "modes", required_argument, NULL, O_MODES },
	{ "allow-unknown-modes", no_argument, NULL, O_UNKMODES },
	{ "pointing", required_argument, NULL, O_POINTING },
	{ NULL, 0, NULL, 0 },
};

/* One option. 0, or < 0 after reporting the bad argument. */
static int feed_opt(struct feed *f, int c, int li)
{
	switch (c) {
	case 'c': f->config_path = optarg; break;
	case 'r': f->ring_name = optarg; break;
	case 'n':
		if (tool_parse_u64(optarg, &f->count) < 0 || f->count == 0)
			return tool_bad_arg("--count", optarg, "want a count >= 1");
		break;
	case 'q': f->quiet = 1; break;
	case 'h': usage(stdout); exit(0);
	case O_FILE: f->file_path = optarg; break;
	case O_SIGMF: f->sigmf_base = optarg; break;
	case O_FOREIGN: f->ropts.allow_foreign_owner = 1; break;
	case O_WAIT:
		if (tool_parse_double(optarg, &f->wait_s) < 0 || f->wait_s < 0)
			return tool_bad_arg("--wait", optarg, "want seconds >= 0");
		break;
	case O_CREATE: f->create = 1; break;
	case O_GEOMETRY: case O_FORMAT: case O_SLOTS: case O_SRATE:
		/* long-only options: li names the one matched */
		if (tool_geom_opt(&f->geom, long_opts[li].name, optarg,
				  "want cf32, sc16 (or rf32, det for --file)") < 0)
			return -EINVAL;
		break;
	case O_KEEP: f->keep = 1; break;
	case O_RATE:
		if (tool_parse_double(optarg, &f->rate) < 0 || f->rate <= 0)
			return tool_bad_arg("--rate", optarg, "want CPIs per second > 0");
		break;
	case O_LOOP: f->loop = 1; break;
	case O_BLOCK: f->block = 1; break;
	case O_PREFILLED: f->prefilled = 1; break;
	case O_IGNRATE: f->ignore_rate = 1; break;
	case O_MODES: f->modes_spec = optarg; break;
	case O_UNKMODES: f->allow_unknown_modes = 1; break;
	case O_POINTING: f->pointing_spec = optarg; break;
	default: {
		int rc = tool_synth_opt(&f->syn, c, optarg);

		if (rc == 0)
			usage(stderr);
		return rc > 0 ? 0 : -EINVAL;
	}
	}
	return 0;
}

/* Exactly one source, and the options that exclude or need one another. */
static int feed_args_check(struct feed *f)
{
	int synthetic = tool_synth_given(&f->syn);
	int nsrc = !!f->file_path + !!f->sigmf_base + synthetic;

	if (nsrc != 1) {
		log_err("give exactly one source: --target (with -c), --file or --sigmf");
		return -EINVAL;
	}
	if (synthetic && !f->config_path) {
		log_err("--target needs -c chirpd.conf (geometry, format and waveform)");
		return -EINVAL;
	}
	if (tool_synth_check(&f->syn) < 0)
		return -EINVAL;
	if (f->loop && synthetic) {
		log_err("--loop applies to --file and --sigmf (synthetic echoes never end)");
		return -EINVAL;
	}
	if (!f->create && tool_geom_given(&f->geom)) {
		log_err("--geometry, --format, --slots and --sample-rate only apply with --create");
		return -EINVAL;
	}
	if (f->allow_unknown_modes && !f->modes_spec) {
		log_err("--allow-unknown-modes applies to --modes");
		return -EINVAL;
	}
	return 0;
}

/* A schedule of at most this many CPIs: a radar's mode sequence, not a
 * recording (replay a SigMF recording for that). */
#define FEED_MAX_SCHEDULE 65536

/* --modes "0,1,1,2" into f->schedule. 0, or -EINVAL after the reason. */
static int parse_modes(struct feed *f)
{
	const char *p = f->modes_spec;
	size_t n = 1;

	for (const char *q = p; *q; q++)
		n += *q == ',';
	if (n > FEED_MAX_SCHEDULE) {
		log_err("--modes: %zu entries, at most %d", n, FEED_MAX_SCHEDULE);
		return -EINVAL;
	}
	f->schedule = calloc(n, sizeof(*f->schedule));
	if (!f->schedule) {
		log_err("out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[24];
		uint64_t v;

		if (len == 0 || len >= sizeof(item))
			return tool_bad_arg("--modes", f->modes_spec,
					    "want mode ids 0..4294967295 separated by commas");
		memcpy(item, p, len);
		item[len] = '\0';
		if (tool_parse_u64(item, &v) < 0 || v > UINT32_MAX) {
			log_err("--modes: entry %zu '%s' is not a mode id 0..4294967295", i + 1, item);
			return -EINVAL;
		}
		f->schedule[i] = (uint32_t)v;
		p = end ? end + 1 : p + len;
	}
	f->nschedule = n;
	return 0;
}

/* --pointing "AZ,EL;AZ,EL" into f->psched. 0, or -EINVAL after the reason. */
static int parse_pointing(struct feed *f)
{
	const char *p = f->pointing_spec;
	size_t n = 1;

	for (const char *q = p; *q; q++)
		n += *q == ';';
	if (n > FEED_MAX_SCHEDULE) {
		log_err("--pointing: %zu entries, at most %d", n, FEED_MAX_SCHEDULE);
		return -EINVAL;
	}
	f->psched = calloc(n, sizeof(*f->psched));
	if (!f->psched) {
		log_err("out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[96];
		double v[2];

		if (len >= sizeof(item) || (memcpy(item, p, len), item[len] = '\0',
		    tool_parse_doubles(item, v, 2) != 2) || fabs(v[0]) > 360 || fabs(v[1]) > 360) {
			log_err("--pointing: entry %zu '%.*s': want AZ_DEG,EL_DEG, each -360..360 "
				"(entries separated by ';')", i + 1, (int)(len < 64 ? len : 64), p);
			return -EINVAL;
		}
		f->psched[i][0] = (float)v[0];
		f->psched[i][1] = (float)v[1];
		p = end ? end + 1 : p + len;
	}
	f->npsched = n;
	return 0;
}

/* The pointing CPI k is committed with, degrees: *az, *el. */
static void pointing_of(const struct feed *f, uint64_t k, float *az, float *el)
{
	const float *pt = f->psched ? f->psched[k % f->npsched] :
			  f->src_pointing ? f->src_pointing[k % f->src_ncpi] : NULL;

	*az = pt ? pt[0] : 0.0f;
	*el = pt ? pt[1] : 0.0f;
}

/* The radar mode CPI k is committed (and synthesised) with. */
static uint32_t mode_of(const struct feed *f, uint64_t k)
{
	if (f->schedule)
		return f->schedule[k % f->nschedule];
	if (f->src_modes)
		return f->src_modes[k % f->src_ncpi];
	return 0;
}

/*
 * Every id of the schedule must be a mode of -c: a mode chirpd does not
 * know is flagged UNKNOWN_MODE and its output all NaN, which is what a test
 * of that handling wants (--allow-unknown-modes, with a warning) and what
 * a typo should not silently cause.
 */
static int check_schedule(const struct feed *f)
{
	int unknown = 0;

	if (!f->schedule || !f->have_cfg)
		return 0;
	for (size_t i = 0; i < f->nschedule; i++) {
		uint32_t m = f->schedule[i];
		int seen = 0;

		if (config_mode_index(&f->cfg, m) >= 0)
			continue;
		for (size_t j = 0; j < i; j++)
			seen |= f->schedule[j] == m;
		if (seen)
			continue;
		unknown++;
		if (f->allow_unknown_modes)
			log_warn("--modes: mode %" PRIu32 " is not declared in %s: chirpd will flag "
				 "those CPIs UNKNOWN_MODE (--allow-unknown-modes)", m, f->config_path);
		else
			log_err("--modes: mode %" PRIu32 " is not declared in %s (its [mode] ids "
				"are the modes chirpd knows; --allow-unknown-modes to send it anyway)",
				m, f->config_path);
	}
	return unknown && !f->allow_unknown_modes ? -EINVAL : 0;
}

static int parse_args(struct feed *f, int argc, char **argv)
{
	int c, li = 0;

	f->wait_s = 10;
	tool_synth_opts_init(&f->syn);
	while ((c = getopt_long(argc, argv, "c:r:n:qh", long_opts, &li)) != -1) {
		if (feed_opt(f, c, li) < 0)
			return -EINVAL;
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (feed_args_check(f) < 0)
		return -EINVAL;
	if (f->modes_spec && parse_modes(f) < 0)
		return -EINVAL;
	if (f->pointing_spec && parse_pointing(f) < 0)
		return -EINVAL;
	f->src = tool_synth_given(&f->syn) ? SRC_SYNTH : f->file_path ? SRC_FILE : SRC_SIGMF;
	return 0;
}

static int load_config(struct feed *f)
{
	int n = config_load(&f->cfg, f->config_path, stderr);

	if (n != 0) {
		if (n > 0)
			log_err("%s: %d error%s", f->config_path, n, n == 1 ? "" : "s");
		return -EINVAL;
	}
	f->have_cfg = 1;
	return 0;
}

static int build_synth(struct feed *f)
{
	synth_destroy(f->synth);
	f->synth = tool_synth_create(&f->syn, &f->cfg, f->targets, f->ntargets, f->noise_power);
	return f->synth ? 0 : -EINVAL;
}

static int map_file(struct feed *f, const char *path)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0) {
		log_err("%s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		log_err("fstat %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		rc = -EINVAL;
		log_err("%s: not a regular non-empty file", path);
		goto out;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		log_err("mmap %s: %s", path, strerror(errno));
		goto out;
	}
	f->map = p;
	f->map_len = (size_t)st.st_size;
out:
	close(fd);
	return rc;
}

static uint32_t ring_fmt_of(enum sigmf_datatype d)
{
	return d == SIGMF_CI16_LE ? CHIRP_RING_SC16 : CHIRP_RING_CF32;
}

static size_t fmt_bytes(uint32_t fmt)
{
	return fmt == CHIRP_RING_CF32 ? 8 : 4;
}

/* Source set-up that does not need the ring (config, recording metadata). */
static int prepare_source(struct feed *f)
{
	char err[512], meta[4096], data[4096];

	if (f->config_path && load_config(f) < 0)
		return -EINVAL;
	if (check_schedule(f) < 0)
		return -EINVAL;
	if (f->src == SRC_SYNTH) {
		if (tool_synth_targets(&f->syn, &f->cfg, f->config_path, f->targets,
				       &f->ntargets, &f->noise_power) < 0)
			return -EINVAL;
		return build_synth(f);
	}
	if (f->src == SRC_FILE)
		return map_file(f, f->file_path);

	if (sigmf_paths(f->sigmf_base, meta, data, sizeof(meta)) < 0) {
		log_err("--sigmf %s: name too long", f->sigmf_base);
		return -EINVAL;
	}
	if (sigmf_meta_read(meta, &f->meta, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return -EINVAL;
	}
	if (f->meta.datatype == SIGMF_RF32_LE) {
		log_err("%s: rf32_le is pulse-compressed output, not an input recording "
			"(chirp-feed replays ci16_le and cf32_le)", meta);
		return -EINVAL;
	}
	if (f->meta.output[0] && strcmp(f->meta.output, "input") != 0)
		log_warn("%s: chirp:output is '%s': replaying compressed data as input",
			 meta, f->meta.output);
	f->src_fmt = ring_fmt_of(f->meta.datatype);
	if (map_file(f, data) < 0)
		return -EINVAL;
	return 0;
}

/* Geometry for --create: explicit options > config > recording. */
static int create_geometry(struct feed *f, struct chirp_ring_geometry *g)
{
	memset(g, 0, sizeof(*g));
	if (f->have_cfg) {
		plan_ring_geometry(&f->cfg, PLAN_RING_IN, g);
	} else if (f->src == SRC_SIGMF && f->meta.channels) {
		g->channels = f->meta.channels;
		g->pulses = f->meta.pulses;
		g->samples = f->meta.samples;
		g->format = f->src_fmt;
		g->sample_rate_hz = f->meta.sample_rate_hz;
	} else if (f->src == SRC_SIGMF) {
		g->format = f->src_fmt;
		g->sample_rate_hz = f->meta.sample_rate_hz;
	}
	if (!g->slots)   /* slots = auto: chirpd sizes it; 16 here */
		g->slots = 16;
	tool_geom_apply(&f->geom, g);
	if (!g->channels) {
		log_err("--create needs a geometry: -c chirpd.conf, --geometry C,P,R, or a recording with chirp: geometry");
		return -EINVAL;
	}
	if (g->sample_rate_hz <= 0)
		g->sample_rate_hz = 1;   /* informational only */
	return 0;
}

static const char *ring_default(const struct feed *f)
{
	if (f->ring_name)
		return f->ring_name;
	if (f->have_cfg && f->cfg.input_ring[0])
		return f->cfg.input_ring;
	return "/chirpd-in";
}

/* A raw file must hold whole CPIs of the ring's layout; it is replayed in
 * the ring's own format. */
static int match_file(struct feed *f)
{
	const struct chirp_ring_geometry *g = &f->geo;

	if (f->map_len % f->cpi_bytes) {
		log_err("%s: %zu bytes is not a whole number of CPIs of %" PRIu64
			" bytes (ring %s: %ux%ux%u %s)", f->file_path, f->map_len,
			f->cpi_bytes, ring_default(f), g->channels, g->pulses, g->samples,
			tool_ring_format_name(g->format));
		return -EINVAL;
	}
	f->src_fmt = g->format;
	f->src_cpi_bytes = f->cpi_bytes;
	f->src_ncpi = f->map_len / f->cpi_bytes;
	return 0;
}

/* A mode id that the recording (chirp:modes) and -c name differently is
 * likely another radar's mode: say so, once per id. */
static void recording_mode_names(const struct feed *f)
{
	for (size_t i = 0; f->have_cfg && i < f->meta.nmodes; i++) {
		const struct sigmf_mode_name *r = &f->meta.modes[i];
		int c = config_mode_index(&f->cfg, r->id);

		if (c >= 0 && strcmp(f->cfg.modes[c].name, r->name) != 0)
			log_warn("%s: mode %" PRIu32 " was '%s' when recorded, %s calls it '%s'",
				 f->sigmf_base, r->id, r->name, f->config_path, f->cfg.modes[c].name);
	}
}

/*
 * The recording's mode of each CPI (chirp:mode), kept for replay unless
 * --modes replaces it. A mode -c does not declare is replayed as
 * recorded, with a warning: the recording is what the radar sent.
 */
static int recording_modes(struct feed *f, uint64_t cpi_samples)
{
	free(f->src_modes);
	f->src_modes = NULL;
	if (!f->meta.has_modes)
		return 0;
	if (f->schedule) {
		log_notice("%s: --modes replaces the recording's own modes", f->sigmf_base);
		return 0;
	}
	f->src_modes = calloc(f->src_ncpi, sizeof(*f->src_modes));
	if (!f->src_modes) {
		log_err("out of memory");
		return -ENOMEM;
	}
	sigmf_cpi_modes(&f->meta, cpi_samples, f->src_modes, f->src_ncpi);
	recording_mode_names(f);
	for (uint64_t k = 0; f->have_cfg && k < f->src_ncpi; k++) {
		if (config_mode_index(&f->cfg, f->src_modes[k]) < 0) {
			log_warn("%s: CPI %" PRIu64 " is of mode %" PRIu32 ", which %s does not "
				 "declare: chirpd will flag it UNKNOWN_MODE", f->sigmf_base, k,
				 f->src_modes[k], f->config_path);
			break;
		}
	}
	return 0;
}

/*
 * The recording's pointing of each CPI (chirp:pointing), kept for replay
 * unless --pointing replaces it.
 */
static int recording_pointing(struct feed *f, uint64_t cpi_samples)
{
	float *az, *el;

	free(f->src_pointing);
	f->src_pointing = NULL;
	if (!f->meta.has_pointing)
		return 0;
	if (f->psched) {
		log_notice("%s: --pointing replaces the recording's own pointing", f->sigmf_base);
		return 0;
	}
	f->src_pointing = calloc(f->src_ncpi, sizeof(*f->src_pointing));
	az = calloc(f->src_ncpi, 2 * sizeof(*az));
	if (!f->src_pointing || !az) {
		free(az);
		log_err("out of memory");
		return -ENOMEM;
	}
	el = az + f->src_ncpi;
	sigmf_cpi_pointing(&f->meta, cpi_samples, az, el, f->src_ncpi);
	for (uint64_t k = 0; k < f->src_ncpi; k++) {
		f->src_pointing[k][0] = az[k];
		f->src_pointing[k][1] = el[k];
	}
	free(az);
	return 0;
}

/* A recording must match the ring's geometry and (unless --ignore-rate) its
 * sample rate; its format is converted to the ring's. */
static int match_sigmf(struct feed *f)
{
	const struct chirp_ring_geometry *g = &f->geo;
	uint64_t cpi_samples = (uint64_t)g->channels * g->pulses * g->samples;
	char err[512];

	if (f->meta.channels && (f->meta.channels != g->channels ||
	    f->meta.pulses != g->pulses || f->meta.samples != g->samples)) {
		log_err("%s: recording geometry %ux%ux%u does not match ring %s (%ux%ux%u)",
			f->sigmf_base, f->meta.channels, f->meta.pulses, f->meta.samples,
			ring_default(f), g->channels, g->pulses, g->samples);
		return -EINVAL;
	}
	if (sigmf_check_data(&f->meta, f->map_len, cpi_samples, err, sizeof(err)) < 0) {
		log_err("%s: %s", f->sigmf_base, err);
		return -EINVAL;
	}
	if (fabs(f->meta.sample_rate_hz - g->sample_rate_hz) > 1e-6 * g->sample_rate_hz) {
		if (!f->ignore_rate) {
			log_err("%s: recorded at %.6g Hz but ring %s runs at %.6g Hz "
				"(--ignore-rate to replay anyway)", f->sigmf_base,
				f->meta.sample_rate_hz, ring_default(f), g->sample_rate_hz);
			return -EINVAL;
		}
		log_warn("%s: recorded at %.6g Hz, ring at %.6g Hz (--ignore-rate)",
			 f->sigmf_base, f->meta.sample_rate_hz, g->sample_rate_hz);
	}
	if (f->src_fmt != g->format)
		log_notice("converting %s to the ring's %s", sigmf_datatype_name(f->meta.datatype),
			   tool_ring_format_name(g->format));
	f->src_cpi_bytes = cpi_samples * fmt_bytes(f->src_fmt);
	f->src_ncpi = f->map_len / f->src_cpi_bytes;
	if (recording_pointing(f, cpi_samples) < 0)
		return -ENOMEM;
	return recording_modes(f, cpi_samples);
}

/*
 * Check the (new) ring geometry against the source. For synthetic echoes a
 * mismatch re-reads the configuration once (chirpd re-creates its ring
 * after a reload of that same file). Returns 0 or -EINVAL.
 */
static int match_source(struct feed *f, int may_reload)
{
	const struct chirp_ring_geometry *g = &f->geo;

	f->cpi_bytes = chirp_ring_cpi_bytes(g);
	if (g->format != CHIRP_RING_CF32 && g->format != CHIRP_RING_SC16 && f->src != SRC_FILE) {
		/* Raw replay works on any ring (to test consumers of output rings). */
		log_err("ring %s holds %s (chirpd's output): synthetic echoes and SigMF "
			"recordings need a cf32 or sc16 ring", ring_default(f),
			tool_ring_format_name(g->format));
		return -EINVAL;
	}
	switch (f->src) {
	case SRC_SYNTH:
		if (tool_ring_fits_config(g, &f->cfg, PLAN_RING_IN))
			break;
		if (may_reload) {
			log_notice("ring %s is %ux%ux%u %s, %s says %ux%ux%u %s: re-reading %s",
				   ring_default(f), g->channels, g->pulses, g->samples,
				   tool_ring_format_name(g->format), f->config_path, f->cfg.channels,
				   f->cfg.pulses, f->cfg.samples, pc_format_name(f->cfg.format),
				   f->config_path);
			if (load_config(f) < 0 || check_schedule(f) < 0 || build_synth(f) < 0)
				return -EINVAL;
			return match_source(f, 0);
		}
		log_err("ring %s is %ux%ux%u %s but %s describes %ux%ux%u %s",
			ring_default(f), g->channels, g->pulses, g->samples,
			tool_ring_format_name(g->format), f->config_path, f->cfg.channels,
			f->cfg.pulses, f->cfg.samples, pc_format_name(f->cfg.format));
		return -EINVAL;
	case SRC_FILE:
		if (match_file(f) < 0)
			return -EINVAL;
		break;
	case SRC_SIGMF:
		if (match_sigmf(f) < 0)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	free(f->written);
	f->written = NULL;
	if (f->prefilled) {
		f->written = calloc(g->slots, sizeof(*f->written));
		if (!f->written) {
			log_err("out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

static int open_ring(struct feed *f, int may_reload)
{
	char err[512];

	if (f->create && !f->created) {
		struct chirp_ring_geometry g;

		if (create_geometry(f, &g) < 0)
			return -EINVAL;
		f->ring = chirp_ring_create(ring_default(f), &g, CHIRP_RING_PRODUCER, &f->ropts,
					    err, sizeof(err));
		/* Once made, a re-created ring is someone else's: attach to it. */
		f->created = f->ring != NULL;
	} else {
		f->ring = tool_attach_wait(ring_default(f), CHIRP_RING_PRODUCER, &f->ropts, f->wait_s,
					   &stop_sig, err, sizeof(err));
	}
	if (!f->ring) {
		if (stop_sig)
			return -EINTR;
		log_err("%s%s", err, f->create ? "" : (f->wait_s > 0 ? " (gave up waiting)" : ""));
		return -ENOENT;
	}
	chirp_ring_geometry(f->ring, &f->geo);
	return match_source(f, may_reload);
}

static void convert(const uint8_t *src, uint32_t sfmt, uint8_t *dst, uint32_t dfmt,
		    uint64_t nvals, uint64_t *clipped)
{
	if (sfmt == dfmt) {
		memcpy(dst, src, nvals * (sfmt == CHIRP_RING_CF32 ? 4 : 2));
		return;
	}
	if (sfmt == CHIRP_RING_SC16) {   /* -> cf32, exact */
		const int16_t *s = (const int16_t *)src;
		float *d = (float *)dst;

		for (uint64_t i = 0; i < nvals; i++)
			d[i] = (float)s[i] * (1.0f / 32768.0f);
		return;
	}
	{                                 /* cf32 -> sc16, saturating */
		const float *s = (const float *)src;
		int16_t *d = (int16_t *)dst;

		for (uint64_t i = 0; i < nvals; i++) {
			float q = nearbyintf(s[i] * 32768.0f);

			if (!(q <= 32767.0f && q >= -32768.0f)) {   /* also NaN */
				(*clipped)++;
				q = q > 0 ? 32767.0f : -32768.0f;
			}
			d[i] = (int16_t)q;
		}
	}
}

/*
 * Fill a slot with CPI k of the source. Synthetic echoes use CPI k's mode;
 * a mode the configuration does not have (--allow-unknown-modes) gets the
 * first configured mode's echoes, so that a chirpd which filtered it anyway
 * would show it (its output must be all NaN).
 */
static void fill(struct feed *f, uint64_t k, void *payload)
{
	if (f->src == SRC_SYNTH) {
		if (synth_generate_mode(f->synth, k, mode_of(f, k), payload, f->cpi_bytes) == -ENOENT)
			synth_generate(f->synth, k, payload, f->cpi_bytes);
		return;
	}
	if (f->src_fmt == f->geo.format) {   /* any format, det lists too: as is */
		memcpy(payload, f->map + (k % f->src_ncpi) * f->src_cpi_bytes, f->cpi_bytes);
		return;
	}
	convert(f->map + (k % f->src_ncpi) * f->src_cpi_bytes, f->src_fmt, payload,
		f->geo.format, 2ull * f->geo.channels * f->geo.pulses * f->geo.samples,
		&f->clipped);
}

/*
 * --prefilled: reserve every slot that is free now and write CPIs k, k+1,
 * ... into them, before the first commit (with --rate, before the clock
 * starts); the loop then commits these reservations in order and only
 * commits afterwards (the slots stay written). Returns the number primed
 * (never drops: only slots the consumer has released are taken), at most
 * max.
 */
static uint64_t prime(struct feed *f, uint64_t k, uint64_t max)
{
	struct chirp_ring_stats st;
	uint64_t n = 0, busy, want;
	void *base, *payload;
	size_t len;

	if (chirp_ring_stats(f->ring, &st) < 0)
		return 0;
	busy = st.committed - st.released;   /* committed, not yet handed back */
	want = busy < f->geo.slots ? f->geo.slots - busy : 0;
	if (want > max)
		want = max;   /* --count: never reserve what will not be sent */
	chirp_ring_data(f->ring, &base, &len);
	while (n < want && !stop_sig && chirp_ring_reserve_next(f->ring, &payload) == 0) {
		uint64_t slot = (uint64_t)((uint8_t *)payload - (uint8_t *)base) /
				chirp_ring_slot_bytes(f->ring);

		fill(f, k + n, payload);
		if (slot < f->geo.slots)
			f->written[slot] = 1 + (uint64_t)mode_of(f, k + n);
		n++;
	}
	return n;
}

static void reattach(struct feed *f, const char *why)
{
	log_notice("ring %s %s: re-attaching", ring_default(f), why);
	chirp_ring_detach(f->ring);
	f->ring = NULL;
}

/* The state of the send loop in main. */
struct feed_loop {
	uint64_t k;                     /* index of the next CPI of the source */
	uint64_t sent, dropped;
	uint64_t limit;                 /* CPIs to send (0: no end)           */
	uint64_t ticked;                /* k whose due time has come (--rate)  */
	uint64_t attaches, primed_epoch;   /* prime once per attach           */
	double t0;                      /* mono_s() at the start            */
};

/* A finite source without --loop ends after its last CPI, or at --count. */
static uint64_t source_limit(const struct feed *f, uint64_t limit)
{
	if (f->src != SRC_SYNTH && !f->loop && (!limit || limit > f->src_ncpi))
		limit = f->src_ncpi;
	return limit;
}

/* Reserve a slot and fill it with CPI k. 1: filled, commit it; 0: nothing to
 * commit this pass (full ring, re-attach, waiting); -EIO on an error. */
static int feed_reserve(struct feed *f, struct feed_loop *L, struct tool_progress *prog)
{
	void *payload;
	int r;

	if (f->block) {
		r = chirp_ring_wait(f->ring, 100000000LL);
		if (r == -ETIMEDOUT || r == -EINTR) {
			r = chirp_ring_check(f->ring, NULL, 0);
			if (r == -ESTALE)
				reattach(f, "was removed or re-created");
			tool_progress(prog, 0, "sent %" PRIu64 "  dropped %" PRIu64 "  (waiting for space)",
				      L->sent, L->dropped);
			return 0;
		}
	}
	r = chirp_ring_reserve(f->ring, &payload);
	if (r == -ENOBUFS) {
		L->dropped++;
		L->k++;
		return 0;
	}
	if (r == -ESTALE) {
		reattach(f, "was removed or re-created");
		return 0;
	}
	if (r < 0) {
		log_err("reserve on ring %s: %s", ring_default(f), strerror(-r));
		return -EIO;
	}
	if (f->written) {
		void *base;
		size_t len;
		uint64_t slot;

		chirp_ring_data(f->ring, &base, &len);
		slot = (uint64_t)((uint8_t *)payload - (uint8_t *)base) / chirp_ring_slot_bytes(f->ring);
		/* written once, again only for a CPI of another mode */
		if (slot < f->geo.slots && f->written[slot] != 1 + (uint64_t)mode_of(f, L->k)) {
			fill(f, L->k, payload);
			f->written[slot] = 1 + (uint64_t)mode_of(f, L->k);
		}
	} else {
		fill(f, L->k, payload);
	}
	return 1;
}

/* Commit the reserved slot as CPI k. 0: committed or re-attaching; -EIO on
 * an error. */
static int feed_commit(struct feed *f, struct feed_loop *L, struct tool_progress *prog)
{
	struct chirp_ring_cpi cpi = {
		.first_sample = L->k * (uint64_t)f->geo.pulses * f->geo.samples,
		.mode = mode_of(f, L->k),
	};
	int r;

	pointing_of(f, L->k, &cpi.pointing_az_deg, &cpi.pointing_el_deg);
	r = chirp_ring_commit_cpi(f->ring, &cpi);

	if (r == -ESTALE) {
		reattach(f, "was removed or re-created");
		return 0;
	}
	if (r < 0) {
		log_err("commit on ring %s: %s", ring_default(f), strerror(-r));
		return -EIO;
	}
	L->sent++;
	L->k++;
	if (prog->on) {
		double dt = mono_s() - L->t0;
		char of[32] = "";

		if (L->limit)
			snprintf(of, sizeof(of), "/%" PRIu64, L->limit);
		tool_progress(prog, 0, "sent %" PRIu64 "%s  dropped %" PRIu64
			      "  %.1f CPI/s  %.1f MB/s", L->sent, of, L->dropped,
			      dt > 0 ? L->sent / dt : 0,
			      dt > 0 ? L->sent * (double)f->cpi_bytes / dt / 1e6 : 0);
	}
	return 0;
}

/* One pass of the send loop: (re-)attach, prime and pace with --rate, then
 * send one CPI. 0: go on; < 0: stop (-EINTR: interrupted while attaching). */
static int feed_step(struct feed *f, struct feed_loop *L, struct tool_progress *prog)
{
	int r;

	if (!f->ring) {
		r = open_ring(f, 1);
		if (r < 0)
			return r;
		L->attaches++;
		L->limit = source_limit(f, L->limit);
	}
	if (f->written && L->primed_epoch != L->attaches) {
		/* before the first commit and the clock (re)start: see prime() */
		L->primed_epoch = L->attaches;
		prime(f, L->k, L->limit ? L->limit - L->k : UINT64_MAX);
		f->sched_t0_ns = mono_ns();
		f->sched_n = 0;
	}
	if (f->rate > 0 && L->ticked != L->k) {
		if (pace_tick(f) < 0)
			return 0;   /* a signal: re-check stop; same due time */
		L->ticked = L->k;
	}
	/* A slot already reserved was primed: written before the clock started. */
	if (chirp_ring_reserved(f->ring) == 0) {
		r = feed_reserve(f, L, prog);
		if (r <= 0)
			return r;
	}
	return feed_commit(f, L, prog);
}

static void feed_summary(const struct feed *f, const struct feed_loop *L,
			 struct tool_progress *prog)
{
	double t_end = mono_s() - L->t0;

	tool_progress_end(prog);
	fprintf(stderr, "chirp-feed: sent %" PRIu64 ", dropped %" PRIu64 " (ring full), "
		"%.1f CPI/s, %.1f MB/s over %.2f s%s\n", L->sent, L->dropped,
		t_end > 0 ? L->sent / t_end : 0.0,
		t_end > 0 ? L->sent * (double)f->cpi_bytes / t_end / 1e6 : 0.0, t_end,
		stop_sig ? " (interrupted)" : "");
	if (f->rate > 0)
		fprintf(stderr, "chirp-feed: pacing %.6g CPI/s: %" PRIu64 " late ticks (woke more "
			"than half a period late: schedule restarted, no catch-up), max lateness "
			"%.1f us\n", f->rate, f->late_ticks, f->late_max_ns / 1e3);
	if (f->clipped)
		log_warn("%" PRIu64 " samples saturated converting cf32 to sc16", f->clipped);
	if (f->synth && synth_clipped(f->synth))
		log_warn("%" PRIu64 " sc16 samples saturated (noise peaks above full scale)",
			 synth_clipped(f->synth));
}

static void feed_free(struct feed *f)
{
	if (f->ring) {
		chirp_ring_detach(f->ring);
		if (f->created && !f->keep)
			chirp_ring_unlink(ring_default(f));
	}
	synth_destroy(f->synth);
	sigmf_meta_free(&f->meta);
	free(f->written);
	free(f->schedule);
	free(f->src_modes);
	free(f->psched);
	free(f->src_pointing);
	if (f->map)
		munmap((void *)f->map, f->map_len);
}

int main(int argc, char **argv)
{
	struct feed f;
	struct feed_loop L = { .ticked = UINT64_MAX, .attaches = 1 };
	struct tool_progress prog;
	int rc = 1, r;

	memset(&f, 0, sizeof(f));
	sigmf_meta_init(&f.meta);
	log_init(argv[0]);
	if (parse_args(&f, argc, argv) < 0)
		return 2;
	if (tool_catch_signals(&stop_sig) < 0) {
		log_err("sigaction: %s", strerror(errno));
		return 1;
	}
	if (prepare_source(&f) < 0)
		goto out;
	r = open_ring(&f, 1);
	if (r < 0) {
		rc = r == -EINTR ? 0 : 1;
		goto out;
	}
	L.limit = source_limit(&f, f.count);
	tool_progress_init(&prog, f.quiet);
	if (f.rate > 0)
		f.period_ns = 1e9 / f.rate;
	L.t0 = mono_s();
	f.sched_t0_ns = mono_ns();

	rc = 0;
	while (!stop_sig && (!L.limit || L.k < L.limit)) {
		r = feed_step(&f, &L, &prog);
		if (r < 0) {
			rc = r == -EINTR ? 0 : 1;
			break;
		}
	}
	feed_summary(&f, &L, &prog);
out:
	feed_free(&f);
	return rc;
}
