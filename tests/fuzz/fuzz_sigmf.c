/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_sigmf.c — libFuzzer target for the SigMF metadata reader
 * (sigmf_meta_parse + sigmf_check_data), the parser chirp-feed and
 * chirp-plot users point at files from anywhere. Anything accepted must
 * also survive a write/re-parse round trip with the same content.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sigmf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sigmf_meta m, r;
	char err[512];
	char *text;

	if (sigmf_meta_parse((const char *)data, size, "fuzz", &m, err, sizeof(err)) < 0)
		return 0;
	/* Data-size checks over a few sizes, including absurd ones. */
	(void)sigmf_check_data(&m, size, 0, err, sizeof(err));
	(void)sigmf_check_data(&m, (uint64_t)size * 4096, 7, err, sizeof(err));
	(void)sigmf_check_data(&m, UINT64_MAX, 3, err, sizeof(err));
	text = sigmf_meta_dump(&m);
	if (text) {
		if (sigmf_meta_parse(text, strlen(text), "dump", &r, err, sizeof(err)) != 0)
			abort();   /* we wrote something we cannot read back */
		if (r.ncaptures != m.ncaptures || r.datatype != m.datatype ||
		    r.sample_rate_hz != m.sample_rate_hz || r.channels != m.channels ||
		    r.pulses != m.pulses || r.samples != m.samples ||
		    strcmp(r.output, m.output) != 0)
			abort();
		for (size_t i = 0; i < m.ncaptures; i++)
			if (r.captures[i].sample_start != m.captures[i].sample_start ||
			    r.captures[i].seq != m.captures[i].seq ||
			    r.captures[i].timestamp_ns != m.captures[i].timestamp_ns ||
			    r.captures[i].mode != m.captures[i].mode ||
			    /* bits: a NaN pointing (null) reads back as the same NaN */
			    memcmp(&r.captures[i].pointing_az_deg, &m.captures[i].pointing_az_deg,
				   sizeof(float)) != 0 ||
			    memcmp(&r.captures[i].pointing_el_deg, &m.captures[i].pointing_el_deg,
				   sizeof(float)) != 0)
				abort();
		sigmf_meta_free(&r);
		free(text);
	}
	sigmf_meta_free(&m);
	return 0;
}
