#!/usr/bin/env bash
# device-restart.sh: serving again after a restart on a GPU machine, with and
# without the engine's cache snapshot (issue 19; docs/benchmarks.md,
# "Serving after a restart"). Run from the repository root (or a copy of
# it); logs go to $OUT (default build/device-out).
#
#   test/gpu/device-restart.sh [gallery size, default 10000000]
#
#   1. the device; PostgreSQL from the device kit with mcc built and
#      installed (test/gpu/device-lib.sh), mcc.cache_snapshots = on,
#      mcc.fallback = error (an answer the service cannot give fails);
#   2. a synthetic gallery of N templates ($DEV_SESSIONS sessions of
#      mcc_synthetic, default 16),
#      registered, then mcc_gallery_preload (the load's rows per second), the
#      first identify() after it (answered on the CPU threads while the GPU
#      copy is built beside it) and the time until the gallery is on the GPU
#      (mcc_gallery_status.device, set once the LSS gallery and its
#      refinement data are there);
#   3. restarts of the server (pg_ctl -m fast), each timed from pg_ctl start
#      to the end of the first identify() after the service is ready and to
#      the gallery being on the GPU: with the snapshot and the table
#      unchanged, after 50 rows were replaced while the server ran, and with
#      mcc.cache_snapshots = off (a full load). The engine's log lines of
#      each stage (snapshot or load, GPU upload, refinement data) follow.
# MCC_BENCH_CACHE sets mcc.cache_memory_limit (default 64GB); CHECK_PROBES=N
# compares, after each restart, identify() of the first N probes through the
# service with the backend's own scan (defaults and refine => 'none').
set -u
n=${1:-10000000}
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_bench_start
cat >>"$PGKIT_DATA/postgresql.conf" <<EOF
mcc.cache_memory_limit = '${MCC_BENCH_CACHE:-64GB}'
mcc.cache_snapshots = on
mcc.fallback = 'error'
EOF
dev_serve

step "gallery of $n synthetic templates"
export DEV_SESSIONS=${DEV_SESSIONS:-16}
dev_gallery psql_
say "   enrolment $enrol s; heap $(psql_ -tAc "SELECT pg_size_pretty(pg_table_size('gallery'))")"
log0=$(($(wc -l </tmp/pgkit.log) + 1))
t0=$(date +%s.%N)
psql_ -tAc "SELECT mcc_gallery_preload('gallery')" >/dev/null || status=1
t1=$(date +%s.%N)
probe="SELECT count(*) FROM identify('gallery', (SELECT tpl FROM probes WHERE pid = 1), 10)"
psql_ -tAc "$probe" >/dev/null || status=1
t2=$(date +%s.%N)
dev_wait_gpu || status=1
t3=$(date +%s.%N)
say "   mcc_gallery_preload $(calc "$t1 - $t0") s ($(calc "$n / ($t1 - $t0)" 0) rows/s); first identify() after it $(calc "$t2 - $t1") s; on the GPU $(calc "$t3 - $t1") s after the preload"
psql_ -c "SELECT entries, cylinders, pg_size_pretty(host_bytes) AS host, pg_size_pretty(device_bytes) AS device_mem,
	round(host_bytes::numeric / entries) AS host_per_tpl, round(device_bytes::numeric / entries) AS device_per_tpl,
	round(load_seconds::numeric, 2) AS engine_load_s FROM mcc_gallery_status" | tee -a "$out/summary.txt"
grep -E "mcc_engine.*(load|GPU|upload)" /tmp/pgkit.log | tail -6 | sed 's/^/   /' | tee -a "$out/summary.txt"
# wait for this gallery's snapshot (the log may hold an earlier run's lines)
for i in $(seq 1 600); do tail -n +"$log0" /tmp/pgkit.log | grep -q "cache snapshot written" && break; sleep 1; done
say "   snapshot: $(du -sh "$PGKIT_DATA/mcc" 2>/dev/null | cut -f1) in $PGKIT_DATA/mcc"

# check_exact WHAT: identify() through the service (on the GPU by now) equals
# the backend's own scan (mcc.service = off) for the first $CHECK_PROBES
# probes, with the defaults and with refine => 'none'.
check_exact() {
	local what=$1 r a b
	for r in "" ", refine => 'none'"; do
		q="SELECT p.pid, (SELECT string_agg(id || ':' || score, ',' ORDER BY ord)
			FROM identify('gallery', p.tpl, 10$r) WITH ORDINALITY t(id, score, ord))
			FROM probes p WHERE p.pid <= $CHECK_PROBES ORDER BY p.pid"
		a=$(psql_ -tAc "$q") || status=1
		b=$(PGOPTIONS="-c mcc.service=off" psql_ -tAc "$q") || status=1
		if [ -n "$a" ] && [ "$a" = "$b" ]; then
			say "      exact ($what${r:+, none}): $CHECK_PROBES probes, the service's answers equal the backend scan's"
		else
			status=1
			say "      NOT EXACT ($what${r:+, none}): service [$a] backend [$b]"
		fi
	done
}

restart() {
	local what=$1 t0 t1 t2 t3
	runuser -u pgkit -- "$native/bin/pg_ctl" -D "$PGKIT_DATA" -m fast -w -t 600 stop >/dev/null
	t0=$(date +%s.%N)
	dev_start
	until psql_ -tAc "SELECT state FROM mcc_service_status()" 2>/dev/null | grep -q ready; do sleep 0.05; done
	t1=$(date +%s.%N)
	psql_ -tAc "$probe" >/dev/null || status=1
	t2=$(date +%s.%N)
	dev_wait_gpu || status=1
	t3=$(date +%s.%N)
	say "   $what: server ready $(calc "$t1 - $t0") s after start, first identify() $(calc "$t2 - $t1") s later: serving $(calc "$t2 - $t0") s after start, from the GPU $(calc "$t3 - $t0") s after start"
	grep -E "mcc_engine.*(snapshot|load|upload|refinement data)" /tmp/pgkit.log | tail -6 | sed 's/^/      /' | tee -a "$out/summary.txt"
	[ "${CHECK_PROBES:-0}" -gt 0 ] && check_exact "$what"
	return 0
}
step "restarts"
restart "snapshot, table unchanged"
psql_ -c "UPDATE gallery g SET tpl = p.tpl FROM probes p WHERE g.id = p.pid * 1000 AND p.pid <= 50" >/dev/null
restart "snapshot, 50 rows replaced"
if [ "${RESTART_FULL:-1}" = 1 ]; then	# RESTART_FULL=0: skip the full-load restart
	psql_ -c "ALTER SYSTEM SET mcc.cache_snapshots = off" >/dev/null
	restart "mcc.cache_snapshots = off (full load)"
fi
cp /tmp/pgkit.log "$out/server.log"
runuser -u pgkit -- "$native/bin/pg_ctl" -D "$PGKIT_DATA" -m fast -w stop >/dev/null 2>&1
dev_pack device-restart
exit $status
