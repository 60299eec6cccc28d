# ALTER EXTENSION mcc UPDATE from 0.1.0 and sharing the service (issue 18;
# sql/mcc--0.1.0--0.2.0.sql, "Matcher service: sharing it between roles"):
# a gallery registered under 0.1.0 by a role that is not a superuser keeps
# being served after the update (its owner joins mcc_service_user), the
# registrations get priority 0, and the status view and function take
# their 0.2.0 form (the view readable by PUBLIC). Before the update the
# 0.2.0 library serves the 0.1.0 objects (their first columns).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('sharing_upgrade');
$node->safe_psql('postgres', q{
	CREATE DATABASE up;
	CREATE ROLE alice LOGIN;
});
$node->safe_psql('up', q{
	CREATE EXTENSION mcc VERSION '0.1.0';
	CREATE TABLE g (id bigint PRIMARY KEY, tpl mcc_template);
	INSERT INTO g SELECT finger, template FROM mcc_synthetic(200, 1, 81);
	CREATE TABLE probes AS SELECT finger AS pid, template AS tpl FROM mcc_synthetic(3, 2, 81) WHERE impression = 1;
	GRANT SELECT ON probes TO alice;
	-- registered under 0.1.0, then given to a role that is no superuser
	SELECT mcc_gallery_register('g');
	ALTER TABLE g OWNER TO alice;
});

# identify() by alice under mcc.fallback = notice: the NOTICE, or ''
sub served_to_alice
{
	my ($ret, $out, $err) = $node->psql('up', q{
		SET ROLE alice; SET mcc.fallback = notice;
		SELECT count(*) FROM probes, identify('g', tpl, 3)});
	return ($out, $err);
}

my ($out, $err) = served_to_alice();
is($out, '9', 'before the update alice gets her answers');
like($err, qr/scans the gallery in the backend: the owner of gallery "g", role "alice", is not a member of role "mcc_service_user"/,
	'... from the backend scan: under the 0.2.0 library her gallery is not cached');
is($node->safe_psql('up', 'SELECT state FROM mcc_service_status()'), 'ready',
	'mcc_service_status() of 0.1.0 still answers');

$node->safe_psql('up', q{ALTER EXTENSION mcc UPDATE TO '0.2.0'});
is($node->safe_psql('up', q{SELECT pg_has_role('alice', 'mcc_service_user', 'MEMBER')}), 't',
	'the update made the owner of the registered gallery a member of mcc_service_user');
($out, $err) = served_to_alice();
is($out . '|' . $err, '9|', 'after the update her gallery is served by the matcher service');
is($node->safe_psql('up', q{SELECT gallery || ' ' || priority FROM mcc_galleries}), 'g 0',
	'the registration has priority 0');
is($node->safe_psql('up', q{SET ROLE alice; SELECT gallery || ' ' || state || ' ' || priority FROM mcc_gallery_status}),
	'g cached 0', 'alice reads the status view of her gallery');
is($node->safe_psql('up', q{SELECT count(*) FROM mcc_service_status() WHERE image_threads >= 1}), '1',
	'mcc_service_status() has its 0.2.0 columns');
my ($ret, $o, $e) = $node->psql('up', q{SET ROLE alice; SELECT mcc_gallery_set_priority('g', 5)});
like($e, qr/permission denied for function mcc_gallery_set_priority/, 'mcc_gallery_set_priority is not for PUBLIC');

$node->stop;
done_testing();
