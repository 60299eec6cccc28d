-- image_sad: image input (PGM, PNG, smallint arrays), the SAD search of
-- paper 002 (mcc_sad_locate, mcc_sad_map, mcc_sad_map_array), checked
-- against a brute-force SAD written in SQL, and every class of bad input

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- an image from a formula of x (column) and y (row): smallint[h][w]
CREATE FUNCTION img_make(w int, h int, f text) RETURNS smallint[]
LANGUAGE plpgsql AS $$
DECLARE
	r smallint[];
BEGIN
	EXECUTE format('SELECT array_agg(rw ORDER BY y) FROM (SELECT y, array_agg((%s)::smallint ORDER BY x) AS rw
		FROM generate_series(0, $1 - 1) x, generate_series(0, $2 - 1) y GROUP BY y) s', f)
		INTO r USING w, h;
	RETURN r;
END
$$;

-- Eq. 1 of paper 002 by brute force: the SAD of every shift (x, y)
CREATE FUNCTION img_brute(t smallint[], p smallint[]) RETURNS TABLE (x int, y int, sad bigint)
LANGUAGE sql AS $$
	SELECT sx, sy, sum(abs(t[sy + r + 1][sx + c + 1] - p[r + 1][c + 1]))::bigint
	FROM generate_series(0, array_length(t, 2) - array_length(p, 2)) sx,
		 generate_series(0, array_length(t, 1) - array_length(p, 1)) sy,
		 generate_series(0, array_length(p, 1) - 1) r,
		 generate_series(0, array_length(p, 2) - 1) c
	GROUP BY sx, sy
$$;

-- a 12 x 9 target; the pattern is its 4 x 3 rectangle at (5, 3)
CREATE TABLE img AS
SELECT t, t[4:6][6:9] AS p
FROM (SELECT img_make(12, 9, '(x * 37 + y * 11 + x * y * 5) % 256') AS t) s;
SELECT t[1:2], p FROM img;

-- found where it was cut, with SAD 0; the next best as brute force orders them
SELECT l.* FROM img, mcc_sad_locate(t, p, 5) l;
SELECT b.* FROM img, img_brute(t, p) b ORDER BY sad, y, x LIMIT 5;
SELECT (SELECT array_agg(l ORDER BY l.sad, l.y, l.x) FROM mcc_sad_locate(t, p, 1000) l)
	 = (SELECT array_agg(b ORDER BY b.sad, b.y, b.x) FROM img_brute(t, p) b) AS locate_all_equals_brute
FROM img;
SELECT count(*) AS rows_for_k_1000 FROM img, mcc_sad_locate(t, p, 1000);

-- the whole map: bigint[9 - 3 + 1][12 - 4 + 1], element [y + 1][x + 1] = SAD of (x, y)
SELECT array_dims(m) AS map_dims, m[4][6] AS sad_at_5_3 FROM (SELECT mcc_sad_map_array(t, p) m FROM img) s;
SELECT bool_and(m[b.y + 1][b.x + 1] = b.sad) AS map_equals_brute, count(*) AS shifts
FROM (SELECT t, p, mcc_sad_map_array(t, p) m FROM img) s, img_brute(t, p) b;

-- the same through PGM bytea: from_array, crop, to_array, info
SELECT mcc_image_info(mcc_image_from_array(t)) FROM img;
SELECT substr(mcc_image_from_array(p), 1, 12) AS pgm_head, length(mcc_image_from_array(p)) AS bytes FROM img;
SELECT mcc_image_to_array(mcc_image_from_array(t)) = t AS round_trip,
	   mcc_image_to_array(mcc_image_crop(mcc_image_from_array(t), 5, 3, 4, 3)) = p AS crop_is_slice
FROM img;
SELECT l.* FROM img, mcc_sad_locate(mcc_image_from_array(t), mcc_image_crop(mcc_image_from_array(t), 5, 3, 4, 3), 3) l;
SELECT mcc_sad_map_array(mcc_image_from_array(t), mcc_image_from_array(p)) = mcc_sad_map_array(t, p)
	AS bytea_map_equals_array_map FROM img;

-- the map for viewing: 9 x 7 PGM, black (0) at the best shift, white (255) at the worst
SELECT substr(v, 1, 11) AS header, get_byte(v, 11 + 3 * 9 + 5) AS at_best,
	   (SELECT max(get_byte(v, 11 + i)) FROM generate_series(0, 62) i) AS brightest,
	   length(v) - 11 AS pixels
FROM (SELECT mcc_sad_map(t, p) v FROM img) s;
SELECT mcc_sad_map(t, p) = mcc_sad_map(mcc_image_from_array(t), mcc_image_from_array(p)) AS same_view FROM img;

-- a noisy copy: the pattern plus noise in -3..3, clamped; found at (5, 3)
-- with the SAD of the noise, which brute force computes the same way
CREATE TABLE noisy AS
SELECT img_make(4, 3, 'greatest(0, least(255, ((x + 5) * 37 + (y + 3) * 11 + (x + 5) * (y + 3) * 5) % 256
	+ (x * 3 + y * 5) % 7 - 3))') AS q;
SELECT (SELECT sum(abs(img.p[r][c] - q[r][c])) FROM generate_series(1, 3) r, generate_series(1, 4) c) AS noise
FROM img, noisy;
SELECT l.* FROM img, noisy, mcc_sad_locate(t, q, 2) l;
SELECT b.* FROM img, noisy, img_brute(t, q) b ORDER BY sad, y, x LIMIT 2;

-- ties: every SAD equal, so the order is by y, then x
SELECT l.* FROM mcc_sad_locate(array_fill(7::smallint, ARRAY[5, 6]), array_fill(9::smallint, ARRAY[2, 2]), 6) l;
-- an equal-size pattern has one shift; a 1 x 1 pattern in a 1 x 1 target
SELECT l.* FROM img, mcc_sad_locate(t, t) l;
SELECT l.* FROM mcc_sad_locate('{{200}}'::smallint[], '{{55}}'::smallint[], 3) l;
-- lower bounds of input arrays are ignored
SELECT l.* FROM img, mcc_sad_locate(t, '[0:2][-1:2]={{0,0,0,0},{0,0,0,0},{0,0,0,0}}'::smallint[]) l;

-- the thread count changes nothing in the result
SET mcc.image_threads = 1;
SELECT l.* FROM img, mcc_sad_locate(t, p, 2) l;
SET mcc.image_threads = 3;
SELECT l.* FROM img, mcc_sad_locate(t, p, 2) l;
SELECT state, message FROM try('SET mcc.image_threads = 0');
RESET mcc.image_threads;
SELECT current_setting('mcc.image_threads')::int BETWEEN 1 AND 16 AS default_in_range;

-- statement_timeout (and cancel) stop a long search: the worker threads are
-- stopped and joined before the error (4000^2 target, 400^2 pattern: about
-- 2 * 10^12 absolute differences, seconds of work even on many cores)
CREATE TABLE big AS
SELECT mcc_image_from_array(array_fill(7::smallint, ARRAY[4000, 4000])) AS t,
	   mcc_image_from_array(array_fill(9::smallint, ARRAY[400, 400])) AS p;
SET statement_timeout = '200ms';
SELECT l.* FROM big, mcc_sad_locate(t, p) l;
RESET statement_timeout;
SELECT l.* FROM big, mcc_sad_locate(mcc_image_crop(t, 0, 0, 30, 20), mcc_image_crop(p, 0, 0, 29, 20)) l;
DROP TABLE big;

-- PNG: 8-bit gray, a gray palette (2-bit indices); the search mixes formats
CREATE TABLE png (name text PRIMARY KEY, b bytea);
INSERT INTO png VALUES
	('gray8', '\x89504e470d0a1a0a0000000d4948445200000003000000020800000000b81f39c6000000104944415478da636068f8cfc025220700086701bc74669a2f0000000049454e44ae426082'),
	('palette', '\x89504e470d0a1a0a0000000d49484452000000040000000102030000008452e75e0000000c504c5445000000555555aaaaaaffffffc17f62d10000000a4944415478da63900600001d001c237c8fac0000000049454e44ae426082'),
	('rgb', '\x89504e470d0a1a0a0000000d49484452000000020000000108020000007b40e8dd0000000f4944415478da636064626661650300003f001698c168130000000049454e44ae426082'),
	('gray16', '\x89504e470d0a1a0a0000000d494844520000000200000001100000000081d9fc150000000d4944415478da636064626601000019000b380454b40000000049454e44ae426082'),
	('gray_alpha', '\x89504e470d0a1a0a0000000d49484452000000020000000108040000005e2bb7010000000d4944415478da6360ffcfc90000033001108d6420040000000049454e44ae426082');
SELECT name, mcc_image_info(b), mcc_image_to_array(b) FROM png WHERE name IN ('gray8', 'palette') ORDER BY name;
SELECT l.* FROM png, mcc_sad_locate(b, mcc_image_from_array('{{20,30}}'), 2) l WHERE name = 'gray8';

-- NULL in, NULL (or no rows) out
SELECT mcc_image_info(NULL) IS NULL AS info_null, mcc_sad_map(NULL::bytea, NULL::bytea) IS NULL AS map_null;
SELECT count(*) AS no_rows FROM mcc_sad_locate(NULL::smallint[], '{{1}}'::smallint[]);

-- bad input, every class with its SQLSTATE
SELECT v.name, t.state, t.message FROM (VALUES
	('not an image', $$SELECT mcc_image_info('hello')$$),
	('empty', $$SELECT mcc_image_info('')$$),
	('PGM, letter for the width', $$SELECT mcc_image_info(convert_to(E'P5\nx 3\n255\n', 'SQL_ASCII'))$$),
	('PGM, maxval 0', $$SELECT mcc_image_info(convert_to(E'P5\n1 1\n0\n', 'SQL_ASCII') || '\x00'::bytea)$$),
	('PGM, truncated raster', $$SELECT mcc_image_info(convert_to(E'P5\n4 3\n255\n', 'SQL_ASCII') || '\x0102030405'::bytea)$$),
	('PGM, truncated header', $$SELECT mcc_image_info(convert_to(E'P5\n4 3', 'SQL_ASCII'))$$),
	('PGM, trailing bytes', $$SELECT mcc_image_info(convert_to(E'P5\n1 1\n255\n', 'SQL_ASCII') || '\x0102'::bytea)$$),
	('PGM, sample over maxval', $$SELECT mcc_image_info(convert_to(E'P5\n2 1\n15\n', 'SQL_ASCII') || '\x0110'::bytea)$$),
	('PGM, 16-bit', $$SELECT mcc_image_info(convert_to(E'P5\n1 1\n65535\n', 'SQL_ASCII') || '\x0102'::bytea)$$),
	('PGM, plain P2', $$SELECT mcc_image_info(convert_to(E'P2\n1 1\n255\n7\n', 'SQL_ASCII'))$$),
	('PPM, color', $$SELECT mcc_image_info(convert_to(E'P6\n1 1\n255\n', 'SQL_ASCII') || '\x010203'::bytea)$$),
	('PGM, huge', $$SELECT mcc_image_info(convert_to(E'P5\n20000 20000\n255\n', 'SQL_ASCII'))$$),
	('PGM, over the pixel budget', $$SELECT mcc_image_info(convert_to(E'P5\n16384 4097\n255\n', 'SQL_ASCII'))$$),
	('PNG, RGB', $$SELECT mcc_image_info(b) FROM png WHERE name = 'rgb'$$),
	('PNG, 16-bit', $$SELECT mcc_image_info(b) FROM png WHERE name = 'gray16'$$),
	('PNG, transparent', $$SELECT mcc_image_info(b) FROM png WHERE name = 'gray_alpha'$$),
	('PNG, truncated', $$SELECT mcc_image_info(substr(b, 1, 60)) FROM png WHERE name = 'gray8'$$),
	('PNG, bad CRC', $$SELECT mcc_image_info(overlay(b placing '\x01'::bytea from 30)) FROM png WHERE name = 'gray8'$$),
	('PNG, trailing bytes', $$SELECT mcc_image_info(b || '\x00'::bytea) FROM png WHERE name = 'gray8'$$),
	('JPEG', $$SELECT mcc_image_info('\xffd8ffe000104a464946'::bytea)$$),
	('pattern wider than target', $$SELECT * FROM mcc_sad_locate('{{1,2}}'::smallint[], '{{1,2,3}}'::smallint[])$$),
	('pattern taller than target', $$SELECT mcc_sad_map('{{1,2}}'::smallint[], '{{1},{2}}'::smallint[])$$),
	('k = 0', $$SELECT * FROM mcc_sad_locate('{{1,2}}'::smallint[], '{{1}}'::smallint[], 0)$$),
	('k over the limit', $$SELECT * FROM mcc_sad_locate('{{1,2}}'::smallint[], '{{1}}'::smallint[], 100001)$$),
	('array, one dimension', $$SELECT * FROM mcc_sad_locate('{1,2}'::smallint[], '{{1}}'::smallint[])$$),
	('array, three dimensions', $$SELECT mcc_image_from_array('{{{1}}}')$$),
	('array, empty', $$SELECT mcc_image_from_array('{}')$$),
	('array, NULL pixel', $$SELECT mcc_sad_map_array('{{1,NULL}}'::smallint[], '{{1}}'::smallint[])$$),
	('array, value 256', $$SELECT mcc_image_from_array('{{1,256}}')$$),
	('array, value -1', $$SELECT * FROM mcc_sad_locate('{{1,2}}'::smallint[], '{{-1}}'::smallint[])$$),
	('array, too wide', $$SELECT mcc_image_from_array(array_fill(0::smallint, ARRAY[1, 16385]))$$),
	('crop outside', $$SELECT mcc_image_crop(mcc_image_from_array('{{1,2},{3,4}}'), 1, 1, 2, 1)$$),
	('crop empty', $$SELECT mcc_image_crop(mcc_image_from_array('{{1,2},{3,4}}'), 0, 0, 0, 1)$$)
) v(name, stmt), LATERAL try(v.stmt) t;

DROP TABLE img, noisy, png;
DROP FUNCTION try, sqlstate_of, img_make, img_brute;
