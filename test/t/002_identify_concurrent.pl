# identify()'s backend scan (no matcher service) while other sessions write
# the gallery: 4 readers compare every answer with a brute-force top-k over
# the same REPEATABLE READ snapshot while 2 writers replace templates (new
# values in the TOAST table, the old ones' chunks left for the readers'
# snapshots), change other columns only (the new row version points at the
# same TOAST value), insert, delete, roll back, and vacuum the gallery (pages
# pruned and TOAST chunks removed under the readers). The heap pages and the
# TOAST pages are read by the scan's own loops (src/identify/gallery_scan.c,
# src/template/toast_stream.c); a row or template the snapshot should not
# see, or one it should see and the scan missed, is a failure.
#
# The counts of transactions are fixed (pgbench -t), not durations, so the
# outcome does not depend on the machine's speed; how much the readers and
# writers overlap does, and is only reported.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('identify_concurrent', preload => 0);

create_gallery($node, 'g', 1500, 7);
create_probes($node, 7, 24, 8);
install_checks($node);
my ($rows, $out_of_line) = split /\|/, $node->safe_psql('postgres', q{
	SELECT count(*), count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 2100) FROM g});
cmp_ok($out_of_line, '>', $rows / 5,
	"the gallery has templates stored out of line ($out_of_line of $rows)");

my %script = (
	# a template replaced: its new value goes to the TOAST table
	'replace.sql' => q{
\set id random(1000000, 2000000000)
UPDATE g SET tpl = (SELECT template FROM mcc_synthetic(1, 1, :id, :id))
WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
},
	# another column changed: the new version shares the old one's TOAST value
	'rename.sql' => q{
UPDATE g SET person = 'renamed' WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
},
	'insert_delete.sql' => q{
\set id random(1000000, 2000000000)
BEGIN;
INSERT INTO g SELECT :id, 'new', template FROM mcc_synthetic(1, 1, :id, :id) ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
COMMIT;
},
	'abort.sql' => q{
\set id random(1000000, 2000000000)
BEGIN;
UPDATE g SET tpl = (SELECT template FROM mcc_synthetic(1, 1, :id, :id))
WHERE id IN (SELECT id FROM g ORDER BY random() LIMIT 5);
ROLLBACK;
},
	'vacuum.sql' => q{
VACUUM g;
},
	'identify.sql' => q{
\set p random(1, 32)
\set k random(1, 40)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET LOCAL mcc.service = off;
SELECT check_identify('g', tpl, :k, 0) FROM probes WHERE pid = :p;
SELECT check_identify('g', tpl, 10, 0) FROM probes WHERE pid = :p % 32 + 1;
COMMIT;
},
);
my $dir = pgbench_scripts(%script);

my @conn = pgbench_conn($node);
my ($wout, $werr, $rout, $rerr) = ('', '', '', '');
my $writers = IPC::Run::start(
	[
		'pgbench', @conn, '-c', '2', '-j', '2', '-t', '200',
		'-f', "$dir/replace.sql\@10", '-f', "$dir/rename.sql\@5",
		'-f', "$dir/insert_delete.sql\@5", '-f', "$dir/abort.sql\@2",
		'-f', "$dir/vacuum.sql\@1"
	],
	'>', \$wout, '2>', \$werr);
my $readers_ok = IPC::Run::run(
	[ 'pgbench', @conn, '-c', '4', '-j', '4', '-t', '30', '-f', "$dir/identify.sql" ],
	'>', \$rout, '2>', \$rerr);
my $writers_ok = $writers->finish;

ok($readers_ok, '4 readers ran to the end without an error') or diag($rerr);
ok($writers_ok, 'two writers ran to the end without an error') or diag($werr);
my ($checks, $bad) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(*) FILTER (WHERE NOT ok) FROM checks');
is($checks, 240, 'every reader transaction compared its two answers');
is($bad, 0, 'every answer of the backend scan equals brute force over its snapshot')
  or diag($node->safe_psql('postgres', 'SELECT what FROM checks WHERE NOT ok LIMIT 3'));
my $inserted = $node->safe_psql('postgres', "SELECT count(*) FROM g WHERE id >= 1000000");
note("rows the writers inserted and did not delete: $inserted");

# after the writers: the whole gallery again, every probe, in one snapshot
is($node->safe_psql('postgres', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SET LOCAL mcc.service = off;
	SELECT count(*) FILTER (WHERE check_identify('g', tpl, 25, 0)) FROM probes;
	COMMIT;}), 32, 'after the writers, every probe equals brute force');

$node->stop;
done_testing();
