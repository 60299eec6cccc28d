-- demo.sql: what scripts/demo.sh runs against its throwaway cluster.
-- psql variable :n is the gallery size.
\set QUIET on
\pset footer off
CREATE EXTENSION mcc;

\echo
\echo '-- 1. A gallery is an ordinary table with an integer key and an mcc_template column.'
CREATE TABLE prints (id bigint PRIMARY KEY, person text, finger smallint, tpl mcc_template NOT NULL);

\echo '-- 2. Enrol :n synthetic fingers (impression 0 of each); INSERT ... SELECT, as COPY would.'
\timing on
INSERT INTO prints
SELECT s.finger, 'person-' || (s.finger / 10), s.finger % 10, s.template
FROM mcc_synthetic(:n, 1, 42) AS s;
\timing off
SELECT count(*) AS templates,
       round(avg(mcc_minutiae_count(tpl)), 1) AS minutiae_per_template,
       round(avg(mcc_cylinder_count(tpl)), 1) AS cylinders_per_template,
       pg_size_pretty(pg_total_relation_size('prints')) AS table_size
FROM prints;

\echo '-- 3. A template reads and writes as JSON minutiae; the cylinders are derived.'
SELECT left(tpl::text, 160) || ' ...' AS template_text FROM prints WHERE id = 7;

\echo '-- 4. Probes: another impression of fingers 7, 1234 and 4321 (mated),'
\echo '--    and fingers the gallery does not hold (non-mated).'
CREATE TEMP TABLE probes AS
SELECT s.finger, s.finger < :n AS mated, s.template AS tpl
FROM (VALUES (7), (1234), (4321), (:n + 5), (:n + 77)) AS f(n),
     LATERAL mcc_synthetic(1, 2, 42, f.n) AS s
WHERE s.impression = 1;

\echo '-- 5. 1:1 scores of probe 7 against its mate and against finger 8. mcc_score(a, b) is the'
\echo '--    most accurate method (''fused'': two MCC relaxations averaged); scores are in [0, 1],'
\echo '--    impostor pairs mostly below 0.05. % says whether a score reaches mcc.match_threshold,'
\echo '--    by default the threshold of a 0.1 % false match rate (mcc_threshold(0.001)).'
SHOW mcc.match_threshold;
SELECT p.finger AS probe, g.id AS gallery, mcc_score(p.tpl, g.tpl) AS score,
       p.tpl % g.tpl AS matches
FROM probes p, prints g WHERE p.finger = 7 AND g.id IN (7, 8) ORDER BY g.id;

\echo '-- 6. Thresholds by false match rate, measured on real (FVC2002) and synthetic'
\echo '--    impostor pairs and shipped with the extension: pick the error rate, not a number.'
SELECT fmr, mcc_threshold(fmr) AS threshold
FROM (VALUES (0.01::float8), (0.001), (0.0001)) AS v(fmr);

\echo '-- 7. 1:N with the defaults: identify() scores every row by LSS (the GPU/SIMD scan of'
\echo '--    paper 000), rescores the best mcc.refine_fraction of them (at least mcc.refine_min'
\echo '--    rows) with ''fused'', and returns the top k. The top 2 for every probe:'
\timing on
SELECT p.finger AS probe, p.mated, i.id AS candidate, g.person, i.score,
       i.id = p.finger AS correct
FROM probes p, LATERAL identify('prints', p.tpl, k => 2) i
JOIN prints g ON g.id = i.id
ORDER BY p.finger, i.score DESC, i.id;
\timing off

\echo '-- 8. Whose finger is it, at a 0.01 % false match rate: candidates at or above the threshold.'
\echo '--    Mated probes find exactly their finger; non-mated probes find nobody.'
SELECT p.finger AS probe, p.mated, count(i.id) AS candidates, min(i.id) AS candidate
FROM probes p
LEFT JOIN LATERAL identify('prints', p.tpl, k => 10, min_score => mcc_threshold(0.0001)) i ON true
GROUP BY 1, 2 ORDER BY 1;

\echo '-- 9. For comparison, the first stage alone (refine => ''none'': plain LSS, paper 000''s scan):'
\echo '--    faster, but its scores do not separate mates from other fingers as well.'
\timing on
SELECT p.finger AS probe, p.mated, i.id AS candidate, i.score, i.id = p.finger AS correct
FROM probes p, LATERAL identify('prints', p.tpl, k => 2, refine => 'none') i
ORDER BY p.finger, i.score DESC, i.id;
\timing off
