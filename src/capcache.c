/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capcache.c — the start-up decisions' cache (capcache.h). Setup-time
 * only: it allocates and does file I/O, never on the data path.
 */
#include "capcache.h"
#include "errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct line {
	char key[CAPCACHE_MAX_KEY + 1];
	struct capcache_entry e;
};

static int key_ok(const char *key)
{
	size_t n = strlen(key);

	return n > 0 && n <= CAPCACHE_MAX_KEY && !strpbrk(key, "\t\n\r");
}

/* The shared figure's two fields (f[0], f[1]) into *e; 0, or -1. */
static int parse_shared(char *const f[2], struct capcache_entry *e)
{
	char *end;
	long long t;

	e->shared_cps = strtod(f[0], &end);
	if (*end || !isfinite(e->shared_cps) || !(e->shared_cps > 0))
		return -1;
	errno = 0;
	t = strtoll(f[1], &end, 10);
	if (errno || *end || t < 0)
		return -1;
	e->shared_measured_s = t;
	return 0;
}

/* One entry line (no newline) into *l: 4 fields, or 6 with the shared
 * figure; 0, or -1 if it does not parse. */
static int parse_line(char *s, struct line *l)
{
	char *f[6], *end, *save = NULL;
	unsigned long d;
	long long t;
	int n = 0;

	char *tok = strtok_r(s, "\t", &save);

	for (; tok && n < 6; tok = strtok_r(NULL, "\t", &save))
		f[n++] = tok;
	if ((n != 4 && n != 6) || tok || !key_ok(f[0]))   /* tok: a seventh field */
		return -1;
	l->e.shared_cps = 0;
	l->e.shared_measured_s = 0;
	if (n == 6 && parse_shared(f + 4, &l->e) < 0)
		return -1;
	errno = 0;
	d = strtoul(f[1], &end, 10);
	if (errno || *end || d < 1 || d > 64)
		return -1;
	l->e.capacity_cps = strtod(f[2], &end);
	if (*end || !isfinite(l->e.capacity_cps) || !(l->e.capacity_cps > 0))
		return -1;
	errno = 0;
	t = strtoll(f[3], &end, 10);
	if (errno || *end || t < 0)
		return -1;
	snprintf(l->key, sizeof(l->key), "%s", f[0]);
	l->e.depth = (unsigned)d;
	l->e.measured_s = t;
	return 0;
}

/*
 * Every entry of the file that parses, oldest first, into *out (n of them,
 * at most CAPCACHE_MAX_ENTRIES: the newest). 0 (an absent file is empty),
 * or a negative errno.
 */
static int read_all(const char *path, struct line **out, int *n, char *err, size_t errlen)
{
	struct line *v = calloc(CAPCACHE_MAX_ENTRIES + 1, sizeof(*v));
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int k = 0, lineno = 0;

	*out = v;
	*n = 0;
	if (!v)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		errbuf_set(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	while ((len = getline(&buf, &cap, f)) > 0) {
		if (buf[len - 1] == '\n')
			buf[--len] = '\0';
		/* another format or version: believe nothing in it */
		if (lineno++ == 0) {
			if (strcmp(buf, CAPCACHE_MAGIC) != 0)
				break;
			continue;
		}
		if ((size_t)len > CAPCACHE_MAX_KEY + 160 || parse_line(buf, &v[k]) != 0)
			continue;
		if (k == CAPCACHE_MAX_ENTRIES) {   /* keep the newest */
			memmove(v, v + 1, CAPCACHE_MAX_ENTRIES * sizeof(*v));
			k--;
		}
		k++;
	}
	free(buf);
	fclose(f);
	*n = k;
	return 0;
}

int capcache_lookup(const char *path, const char *key, struct capcache_entry *e, char *err,
		    size_t errlen)
{
	struct line *v;
	int n, rc, found = 0;

	rc = read_all(path, &v, &n, err, errlen);
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!strcmp(v[i].key, key)) {   /* the last one of a key wins */
			*e = v[i].e;
			found = 1;
		}
	}
	free(v);
	return rc < 0 ? rc : found;
}

/* Write n entries to path through a temporary file and a rename. */
static int write_all(const char *path, const struct line *v, int n, char *err, size_t errlen)
{
	char tmp[4096];
	FILE *f;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp)) {
		errbuf_set(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = -errno;
		errbuf_set(err, errlen, "%s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	fprintf(f, "%s\n", CAPCACHE_MAGIC);
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s\t%u\t%.3f\t%lld", v[i].key, v[i].e.depth, v[i].e.capacity_cps,
			(long long)v[i].e.measured_s);
		if (v[i].e.shared_cps > 0)
			fprintf(f, "\t%.3f\t%lld", v[i].e.shared_cps,
				(long long)v[i].e.shared_measured_s);
		fputc('\n', f);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0) {
		errbuf_set(err, errlen, "%s: %s", path, strerror(-rc));
		unlink(tmp);
	}
	return rc;
}

int capcache_store(const char *path, const char *key, const struct capcache_entry *e,
		   char *err, size_t errlen)
{
	struct line *v;
	int n, k = 0, rc;

	if (!key_ok(key)) {
		errbuf_set(err, errlen, "capacity cache key: empty, over %d bytes or with a tab "
			   "or newline", CAPCACHE_MAX_KEY);
		return -EINVAL;
	}
	if (e->depth < 1 || e->depth > 64 || !isfinite(e->capacity_cps) || !(e->capacity_cps > 0)) {
		errbuf_set(err, errlen, "capacity cache: depth %u, capacity %g: out of range",
			   e->depth, e->capacity_cps);
		return -EINVAL;
	}
	rc = read_all(path, &v, &n, err, errlen);
	if (rc < 0) {
		free(v);
		return rc;
	}
	for (int i = 0; i < n; i++)   /* drop the key's old entry */
		if (strcmp(v[i].key, key) != 0)
			v[k++] = v[i];
	if (k == CAPCACHE_MAX_ENTRIES) {
		memmove(v, v + 1, (CAPCACHE_MAX_ENTRIES - 1) * sizeof(*v));
		k--;
	}
	snprintf(v[k].key, sizeof(v[k].key), "%s", key);
	v[k].e = *e;
	if (!(v[k].e.shared_cps > 0) || !isfinite(v[k].e.shared_cps)) {
		v[k].e.shared_cps = 0;
		v[k].e.shared_measured_s = 0;
	}
	k++;
	rc = write_all(path, v, k, err, errlen);
	free(v);
	return rc;
}

int capcache_store_shared(const char *path, const char *key, double shared_cps,
			  int64_t shared_measured_s, char *err, size_t errlen)
{
	struct line *v;
	int n, rc, found = -1;

	if (!isfinite(shared_cps) || shared_cps < 0 || shared_measured_s < 0) {
		errbuf_set(err, errlen, "capacity cache: shared capacity %g: out of range",
			   shared_cps);
		return -EINVAL;
	}
	rc = read_all(path, &v, &n, err, errlen);
	for (int i = 0; rc == 0 && i < n; i++)   /* the last one of a key wins */
		if (!strcmp(v[i].key, key))
			found = i;
	if (rc == 0 && found < 0) {
		errbuf_set(err, errlen, "%s: no entry for this configuration (chirpd measures "
			   "and stores one at start)", path);
		rc = -ENOENT;
	}
	if (rc == 0) {
		v[found].e.shared_cps = shared_cps;
		v[found].e.shared_measured_s = shared_cps > 0 ? shared_measured_s : 0;
		rc = write_all(path, v, n, err, errlen);
	}
	free(v);
	return rc;
}
