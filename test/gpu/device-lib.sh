# shellcheck shell=bash
# test/gpu/device-lib.sh: the start-up that the device scripts share
# (device-e2e.sh, device-dedup.sh, device-standby.sh, device-images-sql.sh,
# device-restart.sh; the device-run scripts use dev_run_record,
# dev_run_build and dev_run_check):
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
# $native, the kit's installation.
dev_kit_install() {
	# shellcheck source=/dev/null
	source "$kit/on-device.sh" || exit 1
	pgkit_up >"$out/pgkit.log" 2>&1 || { cat "$out/pgkit.log"; exit 1; }
	make -j"$jobs" >"$out/make.log" 2>&1 && pgkit_install >>"$out/make.log" 2>&1 ||
		{ tail -30 "$out/make.log"; say "build or install failed"; exit 1; }
	native="$PGKIT_HOME/package/native"
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
# mcc preloaded, large buffers and cache, no fsync.
dev_conf_bench() {
	cat >>"$PGKIT_DATA/postgresql.conf" <<-EOF
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
	runuser -u pgkit -- env $preload "$native/bin/pg_ctl" -D "$PGKIT_DATA" \
		-o "-p 55432 -k /tmp -c listen_addresses=''" -l /tmp/pgkit.log -w start >/dev/null ||
		{ tail -30 /tmp/pgkit.log; exit 1; }
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
