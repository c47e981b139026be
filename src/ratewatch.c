/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratewatch.c — the input's offered rate against the capacity
 * (ratewatch.h).
 */
#include "ratewatch.h"

#include <string.h>

void ratewatch_init(struct ratewatch *w)
{
	memset(w, 0, sizeof(*w));
	w->rate_cps = -1;
}

/* The newest sample at least a window older than the newest one, or -1. */
static int window_start(const struct ratewatch *w, uint64_t now_ns)
{
	for (unsigned k = 1; k < w->n; k++) {
		unsigned i = (w->head + RATEWATCH_SAMPLES - 1 - k) % RATEWATCH_SAMPLES;

		if (now_ns - w->t_ns[i] >= RATEWATCH_WINDOW_NS)
			return (int)i;
	}
	return -1;
}

int ratewatch_update(struct ratewatch *w, uint64_t now_ns, uint64_t offered,
		     double capacity_cps)
{
	unsigned last = (w->head + RATEWATCH_SAMPLES - 1) % RATEWATCH_SAMPLES;
	int i, was = w->over;

	if (w->n && (offered < w->offered[last] || now_ns < w->t_ns[last])) {
		uint64_t events = w->events;   /* a new ring: its counts start at 0 */

		ratewatch_init(w);
		w->events = events;
		w->over = was;
	}
	w->t_ns[w->head] = now_ns;
	w->offered[w->head] = offered;
	w->head = (w->head + 1) % RATEWATCH_SAMPLES;
	if (w->n < RATEWATCH_SAMPLES)
		w->n++;
	i = window_start(w, now_ns);
	if (i < 0)
		return 0;
	w->rate_cps = (double)(offered - w->offered[i]) / ((double)(now_ns - w->t_ns[i]) * 1e-9);
	if (capacity_cps <= 0)
		w->over = 0;
	else if (!w->over && w->rate_cps > capacity_cps)
		w->over = 1;
	else if (w->over && w->rate_cps <= capacity_cps * (1.0 - RATEWATCH_HYSTERESIS))
		w->over = 0;
	if (w->over && !was) {
		w->events++;
		return 1;
	}
	return !w->over && was ? -1 : 0;
}
