/* SPDX-License-Identifier: Apache-2.0 */
/*
 * array.c — element positions and channel calibration (array.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "errbuf.h"

struct array {
	unsigned channels;
	double *pos;                 /* 3 x C: x, y, z per channel, metres   */
	double *cal;                 /* 2 x C: g_c (re, im)                  */
	int has_cal;
};

static struct array *array_alloc(unsigned channels, char *err, size_t errlen)
{
	struct array *a;

	if (channels < 1 || channels > ARRAY_MAX_CHANNELS) {
		errbuf_set(err, errlen, "channels %u: must be 1..%u", channels, ARRAY_MAX_CHANNELS);
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (a) {
		a->pos = calloc(3 * (size_t)channels, sizeof(*a->pos));
		a->cal = calloc(2 * (size_t)channels, sizeof(*a->cal));
	}
	if (!a || !a->pos || !a->cal) {
		array_destroy(a);
		errbuf_set(err, errlen, "out of memory for an array of %u channels", channels);
		return NULL;
	}
	a->channels = channels;
	for (unsigned c = 0; c < channels; c++)
		a->cal[2 * c] = 1.0;
	return a;
}

void array_destroy(struct array *a)
{
	if (!a)
		return;
	free(a->pos);
	free(a->cal);
	free(a);
}

struct array *array_create_ula(unsigned channels, double spacing_m, char *err, size_t errlen)
{
	struct array *a;

	if (channels >= 1 && channels <= ARRAY_MAX_CHANNELS &&
	    !(spacing_m > 0.0 && spacing_m * channels <= ARRAY_MAX_EXTENT_M)) {
		errbuf_set(err, errlen, "spacing_m %g: must be > 0 and at most %g / %u channels",
			   spacing_m, ARRAY_MAX_EXTENT_M, channels);
		return NULL;
	}
	a = array_alloc(channels, err, errlen);
	if (!a)
		return NULL;
	for (unsigned c = 0; c < channels; c++)
		a->pos[3 * c] = (c - (channels - 1) / 2.0) * spacing_m;
	return a;
}

/*
 * The table both files share: rows of ncols numbers, one row per channel.
 * Fills val[row * ncols + col] and line[row] (1-based line numbers), or
 * returns -EINVAL with "name:LINE: reason". Only the count and the form of
 * the numbers are checked here; what a value means is the caller's.
 */
#define MAX_COLS 3
static int parse_table(const char *text, size_t len, const char *name, unsigned ncols,
		       const char *const *colname, unsigned rows, double *val, unsigned *line,
		       char *err, size_t errlen)
{
	unsigned row = 0, lineno = 0;
	size_t i = 0;

	while (i < len) {
		size_t end = i, stop;
		char buf[512], *p, *q;
		unsigned n = 0;

		while (end < len && text[end] != '\n')
			end++;
		lineno++;
		stop = end;
		for (size_t k = i; k < end; k++) {
			if (text[k] == '#') {
				stop = k;
				break;
			}
		}
		if (stop - i >= sizeof(buf)) {
			errbuf_set(err, errlen, "%s:%u: line longer than %zu characters", name, lineno,
				   sizeof(buf) - 1);
			return -EINVAL;
		}
		if (memchr(text + i, '\0', stop - i)) {
			errbuf_set(err, errlen, "%s:%u: a NUL byte (not a text file)", name, lineno);
			return -EINVAL;
		}
		memcpy(buf, text + i, stop - i);
		buf[stop - i] = '\0';
		i = end + 1;
		p = buf;
		for (;;) {
			double v;

			while (*p == ' ' || *p == '\t' || *p == '\r')
				p++;
			if (!*p)
				break;
			if (n == ncols) {
				errbuf_set(err, errlen, "%s:%u: more than %u numbers (expected %s%s%s%s%s)",
					   name, lineno, ncols, colname[0], ncols > 1 ? " " : "",
					   ncols > 1 ? colname[1] : "", ncols > 2 ? " " : "",
					   ncols > 2 ? colname[2] : "");
				return -EINVAL;
			}
			errno = 0;
			v = strtod(p, &q);
			if (q == p || (*q && *q != ' ' && *q != '\t' && *q != '\r')) {
				size_t w = strcspn(p, " \t\r");

				errbuf_set(err, errlen, "%s:%u: %s: '%.*s' is not a number", name, lineno,
					   colname[n], (int)(w > 32 ? 32 : w), p);
				return -EINVAL;
			}
			if (!isfinite(v)) {
				errbuf_set(err, errlen, "%s:%u: %s: %.*s is not finite", name, lineno,
					   colname[n], (int)(q - p > 32 ? 32 : q - p), p);
				return -EINVAL;
			}
			if (row < rows)
				val[row * ncols + n] = v;
			n++;
			p = q;
		}
		if (n == 0)
			continue;
		if (n < ncols) {
			errbuf_set(err, errlen, "%s:%u: %u number%s, expected %u (%s%s%s%s%s)", name,
				   lineno, n, n == 1 ? "" : "s", ncols, colname[0], ncols > 1 ? " " : "",
				   ncols > 1 ? colname[1] : "", ncols > 2 ? " " : "",
				   ncols > 2 ? colname[2] : "");
			return -EINVAL;
		}
		if (row == rows) {
			errbuf_set(err, errlen, "%s:%u: more lines than the %u channels", name, lineno,
				   rows);
			return -EINVAL;
		}
		line[row++] = lineno;
	}
	if (row < rows) {
		errbuf_set(err, errlen, "%s:%u: %u line%s, expected one per channel (%u)", name,
			   lineno, row, row == 1 ? "" : "s", rows);
		return -EINVAL;
	}
	return 0;
}

static const char *const pos_cols[] = { "x_m", "y_m", "z_m" };
static const char *const cal_cols[] = { "gain", "phase_deg" };

/* Positions: each within the extent, no two elements at one place (their
 * channels would be indistinguishable to every beam). O(C^2), at setup. */
static int check_positions(const double *pos, const unsigned *line, unsigned C, const char *name,
			   char *err, size_t errlen)
{
	for (unsigned c = 0; c < C; c++) {
		for (unsigned k = 0; k < 3; k++) {
			if (fabs(pos[3 * c + k]) > ARRAY_MAX_EXTENT_M) {
				errbuf_set(err, errlen, "%s:%u: %s %g: beyond +-%g m", name, line[c],
					   pos_cols[k], pos[3 * c + k], ARRAY_MAX_EXTENT_M);
				return -EINVAL;
			}
		}
		for (unsigned o = 0; o < c; o++) {
			if (pos[3 * c] == pos[3 * o] && pos[3 * c + 1] == pos[3 * o + 1] &&
			    pos[3 * c + 2] == pos[3 * o + 2]) {
				errbuf_set(err, errlen,
					   "%s:%u: channel %u at the same position as channel %u (line %u)",
					   name, line[c], c, o, line[o]);
				return -EINVAL;
			}
		}
	}
	return 0;
}

struct array *array_parse(const char *text, size_t len, const char *name, unsigned channels,
			  char *err, size_t errlen)
{
	struct array *a = array_alloc(channels, err, errlen);
	unsigned *line = NULL;

	if (!a)
		return NULL;
	line = calloc(channels, sizeof(*line));
	if (!line) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	if (parse_table(text, len, name, 3, pos_cols, channels, a->pos, line, err, errlen) < 0 ||
	    check_positions(a->pos, line, channels, name, err, errlen) < 0)
		goto fail;
	free(line);
	return a;
fail:
	free(line);
	array_destroy(a);
	return NULL;
}

struct array *array_create_xyz(unsigned channels, const double *xyz, const double *cal, char *err,
				size_t errlen)
{
	struct array *a = array_alloc(channels, err, errlen);
	unsigned *line = NULL;

	if (!a)
		return NULL;
	line = calloc(channels, sizeof(*line));
	if (!line) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	for (unsigned c = 0; c < channels; c++) {
		line[c] = c;
		for (unsigned k = 0; k < 3; k++) {
			if (!isfinite(xyz[3 * c + k])) {
				errbuf_set(err, errlen, "positions:%u: %s %g is not finite", c, pos_cols[k],
					   xyz[3 * c + k]);
				goto fail;
			}
			a->pos[3 * c + k] = xyz[3 * c + k];
		}
	}
	if (check_positions(a->pos, line, channels, "positions", err, errlen) < 0)
		goto fail;
	for (unsigned c = 0; cal && c < channels; c++) {
		double g2 = cal[2 * c] * cal[2 * c] + cal[2 * c + 1] * cal[2 * c + 1];

		if (!isfinite(g2) || !(g2 > 0.0)) {
			errbuf_set(err, errlen, "calibration of channel %u: |g| must be finite and > 0", c);
			goto fail;
		}
		a->cal[2 * c] = cal[2 * c];
		a->cal[2 * c + 1] = cal[2 * c + 1];
	}
	a->has_cal = cal != NULL;
	free(line);
	return a;
fail:
	free(line);
	array_destroy(a);
	return NULL;
}

/* The whole of a small text file, malloc'd, into *buf / *len. */
static int read_small_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	size_t got = 0;
	int fd, rc = 0;

	*buf = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "%s: fstat: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)ARRAY_MAX_FILE_BYTES) {
		rc = -EINVAL;
		errbuf_set(err, errlen, "%s: not a regular file of at most %u bytes", path,
			   ARRAY_MAX_FILE_BYTES);
		goto out;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			errbuf_set(err, errlen, "%s: read: %s", path,
				   n < 0 ? strerror(errno) : "file shrank while read");
			goto out;
		}
		got += (size_t)n;
	}
	*len = got;
out:
	close(fd);
	if (rc < 0) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

struct array *array_load(const char *path, unsigned channels, char *err, size_t errlen)
{
	struct array *a = NULL;
	char *buf;
	size_t len;

	if (read_small_file(path, &buf, &len, err, errlen) == 0)
		a = array_parse(buf, len, path, channels, err, errlen);
	free(buf);
	return a;
}

int array_cal_parse(struct array *a, const char *text, size_t len, const char *name, char *err,
		    size_t errlen)
{
	unsigned C = a->channels, *line = calloc(C, sizeof(*line));
	double *gp = calloc(2 * (size_t)C, sizeof(*gp));
	int rc = -ENOMEM;

	if (!line || !gp) {
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	rc = parse_table(text, len, name, 2, cal_cols, C, gp, line, err, errlen);
	if (rc < 0)
		goto out;
	for (unsigned c = 0; c < C; c++) {
		/* A channel of zero gain hears nothing: no weight restores it,
		 * and dividing by it would blow its noise up without bound. */
		if (!(gp[2 * c] > 0.0)) {
			errbuf_set(err, errlen, "%s:%u: gain %g: must be > 0 (linear amplitude)", name,
				   line[c], gp[2 * c]);
			rc = -EINVAL;
			goto out;
		}
	}
	for (unsigned c = 0; c < C; c++) {
		double ph = gp[2 * c + 1] * (M_PI / 180.0);

		a->cal[2 * c] = gp[2 * c] * cos(ph);
		a->cal[2 * c + 1] = gp[2 * c] * sin(ph);
	}
	a->has_cal = 1;
	rc = 0;
out:
	free(line);
	free(gp);
	return rc;
}

int array_cal_load(struct array *a, const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	int rc = read_small_file(path, &buf, &len, err, errlen);

	if (rc == 0)
		rc = array_cal_parse(a, buf, len, path, err, errlen);
	free(buf);
	return rc;
}

unsigned array_channels(const struct array *a)
{
	return a->channels;
}

void array_position(const struct array *a, unsigned c, double xyz[3])
{
	memcpy(xyz, a->pos + 3 * (size_t)c, 3 * sizeof(double));
}

void array_cal(const struct array *a, unsigned c, double g[2])
{
	g[0] = a->cal[2 * (size_t)c];
	g[1] = a->cal[2 * (size_t)c + 1];
}

int array_has_cal(const struct array *a)
{
	return a->has_cal;
}
