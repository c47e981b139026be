/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_error.cu — how the CUDA backend records a failure (cu_private.h,
 * FAILURE): the first failed call's name and error string, logged once.
 */
#include <stdio.h>

#include "cu_private.h"
extern "C" {
#include "log.h"
}

const char *cu_cufft_str(cufftResult r)
{
	switch (r) {
	case CUFFT_SUCCESS:                   return "CUFFT_SUCCESS";
	case CUFFT_INVALID_PLAN:              return "CUFFT_INVALID_PLAN";
	case CUFFT_ALLOC_FAILED:              return "CUFFT_ALLOC_FAILED";
	case CUFFT_INVALID_TYPE:              return "CUFFT_INVALID_TYPE";
	case CUFFT_INVALID_VALUE:             return "CUFFT_INVALID_VALUE";
	case CUFFT_INTERNAL_ERROR:            return "CUFFT_INTERNAL_ERROR";
	case CUFFT_EXEC_FAILED:               return "CUFFT_EXEC_FAILED";
	case CUFFT_SETUP_FAILED:              return "CUFFT_SETUP_FAILED";
	case CUFFT_INVALID_SIZE:              return "CUFFT_INVALID_SIZE";
	case CUFFT_UNALIGNED_DATA:            return "CUFFT_UNALIGNED_DATA";
	case CUFFT_INVALID_DEVICE:            return "CUFFT_INVALID_DEVICE";
	case CUFFT_NO_WORKSPACE:              return "CUFFT_NO_WORKSPACE";
	case CUFFT_NOT_IMPLEMENTED:           return "CUFFT_NOT_IMPLEMENTED";
	case CUFFT_NOT_SUPPORTED:             return "CUFFT_NOT_SUPPORTED";
	default:                              return "cuFFT error";
	}
}

void cu_fail_n(struct cu_be *be, const char *call, size_t n, const char *what)
{
	if (be->failed)
		return;
	be->failed = 1;
	snprintf(be->last_error, sizeof(be->last_error), "%.*s: %s", (int)n, call, what);
	log_err("cuda: %s", be->last_error);
}

void cu_fail(struct cu_be *be, const char *call, const char *what)
{
	cu_fail_n(be, call, strcspn(call, "(<"), what);
}

int cu_query(struct cu_be *be, cudaEvent_t ev, const char *what)
{
	cudaError_t e = cudaEventQuery(ev);

	if (e == cudaSuccess)
		return 1;
	if (e == cudaErrorNotReady)
		return 0;
	cu_fail(be, what, cudaGetErrorString(e));
	return -EIO;
}
