/* mcc--0.1.0.sql: install script of extension mcc, version 0.1.0 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION mcc" to load this file. \quit

-- The extension is not relocatable (mcc.control): every object below lives in
-- the schema chosen at CREATE EXTENSION time, @extschema@. All functions are
-- C functions, so none depends on the caller's search_path.

-- ===========================================================================
-- Type mcc_template
-- ===========================================================================

CREATE TYPE mcc_template;

CREATE FUNCTION mcc_template_in(cstring) RETURNS mcc_template
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION mcc_template_out(mcc_template) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION mcc_template_recv(internal, oid, integer) RETURNS mcc_template
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION mcc_template_send(mcc_template) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE mcc_template (
	INPUT = mcc_template_in,
	OUTPUT = mcc_template_out,
	RECEIVE = mcc_template_recv,
	SEND = mcc_template_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = double,
	STORAGE = external
);

COMMENT ON TYPE mcc_template IS
	'Fingerprint template: the minutiae of one finger view and their Minutia Cylinder-Code cylinders';
COMMENT ON FUNCTION mcc_template_in(cstring) IS
	'I/O: mcc_template from its JSON text form (cylinders are rebuilt)';
COMMENT ON FUNCTION mcc_template_out(mcc_template) IS
	'I/O: canonical JSON text form of an mcc_template (minutiae only)';
COMMENT ON FUNCTION mcc_template_recv(internal, oid, integer) IS
	'I/O: mcc_template from its versioned binary form (validated, cylinders rebuilt)';
COMMENT ON FUNCTION mcc_template_send(mcc_template) IS
	'I/O: versioned binary form of an mcc_template (minutiae only)';

-- ===========================================================================
-- Constructors and exporters
-- ===========================================================================

CREATE FUNCTION mcc_template_from_iso(record bytea, view integer DEFAULT 1,
									  profile text DEFAULT 'gpu2015')
	RETURNS mcc_template
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_template_from_iso(bytea, integer, text) IS
	'mcc_template from finger view number view of an ISO/IEC 19794-2 (2005, 2011) or ANSI/INCITS 378 record';

-- not STRICT: NULL width/height mean "derive from the data"; NULL dpi or
-- profile raise an error; NULL xyt gives NULL
CREATE FUNCTION mcc_template_from_xyt(xyt text, width integer DEFAULT NULL,
									  height integer DEFAULT NULL,
									  dpi integer DEFAULT 500,
									  profile text DEFAULT 'gpu2015')
	RETURNS mcc_template
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION mcc_template_from_xyt(text, integer, integer, integer, text) IS
	'mcc_template from NIST NBIS xyt text (x y theta [quality] per line, NBIS frame)';

CREATE FUNCTION mcc_template_from_json(jsonb) RETURNS mcc_template
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_template_from_json(jsonb) IS
	'mcc_template from the JSON form (profile from the JSON, default gpu2015)';

CREATE FUNCTION mcc_template_to_iso(t mcc_template, format text DEFAULT 'iso2005')
	RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_template_to_iso(mcc_template, text) IS
	'One-view ISO/IEC 19794-2:2005 (''iso2005'') or ANSI/INCITS 378-2004 (''ansi2004'') record of the minutiae';

CREATE FUNCTION mcc_template_to_xyt(t mcc_template) RETURNS text
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_template_to_xyt(mcc_template) IS
	'NIST NBIS xyt text of the minutiae (origin bottom-left, integer degrees)';

-- ===========================================================================
-- Casts
-- ===========================================================================

-- json's text is the template's text form
CREATE CAST (json AS mcc_template) WITH INOUT AS ASSIGNMENT;
CREATE CAST (jsonb AS mcc_template) WITH FUNCTION mcc_template_from_json(jsonb) AS ASSIGNMENT;
CREATE CAST (mcc_template AS json) WITH INOUT;
CREATE CAST (mcc_template AS jsonb) WITH INOUT;

COMMENT ON CAST (json AS mcc_template) IS
	'mcc_template from the JSON form, as mcc_template_from_json';
COMMENT ON CAST (jsonb AS mcc_template) IS
	'mcc_template from the JSON form, as mcc_template_from_json';
COMMENT ON CAST (mcc_template AS json) IS
	'the canonical JSON form of a template (its text output)';
COMMENT ON CAST (mcc_template AS jsonb) IS
	'the JSON form of a template (its text output) as jsonb';

-- ===========================================================================
-- Accessors
-- ===========================================================================

CREATE FUNCTION mcc_minutiae_count(t mcc_template) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_minutiae_count(mcc_template) IS
	'Number of minutiae in the template';

CREATE FUNCTION mcc_cylinder_count(t mcc_template) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_cylinder_count(mcc_template) IS
	'Number of valid cylinders built from the minutiae';

CREATE FUNCTION mcc_minutiae(t mcc_template) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'mcc_template_minutiae_jsonb'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_minutiae(mcc_template) IS
	'Minutiae as a jsonb array of {x, y, theta, type, quality} objects';

CREATE FUNCTION mcc_profile(t mcc_template) RETURNS text
	AS 'MODULE_PATHNAME', 'mcc_template_profile_name'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_profile(mcc_template) IS
	'Name of the MCC profile the template was built with';

CREATE FUNCTION mcc_template_info(t mcc_template,
								  OUT profile text, OUT width integer,
								  OUT height integer, OUT dpi integer,
								  OUT minutiae integer, OUT cylinders integer,
								  OUT bytes integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_template_info(mcc_template) IS
	'Profile, image size and resolution, minutiae and cylinder counts and stored size in bytes';

CREATE FUNCTION mcc_cylinders(t mcc_template)
	RETURNS TABLE (minutia integer, x integer, y integer, angle integer,
				   popcount integer, bits bit varying, mask bit varying)
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	ROWS 40;

COMMENT ON FUNCTION mcc_cylinders(mcc_template) IS
	'The stored cylinders, in stored order: minutia (from 1), its position, byte angle, popcount, value bits, mask bits (NULL without masks)';

-- ===========================================================================
-- 1:1 comparison
-- ===========================================================================

CREATE FUNCTION mcc_score(a mcc_template, b mcc_template) RETURNS real
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_score(mcc_template, mcc_template) IS
	'Similarity of two templates in [0, 1]: Local Similarity Sort (LSS) of MCC';

-- STABLE because it depends on mcc.match_threshold, as pg_trgm's % does
CREATE FUNCTION mcc_matches(a mcc_template, b mcc_template) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_matches(mcc_template, mcc_template) IS
	'mcc_score(a, b) >= mcc.match_threshold (the % operator)';

CREATE FUNCTION mcc_distance(a mcc_template, b mcc_template) RETURNS real
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_distance(mcc_template, mcc_template) IS
	'1 - mcc_score(a, b) (the <=> operator)';

CREATE OPERATOR % (
	LEFTARG = mcc_template,
	RIGHTARG = mcc_template,
	FUNCTION = mcc_matches,
	COMMUTATOR = '%',
	RESTRICT = contsel,
	JOIN = contjoinsel
);

COMMENT ON OPERATOR % (mcc_template, mcc_template) IS
	'true if mcc_score(a, b) >= mcc.match_threshold';

CREATE OPERATOR <=> (
	LEFTARG = mcc_template,
	RIGHTARG = mcc_template,
	FUNCTION = mcc_distance,
	COMMUTATOR = '<=>'
);

COMMENT ON OPERATOR <=> (mcc_template, mcc_template) IS
	'distance 1 - mcc_score(a, b), for ORDER BY ... LIMIT';

-- ===========================================================================
-- Alignment (src/align_sql.c): parametric chamfer alignment of point sets
-- (paper 004) and of a probe's minutiae onto a candidate's
-- ===========================================================================

-- IMMUTABLE: the result depends on the arguments only (mcc.align_threads
-- does not change it; mcc.align_max_cells only decides whether it may run).
-- Not STRICT, so that initial may be NULL; NULL in another argument gives NULL.
CREATE FUNCTION mcc_chamfer_align(observed float8[], reference float8[],
								  transform text DEFAULT 'similarity',
								  resolution float8 DEFAULT 0,
								  max_distance float8 DEFAULT 'Infinity',
								  initial float8[] DEFAULT NULL,
								  OUT params float8[], OUT residual float8,
								  OUT iterations integer, OUT converged boolean)
	RETURNS record
	AS 'MODULE_PATHNAME', 'mcc_chamfer_align_sql'
	LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_chamfer_align(float8[], float8[], text, float8, float8, float8[]) IS
	'Transform (euclidean, similarity, affine, projective) that maps the observed points (n x 2 or n x 3) onto the nearest reference points, by Levenberg-Marquardt on a distance transform (parametric chamfer alignment)';

CREATE FUNCTION mcc_align(probe mcc_template, candidate mcc_template,
						  transform text DEFAULT 'euclidean',
						  use_directions boolean DEFAULT true,
						  max_distance float8 DEFAULT 15,
						  OUT params float8[], OUT residual float8,
						  OUT iterations integer, OUT converged boolean,
						  OUT mapped float8[], OUT paired integer)
	RETURNS record
	AS 'MODULE_PATHNAME', 'mcc_align_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION mcc_align(mcc_template, mcc_template, text, boolean, float8) IS
	'Alignment of the probe''s minutiae onto the candidate''s (pixels): transform parameters, RMS residual truncated at max_distance, the probe minutiae mapped (x, y, theta rows) and how many land within max_distance of a candidate minutia';
-- ===========================================================================
-- 1:1 comparison with a matching method (src/score.c, src/core/mcc_match.h;
-- docs/accuracy.md compares the methods)
-- ===========================================================================

CREATE FUNCTION mcc_score(a mcc_template, b mcc_template, method text) RETURNS real
	AS 'MODULE_PATHNAME', 'mcc_score_method'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_score(mcc_template, mcc_template, text) IS
	'Similarity of two templates in [0, 1] by a method: lss, lss-r, lss-dtr, lsa, lsa-r, lsa-dtr, lgs, lgs-r, lgs-dtr, consolidation (a is the probe)';

-- ===========================================================================
-- Elastic image matching (paper 003; src/dp2d_sql.c): images are bytea
-- holding an 8-bit grayscale PGM (P5) or PNG. Results depend only on the
-- arguments (mcc.dp2d_threads and mcc.image_device change the speed, never
-- a result): IMMUTABLE.
-- ====================================================================
CREATE FUNCTION mcc_dp2d_distance(a bytea, b bytea) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_dp2d_distance(bytea, bytea) IS
	'Elastic distance of two grayscale images (0..255): approximate 2D dynamic programming, a DP over rows whose local cost is a DP between two rows (paper 003, Eq. 8)';

CREATE FUNCTION mcc_dp2d_warp(a bytea, b bytea) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_dp2d_warp(bytea, bytea) IS
	'Image b warped onto image a along the optimal paths of mcc_dp2d_distance(a, b): a PGM of the size of a';

CREATE FUNCTION mcc_dp2d_enhance(image bytea) RETURNS bytea
	AS 'MODULE_PATHNAME', 'mcc_dp2d_enhance_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION mcc_dp2d_enhance(bytea) IS
	'A raw fingerprint image Gabor-enhanced, cropped around the print, resampled to 128x128 and binarized (ridges 0, valleys and background 255), as a PGM: what mcc_dp2d_verify compares';

CREATE FUNCTION mcc_dp2d_differences(reference bytea, probe bytea) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_dp2d_differences(bytea, bytea) IS
	'Fingerprint verification by elastic matching (paper 003, Sec. 8): pixels where the enhanced reference and the enhanced probe warped onto it differ (0..16384)';

CREATE FUNCTION mcc_dp2d_verify(reference bytea, probe bytea, threshold bigint) RETURNS boolean
	AS 'MODULE_PATHNAME', 'mcc_dp2d_verify_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_dp2d_verify(bytea, bytea, bigint) IS
	'mcc_dp2d_differences(reference, probe) <= threshold: the probe is verified as the reference''s finger (paper 003, Sec. 8)';

-- 1:N verification: one row per element of probes, in array order (probe =
-- its position from 1; NULL elements give NULL). In the matcher engine
-- (mcc.image_device) all probes go in one request and one GPU batch.
CREATE FUNCTION mcc_dp2d_verify_many(reference bytea, probes bytea[], threshold bigint)
	RETURNS TABLE (probe integer, differences bigint, verified boolean)
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100000 ROWS 10;

COMMENT ON FUNCTION mcc_dp2d_verify_many(bytea, bytea[], bigint) IS
	'mcc_dp2d_differences and mcc_dp2d_verify of every probe against one reference, in one batch: (probe position, differences, differences <= threshold)';

-- ===========================================================================
-- Images and SAD search (paper 002; src/image_io.c, src/sad_sql.c)
-- ===========================================================================

-- An image is a bytea holding a binary PGM (P5) or a PNG of 8-bit grayscale
-- (docs/images.md), or a smallint[rows][columns] of values 0..255. All pure
-- functions of their arguments: IMMUTABLE STRICT PARALLEL SAFE. The searches
-- run on mcc.image_threads threads inside the calling backend; their COST
-- tells the planner they are expensive.

CREATE FUNCTION mcc_image_info(image bytea, OUT width integer, OUT height integer,
							   OUT format text)
	RETURNS record
	AS 'MODULE_PATHNAME', 'mcc_image_info_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_image_info(bytea) IS
	'Width, height and format (''pgm'' or ''png'') of a valid 8-bit grayscale image; the whole image is checked';

CREATE FUNCTION mcc_image_to_array(image bytea) RETURNS smallint[]
	AS 'MODULE_PATHNAME', 'mcc_image_to_array_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_image_to_array(bytea) IS
	'The pixels of a PGM or PNG image as smallint[height][width], 0 (black) .. 255 (white)';

CREATE FUNCTION mcc_image_from_array(pixels smallint[]) RETURNS bytea
	AS 'MODULE_PATHNAME', 'mcc_image_from_array_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_image_from_array(smallint[]) IS
	'Binary PGM (P5, maxval 255) of a smallint[rows][columns] of values 0..255';

CREATE FUNCTION mcc_image_crop(image bytea, x integer, y integer, width integer,
							   height integer) RETURNS bytea
	AS 'MODULE_PATHNAME', 'mcc_image_crop_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_image_crop(bytea, integer, integer, integer, integer) IS
	'The width x height rectangle of an image whose top-left pixel is (x, y), as a binary PGM';

CREATE FUNCTION mcc_sad_locate(target bytea, pattern bytea, k integer DEFAULT 1)
	RETURNS TABLE (x integer, y integer, sad bigint)
	AS 'MODULE_PATHNAME', 'mcc_sad_locate_bytea'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000 ROWS 1;

COMMENT ON FUNCTION mcc_sad_locate(bytea, bytea, integer) IS
	'The k shifts (x, y) of pattern in target with the smallest Sum of Absolute Differences, best first, ties by y then x';

CREATE FUNCTION mcc_sad_locate(target smallint[], pattern smallint[], k integer DEFAULT 1)
	RETURNS TABLE (x integer, y integer, sad bigint)
	AS 'MODULE_PATHNAME', 'mcc_sad_locate_array'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000 ROWS 1;

COMMENT ON FUNCTION mcc_sad_locate(smallint[], smallint[], integer) IS
	'The k shifts (x, y) of pattern in target with the smallest Sum of Absolute Differences, best first, ties by y then x';

CREATE FUNCTION mcc_sad_map(target bytea, pattern bytea) RETURNS bytea
	AS 'MODULE_PATHNAME', 'mcc_sad_map_bytea'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_sad_map(bytea, bytea) IS
	'The SAD of every shift as a PGM for viewing: black = smallest SAD, white = largest, linear';

CREATE FUNCTION mcc_sad_map(target smallint[], pattern smallint[]) RETURNS bytea
	AS 'MODULE_PATHNAME', 'mcc_sad_map_array_pgm'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_sad_map(smallint[], smallint[]) IS
	'The SAD of every shift as a PGM for viewing: black = smallest SAD, white = largest, linear';

CREATE FUNCTION mcc_sad_map_array(target bytea, pattern bytea) RETURNS bigint[]
	AS 'MODULE_PATHNAME', 'mcc_sad_map_bytea_array'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_sad_map_array(bytea, bytea) IS
	'The SAD of every shift as bigint[H - h + 1][W - w + 1]: element [y + 1][x + 1] is the SAD of shift (x, y)';

CREATE FUNCTION mcc_sad_map_array(target smallint[], pattern smallint[]) RETURNS bigint[]
	AS 'MODULE_PATHNAME', 'mcc_sad_map_array_array'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

COMMENT ON FUNCTION mcc_sad_map_array(smallint[], smallint[]) IS
	'The SAD of every shift as bigint[H - h + 1][W - w + 1]: element [y + 1][x + 1] is the SAD of shift (x, y)';

-- ===========================================================================
-- identify() and synthetic data (src/identify.c, src/gallery.c,
-- src/synthetic.c): this section is maintained on the pgident branch.
-- Everything above must not depend on it; keep new type-level objects above.
-- ===========================================================================

-- Exact top-k of a gallery, read with the statement's snapshot through SPI:
-- the best rows by LSS ('none', the default); with another refine method,
-- the best mcc.refine_fraction of them by LSS (at least mcc.refine_min and
-- k) rescored with it ('dtr' = 'lss-dtr': paper 000's complete system).
-- refine comes last so that positional calls of the six arguments before it
-- keep their meaning. STABLE (it reads tables), PARALLEL UNSAFE (it runs its
-- own query through an SPI cursor, which may read temporary tables:
-- backend-local state a parallel worker cannot share), not STRICT (NULL
-- arguments get clear errors; the two column names may be NULL).
CREATE FUNCTION identify(gallery regclass, probe mcc_template, k int DEFAULT 10,
						 min_score real DEFAULT 0, id_column name DEFAULT NULL,
						 template_column name DEFAULT NULL, refine text DEFAULT 'none')
RETURNS TABLE(id bigint, score real)
AS 'MODULE_PATHNAME', 'mcc_identify'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 10 COST 10000;

COMMENT ON FUNCTION identify(regclass, mcc_template, int, real, name, name, text) IS
'1:N identification: the k gallery rows with the best scores against the probe (at least min_score), best first, ties by smaller id: LSS over every row (refine ''none''), or the best mcc.refine_fraction by LSS rescored with the refine method (''dtr'': paper 000''s complete system); sees exactly the rows the calling statement can see';

-- Synthetic fingerprints: a pure function of its arguments, hence IMMUTABLE
-- (PostgreSQL never folds a set-returning function at plan time).
CREATE FUNCTION mcc_synthetic(fingers int, impressions int DEFAULT 1, seed bigint DEFAULT 1,
							  first_finger bigint DEFAULT 0, profile text DEFAULT 'gpu2015')
RETURNS TABLE(finger bigint, impression int, template mcc_template)
AS 'MODULE_PATHNAME', 'mcc_synthetic'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION mcc_synthetic(int, int, bigint, bigint, text) IS
'synthetic fingerprint templates: impressions 0..impressions-1 of fingers first_finger..first_finger+fingers-1, deterministic in seed';

-- Matcher service (src/service_*.c, docs/matcher-service.md)

-- Registered galleries. pg_dump keeps the rows (pg_extension_config_dump);
-- the gallery column is a regclass so that a restore maps it to the new OID.
-- Written only by mcc_gallery_register()/unregister() and the drop trigger.
CREATE TABLE mcc_galleries (
	gallery regclass PRIMARY KEY,
	id_column name NOT NULL,
	template_column name NOT NULL,
	registered_at timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('mcc_galleries', '');
GRANT SELECT ON mcc_galleries TO PUBLIC;

COMMENT ON TABLE mcc_galleries IS
'galleries registered with the matcher service: their key and template columns';

-- Statement-level change capture of registered galleries (installed by
-- mcc_gallery_register on the gallery and every partition).
CREATE FUNCTION mcc_gallery_trigger() RETURNS trigger
AS 'MODULE_PATHNAME', 'mcc_gallery_trigger'
LANGUAGE C;

COMMENT ON FUNCTION mcc_gallery_trigger() IS
'change trigger of registered galleries: collects inserted and deleted rows and sends them to the matcher engine at commit';

-- VOLATILE: writes mcc_galleries and creates triggers. Needs ownership of the gallery.
CREATE FUNCTION mcc_gallery_register(gallery regclass, id_column name DEFAULT NULL,
									 template_column name DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'mcc_gallery_register'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_register(regclass, name, name) IS
'registers a gallery with the matcher service: records its key and template columns and installs the change triggers on it and its partitions (needs ownership; run again after adding partitions)';

CREATE FUNCTION mcc_gallery_unregister(gallery regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mcc_gallery_unregister'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_unregister(regclass) IS
'removes a gallery''s registration, its change triggers and its cache (needs ownership); false if it was not registered';

CREATE FUNCTION mcc_gallery_preload(gallery regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'mcc_gallery_preload'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_preload(regclass) IS
'loads a registered gallery into the matcher engine''s cache now; returns the cached tuple versions';

CREATE FUNCTION mcc_gallery_evict(gallery regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mcc_gallery_evict'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_evict(regclass) IS
'drops the matcher engine''s cache of a gallery (needs ownership); the next identify() reloads it';

CREATE FUNCTION mcc_gallery_status_rows(
	OUT gallery regclass, OUT id_column name, OUT template_column name, OUT state text,
	OUT generation bigint, OUT cached_generation bigint, OUT profile text,
	OUT entries bigint, OUT searchable bigint, OUT cylinders bigint,
	OUT host_bytes bigint, OUT device_bytes bigint, OUT device text,
	OUT loaded_at timestamptz, OUT load_seconds double precision,
	OUT load_rate double precision, OUT searches bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_gallery_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_status_rows() IS
'one row per registered gallery of the current database with the state of its matcher cache (the mcc_gallery_status view)';

CREATE VIEW mcc_gallery_status AS SELECT * FROM mcc_gallery_status_rows();

COMMENT ON VIEW mcc_gallery_status IS
'registered galleries and their matcher caches: state, generations, entries, cylinders, memory, device, last load time and rate, searches';

CREATE FUNCTION mcc_service_status(
	OUT state text, OUT supervisor_pid integer, OUT engine_pid integer,
	OUT incarnation bigint, OUT restarts integer, OUT ready_since timestamptz,
	OUT socket text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_service_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION mcc_service_status() IS
'state of the matcher service: supervisor and engine processes, incarnation, restarts';

-- Like identify(): STABLE, reads with the statement's snapshot, PARALLEL UNSAFE.
CREATE FUNCTION identify_batch(gallery regclass, probes mcc_template[], k int DEFAULT 10,
							   min_score real DEFAULT 0, id_column name DEFAULT NULL,
							   template_column name DEFAULT NULL, refine text DEFAULT 'none')
RETURNS TABLE(probe_no int, id bigint, score real)
AS 'MODULE_PATHNAME', 'mcc_identify_batch'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 100 COST 10000;

COMMENT ON FUNCTION identify_batch(regclass, mcc_template[], int, real, name, name, text) IS
'1:N identification of several probes in one pass over the gallery: per probe (probe_no = position in the array) the k best rows as identify() returns them, refined alike';

-- Forget registrations of dropped galleries (it writes mcc_galleries as the
-- table's owner, whoever drops the gallery).
CREATE FUNCTION mcc_gallery_dropped() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'mcc_gallery_dropped'
LANGUAGE C SET search_path = pg_catalog, pg_temp;

COMMENT ON FUNCTION mcc_gallery_dropped() IS
'sql_drop event trigger: forgets the registrations of dropped galleries and evicts their caches';

CREATE EVENT TRIGGER mcc_gallery_drop ON sql_drop
	EXECUTE FUNCTION mcc_gallery_dropped();

COMMENT ON EVENT TRIGGER mcc_gallery_drop IS
'forgets registrations of dropped galleries';
