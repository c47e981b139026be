/* SPDX-License-Identifier: Apache-2.0 */
/* sigmf.c — SigMF metadata for CPI recordings; see sigmf.h. */
#include "sigmf.h"
#include "errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

static const char *const dt_names[] = {
	[SIGMF_CF32_LE] = "cf32_le",
	[SIGMF_CI16_LE] = "ci16_le",
	[SIGMF_RF32_LE] = "rf32_le",
};

const char *sigmf_datatype_name(enum sigmf_datatype d)
{
	return (unsigned)d < 3 ? dt_names[d] : "?";
}

size_t sigmf_datatype_bytes(enum sigmf_datatype d)
{
	return d == SIGMF_CF32_LE ? 8 : 4;
}

int sigmf_datatype_parse(const char *s, enum sigmf_datatype *d)
{
	for (unsigned i = 0; i < 3; i++) {
		if (strcmp(s, dt_names[i]) == 0) {
			*d = (enum sigmf_datatype)i;
			return 0;
		}
	}
	return -EINVAL;
}

void sigmf_meta_init(struct sigmf_meta *m)
{
	memset(m, 0, sizeof(*m));
}

void sigmf_meta_free(struct sigmf_meta *m)
{
	free(m->captures);
	sigmf_meta_init(m);
}

int sigmf_meta_reserve(struct sigmf_meta *m, size_t n)
{
	struct sigmf_capture *c;

	if (n <= m->cap)
		return 0;
	if (n > SIGMF_MAX_CAPTURES)
		return -E2BIG;
	c = realloc(m->captures, n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	m->captures = c;
	m->cap = n;
	return 0;
}

int sigmf_meta_add_capture(struct sigmf_meta *m, const struct sigmf_capture *c)
{
	if (m->ncaptures == m->cap) {
		size_t n = m->cap ? 2 * m->cap : 64;
		int rc;

		if (n > SIGMF_MAX_CAPTURES)
			n = SIGMF_MAX_CAPTURES;
		if (n <= m->ncaptures)
			return -E2BIG;
		rc = sigmf_meta_reserve(m, n);
		if (rc < 0)
			return rc;
	}
	m->captures[m->ncaptures++] = *c;
	return 0;
}

const char *sigmf_mode_name(const struct sigmf_meta *m, uint32_t id)
{
	for (size_t i = 0; i < m->nmodes; i++)
		if (m->modes[i].id == id)
			return m->modes[i].name;
	return NULL;
}

uint64_t sigmf_cpi_samples(const struct sigmf_meta *m)
{
	return (uint64_t)m->channels * m->pulses * m->samples;
}

int sigmf_paths(const char *base, char *meta, char *data, size_t len)
{
	static const char *const ext[] = { ".sigmf-meta", ".sigmf-data", ".sigmf" };
	size_t n = strlen(base);
	int w1, w2;

	for (unsigned i = 0; i < 3; i++) {
		size_t e = strlen(ext[i]);

		if (n > e && strcmp(base + n - e, ext[i]) == 0) {
			n -= e;
			break;
		}
	}
	if (n > (size_t)INT32_MAX)
		return -ENAMETOOLONG;
	w1 = snprintf(meta, len, "%.*s.sigmf-meta", (int)n, base);
	w2 = snprintf(data, len, "%.*s.sigmf-data", (int)n, base);
	if (w1 < 0 || w2 < 0 || (size_t)w1 >= len || (size_t)w2 >= len)
		return -ENAMETOOLONG;
	return 0;
}

void sigmf_format_datetime(uint64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char d[32];

	if (!gmtime_r(&sec, &tm) || !strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "1970-01-01T00:00:00Z");
		return;
	}
	snprintf(buf, len, "%s.%09" PRIu64 "Z", d, (uint64_t)(ns % 1000000000ull));
}

int sigmf_parse_datetime(const char *s, uint64_t *ns)
{
	struct tm tm;
	int Y, M, D, h, m, sec, used = 0;
	uint64_t frac = 0;
	unsigned digits = 0;
	const char *p;
	time_t t;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &used) != 6 ||
	    used != 19)
		return -EINVAL;
	if (Y < 1970 || Y > 2500 || M < 1 || M > 12 || D < 1 || D > 31 ||
	    h > 23 || m > 59 || sec > 60 || h < 0 || m < 0 || sec < 0)
		return -EINVAL;
	p = s + used;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (digits < 9) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				digits++;
			}
			p++;
		}
		if (digits == 0)
			return -EINVAL;
		while (digits < 9) {
			frac *= 10;
			digits++;
		}
	}
	if (strcmp(p, "Z") != 0)
		return -EINVAL;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1 || t < 0)
		return -EINVAL;
	*ns = (uint64_t)t * 1000000000ull + frac;
	return 0;
}

/* ---- writing ------------------------------------------------------------ */

static json_t *u64_json(uint64_t v)
{
	/* JSON integers are int64 in jansson; beyond that is not a real count. */
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* A pointing angle as JSON: a number, or null when not finite (JSON has
 * no NaN; the ring carries any float, chirpd flags it). */
static json_t *angle_json(float deg)
{
	return isfinite(deg) ? json_real(deg) : json_null();
}

static json_t *pointing_json(const struct sigmf_capture *c)
{
	json_t *a = json_array();

	if (!a || json_array_append_new(a, angle_json(c->pointing_az_deg)) < 0 ||
	    json_array_append_new(a, angle_json(c->pointing_el_deg)) < 0) {
		json_decref(a);
		return NULL;
	}
	return a;
}

/* The capture-segment rule: chirp:pointing is written where it differs
 * from the capture before (boresight before the first). Bits, so that a
 * NaN compares equal to itself. */
static int pointing_changes(const struct sigmf_capture *prev, const struct sigmf_capture *c)
{
	float z[2] = { 0.0f, 0.0f }, p[2], q[2] = { c->pointing_az_deg, c->pointing_el_deg };

	if (prev) {
		p[0] = prev->pointing_az_deg;
		p[1] = prev->pointing_el_deg;
	}
	return memcmp(prev ? p : z, q, sizeof(q)) != 0;
}

static int set_new(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *meta_to_json(const struct sigmf_meta *m)
{
	json_t *root = json_object(), *g = json_object(), *caps = json_array();
	json_t *ext = json_array(), *e = json_object();
	int bad = 0;

	if (!root || !g || !caps || !ext || !e)
		goto fail;
	bad |= set_new(e, "name", json_string("chirp"));
	bad |= set_new(e, "version", json_string("1.0.0"));
	bad |= set_new(e, "optional", json_true());
	bad |= json_array_append_new(ext, e);
	e = NULL;
	bad |= set_new(g, "core:datatype", json_string(sigmf_datatype_name(m->datatype)));
	bad |= set_new(g, "core:sample_rate", json_real(m->sample_rate_hz));
	bad |= set_new(g, "core:version", json_string("1.0.0"));
	bad |= set_new(g, "core:num_channels", json_integer(1));
	if (m->recorder[0])
		bad |= set_new(g, "core:recorder", json_string(m->recorder));
	if (m->description[0])
		bad |= set_new(g, "core:description", json_string(m->description));
	bad |= json_object_set_new(g, "core:extensions", ext);
	ext = NULL;
	if (m->channels) {
		bad |= set_new(g, "chirp:channels", json_integer(m->channels));
		bad |= set_new(g, "chirp:pulses", json_integer(m->pulses));
		bad |= set_new(g, "chirp:samples", json_integer(m->samples));
		bad |= set_new(g, "chirp:layout", json_string("channel,pulse,range"));
	}
	if (m->output[0])
		bad |= set_new(g, "chirp:output", json_string(m->output));
	if (m->nmodes) {
		json_t *arr = json_array();

		for (size_t i = 0; arr && i < m->nmodes; i++)
			bad |= json_array_append_new(arr, json_pack("{s:I, s:s}", "id",
					(json_int_t)m->modes[i].id, "name", m->modes[i].name));
		bad |= set_new(g, "chirp:modes", arr);
	}
	for (size_t i = 0; i < m->ncaptures; i++) {
		const struct sigmf_capture *c = &m->captures[i];
		const struct sigmf_capture *prev = i ? &m->captures[i - 1] : NULL;
		json_t *o = json_object();
		char dt[48];

		if (!o)
			goto fail;
		bad |= set_new(o, "core:sample_start", u64_json(c->sample_start));
		if (c->timestamp_ns) {
			sigmf_format_datetime(c->timestamp_ns, dt, sizeof(dt));
			bad |= set_new(o, "core:datetime", json_string(dt));
		}
		bad |= set_new(o, "chirp:seq", u64_json(c->seq));
		bad |= set_new(o, "chirp:first_sample", u64_json(c->first_sample));
		bad |= set_new(o, "chirp:flags", json_integer(c->flags));
		bad |= set_new(o, "chirp:mode", json_integer(c->mode));
		if (pointing_changes(prev, c))
			bad |= set_new(o, "chirp:pointing", pointing_json(c));
		bad |= json_array_append_new(caps, o);
	}
	bad |= json_object_set_new(root, "global", g);
	g = NULL;
	bad |= json_object_set_new(root, "captures", caps);
	caps = NULL;
	bad |= set_new(root, "annotations", json_array());
	if (bad)
		goto fail;
	return root;
fail:
	json_decref(e);
	json_decref(ext);
	json_decref(g);
	json_decref(caps);
	json_decref(root);
	return NULL;
}

char *sigmf_meta_dump(const struct sigmf_meta *m)
{
	json_t *root = meta_to_json(m);
	char *s, *t;
	size_t n;

	if (!root)
		return NULL;
	s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(root);
	if (!s)
		return NULL;
	n = strlen(s);
	t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return NULL;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	return t;
}

int sigmf_meta_write(const struct sigmf_meta *m, const char *path, char *err, size_t errlen)
{
	char tmp[4096];
	char *text = NULL;
	size_t len, off = 0;
	int fd = -1, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errbuf_set(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	text = sigmf_meta_dump(m);
	if (!text) {
		errbuf_set(err, errlen, "%s: out of memory serialising metadata", path);
		return -ENOMEM;
	}
	len = strlen(text);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "open %s: %s", tmp, strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -errno;
			errbuf_set(err, errlen, "write %s: %s", tmp, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "fsync %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = -errno;
		errbuf_set(err, errlen, "close %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "rename %s -> %s: %s", tmp, path, strerror(errno));
	}
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp);
	free(text);
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

/*
 * Optional non-negative integer key of o. Returns 1 if present and valid,
 * 0 if absent, -1 (with err) if present but not an integer in [0, max].
 */
static int get_uint(json_t *o, const char *key, uint64_t max, uint64_t *v,
		    const char *where, char *err, size_t errlen)
{
	json_t *j = json_object_get(o, key);

	if (!j)
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < 0 ||
	    (uint64_t)json_integer_value(j) > max) {
		errbuf_set(err, errlen, "%s: %s must be an integer in 0..%" PRIu64, where, key, max);
		return -1;
	}
	*v = (uint64_t)json_integer_value(j);
	return 1;
}

/*
 * Optional chirp:pointing of a capture: [az_deg, el_deg], each a number
 * (|x| <= 360) or null (not finite). Same returns as get_uint.
 */
static int get_pointing(json_t *o, float *az, float *el, const char *where,
			char *err, size_t errlen)
{
	json_t *j = json_object_get(o, "chirp:pointing");
	float v[2];

	if (!j)
		return 0;
	if (!json_is_array(j) || json_array_size(j) != 2)
		goto bad;
	for (size_t i = 0; i < 2; i++) {
		json_t *x = json_array_get(j, i);

		if (json_is_null(x))
			v[i] = NAN;
		else if (json_is_number(x) && fabs(json_number_value(x)) <= 360)
			v[i] = (float)json_number_value(x);
		else
			goto bad;
	}
	*az = v[0];
	*el = v[1];
	return 1;
bad:
	errbuf_set(err, errlen, "%s: chirp:pointing must be [azimuth_deg, elevation_deg], "
		   "each a number in -360..360 or null", where);
	return -1;
}

/* Optional string key; copies it (must fit). Same returns as get_uint. */
static int get_str(json_t *o, const char *key, char *buf, size_t len,
		   const char *where, char *err, size_t errlen)
{
	json_t *j = json_object_get(o, key);

	if (!j)
		return 0;
	if (!json_is_string(j)) {
		errbuf_set(err, errlen, "%s: %s must be a string", where, key);
		return -1;
	}
	if (buf) {
		if (json_string_length(j) >= len || strlen(json_string_value(j)) != json_string_length(j)) {
			errbuf_set(err, errlen, "%s: %s is too long or holds a NUL", where, key);
			return -1;
		}
		memcpy(buf, json_string_value(j), json_string_length(j) + 1);
	}
	return 1;
}

/* The core: keys of the global object: datatype (supported, little endian),
 * sample rate, version, and a single channel. */
static int parse_core(json_t *g, const char *where, struct sigmf_meta *m,
		      char *err, size_t errlen)
{
	json_t *j;
	char dt[32];

	j = json_object_get(g, "core:datatype");
	if (!j || !json_is_string(j)) {
		errbuf_set(err, errlen, "%s: core:datatype is missing or not a string", where);
		return -EINVAL;
	}
	if (get_str(g, "core:datatype", dt, sizeof(dt), where, err, errlen) < 0)
		return -EINVAL;
	if (sigmf_datatype_parse(dt, &m->datatype) < 0) {
		size_t n = strlen(dt);

		errbuf_set(err, errlen, "%s: core:datatype '%s' is not supported (%s; chirp reads cf32_le, ci16_le and rf32_le)",
			   where, dt, n > 3 && strcmp(dt + n - 3, "_be") == 0 ? "big endian" : "unknown type");
		return -EINVAL;
	}
	j = json_object_get(g, "core:sample_rate");
	if (!j) {
		errbuf_set(err, errlen, "%s: core:sample_rate is missing", where);
		return -EINVAL;
	}
	if (!json_is_number(j) || !isfinite(json_number_value(j)) || json_number_value(j) <= 0) {
		errbuf_set(err, errlen, "%s: core:sample_rate must be a positive number", where);
		return -EINVAL;
	}
	m->sample_rate_hz = json_number_value(j);
	j = json_object_get(g, "core:version");
	if (!j || !json_is_string(j)) {
		errbuf_set(err, errlen, "%s: core:version is missing or not a string", where);
		return -EINVAL;
	}
	j = json_object_get(g, "core:num_channels");
	if (j && (!json_is_integer(j) || json_integer_value(j) != 1)) {
		errbuf_set(err, errlen, "%s: core:num_channels must be 1 (channels are laid out per CPI, see chirp:channels)",
			   where);
		return -EINVAL;
	}
	return 0;
}

/* chirp:channels, chirp:pulses and chirp:samples: all three or none, each
 * >= 1, and a CPI of at most 2^32 samples. */
static int parse_cpi_geometry(json_t *g, const char *where, struct sigmf_meta *m,
			      char *err, size_t errlen)
{
	static const char *const dims[3] = { "chirp:channels", "chirp:pulses", "chirp:samples" };
	uint64_t v[3];
	int have[3];

	for (int i = 0; i < 3; i++) {
		have[i] = get_uint(g, dims[i], SIGMF_MAX_DIM, &v[i], where, err, errlen);
		if (have[i] < 0)
			return -EINVAL;
		if (have[i] && v[i] == 0) {
			errbuf_set(err, errlen, "%s: %s must be >= 1", where, dims[i]);
			return -EINVAL;
		}
	}
	if (have[0] != have[1] || have[1] != have[2]) {
		errbuf_set(err, errlen, "%s: chirp:channels, chirp:pulses and chirp:samples go together (some are missing)",
			   where);
		return -EINVAL;
	}
	if (have[0]) {
		if (v[0] * v[1] * v[2] > (1ull << 32)) {
			errbuf_set(err, errlen, "%s: CPI of %" PRIu64 "x%" PRIu64 "x%" PRIu64 " samples is too large",
				   where, v[0], v[1], v[2]);
			return -EINVAL;
		}
		m->channels = (unsigned)v[0];
		m->pulses = (unsigned)v[1];
		m->samples = (unsigned)v[2];
	}
	return 0;
}

/* chirp:modes: an array of at most SIGMF_MAX_MODES {"id", "name"} objects,
 * ids distinct, names 1..31 characters. */
static int parse_mode_names(json_t *g, const char *where, struct sigmf_meta *m,
			    char *err, size_t errlen)
{
	json_t *arr = json_object_get(g, "chirp:modes"), *o;
	size_t i;

	if (!arr)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > SIGMF_MAX_MODES) {
		errbuf_set(err, errlen, "%s: chirp:modes must be an array of at most %d modes",
			   where, SIGMF_MAX_MODES);
		return -EINVAL;
	}
	json_array_foreach(arr, i, o) {
		struct sigmf_mode_name *mn = &m->modes[i];
		char w[340];
		uint64_t id;

		snprintf(w, sizeof(w), "%s: chirp:modes[%zu]", where, i);
		if (!json_is_object(o) || get_uint(o, "id", UINT32_MAX, &id, w, err, errlen) != 1 ||
		    get_str(o, "name", mn->name, sizeof(mn->name), w, err, errlen) != 1 ||
		    !mn->name[0]) {
			errbuf_set(err, errlen, "%s: want {\"id\": 0..4294967295, \"name\": 1 to %d characters}",
				   w, SIGMF_MODE_NAME_MAX - 1);
			return -EINVAL;
		}
		mn->id = (uint32_t)id;
		if (sigmf_mode_name(m, mn->id)) {
			errbuf_set(err, errlen, "%s: mode id %" PRIu32 " is given twice", w, mn->id);
			return -EINVAL;
		}
		m->nmodes++;
	}
	return 0;
}

static int parse_global(json_t *g, const char *name, struct sigmf_meta *m,
			char *err, size_t errlen)
{
	char where[300];

	snprintf(where, sizeof(where), "%s: global", name);
	if (parse_core(g, where, m, err, errlen) < 0)
		return -EINVAL;
	if (get_str(g, "core:description", m->description, sizeof(m->description), where, err, errlen) < 0 ||
	    get_str(g, "core:recorder", m->recorder, sizeof(m->recorder), where, err, errlen) < 0 ||
	    get_str(g, "chirp:output", m->output, sizeof(m->output), where, err, errlen) < 0)
		return -EINVAL;
	if (m->output[0] && strcmp(m->output, "input") && strcmp(m->output, "complex") &&
	    strcmp(m->output, "magnitude") && strcmp(m->output, "power_db")) {
		errbuf_set(err, errlen, "%s: chirp:output '%s' is not input, complex, magnitude or power_db",
			   where, m->output);
		return -EINVAL;
	}
	if (parse_cpi_geometry(g, where, m, err, errlen) < 0 ||
	    parse_mode_names(g, where, m, err, errlen) < 0)
		return -EINVAL;
	if (m->datatype == SIGMF_RF32_LE && !strcmp(m->output, "complex")) {
		errbuf_set(err, errlen, "%s: chirp:output complex needs a complex datatype, not rf32_le", where);
		return -EINVAL;
	}
	return 0;
}

static int parse_captures(json_t *caps, const char *name, struct sigmf_meta *m,
			  char *err, size_t errlen)
{
	size_t n = json_array_size(caps);
	int rc;

	if (n > SIGMF_MAX_CAPTURES) {
		errbuf_set(err, errlen, "%s: %zu captures (at most %u)", name, n, SIGMF_MAX_CAPTURES);
		return -EINVAL;
	}
	rc = sigmf_meta_reserve(m, n);
	if (rc < 0) {
		errbuf_set(err, errlen, "%s: out of memory for %zu captures", name, n);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(caps, i), *j;
		struct sigmf_capture c = { 0 };
		char where[300];
		uint64_t f = 0, mode;
		int hm;

		snprintf(where, sizeof(where), "%s: captures[%zu]", name, i);
		if (!json_is_object(o)) {
			errbuf_set(err, errlen, "%s: not an object", where);
			return -EINVAL;
		}
		if (get_uint(o, "core:sample_start", INT64_MAX, &c.sample_start, where, err, errlen) < 0 ||
		    get_uint(o, "chirp:seq", INT64_MAX, &c.seq, where, err, errlen) < 0 ||
		    get_uint(o, "chirp:first_sample", INT64_MAX, &c.first_sample, where, err, errlen) < 0 ||
		    get_uint(o, "chirp:flags", UINT32_MAX, &f, where, err, errlen) < 0)
			return -EINVAL;
		c.flags = (uint32_t)f;
		/* A capture without chirp:mode keeps the previous one's. */
		mode = i > 0 ? m->captures[i - 1].mode : 0;
		hm = get_uint(o, "chirp:mode", UINT32_MAX, &mode, where, err, errlen);
		if (hm < 0)
			return -EINVAL;
		m->has_modes |= hm;
		c.mode = (uint32_t)mode;
		/* likewise chirp:pointing (boresight before any) */
		if (i > 0) {
			c.pointing_az_deg = m->captures[i - 1].pointing_az_deg;
			c.pointing_el_deg = m->captures[i - 1].pointing_el_deg;
		}
		hm = get_pointing(o, &c.pointing_az_deg, &c.pointing_el_deg, where, err, errlen);
		if (hm < 0)
			return -EINVAL;
		m->has_pointing |= hm;
		if (i > 0 && c.sample_start <= m->captures[i - 1].sample_start) {
			errbuf_set(err, errlen, "%s: core:sample_start %" PRIu64 " does not increase (previous %" PRIu64 ")",
				   where, c.sample_start, m->captures[i - 1].sample_start);
			return -EINVAL;
		}
		j = json_object_get(o, "core:datetime");
		if (j) {
			if (!json_is_string(j) || sigmf_parse_datetime(json_string_value(j), &c.timestamp_ns) < 0) {
				errbuf_set(err, errlen, "%s: core:datetime is not an ISO 8601 UTC time like 2026-11-21T09:40:01.5Z",
					   where);
				return -EINVAL;
			}
		}
		m->captures[m->ncaptures++] = c;
	}
	return 0;
}

int sigmf_meta_parse(const char *text, size_t len, const char *name,
		     struct sigmf_meta *m, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = NULL, *g, *caps, *ann;
	int rc = -EINVAL;

	sigmf_meta_init(m);
	if (!name)
		name = "sigmf-meta";
	if (len > SIGMF_MAX_META_BYTES) {
		errbuf_set(err, errlen, "%s: %zu bytes of metadata (at most %u)", name, len, SIGMF_MAX_META_BYTES);
		return -EINVAL;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		errbuf_set(err, errlen, "%s:%d:%d: invalid JSON: %s", name, je.line, je.column, je.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		errbuf_set(err, errlen, "%s: top level is not a JSON object", name);
		goto out;
	}
	g = json_object_get(root, "global");
	if (!json_is_object(g)) {
		errbuf_set(err, errlen, "%s: \"global\" is missing or not an object", name);
		goto out;
	}
	caps = json_object_get(root, "captures");
	if (!json_is_array(caps)) {
		errbuf_set(err, errlen, "%s: \"captures\" is missing or not an array", name);
		goto out;
	}
	ann = json_object_get(root, "annotations");
	if (ann && !json_is_array(ann)) {
		errbuf_set(err, errlen, "%s: \"annotations\" is not an array", name);
		goto out;
	}
	rc = parse_global(g, name, m, err, errlen);
	if (rc < 0)
		goto out;
	rc = parse_captures(caps, name, m, err, errlen);
out:
	json_decref(root);
	if (rc < 0)
		sigmf_meta_free(m);
	return rc;
}

int sigmf_meta_read(const char *path, struct sigmf_meta *m, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t off = 0;
	int fd, rc;

	sigmf_meta_init(m);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "%s: fstat: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)SIGMF_MAX_META_BYTES) {
		rc = -EINVAL;
		errbuf_set(err, errlen, "%s: not a regular file of at most %u bytes", path, SIGMF_MAX_META_BYTES);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			errbuf_set(err, errlen, "%s: read: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		off += (size_t)r;
	}
	rc = sigmf_meta_parse(buf, off, path, m, err, errlen);
out:
	free(buf);
	close(fd);
	return rc;
}

int sigmf_check_data(const struct sigmf_meta *m, uint64_t data_bytes,
		     uint64_t cpi_samples_hint, char *err, size_t errlen)
{
	uint64_t sb = sigmf_datatype_bytes(m->datatype);
	uint64_t cpi = sigmf_cpi_samples(m), total;

	if (!cpi)
		cpi = cpi_samples_hint;
	if (data_bytes == 0) {
		errbuf_set(err, errlen, "data file is empty");
		return -EINVAL;
	}
	if (data_bytes % sb) {
		errbuf_set(err, errlen, "data is %" PRIu64 " bytes, not a whole number of %s samples (%" PRIu64 " bytes)",
			   data_bytes, sigmf_datatype_name(m->datatype), sb);
		return -EINVAL;
	}
	total = data_bytes / sb;
	if (cpi && total % cpi) {
		char dims[64] = "";

		if (m->channels)
			snprintf(dims, sizeof(dims), " (%ux%ux%u)", m->channels, m->pulses, m->samples);
		errbuf_set(err, errlen, "data is %" PRIu64 " samples, not a whole number of CPIs of %" PRIu64
			   " samples%s; truncated recording?", total, cpi, dims);
		return -EINVAL;
	}
	for (size_t i = 0; i < m->ncaptures; i++) {
		if (m->captures[i].sample_start >= total) {
			errbuf_set(err, errlen, "captures[%zu]: core:sample_start %" PRIu64 " is beyond the data (%" PRIu64 " samples)",
				   i, m->captures[i].sample_start, total);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The capture that CPI k (first sample `first`) falls in: the last one
 * starting at or before it; -1 before any. *c carries the search from one
 * CPI to the next (start at 0, CPIs in increasing order): linear in all.
 */
static long capture_at(const struct sigmf_meta *m, uint64_t first, size_t *c)
{
	/* captures are in increasing sample_start (checked on parse) */
	while (*c < m->ncaptures && m->captures[*c].sample_start <= first)
		(*c)++;
	return (long)*c - 1;
}

void sigmf_cpi_modes(const struct sigmf_meta *m, uint64_t cpi_samples, uint32_t *modes,
		     uint64_t ncpi)
{
	size_t c = 0;

	for (uint64_t k = 0; k < ncpi; k++) {
		long i = capture_at(m, k * cpi_samples, &c);

		modes[k] = i < 0 ? 0 : m->captures[i].mode;
	}
}

void sigmf_cpi_pointing(const struct sigmf_meta *m, uint64_t cpi_samples, float *az_deg,
			float *el_deg, uint64_t ncpi)
{
	size_t c = 0;

	for (uint64_t k = 0; k < ncpi; k++) {
		long i = capture_at(m, k * cpi_samples, &c);

		az_deg[k] = i < 0 ? 0.0f : m->captures[i].pointing_az_deg;
		el_deg[k] = i < 0 ? 0.0f : m->captures[i].pointing_el_deg;
	}
}
