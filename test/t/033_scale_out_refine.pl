# Refinement through the scale-out coordinator (docs/scale-out.md,
# "Refinement"): mcc_proxy.identify(..., refine => m) on a gallery spread
# over three shards must equal mcc's identify(..., refine => m) on one
# server holding every row (a plain table on the coordinator), ids and
# scores bit for bit, for three methods, many probes, several k and
# min_score, with a shortlist set by mcc.refine_min and one set by
# mcc.refine_fraction; ties of LSS across shards sit at the shortlist's
# edge. identify_batch likewise; bad refine names are refused as one server
# refuses them; a shard that is down is named, or left out with partial.
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
my %node = %{ start_scale_out() };
my $coord = $node{coord};
add_shards(\%node);
$coord->safe_psql('postgres', 'SELECT count(*) FROM mcc_proxy.create_partitions(8)');
$coord->safe_psql('postgres', "SELECT mcc_proxy.set_option('query_timeout', '20')");
$coord->safe_psql('postgres', "SELECT mcc_proxy.create_gallery('g')");

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

done_testing();
