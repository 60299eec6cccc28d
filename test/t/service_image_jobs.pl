# Image jobs in the shared matcher engine (issue 18; docs/matcher-service.md,
# "Sharing the service"):
# - only members of mcc_service_user may send image jobs to the engine:
#   SET mcc.image_device = engine or gpu is refused to others, a setting
#   that reaches a non-member otherwise is refused when used, and auto runs
#   a non-member's call in its backend;
# - image jobs run on threads of their own: while a SAD search of a
#   4096 x 4096 image holds the engine's only image thread, identify()
#   through the service answers at once (before, it queued behind the
#   job's bands and waited for mcc.request_timeout), and the job has not
#   got far when it does;
# - at most mcc.image_queue_limit image jobs are admitted: the next one
#   with mcc.image_device = engine fails (53000);
# - the job is cancelled and the engine forgets it.
# The order "identify() answers while the job still runs" holds on any
# machine: the job is some 10^13 byte operations on the CPU; on an engine
# with a GPU for images that part is skipped (it may end first there).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;
use MccBackend;

my $node = service_node('image_jobs', 'mcc.image_worker_threads' => 1,
	'mcc.image_queue_limit' => 1);
served_gallery($node, 'g', 300, 61, 6, 2);
$node->safe_psql('postgres', q{
	SELECT mcc_gallery_preload('g');
	CREATE ROLE plain LOGIN;
	CREATE ROLE imager LOGIN;
	GRANT mcc_service_user TO imager;
	-- a w x h image of one gray level, as a PGM
	CREATE FUNCTION flat(w int, h int) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
		SELECT convert_to(format(E'P5\n%s %s\n255\n', w, h), 'UTF8') || decode(repeat('50', w * h), 'hex')
	$$;
	CREATE TABLE small AS SELECT flat(40, 30) AS t, flat(8, 6) AS p;
	GRANT SELECT ON small TO plain, imager;
});
# the output of a query, '' if it fails (assertions fail, the script goes on)
sub result
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql);
	return $out;
}

is(result('SELECT image_threads || \' \' || image_queue FROM mcc_service_status()'),
	'1 1', 'the engine has 1 image thread and admits 1 image job');

# --- the setting and its use are for members --------------------------------
for my $device ('engine', 'gpu')
{
	my ($ret, $out, $err) = $node->psql('postgres', "SET ROLE plain; SET mcc.image_device = $device");
	like($err, qr/permission denied to set mcc\.image_device to "$device"/,
		"a non-member cannot SET mcc.image_device = $device");
}
my ($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.image_device = engine; SET ROLE plain; SELECT x, y FROM small, mcc_sad_locate(t, p)});
like($err, qr/ERROR:  permission denied to run mcc_sad_locate in the matcher engine/,
	'a setting that reaches a non-member is refused when used');
($ret, $out, $err) = $node->psql('postgres', q{
	SET ROLE plain; SET client_min_messages = debug1; SELECT x, y FROM small, mcc_sad_locate(t, p)});
is($out, '0|0', "with auto a non-member's call is answered");
like($err, qr/mcc_sad_locate runs in this backend: role "plain" is not a member of "mcc_service_user"/,
	'... by its backend, which says why at DEBUG1');
($ret, $out, $err) = $node->psql('postgres', q{
	SET ROLE imager; SET mcc.image_device = engine; SET client_min_messages = debug1;
	SELECT x, y FROM small, mcc_sad_locate(t, p)});
is($out, '0|0', 'a member runs it in the engine');
like($err, qr/mcc_sad_locate ran in the matcher engine on /, '... as DEBUG1 says');

# --- a long image job never delays identify() -------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE huge AS SELECT flat(4096, 4096) AS t, flat(2048, 2048) AS p;
	GRANT SELECT ON huge TO imager;
});
my $gpu = result('SELECT image_gpu FROM mcc_service_status()') eq 't';
my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe("SET ROLE imager");
$s->query_safe("SET mcc.image_device = engine");
$s->query_safe("SET application_name = 'huge_sad'");
$s->query_until(qr/started/, "\\echo started\nSELECT x, y FROM huge, mcc_sad_locate(t, p);\n");
wait_on_engine($node, 'huge_sad', 'the SAD job');
$node->poll_query_until('postgres', 'SELECT image_jobs = 1 OR image_gpu FROM mcc_service_status()')
  or die 'the engine does not show the SAD job';

my $bad = eval { check_all_probes($node, 'g', 5, 0, 'SET mcc.fallback = error;') };
diag($@) unless defined $bad;
is($bad // -1, 0, 'identify() is answered exactly through the service while the image job runs');
SKIP:
{
	skip 'the engine runs image jobs on a GPU, which may finish this one first', 1 if $gpu;
	my $progress = result(
		'SELECT image_jobs || \' \' || round(image_progress::numeric, 3) FROM mcc_service_status()');
	like($progress, qr/^1 0\.[0-4]/,
		"... and the job is still running, less than half done ($progress): identify() did not wait for it");
}
SKIP:
{
	skip 'the engine runs image jobs on a GPU: the first job may be over', 1 if $gpu;
	($ret, $out, $err) = $node->psql('postgres', q{
		\\set VERBOSITY verbose
		SET ROLE imager; SET mcc.image_device = engine; SELECT x, y FROM small, mcc_sad_locate(t, p)});
	like($err, qr/ERROR:  53000: mcc_sad_locate cannot run in the matcher engine: the matcher engine already runs 1 image jobs, its limit/,
		'a second job beyond mcc.image_queue_limit = 1 is refused (53000)');
}

$node->safe_psql('postgres', "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'huge_sad'");
$s->query('SELECT 1');
like($s->{stderr}, qr/canceling statement due to user request/, 'the image job is cancelled')
  unless $gpu;
pass('the image job ended') if $gpu;
$s->quit;
ok($node->poll_query_until('postgres', 'SELECT image_jobs = 0 FROM mcc_service_status()'),
	'the engine forgets the cancelled job');

$node->stop;
done_testing();
