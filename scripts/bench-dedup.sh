#!/usr/bin/env bash
# bench-dedup.sh: deduplication of a synthetic gallery through the matcher
# service on this machine (docs/benchmarks.md, "Deduplication").
#
#   scripts/bench-dedup.sh [gallery size, default 100000] [probes, default all]
#
# Needs mcc installed (make install) and runs as a user PostgreSQL accepts
# (not root). Starts a throwaway cluster with mcc preloaded
# (mcc.worker_threads = 0: a thread per CPU), then runs
# scripts/bench-dedup-run.sh (the gallery, its load, mcc_dedup()) against
# it. Removes the cluster at the end (MCC_BENCH_KEEP=1 keeps it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${MCC_BENCH_PORT:-54333}
command -v pg_ctl >/dev/null || export PATH="$(pg_config --bindir):$PATH"
dir=$(mktemp -d /tmp/mcc-bench.XXXXXX)
cleanup() {
	pg_ctl -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
	[ -n "${MCC_BENCH_KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
initdb -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log"
cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
shared_preload_libraries = 'mcc'
shared_buffers = '1GB'
fsync = off
synchronous_commit = off
mcc.worker_threads = 0
mcc.cache_memory_limit = '8GB'
CONF
pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
export PGHOST=$dir PGPORT=$port PGUSER=postgres
until psql -X -tAc "SELECT state FROM mcc_service_status()" postgres 2>/dev/null | grep -q ready; do
	psql -X -q -c "CREATE EXTENSION IF NOT EXISTS mcc" postgres >/dev/null 2>&1 || true
	sleep 0.5
done
"$here/bench-dedup-run.sh" "$@"
