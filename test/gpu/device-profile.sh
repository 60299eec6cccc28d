#!/usr/bin/env bash
# device-profile.sh: Nsight Compute on one match kernel launch per variant.
#   test/gpu/device-profile.sh VARIANT...   (numbers as in mcc_gpu.h)
set -u
out=${OUT:-build/device-out}
mkdir -p "$out"
make -s -f kernels/gpu.mk -j"$(nproc)" build/gpu/gpu_bench >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
for v in "$@"; do
	ncu --clock-control none --kernel-name regex:mcc_match --launch-skip 2 --launch-count 1 \
		--set full build/gpu/gpu_bench --only "$v" --max 250000 --reps 1 >"$out/ncu-$v.txt" 2>&1
	grep -E "only|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Issued Ipc|No Eligible|Stall|Bank|bank|Pipe|pipe|Warp Cycles|MIO|LG Throttle|Shared" "$out/ncu-$v.txt" | head -60
done
