# Progress of long work (issue 18; docs/matcher-service.md, "Progress"):
# - an interactive mcc_gallery_preload() sends a NOTICE of its progress
#   every mcc.progress_interval (0: after every frame of rows), with rows
#   loaded of the total, a rate and the time left, then one at the end;
#   none when client_min_messages hides NOTICEs or the interval is -1;
# - mcc_gallery_status shows a load in progress: state "loading", the
#   loading backend, rows loaded of the total, rate, expected end. The
#   engine is stopped (SIGSTOP) while the load streams, so the load is
#   seen in the middle whatever the machine's speed; SIGCONT lets it end.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('progress');
create_gallery($node, 'pg', 3000, 71);
create_probes($node, 71, 2, 1);
$node->safe_psql('postgres', "SELECT mcc_gallery_register('pg')");

# --- NOTICEs --------------------------------------------------------------
my ($ret, $out, $err) = $node->psql('postgres',
	"SET mcc.progress_interval = 0; SELECT mcc_gallery_preload('pg')");
is($out, '3000', 'preload returns the rows');
my @rows = $err =~ /NOTICE:  gallery "pg": (\d+) of about 3000 rows loaded \(\d+%\), \d+ rows\/s, about [^\n]+ left/g;
cmp_ok(scalar(@rows), '>=', 2, 'with mcc.progress_interval = 0 a NOTICE follows every frame of rows')
  or diag($err);
my $rising = 1;
$rising &&= $rows[$_] > $rows[$_ - 1] for 1 .. $#rows;
ok($rising && $rows[-1] <= 3000, "... counting up to at most 3000 (@rows)");
like($err, qr/NOTICE:  gallery "pg": 3000 rows loaded in [\d.]+ s \(\d+ rows\/s\)/, '... and one at the end');

# a partitioned gallery: the rows of its partitions, counted once (ANALYZE
# gives the parent their sum too, which the estimate must not add)
$node->safe_psql('postgres', q{
	CREATE TABLE ppg (id bigint PRIMARY KEY, tpl mcc_template) PARTITION BY RANGE (id);
	CREATE TABLE ppg_a PARTITION OF ppg FOR VALUES FROM (MINVALUE) TO (1500);
	CREATE TABLE ppg_b PARTITION OF ppg FOR VALUES FROM (1500) TO (MAXVALUE);
	INSERT INTO ppg SELECT id, tpl FROM pg;
	ANALYZE ppg;
	SELECT mcc_gallery_register('ppg');
});
($ret, $out, $err) = $node->psql('postgres',
	"SET mcc.progress_interval = 0; SELECT mcc_gallery_preload('ppg')");
is($out, '3000', 'a partitioned gallery: preload returns the rows');
like($err, qr/NOTICE:  gallery "ppg": \d+ of about 3000 rows loaded/,
	'... and its progress counts each row once') or diag($err);
# the rows it returns are those the caller sees (counted by the load's own
# scan of the partitions): not a row without a template, not another
# session's uncommitted rows
$node->safe_psql('postgres', 'UPDATE ppg SET tpl = NULL WHERE id = 1600');
my $w = $node->background_psql('postgres');
$w->query_safe('BEGIN');
$w->query_safe('INSERT INTO ppg SELECT id + 10000, tpl FROM pg WHERE id < 5');
is($node->safe_psql('postgres', "SELECT mcc_gallery_preload('ppg')"), '2999',
	'... the rows with a template the caller sees, in each partition');
$w->query_safe('COMMIT');
$w->quit;
is($node->safe_psql('postgres', "SELECT mcc_gallery_preload('ppg')"), '3004',
	'... and the committed ones once committed');

($ret, $out, $err) = $node->psql('postgres',
	"SET mcc.progress_interval = 0; SET client_min_messages = warning; SELECT mcc_gallery_preload('pg')");
is($err, '', 'no NOTICE when client_min_messages hides them');
($ret, $out, $err) = $node->psql('postgres',
	"SET mcc.progress_interval = -1; SELECT mcc_gallery_preload('pg')");
is($err, '', 'none with mcc.progress_interval = -1');

# --- the status view during a load ----------------------------------------
my $s = $node->background_psql('postgres', on_error_stop => 0);
# connected to the engine before it stops
$s->query_safe("SELECT count(*) FROM identify('pg', (SELECT tpl FROM probes WHERE pid = 1))");
my $loader = $s->query_safe('SELECT pg_backend_pid()');
my $engine = service_pid($node, 'engine');
kill 'STOP', $engine;
$s->query_until(qr/started/, "\\echo started\nSELECT mcc_gallery_preload('pg');\n");
my $seen = $node->poll_query_until('postgres', qq{
	SELECT state = 'loading' AND loading_pid = $loader
	FROM mcc_gallery_status WHERE gallery = 'pg'::regclass});
my ($r, $row, $e) = $node->psql('postgres', q{
	SELECT load_rows_total, load_rows BETWEEN 0 AND load_rows_total,
		   load_expected_end IS NULL OR load_expected_end >= now(),
		   load_rows_per_second IS NULL OR load_rows_per_second >= 0
	FROM mcc_gallery_status WHERE gallery = 'pg'::regclass});
# the engine goes on whatever the checks say
kill 'CONT', $engine;
ok($seen, 'mcc_gallery_status shows the load: state loading, by the loading backend');
is($row, '3000|t|t|t', '... with rows loaded of 3000, a rate and an expected end');
$s->query('SELECT 1');
$s->quit;
is($node->safe_psql('postgres', q{
	SELECT state || ' ' || entries || ' ' || coalesce(loading_pid::text, '-')
	FROM mcc_gallery_status WHERE gallery = 'pg'::regclass}),
	'cached 3000 -', 'when it ends the gallery is cached and no load shows');

$node->stop;
done_testing();
