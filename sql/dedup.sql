-- mcc_dedup() and mcc_dedup_probes(): deduplication (docs/dedup.md). The
-- answer equals the brute force of its definition written with mcc_score()
-- alone: pairs a.id < b.id of rows with a template whose
-- mcc_score(a, b, 'lss') >= the LSS threshold and mcc_score(a, b, method)
-- >= the threshold. Defaults, many candidates (a probe with more than the
-- first k of identify_batch()), batches, start_after / max_rows, the probe
-- variant, progress NOTICEs, row-level security, privileges, errors.

-- the progress NOTICEs only where they are the subject
SET client_min_messages = warning;

-- 40 synthetic fingers x 3 impressions (genuine pairs within a finger),
-- keys 10 f + i, plus a copy of row 0 (key 1000) and a row without a template
CREATE TABLE dd (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO dd SELECT 10 * finger + impression, template FROM mcc_synthetic(40, 3, 11);
INSERT INTO dd VALUES (1000, (SELECT tpl FROM dd WHERE id = 0)), (1001, NULL);

-- The definition, brute force: every pair, in canonical order (a.id < b.id,
-- a the probe).
CREATE FUNCTION brute_dedup(gallery regclass, lss_thr real, thr real, method text,
							start_after bigint DEFAULT NULL, max_rows bigint DEFAULT NULL,
							tcol name DEFAULT 'tpl')
RETURNS TABLE(id_a bigint, id_b bigint, lss real, score real)
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
		WITH a AS (SELECT id, %2$I AS tpl FROM %1$s WHERE %2$I IS NOT NULL
				   AND ($1::bigint IS NULL OR id > $1) ORDER BY id LIMIT $2),
		pairs AS (SELECT a.id AS id_a, b.id AS id_b, mcc_score(a.tpl, b.%2$I, 'lss') AS lss,
						 mcc_score(a.tpl, b.%2$I, $3) AS score
				  FROM a JOIN %1$s b ON b.id > a.id AND b.%2$I IS NOT NULL)
		SELECT * FROM pairs WHERE lss >= $4 AND score >= $5 ORDER BY id_a, id_b $q$, gallery, tcol)
	USING start_after, max_rows, method, lss_thr, thr;
END $$;

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any; same(q1,
-- q2): the result of a query over (id_a, id_b, lss, score) equals another's,
-- row for row and score for score, and how many rows
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql
\i :abs_srcdir/sql/include/same.sql

-- LSS is symmetric on these templates (the same score either way round);
-- the refined score is not, hence the canonical order of the definition
SELECT count(*) FILTER (WHERE mcc_score(a.tpl, b.tpl, 'lss') <> mcc_score(b.tpl, a.tpl, 'lss')) AS lss_asymmetric,
	   count(*) FILTER (WHERE mcc_score(a.tpl, b.tpl, 'fused') <> mcc_score(b.tpl, a.tpl, 'fused')) > 0 AS fused_asymmetric
FROM dd a JOIN dd b ON a.id < b.id WHERE a.id < 60 AND b.id < 60;

-- the defaults: fmr 1e-4 for the method (mcc.refine_method, fused), LSS at 1e-3
SELECT * FROM mcc_dedup_settings('dd', 0.0001, NULL, 0.001, NULL, NULL, NULL, NULL);
SELECT same('SELECT * FROM mcc_dedup(''dd'')',
			$$SELECT * FROM brute_dedup('dd', mcc_threshold(0.001, 'lss'), mcc_threshold(0.0001, 'fused'), 'fused')$$)
	AS defaults;
-- every genuine pair is found, and the copy of row 0
SELECT id_a, id_b, lss > 0.99 AS same_template FROM mcc_dedup('dd') WHERE id_a / 10 <> id_b / 10;
SELECT count(*) AS genuine_pairs_found FROM mcc_dedup('dd') WHERE id_a / 10 = id_b / 10;

-- every row a candidate (LSS threshold 0): each probe gets more rows than
-- identify_batch()'s first k = 64, and asks again; small batches
SELECT same('SELECT * FROM mcc_dedup(''dd'', threshold => 0.02, lss_threshold => 0, batch_size => 7)',
			$$SELECT * FROM brute_dedup('dd', 0, 0.02, 'fused')$$) AS all_candidates;
-- other methods: refine 'none' is LSS alone, lss-dtr, a set mcc.refine_method
SELECT same('SELECT * FROM mcc_dedup(''dd'', refine => ''none'', threshold => 0.3, lss_threshold => 0.2)',
			$$SELECT * FROM brute_dedup('dd', 0.2, 0.3, 'lss')$$) AS lss_only,
	   same('SELECT * FROM mcc_dedup(''dd'', fmr => 0.001, lss_threshold => 0.3, refine => ''dtr'')',
			$$SELECT * FROM brute_dedup('dd', 0.3, mcc_threshold(0.001, 'lss-dtr'), 'lss-dtr')$$) AS dtr;
SET mcc.refine_method = 'lgs';
SELECT same('SELECT * FROM mcc_dedup(''dd'', fmr => 0.01, lss_threshold => 0.3)',
			$$SELECT * FROM brute_dedup('dd', 0.3, mcc_threshold(0.01, 'lgs'), 'lgs')$$) AS lgs_setting;
RESET mcc.refine_method;

-- resuming: the probes after start_after, max_rows at a time, make up the whole
SELECT same($$SELECT * FROM mcc_dedup('dd', threshold => 0.02, lss_threshold => 0.3, start_after => 155, max_rows => 50)$$,
			$$SELECT * FROM brute_dedup('dd', 0.3, 0.02, 'fused', 155, 50)$$) AS part,
	   same($$SELECT * FROM mcc_dedup('dd', threshold => 0.02, lss_threshold => 0.3, max_rows => 37, batch_size => 10)
			  UNION ALL
			  SELECT * FROM mcc_dedup('dd', threshold => 0.02, lss_threshold => 0.3, start_after => 120)$$,
			$$SELECT * FROM brute_dedup('dd', 0.3, 0.02, 'fused')$$) AS two_parts,
	   (SELECT max(id) FROM (SELECT id FROM dd WHERE tpl IS NOT NULL ORDER BY id LIMIT 37) r) AS last_of_37;
SELECT count(*) AS nothing_after_the_last FROM mcc_dedup('dd', start_after => 1000);
SELECT count(*) AS no_rows FROM mcc_dedup('dd', max_rows => 0);

-- progress: a NOTICE per percent of the probes done (3 batches here)
SET client_min_messages = notice;
SELECT count(*) FROM mcc_dedup('dd', threshold => 0.02, lss_threshold => 0.3, batch_size => 50);
SET client_min_messages = warning;

-- a table with two template columns (named), a view
CREATE TABLE dd2 AS SELECT id, tpl, CASE WHEN id % 2 = 0 THEN tpl END AS other FROM dd;
SELECT same($$SELECT * FROM mcc_dedup('dd2', threshold => 0.02, lss_threshold => 0.3, id_column => 'id', template_column => 'other')$$,
			$$SELECT * FROM brute_dedup('dd2', 0.3, 0.02, 'fused', tcol => 'other')$$) AS other_column;
CREATE VIEW dd_v AS SELECT id AS key, tpl FROM dd WHERE id < 200;
SELECT same($$SELECT * FROM mcc_dedup('dd_v', threshold => 0.02, lss_threshold => 0.3, id_column => 'key')$$,
			$$SELECT * FROM brute_dedup('dd', 0.3, 0.02, 'fused') WHERE id_b < 200$$) AS view_gallery;

-- a job in parts: interrupted after 2 parts of 25 probes (max_parts), its
-- progress kept; resumed, it completes; the pairs equal the whole dedup's,
-- none twice; a finished job does nothing more
CREATE TABLE dd_pairs (id_a bigint, id_b bigint, lss real, score real);
CALL mcc_dedup_run('j1', 'dd', 'dd_pairs', part_rows => 25, threshold => 0.02, lss_threshold => 0.3,
				   max_parts => 2);
SELECT job, gallery, target, method, threshold, lss_threshold, last_key, rows_done, rows_total,
	   pairs = (SELECT count(*) FROM dd_pairs) AS pairs_written, finished_at IS NULL AS unfinished
FROM mcc_dedup_jobs;
SELECT same('SELECT * FROM dd_pairs', $$SELECT * FROM brute_dedup('dd', 0.3, 0.02, 'fused', NULL, 50)$$) AS two_parts;
CALL mcc_dedup_run('j1');
SELECT last_key, rows_done, pairs, finished_at IS NOT NULL AS finished FROM mcc_dedup_jobs WHERE job = 'j1';
SELECT same('SELECT * FROM dd_pairs', $$SELECT * FROM brute_dedup('dd', 0.3, 0.02, 'fused')$$) AS resumed_whole;
SET client_min_messages = notice;
CALL mcc_dedup_run('j1');
SET client_min_messages = warning;
SELECT count(*) = (SELECT count(*) FROM brute_dedup('dd', 0.3, 0.02, 'fused')) AS nothing_added FROM dd_pairs;
-- a job with the defaults; errors
CREATE TABLE dd_pairs2 (LIKE dd_pairs);
CALL mcc_dedup_run('j2', 'dd', 'dd_pairs2');
SELECT same('SELECT * FROM dd_pairs2',
			$$SELECT * FROM brute_dedup('dd', mcc_threshold(0.001, 'lss'), mcc_threshold(0.0001, 'fused'), 'fused')$$) AS job_defaults;
SELECT sqlstate_of(q) AS error FROM (VALUES
	('CALL mcc_dedup_run(NULL)'),
	('CALL mcc_dedup_run(''j3'')'),
	('CALL mcc_dedup_run(''j3'', ''dd'', ''dd_pairs'', part_rows => 0)'),
	('CALL mcc_dedup_run(''j1'', ''dd2'')'),
	('CALL mcc_dedup_run(''j3'', ''dd'', ''dd_pairs'', threshold => 2)')
) v(q);
SELECT count(*) AS jobs FROM mcc_dedup_jobs;

-- new enrolments against the gallery: impression 3 of fingers 0..4 and an
-- unknown finger; per probe every row at or above both thresholds
CREATE TABLE newcomers (n int, tpl mcc_template);
INSERT INTO newcomers SELECT finger, template FROM mcc_synthetic(5, 4, 11) WHERE impression = 3;
INSERT INTO newcomers SELECT 5, template FROM mcc_synthetic(1, 1, 11, 500);
CREATE FUNCTION brute_probes(probes mcc_template[], lss_thr real, thr real, method text)
RETURNS TABLE(probe_no int, id bigint, lss real, score real) LANGUAGE sql STABLE AS $$
	SELECT * FROM (SELECT p.o::int, g.id, mcc_score(p.t, g.tpl, 'lss') AS lss, mcc_score(p.t, g.tpl, method) AS score
				   FROM unnest(probes) WITH ORDINALITY p(t, o) JOIN dd g ON g.tpl IS NOT NULL) r
	WHERE lss >= lss_thr AND score >= thr ORDER BY 1, 2
$$;
SELECT same($$SELECT * FROM mcc_dedup_probes('dd', ARRAY(SELECT tpl FROM newcomers ORDER BY n))$$,
			$$SELECT * FROM brute_probes(ARRAY(SELECT tpl FROM newcomers ORDER BY n),
										 mcc_threshold(0.001, 'lss'), mcc_threshold(0.0001, 'fused'), 'fused')$$) AS probes_defaults,
	   same($$SELECT * FROM mcc_dedup_probes('dd', ARRAY(SELECT tpl FROM newcomers ORDER BY n), threshold => 0.02,
											 lss_threshold => 0, batch_size => 4)$$,
			$$SELECT * FROM brute_probes(ARRAY(SELECT tpl FROM newcomers ORDER BY n), 0, 0.02, 'fused')$$) AS probes_all;
SELECT probe_no, array_agg(id ORDER BY id) AS matches
FROM mcc_dedup_probes('dd', ARRAY(SELECT tpl FROM newcomers ORDER BY n)) GROUP BY probe_no ORDER BY 1;
SELECT count(*) AS no_probes FROM mcc_dedup_probes('dd', '{}');

-- row-level security: the caller's rows only, pairs and probes alike;
-- without SELECT on the gallery, the error of identify()
CREATE ROLE regress_mcc_dedup;
GRANT SELECT ON dd TO regress_mcc_dedup;
ALTER TABLE dd ENABLE ROW LEVEL SECURITY;
CREATE POLICY even_fingers ON dd FOR SELECT TO regress_mcc_dedup USING ((id / 10) % 2 = 0);
SET ROLE regress_mcc_dedup;
SELECT same($$SELECT * FROM mcc_dedup('dd', threshold => 0.02, lss_threshold => 0.3)$$,
			$$SELECT * FROM brute_dedup('dd', 0.3, 0.02, 'fused')$$) AS rls_same,
	   (SELECT bool_and((id_a / 10) % 2 = 0 AND (id_b / 10) % 2 = 0) FROM mcc_dedup('dd', threshold => 0.02, lss_threshold => 0.3)) AS visible_only,
	   (SELECT count(DISTINCT id_a) FROM mcc_dedup('dd', threshold => 0.02, lss_threshold => 0.3)) > 0 AS some;
RESET ROLE;
ALTER TABLE dd DISABLE ROW LEVEL SECURITY;
REVOKE SELECT ON dd FROM regress_mcc_dedup;
GRANT SELECT (id) ON dd TO regress_mcc_dedup;
SET ROLE regress_mcc_dedup;
\set VERBOSITY terse
SELECT count(*) FROM mcc_dedup('dd');
\set VERBOSITY default
RESET ROLE;
REVOKE ALL ON dd FROM regress_mcc_dedup;
DROP POLICY even_fingers ON dd;
DROP ROLE regress_mcc_dedup;

-- errors, with their SQLSTATE; a bad call leaves nothing behind
CREATE TABLE no_template (id int PRIMARY KEY, x int);
-- persons: 30 persons x 2 fingers (positions 1, 2); persons 100-104
-- enrolled again (the other impression of both fingers), person 105 again
-- with finger 1 only, person 106 with person 6's finger 1 at position 2
-- (another position: not a candidate), a row without a person
CREATE TABLE ppl (id bigint PRIMARY KEY, person int, finger smallint, tpl mcc_template);
INSERT INTO ppl SELECT finger, finger / 2, finger % 2 + 1, template FROM mcc_synthetic(60, 1, 13);
INSERT INTO ppl SELECT 1000 + finger, 100 + finger / 2, finger % 2 + 1, template
FROM mcc_synthetic(12, 2, 13) WHERE impression = 1 AND finger <> 11;
INSERT INTO ppl SELECT 2000, 106, 2, template FROM mcc_synthetic(1, 2, 13, 12) WHERE impression = 1;
INSERT INTO ppl SELECT 2001, NULL, 1, template FROM mcc_synthetic(1, 2, 13, 14) WHERE impression = 1;
CREATE FUNCTION brute_persons(lss_thr real, thr real, method text)
RETURNS TABLE(person_a bigint, person_b bigint, score real, fingers int, matched_fingers int,
			  finger_scores real[], positions int[]) LANGUAGE sql STABLE AS $$
	WITH r AS (SELECT id, person::int8 AS person, finger::int AS pos, tpl FROM ppl
			   WHERE tpl IS NOT NULL AND person IS NOT NULL AND finger IS NOT NULL),
	rp AS (SELECT a.person AS p1, b.person AS p2, a.pos FROM r a JOIN r b ON b.id > a.id
		   WHERE a.person <> b.person AND a.pos = b.pos
			 AND mcc_score(a.tpl, b.tpl, 'lss') >= lss_thr AND mcc_score(a.tpl, b.tpl, method) >= thr),
	cand AS (SELECT least(p1, p2) AS pa, greatest(p1, p2) AS pb, count(DISTINCT pos)::int AS matched
			 FROM rp GROUP BY 1, 2),
	best AS (SELECT c.pa, c.pb, x.pos,
					max(mcc_score(CASE WHEN x.id < y.id THEN x.tpl ELSE y.tpl END,
								  CASE WHEN x.id < y.id THEN y.tpl ELSE x.tpl END, method)) AS score
			 FROM cand c JOIN r x ON x.person = c.pa JOIN r y ON y.person = c.pb AND y.pos = x.pos
			 GROUP BY 1, 2, 3)
	SELECT c.pa, c.pb, avg(b.score::float8)::real, count(*)::int, c.matched,
		   array_agg(b.score ORDER BY b.pos), array_agg(b.pos ORDER BY b.pos)
	FROM cand c JOIN best b USING (pa, pb) GROUP BY c.pa, c.pb, c.matched ORDER BY 1, 2
$$;
SELECT same($$SELECT * FROM mcc_dedup_persons('ppl')$$,
			$$SELECT * FROM brute_persons(mcc_threshold(0.001, 'lss'), mcc_threshold(0.0001, 'fused'), 'fused')$$) AS persons_defaults,
	   same($$SELECT * FROM mcc_dedup_persons('ppl', threshold => 0.02, lss_threshold => 0.2)$$,
			$$SELECT * FROM brute_persons(0.2, 0.02, 'fused')$$) AS persons_more;
SELECT person_a, person_b, fingers, matched_fingers, positions FROM mcc_dedup_persons('ppl');
SELECT q AS arguments, sqlstate_of('SELECT * FROM mcc_dedup_persons(' || q || ')') AS error FROM (VALUES
	('''ppl'', person_column => NULL'),
	('''ppl'', person_column => ''who'''),
	('''ppl'', position_column => ''tpl'''),
	('''dd''')
) v(q);

SELECT q AS arguments, sqlstate_of('SELECT * FROM mcc_dedup(' || q || ')') AS error FROM (VALUES
	('NULL'),
	('''dd'', fmr => NULL'),
	('''dd'', lss_fmr => NULL'),
	('''dd'', fmr => 0.5'),
	('''dd'', fmr => 0'),
	('''dd'', threshold => 1.5'),
	('''dd'', threshold => ''NaN'''),
	('''dd'', lss_threshold => -0.1'),
	('''dd'', refine => ''nope'''),
	('''dd'', refine => ''lss-r'', fmr => 0.5, threshold => 0.1'),
	('''dd'', batch_size => 0'),
	('''dd'', batch_size => NULL'),
	('''dd'', max_rows => -1'),
	('''dd'', id_column => ''nope'''),
	('''dd'', template_column => ''id'''),
	('''no_template'''),
	('''dd2'''),
	('''no_such_table''')
) v(q);
SELECT q AS arguments, sqlstate_of('SELECT * FROM mcc_dedup_probes(' || q || ')') AS error FROM (VALUES
	('''dd'', NULL'),
	('NULL, ARRAY[(SELECT tpl FROM dd WHERE id = 0)]'),
	('''dd'', ARRAY[(SELECT tpl FROM dd WHERE id = 0), NULL]'),
	('''dd'', ARRAY[ARRAY[(SELECT tpl FROM dd WHERE id = 0)]]'),
	('''dd'', ARRAY[(SELECT tpl FROM dd WHERE id = 0)], batch_size => -3'),
	('''dd'', ARRAY[(SELECT tpl FROM dd WHERE id = 0)], fmr => 2'),
	('''dd'', ARRAY[mcc_template_from_json(''{"profile":"tpami2010","width":300,"height":300,"minutiae":[[100,100,1.5708,"ending",50]]}'')]')
) v(q);
-- mcc_dedup_rescore(), the rescoring of a batch's pairs (here in the
-- backend: dd is not registered): per pair mcc_score(probe, template,
-- method), bit for bit, whatever the order of the pairs (the probes
-- alternate here); none, an empty answer; its argument errors
CREATE TEMP TABLE rp AS
	SELECT row_number() OVER (ORDER BY g.id DESC)::int AS o, (1 + g.id % 3)::int AS no, g.tpl
	FROM dd g WHERE g.tpl IS NOT NULL AND g.id < 100;
SELECT m AS method, cardinality(r) AS pairs,
	   r = (SELECT array_agg(mcc_score(pr.probes[no], tpl, m) ORDER BY o) FROM rp) AS equal
FROM (SELECT array_agg(tpl ORDER BY id) AS probes FROM dd WHERE id IN (0, 11, 22)) pr,
	 unnest(ARRAY['fused', 'lss', 'lss-dtr', 'lgs-r', 'consolidation']) m,
	 LATERAL (SELECT mcc_dedup_rescore('dd', pr.probes, (SELECT array_agg(no ORDER BY o) FROM rp),
									   (SELECT array_agg(tpl ORDER BY o) FROM rp), m) AS r) x;
SELECT mcc_dedup_rescore('dd', ARRAY[(SELECT tpl FROM dd WHERE id = 0)], '{}', '{}', 'fused') AS no_pairs;
SELECT q AS arguments, sqlstate_of('SELECT mcc_dedup_rescore(' || q || ')') AS error FROM (VALUES
	('''dd'', ARRAY[(SELECT tpl FROM dd WHERE id = 0)], ''{1,1}'', ARRAY[(SELECT tpl FROM dd WHERE id = 1)], ''fused'''),
	('''dd'', ARRAY[(SELECT tpl FROM dd WHERE id = 0)], ''{2}'', ARRAY[(SELECT tpl FROM dd WHERE id = 1)], ''fused'''),
	('''dd'', ARRAY[(SELECT tpl FROM dd WHERE id = 0)], ''{1}'', ARRAY[(SELECT tpl FROM dd WHERE id = 1)], ''nope'''),
	('''dd'', ARRAY[(SELECT tpl FROM dd WHERE id = 0)], ''{1}'', ARRAY[NULL::mcc_template], ''fused'''),
	('NULL, ARRAY[(SELECT tpl FROM dd WHERE id = 0)], ''{1}'', ARRAY[(SELECT tpl FROM dd WHERE id = 1)], ''fused''')
) v(q);
DROP TABLE rp;

SELECT sqlstate_of('SELECT mcc_refine_method(''nope'')') AS unknown, mcc_refine_method('none') AS none,
	   mcc_refine_method('dtr') AS dtr, mcc_refine_method() AS setting;

-- the next test files share this database
DELETE FROM mcc_dedup_jobs;
DROP VIEW dd_v;
DROP TABLE dd, dd2, no_template, ppl, newcomers, dd_pairs, dd_pairs2;
DROP FUNCTION brute_dedup, same, brute_probes, brute_persons, try, sqlstate_of;
