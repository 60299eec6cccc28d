#!/usr/bin/env bash
# bench-changelog.sh: what the change log for hot standbys costs the
# primary's writers (docs/benchmarks.md, "Change log write cost";
# docs/deployment.md).
#
#   scripts/bench-changelog.sh [gallery size, default 20000] [seconds per run, default 20] [clients, default 2] [rounds, default 3]
#
# Needs mcc installed (make install) and runs as a user PostgreSQL accepts
# (not root). Starts a throwaway cluster with mcc preloaded, enrols a
# synthetic gallery, registers and preloads it (the primary serves it, so
# its triggers also send deltas to its own engine), then runs pgbench
# workloads against it with the gallery's change log off and on,
# alternating, for the given rounds:
#   insert  one new template per transaction, and a third of the
#           transactions delete the oldest added row again
#   update  one row's template replaced per transaction
# and prints per run: transactions/s, mean latency, WAL bytes per
# transaction, and the change log's size at the end. Removes the cluster at
# the end (MCC_BENCH_KEEP=1 keeps it).
set -euo pipefail
n=${1:-20000}
secs=${2:-20}
clients=${3:-2}
rounds=${4:-3}
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

bench_cluster 54342 <<CONF
shared_buffers = '512MB'
max_connections = 20
mcc.worker_threads = 1
CONF
psql_ -c "CREATE EXTENSION mcc" >/dev/null
bench_wait_ready

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== gallery of $n synthetic templates, $clients clients, $secs s per run"
psql_ -c "CREATE TABLE gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
	INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($n, 1, 1, 0);
	-- 1,000 spare templates the workloads write
	CREATE TABLE spare (i int PRIMARY KEY, tpl mcc_template NOT NULL);
	INSERT INTO spare SELECT finger, template FROM mcc_synthetic(1000, 1, 2);
	CREATE SEQUENCE new_id START $((n + 1));
	SELECT mcc_gallery_register('gallery');" >/dev/null
psql_ -c "VACUUM ANALYZE gallery, spare"
psql_ -tAc "SELECT mcc_gallery_preload('gallery')" >/dev/null
echo "   mean template $(psql_ -tAc "SELECT round(avg(pg_column_size(tpl))) FROM gallery") bytes"

cat >"$dir/insert.sql" <<'SQL'
\set r random(0, 999)
INSERT INTO gallery SELECT nextval('new_id'), tpl FROM spare WHERE i = :r;
SQL
cat >"$dir/trim.sql" <<'SQL'
DELETE FROM gallery WHERE id = (SELECT min(id) FROM gallery WHERE id > current_setting('bench.n')::bigint);
SQL
cat >"$dir/update.sql" <<SQL
\set r random(0, 999)
\set id random(0, $((n - 1)))
UPDATE gallery SET tpl = (SELECT tpl FROM spare WHERE i = :r) WHERE id = :id;
SQL

# One run: workload, log on/off; prints tps, latency, WAL bytes per transaction.
run() {
	local work=$1 log=$2 out lsn0 lsn1 tps lat xacts wal
	psql_ -c "SELECT mcc_gallery_set_change_log('gallery', $log)" >/dev/null
	psql_ -c "CHECKPOINT" >/dev/null
	lsn0=$(psql_ -tAc "SELECT pg_current_wal_insert_lsn()")
	if [ "$work" = insert ]; then
		out=$(PGOPTIONS="-c bench.n=$n" pgbench -n -h "$dir" -p "$port" -U postgres -c "$clients" -j "$clients" \
			-T "$secs" -f "$dir/insert.sql@2" -f "$dir/trim.sql@1" postgres 2>&1)
	else
		out=$(pgbench -n -h "$dir" -p "$port" -U postgres -c "$clients" -j "$clients" \
			-T "$secs" -f "$dir/update.sql" postgres 2>&1)
	fi
	lsn1=$(psql_ -tAc "SELECT pg_current_wal_insert_lsn()")
	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
	lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
	xacts=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	wal=$(psql_ -tAc "SELECT round(('$lsn1'::pg_lsn - '$lsn0'::pg_lsn) / greatest($xacts, 1))")
	printf "   %-6s log=%-3s %8.1f tx/s  %7.2f ms  %7d WAL bytes/tx  (%d tx)\n" \
		"$work" "$([ "$log" = true ] && echo on || echo off)" "$tps" "$lat" "$wal" "$xacts"
}

for work in insert update; do
	for ((round = 1; round <= rounds; round++)); do
		run "$work" false
		run "$work" true
	done
done
echo "   change log after the runs: $(psql_ -tAc "SELECT count(*) || ' entries, ' || pg_size_pretty(pg_total_relation_size('mcc_change_log')) FROM mcc_change_log")"
