/* SPDX-License-Identifier: Apache-2.0 */
/* sysnuma.c — see sysnuma.h. */
#include "sysnuma.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

/*
 * A PCI bus id is "DDDD:BB:DD.F" (hex; sysfs's form) or "DDDDDDDD:BB:DD.F"
 * (nvidia-smi's and CUDA's, e.g. 00000000:41:00.0), in either case. Write
 * sysfs's form, lower case, to out[13]; returns 0, or -1 for anything else,
 * so a config value can never walk the sysfs tree ("../../").
 */
static int bus_id_canon(const char *s, char out[13])
{
	size_t n = strlen(s), skip;

	if (n == 16 && !strncmp(s, "0000", 4))
		skip = 4;              /* a 32-bit domain that fits in 16 bits */
	else if (n == 12)
		skip = 0;
	else
		return -1;
	s += skip;
	if (s[4] != ':' || s[7] != ':' || s[10] != '.')
		return -1;
	for (size_t i = 0; i < 12; i++) {
		if (i == 4 || i == 7 || i == 10) {
			out[i] = s[i];
			continue;
		}
		if (!isxdigit((unsigned char)s[i]))
			return -1;
		out[i] = (char)tolower((unsigned char)s[i]);
	}
	out[12] = '\0';
	return 0;
}

int sysnuma_pci_node(const char *sysfs_root, const char *bus_id, char *err, size_t errlen)
{
	char path[PATH_MAX], buf[32], id[13];
	FILE *f = NULL;
	long v;
	char *end;
	int ret;

	if (!bus_id || bus_id_canon(bus_id, id) < 0) {
		snprintf(err, errlen, "PCI bus id '%s' is not of the form 0000:41:00.0 "
			 "(or 00000000:41:00.0)", bus_id ? bus_id : "");
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node",
		 sysfs_root ? sysfs_root : "/sys", id);
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		goto out;
	}
	if (!fgets(buf, sizeof(buf), f)) {
		ret = -EIO;
		snprintf(err, errlen, "read %s: empty", path);
		goto out;
	}
	errno = 0;
	v = strtol(buf, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	if (errno || end == buf || *end || v < -1 || v > 4095) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s: unexpected content '%.16s'", path, buf);
		goto out;
	}
	ret = (int)v;
out:
	if (f)
		fclose(f);
	return ret;
}

int sysnuma_parse_cpus(const char *list, cpu_set_t *set, char *err, size_t errlen)
{
	const char *p = list;

	CPU_ZERO(set);
	if (!list || !*list) {
		snprintf(err, errlen, "empty cpu list");
		return -EINVAL;
	}
	while (*p) {
		char *end;
		long a, b;

		if (!isdigit((unsigned char)*p))
			goto bad;
		a = strtol(p, &end, 10);
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				goto bad;
			b = strtol(p, &end, 10);
			p = end;
		}
		if (a < 0 || b < a || b >= CPU_SETSIZE) {
			snprintf(err, errlen, "'%s': cpu range %ld-%ld is empty or beyond cpu %d",
				 list, a, b, CPU_SETSIZE - 1);
			return -EINVAL;
		}
		for (long c = a; c <= b; c++)
			CPU_SET((int)c, set);
		if (*p == ',') {
			p++;
			if (!*p)
				goto bad;
		} else if (*p) {
			goto bad;
		}
	}
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not a cpu list like 2-5,8", list);
	CPU_ZERO(set);
	return -EINVAL;
}

void sysnuma_format_cpus(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;
	int c = 0;

	if (len == 0)
		return;
	buf[0] = 0;
	while (c < CPU_SETSIZE) {
		int a, b;

		if (!CPU_ISSET(c, set)) {
			c++;
			continue;
		}
		a = c;
		while (c + 1 < CPU_SETSIZE && CPU_ISSET(c + 1, set))
			c++;
		b = c++;
		int n = a == b ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", a)
			       : snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", a, b);
		if (n < 0 || (size_t)n >= len - off) {
			buf[len - 1] = 0;
			return;
		}
		off += (size_t)n;
	}
}

int sysnuma_resolve(const struct sysnuma_req *req, const char *sysfs_root,
		    struct sysnuma_plan *plan, char *err, size_t errlen)
{
	char why[160];
	int node = req->node, ret;

	memset(plan, 0, sizeof(*plan));
	plan->node = -1;
	plan->realtime = req->realtime;
	plan->rt_priority = req->rt_priority;
	snprintf(plan->node_source, sizeof(plan->node_source), "none");

	if (node == -2) {
		if (!req->gpu_bus_id || !*req->gpu_bus_id) {
			snprintf(plan->node_source, sizeof(plan->node_source),
				 "auto: no GPU bus id, no binding");
			node = -1;
		} else {
			ret = sysnuma_pci_node(sysfs_root, req->gpu_bus_id, why, sizeof(why));
			if (ret < -1) {
				/* Not fatal: a missing sysfs entry means we cannot know. */
				log_warn("numa: node = auto: %s; not binding", why);
				snprintf(plan->node_source, sizeof(plan->node_source),
					 "auto: unknown (%.60s)", why);
				node = -1;
			} else {
				node = ret;
				snprintf(plan->node_source, sizeof(plan->node_source),
					 "auto: GPU %s numa_node %d", req->gpu_bus_id, ret);
			}
		}
	} else if (node >= 0) {
		snprintf(plan->node_source, sizeof(plan->node_source), "config");
	}
	if (node >= 0) {
		if (numa_available() < 0) {
			log_warn("numa: node %d requested but the kernel has no NUMA support; not binding", node);
			node = -1;
		} else if (node > numa_max_node()) {
			snprintf(err, errlen, "NUMA node %d does not exist (max %d)", node, numa_max_node());
			return -EINVAL;
		}
	}
	plan->node = node;

	if (req->cpus && *req->cpus) {
		ret = sysnuma_parse_cpus(req->cpus, &plan->cpus, err, errlen);
		if (ret)
			return ret;
		plan->have_cpus = 1;
	} else if (node >= 0) {
		ret = sysnuma_node_cpus(node, &plan->cpus);
		if (ret == -ENOMEM) {
			snprintf(err, errlen, "numa_allocate_cpumask: out of memory");
			return -ENOMEM;
		}
		if (ret > 0)
			plan->have_cpus = 1;
		else
			log_warn("numa: numa_node_to_cpus(%d): %s; threads not pinned", node,
				 ret < 0 ? strerror(-ret) : "no cpus");
	}
	return 0;
}

int sysnuma_node_cpus(int node, cpu_set_t *set)
{
	struct bitmask *bm;
	int n;

	CPU_ZERO(set);
	if (node < 0 || numa_available() < 0)
		return -ENODEV;
	bm = numa_allocate_cpumask();
	if (!bm)
		return -ENOMEM;
	errno = 0;
	if (numa_node_to_cpus(node, bm) != 0) {
		n = errno ? -errno : -EINVAL;
		numa_free_cpumask(bm);
		return n;
	}
	for (unsigned c = 0; c < bm->size && c < CPU_SETSIZE; c++)
		if (numa_bitmask_isbitset(bm, c))
			CPU_SET(c, set);
	numa_free_cpumask(bm);
	return CPU_COUNT(set);
}

int sysnuma_housekeeping(const cpu_set_t *allowed, const cpu_set_t *node_cpus,
			 const cpu_set_t *data, cpu_set_t *hk)
{
	CPU_ZERO(hk);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, allowed) && (!node_cpus || CPU_ISSET(c, node_cpus)) &&
		    !CPU_ISSET(c, data))
			CPU_SET(c, hk);
	return CPU_COUNT(hk);
}

int sysnuma_lock_memory(struct sysnuma_applied *a, char *err, size_t errlen)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0) {
		int e = errno;

		snprintf(err, errlen, "mlockall: %s%s", strerror(e),
			 e == ENOMEM || e == EPERM ? " (raise LimitMEMLOCK / RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)" : "");
		a->memory_locked = 0;
		snprintf(a->memory_note, sizeof(a->memory_note), "%s", err);
		return -e;
	}
	a->memory_locked = 1;
	snprintf(a->memory_note, sizeof(a->memory_note), "mlockall(MCL_CURRENT|MCL_FUTURE)");
	return 0;
}

int sysnuma_apply_thread(const struct sysnuma_plan *plan, struct sysnuma_applied *a,
			 char *err, size_t errlen)
{
	cpu_set_t now;
	int ret = 0, rc;

	a->node = -1;
	if (plan->have_cpus) {
		rc = pthread_setaffinity_np(pthread_self(), sizeof(plan->cpus), &plan->cpus);
		if (rc)
			log_warn("numa: pthread_setaffinity_np: %s; data thread not pinned", strerror(rc));
	}
	if (plan->node >= 0) {
		/* Preferred, not strict: allocations never fail for lack of
		 * memory on one node; rings are bound explicitly (bind_memory). */
		numa_set_preferred(plan->node);
		a->node = plan->node;
	}
	CPU_ZERO(&now);
	rc = pthread_getaffinity_np(pthread_self(), sizeof(now), &now);
	if (rc == 0)
		sysnuma_format_cpus(&now, a->cpus, sizeof(a->cpus));
	else
		snprintf(a->cpus, sizeof(a->cpus), "?");

	a->realtime = 0;
	a->rt_priority = 0;
	a->realtime_note[0] = 0;
	if (plan->realtime) {
		struct sched_param sp = { .sched_priority = plan->rt_priority };

		rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
		if (rc) {
			snprintf(a->realtime_note, sizeof(a->realtime_note),
				 "pthread_setschedparam(SCHED_FIFO, %d): %s%s", plan->rt_priority,
				 strerror(rc), rc == EPERM ? " (needs CAP_SYS_NICE or LimitRTPRIO)" : "");
			if (plan->realtime >= 2) {
				snprintf(err, errlen, "realtime = required: %s", a->realtime_note);
				ret = -EPERM;
			} else {
				log_warn("realtime = preferred: %s; running without real-time priority",
					 a->realtime_note);
			}
		} else {
			a->realtime = 1;
			a->rt_priority = plan->rt_priority;
		}
	} else {
		snprintf(a->realtime_note, sizeof(a->realtime_note), "not requested");
	}
	return ret;
}

int sysnuma_bind_memory(void *base, size_t len, int node, char *err, size_t errlen)
{
	unsigned long mask[16] = { 0 };

	if (node < 0)
		return 0;
	if ((unsigned)node >= sizeof(mask) * 8) {
		snprintf(err, errlen, "node %d too large", node);
		return -EINVAL;
	}
	mask[node / (8 * sizeof(long))] |= 1ul << (node % (8 * sizeof(long)));
	if (mbind(base, len, MPOL_BIND, mask, sizeof(mask) * 8, MPOL_MF_MOVE) < 0) {
		int e = errno;

		snprintf(err, errlen, "mbind(node %d, %zu bytes): %s", node, len, strerror(e));
		return -e;
	}
	return 0;
}
