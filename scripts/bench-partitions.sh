#!/usr/bin/env bash
# bench-partitions.sh: the backend's fixed cost of identify() per partition
# of the gallery (docs/benchmarks.md, "The backend's cost per partition"):
# the same rows once in a table partitioned by key range and once in a
# plain table, searched through the matcher service (the engine on its CPU
# threads) and by the backend scan (mcc.service = off).
#
#   scripts/bench-partitions.sh [partitions, default 50] [rows a partition, default 2000] [rounds, default 3]
#
# Needs mcc installed and runs as a user PostgreSQL accepts (not root);
# PATH may point at another installation. A throwaway cluster, the two
# galleries registered and preloaded, 20 probes (second impressions). Then,
# per round, for each path and refine method, the plain and the partitioned
# gallery one after the other: 5 x the 20 probes in one session, the
# backend's CPU (utime + stime from /proc) and the wall clock per identify().
# MCC_BENCH_TIMING=1 also sets mcc.log_identify_timing and prints the mean
# of the backend's stages from the server log (builds that have it).
set -euo pipefail
parts=${1:-50}
per=${2:-2000}
rounds=${3:-3}
n=$((parts * per))
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

bench_cluster 54398 <<EOC
shared_buffers = '512MB'
fsync = off
mcc.worker_threads = 2
EOC
bench_service_ready
psql_ -c "CREATE TABLE gu(id bigint PRIMARY KEY, tpl mcc_template NOT NULL)" \
	-c "INSERT INTO gu SELECT finger, template FROM mcc_synthetic($n)" \
	-c "CREATE TABLE gp(id bigint PRIMARY KEY, tpl mcc_template NOT NULL) PARTITION BY RANGE (id)" \
	>/dev/null
psql_ -At -c "SELECT format('CREATE TABLE gp_%s PARTITION OF gp FOR VALUES FROM (%s) TO (%s);',
		i, i * $per, (i + 1) * $per) FROM generate_series(0, $parts - 1) i" | psql_ >/dev/null
psql_ -c "INSERT INTO gp SELECT * FROM gu" -c "VACUUM ANALYZE gu" -c "VACUUM ANALYZE gp" \
	-c "SELECT mcc_gallery_register('gu')" -c "SELECT mcc_gallery_register('gp')" \
	-c "CREATE TABLE pr AS SELECT finger AS id, template AS tpl FROM mcc_synthetic(20, 2) WHERE impression = 1" \
	>/dev/null
psql_ -c "SELECT * FROM mcc_gallery_preload('gu')" -c "SELECT * FROM mcc_gallery_preload('gp')" >/dev/null
echo "== $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $n rows, plain and in $parts partitions, $rounds rounds"
ticks=$(getconf CLK_TCK)
q="SELECT count(*) FROM pr, identify('%s', pr.tpl, 10, refine => '%s');"

# one_run PATH_SETTING METHOD GALLERY: "cpu_ms wall_ms" per identify() (100 calls)
one_run() {
	local pid t0 t1 w0 w1
	coproc P { psql -X -q -h "$dir" -p "$port" -U postgres -At postgres; }
	echo "$1; SET mcc.fallback = 'error'; ${MCC_BENCH_TIMING:+SET mcc.log_identify_timing = on;} SELECT pg_backend_pid();" >&"${P[1]}"
	read -r pid <&"${P[0]}"
	printf "$q\n" "$3" "$2" >&"${P[1]}"; read -r _ <&"${P[0]}"	# warm-up
	t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	w0=$(date +%s%N)
	for _ in 1 2 3 4 5; do printf "$q\n" "$3" "$2" >&"${P[1]}"; read -r _ <&"${P[0]}"; done
	w1=$(date +%s%N)
	t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	echo '\q' >&"${P[1]}"
	wait "$P_PID" 2>/dev/null || true
	echo "$(calc "($t1 - $t0) * 1000 / $ticks / 100") $(calc "($w1 - $w0) / 1e6 / 100")"
}

printf "%-8s %-6s %-5s %-6s %14s %14s\n" round path refine table "backend CPU ms" "wall ms"
for round in $(seq 1 "$rounds"); do
	for path in service backend; do
		set_path="SET mcc.service = on"
		[ $path = backend ] && set_path="SET mcc.service = off"
		for method in fused none; do
			for g in gu gp; do
				read -r cpu wall <<<"$(one_run "$set_path" $method $g)"
				printf "%-8s %-6s %-5s %-6s %14s %14s\n" "$round" $path $method \
					"$([ $g = gu ] && echo plain || echo parts)" "$cpu" "$wall"
			done
		done
	done
done
if [ -n "${MCC_BENCH_TIMING:-}" ]; then
	echo "== the backend's stages (mcc.log_identify_timing, ms), mean per call through the service"
	identify_timing_means "$dir/server.log"
fi
