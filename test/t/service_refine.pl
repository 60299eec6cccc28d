# identify(..., refine => ...) through the matcher service: the engine's
# threads rescore the shortlist (from the engine's cache, or with
# mcc.refine_in_engine off from the templates the backend re-checked and
# sent), and every answer equals the backend path's
# (mcc.service = off) bit for bit, and the brute force of the definition,
# under the same REPEATABLE READ snapshot (mcc.fallback = error: an answer
# that did not come from the service would be an error). Covered: every
# refinement name; settings under which n' follows the number of rows the
# statement sees, with deleted versions the engine still holds, newer rows
# an old snapshot must not count, prepared transactions (their rows reach
# the engine at PREPARE) committed and rolled back; identify_batch();
# statement_timeout during a refinement, on both paths.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MccServiceTest;

my $node = service_node('refine',
	'mcc.fallback' => "'error'",
	'max_prepared_transactions' => 4,
	'mcc.worker_threads' => 2);
served_gallery($node, 'g', 1500, 21, 16, 4);
$node->safe_psql('postgres', q{
	SELECT mcc_gallery_preload('g');
	CREATE TABLE methods (refine text);
	INSERT INTO methods VALUES ('none'), ('dtr'), ('lss'), ('lss-r'), ('lss-dtr'), ('lsa'),
		('lsa-r'), ('lsa-dtr'), ('lgs'), ('lgs-r'), ('lgs-dtr'), ('consolidation');
});
my $n_probes = $node->safe_psql('postgres', 'SELECT count(*) FROM probes');

# Failing checks, with the first few reasons, since the last call.
sub failures
{
	my ($what) = @_;
	my $bad = $node->safe_psql('postgres', 'SELECT count(*) FROM checks WHERE NOT ok');
	diag($node->safe_psql('postgres', 'SELECT what FROM checks WHERE NOT ok LIMIT 3')) if $bad;
	$node->safe_psql('postgres', 'TRUNCATE checks');
	return $bad;
}

# --- every refinement name, default settings (n' = 100) ------------------
my $out = $node->safe_psql('postgres', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT count(*) FILTER (WHERE check_paths('g', p.tpl, 10, 0, m.refine)) FROM methods m, probes p;
	COMMIT;
});
is($out, 12 * $n_probes, "every refinement name: service equals backend for all $n_probes probes");
is(failures(), 0, '... no mismatch');
$out = $node->safe_psql('postgres', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT count(*) FILTER (WHERE check_identify('g', p.tpl, 10, 0, m.refine))
	FROM methods m, probes p WHERE m.refine IN ('dtr', 'lsa-r', 'consolidation');
	COMMIT;
});
is($out, 3 * $n_probes, 'dtr, lsa-r, consolidation: equal to the brute force');
is(failures(), 0, '... no mismatch');

# --- n' from the rows the statement sees ---------------------------------
# 5 %, no minimum: n' = ceil(0.05 n), k as given; min_score on the refined score
my $set = 'SET mcc.refine_fraction = 0.05; SET mcc.refine_min = 0;';
# A query in a background session that writes DEBUG and LOG lines: its
# output; dies on an ERROR.
sub q_debug
{
	my ($session, $sql) = @_;
	my $out = $session->query($sql);
	my $err = $session->{stderr};
	$session->{stderr} = '';
	die "query failed: $err" if $err =~ /ERROR/;
	return $out;
}

# In a session with client_min_messages = debug1: the probes for which
# service, backend and brute force agree, and the DEBUG lines it wrote.
sub all_paths
{
	my ($session, $refine, $k, $min) = @_;
	$session->{stderr} = '';
	my $n = $session->query(qq{
		SELECT count(*) FILTER (WHERE check_paths('g', tpl, $k, $min, '$refine')
									AND check_identify('g', tpl, $k, $min, '$refine'))
		FROM probes});
	my $debug = $session->{stderr};
	$session->{stderr} = '';
	die "query failed: $debug" if $debug =~ /ERROR/;
	return ($n, $debug);
}
$out = $node->safe_psql('postgres', qq{
	$set
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT count(*) FILTER (WHERE check_paths('g', tpl, k, ms, r) AND check_identify('g', tpl, k, ms, r))
	FROM probes, (VALUES (1, 0::real, 'dtr'), (7, 0, 'lgs-r'), (20, 0.02, 'dtr'), (3, 0.1, 'lsa-dtr')) v(k, ms, r);
	COMMIT;
});
is($out, 4 * $n_probes, 'refine_fraction 5 %: service, backend and brute force agree (4 settings of k, min_score, method)');
is(failures(), 0, '... no mismatch');

# An old snapshot while others delete, update and insert: the engine holds
# every version, the statement sees only its own rows
my $old = $node->background_psql('postgres', on_error_stop => 1);
q_debug($old, $set);
q_debug($old, 'SET client_min_messages = debug1');
q_debug($old, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
q_debug($old, 'SELECT count(*) FROM g');
$node->safe_psql('postgres', q{
	DELETE FROM g WHERE id % 7 = 0;
	UPDATE g SET tpl = s.template FROM mcc_synthetic(60, 1, 99) s WHERE g.id = s.finger + 1;
	INSERT INTO g SELECT 100000 + finger, 'new', template FROM mcc_synthetic(150, 1, 98);
});
my $now = $node->safe_psql('postgres', 'SELECT count(*) FROM g');

# A fresh snapshot in the old session: all paths agree for every probe and
# the count is the $now rows of the gallery.
sub new_snapshot_agrees
{
	my ($refine, $k, $what) = @_;
	q_debug($old, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
	my ($ok, $debug) = all_paths($old, $refine, $k, 0);
	is($ok, $n_probes, "a new snapshot ($now rows), $refine: all agree");
	my ($seen) = $debug =~ /sees (\d+) rows of the matcher engine/;
	is($seen, $now, $what);
	q_debug($old, 'COMMIT');
	is(failures(), 0, '... no mismatch');
}
my ($ok, $debug) = all_paths($old, 'dtr', 5, 0);
is($ok, $n_probes, "old snapshot (1500 rows), the engine holding the newer versions: all agree");
my ($seen, $held) = $debug =~ /sees (\d+) rows of the matcher engine's (\d+) entries/;
ok(defined $seen && $seen == 1500 && $held > 1500,
	"... the count: the statement sees 1500 rows of the engine's " . ($held // '?') . ' entries');
# (the checks are the old transaction's rows: read them after its commit)
q_debug($old, 'COMMIT');
is(failures(), 0, '... no mismatch');
new_snapshot_agrees('lgs-dtr', 8, "... and it counts $now rows");

# Prepared transactions reach the engine at PREPARE: not counted before
# COMMIT PREPARED, counted after it; a rolled back one never
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO g SELECT 200000 + finger, 'prepared', template FROM mcc_synthetic(300, 1, 97);
	DELETE FROM g WHERE id % 11 = 0;
	PREPARE TRANSACTION 'p1';
	BEGIN;
	INSERT INTO g SELECT 300000 + finger, 'rolled back', template FROM mcc_synthetic(200, 1, 96);
	PREPARE TRANSACTION 'p2';
});
q_debug($old, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
($ok, $debug) = all_paths($old, 'dtr', 4, 0);
is($ok, $n_probes, 'two prepared transactions pending: all agree');
($seen, $held) = $debug =~ /sees (\d+) rows of the matcher engine's (\d+) entries/;
# the engine holds the prepared inserts (500, less the 28 that p1 deletes itself)
my $pending = 500 - $node->safe_psql('postgres',
	'SELECT count(*) FROM generate_series(200000, 200299) i WHERE i % 11 = 0');
ok(defined $seen && $seen == $now && $held >= $now + $pending,
	"... $now rows counted, the engine holding " . ($held // '?') . " entries (at least $now + $pending)");
$node->safe_psql('postgres', "COMMIT PREPARED 'p1'; ROLLBACK PREPARED 'p2'");
($ok, $debug) = all_paths($old, 'lsa-r', 6, 0.05);
is($ok, $n_probes, '... the same snapshot after COMMIT and ROLLBACK PREPARED');
q_debug($old, 'COMMIT');
$now = $node->safe_psql('postgres', 'SELECT count(*) FROM g');
new_snapshot_agrees('dtr', 4, "... counting the committed prepared rows, not the rolled back ones ($now)");

# identify_batch(): one SEARCH and one REFINE for the probes, as identify()
q_debug($old, 'SET client_min_messages = notice');
is(q_debug($old, q{SELECT check_batch('g', array_agg(tpl ORDER BY pid), 5, 'dtr') FROM probes}),
	't', 'identify_batch with dtr equals the brute force per probe');
is(q_debug($old, q{SELECT check_batch('g', array_agg(tpl ORDER BY pid), 3, 'consolidation') FROM probes}),
	't', 'identify_batch with consolidation equals the brute force per probe');
# a shortlist of every row: refined in the engine in the SEARCH's pass; with
# mcc.refine_in_engine off, re-checked and sent in several REFINE frames
q_debug($old, 'SET mcc.refine_fraction = 1');
q_debug($old, 'SET client_min_messages = debug1');
$old->{stderr} = '';
$out = $old->query(q{SELECT check_batch('g', array_agg(tpl ORDER BY pid), 4, 'dtr') FROM probes});
my $in_engine = () = $old->{stderr} =~ /refined in the matcher engine: $n_probes probes/g;
my $frames = () = $old->{stderr} =~ /REFINE of \d+ probes/g;
$old->{stderr} = '';
is($out, 't', 'identify_batch refining every row equals the brute force per probe');
ok($in_engine == 1 && $frames == 0, '... refined in the engine, in the pass of its one SEARCH');
q_debug($old, 'SET mcc.refine_in_engine = off');
$out = $old->query(q{SELECT check_batch('g', array_agg(tpl ORDER BY pid), 4, 'dtr') FROM probes});
$frames = () = $old->{stderr} =~ /REFINE of \d+ probes/g;
$old->{stderr} = '';
q_debug($old, 'SET mcc.refine_in_engine = on');
is($out, 't', 'mcc.refine_in_engine = off: the same answers');
ok($frames > 1, "... its refinement took $frames REFINE frames");
q_debug($old, 'SET client_min_messages = notice');
is(failures(), 0, '... no mismatch');
$old->quit;

my ($searches) = $node->safe_psql('postgres',
	"SELECT searches FROM mcc_gallery_status WHERE gallery = 'g'::regclass");
ok($searches > 0, "the engine searched ($searches)");

# --- statement_timeout during a refinement -------------------------------
# every row of every probe, the probes 50 times over, with the slowest
# method: about 25 s through the service and a minute in the backend on the
# two-core development VM (0.5 and 1.3 s for the probes once), so a timeout
# of 300 ms interrupts it on any machine (one would have to be some 80
# times faster). Nothing here is timed against an earlier measurement: the
# only bound is that the statement ends within 20 s of its start, far more
# than a cancel takes and far less than the work.
my $reps = 50;
my $batch = qq{SELECT count(*) FROM identify_batch('g',
	(SELECT array_agg(tpl) FROM probes, generate_series(1, $reps)), 5, 0, refine => 'lsa-dtr')};
my $timeout = 300;
for my $service ('on', 'off')
{
	my $t0 = time;
	my ($ret, $o, $err) = $node->psql('postgres',
		"SET mcc.service = $service; SET mcc.refine_fraction = 1; SET statement_timeout = $timeout; " .
		$batch);
	my $took = time - $t0;
	like($err, qr/canceling statement due to statement timeout/,
		"service $service: statement_timeout = $timeout ms interrupts the refinement of "
		  . ($reps * $n_probes) . " probes over every row");
	ok($took < 20, sprintf("... which ends %.0f ms after its start", $took * 1000));
}
is($node->safe_psql('postgres', q{
	SELECT bool_and(check_identify('g', tpl, 5, 0, 'dtr')) FROM probes WHERE pid <= 4}),
	't', 'afterwards the service answers exactly');
is(failures(), 0, '... no mismatch');

$node->stop;
done_testing();
