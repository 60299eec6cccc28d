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
-- 1:1 comparison with a matching method (src/score.c, src/core/mcc_match.h;
-- docs/accuracy.md compares the methods)
-- ===========================================================================

CREATE FUNCTION mcc_score(a mcc_template, b mcc_template, method text) RETURNS real
	AS 'MODULE_PATHNAME', 'mcc_score_method'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_score(mcc_template, mcc_template, text) IS
	'Similarity of two templates in [0, 1] by a method: lss, lss-r, lss-dtr, lsa, lsa-r, lsa-dtr, lgs, lgs-r, lgs-dtr, consolidation (a is the probe)';

-- ===========================================================================
-- identify() and synthetic data (src/identify.c, src/gallery.c,
-- src/synthetic.c): this section is maintained on the pgident branch.
-- Everything above must not depend on it; keep new type-level objects above.
-- ===========================================================================

-- Exact top-k of a gallery by LSS score, read with the statement's snapshot
-- through SPI: STABLE (it reads tables), PARALLEL UNSAFE (it runs its own
-- query through an SPI cursor, which may read temporary tables: backend-local
-- state a parallel worker cannot share), not STRICT (NULL arguments get clear
-- errors; the two column names may be NULL).
CREATE FUNCTION identify(gallery regclass, probe mcc_template, k int DEFAULT 10,
						 min_score real DEFAULT 0, id_column name DEFAULT NULL,
						 template_column name DEFAULT NULL)
RETURNS TABLE(id bigint, score real)
AS 'MODULE_PATHNAME', 'mcc_identify'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 10 COST 10000;

COMMENT ON FUNCTION identify(regclass, mcc_template, int, real, name, name) IS
'1:N identification: the k gallery rows with the best LSS scores against the probe (at least min_score), best first, ties by smaller id; sees exactly the rows the calling statement can see';

-- Synthetic fingerprints: a pure function of its arguments, hence IMMUTABLE
-- (PostgreSQL never folds a set-returning function at plan time).
CREATE FUNCTION mcc_synthetic(fingers int, impressions int DEFAULT 1, seed bigint DEFAULT 1,
							  first_finger bigint DEFAULT 0, profile text DEFAULT 'gpu2015')
RETURNS TABLE(finger bigint, impression int, template mcc_template)
AS 'MODULE_PATHNAME', 'mcc_synthetic'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION mcc_synthetic(int, int, bigint, bigint, text) IS
'synthetic fingerprint templates: impressions 0..impressions-1 of fingers first_finger..first_finger+fingers-1, deterministic in seed';
