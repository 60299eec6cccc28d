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
# shellcheck source=scripts/bench-lib.sh
source "$here/bench-lib.sh"
bench_cluster 54333 <<CONF
fsync = off
synchronous_commit = off
CONF
export PGHOST=$dir PGPORT=$port PGUSER=postgres
bench_service_ready
"$here/bench-dedup-run.sh" "$@"
