#!/usr/bin/env bash
# device-run.sh: one call on a GPU machine (no PostgreSQL needed): build,
# make gpu-check-chamfer, make bench-chamfer. Run from the repository root.
# Logs go to $OUT (default build/chamfer-out).
#   test/chamfer/device-run.sh [bench arguments, e.g. --reps 5]
set -u
out=${OUT:-build/chamfer-out}
mkdir -p "$out"
{
	date -u
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv 2>&1
	nvcc --version 2>&1 | tail -1
	lscpu 2>/dev/null | grep -E '^Model name|^CPU\(s\)|^Thread|^Core'
} | tee "$out/device.txt"
make -s -f kernels/chamfer.mk -j"$(nproc)" build/chamfer/gpu_check_chamfer build/chamfer/bench_chamfer \
	>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; echo "build failed"; exit 1; }
status=0
make -s -f kernels/chamfer.mk gpu-check-chamfer >"$out/gpu-check-chamfer.log" 2>&1 || status=1
grep -E "^not ok|^#   |SKIP" "$out/gpu-check-chamfer.log" | head -40
echo "gpu-check-chamfer: $(grep -c '^ok' "$out/gpu-check-chamfer.log") ok," \
	"$(grep -c '^not ok' "$out/gpu-check-chamfer.log") not ok (exit $status)"
build/chamfer/bench_chamfer "$@" >"$out/bench-chamfer.md" 2>&1 || status=1
cat "$out/bench-chamfer.md"
exit $status
