/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.c — the version, defined once: chirpd and chirpctl print it,
 * `version` and `status` report it, and it keys the capacity cache (gen.c).
 */
#include "version.h"

/* The version every program of the tree reports (mk/install.mk reads it here). */
#ifndef CHIRP_VERSION
#define CHIRP_VERSION "0.2"
#endif

const char chirpd_version[] = CHIRP_VERSION;
