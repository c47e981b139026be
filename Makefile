# SPDX-License-Identifier: Apache-2.0
# chirpd — real-time radar pulse compression. See README.md.
#
#   make            build everything into build/ (CUDA when nvcc is found)
#   make run        install missing packages, build, detect moving targets (the
#                   radar chain on the CPU backend; live view, a PNG at the end)
#   make live-screenshot  doc/img/live.png, the live view in headless Chromium
#   make test       install missing packages, build, run every test
#   make bench      build and run the benchmarks (prints tables)
#   make bench-latency  latency under load against the lossless copy floor,
#                   losses, the host's noise (scripts/bench-latency.sh; BACKEND=cpu|cuda
#                   GEOMETRY=CxPxR REF_LEN=L LOADS="80 90" WINDOWS=N WARMUP=S MEASURE=S
#                   SOAK=S OUT=DIR, BENCH_ARGS for any other option)
#   make bench-report   doc/performance.md's tables and README's headline from
#                   the newest raw results under doc/perf (scripts/bench-report.py)
#   make fuzz       run every fuzz target for FUZZ_SECONDS each
#   make install    PREFIX=/usr/local DESTDIR=
#   make deb        Debian packages into build/deb (mk/deb.mk)
#
# Layout (each library's objects are named below, not discovered):
#   src/ring/    libchirpring: the shared-memory CPI ring, its public header
#                include/chirp/ring.h, pkg-config file and Python binding
#   src/         the daemon's modules (libchirpcore) and chirpd's own files
#                (DAEMON_SRCS: chirpd.c, gen.c, reload.c, ctlcmd.c, ..., daemon.h;
#                all but chirpd.c also in libchirpd, which the tests link)
#   src/cuda/    the CUDA backend (CUDA builds only)
#   src/tools/   chirp-feed, chirp-tap, chirpctl, chirp-recv, chirp-send, chirp-sub and
#                their helpers
#   tests/test_*.c the cmocka suites, tests/e2e/ end-to-end scripts,
#   bench/ the benchmarks, tests/fuzz/fuzz_*.c the libFuzzer targets.

BUILD     ?= build
SAN       ?=
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
PREFIX    ?= /usr/local
DESTDIR   ?=
PKG_CONFIG ?= pkg-config

# CUDA=1 builds the CUDA backend, CUDA=0 does not. Default: when nvcc
# exists, except in sanitizer builds (the CUDA runtime is not instrumented
# and CI has no GPU to exercise it).
ifeq ($(origin CUDA),undefined)
  ifneq ($(SAN),)
    CUDA := 0
  else
    CUDA := $(if $(wildcard $(NVCC)),1,0)
  endif
endif

# --- dependencies (pkg-config when present, plain -l flags otherwise: a
# build host may lack pkg-config) -------------------------------------------
HAVE_PKG_CONFIG := $(shell command -v $(PKG_CONFIG) >/dev/null 2>&1 && echo 1)
pkg_cflags = $(if $(HAVE_PKG_CONFIG),$(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null))
pkg_libs   = $(or $(if $(HAVE_PKG_CONFIG),$(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)),$(2))

DEP_CFLAGS := $(foreach p,inih fftw3f jansson libsystemd libmicrohttpd libzmq numa,$(call pkg_cflags,$(p)))
DEP_LIBS   := $(call pkg_libs,inih,-linih) \
              $(call pkg_libs,fftw3f,-lfftw3f) -lfftw3f_threads \
              $(call pkg_libs,jansson,-ljansson) \
              $(call pkg_libs,libsystemd,-lsystemd) \
              $(call pkg_libs,libmicrohttpd,-lmicrohttpd) \
              $(call pkg_libs,libzmq,-lzmq) \
              -lnuma -lpthread -lm -lrt
CMOCKA_CFLAGS := $(call pkg_cflags,cmocka)
CMOCKA_LIBS   := $(call pkg_libs,cmocka,-lcmocka)

# --- flags ------------------------------------------------------------------
OPT      ?= -O2
WARN     := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wformat=2 -Wno-format-nonliteral
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS := -std=gnu11 -pthread -fPIC -D_GNU_SOURCE $(WARN) -Iinclude -Isrc $(DEP_CFLAGS) $(CFLAGS)
LDFLAGS  ?=
ALL_LDFLAGS := -pthread $(LDFLAGS)

ifeq ($(SAN),asan)
  ALL_CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  ALL_LDFLAGS += -fsanitize=address,undefined
else ifeq ($(SAN),tsan)
  ALL_CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer
  ALL_LDFLAGS += -fsanitize=thread
else ifneq ($(SAN),)
  $(error SAN must be asan, tsan or empty)
endif

NVCC_ARCH  ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCC_FLAGS ?= -O3 -std=c++17 $(NVCC_ARCH) -Xcompiler -fPIC,-Wall -Iinclude -Isrc
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcufft -lcublas -lcudart -lstdc++ -ldl

# --- sources ----------------------------------------------------------------
RING_SRCS  := src/ring/ring.c
CORE_SRCS  := $(addprefix src/,array.c beam.c outbuf.c capcache.c chunk_policy.c config.c config_doc.c \
                config_print.c config_table.c control.c errbuf.c hcopy.c live.c log.c maxhold.c metrics.c \
                monopulse.c mvdr.c names.c pc.c pc_cpu.c pcsize.c pipeline.c plan.c sigmf.c sink.c \
                ratewatch.c stall.c stats.c sysnuma.c trace.c radar.c radar_cpu.c cpiasm.c version.c vrt.c \
                waveform.c workkey.c workpool.c zpub.c)
CUDA_SRCS  := $(addprefix src/cuda/,cu_beam.cu cu_beams.cu cu_chunks.cu cu_enqueue.cu cu_error.cu cu_graph.cu \
                cu_fused.cu cu_host.cu cu_kernels.cu cu_pipeline.cu cu_radar.cu cu_setup.cu)
TOOL_SRCS  := $(addprefix src/tools/,detlist.c synth.c tool.c)
# chirpd's own files: main and the event loop (chirpd.c), and in
# libchirpd (DAEMON_LIB) the generations, reload, control commands, the
# status line and ring removal, which chirpd and the unit tests link.
DAEMON_LIB_SRCS := $(addprefix src/,gen.c reload.c ctlcmd.c ringrm.c statusline.c)
DAEMON_SRCS := src/chirpd.c $(DAEMON_LIB_SRCS)
TOOL_BINS  := chirp-feed chirp-tap chirpctl chirp-recv chirp-send chirp-sub
BIN_NAMES  := chirpd $(TOOL_BINS)
TEST_SRCS  := $(wildcard tests/test_*.c)
BENCH_SRCS := $(wildcard bench/*.c)

ifeq ($(CUDA),1)
  ALL_CFLAGS += -DCHIRP_HAVE_CUDA -I$(CUDA_HOME)/include
  CU_SRCS    := $(CUDA_SRCS)
  LINK_CUDA  := $(CUDA_LIBS)
else
  CU_SRCS    :=
  LINK_CUDA  :=
endif

OBJ        := $(BUILD)/obj
objs_of     = $(patsubst src/%.cu,$(OBJ)/%.cu.o,$(patsubst src/%.c,$(OBJ)/%.o,$(1)))
CORE_OBJS  := $(call objs_of,$(CORE_SRCS) $(CU_SRCS))
RING_OBJS  := $(call objs_of,$(RING_SRCS))
TOOL_OBJS  := $(call objs_of,$(TOOL_SRCS))
DAEMON_OBJS := $(call objs_of,$(DAEMON_SRCS))
DAEMON_LIB_OBJS := $(call objs_of,$(DAEMON_LIB_SRCS))
DAEMON_LIB := $(BUILD)/lib/libchirpd.a
CORE_LIB   := $(BUILD)/lib/libchirpcore.a
# Test hooks (-DCHIRP_TEST_HOOKS: pc_cpu.c's worker stall, pipeline.c's
# sleep before a CPI's record) live only in a
# second object of each HOOK_SRCS file, in a copy of the core library that
# the test binaries and $(BUILD)/tests/chirpd-hooks link; bin/chirpd and the
# installed library never hold them.
HOOK_SRCS  := src/pc_cpu.c src/pipeline.c
HOOK_OBJS  := $(patsubst src/%.c,$(OBJ)/hooks/%.o,$(HOOK_SRCS))
HOOKS_LIB  := $(BUILD)/lib/libchirpcore-hooks.a
HOOKS_BIN  := $(BUILD)/tests/chirpd-hooks
RING_LIB   := $(BUILD)/lib/libchirpring.a
RING_SO    := $(BUILD)/lib/libchirpring.so.3
TOOL_LIB   := $(BUILD)/lib/libchirptools.a
BINS       := $(addprefix $(BUILD)/bin/,$(BIN_NAMES))
TESTS      := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS)) $(HOOKS_BIN)
BENCHES    := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
BENCHES    += $(if $(filter 1,$(CUDA)),$(patsubst bench/%.cu,$(BUILD)/bench/%,$(wildcard bench/*.cu)))

LINK_ALL   := $(CORE_LIB) $(RING_LIB) $(DEP_LIBS) $(LINK_CUDA)
LINK_TOOLS := $(TOOL_LIB) $(LINK_ALL)
LINK_HOOKS := $(HOOKS_LIB) $(RING_LIB) $(DEP_LIBS) $(LINK_CUDA)

.PHONY: all bins libs tests benches run live-screenshot test bench bench-latency bench-report fuzz fuzz-short install uninstall clean deps info print-lib-srcs
.DEFAULT_GOAL := all

all: libs bins tests benches
	@if [ "$(CUDA)" = 1 ]; then echo "chirpd: built with the CUDA backend ($(NVCC))"; \
	 elif [ -x "$(NVCC)" ]; then echo "chirpd: built CPU-only (CUDA=0$(if $(SAN), in a sanitizer build))"; \
	 else echo "chirpd: built CPU-only (no nvcc at $(NVCC); set CUDA_HOME to enable the CUDA backend)"; fi

libs: $(CORE_LIB) $(RING_LIB) $(RING_SO) $(TOOL_LIB) $(DAEMON_LIB)
bins: $(BINS)
tests: $(TESTS)
benches: $(BENCHES)

# The sources of libchirpcore and libchirpring without CUDA, one line
# (scripts/fuzz.sh builds its targets from them).
print-lib-srcs:
	@echo $(CORE_SRCS) $(RING_SRCS)

info:
	@echo "CUDA=$(CUDA) SAN=$(SAN) BUILD=$(BUILD)"
	@echo "core: $(CORE_SRCS) $(CU_SRCS)"
	@echo "ring: $(RING_SRCS)"
	@echo "tools: $(TOOL_SRCS)"
	@echo "daemon: $(DAEMON_SRCS)"

$(OBJ)/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# The live view's page is built into live.o (.incbin, a path from the top).
$(OBJ)/live.o: src/live_page.html

$(OBJ)/hooks/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DCHIRP_TEST_HOOKS -MMD -MP -c $< -o $@

$(OBJ)/%.cu.o: src/%.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -DCHIRP_HAVE_CUDA -MMD -MP -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(HOOKS_LIB): $(filter-out $(call objs_of,$(HOOK_SRCS)),$(CORE_OBJS)) $(HOOK_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(RING_LIB): $(RING_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(TOOL_LIB): $(TOOL_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(DAEMON_LIB): $(DAEMON_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(RING_SO): $(RING_OBJS)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libchirpring.so.3 -o $@ $^ -lrt
	ln -sf libchirpring.so.3 $(BUILD)/lib/libchirpring.so

$(BUILD)/bin/chirpd: $(DAEMON_OBJS) $(CORE_LIB) $(RING_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $(DAEMON_OBJS) $(LINK_ALL)

$(addprefix $(BUILD)/bin/,$(TOOL_BINS)): $(BUILD)/bin/%: src/tools/%.c $(TOOL_LIB) $(CORE_LIB) $(RING_LIB)
	@mkdir -p $(@D) $(OBJ)
	$(CC) $(ALL_CFLAGS) -MMD -MP -MF $(OBJ)/bin-$*.d $(ALL_LDFLAGS) -o $@ $< $(LINK_TOOLS)

$(BUILD)/tests/%: tests/%.c $(DAEMON_LIB) $(TOOL_LIB) $(HOOKS_LIB) $(RING_LIB)
	@mkdir -p $(@D) $(OBJ)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -MMD -MP -MF $(OBJ)/test-$*.d $(ALL_LDFLAGS) -o $@ $< $(DAEMON_LIB) $(TOOL_LIB) $(LINK_HOOKS) $(CMOCKA_LIBS)

# chirpd with the test hooks, for the end-to-end tests that use them
# (tests/e2e/daemon_straggler.sh).
$(HOOKS_BIN): $(DAEMON_OBJS) $(HOOKS_LIB) $(RING_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $(DAEMON_OBJS) $(LINK_HOOKS)

$(BUILD)/bench/%: bench/%.c $(CORE_LIB) $(RING_LIB)
	@mkdir -p $(@D) $(OBJ)
	$(CC) $(ALL_CFLAGS) -MMD -MP -MF $(OBJ)/bench-$*.d $(ALL_LDFLAGS) -o $@ $< $(LINK_ALL)

# bench/*.cu: GPU benchmarks that need their own kernels (CUDA builds only),
# compiled by nvcc and linked like bench/*.c.
ifeq ($(CUDA),1)
.SECONDARY: $(patsubst bench/%.cu,$(OBJ)/bench-%.cu.o,$(wildcard bench/*.cu))

$(OBJ)/bench-%.cu.o: bench/%.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -DCHIRP_HAVE_CUDA -MMD -MP -c $< -o $@

$(BUILD)/bench/%: $(OBJ)/bench-%.cu.o $(CORE_LIB) $(RING_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LINK_ALL)
endif

-include $(wildcard $(OBJ)/*.d $(OBJ)/*/*.d)

# --- the two commands README names -----------------------------------------
deps:
	@scripts/install-deps.sh

# The live view's screenshot in doc/ (headless Chromium over `make run`'s demo).
live-screenshot: bins
	@BUILD=$(BUILD) scripts/live-screenshot.sh doc/img/live.png

run: deps
	@$(MAKE) --no-print-directory all
	@scripts/run-demo.sh $(BUILD)

# test-all.sh builds everything itself, one job per CPU, then the
# sanitizer trees while the tests run.
test: deps
	@scripts/test-all.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@scripts/bench-all.sh $(BUILD)

bench-latency: deps
	@$(MAKE) --no-print-directory all
	@scripts/bench-latency.sh $(if $(BACKEND),--backend $(BACKEND)) \
		$(if $(GEOMETRY),--geometry $(GEOMETRY)) $(if $(REF_LEN),--ref-len $(REF_LEN)) \
		$(if $(FORMAT),--format $(FORMAT)) $(if $(MODE),--mode $(MODE)) \
		$(if $(LOADS),--loads "$(LOADS)") $(if $(WINDOWS),--windows $(WINDOWS)) \
		$(if $(WARMUP),--warmup $(WARMUP)) \
		$(if $(MEASURE),--measure $(MEASURE)) $(if $(SOAK),--soak $(SOAK)) \
		$(if $(OUT),--out $(OUT)) $(BENCH_ARGS)

bench-report:
	@python3 scripts/bench-report.py

FUZZ_SECONDS ?= 3600
fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

fuzz-short:
	@scripts/fuzz.sh 20

clean:
	rm -rf build build-asan build-tsan build-fuzz

-include mk/install.mk
-include mk/deb.mk
