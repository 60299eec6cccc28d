-- align: mcc_chamfer_align() recovers known transforms of every type, 2D and
-- 3D, and any pose without an initial transform (a global search) while a
-- call with one keeps the local fit; mcc_align() recovers a known rotation
-- of minutiae, from any pose or from an initial transform, and ranks a
-- partial impression above another finger; thread count does not change
-- results; every kind of bad input raises its error.

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- parameters rounded for display
CREATE FUNCTION r4(p float8[]) RETURNS numeric[] LANGUAGE sql IMMUTABLE
	AS $$ SELECT array_agg(round(v::numeric, 4) ORDER BY o) FROM unnest(p) WITH ORDINALITY u(v, o) $$;

-- A 2D shape like paper 004's road map: six lines in several directions and
-- an arc, points 2 apart. (Chamfer alignment is local: a shape whose lines
-- run in one direction only lets points slide along them into false minima.)
CREATE TABLE s2 (part int, k int, x float8, y float8, PRIMARY KEY (part, k));
INSERT INTO s2
SELECT l.part, k, l.x0 + (l.x1 - l.x0) * k / n, l.y0 + (l.y1 - l.y0) * k / n
FROM (VALUES (1, 20, 20, 380, 60), (2, 40, 350, 360, 300), (3, 50, 40, 90, 360),
			 (4, 300, 30, 350, 380), (5, 100, 100, 300, 300), (6, 100, 300, 250, 120))
	 AS l(part, x0, y0, x1, y1),
	 LATERAL (SELECT floor(sqrt((l.x1 - l.x0) ^ 2 + (l.y1 - l.y0) ^ 2) / 2)::int AS n) c,
	 LATERAL generate_series(0, c.n) k;
INSERT INTO s2 SELECT 7, k, 200 + 60 * cos(radians(200) * k / 104), 200 + 60 * sin(radians(200) * k / 104)
FROM generate_series(0, 104) k;
SELECT count(*) AS points, count(*) FILTER (WHERE k % 3 = 0) AS observed FROM s2;

-- Known transforms as (type, params, 3x3 matrix rows): the reference is the
-- whole shape mapped by the matrix, the observed set every third point of
-- the shape unmapped, so the alignment must return params.
CREATE TABLE t2 (type text PRIMARY KEY, params float8[], m float8[]);
INSERT INTO t2 VALUES
	('euclidean', '{0.2, 15, -10}',
	 ARRAY[cos(0.2), -sin(0.2), 15, sin(0.2), cos(0.2), -10, 0, 0, 1]),
	('similarity', '{1.1, -0.15, 5, 12}',
	 ARRAY[1.1 * cos(-0.15), -1.1 * sin(-0.15), 5, 1.1 * sin(-0.15), 1.1 * cos(-0.15), 12, 0, 0, 1]),
	('affine', '{1.05, 0.08, 4, -0.06, 0.95, -7}', '{1.05, 0.08, 4, -0.06, 0.95, -7, 0, 0, 1}'),
	('projective', '{1.02, 0.03, 5, -0.02, 0.98, -3, 0.0004, -0.0003}',
	 '{1.02, 0.03, 5, -0.02, 0.98, -3, 0.0004, -0.0003, 1}');

CREATE FUNCTION map2(m float8[], x float8, y float8) RETURNS float8[] LANGUAGE sql IMMUTABLE
	AS $$ SELECT ARRAY[(m[1] * x + m[2] * y + m[3]) / (m[7] * x + m[8] * y + m[9]),
					   (m[4] * x + m[5] * y + m[6]) / (m[7] * x + m[8] * y + m[9])] $$;

CREATE TABLE sets2 AS
SELECT t.type, t.params,
	   (SELECT array_agg(ARRAY[x, y] ORDER BY part, k) FROM s2 WHERE k % 3 = 0) AS observed,
	   (SELECT array_agg(map2(t.m, x, y) ORDER BY part, k) FROM s2) AS reference
FROM t2 t;

SELECT s.type, r4(s.params) AS truth, r4(a.params) AS found, round(a.residual::numeric, 6) AS residual,
	   a.iterations > 0 AS iterated, a.converged
FROM sets2 s, LATERAL mcc_chamfer_align(s.observed, s.reference, s.type, resolution => 0.5) a
ORDER BY array_length(s.params, 1);

-- The same with an outlier-robust fit: 10 far points added to the observed set.
SELECT s.type, r4(a.params) AS found, round(a.residual::numeric, 4) AS residual
FROM sets2 s, LATERAL mcc_chamfer_align(
	s.observed || (SELECT array_agg(ARRAY[300 + 7 * i, 250 - 11 * i]) FROM generate_series(1, 10) i),
	s.reference, s.type, resolution => 0.5, max_distance => 2) a
ORDER BY array_length(s.params, 1);

-- Starting from the answer: nothing to do.
SELECT r4(a.params) AS found, a.iterations, a.converged
FROM sets2 s, LATERAL mcc_chamfer_align(s.observed, s.reference, 'similarity', 0.5,
									   initial => s.params) a
WHERE s.type = 'similarity';

-- Threads do not change a single bit.
CREATE TABLE one_thread AS
SELECT s.type, a.* FROM sets2 s, LATERAL mcc_chamfer_align(s.observed, s.reference, s.type) a;
SET mcc.align_threads = 3;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.params = o.params AND a.residual = o.residual
										  AND a.iterations = o.iterations) AS identical
FROM sets2 s JOIN one_thread o USING (type), LATERAL mcc_chamfer_align(s.observed, s.reference, s.type) a;
RESET mcc.align_threads;

-- Any pose: the shape turned by 2 rad and scaled by 1.2 (the observed set
-- every third point). Without initial the search finds it; with initial the
-- fit is local, as in 0.1.0: from a quarter turn off it stops in a local
-- minimum, from the answer it stays there.
CREATE TABLE far AS
SELECT (SELECT array_agg(ARRAY[x, y] ORDER BY part, k) FROM s2 WHERE k % 3 = 0) AS observed,
	   (SELECT array_agg(map2(ARRAY[1.2 * cos(2.0), -1.2 * sin(2.0), 15, 1.2 * sin(2.0), 1.2 * cos(2.0), -10, 0, 0, 1],
							  x, y) ORDER BY part, k) FROM s2) AS reference;
SELECT 'search' AS start, r4(a.params) AS found, a.residual < 0.1 AS fits
FROM far f, LATERAL mcc_chamfer_align(f.observed, f.reference, resolution => 0.5) a
UNION ALL
SELECT 'a quarter turn off', NULL, a.residual < 0.1
FROM far f, LATERAL mcc_chamfer_align(f.observed, f.reference, resolution => 0.5,
									 initial => ARRAY[1.2, 2.0 + pi() / 2, 15, -10]) a
UNION ALL
SELECT 'the answer', r4(a.params), a.residual < 0.1
FROM far f, LATERAL mcc_chamfer_align(f.observed, f.reference, resolution => 0.5,
									 initial => ARRAY[1.2, 2.0, 15, -10]) a;

-- The search tries scales in [min_scale, max_scale] (default 0.8-1.25): a scale of 1.6 with its range.
SELECT round(a.params[1]::numeric, 3) AS scale, a.residual < 0.1 AS fits
FROM (SELECT (SELECT array_agg(ARRAY[x, y] ORDER BY part, k) FROM s2 WHERE k % 3 = 0) AS observed,
			 (SELECT array_agg(ARRAY[1.6 * x + 30, 1.6 * y - 20] ORDER BY part, k) FROM s2) AS reference) f,
	 LATERAL mcc_chamfer_align(f.observed, f.reference, resolution => 0.5, min_scale => 1.2, max_scale => 2) a;

-- A euclidean search: rotation and shift only.
SELECT r4(a.params) AS found, a.residual < 0.1 AS fits
FROM (SELECT (SELECT array_agg(ARRAY[x, y] ORDER BY part, k) FROM s2 WHERE k % 3 = 0) AS observed,
			 (SELECT array_agg(map2(ARRAY[cos(-2.5), -sin(-2.5), 600, sin(-2.5), cos(-2.5), 200, 0, 0, 1], x, y)
							   ORDER BY part, k) FROM s2) AS reference) f,
	 LATERAL mcc_chamfer_align(f.observed, f.reference, 'euclidean', 0.5) a;

-- A 3D shape: three faces of a box (5 apart) and a helix.
CREATE TABLE s3 (part int, k int, x float8, y float8, z float8, PRIMARY KEY (part, k));
INSERT INTO s3 SELECT 1, 9 * i + j, 5 * i, 5 * j, 0 FROM generate_series(0, 8) i, generate_series(0, 8) j;
INSERT INTO s3 SELECT 2, 9 * i + j, 0, 5 * i, 5 * j + 5 FROM generate_series(0, 8) i, generate_series(0, 8) j;
INSERT INTO s3 SELECT 3, 9 * i + j, 5 * i + 5, 0, 5 * j + 5 FROM generate_series(0, 8) i, generate_series(0, 8) j;
INSERT INTO s3 SELECT 4, k, 60 + 10 * cos(k / 2.0), 20 + 10 * sin(k / 2.0), k FROM generate_series(0, 40) k;

-- Rotation by rotation vector w (Rodrigues), then scale s and translation t.
CREATE FUNCTION map3(s float8, w float8[], t float8[], p float8[]) RETURNS float8[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT ARRAY[s * (p[1] * c + (k2 * p[3] - k3 * p[2]) * sn + k1 * kp * (1 - c)) + t[1],
				 s * (p[2] * c + (k3 * p[1] - k1 * p[3]) * sn + k2 * kp * (1 - c)) + t[2],
				 s * (p[3] * c + (k1 * p[2] - k2 * p[1]) * sn + k3 * kp * (1 - c)) + t[3]]
	FROM (SELECT k1, k2, k3, cos(th) AS c, sin(th) AS sn, k1 * p[1] + k2 * p[2] + k3 * p[3] AS kp
		  FROM (SELECT th, w[1] / th AS k1, w[2] / th AS k2, w[3] / th AS k3
				FROM (SELECT sqrt(w[1] ^ 2 + w[2] ^ 2 + w[3] ^ 2) AS th) a) b) c
$$;

CREATE TABLE sets3 AS
SELECT 'euclidean' AS type, '{0.1, -0.05, 0.2, 3, -2, 5}'::float8[] AS params,
	   (SELECT array_agg(ARRAY[x, y, z] ORDER BY part, k) FROM s3 WHERE k % 2 = 0) AS observed,
	   (SELECT array_agg(map3(1, '{0.1, -0.05, 0.2}', '{3, -2, 5}', ARRAY[x, y, z]) ORDER BY part, k)
		FROM s3) AS reference
UNION ALL
SELECT 'similarity', '{0.92, -0.12, 0.08, 0.05, -4, 1, 2}',
	   (SELECT array_agg(ARRAY[x, y, z] ORDER BY part, k) FROM s3 WHERE k % 2 = 0),
	   (SELECT array_agg(map3(0.92, '{-0.12, 0.08, 0.05}', '{-4, 1, 2}', ARRAY[x, y, z]) ORDER BY part, k)
		FROM s3)
UNION ALL
SELECT 'affine', '{1.04, 0.05, -0.02, 2, -0.03, 0.97, 0.04, -1, 0.02, -0.05, 1.01, 3}',
	   (SELECT array_agg(ARRAY[x, y, z] ORDER BY part, k) FROM s3 WHERE k % 2 = 0),
	   (SELECT array_agg(ARRAY[1.04 * x + 0.05 * y - 0.02 * z + 2, -0.03 * x + 0.97 * y + 0.04 * z - 1,
							   0.02 * x - 0.05 * y + 1.01 * z + 3] ORDER BY part, k) FROM s3);

SELECT s.type, r4(s.params) AS truth, r4(a.params) AS found, round(a.residual::numeric, 6) AS residual,
	   a.converged
FROM sets3 s, LATERAL mcc_chamfer_align(s.observed, s.reference, s.type, resolution => 0.5) a
ORDER BY array_length(s.params, 1);

-- NULL arguments give NULL (initial may be NULL: it is the default).
SELECT mcc_chamfer_align(NULL, '{{0,0},{1,1}}') IS NULL AS null_observed,
	   mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', NULL) IS NULL AS null_transform;

-- Errors.
SELECT v.what, t.state, t.message, t.detail
FROM (VALUES
	(1, 'one-dimensional', $$SELECT mcc_chamfer_align('{1,2,3,4}', '{{0,0},{1,1}}')$$),
	(2, 'empty', $$SELECT mcc_chamfer_align('{}', '{{0,0},{1,1}}')$$),
	(3, 'four columns', $$SELECT mcc_chamfer_align('{{1,2,3,4}}', '{{0,0},{1,1}}')$$),
	(4, 'mismatched dimensions', $$SELECT mcc_chamfer_align('{{0,0,0},{1,1,1},{2,0,1}}', '{{0,0},{1,1}}')$$),
	(5, 'NaN', $$SELECT mcc_chamfer_align('{{0,0},{NaN,1}}', '{{0,0},{1,1}}')$$),
	(6, 'infinite reference', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,-Infinity}}')$$),
	(7, 'NULL coordinate', $$SELECT mcc_chamfer_align('{{0,0},{1,NULL}}', '{{0,0},{1,1}}')$$),
	(8, 'coincident observed', $$SELECT mcc_chamfer_align('{{2,2},{2,2},{2,2}}', '{{0,0},{1,1}}')$$),
	(9, 'coincident reference', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{5,5},{5,5}}')$$),
	(10, 'collinear, affine', $$SELECT mcc_chamfer_align('{{0,0},{1,1},{2,2},{3,3}}', '{{0,0},{1,0},{0,1}}', 'affine')$$),
	(11, 'too few, projective', $$SELECT mcc_chamfer_align('{{0,0},{1,0},{0,1}}', '{{0,0},{1,0},{0,1}}', 'projective')$$),
	(12, 'unknown transform', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', 'rigid')$$),
	(13, 'negative resolution', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', resolution => -1)$$),
	(14, 'grid too large', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1000,1000}}', resolution => 0.001)$$),
	(15, 'max_distance 0', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', max_distance => 0)$$),
	(16, 'initial length', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', initial => '{1,2}')$$),
	(17, 'initial NULL', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', initial => '{1,NULL,0,0}')$$),
	(18, 'initial scale 0', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', initial => '{0,0,0,0}')$$),
	(19, 'coplanar, 3D affine', $$SELECT mcc_chamfer_align('{{0,0,0},{1,0,0},{0,1,0},{1,1,0}}', '{{0,0,0},{1,0,0},{0,1,0},{0,0,1}}', 'affine')$$),
	(20, 'min_scale 0', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', min_scale => 0)$$),
	(21, 'min_scale above max_scale', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', min_scale => 2, max_scale => 1)$$),
	(22, 'max_scale infinite', $$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', max_scale => 'Infinity')$$),
	-- coordinates beyond 1e100: their squares would overflow (22003)
	(23, 'reference 1e200..1e300', $$SELECT mcc_chamfer_align('{{0,0},{1,0},{0,1}}', '{{1e200,1e200},{1e300,1e200},{1e200,1e300}}')$$),
	(24, 'observed -1e300', $$SELECT mcc_chamfer_align('{{0,0},{-1e300,0},{0,1}}', '{{0,0},{1,0},{0,1}}')$$),
	(25, 'tiny reference, wide observed', $$SELECT mcc_chamfer_align('{{0,0},{1e50,0},{0,1e50}}', '{{0,0},{1e-60,0},{0,1e-60}}')$$)
) AS v(ord, what, stmt), LATERAL try(v.stmt) t ORDER BY v.ord;

SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{1,1}}', min_scale => NULL) IS NULL AS null_min_scale;

-- The grid limit follows mcc.align_max_cells.
SET mcc.align_max_cells = 1024;
SELECT state, message FROM try($$SELECT mcc_chamfer_align('{{0,0},{1,1}}', '{{0,0},{100,100}}', resolution => 1)$$);
RESET mcc.align_max_cells;

-- statement_timeout interrupts an alignment (here in its 16-million-cell
-- distance transform); the session goes on.
SET statement_timeout = '50ms';
SELECT mcc_chamfer_align('{{0,0},{1,1},{2,0}}', '{{0,0},{3400,3400},{0,3400}}', resolution => 1);
RESET statement_timeout;
SELECT r4(a.params) AS still_works
FROM mcc_chamfer_align('{{0,0},{10,0},{0,10}}', '{{1,1},{11,1},{1,11}}', 'euclidean', 0.5) a;

-- Minutiae: a finger-like set of 40 minutiae (as in score.sql), a copy
-- rotated by 90 degrees counter-clockwise on screen and shifted, a partial
-- impression, and another finger.
CREATE TABLE mnt AS
SELECT i, 110 + (i * 67) % 280 AS x, 110 + (i * 139) % 280 AS y, (i * 53) % 256 AS q
FROM generate_series(0, 39) i;
CREATE FUNCTION theta(q int) RETURNS float8 LANGUAGE sql IMMUTABLE
	AS $$ SELECT (q % 256) * 2 * pi() / 256 $$;
CREATE TABLE tpl (name text PRIMARY KEY, t mcc_template);
INSERT INTO tpl SELECT 'A', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(x, y, theta(q), 'ending', 50) ORDER BY i)) FROM mnt;
-- (x, y) -> (y + 37, 499 - x + 21), theta + pi/2: mapping it back is
-- x = 520 - y', y = x' - 37, i.e. R(pi/2) p + (520, -37) in image coordinates
INSERT INTO tpl SELECT 'A rotated 90', jsonb_build_object('width', 560, 'height', 560, 'minutiae',
	jsonb_agg(jsonb_build_array(y + 37, 499 - x + 21, theta(q + 64), 'ending', 50) ORDER BY i)) FROM mnt;
INSERT INTO tpl SELECT 'A partial', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(x + 3, y - 2, theta(q), 'ending', 50) ORDER BY i)) FROM mnt WHERE i < 25;
INSERT INTO tpl SELECT 'B', jsonb_build_object('width', 500, 'height', 500, 'minutiae',
	jsonb_agg(jsonb_build_array(110 + (i * 101) % 280, 110 + (i * 43) % 280, theta(i * 97), 'ending', 50) ORDER BY i))
FROM generate_series(0, 39) i;
INSERT INTO tpl VALUES ('single', '{"width":500,"height":500,"minutiae":[[100,100,1.0,"ending",50]]}');

SELECT p.name AS probe, c.name AS candidate, r4(a.params) AS params,
	   round(a.residual::numeric, 4) AS residual, a.paired, array_length(a.mapped, 1) AS mapped_rows
FROM tpl p, tpl c, LATERAL mcc_align(p.t, c.t) a
WHERE c.name = 'A' AND p.name IN ('A', 'A rotated 90', 'A partial')
ORDER BY p.name;

-- another finger aligns worse than any impression of A, with fewer pairs
SELECT b.residual > 5 AS residual_high, b.paired < 25 AS fewer_paired, array_length(b.mapped, 1) AS mapped_rows
FROM tpl p, tpl c, LATERAL mcc_align(p.t, c.t) b
WHERE p.name = 'B' AND c.name = 'A';

-- the rotated copy's first minutiae, mapped: the original positions and angles
SELECT m.i AS minutia, round(a.mapped[m.i + 1][1]::numeric, 3) AS x, round(a.mapped[m.i + 1][2]::numeric, 3) AS y,
	   round(a.mapped[m.i + 1][3]::numeric, 4) AS theta, m.x AS x0, m.y AS y0, round(theta(m.q)::numeric, 4) AS theta0
FROM tpl p, tpl c, LATERAL mcc_align(p.t, c.t) a, mnt m
WHERE p.name = 'A rotated 90' AND c.name = 'A' AND m.i BETWEEN 1 AND 3
ORDER BY m.i;

-- without directions (the position search), and a similarity fit
SELECT r4(a.params) AS params, round(a.residual::numeric, 4) AS residual
FROM tpl p, tpl c, LATERAL mcc_align(p.t, c.t, use_directions => false) a
WHERE p.name = 'A rotated 90' AND c.name = 'A';
SELECT r4(a.params) AS params, round(a.residual::numeric, 4) AS residual
FROM tpl p, tpl c, LATERAL mcc_align(p.t, c.t, 'similarity') a
WHERE p.name = 'A rotated 90' AND c.name = 'A';

-- an initial transform: one local fit from it (the answer: it stays; far
-- off: it does not reach the answer); NULL initial is the default
SELECT x.start, r4(a.params) AS params, round(a.residual::numeric, 4) AS residual
FROM tpl p, tpl c, (VALUES (1, 'the answer', ARRAY[pi() / 2, 520, -37]),
						  (2, 'half a turn off', ARRAY[-pi() / 2, 0, 500])) x(o, start, init),
	 LATERAL mcc_align(p.t, c.t, initial => x.init) a
WHERE p.name = 'A rotated 90' AND c.name = 'A'
ORDER BY x.o;
SELECT a.params = b.params AS null_initial_is_the_default, mcc_align(p.t, NULL) IS NULL AS null_candidate
FROM tpl p, tpl c, LATERAL mcc_align(p.t, c.t) a, LATERAL mcc_align(p.t, c.t, initial => NULL) b
WHERE p.name = 'A rotated 90' AND c.name = 'A';

SELECT v.what, t.state, t.message
FROM (VALUES
	(1, 'unknown transform', $$SELECT mcc_align(t, t, 'shear') FROM tpl WHERE name = 'A'$$),
	(2, 'max_distance 0', $$SELECT mcc_align(t, t, max_distance => 0) FROM tpl WHERE name = 'A'$$),
	(3, 'one-minutia probe', $$SELECT mcc_align(s.t, a.t) FROM tpl s, tpl a WHERE s.name = 'single' AND a.name = 'A'$$),
	(4, 'one-minutia candidate', $$SELECT mcc_align(a.t, s.t) FROM tpl s, tpl a WHERE s.name = 'single' AND a.name = 'A'$$),
	(5, 'initial length', $$SELECT mcc_align(t, t, initial => '{1, 2}') FROM tpl WHERE name = 'A'$$),
	(6, 'initial scale 0', $$SELECT mcc_align(t, t, 'similarity', initial => '{0, 0, 0, 0}') FROM tpl WHERE name = 'A'$$)
) AS v(ord, what, stmt), LATERAL try(v.stmt) t ORDER BY v.ord;

DROP TABLE s2, t2, sets2, one_thread, far, s3, sets3, mnt, tpl;
DROP FUNCTION try(text), sqlstate_of(text), r4(float8[]), map2(float8[], float8, float8),
	map3(float8, float8[], float8[], float8[]), theta(int);
