# Matcher service under concurrency: 16 clients run identify() (and now and
# then identify_batch()) while two others insert, delete and update
# templates for the whole test. Every answer is compared with a brute-force
# top-k over the same REPEATABLE READ snapshot, so a stale, missing or
# deleted row in any answer is a failure. The writers also roll back
# subtransactions and change more rows than mcc.max_delta_rows, so deltas,
# every version change (no netting) and reloads are all exercised.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $seconds = $ENV{MCC_CONCURRENCY_SECONDS} // 20;
my $node = service_node('concurrency',
	'mcc.max_delta_rows' => 15,
	'mcc.fallback' => "'error'");	# a silent fallback would hide the service

served_gallery($node, 'g', 1500, 7, 24, 8);
# the cache (and its slot, which takes every commit's generation) exists
# before the writers start: commits before a slot exists take none
$node->safe_psql('postgres', "SELECT mcc_gallery_preload('g')");
my $gen0 = $node->safe_psql('postgres',
	"SELECT generation FROM mcc_gallery_status WHERE gallery = 'g'::regclass");

# --- writer scripts -----------------------------------------------------
# A new row named $person and a random row deleted in one transaction that
# ends with $end (COMMIT, or ROLLBACK: a change the service must never show).
sub insert_delete
{
	my ($person, $end) = @_;
	return qq{
\\set id random(1000000, 2000000000)
BEGIN;
INSERT INTO g SELECT :id, '$person', template FROM mcc_synthetic(1, 1, :id, :id) ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
$end;
};
}

my %writer = (
	'insert_delete.sql' => insert_delete('new', 'COMMIT'),
	'update.sql' => q{
\set id random(1000000, 2000000000)
UPDATE g SET tpl = (SELECT template FROM mcc_synthetic(1, 1, :id, :id))
WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
UPDATE g SET person = 'renamed' WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
},
	'savepoint.sql' => q{
\set id random(1000000, 2000000000)
BEGIN;
SAVEPOINT a;
INSERT INTO g SELECT :id, 'gone', template FROM mcc_synthetic(1, 1, :id, :id) ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
ROLLBACK TO a;
INSERT INTO g SELECT :id + 1, 'kept', template FROM mcc_synthetic(1, 1, :id + 1, :id + 1) ON CONFLICT DO NOTHING;
INSERT INTO g SELECT :id + 2, 'brief', template FROM mcc_synthetic(1, 1, :id + 2, :id + 2) ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id = :id + 2;
DELETE FROM g WHERE id = (SELECT id FROM g WHERE id < 1000000 ORDER BY random() LIMIT 1);
COMMIT;
},
	'bulk.sql' => q{
\set id random(1000000, 2000000000)
BEGIN;
INSERT INTO g SELECT finger, 'bulk', template FROM mcc_synthetic(20, 1, :id, :id) ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id IN (SELECT id FROM g ORDER BY random() LIMIT 20);
COMMIT;
},
	'abort.sql' => insert_delete('aborted', 'ROLLBACK'),
);

# --- reader scripts -----------------------------------------------------
my %reader = (
	'identify.sql' => q{
\set p random(1, 32)
\set k random(1, 12)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_identify('g', tpl, :k, 0) FROM probes WHERE pid = :p;
COMMIT;
},
	'identify_min.sql' => q{
\set p random(1, 32)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_identify('g', tpl, 50, 0.05) FROM probes WHERE pid = :p;
COMMIT;
},
	'batch.sql' => q{
\set p random(1, 28)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_batch('g', array_agg(tpl ORDER BY pid), 5) FROM probes WHERE pid BETWEEN :p AND :p + 4;
COMMIT;
},
);

my $dir = pgbench_scripts(%writer, %reader);

my @conn = pgbench_conn($node);
my ($wout, $werr, $rout, $rerr) = ('', '', '', '');
my $writers = IPC::Run::start(
	[
		'pgbench', @conn, '-c', '2', '-j', '2', '-T', $seconds + 2,
		'-f', "$dir/insert_delete.sql\@20", '-f', "$dir/update.sql\@8",
		'-f', "$dir/savepoint.sql\@6", '-f', "$dir/bulk.sql\@1",
		'-f', "$dir/abort.sql\@5"
	],
	'>', \$wout, '2>', \$werr);
sleep 1;
my $readers_ok = IPC::Run::run(
	[
		'pgbench', @conn, '-c', '16', '-j', '4', '-T', $seconds,
		'-f', "$dir/identify.sql\@8", '-f', "$dir/identify_min.sql\@2",
		'-f', "$dir/batch.sql\@1"
	],
	'>', \$rout, '2>', \$rerr);
my $writers_ok = $writers->finish;

ok($readers_ok, '16 readers ran to the end without an error') or diag($rerr);
ok($writers_ok, 'two writers ran to the end without an error') or diag($werr);
my ($wtx) = $wout =~ /number of transactions actually processed: (\d+)/;
ok(defined $wtx && $wtx > 20, "writers committed changes during the test ($wtx)");

my ($total, $bad) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(*) FILTER (WHERE NOT ok) FROM checks');
ok($total >= 100, "answers were checked ($total)");
is($bad, 0, 'every answer equals the brute-force top-k of its snapshot')
  or diag($node->safe_psql('postgres', 'SELECT what FROM checks WHERE NOT ok LIMIT 3'));

# mcc.fallback = error: an answer that did not come from the engine would
# have been an error above
my ($searches, $generation) = split /\|/, $node->safe_psql('postgres',
	"SELECT searches, generation FROM mcc_gallery_status WHERE gallery = 'g'::regclass");
ok($searches > 0, "the matcher engine searched ($searches searches in the current cache)");
# 35 of the writers' 40 weighted scripts commit a change (abort.sql does not)
ok($generation - $gen0 > $wtx / 2,
	"writers advanced the gallery's generation (by " . ($generation - $gen0) . " in $wtx transactions)");
my $loads = () = slurp_file($node->logfile) =~ /loaded: \d+ entries/g;
note "cache loads during the test: $loads";

# after the writers: a last pass over every probe, several k
$node->safe_psql('postgres', 'TRUNCATE checks');
is(check_all_probes($node, 'g', 10), 0, 'quiet gallery: every probe exact (k = 10)');
is(check_all_probes($node, 'g', 1), 0, 'quiet gallery: every probe exact (k = 1)');
is($node->safe_psql('postgres', q{
	SELECT check_batch('g', array_agg(tpl ORDER BY pid), 7) FROM probes}), 't',
	'identify_batch of every probe equals brute force');
is($node->safe_psql('postgres', "SELECT state FROM mcc_gallery_status WHERE gallery = 'g'::regclass"),
	'cached', 'the gallery is cached and current');

$node->stop;
done_testing();
