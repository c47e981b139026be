/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workkey.c — the configuration fields that decide the backend's work
 * (see workkey.h).
 *
 * wk_tab[] below is the only list of them. Each entry names a field by its
 * configuration key, says where its value lives in struct chirp_config
 * (the type is taken from the field itself, so an entry cannot read a
 * field as the wrong type), when the backend uses it, and which of
 * chirpd's comparisons take it. The capacity cache's key prints every
 * entry, so it is the widest: an entry missing from a comparison is there
 * on purpose, and the comment above it says why.
 */
#include "workkey.h"
#include "radar.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum wk_kind { WK_INT, WK_UINT, WK_SIZE, WK_STR, WK_DERIVED };

/* When the backend uses a field: a field it ignores in both of two
 * configurations is not compared, nor printed. */
enum wk_when {
	WK_ALWAYS,
	WK_IF_DOPPLER,               /* [doppler] enable = true               */
	WK_IF_CFAR,                  /* [cfar] enable = true (needs doppler)  */
	WK_IF_BEAMS,                 /* [beams] mode not off                  */
};

struct wk_field {
	const char *name;            /* "section.key" of the key that sets it */
	enum wk_kind kind;
	size_t off;                  /* WK_DERIVED: unused                    */
	unsigned (*derive)(const struct chirp_config *c);   /* WK_DERIVED     */
	enum wk_when when;
	unsigned set;                /* WORKKEY_* bits: 0 = the key only      */
};

/* The kind from the field's own type (enums are compatible with int or
 * unsigned; a char array decays to char *). A field of any other type is
 * a compile error: give it a kind first. */
#define KIND(f) _Generic(((struct chirp_config *)0)->f, \
	int: WK_INT, unsigned: WK_UINT, size_t: WK_SIZE, char *: WK_STR)
#define FIELD(name, f, when, set) \
	{ name, KIND(f), offsetof(struct chirp_config, f), NULL, when, set }
#define DERIVED(name, fn, when, set) { name, WK_DERIVED, 0, fn, when, set }

#define SHAPE    WORKKEY_SHAPE
#define CAPACITY WORKKEY_CAPACITY
#define BOTH     (WORKKEY_SHAPE | WORKKEY_CAPACITY)

/* Nd as the backend computes it (radar_doppler_nfft): "auto" and the
 * length it picks are the same work. The plan (plan.c) compares works
 * through this table, so this file asks the radar module, not the plan. */
static unsigned doppler_nfft(const struct chirp_config *c)
{
	return c->doppler ? radar_doppler_nfft(c->pulses, c->mti, c->doppler_fft) : 0;
}

static const struct wk_field wk_tab[] = {
	/* The CPI: shape, formats, device and how it is fed. */
	FIELD("cpi.channels", channels, WK_ALWAYS, BOTH),
	FIELD("cpi.pulses", pulses, WK_ALWAYS, BOTH),
	FIELD("cpi.samples", samples, WK_ALWAYS, BOTH),
	FIELD("input.format", format, WK_ALWAYS, BOTH),
	FIELD("output.mode", out_mode, WK_ALWAYS, BOTH),
	FIELD("processing.gpu", gpu, WK_ALWAYS, BOTH),
	FIELD("processing.busy_poll", busy_poll, WK_ALWAYS, BOTH),
	FIELD("processing.staging", staging, WK_ALWAYS, BOTH),
	FIELD("processing.idle_spin_us", idle_spin_us, WK_ALWAYS, BOTH),
	FIELD("processing.staging_threads", staging_threads, WK_ALWAYS, BOTH),
	/* The backend and the FFT length as configured (auto or forced): not
	 * for the capacity, which compares what the pc chose (gen.c
	 * same_work: pc_info's backend and nfft) so that naming the choice
	 * auto made keeps it. The bus id needs a restart, so a reload never
	 * changes it. */
	FIELD("processing.backend", backend, WK_ALWAYS, SHAPE),
	FIELD("processing.gpu_bus_id", gpu_bus_id, WK_ALWAYS, SHAPE),
	FIELD("processing.nfft", nfft, WK_ALWAYS, SHAPE),
	/* The depth as configured: the key only. The shape test exists to
	 * keep streams = auto's depth, and the capacity compares the depth
	 * the pc runs (pc_info.depth). */
	FIELD("processing.streams", streams, WK_ALWAYS, 0),
	/* The CPU backend's threads and the tuning (struct pc_tuning): the
	 * speed, not the CPI's shape, so not for the depth choice. */
	FIELD("processing.cpu_threads", cpu_threads, WK_ALWAYS, CAPACITY),
	FIELD("processing.fftw_planner", fftw_planner, WK_ALWAYS, CAPACITY),
	FIELD("processing.fftw_wisdom", fftw_wisdom, WK_ALWAYS, CAPACITY),
	FIELD("processing.takeover", takeover, WK_ALWAYS, CAPACITY),
	FIELD("processing.cpu_block_kib", cpu_block_kib, WK_ALWAYS, CAPACITY),
	FIELD("processing.cuda_graphs", cuda_graphs, WK_ALWAYS, CAPACITY),
	FIELD("processing.cuda_chunks", cuda_chunks, WK_ALWAYS, CAPACITY),
	FIELD("processing.cuda_idle_chunks", cuda_idle_chunks, WK_ALWAYS, CAPACITY),
	FIELD("processing.cuda_spin_us", cuda_spin_us, WK_ALWAYS, CAPACITY),
	FIELD("processing.staging_nt", staging_nt, WK_ALWAYS, CAPACITY),
	FIELD("processing.cuda_fused", cuda_fused, WK_ALWAYS, CAPACITY),
	/* The radar chain: the map's shape and the CFAR's window and method. */
	FIELD("doppler.enable", doppler, WK_ALWAYS, BOTH),
	FIELD("doppler.mti", mti, WK_IF_DOPPLER, BOTH),
	DERIVED("doppler.fft", doppler_nfft, WK_IF_DOPPLER, BOTH),
	FIELD("cfar.enable", cfar, WK_ALWAYS, BOTH),
	FIELD("cfar.method", cfar_method, WK_IF_CFAR, BOTH),
	FIELD("cfar.integrate", cfar_integrate, WK_IF_CFAR, BOTH),
	FIELD("cfar.guard_range", guard_range, WK_IF_CFAR, BOTH),
	FIELD("cfar.guard_doppler", guard_doppler, WK_IF_CFAR, BOTH),
	FIELD("cfar.train_range", train_range, WK_IF_CFAR, BOTH),
	FIELD("cfar.train_doppler", train_doppler, WK_IF_CFAR, BOTH),
	/* The key only: the rank, the maxima and the list size change the
	 * thresholds and the records, not the work of a CPI, so a reload
	 * that changes them keeps the capacity; the cache, which outlives a
	 * configuration, measures such a one afresh all the same. pfa is in
	 * neither: it is a number the thresholds are scaled by. */
	FIELD("cfar.os_rank", os_rank, WK_IF_CFAR, 0),
	FIELD("cfar.maxima_range", maxima_range, WK_IF_CFAR, 0),
	FIELD("cfar.maxima_doppler", maxima_doppler, WK_IF_CFAR, 0),
	FIELD("cfar.max_detections", max_detections, WK_IF_CFAR, 0),
	/* Beams: formed or not, conventional or adaptive, and how many (B
	 * rows through the chain, B maps: the output's geometry). The
	 * directions, the taper and the array change the weights, not the
	 * work: a reload keeps the capacity. */
	FIELD("beams.mode", beams_mode, WK_ALWAYS, BOTH),
	FIELD("beams.count", beams_count, WK_IF_BEAMS, BOTH),
};

#define WK_N (sizeof(wk_tab) / sizeof(wk_tab[0]))

static int used(const struct wk_field *f, const struct chirp_config *c)
{
	switch (f->when) {
	case WK_IF_DOPPLER:
		return c->doppler != 0;
	case WK_IF_CFAR:
		return c->cfar != 0;
	case WK_IF_BEAMS:
		return c->beams_mode != PC_BEAMS_OFF;
	case WK_ALWAYS:
		break;
	}
	return 1;
}

static const void *at(const struct wk_field *f, const struct chirp_config *c)
{
	return (const char *)c + f->off;
}

static int field_same(const struct wk_field *f, const struct chirp_config *a,
		      const struct chirp_config *b)
{
	switch (f->kind) {
	case WK_INT:
		return *(const int *)at(f, a) == *(const int *)at(f, b);
	case WK_UINT:
		return *(const unsigned *)at(f, a) == *(const unsigned *)at(f, b);
	case WK_SIZE:
		return *(const size_t *)at(f, a) == *(const size_t *)at(f, b);
	case WK_STR:
		return strcmp(at(f, a), at(f, b)) == 0;
	case WK_DERIVED:
		return f->derive(a) == f->derive(b);
	}
	return 0;
}

int workkey_same(const struct chirp_config *a, const struct chirp_config *b, unsigned set)
{
	for (size_t i = 0; i < WK_N; i++) {
		const struct wk_field *f = &wk_tab[i];

		if (!(f->set & set) || (!used(f, a) && !used(f, b)))
			continue;
		if (used(f, a) != used(f, b) || !field_same(f, a, b))
			return 0;
	}
	return 1;
}

/* vsnprintf at buf + *o, counting in *o what did not fit too. */
__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + (*o < len ? *o : len), *o < len ? len - *o : 0, fmt, ap);
	va_end(ap);
	*o += n > 0 ? (size_t)n : 0;
}

/* " section.key=value" (no space before the first) at buf + *o. */
static void field_print(const struct wk_field *f, const struct chirp_config *c, char *buf,
			size_t len, size_t *o)
{
	const char *sep = *o ? " " : "";

	switch (f->kind) {
	case WK_INT:
		append(buf, len, o, "%s%s=%d", sep, f->name, *(const int *)at(f, c));
		break;
	case WK_UINT:
		append(buf, len, o, "%s%s=%u", sep, f->name, *(const unsigned *)at(f, c));
		break;
	case WK_SIZE:
		append(buf, len, o, "%s%s=%zu", sep, f->name, *(const size_t *)at(f, c));
		break;
	case WK_STR:
		append(buf, len, o, "%s%s=%s", sep, f->name, (const char *)at(f, c));
		break;
	case WK_DERIVED:
		append(buf, len, o, "%s%s=%u", sep, f->name, f->derive(c));
		break;
	}
}

size_t workkey_describe(const struct chirp_config *c, char *buf, size_t len)
{
	size_t o = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < WK_N; i++)
		if (used(&wk_tab[i], c))
			field_print(&wk_tab[i], c, buf, len, &o);
	return o;
}

const char *workkey_field_at(size_t i, unsigned *set)
{
	if (i >= WK_N)
		return NULL;
	if (set)
		*set = wk_tab[i].set;
	return wk_tab[i].name;
}
