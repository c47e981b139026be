/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vrt.h — the packet codec of chirpd's network path: VITA 49.2 (VRT) IF
 * data and context packets, in the DIFI profile or not, and chirpd's own
 * plain-UDP framing (doc/network.md). Used by chirp-recv (parse) and
 * chirp-send (pack). No state, no allocation, no I/O.
 *
 * Every datagram is untrusted. vrt_parse checks, in this order: the
 * datagram is long enough for what it claims (header word; the packet
 * size field against the datagram), the header's fields (packet type,
 * timestamp kinds), then the version (plain framing), then the optional
 * fields one by one, each only after its length was checked. It never
 * reads past len and never writes past *p. The payload is not copied:
 * p->payload points into the caller's buffer.
 *
 * VRT words are big-endian (network order) on the wire; so are the plain
 * framing's header fields.
 */
#ifndef CHIRP_VRT_H
#define CHIRP_VRT_H

#include <stddef.h>
#include <stdint.h>

/* VITA 49 packet types (header bits 31..28). */
enum vrt_type {
	VRT_IF_DATA = 0,          /* IF data, no stream ID        */
	VRT_IF_DATA_SID = 1,      /* IF data with stream ID       */
	VRT_EXT_DATA = 2,         /* extension data, no stream ID */
	VRT_EXT_DATA_SID = 3,     /* extension data with stream ID */
	VRT_IF_CONTEXT = 4,       /* IF context (stream ID always) */
	VRT_EXT_CONTEXT = 5,
};

/* Integer-seconds timestamp (TSI, bits 23..22). */
enum vrt_tsi { VRT_TSI_NONE = 0, VRT_TSI_UTC = 1, VRT_TSI_GPS = 2, VRT_TSI_OTHER = 3 };
/* Fractional timestamp (TSF, bits 21..20). */
enum vrt_tsf { VRT_TSF_NONE = 0, VRT_TSF_SAMPLES = 1, VRT_TSF_PICOSECONDS = 2,
	       VRT_TSF_FREE = 3 };

/* What a datagram was. */
enum vrt_kind { VRT_KIND_DATA = 1, VRT_KIND_CONTEXT = 2, VRT_KIND_PLAIN = 3 };

/* Why vrt_parse refused a datagram (the counters' causes too). */
enum vrt_error {
	VRT_OK = 0,
	VRT_ESHORT,        /* shorter than its header or its size field      */
	VRT_ESIZE,         /* size field 0, or not the datagram's length     */
	VRT_ETYPE,         /* packet type we do not take (command, reserved) */
	VRT_EFIELD,        /* a header field out of range (TSF with pad...)  */
	VRT_EVERSION,      /* plain framing: a version we do not speak       */
	VRT_EMAGIC,        /* plain framing: not our magic                   */
	VRT_EFORMAT,       /* plain framing: unknown payload format, or a
			      payload that is not whole samples              */
	VRT_ECONTEXT,      /* context packet: a field we need is cut short   */
	VRT_NERRORS
};
const char *vrt_strerror(int e);   /* "datagram shorter than its header" */

/* The DIFI profile's class ID (DIFI 1.x: OUI of the DIFI consortium). */
#define VRT_DIFI_OUI          0x6A621Eu
#define VRT_DIFI_ICC          0x0000u  /* information class code        */
#define VRT_DIFI_PCC_DATA     0x0000u  /* packet class: signal data     */
#define VRT_DIFI_PCC_CONTEXT  0x0001u  /* packet class: context         */

/* CIF0 bits (context indicator field 0) the codec reads or writes. */
#define VRT_CIF0_CHANGE      (1u << 31)  /* context field change indicator */
#define VRT_CIF0_REF_POINT   (1u << 30)  /* 1 word                         */
#define VRT_CIF0_BANDWIDTH   (1u << 29)  /* 2 words, Hz, radix 20          */
#define VRT_CIF0_IF_REF      (1u << 28)  /* 2 words, Hz, radix 20          */
#define VRT_CIF0_RF_REF      (1u << 27)  /* 2 words, Hz, radix 20          */
#define VRT_CIF0_RF_OFFSET   (1u << 26)  /* 2 words                        */
#define VRT_CIF0_IF_OFFSET   (1u << 25)  /* 2 words                        */
#define VRT_CIF0_REF_LEVEL   (1u << 24)  /* 1 word                         */
#define VRT_CIF0_GAIN        (1u << 23)  /* 1 word                         */
#define VRT_CIF0_OVER_RANGE  (1u << 22)  /* 1 word                         */
#define VRT_CIF0_SAMPLE_RATE (1u << 21)  /* 2 words, Hz, radix 20          */
/* CIF1/2/3/7 enable bits: their words follow CIF0, before the fields. */
#define VRT_CIF0_CIF_ENABLES ((1u << 7) | (1u << 3) | (1u << 2) | (1u << 1))

/* The plain framing (doc/network.md): a 24-byte header, then samples. */
#define VRT_PLAIN_MAGIC   0x43485250u  /* "CHRP" */
#define VRT_PLAIN_VERSION 1u
#define VRT_PLAIN_HDR     24u
enum vrt_plain_format {
	VRT_PLAIN_SC16_BE = 1,   /* int16 I, Q, big-endian        */
	VRT_PLAIN_CF32_BE = 2,   /* float32 I, Q, big-endian      */
	VRT_PLAIN_SC16_LE = 3,   /* int16 I, Q, little-endian     */
	VRT_PLAIN_CF32_LE = 4,   /* float32 I, Q, little-endian   */
};
/* Bytes of one complex sample of a plain format, 0 if unknown. */
size_t vrt_plain_sample_bytes(unsigned format);

/* Largest datagram either side handles (IPv4 UDP payload limit). */
#define VRT_MAX_DATAGRAM 65507u

/* A parsed (or to-be-packed) packet. Fields a packet lacks read 0. */
struct vrt_packet {
	unsigned kind;            /* enum vrt_kind                                */
	/* VRT */
	unsigned type;            /* enum vrt_type                                */
	unsigned has_sid, has_cid, has_trailer;
	unsigned tsi, tsf;        /* enum vrt_tsi, enum vrt_tsf                   */
	unsigned count;           /* packet count, 0..15                          */
	uint32_t stream_id;
	uint32_t oui;             /* class ID: 24-bit OUI                         */
	uint16_t icc, pcc;        /* information / packet class code              */
	uint32_t ts_int;          /* integer seconds (TSI != 0)                   */
	uint64_t ts_frac;         /* samples or picoseconds (TSF != 0)            */
	uint32_t trailer;
	/* context (kind VRT_KIND_CONTEXT) */
	uint32_t cif0;
	double bandwidth_hz, if_ref_hz, rf_ref_hz, sample_rate_hz;  /* when the
					CIF0 bit says present, else 0    */
	/* plain framing (kind VRT_KIND_PLAIN) */
	unsigned format;          /* enum vrt_plain_format                        */
	unsigned channel;         /* 0..65535                                     */
	uint32_t seq;             /* sender's packet count for the channel        */
	uint64_t sample;          /* timestamp: index of the first sample         */
	/* payload, data and plain packets */
	const uint8_t *payload;   /* into the parsed buffer (NULL when packing)   */
	size_t payload_len;       /* bytes                                        */
};

/*
 * Parse datagram buf[0..len) as framing `plain` (0: VRT, 1: chirpd's plain
 * framing) into *p. Returns VRT_OK or an enum vrt_error.
 */
int vrt_parse(const void *buf, size_t len, int plain, struct vrt_packet *p);

/*
 * Pack the header of *p (kind DATA: type, has_cid, has_trailer, tsi, tsf,
 * count, stream_id, class ID, timestamps, trailer; kind PLAIN: format,
 * channel, seq, sample) around payload_len payload bytes into buf[0..cap).
 * The payload itself is written by the caller at buf + vrt_payload_offset(p)
 * (so a sender converts samples once, into the datagram). Returns the
 * datagram's length in bytes, or 0 if it does not fit cap, the payload is
 * not whole 32-bit words (VRT) or a field is out of range.
 */
size_t vrt_pack(void *buf, size_t cap, const struct vrt_packet *p);
/* Header bytes vrt_pack puts before the payload. */
size_t vrt_payload_offset(const struct vrt_packet *p);

/*
 * Pack an IF context packet: stream_id, class ID, timestamps and count as
 * in vrt_pack, with CIF0 fields bandwidth, RF reference frequency and
 * sample rate (each written when > 0) and the change indicator set.
 * Returns its length or 0.
 */
size_t vrt_pack_context(void *buf, size_t cap, const struct vrt_packet *p);

/* 64-bit fixed point, radix 20 (Hz fields of a context packet); values
 * beyond the field saturate, NaN is 0. */
int64_t vrt_hz_to_fixed(double hz);
double vrt_fixed_to_hz(int64_t v);

/* Byte-swapped copies of `scalars` 16- or 32-bit values (big-endian on the
 * wire <-> little-endian in memory, either way): the bulk of a receiver's
 * and a sender's work at line rate. dst and src do not overlap. */
void vrt_copy_swap16(uint8_t *dst, const uint8_t *src, size_t scalars);
void vrt_copy_swap32(uint8_t *dst, const uint8_t *src, size_t scalars);

/* Big-endian loads and stores. */
static inline uint32_t vrt_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}
static inline void vrt_put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

#endif /* CHIRP_VRT_H */
