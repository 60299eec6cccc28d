# Deduplication through the matcher service (docs/dedup.md): mcc_dedup()
# and mcc_dedup_probes() under mcc.fallback = error (an answer that is not
# the engine's is an ERROR) equal the brute force of their definition
# computed with mcc_score() over the same snapshot, the candidate pairs
# rescored in the engine (a REFINE a batch, one per 8,192 pairs: the test
# with every row a candidate has several) and, with the service off, in
# the backend to the same rows, also while another
# transaction holds uncommitted changes to the gallery (the engine holds
# those versions; the backend judges their xids at its snapshot) and after
# committed deletes. statement_timeout and a cancel interrupt a dedup that
# waits on the engine, and the service answers exactly afterwards.
#
# No outcome depends on how fast the machine is: the interrupted requests
# are held (the engine stopped with SIGSTOP), not sized.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;
use MccBackend;

my $node = service_node('dedup');
# 100 fingers x 3 impressions: genuine pairs within a finger (key 10 f + i)
$node->safe_psql('postgres', q{
	CREATE TABLE dg (id bigint PRIMARY KEY, tpl mcc_template);
	INSERT INTO dg SELECT 10 * finger + impression, template FROM mcc_synthetic(100, 3, 23);
	ANALYZE dg;
	CREATE TABLE newcomers (n int PRIMARY KEY, tpl mcc_template);
	INSERT INTO newcomers SELECT finger, template FROM mcc_synthetic(8, 4, 23) WHERE impression = 3;
	INSERT INTO newcomers SELECT 8 + finger, template FROM mcc_synthetic(4, 1, 24);

	CREATE FUNCTION brute_dedup(lss_thr real, thr real, method text)
	RETURNS TABLE(id_a bigint, id_b bigint, lss real, score real) LANGUAGE sql STABLE AS $$
		SELECT * FROM (SELECT a.id, b.id, mcc_score(a.tpl, b.tpl, 'lss') AS lss,
							  mcc_score(a.tpl, b.tpl, method) AS score
					   FROM dg a JOIN dg b ON b.id > a.id
					   WHERE a.tpl IS NOT NULL AND b.tpl IS NOT NULL) r
		WHERE lss >= lss_thr AND score >= thr $$;
	CREATE FUNCTION brute_probes(lss_thr real, thr real, method text)
	RETURNS TABLE(probe_no int, id bigint, lss real, score real) LANGUAGE sql STABLE AS $$
		SELECT * FROM (SELECT p.n + 1, g.id, mcc_score(p.tpl, g.tpl, 'lss') AS lss,
							  mcc_score(p.tpl, g.tpl, method) AS score
					   FROM newcomers p JOIN dg g ON g.tpl IS NOT NULL) r
		WHERE lss >= lss_thr AND score >= thr $$;
});
# 'same, N rows' when two queries give the same rows and scores (the
# pg_regress tests' same(), sql/include/same.sql)
$node->safe_psql('postgres', slurp_file("$ENV{MCC_SRCDIR}/sql/include/same.sql"));
$node->safe_psql('postgres', "SELECT mcc_gallery_register('dg')");
$node->safe_psql('postgres', "SELECT mcc_gallery_preload('dg')");

sub searches
{
	return $node->safe_psql('postgres',
		"SELECT searches FROM mcc_gallery_status WHERE gallery = 'dg'::regclass");
}

# Compare in one REPEATABLE READ transaction under fallback = error.
sub compare
{
	my ($q1, $q2) = @_;
	my $out = $node->safe_psql('postgres', qq{
		SET mcc.fallback = error;
		BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT same(\$q\$$q1\$q\$, \$q\$$q2\$q\$);
		COMMIT;});
	return $out;
}

my $before = searches();
like(compare(q{SELECT * FROM mcc_dedup('dg')},
		q{SELECT * FROM brute_dedup(mcc_threshold(0.001, 'lss'), mcc_threshold(0.0001, 'fused'), 'fused')}),
	qr/^same, [1-9]\d* rows$/, 'mcc_dedup() with its defaults through the service equals brute force');
cmp_ok(searches(), '>', $before, '... and the engine served it');
like(compare(q{SELECT * FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0, batch_size => 64)},
		q{SELECT * FROM brute_dedup(0, 0.02, 'fused')}),
	qr/^same, [1-9]\d* rows$/, '... with every row a candidate (probes ask again with a larger k)');
like(compare(q{SELECT * FROM mcc_dedup('dg', refine => 'none', threshold => 0.3, lss_threshold => 0.25)},
		q{SELECT * FROM brute_dedup(0.25, 0.3, 'lss')}),
	qr/^same, [1-9]\d* rows$/, '... LSS alone');
like(compare(q{SELECT * FROM mcc_dedup_probes('dg', ARRAY(SELECT tpl FROM newcomers ORDER BY n), threshold => 0.02, lss_threshold => 0.3, batch_size => 5)},
		q{SELECT * FROM brute_probes(0.3, 0.02, 'fused')}),
	qr/^same, [1-9]\d* rows$/, 'mcc_dedup_probes() equals brute force');

# The candidate pairs' rescoring: mcc_dedup_rescore() once a batch, in the
# engine (REFINE) when it serves the gallery, else in the backend; the same
# rows either way. DEBUG1 says where each batch's pairs were scored.
sub rescored_where
{
	my ($settings, $query) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres', "SET client_min_messages = debug1; $settings; $query",
		stdout => \$out, stderr => \$err, on_error_die => 1);
	my $engine = () = $err =~ /mcc_dedup_rescore\(\): \d+ pairs rescored in the matcher engine/g;
	my $backend = () = $err =~ /mcc_dedup_rescore\(\): \d+ pairs rescored in the backend/g;
	return ($out, $engine, $backend);
}
my $dq = q{SELECT count(*) FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0.3, batch_size => 64)};
my ($n_e, $in_engine, $in_backend) = rescored_where('SET mcc.fallback = error', $dq);
ok($n_e > 0 && $in_engine >= 5 && $in_backend == 0,
	"mcc_dedup() of 300 rows in batches of 64: its $n_e pairs rescored in the engine, a REFINE a batch or more ($in_engine)");
my ($n_b, $e2, $b2) = rescored_where('SET mcc.service = off', $dq);
ok($n_b == $n_e && $e2 == 0 && $b2 == $in_engine, "... mcc.service off: the same $n_b pairs, rescored in the backend");
like($node->safe_psql('postgres', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SET LOCAL mcc.service = off;
	CREATE TEMP TABLE backend_rows AS SELECT * FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0.3);
	SET LOCAL mcc.service = on;
	SET LOCAL mcc.fallback = error;
	SELECT same($$SELECT * FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0.3)$$,
				$$SELECT * FROM backend_rows$$);
	COMMIT;}),
	qr/^same, [1-9]\d* rows$/, '... row for row and score for score, as the backend path gives them');

# Uncommitted rows (a copy of row 0, so that it would pair) and committed
# deletes: the engine has both, the snapshot decides.
my $w = $node->background_psql('postgres', on_error_stop => 0);
$w->query_safe(q{BEGIN; INSERT INTO dg SELECT 5000, tpl FROM dg WHERE id = 0;
	DELETE FROM dg WHERE id IN (1, 2);});
$node->safe_psql('postgres', 'DELETE FROM dg WHERE id IN (10, 11)');
my $q = q{SELECT * FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0.3)};
my $b = q{SELECT * FROM brute_dedup(0.3, 0.02, 'fused')};
like(compare($q, $b), qr/^same, [1-9]\d* rows$/,
	"with another transaction's uncommitted insert and deletes: equal to brute force");
is($node->safe_psql('postgres', "SET mcc.fallback = error; SELECT count(*) FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0.3) WHERE id_b = 5000 OR id_a IN (10, 11) OR id_b IN (10, 11)"),
	'0', '... neither the uncommitted row nor the deleted ones pair');
$w->query_safe('COMMIT');
$w->quit;
like(compare($q, $b), qr/^same, [1-9]\d* rows$/, '... and after that commit');
is($node->safe_psql('postgres', "SET mcc.fallback = error; SELECT count(*) FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0.3) WHERE id_a = 0 AND id_b = 5000"),
	'1', '... where the committed copy pairs with its original');

# A job through the service: one part, then resumed to the end.
$node->safe_psql('postgres', 'CREATE TABLE dpairs (id_a bigint, id_b bigint, lss real, score real)');
$node->safe_psql('postgres', q{SET mcc.fallback = error; SET client_min_messages = warning;
	CALL mcc_dedup_run('t1', 'dg', 'dpairs', part_rows => 100, threshold => 0.02, lss_threshold => 0.3, max_parts => 1)});
is($node->safe_psql('postgres', q{SELECT rows_done || ' ' || (finished_at IS NULL) FROM mcc_dedup_jobs}),
	'100 true', 'a dedup job through the service stops after its one part, its progress kept');
$node->safe_psql('postgres', q{SET mcc.fallback = error; SET client_min_messages = warning; CALL mcc_dedup_run('t1')});
like(compare('SELECT * FROM dpairs', $b), qr/^same, [1-9]\d* rows$/,
	'... and resumed, its pairs equal brute force');

# --- cancellation ----------------------------------------------------------
my $engine = service_pid($node, 'engine');
my $held = 0;
END { kill('CONT', $engine) if $held; }
my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe("SET mcc.fallback = error; SET client_min_messages = warning; SELECT count(*) FROM identify('dg', (SELECT tpl FROM dg WHERE id = 0))");
$s->query_safe("SET application_name = 'dedup_cancel'");
$held = kill('STOP', $engine);
ok($held, "engine (pid $engine) stopped: no request can be answered until it resumes");
$s->{stderr} = '';
$s->query(q{SET statement_timeout = 500; SELECT count(*) FROM mcc_dedup('dg'); RESET statement_timeout;});
like($s->{stderr}, qr/canceling statement due to statement timeout/,
	'statement_timeout interrupts a dedup that waits on the engine');
$s->{stderr} = '';
$s->query_until(qr/started/, "\\echo started\nSELECT count(*) FROM mcc_dedup_probes('dg', ARRAY(SELECT tpl FROM newcomers));\n");
wait_on_engine($node, 'dedup_cancel', 'the dedup');
is($node->safe_psql('postgres', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'dedup_cancel'}),
	't', 'pg_cancel_backend() sent to a dedup waiting on the engine');
$s->query('SELECT 1');
like($s->{stderr}, qr/canceling statement due to user request/, '... which ends it');
kill('CONT', $engine);
$held = 0;
$s->{stderr} = '';
like($s->query_safe(q{SELECT same($$SELECT * FROM mcc_dedup('dg', threshold => 0.02, lss_threshold => 0.3)$$, $$SELECT * FROM brute_dedup(0.3, 0.02, 'fused')$$)}),
	qr/^same, [1-9]\d* rows$/, 'the interrupted session then gets exact answers from the service (fallback = error)');
$s->quit;
is(service_pid($node, 'engine'), $engine, 'the same engine process served throughout');

$node->stop;
done_testing();
