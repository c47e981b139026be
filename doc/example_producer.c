/* SPDX-License-Identifier: Apache-2.0 */
/*
 * example_producer.c — the smallest digitizer-side producer for chirpd:
 *   cc example_producer.c $(pkg-config --cflags --libs chirpring) -o example_producer
 * It attaches to chirpd's input ring (argv[1]), writes each CPI in place and
 * commits it, never waiting: on a full ring the library drops and counts it.
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
	uint64_t first_sample = 0;   /* the digitizer's sample clock */
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
			chirp_ring_commit(r, 0 /* now */, first_sample, 0);
		} else if (rc == -ESTALE) {                      /* new geometry: attach again */
			chirp_ring_detach(r);
			r = NULL;
			continue;
		} else if (rc != -ENOBUFS) {                     /* -ENOBUFS: dropped, counted */
			fprintf(stderr, "reserve: %s\n", strerror(-rc));
			return 1;
		}
		first_sample += (uint64_t)g.pulses * g.samples;  /* runs on, dropped or not */
	}
}
