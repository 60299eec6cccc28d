# Scale-out with PL/Proxy (docs/scale-out.md): a coordinator and three shard
# clusters on loopback (127.0.0.1). A synthetic gallery is enrolled through
# the coordinator; identify() there must equal mcc's identify() on one server
# holding every template (here a plain table on the coordinator), row by row,
# scores and order included, for many probes and several k and min_score,
# with ties across shards. Then: templates cross the wire in binary (a relay
# in front of one shard reads the protocol), text I/O gives the same, errors
# match, identify_batch when mcc has it, a stopped shard is an error that
# names it (or a partial answer on request), a slow shard too, and
# partitions move between shards without losing or duplicating a row
# (counts and digests), while queries run.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use IPC::Run;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MccScaleOut;

skip_without_plproxy();

my $fingers = 3000;		# distinct synthetic fingers in the gallery
my $seed = 42;

# --- four clusters on loopback ------------------------------------------------
my %node = %{ start_scale_out("log_parameter_max_length = 64\n") };
my $coord = $node{coord};

# This test is about the LSS stage across shards (the wire, failures,
# moves): its coordinator sessions default to refine 'none'. The refined
# answer (the default elsewhere, 'fused') is 033_scale_out_refine.pl's.
$coord->safe_psql('postgres', "ALTER DATABASE postgres SET mcc.refine_method = 'none'");
my %added = add_shards(\%node);
like($added{$_}, qr{^\d+/postgres$}, "shard $_ registered") foreach qw(s1 s2 s3);
is( $coord->safe_psql(
		'postgres',
		"SELECT string_agg(shard || ':' || n, ' ' ORDER BY shard)
		 FROM (SELECT shard, count(*) AS n FROM mcc_proxy.create_partitions(16) GROUP BY shard) x"),
	's1:6 s2:5 s3:5',
	'16 partitions, round-robin over three shards');
$coord->safe_psql('postgres', "SELECT mcc_proxy.set_option('query_timeout', '20')");
is($coord->safe_psql('postgres', "SELECT mcc_proxy.create_gallery('g')"), 'g', 'sharded gallery created');
is( $coord->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE answers) FROM mcc_proxy.cluster_status()"),
	'3', 'every shard answers');

# --- the single server: all templates in one table on the coordinator ------
single_server_tables($coord, $fingers, $seed, 50, 100, 20);
$coord->safe_psql(
	'postgres', qq{
	-- one identify() result as text, rows in order
	CREATE FUNCTION local_result(probe mcc_template, k int, min_score real) RETURNS text
		LANGUAGE sql AS \$\$
		SELECT coalesce(string_agg(t.id || '=' || t.score::text, ' ' ORDER BY t.ord), '')
		FROM public.identify('g_all', probe, k, min_score) WITH ORDINALITY AS t(id, score, ord) \$\$;
	CREATE FUNCTION proxy_result(probe mcc_template, k int, min_score real) RETURNS text
		LANGUAGE sql AS \$\$
		SELECT coalesce(string_agg(t.id || '=' || t.score::text, ' ' ORDER BY t.ord), '')
		FROM mcc_proxy.identify('g', probe, k, min_score) WITH ORDINALITY AS t(id, score, ord) \$\$;
	CREATE TABLE cases (k int, min_score real);
	INSERT INTO cases VALUES (1, 0), (10, 0), (100, 0), (25, 0.3), (5000, 0.35);
});
my $total = $coord->safe_psql('postgres', 'SELECT count(*) FROM g_all');

# --- enrolment through the coordinator ---------------------------------------
# most in one call (every shard in parallel), the rest through INSERT on
# the coordinator's view
is( $coord->safe_psql(
		'postgres',
		"SELECT mcc_proxy.enroll('g', array_agg(id ORDER BY id), array_agg(tpl ORDER BY id))
		 FROM g_all WHERE id < 2900 OR id >= 1000000"),
	$coord->safe_psql('postgres', 'SELECT count(*) FROM g_all WHERE id < 2900 OR id >= 1000000'),
	'batch enrolment writes every row');
$coord->safe_psql('postgres', 'INSERT INTO g SELECT id, tpl FROM g_all WHERE id >= 2900 AND id < 1000000');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM g'), $total,
	'the coordinator view counts every template');

# every row sits on the shard its partition belongs to, and each partition
# on one shard only
sub placement_ok
{
	my ($label) = @_;
	is( $coord->safe_psql(
			'postgres',
			"SELECT count(*) FILTER (WHERE NOT answers_for) || ' ' || count(DISTINCT part) || ' ' ||
					count(*) || ' ' || sum(nrows)
			 FROM mcc_proxy.gallery_placement('g')"),
		"0 16 16 $total",
		"$label: every row on the shard of its partition, no copy elsewhere");
}
placement_ok('after enrolment');
is( $node{s1}->safe_psql('postgres',
		"SELECT count(*) FROM g WHERE part <> mcc_shard.partition_of(id, 16)"),
	'0', 'rows stored under the partition of hashtext(id::text)');
is( $coord->safe_psql(
		'postgres',
		"SELECT count(*) FROM g_all a
		 WHERE mcc_proxy.partition_of(a.id) <> hashtext(a.id::text) & 15"),
	'0', 'partition_of is hashtext(id::text) & 15');

# --- identify(): coordinator == one server -------------------------------------
# Compares all probes under all cases; returns "equal total tied": tied
# counts results with two rows of the same score.
sub compare_all
{
	my ($where) = @_;
	$where //= 'true';
	return $coord->safe_psql(
		'postgres', qq{
		SELECT count(*) FILTER (WHERE l = p) || ' ' || count(*) || ' ' ||
			   count(*) FILTER (WHERE l ~ '(=[0-9.e-]+) [0-9]+\\1( |\$)')
		FROM (SELECT local_result(pr.tpl, c.k, c.min_score) AS l,
					 proxy_result(pr.tpl, c.k, c.min_score) AS p
			  FROM probes pr, cases c WHERE $where) x});
}

my $cases = $coord->safe_psql('postgres', 'SELECT count(*) FROM probes, cases');
my ($equal, $n, $tied) = split / /, compare_all();
is($n, $cases, "$cases identify() calls compared");
is($equal, $n, 'identify() through the coordinator equals identify() on one server, row by row');
cmp_ok($tied, '>', 10, "ties across shards are part of the comparison ($tied results with ties)");
# mated probe pid is finger pid + 99
my $rank1 = "SELECT count(*) FROM probes pr
			 WHERE pr.pid <= 50 AND (SELECT id FROM %s('%s', pr.tpl, 1)) = pr.pid + 99";
my $hits = $coord->safe_psql('postgres', sprintf($rank1, 'mcc_proxy.identify', 'g'));
is($hits, $coord->safe_psql('postgres', sprintf($rank1, 'public.identify', 'g_all')),
	"rank-1 identification: $hits of 50 mated probes, as on one server");
cmp_ok($hits, '>', 25, 'most mated probes find their finger first (the probes are meaningful)');

# with mcc_proxy first in search_path, a plain identify() is the proxy's
like( $coord->safe_psql(
		'postgres', "SET search_path = mcc_proxy, public;
		 EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))"),
	qr/Function Scan on mcc_proxy\.identify/, 'search_path mcc_proxy, public: identify() is the proxy');
is( $coord->safe_psql(
		'postgres', "SET search_path = mcc_proxy, public;
		 SELECT string_agg(id || '=' || score, ' ') FROM identify('g', (SELECT tpl FROM probes WHERE pid = 7), 10)"),
	$coord->safe_psql(
		'postgres', "SELECT string_agg(id || '=' || score, ' ') FROM identify('g_all', (SELECT tpl FROM probes WHERE pid = 7), 10)"),
	'plain identify() on the coordinator equals one server');

# errors: the same SQLSTATE and message as on one server
foreach my $bad ("NULL, 10", "(SELECT tpl FROM probes WHERE pid = 1), 0",
	"(SELECT tpl FROM probes WHERE pid = 1), -3", "(SELECT tpl FROM probes WHERE pid = 1), 10, 1.5",
	"(SELECT tpl FROM probes WHERE pid = 1), 10, 'NaN'")
{
	rejected_alike($coord, $bad);
}

# --- an ordinary user --------------------------------------------------------------
# PL/Proxy connects to the shards as the calling user: the shards check
# privileges as one server does, and grant_gallery() grants them everywhere.
foreach my $n (values %node)
{
	$n->safe_psql('postgres', 'CREATE ROLE reader LOGIN');
}
$coord->safe_psql('postgres', 'GRANT SELECT ON probes TO reader');
my $reader_sql = "SELECT string_agg(id || '=' || score::text, ' ')
				  FROM mcc_proxy.identify('g', (SELECT tpl FROM probes WHERE pid = 5), 10)";
my (undef, $r_out, $r_err) = $coord->psql('postgres', "\\set VERBOSITY verbose\n$reader_sql",
	extra_params => [ '-U', 'reader' ]);
like($r_err, qr/ERROR:  42501: permission denied for table g_p\d+/,
	'a user without privileges on the shards\' tables is refused (42501)');
$coord->safe_psql('postgres', "SELECT mcc_proxy.grant_gallery('g', 'reader')");
(undef, $r_out, $r_err) = $coord->psql('postgres', $reader_sql, extra_params => [ '-U', 'reader' ]);
is($r_out, $coord->safe_psql('postgres', $reader_sql), 'after grant_gallery(), it searches as a superuser does')
  or diag($r_err);
(undef, undef, $r_err) = $coord->psql('postgres',
	"SELECT mcc_proxy.enroll('g', 7000000, (SELECT tpl FROM probes WHERE pid = 5))",
	extra_params => [ '-U', 'reader' ]);
like($r_err, qr/permission denied for table g/, 'but may not enroll');

# --- binary transport ------------------------------------------------------------
# A relay in front of s1 records what the coordinator sends. Templates cross
# in their versioned binary form, the bytea of mcc_template_send(), which
# the shard reads back with the type's receive function. PL/Proxy 2.10 has
# binary protocol I/O switched off for every type (src/type.c,
# usable_binary), so that bytea goes as text (\x and hex) unless a later
# PL/Proxy sends it with format code 1; either way the bytes must be
# exactly mcc_template_send(probe).
my $relay_dir = PostgreSQL::Test::Utils::tempdir;
my $listen = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => 0,
	Listen => 8,
	ReuseAddr => 1) or die "relay: $!";
my $relay_port = $listen->sockport;
my $relay_pid = fork();
die "fork: $!" unless defined $relay_pid;
if ($relay_pid == 0)
{
	# let prove see the end of the test's output when the test ends
	open(STDOUT, '>', '/dev/null');
	open(STDERR, '>', '/dev/null');
	relay($listen, $node{s1}->port, $relay_dir);
	POSIX::_exit(0);
}
close($listen);
my $main_pid = $$;
END { kill 'TERM', $relay_pid if $relay_pid && $$ == $main_pid; }

# forward every connection to upstream_port, appending what clients send to
# $dir/c<N>.bin
sub relay
{
	my ($lsock, $upstream_port, $dir) = @_;
	my $sel = IO::Select->new($lsock);
	my (%peer, %log);
	my $conns = 0;
	while (1)
	{
		foreach my $fh ($sel->can_read)
		{
			if ($fh == $lsock)
			{
				my $c = $lsock->accept or next;
				my $u = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $upstream_port)
				  or do { close($c); next; };
				$conns++;
				open(my $lf, '>', "$dir/c$conns.bin") or die;
				binmode($lf);
				$lf->autoflush(1);
				$peer{$c} = $u;
				$peer{$u} = $c;
				$log{$c} = $lf;
				$sel->add($c, $u);
				next;
			}
			my $buf;
			my $got = sysread($fh, $buf, 65536);
			my $other = $peer{$fh};
			if (!$got)
			{
				$sel->remove($fh, $other);
				close($fh);
				close($other);
				delete $peer{$fh};
				delete $peer{$other};
				next;
			}
			print { $log{$fh} } $buf if $log{$fh};
			my $off = 0;
			while ($off < length($buf))
			{
				my $w = syswrite($other, $buf, length($buf) - $off, $off);
				last unless defined $w;
				$off += $w;
			}
		}
	}
}

# The Bind messages in a recorded client stream: [query, param formats,
# param values (undef for NULL), result formats].
sub binds_of
{
	my ($bytes) = @_;
	my ($pos, $query, @binds) = (0, '');
	while ($pos + 8 <= length($bytes))
	{
		my ($len, $code) = unpack('NN', substr($bytes, $pos, 8));
		$pos += $len;
		last if $code == 196608;	# StartupMessage, protocol 3.0
	}
	while ($pos + 5 <= length($bytes))
	{
		my $type = substr($bytes, $pos, 1);
		my $len = unpack('N', substr($bytes, $pos + 1, 4));
		my $body = substr($bytes, $pos + 5, $len - 4);
		$pos += 1 + $len;
		if ($type eq 'P')
		{
			(undef, $query) = unpack('Z*Z*', $body);
		}
		elsif ($type eq 'B')
		{
			my ($portal, $stmt) = unpack('Z*Z*', $body);
			my $p = length($portal) + length($stmt) + 2;
			my $nf = unpack('s>', substr($body, $p, 2));
			my @fmt = unpack("s>$nf", substr($body, $p + 2, 2 * $nf));
			$p += 2 + 2 * $nf;
			my $np = unpack('s>', substr($body, $p, 2));
			$p += 2;
			my @val;
			foreach (1 .. $np)
			{
				my $vl = unpack('l>', substr($body, $p, 4));
				$p += 4;
				push @val, $vl < 0 ? undef : substr($body, $p, $vl);
				$p += $vl if $vl > 0;
			}
			my $nr = unpack('s>', substr($body, $p, 2));
			my @rfmt = unpack("s>$nr", substr($body, $p + 2, 2 * $nr));
			push @binds, [ $query, \@fmt, \@val, \@rfmt ];
		}
	}
	return @binds;
}

my (undef, undef, $alter_err) = $coord->psql('postgres',
	"SELECT mcc_proxy.alter_shard('s1', '" . shard_connstr($node{s2}) . "')");
like($alter_err, qr/the new connection string of shard "s1" reaches another database/,
	'alter_shard refuses a connection string that reaches another shard');
my (undef, undef, $remove_err) = $coord->psql('postgres', "SELECT mcc_proxy.remove_shard('s2')");
like($remove_err, qr/shard "s2" still holds partitions/, 'remove_shard refuses a shard that holds partitions');
my $relay_connstr = shard_connstr($node{s1}, $relay_port) . ' sslmode=disable gssencmode=disable';
like($coord->safe_psql('postgres', "SELECT mcc_proxy.alter_shard('s1', '$relay_connstr')"),
	qr{/postgres$}, 's1 reached through the relay (same node)');
my $via_relay = $coord->safe_psql('postgres', "SELECT proxy_result(tpl, 10, 0) FROM probes WHERE pid = 3");
is($via_relay, $coord->safe_psql('postgres', "SELECT local_result(tpl, 10, 0) FROM probes WHERE pid = 3"),
	'identify() through the relay equals one server');
$coord->safe_psql('postgres', "SELECT mcc_proxy.alter_shard('s1', '" . shard_connstr($node{s1}) . "')");
kill 'TERM', $relay_pid;
waitpid($relay_pid, 0);
$relay_pid = undef;

my @search;
foreach my $f (glob("$relay_dir/c*.bin"))
{
	push @search, grep { $_->[0] =~ /mcc_shard\.search\(/ } binds_of(slurp_file($f));
}
is(scalar(@search), 1, 'the relay saw one search call for shard s1');
my ($q, $fmt, $val, $rfmt) = @{ $search[0] // [ '', [], [], [] ] };
like($q, qr/\$3::bytea/, 'the probe is parameter 3, a bytea');
my $probe_hex = ($fmt->[2] // 0) == 1 ? unpack('H*', $val->[2] // '') : ($val->[2] // '') =~ s/^\\x//r;
note('protocol format of the probe parameter: ' . ($fmt->[2] // 0) . ' (0 text, 1 binary)');
is($probe_hex,
	$coord->safe_psql('postgres', "SELECT encode(mcc_template_send(tpl), 'hex') FROM probes WHERE pid = 3"),
	'the probe crosses as mcc_template_send(probe), the versioned binary form');
# arrays are not on PL/Proxy's binary list: the partition list is text
is( $val->[1],
	$coord->safe_psql('postgres',
		"SELECT array_agg(part ORDER BY part) FROM mcc_proxy.partitions WHERE shard = 's1'"),
	's1 is sent exactly the partitions the map gives it');
note('result format asked for: ' . join(',', @$rfmt)
	  . ' (PL/Proxy asks for binary results only when the shard\'s server_version'
	  . ' has the major.minor it was built with)');

# text I/O (disable_binary) gives the same
$coord->safe_psql('postgres', "SELECT mcc_proxy.set_option('disable_binary', '1')");
($equal, $n) = split / /, compare_all('pr.pid % 5 = 0');
is($equal, $n, "with disable_binary = 1 (text I/O), $n calls equal one server");
$coord->safe_psql('postgres', "SELECT mcc_proxy.set_option('disable_binary', NULL)");

# --- identify_batch ----------------------------------------------------------------
# all 70 probes in one call: one remote call per shard
my $batch = q{
	SELECT string_agg(probe_no || ':' || id || '=' || score::text, ' ' ORDER BY ord)
	FROM %s('%s', (SELECT array_agg(tpl ORDER BY pid) FROM probes), %d, %s%s) WITH ORDINALITY
		AS t(probe_no, id, score, ord)};
foreach my $case ([ 1, 0 ], [ 10, 0 ], [ 25, 0.3 ])
{
	my ($k, $min) = @$case;
	my $want = $coord->safe_psql('postgres', sprintf($batch, 'public.identify_batch', 'g_all', $k, $min, ''));
	isnt($want, '', "identify_batch, k = $k, min_score = $min: one server finds rows");
	is($coord->safe_psql('postgres', sprintf($batch, 'mcc_proxy.identify_batch', 'g', $k, $min, '')),
		$want, "identify_batch, k = $k, min_score = $min: the coordinator equals one server");
}

# --- enrolment rules -------------------------------------------------------------
my (undef, undef, $dup) = $coord->psql('postgres',
	"SELECT mcc_proxy.enroll('g', 5, (SELECT tpl FROM g_all WHERE id = 6))");
like($dup, qr/duplicate key value/, 'enrolling an id again is an error');
is( $coord->safe_psql('postgres',
		"SELECT mcc_proxy.enroll('g', 5, (SELECT tpl FROM g_all WHERE id = 5), replace => true)"),
	'1', 'replace => true writes it again');
is($coord->safe_psql('postgres', "SELECT mcc_proxy.unenroll('g', ARRAY[7, 8, 9, 123456789])"),
	'3', 'unenroll removes the ids that exist');
$coord->safe_psql('postgres', 'DELETE FROM g_all WHERE id IN (7, 8, 9)');
$total -= 3;
($equal, $n) = split / /, compare_all('pr.pid % 7 = 0');
is($equal, $n, "after unenroll, $n calls still equal one server");

# --- a stopped shard ---------------------------------------------------------------
# the rows the live shards hold, for the expected partial answers
sub local_view_without
{
	my ($shard) = @_;
	$coord->safe_psql(
		'postgres', qq{
		CREATE OR REPLACE VIEW g_live AS SELECT a.id, a.tpl FROM g_all a
		WHERE mcc_proxy.partition_of(a.id) IN (SELECT part FROM mcc_proxy.partitions WHERE shard <> '$shard')});
}

# the result of a psql run: (stdout, stderr)
sub run_sql
{
	my ($sql) = @_;
	my (undef, $out, $err) = $coord->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($out, $err);
}

my $s2_parts = $coord->safe_psql('postgres',
	"SELECT array_agg(part ORDER BY part) FROM mcc_proxy.partitions WHERE shard = 's2'");
local_view_without('s2');
$node{s2}->stop('fast');
my ($out, $err) = run_sql("SELECT * FROM mcc_proxy.identify('g', (SELECT tpl FROM probes WHERE pid = 2))");
like($err, qr/ERROR:  08006: identify: shard "s2" did not answer/, 'a stopped shard: error 08006 naming it');
like($err, qr/DETAIL:  shard "s2" \(partitions \Q$s2_parts\E\): .*(connect|refused)/,
	'the detail gives its partitions and the connection error');
is($out, '', 'and no rows');

($out, $err) = run_sql(qq{
	SELECT count(*) FILTER (WHERE p = l) || ' ' || count(*)
	FROM (SELECT (SELECT string_agg(t.id || '=' || t.score::text, ' ' ORDER BY t.ord)
				  FROM mcc_proxy.identify('g', pr.tpl, 10, partial => true) WITH ORDINALITY AS t(id, score, ord)) AS p,
				 (SELECT string_agg(t.id || '=' || t.score::text, ' ' ORDER BY t.ord)
				  FROM public.identify('g_live', pr.tpl, 10, id_column => 'id') WITH ORDINALITY AS t(id, score, ord)) AS l
		  FROM probes pr WHERE pr.pid % 3 = 0) x});
my ($peq, $pn) = split / /, $out;
ok($pn > 0 && $peq == $pn, "partial => true: $peq of $pn answers are the exact top-k of the live shards");
like($err, qr/WARNING:  01000: identify: partial result: partitions \Q$s2_parts\E did not answer/,
	'with a warning naming the missing partitions');
like($err, qr/DETAIL:  shard "s2"/, 'and the shard');
like( (run_sql(sprintf($batch, 'mcc_proxy.identify_batch', 'g', 10, 0, '')))[1],
	qr/ERROR:  08006: identify_batch: shard "s2" did not answer/, 'identify_batch: the same error');
($out, $err) = run_sql(sprintf($batch, 'mcc_proxy.identify_batch', 'g', 10, 0, ', partial => true'));
is($out, $coord->safe_psql('postgres', sprintf($batch, 'public.identify_batch', 'g_live', 10, 0, ", id_column => 'id'")),
	'identify_batch, partial => true: per probe the exact top-k of the live shards');
like($err, qr/identify_batch: partial result: partitions \Q$s2_parts\E did not answer/, 'with its warning');
like((run_sql("SELECT count(*) FROM g"))[1], qr/gallery_rows: shard "s2" did not answer/,
	'reading the coordinator view is an error too');
like( (run_sql(qq{SELECT mcc_proxy.enroll('g', i, (SELECT tpl FROM probes WHERE pid = 1))
		FROM generate_series(5000000, 5000100) i
		WHERE mcc_proxy.partition_of(i) = ANY ('$s2_parts') LIMIT 1}))[1],
	qr/ERROR:  08006: enroll: shard "s2" did not answer/, 'enrolment into a stopped shard: the same error');

# a move whose destination is down changes nothing
my $map_before = $coord->safe_psql('postgres', q{SELECT string_agg(part || shard, ',') FROM mcc_proxy.partitions});
(undef, $err) = run_sql("CALL mcc_proxy.move_partition(2, 's2')");
like($err, qr/ERROR/, 'moving a partition to a stopped shard fails');
is($coord->safe_psql('postgres', q{SELECT string_agg(part || shard, ',') FROM mcc_proxy.partitions}),
	$map_before, 'and leaves the map as it was');

$node{s2}->start;
($equal, $n) = split / /, compare_all('pr.pid % 4 = 0');
is($equal, $n, "shard back: $n calls equal one server again");

# --- a slow shard ------------------------------------------------------------------
# A session on s3 holds its gallery locked: s3's searches wait. With the
# cluster's statement_timeout (applied on the shards), s3 is named.
# (PL/Proxy 2.10 checks its own query_timeout only when some connection has
# input, so a silent shard is never caught by it: docs/scale-out.md.)
my $locker = $node{s3}->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE g IN ACCESS EXCLUSIVE MODE');
$coord->safe_psql('postgres', "SELECT mcc_proxy.set_option('statement_timeout', '1000')");
($out, $err) = run_sql("SELECT * FROM mcc_proxy.identify('g', (SELECT tpl FROM probes WHERE pid = 2))");
like($err, qr/ERROR:  57014: identify: shard "s3" did not answer/, 'a shard that times out: error 57014 naming it');
like($err, qr/timed out: .*statement timeout/, 'the detail says it timed out');
local_view_without('s3');
foreach my $try (1 .. 3)
{
	($out, $err) = run_sql(qq{
		SELECT (SELECT string_agg(t.id || '=' || t.score::text, ' ')
				FROM mcc_proxy.identify('g', (SELECT tpl FROM probes WHERE pid = $try), 10, partial => true) t) =
			   (SELECT string_agg(t.id || '=' || t.score::text, ' ')
				FROM public.identify('g_live', (SELECT tpl FROM probes WHERE pid = $try), 10, id_column => 'id') t)});
	is($out, 't', "partial => true (probe $try): the exact top-k of the shards that answered in time");
	like($err, qr/partial result: partitions \{[0-9,]+\} did not answer/, 'with its warning');
}
# without it, the coordinator's own statement_timeout ends the call (the
# shards are sent a cancel)
$coord->safe_psql('postgres', "SELECT mcc_proxy.set_option('statement_timeout', NULL)");
($out, $err) = run_sql(
	"SET statement_timeout = 1500; SELECT * FROM mcc_proxy.identify('g', (SELECT tpl FROM probes WHERE pid = 2))");
like($err, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'the coordinator\'s statement_timeout cancels a call that waits for a shard');
$locker->query_safe('ROLLBACK');
$locker->quit;
($equal, $n) = split / /, compare_all('pr.pid % 4 = 1');
is($equal, $n, "lock released: $n calls equal one server");

# --- rebalancing -------------------------------------------------------------------
my $stats_sql = "SELECT string_agg(part || ':' || nrows || ':' || checksum, ' ' ORDER BY part)
				 FROM mcc_proxy.gallery_stats('g')";
my $stats_before = $coord->safe_psql('postgres', $stats_sql);
my $moving = $coord->safe_psql('postgres',
	"SELECT nrows FROM mcc_proxy.gallery_stats('g') WHERE part = 0");

# expected results of some probes, for a session that searches during the move
$coord->safe_psql(
	'postgres', q{
	CREATE TABLE want AS SELECT pid, tpl, local_result(tpl, 10, 0) AS res FROM probes WHERE pid % 2 = 0;
});
my ($bg_out, $bg_err) = ('', '');
my $bg = IPC::Run::start(
	[
		'psql', '-XAtq', '-d', $coord->connstr('postgres') . ' application_name=searcher', '-c', q{
		DO $$
		DECLARE
			bad int := 0;
			runs int := 0;
			before_switch int := 0;
			w record;
		BEGIN
			FOR i IN 1 .. 12 LOOP
				FOR w IN SELECT * FROM want LOOP
					runs := runs + 1;
					IF (SELECT shard FROM mcc_proxy.partitions WHERE part = 0) = 's1' THEN
						before_switch := before_switch + 1;
					END IF;
					IF proxy_result(w.tpl, 10, 0) IS DISTINCT FROM w.res THEN
						bad := bad + 1;
					END IF;
				END LOOP;
			END LOOP;
			RAISE NOTICE 'searcher: % of % results differ, % before the switch, % after',
				bad, runs, before_switch, runs - before_switch;
		END $$}
	],
	'>', \$bg_out, '2>', \$bg_err);
$coord->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'searcher' AND state = 'active'")
  or die 'searcher did not start';
($out, $err) = run_sql("CALL mcc_proxy.move_partition(0, 's3')");
like($err, qr/partition 0 of public\.g: $moving rows copied from "s1" to "s3", digests equal/,
	"partition 0 ($moving rows) copied and verified");
like($err, qr/partition 0 moved from "s1" to "s3"/, 'and moved');
$bg->finish;
like($bg_err, qr/searcher: 0 of \d+ results differ/, 'a session searching during the move always saw every row once');
like($bg_err, qr/differ, [1-9]\d* before the switch, [1-9]\d* after/,
	'its searches ran both before and after the switch');
is($coord->safe_psql('postgres', "SELECT shard FROM mcc_proxy.partitions WHERE part = 0"), 's3',
	'the map gives partition 0 to s3');
my $stats_after = $coord->safe_psql('postgres', $stats_sql);
is($stats_after, $stats_before, 'every partition has the same row count and digest');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM g'), $total, 'nothing lost, nothing duplicated');
placement_ok('after the move');
is($node{s1}->safe_psql('postgres', 'SELECT count(*) FROM g WHERE part = 0'), '0',
	'the old copy on s1 is gone');
($equal, $n) = split / /, compare_all();
is($equal, $n, "after the move, all $n calls equal one server");

# the plan that evens out the shards, carried out
is( $coord->safe_psql('postgres',
		"SELECT string_agg(part || ':' || from_shard || '>' || to_shard, ' ') FROM mcc_proxy.rebalance_plan()"),
	'14:s3>s1', 'the rebalance plan moves one partition to s1');
my (undef, undef, $rebalance_notices) = $coord->psql('postgres', 'CALL mcc_proxy.rebalance()');
like($rebalance_notices, qr/rebalance: move 1 of 1: partition 14 from "s3" to "s1".*rebalance: 1 move\(s\) done/s,
	'rebalance() reports its progress: move i of n, then done');
is( $coord->safe_psql('postgres',
		"SELECT string_agg(shard || ':' || n, ' ' ORDER BY shard)
		 FROM (SELECT shard, count(*) AS n FROM mcc_proxy.partitions GROUP BY shard) x"),
	's1:6 s2:5 s3:5', 'after rebalance(): 6, 5 and 5 partitions');
is($coord->safe_psql('postgres', $stats_sql), $stats_before, 'same counts and digests after rebalance()');
placement_ok('after rebalance()');

# a copy left behind (as by a move that stopped) is never searched, and
# cleanup() removes it
$coord->safe_psql('postgres', "SELECT mcc_proxy._pull_partition_at('" . shard_connstr($node{s2})
	  . "', 'public.g', 0, mcc_proxy._with_user('" . shard_connstr($node{s3}) . "'))");
is( $coord->safe_psql('postgres',
		"SELECT count(*) FROM mcc_proxy.gallery_placement('g') WHERE NOT answers_for"),
	'1', 'a stray copy of partition 0 on s2');
($equal, $n) = split / /, compare_all('pr.pid % 3 = 0');
is($equal, $n, "the stray copy is not searched: $n calls equal one server");
is($coord->safe_psql('postgres', 'SELECT count(*) FROM g'), $total, 'nor read');
(undef, $err) = run_sql('CALL mcc_proxy.cleanup()');
like($err, qr/shard "s2": removed $moving rows of gallery public\.g in partitions \{0\}/,
	'cleanup() removes it');
placement_ok('after cleanup()');

$coord->safe_psql('postgres', "SELECT mcc_proxy.drop_gallery('g')");
is( $node{s1}->safe_psql('postgres', "SELECT to_regclass('public.g') IS NULL"),
	't', 'drop_gallery drops the shards\' tables');

done_testing();
