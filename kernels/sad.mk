# kernels/sad.mk: the GPU SAD search (kernels/impl/mcc_sad.cu), its check and the
# paper 002 benchmark.
#
# Included by the top Makefile; also usable alone where PostgreSQL is absent
# (the GPU machine):  make -f kernels/sad.mk gpu-check-sad bench-sad
#
#   make gpu-check-sad   GPU == CPU, hits and whole maps, random and real
#                        images; prints SKIP and succeeds without nvcc or GPU
#   make bench-sad       paper 002's Tests 1-3: CPU 1 thread, all threads,
#                        and the GPU when nvcc is here (BENCH_SAD_ARGS adds
#                        options, e.g. --repeat 5 --reference)
#   make sass-sad        registers, spills and (with cuobjdump) SASS of the
#                        SAD kernels into build/sad/
#
# libpng is optional here: without png.h the core is built without PNG input
# (real-image checks then skip).

ifndef MCC_SAD_MK
MCC_SAD_MK := 1

BUILD ?= build
include kernels/nvcc.mk
SAD_CC ?= gcc
SAD_CFLAGS = $(MCC_C_FLAGS) -D_DEFAULT_SOURCE $(CORE_INC) -Ikernels -Itest/unit $(if $(MCC_PNG_LIB),,-DMCC_NO_PNG) $(WERROR_FLAG)
SAD_LIBS = $(CORE_LIBS)
# the core, built once (src/core/core.mk)
SAD_CORE_OBJS = $(BUILD)/libmcccore.a
BENCH_SAD_ARGS ?=

# the emulation unit test compiles the kernel body header
$(BUILD)/unit/test_sad_gpu_emu: kernels/impl/mcc_sad_body.h kernels/impl/mcc_sad_variants.h

.PHONY: gpu-check-sad bench-sad sass-sad

ifneq ($(strip $(NVCC)),)
SAD_NVCCFLAGS ?= $(NVCCFLAGS)
SAD_GPU_LINK = $(CUDA_LINK)

$(BUILD)/sad/mcc_sad_cu.o: kernels/impl/mcc_sad.cu kernels/impl/mcc_sad_body.h kernels/impl/mcc_sad_variants.h kernels/mcc_sad_gpu.h kernels/impl/mcc_gpu_rt.h \
		$(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(SAD_NVCCFLAGS) -c $< -o $@

$(BUILD)/sad/sad_gpu_check: test/gpu/sad_gpu_check.c $(BUILD)/sad/mcc_sad_cu.o $(SAD_CORE_OBJS) test/unit/unit.h
	$(SAD_CC) $(SAD_CFLAGS) $< $(BUILD)/sad/mcc_sad_cu.o $(SAD_CORE_OBJS) $(SAD_LIBS) $(SAD_GPU_LINK) -o $@

$(BUILD)/sad/sadbench: test/bench/sadbench.c $(BUILD)/sad/mcc_sad_cu.o $(SAD_CORE_OBJS)
	$(SAD_CC) $(SAD_CFLAGS) -DMCC_WITH_GPU_SAD $< $(BUILD)/sad/mcc_sad_cu.o $(SAD_CORE_OBJS) \
		$(SAD_LIBS) $(SAD_GPU_LINK) -o $@

gpu-check-sad: $(BUILD)/sad/sad_gpu_check
	$(BUILD)/sad/sad_gpu_check

bench-sad: $(BUILD)/sad/sadbench
	$(BUILD)/sad/sadbench $(BENCH_SAD_ARGS)

sass-sad:
	@mkdir -p $(BUILD)/sad
	$(NVCC) $(SAD_NVCCFLAGS) -Xptxas -v -c kernels/impl/mcc_sad.cu -o $(BUILD)/sad/sass-v.o 2>&1 \
		| grep -A2 -E "sad_(kernel|corr|key)" | tee $(BUILD)/sad/ptxas.txt
	@if command -v cuobjdump >/dev/null 2>&1 || test -x $(CUDA_HOME)/bin/cuobjdump; then \
		$$(command -v cuobjdump || echo $(CUDA_HOME)/bin/cuobjdump) -sass $(BUILD)/sad/sass-v.o \
			> $(BUILD)/sad/sass.txt && echo "# SASS in $(BUILD)/sad/sass.txt"; \
		grep -c VABSDIFF4 $(BUILD)/sad/sass.txt || true; \
	else echo "# cuobjdump not found: no SASS"; fi
else
$(BUILD)/sad/sadbench: test/bench/sadbench.c $(SAD_CORE_OBJS)
	$(SAD_CC) $(SAD_CFLAGS) $< $(SAD_CORE_OBJS) $(SAD_LIBS) -o $@

gpu-check-sad:
	@echo "ok 1 # SKIP nvcc not found: GPU SAD check skipped"
	@echo "1..1"

bench-sad: $(BUILD)/sad/sadbench
	@echo "# nvcc not found: CPU rows only"
	$(BUILD)/sad/sadbench --no-gpu $(BENCH_SAD_ARGS)

sass-sad:
	@echo "# nvcc not found"
endif

endif # MCC_SAD_MK
