#!/usr/bin/env bash
# device-images-sql.sh: the image and point functions through SQL on a GPU
# machine, in one call: each one through the matcher engine's GPU
# (mcc.image_device = gpu) checked against this backend's CPU path
# (mcc.image_device = cpu), then timings, paper 002's Test 3 first.
# Run from the repository root with the device kit carried (KIT, default
# .device-kit or ../.device-kit; ../shared/device/make-kit.sh); logs go to
# $OUT (default build/device-images).
#
#   test/gpu/device-images-sql.sh [repeats per timing, default 3]
#
#   1. PostgreSQL from the kit with shared_preload_libraries = mcc, this
#      tree built (the engine with its GPU path: nvcc is there) and installed;
#   2. GPU == CPU: SAD (locate, map, map_array: every hit and the whole map,
#      bytea and smallint[]), elastic matching (distance, warp, differences,
#      verify, verify_many; the simplified and the overall algorithm),
#      chamfer alignment and mcc_align (parameters and
#      residual within 1e-6 relative: the GPU's sums are rounded in another
#      order, docs/alignment.md); a DEBUG1 line must say a GPU ran each one;
#   3. timings (median of the repeats after one warm-up, wall clock of the
#      statement in the backend, clock_timestamp): Test 3 (2500^2 target,
#      250^2 pattern cut from it) with mcc_sad_locate k = 1 and
#      mcc_sad_map_array; 1:N verification of synthetic prints; a 512 x 512
#      elastic match; a chamfer alignment of 10^6 points; mcc_align. The CPU
#      rows use every core (mcc.image_threads, mcc.dp2d_threads,
#      mcc.align_threads).
#
# Exit status 1 if a check failed. The server log and psql output are in
# $OUT/logs.tgz; $OUT/summary.txt holds the checks and the timing table.
#
# Off the device (a dry run of the checks): KIT=none uses the server that
# PGHOST/PGPORT name (mcc installed and preloaded, run as its superuser),
# and DEVICE=engine compares the engine's CPU threads instead of its GPU.
set -u
device=${DEVICE:-gpu}
reps=${1:-3}
# shellcheck source=test/gpu/device-lib.sh
source "$(dirname "$0")/device-lib.sh"
dev_out build/device-images
trap 'cp /tmp/pgkit.log "$out/server.log" 2>/dev/null; dev_pack device-images' EXIT

# --- 1. the server ---------------------------------------------------------------
dev_machine name,driver_version,memory.total
if ! dev_find_kit; then
	step "SKIP: no device kit (run ../shared/device/make-kit.sh and carry .device-kit)"
	exit 1
fi
if [ "$kit" = none ]; then
	say "   the running server at ${PGHOST:-}:${PGPORT:-} (KIT=none), mcc.image_device = $device"
	pgkit_down() { :; }
else
	dev_kit_install
	say "   mcc.so links CUDA: $(ldd "$native/lib/postgresql/mcc.so" | grep -ci cuda) libraries," \
		"$(nm -D "$native/lib/postgresql/mcc.so" | grep -ci cuda) symbols (both must be 0);" \
		"mcc_engine: $(nm "$native/lib/postgresql/mcc_engine" 2>/dev/null | grep -o 'mcc_sad_gpu_search\|mcc_dp2d_gpu_run\|mcc_chamfer_gpu_align_ref' | sort -u | wc -l) of 3 GPU entry points"
	cat >>"$PGKIT_DATA/postgresql.conf" <<-EOF
	shared_preload_libraries = 'mcc'
	max_connections = 40
	fsync = off
	mcc.worker_threads = 0
	EOF
	pgkit_down >/dev/null 2>&1
	dev_shim
	dev_start
fi
dev_service_ready
say "   service: $(psql_ -tAc "SELECT state || ', engine pid ' || engine_pid FROM mcc_service_status()")"
grep -E "mcc_engine.*(GPU|listening)" /tmp/pgkit.log 2>/dev/null | sed 's/^/   /' | tee -a "$out/summary.txt"

# --- data ------------------------------------------------------------------------
step "data"
t0=$(date +%s.%N)
psql_ >"$out/data.log" 2>&1 <<'EOF'
CREATE FUNCTION pgm(w int, h int, px int[]) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT convert_to(format(E'P5\n%s %s\n255\n', w, h), 'UTF8') ||
		   decode(string_agg(lpad(to_hex(v), 2, '0'), '' ORDER BY k), 'hex')
	FROM unnest(px) WITH ORDINALITY AS t(v, k)
$$;
CREATE FUNCTION noise(w int, h int, seed int) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT convert_to(format(E'P5\n%s %s\n255\n', w, h), 'UTF8') ||
		   substring(decode(string_agg(md5(seed || ':' || i), '' ORDER BY i), 'hex') FROM 1 FOR w * h)
	FROM generate_series(0, (w * h) / 16) i
$$;
CREATE FUNCTION print(side int, phi float8, r float8) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT pgm(side, side, array_agg(v ORDER BY y, x))
	FROM generate_series(0, side - 1) y, generate_series(0, side - 1) x,
		 LATERAL (SELECT CASE WHEN (x - side / 2) ^ 2 + (y - side / 2) ^ 2 <= r ^ 2
			THEN round(128 + 100 * cos(2 * pi() * ((x - side / 2) * cos(phi)
											 + (y - side / 2) * sin(phi)) / 9)
					   + 20 * sin(x * 0.37 + y * 0.11))::int
			ELSE 230 END) AS p(v)
$$;
-- milliseconds of one statement in this backend (count(s): every column is
-- computed, none is dropped as unused)
CREATE FUNCTION timed(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	EXECUTE 'SELECT count(s) FROM (' || q || ') s';
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
-- paper 002's Test 3: a 2500^2 target, the 250^2 pattern cut from it at (1234, 987)
CREATE TABLE t3 AS SELECT noise(2500, 2500, 3) AS t;
ALTER TABLE t3 ADD COLUMN p bytea;
UPDATE t3 SET p = mcc_image_crop(t, 1234, 987, 250, 250);
CREATE TABLE img AS
SELECT noise(300, 200, 1) AS t, mcc_image_crop(noise(300, 200, 1), 171, 83, 40, 30) AS p,
	   noise(31, 22, 2) AS a, noise(35, 19, 3) AS b,
	   print(160, 0, 60) AS across, print(160, pi() / 2, 60) AS along, print(140, 0.3, 55) AS tilted,
	   noise(512, 512, 7) AS big_a, noise(500, 512, 8) AS big_b;
-- 1:N: probes cut from a large print at shifted places, and other prints
CREATE TABLE prints AS SELECT print(420, 0.2, 200) AS big;
CREATE TABLE probes AS
SELECT array_agg(mcc_image_crop(big, (i % 25) * 10, (i / 25) * 10, 170, 170) ORDER BY i) AS ps
FROM prints, generate_series(0, 499) i;
-- 10^6 points: observed = a similarity of the reference
CREATE TABLE cloud AS
SELECT array_agg(ARRAY[x, y] ORDER BY i) AS ref,
	   array_agg(ARRAY[1.02 * (cos(0.1) * x - sin(0.1) * y) + 3, 1.02 * (sin(0.1) * x + cos(0.1) * y) - 2]
				 ORDER BY i) AS obs
FROM (SELECT i, 500 * cos(i * 0.001) + 40 * sin(i * 0.013) AS x, 300 * sin(i * 0.0007) + 25 * cos(i * 0.017) AS y
	  FROM generate_series(1, 1000000) i) s;
CREATE TABLE pts AS
SELECT (SELECT array_agg(ARRAY[20 + 40 * cos(i * 0.7) + 5 * sin(i * 1.3), -7 + 30 * sin(i * 0.5)]
						 ORDER BY i) FROM generate_series(1, 300) i) AS ref,
	   (SELECT array_agg(ARRAY[1.1 * (cos(0.2) * x - sin(0.2) * y) + 5, 1.1 * (sin(0.2) * x + cos(0.2) * y) - 3]
						 ORDER BY i)
		FROM (SELECT i, 20 + 40 * cos(i * 0.7) + 5 * sin(i * 1.3) AS x, -7 + 30 * sin(i * 0.5) AS y
			  FROM generate_series(1, 250) i) s) AS obs;
CREATE TABLE tpl AS SELECT finger, impression, template FROM mcc_synthetic(20, 2, 5);
EOF
[ $? -eq 0 ] || { tail -20 "$out/data.log"; say "data failed"; exit 1; }
say "   made in $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s"

# --- 2. GPU == CPU -------------------------------------------------------------------
step "GPU == CPU"
# Run $2 as CREATE TABLE $1_<device> for both devices; the GPU run must say a GPU ran it.
both() {
	local name=$1 q=$2 dev log
	for dev in "$device" cpu; do
		log="$out/q-$name-$dev.log"
		[ "$dev" = cpu ] && tab=${name}_cpu || tab=${name}_gpu
		psql_ -c "SET mcc.image_device = $dev; SET client_min_messages = debug1;
			SET mcc.image_threads = $jobs; SET mcc.dp2d_threads = $jobs; SET mcc.align_threads = $jobs;
			CREATE TABLE $tab AS $q" >"$log" 2>&1 || { say "   $name on $dev failed: $(grep ERROR "$log" | head -1)"; status=1; return 1; }
	done
	log="$out/q-$name-$device.log"
	if ! grep -q "ran in the matcher engine on" "$log" ||
		{ [ "$device" = gpu ] && grep "ran in the matcher engine on" "$log" | grep -q " on cpu$"; }; then
		say "   $name: the engine's $device did not run it: $(grep -E 'DEBUG|ERROR' "$log" | head -2)"
		status=1
		return 1
	fi
	return 0
}
# Exact equality of two result tables.
exact() {
	local name=$1 what=$2 d
	both "$name" "$3" || return
	d=$(psql_ -tAc "SELECT (SELECT count(*) FROM (TABLE ${name}_gpu EXCEPT ALL TABLE ${name}_cpu) x)
		+ (SELECT count(*) FROM (TABLE ${name}_cpu EXCEPT ALL TABLE ${name}_gpu) y),
		(SELECT count(*) FROM ${name}_cpu)")
	if [ "${d%%|*}" = 0 ] && [ "${d##*|}" != 0 ]; then
		say "   ok: $what: GPU == CPU (${d##*|} rows)"
	else
		say "   FAILED: $what: rows differing, rows: $d"
		status=1
	fi
}
# Parameters and residual within 1e-6 relative (the rows hold params and residual).
close() {
	local name=$1 what=$2 d
	both "$name" "$3" || return
	d=$(psql_ -tAc "SELECT max(greatest(abs(g.residual - c.residual) / (1 + abs(c.residual)),
			(SELECT max(abs(gp - cp) / (1 + abs(cp))) FROM unnest(g.params, c.params) u(gp, cp))))
		FROM (SELECT row_number() OVER () n, * FROM ${name}_gpu) g
		JOIN (SELECT row_number() OVER () n, * FROM ${name}_cpu) c USING (n)")
	if awk "BEGIN { exit !($d <= 1e-6) }"; then
		say "   ok: $what: GPU within $d (relative) of the CPU"
	else
		say "   FAILED: $what: GPU $d (relative) from the CPU"
		status=1
	fi
}
exact sad_locate "mcc_sad_locate(bytea, k = 10)" "SELECT s.* FROM img, mcc_sad_locate(t, p, 10) s"
exact sad_locate_arr "mcc_sad_locate(smallint[], k = 3)" \
	"SELECT s.* FROM img, mcc_sad_locate(mcc_image_to_array(t), mcc_image_to_array(p), 3) s"
exact sad_map "mcc_sad_map(bytea)" "SELECT md5(mcc_sad_map(t, p)) FROM img"
exact sad_map_arr "mcc_sad_map_array(bytea)" "SELECT md5(mcc_sad_map_array(t, p)::text) FROM img"
exact sad_t3 "Test 3: mcc_sad_locate(k = 5) and the whole map" \
	"SELECT (SELECT string_agg(x || ',' || y || ',' || sad, ';') FROM mcc_sad_locate(t, p, 5)) AS hits,
		md5(mcc_sad_map_array(t, p)::text) AS map FROM t3"
exact dp2d_distance "mcc_dp2d_distance" "SELECT mcc_dp2d_distance(a, b) AS d1, mcc_dp2d_distance(big_a, big_b) AS d2 FROM img"
exact dp2d_warp "mcc_dp2d_warp" "SELECT md5(mcc_dp2d_warp(a, b)) FROM img"
exact dp2d_verify "mcc_dp2d_differences, mcc_dp2d_verify" \
	"SELECT mcc_dp2d_differences(across, tilted) AS d, mcc_dp2d_verify(across, along, 3000) AS v FROM img"
exact dp2d_many "mcc_dp2d_verify_many (500 probes)" \
	"SELECT v.* FROM prints, probes, mcc_dp2d_verify_many(mcc_image_crop(big, 120, 120, 170, 170), ps, 3000) v"
exact dp2d_overall "mcc_dp2d_differences and verify_many, algorithm overall (the GPU's warps, restored here)" \
	"SELECT mcc_dp2d_differences(across, tilted, 'overall') AS d FROM img UNION ALL
	 SELECT v.differences FROM prints, probes,
		mcc_dp2d_verify_many(mcc_image_crop(big, 120, 120, 170, 170), ps[1:50], 3000, 'overall') v"
close chamfer "mcc_chamfer_align (250 points, similarity and affine)" \
	"SELECT c.* FROM pts, mcc_chamfer_align(obs, ref) c UNION ALL
	 SELECT c.* FROM pts, mcc_chamfer_align(obs, ref, 'affine', 0.5, 8) c"
close chamfer_big "mcc_chamfer_align (10^6 points)" "SELECT c.* FROM cloud, mcc_chamfer_align(obs, ref, 'similarity', 2) c"
close align "mcc_align (20 mated pairs)" \
	"SELECT a.params, a.residual FROM tpl p JOIN tpl c USING (finger),
		LATERAL mcc_align(p.template, c.template) a
	 WHERE p.impression = 1 AND c.impression = 0 ORDER BY finger"

# --- 3. timings ------------------------------------------------------------------------
step "timings: median of $reps after a warm-up, ms per statement"
table="| statement | GPU (engine) ms | CPU (backend, $jobs threads) ms | CPU / GPU |\n|---|---|---|---|"
median() { sort -n | awk '{a[NR]=$1} END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
timing() {
	local what=$1 q=$2 dev ms g c
	for dev in "$device" cpu; do
		ms=$(psql_ -tA <<EOF 2>>"$out/timing.log" | tail -n +2 | median
SET mcc.image_device = $dev; SET mcc.image_threads = $jobs; SET mcc.dp2d_threads = $jobs;
SET mcc.align_threads = $jobs;
SELECT timed(\$q\$$q\$q\$) FROM generate_series(0, $reps);
EOF
)
		[ "$dev" = cpu ] && c=$ms || g=$ms
	done
	table="$table\n| $what | $g | $c | $(awk "BEGIN { if ($g > 0) printf \"%.1fx\", $c / $g }") |"
	echo "   $what: GPU $g ms, CPU $c ms" >>"$out/timing.log"
}
timing "Test 3: mcc_sad_locate(t, p) k = 1" "SELECT s.* FROM t3, mcc_sad_locate(t, p) s"
timing "Test 3: mcc_sad_map_array(t, p) (5.07 M SADs back)" "SELECT mcc_sad_map_array(t, p) FROM t3"
timing "mcc_dp2d_verify_many: 1 reference, 500 probes 170 x 170" \
	"SELECT v.* FROM prints, probes, mcc_dp2d_verify_many(mcc_image_crop(big, 120, 120, 170, 170), ps, 3000) v"
timing "mcc_dp2d_verify_many overall: 1 reference, 500 probes 170 x 170" \
	"SELECT v.* FROM prints, probes, mcc_dp2d_verify_many(mcc_image_crop(big, 120, 120, 170, 170), ps, 3000, 'overall') v"
timing "mcc_dp2d_distance 512 x 512 against 500 x 512" "SELECT mcc_dp2d_distance(big_a, big_b) FROM img"
timing "mcc_chamfer_align 10^6 points, similarity" "SELECT c.* FROM cloud, mcc_chamfer_align(obs, ref, 'similarity', 2) c"
timing "mcc_align, 20 mated pairs" \
	"SELECT a.* FROM tpl p JOIN tpl c USING (finger), LATERAL mcc_align(p.template, c.template) a
	 WHERE p.impression = 1 AND c.impression = 0"
echo -e "$table" | sed 's/^/   /' | tee -a "$out/summary.txt"
say "   (Test 3 checked: $(psql_ -tAc "SET mcc.image_device = $device; SELECT x || ',' || y || ',' || sad FROM t3, mcc_sad_locate(t, p)" | tail -1), expected 1234,987,0)"
grep -E "mcc_engine.*(WARNING|ERROR)" /tmp/pgkit.log 2>/dev/null | head -5 | tee -a "$out/summary.txt"
pgkit_down >/dev/null 2>&1
say "exit $status"
exit $status
