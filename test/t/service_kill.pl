# The matcher engine killed with SIGKILL in the middle of requests: every
# waiting backend gets an ERROR (no hang), the supervisor starts a new
# engine, and the next requests, from new and from old sessions, get exact
# answers again after the cache reloads.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MccServiceTest;

my $node = service_node('kill', 'mcc.worker_threads' => 1);
served_gallery($node, 'big', 4000, 11, 8, 4);
is(check_all_probes($node, 'big', 5), 0, 'exact answers before the kill');

# long requests: a batch sized to keep the engine busy for seconds
my $t0 = time;
$node->safe_psql('postgres',
	"SELECT count(*) FROM identify_batch('big', (SELECT array_agg(tpl) FROM probes), 5)");
my $per_probe = (time - $t0) / 12;
my $n = int(6 / ($per_probe > 0.0005 ? $per_probe : 0.0005));
$n = 3000 if $n > 3000;
$node->safe_psql('postgres', qq{
	CREATE TABLE long_probes AS
	SELECT template AS tpl FROM mcc_synthetic($n, 1, 99) });
note "long batch: $n probes";

my $idle = $node->background_psql('postgres', on_error_stop => 0);
$idle->query_safe("SELECT count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 1))");

my @victims;
for my $i (1 .. 3)
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	# connect to the engine first, so that the wait below is the request's
	$s->query_safe("SELECT count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 2))");
	$s->query_safe("SET application_name = 'victim'");
	push @victims, $s;
}
for my $s (@victims)
{
	$s->query_until(qr/started/, qq{\\echo started
SELECT count(*) FROM identify_batch('big', (SELECT array_agg(tpl) FROM long_probes), 5);
});
}
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 3 FROM pg_stat_activity
	WHERE application_name = 'victim' AND state = 'active' AND wait_event_type = 'Extension'}),
	'three backends wait on the matcher engine');

my $engine = service_pid($node, 'engine');
my $incarnation = $node->safe_psql('postgres', 'SELECT incarnation FROM mcc_service_status()');
ok(kill('KILL', $engine), "engine (pid $engine) killed with SIGKILL");
my $killed = time;

for my $i (0 .. 2)
{
	my $s = $victims[$i];
	$s->query("SELECT 1");
	like($s->{stderr}, qr/matcher engine terminated/, "waiting backend " . ($i + 1) . " got an ERROR");
}
my $waited = time - $killed;
ok($waited < 10, sprintf('the errors came without a hang (%.2f s)', $waited));

wait_ready($node, 1);
my ($pid2, $inc2, $restarts) = split /\|/, $node->safe_psql('postgres',
	'SELECT engine_pid, incarnation, restarts FROM mcc_service_status()');
isnt($pid2, $engine, 'a new engine process runs');
isnt($inc2, $incarnation, 'with a new incarnation');
is($restarts, 1, 'the supervisor counted one restart');
ok($node->log_contains('matcher engine \(pid ' . $engine . '\) was terminated by signal 9'),
	'the exit is in the server log');

# recovery: new sessions, the sessions that got the error, the idle one
is(check_all_probes($node, 'big', 5), 0, 'exact answers after the restart (new sessions)');
for my $s (@victims, $idle)
{
	$s->{stderr} = '';			# the error seen above
	my $ok = $s->query_safe(q{
		SELECT bool_and(check_identify('big', tpl, 3, 0)) FROM probes WHERE pid <= 3});
	is($ok, 't', 'an old session reconnects and gets exact answers');
	$s->quit;
}
is($node->safe_psql('postgres',
	"SELECT searches > 0 AND state = 'cached' FROM mcc_gallery_status WHERE gallery = 'big'::regclass"),
	't', 'the new engine serves a reloaded cache');

# killed while idle: the next request after the restart works too
$engine = service_pid($node, 'engine');
kill 'KILL', $engine;
wait_ready($node, 2);
is(check_all_probes($node, 'big', 2), 0, 'exact answers after a kill between requests');

$node->stop;
done_testing();
