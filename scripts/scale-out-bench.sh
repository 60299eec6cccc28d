#!/usr/bin/env bash
# scale-out-bench.sh: identify() per second through the coordinator with 1
# and with 3 shards, same gallery, and on one server without PL/Proxy
# (docs/scale-out.md records the results).
#
#   scripts/scale-out-bench.sh [-f FINGERS] [-t SECONDS] [-c "CLIENTS ..."] [-d DIR] [-p PORT]
#
# For each layout it runs scripts/scale-out-setup.sh (FINGERS synthetic
# fingers, default 20000, enrolled through the coordinator), puts the same
# templates in a plain table g_all on the coordinator and 50 probes (second
# impressions of gallery fingers) in table probes, then pgbench with each
# client count (default "1 4") for SECONDS (default 20) on:
#   proxy: SELECT ... FROM mcc_proxy.identify('g', probe, 10)    (the shards)
#   local: SELECT ... FROM identify('g_all', probe, 10)          (one server)
# Run as an ordinary user with mcc, mcc_shard, mcc_proxy and PL/Proxy
# installed. Prints one line per run: layout, query, clients, tps, latency,
# and the 1-minute load average after the run (other work on the machine).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
fingers=20000
seconds=20
clients="1 4"
dir=/tmp/mcc-scaleout-bench
port=55530
while [ $# -gt 0 ]; do
	case $1 in
		-f) fingers=$2; shift 2 ;;
		-t) seconds=$2; shift 2 ;;
		-c) clients=$2; shift 2 ;;
		-d) dir=$2; shift 2 ;;
		-p) port=$2; shift 2 ;;
		*) echo "scale-out-bench: unknown option $1" >&2; exit 2 ;;
	esac
done
export PATH="$(pg_config --bindir):$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/proxy.sql" <<-'EOF'
	\set pid random(1, 50)
	SELECT count(*) FROM mcc_proxy.identify('g', (SELECT tpl FROM probes WHERE pid = :pid), 10);
EOF
cat >"$work/local.sql" <<-'EOF'
	\set pid random(1, 50)
	SELECT count(*) FROM public.identify('g_all', (SELECT tpl FROM probes WHERE pid = :pid), 10);
EOF

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $fingers fingers, ${seconds}s per run"
printf '%-8s %-6s %7s %9s %12s %6s\n' layout query clients tps latency_ms load1
for shards in 1 3; do
	"$here/scale-out-setup.sh" destroy -d "$dir" >/dev/null 2>&1 || true
	t0=$(date +%s)
	"$here/scale-out-setup.sh" start -d "$dir" -p "$port" -n "$shards" --synthetic "$fingers" >"$work/setup.log"
	echo "# $shards shard(s): set up and enrolled in $(( $(date +%s) - t0 )) s"
	"$here/scale-out-setup.sh" psql -d "$dir" -c "
		CREATE TABLE g_all (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
		INSERT INTO g_all SELECT finger, template FROM mcc_synthetic($fingers, 1, 1);
		CREATE TABLE probes AS SELECT row_number() OVER (ORDER BY finger)::int AS pid, template AS tpl
			FROM mcc_synthetic(50, 2, 1, 0) WHERE impression = 1;" -c "VACUUM ANALYZE g_all"
	for q in proxy local; do
		[ "$q" = local ] && [ "$shards" != 1 ] && continue	# one server does not depend on the shards
		for c in $clients; do
			out=$(pgbench -n -h "$dir" -p "$port" -U postgres -f "$work/$q.sql" -c "$c" -j "$c" -T "$seconds" postgres 2>&1)
			tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
			lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
			printf '%-8s %-6s %7s %9.1f %12.1f %6s\n' "${shards}shard" "$q" "$c" "$tps" "$lat" \
				"$(cut -d' ' -f1 /proc/loadavg)"
		done
	done
	"$here/scale-out-setup.sh" destroy -d "$dir" >/dev/null
done
