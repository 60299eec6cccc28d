\set ECHO none
-- The templates of the score tests (score.sql, score_methods.sql), included
-- as try.sql is (\i :abs_srcdir/sql/include/finger_a.sql): tables mnt and
-- tpl and the function theta(q), which the test drops at its end. The first
-- line keeps them out of the expected output.

-- A finger-like set: 40 minutiae spread over [110, 390) x [110, 390) of a
-- 500x500 image, far enough from the borders that no cylinder reaches them;
-- byte angles q (theta = q * 2pi / 256).
CREATE TABLE mnt AS
SELECT i, 110 + (i * 67) % 280 AS x, 110 + (i * 139) % 280 AS y, (i * 53) % 256 AS q,
	   (ARRAY['other', 'ending', 'bifurcation'])[i % 3 + 1] AS type
FROM generate_series(0, 39) i;

CREATE FUNCTION theta(q int) RETURNS float8 LANGUAGE sql IMMUTABLE
	AS $$ SELECT (q % 256) * 2 * pi() / 256 $$;

CREATE TABLE tpl (name text PRIMARY KEY, t mcc_template);
INSERT INTO tpl SELECT 'A', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(x, y, theta(q), type, 50) ORDER BY i)) FROM mnt;
-- rotated by 90 degrees counter-clockwise as seen on screen, then translated:
-- (x, y) -> (y + 37, 499 - x + 21), theta + pi/2, in a 560x560 image
INSERT INTO tpl SELECT 'A rotated 90', jsonb_build_object('width', 560, 'height', 560, 'minutiae',
	jsonb_agg(jsonb_build_array(y + 37, 499 - x + 21, theta(q + 64), type, 50) ORDER BY i)) FROM mnt;
-- rotated by 180 degrees: beyond the angular gate delta_theta = 3pi/4
INSERT INTO tpl SELECT 'A rotated 180', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(499 - x, 499 - y, theta(q + 128), type, 50) ORDER BY i)) FROM mnt;
-- a partial impression: the first 30 minutiae
INSERT INTO tpl SELECT 'A partial', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(x, y, theta(q), type, 50) ORDER BY i)) FROM mnt WHERE i < 30;
-- another finger
INSERT INTO tpl SELECT 'B', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(110 + (i * 101) % 280, 110 + (i * 43) % 280, theta(i * 97), 'ending', 50) ORDER BY i))
FROM generate_series(0, 39) i;
-- one minutia: no neighbour, so no valid cylinder
INSERT INTO tpl VALUES ('lonely', '{"width":500,"height":500,"minutiae":[[250,250,1]]}');
-- A with the tpami2010 profile
INSERT INTO tpl SELECT 'A tpami2010', jsonb_build_object('profile', 'tpami2010', 'width', 500, 'height', 500,
	'minutiae', jsonb_agg(jsonb_build_array(x, y, theta(q), type, 50) ORDER BY i)) FROM mnt;
\set ECHO all
