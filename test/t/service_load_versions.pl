# A load while a writer's transaction is open sees its rows half way: the
# old version of a row already deleted but not yet its replacement, a new
# row not yet deleted again. Only the writer's delta at commit brings those
# entries to the committed state, so it must carry every version it wrote.
# When the triggers netted a delete and a re-insert of the same key and
# template away (and UPDATEs that keep both: service_concurrency.pl lost a
# renamed row that way, the load having passed the page its new version went
# to), the cache kept the deleted old version only; a settle purged it and
# identify() no longer found a visible row. Netting away an insert and a
# delete left an entry of a deleted row live for good.
#
# Here the load runs between the two halves of each pair, deterministically.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MccServiceTest;

my $node = service_node('versions',
	'mcc.max_delta_rows' => 8,
	'mcc.fallback' => "'error'");	# an answer must come from the engine
create_gallery($node, 'g', 300, 7);
install_checks($node);
$node->safe_psql('postgres', q{
	SELECT mcc_gallery_register('g');
	SELECT mcc_gallery_preload('g');
	CREATE TABLE saved AS SELECT * FROM g WHERE id IN (5, 6);
	CREATE TABLE extra AS SELECT 900001::bigint AS id, 'extra'::text AS person, template AS tpl
		FROM mcc_synthetic(1, 1, 4242);
});

# the writer's transaction, open across the load
my $w = $node->background_psql('postgres', on_error_stop => 1);
$w->query_safe('BEGIN');
$w->query_safe('DELETE FROM g WHERE id = 5');				# deleted, re-inserted below
$w->query_safe("UPDATE g SET person = 'renamed' WHERE id = 6");	# renamed, deleted below
$w->query_safe('INSERT INTO g SELECT * FROM extra');			# inserted, deleted below

# more changed rows than mcc.max_delta_rows (8) mark a reload; the preload runs it
$node->safe_psql('postgres', q{
	INSERT INTO g SELECT 800000 + finger, 'bulk', template FROM mcc_synthetic(10, 1, 4343)});
$node->safe_psql('postgres', "SELECT mcc_gallery_preload('g')");
is($node->safe_psql('postgres', q{
	SELECT cached_generation = generation FROM mcc_gallery_status WHERE gallery = 'g'::regclass}),
	't', 'the cache was loaded while the writer was half way');

$w->query_safe('INSERT INTO g SELECT * FROM saved WHERE id = 5');
$w->query_safe('DELETE FROM g WHERE id IN (6, 900001)');
$w->query_safe('COMMIT');
$w->quit;

# Searches settle the entries (at most every 250 ms): the deleted versions
# are purged once no snapshot sees them. Every answer must stay exact.
my $probes = q{(SELECT tpl FROM saved UNION ALL SELECT tpl FROM extra)};
my $bad = 0;
for my $round (1 .. 6)
{
	$bad += $node->safe_psql('postgres', qq{
		BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT count(*) FILTER (WHERE NOT check_identify('g', tpl, 3, 0)) FROM $probes p;
		COMMIT;
	});
	usleep(300_000);
}
is($bad, 0, 'identify() exact for the rows the writer deleted, re-inserted and renamed')
  or diag($node->safe_psql('postgres', 'SELECT what FROM checks WHERE NOT ok LIMIT 3'));
is($node->safe_psql('postgres', q{
	SELECT s.searchable || ' of ' || (SELECT count(*) FROM g)
	FROM mcc_gallery_status s WHERE gallery = 'g'::regclass}),
	$node->safe_psql('postgres', 'SELECT count(*) || \' of \' || count(*) FROM g'),
	'settled: one searchable entry per row, none for the deleted ones');

# the refinement in the engine judges the entries' xids: a live entry of a
# deleted row would make it disagree with the snapshot (and log it)
$node->safe_psql('postgres', qq{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT check_identify('g', tpl, 3, 0, 'dtr') FROM $probes p;
	COMMIT;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM checks WHERE NOT ok'), 0,
	'identify(refine => dtr) exact');
my $disagreed = () = slurp_file($node->logfile) =~ /refinement disagrees with the snapshot/g;
is($disagreed, 0, 'the refinement in the engine never disagreed with the snapshot');
is($node->safe_psql('postgres', "SELECT state FROM mcc_gallery_status WHERE gallery = 'g'::regclass"),
	'cached', 'the gallery is cached and current');

$node->stop;
done_testing();
