/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_table.c — every key of chirpd's configuration, declared once
 * (config_private.h), and the engine that reads, checks and writes one
 * value of a key.
 *
 * cfg_tab[] below is the only place a key exists. Each row names the
 * section, the key and the field it fills, then, by name: the default (as
 * the text a user would write, parsed by the same code as the file, so
 * defaults cannot drift from what is documented), the range, the choices or
 * a check function, whether the key can change on reload, and the help
 * text. Parsing, defaults, --check, config_print, the JSON reply, the
 * restart-key list and the reference documentation (conf/chirpd.conf,
 * doc/config.md) all walk this table.
 *
 * Radar modes: the keys of a waveform are declared once, under [waveform]
 * with MODE_* rows (their values live in a struct cfg_mode), with the one
 * key of their own, id, under the section "mode".
 *
 * A value check that another module owns is that module's parser
 * (sysnuma_parse_cpus for [numa] cpus, metrics_parse_listen for [metrics]
 * listen): what --check accepts is what the daemon applies.
 */
#include "chirp/ring.h"     /* CHIRP_RING_MAX_SLOTS: the [*] slots keys' limit */
#include "config_private.h"
#include "metrics.h"
#include "sysnuma.h"
#include "zpub.h"          /* [publish] listen: the publisher checks its endpoint */

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>

_Static_assert(sizeof(enum pc_format) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum wf_type) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_fftw_planner) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_switch) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_mti) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_cfar) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum wf_window) == sizeof(int), "enums are stored as int");

/* Choices of config's own (the other enums' names are names.h's). */
static const struct name_entry ch_realtime[] = {
	{ "off", CFG_RT_OFF }, { "preferred", CFG_RT_PREFERRED },
	{ "required", CFG_RT_REQUIRED }, { NULL, 0 },
};
static const struct name_entry ch_integrate[] = {
	{ "noncoherent", 1 }, { "none", 0 }, { NULL, 0 },
};
static const struct name_entry ch_array[] = {
	{ "ula", CFG_ARRAY_ULA }, { "file", CFG_ARRAY_FILE }, { NULL, 0 },
};
static const struct name_entry ch_beams_mode[] = {
	{ "off", PC_BEAMS_OFF }, { "conventional", PC_BEAMS_CONVENTIONAL },
	{ "mvdr", PC_BEAMS_MVDR }, { NULL, 0 },
};
static const struct name_entry ch_beams_layout[] = {
	{ "fan", PC_BEAMS_FAN }, { "list", PC_BEAMS_LIST }, { NULL, 0 },
};

static int check_socket_path(const char *v, char *err, size_t len);
static int check_group(const char *v, char *err, size_t len);
static int check_cpus(const char *v, char *err, size_t len);
static int check_shm_name(const char *v, char *err, size_t len);
static int check_shm_name_or_none(const char *v, char *err, size_t len);
static int check_cache_path(const char *v, char *err, size_t len);
static int check_listen(const char *v, char *err, size_t len);

#define OFF(f)  offsetof(struct chirp_config, f)
#define SZ(f)   sizeof(((struct chirp_config *)0)->f)
#define MOFF(f) offsetof(struct cfg_mode, f)
#define MSZ(f)  sizeof(((struct cfg_mode *)0)->f)

/*
 * One row of the table: KEY_<TYPE>(section, key, field, .name = value...)
 * for a key of struct chirp_config, MODE_<TYPE> for a mode's key (a field
 * of struct cfg_mode). The named fields are struct cfg_key's: .def, .min,
 * .max, .min_excl, .max_excl, .required, .choices, .check, .reload
 * (CFG_RELOAD or CFG_RESTART: a row without it needs a restart), .help.
 */
#define CFG_ROW(sec, key, t, offset, ...) \
	{ .section = (sec), .name = (key), .type = (t), .off = (offset), __VA_ARGS__ }

/* The offset of field f, and a compile error unless f has one of the
 * types the key's kind stores (an enum is compatible with int or
 * unsigned, a char array decays to char *). */
#define TYPE_OK(expr, ...) (0 * sizeof(char[_Generic((expr), __VA_ARGS__: 1, default: -1)]))
#define OFF_T(f, ...)  (OFF(f) + TYPE_OK(((struct chirp_config *)0)->f, __VA_ARGS__))
#define MOFF_T(f, ...) (MOFF(f) + TYPE_OK(((struct cfg_mode *)0)->f, __VA_ARGS__))
#define INTS int: 1, unsigned
#define KEY_STR(s, k, f, ...)    CFG_ROW(s, k, T_STR, OFF_T(f, char *), .size = SZ(f), __VA_ARGS__)
#define KEY_BOOL(s, k, f, ...)   CFG_ROW(s, k, T_BOOL, OFF_T(f, int), __VA_ARGS__)
#define KEY_INT(s, k, f, ...)    CFG_ROW(s, k, T_INT, OFF_T(f, int), __VA_ARGS__)
/* A number's macro as the string a .def holds (one home for the value). */
#define CFG_STR(x)  #x
#define CFG_XSTR(x) CFG_STR(x)
#define KEY_UINT(s, k, f, ...)   CFG_ROW(s, k, T_UINT, OFF_T(f, unsigned), __VA_ARGS__)
#define KEY_DOUBLE(s, k, f, ...) CFG_ROW(s, k, T_DOUBLE, OFF_T(f, double), __VA_ARGS__)
#define KEY_ENUM(s, k, f, ...)   CFG_ROW(s, k, T_ENUM, OFF_T(f, INTS), __VA_ARGS__)
#define KEY_AUTO(s, k, f, ...)   CFG_ROW(s, k, T_AUTO_INT, OFF_T(f, INTS), __VA_ARGS__)
#define KEY_NFFT(s, k, f, ...)   CFG_ROW(s, k, T_NFFT, OFF_T(f, size_t), __VA_ARGS__)
#define KEY_NUMA(s, k, f, ...)   CFG_ROW(s, k, T_NUMA, OFF_T(f, int), __VA_ARGS__)
#define KEY_GPU(s, k, f, ...)    CFG_ROW(s, k, T_GPU, OFF_T(f, int), __VA_ARGS__)
#define MODE_STR(s, k, f, ...) \
	CFG_ROW(s, k, T_STR, MOFF_T(f, char *), .size = MSZ(f), .in_mode = 1, __VA_ARGS__)
#define MODE_UINT(s, k, f, ...) \
	CFG_ROW(s, k, T_UINT, MOFF_T(f, unsigned), .in_mode = 1, __VA_ARGS__)
#define MODE_DOUBLE(s, k, f, ...) \
	CFG_ROW(s, k, T_DOUBLE, MOFF_T(f, double), .in_mode = 1, __VA_ARGS__)
#define MODE_ENUM(s, k, f, ...) \
	CFG_ROW(s, k, T_ENUM, MOFF_T(f, INTS), .in_mode = 1, __VA_ARGS__)

const struct cfg_key cfg_tab[] = {
	/* [daemon] */
	KEY_STR("daemon", "control_socket", control_socket,
		.def = "/run/chirpd/control.sock",
		.check = check_socket_path, .reload = CFG_RESTART,
		.help = "Unix socket for chirpctl (created mode 0660; parent directory created if missing)."),
	KEY_STR("daemon", "control_group", control_group,
		.def = "", .check = check_group, .reload = CFG_RESTART,
		.help = "Group that owns the control socket and may run mutating commands (reload, pause, resume, log-level); empty = only root and chirpd's own user."),
	KEY_ENUM("daemon", "log_level", log_level,
		.def = "info", .choices = names_log_level, .reload = CFG_RELOAD,
		.help = "Least important messages logged: error, warning, notice, info or debug."),
	KEY_BOOL("daemon", "remove_rings_on_stop", remove_rings_on_stop,
		.def = "false", .reload = CFG_RELOAD,
		.help = "Remove the input, output and detection rings from /dev/shm when the systemd unit stops chirpd (restart included), through its ExecStopPost=chirpd --remove-rings --if-configured; false keeps them, so that a restart continues where the stop left off. A running chirpd does not use it (a reload may change it freely)."),

	/* [numa] */
	KEY_NUMA("numa", "node", numa_node,
		.def = "auto", .max = 1023, .reload = CFG_RESTART,
		.help = "NUMA node for the data path threads and buffers: auto (the GPU's node from sysfs; no binding without a GPU), a node number, or none (no binding)."),
	KEY_STR("numa", "cpus", cpus,
		.def = "", .check = check_cpus, .reload = CFG_RESTART,
		.help = "CPUs for the data path threads, as a list like 2-5,8; empty = the node's cpus (or all with node = none). When set, chirpd's other threads (main loop, control socket, metrics, a reload's FFT planning) move to the node's remaining cpus, if any (status: numa.housekeeping_cpus); keep the digitizer driver and consumers off these cpus too (doc/latency.md)."),
	KEY_ENUM("numa", "realtime", realtime,
		.def = "off", .choices = ch_realtime, .reload = CFG_RESTART,
		.help = "SCHED_FIFO for the data path thread: off, preferred (try, warn if not permitted) or required (fail to start if not permitted)."),
	KEY_INT("numa", "rt_priority", rt_priority,
		.def = "50", .min = 1, .max = 99, .reload = CFG_RESTART,
		.help = "SCHED_FIFO priority 1..99 when realtime is not off."),
	KEY_BOOL("numa", "lock_memory", lock_memory,
		.def = "false", .reload = CFG_RESTART,
		.help = "mlockall() so the data path never page-faults (needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK; a failure is a warning)."),

	/* [input] */
	KEY_STR("input", "ring", input_ring,
		.def = "/chirpd-in", .check = check_shm_name, .reload = CFG_RESTART,
		.help = "POSIX shared memory name of the input ring the digitizer writes CPIs into."),
	KEY_AUTO("input", "slots", input_slots,
		.def = "auto", .min = 2, .max = CHIRP_RING_MAX_SLOTS, .reload = CFG_RELOAD,
		.help = "CPIs the input ring holds: auto (enough for buffer_ms at the capacity chirpd measures at start, at most one slot more, at least 16; a ring that is there with 7/8 to twice that count is kept as it is, so a restart leaves its producer attached) or a count 2..65536 (re-created on reload when it changes)."),
	KEY_DOUBLE("input", "buffer_ms", input_buffer_ms,
		.def = "100", .min = 1, .max = 60000, .reload = CFG_RELOAD,
		.help = "Milliseconds of input the ring must hold when the front end runs at chirpd's capacity: the longest stall chirpd rides out without losing a CPI. slots = auto sizes the ring from it; with a fixed slots (or a ring another program made) a ring holding less is warned about at start and reload."),
	KEY_ENUM("input", "format", format,
		.def = "cf32", .choices = names_format, .reload = CFG_RELOAD,
		.help = "Input sample format: cf32 (float32 I,Q) or sc16 (int16 I,Q, scaled by 1/32768)."),
	KEY_BOOL("input", "hugepages", input_hugepages,
		.def = "false", .reload = CFG_RELOAD,
		.help = "Back the input ring with 2 MiB huge pages: hugetlbfs must be mounted at /dev/hugepages (or where the deployment setting CHIRP_HUGETLBFS says, chirpd(8)) with free pages for the whole ring."),
	KEY_BOOL("input", "allow_foreign_owner", input_allow_foreign_owner,
		.def = "false", .reload = CFG_RESTART,
		.help = "Adopt an existing input ring object owned by another user (e.g. a digitizer driver that runs as its own user and created the ring first); false = refuse it, naming the owner. true also accepts the owner's choice of mode (the world-writable check is for our own rings)."),

	/* [cpi] */
	KEY_UINT("cpi", "channels", channels,
		.def = "1", .min = 1, .max = 4096, .reload = CFG_RELOAD,
		.help = "Receive channels per CPI."),
	KEY_UINT("cpi", "pulses", pulses,
		.def = "128", .min = 1, .max = 1048576, .reload = CFG_RELOAD,
		.help = "Pulses per CPI."),
	KEY_UINT("cpi", "samples", samples,
		.def = "4000", .min = 1, .max = 16777216, .reload = CFG_RELOAD,
		.help = "Range samples per pulse (R), the length of one range line."),

	/* [waveform] */
	MODE_ENUM("waveform", "type", wf.type,
		.def = "lfm", .choices = names_wf_type, .reload = CFG_RELOAD,
		.help = "Reference waveform: lfm (linear FM chirp), barker13 (13-chip Barker code) or file (cf32 samples from file)."),
	KEY_DOUBLE("waveform", "sample_rate_hz", wf.sample_rate_hz,
		.def = "25e6", .min = 0, .max = 1e11, .min_excl = 1, .reload = CFG_RELOAD,
		.help = "Complex sample rate of the input in Hz: the radar's, every mode's."),
	MODE_DOUBLE("waveform", "bandwidth_hz", wf.bandwidth_hz,
		.def = "10e6", .min = 0, .max = 1e11, .min_excl = 1, .reload = CFG_RELOAD,
		.help = "lfm: swept bandwidth in Hz, at most sample_rate_hz (centred on 0 Hz)."),
	MODE_DOUBLE("waveform", "pulse_width_s", wf.pulse_width_s,
		.def = "10e-6", .min = 0, .max = 1, .min_excl = 1, .reload = CFG_RELOAD,
		.help = "lfm: pulse length in seconds; L = round(pulse_width_s * sample_rate_hz) samples, 1 <= L <= samples."),
	MODE_UINT("waveform", "chip_samples", wf.chip_samples,
		.def = "4", .min = 1, .max = 1048576, .reload = CFG_RELOAD,
		.help = "barker13: samples per chip; L = 13 * chip_samples <= samples."),
	MODE_STR("waveform", "file", wf_file,
		.def = "", .check = cfg_check_file_path, .reload = CFG_RELOAD,
		.help = "file: path of the reference, little-endian cf32 samples (8 bytes each; relative to the config file's directory); L = size / 8 <= samples."),
	MODE_ENUM("waveform", "window", wf.window,
		.def = "hamming", .choices = names_window, .reload = CFG_RELOAD,
		.help = "Window applied to the reference in time: rect, hamming, hann, blackman or taylor."),
	MODE_UINT("waveform", "taylor_nbar", wf.taylor_nbar,
		.def = "5", .min = 1, .max = 100, .reload = CFG_RELOAD,
		.help = "taylor: number of nearly constant-level sidelobes (nbar)."),
	MODE_DOUBLE("waveform", "taylor_sll_db", wf.taylor_sll_db,
		.def = "35", .min = 0, .max = 200, .min_excl = 1, .reload = CFG_RELOAD,
		.help = "taylor: peak sidelobe level below the main lobe, in dB (positive)."),

	/* [mode NAME]: the id, and every MODE_* key of [waveform] above. */
	MODE_UINT("mode", "id", id,
		.def = "", .required = 1, .min = 0, .max = CFG_MAX_MODES - 1, .reload = CFG_RELOAD,
		.help = "The mode's number, which the digitizer gives each CPI it commits (chirp_ring_commit_mode) and chirpd hands on with the result; required, and distinct among the modes. Id 0 is the mode of CPIs committed without one: the [waveform] section's mode unless a [mode NAME] section takes id 0 (then [waveform] holds only sample_rate_hz)."),

	/* [processing] */
	KEY_ENUM("processing", "backend", backend,
		.def = "auto", .choices = names_backend, .reload = CFG_RESTART,
		.help = "Where pulse compression runs: auto (CUDA if a usable GPU, else CPU), cuda or cpu."),
	KEY_GPU("processing", "gpu", gpu,
		.def = "0", .max = 1023, .reload = CFG_RESTART,
		.help = "cuda: GPU to use, a CUDA device index or a PCI bus id like 0000:41:00.0."),
	KEY_AUTO("processing", "streams", streams,
		.def = "auto", .min = 1, .max = 16, .reload = CFG_RESTART,
		.help = "cuda: CPIs in flight at once (copy in / compute / copy out overlap): auto (at start, measure depths 2, 3 and 4 on this CPI shape and keep the fastest; the shallower unless a deeper one is 3 % faster) or a number."),
	KEY_BOOL("processing", "busy_poll", busy_poll,
		.def = "true", .reload = CFG_RELOAD,
		.help = "While CPIs are in flight the data thread polls the backend and the input ring without sleeping (one core busy under load, the lowest latency); false = sleep on the backend's completion notifications (up to 1 ms later to see new input)."),
	KEY_UINT("processing", "idle_spin_us", idle_spin_us,
		.def = "2000", .min = 0, .max = 1000000, .reload = CFG_RELOAD,
		.help = "How long after its last work, in microseconds, an idle thread keeps polling before it sleeps: the data thread waiting on an empty input ring (from the last CPI it took), and the CPU backend's worker threads waiting for the next CPI (from their last block). A sleeping thread is woken by the kernel, on a virtual machine through the hypervisor, which can take 1-2 ms at p99 there (doc/latency.md); a spin longer than the gap between CPIs keeps the threads awake while CPIs flow (each keeps a core busy then) and lets them sleep 2 ms after the input stops. With spinning workers the CPU backend also recomputes a block whose worker stalls (takeover = auto, doc/pc.md). 0 = sleep after a short spin of ~10-50 us (least CPU, a longer latency tail)."),
	KEY_ENUM("processing", "staging", staging,
		.def = "auto", .choices = names_staging, .reload = CFG_RESTART,
		.help = "cuda: register the rings' memory for DMA in place (register), copy through pinned buffers (copy), or try register then copy (auto)."),
	KEY_AUTO("processing", "staging_threads", staging_threads,
		.def = "auto", .min = 1, .max = 64, .reload = CFG_RESTART,
		.help = "cuda, copy staging only: threads that copy each CPI between the rings and the pinned staging buffers, the data thread included: auto (one per cpu in [numa] cpus, else per online cpu, at most 16: copies into pinned memory keep scaling up to about 16 threads, doc/cuda.md) or a number. Unused while the rings are registered for DMA in place."),
	KEY_NFFT("processing", "nfft", nfft,
		.def = "auto", .min = 1, .max = 1 << 28, .reload = CFG_RELOAD,
		.help = "FFT length: auto (smallest 2^a 3^b 5^c 7^d >= samples + L - 1) or a number >= samples + L - 1."),
	KEY_ENUM("processing", "normalize", normalize,
		.def = "noise", .choices = names_normalize, .reload = CFG_RELOAD,
		.help = "Output scaling: noise (gain 1/||h||, white noise keeps its power) or none (gain 1)."),
	KEY_AUTO("processing", "cpu_threads", cpu_threads,
		.def = "auto", .min = 1, .max = 1024, .reload = CFG_RELOAD,
		.help = "cpu: FFTW threads: auto (one per cpu in [numa] cpus, else per online cpu, at most 8) or a number."),
	/* Backend tuning (struct pc_tuning): speed, never results. Each can
	 * change on reload: a reload builds the new generation's backend with
	 * pc_create from the new file (chirpd.c gen_create), and pc_create is
	 * where every one of them is read. */
	KEY_ENUM("processing", "fftw_planner", fftw_planner,
		.def = "estimate", .choices = names_fftw_planner, .reload = CFG_RELOAD,
		.help = "cpu: how hard FFTW searches for fast FFT plans when the backend is built (at start and at each reload): estimate (no measurement: plans in milliseconds), measure (times candidate plans: seconds) or patient (a wider search: up to minutes per CPI shape, for FFTs up to 30-40 % faster than estimate's, doc/pc.md). The results are the same with every planner. With fftw_wisdom set a search runs once per host and CPI shape; without it every start and every reload searches again, and the reload applies only when the search is done (give chirpctl reload a --timeout that long)."),
	KEY_STR("processing", "fftw_wisdom", fftw_wisdom,
		.def = "", .check = cfg_check_file_path, .reload = CFG_RELOAD,
		.help = "cpu: file of FFTW wisdom (relative to the config file's directory); empty = none. Read before planning, written back after a measure or patient search, so a later start or reload with the same CPI shape takes its plans from the file in milliseconds. Under systemd use /var/lib/chirpd/fftw-wisdom (/var/lib/chirpd/NAME/fftw-wisdom for chirpd@NAME): the unit's StateDirectory, writable by chirpd and kept across restarts. A missing file only means a search; wisdom is specific to the machine, so remove the file after a CPU or FFTW change."),
	KEY_STR("processing", "capacity_cache", capacity_cache,
		.def = "auto", .check = check_cache_path, .reload = CFG_RELOAD,
		.help = "File where chirpd keeps the decisions it measures at start: the depth streams = auto picks and the capacity slots = auto sizes the rings by, one entry per machine and configuration (chirpd's build, the device and its driver, the CPI's geometry and formats, the filters, the backend settings and the radar chain). A start or reload whose entry is there uses it instead of measuring again, so a restart makes the same decisions and does not measure again (it runs only the short warm-up); an entry whose key differs in anything is measured afresh and stored. auto: capacity in systemd's StateDirectory ($STATE_DIRECTORY, /var/lib/chirpd for the unit), none outside systemd; empty = none; else an absolute path. chirpctl status says where the capacity came from (rings.capacity_source). Remove the file to measure again."),
	KEY_ENUM("processing", "takeover", takeover,
		.def = "auto", .choices = names_switch, .reload = CFG_RELOAD,
		.help = "cpu: straggler take-over: a block of rows that a worker thread took but has not finished after a grace is computed again by a thread that is waiting for it, so one descheduled worker does not hold the CPI up (the result is the same). auto = on while the workers poll between CPIs (idle_spin_us > 0), where an unfinished block means a stalled worker; off while they sleep, where it is mostly a late wake-up and the second copy would compete with the worker it waits for (doc/pc.md). on or off forces it."),
	KEY_AUTO("processing", "cpu_block_kib", cpu_block_kib,
		.def = "auto", .min = 1, .max = PC_MAX_BLOCK_KIB, .reload = CFG_RELOAD,
		.help = "cpu: rows each thread transforms at once, in KiB of FFT buffer: auto (at most 256 KiB, sized so that the threads finish a CPI together) or a number, taken as given. Smaller blocks share a CPI among more threads and lose less to a stalled one; larger ones make fewer, longer FFTW calls. chirpctl status names the blocks in its device string."),
	KEY_BOOL("processing", "cuda_graphs", cuda_graphs,
		.def = "true", .reload = CFG_RELOAD,
		.help = "cuda: a CPI whose buffers lie in registered memory (the rings, when registered for DMA in place: staging = register, or auto where registering works) runs as one CUDA graph per pipeline set, made at its first use and launched with the CPI's addresses: a few runtime calls instead of about 35, less CPU time and launch latency per CPI. false = every call queued one by one. The results are the same; the start log says which runs."),
	KEY_AUTO("processing", "cuda_chunks", cuda_chunks,
		.def = "auto", .min = 1, .max = PC_MAX_CHUNKS, .reload = CFG_RELOAD,
		.help = "cuda: row chunks each CPI is cut into, so that one chunk's copies overlap another's FFTs: auto (from the depth and the CPI size; at depth 3 and deeper a CPI of 16 MiB or more is cut in two) or a number. More chunks give one CPI a lower latency and cost capacity in CUDA calls (4 chunks: the lowest latency for 16 MiB CPIs, at 8-15 % of capacity, doc/cuda.md)."),
	KEY_UINT("processing", "cuda_idle_chunks", cuda_idle_chunks,
		.def = "1", .min = 1, .max = PC_MAX_CHUNKS, .reload = CFG_RELOAD,
		.help = "cuda: chunks for a CPI with nothing waiting behind it and no CPI in flight still copying in (where only its own latency counts), when the depth's layout (cuda_chunks) sends CPIs whole. 1 = no such layout: every CPI gets the depth's, which keeps the latency tail lower because cut and whole CPIs do not mix (doc/cuda.md, Layouts)."),
	KEY_UINT("processing", "cuda_spin_us", cuda_spin_us,
		.def = "300", .min = 0, .max = PC_MAX_CUDA_SPIN_US, .reload = CFG_RELOAD,
		.help = "cuda, with busy_poll = false: once the oldest CPI's input is in and only its last compute and copy-out remain, how long, in microseconds, a wait for it polls the GPU's events before it sleeps on the completion notification, which costs tens of microseconds of wake-up (with busy_poll = true the data thread never sleeps there). 0 = sleep at once."),
	KEY_BOOL("processing", "staging_nt", staging_nt,
		.def = "true", .reload = CFG_RELOAD,
		.help = "cuda, copy staging only: the copy threads write the pinned staging buffers with non-temporal (streaming) stores, which skip reading each destination cache line first (the DMA engine, not this core, reads the bytes next): less memory traffic and faster copies (doc/cuda.md); false = plain memcpy."),
	KEY_ENUM("processing", "cuda_fused", cuda_fused,
		.def = "auto", .choices = names_switch, .reload = CFG_RELOAD,
		.help = "cuda: pulse compression as one kernel per row (chirpd's own shared-memory FFT: pad, forward FFT, filter multiply, inverse FFT and output conversion without leaving the chip) instead of five launches around cuFFT. auto: fused when the FFT length factors into 2, 3, 5 and 7 and a row fits in the GPU's shared memory, else cuFFT; on: fused, or no CUDA backend (backend = cuda refuses to start, backend = auto falls back to the CPU backend and says why); off: cuFFT. Changes speed, never results (both are held to the CPU backend within float rounding). chirpctl status says which runs (fft_engine)."),

	/* [output] */
	KEY_ENUM("output", "mode", out_mode,
		.def = "complex", .choices = names_output, .reload = CFG_RELOAD,
		.help = "Result format: complex (cf32 y[n]), magnitude (float32 |y|) or power_db (float32 10 log10 |y|^2), C x P x R per CPI; with [doppler] enable, map_power (float32 |D|^2, the range-Doppler map, C x Nd x R per CPI, zero Doppler in the middle row) or map_db (the map in dB); or none: no output ring and no [output] file, the detections are the only result (needs [cfar] and a [detections] ring or file)."),
	KEY_STR("output", "ring", output_ring,
		.def = "/chirpd-out", .check = check_shm_name, .reload = CFG_RESTART,
		.help = "POSIX shared memory name of the output ring consumers read results from."),
	KEY_AUTO("output", "slots", output_slots,
		.def = "auto", .min = 2, .max = CHIRP_RING_MAX_SLOTS, .reload = CFG_RELOAD,
		.help = "CPIs the output ring holds: auto (the same time as the input ring, [input] buffer_ms at the capacity measured at start, at least 16: after a stall chirpd delivers its backlog at full rate) or a count 2..65536."),
	KEY_STR("output", "file", output_file,
		.def = "", .check = cfg_check_file_path, .reload = CFG_RELOAD,
		.help = "Also append every result CPI to this file (raw, output format; relative to the config file's directory); empty = off. Written by a thread of its own, never by the data path: when the file is slower than the CPIs (a slow disk, a full pipe) its queue of 4 results fills and whole results are dropped from the file and counted (output_file_drops); failed writes are counted and logged."),
	KEY_BOOL("output", "hugepages", output_hugepages,
		.def = "false", .reload = CFG_RELOAD,
		.help = "Back the output ring with 2 MiB huge pages, as [input] hugepages does the input ring: consumers find it without being told. Huge pages cut the time chirpd takes to map and page-lock the rings at start (the rings phase of the start-up line), which is most of a restart's time with large rings."),
	KEY_BOOL("output", "allow_foreign_owner", output_allow_foreign_owner,
		.def = "false", .reload = CFG_RESTART,
		.help = "Adopt an existing output ring object owned by another user; false = refuse it, naming the owner."),

	/* [radar] */
	KEY_DOUBLE("radar", "prf_hz", prf_hz,
		.def = "0", .min = 0, .max = 1e9, .reload = CFG_RELOAD,
		.help = "Pulse repetition frequency in Hz: with carrier_hz it turns Doppler bins into radial velocities in the detection list; 0 = unknown."),
	KEY_DOUBLE("radar", "carrier_hz", carrier_hz,
		.def = "0", .min = 0, .max = 1e12, .reload = CFG_RELOAD,
		.help = "Carrier (RF centre) frequency in Hz, for velocities: v = bin x prf_hz / Nd x c / (2 carrier_hz), positive closing; 0 = unknown."),
	KEY_ENUM("radar", "velocity", velocity,
		.def = "auto", .choices = names_switch, .reload = CFG_RELOAD,
		.help = "Velocities in the detection list: auto (when prf_hz and carrier_hz are both set; otherwise velocity_mps is NaN, null in the JSON lines, and lists carry CHIRP_DET_NO_VELOCITY), on (required: an error without both) or off (never)."),

	/* [doppler] */
	KEY_BOOL("doppler", "enable", doppler,
		.def = "false", .reload = CFG_RELOAD,
		.help = "After pulse compression, run MTI and a Doppler FFT along the pulses of each range gate (the range-Doppler map; needed by [cfar] and the map output modes). The exact definition is in include/chirp/pc.h, RADAR CHAIN."),
	KEY_ENUM("doppler", "mti", mti,
		.def = "none", .choices = names_mti, .reload = CFG_RELOAD,
		.help = "Moving-target indicator before the Doppler FFT, a canceller along pulses that removes stationary clutter: none (P' = P pulses), two_pulse (y[p+1] - y[p], P' = P - 1) or three_pulse (y[p] - 2 y[p+1] + y[p+2], P' = P - 2)."),
	KEY_ENUM("doppler", "window", doppler_window,
		.def = "hann", .choices = names_window, .reload = CFG_RELOAD,
		.help = "Window over the P' pulses before the Doppler FFT: rect, hamming, hann, blackman or taylor (lower Doppler sidelobes for a wider main lobe). The map keeps white noise at its power whatever the window."),
	KEY_UINT("doppler", "taylor_nbar", doppler_taylor_nbar,
		.def = "5", .min = 1, .max = 100, .reload = CFG_RELOAD,
		.help = "taylor: number of nearly constant-level sidelobes (nbar)."),
	KEY_DOUBLE("doppler", "taylor_sll_db", doppler_taylor_sll_db,
		.def = "35", .min = 0, .max = 200, .min_excl = 1, .reload = CFG_RELOAD,
		.help = "taylor: peak sidelobe level below the main lobe, in dB (positive)."),
	KEY_AUTO("doppler", "fft", doppler_fft,
		.def = "auto", .min = 1, .max = 1048576, .reload = CFG_RELOAD,
		.help = "Doppler FFT length Nd: auto (the smallest 2^a 3^b 5^c 7^d >= P') or a number >= P' (zero-padded: finer bins, the same resolution)."),

	/* [cfar] */
	KEY_BOOL("cfar", "enable", cfar,
		.def = "false", .reload = CFG_RELOAD,
		.help = "Detect targets in the range-Doppler map with a constant false-alarm rate (CFAR) threshold and keep the local maxima as a detection list per CPI ([detections]); needs [doppler] enable."),
	KEY_ENUM("cfar", "method", cfar_method,
		.def = "ca", .choices = names_cfar, .reload = CFG_RELOAD,
		.help = "Noise estimate from the training cells: ca (their mean, best in uniform noise), go (the greater of the leading and lagging halves' means: fewer false alarms at clutter edges), so (the smaller: resolves close targets) or os (the os_rank-th smallest: robust to targets among the training cells)."),
	KEY_ENUM("cfar", "integrate", cfar_integrate,
		.def = "noncoherent", .choices = ch_integrate, .reload = CFG_RELOAD,
		.help = "noncoherent: the CFAR runs on the channels' summed maps, one list whose records have channel -1; none: on each channel's map, a list with each channel's detections."),
	KEY_UINT("cfar", "guard_range", guard_range,
		.def = CFG_XSTR(PC_CFAR_GUARD_RANGE), .min = 0, .max = 1048576, .reload = CFG_RELOAD,
		.help = "Guard cells on each side of the cell under test along range, left out of the noise estimate (the target's own spread)."),
	KEY_UINT("cfar", "guard_doppler", guard_doppler,
		.def = CFG_XSTR(PC_CFAR_GUARD_DOPPLER), .min = 0, .max = 1048576, .reload = CFG_RELOAD,
		.help = "Guard cells on each side along Doppler (the axis is cyclic)."),
	KEY_UINT("cfar", "train_range", train_range,
		.def = CFG_XSTR(PC_CFAR_TRAIN_RANGE), .min = 0, .max = 1048576, .reload = CFG_RELOAD,
		.help = "Training cells on each side beyond the guard along range; guard + training on both sides must fit in the range gates."),
	KEY_UINT("cfar", "train_doppler", train_doppler,
		.def = CFG_XSTR(PC_CFAR_TRAIN_DOPPLER), .min = 0, .max = 1048576, .reload = CFG_RELOAD,
		.help = "Training cells on each side beyond the guard along Doppler; guard + training on both sides must fit in the Doppler bins."),
	KEY_AUTO("cfar", "os_rank", os_rank,
		.def = "auto", .min = 1, .max = PC_CFAR_OS_MAX_CELLS, .reload = CFG_RELOAD,
		.help = "os: which order statistic of the training cells is the noise estimate, 1 = the smallest: auto (3/4 of the cells) or a number up to the training cells (at most 256 cells with os)."),
	KEY_DOUBLE("cfar", "pfa", pfa,
		.def = "1e-6", .min = 0, .max = 1, .min_excl = 1, .max_excl = 1, .reload = CFG_RELOAD,
		.help = "Probability of false alarm per cell, 0 < pfa < 1: sets the threshold over the noise estimate (status and metrics show the rate observed)."),
	KEY_UINT("cfar", "maxima_range", maxima_range,
		.def = "1", .min = 0, .max = 1048576, .reload = CFG_RELOAD,
		.help = "A crossing is a detection only if it is the largest cell within this many gates on each side (and maxima_doppler bins): one detection per target instead of its whole peak."),
	KEY_UINT("cfar", "maxima_doppler", maxima_doppler,
		.def = "1", .min = 0, .max = 1048576, .reload = CFG_RELOAD,
		.help = "The local-maximum neighbourhood along Doppler, bins on each side (cyclic)."),
	KEY_UINT("cfar", "max_detections", max_detections,
		.def = "1024", .min = 1, .max = PC_MAX_DETECTIONS, .reload = CFG_RELOAD,
		.help = "Records a CPI's list holds: more detections keep the first in list order and mark the list overflowed (counted); the size of a detection ring's slot."),

	/* [array] */
	KEY_ENUM("array", "geometry", array_geometry,
		.def = "ula", .choices = ch_array, .reload = CFG_RELOAD,
		.help = "Where the receive channels' elements are, for [beams]: ula (a uniform linear array along x, centred, spacing_m apart, channel 0 on the left looking out) or file (x y z in metres per channel from [array] file). The frame: x right along the face, y up, z boresight (doc/beams.md)."),
	KEY_DOUBLE("array", "spacing_m", array_spacing_m,
		.def = "0", .min = 0, .max = 1e4, .reload = CFG_RELOAD,
		.help = "ula: element spacing in metres (half a wavelength, 299792458 / (2 carrier_hz), has no grating lobes); required with ula and beams. 0 = unset."),
	KEY_STR("array", "file", array_file,
		.def = "", .check = cfg_check_file_path, .reload = CFG_RELOAD,
		.help = "file: one line per channel in channel order, x_m y_m z_m separated by blanks, # comments, exactly [cpi] channels lines, no two elements at one place (relative to the config file's directory); read again on reload. Its errors name its own FILE:LINE."),
	KEY_STR("array", "calibration", array_calibration,
		.def = "", .check = cfg_check_file_path, .reload = CFG_RELOAD,
		.help = "Per-channel complex gain the beamformer divides out: one line per channel, gain (linear amplitude, > 0) and phase_deg (channel c reports gain x exp(j phase) times what its element received); empty = none (every gain 1). Read again on reload."),

	/* [beams] */
	KEY_ENUM("beams", "mode", beams_mode,
		.def = "off", .choices = ch_beams_mode, .reload = CFG_RELOAD,
		.help = "Digital beamforming before pulse compression (include/chirp/pc.h, BEAMS; doc/beams.md): off (channels go through the chain as they are), conventional (taper x calibration^-1 x steering vector, unit gain towards each beam) or mvdr (adaptive: MVDR weights from each CPI's own training cells, nulls on jammers; at most 64 channels). With beams the maps, the CFAR and the detections are per beam (B maps), every detection gets its beam and a monopulse angle, and each CPI's pointing from the input ring steers the whole set. Needs [radar] carrier_hz and [cfar] integrate = none."),
	KEY_ENUM("beams", "layout", beams_layout,
		.def = "fan", .choices = ch_beams_layout, .reload = CFG_RELOAD,
		.help = "fan: count beams spacing_u apart in u = sin(az) cos(el) around azimuth_deg, elevation_deg; list: the directions of [beams] list."),
	KEY_UINT("beams", "count", beams_count,
		.def = "1", .min = 1, .max = PC_MAX_BEAMS, .reload = CFG_RELOAD,
		.help = "Number of beams B, 1..256 (and as many as the memory holds: B maps of Nd x R). A reload may change it; the output ring's geometry changes with it (re-created)."),
	KEY_DOUBLE("beams", "azimuth_deg", beams_azimuth_deg,
		.def = "0", .min = -90, .max = 90, .reload = CFG_RELOAD,
		.help = "fan: the centre's azimuth in degrees from boresight, positive towards +x; every beam of the fan must be visible (u^2 + v^2 <= 1) at zero pointing."),
	KEY_DOUBLE("beams", "elevation_deg", beams_elevation_deg,
		.def = "0", .min = -90, .max = 90, .reload = CFG_RELOAD,
		.help = "fan: the centre's elevation in degrees, positive up."),
	KEY_DOUBLE("beams", "spacing_u", beams_spacing_u,
		.def = "0", .min = 0, .max = 2, .reload = CFG_RELOAD,
		.help = "fan: spacing of the beams in u (a phased array's beams keep their width in u as they steer); 0 = auto: lambda / aperture, the uniform beam's null-to-null half width (the aperture along x: the elements' x extent x C / (C - 1))."),
	KEY_STR("beams", "list", beams_list,
		.def = "", .reload = CFG_RELOAD,
		.help = "list: count directions as 'az,el; az,el; ...' in degrees, each within -90..90."),
	KEY_ENUM("beams", "taper", beams_taper,
		.def = "taylor", .choices = names_window, .reload = CFG_RELOAD,
		.help = "Amplitude taper across the channels (conventional beams): rect, hamming, hann, blackman or taylor (lower sidelobes for a wider beam)."),
	KEY_UINT("beams", "taylor_nbar", beams_taylor_nbar,
		.def = "4", .min = 1, .max = 100, .reload = CFG_RELOAD,
		.help = "taper taylor: number of nearly constant-level sidelobes (nbar)."),
	KEY_DOUBLE("beams", "taylor_sll_db", beams_taylor_sll_db,
		.def = "30", .min = 0, .max = 200, .min_excl = 1, .reload = CFG_RELOAD,
		.help = "taper taylor: peak sidelobe level below the main lobe, in dB (positive)."),
	KEY_UINT("beams", "snapshots", beams_snapshots,
		.def = "0", .min = 0, .max = 16777216, .reload = CFG_RELOAD,
		.help = "mvdr: training cells K of each CPI the covariance is estimated from (before pulse compression: pulses 0, pulse_stride, ... and in each gates first_gate, first_gate + gate_stride, ..., the first K); 0 = auto (2 C, an SMI loss near 3 dB); at least C when loading is 0."),
	KEY_UINT("beams", "first_gate", beams_first_gate,
		.def = "0", .min = 0, .max = 16777216, .reload = CFG_RELOAD,
		.help = "mvdr: the first training gate, < [cpi] samples."),
	KEY_UINT("beams", "gate_stride", beams_gate_stride,
		.def = "1", .min = 1, .max = 16777216, .reload = CFG_RELOAD,
		.help = "mvdr: gates between training cells."),
	KEY_UINT("beams", "pulse_stride", beams_pulse_stride,
		.def = "1", .min = 1, .max = 1048576, .reload = CFG_RELOAD,
		.help = "mvdr: pulses between training rows."),
	KEY_DOUBLE("beams", "loading", beams_loading,
		.def = "0.01", .min = 0, .max = 1000, .reload = CFG_RELOAD,
		.help = "mvdr: diagonal loading delta, R + delta tr(R) / C I: how far the adapted beam may leave the untapered conventional one (larger: shallower nulls, a target in the training cells nulled less)."),
	KEY_BOOL("beams", "monopulse", beams_monopulse,
		.def = "true", .reload = CFG_RELOAD,
		.help = "A monopulse angle on every detection (count >= 2): the maximum-likelihood direction from the complex outputs of its beam and the neighbouring beams, finer than the beam spacing, with an angle-quality flag (doc/beams.md); false = the beam's own direction."),

	/* [detections] */
	KEY_STR("detections", "ring", det_ring,
		.def = "", .check = check_shm_name_or_none, .reload = CFG_RELOAD,
		.help = "POSIX shared memory name of the detection ring (format det: one list per CPI, chirp/detect.h; chirp-tap reads it), e.g. /chirpd-det; empty = none. A full ring never holds chirpd up: the list is dropped and counted."),
	KEY_AUTO("detections", "slots", det_slots,
		.def = "auto", .min = 2, .max = CHIRP_RING_MAX_SLOTS, .reload = CFG_RELOAD,
		.help = "Lists the detection ring holds: auto (the same time as the input ring, as [output] slots) or a count 2..65536."),
	KEY_STR("detections", "file", det_file,
		.def = "", .check = cfg_check_file_path, .reload = CFG_RELOAD,
		.help = "Also append every CPI's list to this file as one JSON object per line: seq, timestamp_ns, first_sample, mode, count, found, overflow, skipped and detections [{channel, range_gate, doppler_bin, range_m, velocity_mps (null when unknown), power, noise, snr_db}] (relative to the config file's directory); empty = off. Written by a thread of its own, never by the data path: when the file is slower than the CPIs its queue (4 lists at max_detections, more of shorter ones) fills and whole lines are dropped and counted (detection_file_drops); failed writes are counted and logged, never fatal."),
	KEY_BOOL("detections", "allow_foreign_owner", det_allow_foreign_owner,
		.def = "false", .reload = CFG_RELOAD,
		.help = "Adopt an existing detection ring object owned by another user; false = refuse it, naming the owner."),

	/* [metrics] */
	KEY_STR("metrics", "listen", metrics_listen,
		.def = "", .check = check_listen, .reload = CFG_RESTART,
		.help = "Serve Prometheus metrics (and, with [live] enable, the live view) over HTTP at host:port, host a numeric IPv4 address or an IPv6 address in brackets (names are not looked up), port 1..65535 (e.g. 127.0.0.1:9464, [::1]:9464); empty = off. An address other than loopback (127.0.0.0/8, ::1) needs allow_remote = true."),
	KEY_BOOL("metrics", "allow_remote", metrics_allow_remote,
		.def = "false", .reload = CFG_RESTART,
		.help = "Let listen be an address other than loopback, reachable from other hosts. The listener has no authentication and no TLS: anyone who reaches the port reads the metrics and, with [live] enable, the maps, detections and state of the radar, in clear text, and can hold connections (at most 32; [live] max_clients streams). Keep it off and reach a remote chirpd through an SSH tunnel or a reverse proxy that authenticates; turn it on only on a trusted network or behind a firewall (doc/live.md)."),

	/* [live] */
	KEY_BOOL("live", "enable", live_enable,
		.def = "false", .reload = CFG_RESTART,
		.help = "Serve the live view on the HTTP listener ([metrics] listen; when that is empty, on 127.0.0.1:9464 with the metrics): http://HOST:PORT/live shows the range-Doppler map of a chosen channel (or beam) with its detections, a detection table, a range-time view and chirpd's state, pushed as Server-Sent Events (/live/events; one frame as JSON: /live/frame.json). Read-only. The map is the radar chain's own ([doppler] enable), in every [output] mode, none (detections only) included: the backend reduces the maps a page watches by max-hold where they are (on the GPU with the CUDA backend) and only the reduced cells reach the page. The data thread samples a frame as it submits a CPI, at most fps a second and only while a page watches, and never waits for a client (doc/live.md)."),
	KEY_DOUBLE("live", "fps", live_fps,
		.def = "15", .min = 1, .max = 50, .reload = CFG_RESTART,
		.help = "Frames a second at most, 1..50: each costs the backend a max-hold of the watched maps to at most map_max_doppler x map_max_range cells each (the CUDA backend: a small kernel and a copy of those cells, that CPI queued call by call instead of as a graph), and the data thread a copy of those cells and of the detection list."),
	KEY_UINT("live", "max_clients", live_max_clients,
		.def = "4", .min = 1, .max = 16, .reload = CFG_RESTART,
		.help = "Live event streams at once, 1..16; more are refused (HTTP 503, counted in chirpd_live_clients_refused_total). Each holds one encoded frame (about 0.25 MiB at the default map size); a client that reads nothing for 5 s is disconnected (chirpd_live_clients_dropped_total), a slow one skips frames (chirpd_live_frames_skipped_total)."),
	KEY_UINT("live", "map_max_range", live_map_max_range,
		.def = "512", .min = 8, .max = 4096, .reload = CFG_RESTART,
		.help = "Columns of a live map at most: range gates are reduced by max-hold over blocks of ceil(gates / map_max_range)."),
	KEY_UINT("live", "map_max_doppler", live_map_max_doppler,
		.def = "256", .min = 8, .max = 1024, .reload = CFG_RESTART,
		.help = "Rows of a live map at most: Doppler bins reduced by max-hold the same way. A frame keeps 4 maps (channels or beams) at full size; with more, each is reduced further so that all fit. chirpd keeps a snapshot buffer of 4 x map_max_doppler x map_max_range floats per CPI in flight (the CUDA backend: a device and a pinned one per set)."),

	/* [publish] */
	KEY_STR("publish", "listen", pub_listen,
		.def = "", .check = zpub_check_endpoint, .reload = CFG_RESTART,
		.help = "Publish detections, maps and status on a ZeroMQ PUB socket bound to this endpoint: tcp://ADDRESS:PORT (tcp://127.0.0.1:5556; tcp://*:5556 on every interface; port * = one the system picks, shown in status publish.endpoint) or ipc://PATH; empty = off. Each message is three frames: the topic (det, map or status), a JSON header and the payload (doc/publish.md). Sent by threads of their own, never by the data path: a message the queue or a subscriber (hwm) has no room for is dropped and counted (publish_det_drops and the like), never waited for."),
	KEY_BOOL("publish", "detections", pub_detections,
		.def = "true", .reload = CFG_RESTART,
		.help = "Publish every CPI's detection list (topic det; the payload is the list as on the detection ring, chirp/detect.h), when chirpd started with [cfar] enable (the publisher's queue is sized then)."),
	KEY_DOUBLE("publish", "status_hz", pub_status_hz,
		.def = "1", .min = 0, .max = 10, .reload = CFG_RESTART,
		.help = "Status messages a second, at most 10 (the main loop's tick) (topic status; the payload is chirpctl status's JSON); 0 = none."),
	KEY_DOUBLE("publish", "maps_hz", pub_maps_hz,
		.def = "0", .min = 0, .max = 1000, .reload = CFG_RESTART,
		.help = "Range-Doppler maps a second (topic map), with [doppler] enable and a map output mode: the newest CPI's map when one is due, reduced by max-hold to at most map_max_doppler x map_max_range float32 cells; 0 = none. The data thread reads the whole map once per map sent."),
	KEY_UINT("publish", "map_max_range", pub_map_max_range,
		.def = "1024", .min = 1, .max = 65536, .reload = CFG_RESTART,
		.help = "Columns of a published map at most: range gates are reduced by max-hold over blocks of ceil(gates / map_max_range)."),
	KEY_UINT("publish", "map_max_doppler", pub_map_max_doppler,
		.def = "256", .min = 1, .max = 65536, .reload = CFG_RESTART,
		.help = "Rows of a published map at most: Doppler bins (and channels) reduced by max-hold the same way."),
	KEY_UINT("publish", "hwm", pub_hwm,
		.def = "1000", .min = 1, .max = 1000000, .reload = CFG_RESTART,
		.help = "High-water mark (ZMQ_SNDHWM): messages queued per subscriber at most. A message that a subscriber at its mark has no room for is dropped for every subscriber and counted; the sequence numbers in the headers show the gap."),
	KEY_UINT("publish", "queue", pub_queue,
		.def = "64", .min = 1, .max = 65536, .reload = CFG_RESTART,
		.help = "Detection lists (at max_detections as at start) the publisher's queue holds between the data thread and its sender; more of shorter ones. A list longer than at start (a reload that raised max_detections) is dropped and counted."),

	/* [trace] */
	KEY_UINT("trace", "records", trace_records,
		.def = "4096", .min = 16, .max = 1048576, .reload = CFG_RESTART,
		.help = "Flight recorder: stage timestamps of the last N CPIs, kept in memory allocated at start (chirpctl trace; about 150 bytes each)."),
	KEY_DOUBLE("trace", "latency_budget_ms", latency_budget_ms,
		.def = "20", .min = 0, .max = 60000, .reload = CFG_RELOAD,
		.help = "A CPI delivered later than this after its input was committed is counted (over_budget) and logged with its timeline, at most one line a second; 0 = no budget."),
};

const size_t cfg_nkeys = sizeof(cfg_tab) / sizeof(cfg_tab[0]);
_Static_assert(sizeof(cfg_tab) / sizeof(cfg_tab[0]) <= CFG_KEYS_MAX,
	       "raise CFG_KEYS_MAX (config_private.h)");

/* ---- value checks ------------------------------------------------------ */

static int check_socket_path(const char *v, char *err, size_t len)
{
	if (v[0] != '/') {
		snprintf(err, len, "'%s' is not an absolute path", v);
		return -EINVAL;
	}
	if (strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, len, "path is %zu characters, a Unix socket path holds at most %zu",
			 strlen(v), sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -ENAMETOOLONG;
	}
	return 0;
}

static int check_group(const char *v, char *err, size_t len)
{
	struct group grp, *res = NULL;
	char buf[4096];
	int rc;

	if (!v[0])
		return 0;
	for (const char *p = v; *p; p++) {
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p)) {
			snprintf(err, len, "'%s' is not a valid group name", v);
			return -EINVAL;
		}
	}
	rc = getgrnam_r(v, &grp, buf, sizeof(buf), &res);
	if (rc == 0 && !res) {
		snprintf(err, len, "no group '%s' on this system", v);
		return -ENOENT;
	}
	if (rc != 0) {
		snprintf(err, len, "cannot look up group '%s': %s", v, strerror(rc));
		return -rc;
	}
	return 0;
}

/* "2-5,8,10-11": ranges of cpu numbers < CPU_SETSIZE (sysnuma's parser,
 * the one that applies the list, so what --check accepts is what runs). */
static int check_cpus(const char *v, char *err, size_t len)
{
	cpu_set_t set;

	return v[0] ? sysnuma_parse_cpus(v, &set, err, len) : 0;
}

/* POSIX shm names: "/name", one slash, at most NAME_MAX. */
static int check_shm_name(const char *v, char *err, size_t len)
{
	if (v[0] != '/' || v[1] == '\0' || strchr(v + 1, '/')) {
		snprintf(err, len, "'%s' is not a shared memory name like /chirpd-in (one leading '/', no other)", v);
		return -EINVAL;
	}
	if (strlen(v) > NAME_MAX) {
		snprintf(err, len, "name is longer than %d characters", NAME_MAX);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* A shm name, or "" for none. */
static int check_shm_name_or_none(const char *v, char *err, size_t len)
{
	return v[0] ? check_shm_name(v, err, len) : 0;
}

/* Any path. Also marks the keys whose relative paths are resolved
 * against the config file's directory (see handler). Existence is checked
 * where it matters (the waveform file, in check_consistency). */
/* capacity_cache: auto, empty or an absolute path. */
static int check_cache_path(const char *v, char *err, size_t len)
{
	if (!v[0] || !strcmp(v, "auto") || v[0] == '/')
		return 0;
	snprintf(err, len, "'%s': want auto, empty (none) or an absolute path", v);
	return -1;
}

int cfg_check_file_path(const char *v, char *err, size_t len)
{
	(void)v; (void)err; (void)len;
	return 0;
}

/* "host:port" or "[v6]:port" with numeric hosts, port 1..65535; "" = off.
 * metrics_parse_listen is the parser the listener uses at start, so --check
 * and a reload catch what would otherwise fail only then. */
static int check_listen(const char *v, char *err, size_t len)
{
	struct sockaddr_storage ss;

	return v[0] ? metrics_parse_listen(v, &ss, err, len) : 0;
}

/* ---- parsing one value ------------------------------------------------- */

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1", NULL };
	static const char *const no[] = { "false", "no", "off", "0", NULL };

	for (int i = 0; yes[i]; i++)
		if (!strcasecmp(v, yes[i]))
			return *out = 1, 0;
	for (int i = 0; no[i]; i++)
		if (!strcasecmp(v, no[i]))
			return *out = 0, 0;
	return -EINVAL;
}

/* Strict decimal integer: optional sign, digits, nothing else. */
static int parse_ll(const char *v, long long *out)
{
	char *end;

	if (!v[0] || isspace((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	*out = strtoll(v, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	return 0;
}

void cfg_choices_list(const struct name_entry *ch, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; ch[i].name && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "|" : "", ch[i].name);
}

static int range_err(const struct cfg_key *k, const char *v, char *err, size_t len)
{
	if (k->min_excl || k->max_excl)
		snprintf(err, len, "%s is out of range (%s %g, %s %g)", v, k->min_excl ? ">" : ">=",
			 k->min, k->max_excl ? "<" : "<=", k->max);
	else
		snprintf(err, len, "%s is out of range (%.15g..%.15g)", v, k->min, k->max);
	return -ERANGE;
}

static int parse_int_range(const struct cfg_key *k, const char *v, long long *out,
			   char *err, size_t len)
{
	int rc = parse_ll(v, out);

	if (rc == -EINVAL) {
		snprintf(err, len, "'%s' is not an integer", v);
		return rc;
	}
	if (rc == -ERANGE || *out < (long long)k->min || *out > (long long)k->max)
		return range_err(k, v, err, len);
	return 0;
}

/* n hex digits (1 <= n <= max) at *p, advancing p. */
static int hex_run(const char **p, int max)
{
	int n = 0;

	while (isxdigit((unsigned char)**p) && n <= max) {
		(*p)++;
		n++;
	}
	return n >= 1 && n <= max;
}

/* [DOMAIN:]BUS:DEVICE.FUNCTION in hex, as nvidia-smi and lspci -D write it. */
static int pci_bus_id_ok(const char *v)
{
	const char *p = v, *colon2 = strchr(v, ':') ? strchr(strchr(v, ':') + 1, ':') : NULL;

	if (colon2 && (!hex_run(&p, 8) || *p++ != ':'))
		return 0;
	if (!hex_run(&p, 2) || *p++ != ':' || !hex_run(&p, 2) || *p++ != '.')
		return 0;
	return *p >= '0' && *p <= '7' && p[1] == '\0';
}

/* parse_int_range, where a value that is no integer at all gets a message
 * naming the words the key also takes: "'<v>' <what>". */
static int parse_int_or(const struct cfg_key *k, const char *v, long long *ll, const char *what,
			char *err, size_t len)
{
	int rc = parse_int_range(k, v, ll, err, len);

	if (rc == -EINVAL)
		snprintf(err, len, "'%s' %s", v, what);
	return rc;
}

static int parse_str(const struct cfg_key *k, char *base, const char *v, char *err, size_t len)
{
	int rc;

	if (strlen(v) >= k->size) {
		snprintf(err, len, "value is %zu characters, at most %zu allowed",
			 strlen(v), k->size - 1);
		return -ENAMETOOLONG;
	}
	if (k->check && (rc = k->check(v, err, len)) < 0)
		return rc;
	memcpy(base, v, strlen(v) + 1);
	return 0;
}

static int parse_bool_value(const char *v, int *out, char *err, size_t len)
{
	if (parse_bool(v, out) < 0) {
		snprintf(err, len, "'%s' is not a boolean (true|false|yes|no|on|off|1|0)", v);
		return -EINVAL;
	}
	return 0;
}

/* "auto" (0) or an integer in range. */
static int parse_auto(const struct cfg_key *k, const char *v, long long *ll, char *err, size_t len)
{
	if (!strcmp(v, "auto")) {
		*ll = 0;
		return 0;
	}
	return parse_int_or(k, v, ll, "is neither auto nor an integer", err, len);
}

/* A finite decimal number within [min, max], an end excluded with
 * min_excl / max_excl. */
static int parse_double(const struct cfg_key *k, const char *v, double *out, char *err, size_t len)
{
	char *end;
	double d;

	if (!v[0] || isspace((unsigned char)v[0])) {
		snprintf(err, len, "'%s' is not a number", v);
		return -EINVAL;
	}
	errno = 0;
	d = strtod(v, &end);
	if (*end || end == v) {
		snprintf(err, len, "'%s' is not a number", v);
		return -EINVAL;
	}
	if (!isfinite(d) || errno == ERANGE || d > k->max || (k->max_excl && d >= k->max) ||
	    ((k->min_excl) ? d <= k->min : d < k->min))
		return range_err(k, v, err, len);
	*out = d;
	return 0;
}

static int parse_enum(const struct cfg_key *k, const char *v, int *out, char *err, size_t len)
{
	char list[128];

	for (int i = 0; k->choices[i].name; i++) {
		if (!strcmp(v, k->choices[i].name)) {
			*out = k->choices[i].value;
			return 0;
		}
	}
	cfg_choices_list(k->choices, list, sizeof(list));
	snprintf(err, len, "'%s' is not one of %s", v, list);
	return -EINVAL;
}

/* "auto", "none" or a NUMA node number. */
static int parse_numa(const struct cfg_key *k, const char *v, int *out, char *err, size_t len)
{
	long long ll;
	int rc;

	if (!strcmp(v, "auto")) {
		*out = CFG_NUMA_AUTO;
		return 0;
	}
	if (!strcmp(v, "none")) {
		*out = CFG_NUMA_NONE;
		return 0;
	}
	rc = parse_int_or(k, v, &ll, "is not auto, none or a node number", err, len);
	if (rc < 0)
		return rc;
	*out = (int)ll;
	return 0;
}

/* A device index, or a PCI bus id (gpu = -1, the id in gpu_bus_id). */
static int parse_gpu(const struct cfg_key *k, struct chirp_config *c, const char *v,
		     char *err, size_t len)
{
	long long ll;
	int rc;

	/* A PCI bus id has a ':'; an index is a plain number. */
	if (strchr(v, ':')) {
		if (!pci_bus_id_ok(v) || strlen(v) >= SZ(gpu_bus_id)) {
			snprintf(err, len, "'%s' is neither a device index nor a PCI bus id like 0000:41:00.0", v);
			return -EINVAL;
		}
		c->gpu = -1;
		memcpy(c->gpu_bus_id, v, strlen(v) + 1);
		return 0;
	}
	rc = parse_int_or(k, v, &ll, "is neither a device index nor a PCI bus id like 0000:41:00.0",
			  err, len);
	if (rc < 0)
		return rc;
	c->gpu = (int)ll;
	c->gpu_bus_id[0] = '\0';
	return 0;
}

/* Where k's value lives: in mode m for a mode's key (in_mode), else in c. */
char *cfg_key_base(const struct cfg_key *k, struct chirp_config *c, struct cfg_mode *m)
{
	return (k->in_mode) ? (char *)m + k->off : (char *)c + k->off;
}

/* Parse v as k's type into c (into m for a mode's key); < 0 with the
 * reason in err, c and m unchanged. */
int cfg_parse_value(const struct cfg_key *k, struct chirp_config *c, struct cfg_mode *m,
		       const char *v, char *err, size_t len)
{
	char *base = cfg_key_base(k, c, m);
	long long ll;
	int rc;

	switch (k->type) {
	case T_STR:
		return parse_str(k, base, v, err, len);
	case T_BOOL:
		return parse_bool_value(v, (int *)base, err, len);
	case T_INT:
		if ((rc = parse_int_range(k, v, &ll, err, len)) < 0)
			return rc;
		*(int *)base = (int)ll;
		return 0;
	case T_UINT:
		if ((rc = parse_int_range(k, v, &ll, err, len)) < 0)
			return rc;
		*(unsigned *)base = (unsigned)ll;
		return 0;
	case T_AUTO_INT:
		if ((rc = parse_auto(k, v, &ll, err, len)) < 0)
			return rc;
		*(int *)base = (int)ll;
		return 0;
	case T_NFFT:
		if ((rc = parse_auto(k, v, &ll, err, len)) < 0)
			return rc;
		*(size_t *)base = (size_t)ll;
		return 0;
	case T_DOUBLE:
		return parse_double(k, v, (double *)base, err, len);
	case T_ENUM:
		return parse_enum(k, v, (int *)base, err, len);
	case T_NUMA:
		return parse_numa(k, v, (int *)base, err, len);
	case T_GPU:
		return parse_gpu(k, c, v, err, len);
	}
	snprintf(err, len, "internal error: key type %d", (int)k->type);
	return -EINVAL;
}

/* The value of k in c (in m for a mode's key) as a user would write it
 * (round-trips through cfg_parse_value). */
void cfg_format_value(const struct cfg_key *k, const struct chirp_config *c,
			 const struct cfg_mode *m, char *buf, size_t len)
{
	const char *base = cfg_key_base(k, (struct chirp_config *)c, (struct cfg_mode *)m);

	switch (k->type) {
	case T_STR:
		snprintf(buf, len, "%s", base);
		return;
	case T_BOOL:
		snprintf(buf, len, "%s", *(const int *)base ? "true" : "false");
		return;
	case T_INT:
		snprintf(buf, len, "%d", *(const int *)base);
		return;
	case T_UINT:
		snprintf(buf, len, "%u", *(const unsigned *)base);
		return;
	case T_AUTO_INT:
		if (*(const int *)base == 0)
			snprintf(buf, len, "auto");
		else
			snprintf(buf, len, "%d", *(const int *)base);
		return;
	case T_NFFT:
		if (*(const size_t *)base == 0)
			snprintf(buf, len, "auto");
		else
			snprintf(buf, len, "%zu", *(const size_t *)base);
		return;
	case T_DOUBLE: {
		double d = *(const double *)base;
		/* Shortest %g that reads back exactly. */
		for (int prec = 6; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, d);
			if (strtod(buf, NULL) == d)
				return;
		}
		return;
	}
	case T_ENUM:
		for (int i = 0; k->choices[i].name; i++) {
			if (k->choices[i].value == *(const int *)base) {
				snprintf(buf, len, "%s", k->choices[i].name);
				return;
			}
		}
		snprintf(buf, len, "?");
		return;
	case T_NUMA: {
		int n = *(const int *)base;
		if (n == CFG_NUMA_AUTO)
			snprintf(buf, len, "auto");
		else if (n == CFG_NUMA_NONE)
			snprintf(buf, len, "none");
		else
			snprintf(buf, len, "%d", n);
		return;
	}
	case T_GPU:
		if (c->gpu < 0)
			snprintf(buf, len, "%s", c->gpu_bus_id);
		else
			snprintf(buf, len, "%d", c->gpu);
		return;
	}
	snprintf(buf, len, "?");
}

/* "mode NAME" (as inih passes a [mode NAME] header) or "mode" itself. */
int cfg_is_mode_section(const char *s)
{
	return !strncmp(s, "mode", 4) && (s[4] == '\0' || s[4] == ' ' || s[4] == '\t');
}

/* Whether a file may set k in section (see cfg_find_key). */
int cfg_key_in_section(const struct cfg_key *k, const char *section)
{
	return cfg_is_mode_section(section) ? (k->in_mode) != 0 : !strcmp(k->section, section);
}

/* k's section as a user writes it: "mode NAME" for the id. */
const char *cfg_key_section_label(const struct cfg_key *k)
{
	return !strcmp(k->section, "mode") ? "mode NAME" : k->section;
}

/* Key name in section: a [mode NAME] section has the id and every mode
 * key (in_mode) of [waveform]; any other section the keys listed under it. */
const struct cfg_key *cfg_find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < cfg_nkeys; i++)
		if (!strcmp(cfg_tab[i].name, name) && cfg_key_in_section(&cfg_tab[i], section))
			return &cfg_tab[i];
	return NULL;
}
