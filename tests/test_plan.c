/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_plan.c — the plan (plan.h) and the rules it checks for the config
 * module:
 *   - what plan_build derives: pulse compression's parameters, P' and Nd,
 *     the three rings' geometries by kind, the budget in ns;
 *   - each rule between keys that another module owns, reported with the
 *     parameter that failed (radar_check) and the keys of its combination
 *     (config_check_rules), and at the line of the key set last;
 *   - what comparing two plans decides for a reload: the same work and
 *     shape, which rings are kept.
 * The expected values are written out here, not taken from the code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "plan.h"
#include "radar.h"

/* Load text as t.conf; the errors into *out (malloc'd) when out is given. */
static int load(struct chirp_config *c, const char *text, char **out)
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

static void load_ok(struct chirp_config *c, const char *text)
{
	char *errs = NULL;

	if (load(c, text, &errs) != 0)
		fail_msg("config rejected:\n%s", errs);
	free(errs);
}

/* A radar chain: 2 channels, 17 pulses, 300 gates, MTI two-pulse (P' 16),
 * CFAR into a detection ring. */
#define RADAR "[cpi]\nchannels = 2\npulses = 17\nsamples = 300\n" \
	"[waveform]\nsample_rate_hz = 20e6\npulse_width_s = 2e-6\n" \
	"[radar]\nprf_hz = 4000\ncarrier_hz = 9e9\n" \
	"[doppler]\nenable = true\nmti = two_pulse\n" \
	"[cfar]\nenable = true\nguard_range = 1\ntrain_range = 5\nmax_detections = 99\n" \
	"[detections]\nring = /t-plan-det\n" \
	"[processing]\ncpu_threads = 3\nstaging_threads = 5\n" \
	"[trace]\nlatency_budget_ms = 2.5\n"

static void test_pc_params(void **state)
{
	struct chirp_config c;
	struct plan p;
	struct config_fault f;

	(void)state;
	load_ok(&c, RADAR "[input]\nformat = sc16\n[output]\nmode = magnitude\n");
	assert_int_equal(plan_build(&p, &c, &f), 0);
	assert_ptr_equal(p.cfg, &c);
	assert_int_equal(p.pc.channels, 2);
	assert_int_equal(p.pc.pulses, 17);
	assert_int_equal(p.pc.samples, 300);
	assert_int_equal(p.pc.in_format, PC_FMT_SC16);
	assert_int_equal(p.pc.out_mode, PC_OUT_MAGNITUDE);
	assert_int_equal(p.pc.cpu_threads, 3);
	assert_int_equal(p.pc.staging_threads, 5);
	assert_null(p.pc.ref);
	assert_null(p.pc.modes);
	assert_int_equal(p.pc.radar.doppler, 1);
	assert_int_equal(p.pc.radar.mti, PC_MTI_TWO);
	assert_int_equal(p.pc.radar.cfar, 1);
	assert_int_equal(p.pc.radar.guard_range, 1);
	assert_int_equal(p.pc.radar.train_range, 5);
	assert_int_equal(p.pc.radar.max_detections, 99);
	assert_true(p.pc.radar.sample_rate_hz == 20e6);
	assert_true(p.pc.radar.prf_hz == 4000);
	assert_true(p.pc.radar.carrier_hz == 9e9);
	assert_int_equal(p.pc.radar.velocity, 0);     /* auto: not required */
	assert_true(p.latency_budget_ns == 2500000u);
}

/* velocity = off hides the scales it would turn bins into; on requires
 * them; a budget of 0 is none. */
static void test_velocity_budget(void **state)
{
	struct chirp_config c;
	struct plan p;

	(void)state;
	load_ok(&c, "[radar]\nprf_hz = 4000\ncarrier_hz = 9e9\nvelocity = off\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_true(p.pc.radar.prf_hz == 0 && p.pc.radar.carrier_hz == 0);
	load_ok(&c, "[radar]\nprf_hz = 4000\ncarrier_hz = 9e9\nvelocity = on\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_int_equal(p.pc.radar.velocity, 1);
	load_ok(&c, "[trace]\nlatency_budget_ms = 0\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_true(p.latency_budget_ns == 0);
}

/* The HTTP listener: [metrics] listen as given; with it empty, the live
 * view alone opens loopback's 127.0.0.1:9464; neither, none. [live]'s
 * keys reach the view's parameters. */
static void test_listener(void **state)
{
	struct chirp_config c;
	struct plan p;

	(void)state;
	load_ok(&c, "");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_null(p.http_listen);
	assert_int_equal(p.live_enable, 0);
	load_ok(&c, "[live]\nenable = true\nfps = 12\nmax_clients = 3\nmap_max_range = 300\n"
		    "map_max_doppler = 64\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_string_equal(p.http_listen, PLAN_LIVE_LISTEN);
	assert_string_equal(PLAN_LIVE_LISTEN, "127.0.0.1:9464");
	assert_int_equal(p.live_enable, 1);
	assert_true(p.live.fps == 12 && p.live.max_clients == 3);
	assert_true(p.live.max_cols == 300 && p.live.max_rows == 64);
	load_ok(&c, "[metrics]\nlisten = [::1]:9000\n[live]\nenable = true\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_string_equal(p.http_listen, "[::1]:9000");
}

/* P' and Nd: the MTI drops 0, 1 or 2 pulses; auto Nd is the smallest
 * 2^a 3^b 5^c 7^d >= P'; a given fft is taken; no doppler, no axis. */
static void test_doppler_axis(void **state)
{
	static const struct {
		const char *text;
		unsigned pm, nd;
	} cases[] = {
		{ "[cpi]\npulses = 17\n[doppler]\nenable = true\nmti = two_pulse\n", 16, 16 },
		{ "[cpi]\npulses = 17\n[doppler]\nenable = true\nmti = three_pulse\n", 15, 15 },
		{ "[cpi]\npulses = 11\n[doppler]\nenable = true\n", 11, 12 },
		{ "[cpi]\npulses = 61\n[doppler]\nenable = true\n", 61, 63 },
		{ "[cpi]\npulses = 97\n[doppler]\nenable = true\nmti = two_pulse\n", 96, 96 },
		{ "[cpi]\npulses = 13\n[doppler]\nenable = true\nfft = 32\n", 13, 32 },
		{ "[cpi]\npulses = 13\n", 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct chirp_config c;
		struct plan p;

		load_ok(&c, cases[i].text);
		assert_int_equal(plan_build(&p, &c, NULL), 0);
		if (p.doppler_pulses != cases[i].pm || p.doppler_nfft != cases[i].nd)
			fail_msg("case %zu: P' %u Nd %u, want %u %u", i, p.doppler_pulses,
				 p.doppler_nfft, cases[i].pm, cases[i].nd);
		assert_int_equal(plan_doppler_pulses(&c), cases[i].pm);
		assert_int_equal(plan_doppler_nfft(&c), cases[i].nd);
	}
	assert_int_equal(radar_pulses_after_mti(2, PC_MTI_THREE), 0);
	assert_int_equal(radar_doppler_nfft(2, PC_MTI_THREE, 0), 0);
	assert_int_equal(radar_doppler_nfft(3, PC_MTI_THREE, 0), 1);
}

/* The rings by kind: geometry, name, role, options. */
static void test_rings(void **state)
{
	struct chirp_config c;
	struct plan p;
	const struct plan_ring *r;

	(void)state;
	load_ok(&c, RADAR "[input]\nslots = 64\nhugepages = true\nring = /t-plan-in\n"
		    "[output]\nmode = map_db\nslots = 32\nring = /t-plan-out\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	r = &p.ring[PLAN_RING_IN];
	assert_int_equal(r->used, 1);
	assert_int_equal(r->geo.channels, 2);
	assert_int_equal(r->geo.pulses, 17);
	assert_int_equal(r->geo.samples, 300);
	assert_int_equal(r->geo.format, CHIRP_RING_CF32);
	assert_int_equal(r->geo.slots, 64);
	assert_true(r->geo.sample_rate_hz == 20e6);
	assert_string_equal(r->name, "/t-plan-in");
	assert_int_equal(r->role, CHIRP_RING_CONSUMER);
	assert_int_equal(r->hugepages, 1);
	r = &p.ring[PLAN_RING_OUT];               /* a map: Nd rows, rf32 */
	assert_int_equal(r->used, 1);
	assert_int_equal(r->geo.channels, 2);
	assert_int_equal(r->geo.pulses, 16);
	assert_int_equal(r->geo.samples, 300);
	assert_int_equal(r->geo.format, CHIRP_RING_RF32);
	assert_int_equal(r->geo.slots, 32);
	assert_int_equal(r->role, CHIRP_RING_PRODUCER);
	assert_int_equal(r->hugepages, 0);
	r = &p.ring[PLAN_RING_DET];               /* one list of 99 records */
	assert_int_equal(r->used, 1);
	assert_int_equal(r->geo.channels, 1);
	assert_int_equal(r->geo.pulses, 1);
	assert_int_equal(r->geo.samples, 99);
	assert_int_equal(r->geo.format, CHIRP_RING_DET);
	assert_int_equal(r->geo.slots, 0);        /* auto: sized at start */
	assert_string_equal(r->name, "/t-plan-det");
	assert_string_equal(r->what, "detection");
	plan_set_slots(&p, PLAN_RING_DET, 40);
	assert_int_equal(p.ring[PLAN_RING_DET].geo.slots, 40);

	/* complex output: cf32, pulses rows; no [cfar]: no detection ring */
	load_ok(&c, "[cpi]\nchannels = 3\npulses = 5\nsamples = 400\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_int_equal(p.ring[PLAN_RING_OUT].geo.format, CHIRP_RING_CF32);
	assert_int_equal(p.ring[PLAN_RING_OUT].geo.pulses, 5);
	assert_int_equal(p.ring[PLAN_RING_DET].used, 0);
	assert_null(p.ring[PLAN_RING_DET].name);
	plan_set_slots(&p, PLAN_RING_DET, 40);    /* no such ring: no effect */
	assert_int_equal(p.ring[PLAN_RING_DET].geo.slots, 0);

	/* output mode none: no output ring */
	load_ok(&c, RADAR "[output]\nmode = none\n");
	assert_int_equal(plan_build(&p, &c, NULL), 0);
	assert_int_equal(p.ring[PLAN_RING_OUT].used, 0);
	assert_int_equal(p.ring[PLAN_RING_OUT].geo.channels, 0);
	assert_int_equal(p.ring[PLAN_RING_DET].used, 1);
}

/* radar_check names the parameter that failed and its combination. */
static void test_radar_check(void **state)
{
	struct pc_params pp;
	struct radar_fault f;

	(void)state;
	pc_params_init(&pp);
	pp.radar.doppler = 1;
	pp.radar.cfar = 1;
	pp.radar.pfa = 1e-6;
	pp.radar.max_detections = 10;
	pp.radar.maxima_doppler = 16;
	assert_int_equal(radar_check(&pp.radar, 32, 1000, &f), -EINVAL);
	assert_int_equal(f.param, RADAR_P_MAXIMA_DOPPLER);
	assert_true(f.params & RADAR_BIT(RADAR_P_NFFT));
	assert_non_null(strstr(f.why, "wider than the 32 Doppler bins"));
	pp.radar.maxima_doppler = 15;
	assert_int_equal(radar_check(&pp.radar, 32, 1000, &f), 0);
	pp.radar.maxima_range = 1000;
	assert_int_equal(radar_check(&pp.radar, 32, 1000, &f), -EINVAL);
	assert_int_equal(f.param, RADAR_P_MAXIMA_RANGE);
	assert_true(f.params & RADAR_BIT(RADAR_P_SAMPLES));
	pp.radar.maxima_range = 999;
	assert_int_equal(radar_check(&pp.radar, 32, 1000, &f), 0);
	pp.radar.method = PC_CFAR_SO;
	pp.radar.train_range = 0;
	assert_int_equal(radar_check(&pp.radar, 32, 1000, &f), -EINVAL);
	assert_int_equal(f.param, RADAR_P_TRAIN_RANGE);
	assert_true(f.params & RADAR_BIT(RADAR_P_METHOD));
	pp.radar.method = PC_CFAR_CA;
	pp.radar.mti = PC_MTI_THREE;
	assert_int_equal(radar_check(&pp.radar, 2, 1000, &f), -EINVAL);
	assert_int_equal(f.param, RADAR_P_MTI);
	assert_true(f.params & RADAR_BIT(RADAR_P_PULSES));
	/* pc_params_check says the same (one rule, one message) */
	{
		char why[256];
		static const float one[2] = { 1, 0 };

		pp.pulses = 2;
		pp.samples = 1000;
		pp.ref = one;
		pp.ref_len = 1;
		assert_int_equal(pc_params_check(&pp, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, f.why);
	}
}

/* Each rule the plan checks for config: its first key names the
 * parameter, and config_load reports it at the key set last. */
static void test_rule_keys(void **state)
{
	static const struct {
		const char *text, *key0, *other, *want;
	} cases[] = {
		{ "[cpi]\npulses = 32\n[doppler]\nenable = true\n[cfar]\nenable = true\nmaxima_doppler = 16\n",
		  "cfar.maxima_doppler", "doppler.fft",
		  "t.conf:7: [cfar] maxima_doppler: maxima_doppler 16: the neighbourhood (2 x 16 + 1 bins) is wider than the 32 Doppler bins" },
		{ "[cpi]\nsamples = 1000\n[doppler]\nenable = true\n[cfar]\nenable = true\nmaxima_range = 1000\n",
		  "cfar.maxima_range", "cpi.samples",
		  "t.conf:7: [cfar] maxima_range: maxima_range 1000: must be below the 1000 range gates" },
		/* the key that makes it wrong is the later one: here [cpi] samples */
		{ "[doppler]\nenable = true\n[cfar]\nenable = true\nmaxima_range = 300\n[cpi]\nsamples = 300\n",
		  "cfar.maxima_range", "cpi.samples",
		  "t.conf:7: [cpi] samples: maxima_range 300: must be below the 300 range gates" },
		{ "[doppler]\nenable = true\n[cfar]\nenable = true\nmethod = go\ntrain_range = 0\n",
		  "cfar.train_range", "cfar.method",
		  "t.conf:6: [cfar] train_range: cfar go needs train_range >= 1" },
		{ "[cpi]\npulses = 16\n[doppler]\nenable = true\nfft = 12\n",
		  "doppler.fft", "cpi.pulses",
		  "t.conf:5: [doppler] fft: Doppler FFT length 12 is shorter than the 16 pulses left after MTI" },
		{ "[doppler]\nenable = true\nmti = three_pulse\n[cpi]\npulses = 2\n",
		  "doppler.mti", "cpi.pulses",
		  "t.conf:5: [cpi] pulses: mti three_pulse needs at least 3 pulses per CPI, not 2" },
		/* the radar's scales, with or without Doppler processing */
		{ "[radar]\nprf_hz = 1000\nvelocity = on\n",
		  "radar.velocity", "radar.carrier_hz",
		  "t.conf:3: [radar] velocity: velocity = on needs prf_hz and carrier_hz" },
		{ "[cpi]\npulses = 4096\nsamples = 4096\nchannels = 64\n",
		  "cpi.pulses", "cpi.channels",
		  "t.conf:4: [cpi] channels: a CPI of 64 x 4096 x 4096 samples is 8.0 GiB" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct chirp_config c;
		struct config_fault f[4];
		struct plan p;
		char *errs = NULL;
		int n = load(&c, cases[i].text, &errs), other = 0;

		if (n != 1 || !strstr(errs, cases[i].want))
			fail_msg("case %zu: %d errors, want 1 with \"%s\":\n%s", i, n, cases[i].want,
				 errs);
		free(errs);
		/* the configuration as loaded (the key kept its bad value) */
		assert_int_equal(config_check_rules(&c, f, 4), 1);
		assert_string_equal(f[0].keys[0], cases[i].key0);
		for (int k = 1; k < CONFIG_FAULT_KEYS && f[0].keys[k]; k++)
			other |= !strcmp(f[0].keys[k], cases[i].other);
		if (!other)
			fail_msg("case %zu: %s not among the rule's keys", i, cases[i].other);
		memset(&f[1], 0, sizeof(f[1]));
		assert_int_equal(plan_build(&p, &c, &f[1]), -EINVAL);
		assert_string_equal(f[1].keys[0], cases[i].key0);
	}
}

/* base with change ("[section]\nkey = value\n") applied: its key line
 * goes under base's header of that section, or the whole change at the
 * end when base has none (a section may appear once). */
static void with_change(char *out, size_t len, const char *base, const char *change)
{
	const char *nl = strchr(change, '\n');
	char hdr[64];
	const char *at;

	snprintf(hdr, sizeof(hdr), "%.*s", nl ? (int)(nl - change + 1) : 0, change);
	at = hdr[0] ? strstr(base, hdr) : NULL;
	if (!at) {
		snprintf(out, len, "%s%s", base, change);
		return;
	}
	at += strlen(hdr);
	snprintf(out, len, "%.*s%s%s", (int)(at - base), base, nl + 1, at);
}

/* What a reload decides from two plans. */
static void test_compare(void **state)
{
	static const struct {
		const char *change;
		int same_work, same_shape, kept_in, kept_out, kept_det;
	} cases[] = {
		{ "", 1, 1, 1, 1, 1 },
		{ "[cfar]\npfa = 1e-3\n", 1, 1, 1, 1, 1 },   /* a number, not the work */
		{ "[input]\nformat = sc16\n", 0, 0, 0, 1, 1 },
		{ "[output]\nmode = power_db\n", 0, 0, 1, 0, 1 },
		{ "[cfar]\nmethod = so\n", 0, 0, 1, 1, 1 },
		{ "[detections]\nslots = 9\n", 1, 1, 1, 1, 0 },
		{ "[input]\nhugepages = true\n", 1, 1, 0, 1, 1 },
		{ "[output]\nhugepages = true\n", 1, 1, 1, 0, 1 },
		{ "[processing]\nfftw_planner = measure\n", 0, 1, 1, 1, 1 },
		/* a restart key: the plans differ; a reload holds it first
		 * (config_hold_restart_keys), so the ring stays (test_reload) */
		{ "[output]\nring = /t-plan-o2\n", 1, 1, 1, 0, 1 },
		{ "[processing]\nbackend = cpu\n", 1, 0, 1, 1, 1 },
	};
	static struct chirp_config a, b;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		struct plan pa, pb;
		struct plan_diff d;

		load_ok(&a, RADAR);
		with_change(text, sizeof(text), RADAR, cases[i].change);
		if (load(&b, text, NULL) != 0)
			fail_msg("case %zu: the change does not load:\n%s", i, text);
		assert_int_equal(plan_build(&pa, &a, NULL), 0);
		assert_int_equal(plan_build(&pb, &b, NULL), 0);
		plan_compare(&pa, &pb, &d);
		if (d.same_work != cases[i].same_work || d.same_shape != cases[i].same_shape ||
		    d.ring_kept[PLAN_RING_IN] != cases[i].kept_in ||
		    d.ring_kept[PLAN_RING_OUT] != cases[i].kept_out ||
		    d.ring_kept[PLAN_RING_DET] != cases[i].kept_det)
			fail_msg("case %zu (%s): work %d shape %d kept %d %d %d", i,
				 cases[i].change, d.same_work, d.same_shape, d.ring_kept[0],
				 d.ring_kept[1], d.ring_kept[2]);
	}
}

/*
 * Beams on reload: the fan's direction, the taper and the array keep the
 * work and every ring (new weights only); a change of B is a change of the
 * output's geometry (B maps) and of the work.
 */
static void test_compare_beams(void **state)
{
	static const char base[] =
		"[cpi]\nchannels = 8\npulses = 16\nsamples = 512\n[radar]\ncarrier_hz = 3e9\n"
		"[doppler]\nenable = true\n[cfar]\nenable = true\nintegrate = none\n"
		"[output]\nmode = map_power\n[array]\nspacing_m = 0.05\n"
		"[beams]\nmode = conventional\nspacing_u = 0.2\n";
	static const struct {
		const char *more;
		int same_work, kept_out;
	} cases[] = {
		{ "azimuth_deg = 10\ntaper = hann\n", 1, 1 },
		{ "count = 5\n", 0, 0 },
	};
	static struct chirp_config a, b;

	(void)state;
	{
		char text[1024];

		snprintf(text, sizeof(text), "%scount = 4\n", base);
		load_ok(&a, text);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		struct plan pa, pb;
		struct plan_diff d;

		snprintf(text, sizeof(text), "%s%s%s", base, i ? "" : "count = 4\n", cases[i].more);
		load_ok(&b, text);
		assert_int_equal(plan_build(&pa, &a, NULL), 0);
		assert_int_equal(plan_build(&pb, &b, NULL), 0);
		plan_compare(&pa, &pb, &d);
		assert_int_equal(d.same_work, cases[i].same_work);
		assert_int_equal(d.ring_kept[PLAN_RING_OUT], cases[i].kept_out);
		assert_int_equal(d.ring_kept[PLAN_RING_IN], 1);
		assert_int_equal(pb.ring[PLAN_RING_OUT].geo.channels, b.beams_count);
	}
}

/* A ring sized after the plan (slots = auto) is compared at that size. */
static void test_compare_sized(void **state)
{
	struct chirp_config a;
	struct plan pa, pb;
	struct plan_diff d;

	(void)state;
	load_ok(&a, RADAR);
	assert_int_equal(plan_build(&pa, &a, NULL), 0);
	assert_int_equal(plan_build(&pb, &a, NULL), 0);
	plan_set_slots(&pa, PLAN_RING_IN, 20);
	plan_set_slots(&pb, PLAN_RING_IN, 21);
	plan_compare(&pa, &pb, &d);
	assert_int_equal(d.ring_kept[PLAN_RING_IN], 0);
	assert_int_equal(d.ring_kept[PLAN_RING_OUT], 1);
	plan_set_slots(&pb, PLAN_RING_IN, 20);
	plan_compare(&pa, &pb, &d);
	assert_int_equal(d.ring_kept[PLAN_RING_IN], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_beams),
		cmocka_unit_test(test_pc_params),
		cmocka_unit_test(test_velocity_budget),
		cmocka_unit_test(test_listener),
		cmocka_unit_test(test_doppler_axis),
		cmocka_unit_test(test_rings),
		cmocka_unit_test(test_radar_check),
		cmocka_unit_test(test_rule_keys),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_compare_sized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
