/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tri_modes.h — the three radar modes test_pc and test_pc_cuda run CPIs of
 * (included by both after cmocka.h and waveform.h; each test is its own
 * program, so the fixture is static).
 */
#ifndef CHIRP_TEST_TRI_MODES_H
#define CHIRP_TEST_TRI_MODES_H

/*
 * Three modes of different L and windows, as a multi-function radar
 * interleaves them: LFM 64 samples Hamming (id 7), LFM 300 samples Taylor
 * (id 0), Barker 13 with 3 samples a chip, rect (id 63). The ids are not
 * the table's order, so a mix-up of id and index shows.
 */
#define NTRI 3
struct tri_modes {
	float *h[NTRI];
	size_t L[NTRI];
	struct pc_mode m[NTRI];
};

static void tri_modes_make(struct tri_modes *t, unsigned R)
{
	static const unsigned ids[NTRI] = { 7, 0, 63 };
	struct wf_params wp[NTRI];
	char err[256];

	for (int i = 0; i < NTRI; i++)
		wf_params_init(&wp[i]);
	wp[0].type = WF_LFM;
	wp[0].sample_rate_hz = 10e6;
	wp[0].bandwidth_hz = 4e6;
	wp[0].pulse_width_s = 6.4e-6;        /* L = 64 */
	wp[0].window = WIN_HAMMING;
	wp[1].type = WF_LFM;
	wp[1].sample_rate_hz = 10e6;
	wp[1].bandwidth_hz = 5e6;
	wp[1].pulse_width_s = 30e-6;         /* L = 300 */
	wp[1].window = WIN_TAYLOR;
	wp[1].taylor_nbar = 4;
	wp[1].taylor_sll_db = 35.0;
	wp[2].type = WF_BARKER13;
	wp[2].sample_rate_hz = 10e6;
	wp[2].chip_samples = 3;              /* L = 39 */
	wp[2].window = WIN_RECT;
	for (int i = 0; i < NTRI; i++) {
		if (wf_build(&wp[i], R, &t->h[i], &t->L[i], err, sizeof(err)) != 0)
			fail_msg("wf_build mode %d: %s", i, err);
		t->m[i].id = ids[i];
		t->m[i].ref = t->h[i];
		t->m[i].ref_len = t->L[i];
	}
	assert_int_equal(t->L[0], 64);
	assert_int_equal(t->L[1], 300);
	assert_int_equal(t->L[2], 39);
}

static void tri_modes_free(struct tri_modes *t)
{
	for (int i = 0; i < NTRI; i++)
		free(t->h[i]);
}

#endif /* CHIRP_TEST_TRI_MODES_H */
