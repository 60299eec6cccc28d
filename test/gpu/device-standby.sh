#!/usr/bin/env bash
# device-standby.sh: hot standbys against one big server, on the 4-GPU
# machine (issue 20; docs/deployment.md). Run from the repository root with
# the device kit carried (KIT, default .device-kit or ../.device-kit; see
# ../shared/device/make-kit.sh); logs and tables go to $OUT (default
# build/device-out).
#
#   test/gpu/device-standby.sh [gallery size, default 1000000] [seconds per run, default 30] [clients, default 64]
#
#   1. one server with every GPU (4): a gallery of N synthetic templates,
#      registered and preloaded; pgbench with C clients of identify(k => 10);
#   2. the same server restarted with GPU 0 alone as the primary, and three
#      hot standbys made with pg_basebackup -R, GPU i each
#      (CUDA_VISIBLE_DEVICES, inherited by the engine); each preloads; C
#      clients spread evenly over the four nodes (one pgbench per node, run
#      together): the summed throughput and each node's p50/p99;
#   3. replication lag and the caches: the same search load on the standbys
#      while pgbench on the primary replaces templates (W updates per
#      second); the standbys' throughput and p99 against step 2, the replay
#      lag (pg_stat_replication), and the searches that fell back (none
#      expected: mcc.fallback = error makes them fail instead).
#
# Every node runs the kit's PostgreSQL as the user "pgkit" on a Unix socket
# in /tmp, ports 55432 (primary) to 55435.
set -u
n=${1:-1000000}
secs=${2:-30}
clients=${3:-64}
writes=${WRITES:-50}
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_out build/device-out
trap 'stop_all; cp /tmp/pgkit-node*.log "$out/" 2>/dev/null; dev_pack device-standby' EXIT

dev_machine index,name,memory.total short
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$gpus" -ge 4 ] || { say "needs 4 GPUs, found $gpus"; exit 1; }

dev_kit_ready
pgkit_down >/dev/null 2>&1
dev_shim

cat >>"$PGKIT_DATA/postgresql.conf" <<EOF
shared_preload_libraries = 'mcc'
shared_buffers = '4GB'
max_connections = 100
fsync = off
synchronous_commit = off
wal_level = replica
max_wal_senders = 8
hot_standby_feedback = on
mcc.worker_threads = 0
mcc.cache_memory_limit = '16GB'
mcc.fallback = 'error'
EOF

# node i: data directory, port; start with the GPUs given (e.g. "0", "" = all)
data_of() { [ "$1" -eq 0 ] && echo "$PGKIT_DATA" || echo "/tmp/pgkit-standby$1"; }
port_of() { echo $((55432 + $1)); }
start_node() {
	local i=$1 gpu=$2 env=()
	[ -n "$gpu" ] && env=(CUDA_VISIBLE_DEVICES="$gpu")
	runuser -u pgkit -- env $preload "${env[@]}" "$native/bin/pg_ctl" -D "$(data_of "$i")" \
		-o "-p $(port_of "$i") -k /tmp -c listen_addresses=''" -l "/tmp/pgkit-node$i.log" -w start >/dev/null ||
		{ tail -30 "/tmp/pgkit-node$i.log"; exit 1; }
	for _ in $(seq 1 120); do
		psql_ "$i" -tAc "SELECT state FROM mcc_service_status()" 2>/dev/null | grep -q ready && return
		# a fresh primary: the extension first (standbys get it by replication)
		[ "$i" -eq 0 ] && psql_ 0 -c "CREATE EXTENSION IF NOT EXISTS mcc" >/dev/null 2>&1
		sleep 0.5
	done
	cp "/tmp/pgkit-node$i.log" "$out/" 2>/dev/null
	say "node $i: the matcher service did not become ready"; exit 1
}
stop_node() { runuser -u pgkit -- "$native/bin/pg_ctl" -D "$(data_of "$1")" -m fast stop >/dev/null 2>&1; }
stop_all() { for i in 3 2 1 0; do stop_node "$i"; done; }
psql_() { local i=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$(port_of "$i")" -U postgres "$@" postgres; }

# preload on node i, in seconds
preload_on() {
	local t0 t1
	t0=$(date +%s.%N)
	psql_ "$1" -tAc "SELECT mcc_gallery_preload('gallery')" >/dev/null || status=1
	psql_ "$1" -tAc "SELECT count(*) FROM identify('gallery', (SELECT tpl FROM probes WHERE pid = 1), 10)" >/dev/null || status=1
	t1=$(date +%s.%N)
	calc "$t1 - $t0" 1
}

cat >"$out/identify.sql" <<'EOF'
\set p random(1, 200)
SELECT count(*) FROM identify('gallery', (SELECT tpl FROM probes WHERE pid = :p), 10);
EOF
cat >"$out/writes.sql" <<EOF
\set id random(0, $((n - 1)))
\set imp random(0, 1)
UPDATE gallery SET tpl = (SELECT template FROM mcc_synthetic(1, 2, 1, :id) WHERE impression = :imp) WHERE id = :id;
EOF
chmod 644 "$out"/*.sql
# searches: run NAME NODES...: C clients spread over the nodes, together;
# appends one table row per node and a total
run_searches() {
	local name=$1 i c pids=() total=0 tps p50 p99 reqs
	shift
	c=$((clients / $#))
	for i in "$@"; do
		rm -rf "$out/$name-$i" && mkdir -p "$out/$name-$i" && chmod 777 "$out/$name-$i"
		(cd "$out/$name-$i" && pgbench -n -h /tmp -p "$(port_of "$i")" -U postgres -c "$c" -j "$((c < 8 ? c : 8))" \
			-T "$secs" -l -f "$out/identify.sql" postgres >"$out/$name-$i.txt" 2>&1) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || status=1; done
	for i in "$@"; do
		tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/$name-$i.txt")
		read -r p50 p99 reqs <<<"$(dev_percentiles "$out"/$name-$i/pgbench_log.*)"
		table="$table\n| $name | node $i | $c | ${tps:-0} | $p50 | $p99 | $reqs |"
		total=$(calc "$total + ${tps:-0}" 1)
		cat "$out"/$name-$i/pgbench_log.* >"$out/$name-$i.log" && rm -rf "$out/$name-$i"
	done
	table="$table\n| $name | **total** | $clients | **$total** | | | |"
}
table="| run | node | clients | identify()/s | p50 ms | p99 ms | requests |\n|---|---|---|---|---|---|---|"

# --- 1. one server, four GPUs ----------------------------------------------
step "1. one server with $gpus GPUs: $n templates, $clients clients, $secs s"
start_node 0 ""
psql_ 0 -c "CREATE EXTENSION IF NOT EXISTS mcc"
dev_gallery psql_ 0
psql_ 0 -c "SELECT mcc_gallery_set_change_log('gallery', true)" >/dev/null
say "   preload and first identify(): $(preload_on 0) s"
psql_ 0 -c "SELECT entries, device, pg_size_pretty(device_bytes) AS device_mem FROM mcc_gallery_status" | tee -a "$out/summary.txt"
run_searches one-server 0
stop_node 0

# --- 2. primary + three standbys, one GPU each ---------------------------------
step "2. primary (GPU 0) and three hot standbys (GPU 1, 2, 3)"
start_node 0 0
basebackup=$native/bin/pg_basebackup
[ -x "$basebackup" ] || basebackup=$(command -v pg_basebackup)
for i in 1 2 3; do
	rm -rf "$(data_of "$i")"
	runuser -u pgkit -- "$basebackup" -h /tmp -p "$(port_of 0)" -U postgres \
		-D "$(data_of "$i")" -R --checkpoint=fast >"$out/basebackup-$i.log" 2>&1 ||
		{ cat "$out/basebackup-$i.log"; exit 1; }
	grep -q "skipping special file" "$out/basebackup-$i.log" && say "   WARNING: basebackup warned about a special file"
	start_node "$i" "$i"
done
psql_ 0 -c "SELECT application_name, state, replay_lag FROM pg_stat_replication" | tee -a "$out/summary.txt"
for i in 0 1 2 3; do say "   node $i: preload and first identify() $(preload_on "$i") s"; done
run_searches replicated 0 1 2 3

# --- 3. searches on the standbys while the primary writes -----------------------
step "3. standbys searching while the primary replaces $writes templates/s"
run_searches standbys-quiet 1 2 3
pgbench -n -h /tmp -p "$(port_of 0)" -U postgres -c 2 -R "$writes" -T "$((secs + 10))" \
	-f "$out/writes.sql" postgres >"$out/writes.txt" 2>&1 &
wp=$!
sleep 5
run_searches standbys-writing 1 2 3
psql_ 0 -c "SELECT application_name, replay_lag, pg_wal_lsn_diff(sent_lsn, replay_lsn) AS bytes_behind
	FROM pg_stat_replication" | tee -a "$out/summary.txt"
wait "$wp" || status=1
say "   writes: $(grep -E '^tps' "$out/writes.txt")"
for i in 1 2 3; do
	say "   node $i: $(psql_ "$i" -tAc "SELECT 'searches ' || searches || ', generation ' || generation || ', entries ' || entries FROM mcc_gallery_status")"
done

say "   identify(gallery, probe, k => 10), pgbench -T $secs:"
echo -e "$table" | sed 's/^/   /' | tee -a "$out/summary.txt"
for i in 0 1 2 3; do
	grep -E "mcc_engine.*(WARNING|ERROR)|ERROR" "/tmp/pgkit-node$i.log" | head -5 | sed "s/^/   node $i: /" | tee -a "$out/summary.txt"
	cp "/tmp/pgkit-node$i.log" "$out/server-$i.log"
done
exit $status
