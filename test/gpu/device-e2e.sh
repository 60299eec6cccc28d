#!/usr/bin/env bash
# device-e2e.sh: the whole GPU measurement in one call on a GPU machine
# (docs/benchmarks.md, "GPU"). Run from the repository root (or a copy of
# it); logs and tables go to $OUT (default build/device-out).
#
#   test/gpu/device-e2e.sh [gallery size, default 1000000] [seconds per run, default 20]
#
#   1. the device, nvcc, the driver;
#   2. build the GPU library, the engine with its GPU path and the tests;
#      make gpu-check (the whole GPU suite);
#   3. the engine alone over its socket (build/gpu/engine_bench): a gallery
#      of N templates, one-probe searches from 1 and 16 connections, GPU
#      path and CPU threads (--gpu off), batching on and off;
#   4. identify() through SQL: PostgreSQL from the device kit (KIT, default
#      .device-kit or ../.device-kit; see ../shared/device/make-kit.sh) with
#      shared_preload_libraries = mcc; a gallery of N synthetic templates
#      (mcc_synthetic, 8 sessions: the enrolment time), registered and
#      preloaded (the cache and GPU load time), then pgbench -c 1 and -c 16
#      with a custom identify() script: throughput, p50 and p99 latency.
#      Skipped, saying so, when this tree has no matcher service yet.
#
# STAGES (default "check engine sql") picks stages 2, 3 and 4; stage 4 runs
# as root here (the kit's server runs as the user "pgkit"). "load" added to
# them (STAGES="sql load") times the gallery's load per stage after stage 4's
# preload (scripts/bench-load.sh).
set -u
n=${1:-1000000}
secs=${2:-20}
stages=${STAGES:-check engine sql}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_out build/device-out
root=$(pwd)
# At most 8 files come back from a device call: summary.txt, gpu-check.log
# and logs.tgz holding the rest.
trap 'dev_pack device-e2e gpu-check.log' EXIT

# --- 1. the machine -----------------------------------------------------------
dev_machine name,driver_version,clocks.max.sm,memory.total

# --- 2. build, make gpu-check --------------------------------------------------
step "build and make gpu-check"
GPU_BINS="build/gpu/gpu_check build/gpu/test_engine_gpu build/gpu/test_engine_server
	build/gpu/test_engine_e2e build/gpu/engine_bench build/gpu/mcc_engine"
if ! make -s -f kernels/gpu.mk -j"$jobs" $GPU_BINS >"$out/build.log" 2>&1; then
	tail -40 "$out/build.log"
	say "build failed"
	exit 1
fi
if has check; then
	make -f kernels/gpu.mk gpu-check >"$out/gpu-check.log" 2>&1 || status=1
	grep -E "^not ok|^#   failed|^# GPU|SKIP" "$out/gpu-check.log" | head -40
	say "gpu-check: $(grep -c '^ok' "$out/gpu-check.log") ok, $(grep -c '^not ok' "$out/gpu-check.log") not ok," \
		"$(grep -c 'SKIP' "$out/gpu-check.log") skipped (exit $status)"
fi

# --- 3. the engine alone --------------------------------------------------------
if has engine; then
	step "engine over its socket: $n templates, k = 10, one probe per search, $((secs / 2)) s per run"
	for mode in on off; do
		MCC_ENGINE=build/gpu/mcc_engine build/gpu/engine_bench --templates "$n" --distinct 20000 \
			--clients 1,16 --seconds "$((secs / 2))" --gpu "$mode" >"$out/engine-gpu-$mode.log" 2>&1 || status=1
		sed 's/^/   /' "$out/engine-gpu-$mode.log" | grep -vE "^   # (GPU [0-9]|listening)" | tee -a "$out/summary.txt"
	done
fi

# --- 4. identify() through SQL ------------------------------------------------
has sql || exit $status
if ! grep -q "mcc_gallery_preload" sql/mcc--*.sql 2>/dev/null; then
	step "identify() through SQL: SKIP (this tree has no matcher service: no mcc_gallery_preload)"
	exit $status
fi
if ! dev_find_kit; then
	step "identify() through SQL: SKIP (no device kit: run ../shared/device/make-kit.sh and carry it)"
	exit 1
fi
step "identify() through SQL: $n templates, PostgreSQL from $kit"
dev_kit_install
say "   installed: $(ls "$PGKIT_HOME"/package/native/lib/postgresql/mcc* 2>/dev/null | xargs -n1 basename | tr '\n' ' ')"
say "   mcc.so links CUDA: $(ldd "$PGKIT_HOME/package/native/lib/postgresql/mcc.so" | grep -ci cuda) libraries," \
	"$(nm -D "$PGKIT_HOME/package/native/lib/postgresql/mcc.so" | grep -ci cuda) symbols (both must be 0)"
dev_conf_bench
dev_serve say
say "   service: $(psql_ -tAc "SELECT state || ', engine pid ' || engine_pid FROM mcc_service_status()")"

# enrolment: 8 sessions of mcc_synthetic
dev_gallery psql_
t0=$(date +%s.%N)
psql_ -tAc "SELECT mcc_gallery_preload('gallery')" >/dev/null || status=1
t1=$(date +%s.%N)
preload=$(calc "$t1 - $t0" 2)
# the first identify() runs on the CPU threads while the GPU copy is built;
# what follows measures the GPU, once the copy is there
t0=$(date +%s.%N)
psql_ -tAc "SELECT count(*) FROM identify('gallery', (SELECT tpl FROM probes WHERE pid = 1), 10)" >/dev/null || status=1
t1=$(date +%s.%N)
first=$(calc "$t1 - $t0" 2)
dev_wait_gpu || status=1
psql_ -c "SELECT entries, cylinders, pg_size_pretty(host_bytes) AS host, pg_size_pretty(device_bytes) AS device_mem,
	device, round(load_seconds::numeric, 2) AS engine_load_s FROM mcc_gallery_status" | tee -a "$out/summary.txt"
say "   enrolment $enrol s (8 sessions); mcc_gallery_preload $preload s; first identify() after it $first s"
grep -E "mcc_engine.*(GPU|upload)" /tmp/pgkit.log | sed 's/^/   /' | tee -a "$out/summary.txt"
# with "load" in STAGES: that gallery's full load again, per stage
# (scripts/bench-load.sh: rows/s, backend and engine CPU, the first
# identify() after it, which waits for the GPU upload)
if has load; then
	step "gallery load per stage: scripts/bench-load.sh on the same $n rows"
	MCC_BENCH_EXISTING=1 MCC_BENCH_TABLE=gallery scripts/bench-load.sh "$n" 3 2>&1 | tee -a "$out/summary.txt"
fi

# E2E_SETTINGS: settings to compare, e.g. "default mcc.refine_fraction=0.001
# mcc.refine_method=none" (each run with PGOPTIONS="-c setting")
dev_pgbench_table "$secs" "${E2E_SETTINGS:-default}" identify \
	"identify(gallery, probe, k => 10) through SQL, pgbench -T $secs:"
dev_bench_end
cp /tmp/pgkit.log "$out/server.log"
exit $status
