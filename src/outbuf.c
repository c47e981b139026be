/* SPDX-License-Identifier: Apache-2.0 */
/* outbuf.c — see outbuf.h. */
#include "outbuf.h"

#include <stdarg.h>
#include <stdio.h>

void outbuf_put(struct outbuf *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->off) {
		o->overflow = 1;
		return;
	}
	o->off += (size_t)n;
}
