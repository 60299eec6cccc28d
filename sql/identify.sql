-- identify(): exact top-k against brute force, mated search, min_score, k
-- beyond the table, ties, snapshots, views, partitions, row-level security,
-- privileges, and every error.
--
-- This file tests the LSS stage on its own: mcc.refine_method = 'none' makes
-- identify() the plain top-k by LSS, mcc_score(a, b, 'lss'). The default
-- two-stage search (LSS shortlist, then 'fused') is tested in
-- identify_refine.sql.
SET mcc.refine_method = 'none';

-- A gallery of 2,000 synthetic fingers (impression 0, id = finger) and 50
-- probes: impression 1 of 40 gallery fingers spread over the ids, and 10
-- fingers that are not in the gallery.
CREATE TABLE g (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO g SELECT finger, template FROM mcc_synthetic(2000, 1, 42);
CREATE TABLE probes (pid int PRIMARY KEY, finger bigint, mated bool, tpl mcc_template);
INSERT INTO probes
SELECT f / 50 + 1, s.finger, true, s.template
FROM generate_series(0, 1999, 50) f, mcc_synthetic(1, 2, 42, f) s WHERE s.impression = 1;
INSERT INTO probes
SELECT 40 + (finger - 100000)::int + 1, finger, false, template FROM mcc_synthetic(10, 1, 42, 100000);
SELECT count(*) AS gallery FROM g;
SELECT count(*) AS probes, count(*) FILTER (WHERE mated) AS mated FROM probes;

-- Brute force: every (probe, row) score with mcc_score(.., 'lss'), ranked by score then id.
CREATE TABLE bf AS
SELECT p.pid, g.id, mcc_score(g.tpl, p.tpl, 'lss') AS s FROM probes p, g;
CREATE TABLE bf_rank AS
SELECT pid, id, s, row_number() OVER (PARTITION BY pid ORDER BY s DESC, id) AS r FROM bf;
CREATE INDEX ON bf (pid, id);
CREATE INDEX ON bf_rank (pid, r);

-- identify(k) returns exactly the first k rows of the brute-force ranking, in
-- order, with the same scores: 50 probes x (1 + 5 + 10 + 100) = 5,800 rows.
CREATE TABLE ks (k int);
INSERT INTO ks VALUES (1), (5), (10), (100);
CREATE TABLE got AS
SELECT p.pid, ks.k, t.id, t.score, t.n
FROM probes p, ks, identify('g', p.tpl, ks.k) WITH ORDINALITY AS t(id, score, n);
CREATE TABLE want AS
SELECT b.pid, ks.k, b.id, b.s AS score, b.r AS n FROM bf_rank b, ks WHERE b.r <= ks.k;
SELECT (SELECT count(*) FROM got) AS got, (SELECT count(*) FROM want) AS want,
       (SELECT count(*) FROM (TABLE got EXCEPT TABLE want) x) AS got_not_wanted,
       (SELECT count(*) FROM (TABLE want EXCEPT TABLE got) x) AS wanted_not_got;
-- the default k is 10
SELECT count(*) = 500 AS default_k_10,
       bool_and((p.pid, t.id, t.score) IN (SELECT pid, id, score FROM want WHERE k = 10)) AS same_rows
FROM probes p, identify('g', p.tpl) t;
-- the rankings contain ties (equal scores), so the id order is exercised
SELECT count(*) > 0 AS ranking_has_ties
FROM bf_rank a JOIN bf_rank b ON a.pid = b.pid AND b.r = a.r + 1
WHERE a.r < 100 AND a.s = b.s;

-- Mated search: the probe's own finger is found at rank 1 for most mated
-- probes; identify() and brute force agree on the count.
SELECT count(*) AS mated,
       count(*) FILTER (WHERE (SELECT t.id FROM identify('g', p.tpl, 1) t) = p.finger) AS rank1,
       count(*) FILTER (WHERE (SELECT b.id FROM bf_rank b WHERE b.pid = p.pid AND b.r = 1) = p.finger)
         AS rank1_brute_force
FROM probes p WHERE mated;
SELECT round(count(*) FILTER (WHERE (SELECT t.id FROM identify('g', p.tpl, 1) t) = p.finger)
             / count(*)::numeric, 3) AS rank1_rate,
       count(*) FILTER (WHERE (SELECT t.id FROM identify('g', p.tpl, 1) t) = p.finger)
             > 0.5 * count(*) AS most_at_rank1
FROM probes p WHERE mated;
-- mated probes find their finger with a higher top score than non-mated ones
SELECT avg(t.score) FILTER (WHERE p.mated) > avg(t.score) FILTER (WHERE NOT p.mated)
       AS mated_top_scores_higher
FROM probes p, identify('g', p.tpl, 1) t;

-- min_score: with each probe's 20th best score as threshold, identify returns
-- exactly the rows scoring at least that (20 or more per probe, with ties)
CREATE TABLE mins AS SELECT pid, s AS min_score FROM bf_rank WHERE r = 20;
CREATE TABLE got_min AS
SELECT p.pid, t.id, t.score FROM probes p JOIN mins USING (pid), identify('g', p.tpl, 2000, mins.min_score) t;
CREATE TABLE want_min AS
SELECT pid, id, s AS score FROM bf JOIN mins USING (pid) WHERE s >= min_score;
SELECT (SELECT count(*) FROM got_min) = (SELECT count(*) FROM want_min) AS same_count,
       (SELECT count(*) FROM (TABLE got_min EXCEPT TABLE want_min) x) AS got_not_wanted,
       (SELECT count(*) FROM (TABLE want_min EXCEPT TABLE got_min) x) AS wanted_not_got,
       (SELECT min(n) FROM (SELECT count(*) AS n FROM got_min GROUP BY pid) x) >= 20 AS at_least_20_each,
       (SELECT count(DISTINCT pid) FROM got_min) AS probes;
-- a fixed threshold: the same rows as brute force, all of them at least 0.5
SELECT (SELECT count(*) FROM probes p, identify('g', p.tpl, 2000, 0.5) t) AS got,
       (SELECT count(*) FROM bf WHERE s >= 0.5::real) AS want,
       (SELECT count(*) FROM (SELECT p.pid, t.id, t.score FROM probes p, identify('g', p.tpl, 2000, 0.5) t
                               EXCEPT SELECT pid, id, s FROM bf WHERE s >= 0.5::real) x) AS got_not_wanted,
       (SELECT min(t.score) >= 0.5::real FROM probes p, identify('g', p.tpl, 2000, 0.5) t) AS all_above;
-- min_score 1 returns only perfect scores: a gallery template as probe finds itself
SELECT (SELECT count(*) FROM identify('g', g.tpl, 10, 1) t WHERE t.id = g.id) AS finds_itself,
       (SELECT count(*) FROM identify('g', g.tpl, 10, 1) t WHERE t.score < 1) AS below_1
FROM g WHERE id = 7;

-- k larger than the table returns the whole ranking; k at its maximum never
-- allocates k rows up front
SELECT count(*) AS probes,
       count(*) FILTER (WHERE got = 2000 AND same) AS whole_ranking
FROM (SELECT p.pid,
             (SELECT count(*) FROM identify('g', p.tpl, 5000)) AS got,
             NOT EXISTS (SELECT t.id, t.score, t.n FROM identify('g', p.tpl, 5000) WITH ORDINALITY t(id, score, n)
                         EXCEPT SELECT id, s, r FROM bf_rank WHERE pid = p.pid) AS same
      FROM probes p WHERE p.pid <= 5) x;
SELECT count(*) FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), 2147483647);

-- Ties by id: every template twice, under id and id + 1000
CREATE TABLE gdup (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO gdup SELECT id, tpl FROM g WHERE id < 300;
INSERT INTO gdup SELECT id + 1000, tpl FROM g WHERE id < 300;
-- brute force over any gallery (key column "key", templates in "tpl"), with ranks
CREATE FUNCTION brute(gallery regclass, probe mcc_template, k int, min_score real, key name)
RETURNS TABLE(id bigint, score real, n bigint) LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT key::bigint, s, row_number() OVER (ORDER BY s DESC, key)
		 FROM (SELECT %I AS key, mcc_score(tpl, $1, ''lss'') AS s FROM %s WHERE tpl IS NOT NULL) b
		 WHERE s >= $3 ORDER BY s DESC, key LIMIT $2', key, gallery)
		USING probe, k, min_score;
END $$;
-- identify() (with id_column) returns the brute-force ranking (by key), ranks included
CREATE FUNCTION same_as_brute(gallery regclass, probe mcc_template, k int, min_score real DEFAULT 0,
							  id_column name DEFAULT NULL, key name DEFAULT 'id')
RETURNS bool LANGUAGE sql STABLE AS $$
	SELECT NOT EXISTS (SELECT t.id, t.score, t.n FROM identify(gallery, probe, k, min_score, id_column)
	                     WITH ORDINALITY t(id, score, n)
	                   EXCEPT SELECT * FROM brute(gallery, probe, k, min_score, key))
	   AND NOT EXISTS (SELECT * FROM brute(gallery, probe, k, min_score, key)
	                   EXCEPT SELECT t.id, t.score, t.n FROM identify(gallery, probe, k, min_score, id_column)
	                     WITH ORDINALITY t(id, score, n))
$$;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gdup', tpl, 20)) AS equal
FROM probes WHERE pid % 5 = 0;
-- in every duplicate pair both score the same and the smaller id ranks first
SELECT bool_and(a.score = b.score AND a.n < b.n) AS pairs_tied_smaller_id_first,
       count(*) AS pairs
FROM probes p,
     LATERAL identify('gdup', p.tpl, 600) WITH ORDINALITY a(id, score, n),
     LATERAL identify('gdup', p.tpl, 600) WITH ORDINALITY b(id, score, n)
WHERE p.pid = 3 AND b.id = a.id + 1000;

-- NULL templates are skipped
CREATE TABLE gnull (id int PRIMARY KEY, tpl mcc_template);
INSERT INTO gnull SELECT id, CASE WHEN id % 3 = 0 THEN NULL ELSE tpl END FROM g WHERE id < 100;
SELECT count(*) AS non_null, (SELECT count(*) FROM identify('gnull', (SELECT tpl FROM probes WHERE pid = 2), 1000)) AS returned
FROM gnull WHERE tpl IS NOT NULL;
SELECT same_as_brute('gnull', tpl, 1000) AS equal FROM probes WHERE pid = 2;
-- a gallery with no template at all, and an empty one, return nothing
UPDATE gnull SET tpl = NULL;
SELECT count(*) FROM identify('gnull', (SELECT tpl FROM probes WHERE pid = 2));
TRUNCATE gnull;
SELECT count(*) FROM identify('gnull', (SELECT tpl FROM probes WHERE pid = 2));

-- The statement's snapshot: identify sees what a SELECT in the same
-- statement sees (not the rows the statement itself inserts), and later
-- statements of the transaction see those rows.
CREATE TABLE gsnap (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO gsnap SELECT id, tpl FROM g WHERE id < 10;
BEGIN;
WITH ins AS (INSERT INTO gsnap SELECT id, tpl FROM g WHERE id BETWEEN 10 AND 14 RETURNING id)
SELECT (SELECT count(*) FROM identify('gsnap', (SELECT tpl FROM probes WHERE pid = 1), 100)) AS identify_sees,
       (SELECT count(*) FROM gsnap) AS select_sees,
       (SELECT count(*) FROM ins) AS inserted;
SELECT count(*) AS identify_sees FROM identify('gsnap', (SELECT tpl FROM probes WHERE pid = 1), 100);
ROLLBACK;

-- Views need id_column; they are searched like the rows they show
CREATE VIEW gv AS SELECT id, tpl FROM g WHERE id % 2 = 0;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gv', tpl, 10, 0, 'id')) AS equal
FROM probes WHERE pid % 5 = 0;
SELECT count(*) FILTER (WHERE t.id % 2 <> 0) AS odd_ids
FROM probes p, identify('gv', p.tpl, 50, id_column => 'id') t WHERE p.pid <= 10;
SELECT * FROM identify('gv', (SELECT tpl FROM probes WHERE pid = 1));
-- a key column that is NULL in a row with a template is an error
CREATE VIEW gv_nullkey AS SELECT CASE WHEN id = 5 THEN NULL ELSE id END AS id, tpl FROM g WHERE id < 10;
SELECT * FROM identify('gv_nullkey', (SELECT tpl FROM probes WHERE pid = 1), id_column => 'id');

-- Partitioned tables: the same result as the plain table
CREATE TABLE gp (id bigint PRIMARY KEY, tpl mcc_template) PARTITION BY RANGE (id);
CREATE TABLE gp0 PARTITION OF gp FOR VALUES FROM (0) TO (700);
CREATE TABLE gp1 PARTITION OF gp FOR VALUES FROM (700) TO (1500);
CREATE TABLE gp2 PARTITION OF gp FOR VALUES FROM (1500) TO (MAXVALUE);
INSERT INTO gp SELECT * FROM g;
SELECT count(*) AS probes,
       count(*) FILTER (WHERE
         NOT EXISTS (SELECT * FROM identify('gp', p.tpl, 25) WITH ORDINALITY
                     EXCEPT SELECT * FROM identify('g', p.tpl, 25) WITH ORDINALITY)
         AND NOT EXISTS (SELECT * FROM identify('g', p.tpl, 25) WITH ORDINALITY
                         EXCEPT SELECT * FROM identify('gp', p.tpl, 25) WITH ORDINALITY)) AS equal
FROM probes p;
-- one partition alone is a table too
SELECT same_as_brute('gp1', tpl, 10) AS equal FROM probes WHERE pid = 4;

-- Materialized views: a unique index on a column without NOT NULL is no
-- key, so name it
CREATE MATERIALIZED VIEW gm AS SELECT id, tpl FROM g WHERE id < 500;
CREATE UNIQUE INDEX gm_id ON gm (id);
SELECT same_as_brute('gm', tpl, 10, 0, 'id') AS equal FROM probes WHERE pid = 4;
SELECT * FROM identify('gm', (SELECT tpl FROM probes WHERE pid = 1));

-- The key from a unique index on a NOT NULL integer column, when there is
-- no integer primary key; an integer domain works as a key type
CREATE DOMAIN code_t AS int;
CREATE TABLE gu (name text PRIMARY KEY, code code_t NOT NULL UNIQUE, tpl mcc_template);
INSERT INTO gu SELECT 'f' || id, id + 5000, tpl FROM g WHERE id < 200;
SELECT min(id), max(id), count(*) FROM identify('gu', (SELECT tpl FROM probes WHERE pid = 1), 1000);
SELECT same_as_brute('gu', tpl, 10, 0, NULL, 'code') AS equal FROM probes WHERE pid = 1;
-- several candidate keys, or none usable
CREATE TABLE gu2 (a int NOT NULL UNIQUE, b bigint NOT NULL UNIQUE, tpl mcc_template);
SELECT * FROM identify('gu2', (SELECT tpl FROM probes WHERE pid = 1));
SELECT count(*) FROM identify('gu2', (SELECT tpl FROM probes WHERE pid = 1), id_column => 'b');
CREATE TABLE gu3 (a int UNIQUE, b int, c int NOT NULL, tpl mcc_template, PRIMARY KEY (b, c));
CREATE UNIQUE INDEX gu3_partial ON gu3 (c) WHERE c > 0;
CREATE UNIQUE INDEX gu3_expr ON gu3 ((c + 1));
SELECT * FROM identify('gu3', (SELECT tpl FROM probes WHERE pid = 1));

-- Template columns: the only one of type mcc_template, else template_column
CREATE TABLE g2 (id bigint PRIMARY KEY, left_tpl mcc_template, right_tpl mcc_template);
INSERT INTO g2 SELECT id, tpl, NULL FROM g WHERE id < 100;
SELECT * FROM identify('g2', (SELECT tpl FROM probes WHERE pid = 1));
SELECT count(*) AS left_rows FROM identify('g2', (SELECT tpl FROM probes WHERE pid = 1), 1000, template_column => 'left_tpl');
SELECT count(*) AS right_rows FROM identify('g2', (SELECT tpl FROM probes WHERE pid = 1), 1000, template_column => 'right_tpl');
-- dropped columns do not count and cannot be named
ALTER TABLE g2 DROP COLUMN right_tpl;
SELECT count(*) AS after_drop FROM identify('g2', (SELECT tpl FROM probes WHERE pid = 1), 1000);
SELECT * FROM identify('g2', (SELECT tpl FROM probes WHERE pid = 1), template_column => 'right_tpl');
ALTER TABLE g2 DROP COLUMN left_tpl;
SELECT * FROM identify('g2', (SELECT tpl FROM probes WHERE pid = 1));

-- Row-level security: a policy hides ids divisible by 3 from a reader;
-- identify returns only the rows that reader can see, as brute force run by
-- the same role does
CREATE ROLE regress_mcc_reader;
CREATE TABLE grls (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO grls SELECT id, tpl FROM g WHERE id < 600;
ALTER TABLE grls ENABLE ROW LEVEL SECURITY;
CREATE POLICY hide_threes ON grls FOR SELECT TO regress_mcc_reader USING (id % 3 <> 0);
GRANT SELECT ON grls, probes TO regress_mcc_reader;
SET ROLE regress_mcc_reader;
SELECT count(*) AS visible FROM grls;
SELECT count(*) AS returned, count(*) FILTER (WHERE t.id % 3 = 0) AS hidden_returned
FROM identify('grls', (SELECT tpl FROM probes WHERE pid = 1), 1000) t;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('grls', tpl, 10)) AS equal
FROM probes WHERE pid % 5 = 0;
RESET ROLE;
-- the owner is not subject to the policy
SELECT count(*) AS owner_sees FROM identify('grls', (SELECT tpl FROM probes WHERE pid = 1), 1000);
-- with row_security off, the reader gets the same error as a plain SELECT
SET ROLE regress_mcc_reader;
SET row_security = off;
SELECT count(*) FROM identify('grls', (SELECT tpl FROM probes WHERE pid = 1));
RESET row_security;
RESET ROLE;

-- Privileges: no SELECT at all, or on only one of the two columns, is 42501;
-- SELECT on the two columns is enough
CREATE ROLE regress_mcc_nopriv;
CREATE TABLE gpriv (id bigint PRIMARY KEY, secret text, tpl mcc_template);
INSERT INTO gpriv SELECT id, 'x', tpl FROM g WHERE id < 50;
GRANT SELECT ON probes TO regress_mcc_nopriv;
SET ROLE regress_mcc_nopriv;
SELECT * FROM identify('gpriv', (SELECT tpl FROM probes WHERE pid = 1));
RESET ROLE;
GRANT SELECT (id) ON gpriv TO regress_mcc_nopriv;
SET ROLE regress_mcc_nopriv;
SELECT * FROM identify('gpriv', (SELECT tpl FROM probes WHERE pid = 1));
RESET ROLE;
GRANT SELECT (tpl) ON gpriv TO regress_mcc_nopriv;
SET ROLE regress_mcc_nopriv;
SELECT count(*) AS with_column_privileges FROM identify('gpriv', (SELECT tpl FROM probes WHERE pid = 1), 1000);
RESET ROLE;
-- a view runs with its owner's rights on the table beneath
CREATE VIEW gpriv_v AS SELECT id, tpl FROM gpriv;
GRANT SELECT ON gpriv_v TO regress_mcc_nopriv;
REVOKE SELECT ON gpriv FROM regress_mcc_nopriv;
REVOKE SELECT (id, tpl) ON gpriv FROM regress_mcc_nopriv;
SET ROLE regress_mcc_nopriv;
SELECT count(*) AS through_view FROM identify('gpriv_v', (SELECT tpl FROM probes WHERE pid = 1), 1000, id_column => 'id');
SELECT * FROM identify('gpriv', (SELECT tpl FROM probes WHERE pid = 1));
RESET ROLE;

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql
CREATE TABLE p1 AS SELECT tpl FROM probes WHERE pid = 1;
CREATE SEQUENCE not_a_table;
CREATE TYPE not_a_table_either AS (a int);
CREATE TABLE gnotpl (id bigint PRIMARY KEY, t text);
CREATE TABLE gtextkey (id text PRIMARY KEY, tpl mcc_template);
CREATE TABLE gmixed (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO gmixed SELECT id, tpl FROM g WHERE id < 20;
INSERT INTO gmixed SELECT 1000 + finger, template FROM mcc_synthetic(1, 1, 42, 0, 'tpami2010');
SELECT q AS arguments, sqlstate_of('SELECT * FROM identify(' || q || ')') AS error FROM (VALUES
	('NULL, (SELECT tpl FROM p1)'),
	('''g'', NULL'),
	('''g'', (SELECT tpl FROM p1), NULL'),
	('''g'', (SELECT tpl FROM p1), 10, NULL'),
	('''g'', (SELECT tpl FROM p1), 0'),
	('''g'', (SELECT tpl FROM p1), -5'),
	('''g'', (SELECT tpl FROM p1), 10, ''NaN'''),
	('''g'', (SELECT tpl FROM p1), 10, -0.5'),
	('''g'', (SELECT tpl FROM p1), 10, 1.5'),
	('''g'', (SELECT tpl FROM p1), 10, ''Infinity'''),
	('''not_a_table'', (SELECT tpl FROM p1)'),
	('''g_pkey'', (SELECT tpl FROM p1)'),
	('''not_a_table_either'', (SELECT tpl FROM p1)'),
	('4294967295::oid::regclass, (SELECT tpl FROM p1)'),
	('''gnotpl'', (SELECT tpl FROM p1)'),
	('''g'', (SELECT tpl FROM p1), template_column => ''nosuch'''),
	('''g'', (SELECT tpl FROM p1), template_column => ''id'''),
	('''g'', (SELECT tpl FROM p1), template_column => ''ctid'''),
	('''g'', (SELECT tpl FROM p1), id_column => ''nosuch'''),
	('''g'', (SELECT tpl FROM p1), id_column => ''tpl'''),
	('''gu'', (SELECT tpl FROM p1), id_column => ''name'''),
	('''g'', (SELECT tpl FROM p1), id_column => ''ctid'''),
	('''g'', (SELECT tpl FROM p1), id_column => ''xmin'''),
	('''gtextkey'', (SELECT tpl FROM p1)'),
	('''gv'', (SELECT tpl FROM p1)'),
	('''gu2'', (SELECT tpl FROM p1)'),
	('''gmixed'', (SELECT tpl FROM p1)'),
	('''gv_nullkey'', (SELECT tpl FROM p1), id_column => ''id''')
) AS v(q);
-- the full reports of a few
SELECT * FROM identify('g', NULL);
SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), 0);
SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), 10, 'NaN');
SELECT * FROM identify('not_a_table', (SELECT tpl FROM probes WHERE pid = 1));
SELECT * FROM identify('gnotpl', (SELECT tpl FROM probes WHERE pid = 1));
SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), template_column => 'id');
SELECT * FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), id_column => 'tpl');
SELECT * FROM identify('gtextkey', (SELECT tpl FROM probes WHERE pid = 1));
SELECT * FROM identify('gmixed', (SELECT tpl FROM probes WHERE pid = 1));
-- the gallery is usable after all those errors, and a tpami2010 probe
-- searches tpami2010 templates
SELECT count(*) AS after_errors FROM identify('g', (SELECT tpl FROM probes WHERE pid = 1), 3);
DELETE FROM gmixed WHERE id < 1000;
SELECT t.id, t.score = 1 AS perfect
FROM mcc_synthetic(1, 1, 42, 0, 'tpami2010') s, identify('gmixed', s.template) t;

-- Templates stored out of line (over about 2 kB) and rewritten in another
-- order than their rows: the backend scan reads the TOAST table's pages in
-- order, meets these values elsewhere or not at all, and fetches those the
-- usual way; rows deleted, and rows changed by the transaction itself (its
-- new values, the old ones still on the pages), rank as brute force says
CREATE TABLE gtoast (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO gtoast SELECT id, tpl FROM g;
UPDATE gtoast t SET tpl = s.tpl FROM g s WHERE s.id = 1999 - t.id AND t.id % 4 = 1;
DELETE FROM gtoast WHERE id % 7 = 3;
SELECT count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 2100) > 100 AS many_out_of_line,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes < 1900) > 100 AS many_inline
FROM gtoast;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gtoast', tpl, 2000)) AS equal
FROM probes WHERE pid IN (3, 17);
BEGIN;
UPDATE gtoast t SET tpl = s.tpl FROM g s WHERE s.id = (t.id + 500) % 2000 AND t.id % 3 = 0;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gtoast', tpl, 2000)) AS equal
FROM probes WHERE pid IN (3, 17);
ROLLBACK;

-- Every way a template can be stored, in one gallery: compressed inline
-- (STORAGE main), compressed out of line (a low toast_tuple_target),
-- uncompressed inline and out of line. The backend scan hands rows over in
-- batches that span heap pages and flushes of the TOAST stream, reading
-- compressed values through detoasting and the others where they lie; all
-- rank as brute force says, before and after the transaction itself
-- rewrites and deletes rows (its new values in memory, on other pages)
CREATE TABLE gstore (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
ALTER TABLE gstore ALTER tpl SET STORAGE main, ALTER tpl SET COMPRESSION pglz;
INSERT INTO gstore SELECT id, tpl FROM g WHERE id < 700;
ALTER TABLE gstore ALTER tpl SET STORAGE extended, SET (toast_tuple_target = 128);
INSERT INTO gstore SELECT id, tpl FROM g WHERE id >= 700 AND id < 1400;
ALTER TABLE gstore ALTER tpl SET STORAGE external, RESET (toast_tuple_target);
INSERT INTO gstore SELECT id, tpl FROM g WHERE id >= 1400;
SELECT id / 700 AS part, pg_column_compression(tpl) AS compression, count(*)
FROM gstore GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gstore', tpl, 2000)) AS equal
FROM probes WHERE pid IN (5, 21);
BEGIN;
UPDATE gstore t SET tpl = s.tpl FROM g s WHERE s.id = 1999 - t.id AND t.id % 5 = 2;
DELETE FROM gstore WHERE id % 11 = 4;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gstore', tpl, 2000)) AS equal
FROM probes WHERE pid IN (5, 21);
ROLLBACK;

-- Templates of many chunks among ordinary ones: 40 of 100 to 256 cylinders
-- (4.8 to 12.3 kB: three to seven TOAST chunks; those over 8 kB get a buffer
-- of their own from the stream, the others one of the buffers it reuses once
-- the value before was scored), their rows and chunks interleaved with those
-- of single-chunk and inline templates. Each finds itself first (LSS),
-- and all rank as brute force says.
CREATE TABLE gbig (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
CREATE TABLE bigtpl AS
SELECT 3000 + n AS id, (SELECT format('{"width":600,"height":600,"dpi":500,"minutiae":[%s]}',
	string_agg(format('[%s,%s,%s,"ending",60]', 20 + abs(hashint4(n * 1000 + i)) % 560,
		20 + abs(hashint4(n * 1000 + i + 500)) % 560, abs(hashint4(-n * 1000 - i)) % 628 / 100.0), ','))
	FROM generate_series(1, 100 + (n * 37) % 157) i)::mcc_template AS tpl
FROM generate_series(0, 39) n;
INSERT INTO gbig SELECT id, tpl FROM (SELECT id, tpl, id % 40 AS o FROM g WHERE id < 800
	UNION ALL SELECT id, tpl, id - 3000 FROM bigtpl) x ORDER BY o, id;
SELECT count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 8192) AS over_8k,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes BETWEEN 4000 AND 8192) AS from_4k_to_8k,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes BETWEEN 2100 AND 4000) > 100 AS many_of_two_chunks,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes < 1900) > 100 AS many_inline
FROM gbig;
SELECT count(*) AS big, count(*) FILTER (WHERE (SELECT t.id FROM identify('gbig', b.tpl, 1, refine => 'none') t) = b.id
	AND (SELECT t.score FROM identify('gbig', b.tpl, 1, refine => 'none') t) = mcc_score(b.tpl, b.tpl, 'lss')) AS find_themselves
FROM bigtpl b;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gbig', tpl, 840)) AS equal
FROM (SELECT tpl FROM probes WHERE pid IN (6, 23) UNION ALL SELECT tpl FROM bigtpl WHERE id % 9 = 0) p;

-- Pages are pinned through the buffers that held them on the session's
-- last scan of the gallery (src/template/block_map.h), a guess checked
-- against each buffer's tag. After the gallery is emptied and vacuumed, then
-- refilled in another order and grown past its old size, and after VACUUM
-- FULL gives it new files, the guesses point at buffers that hold other
-- blocks or none; a temporary gallery (local buffers) keeps no guesses. All
-- rank as brute force says.
CREATE TABLE gmoved (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO gmoved SELECT id, tpl FROM g WHERE id < 1000;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gmoved', tpl, 1000)) AS equal
FROM probes WHERE pid IN (4, 19);
DELETE FROM gmoved;
VACUUM gmoved;
INSERT INTO gmoved SELECT 1999 - id, tpl FROM g ORDER BY id DESC;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gmoved', tpl, 2000)) AS equal
FROM probes WHERE pid IN (4, 19);
VACUUM FULL gmoved;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gmoved', tpl, 2000)) AS equal
FROM probes WHERE pid IN (4, 19);
CREATE TEMP TABLE gtemp (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO gtemp SELECT id, tpl FROM g;
SELECT count(*) AS probes, count(*) FILTER (WHERE same_as_brute('gtemp', tpl, 2000)) AS equal
FROM probes WHERE pid IN (4, 19);

-- declared properties
SELECT provolatile, proisstrict, proparallel, proretset, prorows
FROM pg_proc WHERE oid = 'identify'::regproc;

DROP VIEW gv, gv_nullkey, gpriv_v;
DROP MATERIALIZED VIEW gm;
DROP TABLE g, probes, bf, bf_rank, ks, got, want, mins, got_min, want_min, gdup, gnull, gsnap,
	gp, gu, gu2, gu3, g2, grls, gpriv, gnotpl, gtextkey, gmixed, p1, gtoast, gstore,
	gbig, bigtpl, gmoved, gtemp;
DROP FUNCTION brute, same_as_brute, try, sqlstate_of;
DROP SEQUENCE not_a_table;
DROP TYPE not_a_table_either;
DROP DOMAIN code_t;
DROP ROLE regress_mcc_reader, regress_mcc_nopriv;
