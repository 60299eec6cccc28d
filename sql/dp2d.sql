-- dp2d: elastic image matching (paper 003): mcc_dp2d_distance, mcc_dp2d_warp,
-- mcc_dp2d_enhance, mcc_dp2d_differences, mcc_dp2d_verify (the simplified
-- and the overall algorithm), mcc.dp2d_threads.
-- The expected values are worked out by hand in the comments.

-- a binary PGM (P5, maxval 255) of w x h pixels, row by row
CREATE FUNCTION pgm(w int, h int, px int[]) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT convert_to(format(E'P5\n%s %s\n255\n', w, h), 'UTF8') ||
		   decode(string_agg(lpad(to_hex(v), 2, '0'), '' ORDER BY k), 'hex')
	FROM unnest(px) WITH ORDINALITY AS t(v, k)
$$;

-- the pixels of a PGM made by mcc: what follows the header's third newline
CREATE FUNCTION pixels(img bytea) RETURNS int[] LANGUAGE sql IMMUTABLE AS $$
	SELECT array_agg(get_byte(img, i) ORDER BY i)
	FROM generate_series((SELECT n FROM generate_series(0, least(30, length(img) - 1)) n
						  WHERE get_byte(img, n) = 10 ORDER BY n OFFSET 2 LIMIT 1) + 1,
						 length(img) - 1) i
$$;

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- Identical images: distance 0 (the diagonal paths cost nothing).
SELECT mcc_dp2d_distance(pgm(3, 3, '{1,2,3,4,5,6,7,8,9}'), pgm(3, 3, '{1,2,3,4,5,6,7,8,9}'));
-- ... and the warp is the identity: b comes back unchanged.
SELECT pixels(mcc_dp2d_warp(pgm(3, 3, '{1,2,3,4,5,6,7,8,9}'), pgm(3, 3, '{1,2,3,4,5,6,7,8,9}')));

-- The same with a literal: a 2 x 1 PGM of pixels 0 and 100.
SELECT mcc_dp2d_distance('\x50350a3220310a3235350a0064'::bytea, pgm(2, 1, '{0,100}'));

-- 1 x 1: the row DP costs 2|10 - 30| = 40, the DP over rows 2 x 40 = 80,
-- divided by (1 + 1)(1 + 1) = 4: 20, the plain absolute difference.
SELECT mcc_dp2d_distance(pgm(1, 1, '{10}'), pgm(1, 1, '{30}'));

-- The slope constraint: rows (0, 100) and (100, 0). A horizontal move then a
-- vertical one would cost 2*100 + 0 + 100 = 300, but two non-diagonal moves
-- in a row are forbidden, so only the diagonal remains: 2*100 + 2*100 = 400,
-- then 2 x 400 over rows, divided by (1 + 1)(2 + 2) = 8: 100 (not 75).
SELECT mcc_dp2d_distance(pgm(2, 1, '{0,100}'), pgm(2, 1, '{100,0}'));

-- A stretch: b repeats a's middle pixel. The path (0,0) D (1,1) H (1,2)
-- D (2,3) pairs equal pixels only: distance 0, and b warped onto a is a.
SELECT mcc_dp2d_distance(pgm(3, 1, '{10,200,50}'), pgm(4, 1, '{10,200,200,50}'));
SELECT pixels(mcc_dp2d_warp(pgm(3, 1, '{10,200,50}'), pgm(4, 1, '{10,200,200,50}')));

-- Rows too: b repeats a's first row; a row i takes the first row of b on
-- the path: rows 0, 2, 3 of b, which are a's rows.
SELECT mcc_dp2d_distance(pgm(2, 3, '{0,0,100,100,200,200}'),
						 pgm(2, 4, '{0,0,0,0,100,100,200,200}'));
SELECT pixels(mcc_dp2d_warp(pgm(2, 3, '{0,0,100,100,200,200}'),
							pgm(2, 4, '{0,0,0,0,100,100,200,200}')));

-- A real warp: a = (0, 255, 0), b = (255, 0, 0). Allowed paths and costs:
--   diagonal                    2*255 + 2*255 + 0     = 1020
--   (0,0) H (0,1) D (1,2) V     2*255 + 0 + 2*255 + 0 = 1020
--   (0,0) V (1,0) D (2,1) H     2*255 + 0 + 0 + 0     =  510 (best)
-- so the distance is 2 x 510 / ((1 + 1)(3 + 3)) = 85, and the warp takes
-- for each column of a the first column of b on the path: b[0], b[0], b[1]
-- = (255, 255, 0).
SELECT mcc_dp2d_distance(pgm(3, 1, '{0,255,0}'), pgm(3, 1, '{255,0,0}'));
SELECT pixels(mcc_dp2d_warp(pgm(3, 1, '{0,255,0}'), pgm(3, 1, '{255,0,0}')));
-- The cost is symmetric; the warp of a onto b is another image.
SELECT mcc_dp2d_distance(pgm(3, 1, '{255,0,0}'), pgm(3, 1, '{0,255,0}'));

-- PNG input (a palette of grays, made by pnmtopng from the PGM below).
SELECT mcc_dp2d_distance(
	'\x89504e470d0a1a0a0000000d49484452000000030000000204030000006f5a7b2900000012504c5445000000808080ffffff3030302020201010106e4304830000000e4944415408996360546008310000016300a6dc64ba160000000049454e44ae426082'::bytea,
	pgm(3, 2, '{0,128,255,16,32,48}'));

-- The thread count does not change results.
SET mcc.dp2d_threads = 3;
SELECT mcc_dp2d_distance(pgm(3, 1, '{0,255,0}'), pgm(3, 1, '{255,0,0}'));
RESET mcc.dp2d_threads;
SELECT state, message FROM try('SET mcc.dp2d_threads = 0');

-- Verification (Sec. 8) on a print-like image: stripes of period 9 in a
-- disc of radius 60 on a light background, 160 x 160.
CREATE TABLE prints (name text PRIMARY KEY, img bytea);
INSERT INTO prints
SELECT name, pgm(160, 160, array_agg(v ORDER BY y, x))
FROM (VALUES ('across', 0.0), ('along', pi() / 2)) AS d(name, phi),
	 generate_series(0, 159) y, generate_series(0, 159) x,
	 LATERAL (SELECT CASE WHEN (x - 80) ^ 2 + (y - 80) ^ 2 <= 60 ^ 2
		THEN round(128 + 100 * cos(2 * pi() * ((x - 80) * cos(phi) + (y - 80) * sin(phi)) / 9))::int
		ELSE 230 END) AS p(v)
GROUP BY name;

-- The enhanced image is the 128 x 128 working image, binary.
SELECT length(e) = 15 + 128 * 128 AS size_ok,
	   substring(e FROM 1 FOR 15) = convert_to(E'P5\n128 128\n255\n', 'UTF8') AS header_ok,
	   (SELECT bool_and(v IN (0, 255)) FROM unnest(pixels(e)) v) AS binary,
	   (SELECT count(*) FILTER (WHERE v = 0) BETWEEN 3000 AND 9000 FROM unnest(pixels(e)) v) AS some_ridges
FROM (SELECT mcc_dp2d_enhance(img) e FROM prints WHERE name = 'across') s;

-- A print against itself: no differing pixel, verified even at threshold 0.
SELECT mcc_dp2d_differences(p.img, p.img), mcc_dp2d_verify(p.img, p.img, 0)
FROM prints p WHERE name = 'across';
-- Stripes across against stripes along: many differences, refused at 0.
SELECT mcc_dp2d_differences(a.img, b.img) > 100 AS differ, mcc_dp2d_verify(a.img, b.img, 0)
FROM prints a, prints b WHERE a.name = 'across' AND b.name = 'along';
-- ... and accepted when the threshold is the whole working image.
SELECT mcc_dp2d_verify(a.img, b.img, 128 * 128)
FROM prints a, prints b WHERE a.name = 'across' AND b.name = 'along';

-- The overall algorithm (Sec. 8.1: the reference and the warped probe
-- thinned and restored, 160 x 160): 0 against itself, many differences
-- across against along; the default is the simplified algorithm; the name
-- is checked; verify_many agrees with differences, NULL elements too.
SELECT mcc_dp2d_differences(p.img, p.img, 'overall') AS self,
	   mcc_dp2d_verify(p.img, p.img, 0, algorithm => 'Overall') AS verified,
	   mcc_dp2d_differences(p.img, p.img, 'simplified') = mcc_dp2d_differences(p.img, p.img) AS default_simplified
FROM prints p WHERE name = 'across';
SELECT mcc_dp2d_differences(a.img, b.img, 'overall') > 100 AS differ,
	   mcc_dp2d_verify(a.img, b.img, 0, 'overall') AS verified,
	   mcc_dp2d_verify(a.img, b.img, 160 * 160, 'overall') AS under_the_whole_image
FROM prints a, prints b WHERE a.name = 'across' AND b.name = 'along';
SELECT v.probe, v.differences = mcc_dp2d_differences(a.img, b.img, 'overall') AS same, v.verified
FROM prints a, prints b, mcc_dp2d_verify_many(a.img, ARRAY[b.img, NULL, a.img], 100, 'overall') v
WHERE a.name = 'across' AND b.name = 'along' ORDER BY v.probe;

-- Bad inputs.
SELECT state, message FROM try($$SELECT mcc_dp2d_distance('\x50350a3320780a3235350a'::bytea, '\x00'::bytea)$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_distance(pgm(2, 1, '{1,2}'), '\x50350a3220310a3235350a00'::bytea)$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_distance(pgm(2, 1, '{1,2}'), '\x50350a3220310a36353533350a00000000'::bytea)$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_distance(pgm(1, 1, '{1}'),
	'\x89504e470d0a1a0a0000000d494844520000000100000001010300000025db56ca00000003504c54450102030d8764d50000000a4944415408996360000000020001f47164a60000000049454e44ae426082'::bytea)$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_distance('hello'::bytea, pgm(1, 1, '{1}'))$$);
-- widths 2 and 5: more than twice, no path obeys the slope constraint
SELECT state, message FROM try($$SELECT mcc_dp2d_distance(pgm(2, 1, '{1,2}'), pgm(5, 1, '{1,2,3,4,5}'))$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_warp(pgm(1, 3, '{1,2,3}'), pgm(1, 1, '{1}'))$$);
-- 600 pixels wide: above the 512 limit of elastic matching
SELECT state, message FROM try($$SELECT mcc_dp2d_distance(pgm(600, 1, array_fill(7, ARRAY[600])),
												   pgm(600, 1, array_fill(7, ARRAY[600])))$$);
-- prints below 16 pixels cannot be enhanced
SELECT state, message FROM try($$SELECT mcc_dp2d_enhance(pgm(8, 8, array_fill(7, ARRAY[64])))$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_verify(img, img, -1) FROM prints WHERE name = 'across'$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_differences(img, img, 'complete') FROM prints WHERE name = 'across'$$);
SELECT state, message FROM try($$SELECT mcc_dp2d_differences(img, pgm(8, 8, array_fill(7, ARRAY[64])), 'overall') FROM prints WHERE name = 'across'$$);
SELECT mcc_dp2d_distance(NULL, pgm(1, 1, '{1}')) IS NULL AS strict;

-- Interrupts are honoured: a 512 x 512 match takes seconds; a statement
-- timeout stops it (SQLSTATE 57014) and the session goes on.
CREATE TABLE big AS
SELECT pgm(512, 512, array_agg((x * 7 + y * 13) % 251 ORDER BY y, x)) img
FROM generate_series(0, 511) y, generate_series(0, 511) x;
SET statement_timeout = '300ms';
SELECT mcc_dp2d_distance(img, img) FROM big;
RESET statement_timeout;
SELECT mcc_dp2d_distance(pgm(1, 1, '{10}'), pgm(1, 1, '{30}'));

DROP TABLE big, prints;
DROP FUNCTION pgm(int, int, int[]), pixels(bytea), try(text), sqlstate_of(text);
