# mcc: MCC fingerprint identification for PostgreSQL (PGXS build).
#
#   make && make install        build and install the extension
#   make installcheck           pg_regress against a running server
#   make unit                   unit tests of src/core (no PostgreSQL needed)
#   make prove-installcheck     TAP tests (start their own clusters)
#   make fuzz                   libFuzzer harnesses of the parsers (clang)
#   make tools                  test/ CLIs: mccgen (synthetic data), mccbench
#   make test-all               everything, as scripts/run-tests.sh does
#
# No -march=native: SIMD paths are chosen at run time (src/core/mcc/mcc_soa*.c).

EXTENSION = mcc
EXTVERSION = 0.2.0
# The first version's script; later versions are reached by the update
# scripts sql/mcc--A--B.sql (CREATE EXTENSION runs the chain: docs/upgrades.md).
EXTBASE = 0.1.0

MODULE_big = mcc
# src/core (plain C, its folders named in src/core/core.mk) and the
# PostgreSQL layer, one folder per subsystem (docs/architecture.md):
#   module/ _PG_init and the error mapping, template/ the template type and
#   its formats, identify/ galleries, scans and identify(), image/ the image
#   functions, service/ the backend side of the matcher service, proto/ the
#   wire protocol and its one encoder (shared with the engine)
# core.mk's rules come before PGXS's: a plain `make` must still build `all`
.DEFAULT_GOAL := all
include src/core/core.mk
PG_DIRS = src/module src/template src/identify src/image src/service src/proto
# (src/*.c too: a file a branch adds where the layer used to be still builds
# until it is moved into its folder)
PG_SRCS = $(sort $(wildcard $(addsuffix /*.c,$(PG_DIRS)) src/*.c))
OBJS = $(CORE_SRCS:.c=.o) $(PG_SRCS:.c=.o)

DATA = sql/$(EXTENSION)--$(EXTBASE).sql $(wildcard sql/$(EXTENSION)--*--*.sql)
# scale-out (docs/scale-out.md): extensions mcc_shard and mcc_proxy, optional
DATA += $(wildcard scaleout/*.control scaleout/*--*.sql)
REGRESS = $(sort $(patsubst sql/%.sql,%,$(filter-out sql/$(EXTENSION)--%,$(wildcard sql/*.sql))))
REGRESS_OPTS = --load-extension=$(EXTENSION)

# MCC_WERROR=yes makes every warning an error in each C build below (the
# module, src/core, the engine, tests, tools, fuzzers and the GPU programs'
# host code): scripts/run-tests.sh sets it, so CI fails on a new warning,
# while a user's build with a newer compiler still succeeds.
MCC_WERROR ?= no
WERROR_FLAG = $(if $(filter yes,$(MCC_WERROR)),-Werror)

PG_CPPFLAGS = $(addprefix -I$(srcdir)/,$(CORE_DIRS) src/core $(PG_DIRS)) -I$(srcdir)/src -MMD -MP
PG_CFLAGS = -Wno-declaration-after-statement -ffp-contract=off $(WERROR_FLAG)
SHLIB_LINK = -lpng -lm -lpthread

EXTRA_CLEAN = build $(OBJS:.o=.d) results regression.diffs regression.out tmp_check log

# Debian's PGXS would build LLVM bitcode of every object with clang; the
# extension gains nothing from JIT inlining and clang may be absent.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# header dependencies of the module's objects (PGXS tracks none by default)
-include $(OBJS:.o=.d)

# ---------------------------------------------------------------------------
# CUDA kernels (kernels/impl/*.cu), linked only into the matcher engine, never with
# -lcuda (see docs/architecture.md). Whether the engine gets its GPU path is
# chosen, not guessed, by WITH_CUDA=auto|yes|no: kernels/nvcc.mk finds nvcc
# and says how (the one place that does, for this Makefile and every
# kernels/*.mk). `make config` prints the choice; linking mcc_engine prints
# it too.
include kernels/nvcc.mk
ENGINE_KIND = $(if $(strip $(NVCC)),the GPU path (CUDA $(NVCC)) and the CPU threads,the CPU threads only (no CUDA))
CU_SRCS = $(sort $(wildcard kernels/impl/*.cu))
include kernels/chamfer.mk

# ---------------------------------------------------------------------------
# src/core alone, with no PostgreSQL flags, built once as build/libmcccore.a
# (CORE_CC, CORE_CFLAGS, CORE_LIBS and its rules: src/core/core.mk) for the
# engine, unit tests, tools, fuzzers and every kernels/*.mk program.
BUILD = build

# ---------------------------------------------------------------------------
# The matcher engine (src/engine/, docs/matcher-service.md): a program of its
# own, plain C with no PostgreSQL headers, installed next to the module as
# $(pkglibdir)/mcc_engine and started by the supervisor background worker.
# src/proto (the protocol's encoder, shared with the backends) is part of it.
ENGINE_SRCS = $(sort $(wildcard src/engine/*.c)) $(PROTO_SRCS)
ENGINE_OBJS = $(patsubst src/%.c,$(BUILD)/%.o,$(ENGINE_SRCS))
ENGINE_LIB_OBJS = $(filter-out $(BUILD)/engine/eng_main.o,$(ENGINE_OBJS))
ENGINE_CFLAGS = $(CORE_CFLAGS) -D_GNU_SOURCE -Isrc/engine -Isrc/proto

$(BUILD)/engine/%.o: src/engine/%.c $(wildcard src/engine/*.h) $(PROTO_HDRS) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CORE_CC) $(ENGINE_CFLAGS) -c $< -o $@

$(BUILD)/proto/%.o: src/proto/%.c $(PROTO_HDRS)
	@mkdir -p $(dir $@)
	$(CORE_CC) $(ENGINE_CFLAGS) -c $< -o $@

$(BUILD)/libmccengine.a: $(ENGINE_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

# With nvcc the engine gets the GPU path (src/engine/eng_gpu.c built with
# MCC_ENGINE_GPU, kernels/ as build/libmccgpu.a, cudart_static: no -lcuda,
# the driver is opened at run time); without it, exactly the CPU engine.
# Only this program touches CUDA: mcc.so never links any of it.
# The choice, in a file rewritten (when make reads this Makefile) only when
# it changes: changing WITH_CUDA, or a toolkit appearing under auto, relinks
# the engine instead of keeping the other kind.
ENGINE_STAMP = $(BUILD)/engine-kind
ENGINE_KIND_TAG := $(if $(strip $(NVCC)),gpu,cpu)
$(shell mkdir -p $(BUILD) && { echo '$(ENGINE_KIND_TAG)' | cmp -s - $(ENGINE_STAMP) || echo '$(ENGINE_KIND_TAG)' > $(ENGINE_STAMP); })

ifneq ($(strip $(NVCC)),)
$(BUILD)/mcc_engine: $(BUILD)/engine/eng_main.o $(BUILD)/libmccengine-gpu.a $(BUILD)/libmccgpu.a \
		$(BUILD)/libmcccore.a $(ENGINE_STAMP)
	@echo "mcc_engine: built with $(ENGINE_KIND) [WITH_CUDA=$(WITH_CUDA)]"
	$(CORE_CC) $(ENGINE_CFLAGS) $(filter-out $(ENGINE_STAMP),$^) $(GPU_LINK) -o $@
else
$(BUILD)/mcc_engine: $(BUILD)/engine/eng_main.o $(BUILD)/libmccengine.a $(BUILD)/libmcccore.a $(ENGINE_STAMP)
	@echo "mcc_engine: built with $(ENGINE_KIND) [WITH_CUDA=$(WITH_CUDA)]"
	$(CORE_CC) $(ENGINE_CFLAGS) $(filter-out $(ENGINE_STAMP),$^) $(CORE_LIBS) -o $@
endif

.PHONY: engine install-engine uninstall-engine config
engine: $(BUILD)/mcc_engine
config:
	@echo "WITH_CUDA=$(WITH_CUDA): mcc_engine searches with $(ENGINE_KIND)"
	@echo "PostgreSQL: $(shell $(PG_CONFIG) --version) ($(PG_CONFIG))"
all: $(BUILD)/mcc_engine
install: install-engine
uninstall: uninstall-engine

install-engine: $(BUILD)/mcc_engine
	$(MKDIR_P) '$(DESTDIR)$(pkglibdir)'
	$(INSTALL_PROGRAM) $(BUILD)/mcc_engine '$(DESTDIR)$(pkglibdir)/mcc_engine'

uninstall-engine:
	rm -f '$(DESTDIR)$(pkglibdir)/mcc_engine'

UNIT_SRCS = $(sort $(wildcard test/unit/test_*.c))
UNIT_BINS = $(patsubst test/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))

$(BUILD)/unit/%: test/unit/%.c $(wildcard test/unit/*.h) $(BUILD)/libmcccore.a
	@mkdir -p $(dir $@)
	$(CORE_CC) $(CORE_CFLAGS) -D_DEFAULT_SOURCE -Itest/unit -Ikernels $< $(BUILD)/libmcccore.a $(CORE_LIBS) -o $@

# the emulation tests compile the kernels' internal headers on the CPU
$(BUILD)/unit/test_refine_gpu_emu: $(wildcard kernels/impl/mcc_refine_*.h) kernels/mcc_gpu_refine.h
$(BUILD)/unit/test_dp2d_wave: kernels/impl/mcc_dp2d_wave.h
$(BUILD)/unit/test_gpu_ties: kernels/impl/mcc_gpu_ties.h

# Engine tests link the engine's objects (all but main); the end-to-end one
# also runs build/mcc_engine.
$(BUILD)/unit/test_engine_%: test/unit/test_engine_%.c test/unit/unit.h $(wildcard test/unit/engine_*.h) \
		$(BUILD)/libmccengine.a $(BUILD)/libmcccore.a $(BUILD)/mcc_engine
	@mkdir -p $(dir $@)
	$(CORE_CC) $(ENGINE_CFLAGS) -Itest/unit $< $(BUILD)/libmccengine.a $(BUILD)/libmcccore.a $(CORE_LIBS) -o $@

.PHONY: unit unit-build tools fuzz prove-installcheck test-all demo deb
unit-build: $(UNIT_BINS)

# Runs every unit test binary; the output is TAP ("ok"/"not ok" lines).
# The end-to-end engine test starts the engine of this build folder.
unit: unit-build
	@status=0; export MCC_ENGINE="$${MCC_ENGINE:-$(BUILD)/mcc_engine}"; \
	for t in $(UNIT_BINS); do echo "# $$t"; $$t || status=1; done; exit $$status

# The unit tests (src/core and the engine, no PostgreSQL) under
# AddressSanitizer and UndefinedBehaviorSanitizer, in build/sanitize/: gcc
# with the sanitizer flags of the fuzzers (SANITIZE_FLAGS, below); any
# finding stops its test (-fno-sanitize-recover), which then fails. The
# engine is the CPU one (nvcc's objects are not instrumented).
#   make sanitize-build    build them
#   make sanitize          build and run them (TAP, as make unit)
SANITIZE_BUILD = $(BUILD)/sanitize
SANITIZE_MAKE = $(MAKE) --no-print-directory BUILD=$(SANITIZE_BUILD) WITH_CUDA=no MCC_SANITIZE=yes
SANITIZE_ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1
SANITIZE_UBSAN_OPTIONS ?= print_stacktrace=1
.PHONY: sanitize sanitize-build
sanitize-build:
	$(SANITIZE_MAKE) unit-build
sanitize: sanitize-build
	@ASAN_OPTIONS="$${ASAN_OPTIONS:-$(SANITIZE_ASAN_OPTIONS)}" \
	UBSAN_OPTIONS="$${UBSAN_OPTIONS:-$(SANITIZE_UBSAN_OPTIONS)}" $(SANITIZE_MAKE) unit

# mcceval is three files (mcceval.h): the parts are not tools of their own
MCCEVAL_SRCS = test/tools/mcceval.c test/tools/mcceval_fvc.c test/tools/mcceval_ident.c
TOOL_SRCS = $(filter-out $(wordlist 2,3,$(MCCEVAL_SRCS)),$(sort $(wildcard test/tools/*.c test/bench/*.c)))
TOOL_BINS = $(patsubst test/%.c,$(BUILD)/%,$(TOOL_SRCS))

$(BUILD)/tools/%: test/tools/%.c $(BUILD)/libmcccore.a
	@mkdir -p $(dir $@)
	$(CORE_CC) $(CORE_CFLAGS) -D_DEFAULT_SOURCE $< $(BUILD)/libmcccore.a $(CORE_LIBS) -o $@

$(BUILD)/tools/mcceval: $(MCCEVAL_SRCS) test/tools/mcceval.h $(BUILD)/libmcccore.a
	@mkdir -p $(dir $@)
	$(CORE_CC) $(CORE_CFLAGS) -D_DEFAULT_SOURCE $(MCCEVAL_SRCS) $(BUILD)/libmcccore.a $(CORE_LIBS) -o $@

$(BUILD)/bench/%: test/bench/%.c $(BUILD)/libmcccore.a
	@mkdir -p $(dir $@)
	$(CORE_CC) $(CORE_CFLAGS) -D_DEFAULT_SOURCE $< $(BUILD)/libmcccore.a $(CORE_LIBS) -o $@

# the refinement records' packing and geometry on the host compile the kernels' internal header
$(BUILD)/bench/refine_pack: CORE_CFLAGS += -Ikernels -Itest/unit
$(BUILD)/bench/refine_pack $(BUILD)/bench/engine_refgeom: $(wildcard kernels/impl/mcc_refine_*.h) \
		kernels/mcc_gpu_refine.h
$(BUILD)/bench/engine_refgeom: ENGINE_CFLAGS += -Ikernels

$(BUILD)/bench/engine_%: test/bench/engine_%.c $(wildcard test/unit/engine_*.h) $(BUILD)/libmccengine.a \
		$(BUILD)/libmcccore.a $(BUILD)/mcc_engine
	@mkdir -p $(dir $@)
	$(CORE_CC) $(ENGINE_CFLAGS) -Itest/unit $< $(BUILD)/libmccengine.a $(BUILD)/libmcccore.a $(CORE_LIBS) -o $@

tools: $(TOOL_BINS)

# libFuzzer harnesses: test/fuzz/fuzz_<parser>.c, run FUZZ_SECONDS each.
# SANITIZE_FLAGS are also those of make sanitize (above): the fuzzers add
# libFuzzer to them.
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 20
FUZZ_SRCS = $(sort $(wildcard test/fuzz/fuzz_*.c))
FUZZ_BINS = $(patsubst test/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

$(BUILD)/fuzz/%: test/fuzz/%.c $(CORE_SRCS) $(CORE_HDRS) $(wildcard test/fuzz/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -g -O1 -fsanitize=fuzzer $(SANITIZE_FLAGS) $(WERROR_FLAG) \
		$(CORE_INC) $< $(CORE_SRCS) $(CORE_LIBS) -o $@

# the engine's harnesses also build its sources (all but main)
ENGINE_LIB_SRCS = $(filter-out src/engine/eng_main.c,$(ENGINE_SRCS))
$(BUILD)/fuzz/fuzz_engine_%: test/fuzz/fuzz_engine_%.c $(CORE_SRCS) $(ENGINE_LIB_SRCS) $(CORE_HDRS) $(wildcard src/engine/*.h) \
		$(PROTO_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -g -O1 -fsanitize=fuzzer $(SANITIZE_FLAGS) $(WERROR_FLAG) \
		-D_GNU_SOURCE $(CORE_INC) -Isrc/engine -Isrc/proto $< $(CORE_SRCS) $(ENGINE_LIB_SRCS) $(CORE_LIBS) -o $@

# ASan keeps freed blocks in a quarantine to catch use after free; the
# image harness frees up to a few MB per input (images up to 1 Mpixel), and
# a run once went past libFuzzer's 2 GB RSS limit with 24 MB live and the
# rest quarantined. A smaller quarantine keeps the most recent frees checked
# and the RSS bounded (ASAN_OPTIONS from the environment wins).
FUZZ_ASAN_OPTIONS ?= quarantine_size_mb=64

fuzz: $(FUZZ_BINS)
	@status=0; export ASAN_OPTIONS="$${ASAN_OPTIONS:-$(FUZZ_ASAN_OPTIONS)}"; \
	for f in $(FUZZ_BINS); do \
		n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus-$$n; \
		echo "# fuzzing $$n for $(FUZZ_SECONDS)s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=0 \
			$(BUILD)/fuzz/corpus-$$n test/fuzz/seeds/$$n 2>$(BUILD)/fuzz/$$n.log \
			&& echo "ok - fuzz $$n" \
			|| { echo "not ok - fuzz $$n"; tail -40 $(BUILD)/fuzz/$$n.log; status=1; }; \
	done; exit $$status

# TAP tests in test/t/*.pl; each starts its own cluster(s) with PostgreSQL::Test::Cluster.
PG_BINDIR = $(shell $(PG_CONFIG) --bindir)
PGXS_DIR = $(dir $(PGXS))../..
PROVE ?= prove
PROVE_SCRIPTS = $(or $(PROVE_TESTS),$(wildcard test/t/*.pl))
# A failed test keeps its clusters' data directories (tmp_check/t_<test>_<node>_data)
# for inspection, and PostgreSQL::Test::Cluster refuses to create them again:
# the ones of the tests about to run are removed first, so a rerun starts
# clean (the logs in tmp_check/log are rewritten by the run).
prove-installcheck: tools
	rm -rf $(foreach t,$(PROVE_SCRIPTS),tmp_check/t_$(basename $(notdir $(t)))_*_data)
	PATH="$(PG_BINDIR):$$PATH" PG_REGRESS="$(PGXS_DIR)/src/test/regress/pg_regress" \
	MCC_SRCDIR="$(CURDIR)" MCC_TOOLS="$(CURDIR)/$(BUILD)" \
	$(PROVE) -I $(PGXS_DIR)/src/test/perl -I test/perl $(PROVE_FLAGS) $(PROVE_SCRIPTS)

test-all:
	scripts/run-tests.sh

# Debian packages (debian/, docs/packaging.md), built with dpkg-buildpackage
# in a copy of the tree under build/deb/; the .deb files land in build/deb/.
#   make deb                  postgresql-15-mcc (extension, CPU engine)
#   make deb WITH_CUDA=yes    and postgresql-15-mcc-gpu (build profile cuda)
# WITH_CUDA=auto builds the CPU package only: a toolkit on this machine does
# not change what is packaged. DEB_BUILD_OPTIONS=nocheck skips the build-time
# regression run.
DEB_DIR = $(BUILD)/deb
DEB_VERSION = $(shell dpkg-parsechangelog -S Version 2>/dev/null)
deb:
	@test "$(DEB_VERSION)" = "$(EXTVERSION)" || { echo "debian/changelog says $(DEB_VERSION), the extension $(EXTVERSION)"; exit 1; }
	@grep -q "^default_version = '$(EXTVERSION)'" $(EXTENSION).control || { echo "$(EXTENSION).control's default_version is not $(EXTVERSION)"; exit 1; }
	@python3 -c 'import json,sys; m=json.load(open("META.json")); sys.exit(m["version"] != "$(EXTVERSION)" or m["provides"]["mcc"]["version"] != "$(EXTVERSION)")' \
		|| { echo "META.json's version is not $(EXTVERSION)"; exit 1; }
	@echo "deb: postgresql-15-mcc$(if $(filter yes,$(WITH_CUDA)), and postgresql-15-mcc-gpu (build profile cuda), (CPU engine; the GPU engine package: make deb WITH_CUDA=yes))"
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/mcc-$(EXTVERSION)
	tar --exclude=./.git --exclude=./build --exclude=./results --exclude=./tmp_check \
		--exclude='*.o' --exclude='*.so' --exclude='*.a' --exclude='*.d' -cf - . | tar -C $(DEB_DIR)/mcc-$(EXTVERSION) -xf -
	cd $(DEB_DIR)/mcc-$(EXTVERSION) && dpkg-buildpackage -us -uc -b $(if $(filter yes,$(WITH_CUDA)),-Pcuda)
	@ls -1 $(DEB_DIR)/*.deb

demo:
	scripts/demo.sh

# ---------------------------------------------------------------------------
# The CUDA engine (kernels/gpu.mk): build/libmccgpu.a, the matcher engine's
# GPU path (build/libmccengine-gpu.a), make gpu-check (the whole GPU suite),
# make bench-gpu. Without nvcc those targets say so and succeed; nothing of
# it is ever part of mcc.so (only build/mcc_engine links it).
include kernels/gpu.mk

# Elastic matching on the GPU (paper 003): make gpu-check-dp2d, make bench-dp2d.
include kernels/dp2d.mk
# ---------------------------------------------------------------------------
# The GPU SAD search (kernels/sad.mk): make gpu-check-sad, make bench-sad.
# Without nvcc or a GPU they say so and succeed.
include kernels/sad.mk
