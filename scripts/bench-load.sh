#!/usr/bin/env bash
# bench-load.sh: a full load of a gallery from its table into the matcher
# engine, with the time of each stage (issue 19, part 1; docs/benchmarks.md,
# "Gallery load").
#
#   scripts/bench-load.sh [gallery size, default 200000] [rounds, default 3]
#
# Needs mcc installed (make install) and runs as a user PostgreSQL accepts
# (not root). By default it starts a throwaway cluster (removed at the end;
# MCC_BENCH_KEEP=1 keeps it); with MCC_BENCH_EXISTING=1 it uses the server
# that psql reaches through PGHOST/PGPORT/PGUSER instead (on the GPU machine
# the device kit's, as test/gpu/device-e2e.sh starts it; it must run on this
# machine, whose /proc the script reads). It enrols a synthetic gallery
# (table bench_load_gallery, kept between runs of the same size; with
# MCC_BENCH_TABLE=name an existing table of the caller's instead, which it
# registers if needed), then per round forces a full load with
# mcc_gallery_preload() as the table's owner and prints:
#   - rows/s of the whole preload (wall clock);
#   - the backend's CPU seconds (heap scan, detoast, framing, socket writes)
#     and the engine's (frame parse, template checks, cache build), from
#     /proc, and the engine's own load time (mcc_gallery_status);
#   - the first identify() after it (it waits for the GPU upload, if any).
# MCC_BENCH_WORKERS="0 4" runs each round once per mcc.load_workers setting
# listed, in turn (default: the server's; 0 = one reader, the loading backend);
# the parallel workers' CPU seconds come from
# the postmaster's reaped children (nothing else exits during a load here).
# MCC_BENCH_ENGINES="path/a/mcc_engine path/b/mcc_engine" alternates engine
# builds in the same call: each round once per engine listed, in turn (the
# binary installed over the running engine's file, the engine stopped, the
# service's supervisor starting the new one), so that two trees' engines
# are compared on the same machine, table and server (the last one listed
# stays installed).
# MCC_BENCH_PERF=1 also samples the backend and the engine with perf during
# one more load, splits the load's CPU by process and engine thread (main,
# the pool's, the load's own prefault threads) and zeroing of new memory,
# and the backend's by symbol into heap scan, detoast, framing, socket and
# other (the shares of docs/benchmarks.md, "The engine's load CPU"). The
# engine's stages in process: build/bench/engine_load.
set -euo pipefail
n=${1:-200000}
rounds=${2:-3}
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
now() { date +%s.%N; }
# CPU seconds (user + system) of a process, from /proc (0 if gone)
cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); split($0, f, " "); printf "%.3f", (f[12] + f[13]) / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}

if [ -n "${MCC_BENCH_EXISTING:-}" ]; then
	psql_() { psql -X -q -v ON_ERROR_STOP=1 "$@" "${PGDATABASE:-postgres}"; }
	log=
else
	bench_cluster 54333 <<CONF
max_connections = 20
mcc.fallback = 'error'
CONF
	log=$dir/server.log
	psql_ -c "CREATE EXTENSION mcc" >/dev/null
fi
bench_wait_ready

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
tbl=${MCC_BENCH_TABLE:-bench_load_gallery}
have=-1
[ "$(psql_ -tAc "SELECT to_regclass('$tbl') IS NOT NULL")" = t ] &&
	have=$(psql_ -tAc "SELECT count(*) FROM $tbl")
if [ -n "${MCC_BENCH_TABLE:-}" ]; then
	[ "$have" -ge 0 ] || { echo "no table $tbl"; exit 1; }
	n=$have
elif [ "$have" != "$n" ]; then
	echo "== enrolling $n synthetic templates (4 sessions)"
	psql_ -c "DROP TABLE IF EXISTS bench_load_gallery;
		CREATE TABLE bench_load_gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL)"
	per=$(((n + 3) / 4))
	for s in 0 1 2 3; do
		first=$((s * per))
		cnt=$((n - first < per ? n - first : per))
		[ "$cnt" -gt 0 ] &&
			psql_ -c "INSERT INTO bench_load_gallery SELECT finger, template FROM mcc_synthetic($cnt, 1, 1, $first)" &
	done
	wait
	psql_ -c "VACUUM ANALYZE bench_load_gallery"
fi
psql_ -tAc "SELECT mcc_gallery_register('$tbl')
	WHERE NOT EXISTS (SELECT 1 FROM mcc_gallery_status WHERE gallery = '$tbl'::regclass)" >/dev/null
psql_ -c "CREATE TABLE IF NOT EXISTS bench_load_probe AS
	SELECT template AS tpl FROM mcc_synthetic(1, 2, 1) WHERE impression = 1" >/dev/null
echo "   heap $(psql_ -tAc "SELECT pg_size_pretty(pg_table_size('$tbl'))"), engine threads: $(psql_ -tAc "SHOW mcc.worker_threads") (0: one per core)"

# CPU seconds of the reaped children of a process (cutime + cstime)
child_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); split($0, f, " "); printf "%.3f", (f[14] + f[15]) / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}
pm_pid=$(head -1 "$(psql_ -tAc "SHOW data_directory")/postmaster.pid" 2>/dev/null || echo 0)

# One forced full load, timed: wall, backend CPU, engine CPU, engine's own seconds.
# The session runs in the background so that its backend's pid is known first.
load_once() {
	local fifo=$1 pid epid t0 t1 b0 b1 e0 e1 w0 w1 rows eng
	pid=$(head -1 "$fifo.pid")
	epid=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status()")
	b0=$(cpu "$pid")
	e0=$(cpu "$epid")
	w0=$(child_cpu "$pm_pid")
	t0=$(now)
	echo "SELECT mcc_gallery_preload('$tbl');" >&3
	echo "\\echo done" >&3
	read -r rows <&4
	read -r _ <&4
	t1=$(now)
	b1=$(cpu "$pid")
	e1=$(cpu "$epid")
	w1=$(child_cpu "$pm_pid")
	eng=$(psql_ -tAc "SELECT round(load_seconds::numeric, 3) FROM mcc_gallery_status WHERE gallery = '$tbl'::regclass")
	echo "   $rows rows in $(calc "$t1 - $t0" 3) s: $(calc "$rows / ($t1 - $t0)" 0) rows/s;" \
		"backend $(calc "$b1 - $b0" 3) CPU-s, parallel workers $(calc "$w1 - $w0" 3) CPU-s," \
		"engine $(calc "$e1 - $e0" 3) CPU-s (engine's load $eng s)"
	t0=$(now)
	psql_ -tAc "SELECT count(*) FROM identify('$tbl', (SELECT tpl FROM bench_load_probe), 5)" >/dev/null
	echo "   first identify() after it: $(calc "$(now) - $t0" 3) s"
}

# a session of our own whose backend pid we know, fed through fifos
work=$(mktemp -d /tmp/mcc-bench-load.XXXXXX)
mkfifo "$work/in" "$work/out"
psql_ -tA <"$work/in" >"$work/out" 2>&1 &
psql_pid=$!
exec 3>"$work/in" 4<"$work/out"
# the load's progress NOTICEs would come through the fifo
echo "SET client_min_messages = warning;" >&3
echo "SELECT pg_backend_pid();" >&3
read -r bpid <&4
echo "$bpid" >"$work/s.pid"
# mcc.load_workers for the loads that follow
set_workers() {
	echo "SET mcc.load_workers = $1;" >&3
	echo "\\echo set" >&3
	read -r _ <&4
	echo "   mcc.load_workers = $1"
}
if [ -n "$log" ]; then
	# our own cluster: the parallel workers' CPU (start-up, reading) in its log
	echo "SET log_min_messages = debug1;" >&3
	echo "\\echo set" >&3
	read -r _ <&4
fi
# install engine binary $1 and have the supervisor start it (MCC_BENCH_ENGINES)
use_engine() {
	local exe epid
	epid=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status()")
	exe=$(readlink "/proc/$epid/exe") || { echo "no engine to replace"; exit 1; }
	# a new file (the running one is busy), renamed over the installed one
	install -m 755 "$1" "$exe.new" && mv -f "$exe.new" "$exe" || exit 1
	kill "$epid"
	# ready, and a new engine (one query: the old one says ready until it exits)
	until p=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status() WHERE state = 'ready'" 2>/dev/null) &&
		[ "${p:-0}" -gt 0 ] && [ "$p" != "$epid" ]; do
		sleep 0.1
	done
	# its first load may come from the cache snapshot the last engine wrote: not counted
	t0=$(now)
	psql_ -tAc "SELECT mcc_gallery_preload('$tbl')" >/dev/null
	echo "   engine $1 ($(md5sum <"$1" | cut -c1-8)); its first load (not counted) $(calc "$(now) - $t0" 3) s"
}
echo "== full loads (mcc_gallery_preload by the owner), backend pid $bpid"
for r in $(seq 1 "$rounds"); do
	for e in ${MCC_BENCH_ENGINES:-installed}; do
		[ "$e" = installed ] || use_engine "$e"
		for w in ${MCC_BENCH_WORKERS:-default}; do
			[ "$w" = default ] || set_workers "$w"
			load_once "$work/s"
		done
	done
done
if [ -n "${MCC_BENCH_PERF:-}" ] && command -v perf >/dev/null; then
	echo "== perf of the backend and the engine during one more load"
	epid=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status()")
	# the engine's threads before the load: main, searches, image jobs, load pool
	old_tids=" $(ls "/proc/$epid/task" 2>/dev/null | tr '\n' ' ') "
	perf record -q -g -F 1999 -p "$bpid,$epid" -o "$work/perf.data" >/dev/null 2>&1 &
	perf_pid=$!
	sleep 0.5
	load_once "$work/s"
	kill -INT "$perf_pid" 2>/dev/null || true
	wait "$perf_pid" 2>/dev/null || true
	echo "   the load's CPU by process, thread and kind (zeroing: the kernel clearing new pages)"
	perf report -i "$work/perf.data" --no-children --sort pid,sym --stdio -g none 2>/dev/null |
		awk -v b="$bpid" -v e="$epid" -v old="$old_tids" '/^ +[0-9.]+%/ { p = $1; sub(/%/, "", p);
			split($2, a, ":"); t = a[1]; s = $NF;
			if (t == b) r = "backend"; else if (t == e) r = "engine main thread";
			else if (index(old, " " t " ")) r = "engine pool threads";
			else r = "engine threads of the load (prefault)";
			k = "other"; if (s ~ /clear_page|clear_huge|folio_zero/) k = "zeroing";
			share[r ", " k] += p }
			END { for (c in share) printf "   %-50s %5.1f%%\n", c, share[c] }' | sort
	echo "   the backend's part by kind (shares of the load's CPU, as above)"
	perf report -i "$work/perf.data" --no-children --pid "$bpid" --sort sym --stdio 2>/dev/null |
		awk '/^ +[0-9.]+%/ { p = $1; sub(/%/, "", p); s = $NF;
			c = "other";
			if (s ~ /toast|pglz|lz4|detoast|varlena/) c = "detoast";
			else if (s ~ /^heap|Heap|Buffer|[Pp]age|tuple|Tuple|XidInMVCC|TransactionId|clog|SimpleLru|hash_search|LWLock|slot_/) c = "heap scan";
			else if (s ~ /mcc_put|StringInfo|memcpy|memmove|mcc_key|add_row|mcc_load/) c = "framing";
			else if (s ~ /send|sock|unix_|skb|tcp|mcc_conn|write|copy_user|copy_to|fault|page_|pvm/) c = "socket and kernel";
			share[c] += p }
			END { for (c in share) printf "   %-18s %5.1f%%\n", c, share[c] }' | sort -k2 -t'%' -rn
	perf report -i "$work/perf.data" --no-children --pid "$bpid" --sort sym --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' | head -15 | sed 's/^/      /'
fi
exec 3>&- 4<&-
wait "$psql_pid" 2>/dev/null || true
rm -rf "$work"
[ -n "$log" ] && grep -E "mcc_engine.*(loaded:|GPU|upload)" "$log" | tail -4 | sed 's/^/   /' || true
[ -n "$log" ] && grep -oE "read by [0-9]+ parallel workers.*" "$log" | sed 's/^/   /' || true
