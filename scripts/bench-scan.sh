#!/usr/bin/env bash
# bench-scan.sh: identify()'s backend scan (mcc.service = off) in template
# matches per CPU-second of the backend (docs/benchmarks.md, "Backend scan").
#
#   scripts/bench-scan.sh [gallery size, default 100000] [identifications, default 5]
#
# Needs mcc installed and runs as a user PostgreSQL accepts (not root); PATH
# may point at another installation (its bin directory first). Starts a
# throwaway cluster (shared_buffers 1 GB: the gallery stays in memory),
# enrols a synthetic gallery, then runs identify() with refine => 'none'
# (the LSS scan alone, what mccbench measures) and with the default
# refinement for 10 probes (second impressions of gallery fingers), a few
# times each after one warm-up. The backend's CPU time (user + system, from
# /proc/self/stat read by the backend itself) divided into the matches
# (probes x rows) gives matches per CPU-second: a figure that other load on
# the machine inflates far less than wall-clock time. Then, for comparison,
# mccbench (the scan kernel alone, one thread, CPU time) on the same shape:
# the gallery's size, the same probes (second impressions of fingers
# 0, 997, .. 8973) (MCCBENCH=path, default build/bench/mccbench next to this script;
# skipped if absent; MCCBENCH_KERNELS=list, default avx512,avx2). Removes the cluster at the end (MCC_BENCH_KEEP=1
# keeps it). MCC_BENCH_DIR=dir keeps the cluster in dir and reuses it (and
# its gallery) on the next run: to compare two installations on the same
# gallery, run the script once with each PATH (enrolling 100,000 synthetic
# templates takes minutes on a small VM).
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

# One session: a warm-up, then $reps identifications of each kind, each with
# the backend's own CPU time around it.
hz=$(getconf CLK_TCK)
psql_ -tA <<EOF
SET mcc.service = off;
CREATE FUNCTION pg_temp.cpu() RETURNS float8 LANGUAGE sql AS
-- utime and stime: fields 14 and 15, 12 and 13 after the command's name
\$\$ SELECT (split_part(s, ' ', 12)::float8 + split_part(s, ' ', 13)::float8) / $hz
   FROM (SELECT split_part(pg_read_file('/proc/self/stat'), ') ', 2) AS s) x \$\$;
SELECT count(*) FROM probe, identify('gallery', probe.tpl, 10, refine => 'none');
SELECT count(*) FROM probe, identify('gallery_inline', probe.tpl, 10, refine => 'none');
SELECT count(*) FROM probe, identify('gallery_main', probe.tpl, 10, refine => 'none');
CREATE TEMP TABLE runs (refine text, cpu float8, wall float8);
DO \$\$
DECLARE c0 float8; t0 timestamptz; m text;
BEGIN
	FOREACH m IN ARRAY ARRAY['none', 'default', 'none inline', 'none main'] LOOP
		FOR i IN 1..$reps LOOP
			c0 := pg_temp.cpu(); t0 := clock_timestamp();
			IF m = 'none' THEN
				PERFORM count(*) FROM probe, identify('gallery', probe.tpl, 10, refine => 'none');
			ELSIF m = 'none inline' THEN
				PERFORM count(*) FROM probe, identify('gallery_inline', probe.tpl, 10, refine => 'none');
			ELSIF m = 'none main' THEN
				PERFORM count(*) FROM probe, identify('gallery_main', probe.tpl, 10, refine => 'none');
			ELSE
				PERFORM count(*) FROM probe, identify('gallery', probe.tpl, 10);
			END IF;
			INSERT INTO runs VALUES (m, pg_temp.cpu() - c0,
				extract(epoch FROM clock_timestamp() - t0));
		END LOOP;
	END LOOP;
END \$\$;
SELECT format('refine %-12s %s runs of 10 probes: CPU %s s per identify() (min %s), wall %s s: %s M matches per CPU-second (best run %s)',
		refine, count(*), round((avg(cpu) / 10)::numeric, 4), round((min(cpu) / 10)::numeric, 4),
		round((avg(wall) / 10)::numeric, 4),
		round((10 * $n / avg(cpu) / 1e6)::numeric, 3), round((10 * $n / min(cpu) / 1e6)::numeric, 3))
	FROM runs GROUP BY refine ORDER BY refine = 'default', refine;
EOF

bench=${MCCBENCH:-$(dirname "$0")/../build/bench/mccbench}
if [ -x "$bench" ]; then
	echo "== mccbench: the scan kernel alone on the same shape"
	"$bench" -n "$n" -u "$((n < 20000 ? n : 20000))" -p 10 -P 997 -g synth -r 3 -k "${MCCBENCH_KERNELS:-avx512,avx2}" | grep -v '^# built'
else
	echo "== mccbench not found at $bench: skipped"
fi
