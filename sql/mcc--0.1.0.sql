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
