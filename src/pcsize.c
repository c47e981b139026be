/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcsize.c — the sizes every part of pulse compression agrees on, declared
 * in chirp/pc.h: bytes of an input sample and of an output cell, and the
 * FFT length rule (smallest 2^a 3^b 5^c 7^d). A leaf: it calls nothing, so
 * the front end (pc.c), the backends (pc_cpu.c, src/cuda/), the radar chain
 * (radar.c), config and the tools use it without depending on each other.
 */
#include "chirp/pc.h"

#include <stddef.h>
#include <stdint.h>

size_t pc_format_sample_bytes(enum pc_format f)
{
	switch (f) {
	case PC_FMT_CF32: return 8;
	case PC_FMT_SC16: return 4;
	}
	return 0;
}

size_t pc_output_sample_bytes(enum pc_output m)
{
	switch (m) {
	case PC_OUT_COMPLEX: return 8;
	case PC_OUT_MAGNITUDE: return 4;
	case PC_OUT_POWER_DB: return 4;
	case PC_OUT_MAP_POWER: return 4;
	case PC_OUT_MAP_DB: return 4;
	case PC_OUT_NONE: return 0;
	}
	return 0;
}

size_t pc_good_fft_size(size_t n)
{
	size_t best = 0;

	if (n <= 1)
		return 1;
	/*
	 * Enumerate 2^a 3^b 5^c 7^d >= n, keep the smallest. For each
	 * p = 7^d 5^c 3^b (all <= about 2n) the smallest power of two that
	 * lifts p to >= n is found directly. O(log^3 n).
	 */
	for (size_t p7 = 1;; p7 *= 7) {
		for (size_t p5 = p7;; p5 *= 5) {
			for (size_t p3 = p5;; p3 *= 3) {
				size_t v = p3;

				while (v < n) {
					if (v > SIZE_MAX / 2) {
						v = 0;
						break;
					}
					v *= 2;
				}
				if (v && (best == 0 || v < best))
					best = v;
				if (p3 >= n || p3 > SIZE_MAX / 3)
					break;
			}
			if (p5 >= n || p5 > SIZE_MAX / 5)
				break;
		}
		if (p7 >= n || p7 > SIZE_MAX / 7)
			break;
	}
	return best;
}
