#!/usr/bin/env bash
# device-run-refine.sh: one call on a GPU machine for refinement on the GPU:
# build, the refinement check (every score against mcc_match_candidate), the
# LSS engine's own check (the gallery layout gained the refinement records),
# then the refinement benchmark. Logs go to $OUT (default build/device-out);
# the summary lines say "ok" / "not ok".
# Run from the repository root (or a copy of kernels/, src/core/, test/):
#   OUT=$OUT bash test/gpu/device-run-refine.sh [gpu_bench_refine args...]
# SKIP_BUILD=1 runs binaries built beforehand (build/gpu/gpu_check_refine,
# gpu_bench_refine, gpu_check: static cudart, they need only the driver).
# FVC2002 checks need $MCC_SHARED_DATA or shared/data/fvc2002/minutiae in the
# tree; without them the check says so and runs on synthetic data only.
set -u
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
# real data for the check: $MCC_SHARED_DATA, or shared/data in this tree (carried), else skipped
if [ -z "${MCC_SHARED_DATA:-}" ] && [ -d shared/data/fvc2002 ]; then
	export MCC_SHARED_DATA=$PWD/shared/data
fi
dev_run_record build/device-out
dev_run_build kernels/gpu.mk build/gpu/gpu_check_refine build/gpu/gpu_bench_refine build/gpu/gpu_check

t0=$(date +%s)
build/gpu/gpu_check_refine >"$out/gpu-check-refine.log" 2>&1 || status=1
grep -E "^not ok|^#   |^# [0-9]+ templates|^# partition|^# CPU" "$out/gpu-check-refine.log" | head -60
n_ok=$(grep -c '^ok' "$out/gpu-check-refine.log")
n_bad=$(grep -c '^not ok' "$out/gpu-check-refine.log")
if [ "$n_bad" = 0 ] && [ "$n_ok" -gt 0 ] && grep -q '^1\.\.' "$out/gpu-check-refine.log"; then
	echo "ok - gpu-check-refine: $n_ok ok, 0 not ok ($(( $(date +%s) - t0 )) s)"
else
	echo "not ok - gpu-check-refine: $n_ok ok, $n_bad not ok (see $out/gpu-check-refine.log)"
	tail -5 "$out/gpu-check-refine.log"
	status=1
fi

t0=$(date +%s)
build/gpu/gpu_check >"$out/gpu-check.log" 2>&1 || status=1
n_ok=$(grep -c '^ok' "$out/gpu-check.log")
n_bad=$(grep -c '^not ok' "$out/gpu-check.log")
grep -E "^not ok|^#   " "$out/gpu-check.log" | head -20
if [ "$n_bad" = 0 ] && [ "$n_ok" -gt 0 ]; then
	echo "ok - gpu-check (LSS engine): $n_ok ok, 0 not ok ($(( $(date +%s) - t0 )) s)"
else
	echo "not ok - gpu-check (LSS engine): $n_ok ok, $n_bad not ok"
	status=1
fi

t0=$(date +%s)
if build/gpu/gpu_bench_refine --out "$out" "$@" >"$out/bench-refine-stdout.log" 2>&1; then
	grep -E "^# (GPU|data|probes|device|gallery|refinement)|^(gallery|templates|cpu)" "$out/bench-refine.log"
	echo "ok - gpu_bench_refine ($(( $(date +%s) - t0 )) s)"
else
	tail -20 "$out/bench-refine-stdout.log"
	echo "not ok - gpu_bench_refine"
	status=1
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv 2>&1 | tail -1
exit $status
