/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigmf.h — SigMF (https://sigmf.org, v1.x) recordings of CPIs: metadata
 * written by chirp-tap --sigmf and read (validated) by chirp-feed --sigmf
 * and scripts/chirp-plot. JSON is parsed and written with jansson.
 *
 * A recording is BASE.sigmf-data (samples, little endian) and
 * BASE.sigmf-meta (JSON). What chirp writes:
 *
 *   global:   core:datatype    "cf32_le" | "ci16_le" | "rf32_le"
 *             core:sample_rate range sample rate, Hz
 *             core:version, core:recorder, core:description,
 *             core:extensions  [{"name": "chirp", "version": "1.0.0",
 *                                "optional": true}]
 *             chirp:channels, chirp:pulses, chirp:samples   CPI geometry
 *             chirp:output     "input" | "complex" | "magnitude" | "power_db"
 *             chirp:layout     "channel,pulse,range" (range contiguous)
 *             chirp:modes      [{"id": 0, "name": "search"}, ...]: the radar
 *                              modes of the configuration the recording was
 *                              made with (optional; names the ids below)
 *   captures: one per CPI, in order:
 *             core:sample_start  index of the CPI's first sample in the data
 *             core:datetime      block timestamp, ISO 8601 UTC, ns resolution
 *             chirp:seq          ring block sequence number (gaps visible)
 *             chirp:first_sample the block's first_sample (digitizer clock)
 *             chirp:flags        CHIRP_RING_* flags of the block
 *             chirp:mode         the CPI's radar mode id (chirp_ring_block.mode)
 *             chirp:pointing     [azimuth_deg, elevation_deg]: the CPI's
 *                                pointing (chirp_ring_block.pointing_*),
 *                                null for a value that is not finite
 *   annotations: [] (none)
 *
 * The data file is CPIs back to back, each C*P*R samples laid out
 * [channel][pulse][range]. A single-stream recording from another tool
 * (no chirp: keys) is read as a stream that the reader cuts into CPIs of
 * its own geometry.
 *
 * chirp:mode follows SigMF's capture-segment rule: a capture without it
 * keeps the mode of the capture before it (mode 0 before any), so a
 * recording of one mode may carry it once; a recording with no chirp:mode
 * at all (sigmf_meta.has_modes 0) is of mode 0 throughout.
 * chirp:pointing follows the same rule, and is written only where it
 * changes (boresight, 0 0, before the first): a recording without a
 * pointing carries none.
 *
 * What the reader rejects, with a message naming the file and the key:
 * malformed JSON (with line and column), a missing or non-object global,
 * a missing captures array, a datatype other than the three above (big
 * endian included), a missing/zero/negative/non-finite sample rate, a
 * missing core:version, core:num_channels other than 1, a partial or
 * out-of-range chirp geometry, an unknown chirp:output, a chirp:modes that
 * is not an array of at most 64 {"id", "name"} objects with distinct ids
 * and names of 1..31 characters, captures whose
 * sample_start is not an increasing integer, a malformed core:datetime,
 * a chirp:pointing that is not two numbers in -360..360 (or null);
 * and (sigmf_check_data) a data size that is not a whole number of CPIs
 * or that a capture points beyond, a chirp:mode that is not an integer
 * in 0..2^32-1.
 */
#ifndef CHIRP_SIGMF_H
#define CHIRP_SIGMF_H

#include <stddef.h>
#include <stdint.h>

#define SIGMF_MAX_META_BYTES   (256u << 20)  /* refuse larger .sigmf-meta   */
#define SIGMF_MAX_CAPTURES     (1u << 24)
#define SIGMF_MAX_DIM          (1u << 24)    /* per geometry dimension      */
#define SIGMF_MAX_MODES        64            /* chirp:modes entries         */
#define SIGMF_MODE_NAME_MAX    32            /* with the NUL                */

enum sigmf_datatype { SIGMF_CF32_LE = 0, SIGMF_CI16_LE = 1, SIGMF_RF32_LE = 2 };

const char *sigmf_datatype_name(enum sigmf_datatype d);   /* "cf32_le" ...  */
size_t sigmf_datatype_bytes(enum sigmf_datatype d);       /* 8, 4, 4        */
int sigmf_datatype_parse(const char *s, enum sigmf_datatype *d); /* 0/-EINVAL */

struct sigmf_capture {
	uint64_t sample_start;      /* core:sample_start                      */
	uint64_t timestamp_ns;      /* core:datetime, ns since epoch; 0 = none */
	uint64_t seq;               /* chirp:seq                              */
	uint64_t first_sample;      /* chirp:first_sample                     */
	uint32_t flags;             /* chirp:flags                            */
	uint32_t mode;              /* chirp:mode (radar mode id)             */
	float pointing_az_deg;      /* chirp:pointing [0], degrees; NaN = null */
	float pointing_el_deg;      /* chirp:pointing [1]                      */
};

/* One entry of chirp:modes: a radar mode id and its configured name. */
struct sigmf_mode_name {
	uint32_t id;
	char name[SIGMF_MODE_NAME_MAX];
};

struct sigmf_meta {
	enum sigmf_datatype datatype;
	double sample_rate_hz;      /* > 0                                    */
	unsigned channels, pulses, samples;  /* chirp geometry; all 0 = absent */
	char output[16];            /* chirp:output, "" = absent              */
	char description[256];      /* core:description                       */
	char recorder[64];          /* core:recorder                          */
	struct sigmf_mode_name modes[SIGMF_MAX_MODES];  /* chirp:modes       */
	size_t nmodes;              /* 0 = absent; ids distinct               */
	struct sigmf_capture *captures;
	size_t ncaptures;
	int has_modes;              /* read: some capture carries chirp:mode  */
	int has_pointing;           /* read: some capture carries chirp:pointing */
	size_t cap;                 /* allocated entries                      */
};

/* Zero m (no captures). */
void sigmf_meta_init(struct sigmf_meta *m);
/* Free the captures and zero m. */
void sigmf_meta_free(struct sigmf_meta *m);

/*
 * Make room for n captures in total, so that sigmf_meta_add_capture does
 * not allocate until then. 0 or -ENOMEM.
 */
int sigmf_meta_reserve(struct sigmf_meta *m, size_t n);
/* Append one capture (grows if needed). 0 or -ENOMEM / -E2BIG. */
int sigmf_meta_add_capture(struct sigmf_meta *m, const struct sigmf_capture *c);

/* The name chirp:modes gives mode id, or NULL. */
const char *sigmf_mode_name(const struct sigmf_meta *m, uint32_t id);

/* Samples (of datatype) per CPI: C*P*R, or 0 without geometry. */
uint64_t sigmf_cpi_samples(const struct sigmf_meta *m);

/*
 * BASE, BASE.sigmf-meta, BASE.sigmf-data or BASE.sigmf -> the two paths.
 * Returns 0 or -ENAMETOOLONG.
 */
int sigmf_paths(const char *base, char *meta, char *data, size_t len);

/*
 * Serialise m as SigMF JSON (indented, newline terminated) into a malloc'd
 * string; NULL on allocation failure.
 */
char *sigmf_meta_dump(const struct sigmf_meta *m);

/*
 * Write m to path atomically (path.tmp, fsync, rename). 0 or -errno with
 * the reason in err.
 */
int sigmf_meta_write(const struct sigmf_meta *m, const char *path, char *err, size_t errlen);

/*
 * Parse and validate len bytes of JSON (need not be NUL terminated). name
 * is used in messages ("x.sigmf-meta:3:17: ..."). On success m holds the
 * result (free with sigmf_meta_free). Returns 0 or -EINVAL / -ENOMEM with
 * the reason in err; m is left initialised and empty on error.
 */
int sigmf_meta_parse(const char *text, size_t len, const char *name,
		     struct sigmf_meta *m, char *err, size_t errlen);

/* Read and parse a .sigmf-meta file. 0 or -errno / -EINVAL. */
int sigmf_meta_read(const char *path, struct sigmf_meta *m, char *err, size_t errlen);

/*
 * Check a data file of data_bytes against m: a whole number of samples,
 * of CPIs when m has a geometry (else of cpi_samples_hint samples when
 * that is nonzero), and every capture's sample_start inside it. 0 or
 * -EINVAL with the reason.
 */
int sigmf_check_data(const struct sigmf_meta *m, uint64_t data_bytes,
		     uint64_t cpi_samples_hint, char *err, size_t errlen);

/*
 * The radar mode of each of ncpi CPIs of cpi_samples samples into
 * modes[0..ncpi-1], from the captures (a CPI takes the mode of the last
 * capture starting at or before its first sample; 0 before any). The
 * data must have passed sigmf_check_data. No allocation.
 */
void sigmf_cpi_modes(const struct sigmf_meta *m, uint64_t cpi_samples, uint32_t *modes,
		     uint64_t ncpi);

/* Likewise the pointing of each CPI, degrees (boresight 0, 0 before any
 * capture). */
void sigmf_cpi_pointing(const struct sigmf_meta *m, uint64_t cpi_samples, float *az_deg,
			float *el_deg, uint64_t ncpi);

/* ISO 8601 UTC with nanoseconds ("2026-11-21T09:40:01.123456789Z"). */
void sigmf_format_datetime(uint64_t ns, char *buf, size_t len);
/* Parse the above (fraction of 0..9 digits optional). 0 or -EINVAL. */
int sigmf_parse_datetime(const char *s, uint64_t *ns);

#endif /* CHIRP_SIGMF_H */
