#!/usr/bin/env bash
# bench-backend-cpu.sh: the calling backend's own CPU time per identify()
# through the matcher service (docs/benchmarks.md, "Where a refining
# identify() spends its time"): the part of a refined search that the
# backend pays (reading the RESULT, judging and ranking candidates), apart
# from the engine's work and from the load of other jobs on the machine.
#
#   scripts/bench-backend-cpu.sh [gallery size, default 50000] [refine_fraction, default 0.08]
#
# Needs mcc installed and runs as a user PostgreSQL accepts (not root);
# PATH may point at another installation. A throwaway cluster, a synthetic
# gallery registered and preloaded, 20 probes (second impressions); then for
# refine => 'none' and refine => 'fused', 5 rounds of identify() over the
# 20 probes in one session, the backend's utime + stime from /proc before
# and after, per identify(). MCC_BENCH_PERF=1 also records the backend with
# perf (perf-<method>.data in the cluster's directory, kept).
set -euo pipefail
n=${1:-50000}
frac=${2:-0.08}
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
# perf's records stay in the cluster's directory
[ -z "${MCC_BENCH_PERF:-}" ] || MCC_BENCH_KEEP=1

bench_cluster 54399 <<EOC
shared_buffers = '512MB'
fsync = off
mcc.worker_threads = 2
EOC
bench_service_ready
psql_ -c "CREATE TABLE g(id bigint PRIMARY KEY, tpl mcc_template)" \
	-c "INSERT INTO g SELECT finger, template FROM mcc_synthetic($n)" \
	-c "SELECT mcc_gallery_register('g')" \
	-c "CREATE TABLE pr AS SELECT finger AS id, template AS tpl FROM mcc_synthetic(20, 2) WHERE impression = 1" >/dev/null
psql_ -c "SELECT * FROM mcc_gallery_preload('g')" >/dev/null
echo "== $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); gallery $n, mcc.refine_fraction $frac"
q="SELECT count(*) FROM pr, identify('g', pr.tpl, 10, refine => '%s');"
for method in none fused; do
	coproc P { psql -X -q -h "$dir" -p "$port" -U postgres -At postgres; }
	echo "SET mcc.refine_fraction = $frac; SET mcc.fallback = 'error'; SELECT pg_backend_pid();" >&"${P[1]}"
	read -r pid <&"${P[0]}"
	printf "$q\n" "$method" >&"${P[1]}"; read -r _ <&"${P[0]}"	# warm-up
	t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	if [ -n "${MCC_BENCH_PERF:-}" ]; then
		perf record -F 2000 -g -p "$pid" -o "$dir/perf-$method.data" 2>/dev/null & pp=$!
		sleep 0.5
	fi
	for _ in 1 2 3 4 5; do printf "$q\n" "$method" >&"${P[1]}"; read -r _ <&"${P[0]}"; done
	[ -n "${MCC_BENCH_PERF:-}" ] && { kill -INT "$pp"; wait "$pp" 2>/dev/null || true; }
	t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	ticks=$(getconf CLK_TCK)
	echo "refine => '$method': backend CPU $(awk "BEGIN { printf \"%.2f\", ($t1 - $t0) * 1000 / $ticks / 100 }") ms per identify() (100 calls)"
	echo '\q' >&"${P[1]}"
	wait "$P_PID" 2>/dev/null || true
done
