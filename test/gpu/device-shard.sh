#!/usr/bin/env bash
# device-shard.sh: device-100m.sh's gallery over SHARDS PostgreSQL servers
# with one GPU each behind the PL/Proxy coordinator (docs/scale-out.md),
# on one machine (issue 19, point 4; docs/benchmarks.md, "100 M templates",
# "Sharded"). Run from the repository root (or a copy of it); the summary
# goes to $OUT (default build/device-out).
#
#   test/gpu/device-shard.sh [gallery size, default 100000000]
#
# PL/Proxy is not in the device kit: carry Debian's package in .plproxy/,
# fetched once on the dev machine with
#   mkdir -p .plproxy && (cd .plproxy && apt-get download postgresql-15-plproxy)
# (the script unpacks it with dpkg -x, or ar and tar, into the kit's lib
# and extension folders). Called like device-100m.sh (a detached driver; each call waits
# up to WAIT seconds, default 540, and exits 0 done, 3 still running, 1
# failed; call it again, same arguments, until it exits 0 or 1).
#
# The driver:
#   1. the machine; the kit's PostgreSQL with mcc and PL/Proxy; a
#      coordinator (mcc, plproxy, mcc_proxy; no matcher engine) and SHARDS
#      (default 4) shard servers (mcc, mcc_shard), each its own data
#      directory and port (PORT0 + i, default 55440), shard i's engine seeing
#      GPU i - 1 only (CUDA_VISIBLE_DEVICES; no GPU: the engines search on
#      their CPU threads); shards' settings as device-100m.sh's server's
#      (shared_buffers SHARD_BUFFERS, default 8GB);
#   2. the cluster map: mcc_proxy.create_partitions(PARTS) (default 16, a
#      power of two: PL/Proxy's) and create_gallery('gallery'): on every
#      shard a table gallery partitioned by LIST (part), gallery_p0 ..;
#   3. enrolment of device-100m.sh's gallery (row id holds synthetic finger
#      id mod DISTINCT, default 10,000,000) on every shard in parallel: the
#      placement rule (partition = hashtext(id::text) & (PARTS - 1), the map
#      gives the partition's shard) needs no coordinator: every shard
#      makes the DISTINCT templates in an unlogged staging table itself,
#      all shards at once (CPUs / SHARDS mcc_synthetic sessions each;
#      mcc_synthetic is deterministic, so the stagings hold the same
#      templates, and with rows placed by a hash of id each shard needs
#      nearly all of them; the binary COPY of one shard's staging to the
#      others that this replaced took 495 s at DISTINCT = 2,000,000), and
#      each shard fills each partition it
#      owns with its rows in one transaction that truncates it first (no WAL
#      under wal_level = minimal), all partitions of all shards at once;
#      staging in STAGE_DIR (a tablespace; default /dev/shm when it has room
#      for every shard's copy, else the data disk: SHARDS copies of DISTINCT
#      templates, 4 x 19 GB at 10 M, do not fit beside 190 GB of gallery on
#      235 GB);
#   4. every shard's non-empty partitions registered and preloaded, all at
#      once (each partition table is a gallery of the engine), the time
#      until the last is on its GPU, memory per template;
#   5. the 100 mated probes' first hit through the coordinator (LSS alone),
#      then pgbench -T SECS (default 30) of mcc_proxy.identify('gallery',
#      probe, 10) with 1 and 16 clients, under each of SETTINGS_SHARD
#      (default: mcc.refine_method=none, then the defaults; the coordinator's
#      setting: each shard's engine rescores its partitions' shortlists,
#      identify_shortlist(), and the coordinator merges): the table of
#      device-100m.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/gpu/device-lib.sh
source "$here/device-lib.sh"
dev_big_gallery "$@"
shards=${SHARDS:-4}
parts=${PARTS:-16}
port0=${PORT0:-55440}
state=${STATE:-/tmp/device-shard}

if [ $((parts & (parts - 1))) -ne 0 ] || [ "$parts" -lt "$shards" ]; then
	echo "PARTS ($parts) must be a power of two, at least SHARDS ($shards)" >&2
	exit 2
fi
nodes="coord $(seq -f 's%g' 1 "$shards" | tr '\n' ' ')"

# --- the caller: start the driver once, wait for it -------------------------
if [ "${DEV_DRIVER:-0}" != 1 ]; then
	logs=
	for node in $nodes; do
		logs="$logs $node=$state/$node.log"
	done
	dev_detached "$state" "$wait_s" "$logs" "$0" "$n"
fi

# --- the driver ----------------------------------------------------------------
dev_out "$state/out"
# a failed run stops its servers too (a new run starts them again)
trap '[ "$status" = 0 ] || stop_nodes; echo $status >"$state/rc"' EXIT
status=1
pids=()
root=
native=
port_of() { # node -> port (coord PORT0, s<i> PORT0 + i)
	local i=${1#s}
	[ "$1" = coord ] && i=0
	echo $((port0 + i))
}
on() { # on NODE psql_ ARGS: psql_ on that node
	local node=$1
	shift
	PGPORT=$(port_of "$node") "$@"
}
wait_all() { # wait_all WHAT: wait for the jobs $pids; "WHAT failed" and exit 1 if one did
	local pid
	for pid in "${pids[@]}"; do
		wait "$pid" || { say "   $1 failed"; exit 1; }
	done
	pids=()
}
stop_nodes() {
	local node
	[ -n "$root" ] && [ -n "$native" ] || return 0
	for node in $nodes; do
		[ -f "$root/$node/postmaster.pid" ] &&
			runuser -u pgkit -- "$native/bin/pg_ctl" -D "$root/$node" -m fast -w stop >/dev/null 2>&1
	done
	return 0
}
dev_machine name,driver_version,memory.total
say "   $(free -g | awk '/^Mem:/ {print $2 " GB of memory"}')"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
mnt=$(df --output=avail,target /tmp . | tail -n +2 | sort -n | tail -1 | awk '{print $2}')
root=${DATA_ROOT:-${mnt%/}/pgshard}
mkdir -p "$root" && chmod 777 "$root"
say "   data directories under $root: $(df -h --output=avail "$root" | tail -1 | tr -d ' ') free"
# the kit's server (on PGKIT_DATA) builds and installs mcc, then stops: the
# coordinator and the shards are servers of their own
export PGKIT_DATA=$root/kit
dev_kit_ready
pgkit_down >/dev/null 2>&1
export PGHOST=/tmp PGUSER=postgres

step "PL/Proxy from .plproxy/ into the kit"
debs=(.plproxy/postgresql-15-plproxy_*.deb)
deb=${debs[-1]}
[ -f "$deb" ] || { say "SKIP: no .plproxy/postgresql-15-plproxy_*.deb (see this script's header)"; exit 1; }
rm -rf "$state/plproxy" && mkdir -p "$state/plproxy" || exit 1
if command -v dpkg >/dev/null; then
	dpkg -x "$deb" "$state/plproxy" || exit 1
else # a .deb is an ar archive holding data.tar.*
	(cd "$state/plproxy" && ar x "$OLDPWD/$deb" && tar xf data.tar.*) || exit 1
fi
cp "$state/plproxy"/usr/lib/postgresql/15/lib/plproxy.so "$native/lib/postgresql/" &&
	cp "$state/plproxy"/usr/share/postgresql/15/extension/plproxy* "$native/share/postgresql/extension/" &&
	chmod -R a+rX "$native/lib/postgresql" "$native/share/postgresql/extension" || exit 1
say "   $(basename "$deb")$(ldd "$native/lib/postgresql/plproxy.so" | grep 'not found' | sed 's/^/; missing: /')"

step "servers: coordinator and $shards shards, ports $port0 .. $((port0 + shards))"
dev_shim say
for node in $nodes; do
	: >>"$state/$node.log" && chown pgkit "$state/$node.log" || exit 1
	if [ ! -f "$root/$node/PG_VERSION" ]; then
		rm -rf "${root:?}/$node"
		runuser -u pgkit -- "$native/bin/initdb" -D "$root/$node" -U postgres --no-sync -A trust \
			>"$state/$node.initdb.log" 2>&1 || { cat "$state/$node.initdb.log"; exit 1; }
	fi
	if [ "$node" = coord ]; then
		cat >>"$root/$node/postgresql.conf" <<-EOF
		shared_buffers = '4GB'
		max_connections = 300
		fsync = off
		synchronous_commit = off
		EOF
		dev_node_start "$root/$node" "$(port_of "$node")" "$state/$node.log"
		continue
	fi
	dev_conf_bench_at "$root/$node"
	dev_conf_gallery "$root/$node" "${SHARD_BUFFERS:-8GB}"
	gpu=()
	[ "$ngpu" -gt 0 ] && gpu=(CUDA_VISIBLE_DEVICES=$(((${node#s} - 1) % ngpu)))
	dev_node_start "$root/$node" "$(port_of "$node")" "$state/$node.log" "${gpu[@]}"
	say "   $node: port $(port_of "$node")${gpu[*]:+, ${gpu[*]}}"
done
for node in $nodes; do
	[ "$node" = coord ] && continue
	PGPORT=$(port_of "$node") dev_service_ready
	on "$node" psql_ -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS mcc_shard CASCADE" || exit 1
done
on coord psql_ -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS mcc_proxy CASCADE" || exit 1
for node in $nodes; do
	[ "$node" = coord ] && continue
	on coord psql_ -tAc "SELECT mcc_proxy.add_shard('$node', 'host=/tmp port=$(port_of "$node") dbname=postgres')" \
		>/dev/null || exit 1
done
on coord psql_ -tAc "SELECT count(*) FROM mcc_proxy.create_partitions($parts)" >/dev/null || exit 1
on coord psql_ -tAc "SELECT mcc_proxy.create_gallery('gallery')" >/dev/null || exit 1
say "   partitions: $(on coord psql_ -tAc "SELECT string_agg(shard || ' ' || n, ', ' ORDER BY shard)
	FROM (SELECT shard, count(*) AS n FROM mcc_proxy.partitions GROUP BY shard) x")"

# --- 3. enrolment ---------------------------------------------------------------
step "enrolment: $distinct distinct templates, $n rows in $parts partitions over $shards shards"
stage_dir=${STAGE_DIR:-}
if [ -z "$stage_dir" ] && [ "$(df --output=avail -B1 /dev/shm 2>/dev/null | tail -1)" -gt \
	$((shards * distinct * 2200)) ] 2>/dev/null; then
	stage_dir=/dev/shm/device-shard
fi
# room: about 1,950 bytes a gallery row (heap, toast, both indexes; 1,900
# in device-100m.sh's run) and 2,000 a staged template
on_disk=1
[ -n "$stage_dir" ] && on_disk=0
need=$((n * 1950 + on_disk * shards * distinct * 2000))
have=$(df --output=avail -B1 "$root" | tail -1)
say "   room: $(calc "$need / 1073741824" 1) GB needed on $root (staging ${stage_dir:-there too}), $(calc "$have / 1073741824" 1) GB free"
[ "$have" -gt "$need" ] || { say "   not enough disk (STAGE_DIR: a folder with room for the staging)"; exit 1; }
# the staging tablespace of every shard (a folder left by an earlier run's
# server, not this one's tablespace, would be refused)
space=
if [ -n "$stage_dir" ]; then
	space=stage
	for node in $nodes; do
		[ "$node" = coord ] && continue
		if [ -z "$(on "$node" psql_ -tAc "SELECT 1 FROM pg_tablespace WHERE spcname = 'stage'")" ]; then
			rm -rf "${stage_dir:?}/$node" && mkdir -p "$stage_dir/$node" && chown pgkit "$stage_dir/$node" &&
				on "$node" psql_ -c "CREATE TABLESPACE stage LOCATION '$stage_dir/$node'" || exit 1
		fi
	done
fi
# the templates made on every shard at once, each with its share of the CPUs
t0=$(date +%s.%N)
for node in $nodes; do
	[ "$node" = coord ] && continue
	on "$node" dev_stage "$distinct" "$(((jobs + shards - 1) / shards))" "$space" "$node" &
	pids+=($!)
done
wait_all "staging"
t1=$(date +%s.%N)
say "   staging: made on every shard at once: $(calc "$t1 - $t0" 1) s${stage_dir:+ (tablespace in $stage_dir)}"
# one partition: emptied and filled with its rows in one transaction (the
# truncation gives it new files: no WAL), its primary key (part, id) kept,
# and a unique index on id alone built, without which the matcher service
# does not take the table as a gallery
part_sql() {
	cat <<-EOF
	BEGIN;
	TRUNCATE gallery_p$1;
	INSERT INTO gallery_p$1 (id, tpl, part)
		SELECT b.id + c * $distinct, b.tpl, $1 FROM base b, generate_series(0, $(((n - 1) / distinct))) c
		WHERE b.id + c * $distinct < $n AND mcc_shard.partition_of(b.id + c * $distinct, $parts) = $1;
	CREATE UNIQUE INDEX IF NOT EXISTS gallery_p$1_id ON gallery_p$1 (id);
	COMMIT;
	EOF
}
on coord psql_ -tAc "SELECT part, shard FROM mcc_proxy.partitions ORDER BY part" -F ' ' | while read -r p node; do
	part_sql "$p" >"$state/part-$p.sql"
	echo "$(port_of "$node") $state/part-$p.sql"
done >"$state/parts.txt"
t2=$(date +%s.%N)
dev_fill_parts "$parts" "$state/parts.txt" || { say "   a partition failed"; exit 1; }
t3=$(date +%s.%N)
for node in $nodes; do
	[ "$node" = coord ] && continue
	on "$node" psql_ -c "DROP TABLE base" -c "ANALYZE gallery" ${stage_dir:+-c "DROP TABLESPACE stage"} &
	pids+=($!)
done
wait_all ANALYZE
t4=$(date +%s.%N)
say "   gallery: $n rows in $(calc "$t3 - $t2" 1) s ($(calc "$n / ($t3 - $t2)" 0) rows/s, $parts sessions);" \
	"staging dropped, ANALYZE $(calc "$t4 - $t3" 1) s"
for node in $nodes; do
	[ "$node" = coord ] && continue
	say "   $node: $(on "$node" psql_ -tAc "SELECT sum(c.reltuples)::bigint || ' rows, heap ' ||
		pg_size_pretty(sum(pg_table_size(t.relid))) || ', indexes ' || pg_size_pretty(sum(pg_indexes_size(t.relid)))
		FROM pg_partition_tree('gallery') t JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf")"
done
rows=0
for node in $nodes; do
	[ "$node" = coord ] && continue
	on "$node" psql_ -tAc "SELECT count(*) FROM gallery" >"$state/$node.rows" &
	pids+=($!)
done
wait_all "the count"
for node in $nodes; do
	[ "$node" = coord ] || rows=$((rows + $(cat "$state/$node.rows")))
done
say "   rows counted on the shards: $rows; $(df -h --output=avail "$root" | tail -1 | tr -d ' ') left on disk"
[ "$rows" = "$n" ] || exit 1
on coord dev_probes

# --- 4. register, load, upload ---------------------------------------------------
step "load: every shard's partitions at once"
on coord psql_ -tAc "SELECT part, shard FROM mcc_proxy.partitions ORDER BY part" -F ' ' >"$state/owners.txt"
while read -r p node; do
	on "$node" psql_ -tAc "SELECT mcc_gallery_register('gallery_p$p')" >/dev/null || exit 1
done <"$state/owners.txt"
t0=$(date +%s.%N)
while read -r p node; do
	on "$node" psql_ -tAc "SELECT mcc_gallery_preload('gallery_p$p')" >/dev/null &
	pids+=($!)
done <"$state/owners.txt"
wait_all "a preload"
t1=$(date +%s.%N)
if [ "$ngpu" -gt 0 ]; then
	while read -r p node; do
		on "$node" dev_wait_gpu "gallery_p$p" || say "   gallery_p$p ($node) did not reach its GPU"
	done <"$state/owners.txt"
fi
t2=$(date +%s.%N)
say "   mcc_gallery_preload of $parts partitions $(calc "$t1 - $t0" 1) s ($(calc "$n / ($t1 - $t0)" 0) rows/s); on the GPUs $(calc "$t2 - $t1" 1) s after it"
say "   | shard | entries | host | device | host bytes/template | device bytes/template | device | engine load s |"
say "   |---|---|---|---|---|---|---|---|"
for node in $nodes; do
	[ "$node" = coord ] && continue
	say "   | $node | $(on "$node" psql_ -tA -F ' | ' -c "SELECT sum(entries), pg_size_pretty(sum(host_bytes)),
		pg_size_pretty(sum(device_bytes)), round(sum(host_bytes)::numeric / sum(entries)),
		round(sum(device_bytes)::numeric / sum(entries)), string_agg(DISTINCT device, ','),
		round(max(load_seconds)::numeric, 2) FROM mcc_gallery_status") |"
done
nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader 2>&1 | sed 's/^/   GPU /' | tee -a "$out/summary.txt"
say "   engines' RSS: $(ps -o rss= -C mcc_engine 2>/dev/null | awk '{s += $1} END {printf "%.1f GB", s / 1048576}')"

# --- 5. answers and speed --------------------------------------------------------
step "identify() through the coordinator"
export PGPORT
PGPORT=$(port_of coord)
t0=$(date +%s.%N)
hits=$(PGOPTIONS="-c mcc.refine_method=none" psql_ -tAc "SELECT count(*) FILTER (WHERE top % $distinct = finger), count(*) FROM (
	SELECT p.finger, (SELECT id FROM mcc_proxy.identify('gallery', p.tpl, 10) ORDER BY score DESC, id LIMIT 1) AS top
	FROM probes p WHERE p.mate) s") || exit 1
t1=$(date +%s.%N)
say "   mated probes whose first hit (LSS alone) is a copy of their finger: ${hits/|/ of } ($(calc "$t1 - $t0" 1) s)"
dev_pgbench_table "$secs" "${SETTINGS_SHARD:-mcc.refine_method=none default}" mcc_proxy.identify \
	"mcc_proxy.identify(gallery, probe, k => 10) through the coordinator, $shards shards, pgbench -T $secs, $n rows:"
for node in $nodes; do
	[ "$node" = coord ] && continue
	say "   $node: $(on "$node" psql_ -tAc "SELECT string_agg(DISTINCT device, ',') || ', ' || sum(searches) || ' searches'
		FROM mcc_gallery_status")"
	grep -E "mcc_engine.*(WARNING|ERROR)" "$state/$node.log" | head -3 | tee -a "$out/summary.txt"
done
stop_nodes
for node in $nodes; do
	grep -E "GPU path totals" "$state/$node.log" | sed "s/^/   $node: /" | tee -a "$out/summary.txt"
done
for node in $nodes; do
	[ -n "$stage_dir" ] && rmdir "$stage_dir/$node" 2>/dev/null
done
status=0
