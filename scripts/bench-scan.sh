#!/usr/bin/env bash
# bench-scan.sh: identify()'s backend scan (mcc.service = off) in template
# matches per CPU-second of the backend (docs/benchmarks.md, "Backend scan").
#
#   scripts/bench-scan.sh [gallery size, default 100000] [rounds, default 5]
#
# Needs mcc installed and runs as a user PostgreSQL accepts (not root); PATH
# may point at another installation (its bin directory first). Starts a
# throwaway cluster (shared_buffers 1 GB: the gallery stays in memory),
# enrols a synthetic gallery (and the same rows inline and with STORAGE
# main), then measures in rounds: identify() with refine => 'none' (the LSS
# scan alone, what mccbench measures) and with the default refinement for
# 10 probes (second impressions of gallery fingers), each between two
# rounds of mccbench's kernel (one thread) on the same shape: the gallery's
# size, the same probes. Figures are matches (probes x rows) per CPU-second
# of the backend, and its share of the kernel's matches per CPU-second
# measured seconds before and after it; each is printed per round, then
# its median and range over the rounds. Both sides' CPU time is the
# thread's time on a CPU (/proc/self/schedstat, CLOCK_THREAD_CPUTIME_ID),
# which other load on the machine inflates far less than wall time.
# MCCBENCH=path (default build/bench/mccbench next to this script; without
# it the backend's figures alone), MCCBENCH_KERNEL=name (default avx512).
# MCC_BENCH_KINDS=list: some of none,default,inline,main (default all).
# Removes the cluster at the end (MCC_BENCH_KEEP=1 keeps it).
# MCC_BENCH_DIR=dir keeps the cluster in dir and reuses it (and its gallery)
# on the next run: to compare two installations on the same gallery, run
# the script once with each PATH (enrolling 100,000 synthetic templates
# takes minutes on a small VM).
set -euo pipefail
n=${1:-100000}
reps=${2:-5}
port=${MCC_BENCH_PORT:-54337}
command -v pg_ctl >/dev/null || export PATH="$(pg_config --bindir):$PATH"
dir=${MCC_BENCH_DIR:-$(mktemp -d /tmp/mcc-bench-scan.XXXXXX)}
cleanup() {
	pg_ctl -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
	[ -n "${MCC_BENCH_KEEP:-}${MCC_BENCH_DIR:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
psql_() { psql -X -q -h "$dir" -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@" postgres; }

reuse=
if [ -f "$dir/data/PG_VERSION" ]; then
	reuse=1
else
	mkdir -p "$dir"
	initdb -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log"
	cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
shared_buffers = '1GB'
fsync = off
EOF
fi
pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$reuse" ] || psql_ <<EOF
CREATE EXTENSION mcc;
CREATE TABLE gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($n, 1, 1, 0);
EOF
# The same rows with every template inline (a DBA's choice: toast_tuple_target
# = 8160 keeps values of up to about 8 kB in the heap page, docs/benchmarks.md).
psql_ <<EOF
CREATE TABLE IF NOT EXISTS gallery_inline (id bigint PRIMARY KEY, tpl mcc_template NOT NULL)
	WITH (toast_tuple_target = 8160);
INSERT INTO gallery_inline SELECT * FROM gallery WHERE NOT EXISTS (SELECT FROM gallery_inline);
EOF
# And with STORAGE main (inline, compressed where pglz saves a quarter: about
# 80 % of the synthetic templates over 2 kB; docs/benchmarks.md, fourth pass).
psql_ <<EOF
CREATE TABLE IF NOT EXISTS gallery_main (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
ALTER TABLE gallery_main ALTER tpl SET STORAGE main, ALTER tpl SET COMPRESSION pglz;
INSERT INTO gallery_main SELECT * FROM gallery WHERE NOT EXISTS (SELECT FROM gallery_main);
EOF
psql_ <<EOF
DROP TABLE IF EXISTS probe;
CREATE TABLE probe AS SELECT template AS tpl FROM generate_series(0, 9) i,
	mcc_synthetic(1, 2, 1, (i * 997) % $n) WHERE impression = 1;
EOF
# all-visible pages, as autovacuum leaves a table that is not being written
psql_ -c "VACUUM ANALYZE gallery, gallery_inline, gallery_main"
psql_ -tAc "SELECT 'gallery: ' || count(*) || ' templates, ' || round(avg(mcc_cylinder_count(tpl)), 2) || ' cylinders on average (probes ' || (SELECT round(avg(mcc_cylinder_count(tpl)), 2) FROM probe) || '), ' || pg_size_pretty(pg_total_relation_size('gallery')) || ' with its TOAST table (' || pg_size_pretty(pg_relation_size((SELECT reltoastrelid FROM pg_class WHERE relname = 'gallery'))) || '), ' || (SELECT round(100.0 * relallvisible / relpages) FROM pg_class WHERE relname = 'gallery') || ' % of its pages all-visible' FROM gallery"

# The kernel alone, for comparison: mccbench (one thread) on the same shape:
# the gallery's size, the same probes (second impressions of fingers 0, 997,
# .., 8973), rounds on request (-I) so that they interleave with the backend's.
bench=${MCCBENCH:-$(dirname "$0")/../build/bench/mccbench}
kernel=${MCCBENCH_KERNEL:-avx512}
if [ -x "$bench" ]; then
	# (bash warns that this coprocess still exists when the next starts: both do)
	coproc KERN { "$bench" -n "$n" -u "$((n < 20000 ? n : 20000))" -p 10 -P 997 -g synth -k "$kernel" -I; }
else
	echo "== mccbench not found at $bench: the backend alone"
	kernel=
fi
# One session: a warm-up of each kind, then $reps rounds. A round measures
# each kind once (10 identifications, the backend's CPU time around them),
# each between two rounds of the kernel: its share is its rate over the mean
# of the kernel's just before and just after, seconds apart, rather than
# against a kernel figure taken minutes away (the machine's speed drifts by a
# quarter to a half within minutes on a shared VM). CPU time on both sides
# is the thread's time on a CPU in nanoseconds (the backend reads its own
# /proc/self/schedstat, the clock of mccbench's CLOCK_THREAD_CPUTIME_ID).
coproc PSQL { psql_ -tA; }
sql() {
	echo "$1" >&"${PSQL[1]}"
	IFS= read -r reply <&"${PSQL[0]}"
}
sql "SET mcc.service = off; SELECT 1;"
sql "CREATE FUNCTION pg_temp.ns() RETURNS bigint LANGUAGE sql AS
\$\$ SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint \$\$;
CREATE FUNCTION pg_temp.run(g regclass, how text) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE c0 bigint := pg_temp.ns(); t0 timestamptz := clock_timestamp();
BEGIN
	IF how = 'none' THEN
		PERFORM count(*) FROM probe, identify(g, probe.tpl, 10, refine => 'none');
	ELSE
		PERFORM count(*) FROM probe, identify(g, probe.tpl, 10);
	END IF;
	RETURN ((pg_temp.ns() - c0) / 1e9)::text || ' ' || extract(epoch FROM clock_timestamp() - t0)::text;
END \$\$; SELECT 1;"
# what is measured: MCC_BENCH_KINDS, a comma-separated subset of these labels
kinds=()
labels=()
for k in "none|none gallery" "default|default gallery" "inline|none gallery_inline" "main|none gallery_main"; do
	case ",${MCC_BENCH_KINDS:-none,default,inline,main}," in
	*",${k%%|*},"*)
		kinds+=("${k#*|}")
		labels+=("$(sed 's/ gallery_/ /; s/ gallery$//' <<<"${k#*|}")")
		;;
	esac
done
for k in "${kinds[@]}"; do
	read -r how tbl <<<"$k"
	sql "SELECT pg_temp.run('$tbl', '$how');"
done
kern_rate=
kern() {
	echo go >&"${KERN[1]}"
	IFS=' ' read -r _ kcpu _ matches <&"${KERN[0]}"
	kern_rate=$(awk -v m="$matches" -v c="$kcpu" 'BEGIN { printf "%.4f", m / c / 1e6 }')
}
if [ -n "$kernel" ]; then
	reply='#'
	while [ "${reply:0:1}" = '#' ]; do
		IFS= read -r reply <&"${KERN[0]}"	# the gallery's description first
	done
	[ "$reply" = "ready $kernel" ] || { echo "mccbench: $reply"; exit 1; }
	kern
	kern
fi
log=$dir/rounds.log
: >"$log"
for r in $(seq "$reps"); do
	line="round $r:"
	sep=' '
	[ -z "$kernel" ] || { line="$line kernel $kern_rate"; sep=', '; }
	for i in "${!kinds[@]}"; do
		read -r how tbl <<<"${kinds[$i]}"
		before=$kern_rate
		sql "SELECT pg_temp.run('$tbl', '$how');"
		read -r cpu wall <<<"$reply"
		rate=$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.4f", 10 * n / c / 1e6 }')
		share=
		if [ -n "$kernel" ]; then
			kern
			share=$(awk -v r="$rate" -v a="$before" -v b="$kern_rate" 'BEGIN { printf "%.4f", 2 * r / (a + b) }')
			echo "kernel $kern_rate" >>"$log"
		fi
		echo "${labels[$i]}|$rate|$share|$cpu|$wall" >>"$log"
		line="$line$sep${labels[$i]} $rate${share:+ ($(awk -v s="$share" 'BEGIN { printf "%.0f %%", 100 * s }'))}"
		sep=', '
	done
	echo "$line"
done
echo '\q' >&"${PSQL[1]}"
# medians and ranges over the rounds
awk -F'|' -v kernel="$kernel" '
function median(a, m,    t, i, j, x) {
	for (i = 1; i <= m; i++) t[i] = a[i];
	for (i = 2; i <= m; i++) { x = t[i]; for (j = i - 1; j >= 1 && t[j] > x; j--) t[j + 1] = t[j]; t[j + 1] = x }
	lo = t[1]; hi = t[m];
	return m % 2 ? t[(m + 1) / 2] : (t[m / 2] + t[m / 2 + 1]) / 2
}
/^kernel / { split($0, f, " "); kr[++nk] = f[2]; next }
{
	if (!($1 in cnt)) order[++nl] = $1;
	c = ++cnt[$1]; rate[$1, c] = $2; share[$1, c] = $3; cpu[$1] += $4; wall[$1] += $5
}
END {
	if (nk > 0) { med = median(kr, nk); printf "kernel (mccbench %s, SoA, one thread): median %.3f M matches per CPU-second (%.3f-%.3f) over %d rounds\n", kernel, med, lo, hi, nk }
	for (l = 1; l <= nl; l++) {
		k = order[l]; m = cnt[k];
		for (i = 1; i <= m; i++) { a[i] = rate[k, i]; s[i] = share[k, i] }
		med = median(a, m); rlo = lo; rhi = hi;
		printf "refine %-12s %d rounds of 10 probes: median %.3f M matches per CPU-second (%.3f-%.3f), CPU %.4f s per identify(), wall %.4f s", k, m, med, rlo, rhi, cpu[k] / m / 10, wall[k] / m / 10;
		if (nk > 0) { med = median(s, m); printf "; share of the kernel: median %.0f %% (%.0f-%.0f %%)", 100 * med, 100 * lo, 100 * hi }
		printf "\n"
	}
}' "$log"
