/* SPDX-License-Identifier: Apache-2.0 */
/* test_sysnuma.c — NUMA node from a fake sysfs tree, cpu list parsing,
 * applying a plan to a thread and reporting what took effect. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>

#include "sysnuma.h"

static char root[256];

static void put_node(const char *bus, const char *content)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/bus", root); mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bus/pci", root); mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bus/pci/devices", root); mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bus/pci/devices/%s", root, bus); mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bus/pci/devices/%s/numa_node", root, bus);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_sysnuma.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_pci_node(void **state)
{
	char err[256];
	(void)state;
	put_node("0000:41:00.0", "1\n");
	put_node("0000:01:00.0", "-1\n");
	put_node("0000:02:00.0", "banana\n");
	assert_int_equal(sysnuma_pci_node(root, "0000:41:00.0", err, sizeof(err)), 1);
	assert_int_equal(sysnuma_pci_node(root, "0000:01:00.0", err, sizeof(err)), -1);
	assert_int_equal(sysnuma_pci_node(root, "0000:02:00.0", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unexpected"));
	assert_int_equal(sysnuma_pci_node(root, "0000:03:00.0", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "0000:03:00.0"));
	/* never a path outside bus/pci/devices */
	assert_int_equal(sysnuma_pci_node(root, "../../../etc", err, sizeof(err)), -EINVAL);
	assert_int_equal(sysnuma_pci_node(root, "", err, sizeof(err)), -EINVAL);
	/* nvidia-smi's and CUDA's form (32-bit domain) and upper case find the
	 * same sysfs entry */
	assert_int_equal(sysnuma_pci_node(root, "00000000:41:00.0", err, sizeof(err)), 1);
	assert_int_equal(sysnuma_pci_node(root, "0000:41:00.0", err, sizeof(err)), 1);
	put_node("0000:4a:00.0", "1\n");
	assert_int_equal(sysnuma_pci_node(root, "0000:4A:00.0", err, sizeof(err)), 1);
	assert_int_equal(sysnuma_pci_node(root, "00000000:4A:00.0", err, sizeof(err)), 1);
	assert_int_equal(sysnuma_pci_node(root, "00010000:41:00.0", err, sizeof(err)), -EINVAL);
	assert_int_equal(sysnuma_pci_node(root, "0000:41:00.0/../..", err, sizeof(err)), -EINVAL);
}

static void test_cpu_lists(void **state)
{
	char err[256], buf[256];
	cpu_set_t s;
	(void)state;
	const char *good[] = { "0", "0-3", "2-5,8", "1,3,5-7,9", "0-0,2" };
	const char *canon[] = { "0", "0-3", "2-5,8", "1,3,5-7,9", "0,2" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(sysnuma_parse_cpus(good[i], &s, err, sizeof(err)), 0);
		sysnuma_format_cpus(&s, buf, sizeof(buf));
		assert_string_equal(buf, canon[i]);
	}
	assert_int_equal(sysnuma_parse_cpus("2-5,8", &s, err, sizeof(err)), 0);
	assert_int_equal(CPU_COUNT(&s), 5);
	const char *bad[] = { "", "a", "3-1", "1,", "1-", "-1", "1 2", "99999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sysnuma_parse_cpus(bad[i], &s, err, sizeof(err)), -EINVAL);
}

/* The main loop's cpus when [numa] cpus names the data path's: allowed,
 * within the node's, less the data path's; none left is 0. */
static void test_housekeeping(void **state)
{
	cpu_set_t allowed, node, data, hk;
	char err[128], buf[64];

	(void)state;
	assert_int_equal(sysnuma_parse_cpus("0-15", &allowed, err, sizeof(err)), 0);
	assert_int_equal(sysnuma_parse_cpus("0-7", &data, err, sizeof(err)), 0);
	assert_int_equal(sysnuma_housekeeping(&allowed, NULL, &data, &hk), 8);
	sysnuma_format_cpus(&hk, buf, sizeof(buf));
	assert_string_equal(buf, "8-15");
	/* within the node: node 0 = 0-3,8-11 */
	assert_int_equal(sysnuma_parse_cpus("0-3,8-11", &node, err, sizeof(err)), 0);
	assert_int_equal(sysnuma_parse_cpus("0-3", &data, err, sizeof(err)), 0);
	assert_int_equal(sysnuma_housekeeping(&allowed, &node, &data, &hk), 4);
	sysnuma_format_cpus(&hk, buf, sizeof(buf));
	assert_string_equal(buf, "8-11");
	/* only what the process may use (a cpuset or taskset) */
	assert_int_equal(sysnuma_parse_cpus("2-5", &allowed, err, sizeof(err)), 0);
	assert_int_equal(sysnuma_housekeeping(&allowed, NULL, &data, &hk), 2);
	sysnuma_format_cpus(&hk, buf, sizeof(buf));
	assert_string_equal(buf, "4-5");
	/* the data path has them all: nothing left, nothing moves */
	assert_int_equal(sysnuma_parse_cpus("0-5", &data, err, sizeof(err)), 0);
	assert_int_equal(sysnuma_housekeeping(&allowed, NULL, &data, &hk), 0);
}

static void test_resolve_and_apply(void **state)
{
	char err[256];
	struct sysnuma_plan plan;
	struct sysnuma_applied ap;
	(void)state;
	put_node("0000:41:00.0", "-1\n");
	struct sysnuma_req req = { .node = -2, .gpu_bus_id = "0000:41:00.0", .cpus = "0",
				   .realtime = 0, .rt_priority = 10 };
	assert_int_equal(sysnuma_resolve(&req, root, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.node, -1);             /* -1 in sysfs: no binding */
	assert_true(plan.have_cpus);
	memset(&ap, 0, sizeof(ap));
	assert_int_equal(sysnuma_apply_thread(&plan, &ap, err, sizeof(err)), 0);
	assert_string_equal(ap.cpus, "0");           /* affinity actually applied */
	assert_int_equal(ap.realtime, 0);
	req.cpus = "1-0";
	assert_int_equal(sysnuma_resolve(&req, root, &plan, err, sizeof(err)), -EINVAL);
	req.cpus = "";
	req.node = 4000;
	assert_int_equal(sysnuma_resolve(&req, root, &plan, err, sizeof(err)) != 0 ||
			 plan.node == -1, 1);           /* bad node refused, or no NUMA at all */
}

static void test_realtime_reports_truth(void **state)
{
	char err[256];
	struct sysnuma_plan plan = { .node = -1, .realtime = 1, .rt_priority = 1 };
	struct sysnuma_applied ap;
	(void)state;
	memset(&ap, 0, sizeof(ap));
	/* preferred: never an error; applied says what happened */
	assert_int_equal(sysnuma_apply_thread(&plan, &ap, err, sizeof(err)), 0);
	int policy;
	struct sched_param sp;
	assert_int_equal(pthread_getschedparam(pthread_self(), &policy, &sp), 0);
	assert_int_equal(ap.realtime, policy == SCHED_FIFO);
	if (!ap.realtime)
		assert_true(strlen(ap.realtime_note) > 0);
	/* required fails exactly when SCHED_FIFO cannot be had */
	plan.realtime = 2;
	int ret = sysnuma_apply_thread(&plan, &ap, err, sizeof(err));
	assert_true(ret == 0 ? ap.realtime == 1 : (ret == -EPERM && strstr(err, "required") != NULL));
	/* back to normal scheduling for the rest of the run */
	sp.sched_priority = 0;
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pci_node),
		cmocka_unit_test(test_cpu_lists),
		cmocka_unit_test(test_housekeeping),
		cmocka_unit_test(test_resolve_and_apply),
		cmocka_unit_test(test_realtime_reports_truth),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
