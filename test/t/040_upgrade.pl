# Upgrades (docs/upgrades.md): a database created at the first version,
# 0.1.0, with templates enrolled every way, a registered gallery served by
# the matcher service (shared_preload_libraries = 'mcc'), then
# ALTER EXTENSION mcc UPDATE to the default version: every template (its
# bytes on disk and everything SQL shows of it), every score, the gallery's
# registration and every identify() answer survive, and writes after the
# update reach the service. Then a fresh CREATE EXTENSION at the default
# version must give the same objects, definitions, privileges and comments
# as 0.1.0 followed by the update scripts.
#
# Nothing here names an object of a later version: the catalog comparison
# is over whatever pg_depend says belongs to the extension.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $base = '0.1.0';
my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'mcc'
mcc.worker_threads = 2
mcc.request_timeout = '60s'
max_connections = 50
});
$node->start;

my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'mcc'");
isnt($default, $base, "the default version ($default) is not the base version");
is($node->safe_psql('postgres', qq{
	SELECT string_agg(v.version, ',' ORDER BY v.version)
	FROM pg_available_extension_versions v
	WHERE v.name = 'mcc' AND v.version <> '$default'
	  AND NOT EXISTS (SELECT 1 FROM pg_extension_update_paths('mcc') p
					  WHERE p.source = v.version AND p.target = '$default' AND p.path IS NOT NULL)}),
	'', "every earlier version has an update path to $default");

# released scripts are never edited (their checksums are in sql/released.sha256)
SKIP:
{
	my $src = $ENV{MCC_SRCDIR};
	skip 'MCC_SRCDIR is not set: released scripts not checked', 1 unless $src;
	my $out = `cd '$src' && sha256sum --strict -c sql/released.sha256 2>&1`;
	is($?, 0, 'the scripts of released versions are unchanged') or diag($out);
}

$node->safe_psql('postgres', "CREATE EXTENSION mcc VERSION '$base'");
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'mcc'"),
	$base, "CREATE EXTENSION mcc VERSION '$base' installs $base");
wait_ready($node, 0);

# --- enrol, register, record -------------------------------------------------
# prints: the gallery (synthetic, gpu2015; probe pid p is finger p - 1's
# second impression for p <= 8); enrolled: templates made every
# other way (ISO 2005, ANSI 2004, xyt, JSON, the tpami2010 profile).
create_gallery($node, 'prints', 400, 21);
create_probes($node, 21, 8, 3);
install_checks($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION pageinspect;
	CREATE TABLE enrolled (id bigint PRIMARY KEY, how text, tpl mcc_template);
	INSERT INTO enrolled
	SELECT 1000 * k + finger, how, CASE how
		WHEN 'iso2005' THEN mcc_template_from_iso(mcc_template_to_iso(template, 'iso2005'))
		WHEN 'ansi2004' THEN mcc_template_from_iso(mcc_template_to_iso(template, 'ansi2004'))
		WHEN 'xyt' THEN mcc_template_from_xyt(mcc_template_to_xyt(template),
											   (mcc_template_info(template)).width,
											   (mcc_template_info(template)).height)
		WHEN 'json' THEN mcc_template_from_json(template::jsonb)
		WHEN 'tpami2010' THEN mcc_template_from_iso(mcc_template_to_iso(template), 1, 'tpami2010')
	END
	FROM mcc_synthetic(12, 1, 31),
		 unnest(ARRAY['iso2005', 'ansi2004', 'xyt', 'json', 'tpami2010']) WITH ORDINALITY AS h(how, k);

	-- everything SQL shows of a template: wire form, header, cylinders, text
	CREATE FUNCTION tpl_digest(t mcc_template) RETURNS text LANGUAGE sql STABLE AS $$
		SELECT md5(mcc_template_send(t)) || ' ' || (mcc_template_info(t))::text || ' ' ||
			(SELECT md5(coalesce(string_agg(c::text, ';' ORDER BY c.minutia, c.angle), ''))
			 FROM mcc_cylinders(t) c) || ' ' || md5(t::text)
	$$;
	-- the bytes on disk: every tuple of a table and of its TOAST table
	CREATE FUNCTION raw_digest(rel regclass) RETURNS text LANGUAGE sql STABLE AS $$
		SELECT md5(coalesce(string_agg(coalesce(i.t_data, '\x'::bytea)::text, ';' ORDER BY r, b, i.lp), ''))
		FROM (VALUES (1, rel), (2, (SELECT nullif(reltoastrelid, 0)::regclass FROM pg_class WHERE oid = rel))) AS x(r, c),
			 generate_series(0, (pg_relation_size(x.c) / current_setting('block_size')::int)::int - 1) AS b,
			 heap_page_items(get_raw_page(x.c::text, b)) AS i
		WHERE x.c IS NOT NULL
	$$;
	CREATE TABLE all_tpl AS
		SELECT 'prints' AS src, id, tpl FROM prints UNION ALL SELECT 'enrolled', id, tpl FROM enrolled;
	CREATE TABLE scored AS
		SELECT src, id, tpl FROM all_tpl WHERE src = 'enrolled' OR id % 20 = 0
		UNION ALL SELECT 'probes', pid, tpl FROM probes;
});
$node->safe_psql('postgres', "SELECT mcc_gallery_register('prints')");
$node->safe_psql('postgres', "SELECT mcc_gallery_preload('prints')");

# what must survive, recorded under the old version
my $record = q{
	CREATE TABLE %1$s_tpl AS SELECT src, id, tpl_digest(tpl) AS d FROM all_tpl;
	CREATE TABLE %1$s_raw AS SELECT rel, raw_digest(rel) AS d
		FROM unnest(ARRAY['prints', 'enrolled', 'all_tpl']::regclass[]) AS rel;
	CREATE TABLE %1$s_scores AS
		SELECT a.src AS a_src, a.id AS a_id, b.src AS b_src, b.id AS b_id,
			   mcc_score(a.tpl, b.tpl, 'lss') AS lss, mcc_score(a.tpl, b.tpl) AS score
		FROM scored a, scored b
		WHERE mcc_profile(a.tpl) = mcc_profile(b.tpl);
	CREATE TABLE %1$s_identify AS
		SELECT pid, via_identify('prints', tpl, 10, 0) AS hits FROM probes;
	CREATE TABLE %1$s_batch AS
		SELECT probe_no, string_agg(id || ':' || score, ',' ORDER BY ord) AS hits
		FROM identify_batch('prints', (SELECT array_agg(tpl ORDER BY pid) FROM probes), 5, refine => 'none')
			 WITH ORDINALITY AS t(probe_no, id, score, ord)
		GROUP BY probe_no;
	CREATE TABLE %1$s_galleries AS SELECT to_jsonb(g) AS j FROM mcc_galleries g;
};
# mcc.fallback = error: an identify() the service does not answer fails
$node->safe_psql('postgres', "SET mcc.fallback = error;\n" . sprintf($record, 'before'));
my ($n_tpl, $n_scores) = split /\|/, $node->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM before_tpl), (SELECT count(*) FROM before_scores)');
is(check_all_probes($node, 'prints', 10, 0, 'SET mcc.fallback = error;'), 0,
	"before: the service's identify() equals brute force ($n_tpl templates, $n_scores scores recorded)");
note($node->safe_psql('postgres', q{
	SELECT count(*) FROM before_identify WHERE hits LIKE (pid - 1) || ':%'}) . ' of 8 mated probes find their finger first');
is($node->safe_psql('postgres', q{SELECT state FROM mcc_gallery_status WHERE gallery = 'prints'::regclass}),
	'cached', 'before: the service holds the gallery');
my $engine = service_pid($node, 'engine');

# --- the update ----------------------------------------------------------------
$node->safe_psql('postgres', 'ALTER EXTENSION mcc UPDATE');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'mcc'"),
	$default, "ALTER EXTENSION mcc UPDATE goes from $base to $default");
$node->safe_psql('postgres', "SET mcc.fallback = error;\n" . sprintf($record, 'after'));

is($node->safe_psql('postgres', q{
	SELECT count(*) FROM before_tpl b FULL JOIN after_tpl a USING (src, id)
	WHERE a.d IS DISTINCT FROM b.d}), '0',
	"all $n_tpl templates read the same: wire form, header, cylinders, text");
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM before_raw b JOIN after_raw a USING (rel) WHERE a.d = b.d}), '3',
	'the bytes on disk of every table of templates (and its TOAST table) are untouched');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM before_scores b FULL JOIN after_scores a USING (a_src, a_id, b_src, b_id)
	WHERE a.lss IS DISTINCT FROM b.lss OR a.score IS DISTINCT FROM b.score}), '0',
	"all $n_scores scores mcc_score(a, b, 'lss') and mcc_score(a, b) are the same");
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM before_galleries b
	WHERE NOT EXISTS (SELECT 1 FROM after_galleries a WHERE a.j @> b.j)}), '0',
	'the gallery registration is kept (every field it had)');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM before_identify b FULL JOIN after_identify a USING (pid)
	WHERE a.hits IS DISTINCT FROM b.hits}), '0',
	'identify() gives the same answers, from the service (mcc.fallback = error)');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM before_batch b FULL JOIN after_batch a USING (probe_no)
	WHERE a.hits IS DISTINCT FROM b.hits}), '0', 'identify_batch() too');
# 0.2.0 changes one default: identify_batch() without refine refines with
# mcc.refine_method (0.1.0's default was 'none'), as identify() does
is($node->safe_psql('postgres', q{
	SET mcc.fallback = error;
	SELECT count(*) FROM (
		(SELECT * FROM identify_batch('prints', (SELECT array_agg(tpl ORDER BY pid) FROM probes), 5)
		 EXCEPT ALL
		 SELECT * FROM identify_batch('prints', (SELECT array_agg(tpl ORDER BY pid) FROM probes), 5,
									  refine => current_setting('mcc.refine_method')))
		UNION ALL
		(SELECT * FROM identify_batch('prints', (SELECT array_agg(tpl ORDER BY pid) FROM probes), 5,
									  refine => current_setting('mcc.refine_method'))
		 EXCEPT ALL
		 SELECT * FROM identify_batch('prints', (SELECT array_agg(tpl ORDER BY pid) FROM probes), 5))) x}),
	'0', 'after the update identify_batch() refines by default (mcc.refine_method)');
is(check_all_probes($node, 'prints', 10, 0, 'SET mcc.fallback = error;'), 0,
	'identify() equals brute force after the update');

# a write after the update reaches the cache (the gallery's triggers work)
$node->safe_psql('postgres', q{
	INSERT INTO prints SELECT 900000 + pid, 'enrolled after the update', tpl FROM probes WHERE pid = 9});
is($node->safe_psql('postgres', q{
	SET mcc.fallback = error;
	SELECT id FROM identify('prints', (SELECT tpl FROM probes WHERE pid = 9), 1)}),
	'900009', 'a template enrolled after the update is found by the service');
is(check_all_probes($node, 'prints', 10, 0, 'SET mcc.fallback = error;'), 0,
	'... and every answer still equals brute force');
note("engine pid before the update $engine, after " . service_pid($node, 'engine'));

# --- a fresh install equals 0.1.0 + the update scripts --------------------------
# One line per extension member and what defines it; written for any object
# class (those without a detailed form are listed by name and comment).
my $catalog = q{
	SELECT replace(line, E'\n', ' ') FROM (
	WITH m AS (
		SELECT d.classid, d.objid, pg_describe_object(d.classid, d.objid, d.objsubid) AS obj
		FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
		WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'mcc' AND d.deptype = 'e'
	)
	SELECT obj || ' | comment: ' || coalesce((SELECT description FROM pg_description
			WHERE classoid = m.classid AND objoid = m.objid AND objsubid = 0), '-')
		|| ' | init privileges: ' || coalesce((SELECT string_agg(privtype::text || ' ' || initprivs::text, ' ' ORDER BY objsubid)
			FROM pg_init_privs WHERE classoid = m.classid AND objoid = m.objid), '-')
		|| ' | ' || coalesce(CASE m.classid
		WHEN 'pg_proc'::regclass THEN (
			SELECT CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid)
					ELSE p.prokind::text || ' ' || pg_get_function_arguments(p.oid) || ' ' ||
						 coalesce((SELECT a::text FROM pg_aggregate a WHERE a.aggfnoid = p.oid), '') END
				|| ' acl ' || coalesce(p.proacl::text, 'default')
			FROM pg_proc p WHERE p.oid = m.objid)
		WHEN 'pg_class'::regclass THEN (
			SELECT c.relkind::text || ' acl ' || coalesce(c.relacl::text, 'default')
				|| ' rls ' || c.relrowsecurity || '/' || c.relforcerowsecurity
				|| ' options ' || coalesce(c.reloptions::text, '-')
				|| ' columns ' || coalesce((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
						|| CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
						|| coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
						|| coalesce(' acl ' || a.attacl::text, '')
						|| coalesce(' comment ' || col_description(c.oid, a.attnum), ''), ', ' ORDER BY a.attnum)
					FROM pg_attribute a LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
					WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '-')
				|| ' constraints ' || coalesce((SELECT string_agg(conname || ' ' || pg_get_constraintdef(oid), ', ' ORDER BY conname)
					FROM pg_constraint WHERE conrelid = c.oid), '-')
				|| ' indexes ' || coalesce((SELECT string_agg(pg_get_indexdef(indexrelid), ', ' ORDER BY 1)
					FROM pg_index WHERE indrelid = c.oid), '-')
				|| ' triggers ' || coalesce((SELECT string_agg(pg_get_triggerdef(oid), ', ' ORDER BY tgname)
					FROM pg_trigger WHERE tgrelid = c.oid AND NOT tgisinternal), '-')
				|| ' policies ' || coalesce((SELECT string_agg(pol::text, ', ' ORDER BY policyname)
					FROM pg_policies pol WHERE pol.schemaname = c.relnamespace::regnamespace::text
					  AND pol.tablename = c.relname), '-')
				|| coalesce(' view ' || pg_get_viewdef(c.oid), '')
			FROM pg_class c WHERE c.oid = m.objid)
		WHEN 'pg_type'::regclass THEN (
			SELECT concat_ws(' ', t.typtype, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory,
					t.typispreferred, t.typdelim, t.typinput::regproc, t.typoutput::regproc,
					t.typreceive::regproc, t.typsend::regproc, t.typmodin::regproc, t.typmodout::regproc,
					t.typanalyze::regproc, t.typelem::regtype, t.typbasetype::regtype, t.typnotnull,
					t.typdefault, 'acl', coalesce(t.typacl::text, 'default'))
			FROM pg_type t WHERE t.oid = m.objid)
		WHEN 'pg_operator'::regclass THEN (
			SELECT concat_ws(' ', o.oprkind, o.oprleft::regtype, o.oprright::regtype, o.oprresult::regtype,
					o.oprcode::regproc, o.oprcom::regoperator, o.oprnegate::regoperator,
					o.oprrest::regproc, o.oprjoin::regproc, o.oprcanmerge, o.oprcanhash)
			FROM pg_operator o WHERE o.oid = m.objid)
		WHEN 'pg_cast'::regclass THEN (
			SELECT concat_ws(' ', c.castfunc::regprocedure, c.castcontext, c.castmethod)
			FROM pg_cast c WHERE c.oid = m.objid)
		WHEN 'pg_event_trigger'::regclass THEN (
			SELECT concat_ws(' ', t.evtevent, t.evtfoid::regproc, t.evtenabled, t.evttags::text)
			FROM pg_event_trigger t WHERE t.oid = m.objid)
		WHEN 'pg_namespace'::regclass THEN (
			SELECT 'acl ' || coalesce(n.nspacl::text, 'default') FROM pg_namespace n WHERE n.oid = m.objid)
		END, '')
	FROM m
	UNION ALL
	SELECT 'extension: relocatable ' || extrelocatable || ' schema ' || extnamespace::regnamespace
		|| ' configuration ' || coalesce((SELECT string_agg(c::regclass::text, ',') FROM unnest(extconfig) c), '-')
		|| ' conditions ' || coalesce(extcondition::text, '-')
	FROM pg_extension WHERE extname = 'mcc'
	) AS s(line)
	ORDER BY 1
};
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION mcc');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'mcc'"),
	$default, "a fresh CREATE EXTENSION mcc installs $default");
my @fresh = split /\n/, $node->safe_psql('fresh', $catalog);
my @updated = split /\n/, $node->safe_psql('postgres', $catalog);
my (%in_fresh, %in_updated);
$in_fresh{$_}++ for @fresh;
$in_updated{$_}++ for @updated;
my @only_fresh = grep { !$in_updated{$_} } @fresh;
my @only_updated = grep { !$in_fresh{$_} } @updated;
ok(@fresh > 50, scalar(@fresh) . ' catalog lines describe the fresh install');
is(scalar(@only_fresh) + scalar(@only_updated), 0,
	"a fresh install and $base + ALTER EXTENSION UPDATE have the same objects, definitions, privileges and comments")
  or diag(join("\n", (map { "only fresh:   $_" } @only_fresh), (map { "only updated: $_" } @only_updated)));

# the same once more on an empty database (no data, no registration)
$node->safe_psql('postgres', 'CREATE DATABASE chain');
$node->safe_psql('chain', "CREATE EXTENSION mcc VERSION '$base'; ALTER EXTENSION mcc UPDATE");
is($node->safe_psql('chain', $catalog), join("\n", @fresh),
	'an empty database updated from 0.1.0 has the same catalog too');

# no way down: there are no downgrade scripts
my ($rc, $out, $err) = $node->psql('chain', "ALTER EXTENSION mcc UPDATE TO '$base'");
like($err, qr/no update path from version "\Q$default\E" to version "\Q$base\E"/,
	"ALTER EXTENSION mcc UPDATE TO '$base' is refused: no downgrade");

# the comparison sees a changed comment, privilege or definition
$node->safe_psql('chain', q{
	COMMENT ON FUNCTION mcc_score(mcc_template, mcc_template) IS 'changed';
	REVOKE EXECUTE ON FUNCTION mcc_distance(mcc_template, mcc_template) FROM PUBLIC;
	ALTER FUNCTION mcc_matches(mcc_template, mcc_template) COST 7;
});
my %chain = map { $_ => 1 } split /\n/, $node->safe_psql('chain', $catalog);
is(join(',', sort map { /^function (\w+)/ ? $1 : $_ } grep { !$chain{$_} } @fresh),
	'mcc_distance,mcc_matches,mcc_score', '... which notices a changed comment, privilege or definition');

$node->stop;
done_testing();
