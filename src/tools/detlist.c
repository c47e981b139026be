/* SPDX-License-Identifier: Apache-2.0 */
/* detlist.c — reading detection lists from a det ring; see detlist.h. */
#include "detlist.h"
#include "errbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HDR_BYTES sizeof(struct chirp_det_header)
#define REC_BYTES sizeof(struct chirp_det_record)
#define V1_BYTES  ((size_t)CHIRP_DET_V1_RECORD_BYTES)

/* Header fields: length, magic, version, record_bytes, count. */
static int check_header(const struct chirp_det_header *h, size_t len, char *err, size_t errlen)
{
	uint64_t cap;

	if (h->magic != CHIRP_DET_MAGIC) {
		errbuf_set(err, errlen, "magic %#010x is not a detection list's (%#010x)",
			   h->magic, CHIRP_DET_MAGIC);
		return -EBADMSG;
	}
	if (h->version < 1) {
		errbuf_set(err, errlen, "version %u: want >= 1", h->version);
		return -EBADMSG;
	}
	if (h->version == 1 ? h->record_bytes != V1_BYTES : h->record_bytes < REC_BYTES) {
		errbuf_set(err, errlen, "version %u with %u-byte records (version 1 has %zu, "
			   "version 2 %zu, later ones at least as many)", h->version,
			   h->record_bytes, V1_BYTES, REC_BYTES);
		return -EBADMSG;
	}
	if (h->version == 1 && (h->flags & CHIRP_DET_BEAMS)) {
		errbuf_set(err, errlen, "version 1 with the beams flag (records of version 1 "
			   "carry no beam)");
		return -EBADMSG;
	}
	cap = (len - HDR_BYTES) / h->record_bytes;
	if (h->count > cap) {
		errbuf_set(err, errlen, "count %" PRIu32 " exceeds the slot's %" PRIu64 " records",
			   h->count, cap);
		return -EBADMSG;
	}
	if (h->found < h->count || (h->found > h->count) != !!(h->flags & CHIRP_DET_OVERFLOW)) {
		errbuf_set(err, errlen, "found %" PRIu32 ", count %" PRIu32 " and the overflow flag "
			   "(%s) disagree", h->found, h->count,
			   h->flags & CHIRP_DET_OVERFLOW ? "set" : "clear");
		return -EBADMSG;
	}
	return 0;
}

/* A record's beam: its channel in a list of beams, else
 * CHIRP_DET_BEAM_NONE. 0 or -EBADMSG. */
static int check_beam(const struct detlist *d, uint32_t i, const struct chirp_det_record *r,
		      char *err, size_t errlen)
{
	int beams = !!(d->h.flags & CHIRP_DET_BEAMS);

	if (beams ? r->beam == r->channel : r->beam == CHIRP_DET_BEAM_NONE)
		return 0;
	errbuf_set(err, errlen, "record %" PRIu32 ": beam %" PRId32 ", channel %" PRId32 " (%s)",
		   i, r->beam, r->channel, beams ? "a list of beams has beam = channel" :
		   "a list without beams has beam -1");
	return -EBADMSG;
}

/* Every record's channel: CHIRP_DET_CHANNEL_ALL in an integrated list,
 * else 0..maps-1, in the non-decreasing order of detect.h (which
 * detlist_has_target relies on to count maps without a table); and its
 * beam. */
static int check_channels(const struct detlist *d, char *err, size_t errlen)
{
	int integrated = !!(d->h.flags & CHIRP_DET_INTEGRATED);
	int64_t last = INT64_MIN;

	for (uint32_t i = 0; i < d->h.count; i++) {
		struct chirp_det_record r;

		detlist_get(d, i, &r);
		if (check_beam(d, i, &r, err, errlen) < 0)
			return -EBADMSG;
		if (integrated ? r.channel != CHIRP_DET_CHANNEL_ALL :
				 r.channel < 0 || (uint32_t)r.channel >= d->h.maps) {
			errbuf_set(err, errlen, "record %" PRIu32 ": channel %" PRId32 " is not %s",
				   i, r.channel, integrated ? "-1 (an integrated list)" :
				   "one of the list's maps");
			return -EBADMSG;
		}
		if (r.channel < last) {
			errbuf_set(err, errlen, "record %" PRIu32 ": channel %" PRId32 " after %" PRId64
				   " (records are ordered by channel)", i, r.channel, last);
			return -EBADMSG;
		}
		last = r.channel;
	}
	return 0;
}

int detlist_parse(struct detlist *d, const void *slot, size_t len, char *err, size_t errlen)
{
	int r;

	memset(d, 0, sizeof(*d));
	if (!slot || len < HDR_BYTES) {
		errbuf_set(err, errlen, "%zu bytes cannot hold a %zu-byte list header", len, HDR_BYTES);
		return -EBADMSG;
	}
	memcpy(&d->h, slot, HDR_BYTES);
	r = check_header(&d->h, len, err, errlen);
	if (r < 0)
		return r;
	d->rec = (const uint8_t *)slot + HDR_BYTES;
	d->stride = d->h.record_bytes;
	return check_channels(d, err, errlen);
}

void detlist_get(const struct detlist *d, uint32_t i, struct chirp_det_record *r)
{
	const uint8_t *p = d->rec + (size_t)i * d->stride;

	if (d->stride >= REC_BYTES) {
		memcpy(r, p, REC_BYTES);
		return;
	}
	/* version 1: its fields, and those of a record without beams */
	memcpy(r, p, V1_BYTES);
	r->beam = CHIRP_DET_BEAM_NONE;
	r->azimuth_deg = NAN;
	r->elevation_deg = NAN;
	r->angle_quality = 0;
	r->reserved = 0;
}

void detlist_print_text(FILE *out, const struct detlist *d, float pointing_az_deg,
			float pointing_el_deg)
{
	const struct chirp_det_header *h = &d->h;
	int beams = !!(h->flags & CHIRP_DET_BEAMS);

	fprintf(out, "cpi seq=%" PRIu64 " mode=%" PRIu32 " pointing=%.9g,%.9g first_sample=%" PRIu64
		" count=%" PRIu32 " found=%" PRIu32 " overflow=%d maps=%" PRIu32
		" doppler_bins=%" PRIu32 " range_gates=%" PRIu32 " cells=%" PRIu64
		" crossings=%" PRIu64 " flags=%#x beams=%d\n",
		h->seq, h->mode, pointing_az_deg, pointing_el_deg, h->first_sample, h->count,
		h->found, !!(h->flags & CHIRP_DET_OVERFLOW), h->maps, h->doppler_bins,
		h->range_gates, h->cells, h->crossings, h->flags, beams);
	for (uint32_t i = 0; i < h->count; i++) {
		struct chirp_det_record r;

		detlist_get(d, i, &r);
		fprintf(out, "det channel=%" PRId32 " range_gate=%" PRIu32 " doppler_bin=%" PRId32
			" range_m=%.3f velocity_mps=%.4g power=%.6g noise=%.6g snr_db=%.2f",
			r.channel, r.range_gate, r.doppler_bin, r.range_m, r.velocity_mps, r.power,
			r.noise, r.snr_db);
		if (beams)
			fprintf(out, " beam=%" PRId32 " azimuth_deg=%.4f elevation_deg=%.4f"
				" angle_quality=%#x", r.beam, r.azimuth_deg, r.elevation_deg,
				r.angle_quality);
		fputc('\n', out);
	}
}

/* A JSON number, or null when it is not finite (JSON has no NaN). */
static void json_num(FILE *out, const char *key, float v)
{
	if (isfinite(v))
		fprintf(out, ",\"%s\":%.9g", key, v);
	else
		fprintf(out, ",\"%s\":null", key);
}

/* The header's fields as JSON members, no braces; ring (may be NULL): the
 * det ring descriptor's block number, flags and missing count. */
static void header_members(FILE *out, const struct detlist *d, const struct detlist_ring *ring)
{
	const struct chirp_det_header *h = &d->h;
	const char *b[2] = { "false", "true" };

	fprintf(out, "\"seq\":%" PRIu64, h->seq);
	if (ring) {
		fprintf(out, ",\"ring_seq\":%" PRIu64 ",\"ring_flags\":%" PRIu32
			",\"ring_missing\":%" PRIu32, ring->seq, ring->flags, ring->missing);
		json_num(out, "pointing_az_deg", ring->pointing_az_deg);
		json_num(out, "pointing_el_deg", ring->pointing_el_deg);
	}
	fprintf(out, ",\"timestamp_ns\":%" PRIu64 ",\"first_sample\":%" PRIu64 ",\"mode\":%" PRIu32
		",\"flags\":%" PRIu32 ",\"count\":%" PRIu32 ",\"found\":%" PRIu32
		",\"overflow\":%s,\"integrated\":%s,\"no_velocity\":%s,\"skipped\":%s"
		",\"incomplete\":%s,\"beams\":%s,\"maps\":%" PRIu32 ",\"doppler_bins\":%" PRIu32
		",\"range_gates\":%" PRIu32 ",\"cells\":%" PRIu64 ",\"crossings\":%" PRIu64,
		h->timestamp_ns, h->first_sample, h->mode, h->flags, h->count, h->found,
		b[!!(h->flags & CHIRP_DET_OVERFLOW)], b[!!(h->flags & CHIRP_DET_INTEGRATED)],
		b[!!(h->flags & CHIRP_DET_NO_VELOCITY)], b[!!(h->flags & CHIRP_DET_SKIPPED)],
		b[!!(h->flags & CHIRP_DET_INCOMPLETE)], b[!!(h->flags & CHIRP_DET_BEAMS)], h->maps, h->doppler_bins, h->range_gates,
		h->cells, h->crossings);
}

void detlist_print_json_records(FILE *out, const struct detlist *d)
{
	int beams = !!(d->h.flags & CHIRP_DET_BEAMS);

	fputc('[', out);
	for (uint32_t i = 0; i < d->h.count; i++) {
		struct chirp_det_record r;

		detlist_get(d, i, &r);
		fprintf(out, "%s{\"channel\":%" PRId32 ",\"range_gate\":%" PRIu32
			",\"doppler_bin\":%" PRId32, i ? "," : "", r.channel, r.range_gate,
			r.doppler_bin);
		json_num(out, "range_m", r.range_m);
		json_num(out, "velocity_mps", r.velocity_mps);
		json_num(out, "power", r.power);
		json_num(out, "noise", r.noise);
		json_num(out, "snr_db", r.snr_db);
		if (beams) {
			fprintf(out, ",\"beam\":%" PRId32, r.beam);
			json_num(out, "azimuth_deg", r.azimuth_deg);
			json_num(out, "elevation_deg", r.elevation_deg);
			fprintf(out, ",\"angle_quality\":%u", (unsigned)r.angle_quality);
		}
		fputc('}', out);
	}
	fputc(']', out);
}

void detlist_print_json_header(FILE *out, const struct detlist *d)
{
	fputc('{', out);
	header_members(out, d, NULL);
	fputc('}', out);
}

void detlist_print_jsonl(FILE *out, const struct detlist *d, const struct detlist_ring *ring)
{
	fputc('{', out);
	header_members(out, d, ring);
	fputs(",\"detections\":", out);
	detlist_print_json_records(out, d);
	fputs("}\n", out);
}

int detlist_parse_targets(const char *spec, struct detlist_target *t, size_t max, size_t *n,
			  char *err, size_t errlen)
{
	const char *p = spec;
	size_t k = 0;

	*n = 0;
	if (!spec || !*spec) {
		errbuf_set(err, errlen, "empty list (want GATE:BIN[,GATE:BIN...])");
		return -EINVAL;
	}
	for (;;) {
		char *e;
		unsigned long g;
		long b;

		if (k >= max) {
			errbuf_set(err, errlen, "more than %zu targets", max);
			return -EINVAL;
		}
		errno = 0;
		g = strtoul(p, &e, 10);
		if (*p < '0' || *p > '9' || errno || *e != ':' || g > UINT32_MAX) {
			errbuf_set(err, errlen, "target %zu: want GATE:BIN, GATE a range gate", k + 1);
			return -EINVAL;
		}
		p = e + 1;
		errno = 0;
		b = strtol(p, &e, 10);
		if (e == p || errno || (*e && *e != ',') || b < INT32_MIN || b > INT32_MAX) {
			errbuf_set(err, errlen, "target %zu: BIN is not an integer (a signed "
				   "Doppler bin, 0 = zero Doppler)", k + 1);
			return -EINVAL;
		}
		t[k].gate = (uint32_t)g;
		t[k].bin = (int32_t)b;
		k++;
		if (!*e)
			break;
		p = e + 1;
	}
	*n = k;
	return 0;
}

/* |a - b| on the cyclic Doppler axis of nd bins (nd 0: not cyclic). */
static uint64_t bin_distance(int32_t a, int32_t b, uint32_t nd)
{
	uint64_t d = (uint64_t)llabs((long long)a - b);

	if (nd > 0) {
		d %= nd;
		if (nd - d < d)
			d = nd - d;
	}
	return d;
}

int detlist_has_target(const struct detlist *d, const struct detlist_target *t,
		       unsigned tol_gates, unsigned tol_bins)
{
	/* A target shows in one beam (its strongest), in every channel's map */
	uint32_t maps = d->h.flags & (CHIRP_DET_INTEGRATED | CHIRP_DET_BEAMS) ? 1 : d->h.maps;
	uint32_t hit = 0;
	int64_t last = INT64_MIN;

	/* Records are ordered by channel (checked by detlist_parse): a map
	 * is counted at its first matching record. */
	for (uint32_t i = 0; i < d->h.count; i++) {
		struct chirp_det_record r;
		uint64_t dg;

		detlist_get(d, i, &r);
		if (r.channel == last)
			continue;
		dg = r.range_gate > t->gate ? r.range_gate - t->gate : t->gate - r.range_gate;
		if (dg <= tol_gates && bin_distance(r.doppler_bin, t->bin, d->h.doppler_bins) <= tol_bins) {
			hit++;
			last = r.channel;
		}
	}
	return maps > 0 && (d->h.flags & CHIRP_DET_BEAMS ? hit > 0 : hit == maps);
}

int detlist_target_record(const struct detlist *d, const struct detlist_target *t,
			  unsigned tol_gates, unsigned tol_bins, struct chirp_det_record *best)
{
	int found = 0;

	for (uint32_t i = 0; i < d->h.count; i++) {
		struct chirp_det_record r;
		uint64_t dg;

		detlist_get(d, i, &r);
		dg = r.range_gate > t->gate ? r.range_gate - t->gate : t->gate - r.range_gate;
		if (dg > tol_gates || bin_distance(r.doppler_bin, t->bin, d->h.doppler_bins) > tol_bins)
			continue;
		if (!found || r.power > best->power)
			*best = r;
		found = 1;
	}
	return found;
}
