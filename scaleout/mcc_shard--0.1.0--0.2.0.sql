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

-- Enrolment writes each partition's rows into its own table: statement
-- triggers fire only for the table a statement names, and a partition
-- table registered with the matcher service (a gallery of its own, as the
-- refinement's counts and shortlists want it) keeps its engine's cache
-- current through its own (docs/matcher-service.md). Written through the
-- parent, as in 0.1.0, its rows never reached that cache.
-- Run stmt, a format() string whose %s is a partition table ($1 parts,
-- $2 ids, $3 templates, $4 that partition's number), on the table of each
-- of partitions parts of gallery; the rows it wrote in all. A cancel is
-- relayed as the shard's (_fail), for enroll and unenroll alike.
CREATE FUNCTION _write_parts(gallery text, parts integer[], stmt text, ids bigint[], templates bytea[])
	RETURNS bigint
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	g regclass;
	p record;
	n bigint := 0;
	c bigint;
	st text; msg text; det text; hnt text;
BEGIN
	g := mcc_shard._gallery(gallery);
	PERFORM mcc_shard._partition_rels(gallery, parts);
	FOR p IN SELECT x.part, x.rel FROM mcc_shard.partitions x
			 WHERE x.gallery = g AND x.part = ANY (parts) ORDER BY x.part LOOP
		EXECUTE pg_catalog.format(stmt, p.rel) USING parts, ids, templates, p.part;
		GET DIAGNOSTICS c = ROW_COUNT;
		n := n + c;
	END LOOP;
	RETURN n;
EXCEPTION WHEN query_canceled THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

CREATE OR REPLACE FUNCTION enroll(gallery text, parts integer[], ids bigint[], templates bytea[],
					   replace boolean) RETURNS SETOF bigint
	LANGUAGE sql SET search_path FROM CURRENT
	AS $$
	SELECT mcc_shard._write_parts(gallery, parts,
		'INSERT INTO %s AS g (part, id, tpl)
		 SELECT u.part, u.id, mcc_shard.template_from_wire(u.wire)
		 FROM unnest($1, $2, $3) AS u(part, id, wire) WHERE u.part = $4'
		|| CASE WHEN replace THEN ' ON CONFLICT (part, id) DO UPDATE SET tpl = EXCLUDED.tpl' ELSE '' END,
		ids, templates)
$$;

CREATE OR REPLACE FUNCTION unenroll(gallery text, parts integer[], ids bigint[]) RETURNS SETOF bigint
	LANGUAGE sql SET search_path FROM CURRENT
	AS $$
	SELECT mcc_shard._write_parts(gallery, parts,
		'DELETE FROM %s g USING unnest($1, $2) AS u(part, id) WHERE u.part = $4 AND g.id = u.id',
		ids, NULL)
$$;

-- The refinement moved to mcc's identify_shortlist() (docs/scale-out.md,
-- "Refinement"): refine_rows() replaces refine_search(), refine_search_batch()
-- and count_rows(): it counts each partition's rows itself, with mcc's
-- mcc_galleries_rows() (the matcher engine's counts where it serves the
-- partitions), in the statement that searches them.
DROP FUNCTION refine_search(text, integer[], bytea, integer, text, name, name);
DROP FUNCTION refine_search_batch(text, integer[], bytea[], integer, text, name, name);
DROP FUNCTION count_rows(text, integer[]);

-- The windows of partitions whose rows are rows[i] (in the order of the
-- call's partitions), for a coordinator whose call names nparts partitions
-- in all: window_from[i] to upto[i] where given, else chosen here around the
-- partition's expected share e of the global shortlist n' (docs/scale-out.md,
-- "Refinement"): n estimated as this shard's rows times nparts over its
-- partitions (the hash of the id spreads rows evenly), n' from it with the
-- coordinator's fraction and refine_min, e = n' x rows[i] / n, w =
-- ceil(factor (sqrt(e) + 4)), [e - w, e + w) clipped to [0, n'] (at least
-- one row, so that an empty partition's list is seen to end). Any window
-- gives the exact answer; a good one spares the coordinator a second call.
CREATE FUNCTION _windows(rows bigint[], upto bigint[], window_from bigint[], k integer,
						 fraction float8, refine_min bigint, factor float8, nparts integer)
	RETURNS TABLE(ord bigint, lo bigint, hi bigint)
	LANGUAGE sql IMMUTABLE
	AS $$
	WITH est AS (
		SELECT pg_catalog.round(coalesce(pg_catalog.sum(r), 0)::numeric * nparts
							   / GREATEST(pg_catalog.cardinality(rows), 1))::bigint AS n
		FROM pg_catalog.unnest(rows) r),
	sl AS (
		SELECT est.n, LEAST(est.n, GREATEST(pg_catalog.ceil(fraction * est.n::float8)::bigint, refine_min,
											 k::bigint)) AS shortlist
		FROM est),
	e AS (
		SELECT w.ord, w.upto, w.win, sl.shortlist, x.e,
			   pg_catalog.ceil(factor * (pg_catalog.sqrt(x.e) + 4))::bigint AS w
		FROM ROWS FROM (pg_catalog.unnest(rows), pg_catalog.unnest(upto), pg_catalog.unnest(window_from))
				 WITH ORDINALITY AS w(r, upto, win, ord),
			 sl,
			 LATERAL (SELECT pg_catalog.round(sl.shortlist::numeric * w.r / GREATEST(sl.n, 1))::bigint AS e) x)
	SELECT e.ord,
		   coalesce(e.win, GREATEST(e.e - e.w, 0)),
		   coalesce(e.upto, LEAST(e.e + e.w, GREATEST(e.shortlist, 1)))
	FROM e
$$;

-- The refinement rows of partitions parts of gallery for each probe (wire
-- form; probe_no = position in probes), in one statement, so under one
-- snapshot: per partition parts[i], first a row (0, part, NULL, NULL,
-- NULL, rows, lo, hi): the rows with a template it holds for this
-- statement (mcc's mcc_galleries_rows(): the matcher engine's counts when
-- it serves the partitions, no scan of the tables, asked for at once) and
-- the window its lists were asked for (_windows: given as window_from[i]
-- and upto[i], or, where those are NULL, chosen from the count and the
-- coordinator's fraction, refine_min, factor and nparts); then per probe
-- the rows of mcc's identify_shortlist(partition, probe, hi, k, lo, ...)
-- (src/identify/shortlist.c), which the matcher engine answers when it
-- serves the partition: the rows of its first hi by LSS that fewer than k
-- earlier ones beat by the refined score, every row from position lo on,
-- and a row with only pos, the list's length. One identify_shortlists()
-- for every partition and probe: the engine has all their requests at
-- once and searches the partitions side by side.
CREATE FUNCTION refine_rows(gallery text, parts integer[], upto bigint[], window_from bigint[],
							probes bytea[], k integer, method text, id_column name, template_column name,
							fraction float8, refine_min bigint, factor float8, nparts integer)
	RETURNS TABLE(probe_no integer, part integer, id bigint, lss real, score real, pos bigint, lo bigint,
				  hi bigint)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT ROWS 1000
	AS $$
DECLARE
	g regclass;
	tpls mcc_template[];
	rels regclass[];
	counts bigint[];
	los bigint[];
	his bigint[];
	st text; msg text; det text; hnt text;
BEGIN
	g := mcc_shard._gallery(gallery);
	PERFORM mcc_shard._partition_rels(gallery, parts);
	IF probes IS NOT NULL THEN
		tpls := ARRAY(SELECT mcc_shard.template_from_wire(u.wire)
					  FROM pg_catalog.unnest(probes) WITH ORDINALITY AS u(wire, ord) ORDER BY u.ord);
	END IF;
	rels := ARRAY(SELECT p.rel FROM pg_catalog.unnest(parts) WITH ORDINALITY AS u(part, ord)
					  JOIN mcc_shard.partitions p ON p.gallery = g AND p.part = u.part
				  ORDER BY u.ord);
	counts := mcc_galleries_rows(rels, coalesce(id_column, 'id'), template_column);
	SELECT pg_catalog.array_agg(x.lo ORDER BY x.ord), pg_catalog.array_agg(x.hi ORDER BY x.ord)
		INTO los, his
		FROM mcc_shard._windows(counts, upto, window_from, k, fraction, refine_min, factor, nparts) x;
	RETURN QUERY
		SELECT 0, u.part, NULL::bigint, NULL::real, NULL::real, u.n, u.lo, u.hi
		FROM ROWS FROM (pg_catalog.unnest(parts), pg_catalog.unnest(counts), pg_catalog.unnest(los),
						pg_catalog.unnest(his)) AS u(part, n, lo, hi)
		UNION ALL
		SELECT s.probe_no, parts[s.gallery_no], s.id, s.lss, s.score, s.pos, NULL::bigint, NULL::bigint
		FROM identify_shortlists(rels, coalesce(tpls, '{}'), his, k, los, coalesce(id_column, 'id'),
								 template_column, method) s;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION refine_rows(text, integer[], bigint[], bigint[], bytea[], integer, text, name, name, float8,
								bigint, float8, integer) IS
	'refinement rows of some partitions of a sharded gallery: each partition''s rows and window, then mcc''s identify_shortlist() rows; called by mcc_proxy.identify and identify_batch with refine';
