/* SPDX-License-Identifier: Apache-2.0 */
/*
 * example_producer.c — the smallest digitizer-side producer for chirpd:
 *   cc example_producer.c $(pkg-config --cflags --libs chirpring) -o example_producer
 * It attaches to chirpd's input ring (argv[1]), writes each CPI in place and
 * commits it with its radar mode, never waiting: a full ring drops, counts it.
 */
#include <chirp/ring.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "/chirpd-in";
	struct chirp_ring *r = NULL;
	struct chirp_ring_geometry g;
	static const uint32_t mode[] = { 0, 0, 1, 2 };   /* the schedule: [mode] ids, cyclic */
	uint64_t cpi = 0;            /* CPIs since start, dropped or not: the clock */
	char err[256];
	void *slot;

	for (;; nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL)) {   /* 1 kHz CPIs */
		if (!r) {   /* (re)attach: chirpd may not be up yet, or re-created the ring */
			r = chirp_ring_attach(name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
			if (!r) {
				fprintf(stderr, "%s; retrying\n", err);
				sleep(1);
				continue;
			}
			chirp_ring_geometry(r, &g);
		}
		int rc = chirp_ring_reserve(r, &slot);
		if (rc == 0) {
			memset(slot, 0, chirp_ring_cpi_bytes(&g));   /* DMA / copy one CPI in place */
			chirp_ring_commit_mode(r, 0, cpi * g.pulses * g.samples, 0, mode[cpi % 4]);
		} else if (rc == -ESTALE) {                      /* new geometry: attach again */
			chirp_ring_detach(r);
			r = NULL;                                /* (this CPI is lost) */
		} else if (rc != -ENOBUFS) {                     /* -ENOBUFS: dropped, counted */
			fprintf(stderr, "reserve: %s\n", strerror(-rc));
			return 1;
		}
		cpi++;
	}
}
