# The matcher service on a hot standby (issue 20): a primary and a standby
# made with pg_basebackup (no warning about the engine's socket); the
# standby's supervisor and engine start during recovery, identify() there is
# served by the engine (mcc.fallback = error) and equals the primary's answer
# and brute force on the standby; changes made on the primary, also while
# the standby searches during replay, are seen exactly when the standby's
# snapshot sees them (each answer compared with brute force under the same
# snapshot); a pruned change log makes a lagging standby reload; after
# promotion the same engine keeps serving and sees the new primary's writes.
# The change log is opt-in per gallery: a standby does not serve a gallery
# whose log is off (mcc.fallback, and a LOG line), and serves it exactly
# once it is turned on, also after writes made while it was off. The
# primary's supervisor prunes the log on its own: it keeps the entries a
# standby with a replication slot has not replayed (replay paused) and
# removes them once nobody needs them, without the standby reloading.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

# automatic pruning every second; the retention is lowered further down
# (no timed checkpoint: a slot made below starts at the last one's redo)
my $primary = service_node('primary', allows_streaming => 1,
	'mcc.change_log_prune_interval' => "'1s'", checkpoint_timeout => "'1h'");
create_gallery($primary, 'g', 400, 7);
create_probes($primary, 7, 6, 2);
install_checks($primary);
$primary->safe_psql('postgres', q{
	-- registered without a change log: the default
	SELECT mcc_gallery_register('g');
	-- the standby's slot, made before its base backup
	SELECT pg_create_physical_replication_slot('standby_slot', true);
	-- one probe's answer and brute force under one snapshot: 'ok' or both
	-- answers (writes nothing: it runs on the standby)
	CREATE FUNCTION standby_check(p int, k int, refine text DEFAULT 'none') RETURNS text
	LANGUAGE sql STABLE AS $$
		SELECT CASE WHEN a = b THEN 'ok' ELSE format('probe %s: identify=[%s] brute=[%s]', p, a, b) END
		FROM (SELECT via_identify('g', tpl, k, 0, refine) AS a, brute_force('g', tpl, k, 0, refine) AS b
			  FROM probes WHERE pid = p) t
	$$;
});
ok(-S $primary->data_dir . '/pgsql_tmp_mcc_engine.sock',
	'the engine listens on pgsql_tmp_mcc_engine.sock in the data directory');
is(check_all_probes($primary, 'g', 5), 0, 'the primary serves exact answers');

# the base backup: pg_basebackup skips the socket silently
my $backup = $primary->backup_dir . '/bk';
my ($out, $err) = run_command(['pg_basebackup', '-D', $backup, '-h', $primary->host,
	'-p', $primary->port, '--checkpoint=fast', '--no-sync']);
ok(-f "$backup/PG_VERSION", 'pg_basebackup made a backup');
unlike($err, qr/skipping special file/, 'pg_basebackup gives no warning about the socket');
ok(!-e "$backup/pgsql_tmp_mcc_engine.sock", 'the socket is not in the backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->append_conf('postgresql.conf', "hot_standby_feedback = on\nprimary_slot_name = 'standby_slot'\n");
$standby->start;
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');
wait_ready($standby, 0);
my $engine = service_pid($standby, 'engine');
ok($engine > 0, "the standby's engine runs during recovery (pid $engine)");

# the standby's answers: its own engine, the primary's answer, brute force
my $session = $standby->background_psql('postgres', on_error_stop => 1);
$session->query_safe("SET mcc.fallback = 'error'");

# Every probe on the standby: identify() (served, or an error) against brute
# force under one snapshot; returns the mismatches' descriptions.
sub standby_round
{
	my ($refine) = @_;
	my @bad;
	$refine //= 'none';
	for my $p (1 .. 8)
	{
		my $r = $session->query_safe("SELECT standby_check($p, 5, '$refine')");
		chomp $r;
		push @bad, $r unless $r eq 'ok';
	}
	return @bad;
}

# When the standby's engine last loaded the gallery.
sub loaded_at
{
	return $standby->safe_psql('postgres',
		q{SELECT loaded_at FROM mcc_gallery_status WHERE gallery = 'g'::regclass});
}

# the log is off: the standby does not serve the gallery from its engine
my $probe1 = "SELECT string_agg(id::text, ',') FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), 5, 0, refine => 'none')";
my ($rc, $stdout, $stderr) = $standby->psql('postgres', "SET mcc.fallback = 'error'; $probe1");
like($stderr, qr/gallery "g" has no change log to keep a hot standby's cache current/,
	'without a change log the standby refuses to serve the gallery (mcc.fallback = error)');
ok($standby->log_contains(qr/gallery "g" is searched on a hot standby but its change log is off/),
	"the standby's server log says the gallery has no change log");
is($standby->safe_psql('postgres', "SET mcc.fallback = 'cpu'; SET client_min_messages = warning; $probe1"),
	$primary->safe_psql('postgres', "SET mcc.fallback = 'error'; $probe1"),
	'with mcc.fallback = cpu it scans in the backend and answers as the primary');
($rc, $stdout, $stderr) = $standby->psql('postgres', "SELECT mcc_gallery_set_change_log('g', true)");
like($stderr, qr/cannot execute mcc_gallery_set_change_log\(\) during recovery/,
	'the change log is switched on the primary only');

# on, on the primary: the standby serves it from then on
$primary->safe_psql('postgres', "SELECT mcc_gallery_set_change_log('g', true)");
$primary->wait_for_catchup($standby);
my @bad = standby_round();
is(scalar @bad, 0, 'identify() on the standby is served and equals brute force there')
  or diag join("\n", @bad);
my $answers = "SELECT string_agg(via_identify('g', tpl, 5, 0), ';' ORDER BY pid) FROM probes";
is($standby->safe_psql('postgres', "SET mcc.fallback = 'error'; $answers"),
	$primary->safe_psql('postgres', $answers), "the standby's answers equal the primary's");
is($standby->safe_psql('postgres', q{SELECT state FROM mcc_gallery_status WHERE gallery = 'g'::regclass}),
	'cached', "the standby's engine holds the gallery");

# changes on the primary: mated impressions inserted, templates replaced,
# rows deleted, an update that keeps the template, a subtransaction rolled
# back, a transaction rolled back
$primary->safe_psql('postgres', q{
	INSERT INTO g SELECT 1000 + finger, 'new', template FROM mcc_synthetic(6, 3, 7) WHERE impression = 2;
	UPDATE g SET tpl = (SELECT template FROM mcc_synthetic(1, 3, 7, 3) WHERE impression = 1) WHERE id = 3;
	DELETE FROM g WHERE id IN (1, 2);
	UPDATE g SET person = person || '.' WHERE id = 4;
	BEGIN;
	DELETE FROM g WHERE id = 5;
	SAVEPOINT s;
	DELETE FROM g WHERE id = 0;
	ROLLBACK TO SAVEPOINT s;
	COMMIT;
	BEGIN;
	DELETE FROM g WHERE id = 0;
	INSERT INTO g SELECT 2000 + finger, 'aborted', template FROM mcc_synthetic(6, 3, 7) WHERE impression = 1;
	ROLLBACK;
});
$primary->wait_for_catchup($standby);
@bad = standby_round();
is(scalar @bad, 0, 'inserts, updates and deletes replayed on the standby are seen exactly')
  or diag join("\n", @bad);
@bad = standby_round('fused');
is(scalar @bad, 0, 'the same with the refinement in the standby\'s engine (fused)')
  or diag join("\n", @bad);
is($standby->safe_psql('postgres', "SET mcc.fallback = 'error'; $answers"),
	$primary->safe_psql('postgres', $answers), "the standby's answers equal the primary's after the changes");

# concurrent replay: two clients change the gallery on the primary while the
# standby searches; every answer is compared with brute force under the
# statement's own snapshot, whatever replay has reached by then
my $dir = PostgreSQL::Test::Utils::tempdir;
open my $fh, '>', "$dir/changes.sql" or die;
print $fh <<'EOS';
\set id random(0, 450)
\set imp random(0, 2)
\set r random(1, 6)
BEGIN;
\if :r = 1
DELETE FROM g WHERE id = :id;
\elif :r = 2
INSERT INTO g SELECT finger, 'up', template FROM mcc_synthetic(1, 3, 7, :id) WHERE impression = :imp
	ON CONFLICT (id) DO UPDATE SET tpl = excluded.tpl;
\elif :r = 3
UPDATE g SET tpl = (SELECT template FROM mcc_synthetic(1, 3, 7, :id) WHERE impression = :imp) WHERE id = :id;
\elif :r = 4
UPDATE g SET person = person || '.' WHERE id = :id;
\else
SAVEPOINT s;
DELETE FROM g WHERE id = :id;
ROLLBACK TO SAVEPOINT s;
UPDATE g SET tpl = (SELECT template FROM mcc_synthetic(1, 3, 7, :id) WHERE impression = :imp) WHERE id = :id;
\endif
\if :r = 6
ROLLBACK;
\else
END;
\endif
EOS
close $fh;
my $loaded_before = loaded_at();
my ($pgb_out, $pgb_err) = ('', '');
my $pgbench = IPC::Run::start(
	['pgbench', '-n', '-c', '2', '-t', '300', '-R', '60', '-f', "$dir/changes.sql",
	 '-h', $primary->host, '-p', $primary->port, 'postgres'],
	'>', \$pgb_out, '2>', \$pgb_err);
my ($rounds, %heads) = (0);
@bad = ();
while ($pgbench->pumpable || $rounds < 3)
{
	push @bad, standby_round();
	$rounds++;
	my $h = $session->query_safe("SELECT max(gen) FROM mcc_change_log");
	chomp $h;
	$heads{$h} = 1;
	$pgbench->pump_nb if $pgbench->pumpable;
}
ok($pgbench->finish, 'the changes ran on the primary') or diag "$pgb_out\n$pgb_err";
like($pgb_out, qr{transactions actually processed: 600/600}, 'all 600 transactions ran');
note "$rounds rounds of 8 searches on the standby during replay, " . scalar(keys %heads)
  . ' change log heads seen';
is(scalar @bad, 0, 'every answer during concurrent replay equals brute force under its snapshot')
  or diag join("\n", @bad[0 .. ($#bad < 9 ? $#bad : 9)]);
$primary->wait_for_catchup($standby);
@bad = standby_round();
is(scalar @bad, 0, 'exact after replay caught up') or diag join("\n", @bad);
# 600 small transactions: the log brought them all, no reload was needed
is(loaded_at(), $loaded_before, "the standby's cache followed replay from the change log without a reload");

# off while the standby serves: writes made then are not logged, the standby
# stops serving; on again: its stale cache reloads and answers exactly
my $loaded_on = loaded_at();
$primary->safe_psql('postgres', "SELECT mcc_gallery_set_change_log('g', false)");
my $logged_off = $primary->safe_psql('postgres', 'SELECT count(*) FROM mcc_change_log');
$primary->safe_psql('postgres', q{
	DELETE FROM g WHERE id BETWEEN 20 AND 24;
	INSERT INTO g SELECT 6000 + finger, 'while off', template FROM mcc_synthetic(6, 3, 7) WHERE impression = 0;
});
is($primary->safe_psql('postgres', 'SELECT count(*) FROM mcc_change_log'), $logged_off,
	'writes to a gallery whose log is off are not logged');
$primary->wait_for_catchup($standby);
($rc, $stdout, $stderr) = $standby->psql('postgres', "SET mcc.fallback = 'error'; $probe1");
like($stderr, qr/has no change log/, 'the standby stops serving a gallery whose log was turned off');
$primary->safe_psql('postgres', "SELECT mcc_gallery_set_change_log('g', true)");
$primary->wait_for_catchup($standby);
@bad = standby_round();
is(scalar @bad, 0, 'on again: exact, the writes made while it was off included')
  or diag join("\n", @bad);
isnt(loaded_at(), $loaded_on, 'the standby reloaded from its own tables at the new start point');

# a standby that lags behind a pruned log reloads: changes it did not apply
# yet are pruned on the primary and vacuumed away (replayed first: its slot
# would keep them otherwise)
my $loaded_at = loaded_at();
$primary->safe_psql('postgres', q{
	DELETE FROM g WHERE id BETWEEN 10 AND 19;
	INSERT INTO g SELECT 5000 + finger, 'lagging', template FROM mcc_synthetic(6, 3, 7) WHERE impression = 1;
});
$primary->wait_for_catchup($standby);
$primary->safe_psql('postgres', q{
	SELECT mcc_change_log_prune('0');
	VACUUM mcc_change_log;
});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT count(*) FROM mcc_change_log WHERE gallery = 'g'::regclass}),
	'1', 'the pruned entries are gone on the standby, the last one is kept');
@bad = standby_round();
is(scalar @bad, 0, 'exact after the log was pruned past what the standby applied')
  or diag join("\n", @bad);
isnt(loaded_at(), $loaded_at, 'the standby reloaded the gallery');

# automatic pruning: entries A, replayed and applied by the standby's engine;
# a checkpoint; replay paused; entries B; then the retention drops to 0: the
# supervisor's next passes remove A (nobody needs them) and keep B (the
# slot's standby has not replayed them, though it received them). Then a
# second slot, not in use, from the checkpoint's redo (before B), holds B
# while replay resumes and the standby's engine applies B (without it the
# supervisor could prune B between the replay and the standby's next
# search: with the retention at 0 that costs a reload); dropping it lets the
# supervisor remove B too.
$primary->safe_psql('postgres', q{
	DELETE FROM g WHERE id BETWEEN 30 AND 32;
	INSERT INTO g SELECT 7000 + finger, 'A', template FROM mcc_synthetic(3, 3, 7) WHERE impression = 0;
});
my $head_a = $primary->safe_psql('postgres', 'SELECT max(gen) FROM mcc_change_log');
$primary->wait_for_catchup($standby);
@bad = standby_round();
is(scalar @bad, 0, 'exact with entries A applied') or diag join("\n", @bad);
my $loaded_a = loaded_at();
$primary->safe_psql('postgres', 'CHECKPOINT');
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->poll_query_until('postgres', "SELECT pg_get_wal_replay_pause_state() = 'paused'")
  or die 'replay did not pause';
$primary->safe_psql('postgres', q{
	DELETE FROM g WHERE id BETWEEN 33 AND 35;
	INSERT INTO g SELECT 8000 + finger, 'B', template FROM mcc_synthetic(3, 3, 7) WHERE impression = 1;
});
my $n_b = $primary->safe_psql('postgres', "SELECT count(*) FROM mcc_change_log WHERE gen > $head_a");
$primary->safe_psql('postgres', q{
	ALTER SYSTEM SET mcc.change_log_retention = 0;
	SELECT pg_reload_conf();
});
ok($primary->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM mcc_change_log WHERE gen < $head_a"),
	'the supervisor pruned the entries every standby had replayed');
is($primary->safe_psql('postgres', "SELECT count(*) FROM mcc_change_log WHERE gen > $head_a"), $n_b,
	'it kept every entry the paused standby with a slot has not replayed');
ok($primary->safe_psql('postgres', "SELECT upto FROM mcc_change_log_pruned WHERE gallery = 'g'::regclass") < $head_a + 1,
	'the pruned mark stays below the entries kept');
$primary->safe_psql('postgres', q{SELECT pg_create_physical_replication_slot('idle_slot', true)});
is($primary->safe_psql('postgres', qq{SELECT restart_lsn <= (SELECT min(lsn) FROM mcc_change_log WHERE gen > $head_a)
	FROM pg_replication_slots WHERE slot_name = 'idle_slot'}), 't', 'an idle slot holds B');
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$primary->wait_for_catchup($standby);
@bad = standby_round();
is(scalar @bad, 0, 'exact once replay resumed') or diag join("\n", @bad);
is(loaded_at(), $loaded_a, 'the kept entries brought B to the standby without a reload');
is($primary->safe_psql('postgres', "SELECT count(*) FROM mcc_change_log WHERE gen > $head_a"), $n_b,
	'the idle slot kept B after the standby replayed it');
$primary->safe_psql('postgres', q{SELECT pg_drop_replication_slot('idle_slot')});
ok($primary->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM mcc_change_log WHERE gallery = 'g'::regclass}),
	'once replayed, the supervisor pruned them too (the last entry stays)');
$primary->wait_for_catchup($standby);
@bad = standby_round();
is(scalar @bad, 0, 'exact after the automatic pruning') or diag join("\n", @bad);
is(loaded_at(), $loaded_a, 'pruning what the standby had applied costs it no reload');
$primary->safe_psql('postgres', q{
	ALTER SYSTEM RESET mcc.change_log_retention;
	SELECT pg_reload_conf();
});

# promotion: the same engine keeps serving and sees the new primary's writes
$session->quit;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
is(service_pid($standby, 'engine'), $engine, 'the engine was not restarted by the promotion');
$session = $standby->background_psql('postgres', on_error_stop => 1);
$session->query_safe("SET mcc.fallback = 'error'");
@bad = standby_round();
is(scalar @bad, 0, 'the promoted standby serves exact answers') or diag join("\n", @bad);
my $logged = $standby->safe_psql('postgres', 'SELECT count(*) FROM mcc_change_log');
$standby->safe_psql('postgres', q{
	INSERT INTO g SELECT 3000 + finger, 'after promotion', template FROM mcc_synthetic(6, 3, 7) WHERE impression = 1;
	DELETE FROM g WHERE id BETWEEN 1000 AND 1002;
});
@bad = standby_round();
is(scalar @bad, 0, "the promoted standby's own writes reach its cache") or diag join("\n", @bad);
like($session->query_safe(q{SELECT string_agg(id::text, ',') FROM identify('g',
		(SELECT tpl FROM probes WHERE pid = 1), 3, 0, refine => 'none')}),
	qr/\b3000\b/, 'a row written after the promotion is found');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM mcc_change_log') - $logged, 9,
	'the promoted standby logs its own changes for standbys of its own');
$session->quit;

done_testing();
