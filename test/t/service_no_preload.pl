# Without shared_preload_libraries: no supervisor, no engine, and everything
# still works: identify() and identify_batch() scan in the backend (exactly),
# registration and its triggers work (writers pay no visible cost), and
# mcc.fallback says why or refuses, as asked.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('no_preload', preload => 0);
create_gallery($node, 'g', 300, 51);
create_probes($node, 51, 8, 2);
install_checks($node);

is($node->safe_psql('postgres', 'SELECT state FROM mcc_service_status()'), 'not preloaded',
	'mcc_service_status() says the service is not preloaded');
ok(!$node->log_contains('mcc supervisor'), 'no supervisor was started');

is(check_all_probes($node, 'g', 5), 0, 'unregistered gallery: exact answers');
$node->safe_psql('postgres', "SELECT mcc_gallery_register('g')");
is($node->safe_psql('postgres', q{SELECT id_column || ' ' || template_column FROM mcc_galleries}),
	'id tpl', 'registration found the key and template columns');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'g'::regclass AND tgname LIKE 'mcc_gallery_%'"),
	'4', 'four change triggers installed');
$node->safe_psql('postgres', q{
	INSERT INTO g SELECT 1000 + pid, 'new', tpl FROM probes WHERE pid <= 3;
	DELETE FROM g WHERE id < 20;
	UPDATE g SET tpl = (SELECT tpl FROM probes WHERE pid = 4) WHERE id = 30;
	BEGIN; SAVEPOINT a; DELETE FROM g WHERE id < 40; ROLLBACK TO a; COMMIT;
	TRUNCATE checks});
is(check_all_probes($node, 'g', 5), 0, 'registered gallery after changes: exact answers');
is($node->safe_psql('postgres', q{SELECT check_batch('g', array_agg(tpl ORDER BY pid), 4) FROM probes}),
	't', 'identify_batch equals brute force');

my ($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = notice; SELECT count(*) FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))});
is($out, '10', 'fallback = notice: an answer');
like($err, qr/NOTICE:  identify\(\) scans the gallery in the backend: mcc is not in shared_preload_libraries/,
	'... and a NOTICE saying why');
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = error; SELECT count(*) FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/ERROR:  matcher service cannot serve identify\(\): mcc is not in shared_preload_libraries/,
	'fallback = error: an ERROR saying why');
($ret, $out, $err) = $node->psql('postgres', "SELECT mcc_gallery_preload('g')");
like($err, qr/cannot preload: mcc is not in shared_preload_libraries/, 'preload needs the service');
is($node->safe_psql('postgres', "SELECT mcc_gallery_evict('g')"), 'f', 'evict: nothing cached');
is($node->safe_psql('postgres', "SELECT state FROM mcc_gallery_status"), 'no service',
	'mcc_gallery_status lists the gallery without a service');

$node->safe_psql('postgres', 'DROP TABLE g');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mcc_galleries'), '0',
	'DROP TABLE forgets the registration');

# a dump keeps registrations
create_gallery($node, 'h', 20, 52);
$node->safe_psql('postgres', "SELECT mcc_gallery_register('h')");
my $dumpfile = $node->basedir . '/dump.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('postgres'), '-f', $dumpfile ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('restored'), '-f', $dumpfile ],
	'restore into a new database');
is($node->safe_psql('restored', 'SELECT gallery::text, id_column, template_column FROM mcc_galleries'),
	'h|id|tpl', 'the registration survived dump and restore');

$node->stop;
done_testing();
