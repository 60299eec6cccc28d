-- identify() over templates stored out of line, read where their TOAST
-- chunks lie: the backend scan scores such a value in its chunks without
-- assembling it (src/core/mcc/mcc_template_split.h), copying only what a
-- chunk boundary cuts (the header, a cylinder, the metadata). Chunk
-- boundaries fall everywhere in a template; values of more than eight
-- chunks, and values whose chunks lie on pages apart, are assembled; values
-- compressed are detoasted. Every ranking equals brute force (LSS), and the
-- default refinement equals its own result through a view (read through SQL,
-- every value detoasted whole).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/same.sql
SET mcc.refine_method = 'none';

-- Where the chunk boundaries of a template stored out of line fall: chunk k
-- starts at byte 4 + 1996 k of the value (docs/formats.md's offsets); a
-- cylinder takes 32 bytes (gpu2015) or 320 (tpami2010: values and masks).
CREATE FUNCTION cuts(t mcc_template) RETURNS SETOF text LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN b < o.bits THEN 'header or minutiae'
				WHEN b < o.bits + o.cyl * i.cylinders THEN 'cylinder, byte ' || (b - o.bits) % o.cyl
				ELSE 'metadata' END
	FROM mcc_template_info(t) i,
		LATERAL (SELECT (24 + 12 * i.minutiae + 7) / 8 * 8 AS bits,
						CASE i.profile WHEN 'gpu2015' THEN 32 ELSE 320 END AS cyl) o,
		generate_series(4 + 1996, i.bytes - 1, 1996) b
	WHERE i.bytes > 2100
$$;

-- gpu2015: 1,500 synthetic fingers (a third over 2 kB: two chunks) and 60
-- templates of 100 to 256 minutiae (three to seven chunks; the first
-- boundary inside the minutiae from 165 on), rows and chunks interleaved
CREATE TABLE gsplit (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
CREATE TABLE bigsplit AS
SELECT 3000 + n AS id, (SELECT format('{"width":600,"height":600,"dpi":500,"minutiae":[%s]}',
	string_agg(format('[%s,%s,%s,"ending",60]', 20 + abs(hashint4(n * 1000 + i)) % 560,
		20 + abs(hashint4(n * 1000 + i + 500)) % 560, abs(hashint4(-n * 1000 - i)) % 628 / 100.0), ','))
	FROM generate_series(1, 100 + (n * 53) % 157) i)::mcc_template AS tpl
FROM generate_series(0, 59) n;
INSERT INTO gsplit SELECT id, tpl FROM (SELECT finger AS id, template AS tpl, finger % 60 AS o
	FROM mcc_synthetic(1500, 1, 11) UNION ALL SELECT id, tpl, id - 3000 FROM bigsplit) x ORDER BY o, id;
-- every place a boundary can fall: the header or minutiae, each 4 bytes of a
-- cylinder (its start: no cut), the metadata
SELECT c AS boundary, count(*) > 0 AS seen FROM gsplit, cuts(tpl) c GROUP BY 1 ORDER BY 1;
SELECT count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes BETWEEN 2100 AND 3990) > 300 AS many_of_two_chunks,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 3990) AS of_three_to_seven,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes < 1900) > 500 AS many_inline
FROM gsplit;
CREATE TABLE psplit (pid int PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO psplit SELECT 1 + finger / 500, template FROM mcc_synthetic(1, 2, 11, 0) WHERE impression = 1
	UNION ALL SELECT 1 + finger / 500, template FROM mcc_synthetic(1, 2, 11, 500) WHERE impression = 1
	UNION ALL SELECT 1 + finger / 500, template FROM mcc_synthetic(1, 2, 11, 1000) WHERE impression = 1;
INSERT INTO psplit SELECT 10 + id - 3000, tpl FROM bigsplit WHERE id IN (3007, 3044);
-- identify(k = every row) against brute force, for each probe
CREATE FUNCTION split_same(gallery text, probes text, pid int, k int) RETURNS text LANGUAGE sql AS $$
	SELECT same(format('SELECT id, score FROM identify(%L, (SELECT tpl FROM %s WHERE pid = %s), %s)',
					   gallery, probes, pid, k),
				format('SELECT id, s FROM (SELECT id, mcc_score(tpl, (SELECT tpl FROM %s WHERE pid = %s), ''lss'') AS s
						FROM %s) b ORDER BY s DESC, id LIMIT %s', probes, pid, gallery, k))
$$;
SELECT pid, split_same('gsplit', 'psplit', pid, 2000) FROM psplit ORDER BY pid;
-- a probe finds its own big template first, with its own score
SELECT count(*) AS big, count(*) FILTER (WHERE (SELECT t.id FROM identify('gsplit', b.tpl, 1) t) = b.id
	AND (SELECT t.score FROM identify('gsplit', b.tpl, 1) t) = mcc_score(b.tpl, b.tpl, 'lss')) AS find_themselves
FROM bigsplit b WHERE id % 6 = 0;

-- Chunks on pages apart: half the rows whose value's second chunk is small
-- deleted and vacuumed away, then values of two nearly full chunks: the
-- first fills a hole, the second does not fit what is left there and goes
-- to another page (the stream assembles those, or hands them back for the
-- usual fetch: test/t/003_identify_toast_inplace.pl counts them); compressed
-- values (STORAGE extended: out of line and compressed, or inline
-- compressed) among them
DELETE FROM gsplit WHERE (mcc_template_info(tpl)).bytes BETWEEN 2100 AND 2400 AND id % 2 = 0;
VACUUM gsplit;
INSERT INTO gsplit SELECT id, tpl FROM (
	SELECT 20000 + n AS id, (SELECT format('{"width":600,"height":600,"dpi":500,"minutiae":[%s]}',
		string_agg(format('[%s,%s,%s,"ending",60]', 20 + abs(hashint4(n * 1000 + i)) % 560,
			20 + abs(hashint4(n * 1000 + i + 500)) % 560, abs(hashint4(-n * 1000 - i)) % 628 / 100.0), ','))
		FROM generate_series(1, 80 + n % 10) i)::mcc_template AS tpl
	FROM generate_series(0, 29) n) w
WHERE (mcc_template_info(tpl)).bytes BETWEEN 3500 AND 3990;
ALTER TABLE gsplit ALTER tpl SET STORAGE extended;
INSERT INTO gsplit SELECT 30000 + finger, template FROM mcc_synthetic(300, 1, 13);
ALTER TABLE gsplit ALTER tpl SET STORAGE external;
SELECT count(*) FILTER (WHERE pg_column_compression(tpl) IS NOT NULL) > 30 AS some_compressed FROM gsplit;
SELECT pid, split_same('gsplit', 'psplit', pid, 2000) FROM psplit ORDER BY pid;

-- The default refinement: its shortlist copies the values it keeps from
-- their chunks; the same answer as through a view (SPI, values detoasted)
CREATE VIEW gsplit_v AS SELECT * FROM gsplit;
SET mcc.refine_method TO DEFAULT;
SELECT pid, same(format('SELECT * FROM identify(''gsplit'', (SELECT tpl FROM psplit WHERE pid = %s), 20, id_column => ''id'')', pid),
				 format('SELECT * FROM identify(''gsplit_v'', (SELECT tpl FROM psplit WHERE pid = %s), 20, id_column => ''id'')', pid))
FROM psplit ORDER BY pid;
SET mcc.refine_method = 'none';

-- tpami2010 (320-byte cylinders: a boundary at every fourth byte of one;
-- 7 to 12 chunks, over eight assembled)
CREATE TABLE gsplit_t (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO gsplit_t SELECT finger, template FROM mcc_synthetic(200, 1, 14, 0, 'tpami2010');
SELECT count(DISTINCT c) FILTER (WHERE c LIKE 'cylinder%') AS cut_cylinder_bytes,
	count(*) FILTER (WHERE c NOT LIKE 'cylinder%') > 0 AS cut_elsewhere
FROM gsplit_t, cuts(tpl) c;
SELECT count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 4 + 8 * 1996) > 10 AS many_over_eight_chunks,
	count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes <= 4 + 8 * 1996) > 10 AS many_of_eight_or_fewer
FROM gsplit_t;
CREATE TABLE psplit_t (pid int PRIMARY KEY, tpl mcc_template NOT NULL);
INSERT INTO psplit_t SELECT 1 + finger / 100, template FROM mcc_synthetic(1, 2, 14, 0, 'tpami2010') WHERE impression = 1
	UNION ALL SELECT 1 + finger / 100, template FROM mcc_synthetic(1, 2, 14, 150, 'tpami2010') WHERE impression = 1;
SELECT pid, split_same('gsplit_t', 'psplit_t', pid, 200) FROM psplit_t ORDER BY pid;

DROP VIEW gsplit_v;
DROP TABLE gsplit, bigsplit, psplit, gsplit_t, psplit_t;
DROP FUNCTION cuts, split_same, same;
