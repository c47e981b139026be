/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cu_host.cu — host memory for the CUDA backend's DMA: registration of the
 * caller's regions (pc_register_host), the test whether a CPI's buffer can
 * be a DMA source or target as is, and the pinned staging buffers (with
 * their parallel copier, hcopy.h) for the buffers that cannot.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cu_private.h"
extern "C" {
#include "hcopy.h"
#include "log.h"
}

/*
 * Host registrations are per process (per CUDA context), not per pc: during
 * a reload the new generation's pc registers the very ring mapping the old
 * one still holds, and the old one is destroyed while the new one already
 * copies from it. So registrations made here are counted process-wide and
 * the last holder unregisters; a pc never pulls the pinning from under
 * another's DMA. Memory registered outside chirp (cudaHostRegister by the
 * application) is used but never unregistered by us (owned = 0).
 */
#define CU_MAX_REGS     64       /* process-wide registrations we made     */

struct cu_reg {
	char *base;
	size_t len;
	unsigned refs;
};

static pthread_mutex_t cu_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cu_reg cu_regs[CU_MAX_REGS];
static unsigned cu_nregs;

/*
 * Get a hold on [base, base+len) for DMA, under cu_reg_lock so that two pcs
 * never both find it unregistered: a reference on our registration if one
 * covers it, else a new registration (read-only mappings need the ReadOnly
 * flag). Returns 2 (registered now), 1 (shared: a reference on ours), 0
 * (registered by the application: used, never unregistered by us),
 * -ENOSPC (our table is full) or -EIO with *e the CUDA error.
 */
static int cu_reg_acquire(char *base, size_t len, cudaError_t *e)
{
	int rc = 2;

	*e = cudaSuccess;
	pthread_mutex_lock(&cu_reg_lock);
	for (unsigned i = 0; i < cu_nregs; i++)
		if (cu_regs[i].base == base && cu_regs[i].len >= len) {
			cu_regs[i].refs++;
			rc = 1;
			goto out;
		}
	if (cu_nregs == CU_MAX_REGS) {
		rc = -ENOSPC;
		goto out;
	}
	*e = cudaHostRegister(base, len, cudaHostRegisterPortable);
	if (*e == cudaErrorHostMemoryAlreadyRegistered) {
		(void)cudaGetLastError();
		*e = cudaSuccess;
		rc = 0;
		goto out;
	}
	if (*e != cudaSuccess) {
		(void)cudaGetLastError();
		*e = cudaHostRegister(base, len, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
	}
	if (*e != cudaSuccess) {
		(void)cudaGetLastError();
		rc = -EIO;
		goto out;
	}
	cu_regs[cu_nregs].base = base;
	cu_regs[cu_nregs].len = len;
	cu_regs[cu_nregs].refs = 1;
	cu_nregs++;
out:
	pthread_mutex_unlock(&cu_reg_lock);
	return rc;
}

/*
 * Drop a reference; the last one unregisters. The caller has synchronised
 * its own streams; other holders still use the memory, which stays pinned.
 * Returns 0, or -1 if cudaHostUnregister failed.
 */
static int cu_reg_put(char *base)
{
	int rc = 0;

	pthread_mutex_lock(&cu_reg_lock);
	for (unsigned i = 0; i < cu_nregs; i++) {
		if (cu_regs[i].base != base)
			continue;
		if (--cu_regs[i].refs == 0) {
			cu_regs[i] = cu_regs[--cu_nregs];
			if (cudaHostUnregister(base) != cudaSuccess) {
				(void)cudaGetLastError();
				rc = -1;
			}
		}
		break;
	}
	pthread_mutex_unlock(&cu_reg_lock);
	return rc;
}

/*
 * The parallel copier for the staging buffers. A copier that cannot start
 * its threads is not fatal: one with the caller alone copies, slower, and
 * says so. Returns 0 or -EIO.
 */
static int cu_make_copier(struct cu_be *be)
{
	char why[160];

	be->hc = hcopy_create(be->staging_threads, why, sizeof(why));
	if (!be->hc && be->staging_threads > 1) {
		log_warn("cuda: %s; staging copies on the data thread alone", why);
		be->hc = hcopy_create(1, why, sizeof(why));
	}
	if (!be->hc) {
		cu_fail(be, "hcopy_create", strncmp(why, "hcopy: ", 7) == 0 ? why + 7 : why);
		return -EIO;
	}
	/* Streaming stores: the staged bytes are read next by a DMA engine or
	 * by a consumer process, never by this core, and skip the
	 * read-for-ownership of every destination line (a third less memory
	 * traffic; doc/cuda.md, *Copy staging*). */
	hcopy_set_nt(be->hc, be->staging_nt);
	if (be->have_bind) {
		int n = hcopy_bind(be->hc, &be->bind_cpus);

		if (n < 0)   /* not fatal: they copy, only not where asked */
			log_warn("cuda: staging copy threads not pinned: %s", strerror(-n));
	}
	return 0;
}

/*
 * Pinned staging for every set and the parallel copier that fills and
 * drains it (once: at create for staging = copy, else the first time an
 * unregistered buffer is seen). Returns 0 or -EIO.
 */
int cu_alloc_staging(struct cu_be *be)
{
	int rc = 0;

	if (be->have_staging)
		return 0;
	for (unsigned i = 0; i < be->nsets; i++) {
		struct cu_set *s = &be->sets[i];

		if (!s->h_in)
			CK(cudaHostAlloc(&s->h_in, be->bm ? be->bm->in_bytes : be->in_bytes,
					 cudaHostAllocPortable));
		if (!s->h_out && be->out_bytes > 0)
			CK(cudaHostAlloc(&s->h_out, be->out_bytes, cudaHostAllocPortable));
		if (!s->r.h_det && be->det_bytes > 0)
			CK(cudaHostAlloc(&s->r.h_det, be->det_bytes, cudaHostAllocPortable));
	}
	if (!be->hc) {
		rc = cu_make_copier(be);
		if (rc < 0)
			goto out;
	}
	be->have_staging = 1;
out:
	return rc;
}

/*
 * Copy staging of input: the caller's bytes in[off, off + len) into set
 * s's pinned h_in at the same offset, by the parallel copier, before the
 * H2D that reads them is queued. 0, or -EIO with *ce naming the copier's
 * failure.
 */
int cu_stage_in(struct cu_be *be, struct cu_set *s, const void *in, size_t off, size_t len,
		struct cu_err *ce)
{
	int hr = hcopy_run(be->hc, (char *)s->h_in + off, (const char *)in + off, len);

	if (hr < 0) {
		ce->call = "hcopy_run(input)";
		ce->len = (int)strlen(ce->call);
		ce->what = strerror(-hr);
		return -EIO;
	}
	return 0;
}

static void cu_add_region(struct cu_be *be, void *base, size_t len, int owned)
{
	struct cu_region *r = &be->regions[be->nregions++];

	r->base = (char *)base;
	r->len = len;
	r->owned = owned;
}

int cu_register_host(void *p, void *base, size_t len)
{
	struct cu_be *be = (struct cu_be *)p;
	cudaError_t e;
	int rc = 0;

	if (be->failed)
		return -EIO;
	if (!base || len == 0)
		return -EINVAL;
	CK(cudaSetDevice(be->dev));
	if (be->staging == PC_STAGING_COPY)
		return 0;        /* configured: every CPI goes through staging */
	if (be->nregions == CU_MAX_REGIONS) {
		log_warn("cuda: more than %d host regions registered; staging the rest through copies",
			 CU_MAX_REGIONS);
		be->reg_failed = 1;
		return cu_alloc_staging(be);
	}
	rc = cu_reg_acquire((char *)base, len, &e);
	if (rc < 0) {
		if (rc == -ENOSPC)
			log_warn("cuda: more than %d registrations in this process; staging %p "
				 "through pinned copies", CU_MAX_REGS, base);
		else
			log_warn("cuda: cudaHostRegister(%p, %zu bytes): %s; staging through pinned "
				 "copies instead (slower: one host copy per CPI and direction)", base, len,
				 cudaGetErrorString(e));
		be->reg_failed = 1;
		return cu_alloc_staging(be);
	}
	cu_add_region(be, base, len, rc > 0);
	if (rc == 2)
		log_info("cuda: registered %zu bytes at %p for in-place DMA", len, base);
	else if (rc == 1)   /* another pc's: the other generation of a reload */
		log_debug("cuda: %p (%zu bytes) already registered by chirp; shared", base, len);
	rc = 0;
out:
	return rc;
}

void cu_unregister_host(void *p, void *base)
{
	struct cu_be *be = (struct cu_be *)p;

	(void)cudaSetDevice(be->dev);
	for (unsigned i = 0; i < be->nregions; i++) {
		if (be->regions[i].base != base)
			continue;
		/* Nothing may still be copying from or to it. */
		for (unsigned k = 0; k < be->nsets; k++) {
			(void)cudaStreamSynchronize(be->sets[k].stream);
			for (unsigned j = 0; j < be->ncs; j++)
				(void)cudaStreamSynchronize(be->sets[k].cs[j].stream);
		}
		if (be->regions[i].owned && cu_reg_put((char *)base) < 0)
			log_warn("cuda: cudaHostUnregister(%p) failed", base);
		be->regions[i] = be->regions[--be->nregions];
		return;
	}
}

void cu_release_regions(struct cu_be *be)
{
	for (unsigned i = 0; i < be->nregions; i++)
		if (be->regions[i].owned && cu_reg_put(be->regions[i].base) < 0)
			log_warn("cuda: cudaHostUnregister(%p) failed", (void *)be->regions[i].base);
}

/*
 * Whether [p, p+len) can be a DMA source/target as is: inside a registered
 * region, or memory CUDA already knows (device memory, cudaHostAlloc or
 * registered elsewhere). Plain pageable memory needs staging.
 */
int cu_dma_ok(struct cu_be *be, const void *p, size_t len, int *is_device)
{
	struct cudaPointerAttributes a;
	const char *c = (const char *)p;

	*is_device = 0;
	for (unsigned i = 0; i < be->nregions; i++) {
		const struct cu_region *r = &be->regions[i];

		if (c >= r->base && len <= r->len && (size_t)(c - r->base) <= r->len - len)
			return 1;
	}
	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) {
		*is_device = 1;
		return 1;
	}
	return a.type == cudaMemoryTypeHost;
}
