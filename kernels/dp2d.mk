# kernels/dp2d.mk: the GPU check and the benchmark of elastic matching
# (paper 003; kernels/impl/mcc_dp2d.cu, src/core/image/mcc_dp2d.h).
#
#   make gpu-check-dp2d   GPU == CPU in every output (test/gpu/dp2d_check.c);
#                         without nvcc or a GPU it prints SKIP and succeeds
#   make bench-dp2d       85/128/256: ms per pair on 1 CPU thread, on all
#                         threads, batched pairs/s; the GPU's too when there
#                         is one (test/bench/dp2dbench.c). BENCH_DP2D_ARGS,
#                         e.g. --seconds 2 --sizes 85,128
#
# Included by the top Makefile after kernels/gpu.mk; alone (no PostgreSQL):
#   make -f kernels/dp2d.mk gpu-check-dp2d bench-dp2d
# Links the core built once (build/libmcccore.a, src/core/core.mk).

ifndef MCC_DP2D_MK
MCC_DP2D_MK := 1

ifndef GPU_CFLAGS
include kernels/gpu.mk
endif

BENCH_DP2D_ARGS ?=
DP2D_LIBS = $(CORE_LIBS)

# the CPU-only benchmark
$(BUILD)/dp2d/dp2dbench-cpu: test/bench/dp2dbench.c $(BUILD)/libmcccore.a
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_CFLAGS) $< $(BUILD)/libmcccore.a $(DP2D_LIBS) -o $@

.PHONY: gpu-check-dp2d bench-dp2d

ifneq ($(strip $(NVCC)),)
$(BUILD)/dp2d/dp2d_check: test/gpu/dp2d_check.c $(BUILD)/libmccgpu.a $(BUILD)/libmcccore.a \
		kernels/mcc_dp2d_gpu.h
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_CFLAGS) $< $(BUILD)/libmccgpu.a $(BUILD)/libmcccore.a $(GPU_LINK) -o $@

$(BUILD)/dp2d/dp2dbench-gpu: test/bench/dp2dbench.c $(BUILD)/libmccgpu.a $(BUILD)/libmcccore.a \
		kernels/mcc_dp2d_gpu.h
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_CFLAGS) -DMCC_DP2D_BENCH_GPU $< $(BUILD)/libmccgpu.a $(BUILD)/libmcccore.a \
		$(GPU_LINK) -o $@

# A second run hides every device: opening must fail cleanly.
gpu-check-dp2d: $(BUILD)/dp2d/dp2d_check
	@echo "# gpu-check-dp2d: no visible device"
	CUDA_VISIBLE_DEVICES= $(BUILD)/dp2d/dp2d_check --no-device
	@echo "# gpu-check-dp2d: devices"
	$(BUILD)/dp2d/dp2d_check

bench-dp2d: $(BUILD)/dp2d/dp2dbench-gpu
	$(BUILD)/dp2d/dp2dbench-gpu $(BENCH_DP2D_ARGS)
else
gpu-check-dp2d:
	@echo "# SKIP: nvcc not found, no GPU check of elastic matching"

bench-dp2d: $(BUILD)/dp2d/dp2dbench-cpu
	$(BUILD)/dp2d/dp2dbench-cpu $(BENCH_DP2D_ARGS)
endif

endif # MCC_DP2D_MK
