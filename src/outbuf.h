/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outbuf.h — text appended into a caller's fixed buffer, printf-style, for
 * the HTTP bodies (metrics, the live view's frames). Once a piece does not
 * fit, overflow is set and every later piece is dropped, so a caller checks
 * once at the end and never serves a cut body.
 */
#ifndef CHIRP_OUTBUF_H
#define CHIRP_OUTBUF_H

#include <stddef.h>

struct outbuf {
	char *buf;
	size_t len;          /* bytes of buf                              */
	size_t off;          /* bytes written, always < len (a NUL ends it) */
	int overflow;        /* a piece did not fit: the text is incomplete */
};

/* Append printf(fmt, ...) at off, or set overflow and append nothing. */
void outbuf_put(struct outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* CHIRP_OUTBUF_H */
