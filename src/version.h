/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.h — the version every program of the tree reports (chirpd,
 * chirpctl, the capacity cache's key), defined once in version.c.
 */
#ifndef CHIRP_VERSION_H
#define CHIRP_VERSION_H

extern const char chirpd_version[];

#endif /* CHIRP_VERSION_H */
