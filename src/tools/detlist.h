/* SPDX-License-Identifier: Apache-2.0 */
/*
 * detlist.h — one detection list (chirp/detect.h) as a consumer reads it
 * from a det ring's slot: checked, then printed (text or JSON lines) and
 * matched against expected targets. Used by chirp-tap; not by chirpd.
 *
 * UNTRUSTED INPUT
 *   A slot is written by another process. detlist_parse checks, in this
 *   order, the length (a header fits), magic, version, record_bytes, and
 *   count against the slot's capacity and found, then every record's
 *   channel (in range, non-decreasing as detect.h orders them) and beam
 *   (the channel with CHIRP_DET_BEAMS, else -1), before a struct detlist
 *   is handed out; nothing past the slot is ever read.
 *   Records are copied out with memcpy (a slot promises no alignment of
 *   a later version's larger records).
 *
 * VERSIONS
 *   Version 1 has 32-byte records, version 2 48 (beam and angle). A
 *   version-1 list reads as one without beams (beam -1, angles NaN); a
 *   later version may append fields (record_bytes > 48): its lists are
 *   read by stepping record_bytes and taking the fields of version 2, as
 *   detect.h says.
 */
#ifndef CHIRP_DETLIST_H
#define CHIRP_DETLIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "chirp/detect.h"

struct detlist {
	struct chirp_det_header h;    /* a copy of the slot's header        */
	const uint8_t *rec;           /* the first record, inside the slot  */
	size_t stride;                /* record_bytes                       */
};

/*
 * Check the list in slot[0..len) and describe it in *d (no copy of the
 * records: d points into the slot, valid while the slot is held). 0, or
 * -EBADMSG with the reason in err ("count 70 exceeds the slot's 64
 * records").
 */
int detlist_parse(struct detlist *d, const void *slot, size_t len, char *err, size_t errlen);

/* Record i (< d->h.count) in *r (a version-1 record: beam -1, angles NaN). */
void detlist_get(const struct detlist *d, uint32_t i, struct chirp_det_record *r);

/*
 * Text: a line "cpi seq=S mode=M pointing=AZ,EL first_sample=F count=N
 * found=N overflow=0|1 maps=.. doppler_bins=.. range_gates=.. cells=..
 * crossings=.. flags=.. beams=0|1" then one line per detection "det
 * channel=.. range_gate=.. doppler_bin=.. range_m=.. velocity_mps=..
 * power=.. noise=.. snr_db=..", with beams followed by " beam=..
 * azimuth_deg=.. elevation_deg=.. angle_quality=..". key=value, so that
 * awk and grep take them apart. The pointing (degrees) is the det ring
 * block's (chirp_ring_block), not the list's.
 */
void detlist_print_text(FILE *out, const struct detlist *d, float pointing_az_deg,
			float pointing_el_deg);

/* What a det ring's descriptor says of the list in its slot. */
struct detlist_ring {
	uint64_t seq;                 /* the ring's block number            */
	uint32_t flags;               /* CHIRP_RING_* (INCOMPLETE: the input
					 CPI had holes)                     */
	uint32_t missing;             /* the input CPI's missing samples    */
	float pointing_az_deg;        /* the block's pointing, degrees      */
	float pointing_el_deg;
};

/*
 * One JSON object on one line: the header's fields (overflow, integrated,
 * no_velocity, skipped, incomplete and beams as booleans), when read from
 * a ring (ring not NULL) its descriptor's ring_seq, ring_flags,
 * ring_missing, pointing_az_deg and pointing_el_deg, and "detections":
 * [{channel, range_gate, doppler_bin, range_m, velocity_mps, power, noise,
 * snr_db}], with beams also beam, azimuth_deg, elevation_deg and
 * angle_quality; a number that is not finite
 * (velocity_mps without a carrier) is null. The keys are those of
 * chirpd's [detections] file, of which this is a superset, so that one
 * reader takes both.
 */
void detlist_print_jsonl(FILE *out, const struct detlist *d, const struct detlist_ring *ring);

/* The same header fields as one JSON object, and the records as one JSON
 * array, no newline (chirp-sub puts them inside its own line). */
void detlist_print_json_header(FILE *out, const struct detlist *d);
void detlist_print_json_records(FILE *out, const struct detlist *d);

/* An expected target: a range gate and a signed Doppler bin. */
struct detlist_target {
	uint32_t gate;
	int32_t bin;
};

/*
 * "GATE:BIN[,GATE:BIN...]" into t[0..max-1], *n of them. 0, or -EINVAL
 * with the reason ("target 2 '5:x': BIN is not an integer").
 */
int detlist_parse_targets(const char *spec, struct detlist_target *t, size_t max, size_t *n,
			  char *err, size_t errlen);

/*
 * 1 if every map of d (each channel 0..maps-1, or the one integrated map)
 * holds a detection within tol_gates range gates and tol_bins Doppler bins
 * (cyclic over doppler_bins) of t, else 0; in a list of beams, where a
 * target is reported in its strongest beam only, 1 if any beam does.
 * Linear in count.
 */
int detlist_has_target(const struct detlist *d, const struct detlist_target *t,
		       unsigned tol_gates, unsigned tol_bins);

/*
 * The strongest record (power) of d within the tolerances of t, in *best:
 * 1, or 0 if none is (then *best is untouched). Linear in count.
 */
int detlist_target_record(const struct detlist *d, const struct detlist_target *t,
			  unsigned tol_gates, unsigned tol_bins, struct chirp_det_record *best);

#endif /* CHIRP_DETLIST_H */
