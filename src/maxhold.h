/* SPDX-License-Identifier: Apache-2.0 */
/*
 * maxhold.h — a range-Doppler map reduced to a screen's size by max-hold:
 * the one reduction [publish]'s maps (zpub.c) and the live view (live.c)
 * use, so a target is never averaged away by decimation.
 */
#ifndef CHIRP_MAXHOLD_H
#define CHIRP_MAXHOLD_H

#include <stdint.h>

/* ceil(a / b), b >= 1. */
static inline uint32_t maxhold_ceil_div(uint32_t a, uint32_t b)
{
	return (a + b - 1) / b;
}

/*
 * out[rows][cols] = the max of each block of dd Doppler bins by dr range
 * gates of map[m][doppler][range], over its `maps` maps (channels or
 * beams); rows = ceil(doppler / dd), cols = ceil(range / dr). NaN cells
 * are ignored; a block of NaN only reads -INFINITY. O(maps x doppler x
 * range) reads, nothing allocated.
 */
void maxhold_map(float *out, const float *map, uint32_t maps, uint32_t doppler,
		 uint32_t range, uint32_t dd, uint32_t dr, uint32_t rows, uint32_t cols);

/*
 * A selection of maps by mask (chirp/pc.h, struct pc_snap): bit m (m < 63)
 * selects map m, bit 63 every map from 63 on; of maps maps.
 * maxhold_sel_count: how many are selected; maxhold_sel_map: the index of
 * the i-th selected (ascending), i < maxhold_sel_count.
 */
uint32_t maxhold_sel_count(uint64_t mask, uint32_t maps);
uint32_t maxhold_sel_map(uint64_t mask, uint32_t i);

/*
 * The snapshot of the maps mask selects among map[maps][doppler][range]:
 * each one's maxhold_map (1 map, blocks dd x dr) back to back in ascending
 * map order into out (maxhold_sel_count x rows x cols).
 */
void maxhold_select(float *out, const float *map, uint32_t maps, uint64_t mask,
		    uint32_t doppler, uint32_t range, uint32_t dd, uint32_t dr);

#endif /* CHIRP_MAXHOLD_H */
