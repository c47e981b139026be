/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_vrt.c — libFuzzer target for the network packet parser (vrt_parse,
 * VITA 49.2 and the plain framing: every datagram chirp-recv takes comes
 * from anyone who can reach its port) and for the CPI assembler behind it
 * (cpiasm_put/tick with the timestamps and payloads those datagrams
 * carry). The datagram is copied to a buffer of exactly its size, so a
 * read past it is caught. Anything accepted must point its payload inside
 * the datagram and survive a pack/parse round trip with the same fields.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chirp/ring.h"
#include "cpiasm.h"
#include "vrt.h"

#define NSLOT 4
#define C 3
#define P 3
#define R 5

static float slots[NSLOT][2 * C * P * R];
static unsigned head, nres;

static int f_reserve(void *ctx, void **payload)
{
	if (nres == NSLOT)
		return -ENOBUFS;
	*payload = slots[(head + nres++) % NSLOT];
	return 0;
}

static int f_commit(void *ctx, uint64_t first_sample, uint32_t flags, uint32_t missing)
{
	if (!nres || missing > C * P * R)
		abort();
	head = (head + 1) % NSLOT;
	nres--;
	return 0;
}

static struct cpiasm *assembler(void)
{
	static struct cpiasm *a;
	struct cpiasm_params p = {
		.channels = C, .pulses = P, .samples = R, .ring_format = CHIRP_RING_CF32,
		.pri_samples = 8, .t0_sample = 16, .horizon = 3, .deadline_ns = 1000,
		.epoch_jump_cpis = 4,
	};
	struct cpiasm_sink s = { .reserve = f_reserve, .commit = f_commit };
	char err[200];

	if (!a && !(a = cpiasm_create(&p, &s, err, sizeof(err))))
		abort();
	return a;
}

static void same(const struct vrt_packet *a, const struct vrt_packet *b)
{
	if (a->kind != b->kind || a->type != b->type || a->has_sid != b->has_sid ||
	    a->has_cid != b->has_cid || a->has_trailer != b->has_trailer || a->tsi != b->tsi ||
	    a->tsf != b->tsf || a->count != b->count || a->stream_id != b->stream_id ||
	    a->oui != b->oui || a->icc != b->icc || a->pcc != b->pcc ||
	    a->ts_int != b->ts_int || a->ts_frac != b->ts_frac || a->trailer != b->trailer ||
	    a->format != b->format || a->channel != b->channel || a->seq != b->seq ||
	    a->sample != b->sample || a->payload_len != b->payload_len)
		abort();
}

static void round_trip(const struct vrt_packet *p, int plain)
{
	static uint8_t b[VRT_MAX_DATAGRAM + 64];
	struct vrt_packet q;
	size_t n;

	if (p->kind == VRT_KIND_CONTEXT) {
		n = vrt_pack_context(b, sizeof(b), p);
		if (!n || vrt_parse(b, n, 0, &q) != VRT_OK)
			abort();
		if (p->sample_rate_hz > 0 && q.sample_rate_hz != p->sample_rate_hz)
			abort();
		return;
	}
	n = vrt_pack(b, sizeof(b), p);
	if (!n)
		abort();   /* what we parsed, we can write */
	memcpy(b + vrt_payload_offset(p), p->payload, p->payload_len);
	if (vrt_parse(b, n, plain, &q) != VRT_OK)
		abort();
	same(p, &q);
	if (memcmp(q.payload, p->payload, p->payload_len))
		abort();
}

static void assemble(const struct vrt_packet *p, uint64_t now)
{
	struct cpiasm *a = assembler();
	unsigned fmt = p->kind == VRT_KIND_PLAIN ? p->format : VRT_PLAIN_SC16_BE;
	unsigned ch = p->kind == VRT_KIND_PLAIN ? p->channel : p->stream_id % (C + 1);
	uint64_t s = p->kind == VRT_KIND_PLAIN ? p->sample : p->ts_frac;
	size_t sb = vrt_plain_sample_bytes(fmt);

	if (cpiasm_put(a, ch, s, p->payload, p->payload_len / sb, fmt, now) < 0)
		abort();   /* this sink never fails */
	if (cpiasm_tick(a, now) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t now = 1;
	uint8_t *copy = malloc(size ? size : 1);
	struct vrt_packet p;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	now += 300;
	for (int plain = 0; plain < 2; plain++) {
		int rc = vrt_parse(copy, size, plain, &p);

		if (vrt_strerror(rc) == NULL)
			abort();
		if (rc != VRT_OK)
			continue;
		if (p.payload && (p.payload < copy || p.payload + p.payload_len > copy + size))
			abort();
		round_trip(&p, plain);
		if (p.kind != VRT_KIND_CONTEXT)
			assemble(&p, now);
	}
	free(copy);
	return 0;
}
