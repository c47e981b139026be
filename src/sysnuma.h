/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysnuma.h — where chirpd's data path runs and how: NUMA node of the GPU
 * (from sysfs), CPU affinity, memory binding (libnuma), mlockall and
 * SCHED_FIFO — and a record of what was actually applied, for `status`.
 *
 * Nothing here is fatal by itself: each function says what it could not do
 * and the caller decides (realtime = required refuses to start, preferred
 * warns and goes on).
 */
#ifndef CHIRP_SYSNUMA_H
#define CHIRP_SYSNUMA_H

#include <sched.h>
#include <stddef.h>

/* What the configuration asks for ([numa] section). */
struct sysnuma_req {
	int node;               /* -2 = auto (GPU's node), -1 = none, >= 0 node */
	const char *gpu_bus_id; /* PCI bus id for auto ("" / NULL: none)        */
	const char *cpus;       /* cpu list "2-5,8"; "" = the node's cpus        */
	int realtime;           /* 0 off, 1 preferred, 2 required                */
	int rt_priority;        /* SCHED_FIFO priority 1..99                     */
	int lock_memory;        /* mlockall(MCL_CURRENT|MCL_FUTURE)              */
};

/* A resolved plan (main thread) and what was applied (data thread). */
struct sysnuma_plan {
	int node;               /* -1 = no binding                               */
	char node_source[96];   /* "auto: /sys/bus/pci/devices/X/numa_node", ... */
	int have_cpus;
	cpu_set_t cpus;         /* affinity for data threads (if have_cpus)      */
	int realtime;
	int rt_priority;
};

struct sysnuma_applied {
	int node;               /* node memory/threads are bound to, -1 none     */
	char cpus[256];         /* the data thread's affinity as a cpu list      */
	int realtime;           /* 1 if SCHED_FIFO is in effect                  */
	int rt_priority;
	char realtime_note[160];/* why not, when asked and not applied           */
	int memory_locked;
	char memory_note[160];
};

/*
 * NUMA node of a PCI device: reads SYSFS/bus/pci/devices/BUSID/numa_node
 * (sysfs_root NULL = "/sys"). Returns the node (>= 0), -1 when the kernel
 * says -1 (no affinity), or -errno with a reason.
 */
int sysnuma_pci_node(const char *sysfs_root, const char *bus_id, char *err, size_t errlen);

/* Parse a cpu list "0-3,8,10-11" into set. 0 or -EINVAL with a reason. */
int sysnuma_parse_cpus(const char *list, cpu_set_t *set, char *err, size_t errlen);

/* Format a cpu set as a list "0-3,8". */
void sysnuma_format_cpus(const cpu_set_t *set, char *buf, size_t len);

/*
 * Resolve a request into a plan (reads sysfs, libnuma node cpus). Returns 0
 * or -EINVAL with a reason (bad cpu list, node out of range, auto without a
 * GPU bus id is not an error: it means no binding).
 */
int sysnuma_resolve(const struct sysnuma_req *req, const char *sysfs_root,
		    struct sysnuma_plan *plan, char *err, size_t errlen);

/*
 * Lock the process's memory (mlockall). Returns 0 or -errno with a reason;
 * records the outcome in applied.
 */
int sysnuma_lock_memory(struct sysnuma_applied *applied, char *err, size_t errlen);

/*
 * Apply the plan to the calling thread: CPU affinity, NUMA memory policy
 * (preferred node for its allocations) and SCHED_FIFO. Records what took
 * effect in applied. Returns 0, or -EPERM when plan->realtime is required
 * and SCHED_FIFO could not be set (reason in err); other failures only
 * warn (logged) and are recorded.
 */
int sysnuma_apply_thread(const struct sysnuma_plan *plan, struct sysnuma_applied *applied,
			 char *err, size_t errlen);

/*
 * The CPUs of a NUMA node (libnuma). Returns how many (> 0), or -errno
 * (no NUMA support, no such node).
 */
int sysnuma_node_cpus(int node, cpu_set_t *set);

/*
 * Where everything but the data path runs (the main loop, the control
 * socket, the metrics server, the FFT planning of a reload) when [numa]
 * cpus names the data path's CPUs: the CPUs the process may use (allowed),
 * within the node's (node_cpus; NULL = any node), less the data path's
 * (data). Returns how many; 0 when none is left, and then nothing should
 * move (the data path's CPUs are all there is).
 */
int sysnuma_housekeeping(const cpu_set_t *allowed, const cpu_set_t *node_cpus,
			 const cpu_set_t *data, cpu_set_t *hk);

/*
 * Bind [base, base+len) (page aligned, e.g. a ring's data region) to node,
 * moving pages already faulted. Returns 0, or -errno (caller warns).
 */
int sysnuma_bind_memory(void *base, size_t len, int node, char *err, size_t errlen);

#endif /* CHIRP_SYSNUMA_H */
