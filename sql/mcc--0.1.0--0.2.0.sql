-- mcc 0.1.0 -> 0.2.0 (docs/upgrades.md). CREATE EXTENSION mcc installs
-- 0.1.0 and runs this script; ALTER EXTENSION mcc UPDATE runs it on an
-- existing 0.1.0 installation. Every object new or changed in 0.2.0 is
-- defined here, once; sections follow the subsystem that owns them.
\echo Use "ALTER EXTENSION mcc UPDATE TO '0.2.0'" to load this file. \quit

-- Matcher service: sharing it between roles, and progress of long work
-- (src/service_*.c, src/image_engine.c; docs/matcher-service.md, "Sharing
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
=======
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

-- ====================================================================