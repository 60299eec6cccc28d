-- mcc_threshold() and mcc_thresholds: thresholds by false match rate,
-- shipped with the extension; their consistency, interpolation, errors, the
-- default of mcc.match_threshold, and what they promise on fingers they were
-- not measured on.

-- every method of mcc_score has thresholds, from 10 % down to at least 0.01 %
SELECT method, count(*) AS rates, min(fmr) <= 0.0001 AS down_to_1e4, max(fmr) AS most
FROM mcc_thresholds GROUP BY method ORDER BY method;

-- a lower false match rate never has a lower threshold
SELECT count(*) AS inversions
FROM mcc_thresholds a JOIN mcc_thresholds b USING (method)
WHERE a.fmr < b.fmr AND a.threshold < b.threshold;

-- at a measured rate, the measured threshold; between two, in between
SELECT count(*) AS rows, count(*) FILTER (WHERE mcc_threshold(fmr, method) = threshold) AS exact
FROM mcc_thresholds;
SELECT mcc_threshold(0.0005) BETWEEN (SELECT threshold FROM mcc_thresholds WHERE method = 'fused' AND fmr = 0.001)
								 AND (SELECT threshold FROM mcc_thresholds WHERE method = 'fused' AND fmr = 0.0003)
	   AS interpolated;
-- the default method is fused, 'dtr' is 'lss-dtr' and 'none' is 'lss', as in identify()
SELECT mcc_threshold(0.001) = mcc_threshold(0.001, 'fused') AS default_fused,
	   mcc_threshold(0.001, 'dtr') = mcc_threshold(0.001, 'lss-dtr') AS dtr,
	   mcc_threshold(0.001, 'none') = mcc_threshold(0.001, 'lss') AS none;
-- mcc.match_threshold defaults to the threshold of a 0.1 % false match rate
-- (the setting exists once the library is loaded)
LOAD 'mcc';
SELECT abs(current_setting('mcc.match_threshold')::float8 - mcc_threshold(0.001)) < 1e-6 AS match_threshold_is_fmr_0_1;

-- errors: an unknown method (22023), a rate outside the measured range (22003)
-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql
SELECT v.stmt, t.state, t.message, t.detail FROM (VALUES
	(1, $q$SELECT mcc_threshold(0.001, 'nosuch')$q$),
	(2, $q$SELECT mcc_threshold(0.001, 'FUSED')$q$),
	(3, $q$SELECT mcc_threshold(0.5)$q$),
	(4, $q$SELECT mcc_threshold(1e-9)$q$),
	(5, $q$SELECT mcc_threshold(0)$q$),
	(6, $q$SELECT mcc_threshold('NaN')$q$),
	(7, $q$SELECT mcc_threshold(-0.01)$q$)
) AS v(ord, stmt), LATERAL try(v.stmt) t ORDER BY v.ord;
SELECT mcc_threshold(NULL) IS NULL AS null_rate, mcc_threshold(0.01, NULL) IS NULL AS null_method;

-- The promise, on fingers the thresholds were not measured on (synthetic,
-- another seed): of every impostor pair, at most about the chosen share
-- scores at or above the threshold, and most genuine pairs do.
CREATE TABLE thr_set AS SELECT finger, impression, template AS t FROM mcc_synthetic(70, 2, 4242);
CREATE TABLE thr_pairs AS
SELECT a.finger = b.finger AS genuine, mcc_score(a.t, b.t) AS s, a.t % b.t AS m
FROM thr_set a JOIN thr_set b ON (a.finger, a.impression) < (b.finger, b.impression);
SELECT count(*) FILTER (WHERE NOT genuine) AS impostor_pairs, count(*) FILTER (WHERE genuine) AS genuine_pairs
FROM thr_pairs;
SELECT f.fmr,
	   count(*) FILTER (WHERE NOT p.genuine AND p.s >= mcc_threshold(f.fmr))
		 <= greatest(2 * f.fmr * count(*) FILTER (WHERE NOT p.genuine), 3) AS impostors_within_twice_the_rate,
	   round(avg((p.s >= mcc_threshold(f.fmr))::int) FILTER (WHERE p.genuine), 2) >= 0.8 AS most_genuine_accepted
FROM (VALUES (0.01::float8), (0.001)) AS f(fmr), thr_pairs p
GROUP BY f.fmr ORDER BY f.fmr DESC;

-- % with the default mcc.match_threshold decides as the threshold of FMR 0.1 %
-- does, pair by pair (the setting holds the threshold's exact value)
SELECT count(*) AS pairs, count(*) FILTER (WHERE m = (s >= mcc_threshold(0.001))) AS same_decision
FROM thr_pairs;

-- the table is the extension's, readable by everyone
SELECT has_table_privilege('public', 'mcc_thresholds', 'SELECT') AS public_select,
	   (SELECT count(*) FROM pg_depend d WHERE d.objid = 'mcc_thresholds'::regclass AND d.deptype = 'e') AS member;

DROP TABLE thr_set, thr_pairs;
DROP FUNCTION try(text), sqlstate_of(text);
