-- mcc_shard 0.1.0 -> 0.2.0: mcc 0.2.0's identify() and identify_batch()
-- refine by default; a shard's searches are the LSS stage, so they now ask
-- for it (refine => 'none'). The coordinator refines (docs/scale-out.md).
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

CREATE OR REPLACE FUNCTION refine_search(gallery text, parts integer[], probe bytea, shortlist integer,
							  method text, id_column name, template_column name)
	RETURNS TABLE(id bigint, lss real, score real)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT ROWS 100
	AS $$
DECLARE
	g regclass;
	rels regclass[];
	nums integer[];
	tpl mcc_template;
	st text; msg text; det text; hnt text;
BEGIN
	g := mcc_shard._gallery(gallery);
	PERFORM mcc_shard._partition_rels(gallery, parts);
	SELECT pg_catalog.array_agg(p.rel ORDER BY p.part), pg_catalog.array_agg(p.part ORDER BY p.part)
	INTO rels, nums
	FROM mcc_shard.partitions p WHERE p.gallery = g AND p.part = ANY (parts);
	tpl := mcc_shard.template_from_wire(probe);
	-- identify() checks the column names as on one server; the templates
	-- are then read back by (part, id), the primary key of every partition
	RETURN QUERY EXECUTE pg_catalog.format(
		'SELECT s.id, s.lss, mcc_score($1, t.tpl, $2)
		 FROM (SELECT r.part, c.id, c.score AS lss
			   FROM unnest($3, $4) AS r(rel, part),
					LATERAL identify(r.rel, $1, $5, 0, $6, $7, ''none'') c
			   ORDER BY c.score DESC, c.id
			   LIMIT $5) s
		 JOIN %s t ON t.part = s.part AND t.id = s.id',
		g)
		USING tpl, method, rels, nums, shortlist, coalesce(id_column, 'id'), template_column;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

CREATE OR REPLACE FUNCTION refine_search_batch(gallery text, parts integer[], probes bytea[], shortlist integer,
									method text, id_column name, template_column name)
	RETURNS TABLE(probe_no integer, id bigint, lss real, score real)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT ROWS 1000
	AS $$
DECLARE
	g regclass;
	rels regclass[];
	nums integer[];
	tpls mcc_template[];
	st text; msg text; det text; hnt text;
BEGIN
	g := mcc_shard._gallery(gallery);
	PERFORM mcc_shard._partition_rels(gallery, parts);
	SELECT pg_catalog.array_agg(p.rel ORDER BY p.part), pg_catalog.array_agg(p.part ORDER BY p.part)
	INTO rels, nums
	FROM mcc_shard.partitions p WHERE p.gallery = g AND p.part = ANY (parts);
	IF probes IS NOT NULL THEN
		tpls := ARRAY(SELECT mcc_shard.template_from_wire(u.wire)
					  FROM pg_catalog.unnest(probes) WITH ORDINALITY AS u(wire, ord) ORDER BY u.ord);
	END IF;
	RETURN QUERY EXECUTE pg_catalog.format(
		'SELECT s.probe_no, s.id, s.lss, mcc_score($1[s.probe_no], t.tpl, $2)
		 FROM (SELECT w.probe_no, w.part, w.id, w.lss
			   FROM (SELECT c.probe_no, r.part, c.id, c.score AS lss,
							row_number() OVER (PARTITION BY c.probe_no ORDER BY c.score DESC, c.id) AS rank
					 FROM unnest($3, $4) AS r(rel, part),
						  LATERAL identify_batch(r.rel, $1, $5, 0, $6, $7, ''none'') c) w
			   WHERE w.rank <= $5) s
		 JOIN %s t ON t.part = s.part AND t.id = s.id',
		g)
		USING tpls, method, rels, nums, shortlist, coalesce(id_column, 'id'), template_column;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;
