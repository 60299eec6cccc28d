# MccScaleOut.pm: the set-up the scale-out TAP tests share (docs/scale-out.md):
# a skip when PL/Proxy is absent, a coordinator and three shards on loopback
# with mcc_proxy and mcc_shard, and the single server they are compared
# with (every template in one plain table on the coordinator).
package MccScaleOut;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More;

our @EXPORT = qw(skip_without_plproxy start_scale_out shard_connstr add_shards
  single_server_tables rejected_alike);

# Skips the whole script unless PL/Proxy is installed.
sub skip_without_plproxy
{
	my $sharedir = `pg_config --sharedir`;
	chomp $sharedir;
	plan skip_all => 'PL/Proxy is not installed (Debian package postgresql-15-plproxy)'
	  unless -e "$sharedir/extension/plproxy.control";
	return;
}

# Starts the clusters coord, s1, s2 and s3 listening on 127.0.0.1 ($conf:
# more lines for their postgresql.conf), creates mcc_shard on each shard
# and mcc_proxy on the coordinator. Returns the nodes by name.
sub start_scale_out
{
	my ($conf) = @_;
	my %node;

	foreach my $name (qw(coord s1 s2 s3))
	{
		my $n = PostgreSQL::Test::Cluster->new($name);
		$n->init;
		$n->append_conf('postgresql.conf', qq{
listen_addresses = '127.0.0.1'
max_connections = 40
shared_buffers = 16MB
} . ($conf // ''));
		$n->start;
		$node{$name} = $n;
	}
	foreach my $s (qw(s1 s2 s3))
	{
		$node{$s}->safe_psql('postgres', 'CREATE EXTENSION mcc_shard CASCADE');
	}
	$node{coord}->safe_psql('postgres', 'CREATE EXTENSION mcc_proxy CASCADE');
	return \%node;
}

# libpq connection string of node $n over TCP on loopback; $port instead of
# its own (a relay in front of it)
sub shard_connstr
{
	my ($n, $port) = @_;
	$port //= $n->port;
	return "host=127.0.0.1 port=$port dbname=postgres connect_timeout=3";
}

# Registers s1, s2 and s3 with the coordinator; returns add_shard()'s answer
# by shard name.
sub add_shards
{
	my ($node) = @_;
	return map {
		$_ => $node->{coord}->safe_psql('postgres',
			"SELECT mcc_proxy.add_shard('$_', '" . shard_connstr($node->{$_}) . "')")
	} qw(s1 s2 s3);
}

# The single server on $coord: g_all holds $fingers synthetic fingers of
# $seed, and copies of every tenth template under other ids (id + 1000000),
# which tie with their original and, their ids hashing to other partitions,
# live on other shards. probes: second impressions of the $known gallery
# fingers from $first on, as pid 1..$known, then $strangers fingers the
# gallery does not hold.
sub single_server_tables
{
	my ($coord, $fingers, $seed, $known, $first, $strangers) = @_;
	$coord->safe_psql(
		'postgres', qq{
		CREATE TABLE g_all (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
		INSERT INTO g_all SELECT finger, template FROM mcc_synthetic($fingers, 1, $seed);
		INSERT INTO g_all SELECT id + 1000000, tpl FROM g_all WHERE id % 10 = 0;
		CREATE TABLE probes (pid int PRIMARY KEY, tpl mcc_template NOT NULL);
		INSERT INTO probes SELECT row_number() OVER (ORDER BY finger), template
			FROM mcc_synthetic($known, 2, $seed, $first) WHERE impression = 1;
		INSERT INTO probes SELECT $known + row_number() OVER (ORDER BY finger), template
			FROM mcc_synthetic($strangers, 1, $seed, 500000);
	});
	return;
}

# Two checks: one server rejects identify('g_all', $args) on $coord, and
# mcc_proxy.identify('g', $args) fails with the same first line (SQLSTATE
# and message).
sub rejected_alike
{
	my ($coord, $args) = @_;
	my (undef, undef, $err_proxy) = $coord->psql('postgres',
		"\\set VERBOSITY terse\nSELECT * FROM mcc_proxy.identify('g', $args)");
	my (undef, undef, $err_local) = $coord->psql('postgres',
		"\\set VERBOSITY terse\nSELECT * FROM public.identify('g_all', $args)");
	$err_local =~ s/\n.*//s;
	$err_proxy =~ s/\n.*//s;
	isnt($err_local, '', "one server rejects identify(g, $args)");
	is($err_proxy, $err_local, "the coordinator rejects it alike: $err_local");
	return;
}

1;
