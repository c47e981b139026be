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
