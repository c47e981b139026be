/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctlcmd.c — chirpd's control commands (the table control.c dispatches
 * from; doc/control.md has the protocol) and the Prometheus text for
 * `metrics` and the HTTP listener. Everything here runs on the main thread.
 */
#include "daemon.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "live.h"
#include "log.h"
#include "radar.h"
#include "stall.h"
#include "zpub.h"
#include "statusline.h"
#include "waveform.h"

int daemon_render_metrics(void *ctx, char *buf, size_t len)
{
	struct daemon *d = ctx;
	static struct stats_snapshot sn;   /* main thread only; 8 KiB off the stack */
	static struct metrics_mode modes[PC_MAX_MODES];
	struct control_stats cs = { 0 };
	unsigned nmodes = d->g->cfg.nmodes <= PC_MAX_MODES ? d->g->cfg.nmodes : PC_MAX_MODES;
	struct metrics_info mi = {
		.state = daemon_state_name(d),
		.backend = pc_backend_name(d->g->info.backend),
		.version = chirpd_version,
		.uptime_s = (double)(mono_ns() - d->start_ns) * 1e-9,
		.samples_per_s = d->samples_per_s,
		.cpis_per_s = d->cpis_per_s,
		.input_rate_cps = d->rw.rate_cps,
		.capacity_cps = gen_sustainable_cps(d->g),
		.input_over_capacity = d->rw.over,
		.numa_node = d->applied.node,
		.realtime = d->applied.realtime,
		.modes = modes,
		.nmodes = nmodes,
		.beams = d->g->beams,
	};

	for (unsigned i = 0; i < nmodes; i++) {
		modes[i].id = d->g->cfg.modes[i].id;
		modes[i].name = d->g->cfg.modes[i].name;
	}

	struct live_counters lc;

	if (d->pl)
		pipeline_last_pointing(d->pl, &mi.pointing_az_deg, &mi.pointing_el_deg);
	if (d->ctl) {
		control_get_stats(d->ctl, &cs);
		mi.control_clients = cs.clients;
	}
	if (d->live) {
		live_get_counters(d->live, &lc);
		mi.live = &lc;
	}
	stats_snapshot(d->st, &sn);
	return metrics_format(&sn, &mi, buf, len);
}

static json_t *mode_counts_json(const struct daemon *d, const struct stats_snapshot *s);

/* The radar's scales for the page's axes, from the running plan. */
static void live_scales_of(const struct daemon *d, struct live_scales *sc)
{
	const struct pc_radar *r = &d->g->plan.pc.radar;
	unsigned nd = d->g->plan.doppler_nfft;

	sc->range_m_per_gate = r->sample_rate_hz > 0 ? RADAR_C_MPS / (2 * r->sample_rate_hz) : NAN;
	sc->mps_per_bin = r->prf_hz > 0 && r->carrier_hz > 0 && nd ?
		r->prf_hz / nd * RADAR_C_MPS / (2 * r->carrier_hz) : NAN;
	/* snapshots are power in every output mode; a map_db output's
	 * values only reach the view without them */
	sc->map_db = !d->g->plan.pc.snapshot_cells && d->g->plan.pc.out_mode == PC_OUT_MAP_DB;
}

/*
 * The live view's state: what the page shows beside the map (rate,
 * capacity, latency p99 over the last stats interval and since start,
 * losses, per-mode counts). "lost" is every CPI that did not reach the
 * output: input overruns, sequence gaps and output drops.
 */
int daemon_render_live_state(void *ctx, struct live_scales *sc, char *buf, size_t len)
{
	struct daemon *d = ctx;
	static struct stats_snapshot s;   /* main thread only */
	json_t *o;
	char *txt;
	size_t n;

	live_scales_of(d, sc);
	stats_snapshot(d->st, &s);
	o = json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:b, s:f, s:f, s:I, s:I, s:I, s:I, "
		      "s:I, s:I, s:I, s:I, s:I}",
		"state", daemon_state_name(d),
		"backend", pc_backend_name(d->g->info.backend),
		"uptime_s", (double)(mono_ns() - d->start_ns) * 1e-9,
		"cpis_per_s", d->cpis_per_s,
		"samples_per_s", d->samples_per_s,
		"input_rate_cps", d->rw.rate_cps,
		"capacity_cps", d->g->capacity_cps,
		"over_capacity", d->rw.over,
		"latency_p99_ms", (double)stats_percentile(d->snap_delta, 0.99) * 1e-6,
		"latency_p99_ms_total", (double)stats_percentile(&s, 0.99) * 1e-6,
		"cpis_in", (json_int_t)s.counter[ST_CPIS_IN],
		"cpis_out", (json_int_t)s.counter[ST_CPIS_OUT],
		"input_overruns", (json_int_t)s.counter[ST_INPUT_OVERRUNS],
		"sequence_gaps", (json_int_t)s.counter[ST_SEQUENCE_GAPS],
		"output_drops", (json_int_t)s.counter[ST_OUTPUT_DROPS],
		"detection_drops", (json_int_t)s.counter[ST_DET_DROPS],
		"detections", (json_int_t)s.counter[ST_DETECTIONS],
		"lost", (json_int_t)(s.counter[ST_INPUT_OVERRUNS] + s.counter[ST_SEQUENCE_GAPS] +
				     s.counter[ST_OUTPUT_DROPS]),
		"time_ns", (json_int_t)mono_ns());
	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "modes", mode_counts_json(d, &s));
	txt = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!txt)
		return -ENOMEM;
	n = strlen(txt);
	if (n >= len) {
		free(txt);
		return -ENOSPC;
	}
	memcpy(buf, txt, n + 1);
	free(txt);
	return (int)n;
}

/* ---- control commands --------------------------------------------------- */

static int cmd_version(void *ctx, const char *args, const struct control_peer *peer,
		       json_t *reply, char *err, size_t errlen)
{
	(void)ctx; (void)args; (void)peer; (void)err; (void)errlen;
	json_object_set_new(reply, "version", json_string(chirpd_version));
	json_object_set_new(reply, "ring_abi", json_integer(CHIRP_RING_ABI_VERSION));
	json_object_set_new(reply, "cuda_built", json_boolean(
#ifdef CHIRP_HAVE_CUDA
		1
#else
		0
#endif
		));
	return 0;
}

/* A ring's data region in status: bytes, and bytes page-locked for the
 * backend's DMA (gen_ring_memory). */
/*
 * status "capacity": the sustainable rate and the input against it.
 * "alone" is what this instance knows of itself (measured at start with
 * nothing else counted, or that figure from the capacity cache); "shared"
 * is the host calibration's figure, measured with every instance of the
 * host saturated at once (chirpd-calibrate-host; null: not calibrated),
 * and "sustainable_cpi_per_s" is what the rate warning compares with:
 * shared when there is one, else alone.
 */
static json_t *capacity_json(const struct daemon *d, const struct stats_snapshot *sn)
{
	const struct gen *g = d->g;
	json_t *shared = g->shared_cps > 0 ?
		json_pack("{s:f, s:I}", "cpi_per_s", g->shared_cps,
			  "measured_unix", (json_int_t)g->shared_measured_s) : json_null();

	return json_pack("{s:{s:f, s:s, s:I, s:s}, s:o, s:f, s:f, s:b, s:I}",
		"alone", "cpi_per_s", g->capacity_cps, "source", g->capacity_source,
		"measured_unix", (json_int_t)g->capacity_measured_s, "cache", g->cache_path,
		"shared", shared,
		"sustainable_cpi_per_s", gen_sustainable_cps(g),
		"input_offered_cpi_per_s", d->rw.rate_cps,
		"input_over_capacity", d->rw.over,
		"input_over_capacity_events",
		(json_int_t)sn->counter[ST_INPUT_OVER_CAPACITY_EVENTS]);
}

/*
 * capacity-shared CPS|clear: the host calibration's figure for this
 * instance (chirpd-calibrate-host measures it with every instance of the
 * host saturated at once), kept in the capacity cache entry so that a
 * restart knows it; clear forgets it. Reply: the figure and whether the
 * cache holds it.
 */
static int cmd_capacity_shared(void *ctx, const char *args, const struct control_peer *peer,
			       json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	double cps = 0;
	char *end;
	int stored, rc;

	if (!args || !*args) {
		snprintf(err, errlen, "capacity-shared: want CPS (CPI/s, > 0) or clear");
		return -EINVAL;
	}
	if (strcmp(args, "clear") != 0) {
		errno = 0;
		cps = strtod(args, &end);
		if (errno || end == args || *end || !isfinite(cps) || cps <= 0 || cps > 1e9) {
			snprintf(err, errlen, "capacity-shared: '%.32s': want CPS (CPI/s, > 0 and "
				 "at most 1e9) or clear", args);
			return -EINVAL;
		}
	}
	rc = gen_set_shared(d->g, cps, &stored, err, errlen);
	if (rc < 0)
		return rc;
	if (cps > 0)
		log_notice("capacity shared with the host's other instances: %.0f CPI/s (alone "
			   "%.0f; pid %d)%s", cps, d->g->capacity_cps, (int)peer->pid,
			   stored ? ", kept in the capacity cache" : "; no capacity cache: until exit");
	else
		log_notice("capacity shared with the host's other instances: forgotten (pid %d)",
			   (int)peer->pid);
	json_object_set_new(reply, "shared_cpi_per_s", cps > 0 ? json_real(cps) : json_null());
	json_object_set_new(reply, "sustainable_cpi_per_s", json_real(gen_sustainable_cps(d->g)));
	json_object_set_new(reply, "stored", json_boolean(stored));
	return 0;
}

static json_t *ring_json(size_t bytes, size_t pinned)
{
	return json_pack("{s:I, s:I}", "bytes", (json_int_t)bytes,
			 "pinned_bytes", (json_int_t)pinned);
}

/* Each configured mode (id, name, waveform type, L) and its CPIs so far. */
static json_t *modes_json(const struct daemon *d, const struct stats_snapshot *sn)
{
	const struct gen *g = d->g;
	json_t *arr = json_array();

	for (unsigned i = 0; arr && i < g->cfg.nmodes && i < PC_MAX_MODES; i++) {
		const struct cfg_mode *m = &g->cfg.modes[i];

		json_array_append_new(arr, json_pack("{s:i, s:s, s:s, s:I, s:I}",
			"id", (int)m->id, "name", m->name, "type", wf_type_name(m->wf.type),
			"L", (json_int_t)(i < g->nmodes ? g->modes[i].ref_len : 0),
			"cpis", (json_int_t)(m->id < STATS_MAX_MODES ? sn->mode_cpis[m->id] : 0)));
	}
	return arr ? arr : json_array();
}

/* CFAR crossings per cell tested so far (0 before any cell). */
static double false_alarm_rate(const struct stats_snapshot *sn)
{
	return sn->counter[ST_CFAR_CELLS] ?
	       (double)sn->counter[ST_CFAR_CROSSINGS] / (double)sn->counter[ST_CFAR_CELLS] : 0.0;
}

/* The radar chain in status: what runs ([doppler], [cfar], the ring and
 * file the lists go to) and what it found so far. */
static json_t *radar_json(const struct daemon *d, const struct stats_snapshot *sn)
{
	const struct chirp_config *c = &d->g->cfg;
	json_t *o = json_object();

	if (!o)
		return json_object();
	json_object_set_new(o, "doppler", json_boolean(c->doppler));
	json_object_set_new(o, "pulses_mti", json_integer(d->g->info.pulses_mti));
	json_object_set_new(o, "doppler_bins", json_integer(d->g->info.doppler_nfft));
	json_object_set_new(o, "cfar", json_boolean(c->cfar));
	json_object_set_new(o, "pfa", json_real(c->pfa));
	json_object_set_new(o, "ring", json_string(c->cfar ? c->det_ring : ""));
	json_object_set_new(o, "ring_slots", json_integer(d->g->ring[PLAN_RING_DET] ? c->det_slots : 0));
	json_object_set_new(o, "file", json_string(c->cfar ? c->det_file : ""));
	json_object_set_new(o, "lists", json_integer((json_int_t)sn->counter[ST_DET_LISTS]));
	json_object_set_new(o, "detections", json_integer((json_int_t)sn->counter[ST_DETECTIONS]));
	json_object_set_new(o, "overflow_lists",
			    json_integer((json_int_t)sn->counter[ST_DET_OVERFLOWS]));
	json_object_set_new(o, "ring_drops", json_integer((json_int_t)sn->counter[ST_DET_DROPS]));
	json_object_set_new(o, "cfar_cells", json_integer((json_int_t)sn->counter[ST_CFAR_CELLS]));
	json_object_set_new(o, "cfar_crossings",
			    json_integer((json_int_t)sn->counter[ST_CFAR_CROSSINGS]));
	json_object_set_new(o, "false_alarm_rate", json_real(false_alarm_rate(sn)));
	return o;
}

/* The beams in status: mode, B, the fan's spacing or each beam's
 * direction at zero pointing, the newest CPI's pointing, and the CPIs
 * skipped for a pointing the beams cannot take. */
static json_t *beams_json(const struct daemon *d, const struct stats_snapshot *sn)
{
	static const char *const modes[] = { "off", "conventional", "mvdr" };
	const struct chirp_config *c = &d->g->cfg;
	json_t *o = json_object(), *dirs = json_array();
	double az = 0, el = 0;

	if (!o || !dirs) {
		json_decref(o);
		json_decref(dirs);
		return json_object();
	}
	for (unsigned b = 0; b < d->g->beams; b++)
		json_array_append_new(dirs, json_pack("[f, f]", d->g->beam_dir[2 * b],
						      d->g->beam_dir[2 * b + 1]));
	if (d->pl)
		pipeline_last_pointing(d->pl, &az, &el);
	json_object_set_new(o, "mode", json_string(modes[c->beams_mode <= 2 ? c->beams_mode : 0]));
	json_object_set_new(o, "count", json_integer(d->g->beams));
	json_object_set_new(o, "layout", json_string(c->beams_layout == PC_BEAMS_LIST ? "list" : "fan"));
	json_object_set_new(o, "spacing_u", json_real(c->beams_layout == PC_BEAMS_LIST || !d->g->beams ?
						       0.0 : d->g->beam_spacing_u));
	json_object_set_new(o, "directions_deg", dirs);
	json_object_set_new(o, "monopulse", json_boolean(c->beams_monopulse && d->g->beams >= 2));
	json_object_set_new(o, "pointing_deg", json_pack("{s:f, s:f}", "azimuth", az,
							  "elevation", el));
	json_object_set_new(o, "bad_pointing_cpis",
			    json_integer((json_int_t)sn->counter[ST_BAD_POINTING_CPIS]));
	return o;
}

/* One file sink in status: its path ("" = off) and its counters. */
static json_t *file_json(const char *path, const struct stats_snapshot *sn,
			 enum stats_counter bytes, enum stats_counter drops,
			 enum stats_counter dropped_bytes, enum stats_counter errors)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I}", "path", path,
			 "bytes", (json_int_t)sn->counter[bytes],
			 "drops", (json_int_t)sn->counter[drops],
			 "dropped_bytes", (json_int_t)sn->counter[dropped_bytes],
			 "errors", (json_int_t)sn->counter[errors]);
}

/* [output] file and [detections] file: written off the data thread, a
 * slow or blocked file drops whole records (pipeline.h, FILES). */
static json_t *files_json(const struct daemon *d, const struct stats_snapshot *sn)
{
	const struct chirp_config *c = &d->g->cfg;
	json_t *o = json_pack("{s:o?, s:o?}",
		"output", file_json(c->out_mode == PC_OUT_NONE ? "" : c->output_file, sn,
				    ST_OUTPUT_FILE_BYTES, ST_OUTPUT_FILE_DROPS,
				    ST_OUTPUT_FILE_DROPPED_BYTES, ST_OUTPUT_FILE_ERRORS),
		"detections", file_json(c->cfar ? c->det_file : "", sn,
					ST_DET_FILE_BYTES, ST_DET_FILE_DROPS,
					ST_DET_FILE_DROPPED_BYTES, ST_DET_FILE_ERRORS));

	return o ? o : json_object();
}

/* [publish]: the endpoint bound ("" = off) and the counters per topic. */
static json_t *publish_json(const struct daemon *d, const struct stats_snapshot *sn)
{
	json_t *o = json_pack("{s:s, s:{s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I}, s:I, s:I, s:I}",
		"endpoint", d->pub ? zpub_endpoint(d->pub) : "",
		"det", "messages", (json_int_t)sn->counter[ST_PUB_DET_MESSAGES],
		       "drops", (json_int_t)sn->counter[ST_PUB_DET_DROPS],
		"map", "messages", (json_int_t)sn->counter[ST_PUB_MAP_MESSAGES],
		       "drops", (json_int_t)sn->counter[ST_PUB_MAP_DROPS],
		"status", "messages", (json_int_t)sn->counter[ST_PUB_STATUS_MESSAGES],
			  "drops", (json_int_t)sn->counter[ST_PUB_STATUS_DROPS],
		"bytes", (json_int_t)sn->counter[ST_PUB_BYTES],
		"dropped_bytes", (json_int_t)sn->counter[ST_PUB_DROPPED_BYTES],
		"errors", (json_int_t)sn->counter[ST_PUB_ERRORS]);

	return o ? o : json_object();
}

static int cmd_status(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	(void)args; (void)peer; (void)err; (void)errlen;
	daemon_status_json(ctx, reply);
	return 0;
}

void daemon_status_json(struct daemon *d, json_t *reply)
{
	const struct chirp_config *c = &d->g->cfg;
	static const char *const rt_names[] = { "off", "preferred", "required" };
	static struct stats_snapshot sn;   /* main thread only */
	struct chirp_ring_stats rs;
	size_t in_bytes, in_pinned, out_bytes, out_pinned;
	char line[512];

	stats_snapshot(d->st, &sn);
	json_object_set_new(reply, "state", json_string(daemon_state_name(d)));
	if (d->pl && pipeline_state(d->pl) == PIPE_FAILED)
		json_object_set_new(reply, "error", json_string(pipeline_error(d->pl)));
	daemon_status_line(d, line, sizeof(line));
	json_object_set_new(reply, "summary", json_string(line));
	json_object_set_new(reply, "version", json_string(chirpd_version));
	json_object_set_new(reply, "pid", json_integer(getpid()));
	json_object_set_new(reply, "uptime_s", json_real((double)(mono_ns() - d->start_ns) * 1e-9));
	json_object_set_new(reply, "config_path", json_string(d->config_path));
	json_object_set_new(reply, "backend", json_string(pc_backend_name(d->g->info.backend)));
	json_object_set_new(reply, "device", json_string(d->g->info.device));
	json_object_set_new(reply, "staging", json_string(d->g->info.staging));
	json_object_set_new(reply, "staging_threads", json_integer(d->g->info.staging_threads));
	json_object_set_new(reply, "nfft", json_integer((json_int_t)d->g->info.nfft));
	json_object_set_new(reply, "fft_engine", json_string(d->g->info.fft_engine));
	json_object_set_new(reply, "depth", json_integer(d->g->info.depth));
	json_object_set_new(reply, "depth_choice", json_string(d->g->info.depth_choice));
	json_object_set_new(reply, "busy_poll", json_boolean(d->g->info.busy_poll));
	json_object_set_new(reply, "idle_spin_us", json_integer(d->g->info.idle_spin_us));
	json_object_set_new(reply, "geometry", json_pack("{s:i, s:i, s:i, s:s, s:s, s:f}",
		"channels", (int)c->channels, "pulses", (int)c->pulses, "samples", (int)c->samples,
		"format", pc_format_name(c->format), "output", pc_output_name(c->out_mode),
		"sample_rate_hz", c->wf.sample_rate_hz));
	json_t *rings = json_object();
	json_object_set_new(rings, "input", json_string(c->input_ring));
	json_object_set_new(rings, "output", json_string(c->out_mode == PC_OUT_NONE ? "" :
							       c->output_ring));
	/* no input ring: a failed reload could not restore it (broken) */
	if (d->g->ring[PLAN_RING_IN] &&
	    chirp_ring_stats(d->g->ring[PLAN_RING_IN], &rs) == 0)
		json_object_set_new(rings, "input_epoch", json_integer((json_int_t)rs.epoch));
	json_object_set_new(rings, "input_slots", json_integer(gen_in_slots(d->g)));
	json_object_set_new(rings, "input_slots_auto", json_boolean(!d->g->slots_requested));
	json_object_set_new(rings, "output_slots", json_integer(c->output_slots));
	json_object_set_new(rings, "output_slots_auto", json_boolean(!d->g->out_slots_requested));
	json_object_set_new(rings, "output_ms_at_capacity",
			    json_real(gen_ring_ms(c->output_slots, d->g->capacity_cps)));
	/* Buffer by time: what the input ring rides out, at capacity and now. */
	json_object_set_new(rings, "capacity_cpi_per_s", json_real(d->g->capacity_cps));
	/* where the figure (and with streams = auto the depth) came from:
	 * measured, cache (capacity_cache), kept (a reload's, same work), none */
	json_object_set_new(rings, "capacity_source", json_string(d->g->capacity_source));
	json_object_set_new(rings, "capacity_measured_unix",
			    json_integer((json_int_t)d->g->capacity_measured_s));
	json_object_set_new(rings, "capacity_cache", json_string(d->g->cache_path));
	json_object_set_new(rings, "input_ms_at_capacity",
			    json_real(gen_ring_ms(gen_in_slots(d->g), d->g->capacity_cps)));
	json_object_set_new(rings, "input_ms_at_current_rate",
			    json_real(gen_ring_ms(gen_in_slots(d->g), d->cpis_per_s)));
	json_object_set_new(rings, "buffer_ms", json_real(c->input_buffer_ms));
	gen_ring_memory(d->g, &in_bytes, &out_bytes, &in_pinned, &out_pinned);
	json_object_set_new(rings, "input_memory", ring_json(in_bytes, in_pinned));
	json_object_set_new(rings, "output_memory", ring_json(out_bytes, out_pinned));
	json_object_set_new(rings, "pinned_bytes", json_integer((json_int_t)(in_pinned + out_pinned)));
	json_object_set_new(reply, "rings", rings);
	json_object_set_new(reply, "capacity", capacity_json(d, &sn));
	json_object_set_new(reply, "startup_ms", json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
		"total", d->startup_ms[STARTUP_TOTAL],
		"config_plan", d->startup_ms[STARTUP_CONFIG_PLAN],
		"backend", d->startup_ms[STARTUP_BACKEND],
		"capacity", d->startup_ms[STARTUP_CAPACITY],
		"rings", d->startup_ms[STARTUP_RINGS],
		"pipeline", d->startup_ms[STARTUP_PIPELINE],
		"threads", d->startup_ms[STARTUP_THREADS]));
	json_object_set_new(reply, "modes", modes_json(d, &sn));
	json_object_set_new(reply, "radar", radar_json(d, &sn));
	json_object_set_new(reply, "beams", beams_json(d, &sn));
	json_object_set_new(reply, "files", files_json(d, &sn));
	json_object_set_new(reply, "publish", publish_json(d, &sn));
	json_object_set_new(reply, "unknown_mode_cpis",
			    json_integer((json_int_t)sn.counter[ST_UNKNOWN_MODE_CPIS]));
	json_object_set_new(reply, "numa", json_pack("{s:i, s:s, s:s, s:s, s:b, s:s}",
		"node", d->applied.node, "source", d->plan.node_source, "cpus", d->applied.cpus,
		"housekeeping_cpus", d->housekeeping,
		"memory_locked", d->memory_locked, "memory", d->memory_note));
	json_object_set_new(reply, "realtime", json_pack("{s:s, s:b, s:i, s:s}",
		"requested", rt_names[c->realtime >= 0 && c->realtime <= 2 ? c->realtime : 0],
		"applied", d->applied.realtime, "priority", d->applied.rt_priority,
		"note", d->applied.realtime_note));
	json_object_set_new(reply, "watchdog_usec", json_integer((json_int_t)d->wd_usec));
	json_object_set_new(reply, "control_socket", json_string(d->ctl ? control_path(d->ctl) : ""));
	json_object_set_new(reply, "metrics_listen", json_string(c->metrics_listen));
	if (d->last_reload_error[0])
		json_object_set_new(reply, "last_reload_error", json_string(d->last_reload_error));
}

static json_t *stage_json(const struct stats_snapshot *s, int st)
{
	uint64_t n = s->stage_count[st];

	return json_pack("{s:I, s:I, s:I}", "count", (json_int_t)n,
			 "mean_ns", (json_int_t)(n ? s->stage_sum_ns[st] / n : 0),
			 "max_ns", (json_int_t)s->stage_max_ns[st]);
}

/*
 * CPIs per mode id: {"0": {"name": "default", "cpis": 12}, ...} for each
 * configured mode, and for ids no longer configured (a reload removed
 * them) that counted CPIs, with name null.
 */
static json_t *mode_counts_json(const struct daemon *d, const struct stats_snapshot *s)
{
	json_t *o = json_object();
	char key[16];

	for (unsigned id = 0; o && id < STATS_MAX_MODES; id++) {
		int i = config_mode_index(&d->g->cfg, id);

		if (i < 0 && !s->mode_cpis[id])
			continue;
		snprintf(key, sizeof(key), "%u", id);
		json_object_set_new(o, key, json_pack("{s:o, s:I}",
			"name", i >= 0 ? json_string(d->g->cfg.modes[i].name) : json_null(),
			"cpis", (json_int_t)s->mode_cpis[id]));
	}
	return o ? o : json_object();
}

static int cmd_stats(void *ctx, const char *args, const struct control_peer *peer,
		     json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	static struct stats_snapshot s;   /* main thread only */
	json_t *lat, *stages, *recent;

	(void)args; (void)peer; (void)err; (void)errlen;
	stats_snapshot(d->st, &s);
	for (int c = 0; c < ST_COUNTERS; c++)
		json_object_set_new(reply, stats_counter_name(c), json_integer((json_int_t)s.counter[c]));
	json_object_set_new(reply, "cfar_false_alarm_rate", json_real(false_alarm_rate(&s)));
	json_object_set_new(reply, "samples_per_s", json_real(d->samples_per_s));
	json_object_set_new(reply, "cpis_per_s", json_real(d->cpis_per_s));
	json_object_set_new(reply, "input_offered_cpi_per_s", json_real(d->rw.rate_cps));
	json_object_set_new(reply, "input_over_capacity", json_boolean(d->rw.over));
	lat = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
			"count", (json_int_t)s.lat_count,
			"mean_ns", (json_int_t)(s.lat_count ? s.lat_sum_ns / s.lat_count : 0),
			"p50_ns", (json_int_t)stats_percentile(&s, 0.5),
			"p99_ns", (json_int_t)stats_percentile(&s, 0.99),
			"p999_ns", (json_int_t)stats_percentile(&s, 0.999),
			"max_ns", (json_int_t)s.lat_max_ns);
	json_object_set_new(reply, "latency", lat);
	recent = json_pack("{s:I, s:I, s:I}",
			   "count", (json_int_t)d->snap_delta->lat_count,
			   "p50_ns", (json_int_t)stats_percentile(d->snap_delta, 0.5),
			   "p99_ns", (json_int_t)stats_percentile(d->snap_delta, 0.99));
	json_object_set_new(reply, "latency_last_interval", recent);
	stages = json_object();
	for (int st = 0; st < STG_STAGES; st++)
		json_object_set_new(stages, stats_stage_name(st), stage_json(&s, st));
	json_object_set_new(reply, "stages", stages);
	json_object_set_new(reply, "modes", mode_counts_json(d, &s));
	json_object_set_new(reply, "consistent", json_boolean(s.consistent));
	json_object_set_new(reply, "watchdog_pings", json_integer((json_int_t)d->wd_pings));
	return 0;
}

static const char *const trace_flag_names[] = {
	"delivered", "dropped", "skipped", "over_budget", "nonfinite", "discontinuity",
	"unknown_mode",
};

/* One flight-recorder record: stage stamps in us after the input commit. */
static json_t *trace_json(const struct trace_cpi *r)
{
	json_t *o = json_object(), *t = json_object(), *fl = json_array();

	if (!o || !t || !fl) {
		json_decref(o);
		json_decref(t);
		json_decref(fl);
		return NULL;
	}
	json_object_set_new(o, "seq", json_integer((json_int_t)r->seq));
	json_object_set_new(o, "first_sample", json_integer((json_int_t)r->first_sample));
	json_object_set_new(o, "timestamp_ns", json_integer((json_int_t)r->timestamp_ns));
	json_object_set_new(o, "mode", json_integer((json_int_t)r->mode));
	json_object_set_new(o, "in_commit_mono_ns", json_integer((json_int_t)r->t[TR_IN_COMMIT]));
	for (int i = TR_PEEK; i < TR_STAMPS; i++)
		json_object_set_new(t, trace_stamp_name(i), r->t[i] && r->t[TR_IN_COMMIT] ?
				    json_real((double)(int64_t)(r->t[i] - r->t[TR_IN_COMMIT]) * 1e-3) :
				    json_null());
	json_object_set_new(o, "t_us", t);
	json_object_set_new(o, "latency_us", json_real((double)r->latency_ns * 1e-3));
	json_object_set_new(o, "device_us", r->device_ns ? json_real((double)r->device_ns * 1e-3)
							  : json_null());
	json_object_set_new(o, "fill", json_integer(r->fill));
	json_object_set_new(o, "in_flight", json_integer(r->in_flight));
	json_object_set_new(o, "recomputed", json_integer(r->recomputed));
	json_object_set_new(o, "chunks", json_integer(r->chunks));
	json_object_set_new(o, "woken", json_integer(r->woken));
	json_object_set_new(o, "absent", json_integer(r->absent));
	if (r->stall_ns) {
		/* The longest gap of the data thread's loop while this CPI
		 * was in chirpd (stall.h): how long, the thread's CPU time in
		 * it, what it was doing, where in the loop it was noticed. */
		json_t *st = json_pack("{s:f, s:f, s:s, s:s}",
				       "us", (double)r->stall_ns * 1e-3,
				       "cpu_us", (double)r->stall_cpu_ns * 1e-3,
				       "kind", stall_kind_name((enum stall_kind)r->stall_kind),
				       "in", trace_where_name((enum trace_where)r->stall_where));
		json_object_set_new(o, "stall", st ? st : json_null());
	} else {
		json_object_set_new(o, "stall", json_null());
	}
	for (unsigned b = 0; b < sizeof(trace_flag_names) / sizeof(trace_flag_names[0]); b++)
		if (r->flags & (1u << b))
			json_array_append_new(fl, json_string(trace_flag_names[b]));
	json_object_set_new(o, "flags", fl);
	return o;
}

static int cmd_trace(void *ctx, const char *args, const struct control_peer *peer,
		     json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	unsigned long n = 100;
	unsigned got;
	json_t *arr;

	(void)peer;
	if (*args) {
		char *end;

		errno = 0;
		n = strtoul(args, &end, 10);
		if (errno || *end || n < 1 || n > trace_capacity(d->trace) || args[0] == '-') {
			snprintf(err, errlen, "trace: N must be a number of CPIs 1..%u "
				 "(the recorder's size, [trace] records), not '%s'",
				 trace_capacity(d->trace), args);
			return -EINVAL;
		}
	}
	got = trace_read(d->trace, d->trace_buf, (unsigned)n);
	arr = json_array();
	if (!arr)
		return -ENOMEM;
	for (unsigned i = 0; i < got; i++) {
		json_t *o = trace_json(&d->trace_buf[i]);

		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return -ENOMEM;
		}
	}
	json_object_set_new(reply, "records", json_integer(trace_capacity(d->trace)));
	json_object_set_new(reply, "total", json_integer((json_int_t)trace_total(d->trace)));
	json_object_set_new(reply, "latency_budget_ms", json_real(d->g->cfg.latency_budget_ms));
	json_object_set_new(reply, "stamps", json_string(
		"t_us: microseconds after the producer committed the input (in_commit); "
		"null = the stage did not happen"));
	json_object_set_new(reply, "cpis", arr);
	return 0;
}

/* "a.b,c.d" as a JSON array of strings (empty on "" or out of memory). */
static json_t *keys_array(const char *csv)
{
	json_t *arr = json_array();
	char buf[512], *k, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", csv);
	for (k = strtok_r(buf, ",", &save); k && arr; k = strtok_r(NULL, ",", &save))
		json_array_append_new(arr, json_string(k));
	return arr ? arr : json_array();
}

static int cmd_config(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	json_t *c = config_to_json(&d->g->cfg);

	(void)args; (void)peer;
	if (!c) {
		snprintf(err, errlen, "cannot render the configuration");
		return -ENOMEM;
	}
	json_object_set_new(reply, "path", json_string(d->config_path));
	json_object_set_new(reply, "config", c);
	/* What the file says differently and only a restart applies: the
	 * values above are the running ones. */
	json_object_set_new(reply, "restart_keys", keys_array(d->restart_keys));
	return 0;
}

static int cmd_reload(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	(void)args;
	log_info("reload requested by pid %d uid %u", (int)peer->pid, (unsigned)peer->uid);
	return daemon_reload(ctx, reply, err, errlen);
}

/* Wait (bounded) until the data path shows the wanted state. */
static void wait_state(struct daemon *d, enum pipeline_state want, int ms)
{
	for (int i = 0; i < ms && pipeline_state(d->pl) != want; i++) {
		struct timespec t = { 0, 1000000 };
		nanosleep(&t, NULL);
	}
}

/* pause (on = 1) or resume (on = 0) the data thread and wait until it says so. */
static int set_paused(struct daemon *d, int on, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	if (d->stopping || !d->pl || pipeline_state(d->pl) == PIPE_FAILED) {
		snprintf(err, errlen, "data path is %s", daemon_state_name(d));
		return -EIO;
	}
	pipeline_pause(d->pl, on);
	wait_state(d, on ? PIPE_PAUSED : PIPE_RUNNING, 1000);
	log_notice("%s (pid %d)", on ? "paused" : "resumed", (int)peer->pid);
	json_object_set_new(reply, "state", json_string(daemon_state_name(d)));
	daemon_notify_status(d);
	return 0;
}

static int cmd_pause(void *ctx, const char *args, const struct control_peer *peer,
		     json_t *reply, char *err, size_t errlen)
{
	(void)args;
	return set_paused(ctx, 1, peer, reply, err, errlen);
}

static int cmd_resume(void *ctx, const char *args, const struct control_peer *peer,
		      json_t *reply, char *err, size_t errlen)
{
	(void)args;
	return set_paused(ctx, 0, peer, reply, err, errlen);
}

static int cmd_metrics(void *ctx, const char *args, const struct control_peer *peer,
		       json_t *reply, char *err, size_t errlen)
{
	struct daemon *d = ctx;
	int n;

	(void)args; (void)peer;
	n = daemon_render_metrics(d, d->mbuf, METRICS_BUF);
	if (n < 0) {
		snprintf(err, errlen, "metrics: %s", strerror(-n));
		return n;
	}
	json_object_set_new(reply, "text", json_stringn(d->mbuf, (size_t)n));
	return 0;
}

static int cmd_log_level(void *ctx, const char *args, const struct control_peer *peer,
			 json_t *reply, char *err, size_t errlen)
{
	int lv = log_level_parse(args);

	(void)ctx;
	if (lv < 0 || lv < LOG_ERR) {
		snprintf(err, errlen, "unknown level '%.32s' (error|warning|notice|info|debug)", args);
		return -EINVAL;
	}
	log_set_level(lv);
	log_notice("log level %s (pid %d)", log_level_name(lv), (int)peer->pid);
	json_object_set_new(reply, "level", json_string(log_level_name(lv)));
	return 0;
}

const struct control_cmd daemon_commands[] = {
	{ .name = "version", .fn = cmd_version, .help = "chirpd version and build" },
	{ .name = "status", .fn = cmd_status,
	  .help = "state, backend and device, NUMA/real-time applied, uptime, config, geometry" },
	{ .name = "stats", .fn = cmd_stats,
	  .help = "counters, rates, latency p50/p99/p999/max, time per stage" },
	{ .name = "config", .fn = cmd_config, .help = "the effective configuration" },
	{ .name = "trace", .fn = cmd_trace, .usage = "[N]",
	  .help = "flight recorder: stage timestamps of the last N CPIs (default 100)" },
	{ .name = "metrics", .fn = cmd_metrics, .help = "Prometheus text exposition" },
	{ .name = "reload", .mutating = 1, .fn = cmd_reload,
	  .help = "re-read the configuration file and apply it between CPIs" },
	{ .name = "pause", .mutating = 1, .fn = cmd_pause, .help = "stop taking CPIs" },
	{ .name = "resume", .mutating = 1, .fn = cmd_resume, .help = "take CPIs again" },
	{ .name = "capacity-shared", .mutating = 1, .fn = cmd_capacity_shared,
	  .usage = "CPS|clear",
	  .help = "the rate this instance sustains with the host's instances saturated at once "
		  "(chirpd-calibrate-host), kept in the capacity cache; clear forgets it" },
	{ .name = "log-level", .mutating = 1, .fn = cmd_log_level, .usage = "LEVEL",
	  .help = "set the log level (error|warning|notice|info|debug)" },
	{ .name = NULL },
};
