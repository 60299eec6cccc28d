-- mcc_shard 0.1.0 -> 0.2.0: mcc 0.2.0's identify() and identify_batch()
-- refine by default; a shard's searches are the LSS stage, so they now ask
-- for it (refine => 'none'). A refinement's shortlists are rescored by mcc's
-- identify_shortlist() (the matcher engine where it serves the partition)
-- and the coordinator merges what can matter (docs/scale-out.md).
\echo Use "ALTER EXTENSION mcc_shard UPDATE TO '0.2.0'" to load this file. \quit

CREATE OR REPLACE FUNCTION search(gallery text, parts integer[], probe bytea, k integer,
					   min_score real, id_column name, template_column name)
	RETURNS TABLE(id bigint, score real)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT ROWS 10
	AS $$
DECLARE
	rels regclass[];
	tpl mcc_template;
	st text; msg text; det text; hnt text;
BEGIN
	rels := mcc_shard._partition_rels(gallery, parts);
	tpl := mcc_shard.template_from_wire(probe);
	RETURN QUERY
		SELECT t.id, t.score
		FROM pg_catalog.unnest(rels) AS r(rel),
			 LATERAL identify(r.rel, tpl, k, min_score, coalesce(id_column, 'id'), template_column, 'none') t
		ORDER BY t.score DESC, t.id
		LIMIT greatest(k, 1);	-- LIMIT 0 would skip identify() and its check of k
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

CREATE OR REPLACE FUNCTION search_batch(gallery text, parts integer[], probes bytea[], k integer,
							 min_score real, id_column name, template_column name)
	RETURNS TABLE(probe_no integer, id bigint, score real)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT ROWS 100
	AS $$
DECLARE
	rels regclass[];
	tpls mcc_template[];
	st text; msg text; det text; hnt text;
BEGIN
	rels := mcc_shard._partition_rels(gallery, parts);
	IF probes IS NOT NULL THEN
		tpls := ARRAY(SELECT mcc_shard.template_from_wire(u.wire)
					  FROM pg_catalog.unnest(probes) WITH ORDINALITY AS u(wire, ord) ORDER BY u.ord);
	END IF;
	RETURN QUERY
		SELECT s.probe_no, s.id, s.score
		FROM (SELECT t.probe_no, t.id, t.score,
					 row_number() OVER (PARTITION BY t.probe_no ORDER BY t.score DESC, t.id) AS rank
			  FROM pg_catalog.unnest(rels) AS r(rel),
				   LATERAL identify_batch(r.rel, tpls, k, min_score, coalesce(id_column, 'id'),
										  template_column, 'none') t) s
		WHERE s.rank <= k
		ORDER BY s.probe_no, s.score DESC, s.id;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

-- The refinement moved to mcc's identify_shortlist() (docs/scale-out.md,
-- "Refinement"): refine_rows() replaces refine_search(), refine_search_batch()
-- and, with count_parts(), count_rows().
DROP FUNCTION refine_search(text, integer[], bytea, integer, text, name, name);
DROP FUNCTION refine_search_batch(text, integer[], bytea[], integer, text, name, name);
DROP FUNCTION count_rows(text, integer[]);

-- The number of rows with a template in each of partitions parts of gallery
-- (none listed: 0), from which the coordinator computes n' and each
-- partition's expected share of it.
CREATE FUNCTION count_parts(gallery text, parts integer[]) RETURNS TABLE(part integer, n bigint)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass;
	st text; msg text; det text; hnt text;
BEGIN
	rel := mcc_shard._gallery(gallery);
	PERFORM mcc_shard._partition_rels(gallery, parts);
	RETURN QUERY EXECUTE pg_catalog.format(
		'SELECT g.part, count(*) FROM %s g WHERE g.part = ANY ($1) AND g.tpl IS NOT NULL GROUP BY g.part', rel)
		USING parts;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION count_parts(text, integer[]) IS
	'the number of rows with a template in each of some partitions of a sharded gallery (empty ones not listed); called by mcc_proxy.identify with refine';

-- The refinement rows of partitions parts of gallery for each probe (wire
-- form; probe_no = position in probes): per partition parts[i], mcc's
-- identify_shortlist(partition, probe, upto[i], k, window_from[i], ...)
-- (src/identify/shortlist.c), which the matcher engine answers when it
-- serves the partition: the rows of its first upto[i] by LSS that fewer
-- than k earlier ones beat by the refined score, every row from position
-- window_from[i] on, and a row with only pos, the list's length.
CREATE FUNCTION refine_rows(gallery text, parts integer[], upto bigint[], window_from bigint[],
							probes bytea[], k integer, method text, id_column name, template_column name)
	RETURNS TABLE(probe_no integer, part integer, id bigint, lss real, score real, pos bigint)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT ROWS 1000
	AS $$
DECLARE
	g regclass;
	tpls mcc_template[];
	st text; msg text; det text; hnt text;
BEGIN
	g := mcc_shard._gallery(gallery);
	PERFORM mcc_shard._partition_rels(gallery, parts);
	IF probes IS NOT NULL THEN
		tpls := ARRAY(SELECT mcc_shard.template_from_wire(u.wire)
					  FROM pg_catalog.unnest(probes) WITH ORDINALITY AS u(wire, ord) ORDER BY u.ord);
	END IF;
	RETURN QUERY
		SELECT t.ord::integer, w.part, s.id, s.lss, s.score, s.pos
		FROM ROWS FROM (pg_catalog.unnest(parts), pg_catalog.unnest(upto), pg_catalog.unnest(window_from)) AS w(part, upto, win)
			 JOIN mcc_shard.partitions p ON p.gallery = g AND p.part = w.part,
			 pg_catalog.unnest(tpls) WITH ORDINALITY AS t(tpl, ord),
			 LATERAL identify_shortlist(p.rel, t.tpl, w.upto, k, w.win, coalesce(id_column, 'id'),
										template_column, method) s;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION refine_rows(text, integer[], bigint[], bigint[], bytea[], integer, text, name, name) IS
	'refinement rows of some partitions of a sharded gallery, by mcc''s identify_shortlist(); called by mcc_proxy.identify and identify_batch with refine';
