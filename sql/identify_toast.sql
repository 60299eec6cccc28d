-- identify() over templates stored out of line whose chunks do not simply
-- follow each other: the backend scan reads the TOAST table's pages in order
-- (src/template/toast_stream.c) and assembles each value from its chunks
-- wherever they lie within a few pages, or hands it back for the usual
-- fetch. Values of two chunks among ordinary ones, values whose two chunks
-- lie on pages apart (holes left by deleted rows filled by values
-- whose second chunk does not fit the rest of the hole), values compressed,
-- tpami2010 values of seven to twelve chunks: every ranking equals brute
-- force (LSS), and the default refinement's answer equals its own through a
-- view (read through SQL, every value detoasted the usual way).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/same.sql
SET mcc.refine_method = 'none';

-- gpu2015: 1,500 synthetic fingers (a third over 2 kB: two chunks)
CREATE TABLE gchunks (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO gchunks SELECT finger, template FROM mcc_synthetic(1500, 1, 11);
SELECT count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes BETWEEN 2100 AND 3990) > 300 AS many_of_two_chunks,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes < 1900) > 500 AS many_inline
FROM gchunks;
CREATE TABLE pchunks (pid int PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO pchunks SELECT 1 + finger / 500, template FROM mcc_synthetic(1, 2, 11, 0) WHERE impression = 1
	UNION ALL SELECT 1 + finger / 500, template FROM mcc_synthetic(1, 2, 11, 500) WHERE impression = 1
	UNION ALL SELECT 1 + finger / 500, template FROM mcc_synthetic(1, 2, 11, 1000) WHERE impression = 1;
-- identify(k = every row) against brute force, for each probe
CREATE FUNCTION chunks_same(gallery text, probes text, pid int, k int) RETURNS text LANGUAGE sql AS $$
	SELECT same(format('SELECT id, score FROM identify(%L, (SELECT tpl FROM %s WHERE pid = %s), %s)',
					   gallery, probes, pid, k),
				format('SELECT id, s FROM (SELECT id, mcc_score(tpl, (SELECT tpl FROM %s WHERE pid = %s), ''lss'') AS s
						FROM %s) b ORDER BY s DESC, id LIMIT %s', probes, pid, gallery, k))
$$;
SELECT pid, chunks_same('gchunks', 'pchunks', pid, 2000) FROM pchunks ORDER BY pid;

-- Chunks on pages apart: half the rows whose value's second chunk is small
-- deleted and vacuumed away, then values of two nearly full chunks: the
-- first fills a hole, the second does not fit what is left there and goes
-- to another page (the stream assembles those, or hands them back for the
-- usual fetch); values compressed (STORAGE extended: out of line and
-- compressed, or inline compressed) among them
DELETE FROM gchunks WHERE (mcc_template_info(tpl)).bytes BETWEEN 2100 AND 2400 AND id % 2 = 0;
VACUUM gchunks;
INSERT INTO gchunks SELECT id, tpl FROM (
	SELECT 20000 + n AS id, (SELECT format('{"width":600,"height":600,"dpi":500,"minutiae":[%s]}',
		string_agg(format('[%s,%s,%s,"ending",60]', 20 + abs(hashint4(n * 1000 + i)) % 560,
			20 + abs(hashint4(n * 1000 + i + 500)) % 560, abs(hashint4(-n * 1000 - i)) % 628 / 100.0), ','))
		FROM generate_series(1, 80 + n % 10) i)::mcc_template AS tpl
	FROM generate_series(0, 29) n) w
WHERE (mcc_template_info(tpl)).bytes BETWEEN 3500 AND 3990;
ALTER TABLE gchunks ALTER tpl SET STORAGE extended;
INSERT INTO gchunks SELECT 30000 + finger, template FROM mcc_synthetic(300, 1, 13);
ALTER TABLE gchunks ALTER tpl SET STORAGE external;
SELECT count(*) FILTER (WHERE pg_column_compression(tpl) IS NOT NULL) > 30 AS some_compressed FROM gchunks;
SELECT pid, chunks_same('gchunks', 'pchunks', pid, 2000) FROM pchunks ORDER BY pid;

-- The default refinement: its shortlist copies the values it keeps from the
-- stream's buffers; the same answer as through a view (SPI, values detoasted)
CREATE VIEW gchunks_v AS SELECT * FROM gchunks;
SET mcc.refine_method TO DEFAULT;
SELECT pid, same(format('SELECT * FROM identify(''gchunks'', (SELECT tpl FROM pchunks WHERE pid = %s), 20, id_column => ''id'')', pid),
				 format('SELECT * FROM identify(''gchunks_v'', (SELECT tpl FROM pchunks WHERE pid = %s), 20, id_column => ''id'')', pid))
FROM pchunks ORDER BY pid;
SET mcc.refine_method = 'none';

-- tpami2010 (320-byte cylinders): values of seven to twelve chunks
CREATE TABLE gchunks_t (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO gchunks_t SELECT finger, template FROM mcc_synthetic(200, 1, 14, 0, 'tpami2010');
SELECT count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 4 + 8 * 1996) > 10 AS many_over_eight_chunks,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes <= 4 + 8 * 1996) > 10 AS many_of_eight_or_fewer
FROM gchunks_t;
CREATE TABLE pchunks_t (pid int PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO pchunks_t SELECT 1 + finger / 100, template FROM mcc_synthetic(1, 2, 14, 0, 'tpami2010') WHERE impression = 1
	UNION ALL SELECT 1 + finger / 100, template FROM mcc_synthetic(1, 2, 14, 150, 'tpami2010') WHERE impression = 1;
SELECT pid, chunks_same('gchunks_t', 'pchunks_t', pid, 200) FROM pchunks_t ORDER BY pid;

DROP VIEW gchunks_v;
DROP TABLE gchunks, pchunks, gchunks_t, pchunks_t;
DROP FUNCTION chunks_same, same;
