#!/usr/bin/env bash
# device-run.sh: one call on a GPU machine (no PostgreSQL needed): build,
# make gpu-check-chamfer, make bench-chamfer. Run from the repository root.
# Logs go to $OUT (default build/chamfer-out).
#   test/chamfer/device-run.sh [bench arguments, e.g. --reps 5]
set -u
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/../gpu/device-lib.sh"
dev_run_record build/chamfer-out
dev_run_build kernels/chamfer.mk build/chamfer/gpu_check_chamfer build/chamfer/bench_chamfer
dev_run_check kernels/chamfer.mk gpu-check-chamfer "^not ok|^#   |SKIP"
build/chamfer/bench_chamfer "$@" >"$out/bench-chamfer.md" 2>&1 || status=1
cat "$out/bench-chamfer.md"
exit $status
