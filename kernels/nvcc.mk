# kernels/nvcc.mk: the one place that finds nvcc and says how CUDA code is
# compiled and linked. Included by the top Makefile and by every
# kernels/*.mk (each of which can also be used alone where PostgreSQL is
# absent, e.g. make -f kernels/gpu.mk gpu-check on the GPU machine).
#
# Whether the CUDA code is built is chosen, not guessed:
#   WITH_CUDA=auto   (default) with nvcc where it is found (PATH or
#                    /usr/local/cuda/bin), else without
#   WITH_CUDA=yes    with nvcc, which must be found (or NVCC=/path/to/nvcc)
#   WITH_CUDA=no     without, even where a CUDA toolkit is installed
# Packages name it (debian/rules: WITH_CUDA=no for postgresql-15-mcc, yes for
# the -gpu package), so a toolkit on the build machine changes nothing.
#
# Gives: NVCC (empty: no CUDA), CUDA_HOME, NVCC_ARCH, NVCCFLAGS and
# CUDA_LINK (cudart_static, never -lcuda: the driver is opened at run time).

ifndef MCC_NVCC_MK
MCC_NVCC_MK := 1

# CORE_INC, the core's include folders, for NVCCFLAGS
include src/core/core.mk

WITH_CUDA ?= auto
ifeq ($(WITH_CUDA),no)
override NVCC :=
else ifneq ($(filter yes auto,$(WITH_CUDA)),)
ifeq ($(origin NVCC),undefined)
NVCC := $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
endif
ifeq ($(WITH_CUDA)$(strip $(NVCC)),yes)
$(error WITH_CUDA=yes but nvcc was not found: put it on PATH, set NVCC=/path/to/nvcc, or build WITH_CUDA=no)
endif
else
$(error WITH_CUDA must be auto, yes or no, not "$(WITH_CUDA)")
endif

ifneq ($(strip $(NVCC)),)
CUDA_HOME ?= $(abspath $(dir $(realpath $(NVCC)))..)
# sm_90 machine code plus PTX for later GPUs; no fast math: scores are exact
NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++17 $(NVCC_ARCH) -Xcompiler -fPIC -lineinfo $(CORE_INC) -Ikernels
CUDA_LINK = -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm
endif

endif # MCC_NVCC_MK
