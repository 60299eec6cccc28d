-- score: 1:1 LSS score, the % and <=> operators, mcc.match_threshold

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- the templates (sql/include/finger_a.sql): a finger-like set A of 40
-- minutiae, A turned by 90 degrees and moved, A turned by 180 degrees
-- (beyond the angular gate), the first 30 minutiae of A, another finger B, a
-- template without cylinders ('lonely'), and A with the tpami2010 profile
\i :abs_srcdir/sql/include/finger_a.sql
-- translated only
INSERT INTO tpl SELECT 'A shifted', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(x + 25, y - 10, theta(q), type, 50) ORDER BY i)) FROM mnt;

SELECT name, mcc_minutiae_count(t), mcc_cylinder_count(t) > 0 AS has_cylinders
FROM tpl ORDER BY name;

-- self-score: every cylinder matches itself with distance 0, so the n_P
-- smallest votes are all 0 and the LSS score is exactly 1; mcc_score(a, b)
-- is the fused relaxation, whose self-score is just below 1 (each
-- relaxation keeps part of every pair's own similarity: w_R)
SELECT name, mcc_score(t, t, 'lss') AS lss, mcc_score(t, t) AS fused,
	   mcc_score(t, t) = mcc_score(t, t, 'fused') AS default_is_fused
FROM tpl ORDER BY name;

-- rotation + translation invariance: the same minutiae have valid
-- cylinders, with the same bits, and angles 64 (= pi/2) larger
SELECT count(a.minutia) AS cylinders_a, count(b.minutia) AS cylinders_b,
	   count(*) FILTER (WHERE a.bits = b.bits) AS same_bits,
	   count(*) FILTER (WHERE b.angle = (a.angle + 64) % 256) AS angle_plus_64,
	   count(*) FILTER (WHERE b.x = a.y + 37 AND b.y = 499 - a.x + 21) AS moved,
	   count(*) FILTER (WHERE a.popcount = b.popcount) AS same_popcount
FROM mcc_cylinders((SELECT t FROM tpl WHERE name = 'A')) a
FULL JOIN mcc_cylinders((SELECT t FROM tpl WHERE name = 'A rotated 90')) b USING (minutia);
SELECT count(a.minutia) AS cylinders_a, count(b.minutia) AS cylinders_b,
	   count(*) FILTER (WHERE a.bits = b.bits AND a.angle = b.angle) AS same
FROM mcc_cylinders((SELECT t FROM tpl WHERE name = 'A')) a
FULL JOIN mcc_cylinders((SELECT t FROM tpl WHERE name = 'A shifted')) b USING (minutia);
-- so the corresponding cylinders vote 0 and the LSS score is 1; the fused
-- score is A's self-score (the geometry moved rigidly)
SELECT mcc_score(a.t, b.t, 'lss') AS lss, mcc_score(a.t, b.t) = mcc_score(a.t, a.t) AS fused_as_self, b.name
FROM tpl a, tpl b WHERE a.name = 'A' AND b.name IN ('A rotated 90', 'A shifted') ORDER BY b.name;

-- 180 degrees: the corresponding cylinders fail the angular gate
SELECT mcc_score(a.t, b.t, 'lss') < 1 AS gated
FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'A rotated 180';

-- a partial impression of A scores between A itself and another finger
SELECT mcc_score(a.t, p.t) < 1 AS below_self, mcc_score(a.t, p.t) > mcc_score(a.t, b.t) AS above_impostor
FROM tpl a, tpl p, tpl b WHERE a.name = 'A' AND p.name = 'A partial' AND b.name = 'B';

-- no cylinders, no score
SELECT mcc_score(a.t, l.t) AS score_a_lonely, mcc_score(l.t, l.t) AS score_lonely
FROM tpl a, tpl l WHERE a.name = 'A' AND l.name = 'lonely';

-- symmetry and range over every pair of gpu2015 templates: LSS is exactly
-- symmetric; mcc_score(a, b) scores the pair in its canonical order, so it
-- is exactly symmetric too, and it is mcc_score(a, b, 'fused') or
-- mcc_score(b, a, 'fused') (the method alone may differ between the two
-- orders where equal similarities are ranked by position)
SELECT count(*) AS pairs,
	   count(*) FILTER (WHERE mcc_score(a.t, b.t, 'lss') = mcc_score(b.t, a.t, 'lss')) AS lss_symmetric,
	   count(*) FILTER (WHERE mcc_score(a.t, b.t) = mcc_score(b.t, a.t)) AS symmetric,
	   count(*) FILTER (WHERE mcc_score(a.t, b.t) IN (mcc_score(a.t, b.t, 'fused'), mcc_score(b.t, a.t, 'fused'))) AS one_order_of_fused,
	   count(*) FILTER (WHERE mcc_score(a.t, b.t) BETWEEN 0 AND 1) AS in_range
FROM tpl a, tpl b WHERE mcc_profile(a.t) = 'gpu2015' AND mcc_profile(b.t) = 'gpu2015';

-- different profiles are never compared (22023)
SELECT mcc_score(a.t, b.t) FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'A tpami2010';
SELECT v.op, t.state, t.message, t.detail FROM (VALUES
	(1, 'mcc_score', $q$SELECT mcc_score(a.t, b.t) FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'A tpami2010'$q$),
	(2, '%', $q$SELECT a.t % b.t FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'A tpami2010'$q$),
	(3, '<=>', $q$SELECT a.t <=> b.t FROM tpl a, tpl b WHERE a.name = 'A tpami2010' AND b.name = 'A'$q$)
) AS v(ord, op, stmt), LATERAL try(v.stmt) t ORDER BY v.ord;

-- NULL in, NULL out
SELECT mcc_score(t, NULL) IS NULL AS s, (t % NULL) IS NULL AS m, (NULL <=> t) IS NULL AS d
FROM tpl WHERE name = 'A';

-- <=> is 1 - score (1 - a real is exact in double precision; rounding it
-- to real gives the correctly rounded single-precision difference)
SELECT count(*) AS pairs,
	   count(*) FILTER (WHERE a.t <=> b.t = (1 - mcc_score(a.t, b.t))::real) AS distance_ok,
	   count(*) FILTER (WHERE (a.t <=> b.t) = (b.t <=> a.t)) AS commutes
FROM tpl a, tpl b WHERE mcc_profile(a.t) = 'gpu2015' AND mcc_profile(b.t) = 'gpu2015';
SELECT b.name FROM tpl a, tpl b
WHERE a.name = 'A' AND mcc_profile(b.t) = 'gpu2015'
ORDER BY a.t <=> b.t, b.name LIMIT 3;

-- % and mcc.match_threshold
SHOW mcc.match_threshold;
SELECT count(*) AS pairs,
	   count(*) FILTER (WHERE (a.t % b.t) = (mcc_score(a.t, b.t) >= current_setting('mcc.match_threshold')::float8)) AS consistent
FROM tpl a, tpl b WHERE mcc_profile(a.t) = 'gpu2015' AND mcc_profile(b.t) = 'gpu2015';
SET mcc.match_threshold = 0;
SELECT count(*) FILTER (WHERE a.t % b.t) AS matches
FROM tpl a, tpl b WHERE mcc_profile(a.t) = 'gpu2015' AND mcc_profile(b.t) = 'gpu2015';
SET mcc.match_threshold = 0.99;
SELECT a.name, b.name FROM tpl a, tpl b
WHERE mcc_profile(a.t) = 'gpu2015' AND mcc_profile(b.t) = 'gpu2015' AND a.t % b.t
ORDER BY 1, 2;
-- the threshold is inclusive: exactly the score of A and B matches, the next
-- double above does not
SELECT set_config('mcc.match_threshold', mcc_score(a.t, b.t)::float8::text, false) IS NOT NULL AS set,
	   mcc_score(a.t, b.t) > 0 AS positive
FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'B';
SELECT a.t % b.t AS at_threshold, b.t % a.t AS commuted
FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'B';
SELECT set_config('mcc.match_threshold', (mcc_score(a.t, b.t)::float8 * (1 + 1e-15))::text, false) IS NOT NULL AS set
FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'B';
SELECT a.t % b.t AS above_threshold FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'B';
-- the operator is STABLE: a prepared statement sees a new threshold
PREPARE m AS SELECT a.t % b.t FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'A partial';
SET mcc.match_threshold = 0;
EXECUTE m;
SET mcc.match_threshold = 1;
EXECUTE m;
DEALLOCATE m;
RESET mcc.match_threshold;
-- range (22023) and reserved prefix (42602)
SELECT v.stmt, t.state, t.message, t.detail FROM (VALUES
	(1, 'SET mcc.match_threshold = 1.5'),
	(2, 'SET mcc.match_threshold = -0.1'),
	(3, 'SET mcc.no_such_setting = 1')
) AS v(ord, stmt), LATERAL try(v.stmt) t ORDER BY v.ord;
SET mcc.no_such_setting = 1;

-- catalog: volatility and commutators
SELECT p.proname, p.provolatile, p.proisstrict, p.proparallel
FROM pg_proc p WHERE p.proname IN ('mcc_score', 'mcc_matches', 'mcc_distance') ORDER BY 1;
SELECT o.oprname, o.oprcode, c.oprname AS commutator, o.oprrest, o.oprjoin
FROM pg_operator o LEFT JOIN pg_operator c ON c.oid = o.oprcom
WHERE o.oprleft = 'mcc_template'::regtype ORDER BY 1;

DROP TABLE tpl, mnt;
DROP FUNCTION theta(int), try(text), sqlstate_of(text);
