/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_capcache.c — the start-up decisions' cache (capcache.c): an entry
 * comes back as stored, a key's new entry replaces its old one, other keys
 * stay, the newest CAPCACHE_MAX_ENTRIES are kept, a file of another format
 * or with garbled lines is not believed, bad keys and values are refused,
 * and a file that cannot be written leaves the old one as it was; the
 * shared figure (a host calibration's) is stored on its key's entry,
 * comes back with it, and goes when the key is measured again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capcache.h"

static char dir[] = "/tmp/test_capcache.XXXXXX";
static char path[256];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/capacity", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *key, unsigned depth, double cps, int64_t t)
{
	struct capcache_entry e = { .depth = depth, .capacity_cps = cps, .measured_s = t };
	char err[256];

	assert_int_equal(capcache_store(path, key, &e, err, sizeof(err)), 0);
}

static int get(const char *key, struct capcache_entry *e)
{
	char err[256];

	return capcache_lookup(path, key, e, err, sizeof(err));
}

static void test_roundtrip(void **state)
{
	struct capcache_entry e;

	(void)state;
	unlink(path);
	assert_int_equal(get("a", &e), 0);   /* no file: not found, no error */
	put("v0.2 gpu=H100 4x128x4096 cf32 complex", 3, 2712.5, 1000);
	put("other key", 2, 100, 1001);
	assert_int_equal(get("v0.2 gpu=H100 4x128x4096 cf32 complex", &e), 1);
	assert_int_equal(e.depth, 3);
	assert_true(e.capacity_cps == 2712.5);
	assert_int_equal(e.measured_s, 1000);
	assert_int_equal(get("v0.2 gpu=H100", &e), 0);   /* no prefix match */
	put("other key", 4, 200, 1002);                  /* replaces */
	assert_int_equal(get("other key", &e), 1);
	assert_int_equal(e.depth, 4);
	assert_int_equal(get("v0.2 gpu=H100 4x128x4096 cf32 complex", &e), 1);
	assert_int_equal(e.depth, 3);
}

static void test_newest_kept(void **state)
{
	struct capcache_entry e;
	char key[32];

	(void)state;
	unlink(path);
	for (int i = 0; i < CAPCACHE_MAX_ENTRIES + 5; i++) {
		snprintf(key, sizeof(key), "key %d", i);
		put(key, 1 + i % 64, 10 + i, i);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "key %d", i);
		assert_int_equal(get(key, &e), 0);
	}
	for (int i = 5; i < CAPCACHE_MAX_ENTRIES + 5; i++) {
		snprintf(key, sizeof(key), "key %d", i);
		assert_int_equal(get(key, &e), 1);
		assert_true(e.capacity_cps == 10 + i);
	}
}

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_untrusted(void **state)
{
	struct capcache_entry e;
	char big[3000];

	(void)state;
	/* another format: nothing in it is believed */
	write_file("something else\nk\t2\t100\t5\n");
	assert_int_equal(get("k", &e), 0);
	/* garbled lines are skipped, good ones read */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_file(CAPCACHE_MAGIC "\n"
		   "k\t0\t100\t5\n"          /* depth 0 */
		   "k\t65\t100\t5\n"         /* depth over 64 */
		   "k\t2\t-1\t5\n"           /* capacity <= 0 */
		   "k\t2\tnan\t5\n"
		   "k\t2\t100\n"             /* a field missing */
		   "k\t2\t100\t5\textra\n"
		   "k\t2x\t100\t5\n");
	assert_int_equal(get("k", &e), 0);
	{
		FILE *f = fopen(path, "a");

		assert_non_null(f);
		fprintf(f, "%s\t2\t100\t5\ngood\t3\t321.5\t7\n", big);
		fclose(f);
	}
	assert_int_equal(get("good", &e), 1);
	assert_int_equal(e.depth, 3);
	/* a store keeps the good entry and drops the garbage */
	put("new", 2, 50, 8);
	assert_int_equal(get("good", &e), 1);
	assert_int_equal(get("new", &e), 1);
}

static void test_shared(void **state)
{
	struct capcache_entry e;
	char err[256];

	(void)state;
	unlink(path);
	/* no entry of the key: a shared figure needs its measured one */
	assert_int_equal(capcache_store_shared(path, "k", 2000, 50, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no entry"));
	put("k", 3, 2600, 10);
	put("other", 2, 900, 11);
	assert_int_equal(get("k", &e), 1);
	assert_true(e.shared_cps == 0);   /* not calibrated */
	assert_int_equal(capcache_store_shared(path, "k", 2047.5, 50, err, sizeof(err)), 0);
	assert_int_equal(get("k", &e), 1);
	assert_int_equal(e.depth, 3);
	assert_true(e.capacity_cps == 2600);
	assert_true(e.shared_cps == 2047.5);
	assert_int_equal(e.shared_measured_s, 50);
	assert_int_equal(get("other", &e), 1);
	assert_true(e.shared_cps == 0);
	/* another key's store keeps it */
	put("third", 2, 100, 12);
	assert_int_equal(get("k", &e), 1);
	assert_true(e.shared_cps == 2047.5);
	/* refused values change nothing */
	assert_int_equal(capcache_store_shared(path, "k", -1, 60, err, sizeof(err)), -EINVAL);
	assert_int_equal(capcache_store_shared(path, "k", 1.0 / 0.0, 60, err, sizeof(err)), -EINVAL);
	assert_int_equal(get("k", &e), 1);
	assert_true(e.shared_cps == 2047.5);
	/* 0 drops it */
	assert_int_equal(capcache_store_shared(path, "k", 0, 60, err, sizeof(err)), 0);
	assert_int_equal(get("k", &e), 1);
	assert_true(e.shared_cps == 0);
	assert_true(e.capacity_cps == 2600);
	/* measured again (a store of the key): the old shared figure goes */
	assert_int_equal(capcache_store_shared(path, "k", 1900, 70, err, sizeof(err)), 0);
	put("k", 3, 2500, 80);
	assert_int_equal(get("k", &e), 1);
	assert_true(e.capacity_cps == 2500);
	assert_true(e.shared_cps == 0);
	/* a key that changes (another build, driver, geometry) finds nothing */
	assert_int_equal(capcache_store_shared(path, "k", 1900, 90, err, sizeof(err)), 0);
	assert_int_equal(get("k2", &e), 0);
	/* garbled shared fields: the line is not believed */
	write_file(CAPCACHE_MAGIC "\n"
		   "k\t2\t100\t5\t-3\t6\n"
		   "k\t2\t100\t5\tnan\t6\n"
		   "k\t2\t100\t5\t90\t-6\n"
		   "k\t2\t100\t5\t90\n"
		   "k\t2\t100\t5\t90\t6\tx\n"
		   "g\t2\t100\t5\t90.5\t6\n");
	assert_int_equal(get("k", &e), 0);
	assert_int_equal(get("g", &e), 1);
	assert_true(e.shared_cps == 90.5);
	assert_int_equal(e.shared_measured_s, 6);
}

static void test_refused(void **state)
{
	struct capcache_entry e = { .depth = 2, .capacity_cps = 100, .measured_s = 1 },
			      bad = { .depth = 0, .capacity_cps = 100, .measured_s = 1 };
	char err[256], key[CAPCACHE_MAX_KEY + 2];

	(void)state;
	assert_int_equal(capcache_store(path, "a\tb", &e, err, sizeof(err)), -EINVAL);
	assert_int_equal(capcache_store(path, "a\nb", &e, err, sizeof(err)), -EINVAL);
	assert_int_equal(capcache_store(path, "", &e, err, sizeof(err)), -EINVAL);
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	assert_int_equal(capcache_store(path, key, &e, err, sizeof(err)), -EINVAL);
	assert_int_equal(capcache_store(path, "k", &bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "depth 0"));
}

static void test_unwritable(void **state)
{
	struct capcache_entry e = { .depth = 2, .capacity_cps = 100, .measured_s = 1 }, got;
	char err[256], sub[300], p2[400];

	(void)state;
	if (geteuid() == 0)
		skip();   /* root writes anywhere */
	snprintf(sub, sizeof(sub), "%s/ro", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(p2, sizeof(p2), "%s/capacity", sub);
	{
		FILE *f = fopen(p2, "w");

		assert_non_null(f);
		fprintf(f, "%s\nold\t2\t100\t1\n", CAPCACHE_MAGIC);
		fclose(f);
	}
	assert_int_equal(chmod(sub, 0555), 0);
	assert_true(capcache_store(p2, "new", &e, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, sub));
	assert_int_equal(capcache_lookup(p2, "old", &got, err, sizeof(err)), 1);
	chmod(sub, 0755);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_newest_kept),
		cmocka_unit_test(test_untrusted),
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_unwritable),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
