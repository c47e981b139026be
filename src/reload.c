/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reload.c — chirpd's reload (SIGHUP, `chirpctl reload`): parse the
 * configuration file again, hold the keys that need a restart at their
 * running values, build a new generation next to the running one and hand
 * it to the data thread at a CPI boundary. On any error the running
 * configuration stays; a failure to restore the old rings after a ring
 * change leaves the daemon "failed" with the data path parked.
 */
#include "daemon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "statusline.h"

/*
 * Parse the configuration file into nc. On errors each one is logged and
 * listed in reply's "errors" (reply may be NULL), err names the first, and
 * -EINVAL is returned.
 */
static int reload_load(const struct daemon *d, struct chirp_config *nc, json_t *reply,
		       char *err, size_t errlen)
{
	char *ebuf = NULL, *line, *save = NULL;
	size_t elen = 0;
	FILE *ef = open_memstream(&ebuf, &elen);
	json_t *arr;
	int nerr;

	if (!ef) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	nerr = config_load(nc, d->config_path, ef);
	fclose(ef);
	if (nerr == 0) {
		free(ebuf);
		return 0;
	}
	if (nerr < 0)
		snprintf(err, errlen, "%s: %s", d->config_path, strerror(-nerr));
	else
		snprintf(err, errlen, "%d error%s in %s; keeping the running configuration",
			 nerr, nerr == 1 ? "" : "s", d->config_path);
	arr = json_array();
	for (line = strtok_r(ebuf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		log_err("reload: %s", line);
		if (arr)
			json_array_append_new(arr, json_string(line));
		if (nerr > 0 && arr && json_array_size(arr) == 1)
			snprintf(err, errlen, "%s (%d error%s; running configuration kept)",
				 line, nerr, nerr == 1 ? "" : "s");
	}
	if (reply && arr)
		json_object_set_new(reply, "errors", arr);
	else
		json_decref(arr);
	free(ebuf);
	return -EINVAL;
}

/* ng keeps every ring: built next to the running generation, swapped in at
 * a CPI boundary. */
static int reload_swap_kept_rings(struct daemon *d, struct gen *ng, int *recreated,
				  char *err, size_t errlen)
{
	struct pipeline_gen *oldpg = NULL;
	char why[256];
	int ret = gen_attach(d, ng, recreated, err, errlen);

	if (ret < 0)
		return ret;
	ret = pipeline_swap(d->pl, ng->pg, &oldpg, SWAP_TIMEOUT_MS, why, sizeof(why));
	if (ret < 0)
		snprintf(err, errlen, "reload not applied: %s", why);
	return ret;
}

/* Give the data thread the running generation's rings back after a ring
 * change failed; if that fails too the daemon is broken (data path parked). */
static void reload_restore_rings(struct daemon *d)
{
	struct pipeline_gen *oldpg = NULL;
	struct gen *og = d->g;
	char e2[256];

	if (gen_attach(d, og, NULL, e2, sizeof(e2)) < 0 ||
	    pipeline_swap(d->pl, og->pg, &oldpg, SWAP_TIMEOUT_MS, e2, sizeof(e2)) < 0) {
		d->broken = 1;
		snprintf(d->broken_why, sizeof(d->broken_why),
			 "reload could not restore the previous rings: %s", e2);
		log_err("%s; data path parked", d->broken_why);
		sd_notifyf(0, "STATUS=failed: %s", d->broken_why);
	}
}

/*
 * A ring changes: park the data thread (CPIs in flight finish), let go of
 * the old ring(s), create the new ones, swap in. On failure roll back to
 * the old geometry: the new generation goes first (*ngp = NULL; a ring
 * cannot be re-created while attached), then the old rings come back.
 */
static int reload_swap_new_rings(struct daemon *d, struct gen **ngp, int *recreated,
				 char *err, size_t errlen)
{
	struct pipeline_gen *oldpg = NULL;
	struct gen *og = d->g, *ng = *ngp;
	char why[256];
	int ret;

	ret = pipeline_swap(d->pl, NULL, &oldpg, SWAP_TIMEOUT_MS, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "reload not applied: %s", why);
		return ret;
	}
	pipeline_gen_destroy(og->pg);
	og->pg = NULL;
	for (int k = 0; k < PLAN_RINGS; k++) {
		if (!ng->ring[k] && og->ring[k]) {
			chirp_ring_detach(og->ring[k]);
			og->ring[k] = NULL;
		}
	}
	ret = gen_attach(d, ng, recreated, err, errlen);
	if (ret == 0) {
		ret = pipeline_swap(d->pl, ng->pg, &oldpg, SWAP_TIMEOUT_MS, why, sizeof(why));
		if (ret < 0)
			snprintf(err, errlen, "reload not applied: %s", why);
	}
	if (ret < 0) {
		gen_destroy(ng);
		*ngp = NULL;
		reload_restore_rings(d);
	}
	return ret;
}

/* ng runs now: it owns what it borrowed, and the old generation goes. */
static void reload_commit(struct daemon *d, struct gen *ng)
{
	for (int k = 0; k < PLAN_RINGS; k++) {
		if (ng->ring_borrowed[k]) {
			d->g->ring[k] = NULL;
			ng->ring_borrowed[k] = 0;
		}
	}
	for (int k = 0; k < PLAN_FILES; k++) {
		if (ng->file_borrowed[k]) {
			d->g->file_fd[k] = -1;
			ng->file_borrowed[k] = 0;
		}
	}
	gen_destroy(d->g);
	d->g = ng;
	pipeline_set_budget(d->pl, ng->plan.latency_budget_ns);
	gen_log_modes(ng);
	gen_report_slack(ng);
	log_set_level(ng->cfg.log_level);
	stats_add(d->st, ST_RELOADS, 1);
	d->last_reload_error[0] = 0;
	d->broken = 0;
}

/* The reply of a reload that was applied; keys: "section.key,..." that
 * need a restart (strtok'd here). */
static void reload_reply(const struct daemon *d, json_t *reply, char *keys, int recreated,
			 uint64_t t0)
{
	json_t *rk = json_array();
	char *k, *save = NULL;

	for (k = strtok_r(keys, ",", &save); k && rk; k = strtok_r(NULL, ",", &save))
		json_array_append_new(rk, json_string(k));
	json_object_set_new(reply, "reloaded", json_true());
	json_object_set_new(reply, "config", json_string(d->config_path));
	json_object_set_new(reply, "restart_keys", rk ? rk : json_array());
	json_object_set_new(reply, "input_ring_recreated",
			    json_boolean(recreated & (1 << PLAN_RING_IN)));
	json_object_set_new(reply, "output_ring_recreated",
			    json_boolean(recreated & (1 << PLAN_RING_OUT)));
	json_object_set_new(reply, "detection_ring_recreated",
			    json_boolean(recreated & (1 << PLAN_RING_DET)));
	json_object_set_new(reply, "ms", json_real((double)(mono_ns() - t0) * 1e-6));
}

int daemon_reload(struct daemon *d, json_t *reply, char *err, size_t errlen)
{
	struct chirp_config *nc = NULL;
	struct gen *ng = NULL;
	char keys[512];
	int recreated = 0, ret;
	uint64_t t0 = mono_ns();

	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
		   (unsigned long long)(t0 / 1000), d->config_path);
	log_info("reloading %s", d->config_path);
	if (d->stopping) {
		snprintf(err, errlen, "chirpd is stopping");
		ret = -ESHUTDOWN;
		goto out;
	}
	nc = malloc(sizeof(*nc));
	if (!nc) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	ret = reload_load(d, nc, reply, err, errlen);
	if (ret < 0)
		goto out;
	/* Restart-only keys keep their running values: what runs, what
	 * `config` shows and the reply's restart_keys agree. The new
	 * generation's plan is then compared with the running one's
	 * (gen_create: rings kept, the same work). */
	if (config_restart_keys(&d->g->cfg, nc, keys, sizeof(keys)) > 0)
		log_warn("reload: changed keys need a restart and keep their running values: %s", keys);
	config_hold_restart_keys(&d->g->cfg, nc);

	ng = gen_create(d, nc, d->g, err, errlen);
	if (!ng) {
		ret = -EINVAL;
		goto out;
	}
	if (gen_has_rings(ng))
		ret = reload_swap_kept_rings(d, ng, &recreated, err, errlen);
	else
		ret = reload_swap_new_rings(d, &ng, &recreated, err, errlen);
	if (ret < 0)
		goto out;
	reload_commit(d, ng);
	ng = NULL;
	snprintf(d->restart_keys, sizeof(d->restart_keys), "%s", keys);
	log_notice("reloaded %s in %.1f ms%s%s%s%s%s", d->config_path, (double)(mono_ns() - t0) * 1e-6,
		   recreated & (1 << PLAN_RING_IN) ? "; input ring re-created (new epoch)" : "",
		   recreated & (1 << PLAN_RING_OUT) ? "; output ring re-created" : "",
		   recreated & (1 << PLAN_RING_DET) ? "; detection ring re-created" : "",
		   keys[0] ? "; needs restart: " : "", keys);
	if (reply)
		reload_reply(d, reply, keys, recreated, t0);
	ret = 0;
out:
	gen_destroy(ng);   /* what it borrowed stays with the running generation */
	free(nc);
	if (ret < 0) {
		stats_add(d->st, ST_RELOAD_FAILURES, 1);
		snprintf(d->last_reload_error, sizeof(d->last_reload_error), "%s", err);
		log_err("reload failed: %s", err);
	}
	sd_notify(0, "READY=1");
	daemon_notify_status(d);
	return ret;
}
