/* SPDX-License-Identifier: Apache-2.0 */
/* maxhold.c — see maxhold.h. */
#include "maxhold.h"

#include <math.h>
#include <stddef.h>

void maxhold_map(float *out, const float *map, uint32_t maps, uint32_t doppler,
		 uint32_t range, uint32_t dd, uint32_t dr, uint32_t rows, uint32_t cols)
{
	for (size_t i = 0; i < (size_t)rows * cols; i++)
		out[i] = -INFINITY;
	for (uint32_t ch = 0; ch < maps; ch++) {
		for (uint32_t k = 0; k < doppler; k++) {
			const float *in = map + ((size_t)ch * doppler + k) * range;
			float *o = out + (size_t)(k / dd) * cols;
			uint32_t n = 0;

			for (uint32_t j = 0; j < cols; j++) {
				uint32_t e = n + dr < range ? n + dr : range;
				float m = o[j];

				for (; n < e; n++)
					if (in[n] > m)   /* false for NaN: ignored */
						m = in[n];
				o[j] = m;
			}
		}
	}
}

uint32_t maxhold_sel_count(uint64_t mask, uint32_t maps)
{
	uint64_t low = mask & ~(1ull << 63);

	if (maps < 63)
		low &= (1ull << maps) - 1;
	return (uint32_t)__builtin_popcountll(low) +
	       ((mask >> 63) && maps > 63 ? maps - 63 : 0);
}

uint32_t maxhold_sel_map(uint64_t mask, uint32_t i)
{
	uint64_t low = mask & ~(1ull << 63);
	uint32_t nlow = (uint32_t)__builtin_popcountll(low);

	if (i >= nlow)
		return 63 + (i - nlow);
	for (; i; i--)
		low &= low - 1;   /* drop the lowest set bit */
	return (uint32_t)__builtin_ctzll(low);
}

void maxhold_select(float *out, const float *map, uint32_t maps, uint64_t mask,
		    uint32_t doppler, uint32_t range, uint32_t dd, uint32_t dr)
{
	uint32_t rows = maxhold_ceil_div(doppler, dd), cols = maxhold_ceil_div(range, dr);
	uint32_t n = maxhold_sel_count(mask, maps);

	for (uint32_t i = 0; i < n; i++)
		maxhold_map(out + (size_t)i * rows * cols,
			    map + (size_t)maxhold_sel_map(mask, i) * doppler * range, 1, doppler,
			    range, dd, dr, rows, cols);
}
