/* SPDX-License-Identifier: Apache-2.0 */
/*
 * example_producer.c — the smallest digitizer-side producer for chirpd.
 *
 *   cc example_producer.c $(pkg-config --cflags --libs chirpring) -o example_producer
 *   ./example_producer /chirpd-in
 *
 * chirpd creates the input ring (it owns the geometry); we attach as the
 * producer, write each CPI straight into its slot and commit it. We never
 * wait: on a full ring the block is dropped and the library counts it.
 */
#include <chirp/ring.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Stand-in for the hardware: fill one CPI (here: zeros). */
static void acquire_cpi(void *dst, uint64_t bytes) { memset(dst, 0, bytes); }

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "/chirpd-in";
	struct chirp_ring_geometry g;
	struct chirp_ring *r = NULL;
	uint64_t first_sample = 0, cpi_bytes = 0, per_cpi = 0;
	char err[256];
	void *slot;

	for (;;) {
		if (!r) {   /* (re)attach: chirpd may not be up yet, or re-created the ring */
			r = chirp_ring_attach(name, CHIRP_RING_PRODUCER, NULL, err, sizeof(err));
			if (!r) {
				fprintf(stderr, "%s; retrying\n", err);
				sleep(1);
				continue;
			}
			chirp_ring_geometry(r, &g);
			cpi_bytes = chirp_ring_cpi_bytes(&g);
			per_cpi = (uint64_t)g.pulses * g.samples;   /* samples per channel */
		}
		int rc = chirp_ring_reserve(r, &slot);
		if (rc == 0) {
			acquire_cpi(slot, cpi_bytes);          /* DMA / copy in place */
			chirp_ring_commit(r, 0 /* now */, first_sample, 0);
		} else if (rc == -ESTALE) {
			chirp_ring_detach(r);                   /* geometry changed */
			r = NULL;
			continue;
		} else if (rc != -ENOBUFS) {                    /* -ENOBUFS: dropped, counted */
			fprintf(stderr, "reserve: %s\n", strerror(-rc));
			return 1;
		}
		first_sample += per_cpi;   /* the sample clock runs on, dropped or not */
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);  /* 1 kHz CPI rate */
	}
}
