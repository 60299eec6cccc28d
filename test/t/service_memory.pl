# mcc.cache_memory_limit and mcc.fallback: a gallery that does not fit is
# refused with a clear error, or scanned in the backend (silently or with a
# NOTICE) per mcc.fallback; a gallery that fits is still served. Also the
# mcc.service switch and the fallback when the engine is not running.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('memory', 'mcc.cache_memory_limit' => "'1MB'");
create_gallery($node, 'big', 2500, 41);
create_gallery($node, 'small', 25, 41);
create_probes($node, 41, 6, 2);
install_checks($node);
$node->safe_psql('postgres', "SELECT mcc_gallery_register('big'), mcc_gallery_register('small')");

my ($ret, $out, $err) = $node->psql('postgres', "SELECT mcc_gallery_preload('big')");
like($err, qr/cannot preload: the gallery does not fit in mcc\.cache_memory_limit/,
	'preloading a gallery over the limit fails clearly');
like($err, qr/Raise mcc\.cache_memory_limit/, '... with a hint');

($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = error; SELECT count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/cannot serve identify\(\): .*mcc\.cache_memory_limit/, 'fallback = error: identify() raises');

($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = notice; SELECT bool_and(check_identify('big', tpl, 5, 0)) FROM probes});
is($out, 't', 'fallback = notice: exact answers from the backend scan');
like($err, qr/NOTICE:  identify\(\) scans the gallery in the backend: .*mcc\.cache_memory_limit/,
	'... with a NOTICE saying why');

($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = cpu; SELECT bool_and(check_identify('big', tpl, 5, 0)) FROM probes});
is($out, 't', 'fallback = cpu: exact answers');
is($err, '', '... without a word');

is(check_all_probes($node, 'small', 5, 0, 'SET mcc.fallback = error;'), 0,
	'a gallery that fits is served by the engine under the same limit');
is($node->safe_psql('postgres', "SELECT state FROM mcc_gallery_status WHERE gallery = 'small'::regclass"),
	'cached', 'and shows as cached');
isnt($node->safe_psql('postgres', "SELECT state FROM mcc_gallery_status WHERE gallery = 'big'::regclass"),
	'cached', 'the big one does not');

# mcc.service = off: the backend scan, whatever mcc.fallback says
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.service = off; SET mcc.fallback = error;
	SELECT bool_and(check_identify('small', tpl, 5, 0)) FROM probes});
is($out, 't', 'mcc.service = off: exact answers from the backend');
is($err, '', '... with no error although fallback = error');

# the supervisor terminated: answers stay exact while it restarts, and the
# service comes back with a new engine
my $supervisor = service_pid($node, 'supervisor');
kill 'TERM', $supervisor;
$node->poll_query_until('postgres', "SELECT state <> 'ready' FROM mcc_service_status()");
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.fallback = notice; SELECT bool_and(check_identify('small', tpl, 5, 0)) FROM probes});
is($out, 't', 'while the service restarts, answers stay exact');
like($err, qr/scans the gallery in the backend: the matcher (service is not running|engine is (starting|restarting))/,
	'... from the backend scan, saying why');
$node->poll_query_until('postgres', "SELECT state = 'ready' AND supervisor_pid <> $supervisor FROM mcc_service_status()")
  or die 'no new supervisor';
is(check_all_probes($node, 'small', 5, 0, 'SET mcc.fallback = error;'), 0,
	'a new supervisor and engine serve exact answers');

$node->stop;
done_testing();
