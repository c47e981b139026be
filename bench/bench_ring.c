/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_ring.c — cross-process handoff through libchirpring.
 *
 *   build/bench/bench_ring [-r RUNS] [-t SECONDS] [-c PCPU,CCPU] [SLOT_BYTES...]
 *
 * A producer process and a consumer process (forked), pinned to different
 * CPUs when there are two or more, hand slots of 64 KiB, 1 MiB and 16 MiB
 * (default) through a shm ring with the payload untouched: this measures
 * the ring (index publication, descriptor, cache-line traffic), not memcpy.
 *
 *  stream    the producer commits as fast as the ring has room (it waits
 *            for space with chirp_ring_wait, so nothing is dropped); the
 *            consumer busy-polls chirp_ring_peek and releases at once.
 *            Reports slots/s.
 *  pingpong  one slot in flight: the producer stamps CLOCK_MONOTONIC into
 *            the descriptor at commit and waits until it is released; the
 *            consumer reads the clock when peek returns it. Reports the
 *            handoff latency commit -> peek, p50 and p99.
 *
 * Each figure is the median over RUNS runs (default 5). The clock read
 * itself (~20 ns with the vDSO) is included in the latency.
 */
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "chirp/ring.h"

#define MAX_LAT (1u << 20)

static int prod_cpu = 0, cons_cpu = 1;
#define STOP UINT64_MAX

struct result {
	uint64_t n;             /* blocks received (excluding the stop block) */
	int64_t t_first, t_last;
	int err;
	uint64_t nlat;
	uint64_t lat[MAX_LAT];
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);   /* best effort */
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void consumer(const char *name, struct result *res)
{
	struct chirp_ring *c = NULL;
	struct chirp_ring_block b;
	int rc;

	pin(cons_cpu);
	for (int i = 0; !c && i < 1000; i++)
		if (!(c = chirp_ring_attach(name, CHIRP_RING_CONSUMER, NULL, NULL, 0)))
			usleep(1000);
	if (!c) {
		res->err = 1;
		_exit(1);
	}
	for (;;) {
		rc = chirp_ring_peek(c, &b);
		if (rc == -EAGAIN) {
			relax();
			continue;
		}
		if (rc != 0) {
			res->err = rc;
			break;
		}
		int64_t t = now_ns();

		if (b.first_sample == STOP) {
			chirp_ring_release(c);
			break;
		}
		if (res->n == 0)
			res->t_first = t;
		res->t_last = t;
		res->n++;
		if (res->nlat < MAX_LAT)
			res->lat[res->nlat++] = (uint64_t)(t - (int64_t)b.timestamp_ns);
		chirp_ring_release(c);
	}
	chirp_ring_detach(c);
	_exit(0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One run; returns 0 and fills rate (slots/s) or p50/p99 (ns). */
static int run(uint64_t slot_bytes, uint32_t slots, int pingpong, double secs,
	       struct result *res, double *rate, double *p50, double *p99)
{
	struct chirp_ring_geometry g = {
		.channels = 1, .pulses = 1, .samples = (uint32_t)(slot_bytes / 8),
		.format = CHIRP_RING_CF32, .slots = slots, .sample_rate_hz = 1e6,
	};
	struct chirp_ring_stats st;
	struct chirp_ring *p;
	char name[64], err[256] = "";
	int64_t end;
	void *pl;
	int status, rc = 0;
	uint64_t committed = 0;
	pid_t pid;

	snprintf(name, sizeof(name), "/chirp-bench-%d", (int)getpid());
	chirp_ring_unlink(name);
	p = chirp_ring_create(name, &g, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	if (!p) {
		fprintf(stderr, "bench_ring: %s\n", err);
		return -1;
	}
	memset(res, 0, offsetof(struct result, lat));
	pid = fork();
	if (pid < 0) {
		perror("fork");
		rc = -1;
		goto out;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		consumer(name, res);
	}
	pin(prod_cpu);
	while (chirp_ring_peer_attached(p) != 1)
		usleep(100);
	end = now_ns() + (int64_t)(secs * 1e9);
	while (now_ns() < end) {
		if (pingpong) {
			/* wait until the consumer has released the last one */
			do {
				chirp_ring_stats(p, &st);
				relax();
			} while (st.released != committed);
		} else if (chirp_ring_wait(p, 1000000000LL) != 0) {
			continue;
		}
		if (chirp_ring_reserve(p, &pl) != 0) {
			fprintf(stderr, "bench_ring: reserve failed\n");
			rc = -1;
			break;
		}
		chirp_ring_commit(p, (uint64_t)now_ns(), committed, 0);
		committed++;
	}
	while (chirp_ring_wait(p, 1000000000LL) != 0 || chirp_ring_reserve(p, &pl) != 0)
		;
	chirp_ring_commit(p, (uint64_t)now_ns(), STOP, 0);
	waitpid(pid, &status, 0);
	if (res->err || res->n != committed) {
		fprintf(stderr, "bench_ring: consumer error %d, %llu of %llu blocks\n", res->err,
			(unsigned long long)res->n, (unsigned long long)committed);
		rc = -1;
		goto out;
	}
	chirp_ring_stats(p, &st);
	if (st.overruns) {
		fprintf(stderr, "bench_ring: %llu overruns\n", (unsigned long long)st.overruns);
		rc = -1;
	}
	*rate = res->n > 1 ? (double)(res->n - 1) * 1e9 / (double)(res->t_last - res->t_first) : 0;
	qsort(res->lat, res->nlat, sizeof(uint64_t), cmp_u64);
	*p50 = res->nlat ? (double)res->lat[res->nlat / 2] : 0;
	*p99 = res->nlat ? (double)res->lat[res->nlat * 99 / 100] : 0;
out:
	chirp_ring_detach(p);
	chirp_ring_unlink(name);
	return rc;
}

int main(int argc, char **argv)
{
	uint64_t sizes[16] = { 64 << 10, 1 << 20, 16 << 20 };
	int nsizes = 3, runs = 5, opt;
	double secs = 0.5;
	struct result *res;

	while ((opt = getopt(argc, argv, "r:t:c:h")) != -1) {
		switch (opt) {
		case 'r': runs = atoi(optarg); break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &prod_cpu, &cons_cpu) != 2) {
				fprintf(stderr, "bench_ring: -c PRODUCER_CPU,CONSUMER_CPU\n");
				return 2;
			}
			break;
		case 't': secs = atof(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-r RUNS] [-t SECONDS] [-c PCPU,CCPU] [SLOT_BYTES...]\n",
				argv[0]);
			return 2;
		}
	}
	if (runs < 1 || runs > 101 || !(secs > 0)) {
		fprintf(stderr, "bench_ring: bad -r or -t\n");
		return 2;
	}
	if (optind < argc) {
		nsizes = 0;
		for (; optind < argc && nsizes < 16; optind++) {
			sizes[nsizes] = strtoull(argv[optind], NULL, 0);
			if (sizes[nsizes] < 4096 || sizes[nsizes] % 4096) {
				fprintf(stderr, "bench_ring: slot bytes must be a multiple of 4096\n");
				return 2;
			}
			nsizes++;
		}
	}
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("bench_ring: %ld CPUs online, producer on CPU %d, consumer on CPU %d, "
	       "%d runs of %.1f s per figure (median)\n", sysconf(_SC_NPROCESSORS_ONLN),
	       prod_cpu, cons_cpu, runs, secs);
	printf("%-10s %6s %14s %14s %14s %14s\n", "slot", "slots", "stream slot/s",
	       "stream p50 ns", "pingpong p50", "pingpong p99");
	for (int i = 0; i < nsizes; i++) {
		/* keep the ring under ~128 MiB of /dev/shm */
		uint32_t slots = sizes[i] >= (16u << 20) ? 8 : sizes[i] >= (1u << 20) ? 16 : 64;
		double rate[101], sp50[101], pp50[101], pp99[101], r, a;
		char label[32];
		int ok = 1;

		if (sizes[i] % (1u << 20) == 0)
			snprintf(label, sizeof(label), "%llu MiB", (unsigned long long)(sizes[i] >> 20));
		else
			snprintf(label, sizeof(label), "%llu KiB", (unsigned long long)(sizes[i] >> 10));

		for (int k = 0; k < runs && ok; k++) {
			ok = run(sizes[i], slots, 0, secs, res, &rate[k], &sp50[k], &a) == 0 &&
			     run(sizes[i], slots, 1, secs, res, &r, &pp50[k], &pp99[k]) == 0;
		}
		if (!ok)
			return 1;
		qsort(rate, runs, sizeof(double), cmp_d);
		qsort(sp50, runs, sizeof(double), cmp_d);
		qsort(pp50, runs, sizeof(double), cmp_d);
		qsort(pp99, runs, sizeof(double), cmp_d);
		printf("%-10s %6u %14.0f %14.0f %14.0f %14.0f\n", label, slots,
		       rate[runs / 2], sp50[runs / 2], pp50[runs / 2], pp99[runs / 2]);
	}
	return 0;
}
