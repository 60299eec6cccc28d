# mccgen, the synthetic data generator CLI: deterministic output; CSV that
# COPY loads into an mcc_template column and that equals mcc_synthetic();
# probe truth files whose mates identify() finds; ISO, ANSI and xyt folders
# that import with the same minutiae counts; FVC-style pair lists; errors.
use strict;
use warnings;
use Cwd qw(abs_path);
use File::Compare;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $mccgen = ($ENV{MCC_TOOLS} || 'build') . '/tools/mccgen';
plan skip_all => "$mccgen not built (make tools)" unless -x $mccgen;

# absolute: the server reads the CSV files with COPY FROM and pg_read_file
my $dir = abs_path(PostgreSQL::Test::Utils::tempdir);

# run mccgen with arguments; returns (exit status, stderr)
sub gen
{
	my @args = @_;
	my ($stdout, $stderr);
	my $ok = IPC::Run::run([ $mccgen, @args ], '>', \$stdout, '2>', \$stderr);
	return ($ok ? 0 : 1, $stderr);
}

# read a whole file
sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "$path: $!";
	local $/;
	my $text = <$fh>;
	close($fh);
	return $text;
}

# --- determinism -----------------------------------------------------------
my ($rc, $err) = gen('gallery', '--fingers', '300', '--seed', '7', '--out', "$dir/g.csv");
is($rc, 0, 'gallery CSV written') or diag($err);
gen('gallery', '--fingers', '300', '--seed', '7', '--out', "$dir/g2.csv");
is(compare("$dir/g.csv", "$dir/g2.csv"), 0, 'same arguments, same bytes');
gen('gallery', '--fingers', '300', '--seed', '8', '--out', "$dir/g3.csv");
is(compare("$dir/g.csv", "$dir/g3.csv"), 1, 'another seed, other bytes');

# --- probes and their truth file -------------------------------------------
($rc, $err) = gen('probes', '--count', '40', '--gallery-fingers', '300', '--seed', '7',
	'--out', "$dir/p.csv", '--truth', "$dir/truth.csv", '--header');
is($rc, 0, 'probes and truth written') or diag($err);
my @truth = split /\n/, slurp("$dir/truth.csv");
is(shift(@truth), 'probe_id,finger,impression,mate_id', 'truth header');
my @mated = grep { /,\d+$/ } @truth;
is(scalar(@truth), 40, '40 probes in the truth file');
is(scalar(@mated), 20, 'half of them mated');
my %mates = map { (split /,/)[3] => 1 } @mated;
is(scalar(keys %mates), 20, 'mated probes come from distinct gallery fingers');
ok(!(grep { my @f = split /,/; $f[1] != $f[3] || $f[3] < 1 || $f[3] > 300 } @mated),
	'a mate is the probe\'s own finger, inside the gallery');
ok(!(grep { my @f = split /,/, $_, -1; $f[1] <= 300 || $f[3] ne '' } grep { /,$/ } @truth),
	'non-mated probes are fingers outside the gallery');

# --- PostgreSQL: COPY, equality with mcc_synthetic(), identify() ------------
my $node = service_node('mccgen', preload => 0);
$node->safe_psql(
	'postgres', qq{
	CREATE TABLE g (id bigint PRIMARY KEY, finger bigint, impression int, tpl mcc_template);
	COPY g (id, finger, impression, tpl) FROM '$dir/g.csv' (FORMAT csv);
	CREATE TABLE p (id bigint PRIMARY KEY, finger bigint, impression int, tpl mcc_template);
	COPY p FROM '$dir/p.csv' (FORMAT csv, HEADER);
	CREATE TABLE truth (probe_id bigint, finger bigint, impression int, mate_id bigint);
	COPY truth FROM '$dir/truth.csv' (FORMAT csv, HEADER);});
is($node->safe_psql('postgres', 'SELECT count(*) FROM g'), '300', 'COPY loads the gallery CSV');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM g JOIN mcc_synthetic(300, 1, 7, 1) s
	  ON s.finger = g.finger AND s.impression = g.impression AND s.template::text = g.tpl::text}),
	'300',
	'the CSV templates are those of mcc_synthetic() with the same seed');
my $found = $node->safe_psql(
	'postgres', q{
	SELECT count(*) FROM truth t JOIN p ON p.id = t.probe_id,
	       LATERAL identify('g', p.tpl, 1) i
	WHERE t.mate_id IS NOT NULL AND i.id = t.mate_id});
# docs/synthetic.md: about 94% rank-1 on 2,000 fingers, more on 300
cmp_ok($found, '>=', 17, "identify() finds the mate of $found of 20 mated probes at rank 1");

# --- one file per template: ISO, ANSI (both editions), xyt -----------------
foreach my $fmt ('iso', 'ansi', 'xyt', 'iso2011', 'ansi2009')
{
	($rc, $err) = gen('gallery', '--fingers', '5', '--seed', '7', '--format', $fmt,
		'--out', "$dir/$fmt");
	is($rc, 0, "$fmt folder written") or diag($err);
	my $ext = { iso => 'iso', ansi => 'fmr', xyt => 'xyt', iso2011 => 'iso2011.iso',
		ansi2009 => 'ansi2009.fmr' }->{$fmt};
	my @rows;
	foreach my $finger (1 .. 5)
	{
		my $path = "$dir/$fmt/${finger}_0.$ext";
		my $expr =
		  $fmt eq 'xyt'
		  ? "mcc_template_from_xyt(pg_read_file('$path'), 388, 374, 500)"
		  : "mcc_template_from_iso(pg_read_binary_file('$path'))";
		push @rows, "($finger, $expr)";
	}
	is( $node->safe_psql(
			'postgres', "SELECT count(*) FROM (VALUES " . join(',', @rows) . ") v(finger, t)
			  JOIN g USING (finger) WHERE mcc_minutiae_count(v.t) = mcc_minutiae_count(g.tpl)"),
		'5',
		"$fmt files import with the same minutiae counts as the CSV");
}
$node->stop;

# --- pairs ------------------------------------------------------------------
($rc, $err) = gen('pairs', '--fingers', '6', '--impressions', '4', '--seed', '7',
	'--out', "$dir/pairs.csv", '--truth', "$dir/pairs_truth.csv");
is($rc, 0, 'pairs written') or diag($err);
my @pairs = split /\n/, slurp("$dir/pairs_truth.csv");
is(scalar(grep { /,1$/ } @pairs), 6 * 6, 'genuine pairs: 6 fingers x C(4, 2)');
is(scalar(grep { /,0$/ } @pairs), 15, 'FVC impostor pairs: C(6, 2) first impressions');
my @tpl_lines = split /\n/, slurp("$dir/pairs.csv");
is(scalar(@tpl_lines), 24, "24 templates");
gen('pairs', '--fingers', '6', '--impressions', '4', '--impostors', 'all',
	'--out', "$dir/pairs.csv", '--truth', "$dir/pairs_all.csv");
my @all_pairs = split /\n/, slurp("$dir/pairs_all.csv");
is(scalar(grep { /,0$/ } @all_pairs), 15 * 16,
	'all impostor pairs: C(6, 2) x 4 x 4');

# --- errors -----------------------------------------------------------------
($rc, $err) = gen('gallery', '--fingers', '3', '--missing', '2');
is($rc, 1, 'out-of-range model parameter fails');
like($err, qr/p_missing = 2 is out of range/, 'and says which');
($rc, $err) = gen('gallery', '--fingers', '3', '--bogus');
like($err, qr/unrecognized option "--bogus"/, 'unknown option named');
($rc, $err) = gen('probes', '--count', '3', '--gallery-fingers', '5');
like($err, qr/needs --truth FILE/, 'probes without --truth fails');
($rc, $err) = gen('gallery', '--fingers', '3', '--format', 'iso');
like($err, qr/needs --out FOLDER/, 'a folder format without --out fails');

done_testing();
