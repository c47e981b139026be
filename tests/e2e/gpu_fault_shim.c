/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu_fault_shim.c — LD_PRELOAD library for tests/e2e/gpu_fault.sh: a GPU
 * failure injected into a running chirpd from outside.
 *
 * Interposes cufftExecC2C (chirpd links libcufft dynamically). While the
 * file named by $CHIRP_GPU_FAULT_FILE does not exist, every call goes to the
 * real cuFFT; once it exists, calls return CUFFT_EXEC_FAILED, as a device
 * fault would. The CUDA backend must then report the error, fail the data
 * path, stop the watchdog pings and deliver nothing it did not compute.
 *
 * Only the C ABI of the call is needed (cufftHandle is an int, the data
 * pointers are opaque here), so this builds without the CUDA headers:
 *     cc -shared -fPIC -o shim.so gpu_fault_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define SHIM_CUFFT_INTERNAL_ERROR 5
#define SHIM_CUFFT_EXEC_FAILED    6

typedef int (*exec_fn)(int plan, void *idata, void *odata, int direction);

int cufftExecC2C(int plan, void *idata, void *odata, int direction)
{
	static exec_fn real;
	const char *f = getenv("CHIRP_GPU_FAULT_FILE");

	if (f && access(f, F_OK) == 0)
		return SHIM_CUFFT_EXEC_FAILED;
	if (!real)
		real = (exec_fn)dlsym(RTLD_NEXT, "cufftExecC2C");
	return real ? real(plan, idata, odata, direction) : SHIM_CUFFT_INTERNAL_ERROR;
}
