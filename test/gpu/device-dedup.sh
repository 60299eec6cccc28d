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
out=${OUT:-build/device-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
jobs=$(nproc)
step() { echo "== $*" | tee -a "$out/summary.txt"; }
say() { echo "$*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"

step "device"
{
	date -u
	nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
	nvcc --version 2>&1 | tail -1
	echo "$jobs CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
} | tee -a "$out/summary.txt"

kit=${KIT:-}
for k in .device-kit ../.device-kit; do
	[ -z "$kit" ] && [ -f "$k/on-device.sh" ] && kit=$k
done
if [ -z "$kit" ]; then
	step "SKIP: no device kit (run ../shared/device/make-kit.sh and carry it)"
	exit 1
fi
step "PostgreSQL from $kit, mcc built and installed"
# shellcheck source=/dev/null
source "$kit/on-device.sh" || exit 1
pgkit_up >"$out/pgkit.log" 2>&1 || { cat "$out/pgkit.log"; exit 1; }
make -j"$jobs" >"$out/make.log" 2>&1 && pgkit_install >>"$out/make.log" 2>&1 ||
	{ tail -30 "$out/make.log"; say "build or install failed"; exit 1; }
cat >>"$PGKIT_DATA/postgresql.conf" <<EOF
shared_preload_libraries = 'mcc'
shared_buffers = '4GB'
max_connections = 60
fsync = off
synchronous_commit = off
mcc.worker_threads = 0
mcc.cache_memory_limit = '16GB'
EOF
pgkit_down >/dev/null 2>&1
native="$PGKIT_HOME/package/native"
preload=
if nm -D "$native/lib/postgresql/mcc.so" | grep -q " U heap_datum_check" &&
	! nm -D "$native/bin/postgres" | grep -q " T heap_datum_check"; then
	# as in device-e2e.sh: the kit's 15.18 server under 15.20 headers
	printf 'void heap_datum_check(void *t, void *d) { (void) t; (void) d; }\n' >/tmp/pgkit-shim.c
	gcc -shared -fPIC -o /tmp/pgkit-shim.so /tmp/pgkit-shim.c && chmod 755 /tmp/pgkit-shim.so &&
		preload=LD_PRELOAD=/tmp/pgkit-shim.so
fi
runuser -u pgkit -- env $preload "$native/bin/pg_ctl" -D "$PGKIT_DATA" \
	-o "-p 55432 -k /tmp -c listen_addresses=''" -l /tmp/pgkit.log -w start >/dev/null ||
	{ tail -30 /tmp/pgkit.log; exit 1; }
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS mcc" postgres || { tail -30 /tmp/pgkit.log; exit 1; }
for i in $(seq 1 120); do
	psql -X -tAc "SELECT state FROM mcc_service_status()" postgres 2>/dev/null | grep -q ready && break
	sleep 0.5
done

step "deduplication: $n templates, the first $probes probes"
status=0
MCC_BENCH_SESSIONS=${MCC_BENCH_SESSIONS:-8} scripts/bench-dedup-run.sh "$n" "$probes" 2>&1 |
	tee -a "$out/summary.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
grep -E "mcc_engine.*(GPU|upload|WARNING|ERROR)" /tmp/pgkit.log | head -10 | tee -a "$out/summary.txt"
cp /tmp/pgkit.log "$out/server.log"
pgkit_down >/dev/null 2>&1
exit $status
