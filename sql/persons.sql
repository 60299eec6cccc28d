-- identify_persons(): persons with several fingers (docs/persons.md). The
-- answer equals the brute force of its definition written with mcc_score()
-- alone: candidates from every probe finger's n' best rows by LSS, the
-- candidates' fingers scored at the probe finger's position (best template,
-- NULL / 0 when missing), the mean over the probe fingers, the k best
-- persons (ties by smaller person). Edge cases, privileges, row-level
-- security, views, errors; mcc_iso_finger_position(), mcc_refine_count(),
-- mcc_gallery_columns().

-- 100 persons x 4 fingers (positions 1-4, synthetic fingers 4p .. 4p+3,
-- impression 0); person 3 lacks position 2, person 5 has a second template
-- at position 1 (impression 2), one row has no template, one no person
CREATE TABLE people (id bigint PRIMARY KEY, person int, finger smallint CHECK (finger BETWEEN 0 AND 10),
					 tpl mcc_template);
INSERT INTO people SELECT finger, finger / 4, finger % 4 + 1, template FROM mcc_synthetic(400, 1, 5);
DELETE FROM people WHERE person = 3 AND finger = 2;
INSERT INTO people SELECT 5000, 5, 1, template FROM mcc_synthetic(1, 3, 5, 20) WHERE impression = 2;
INSERT INTO people VALUES (5001, 6, 3, NULL), (5002, NULL, 1, (SELECT tpl FROM people WHERE id = 7));
CREATE INDEX ON people (person, finger);
-- probes: impression 1 of every finger of persons 0..9 and of person 1000
-- (not enrolled)
CREATE TABLE probe (person int, finger smallint, tpl mcc_template);
INSERT INTO probe SELECT s.finger / 4, s.finger % 4 + 1, s.template
FROM generate_series(0, 9) p, mcc_synthetic(4, 2, 5, 4 * p) s WHERE s.impression = 1;
INSERT INTO probe SELECT 1000, s.finger % 4 + 1, s.template
FROM mcc_synthetic(4, 2, 5, 4000) s WHERE s.impression = 1;
-- a small shortlist, so that candidates are a real choice: n' = 20 of 402
SET mcc.refine_min = 20;
SELECT mcc_refine_count(402), mcc_refine_count(402, 50), mcc_refine_count(0);

-- The definition, brute force.
CREATE FUNCTION brute_persons(gallery regclass, probes mcc_template[], positions int[], k int,
							  min_score real, refine text)
RETURNS TABLE(person bigint, score real, finger_scores real[], finger_ids bigint[])
LANGUAGE plpgsql STABLE AS $$
DECLARE
	n bigint;
	np bigint;
	f float8 := current_setting('mcc.refine_fraction')::float8;
	m bigint := current_setting('mcc.refine_min')::bigint;
	method text := coalesce(refine, current_setting('mcc.refine_method'));
BEGIN
	method := CASE method WHEN 'none' THEN 'lss' WHEN 'dtr' THEN 'lss-dtr' ELSE method END;
	EXECUTE format('SELECT count(tpl) FROM %s', gallery) INTO n;
	np := least(n, greatest(ceil(f * n)::bigint, m, k));
	RETURN QUERY EXECUTE format($q$
		WITH probe AS (SELECT p.ord::int AS ord, p.tpl, p.pos
					   FROM unnest($1, $2) WITH ORDINALITY p(tpl, pos, ord)),
		shortlist AS (SELECT p.ord, s.id FROM probe p CROSS JOIN LATERAL (
						SELECT g.id FROM %1$s g WHERE g.tpl IS NOT NULL
						ORDER BY mcc_score(p.tpl, g.tpl, 'lss') DESC, g.id LIMIT $3) s),
		cand AS (SELECT DISTINCT g.person::bigint AS person FROM shortlist s JOIN %1$s g ON g.id = s.id
				 WHERE g.person IS NOT NULL),
		best AS (SELECT DISTINCT ON (c.person, p.ord) c.person, p.ord, g.id::bigint AS id,
						mcc_score(p.tpl, g.tpl, $4) AS score
				 FROM cand c JOIN %1$s g ON g.person = c.person JOIN probe p ON p.pos = g.finger
				 WHERE g.tpl IS NOT NULL ORDER BY c.person, p.ord, score DESC, g.id),
		fused AS (SELECT c.person, (sum(coalesce(b.score, 0)::float8) / cardinality($1))::real AS score,
						 array_agg(b.score ORDER BY p.ord) AS fs, array_agg(b.id ORDER BY p.ord) AS fi
				  FROM cand c CROSS JOIN probe p LEFT JOIN best b ON b.person = c.person AND b.ord = p.ord
				  GROUP BY c.person)
		SELECT person, score, fs, fi FROM fused WHERE score >= $5
		ORDER BY score DESC, person LIMIT $6 $q$, gallery)
		USING probes, positions, np, method, min_score, k;
END $$;

-- identify_persons() equals the brute force, row for row; returns how many rows
CREATE FUNCTION same_persons(gallery regclass, probes mcc_template[], positions int[], k int,
							 min_score real DEFAULT 0, refine text DEFAULT NULL, id_column name DEFAULT NULL)
RETURNS text LANGUAGE sql STABLE AS $$
	WITH a AS (SELECT array_agg(i ORDER BY i.score DESC, i.person) AS r
			   FROM identify_persons(gallery, probes, positions, k, min_score,
									 id_column => id_column, refine => refine) i),
		 b AS (SELECT array_agg(i ORDER BY i.score DESC, i.person) AS r
			   FROM brute_persons(gallery, probes, positions, k, min_score, refine) i)
	SELECT CASE WHEN a.r IS NOT DISTINCT FROM b.r THEN 'same, ' || coalesce(cardinality(a.r), 0) || ' rows'
				ELSE 'DIFFERENT: ' || a.r::text || ' vs ' || b.r::text END
	FROM a, b
$$;
CREATE FUNCTION fingers(p int, pos int[]) RETURNS mcc_template[] LANGUAGE sql STABLE AS $$
	SELECT array_agg((SELECT tpl FROM probe WHERE person = p AND finger = x) ORDER BY o)
	FROM unnest(pos) WITH ORDINALITY u(x, o)
$$;

-- four, two and one probe fingers of enrolled persons, and of a stranger
SELECT p, same_persons('people', fingers(p, '{1,2,3,4}'), '{1,2,3,4}', 5) AS four,
	   same_persons('people', fingers(p, '{1,2}'), '{1,2}', 5) AS two,
	   same_persons('people', fingers(p, '{3}'), '{3}', 5) AS one
FROM unnest('{0,3,5,9,1000}'::int[]) p;
-- the mate first, per-finger detail in probe order: person 3 has no finger 2
SELECT person, score > 0.1 AS high, finger_scores[1] > 0.1 AS f1, finger_scores[2] AS f2,
	   finger_ids
FROM identify_persons('people', fingers(3, '{1,2}'), '{1,2}', k => 1);
-- the score is the mean over the probe fingers of the per-finger scores
SELECT person, score = ((coalesce(finger_scores[1], 0)::float8 + coalesce(finger_scores[2], 0)
						 + coalesce(finger_scores[3], 0)) / 3)::real AS mean
FROM identify_persons('people', fingers(4, '{1,3,4}'), '{1,3,4}', k => 3);
-- person 5's best template at position 1 is one of its two
SELECT person, finger_ids[1] IN (20, 5000) AS one_of_two
FROM identify_persons('people', fingers(5, '{1}'), '{1}', k => 1);
-- a position nobody enrolled (7) counts 0; two probe fingers at one position
SELECT same_persons('people', fingers(2, '{1,1}') || fingers(2, '{2}'), '{7,1,2}', 4);
SELECT person, finger_scores[1] IS NULL AS none_at_7
FROM identify_persons('people', fingers(2, '{1,2}'), '{7,2}', k => 1);
SELECT same_persons('people', fingers(2, '{1,1,2}'), '{1,1,2}', 3);
-- refinements, min_score, k
SELECT same_persons('people', fingers(7, '{1,2}'), '{1,2}', 5, refine => 'none') AS none,
	   same_persons('people', fingers(7, '{1,2}'), '{1,2}', 5, refine => 'dtr') AS dtr,
	   same_persons('people', fingers(7, '{1,2}'), '{1,2}', 5, refine => 'lgs-r') AS lgs_r;
SELECT same_persons('people', fingers(8, '{1,2,3,4}'), '{1,2,3,4}', 50, 0.02) AS min_score,
	   same_persons('people', fingers(8, '{1,2,3,4}'), '{1,2,3,4}', 1) AS k1,
	   same_persons('people', fingers(8, '{1,2,3,4}'), '{1,2,3,4}', 1000) AS k1000;
SELECT count(*) FROM identify_persons('people', fingers(8, '{1,2}'), '{1,2}', 10, min_score => 1);
SET mcc.refine_min = 500;
SELECT same_persons('people', fingers(6, '{3,4}'), '{3,4}', 5) AS every_row;
RESET mcc.refine_min;
SET mcc.refine_min = 20;
SET mcc.refine_method = 'lss-r';
SELECT same_persons('people', fingers(6, '{3,4}'), '{3,4}', 5) AS setting;
RESET mcc.refine_method;

-- other column names and a view (id_column); an empty gallery
CREATE VIEW people_v AS SELECT id AS row_id, person AS who, finger AS pos, tpl AS t FROM people;
SELECT (SELECT array_agg(person ORDER BY score DESC, person) FROM identify_persons('people_v',
			fingers(1, '{1,2}'), '{1,2}', 5, person_column => 'who', position_column => 'pos',
			id_column => 'row_id'))
	 = (SELECT array_agg(person ORDER BY score DESC, person) FROM identify_persons('people',
			fingers(1, '{1,2}'), '{1,2}', 5)) AS view_same;
SELECT * FROM mcc_gallery_columns('people');
SELECT * FROM mcc_gallery_columns('people_v', 'row_id');
CREATE TABLE nobody (id int PRIMARY KEY, person int, finger smallint, tpl mcc_template);
SELECT count(*) FROM identify_persons('nobody', fingers(1, '{1}'), '{1}');

-- row-level security: the caller's rows only (even persons hidden)
CREATE ROLE regress_mcc_persons;
GRANT SELECT ON people, probe TO regress_mcc_persons;
ALTER TABLE people ENABLE ROW LEVEL SECURITY;
CREATE POLICY odd_persons ON people FOR SELECT TO regress_mcc_persons USING (person % 2 = 1);
SET ROLE regress_mcc_persons;
SELECT same_persons('people', fingers(4, '{1,2}'), '{1,2}', 5) AS rls_same,
	   (SELECT bool_and(person % 2 = 1) FROM identify_persons('people', fingers(4, '{1,2}'), '{1,2}', 5)) AS odd_only;
RESET ROLE;
ALTER TABLE people DISABLE ROW LEVEL SECURITY;
-- column privileges: the person columns are needed too
CREATE ROLE regress_mcc_persons_cols;
GRANT SELECT (id, tpl, person) ON people TO regress_mcc_persons_cols;
GRANT SELECT ON probe TO regress_mcc_persons_cols;
SET ROLE regress_mcc_persons_cols;
\set VERBOSITY terse
SELECT count(*) FROM identify_persons('people', fingers(1, '{1}'), '{1}');
\set VERBOSITY default
RESET ROLE;
REVOKE ALL ON people, probe FROM regress_mcc_persons, regress_mcc_persons_cols;
DROP POLICY odd_persons ON people;
DROP ROLE regress_mcc_persons, regress_mcc_persons_cols;

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql
CREATE TABLE people_text (id int PRIMARY KEY, person text, finger smallint, tpl mcc_template);
CREATE TABLE p1 AS SELECT fingers(1, '{1,2}') AS f;
SELECT q AS arguments, sqlstate_of('SELECT * FROM identify_persons(' || q || ')') AS error FROM (VALUES
	('NULL, (SELECT f FROM p1), ''{1,2}'''),
	('''people'', NULL, ''{1,2}'''),
	('''people'', (SELECT f FROM p1), NULL'),
	('''people'', (SELECT f FROM p1), ''{1,2}'', NULL'),
	('''people'', (SELECT f FROM p1), ''{1,2}'', 10, NULL'),
	('''people'', (SELECT f FROM p1), ''{1,2}'', person_column => NULL'),
	('''people'', (SELECT f FROM p1), ''{1}'''),
	('''people'', ''{}'', ''{}'''),
	('''people'', (SELECT f FROM p1), ''{{1,2}}'''),
	('''people'', (SELECT f FROM p1) || NULL::mcc_template, ''{1,2,3}'''),
	('''people'', (SELECT f FROM p1), ''{1,NULL}'''),
	('''people'', (SELECT f FROM p1), ''{1,11}'''),
	('''people'', (SELECT f FROM p1), ''{-1,1}'''),
	('''people'', (SELECT f FROM p1), ''{1,2}'', k => 0'),
	('''people'', (SELECT f FROM p1), ''{1,2}'', min_score => ''NaN'''),
	('''people'', (SELECT f FROM p1), ''{1,2}'', min_score => 1.5'),
	('''people'', (SELECT f FROM p1), ''{1,2}'', refine => ''nope'''),
	('''people'', (SELECT f FROM p1), ''{1,2}'', person_column => ''who'''),
	('''people'', (SELECT f FROM p1), ''{1,2}'', position_column => ''ctid'''),
	('''people_text'', (SELECT f FROM p1), ''{1,2}'''),
	('''people_v'', (SELECT f FROM p1), ''{1,2}'', person_column => ''who'', position_column => ''pos'''),
	('''people'', (SELECT f FROM p1), ''{1,2}'', id_column => ''finger2'''),
	('''no_such_table'', (SELECT f FROM p1), ''{1,2}'''),
	('''people'', ARRAY[mcc_template_from_json(''{"profile":"tpami2010","width":300,"height":300,"minutiae":[[100,100,1.5708,"ending",50]]}'')], ''{1}''')
) v(q);
SELECT sqlstate_of('SELECT mcc_refine_count(-1)') AS negative_n,
	   sqlstate_of('SELECT mcc_refine_count(10, 0)') AS zero_k,
	   sqlstate_of('SELECT mcc_gallery_columns(NULL)') AS null_gallery,
	   sqlstate_of('SELECT mcc_gallery_columns(''people_v'')') AS view_without_key;

-- the finger position of an ISO record's view: written as 0 (unknown), set to 7
SELECT mcc_iso_finger_position(mcc_template_to_iso(tpl)) AS written,
	   mcc_iso_finger_position(set_byte(mcc_template_to_iso(tpl), 24, 7)) AS set,
	   mcc_iso_finger_position(set_byte(mcc_template_to_iso(tpl, 'ansi2004'), 26, 3)) AS ansi
FROM people WHERE id = 1;
SELECT sqlstate_of('SELECT mcc_iso_finger_position(mcc_template_to_iso(tpl), 2) FROM people WHERE id = 1') AS no_view_2,
	   sqlstate_of('SELECT mcc_iso_finger_position(mcc_template_to_iso(tpl), 0) FROM people WHERE id = 1') AS view_0,
	   sqlstate_of('SELECT mcc_iso_finger_position(''\x00''::bytea)') AS not_a_record;
DROP FUNCTION try(text), sqlstate_of(text);
