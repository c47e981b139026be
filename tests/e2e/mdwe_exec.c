/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mdwe_exec.c — run a program under MemoryDenyWriteExecute= as systemd
 * applies it, without systemd (tests/e2e/systemd_sandbox.sh builds it).
 *
 *   mdwe_exec seccomp|prctl|both PROG ARGS...
 *
 * seccomp: the rules systemd's MemoryDenyWriteExecute=yes installs
 * (src/shared/seccomp-util.c): mmap with PROT_WRITE|PROT_EXEC,
 * mprotect/pkey_mprotect adding PROT_EXEC and shmat with SHM_EXEC fail with
 * EPERM. prctl: PR_SET_MDWE(PR_MDWE_REFUSE_EXEC_GAIN), which newer systemd
 * uses where the kernel has it (>= 6.3). Both survive execve, so PROG and
 * every library it loads run under them. x86-64 only (other architectures
 * are let through unfiltered, and the test says so).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pkey_mprotect, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_shmat, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SHM_EXEC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog p = { .len = sizeof f / sizeof f[0], .filter = f };

	if (argc < 3) {
		fprintf(stderr, "usage: mdwe_exec seccomp|prctl|both PROG ARGS...\n"
				"       mdwe_exec seccomp|prctl|both --selftest\n");
		return 2;
	}
	int sc = !strcmp(argv[1], "seccomp") || !strcmp(argv[1], "both");
	int pr = !strcmp(argv[1], "prctl") || !strcmp(argv[1], "both");
	if (!sc && !pr) {
		fprintf(stderr, "mdwe_exec: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	if (pr && prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) < 0) {
		/* Kernels before 6.3 lack it; systemd then uses the filter alone. */
		if (!sc || errno != EINVAL) {
			perror("mdwe_exec: prctl(PR_SET_MDWE)");
			return 2;
		}
		fprintf(stderr, "mdwe_exec: kernel has no PR_SET_MDWE; seccomp rules only\n");
	}
	if (sc && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		   prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p) < 0)) {
		perror("mdwe_exec: seccomp");
		return 2;
	}
	if (!strcmp(argv[2], "--selftest")) {
		/* The restriction is in force iff a W+X mapping is refused. */
		void *wx = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (wx != MAP_FAILED) {
			fprintf(stderr, "mdwe_exec: a W+X mapping was allowed\n");
			return 1;
		}
		printf("mdwe_exec: W+X mapping refused (%s)\n", strerror(errno));
		return 0;
	}
	execv(argv[2], argv + 2);
	fprintf(stderr, "mdwe_exec: exec %s: %s\n", argv[2], strerror(errno));
	return 127;
}
