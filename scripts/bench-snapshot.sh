#!/usr/bin/env bash
# bench-snapshot.sh: the time to serve again after a restart, with and
# without the engine's cache snapshot (docs/benchmarks.md, "Serving after a
# restart"; docs/matcher-service.md, "Cache snapshots").
#
#   scripts/bench-snapshot.sh [gallery size, default 200000] [rounds, default 3]
#
# Needs mcc installed (make install) and runs as a user PostgreSQL accepts
# (not root). Starts a throwaway cluster with mcc preloaded, enrols a
# synthetic gallery, loads it once (which writes the snapshot), then per
# round: restarts the server and times the first identify() after the
# service is ready (the load it triggers included), with
# mcc.cache_snapshots = on (after 50 rows changed while the server ran,
# which the snapshot check reads from the table) and off (a full load).
# Prints each time, the snapshot's size and the server log's account of
# the rows checked and read. Removes the cluster at the end
# (MCC_BENCH_KEEP=1 keeps it).
set -euo pipefail
n=${1:-200000}
rounds=${2:-3}
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

bench_cluster 54332 <<CONF
max_connections = 20
mcc.fallback = 'error'
mcc.cache_snapshots = on
CONF
psql_ -c "CREATE EXTENSION mcc" >/dev/null
bench_wait_ready

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== enrolling $n synthetic templates"
half=$((n / 2))
psql_ -c "CREATE TABLE gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL)"
psql_ -c "INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($half, 1, 1, 0)" &
psql_ -c "INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($((n - half)), 1, 1, $half)" &
wait
psql_ -c "VACUUM ANALYZE gallery"
psql_ -c "CREATE TABLE probe AS SELECT template AS tpl FROM mcc_synthetic(1, 2, 1) WHERE impression = 1;
	CREATE TABLE spare AS SELECT finger, template FROM mcc_synthetic(50, 1, 9);
	SELECT mcc_gallery_register('gallery')" >/dev/null
psql_ -tAc "SELECT mcc_gallery_preload('gallery')" >/dev/null
until grep -q "cache snapshot written" "$dir/server.log"; do sleep 0.1; done
echo "   heap $(psql_ -tAc "SELECT pg_size_pretty(pg_table_size('gallery'))"), snapshot $(du -h "$dir"/data/mcc/*.snap | cut -f1)"

# Restart with the setting, then time the first identify() after ready.
serve_after_restart() {
	local setting=$1 t0 t1 t2
	pg_ctl -D "$dir/data" -m fast -w stop >/dev/null
	sed -i '/^mcc.cache_snapshots/d' "$dir/data/postgresql.conf"
	echo "mcc.cache_snapshots = $setting" >>"$dir/data/postgresql.conf"
	t0=$(date +%s.%N)
	pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
	bench_wait_ready
	t1=$(date +%s.%N)
	psql_ -tAc "SELECT count(*) FROM identify('gallery', (SELECT tpl FROM probe), 5)" >/dev/null
	t2=$(date +%s.%N)
	echo "   cache_snapshots=$setting: server ready in $(calc "$t1 - $t0") s, first identify() $(calc "$t2 - $t1") s after"
}

echo "== restarts"
for r in $(seq 1 "$rounds"); do
	# 50 rows changed while the server runs come to the engine as deltas,
	# whose tuple ids it does not know: the next check reads them
	serve_after_restart off
	serve_after_restart on
	psql_ -c "UPDATE gallery g SET tpl = s.template FROM spare s WHERE g.id = s.finger + 1000 * $r" >/dev/null
	serve_after_restart on
	grep -o 'served from its cache snapshot: .*' "$dir/server.log" | tail -2 | sed 's/^/      /'
	# the engine's account of the last restarts: file read, load (check or full)
	grep -oE 'cache snapshot "[^"]*" read: .*|loaded: .* in [0-9.]+ s' "$dir/server.log" | tail -5 | sed 's/^/      engine: /'
done
