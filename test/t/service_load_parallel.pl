# A full load read by several parallel workers (mcc.load_workers; issue 19,
# src/service/service_load_parallel.c) gives the serial load's cache:
# identify() under mcc.fallback = error equals brute force on a gallery of
# TOASTed and inline templates,
#  - with versions the workers must leave to the leader (inserted by a
#    transaction still open, deleted before the loader's snapshot while an
#    older snapshot still sees them: their TOAST data may vanish, so only
#    the leader, out of parallel mode, reads them in a subtransaction);
#  - with a writer updating, deleting and inserting rows during the loads.
# A worker's ERROR (a cancelled worker) fails the load whole and the
# gallery is not served, or its previous cache keeps serving; a cancelled
# leader stops its workers. (Each worker sends its rows on its own engine
# connection, joined to the leader's load: test_engine_load_join covers the
# join's token and a part's connection closing, cancelled or unfinished.)
# mcc_gallery_preload's answer, which the load's scan counts (workers and
# leader), equals SELECT count(*) under the same snapshot throughout.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('pload',
	'mcc.fallback' => "'error'",	# every answer from the engine
	'max_worker_processes' => 16,
	'max_parallel_workers' => 8,
	'mcc.max_delta_rows' => 100000);	# the writer's changes come as deltas
my $par = 'SET min_parallel_table_scan_size = 0; SET mcc.load_workers = 3; '
  . 'SET log_min_messages = debug1;';

# half the templates out of line (TOAST), half inline (STORAGE MAIN)
$node->safe_psql('postgres', q{
	CREATE TABLE g (id bigint PRIMARY KEY, person text, tpl mcc_template);
	INSERT INTO g SELECT finger, 'p', template FROM mcc_synthetic(600, 1, 11);
	ALTER TABLE g ALTER tpl SET STORAGE MAIN;
	INSERT INTO g SELECT finger, 'p', template FROM mcc_synthetic(600, 1, 11, 600);
	ANALYZE g;
	CREATE TABLE spare AS SELECT 5000 + finger AS id, template AS tpl FROM mcc_synthetic(200, 1, 12);
});
my $toast = $node->safe_psql('postgres',
	q{SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'g'::regclass});
my ($outline) = $node->safe_psql('postgres', "SELECT count(DISTINCT chunk_id) FROM $toast");
ok($outline >= 50 && $outline <= 600, "templates both out of line ($outline) and inline");
create_probes($node, 11, 10, 4);
install_checks($node);
$node->safe_psql('postgres', "SELECT mcc_gallery_register('g')");

sub workers_log
{
	my ($from) = @_;
	my $log = slurp_file($node->logfile, $from);
	my @runs = $log =~ /read by (\d+) parallel workers: (\d+) rows, (\d+) left to the leader/g;
	return @runs;
}

# preload with the count(*) of the same statement's snapshot: their difference
my $preload_diff = "SELECT mcc_gallery_preload('g') - (SELECT count(*) FROM g WHERE tpl IS NOT NULL)";

# 1. a plain parallel load
my $pos = -s $node->logfile;
is($node->safe_psql('postgres', "$par $preload_diff"), 0,
	"preload's answer is count(*)'s after a parallel load");
my @r = workers_log($pos);
ok(@r && $r[0] >= 1, "the load ran on parallel workers (@r)");
is(check_all_probes($node, 'g', 5), 0, 'identify() equals brute force after a parallel load');

# 2. versions left to the leader: an open insert (out of line) and deletes
#    committed before the loader's snapshot that an older snapshot still sees
$node->safe_psql('postgres', 'ALTER TABLE g ALTER tpl SET STORAGE EXTENDED');
my $old = $node->background_psql('postgres', on_error_stop => 1);
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$old->query_safe('SELECT count(*) FROM g');
$node->safe_psql('postgres', 'DELETE FROM g WHERE id % 10 = 3 AND id < 600');
my $w = $node->background_psql('postgres', on_error_stop => 1);
$w->query_safe('BEGIN');
$w->query_safe('INSERT INTO g SELECT id, \'new\', tpl FROM spare WHERE id < 5100');
$w->query_safe('DELETE FROM g WHERE id % 10 = 4');
$pos = -s $node->logfile;
is($node->safe_psql('postgres', "$par $preload_diff"), 0,
	"preload's answer is count(*)'s with versions left to the leader");
@r = workers_log($pos);
ok(@r && $r[0] >= 1 && $r[2] > 0, "risky versions were left to the leader (@r)");
is($node->safe_psql('postgres', "SET mcc.load_workers = 0; $preload_diff"), 0,
	"a serial load's answer is count(*)'s while the writer is open");
is(check_all_probes($node, 'g', 5), 0, 'identify() exact while the writer is open');
$w->query_safe('COMMIT');
$w->quit;
is(check_all_probes($node, 'g', 5), 0, 'identify() exact after the writer committed');
# the caller's own deletes, not committed, in the loading transaction
is($node->safe_psql('postgres',
		"BEGIN; DELETE FROM g WHERE id < 40 AND id % 10 IN (1, 2); $par $preload_diff; ROLLBACK"), 0,
	"preload's answer counts the caller's own uncommitted deletes as count(*) does");
$old->query_safe('COMMIT');
$old->quit;

# 3. a writer changing rows during several parallel loads
$node->safe_psql('postgres', q{
	CREATE PROCEDURE churn(n int) LANGUAGE plpgsql AS $$
	BEGIN
		FOR i IN 1 .. n LOOP
			UPDATE g SET tpl = (SELECT tpl FROM spare WHERE id = 5100 + i % 100)
				WHERE id = (i * 7) % 1200;
			DELETE FROM g WHERE id = (i * 13 + 1) % 1200;
			INSERT INTO g SELECT 6000 + i, 'churn', tpl FROM spare WHERE id = 5000 + i % 200
				ON CONFLICT (id) DO NOTHING;
			COMMIT;
		END LOOP;
	END $$;
});
my $churn = $node->background_psql('postgres', on_error_stop => 1);
$churn->query_until(qr/started/, "\\echo started\nCALL churn(400);\n\\echo finished\n");
for (1 .. 4)
{
	is($node->safe_psql('postgres', "$par $preload_diff"), 0,
		"preload's answer is count(*)'s during the writer's changes ($_)");
	is(check_all_probes($node, 'g', 5), 0, "identify() exact during the writer's changes ($_)");
}
$churn->query_until(qr/finished/, '');
$churn->quit;
is(check_all_probes($node, 'g', 5), 0, "identify() exact after the writer's changes");
$node->safe_psql('postgres', "$par SELECT mcc_gallery_preload('g')");
is(check_all_probes($node, 'g', 3), 0, 'identify() exact after a final parallel load');

# 4. a worker's ERROR (a cancelled worker) fails the load whole, and a
#    cancelled leader stops its workers. The engine is held with SIGSTOP
#    (as in service_cancel.pl) so that the workers are still reading when
#    they are cancelled: the leader's socket and the workers' queues fill
#    and nothing finishes until SIGCONT. No cache snapshots on this node:
#    the load then asks the engine nothing before its rows.
my $e = service_node('pload_err', 'mcc.fallback' => "'error'", 'mcc.cache_snapshots' => 'off',
	'max_worker_processes' => 16, 'max_parallel_workers' => 8);
$e->safe_psql('postgres', q{
	CREATE TABLE held (id bigint PRIMARY KEY, tpl mcc_template);
	CREATE TABLE base AS SELECT finger, template FROM mcc_synthetic(1000, 1, 21);
	INSERT INTO held SELECT k * 1000 + finger, template FROM base, generate_series(0, 9) k;
	CREATE TABLE probe AS SELECT template AS tpl FROM mcc_synthetic(1, 2, 21) WHERE impression = 1;
	SELECT mcc_gallery_register('held');
	CREATE TABLE tiny (id bigint PRIMARY KEY, tpl mcc_template);
	INSERT INTO tiny SELECT finger, template FROM base LIMIT 10;
	SELECT mcc_gallery_register('tiny');
});
install_checks($e);
my $engine = $e->safe_psql('postgres', 'SELECT engine_pid FROM mcc_service_status()');
my $held = 0;
sub hold    { $held = kill('STOP', $engine); return $held; }
sub release { kill('CONT', $engine) if $held; $held = 0; }
END { release(); }

# The third round reloads a gallery already cached: a worker's failure
# fails the whole reload (its connection, joined to the leader's load,
# closes mid-part; the leader's error closes the leader's) and the previous
# cache keeps serving, unchanged.
my $status = "SELECT state || ' ' || loaded_at FROM mcc_gallery_status WHERE gallery = 'held'::regclass";
for my $who ('worker', 'leader', 'worker, with a cache')
{
	my $cached = $who =~ /cache/;
	my $before;
	if ($cached)
	{
		$e->safe_psql('postgres', "$par SELECT mcc_gallery_preload('held')");
		$before = $e->safe_psql('postgres', $status);
		like($before, qr/^cached /, 'the gallery is cached before the failing reload');
	}
	my $l = $e->background_psql('postgres', on_error_stop => 0);
	# talk to the engine once, so that the load below is in flight, not connecting
	$l->query_safe("SELECT mcc_gallery_preload('tiny')");
	$l->query_safe("SET application_name = 'loader'");
	my $leader = $l->query_safe('SELECT pg_backend_pid()');
	$leader =~ s/\s+//g;
	ok(hold(), "engine stopped ($who)");
	$l->{stderr} = '';
	$l->query_until(qr/started/,
		"\\echo started\n$par SELECT mcc_gallery_preload('held');\n\\echo finished\n");
	$e->poll_query_until('postgres', qq{
		SELECT count(*) > 0 FROM pg_stat_activity
		WHERE leader_pid = $leader AND pid <> $leader})
	  or die "no parallel worker of the load appeared";
	my $target = $who =~ /worker/
	  ? "(SELECT min(pid) FROM pg_stat_activity WHERE leader_pid = $leader AND pid <> $leader)"
	  : $leader;
	$e->safe_psql('postgres', "SELECT pg_cancel_backend($target)");
	$l->query_until(qr/finished/, '');
	like($l->{stderr}, qr/canceling statement due to user request/, "the load failed ($who cancelled)");
	like($l->{stderr}, qr/parallel worker/, "with the worker's error as its context")
	  if $who =~ /worker/;
	$e->poll_query_until('postgres', qq{
		SELECT count(*) = 0 FROM pg_stat_activity WHERE leader_pid = $leader AND pid <> $leader})
	  or die "workers left behind";
	pass("no worker left after the $who was cancelled");
	release();
	if ($cached)
	{
		is($e->safe_psql('postgres', $status), $before,
			'the previous cache stays, unchanged (same load time)');
		is($e->safe_psql('postgres', 'SELECT check_identify(\'held\', tpl, 5, 0) FROM probe'), 't',
			'and serves: identify() through the engine equals brute force');
	}
	else
	{
		isnt($e->safe_psql('postgres', "SELECT state FROM mcc_gallery_status WHERE gallery = 'held'::regclass"),
			'cached', 'nothing half loaded is served');
	}
	$l->quit;
}
is($e->safe_psql('postgres', qq{$par
	SELECT check_identify('held', tpl, 5, 0) FROM probe}), 't',
	'a load after the failed ones answers as brute force');
$e->stop;

$node->stop;
done_testing();
