/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_vrt.c — the VITA 49.2 / DIFI and plain-UDP codec (src/vrt.c):
 * hand-built packets with known big-endian bytes, every refusal, and
 * pack/parse round trips.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vrt.h"

/* A DIFI signal data packet: type 1 (stream ID), class ID, no trailer,
 * TSI UTC, TSF picoseconds, count 5, 9 words, two sc16 samples. */
static const uint8_t difi_data[] = {
	0x18, 0x65, 0x00, 0x09,             /* header                        */
	0x12, 0x34, 0x56, 0x78,             /* stream ID                     */
	0x00, 0x6a, 0x62, 0x1e,             /* pad 0, OUI 6A-62-1E           */
	0x00, 0x00, 0x00, 0x00,             /* ICC 0, PCC 0                  */
	0x65, 0x4f, 0x1a, 0x00,             /* integer seconds 1699682816    */
	0x00, 0x00, 0x00, 0x00, 0x3b, 0x9a, 0xca, 0x00,  /* 1e9 ps = 1 ms   */
	0x00, 0x01, 0xff, 0xff,             /* I = 1, Q = -1                 */
	0x7f, 0xff, 0x80, 0x00,             /* I = 32767, Q = -32768         */
};

/* An IF context packet: reference point, bandwidth 20 MHz, IF reference
 * 70 MHz, RF reference 1.5 GHz, sample rate 25 MHz (64-bit, radix 20). */
static const uint8_t context[] = {
	0x48, 0x63, 0x00, 0x11,             /* type 4, C, UTC, ps, count 3, 17 words */
	0x00, 0x00, 0x00, 0x07,             /* stream ID 7                   */
	0x00, 0x6a, 0x62, 0x1e, 0x00, 0x00, 0x00, 0x01,  /* DIFI, PCC 1     */
	0x65, 0x4f, 0x1a, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xf8, 0x20, 0x00, 0x00,             /* CIF0: 31 30 29 28 27 21       */
	0x00, 0x00, 0x00, 0x64,             /* reference point ID            */
	0x00, 0x00, 0x13, 0x12, 0xd0, 0x00, 0x00, 0x00,  /* bandwidth 20e6  */
	0x00, 0x00, 0x42, 0xc1, 0xd8, 0x00, 0x00, 0x00,  /* IF ref 70e6     */
	0x00, 0x05, 0x96, 0x82, 0xf0, 0x00, 0x00, 0x00,  /* RF ref 1.5e9    */
	0x00, 0x00, 0x17, 0xd7, 0x84, 0x00, 0x00, 0x00,  /* rate 25e6       */
};

static void test_difi_data(void **state)
{
	struct vrt_packet p;

	assert_int_equal(vrt_parse(difi_data, sizeof(difi_data), 0, &p), VRT_OK);
	assert_int_equal(p.kind, VRT_KIND_DATA);
	assert_int_equal(p.type, VRT_IF_DATA_SID);
	assert_true(p.has_sid && p.has_cid && !p.has_trailer);
	assert_int_equal(p.stream_id, 0x12345678u);
	assert_int_equal(p.oui, VRT_DIFI_OUI);
	assert_int_equal(p.icc, 0);
	assert_int_equal(p.pcc, 0);
	assert_int_equal(p.tsi, VRT_TSI_UTC);
	assert_int_equal(p.tsf, VRT_TSF_PICOSECONDS);
	assert_int_equal(p.count, 5);
	assert_int_equal(p.ts_int, 0x654f1a00u);
	assert_int_equal(p.ts_frac, 1000000000ull);
	assert_int_equal(p.payload_len, 8);
	assert_ptr_equal(p.payload, difi_data + 28);
}

static void test_context(void **state)
{
	struct vrt_packet p;
	uint8_t b[sizeof(context) + 8];

	assert_int_equal(vrt_parse(context, sizeof(context), 0, &p), VRT_OK);
	assert_int_equal(p.kind, VRT_KIND_CONTEXT);
	assert_int_equal(p.stream_id, 7);
	assert_int_equal(p.pcc, VRT_DIFI_PCC_CONTEXT);
	assert_int_equal(p.count, 3);
	assert_int_equal(p.cif0, 0xf8200000u);
	assert_true(p.bandwidth_hz == 20e6);
	assert_true(p.if_ref_hz == 70e6);
	assert_true(p.rf_ref_hz == 1.5e9);
	assert_true(p.sample_rate_hz == 25e6);
	/* every cut of the fields is refused, never read past */
	for (size_t n = 32; n < sizeof(context); n += 4) {
		memcpy(b, context, n);
		b[2] = (uint8_t)(n / 4 >> 8);
		b[3] = (uint8_t)(n / 4);
		assert_int_equal(vrt_parse(b, n, 0, &p), VRT_ECONTEXT);
	}
	/* a CIF1 word after CIF0 (enable bit 1) is skipped before the fields */
	memcpy(b, context, 32);
	b[31] = 0x02;                               /* CIF0 | CIF1 enable */
	memset(b + 32, 0xee, 4);                    /* CIF1               */
	memcpy(b + 36, context + 32, sizeof(context) - 32);
	b[3] = (uint8_t)((sizeof(context) + 4) / 4);
	assert_int_equal(vrt_parse(b, sizeof(context) + 4, 0, &p), VRT_OK);
	assert_true(p.sample_rate_hz == 25e6 && p.bandwidth_hz == 20e6);
}

static void test_fixed_point(void **state)
{
	assert_int_equal(vrt_hz_to_fixed(1.0), 1 << 20);
	assert_int_equal(vrt_hz_to_fixed(-0.5), -(1 << 19));
	assert_int_equal(vrt_hz_to_fixed(25e6), 0x17d784000000ll);
	assert_true(vrt_fixed_to_hz(0x59682f0000000ll) == 1.5e9);
	assert_true(vrt_fixed_to_hz(1) == 1.0 / 1048576.0);
	assert_true(vrt_hz_to_fixed(1e30) == INT64_MAX);   /* saturates, no UB */
	assert_true(vrt_hz_to_fixed(-1e30) == INT64_MIN);
	assert_int_equal(vrt_hz_to_fixed(0.0 / 0.0), 0);
	/* the largest field survives a round trip through double */
	assert_true(vrt_hz_to_fixed(vrt_fixed_to_hz(INT64_MAX)) == INT64_MAX);
}

static void test_refusals(void **state)
{
	struct vrt_packet p;
	uint8_t b[64];

	assert_int_equal(vrt_parse(NULL, 0, 0, &p), VRT_ESHORT);
	assert_int_equal(vrt_parse(difi_data, 3, 0, &p), VRT_ESHORT);
	/* the size field claims more than the datagram holds */
	assert_int_equal(vrt_parse(difi_data, 32, 0, &p), VRT_ESHORT);
	/* or less */
	memcpy(b, difi_data, sizeof(difi_data));
	memset(b + sizeof(difi_data), 0, 4);
	assert_int_equal(vrt_parse(b, sizeof(difi_data) + 4, 0, &p), VRT_ESIZE);
	/* not whole words */
	assert_int_equal(vrt_parse(b, sizeof(difi_data) + 2, 0, &p), VRT_ESIZE);
	/* size 0 */
	b[2] = b[3] = 0;
	assert_int_equal(vrt_parse(b, 8, 0, &p), VRT_ESIZE);
	/* command packets (type 6) and reserved types */
	memcpy(b, difi_data, sizeof(difi_data));
	b[0] = 0x68;
	assert_int_equal(vrt_parse(b, sizeof(difi_data), 0, &p), VRT_ETYPE);
	b[0] = 0xf8;
	assert_int_equal(vrt_parse(b, sizeof(difi_data), 0, &p), VRT_ETYPE);
	/* picoseconds >= 1e12 */
	memcpy(b, difi_data, sizeof(difi_data));
	memcpy(b + 20, (const uint8_t[]){ 0, 0, 0, 0xe8, 0xd4, 0xa5, 0x10, 0x00 }, 8);
	assert_int_equal(vrt_parse(b, sizeof(difi_data), 0, &p), VRT_EFIELD);
	/* class ID reserved bits */
	memcpy(b, difi_data, sizeof(difi_data));
	b[8] = 0x01;
	assert_int_equal(vrt_parse(b, sizeof(difi_data), 0, &p), VRT_EFIELD);
	/* a header that claims more optional words than the size holds */
	memcpy(b, difi_data, 8);
	b[2] = 0;
	b[3] = 2;                                   /* 2 words, needs 7      */
	assert_int_equal(vrt_parse(b, 8, 0, &p), VRT_ESHORT);
	/* the trailer counts: 9 words with T set hold 1 payload word */
	memcpy(b, difi_data, sizeof(difi_data));
	b[0] = 0x1c;
	assert_int_equal(vrt_parse(b, sizeof(difi_data), 0, &p), VRT_OK);
	assert_int_equal(p.payload_len, 4);
	assert_int_equal(p.trailer, 0x7fff8000u);
	for (int e = 0; e <= VRT_NERRORS; e++)
		assert_non_null(vrt_strerror(e));
}

/* The plain framing: magic, version 1, format, flags 0, header 24,
 * channel, reserved, sequence, sample index; then samples. */
static void test_plain(void **state)
{
	uint8_t b[40] = {
		0x43, 0x48, 0x52, 0x50, 0x01, 0x01, 0x00, 0x18,
		0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05,
		0x00, 0x01, 0xff, 0xff, 0x7f, 0xff, 0x80, 0x00,
		0x00, 0x02, 0x00, 0x03, 0x00, 0x04, 0x00, 0x05,
	};
	struct vrt_packet p;

	assert_int_equal(vrt_parse(b, sizeof(b), 1, &p), VRT_OK);
	assert_int_equal(p.kind, VRT_KIND_PLAIN);
	assert_int_equal(p.format, VRT_PLAIN_SC16_BE);
	assert_int_equal(p.channel, 3);
	assert_int_equal(p.seq, 0x102);
	assert_int_equal(p.sample, 0x100000005ull);
	assert_int_equal(p.payload_len, 16);
	assert_ptr_equal(p.payload, b + 24);
	/* cf32: 16 bytes are two samples; 12 are not whole */
	b[5] = VRT_PLAIN_CF32_BE;
	assert_int_equal(vrt_parse(b, 40, 1, &p), VRT_OK);
	assert_int_equal(vrt_parse(b, 36, 1, &p), VRT_EFORMAT);
	b[5] = 9;
	assert_int_equal(vrt_parse(b, 40, 1, &p), VRT_EFORMAT);
	b[5] = 1;
	b[6] = 1;
	assert_int_equal(vrt_parse(b, 40, 1, &p), VRT_EFIELD);
	b[6] = 0;
	b[7] = 28;
	assert_int_equal(vrt_parse(b, 40, 1, &p), VRT_EFIELD);
	b[7] = 24;
	b[4] = 2;
	assert_int_equal(vrt_parse(b, 40, 1, &p), VRT_EVERSION);
	b[4] = 1;
	b[0] = 'X';
	assert_int_equal(vrt_parse(b, 40, 1, &p), VRT_EMAGIC);
	b[0] = 0x43;
	assert_int_equal(vrt_parse(b, 23, 1, &p), VRT_ESHORT);
	/* a VRT packet is not plain, nor plain VRT */
	assert_int_equal(vrt_parse(difi_data, sizeof(difi_data), 1, &p), VRT_EMAGIC);
	assert_int_not_equal(vrt_parse(b, sizeof(b), 0, &p), VRT_OK);
}

static void test_pack_matches_bytes(void **state)
{
	struct vrt_packet p = {
		.kind = VRT_KIND_DATA, .type = VRT_IF_DATA_SID, .has_cid = 1,
		.tsi = VRT_TSI_UTC, .tsf = VRT_TSF_PICOSECONDS, .count = 5,
		.stream_id = 0x12345678u, .oui = VRT_DIFI_OUI,
		.ts_int = 0x654f1a00u, .ts_frac = 1000000000ull, .payload_len = 8,
	};
	struct vrt_packet c = {
		.kind = VRT_KIND_CONTEXT, .has_cid = 1, .tsi = VRT_TSI_UTC,
		.tsf = VRT_TSF_PICOSECONDS, .count = 3, .stream_id = 7, .oui = VRT_DIFI_OUI,
		.pcc = VRT_DIFI_PCC_CONTEXT, .ts_int = 0x654f1a00u,
		.bandwidth_hz = 20e6, .rf_ref_hz = 1.5e9, .sample_rate_hz = 25e6,
	};
	uint8_t b[128];
	struct vrt_packet q;
	size_t n;

	assert_int_equal(vrt_payload_offset(&p), 28);
	n = vrt_pack(b, sizeof(b), &p);
	assert_int_equal(n, sizeof(difi_data));
	memcpy(b + 28, difi_data + 28, 8);
	assert_memory_equal(b, difi_data, sizeof(difi_data));
	/* too small a buffer, or a payload that is not whole words */
	assert_int_equal(vrt_pack(b, sizeof(difi_data) - 4, &p), 0);
	p.payload_len = 6;
	assert_int_equal(vrt_pack(b, sizeof(b), &p), 0);

	n = vrt_pack_context(b, sizeof(b), &c);
	assert_int_equal(n, 4 * (7 + 1 + 6));
	assert_int_equal(vrt_be32(b), 0x4863000eu);
	assert_int_equal(vrt_be32(b + 28), 0xa8200000u);
	assert_int_equal(vrt_parse(b, n, 0, &q), VRT_OK);
	assert_true(q.bandwidth_hz == 20e6 && q.rf_ref_hz == 1.5e9 && q.sample_rate_hz == 25e6);
	assert_true(q.if_ref_hz == 0);
	assert_int_equal(vrt_pack_context(b, n - 4, &c), 0);
}

/* Round trips over every header variant the packer writes. */
static void test_round_trip(void **state)
{
	static uint8_t b[VRT_MAX_DATAGRAM];
	unsigned types[] = { VRT_IF_DATA, VRT_IF_DATA_SID, VRT_EXT_DATA, VRT_EXT_DATA_SID };

	for (unsigned t = 0; t < 4; t++)
		for (unsigned v = 0; v < 64; v++) {
			struct vrt_packet p = {
				.kind = VRT_KIND_DATA, .type = types[t], .has_cid = v & 1,
				.has_trailer = v >> 1 & 1, .tsi = v >> 2 & 3, .tsf = v >> 4 & 3,
				.count = v % 16, .stream_id = 0xdead0000u + v, .oui = 0xabcdef,
				.icc = 0x1234, .pcc = (uint16_t)v, .ts_int = 0x80000000u + v,
				.ts_frac = 999999999999ull - v, .trailer = 0x5a5a0000u | v,
				.payload_len = 4 * (v * 37 % 300),
			};
			struct vrt_packet q;
			size_t off = vrt_payload_offset(&p), n = vrt_pack(b, sizeof(b), &p);

			assert_true(n > 0);
			for (size_t i = 0; i < p.payload_len; i++)
				b[off + i] = (uint8_t)(i * 7 + v);
			assert_int_equal(vrt_parse(b, n, 0, &q), VRT_OK);
			assert_int_equal(q.type, p.type);
			assert_int_equal(q.has_sid, t & 1);
			assert_int_equal(q.stream_id, (t & 1) ? p.stream_id : 0);
			assert_int_equal(q.has_cid, p.has_cid);
			assert_int_equal(q.oui, p.has_cid ? p.oui : 0);
			assert_int_equal(q.pcc, p.has_cid ? p.pcc : 0);
			assert_int_equal(q.has_trailer, p.has_trailer);
			assert_int_equal(q.trailer, p.has_trailer ? p.trailer : 0);
			assert_int_equal(q.tsi, p.tsi);
			assert_int_equal(q.tsf, p.tsf);
			assert_int_equal(q.ts_int, p.tsi ? p.ts_int : 0);
			assert_int_equal(q.ts_frac, p.tsf ? p.ts_frac : 0);
			assert_int_equal(q.count, p.count);
			assert_int_equal(q.payload_len, p.payload_len);
			assert_ptr_equal(q.payload, b + off);
			assert_int_equal(n, off + p.payload_len + 4 * p.has_trailer);
		}
	for (unsigned f = VRT_PLAIN_SC16_BE; f <= VRT_PLAIN_CF32_LE; f++) {
		struct vrt_packet p = {
			.kind = VRT_KIND_PLAIN, .format = f, .channel = 65535, .seq = 0xfffffffe,
			.sample = 0xfedcba9876543210ull, .payload_len = 8 * 100,
		}, q;
		size_t n = vrt_pack(b, sizeof(b), &p);

		assert_int_equal(n, VRT_PLAIN_HDR + 800);
		assert_int_equal(vrt_parse(b, n, 1, &q), VRT_OK);
		assert_int_equal(q.format, f);
		assert_int_equal(q.channel, 65535);
		assert_int_equal(q.seq, 0xfffffffeu);
		assert_int_equal(q.sample, p.sample);
		assert_int_equal(q.payload_len, 800);
		p.channel = 65536;
		assert_int_equal(vrt_pack(b, sizeof(b), &p), 0);
	}
}

/*
 * The byte-swapping copies at every length from 0 to 300 values, and some
 * up to 600, and every misalignment of source and destination: each value
 * against its byte-by-byte reversal, and not a byte written past the end
 * (the vector steps, AVX2 where the CPU has it, its streaming stores from
 * 1024 bytes to a destination that can be aligned, and the scalar tails).
 */
static void test_copy_swap(void **state)
{
	static uint8_t src[4 * 600 + 64] __attribute__((aligned(32)));
	static uint8_t dst[4 * 600 + 64] __attribute__((aligned(32)));

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (size_t w = 2; w <= 4; w += 2)
		for (size_t n = 0; n <= 600; n += n < 300 ? 1 : 37)
			for (size_t so = 0; so < 4; so++)
				for (size_t dof = 0; dof < 8; dof += dof == 0 ? 3 : 1) {
					memset(dst, 0xee, sizeof(dst));
					if (w == 2)
						vrt_copy_swap16(dst + dof, src + so, n);
					else
						vrt_copy_swap32(dst + dof, src + so, n);
					for (size_t k = 0; k < n * w; k++)
						assert_int_equal(dst[dof + k],
								 src[so + k / w * w + (w - 1 - k % w)]);
					for (size_t k = dof + n * w; k < sizeof(dst); k++)
						assert_int_equal(dst[k], 0xee);
					for (size_t k = 0; k < dof; k++)
						assert_int_equal(dst[k], 0xee);
				}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_difi_data),
		cmocka_unit_test(test_context),
		cmocka_unit_test(test_fixed_point),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_pack_matches_bytes),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_copy_swap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
