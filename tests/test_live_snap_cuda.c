/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_live_snap_cuda.c — map snapshots (chirp/pc.h, SNAPSHOTS) on the
 * CUDA backend against the CPU backend (itself held to maxhold.h's
 * reduction of its map output, bit for bit, by test_live_snap.c):
 *   - max-hold is a selection, so the GPU's cells equal the CPU's within
 *     the float error of the maps themselves: 1e-4 of the map's peak;
 *   - on the GPU itself the snapshot is exactly maxhold.h's reduction of
 *     the map_power output of the same CPI (the same device map);
 *   - per channel (output none and map_power, the CFAR on each channel or
 *     on their sum: the snapshot shows each channel's map), and per beam;
 *   - CPIs from registered memory, so those without a request run as
 *     graphs: their buffer is never touched (no kernel, no copy), and a
 *     CPI with a request between them, a graph launch too once the graph
 *     exists (its snapshot follows the graph), is right;
 *   - several CPIs in flight on two sets, some with a request into its own
 *     buffer, some without.
 *
 * Every test skips (cmocka skip(): reported skipped, never passed) when
 * pc_cuda_available() is 0: no GPU, no driver, or a build without CUDA.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "chirp/detect.h"
#include "chirp/pc.h"
#include "maxhold.h"
#include "live_snap_case.h"

#define SENTINEL 12345.0f
#define CAP 8192                     /* snapshot cells the pcs allow     */
#define TOL 1e-4                     /* of the map's peak                */

#define NEED_GPU()                                                           \
	do {                                                                 \
		if (!pc_cuda_available()) {                                  \
			print_message("no usable CUDA device: skipped\n");   \
			skip();                                              \
		}                                                            \
	} while (0)

/* Page-aligned, zeroed (registered with the GPU pc: graphs). */
static void *xalloc(size_t bytes)
{
	void *p = NULL;
	size_t len = (bytes + 4095) & ~(size_t)4095;

	assert_int_equal(posix_memalign(&p, 4096, len ? len : 4096), 0);
	memset(p, 0, len ? len : 4096);
	return p;
}

static void fill(float *a, size_t n, float v)
{
	for (size_t i = 0; i < n; i++)
		a[i] = v;
}

static void untouched(const float *a, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != SENTINEL)
			fail_msg("%s: cell %zu written (%g) without a request", what, i, (double)a[i]);
}

/* GPU cells against CPU cells: within TOL of the CPU's peak. */
static void near(const float *g, const float *c, size_t n, const char *what)
{
	float peak = -INFINITY;

	for (size_t i = 0; i < n; i++)
		if (c[i] > peak)
			peak = c[i];
	assert_true(peak > 0);
	for (size_t i = 0; i < n; i++)
		if (!(fabs((double)g[i] - c[i]) <= TOL * peak))
			fail_msg("%s: cell %zu: gpu %.9g, cpu %.9g (peak %g)", what, i, (double)g[i],
				 (double)c[i], (double)peak);
}

struct rig {
	struct snap_case k;
	float *ref, *in, *map;
	void *det;
	struct pc *cpu, *gpu;
	uint32_t maps, nd;
};

/* The case's pcs (CPU and GPU, output out) and one CPI of input; the
 * GPU's buffers registered (graphs for CPIs without a request). */
static void rig_open(struct rig *r, enum pc_output out)
{
	struct pc_info info;
	size_t in_bytes;

	r->ref = xalloc(2 * r->k.L * sizeof(float));
	snap_ref(r->ref, r->k.L);
	r->cpu = snap_pc(&r->k, r->ref, out, PC_BACKEND_CPU, CAP);
	r->gpu = snap_pc(&r->k, r->ref, out, PC_BACKEND_CUDA, CAP);
	in_bytes = pc_in_bytes(r->gpu);
	r->in = xalloc(in_bytes);
	r->det = xalloc(pc_det_bytes(r->gpu));
	r->map = pc_out_bytes(r->gpu) ? xalloc(pc_out_bytes(r->gpu)) : NULL;
	snap_cpi(&r->k, r->ref, 20.0, r->in);
	assert_int_equal(pc_register_host(r->gpu, r->in, in_bytes), 0);
	assert_int_equal(pc_register_host(r->gpu, r->det, pc_det_bytes(r->gpu)), 0);
	if (r->map)
		assert_int_equal(pc_register_host(r->gpu, r->map, pc_out_bytes(r->gpu)), 0);
	pc_get_info(r->gpu, &info);
	r->maps = info.map_count;
	r->nd = info.doppler_nfft;
	assert_int_equal(r->maps, r->k.B ? r->k.B : r->k.C);
	assert_int_equal(info.snapshot_cells, CAP);
}

static void rig_close(struct rig *r)
{
	pc_destroy(r->gpu);
	pc_destroy(r->cpu);
	free(r->ref);
	free(r->in);
	free(r->det);
	free(r->map);
}

static void run(struct pc *pc, struct rig *r, const struct pc_snap *sn)
{
	struct pc_job j = { .in = r->in, .out = r->map, .det = r->det, .snap = sn };

	assert_int_equal(pc_execute_job(pc, &j, NULL), 0);
}

/*
 * A CPI without a request (a graph: the buffer untouched), one with (GPU
 * against CPU; with a map output, against maxhold.h of the GPU's own
 * map exactly), then the same again after the graph exists (the one with
 * a request is then a graph launch, its snapshot behind it).
 */
static void check(struct rig *r, uint64_t mask, uint32_t dd, uint32_t dr, const char *name)
{
	uint32_t rows = maxhold_ceil_div(r->nd, dd), cols = maxhold_ceil_div(r->k.R, dr);
	size_t n = (size_t)maxhold_sel_count(mask, r->maps) * rows * cols;
	float *g = xalloc(CAP * sizeof(float)), *c = xalloc(CAP * sizeof(float));
	float *want = xalloc(CAP * sizeof(float));
	struct pc_snap sn = { .cells = g, .cells_len = CAP, .map_mask = mask, .dd = dd, .dr = dr };

	assert_true(n >= 1 && n < CAP);
	for (int round = 0; round < 2; round++) {
		struct pc_info i0, i1;

		fill(g, CAP, SENTINEL);
		run(r->gpu, r, NULL);
		untouched(g, CAP, name);
		pc_get_info(r->gpu, &i0);
		run(r->gpu, r, &sn);
		pc_get_info(r->gpu, &i1);
		if (round == 1)   /* the graph exists: the request rides behind it */
			assert_int_equal(i1.graph_cpis - i0.graph_cpis, 1);
		untouched(g + n, CAP - n, name);
		if (r->map) {   /* the snapshot is of the very map the output holds */
			maxhold_select(want, r->map, r->maps, mask, r->nd, r->k.R, dd, dr);
			assert_memory_equal(g, want, n * sizeof(float));
		}
		sn.cells = c;
		run(r->cpu, r, &sn);
		sn.cells = g;
		near(g, c, n, name);
	}
	free(g);
	free(c);
	free(want);
}

static void test_channels(void **state)
{
	struct rig r = { .k = { .C = 3, .P = 16, .R = 203, .L = 9, .streams = 2 } };

	(void)state;
	NEED_GPU();
	rig_open(&r, PC_OUT_NONE);
	check(&r, (1u << 0) | (1u << 2), 3, 7, "channels, output none");
	check(&r, 1u << 1, 1, 1, "channels, output none, full size");
	rig_close(&r);
	rig_open(&r, PC_OUT_MAP_POWER);
	check(&r, ~0ull, 2, 5, "channels, map_power");
	rig_close(&r);
}

static void test_integrated(void **state)
{
	struct rig r = { .k = { .C = 4, .P = 12, .R = 150, .L = 7, .integrate = 1 } };

	(void)state;
	NEED_GPU();
	rig_open(&r, PC_OUT_MAP_POWER);
	check(&r, (1u << 1) | (1u << 3), 4, 10, "integrated, map_power");
	rig_close(&r);
	rig_open(&r, PC_OUT_NONE);
	check(&r, ~0ull, 4, 10, "integrated, output none");
	rig_close(&r);
}

static void test_beams(void **state)
{
	struct rig r = { .k = { .C = 8, .P = 16, .R = 120, .L = 8, .B = 5, .streams = 2 } };

	(void)state;
	NEED_GPU();
	rig_open(&r, PC_OUT_NONE);
	check(&r, (1u << 1) | (1u << 2) | (1u << 4), 2, 5, "beams, output none");
	rig_close(&r);
	rig_open(&r, PC_OUT_MAP_POWER);
	check(&r, 1u << 2, 1, 3, "beams, map_power");
	rig_close(&r);
}

/* Six CPIs queued on two sets, every third (1, 4: one on each set) with a
 * request into its own buffer: each right, the others' buffers untouched. */
static void test_in_flight(void **state)
{
	struct rig r = { .k = { .C = 2, .P = 16, .R = 100, .L = 5, .streams = 2 } };
	enum { N = 6 };
	float *buf[N], *c;
	struct pc_snap sn[N];
	struct pc_done done[8];
	uint32_t rows, cols;
	size_t n;
	int got = 0, next = 0;

	(void)state;
	NEED_GPU();
	rig_open(&r, PC_OUT_NONE);
	rows = maxhold_ceil_div(r.nd, 2);
	cols = maxhold_ceil_div(r.k.R, 3);
	n = (size_t)2 * rows * cols;
	c = xalloc(CAP * sizeof(float));
	sn[0] = (struct pc_snap){ .cells = c, .cells_len = CAP, .map_mask = 3, .dd = 2, .dr = 3 };
	run(r.cpu, &r, &sn[0]);
	for (int i = 0; i < N; i++) {
		buf[i] = xalloc(CAP * sizeof(float));
		fill(buf[i], CAP, SENTINEL);
		sn[i] = (struct pc_snap){ .cells = buf[i], .cells_len = CAP, .map_mask = 3, .dd = 2,
					  .dr = 3 };
	}
	/* one list per CPI in flight: the GPU writes them until done */
	while (got < N) {
		if (next < N && pc_in_flight(r.gpu) < 2) {
			struct pc_job j = { .in = r.in, .det = r.det, .tag = (uint64_t)next,
					    .snap = next % 3 == 1 ? &sn[next] : NULL };

			assert_int_equal(pc_submit_job(r.gpu, &j), 0);
			next++;
			continue;
		}
		{
			int k = pc_poll(r.gpu, done, 8, 1000);

			assert_true(k >= 0);
			for (int i = 0; i < k; i++)
				if (done[i].flags & PC_DONE_OUTPUT)
					got++;
		}
	}
	for (int i = 0; i < N; i++) {
		char what[32];

		snprintf(what, sizeof(what), "in flight, CPI %d", i);
		if (i % 3 == 1) {
			near(buf[i], c, n, what);
			untouched(buf[i] + n, CAP - n, what);
		} else {
			untouched(buf[i], CAP, what);
		}
		free(buf[i]);
	}
	free(c);
	rig_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_integrated),
		cmocka_unit_test(test_beams),
		cmocka_unit_test(test_in_flight),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
