# shellcheck shell=bash
# scripts/bench-lib.sh: the throwaway cluster the benchmark scripts share
# (bench-service.sh, bench-snapshot.sh, bench-dedup.sh, bench-changelog.sh,
# bench-load.sh, bench-backend-cpu.sh) and, for pgbench_percentiles and
# calc, test/gpu/device-lib.sh. Sourced, not run.
#
#   bench_cluster DEFAULT_PORT <<EOF
#   extra postgresql.conf lines
#   EOF
# initdb in $dir (a new /tmp/mcc-bench.XXXXXX, removed at exit unless
# MCC_BENCH_KEEP=1), the settings every benchmark uses (Unix socket in $dir
# only, port MCC_BENCH_PORT or DEFAULT_PORT, mcc preloaded, 1GB of shared
# buffers, the engine's threads = cores, an 8GB cache) and stdin's, then
# starts it. Gives $dir, $port, psql_ and calc.

bench_cleanup() {
	pg_ctl -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
	[ -n "${MCC_BENCH_KEEP:-}" ] || rm -rf "$dir"
}
psql_() { psql -X -q -h "$dir" -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@" postgres; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }

bench_cluster() {
	port=${MCC_BENCH_PORT:-$1}
	command -v pg_ctl >/dev/null || export PATH="$(pg_config --bindir):$PATH"
	dir=$(mktemp -d /tmp/mcc-bench.XXXXXX)
	trap bench_cleanup EXIT
	initdb -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log"
	{
		cat <<-CONF
		listen_addresses = ''
		unix_socket_directories = '$dir'
		port = $port
		shared_preload_libraries = 'mcc'
		shared_buffers = '1GB'
		mcc.worker_threads = 0
		mcc.cache_memory_limit = '8GB'
		CONF
		cat
	} >>"$dir/data/postgresql.conf"
	pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
}

# identify_timing_means LOG: the backend's stages of the requests through
# the service that mcc.log_identify_timing logged into LOG, averaged per
# gallery and outcome: one line each, "gallery outcome (N calls): stage ms ...".
identify_timing_means() {
	grep -o 'identify() timing: .*' "$1" |
		awk '{ key = $3 " " $6; n[key]++
			for (i = 7; i <= NF; i++) { split($i, kv, "="); s[key, kv[1]] += kv[2]
				if (!(kv[1] in seen)) { seen[kv[1]] = 1; order[++nf] = kv[1] } } }
			END { for (k in n) { line = k " (" n[k] " calls):"
				for (j = 1; j <= nf; j++) line = line sprintf(" %s %.3f", order[j], s[k, order[j]] / n[k])
				print line } }' | sort
}

# bench_wait_ready: wait until the matcher service is ready (after a start
# or a restart of the cluster, the extension already created).
bench_wait_ready() {
	until psql_ -tAc "SELECT state FROM mcc_service_status()" 2>/dev/null | grep -q ready; do
		sleep 0.05
	done
}

# bench_service_ready: CREATE EXTENSION (retried while the server starts
# its service), then wait until the matcher service is ready.
bench_service_ready() {
	until psql_ -tAc "SELECT state FROM mcc_service_status()" 2>/dev/null | grep -q ready; do
		psql_ -c "CREATE EXTENSION IF NOT EXISTS mcc" >/dev/null 2>&1 || true
		sleep 0.5
	done
}

# pgbench_percentiles FORMAT EMPTY LOG...: the p50 and p99 latencies
# (milliseconds) and the number of requests of pgbench -l logs (column 3:
# latency in microseconds), printed with awk's printf FORMAT (p50, p99,
# count); EMPTY if the logs hold no request.
pgbench_percentiles() {
	local format=$1 empty=$2
	shift 2
	cat "$@" | awk '{print $3}' | sort -n | awk -v f="$format" -v e="$empty" '{a[NR]=$1} END {
		if (NR == 0) { print e; exit }
		p50 = a[int(NR * 0.50) > 0 ? int(NR * 0.50) : 1]; p99 = a[int(NR * 0.99) > 0 ? int(NR * 0.99) : 1];
		printf f, p50 / 1000, p99 / 1000, NR }'
}
