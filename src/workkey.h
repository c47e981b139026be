/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workkey.h — the configuration fields that decide the backend's work,
 * declared once.
 *
 * One table in workkey.c names every field of struct chirp_config that
 * changes how fast the backend runs a CPI (the CPI's shape and formats,
 * the device and how it is fed, [processing]'s tuning, the radar chain).
 * It drives three decisions of chirpd's generations (gen.c), so that a
 * field added to one cannot be forgotten in another:
 *   - the capacity cache's key (workkey_describe prints every field);
 *   - whether a reload keeps the measured capacity (WORKKEY_CAPACITY);
 *   - whether a reload keeps the depth streams = auto chose
 *     (WORKKEY_SHAPE).
 * Each entry says which comparisons take it; an entry in neither is in
 * the key only, and the table says why.
 */
#ifndef CHIRP_WORKKEY_H
#define CHIRP_WORKKEY_H

#include <stddef.h>

#include "config.h"

/* The comparisons an entry takes part in (a set of these bits). */
enum workkey_set {
	WORKKEY_SHAPE = 1u << 0,     /* the CPI's shape and device: a reload
					keeps the CUDA depth chosen before   */
	WORKKEY_CAPACITY = 1u << 1,  /* the backend's speed: a reload keeps
					the capacity measured before         */
};

/*
 * 1 if every field of the table in set (WORKKEY_* bits; an entry counts
 * when it has any of them) is equal in a and b, else 0. A field the
 * backend ignores in both (the Doppler keys without doppler, the CFAR
 * keys without cfar) is not compared.
 */
int workkey_same(const struct chirp_config *a, const struct chirp_config *b, unsigned set);

/* Bytes that hold any configuration's description, NUL included
 * (test_workkey checks one with every field at its widest). */
#define WORKKEY_DESC_MAX 4096

/*
 * Every field of the table (whatever its set) as "section.key=value",
 * separated by spaces, in table order, into buf (NUL-terminated when
 * len > 0). A field the backend ignores is left out, as workkey_same does.
 * Returns the length of the whole description, as snprintf does: a value
 * >= len means buf holds a truncated one, which must not be used as a key.
 */
size_t workkey_describe(const struct chirp_config *c, char *buf, size_t len);

/*
 * The table's entry i (0, 1, ... in table order): returns its name (as
 * workkey_describe prints it, "section.key") and its set in *set, or NULL
 * past the last entry. For tests that walk every entry.
 */
const char *workkey_field_at(size_t i, unsigned *set);

#endif /* CHIRP_WORKKEY_H */
