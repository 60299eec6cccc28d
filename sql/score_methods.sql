-- score_methods: mcc_score(a, b, method) for every matching method

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- The templates of the score test (sql/include/finger_a.sql): a finger-like
-- set A of 40 minutiae, A turned by 90 degrees and moved, A turned by 180
-- degrees (beyond the angular gate), the first 30 minutiae of A, another
-- finger B, a template without cylinders, and A with the tpami2010 profile.
\i :abs_srcdir/sql/include/finger_a.sql

CREATE TABLE methods (ord int, m text);
INSERT INTO methods VALUES (1, 'lss'), (2, 'lss-r'), (3, 'lss-dtr'), (4, 'lsa'), (5, 'lsa-r'),
	(6, 'lsa-dtr'), (7, 'lgs'), (8, 'lgs-r'), (9, 'lgs-dtr'), (10, 'consolidation'), (11, 'fused');

-- Z(v; mu, tau) of the relaxations, to state expected values
CREATE FUNCTION z(v float8, mu float8, tau float8) RETURNS float8 LANGUAGE sql IMMUTABLE
	AS $$ SELECT 1 / (1 + exp(-tau * (v - mu))) $$;

-- A against itself. A's 39 cylinders (one minutia has too few
-- neighbours) are all different, so the largest
-- entries of the local similarity matrix are its diagonal of ones, and
-- every pairing takes it: lss, lsa and lgs score exactly 1. Along the
-- diagonal the geometry agrees exactly, so every compatibility is
-- c = Z(0; mu1, tau1) Z(0; mu2, tau2) Z(0; mu3, tau3) and each relaxation
-- step multiplies every pair by w + (1 - w) c: the -r methods (TPAMI:
-- w = 1/2, 5 steps, mu = 5, pi/12, pi/12, tau = -8/5, -30, -30) give
-- (1/2 + c/2)^5 = 0.997225, the -dtr methods ([11]: w = 0.3, 3 steps,
-- mu = 1/30, pi/4, pi/18, tau = -150, -15, -40) give (0.3 + 0.7 c)^3 =
-- 0.984078, fused their mean, 0.990652. Consolidation keeps 32 of the 39
-- cylinders; with any of them
-- as the reference, the 31 others agree, and the score sums the 32
-- similarities (all 1) over 32: 1.
SELECT name, mcc_cylinder_count(t) FROM tpl WHERE name IN ('A', 'A tpami2010') ORDER BY name;
-- The tpami2010 profile gives the same values: they do not depend on the
-- cylinders once the diagonal is the unique maximum.
SELECT name, m.m, round(mcc_score(t, t, m.m)::numeric, 5) AS score, abs(mcc_score(t, t, m.m) - CASE
		   WHEN m.m IN ('lss', 'lsa', 'lgs') THEN 1
		   WHEN m.m LIKE '%-r' THEN power(0.5 + 0.5 * z(0, 5, -1.6) * z(0, pi() / 12, -30) ^ 2, 5)
		   WHEN m.m LIKE '%-dtr' THEN power(0.3 + 0.7 * z(0, 1.0 / 30, -150) * z(0, pi() / 4, -15) *
											z(0, pi() / 18, -40), 3)
		   WHEN m.m = 'fused' THEN (power(0.5 + 0.5 * z(0, 5, -1.6) * z(0, pi() / 12, -30) ^ 2, 5) +
									power(0.3 + 0.7 * z(0, 1.0 / 30, -150) * z(0, pi() / 4, -15) *
										  z(0, pi() / 18, -40), 3)) / 2
		   ELSE 1 END) < 1e-6 AS as_expected
FROM tpl, methods m WHERE name IN ('A', 'A tpami2010') ORDER BY name, m.ord;

-- Turned by 90 degrees and moved: the same cylinders, the same geometry up
-- to the motion, so every method scores as A against itself.
SELECT m.m, mcc_score(a.t, b.t, m.m) = mcc_score(a.t, a.t, m.m) AS same_as_self
FROM tpl a, tpl b, methods m WHERE a.name = 'A' AND b.name = 'A rotated 90' ORDER BY m.ord;

-- Turned by 180 degrees: corresponding cylinders fail the angular gate, so
-- every method scores below self; a partial impression scores below self
-- and above the other finger B with every method.
SELECT m.m,
	   mcc_score(a.t, r.t, m.m) < mcc_score(a.t, a.t, m.m) AS rotated_below_self,
	   mcc_score(a.t, p.t, m.m) < mcc_score(a.t, a.t, m.m) AS partial_below_self,
	   mcc_score(a.t, p.t, m.m) > mcc_score(a.t, b.t, m.m) AS partial_above_b
FROM tpl a, tpl r, tpl p, tpl b, methods m
WHERE a.name = 'A' AND r.name = 'A rotated 180' AND p.name = 'A partial' AND b.name = 'B'
ORDER BY m.ord;

-- the two-argument mcc_score is 'fused' (in the pair's canonical order);
-- every score is in [0, 1]; no cylinders, score 0
SELECT count(*) AS pairs,
	   count(*) FILTER (WHERE mcc_score(a.t, b.t) IN (mcc_score(a.t, b.t, 'fused'), mcc_score(b.t, a.t, 'fused'))) AS default_is_fused,
	   count(*) FILTER (WHERE mcc_score(a.t, b.t, m.m) BETWEEN 0 AND 1) AS in_range,
	   count(*) FILTER (WHERE (a.name = 'lonely' OR b.name = 'lonely') AND mcc_score(a.t, b.t, m.m) = 0) AS lonely_zero
FROM tpl a, tpl b, methods m
WHERE mcc_profile(a.t) = 'gpu2015' AND mcc_profile(b.t) = 'gpu2015';

-- errors: an unknown method or different profiles (22023); NULL in, NULL out
SELECT v.ord, t.state, t.message, t.hint FROM (VALUES
	(1, $q$SELECT mcc_score(t, t, 'dtr') FROM tpl WHERE name = 'A'$q$),
	(2, $q$SELECT mcc_score(t, t, 'LSS') FROM tpl WHERE name = 'A'$q$),
	(3, $q$SELECT mcc_score(t, t, '') FROM tpl WHERE name = 'A'$q$),
	(4, $q$SELECT mcc_score(a.t, b.t, 'lss-dtr') FROM tpl a, tpl b WHERE a.name = 'A' AND b.name = 'A tpami2010'$q$)
) AS v(ord, stmt), LATERAL try(v.stmt) t ORDER BY v.ord;
SELECT mcc_score(t, t, NULL) IS NULL AS null_method, mcc_score(t, NULL, 'lsa') IS NULL AS null_template
FROM tpl WHERE name = 'A';

-- catalog
SELECT p.oid::regprocedure, p.provolatile, p.proisstrict, p.proparallel
FROM pg_proc p WHERE p.proname = 'mcc_score' ORDER BY 1::text;
SELECT obj_description('mcc_score(mcc_template, mcc_template, text)'::regprocedure, 'pg_proc') IS NOT NULL AS commented;

DROP TABLE tpl, mnt, methods;
DROP FUNCTION theta(int), try(text), sqlstate_of(text), z(float8, float8, float8);
