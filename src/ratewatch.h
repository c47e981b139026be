/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratewatch.h — is the input arriving faster than chirpd can sustain?
 *
 * The producer's offered count (blocks committed to the input ring plus
 * blocks it dropped on a full ring: chirp_ring_stats committed + overruns)
 * is sampled at the main loop's tick; the offered rate over the last
 * RATEWATCH_WINDOW_NS is compared with the sustainable capacity (CPI/s,
 * measured or from the capacity cache). The state turns "over" when that
 * rate exceeds the capacity — the input has stayed above it for a second,
 * which at a few per cent over fills a ring of buffer_ms = 100 ms only
 * after seconds — and clears when it falls to (1 - RATEWATCH_HYSTERESIS)
 * of it, so a rate at the capacity does not flap. Counting the dropped
 * blocks keeps the rate visible once the ring is full.
 *
 * One thread (chirpd's main loop) owns a ratewatch; nothing allocates.
 */
#ifndef CHIRP_RATEWATCH_H
#define CHIRP_RATEWATCH_H

#include <stdint.h>

#define RATEWATCH_WINDOW_NS   1000000000ull  /* the rate's window: one second */
#define RATEWATCH_HYSTERESIS  0.02           /* clears at 98 % of capacity     */
#define RATEWATCH_SAMPLES     64             /* ticks kept (>= window / tick)  */

struct ratewatch {
	uint64_t t_ns[RATEWATCH_SAMPLES];        /* CLOCK_MONOTONIC of sample i */
	uint64_t offered[RATEWATCH_SAMPLES];     /* offered blocks at sample i  */
	unsigned n, head;                        /* samples held, next index    */
	double rate_cps;                         /* offered CPI/s over the window,
						    -1 before a window is full */
	int over;                                /* 1 while above capacity      */
	uint64_t events;                         /* times it turned over        */
};

/* Start empty (rate unknown, not over). */
void ratewatch_init(struct ratewatch *w);

/*
 * Add a sample: offered blocks at now_ns (monotonic, not decreasing);
 * capacity_cps > 0 is the sustainable rate (0 or less: unknown, the state
 * stays clear). An offered count that goes back (the ring was re-created)
 * starts over. Returns 1 when the state turned over, -1 when it cleared,
 * 0 otherwise.
 */
int ratewatch_update(struct ratewatch *w, uint64_t now_ns, uint64_t offered,
		     double capacity_cps);

#endif /* CHIRP_RATEWATCH_H */
