#!/usr/bin/env bash
# device-compare.sh: this tree against an earlier one on the same GPU, in
# the same call (docs/benchmarks.md compares builds only this way).
#
#   git archive BASE_COMMIT | (mkdir -p .baseline && tar -x -C .baseline)   # here, then carry .baseline
#   OUT=$OUT [BASE=.baseline] [CHECK=1] [CHAMFER=0] [SAD=0] [REFINE=0] [ROUNDS=2] \
#       bash test/gpu/device-compare.sh
#
# Builds both trees; with CHECK=1 runs this tree's make gpu-check (CHAMFER=1,
# SAD=1: also gpu-check-chamfer, gpu-check-sad); then, ROUNDS times and
# alternately for the base and this tree: gpu_bench on 1,000,000 synthetic
# templates and engine_refine_check (1 M rows, 64 probes one per pass,
# fused, shortlist 0.4 %); with REFINE=1 once per tree gpu_bench_refine
# (100,000 templates, 4,000 candidates per probe). Summary in $OUT/summary.txt.
set -u
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
base=${BASE:-.baseline}
dev_out build/device-out
j=$jobs
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee -a "$out/summary.txt"
bins="build/gpu/gpu_bench build/gpu/engine_refine_check build/gpu/gpu_bench_refine"
(cd "$base" && make -s -f kernels/gpu.mk -j"$j" $bins >"$out/build-base.log" 2>&1) ||
	{ tail -20 "$out/build-base.log"; echo "base build failed" | tee -a "$out/summary.txt"; }
make -s -f kernels/gpu.mk -j"$j" $bins >"$out/build-new.log" 2>&1 ||
	{ tail -30 "$out/build-new.log"; echo "build failed"; exit 1; }
check() {	# check MAKEFILE TARGET: dev_run_check's lines into the summary ($status kept)
	dev_run_check "$1" "$2" '^not ok' >"$out/$2.txt"
	tee -a "$out/summary.txt" <"$out/$2.txt"
}
[ "${CHECK:-1}" = 1 ] && check kernels/gpu.mk gpu-check
[ "${CHAMFER:-0}" = 1 ] && check kernels/chamfer.mk gpu-check-chamfer
[ "${SAD:-0}" = 1 ] && check kernels/sad.mk gpu-check-sad
for round in $(seq 1 "${ROUNDS:-2}"); do
	for t in "$base/build/gpu" build/gpu; do
		echo "== round $round $t gpu_bench synth 1M" | tee -a "$out/summary.txt"
		"$t/gpu_bench" --synth 20000 --only 0 --max 1000000 --reps 5 2>&1 | tail -4 | tee -a "$out/summary.txt"
		echo "== round $round $t engine_refine_check" | tee -a "$out/summary.txt"
		"$t/engine_refine_check" --templates 1000000 --distinct 20000 --probes 64 --rounds 2 --batch 1 \
			--fraction 0.004 --count 2>&1 | tail -8 | tee -a "$out/summary.txt"
	done
done
if [ "${REFINE:-0}" = 1 ]; then
	for t in "$base/build/gpu" build/gpu; do
		echo "== $t gpu_bench_refine" | tee -a "$out/summary.txt"
		"$t/gpu_bench_refine" --gallery 100000 --cands 4000 --reps 5 2>&1 |
			grep -E "^gallery" | tee -a "$out/summary.txt"
	done
fi
exit $status
