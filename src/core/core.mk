# src/core/core.mk: where the plain-C core is (the one place that names its
# folders), for the top Makefile and every kernels/*.mk.
#
#   src/core/common/  mechanisms shared by both sides: errors, the thread
#                     runner, the top-k heap, RNG, deterministic math,
#                     CRC-32C, hashing, the CPU kernel choice
#   src/core/mcc/     MCC proper: templates and their formats, cylinders,
#                     the LSS/relaxation comparison, the SoA scan, top-k
#   src/core/image/   the image algorithms of papers 002-004: image input,
#                     enhancement, extraction, SAD, DP2D, EDT, chamfer, align
#
# Sources include each other's headers by name ("mcc_error.h"): CORE_INC
# puts every folder on the include path. docs/architecture.md draws the map.
#
# Also named here, as the other plain-C code more than one program builds:
# src/proto/, the wire protocol (mcc_proto.h) and its one encoder and
# decoder (mcc_wire.c), compiled into mcc.so and into the matcher engine.

ifndef MCC_CORE_MK
MCC_CORE_MK := 1

CORE_DIRS = src/core/common src/core/mcc src/core/image
# (src/core itself too: a file a branch adds where the core used to be still
# builds until it is moved into its folder)
CORE_SRCS = $(sort $(wildcard $(addsuffix /*.c,$(CORE_DIRS)) src/core/*.c))
CORE_HDRS = $(wildcard $(addsuffix /*.h,$(CORE_DIRS)) src/core/*.h)
CORE_INC = $(addprefix -I,$(CORE_DIRS)) -Isrc/core

PROTO_SRCS = $(sort $(wildcard src/proto/*.c))
PROTO_HDRS = $(wildcard src/proto/*.h)

# The core built once, into $(BUILD)/libmcccore.a, which the engine, the
# unit tests, the tools and every kernels/*.mk program link (each with
# $(CORE_LIBS)). libpng where png.h exists (a GPU machine may lack it: the
# core is then built without PNG input, src/core/image/mcc_image_png.c).
BUILD ?= build
MCC_PNG_LIB ?= $(if $(wildcard /usr/include/png.h),-lpng)
CORE_CC ?= gcc
# The C compiler's flags of every program on the core (the core itself, the
# engine, tests and tools, the GPU libraries' host programs in kernels/*.mk):
# one list, no fused multiply-add (the CPU's bits are the GPU's).
MCC_C_FLAGS = -std=c11 -O2 -ffp-contract=off -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare
CORE_CFLAGS = $(MCC_C_FLAGS) $(CORE_INC) \
	$(if $(MCC_PNG_LIB),,-DMCC_NO_PNG) $(WERROR_FLAG) $(if $(filter yes,$(MCC_SANITIZE)),$(SANITIZE_FLAGS))
CORE_LIBS = $(MCC_PNG_LIB) -lm -lpthread
CORE_OBJS = $(patsubst src/core/%.c,$(BUILD)/core/%.o,$(CORE_SRCS))

$(BUILD)/core/%.o: src/core/%.c $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CORE_CC) $(CORE_CFLAGS) -c $< -o $@

$(BUILD)/libmcccore.a: $(CORE_OBJS)
	rm -f $@ && ar rcs $@ $^

endif # MCC_CORE_MK
