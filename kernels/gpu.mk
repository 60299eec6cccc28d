# kernels/gpu.mk: the CUDA engine (kernels/*.cu), its checks and benchmark.
#
# Included by the top Makefile; also usable alone where PostgreSQL is absent
# (the GPU machine): make -f kernels/gpu.mk gpu-check bench-gpu
#
#   build/libmccgpu.a    kernels/*.cu, position independent, no -lcuda: link
#                        it with $(GPU_LINK) (cudart_static)
#   make gpu-check       CPU reference == GPU, every score (skips without GPU)
#   make bench-gpu       throughput; BENCH_GPU_ARGS, e.g. --max 250000 --out DIR
#
# Without nvcc both targets say so and succeed.

BUILD ?= build
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CU_SRCS ?= $(sort $(wildcard kernels/*.cu))
GPU_CC ?= gcc
GPU_CFLAGS = -std=c11 -O2 -ffp-contract=off -g -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -D_DEFAULT_SOURCE -Isrc/core -Ikernels
BENCH_GPU_ARGS ?=

ifneq ($(strip $(NVCC)),)
CUDA_HOME ?= $(abspath $(dir $(realpath $(NVCC)))..)
# sm_90 machine code plus PTX for later GPUs; no fast math: scores are exact
NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++17 $(NVCC_ARCH) -Xcompiler -fPIC -lineinfo -Isrc/core -Ikernels
GPU_LINK = -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm

GPU_OBJS = $(patsubst kernels/%.cu,$(BUILD)/kernels/%.o,$(CU_SRCS))
GPU_CORE_OBJS = $(patsubst src/core/%.c,$(BUILD)/gpu/core/%.o,$(sort $(wildcard src/core/*.c)))
GPU_TEST_OBJS = $(BUILD)/gpu/gpu_data.o

$(BUILD)/kernels/%.o: kernels/%.cu $(wildcard kernels/*.h) $(wildcard src/core/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/libmccgpu.a: $(GPU_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/gpu/core/%.o: src/core/%.c $(wildcard src/core/*.h)
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_CFLAGS) -c $< -o $@

$(BUILD)/gpu/%.o: test/gpu/%.c $(wildcard test/gpu/*.h) $(wildcard kernels/*.h) $(wildcard src/core/*.h)
	@mkdir -p $(dir $@)
	$(GPU_CC) $(GPU_CFLAGS) -c $< -o $@

$(BUILD)/gpu/gpu_check $(BUILD)/gpu/gpu_bench: $(BUILD)/gpu/%: $(BUILD)/gpu/%.o $(GPU_TEST_OBJS) \
		$(BUILD)/libmccgpu.a $(GPU_CORE_OBJS)
	$(GPU_CC) -o $@ $^ $(GPU_LINK)

.PHONY: gpu-lib gpu-check bench-gpu gpu-sass
gpu-lib: $(BUILD)/libmccgpu.a

# A second run hides every device: the probe must fail cleanly.
gpu-check: $(BUILD)/gpu/gpu_check
	@echo "# gpu-check: no visible device"
	CUDA_VISIBLE_DEVICES= $(BUILD)/gpu/gpu_check --no-device
	@echo "# gpu-check: devices"
	$(BUILD)/gpu/gpu_check

bench-gpu: $(BUILD)/gpu/gpu_bench
	$(BUILD)/gpu/gpu_bench $(BENCH_GPU_ARGS)

# Resource usage of the kernels (registers, shared memory, spills).
gpu-sass:
	@mkdir -p $(BUILD)/kernels
	$(NVCC) $(NVCCFLAGS) -Xptxas -v -c kernels/mcc_gpu_match.cu -o $(BUILD)/kernels/match-v.o
else
.PHONY: gpu-lib gpu-check bench-gpu
gpu-lib:
	@echo "# nvcc not found: no GPU library"
gpu-check:
	@echo "# nvcc not found: GPU checks skipped"
bench-gpu:
	@echo "# nvcc not found: GPU benchmark skipped"
endif
