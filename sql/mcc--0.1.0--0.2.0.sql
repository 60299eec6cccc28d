-- mcc 0.1.0 -> 0.2.0 (docs/upgrades.md). CREATE EXTENSION mcc installs
-- 0.1.0 and runs this script; ALTER EXTENSION mcc UPDATE runs it on an
-- existing 0.1.0 installation. Every object new or changed in 0.2.0 is
-- defined here, once; sections follow the subsystem that owns them.
\echo Use "ALTER EXTENSION mcc UPDATE TO '0.2.0'" to load this file. \quit

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
