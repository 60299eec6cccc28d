# Galleries changed by more than INSERT/UPDATE/DELETE: TRUNCATE, table
# rewrites (ALTER TABLE, VACUUM FULL), renamed columns, DROP, partitions
# (rows written through the root and directly into partitions, a partition
# attached without triggers), changes of the caller's own transaction and
# savepoints. After each, identify() must equal brute force over the
# caller's snapshot, and the service must be used wherever it can be.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('ddl', 'max_prepared_transactions' => 4);
served_gallery($node, 'g', 500, 31, 10, 2);

# all probes exact, served by the engine (mcc.fallback = error refuses
# any other path)
sub exact_via_service
{
	my ($g, $what) = @_;
	is(check_all_probes($node, $g, 6, 0, 'SET mcc.fallback = error;'), 0,
		"$what: exact answers through the matcher engine");
}

exact_via_service('g', 'initial gallery');
is($node->safe_psql('postgres', q{
	SET mcc.fallback = error;
	SELECT check_batch('g', ARRAY(SELECT template FROM mcc_synthetic(300, 1, 35) ORDER BY finger), 3)}),
	't', 'identify_batch of 300 probes (two engine requests) equals brute force');

# evict and preload
is($node->safe_psql('postgres', "SELECT mcc_gallery_evict('g')"), 't', 'evict a cached gallery');
is($node->safe_psql('postgres', "SELECT state FROM mcc_gallery_status WHERE gallery = 'g'::regclass"),
	'not cached', 'it is no longer cached');
exact_via_service('g', 'after eviction (reloaded on use)');
is($node->safe_psql('postgres', "SELECT mcc_gallery_preload('g')"), '500', 'preload returns the cached rows');
is($node->safe_psql('postgres', "SELECT state || ' ' || entries FROM mcc_gallery_status WHERE gallery = 'g'::regclass"),
	'cached 500', 'and the status shows them');

$node->safe_psql('postgres', 'TRUNCATE g');
exact_via_service('g', 'after TRUNCATE');
$node->safe_psql('postgres', q{
	INSERT INTO g SELECT finger, 'again', template FROM mcc_synthetic(300, 1, 31)});
exact_via_service('g', 'refilled after TRUNCATE');

$node->safe_psql('postgres', q{
	BEGIN; TRUNCATE g; INSERT INTO g SELECT finger, 't', template FROM mcc_synthetic(50, 1, 31); ROLLBACK});
exact_via_service('g', 'after a rolled-back TRUNCATE');

$node->safe_psql('postgres', 'ALTER TABLE g ADD COLUMN note int DEFAULT (random() * 10)::int');
exact_via_service('g', 'after ALTER TABLE rewrote the table');
$node->safe_psql('postgres', 'DELETE FROM g WHERE id % 3 = 0; VACUUM FULL g');
exact_via_service('g', 'after DELETE and VACUUM FULL');
$node->safe_psql('postgres', "UPDATE g SET tpl = p.tpl FROM probes p WHERE g.id = p.pid + 1");
exact_via_service('g', 'after templates were replaced by UPDATE');

# the caller's own transaction and savepoints
is($node->safe_psql('postgres', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	INSERT INTO g SELECT 100000 + pid, 'mine', tpl FROM probes WHERE pid <= 3;
	DELETE FROM g WHERE id IN (SELECT id FROM g WHERE id < 100000 ORDER BY id LIMIT 5);
	SELECT bool_and(check_identify('g', tpl, 5, 0)) FROM probes;
	ROLLBACK}), 't', 'own uncommitted changes are seen (backend scan within the transaction)');
is($node->safe_psql('postgres', q{
	BEGIN;
	SAVEPOINT s;
	INSERT INTO g SELECT 200000 + pid, 'sp', tpl FROM probes WHERE pid <= 4;
	ROLLBACK TO s;
	SAVEPOINT t;
	INSERT INTO g SELECT 300000 + pid, 'kept', tpl FROM probes WHERE pid <= 2;
	RELEASE t;
	COMMIT;
	SELECT count(*) FROM g WHERE id >= 200000}), '2', 'savepoints: two rows kept');
exact_via_service('g', 'after savepoints');

# two-phase commit: the changes reach the engine at PREPARE and become
# visible at COMMIT PREPARED, without another generation
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO g SELECT 500000 + pid, '2pc', tpl FROM probes WHERE pid <= 3;
	DELETE FROM g WHERE id IN (SELECT id FROM g WHERE id < 100000 ORDER BY id LIMIT 3);
	PREPARE TRANSACTION 'p1'});
exact_via_service('g', 'while a prepared transaction is pending');
$node->safe_psql('postgres', "COMMIT PREPARED 'p1'");
exact_via_service('g', 'after COMMIT PREPARED');
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO g SELECT 600000 + pid, '2pc', tpl FROM probes WHERE pid <= 3;
	DELETE FROM g WHERE id IN (SELECT id FROM g WHERE id < 100000 ORDER BY id LIMIT 3);
	PREPARE TRANSACTION 'p2'});
$node->safe_psql('postgres', "ROLLBACK PREPARED 'p2'");
exact_via_service('g', 'after ROLLBACK PREPARED');

# renamed column: the registration no longer matches
$node->safe_psql('postgres', 'ALTER TABLE g RENAME COLUMN tpl TO template');
my ($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = notice; SELECT count(*) FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/registered for columns "id" and "tpl", not "id" and "template"/,
	'a renamed column makes identify() fall back, saying why');
$node->safe_psql('postgres', 'INSERT INTO g (id, template) SELECT 400000 + pid, tpl FROM probes');
$node->safe_psql('postgres', 'ALTER TABLE g RENAME COLUMN template TO tpl');
exact_via_service('g', 'renamed back: rows written meanwhile are there');

# DROP forgets the registration
$node->safe_psql('postgres', 'DROP TABLE g');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mcc_galleries'), '0', 'DROP TABLE removes the registration');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mcc_gallery_status'), '0', 'and its status row');

# partitioned gallery
$node->safe_psql('postgres', q{
	CREATE TABLE pg (id integer PRIMARY KEY, person text, tpl mcc_template) PARTITION BY RANGE (id);
	CREATE TABLE pg_a PARTITION OF pg FOR VALUES FROM (0) TO (200);
	CREATE TABLE pg_b PARTITION OF pg FOR VALUES FROM (200) TO (1000);
	INSERT INTO pg SELECT finger, 'p', template FROM mcc_synthetic(400, 1, 31);
	SELECT mcc_gallery_register('pg');
});
exact_via_service('pg', 'partitioned gallery');

# the backend's stages (mcc.log_identify_timing) on the partitioned gallery:
# one LOG line per call, its relations counted (the root and two
# partitions), the stages adding up to the whole; superusers only
for my $refine ('fused', 'none')
{
	my $from = -s $node->logfile;
	$node->safe_psql('postgres', qq{
		SET mcc.log_identify_timing = on; SET mcc.fallback = error;
		SELECT count(*) FROM identify('pg', (SELECT tpl FROM probes WHERE pid = 1), 5, refine => '$refine')});
	my @l = slurp_file($node->logfile, $from) =~ /identify\(\) timing: "pg" (\d+) relations (\S+) total=([\d.]+) ((?:\w+=[\d.]+ )+)requests=(\d+)/g;
	my $sum = 0;
	$sum += $_ for $l[3] =~ /=([\d.]+)/g;
	ok(@l == 5 && $l[0] == 3 && $l[1] eq 'served' && $l[4] == 1 && abs($sum - $l[2]) < 0.02,
		"refine => $refine: one timing line, 3 relations, served by one SEARCH, its stages summing to the whole ($sum of $l[2] ms)");
}
($ret, $out, $err) = $node->psql('postgres', q{
	CREATE ROLE timing_user; SET ROLE timing_user; SET mcc.log_identify_timing = on});
like($err, qr/permission denied to set parameter "mcc.log_identify_timing"/, 'mcc.log_identify_timing is for superusers');
$node->safe_psql('postgres', q{
	DELETE FROM pg_a WHERE id BETWEEN 150 AND 160;
	INSERT INTO pg_a SELECT 150 + pid, 'direct', tpl FROM probes WHERE pid <= 5;
	DELETE FROM pg_b WHERE id % 4 = 0;
	UPDATE pg SET id = id + 500 WHERE id BETWEEN 100 AND 120;
	INSERT INTO pg SELECT 900 + pid, 'root', tpl FROM probes WHERE pid <= 3});
exact_via_service('pg', 'rows written through partitions and the root, and moved between partitions');
$node->safe_psql('postgres', q{
	CREATE TABLE pg_c (id integer NOT NULL, person text, tpl mcc_template);
	INSERT INTO pg_c SELECT 1000 + finger, 'c', template FROM mcc_synthetic(50, 1, 32);
	ALTER TABLE pg ATTACH PARTITION pg_c FOR VALUES FROM (1000) TO (2000)});
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = notice; SELECT count(*) FROM identify('pg', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/"pg_c" lacks an enabled change trigger/, 'an attached partition without triggers: backend scan, saying why');
is(check_all_probes($node, 'pg', 6), 0, 'and the answers are exact');
$node->safe_psql('postgres', "SELECT mcc_gallery_register('pg')");
exact_via_service('pg', 're-registered with the new partition');
$node->safe_psql('postgres', 'ALTER TABLE pg DETACH PARTITION pg_a');
exact_via_service('pg', 'after DETACH PARTITION');

# disabled trigger: the service is not trusted until registration again
$node->safe_psql('postgres', 'ALTER TABLE pg DISABLE TRIGGER mcc_gallery_ins');
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = error; SELECT count(*) FROM identify('pg', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/lacks an enabled change trigger/, 'a disabled trigger stops the service for the gallery');
$node->safe_psql('postgres', "SELECT mcc_gallery_register('pg')");
exact_via_service('pg', 'after registering again');

# unregister
is($node->safe_psql('postgres', "SELECT mcc_gallery_unregister('pg')"), 't', 'unregister');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_trigger
	WHERE tgname LIKE 'mcc_gallery_%' AND tgrelid IN (SELECT relid FROM pg_partition_tree('pg'))}),
	'0', 'unregister removes the change triggers of the gallery and its partitions');
is(check_all_probes($node, 'pg', 6), 0, 'an unregistered gallery still answers exactly (backend scan)');

# a gallery written by logical replication: the apply worker fires no
# statement triggers, so the service must not be trusted with it
my $pub = service_node('publisher', preload => 0, wal_level => 'logical',
	max_wal_senders => 4, max_replication_slots => 4);
$pub->safe_psql('postgres', q{
	CREATE TABLE rg (id bigint PRIMARY KEY, tpl mcc_template);
	INSERT INTO rg SELECT finger, template FROM mcc_synthetic(100, 1, 33);
	CREATE TABLE rp_b (id bigint PRIMARY KEY, tpl mcc_template);
	INSERT INTO rp_b SELECT 1000 + finger, template FROM mcc_synthetic(20, 1, 34);
	CREATE PUBLICATION rgpub FOR TABLE rg, rp_b});
# and a partitioned gallery one partition of which is subscribed
$node->safe_psql('postgres', q{
	CREATE TABLE rg (id bigint PRIMARY KEY, tpl mcc_template);
	SELECT mcc_gallery_register('rg');
	CREATE TABLE rp (id bigint PRIMARY KEY, tpl mcc_template) PARTITION BY RANGE (id);
	CREATE TABLE rp_a PARTITION OF rp FOR VALUES FROM (0) TO (1000);
	CREATE TABLE rp_b PARTITION OF rp FOR VALUES FROM (1000) TO (2000);
	INSERT INTO rp_a SELECT finger, template FROM mcc_synthetic(50, 1, 35);
	SELECT mcc_gallery_register('rp')});
is(check_all_probes($node, 'rp', 6, 0, 'SET mcc.fallback = error;'), 0,
	'a partitioned gallery, nothing subscribed: exact answers through the matcher engine');
$node->safe_psql('postgres', "CREATE SUBSCRIPTION rgsub CONNECTION '" . $pub->connstr . " dbname=postgres' PUBLICATION rgpub");
$node->poll_query_until('postgres', 'SELECT count(*) = 100 FROM rg') or die 'initial sync';
$pub->safe_psql('postgres', q{
	DELETE FROM rg WHERE id < 30;
	INSERT INTO rg SELECT 1000 + finger, template FROM mcc_synthetic(4, 2, 31) WHERE impression = 1});
$node->poll_query_until('postgres', 'SELECT count(*) = 74 FROM rg') or die 'replication';
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = notice; SELECT count(*) FROM identify('rg', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/"rg" is written by logical replication/, 'a subscribed gallery is scanned in the backend, saying why');
is(check_all_probes($node, 'rg', 6), 0, 'and its answers include the replicated changes');
$node->poll_query_until('postgres', 'SELECT count(*) = 20 FROM rp_b') or die 'partition sync';
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = notice; SELECT count(*) FROM identify('rp', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/"rp_b" is written by logical replication/,
	'a partitioned gallery with a subscribed partition: scanned in the backend, saying which partition');
is(check_all_probes($node, 'rp', 6), 0, 'and its answers include the replicated rows');
$node->safe_psql('postgres', 'DROP SUBSCRIPTION rgsub');
$pub->stop;
# a unique index left invalid by a failed CREATE UNIQUE INDEX CONCURRENTLY
# enforces nothing: it does not make the key unique for the registration
$node->safe_psql('postgres', q{
	CREATE TABLE ui (id bigint NOT NULL, tpl mcc_template);
	INSERT INTO ui SELECT finger % 3, template FROM mcc_synthetic(6, 1, 7)});
$node->psql('postgres', 'CREATE UNIQUE INDEX CONCURRENTLY ui_id ON ui (id)');
is($node->safe_psql('postgres', q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'ui_id'::regclass}),
	'f', 'the failed concurrent build left an invalid unique index');
($ret, $out, $err) = $node->psql('postgres', q{SELECT mcc_gallery_register('ui', 'id', 'tpl')});
like($err, qr/key column "id" of "ui" has no unique index/,
	'an invalid unique index does not make the key unique');
$node->safe_psql('postgres', 'DELETE FROM ui WHERE ctid NOT IN (SELECT min(ctid) FROM ui GROUP BY id)');
$node->safe_psql('postgres', 'REINDEX INDEX ui_id');
$node->safe_psql('postgres', q{SELECT mcc_gallery_register('ui', 'id', 'tpl')});
is($node->safe_psql('postgres', q{SELECT count(*) FROM mcc_galleries WHERE gallery = 'ui'::regclass}),
	'1', 'rebuilt valid, the same index registers the gallery');
$node->stop;
done_testing();
