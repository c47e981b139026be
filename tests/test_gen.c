/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gen.c — chirpd's generations (gen.c, daemon.h) built from a plan,
 * with the CPU backend and real rings in /dev/shm (names with this
 * process's id, removed at the end):
 *   - a generation attaches every ring its plan has, each with the plan's
 *     geometry, and reports which it created (bit 1 << ring kind);
 *   - a reload's generation borrows the rings the two plans share and
 *     keeps the measured capacity for the same work; a changed output
 *     mode leaves only the output ring to make;
 *   - the detection ring is one list of max_detections records; slots =
 *     auto is sized at build and the plan's ring has that size;
 *   - a configuration whose plan fails is refused with the key named.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "log.h"

static char in_name[64], out_name[64], det_name[64];

static void names_init(void)
{
	snprintf(in_name, sizeof(in_name), "/t-gen-%d-in", (int)getpid());
	snprintf(out_name, sizeof(out_name), "/t-gen-%d-out", (int)getpid());
	snprintf(det_name, sizeof(det_name), "/t-gen-%d-det", (int)getpid());
}

static void names_unlink(void)
{
	chirp_ring_unlink(in_name);
	chirp_ring_unlink(out_name);
	chirp_ring_unlink(det_name);
}

/* A small CPU configuration on this test's rings, plus extra lines. */
static void load(struct chirp_config *c, const char *extra)
{
	char text[2048], *errs = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&errs, &len);

	snprintf(text, sizeof(text),
		 "[cpi]\nchannels = 2\npulses = 8\nsamples = 128\n"
		 "[waveform]\npulse_width_s = 1e-6\n"
		 "[input]\nring = %s\nslots = 4\n"
		 "[processing]\nbackend = cpu\ncpu_threads = 1\ncapacity_cache =\n%s",
		 in_name, extra);
	assert_non_null(m);
	if (config_load_string(c, "t.conf", text, m) != 0) {
		fclose(m);
		fail_msg("config rejected:\n%s", errs);
	}
	fclose(m);
	free(errs);
}

static void daemon_init(struct daemon *d)
{
	memset(d, 0, sizeof(*d));
	d->plan.node = -1;
}

/* Each ring g has is the plan's geometry. */
static void check_rings(const struct gen *g)
{
	for (int k = 0; k < PLAN_RINGS; k++) {
		struct chirp_ring_geometry geo;
		const struct plan_ring *pr = &g->plan.ring[k];

		if (!pr->used) {
			assert_null(g->ring[k]);
			continue;
		}
		assert_non_null(g->ring[k]);
		chirp_ring_geometry(g->ring[k], &geo);
		assert_int_equal(geo.channels, pr->geo.channels);
		assert_int_equal(geo.pulses, pr->geo.pulses);
		assert_int_equal(geo.samples, pr->geo.samples);
		assert_int_equal(geo.format, pr->geo.format);
		assert_int_equal(geo.slots, pr->geo.slots);
	}
}

static void test_attach_and_borrow(void **state)
{
	static struct chirp_config c, c2;
	struct daemon d;
	struct gen *g, *g2;
	char err[512], extra[256];
	int created = -1;

	(void)state;
	daemon_init(&d);
	snprintf(extra, sizeof(extra), "[output]\nring = %s\nslots = 6\n", out_name);
	load(&c, extra);
	g = gen_create(&d, &c, NULL, err, sizeof(err));
	if (!g)
		fail_msg("gen_create: %s", err);
	for (int k = 0; k < PLAN_RINGS; k++)
		assert_null(g->ring[k]);
	assert_int_equal(gen_has_rings(g), 0);
	assert_int_equal(gen_attach(&d, g, &created, err, sizeof(err)), 0);
	assert_int_equal(created, (1 << PLAN_RING_IN) | (1 << PLAN_RING_OUT));
	assert_int_equal(gen_has_rings(g), 1);
	assert_null(g->ring[PLAN_RING_DET]);         /* no [cfar]: no lists */
	check_rings(g);
	assert_int_equal(g->plan.ring[PLAN_RING_OUT].geo.slots, 6);

	/* the same file again: every ring borrowed, the capacity kept */
	g2 = gen_create(&d, &c, g, err, sizeof(err));
	if (!g2)
		fail_msg("gen_create (same): %s", err);
	assert_int_equal(g2->ring_borrowed[PLAN_RING_IN], 1);
	assert_int_equal(g2->ring_borrowed[PLAN_RING_OUT], 1);
	assert_ptr_equal(g2->ring[PLAN_RING_IN], g->ring[PLAN_RING_IN]);
	assert_int_equal(gen_has_rings(g2), 1);
	if (g->capacity_cps > 0)
		assert_string_equal(g2->capacity_source, "kept");
	gen_destroy(g2);                             /* borrowed: left to g */

	/* another output mode: the output ring's format changes */
	snprintf(extra, sizeof(extra), "[output]\nring = %s\nslots = 6\nmode = magnitude\n",
		 out_name);
	load(&c2, extra);
	g2 = gen_create(&d, &c2, g, err, sizeof(err));
	if (!g2)
		fail_msg("gen_create (magnitude): %s", err);
	assert_int_equal(g2->ring_borrowed[PLAN_RING_IN], 1);
	assert_int_equal(g2->ring_borrowed[PLAN_RING_OUT], 0);
	assert_null(g2->ring[PLAN_RING_OUT]);
	assert_int_equal(gen_has_rings(g2), 0);
	gen_destroy(g2);
	gen_destroy(g);
	names_unlink();
}

static void test_detection_ring(void **state)
{
	static struct chirp_config c;
	struct daemon d;
	struct gen *g;
	char err[512], extra[256];
	int created = 0;

	(void)state;
	daemon_init(&d);
	snprintf(extra, sizeof(extra), "[doppler]\nenable = true\n[cfar]\nenable = true\n"
		 "max_detections = 33\n[output]\nmode = none\n[detections]\nring = %s\nslots = 4\n",
		 det_name);
	load(&c, extra);
	c.input_slots = 0;                           /* auto: sized at build */
	g = gen_create(&d, &c, NULL, err, sizeof(err));
	if (!g)
		fail_msg("gen_create: %s", err);
	assert_true(g->cfg.input_slots >= 16);
	assert_int_equal(g->plan.ring[PLAN_RING_IN].geo.slots, g->cfg.input_slots);
	assert_int_equal(gen_attach(&d, g, &created, err, sizeof(err)), 0);
	assert_int_equal(created, (1 << PLAN_RING_IN) | (1 << PLAN_RING_DET));
	assert_null(g->ring[PLAN_RING_OUT]);
	check_rings(g);
	assert_int_equal(g->plan.ring[PLAN_RING_DET].geo.samples, 33);
	assert_int_equal(g->plan.ring[PLAN_RING_DET].geo.format, CHIRP_RING_DET);
	gen_destroy(g);
	names_unlink();
}

/* A configuration the plan refuses (built by hand: config_load would
 * have refused the file) makes no generation, and says which key. */
static void test_plan_refused(void **state)
{
	static struct chirp_config c;
	struct daemon d;
	char err[512];

	(void)state;
	daemon_init(&d);
	load(&c, "[doppler]\nenable = true\n[cfar]\nenable = true\n");
	c.maxima_doppler = 100;
	err[0] = '\0';
	assert_null(gen_create(&d, &c, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "cfar.maxima_doppler: maxima_doppler 100"));
	names_unlink();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_and_borrow),
		cmocka_unit_test(test_detection_ring),
		cmocka_unit_test(test_plan_refused),
	};

	log_set_level(LOG_WARNING);
	names_init();
	names_unlink();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
