#!/usr/bin/env bash
# sad-device-run.sh: everything the GPU SAD search needs on a GPU machine,
# in one call: build, gpu-check-sad (GPU == CPU), bench-sad (paper 002's
# Tests 1-3 on CPU 1 thread, all threads, GPU), sass-sad (registers, SASS).
# No PostgreSQL needed. Logs go to $OUT (default build/sad-device).
#   test/gpu/sad-device-run.sh [bench-sad options, e.g. --repeat 5]
set -u
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_run_record build/sad-device
dev_run_build kernels/sad.mk build/sad/sad_gpu_check build/sad/sadbench
dev_run_check kernels/sad.mk gpu-check-sad "^not ok|^#"
make -s -f kernels/sad.mk bench-sad BENCH_SAD_ARGS="$*" 2>&1 | tee "$out/bench-sad.log" || status=1
make -s -f kernels/sad.mk sass-sad >"$out/sass-sad.log" 2>&1
cp build/sad/ptxas.txt build/sad/sass.txt "$out/" 2>/dev/null
tail -3 "$out/sass-sad.log"
exit $status
