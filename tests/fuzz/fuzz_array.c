/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_array.c — libFuzzer target for the array and calibration file
 * parsers (array_parse, array_cal_parse), files an operator points chirpd
 * at. The first byte picks the channel count (1..16); the rest is the
 * array file's text, or, past a line "%%", the calibration's. Anything
 * accepted must give finite positions, finite non-zero gains, and finite
 * unit-gain weights for a fan of beams.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "beam.h"

static void check_accepted(const struct array *a)
{
	struct beam_params p;
	struct beam_set *s;
	char err[256];
	unsigned C = array_channels(a);

	for (unsigned c = 0; c < C; c++) {
		double xyz[3], g[2];

		array_position(a, c, xyz);
		array_cal(a, c, g);
		if (!isfinite(xyz[0]) || !isfinite(xyz[1]) || !isfinite(xyz[2]) || !isfinite(g[0]) ||
		    !isfinite(g[1]) || (g[0] == 0.0 && g[1] == 0.0))
			abort();
	}
	beam_params_init(&p);
	p.carrier_hz = 1e9;
	p.count = 3;
	p.fan_spacing_u = 0.2;
	s = beam_set_create(a, &p, err, sizeof(err));
	if (!s)
		abort();   /* a fan at boresight is always visible */
	for (size_t i = 0; i < 2 * 3 * (size_t)C; i++)
		if (!isfinite(beam_weights_d(s)[i]))
			abort();
	beam_set_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1, *sep;
	size_t len, cal_len = 0;
	struct array *a;
	unsigned C;
	char err[256];

	if (size < 1)
		return 0;
	C = 1 + data[0] % 16;
	len = size - 1;
	sep = memmem(text, len, "\n%%\n", 4);
	if (sep) {
		cal_len = len - (size_t)(sep + 4 - text);
		len = (size_t)(sep - text) + 1;
	}
	a = array_parse(text, len, "fuzz", C, err, sizeof(err));
	if (!a)
		return 0;
	if (sep && array_cal_parse(a, sep + 4, cal_len, "fuzz-cal", err, sizeof(err)) < 0 &&
	    strncmp(err, "fuzz-cal", 8) != 0)
		abort();   /* every calibration error names its file */
	check_accepted(a);
	array_destroy(a);
	return 0;
}
