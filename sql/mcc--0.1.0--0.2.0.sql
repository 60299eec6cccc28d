-- mcc 0.1.0 -> 0.2.0 (docs/upgrades.md). CREATE EXTENSION mcc installs
-- 0.1.0 and runs this script; ALTER EXTENSION mcc UPDATE runs it on an
-- existing 0.1.0 installation. Every object new or changed in 0.2.0 is
-- defined here, once; sections follow the subsystem that owns them.
\echo Use "ALTER EXTENSION mcc UPDATE TO '0.2.0'" to load this file. \quit

-- ===========================================================================
-- Alignment (src/align_sql.c; docs/alignment.md, "Global search"): without
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
-- Elastic image matching (src/dp2d_sql.c, src/dp2d_overall_sql.c;
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
