# identify() on a large gallery: statement_timeout and pg_cancel_backend()
# interrupt it mid-scan, its memory does not grow with the gallery size, and
# interrupted scans leak nothing (the malloc'ed SoA batch is freed on ERROR).
#
# The timings printed (full scan, time to interrupt) are measurements; the
# assertions are only that the statement was interrupted and that memory
# stayed bounded.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;
use Time::HiRes qw(time usleep);
use MccBackend;

my $base = 2000;		# distinct synthetic templates
my $small_copies = 10;	# small gallery: 20,000 rows
my $big_copies = 100;	# big gallery: 200,000 rows
my $probe = '(SELECT tpl FROM probe)';

my $node = service_node('identify', preload => 0, shared_buffers => '32MB', fsync => 'off',
	max_wal_size => '4GB');

# The galleries repeat $base synthetic templates under new ids; the probe is
# a finger that is in none of them.
$node->safe_psql(
	'postgres', qq{
	CREATE TABLE base AS SELECT finger AS id, template AS tpl FROM mcc_synthetic($base, 1, 7);
	CREATE TABLE probe AS
		SELECT template AS tpl FROM mcc_synthetic(1, 2, 7, 1000000) WHERE impression = 1;
});
# tiny: 100 rows, to load the library and warm the caches before measuring
foreach my $g ([ 'tiny', 1, 100 ], [ 'small', $small_copies, $base ], [ 'big', $big_copies, $base ])
{
	my ($name, $copies, $per_copy) = @$g;
	$node->safe_psql(
		'postgres', qq{
		CREATE TABLE $name (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
		INSERT INTO $name SELECT c * $base + b.id, b.tpl
			FROM base b, generate_series(0, $copies - 1) c WHERE b.id < $per_copy;
		VACUUM ANALYZE $name;
	});
}
my $big_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM big');
my $big_bytes = $node->safe_psql('postgres',
	'SELECT sum(pg_column_size(tpl)) FROM big');
note(sprintf("big gallery: %d rows, %.0f MB of templates", $big_rows, $big_bytes / 2**20));

# An uninterrupted scan of the big gallery, for scale.
my $t0 = time;
my $n = $node->safe_psql('postgres', "SELECT count(*) FROM identify('big', $probe, 10)");
my $full = time - $t0;
is($n, 10, 'identify over the big gallery returns k rows');
note(sprintf("uninterrupted identify over %d templates: %.0f ms (%.2f M templates/s)",
		$big_rows, 1000 * $full, $big_rows / $full / 1e6));

# The statements to interrupt scan the big gallery eight times (one
# statement, eight function scans), so that a timeout or cancel set at a
# fraction of the one scan timed above always lands in the middle of them:
# no check below depends on that timing being repeatable (a warm cache, a
# quieter machine), only on its being within a factor 30 or more.
my $scans = 8;
my $long = 'SELECT count(*) FROM ('
  . join(' UNION ALL ', map { "SELECT * FROM identify('big', $probe, 10)" } 1 .. $scans)
  . ') s';

# statement_timeout at a tenth of one full scan.
my $timeout_ms = int(1000 * $full / 10);
$timeout_ms = 20 if $timeout_ms < 20;
$t0 = time;
my ($ret, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = $timeout_ms; $long");
my $elapsed = time - $t0;
like($err, qr/canceling statement due to statement timeout/,
	'statement_timeout interrupts identify');
note(sprintf("statement_timeout %d ms: the statement ended after %.0f ms (psql start included)",
		$timeout_ms, 1000 * $elapsed));

# pg_cancel_backend() from another session, a quarter into the first scan.
my ($c_out, $c_err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-XAtq', '-d',
		$node->connstr('postgres') . ' application_name=mcc_cancel',
		'-c', $long
	],
	'>', \$c_out, '2>', \$c_err);
my $pid = backend_pid($node, 'mcc_cancel', '%UNION ALL%');
usleep(int(1e6 * $full / 4));
$t0 = time;
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"),
	't', 'cancel sent to the backend running identify');
$h->finish;
$elapsed = time - $t0;
like($c_err, qr/canceling statement due to user request/,
	'pg_cancel_backend interrupts identify');
note(sprintf("pg_cancel_backend: the statement ended %.0f ms after the cancel was sent",
		1000 * $elapsed));

# RssAnon (private memory: palloc and malloc, not shared buffers) of a process.
sub rss_anon_kb
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	while (my $line = <$fh>)
	{
		return $1 if $line =~ /^RssAnon:\s+(\d+)\s+kB/;
	}
	return undef;
}

# Peak growth of the backend's private memory while it runs identify over
# $table, sampled every 5 ms, above its level after a warm-up identify.
sub peak_growth_kb
{
	my ($table) = @_;
	my ($o, $e) = ('', '');
	my $app = "mcc_mem_$table";
	my $run = IPC::Run::start(
		[
			'psql', '-XAtq', '-d',
			$node->connstr('postgres') . " application_name=$app",
			'-c', "SELECT count(*) FROM identify('tiny', $probe, 10)",
			'-c', 'SELECT pg_sleep(1)',
			'-c', "SELECT count(*) FROM identify('$table', $probe, 10)"
		],
		'>', \$o, '2>', \$e);
	my $pid = backend_pid($node, $app, '%pg_sleep%');
	my $level = rss_anon_kb($pid);
	my $peak = $level;
	while ($run->pumpable)
	{
		my $kb = rss_anon_kb($pid);
		$peak = $kb if defined $kb && $kb > $peak;
		usleep(5_000);
		$run->pump_nb;
	}
	$run->finish;
	die "identify over $table failed: $e" unless $o =~ /^10$/m;
	return $peak - $level;
}

my $grow_small = peak_growth_kb('small');
my $grow_big = peak_growth_kb('big');
note(sprintf("peak private memory growth: %.1f MB over %d rows, %.1f MB over %d rows",
		$grow_small / 1024, $base * $small_copies, $grow_big / 1024, $big_rows));
cmp_ok($grow_big, '<', $grow_small + 16 * 1024,
	'memory does not grow with the gallery (10x the rows, < 16 MB more)');
cmp_ok($grow_big, '<', $big_bytes / 1024 / 10,
	'peak memory is a small fraction of the gallery size');

# Twenty scans interrupted mid-way in one session leave its memory where it
# was: nothing allocated by an interrupted scan outlives it.
my $cancels = 20;
my $interrupt_ms = int(1000 * $full / 8);
$interrupt_ms = 20 if $interrupt_ms < 20;
my $rss = q{SELECT 'rss=' || substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s*(\d+)')};
my @cmds = (
	"SELECT count(*) FROM identify('tiny', $probe, 10)",
	"SET statement_timeout = $interrupt_ms",
	$long, $long, $rss);
push @cmds, $long for 1 .. $cancels;
push @cmds, $rss, 'RESET statement_timeout',
  "SELECT 'after=' || count(*) FROM identify('small', $probe, 10)";
my ($l_out, $l_err) = ('', '');
IPC::Run::run([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), map { ('-c', $_) } @cmds ],
	'>', \$l_out, '2>', \$l_err);
my @timeouts = $l_err =~ /canceling statement due to statement timeout/g;
is(scalar(@timeouts), $cancels + 2, "all $cancels + 2 scans were interrupted");
my @rss = $l_out =~ /^rss=(\d+)$/mg;
is(scalar(@rss), 2, 'memory read before and after the interrupted scans');
note(sprintf("private memory before %d interrupted scans: %.1f MB, after: %.1f MB",
		$cancels, $rss[0] / 1024, $rss[1] / 1024));
cmp_ok($rss[1] - $rss[0], '<', 8 * 1024,
	"$cancels interrupted scans leave no memory behind (< 8 MB)");
like($l_out, qr/^after=10$/m, 'the session still identifies after the interruptions');

$node->stop;
done_testing();
