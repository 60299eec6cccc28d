# Cache snapshots (docs/matcher-service.md, "Cache snapshots"): after a
# restart a gallery is served from the engine's snapshot once the table's
# tuple headers prove it current, reading from the table only the rows that
# changed (before the shutdown without the snapshot refreshed, and right
# after the start), also after VACUUM FREEZE; identify() under
# mcc.fallback = error equals brute force every time. A damaged snapshot, a
# truncated one, one of the old format, one of another table and one of the
# table before a rewrite are ignored with a log line and the gallery is
# loaded in full.
use strict;
use warnings;

use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('snapshot', 'mcc.fallback' => "'error'", 'mcc.cache_snapshots' => 'on');
create_gallery($node, 'g', 600, 21);
create_gallery($node, 'h', 50, 22);
create_probes($node, 21, 8, 4);
install_checks($node);
$node->safe_psql('postgres', q{
	SELECT mcc_gallery_register('g');
	SELECT mcc_gallery_register('h');
	-- templates for the changes: other fingers of another seed
	CREATE TABLE spare AS SELECT finger, template FROM mcc_synthetic(40, 1, 77);
});
my ($db, $rel, $hrel) = split /\|/, $node->safe_psql('postgres',
	"SELECT (SELECT oid FROM pg_database WHERE datname = 'postgres'), 'g'::regclass::oid, 'h'::regclass::oid");
my $dir = $node->data_dir . '/mcc';
my $file = "$dir/${db}_$rel.snap";
my $hfile = "$dir/${db}_$hrel.snap";

# Wait until the engine says it wrote the snapshot of $relid (log lines after $off).
sub wait_written
{
	my ($relid, $off) = @_;
	return $node->wait_for_log(qr{gallery $db/$relid: cache snapshot written}, $off);
}

# Restart the server; the log offset from which its lines start.
sub restart
{
	my ($before_start) = @_;
	$node->stop('fast');
	$before_start->() if $before_start;
	my $off = -s $node->logfile;
	$node->start;
	wait_ready($node, 0);
	return $off;
}

# "N tuple headers checked, M rows read from the table" of the last snapshot load after $off.
sub snapshot_use
{
	my ($off) = @_;
	my $log = slurp_file($node->logfile, $off);
	my @m = $log =~ /gallery "g" served from its cache snapshot: (\d+) tuple headers checked, (\d+) rows read from the table/g;
	return @m ? @m[-2, -1] : ();
}

is($node->safe_psql('postgres', "SELECT mcc_gallery_preload('g')"), '600', 'gallery loaded');
ok(wait_written($rel, 0) && -e $file, 'the engine wrote a snapshot after the load');
is(check_all_probes($node, 'g', 5), 0, 'exact answers before any restart');
copy($file, "$file.old") or die "copy: $!";

# changes the snapshot does not see: it is put back after the shutdown
$node->safe_psql('postgres', q{
	UPDATE g SET tpl = (SELECT template FROM spare WHERE finger = g.id) WHERE id IN (1, 2, 3);
	DELETE FROM g WHERE id IN (10, 11);
	INSERT INTO g SELECT 1000 + finger, 'new', template FROM spare WHERE finger BETWEEN 20 AND 22;
	UPDATE g SET person = person || ' (moved)' WHERE id = 20;
	-- an UPDATE that keeps the template still makes a new version
});
is(check_all_probes($node, 'g', 5), 0, 'exact answers after the changes (deltas)');

my $off = restart(sub { copy("$file.old", $file) or die "copy back: $!" });
# changes right after the start, before the gallery has a slot
$node->safe_psql('postgres', q{
	INSERT INTO g SELECT 2000 + finger, 'late', template FROM spare WHERE finger IN (30, 31);
	UPDATE g SET tpl = (SELECT template FROM spare WHERE finger = 35) WHERE id = 40;
	DELETE FROM g WHERE id = 41;
});
is(check_all_probes($node, 'g', 5), 0,
	'exact answers after a restart with a stale snapshot (changes before the shutdown and after the start)');
my ($heads, $read) = snapshot_use($off);
ok(defined $heads, 'the log says the gallery was served from its cache snapshot');
is($heads, $node->safe_psql('postgres', 'SELECT count(*) FROM g'), 'every live tuple header was checked');
# the new versions: 3 updated, 3 inserted, 1 moved, 2 late, 1 updated late
is($read, 10, 'only the 10 changed rows were read from the table');
ok($node->log_contains(qr/of \d+ rows taken from the cache snapshot/, $off),
	'the engine logs the rows it took from the snapshot');

# a restart without changes after a VACUUM FREEZE: every row was read
# unfrozen (by the first load or the check), so the xid window proves it
ok(wait_written($rel, $off), 'the snapshot was written again after that load');
$node->safe_psql('postgres', 'VACUUM FREEZE g');
$off = restart();
is(check_all_probes($node, 'g', 5), 0, 'exact answers after a clean restart');
($heads, $read) = snapshot_use($off);
is($read, 0, 'no row read from the table after a clean restart (rows frozen since the snapshot)');

# a damaged snapshot: detected, removed, the gallery loaded in full
$off = restart(sub {
	open(my $fh, '+<', $file) or die "open: $!";
	binmode $fh;
	seek($fh, (-s $file) / 2, 0);
	print $fh "\xff\x00\xff\x00";
	close $fh;
});
is(check_all_probes($node, 'g', 5), 0, 'exact answers after a restart with a damaged snapshot');
ok($node->log_contains(qr/cache snapshot ".*${db}_$rel\.snap" ignored and removed: its checksum does not match/, $off),
	'the damaged snapshot is ignored with a log line');
ok(!defined((snapshot_use($off))[0]), 'and not used: the gallery was loaded in full');

# rows frozen when the full load read them: proved by their unchanged pages
ok(wait_written($rel, $off), 'a new snapshot was written after the full load');
$off = restart();
is(check_all_probes($node, 'g', 5), 0, 'exact answers after a restart (rows frozen when read)');
($heads, $read) = snapshot_use($off);
is($read, 0, 'no row read: frozen rows on pages unchanged since they were read');

# a truncated snapshot, then one of format 2 (an engine before the rows'
# minutiae counts): each ignored with a log line, the gallery loaded in full
# (the file of the last restart is still current: nothing was read)
$off = restart(sub { truncate($file, (-s $file) - 1000) or die "truncate: $!" });
is(check_all_probes($node, 'g', 5), 0, 'exact answers after a restart with a truncated snapshot');
ok($node->log_contains(qr/${db}_$rel\.snap" ignored and removed: it is truncated/, $off),
	'the truncated snapshot is ignored with a log line');
ok(!defined((snapshot_use($off))[0]), 'and not used');
ok(wait_written($rel, $off), 'a new snapshot was written after the full load');
$off = restart(sub {
	open(my $fh, '+<', $file) or die "open: $!";
	binmode $fh;
	seek($fh, 8, 0);
	print $fh pack('L', 2);
	close $fh;
});
is(check_all_probes($node, 'g', 5), 0, 'exact answers after a restart with a format-2 snapshot');
ok($node->log_contains(qr/${db}_$rel\.snap" ignored and removed: it has another format version \(format 2, not 3\)/, $off),
	'a snapshot of the old format is ignored with a log line');
ok(!defined((snapshot_use($off))[0]), 'and not used');
ok(wait_written($rel, $off), 'a new snapshot was written after the full load');

# another table's snapshot put in place of h's
$off = -s $node->logfile;
$node->safe_psql('postgres', "SELECT mcc_gallery_preload('h')");
wait_written($hrel, $off);
$off = restart(sub { copy($file, $hfile) or die "copy: $!" });
is($node->safe_psql('postgres', "SELECT mcc_gallery_preload('h')"), '50', 'h loaded');
ok($node->log_contains(qr/${db}_$hrel\.snap" ignored and removed: it is the snapshot of another table/, $off),
	"another table's snapshot is ignored with a log line");

# the table rewritten (VACUUM FULL) after the start: the snapshot is of another relfilenode
$off = restart();
$node->safe_psql('postgres', 'VACUUM FULL g');
is(check_all_probes($node, 'g', 5), 0, 'exact answers after VACUUM FULL');
ok($node->log_contains(qr/${db}_$rel\.snap" ignored and removed: the table was rewritten/, $off),
	'the snapshot of the table before its rewrite is ignored with a log line');

# mcc.cache_snapshots = off: nothing read or written
$node->append_conf('postgresql.conf', "mcc.cache_snapshots = off\n");
$off = restart(sub { unlink $file });
is(check_all_probes($node, 'g', 5), 0, 'exact answers with mcc.cache_snapshots = off');
$node->stop('fast');
ok(!-e $file, 'no snapshot written with mcc.cache_snapshots = off');
$node->start;
is($node->safe_psql('postgres', 'SELECT count(*) FROM checks WHERE NOT ok'), '0', 'no check failed');
$node->stop('fast');
done_testing();
