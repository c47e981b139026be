/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_hcopy.c — host copy bandwidth: one thread's memcpy against hcopy
 * (src/hcopy.h, what the CUDA backend's copy staging uses) with 1, 2, 4
 * and 8 threads, side by side in one run (a program that prints a table;
 * not a test).
 *
 *   bench_hcopy [--sizes MIB,...] [--threads N,...] [--runs N] [--nt] [--tsv]
 *
 * Per size (default 4, 16 and 64 MiB: a 4x128x4096 cf32 CPI is 16 MiB), B
 * source/destination pairs are allocated and written once (every page
 * faulted in before timing), B such that they hold at least 128 MiB
 * together (2..16 pairs), and copies rotate through them, so the last-level
 * cache does not flatter any column. The columns take turns copy by copy
 * (memcpy, hcopy x1, x2, ...), so drift in the machine's load hits all
 * alike. After 2 warm-up copies each, N copies (default 21) are timed one
 * by one; the table gives the median as GB/s of bytes copied (each byte is
 * read once and written once, so memory traffic is at least twice that).
 *
 * Threads beyond the machine's cores only add wake-ups: hcopy's caller takes
 * every slice a sleeping worker has not claimed, so such columns show the
 * hand-off's cost, not more bandwidth.
 *
 * --nt adds, per thread count, a column of hcopy with non-temporal stores
 * (hcopy_set_nt: "nt xN"), taking turns with the others.
 *
 * TSV (--tsv): size_MiB method threads median_GB/s min_GB/s max_GB/s
 * (method memcpy, hcopy or hcopy_nt)
 */
#include "bench.h"
#include "hcopy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THR    8             /* thread counts                         */
#define MAX_COLS   (1 + 2 * MAX_THR)   /* memcpy + hcopy (+ nt) per count */
#define MAX_SIZES  8
#define FOOTPRINT  (128u << 20)  /* bytes of src + dst pairs, at least    */

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_hcopy [--sizes MIB,...] [--threads N,...] [--runs N] [--nt] [--tsv]\n");
}

/* "4,16,64" -> v[]; returns the count, -1 on a bad list. */
static int parse_list(const char *s, unsigned *v, int max, unsigned lo, unsigned hi)
{
	int n = 0;

	while (*s) {
		char *end;
		unsigned long x;

		errno = 0;
		x = strtoul(s, &end, 10);
		if (errno || end == s || x < lo || x > hi || n == max)
			return -1;
		v[n++] = (unsigned)x;
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned sizes[MAX_SIZES] = { 4, 16, 64 }, threads[MAX_THR] = { 1, 2, 4, 8 };
	int nsizes = 3, nthreads = 4, ncols, runs = 21, tsv = 0, nt = 0, rc = 1;
	struct hcopy *hc[MAX_COLS - 1] = { 0 };
	double *t = NULL;
	char err[160];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
			nsizes = parse_list(argv[++i], sizes, MAX_SIZES, 1, 4096);
			if (nsizes < 1) {
				fprintf(stderr, "bench_hcopy: --sizes: 1 to %d sizes in MiB, 1..4096\n", MAX_SIZES);
				return 2;
			}
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			nthreads = parse_list(argv[++i], threads, MAX_THR, 1, HCOPY_MAX_THREADS);
			if (nthreads < 1) {
				fprintf(stderr, "bench_hcopy: --threads: 1 to %d counts, 1..%u\n",
					MAX_THR, HCOPY_MAX_THREADS);
				return 2;
			}
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
			if (runs < 1 || runs > 100000) {
				fprintf(stderr, "bench_hcopy: --runs: 1..100000\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--nt")) {
			nt = 1;
		} else if (!strcmp(argv[i], "--tsv")) {
			tsv = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	/* Columns: memcpy, hcopy per count, then (--nt) hcopy nt per count. */
	ncols = nthreads * (nt ? 2 : 1);
	for (int k = 0; k < ncols; k++) {
		hc[k] = hcopy_create(threads[k % nthreads], err, sizeof(err));
		if (!hc[k]) {
			fprintf(stderr, "bench_hcopy: %s\n", err);
			goto out;
		}
		hcopy_set_nt(hc[k], k >= nthreads);
	}
	t = malloc(sizeof(*t) * (size_t)runs * (size_t)(ncols + 1));
	if (!t) {
		fprintf(stderr, "bench_hcopy: out of memory\n");
		goto out;
	}

	if (!tsv) {
		printf("bench_hcopy: GB/s of bytes copied, median of %d copies per cell; "
		       "%ld online cpus\n", runs, sysconf(_SC_NPROCESSORS_ONLN));
		printf("%-8s %6s %9s", "size", "pairs", "memcpy");
		for (int k = 0; k < ncols; k++) {
			char h[16];

			snprintf(h, sizeof(h), "%s x%u", k < nthreads ? "hcopy" : "nt", threads[k % nthreads]);
			printf(" %9s", h);
		}
		printf(" %8s\n", "best/mc");
	}
	for (int si = 0; si < nsizes; si++) {
		size_t bytes = (size_t)sizes[si] << 20;
		unsigned pairs = (unsigned)((FOOTPRINT / 2 + bytes - 1) / bytes);
		char **src, **dst;
		double med[MAX_COLS], best = 0.0;
		int ok = 1;

		pairs = pairs < 2 ? 2 : pairs > 16 ? 16 : pairs;
		src = calloc(pairs, sizeof(*src));
		dst = calloc(pairs, sizeof(*dst));
		if (!src || !dst) {
			free(src);
			free(dst);
			fprintf(stderr, "bench_hcopy: out of memory\n");
			goto out;
		}
		for (unsigned p = 0; p < pairs && ok; p++) {
			src[p] = malloc(bytes);
			dst[p] = malloc(bytes);
			if (!src[p] || !dst[p]) {
				fprintf(stderr, "bench_hcopy: %u x 2 x %u MiB: out of memory\n",
					pairs, sizes[si]);
				ok = 0;
				break;
			}
			memset(src[p], 0x5a + (int)p, bytes);   /* fault every page in */
			memset(dst[p], 0, bytes);
		}
		if (ok) {
			unsigned next = 0;

			for (int r = -2; r < runs; r++) {
				for (int col = 0; col <= ncols; col++) {
					unsigned p = next++ % pairs;
					double t0 = now_s(), dt;

					if (col == 0)
						memcpy(dst[p], src[p], bytes);
					else if (hcopy_run(hc[col - 1], dst[p], src[p], bytes) < 0)
						ok = 0;
					dt = now_s() - t0;
					if (r >= 0)
						t[(size_t)col * runs + r] = dt;
				}
			}
			/* Nothing may compile the copies away. */
			if (dst[0][bytes - 1] != src[0][bytes - 1])
				ok = 0;
		}
		if (ok) {
			for (int col = 0; col <= ncols; col++) {
				double *c = t + (size_t)col * runs;

				qsort(c, (size_t)runs, sizeof(*c), cmp_d);
				med[col] = bytes / c[runs / 2] * 1e-9;
				if (col > 0 && med[col] > best)
					best = med[col];
				if (tsv)
					printf("%u\t%s\t%u\t%.2f\t%.2f\t%.2f\n", sizes[si],
					       col == 0 ? "memcpy" : col <= nthreads ? "hcopy" : "hcopy_nt",
					       col ? threads[(col - 1) % nthreads] : 1,
					       med[col], bytes / c[runs - 1] * 1e-9, bytes / c[0] * 1e-9);
			}
			if (!tsv) {
				char sz[16];

				snprintf(sz, sizeof(sz), "%u MiB", sizes[si]);
				printf("%-8s %6u", sz, pairs);
				for (int col = 0; col <= ncols; col++)
					printf(" %9.2f", med[col]);
				printf(" %7.2fx\n", best / med[0]);
			}
		}
		for (unsigned p = 0; p < pairs; p++) {
			free(src[p]);
			free(dst[p]);
		}
		free(src);
		free(dst);
		if (!ok) {
			fprintf(stderr, "bench_hcopy: %u MiB: copy failed\n", sizes[si]);
			goto out;
		}
	}
	rc = 0;
out:
	for (int k = 0; k < MAX_COLS - 1; k++)
		hcopy_destroy(hc[k]);
	free(t);
	return rc;
}
