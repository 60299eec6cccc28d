# scripts/scale-out-setup.sh (docs/scale-out.md): it starts a coordinator
# and two shards on loopback, enrolls a synthetic gallery through the
# coordinator, and identify() there equals mcc's identify() over the same
# templates in one table; status, stop and destroy work.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccScaleOut;

skip_without_plproxy();

my $script = ($ENV{MCC_SRCDIR} || '.') . '/scripts/scale-out-setup.sh';
my $dir = PostgreSQL::Test::Utils::tempdir_short() . '/so';
my @ports = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 3;
my @common = ('-d', $dir);

# run the script; returns (exit status, stdout, stderr)
sub setup
{
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run([ 'bash', $script, @_ ], '>', \$stdout, '2>', \$stderr);
	return ($ok ? 0 : 1, $stdout, $stderr);
}

my ($rc, $out, $err) = setup('start', @common, '-n', '2', '--ports', join(',', @ports),
	'--partitions', '8', '--synthetic', '600', '--seed', '3');
is($rc, 0, 'start: a coordinator and two shards') or diag("$out\n$err");
like($out, qr/partitions: s1 4, s2 4/, 'eight partitions, four per shard');
like($out, qr/enrolled: 600/, '600 synthetic fingers enrolled through the coordinator');

($rc, $out, $err) = setup('status', @common);
is(() = $out =~ /^ s\d +\| \{[0-9,]+\} +\| t /mg, 2, 'status: both shards answer') or diag("$out\n$err");

# the same templates in one table on the coordinator, and 20 probes
($rc, $out, $err) = setup(
	'psql', @common, '-At', '-c', q{
	CREATE TABLE g_all AS SELECT finger AS id, template AS tpl FROM mcc_synthetic(600, 1, 3);
	CREATE TABLE probes AS SELECT finger AS pid, template AS tpl
		FROM mcc_synthetic(20, 2, 3, 10) WHERE impression = 1;
	SET search_path = mcc_proxy, public;
	SELECT count(*) FILTER (WHERE a = b) || ' of ' || count(*)
	FROM (SELECT (SELECT string_agg(id || '=' || score::text, ' ') FROM identify('g', p.tpl, 10)) AS a,
				 (SELECT string_agg(id || '=' || score::text, ' ') FROM public.identify('g_all', p.tpl, 10, id_column => 'id')) AS b
		  FROM probes p) x});
is($rc, 0, 'psql through the script') or diag($err);
chomp $out;
is($out, '20 of 20', 'identify() through the coordinator equals one server for 20 probes');

($rc, $out, $err) = setup('start', @common, '-n', '2', '--ports', join(',', @ports));
isnt($rc, 0, 'start refuses a directory that holds clusters');

($rc, $out) = setup('stop', @common);
is($rc, 0, 'stop');
is(() = $out =~ /^stopped /mg, 3, 'three servers stopped');
($rc) = setup('destroy', @common);
ok($rc == 0 && !-e $dir, 'destroy removes the clusters');

done_testing();
