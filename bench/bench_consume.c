/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_consume.c — what a C consumer pays per CPI in libchirpring: the
 * baseline of bench/bench_py_ring.py (the same loop through the chirpring
 * Python package).
 *
 *   build/bench/bench_consume [-r ROUNDS] [-s SLOTS] C,P,R
 *
 * One process holds both roles of a cf32 ring of SLOTS slots (default 64)
 * of C x P x R samples. Each round the producer fills every slot (reserve,
 * commit; payload untouched, untimed), then the consumer takes them all:
 * peek, read one sample of the payload, release — timed. No other process
 * and no waiting is involved, so the figure is the consumer's own cost per
 * CPI. Prints the median over ROUNDS (default 200) in ns per CPI.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "chirp/ring.h"

int main(int argc, char **argv)
{
	struct chirp_ring_geometry g = { .format = CHIRP_RING_CF32, .slots = 64, .sample_rate_hz = 1e6 };
	struct chirp_ring *p = NULL, *c = NULL;
	struct chirp_ring_block blk;
	char name[64], err[256];
	int rounds = 200, opt, rc = 1;
	double *ns = NULL;
	volatile float sink = 0;

	while ((opt = getopt(argc, argv, "r:s:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 's')
			g.slots = (uint32_t)atoi(optarg);
		else
			goto usage;
	}
	if (optind != argc - 1 || rounds < 1 ||
	    sscanf(argv[optind], "%u,%u,%u", &g.channels, &g.pulses, &g.samples) != 3) {
usage:
		fprintf(stderr, "usage: bench_consume [-r ROUNDS] [-s SLOTS] C,P,R\n");
		return 2;
	}
	snprintf(name, sizeof(name), "/chirp-bench-consume-%d", (int)getpid());
	if (!(ns = calloc((size_t)rounds, sizeof(*ns)))) {
		fprintf(stderr, "bench_consume: out of memory\n");
		return 1;
	}
	p = chirp_ring_create(name, &g, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
	if (!p) {
		fprintf(stderr, "bench_consume: create %s: %s\n", name, err);
		goto out;
	}
	c = chirp_ring_attach(name, CHIRP_RING_CONSUMER, NULL, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "bench_consume: attach %s: %s\n", name, err);
		goto out;
	}
	for (int r = 0; r < rounds; r++) {
		for (uint32_t k = 0; k < g.slots; k++) {
			void *slot;
			int e = chirp_ring_reserve(p, &slot);
			if (!e)
				e = chirp_ring_commit(p, 0, 0, 0);
			if (e) {
				fprintf(stderr, "bench_consume: reserve/commit: %s\n", strerror(-e));
				goto out;
			}
		}
		double t0 = now_s();
		for (uint32_t k = 0; k < g.slots; k++) {
			int e = chirp_ring_peek(c, &blk);
			if (e) {
				fprintf(stderr, "bench_consume: peek: %s\n", strerror(-e));
				goto out;
			}
			sink += ((const float *)blk.payload)[0];
			if ((e = chirp_ring_release(c))) {
				fprintf(stderr, "bench_consume: release: %s\n", strerror(-e));
				goto out;
			}
		}
		ns[r] = (now_s() - t0) * 1e9 / g.slots;
	}
	qsort(ns, (size_t)rounds, sizeof(*ns), cmp_d);
	printf("c_consume_ns_per_cpi %.1f\n", ns[rounds / 2]);
	rc = 0;
out:
	if (c)
		chirp_ring_detach(c);
	if (p)
		chirp_ring_detach(p);
	chirp_ring_unlink(name);
	free(ns);
	return rc;
}
