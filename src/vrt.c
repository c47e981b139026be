/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vrt.c — VITA 49.2 / DIFI and plain-UDP packet codec (see vrt.h).
 *
 * VRT header word (big-endian):
 *   31..28 packet type   27 C (class ID)   26 T (trailer, data packets)
 *   25..24 indicators    23..22 TSI        21..20 TSF
 *   19..16 packet count mod 16             15..0 packet size, 32-bit words
 * followed by: stream ID (types 1, 3, 4, 5), class ID (2 words: pad bits
 * and OUI; information and packet class codes), integer timestamp (1 word
 * when TSI != 0), fractional timestamp (2 words when TSF != 0), then the
 * payload (data) or CIF0 and its fields (context), and a trailer word
 * (data, when T).
 */
#include "vrt.h"

#include <math.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define VRT_X86_AVX2 1
#endif

static const char *const errs[VRT_NERRORS] = {
	[VRT_OK] = "ok",
	[VRT_ESHORT] = "datagram shorter than its header or its size field",
	[VRT_ESIZE] = "packet size field does not match the datagram",
	[VRT_ETYPE] = "packet type not taken (command or reserved)",
	[VRT_EFIELD] = "header field out of range",
	[VRT_EVERSION] = "plain framing version not spoken",
	[VRT_EMAGIC] = "not chirpd's plain framing (magic)",
	[VRT_EFORMAT] = "payload format unknown or not whole samples",
	[VRT_ECONTEXT] = "context packet cut short",
};

const char *vrt_strerror(int e)
{
	return e >= 0 && e < VRT_NERRORS ? errs[e] : "unknown error";
}

size_t vrt_plain_sample_bytes(unsigned format)
{
	switch (format) {
	case VRT_PLAIN_SC16_BE: case VRT_PLAIN_SC16_LE: return 4;
	case VRT_PLAIN_CF32_BE: case VRT_PLAIN_CF32_LE: return 8;
	default: return 0;
	}
}

static uint64_t be64(const uint8_t *b)
{
	return (uint64_t)vrt_be32(b) << 32 | vrt_be32(b + 4);
}

static void put64(uint8_t *b, uint64_t v)
{
	vrt_put32(b, (uint32_t)(v >> 32));
	vrt_put32(b + 4, (uint32_t)v);
}

static int type_has_sid(unsigned type)
{
	return type != VRT_IF_DATA && type != VRT_EXT_DATA;
}

int64_t vrt_hz_to_fixed(double hz)
{
	double v = hz * 1048576.0;   /* 2^20 */

	if (v != v)
		return 0;
	if (v >= 9223372036854775808.0)    /* saturate: 2^63 */
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)llround(v);
}

double vrt_fixed_to_hz(int64_t v)
{
	return (double)v / 1048576.0;
}

/* ---- parse ------------------------------------------------------------ */

static int parse_plain(const uint8_t *b, size_t len, struct vrt_packet *p)
{
	size_t sb;

	if (len < VRT_PLAIN_HDR)
		return VRT_ESHORT;
	if (vrt_be32(b) != VRT_PLAIN_MAGIC)
		return VRT_EMAGIC;
	if (b[4] != VRT_PLAIN_VERSION)
		return VRT_EVERSION;
	p->kind = VRT_KIND_PLAIN;
	p->format = b[5];
	p->channel = (unsigned)b[8] << 8 | b[9];
	p->seq = vrt_be32(b + 12);
	p->sample = be64(b + 16);
	sb = vrt_plain_sample_bytes(p->format);
	if (sb == 0 || b[6] != 0 || b[7] != VRT_PLAIN_HDR || (len - VRT_PLAIN_HDR) % sb)
		return b[7] != VRT_PLAIN_HDR || b[6] != 0 ? VRT_EFIELD : VRT_EFORMAT;
	p->payload = b + VRT_PLAIN_HDR;
	p->payload_len = len - VRT_PLAIN_HDR;
	return VRT_OK;
}

/* Words of the CIF0 fields from bit 30 down to (not including) `stop`. */
static const unsigned char cif0_words[32] = {
	[30] = 1, [29] = 2, [28] = 2, [27] = 2, [26] = 2, [25] = 2, [24] = 1,
	[23] = 1, [22] = 1, [21] = 2,
};

static double field_hz(const uint8_t *f)
{
	return vrt_fixed_to_hz((int64_t)be64(f));
}

/*
 * The context fields we read: bandwidth, IF and RF reference and sample
 * rate. All sit before any field of variable size (bits 9, 8), so walking
 * bits 30..21 with fixed sizes is exact; later fields are not read.
 */
static int parse_context(const uint8_t *w, size_t nwords, struct vrt_packet *p)
{
	size_t i = 0, extra;

	if (nwords < 1)
		return VRT_ECONTEXT;
	p->cif0 = vrt_be32(w);
	extra = (size_t)__builtin_popcount(p->cif0 & VRT_CIF0_CIF_ENABLES);
	i = 1 + extra;
	for (int bit = 30; bit >= 21; bit--) {
		if (!(p->cif0 & (1u << bit)))
			continue;
		if (i + cif0_words[bit] > nwords)
			return VRT_ECONTEXT;
		if (bit == 29)
			p->bandwidth_hz = field_hz(w + 4 * i);
		else if (bit == 28)
			p->if_ref_hz = field_hz(w + 4 * i);
		else if (bit == 27)
			p->rf_ref_hz = field_hz(w + 4 * i);
		else if (bit == 21)
			p->sample_rate_hz = field_hz(w + 4 * i);
		i += cif0_words[bit];
	}
	return VRT_OK;
}

static int parse_vrt(const uint8_t *b, size_t len, struct vrt_packet *p)
{
	uint32_t h;
	size_t words, i = 1;

	/* length first: a whole header word, then the size it claims */
	if (len < 4)
		return VRT_ESHORT;
	h = vrt_be32(b);
	words = h & 0xffff;
	if (words == 0 || len % 4)
		return VRT_ESIZE;
	if (words * 4 > len)
		return VRT_ESHORT;
	if (words * 4 != len)
		return VRT_ESIZE;
	/* then the header's fields */
	p->type = h >> 28;
	if (p->type > VRT_EXT_CONTEXT)
		return VRT_ETYPE;
	p->kind = p->type >= VRT_IF_CONTEXT ? VRT_KIND_CONTEXT : VRT_KIND_DATA;
	p->has_sid = (unsigned)type_has_sid(p->type);
	p->has_cid = (h >> 27) & 1;
	p->has_trailer = p->kind == VRT_KIND_DATA && ((h >> 26) & 1);
	p->tsi = (h >> 22) & 3;
	p->tsf = (h >> 20) & 3;
	p->count = (h >> 16) & 15;
	if (words < 1 + p->has_sid + 2 * p->has_cid + (p->tsi != 0) + 2 * (p->tsf != 0) +
		    p->has_trailer)
		return VRT_ESHORT;
	if (p->has_sid)
		p->stream_id = vrt_be32(b + 4 * i++);
	if (p->has_cid) {
		uint32_t c0 = vrt_be32(b + 4 * i), c1 = vrt_be32(b + 4 * i + 4);

		if (c0 >> 24 & 0x07)   /* reserved bits 26..24 */
			return VRT_EFIELD;
		p->oui = c0 & 0xffffff;
		p->icc = (uint16_t)(c1 >> 16);
		p->pcc = (uint16_t)c1;
		i += 2;
	}
	if (p->tsi)
		p->ts_int = vrt_be32(b + 4 * i++);
	if (p->tsf) {
		p->ts_frac = be64(b + 4 * i);
		i += 2;
		if (p->tsf == VRT_TSF_PICOSECONDS && p->ts_frac >= 1000000000000ull)
			return VRT_EFIELD;
	}
	if (p->kind == VRT_KIND_CONTEXT)
		return parse_context(b + 4 * i, words - i, p);
	if (p->has_trailer)
		p->trailer = vrt_be32(b + len - 4);
	p->payload = b + 4 * i;
	p->payload_len = (words - i - p->has_trailer) * 4;
	return VRT_OK;
}

int vrt_parse(const void *buf, size_t len, int plain, struct vrt_packet *p)
{
	memset(p, 0, sizeof(*p));
	if (!buf)
		return VRT_ESHORT;
	return plain ? parse_plain(buf, len, p) : parse_vrt(buf, len, p);
}

/* ---- pack ------------------------------------------------------------- */

static size_t vrt_prefix_words(const struct vrt_packet *p)
{
	return 1 + (size_t)type_has_sid(p->type) + 2 * (size_t)!!p->has_cid + (p->tsi != 0) +
	       2 * (size_t)(p->tsf != 0);
}

size_t vrt_payload_offset(const struct vrt_packet *p)
{
	return p->kind == VRT_KIND_PLAIN ? VRT_PLAIN_HDR : 4 * vrt_prefix_words(p);
}

/* Header word and prefix fields; returns words written. */
static size_t put_prefix(uint8_t *b, const struct vrt_packet *p, size_t words, int trailer)
{
	size_t i = 1;

	vrt_put32(b, (uint32_t)p->type << 28 | (uint32_t)!!p->has_cid << 27 |
		     (uint32_t)!!trailer << 26 | (uint32_t)(p->tsi & 3) << 22 |
		     (uint32_t)(p->tsf & 3) << 20 | (uint32_t)(p->count & 15) << 16 |
		     (uint32_t)words);
	if (type_has_sid(p->type))
		vrt_put32(b + 4 * i++, p->stream_id);
	if (p->has_cid) {
		vrt_put32(b + 4 * i, p->oui & 0xffffff);
		vrt_put32(b + 4 * i + 4, (uint32_t)p->icc << 16 | p->pcc);
		i += 2;
	}
	if (p->tsi)
		vrt_put32(b + 4 * i++, p->ts_int);
	if (p->tsf) {
		put64(b + 4 * i, p->ts_frac);
		i += 2;
	}
	return i;
}

static size_t pack_plain(uint8_t *b, size_t cap, const struct vrt_packet *p)
{
	size_t sb = vrt_plain_sample_bytes(p->format), len = VRT_PLAIN_HDR + p->payload_len;

	if (!sb || p->payload_len % sb || p->channel > 0xffff || len > cap)
		return 0;
	vrt_put32(b, VRT_PLAIN_MAGIC);
	b[4] = VRT_PLAIN_VERSION;
	b[5] = (uint8_t)p->format;
	b[6] = 0;
	b[7] = VRT_PLAIN_HDR;
	b[8] = (uint8_t)(p->channel >> 8);
	b[9] = (uint8_t)p->channel;
	b[10] = b[11] = 0;
	vrt_put32(b + 12, p->seq);
	put64(b + 16, p->sample);
	return len;
}

size_t vrt_pack(void *buf, size_t cap, const struct vrt_packet *p)
{
	size_t words;

	if (p->kind == VRT_KIND_PLAIN)
		return pack_plain(buf, cap, p);
	if (p->kind != VRT_KIND_DATA || p->type > VRT_EXT_DATA_SID || p->payload_len % 4)
		return 0;
	words = vrt_prefix_words(p) + p->payload_len / 4 + !!p->has_trailer;
	if (words > 0xffff || words * 4 > cap)
		return 0;
	put_prefix(buf, p, words, p->has_trailer);
	if (p->has_trailer)
		vrt_put32((uint8_t *)buf + 4 * (words - 1), p->trailer);
	return words * 4;
}

size_t vrt_pack_context(void *buf, size_t cap, const struct vrt_packet *p)
{
	struct vrt_packet c = *p;
	uint8_t *b = buf;
	uint32_t cif0 = VRT_CIF0_CHANGE;
	size_t words, i;

	c.type = VRT_IF_CONTEXT;
	if (p->bandwidth_hz > 0)
		cif0 |= VRT_CIF0_BANDWIDTH;
	if (p->rf_ref_hz > 0)
		cif0 |= VRT_CIF0_RF_REF;
	if (p->sample_rate_hz > 0)
		cif0 |= VRT_CIF0_SAMPLE_RATE;
	words = vrt_prefix_words(&c) + 1 + 2 * (size_t)__builtin_popcount(cif0 & ~VRT_CIF0_CHANGE);
	if (words * 4 > cap)
		return 0;
	i = put_prefix(b, &c, words, 0);
	vrt_put32(b + 4 * i++, cif0);
	if (cif0 & VRT_CIF0_BANDWIDTH) {
		put64(b + 4 * i, (uint64_t)vrt_hz_to_fixed(p->bandwidth_hz));
		i += 2;
	}
	if (cif0 & VRT_CIF0_RF_REF) {
		put64(b + 4 * i, (uint64_t)vrt_hz_to_fixed(p->rf_ref_hz));
		i += 2;
	}
	if (cif0 & VRT_CIF0_SAMPLE_RATE)
		put64(b + 4 * i, (uint64_t)vrt_hz_to_fixed(p->sample_rate_hz));
	return words * 4;
}

/* 16 bytes a step in GCC's vector types (SSE2, NEON; the plain loop is not
 * vectorized at -O2), the tail one scalar at a time; on x86-64 CPUs with
 * AVX2 (chosen at run time: the build targets baseline x86-64) 32 bytes a
 * step with one byte shuffle, which takes about 40 % less time than the
 * SSE2 shifts while the destination is in cache; a destination that is
 * not (a ring slot) takes non-temporal stores from VRT_STREAM_MIN bytes,
 * which take more than half the copy's time off there (doc/network.md).
 * Unaligned loads: a datagram's payload sits anywhere. */
typedef uint16_t v8u16 __attribute__((vector_size(16)));
typedef uint32_t v4u32 __attribute__((vector_size(16)));

#ifdef VRT_X86_AVX2
/* Copies of at least this many bytes write the destination with
 * non-temporal stores: it is a ring slot no cache holds (chirpd's DMA or
 * its CPU chain reads it from memory, later), and a plain store would
 * first read each line in (64 bytes read per 64 written) and evict a line
 * of the receive buffers that are hot. */
#define VRT_STREAM_MIN 1024

/* The bytes of each 2- (size 2) or 4-byte (size 4) value reversed, 32
 * bytes a step; returns the bytes done (a multiple of 32 <= bytes, or,
 * streaming, up to the last whole 32 bytes of dst's aligned run). */
__attribute__((target("avx2")))
static size_t swap_avx2(uint8_t *dst, const uint8_t *src, size_t bytes, int size)
{
	const __m256i m16 = _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
					     1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
	const __m256i m32 = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
					     3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
	const __m256i m = size == 2 ? m16 : m32;
	size_t i = 0, head = (32 - ((uintptr_t)dst & 31)) & 31;

	if (bytes >= VRT_STREAM_MIN && head % (size_t)size == 0) {
		/* the unaligned head in one plain store (its bytes are written
		 * again below, the same values), then aligned streaming ones */
		__m256i v = _mm256_loadu_si256((const __m256i *)(const void *)src);

		_mm256_storeu_si256((__m256i *)(void *)dst, _mm256_shuffle_epi8(v, m));
		for (i = head; i + 32 <= bytes; i += 32) {
			v = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
			_mm256_stream_si256((__m256i *)(void *)(dst + i), _mm256_shuffle_epi8(v, m));
		}
		/* streaming stores are weakly ordered: in memory before the
		 * caller publishes the copy (a release store) */
		_mm_sfence();
		return i;
	}
	for (; i + 32 <= bytes; i += 32) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));

		_mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_shuffle_epi8(v, m));
	}
	return i;
}

static int have_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}
#endif

void vrt_copy_swap16(uint8_t *dst, const uint8_t *src, size_t scalars)
{
	size_t i = 0;

#ifdef VRT_X86_AVX2
	if (scalars >= 16 && have_avx2())
		i = swap_avx2(dst, src, 2 * scalars, 2) / 2;
#endif
	for (; i + 8 <= scalars; i += 8) {
		v8u16 v;

		memcpy(&v, src + 2 * i, 16);
		v = (v8u16)(v << 8 | v >> 8);
		memcpy(dst + 2 * i, &v, 16);
	}
	for (; i < scalars; i++) {
		uint16_t v;

		memcpy(&v, src + 2 * i, 2);
		v = __builtin_bswap16(v);
		memcpy(dst + 2 * i, &v, 2);
	}
}

void vrt_copy_swap32(uint8_t *dst, const uint8_t *src, size_t scalars)
{
	size_t i = 0;

#ifdef VRT_X86_AVX2
	if (scalars >= 8 && have_avx2())
		i = swap_avx2(dst, src, 4 * scalars, 4) / 4;
#endif
	for (; i + 4 <= scalars; i += 4) {
		v4u32 v;

		memcpy(&v, src + 4 * i, 16);
		v = v << 24 | (v & 0xff00) << 8 | (v >> 8 & 0xff00) | v >> 24;
		memcpy(dst + 4 * i, &v, 16);
	}
	for (; i < scalars; i++) {
		uint32_t v;

		memcpy(&v, src + 4 * i, 4);
		v = __builtin_bswap32(v);
		memcpy(dst + 4 * i, &v, 4);
	}
}
