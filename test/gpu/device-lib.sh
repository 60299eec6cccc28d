# shellcheck shell=bash
# test/gpu/device-lib.sh: the start-up that the device scripts share
# (device-e2e.sh, device-dedup.sh, device-standby.sh, device-images-sql.sh,
# device-restart.sh, device-100m.sh, device-shard.sh; the device-run scripts use dev_run_record,
# dev_run_build and dev_run_check):
# the settings of the 100 M gallery,
# the output folder and its summary, the machine's description, the device
# kit's PostgreSQL with mcc built and installed, the server start and the
# wait for the matcher service. Sourced, not run; every function that fails
# ends the script (exit 1), as the scripts did before they shared it.

# calc and pgbench_percentiles: scripts/bench-lib.sh (its other functions,
# for the benchmarks' throwaway cluster, are not used here).
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/bench-lib.sh"

# dev_out DEFAULT: $out (absolute, from $OUT or DEFAULT), $jobs, $status,
# an empty $out/summary.txt, and step / say.
dev_out() {
	out=${OUT:-$1}
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	jobs=$(nproc)
	status=0
	: >"$out/summary.txt"
}
say() { echo "$*" | tee -a "$out/summary.txt"; }
step() { say "== $*"; }

# dev_pack PREFIX [NAME...]: tar everything in $out but summary.txt and the
# NAMEs into $out/logs.tgz (a device call brings back a few files only).
dev_pack() {
	local prefix=$1 tgz keep=(--exclude=./summary.txt) find_keep=(! -name summary.txt) f
	shift
	for f in "$@"; do
		keep+=(--exclude="./$f")
		find_keep+=(! -name "$f")
	done
	tgz=$(mktemp "/tmp/$prefix-logs.XXXXXX")
	( cd "$out" && tar czf "$tgz" "${keep[@]}" . ) &&
		find "$out" -mindepth 1 -maxdepth 1 "${find_keep[@]}" -exec rm -rf {} + &&
		mv "$tgz" "$out/logs.tgz"
}

# dev_machine QUERY [short]: the date, nvidia-smi's QUERY fields, nvcc and
# the CPUs (short: only their number, without nvcc) into the summary.
dev_machine() {
	step "device"
	{
		date -u
		nvidia-smi --query-gpu="$1" --format=csv,noheader 2>&1
		if [ "${2:-}" = short ]; then
			echo "$jobs CPUs"
		else
			nvcc --version 2>&1 | tail -1
			echo "$jobs CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
		fi
	} | tee -a "$out/summary.txt"
}

# dev_run_record DEFAULT: the device-run scripts' start (they need no
# PostgreSQL): $out (from $OUT or DEFAULT) created, $status 0, and the
# record of the machine: the date, nvidia-smi, nvcc and the CPUs into
# $out/device.txt and on stdout.
dev_run_record() {
	out=${OUT:-$1}
	status=0
	mkdir -p "$out"
	{
		date -u
		nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,memory.total --format=csv 2>&1
		command -v nvcc >/dev/null && nvcc --version 2>&1 | tail -1
		echo "$(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	} | tee "$out/device.txt"
}

# dev_run_build MAKEFILE TARGET...: make -f MAKEFILE the targets (log
# $out/build.log), "ok - build (N s)"; on failure the log's tail, "not ok -
# build failed" and exit 1. SKIP_BUILD=1 skips it (binaries built before).
dev_run_build() {
	local mk=$1 t0
	shift
	[ "${SKIP_BUILD:-0}" = 1 ] && return 0
	t0=$(date +%s)
	make -s -f "$mk" -j"$(nproc)" "$@" >"$out/build.log" 2>&1 ||
		{ tail -40 "$out/build.log"; echo "not ok - build failed"; exit 1; }
	echo "ok - build ($(( $(date +%s) - t0 )) s)"
}

# dev_run_check MAKEFILE TARGET PATTERN: make -s -f MAKEFILE TARGET (log
# $out/TARGET.log; failing, it sets $status to 1), the log's lines that match
# PATTERN (40 at most), then "TARGET: N ok, M not ok (exit $status)".
dev_run_check() {
	local log=$out/$2.log
	make -s -f "$1" "$2" >"$log" 2>&1 || status=1
	grep -E "$3" "$log" | head -40
	echo "$2: $(grep -c '^ok' "$log") ok, $(grep -c '^not ok' "$log") not ok (exit $status)"
}

# dev_find_kit: $kit, the device kit (KIT, else .device-kit or ../.device-kit;
# see ../shared/device/make-kit.sh); false if there is none.
dev_find_kit() {
	local k
	kit=${KIT:-}
	for k in .device-kit ../.device-kit; do
		[ -z "$kit" ] && [ -f "$k/on-device.sh" ] && kit=$k
	done
	[ -n "$kit" ]
}

# dev_kit_install: the kit's PostgreSQL up, mcc built and installed into it;
# $native, the kit's installation. A second script on the same machine (an
# A/B of two trees in one device call) finds the kit's server set to preload
# the mcc.so the first installed: that server starts with the shim too.
dev_kit_install() {
	# shellcheck source=/dev/null
	source "$kit/on-device.sh" || exit 1
	native="$PGKIT_HOME/package/native"
	preload=
	[ -f "$native/lib/postgresql/mcc.so" ] && [ -x "$native/bin/postgres" ] && dev_shim
	[ -n "$preload" ] && export "${preload?}"
	pgkit_up >"$out/pgkit.log" 2>&1 || { cat "$out/pgkit.log"; exit 1; }
	[ -n "$preload" ] && unset LD_PRELOAD
	make -j"$jobs" >"$out/make.log" 2>&1 && pgkit_install >>"$out/make.log" 2>&1 ||
		{ tail -30 "$out/make.log"; say "build or install failed"; exit 1; }
}

# dev_kit_ready: the device kit found (else a SKIP line and exit 1), its
# PostgreSQL up, mcc built and installed into it (dev_kit_install).
dev_kit_ready() {
	if ! dev_find_kit; then
		step "SKIP: no device kit (run ../shared/device/make-kit.sh and carry it)"
		exit 1
	fi
	step "PostgreSQL from $kit, mcc built and installed"
	dev_kit_install
}

# dev_conf_bench: the kit server's settings of the benchmarks (e2e, dedup):
# mcc preloaded, large buffers and cache, no fsync (dev_conf_bench_at).
dev_conf_bench() {
	dev_conf_bench_at "$PGKIT_DATA"
}

# dev_conf_bench_at DATA: dev_conf_bench's settings into DATA's
# postgresql.conf (device-shard.sh's shards).
dev_conf_bench_at() {
	cat >>"$1/postgresql.conf" <<-EOF
	shared_preload_libraries = 'mcc'
	shared_buffers = '4GB'
	max_connections = 60
	fsync = off
	synchronous_commit = off
	mcc.worker_threads = 0
	mcc.cache_memory_limit = '16GB'
	EOF
}

# dev_bench_start: the start of the benchmark scripts on the kit's server
# (device-dedup.sh, device-restart.sh): $out = build/device-out (or $OUT),
# the machine (GPU name, driver, clocks, memory), the kit ready, the
# benchmarks' settings.
dev_bench_start() {
	dev_out build/device-out
	dev_machine name,driver_version,clocks.max.sm,memory.total
	dev_kit_ready
	dev_conf_bench
}

# dev_shim [say]: $preload, an LD_PRELOAD that resolves heap_datum_check
# where the kit's 15.18 server lacks a symbol its 15.20 headers inline
# (15.18 makes no tuples that reach it, so a no-op serves); say: tell so.
dev_shim() {
	preload=
	if nm -D "$native/lib/postgresql/mcc.so" | grep -q " U heap_datum_check" &&
		! nm -D "$native/bin/postgres" | grep -q " T heap_datum_check"; then
		printf 'void heap_datum_check(void *t, void *d) { (void) t; (void) d; }\n' >/tmp/pgkit-shim.c
		gcc -shared -fPIC -o /tmp/pgkit-shim.so /tmp/pgkit-shim.c && chmod 755 /tmp/pgkit-shim.so &&
			preload=LD_PRELOAD=/tmp/pgkit-shim.so
		[ "${1:-}" = say ] &&
			say "   kit: server 15.18 under 15.20 headers: heap_datum_check resolved by $preload"
	fi
	return 0
}

# dev_start: the kit's server on port 55432 (socket in /tmp, log /tmp/pgkit.log).
dev_start() {
	dev_node_start "$PGKIT_DATA" 55432 /tmp/pgkit.log
}

# dev_conf_gallery DATA BUFFERS: the settings of a server holding a gallery
# of 100 M rows (device-100m.sh, device-shard.sh's shards) into DATA's
# postgresql.conf, after dev_conf_bench's: shared_buffers BUFFERS, no WAL
# for tables filled in the transaction that made them (wal_level minimal),
# room for parallel loads, no cache limit, no snapshots, long requests.
dev_conf_gallery() {
	cat >>"$1/postgresql.conf" <<-EOF
	shared_buffers = '$2'
	max_connections = 300
	wal_level = minimal
	max_wal_senders = 0
	maintenance_work_mem = '1GB'
	max_worker_processes = 80
	max_parallel_workers = 64
	mcc.cache_memory_limit = 0
	mcc.cache_snapshots = off
	mcc.request_timeout = '10min'
	EOF
}

# dev_node_start DATA PORT LOG [VAR=VALUE...]: a server of the kit on DATA
# (socket in /tmp), with $preload and the VARs in its environment (the
# matcher engine it starts inherits them: CUDA_VISIBLE_DEVICES).
dev_node_start() {
	local data=$1 port=$2 log=$3
	shift 3
	# shellcheck disable=SC2086 # $preload: empty or one word
	runuser -u pgkit -- env $preload "$@" "$native/bin/pg_ctl" -D "$data" \
		-o "-p $port -k /tmp -c listen_addresses=''" -l "$log" -w start >/dev/null ||
		{ tail -30 "$log"; exit 1; }
}

psql_() { psql -X -q -v ON_ERROR_STOP=1 "$@" postgres; }

# dev_service_ready: CREATE EXTENSION, then wait (up to a minute) for the
# matcher service.
dev_service_ready() {
	local i
	psql_ -c "CREATE EXTENSION IF NOT EXISTS mcc" || { tail -30 /tmp/pgkit.log; exit 1; }
	for i in $(seq 1 120); do
		psql_ -tAc "SELECT state FROM mcc_service_status()" 2>/dev/null | grep -q ready && break
		sleep 0.5
	done
}

# dev_serve [say]: the kit's server (re)started with the shim (dev_shim's
# say), then CREATE EXTENSION and the wait for the matcher service.
dev_serve() {
	pgkit_down >/dev/null 2>&1
	dev_shim "$@"
	dev_start
	dev_service_ready
}

# dev_percentiles LOG...: "p50 p99 requests" (milliseconds, two decimals)
# of pgbench -l logs (column 3: latency in microseconds); "- - 0" if empty.
dev_percentiles() { pgbench_percentiles "%.2f %.2f %d" "- - 0" "$@"; }

# Wait (at most 10 minutes) until gallery $1 (default: gallery) is on the
# GPU: the engine builds a GPU copy beside the searches, which run on its
# CPU threads until then (mcc_gallery_status.device says cpu). 1 if it
# never is (no GPU, a profile the GPU does not run, a failed upload).
dev_wait_gpu() {
	local i q="SELECT device FROM mcc_gallery_status WHERE gallery = '${1:-gallery}'::regclass"
	for i in $(seq 1 6000); do
		case "$(psql_ -tAc "$q" 2>/dev/null)" in
			cpu | '') sleep 0.1 ;;
			*) return 0 ;;
		esac
	done
	return 1
}

# dev_gallery PSQL... : the table gallery of $n synthetic templates
# ($DEV_SESSIONS sessions of mcc_synthetic, default 8), VACUUM ANALYZE, the table probes (100 mates,
# 100 non-mates) and the gallery registered; PSQL is the psql command
# (e.g. psql_ or "psql_ 0"). $enrol: the enrolment's seconds.
dev_gallery() {
	local per s first cnt t0 t1 k=${DEV_SESSIONS:-8}
	"$@" -c "CREATE TABLE gallery (id bigint PRIMARY KEY, tpl mcc_template NOT NULL)"
	t0=$(date +%s.%N)
	per=$(((n + k - 1) / k))
	for s in $(seq 0 $((k - 1))); do
		first=$((s * per))
		cnt=$((n - first < per ? n - first : per))
		[ "$cnt" -gt 0 ] && "$@" -c "INSERT INTO gallery SELECT finger, template FROM mcc_synthetic($cnt, 1, 1, $first)" &
	done
	wait
	t1=$(date +%s.%N)
	enrol=$(calc "$t1 - $t0" 1)
	"$@" -c "VACUUM ANALYZE gallery"
	"$@" -c "CREATE TABLE probes AS
		SELECT row_number() OVER ()::int AS pid, template AS tpl FROM (
			SELECT template FROM mcc_synthetic(100, 2, 1) WHERE impression = 1
			UNION ALL SELECT template FROM mcc_synthetic(100, 1, 2)) p;
		SELECT mcc_gallery_register('gallery');" >/dev/null
}

# --- a benchmark that outlives one device call (device-100m.sh, device-shard.sh)

# dev_detached STATE WAIT LOGS SCRIPT ARGS...: the caller's side. The first
# call starts SCRIPT ARGS as a detached driver (setsid, DEV_DRIVER=1,
# OUT=STATE/out: it survives the call's end on a machine kept warm); every
# call waits for it up to WAIT seconds, copies the summary so far, the
# driver's log tail and each server log of LOGS ("NAME=PATH ...", the tail
# into NAME-tail.log) into $out (OUT, default build/device-out), then exits
# 0 when the driver has finished, 3 while it still runs, 1 when it failed.
# The driver writes its exit status into STATE/rc.
dev_detached() {
	local state=$1 wait_s=$2 logs=$3 t_end l
	shift 3
	out=${OUT:-build/device-out}
	mkdir -p "$out" "$state"
	if [ ! -f "$state/started" ]; then
		date -u +%s >"$state/started"
		DEV_DRIVER=1 OUT="$state/out" setsid bash "$@" </dev/null >"$state/driver.log" 2>&1 &
	fi
	t_end=$(($(date +%s) + wait_s))
	while [ ! -f "$state/rc" ] && [ "$(date +%s)" -lt "$t_end" ]; do
		sleep 2
	done
	cp "$state/out/summary.txt" "$out/summary.txt" 2>/dev/null
	tail -c 20000 "$state/driver.log" >"$out/driver-tail.log"
	for l in $logs; do
		[ -f "${l#*=}" ] && tail -c 200000 "${l#*=}" >"$out/${l%%=*}-tail.log"
	done
	[ -f "$state/rc" ] || { echo "still running after $(($(date +%s) - $(cat "$state/started"))) s"; exit 3; }
	exit "$(cat "$state/rc")"
}

# dev_big_gallery [N]: the settings device-100m.sh and device-shard.sh
# share: $n templates (N, default 100,000,000), $distinct synthetic ones
# among them (DISTINCT, default 10,000,000, at most N), $secs of pgbench per
# run (SECS, default 30), $wait_s seconds each call waits (WAIT, default 540).
dev_big_gallery() {
	n=${1:-100000000}
	distinct=${DISTINCT:-10000000}
	[ "$distinct" -le "$n" ] || distinct=$n
	secs=${SECS:-30}
	wait_s=${WAIT:-540}
}

# dev_stage COUNT K [TABLESPACE [NAME]]: the unlogged staging table base (id, tpl)
# of COUNT synthetic templates (ids 0 .. COUNT - 1, finger = id), made by K
# sessions of mcc_synthetic on the server psql_ reaches ($PGPORT), with
# an index on id; kept when an earlier run left it complete. Its lines say
# "staging (NAME)" with NAME (device-shard.sh: the shard's), else "staging".
dev_stage() {
	local distinct=$1 k=$2 space=${3:+TABLESPACE $3} name=${4:+ ($4)} per s first cnt t0 t1
	t0=$(date +%s.%N)
	if [ "$(psql_ -tAc "SELECT count(*) FROM base" 2>/dev/null)" = "$distinct" ]; then
		say "   staging$name: $distinct templates kept from an earlier run"
		return 0
	fi
	psql_ -c "DROP TABLE IF EXISTS base" \
		-c "CREATE UNLOGGED TABLE base (id bigint NOT NULL, tpl mcc_template NOT NULL) $space" || exit 1
	per=$(((distinct + k - 1) / k))
	for s in $(seq 0 $((k - 1))); do
		first=$((s * per))
		cnt=$((distinct - first < per ? distinct - first : per))
		[ "$cnt" -gt 0 ] && psql_ -c "INSERT INTO base SELECT finger, template FROM mcc_synthetic($cnt, 1, 1, $first)" &
	done
	wait
	psql_ -c "CREATE INDEX ON base (id) $space" || exit 1
	t1=$(date +%s.%N)
	say "   staging$name: $distinct templates in $(calc "$t1 - $t0" 1) s ($k sessions of mcc_synthetic)"
}

# dev_fill_parts K JOBS: the partitions' transactions of JOBS (lines "PORT
# FILE": psql -f FILE on the server at PORT), K at a time; false when one
# failed.
dev_fill_parts() {
	# shellcheck disable=SC2016 # $0 and $1 are the inner shell's
	xargs -P "$1" -L 1 sh -c 'psql -X -q -v ON_ERROR_STOP=1 -p "$0" -f "$1" postgres' <"$2"
}

# dev_probes: the table probes (pid, finger, mate, tpl) on the server psql_
# reaches: 100 mated probes (the second impression of fingers 0 .. 99) and
# 100 unmated ones (fingers of another seed).
dev_probes() {
	psql_ -c "CREATE TABLE probes AS
		SELECT row_number() OVER ()::int AS pid, finger, mate, template AS tpl FROM (
			SELECT finger, true AS mate, template FROM mcc_synthetic(100, 2, 1) WHERE impression = 1
			UNION ALL SELECT finger, false, template FROM mcc_synthetic(100, 1, 2)) p" || exit 1
}

# dev_bench_end: a benchmark's last lines into the summary: the galleries'
# device and searches, the engine's first warnings and errors, then the
# server stopped and the GPU path's totals the engine logs when it stops.
dev_bench_end() {
	psql_ -c "SELECT device, searches FROM mcc_gallery_status" | tee -a "$out/summary.txt"
	grep -E "mcc_engine.*(WARNING|ERROR)" /tmp/pgkit.log | head -5 | tee -a "$out/summary.txt"
	pgkit_down >/dev/null 2>&1
	grep -E "GPU path totals|refining searches" /tmp/pgkit.log | sed 's/^/   /' | tee -a "$out/summary.txt"
}

# dev_engine_totals LABEL: the engine's totals so far (SIGUSR1 makes it log
# them: refining searches by stage, the GPU path's), under LABEL into the
# summary. The totals are cumulative: a phase is this call's less the last.
dev_engine_totals() {
	local pid at
	pid=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status()") || return 0
	at=$(wc -c </tmp/pgkit.log)
	kill -USR1 "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		tail -c +"$((at + 1))" /tmp/pgkit.log | grep -q "GPU path totals" && break
		sleep 0.1
	done
	say "   the engine's totals $1:"
	tail -c +"$((at + 1))" /tmp/pgkit.log | grep -E "GPU path totals|refining searches" | sed 's/^/   /' |
		tee -a "$out/summary.txt"
}

# dev_cpu_ticks [PID]: the machine's busy and total CPU ticks (/proc/stat)
# and PID's own (utime + stime), on one line.
dev_cpu_ticks() {
	local own=0
	[ -n "${1:-}" ] && own=$(awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0)
	awk -v own="$own" '/^cpu /{b = $2 + $3 + $4 + $7 + $8; print b, b + $5 + $6, own}' /proc/stat
}

# dev_cpu_note T0 T1 SECS: what two dev_cpu_ticks lines say: the machine's
# CPUs busy (of all of them) and the engine's CPU-seconds per second.
dev_cpu_note() {
	local b0 a0 o0 b1 a1 o1 hz
	read -r b0 a0 o0 <<<"$1"
	read -r b1 a1 o1 <<<"$2"
	hz=$(getconf CLK_TCK)
	echo "CPUs busy $(calc "100 * ($b1 - $b0) / ($a1 - $a0)" 1) % of $jobs; engine $(calc "($o1 - $o0) / $hz / $3" 2) CPU-s/s"
}

# dev_pgbench_table SECS SETTINGS FUNCTION LABEL: pgbench -T SECS of
# FUNCTION('gallery', a random probe, 10) on the server psql_ reaches, with
# 1 and 16 clients under each of SETTINGS ("default", or a setting NAME=VALUE
# given to the sessions by PGOPTIONS); each row as it comes, then LABEL and
# the table (settings, clients, identify()/s, p50, p99, requests) into the
# summary. Each run's pgbench output and its transaction logs merged stay in
# $out (pgbench-RUN.txt, pgbench-RUN.log). E2E_STAGES=1: after each run the
# machine's and the engine's CPU use during it and the engine's totals so
# far (dev_engine_totals: cumulative, a run's own are its less the last's).
dev_pgbench_table() {
	local secs=$1 v c opts run res tps p50 p99 reqs epid t0 t1
	shift
	local table="| settings | clients | identify()/s | p50 ms | p99 ms | requests |\n|---|---|---|---|---|---|"
	cat >"$out/identify.sql" <<-EOF
	\\set p random(1, 200)
	SELECT count(*) FROM $2('gallery', (SELECT tpl FROM probes WHERE pid = :p), 10);
	EOF
	chmod 644 "$out/identify.sql"
	for v in $1; do
		opts=; [ "$v" != default ] && opts="-c $v"
		for c in 1 16; do
			run=$c-${v//[^a-z0-9]/_}
			rm -rf "$out/pgbench-$run" && mkdir -p "$out/pgbench-$run"
			if [ -n "${E2E_STAGES:-}" ]; then
				epid=$(psql_ -tAc "SELECT engine_pid FROM mcc_service_status()" 2>/dev/null)
				t0=$(dev_cpu_ticks "$epid")
			fi
			res=$(cd "$out/pgbench-$run" && PGOPTIONS="$opts" pgbench -n -c "$c" -j "$((c < 8 ? c : 8))" \
				-T "$secs" -l -f "$out/identify.sql" postgres 2>&1)
			if [ -n "${E2E_STAGES:-}" ]; then
				t1=$(dev_cpu_ticks "$epid")
				say "   run $run: $(dev_cpu_note "$t0" "$t1" "$secs")"
				dev_engine_totals "after run $run"
			fi
			echo "$res" >"$out/pgbench-$run.txt"
			tps=$(echo "$res" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
			read -r p50 p99 reqs <<<"$(dev_percentiles "$out/pgbench-$run"/pgbench_log.*)"
			table="$table\n| $v | $c | $tps | $p50 | $p99 | $reqs |"
			cat "$out/pgbench-$run"/pgbench_log.* >"$out/pgbench-$run.log" && rm -rf "$out/pgbench-$run"
			echo -e "$table" | tail -1 | sed 's/^/   /'
		done
	done
	say "   $3"
	echo -e "$table" | sed 's/^/   /' | tee -a "$out/summary.txt"
}
