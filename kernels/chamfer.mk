# kernels/chamfer.mk: GPU parametric chamfer alignment (kernels/impl/mcc_chamfer.cu),
# its check against the CPU and the benchmark.
#
# Included by the top Makefile; also usable alone where PostgreSQL is absent
# (the GPU machine): make -f kernels/chamfer.mk gpu-check-chamfer bench-chamfer
#
#   make gpu-check-chamfer   GPU == CPU within the stated tolerances (TAP);
#                            prints SKIP and succeeds without nvcc or a GPU
#   make bench-chamfer       time per alignment, 10^3..10^6 points: CPU one
#                            thread, all threads, GPU when built and present;
#                            BENCH_CHAMFER_ARGS, e.g. --sizes 1000,1000000 --reps 5
#
# Builds into build/chamfer/, linking the core built once (build/libmcccore.a,
# src/core/core.mk), from which only what alignment uses is linked.
# No fused multiply-add on either side (the CPU
# gets -ffp-contract=off, nvcc --fmad=false): per-point terms are the same bits.

ifndef MCC_CHAMFER_MK
MCC_CHAMFER_MK := 1

BUILD ?= build
include kernels/nvcc.mk
CH_CC ?= gcc
CH_CFLAGS = $(MCC_C_FLAGS) -D_DEFAULT_SOURCE $(CORE_INC) -Ikernels -Itest/unit $(WERROR_FLAG)
CH_DIR = $(BUILD)/chamfer
CH_CORE_OBJS = $(BUILD)/libmcccore.a
CH_TEST_DEPS = test/unit/unit.h test/unit/chamfer_synth.h $(CORE_HDRS)
BENCH_CHAMFER_ARGS ?=

.PHONY: gpu-check-chamfer bench-chamfer

ifneq ($(strip $(NVCC)),)
CH_NVCCFLAGS = $(NVCCFLAGS) --fmad=false
CH_GPU_LINK = $(CUDA_LINK)

$(CH_DIR)/mcc_chamfer_cu.o: kernels/impl/mcc_chamfer.cu kernels/mcc_chamfer_gpu.h kernels/impl/mcc_gpu_rt.h $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(CH_NVCCFLAGS) -c $< -o $@

$(CH_DIR)/gpu_check_chamfer: test/chamfer/gpu_check_chamfer.c $(CH_DIR)/mcc_chamfer_cu.o $(CH_CORE_OBJS) $(CH_TEST_DEPS)
	$(CH_CC) $(CH_CFLAGS) -DMCC_CHAMFER_GPU $(filter %.c %.o %.a,$^) $(CH_GPU_LINK) $(CORE_LIBS) -o $@

$(CH_DIR)/bench_chamfer: test/chamfer/bench_chamfer.c $(CH_DIR)/mcc_chamfer_cu.o $(CH_CORE_OBJS) $(CH_TEST_DEPS)
	$(CH_CC) $(CH_CFLAGS) -DMCC_CHAMFER_GPU $(filter %.c %.o %.a,$^) $(CH_GPU_LINK) $(CORE_LIBS) -o $@

# First with every device hidden: the interface must fail cleanly.
gpu-check-chamfer: $(CH_DIR)/gpu_check_chamfer
	CUDA_VISIBLE_DEVICES= $(CH_DIR)/gpu_check_chamfer --no-device
	$(CH_DIR)/gpu_check_chamfer
else
$(CH_DIR)/bench_chamfer: test/chamfer/bench_chamfer.c $(CH_CORE_OBJS) $(CH_TEST_DEPS)
	$(CH_CC) $(CH_CFLAGS) $(filter %.c %.o %.a,$^) $(CORE_LIBS) -o $@

gpu-check-chamfer:
	@echo "SKIP gpu-check-chamfer: nvcc not found"
endif

bench-chamfer: $(CH_DIR)/bench_chamfer
	$(CH_DIR)/bench_chamfer $(BENCH_CHAMFER_ARGS)

endif # MCC_CHAMFER_MK
