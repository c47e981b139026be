/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c — the configuration table, parser and its outputs.
 *
 *   - defaults, and every key parsed into the right field (the expected
 *     values here are written independently of the table);
 *   - every file in tests/configs/bad/ is rejected, with each "# expect:"
 *     line appearing as FILE:expect in the errors (and "# errors: N" if
 *     given), every file in tests/configs/good/ accepted;
 *   - config_print round-trip, config_to_json, restart keys, consistency
 *     checks at the boundaries, relative file paths;
 *   - conf/chirpd.conf and doc/config.md are exactly what the table
 *     generates (regenerate with: build/tests/test_config --write-docs).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "chirp/ring.h"
#include "config.h"
#include "plan.h"
#include "log.h"

/* Repository root: where tests/configs is (cwd, or from __FILE__). */
static char root[512];

static void find_root(void)
{
	if (access("tests/configs/bad", R_OK) == 0) {
		snprintf(root, sizeof(root), ".");
		return;
	}
	snprintf(root, sizeof(root), "%s", __FILE__);
	char *slash = strrchr(root, '/');
	if (slash) {
		*slash = '\0';              /* .../tests */
		slash = strrchr(root, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(root, sizeof(root), ".");
	}
}

/* Load text; return errors in *out (malloc'd) and the count. */
static int load_str(struct chirp_config *c, const char *text, char **out)
{
	size_t len = 0;
	char *buf = NULL;
	FILE *m = open_memstream(&buf, &len);
	int n;

	assert_non_null(m);
	n = config_load_string(c, "t.conf", text, m);
	fclose(m);
	if (out)
		*out = buf;
	else
		free(buf);
	return n;
}

/* Two configurations loaded apart compare equal but for the pointers into
 * themselves (the waveform files, config_wf and config_mode_wf) and the
 * file names. */
static void forget_self_pointers(struct chirp_config *c)
{
	memset(c->path, 0, sizeof(c->path));
	c->wf.file = NULL;
	for (unsigned i = 0; i < CFG_MAX_MODES; i++)
		c->modes[i].wf.file = NULL;
}

static void expect_error(const char *text, const char *msg)
{
	struct chirp_config c;
	char *errs;
	int n = load_str(&c, text, &errs);

	if (n < 1 || !strstr(errs, msg))
		fail_msg("expected an error containing \"%s\", got %d: %s", msg, n, errs);
	free(errs);
}

static void expect_ok(const char *text)
{
	struct chirp_config c;
	char *errs;
	int n = load_str(&c, text, &errs);

	if (n != 0)
		fail_msg("expected no error, got %d: %s", n, errs);
	free(errs);
}

static void test_defaults(void **state)
{
	struct chirp_config d, e;
	char *errs;

	config_defaults(&d);
	assert_string_equal(d.control_socket, "/run/chirpd/control.sock");
	assert_string_equal(d.control_group, "");
	assert_int_equal(d.log_level, LOG_INFO);
	assert_int_equal(d.numa_node, CFG_NUMA_AUTO);
	assert_string_equal(d.cpus, "");
	assert_int_equal(d.realtime, CFG_RT_OFF);      /* unprivileged make run */
	assert_int_equal(d.lock_memory, 0);
	assert_string_equal(d.input_ring, "/chirpd-in");
	assert_string_equal(d.output_ring, "/chirpd-out");
	assert_int_equal(d.format, PC_FMT_CF32);
	assert_int_equal(d.wf.type, WF_LFM);
	assert_true(d.wf.bandwidth_hz <= d.wf.sample_rate_hz);
	assert_int_equal(d.backend, PC_BACKEND_AUTO);
	assert_int_equal(d.nfft, 0);
	assert_int_equal(d.normalize, PC_NORM_NOISE);
	assert_int_equal(d.cpu_threads, 0);
	assert_int_equal(d.staging, PC_STAGING_AUTO);
	assert_int_equal(d.staging_threads, 0);        /* auto */
	assert_int_equal(d.streams, 0);                /* auto: measured at start */
	assert_int_equal(d.out_mode, PC_OUT_COMPLEX);
	assert_string_equal(d.output_file, "");
	assert_string_equal(d.metrics_listen, "");     /* metrics off by default */
	assert_true((d.input_slots & (d.input_slots - 1)) == 0);
	assert_null(d.wf.file);

	/* An empty file is the defaults, and they pass every check. */
	assert_int_equal(load_str(&e, "", &errs), 0);
	free(errs);
	memset(e.path, 0, sizeof(e.path));
	memset(d.path, 0, sizeof(d.path));
	assert_memory_equal(&d, &e, sizeof(d));
	assert_true(plan_cpu_threads(&d) >= 1 && plan_cpu_threads(&d) <= 8);
	assert_true(plan_staging_threads(&d) >= 1 && plan_staging_threads(&d) <= 8);
}

static void test_every_key(void **state)
{
	static const char text[] =
		"[daemon]\n"
		"control_socket = /tmp/x/ctl.sock\n"
		"control_group = root\n"
		"log_level = debug\n"
		"[numa]\n"
		"node = 1\n"
		"cpus = 2-5,8\n"
		"realtime = required\n"
		"rt_priority = 70\n"
		"lock_memory = yes\n"
		"[input]\n"
		"ring = /in-x\n"
		"slots = 64\n"
		"format = sc16\n"
		"hugepages = on\n"
		"[cpi]\n"
		"channels = 3\n"
		"pulses = 17\n"
		"samples = 1234\n"
		"[waveform]\n"
		"type = barker13\n"
		"sample_rate_hz = 12.5e6\n"
		"bandwidth_hz = 5e6\n"
		"pulse_width_s = 2e-6\n"
		"chip_samples = 7\n"
		"file = /tmp/ref.cf32\n"
		"window = taylor\n"
		"taylor_nbar = 6\n"
		"taylor_sll_db = 40.5\n"
		"[processing]\n"
		"backend = cpu\n"
		"gpu = 0000:41:00.0\n"
		"streams = 3\n"
		"staging = copy\n"
		"staging_threads = 6\n"
		"nfft = 1500\n"
		"normalize = none\n"
		"cpu_threads = 5\n"
		"[output]\n"
		"mode = power_db\n"
		"ring = /out-x\n"
		"slots = 8\n"
		"file = /tmp/out.bin\n"
		"[metrics]\n"
		"listen = 127.0.0.1:9464\n";
	struct chirp_config c;
	char *errs;
	int n = load_str(&c, text, &errs);

	if (n)
		fail_msg("%s", errs);
	free(errs);
	assert_string_equal(c.control_socket, "/tmp/x/ctl.sock");
	assert_string_equal(c.control_group, "root");
	assert_int_equal(c.log_level, LOG_DEBUG);
	assert_int_equal(c.numa_node, 1);
	assert_string_equal(c.cpus, "2-5,8");
	assert_int_equal(c.realtime, CFG_RT_REQUIRED);
	assert_int_equal(c.rt_priority, 70);
	assert_int_equal(c.lock_memory, 1);
	assert_string_equal(c.input_ring, "/in-x");
	assert_int_equal(c.input_slots, 64);
	assert_int_equal(c.format, PC_FMT_SC16);
	assert_int_equal(c.input_hugepages, 1);
	assert_int_equal(c.channels, 3);
	assert_int_equal(c.pulses, 17);
	assert_int_equal(c.samples, 1234);
	assert_int_equal(c.wf.type, WF_BARKER13);
	assert_true(c.wf.sample_rate_hz == 12.5e6);
	assert_true(c.wf.bandwidth_hz == 5e6);
	assert_true(c.wf.pulse_width_s == 2e-6);
	assert_int_equal(c.wf.chip_samples, 7);
	assert_string_equal(c.wf_file, "/tmp/ref.cf32");
	assert_ptr_equal(c.wf.file, c.wf_file);
	assert_int_equal(c.wf.window, WIN_TAYLOR);
	assert_int_equal(c.wf.taylor_nbar, 6);
	assert_true(c.wf.taylor_sll_db == 40.5);
	assert_int_equal(c.backend, PC_BACKEND_CPU);
	assert_int_equal(c.gpu, -1);
	assert_string_equal(c.gpu_bus_id, "0000:41:00.0");
	assert_int_equal(c.streams, 3);
	assert_int_equal(c.staging, PC_STAGING_COPY);
	assert_int_equal(c.staging_threads, 6);
	assert_int_equal(plan_staging_threads(&c), 6);
	assert_int_equal(c.nfft, 1500);
	assert_int_equal(c.normalize, PC_NORM_NONE);
	assert_int_equal(c.cpu_threads, 5);
	assert_int_equal(plan_cpu_threads(&c), 5);
	assert_int_equal(c.out_mode, PC_OUT_POWER_DB);
	assert_string_equal(c.output_ring, "/out-x");
	assert_int_equal(c.output_slots, 8);
	assert_string_equal(c.output_file, "/tmp/out.bin");
	assert_string_equal(c.metrics_listen, "127.0.0.1:9464");

	/* pc_params mirror the configuration. */
	struct pc_params p;
	plan_pc_params(&c, &p);
	assert_int_equal(p.channels, 3);
	assert_int_equal(p.pulses, 17);
	assert_int_equal(p.samples, 1234);
	assert_int_equal(p.in_format, PC_FMT_SC16);
	assert_int_equal(p.out_mode, PC_OUT_POWER_DB);
	assert_int_equal(p.normalize, PC_NORM_NONE);
	assert_int_equal(p.nfft, 1500);
	assert_int_equal(p.backend, PC_BACKEND_CPU);
	assert_int_equal(p.cpu_threads, 5);
	assert_int_equal(p.gpu, -1);
	assert_string_equal(p.gpu_bus_id, "0000:41:00.0");
	assert_int_equal(p.streams, 3);
	assert_int_equal(p.staging, PC_STAGING_COPY);
	assert_int_equal(p.staging_threads, 6);
	assert_null(p.ref);

	/* Auto threads follow the cpu list (4 + 1 cpus). */
	c.cpu_threads = 0;
	assert_int_equal(plan_cpu_threads(&c), 5);
	c.staging_threads = 0;
	assert_int_equal(plan_staging_threads(&c), 5);
	plan_pc_params(&c, &p);
	assert_int_equal(p.staging_threads, 5);
	/* ... at most 16 copiers and 8 FFTW threads. */
	snprintf(c.cpus, sizeof(c.cpus), "0-15");
	assert_int_equal(plan_staging_threads(&c), 16);
	assert_int_equal(plan_cpu_threads(&c), 8);
	snprintf(c.cpus, sizeof(c.cpus), "0-31");
	assert_int_equal(plan_staging_threads(&c), 16);
}

/* The [cfar] windows by default are pc_params_init's, PC_CFAR_*: the ones
 * the CUDA backend compiles its CFAR kernel for. */
static void test_cfar_window_defaults(void **state)
{
	struct chirp_config d;
	struct pc_params p, ref;

	(void)state;
	config_defaults(&d);
	plan_pc_params(&d, &p);
	pc_params_init(&ref);
	assert_int_equal(p.radar.guard_range, PC_CFAR_GUARD_RANGE);
	assert_int_equal(p.radar.guard_doppler, PC_CFAR_GUARD_DOPPLER);
	assert_int_equal(p.radar.train_range, PC_CFAR_TRAIN_RANGE);
	assert_int_equal(p.radar.train_doppler, PC_CFAR_TRAIN_DOPPLER);
	assert_int_equal(ref.radar.guard_range, PC_CFAR_GUARD_RANGE);
	assert_int_equal(ref.radar.guard_doppler, PC_CFAR_GUARD_DOPPLER);
	assert_int_equal(ref.radar.train_range, PC_CFAR_TRAIN_RANGE);
	assert_int_equal(ref.radar.train_doppler, PC_CFAR_TRAIN_DOPPLER);
}

/*
 * [processing] backend tuning (struct pc_tuning): defaults equal
 * pc_params_init's, every value reaches pc_params.tune, bad values are
 * refused at their line, every key can change on reload (a reload's
 * pc_create reads them), and print/JSON carry them.
 */
static const char tuned_text[] =
	"[processing]\n"
	"fftw_planner = patient\n"
	"fftw_wisdom = /var/lib/chirpd/fftw-wisdom\n"
	"takeover = off\n"
	"cpu_block_kib = 64\n"
	"cuda_graphs = false\n"
	"cuda_chunks = 4\n"
	"cuda_idle_chunks = 3\n"
	"cuda_spin_us = 0\n"
	"staging_nt = no\n"
	"cuda_fused = off\n";

static void test_tuning_keys(void **state)
{
	static const char *const keys[] = {
		"fftw_planner", "fftw_wisdom", "takeover", "cpu_block_kib", "cuda_graphs",
		"cuda_chunks", "cuda_idle_chunks", "cuda_spin_us", "staging_nt", "cuda_fused",
	};
	struct chirp_config c, d;
	struct pc_params p, ref;
	char *errs;

	/* Defaults: what the backends use with no configuration at all. */
	config_defaults(&d);
	plan_pc_params(&d, &p);
	pc_params_init(&ref);
	assert_int_equal(p.tune.fftw_planner, PC_FFTW_ESTIMATE);
	assert_null(p.tune.fftw_wisdom);
	assert_int_equal(p.tune.takeover, PC_SWITCH_AUTO);
	assert_int_equal(p.tune.block_kib, 0);
	assert_int_equal(p.tune.cuda_graphs, 1);
	assert_int_equal(p.tune.cuda_chunks, 0);
	assert_int_equal(p.tune.cuda_idle_chunks, 1);
	assert_int_equal(p.tune.cuda_spin_us, PC_CUDA_SPIN_US);
	assert_int_equal(p.tune.staging_nt, 1);
	assert_int_equal(p.tune.cuda_fused, PC_SWITCH_AUTO);
	assert_memory_equal(&p.tune, &ref.tune, sizeof(p.tune));

	/* Every key set: the values reach pc_params.tune. */
	if (load_str(&c, tuned_text, &errs) != 0)
		fail_msg("%s", errs);
	free(errs);
	plan_pc_params(&c, &p);
	assert_int_equal(p.tune.fftw_planner, PC_FFTW_PATIENT);
	assert_string_equal(p.tune.fftw_wisdom, "/var/lib/chirpd/fftw-wisdom");
	assert_ptr_equal(p.tune.fftw_wisdom, c.fftw_wisdom);
	assert_int_equal(p.tune.takeover, PC_SWITCH_OFF);
	assert_int_equal(p.tune.block_kib, 64);
	assert_int_equal(p.tune.cuda_graphs, 0);
	assert_int_equal(p.tune.cuda_chunks, 4);
	assert_int_equal(p.tune.cuda_idle_chunks, 3);
	assert_int_equal(p.tune.cuda_spin_us, 0);
	assert_int_equal(p.tune.staging_nt, 0);
	assert_int_equal(p.tune.cuda_fused, PC_SWITCH_OFF);
	/* The other values of each choice, and the ends of each range. */
	expect_ok("[processing]\nfftw_planner = measure\ntakeover = on\ncpu_block_kib = 1048576\n"
		  "cuda_chunks = 16\ncuda_idle_chunks = 16\ncuda_spin_us = 10000\n");
	assert_int_equal(load_str(&c, "[processing]\ntakeover = on\nfftw_planner = measure\n"
				  "cpu_block_kib = 1\ncuda_chunks = 1\n", NULL), 0);
	plan_pc_params(&c, &p);
	assert_int_equal(p.tune.takeover, PC_SWITCH_ON);
	assert_int_equal(p.tune.fftw_planner, PC_FFTW_MEASURE);
	assert_int_equal(p.tune.block_kib, 1);
	assert_int_equal(p.tune.cuda_chunks, 1);
	assert_int_equal(load_str(&c, "[processing]\ncuda_fused = on\n", NULL), 0);
	plan_pc_params(&c, &p);
	assert_int_equal(p.tune.cuda_fused, PC_SWITCH_ON);
	assert_int_equal(load_str(&c, "[processing]\nfftw_wisdom =\ncpu_block_kib = auto\n"
				  "cuda_chunks = auto\ntakeover = auto\ncuda_fused = auto\n", NULL), 0);
	plan_pc_params(&c, &p);
	assert_null(p.tune.fftw_wisdom);         /* empty: no wisdom file */
	assert_int_equal(p.tune.block_kib, 0);
	assert_int_equal(p.tune.cuda_chunks, 0);
	assert_int_equal(p.tune.takeover, PC_SWITCH_AUTO);
	assert_int_equal(p.tune.cuda_fused, PC_SWITCH_AUTO);

	/* Bad values: FILE:LINE: [processing] key: reason. */
	expect_error("[processing]\nfftw_planner = exhaustive\n",
		     "t.conf:2: [processing] fftw_planner: 'exhaustive' is not one of estimate|measure|patient");
	expect_error("[processing]\n\ntakeover = 1\n",
		     "t.conf:3: [processing] takeover: '1' is not one of auto|on|off");
	expect_error("[processing]\ncpu_block_kib = 0\n",
		     "t.conf:2: [processing] cpu_block_kib: 0 is out of range (1..1048576)");
	expect_error("[processing]\ncpu_block_kib = 1048577\n",
		     "t.conf:2: [processing] cpu_block_kib: 1048577 is out of range (1..1048576)");
	expect_error("[processing]\ncpu_block_kib = 64k\n",
		     "t.conf:2: [processing] cpu_block_kib: '64k' is neither auto nor an integer");
	expect_error("[processing]\ncuda_graphs = sometimes\n",
		     "t.conf:2: [processing] cuda_graphs: 'sometimes' is not a boolean");
	expect_error("[processing]\ncuda_chunks = 17\n",
		     "t.conf:2: [processing] cuda_chunks: 17 is out of range (1..16)");
	expect_error("[processing]\ncuda_chunks = 0\n",
		     "t.conf:2: [processing] cuda_chunks: 0 is out of range (1..16)");
	expect_error("[processing]\ncuda_idle_chunks = 0\n",
		     "t.conf:2: [processing] cuda_idle_chunks: 0 is out of range (1..16)");
	expect_error("[processing]\ncuda_idle_chunks = auto\n",
		     "t.conf:2: [processing] cuda_idle_chunks: 'auto' is not an integer");
	expect_error("[processing]\ncuda_spin_us = 10001\n",
		     "t.conf:2: [processing] cuda_spin_us: 10001 is out of range (0..10000)");
	expect_error("[processing]\ncuda_spin_us = -1\n",
		     "t.conf:2: [processing] cuda_spin_us: -1 is out of range (0..10000)");
	expect_error("[processing]\nstaging_nt = 2\n",
		     "t.conf:2: [processing] staging_nt: '2' is not a boolean");
	expect_error("[processing]\nbackend = cuda\ncuda_fused = maybe\n",
		     "t.conf:3: [processing] cuda_fused: 'maybe' is not one of auto|on|off");
	expect_error("[processing]\ncuda_fused = true\n",
		     "t.conf:2: [processing] cuda_fused: 'true' is not one of auto|on|off");
	expect_error("[cpu]\nfftw_planner = patient\n", "unknown section");
	expect_error("[processing]\nfftw_planer = patient\n",
		     "t.conf:2: [processing] fftw_planer: unknown key (did you mean fftw_planner?)");

	/* All of them can change on reload: a reload's pc_create reads them. */
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (config_key_reloadable("processing", keys[i]) != 1)
			fail_msg("[processing] %s should be reloadable", keys[i]);
	assert_int_equal(load_str(&c, tuned_text, NULL), 0);
	{
		char buf[256];

		assert_int_equal(config_restart_keys(&d, &c, buf, sizeof(buf)), 0);
	}
}

/* The tuning keys survive config_print -> load and appear in the JSON reply. */
static void test_tuning_print_json(void **state)
{
	struct chirp_config c, back;
	char *printed = NULL;
	size_t plen = 0;
	json_t *j, *s;
	FILE *m;

	assert_int_equal(load_str(&c, tuned_text, NULL), 0);
	m = open_memstream(&printed, &plen);
	assert_non_null(m);
	config_print(&c, m);
	fclose(m);
	assert_non_null(strstr(printed, "fftw_planner = patient\n"));
	assert_non_null(strstr(printed, "fftw_wisdom = /var/lib/chirpd/fftw-wisdom\n"));
	assert_non_null(strstr(printed, "takeover = off\n"));
	assert_non_null(strstr(printed, "cuda_graphs = false\n"));
	assert_non_null(strstr(printed, "cuda_fused = off\n"));
	if (load_str(&back, printed, NULL) != 0)
		fail_msg("config_print output does not load back:\n%s", printed);
	free(printed);
	forget_self_pointers(&back);
	forget_self_pointers(&c);
	assert_memory_equal(&back, &c, sizeof(c));

	j = config_to_json(&c);
	assert_non_null(j);
	s = json_object_get(j, "processing");
	assert_string_equal(json_string_value(json_object_get(s, "fftw_planner")), "patient");
	assert_string_equal(json_string_value(json_object_get(s, "fftw_wisdom")),
			    "/var/lib/chirpd/fftw-wisdom");
	assert_string_equal(json_string_value(json_object_get(s, "takeover")), "off");
	assert_int_equal(json_integer_value(json_object_get(s, "cpu_block_kib")), 64);
	assert_true(json_is_false(json_object_get(s, "cuda_graphs")));
	assert_int_equal(json_integer_value(json_object_get(s, "cuda_chunks")), 4);
	assert_int_equal(json_integer_value(json_object_get(s, "cuda_idle_chunks")), 3);
	assert_true(json_is_integer(json_object_get(s, "cuda_spin_us")));
	assert_int_equal(json_integer_value(json_object_get(s, "cuda_spin_us")), 0);
	assert_true(json_is_false(json_object_get(s, "staging_nt")));
	assert_string_equal(json_string_value(json_object_get(s, "cuda_fused")), "off");
	json_decref(j);
	/* Defaults: auto where auto is the default. */
	config_defaults(&c);
	j = config_to_json(&c);
	assert_non_null(j);
	s = json_object_get(j, "processing");
	assert_string_equal(json_string_value(json_object_get(s, "cpu_block_kib")), "auto");
	assert_string_equal(json_string_value(json_object_get(s, "cuda_chunks")), "auto");
	assert_string_equal(json_string_value(json_object_get(s, "takeover")), "auto");
	assert_string_equal(json_string_value(json_object_get(s, "cuda_fused")), "auto");
	assert_string_equal(json_string_value(json_object_get(s, "fftw_wisdom")), "");
	json_decref(j);
}

/* A relative fftw_wisdom is relative to the config file's directory. */
static void test_tuning_wisdom_path(void **state)
{
	char dir[] = "/tmp/chirp-cfg-XXXXXX", file[128], want[160];
	struct chirp_config c;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/chirpd.conf", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs("[processing]\nfftw_wisdom = state/fftw-wisdom\n", f);
	fclose(f);
	assert_int_equal(config_load(&c, file, NULL), 0);
	snprintf(want, sizeof(want), "%s/state/fftw-wisdom", dir);
	assert_string_equal(c.fftw_wisdom, want);
	unlink(file);
	rmdir(dir);
}

/* [processing] staging_threads: auto or 1..64, a clear error otherwise. */
static void test_staging_threads(void **state)
{
	struct chirp_config c;
	char *errs;

	assert_int_equal(load_str(&c, "[processing]\nstaging_threads = auto\n", NULL), 0);
	assert_int_equal(c.staging_threads, 0);
	assert_int_equal(load_str(&c, "[processing]\nstaging_threads = 1\n", NULL), 0);
	assert_int_equal(c.staging_threads, 1);
	assert_int_equal(load_str(&c, "[processing]\nstaging_threads = 64\n", NULL), 0);
	assert_int_equal(plan_staging_threads(&c), 64);
	expect_error("[processing]\nstaging_threads = 0\n",
		     "t.conf:2: [processing] staging_threads: 0 is out of range (1..64)");
	expect_error("[processing]\nstaging_threads = 65\n",
		     "t.conf:2: [processing] staging_threads: 65 is out of range (1..64)");
	expect_error("[processing]\nstaging_threads = -2\n",
		     "[processing] staging_threads: -2 is out of range (1..64)");
	expect_error("[processing]\nstaging_threads = many\n",
		     "[processing] staging_threads: 'many' is neither auto nor an integer");
	expect_error("[processing]\nstaging_threads =\n", "[processing] staging_threads");
	/* Printed and read back. */
	assert_int_equal(load_str(&c, "[processing]\nstaging_threads = 12\n", &errs), 0);
	free(errs);
	{
		char *buf = NULL;
		size_t len = 0;
		struct chirp_config d;
		FILE *m = open_memstream(&buf, &len);

		config_print(&c, m);
		fclose(m);
		assert_non_null(strstr(buf, "staging_threads = 12\n"));
		assert_int_equal(load_str(&d, buf, NULL), 0);
		assert_int_equal(d.staging_threads, 12);
		free(buf);
	}
	/* pc_params_check holds the same bound for library users. */
	{
		struct pc_params p;
		char why[128];
		float ref[2] = { 1.0f, 0.0f };

		pc_params_init(&p);
		p.ref = ref;
		p.ref_len = 1;
		p.backend = PC_BACKEND_CPU;
		assert_int_equal(pc_params_check(&p, why, sizeof(why)), 0);
		p.staging_threads = 0;        /* a zeroed field means 1 */
		assert_int_equal(pc_params_check(&p, why, sizeof(why)), 0);
		p.staging_threads = 65;
		assert_int_equal(pc_params_check(&p, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, "staging_threads 65: must be 1..64");
	}
}

static void test_syntax_variants(void **state)
{
	struct chirp_config c;
	char *errs;

	/* BOM, CRLF, blanks, "key: value", comments of both kinds, inline
	 * comments, a numeric gpu index, upper-case booleans. */
	assert_int_equal(load_str(&c,
		"\xEF\xBB\xBF; comment\r\n"
		"  [ cpi ]  \r\n"
		"   samples: 2000   # range line\r\n"
		"\tpulses = 32 ; inline\r\n"
		"[processing]\n"
		"gpu = 2\n"
		"[numa]\n"
		"lock_memory = TRUE\n"
		"node = none\n", &errs), 0);
	free(errs);
	assert_int_equal(c.samples, 2000);
	assert_int_equal(c.pulses, 32);
	assert_int_equal(c.gpu, 2);
	assert_string_equal(c.gpu_bus_id, "");
	assert_int_equal(c.lock_memory, 1);
	assert_int_equal(c.numa_node, CFG_NUMA_NONE);

	/* PCI bus ids with and without the domain. */
	assert_int_equal(load_str(&c, "[processing]\ngpu = 41:00.0\n", NULL), 0);
	assert_string_equal(c.gpu_bus_id, "41:00.0");
	assert_int_equal(c.gpu, -1);
	expect_error("[processing]\ngpu = 0000:41:00\n", "t.conf:2: [processing] gpu:");
	expect_error("[processing]\ngpu = -1:41:00.0\n", "t.conf:2: [processing] gpu:");
	expect_error("[processing]\ngpu = 000000000:41:00.0\n", "t.conf:2: [processing] gpu:");
	/* Typos get a suggestion. */
	expect_error("[cpi]\npulse = 3\n", "t.conf:2: [cpi] pulse: unknown key (did you mean pulses?)");
	expect_error("[cpi]\nwindow = rect\n", "[cpi] window: unknown key (did you mean [waveform] window?)");
	expect_error("[cpi]\nzzzzzz = 1\n", "t.conf:2: [cpi] zzzzzz: unknown key\n");

	/* An indented line after a key is a key of its own, not inih's
	 * continuation of the previous value. */
	expect_error("[cpi]\nsamples = 100\n  samples = 200\n", "t.conf:3: [cpi] samples: duplicate key");
	/* A key under a rejected section is not attributed to the previous one. */
	assert_int_equal(load_str(&c, "[cpi]\nsamples = 1000\n[nope]\npulses = 5\n", &errs), 1);
	assert_int_equal(c.pulses, 128);
	free(errs);
}

/* A value that starts with ';' or '#' would print as a comment, so it is
 * refused where it is read (fuzz_config, cause A in doc/reliability.md). */
static void test_comment_start_values(void **state)
{
	(void)state;
	expect_error("\n\n[metrics]\nlisten=;:9\n",
		     "t.conf:4: [metrics] listen: value starts with ';'");
	expect_error("[output]\nfile=###x\n",
		     "t.conf:2: [output] file: value starts with '#'");
	expect_error("[waveform]\ntype = file\nfile=#ref.cf32\n",
		     "t.conf:3: [waveform] file: value starts with '#'");
	expect_error("[daemon]\ncontrol_group =;x\n",
		     "t.conf:2: [daemon] control_group: value starts with ';'");
	/* ';' and '#' inside a value are kept and survive a round trip. */
	{
		struct chirp_config c, back;
		char *printed = NULL;
		size_t plen = 0;
		FILE *m;

		assert_int_equal(load_str(&c, "[output]\nfile = /tmp/a#b;c\n", NULL), 0);
		assert_string_equal(c.output_file, "/tmp/a#b;c");
		m = open_memstream(&printed, &plen);
		assert_non_null(m);
		config_print(&c, m);
		fclose(m);
		assert_int_equal(load_str(&back, printed, NULL), 0);
		assert_string_equal(back.output_file, c.output_file);
		free(printed);
	}
}

/* [metrics] listen: a numeric host, as the listener accepts at start. */
static void test_listen_host(void **state)
{
	struct chirp_config c;

	(void)state;
	assert_int_equal(load_str(&c, "[metrics]\nlisten = 0.0.0.0:1\nallow_remote = true\n", NULL), 0);
	assert_int_equal(load_str(&c, "[metrics]\nlisten = [::]:65535\nallow_remote = true\n", NULL), 0);
	assert_int_equal(load_str(&c, "[metrics]\nlisten = [fe80::1:2]:9464\nallow_remote = true\n",
				  NULL), 0);
	assert_int_equal(load_str(&c, "[metrics]\nlisten = 127.3.0.1:9464\n", NULL), 0);
	assert_int_equal(load_str(&c, "[metrics]\nlisten = [::1]:9464\n", NULL), 0);
	assert_int_equal(load_str(&c, "[metrics]\nlisten = [::ffff:127.0.0.1]:9464\n", NULL), 0);
	/* Beyond loopback only when meant: the listener has no authentication. */
	expect_error("[metrics]\nlisten = 0.0.0.0:9464\n",
		     "t.conf:2: [metrics] listen: 0.0.0.0:9464 is not a loopback address");
	expect_error("[metrics]\nlisten = [::]:9464\n[live]\nenable = true\n",
		     "could read the metrics and the live view without authentication");
	expect_error("[metrics]\nlisten = 10.1.2.3:9464\nallow_remote = false\n",
		     "set [metrics] allow_remote = true to mean it");
	expect_error("[metrics]\nlisten=;:9\n", "t.conf:2: [metrics] listen: value starts");
	expect_error("[metrics]\nlisten = x;:9\n", "host 'x;' is not a numeric IPv4 address");
	expect_error("[metrics]\nlisten = localhost:9464\n", "host 'localhost' is not a numeric IPv4");
	expect_error("[metrics]\nlisten = 127.0.0.1.5:9464\n", "is not a numeric IPv4");
	expect_error("[metrics]\nlisten = 256.0.0.1:9464\n", "is not a numeric IPv4");
	expect_error("[metrics]\nlisten = [127.0.0.1x]:9464\n", "is not a numeric IPv6");
	expect_error("[metrics]\nlisten = [::1]:0\n", "with port 1..65535");
	expect_error("[metrics]\nlisten = 127.0.0.1:\n", "with port 1..65535");
}

/* ---- the corpus ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of *.conf in dir. */
static int list_confs(const char *dir, char ***names)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0, cap = 0;

	*names = NULL;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".conf"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			*names = realloc(*names, (size_t)cap * sizeof(char *));
			assert_non_null(*names);
		}
		(*names)[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(*names, (size_t)n, sizeof(char *), cmp_str);
	return n;
}

static void test_bad_corpus(void **state)
{
	char dir[600], path[1200];
	char **names;
	int n, checked = 0;

	snprintf(dir, sizeof(dir), "%s/tests/configs/bad", root);
	n = list_confs(dir, &names);
	assert_true(n >= 30);
	for (int i = 0; i < n; i++) {
		struct chirp_config c;
		char *text, *errs = NULL, *line, *save = NULL;
		size_t elen = 0;
		int nexp = 0, want_count = -1, got;
		FILE *m;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		text = slurp(path, NULL);
		assert_non_null(text);
		m = open_memstream(&errs, &elen);
		got = config_load(&c, path, m);
		fclose(m);
		if (got <= 0)
			fail_msg("%s: accepted (%d), expected rejection", names[i], got);
		/* Header lines: "# expect: LINE: [section] key: reason" and
		 * optionally "# errors: N". The text is only read up to its
		 * first NUL (nul_byte.conf), which is after the header. */
		for (line = strtok_r(text, "\n", &save); line && line[0] == '#';
		     line = strtok_r(NULL, "\n", &save)) {
			char want[1400];
			if (!strncmp(line, "# expect: ", 10)) {
				snprintf(want, sizeof(want), "%s:%s", path, line + 10);
				if (!strstr(errs, want))
					fail_msg("%s: missing error \"%s\"; got:\n%s", names[i], want, errs);
				nexp++;
			} else if (!strncmp(line, "# errors: ", 10)) {
				want_count = atoi(line + 10);
			}
		}
		if (nexp == 0)
			fail_msg("%s: no '# expect:' line", names[i]);
		if (want_count >= 0 && got != want_count)
			fail_msg("%s: %d errors, expected %d:\n%s", names[i], got, want_count, errs);
		/* Each error is one line, starting with the file name. */
		{
			int lines = 0;
			for (char *p = errs; *p; p++)
				lines += *p == '\n';
			assert_int_equal(lines, got);
			assert_int_equal(strncmp(errs, path, strlen(path)), 0);
		}
		checked++;
		free(errs);
		free(text);
		free(names[i]);
	}
	free(names);
	print_message("checked %d bad configs\n", checked);
}

static void test_good_corpus(void **state)
{
	char dir[600], path[1200];
	char **names;
	int n;

	snprintf(dir, sizeof(dir), "%s/tests/configs/good", root);
	n = list_confs(dir, &names);
	assert_true(n >= 3);
	for (int i = 0; i < n; i++) {
		struct chirp_config c, back;
		char *errs = NULL, *printed = NULL;
		size_t elen = 0, plen = 0;
		FILE *m;
		int got;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		m = open_memstream(&errs, &elen);
		got = config_load(&c, path, m);
		fclose(m);
		if (got != 0)
			fail_msg("%s: rejected: %s", names[i], errs);
		free(errs);

		/* Round trip: print, load the printout, same configuration. */
		m = open_memstream(&printed, &plen);
		config_print(&c, m);
		fclose(m);
		m = open_memstream(&errs, &elen);
		got = config_load_string(&back, "printed", printed, m);
		fclose(m);
		if (got != 0)
			fail_msg("%s: printout rejected: %s\n%s", names[i], errs, printed);
		forget_self_pointers(&back);
		forget_self_pointers(&c);
		assert_memory_equal(&c, &back, sizeof(c));
		free(errs);
		free(printed);
		free(names[i]);
	}
	free(names);
}

static void test_round_trip_random(void **state)
{
	/* Doubles that are not short decimals survive print/load exactly. */
	unsigned seed = 7;
	for (int i = 0; i < 200; i++) {
		struct chirp_config c, back;
		char text[512], *printed = NULL, *errs;
		size_t plen = 0;
		double fs = 1e6 + (double)rand_r(&seed) / RAND_MAX * 1e8;
		double bw = fs * (0.01 + 0.98 * (double)rand_r(&seed) / RAND_MAX);
		double tau = (10.0 + (double)(rand_r(&seed) % 900)) / fs;
		FILE *m;

		snprintf(text, sizeof(text),
			 "[cpi]\nsamples = %u\n[waveform]\nsample_rate_hz = %.17g\n"
			 "bandwidth_hz = %.17g\npulse_width_s = %.17g\ntaylor_sll_db = %.17g\n",
			 1000u + (unsigned)(rand_r(&seed) % 5000), fs, bw, tau,
			 20 + 60 * (double)rand_r(&seed) / RAND_MAX);
		if (load_str(&c, text, &errs) != 0)
			fail_msg("%s\n%s", text, errs);
		free(errs);
		m = open_memstream(&printed, &plen);
		config_print(&c, m);
		fclose(m);
		assert_int_equal(load_str(&back, printed, NULL), 0);
		assert_true(back.wf.sample_rate_hz == c.wf.sample_rate_hz);
		assert_true(back.wf.bandwidth_hz == c.wf.bandwidth_hz);
		assert_true(back.wf.pulse_width_s == c.wf.pulse_width_s);
		assert_true(back.wf.taylor_sll_db == c.wf.taylor_sll_db);
		free(printed);
	}
}

static void test_consistency_bounds(void **state)
{
	/* L = round(tau * fs) = R exactly is fine; R - 1 is not. */
	expect_ok("[cpi]\nsamples = 250\n[waveform]\nsample_rate_hz = 25e6\npulse_width_s = 10e-6\n");
	expect_error("[cpi]\nsamples = 249\n[waveform]\nsample_rate_hz = 25e6\npulse_width_s = 10e-6\n",
		     "t.conf:5: [waveform] pulse_width_s: pulse length L=250 exceeds range samples R=249");
	/* B = fs is allowed, B slightly above is not. */
	expect_ok("[waveform]\nsample_rate_hz = 25e6\nbandwidth_hz = 25e6\n");
	expect_error("[waveform]\nsample_rate_hz = 25e6\nbandwidth_hz = 25.000001e6\n",
		     "t.conf:3: [waveform] bandwidth_hz:");
	/* Forced nfft: R + L - 1 is the smallest allowed. R=1000, L=250. */
	expect_ok("[cpi]\nsamples = 1000\n[waveform]\npulse_width_s = 10e-6\n[processing]\nnfft = 1249\n");
	expect_error("[cpi]\nsamples = 1000\n[waveform]\npulse_width_s = 10e-6\n[processing]\nnfft = 1248\n",
		     "t.conf:6: [processing] nfft: nfft 1248 is below samples + L - 1 = 1249");
	/* ... reported at the samples line when that comes later. */
	expect_error("[processing]\nnfft = 1248\n[cpi]\nsamples = 1000\n",
		     "t.conf:4: [cpi] samples: nfft 1248 is below samples + L - 1 = 1249");
	/* barker13: 13 x chip_samples against R. */
	expect_ok("[cpi]\nsamples = 130\n[waveform]\ntype = barker13\nchip_samples = 10\n");
	expect_error("[cpi]\nsamples = 129\n[waveform]\ntype = barker13\nchip_samples = 10\n",
		     "t.conf:5: [waveform] chip_samples: pulse length L=130 exceeds range samples R=129");
	/* LFM bounds only apply to lfm: a barker13 config ignores B > fs. */
	expect_ok("[waveform]\ntype = barker13\nsample_rate_hz = 1e6\nbandwidth_hz = 2e6\n");
	/* Slots: any count 2..65536 (ring ABI 2), at the limits and between. */
	expect_ok("[input]\nslots = 2\n[output]\nslots = 65536\n[cpi]\npulses = 1\nsamples = 300\n");
	expect_ok("[input]\nslots = 3\n[output]\nslots = 1000\n");
	expect_error("[output]\nslots = 1\n", "t.conf:2: [output] slots:");
	expect_error("[input]\nslots = 65537\n", "t.conf:2: [input] slots:");
	/* backend = cuda needs a CUDA build. */
#ifdef CHIRP_HAVE_CUDA
	expect_ok("[processing]\nbackend = cuda\n");
#else
	expect_error("[processing]\nbackend = cuda\n",
		     "t.conf:2: [processing] backend: this chirpd was built without CUDA");
#endif
	/* Errors in both parse and cross checks are all listed. */
	{
		struct chirp_config c;
		char *errs;
		int n = load_str(&c, "[cpi]\nsamples = 100\n[waveform]\nwindow = x\nbandwidth_hz = 1e9\n", &errs);
		assert_int_equal(n, 3);   /* window, B > fs, L=250 > R=100 */
		free(errs);
	}
}

static void test_file_waveform(void **state)
{
	char dir[] = "/tmp/chirp-tcfg-XXXXXX", conf[128], ref[128];
	struct chirp_config c;
	float samples[2 * 40] = { 0 };
	FILE *f;
	char *errs = NULL;
	size_t elen = 0;
	int n;

	assert_non_null(mkdtemp(dir));
	snprintf(ref, sizeof(ref), "%s/ref.cf32", dir);
	f = fopen(ref, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(samples, sizeof(float), 80, f), 80);   /* L = 40 */
	fclose(f);

	/* Relative to the config file's directory, not the cwd. */
	snprintf(conf, sizeof(conf), "%s/a.conf", dir);
	f = fopen(conf, "w");
	fprintf(f, "[cpi]\nsamples = 40\n[waveform]\ntype = file\nfile = ref.cf32\n");
	fclose(f);
	f = open_memstream(&errs, &elen);
	n = config_load(&c, conf, f);
	fclose(f);
	if (n)
		fail_msg("%s", errs);
	free(errs);
	assert_string_equal(c.wf_file, ref);
	assert_string_equal(config_wf(&c)->file, ref);

	/* L = 40 > R = 39. */
	f = fopen(conf, "w");
	fprintf(f, "[waveform]\ntype = file\nfile = ref.cf32\n[cpi]\nsamples = 39\n");
	fclose(f);
	errs = NULL;
	f = open_memstream(&errs, &elen);
	n = config_load(&c, conf, f);
	fclose(f);
	assert_int_equal(n, 1);
	assert_non_null(strstr(errs, ":5: [cpi] samples: pulse length L=40 exceeds range samples R=39"));
	free(errs);

	/* A size that is not a multiple of 8 bytes. */
	f = fopen(ref, "ab");
	fputc(0, f);
	fclose(f);
	f = fopen(conf, "w");
	fprintf(f, "[waveform]\ntype = file\nfile = ref.cf32\n");
	fclose(f);
	errs = NULL;
	f = open_memstream(&errs, &elen);
	n = config_load(&c, conf, f);
	fclose(f);
	assert_int_equal(n, 1);
	assert_non_null(strstr(errs, ":3: [waveform] file:"));
	assert_non_null(strstr(errs, "not a positive multiple of 8"));
	free(errs);

	unlink(ref);
	unlink(conf);
	rmdir(dir);
}

static void test_load_errors(void **state)
{
	struct chirp_config c;
	char *errs = NULL;
	size_t elen = 0;
	FILE *m = open_memstream(&errs, &elen);

	assert_int_equal(config_load(&c, "/nonexistent/chirpd.conf", m), -ENOENT);
	fclose(m);
	assert_non_null(strstr(errs, "/nonexistent/chirpd.conf: No such file or directory"));
	free(errs);
	/* A directory is not a config file. */
	errs = NULL;
	m = open_memstream(&errs, &elen);
	assert_int_equal(config_load(&c, "/", m), -EISDIR);
	fclose(m);
	assert_non_null(strstr(errs, "/: Is a directory"));
	free(errs);
	/* errs may be NULL: errors are still counted. */
	assert_int_equal(config_load_string(&c, "x", "[cpi]\nsamples = 0\npulses = 0\n", NULL), 2);
}

static void test_restart_keys(void **state)
{
	struct chirp_config a, b;
	char buf[256];

	config_defaults(&a);
	b = a;
	assert_int_equal(config_restart_keys(&a, &b, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");

	/* Reloadable changes need no restart. */
	b.wf.bandwidth_hz = 5e6;
	b.wf.window = WIN_HANN;
	b.out_mode = PC_OUT_MAGNITUDE;
	b.log_level = LOG_DEBUG;
	b.samples = 3000;
	b.input_slots = 32;
	b.format = PC_FMT_SC16;
	b.normalize = PC_NORM_NONE;
	b.nfft = 8192;
	assert_int_equal(config_restart_keys(&a, &b, buf, sizeof(buf)), 0);

	/* These do. */
	snprintf(b.control_socket, sizeof(b.control_socket), "/tmp/other.sock");
	b.backend = PC_BACKEND_CPU;
	b.realtime = CFG_RT_PREFERRED;
	b.staging_threads = 4;
	snprintf(b.output_ring, sizeof(b.output_ring), "/other-out");
	assert_int_equal(config_restart_keys(&a, &b, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "daemon.control_socket,numa.realtime,processing.backend,"
			    "processing.staging_threads,output.ring");
	/* A short buffer is truncated, the count stays right. */
	assert_int_equal(config_restart_keys(&a, &b, buf, 10), 5);
	assert_true(strlen(buf) < 10);
	/* gpu by bus id vs index is a change. */
	b = a;
	b.gpu = -1;
	snprintf(b.gpu_bus_id, sizeof(b.gpu_bus_id), "0000:41:00.0");
	assert_int_equal(config_restart_keys(&a, &b, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "processing.gpu");

	assert_int_equal(config_key_reloadable("waveform", "window"), 1);
	assert_int_equal(config_key_reloadable("processing", "backend"), 0);
	assert_int_equal(config_key_reloadable("waveform", "nope"), -ENOENT);
}

static void test_json(void **state)
{
	struct chirp_config c;
	json_t *j, *s;

	assert_int_equal(load_str(&c, "[numa]\nnode = 2\n[processing]\ngpu = 0000:41:00.0\nnfft = 8192\n", NULL), 0);
	j = config_to_json(&c);
	assert_non_null(j);
	s = json_object_get(j, "cpi");
	assert_true(json_is_object(s));
	assert_int_equal(json_integer_value(json_object_get(s, "samples")), 4000);
	s = json_object_get(j, "waveform");
	assert_true(json_is_real(json_object_get(s, "sample_rate_hz")));
	assert_true(json_real_value(json_object_get(s, "sample_rate_hz")) == 25e6);
	assert_string_equal(json_string_value(json_object_get(s, "window")), "hamming");
	s = json_object_get(j, "processing");
	assert_string_equal(json_string_value(json_object_get(s, "gpu")), "0000:41:00.0");
	assert_int_equal(json_integer_value(json_object_get(s, "nfft")), 8192);
	assert_string_equal(json_string_value(json_object_get(s, "cpu_threads")), "auto");
	assert_string_equal(json_string_value(json_object_get(s, "staging_threads")), "auto");
	s = json_object_get(j, "numa");
	assert_int_equal(json_integer_value(json_object_get(s, "node")), 2);
	assert_true(json_is_false(json_object_get(s, "lock_memory")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "metrics"), "listen")), "");
	/* Every section is present. */
	const char *secs[] = { "daemon", "numa", "input", "cpi", "waveform", "processing", "output",
			       "radar", "doppler", "cfar", "array", "beams", "detections", "metrics", "live",
			       "publish", "trace" };
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++)
		assert_true(json_is_object(json_object_get(j, secs[i])));
	/* ... and the modes: here only [waveform]'s. */
	s = json_object_get(j, "modes");
	assert_true(json_is_array(s));
	assert_int_equal(json_array_size(s), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 0), "id")), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(s, 0), "name")),
			    "default");
	assert_int_equal(json_object_size(j), 18);
	json_decref(j);
}

/* conf/chirpd.conf and doc/config.md are exactly the generated text. */
static void check_generated(const char *rel, void (*gen)(FILE *))
{
	char path[700], *want = NULL, *have;
	size_t wlen = 0, hlen = 0;
	FILE *m = open_memstream(&want, &wlen);

	gen(m);
	fclose(m);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	have = slurp(path, &hlen);
	if (!have)
		fail_msg("%s is missing (build/tests/test_config --write-docs writes it)", rel);
	if (hlen != wlen || memcmp(have, want, wlen))
		fail_msg("%s differs from the table in src/config_table.c; regenerate with "
			 "build/tests/test_config --write-docs", rel);
	free(have);
	free(want);
}

/* pfa's range is one statement, 0 < pfa < 1: the table's (what the
 * parser enforces) and the reference's. */
static void test_pfa_range(void **state)
{
	struct chirp_config c;
	char *ref = NULL, *errs = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&ref, &len);

	(void)state;
	config_write_reference(m);
	fclose(m);
	assert_non_null(strstr(ref, "pfa < 1: sets the threshold"));
	assert_non_null(strstr(ref, "# (> 0 .. < 1; reload)\npfa = 1e-6\n"));
	free(ref);
	assert_int_equal(load_str(&c, "[cfar]\npfa = 1\n", &errs), 1);
	assert_non_null(strstr(errs, "t.conf:2: [cfar] pfa: 1 is out of range (> 0, < 1)"));
	free(errs);
	assert_int_equal(load_str(&c, "[cfar]\npfa = 0.999999\n", NULL), 0);
	assert_int_equal(load_str(&c, "[cfar]\npfa = 1e-300\n", NULL), 0);
}

static void test_reference_files(void **state)
{
	struct chirp_config c, d;
	char path[700], *errs = NULL;
	size_t elen = 0;
	FILE *m;

	check_generated("conf/chirpd.conf", config_write_reference);
	check_generated("doc/config.md", config_write_markdown);
	/* The shipped file is valid and is exactly the defaults. */
	snprintf(path, sizeof(path), "%s/conf/chirpd.conf", root);
	m = open_memstream(&errs, &elen);
	assert_int_equal(config_load(&c, path, m), 0);
	fclose(m);
	free(errs);
	config_defaults(&d);
	memset(c.path, 0, sizeof(c.path));
	memset(d.path, 0, sizeof(d.path));
	assert_memory_equal(&c, &d, sizeof(c));
}

static int write_docs(void)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/conf/chirpd.conf", root);
	f = fopen(path, "w");
	if (!f)
		return perror(path), 1;
	config_write_reference(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/doc/config.md", root);
	f = fopen(path, "w");
	if (!f)
		return perror(path), 1;
	config_write_markdown(f);
	fclose(f);
	printf("wrote %s/conf/chirpd.conf and %s/doc/config.md; now run scripts/gen-conf-man.sh for chirpd.conf(5)\n", root, root);
	return 0;
}

/*
 * A value for [section] name other than its default that loads alone
 * without error and that config_restart_keys sees as exactly that key's
 * change; NULL if no candidate does (then the list below needs one for a
 * new key). The candidates cover each kind of value the table has. A name
 * or path already in used (the other keys' choices) is skipped: the input
 * and output rings must differ.
 */
static const char *restart_candidate(const struct chirp_config *running,
				     const char *section, const char *name,
				     const char *used, struct chirp_config *next)
{
	static const char *const cand[] = {
		"true", "2", "17", "8192", "0", "none", "cpu", "copy", "preferred",
		"debug", "/tmp/chirpd-hold.sock", "/chirpd-hold-a", "/chirpd-hold-b", "root", "0-1",
		"127.0.0.1:9999", "0000:41:00.0", "/tmp/chirpd-hold.raw", "magnitude", "sc16",
		"tcp://127.0.0.1:5557",
	};
	char text[256], keys[256], want[128];

	snprintf(want, sizeof(want), "%s.%s", section, name);
	for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
		if (cand[i][0] == '/' && strstr(used, cand[i]))
			continue;
		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", section, name, cand[i]);
		if (load_str(next, text, NULL) != 0)
			continue;
		if (config_restart_keys(running, next, keys, sizeof(keys)) == 1 &&
		    !strcmp(keys, want))
			return cand[i];
	}
	return NULL;
}

/* Every restart-only key of the table, changed in the next configuration,
 * gets its running value back from config_hold_restart_keys. */
static void test_hold_restart_keys(void **state)
{
	struct chirp_config running, next, expect;
	char text[4096], keys[1024];
	const char *section, *name, *v, *last = "";
	size_t n = 0, nrestart = 0;
	int rl;

	assert_int_equal(load_str(&running, "", NULL), 0);
	config_wf(&running);
	for (size_t i = 0; (rl = config_key_at(i, &section, &name)) >= 0; i++) {
		assert_int_equal(config_key_reloadable(section, name), rl);
		if (rl)
			continue;
		nrestart++;
		text[n] = '\0';
		v = restart_candidate(&running, section, name, text, &next);
		if (!v)
			fail_msg("no test value changes [%s] %s alone: add one to restart_candidate",
				 section, name);
		/* A struct copy would leave wf.file pointing into running. */
		next.wf.file = running.wf_file;
		config_hold_restart_keys(&running, &next);
		if (config_restart_keys(&running, &next, keys, sizeof(keys)) != 0)
			fail_msg("[%s] %s = %s not held back: %s", section, name, v, keys);
		assert_null(next.wf.file);
		assert_memory_equal(&running, &next, sizeof(running));
		/* The table groups keys by section; a section appears once. */
		if (strcmp(last, section))
			n += (size_t)snprintf(text + n, sizeof(text) - n, "[%s]\n", section);
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s = %s\n", name, v);
		assert_true(n < sizeof(text) - 1);
		last = section;
	}
	/* Among them: adopting a foreign ring is decided when the ring is
	 * attached, and the recorder is allocated once at start. */
	assert_int_equal(config_key_reloadable("input", "allow_foreign_owner"), 0);
	assert_int_equal(config_key_reloadable("output", "allow_foreign_owner"), 0);
	assert_int_equal(config_key_reloadable("trace", "records"), 0);
	assert_true(nrestart >= 3);
	assert_int_equal(config_key_at(SIZE_MAX, &section, &name), -ENOENT);
	/* gpu is two fields: a bus id in next (index -1) goes back to index 0. */
	assert_int_equal(load_str(&next, "[processing]\ngpu = 0000:41:00.0\n", NULL), 0);
	assert_int_equal(next.gpu, -1);
	config_hold_restart_keys(&running, &next);
	assert_memory_equal(&running, &next, sizeof(running));

	/* All of them at once, next to reloadable changes that stay. */
	if (load_str(&next, text, NULL) != 0)
		fail_msg("the restart-key changes together do not load:\n%s", text);
	assert_int_equal(config_restart_keys(&running, &next, keys, sizeof(keys)), (int)nrestart);
	next.samples = 3000;
	next.wf.window = WIN_HANN;
	config_hold_restart_keys(&running, &next);
	assert_int_equal(config_restart_keys(&running, &next, keys, sizeof(keys)), 0);
	expect = running;
	expect.samples = 3000;
	expect.wf.window = WIN_HANN;
	config_wf(&expect);
	assert_memory_equal(&expect, &next, sizeof(expect));
}

static void test_ring_geometry(void **state)
{
	struct chirp_config c;
	struct chirp_ring_geometry g;

	assert_int_equal(load_str(&c, "[cpi]\nchannels = 3\npulses = 5\nsamples = 700\n"
				  "[input]\nformat = sc16\nslots = 32\n"
				  "[output]\nmode = power_db\nslots = 64\n"
				  "[waveform]\nsample_rate_hz = 20e6\n", NULL), 0);
	plan_ring_geometry(&c, PLAN_RING_IN, &g);
	assert_int_equal(g.channels, 3);
	assert_int_equal(g.pulses, 5);
	assert_int_equal(g.samples, 700);
	assert_int_equal(g.format, CHIRP_RING_SC16);
	assert_int_equal(g.slots, 32);
	assert_true(g.sample_rate_hz == 20e6);
	plan_ring_geometry(&c, PLAN_RING_OUT, &g);
	assert_int_equal(g.channels, 3);
	assert_int_equal(g.pulses, 5);
	assert_int_equal(g.samples, 700);
	assert_int_equal(g.format, CHIRP_RING_RF32);
	assert_int_equal(g.slots, 64);
	assert_true(g.sample_rate_hz == 20e6);

	/* Defaults: cf32 in, complex (cf32) out, input slots auto (0). */
	config_defaults(&c);
	plan_ring_geometry(&c, PLAN_RING_IN, &g);
	assert_int_equal(g.format, CHIRP_RING_CF32);
	assert_int_equal(g.slots, 0);
	plan_ring_geometry(&c, PLAN_RING_OUT, &g);
	assert_int_equal(g.format, CHIRP_RING_CF32);
	c.out_mode = PC_OUT_MAGNITUDE;
	plan_ring_geometry(&c, PLAN_RING_OUT, &g);
	assert_int_equal(g.format, CHIRP_RING_RF32);
	g.slots = 16;
	assert_int_equal(chirp_ring_cpi_bytes(&g), 4ull * c.channels * c.pulses * c.samples);
}

/* ---- [mode NAME] sections ------------------------------------------------ */

/* c and its print, loaded back, are the same configuration. */
static void expect_round_trip(const struct chirp_config *c_in)
{
	struct chirp_config c = *c_in, back;
	char *printed = NULL, *errs = NULL;
	size_t plen = 0;
	FILE *m = open_memstream(&printed, &plen);

	assert_non_null(m);
	config_print(&c, m);
	fclose(m);
	if (load_str(&back, printed, &errs) != 0)
		fail_msg("config_print output does not load back: %s\n%s", errs, printed);
	free(errs);
	forget_self_pointers(&back);
	forget_self_pointers(&c);
	if (memcmp(&back, &c, sizeof(c)))
		fail_msg("config_print output loads into another configuration:\n%s", printed);
	free(printed);
}

/* Only [waveform] (or nothing): one mode, id 0, "default", the same
 * waveform as c->wf. */
static void test_modes_waveform_only(void **state)
{
	struct chirp_config c;
	const struct wf_params *w;

	config_defaults(&c);
	assert_int_equal(c.nmodes, 1);
	assert_int_equal(c.modes[0].id, 0);
	assert_string_equal(c.modes[0].name, "default");
	assert_int_equal(load_str(&c, "[waveform]\ntype = barker13\nchip_samples = 3\n"
				  "sample_rate_hz = 20e6\n", NULL), 0);
	assert_int_equal(c.nmodes, 1);
	assert_int_equal(c.modes[0].id, 0);
	assert_string_equal(c.modes[0].name, "default");
	assert_int_equal(config_mode_index(&c, 0), 0);
	assert_int_equal(config_mode_index(&c, 1), -1);
	assert_int_equal(config_mode_index(&c, 63), -1);
	w = config_mode_wf(&c, 0);
	assert_non_null(w);
	assert_int_equal(w->type, WF_BARKER13);
	assert_int_equal(w->chip_samples, 3);
	assert_true(w->sample_rate_hz == 20e6);
	assert_null(w->file);
	assert_null(config_mode_wf(&c, 1));
	assert_memory_equal(&c.wf, w, sizeof(*w));
	expect_round_trip(&c);
}

static const char three_modes[] =
	"[cpi]\nsamples = 2000\n"                                     /* 1-2 */
	"[waveform]\nsample_rate_hz = 20e6\npulse_width_s = 5e-6\n"  /* 3-5 */
	"[mode short]\nid = 7\npulse_width_s = 1e-6\n"               /* 6-8 */
	"[mode long]\nid = 63\npulse_width_s = 50e-6\nbandwidth_hz = 2e6\n"
	"window = taylor\ntaylor_nbar = 8\n"                          /* 9-14 */
	"[mode bark]\nid = 2\ntype = barker13\nchip_samples = 10\n";  /* 15-18 */

static void test_modes_three(void **state)
{
	struct chirp_config c;
	const struct wf_params *w;
	const char *names[] = { "default", "short", "long", "bark" };
	const unsigned ids[] = { 0, 7, 63, 2 };

	assert_int_equal(load_str(&c, three_modes, NULL), 0);
	assert_int_equal(c.nmodes, 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(c.modes[i].id, ids[i]);
		assert_string_equal(c.modes[i].name, names[i]);
		assert_int_equal(config_mode_index(&c, ids[i]), (int)i);
		/* the radar's sample rate is every mode's */
		assert_true(config_mode_wf(&c, i)->sample_rate_hz == 20e6);
	}
	assert_true(c.modes[0].wf.pulse_width_s == 5e-6);
	assert_true(c.modes[1].wf.pulse_width_s == 1e-6);
	assert_true(c.modes[1].wf.bandwidth_hz == 10e6);   /* default */
	w = config_mode_wf(&c, 2);
	assert_true(w->pulse_width_s == 50e-6);
	assert_true(w->bandwidth_hz == 2e6);
	assert_int_equal(w->window, WIN_TAYLOR);
	assert_int_equal(w->taylor_nbar, 8);
	assert_int_equal(c.modes[3].wf.type, WF_BARKER13);
	assert_int_equal(c.modes[3].wf.chip_samples, 10);
	assert_int_equal(config_mode_index(&c, 5), -1);
	/* c->wf is mode id 0's */
	assert_memory_equal(&c.wf, &c.modes[0].wf, sizeof(c.wf));
	expect_round_trip(&c);

	/* A [mode] with id 0 replaces [waveform]'s mode, which then holds
	 * only the sample rate; the file's order is kept. */
	assert_int_equal(load_str(&c, "[mode far]\nid = 1\npulse_width_s = 40e-6\n"
				  "[waveform]\nsample_rate_hz = 10e6\n"
				  "[mode near]\nid = 0\npulse_width_s = 1e-6\n", NULL), 0);
	assert_int_equal(c.nmodes, 2);
	assert_string_equal(c.modes[0].name, "far");
	assert_string_equal(c.modes[1].name, "near");
	assert_int_equal(config_mode_index(&c, 0), 1);
	assert_true(c.wf.pulse_width_s == 1e-6);
	assert_true(c.wf.sample_rate_hz == 10e6);
	assert_true(c.modes[0].wf.sample_rate_hz == 10e6);
	expect_round_trip(&c);
	/* without any [waveform] too */
	assert_int_equal(load_str(&c, "[mode only]\nid = 0\ntype = barker13\n", NULL), 0);
	assert_int_equal(c.nmodes, 1);
	assert_string_equal(c.modes[0].name, "only");
	assert_int_equal(c.wf.type, WF_BARKER13);
	expect_round_trip(&c);
	/* A [mode default] with id 0 is [waveform]'s mode by another name. */
	assert_int_equal(load_str(&c, "[mode a]\nid = 3\n[mode default]\nid = 0\n", NULL), 0);
	assert_int_equal(c.nmodes, 2);
	expect_round_trip(&c);
	/* Names: letters, digits, _ and -, up to 31; blanks around are not part. */
	assert_int_equal(load_str(&c, "[mode   A_b-9]\nid = 4\n"
				  "[mode abcdefghijklmnopqrstuvwxyz01234]\nid = 5\n", NULL), 0);
	assert_string_equal(c.modes[1].name, "A_b-9");
	assert_string_equal(c.modes[2].name, "abcdefghijklmnopqrstuvwxyz01234");
}

/* Up to 64 modes; [waveform]'s counts unless a [mode] has id 0. */
static void test_modes_many(void **state)
{
	struct chirp_config c;
	char text[8192], *errs;
	size_t n = 0;

	for (unsigned i = 0; i < CFG_MAX_MODES; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "[mode m%u]\nid = %u\n", i, 63 - i);
	assert_int_equal(load_str(&c, text, NULL), 0);
	assert_int_equal(c.nmodes, CFG_MAX_MODES);
	for (unsigned id = 0; id < CFG_MAX_MODES; id++)
		assert_int_equal(config_mode_index(&c, id), 63 - (int)id);
	expect_round_trip(&c);
	/* a 65th: line 129 */
	snprintf(text + n, sizeof(text) - n, "[mode m64]\nid = 5\n");
	assert_true(load_str(&c, text, &errs) >= 1);
	if (!strstr(errs, "t.conf:129: [mode m64]: more than 64 modes\n"))
		fail_msg("%s", errs);
	free(errs);
	/* 64 sections with ids 1..63 cannot be distinct */
	n = 0;
	for (unsigned i = 0; i < CFG_MAX_MODES; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "[mode m%u]\nid = %u\n", i,
				      i ? i : 63);
	assert_true(load_str(&c, text, &errs) >= 1);
	if (!strstr(errs, "t.conf:128: [mode m63] id: 63 is already the id of [mode m0] (line 2)\n"))
		fail_msg("%s", errs);
	free(errs);
}

/* Every error names the file, the line and [mode NAME] key. */
static void test_modes_errors(void **state)
{
	char text[512];

	expect_error("[mode a]\nid = 3\n[mode b]\nid = 3\n",
		     "t.conf:4: [mode b] id: 3 is already the id of [mode a] (line 2)");
	expect_error("[mode a]\nid = 64\n", "t.conf:2: [mode a] id: 64 is out of range (0..63)");
	expect_error("[mode a]\nid = -1\n", "t.conf:2: [mode a] id: -1 is out of range (0..63)");
	expect_error("[mode a]\nid = one\n", "t.conf:2: [mode a] id: 'one' is not an integer");
	expect_error("[cpi]\nsamples = 100\n[mode a]\npulse_width_s = 1e-6\n",
		     "t.conf:3: [mode a] id: missing (every [mode NAME] needs an id 0..63)");
	expect_error("[mode a]\nid = 1\n[mode a]\nid = 2\n",
		     "t.conf:3: [mode a]: duplicate mode name (first at line 1)");
	expect_error("[waveform]\nwindow = hann\n[mode default]\nid = 2\n",
		     "t.conf:3: [mode default]: duplicate mode name: default is the name of [waveform]'s mode (id 0)");
	expect_error("[mode]\n", "t.conf:1: [mode]: a mode section needs a name");
	expect_error("[mode a b]\nid = 1\n", "t.conf:1: [mode a b]: mode name must be 1..31 characters");
	expect_error("[mode a.b]\nid = 1\n", "t.conf:1: [mode a.b]: mode name must be 1..31 characters");
	expect_error("[mode abcdefghijklmnopqrstuvwxyz012345]\nid = 1\n",
		     "t.conf:1: [mode abcdefghijklmnopqrstuvwxyz012345]: mode name must be 1..31");
	/* [waveform] with a mode key and a [mode] with id 0: two waveforms for id 0 */
	expect_error("[waveform]\nsample_rate_hz = 20e6\npulse_width_s = 2e-6\n[mode z]\nid = 0\n",
		     "t.conf:5: [mode z] id: 0 is the id of [waveform]'s mode, which line 3 configures");
	/* the pulse against the range line, at the later key's line */
	expect_error("[cpi]\nsamples = 1000\n[mode long]\nid = 1\npulse_width_s = 50e-6\n",
		     "t.conf:5: [mode long] pulse_width_s: pulse length L=1250 exceeds range samples R=1000");
	expect_error("[mode long]\nid = 1\npulse_width_s = 50e-6\n[cpi]\nsamples = 1000\n",
		     "t.conf:5: [cpi] samples: pulse length L=1250 exceeds range samples R=1000 for [mode long]");
	expect_error("[mode b]\nid = 1\ntype = barker13\nchip_samples = 400\n",
		     "t.conf:4: [mode b] chip_samples: pulse length L=5200 exceeds range samples R=4000");
	expect_error("[mode s]\nid = 1\npulse_width_s = 1e-9\n",
		     "t.conf:3: [mode s] pulse_width_s: pulse is shorter than one sample");
	/* the bandwidth against the sample rate, both ways round */
	expect_error("[waveform]\nsample_rate_hz = 20e6\n[mode w]\nid = 1\nbandwidth_hz = 30e6\n",
		     "t.conf:5: [mode w] bandwidth_hz: 3e+07 exceeds sample_rate_hz 2e+07");
	expect_error("[mode w]\nid = 1\nbandwidth_hz = 30e6\n[waveform]\nsample_rate_hz = 20e6\n",
		     "t.conf:5: [waveform] sample_rate_hz: 2e+07 is below bandwidth_hz 3e+07 for [mode w]");
	expect_error("[mode f]\nid = 1\ntype = file\n", "t.conf:3: [mode f] file: type = file needs a file");
	expect_error("[processing]\nnfft = 4096\n[mode l]\nid = 1\npulse_width_s = 40e-6\n",
		     "t.conf:2: [processing] nfft: nfft 4096 is below samples + L - 1 = 4999 (no wrap-around allowed) for [mode l]");
	/* keys */
	expect_error("[mode a]\nid = 1\nsample_rate_hz = 1e6\n",
		     "t.conf:3: [mode a] sample_rate_hz: unknown key (did you mean [waveform] sample_rate_hz?)");
	expect_error("[mode a]\nid = 1\npulse_width = 1e-6\n",
		     "t.conf:3: [mode a] pulse_width: unknown key (did you mean pulse_width_s?)");
	expect_error("[mode a]\nid = 1\nsamples = 4\n",
		     "t.conf:3: [mode a] samples: unknown key (did you mean [cpi] samples?)");
	expect_error("[mode a]\nid = 1\nid = 2\n",
		     "t.conf:3: [mode a] id: duplicate key (first set at line 2)");
	expect_error("[waveform]\nid = 1\n",
		     "t.conf:2: [waveform] id: unknown key (did you mean [mode NAME] id?)");
	expect_error("[mode a]\nid = 1\nwindow = square\n",
		     "t.conf:3: [mode a] window: 'square' is not one of rect|hamming|hann|blackman|taylor");
	/* a section's keys are each mode's own: the same key in two modes is fine */
	snprintf(text, sizeof(text), "[mode a]\nid = 1\nwindow = hann\n[mode b]\nid = 2\nwindow = hann\n");
	expect_ok(text);
}

/* A mode's file is relative to the config file's directory, like [waveform]'s. */
static void test_modes_file(void **state)
{
	char dir[] = "/tmp/chirp-tcfg-XXXXXX", conf[128], ref[128];
	struct chirp_config c, copy;
	float samples[2 * 40] = { 0 };
	char *errs = NULL;
	size_t elen = 0;
	FILE *f;
	int n;

	assert_non_null(mkdtemp(dir));
	snprintf(ref, sizeof(ref), "%s/ref.cf32", dir);
	f = fopen(ref, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(samples, sizeof(float), 80, f), 80);   /* L = 40 */
	fclose(f);
	snprintf(conf, sizeof(conf), "%s/a.conf", dir);
	f = fopen(conf, "w");
	fprintf(f, "[cpi]\nsamples = 40\n[waveform]\ntype = barker13\nchip_samples = 1\n"
		"[mode fromfile]\nid = 9\ntype = file\nfile = ref.cf32\n");
	fclose(f);
	f = open_memstream(&errs, &elen);
	n = config_load(&c, conf, f);
	fclose(f);
	if (n)
		fail_msg("%s", errs);
	free(errs);
	assert_int_equal(c.nmodes, 2);
	assert_string_equal(c.modes[1].wf_file, ref);
	assert_ptr_equal(c.modes[1].wf.file, c.modes[1].wf_file);
	assert_null(c.wf.file);
	/* a struct copy points at the original until config_mode_wf */
	copy = c;
	assert_ptr_equal(config_mode_wf(&copy, 1)->file, copy.modes[1].wf_file);
	expect_round_trip(&c);
	/* L = 40 > R = 39, at [cpi] samples (the later line) */
	f = fopen(conf, "w");
	fprintf(f, "[mode fromfile]\nid = 9\ntype = file\nfile = ref.cf32\n[cpi]\nsamples = 39\n");
	fclose(f);
	errs = NULL;
	f = open_memstream(&errs, &elen);
	n = config_load(&c, conf, f);
	fclose(f);
	assert_true(n >= 1);
	if (!strstr(errs, "a.conf:6: [cpi] samples: pulse length L=40 exceeds range samples R=39 for [mode fromfile]"))
		fail_msg("%s", errs);
	free(errs);
	unlink(ref);
	unlink(conf);
	rmdir(dir);
}

static void test_modes_json(void **state)
{
	struct chirp_config c;
	json_t *j, *a, *o;

	assert_int_equal(load_str(&c, three_modes, NULL), 0);
	j = config_to_json(&c);
	assert_non_null(j);
	a = json_object_get(j, "modes");
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 4);
	o = json_array_get(a, 0);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 0);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "default");
	assert_string_equal(json_string_value(json_object_get(o, "section")), "waveform");
	o = json_array_get(a, 2);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 63);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "long");
	assert_string_equal(json_string_value(json_object_get(o, "section")), "mode long");
	assert_string_equal(json_string_value(json_object_get(o, "type")), "lfm");
	assert_string_equal(json_string_value(json_object_get(o, "window")), "taylor");
	assert_true(json_real_value(json_object_get(o, "pulse_width_s")) == 50e-6);
	assert_int_equal(json_integer_value(json_object_get(o, "taylor_nbar")), 8);
	assert_null(json_object_get(o, "sample_rate_hz"));   /* the radar's: in waveform */
	o = json_array_get(a, 3);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "barker13");
	/* "waveform" is [waveform]: the rate and mode 0's keys */
	o = json_object_get(j, "waveform");
	assert_true(json_real_value(json_object_get(o, "sample_rate_hz")) == 20e6);
	assert_true(json_real_value(json_object_get(o, "pulse_width_s")) == 5e-6);
	json_decref(j);

	/* With a [mode] at id 0, [waveform] holds only the rate. */
	assert_int_equal(load_str(&c, "[mode z]\nid = 0\n[mode y]\nid = 1\n", NULL), 0);
	j = config_to_json(&c);
	assert_non_null(j);
	o = json_object_get(j, "waveform");
	assert_int_equal(json_object_size(o), 1);
	assert_non_null(json_object_get(o, "sample_rate_hz"));
	a = json_object_get(j, "modes");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "section")),
			    "mode z");
	json_decref(j);
}

/* Modes change on reload: every mode key is reloadable, a change of modes
 * is no restart key, and holding the restart keys keeps next's modes. */
static void test_modes_reload(void **state)
{
	struct chirp_config running, next, expect;
	const char *section, *name;
	char keys[1024], text[1024];
	int rl;

	for (size_t i = 0; (rl = config_key_at(i, &section, &name)) >= 0; i++) {
		int in_mode = config_key_reloadable("mode x", name) >= 0;
		if (in_mode && rl != 1)
			fail_msg("[%s] %s is a mode's key but needs a restart", section, name);
	}
	assert_int_equal(config_key_reloadable("mode", "id"), 1);
	assert_int_equal(config_key_reloadable("mode short", "pulse_width_s"), 1);
	assert_int_equal(config_key_reloadable("mode short", "sample_rate_hz"), -ENOENT);
	assert_int_equal(config_key_reloadable("waveform", "id"), -ENOENT);

	assert_int_equal(load_str(&running, "", NULL), 0);
	assert_int_equal(load_str(&next, three_modes, NULL), 0);
	assert_int_equal(config_restart_keys(&running, &next, keys, sizeof(keys)), 0);
	/* next also changes a restart key: that one is held, the modes stay */
	snprintf(text, sizeof(text), "%s[trace]\nrecords = 32\n", three_modes);
	assert_int_equal(load_str(&next, text, NULL), 0);
	assert_int_equal(config_restart_keys(&running, &next, keys, sizeof(keys)), 1);
	assert_string_equal(keys, "trace.records");
	expect = next;
	config_hold_restart_keys(&running, &next);
	assert_int_equal(config_restart_keys(&running, &next, keys, sizeof(keys)), 0);
	assert_int_equal(next.nmodes, 4);
	expect.trace_records = running.trace_records;
	assert_memory_equal(&expect, &next, sizeof(next));
	/* and back to one mode */
	expect = running;
	running = next;
	next = expect;
	config_hold_restart_keys(&running, &next);
	assert_int_equal(next.nmodes, 1);
	assert_string_equal(next.modes[0].name, "default");
}

/* conf/chirpd.conf's example modes, uncommented, are a valid file: the
 * reference's [waveform] mode and the two of the example. */
static void test_modes_reference_example(void **state)
{
	char path[700], *text, *p, out[2048];
	struct chirp_config c;
	size_t n = 0;
	char *errs;

	snprintf(path, sizeof(path), "%s/conf/chirpd.conf", root);
	text = slurp(path, NULL);
	assert_non_null(text);
	p = strstr(text, "\n#[mode short]\n");
	assert_non_null(p);
	for (p++; *p == '#' && n < sizeof(out) - 2; ) {
		char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%.*s\n", (int)len - 1, p + 1);
		if (!nl)
			break;
		p = nl + 1;
	}
	free(text);
	if (load_str(&c, out, &errs) != 0)
		fail_msg("the example of conf/chirpd.conf does not load: %s\n%s", errs, out);
	free(errs);
	assert_int_equal(c.nmodes, 3);
	assert_string_equal(c.modes[1].name, "short");
	assert_string_equal(c.modes[2].name, "long");
	assert_true(c.modes[2].wf.pulse_width_s > c.modes[1].wf.pulse_width_s);
}

/* A radar chain configuration that is valid: 2 channels, 16 pulses, 256
 * gates, Doppler and CFAR into a detection ring. */
#define RADAR_OK "[cpi]\nchannels = 2\npulses = 16\nsamples = 256\n" \
	"[waveform]\npulse_width_s = 2e-6\n" \
	"[radar]\nprf_hz = 5000\ncarrier_hz = 3e9\n" \
	"[doppler]\nenable = true\nmti = two_pulse\nwindow = hamming\n" \
	"[cfar]\nenable = true\nmethod = os\nintegrate = none\nguard_range = 1\n" \
	"guard_doppler = 1\ntrain_range = 4\ntrain_doppler = 2\nos_rank = 20\npfa = 1e-4\n" \
	"maxima_range = 2\nmaxima_doppler = 1\nmax_detections = 77\n" \
	"[detections]\nring = /t-det\nslots = 8\nfile = det.jsonl\n"

/* Every [radar]/[doppler]/[cfar] key reaches pc_params.radar. */
static void test_radar_params(void **state)
{
	struct chirp_config c;
	struct pc_params p;
	char *errs = NULL;

	(void)state;
	assert_int_equal(load_str(&c, RADAR_OK, &errs), 0);
	free(errs);
	plan_pc_params(&c, &p);
	assert_int_equal(p.radar.doppler, 1);
	assert_int_equal(p.radar.mti, PC_MTI_TWO);
	assert_null(p.radar.window);
	assert_int_equal(p.radar.nfft, 0);
	assert_int_equal(p.radar.cfar, 1);
	assert_int_equal(p.radar.method, PC_CFAR_OS);
	assert_int_equal(p.radar.integrate, 0);
	assert_int_equal(p.radar.guard_range, 1);
	assert_int_equal(p.radar.guard_doppler, 1);
	assert_int_equal(p.radar.train_range, 4);
	assert_int_equal(p.radar.train_doppler, 2);
	assert_int_equal(p.radar.os_rank, 20);
	assert_true(p.radar.pfa == 1e-4);
	assert_int_equal(p.radar.maxima_range, 2);
	assert_int_equal(p.radar.maxima_doppler, 1);
	assert_int_equal(p.radar.max_detections, 77);
	assert_true(p.radar.prf_hz == 5000 && p.radar.carrier_hz == 3e9);
	assert_int_equal(p.radar.velocity, 0);        /* auto */
	assert_true(p.radar.sample_rate_hz == 25e6);
	assert_int_equal(plan_doppler_pulses(&c), 15);
	assert_int_equal(plan_doppler_nfft(&c), 15);   /* 3 x 5 */
	assert_int_equal(c.doppler_window, WIN_HAMMING);
	/* velocity = off hides the carrier from the chain */
	assert_int_equal(load_str(&c, RADAR_OK "[radar]\n", NULL), 1);   /* duplicate section */
	config_defaults(&c);
	plan_pc_params(&c, &p);
	assert_int_equal(p.radar.doppler, 0);
	assert_int_equal(p.radar.cfar, 0);
	assert_int_equal(plan_doppler_nfft(&c), 0);
}

/* plan_ring_geometry: map rings are C x Nd x R rf32, none has no output
 * ring, the detection ring is det 1 x 1 x max_detections. */
static void test_radar_geometry(void **state)
{
	struct chirp_config c;
	struct chirp_ring_geometry g;

	(void)state;
	assert_int_equal(load_str(&c, RADAR_OK "[output]\nmode = map_db\n", NULL), 0);
	assert_int_equal(plan_ring_geometry(&c, PLAN_RING_OUT, &g), 1);
	assert_int_equal(g.channels, 2);
	assert_int_equal(g.pulses, 15);
	assert_int_equal(g.samples, 256);
	assert_int_equal(g.format, CHIRP_RING_RF32);
	assert_int_equal(plan_ring_geometry(&c, PLAN_RING_DET, &g), 1);
	assert_int_equal(g.channels, 1);
	assert_int_equal(g.pulses, 1);
	assert_int_equal(g.samples, 77);
	assert_int_equal(g.format, CHIRP_RING_DET);
	assert_int_equal(g.slots, 8);
	assert_int_equal(load_str(&c, RADAR_OK "[output]\nmode = none\n", NULL), 0);
	assert_int_equal(plan_ring_geometry(&c, PLAN_RING_OUT, &g), 0);
	assert_int_equal(g.channels, 0);
	config_defaults(&c);
	assert_int_equal(plan_ring_geometry(&c, PLAN_RING_DET, &g), 0);
	assert_int_equal(plan_ring_geometry(&c, PLAN_RING_OUT, &g), 1);
}

/* Each impossible combination is one error at the line of the key that
 * makes it so. */
static void test_radar_errors(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "[cfar]\nenable = true\n", "t.conf:2: [cfar] enable: [cfar] needs [doppler]" },
		{ "[output]\nmode = map_power\n", "t.conf:2: [output] mode: output mode map_power needs [doppler]" },
		{ "[doppler]\nenable = true\n[output]\nmode = none\n", "t.conf:4: [output] mode: output mode none" },
		{ "[detections]\nring = /t-det\n", "t.conf:2: [detections] ring: [detections] ring is set but [cfar]" },
		{ "[radar]\nvelocity = on\nprf_hz = 1000\n", "t.conf:3: [radar] prf_hz: velocity = on needs" },
		{ "[cpi]\npulses = 2\n[doppler]\nenable = true\nmti = three_pulse\n", "t.conf:5: [doppler] mti: mti three_pulse needs at least 3 pulses per CPI, not 2" },
		{ "[cpi]\npulses = 16\n[doppler]\nenable = true\nfft = 12\n", "t.conf:5: [doppler] fft: Doppler FFT length 12 is shorter than the 16" },
		{ "[cpi]\nsamples = 20\n[waveform]\npulse_width_s = 2e-7\n[doppler]\nenable = true\n[cfar]\nenable = true\ntrain_range = 9\n",
		  "t.conf:9: [cfar] train_range: CFAR window of 2 x (guard_range 2 + train_range 9) + 1 = 23 gates is wider than the 20" },
		{ "[cpi]\npulses = 8\n[doppler]\nenable = true\n[cfar]\nenable = true\ntrain_doppler = 4\n",
		  "t.conf:7: [cfar] train_doppler: CFAR window of 2 x (guard_doppler 1 + train_doppler 4) + 1 = 11 bins is wider than the 8" },
		{ "[doppler]\nenable = true\n[cfar]\nenable = true\npfa = 1\n", "t.conf:5: [cfar] pfa: 1 is out of range (> 0, < 1)" },
		{ "[doppler]\nenable = true\n[cfar]\nenable = true\npfa = 0\n", "t.conf:5: [cfar] pfa: 0 is out of range" },
		{ "[doppler]\nenable = true\n[cfar]\nenable = true\nmethod = os\nos_rank = 200\n", "t.conf:6: [cfar] os_rank: os_rank 200 exceeds the 132" },
		{ "[doppler]\nenable = true\n[cfar]\nenable = true\ntrain_range = 0\ntrain_doppler = 0\n", "t.conf:6: [cfar] train_doppler: no training cells" },
		{ "[doppler]\nenable = true\nmti = four\n", "t.conf:3: [doppler] mti: 'four' is not one of none|two_pulse|three_pulse" },
		/* the local-maximum neighbourhood, at the maxima key's own line */
		{ "[cpi]\npulses = 32\n[doppler]\nenable = true\n[cfar]\nenable = true\nmaxima_doppler = 16\n",
		  "t.conf:7: [cfar] maxima_doppler: maxima_doppler 16: the neighbourhood (2 x 16 + 1 bins) is wider than the 32 Doppler bins" },
		{ "[cpi]\nsamples = 1000\n[doppler]\nenable = true\n[cfar]\nenable = true\nmaxima_range = 1000\n",
		  "t.conf:7: [cfar] maxima_range: maxima_range 1000: must be below the 1000 range gates" },
		{ "[cpi]\npulses = 20\n[cfar]\nenable = true\nmaxima_doppler = 15\n[doppler]\nenable = true\nfft = 30\n",
		  "t.conf:8: [doppler] fft: maxima_doppler 15: the neighbourhood (2 x 15 + 1 bins) is wider than the 30 Doppler bins" },
		{ "[doppler]\nenable = true\n[cfar]\nenable = true\nmethod = so\ntrain_range = 0\n",
		  "t.conf:6: [cfar] train_range: cfar so needs train_range >= 1" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct chirp_config c;
		char *errs = NULL;
		int n = load_str(&c, cases[i].text, &errs);

		if (n != 1 || !strstr(errs, cases[i].want))
			fail_msg("case %zu: %d errors, want 1 with \"%s\":\n%s", i, n, cases[i].want, errs);
		free(errs);
	}
}

/*
 * [array] and [beams]: a valid fan and list load and plan (B maps, the
 * output's channels are beams); each cross-key rule at its key's line; the
 * array's and the calibration's files keep their own FILE:LINE.
 */
static void test_beams(void **state)
{
	static const char base[] =
		"[cpi]\nchannels = 4\npulses = 16\nsamples = 256\n"
		"[radar]\ncarrier_hz = 3e9\n"
		"[doppler]\nenable = true\n"
		"[cfar]\nenable = true\nintegrate = none\n"
		"[output]\nmode = map_power\n";
	char dir[] = "/tmp/chirp-beams-XXXXXX", arr[160], cal[160], text[4096];
	static const struct {
		const char *tail, *want;
	} cases[] = {
		{ "[beams]\nmode = conventional\n", "t.conf:15: [beams] mode: a uniform linear array needs its element spacing" },
		{ "[array]\nspacing_m = 0.05\n[beams]\nmode = conventional\ncount = 4\nspacing_u = 0.7\n",
		  "t.conf:19: [beams] spacing_u: fan: beam 0 at u -1.05, v 0: outside the visible region" },
		{ "[array]\nspacing_m = 0.05\n[beams]\nmode = conventional\nlayout = list\ncount = 2\nlist = 10,0; 95,0\n",
		  "[beams] list: beam 1 at az 95, el 0: outside the visible region" },
		{ "[array]\nspacing_m = 0.05\n[beams]\nmode = conventional\nlayout = list\ncount = 3\nlist = 10,0; 20,0\n",
		  "[beams] list: 2 directions for count 3" },
		{ "[array]\nspacing_m = 0.05\n[beams]\nmode = conventional\ncount = 200000\n",
		  "[beams] count: 200000 is out of range" },
		{ "[array]\nspacing_m = 0.05\n[beams]\nmode = mvdr\nsnapshots = 5000\n",
		  "[beams] snapshots: " },
	};
	struct chirp_config c;
	struct plan p;
	char *errs = NULL;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(arr, sizeof(arr), "%s/array.txt", dir);
	snprintf(cal, sizeof(cal), "%s/cal.txt", dir);
	/* a good fan */
	snprintf(text, sizeof(text), "%s[array]\nspacing_m = 0.05\n[beams]\nmode = conventional\ncount = 3\n", base);
	assert_int_equal(load_str(&c, text, &errs), 0);
	free(errs);
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_int_equal(p.pc.beams.mode, PC_BEAMS_CONVENTIONAL);
	assert_int_equal(p.pc.beams.count, 3);
	assert_int_equal(p.ring[PLAN_RING_OUT].geo.channels, 3);
	/* integrate over beams (the default, noncoherent) */
	assert_int_equal(load_str(&c, "[cpi]\nchannels = 4\npulses = 16\nsamples = 256\n"
				  "[radar]\ncarrier_hz = 3e9\n[doppler]\nenable = true\n"
				  "[cfar]\nenable = true\n[output]\nmode = map_power\n"
				  "[array]\nspacing_m = 0.05\n[beams]\nmode = conventional\n", &errs), 1);
	if (!strstr(errs, "t.conf:16: [beams] mode: noncoherent integration over beams"))
		fail_msg("%s", errs);
	free(errs);
	/* MVDR's channels, at the key set last */
	assert_int_equal(load_str(&c, "[radar]\ncarrier_hz = 3e9\n[array]\nspacing_m = 0.001\n"
				  "[beams]\nmode = mvdr\n[cpi]\nchannels = 65\n", &errs), 1);
	if (!strstr(errs, "t.conf:8: [cpi] channels: mvdr needs at most 64 channels, not 65"))
		fail_msg("%s", errs);
	free(errs);
	/* the carrier */
	assert_int_equal(load_str(&c, "[cpi]\nchannels = 4\n[array]\nspacing_m = 0.05\n[beams]\nmode = conventional\n", &errs), 1);
	if (!strstr(errs, "t.conf:6: [beams] mode: beams need the carrier frequency"))
		fail_msg("%s", errs);
	free(errs);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "%s%s", base, cases[i].tail);
		if (load_str(&c, text, &errs) < 1 || !strstr(errs, cases[i].want))
			fail_msg("case %zu: want \"%s\":\n%s", i, cases[i].want, errs);
		free(errs);
	}
	/* the array file: five lines for four channels, its own FILE:LINE */
	f = fopen(arr, "w");
	assert_non_null(f);
	fputs("0 0 0\n0.05 0 0\n0.1 0 0\n0.15 0 0\n0.2 0 0\n", f);
	fclose(f);
	snprintf(text, sizeof(text), "%s[array]\ngeometry = file\nfile = %s\n[beams]\nmode = conventional\n", base, arr);
	assert_int_equal(load_str(&c, text, &errs), 1);
	{
		char want[256];

		snprintf(want, sizeof(want), "t.conf:16: [array] file: %s:5: more lines than the 4 channels", arr);
		if (!strstr(errs, want))
			fail_msg("want \"%s\":\n%s", want, errs);
	}
	free(errs);
	/* a NaN in it */
	f = fopen(arr, "w");
	assert_non_null(f);
	fputs("0 0 0\n0.05 nan 0\n0.1 0 0\n0.15 0 0\n", f);
	fclose(f);
	assert_int_equal(load_str(&c, text, &errs), 1);
	if (!strstr(errs, ":2: y_m: nan is not finite"))
		fail_msg("%s", errs);
	free(errs);
	/* a zero-gain calibration */
	f = fopen(cal, "w");
	assert_non_null(f);
	fputs("1 0\n0 10\n1 0\n1 0\n", f);
	fclose(f);
	snprintf(text, sizeof(text), "%s[array]\nspacing_m = 0.05\ncalibration = %s\n[beams]\nmode = conventional\n", base, cal);
	assert_int_equal(load_str(&c, text, &errs), 1);
	{
		char want[256];

		snprintf(want, sizeof(want), "t.conf:16: [array] calibration: %s:2: gain 0: must be > 0", cal);
		if (!strstr(errs, want))
			fail_msg("want \"%s\":\n%s", want, errs);
	}
	free(errs);
	unlink(arr);
	unlink(cal);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_syntax_variants),
		cmocka_unit_test(test_comment_start_values),
		cmocka_unit_test(test_listen_host),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_good_corpus),
		cmocka_unit_test(test_round_trip_random),
		cmocka_unit_test(test_consistency_bounds),
		cmocka_unit_test(test_file_waveform),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_pfa_range),
		cmocka_unit_test(test_restart_keys),
		cmocka_unit_test(test_staging_threads),
		cmocka_unit_test(test_tuning_keys),
		cmocka_unit_test(test_cfar_window_defaults),
		cmocka_unit_test(test_tuning_print_json),
		cmocka_unit_test(test_tuning_wisdom_path),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_reference_files),
		cmocka_unit_test(test_hold_restart_keys),
		cmocka_unit_test(test_ring_geometry),
		cmocka_unit_test(test_modes_waveform_only),
		cmocka_unit_test(test_modes_three),
		cmocka_unit_test(test_modes_many),
		cmocka_unit_test(test_modes_errors),
		cmocka_unit_test(test_modes_file),
		cmocka_unit_test(test_modes_json),
		cmocka_unit_test(test_modes_reload),
		cmocka_unit_test(test_modes_reference_example),
		cmocka_unit_test(test_radar_params),
		cmocka_unit_test(test_radar_geometry),
		cmocka_unit_test(test_radar_errors),
		cmocka_unit_test(test_beams),
	};

	log_init("test_config");
	find_root();
	if (argc > 1 && !strcmp(argv[1], "--write-docs"))
		return write_docs();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
