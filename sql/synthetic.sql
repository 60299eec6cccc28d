-- mcc_synthetic(): row counts and numbering, determinism, validity, errors.

-- fingers x impressions rows; fingers from first_finger, impressions from 0
SELECT count(*) AS n, min(finger), max(finger), min(impression), max(impression),
       count(DISTINCT finger) AS fingers, count(DISTINCT (finger, impression)) AS pairs
FROM mcc_synthetic(10, 3);
SELECT count(*) AS n, min(finger), max(finger), max(impression)
FROM mcc_synthetic(5, 2, 7, 1000);
-- rows come finger by finger, impressions in order
SELECT array_agg(finger::text || '/' || impression ORDER BY ord) AS order_of_rows
FROM mcc_synthetic(3, 2, 7, 40) WITH ORDINALITY AS s(finger, impression, template, ord);

-- defaults: one impression, seed 1, first finger 0, profile gpu2015
SELECT count(*) AS n, min(finger), max(finger), max(impression) FROM mcc_synthetic(4);
SELECT bool_and(a.template::text = b.template::text) AS defaults_are_1_1_0_gpu2015
FROM mcc_synthetic(4) a JOIN mcc_synthetic(4, 1, 1, 0, 'gpu2015') b USING (finger, impression);

-- deterministic: the same arguments give the same templates
SELECT count(*) AS pairs, count(*) FILTER (WHERE a.template::text = b.template::text) AS identical
FROM mcc_synthetic(20, 2, 5) a JOIN mcc_synthetic(20, 2, 5) b USING (finger, impression);
-- a template depends on (seed, finger, impression) only, not on the other rows
SELECT count(*) AS pairs, count(*) FILTER (WHERE a.template::text = b.template::text) AS identical
FROM mcc_synthetic(20, 3, 5) a JOIN mcc_synthetic(4, 2, 5, 10) b USING (finger, impression);
-- another seed, another finger or another impression gives another template
SELECT count(*) FILTER (WHERE a.template::text = b.template::text) AS same_across_seeds
FROM mcc_synthetic(20, 1, 5) a JOIN mcc_synthetic(20, 1, 6) b USING (finger, impression);
SELECT count(DISTINCT template::text) AS distinct_templates FROM mcc_synthetic(20, 3, 5);

-- valid templates: the text form reads back to the same template
SELECT count(*) AS n,
       count(*) FILTER (WHERE template::text::mcc_template::text = template::text) AS round_trip
FROM mcc_synthetic(20, 2, 9);
-- the generator's sensor frame (388 x 374 pixels at 500 dpi, FVC2002 DB1's);
-- at most 60 master minutiae plus up to 15% spurious ones: 1 to 69 minutiae
SELECT count(*) AS n, min(i.width) AS width, max(i.width) AS max_width, min(i.height) AS height,
       max(i.height) AS max_height, min(i.dpi) AS dpi, max(i.dpi) AS max_dpi,
       bool_and(i.profile = 'gpu2015') AS gpu2015, bool_and(i.minutiae BETWEEN 1 AND 69) AS minutiae_1_69
FROM mcc_synthetic(50, 2, 9) s, mcc_template_info(s.template) i;
SELECT mcc_profile(template) FROM mcc_synthetic(1, 1, 1, 0, 'tpami2010');

-- tpami2010 templates score against each other, not against gpu2015 ones
SELECT mcc_score(a.template, b.template) BETWEEN 0 AND 1 AS tpami_scores
FROM mcc_synthetic(1, 2, 3, 0, 'tpami2010') a, mcc_synthetic(1, 2, 3, 0, 'tpami2010') b
WHERE a.impression = 0 AND b.impression = 1;
SELECT mcc_score(a.template, b.template)
FROM mcc_synthetic(1, 1, 3, 0, 'tpami2010') a, mcc_synthetic(1, 1, 3) b;

-- useful for tests: impressions of one finger score higher than different fingers
SELECT avg(mcc_score(a.template, b.template)) FILTER (WHERE a.finger = b.finger)
       > avg(mcc_score(a.template, b.template)) FILTER (WHERE a.finger <> b.finger) + 0.1
       AS genuine_above_impostor
FROM mcc_synthetic(30, 2, 11) a, mcc_synthetic(30, 2, 11) b
WHERE a.impression = 0 AND b.impression = 1;

-- empty sets: no fingers, no impressions, NULL arguments (STRICT)
SELECT count(*) FROM mcc_synthetic(0);
SELECT count(*) FROM mcc_synthetic(5, 0);
SELECT count(*) FROM mcc_synthetic(NULL);
SELECT count(*) FROM mcc_synthetic(5, 1, NULL);
SELECT count(*) FROM mcc_synthetic(5, 1, 1, 0, NULL);

-- the last finger may be the largest bigint; one more is out of range
SELECT finger FROM mcc_synthetic(2, 1, 1, 9223372036854775806);

-- errors
SELECT * FROM mcc_synthetic(-1);
SELECT * FROM mcc_synthetic(1, -1);
SELECT * FROM mcc_synthetic(3, 1, 1, 9223372036854775807);
SELECT * FROM mcc_synthetic(1, 1, 1, 0, 'nosuchprofile');

-- volatility as declared
SELECT provolatile, proisstrict, proparallel, proretset
FROM pg_proc WHERE oid = 'mcc_synthetic'::regproc;
