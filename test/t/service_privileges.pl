# Security of the matcher service: SELECT privilege is checked on every
# call, registering needs ownership, and a gallery with row-level security
# active for the caller never goes through the shared cache: the caller gets
# exactly the rows its policy allows.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('privileges');
served_gallery($node, 'g', 600, 21, 10, 2);
$node->safe_psql('postgres', q{
	CREATE ROLE reader LOGIN;
	CREATE ROLE stranger LOGIN;
	CREATE ROLE tenant LOGIN;
	GRANT SELECT ON probes TO reader, stranger, tenant;
	GRANT SELECT, INSERT ON checks TO reader, tenant;
	GRANT SELECT ON g TO reader;
});

# a role with SELECT is served by the service
$node->safe_psql('postgres', 'SET ROLE reader; SELECT count(*) FROM identify(\'g\', (SELECT tpl FROM probes WHERE pid = 1))');
is($node->safe_psql('postgres', q{
	SET ROLE reader; SET mcc.fallback = error;
	SELECT bool_and(check_identify('g', tpl, 5, 0)) FROM probes}), 't',
	'a role with SELECT gets exact answers through the service');

# no SELECT: permission denied, whatever the path
for my $fb ('cpu', 'error')
{
	my ($ret, $out, $err) = $node->psql('postgres', qq{
		SET ROLE stranger; SET mcc.fallback = $fb;
		SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))});
	like($err, qr/permission denied for table g/, "identify() without SELECT (fallback $fb): permission denied");
	($ret, $out, $err) = $node->psql('postgres', qq{
		SET ROLE stranger; SET mcc.fallback = $fb;
		SELECT * FROM identify_batch('g', (SELECT array_agg(tpl) FROM probes))});
	like($err, qr/permission denied for table g/, "identify_batch() without SELECT (fallback $fb): permission denied");
}
my ($ret, $out, $err) = $node->psql('postgres', q{SET ROLE stranger; SELECT mcc_gallery_preload('g')});
like($err, qr/permission denied for table g/, 'preload without SELECT: permission denied');

# revoking takes effect at once (checked per call, not per cached gallery)
$node->safe_psql('postgres', 'REVOKE SELECT ON g FROM reader');
($ret, $out, $err) = $node->psql('postgres', q{SET ROLE reader; SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/permission denied for table g/, 'after REVOKE the same role is refused');

# administration needs ownership
for my $f ('mcc_gallery_register', 'mcc_gallery_unregister', 'mcc_gallery_evict')
{
	($ret, $out, $err) = $node->psql('postgres', "SET ROLE stranger; SELECT $f('g')");
	like($err, qr/must be owner of table g/, "$f() needs ownership");
}

# row-level security: the tenant sees even ids only
$node->safe_psql('postgres', q{
	GRANT SELECT ON g TO tenant;
	ALTER TABLE g ENABLE ROW LEVEL SECURITY;
	CREATE POLICY even ON g FOR SELECT TO tenant USING (id % 2 = 0);
});
is($node->safe_psql('postgres', q{
	SET ROLE tenant;
	SELECT bool_and(check_identify('g', tpl, 8, 0)) FROM probes}), 't',
	'the tenant gets the brute-force top-k over the rows its policy allows');
is($node->safe_psql('postgres', q{
	SET ROLE tenant;
	SELECT count(*) FILTER (WHERE id % 2 = 1)
	FROM probes, identify('g', tpl, 20)}), '0', 'no odd id reaches the tenant');
is($node->safe_psql('postgres', q{
	SET ROLE tenant;
	SELECT check_batch('g', array_agg(tpl ORDER BY pid), 6) FROM probes}), 't',
	'identify_batch under row-level security equals brute force');

my $before = $node->safe_psql('postgres', "SELECT searches FROM mcc_gallery_status WHERE gallery = 'g'::regclass");
($ret, $out, $err) = $node->psql('postgres', q{
	SET ROLE tenant; SET mcc.fallback = notice;
	SELECT count(*) FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/scans the gallery in the backend: row-level security is active/,
	'with fallback = notice the tenant is told why the service is not used');
($ret, $out, $err) = $node->psql('postgres', q{
	SET ROLE tenant; SET mcc.fallback = error;
	SELECT count(*) FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/cannot serve identify\(\): row-level security is active/,
	'with fallback = error the tenant gets an error instead');
is($node->safe_psql('postgres', "SELECT searches FROM mcc_gallery_status WHERE gallery = 'g'::regclass"),
	$before, 'the tenant\'s calls never searched the shared cache');

# the owner is not subject to the policy and keeps the service
is($node->safe_psql('postgres', q{
	SET mcc.fallback = error;
	SELECT bool_and(check_identify('g', tpl, 5, 0)) FROM probes}), 't',
	'the owner (policy not applied) still goes through the service');

$node->stop;
done_testing();
