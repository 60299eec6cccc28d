-- extract: enrolment from a fingerprint image: mcc_template_from_image and
-- mcc_minutiae_from_image (docs/images.md, "Minutiae extraction").
--
-- The print is synthetic: parallel ridges of period 9 inside a disc, with
-- two phase dislocations on row 81 (the middle of a valley), at x = 55 and
-- x = 105, of opposite signs. They insert one ridge segment between them
-- (offset 0): two ridge endings facing each other, the left one pointing
-- right (theta 0, into its ridge), the right one left (theta pi); with the
-- offset pi the inserted segment is a valley: two bifurcations, the left
-- one's branches opening to the right.

-- a binary PGM (P5, maxval 255) of w x h pixels, row by row
CREATE FUNCTION extract_pgm(w int, h int, px int[]) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT convert_to(format(E'P5\n%s %s\n255\n', w, h), 'UTF8') ||
		   decode(string_agg(lpad(to_hex(v), 2, '0'), '' ORDER BY k), 'hex')
	FROM unnest(px) WITH ORDINALITY AS t(v, k)
$$;

-- the synthetic print (side 160; light background outside a disc of radius 72)
CREATE FUNCTION synthetic_print(off float8) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT extract_pgm(160, 160, array_agg(v ORDER BY y, x)) FROM (
		SELECT x, y,
			   CASE WHEN (x - 79.5) ^ 2 + (y - 79.5) ^ 2 < 72 ^ 2
			   THEN round(128 + 100 * cos(2 * pi() * y / 9 + off
										  + atan2(y - 81, x - 55) - atan2(y - 81, x - 105)))::int
			   ELSE 230 END AS v
		FROM generate_series(0, 159) x, generate_series(0, 159) y) s
$$;

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

CREATE TABLE prints (name text PRIMARY KEY, img bytea);
INSERT INTO prints VALUES ('endings', synthetic_print(0)), ('bifurcations', synthetic_print(pi()));
SELECT name, (mcc_image_info(img)).* FROM prints ORDER BY name;

-- The two minutiae of each print, in raster order; directions in degrees,
-- rounded to 10 (the field's angle at the minutia).
SELECT p.name, m.x, m.y, (round(degrees(m.theta) / 10) * 10)::int % 360 AS theta_10,
	   m.type, m.quality BETWEEN 1 AND 100 AS quality_ok
FROM prints p, mcc_minutiae_from_image(p.img) m
ORDER BY p.name, m.y, m.x;

-- A template like any other constructor's: the image's frame, the dpi
-- given, the same minutiae as mcc_minutiae_from_image.
SELECT name, (mcc_template_info(mcc_template_from_image(img, min_minutiae => 2))).*
FROM prints ORDER BY name;
SELECT mcc_template_info(mcc_template_from_image(img, 569, 'tpami2010', 2))
FROM prints WHERE name = 'endings';
SELECT mcc_minutiae(mcc_template_from_image(img, min_minutiae => 2)) =
	   (SELECT jsonb_agg(jsonb_build_object('x', x, 'y', y, 'theta', theta::real, 'type', type,
											'quality', quality) ORDER BY y, x)
		FROM mcc_minutiae_from_image(img)) AS same_minutiae
FROM prints ORDER BY name;

-- NULL in, NULL out (STRICT)
SELECT mcc_template_from_image(NULL) IS NULL AS null_image,
	   mcc_template_from_image(img, NULL) IS NULL AS null_dpi
FROM prints WHERE name = 'endings';
SELECT count(*) FROM mcc_minutiae_from_image(NULL);

-- Errors.
-- the default asks for 5 minutiae; these prints have 2
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(img) FROM prints WHERE name = 'endings'$$);
-- an empty bytea, data that is no image
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(''::bytea)$$);
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image('hello'::bytea)$$);
-- too small: each side must be at least 48 pixels
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(extract_pgm(47, 60, array_fill(100, ARRAY[47 * 60])))$$);
-- no ridges: a flat image, or noise too faint to be a print
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(extract_pgm(64, 64, array_fill(200, ARRAY[64 * 64])))$$);
SELECT state, message, detail FROM try($$SELECT * FROM mcc_minutiae_from_image(extract_pgm(64, 64,
	(SELECT array_agg(100 + k * 7919 % 5 ORDER BY k) FROM generate_series(1, 64 * 64) k)))$$);
-- the resolution: 250..1000 dpi
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(img, 249) FROM prints WHERE name = 'endings'$$);
SELECT state, message, detail FROM try($$SELECT m.* FROM prints p, mcc_minutiae_from_image(p.img, 1001) m WHERE p.name = 'endings'$$);
-- min_minutiae 0..256, an unknown profile
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(img, min_minutiae => -1) FROM prints WHERE name = 'endings'$$);
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(img, min_minutiae => 257) FROM prints WHERE name = 'endings'$$);
SELECT state, message, detail FROM try($$SELECT mcc_template_from_image(img, 500, 'nosuch', 2) FROM prints WHERE name = 'endings'$$);
-- a failed enrolment leaves the table as it was
CREATE TABLE enrolled (name text, tpl mcc_template NOT NULL);
SELECT state, message, detail FROM try($$INSERT INTO enrolled SELECT name, mcc_template_from_image(img) FROM prints$$);
INSERT INTO enrolled SELECT name, mcc_template_from_image(img, min_minutiae => 2) FROM prints;
SELECT name, mcc_minutiae_count(tpl) FROM enrolled ORDER BY name;

DROP TABLE enrolled, prints;
DROP FUNCTION extract_pgm(int, int, int[]), synthetic_print(float8), try(text), sqlstate_of(text);
