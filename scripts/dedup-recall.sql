-- dedup-recall.sql: the genuine pairs that mcc_dedup()'s two thresholds keep, and the
-- impostor pairs its LSS filter passes, on synthetic fingers (docs/accuracy.md,
-- "Deduplication: the LSS filter"). psql -f scripts/dedup-recall.sql on a database with mcc.
CREATE TEMP TABLE g AS SELECT finger, impression, template AS tpl FROM mcc_synthetic(300, 2, 5);
CREATE TEMP TABLE gp AS SELECT a.finger, mcc_score(a.tpl, b.tpl, 'lss') AS lss, mcc_score(a.tpl, b.tpl, 'fused') AS fused
FROM g a JOIN g b ON a.finger = b.finger AND a.impression = 0 AND b.impression = 1;
SELECT count(*) AS genuine,
  count(*) FILTER (WHERE fused >= mcc_threshold(0.0001)) AS fused_ok,
  count(*) FILTER (WHERE fused >= mcc_threshold(0.0001) AND lss >= mcc_threshold(0.001, 'lss')) AS both_1e3,
  count(*) FILTER (WHERE fused >= mcc_threshold(0.0001) AND lss >= mcc_threshold(0.01, 'lss')) AS both_1e2,
  count(*) FILTER (WHERE fused >= mcc_threshold(0.0001) AND lss >= mcc_threshold(0.1, 'lss')) AS both_1e1,
  count(*) FILTER (WHERE lss >= mcc_threshold(0.0001, 'lss')) AS lss_alone_1e4
FROM gp;
-- impostor rates on this synthetic set
CREATE TEMP TABLE ip AS SELECT mcc_score(a.tpl, b.tpl, 'lss') AS lss FROM g a JOIN g b ON a.finger < b.finger AND a.impression = 0 AND b.impression = 0 AND b.finger < a.finger + 40;
SELECT count(*) AS impostor, count(*) FILTER (WHERE lss >= mcc_threshold(0.001, 'lss')) AS above_1e3,
  count(*) FILTER (WHERE lss >= mcc_threshold(0.01, 'lss')) AS above_1e2, count(*) FILTER (WHERE lss >= mcc_threshold(0.1, 'lss')) AS above_1e1 FROM ip;
