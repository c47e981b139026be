/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirp-send — a digitizer stand-in for tests and demos: emits synthetic
 * CPIs (the generator chirp-feed uses, src/tools/synth.h) or a SigMF
 * recording as VITA 49.2 (DIFI) or plain-UDP packets, paced by their
 * timestamps, optionally losing and reordering a given fraction of
 * packets (seeded). Usage: chirp-send --help, chirp-send(1),
 * doc/network.md.
 *
 * Timeline: CPI k's pulse p starts at stream sample
 *     t0 + k * pulses * pri + p * pri
 * (t0 = --t0 seconds times the sample rate; pri = --pri-samples, or
 * fs / --prf, or samples per pulse); the receive window of each pulse, its
 * first `samples` samples, is sent, channel after channel, in packets of
 * at most --max-payload bytes. With the defaults, CPI k's first_sample in
 * chirp-recv's ring is k * P * R, as chirp-feed numbers it, so
 * chirp-tap --verify checks the network path like the direct one.
 *
 * Pacing: pulse n (counted from the start) is sent at start + n / (rate *
 * pulses), rate = --rate CPIs per second, by default the real-time rate
 * fs / (pulses * pri). A sender that falls behind sends at once, never
 * skipping.
 *
 * Threads (--threads N): thread i sends the channels c with c mod N == i
 * from a socket of its own, every thread paced from one start time, so
 * that the channels of a pulse leave together as a digitizer's do (two
 * sender processes would each pace from their own start). The CPI's
 * samples are shared read-only: a recording's mapping, or --same-cpi's
 * one synthesized CPI. With --same-cpi that CPI is also converted to its
 * wire format once (s->wire), and each datagram is sent as two pieces, its
 * header and its payload straight from there (sendmmsg's iovec): the
 * sender's work per datagram is then the header and the kernel's copy, as
 * a benchmark's sender's must be, so that the receiver is what is
 * measured.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>

#include "chirp/ring.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "sigmf.h"
#include "synth.h"
#include "timeutil.h"
#include "tool.h"
#include "vrt.h"

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2 };

struct send {
	/* options */
	const char *config_path, *dest, *sigmf_base, *drop_log_path;
	struct tool_synth_opts syn;      /* --target, --prf, noise, --seed     */
	int plain, tsf_samples;
	int same_cpi, cpi_loaded;        /* --same-cpi; s->cpi holds a CPI     */
	unsigned vrt_fmt;                /* 0: from the source's format        */
	uint32_t stream_base;
	double rate, drop, reorder, bandwidth_hz, rf_hz, t0_s;
	uint64_t count, start, net_seed, pri_samples, max_payload, context_every;

	/* source */
	struct chirp_config cfg;
	int have_cfg;
	struct synth *synth;
	struct synth_target targets[SYNTH_MAX_TARGETS];
	size_t ntargets;
	struct sigmf_meta meta;
	const uint8_t *map;
	size_t map_len;
	uint64_t src_ncpi;
	unsigned C, P, R;
	uint32_t fmt;                    /* CHIRP_RING_SC16 or CF32 (host order) */
	double fs;
	uint64_t fs_int, pri;
	uint8_t *cpi;                    /* one CPI, host order                */
	size_t cpi_bytes;
	uint8_t *wire;                   /* --same-cpi: the CPI as sent (wire_fmt) */

	/* network */
	unsigned threads;                /* --threads: lanes                    */
	struct lane *lane;               /* [threads]                          */
	double t_start;                  /* every lane paces from it (mono_s)   */
	double t_end;                    /* the last lane done (mono_s); 0: not yet */
	uint8_t *vrt_count;              /* [channels]: packet count mod 16
					    (a channel is one lane's)          */
	uint32_t *plain_seq;             /* [channels]                          */
	FILE *drop_log;
};

#define SEND_BATCH 32   /* datagrams per sendmmsg at most */

/* One sending thread: its channels (c mod threads == idx), its socket, its
 * loss and reorder state, its counters. */
struct lane {
	struct send *s;
	unsigned idx;
	pthread_t th;
	int started, rc;
	int fd;
	/* Packets queued for one sendmmsg: built in place in q (cap bytes
	 * each), with their payload there too or at ext (s->wire), sent when
	 * SEND_BATCH are queued or the lane waits for its next pulse's time.
	 * held: one held back behind the next (--reorder). */
	uint8_t *q, *held;
	size_t cap, held_len, held_ext_len;
	const uint8_t *held_ext;
	unsigned nq;
	struct mmsghdr msg[SEND_BATCH];
	struct iovec iov[SEND_BATCH][2];
	const uint8_t *ext[SEND_BATCH];
	size_t ext_len[SEND_BATCH];
	uint64_t rng;
	uint64_t sent, dropped, reordered, refused, bytes, cpis;
};

#define MAX_THREADS 64

static volatile sig_atomic_t stop_sig;

static void usage(FILE *f)
{
	fprintf(f,
"usage: chirp-send -c chirpd.conf [options]      synthetic CPIs\n"
"       chirp-send --sigmf BASE [options]        a recording (ci16_le or cf32_le)\n"
"Send CPIs as VITA 49.2 (DIFI) or plain-UDP packets, paced by their timestamps.\n"
"  -c, --config FILE        geometry, format, waveform and sample rate of the synthesis\n"
"  -d, --dest HOST:PORT     where to send (default 127.0.0.1:4991)\n"
"      --framing vrt|plain  VITA 49.2 (default) or chirpd's plain framing\n"
"      --payload sc16|cf32  VRT payload (default: the source's format)\n"
"      --tsf ps|samples     VRT fractional timestamp: picoseconds (DIFI, default)\n"
"                           or sample count\n"
"      --stream-base ID     VRT stream ID of channel c is ID + c (default 0)\n"
"      --context-every N    a context packet per channel every N CPIs (default 16,\n"
"                           0: none)\n"
"      --bandwidth HZ, --rf HZ  fields of the context packets\n"
"  -n, --count N            CPIs to send (default: 100; 0 = until stopped, or\n"
"                           the recording's length)\n"
"      --start K            first CPI index (default 0)\n"
"      --rate R             CPIs per second (default: real time)\n"
"      --pri-samples N      pulse period in samples (default: fs / --prf when\n"
"                           --prf is given, else samples per pulse)\n"
"      --t0 SECONDS         time of stream sample 0 (default 0)\n"
"      --max-payload BYTES  payload bytes per packet (default 1408)\n"
"      --drop F             lose each packet with probability F (0..1)\n"
"      --reorder F          send each packet after the next one with probability F\n"
"      --net-seed N         seed of --drop and --reorder (default 1)\n"
"      --drop-log FILE      a JSON line per CPI that lost samples\n"
"      --same-cpi           make the first CPI's samples once and send them for\n"
"                           every CPI (timestamps advance): benchmarks\n"
"      --threads N          sending threads, channel c on thread c mod N, each\n"
"                           with its own socket, all paced from one start\n"
"                           (default 1; N > 1: a recording or --same-cpi)\n"
"      --sigmf BASE         replay a SigMF recording instead of synthesis\n"
TOOL_SYNTH_USAGE
"  -q, --quiet              errors only\n"
"  -h, --help\n");
}

enum {
	O_FRAMING = 256, O_PAYLOAD, O_TSF, O_SID, O_CTX, O_BW, O_RF, O_COUNT, O_START, O_RATE,
	O_PRI, O_T0, O_MAXPL, O_DROP, O_REORDER, O_NETSEED, O_DROPLOG, O_SIGMF, O_SAME,
	O_THREADS,
};

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "dest", required_argument, NULL, 'd' },
	{ "framing", required_argument, NULL, O_FRAMING },
	{ "payload", required_argument, NULL, O_PAYLOAD },
	{ "tsf", required_argument, NULL, O_TSF },
	{ "stream-base", required_argument, NULL, O_SID },
	{ "context-every", required_argument, NULL, O_CTX },
	{ "bandwidth", required_argument, NULL, O_BW },
	{ "rf", required_argument, NULL, O_RF },
	{ "count", required_argument, NULL, 'n' },
	{ "start", required_argument, NULL, O_START },
	{ "rate", required_argument, NULL, O_RATE },
	{ "pri-samples", required_argument, NULL, O_PRI },
	{ "t0", required_argument, NULL, O_T0 },
	{ "max-payload", required_argument, NULL, O_MAXPL },
	{ "drop", required_argument, NULL, O_DROP },
	{ "reorder", required_argument, NULL, O_REORDER },
	{ "net-seed", required_argument, NULL, O_NETSEED },
	{ "drop-log", required_argument, NULL, O_DROPLOG },
	{ "same-cpi", no_argument, NULL, O_SAME },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "sigmf", required_argument, NULL, O_SIGMF },
	TOOL_SYNTH_LONG_OPTS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int u64_opt(const char *opt, const char *a, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char want[80];

	if (tool_parse_u64(a, v) == 0 && *v >= lo && *v <= hi)
		return 0;
	snprintf(want, sizeof(want), "want an integer %" PRIu64 "..%" PRIu64, lo, hi);
	return tool_bad_arg(opt, a, want);
}

static int dbl_opt(const char *opt, const char *a, double lo, double hi, double *v)
{
	char want[80];

	if (tool_parse_double(a, v) == 0 && *v >= lo && *v <= hi)
		return 0;
	snprintf(want, sizeof(want), "want a number %g..%g", lo, hi);
	return tool_bad_arg(opt, a, want);
}

static int opt_one(struct send *s, int c, const char *a)
{
	uint64_t v;

	switch (c) {
	case 'c': s->config_path = a; return 0;
	case 'd': s->dest = a; return 0;
	case 'q': log_set_level(LOG_ERR); return 0;
	case O_FRAMING:
		if (strcmp(a, "vrt") && strcmp(a, "plain"))
			return tool_bad_arg("--framing", a, "want vrt or plain");
		s->plain = !strcmp(a, "plain");
		return 0;
	case O_PAYLOAD:
		if (strcmp(a, "sc16") && strcmp(a, "cf32"))
			return tool_bad_arg("--payload", a, "want sc16 or cf32");
		s->vrt_fmt = !strcmp(a, "sc16") ? VRT_PLAIN_SC16_BE : VRT_PLAIN_CF32_BE;
		return 0;
	case O_TSF:
		if (strcmp(a, "ps") && strcmp(a, "samples"))
			return tool_bad_arg("--tsf", a, "want ps or samples");
		s->tsf_samples = !strcmp(a, "samples");
		return 0;
	case O_SID:
		if (u64_opt("--stream-base", a, 0, UINT32_MAX, &v) < 0)
			return -EINVAL;
		s->stream_base = (uint32_t)v;
		return 0;
	case O_CTX: return u64_opt("--context-every", a, 0, UINT32_MAX, &s->context_every);
	case O_BW: return dbl_opt("--bandwidth", a, 0, 1e12, &s->bandwidth_hz);
	case O_RF: return dbl_opt("--rf", a, 0, 1e12, &s->rf_hz);
	case 'n': return u64_opt("--count", a, 0, UINT64_MAX, &s->count);
	case O_START: return u64_opt("--start", a, 0, 1ull << 40, &s->start);
	case O_RATE: return dbl_opt("--rate", a, 1e-3, 1e7, &s->rate);
	case O_PRI: return u64_opt("--pri-samples", a, 1, 1ull << 32, &s->pri_samples);
	case O_T0: return dbl_opt("--t0", a, 0, 4e9, &s->t0_s);
	case O_MAXPL: return u64_opt("--max-payload", a, 8, 65400, &s->max_payload);
	case O_DROP: return dbl_opt("--drop", a, 0, 1, &s->drop);
	case O_REORDER: return dbl_opt("--reorder", a, 0, 1, &s->reorder);
	case O_NETSEED: return u64_opt("--net-seed", a, 0, UINT64_MAX, &s->net_seed);
	case O_DROPLOG: s->drop_log_path = a; return 0;
	case O_SAME: s->same_cpi = 1; return 0;
	case O_THREADS:
		if (u64_opt("--threads", a, 1, MAX_THREADS, &v) < 0)
			return -EINVAL;
		s->threads = (unsigned)v;
		return 0;
	case O_SIGMF: s->sigmf_base = a; return 0;
	default:   /* the synthesis options, or not an option */
		return tool_synth_opt(&s->syn, c, a) == 1 ? 0 : -EINVAL;
	}
}

static int parse_args(struct send *s, int argc, char **argv)
{
	int c;

	s->dest = "127.0.0.1:4991";
	s->count = 100;
	s->context_every = 16;
	s->max_payload = 1408;
	s->net_seed = 1;
	s->threads = 1;
	tool_synth_opts_init(&s->syn);
	while ((c = getopt_long(argc, argv, "c:d:n:qh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(EXIT_OK);
		}
		if (c == '?' || opt_one(s, c, optarg) < 0)
			return -EINVAL;
	}
	if (optind < argc) {
		log_err("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	if (!s->config_path == !s->sigmf_base) {
		log_err("give -c chirpd.conf (synthesis) or --sigmf BASE (a recording)");
		return -EINVAL;
	}
	if (s->syn.prf_hz > 0 && s->pri_samples) {
		log_err("--prf and --pri-samples are alternatives");
		return -EINVAL;
	}
	if (s->threads > 1 && !s->sigmf_base && !s->same_cpi) {
		log_err("--threads %u: the threads share a recording or --same-cpi's CPI; "
			"synthesis per CPI is one thread's", s->threads);
		return -EINVAL;
	}
	if (s->threads > 1 && s->drop_log_path) {
		log_err("--drop-log counts a CPI's losses on one thread: give --threads 1");
		return -EINVAL;
	}
	if (s->sigmf_base && tool_synth_given(&s->syn)) {
		log_err("--sigmf replays a recording: the synthesis options do not apply");
		return -EINVAL;
	}
	return tool_synth_check(&s->syn);
}

/* ---- the source ------------------------------------------------------- */

static int synth_source(struct send *s)
{
	struct chirp_ring_geometry g;
	double noise = 0;
	int n = config_load(&s->cfg, s->config_path, stderr);

	if (n != 0) {
		if (n > 0)
			log_err("%s: %d error%s", s->config_path, n, n == 1 ? "" : "s");
		return -EINVAL;
	}
	s->have_cfg = 1;
	if (tool_synth_targets(&s->syn, &s->cfg, s->config_path, s->targets, &s->ntargets,
			       &noise) < 0)
		return -EINVAL;
	s->synth = tool_synth_create(&s->syn, &s->cfg, s->targets, s->ntargets, noise);
	if (!s->synth)
		return -EINVAL;
	plan_ring_geometry(&s->cfg, PLAN_RING_IN, &g);
	s->C = g.channels;
	s->P = g.pulses;
	s->R = g.samples;
	s->fmt = g.format;
	s->fs = s->cfg.wf.sample_rate_hz;
	return 0;
}

static int sigmf_source(struct send *s)
{
	char meta[4096], data[4096], err[512];
	struct stat st;
	int fd;
	void *p;

	if (sigmf_paths(s->sigmf_base, meta, data, sizeof(meta)) < 0) {
		log_err("--sigmf %s: name too long", s->sigmf_base);
		return -EINVAL;
	}
	if (sigmf_meta_read(meta, &s->meta, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return -EINVAL;
	}
	if (s->meta.datatype == SIGMF_RF32_LE || !s->meta.channels) {
		log_err("%s: chirp-send replays ci16_le or cf32_le recordings with a chirp "
			"geometry (chirp-tap --sigmf of an input ring)", meta);
		return -EINVAL;
	}
	fd = open(data, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		log_err("%s: %s", data, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	if (sigmf_check_data(&s->meta, (uint64_t)st.st_size, 0, err, sizeof(err)) < 0 ||
	    st.st_size == 0) {
		log_err("%s", st.st_size ? err : "empty recording");
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		log_err("mmap %s: %s", data, strerror(errno));
		return -EINVAL;
	}
	s->map = p;
	s->map_len = (size_t)st.st_size;
	s->C = s->meta.channels;
	s->P = s->meta.pulses;
	s->R = s->meta.samples;
	s->fmt = s->meta.datatype == SIGMF_CI16_LE ? CHIRP_RING_SC16 : CHIRP_RING_CF32;
	s->fs = s->meta.sample_rate_hz;
	return 0;
}

static int prepare(struct send *s)
{
	int rc = s->config_path ? synth_source(s) : sigmf_source(s);

	if (rc < 0)
		return rc;
	if (s->fmt != CHIRP_RING_SC16 && s->fmt != CHIRP_RING_CF32) {
		log_err("the source's format must be sc16 or cf32");
		return -EINVAL;
	}
	if (!(s->fs >= 1) || fabs(s->fs - llround(s->fs)) > 1e-6) {
		log_err("sample rate %g Hz: timestamps need a whole number of Hz", s->fs);
		return -EINVAL;
	}
	s->fs_int = (uint64_t)llround(s->fs);
	s->cpi_bytes = (size_t)s->C * s->P * s->R * (s->fmt == CHIRP_RING_SC16 ? 4 : 8);
	if (s->map) {
		s->src_ncpi = s->map_len / s->cpi_bytes;
		if (s->count == 0 || s->count > s->src_ncpi)
			s->count = s->src_ncpi;
	}
	if (s->pri_samples)
		s->pri = s->pri_samples;
	else if (s->syn.prf_hz > 0)
		s->pri = (uint64_t)llround(s->fs / s->syn.prf_hz);
	else
		s->pri = s->R;
	if (s->pri < s->R) {
		log_err("pulse period %" PRIu64 " samples is shorter than %u samples per pulse",
			s->pri, s->R);
		return -EINVAL;
	}
	if (!s->vrt_fmt)
		s->vrt_fmt = s->fmt == CHIRP_RING_SC16 ? VRT_PLAIN_SC16_BE : VRT_PLAIN_CF32_BE;
	if (!(s->rate > 0))
		s->rate = (double)s->fs_int / ((double)s->P * (double)s->pri);
	s->cpi = malloc(s->cpi_bytes);
	s->vrt_count = calloc(s->C, 1);
	s->plain_seq = calloc(s->C, sizeof(uint32_t));
	if (!s->cpi || !s->vrt_count || !s->plain_seq) {
		log_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* CPI k's samples (host order) at *cpi: the recording's k-th CPI in place,
 * or synthesized into s->cpi (with --same-cpi only the first call makes
 * them: the sender's rate is then bounded by packets, not by synthesis). */
static int load_cpi(struct send *s, uint64_t k, const uint8_t **cpi)
{
	int rc;

	if (s->map) {
		*cpi = s->map + (k % s->src_ncpi) * s->cpi_bytes;
		return 0;
	}
	*cpi = s->cpi;
	if (s->same_cpi && s->cpi_loaded)
		return 0;
	rc = synth_generate(s->synth, k, s->cpi, s->cpi_bytes);
	s->cpi_loaded = rc >= 0;
	return rc;
}

/* ---- packets ---------------------------------------------------------- */

static double uniform(struct lane *l)   /* [0, 1), xorshift64* */
{
	l->rng ^= l->rng >> 12;
	l->rng ^= l->rng << 25;
	l->rng ^= l->rng >> 27;
	return (double)((l->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int open_dest(struct lane *l)
{
	struct sockaddr_storage ss;
	char err[200];

	if (metrics_parse_listen(l->s->dest, &ss, err, sizeof(err)) < 0) {
		log_err("--dest: %s", err);
		return -EINVAL;
	}
	l->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0 || connect(l->fd, (struct sockaddr *)&ss, ss.ss_family == AF_INET ?
				 sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) < 0) {
		log_err("--dest %s: %s", l->s->dest, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Where the next packet is built. */
static uint8_t *slot(struct lane *l)
{
	return l->q + (size_t)l->nq * l->cap;
}

/* Send the queued packets: one sendmmsg while the kernel takes them all. */
static int flush(struct lane *l)
{
	unsigned off = 0;

	for (unsigned i = 0; i < l->nq; i++) {
		l->iov[i][0] = (struct iovec){ .iov_base = l->q + (size_t)i * l->cap,
					       .iov_len = l->msg[i].msg_len };
		l->iov[i][1] = (struct iovec){ .iov_base = (void *)l->ext[i],
					       .iov_len = l->ext_len[i] };
		l->msg[i].msg_hdr = (struct msghdr){ .msg_iov = l->iov[i],
						     .msg_iovlen = l->ext[i] ? 2 : 1 };
	}
	while (off < l->nq) {
		int r = sendmmsg(l->fd, l->msg + off, l->nq - off, 0);

		if (r > 0) {
			for (int i = 0; i < r; i++)
				l->bytes += l->iov[off + i][0].iov_len + l->ext_len[off + i];
			l->sent += (unsigned)r;
			off += (unsigned)r;
		} else if (errno == ECONNREFUSED) {
			/* nobody listens yet on loopback (an ICMP answer to an
			 * earlier packet): the packet is gone */
			l->refused++;
			off++;
		} else if (errno == ENOBUFS || errno == EAGAIN) {
			nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
		} else if (errno != EINTR) {
			log_err("sendmmsg: %s", strerror(errno));
			return -errno;
		} else if (stop_sig) {
			return -EINTR;
		}
	}
	l->nq = 0;
	return 0;
}

/* Queue the packet built at slot(l), len bytes, then ext_len bytes at ext
 * (NULL: none); send a full queue. */
static int queue(struct lane *l, size_t len, const uint8_t *ext, size_t ext_len)
{
	l->ext[l->nq] = ext;
	l->ext_len[l->nq] = ext ? ext_len : 0;
	l->msg[l->nq++].msg_len = (unsigned)len;   /* its length until sent */
	return l->nq == SEND_BATCH ? flush(l) : 0;
}

/* Queue the packet held back (--reorder), if any. */
static int queue_held(struct lane *l)
{
	int rc;

	if (!l->held_len)
		return 0;
	memcpy(slot(l), l->held, l->held_len);
	rc = queue(l, l->held_len, l->held_ext, l->held_ext_len);
	l->held_len = 0;
	return rc;
}

/* The packet at slot(l) (len bytes, then ext as in queue): lose it, hold
 * it back behind the next, or queue it (and the one held back after it). */
static int emit(struct lane *l, size_t len, const uint8_t *ext, size_t ext_len,
		uint64_t nsamp, uint64_t *lost)
{
	const struct send *s = l->s;
	int rc;

	if (s->drop > 0 && uniform(l) < s->drop) {
		l->dropped++;
		*lost += nsamp;
		return 0;
	}
	if (!l->held_len && s->reorder > 0 && uniform(l) < s->reorder) {
		memcpy(l->held, slot(l), len);
		l->held_len = len;
		l->held_ext = ext;
		l->held_ext_len = ext_len;
		l->reordered++;
		return 0;
	}
	rc = queue(l, len, ext, ext_len);
	return rc == 0 ? queue_held(l) : rc;
}

/* Stream sample index -> the VRT timestamp fields. */
static void stamp(const struct send *s, uint64_t sample, struct vrt_packet *p)
{
	p->tsi = VRT_TSI_UTC;
	p->ts_int = (uint32_t)(sample / s->fs_int);
	if (s->tsf_samples) {
		p->tsf = VRT_TSF_SAMPLES;
		p->ts_frac = sample % s->fs_int;
	} else {
		p->tsf = VRT_TSF_PICOSECONDS;
		p->ts_frac = (uint64_t)((unsigned __int128)(sample % s->fs_int) *
					1000000000000ull / s->fs_int);
	}
}

/* 1: n samples copied big-endian at the source's own width, one straight
 * loop (what a sender at line rate spends its time on). Host order is
 * taken to be little-endian, as everywhere chirpd runs. */
static int to_wire_same_width(const struct send *s, uint8_t *dst, const uint8_t *src,
			      size_t n, unsigned fmt)
{
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return 0;
	if (s->fmt == CHIRP_RING_SC16 && fmt == VRT_PLAIN_SC16_BE)
		vrt_copy_swap16(dst, src, 2 * n);
	else if (s->fmt == CHIRP_RING_CF32 && fmt == VRT_PLAIN_CF32_BE)
		vrt_copy_swap32(dst, src, 2 * n);
	else
		return 0;
	return 1;
}

/* n samples of src (host order, the source's format) into dst as fmt. */
static void to_wire(const struct send *s, uint8_t *dst, const uint8_t *src, size_t n,
		    unsigned fmt)
{
	if (to_wire_same_width(s, dst, src, n, fmt))
		return;
	for (size_t i = 0; i < 2 * n; i++) {
		float f;
		uint32_t u;
		int16_t v;

		if (s->fmt == CHIRP_RING_SC16) {
			memcpy(&v, src + 2 * i, 2);
			f = (float)v / 32768.0f;
		} else {
			memcpy(&f, src + 4 * i, 4);
			v = (int16_t)fmaxf(-32768.0f, fminf(32767.0f, rintf(f * 32768.0f)));
		}
		if (fmt == VRT_PLAIN_SC16_BE) {
			dst[2 * i] = (uint8_t)((uint16_t)v >> 8);
			dst[2 * i + 1] = (uint8_t)v;
		} else {
			memcpy(&u, &f, 4);
			vrt_put32(dst + 4 * i, u);
		}
	}
}

static int send_context(struct lane *l, unsigned ch, uint64_t sample)
{
	const struct send *s = l->s;
	struct vrt_packet p = {
		.kind = VRT_KIND_CONTEXT, .has_cid = 1, .oui = VRT_DIFI_OUI,
		.icc = VRT_DIFI_ICC, .pcc = VRT_DIFI_PCC_CONTEXT,
		.stream_id = s->stream_base + ch, .bandwidth_hz = s->bandwidth_hz,
		.rf_ref_hz = s->rf_hz, .sample_rate_hz = (double)s->fs_int,
	};
	size_t len;

	stamp(s, sample, &p);
	len = vrt_pack_context(slot(l), l->cap, &p);
	return len ? queue(l, len, NULL, 0) : -EINVAL;
}

/* The payload format on the wire. */
static unsigned wire_fmt(const struct send *s)
{
	if (!s->plain)
		return s->vrt_fmt;
	return s->vrt_fmt == VRT_PLAIN_SC16_BE ? VRT_PLAIN_SC16_BE : VRT_PLAIN_CF32_BE;
}

/* One channel's receive window of one pulse, chunked: row in host order,
 * or wire_row already in wire format (s->wire; NULL: converted here). */
static int send_row(struct lane *l, unsigned ch, const uint8_t *row, const uint8_t *wire_row,
		    uint64_t sample, uint64_t *lost)
{
	struct send *s = l->s;
	unsigned fmt = wire_fmt(s);
	size_t wsb = vrt_plain_sample_bytes(fmt), hsb = s->fmt == CHIRP_RING_SC16 ? 4 : 8;
	size_t per = s->max_payload / wsb;

	for (size_t off = 0; off < s->R; off += per) {
		size_t n = s->R - off < per ? s->R - off : per, len;
		struct vrt_packet p = { .payload_len = n * wsb };
		int rc;

		if (s->plain) {
			p.kind = VRT_KIND_PLAIN;
			p.format = fmt;
			p.channel = ch;
			p.seq = s->plain_seq[ch]++;
			p.sample = sample + off;
		} else {
			p.kind = VRT_KIND_DATA;
			p.type = VRT_IF_DATA_SID;
			p.has_cid = 1;
			p.oui = VRT_DIFI_OUI;
			p.icc = VRT_DIFI_ICC;
			p.pcc = VRT_DIFI_PCC_DATA;
			p.stream_id = s->stream_base + ch;
			p.count = s->vrt_count[ch]++ & 15;
			stamp(s, sample + off, &p);
		}
		len = vrt_pack(slot(l), l->cap, &p);
		if (!len) {
			log_err("packet of %zu samples does not fit", n);
			return -EINVAL;
		}
		if (wire_row && len == vrt_payload_offset(&p) + n * wsb)
			/* the header here, the payload from s->wire */
			rc = emit(l, vrt_payload_offset(&p), wire_row + off * wsb, n * wsb, n, lost);
		else {
			to_wire(s, slot(l) + vrt_payload_offset(&p), row + off * hsb, n, fmt);
			rc = emit(l, len, NULL, 0, n, lost);
		}
		if (rc < 0)
			return -EIO;
	}
	return 0;
}

/* Wait for due (mono_s): what is queued goes out first. A lane behind
 * its time waits for nothing and sends in batches. */
static int pace(struct lane *l, double due)
{
	int flushed = 0;

	while (!stop_sig) {
		double wait = due - mono_s();

		if (wait <= 0)
			return 0;
		if (!flushed) {
			int rc = flush(l);

			if (rc < 0)
				return rc;
			flushed = 1;
			continue;
		}
		tool_sleep(wait);
	}
	return -EINTR;
}

/* CPI k (the n-th sent): this lane's channels, pulse by pulse. */
static int send_cpi(struct lane *l, uint64_t k, uint64_t n)
{
	struct send *s = l->s;
	size_t hsb = s->fmt == CHIRP_RING_SC16 ? 4 : 8, wsb = vrt_plain_sample_bytes(wire_fmt(s));
	uint64_t base = (uint64_t)llround(s->t0_s * (double)s->fs_int) + k * s->P * s->pri;
	uint64_t lost = 0;
	const uint8_t *cpi;

	if (load_cpi(s, k, &cpi) < 0) {
		log_err("CPI %" PRIu64 ": generation failed", k);
		return -EINVAL;
	}
	if (!s->plain && s->context_every && n % s->context_every == 0)
		for (unsigned ch = l->idx; ch < s->C; ch += s->threads)
			if (send_context(l, ch, base) < 0)
				return -EIO;
	for (unsigned p = 0; p < s->P; p++) {
		int rc = pace(l, s->t_start + (double)(n * s->P + p) / (s->rate * s->P));

		if (rc < 0)
			return rc == -EINTR ? -EINTR : -EIO;
		for (unsigned ch = l->idx; ch < s->C; ch += s->threads) {
			size_t r = ((size_t)ch * s->P + p) * s->R;
			const uint8_t *wire = s->wire ? s->wire + r * wsb : NULL;

			if (send_row(l, ch, cpi + r * hsb, wire, base + p * s->pri, &lost) < 0)
				return -EIO;
		}
	}
	if (lost && s->drop_log)
		fprintf(s->drop_log, "{\"cpi\":%" PRIu64 ",\"missing\":%" PRIu64 "}\n", k, lost);
	l->cpis++;
	return 0;
}

static int run_lane(struct lane *l)
{
	struct send *s = l->s;

	for (uint64_t n = 0; (s->count == 0 || n < s->count) && !stop_sig; n++) {
		int rc = send_cpi(l, s->start + n, n);

		if (rc == -EINTR)
			break;
		if (rc < 0)
			return rc;
	}
	if (queue_held(l) < 0)   /* the last one held back goes last */
		return -EIO;
	return flush(l) < 0 ? -EIO : 0;
}

static void *lane_main(void *arg)
{
	struct lane *l = arg;

	l->rc = run_lane(l);
	return NULL;
}

static int open_lanes(struct send *s)
{
	s->lane = calloc(s->threads, sizeof(*s->lane));
	if (!s->lane) {
		log_err("out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->threads; i++) {
		struct lane *l = &s->lane[i];

		l->s = s;
		l->idx = i;
		l->fd = -1;
		l->rng = (s->net_seed + i) * 0x9e3779b97f4a7c15ull + 1;
		l->cap = (size_t)s->max_payload + 256;   /* headers, a context packet */
	}
	for (unsigned i = 0; i < s->threads; i++) {
		struct lane *l = &s->lane[i];

		l->q = malloc(SEND_BATCH * l->cap);
		l->held = malloc(l->cap);
		if (!l->q || !l->held) {
			log_err("out of memory");
			return -ENOMEM;
		}
	}
	for (unsigned i = 0; i < s->threads; i++)
		if (open_dest(&s->lane[i]) < 0)
			return -EIO;
	return 0;
}

/* Lane 0 on this thread, the others on their own, from one start time. */
static int run(struct send *s)
{
	const uint8_t *cpi;
	int rc = 0;

	if (s->same_cpi && load_cpi(s, s->start, &cpi) < 0) {   /* before the threads */
		log_err("CPI %" PRIu64 ": generation failed", s->start);
		return -EINVAL;
	}
	if (s->same_cpi) {   /* and in its wire format, once */
		size_t n = (size_t)s->C * s->P * s->R;

		s->wire = malloc(n * vrt_plain_sample_bytes(wire_fmt(s)));
		if (!s->wire) {
			log_err("out of memory");
			return -ENOMEM;
		}
		to_wire(s, s->wire, cpi, n, wire_fmt(s));
	}
	s->t_start = mono_s();
	for (unsigned i = 1; i < s->threads; i++) {
		int e = pthread_create(&s->lane[i].th, NULL, lane_main, &s->lane[i]);

		if (e) {
			log_err("pthread_create: %s", strerror(e));
			stop_sig = 1;
			rc = -e;
			break;
		}
		s->lane[i].started = 1;
	}
	s->lane[0].rc = rc ? 0 : run_lane(&s->lane[0]);
	if (s->lane[0].rc < 0)
		stop_sig = 1;   /* the others stop at their next pulse */
	for (unsigned i = 1; i < s->threads; i++)
		if (s->lane[i].started)
			pthread_join(s->lane[i].th, NULL);
	s->t_end = mono_s();
	for (unsigned i = 0; i < s->threads && rc == 0; i++)
		rc = s->lane[i].rc;
	return rc;
}

static void print_totals(const struct send *s)
{
	uint64_t sent = 0, bytes = 0, dropped = 0, reordered = 0, refused = 0, cpis = UINT64_MAX;

	for (unsigned i = 0; i < s->threads; i++) {
		const struct lane *l = &s->lane[i];

		sent += l->sent;
		bytes += l->bytes;
		dropped += l->dropped;
		reordered += l->reordered;
		refused += l->refused;
		cpis = l->cpis < cpis ? l->cpis : cpis;   /* whole: every lane's */
	}
	printf("{\"cpis\":%" PRIu64 ",\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"dropped\":%" PRIu64 ",\"reordered\":%" PRIu64 ",\"refused\":%" PRIu64
	       ",\"seconds\":%.6f}\n",
	       cpis, sent, bytes, dropped, reordered, refused,
	       s->t_end > s->t_start ? s->t_end - s->t_start : 0.0);
}

int main(int argc, char **argv)
{
	static struct send s;
	int ret = EXIT_ERR;

	log_init(argv[0]);
	if (parse_args(&s, argc, argv) < 0)
		return EXIT_USAGE;
	if (tool_catch_signals(&stop_sig) < 0)
		return EXIT_ERR;
	if (prepare(&s) < 0 || open_lanes(&s) < 0)
		goto out;
	if (s.drop_log_path && !(s.drop_log = fopen(s.drop_log_path, "w"))) {
		log_err("%s: %s", s.drop_log_path, strerror(errno));
		goto out;
	}
	log_info("sending %ux%ux%u %s CPIs as %s to %s at %.6g CPI/s on %u thread%s", s.C, s.P,
		 s.R, tool_ring_format_name(s.fmt), s.plain ? "plain UDP" : "VRT", s.dest, s.rate,
		 s.threads, s.threads == 1 ? "" : "s");
	if (run(&s) == 0)
		ret = EXIT_OK;
	print_totals(&s);
out:
	if (s.drop_log)
		fclose(s.drop_log);
	for (unsigned i = 0; s.lane && i < s.threads; i++) {
		if (s.lane[i].fd >= 0)
			close(s.lane[i].fd);
		free(s.lane[i].q);
		free(s.lane[i].held);
	}
	free(s.lane);
	synth_destroy(s.synth);
	if (s.map)
		munmap((void *)s.map, s.map_len);
	sigmf_meta_free(&s.meta);
	free(s.cpi);
	free(s.wire);
	free(s.vrt_count);
	free(s.plain_seq);
	return ret;
}
