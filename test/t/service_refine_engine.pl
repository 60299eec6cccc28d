# identify(..., refine => 'fused') refined inside the matcher engine
# (docs/matcher-service.md, "Refinement in the engine"): one SEARCH returns
# every probe's shortlist rescored from the engine's cache with each
# candidate's xids, the backend judges those against its snapshot and
# re-checks only the final hits. Every answer must equal the backend scan's
# (mcc.service = off) and the brute force of the SQL definition under the
# same snapshot, while the engine holds versions the snapshot must not see:
# rows of an old snapshot's future, uncommitted and aborted writers, prepared
# transactions (with more subtransactions than a snapshot lists) committed
# and rolled back, deleted rows an old snapshot still sees, and, last,
# writers running concurrently. mcc.fallback = error, and the DEBUG line of
# the engine's refinement is counted, so the answers really come from it;
# the server log must hold no disagreement between the engine's versions
# and a snapshot (the path that would hide one).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('refine_engine',
	'mcc.fallback' => "'error'",
	'max_prepared_transactions' => 4,
	# n' = 5 % of the rows the statement sees: n' follows every visibility rule
	'mcc.refine_fraction' => '0.05',
	'mcc.refine_min' => '0');
served_gallery($node, 'g', 1200, 31, 12, 4);
$node->safe_psql('postgres', q{
	SELECT mcc_gallery_preload('g');
	-- rows that score 1 against a probe (its own template): any error in
	-- judging their versions changes the answer
	CREATE FUNCTION probe_copies(first bigint, label text)
	RETURNS TABLE (cid bigint, cperson text, ctpl mcc_template) LANGUAGE sql AS $$
		SELECT first + pid, label, tpl FROM probes
	$$;
	-- the gallery rows that best match the probes (to delete or update them)
	CREATE FUNCTION best_rows(n int) RETURNS SETOF bigint LANGUAGE sql AS $$
		SELECT DISTINCT i.id FROM probes p, identify('g', p.tpl, n) i
	$$;
});
my $n_probes = $node->safe_psql('postgres', 'SELECT count(*) FROM probes');

# Failing checks since the last call (with the first reasons).
sub failures
{
	my $bad = $node->safe_psql('postgres', 'SELECT count(*) FROM checks WHERE NOT ok');
	diag($node->safe_psql('postgres', 'SELECT what FROM checks WHERE NOT ok LIMIT 3')) if $bad;
	$node->safe_psql('postgres', 'TRUNCATE checks');
	return $bad;
}

# A query in a background session with client_min_messages = debug1: its
# output and the DEBUG lines it wrote; dies on an ERROR.
sub q_debug
{
	my ($session, $sql) = @_;
	$session->{stderr} = '';
	my $out = $session->query($sql);
	my $err = $session->{stderr};
	$session->{stderr} = '';
	die "query failed: $err" if $err =~ /ERROR/;
	return ($out, $err);
}

# In session $s (in a transaction or not): the probes for which the service
# (refine => 'fused', k = $k), the backend and the brute force agree, and how
# many of the service's answers came refined from the engine.
sub all_agree
{
	my ($s, $k) = @_;
	my ($n, $debug) = q_debug($s, qq{
		SELECT count(*) FILTER (WHERE check_paths('g', tpl, $k, 0, 'fused')
									AND check_identify('g', tpl, $k, 0, 'fused'))
		FROM probes});
	my $engine = () = $debug =~ /refined in the matcher engine: 1 probes/g;
	my ($seen) = $debug =~ /sees (\d+) rows of the matcher engine/;
	return ($n, $engine, $seen);
}

my $s = $node->background_psql('postgres', on_error_stop => 1);
q_debug($s, 'SET client_min_messages = debug1');

# --- a quiet gallery ---------------------------------------------------------
my ($n, $engine) = all_agree($s, 5);
is($n, $n_probes, "quiet gallery: service, backend and brute force agree for all $n_probes probes");
# check_paths and check_identify each ask the service once per probe
is($engine, 2 * $n_probes, '... every service answer refined in the engine');
my ($out, $debug) = q_debug($s, q{SELECT check_batch('g', array_agg(tpl ORDER BY pid), 4, 'fused') FROM probes});
is($out, 't', 'identify_batch with fused equals the brute force per probe');
ok($debug =~ /refined in the matcher engine: $n_probes probes/ && $debug !~ /REFINE of/,
	'... refined in the engine, all probes in one pass, no REFINE frame');
is(failures(), 0, '... no mismatch');

# --- identify_shortlist(): a shortlist of a given length (the scale-out
# refinement's part of one partition, docs/scale-out.md) through the engine
# equals the backend scan's, rows, both scores and positions, in order
$node->safe_psql('postgres', q{
	CREATE FUNCTION via_list(probe mcc_template, n bigint, k int, w bigint) RETURNS text
	LANGUAGE sql STABLE AS $$
		SELECT string_agg(concat_ws(':', id, lss, score, pos), ',' ORDER BY ord)
		FROM identify_shortlist('g', probe, n, k, w, refine => 'fused')
			WITH ORDINALITY AS t(id, lss, score, pos, ord)
	$$;
	CREATE FUNCTION list_paths(probe mcc_template, n bigint, k int, w bigint) RETURNS boolean
	LANGUAGE plpgsql AS $$
	DECLARE a text; b text;
	BEGIN
		a := via_list(probe, n, k, w);
		PERFORM set_config('mcc.service', 'off', true);
		b := via_list(probe, n, k, w);
		PERFORM set_config('mcc.service', 'on', true);
		INSERT INTO checks VALUES (a = b, CASE WHEN a <> b THEN
			format('list n=%s k=%s w=%s service=[%s] backend=[%s]', n, k, w, a, b) END);
		RETURN a = b;
	END $$;
});
# In session $s: the probes whose shortlists agree (40 rows, k 3, the last
# 10 as a window; and longer than the gallery), and how many were refined
# in the engine.
sub lists_agree
{
	my ($s) = @_;
	my ($n, $debug) = q_debug($s, q{
		SELECT count(*) FILTER (WHERE list_paths(tpl, 40, 3, 30) AND list_paths(tpl, 5000, 5, 4990))
		FROM probes});
	my $engine = () = $debug =~ /refined in the matcher engine: 1 probes/g;
	return ($n, $engine);
}
($n, $engine) = lists_agree($s);
is($n, $n_probes, "identify_shortlist(): the engine's shortlists equal the backend's for all $n_probes probes");
is($engine, 2 * $n_probes, '... every one refined in the engine');
is(failures(), 0, '... no mismatch');
# the re-checked path: the shortlist's templates read and sent to be rescored
q_debug($s, 'SET mcc.refine_in_engine = off');
($n, $engine) = lists_agree($s);
q_debug($s, 'RESET mcc.refine_in_engine');
is($n, $n_probes, 'identify_shortlist() with mcc.refine_in_engine off (REFINE frames): equal to the backend');
is($engine, 0, '... rescored from the re-checked templates, not in the search');
is(failures(), 0, '... no mismatch');

# --- an old snapshot: the engine holds its future ----------------------------
q_debug($s, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
q_debug($s, 'SELECT count(*) FROM g');
my $rows_then = 1200;
$node->safe_psql('postgres', q{
	INSERT INTO g SELECT * FROM probe_copies(100000, 'copy');
	DELETE FROM g WHERE id IN (SELECT best_rows(2)) AND id < 100000;
	UPDATE g SET tpl = p.tpl FROM probes p WHERE g.id = 200 + p.pid;
	DELETE FROM g WHERE id % 13 = 0;
});
my $seen;
($n, $engine, $seen) = all_agree($s, 6);
is($n, $n_probes, 'old snapshot, newer inserts, deletes and updates committed: all agree');
ok($engine == 2 * $n_probes && $seen == $rows_then,
	"... refined in the engine ($engine), counting the $rows_then rows the snapshot sees");
($n, $engine) = lists_agree($s);
is($n, $n_probes, 'old snapshot: identify_shortlist() through the engine equals the backend for all probes');
is($engine, 2 * $n_probes, '... refined in the engine');
q_debug($s, 'COMMIT');
is(failures(), 0, '... no mismatch');
my $rows_now = $node->safe_psql('postgres', 'SELECT count(*) FROM g');
q_debug($s, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
($n, $engine, $seen) = all_agree($s, 6);
q_debug($s, 'COMMIT');
is($n, $n_probes, "a new snapshot ($rows_now rows, probe copies among them): all agree");
ok($engine == 2 * $n_probes && $seen == $rows_now, "... refined in the engine, $rows_now rows seen");
is(failures(), 0, '... no mismatch');

# --- an uncommitted writer, then its rollback ---------------------------------
my $w = $node->background_psql('postgres', on_error_stop => 1);
q_debug($w, 'SET client_min_messages = debug1');
q_debug($w, q{
	BEGIN;
	INSERT INTO g SELECT * FROM probe_copies(300000, 'uncommitted');
	DELETE FROM g WHERE id IN (SELECT best_rows(3));
	UPDATE g SET tpl = p.tpl FROM probes p WHERE g.id = 400 + p.pid;
});
q_debug($s, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
($n, $engine) = all_agree($s, 5);
q_debug($s, 'COMMIT');
is($n, $n_probes, 'a writer with uncommitted inserts, deletes and updates: all agree');
is($engine, 2 * $n_probes, '... refined in the engine');
# the writer's own statements see its changes: the backend scan answers them
($out, $debug) = q_debug($w, q{
	SELECT count(*) FILTER (WHERE check_identify('g', tpl, 5, 0, 'fused')) FROM probes});
is($out, $n_probes, "... inside the writer's transaction: identify() equals the brute force of its own view");
ok($debug !~ /refined in the matcher engine/, '... answered by the backend scan (the service cannot see its changes)');
q_debug($w, 'ROLLBACK');
q_debug($s, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
($n, $engine) = all_agree($s, 5);
q_debug($s, 'COMMIT');
ok($n == $n_probes && $engine == 2 * $n_probes, 'after its rollback: all agree, refined in the engine');
is(failures(), 0, '... no mismatch');

# --- prepared transactions with subtransactions ------------------------------
# p1: released and rolled back savepoints, then 70 more subtransactions (past
# the 64 a snapshot lists per transaction: snapshots then ask pg_subtrans);
# p2: inserts and updates, rolled back after its PREPARE
my $subs = join "\n", map {
	"SAVEPOINT x$_; INSERT INTO g SELECT 500000 + $_, 'sub', tpl FROM probes WHERE pid = 1 + $_ % $n_probes; RELEASE x$_;"
} 1 .. 70;
$node->safe_psql('postgres', qq{
	BEGIN;
	SAVEPOINT a;
	INSERT INTO g SELECT * FROM probe_copies(600000, 'released');
	RELEASE a;
	SAVEPOINT b;
	DELETE FROM g WHERE id IN (SELECT best_rows(1));
	ROLLBACK TO b;
	SAVEPOINT c;
	DELETE FROM g WHERE id IN (SELECT best_rows(2)) AND id < 600000;
	RELEASE c;
	$subs
	PREPARE TRANSACTION 'p1';
	BEGIN;
	INSERT INTO g SELECT * FROM probe_copies(700000, 'rolled back');
	UPDATE g SET tpl = p.tpl FROM probes p WHERE g.id = 500 + p.pid;
	PREPARE TRANSACTION 'p2';
});
q_debug($s, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
($n, $engine, $seen) = all_agree($s, 5);
is($n, $n_probes, 'two prepared transactions pending (one with 73 subtransactions): all agree');
ok($engine == 2 * $n_probes && $seen == $rows_now,
	"... refined in the engine, counting $rows_now rows (none of theirs)");
$node->safe_psql('postgres', "COMMIT PREPARED 'p1'; ROLLBACK PREPARED 'p2'");
($n, $engine, $seen) = all_agree($s, 7);
q_debug($s, 'COMMIT');
ok($n == $n_probes && $engine == 2 * $n_probes && $seen == $rows_now,
	'... the same snapshot after COMMIT PREPARED and ROLLBACK PREPARED: all agree, in the engine');
$rows_now = $node->safe_psql('postgres', 'SELECT count(*) FROM g');
q_debug($s, 'BEGIN ISOLATION LEVEL REPEATABLE READ');
($n, $engine, $seen) = all_agree($s, 7);
q_debug($s, 'COMMIT');
ok($n == $n_probes && $engine == 2 * $n_probes && $seen == $rows_now,
	"a new snapshot: p1's rows (under their subtransaction xids) seen, p2's not: all agree ($rows_now rows)");
is(failures(), 0, '... no mismatch');
$w->quit;

# --- writers and readers at the same time -------------------------------------
my %script = (
	'insert_delete.sql' => q{
\set id random(1000000, 2000000000)
BEGIN;
INSERT INTO g SELECT :id, 'new', template FROM mcc_synthetic(1, 1, :id, :id) ON CONFLICT DO NOTHING;
INSERT INTO g SELECT :id + 1, 'copy', tpl FROM probes WHERE pid = 1 + :id % 16 ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
COMMIT;
},
	'update.sql' => q{
\set id random(1000000, 2000000000)
UPDATE g SET tpl = (SELECT tpl FROM probes WHERE pid = 1 + :id % 16)
WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
},
	'savepoint.sql' => q{
\set id random(1000000, 2000000000)
BEGIN;
SAVEPOINT a;
INSERT INTO g SELECT :id, 'gone', tpl FROM probes WHERE pid = 1 + :id % 16 ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
ROLLBACK TO a;
SAVEPOINT b;
INSERT INTO g SELECT :id + 1, 'kept', template FROM mcc_synthetic(1, 1, :id + 1, :id + 1) ON CONFLICT DO NOTHING;
RELEASE b;
DELETE FROM g WHERE id = (SELECT id FROM g WHERE id < 1000000 ORDER BY random() LIMIT 1);
COMMIT;
},
	'abort.sql' => q{
\set id random(1000000, 2000000000)
BEGIN;
INSERT INTO g SELECT :id, 'aborted', tpl FROM probes WHERE pid = 1 + :id % 16 ON CONFLICT DO NOTHING;
DELETE FROM g WHERE id = (SELECT id FROM g ORDER BY random() LIMIT 1);
ROLLBACK;
},
	'identify.sql' => q{
\set p random(1, 16)
\set k random(1, 8)
SET log_min_messages = debug1;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_identify('g', tpl, :k, 0, 'fused') FROM probes WHERE pid = :p;
COMMIT;
},
	'paths.sql' => q{
\set p random(1, 16)
SET log_min_messages = debug1;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_paths('g', tpl, 5, 0.01, 'fused') FROM probes WHERE pid = :p;
COMMIT;
},
	'batch.sql' => q{
\set p random(1, 12)
SET log_min_messages = debug1;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_batch('g', array_agg(tpl ORDER BY pid), 3, 'fused') FROM probes WHERE pid BETWEEN :p AND :p + 4;
COMMIT;
},
);
my $dir = pgbench_scripts(%script);
my @conn = pgbench_conn($node);
my ($wout, $werr, $rout, $rerr) = ('', '', '', '');
my $log_at = -s $node->logfile;
my $writers = IPC::Run::start(
	[
		'pgbench', @conn, '-c', '2', '-j', '2', '-T', '12',
		'-f', "$dir/insert_delete.sql\@10", '-f', "$dir/update.sql\@5",
		'-f', "$dir/savepoint.sql\@4", '-f', "$dir/abort.sql\@3"
	],
	'>', \$wout, '2>', \$werr);
my $readers_ok = IPC::Run::run(
	[
		'pgbench', @conn, '-c', '4', '-j', '2', '-T', '10',
		'-f', "$dir/identify.sql\@4", '-f', "$dir/paths.sql\@2", '-f', "$dir/batch.sql\@1"
	],
	'>', \$rout, '2>', \$rerr);
my $writers_ok = $writers->finish;
ok($readers_ok && $writers_ok, 'concurrent readers and writers ran without an error')
  or diag("$rerr\n$werr");
my ($total, $bad) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(*) FILTER (WHERE NOT ok) FROM checks');
ok($total > 0, "answers were checked during the writes ($total)");
is($bad, 0, 'every answer equals the backend scan and the brute force of its snapshot')
  or diag($node->safe_psql('postgres', 'SELECT what FROM checks WHERE NOT ok LIMIT 3'));
my $log = substr(slurp_file($node->logfile), $log_at);
my $in_engine = () = $log =~ /refined in the matcher engine/g;
ok($in_engine > 0, "... the readers' answers were refined in the engine ($in_engine)");

# the engine's versions never contradicted a snapshot or the final re-check
unlike(slurp_file($node->logfile), qr/refinement disagrees with the snapshot/,
	'the server log holds no disagreement between the engine and a snapshot');

# SIGUSR1: the engine logs its totals so far (refining searches by stage)
# and goes on serving
my $pid = $node->safe_psql('postgres', 'SELECT engine_pid FROM mcc_service_status()');
my $usr_at = -s $node->logfile;
ok(kill('USR1', $pid), "SIGUSR1 sent to the engine (pid $pid)");
my $stages = 0;
for (1 .. 100)
{
	$stages = substr(slurp_file($node->logfile), $usr_at) =~ /refining searches, ms per reply: SEARCH read/;
	last if $stages;
	select(undef, undef, undef, 0.1);
}
ok($stages, '... which logged the refining searches by stage');
is($node->safe_psql('postgres', 'SELECT engine_pid FROM mcc_service_status()'), $pid,
	'... and kept running');
($n, $engine) = all_agree($s, 5);
ok($n == $n_probes && $engine == 2 * $n_probes,
	'... answering as before: service, backend and brute force agree, refined in the engine');

$s->quit;
$node->stop;
done_testing();
