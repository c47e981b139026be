/* SPDX-License-Identifier: Apache-2.0 */
/*
 * detect.h — the detection list chirpd writes per CPI: a fixed header and
 * fixed-size records, the public layout of a detection ring's slot (ring
 * format CHIRP_RING_DET) and of what libchirpring, the Python package and
 * chirp-tap read.
 *
 * LAYOUT
 *   One CPI's list is a struct chirp_det_header followed by `count`
 *   struct chirp_det_record, packed, little-endian (the host's order), in
 *   a slot of CHIRP_DET_BYTES(max_detections) bytes. Records are ordered by
 *   channel, then Doppler bin (ascending, negative first), then range gate.
 *   When more detections are found than fit (found > count), the first
 *   `count` in that order are kept and CHIRP_DET_OVERFLOW is set: a CPI is
 *   never dropped for having too many.
 *
 * BEAMS
 *   When the chain forms beams (CHIRP_DET_BEAMS in the header), the maps
 *   are beams: `maps` is the number of beams B, every record's `channel`
 *   and `beam` hold its beam 0..B-1, and azimuth_deg/elevation_deg give
 *   the target's direction, degrees from boresight in the array's frame
 *   (doc/beams.md), the monopulse estimate refined from the neighbouring
 *   beams, or the beam's own direction where angle_quality says it could
 *   not be. Without beams, beam is CHIRP_DET_BEAM_NONE, the angles NaN and
 *   angle_quality 0. The CPI's pointing travels in the ring descriptor
 *   (chirp_ring_block.pointing_az_deg/_el_deg), not in the list.
 *
 * VERSIONING
 *   `version` is CHIRP_DET_VERSION of the writer. A reader checks magic,
 *   then version, then record_bytes; a later version may append fields to
 *   the record (record_bytes grows) and readers of this version step by
 *   record_bytes and read the fields they know.
 *   Version 2 appends beam, azimuth_deg, elevation_deg and angle_quality
 *   (record_bytes 48); its first CHIRP_DET_V1_RECORD_BYTES bytes are
 *   version 1's record, so a version-1 reader that steps by record_bytes
 *   reads every field it knows. A version-2 reader reads a version-1 list
 *   (record_bytes >= 32) as one without beams.
 *
 * UNITS
 *   power and noise are in the range-Doppler map's units: |sample|^2 of
 *   the compressed, Doppler-processed data, summed over channels for an
 *   integrated list. With pulse compression's normalize = noise and the
 *   Doppler gain chirpd applies, white input noise of power s^2 per sample
 *   reads s^2 per channel in the map averaged over the Doppler bins, and in
 *   every bin without MTI (gates n <= R - L; the last L - 1 gates less:
 *   chirp/pc.h). With MTI the filter shapes it: s^2 N(m) at signed bin
 *   m; with theta = 2 pi m / Nd and a long window, N is about
 *   2 sin^2(theta/2) (two-pulse: 0 at zero Doppler, 2 at +-prf/2) or
 *   8/3 sin^4(theta/2) (three-pulse: 0 to 8/3). chirp/pc.h, RADAR CHAIN,
 *   gives N exactly.
 *
 *   noise is the CFAR's estimate from the training cells around the cell
 *   (chirp/pc.h): for ca its expectation is s^2 Nbar, Nbar = sum_dk c_dk
 *   N(m + dk) / sum_dk c_dk over the window's Doppler offsets dk, c_dk the
 *   cells at each (2 tr where |dk| <= gd, 2 (gr + tr) + 1 beyond, fewer
 *   at the range edges); go and so take each half's like mean (weights tr
 *   and gr + tr). snr_db = 10 log10(power / noise). Without MTI, power /
 *   noise estimates the cell's SNR + 1 (power is signal plus noise). With
 *   MTI, near the notch N is convex: the training bins are noisier than
 *   the target's own, and snr_db reads low against the SNR in the
 *   target's bin by 10 log10(Nbar / N(m)) (two-pulse, rect, Nd = P' = 32,
 *   gd 1, td 2, gr 1, tr 4: 4.1, 2.3 and 1.3 dB at bins 1, 2 and 3);
 *   towards +-prf/2, where N is concave, slightly high.
 */
#ifndef CHIRP_DETECT_H
#define CHIRP_DETECT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHIRP_DET_MAGIC    0x54454443u   /* "CDET" read as little-endian  */
#define CHIRP_DET_VERSION  2u

/* chirp_det_header.flags */
#define CHIRP_DET_OVERFLOW    (1u << 0)  /* found > count: list truncated   */
#define CHIRP_DET_INTEGRATED  (1u << 1)  /* CFAR ran on the channels'
					    non-coherent sum: every record's
					    channel is CHIRP_DET_CHANNEL_ALL */
#define CHIRP_DET_NO_VELOCITY (1u << 2)  /* no carrier or PRF configured:
					    velocity_mps is NaN             */
#define CHIRP_DET_SKIPPED     (1u << 3)  /* the CPI was not processed (its
					    mode is unknown): no records, and
					    its map or cube output, if any, is
					    all NaN                          */
#define CHIRP_DET_BEAMS       (1u << 4)  /* the maps are beams (maps = B):
					    records carry beam and angle     */
#define CHIRP_DET_INCOMPLETE  (1u << 5)  /* the input CPI was committed
					    CHIRP_RING_INCOMPLETE: samples
					    that never arrived were zeroed,
					    so a target may be missed or
					    weaker than it is                */

#define CHIRP_DET_CHANNEL_ALL (-1)       /* record of an integrated list    */
#define CHIRP_DET_BEAM_NONE   (-1)       /* record of a list without beams  */

/* chirp_det_record.angle_quality: why an angle is not a fine estimate
 * (0 = good; the estimator and its limits: doc/beams.md, Monopulse). */
#define CHIRP_DET_ANGLE_OUTSIDE      (1u << 0) /* beyond the fan's first or
						  last beam: one pair sees
						  it, clamped at half a
						  spacing                    */
#define CHIRP_DET_ANGLE_CLAMPED      (1u << 1) /* at an end of the search
						  interval                   */
#define CHIRP_DET_ANGLE_UNRESOLVED   (1u << 2) /* not one plane wave: two
						  targets in the cell, a
						  jammer, multipath          */
#define CHIRP_DET_ANGLE_NOT_PEAK     (1u << 3) /* a neighbouring beam is
						  stronger                   */
#define CHIRP_DET_ANGLE_NO_NEIGHBOUR (1u << 4) /* no neighbour beam: the
						  angle is the beam's own
						  direction                  */

struct chirp_det_header {                /* 80 bytes                        */
	uint32_t magic;                  /* CHIRP_DET_MAGIC                 */
	uint16_t version;                /* CHIRP_DET_VERSION               */
	uint16_t record_bytes;           /* sizeof(struct chirp_det_record) */
	uint64_t seq;                    /* the input CPI's block number    */
	uint64_t timestamp_ns;           /* the input CPI's timestamp       */
	uint64_t first_sample;           /* the input CPI's first sample    */
	uint32_t mode;                   /* the CPI's radar mode            */
	uint32_t flags;                  /* CHIRP_DET_*                     */
	uint32_t count;                  /* records that follow             */
	uint32_t found;                  /* detections found (>= count)     */
	uint32_t maps;                   /* maps the CFAR ran on: channels,
					    beams (CHIRP_DET_BEAMS), or 1
					    when integrated                 */
	uint32_t doppler_bins;           /* Nd: Doppler FFT length          */
	uint32_t range_gates;            /* R                               */
	uint32_t reserved;               /* 0                               */
	uint64_t cells;                  /* cells tested: maps x Nd x R     */
	uint64_t crossings;              /* cells over their threshold,
					    before the local-maximum rule   */
};

struct chirp_det_record {                /* 48 bytes (version 1: the first 32) */
	int32_t channel;                 /* 0..C-1, or CHIRP_DET_CHANNEL_ALL;
					    the beam with CHIRP_DET_BEAMS   */
	uint32_t range_gate;             /* 0..R-1: an echo starting at input
					    sample d peaks at gate d        */
	int32_t doppler_bin;             /* -floor(Nd/2) .. ceil(Nd/2)-1,
					    0 = zero Doppler                */
	float range_m;                   /* gate x c / (2 sample_rate_hz),
					    c = 299792458 m/s: the two-way
					    delay from the row's first
					    sample (gate 0: 0 m)            */
	float velocity_mps;              /* radial velocity, positive closing
					    (positive Doppler):
					    bin x prf / Nd x c / (2 carrier) */
	float power;                     /* the cell's power                */
	float noise;                     /* the CFAR's noise estimate there */
	float snr_db;                    /* 10 log10(power / noise)         */
	/* version 2 */
	int32_t beam;                    /* 0..B-1, or CHIRP_DET_BEAM_NONE   */
	float azimuth_deg;               /* the target's direction, degrees
					    from boresight (> 0 towards +x);
					    NaN without beams               */
	float elevation_deg;             /* likewise (> 0 towards +y)        */
	uint16_t angle_quality;          /* CHIRP_DET_ANGLE_* bits, 0 = good */
	uint16_t reserved;               /* 0                               */
};

/* Bytes of a version-1 record: the part of every record a version-1
 * reader knows. */
#define CHIRP_DET_V1_RECORD_BYTES 32u

/* Bytes of a list slot with room for max records. */
#define CHIRP_DET_BYTES(max) \
	(sizeof(struct chirp_det_header) + (uint64_t)(max) * sizeof(struct chirp_det_record))

#ifdef __cplusplus
static_assert(sizeof(struct chirp_det_header) == 80, "detection header is 80 bytes");
static_assert(sizeof(struct chirp_det_record) == 48, "detection record is 48 bytes");
#else
_Static_assert(sizeof(struct chirp_det_header) == 80, "detection header is 80 bytes");
_Static_assert(sizeof(struct chirp_det_record) == 48, "detection record is 48 bytes");
#endif

#ifdef __cplusplus
}
#endif
#endif /* CHIRP_DETECT_H */
