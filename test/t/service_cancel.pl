# Cancel requests and statement_timeout interrupt a long matcher request
# within 100 ms of being asked, the session stays usable (the engine's late
# answer to the cancelled request is skipped), and mcc.request_timeout turns
# a slow answer into an ERROR under mcc.fallback = error.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use MccServiceTest;

my $node = service_node('cancel', 'mcc.worker_threads' => 1);
create_gallery($node, 'big', 4000, 13);
create_probes($node, 13, 6, 2);
install_checks($node);
$node->safe_psql('postgres', "SELECT mcc_gallery_register('big')");
$node->safe_psql('postgres', "SELECT mcc_gallery_preload('big')");

# a batch long enough to keep the engine busy for about 5 s
my $t0 = time;
$node->safe_psql('postgres',
	"SELECT count(*) FROM identify_batch('big', (SELECT array_agg(tpl) FROM probes), 5)");
my $per_probe = (time - $t0) / 8;
my $n = int(5 / ($per_probe > 0.0005 ? $per_probe : 0.0005));
$n = 3000 if $n > 3000;
$node->safe_psql('postgres', qq{
	CREATE TABLE long_probes AS SELECT template AS tpl FROM mcc_synthetic($n, 1, 77);
	CREATE FUNCTION long_request() RETURNS void LANGUAGE plpgsql AS \$\$
	DECLARE t0 timestamptz := clock_timestamp();
	BEGIN
		PERFORM count(*) FROM identify_batch('big', (SELECT array_agg(tpl) FROM long_probes), 5);
		RAISE NOTICE 'completed after % ms', extract(epoch FROM clock_timestamp() - t0) * 1000;
	EXCEPTION WHEN query_canceled THEN
		RAISE NOTICE 'cancelled at % after % ms', extract(epoch FROM clock_timestamp()),
			extract(epoch FROM clock_timestamp() - t0) * 1000;
	END \$\$;
});

# statement_timeout
for my $timeout (800, 1500)
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET statement_timeout = $timeout; SELECT long_request()");
	my ($ms) = $err =~ /cancelled at [\d.]+ after ([\d.]+) ms/;
	ok(defined $ms, "statement_timeout = $timeout ms interrupted the request") or diag($err);
	ok(defined $ms && $ms >= $timeout - 5 && $ms < $timeout + 100,
		sprintf("... %.1f ms after the start: within 100 ms of the timeout", $ms // -1));
}

# pg_cancel_backend from another session
my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe("SET application_name = 'cancel_me'");
for my $round (1 .. 2)
{
	$s->{stderr} = '';
	$s->query_until(qr/started/, "\\echo started\nSELECT long_request();\n");
	$node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'cancel_me' AND state = 'active' AND wait_event_type = 'Extension'})
	  or die 'the request did not reach the engine';
	my $asked = $node->safe_psql('postgres', q{
		SELECT extract(epoch FROM clock_timestamp()) FROM pg_stat_activity, pg_cancel_backend(pid)
		WHERE application_name = 'cancel_me'});
	$s->query('SELECT 1');
	my ($at) = $s->{stderr} =~ /cancelled at ([\d.]+)/;
	ok(defined $at, "round $round: the cancel request interrupted the request") or diag($s->{stderr});
	my $lag = defined $at ? ($at - $asked) * 1000 : 1e9;
	ok($lag < 100, sprintf("round $round: ... %.1f ms after it was asked", $lag));
}

# the session stays usable, and the late answers are skipped
$s->{stderr} = '';
is($s->query_safe(q{SELECT bool_and(check_identify('big', tpl, 5, 0)) FROM probes}), 't',
	'the cancelled session then gets exact answers');
$s->quit;
is(check_all_probes($node, 'big', 5), 0, 'other sessions get exact answers');

# mcc.request_timeout: a request queued behind a long batch gets no answer
# in 300 ms; under mcc.fallback = error that is an ERROR
my $busy = $node->background_psql('postgres', on_error_stop => 0);
$busy->query_safe("SELECT count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 1))");
$busy->query_safe("SET application_name = 'busy'");
$busy->query_until(qr/started/, "\\echo started\nSELECT long_request();\n");
$node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	WHERE application_name = 'busy' AND state = 'active' AND wait_event_type = 'Extension'})
  or die 'the long request did not reach the engine';
my ($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.request_timeout = 300; SET mcc.fallback = error;
	SELECT count(*) FROM identify('big', (SELECT tpl FROM probes WHERE pid = 2))});
like($err, qr/did not answer within mcc\.request_timeout/, 'mcc.request_timeout raises under fallback = error');
($ret, $out, $err) = $node->psql('postgres', q{
	SET mcc.request_timeout = 300; SET mcc.fallback = notice;
	SELECT bool_and(check_identify('big', tpl, 5, 0)) FROM probes WHERE pid <= 2});
is($out, 't', 'under fallback = notice the backend scan answers exactly');
like($err, qr/scans the gallery in the backend: the matcher engine did not answer within mcc\.request_timeout/,
	'... saying why');
$node->safe_psql('postgres', "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'busy'");
$busy->quit;

$node->stop;
done_testing();
