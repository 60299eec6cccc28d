# Cancel requests and statement_timeout interrupt a matcher request that is
# waiting for the engine, the session stays usable (the engine's late
# answers to the cancelled requests are skipped), and mcc.request_timeout
# turns a missing answer into an ERROR under mcc.fallback = error.
#
# No outcome depends on how fast the machine is: the requests are held, not
# sized. The engine process is stopped with SIGSTOP (it runs in a session of
# its own and nothing pings it), so a request sent to it cannot be answered
# until SIGCONT: whatever ends the wait in the meantime is the cancel, the
# timeout or mcc.request_timeout. The time each took is only reported.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MccServiceTest;
use MccBackend;

my $node = service_node('cancel', 'mcc.worker_threads' => 1);
served_gallery($node, 'big', 2000, 13, 6, 2);
$node->safe_psql('postgres', "SELECT mcc_gallery_preload('big')");
$node->safe_psql('postgres', q{
	CREATE FUNCTION held_request() RETURNS void LANGUAGE plpgsql AS $$
	DECLARE t0 timestamptz := clock_timestamp();
	BEGIN
		PERFORM count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 1), 5);
		RAISE NOTICE 'completed after % ms', extract(epoch FROM clock_timestamp() - t0) * 1000;
	EXCEPTION WHEN query_canceled THEN
		RAISE NOTICE 'cancelled at % after % ms', extract(epoch FROM clock_timestamp()),
			extract(epoch FROM clock_timestamp() - t0) * 1000;
	END $$;
});

my ($engine, $restarts) = split /\|/,
  $node->safe_psql('postgres', 'SELECT engine_pid, restarts FROM mcc_service_status()');
my $held = 0;

# hold and release the engine; a failing test never leaves it stopped
sub hold    { $held = kill('STOP', $engine); return $held; }
sub release { kill('CONT', $engine) if $held; $held = 0; }
END { release(); }

# A session that has already talked to the engine (the requests below are
# then in flight, not connecting), named so that it can be found.
sub warm_session
{
	my ($name) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->query_safe("SELECT count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 2))");
	$s->query_safe("SET application_name = '$name'");
	return $s;
}

# Start held_request() in $s and wait until its backend waits on the engine.
sub start_held_request
{
	my ($s, $name, $setup) = @_;
	$s->{stderr} = '';
	$s->query_until(qr/started/, "\\echo started\n$setup SELECT held_request();\n");
	wait_on_engine($node, $name, "the request of $name");
}

my $s = warm_session('cancel_me');
my $t = warm_session('timeout');
ok(hold(), "engine (pid $engine) stopped: no request can be answered until it resumes");

# statement_timeout ends the wait
for my $timeout (300, 800)
{
	my $t0 = time;
	$s->{stderr} = '';
	$s->query("SET statement_timeout = $timeout; SELECT held_request(); RESET statement_timeout;");
	my ($ms) = $s->{stderr} =~ /cancelled at [\d.]+ after ([\d.]+) ms/;
	ok(defined $ms, "statement_timeout = $timeout ms interrupts a request the engine cannot answer")
	  or diag($s->{stderr});
	note(sprintf('... after %.1f ms (%.1f ms as the client saw it)', $ms // -1, (time - $t0) * 1000));
}

# pg_cancel_backend from another session ends the wait
for my $round (1 .. 2)
{
	start_held_request($s, 'cancel_me', '');
	my ($asked, $sent) = split /\|/, $node->safe_psql('postgres', q{
		SELECT extract(epoch FROM clock_timestamp()), pg_cancel_backend(pid)
		FROM pg_stat_activity WHERE application_name = 'cancel_me'});
	is($sent, 't', "round $round: pg_cancel_backend() sent the cancel");
	$s->query('SELECT 1');
	my ($at) = $s->{stderr} =~ /cancelled at ([\d.]+)/;
	ok(defined $at, "round $round: the cancel request interrupts a request the engine cannot answer")
	  or diag($s->{stderr});
	note(sprintf('... %.1f ms after it was asked', defined $at ? ($at - $asked) * 1000 : -1));
}
unlike($s->{stderr}, qr/completed/, 'no held request completed while the engine was stopped');

# mcc.request_timeout: the engine does not answer in 300 ms; under
# mcc.fallback = error that is an ERROR, under notice the backend scans
$t->{stderr} = '';
$t->query(q{SET mcc.request_timeout = 300; SET mcc.fallback = error;
	SELECT count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 2))});
like($t->{stderr}, qr/did not answer within mcc\.request_timeout/,
	'mcc.request_timeout raises under fallback = error');
$t->{stderr} = '';
my $out = $t->query(q{SET mcc.fallback = notice;
	SELECT bool_and(check_identify('big', tpl, 5, 0)) FROM probes WHERE pid <= 2});
is($out, 't', 'under fallback = notice the backend scan answers exactly');
like($t->{stderr}, qr/scans the gallery in the backend: the matcher engine did not answer within mcc\.request_timeout/,
	'... saying why');

# the engine resumes: the same process, which now answers the requests it
# held; the sessions skip those late answers
release();
is($node->safe_psql('postgres', 'SELECT engine_pid || \'|\' || restarts FROM mcc_service_status()'),
	"$engine|$restarts", 'the engine resumed without a restart');
# (mcc.fallback = error: an answer that is not the engine's is an ERROR;
# BackgroundPsql keeps stderr until it is cleared)
$s->{stderr} = '';
$t->{stderr} = '';
$s->query_safe('SET mcc.fallback = error');
is($s->query_safe(q{SELECT bool_and(check_identify('big', tpl, 5, 0)) FROM probes}), 't',
	"the cancelled session then gets the engine's exact answers");
$t->query_safe('RESET mcc.request_timeout; SET mcc.fallback = error');
is($t->query_safe(q{SELECT bool_and(check_identify('big', tpl, 5, 0)) FROM probes}), 't',
	"the timed-out session then gets the engine's exact answers");
$s->quit;
$t->quit;
is(check_all_probes($node, 'big', 5, 0, 'SET mcc.fallback = error;'), 0,
	"other sessions get the engine's exact answers");

$node->stop;
done_testing();
