-- accessors: counts, profile, info, minutiae as jsonb, cylinders

CREATE TABLE acc (name text PRIMARY KEY, t mcc_template);
INSERT INTO acc VALUES
	-- one minutia: no neighbour within R + 3 sigma_S, no valid cylinder
	('one', '{"width":300,"height":300,"minutiae":[[150,150,1,"ending",40]]}'),
	-- two minutiae 50 px apart: each the other's neighbour (gpu2015 needs 1)
	('two near', '{"width":300,"height":300,"minutiae":[[130,150,0.5,"ending",40],[180,150,2,"bifurcation",70]]}'),
	-- two minutiae 100 px apart: beyond R + 3 sigma_S = 93 px, no neighbour
	('two far', '{"width":300,"height":300,"minutiae":[[100,150,0.5],[200,150,2]]}'),
	-- tpami2010 needs 2 neighbours: two minutiae give no cylinder
	('two near tpami', '{"profile":"tpami2010","width":300,"height":300,"minutiae":[[130,150,0.5],[180,150,2]]}'),
	('grid', (SELECT jsonb_build_object('width', 400, 'height', 400, 'dpi', 569, 'minutiae',
		jsonb_agg(jsonb_build_array(120 + 20 * (i % 8), 120 + 20 * (i / 8), (i * 37 % 64) * 0.098, 'ending', i)))
		FROM generate_series(0, 63) i)),
	('grid tpami', (SELECT jsonb_build_object('profile', 'tpami2010', 'width', 400, 'height', 400, 'minutiae',
		jsonb_agg(jsonb_build_array(120 + 20 * (i % 8), 120 + 20 * (i / 8), (i * 37 % 64) * 0.098, 'bifurcation', 100 - i)))
		FROM generate_series(0, 63) i));

SELECT name, mcc_minutiae_count(t), mcc_cylinder_count(t), mcc_profile(t) FROM acc ORDER BY name;
SELECT name, (mcc_template_info(t)).* FROM acc ORDER BY name;

-- stored size, from the layout in src/core/mcc/mcc_template.h:
-- align8(24 + 12 n_m) + 8 n_c words + 4 n_c, words = 4 (gpu2015) or 40
-- (tpami2010: 20 value + 20 mask words)
SELECT name, (mcc_template_info(t)).bytes =
	   ((24 + 12 * mcc_minutiae_count(t) + 7) / 8 * 8
		+ mcc_cylinder_count(t) * (8 * CASE mcc_profile(t) WHEN 'gpu2015' THEN 4 ELSE 40 END + 4)) AS layout_ok
FROM acc ORDER BY name;

-- minutiae as jsonb objects, in stored (input) order
SELECT mcc_minutiae(t) FROM acc WHERE name IN ('one', 'two near') ORDER BY name;
SELECT m.ord, m.e->'x' AS x, m.e->'y' AS y, m.e->'type' AS type, m.e->'quality' AS quality
FROM acc, jsonb_array_elements(mcc_minutiae(t)) WITH ORDINALITY AS m(e, ord)
WHERE name = 'grid' AND m.ord IN (1, 2, 9, 64) ORDER BY m.ord;
-- theta reads back to the same float
SELECT count(*) FILTER (WHERE (m.e->>'theta')::real = ((m.ord - 1) * 37 % 64 * 0.098)::real) AS same_theta,
	   count(*) AS minutiae
FROM acc, jsonb_array_elements(mcc_minutiae(t)) WITH ORDINALITY AS m(e, ord) WHERE name = 'grid';

-- cylinders: one row per valid cylinder
SELECT name, (SELECT count(*) FROM mcc_cylinders(t)) AS rows, mcc_cylinder_count(t) AS cylinders
FROM acc ORDER BY name;
SELECT minutia, x, y, angle, popcount > 0 AS has_bits, length(bits) AS nbits, mask IS NULL AS no_mask
FROM acc, mcc_cylinders(t) WHERE name = 'two near';
-- the byte angle is round(theta * 256 / 2pi) mod 256: 0.5 -> 20, 2 -> 81
-- popcount is the number of set value bits; bits has the profile's length;
-- the mask exists only with tpami2010; rows come in stored order, sorted by
-- angle then minutia; every minutia has at most one cylinder and the
-- position is its minutia's
SELECT name,
	   bool_and(popcount = length(replace(bits::text, '0', ''))) AS popcount_ok,
	   min(length(bits)) AS min_bits, max(length(bits)) AS max_bits,
	   bool_and(mask IS NULL) AS no_masks, min(length(mask)) AS mask_bits,
	   count(DISTINCT minutia) = count(*) AS unique_minutiae
FROM acc, mcc_cylinders(t) GROUP BY name ORDER BY name;
SELECT name, bool_and(ok) AS sorted FROM (
	SELECT name, (angle, minutia) >= (lag(angle, 1, -1) OVER w, lag(minutia, 1, -1) OVER w) AS ok
	FROM acc, mcc_cylinders(t) WITH ORDINALITY AS c(minutia, x, y, angle, popcount, bits, mask, ord)
	WINDOW w AS (PARTITION BY name ORDER BY ord)) s
GROUP BY name ORDER BY name;
SELECT count(*) AS cylinders,
	   count(*) FILTER (WHERE (m.e->>'x')::int = c.x AND (m.e->>'y')::int = c.y) AS positions_ok
FROM acc, mcc_cylinders(t) c, jsonb_array_elements(mcc_minutiae(t)) WITH ORDINALITY AS m(e, ord)
WHERE name = 'grid' AND m.ord = c.minutia;
-- masked profile: value bits lie inside the valid cells
SELECT count(*) FILTER (WHERE bits & ~mask = B'0'::bit(1248)) AS inside_mask, count(*) AS cylinders
FROM acc, mcc_cylinders(t) WHERE name = 'grid tpami';

-- NULL in, NULL out
SELECT mcc_minutiae_count(NULL) IS NULL AS a, mcc_cylinder_count(NULL) IS NULL AS b,
	   mcc_minutiae(NULL) IS NULL AS c, mcc_profile(NULL) IS NULL AS d,
	   mcc_template_info(NULL) IS NULL AS e,
	   (SELECT count(*) FROM mcc_cylinders(NULL)) AS f;

-- STORAGE external: a large value goes out of line uncompressed, where
-- pg_column_size() counts its bytes without the 4-byte varlena header
-- (an inline value would count them with it, a compressed one fewer)
CREATE TABLE big (t mcc_template);
INSERT INTO big SELECT t FROM acc WHERE name = 'grid tpami';
SELECT pg_column_size(t) = (mcc_template_info(t)).bytes - 4 AS external_uncompressed,
	   t::text = (SELECT t::text FROM acc WHERE name = 'grid tpami') AS same
FROM big;

-- A new gallery's column takes the type's storage, external. Not main:
-- under STORAGE main (inline, pglz tried on every write of a row over about
-- 2 kB) most large templates of the default profile compress, and every
-- read of them would pay pglz's decompression (docs/benchmarks.md, "Backend
-- scan", fourth pass: 2.35 times the backend's CPU per match in the median run)
CREATE TABLE gal (id int, tpl mcc_template);
SELECT attstorage FROM pg_attribute WHERE attrelid = 'gal'::regclass AND attname = 'tpl';
ALTER TABLE gal ALTER tpl SET STORAGE main, ALTER tpl SET COMPRESSION pglz;
INSERT INTO gal SELECT finger, template FROM mcc_synthetic(200, 1, 1, 0);
SELECT count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 2100) > 20 AS many_large,
	   count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 2100 AND pg_column_compression(tpl) = 'pglz')
	   > count(*) FILTER (WHERE (mcc_template_info(tpl)).bytes > 2100) / 2 AS most_large_compressed
FROM gal;

DROP TABLE acc, big, gal;
