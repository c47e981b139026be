/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_live_snap.c — map snapshots on the CPU backend (chirp/pc.h,
 * SNAPSHOTS), the live view's frames without a map output:
 *   - for a CPI with a target, the snapshot equals maxhold.h's reduction
 *     of the map_power output of the same CPI, bit for bit, from a pc
 *     that writes that output and from one with output none; only the
 *     selected maps, back to back, and not a cell past them;
 *   - per channel with the CFAR on the channels' sum (the snapshot still
 *     shows each channel's map, as the map output does), and per beam;
 *   - the target is at its cell in the snapshot;
 *   - a CPI without a request leaves the buffer alone, a request that
 *     selects no map too, and bad requests are refused (-EINVAL, the pc
 *     still usable);
 *   - the mask's rule: bit 63 selects every map from 63 on.
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
#define CAP 4096                     /* snapshot cells the pcs allow     */

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	assert_non_null(p);
	return p;
}

static void fill(float *a, size_t n, float v)
{
	for (size_t i = 0; i < n; i++)
		a[i] = v;
}

/* One CPI through pc with a snapshot request sn (NULL: none). */
static void run_cpi(struct pc *pc, const float *in, float *out, const struct pc_snap *sn)
{
	void *det = xcalloc(1, pc_det_bytes(pc));
	struct pc_job j = { .in = in, .out = out, .det = det, .snap = sn };

	assert_int_equal(pc_execute_job(pc, &j, NULL), 0);
	free(det);
}

/*
 * The case's CPI through a map_power pc and a none pc, both asked for the
 * snapshot of mask with blocks dd x dr; each snapshot must be maxhold of
 * the map output, exactly, and the buffer untouched past it; the target
 * at its gate in the target-th selected map (-1: not checked).
 */
static void check_case(struct snap_case *k, uint64_t mask, uint32_t dd, uint32_t dr, int target)
{
	float *ref = xcalloc(2 * k->L, sizeof(float));
	float *in = xcalloc(2 * (size_t)k->C * k->P * k->R, sizeof(float));
	struct pc *pm, *pn;
	struct pc_info info;
	float *map, *want, *snap_m, *snap_n;
	uint32_t maps, nd, rows, cols, nsel;
	size_t cells;
	struct pc_snap sn;

	snap_ref(ref, k->L);
	snap_cpi(k, ref, 20.0, in);
	pm = snap_pc(k, ref, PC_OUT_MAP_POWER, PC_BACKEND_CPU, CAP);
	pn = snap_pc(k, ref, PC_OUT_NONE, PC_BACKEND_CPU, CAP);
	pc_get_info(pn, &info);
	maps = info.map_count;
	nd = info.doppler_nfft;
	assert_int_equal(maps, k->B ? k->B : k->C);
	assert_int_equal(info.snapshot_cells, CAP);
	rows = maxhold_ceil_div(nd, dd);
	cols = maxhold_ceil_div(k->R, dr);
	nsel = maxhold_sel_count(mask, maps);
	cells = (size_t)nsel * rows * cols;
	assert_true(nsel >= 1 && cells + 16 <= CAP);

	map = xcalloc(pc_out_bytes(pm) / sizeof(float), sizeof(float));
	want = xcalloc(CAP, sizeof(float));
	snap_m = xcalloc(CAP, sizeof(float));
	snap_n = xcalloc(CAP, sizeof(float));
	fill(snap_m, CAP, SENTINEL);
	fill(snap_n, CAP, SENTINEL);
	sn = (struct pc_snap){ .cells = snap_m, .cells_len = CAP, .map_mask = mask, .dd = dd,
			       .dr = dr };
	run_cpi(pm, in, map, &sn);
	sn.cells = snap_n;
	run_cpi(pn, in, NULL, &sn);

	maxhold_select(want, map, maps, mask, nd, k->R, dd, dr);
	assert_memory_equal(snap_m, want, cells * sizeof(float));
	assert_memory_equal(snap_n, want, cells * sizeof(float));
	for (size_t i = cells; i < CAP; i++) {
		assert_true(snap_m[i] == SENTINEL);
		assert_true(snap_n[i] == SENTINEL);
	}
	/* the target: the brightest cell of its map is its block */
	if (target >= 0) {
		const float *m = snap_n + (size_t)target * rows * cols;
		size_t best = 0;

		for (size_t i = 1; i < (size_t)rows * cols; i++)
			if (m[i] > m[best])
				best = i;
		assert_int_equal(best % cols, SNAP_GATE / dr);
	}
	free(map);
	free(want);
	free(snap_m);
	free(snap_n);
	free(in);
	free(ref);
	pc_destroy(pm);
	pc_destroy(pn);
}

static void test_channels(void **state)
{
	struct snap_case k = { .C = 3, .P = 16, .R = 203, .L = 9 };

	(void)state;
	check_case(&k, (1u << 0) | (1u << 2), 3, 7, 1);   /* blocks that do not divide */
	check_case(&k, 1u << 1, 1, 1, 0);                 /* the map itself            */
}

static void test_integrated(void **state)
{
	struct snap_case k = { .C = 4, .P = 12, .R = 150, .L = 7, .integrate = 1 };

	(void)state;
	check_case(&k, ~0ull, 4, 10, 3);   /* every channel's map, not the sum */
}

static void test_beams(void **state)
{
	struct snap_case k = { .C = 8, .P = 16, .R = 120, .L = 8, .B = 5 };

	(void)state;
	check_case(&k, (1u << 1) | (1u << 2) | (1u << 4), 2, 5, 1);   /* beam 2: boresight */
}

/* No request: the buffer untouched; requests the pc refuses. */
static void test_requests(void **state)
{
	struct snap_case k = { .C = 2, .P = 8, .R = 64, .L = 5 };
	float *ref = xcalloc(2 * k.L, sizeof(float));
	float *in = xcalloc(2 * (size_t)k.C * k.P * k.R, sizeof(float));
	float *buf = xcalloc(CAP, sizeof(float));
	void *det;
	struct pc *pn, *p0, *ps;
	struct pc_snap sn = { .cells = buf, .cells_len = CAP, .map_mask = 1, .dd = 1, .dr = 1 };
	struct pc_job j = { .in = in };
	struct pc_info info;

	(void)state;
	snap_ref(ref, k.L);
	snap_cpi(&k, ref, 5.0, in);
	pn = snap_pc(&k, ref, PC_OUT_NONE, PC_BACKEND_CPU, CAP);
	p0 = snap_pc(&k, ref, PC_OUT_NONE, PC_BACKEND_CPU, 0);
	ps = snap_pc(&k, ref, PC_OUT_NONE, PC_BACKEND_CPU, 100);
	det = xcalloc(1, pc_det_bytes(pn));
	j.det = det;
	fill(buf, CAP, SENTINEL);
	assert_int_equal(pc_execute_job(pn, &j, NULL), 0);       /* no request */
	sn.map_mask = 1ull << 5;                                  /* no such map */
	j.snap = &sn;
	assert_int_equal(pc_execute_job(pn, &j, NULL), 0);
	for (size_t i = 0; i < CAP; i++)
		assert_true(buf[i] == SENTINEL);

	pc_get_info(pn, &info);
	sn.map_mask = 3;
	sn.dd = 0;
	assert_int_equal(pc_submit_job(pn, &j), -EINVAL);
	sn.dd = 1;
	sn.dr = 0;
	assert_int_equal(pc_submit_job(pn, &j), -EINVAL);
	sn.dr = 8;                      /* 2 maps of Nd x 8 cells: too many */
	assert_true((size_t)2 * info.doppler_nfft * 8 > 100);
	assert_int_equal(pc_submit_job(ps, &j), -EINVAL);
	sn.cells_len = 4;               /* more than the caller's buffer */
	assert_int_equal(pc_submit_job(pn, &j), -EINVAL);
	sn.cells_len = CAP;
	sn.cells = NULL;
	assert_int_equal(pc_submit_job(pn, &j), -EINVAL);
	sn.cells = buf;
	assert_int_equal(pc_submit_job(p0, &j), -EINVAL);        /* snapshot_cells 0 */
	/* the pc is not failed: the same request, right, runs */
	assert_int_equal(pc_execute_job(pn, &j, NULL), 0);
	assert_true(buf[0] != SENTINEL);
	free(det);
	free(buf);
	free(in);
	free(ref);
	pc_destroy(pn);
	pc_destroy(p0);
	pc_destroy(ps);
}

/* A pc without the radar chain refuses snapshots and makes none. */
static void test_no_radar(void **state)
{
	struct pc_params p;
	float ref[2 * 4] = { 1, 0, 1, 0, 1, 0, 1, 0 };
	float in[2 * 2 * 32] = { 0 }, out[2 * 2 * 32], buf[64];
	struct pc_snap sn = { .cells = buf, .cells_len = 64, .map_mask = 1, .dd = 1, .dr = 1 };
	struct pc_job j = { .in = in, .out = out, .snap = &sn };
	struct pc_info info;
	struct pc *pc;
	char err[256];

	(void)state;
	pc_params_init(&p);
	p.pulses = 2;
	p.samples = 32;
	p.ref = ref;
	p.ref_len = 4;
	p.backend = PC_BACKEND_CPU;
	p.snapshot_cells = 64;
	pc = pc_create(&p, err, sizeof(err));
	assert_non_null(pc);
	pc_get_info(pc, &info);
	assert_int_equal(info.map_count, 0);
	assert_int_equal(info.snapshot_cells, 0);
	assert_int_equal(pc_submit_job(pc, &j), -EINVAL);
	pc_destroy(pc);
	p.snapshot_cells = PC_MAX_SNAPSHOT_CELLS + 1ull;
	assert_int_equal(pc_params_check(&p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "snapshot_cells"));
}

static void test_mask(void **state)
{
	(void)state;
	assert_int_equal(maxhold_sel_count(0x5, 3), 2);
	assert_int_equal(maxhold_sel_count(0x5, 2), 1);
	assert_int_equal(maxhold_sel_count(~0ull, 4), 4);
	assert_int_equal(maxhold_sel_count(1ull << 63, 63), 0);
	assert_int_equal(maxhold_sel_count(1ull << 63, 100), 37);
	assert_int_equal(maxhold_sel_count((1ull << 63) | 2, 100), 38);
	assert_int_equal(maxhold_sel_map(0x16, 0), 1);
	assert_int_equal(maxhold_sel_map(0x16, 1), 2);
	assert_int_equal(maxhold_sel_map(0x16, 2), 4);
	assert_int_equal(maxhold_sel_map((1ull << 63) | 2, 0), 1);
	assert_int_equal(maxhold_sel_map((1ull << 63) | 2, 1), 63);
	assert_int_equal(maxhold_sel_map((1ull << 63) | 2, 37), 99);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_integrated),
		cmocka_unit_test(test_beams),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_no_radar),
		cmocka_unit_test(test_mask),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
