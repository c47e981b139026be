/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_reload.c — chirpd's reload (reload.c) as the control command runs
 * it, on a daemon of the CPU backend with its data thread running and
 * rings of its own in /dev/shm (names with this process's id):
 *   - the same file again: applied, no ring re-created, nothing to restart;
 *   - a reloadable change that keeps the geometry ([cfar] pfa): the rings
 *     stay, the new value runs;
 *   - an output format change: only the output ring is re-created;
 *   - a restart-only key changed: named in restart_keys, its running value
 *     kept, the rest applied;
 *   - a file with an error: the running generation stays and the reply
 *     lists the error at FILE:LINE of its key.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "log.h"

static char path[128], in_name[64], out_name[64], det_name[64];
static const char *sock = "main";       /* [daemon] control_socket's name */

/* The configuration file: a small CPI with Doppler and CFAR, plus extra
 * lines under [cfar] and [output] and at the end. */
static void write_conf(const char *cfar, const char *output, const char *tail)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f,
		"[daemon]\nlog_level = error\ncontrol_socket = /run/t-reload-%d-%s.sock\n"
		"[cpi]\nchannels = 1\npulses = 8\nsamples = 128\n"
		"[waveform]\npulse_width_s = 1e-6\n"
		"[input]\nring = %s\nslots = 4\n"
		"[output]\nring = %s\nslots = 4\n%s"
		"[processing]\nbackend = cpu\ncpu_threads = 1\ncapacity_cache =\n"
		"[doppler]\nenable = true\n"
		"[cfar]\nenable = true\n%s"
		"[detections]\nring = %s\nslots = 4\n%s",
		(int)getpid(), sock, in_name, out_name, output, cfar, det_name, tail);
	assert_int_equal(fclose(f), 0);
}

struct fixture {
	struct daemon d;
	struct stats_snapshot snaps[3];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct daemon *d = &fx->d;
	struct chirp_config *c = calloc(1, sizeof(*c));
	char err[512];

	assert_non_null(fx);
	assert_non_null(c);
	snprintf(path, sizeof(path), "/tmp/t-reload-%d.conf", (int)getpid());
	snprintf(in_name, sizeof(in_name), "/t-reload-%d-in", (int)getpid());
	snprintf(out_name, sizeof(out_name), "/t-reload-%d-out", (int)getpid());
	snprintf(det_name, sizeof(det_name), "/t-reload-%d-det", (int)getpid());
	write_conf("", "", "");
	assert_int_equal(config_load(c, path, stderr), 0);
	d->config_path = path;
	d->plan.node = -1;
	d->snap_prev = &fx->snaps[0];
	d->snap_now = &fx->snaps[1];
	d->snap_delta = &fx->snaps[2];
	d->st = stats_create();
	assert_non_null(d->st);
	d->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(d->efd >= 0);
	d->g = gen_create(d, c, NULL, err, sizeof(err));
	if (!d->g || gen_attach(d, d->g, NULL, err, sizeof(err)) < 0)
		fail_msg("first generation: %s", err);
	d->pl = pipeline_create(d->g->pg, d->st, &d->plan, d->efd, NULL, err, sizeof(err));
	if (!d->pl)
		fail_msg("pipeline: %s", err);
	free(c);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	struct daemon *d = &fx->d;

	assert_int_equal(pipeline_destroy(d->pl, 5000), 0);
	gen_destroy(d->g);
	stats_destroy(d->st);
	close(d->efd);
	chirp_ring_unlink(in_name);
	chirp_ring_unlink(out_name);
	chirp_ring_unlink(det_name);
	unlink(path);
	free(fx);
	return 0;
}

/* Reload; the reply's boolean key. */
static int flag(const json_t *reply, const char *key)
{
	return json_is_true(json_object_get(reply, key));
}

static json_t *reload_ok(struct daemon *d)
{
	json_t *reply = json_object();
	char err[512];

	assert_non_null(reply);
	if (daemon_reload(d, reply, err, sizeof(err)) < 0)
		fail_msg("reload: %s", err);
	assert_true(flag(reply, "reloaded"));
	return reply;
}

static void test_same_file(void **state)
{
	struct fixture *fx = *state;
	struct chirp_ring *in = fx->d.g->ring[PLAN_RING_IN];
	json_t *reply = reload_ok(&fx->d);

	assert_false(flag(reply, "input_ring_recreated"));
	assert_false(flag(reply, "output_ring_recreated"));
	assert_false(flag(reply, "detection_ring_recreated"));
	assert_int_equal(json_array_size(json_object_get(reply, "restart_keys")), 0);
	assert_ptr_equal(fx->d.g->ring[PLAN_RING_IN], in);       /* the same ring */
	json_decref(reply);
}

static void test_reloadable_change(void **state)
{
	struct fixture *fx = *state;
	json_t *reply;

	write_conf("pfa = 1e-3\n", "", "");
	reply = reload_ok(&fx->d);
	assert_false(flag(reply, "input_ring_recreated"));
	assert_false(flag(reply, "output_ring_recreated"));
	assert_false(flag(reply, "detection_ring_recreated"));
	assert_true(fx->d.g->cfg.pfa == 1e-3);
	assert_true(fx->d.g->plan.pc.radar.pfa == 1e-3);
	json_decref(reply);
}

static void test_output_format_change(void **state)
{
	struct fixture *fx = *state;
	struct chirp_ring_geometry geo;
	json_t *reply;

	write_conf("", "mode = magnitude\n", "");
	reply = reload_ok(&fx->d);
	assert_false(flag(reply, "input_ring_recreated"));
	assert_true(flag(reply, "output_ring_recreated"));
	assert_false(flag(reply, "detection_ring_recreated"));
	chirp_ring_geometry(fx->d.g->ring[PLAN_RING_OUT], &geo);
	assert_int_equal(geo.format, CHIRP_RING_RF32);
	json_decref(reply);
}

static void test_restart_key(void **state)
{
	struct fixture *fx = *state;
	char running[CFG_PATH_MAX];
	json_t *reply, *rk;

	snprintf(running, sizeof(running), "%s", fx->d.g->cfg.control_socket);
	sock = "other";                       /* restart-only: held */
	write_conf("max_detections = 50\n", "", "");
	reply = reload_ok(&fx->d);
	sock = "main";
	rk = json_object_get(reply, "restart_keys");
	assert_int_equal(json_array_size(rk), 1);
	assert_string_equal(json_string_value(json_array_get(rk, 0)), "daemon.control_socket");
	assert_string_equal(fx->d.g->cfg.control_socket, running);
	assert_int_equal(fx->d.g->cfg.max_detections, 50);         /* applied */
	assert_true(flag(reply, "detection_ring_recreated"));     /* 50 records a list */
	assert_false(flag(reply, "input_ring_recreated"));
	json_decref(reply);
}

static void test_bad_file(void **state)
{
	struct fixture *fx = *state;
	struct gen *running = fx->d.g;
	json_t *reply = json_object(), *errs;
	char err[512], want[256];

	write_conf("maxima_doppler = 8\n", "", "");   /* Nd = 8: 17 bins > 8 */
	assert_int_equal(daemon_reload(&fx->d, reply, err, sizeof(err)), -EINVAL);
	assert_ptr_equal(fx->d.g, running);
	errs = json_object_get(reply, "errors");
	assert_int_equal(json_array_size(errs), 1);
	snprintf(want, sizeof(want), "%s:24: [cfar] maxima_doppler: maxima_doppler 8", path);
	if (!strstr(json_string_value(json_array_get(errs, 0)), want))
		fail_msg("want \"%s\" in \"%s\"", want, json_string_value(json_array_get(errs, 0)));
	json_decref(reply);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reloadable_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_format_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_file, setup, teardown),
	};

	log_set_level(LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
