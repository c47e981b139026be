/* SPDX-License-Identifier: Apache-2.0 */
/* test_detlist.c — reading detection lists from untrusted slots
 * (src/tools/detlist.c): the checks, the target match, the printers. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/detlist.h"

#define MAXREC 4

/* A slot of MAXREC records: header h, records r[0..n-1] at stride bytes. */
struct slot {
	uint8_t b[sizeof(struct chirp_det_header) + MAXREC * 56];
	size_t len;
};

static void make(struct slot *s, uint16_t version, uint16_t stride, const struct chirp_det_record *r,
		 uint32_t n, uint32_t found, uint32_t flags, uint32_t maps)
{
	struct chirp_det_header h = {
		.magic = CHIRP_DET_MAGIC, .version = version, .record_bytes = stride, .seq = 7,
		.timestamp_ns = 11, .first_sample = 4096, .mode = 2, .flags = flags, .count = n,
		.found = found, .maps = maps, .doppler_bins = 16, .range_gates = 500,
		.cells = (uint64_t)maps * 16 * 500, .crossings = 9,
	};

	memset(s->b, 0xa5, sizeof(s->b));   /* stale bytes past the records */
	memcpy(s->b, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++)
		memcpy(s->b + sizeof(h) + (size_t)i * stride, &r[i],
		       stride < sizeof(r[i]) ? stride : sizeof(r[i]));
	s->len = sizeof(h) + (size_t)MAXREC * stride;
}

static const struct chirp_det_record REC[3] = {
	{ 0, 300, 5, 2248.4f, 12.5f, 1000, 1, 30, -1, NAN, NAN, 0, 0 },
	{ 0, 100, -8, 749.5f, NAN, 50, 1, 16.99f, -1, NAN, NAN, 0, 0 },
	{ 1, 301, 5, 2255.9f, 12.5f, 900, 1, 29.5f, -1, NAN, NAN, 0, 0 },
};

/* A list of beams: beams 0 and 2 hold the target at 300:5 (2 the stronger). */
static const struct chirp_det_record BEAM[3] = {
	{ 0, 300, 5, 2248.4f, 12.5f, 900, 1, 29.5f, 0, -10.5f, 0, 0, 0 },
	{ 2, 300, 5, 2248.4f, 12.5f, 1000, 1, 30, 2, 3.25f, -1.5f, 0, 0 },
	{ 3, 80, -1, 600, -2.5f, 20, 1, 13, 3, 12.0f, 0, CHIRP_DET_ANGLE_OUTSIDE, 0 },
};

static void test_parse_and_match(void **state)
{
	struct detlist_target t[3];
	struct chirp_det_record r;
	struct detlist d;
	struct slot s;
	char err[256];
	size_t n;

	make(&s, 1, 32, REC, 3, 3, 0, 2);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	assert_int_equal(d.h.count, 3);
	detlist_get(&d, 2, &r);
	assert_int_equal(r.channel, 1);
	assert_int_equal(r.range_gate, 301);

	assert_int_equal(detlist_parse_targets("300:5,100:-8,100:8", t, 3, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	/* 300:5 is in channel 0 exactly, in channel 1 one gate off. */
	assert_int_equal(detlist_has_target(&d, &t[0], 0, 0), 0);
	assert_int_equal(detlist_has_target(&d, &t[0], 1, 0), 1);
	/* 100:-8 only in channel 0: not in every map. */
	assert_int_equal(detlist_has_target(&d, &t[1], 5, 5), 0);
	/* Bin -8 and 8 are one apart... on 16 bins they are the same bin. */
	make(&s, 1, 32, REC + 1, 1, 1, 0, 1);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	assert_int_equal(detlist_has_target(&d, &t[2], 0, 0), 1);
	/* An integrated list: channel -1, one map. */
	{
		struct chirp_det_record ri = REC[0];

		ri.channel = CHIRP_DET_CHANNEL_ALL;
		make(&s, 1, 32, &ri, 1, 1, CHIRP_DET_INTEGRATED, 1);
		assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
		assert_int_equal(detlist_has_target(&d, &t[0], 0, 0), 1);
	}
	/* An empty list has no target. */
	make(&s, 1, 32, REC, 0, 0, 0, 2);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	assert_int_equal(detlist_has_target(&d, &t[0], 9, 9), 0);
}

/* A later version with longer records is read by stepping record_bytes;
 * a version-1 list reads as one without beams. */
static void test_later_version(void **state)
{
	struct chirp_det_record r;
	struct detlist d;
	struct slot s;
	char err[256];

	make(&s, 3, 56, BEAM, 3, 5, CHIRP_DET_OVERFLOW | CHIRP_DET_BEAMS, 4);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	detlist_get(&d, 1, &r);
	assert_int_equal(r.range_gate, 300);
	assert_int_equal(r.beam, 2);
	assert_true(r.azimuth_deg == 3.25f && r.elevation_deg == -1.5f);
	make(&s, 1, 32, REC, 3, 3, 0, 2);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	detlist_get(&d, 2, &r);
	assert_int_equal(r.range_gate, 301);
	assert_int_equal(r.beam, CHIRP_DET_BEAM_NONE);
	assert_true(isnan(r.azimuth_deg) && isnan(r.elevation_deg));
	assert_int_equal(r.angle_quality, 0);
}

/* What a version-1 reader knows: its record, and the rule to step by
 * record_bytes (detect.h, VERSIONING). */
struct v1_record {
	int32_t channel;
	uint32_t range_gate;
	int32_t doppler_bin;
	float range_m, velocity_mps, power, noise, snr_db;
};

/* A version-1 reader stepping by record_bytes over a version-2 list (as
 * chirpd writes it, header and records through struct chirp_det_record)
 * reads every field of version 1 unchanged. */
static void test_v1_reader_on_v2(void **state)
{
	struct slot s;
	const struct chirp_det_header *h = (const void *)s.b;

	assert_int_equal(sizeof(struct v1_record), CHIRP_DET_V1_RECORD_BYTES);
	assert_int_equal(offsetof(struct chirp_det_record, beam), CHIRP_DET_V1_RECORD_BYTES);
	assert_int_equal(offsetof(struct chirp_det_record, azimuth_deg), 36);
	assert_int_equal(offsetof(struct chirp_det_record, angle_quality), 44);
	make(&s, CHIRP_DET_VERSION, sizeof(struct chirp_det_record), BEAM, 3, 3, CHIRP_DET_BEAMS, 4);
	assert_int_equal(h->record_bytes, 48);
	assert_true(h->version >= 1 && h->record_bytes >= sizeof(struct v1_record));
	for (uint32_t i = 0; i < h->count; i++) {
		struct v1_record v;

		memcpy(&v, s.b + sizeof(*h) + (size_t)i * h->record_bytes, sizeof(v));
		assert_int_equal(v.channel, BEAM[i].channel);
		assert_int_equal(v.range_gate, BEAM[i].range_gate);
		assert_int_equal(v.doppler_bin, BEAM[i].doppler_bin);
		assert_true(v.range_m == BEAM[i].range_m && v.velocity_mps == BEAM[i].velocity_mps);
		assert_true(v.power == BEAM[i].power && v.noise == BEAM[i].noise);
		assert_true(v.snr_db == BEAM[i].snr_db);
	}
}

/* A list of beams: a target is found in any beam (it is reported in its
 * strongest only), the strongest record gives its angle, and the
 * printers show beam and angle. */
static void test_beams(void **state)
{
	struct chirp_det_record r;
	struct detlist_target t[2];
	struct detlist d;
	struct slot s;
	char err[256], *buf = NULL;
	size_t n, sz = 0;
	FILE *f;

	make(&s, 2, 48, BEAM, 3, 3, CHIRP_DET_BEAMS, 4);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	assert_int_equal(detlist_parse_targets("300:5,80:0", t, 2, &n, err, sizeof(err)), 0);
	assert_int_equal(detlist_has_target(&d, &t[0], 0, 0), 1);
	assert_int_equal(detlist_has_target(&d, &t[1], 0, 0), 0);
	assert_int_equal(detlist_has_target(&d, &t[1], 0, 1), 1);
	assert_int_equal(detlist_target_record(&d, &t[0], 0, 0, &r), 1);
	assert_int_equal(r.beam, 2);
	assert_true(r.azimuth_deg == 3.25f);
	assert_int_equal(detlist_target_record(&d, &t[1], 0, 0, &r), 0);
	f = open_memstream(&buf, &sz);
	detlist_print_jsonl(f, &d, &(struct detlist_ring){ .seq = 5, .pointing_az_deg = 10.0f, .pointing_el_deg = -2.5f });
	fclose(f);
	assert_non_null(strstr(buf, "\"pointing_az_deg\":10,\"pointing_el_deg\":-2.5,"));
	assert_non_null(strstr(buf, "\"beams\":true"));
	assert_non_null(strstr(buf, "\"beam\":2,\"azimuth_deg\":3.25,\"elevation_deg\":-1.5,"
				    "\"angle_quality\":0}"));
	assert_non_null(strstr(buf, "\"angle_quality\":1}"));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &sz);
	detlist_print_text(f, &d, 10.0f, -2.5f);
	fclose(f);
	assert_non_null(strstr(buf, "cpi seq=7 mode=2 pointing=10,-2.5 first_sample=4096"));
	assert_non_null(strstr(buf, " beams=1\n"));
	assert_non_null(strstr(buf, "snr_db=30.00 beam=2 azimuth_deg=3.2500 elevation_deg=-1.5000 "
				    "angle_quality=0\n"));
	free(buf);
}

/* Every refusal names what is wrong, and nothing past the slot is read:
 * the slot is copied to a heap block of exactly its length (ASan). */
static void test_refusals(void **state)
{
	/* what each case's message must say, by case number below */
	const char *const what[] = { "magic", "version", "record", "exceeds", "disagree",
				     "disagree", "channel", "ordered", "header", "beam",
				     "beam", "beams flag", "record" };
	struct chirp_det_record bad[3];
	struct chirp_det_header *h;
	struct detlist d;
	struct slot s;
	char err[256];

	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		size_t len;
		void *heap;

		memcpy(bad, REC, sizeof(bad));
		if (i == 6)
			bad[2].channel = 2;              /* maps = 2 */
		if (i == 7) {
			bad[1].channel = 1;
			bad[2].channel = 0;
		}
		if (i == 9)
			bad[1].beam = 0;                 /* without beams: -1 */
		if (i >= 10) {
			memcpy(bad, BEAM, sizeof(bad));
			bad[1].beam = 1;                 /* channel 2 */
		}
		make(&s, i >= 9 ? 2 : 1, i >= 9 ? 48 : 32, bad, 3, 3, i >= 10 ? CHIRP_DET_BEAMS : 0,
		     i >= 10 ? 4 : 2);
		h = (struct chirp_det_header *)s.b;
		len = s.len;
		switch (i) {
		case 0: h->magic ^= 1; break;
		case 1: h->version = 0; break;
		case 2: h->record_bytes = 24; break;
		case 3: h->count = h->found = MAXREC + 1; break;
		case 4: h->found = 2; break;
		case 5: h->flags |= CHIRP_DET_OVERFLOW; break;
		case 8: len = sizeof(*h) - 1; break;
		case 11: h->version = 1; h->record_bytes = 32; break;
		case 12: h->record_bytes = 32; break;    /* version 2 has 48 */
		}
		heap = malloc(len);
		memcpy(heap, s.b, len);
		err[0] = 0;
		assert_int_equal(detlist_parse(&d, heap, len, err, sizeof(err)), -EBADMSG);
		if (!strstr(err, what[i]))
			fail_msg("case %zu: '%s' does not say %s", i, err, what[i]);
		free(heap);
	}
	/* A version-1 list that claims longer records. */
	make(&s, 1, 40, REC, 1, 1, 0, 1);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), -EBADMSG);
}

static void test_print(void **state)
{
	struct detlist d;
	struct slot s;
	char err[256], *buf = NULL;
	size_t sz = 0;
	FILE *f;

	make(&s, 1, 32, REC, 3, 3, 0, 2);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	f = open_memstream(&buf, &sz);
	detlist_print_jsonl(f, &d, &(struct detlist_ring){ .seq = 42, .flags = 16, .missing = 7 });
	fclose(f);
	assert_non_null(strstr(buf, "\"seq\":7,\"ring_seq\":42,\"ring_flags\":16,\"ring_missing\":7,"
				    "\"pointing_az_deg\":0,\"pointing_el_deg\":0,"));
	assert_non_null(strstr(buf, "\"beams\":false"));
	assert_null(strstr(buf, "azimuth"));
	assert_non_null(strstr(buf, "\"overflow\":false"));
	assert_non_null(strstr(buf, "\"incomplete\":false"));
	assert_non_null(strstr(buf, "{\"channel\":0,\"range_gate\":100,\"doppler_bin\":-8,"));
	assert_non_null(strstr(buf, "\"velocity_mps\":null"));
	assert_null(strstr(buf, "nan"));
	assert_int_equal(buf[sz - 1], '\n');
	assert_null(memchr(buf, '\n', sz - 1));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &sz);
	detlist_print_text(f, &d, 0.0f, 0.0f);
	fclose(f);
	assert_non_null(strstr(buf, "cpi seq=7 mode=2 pointing=0,0 first_sample=4096 count=3 found=3 "
				    "overflow=0 maps=2"));
	assert_null(strstr(buf, "azimuth"));
	assert_non_null(strstr(buf, "\ndet channel=1 range_gate=301 doppler_bin=5 range_m=2255.900"));
	free(buf);

	/* A list of an incomplete CPI, read off the network (no ring): the
	 * flag as a boolean, no ring keys; header and records apart. */
	make(&s, 1, 32, REC, 3, 3, CHIRP_DET_INCOMPLETE, 2);
	assert_int_equal(detlist_parse(&d, s.b, s.len, err, sizeof(err)), 0);
	buf = NULL;
	f = open_memstream(&buf, &sz);
	detlist_print_jsonl(f, &d, NULL);
	fclose(f);
	assert_non_null(strstr(buf, "{\"seq\":7,\"timestamp_ns\":11,"));
	assert_non_null(strstr(buf, "\"flags\":32,"));
	assert_non_null(strstr(buf, "\"incomplete\":true"));
	assert_null(strstr(buf, "ring_"));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &sz);
	detlist_print_json_header(f, &d);
	fputc('|', f);
	detlist_print_json_records(f, &d);
	fclose(f);
	assert_non_null(strstr(buf, "\"crossings\":9}|[{\"channel\":0,"));
	assert_int_equal(buf[sz - 1], ']');
	free(buf);
}

static void test_parse_targets(void **state)
{
	struct detlist_target t[2];
	char err[256];
	size_t n;
	const char *bad[] = { "", "5", "5:", "x:1", "-1:2", "5:1x", "5:1,", "1:1,2:2,3:3",
			      "5:99999999999", NULL };

	for (int i = 0; bad[i]; i++) {
		err[0] = 0;
		assert_int_equal(detlist_parse_targets(bad[i], t, 2, &n, err, sizeof(err)), -EINVAL);
		assert_true(err[0] != 0);
	}
	assert_int_equal(detlist_parse_targets("7:-3", t, 2, &n, err, sizeof(err)), 0);
	assert_true(n == 1 && t[0].gate == 7 && t[0].bin == -3);
}

/* Random slots of random lengths, most with a valid magic and version:
 * a list is either refused or lies wholly inside its slot, and nothing
 * past the slot is touched (each slot is a heap block of exactly its
 * length: ASan builds catch a stray read). */
static void test_random_slots(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int accepted = 0, with_records = 0;

	for (int it = 0; it < 20000; it++) {
		size_t len;
		uint8_t *b;
		struct detlist d;
		char err[256];

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = (size_t)(x % (sizeof(struct chirp_det_header) + 6 * 56));
		b = malloc(len ? len : 1);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (uint8_t)(x >> 29);
		}
		if (len >= sizeof(struct chirp_det_header) && (x & 3)) {
			struct chirp_det_header *h = (struct chirp_det_header *)b;

			h->magic = CHIRP_DET_MAGIC;
			h->version = (uint16_t)(1 + (x >> 40) % 2);
			h->record_bytes = (uint16_t)((x >> 8) & 1 ? (h->version == 1 ? 32 : 48) :
						     24 + (x >> 44) % 32);
			h->count = (uint32_t)((x >> 16) % 8);
			h->found = h->count + (uint32_t)((x >> 24) % 2);
			h->flags = h->found > h->count ? CHIRP_DET_OVERFLOW : 0;
			h->maps = 1 + (uint32_t)((x >> 32) % 3);
			h->doppler_bins = (uint32_t)(x >> 36) % 5;
			/* channels mostly 0 and beams -1 (valid), so that lists get through */
			for (size_t i = 0; i < h->count && (x >> 50) & 1; i++) {
				size_t at = sizeof(*h) + i * h->record_bytes;
				int32_t zero = 0, none = CHIRP_DET_BEAM_NONE;

				if (at + sizeof(zero) <= len)
					memcpy(b + at, &zero, sizeof(zero));
				if (h->record_bytes >= 48 && at + 36 <= len)
					memcpy(b + at + 32, &none, sizeof(none));
			}
		}
		if (detlist_parse(&d, b, len, err, sizeof(err)) == 0) {
			struct detlist_target t = { 1, 1 };

			assert_true(sizeof(struct chirp_det_header) + (uint64_t)d.h.count * d.stride <= len);
			(void)detlist_has_target(&d, &t, 2, 2);
			accepted++;
			with_records += d.h.count > 0;
		}
		free(b);
	}
	/* Not vacuous: lists with records were accepted, and many refused. */
	print_message("random slots: %d of 20000 accepted, %d with records\n", accepted, with_records);
	assert_true(with_records > 100 && accepted < 19000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_match),
		cmocka_unit_test(test_later_version),
		cmocka_unit_test(test_v1_reader_on_v2),
		cmocka_unit_test(test_beams),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_parse_targets),
		cmocka_unit_test(test_random_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
