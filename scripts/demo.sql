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

\echo '-- 5. 1:1 scores of probe 7 against its mate and against finger 8.'
SELECT p.finger AS probe, g.id AS gallery, mcc_score(p.tpl, g.tpl) AS score,
       p.tpl % g.tpl AS matches
FROM probes p, prints g WHERE p.finger = 7 AND g.id IN (7, 8) ORDER BY g.id;

\echo '-- 6. 1:N: the top 3 of the whole gallery for every probe.'
\timing on
SELECT p.finger AS probe, p.mated, i.id AS candidate, g.person, i.score,
       i.id = p.finger AS correct
FROM probes p, LATERAL identify('prints', p.tpl, k => 3) i
JOIN prints g ON g.id = i.id
ORDER BY p.finger, i.score DESC, i.id;
\timing off

\echo '-- 7. With a threshold: only candidates at or above mcc.match_threshold.'
SHOW mcc.match_threshold;
SELECT p.finger AS probe, p.mated, count(i.id) AS candidates_above_threshold
FROM probes p
LEFT JOIN LATERAL identify('prints', p.tpl, k => 10,
                           min_score => current_setting('mcc.match_threshold')::real) i ON true
GROUP BY 1, 2 ORDER BY 1;

\echo '-- 8. Paper 000''s complete system: the LSS shortlist (mcc.refine_fraction of the gallery,'
\echo '--    at least mcc.refine_min rows) rescored by LSS-DTR; the top 2 for every probe.'
\timing on
SELECT p.finger AS probe, p.mated, i.id AS candidate, g.person, i.score,
       i.id = p.finger AS correct
FROM probes p, LATERAL identify('prints', p.tpl, k => 2, refine => 'dtr') i
JOIN prints g ON g.id = i.id
ORDER BY p.finger, i.score DESC, i.id;
\timing off
