#!/usr/bin/env bash
# bench-service.sh: throughput and latency of identify() through the matcher
# service on a synthetic gallery (docs/benchmarks.md, "Matcher service").
#
#   scripts/bench-service.sh [gallery size, default 250000] [seconds per run, default 30]
#
# Needs mcc installed (make install) and runs as a user PostgreSQL accepts
# (not root). Starts a throwaway cluster with mcc preloaded, enrols the
# gallery (two sessions in parallel), measures the cache load, then
# identify() from 1, 4 and 16 pgbench clients (throughput, p50 and p99
# latency from pgbench's per-transaction log), identify_batch() against the
# same probes one at a time (the gain of batching), and the backend scan
# without the service for reference. Removes the cluster at the end
# (MCC_BENCH_KEEP=1 keeps it). PATH may point at another installation.
#
# MCC_BENCH_REFINE=method (e.g. fused) measures refinement instead: for each
# client count of MCC_BENCH_CLIENTS (default "1 4"), MCC_BENCH_ROUNDS
# (default 2) rounds of identify(..., refine => 'none') then identify(...,
# refine => method), each with the same figures plus the server's CPU per
# identification (postmaster, backends and engine, from /proc), and the
# ratio of method to 'none'; the batching and backend-scan parts are skipped.
set -euo pipefail
n=${1:-250000}
secs=${2:-30}
nb=${MCC_BENCH_PROBES:-64}		# probes of the batching comparison
refine=${MCC_BENCH_REFINE:-}
rounds=${MCC_BENCH_ROUNDS:-2}
clients=${MCC_BENCH_CLIENTS:-"1 4"}
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
bench_cluster 54331 <<EOF
max_connections = 40
fsync = off
synchronous_commit = off
EOF
bench_service_ready

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== enrolling $n synthetic templates (2 sessions)"
psql_ -c "CREATE TABLE gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL)"
half=$((n / 2))
t0=$(date +%s.%N)
psql_ -c "INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($half, 1, 1, 0)" &
psql_ -c "INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($((n - half)), 1, 1, $half)" &
wait
t1=$(date +%s.%N)
psql_ -c "VACUUM ANALYZE gallery"
echo "   enrolled in $(calc "$t1 - $t0" 1) s"
psql_ -c "CREATE TABLE probes AS
	SELECT row_number() OVER ()::int AS pid, template AS tpl FROM (
		SELECT template FROM mcc_synthetic(100, 2, 1) WHERE impression = 1
		UNION ALL SELECT template FROM mcc_synthetic(100, 1, 2)) p;
	SELECT mcc_gallery_register('gallery');"

echo "== cache load (the first one also sets the heap's hint bits)"
for run in first second; do
	t0=$(date +%s.%N)
	entries=$(psql_ -tAc "SELECT mcc_gallery_preload('gallery')")
	t1=$(date +%s.%N)
	echo "   $run mcc_gallery_preload: $entries templates in $(calc "$t1 - $t0") s: $(calc "$entries / ($t1 - $t0)" 0) templates/s (heap scan + transfer + engine build)"
done
psql_ -c "SELECT entries, cylinders, pg_size_pretty(host_bytes) AS host, round(load_seconds::numeric, 3) AS engine_seconds, round(load_rate) AS engine_rate FROM mcc_gallery_status"

# CPU seconds the engine has used so far (user + system, from /proc): a
# figure that other load on the machine does not inflate
engine_cpu() {
	local pid
	pid=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status()")
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$pid/stat"
}

# CPU seconds of the whole server: the postmaster, its children that have
# exited (pgbench's backends, reaped when its connections close) and the
# engine (whose parent, the supervisor, does not exit)
server_cpu() {
	local pm epid
	pm=$(head -1 "$dir/data/postmaster.pid")
	epid=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status()")
	awk -v hz="$(getconf CLK_TCK)" '{ s += $14 + $15 + $16 + $17 } END { printf "%.3f", s / hz }' \
		"/proc/$pm/stat" "/proc/$epid/stat"
}

# one pgbench run: $1 clients, $2 script, $3 label; sets p50_ms and srv_ms
pgbench_run() {
	local c=$1 cpu0 cpu1 scpu0 scpu1 out reqs tps
	rm -rf "$dir/log$c" && mkdir "$dir/log$c"
	cpu0=$(engine_cpu)
	scpu0=$(server_cpu)
	out=$(cd "$dir/log$c" && pgbench -n -h "$dir" -p "$port" -U postgres -c "$c" -j "$((c < 4 ? c : 4))" \
		-T "$secs" -l -f "$2" postgres 2>&1)
	sleep 1	# the backends exit and are reaped
	cpu1=$(engine_cpu)
	scpu1=$(server_cpu)
	tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
	reqs=$(cat "$dir"/log$c/pgbench_log.* | wc -l)
	p50_ms=$(pgbench_percentiles "%.2f" "0.00" "$dir"/log$c/pgbench_log.*)
	srv_ms=$(calc "($scpu1 - $scpu0) * 1000 / $reqs" 2)
	echo "   $3, $c client(s): $tps identifications/s, $(pgbench_percentiles "p50 %.1f ms, p99 %.1f ms, %d requests" "no transactions" "$dir"/log$c/pgbench_log.*)," \
		"engine CPU $(calc "($cpu1 - $cpu0) * 1000 / $reqs" 1) ms, server CPU $srv_ms ms per identification" \
		"(load average $(cut -d' ' -f1 /proc/loadavg))"
}

if [ -n "$refine" ]; then
	for r in none "$refine"; do
		printf '%s\n' '\set p random(1, 200)' \
			"SELECT count(*) FROM identify('gallery', (SELECT tpl FROM probes WHERE pid = :p), 10, refine => '$r');" \
			>"$dir/identify-$r.sql"
	done
	echo "== identify(gallery, probe, k => 10, refine => 'none' / '$refine') through the service, ${secs} s per run"
	for c in $clients; do
		for ((i = 1; i <= rounds; i++)); do
			pgbench_run "$c" "$dir/identify-none.sql" "round $i, none"
			p50_none=$p50_ms; srv_none=$srv_ms
			pgbench_run "$c" "$dir/identify-$refine.sql" "round $i, $refine"
			echo "   round $i, $c client(s): $refine / none: p50 $(calc "$p50_ms / $p50_none" 2)x," \
				"server CPU $(calc "$srv_ms / $srv_none" 2)x"
		done
	done
	exit 0
fi

cat >"$dir/identify.sql" <<'EOF'
\set p random(1, 200)
SELECT count(*) FROM identify('gallery', (SELECT tpl FROM probes WHERE pid = :p), 10);
EOF
echo "== identify(gallery, probe, k => 10) through the service, ${secs} s per run (load average $(cut -d' ' -f1-3 /proc/loadavg))"
for c in 1 4 16; do
	pgbench_run "$c" "$dir/identify.sql" "identify()"
done

# one batching measurement: $1 = label, $2 = SQL over probes 1..$nb
batch_run() {
	local cpu0 cpu1 t0 t1
	cpu0=$(engine_cpu)
	t0=$(date +%s.%N)
	psql_ -c "$2" >/dev/null
	t1=$(date +%s.%N)
	cpu1=$(engine_cpu)
	rate=$(calc "$nb / ($t1 - $t0)" 3)
	printf "   %s: %.2f probes/s, engine CPU %.1f ms per probe" "$1" "$rate" "$(calc "($cpu1 - $cpu0) * 1000 / $nb" 1)"
}

echo "== batching: $nb probes, 1 session"
batch_run "one identify() call per probe" \
	"SELECT count(*) FROM probes, identify('gallery', tpl, 10) WHERE pid <= $nb"
seq_rate=$rate
echo
for b in 4 16 $nb; do
	batch_run "identify_batch() of $b probes" \
		"SELECT count(*) FROM (SELECT (pid - 1) / $b AS grp, array_agg(tpl) AS ps FROM probes
		 WHERE pid <= $nb GROUP BY 1) g, identify_batch('gallery', g.ps, 10)"
	echo " ($(calc "$rate / $seq_rate" 2)x)"
done

echo "== backend scan without the service (mcc.service = off), 1 session, 3 probes"
t0=$(date +%s.%N)
psql_ -c "SET mcc.service = off; SELECT count(*) FROM probes, identify('gallery', tpl, 10) WHERE pid <= 3" >/dev/null
t1=$(date +%s.%N)
printf "   %.2f s per identify()\n" "$(calc "($t1 - $t0) / 3" 3)"
