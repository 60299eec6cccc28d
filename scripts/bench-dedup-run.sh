#!/usr/bin/env bash
# bench-dedup-run.sh: the deduplication measurement on a running cluster
# with mcc and the matcher service (docs/dedup.md, docs/benchmarks.md,
# "Deduplication"). Called by scripts/bench-dedup.sh (a throwaway cluster on
# this machine) and test/gpu/device-dedup.sh (the device kit's server);
# psql's connection comes from the environment (PGHOST, PGPORT, PGUSER).
#
#   scripts/bench-dedup-run.sh [gallery size N, default 100000] [probes, default all]
#
# The gallery: impression 0 of synthetic fingers 0 .. N - D - 1 (seed 1)
# and impression 1 of fingers 0 .. D - 1 (D = N / 100, keys from N - D):
# D enrolled twice, the duplicates to find. Enrolment in $MCC_BENCH_SESSIONS
# sessions (default: the CPUs), registered and preloaded, then
#   mcc_dedup('gallery', max_rows => probes) under mcc.fallback = error
# (every LSS pass in the matcher engine, GPU or CPU threads): the time,
# the pairs found, the duplicates among them, probes/s and LSS matches/s.
# MCC_BENCH_BATCH sets batch_size (default 256), MCC_BENCH_DEDUP_ARGS adds
# arguments (e.g. ", lss_fmr => 0.0001"). MCC_BENCH_DEDUP_PARTS = P (default
# 1): P sessions at once, each mcc_dedup() over its P-th of the probes by key
# (start_after, max_rows; docs/dedup.md, "Several sessions"), their pairs
# together.
set -euo pipefail
n=${1:-100000}
rows=${2:-$n}
d=$((n / 100))
sessions=${MCC_BENCH_SESSIONS:-$(nproc)}
batch=${MCC_BENCH_BATCH:-256}
parts=${MCC_BENCH_DEDUP_PARTS:-1}
extra=${MCC_BENCH_DEDUP_ARGS:-}
psql_() { psql -X -q -v ON_ERROR_STOP=1 "$@" postgres; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }
now() { date +%s.%N; }

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== enrolling $n synthetic templates, $d of them second impressions of others ($sessions sessions)"
# an earlier run's tables on a kept cluster (a second tree's run in one device call)
psql_ -c "DROP TABLE IF EXISTS gallery, pairs$(seq 0 $((parts - 1)) | sed 's/^/, pairs_/' | tr -d '\n');
	CREATE TABLE gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL)"
t0=$(now)
m=$((n - d))
per=$(((m + sessions - 1) / sessions))
for ((s = 0; s < sessions; s++)); do
	first=$((s * per))
	cnt=$((m - first < per ? m - first : per))
	[ "$cnt" -gt 0 ] && psql_ -c "INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($cnt, 1, 1, $first)" &
done
wait
[ "$d" -gt 0 ] && psql_ -c "INSERT INTO gallery SELECT $m + finger, template FROM mcc_synthetic($d, 2, 1) WHERE impression = 1"
t1=$(now)
psql_ -c "VACUUM ANALYZE gallery"
echo "   enrolled in $(calc "$t1 - $t0" 1) s"
psql_ -c "SELECT mcc_gallery_register('gallery')" >/dev/null
t0=$(now)
psql_ -tAc "SELECT mcc_gallery_preload('gallery')" >/dev/null
t1=$(now)
echo "   mcc_gallery_preload: $(calc "$t1 - $t0") s"
# the first search waits for the GPU upload that may follow the load
psql_ -tAc "SET mcc.fallback = error; SELECT count(*) FROM identify('gallery', (SELECT tpl FROM gallery WHERE id = 0), 1)" >/dev/null
psql_ -c "SELECT entries, device, pg_size_pretty(host_bytes) AS host, pg_size_pretty(device_bytes) AS device_mem FROM mcc_gallery_status"
psql_ -c "SELECT * FROM mcc_dedup_settings('gallery', 0.0001, NULL, 0.001, NULL, NULL, NULL, NULL)"

echo "== mcc_dedup('gallery', max_rows => $rows, batch_size => $batch$extra), mcc.fallback = error, $parts session(s)"
chunk=$(((rows + parts - 1) / parts))
pids=()
t0=$(now)
for ((s = 0; s < parts; s++)); do
	# keys are 0 .. N - 1: session s takes the probes after key s * chunk - 1
	psql_ -c "SET mcc.fallback = error; SET client_min_messages = warning;
		CREATE TABLE pairs_$s AS SELECT * FROM mcc_dedup('gallery', start_after => $((s * chunk - 1)),
			max_rows => $((rows - s * chunk < chunk ? rows - s * chunk : chunk)), batch_size => $batch$extra)" &
	pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
t1=$(now)
union=$(seq 0 $((parts - 1)) | sed 's/.*/SELECT * FROM pairs_&/' | paste -sd'|' | sed 's/|/ UNION ALL /g')
res=$(psql_ -tA -F ' ' -c "CREATE TABLE pairs AS $union;
	SELECT count(*), count(*) FILTER (WHERE id_b = id_a + $m) FROM pairs")
read -r pairs dups <<<"$(echo "$res" | tail -1)"
secs=$(calc "$t1 - $t0" 1)
# probes a take rows a .. N - 1 of the gallery in key order; every pass
# scores each probe against all N rows
mm=$(calc "$rows * $n / ($t1 - $t0) / 1e6" 2)
dmax=$(psql_ -tAc "SELECT count(*) FROM (SELECT id FROM gallery ORDER BY id LIMIT $rows) r WHERE id < $d")
echo "   $rows probes of $n rows in $secs s ($(calc "$rows / ($t1 - $t0)" 1) probes/s, $mm M LSS matches/s)"
echo "   $pairs pairs; $dups of the $dmax duplicates whose first row is among the probes"
psql_ -c "SELECT round(lss::numeric, 2) AS lss, count(*) FROM pairs WHERE id_b <> id_a + $m GROUP BY 1 ORDER BY 1" | head -20
psql_ -c "SELECT device, searches FROM mcc_gallery_status"
