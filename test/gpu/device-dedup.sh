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
# through to bench-dedup-run.sh. DEDUP_STAGES=1: where the call's time went,
# the identify_batch() calls' stages summed from mcc.log_identify_timing
# (the backend's side), each SQL function's time (track_functions) and the
# engine's totals (its GPU path) after the run.
set -u
n=${1:-1000000}
probes=${2:-16384}
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_bench_start
dev_serve

step "deduplication: $n templates, the first $probes probes"
[ -n "${DEDUP_STAGES:-}" ] && export PGOPTIONS="${PGOPTIONS:-} -c mcc.log_identify_timing=on -c track_functions=all"
log_at=$(wc -c </tmp/pgkit.log)
MCC_BENCH_SESSIONS=${MCC_BENCH_SESSIONS:-8} scripts/bench-dedup-run.sh "$n" "$probes" 2>&1 |
	tee -a "$out/summary.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
if [ -n "${DEDUP_STAGES:-}" ]; then
	say "   identify_batch() calls of the run, stages summed (ms; mcc.log_identify_timing):"
	tail -c +"$((log_at + 1))" /tmp/pgkit.log | grep "identify() timing:" |
		awk '{ n++; for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 && kv[2] ~ /^[0-9.]+$/) t[kv[1]] += kv[2] }
			END { printf "   calls=%d", n; for (k in t) printf " %s=%.1f", k, t[k]; print "" }' |
		tee -a "$out/summary.txt"
	say "   the functions' time (pg_stat_user_functions, ms; self: less the functions they called):"
	psql_ -c "SELECT funcname, calls, round(total_time) AS total_ms, round(self_time) AS self_ms
		FROM pg_stat_user_functions ORDER BY total_time DESC LIMIT 12" | tee -a "$out/summary.txt"
	dev_engine_totals "after the dedup"
fi
grep -E "mcc_engine.*(GPU|upload|WARNING|ERROR)" /tmp/pgkit.log | head -10 | tee -a "$out/summary.txt"
cp /tmp/pgkit.log "$out/server.log"
pgkit_down >/dev/null 2>&1
exit $status
