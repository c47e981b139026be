/* SPDX-License-Identifier: Apache-2.0 */
/*
 * latency_probe.c — an independent consumer of chirpd's output ring that
 * measures end-to-end latency per CPI, for scripts/bench-latency.sh.
 *
 *   latency_probe --ring /chirpd-out [--warmup 4] [--measure 10] [--wait 10]
 *                 [--first-timeout 60] [--max-samples N] [--raw FILE]
 *                 [--marker FILE] [--fs-step N] [--progress SEC]
 *
 * Latency of a CPI = CLOCK_REALTIME when chirp_ring_peek() returns its
 * result − the block's timestamp_ns (chirpd forwards the input block's
 * timestamp, which the producer's chirp_ring_commit stamped with its
 * CLOCK_REALTIME). So it spans producer commit → chirpd → output commit →
 * this consumer's wake-up: what a downstream consumer sees.
 *
 * Window: the warm-up (seconds) starts at the first block received, the
 * measured window (seconds) follows it; only blocks peeked inside the window
 * count. The probe exits when the window closes (or on SIGINT/SIGTERM,
 * reporting what it has, marked interrupted).
 *
 * Lost CPIs inside the window, from each block against the block before it
 * (that one may be a warm-up block):
 *   - missing = first_sample gap / fs_step − 1 when first_sample advanced by
 *     a whole number of steps (fs_step = pulses × samples of the ring, the
 *     producer's first_sample per CPI, as chirp-feed commits it); this counts
 *     producer drops (input ring full), CPIs chirpd lost and output drops;
 *     else the output seq gap (seq − previous − 1);
 *   - a block flagged DISCONTINUITY with no gap of either kind counts 1
 *     (something was lost that the numbers cannot size);
 *   lost = missing + those flagged blocks. flagged = blocks with the flag.
 *
 * Nothing is allocated per CPI: the latency array (--max-samples, default
 * 4 000 000, i.e. 32 MB) is allocated and touched before the first block;
 * samples beyond it are counted (overflow) but not stored.
 *
 * Output (stdout), one line, key=value, times in microseconds:
 *   probe n=… p50_us=… p90_us=… p99_us=… p999_us=… max_us=… mean_us=…
 *         lost=… missing=… flagged=… window_s=… rate=… overflow=… interrupted=0|1
 *         reattached=… first_fs=… last_fs=…
 * Percentiles are nearest-rank on the sorted samples (p99.9 of 10 000
 * samples is the 9 990th). --raw FILE writes every latency (µs, one per
 * line, in arrival order) after the window. --marker FILE is created (empty)
 * when the window opens, so a script can snapshot counters at that moment.
 * --linger: after the window, keep consuming (without measuring) until
 * SIGINT/SIGTERM, so that chirpd's counters, read by a script once the
 * summary line is out, do not count output drops caused by the probe having
 * gone; the summary is then computed (sorted) by a second thread while this
 * one goes on draining, since sorting a 5-minute soak's 600 000 samples
 * took longer than the output ring's 100 ms; the raw file is written at
 * exit.
 * Waiting for the next block, the probe sleeps on the ring's futex, as an
 * ordinary consumer does (its wake-up is then part of the latency it
 * measures). --spin polls instead (one busy core); on a virtual machine a
 * polling probe beside chirpd's polling data thread can slow chirpd's CUDA
 * submissions several times over (they compete for the host's cores), so
 * it is not the default.
 * --spin-us N waits the library's way with chirp_ring_set_spin(N µs):
 * polling for up to N µs, then sleeping (a consumer that stays awake while
 * blocks come closer than N µs apart and sleeps when they stop).
 * --reattach: when chirpd re-creates its output ring under the probe (a
 * restarted chirpd whose ring size differs: slots = auto follows the
 * capacity it measures at start), peek returns -ESTALE; the probe then
 * detaches and attaches again by name (waiting up to --wait) and goes on:
 * the next block's gap is counted by first_sample only (sequence numbers
 * restart with the ring). Without it, -ESTALE ends the probe with an error.
 * The summary line then gives reattached=N, and first_fs / last_fs: the
 * first_sample of the first and of the last block counted in the window (0
 * when none), so that a script can pick the same CPIs out of chirpd's
 * flight recorder (chirpctl trace) and tell chirpd's own latency from the
 * probe's wake-up.
 * Exit 0; 1 on error; 3 when no block arrived within --first-timeout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "timeutil.h"
#include "bench.h"
#include "chirp/ring.h"

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig) { (void)sig; stop_sig = 1; }

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile q (0 < q <= 1) of n sorted values, in µs. */
static double pct_us(const int64_t *v, uint64_t n, double q)
{
	uint64_t i;

	if (!n)
		return NAN;
	i = (uint64_t)ceil(q * (double)n);
	i = i < 1 ? 0 : i - 1;
	return (double)v[i < n ? i : n - 1] / 1e3;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: latency_probe --ring NAME [--warmup S] [--measure S] [--wait S]\n"
		   "       [--first-timeout S] [--max-samples N] [--raw FILE] [--marker FILE]\n"
		   "       [--fs-step N] [--progress S] [--linger] [--spin] [--spin-us N] [--reattach]\n"
		   "(see the comment at the top of bench/latency_probe.c)\n");
}

/* What the summary line says; summarize() fills rc. */
struct summary {
	const int64_t *lat;
	int64_t *sorted;
	uint64_t n, lost, missing, flagged, overflow, reattached, first_fs, last_fs;
	double window;
	int interrupted, rc;
};

/* Sort a copy of the samples and print the summary line (a thread of its
 * own with --linger, so that draining goes on meanwhile). */
static void *summarize(void *arg)
{
	struct summary *s = arg;
	uint64_t n = s->n;
	double sum = 0;

	s->rc = -1;
	/* Percentiles from a sorted copy: the raw file keeps arrival order. */
	s->sorted = malloc((n ? n : 1) * sizeof(*s->sorted));
	if (!s->sorted) {
		fprintf(stderr, "latency_probe: out of memory sorting %" PRIu64 " samples\n", n);
		return NULL;
	}
	memcpy(s->sorted, s->lat, n * sizeof(*s->lat));
	for (uint64_t i = 0; i < n; i++)
		sum += (double)s->lat[i];
	qsort(s->sorted, n, sizeof(*s->sorted), cmp_i64);
	printf("probe n=%" PRIu64 " p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f"
	       " mean_us=%.1f lost=%" PRIu64 " missing=%" PRIu64 " flagged=%" PRIu64
	       " window_s=%.3f rate=%.2f overflow=%" PRIu64 " interrupted=%d reattached=%" PRIu64
	       " first_fs=%" PRIu64 " last_fs=%" PRIu64 "\n",
	       n, pct_us(s->sorted, n, 0.50), pct_us(s->sorted, n, 0.90), pct_us(s->sorted, n, 0.99),
	       pct_us(s->sorted, n, 0.999), n ? (double)s->sorted[n - 1] / 1e3 : NAN,
	       n ? sum / (double)n / 1e3 : NAN, s->lost, s->missing, s->flagged, s->window,
	       s->window > 0 ? (double)(n + s->overflow) / s->window : 0.0, s->overflow,
	       s->interrupted, s->reattached, s->first_fs, s->last_fs);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "latency_probe: stdout: %s\n", strerror(errno));
		return NULL;
	}
	s->rc = 0;
	return NULL;
}

static int parse_d(const char *s, double *v)
{
	char *e;

	errno = 0;
	*v = strtod(s, &e);
	return errno || e == s || *e || !isfinite(*v) || *v < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ring", required_argument, NULL, 'r' }, { "warmup", required_argument, NULL, 'w' },
		{ "measure", required_argument, NULL, 'm' }, { "wait", required_argument, NULL, 'W' },
		{ "first-timeout", required_argument, NULL, 'F' },
		{ "max-samples", required_argument, NULL, 'N' }, { "raw", required_argument, NULL, 'o' },
		{ "marker", required_argument, NULL, 'k' }, { "fs-step", required_argument, NULL, 's' },
		{ "progress", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ "linger", no_argument, NULL, 'L' },
		{ "spin", no_argument, NULL, 'S' },
		{ "spin-us", required_argument, NULL, 'U' },
		{ "reattach", no_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ring_name = NULL, *raw_path = NULL, *marker = NULL;
	double warmup_s = 4, measure_s = 10, wait_s = 10, first_timeout_s = 60, progress_s = 0, v;
	uint64_t max_samples = 4000000, fs_step = 0;
	struct chirp_ring *r = NULL;
	struct chirp_ring_geometry g;
	struct sigaction sa;
	int64_t *lat = NULL;
	uint64_t n = 0, overflow = 0, lost = 0, missing = 0, flagged = 0, blocks = 0;
	uint64_t prev_seq = 0, prev_fs = 0;
	int have_prev = 0, in_window = 0, linger = 0, spin = 0, c, rc = 1;
	int reattach = 0, seq_valid = 0, fs_step_given = 0;
	int64_t spin_ns = 0;
	uint64_t reattached = 0, first_fs = 0, last_fs = 0;
	int64_t *sorted = NULL;
	double t_first = 0, t_open = 0, t_close = 0, t_prog = 0, t_start;
	char err[256];

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'r': ring_name = optarg; break;
		case 'o': raw_path = optarg; break;
		case 'k': marker = optarg; break;
		case 'w': if (parse_d(optarg, &warmup_s)) goto bad; break;
		case 'm': if (parse_d(optarg, &measure_s) || measure_s <= 0) goto bad; break;
		case 'W': if (parse_d(optarg, &wait_s)) goto bad; break;
		case 'F': if (parse_d(optarg, &first_timeout_s)) goto bad; break;
		case 'p': if (parse_d(optarg, &progress_s)) goto bad; break;
		case 'N': if (parse_d(optarg, &v) || v < 1 || v > 1e9) goto bad; max_samples = (uint64_t)v; break;
		case 's': if (parse_d(optarg, &v) || v < 1) goto bad; fs_step = (uint64_t)v; fs_step_given = 1; break;
		case 'L': linger = 1; break;
		case 'S': spin = 1; break;
		case 'U':
			if (parse_d(optarg, &v) || v < 0 || v * 1e3 > (double)CHIRP_RING_MAX_SPIN_NS)
				goto bad;
			spin_ns = (int64_t)(v * 1e3);
			break;
		case 'A': reattach = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!ring_name || optind < argc) {
bad:
		usage(stderr);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;   /* no SA_RESTART: the wait returns -EINTR */
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
		fprintf(stderr, "latency_probe: sigaction: %s\n", strerror(errno));
		return 1;
	}
	lat = malloc(max_samples * sizeof(*lat));
	if (!lat) {
		fprintf(stderr, "latency_probe: cannot allocate %" PRIu64 " samples\n", max_samples);
		return 1;
	}
	memset(lat, 0, max_samples * sizeof(*lat));   /* touch every page now, not per CPI */
	/* Best effort: RLIMIT_MEMLOCK is often small; the pages are touched anyway. */
	(void)mlock(lat, max_samples * sizeof(*lat));

	t_start = now_s();
	for (;;) {
		r = chirp_ring_attach(ring_name, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
		if (r || stop_sig || now_s() - t_start >= wait_s)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	}
	if (!r) {
		fprintf(stderr, "latency_probe: %s\n", err);
		goto out;
	}
	if (spin_ns && (rc = chirp_ring_set_spin(r, spin_ns)) < 0) {
		fprintf(stderr, "latency_probe: chirp_ring_set_spin: %s\n", strerror(-rc));
		rc = 1;
		goto out;
	}
	chirp_ring_geometry(r, &g);
	if (!fs_step)
		fs_step = (uint64_t)g.pulses * g.samples;
	fprintf(stderr, "latency_probe: attached to %s (%ux%ux%u, %u slots); first_sample step %"
		PRIu64 "\n", ring_name, g.channels, g.pulses, g.samples, g.slots, fs_step);

	while (!stop_sig) {
		struct chirp_ring_block b;
		uint64_t t_ns;
		double t;
		int ret = chirp_ring_peek(r, &b);

		if (ret == -EAGAIN) {
			t = now_s();
			if (!blocks && t - t_start > first_timeout_s) {
				fprintf(stderr, "latency_probe: no block within %.0f s\n", first_timeout_s);
				rc = 3;
				goto out;
			}
			if (in_window && t >= t_close)
				break;
			if (spin) {
				/* Poll: the probe's own wake-up is not counted. */
				cpu_relax();
				continue;
			}
			ret = chirp_ring_wait(r, 100000000LL);
			if (ret == 0 || ret == -ETIMEDOUT || ret == -EINTR || (ret == -ESTALE && reattach))
				continue;   /* -ESTALE: the next peek re-attaches */
			fprintf(stderr, "latency_probe: wait: %s\n", strerror(-ret));
			goto out;
		}
		if (ret == -ESTALE && reattach) {
			/* chirpd re-created its output ring: attach to the new one. */
			double t0 = now_s();

			chirp_ring_detach(r);
			r = NULL;
			while (!stop_sig) {
				r = chirp_ring_attach(ring_name, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
				if (r || now_s() - t0 >= wait_s)
					break;
				nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
			}
			if (!r) {
				fprintf(stderr, "latency_probe: re-attaching %s: %s\n", ring_name,
					stop_sig ? "interrupted" : err);
				goto out;
			}
			if (spin_ns)
				(void)chirp_ring_set_spin(r, spin_ns);   /* checked at the first attach */
			chirp_ring_geometry(r, &g);
			if (!fs_step_given)
				fs_step = (uint64_t)g.pulses * g.samples;
			reattached++;
			seq_valid = 0;
			fprintf(stderr, "latency_probe: %s was re-created: re-attached (%ux%ux%u, %u slots)\n",
				ring_name, g.channels, g.pulses, g.samples, g.slots);
			continue;
		}
		if (ret < 0) {
			/* -ESTALE: chirpd re-created its output ring; -EBADMSG: corrupt. */
			fprintf(stderr, "latency_probe: peek on %s: %s\n", ring_name, strerror(-ret));
			goto out;
		}
		t_ns = realtime_ns();
		t = now_s();
		blocks++;
		if (blocks == 1) {
			t_first = t;
			t_open = t_first + warmup_s;
			t_close = t_open + measure_s;
			t_prog = t_open + progress_s;
		}
		if (!in_window && t >= t_open) {
			in_window = 1;
			if (marker) {
				FILE *mf = fopen(marker, "w");

				if (mf)
					fclose(mf);
				else
					fprintf(stderr, "latency_probe: %s: %s\n", marker, strerror(errno));
			}
		}
		if (in_window && t >= t_close) {
			chirp_ring_release(r);
			break;
		}
		if (in_window) {
			uint64_t gap = 0;

			if (have_prev) {
				if (b.first_sample > prev_fs && (b.first_sample - prev_fs) % fs_step == 0)
					gap = (b.first_sample - prev_fs) / fs_step - 1;
				else if (seq_valid && b.seq > prev_seq)
					gap = b.seq - prev_seq - 1;
			}
			missing += gap;
			lost += gap;
			if (b.flags & CHIRP_RING_DISCONTINUITY) {
				flagged++;
				if (!gap)
					lost++;
			}
			if (!n && !overflow)
				first_fs = b.first_sample;
			last_fs = b.first_sample;
			if (n < max_samples)
				lat[n++] = (int64_t)(t_ns - b.timestamp_ns);
			else
				overflow++;
			if (progress_s > 0 && t >= t_prog) {
				fprintf(stderr, "latency_probe: %.0f s into the window: %" PRIu64
					" CPIs, lost %" PRIu64 ", last %.1f us\n", t - t_open, n,
					lost, (double)(int64_t)(t_ns - b.timestamp_ns) / 1e3);
				t_prog += progress_s;
			}
		}
		have_prev = 1;
		seq_valid = 1;
		prev_seq = b.seq;
		prev_fs = b.first_sample;
		ret = chirp_ring_release(r);
		if (ret < 0 && !(ret == -ESTALE && reattach)) {
			fprintf(stderr, "latency_probe: release: %s\n", strerror(-ret));
			goto out;
		}
	}
	{
		struct summary sm = {
			.lat = lat, .n = n, .lost = lost, .missing = missing, .flagged = flagged,
			.overflow = overflow, .reattached = reattached, .first_fs = first_fs,
			.last_fs = last_fs, .interrupted = stop_sig ? 1 : 0,
			.window = in_window ? (stop_sig ? now_s() : t_close) - t_open : 0,
		};
		pthread_t th;
		sigset_t all, old;
		int threaded = 0;

		if (linger && !stop_sig) {
			/* SIGINT/SIGTERM stay with this thread, which drains */
			sigfillset(&all);
			pthread_sigmask(SIG_SETMASK, &all, &old);
			threaded = pthread_create(&th, NULL, summarize, &sm) == 0;
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		}
		if (!threaded)
			summarize(&sm);
		while (linger && !stop_sig) {   /* drain, unmeasured, until told to stop */
			struct chirp_ring_block b;
			int ret = chirp_ring_peek(r, &b);

			if (ret == 0)
				ret = chirp_ring_release(r);
			else if (ret == -EAGAIN)
				ret = chirp_ring_wait(r, 100000000LL);
			if (ret < 0 && ret != -ETIMEDOUT && ret != -EINTR) {
				fprintf(stderr, "latency_probe: draining %s: %s\n", ring_name, strerror(-ret));
				break;
			}
		}
		if (threaded)
			pthread_join(th, NULL);
		sorted = sm.sorted;
		if (sm.rc < 0)
			goto out;
		if (raw_path) {
			FILE *rf = fopen(raw_path, "w");

			if (!rf) {
				fprintf(stderr, "latency_probe: %s: %s\n", raw_path, strerror(errno));
				goto out;
			}
			for (uint64_t i = 0; i < n; i++)
				fprintf(rf, "%.3f\n", (double)lat[i] / 1e3);
			if (fclose(rf) != 0) {
				fprintf(stderr, "latency_probe: writing %s: %s\n", raw_path, strerror(errno));
				goto out;
			}
		}
	}
	rc = 0;
out:
	if (r)
		chirp_ring_detach(r);
	free(lat);
	free(sorted);
	return rc;
}
