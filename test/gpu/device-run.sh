#!/usr/bin/env bash
# device-run.sh: one call on a GPU machine: build, gpu-check, bench-gpu.
# Run from a tree holding kernels/, src/core/, test/gpu/ and test/unit/unit.h
# (the repository root or a copy of those). Logs go to $OUT (default build/).
#   test/gpu/device-run.sh [bench args...]
set -u
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_run_record build/device-out
dev_run_build kernels/gpu.mk build/gpu/gpu_check build/gpu/gpu_bench
dev_run_check kernels/gpu.mk gpu-check "^not ok|^#   "
if command -v cuobjdump >/dev/null; then
	cuobjdump -sass build/kernels/mcc_gpu_match.o >"$out/sass-match.txt" 2>&1
fi
build/gpu/gpu_bench --out "$out" "$@" >"$out/bench-stdout.log" 2>&1 || status=1
grep -E "^variant|^# best|^# breakdown|^batch|^window|^multi|^# [0-9]+ GPUs" "$out/bench-gpu.log"
sed -n '/# summary/,$p' "$out/bench-gpu.log"
# realistic templates (src/core's synthetic fingers), default variant
for n in 250000 1000000; do
	build/gpu/gpu_bench --synth 20000 --only 0 --max $n --reps 9 >"$out/bench-synth-$n.log" 2>&1 || status=1
	grep -E "^# data|^# gallery|^# probes|^only" "$out/bench-synth-$n.log"
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv 2>&1 | tail -1
exit $status
