#!/usr/bin/env bash
# device-100m.sh: 100 million templates through SQL on one machine with
# several GPUs (issue 19, point 4; docs/benchmarks.md, "100 M templates").
# Run from the repository root (or a copy of it); the summary goes to $OUT
# (default build/device-out).
#
#   test/gpu/device-100m.sh [gallery size, default 100000000]
#
# The work outlives one device call (at most 10 minutes each): the first
# call starts it as a detached driver (setsid, so it survives the call's
# end on a machine kept warm) and every call, the first included, waits for
# it up to WAIT seconds (default 540), then copies the summary so far into
# $OUT and exits 0 when the driver has finished, 3 while it still runs, 1
# when it failed. Call it again (same arguments) until it exits 0 or 1.
#
# The driver:
#   1. the machine (GPUs, CPUs, memory, disk); PostgreSQL from the device
#      kit with mcc built and installed (test/gpu/device-lib.sh), the data
#      directory on the file system with the most room; wal_level = minimal,
#      fsync off, engine snapshots off, no cache limit;
#   2. enrolment by the fastest route a DBA has: DISTINCT (default
#      10,000,000) synthetic templates made by one mcc_synthetic session per
#      CPU into an unlogged staging table, then the gallery, a table
#      partitioned by id range into PARTS (default 50) partitions, each
#      created, filled from the staging table (ids shifted: the gallery
#      holds N / DISTINCT copies of each template) and given its primary
#      key in one transaction per partition, one session per CPU (a table
#      created in the same transaction writes no WAL under wal_level =
#      minimal), then attached;
#   3. mcc_gallery_register and mcc_gallery_preload (rows per second), the
#      time until the gallery is on the GPUs, the host and device memory per
#      template (mcc_gallery_status, nvidia-smi);
#   4. the 100 mated probes' first hit (a copy of their finger: id mod
#      DISTINCT), with the backend's stages of those calls
#      (mcc.log_identify_timing, averaged) and the engine's per-reply stages
#      of those one-client calls (SIGUSR1), then identify(gallery, probe, 10)
#      with the defaults and with mcc.refine_method = none, pgbench -T SECS
#      (default 30) with 1 and 16 clients: throughput, p50 and p99; at the
#      end the engine's totals (the GPU path's, and a refining search's
#      stages per reply).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/gpu/device-lib.sh
source "$here/device-lib.sh"
dev_big_gallery "$@"
parts=${PARTS:-50}
state=${STATE:-/tmp/device-100m}

span=$((n / parts))
if [ $((span * parts)) -ne "$n" ] || [ $((distinct % span)) -ne 0 ]; then
	echo "N ($n) must be PARTS ($parts) x a span that divides DISTINCT ($distinct)" >&2
	exit 2
fi

# --- the caller: start the driver once, wait for it -------------------------
[ "${DEV_DRIVER:-0}" = 1 ] || dev_detached "$state" "$wait_s" server=/tmp/pgkit.log "$0" "$n"

# --- the driver ----------------------------------------------------------------
dev_out "$state/out"
trap 'echo $status >"$state/rc"' EXIT
status=1
dev_machine name,driver_version,memory.total
say "   $(free -g | awk '/^Mem:/ {print $2 " GB of memory"}')"
# the data directory on the file system with the most room (the mount
# point of /tmp's or of this tree's; initdb runs as the kit's user)
mnt=$(df --output=avail,target /tmp . | tail -n +2 | sort -n | tail -1 | awk '{print $2}')
mkdir -p "${mnt%/}/pg100m" && chmod 777 "${mnt%/}/pg100m"
export PGKIT_DATA=${mnt%/}/pg100m/data
say "   data directory $PGKIT_DATA: $(df -h --output=avail "$mnt" | tail -1 | tr -d ' ') free; /tmp $(df -h --output=avail /tmp | tail -1 | tr -d ' ')"
dev_kit_ready
dev_conf_bench
dev_conf_gallery "$PGKIT_DATA" "${SHARED_BUFFERS:-16GB}"
dev_serve say

# --- 2. enrolment ---------------------------------------------------------------
step "enrolment: $distinct distinct templates, $n rows in $parts partitions of $span"
k=$jobs
dev_stage "$distinct" "$k"
psql_ -c "DROP TABLE IF EXISTS gallery" || exit 1
psql_ -c "CREATE TABLE gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL) PARTITION BY RANGE (id)" || exit 1
# one partition: created, filled and keyed in one transaction (no WAL)
part_sql() {
	local i=$1 lo=$(($1 * span)) b0=$((($1 * span) % distinct))
	cat <<-EOF
	BEGIN;
	SET LOCAL enable_seqscan = off;
	CREATE TABLE gallery_p$i (id bigint NOT NULL, tpl mcc_template NOT NULL);
	INSERT INTO gallery_p$i SELECT id + $((lo - b0)), tpl FROM base
		WHERE id >= $b0 AND id < $((b0 + span));
	ALTER TABLE gallery_p$i ADD PRIMARY KEY (id),
		ADD CONSTRAINT gallery_p${i}_range CHECK (id >= $lo AND id < $((lo + span)));
	COMMIT;
	EOF
}
t2=$(date +%s.%N)
for i in $(seq 0 $((parts - 1))); do
	part_sql "$i" >"$state/part-$i.sql"
done
for i in $(seq 0 $((parts - 1))); do
	echo "$PGPORT $state/part-$i.sql"
done >"$state/parts.txt"
dev_fill_parts "$k" "$state/parts.txt" || { say "   a partition failed"; exit 1; }
for i in $(seq 0 $((parts - 1))); do
	psql_ -c "ALTER TABLE gallery ATTACH PARTITION gallery_p$i FOR VALUES FROM ($((i * span))) TO ($(((i + 1) * span)))" ||
		exit 1
done
t3=$(date +%s.%N)
psql_ -c "DROP TABLE base"
psql_ -c "ANALYZE gallery" || exit 1
t4=$(date +%s.%N)
say "   gallery: $n rows in $(calc "$t3 - $t2" 1) s ($(calc "$n / ($t3 - $t2)" 0) rows/s, $k sessions); ANALYZE $(calc "$t4 - $t3" 1) s"
say "   heap $(psql_ -tAc "SELECT pg_size_pretty(sum(pg_table_size(relid))) FROM pg_partition_tree('gallery')"),"\
	"indexes $(psql_ -tAc "SELECT pg_size_pretty(sum(pg_indexes_size(relid))) FROM pg_partition_tree('gallery')"),"\
	"$(df -h --output=avail "$mnt" | tail -1 | tr -d ' ') left on disk"
dev_probes

# --- 3. register, load, upload ---------------------------------------------------
step "load"
psql_ -tAc "SELECT mcc_gallery_register('gallery')" >/dev/null || exit 1
t0=$(date +%s.%N)
psql_ -tAc "SELECT mcc_gallery_preload('gallery')" >/dev/null || exit 1
t1=$(date +%s.%N)
if nvidia-smi -L >/dev/null 2>&1; then
	dev_wait_gpu || say "   the gallery did not reach the GPUs"
fi
t2=$(date +%s.%N)
say "   mcc_gallery_preload $(calc "$t1 - $t0" 1) s ($(calc "$n / ($t1 - $t0)" 0) rows/s); on the GPUs $(calc "$t2 - $t1" 1) s after it"
psql_ -c "SELECT entries, cylinders, pg_size_pretty(host_bytes) AS host, pg_size_pretty(device_bytes) AS device_mem,
	round(host_bytes::numeric / entries) AS host_per_tpl, round(device_bytes::numeric / entries) AS device_per_tpl,
	device, round(load_seconds::numeric, 2) AS engine_load_s FROM mcc_gallery_status" | tee -a "$out/summary.txt"
nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader 2>&1 | sed 's/^/   GPU /' | tee -a "$out/summary.txt"
say "   engine RSS: $(ps -o rss= -C mcc_engine 2>/dev/null | awk '{s += $1} END {printf "%.1f GB", s / 1048576}')"
grep -E "mcc_engine.*(load|GPU|upload|refinement)" /tmp/pgkit.log | tail -8 | sed 's/^/   /' | tee -a "$out/summary.txt"

# --- 4. answers and speed --------------------------------------------------------
step "identify()"
t0=$(date +%s.%N)
hits=$(psql_ -tAc "SET mcc.log_identify_timing = on; SELECT count(*) FILTER (WHERE top % $distinct = finger), count(*) FROM (
	SELECT p.finger, (SELECT id FROM identify('gallery', p.tpl, 10) ORDER BY score DESC, id LIMIT 1) AS top
	FROM probes p WHERE p.mate) s") || exit 1
t1=$(date +%s.%N)
say "   mated probes whose first hit is a copy of their finger: ${hits/|/ of } ($(calc "$t1 - $t0" 1) s)"
say "   the backend's stages of those calls (mcc.log_identify_timing, ms a call):"
identify_timing_means /tmp/pgkit.log | sed 's/^/   /' | tee -a "$out/summary.txt"
dev_engine_totals "after the mated probes' calls (one client, one call at a time)"
dev_pgbench_table "$secs" "${SETTINGS_100M:-default mcc.refine_method=none}" identify \
	"identify(gallery, probe, k => 10) through SQL, pgbench -T $secs, $n rows:"
dev_bench_end
status=0
