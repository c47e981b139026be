/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringrm.c — chirpd --remove-rings (ringrm.h).
 *
 * chirpd leaves its rings in place when it stops, so that a restart
 * continues on the same rings and the producers and consumers attached to
 * them carry on. An instance that stays stopped keeps that memory (the
 * rings live in /dev/shm or on hugetlbfs, i.e. in RAM) until the rings
 * are removed: this removes them, refusing while chirpd runs.
 *
 * A running chirpd is recognised by the ring roles it holds, which are
 * kernel-held locks (chirp/ring.h): a chirpd that died frees them at once,
 * so a crash never blocks the removal. The check attaches nothing, so a
 * refusal leaves every ring exactly as it was. A chirpd that starts
 * between the check and the unlink finds its rings retired (-ESTALE, as
 * after any unlink) and fails its start: run this with the instance
 * stopped, as the units' ExecStopPost does.
 */
#include "ringrm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "chirp/ring.h"
#include "config.h"

struct ringrm_ring {
	const char *what;               /* "input", "output", "detection"     */
	const char *name;               /* shm name; "" = none configured     */
	enum chirp_ring_role role;      /* the role chirpd holds on it        */
};

/* The configuration's rings, in the order chirpd creates them. */
static size_t ringrm_rings(const struct chirp_config *c, struct ringrm_ring *r)
{
	size_t n = 0;

	r[n++] = (struct ringrm_ring){ "input", c->input_ring, CHIRP_RING_CONSUMER };
	r[n++] = (struct ringrm_ring){ "output", c->output_ring, CHIRP_RING_PRODUCER };
	if (c->det_ring[0])
		r[n++] = (struct ringrm_ring){ "detection", c->det_ring, CHIRP_RING_PRODUCER };
	return n;
}

/* 0 if no live process holds chirpd's role on any of the rings, else 1
 * after naming each ring that is held. */
static int ringrm_check(const char *path, const struct ringrm_ring *r, size_t n)
{
	int busy = 0;

	for (size_t i = 0; i < n; i++) {
		int held = chirp_ring_role_held(r[i].name, r[i].role);

		if (held == 1) {
			fprintf(stderr, "chirpd --remove-rings: %s: %s ring %s: its %s role is held "
				"by a live process (chirpd is running on it: stop it first)\n",
				path, r[i].what, r[i].name,
				r[i].role == CHIRP_RING_PRODUCER ? "producer" : "consumer");
			busy = 1;
		} else if (held < 0 && held != -ENOENT) {
			fprintf(stderr, "chirpd --remove-rings: %s: %s ring %s: %s\n", path,
				r[i].what, r[i].name, strerror(-held));
			busy = 1;
		}
	}
	return busy;
}

/* Unlink each ring; 0, or 1 if one could not be removed. */
static int ringrm_unlink(const char *path, const struct ringrm_ring *r, size_t n, FILE *out)
{
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		int rc = chirp_ring_unlink(r[i].name);

		if (rc == 0) {
			fprintf(out, "removed %s ring %s\n", r[i].what, r[i].name);
		} else if (rc == -ENOENT) {
			fprintf(out, "%s ring %s: not present\n", r[i].what, r[i].name);
		} else {
			fprintf(stderr, "chirpd --remove-rings: %s: %s ring %s: %s\n", path,
				r[i].what, r[i].name, strerror(-rc));
			ret = 1;
		}
	}
	return ret;
}

int ringrm_run(const char *config_path, int if_configured, FILE *out)
{
	struct chirp_config *c = malloc(sizeof(*c));
	struct ringrm_ring r[3];
	size_t n;
	int rc, ret = EX_CONFIG;

	if (!c) {
		fprintf(stderr, "chirpd: out of memory\n");
		return 1;
	}
	rc = config_load(c, config_path, stderr);
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", config_path,
			rc < 0 ? strerror(-rc) : "invalid configuration (errors above): no ring removed");
		goto out;
	}
	ret = 0;
	if (if_configured && !c->remove_rings_on_stop) {
		fprintf(out, "%s: [daemon] remove_rings_on_stop is false: rings kept\n",
			config_path);
		goto out;
	}
	n = ringrm_rings(c, r);
	if (ringrm_check(config_path, r, n)) {
		fprintf(stderr, "chirpd --remove-rings: no ring removed\n");
		ret = 1;
		goto out;
	}
	ret = ringrm_unlink(config_path, r, n, out);
out:
	free(c);
	return ret;
}
