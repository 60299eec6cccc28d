# kernels/gpu.mk: the CUDA engine (kernels/impl/*.cu), its checks and benchmark.
#
# Included by the top Makefile; also usable alone where PostgreSQL is absent
# (the GPU machine): make -f kernels/gpu.mk gpu-check bench-gpu
#
#   build/libmccgpu.a    kernels/impl/*.cu, position independent, no -lcuda: link
#                        it with $(GPU_LINK) (cudart_static)
#   build/libmccengine-gpu.a   the matcher engine (src/engine/, all but main)
#                        with its GPU path (MCC_ENGINE_GPU); build/gpu/mcc_engine
#   make gpu-build       every GPU program compiled and linked, none run
#   make gpu-check       the whole GPU suite: CPU reference == GPU, every score,
#                        then the engine's tests on the GPU path (each skips,
#                        saying so, without a GPU)
#   make bench-gpu       throughput; BENCH_GPU_ARGS, e.g. --max 250000 --out DIR
#   make bench-gpu-refine  refinement throughput (test/gpu/gpu_bench_refine.c);
#                        BENCH_REFINE_ARGS, e.g. --gallery 100000 --out DIR
#   build/gpu/engine_refine_check  the engine's refining searches rescored on
#                        the GPU == on the CPU threads, and their queries/s
#                        (test/gpu/device-run-refine-engine.sh)
#
# Without nvcc both targets say so and succeed.

BUILD ?= build
include kernels/nvcc.mk
CU_SRCS ?= $(sort $(wildcard kernels/impl/*.cu))
GPU_CC ?= gcc
GPU_CFLAGS = $(MCC_C_FLAGS) -D_DEFAULT_SOURCE $(CORE_INC) -Ikernels $(WERROR_FLAG)
BENCH_GPU_ARGS ?=

ifneq ($(strip $(NVCC)),)
GPU_LINK = $(CUDA_LINK) $(MCC_PNG_LIB)

GPU_OBJS = $(patsubst kernels/impl/%.cu,$(BUILD)/kernels/%.o,$(CU_SRCS))
# the core, built once (src/core/core.mk); $(MCC_PNG_LIB) is in GPU_LINK
GPU_CORE_OBJS = $(BUILD)/libmcccore.a
GPU_TEST_OBJS = $(BUILD)/gpu/gpu_data.o

$(BUILD)/kernels/%.o: kernels/impl/%.cu $(wildcard kernels/*.h kernels/impl/*.h) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# refinement rounds as src/core's relaxations (double sums and products in
# the CPU's order): no fused multiply-add
$(BUILD)/kernels/mcc_gpu_refine.o $(BUILD)/kernels/mcc_gpu_refine_prep.o: NVCCFLAGS += --fmad=false
$(BUILD)/kernels/mcc_gpu_refine.o $(BUILD)/kernels/mcc_gpu_refine_prep.o: kernels/gpu.mk

# chamfer alignment sums the CPU's per-point terms: no fused multiply-add
# (kernels/chamfer.mk builds its own checks the same way)
$(BUILD)/kernels/mcc_chamfer.o: NVCCFLAGS += --fmad=false
$(BUILD)/kernels/mcc_chamfer.o: kernels/gpu.mk

$(BUILD)/libmccgpu.a: $(GPU_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/gpu/%.o: test/gpu/%.c $(wildcard test/gpu/*.h test/unit/*.h) $(wildcard kernels/*.h) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_CFLAGS) -c $< -o $@

$(BUILD)/gpu/gpu_check $(BUILD)/gpu/gpu_bench: $(BUILD)/gpu/%: $(BUILD)/gpu/%.o $(GPU_TEST_OBJS) \
		$(BUILD)/libmccgpu.a $(GPU_CORE_OBJS)
	$(GPU_CC) -o $@ $^ $(GPU_LINK)

# Refinement on the GPU: every score against mcc_match_candidate, and its benchmark
$(BUILD)/gpu/gpu_check_refine.o $(BUILD)/gpu/gpu_bench_refine.o: test/unit/refine_testdata.h test/unit/testgen.h \
		test/unit/unit.h
$(BUILD)/gpu/gpu_check_refine $(BUILD)/gpu/gpu_bench_refine: $(BUILD)/gpu/%: $(BUILD)/gpu/%.o $(GPU_TEST_OBJS) \
		$(BUILD)/libmccgpu.a $(GPU_CORE_OBJS)
	$(GPU_CC) -o $@ $^ $(GPU_LINK)

# The accuracy tool with its LSS stage on the GPU (mcceval ident --gpu)
MCCEVAL_SRCS ?= test/tools/mcceval.c test/tools/mcceval_fvc.c test/tools/mcceval_ident.c
$(BUILD)/gpu/mcceval: $(MCCEVAL_SRCS) test/tools/mcceval.h $(BUILD)/libmccgpu.a $(GPU_CORE_OBJS) \
		$(wildcard kernels/*.h) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_CFLAGS) -DMCC_EVAL_GPU -o $@ $(MCCEVAL_SRCS) $(BUILD)/libmccgpu.a \
		$(GPU_CORE_OBJS) $(GPU_LINK)

# The matcher engine with its GPU path, and its tests linked against it.
GPU_ENGINE_CFLAGS = $(GPU_CFLAGS) -D_GNU_SOURCE -Isrc/engine -Isrc/proto -DMCC_ENGINE_GPU
GPU_ENGINE_SRCS = $(filter-out src/engine/eng_main.c,$(sort $(wildcard src/engine/*.c))) $(PROTO_SRCS)
GPU_ENGINE_OBJS = $(patsubst src/%.c,$(BUILD)/gpu/%.o,$(GPU_ENGINE_SRCS))
GPU_ENGINE_TESTS = $(BUILD)/gpu/test_engine_gpu $(BUILD)/gpu/test_engine_server $(BUILD)/gpu/test_engine_e2e \
	$(BUILD)/gpu/test_engine_image $(BUILD)/gpu/test_engine_image_threads $(BUILD)/gpu/test_engine_rescore
# the image libraries' own checks (kernels/sad.mk, dp2d.mk, chamfer.mk)
GPU_LIB_CHECKS = $(BUILD)/sad/sad_gpu_check $(BUILD)/dp2d/dp2d_check $(BUILD)/chamfer/gpu_check_chamfer

$(BUILD)/gpu/engine/%.o: src/engine/%.c $(wildcard src/engine/*.h) $(wildcard kernels/*.h) $(CORE_HDRS) $(PROTO_HDRS)
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_ENGINE_CFLAGS) -c $< -o $@

$(BUILD)/gpu/proto/%.o: src/proto/%.c $(PROTO_HDRS)
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_ENGINE_CFLAGS) -c $< -o $@

$(BUILD)/libmccengine-gpu.a: $(GPU_ENGINE_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/gpu/mcc_engine: $(BUILD)/gpu/engine/eng_main.o $(BUILD)/libmccengine-gpu.a \
		$(BUILD)/libmccgpu.a $(GPU_CORE_OBJS)
	$(GPU_CC) -o $@ $^ $(GPU_LINK)

# test/bench/engine_bench.c (its --gpu picks the path; MCC_ENGINE=build/gpu/mcc_engine)
$(BUILD)/gpu/engine_bench: test/bench/engine_bench.c $(wildcard test/unit/engine_*.h) \
		$(BUILD)/libmccengine-gpu.a $(BUILD)/libmccgpu.a $(GPU_CORE_OBJS) $(BUILD)/gpu/mcc_engine
	$(GPU_CC) $(GPU_ENGINE_CFLAGS) -Itest/unit $< $(BUILD)/libmccengine-gpu.a $(BUILD)/libmccgpu.a \
		$(GPU_CORE_OBJS) $(GPU_LINK) -o $@

# refining searches, GPU rescoring against the CPU threads', and their throughput
$(BUILD)/gpu/engine_refine_check: test/gpu/engine_refine_check.c test/unit/unit.h \
		$(wildcard test/unit/engine_*.h) $(BUILD)/libmccengine-gpu.a $(BUILD)/libmccgpu.a $(GPU_CORE_OBJS)
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_ENGINE_CFLAGS) -Itest/unit $< $(BUILD)/libmccengine-gpu.a $(BUILD)/libmccgpu.a \
		$(GPU_CORE_OBJS) $(GPU_LINK) -o $@

$(BUILD)/gpu/test_engine_%: test/unit/test_engine_%.c test/unit/unit.h $(wildcard test/unit/engine_*.h) \
		$(BUILD)/libmccengine-gpu.a $(BUILD)/libmccgpu.a $(GPU_CORE_OBJS) $(BUILD)/gpu/mcc_engine
	$(GPU_CC) $(GPU_ENGINE_CFLAGS) -Itest/unit $< $(BUILD)/libmccengine-gpu.a $(BUILD)/libmccgpu.a \
		$(GPU_CORE_OBJS) $(GPU_LINK) -o $@

.PHONY: gpu-lib gpu-build gpu-check bench-gpu bench-gpu-refine gpu-sass
gpu-lib: $(BUILD)/libmccgpu.a

# Every GPU program (checks, benchmarks, tools, the engine) built, none run:
# the compile check of kernels/ where there is nvcc but no device.
gpu-build: $(BUILD)/gpu/gpu_check $(BUILD)/gpu/gpu_check_refine $(BUILD)/gpu/gpu_bench \
		$(BUILD)/gpu/gpu_bench_refine $(BUILD)/gpu/mcceval $(BUILD)/gpu/mcc_engine $(BUILD)/gpu/engine_bench \
		$(BUILD)/gpu/engine_refine_check $(GPU_ENGINE_TESTS) $(GPU_LIB_CHECKS) \
		$(BUILD)/sad/sadbench $(BUILD)/dp2d/dp2dbench-gpu $(BUILD)/chamfer/bench_chamfer

# The checks gpu-check runs first with every device hidden (--no-device).
GPU_NO_DEVICE_CHECKS = $(BUILD)/gpu/gpu_check $(BUILD)/gpu/gpu_check_refine $(BUILD)/gpu/test_engine_gpu \
	$(BUILD)/gpu/test_engine_image $(BUILD)/dp2d/dp2d_check $(BUILD)/chamfer/gpu_check_chamfer

# The whole GPU suite. The search library's checks, then the engine's:
# first with every device hidden (the probe fails cleanly, the engine serves
# on the CPU), then on the GPU: GPU-specific engine checks (every score,
# incremental == reload, ties, fallbacks; the sticky error last), the whole
# in-process engine suite with each pass on the GPU (one partition, then
# three), refining searches rescored on the GPU (== the reference and ==
# the CPU threads' answers), the engine program, the engine's image jobs (SAD, DP2D, CHAMFER,
# ALIGN on the GPU == the CPU, fallbacks), then the image libraries' own
# checks (SAD, elastic matching, chamfer alignment). Every step runs even if
# one before it failed; the target fails if any did.
gpu-check: $(BUILD)/gpu/gpu_check $(BUILD)/gpu/gpu_check_refine $(GPU_ENGINE_TESTS) $(GPU_LIB_CHECKS) \
		$(BUILD)/gpu/engine_refine_check
	@status=0; \
	echo "# gpu-check: no visible device"; \
	for t in $(GPU_NO_DEVICE_CHECKS); do CUDA_VISIBLE_DEVICES= $$t --no-device || status=1; done; \
	echo "# gpu-check: devices"; \
	$(BUILD)/gpu/gpu_check || status=1; \
	echo "# gpu-check: refinement (kernels/impl/mcc_gpu_refine.cu) against mcc_match_candidate"; \
	$(BUILD)/gpu/gpu_check_refine || status=1; \
	echo "# gpu-check: engine, GPU path"; \
	$(BUILD)/gpu/test_engine_gpu || status=1; \
	echo "# gpu-check: engine suite, every pass on the GPU"; \
	$(BUILD)/gpu/test_engine_server --gpu 0 || status=1; \
	echo "# gpu-check: engine suite, every pass on the GPU, 3 partitions"; \
	$(BUILD)/gpu/test_engine_server --gpu 3 || status=1; \
	echo "# gpu-check: refining searches, every pass and rescoring on the GPU, 2 partitions"; \
	$(BUILD)/gpu/test_engine_rescore --gpu 2 || status=1; \
	echo "# gpu-check: refining searches, GPU rescoring == CPU threads' == CPU-only engine"; \
	$(BUILD)/gpu/engine_refine_check --templates 4000 --distinct 4000 --probes 96 --batch 32 \
		--rounds 0 --cpu-search || status=1; \
	echo "# gpu-check: refining searches with shortlists of 70,000 (hits and the rescoring's preparation on several threads)"; \
	$(BUILD)/gpu/engine_refine_check --templates 150000 --distinct 50000 --probes 8 --batch 4 \
		--rounds 0 --refine-min 70000 --partitions 2 --cpu-search || status=1; \
	echo "# gpu-check: engine program with --gpu on"; \
	MCC_ENGINE=$(BUILD)/gpu/mcc_engine $(BUILD)/gpu/test_engine_e2e --gpu || status=1; \
	echo "# gpu-check: image jobs in the engine, GPU path"; \
	$(BUILD)/gpu/test_engine_image || status=1; \
	$(BUILD)/gpu/test_engine_image_threads || status=1; \
	echo "# gpu-check: SAD library (kernels/impl/mcc_sad.cu)"; \
	$(BUILD)/sad/sad_gpu_check || status=1; \
	echo "# gpu-check: elastic matching library (kernels/impl/mcc_dp2d.cu)"; \
	$(BUILD)/dp2d/dp2d_check || status=1; \
	echo "# gpu-check: chamfer alignment library (kernels/impl/mcc_chamfer.cu)"; \
	$(BUILD)/chamfer/gpu_check_chamfer || status=1; \
	exit $$status

bench-gpu: $(BUILD)/gpu/gpu_bench
	$(BUILD)/gpu/gpu_bench $(BENCH_GPU_ARGS)

BENCH_REFINE_ARGS ?=
bench-gpu-refine: $(BUILD)/gpu/gpu_bench_refine
	$(BUILD)/gpu/gpu_bench_refine $(BENCH_REFINE_ARGS)

# Resource usage of the kernels (registers, shared memory, spills).
gpu-sass:
	@mkdir -p $(BUILD)/kernels
	$(NVCC) $(NVCCFLAGS) -Xptxas -v -c kernels/impl/mcc_gpu_match.cu -o $(BUILD)/kernels/match-v.o
else
.PHONY: gpu-lib gpu-build gpu-check bench-gpu bench-gpu-refine
gpu-lib gpu-build:
	@echo "# nvcc not found: no GPU library"
gpu-check:
	@echo "# nvcc not found: GPU checks skipped (search, engine, image jobs, SAD, DP2D, chamfer)"
bench-gpu bench-gpu-refine:
	@echo "# nvcc not found: GPU benchmark skipped"
endif

# The image libraries' rules (their checks are part of gpu-check); the top
# Makefile includes them too, each file once.
include kernels/sad.mk
include kernels/dp2d.mk
include kernels/chamfer.mk
