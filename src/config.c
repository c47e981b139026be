/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — chirpd's configuration, declared once (see config.h).
 *
 * cfg_tab[] below is the only place a key exists. Each entry gives the
 * section and name, the type, where the value lives in struct
 * chirp_config, the default (as the text a user would write, parsed by the
 * same code as the file, so defaults cannot drift from what is documented),
 * the range, whether the key can change on reload, and the help text.
 * Parsing, defaults, --check, config_print, the JSON reply, the restart-key
 * list and the reference documentation (conf/chirpd.conf, doc/config.md)
 * all walk this table.
 *
 * Radar modes: the keys of a waveform are declared once, under [waveform]
 * with F_MODE (their values live in a struct cfg_mode), with the one key
 * of their own, id, under the section "mode". A [mode NAME] section takes
 * the id and every F_MODE key; [waveform] takes its F_MODE keys for the
 * mode "default" (id 0) and sample_rate_hz, the radar's, for all modes.
 * The reader opens a mode at each [mode NAME] header; collect_modes puts
 * the modes into struct chirp_config once the file is read.
 *
 * Parsing uses inih through ini_parse_stream with our own line reader. The
 * reader counts lines (inih calls the handler for a line before reading
 * the next, so the count is the handler's line number), and rejects what
 * inih would silently accept or misreport: lines with no '=', section
 * headers with junk after ']', unknown or repeated sections, control
 * characters and over-long lines. It also strips leading blanks, which
 * turns off inih's multi-line continuation (a continuation would look like
 * a duplicate key), and inline comments that start with " #" or " ;".
 * Every problem is reported, not just the first.
 */
#include "config.h"
#include "chirp/ring.h"
#include "metrics.h"
#include "sysnuma.h"
#include "zpub.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

_Static_assert(sizeof(enum pc_format) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum wf_type) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_fftw_planner) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_switch) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_mti) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum pc_cfar) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum wf_window) == sizeof(int), "enums are stored as int");

/* Largest config file we read: a real one is a few KiB. */
#define CFG_FILE_MAX (1u << 20)

enum ktype {
	T_STR,        /* char[size]; optional check function                  */
	T_BOOL,       /* int 0/1: true|false|yes|no|on|off|1|0                */
	T_INT,        /* int in [min, max]                                    */
	T_UINT,       /* unsigned in [min, max]                               */
	T_DOUBLE,     /* double in [min, max] (F_MIN_EXCL: min excluded)      */
	T_ENUM,       /* int, one of choices                                  */
	T_NUMA,       /* int: auto | none | node number                       */
	T_GPU,        /* gpu (int) + gpu_bus_id: index or PCI bus id          */
	T_NFFT,       /* size_t: auto (0) | N                                 */
	T_AUTO_INT,   /* int: auto (0) | N in [min, max]                      */
};

#define F_MIN_EXCL  (1u << 0)   /* value must be > min                    */
#define F_MODE      (1u << 2)   /* a mode's key: off is into struct cfg_mode */
#define F_REQUIRED  (1u << 3)   /* no default: the section must set it    */

struct cfg_choice { const char *name; int value; };

struct cfg_key {
	const char *section;
	const char *name;
	enum ktype type;
	size_t off;
	size_t size;                /* T_STR: buffer size                     */
	const char *def;            /* default, as written in a file          */
	double min, max;
	unsigned flags;
	const struct cfg_choice *choices;   /* T_ENUM, NULL-name terminated   */
	int (*check)(const char *v, char *err, size_t len);  /* T_STR         */
	int reload;                 /* 1: can change on reload                */
	const char *help;
};

static const char *const cfg_sections[] = {
	"daemon", "numa", "input", "cpi", "waveform", "processing", "output", "radar", "doppler",
	"cfar", "detections", "metrics", "publish", "trace", NULL,
};

static const struct cfg_choice ch_loglevel[] = {
	{ "error", LOG_ERR }, { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
	{ "info", LOG_INFO }, { "debug", LOG_DEBUG }, { NULL, 0 },
};
static const struct cfg_choice ch_realtime[] = {
	{ "off", CFG_RT_OFF }, { "preferred", CFG_RT_PREFERRED },
	{ "required", CFG_RT_REQUIRED }, { NULL, 0 },
};
static const struct cfg_choice ch_format[] = {
	{ "cf32", PC_FMT_CF32 }, { "sc16", PC_FMT_SC16 }, { NULL, 0 },
};
static const struct cfg_choice ch_wftype[] = {
	{ "lfm", WF_LFM }, { "barker13", WF_BARKER13 }, { "file", WF_FILE }, { NULL, 0 },
};
static const struct cfg_choice ch_window[] = {
	{ "rect", WIN_RECT }, { "hamming", WIN_HAMMING }, { "hann", WIN_HANN },
	{ "blackman", WIN_BLACKMAN }, { "taylor", WIN_TAYLOR }, { NULL, 0 },
};
static const struct cfg_choice ch_backend[] = {
	{ "auto", PC_BACKEND_AUTO }, { "cuda", PC_BACKEND_CUDA }, { "cpu", PC_BACKEND_CPU },
	{ NULL, 0 },
};
static const struct cfg_choice ch_normalize[] = {
	{ "noise", PC_NORM_NOISE }, { "none", PC_NORM_NONE }, { NULL, 0 },
};
static const struct cfg_choice ch_staging[] = {
	{ "auto", PC_STAGING_AUTO }, { "register", PC_STAGING_REGISTER },
	{ "copy", PC_STAGING_COPY }, { NULL, 0 },
};
static const struct cfg_choice ch_planner[] = {
	{ "estimate", PC_FFTW_ESTIMATE }, { "measure", PC_FFTW_MEASURE },
	{ "patient", PC_FFTW_PATIENT }, { NULL, 0 },
};
static const struct cfg_choice ch_switch[] = {
	{ "auto", PC_SWITCH_AUTO }, { "on", PC_SWITCH_ON }, { "off", PC_SWITCH_OFF },
	{ NULL, 0 },
};
static const struct cfg_choice ch_outmode[] = {
	{ "complex", PC_OUT_COMPLEX }, { "magnitude", PC_OUT_MAGNITUDE },
	{ "power_db", PC_OUT_POWER_DB }, { "map_power", PC_OUT_MAP_POWER },
	{ "map_db", PC_OUT_MAP_DB }, { "none", PC_OUT_NONE }, { NULL, 0 },
};
static const struct cfg_choice ch_mti[] = {
	{ "none", PC_MTI_NONE }, { "two_pulse", PC_MTI_TWO }, { "three_pulse", PC_MTI_THREE },
	{ NULL, 0 },
};
static const struct cfg_choice ch_cfar[] = {
	{ "ca", PC_CFAR_CA }, { "go", PC_CFAR_GO }, { "so", PC_CFAR_SO }, { "os", PC_CFAR_OS },
	{ NULL, 0 },
};
static const struct cfg_choice ch_integrate[] = {
	{ "noncoherent", 1 }, { "none", 0 }, { NULL, 0 },
};

static int check_socket_path(const char *v, char *err, size_t len);
static int check_group(const char *v, char *err, size_t len);
static int check_cpus(const char *v, char *err, size_t len);
static int check_shm_name(const char *v, char *err, size_t len);
static int check_shm_name_or_none(const char *v, char *err, size_t len);
static int check_file_path(const char *v, char *err, size_t len);
static int check_cache_path(const char *v, char *err, size_t len);
static int check_listen(const char *v, char *err, size_t len);

#define OFF(f)  offsetof(struct chirp_config, f)
#define SZ(f)   sizeof(((struct chirp_config *)0)->f)
#define MOFF(f) offsetof(struct cfg_mode, f)
#define MSZ(f)  sizeof(((struct cfg_mode *)0)->f)

static const struct cfg_key cfg_tab[] = {
	/* [daemon] */
	{ "daemon", "control_socket", T_STR, OFF(control_socket), SZ(control_socket),
	  "/run/chirpd/control.sock", 0, 0, 0, NULL, check_socket_path, 0,
	  "Unix socket for chirpctl (created mode 0660; parent directory created if missing)." },
	{ "daemon", "control_group", T_STR, OFF(control_group), SZ(control_group),
	  "", 0, 0, 0, NULL, check_group, 0,
	  "Group that owns the control socket and may run mutating commands (reload, pause, resume, log-level); empty = only root and chirpd's own user." },
	{ "daemon", "log_level", T_ENUM, OFF(log_level), 0,
	  "info", 0, 0, 0, ch_loglevel, NULL, 1,
	  "Least important messages logged: error, warning, notice, info or debug." },
	{ "daemon", "remove_rings_on_stop", T_BOOL, OFF(remove_rings_on_stop), 0,
	  "false", 0, 0, 0, NULL, NULL, 1,
	  "Remove the input, output and detection rings from /dev/shm when the systemd unit stops chirpd (restart included), through its ExecStopPost=chirpd --remove-rings --if-configured; false keeps them, so that a restart continues where the stop left off. A running chirpd does not use it (a reload may change it freely)." },

	/* [numa] */
	{ "numa", "node", T_NUMA, OFF(numa_node), 0,
	  "auto", 0, 1023, 0, NULL, NULL, 0,
	  "NUMA node for the data path threads and buffers: auto (the GPU's node from sysfs; no binding without a GPU), a node number, or none (no binding)." },
	{ "numa", "cpus", T_STR, OFF(cpus), SZ(cpus),
	  "", 0, 0, 0, NULL, check_cpus, 0,
	  "CPUs for the data path threads, as a list like 2-5,8; empty = the node's cpus (or all with node = none). When set, chirpd's other threads (main loop, control socket, metrics, a reload's FFT planning) move to the node's remaining cpus, if any (status: numa.housekeeping_cpus); keep the digitizer driver and consumers off these cpus too (doc/latency.md)." },
	{ "numa", "realtime", T_ENUM, OFF(realtime), 0,
	  "off", 0, 0, 0, ch_realtime, NULL, 0,
	  "SCHED_FIFO for the data path thread: off, preferred (try, warn if not permitted) or required (fail to start if not permitted)." },
	{ "numa", "rt_priority", T_INT, OFF(rt_priority), 0,
	  "50", 1, 99, 0, NULL, NULL, 0,
	  "SCHED_FIFO priority 1..99 when realtime is not off." },
	{ "numa", "lock_memory", T_BOOL, OFF(lock_memory), 0,
	  "false", 0, 0, 0, NULL, NULL, 0,
	  "mlockall() so the data path never page-faults (needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK; a failure is a warning)." },

	/* [input] */
	{ "input", "ring", T_STR, OFF(input_ring), SZ(input_ring),
	  "/chirpd-in", 0, 0, 0, NULL, check_shm_name, 0,
	  "POSIX shared memory name of the input ring the digitizer writes CPIs into." },
	{ "input", "slots", T_AUTO_INT, OFF(input_slots), 0,
	  "auto", 2, 65536, 0, NULL, NULL, 1,
	  "CPIs the input ring holds: auto (enough for buffer_ms at the capacity chirpd measures at start, at most one slot more, at least 16) or a count 2..65536 (re-created on reload when it changes)." },
	{ "input", "buffer_ms", T_DOUBLE, OFF(input_buffer_ms), 0,
	  "100", 1, 60000, 0, NULL, NULL, 1,
	  "Milliseconds of input the ring must hold when the front end runs at chirpd's capacity: the longest stall chirpd rides out without losing a CPI. slots = auto sizes the ring from it; with a fixed slots (or a ring another program made) a ring holding less is warned about at start and reload." },
	{ "input", "format", T_ENUM, OFF(format), 0,
	  "cf32", 0, 0, 0, ch_format, NULL, 1,
	  "Input sample format: cf32 (float32 I,Q) or sc16 (int16 I,Q, scaled by 1/32768)." },
	{ "input", "hugepages", T_BOOL, OFF(input_hugepages), 0,
	  "false", 0, 0, 0, NULL, NULL, 1,
	  "Back the input ring with 2 MiB huge pages: hugetlbfs must be mounted at /dev/hugepages (or where the deployment setting CHIRP_HUGETLBFS says, chirpd(8)) with free pages for the whole ring." },
	{ "input", "allow_foreign_owner", T_BOOL, OFF(input_allow_foreign_owner), 0,
	  "false", 0, 0, 0, NULL, NULL, 0,
	  "Adopt an existing input ring object owned by another user (e.g. a digitizer driver that runs as its own user and created the ring first); false = refuse it, naming the owner. true also accepts the owner's choice of mode (the world-writable check is for our own rings)." },

	/* [cpi] */
	{ "cpi", "channels", T_UINT, OFF(channels), 0,
	  "1", 1, 4096, 0, NULL, NULL, 1,
	  "Receive channels per CPI." },
	{ "cpi", "pulses", T_UINT, OFF(pulses), 0,
	  "128", 1, 1048576, 0, NULL, NULL, 1,
	  "Pulses per CPI." },
	{ "cpi", "samples", T_UINT, OFF(samples), 0,
	  "4000", 1, 16777216, 0, NULL, NULL, 1,
	  "Range samples per pulse (R), the length of one range line." },

	/* [waveform] */
	{ "waveform", "type", T_ENUM, MOFF(wf.type), 0,
	  "lfm", 0, 0, F_MODE, ch_wftype, NULL, 1,
	  "Reference waveform: lfm (linear FM chirp), barker13 (13-chip Barker code) or file (cf32 samples from file)." },
	{ "waveform", "sample_rate_hz", T_DOUBLE, OFF(wf.sample_rate_hz), 0,
	  "25e6", 0, 1e11, F_MIN_EXCL, NULL, NULL, 1,
	  "Complex sample rate of the input in Hz: the radar's, every mode's." },
	{ "waveform", "bandwidth_hz", T_DOUBLE, MOFF(wf.bandwidth_hz), 0,
	  "10e6", 0, 1e11, F_MIN_EXCL | F_MODE, NULL, NULL, 1,
	  "lfm: swept bandwidth in Hz, at most sample_rate_hz (centred on 0 Hz)." },
	{ "waveform", "pulse_width_s", T_DOUBLE, MOFF(wf.pulse_width_s), 0,
	  "10e-6", 0, 1, F_MIN_EXCL | F_MODE, NULL, NULL, 1,
	  "lfm: pulse length in seconds; L = round(pulse_width_s * sample_rate_hz) samples, 1 <= L <= samples." },
	{ "waveform", "chip_samples", T_UINT, MOFF(wf.chip_samples), 0,
	  "4", 1, 1048576, F_MODE, NULL, NULL, 1,
	  "barker13: samples per chip; L = 13 * chip_samples <= samples." },
	{ "waveform", "file", T_STR, MOFF(wf_file), MSZ(wf_file),
	  "", 0, 0, F_MODE, NULL, check_file_path, 1,
	  "file: path of the reference, little-endian cf32 samples (8 bytes each; relative to the config file's directory); L = size / 8 <= samples." },
	{ "waveform", "window", T_ENUM, MOFF(wf.window), 0,
	  "hamming", 0, 0, F_MODE, ch_window, NULL, 1,
	  "Window applied to the reference in time: rect, hamming, hann, blackman or taylor." },
	{ "waveform", "taylor_nbar", T_UINT, MOFF(wf.taylor_nbar), 0,
	  "5", 1, 100, F_MODE, NULL, NULL, 1,
	  "taylor: number of nearly constant-level sidelobes (nbar)." },
	{ "waveform", "taylor_sll_db", T_DOUBLE, MOFF(wf.taylor_sll_db), 0,
	  "35", 0, 200, F_MIN_EXCL | F_MODE, NULL, NULL, 1,
	  "taylor: peak sidelobe level below the main lobe, in dB (positive)." },

	/* [mode NAME]: the id, and every F_MODE key of [waveform] above. */
	{ "mode", "id", T_UINT, MOFF(id), 0,
	  "", 0, CFG_MAX_MODES - 1, F_MODE | F_REQUIRED, NULL, NULL, 1,
	  "The mode's number, which the digitizer gives each CPI it commits (chirp_ring_commit_mode) and chirpd hands on with the result; required, and distinct among the modes. Id 0 is the mode of CPIs committed without one: the [waveform] section's mode unless a [mode NAME] section takes id 0 (then [waveform] holds only sample_rate_hz)." },

	/* [processing] */
	{ "processing", "backend", T_ENUM, OFF(backend), 0,
	  "auto", 0, 0, 0, ch_backend, NULL, 0,
	  "Where pulse compression runs: auto (CUDA if a usable GPU, else CPU), cuda or cpu." },
	{ "processing", "gpu", T_GPU, OFF(gpu), 0,
	  "0", 0, 1023, 0, NULL, NULL, 0,
	  "cuda: GPU to use, a CUDA device index or a PCI bus id like 0000:41:00.0." },
	{ "processing", "streams", T_AUTO_INT, OFF(streams), 0,
	  "auto", 1, 16, 0, NULL, NULL, 0,
	  "cuda: CPIs in flight at once (copy in / compute / copy out overlap): auto (at start, measure depths 2, 3 and 4 on this CPI shape and keep the fastest; the shallower unless a deeper one is 3 % faster) or a number." },
	{ "processing", "busy_poll", T_BOOL, OFF(busy_poll), 0,
	  "true", 0, 0, 0, NULL, NULL, 1,
	  "While CPIs are in flight the data thread polls the backend and the input ring without sleeping (one core busy under load, the lowest latency); false = sleep on the backend's completion notifications (up to 1 ms later to see new input)." },
	{ "processing", "idle_spin_us", T_UINT, OFF(idle_spin_us), 0,
	  "2000", 0, 1000000, 0, NULL, NULL, 1,
	  "How long after its last work, in microseconds, an idle thread keeps polling before it sleeps: the data thread waiting on an empty input ring (from the last CPI it took), and the CPU backend's worker threads waiting for the next CPI (from their last block). A sleeping thread is woken by the kernel, on a virtual machine through the hypervisor, which can take 1-2 ms at p99 there (doc/latency.md); a spin longer than the gap between CPIs keeps the threads awake while CPIs flow (each keeps a core busy then) and lets them sleep 2 ms after the input stops. With spinning workers the CPU backend also recomputes a block whose worker stalls (takeover = auto, doc/pc.md). 0 = sleep after a short spin of ~10-50 us (least CPU, a longer latency tail)." },
	{ "processing", "staging", T_ENUM, OFF(staging), 0,
	  "auto", 0, 0, 0, ch_staging, NULL, 0,
	  "cuda: register the rings' memory for DMA in place (register), copy through pinned buffers (copy), or try register then copy (auto)." },
	{ "processing", "staging_threads", T_AUTO_INT, OFF(staging_threads), 0,
	  "auto", 1, 64, 0, NULL, NULL, 0,
	  "cuda, copy staging only: threads that copy each CPI between the rings and the pinned staging buffers, the data thread included: auto (one per cpu in [numa] cpus, else per online cpu, at most 16: copies into pinned memory keep scaling up to about 16 threads, doc/cuda.md) or a number. Unused while the rings are registered for DMA in place." },
	{ "processing", "nfft", T_NFFT, OFF(nfft), 0,
	  "auto", 1, 1 << 28, 0, NULL, NULL, 1,
	  "FFT length: auto (smallest 2^a 3^b 5^c 7^d >= samples + L - 1) or a number >= samples + L - 1." },
	{ "processing", "normalize", T_ENUM, OFF(normalize), 0,
	  "noise", 0, 0, 0, ch_normalize, NULL, 1,
	  "Output scaling: noise (gain 1/||h||, white noise keeps its power) or none (gain 1)." },
	{ "processing", "cpu_threads", T_AUTO_INT, OFF(cpu_threads), 0,
	  "auto", 1, 1024, 0, NULL, NULL, 1,
	  "cpu: FFTW threads: auto (one per cpu in [numa] cpus, else per online cpu, at most 8) or a number." },
	/* Backend tuning (struct pc_tuning): speed, never results. Each can
	 * change on reload: a reload builds the new generation's backend with
	 * pc_create from the new file (chirpd.c gen_create), and pc_create is
	 * where every one of them is read. */
	{ "processing", "fftw_planner", T_ENUM, OFF(fftw_planner), 0,
	  "estimate", 0, 0, 0, ch_planner, NULL, 1,
	  "cpu: how hard FFTW searches for fast FFT plans when the backend is built (at start and at each reload): estimate (no measurement: plans in milliseconds), measure (times candidate plans: seconds) or patient (a wider search: up to minutes per CPI shape, for FFTs up to 30-40 % faster than estimate's, doc/pc.md). The results are the same with every planner. With fftw_wisdom set a search runs once per host and CPI shape; without it every start and every reload searches again, and the reload applies only when the search is done (give chirpctl reload a --timeout that long)." },
	{ "processing", "fftw_wisdom", T_STR, OFF(fftw_wisdom), SZ(fftw_wisdom),
	  "", 0, 0, 0, NULL, check_file_path, 1,
	  "cpu: file of FFTW wisdom (relative to the config file's directory); empty = none. Read before planning, written back after a measure or patient search, so a later start or reload with the same CPI shape takes its plans from the file in milliseconds. Under systemd use /var/lib/chirpd/fftw-wisdom (/var/lib/chirpd/NAME/fftw-wisdom for chirpd@NAME): the unit's StateDirectory, writable by chirpd and kept across restarts. A missing file only means a search; wisdom is specific to the machine, so remove the file after a CPU or FFTW change." },
	{ "processing", "capacity_cache", T_STR, OFF(capacity_cache), SZ(capacity_cache),
	  "auto", 0, 0, 0, NULL, check_cache_path, 1,
	  "File where chirpd keeps the decisions it measures at start: the depth streams = auto picks and the capacity slots = auto sizes the rings by, one entry per machine and configuration (chirpd's build, the device and its driver, the CPI's geometry and formats, the filters, the backend settings and the radar chain). A start or reload whose entry is there uses it instead of measuring again, so a restart makes the same decisions (it still runs the short warm-up); an entry whose key differs in anything is measured afresh and stored. auto: capacity in systemd's StateDirectory ($STATE_DIRECTORY, /var/lib/chirpd for the unit), none outside systemd; empty = none; else an absolute path. chirpctl status says where the capacity came from (rings.capacity_source). Remove the file to measure again." },
	{ "processing", "takeover", T_ENUM, OFF(takeover), 0,
	  "auto", 0, 0, 0, ch_switch, NULL, 1,
	  "cpu: straggler take-over: a block of rows that a worker thread took but has not finished after a grace is computed again by a thread that is waiting for it, so one descheduled worker does not hold the CPI up (the result is the same). auto = on while the workers poll between CPIs (idle_spin_us > 0), where an unfinished block means a stalled worker; off while they sleep, where it is mostly a late wake-up and the second copy would compete with the worker it waits for (doc/pc.md). on or off forces it." },
	{ "processing", "cpu_block_kib", T_AUTO_INT, OFF(cpu_block_kib), 0,
	  "auto", 1, PC_MAX_BLOCK_KIB, 0, NULL, NULL, 1,
	  "cpu: rows each thread transforms at once, in KiB of FFT buffer: auto (at most 256 KiB, sized so that the threads finish a CPI together) or a number, taken as given. Smaller blocks share a CPI among more threads and lose less to a stalled one; larger ones make fewer, longer FFTW calls. chirpctl status names the blocks in its device string." },
	{ "processing", "cuda_graphs", T_BOOL, OFF(cuda_graphs), 0,
	  "true", 0, 0, 0, NULL, NULL, 1,
	  "cuda: a CPI whose buffers lie in registered memory (the rings, when registered for DMA in place: staging = register, or auto where registering works) runs as one CUDA graph per pipeline set, made at its first use and launched with the CPI's addresses: a few runtime calls instead of about 35, less CPU time and launch latency per CPI. false = every call queued one by one. The results are the same; the start log says which runs." },
	{ "processing", "cuda_chunks", T_AUTO_INT, OFF(cuda_chunks), 0,
	  "auto", 1, PC_MAX_CHUNKS, 0, NULL, NULL, 1,
	  "cuda: row chunks each CPI is cut into, so that one chunk's copies overlap another's FFTs: auto (from the depth and the CPI size; at depth 3 and deeper a CPI of 16 MiB or more is cut in two) or a number. More chunks give one CPI a lower latency and cost capacity in CUDA calls (4 chunks: the lowest latency for 16 MiB CPIs, at 8-15 % of capacity, doc/cuda.md)." },
	{ "processing", "cuda_idle_chunks", T_UINT, OFF(cuda_idle_chunks), 0,
	  "1", 1, PC_MAX_CHUNKS, 0, NULL, NULL, 1,
	  "cuda: chunks for a CPI with nothing waiting behind it and no CPI in flight still copying in (where only its own latency counts), when the depth's layout (cuda_chunks) sends CPIs whole. 1 = no such layout: every CPI gets the depth's, which keeps the latency tail lower because cut and whole CPIs do not mix (doc/cuda.md, Layouts)." },
	{ "processing", "cuda_spin_us", T_UINT, OFF(cuda_spin_us), 0,
	  "300", 0, PC_MAX_CUDA_SPIN_US, 0, NULL, NULL, 1,
	  "cuda, with busy_poll = false: once the oldest CPI's input is in and only its last compute and copy-out remain, how long, in microseconds, a wait for it polls the GPU's events before it sleeps on the completion notification, which costs tens of microseconds of wake-up (with busy_poll = true the data thread never sleeps there). 0 = sleep at once." },
	{ "processing", "staging_nt", T_BOOL, OFF(staging_nt), 0,
	  "true", 0, 0, 0, NULL, NULL, 1,
	  "cuda, copy staging only: the copy threads write the pinned staging buffers with non-temporal (streaming) stores, which skip reading each destination cache line first (the DMA engine, not this core, reads the bytes next): less memory traffic and faster copies (doc/cuda.md); false = plain memcpy." },
	{ "processing", "cuda_fused", T_ENUM, OFF(cuda_fused), 0,
	  "auto", 0, 0, 0, ch_switch, NULL, 1,
	  "cuda: pulse compression as one kernel per row (chirpd's own shared-memory FFT: pad, forward FFT, filter multiply, inverse FFT and output conversion without leaving the chip) instead of five launches around cuFFT. auto: fused when the FFT length factors into 2, 3, 5 and 7 and a row fits in the GPU's shared memory, else cuFFT; on: fused, or no CUDA backend (backend = cuda refuses to start, backend = auto falls back to the CPU backend and says why); off: cuFFT. Changes speed, never results (both are held to the CPU backend within float rounding). chirpctl status says which runs (fft_engine)." },

	/* [output] */
	{ "output", "mode", T_ENUM, OFF(out_mode), 0,
	  "complex", 0, 0, 0, ch_outmode, NULL, 1,
	  "Result format: complex (cf32 y[n]), magnitude (float32 |y|) or power_db (float32 10 log10 |y|^2), C x P x R per CPI; with [doppler] enable, map_power (float32 |D|^2, the range-Doppler map, C x Nd x R per CPI, zero Doppler in the middle row) or map_db (the map in dB); or none: no output ring and no [output] file, the detections are the only result (needs [cfar] and a [detections] ring or file)." },
	{ "output", "ring", T_STR, OFF(output_ring), SZ(output_ring),
	  "/chirpd-out", 0, 0, 0, NULL, check_shm_name, 0,
	  "POSIX shared memory name of the output ring consumers read results from." },
	{ "output", "slots", T_AUTO_INT, OFF(output_slots), 0,
	  "auto", 2, 65536, 0, NULL, NULL, 1,
	  "CPIs the output ring holds: auto (the same time as the input ring, [input] buffer_ms at the capacity measured at start, at least 16: after a stall chirpd delivers its backlog at full rate) or a count 2..65536." },
	{ "output", "file", T_STR, OFF(output_file), SZ(output_file),
	  "", 0, 0, 0, NULL, check_file_path, 1,
	  "Also append every result CPI to this file (raw, output format; relative to the config file's directory); empty = off. Written by a thread of its own, never by the data path: when the file is slower than the CPIs (a slow disk, a full pipe) its queue of 4 results fills and whole results are dropped from the file and counted (output_file_drops); failed writes are counted and logged." },
	{ "output", "allow_foreign_owner", T_BOOL, OFF(output_allow_foreign_owner), 0,
	  "false", 0, 0, 0, NULL, NULL, 0,
	  "Adopt an existing output ring object owned by another user; false = refuse it, naming the owner." },

	/* [radar] */
	{ "radar", "prf_hz", T_DOUBLE, OFF(prf_hz), 0,
	  "0", 0, 1e9, 0, NULL, NULL, 1,
	  "Pulse repetition frequency in Hz: with carrier_hz it turns Doppler bins into radial velocities in the detection list; 0 = unknown." },
	{ "radar", "carrier_hz", T_DOUBLE, OFF(carrier_hz), 0,
	  "0", 0, 1e12, 0, NULL, NULL, 1,
	  "Carrier (RF centre) frequency in Hz, for velocities: v = bin x prf_hz / Nd x c / (2 carrier_hz), positive closing; 0 = unknown." },
	{ "radar", "velocity", T_ENUM, OFF(velocity), 0,
	  "auto", 0, 0, 0, ch_switch, NULL, 1,
	  "Velocities in the detection list: auto (when prf_hz and carrier_hz are both set; otherwise velocity_mps is NaN, null in the JSON lines, and lists carry CHIRP_DET_NO_VELOCITY), on (required: an error without both) or off (never)." },

	/* [doppler] */
	{ "doppler", "enable", T_BOOL, OFF(doppler), 0,
	  "false", 0, 0, 0, NULL, NULL, 1,
	  "After pulse compression, run MTI and a Doppler FFT along the pulses of each range gate (the range-Doppler map; needed by [cfar] and the map output modes). The exact definition is in include/chirp/pc.h, RADAR CHAIN." },
	{ "doppler", "mti", T_ENUM, OFF(mti), 0,
	  "none", 0, 0, 0, ch_mti, NULL, 1,
	  "Moving-target indicator before the Doppler FFT, a canceller along pulses that removes stationary clutter: none (P' = P pulses), two_pulse (y[p+1] - y[p], P' = P - 1) or three_pulse (y[p] - 2 y[p+1] + y[p+2], P' = P - 2)." },
	{ "doppler", "window", T_ENUM, OFF(doppler_window), 0,
	  "hann", 0, 0, 0, ch_window, NULL, 1,
	  "Window over the P' pulses before the Doppler FFT: rect, hamming, hann, blackman or taylor (lower Doppler sidelobes for a wider main lobe). The map keeps white noise at its power whatever the window." },
	{ "doppler", "taylor_nbar", T_UINT, OFF(doppler_taylor_nbar), 0,
	  "5", 1, 100, 0, NULL, NULL, 1,
	  "taylor: number of nearly constant-level sidelobes (nbar)." },
	{ "doppler", "taylor_sll_db", T_DOUBLE, OFF(doppler_taylor_sll_db), 0,
	  "35", 0, 200, F_MIN_EXCL, NULL, NULL, 1,
	  "taylor: peak sidelobe level below the main lobe, in dB (positive)." },
	{ "doppler", "fft", T_AUTO_INT, OFF(doppler_fft), 0,
	  "auto", 1, 1048576, 0, NULL, NULL, 1,
	  "Doppler FFT length Nd: auto (the smallest 2^a 3^b 5^c 7^d >= P') or a number >= P' (zero-padded: finer bins, the same resolution)." },

	/* [cfar] */
	{ "cfar", "enable", T_BOOL, OFF(cfar), 0,
	  "false", 0, 0, 0, NULL, NULL, 1,
	  "Detect targets in the range-Doppler map with a constant false-alarm rate (CFAR) threshold and keep the local maxima as a detection list per CPI ([detections]); needs [doppler] enable." },
	{ "cfar", "method", T_ENUM, OFF(cfar_method), 0,
	  "ca", 0, 0, 0, ch_cfar, NULL, 1,
	  "Noise estimate from the training cells: ca (their mean, best in uniform noise), go (the greater of the leading and lagging halves' means: fewer false alarms at clutter edges), so (the smaller: resolves close targets) or os (the os_rank-th smallest: robust to targets among the training cells)." },
	{ "cfar", "integrate", T_ENUM, OFF(cfar_integrate), 0,
	  "noncoherent", 0, 0, 0, ch_integrate, NULL, 1,
	  "noncoherent: the CFAR runs on the channels' summed maps, one list whose records have channel -1; none: on each channel's map, a list with each channel's detections." },
	{ "cfar", "guard_range", T_UINT, OFF(guard_range), 0,
	  "2", 0, 1048576, 0, NULL, NULL, 1,
	  "Guard cells on each side of the cell under test along range, left out of the noise estimate (the target's own spread)." },
	{ "cfar", "guard_doppler", T_UINT, OFF(guard_doppler), 0,
	  "1", 0, 1048576, 0, NULL, NULL, 1,
	  "Guard cells on each side along Doppler (the axis is cyclic)." },
	{ "cfar", "train_range", T_UINT, OFF(train_range), 0,
	  "8", 0, 1048576, 0, NULL, NULL, 1,
	  "Training cells on each side beyond the guard along range; guard + training on both sides must fit in the range gates." },
	{ "cfar", "train_doppler", T_UINT, OFF(train_doppler), 0,
	  "2", 0, 1048576, 0, NULL, NULL, 1,
	  "Training cells on each side beyond the guard along Doppler; guard + training on both sides must fit in the Doppler bins." },
	{ "cfar", "os_rank", T_AUTO_INT, OFF(os_rank), 0,
	  "auto", 1, PC_CFAR_OS_MAX_CELLS, 0, NULL, NULL, 1,
	  "os: which order statistic of the training cells is the noise estimate, 1 = the smallest: auto (3/4 of the cells) or a number up to the training cells (at most 256 cells with os)." },
	{ "cfar", "pfa", T_DOUBLE, OFF(pfa), 0,
	  "1e-6", 0, 1, F_MIN_EXCL, NULL, NULL, 1,
	  "Probability of false alarm per cell, 0 < pfa < 1: sets the threshold over the noise estimate (status and metrics show the rate observed)." },
	{ "cfar", "maxima_range", T_UINT, OFF(maxima_range), 0,
	  "1", 0, 1048576, 0, NULL, NULL, 1,
	  "A crossing is a detection only if it is the largest cell within this many gates on each side (and maxima_doppler bins): one detection per target instead of its whole peak." },
	{ "cfar", "maxima_doppler", T_UINT, OFF(maxima_doppler), 0,
	  "1", 0, 1048576, 0, NULL, NULL, 1,
	  "The local-maximum neighbourhood along Doppler, bins on each side (cyclic)." },
	{ "cfar", "max_detections", T_UINT, OFF(max_detections), 0,
	  "1024", 1, PC_MAX_DETECTIONS, 0, NULL, NULL, 1,
	  "Records a CPI's list holds: more detections keep the first in list order and mark the list overflowed (counted); the size of a detection ring's slot." },

	/* [detections] */
	{ "detections", "ring", T_STR, OFF(det_ring), SZ(det_ring),
	  "", 0, 0, 0, NULL, check_shm_name_or_none, 1,
	  "POSIX shared memory name of the detection ring (format det: one list per CPI, chirp/detect.h; chirp-tap reads it), e.g. /chirpd-det; empty = none. A full ring never holds chirpd up: the list is dropped and counted." },
	{ "detections", "slots", T_AUTO_INT, OFF(det_slots), 0,
	  "auto", 2, 65536, 0, NULL, NULL, 1,
	  "Lists the detection ring holds: auto (the same time as the input ring, as [output] slots) or a count 2..65536." },
	{ "detections", "file", T_STR, OFF(det_file), SZ(det_file),
	  "", 0, 0, 0, NULL, check_file_path, 1,
	  "Also append every CPI's list to this file as one JSON object per line: seq, timestamp_ns, first_sample, mode, count, found, overflow, skipped and detections [{channel, range_gate, doppler_bin, range_m, velocity_mps (null when unknown), power, noise, snr_db}] (relative to the config file's directory); empty = off. Written by a thread of its own, never by the data path: when the file is slower than the CPIs its queue (4 lists at max_detections, more of shorter ones) fills and whole lines are dropped and counted (detection_file_drops); failed writes are counted and logged, never fatal." },
	{ "detections", "allow_foreign_owner", T_BOOL, OFF(det_allow_foreign_owner), 0,
	  "false", 0, 0, 0, NULL, NULL, 1,
	  "Adopt an existing detection ring object owned by another user; false = refuse it, naming the owner." },

	/* [metrics] */
	{ "metrics", "listen", T_STR, OFF(metrics_listen), SZ(metrics_listen),
	  "", 0, 0, 0, NULL, check_listen, 0,
	  "Serve Prometheus metrics over HTTP at host:port, host a numeric IPv4 address or an IPv6 address in brackets (names are not looked up), port 1..65535 (e.g. 127.0.0.1:9464, [::1]:9464); empty = off." },

	/* [publish] */
	{ "publish", "listen", T_STR, OFF(pub_listen), SZ(pub_listen),
	  "", 0, 0, 0, NULL, zpub_check_endpoint, 0,
	  "Publish detections, maps and status on a ZeroMQ PUB socket bound to this endpoint: tcp://ADDRESS:PORT (tcp://127.0.0.1:5556; tcp://*:5556 on every interface; port * = one the system picks, shown in status publish.endpoint) or ipc://PATH; empty = off. Each message is three frames: the topic (det, map or status), a JSON header and the payload (doc/publish.md). Sent by threads of their own, never by the data path: a message the queue or a subscriber (hwm) has no room for is dropped and counted (publish_det_drops and the like), never waited for." },
	{ "publish", "detections", T_BOOL, OFF(pub_detections), 0,
	  "true", 0, 0, 0, NULL, NULL, 0,
	  "Publish every CPI's detection list (topic det; the payload is the list as on the detection ring, chirp/detect.h), when chirpd started with [cfar] enable (the publisher's queue is sized then)." },
	{ "publish", "status_hz", T_DOUBLE, OFF(pub_status_hz), 0,
	  "1", 0, 10, 0, NULL, NULL, 0,
	  "Status messages a second, at most 10 (the main loop's tick) (topic status; the payload is chirpctl status's JSON); 0 = none." },
	{ "publish", "maps_hz", T_DOUBLE, OFF(pub_maps_hz), 0,
	  "0", 0, 1000, 0, NULL, NULL, 0,
	  "Range-Doppler maps a second (topic map), with [doppler] enable and a map output mode: the newest CPI's map when one is due, reduced by max-hold to at most map_max_doppler x map_max_range float32 cells; 0 = none. The data thread reads the whole map once per map sent." },
	{ "publish", "map_max_range", T_UINT, OFF(pub_map_max_range), 0,
	  "1024", 1, 65536, 0, NULL, NULL, 0,
	  "Columns of a published map at most: range gates are reduced by max-hold over blocks of ceil(gates / map_max_range)." },
	{ "publish", "map_max_doppler", T_UINT, OFF(pub_map_max_doppler), 0,
	  "256", 1, 65536, 0, NULL, NULL, 0,
	  "Rows of a published map at most: Doppler bins (and channels) reduced by max-hold the same way." },
	{ "publish", "hwm", T_UINT, OFF(pub_hwm), 0,
	  "1000", 1, 1000000, 0, NULL, NULL, 0,
	  "High-water mark (ZMQ_SNDHWM): messages queued per subscriber at most. A message that a subscriber at its mark has no room for is dropped for every subscriber and counted; the sequence numbers in the headers show the gap." },
	{ "publish", "queue", T_UINT, OFF(pub_queue), 0,
	  "64", 1, 65536, 0, NULL, NULL, 0,
	  "Detection lists (at max_detections as at start) the publisher's queue holds between the data thread and its sender; more of shorter ones. A list longer than at start (a reload that raised max_detections) is dropped and counted." },

	/* [trace] */
	{ "trace", "records", T_UINT, OFF(trace_records), 0,
	  "4096", 16, 1048576, 0, NULL, NULL, 0,
	  "Flight recorder: stage timestamps of the last N CPIs, kept in memory allocated at start (chirpctl trace; about 150 bytes each)." },
	{ "trace", "latency_budget_ms", T_DOUBLE, OFF(latency_budget_ms), 0,
	  "20", 0, 60000, 0, NULL, NULL, 1,
	  "A CPI delivered later than this after its input was committed is counted (over_budget) and logged with its timeline, at most one line a second; 0 = no budget." },
};

#define NKEYS (sizeof(cfg_tab) / sizeof(cfg_tab[0]))
#define NSECTIONS (sizeof(cfg_sections) / sizeof(cfg_sections[0]) - 1)

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

static int check_file_path(const char *v, char *err, size_t len)
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

static void choices_list(const struct cfg_choice *ch, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; ch[i].name && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "|" : "", ch[i].name);
}

static int range_err(const struct cfg_key *k, const char *v, char *err, size_t len)
{
	if (k->flags & F_MIN_EXCL)
		snprintf(err, len, "%s is out of range (> %g, <= %g)", v, k->min, k->max);
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

/* A finite decimal number within [min, max] (or (min, max] with F_MIN_EXCL). */
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
	if (!isfinite(d) || errno == ERANGE || d > k->max ||
	    ((k->flags & F_MIN_EXCL) ? d <= k->min : d < k->min))
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
	choices_list(k->choices, list, sizeof(list));
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

/* Where k's value lives: in mode m for a mode's key (F_MODE), else in c. */
static char *key_base(const struct cfg_key *k, struct chirp_config *c, struct cfg_mode *m)
{
	return (k->flags & F_MODE) ? (char *)m + k->off : (char *)c + k->off;
}

/* Parse v as k's type into c (into m for a mode's key); < 0 with the
 * reason in err, c and m unchanged. */
static int parse_value(const struct cfg_key *k, struct chirp_config *c, struct cfg_mode *m,
		       const char *v, char *err, size_t len)
{
	char *base = key_base(k, c, m);
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
 * (round-trips through parse_value). */
static void format_value(const struct cfg_key *k, const struct chirp_config *c,
			 const struct cfg_mode *m, char *buf, size_t len)
{
	const char *base = key_base(k, (struct chirp_config *)c, (struct cfg_mode *)m);

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
static int is_mode_section(const char *s)
{
	return !strncmp(s, "mode", 4) && (s[4] == '\0' || s[4] == ' ' || s[4] == '\t');
}

/* Whether a file may set k in section (see find_key). */
static int key_in_section(const struct cfg_key *k, const char *section)
{
	return is_mode_section(section) ? (k->flags & F_MODE) != 0 : !strcmp(k->section, section);
}

/* k's section as a user writes it: "mode NAME" for the id. */
static const char *key_section_label(const struct cfg_key *k)
{
	return !strcmp(k->section, "mode") ? "mode NAME" : k->section;
}

/* Key name in section: a [mode NAME] section has the id and every mode
 * key (F_MODE) of [waveform]; any other section the keys listed under it. */
static const struct cfg_key *find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(cfg_tab[i].name, name) && key_in_section(&cfg_tab[i], section))
			return &cfg_tab[i];
	return NULL;
}

static int section_index(const char *s)
{
	for (size_t i = 0; i < NSECTIONS; i++)
		if (!strcmp(cfg_sections[i], s))
			return (int)i;
	return -1;
}

/* ---- defaults ---------------------------------------------------------- */

/* The defaults of every mode key (F_MODE) into m: a [mode NAME] section
 * starts from them, as [waveform] does. The id has none (F_REQUIRED). */
static void mode_defaults(struct cfg_mode *m)
{
	char err[256];

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!(k->flags & F_MODE) || (k->flags & F_REQUIRED))
			continue;
		if (parse_value(k, NULL, m, k->def, err, sizeof(err)) < 0)
			log_err("config: bad built-in default for [%s] %s: %s",
				k->section, k->name, err);
	}
}

/*
 * After the modes are set: every mode's wf gets [waveform] sample_rate_hz
 * (the radar's rate, not a mode's) and its own file pointer, and c->wf /
 * c->wf_file become a copy of mode id 0, the waveform of code that knows a
 * single one.
 */
static void modes_finish(struct chirp_config *c)
{
	double rate = c->wf.sample_rate_hz;
	int i0 = config_mode_index(c, 0);
	const struct cfg_mode *m0 = &c->modes[i0 >= 0 ? i0 : 0];

	for (unsigned i = 0; i < c->nmodes; i++) {
		c->modes[i].wf.sample_rate_hz = rate;
		config_mode_wf(c, i);
	}
	c->wf = m0->wf;
	memcpy(c->wf_file, m0->wf_file, sizeof(c->wf_file));
	config_wf(c);
}

void config_defaults(struct chirp_config *c)
{
	char err[256];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS; i++) {
		if (cfg_tab[i].flags & F_MODE)
			continue;
		/* The defaults are valid by construction; test_config checks it. */
		if (parse_value(&cfg_tab[i], c, NULL, cfg_tab[i].def, err, sizeof(err)) < 0)
			log_err("config: bad built-in default for [%s] %s: %s",
				cfg_tab[i].section, cfg_tab[i].name, err);
	}
	/* One mode: [waveform]'s, id 0, "default". */
	mode_defaults(&c->modes[0]);
	snprintf(c->modes[0].name, sizeof(c->modes[0].name), "default");
	c->nmodes = 1;
	modes_finish(c);
}

const struct wf_params *config_wf(struct chirp_config *c)
{
	c->wf.file = c->wf_file[0] ? c->wf_file : NULL;
	return &c->wf;
}

const struct wf_params *config_mode_wf(struct chirp_config *c, unsigned i)
{
	struct cfg_mode *m;

	if (i >= c->nmodes || i >= CFG_MAX_MODES)
		return NULL;
	m = &c->modes[i];
	m->wf.file = m->wf_file[0] ? m->wf_file : NULL;
	return &m->wf;
}

int config_mode_index(const struct chirp_config *c, unsigned id)
{
	for (unsigned i = 0; i < c->nmodes && i < CFG_MAX_MODES; i++)
		if (c->modes[i].id == id)
			return (int)i;
	return -1;
}

/* ---- loading ----------------------------------------------------------- */

struct load {
	struct chirp_config *c;
	const char *name;           /* file name for messages                 */
	FILE *errs;
	int nerr;
	int line;                   /* line being parsed                      */
	const char *text, *pos;     /* reader state                           */
	const char *end;
	int sec_line[NSECTIONS];    /* line of each section header, 0 = none */
	int sec_known;              /* current section header was valid       */
	int hdr_seen;               /* any section header line seen           */
	int key_line[NKEYS];        /* line each key was set at, 0 = default;
				       [waveform]'s mode keys included      */
	char base_dir[CFG_PATH_MAX];/* config file's directory ("" = cwd)     */
	struct cfg_mode wave;       /* [waveform]'s mode (defaults if absent) */
	struct mode_load {          /* each [mode NAME] section, in file order */
		struct cfg_mode m;
		int line;           /* of its header                          */
		int key_line[NKEYS];/* as above, for this section's keys      */
	} modes[CFG_MAX_MODES];
	unsigned nmodes;
	int cur;                    /* the [mode] section being read, or -1   */
	int wave_is_mode;           /* [waveform] is mode 0 ("default")       */
	const struct mode_load *check_mode; /* the [mode] check_pulse checks  */
};

static void report(struct load *ld, int line, const char *section, const char *key,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void report(struct load *ld, int line, const char *section, const char *key,
		   const char *fmt, ...)
{
	va_list ap;

	ld->nerr++;
	if (!ld->errs)
		return;
	if (line > 0)
		fprintf(ld->errs, "%s:%d: ", ld->name, line);
	else
		fprintf(ld->errs, "%s: ", ld->name);
	if (section && key)
		fprintf(ld->errs, "[%s] %s: ", section, key);
	else if (section)
		fprintf(ld->errs, "[%s]: ", section);
	va_start(ap, fmt);
	vfprintf(ld->errs, fmt, ap);
	va_end(ap);
	fputc('\n', ld->errs);
}

/* Well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF)? */
static int utf8_ok(const unsigned char *p, const unsigned char *e)
{
	while (p < e) {
		unsigned c = *p++, need, min, cp;
		if (c < 0x80)
			continue;
		if (c >= 0xC2 && c <= 0xDF)
			need = 1, min = 0x80, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			need = 2, min = 0x800, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			need = 3, min = 0x10000, cp = c & 0x07;
		else
			return 0;
		if ((size_t)(e - p) < need)
			return 0;
		for (unsigned i = 0; i < need; i++, p++) {
			if ((*p & 0xC0) != 0x80)
				return 0;
			cp = (cp << 6) | (*p & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
	}
	return 1;
}

/* The next raw line as [*p, *e): without its newline, a UTF-8 BOM on line 1,
 * a trailing CR and leading blanks. Advances ld->pos and ld->line. */
static void reader_next_line(struct load *ld, const char **p, const char **e)
{
	const char *nl = memchr(ld->pos, '\n', (size_t)(ld->end - ld->pos));

	ld->line++;
	*p = ld->pos;
	*e = nl ? nl : ld->end;
	ld->pos = nl ? nl + 1 : ld->end;

	if (ld->line == 1 && *e - *p >= 3 && !memcmp(*p, "\xEF\xBB\xBF", 3))
		*p += 3;                                   /* UTF-8 BOM */
	if (*e > *p && (*e)[-1] == '\r')
		(*e)--;
	while (*p < *e && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* A line with a control character (but tab) or invalid UTF-8 is reported
 * and skipped: -1. */
static int reader_chars_check(struct load *ld, const char *p, const char *e)
{
	for (const char *q = p; q < e; q++) {
		if ((unsigned char)*q < 0x20 && *q != '\t') {
			report(ld, ld->line, NULL, NULL,
			       "control character 0x%02x in line", (unsigned char)*q);
			return -1;
		}
		if (*q == 0x7f) {
			report(ld, ld->line, NULL, NULL, "control character 0x7f in line");
			return -1;
		}
	}
	if (!utf8_ok((const unsigned char *)p, (const unsigned char *)e)) {
		report(ld, ld->line, NULL, NULL, "line is not valid UTF-8");
		return -1;
	}
	return 0;
}

/* The end of [p, e) without an inline comment (a blank then '#' or ';') and
 * without trailing blanks. */
static const char *reader_strip_comment(const char *p, const char *e)
{
	for (const char *q = p + 1; q < e; q++) {
		if ((*q == '#' || *q == ';') && (q[-1] == ' ' || q[-1] == '\t')) {
			e = q;
			break;
		}
	}
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	return e;
}

/* A mode's name: 1..CFG_MODE_NAME_MAX-1 characters of A-Z a-z 0-9 _ -
 * (it names the mode in logs, metrics labels and file names). */
static int mode_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n >= CFG_MODE_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return 0;
	return 1;
}

/* A "[mode NAME]" header (sec is the text between the brackets): a new
 * mode with every mode key at its default, passed on to inih as
 * "[mode NAME]\n" (0); a bad or repeated name, or one mode too many, is
 * reported (-1) and the section's keys are skipped. */
static int reader_mode(struct load *ld, const char *sec, char *str, int num)
{
	const char *name = sec + 4;
	struct mode_load *ml;

	while (*name == ' ' || *name == '\t')
		name++;
	if (!mode_name_ok(name)) {
		report(ld, ld->line, sec, NULL,
		       *name ? "mode name must be 1..%d characters of A-Z a-z 0-9 _ -" :
			       "a mode section needs a name, like [mode short] (at most %d characters of A-Z a-z 0-9 _ -)",
		       CFG_MODE_NAME_MAX - 1);
		return -1;
	}
	for (unsigned j = 0; j < ld->nmodes; j++) {
		if (!strcmp(ld->modes[j].m.name, name)) {
			report(ld, ld->line, sec, NULL, "duplicate mode name (first at line %d)",
			       ld->modes[j].line);
			return -1;
		}
	}
	if (ld->nmodes >= CFG_MAX_MODES) {
		report(ld, ld->line, sec, NULL, "more than %d modes", CFG_MAX_MODES);
		return -1;
	}
	ml = &ld->modes[ld->nmodes];
	mode_defaults(&ml->m);
	ml->m.id = UINT_MAX;   /* none yet: an id that failed to parse stays so */
	snprintf(ml->m.name, sizeof(ml->m.name), "%s", name);
	ml->line = ld->line;
	ld->cur = (int)ld->nmodes++;
	ld->sec_known = 1;
	snprintf(str, (size_t)num, "[mode %s]\n", name);
	return 0;
}

/* A section header line [p, e) of n bytes: a known section seen once is
 * written to str as "[name]\n" (0); anything else is reported (-1), and the
 * keys under it are skipped without a report of their own. */
static int reader_section(struct load *ld, const char *p, const char *e, size_t n,
			  char *str, int num)
{
	const char *rb = memchr(p, ']', n), *s0, *s1;
	char sec[64];
	size_t sl;
	int si;

	ld->sec_known = 0;
	ld->hdr_seen = 1;
	if (!rb || rb != e - 1) {
		report(ld, ld->line, NULL, NULL,
		       rb ? "text after ']' in section header" :
			    "section header without ']'");
		/* Keys until the next good header are not reported again. */
		return -1;
	}
	s0 = p + 1;
	s1 = rb;
	while (s0 < s1 && (*s0 == ' ' || *s0 == '\t'))
		s0++;
	while (s1 > s0 && (s1[-1] == ' ' || s1[-1] == '\t'))
		s1--;
	sl = (size_t)(s1 - s0);
	if (sl >= sizeof(sec)) {
		report(ld, ld->line, NULL, NULL, "unknown section (name too long)");
		return -1;
	}
	memcpy(sec, s0, sl);
	sec[sl] = '\0';
	ld->cur = -1;
	if (is_mode_section(sec))
		return reader_mode(ld, sec, str, num);
	si = section_index(sec);
	if (si < 0) {
		report(ld, ld->line, sec, NULL,
		       "unknown section (sections: daemon, numa, input, cpi, waveform, mode NAME, processing, output, radar, doppler, cfar, detections, metrics, trace)");
		return -1;
	}
	if (ld->sec_line[si]) {
		report(ld, ld->line, sec, NULL, "duplicate section (first at line %d)",
		       ld->sec_line[si]);
		return -1;
	}
	ld->sec_line[si] = ld->line;
	ld->sec_known = 1;
	snprintf(str, (size_t)num, "[%s]\n", sec);
	return 0;
}

/* A key line [p, e) of n bytes is passed on (0) only with a key name and a
 * '=' or ':' inside a known section; else -1, reported unless the section
 * it is in was reported already. */
static int reader_key_check(struct load *ld, const char *p, const char *e, size_t n)
{
	if (!memchr(p, '=', n) && !memchr(p, ':', n)) {
		report(ld, ld->line, NULL, NULL, "syntax error: expected 'key = value' or '[section]'");
		return -1;
	}
	if (*p == '=' || *p == ':') {
		report(ld, ld->line, NULL, NULL, "syntax error: missing key name before '%c'", *p);
		return -1;
	}
	if (!ld->sec_known) {
		/* Outside any section, or in a rejected one. Only the first
		 * case is news; inih would pass section "" or the bad name. */
		if (!ld->hdr_seen) {
			/* No valid section seen yet: say so for this key. */
			char key[64];
			const char *eq = p;
			while (eq < e && *eq != '=' && *eq != ':')
				eq++;
			while (eq > p && (eq[-1] == ' ' || eq[-1] == '\t'))
				eq--;
			snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
			report(ld, ld->line, NULL, NULL,
			       "%s: key outside any known section (put it under [section])", key);
		}
		return -1;
	}
	return 0;
}

/*
 * inih reader: hands inih one cleaned line at a time (see the top of the
 * file). str has room for num bytes. A line that is reported, or a comment,
 * reaches inih as an empty line, so its line numbers stay right.
 */
static char *reader(char *str, int num, void *stream)
{
	struct load *ld = stream;
	const char *p, *e;
	size_t n;

	if (ld->pos >= ld->end || num < 4)
		return NULL;
	reader_next_line(ld, &p, &e);
	if (reader_chars_check(ld, p, e) < 0)
		goto blank;
	if (p == e || *p == '#' || *p == ';')
		goto blank;
	e = reader_strip_comment(p, e);
	n = (size_t)(e - p);
	if (n > (size_t)num - 3) {
		report(ld, ld->line, NULL, NULL, "line too long (%zu characters, at most %d)",
		       n, num - 3);
		goto blank;
	}
	if (*p == '[') {
		if (reader_section(ld, p, e, n, str, num) < 0)
			goto blank;
		return str;
	}
	if (reader_key_check(ld, p, e, n) < 0)
		goto blank;
	memcpy(str, p, n);
	str[n] = '\n';
	str[n + 1] = '\0';
	return str;
blank:
	str[0] = '\n';
	str[1] = '\0';
	return str;
}

/* Edit distance of two short strings (capped at 64 characters). */
static unsigned edit_distance(const char *a, const char *b)
{
	unsigned prev[65], cur[65];
	size_t la = strlen(a), lb = strlen(b);

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned d = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
		}
		memcpy(prev, cur, (lb + 1) * sizeof(unsigned));
	}
	return prev[lb];
}

/*
 * The key a user probably meant: the same name in another section, else
 * a name within 2 edits in this section (a typo: sample -> samples).
 */
static const struct cfg_key *suggest(const char *section, const char *name)
{
	const struct cfg_key *best = NULL;
	unsigned bestd = 3;

	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(cfg_tab[i].name, name))
			return &cfg_tab[i];
	for (size_t i = 0; i < NKEYS; i++) {
		unsigned d;
		if (!key_in_section(&cfg_tab[i], section))
			continue;
		d = edit_distance(cfg_tab[i].name, name);
		if (d < bestd) {
			bestd = d;
			best = &cfg_tab[i];
		}
	}
	return best;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct load *ld = user;
	const struct cfg_key *k;
	struct cfg_mode *m = &ld->wave;   /* where a mode key goes */
	int *lines = ld->key_line;
	char err[256];
	size_t i;

	/* inih built with INI_CALL_HANDLER_ON_NEW_SECTION calls us with no
	 * name at each header (the reader has checked it already). */
	if (!section || !name)
		return 1;
	if (!value)
		value = "";     /* INI_ALLOW_NO_VALUE; the reader rejects such lines */
	if (is_mode_section(section)) {
		/* The reader passes a [mode NAME] header only after opening
		 * its mode (ld->cur), and its keys before the next header. */
		if (ld->cur < 0)
			return 1;
		m = &ld->modes[ld->cur].m;
		lines = ld->modes[ld->cur].key_line;
	}
	k = find_key(section, name);
	if (!k) {
		const struct cfg_key *s = suggest(section, name);
		if (s && !key_in_section(s, section))
			report(ld, ld->line, section, name, "unknown key (did you mean [%s] %s?)",
			       key_section_label(s), s->name);
		else if (s)
			report(ld, ld->line, section, name, "unknown key (did you mean %s?)", s->name);
		else
			report(ld, ld->line, section, name, "unknown key");
		return 1;
	}
	i = (size_t)(k - cfg_tab);
	if (lines[i]) {
		report(ld, ld->line, section, name, "duplicate key (first set at line %d)",
		       lines[i]);
		return 1;
	}
	lines[i] = ld->line;
	/* inih drops blanks around a value, and the reader cuts " ;" / " #"
	 * comments, so a value can still start with ';' or '#' ("listen=;:9").
	 * config_print would write it as "key = ;..." and that line reads back
	 * as an empty value with a comment: what --check and "chirpctl config"
	 * print would mean something else than what runs. No key needs such a
	 * value, so refuse it rather than invent a quoting syntax. */
	if (value[0] == ';' || value[0] == '#') {
		report(ld, ld->line, section, name,
		       "value starts with '%c', which reads as a comment when written back; not allowed",
		       value[0]);
		return 1;
	}
	err[0] = '\0';
	if (parse_value(k, ld->c, m, value, err, sizeof(err)) < 0) {
		report(ld, ld->line, section, name, "%s", err);
		return 1;
	}
	/* Relative file paths are relative to the config file's directory,
	 * stored resolved so the daemon's cwd does not matter. */
	if (k->check == check_file_path && value[0] && value[0] != '/' && ld->base_dir[0]) {
		char *dst = key_base(k, ld->c, m);
		int w = snprintf(dst, k->size, "%s/%s", ld->base_dir, value);
		if (w < 0 || (size_t)w >= k->size) {
			report(ld, ld->line, section, name,
			       "%s/%s is longer than %zu characters", ld->base_dir, value, k->size - 1);
			dst[0] = '\0';
		}
	}
	return 1;
}

/* The line a key was set at (0 = default). A mode's key in a "mode NAME"
 * section is looked up in the mode being checked (ld->check_mode). */
static int key_line(const struct load *ld, const char *section, const char *name)
{
	const struct cfg_key *k = find_key(section, name);

	if (!k)
		return 0;
	if (is_mode_section(section))
		return ld->check_mode ? ld->check_mode->key_line[k - cfg_tab] : 0;
	return ld->key_line[k - cfg_tab];
}

/* The latest-set of two keys: the one whose line makes the combination wrong. */
static const char *later(const struct load *ld, const char *sa, const char *ka,
			 const char *sb, const char *kb, const char **sec, int *line)
{
	int la = key_line(ld, sa, ka), lb = key_line(ld, sb, kb);

	if (lb > la) {
		*sec = sb;
		*line = lb;
		return kb;
	}
	*sec = sa;
	*line = la;
	return ka;
}

/* A mode being checked: its waveform, the section its keys are reported
 * under ("waveform" or "mode NAME") and, for a [mode NAME] section, " for
 * [mode NAME]" to name it in messages about keys of other sections. */
struct mode_check {
	const struct cfg_mode *m;
	const char *sec;
	const char *whose;
};

/* Pulse length L in samples of mode mc, 0 if unknown. */
static unsigned long long ref_len(const struct mode_check *mc, double rate, struct load *ld)
{
	const struct cfg_mode *m = mc->m;

	switch (m->wf.type) {
	case WF_LFM:
		return (unsigned long long)llround(m->wf.pulse_width_s * rate);
	case WF_BARKER13:
		return 13ull * m->wf.chip_samples;
	case WF_FILE: {
		struct stat st;
		int line = key_line(ld, mc->sec, "file");
		if (!m->wf_file[0]) {
			report(ld, line ? line : key_line(ld, mc->sec, "type"), mc->sec, "file",
			       "type = file needs a file");
			return 0;
		}
		if (stat(m->wf_file, &st) < 0) {
			report(ld, line, mc->sec, "file", "%s: %s", m->wf_file, strerror(errno));
			return 0;
		}
		if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size % 8) {
			report(ld, line, mc->sec, "file",
			       "%s: not a regular file of cf32 samples (size %lld is not a positive multiple of 8)",
			       m->wf_file, (long long)st.st_size);
			return 0;
		}
		return (unsigned long long)st.st_size / 8;
	}
	}
	return 0;
}

/* An lfm sweep must fit the sample rate (complex sampling: |f| <= fs/2). */
static void check_bandwidth(struct load *ld, const struct mode_check *mc, double rate)
{
	const struct wf_params *wf = &mc->m->wf;
	const char *sec, *key;
	int line;

	if (wf->type != WF_LFM || wf->bandwidth_hz <= rate)
		return;
	key = later(ld, mc->sec, "bandwidth_hz", "waveform", "sample_rate_hz", &sec, &line);
	if (!strcmp(key, "bandwidth_hz"))
		report(ld, line, sec, key, "%g exceeds sample_rate_hz %g", wf->bandwidth_hz, rate);
	else
		report(ld, line, sec, key, "%g is below bandwidth_hz %g%s", rate, wf->bandwidth_hz,
		       mc->whose);
}

/* A mode's pulse against the sampling and the CPI: bandwidth within the
 * sample rate, at least one sample, no longer than a range line, and an
 * nfft that holds the whole correlation. */
static void check_pulse(struct load *ld, const struct mode_check *mc)
{
	struct chirp_config *c = ld->c;
	const struct wf_params *wf = &mc->m->wf;
	double rate = c->wf.sample_rate_hz;
	const char *sec, *key;
	unsigned long long L, R = c->samples, need;
	int line;

	check_bandwidth(ld, mc, rate);
	L = ref_len(mc, rate, ld);
	if (wf->type == WF_LFM && L == 0) {
		key = later(ld, mc->sec, "pulse_width_s", "waveform", "sample_rate_hz", &sec, &line);
		report(ld, line, sec, key,
		       "pulse is shorter than one sample (pulse_width_s %g * sample_rate_hz %g < 0.5)%s",
		       wf->pulse_width_s, rate, mc->whose);
	}
	if (L > R) {
		const char *wkey = wf->type == WF_LFM ? "pulse_width_s" :
				   wf->type == WF_BARKER13 ? "chip_samples" : "file";
		key = later(ld, mc->sec, wkey, "cpi", "samples", &sec, &line);
		if (wf->type == WF_LFM && key_line(ld, "waveform", "sample_rate_hz") > line) {
			sec = "waveform";
			key = "sample_rate_hz";
			line = key_line(ld, "waveform", "sample_rate_hz");
		}
		report(ld, line, sec, key, "pulse length L=%llu exceeds range samples R=%llu%s",
		       L, R, strcmp(sec, mc->sec) ? mc->whose : "");
	}
	need = R + (L ? L : 1) - 1;
	if (c->nfft && L && c->nfft < need) {
		key = later(ld, "processing", "nfft", "cpi", "samples", &sec, &line);
		report(ld, line, sec, key, "nfft %zu is below samples + L - 1 = %llu (no wrap-around allowed)%s",
		       c->nfft, need, mc->whose);
	}
}

/* check_pulse for every mode: [waveform]'s (when it is one) and each
 * [mode NAME] section's. */
static void check_modes_pulse(struct load *ld)
{
	struct mode_check mc = { &ld->wave, "waveform", "" };
	char sec[48], whose[64];

	if (ld->wave_is_mode) {
		ld->check_mode = NULL;
		check_pulse(ld, &mc);
	}
	for (unsigned j = 0; j < ld->nmodes; j++) {
		snprintf(sec, sizeof(sec), "mode %s", ld->modes[j].m.name);
		snprintf(whose, sizeof(whose), " for [mode %s]", ld->modes[j].m.name);
		mc.m = &ld->modes[j].m;
		mc.sec = sec;
		mc.whose = whose;
		ld->check_mode = &ld->modes[j];
		check_pulse(ld, &mc);
	}
	ld->check_mode = NULL;
}

/* Each ring, slots x slot bytes, must fit this machine's memory: a ring
 * that cannot be reserved would fail only at start. */
static void check_ring_memory(struct load *ld, unsigned long long in_b, unsigned long long out_b)
{
	struct chirp_config *c = ld->c;
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	unsigned long long phys = pages > 0 && psz > 0 ?
		(unsigned long long)pages * (unsigned long long)psz : 0;
	int line;

	if (phys && c->input_slots && in_b * c->input_slots > phys) {
		line = key_line(ld, "input", "slots");
		report(ld, line, "input", "slots",
		       "input ring of %u slots x %.1f MiB = %.1f GiB exceeds this machine's memory (%.1f GiB)",
		       c->input_slots, (double)in_b / (1 << 20),
		       (double)in_b * c->input_slots / (1u << 30), (double)phys / (1u << 30));
	}
	if (phys && c->output_slots && out_b * c->output_slots > phys) {
		line = key_line(ld, "output", "slots");
		report(ld, line, "output", "slots",
		       "output ring of %u slots x %.1f MiB = %.1f GiB exceeds this machine's memory (%.1f GiB)",
		       c->output_slots, (double)out_b / (1 << 20),
		       (double)out_b * c->output_slots / (1u << 30), (double)phys / (1u << 30));
	}
}

/* One CPI must fit a ring slot a 64-bit process can map; then the rings
 * must fit the machine. */
static void check_cpi_size(struct load *ld)
{
	struct chirp_config *c = ld->c;
	unsigned long long R = c->samples;
	unsigned long long cpi = (unsigned long long)c->channels * c->pulses * R;
	unsigned long long in_b = cpi * (c->format == PC_FMT_SC16 ? 4 : 8);
	unsigned long long out_b = (unsigned long long)c->channels *
		(c->out_mode == PC_OUT_MAP_POWER || c->out_mode == PC_OUT_MAP_DB ?
		 config_doppler_nfft(c) : c->pulses) * R * pc_output_sample_bytes(c->out_mode);
	const unsigned long long lim = 4ull << 30;
	const char *sec, *key;
	int line;

	if (in_b > lim || out_b > lim) {
		key = later(ld, "cpi", "pulses", "cpi", "samples", &sec, &line);
		if (key_line(ld, "cpi", "channels") > line) {
			sec = "cpi";
			key = "channels";
			line = key_line(ld, "cpi", "channels");
		}
		report(ld, line, sec, key,
		       "a CPI of %u x %u x %llu samples is %.1f GiB, more than the 4 GiB a ring slot holds",
		       c->channels, c->pulses, R, (double)(in_b > out_b ? in_b : out_b) / (1u << 30));
	} else {
		check_ring_memory(ld, in_b, out_b);
	}
}

/* The latest set of three keys (later, extended). */
static const char *latest3(const struct load *ld, const char *sa, const char *ka, const char *sb,
			   const char *kb, const char *sc, const char *kc, const char **sec,
			   int *line)
{
	const char *key = later(ld, sa, ka, sb, kb, sec, line);

	if (key_line(ld, sc, kc) > *line) {
		*sec = sc;
		*line = key_line(ld, sc, kc);
		return kc;
	}
	return key;
}

/* What needs what: cfar and the map outputs need doppler, detections
 * need cfar, mode none needs somewhere for the detections to go, and
 * velocity = on needs both a PRF and a carrier. */
static void check_radar_needs(struct load *ld)
{
	struct chirp_config *c = ld->c;
	int map = c->out_mode == PC_OUT_MAP_POWER || c->out_mode == PC_OUT_MAP_DB;
	const char *sec, *key;
	int line;

	if (c->cfar && !c->doppler) {
		key = later(ld, "cfar", "enable", "doppler", "enable", &sec, &line);
		report(ld, line, sec, key, "[cfar] needs [doppler] enable = true (the CFAR runs on the range-Doppler map)");
	}
	if (map && !c->doppler) {
		key = later(ld, "output", "mode", "doppler", "enable", &sec, &line);
		report(ld, line, sec, key, "output mode %s needs [doppler] enable = true",
		       pc_output_name(c->out_mode));
	}
	if (c->out_mode == PC_OUT_NONE && (!c->cfar || (!c->det_ring[0] && !c->det_file[0]))) {
		key = later(ld, "output", "mode", "cfar", "enable", &sec, &line);
		report(ld, line, sec, key,
		       "output mode none leaves detections as the only result: needs [cfar] enable and a [detections] ring or file");
	}
	if (c->out_mode == PC_OUT_NONE && c->output_file[0]) {
		key = later(ld, "output", "file", "output", "mode", &sec, &line);
		report(ld, line, sec, key, "output mode none writes no results: [output] file has nothing to record");
	}
	if (!c->cfar && (c->det_ring[0] || c->det_file[0])) {
		const char *dk = c->det_ring[0] ? "ring" : "file";

		key = later(ld, "detections", dk, "cfar", "enable", &sec, &line);
		report(ld, line, sec, key, "[detections] %s is set but [cfar] enable is false: there are no detections", dk);
	}
	if (c->velocity == PC_SWITCH_ON && (c->prf_hz <= 0 || c->carrier_hz <= 0)) {
		key = latest3(ld, "radar", "velocity", "radar", "prf_hz", "radar", "carrier_hz",
			      &sec, &line);
		report(ld, line, sec, key, "velocity = on needs prf_hz and carrier_hz (prf_hz %g, carrier_hz %g)",
		       c->prf_hz, c->carrier_hz);
	}
}

/* The map's axes: P' >= 1 pulses after MTI, Nd >= P'. Returns Nd, or 0
 * after reporting. */
static unsigned check_doppler_axes(struct load *ld)
{
	struct chirp_config *c = ld->c;
	unsigned pm = config_doppler_pulses(c), nd = config_doppler_nfft(c);
	const char *sec, *key;
	int line;

	if (!pm) {
		key = later(ld, "doppler", "mti", "cpi", "pulses", &sec, &line);
		report(ld, line, sec, key, "mti %s needs more than %u pulses per CPI",
		       c->mti == PC_MTI_THREE ? "three_pulse" : "two_pulse", c->pulses);
		return 0;
	}
	if (nd < pm) {
		key = latest3(ld, "doppler", "fft", "cpi", "pulses", "doppler", "mti", &sec, &line);
		report(ld, line, sec, key, "Doppler FFT length %u is shorter than the %u pulses left after MTI",
		       nd, pm);
		return 0;
	}
	return nd;
}

/* Guard and training cells must fit each axis, leave training cells, and
 * (os) a rank among them; pfa < 1. */
static void check_cfar_window(struct load *ld, unsigned nd)
{
	struct chirp_config *c = ld->c;
	unsigned long long wr = 2ull * (c->guard_range + c->train_range) + 1;
	unsigned long long wd = 2ull * (c->guard_doppler + c->train_doppler) + 1;
	unsigned long long n = wr * wd - (2ull * c->guard_range + 1) * (2ull * c->guard_doppler + 1);
	const char *sec, *key;
	int line;

	if (wr > c->samples) {
		key = latest3(ld, "cfar", "train_range", "cfar", "guard_range", "cpi", "samples",
			      &sec, &line);
		report(ld, line, sec, key, "CFAR window of 2 x (guard_range %u + train_range %u) + 1 = %llu gates is wider than the %u range gates",
		       c->guard_range, c->train_range, wr, c->samples);
	}
	if (nd && wd > nd) {
		key = latest3(ld, "cfar", "train_doppler", "cfar", "guard_doppler", "doppler", "fft",
			      &sec, &line);
		report(ld, line, sec, key, "CFAR window of 2 x (guard_doppler %u + train_doppler %u) + 1 = %llu bins is wider than the %u Doppler bins",
		       c->guard_doppler, c->train_doppler, wd, nd);
	}
	if (n == 0) {
		key = later(ld, "cfar", "train_range", "cfar", "train_doppler", &sec, &line);
		report(ld, line, sec, key, "no training cells (train_range and train_doppler are 0)");
	} else if (c->cfar_method == PC_CFAR_OS && n > PC_CFAR_OS_MAX_CELLS) {
		key = latest3(ld, "cfar", "method", "cfar", "train_range", "cfar", "train_doppler",
			      &sec, &line);
		report(ld, line, sec, key, "os CFAR sorts at most %u training cells per cell, this window has %llu",
		       PC_CFAR_OS_MAX_CELLS, n);
	} else if (c->cfar_method == PC_CFAR_OS && c->os_rank > n) {
		key = later(ld, "cfar", "os_rank", "cfar", "method", &sec, &line);
		report(ld, line, sec, key, "os_rank %u exceeds the %llu training cells", c->os_rank, n);
	}
	if (c->pfa >= 1.0)
		report(ld, key_line(ld, "cfar", "pfa"), "cfar", "pfa", "%g is not below 1 (0 < pfa < 1)",
		       c->pfa);
}

/*
 * The radar chain as pulse compression will see it: what pc_params_check
 * says of the parameters built from this file (config_pc_params), with a
 * one-sample stand-in reference (the real ones are checked per mode
 * above). Run only on a file without other errors, so one mistake is not
 * reported twice; reported at the line of [cfar] or [doppler] enable.
 */
static void check_radar_params(struct load *ld)
{
	static const float one[2] = { 1.0f, 0.0f };
	struct pc_params pp;
	char why[256];
	const char *sec = ld->c->cfar ? "cfar" : "doppler";

	config_pc_params(ld->c, &pp);
	pp.ref = one;
	pp.ref_len = 1;
	if (pc_params_check(&pp, why, sizeof(why)) < 0)
		report(ld, key_line(ld, sec, "enable"), sec, "enable", "%s", why);
}

static void check_radar(struct load *ld)
{
	struct chirp_config *c = ld->c;
	int before = ld->nerr;
	unsigned nd = 0;

	check_radar_needs(ld);
	if (c->doppler)
		nd = check_doppler_axes(ld);
	if (c->doppler && c->cfar)
		check_cfar_window(ld, nd);
	if (c->doppler && ld->nerr == 0 && before == 0)
		check_radar_params(ld);
}

/* Cross-key checks; each error at the line of the key that breaks it. */
static void check_consistency(struct load *ld)
{
	struct chirp_config *c = ld->c;
	const char *sec, *key;
	int line;

	check_modes_pulse(ld);
	check_cpi_size(ld);
	check_radar(ld);
	if (!strcmp(c->input_ring, c->output_ring)) {
		key = later(ld, "input", "ring", "output", "ring", &sec, &line);
		report(ld, line, sec, key, "input and output ring have the same name %s",
		       c->input_ring);
	}
#ifndef CHIRP_HAVE_CUDA
	if (c->backend == PC_BACKEND_CUDA)
		report(ld, key_line(ld, "processing", "backend"), "processing", "backend",
		       "this chirpd was built without CUDA (use auto or cpu)");
#endif
	/* Keys that only matter for another choice (rt_priority with
	 * realtime = off, taylor_* with another window, gpu with backend =
	 * cpu) are accepted silently, so one template can serve many hosts. */
}

/* The first [waveform] line that sets a mode key (one a [mode] taking id 0
 * would clash with), or 0. */
static int wave_mode_key_line(const struct load *ld)
{
	int first = 0;

	for (size_t i = 0; i < NKEYS; i++)
		if ((cfg_tab[i].flags & F_MODE) && ld->key_line[i] &&
		    (!first || ld->key_line[i] < first))
			first = ld->key_line[i];
	return first;
}

/* Each [mode NAME] needs an id, one no other mode has. Returns the index
 * in ld->modes of the first mode with id 0, or -1. */
static int check_mode_ids(struct load *ld)
{
	const size_t id_key = (size_t)(find_key("mode", "id") - cfg_tab);
	int claim0 = -1;
	char sec[48];

	for (unsigned j = 0; j < ld->nmodes; j++) {
		const struct mode_load *a = &ld->modes[j];

		snprintf(sec, sizeof(sec), "mode %s", a->m.name);
		if (!a->key_line[id_key]) {
			report(ld, a->line, sec, "id", "missing (every [mode NAME] needs an id 0..%d)",
			       CFG_MAX_MODES - 1);
			continue;
		}
		if (a->m.id >= CFG_MAX_MODES)
			continue;      /* out of range: reported by the handler */
		for (unsigned i = 0; i < j; i++) {
			const struct mode_load *b = &ld->modes[i];
			if (b->key_line[id_key] && b->m.id == a->m.id) {
				report(ld, a->key_line[id_key], sec, "id",
				       "%u is already the id of [mode %s] (line %d)",
				       a->m.id, b->m.name, b->key_line[id_key]);
				break;
			}
		}
		if (a->m.id == 0 && claim0 < 0)
			claim0 = (int)j;
	}
	return claim0;
}

/*
 * The modes of the file into c->modes: [waveform]'s first as id 0
 * "default", unless a [mode NAME] section takes id 0, then every [mode
 * NAME] in file order. A [mode] with id 0 next to mode keys in [waveform]
 * is an error: two waveforms for id 0.
 */
static void collect_modes(struct load *ld)
{
	struct chirp_config *c = ld->c;
	const size_t id_key = (size_t)(find_key("mode", "id") - cfg_tab);
	int claim0 = check_mode_ids(ld), wl = wave_mode_key_line(ld);
	unsigned n = 0;
	char sec[48];

	ld->wave_is_mode = claim0 < 0;
	if (claim0 >= 0 && wl) {
		const struct mode_load *a = &ld->modes[claim0];
		snprintf(sec, sizeof(sec), "mode %s", a->m.name);
		report(ld, a->key_line[id_key], sec, "id",
		       "0 is the id of [waveform]'s mode, which line %d configures (move the waveform keys into one of the two sections)",
		       wl);
	}
	if (ld->wave_is_mode) {
		c->modes[n] = ld->wave;
		c->modes[n].id = 0;
		snprintf(c->modes[n].name, sizeof(c->modes[n].name), "default");
		n++;
	}
	for (unsigned j = 0; j < ld->nmodes; j++) {
		const struct mode_load *a = &ld->modes[j];
		snprintf(sec, sizeof(sec), "mode %s", a->m.name);
		if (ld->wave_is_mode && !strcmp(a->m.name, "default")) {
			report(ld, a->line, sec, NULL,
			       "duplicate mode name: default is the name of [waveform]'s mode (id 0)");
			continue;
		}
		if (n >= CFG_MAX_MODES) {
			report(ld, a->line, sec, NULL,
			       "more than %d modes ([waveform]'s mode default is one of them)",
			       CFG_MAX_MODES);
			break;
		}
		c->modes[n++] = a->m;
	}
	c->nmodes = n;
	modes_finish(c);
}

static int load_text(struct chirp_config *c, const char *name, const char *base_dir,
		     const char *text, size_t len, FILE *errs)
{
	struct load *ld = calloc(1, sizeof(*ld));
	int rc;

	if (!ld)
		return -ENOMEM;
	config_defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", name);
	ld->c = c;
	ld->name = name;
	ld->errs = errs;
	ld->cur = -1;
	ld->wave = c->modes[0];   /* [waveform]'s mode starts at the defaults */
	if (base_dir)
		snprintf(ld->base_dir, sizeof(ld->base_dir), "%s", base_dir);
	ld->text = ld->pos = text;
	ld->end = text + len;
	/* A NUL byte would end inih's line early; refuse the line instead. */
	for (const char *z = memchr(text, '\0', len); z; ) {
		int line = 1;
		for (const char *q = text; q < z; q++)
			line += *q == '\n';
		report(ld, line, NULL, NULL, "NUL byte in file");
		ld->end = z;    /* parse up to it, not beyond */
		break;
	}
	rc = ini_parse_stream(reader, ld, handler, ld);
	if (rc == -2) {
		free(ld);
		return -ENOMEM;
	}
	/* rc > 0 is inih's first bad line; the reader already reported it. */
	collect_modes(ld);
	/* Cross-key checks run even after errors so --check lists everything;
	 * a key that failed to parse keeps its default. */
	check_consistency(ld);
	rc = ld->nerr;
	free(ld);
	return rc;
}

int config_load_string(struct chirp_config *c, const char *name, const char *text, FILE *errs)
{
	return load_text(c, name ? name : "(string)", NULL, text, strlen(text), errs);
}

int config_load(struct chirp_config *c, const char *file, FILE *errs)
{
	FILE *f = fopen(file, "rb");
	char *buf = NULL;
	size_t n;
	int rc;

	if (!f) {
		rc = -errno;
		if (errs)
			fprintf(errs, "%s: %s\n", file, strerror(-rc));
		return rc;
	}
	buf = malloc(CFG_FILE_MAX + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	errno = 0;
	n = fread(buf, 1, CFG_FILE_MAX + 1, f);
	if (ferror(f)) {
		rc = errno ? -errno : -EIO;
		if (errs)
			fprintf(errs, "%s: %s\n", file, strerror(-rc));
		goto out;
	}
	if (n > CFG_FILE_MAX) {
		rc = -EFBIG;
		if (errs)
			fprintf(errs, "%s: larger than %u bytes; not a chirpd configuration\n",
				file, CFG_FILE_MAX);
		goto out;
	}
	{
		/* Directory of the file, for relative paths inside it. */
		char dir[CFG_PATH_MAX];
		const char *slash = strrchr(file, '/');
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == file)
			snprintf(dir, sizeof(dir), "/");
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file);
		rc = load_text(c, file, dir, buf, n, errs);
	}
out:
	free(buf);
	fclose(f);
	return rc;
}

/* ---- output ------------------------------------------------------------ */

/* Mode i is [waveform]'s: written there, not as a [mode NAME] section.
 * collect_modes puts it first, as id 0 named default. */
static int is_wave_mode(const struct chirp_config *c, unsigned i)
{
	return i == 0 && c->nmodes > 0 && c->modes[0].id == 0 &&
	       !strcmp(c->modes[0].name, "default");
}

/* Every [mode NAME] section: its id, then its mode keys in table order. */
static void print_modes(const struct chirp_config *c, FILE *out)
{
	char val[512];

	for (unsigned i = 0; i < c->nmodes && i < CFG_MAX_MODES; i++) {
		const struct cfg_mode *m = &c->modes[i];

		if (is_wave_mode(c, i))
			continue;
		fprintf(out, "\n[mode %s]\nid = %u\n", m->name, m->id);
		for (size_t j = 0; j < NKEYS; j++) {
			const struct cfg_key *k = &cfg_tab[j];
			if (!(k->flags & F_MODE) || !strcmp(k->section, "mode"))
				continue;
			format_value(k, c, m, val, sizeof(val));
			fprintf(out, "%s =%s%s\n", k->name, val[0] ? " " : "", val);
		}
	}
}

void config_print(const struct chirp_config *c, FILE *out)
{
	const char *sec = NULL;
	char val[512];

	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!strcmp(k->section, "mode")) {
			/* The [mode] template's own keys (the id) appear in
			 * each [mode NAME] section. */
			if (strcmp(cfg_tab[i - 1].section, "mode"))
				print_modes(c, out);
			continue;
		}
		/* [waveform]'s mode keys, unless a [mode] section has id 0 */
		if ((k->flags & F_MODE) && !is_wave_mode(c, 0))
			continue;
		if (!sec || strcmp(sec, k->section)) {
			fprintf(out, "%s[%s]\n", sec ? "\n" : "", k->section);
			sec = k->section;
		}
		format_value(k, c, &c->modes[0], val, sizeof(val));
		fprintf(out, "%s =%s%s\n", k->name, val[0] ? " " : "", val);
	}
}

/* k's value in c (in m for a mode key) as JSON. */
static json_t *key_json(const struct cfg_key *k, const struct chirp_config *c,
			const struct cfg_mode *m)
{
	const char *base = key_base(k, (struct chirp_config *)c, (struct cfg_mode *)m);
	char val[512];

	switch (k->type) {
	case T_BOOL:
		return json_boolean(*(const int *)base);
	case T_INT:
		return json_integer(*(const int *)base);
	case T_UINT:
		return json_integer(*(const unsigned *)base);
	case T_DOUBLE:
		return json_real(*(const double *)base);
	case T_AUTO_INT:
	case T_NFFT:
	case T_NUMA:
	case T_GPU:
		format_value(k, c, m, val, sizeof(val));
		if (isdigit((unsigned char)val[0]) && !strchr(val, ':'))
			return json_integer(strtoll(val, NULL, 10));
		return json_string(val);
	default:
		format_value(k, c, m, val, sizeof(val));
		return json_string(val);
	}
}

/* "modes": [{"id", "name", "section", then every mode key}, ...] in
 * c->modes order; "section" is where the file sets the mode: "waveform"
 * or "mode NAME" (what config_print writes). */
static json_t *modes_json(const struct chirp_config *c)
{
	json_t *arr = json_array();
	char sec[48];

	for (unsigned i = 0; arr && i < c->nmodes && i < CFG_MAX_MODES; i++) {
		const struct cfg_mode *m = &c->modes[i];
		json_t *o = json_object();

		if (is_wave_mode(c, i))
			snprintf(sec, sizeof(sec), "waveform");
		else
			snprintf(sec, sizeof(sec), "mode %s", m->name);
		if (!o || json_array_append_new(arr, o) < 0 ||
		    json_object_set_new(o, "id", json_integer(m->id)) < 0 ||
		    json_object_set_new(o, "name", json_string(m->name)) < 0 ||
		    json_object_set_new(o, "section", json_string(sec)) < 0)
			goto fail;
		for (size_t j = 0; j < NKEYS; j++) {
			const struct cfg_key *k = &cfg_tab[j];
			if (!(k->flags & F_MODE) || !strcmp(k->section, "mode"))
				continue;
			if (json_object_set_new(o, k->name, key_json(k, c, m)) < 0)
				goto fail;
		}
	}
	return arr;
fail:
	json_decref(arr);
	return NULL;
}

struct json_t *config_to_json(const struct chirp_config *c)
{
	json_t *root = json_object(), *sec = NULL;
	const char *secname = NULL;

	if (!root)
		return NULL;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];

		if (!strcmp(k->section, "mode")) {
			if (strcmp(cfg_tab[i - 1].section, "mode") &&
			    json_object_set_new(root, "modes", modes_json(c)) < 0)
				goto fail;
			continue;
		}
		if (!secname || strcmp(secname, k->section)) {
			sec = json_object();
			if (!sec || json_object_set_new(root, k->section, sec) < 0)
				goto fail;
			secname = k->section;
		}
		/* "waveform" holds what config_print writes under [waveform]:
		 * its mode's keys unless a [mode NAME] section has id 0. */
		if ((k->flags & F_MODE) && !is_wave_mode(c, 0))
			continue;
		if (json_object_set_new(sec, k->name, key_json(k, c, &c->modes[0])) < 0)
			goto fail;
	}
	return root;
fail:
	json_decref(root);
	return NULL;
}

int config_restart_keys(const struct chirp_config *a, const struct chirp_config *b,
			char *buf, size_t len)
{
	char va[512], vb[512];
	size_t n = 0;
	int count = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		/* A mode's keys are all reloadable (test_config checks it): a
		 * new generation builds its backend with the new modes. */
		if (k->reload || (k->flags & F_MODE))
			continue;
		format_value(k, a, NULL, va, sizeof(va));
		format_value(k, b, NULL, vb, sizeof(vb));
		if (!strcmp(va, vb))
			continue;
		count++;
		if (n < len) {
			int w = snprintf(buf + n, len - n, "%s%s.%s", count > 1 ? "," : "",
					 k->section, k->name);
			if (w > 0)
				n += (size_t)w;
		}
	}
	return count;
}

int config_key_reloadable(const char *section, const char *name)
{
	const struct cfg_key *k = find_key(section, name);
	return k ? k->reload : -ENOENT;
}

/* pc_params.radar from [radar], [doppler], [cfar]; the window stays NULL
 * (rect) for the caller to fill over config_doppler_pulses(c) pulses. */
static void config_radar_params(const struct chirp_config *c, struct pc_radar *r)
{
	r->doppler = c->doppler;
	r->mti = c->mti;
	r->window = NULL;
	r->nfft = c->doppler_fft;
	r->cfar = c->cfar;
	r->method = c->cfar_method;
	r->integrate = c->cfar_integrate;
	r->guard_range = c->guard_range;
	r->guard_doppler = c->guard_doppler;
	r->train_range = c->train_range;
	r->train_doppler = c->train_doppler;
	r->os_rank = c->os_rank;
	r->pfa = c->pfa;
	r->maxima_range = c->maxima_range;
	r->maxima_doppler = c->maxima_doppler;
	r->max_detections = c->max_detections;
	r->sample_rate_hz = c->wf.sample_rate_hz;
	/* velocity = off hides what is known; auto and on hand both on
	 * (on has been checked to have them). */
	r->prf_hz = c->velocity == PC_SWITCH_OFF ? 0 : c->prf_hz;
	r->carrier_hz = c->velocity == PC_SWITCH_OFF ? 0 : c->carrier_hz;
	r->velocity = c->velocity == PC_SWITCH_ON;
}

unsigned config_doppler_pulses(const struct chirp_config *c)
{
	unsigned drop = c->mti == PC_MTI_THREE ? 2 : c->mti == PC_MTI_TWO ? 1 : 0;

	if (!c->doppler)
		return 0;
	return c->pulses > drop ? c->pulses - drop : 0;
}

unsigned config_doppler_nfft(const struct chirp_config *c)
{
	unsigned pm = config_doppler_pulses(c);

	if (!pm)
		return 0;
	return c->doppler_fft ? c->doppler_fft : (unsigned)pc_good_fft_size(pm);
}

void config_pc_params(const struct chirp_config *c, struct pc_params *p)
{
	pc_params_init(p);   /* the defaults of what the config does not set (tune) */
	p->channels = c->channels;
	p->pulses = c->pulses;
	p->samples = c->samples;
	p->in_format = c->format;
	p->out_mode = c->out_mode;
	p->normalize = c->normalize;
	p->ref = NULL;
	p->ref_len = 0;
	p->nfft = c->nfft;
	p->backend = c->backend;
	p->cpu_threads = config_cpu_threads(c);
	p->gpu = c->gpu;
	p->gpu_bus_id = c->gpu < 0 ? c->gpu_bus_id : NULL;
	p->streams = c->streams;
	p->staging = c->staging;
	p->staging_threads = config_staging_threads(c);
	p->busy_poll = c->busy_poll;
	p->idle_spin_us = c->idle_spin_us;
	p->tune.fftw_planner = c->fftw_planner;
	/* Points into c: valid while c is (the generation keeps its copy of
	 * the configuration as long as its pc). */
	p->tune.fftw_wisdom = c->fftw_wisdom[0] ? c->fftw_wisdom : NULL;
	p->tune.takeover = c->takeover;
	p->tune.block_kib = c->cpu_block_kib;
	p->tune.cuda_graphs = c->cuda_graphs;
	p->tune.cuda_chunks = c->cuda_chunks;
	p->tune.cuda_idle_chunks = c->cuda_idle_chunks;
	p->tune.cuda_spin_us = c->cuda_spin_us;
	p->tune.staging_nt = c->staging_nt;
	p->tune.cuda_fused = c->cuda_fused;
	config_radar_params(c, &p->radar);
}

/* cpus in a list like "2-5,8" (validated already), 0 if empty. */
static int cpulist_count(const char *s)
{
	cpu_set_t set;
	char why[128];

	if (!s[0] || sysnuma_parse_cpus(s, &set, why, sizeof(why)) < 0)
		return 0;
	return CPU_COUNT(&set);
}

/* auto thread counts: cpus in [numa] cpus, else online cpus, at most max */
static int auto_threads(const struct chirp_config *c, int max)
{
	int n = cpulist_count(c->cpus);

	if (n <= 0) {
		long on = sysconf(_SC_NPROCESSORS_ONLN);
		n = on > 0 ? (int)on : 1;
	}
	return n > max ? max : n;
}

int config_cpu_threads(const struct chirp_config *c)
{
	return c->cpu_threads > 0 ? c->cpu_threads : auto_threads(c, 8);
}

int config_staging_threads(const struct chirp_config *c)
{
	/* 16: a 16 MiB copy into pinned memory with streaming stores keeps
	 * gaining bandwidth up to 16 threads on a 16-vCPU host (bench_hcopy;
	 * the figures are in doc/performance.md) */
	return c->staging_threads > 0 ? c->staging_threads : auto_threads(c, 16);
}

/* ---- reference documentation ------------------------------------------- */

static void key_range(const struct cfg_key *k, char *buf, size_t len)
{
	switch (k->type) {
	case T_ENUM:
		choices_list(k->choices, buf, len);
		return;
	case T_BOOL:
		snprintf(buf, len, "true|false");
		return;
	case T_INT:
	case T_UINT:
		snprintf(buf, len, "%.15g..%.15g", k->min, k->max);
		return;
	case T_DOUBLE:
		snprintf(buf, len, "%s %g .. %g", (k->flags & F_MIN_EXCL) ? ">" : ">=",
			 k->min, k->max);
		return;
	case T_AUTO_INT:
	case T_NFFT:
		snprintf(buf, len, "auto|%.15g..%.15g", k->min, k->max);
		return;
	case T_NUMA:
		snprintf(buf, len, "auto|none|0..%.15g", k->max);
		return;
	case T_GPU:
		snprintf(buf, len, "0..%.15g|PCI bus id", k->max);
		return;
	case T_STR:
		snprintf(buf, len, "text");
		return;
	}
	buf[0] = '\0';
}

/* Write text wrapped at ~76 columns, each line starting with prefix. */
static void wrap(FILE *out, const char *prefix, const char *text)
{
	const size_t width = 76;
	size_t col = 0;

	fputs(prefix, out);
	col = strlen(prefix);
	while (*text) {
		size_t w = strcspn(text, " ");
		if (col > strlen(prefix) && col + 1 + w > width) {
			fputc('\n', out);
			fputs(prefix, out);
			col = strlen(prefix);
		} else if (col > strlen(prefix)) {
			fputc(' ', out);
			col++;
		}
		fwrite(text, 1, w, out);
		col += w;
		text += w;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

/* The [mode NAME] section, as the reference documents it: what a mode is,
 * then its own key (id), then an example. */
static const char mode_help[] =
	"Radar modes: a multi-function radar changes its waveform from one CPI to the next. "
	"The digitizer commits each CPI with a mode id (chirp_ring_commit_mode; chirp_ring_commit "
	"gives id 0), and chirpd compresses it with that mode's reference, without a reload, and "
	"hands the id on with the result; a CPI with an id that no mode has is flagged unknown "
	"(CHIRP_RING_UNKNOWN_MODE) in the output ring. Each [mode NAME] section (NAME: 1 to 31 "
	"characters of A-Z a-z 0-9 _ -) takes an id and the keys of [waveform] but sample_rate_hz, "
	"which is the radar's and every mode's; a key left out takes its default, as in [waveform]. "
	"The [waveform] section is mode 0, named default, unless a [mode NAME] section takes id 0. "
	"At most 64 modes; each mode's pulse must fit a range line ([cpi] samples) and its "
	"bandwidth the sample rate. Modes can change on reload.";
static const char mode_example_intro[] =
	"Example: a short pulse for near range and a long one for far range, next to [waveform]'s "
	"mode 0:";
static const char *const mode_example[] = {
	"[mode short]", "id = 1", "pulse_width_s = 2e-6", "bandwidth_hz = 10e6", "",
	"[mode long]", "id = 2", "pulse_width_s = 40e-6", "bandwidth_hz = 5e6", NULL,
};

/* "(RANGE[, required]; reload|restart)" of k. */
static void key_meta(const struct cfg_key *k, char *buf, size_t len)
{
	char range[160];

	key_range(k, range, sizeof(range));
	snprintf(buf, len, "(%s%s; %s)", range, (k->flags & F_REQUIRED) ? ", required" : "",
		 k->reload ? "reload" : "restart");
}

/* The commented [mode NAME] block of conf/chirpd.conf (scripts/gen-conf-man.sh
 * turns it into chirpd.conf(5)'s [mode NAME] section). */
static void reference_modes(FILE *out)
{
	char meta[200];

	fputs("\n#[mode NAME]\n#\n", out);
	wrap(out, "# ", mode_help);
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (strcmp(k->section, "mode"))
			continue;
		fputs("#\n", out);
		wrap(out, "# ", k->help);
		key_meta(k, meta, sizeof(meta));
		fprintf(out, "# %s\n#%s =%s%s\n", meta, k->name, k->def[0] ? " " : "", k->def);
	}
	fputs("#\n", out);
	wrap(out, "# ", mode_example_intro);
	fputs("#\n", out);
	for (size_t i = 0; mode_example[i]; i++)
		fprintf(out, "#%s\n", mode_example[i]);
}

void config_write_reference(FILE *out)
{
	const char *sec = NULL;
	char range[200];

	fputs("# chirpd.conf — chirpd's configuration (INI). Every key is shown with its\n"
	      "# default; a key left out keeps the default. Generated from the table in\n"
	      "# src/config.c (build/tests/test_config --write-docs); test_config checks\n"
	      "# that this file matches it.\n"
	      "#\n"
	      "# Check a file with:  chirpd --check -c FILE\n"
	      "# Apply changes with: chirpctl reload (or SIGHUP); keys marked\n"
	      "# \"restart\" only take effect when chirpd restarts.\n", out);
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!strcmp(k->section, "mode")) {
			if (strcmp(cfg_tab[i - 1].section, "mode"))
				reference_modes(out);
			continue;
		}
		if (!sec || strcmp(sec, k->section)) {
			fprintf(out, "\n[%s]\n", k->section);
			sec = k->section;
		}
		key_meta(k, range, sizeof(range));
		fputc('\n', out);
		wrap(out, "# ", k->help);
		fprintf(out, "# %s\n", range);
		fprintf(out, "%s =%s%s\n", k->name, k->def[0] ? " " : "", k->def);
	}
}

/* Text inside a Markdown table cell: '|' would end the cell. */
static void md_cell(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', out);
		fputc(*s, out);
	}
}

void config_write_markdown(FILE *out)
{
	const char *sec = NULL;
	char range[160];

	fputs("# chirpd configuration reference\n\n"
	      "<!-- Generated from the table in src/config.c by\n"
	      "     `build/tests/test_config --write-docs`; test_config fails if this\n"
	      "     file and the table disagree. Edit the table, not this file. -->\n\n"
	      "chirpd reads one INI file (`chirpd -c FILE`, default\n"
	      "`/etc/chirpd/chirpd.conf`). Lines are `key = value` under a `[section]`;\n"
	      "`#` or `;` start a comment (at the start of a line, or after a blank\n"
	      "inside a line). Lines are at most 197 characters. A key left out keeps its\n"
	      "default. Unknown sections and keys, repeated sections or keys, values out\n"
	      "of range and inconsistent combinations are errors; each is reported as\n"
	      "`FILE:LINE: [section] key: reason`, all of them, not just the first:\n\n"
	      "    $ chirpd --check -c bad.conf\n"
	      "    bad.conf:5: [cpi] sample: unknown key (did you mean samples?)\n"
	      "    bad.conf:3: [waveform] bandwidth_hz: 4e+07 exceeds sample_rate_hz 2.5e+07\n"
	      "    bad.conf: 2 errors\n\n"
	      "Errors in single keys come first, in file order, then the consistency\n"
	      "checks below.\n\n"
	      "`chirpd --check -c FILE` prints the effective configuration (every key)\n"
	      "or the errors, and exits non-zero on error. `chirpctl config` shows the\n"
	      "configuration the daemon runs.\n\n"
	      "**Reload.** `chirpctl reload` or SIGHUP parses the file again. If it has\n"
	      "any error the daemon keeps the old configuration and reports the errors.\n"
	      "Keys marked *restart* below cannot change on reload: if they differ the\n"
	      "reload reply names them (`restart_keys`) and the rest is applied.\n\n"
	      "**Consistency checks** (reported at the line of the key that makes the\n"
	      "combination wrong, the later of the two):\n\n"
	      "- lfm: `bandwidth_hz` <= `sample_rate_hz`; L = round(`pulse_width_s` x\n"
	      "  `sample_rate_hz`) >= 1;\n"
	      "- pulse length L (lfm as above, barker13: 13 x `chip_samples`, file: size/8)\n"
	      "  <= `[cpi] samples`;\n"
	      "- the two checks above for every mode, `[waveform]`'s and each `[mode NAME]`'s;\n"
	      "- each `[mode NAME]` has an `id`, one no other mode has; a `[mode NAME]` with\n"
	      "  id 0 leaves `[waveform]` only `sample_rate_hz`; mode names are distinct;\n"
	      "- `type = file` needs `file`, a regular file of cf32 samples;\n"
	      "- a forced `nfft` >= samples + L - 1 (no circular wrap-around);\n"
	      "- one CPI <= 4 GiB; each ring (slots x CPI) fits the machine's memory;\n"
	      "- input and output rings have different names;\n"
	      "- `backend = cuda` needs a build with CUDA;\n"
	      "- `[cfar] enable` and `[output] mode` map_power or map_db need `[doppler]\n"
	      "  enable`; a `[detections]` ring or file needs `[cfar] enable`; `[output]\n"
	      "  mode = none` needs `[cfar] enable` and a `[detections]` ring or file;\n"
	      "- `[radar] velocity = on` needs `prf_hz` and `carrier_hz`;\n"
	      "- MTI leaves at least one pulse; a forced `[doppler] fft` >= the pulses\n"
	      "  left after MTI;\n"
	      "- the CFAR window, 2 x (guard + train) + 1 cells, fits each axis (range\n"
	      "  gates, Doppler bins) and leaves training cells; `os`: at most 256 of them\n"
	      "  and `os_rank` among them; `pfa` < 1;\n"
	      "- what pulse compression's own check (pc_params_check) says of the radar\n"
	      "  chain built from the file.\n\n", out);
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];
		if (!strcmp(k->section, "mode") && strcmp(cfg_tab[i - 1].section, "mode")) {
			fputs("\n## [mode NAME]\n\n", out);
			wrap(out, "", mode_help);
			fputs("\n| key | default | values | on reload | meaning |\n"
			      "|---|---|---|---|---|\n", out);
			sec = k->section;
		}
		if (!sec || strcmp(sec, k->section)) {
			fprintf(out, "\n## [%s]\n\n", k->section);
			fputs("| key | default | values | on reload | meaning |\n"
			      "|---|---|---|---|---|\n", out);
			sec = k->section;
		}
		key_range(k, range, sizeof(range));
		if (k->flags & F_REQUIRED)
			fprintf(out, "| `%s` | required | ", k->name);
		else
			fprintf(out, "| `%s` | `%s` | ", k->name, k->def[0] ? k->def : "\"\"");
		md_cell(out, range);
		fprintf(out, " | %s | ", k->reload ? "applied" : "restart");
		md_cell(out, k->help);
		fputs(" |\n", out);
		if (!strcmp(k->section, "mode") &&
		    (i + 1 == NKEYS || strcmp(cfg_tab[i + 1].section, "mode"))) {
			fputc('\n', out);
			wrap(out, "", mode_example_intro);
			fputc('\n', out);
			for (size_t j = 0; mode_example[j]; j++)
				fprintf(out, "%s%s\n", mode_example[j][0] ? "    " : "", mode_example[j]);
		}
	}
}

/* ---- restart-only keys and ring geometry -------------------------------- */

/* Bytes of the value k stores at its offset (T_GPU: gpu only; its bus id
 * is copied beside it by the caller). */
static size_t key_bytes(const struct cfg_key *k)
{
	switch (k->type) {
	case T_STR:
		return k->size;
	case T_DOUBLE:
		return sizeof(double);
	case T_NFFT:
		return sizeof(size_t);
	case T_UINT:
		return sizeof(unsigned);
	case T_BOOL:
	case T_INT:
	case T_ENUM:
	case T_NUMA:
	case T_GPU:
	case T_AUTO_INT:
		return sizeof(int);
	}
	return 0;
}

_Static_assert(sizeof(unsigned) == sizeof(int), "T_AUTO_INT fields are int or unsigned");

void config_hold_restart_keys(const struct chirp_config *running, struct chirp_config *next)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &cfg_tab[i];

		/* Mode keys are reloadable; their offsets are into struct
		 * cfg_mode, not struct chirp_config. */
		if (k->reload || (k->flags & F_MODE))
			continue;
		memcpy((char *)next + k->off, (const char *)running + k->off, key_bytes(k));
		/* T_GPU is two fields: the index, and the bus id it stands
		 * for when the index is -1. */
		if (k->type == T_GPU)
			memcpy(next->gpu_bus_id, running->gpu_bus_id, sizeof(next->gpu_bus_id));
	}
	/* next's waveform files are next's own buffers, never running's
	 * (config_wf, config_mode_wf). */
	config_wf(next);
	for (unsigned i = 0; i < next->nmodes && i < CFG_MAX_MODES; i++)
		config_mode_wf(next, i);
}

int config_key_at(size_t i, const char **section, const char **name)
{
	if (i >= NKEYS)
		return -ENOENT;
	*section = cfg_tab[i].section;
	*name = cfg_tab[i].name;
	return cfg_tab[i].reload;
}

int config_ring_geometry(const struct chirp_config *c, enum config_ring which,
			 struct chirp_ring_geometry *g)
{
	memset(g, 0, sizeof(*g));
	switch (which) {
	case CONFIG_RING_INPUT:
		g->channels = c->channels;
		g->pulses = c->pulses;
		g->format = c->format == PC_FMT_SC16 ? CHIRP_RING_SC16 : CHIRP_RING_CF32;
		g->slots = c->input_slots;
		break;
	case CONFIG_RING_OUTPUT:
		if (c->out_mode == PC_OUT_NONE)
			return 0;
		g->channels = c->channels;
		/* a map's rows are Doppler bins, not pulses */
		g->pulses = c->out_mode == PC_OUT_MAP_POWER || c->out_mode == PC_OUT_MAP_DB ?
			config_doppler_nfft(c) : c->pulses;
		g->format = c->out_mode == PC_OUT_COMPLEX ? CHIRP_RING_CF32 : CHIRP_RING_RF32;
		g->slots = c->output_slots;
		break;
	case CONFIG_RING_DET:
		if (!c->cfar || !c->det_ring[0])
			return 0;
		g->channels = 1;
		g->pulses = 1;
		g->format = CHIRP_RING_DET;
		g->slots = c->det_slots;
		g->samples = c->max_detections;
		g->sample_rate_hz = c->wf.sample_rate_hz;
		return 1;
	}
	g->samples = c->samples;
	g->sample_rate_hz = c->wf.sample_rate_hz;
	return 1;
}
