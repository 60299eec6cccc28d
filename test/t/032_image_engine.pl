# Image and point functions through the matcher engine (mcc.image_device,
# src/image/image_engine.c, docs/matcher-engine.md "Image jobs"): with the service
# preloaded, every function's answer with mcc.image_device = engine (the
# engine's GPU where it has one, else its CPU threads, as in CI) equals its
# answer in the backend (mcc.image_device = cpu), errors included; a DEBUG1
# line says where each call ran. Also: auto runs in the backend when the
# engine has no GPU, gpu is an error then; a statement_timeout stops a
# long engine job and the session and the engine go on; without the
# service, auto runs in the backend and engine is an error; mcc.so links no
# CUDA. On the FVC2002 images of ../shared/data (when present), 1:N
# verification of real prints equals the backend's.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccSharedData;
use MccServiceTest;

my $node = service_node('image_engine');
my $pid0 = service_pid($node, 'engine');

$node->safe_psql('postgres', q{
	-- a binary PGM of w x h pixels from an int[] (row by row)
	CREATE FUNCTION pgm(w int, h int, px int[]) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
		SELECT convert_to(format(E'P5\n%s %s\n255\n', w, h), 'UTF8') ||
			   decode(string_agg(lpad(to_hex(v), 2, '0'), '' ORDER BY k), 'hex')
		FROM unnest(px) WITH ORDINALITY AS t(v, k)
	$$;
	-- w x h pseudo-random bytes as a PGM (md5 of a seed and a counter)
	CREATE FUNCTION noise(w int, h int, seed int) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
		SELECT convert_to(format(E'P5\n%s %s\n255\n', w, h), 'UTF8') ||
			   substring(decode(string_agg(md5(seed || ':' || i), '' ORDER BY i), 'hex')
						 FROM 1 FOR w * h)
		FROM generate_series(0, (w * h) / 16) i
	$$;
	-- a print-like image: stripes of period 9 at angle phi in a disc
	CREATE FUNCTION print(side int, phi float8, r float8) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
		SELECT pgm(side, side, array_agg(v ORDER BY y, x))
		FROM generate_series(0, side - 1) y, generate_series(0, side - 1) x,
			 LATERAL (SELECT CASE WHEN (x - side / 2) ^ 2 + (y - side / 2) ^ 2 <= r ^ 2
				THEN round(128 + 100 * cos(2 * pi() * ((x - side / 2) * cos(phi)
												 + (y - side / 2) * sin(phi)) / 9))::int
				ELSE 230 END) AS p(v)
	$$;
	CREATE TABLE img AS
	SELECT noise(300, 200, 1) AS t, mcc_image_crop(noise(300, 200, 1), 171, 83, 40, 30) AS p,
		   noise(31, 22, 2) AS a, noise(35, 19, 3) AS b, noise(70, 22, 4) AS wide,
		   print(160, 0, 60) AS across, print(160, pi() / 2, 60) AS along,
		   print(140, 0.3, 55) AS tilted, pgm(8, 8, array_fill(7, ARRAY[64])) AS tiny;
	CREATE TABLE pts AS
	SELECT (SELECT array_agg(ARRAY[20 + 40 * cos(i * 0.7) + 5 * sin(i * 1.3), -7 + 30 * sin(i * 0.5)]
							 ORDER BY i) FROM generate_series(1, 300) i) AS ref,
		   (SELECT array_agg(ARRAY[1.1 * (cos(0.2) * x - sin(0.2) * y) + 5,
								   1.1 * (sin(0.2) * x + cos(0.2) * y) - 3] ORDER BY i)
			FROM (SELECT i, 20 + 40 * cos(i * 0.7) + 5 * sin(i * 1.3) AS x, -7 + 30 * sin(i * 0.5) AS y
				  FROM generate_series(1, 250) i) s) AS obs,
		   (SELECT array_agg(ARRAY[cos(i * 0.3) * 10, sin(i * 0.3) * 10, i * 0.1] ORDER BY i)
			FROM generate_series(1, 200) i) AS ref3,
		   (SELECT array_agg(ARRAY[cos(i * 0.3) * 10 + 1, sin(i * 0.3) * 10, i * 0.1 - 0.5] ORDER BY i)
			FROM generate_series(1, 180) i) AS obs3;
	CREATE TABLE tpl AS SELECT finger, impression, template FROM mcc_synthetic(3, 2, 77);
});

# Run $sql with mcc.image_device = $device and DEBUG1 messages; its output,
# the error line (or '') and where the DEBUG1 line says it ran.
sub run_on
{
	my ($device, $sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres',
		"SET mcc.image_device = $device; SET client_min_messages = debug1; $sql",
		stdout => \$out, stderr => \$err, on_error_stop => 0);
	# the error with its DETAIL and HINT lines (not LOCATION: source lines)
	my $error = join("\n", grep { /ERROR:|^(DETAIL|HINT):/ } split(/\n/, $err));
	$error =~ s/^psql:[^:]*:\d+: //mg;
	my ($where) = $err =~ /ran in the matcher engine on (.*)$/m;
	$where = 'backend' unless defined $where;
	return ($out, $error, $where);
}

# With mcc.image_device = gpu on a machine without one: the error says so.
my (undef, $gpu_err) = run_on('gpu', 'SELECT mcc_dp2d_distance(a, b) FROM img');
my $has_gpu = $gpu_err eq '';
note($has_gpu ? 'the engine has a GPU' : "the engine has no GPU: $gpu_err");
my $engine_on = $has_gpu ? qr/^(?!cpu$).+/ : qr/^cpu$/;

# The same answer in the backend and in the engine, and it ran there.
sub same
{
	my ($name, $sql) = @_;
	my ($cpu, $cpu_err, $cpu_where) = run_on('cpu', $sql);
	my ($eng, $eng_err, $eng_where) = run_on('engine', $sql);
	ok($cpu_err eq '' && $cpu ne '' && $cpu eq $eng && $eng_err eq '' && $cpu_where eq 'backend'
		  && $eng_where =~ $engine_on,
		"$name: the engine ($eng_where) answers as the backend")
	  or diag("backend [$cpu] $cpu_err\nengine [$eng] $eng_err ($eng_where)");
}

# The same error in the backend and in the engine.
sub same_error
{
	my ($name, $sql, $like) = @_;
	my (undef, $cpu_err) = run_on('cpu', "\\set VERBOSITY verbose\n$sql");
	my (undef, $eng_err) = run_on('engine', "\\set VERBOSITY verbose\n$sql");
	ok($cpu_err ne '' && $cpu_err eq $eng_err && $cpu_err =~ $like,
		"$name: the engine raises the backend's error")
	  or diag("backend: $cpu_err\nengine:  $eng_err");
}

# --- SAD search ---------------------------------------------------------------
same('mcc_sad_locate(bytea) k = 5', 'SELECT * FROM img, mcc_sad_locate(t, p, 5)');
same('mcc_sad_locate(bytea) k above the shift count',
	'SELECT count(*), min(sad), max(sad) FROM img, mcc_sad_locate(p, mcc_image_crop(p, 0, 0, 38, 27), 100000)');
same('mcc_sad_locate(smallint[]) k = 3',
	'SELECT * FROM img, mcc_sad_locate(mcc_image_to_array(t), mcc_image_to_array(p), 3)');
same('mcc_sad_map(bytea)', 'SELECT md5(mcc_sad_map(t, p)) FROM img');
same('mcc_sad_map(smallint[])',
	'SELECT md5(mcc_sad_map(mcc_image_to_array(t), mcc_image_to_array(p))) FROM img');
same('mcc_sad_map_array(bytea)', 'SELECT md5(mcc_sad_map_array(t, p)::text) FROM img');
same('mcc_sad_map_array(smallint[])',
	'SELECT md5(mcc_sad_map_array(mcc_image_to_array(a), mcc_image_to_array(mcc_image_crop(a, 3, 4, 9, 7)))::text) FROM img');
same_error('mcc_sad_locate, pattern larger than target', 'SELECT * FROM img, mcc_sad_locate(p, t)',
	qr/22023.*larger than the target/);

# --- elastic matching -----------------------------------------------------------
same('mcc_dp2d_distance', 'SELECT mcc_dp2d_distance(a, b), mcc_dp2d_distance(b, a) FROM img');
same('mcc_dp2d_warp', 'SELECT md5(mcc_dp2d_warp(a, b)) FROM img');
same('mcc_dp2d_differences', 'SELECT mcc_dp2d_differences(across, tilted), mcc_dp2d_differences(across, along) FROM img');
same('mcc_dp2d_verify', 'SELECT mcc_dp2d_verify(across, tilted, 3000), mcc_dp2d_verify(across, across, 0) FROM img');
same('mcc_dp2d_verify_many',
	'SELECT v.* FROM img, mcc_dp2d_verify_many(across, ARRAY[across, tilted, NULL, along, a], 2500) v');
same('mcc_dp2d_differences and verify_many, algorithm overall', q{
	SELECT mcc_dp2d_differences(across, tilted, 'overall') AS d, v.* FROM img,
		mcc_dp2d_verify_many(across, ARRAY[across, tilted, NULL, along, a], 2500, 'overall') v});
same_error('mcc_dp2d_distance, widths too different', 'SELECT mcc_dp2d_distance(a, wide) FROM img',
	qr/22023.*too different/);
same_error('mcc_dp2d_verify_many, a probe too small to enhance',
	'SELECT * FROM img, mcc_dp2d_verify_many(across, ARRAY[tilted, along, tiny], 0)',
	qr/22023.*cannot enhance the probe 3 image/);
same_error('mcc_dp2d_differences, a reference too small to enhance',
	'SELECT mcc_dp2d_differences(tiny, across) FROM img', qr/cannot enhance the reference image/);

# --- alignment ------------------------------------------------------------------
same('mcc_chamfer_align 2D similarity', 'SELECT * FROM pts, mcc_chamfer_align(obs, ref)');
same('mcc_chamfer_align 2D affine, truncated',
	q{SELECT * FROM pts, mcc_chamfer_align(obs, ref, 'affine', 0.5, 8)});
same('mcc_chamfer_align 2D from an initial transform',
	q{SELECT * FROM pts, mcc_chamfer_align(obs, ref, 'similarity', 0, 'Infinity', '{1.05,0.15,4,-2}')});
same('mcc_chamfer_align 3D euclidean', q{SELECT * FROM pts, mcc_chamfer_align(obs3, ref3, 'euclidean')});
same_error('mcc_chamfer_align, one reference point',
	q{SELECT * FROM pts, mcc_chamfer_align(obs, '{{1,2}}')}, qr/coincide|at least/);
same('mcc_align', q{
	SELECT a.*, b.* FROM tpl p, tpl c,
		LATERAL mcc_align(p.template, c.template) a,
		LATERAL mcc_align(p.template, c.template, 'similarity', false, 20) b
	WHERE p.finger = 1 AND p.impression = 1 AND c.finger = 1 AND c.impression = 0});
same('mcc_chamfer_align 2D, the search over scales 0.5-2',
	q{SELECT * FROM pts, mcc_chamfer_align(obs, ref, min_scale => 0.5, max_scale => 2)});
same('mcc_align from an initial transform, and similarity from any pose', q{
	SELECT a.*, b.* FROM tpl p, tpl c,
		LATERAL mcc_align(p.template, c.template, initial => '{0.1, 4, -3}') a,
		LATERAL mcc_align(p.template, c.template, 'similarity') b
	WHERE p.finger = 1 AND p.impression = 1 AND c.finger = 1 AND c.impression = 0});

# --- choosing the device ------------------------------------------------------
{
	my (undef, $err, $where) = run_on('auto', 'SELECT mcc_dp2d_distance(a, b) FROM img');
	if ($has_gpu)
	{
		like($where, $engine_on, "auto runs on the engine's GPU ($where)");
	}
	else
	{
		is("$err|$where", '|backend', 'auto runs in the backend when the engine has no GPU');
	}
	SKIP:
	{
		skip 'the engine has a GPU', 1 if $has_gpu;
		like($gpu_err, qr/cannot run in the matcher engine: the matcher engine has no GPU/,
			'gpu without a GPU: an error that says so');
	}
}

# --- a long job stopped by statement_timeout --------------------------------------
$node->safe_psql('postgres',
	'CREATE TABLE big AS SELECT noise(2000, 2000, 5) AS t, noise(200, 200, 6) AS p');
{
	my ($out, $err) = run_on('engine',
		"SET statement_timeout = '300ms'; SELECT * FROM big, mcc_sad_locate(t, p); RESET statement_timeout;"
		  . ' SELECT x, y, sad FROM img, mcc_sad_locate(t, p)');
	like($err, qr/canceling statement due to statement timeout/,
		'statement_timeout stops a long SAD job in the engine');
	like($out, qr/^171\|83\|0$/m, 'the session goes on: the next job finds the patch with SAD 0');
	is(service_pid($node, 'engine'), $pid0, 'the engine did not restart');
	ok(!$node->log_contains('mcc_engine\[\d+\]: (ERROR|WARNING)'), 'the engine logged no warning or error');
}

# --- real prints ------------------------------------------------------------------
my $data = shared_data('fvc2002/images');
SKIP:
{
	skip 'FVC2002 images absent (set MCC_SHARED_DATA to ../shared/data)', 1 unless $data;
	my $dir = "$data/fvc2002/images/DB1_B";
	same('mcc_dp2d_verify_many on FVC2002 DB1_B prints', qq{
		SELECT v.* FROM mcc_dp2d_verify_many(pg_read_binary_file('$dir/101_1.png'),
			ARRAY(SELECT pg_read_binary_file('$dir/' || f) FROM unnest(ARRAY['101_2.png', '101_3.png',
				'102_1.png', '103_1.png']) f), 9000) v});
}

# --- no CUDA in the module ----------------------------------------------------------
{
	my $pkglib = `pg_config --pkglibdir`;
	chomp $pkglib;
	my $ldd = `ldd '$pkglib/mcc.so' 2>&1`;
	my $nm = `nm -D '$pkglib/mcc.so' 2>&1`;
	ok($ldd ne '' && $ldd !~ /cuda/i && $nm !~ /cuda/i, 'mcc.so links no CUDA library and has no CUDA symbol');
}

$node->stop;

# --- without the service ----------------------------------------------------------
my $plain = service_node('image_plain', preload => 0);
{
	my ($out, $err) = ('', '');
	$plain->psql('postgres', q{SELECT mcc_dp2d_distance('\x50350a3120310a3235350a0a'::bytea, '\x50350a3120310a3235350a1e'::bytea)},
		stdout => \$out, stderr => \$err);
	is($out, '20', 'without the service, auto runs in the backend');
	$plain->psql('postgres', q{SET mcc.image_device = engine;
		SELECT mcc_dp2d_distance('\x50350a3120310a3235350a0a'::bytea, '\x50350a3120310a3235350a1e'::bytea)},
		stdout => \$out, stderr => \$err);
	like($err, qr/cannot run in the matcher engine: mcc is not in shared_preload_libraries/,
		'without the service, engine is an error that says why');
}
$plain->stop;
done_testing();
