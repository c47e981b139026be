/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_workkey.c — the table of the fields that decide the backend's work
 * (workkey.c), which drives the capacity cache's key and the reload's
 * keep-the-capacity and keep-the-depth tests (gen.c):
 *   - each entry, changed alone through its configuration key, changes
 *     the description (so the cache key's digest) and makes the
 *     comparisons that take it, and only those, differ: the expectations
 *     are written here, independently of the table;
 *   - every key of the sections that feed the backend is either in the
 *     table or listed here as not changing the work, and such a key
 *     leaves struct pc_tuning alone: a tuning field (pc.h: each is a
 *     [processing] key) cannot be added without the key seeing it;
 *   - the Doppler and CFAR keys count only while doppler / cfar is on;
 *   - any configuration's description fits WORKKEY_DESC_MAX, and a short
 *     buffer reports the length it would need.
 */
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
#include "workkey.h"

#define SHAPE    WORKKEY_SHAPE
#define CAPACITY WORKKEY_CAPACITY
#define BOTH     (WORKKEY_SHAPE | WORKKEY_CAPACITY)

/* Every configuration here has the radar chain on, so that its keys
 * count, and names the GPU by bus id, so that gpu_bus_id changes alone. */
static const char base[] = "doppler.enable=true;cfar.enable=true;processing.gpu=0000:41:00.0";

/* A table entry changed alone: a and b are settings over base
 * ("section.key=value;..."), differ: the comparisons that must see it. */
struct change {
	const char *name;
	const char *a, *b;
	unsigned differ;
};

/* What beams need besides their mode (doc/beams.md). */
#define BEAMS_ON_BASE "cpi.channels=4;radar.carrier_hz=3e9;array.spacing_m=0.05;cfar.integrate=none"

static const struct change changes[] = {
	{ "cpi.channels", "", "cpi.channels=2", BOTH },
	{ "cpi.pulses", "", "cpi.pulses=64", BOTH },
	{ "cpi.samples", "", "cpi.samples=3000", BOTH },
	{ "input.format", "", "input.format=sc16", BOTH },
	{ "output.mode", "", "output.mode=magnitude", BOTH },
	{ "processing.gpu", "processing.gpu=0", "processing.gpu=1", BOTH },
	{ "processing.gpu_bus_id", "", "processing.gpu=0000:42:00.0", SHAPE },
	{ "processing.busy_poll", "", "processing.busy_poll=false", BOTH },
	{ "processing.staging", "", "processing.staging=copy", BOTH },
	{ "processing.idle_spin_us", "", "processing.idle_spin_us=100", BOTH },
	{ "processing.staging_threads", "", "processing.staging_threads=3", BOTH },
	/* the capacity compares the backend and nfft the pc chose (gen.c) */
	{ "processing.backend", "", "processing.backend=cpu", SHAPE },
	{ "processing.nfft", "", "processing.nfft=8192", SHAPE },
	{ "processing.streams", "", "processing.streams=2", 0 },
	{ "processing.cpu_threads", "", "processing.cpu_threads=3", CAPACITY },
	{ "processing.fftw_planner", "", "processing.fftw_planner=measure", CAPACITY },
	{ "processing.fftw_wisdom", "", "processing.fftw_wisdom=/var/lib/chirpd/fftw-wisdom",
	  CAPACITY },
	{ "processing.takeover", "", "processing.takeover=on", CAPACITY },
	{ "processing.cpu_block_kib", "", "processing.cpu_block_kib=64", CAPACITY },
	{ "processing.cuda_graphs", "", "processing.cuda_graphs=false", CAPACITY },
	{ "processing.cuda_chunks", "", "processing.cuda_chunks=2", CAPACITY },
	{ "processing.cuda_idle_chunks", "", "processing.cuda_idle_chunks=2", CAPACITY },
	{ "processing.cuda_spin_us", "", "processing.cuda_spin_us=100", CAPACITY },
	{ "processing.staging_nt", "", "processing.staging_nt=false", CAPACITY },
	{ "processing.cuda_fused", "", "processing.cuda_fused=off", CAPACITY },
	{ "doppler.enable", "cfar.enable=false", "cfar.enable=false;doppler.enable=false", BOTH },
	{ "doppler.mti", "", "doppler.mti=two_pulse", BOTH },
	{ "doppler.fft", "", "doppler.fft=256", BOTH },
	{ "cfar.enable", "", "cfar.enable=false", BOTH },
	{ "cfar.method", "", "cfar.method=go", BOTH },
	{ "cfar.integrate", "", "cfar.integrate=none", BOTH },
	{ "cfar.guard_range", "", "cfar.guard_range=3", BOTH },
	{ "cfar.guard_doppler", "", "cfar.guard_doppler=2", BOTH },
	{ "cfar.train_range", "", "cfar.train_range=6", BOTH },
	{ "cfar.train_doppler", "", "cfar.train_doppler=3", BOTH },
	/* thresholds and records, not the work: the key only */
	{ "cfar.os_rank", "cfar.method=os", "cfar.method=os;cfar.os_rank=5", 0 },
	{ "cfar.maxima_range", "", "cfar.maxima_range=2", 0 },
	{ "cfar.maxima_doppler", "", "cfar.maxima_doppler=2", 0 },
	{ "cfar.max_detections", "", "cfar.max_detections=100", 0 },
	/* beams: B rows through the chain */
	{ "beams.mode", BEAMS_ON_BASE, BEAMS_ON_BASE ";beams.mode=conventional", BOTH },
	{ "beams.count", BEAMS_ON_BASE ";beams.mode=conventional",
	  BEAMS_ON_BASE ";beams.mode=conventional;beams.count=3", BOTH },
};

/* The keys of those sections that do not change the backend's work, each
 * with a value to change it to and the reason. */
static const struct { const char *name, *value, *why; } notwork[] = {
	{ "input.ring", "/chirpd-in2", "a name" },
	{ "input.slots", "64", "the ring's length, not a CPI's work" },
	{ "input.buffer_ms", "200", "sizes the ring" },
	{ "input.hugepages", "true", "the ring's backing" },
	{ "output.hugepages", "true", "the ring's backing" },
	{ "input.allow_foreign_owner", "true", "who may own the ring" },
	{ "processing.normalize", "none", "a gain" },
	{ "processing.capacity_cache", "/tmp/capacity", "where the cache is" },
	{ "output.ring", "/chirpd-out2", "a name" },
	{ "output.slots", "64", "the ring's length" },
	{ "output.file", "/tmp/out.cf32", "a copy of what the ring gets" },
	{ "output.allow_foreign_owner", "true", "who may own the ring" },
	{ "doppler.window", "rect", "coefficients" },
	{ "doppler.taylor_nbar", "6", "coefficients" },
	{ "doppler.taylor_sll_db", "40", "coefficients" },
	{ "cfar.pfa", "1e-5", "scales the thresholds" },
	{ "beams.layout", "list", "the directions: the weights, not the work" },
	{ "beams.azimuth_deg", "10", "the weights" },
	{ "beams.elevation_deg", "5", "the weights" },
	{ "beams.spacing_u", "0.2", "the weights" },
	{ "beams.list", "0,0", "the weights" },
	{ "beams.taper", "hann", "the weights" },
	{ "beams.taylor_nbar", "5", "the weights" },
	{ "beams.taylor_sll_db", "35", "the weights" },
	{ "beams.snapshots", "16", "mvdr's training cells: a covariance of K x C^2, small beside the CPI" },
	{ "beams.first_gate", "2", "which training cells" },
	{ "beams.gate_stride", "2", "which training cells" },
	{ "beams.pulse_stride", "2", "which training cells" },
	{ "beams.loading", "0.1", "the weights" },
	{ "beams.monopulse", "false", "per detection, not per cell" },
};

/* The sections whose every key is in the table or in notwork. [waveform]
 * and [mode NAME] enter the key through the filters' lengths (gen.c). */
static const char *const sections[] = { "input", "cpi", "processing", "output", "doppler",
					"cfar", "beams" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Settings "section.key=value;..." of base then over (a later key
 * replaces an earlier one) as an INI file grouped by section, into ini. */
static void make_ini(const char *over, char *ini, size_t len)
{
	char all[2048], *set[128], *save = NULL;
	size_t n = 0, o = 0;

	snprintf(all, sizeof(all), "%s;%s", base, over);
	for (char *s = strtok_r(all, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
		size_t klen = strcspn(s, "=");
		size_t i;

		for (i = 0; i < n && (strncmp(set[i], s, klen) || set[i][klen] != '='); i++)
			;
		assert_true(i < N(set));
		set[i] = s;
		n += i == n;
	}
	ini[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t slen = strcspn(set[i], ".");
		int seen = 0;

		for (size_t j = 0; j < i && !seen; j++)
			seen = !strncmp(set[j], set[i], slen) && set[j][slen] == '.';
		if (seen)
			continue;
		o += (size_t)snprintf(ini + o, len - o, "[%.*s]\n", (int)slen, set[i]);
		for (size_t j = i; j < n; j++)
			if (!strncmp(set[j], set[i], slen) && set[j][slen] == '.')
				o += (size_t)snprintf(ini + o, len - o, "%s\n", set[j] + slen + 1);
		assert_true(o < len);
	}
}

static void load(struct chirp_config *c, const char *over)
{
	char ini[4096], *errs = NULL;
	size_t elen = 0;
	FILE *m = open_memstream(&errs, &elen);
	int n;

	assert_non_null(m);
	make_ini(over, ini, sizeof(ini));
	n = config_load_string(c, "t.conf", ini, m);
	fclose(m);
	if (n != 0)
		fail_msg("settings '%s': %d errors:\n%s\nfile:\n%s", over, n, errs, ini);
	free(errs);
}

static void describe(const struct chirp_config *c, char *buf)
{
	assert_true(workkey_describe(c, buf, WORKKEY_DESC_MAX) < WORKKEY_DESC_MAX);
}

/* Whether a and b hand the backend the same struct pc_tuning. */
static int same_tuning(const struct chirp_config *a, const struct chirp_config *b)
{
	struct pc_params pa, pb;

	plan_pc_params(a, &pa);
	plan_pc_params(b, &pb);
	if (strcmp(pa.tune.fftw_wisdom ? pa.tune.fftw_wisdom : "",
		   pb.tune.fftw_wisdom ? pb.tune.fftw_wisdom : ""))
		return 0;
	/* the pointers point into a and b; pc_params_init zeroed the padding */
	pa.tune.fftw_wisdom = pb.tune.fftw_wisdom = NULL;
	return memcmp(&pa.tune, &pb.tune, sizeof(pa.tune)) == 0;
}

static const struct change *change_of(const char *name)
{
	for (size_t i = 0; i < N(changes); i++)
		if (!strcmp(changes[i].name, name))
			return &changes[i];
	return NULL;
}

/* The table and changes[] name the same fields with the same sets. */
static void test_every_entry_has_a_change(void **state)
{
	const char *name;
	unsigned set;
	size_t n = 0;

	(void)state;
	for (size_t i = 0; (name = workkey_field_at(i, &set)); i++, n++) {
		const struct change *ch = change_of(name);

		if (!ch)
			fail_msg("%s: in workkey.c's table but not in changes[]", name);
		if (set != ch->differ)
			fail_msg("%s: the table's set is %u, changes[] expects %u", name, set,
				 ch->differ);
	}
	for (size_t i = 0; i < N(changes); i++) {
		size_t j = 0;

		while ((name = workkey_field_at(j, NULL)) && strcmp(name, changes[i].name))
			j++;
		if (!name)
			fail_msg("%s: in changes[] but not in workkey.c's table", changes[i].name);
	}
	assert_int_equal(n, N(changes));
}

static void test_each_field_changes_the_key(void **state)
{
	static char da[WORKKEY_DESC_MAX], db[WORKKEY_DESC_MAX];
	struct chirp_config a, b;

	(void)state;
	for (size_t i = 0; i < N(changes); i++) {
		const struct change *ch = &changes[i];

		load(&a, ch->a);
		load(&b, ch->b);
		describe(&a, da);
		describe(&b, db);
		if (!strcmp(da, db))
			fail_msg("%s: '%s' and '%s' give the same description: %s", ch->name,
				 ch->a, ch->b, da);
		if (!strstr(db, ch->name) && !strstr(da, ch->name))
			fail_msg("%s: not named in the description: %s", ch->name, da);
		assert_true(workkey_same(&a, &a, BOTH));
		assert_true(workkey_same(&b, &b, BOTH));
		for (unsigned bit = SHAPE; bit <= CAPACITY; bit <<= 1)
			if (workkey_same(&a, &b, bit) != !(ch->differ & bit))
				fail_msg("%s: comparison %u says %s, expected %s", ch->name, bit,
					 workkey_same(&a, &b, bit) ? "same" : "differs",
					 ch->differ & bit ? "differs" : "same");
	}
}

static int is_notwork(const char *name)
{
	for (size_t i = 0; i < N(notwork); i++)
		if (!strcmp(notwork[i].name, name))
			return 1;
	return 0;
}

/* A new key of these sections (a new tuning field first of all) must be
 * placed: in the table, or in notwork with its reason. */
static void test_every_key_classified(void **state)
{
	const char *section, *name;
	char full[128];
	size_t seen = 0;

	(void)state;
	for (size_t i = 0; config_key_at(i, &section, &name) >= 0; i++) {
		int ours = 0;

		for (size_t s = 0; s < N(sections); s++)
			ours |= !strcmp(section, sections[s]);
		if (!ours)
			continue;
		snprintf(full, sizeof(full), "%s.%s", section, name);
		if (!change_of(full) && !is_notwork(full))
			fail_msg("[%s] %s: if it changes the backend's speed, add it to workkey.c's "
				 "table and to changes[] here; else to notwork[] with the reason",
				 section, name);
		seen++;
	}
	/* every change but gpu_bus_id (set through processing.gpu) is a key */
	assert_int_equal(seen, N(changes) - 1 + N(notwork));
}

static void test_notwork_keys_leave_the_work(void **state)
{
	static char da[WORKKEY_DESC_MAX], db[WORKKEY_DESC_MAX];
	struct chirp_config a, b;
	char over[256];

	(void)state;
	load(&a, "");
	describe(&a, da);
	for (size_t i = 0; i < N(notwork); i++) {
		snprintf(over, sizeof(over), "%s=%s", notwork[i].name, notwork[i].value);
		load(&b, over);
		describe(&b, db);
		if (!same_tuning(&a, &b))
			fail_msg("%s: changes struct pc_tuning, yet is listed as not changing the "
				 "work (%s)", notwork[i].name, notwork[i].why);
		if (strcmp(da, db) || !workkey_same(&a, &b, BOTH))
			fail_msg("%s: changes the work's key: %s", notwork[i].name, db);
	}
}

/* A field the backend ignores is neither compared nor described. */
static void test_ignored_fields(void **state)
{
	static const struct { const char *a, *b; } cases[] = {
		{ "doppler.enable=false;cfar.enable=false",
		  "doppler.enable=false;cfar.enable=false;doppler.mti=two_pulse" },
		{ "doppler.enable=false;cfar.enable=false",
		  "doppler.enable=false;cfar.enable=false;doppler.fft=256" },
		{ "cfar.enable=false", "cfar.enable=false;cfar.method=go" },
		{ "cfar.enable=false", "cfar.enable=false;cfar.train_range=6" },
		{ "cfar.enable=false", "cfar.enable=false;cfar.max_detections=100" },
	};
	static char da[WORKKEY_DESC_MAX], db[WORKKEY_DESC_MAX];
	struct chirp_config a, b;

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		load(&a, cases[i].a);
		load(&b, cases[i].b);
		describe(&a, da);
		describe(&b, db);
		assert_string_equal(da, db);
		assert_true(workkey_same(&a, &b, BOTH));
	}
	assert_null(strstr(da, "cfar.method"));
}

/* Every field at its widest (and the radar chain on) still fits. */
static void test_description_fits(void **state)
{
	static char d[WORKKEY_DESC_MAX];
	struct chirp_config c;
	size_t need;
	char small[16];

	(void)state;
	memset(&c, 0x80, sizeof(c));   /* -2139062144 and 2155905152: 11 and 10 digits */
	c.nfft = SIZE_MAX;
	memset(c.gpu_bus_id, 'b', sizeof(c.gpu_bus_id) - 1);
	c.gpu_bus_id[sizeof(c.gpu_bus_id) - 1] = '\0';
	memset(c.fftw_wisdom, 'w', sizeof(c.fftw_wisdom) - 1);
	c.fftw_wisdom[sizeof(c.fftw_wisdom) - 1] = '\0';
	need = workkey_describe(&c, d, sizeof(d));
	assert_true(need < sizeof(d));
	assert_int_equal(strlen(d), need);
	assert_non_null(strstr(d, "cfar.max_detections="));

	assert_int_equal(workkey_describe(&c, small, sizeof(small)), need);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, d, sizeof(small) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_entry_has_a_change),
		cmocka_unit_test(test_each_field_changes_the_key),
		cmocka_unit_test(test_every_key_classified),
		cmocka_unit_test(test_notwork_keys_leave_the_work),
		cmocka_unit_test(test_ignored_fields),
		cmocka_unit_test(test_description_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
