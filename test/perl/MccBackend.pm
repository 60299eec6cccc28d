# MccBackend.pm: finding a TAP test's backends in pg_stat_activity by their
# application_name: the pid of one running a statement, or the wait until
# one waits on the matcher engine.
package MccBackend;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Utils;

our @EXPORT = qw(backend_pid wait_on_engine);

# The pid of the backend of application $app running a statement LIKE
# $like, polled as fast as psql starts (not every 100 ms as
# poll_query_until does: a scan may last well under a second); dies after
# the default timeout.
sub backend_pid
{
	my ($node, $app, $like) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		my $pid = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE application_name = '$app'
			   AND state = 'active' AND query LIKE '$like'");
		return $pid if $pid ne '';
	}
	die "no backend of $app running $like";
}

# Wait until the backend of application $app waits on the matcher engine
# (wait event type Extension); dies "$what did not reach the engine".
sub wait_on_engine
{
	my ($node, $app, $what) = @_;
	$node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = '$app' AND state = 'active' AND wait_event_type = 'Extension'})
	  or die "$what did not reach the engine";
	return;
}

1;
