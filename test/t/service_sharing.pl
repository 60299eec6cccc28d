# Sharing the matcher service between roles that do not trust each other
# (issue 18; docs/matcher-service.md, "Sharing the service"):
# - a gallery larger than half of mcc.cache_memory_limit still reloads when
#   a reload is needed (more than mcc.max_delta_rows changed), and a forced
#   refresh that does not fit beside the current cache keeps serving it;
#   a reader's mcc_gallery_preload() never forces a reload of another's
#   gallery; preload counts only the rows the caller sees (row-level
#   security);
# - only members of mcc_service_user register galleries; when every slot
#   of mcc.max_galleries is taken a gallery takes the least recently used
#   one; a gallery that needs cache memory evicts another's of equal
#   priority used less recently, never one of higher priority; priorities
#   are for roles the DBA grants;
# - mcc_gallery_status shows only galleries the caller may read (all of
#   them to pg_read_all_stats), without counts under row-level security.
# Nothing here depends on timing: every outcome is a state or an answer.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

# 3000 templates take about 4.2 MB in the engine: one copy fits in 6 MB,
# two do not
my $node = service_node('sharing', 'mcc.cache_memory_limit' => "'6MB'",
	'mcc.max_galleries' => 4);
served_gallery($node, 'big', 3000, 51, 6, 2);
$node->safe_psql('postgres', q{
	CREATE ROLE reader LOGIN;
	CREATE ROLE tenant LOGIN;
	CREATE ROLE stranger LOGIN;
	CREATE ROLE member LOGIN;
	CREATE ROLE intruder LOGIN;
	CREATE ROLE monitor LOGIN IN ROLE pg_read_all_stats;
	GRANT CREATE ON SCHEMA public TO member, intruder;
	GRANT SELECT ON probes TO reader, tenant, stranger, member;
	GRANT SELECT, INSERT ON checks TO reader, member;
	GRANT SELECT ON big TO reader, tenant;
	GRANT mcc_service_user TO member;
});

# the output of a query, '' if it fails (assertions fail, the script goes on)
sub result
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql);
	return $out;
}

# mismatches of identify() against brute force over every probe, served
# by the service (mcc.fallback = error); -1 if a call fails
sub exact_via_service
{
	my ($gallery) = @_;
	my $bad = eval { check_all_probes($node, $gallery, 5, 0, 'SET mcc.fallback = error;') };
	diag($@) unless defined $bad;
	return $bad // -1;
}

my $limit = 6 * 1024 * 1024;
is(result("SELECT mcc_gallery_preload('big')"), '3000', 'the owner preloads big');
my $bytes = result("SELECT host_bytes FROM mcc_gallery_status WHERE gallery = 'big'::regclass");
ok($bytes > $limit / 2 && $bytes < $limit,
	"big ($bytes bytes) is larger than half of mcc.cache_memory_limit ($limit)")
  or BAIL_OUT('the gallery does not have the size this test needs');

# state of big: "state generation/cached_generation loaded_at"
sub big_state
{
	return result(q{
		SELECT state || ' ' || cached_generation || ' ' || loaded_at
		FROM mcc_gallery_status WHERE gallery = 'big'::regclass});
}

# --- a reload is needed: more than mcc.max_delta_rows changed rows ---------
$node->safe_psql('postgres', q{
	SET mcc.max_delta_rows = 10;
	BEGIN;
	DELETE FROM big WHERE id >= 2980;
	INSERT INTO big SELECT finger, 'again', template FROM mcc_synthetic(20, 1, 52, 2980);
	COMMIT;
});
like(big_state(), qr/^stale /, 'a transaction of 40 changed rows marks big for a reload');
is(exact_via_service('big'), 0,
	'identify() reloads big without a second copy and answers exactly through the service');
like(big_state(), qr/^cached /, 'big is cached again');
is(result('SELECT cache_bytes <= cache_limit FROM mcc_service_status()'), 't',
	'the cache memory stays within the limit');

# --- preload by a reader: no forced reload of another's gallery ------------
my $before = big_state();
my ($ret, $out, $err) = $node->psql('postgres', q{SET ROLE reader; SELECT mcc_gallery_preload('big')});
is($out, '3000', "a reader's preload of a current gallery returns the rows it sees") or diag($err);
is(big_state(), $before, '... and does not reload it');

# --- the owner's forced refresh does not fit beside the current copy --------
($ret, $out, $err) = $node->psql('postgres', q{SELECT mcc_gallery_preload('big')});
is($out, '3000', "the owner's refresh of a current gallery returns its rows");
like($err, qr/NOTICE:  gallery "big" was not reloaded: a second copy does not fit in mcc\.cache_memory_limit beside the current cache, which stays/,
	'... with a NOTICE that the current cache stays');
is(big_state(), $before, '... which stays cached, not marked "not cached"');
is(exact_via_service('big'), 0,
	'and keeps serving exact answers');

# --- mcc_gallery_status: only what the caller may read ---------------------
is(result(q{SET ROLE stranger; SELECT count(*) FROM mcc_gallery_status}), '0',
	'a role without SELECT on big does not see it in mcc_gallery_status');
is(result(q{
	SET ROLE stranger; SELECT count(*) FROM mcc_gallery_status_rows() WHERE gallery = 'big'::regclass}),
	'0', '... nor through mcc_gallery_status_rows()');
is(result(q{
	SET ROLE reader; SELECT state || ' ' || entries FROM mcc_gallery_status WHERE gallery = 'big'::regclass}),
	'cached 3000', 'a reader sees its state and counts');
is(result(q{
	SET ROLE monitor; SELECT entries FROM mcc_gallery_status WHERE gallery = 'big'::regclass}),
	'3000', 'pg_read_all_stats sees every gallery with its counts');

# --- row-level security: preload counts what the caller sees ---------------
$node->safe_psql('postgres', q{
	ALTER TABLE big ENABLE ROW LEVEL SECURITY;
	CREATE POLICY few ON big FOR SELECT TO tenant USING (id < 50);
});
is(result(q{SET ROLE tenant; SELECT mcc_gallery_preload('big')}), '50',
	'a caller under row-level security is told the 50 rows it sees, not 3000');

is(result(q{
	SET ROLE tenant;
	SELECT state || ' ' || coalesce(entries::text, '-') || ' ' || coalesce(searches::text, '-')
		|| ' ' || coalesce(generation::text, '-')
	FROM mcc_gallery_status WHERE gallery = 'big'::regclass}),
	'cached - - -', 'under row-level security the counts and generations are hidden');
$node->safe_psql('postgres', 'ALTER TABLE big DISABLE ROW LEVEL SECURITY');

# --- registering is for members of mcc_service_user ------------------------
$node->safe_psql('postgres', q{
	SET ROLE intruder;
	CREATE TABLE intruder_g (id bigint PRIMARY KEY, tpl mcc_template);
	INSERT INTO intruder_g SELECT finger, template FROM mcc_synthetic(1, 1, 7);
});
($ret, $out, $err) = $node->psql('postgres', q{SET ROLE intruder; SELECT mcc_gallery_register('intruder_g')});
like($err, qr/ERROR:  permission denied to register gallery "intruder_g".*\nDETAIL:  Only members of role "mcc_service_user"/s,
	'a role outside mcc_service_user cannot register a gallery');
($ret, $out, $err) = $node->psql('postgres', q{SELECT mcc_gallery_register('intruder_g')});
like($err, qr/permission denied to register gallery "intruder_g".*The owner of the gallery, role "intruder", is not a member/s,
	'... nor can a superuser register it for that owner');

# --- slots: a member's many galleries do not keep the owner's out -----------
$node->safe_psql('postgres', 'SELECT mcc_gallery_evict(\'big\')');
for my $i (1 .. 5)
{
	$node->psql('postgres', qq{
		SET ROLE member;
		CREATE TABLE m$i (id bigint PRIMARY KEY, tpl mcc_template);
		INSERT INTO m$i SELECT finger, template FROM mcc_synthetic(1, 1, $i);
		SELECT mcc_gallery_register('m$i');
		SET mcc.fallback = error;
		SELECT count(*) FROM identify('m$i', (SELECT tpl FROM probes WHERE pid = 1));
	});
}
is(result('SELECT count(*) FROM mcc_gallery_status WHERE generation IS NOT NULL'),
	'4', "the member's galleries hold every slot of mcc.max_galleries = 4");
is(exact_via_service('big'), 0,
	"the owner's gallery takes the least recently used slot and is served");

# --- memory: a member's large gallery and the owner's, then priorities ------
create_gallery($node, 'mbig', 3000, 53);
$node->safe_psql('postgres', q{
	ALTER TABLE mbig OWNER TO member;
	SET ROLE member;
	SELECT mcc_gallery_register('mbig');
});
is(result(q{SET ROLE member; SELECT mcc_gallery_preload('mbig')}), '3000',
	"the member's large gallery loads, evicting big (equal priority, used less recently)");
is(result(q{
	SELECT string_agg(gallery || ' ' || state, ', ' ORDER BY gallery::text)
	FROM mcc_gallery_status WHERE gallery IN ('big'::regclass, 'mbig'::regclass)}),
	'big not cached, mbig cached', '... which the status shows');
($ret, $out, $err) = $node->psql('postgres', q{SELECT mcc_gallery_preload('big')});
is($out, '3000', "the owner's preload of big then succeeds (it evicts mbig)") or diag($err);
is(result(q{
	SELECT string_agg(gallery || ' ' || state, ', ' ORDER BY gallery::text)
	FROM mcc_gallery_status WHERE gallery IN ('big'::regclass, 'mbig'::regclass)}),
	'big cached, mbig not cached', '... which the status shows');
cmp_ok(result('SELECT evictions FROM mcc_service_status()'), '>=', 2,
	'mcc_service_status counts the caches evicted for room');

($ret, $out, $err) = $node->psql('postgres', q{SET ROLE member; SELECT mcc_gallery_set_priority('mbig', 100)});
like($err, qr/permission denied for function mcc_gallery_set_priority/,
	'a member cannot give its gallery priority');
$node->psql('postgres', q{SELECT mcc_gallery_set_priority('big', 10)});
is(result(q{SELECT priority FROM mcc_gallery_status WHERE gallery = 'big'::regclass}),
	'10', 'the DBA gives big priority 10');
($ret, $out, $err) = $node->psql('postgres', q{
	SET ROLE member; SET mcc.fallback = notice;
	SELECT count(*) FROM identify('mbig', (SELECT tpl FROM probes WHERE pid = 1))});
is($out, '10', "the member's identify() on mbig is answered by the backend scan");
like($err, qr/scans the gallery in the backend: a recent load of the gallery exceeded mcc\.cache_memory_limit|does not fit in mcc\.cache_memory_limit/,
	'... because big, of higher priority, is not evicted for it');
is(result(q{SELECT state FROM mcc_gallery_status WHERE gallery = 'big'::regclass}),
	'cached', 'big stays cached');

# --- taking cache memory needs membership at every use ---------------------
$node->safe_psql('postgres', 'REVOKE mcc_service_user FROM member');
($ret, $out, $err) = $node->psql('postgres', q{
	SET ROLE member; SET mcc.fallback = notice;
	SELECT count(*) FROM identify('m1', (SELECT tpl FROM probes WHERE pid = 1))});
like($err, qr/scans the gallery in the backend: the owner of gallery "m1", role "member", is not a member of role "mcc_service_user"/,
	'after REVOKE the member\'s galleries are no longer cached');
($ret, $out, $err) = $node->psql('postgres', q{SET ROLE member; SELECT mcc_gallery_preload('m1')});
like($err, qr/ERROR:  cannot preload: the owner of gallery "m1", role "member", is not a member/,
	'... nor preloaded');

$node->stop;
done_testing();
