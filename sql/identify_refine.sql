-- identify(..., refine => ...) in the backend: the LSS shortlist of n' rows
-- rescored with every method equals a brute force written with mcc_score();
-- 'none' is plain LSS; min_score applies to the refined score; the settings
-- mcc.refine_fraction and mcc.refine_min; NULL templates; partitions, views
-- and row-level security; a gallery larger than the planner thinks; the
-- default (NULL: mcc.refine_method, 'fused') and positional calls;
-- identify_batch(); errors.

-- 600 synthetic fingers (impression 0, id = finger); 12 probes: impression 1
-- of 9 gallery fingers and 3 fingers that are not in the gallery
CREATE TABLE rg (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO rg SELECT finger, template FROM mcc_synthetic(600, 1, 7);
CREATE TABLE rp (pid int PRIMARY KEY, finger bigint, tpl mcc_template NOT NULL);
INSERT INTO rp SELECT f / 70 + 1, s.finger, s.template
FROM generate_series(0, 599, 70) f, mcc_synthetic(1, 2, 7, f) s WHERE s.impression = 1;
INSERT INTO rp SELECT 10 + (finger - 50000)::int, finger, template FROM mcc_synthetic(3, 1, 7, 50000);
SELECT count(*) AS gallery FROM rg;
SELECT count(*) AS probes FROM rp;

-- Brute force, from the definition: n rows with a template; n' = ceil(f n),
-- at least mcc.refine_min and k, at most n; the n' best by
-- mcc_score(probe, tpl, 'lss'), ties by key; rescored with
-- mcc_score(probe, tpl, method); the k best of those scoring at least
-- min_score, ties by key. 'none' is plain LSS over every row; NULL is the
-- method of mcc.refine_method.
CREATE FUNCTION brute_refined(gallery regclass, probe mcc_template, k int, min_score real,
							  refine text, key name DEFAULT 'id')
RETURNS TABLE(id bigint, score real, n bigint) LANGUAGE plpgsql STABLE AS $$
DECLARE
	nrows bigint;
	f float8 := current_setting('mcc.refine_fraction')::float8;
	m bigint := current_setting('mcc.refine_min')::bigint;
	np bigint;
	method text := CASE coalesce(refine, current_setting('mcc.refine_method'))
				   WHEN 'dtr' THEN 'lss-dtr' ELSE coalesce(refine, current_setting('mcc.refine_method')) END;
BEGIN
	IF method = 'none' THEN
		RETURN QUERY EXECUTE format(
			'SELECT key::bigint, s, row_number() OVER (ORDER BY s DESC, key)
			 FROM (SELECT %I AS key, mcc_score($1, tpl, ''lss'') AS s FROM %s WHERE tpl IS NOT NULL) b
			 WHERE s >= $3 ORDER BY s DESC, key LIMIT $2', key, gallery)
			USING probe, k, min_score;
		RETURN;
	END IF;
	EXECUTE format('SELECT count(*) FROM %s WHERE tpl IS NOT NULL', gallery) INTO nrows;
	np := least(nrows, greatest(ceil(f * nrows)::bigint, m, k::bigint));
	RETURN QUERY EXECUTE format(
		'SELECT key::bigint, r, row_number() OVER (ORDER BY r DESC, key)
		 FROM (SELECT key, mcc_score($1, tpl, $5) AS r
			   FROM (SELECT %I AS key, tpl FROM %s WHERE tpl IS NOT NULL
					 ORDER BY mcc_score($1, tpl, ''lss'') DESC, 1 LIMIT $4) shortlist) s
		 WHERE r >= $3 ORDER BY r DESC, key LIMIT $2', key, gallery)
		USING probe, k, min_score, np, method;
END $$;
-- identify(), ranks included, equals the brute force
CREATE FUNCTION same_refined(gallery regclass, probe mcc_template, k int, min_score real,
							 refine text, id_column name DEFAULT NULL, key name DEFAULT 'id')
RETURNS bool LANGUAGE sql STABLE AS $$
	SELECT NOT EXISTS (SELECT t.id, t.score, t.n
					   FROM identify(gallery, probe, k, min_score, id_column, refine => refine)
							WITH ORDINALITY t(id, score, n)
					   EXCEPT SELECT * FROM brute_refined(gallery, probe, k, min_score, refine, key))
	   AND NOT EXISTS (SELECT * FROM brute_refined(gallery, probe, k, min_score, refine, key)
					   EXCEPT SELECT t.id, t.score, t.n
					   FROM identify(gallery, probe, k, min_score, id_column, refine => refine)
							WITH ORDINALITY t(id, score, n))
	   AND (SELECT count(*) FROM identify(gallery, probe, k, min_score, id_column, refine => refine))
		   = (SELECT count(*) FROM brute_refined(gallery, probe, k, min_score, refine, key))
$$;

SHOW mcc.refine_fraction;
SHOW mcc.refine_min;
SHOW mcc.refine_method;

-- Every refinement name, 12 probes, k = 10: n' = 100 of 600 rows
CREATE TABLE methods (ord serial, refine text);
INSERT INTO methods (refine) VALUES ('none'), ('dtr'), ('lss'), ('lss-r'), ('lss-dtr'), ('lsa'),
	('lsa-r'), ('lsa-dtr'), ('lgs'), ('lgs-r'), ('lgs-dtr'), ('consolidation'), ('fused'), (NULL);
SELECT m.refine, count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 10, 0, m.refine)) AS equal
FROM methods m, rp p GROUP BY m.ord, m.refine ORDER BY m.ord;
-- 'lss' rescores with LSS itself: the same answer as 'none'
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE NOT EXISTS (
		   SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'lss') WITH ORDINALITY
		   EXCEPT SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'none') WITH ORDINALITY)) AS lss_equals_none
FROM rp p;
-- the refinement changes the answer: scores differ from LSS, and for the
-- mated probes the refined top score is the mate's more often, or as often
SELECT count(*) FILTER (WHERE d.score <> l.score) > 0 AS dtr_scores_differ_from_lss
FROM rp p, identify('rg', p.tpl, 1, 0, refine => 'dtr') d, identify('rg', p.tpl, 1, 0, refine => 'none') l;
SELECT count(*) FILTER (WHERE d.id = p.finger) AS dtr_rank1,
	   count(*) FILTER (WHERE l.id = p.finger) AS lss_rank1,
	   count(*) FILTER (WHERE d.id = p.finger) >= count(*) FILTER (WHERE l.id = p.finger) AS dtr_not_worse
FROM rp p, identify('rg', p.tpl, 1, 0, refine => 'dtr') d, identify('rg', p.tpl, 1, 0, refine => 'none') l
WHERE p.pid <= 9;
-- 'dtr' is 'lss-dtr' under another name
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE NOT EXISTS (
		   SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'dtr') WITH ORDINALITY
		   EXCEPT SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'lss-dtr') WITH ORDINALITY)
		 AND NOT EXISTS (
		   SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'lss-dtr') WITH ORDINALITY
		   EXCEPT SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'dtr') WITH ORDINALITY)) AS dtr_is_lss_dtr
FROM rp p;
-- the default is mcc.refine_method, 'fused', and refine comes last: a call
-- that passes the column names by position still means them (refined with
-- 'fused', as brute force)
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE NOT EXISTS (
		   SELECT * FROM identify('rg', p.tpl) WITH ORDINALITY
		   EXCEPT SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'fused') WITH ORDINALITY)) AS default_is_fused,
	   count(*) FILTER (WHERE NOT EXISTS (
		   SELECT * FROM identify('rg', p.tpl, 7, 0.1, 'id', 'tpl') WITH ORDINALITY
		   EXCEPT SELECT * FROM brute_refined('rg', p.tpl, 7, 0.1, 'fused'))
		 AND (SELECT count(*) FROM identify('rg', p.tpl, 7, 0.1, 'id', 'tpl'))
			 = (SELECT count(*) FROM brute_refined('rg', p.tpl, 7, 0.1, 'fused'))) AS positional_columns
FROM rp p;
-- the setting picks another default: plain LSS, or paper 000's LSS-DTR
SET mcc.refine_method = 'none';
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE NOT EXISTS (
		   SELECT * FROM identify('rg', p.tpl) WITH ORDINALITY
		   EXCEPT SELECT * FROM brute_refined('rg', p.tpl, 10, 0, 'none'))) AS default_is_none
FROM rp p;
SET mcc.refine_method = 'dtr';
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE same_refined('rg', p.tpl, 10, 0, NULL)
						AND NOT EXISTS (
		   SELECT * FROM identify('rg', p.tpl) WITH ORDINALITY
		   EXCEPT SELECT * FROM identify('rg', p.tpl, 10, 0, refine => 'lss-dtr') WITH ORDINALITY)) AS default_is_dtr
FROM rp p;
RESET mcc.refine_method;
-- the defaults put more mates first than plain LSS does, never fewer
SELECT count(*) FILTER (WHERE d.id = p.finger) AS default_rank1,
	   count(*) FILTER (WHERE l.id = p.finger) AS lss_rank1,
	   count(*) FILTER (WHERE d.id = p.finger) >= count(*) FILTER (WHERE l.id = p.finger) AS default_not_worse
FROM rp p, identify('rg', p.tpl, 1) d, identify('rg', p.tpl, 1, 0, refine => 'none') l
WHERE p.pid <= 9;
-- bad values of the setting are refused, naming the choices
SET mcc.refine_method = 'nosuch';
SET mcc.refine_method = '';
SHOW mcc.refine_method;

-- min_score applies to the refined score: with each probe's 4th best refined
-- score as threshold, exactly the shortlisted rows scoring at least that
CREATE TABLE rmins AS
SELECT p.pid, b.score AS min_score FROM rp p, brute_refined('rg', p.tpl, 4, 0, 'dtr') b WHERE b.n = 4;
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE same_refined('rg', p.tpl, 600, m.min_score, 'dtr')) AS equal,
	   min((SELECT count(*) FROM identify('rg', p.tpl, 600, m.min_score, refine => 'dtr'))) >= 4 AS at_least_4_each
FROM rp p JOIN rmins m USING (pid);
-- LSS scores are not what min_score filters: a threshold just above the
-- best refined score of the shortlist returns nothing, whatever the LSS
-- scores (k is part of n': the same k on both sides)
SELECT sum((SELECT count(*) FROM identify('rg', p.tpl, 1, b.best::real, refine => 'dtr'))) AS above_best_refined,
	   count(*) FILTER (WHERE (SELECT score FROM identify('rg', p.tpl, 1, 0, refine => 'none')) > b.best)
		 AS probes_with_lss_scores_above_it
FROM rp p, LATERAL (SELECT max(score) + 0.001 AS best FROM brute_refined('rg', p.tpl, 1, 0, 'dtr')) b;

-- The settings. A shortlist of 10 (mcc.refine_min 10, k 5): every answer is
-- among the 10 best by LSS, and equals the brute force
SET mcc.refine_min = 10;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 5, 0, 'dtr')) AS equal,
	   bool_and(t.id IN (SELECT id FROM identify('rg', p.tpl, 10, 0, refine => 'none'))) AS all_in_lss_top_10
FROM rp p, LATERAL (SELECT id FROM identify('rg', p.tpl, 5, 0, refine => 'dtr')) t;
-- k larger than mcc.refine_min: n' = k
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 40, 0, 'lgs-r')) AS equal,
	   min((SELECT count(*) FROM identify('rg', p.tpl, 40, 0, refine => 'lgs-r'))) AS rows_each
FROM rp p;
-- no fraction and no minimum: n' = k, the k best by LSS reordered
SET mcc.refine_fraction = 0;
SET mcc.refine_min = 0;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 6, 0, 'lsa-r')) AS equal,
	   bool_and((SELECT array_agg(id ORDER BY id) FROM identify('rg', p.tpl, 6, 0, refine => 'lsa-r'))
				= (SELECT array_agg(id ORDER BY id) FROM identify('rg', p.tpl, 6, 0, refine => 'none')))
		 AS same_ids_as_lss
FROM rp p;
-- ceil: 1.1 % of 600 rows is 6.6, so n' = 7 (k = 1): the answer is among
-- the 7 best by LSS and equals the brute force
SET mcc.refine_fraction = 0.011;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 1, 0, 'consolidation')) AS equal,
	   bool_and(t.id IN (SELECT id FROM identify('rg', p.tpl, 7, 0, refine => 'none'))) AS in_lss_top_7
FROM rp p, LATERAL identify('rg', p.tpl, 1, 0, refine => 'consolidation') t;
RESET mcc.refine_min;
-- a quarter of the gallery: n' = 150
SET mcc.refine_fraction = 0.25;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 10, 0, 'dtr')) AS equal
FROM rp p;
-- the whole gallery, and a minimum beyond it: n' = n
SET mcc.refine_fraction = 1;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 10, 0, 'consolidation')) AS equal
FROM rp p WHERE pid % 3 = 0;
SET mcc.refine_fraction = 0;
SET mcc.refine_min = 100000;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rg', p.tpl, 1000, 0, 'dtr')) AS equal,
	   min((SELECT count(*) FROM identify('rg', p.tpl, 1000, 0, refine => 'dtr'))) AS rows_each
FROM rp p WHERE pid % 4 = 0;
RESET mcc.refine_fraction;
RESET mcc.refine_min;
-- bad values are refused
SET mcc.refine_fraction = 1.5;
SET mcc.refine_fraction = -0.001;
SET mcc.refine_min = -1;
SET mcc.refine_fraction = 'lots';
SHOW mcc.refine_fraction;
SHOW mcc.refine_min;

-- NULL templates are not rows of n: of 300 rows 75 have a template, so
-- 20 % is n' = 15 (it would be 60 if the NULL rows counted)
CREATE TABLE rgnull (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO rgnull SELECT id, CASE WHEN id % 4 = 0 THEN tpl END FROM rg WHERE id < 300;
SET mcc.refine_min = 0;
SET mcc.refine_fraction = 0.2;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rgnull', p.tpl, 3, 0, 'consolidation')) AS equal
FROM rp p;
CREATE TABLE rnull15 AS
SELECT p.pid, b.* FROM rp p, brute_refined('rgnull', p.tpl, 3, 0, 'consolidation') b;
-- that test can fail: with n' = 60 the answer differs for some probes
SET mcc.refine_fraction = 0.8;
SELECT count(DISTINCT p.pid) AS probes_answered_otherwise_with_60
FROM rp p, LATERAL (SELECT * FROM brute_refined('rgnull', p.tpl, 3, 0, 'consolidation')
					EXCEPT SELECT id, score, n FROM rnull15 WHERE pid = p.pid) x;
RESET mcc.refine_fraction;
RESET mcc.refine_min;
-- no rows, or no templates: nothing
SELECT count(*) FROM identify('rgnull', (SELECT tpl FROM rp WHERE pid = 1), 10, 0, refine => 'dtr') WHERE false;
UPDATE rgnull SET tpl = NULL;
SELECT count(*) FROM identify('rgnull', (SELECT tpl FROM rp WHERE pid = 1), 10, 0, refine => 'dtr');

-- Partitions: the same answer as the plain table; a view: as brute force
-- over it; row-level security: as brute force run by the same role
CREATE TABLE rgp (id bigint PRIMARY KEY, tpl mcc_template) PARTITION BY RANGE (id);
CREATE TABLE rgp0 PARTITION OF rgp FOR VALUES FROM (0) TO (250);
CREATE TABLE rgp1 PARTITION OF rgp FOR VALUES FROM (250) TO (MAXVALUE);
INSERT INTO rgp SELECT * FROM rg;
SELECT count(*) AS probes, count(*) FILTER (WHERE NOT EXISTS (
		   SELECT * FROM identify('rgp', p.tpl, 15, 0, refine => 'lsa-dtr') WITH ORDINALITY
		   EXCEPT SELECT * FROM identify('rg', p.tpl, 15, 0, refine => 'lsa-dtr') WITH ORDINALITY)) AS equal
FROM rp p;
CREATE VIEW rgv AS SELECT id, tpl FROM rg WHERE id % 3 <> 1;
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE same_refined('rgv', p.tpl, 10, 0, 'dtr', 'id')) AS equal
FROM rp p;
CREATE ROLE regress_mcc_refiner;
CREATE TABLE rgrls (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO rgrls SELECT id, tpl FROM rg;
ALTER TABLE rgrls ENABLE ROW LEVEL SECURITY;
CREATE POLICY odd_only ON rgrls FOR SELECT TO regress_mcc_refiner USING (id % 2 = 1);
GRANT SELECT ON rgrls, rp TO regress_mcc_refiner;
SET mcc.refine_fraction = 0.5;
SET ROLE regress_mcc_refiner;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_refined('rgrls', p.tpl, 10, 0, 'dtr')) AS equal,
	   bool_and(NOT EXISTS (SELECT FROM identify('rgrls', p.tpl, 300, 0, refine => 'dtr') t WHERE t.id % 2 = 0))
		 AS only_odd_ids
FROM rp p WHERE pid % 2 = 0;
RESET ROLE;
RESET mcc.refine_fraction;

-- More rows than the planner expects (it guesses 0.5 % for "id + 0 = id"):
-- the shortlist sized from that guess is too short, so identify() scans
-- again with n' (says so at DEBUG1) and still equals the brute force
CREATE TABLE rgbig (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO rgbig SELECT finger, template FROM mcc_synthetic(1800, 1, 8);
ANALYZE rgbig;
CREATE VIEW rgest AS SELECT id, tpl FROM rgbig WHERE id + 0 = id;
SELECT count(*) FROM rgest;
SET mcc.refine_fraction = 0.5;
SET client_min_messages = debug1;
SELECT count(*) AS rows FROM identify('rgest', (SELECT tpl FROM rp WHERE pid = 2), 20, 0, 'id', refine => 'dtr');
RESET client_min_messages;
SELECT same_refined('rgest', tpl, 20, 0, 'dtr', 'id') AS equal FROM rp WHERE pid = 2;
RESET mcc.refine_fraction;

-- identify_batch() with the same argument: per probe what identify() returns
SELECT count(*) AS probes, count(*) FILTER (WHERE NOT EXISTS (
		   SELECT b.id, b.score FROM identify_batch('rg', ARRAY(SELECT tpl FROM rp ORDER BY pid), 5, 0.2, refine => 'lgs-dtr') b
		   WHERE b.probe_no = p.pid
		   EXCEPT SELECT * FROM identify('rg', p.tpl, 5, 0.2, refine => 'lgs-dtr'))
	   AND (SELECT count(*) FROM identify_batch('rg', ARRAY(SELECT tpl FROM rp ORDER BY pid), 5, 0.2, refine => 'lgs-dtr') b
			WHERE b.probe_no = p.pid) = (SELECT count(*) FROM identify('rg', p.tpl, 5, 0.2, refine => 'lgs-dtr'))) AS equal
FROM rp p;
-- its default is mcc.refine_method too, and its column names still come
-- fifth and sixth
SELECT count(*) = 12 * 3 AS rows_3_each,
	   NOT EXISTS (SELECT * FROM identify_batch('rg', ARRAY(SELECT tpl FROM rp ORDER BY pid), 3)
				   EXCEPT SELECT * FROM identify_batch('rg', ARRAY(SELECT tpl FROM rp ORDER BY pid), 3, 0,
													   'id', 'tpl', 'fused')) AS default_is_fused
FROM identify_batch('rg', ARRAY(SELECT tpl FROM rp ORDER BY pid), 3);

-- Errors: an unknown name (names are lower case), in identify() and
-- identify_batch(); NULL is the default, not an error
SELECT * FROM identify('rg', (SELECT tpl FROM rp WHERE pid = 1), 10, 0, refine => 'nosuch');
SELECT NOT EXISTS (SELECT * FROM identify('rg', (SELECT tpl FROM rp WHERE pid = 1), 10, 0, refine => NULL)
				   EXCEPT SELECT * FROM identify('rg', (SELECT tpl FROM rp WHERE pid = 1), 10, 0, refine => 'fused'))
	   AS null_is_the_default;
SELECT * FROM identify('rg', (SELECT tpl FROM rp WHERE pid = 1), 10, 0, refine => 'DTR');
SELECT * FROM identify_batch('rg', ARRAY(SELECT tpl FROM rp), 10, 0, refine => 'lss-dtr2');
-- statement_timeout interrupts a long refinement (every row, the slowest method)
SET mcc.refine_fraction = 1;
SET statement_timeout = '50ms';
SELECT count(*) FROM rp p, identify('rgbig', p.tpl, 10, 0, refine => 'lsa-dtr');
RESET statement_timeout;
RESET mcc.refine_fraction;
SELECT count(*) AS after_cancel FROM identify('rg', (SELECT tpl FROM rp WHERE pid = 1), 3, 0, refine => 'dtr');

-- declared signatures
SELECT oid::regprocedure AS signature, pg_get_function_arguments(oid) AS arguments
FROM pg_proc WHERE proname IN ('identify', 'identify_batch') ORDER BY proname;

DROP VIEW rgv, rgest;
DROP TABLE rg, rp, methods, rmins, rgnull, rnull15, rgp, rgrls, rgbig;
DROP ROLE regress_mcc_refiner;
DROP FUNCTION brute_refined, same_refined;
