/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirp-recv — chirpd's network producer: receives per-channel I/Q streams
 * as VITA 49.2 (DIFI) or chirpd's plain UDP framing and writes whole CPIs
 * into chirpd's input ring, each sample where its timestamp puts it
 * (src/cpiasm.h). Usage: chirp-recv --help, chirp-recv(1), doc/network.md.
 *
 * Threads: one receive thread per socket (--threads N: N sockets bound to
 * one address with SO_REUSEPORT), each pinned (--cpus, --numa-node), taking
 * batches with recvmmsg (--batch). A classic BPF program on the socket
 * group steers each datagram by its stream (VRT stream ID, or the plain
 * framing's channel, modulo N), so that a stream is one thread's whatever
 * the kernel's flow hash would make of the senders' ports. The CPI
 * assembler and the ring's producer handle are one, shared under a mutex
 * taken once per batch, so the ring handle is driven by one thread at a
 * time; the copies into the ring, the bulk of the work, are decided under
 * it and run after it is let go (cpiasm_defer), so that the threads copy
 * in parallel, and the lock is taken once more to commit the CPIs they
 * completed. The main thread prints counters (JSON lines), serves them as
 * Prometheus text (--metrics), and stops on SIGINT/SIGTERM.
 *
 * Counters: packets and bytes taken, and drops by cause: kernel (the
 * socket's SO_RXQ_OVFL count), malformed, wrong stream, context mismatch
 * (a stream refused with --refuse-mismatch), late, duplicate, ring full,
 * bad channel, before t0.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/filter.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "chirp/ring.h"
#include "config.h"
#include "cpiasm.h"
#include "log.h"
#include "metrics.h"
#include "sysnuma.h"
#include "timeutil.h"
#include "tool.h"
#include "vrt.h"

#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL 40
#endif
#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

#define BATCH 64               /* datagrams per recvmmsg                   */
#define BUF_BYTES 9216         /* per datagram: jumbo frames; larger ones
				  are truncated and counted as malformed   */
#define MAX_THREADS 64
#define MAX_STREAMS 4096
#define COPIES (4 * BATCH)     /* deferred copies per batch; a datagram that
				  crosses pulses is several, and what finds
				  the queue full is copied under the lock  */

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2 };

/* Drop causes and other counters, one array so that the JSON line, the
 * Prometheus text and the summation loop are one table. */
enum ctr {
	C_PACKETS, C_BYTES, C_CONTEXT, C_KERNEL, C_MALFORMED, C_WRONG_STREAM,
	C_CTX_MISMATCH, C_LATE, C_DUPLICATE, C_RING_FULL, C_BAD_CHANNEL, C_BEFORE_T0,
	C_N
};
static const char *const ctr_name[C_N] = {
	"packets", "bytes", "context_packets", "kernel", "malformed", "wrong_stream",
	"context_mismatch", "late", "duplicate", "ring_full", "bad_channel", "before_t0",
};
#define C_FIRST_DROP C_KERNEL

struct stream_map {
	uint32_t id;
	unsigned ch;
};

struct opts {
	const char *config_path, *ring_name, *listen, *cpus, *cpi_log, *metrics;
	int plain;                      /* --framing plain                      */
	unsigned vrt_fmt;               /* VRT payload: VRT_PLAIN_SC16_BE or CF32_BE */
	unsigned threads, horizon, mode, batch;
	int numa_node;                  /* -1: none                             */
	double sample_rate_hz, prf_hz, deadline_ms, wait_s, stats_s, idle_exit_s;
	double expect_bw_hz, expect_rf_hz, t0_s;
	uint64_t pri_samples, epoch_jump, count, rcvbuf, t0_sample;
	int have_t0_sample, refuse_mismatch;
	struct stream_map map[MAX_STREAMS];
	size_t nmap;
};

struct rx;

struct worker {
	struct rx *rx;
	int fd, idx;
	pthread_t th;
	uint32_t ovfl_last;             /* the socket's drop count last seen    */
	int ovfl_seen;
	/* A datagram held back (hold_back): the batch resumes at `next` of
	 * `pending` datagrams; hold_ns: when holding began, 0 when not (read
	 * by the other workers under rx->lock). */
	int next, pending;
	uint64_t hold_ns;
	_Atomic int received;           /* datagrams taken from the socket and
					   not yet through batch: they count as
					   waiting (data_waiting, hold_back)   */
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	uint8_t (*buf)[BUF_BYTES];
	uint8_t ctl[BATCH][CMSG_SPACE(sizeof(uint32_t))];
	struct cpiasm_copies copies;    /* the batch's copies (into buf)       */
	struct cpiasm_copy copy[COPIES];
	_Atomic uint64_t c[C_N];
};

struct rx {
	struct opts o;
	struct chirp_ring *ring;
	struct chirp_ring_geometry g;
	struct sockaddr_storage addr;   /* --listen; its port once bound        */
	uint64_t fs_int;                /* the sample rate, Hz (integral)       */
	const char *fs_from;            /* where it came from, for the log      */
	uint64_t pri;                   /* pulse period, samples                */
	pthread_mutex_t lock;           /* asm, ring, refused, cpi_log          */
	struct cpiasm *a;
	FILE *log;
	uint8_t *refused;               /* [channels]: stream refused           */
	uint8_t *warned;                /* [channels]: mismatch logged once     */
	int *owner;                     /* [channels]: the worker that took the
					   channel's last packet, -1: none yet */
	_Atomic uint64_t committed;     /* CPIs committed                       */
	_Atomic uint64_t last_packet_ns;
	_Atomic int failed;
	_Atomic int stop;               /* the main thread tells the workers    */
	int no_hold;                    /* stopping: place what is held back    */
	struct worker w[MAX_THREADS];
	unsigned nw;
};

static volatile sig_atomic_t stop_sig;

/* ---- options ----------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: chirp-recv [options]\n"
"Receive I/Q streams (VITA 49.2 / DIFI or chirpd's plain UDP framing) and\n"
"write whole CPIs into chirpd's input ring, each sample where its timestamp\n"
"puts it. Geometry and format come from the ring.\n"
"  -c, --config FILE        chirpd.conf: input ring name and sample rate\n"
"  -r, --ring NAME          input ring (default: the config's, or /chirpd-in)\n"
"  -l, --listen HOST:PORT   UDP address to receive on (default 127.0.0.1:4991)\n"
"      --framing vrt|plain  VITA 49.2 (default) or chirpd's plain framing\n"
"      --payload sc16|cf32  VRT payload: big-endian int16 (DIFI, default) or float32\n"
"      --stream ID:CH       VRT stream ID (decimal or 0x hex) carries channel CH\n"
"                           (repeat; default\n"
"                           stream ID c is channel c)\n"
"      --sample-rate HZ     stream sample rate (default: the config's, or the ring's)\n"
"      --prf HZ             pulse repetition frequency: pulse period fs/prf samples\n"
"      --pri-samples N      pulse period in samples (default: samples per pulse,\n"
"                           a stream of receive windows only)\n"
"      --t0-sample N        stream sample at which CPI 0 starts (default 0)\n"
"      --t0 SECONDS         the same as a time (N = SECONDS * sample rate)\n"
"      --horizon N          CPIs in flight (default 4; below the ring's slots)\n"
"      --deadline-ms MS     commit a CPI still not whole this long after its\n"
"                           first packet, once no datagram waits (default 50)\n"
"      --epoch-jump N       a timestamp more than N CPIs away starts a new\n"
"                           epoch (default 64)\n"
"      --mode ID            radar mode committed with each CPI (default 0)\n"
"      --expect-bandwidth HZ, --expect-rf HZ\n"
"                           check context packets' bandwidth, RF reference\n"
"      --refuse-mismatch    drop a stream whose context packet disagrees\n"
"      --threads N          receive sockets and threads (SO_REUSEPORT; default 1),\n"
"                           a stream to one thread (stream ID or channel mod N)\n"
"      --batch N            datagrams per receive call, 1..64 (default 64: recvmmsg;\n"
"                           1: one recvmsg per datagram)\n"
"      --cpus LIST          pin receive thread i to the i-th cpu of LIST\n"
"      --numa-node N        pin receive threads to node N's cpus\n"
"      --rcvbuf BYTES       socket receive buffer, 4096..2^30 (default 256 MiB;\n"
"                           beyond net.core.rmem_max with CAP_NET_ADMIN)\n"
"      --stats S            print counters as a JSON line every S seconds\n"
"                           (default 0: at exit only)\n"
"      --metrics HOST:PORT  serve counters as Prometheus text at /metrics\n"
"      --cpi-log FILE       a JSON line per committed CPI (tests, debugging)\n"
"  -n, --count N            exit after N CPIs committed\n"
"      --idle-exit S        exit S seconds after the last packet\n"
"      --wait S             wait up to S seconds for the ring (default 10)\n"
"  -q, --quiet              errors only\n"
"  -h, --help\n");
}

enum {
	O_FRAMING = 256, O_PAYLOAD, O_STREAM, O_RATE, O_PRF, O_PRI, O_T0S, O_T0, O_HORIZON,
	O_DEADLINE, O_EPOCH, O_MODE, O_EBW, O_ERF, O_REFUSE, O_THREADS, O_CPUS, O_NODE,
	O_RCVBUF, O_STATS, O_METRICS, O_CPILOG, O_COUNT, O_IDLE, O_WAIT, O_BATCH,
};

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "ring", required_argument, NULL, 'r' },
	{ "listen", required_argument, NULL, 'l' },
	{ "framing", required_argument, NULL, O_FRAMING },
	{ "payload", required_argument, NULL, O_PAYLOAD },
	{ "stream", required_argument, NULL, O_STREAM },
	{ "sample-rate", required_argument, NULL, O_RATE },
	{ "prf", required_argument, NULL, O_PRF },
	{ "pri-samples", required_argument, NULL, O_PRI },
	{ "t0-sample", required_argument, NULL, O_T0S },
	{ "t0", required_argument, NULL, O_T0 },
	{ "horizon", required_argument, NULL, O_HORIZON },
	{ "deadline-ms", required_argument, NULL, O_DEADLINE },
	{ "epoch-jump", required_argument, NULL, O_EPOCH },
	{ "mode", required_argument, NULL, O_MODE },
	{ "expect-bandwidth", required_argument, NULL, O_EBW },
	{ "expect-rf", required_argument, NULL, O_ERF },
	{ "refuse-mismatch", no_argument, NULL, O_REFUSE },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "cpus", required_argument, NULL, O_CPUS },
	{ "numa-node", required_argument, NULL, O_NODE },
	{ "rcvbuf", required_argument, NULL, O_RCVBUF },
	{ "stats", required_argument, NULL, O_STATS },
	{ "metrics", required_argument, NULL, O_METRICS },
	{ "cpi-log", required_argument, NULL, O_CPILOG },
	{ "count", required_argument, NULL, 'n' },
	{ "idle-exit", required_argument, NULL, O_IDLE },
	{ "wait", required_argument, NULL, O_WAIT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_u64_in(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char want[80];

	if (tool_parse_u64(s, v) == 0 && *v >= lo && *v <= hi)
		return 0;
	snprintf(want, sizeof(want), "want an integer %" PRIu64 "..%" PRIu64, lo, hi);
	return tool_bad_arg(opt, s, want);
}

static int parse_pos(const char *opt, const char *s, double *v)
{
	if (tool_parse_double(s, v) == 0 && *v > 0)
		return 0;
	return tool_bad_arg(opt, s, "want a number > 0");
}

static int parse_nonneg(const char *opt, const char *s, double *v)
{
	if (tool_parse_double(s, v) == 0 && *v >= 0)
		return 0;
	return tool_bad_arg(opt, s, "want a number >= 0");
}

static int parse_stream(struct opts *o, const char *s)
{
	const char *colon = strchr(s, ':');
	char id[32], *end = id;
	uint64_t v, ch;

	if (!colon || (size_t)(colon - s) >= sizeof(id) || o->nmap == MAX_STREAMS)
		return tool_bad_arg("--stream", s, "want ID:CHANNEL");
	memcpy(id, s, (size_t)(colon - s));
	id[colon - s] = 0;
	errno = 0;
	v = id[0] >= '0' && id[0] <= '9' ? strtoull(id, &end, 0) : UINT64_MAX;   /* 0x... too */
	if (errno || *end || v > UINT32_MAX ||
	    tool_parse_u64(colon + 1, &ch) < 0 || ch > 65535)
		return tool_bad_arg("--stream", s, "want ID:CHANNEL, ID 0..2^32-1, CHANNEL 0..65535");
	for (size_t i = 0; i < o->nmap; i++)
		if (o->map[i].id == v)
			return tool_bad_arg("--stream", s, "stream ID given twice");
	o->map[o->nmap++] = (struct stream_map){ (uint32_t)v, (unsigned)ch };
	return 0;
}

static int opt_one(struct opts *o, int c, const char *a)
{
	uint64_t v;

	switch (c) {
	case 'c': o->config_path = a; return 0;
	case 'r': o->ring_name = a; return 0;
	case 'l': o->listen = a; return 0;
	case 'q': log_set_level(LOG_ERR); return 0;
	case O_FRAMING:
		if (strcmp(a, "vrt") && strcmp(a, "plain"))
			return tool_bad_arg("--framing", a, "want vrt or plain");
		o->plain = !strcmp(a, "plain");
		return 0;
	case O_PAYLOAD:
		if (strcmp(a, "sc16") && strcmp(a, "cf32"))
			return tool_bad_arg("--payload", a, "want sc16 or cf32");
		o->vrt_fmt = !strcmp(a, "sc16") ? VRT_PLAIN_SC16_BE : VRT_PLAIN_CF32_BE;
		return 0;
	case O_STREAM: return parse_stream(o, a);
	case O_RATE: return parse_pos("--sample-rate", a, &o->sample_rate_hz);
	case O_PRF: return parse_pos("--prf", a, &o->prf_hz);
	case O_PRI: return parse_u64_in("--pri-samples", a, 1, 1ull << 40, &o->pri_samples);
	case O_T0S:
		o->have_t0_sample = 1;
		return parse_u64_in("--t0-sample", a, 0, UINT64_MAX, &o->t0_sample);
	case O_T0: return parse_nonneg("--t0", a, &o->t0_s);
	case O_HORIZON:
		if (parse_u64_in("--horizon", a, 1, CPIASM_MAX_HORIZON, &v) < 0)
			return -EINVAL;
		o->horizon = (unsigned)v;
		return 0;
	case O_DEADLINE: return parse_pos("--deadline-ms", a, &o->deadline_ms);
	case O_EPOCH: return parse_u64_in("--epoch-jump", a, 1, 1ull << 32, &o->epoch_jump);
	case O_MODE:
		if (parse_u64_in("--mode", a, 0, UINT32_MAX, &v) < 0)
			return -EINVAL;
		o->mode = (unsigned)v;
		return 0;
	case O_EBW: return parse_pos("--expect-bandwidth", a, &o->expect_bw_hz);
	case O_ERF: return parse_pos("--expect-rf", a, &o->expect_rf_hz);
	case O_REFUSE: o->refuse_mismatch = 1; return 0;
	case O_THREADS:
		if (parse_u64_in("--threads", a, 1, MAX_THREADS, &v) < 0)
			return -EINVAL;
		o->threads = (unsigned)v;
		return 0;
	case O_BATCH:
		if (parse_u64_in("--batch", a, 1, BATCH, &v) < 0)
			return -EINVAL;
		o->batch = (unsigned)v;
		return 0;
	case O_CPUS: o->cpus = a; return 0;
	case O_NODE:
		if (parse_u64_in("--numa-node", a, 0, 1023, &v) < 0)
			return -EINVAL;
		o->numa_node = (int)v;
		return 0;
	case O_RCVBUF:   /* the kernel grants at most INT_MAX / 2 */
		return parse_u64_in("--rcvbuf", a, 4096, 1ull << 30, &o->rcvbuf);
	case O_STATS: return parse_nonneg("--stats", a, &o->stats_s);
	case O_METRICS: o->metrics = a; return 0;
	case O_CPILOG: o->cpi_log = a; return 0;
	case 'n': return parse_u64_in("--count", a, 1, UINT64_MAX, &o->count);
	case O_IDLE: return parse_pos("--idle-exit", a, &o->idle_exit_s);
	case O_WAIT: return parse_nonneg("--wait", a, &o->wait_s);
	default: return -EINVAL;
	}
}

static int parse_args(struct opts *o, int argc, char **argv)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:4991";
	o->vrt_fmt = VRT_PLAIN_SC16_BE;
	o->threads = 1;
	o->batch = BATCH;
	o->horizon = 4;
	o->numa_node = -1;
	o->deadline_ms = 50;
	o->epoch_jump = 64;
	o->rcvbuf = 256ull << 20;   /* set_rcvbuf */
	o->wait_s = 10;
	while ((c = getopt_long(argc, argv, "c:r:l:n:qh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(EXIT_OK);
		}
		if (c == '?' || opt_one(o, c, optarg) < 0)
			return -EINVAL;
	}
	if (optind < argc) {
		log_err("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	if (o->cpus && o->numa_node >= 0) {
		log_err("--cpus and --numa-node are alternatives");
		return -EINVAL;
	}
	if (o->prf_hz > 0 && o->pri_samples) {
		log_err("--prf and --pri-samples are alternatives");
		return -EINVAL;
	}
	return 0;
}

/* ---- ring and assembler ------------------------------------------------ */

static int sink_reserve(void *ctx, void **payload)
{
	struct rx *rx = ctx;

	return chirp_ring_reserve_next(rx->ring, payload);
}

static int sink_commit(void *ctx, uint64_t first_sample, uint32_t flags, uint32_t missing)
{
	struct rx *rx = ctx;
	int rc = chirp_ring_commit_partial(rx->ring, 0, first_sample, flags, rx->o.mode, missing);

	if (rc < 0)
		return rc;
	atomic_fetch_add(&rx->committed, 1);
	if (rx->log) {
		uint64_t per = (uint64_t)rx->g.pulses * rx->g.samples;

		fprintf(rx->log, "{\"cpi\":%" PRIu64 ",\"first_sample\":%" PRIu64
			",\"flags\":%u,\"missing\":%u}\n", first_sample / per, first_sample,
			flags | (missing ? CHIRP_RING_INCOMPLETE : 0), missing);
		fflush(rx->log);
	}
	return 0;
}

/* The pulse period in samples: --pri-samples, fs / --prf, or R. */
static int pulse_period(struct rx *rx)
{
	const struct opts *o = &rx->o;
	double pri;

	if (o->pri_samples) {
		rx->pri = o->pri_samples;
	} else if (o->prf_hz > 0) {
		pri = (double)rx->fs_int / o->prf_hz;
		if (fabs(pri - llround(pri)) > 1e-6 * pri) {
			log_err("--prf %g: the pulse period %g samples at %" PRIu64
				" Hz is not a whole number of samples", o->prf_hz, pri, rx->fs_int);
			return -EINVAL;
		}
		rx->pri = (uint64_t)llround(pri);
	} else {
		rx->pri = rx->g.samples;
	}
	if (rx->pri < rx->g.samples) {
		log_err("pulse period %" PRIu64 " samples is shorter than the ring's %u "
			"samples per pulse", rx->pri, rx->g.samples);
		return -EINVAL;
	}
	return 0;
}

static int build_asm(struct rx *rx)
{
	const struct opts *o = &rx->o;
	struct cpiasm_sink sink = { .ctx = rx, .reserve = sink_reserve, .commit = sink_commit };
	struct cpiasm_params p = {
		.channels = rx->g.channels, .pulses = rx->g.pulses, .samples = rx->g.samples,
		.ring_format = rx->g.format, .horizon = o->horizon,
		.deadline_ns = (uint64_t)(o->deadline_ms * 1e6), .epoch_jump_cpis = o->epoch_jump,
	};
	char err[256];

	if (rx->g.format != CHIRP_RING_SC16 && rx->g.format != CHIRP_RING_CF32) {
		log_err("ring %s holds %s: chirp-recv writes sc16 or cf32 rings",
			chirp_ring_name(rx->ring), tool_ring_format_name(rx->g.format));
		return -EINVAL;
	}
	if (o->horizon >= rx->g.slots) {
		log_err("--horizon %u: the ring has %u slots; hold fewer CPIs in flight than that",
			o->horizon, rx->g.slots);
		return -EINVAL;
	}
	p.pri_samples = rx->pri;
	p.t0_sample = o->have_t0_sample ? o->t0_sample :
		      (uint64_t)llround(o->t0_s * (double)rx->fs_int);
	cpiasm_destroy(rx->a);
	rx->a = cpiasm_create(&p, &sink, err, sizeof(err));
	if (!rx->a) {
		log_err("%s", err);
		return -EINVAL;
	}
	free(rx->refused);
	free(rx->warned);
	free(rx->owner);
	rx->refused = calloc(rx->g.channels, 1);
	rx->warned = calloc(rx->g.channels, 1);
	rx->owner = malloc(rx->g.channels * sizeof(*rx->owner));
	if (!rx->refused || !rx->warned || !rx->owner) {
		log_err("out of memory");
		return -ENOMEM;
	}
	for (unsigned c = 0; c < rx->g.channels; c++)
		rx->owner[c] = -1;
	return 0;
}

static int sample_rate(struct rx *rx, const struct chirp_config *cfg)
{
	double fs = rx->o.sample_rate_hz;

	rx->fs_from = "--sample-rate";
	if (!(fs > 0)) {
		fs = cfg ? cfg->wf.sample_rate_hz : rx->g.sample_rate_hz;
		rx->fs_from = cfg ? "the configuration" : "the ring";
	}
	if (!(fs >= 1) || fs > 1e12 || fabs(fs - llround(fs)) > 1e-6) {
		log_err("sample rate %g Hz: chirp-recv turns timestamps into sample "
			"indices at a whole number of Hz (give --sample-rate)", fs);
		return -EINVAL;
	}
	rx->fs_int = (uint64_t)llround(fs);
	return 0;
}

/* Attach to ring name as its producer (waiting --wait for it) and read
 * its geometry. 0, or -ENOENT (logged). */
static int attach_ring(struct rx *rx, const char *name)
{
	char err[256];

	rx->ring = tool_attach_wait(name, CHIRP_RING_PRODUCER, NULL, rx->o.wait_s, &stop_sig,
				    err, sizeof(err));
	if (!rx->ring) {
		log_err("%s", err);
		return -ENOENT;
	}
	chirp_ring_geometry(rx->ring, &rx->g);
	return 0;
}

static int open_ring(struct rx *rx, const struct chirp_config *cfg)
{
	const char *name = rx->o.ring_name ? rx->o.ring_name :
			   cfg ? cfg->input_ring : "/chirpd-in";

	if (attach_ring(rx, name) < 0)
		return -ENOENT;
	if (sample_rate(rx, cfg) < 0 || pulse_period(rx) < 0)
		return -EINVAL;
	return build_asm(rx);
}

/* The ring was re-created (chirpd restarted with a new geometry): attach
 * again and start over. Called with the lock held. */
static int reattach(struct rx *rx)
{
	char name[256];

	snprintf(name, sizeof(name), "%s", chirp_ring_name(rx->ring));
	log_warn("ring %s was re-created; attaching again (CPIs in flight are lost)", name);
	cpiasm_wait_copies(rx->a);   /* nobody writes into the old mapping after */
	chirp_ring_detach(rx->ring);
	if (attach_ring(rx, name) < 0)
		return -ENOENT;
	if (pulse_period(rx) < 0)
		return -EINVAL;
	return build_asm(rx);
}

/* ---- packets ----------------------------------------------------------- */

static void count(struct worker *w, enum ctr c)
{
	atomic_fetch_add_explicit(&w->c[c], 1, memory_order_relaxed);
}

/* The channel a VRT stream carries, or -1. */
static int channel_of(const struct rx *rx, const struct vrt_packet *p)
{
	if (!p->has_sid)
		return rx->g.channels == 1 ? 0 : -1;
	if (rx->o.nmap == 0)
		return p->stream_id < rx->g.channels ? (int)p->stream_id : -1;
	for (size_t i = 0; i < rx->o.nmap; i++)
		if (rx->o.map[i].id == p->stream_id)
			return rx->o.map[i].ch < rx->g.channels ? (int)rx->o.map[i].ch : -1;
	return -1;
}

/* A VRT timestamp as a sample index at fs_int; -1 if it has none. */
static int vrt_sample(const struct rx *rx, const struct vrt_packet *p, uint64_t *s)
{
	unsigned __int128 v;

	switch (p->tsf) {
	case VRT_TSF_SAMPLES:
		v = (unsigned __int128)(p->tsi ? p->ts_int : 0) * rx->fs_int + p->ts_frac;
		break;
	case VRT_TSF_PICOSECONDS:
		v = ((unsigned __int128)(p->tsi ? p->ts_int : 0) * 1000000000000ull + p->ts_frac) *
			    rx->fs_int + 500000000000ull;
		v /= 1000000000000ull;
		break;
	case VRT_TSF_FREE:
		v = p->ts_frac;
		break;
	default:
		return -1;
	}
	if (v > UINT64_MAX)
		return -1;
	*s = (uint64_t)v;
	return 0;
}

static int differs(double got, double want)
{
	return want > 0 && fabs(got - want) > 1e-6 * want;
}

/* Check a context packet against what we expect (lock held). */
static void context(struct worker *w, const struct vrt_packet *p)
{
	struct rx *rx = w->rx;
	int ch = channel_of(rx, p);
	char why[160] = "";

	count(w, C_CONTEXT);
	if (ch < 0) {
		count(w, C_WRONG_STREAM);
		return;
	}
	if ((p->cif0 & VRT_CIF0_SAMPLE_RATE) && differs(p->sample_rate_hz, (double)rx->fs_int))
		snprintf(why, sizeof(why), "sample rate %.9g Hz, expected %" PRIu64,
			 p->sample_rate_hz, rx->fs_int);
	else if ((p->cif0 & VRT_CIF0_BANDWIDTH) && differs(p->bandwidth_hz, rx->o.expect_bw_hz))
		snprintf(why, sizeof(why), "bandwidth %.9g Hz, expected %.9g",
			 p->bandwidth_hz, rx->o.expect_bw_hz);
	else if ((p->cif0 & VRT_CIF0_RF_REF) && differs(p->rf_ref_hz, rx->o.expect_rf_hz))
		snprintf(why, sizeof(why), "RF reference %.9g Hz, expected %.9g",
			 p->rf_ref_hz, rx->o.expect_rf_hz);
	if (!why[0])
		return;
	count(w, C_CTX_MISMATCH);
	if (!rx->warned[ch]) {
		rx->warned[ch] = 1;
		log_warn("stream 0x%08x (channel %d): context says %s%s", p->stream_id, ch, why,
			 rx->o.refuse_mismatch ? "; refusing the stream" : "");
	}
	if (rx->o.refuse_mismatch)
		rx->refused[ch] = 1;
}

static void place_result(struct worker *w, int rc)
{
	static const enum ctr map[] = {
		[CPIASM_LATE] = C_LATE, [CPIASM_DUPLICATE] = C_DUPLICATE,
		[CPIASM_RING_FULL] = C_RING_FULL, [CPIASM_BAD_CHANNEL] = C_BAD_CHANNEL,
		[CPIASM_BEFORE_T0] = C_BEFORE_T0,
	};

	if (rc > 0 && rc <= CPIASM_BEFORE_T0)
		count(w, map[rc]);
}

/* 1 when worker w has datagrams not yet placed: in its socket, taken by
 * a receive call and waiting for the lock, or held back. */
static int worker_waiting(const struct worker *w)
{
	int bytes = 0;

	if (w->pending || atomic_load_explicit(&w->received, memory_order_acquire))
		return 1;
	return ioctl(w->fd, FIONREAD, &bytes) == 0 && bytes > 0;
}

/* 1 when a worker other than w, not holding itself, has datagrams waiting:
 * a channel no worker has taken a packet of yet may be among them. */
static int others_waiting(const struct worker *w)
{
	const struct rx *rx = w->rx;

	for (unsigned i = 0; i < rx->nw; i++)
		if ((int)i != w->idx && !rx->w[i].hold_ns && worker_waiting(&rx->w[i]))
			return 1;
	return 0;
}

/* 1 when w's socket holds half its receive buffer or more, or cannot
 * say: a hold would then risk its own datagrams. */
static int socket_crowded(const struct worker *w)
{
	double f;

	return tool_socket_fill(w->fd, &f) < 0 || f >= 0.5;
}

/*
 * 1: hold this packet (of stream sample s) back for a while (lock held).
 * It runs ahead of the window and placing it would commit the oldest CPI
 * while a channel another worker receives still lacks samples there and
 * that worker has datagrams waiting in its socket (for a channel no
 * worker has seen yet: any other worker): they may be the very samples,
 * late only because that thread was not scheduled. Holding
 * leaves this worker's datagrams in its socket (the kernel's buffer), so
 * it ends at the deadline or once that socket is half full, whichever
 * comes first: a hold never costs a datagram of its own. Samples that
 * were lost (another socket overflowed) never come, and a hold for them
 * must not make this socket overflow in turn, and the next one for its
 * holes, and so on. A worker does not hold for one that is holding
 * itself, so two never wait for each other.
 */
static int hold_back(struct worker *w, uint64_t s, uint64_t now)
{
	struct rx *rx = w->rx;

	for (unsigned c = 0; rx->nw > 1 && !rx->no_hold && c < rx->g.channels; c++) {
		int o = rx->owner[c];

		if (o == w->idx || !cpiasm_push_lacks(rx->a, s, c) ||
		    !(o >= 0 ? !rx->w[o].hold_ns && worker_waiting(&rx->w[o]) : others_waiting(w)))
			continue;
		if (!w->hold_ns)
			w->hold_ns = now ? now : 1;
		if (now - w->hold_ns < (uint64_t)(rx->o.deadline_ms * 1e6) && !socket_crowded(w))
			return 1;
		break;
	}
	w->hold_ns = 0;
	return 0;
}

/* One datagram (lock held). Returns 0, 1 (held back: hold_back), or a
 * negative errno from the ring. */
static int datagram(struct worker *w, const uint8_t *b, size_t len, uint64_t now)
{
	struct rx *rx = w->rx;
	struct vrt_packet p;
	unsigned fmt;
	uint64_t s;
	size_t sb;
	int ch, rc;

	if (vrt_parse(b, len, rx->o.plain, &p) != VRT_OK) {
		count(w, C_MALFORMED);
		return 0;
	}
	if (p.kind == VRT_KIND_CONTEXT) {
		context(w, &p);
		return 0;
	}
	if (p.kind == VRT_KIND_PLAIN) {
		ch = (int)p.channel;
		s = p.sample;
		fmt = p.format;
	} else {
		ch = channel_of(rx, &p);
		if (ch < 0) {
			count(w, C_WRONG_STREAM);
			return 0;
		}
		fmt = rx->o.vrt_fmt;
		if (vrt_sample(rx, &p, &s) < 0) {
			count(w, C_MALFORMED);   /* no timestamp: no place for it */
			return 0;
		}
	}
	sb = vrt_plain_sample_bytes(fmt);
	if (p.payload_len % sb) {
		count(w, C_MALFORMED);
		return 0;
	}
	if ((unsigned)ch < rx->g.channels && rx->refused[ch]) {
		count(w, C_CTX_MISMATCH);
		return 0;
	}
	if (hold_back(w, s, now))
		return 1;
	if ((unsigned)ch < rx->g.channels)
		rx->owner[ch] = w->idx;
	count(w, C_PACKETS);
	atomic_fetch_add_explicit(&w->c[C_BYTES], len, memory_order_relaxed);
	rc = cpiasm_put(rx->a, (unsigned)ch, s, p.payload, p.payload_len / sb, fmt, now);
	if (rc < 0)
		return rc;
	place_result(w, rc);
	return 0;
}

/* The socket's cumulative drop count (SO_RXQ_OVFL), as a delta. */
static void kernel_drops(struct worker *w, struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		uint32_t v;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL)
			continue;
		memcpy(&v, CMSG_DATA(c), sizeof(v));
		if (w->ovfl_seen)
			atomic_fetch_add_explicit(&w->c[C_KERNEL], (uint32_t)(v - w->ovfl_last),
						  memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&w->c[C_KERNEL], v, memory_order_relaxed);
		w->ovfl_last = v;
		w->ovfl_seen = 1;
	}
}

/* Handle a sink error (lock held): re-attach on a re-created ring. */
static int sink_failed(struct rx *rx, int rc)
{
	if (rc == -ESTALE && reattach(rx) == 0)
		return 0;
	log_err("ring %s: %s", chirp_ring_name(rx->ring), strerror(-rc));
	atomic_store(&rx->failed, 1);
	atomic_store(&rx->stop, 1);
	return rc;
}

/* 1 when a datagram waits unread in any of the sockets, or one is held
 * back. */
static int data_waiting(const struct rx *rx)
{
	for (unsigned i = 0; i < rx->nw; i++)
		if (worker_waiting(&rx->w[i]))
			return 1;
	return 0;
}

/*
 * Commit what is due (lock held). A CPI's deadline gives up on packets
 * that are not coming; while datagrams wait unread in a socket (another
 * receive thread not scheduled yet, or this one behind), they may be the
 * very packets it waits for, so the deadline waits for the sockets to be
 * read. The horizon still bounds the CPIs in flight while data keep coming.
 */
static int commit_due(struct rx *rx, uint64_t now)
{
	if (cpiasm_next_deadline(rx->a, now) != 0 || data_waiting(rx))
		return 0;
	return cpiasm_tick(rx->a, now);
}

/* The copies the batch queued, without the lock (the other threads place
 * and copy meanwhile), then the CPIs they completed are committed. rc is
 * the batch's result, returned unless the commit fails. */
static int copy_out(struct worker *w, int rc)
{
	struct rx *rx = w->rx;
	int d;

	if (!w->copies.n)
		return rc;
	cpiasm_run_copies(&w->copies);
	pthread_mutex_lock(&rx->lock);
	d = atomic_load(&rx->failed) ? 0 : cpiasm_drain(rx->a);
	if (d < 0 && rc >= 0)
		rc = sink_failed(rx, d);
	pthread_mutex_unlock(&rx->lock);
	return rc;
}

/* Datagrams [w->next, n) of the batch (all of it unless one was held
 * back), then what is due. A datagram held back ends the call: the batch
 * resumes there next time (w->pending). */
static int batch(struct worker *w, int n, uint64_t now)
{
	struct rx *rx = w->rx;
	int rc = 0, i;

	if (n > 0)   /* any datagram, good or not: --idle-exit */
		atomic_store_explicit(&rx->last_packet_ns, now, memory_order_relaxed);
	pthread_mutex_lock(&rx->lock);
	cpiasm_defer(rx->a, &w->copies);
	for (i = w->next; i < n && rc == 0; i++) {
		struct msghdr *m = &w->msg[i].msg_hdr;

		kernel_drops(w, m);
		if (m->msg_flags & MSG_TRUNC)
			count(w, C_MALFORMED);
		else
			rc = datagram(w, w->buf[i], w->msg[i].msg_len, now);
		if (rc == 1)
			break;
		m->msg_controllen = sizeof(w->ctl[i]);
		m->msg_flags = 0;
	}
	if (rc == 1) {   /* held back: resume at i */
		w->next = i;
		w->pending = n;
		cpiasm_defer(rx->a, NULL);
		pthread_mutex_unlock(&rx->lock);
		return copy_out(w, 0);
	}
	w->next = w->pending = 0;
	if (rc == 0)
		rc = commit_due(rx, now);
	if (rc < 0)
		rc = sink_failed(rx, rc);
	cpiasm_defer(rx->a, NULL);   /* rx->a is new after a re-attach */
	pthread_mutex_unlock(&rx->lock);
	rc = copy_out(w, rc);
	/* only now: a datagram whose copy is queued still counts as waiting */
	atomic_store_explicit(&w->received, 0, memory_order_release);
	return rc;
}

static int poll_ms(struct rx *rx)
{
	uint64_t d;

	pthread_mutex_lock(&rx->lock);
	d = cpiasm_next_deadline(rx->a, mono_ns());
	pthread_mutex_unlock(&rx->lock);
	if (d > 100000000ull)   /* look at the stop flag every 100 ms */
		return 100;
	/* At least 1 ms: a deadline that waits for another socket's datagrams
	 * (commit_due) is looked at again, not spun on. */
	return d < 1000000 ? 1 : (int)((d + 999999) / 1000000);
}

/* Up to --batch datagrams into w->msg: recvmmsg, or recvmsg for one. */
static int receive(struct worker *w)
{
	ssize_t len;

	if (w->rx->o.batch > 1)
		return recvmmsg(w->fd, w->msg, w->rx->o.batch, MSG_DONTWAIT, NULL);
	len = recvmsg(w->fd, &w->msg[0].msg_hdr, MSG_DONTWAIT);
	if (len < 0)
		return -1;
	w->msg[0].msg_len = (unsigned)len;
	return 1;
}

/* Receive until the socket is empty, then poll it: a busy socket costs one
 * system call per --batch datagrams. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };

	while (!atomic_load_explicit(&w->rx->stop, memory_order_relaxed)) {
		int n;

		if (w->pending) {   /* a datagram held back: let the others run */
			nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
			if (batch(w, w->pending, mono_ns()) < 0)
				break;
			continue;
		}
		n = receive(w);
		if (n > 0)
			atomic_store_explicit(&w->received, 1, memory_order_release);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (poll(&pfd, 1, poll_ms(w->rx)) < 0 && errno != EINTR) {
				log_err("poll: %s", strerror(errno));
				break;
			}
		} else if (n < 0 && errno != EINTR) {
			log_err("%s: %s", w->rx->o.batch > 1 ? "recvmmsg" : "recvmsg",
				strerror(errno));
			break;
		}
		if (batch(w, n > 0 ? n : 0, mono_ns()) < 0)
			break;
	}
	return NULL;
}

/* ---- sockets and threads ----------------------------------------------- */

/* HOST:PORT as metrics_parse_listen reads it, and PORT 0 (the kernel's
 * choice, logged once bound). */
static int parse_addr(const char *s, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	size_t n = strlen(s);
	char tmp[128];

	if (n < 2 || n >= sizeof(tmp) || strcmp(s + n - 2, ":0") != 0)
		return metrics_parse_listen(s, ss, err, errlen);
	memcpy(tmp, s, n - 1);
	tmp[n - 1] = '1';
	tmp[n] = 0;
	if (metrics_parse_listen(tmp, ss, err, errlen) < 0)
		return -EINVAL;
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	return 0;
}

/*
 * The socket's receive buffer: what absorbs a receive thread's stall (a
 * lock, a page fault, the scheduler) at line rate, 20 Gb/s filling 64 MiB
 * in 25 ms. SO_RCVBUFFORCE passes net.core.rmem_max with CAP_NET_ADMIN;
 * else SO_RCVBUF, which the kernel caps at rmem_max. The size obtained is
 * logged, and said as a notice when it is smaller than asked: never
 * silently. (The kernel reports twice what it grants, for its own
 * bookkeeping, and so do we not.)
 */
static int set_rcvbuf(struct rx *rx, struct worker *w)
{
	int size = (int)rx->o.rcvbuf, got = 0, forced = 1;
	socklen_t sl = sizeof(got);

	if (setsockopt(w->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0) {
		forced = 0;
		if (setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0) {
			log_err("setsockopt SO_RCVBUF: %s", strerror(errno));
			return -errno;
		}
	}
	if (getsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &got, &sl) < 0) {
		log_err("getsockopt SO_RCVBUF: %s", strerror(errno));
		return -errno;
	}
	got /= 2;
	if (w->idx == 0 && (uint64_t)got < rx->o.rcvbuf)
		log_notice("socket receive buffer %d bytes, asked %" PRIu64 " (raise "
			   "net.core.rmem_max, or give chirp-recv CAP_NET_ADMIN)", got, rx->o.rcvbuf);
	else if (w->idx == 0)
		log_info("socket receive buffer %d bytes%s", got,
			 forced ? " (SO_RCVBUFFORCE)" : "");
	return 0;
}

static int open_socket(struct rx *rx, struct worker *w)
{
	struct sockaddr_storage ss;
	char err[200];
	int one = 1, fd, rc;
	socklen_t sl;

	if (w->idx == 0 && parse_addr(rx->o.listen, &rx->addr, err, sizeof(err)) < 0) {
		log_err("--listen: %s", err);
		return -EINVAL;
	}
	ss = rx->addr;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("socket: %s", strerror(errno));
		return -errno;
	}
	w->fd = fd;
	if ((rx->o.threads > 1 && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
	    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) < 0) {
		log_err("setsockopt: %s", strerror(errno));
		return -errno;
	}
	rc = set_rcvbuf(rx, w);
	if (rc < 0)
		return rc;
	if (bind(fd, (struct sockaddr *)&ss, ss.ss_family == AF_INET ?
		 sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) < 0) {
		log_err("bind %s: %s", rx->o.listen, strerror(errno));
		return -errno;
	}
	/* Port 0: the kernel's choice, which the other sockets share. */
	sl = sizeof(rx->addr);
	if (w->idx == 0 && getsockname(fd, (struct sockaddr *)&rx->addr, &sl) < 0) {
		log_err("getsockname: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * Steer each datagram of the SO_REUSEPORT group to socket (stream mod N):
 * the VRT stream ID (word 1) or the plain framing's channel (bytes 8-9),
 * read by a classic BPF program over the UDP payload. A datagram too short
 * to hold the field reads 0 (socket 0). Without it the kernel hashes
 * flows (addresses and ports) over the sockets, which can put two
 * senders' flows on one socket and leave another idle.
 */
static void steer_by_stream(struct rx *rx)
{
	struct sock_filter code[] = {
		rx->o.plain ? (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 8) :
			      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, rx->nw),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	if (rx->nw < 2)
		return;
	if (setsockopt(rx->w[0].fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) < 0)
		log_notice("SO_ATTACH_REUSEPORT_CBPF: %s; the kernel's flow hash spreads "
			   "datagrams over the %u sockets", strerror(errno), rx->nw);
}

/* The bound port (network order in both families). */
static unsigned bound_port(const struct rx *rx)
{
	const struct sockaddr_storage *a = &rx->addr;

	return ntohs(a->ss_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port :
		     ((const struct sockaddr_in6 *)a)->sin6_port);
}

static int setup_worker(struct rx *rx, struct worker *w, unsigned idx)
{
	w->rx = rx;
	w->idx = (int)idx;
	w->fd = -1;
	w->buf = malloc(sizeof(*w->buf) * BATCH);
	if (!w->buf) {
		log_err("out of memory");
		return -ENOMEM;
	}
	w->copies = (struct cpiasm_copies){ .c = w->copy, .cap = COPIES };
	for (int i = 0; i < BATCH; i++) {
		w->iov[i] = (struct iovec){ .iov_base = w->buf[i], .iov_len = BUF_BYTES };
		w->msg[i].msg_hdr = (struct msghdr){
			.msg_iov = &w->iov[i], .msg_iovlen = 1,
			.msg_control = w->ctl[i], .msg_controllen = sizeof(w->ctl[i]),
		};
	}
	return open_socket(rx, w);
}

/* Pin worker i: the i-th cpu of --cpus (round robin), or node N's cpus. */
static int pin(struct rx *rx, struct worker *w)
{
	cpu_set_t set, one;
	char err[200];
	int n = 0, want;

	if (!rx->o.cpus && rx->o.numa_node < 0)
		return 0;
	if (rx->o.cpus && sysnuma_parse_cpus(rx->o.cpus, &set, err, sizeof(err)) < 0) {
		log_err("--cpus: %s", err);
		return -EINVAL;
	}
	if (!rx->o.cpus && sysnuma_node_cpus(rx->o.numa_node, &set) < 0) {
		log_err("--numa-node %d: no such node", rx->o.numa_node);
		return -EINVAL;
	}
	if (rx->o.cpus) {   /* the idx-th cpu of the list, round robin */
		want = w->idx % CPU_COUNT(&set);
		CPU_ZERO(&one);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set) && n++ == want)
				CPU_SET(c, &one);
		set = one;
	}
	n = pthread_setaffinity_np(w->th, sizeof(set), &set);
	if (n) {
		log_err("pinning receive thread %d: %s", w->idx, strerror(n));
		return -n;
	}
	return 0;
}

/* ---- counters ---------------------------------------------------------- */

static void totals(struct rx *rx, uint64_t *c, struct cpiasm_stats *st)
{
	memset(c, 0, sizeof(uint64_t) * C_N);
	for (unsigned i = 0; i < rx->nw; i++)
		for (int k = 0; k < C_N; k++)
			c[k] += atomic_load_explicit(&rx->w[i].c[k], memory_order_relaxed);
	pthread_mutex_lock(&rx->lock);
	*st = *cpiasm_stats(rx->a);
	pthread_mutex_unlock(&rx->lock);
}

static void print_json(struct rx *rx, FILE *out)
{
	uint64_t c[C_N];
	struct cpiasm_stats st;

	totals(rx, c, &st);
	fprintf(out, "{\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"context_packets\":%" PRIu64
		",\"drops\":{", c[C_PACKETS], c[C_BYTES], c[C_CONTEXT]);
	for (int k = C_FIRST_DROP; k < C_N; k++)
		fprintf(out, "%s\"%s\":%" PRIu64, k == C_FIRST_DROP ? "" : ",", ctr_name[k], c[k]);
	fprintf(out, "},\"cpis\":{\"complete\":%" PRIu64 ",\"partial\":%" PRIu64
		",\"dropped\":%" PRIu64 "},\"missing_samples\":%" PRIu64 ",\"epochs\":%" PRIu64
		",\"outside_samples\":%" PRIu64 ",\"thread_packets\":[", st.cpis_complete,
		st.cpis_partial, st.cpis_dropped, st.missing_samples, st.epochs, st.outside_samples);
	for (unsigned i = 0; i < rx->nw; i++)   /* data packets each receive thread took */
		fprintf(out, "%s%" PRIu64, i ? "," : "",
			atomic_load_explicit(&rx->w[i].c[C_PACKETS], memory_order_relaxed));
	fprintf(out, "]}\n");
	fflush(out);
}

/* Append to buf[*o..len); -ENOSPC when it does not fit. */
static int __attribute__((format(printf, 4, 5)))
emit(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *o, len - *o, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *o)
		return -ENOSPC;
	*o += (size_t)n;
	return 0;
}

static int render_metrics(void *ctx, char *buf, size_t len)
{
	struct rx *rx = ctx;
	uint64_t c[C_N];
	struct cpiasm_stats st;
	size_t o = 0;
	int rc;

	totals(rx, c, &st);
	rc = emit(buf, len, &o, "# TYPE chirp_recv_packets_total counter\n"
		  "chirp_recv_packets_total %" PRIu64 "\n"
		  "# TYPE chirp_recv_bytes_total counter\n"
		  "chirp_recv_bytes_total %" PRIu64 "\n"
		  "# TYPE chirp_recv_drops_total counter\n", c[C_PACKETS], c[C_BYTES]);
	for (int k = C_FIRST_DROP; k < C_N && rc == 0; k++)
		rc = emit(buf, len, &o, "chirp_recv_drops_total{cause=\"%s\"} %" PRIu64 "\n",
			  ctr_name[k], c[k]);
	if (rc == 0)
		rc = emit(buf, len, &o, "# TYPE chirp_recv_cpis_total counter\n"
			  "chirp_recv_cpis_total{state=\"complete\"} %" PRIu64 "\n"
			  "chirp_recv_cpis_total{state=\"partial\"} %" PRIu64 "\n"
			  "chirp_recv_cpis_total{state=\"dropped\"} %" PRIu64 "\n"
			  "# TYPE chirp_recv_missing_samples_total counter\n"
			  "chirp_recv_missing_samples_total %" PRIu64 "\n"
			  "# TYPE chirp_recv_epochs_total counter\n"
			  "chirp_recv_epochs_total %" PRIu64 "\n",
			  st.cpis_complete, st.cpis_partial, st.cpis_dropped, st.missing_samples,
			  st.epochs);
	return rc < 0 ? rc : (int)o;
}

/* ---- main -------------------------------------------------------------- */

static int start_workers(struct rx *rx)
{
	for (unsigned i = 0; i < rx->o.threads; i++) {
		struct worker *w = &rx->w[i];
		int rc = setup_worker(rx, w, i);

		rx->nw = i + 1;
		if (rc < 0)
			return rc;
	}
	steer_by_stream(rx);
	for (unsigned i = 0; i < rx->nw; i++) {
		int rc = pthread_create(&rx->w[i].th, NULL, worker_main, &rx->w[i]);

		if (rc) {
			log_err("pthread_create: %s", strerror(rc));
			rx->nw = i;
			return -rc;
		}
		if (pin(rx, &rx->w[i]) < 0) {
			rx->nw = i + 1;
			return -EINVAL;
		}
	}
	return 0;
}

static void main_loop(struct rx *rx, struct metrics_http *mh)
{
	double next_stats = rx->o.stats_s > 0 ? mono_s() + rx->o.stats_s : 0;

	while (!stop_sig && !atomic_load(&rx->stop)) {
		uint64_t last = atomic_load(&rx->last_packet_ns);

		if (mh) {
			struct pollfd p = { .fd = metrics_http_fd(mh), .events = POLLIN };

			(void)poll(&p, 1, 50);
			metrics_http_run(mh);
		} else {
			tool_sleep(0.05);
		}
		if (next_stats && mono_s() >= next_stats) {
			print_json(rx, stdout);
			next_stats += rx->o.stats_s;
		}
		if (rx->o.count && atomic_load(&rx->committed) >= rx->o.count)
			break;
		if (rx->o.idle_exit_s > 0 && last &&
		    (double)(mono_ns() - last) > rx->o.idle_exit_s * 1e9)
			break;
	}
	atomic_store(&rx->stop, 1);
}

static void finish(struct rx *rx)
{
	for (unsigned i = 0; i < rx->nw; i++)
		if (rx->w[i].th)
			pthread_join(rx->w[i].th, NULL);
	rx->no_hold = 1;   /* what a worker held back is placed before the flush */
	for (unsigned i = 0; i < rx->nw; i++)
		if (rx->w[i].pending && rx->a && rx->ring && !atomic_load(&rx->failed))
			(void)batch(&rx->w[i], rx->w[i].pending, mono_ns());
	for (unsigned i = 0; i < rx->nw; i++) {
		if (rx->w[i].fd >= 0)
			close(rx->w[i].fd);
		free(rx->w[i].buf);
	}
	if (rx->a && rx->ring && !atomic_load(&rx->failed)) {
		int rc = cpiasm_flush(rx->a);   /* what is in flight goes out, flagged */

		if (rc < 0)
			log_err("ring %s: %s", chirp_ring_name(rx->ring), strerror(-rc));
	}
}

/*
 * The lock the receive threads share is held for a batch's decisions only
 * (the copies run outside it), a few microseconds: a thread that finds it
 * taken spins a while before it sleeps (glibc's adaptive mutex), as a
 * sleep and a wake-up cost more than the wait, and on a virtual machine
 * the wake-up is slower still.
 */
static int init_lock(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc = pthread_mutexattr_init(&a);

	if (rc) {
		log_err("pthread_mutexattr_init: %s", strerror(rc));
		return -rc;
	}
	rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	if (rc == 0)
		rc = pthread_mutex_init(m, &a);
	if (rc)
		log_err("pthread_mutex_init: %s", strerror(rc));
	pthread_mutexattr_destroy(&a);
	return -rc;
}

int main(int argc, char **argv)
{
	static struct rx rx;
	struct chirp_config cfg;
	struct metrics_http *mh = NULL;
	char err[256];
	int ret = EXIT_ERR;

	log_init(argv[0]);
	if (parse_args(&rx.o, argc, argv) < 0)
		return EXIT_USAGE;
	if (rx.o.config_path) {
		int n = config_load(&cfg, rx.o.config_path, stderr);

		if (n != 0) {
			if (n > 0)
				log_err("%s: %d error%s", rx.o.config_path, n, n == 1 ? "" : "s");
			return EXIT_USAGE;
		}
	}
	if (init_lock(&rx.lock) < 0)
		return EXIT_ERR;
	if (tool_catch_signals(&stop_sig) < 0)
		return EXIT_ERR;
	if (rx.o.cpi_log && !(rx.log = fopen(rx.o.cpi_log, "w"))) {
		log_err("%s: %s", rx.o.cpi_log, strerror(errno));
		return EXIT_ERR;
	}
	if (open_ring(&rx, rx.o.config_path ? &cfg : NULL) < 0)
		goto out;
	if (rx.o.metrics) {
		mh = metrics_http_create(rx.o.metrics, render_metrics, &rx, err, sizeof(err));
		if (!mh) {
			log_err("--metrics: %s", err);
			goto out;
		}
	}
	if (start_workers(&rx) < 0) {
		atomic_store(&rx.stop, 1);
		finish(&rx);
		goto out;
	}
	log_notice("listening on port %u", bound_port(&rx));
	log_info("receiving %s on %s into %s (%ux%ux%u %s, %" PRIu64 " Hz from %s, pulse "
		 "period %" PRIu64 " samples)", rx.o.plain ? "plain UDP" : "VRT", rx.o.listen,
		 chirp_ring_name(rx.ring), rx.g.channels, rx.g.pulses, rx.g.samples,
		 tool_ring_format_name(rx.g.format), rx.fs_int, rx.fs_from, rx.pri);
	main_loop(&rx, mh);
	finish(&rx);
	print_json(&rx, stdout);
	ret = atomic_load(&rx.failed) ? EXIT_ERR : EXIT_OK;
out:
	metrics_http_destroy(mh);
	cpiasm_destroy(rx.a);
	if (rx.ring)
		chirp_ring_detach(rx.ring);
	if (rx.log)
		fclose(rx.log);
	free(rx.refused);
	free(rx.warned);
	free(rx.owner);
	return ret;
}
