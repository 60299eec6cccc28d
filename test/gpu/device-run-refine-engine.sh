#!/usr/bin/env bash
# device-run-refine-engine.sh: one call on a GPU machine for the engine's
# rescoring on the GPU (issue 16): build, the engine's refining-search tests
# with every pass and rescoring on the GPU (test_engine_rescore --gpu: every
# refined score against mcc_match_pair, fallbacks), the GPU engine's own
# checks (test_engine_gpu), GPU rescoring == CPU threads == CPU-only engine
# on a synthetic gallery (engine_refine_check), then queries/s with fused
# refinement, rescoring on the GPU against the CPU threads, at 100k and 1M
# templates; and mcceval ident --gpu --gpu-refine (its GPU build). Logs go to $OUT
# (default build/device-out); summary lines say "ok" / "not ok".
# Run from the repository root:
#   OUT=$OUT bash test/gpu/device-run-refine-engine.sh
# SIZES="100000 1000000" (rows of the benchmark), DISTINCT=20000 (distinct
# synthetic impressions, repeated under distinct keys), PROBES=512, ROUNDS=3,
# BATCH=64. SKIP_BUILD=1 runs binaries built beforehand.
set -u
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
sizes=${SIZES:-100000 1000000}
distinct=${DISTINCT:-20000}
probes=${PROBES:-512}
rounds=${ROUNDS:-3}
batch=${BATCH:-64}
dev_run_record build/device-out
dev_run_build kernels/gpu.mk build/gpu/test_engine_rescore build/gpu/test_engine_gpu build/gpu/engine_refine_check build/gpu/mcceval

# A TAP program: its log, its not-ok lines, one summary line.
tap() {
	local name=$1 log=$2
	shift 2
	local t0=$(date +%s)
	"$@" >"$log" 2>&1 || status=1
	grep -E "^not ok|^# (every|[0-9]+ rows|bench)" "$log" | head -40
	local n_ok=$(grep -c '^ok' "$log") n_bad=$(grep -c '^not ok' "$log")
	if [ "$n_bad" = 0 ] && [ "$n_ok" -gt 0 ] && ! grep -q '^ok.*# SKIP' "$log"; then
		echo "ok - $name: $n_ok ok, 0 not ok ($(( $(date +%s) - t0 )) s)"
	else
		echo "not ok - $name: $n_ok ok, $n_bad not ok (see $log)"
		tail -5 "$log"
		status=1
	fi
}

tap "test_engine_rescore --gpu 1 (rescoring on the GPU, 1 partition)" "$out/rescore-gpu1.log" \
	build/gpu/test_engine_rescore --gpu 1
tap "test_engine_rescore --gpu 2 (2 partitions)" "$out/rescore-gpu2.log" \
	build/gpu/test_engine_rescore --gpu 2
tap "test_engine_gpu (the GPU engine's own checks)" "$out/engine-gpu.log" build/gpu/test_engine_gpu
tap "engine_refine_check 20000 distinct, GPU == CPU threads == CPU-only engine" "$out/refine-check.log" \
	build/gpu/engine_refine_check --templates 20000 --distinct 20000 --probes 256 --rounds 0 --cpu-search
tap "engine_refine_check lss-dtr, 2 partitions" "$out/refine-check-dtr.log" \
	build/gpu/engine_refine_check --templates 20000 --distinct 20000 --probes 128 --rounds 0 \
	--method lss-dtr --partitions 2
for n in $sizes; do
	tap "engine_refine_check $n templates, fused, bench" "$out/refine-bench-$n.log" \
		build/gpu/engine_refine_check --templates "$n" --distinct "$distinct" --probes "$probes" \
		--rounds "$rounds" --batch "$batch"
done
# mcceval's GPU build: the LSS stage and the rescoring on the GPU, every
# probe's refined scores also computed on the CPU and compared
t0=$(date +%s)
build/gpu/mcceval ident --synth --gallery 2000 --probes 200 --methods fused,lss-dtr \
	--gpu-refine --check-every 1 >"$out/mcceval-gpu-refine.log" 2>&1
rc=$?
grep -E "rescored on the GPU|differed" "$out/mcceval-gpu-refine.log" | tail -2
if [ $rc = 0 ] && grep -q "rescored on the GPU.*, 0 differed" "$out/mcceval-gpu-refine.log"; then
	echo "ok - mcceval ident --gpu --gpu-refine ($(( $(date +%s) - t0 )) s)"
else
	echo "not ok - mcceval ident --gpu --gpu-refine (see $out/mcceval-gpu-refine.log)"
	tail -5 "$out/mcceval-gpu-refine.log"
	status=1
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv 2>&1 | tail -1
exit $status
