# SAD search through SQL: pg_cancel_backend() stops a long mcc_sad_locate,
# its worker threads are gone afterwards (the backend is one thread again)
# and the session goes on; on the FVC2002 PNGs of ../shared/data (when
# present) a patch cut from each database's first image is found there with
# SAD 0, read with pg_read_binary_file.
#
# The times printed are measurements; the assertions are only about what
# happened.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;
use MccSharedData;
use Time::HiRes qw(time usleep);
use MccBackend;

my $node = service_node('image_sad', preload => 0);
$node->safe_psql('postgres', q{
	CREATE TABLE big AS
	SELECT mcc_image_from_array(array_fill(7::smallint, ARRAY[4000, 4000])) AS t,
		   mcc_image_from_array(array_fill(9::smallint, ARRAY[400, 400])) AS p;
});

# Threads of a process (Linux), or undef.
sub threads_of
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	while (my $line = <$fh>)
	{
		return $1 if $line =~ /^Threads:\s+(\d+)/;
	}
	return undef;
}

# A search of about 2 * 10^12 absolute differences (seconds of work even on
# many cores), cancelled from another session while it runs; then the same
# session sleeps, so its backend can be looked at.
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-XAtq', '-d',
		$node->connstr('postgres') . ' application_name=mcc_sad_cancel',
		'-c', 'SET mcc.image_threads = 2',
		'-c', 'SELECT x, y, sad FROM big, mcc_sad_locate(t, p)',
		'-c', 'SELECT pg_sleep(3)',
		'-c', q{SELECT x, y, sad FROM mcc_sad_locate('{{1,2,3},{4,5,6}}'::smallint[], '{{5,6}}'::smallint[])}
	],
	'>', \$out, '2>', \$err);
my $pid = backend_pid($node, 'mcc_sad_cancel', '%mcc_sad_locate(t, p)%');
my $during;
for (1 .. 200)
{
	$during = threads_of($pid);
	last if defined $during && $during > 1;
	usleep(5000);
}
my $t0 = time;
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't',
	'cancel sent to the backend running mcc_sad_locate');
backend_pid($node, 'mcc_sad_cancel', '%pg_sleep%');
my $elapsed = time - $t0;
my $after = threads_of($pid);
$h->finish;
like($err, qr/canceling statement due to user request/, 'pg_cancel_backend interrupts mcc_sad_locate');
note(sprintf("the next statement started %.0f ms after the cancel was sent", 1000 * $elapsed));
SKIP:
{
	skip 'no /proc/<pid>/status here', 2 unless defined $during && defined $after;
	cmp_ok($during, '>', 1, "the backend ran worker threads during the search ($during threads)");
	is($after, 1, 'after the cancel the backend is a single thread again');
}
like($out, qr/^1\|1\|0$/m, 'the session goes on: the next search finds (1, 1) with SAD 0');

# Real fingerprint images, when the shared data is there.
my $data = shared_data('fvc2002/images');
SKIP:
{
	skip 'FVC2002 images absent (set MCC_SHARED_DATA to ../shared/data)', 8 unless $data;
	my %size = (DB1_B => [ 388, 374 ], DB2_B => [ 296, 560 ], DB3_B => [ 300, 300 ], DB4_B => [ 288, 384 ]);
	foreach my $db (sort keys %size)
	{
		my $f = "$data/fvc2002/images/$db/101_1.png";
		my ($w, $h) = @{ $size{$db} };
		# a patch from the middle of the print, where there are ridges
		my ($x, $y) = (int($w / 2) - 32, int($h / 2) - 32);
		is($node->safe_psql('postgres',
				"SELECT width || '|' || height || '|' || format FROM mcc_image_info(pg_read_binary_file('$f'))"),
			"$w|$h|png", "$db 101_1: mcc_image_info reads the PNG");
		is($node->safe_psql('postgres', qq{
				SELECT x || '|' || y || '|' || sad FROM mcc_sad_locate(pg_read_binary_file('$f'),
					mcc_image_crop(pg_read_binary_file('$f'), $x, $y, 64, 64), 2) LIMIT 1}),
			"$x|$y|0", "$db 101_1: a patch cut at ($x, $y) is found there with SAD 0");
	}
}

$node->stop;
done_testing();
