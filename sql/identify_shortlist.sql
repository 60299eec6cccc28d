-- identify_shortlist(): a refinement shortlist of a given length, rescored,
-- returning the rows that fewer than k earlier rows beat by the refined
-- score and every row from window_from on, each equal to a brute force
-- written with mcc_score() (docs/sql-reference.md, "identify_shortlist");
-- the count row; ties of LSS; what the scale-out coordinator builds on it:
-- the k best of a prefix of any length are among the rows returned;
-- errors. The backend scan here; TAP tests compare the matcher engine's.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql
\i :abs_srcdir/sql/include/same.sql

-- 400 synthetic fingers and copies of every 20th under other ids (equal
-- LSS and refined scores: ties); 6 probes, 4 of them mated
CREATE TABLE sg (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO sg SELECT finger, template FROM mcc_synthetic(400, 1, 11);
INSERT INTO sg SELECT id + 100000, tpl FROM sg WHERE id % 20 = 0;
CREATE TABLE sp (pid int PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO sp SELECT f / 100 + 1, s.template
FROM generate_series(0, 399, 100) f, mcc_synthetic(1, 2, 11, f) s WHERE s.impression = 1;
INSERT INTO sp SELECT 5 + (finger - 90000)::int, template FROM mcc_synthetic(2, 1, 11, 90000);

-- the brute force: the first n rows by LSS (ties by id), numbered from 0,
-- rescored; each with how many earlier rows beat it by (score DESC, id)
CREATE FUNCTION brute_list(probe mcc_template, n bigint, method text)
RETURNS TABLE(id bigint, lss real, score real, pos bigint, beaten bigint) LANGUAGE sql STABLE AS $$
	WITH l AS (SELECT s.id, s.lss, mcc_score(probe, s.tpl, method) AS score,
					  row_number() OVER (ORDER BY s.lss DESC, s.id) - 1 AS pos
			   FROM (SELECT g.id, g.tpl, mcc_score(probe, g.tpl, 'lss') AS lss FROM sg g
					 ORDER BY 3 DESC, 1 LIMIT n) s)
	SELECT l.id, l.lss, l.score, l.pos,
		   (SELECT count(*) FROM l e WHERE e.pos < l.pos
			  AND (e.score > l.score OR (e.score = l.score AND e.id < l.id)))
	FROM l
$$;
-- identify_shortlist()'s rows (the count row apart) against the definition
CREATE FUNCTION check_list(n bigint, k int, w bigint, method text) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(pid || ': ' || same(
		format('SELECT id, lss, score, pos FROM identify_shortlist(''sg'', (SELECT tpl FROM sp WHERE pid = %s),
				%s, %s, %s, refine => %L) WHERE id IS NOT NULL', pid, n, k, w, method),
		format('SELECT id, lss, score, pos FROM brute_list((SELECT tpl FROM sp WHERE pid = %s), %s, %L)
				WHERE beaten < %s OR pos >= %s', pid, n, method, k, w)), '; ' ORDER BY pid)
	FROM sp
$$;

SELECT check_list(60, 3, 60, 'fused');		-- no window: the rows fewer than 3 beat
SELECT check_list(60, 1, 45, 'lss-dtr');	-- and the last 15
SELECT check_list(25, 10, 0, 'lsa-r');		-- window_from 0: every row
SELECT check_list(500, 5, 500, 'fused');	-- more than the gallery: all 420 rows
-- far fewer rows than the shortlist are returned for a small k
SELECT pid, count(*) FILTER (WHERE id IS NOT NULL) AS returned,
	   max(pos) FILTER (WHERE id IS NULL) AS shortlist
FROM sp, identify_shortlist('sg', sp.tpl, 300, 3, 300) GROUP BY pid ORDER BY pid;
-- the count row: the shortlist's length, last
SELECT id, lss, score, pos FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 50, 3, 50)
WHERE id IS NULL;
SELECT id, lss, score, pos FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 0, 3, 0);
SELECT count(*) FILTER (WHERE id IS NULL) AS count_rows, max(pos) FILTER (WHERE id IS NULL) AS len
FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 1000, 3, 1000);
-- ties: copies share the LSS and refined scores of their original
SELECT count(*) > 0 AS ties FROM brute_list((SELECT tpl FROM sp WHERE pid = 1), 420, 'fused') a
	JOIN brute_list((SELECT tpl FROM sp WHERE pid = 1), 420, 'fused') b ON a.id + 100000 = b.id
WHERE a.lss = b.lss AND a.score = b.score;

-- the coordinator's use: for every prefix length L of the shortlist, the
-- k best of the first L rows by (score DESC, id) are among the rows
-- returned (with window_from beyond the list: candidates only)
SELECT count(*) AS prefixes_checked,
	   count(*) FILTER (WHERE missing > 0) AS prefixes_missing_a_row
FROM sp, generate_series(1, 80) len,
	 LATERAL (SELECT count(*) AS missing
			  FROM (SELECT b.id FROM brute_list(sp.tpl, 80, 'fused') b WHERE b.pos < len
					ORDER BY b.score DESC, b.id LIMIT 4) best
			  WHERE best.id NOT IN (SELECT s.id FROM identify_shortlist('sg', sp.tpl, 80, 4, 80) s
									WHERE s.id IS NOT NULL)) m;

-- a row without a template is not in the shortlist; another key column
CREATE TABLE sg2 (key bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO sg2 SELECT id, tpl FROM sg;
INSERT INTO sg2 VALUES (-1, NULL);
SELECT same(
	$$SELECT id, lss, score, pos FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 2), 40, 3, 30)$$,
	$$SELECT id, lss, score, pos FROM identify_shortlist('sg2', (SELECT tpl FROM sp WHERE pid = 2), 40, 3, 30,
														 id_column => 'key')$$);

-- the default refine is mcc.refine_method
SELECT same(
	$$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 3), 30, 2, 20)$$,
	$$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 3), 30, 2, 20, refine => 'fused')$$);
SET mcc.refine_method = 'lsa-r';
SELECT same(
	$$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 3), 30, 2, 20)$$,
	$$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 3), 30, 2, 20, refine => 'lsa-r')$$);
RESET mcc.refine_method;

-- mcc_gallery_rows(): the rows with a template the statement sees (here
-- counted by the table; the matcher engine's count: TAP 033)
SELECT mcc_gallery_rows('sg') AS sg_rows, (SELECT count(*) FROM sg) AS sg_count,
	   mcc_gallery_rows('sg2', id_column => 'key') AS sg2_rows,
	   (SELECT count(*) FROM sg2 WHERE tpl IS NOT NULL) AS sg2_templates;
BEGIN;
DELETE FROM sg2 WHERE key % 3 = 0;
SELECT mcc_gallery_rows('sg2', 'key', 'tpl') = (SELECT count(*) FROM sg2 WHERE tpl IS NOT NULL) AS own_changes_counted;
ROLLBACK;

-- identify_shortlists() and mcc_galleries_rows(): several galleries and
-- probes in one call, each (gallery, probe) the rows of identify_shortlist()
-- with its own shortlist and window (the matcher engine's: TAP 033)
CREATE TABLE sg3 (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO sg3 SELECT id, tpl FROM sg WHERE id % 3 <> 0;
SELECT same(
	$$SELECT s.gallery_no, s.probe_no, s.id, s.lss, s.score, s.pos
	  FROM identify_shortlists(ARRAY['sg', 'sg3', 'sg']::regclass[], ARRAY(SELECT tpl FROM sp ORDER BY pid),
							   ARRAY[60, 40, 0], 3, ARRAY[45, 30, 0], refine => 'fused') s$$,
	$$SELECT g.no, p.pid, l.id, l.lss, l.score, l.pos
	  FROM (VALUES (1, 'sg'::regclass, 60, 45), (2, 'sg3', 40, 30), (3, 'sg', 0, 0)) g(no, rel, n, w), sp p,
		   LATERAL identify_shortlist(g.rel, p.tpl, g.n, 3, g.w, refine => 'fused') l$$)
	AS three_galleries;
SELECT same(
	$$SELECT s.gallery_no, s.probe_no, s.id, s.lss, s.score, s.pos
	  FROM identify_shortlists(ARRAY['sg2']::regclass[], ARRAY(SELECT tpl FROM sp ORDER BY pid), ARRAY[50], 2,
							   ARRAY[40], id_column => 'key') s$$,
	$$SELECT 1, p.pid, l.id, l.lss, l.score, l.pos
	  FROM sp p, LATERAL identify_shortlist('sg2', p.tpl, 50, 2, 40, id_column => 'key') l$$)
	AS another_key;
SELECT count(*) AS no_probes FROM identify_shortlists(ARRAY['sg']::regclass[], '{}', ARRAY[10], 3, ARRAY[0]);
SELECT count(*) AS no_galleries FROM identify_shortlists('{}', ARRAY(SELECT tpl FROM sp), '{}', 3, '{}');
SELECT mcc_galleries_rows(ARRAY['sg', 'sg3', 'sg']::regclass[])
		 = ARRAY[mcc_gallery_rows('sg'), mcc_gallery_rows('sg3'), mcc_gallery_rows('sg')] AS rows_in_order,
	   mcc_galleries_rows(ARRAY['sg2']::regclass[], 'key') = ARRAY[mcc_gallery_rows('sg2', 'key')] AS another_key,
	   mcc_galleries_rows('{}') AS none;

-- errors
SELECT sqlstate_of($$SELECT mcc_gallery_rows(NULL)$$);
SELECT sqlstate_of($$SELECT mcc_gallery_rows('sg', id_column => 'nope')$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 10, 0, 0)$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), -1, 3, 0)$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 10, 3, -2)$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 10, 3, 0, refine => 'none')$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 10, 3, 0, refine => 'bogus')$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', NULL, 10, 3, 0)$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), NULL, 3, 0)$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlist('sg', (SELECT tpl FROM sp WHERE pid = 1), 10, 3, 0, id_column => 'nope')$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlists(NULL, ARRAY(SELECT tpl FROM sp), '{}', 3, '{}')$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlists(ARRAY['sg']::regclass[], ARRAY[NULL::mcc_template], ARRAY[10], 3, ARRAY[0])$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlists(ARRAY['sg']::regclass[], ARRAY(SELECT tpl FROM sp), ARRAY[10, 20], 3, ARRAY[0])$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlists(ARRAY['sg']::regclass[], ARRAY(SELECT tpl FROM sp), ARRAY[NULL::bigint], 3, ARRAY[0])$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlists(ARRAY['sg']::regclass[], ARRAY(SELECT tpl FROM sp), ARRAY[10], 3, ARRAY[-1])$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlists(ARRAY['sg']::regclass[], ARRAY(SELECT tpl FROM sp), ARRAY[10], 0, ARRAY[0])$$);
SELECT sqlstate_of($$SELECT * FROM identify_shortlists(ARRAY['sg']::regclass[], ARRAY(SELECT tpl FROM sp), ARRAY[10], 3, ARRAY[0], refine => 'none')$$);
SELECT sqlstate_of($$SELECT mcc_galleries_rows(NULL)$$);
SELECT sqlstate_of($$SELECT mcc_galleries_rows(ARRAY['sg', NULL]::regclass[])$$);
SELECT sqlstate_of($$SELECT mcc_galleries_rows(ARRAY['sg']::regclass[], id_column => 'nope')$$);

DROP TABLE sg, sg2, sg3, sp;
DROP FUNCTION brute_list(mcc_template, bigint, text), check_list(bigint, int, bigint, text);
DROP FUNCTION try(text), sqlstate_of(text), same(text, text);
