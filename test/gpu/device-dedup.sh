#!/usr/bin/env bash
# device-dedup.sh: deduplication through SQL on a GPU machine (docs/dedup.md;
# docs/benchmarks.md, "Deduplication"). Run from the repository root (or a
# copy of it); logs go to $OUT (default build/device-out).
#
#   test/gpu/device-dedup.sh [gallery size, default 1000000] [probes, default 16384]
#
#   1. the device, nvcc, the driver;
#   2. PostgreSQL from the device kit (KIT, default .device-kit or
#      ../.device-kit; see ../shared/device/make-kit.sh), mcc built (the
#      engine with its GPU path) and installed, shared_preload_libraries =
#      mcc, as test/gpu/device-e2e.sh's stage 4 does;
#   3. scripts/bench-dedup-run.sh: a synthetic gallery of N templates (1 %
#      of them second impressions of others), registered and preloaded,
#      then mcc_dedup('gallery', max_rows => probes) under mcc.fallback =
#      error: time, pairs, duplicates found, probes/s and LSS matches/s.
#
# The whole gallery (1,000,000 probes) takes longer than one device call
# allows; the probes argument takes the first ones by key, and the time of
# the whole is the measured time x N / probes (every probe's pass scores all
# N rows, so the cost per probe does not depend on which probes are taken).
# MCC_BENCH_BATCH (batch_size, default 256) and MCC_BENCH_DEDUP_ARGS pass
# through to bench-dedup-run.sh.
set -u
n=${1:-1000000}
probes=${2:-16384}
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_bench_start
dev_serve

step "deduplication: $n templates, the first $probes probes"
MCC_BENCH_SESSIONS=${MCC_BENCH_SESSIONS:-8} scripts/bench-dedup-run.sh "$n" "$probes" 2>&1 |
	tee -a "$out/summary.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
grep -E "mcc_engine.*(GPU|upload|WARNING|ERROR)" /tmp/pgkit.log | head -10 | tee -a "$out/summary.txt"
cp /tmp/pgkit.log "$out/server.log"
pgkit_down >/dev/null 2>&1
exit $status
