/* SPDX-License-Identifier: Apache-2.0 */
/* test_sigmf.c — SigMF metadata write/read and every rejection (src/sigmf.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sigmf.h"

static void fill(struct sigmf_meta *m)
{
	sigmf_meta_init(m);
	m->datatype = SIGMF_CF32_LE;
	m->sample_rate_hz = 25e6 + 0.25;
	m->channels = 3;
	m->pulses = 7;
	m->samples = 1001;
	snprintf(m->output, sizeof(m->output), "complex");
	snprintf(m->description, sizeof(m->description), "test \"quoted\" \xc3\xa9");
	snprintf(m->recorder, sizeof(m->recorder), "chirp-tap");
	m->modes[0] = (struct sigmf_mode_name){ .id = 2, .name = "track" };
	m->modes[1] = (struct sigmf_mode_name){ .id = 4000000000u, .name = "a_long-name_of_31_characters_x1" };
	m->nmodes = 2;
	for (uint64_t i = 0; i < 5; i++) {
		struct sigmf_capture c = {
			.sample_start = i * 3 * 7 * 1001,
			.timestamp_ns = 1795254001123456789ull + i * 1000,
			.seq = 100 + i + (i > 2 ? 4 : 0),
			.first_sample = (100 + i) * 7 * 1001,
			.flags = i == 3 ? 1u : 0u,
			.mode = i == 4 ? 4000000000u : (uint32_t)(i % 3),
		};
		assert_int_equal(sigmf_meta_add_capture(m, &c), 0);
	}
}

static void test_round_trip(void **state)
{
	struct sigmf_meta a, b;
	char err[512] = "", meta[256], data[256];
	char dir[] = "/tmp/test_sigmf.XXXXXX";
	char *text;

	fill(&a);
	assert_non_null(mkdtemp(dir));
	snprintf(meta, sizeof(meta), "%s/x.sigmf-meta", dir);
	assert_int_equal(sigmf_meta_write(&a, meta, err, sizeof(err)), 0);
	assert_int_equal(sigmf_meta_read(meta, &b, err, sizeof(err)), 0);
	assert_int_equal(b.datatype, SIGMF_CF32_LE);
	assert_true(b.sample_rate_hz == a.sample_rate_hz);
	assert_int_equal(b.channels, 3);
	assert_int_equal(b.pulses, 7);
	assert_int_equal(b.samples, 1001);
	assert_string_equal(b.output, "complex");
	assert_string_equal(b.description, a.description);
	assert_string_equal(b.recorder, "chirp-tap");
	assert_int_equal(b.ncaptures, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_true(a.captures[i].sample_start == b.captures[i].sample_start);
		assert_true(a.captures[i].timestamp_ns == b.captures[i].timestamp_ns);
		assert_true(a.captures[i].seq == b.captures[i].seq);
		assert_true(a.captures[i].first_sample == b.captures[i].first_sample);
		assert_int_equal(a.captures[i].flags, b.captures[i].flags);
		assert_true(a.captures[i].mode == b.captures[i].mode);
	}
	assert_true(b.has_modes);
	assert_int_equal(b.nmodes, 2);
	assert_string_equal(sigmf_mode_name(&b, 2), "track");
	assert_string_equal(sigmf_mode_name(&b, 4000000000u), a.modes[1].name);
	assert_null(sigmf_mode_name(&b, 0));
	assert_int_equal(sigmf_cpi_samples(&b), 3 * 7 * 1001);
	/* The meta is valid SigMF: required keys present. */
	text = sigmf_meta_dump(&a);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"core:version\""));
	assert_non_null(strstr(text, "\"annotations\""));
	assert_non_null(strstr(text, "\"core:datetime\": \"2026-11-21T"));
	free(text);
	/* Data size checks. */
	assert_int_equal(sigmf_check_data(&b, 5ull * 3 * 7 * 1001 * 8, 0, err, sizeof(err)), 0);
	assert_int_equal(sigmf_check_data(&b, 5ull * 3 * 7 * 1001 * 8 - 8, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "whole number of CPIs"));
	assert_int_equal(sigmf_check_data(&b, 5ull * 3 * 7 * 1001 * 8 + 3, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "whole number of cf32_le samples"));
	/* Four CPIs of data: capture 4 points beyond it. */
	assert_int_equal(sigmf_check_data(&b, 4ull * 3 * 7 * 1001 * 8, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "beyond"));
	assert_int_equal(sigmf_check_data(&b, 0, 0, err, sizeof(err)), -EINVAL);
	sigmf_meta_free(&a);
	sigmf_meta_free(&b);
	unlink(meta);
	rmdir(dir);

	/* Paths. */
	assert_int_equal(sigmf_paths("a/b.sigmf-meta", meta, data, sizeof(meta)), 0);
	assert_string_equal(meta, "a/b.sigmf-meta");
	assert_string_equal(data, "a/b.sigmf-data");
	assert_int_equal(sigmf_paths("a/b.sigmf-data", meta, data, sizeof(meta)), 0);
	assert_string_equal(meta, "a/b.sigmf-meta");
	assert_int_equal(sigmf_paths("c", meta, data, sizeof(meta)), 0);
	assert_string_equal(data, "c.sigmf-data");
	assert_int_equal(sigmf_paths("c", meta, data, 8), -ENAMETOOLONG);
}

/*
 * chirp:mode per capture: absent keeps the previous capture's mode (SigMF
 * capture segments), 0 before any; a CPI between captures takes the mode
 * of the last capture that starts at or before it. chirp:modes, the names
 * of the ids: up to 64, each entry checked.
 */
/*
 * chirp:pointing per capture: written where it changes (none for a
 * recording at boresight), read back bit for bit (NaN as null), absent
 * keeps the previous capture's; each CPI gets its capture's; a malformed
 * one is refused naming the capture.
 */
static void test_pointing(void **state)
{
	static const float az[5] = { 0.0f, 12.5f, 12.5f, -60.25f, NAN };
	static const float el[5] = { 0.0f, -3.0f, -3.0f, 45.0f, 1.0f };
	static const char bad[] =
		"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 1e6,"
		" \"core:version\": \"1.0.0\"}, \"captures\": [{\"core:sample_start\": 0,"
		" \"chirp:pointing\": %s}]}";
	static const char *const bad_pointing[] = { "1", "[1]", "[1, 2, 3]", "[\"1\", 2]",
						    "[361, 0]", "{}" };
	struct sigmf_meta a, b;
	char err[512] = "", buf[512];
	char *text, *p;
	float paz[7], pel[7];
	int n = 0;

	(void)state;
	fill(&a);
	for (int i = 0; i < 5; i++) {
		a.captures[i].pointing_az_deg = az[i];
		a.captures[i].pointing_el_deg = el[i];
	}
	text = sigmf_meta_dump(&a);
	assert_non_null(text);
	for (p = text; (p = strstr(p, "chirp:pointing")); p++)
		n++;
	assert_int_equal(n, 3);    /* captures 1, 3 and 4: where it changes */
	assert_non_null(strstr(text, "null"));
	assert_int_equal(sigmf_meta_parse(text, strlen(text), "m", &b, err, sizeof(err)), 0);
	assert_true(b.has_pointing);
	for (int i = 0; i < 5; i++) {
		assert_memory_equal(&b.captures[i].pointing_az_deg, &az[i], sizeof(float));
		assert_memory_equal(&b.captures[i].pointing_el_deg, &el[i], sizeof(float));
	}
	/* CPIs of 3 x 7 x 1001 samples: one per capture, the last two in capture 4 */
	sigmf_cpi_pointing(&b, 3 * 7 * 1001, paz, pel, 5);
	assert_memory_equal(paz, az, sizeof(az));
	assert_memory_equal(pel, el, sizeof(el));
	free(text);
	sigmf_meta_free(&b);
	/* boresight throughout: no key written, none read */
	for (int i = 0; i < 5; i++)
		a.captures[i].pointing_az_deg = a.captures[i].pointing_el_deg = 0.0f;
	text = sigmf_meta_dump(&a);
	assert_non_null(text);
	assert_null(strstr(text, "chirp:pointing"));
	assert_int_equal(sigmf_meta_parse(text, strlen(text), "m", &b, err, sizeof(err)), 0);
	assert_false(b.has_pointing);
	free(text);
	sigmf_meta_free(&b);
	sigmf_meta_free(&a);
	for (size_t i = 0; i < sizeof(bad_pointing) / sizeof(bad_pointing[0]); i++) {
		snprintf(buf, sizeof(buf), bad, bad_pointing[i]);
		err[0] = '\0';
		assert_int_equal(sigmf_meta_parse(buf, strlen(buf), "m", &b, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "captures[0]: chirp:pointing must be [azimuth_deg, "
				       "elevation_deg]"));
	}
}

static void test_modes(void **state)
{
	static const char text[] =
		"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 1e6,"
		" \"core:version\": \"1.0.0\", \"chirp:channels\": 1, \"chirp:pulses\": 2,"
		" \"chirp:samples\": 5},"
		" \"captures\": [{\"core:sample_start\": 0},"
		"  {\"core:sample_start\": 10, \"chirp:mode\": 7},"
		"  {\"core:sample_start\": 20},"
		"  {\"core:sample_start\": 40, \"chirp:mode\": 2}]}";
	static const char none[] =
		"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 1e6,"
		" \"core:version\": \"1.0.0\"}, \"captures\": [{\"core:sample_start\": 0}]}";
	static const char bad[] =
		"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 1e6,"
		" \"core:version\": \"1.0.0\"}, \"captures\": [{\"core:sample_start\": 0,"
		" \"chirp:mode\": %s}]}";
	static const char *const bad_modes[] = { "-1", "4294967296", "1.5", "\"2\"" };
	static const char names[] =
		"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 1e6,"
		" \"core:version\": \"1.0.0\", \"chirp:modes\": %s}, \"captures\": []}";
	static const struct { const char *modes, *why; } bad_names[] = {
		{ "{}", "chirp:modes must be an array of at most 64 modes" },
		{ "[1]", "chirp:modes[0]: want {\"id\"" },
		{ "[{\"id\": 1}]", "chirp:modes[0]: want {\"id\"" },
		{ "[{\"name\": \"a\"}]", "chirp:modes[0]: want {\"id\"" },
		{ "[{\"id\": -1, \"name\": \"a\"}]", "chirp:modes[0]: want {\"id\"" },
		{ "[{\"id\": 1, \"name\": \"\"}]", "chirp:modes[0]: want {\"id\"" },
		{ "[{\"id\": 1, \"name\": \"0123456789012345678901234567890123\"}]",
		  "chirp:modes[0]: want {\"id\"" },
		{ "[{\"id\": 1, \"name\": \"a\"}, {\"id\": 1, \"name\": \"b\"}]",
		  "chirp:modes[1]: mode id 1 is given twice" },
	};
	const uint32_t want[6] = { 0, 7, 7, 7, 2, 2 };
	struct sigmf_meta m;
	uint32_t modes[6];
	char err[512], buf[512];

	(void)state;
	assert_int_equal(sigmf_meta_parse(text, strlen(text), "m", &m, err, sizeof(err)), 0);
	assert_true(m.has_modes);
	assert_int_equal(m.captures[0].mode, 0);
	assert_int_equal(m.captures[1].mode, 7);
	assert_int_equal(m.captures[2].mode, 7);    /* inherited */
	assert_int_equal(m.captures[3].mode, 2);
	assert_int_equal(sigmf_check_data(&m, 6ull * 10 * 8, 0, err, sizeof(err)), 0);
	sigmf_cpi_modes(&m, 10, modes, 6);
	assert_memory_equal(modes, want, sizeof(want));
	sigmf_meta_free(&m);

	assert_int_equal(sigmf_meta_parse(none, strlen(none), "m", &m, err, sizeof(err)), 0);
	assert_false(m.has_modes);
	sigmf_cpi_modes(&m, 10, modes, 2);
	assert_int_equal(modes[0], 0);
	assert_int_equal(modes[1], 0);
	sigmf_meta_free(&m);

	for (size_t i = 0; i < sizeof(bad_modes) / sizeof(bad_modes[0]); i++) {
		snprintf(buf, sizeof(buf), bad, bad_modes[i]);
		err[0] = '\0';
		assert_int_equal(sigmf_meta_parse(buf, strlen(buf), "m", &m, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "captures[0]: chirp:mode must be an integer in 0..4294967295"));
		assert_int_equal(m.ncaptures, 0);
	}
	/* chirp:modes: 64 entries are fine, 65 too many. */
	for (int n = 64; n <= 65; n++) {
		char big[65 * 40 + 512], *q = big;
		char *many = malloc(sizeof(big) + sizeof(names));

		assert_non_null(many);
		q += sprintf(q, "[");
		for (int i = 0; i < n; i++)
			q += sprintf(q, "%s{\"id\": %d, \"name\": \"m%d\"}", i ? "," : "", i, i);
		sprintf(q, "]");
		sprintf(many, names, big);
		if (n == 64) {
			assert_int_equal(sigmf_meta_parse(many, strlen(many), "m", &m, err, sizeof(err)), 0);
			assert_int_equal(m.nmodes, 64);
			assert_string_equal(sigmf_mode_name(&m, 63), "m63");
			sigmf_meta_free(&m);
		} else {
			assert_int_equal(sigmf_meta_parse(many, strlen(many), "m", &m, err, sizeof(err)), -EINVAL);
			assert_non_null(strstr(err, "at most 64 modes"));
		}
		free(many);
	}
	/* each malformed entry is named */
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		snprintf(buf, sizeof(buf), names, bad_names[i].modes);
		err[0] = '\0';
		assert_int_equal(sigmf_meta_parse(buf, strlen(buf), "m", &m, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad_names[i].why))
			fail_msg("%s: got '%s', want '%s'", bad_names[i].modes, err, bad_names[i].why);
	}
}

static void test_datetime(void **state)
{
	char buf[64];
	uint64_t ns = 0;

	sigmf_format_datetime(1795254001000000007ull, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-21T09:40:01.000000007Z");
	assert_int_equal(sigmf_parse_datetime(buf, &ns), 0);
	assert_true(ns == 1795254001000000007ull);
	assert_int_equal(sigmf_parse_datetime("2026-11-21T09:40:01Z", &ns), 0);
	assert_true(ns == 1795254001000000000ull);
	assert_int_equal(sigmf_parse_datetime("2026-11-21T09:40:01.5Z", &ns), 0);
	assert_true(ns == 1795254001500000000ull);
	const char *bad[] = { "", "2026-11-21", "2026-11-21T09:40:01", "2026-13-21T09:40:01Z",
			      "2026-11-21T09:40:01.Z", "2026-11-21T09:40:01+01:00",
			      "1969-12-31T23:59:59Z", "2026-11-21T25:40:01Z", "x026-11-21T09:40:01Z",
			      NULL };
	for (int i = 0; bad[i]; i++)
		assert_int_equal(sigmf_parse_datetime(bad[i], &ns), -EINVAL);
}

/* A minimal valid document with one substitution point for tests. */
#define GOOD_GLOBAL "\"core:datatype\": \"ci16_le\", \"core:sample_rate\": 1e6, \"core:version\": \"1.0.0\""

static int parse(const char *text, char *err, size_t errlen)
{
	struct sigmf_meta m;
	int rc;

	err[0] = 0;
	rc = sigmf_meta_parse(text, strlen(text), "t.sigmf-meta", &m, err, errlen);
	/* On error m must be empty and freeable. */
	if (rc < 0) {
		assert_null(m.captures);
		assert_int_equal(m.ncaptures, 0);
	}
	sigmf_meta_free(&m);
	return rc;
}

static void test_minimal_foreign(void **state)
{
	const char *t = "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [{\"core:sample_start\": 0}],"
			" \"annotations\": []}";
	struct sigmf_meta m;
	char err[512];

	assert_int_equal(sigmf_meta_parse(t, strlen(t), "t", &m, err, sizeof(err)), 0);
	assert_int_equal(m.datatype, SIGMF_CI16_LE);
	assert_true(m.sample_rate_hz == 1e6);
	assert_int_equal(m.channels, 0);          /* no chirp geometry */
	assert_int_equal(sigmf_cpi_samples(&m), 0);
	assert_int_equal(m.ncaptures, 1);
	/* Without geometry the reader's CPI size is used. */
	assert_int_equal(sigmf_check_data(&m, 4 * 600, 300, err, sizeof(err)), 0);
	assert_int_equal(sigmf_check_data(&m, 4 * 601, 300, err, sizeof(err)), -EINVAL);
	assert_int_equal(sigmf_check_data(&m, 4 * 601, 0, err, sizeof(err)), 0);
	sigmf_meta_free(&m);
	/* Not NUL terminated: only len bytes are read. */
	char buf[256];
	size_t n = strlen(t);
	memcpy(buf, t, n);
	memset(buf + n, '}', sizeof(buf) - n);
	assert_int_equal(sigmf_meta_parse(buf, n, "t", &m, err, sizeof(err)), 0);
	sigmf_meta_free(&m);
}

static void test_rejections(void **state)
{
	static const struct { const char *text, *want; } cases[] = {
		{ "{\"global\": {" GOOD_GLOBAL "},\n \"captures\": [}", "t.sigmf-meta:2:" },
		{ "", "invalid JSON" },
		{ "[1, 2]", "top level" },
		{ "{\"captures\": []}", "\"global\" is missing" },
		{ "{\"global\": 3, \"captures\": []}", "\"global\" is missing" },
		{ "{\"global\": {" GOOD_GLOBAL "}}", "\"captures\" is missing" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": {}}", "\"captures\" is missing" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [], \"annotations\": 1}", "annotations" },
		{ "{\"global\": {\"core:sample_rate\": 1, \"core:version\": \"1\"}, \"captures\": []}",
		  "core:datatype is missing" },
		{ "{\"global\": {\"core:datatype\": 5, \"core:sample_rate\": 1, \"core:version\": \"1\"}, \"captures\": []}",
		  "core:datatype is missing or not a string" },
		{ "{\"global\": {\"core:datatype\": \"cu8\", \"core:sample_rate\": 1, \"core:version\": \"1\"}, \"captures\": []}",
		  "'cu8' is not supported (unknown type" },
		{ "{\"global\": {\"core:datatype\": \"cf32_be\", \"core:sample_rate\": 1, \"core:version\": \"1\"}, \"captures\": []}",
		  "big endian" },
		{ "{\"global\": {\"core:datatype\": \"cf32_le\", \"core:version\": \"1\"}, \"captures\": []}",
		  "core:sample_rate is missing" },
		{ "{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 0, \"core:version\": \"1\"}, \"captures\": []}",
		  "positive number" },
		{ "{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": -5, \"core:version\": \"1\"}, \"captures\": []}",
		  "positive number" },
		{ "{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": \"1e6\", \"core:version\": \"1\"}, \"captures\": []}",
		  "positive number" },
		{ "{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 1}, \"captures\": []}",
		  "core:version" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"core:num_channels\": 2}, \"captures\": []}", "num_channels" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"chirp:channels\": 2}, \"captures\": []}", "go together" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"chirp:channels\": 2, \"chirp:pulses\": 0, \"chirp:samples\": 5},"
		  " \"captures\": []}", "chirp:pulses must be >= 1" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"chirp:channels\": -2, \"chirp:pulses\": 1, \"chirp:samples\": 5},"
		  " \"captures\": []}", "chirp:channels must be an integer" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"chirp:channels\": 1.5, \"chirp:pulses\": 1, \"chirp:samples\": 5},"
		  " \"captures\": []}", "chirp:channels must be an integer" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"chirp:channels\": 65536, \"chirp:pulses\": 65536, \"chirp:samples\": 5},"
		  " \"captures\": []}", "too large" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"chirp:output\": \"phase\"}, \"captures\": []}", "chirp:output 'phase'" },
		{ "{\"global\": {\"core:datatype\": \"rf32_le\", \"core:sample_rate\": 1, \"core:version\": \"1\","
		  " \"chirp:output\": \"complex\"}, \"captures\": []}", "complex datatype" },
		{ "{\"global\": {" GOOD_GLOBAL ", \"core:description\": 7}, \"captures\": []}", "core:description must be a string" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [3]}", "captures[0]: not an object" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [{\"core:sample_start\": -1}]}", "captures[0]: core:sample_start" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [{\"core:sample_start\": 5}, {\"core:sample_start\": 5}]}",
		  "captures[1]: core:sample_start 5 does not increase" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [{\"chirp:flags\": 4294967296}]}", "chirp:flags" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [{\"chirp:seq\": \"1\"}]}", "chirp:seq" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"captures\": [{\"core:datetime\": \"yesterday\"}]}", "core:datetime" },
		{ "{\"global\": {" GOOD_GLOBAL "}, \"global\": {}, \"captures\": []}", "duplicate" },
	};
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse(cases[i].text, err, sizeof(err));

		if (rc != -EINVAL || !strstr(err, cases[i].want))
			fail_msg("case %zu: rc %d, err '%s', wanted '%s'", i, rc, err, cases[i].want);
	}
	/* Missing file, directory. */
	struct sigmf_meta m;
	assert_true(sigmf_meta_read("/nonexistent/x.sigmf-meta", &m, err, sizeof(err)) == -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x.sigmf-meta"));
	assert_int_equal(sigmf_meta_read("/tmp", &m, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_pointing),
		cmocka_unit_test(test_datetime),
		cmocka_unit_test(test_minimal_foreign),
		cmocka_unit_test(test_rejections),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
