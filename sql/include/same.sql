\set ECHO none
-- same(q1, q2): 'same, N rows' when two queries give the same rows (every
-- column as text, scores included), else 'DIFFERENT: ...' with both. A
-- pg_regress test includes it as it does try.sql
--   \i :abs_srcdir/sql/include/same.sql
-- and drops it at its end; a TAP test runs the file's text through psql
-- ($ENV{MCC_SRCDIR}/sql/include/same.sql). The first line keeps the
-- definition out of the expected output.
CREATE OR REPLACE FUNCTION same(q1 text, q2 text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	a text[];
	b text[];
BEGIN
	EXECUTE format('SELECT array_agg(r::text ORDER BY r) FROM (%s) r', q1) INTO a;
	EXECUTE format('SELECT array_agg(r::text ORDER BY r) FROM (%s) r', q2) INTO b;
	RETURN CASE WHEN a IS NOT DISTINCT FROM b THEN 'same, ' || coalesce(cardinality(a), 0) || ' rows'
				ELSE 'DIFFERENT: ' || coalesce(a::text, '{}') || ' vs ' || coalesce(b::text, '{}') END;
END $$;
\set ECHO all
