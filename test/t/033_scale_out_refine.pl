# Refinement through the scale-out coordinator (docs/scale-out.md,
# "Refinement"): mcc_proxy.identify(..., refine => m) on a gallery spread
# over three shards must equal mcc's identify(..., refine => m) on one
# server holding every row (a plain table on the coordinator), ids and
# scores bit for bit, for three methods, many probes, several k and
# min_score, with a shortlist set by mcc.refine_min and one set by
# mcc.refine_fraction; ties of LSS across shards sit at the shortlist's
# edge. identify_batch likewise; bad refine names are refused as one server
# refuses them; a shard that is down is named, or left out with partial.
# The shards run the matcher service, every partition table a gallery of
# its shard's engine, which counts each partition's rows for the coordinator
# (mcc_gallery_rows()) in the statement that searches it: rows that change
# between calls, the service off on the shards, row-level security on the
# partition tables and a shard's old snapshot must all keep the answer one
# server's.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccScaleOut;

skip_without_plproxy();

my $fingers = 1200;		# distinct synthetic fingers in the gallery
my $seed = 7;

# --- a coordinator and three shards on loopback, as 030_scale_out.pl ------------
my %node = %{ start_scale_out("shared_preload_libraries = 'mcc'\nmcc.worker_threads = 1\n"
	  . "mcc.request_timeout = '60s'\n") };
my $coord = $node{coord};
add_shards(\%node);
$coord->safe_psql('postgres', 'SELECT count(*) FROM mcc_proxy.create_partitions(8)');
$coord->safe_psql('postgres', "SELECT mcc_proxy.set_option('query_timeout', '20')");
$coord->safe_psql('postgres', "SELECT mcc_proxy.create_gallery('g')");
# every partition table a gallery of its shard's matcher engine (which
# registers a table with a unique index on its key alone: docs/scale-out.md)
foreach my $s (qw(s1 s2 s3))
{
	$node{$s}->poll_query_until('postgres', "SELECT state = 'ready' FROM mcc_service_status()")
	  or die "the matcher service of $s did not become ready";
	$node{$s}->safe_psql('postgres', q{
		DO $$
		DECLARE r regclass;
		BEGIN
			FOR r IN SELECT p.rel FROM mcc_shard.partitions p ORDER BY p.part LOOP
				EXECUTE format('CREATE UNIQUE INDEX ON %s (id)', r);
				PERFORM mcc_gallery_register(r);
			END LOOP;
		END $$});
}

# The single server: every template in one table on the coordinator; the
# copies of every tenth template there tie with their original in LSS and
# in every refined score.
single_server_tables($coord, $fingers, $seed, 15, 200, 5);
$coord->safe_psql(
	'postgres', qq{
	-- one result as text, rows in order (float4 text is exact: shortest
	-- representation that reads back to the same bits)
	CREATE FUNCTION result(fn text, gallery text, probe mcc_template, k int, min_score real, refine text)
		RETURNS text LANGUAGE plpgsql AS \$\$
	DECLARE
		out text;
	BEGIN
		EXECUTE format('SELECT string_agg(t.id || ''='' || t.score::text, '' '' ORDER BY t.ord)
						FROM %s(%L, \$1, \$2, \$3, refine => \$4) WITH ORDINALITY AS t(id, score, ord)',
					   fn, gallery)
			INTO out USING probe, k, min_score, refine;
		RETURN coalesce(out, '');
	END \$\$;
	CREATE TABLE cases (k int, min_score real);
	INSERT INTO cases VALUES (1, 0), (3, 0), (10, 0), (25, 0), (10, 0.05);
});
$coord->safe_psql('postgres',
	'SELECT mcc_proxy.enroll(\'g\', array_agg(id ORDER BY id), array_agg(tpl ORDER BY id)) FROM g_all');
my $total = $coord->safe_psql('postgres', 'SELECT count(*) FROM g_all');
is($coord->safe_psql('postgres', 'SELECT sum(nrows) FROM mcc_proxy.gallery_stats(\'g\')'),
	$total, "$total rows enrolled over three shards");
cmp_ok($coord->safe_psql('postgres', "SELECT count(DISTINCT mcc_proxy.partition_of(id) % 3)
									  FROM g_all WHERE id >= 1000000 AND mcc_proxy.partition_of(id) <>
										   mcc_proxy.partition_of(id - 1000000)"),
	'>', 0, 'some tied copies live in other partitions than their originals');

# Compare every probe under every case for one method and settings: returns
# "equal total differing_from_none tied", the last two counting results
# that differ from plain LSS and results holding two rows of equal score.
sub compare_all
{
	my ($method, $settings) = @_;
	return $coord->safe_psql(
		'postgres', qq{
		$settings;
		SELECT count(*) FILTER (WHERE l = p) || ' ' || count(*) || ' ' ||
			   count(*) FILTER (WHERE l <> plain) || ' ' ||
			   count(*) FILTER (WHERE l ~ '(=[0-9.e-]+) [0-9]+\\1( |\$)')
		FROM (SELECT result('public.identify', 'g_all', pr.tpl, c.k, c.min_score, '$method') AS l,
					 result('mcc_proxy.identify', 'g', pr.tpl, c.k, c.min_score, '$method') AS p,
					 result('public.identify', 'g_all', pr.tpl, c.k, c.min_score, 'none') AS plain
			  FROM probes pr, cases c) x});
}

# the answers of one server for a method under two settings: how many differ
my $differ = sub {
	my ($method, $s1, $s2) = @_;
	my $sql = "SELECT string_agg(result('public.identify', 'g_all', pr.tpl, c.k, c.min_score, '$method'), ';'
								 ORDER BY pr.pid, c.k, c.min_score) FROM probes pr, cases c";
	my @a = split /;/, $coord->safe_psql('postgres', "$s1; $sql"), -1;
	my @b = split /;/, $coord->safe_psql('postgres', "$s2; $sql"), -1;
	return scalar grep { $a[$_] ne $b[$_] } 0 .. $#a;
};

my $ncases = $coord->safe_psql('postgres', 'SELECT count(*) FROM probes, cases');
# n' = max(5, k): 5 for k <= 5, else k
my $by_min = 'SET mcc.refine_min = 5; SET mcc.refine_fraction = 0';
# n' = ceil(0.02 * 1320) = 27 for every k here: the fraction dominates
my $by_fraction = 'SET mcc.refine_min = 5; SET mcc.refine_fraction = 0.02';
foreach my $method (qw(dtr lsa-r consolidation))
{
	foreach my $s ([ 'refine_min 5', $by_min ], [ 'refine_fraction 0.02', $by_fraction ])
	{
		my ($equal, $n, $refined, $tied) = split / /, compare_all($method, $s->[1]);
		is($n, $ncases, "$method, $s->[0]: $n calls compared");
		is($equal, $n, "$method, $s->[0]: the coordinator equals one server, ids and scores");
		cmp_ok($refined, '>', $n / 2, "$method, $s->[0]: $refined of them differ from plain LSS");
		cmp_ok($tied, '>', 0, "$method, $s->[0]: ties are part of it ($tied results)");
	}
}
# the shortlist size matters here, so the coordinator must get n' right
cmp_ok($differ->('dtr', $by_min, $by_fraction), '>', 0,
	'dtr: a shortlist of 5 or k gives other answers than one of 27 (on one server)');
cmp_ok($differ->('consolidation', $by_min, 'SET mcc.refine_fraction = 1'), '>', 0,
	'consolidation: a shortlist of 5 or k gives other answers than all rows (on one server)');
# every row rescored, and the default settings (n' = 100)
foreach my $s ([ 'refine_fraction 1', 'SET mcc.refine_fraction = 1' ], [ 'defaults', 'RESET mcc.refine_min' ])
{
	my ($equal, $n) = split / /, compare_all('lsa-r', $s->[1]);
	is($equal, $n, "lsa-r, $s->[0]: $n calls equal one server");
}
# the cutoff found outside the windows: with no window (refine_window 0)
# every call asks again with whole shortlists; with narrow ones some do
foreach my $s ([ 'refine_window 0', 0 ], [ 'refine_window 0.3', 0.3 ])
{
	my ($equal, $n) = split / /,
	  compare_all('dtr', "$by_fraction; SET mcc_proxy.refine_window = $s->[1]");
	is($equal, $n, "dtr, refine_fraction 0.02, $s->[0]: $n calls equal one server");
}
# the rows that crossed the wire: far fewer than the shards' shortlists
my ($sent, $lists) = split / /, $coord->safe_psql('postgres', qq{$by_fraction;
	SELECT count(*) FILTER (WHERE x.id IS NOT NULL) || ' ' ||
		   coalesce(sum(x.pos) FILTER (WHERE x.id IS NULL AND x.probe_no > 0), 0)
	FROM probes pr, mcc_proxy._refine_rows('g', mcc_proxy._all_parts(),
		array_fill(27::bigint, ARRAY[8]), array_fill(27::bigint, ARRAY[8]),
		ARRAY[mcc_template_send(pr.tpl)], 3, 'lss-dtr', NULL, NULL, 0.02, 5, 4, 8) x});
cmp_ok($sent, '<', $lists / 2, "k = 3, whole shortlists of 27 rows without windows: $sent rows sent of $lists");

# --- rows that change between calls: each call counts what it searches ------------
# copies of the first probes under new ids (they now win their probes' calls)
# enrolled, then removed with other rows; n' follows n (refine_fraction 0.02)
my $answers = sub {
	my ($fn, $gallery) = @_;
	return $coord->safe_psql('postgres', "$by_fraction;
		SELECT string_agg(result('$fn', '$gallery', pr.tpl, 10, 0, 'dtr'), ';' ORDER BY pr.pid) FROM probes pr");
};
my $before = $answers->('public.identify', 'g_all');
$coord->safe_psql('postgres', q{
	CREATE TABLE added AS SELECT 3000000 + pid AS id, tpl FROM probes WHERE pid <= 8
		UNION ALL SELECT id + 2000000, tpl FROM g_all WHERE id < 200;
	INSERT INTO g_all SELECT * FROM added;
	SELECT mcc_proxy.enroll('g', array_agg(id ORDER BY id), array_agg(tpl ORDER BY id)) FROM added});
my $grown = $answers->('public.identify', 'g_all');
isnt($grown, $before, 'rows enrolled: one server\'s answers change');
is($answers->('mcc_proxy.identify', 'g'), $grown, '... and the coordinator\'s are one server\'s over the new rows');
$coord->safe_psql('postgres', q{
	CREATE TABLE removed AS SELECT id FROM g_all WHERE id > 3000000 AND id <= 3000004 OR id % 7 = 3;
	DELETE FROM g_all WHERE id IN (SELECT id FROM removed);
	SELECT mcc_proxy.unenroll('g', array_agg(id)) FROM removed});
my $shrunk = $answers->('public.identify', 'g_all');
isnt($shrunk, $grown, 'rows removed: one server\'s answers change again');
is($answers->('mcc_proxy.identify', 'g'), $shrunk,
	'... and the coordinator\'s follow (the deleted versions the engines still hold are not counted)');

# --- the service off on the shards: the counts and lists from the tables ----------
foreach my $s (qw(s1 s2 s3))
{
	$node{$s}->safe_psql('postgres', 'ALTER DATABASE postgres SET mcc.service = off');
}
my ($equal_off, $n_off) = split / /, compare_all('dtr', $by_fraction);
is($equal_off, $n_off, "mcc.service off on the shards: $n_off calls equal one server");
foreach my $s (qw(s1 s2 s3))
{
	$node{$s}->safe_psql('postgres', 'ALTER DATABASE postgres RESET mcc.service');
}

# --- row-level security on the shards' partition tables --------------------------
# a role that sees the rows whose id is not a multiple of 3, on the shards'
# partition tables (where policies apply: docs/scale-out.md) and on one
# server's table; refine_fraction 0.02 makes n' follow the rows it sees
foreach my $n (values %node)
{
	$n->safe_psql('postgres', 'CREATE ROLE clerk LOGIN');
}
foreach my $s (qw(s1 s2 s3))
{
	$node{$s}->safe_psql('postgres', q{
		DO $$
		DECLARE r regclass;
		BEGIN
			FOR r IN SELECT p.rel FROM mcc_shard.partitions p LOOP
				EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', r);
				EXECUTE format('CREATE POLICY thirds ON %s FOR SELECT TO clerk USING (id %% 3 <> 0)', r);
			END LOOP;
		END $$});
}
$coord->safe_psql('postgres', q{
	CREATE TABLE g_rls (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
	INSERT INTO g_rls SELECT * FROM g_all;
	ALTER TABLE g_rls ENABLE ROW LEVEL SECURITY;
	CREATE POLICY thirds ON g_rls FOR SELECT TO clerk USING (id % 3 <> 0);
	GRANT SELECT ON g_rls, probes, cases TO clerk;
	SELECT mcc_proxy.grant_gallery('g', 'clerk')});
my $as_user = sub {
	my ($user, $fn, $gallery) = @_;
	return $coord->safe_psql('postgres', "$by_fraction;
		SELECT string_agg(result('$fn', '$gallery', pr.tpl, c.k, c.min_score, 'dtr'), ';' ORDER BY pr.pid, c.k, c.min_score)
		FROM probes pr, cases c", extra_params => [ '-U', $user ]);
};
my $rls_one = $as_user->('clerk', 'public.identify', 'g_rls');
isnt($rls_one, $as_user->($coord->safe_psql('postgres', 'SELECT current_user'), 'public.identify', 'g_rls'),
	'row-level security: one server answers the role otherwise than its owner');
is($as_user->('clerk', 'mcc_proxy.identify', 'g'), $rls_one,
	'... and the coordinator answers it as one server does (counts and lists under the policies)');

# 'lss' refines with LSS itself: the answer of 'none'
my ($equal, $n) = split / /, compare_all('lss', $by_min);
is($equal, $n, "lss, refine_min 5: $n calls equal one server");

# with mcc_proxy first in search_path, a plain identify() with refine is the proxy's
like( $coord->safe_psql(
		'postgres', "SET search_path = mcc_proxy, public;
		 EXPLAIN (VERBOSE, COSTS OFF)
		 SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), refine => 'dtr')"),
	qr/Function Scan on mcc_proxy\.identify/, 'search_path mcc_proxy, public: identify(refine => ...) is the proxy');

# --- identify_batch ------------------------------------------------------------------
my $batch = q{%s;
	SELECT string_agg(probe_no || ':' || id || '=' || score::text, ' ' ORDER BY ord)
	FROM %s('%s', (SELECT array_agg(tpl ORDER BY pid) FROM probes), %d, %s, refine => '%s')
		WITH ORDINALITY AS t(probe_no, id, score, ord)};
foreach my $case ([ 1, 0, $by_min ], [ 10, 0, $by_min ], [ 10, 0.05, $by_fraction ], [ 25, 0, $by_fraction ])
{
	my ($k, $min, $set) = @$case;
	my $want = $coord->safe_psql('postgres', sprintf($batch, $set, 'public.identify_batch', 'g_all', $k, $min, 'dtr'));
	isnt($want, '', "identify_batch dtr, k = $k, min_score = $min: one server finds rows");
	is($coord->safe_psql('postgres', sprintf($batch, $set, 'mcc_proxy.identify_batch', 'g', $k, $min, 'dtr')),
		$want, "identify_batch dtr, k = $k, min_score = $min ($set): the coordinator equals one server");
}
# and the batch answer is identify()'s, probe by probe
is( $coord->safe_psql('postgres', sprintf($batch, $by_min, 'mcc_proxy.identify_batch', 'g', 10, 0, 'lsa-r')),
	$coord->safe_psql('postgres', "$by_min;
		SELECT string_agg(pr.pid || ':' || t.id || '=' || t.score::text, ' ' ORDER BY pr.pid, t.ord)
		FROM probes pr, mcc_proxy.identify('g', pr.tpl, 10, refine => 'lsa-r') WITH ORDINALITY AS t(id, score, ord)"),
	'identify_batch lsa-r equals identify() per probe through the coordinator');

# --- errors: the SQLSTATE, message and hint of one server -----------------------------
foreach my $bad ("'bogus'", "'DTR'", "'lss '")
{
	foreach my $fn ([ 'identify', '(SELECT tpl FROM probes WHERE pid = 1)' ],
		[ 'identify_batch', '(SELECT array_agg(tpl) FROM probes)' ])
	{
		my ($name, $probe) = @$fn;
		my (undef, undef, $err_proxy) = $coord->psql('postgres',
			"\\set VERBOSITY verbose\nSELECT * FROM mcc_proxy.$name('g', $probe, 10, refine => $bad)");
		my (undef, undef, $err_local) = $coord->psql('postgres',
			"\\set VERBOSITY verbose\nSELECT * FROM public.$name('g_all', $probe, 10, refine => $bad)");
		# the coordinator's error has a CONTEXT (its PL/pgSQL call of mcc's check)
		$err_local =~ s/\n(CONTEXT|LOCATION):.*//s;
		$err_proxy =~ s/\n(CONTEXT|LOCATION):.*//s;
		like($err_local, qr/ERROR:  22023: /, "one server: $name refine => $bad is 22023");
		is($err_proxy, $err_local, "the coordinator: $name refine => $bad, the same error and hint");
	}
}
# refine => NULL (the default) is mcc.refine_method ('fused'), on the
# coordinator as on one server: the refined answer, the same rows and scores
is( $coord->safe_psql('postgres', q{
	SELECT string_agg(pr.pid || ':' || t.id || '=' || t.score::text, ' ' ORDER BY pr.pid, t.ord)
	FROM probes pr, mcc_proxy.identify('g', pr.tpl, 10, refine => NULL) WITH ORDINALITY AS t(id, score, ord)}),
	$coord->safe_psql('postgres', q{
	SELECT string_agg(pr.pid || ':' || t.id || '=' || t.score::text, ' ' ORDER BY pr.pid, t.ord)
	FROM probes pr, public.identify('g_all', pr.tpl, 10, refine => 'fused') WITH ORDINALITY AS t(id, score, ord)}),
	'refine => NULL: the coordinator gives one server\'s fused answer, probe by probe');
is( $coord->safe_psql('postgres', q{
	SELECT string_agg(t.probe_no || ':' || t.id || '=' || t.score::text, ' ' ORDER BY t.probe_no, t.score DESC, t.id)
	FROM mcc_proxy.identify_batch('g', (SELECT array_agg(tpl ORDER BY pid) FROM probes), 10) t}),
	$coord->safe_psql('postgres', q{
	SELECT string_agg(t.probe_no || ':' || t.id || '=' || t.score::text, ' ' ORDER BY t.probe_no, t.score DESC, t.id)
	FROM public.identify_batch('g_all', (SELECT array_agg(tpl ORDER BY pid) FROM probes), 10, refine => 'fused') t}),
	'identify_batch() without refine: the coordinator gives one server\'s fused answer');
# the other arguments are checked before the shards are asked, as on one server
foreach my $bad ("NULL, 10", "(SELECT tpl FROM probes WHERE pid = 1), 0",
	"(SELECT tpl FROM probes WHERE pid = 1), 10, 1.5")
{
	rejected_alike($coord, "$bad, refine => 'dtr'");
}
# a relation that is not sharded: mcc's own identify(), refine included
is( $coord->safe_psql('postgres', "$by_min; SELECT string_agg(id || '=' || score::text, ' ')
		FROM mcc_proxy.identify('g_all', (SELECT tpl FROM probes WHERE pid = 2), 5, refine => 'dtr')"),
	$coord->safe_psql('postgres', "$by_min; SELECT string_agg(id || '=' || score::text, ' ')
		FROM public.identify('g_all', (SELECT tpl FROM probes WHERE pid = 2), 5, refine => 'dtr')"),
	'on a table that is not sharded, mcc_proxy.identify(refine) is mcc\'s');

# --- a shard down ------------------------------------------------------------------------
# the rows the live shards hold, as one server would hold them
my $s2_parts = $coord->safe_psql('postgres',
	"SELECT array_agg(part ORDER BY part) FROM mcc_proxy.partitions WHERE shard = 's2'");
$coord->safe_psql('postgres', "CREATE TABLE g_live AS SELECT * FROM g_all
							  WHERE mcc_proxy.partition_of(id) <> ALL ('$s2_parts'); ALTER TABLE g_live ADD PRIMARY KEY (id)");
$node{s2}->stop('fast');
my (undef, undef, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM mcc_proxy.identify('g', (SELECT tpl FROM probes WHERE pid = 3), refine => 'dtr')");
like($err, qr/ERROR:  08006: identify: shard "s2" did not answer/, 'refine: a stopped shard is an error naming it');
my $out;
(undef, $out, $err) = $coord->psql('postgres', "$by_min;
	SELECT count(*) FILTER (WHERE l = p) || ' ' || count(*)
	FROM (SELECT result('public.identify', 'g_live', pr.tpl, 10, 0, 'dtr') AS l,
				 (SELECT coalesce(string_agg(t.id || '=' || t.score::text, ' ' ORDER BY t.ord), '')
				  FROM mcc_proxy.identify('g', pr.tpl, 10, refine => 'dtr', partial => true)
					  WITH ORDINALITY AS t(id, score, ord)) AS p
		  FROM probes pr) x");
my ($peq, $pn) = split / /, $out // '';
ok($pn && $peq == $pn, "refine, partial => true: " . ($peq // 0) . " of " . ($pn // 0)
	  . " answers are one server's over the live shards' rows") or diag($err);
like($err, qr/WARNING:  identify: partial result: partitions \Q$s2_parts\E did not answer/, 'with its warning');
$node{s2}->start;

# --- a shard's count, directly: mcc_gallery_rows() under the statement's snapshot ---
my $s1 = $node{s1};
my $part = $s1->safe_psql('postgres', "SELECT min(part) FROM mcc_shard.nonempty_partitions('public.g')");
my $rel = "g_p$part";
# "rows count(*) engine": mcc_gallery_rows() and count(*) in one statement,
# and whether the matcher engine counted (its DEBUG line)
my $counts = sub {
	my ($session, $setup) = @_;
	my $sql = "SELECT mcc_gallery_rows('$rel') || ' ' || (SELECT count(*) FROM $rel)";
	my ($out, $err);
	if ($session)
	{
		$session->{stderr} = '';
		$out = $session->query("SET client_min_messages = debug1; $sql; RESET client_min_messages");
		$err = $session->{stderr};
		$session->{stderr} = '';
		die "query failed: $err" if $err =~ /ERROR/;
	}
	else
	{
		(undef, $out, $err) = $s1->psql('postgres', "$setup; SET client_min_messages = debug1; $sql");
	}
	return $out . ' ' . ($err =~ /mcc_gallery_rows\(\): the statement sees \d+ rows of the matcher engine/ ? 'engine' : 'table');
};
my $n0 = $s1->safe_psql('postgres', "SELECT count(*) FROM $rel");
cmp_ok($n0, '>', 0, "$rel holds $n0 rows on s1");
is($counts->(undef, ''), "$n0 $n0 engine", "mcc_gallery_rows('$rel'): count(*)'s $n0, counted by the matcher engine");
is($counts->(undef, 'SET mcc.service = off'), "$n0 $n0 table", '... with mcc.service off: by the table, the same');
# an old snapshot: the engine holds newer versions (inserted, deleted) that it must not count
my $rr = $s1->background_psql('postgres', on_error_stop => 1);
$rr->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
is($counts->($rr), "$n0 $n0 engine", 'a REPEATABLE READ transaction counts its rows');
$s1->safe_psql('postgres', qq{
	INSERT INTO $rel (id, tpl, part)
		SELECT x.id, x.tpl, x.part FROM (SELECT 5000000 + id * 8 + s AS id, tpl, part FROM $rel, generate_series(0, 7) s) x
		WHERE mcc_shard.partition_of(x.id, 8) = $part;
	DELETE FROM $rel WHERE id % 5 = 1 AND id < 5000000});
my $n1 = $s1->safe_psql('postgres', "SELECT count(*) FROM $rel");
isnt($n1, $n0, "another session changed $rel ($n0 -> $n1 rows) and committed");
is($counts->($rr), "$n0 $n0 engine", '... the old snapshot still counts its own rows, by the engine');
$rr->query_safe('COMMIT');
is($counts->($rr), "$n1 $n1 engine", '... and a new one the new rows, by the engine');
$rr->quit;

# --- a shard's partitions at once: identify_shortlists(), mcc_galleries_rows() ---
# refine_rows() asks for every partition's count, then every partition's
# list, each set of the matcher engine's requests sent before any is
# awaited (src/service/service_ahead.c); each (partition, probe) must be
# identify_shortlist()'s rows, here while another session's changes are
# newer than the statement's snapshot, and every request sent ahead taken.
$s1->safe_psql('postgres', slurp_file("$ENV{MCC_SRCDIR}/sql/include/same.sql"));
$s1->safe_psql('postgres', q{
	CREATE TABLE lp AS SELECT (row_number() OVER ())::int AS pid, template AS tpl
		FROM mcc_synthetic(6, 2, 7) WHERE impression = 1;
	CREATE TABLE lparts AS SELECT p.rel, p.part, (row_number() OVER (ORDER BY p.part))::int AS no
		FROM mcc_shard.partitions p
		WHERE p.gallery = 'g'::regclass AND p.part IN (SELECT part FROM mcc_shard.nonempty_partitions('public.g'))});
my $nparts_s1 = $s1->safe_psql('postgres', 'SELECT count(*) FROM lparts');
my $at_once = q{SELECT same(
	$$SELECT s.gallery_no, s.probe_no, s.id, s.lss, s.score, s.pos
	  FROM identify_shortlists((SELECT array_agg(rel ORDER BY no) FROM lparts), ARRAY(SELECT tpl FROM lp ORDER BY pid),
							   (SELECT array_agg(30 + part ORDER BY no)::bigint[] FROM lparts), 3,
							   (SELECT array_agg(20 + part ORDER BY no)::bigint[] FROM lparts), refine => 'fused') s$$,
	$$SELECT p.no, l.pid, x.id, x.lss, x.score, x.pos
	  FROM lparts p, lp l, LATERAL identify_shortlist(p.rel, l.tpl, 30 + p.part, 3, 20 + p.part, refine => 'fused') x$$)
	|| ' / ' || (SELECT mcc_galleries_rows(array_agg(rel ORDER BY no)) = array_agg(mcc_gallery_rows(rel) ORDER BY no)
				 FROM lparts)};
my $rr2 = $s1->background_psql('postgres', on_error_stop => 1);
$rr2->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$rr2->query_safe('SELECT count(*) FROM lp');
$s1->safe_psql('postgres', qq{DELETE FROM $rel WHERE id % 7 = 2});
foreach my $when ('an old snapshot', 'a new one')
{
	$rr2->{stderr} = '';
	my $out = $rr2->query("SET client_min_messages = debug1; $at_once; RESET client_min_messages");
	my $err = $rr2->{stderr};
	my $lists = $nparts_s1 * 6;
	$rr2->{stderr} = '';
	like($out, qr/^same, [1-9]\d* rows \/ true$/,
		"identify_shortlists() over s1's $nparts_s1 partitions and 6 probes: identify_shortlist()'s rows; mcc_galleries_rows(): mcc_gallery_rows() ($when)");
	like($err, qr/mcc: $lists of $lists requests sent ahead to the matcher engine were taken/,
		"... the $lists lists' requests sent to the engine at once, and taken");
	like($err, qr/mcc: $nparts_s1 of $nparts_s1 requests sent ahead to the matcher engine were taken/,
		"... and the $nparts_s1 counts'");
	$rr2->query_safe('COMMIT; BEGIN ISOLATION LEVEL REPEATABLE READ');
}
$rr2->query_safe('COMMIT');
$rr2->quit;

done_testing();
