-- mcc 0.1.0 -> 0.2.0 (docs/upgrades.md). CREATE EXTENSION mcc installs
-- 0.1.0 and runs this script; ALTER EXTENSION mcc UPDATE runs it on an
-- existing 0.1.0 installation. Every object new or changed in 0.2.0 is
-- defined here, once; sections follow the subsystem that owns them.
\echo Use "ALTER EXTENSION mcc UPDATE TO '0.2.0'" to load this file. \quit

-- ====================================================================
-- Right answers by default (issue 16; docs/accuracy.md, section 2): the
-- 1:1 score and identify()'s refinement are the fused relaxation (the mean
-- of LSS-R and LGS-DTR) unless a method is asked for.
-- ===========================================================================

-- mcc_score(a, b), % and <=> keep their C entry points, which now score with
-- the product's best method ('fused'); only the comments change.
COMMENT ON FUNCTION mcc_score(mcc_template, mcc_template) IS
	'Similarity of two templates in [0, 1] by the most accurate method, ''fused'' (the same as mcc_score(a, b, ''fused''))';
COMMENT ON FUNCTION mcc_matches(mcc_template, mcc_template) IS
	'mcc_score(a, b) >= mcc.match_threshold (the % operator)';
COMMENT ON OPERATOR % (mcc_template, mcc_template) IS
	'true if mcc_score(a, b) >= mcc.match_threshold';
COMMENT ON FUNCTION mcc_score(mcc_template, mcc_template, text) IS
	'Similarity of two templates in [0, 1] by a method: fused (the default of mcc_score(a, b)), lss, lss-r, lss-dtr, lsa, lsa-r, lsa-dtr, lgs, lgs-r, lgs-dtr, consolidation (a is the probe)';

-- identify() and identify_batch(): refine defaults to NULL, which means the
-- setting mcc.refine_method ('fused' unless the DBA changes it); 'none' (or
-- 'lss') still asks for the raw LSS stage. CREATE OR REPLACE keeps the
-- functions' OIDs, so views and grants that use them survive the update.
CREATE OR REPLACE FUNCTION identify(gallery regclass, probe mcc_template, k int DEFAULT 10,
						 min_score real DEFAULT 0, id_column name DEFAULT NULL,
						 template_column name DEFAULT NULL, refine text DEFAULT NULL)
RETURNS TABLE(id bigint, score real)
AS 'MODULE_PATHNAME', 'mcc_identify'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 10 COST 10000;

COMMENT ON FUNCTION identify(regclass, mcc_template, int, real, name, name, text) IS
'1:N identification: the k gallery rows with the best scores against the probe (at least min_score), best first, ties by smaller id: the best mcc.refine_fraction of the rows by LSS (at least mcc.refine_min and k) rescored with the refine method (NULL: mcc.refine_method, by default ''fused''), or LSS over every row with refine ''none''; sees exactly the rows the calling statement can see';

CREATE OR REPLACE FUNCTION identify_batch(gallery regclass, probes mcc_template[], k int DEFAULT 10,
							   min_score real DEFAULT 0, id_column name DEFAULT NULL,
							   template_column name DEFAULT NULL, refine text DEFAULT NULL)
RETURNS TABLE(probe_no int, id bigint, score real)
AS 'MODULE_PATHNAME', 'mcc_identify_batch'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 100 COST 10000;

COMMENT ON FUNCTION identify_batch(regclass, mcc_template[], int, real, name, name, text) IS
'1:N identification of several probes in one pass over the gallery: per probe (probe_no = position in the array) the k best rows as identify() returns them, refined alike';

-- A refinement shortlist of a given length, rescored, returning only the
-- rows that can matter to a longer shortlist's answer: the scale-out
-- coordinator's refinement (docs/scale-out.md, "Refinement"), through the
-- matcher engine when it serves the gallery.
CREATE FUNCTION identify_shortlist(gallery regclass, probe mcc_template, shortlist bigint, k int,
								   window_from bigint DEFAULT 0, id_column name DEFAULT NULL,
								   template_column name DEFAULT NULL, refine text DEFAULT NULL)
RETURNS TABLE(id bigint, lss real, score real, pos bigint)
AS 'MODULE_PATHNAME', 'mcc_identify_shortlist'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 100 COST 10000;

COMMENT ON FUNCTION identify_shortlist(regclass, mcc_template, bigint, int, bigint, name, name, text) IS
'the first shortlist rows by LSS (ties by smaller id) that the statement sees, rescored with refine (NULL: mcc.refine_method): those that fewer than k earlier rows beat by (score DESC, id) and those at position window_from or later, with LSS, score and position (from 0); then a row with only pos, the shortlist''s length';

-- The rows with a template that the statement sees, as count(*) counts
-- them, but from the matcher engine's cache when the service serves the
-- gallery (no scan of the table): the scale-out refinement's per-partition
-- counts (docs/scale-out.md, "Refinement").
CREATE FUNCTION mcc_gallery_rows(gallery regclass, id_column name DEFAULT NULL,
								 template_column name DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'mcc_gallery_rows_sql'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_rows(regclass, name, name) IS
'the rows with a template that the statement sees (count(*) of the rows whose template is not null), counted by the matcher engine from its cache when the service serves the gallery, else by a query';

-- identify_shortlist() and mcc_gallery_rows() of several galleries in one
-- call, with the same rows: the matcher engine's requests are all sent
-- before any is awaited, so that the engine serves the galleries at once (a
-- scale-out shard's partitions: docs/scale-out.md, "Refinement").
CREATE FUNCTION identify_shortlists(galleries regclass[], probes mcc_template[], shortlists bigint[],
									k int, windows_from bigint[], id_column name DEFAULT NULL,
									template_column name DEFAULT NULL, refine text DEFAULT NULL)
RETURNS TABLE(gallery_no int, probe_no int, id bigint, lss real, score real, pos bigint)
AS 'MODULE_PATHNAME', 'mcc_identify_shortlists'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 1000 COST 10000;

COMMENT ON FUNCTION identify_shortlists(regclass[], mcc_template[], bigint[], int, bigint[], name, name, text) IS
'identify_shortlist(galleries[i], probes[j], shortlists[i], k, windows_from[i], ...) for every gallery i and probe j (gallery_no, probe_no from 1), the matcher engine''s requests sent at once';

CREATE FUNCTION mcc_galleries_rows(galleries regclass[], id_column name DEFAULT NULL,
								   template_column name DEFAULT NULL)
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'mcc_galleries_rows'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_galleries_rows(regclass[], name, name) IS
'mcc_gallery_rows() of each gallery, in order, the matcher engine''s counts asked for at once';

-- Thresholds by false match rate (docs/accuracy.md, "Thresholds by false
-- match rate"): per method, the score at or above which at most that share
-- of impostor pairs (different fingers) scored, measured on FVC2002 and on
-- synthetic fingers and shipped with the extension (scripts/thresholds.py).
-- Part of the extension: not dumped, replaced by updates.
CREATE TABLE mcc_thresholds (
	method text NOT NULL,
	fmr float8 NOT NULL CHECK (fmr > 0 AND fmr < 1),
	threshold real NOT NULL CHECK (threshold >= 0 AND threshold <= 1),
	measured_on text NOT NULL,
	set_by text NOT NULL,
	PRIMARY KEY (method, fmr)
);

COMMENT ON TABLE mcc_thresholds IS
	'Score thresholds by false match rate for each method of mcc_score, measured on FVC2002 and synthetic impostor pairs (mcc_threshold() interpolates them)';

GRANT SELECT ON mcc_thresholds TO PUBLIC;

-- BEGIN mcc_thresholds rows (generated by scripts/thresholds.py; do not edit)
-- 46008 FVC2002 impostor pairs (16 sets), 179400 synthetic ones; at least 3 pairs
-- above every threshold in the source that sets it.
INSERT INTO mcc_thresholds (method, fmr, threshold, measured_on, set_by) VALUES
	('consolidation', 0.1, 0.067471683, 'fvc2002+synthetic', 'fvc2002'),
	('consolidation', 0.03, 0.087348558, 'fvc2002+synthetic', 'fvc2002'),
	('consolidation', 0.01, 0.104271747, 'fvc2002+synthetic', 'fvc2002'),
	('consolidation', 0.003, 0.12440794, 'fvc2002+synthetic', 'fvc2002'),
	('consolidation', 0.001, 0.140322298, 'fvc2002+synthetic', 'fvc2002'),
	('consolidation', 0.0003, 0.172729939, 'fvc2002+synthetic', 'fvc2002'),
	('consolidation', 0.0001, 0.181886762, 'fvc2002+synthetic', 'fvc2002'),
	('fused', 0.1, 0.0161124896, 'fvc2002+synthetic', 'fvc2002'),
	('fused', 0.03, 0.0181502402, 'fvc2002+synthetic', 'fvc2002'),
	('fused', 0.01, 0.0200856812, 'fvc2002+synthetic', 'fvc2002'),
	('fused', 0.003, 0.0225933567, 'fvc2002+synthetic', 'fvc2002'),
	('fused', 0.001, 0.0251715612, 'fvc2002+synthetic', 'fvc2002'),
	('fused', 0.0003, 0.0279906411, 'fvc2002+synthetic', 'fvc2002'),
	('fused', 0.0001, 0.0341663212, 'fvc2002+synthetic', 'fvc2002'),
	('lgs', 0.1, 0.441693515, 'fvc2002+synthetic', 'fvc2002'),
	('lgs', 0.03, 0.458140641, 'fvc2002+synthetic', 'fvc2002'),
	('lgs', 0.01, 0.472218007, 'fvc2002+synthetic', 'fvc2002'),
	('lgs', 0.003, 0.486536324, 'fvc2002+synthetic', 'fvc2002'),
	('lgs', 0.001, 0.498924136, 'fvc2002+synthetic', 'fvc2002'),
	('lgs', 0.0003, 0.511521518, 'fvc2002+synthetic', 'fvc2002'),
	('lgs', 0.0001, 0.531555653, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-dtr', 0.1, 0.0138287349, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-dtr', 0.03, 0.0154875666, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-dtr', 0.01, 0.0170305185, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-dtr', 0.003, 0.0189145003, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-dtr', 0.001, 0.0212267619, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-dtr', 0.0003, 0.0263799373, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-dtr', 0.0001, 0.0293493234, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-r', 0.1, 0.0148950806, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-r', 0.03, 0.0162557438, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-r', 0.01, 0.017575549, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-r', 0.003, 0.0191212725, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-r', 0.001, 0.0206852313, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-r', 0.0003, 0.0238375776, 'fvc2002+synthetic', 'fvc2002'),
	('lgs-r', 0.0001, 0.0273119714, 'fvc2002+synthetic', 'fvc2002'),
	('lsa', 0.1, 0.439903498, 'fvc2002+synthetic', 'fvc2002'),
	('lsa', 0.03, 0.45644322, 'fvc2002+synthetic', 'fvc2002'),
	('lsa', 0.01, 0.469984204, 'fvc2002+synthetic', 'fvc2002'),
	('lsa', 0.003, 0.484696925, 'fvc2002+synthetic', 'fvc2002'),
	('lsa', 0.001, 0.497442037, 'fvc2002+synthetic', 'fvc2002'),
	('lsa', 0.0003, 0.510116756, 'fvc2002+synthetic', 'fvc2002'),
	('lsa', 0.0001, 0.527384102, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-dtr', 0.1, 0.0137721291, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-dtr', 0.03, 0.0154067539, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-dtr', 0.01, 0.0170102678, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-dtr', 0.003, 0.0190964658, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-dtr', 0.001, 0.0209882986, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-dtr', 0.0003, 0.0236676261, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-dtr', 0.0001, 0.0297615249, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-r', 0.1, 0.0148132918, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-r', 0.03, 0.0161246713, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-r', 0.01, 0.0174600072, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-r', 0.003, 0.01907878, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-r', 0.001, 0.0207864121, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-r', 0.0003, 0.0231528059, 'fvc2002+synthetic', 'fvc2002'),
	('lsa-r', 0.0001, 0.0265699271, 'fvc2002+synthetic', 'fvc2002'),
	('lss', 0.1, 0.457386404, 'fvc2002+synthetic', 'fvc2002'),
	('lss', 0.03, 0.475852311, 'fvc2002+synthetic', 'fvc2002'),
	('lss', 0.01, 0.490384638, 'fvc2002+synthetic', 'fvc2002'),
	('lss', 0.003, 0.506009698, 'fvc2002+synthetic', 'fvc2002'),
	('lss', 0.001, 0.519230843, 'fvc2002+synthetic', 'fvc2002'),
	('lss', 0.0003, 0.53605777, 'fvc2002+synthetic', 'fvc2002'),
	('lss', 0.0001, 0.555288494, 'fvc2002+synthetic', 'fvc2002'),
	('lss-dtr', 0.1, 0.0154682351, 'fvc2002+synthetic', 'fvc2002'),
	('lss-dtr', 0.03, 0.0175641179, 'fvc2002+synthetic', 'fvc2002'),
	('lss-dtr', 0.01, 0.0195728075, 'fvc2002+synthetic', 'fvc2002'),
	('lss-dtr', 0.003, 0.021849528, 'fvc2002+synthetic', 'fvc2002'),
	('lss-dtr', 0.001, 0.0243118815, 'fvc2002+synthetic', 'fvc2002'),
	('lss-dtr', 0.0003, 0.0286942963, 'fvc2002+synthetic', 'fvc2002'),
	('lss-dtr', 0.0001, 0.032950405, 'fvc2002+synthetic', 'fvc2002'),
	('lss-r', 0.1, 0.0168218222, 'fvc2002+synthetic', 'fvc2002'),
	('lss-r', 0.03, 0.0188873336, 'fvc2002+synthetic', 'fvc2002'),
	('lss-r', 0.01, 0.0210675076, 'fvc2002+synthetic', 'fvc2002'),
	('lss-r', 0.003, 0.0230925679, 'fvc2002+synthetic', 'fvc2002'),
	('lss-r', 0.001, 0.0250292085, 'fvc2002+synthetic', 'fvc2002'),
	('lss-r', 0.0003, 0.0288993102, 'fvc2002+synthetic', 'fvc2002'),
	('lss-r', 0.0001, 0.0320563316, 'fvc2002+synthetic', 'fvc2002');
-- END mcc_thresholds rows

-- The threshold for a false match rate: the shipped value at a measured
-- rate, interpolated linearly in log10(fmr) between two measured rates.
CREATE FUNCTION mcc_threshold(fmr float8, method text DEFAULT 'fused') RETURNS real
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
	m text := CASE method WHEN 'dtr' THEN 'lss-dtr' WHEN 'none' THEN 'lss' ELSE method END;
	lo record;
	hi record;
	lim record;
BEGIN
	SELECT min(t.fmr) AS least, max(t.fmr) AS most INTO lim
	FROM @extschema@.mcc_thresholds t WHERE t.method = m;
	IF lim.least IS NULL THEN
		RAISE EXCEPTION 'unknown matching method "%"', method
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Known methods are fused, lss, lss-r, lss-dtr, lsa, lsa-r, lsa-dtr, lgs, lgs-r, lgs-dtr, consolidation.';
	END IF;
	IF fmr < lim.least OR fmr > lim.most THEN
		RAISE EXCEPTION 'false match rate % is outside the measured range of method "%"', fmr, m
			USING ERRCODE = 'numeric_value_out_of_range',
				  DETAIL = format('Thresholds of %s were measured for false match rates from %s to %s.',
								  m, lim.least, lim.most),
				  HINT = 'Calibrate on your own impostor pairs below that (docs/sql-reference.md, "Choosing the threshold").';
	END IF;
	SELECT t.fmr, t.threshold INTO lo FROM @extschema@.mcc_thresholds t
	WHERE t.method = m AND t.fmr <= fmr ORDER BY t.fmr DESC LIMIT 1;
	SELECT t.fmr, t.threshold INTO hi FROM @extschema@.mcc_thresholds t
	WHERE t.method = m AND t.fmr >= fmr ORDER BY t.fmr LIMIT 1;
	IF lo.fmr = hi.fmr THEN
		RETURN lo.threshold;
	END IF;
	-- a lower rate needs a higher threshold: interpolate between the two
	RETURN (lo.threshold + (hi.threshold - lo.threshold) *
			(ln(fmr) - ln(lo.fmr)) / (ln(hi.fmr) - ln(lo.fmr)))::real;
END
$$;

COMMENT ON FUNCTION mcc_threshold(float8, text) IS
	'Score threshold of a method (default fused, the method of mcc_score(a, b)) for a target false match rate, from the impostor distributions shipped in mcc_thresholds';
-- ---------------------------------------------------------------------------
-- Formats (issue 18): mcc_template_to_iso also writes ISO/IEC 19794-2:2011
-- and ANSI/INCITS 378-2009. The function and its signature are 0.1.0's;
-- only the C code behind it (mcc.so) and this comment change.
COMMENT ON FUNCTION mcc_template_to_iso(mcc_template, text) IS
	'One-view ISO/IEC 19794-2:2005 (''iso2005'') or :2011 (''iso2011''), or ANSI/INCITS 378-2004 (''ansi2004'') or -2009 (''ansi2009'') record of the minutiae';

-- ===========================================================================
-- Images: enrolment from a fingerprint image (docs/images.md, "Minutiae
-- extraction")
-- ===========================================================================

CREATE FUNCTION mcc_template_from_image(image bytea, dpi integer DEFAULT 500,
										profile text DEFAULT 'gpu2015',
										min_minutiae integer DEFAULT 5)
	RETURNS mcc_template
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION mcc_template_from_image(bytea, integer, text, integer) IS
	'mcc_template from the minutiae extracted from a PNG or PGM fingerprint image at dpi (250..1000); fewer than min_minutiae minutiae is an error';

CREATE FUNCTION mcc_minutiae_from_image(image bytea, dpi integer DEFAULT 500,
										OUT x integer, OUT y integer,
										OUT theta double precision, OUT type text,
										OUT quality integer)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000 ROWS 50;

COMMENT ON FUNCTION mcc_minutiae_from_image(bytea, integer) IS
	'The minutiae that mcc_template_from_image extracts from a PNG or PGM fingerprint image, one row each (x, y, theta in radians, type, quality 1..100), for inspection';

-- Persons (issue 22; docs/persons.md): galleries with several fingers per
-- person, a person key and an ISO/IEC 19794-2 finger position beside each
-- template, searched with several probe fingers at once, their scores fused
-- by the sum rule. Built on identify_batch(), so the answer follows
-- identify()'s contract (and uses the matcher service when it serves the
-- gallery).
-- ===========================================================================

CREATE FUNCTION mcc_iso_finger_position(record bytea, view integer DEFAULT 1) RETURNS smallint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_iso_finger_position(bytea, integer) IS
	'Finger position code (0 unknown, 1 right thumb .. 10 left little finger) of finger view number view of an ISO/IEC 19794-2 or ANSI/INCITS 378 record';

CREATE FUNCTION mcc_refine_count(n bigint, k integer DEFAULT 1) RETURNS bigint
	AS 'MODULE_PATHNAME', 'mcc_refine_count_sql' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_refine_count(bigint, integer) IS
	'n'', the rows identify() rescores for a gallery of n rows with a template and a given k, under the current mcc.refine_fraction and mcc.refine_min';

CREATE FUNCTION mcc_gallery_columns(gallery regclass, id_column name DEFAULT NULL,
									template_column name DEFAULT NULL,
									OUT id_column name, OUT template_column name)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION mcc_gallery_columns(regclass, name, name) IS
	'The key and template columns identify() uses for a gallery (found, or the named ones checked, as identify() does)';

-- The person and position columns of a person gallery (docs/persons.md):
-- they exist, are of an integer type (or a domain over one) and the caller
-- may read them. Shared by identify_persons() and mcc_dedup_persons().
CREATE FUNCTION mcc_person_columns(gallery regclass, person_column name, position_column name)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	col name;
	typ oid;
BEGIN
	FOREACH col IN ARRAY ARRAY[person_column, position_column] LOOP
		SELECT CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END INTO typ
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = gallery AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'column "%" of gallery "%" does not exist', col, gallery
				USING ERRCODE = 'undefined_column',
					  HINT = 'Name the columns with person_column and position_column (docs/persons.md).';
		END IF;
		IF typ NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
			RAISE EXCEPTION 'column "%" of gallery "%" has type %, not an integer type', col, gallery, typ::regtype
				USING ERRCODE = 'datatype_mismatch';
		END IF;
		IF NOT has_column_privilege(gallery, col, 'SELECT') THEN
			RAISE EXCEPTION 'permission denied for column "%" of gallery "%"', col, gallery
				USING ERRCODE = 'insufficient_privilege';
		END IF;
	END LOOP;
END
$$;

COMMENT ON FUNCTION mcc_person_columns(regclass, name, name) IS
	'Checks the person and position columns of a person gallery: they exist, have an integer type and the caller may read them (the errors of identify_persons())';

-- The person search. PL/pgSQL on top of identify_batch(): one pass over the
-- gallery for all probe fingers, then the candidate persons' other fingers
-- scored with mcc_score(). STABLE: every query sees the calling statement's
-- snapshot, so the count, the search and the lookups see the same rows.
-- SECURITY INVOKER: the caller's privileges and row-level security apply.
CREATE FUNCTION identify_persons(gallery regclass, probes mcc_template[], positions integer[],
								 k int DEFAULT 10, min_score real DEFAULT 0,
								 person_column name DEFAULT 'person',
								 position_column name DEFAULT 'finger',
								 id_column name DEFAULT NULL, template_column name DEFAULT NULL,
								 refine text DEFAULT NULL)
RETURNS TABLE(person bigint, score real, finger_scores real[], finger_ids bigint[])
LANGUAGE plpgsql STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 10 COST 10000
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_variable
DECLARE
	nf int;
	cols record;
	nul bigint;
	n bigint;
	np bigint;
	method text;
BEGIN
	IF gallery IS NULL OR probes IS NULL OR positions IS NULL OR k IS NULL OR min_score IS NULL
		OR person_column IS NULL OR position_column IS NULL THEN
		RAISE EXCEPTION 'gallery, probes, positions, k, min_score, person_column and position_column of identify_persons() must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	nf := cardinality(probes);
	IF nf = 0 OR array_ndims(probes) <> 1 OR array_ndims(positions) <> 1 OR cardinality(positions) <> nf THEN
		RAISE EXCEPTION 'probes and positions must be one-dimensional arrays of the same length, at least 1'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('probes has %s elements, positions %s.', nf, cardinality(positions));
	END IF;
	SELECT min(u.o) INTO nul FROM unnest(probes, positions) WITH ORDINALITY u(t, p, o)
	WHERE u.t IS NULL OR u.p IS NULL;
	IF nul IS NOT NULL THEN
		RAISE EXCEPTION 'probe finger % of identify_persons() is null', nul
			USING ERRCODE = 'null_value_not_allowed',
				  DETAIL = 'Every probe finger needs a template and a position.';
	END IF;
	IF EXISTS (SELECT FROM unnest(positions) p WHERE p NOT BETWEEN 0 AND 10) THEN
		RAISE EXCEPTION 'finger positions must be between 0 and 10'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('positions is %s.', positions),
				  HINT = 'ISO/IEC 19794-2 codes: 0 unknown, 1 right thumb .. 5 right little, 6 left thumb .. 10 left little.';
	END IF;
	IF k <= 0 THEN
		RAISE EXCEPTION 'k must be greater than zero' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('k is %s.', k);
	END IF;
	IF min_score = 'NaN' OR min_score < 0 OR min_score > 1 THEN
		RAISE EXCEPTION 'min_score must be between 0 and 1' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('Scores lie in [0, 1]; min_score is %s.', min_score);
	END IF;

	-- identify()'s columns (its checks and errors), then the person columns
	cols := @extschema@.mcc_gallery_columns(gallery, id_column, template_column);
	PERFORM @extschema@.mcc_person_columns(gallery, person_column, position_column);

	-- the method whose scores identify() returns ('none': LSS)
	method := coalesce(refine, current_setting('mcc.refine_method'));
	method := CASE method WHEN 'none' THEN 'lss' WHEN 'dtr' THEN 'lss-dtr' ELSE method END;

	-- n' of identify() for this gallery and k (src/identify/refine.h)
	EXECUTE format('SELECT count(%I) FROM %s', cols.template_column, gallery) INTO n;
	IF n = 0 THEN
		RETURN;
	END IF;
	np := @extschema@.mcc_refine_count(n, k);

	-- Every probe finger's shortlist, rescored: identify_batch() with k = n'
	-- returns all n' rows (min_score 0), as identify() ranks them. A person
	-- with a row in any shortlist is a candidate; each candidate's score for
	-- a probe finger is the best of its templates at that finger's position
	-- (identify()'s score where the row was shortlisted, mcc_score() with the
	-- same method otherwise: the same value by identify()'s contract), 0
	-- when it has none; the person's score is the mean over probe fingers.
	RETURN QUERY EXECUTE format($q$
		WITH probe AS (
			SELECT p.ord::int AS ord, p.tpl, p.pos
			FROM unnest($1, $2) WITH ORDINALITY AS p(tpl, pos, ord)),
		hit AS (
			SELECT b.probe_no AS ord, b.id, b.score
			FROM @extschema@.identify_batch($3, $1, $4::int, 0, $5, $6, $7) b),
		cand AS (
			SELECT DISTINCT g.%1$I::int8 AS person
			FROM hit JOIN %2$s g ON g.%3$I = hit.id
			WHERE g.%1$I IS NOT NULL),
		cand_row AS (
			SELECT g.%1$I::int8 AS person, g.%5$I AS pos, g.%3$I::int8 AS id, g.%4$I AS tpl
			FROM %2$s g
			WHERE g.%1$I IN (SELECT c.person FROM cand c) AND g.%4$I IS NOT NULL),
		scored AS (
			SELECT r.person, p.ord, r.id,
				   coalesce(h.score, @extschema@.mcc_score(p.tpl, r.tpl, $8)) AS score
			FROM cand_row r JOIN probe p ON p.pos = r.pos
			LEFT JOIN hit h ON h.ord = p.ord AND h.id = r.id),
		best AS (
			SELECT DISTINCT ON (s.person, s.ord) s.person, s.ord, s.id, s.score
			FROM scored s ORDER BY s.person, s.ord, s.score DESC, s.id),
		fused AS (
			SELECT c.person,
				   (sum(coalesce(b.score, 0)::float8) / $9)::real AS score,
				   array_agg(b.score ORDER BY p.ord) AS finger_scores,
				   array_agg(b.id ORDER BY p.ord) AS finger_ids
			FROM cand c CROSS JOIN probe p
			LEFT JOIN best b ON b.person = c.person AND b.ord = p.ord
			GROUP BY c.person)
		SELECT f.person, f.score, f.finger_scores, f.finger_ids FROM fused f
		WHERE f.score >= $10
		ORDER BY f.score DESC, f.person
		LIMIT $11 $q$,
		person_column, gallery, cols.id_column, cols.template_column, position_column)
	USING probes, positions, gallery, np, cols.id_column, cols.template_column,
		  refine, method, nf, min_score, k;
END
$fn$;

COMMENT ON FUNCTION identify_persons(regclass, mcc_template[], integer[], int, real, name, name, name, name, text) IS
'1:N identification of persons with several fingers: the k persons of the gallery (person_column, position_column beside the template) with the best mean, over the probe fingers, of each finger''s score against the person''s template at the same position (0 when missing), among the persons that identify() shortlists for some probe finger; per-finger scores and rows in probe order';

-- ===========================================================================
-- Deduplication (issue 22, part 2; docs/dedup.md): every pair of gallery
-- rows, or of new enrolments and gallery rows, whose LSS score reaches an
-- LSS threshold and whose refined score reaches the threshold of a false
-- match rate. PL/pgSQL over identify_batch(), as identify_persons(): the
-- LSS stage is identify_batch(refine => 'none', min_score => the LSS
-- threshold), one pass for a batch of probes, in the backend or in the
-- matcher service (its GPU, many probes per call, or its CPU threads) with
-- identify()'s exactness contract and mcc.fallback; the candidate pairs are
-- rescored with mcc_score(). STABLE: every query of one call sees the
-- calling statement's snapshot. SECURITY INVOKER: privileges and row-level
-- security apply as in identify().
-- ===========================================================================

-- The method of a refine argument as mcc_score() names it (NULL: the
-- setting mcc.refine_method; 'none' is lss, 'dtr' lss-dtr), checked.
CREATE FUNCTION mcc_refine_method(refine text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m text := coalesce(refine, current_setting('mcc.refine_method'));
BEGIN
	m := CASE m WHEN 'none' THEN 'lss' WHEN 'dtr' THEN 'lss-dtr' ELSE m END;
	IF m IS NULL OR m NOT IN ('fused', 'lss', 'lss-r', 'lss-dtr', 'lsa', 'lsa-r', 'lsa-dtr',
							  'lgs', 'lgs-r', 'lgs-dtr', 'consolidation') THEN
		RAISE EXCEPTION 'unknown matching method "%"', m
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Known methods are none, fused, lss, lss-r, lss-dtr, lsa, lsa-r, lsa-dtr, lgs, lgs-r, lgs-dtr, consolidation.';
	END IF;
	RETURN m;
END
$$;

COMMENT ON FUNCTION mcc_refine_method(text) IS
	'The method whose scores identify(refine => refine) returns, as mcc_score() names it: refine, or mcc.refine_method when NULL (''none'' is lss, ''dtr'' lss-dtr)';

-- The checks and defaults every dedup entry point shares: the thresholds
-- (threshold: the method's at fmr; lss_threshold: LSS's at lss_fmr), the
-- method, the gallery's columns (identify()'s checks and errors).
CREATE FUNCTION mcc_dedup_settings(gallery regclass, fmr float8, want_threshold real,
								   lss_fmr float8, want_lss_threshold real, refine text,
								   want_id_column name, want_template_column name,
								   OUT method text, OUT threshold real, OUT lss_threshold real,
								   OUT id_column name, OUT template_column name)
RETURNS record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cols record;
BEGIN
	IF gallery IS NULL THEN
		RAISE EXCEPTION 'gallery must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF want_threshold = 'NaN' OR want_threshold < 0 OR want_threshold > 1
		OR want_lss_threshold = 'NaN' OR want_lss_threshold < 0 OR want_lss_threshold > 1 THEN
		RAISE EXCEPTION 'thresholds must be between 0 and 1' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('Scores lie in [0, 1]; threshold is %s, lss_threshold %s.',
							coalesce(want_threshold::text, 'null'), coalesce(want_lss_threshold::text, 'null'));
	END IF;
	IF (want_threshold IS NULL AND fmr IS NULL) OR (want_lss_threshold IS NULL AND lss_fmr IS NULL) THEN
		RAISE EXCEPTION 'a threshold or its false match rate is needed'
			USING ERRCODE = 'null_value_not_allowed',
				  DETAIL = 'threshold and fmr are both null, or lss_threshold and lss_fmr.';
	END IF;
	cols := @extschema@.mcc_gallery_columns(gallery, want_id_column, want_template_column);
	method := @extschema@.mcc_refine_method(refine);
	threshold := coalesce(want_threshold, @extschema@.mcc_threshold(fmr, method));
	lss_threshold := coalesce(want_lss_threshold, @extschema@.mcc_threshold(lss_fmr, 'lss'));
	id_column := cols.id_column;
	template_column := cols.template_column;
END
$$;

COMMENT ON FUNCTION mcc_dedup_settings(regclass, float8, real, float8, real, text, name, name) IS
	'The method, thresholds and columns a dedup call uses (the defaults resolved and checked): threshold, else mcc_threshold(fmr, method); lss_threshold, else mcc_threshold(lss_fmr, ''lss'')';

-- The candidate pairs of a dedup batch rescored (docs/dedup.md, "How it is
-- computed"): per pair i, mcc_score(probes[probe_nos[i]], templates[i],
-- method), computed by the matcher engine's threads (REFINE) when it would
-- serve identify() on the gallery, else in the backend, the same function
-- either way. The templates are those the caller read.
CREATE FUNCTION mcc_dedup_rescore(gallery regclass, probes mcc_template[], probe_nos int[],
								  templates mcc_template[], method text,
								  id_column name DEFAULT NULL, template_column name DEFAULT NULL)
RETURNS real[]
AS 'MODULE_PATHNAME', 'mcc_dedup_rescore'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION mcc_dedup_rescore(regclass, mcc_template[], int[], mcc_template[], text, name, name) IS
	'Scores of pairs for a deduplication of gallery: per pair i, mcc_score(probes[probe_nos[i]], templates[i], method), in the matcher engine when it serves the gallery, else in the backend; used by mcc_dedup_pass()';

-- One LSS pass and its refinement for a set of probes: per probe (probe_no,
-- from 1) every row whose mcc_score(probe, tpl, 'lss') >= lss_threshold and
-- whose mcc_score(probe, tpl, method) >= threshold; with probe_keys, only
-- rows whose key is greater than the probe's own (the gallery against
-- itself, each pair once). identify_batch() returns at most k rows per
-- probe, starting at first_k: a probe that gets k asks again with a k eight
-- times larger, until it gets fewer, so that none of its rows at or above
-- the LSS threshold is missed, however many there are. The pairs come back
-- as arrays ordered by probe_no, id, with last_k, the k of the last search
-- (the caller's next first_k).
CREATE FUNCTION mcc_dedup_pass(gallery regclass, probes mcc_template[], probe_keys bigint[],
							   method text, threshold real, lss_threshold real,
							   id_column name, template_column name, first_k int,
							   OUT probe_nos int[], OUT ids bigint[], OUT lss real[],
							   OUT scores real[], OUT last_k int)
RETURNS record
LANGUAGE plpgsql STABLE PARALLEL UNSAFE COST 10000
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_variable
DECLARE
	k int := greatest(first_k, 1);
	todo int[];				-- probe numbers still to search, ascending
	sub @extschema@.mcc_template[];		-- their templates
	hp int[];
	hi bigint[];
	hs real[];
	full_ int[];
	cp int[] := '{}';		-- the candidate pairs: probe number, key, LSS
	ci bigint[] := '{}';
	cs real[] := '{}';
	tpls @extschema@.mcc_template[];
	refined real[];
	pos int := 1;
BEGIN
	todo := ARRAY(SELECT generate_series(1, cardinality(probes)));
	sub := probes;
	last_k := k;
	WHILE cardinality(todo) > 0 LOOP
		last_k := k;
		SELECT array_agg(b.probe_no ORDER BY b.probe_no, b.id), array_agg(b.id ORDER BY b.probe_no, b.id),
			   array_agg(b.score ORDER BY b.probe_no, b.id)
		INTO hp, hi, hs
		FROM @extschema@.identify_batch(gallery, sub, k, lss_threshold, id_column,
										template_column, 'none') b;
		-- probes that got k rows may have more: asked again below
		SELECT array_agg(h.p ORDER BY h.p) INTO full_
		FROM (SELECT u.p FROM unnest(hp) u(p) GROUP BY u.p HAVING count(*) >= k) h;
		-- the others' rows are all their candidates (of greater key, with probe_keys)
		SELECT cp || coalesce(array_agg(todo[h.p] ORDER BY h.p, h.id), '{}'),
			   ci || coalesce(array_agg(h.id ORDER BY h.p, h.id), '{}'),
			   cs || coalesce(array_agg(h.lss ORDER BY h.p, h.id), '{}')
		INTO cp, ci, cs
		FROM unnest(hp, hi, hs) AS h(p, id, lss)
		WHERE NOT (h.p = ANY (coalesce(full_, '{}')))
		  AND (probe_keys IS NULL OR h.id > probe_keys[todo[h.p]]);
		todo := ARRAY(SELECT todo[u.p] FROM unnest(full_) u(p) ORDER BY u.p);
		sub := ARRAY(SELECT sub[u.p] FROM unnest(full_) u(p) ORDER BY u.p);
		k := CASE WHEN k > 268435455 THEN 2147483647 ELSE k * 8 END;
	END LOOP;
	-- the pairs in probe_no, key order; with lss, their LSS is the score
	SELECT array_agg(c.p ORDER BY c.p, c.id), array_agg(c.id ORDER BY c.p, c.id),
		   array_agg(c.lss ORDER BY c.p, c.id)
	INTO cp, ci, cs
	FROM unnest(cp, ci, cs) AS c(p, id, lss)
	WHERE method <> 'lss' OR c.lss >= threshold;
	IF method = 'lss' OR cp IS NULL THEN
		probe_nos := cp;
		ids := ci;
		lss := cs;
		scores := cs;
		RETURN;
	END IF;
	-- 8,192 pairs at a time (so many templates in memory at once, at most:
	-- a low lss_threshold gives a batch millions of pairs), their templates
	-- read by key under the caller's snapshot and privileges, rescored by one
	-- mcc_dedup_rescore() call (one REFINE), those that reach threshold kept
	WHILE pos <= cardinality(cp) LOOP
		EXECUTE format($q$
			SELECT array_agg(g.%3$I ORDER BY c.o)
			FROM unnest($1, $2) WITH ORDINALITY AS c(p, id, o)
			JOIN %1$s g ON g.%2$I = c.id AND g.%3$I IS NOT NULL $q$,
			gallery, id_column, template_column)
		INTO tpls USING cp[pos:pos + 8191], ci[pos:pos + 8191];
		refined := @extschema@.mcc_dedup_rescore(gallery, probes, cp[pos:pos + 8191], tpls, method,
												 id_column, template_column);
		SELECT coalesce(probe_nos, '{}') || array_agg(u.p ORDER BY u.o),
			   coalesce(ids, '{}') || array_agg(u.id ORDER BY u.o),
			   coalesce(lss, '{}') || array_agg(u.lss ORDER BY u.o),
			   coalesce(scores, '{}') || array_agg(u.score ORDER BY u.o)
		INTO probe_nos, ids, lss, scores
		FROM unnest(cp[pos:pos + 8191], ci[pos:pos + 8191], cs[pos:pos + 8191], refined)
			 WITH ORDINALITY AS u(p, id, lss, score, o)
		WHERE u.score >= threshold;
		pos := pos + 8192;
	END LOOP;
END
$fn$;

COMMENT ON FUNCTION mcc_dedup_pass(regclass, mcc_template[], bigint[], text, real, real, name, name, int) IS
	'One batch of a deduplication: per probe every gallery row with LSS >= lss_threshold and the method''s score >= threshold (with probe_keys: only rows of greater key than the probe''s), as arrays ordered by probe_no, id, the LSS searches starting at k = first_k, and the k of the last search; used by mcc_dedup() and mcc_dedup_probes()';

-- The gallery against itself: every pair a < b (by key) of rows with a
-- template, a as the probe. Probes are taken batch_size at a time in key
-- order, after start_after, at most max_rows of them; a NOTICE reports
-- each further percent done and the key after which a rerun resumes.
CREATE FUNCTION mcc_dedup(gallery regclass, fmr float8 DEFAULT 0.0001, threshold real DEFAULT NULL,
						  lss_fmr float8 DEFAULT 0.001, lss_threshold real DEFAULT NULL,
						  refine text DEFAULT NULL, start_after bigint DEFAULT NULL,
						  max_rows bigint DEFAULT NULL, batch_size int DEFAULT 256,
						  id_column name DEFAULT NULL, template_column name DEFAULT NULL)
RETURNS TABLE(id_a bigint, id_b bigint, lss real, score real)
LANGUAGE plpgsql STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 1000 COST 1000000
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_variable
DECLARE
	s record;
	total bigint;
	done bigint := 0;
	pairs bigint := 0;
	shown int := 0;
	n bigint;
	got bigint;
	last bigint := start_after;
	keys bigint[];
	tpls @extschema@.mcc_template[];
	b record;
	k int := 64;			-- each batch's first k: the last batch's last (at most 4096)
BEGIN
	IF batch_size IS NULL OR batch_size < 1 THEN
		RAISE EXCEPTION 'batch_size must be at least 1' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('batch_size is %s.', coalesce(batch_size::text, 'null'));
	END IF;
	IF max_rows < 0 THEN
		RAISE EXCEPTION 'max_rows must not be negative' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('max_rows is %s.', max_rows);
	END IF;
	s := @extschema@.mcc_dedup_settings(gallery, fmr, threshold, lss_fmr, lss_threshold, refine,
										id_column, template_column);
	-- the probes this call takes: for the progress reports only
	EXECUTE format('SELECT count(*) FROM (SELECT FROM %1$s WHERE %2$I IS NOT NULL AND %3$I IS NOT NULL
					AND ($1::bigint IS NULL OR %3$I > $1) LIMIT $2) r',
				   gallery, s.template_column, s.id_column)
		INTO total USING start_after, max_rows;
	LOOP
		n := least(batch_size, coalesce(max_rows, total) - done);
		EXIT WHEN n <= 0;
		EXECUTE format('SELECT array_agg(r.k ORDER BY r.k), array_agg(r.t ORDER BY r.k)
						FROM (SELECT %3$I::int8 AS k, %2$I AS t FROM %1$s
							  WHERE %2$I IS NOT NULL AND %3$I IS NOT NULL
								AND ($1::bigint IS NULL OR %3$I > $1)
							  ORDER BY %3$I LIMIT $2) r',
					   gallery, s.template_column, s.id_column)
			INTO keys, tpls USING last, n;
		EXIT WHEN keys IS NULL;
		b := @extschema@.mcc_dedup_pass(gallery, tpls, keys, s.method, s.threshold, s.lss_threshold,
										 s.id_column, s.template_column, k);
		k := least(b.last_k, 4096);
		RETURN QUERY
			SELECT keys[u.p], u.id, u.lss, u.score
			FROM unnest(b.probe_nos, b.ids, b.lss, b.scores) WITH ORDINALITY AS u(p, id, lss, score, o)
			ORDER BY u.o;
		GET DIAGNOSTICS got = ROW_COUNT;
		pairs := pairs + got;
		got := cardinality(keys);
		done := done + got;
		last := keys[got];
		IF total > 0 AND (100 * done / total > shown OR done >= total) THEN
			shown := 100 * done / total;
			RAISE NOTICE 'mcc_dedup: % of % rows searched (% %%), % pairs', done, total, shown, pairs
				USING DETAIL = format('Every pair whose first key is at most %s is returned; start_after => %s resumes after it.',
									  last, last);
		END IF;
		EXIT WHEN got < n;
	END LOOP;
END
$fn$;

COMMENT ON FUNCTION mcc_dedup(regclass, float8, real, float8, real, text, bigint, bigint, int, name, name) IS
	'Deduplication of a gallery: every pair of rows id_a < id_b whose mcc_score(a, b, ''lss'') >= lss_threshold (default: LSS''s threshold at lss_fmr) and whose mcc_score(a, b, method) >= threshold (default: the method''s threshold at fmr; method: refine, else mcc.refine_method), ordered by id_a, id_b; start_after and max_rows take part of the probes (a by key)';

-- New enrolments against a gallery: per probe (probe_no = position in the
-- array) every row with LSS >= lss_threshold and score >= threshold.
CREATE FUNCTION mcc_dedup_probes(gallery regclass, probes mcc_template[], fmr float8 DEFAULT 0.0001,
								 threshold real DEFAULT NULL, lss_fmr float8 DEFAULT 0.001,
								 lss_threshold real DEFAULT NULL, refine text DEFAULT NULL,
								 batch_size int DEFAULT 256,
								 id_column name DEFAULT NULL, template_column name DEFAULT NULL)
RETURNS TABLE(probe_no int, id bigint, lss real, score real)
LANGUAGE plpgsql STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 100 COST 100000
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_variable
DECLARE
	s record;
	total int;
	nul bigint;
	first int := 1;
	n int;
	shown int := 0;
	pairs bigint := 0;
	got bigint;
	b record;
	k int := 64;			-- each batch's first k: the last batch's last (at most 4096)
BEGIN
	IF probes IS NULL THEN
		RAISE EXCEPTION 'probes must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF array_ndims(probes) > 1 THEN
		RAISE EXCEPTION 'probes must be a one-dimensional array' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT min(u.o) INTO nul FROM unnest(probes) WITH ORDINALITY u(t, o) WHERE u.t IS NULL;
	IF nul IS NOT NULL THEN
		RAISE EXCEPTION 'probe % of mcc_dedup_probes() is null', nul USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF batch_size IS NULL OR batch_size < 1 THEN
		RAISE EXCEPTION 'batch_size must be at least 1' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = format('batch_size is %s.', coalesce(batch_size::text, 'null'));
	END IF;
	s := @extschema@.mcc_dedup_settings(gallery, fmr, threshold, lss_fmr, lss_threshold, refine,
										id_column, template_column);
	total := coalesce(cardinality(probes), 0);
	WHILE first <= total LOOP
		n := least(batch_size, total - first + 1);
		b := @extschema@.mcc_dedup_pass(gallery, probes[first:first + n - 1], NULL, s.method,
										 s.threshold, s.lss_threshold, s.id_column,
										 s.template_column, k);
		k := least(b.last_k, 4096);
		RETURN QUERY
			SELECT first - 1 + u.p, u.id, u.lss, u.score
			FROM unnest(b.probe_nos, b.ids, b.lss, b.scores) WITH ORDINALITY AS u(p, id, lss, score, o)
			ORDER BY u.o;
		GET DIAGNOSTICS got = ROW_COUNT;
		pairs := pairs + got;
		first := first + n;
		IF 100 * (first - 1) / total > shown OR first > total THEN
			shown := 100 * (first - 1) / total;
			RAISE NOTICE 'mcc_dedup_probes: % of % probes searched (% %%), % pairs', first - 1, total, shown, pairs;
		END IF;
	END LOOP;
END
$fn$;

COMMENT ON FUNCTION mcc_dedup_probes(regclass, mcc_template[], float8, real, float8, real, text, int, name, name) IS
	'Deduplication of new enrolments against a gallery: per probe (probe_no) every row whose mcc_score(probe, tpl, ''lss'') >= lss_threshold and whose mcc_score(probe, tpl, method) >= threshold (defaults as mcc_dedup()), ordered by probe_no, id';

-- Person-level deduplication (docs/dedup.md, "Persons"): the row pairs of
-- mcc_dedup() between two persons at one finger position make the two
-- persons a candidate pair; each candidate pair is scored by the sum rule of
-- identify_persons() over the positions both have (the best score of their
-- templates there, the row of the smaller key as the probe).
CREATE FUNCTION mcc_dedup_persons(gallery regclass, fmr float8 DEFAULT 0.0001, threshold real DEFAULT NULL,
								  lss_fmr float8 DEFAULT 0.001, lss_threshold real DEFAULT NULL,
								  refine text DEFAULT NULL, person_column name DEFAULT 'person',
								  position_column name DEFAULT 'finger',
								  id_column name DEFAULT NULL, template_column name DEFAULT NULL)
RETURNS TABLE(person_a bigint, person_b bigint, score real, fingers int, matched_fingers int,
			  finger_scores real[], positions int[])
LANGUAGE plpgsql STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 100 COST 1000000
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_variable
DECLARE
	s record;
BEGIN
	IF person_column IS NULL OR position_column IS NULL THEN
		RAISE EXCEPTION 'person_column and position_column of mcc_dedup_persons() must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	s := @extschema@.mcc_dedup_settings(gallery, fmr, threshold, lss_fmr, lss_threshold, refine,
										id_column, template_column);
	PERFORM @extschema@.mcc_person_columns(gallery, person_column, position_column);
	RETURN QUERY EXECUTE format($q$
		WITH r AS (
			SELECT g.%3$I::int8 AS id, g.%1$I::int8 AS person, g.%2$I::int AS pos, g.%4$I AS tpl
			FROM %5$s g
			WHERE g.%4$I IS NOT NULL AND g.%1$I IS NOT NULL AND g.%2$I IS NOT NULL),
		hit AS (
			SELECT DISTINCT least(ra.person, rb.person) AS pa, greatest(ra.person, rb.person) AS pb, ra.pos
			FROM @extschema@.mcc_dedup($5, threshold => $1, lss_threshold => $2, refine => $3,
									   id_column => $6, template_column => $7) d
			JOIN r ra ON ra.id = d.id_a JOIN r rb ON rb.id = d.id_b
			WHERE ra.person <> rb.person AND ra.pos = rb.pos),
		cand AS (
			SELECT h.pa, h.pb, count(*)::int AS matched FROM hit h GROUP BY h.pa, h.pb),
		best AS (
			SELECT c.pa, c.pb, x.pos,
				   max(CASE WHEN x.id < y.id THEN @extschema@.mcc_score(x.tpl, y.tpl, $4)
							ELSE @extschema@.mcc_score(y.tpl, x.tpl, $4) END) AS score
			FROM cand c JOIN r x ON x.person = c.pa JOIN r y ON y.person = c.pb AND y.pos = x.pos
			GROUP BY c.pa, c.pb, x.pos)
		SELECT c.pa, c.pb, (sum(b.score::float8) / count(*))::real, count(*)::int, c.matched,
			   array_agg(b.score ORDER BY b.pos), array_agg(b.pos ORDER BY b.pos)
		FROM cand c JOIN best b ON b.pa = c.pa AND b.pb = c.pb
		GROUP BY c.pa, c.pb, c.matched
		ORDER BY 1, 2 $q$,
		person_column, position_column, s.id_column, s.template_column, gallery)
	USING s.threshold, s.lss_threshold, s.method, s.method, gallery, s.id_column, s.template_column;
END
$fn$;

COMMENT ON FUNCTION mcc_dedup_persons(regclass, float8, real, float8, real, text, name, name, name, name) IS
	'Person-level deduplication: pairs of persons person_a < person_b with a row pair of mcc_dedup() at one finger position, each scored by the mean over the positions both have of the best score of their templates there (the row of the smaller key as the probe); per position (ascending) the score';

-- Dedup jobs: a long deduplication in parts, each part its pairs and its
-- progress committed together, so that an interrupted job resumes after
-- the last part that committed and nothing is half-written. The jobs table
-- is the progress view (other sessions see each committed part). Row-level
-- security: each role sees and writes its own jobs.
CREATE TABLE mcc_dedup_jobs (
	job text NOT NULL,
	owner name NOT NULL DEFAULT current_user,
	gallery regclass NOT NULL,
	target regclass NOT NULL,
	method text NOT NULL,
	threshold real NOT NULL,
	lss_threshold real NOT NULL,
	id_column name NOT NULL,
	template_column name NOT NULL,
	part_rows bigint NOT NULL CHECK (part_rows > 0),
	batch_size int NOT NULL CHECK (batch_size > 0),
	last_key bigint,
	rows_done bigint NOT NULL DEFAULT 0,
	rows_total bigint NOT NULL,
	pairs bigint NOT NULL DEFAULT 0,
	started_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now(),
	finished_at timestamptz,
	PRIMARY KEY (owner, job)
);

COMMENT ON TABLE mcc_dedup_jobs IS
	'Deduplication jobs of mcc_dedup_run() and their progress: the probes done (by key, last_key), the pairs written into target; each role sees its own';

ALTER TABLE mcc_dedup_jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_jobs ON mcc_dedup_jobs USING (owner = current_user) WITH CHECK (owner = current_user);
GRANT SELECT, INSERT, UPDATE, DELETE ON mcc_dedup_jobs TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mcc_dedup_jobs', '');

-- Run (or resume) a job: mcc_dedup() part_rows probes at a time, each part
-- one statement (one snapshot) that inserts the part's pairs into target
-- (id_a, id_b, lss, score) and advances the job, then COMMIT. No SET
-- clause: a procedure with one cannot commit; names are qualified instead.
CREATE PROCEDURE mcc_dedup_run(job text, gallery regclass DEFAULT NULL, target regclass DEFAULT NULL,
							   part_rows bigint DEFAULT 10000, fmr float8 DEFAULT 0.0001,
							   threshold real DEFAULT NULL, lss_fmr float8 DEFAULT 0.001,
							   lss_threshold real DEFAULT NULL, refine text DEFAULT NULL,
							   batch_size int DEFAULT 256, id_column name DEFAULT NULL,
							   template_column name DEFAULT NULL, max_parts int DEFAULT NULL)
LANGUAGE plpgsql
AS $fn$
#variable_conflict use_variable
DECLARE
	j record;
	s record;
	total bigint;
	parts int := 0;
	done boolean;
BEGIN
	IF job IS NULL THEN
		RAISE EXCEPTION 'job must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT * INTO j FROM @extschema@.mcc_dedup_jobs d WHERE d.owner = current_user AND d.job = job;
	IF NOT FOUND THEN
		IF gallery IS NULL OR target IS NULL THEN
			RAISE EXCEPTION 'job "%" does not exist: a new job needs gallery and target', job
				USING ERRCODE = 'null_value_not_allowed';
		END IF;
		IF part_rows IS NULL OR part_rows < 1 OR batch_size IS NULL OR batch_size < 1 THEN
			RAISE EXCEPTION 'part_rows and batch_size must be at least 1' USING ERRCODE = 'invalid_parameter_value';
		END IF;
		s := @extschema@.mcc_dedup_settings(gallery, fmr, threshold, lss_fmr, lss_threshold, refine,
											id_column, template_column);
		EXECUTE format('SELECT count(*) FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL',
					   gallery, s.template_column, s.id_column) INTO total;
		INSERT INTO @extschema@.mcc_dedup_jobs (job, gallery, target, method, threshold, lss_threshold,
												id_column, template_column, part_rows, batch_size, rows_total)
		VALUES (job, gallery, target, s.method, s.threshold, s.lss_threshold, s.id_column,
				s.template_column, part_rows, batch_size, total);
		COMMIT;
	ELSIF (gallery IS NOT NULL AND gallery <> j.gallery) OR (target IS NOT NULL AND target <> j.target) THEN
		RAISE EXCEPTION 'job "%" deduplicates % into %', job, j.gallery, j.target
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Resume it with CALL mcc_dedup_run(job), or delete its row of mcc_dedup_jobs to start again.';
	END IF;
	LOOP
		SELECT * INTO j FROM @extschema@.mcc_dedup_jobs d WHERE d.owner = current_user AND d.job = job;
		IF j.finished_at IS NOT NULL THEN
			RAISE NOTICE 'dedup job "%": finished, % of % rows, % pairs', job, j.rows_done, j.rows_total, j.pairs;
			RETURN;
		END IF;
		EXIT WHEN max_parts IS NOT NULL AND parts >= max_parts;
		-- one part, one statement: the probes after last_key, their pairs
		-- into target, the job's new last_key (NULL: no probe left, done)
		EXECUTE format($q$
			WITH probe AS (
				SELECT g.%3$I::int8 AS k FROM %1$s g
				WHERE g.%4$I IS NOT NULL AND g.%3$I IS NOT NULL AND ($5::bigint IS NULL OR g.%3$I > $5)
				ORDER BY g.%3$I LIMIT $6),
			ins AS (
				INSERT INTO %2$s (id_a, id_b, lss, score)
				SELECT d.id_a, d.id_b, d.lss, d.score
				FROM @extschema@.mcc_dedup($1, threshold => $7, lss_threshold => $8, refine => $9,
										   start_after => $5, max_rows => $6, batch_size => $10,
										   id_column => $3, template_column => $4) d
				RETURNING 1)
			UPDATE @extschema@.mcc_dedup_jobs d
			SET last_key = coalesce((SELECT max(p.k) FROM probe p), d.last_key),
				rows_done = d.rows_done + (SELECT count(*) FROM probe),
				pairs = d.pairs + (SELECT count(*) FROM ins),
				updated_at = clock_timestamp(),
				finished_at = CASE WHEN (SELECT count(*) FROM probe) < $6 THEN clock_timestamp() END
			WHERE d.owner = current_user AND d.job = $2
			RETURNING d.finished_at IS NOT NULL $q$,
			j.gallery, j.target, j.id_column, j.template_column)
		INTO done
		USING j.gallery, job, j.id_column, j.template_column, j.last_key, j.part_rows, j.threshold,
			  j.lss_threshold, j.method, j.batch_size;
		COMMIT;
		parts := parts + 1;
		SELECT * INTO j FROM @extschema@.mcc_dedup_jobs d WHERE d.owner = current_user AND d.job = job;
		RAISE NOTICE 'dedup job "%": % of about % rows done, % pairs', job, j.rows_done, j.rows_total, j.pairs
			USING DETAIL = format('Committed up to key %s; CALL mcc_dedup_run(%L) resumes after it.', j.last_key, job);
	END LOOP;
END
$fn$;

COMMENT ON PROCEDURE mcc_dedup_run(text, regclass, regclass, bigint, float8, real, float8, real, text, int, name, name, int) IS
	'Runs or resumes a named deduplication job: mcc_dedup() part_rows probes at a time, each part''s pairs inserted into target (id_a, id_b, lss, score) and the job''s progress (mcc_dedup_jobs) committed together; max_parts stops after that many parts';

-- Alignment (src/image/align_sql.c; docs/alignment.md, "Global search"): without
-- an initial transform both functions search every pose first (rotation,
-- scale within [min_scale, max_scale], translation); with one they keep the
-- local fit of 0.1.0. mcc_chamfer_align gains the scale range of the
-- search, mcc_align an initial transform (so it is no longer STRICT).
-- ===========================================================================

DROP FUNCTION mcc_chamfer_align(float8[], float8[], text, float8, float8, float8[]);

CREATE FUNCTION mcc_chamfer_align(observed float8[], reference float8[],
								  transform text DEFAULT 'similarity',
								  resolution float8 DEFAULT 0,
								  max_distance float8 DEFAULT 'Infinity',
								  initial float8[] DEFAULT NULL,
								  min_scale float8 DEFAULT 0.8,
								  max_scale float8 DEFAULT 1.25,
								  OUT params float8[], OUT residual float8,
								  OUT iterations integer, OUT converged boolean)
	RETURNS record
	AS 'MODULE_PATHNAME', 'mcc_chamfer_align_sql'
	LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_chamfer_align(float8[], float8[], text, float8, float8, float8[], float8, float8) IS
	'Transform (euclidean, similarity, affine, projective) that maps the observed points (n x 2 or n x 3) onto the nearest reference points, by Levenberg-Marquardt on a distance transform (parametric chamfer alignment); without initial, 2D sets are first searched over every rotation, scales in [min_scale, max_scale] and every shift';

DROP FUNCTION mcc_align(mcc_template, mcc_template, text, boolean, float8);

CREATE FUNCTION mcc_align(probe mcc_template, candidate mcc_template,
						  transform text DEFAULT 'euclidean',
						  use_directions boolean DEFAULT true,
						  max_distance float8 DEFAULT 15,
						  initial float8[] DEFAULT NULL,
						  OUT params float8[], OUT residual float8,
						  OUT iterations integer, OUT converged boolean,
						  OUT mapped float8[], OUT paired integer)
	RETURNS record
	AS 'MODULE_PATHNAME', 'mcc_align_sql'
	LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION mcc_align(mcc_template, mcc_template, text, boolean, float8, float8[]) IS
	'Alignment of the probe''s minutiae onto the candidate''s (pixels) from any pose, or from initial (parameters of transform) alone: transform parameters, RMS residual truncated at max_distance, the probe minutiae mapped (x, y, theta rows) and how many land within max_distance of a candidate minutia';

-- ===========================================================================
-- Elastic image matching (src/image/dp2d_sql.c, src/image/dp2d_overall_sql.c;
-- docs/elastic-matching.md): the verification functions choose paper 003's
-- algorithm, the simplified one of 0.1.0 (Sec. 8, the default) or the
-- overall one (Sec. 8.1: thinning and the restoration of ridge continuity).
-- ===========================================================================

DROP FUNCTION mcc_dp2d_differences(bytea, bytea);

CREATE FUNCTION mcc_dp2d_differences(reference bytea, probe bytea,
									 algorithm text DEFAULT 'simplified') RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_dp2d_differences(bytea, bytea, text) IS
	'Fingerprint verification by elastic matching (paper 003): pixels where the enhanced reference and the enhanced probe warped onto it differ, as binary images (algorithm simplified, Sec. 8; 0..16384) or after thinning and restoring both (overall, Sec. 8.1; 0..25600)';

DROP FUNCTION mcc_dp2d_verify(bytea, bytea, bigint);

CREATE FUNCTION mcc_dp2d_verify(reference bytea, probe bytea, threshold bigint,
								algorithm text DEFAULT 'simplified') RETURNS boolean
	AS 'MODULE_PATHNAME', 'mcc_dp2d_verify_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_dp2d_verify(bytea, bytea, bigint, text) IS
	'mcc_dp2d_differences(reference, probe, algorithm) <= threshold: the probe is verified as the reference''s finger (paper 003, Sec. 8)';

DROP FUNCTION mcc_dp2d_verify_many(bytea, bytea[], bigint);

CREATE FUNCTION mcc_dp2d_verify_many(reference bytea, probes bytea[], threshold bigint,
									 algorithm text DEFAULT 'simplified')
	RETURNS TABLE (probe integer, differences bigint, verified boolean)
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100000 ROWS 10;

COMMENT ON FUNCTION mcc_dp2d_verify_many(bytea, bytea[], bigint, text) IS
	'mcc_dp2d_differences and mcc_dp2d_verify of every probe against one reference, in one batch, by the algorithm: (probe position, differences, differences <= threshold)';

-- ===========================================================================
-- Matcher service: sharing it between roles, and progress of long work
-- (src/service/service_*.c, src/image/image_engine.c; docs/matcher-service.md, "Sharing
-- the service"; docs/sql-reference.md, "Matcher service")
-- ===========================================================================

-- The role whose members may register galleries (a registered gallery
-- takes a slot and cache memory of the one matcher service of the cluster)
-- and run image and point jobs in the matcher engine; superusers may
-- anyway. Roles belong to the cluster: another database's CREATE EXTENSION
-- may have made it already, and DROP EXTENSION leaves it (grants to it may
-- still matter in other databases).
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'mcc_service_user') THEN
		CREATE ROLE mcc_service_user NOLOGIN;
		COMMENT ON ROLE mcc_service_user IS
			'members may register galleries with the mcc matcher service (slots and cache memory) and run image jobs in its engine';
	END IF;
END
$$;

-- An update from 0.1.0 keeps every registered gallery served: owners of
-- galleries registered in this database join the role (superusers need not).
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT DISTINCT c.relowner
		FROM @extschema@.mcc_galleries g
		JOIN pg_catalog.pg_class c ON c.oid = g.gallery::pg_catalog.oid
		WHERE NOT pg_catalog.pg_has_role(c.relowner, 'mcc_service_user', 'USAGE')
	LOOP
		EXECUTE pg_catalog.format('GRANT mcc_service_user TO %I',
								  pg_catalog.pg_get_userbyid(r.relowner));
	END LOOP;
END
$$;

-- Priorities: when cache memory or slots run short, a gallery may evict
-- only galleries of lower priority, or of equal priority used less
-- recently. pg_dump keeps the column with the registrations.
ALTER TABLE mcc_galleries ADD COLUMN priority integer NOT NULL DEFAULT 0;

COMMENT ON COLUMN mcc_galleries.priority IS
'which caches give way first when the matcher service runs short of memory or slots: lower priority first, then the least recently used (set with mcc_gallery_set_priority)';

-- VOLATILE: writes mcc_galleries. Not for PUBLIC: the DBA grants it to
-- whoever may decide whose cache stays.
CREATE FUNCTION mcc_gallery_set_priority(gallery regclass, priority integer)
RETURNS void
AS 'MODULE_PATHNAME', 'mcc_gallery_set_priority'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

REVOKE EXECUTE ON FUNCTION mcc_gallery_set_priority(regclass, integer) FROM PUBLIC;

COMMENT ON FUNCTION mcc_gallery_set_priority(regclass, integer) IS
'sets a registered gallery''s priority: under memory or slot pressure a gallery evicts only galleries of lower priority, or of equal priority used less recently (EXECUTE granted by the DBA)';

COMMENT ON FUNCTION mcc_gallery_register(regclass, name, name) IS
'registers a gallery with the matcher service: records its key and template columns and installs the change triggers on it and its partitions (needs ownership, and the caller and the owner must be members of mcc_service_user; run again after adding partitions)';

COMMENT ON FUNCTION mcc_gallery_preload(regclass) IS
'loads a registered gallery into the matcher engine''s cache now (its owner: a full reload; others: only a stale or missing cache); returns the rows the caller can see; NOTICEs of progress every mcc.progress_interval';

-- The status function gains the priority and the progress of a load in
-- progress, and shows only galleries the caller may read (all of them to
-- roles with the privileges of pg_read_all_stats), so that its view can be
-- PUBLIC. New OUT columns: the view and the function are made again.
DROP VIEW mcc_gallery_status;
DROP FUNCTION mcc_gallery_status_rows();

CREATE FUNCTION mcc_gallery_status_rows(
	OUT gallery regclass, OUT id_column name, OUT template_column name, OUT state text,
	OUT generation bigint, OUT cached_generation bigint, OUT profile text,
	OUT entries bigint, OUT searchable bigint, OUT cylinders bigint,
	OUT host_bytes bigint, OUT device_bytes bigint, OUT device text,
	OUT loaded_at timestamptz, OUT load_seconds double precision,
	OUT load_rate double precision, OUT searches bigint,
	OUT priority integer, OUT loading_pid integer, OUT load_rows bigint,
	OUT load_rows_total bigint, OUT load_rows_per_second double precision,
	OUT load_expected_end timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_gallery_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_status_rows() IS
'one row per registered gallery of the current database that the caller may read, with the state of its matcher cache and of a load in progress (the mcc_gallery_status view)';

CREATE VIEW mcc_gallery_status AS SELECT * FROM mcc_gallery_status_rows();

GRANT SELECT ON mcc_gallery_status TO PUBLIC;

COMMENT ON VIEW mcc_gallery_status IS
'registered galleries the caller may read and their matcher caches: state, generations, entries, cylinders, memory, device, last load time and rate, searches, priority, and a load in progress (rows, total, rate, expected end)';

-- mcc_service_status gains the engine's memory, evictions and image jobs.
DROP FUNCTION mcc_service_status();

CREATE FUNCTION mcc_service_status(
	OUT state text, OUT supervisor_pid integer, OUT engine_pid integer,
	OUT incarnation bigint, OUT restarts integer, OUT ready_since timestamptz,
	OUT socket text, OUT cache_bytes bigint, OUT cache_limit bigint,
	OUT evictions bigint, OUT image_threads integer, OUT image_queue integer,
	OUT image_jobs integer, OUT image_progress double precision, OUT image_gpu boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_service_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION mcc_service_status() IS
'state of the matcher service: supervisor and engine processes, incarnation, restarts, cache memory used and allowed, caches evicted for room, image threads, the image jobs admitted and their progress, whether image jobs have a GPU';

-- ===========================================================================
-- Matcher service on hot standbys (issue 20; src/service/service_changelog.c,
-- src/service/service_standby.c; docs/matcher-service.md, "Hot standbys";
-- docs/deployment.md)
-- ===========================================================================

-- Positions of the change log, in the order its entries enter the WAL.
CREATE SEQUENCE mcc_change_log_gen;

COMMENT ON SEQUENCE mcc_change_log_gen IS
'positions of mcc_change_log entries (taken under a per-gallery lock, so that a gallery''s entries enter the WAL in position order)';

-- Every row version a statement writes to a registered gallery whose change
-- log is on (mcc_galleries.change_log), written on the primary by the
-- change triggers in the same (sub)transaction: an entry commits or aborts
-- with its change and reaches standbys by WAL. A standby's identify() sends
-- the entries its engine lacks. lsn: the WAL insert position when the entry
-- was written (its record lies after it), which automatic pruning compares
-- with the replication slots' positions. Part of the extension: not dumped
-- (a restored gallery is loaded afresh).
CREATE TABLE mcc_change_log (
	gallery oid NOT NULL,
	gen bigint NOT NULL,
	xid bigint NOT NULL,
	op "char" NOT NULL CHECK (op IN ('i', 'd', 'r')),
	key bigint,
	hash bigint,
	template bytea,
	logged_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	lsn pg_lsn NOT NULL DEFAULT pg_catalog.pg_current_wal_insert_lsn(),
	PRIMARY KEY (gallery, gen)
);

COMMENT ON TABLE mcc_change_log IS
'changes of registered galleries whose change log is on, for hot standbys'' matcher caches: position, writing (sub)transaction id, op (i insert, d delete, r reload), key, template hash, inserted template, time and WAL position; appended by the change triggers, pruned by the supervisor (mcc.change_log_prune_interval) or mcc_change_log_prune';

-- Up to which position each gallery's log was pruned: a standby that
-- still lacked a pruned entry reloads its cache instead.
CREATE TABLE mcc_change_log_pruned (
	gallery oid PRIMARY KEY,
	upto bigint NOT NULL
);

COMMENT ON TABLE mcc_change_log_pruned IS
'per gallery, the change log position up to which pruning removed entries (a standby behind it reloads)';

-- The change log is opt-in per gallery: off by default, because a primary
-- without standbys serving the gallery should not pay for it on every
-- write. pg_dump keeps the column with the registrations.
ALTER TABLE mcc_galleries ADD COLUMN change_log boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN mcc_galleries.change_log IS
'whether writes to the gallery are logged to mcc_change_log for hot standbys'' caches (set by mcc_gallery_register(change_log =>) or mcc_gallery_set_change_log; off: standbys do not serve the gallery from their engine)';

-- Registration gains change_log: NULL keeps the current setting (off for a
-- new registration), so that registering again after adding partitions
-- leaves it as it was.
DROP FUNCTION mcc_gallery_register(regclass, name, name);

CREATE FUNCTION mcc_gallery_register(gallery regclass, id_column name DEFAULT NULL,
									 template_column name DEFAULT NULL,
									 change_log boolean DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'mcc_gallery_register'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_register(regclass, name, name, boolean) IS
'registers a gallery with the matcher service: records its key and template columns and installs the change triggers on it and its partitions (needs ownership, and the caller and the owner must be members of mcc_service_user; run again after adding partitions); change_log true logs its writes for hot standbys, false stops, NULL keeps the current setting (off for a new registration)';

-- VOLATILE: writes mcc_galleries and, when turned on, the log's start
-- point. Waits for the gallery's writers (a lock that conflicts with theirs)
-- so that no write goes unlogged once standbys see the log on.
CREATE FUNCTION mcc_gallery_set_change_log(gallery regclass, enabled boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'mcc_gallery_set_change_log'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_set_change_log(regclass, boolean) IS
'turns the change log of a registered gallery on or off (needs ownership; on the primary): on, its writes are logged for hot standbys from a reload entry that makes them load afresh; off, standbys stop serving it from their engine (mcc.fallback)';

-- Removes the entries no standby needs any more and records how far, per
-- gallery: entries logged more than older_than ago (NULL: the setting
-- mcc.change_log_retention, 10 minutes if unset) whose WAL position every
-- physical replication slot's standby has replayed (flushed, for one not
-- connected now; lost slots do not count). It keeps each gallery's last
-- entry: a standby finds the head of the log there, and a head that went
-- back would hide entries it lacks. The supervisor runs it every
-- mcc.change_log_prune_interval. VOLATILE; not for PUBLIC (the supervisor
-- runs it as the log's owner; the DBA may run or grant it).
CREATE FUNCTION mcc_change_log_prune(older_than interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE
SET search_path = @extschema@, pg_catalog
AS $$
DECLARE
	r record;
	n bigint;
	total bigint := 0;
	keep interval;
	hold pg_lsn;
BEGIN
	keep := coalesce(older_than,
					 nullif(current_setting('mcc.change_log_retention', true), '')::interval,
					 interval '10 minutes');
	IF keep < interval '0' THEN
		RAISE EXCEPTION 'older_than must not be negative'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the oldest position a standby with a slot has not replayed yet
	SELECT min(CASE WHEN a.replay_lsn IS NULL OR a.replay_lsn > s.restart_lsn
					THEN s.restart_lsn ELSE a.replay_lsn END)
	INTO hold
	FROM pg_replication_slots s
	LEFT JOIN pg_stat_replication a ON a.pid = s.active_pid
	WHERE s.slot_type = 'physical' AND s.restart_lsn IS NOT NULL
	  AND s.wal_status IS DISTINCT FROM 'lost';
	FOR r IN
		SELECT l.gallery, max(l.gen) AS upto
		FROM mcc_change_log l
		WHERE l.logged_at < now() - keep
		  AND (hold IS NULL OR l.lsn < hold)
		  AND l.gen < (SELECT max(h.gen) FROM mcc_change_log h WHERE h.gallery = l.gallery)
		GROUP BY l.gallery
	LOOP
		DELETE FROM mcc_change_log WHERE gallery = r.gallery AND gen <= r.upto;
		GET DIAGNOSTICS n = ROW_COUNT;
		total := total + n;
		INSERT INTO mcc_change_log_pruned AS p VALUES (r.gallery, r.upto)
		ON CONFLICT (gallery) DO UPDATE SET upto = greatest(p.upto, excluded.upto);
	END LOOP;
	RETURN total;
END
$$;

REVOKE EXECUTE ON FUNCTION mcc_change_log_prune(interval) FROM PUBLIC;

COMMENT ON FUNCTION mcc_change_log_prune(interval) IS
'removes the change log entries no standby needs: logged more than older_than ago (NULL: mcc.change_log_retention) and replayed by every physical replication slot''s standby, keeping each gallery''s last; records how far (a standby that had not applied them yet reloads its cache). Run by the supervisor every mcc.change_log_prune_interval. Returns the entries removed';
