/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capcache.h — chirpd's start-up decisions (the pipeline depth that
 * streams = auto picks and the capacity that slots = auto sizes the rings
 * by), kept per machine and configuration in a small file so that a
 * restart makes the same ones instead of measuring again on a host whose
 * copy engines and scheduler swing from one second to the next.
 *
 * A KEY names everything the figures depend on (chirpd's version and
 * build, the device with its driver, the CPI geometry and formats, the
 * filters' length and count, the FFT size, the staging, the radar chain):
 * a key that differs in any of them is a different entry, so a new GPU,
 * driver, geometry or build measures afresh. The caller builds the key.
 *
 * The figure alone is what one chirpd sustains with the host to itself;
 * the shared one is what it sustains while every instance of the host is
 * saturated at once (they share the host's copy path and memory). The
 * shared figure belongs to its entry: a new measurement of the key (a
 * store) drops it, and a key that changes leaves it behind with the rest.
 *
 * FILE
 *   A text file, first line CAPCACHE_MAGIC, then one entry per line:
 *   KEY <TAB> depth <TAB> capacity_cpi_per_s <TAB> unix time measured,
 *   and when the host was calibrated (chirpd-calibrate-host) two more
 *   fields: <TAB> shared capacity_cpi_per_s <TAB> unix time calibrated.
 *   At most CAPCACHE_MAX_ENTRIES, the newest kept. The file is written
 *   whole to a temporary name and renamed over the old one, so a reader
 *   never sees half of it; it is untrusted on reading: a line that does
 *   not parse is skipped, never believed.
 */
#ifndef CHIRP_CAPCACHE_H
#define CHIRP_CAPCACHE_H

#include <stddef.h>
#include <stdint.h>

#define CAPCACHE_MAGIC "chirpd-capacity-cache 1"
#define CAPCACHE_MAX_ENTRIES 64
#define CAPCACHE_MAX_KEY 1024

struct capcache_entry {
	unsigned depth;              /* 1..64                               */
	double capacity_cps;         /* CPIs per second, > 0                */
	int64_t measured_s;          /* CLOCK_REALTIME seconds when measured */
	double shared_cps;           /* with the host's instances saturated at
					once, CPIs per second; 0: not calibrated */
	int64_t shared_measured_s;   /* CLOCK_REALTIME seconds when calibrated */
};

/*
 * Look key up in the file at path. Returns 1 with *e filled, 0 when the
 * file or the entry does not exist, or a negative errno when the file
 * cannot be read (with the reason in err).
 */
int capcache_lookup(const char *path, const char *key, struct capcache_entry *e, char *err,
		    size_t errlen);

/*
 * Store e under key (replacing an entry of that key), keeping at most
 * CAPCACHE_MAX_ENTRIES (the oldest go). Returns 0, or a negative errno with
 * the reason in err (the file is then unchanged). A key holding a tab, a
 * newline or over CAPCACHE_MAX_KEY bytes is -EINVAL.
 */
int capcache_store(const char *path, const char *key, const struct capcache_entry *e,
		   char *err, size_t errlen);

/*
 * Set the shared figure of key's entry to shared_cps (> 0, finite;
 * measured at shared_measured_s), or drop it (shared_cps 0). Returns 0,
 * -ENOENT (with the reason in err) when the file holds no entry of key:
 * a shared figure needs its measured one, or another negative errno.
 */
int capcache_store_shared(const char *path, const char *key, double shared_cps,
			  int64_t shared_measured_s, char *err, size_t errlen);

#endif /* CHIRP_CAPCACHE_H */
