/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errbuf.h — the one way core modules write a reason into a caller's
 * (err, errlen) buffer. libchirpring keeps its own copy in ring.c because it
 * links nothing from the core.
 */
#ifndef CHIRP_ERRBUF_H
#define CHIRP_ERRBUF_H

#include <stddef.h>

/* printf into err (truncated, always terminated); no-op if err is NULL or
 * errlen is 0. */
void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* CHIRP_ERRBUF_H */
