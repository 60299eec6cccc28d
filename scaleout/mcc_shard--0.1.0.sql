/* mcc_shard--0.1.0.sql: the shard side of mcc's scale-out (docs/scale-out.md) */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION mcc_shard CASCADE" to load this file. \quit

-- A shard holds, for every sharded gallery, a table partitioned by LIST on
-- the cluster-wide partition number part = hashtext(id::text) & (nparts - 1),
-- the number PL/Proxy's RUN ON hashtext(...) maps a row to. Every shard has
-- all nparts partitions of every gallery, most of them empty: which ones it
-- answers for is not stored here. The coordinator names them in every call
-- (PL/Proxy's SPLIT hands each shard the partition numbers the coordinator's
-- map routes to it), so a partition being copied to this shard, or a stale
-- copy left behind by a move, is never searched. That is what makes a
-- rebalance invisible to queries.
--
-- The coordinator (extension mcc_proxy) calls every function here through
-- PL/Proxy; they are plain functions, so a shard can be queried directly too.
-- They run as the connecting user: privileges on the gallery tables apply
-- as on one server. Templates cross the wire as the bytea of
-- mcc_template_send(): PL/Proxy sends only a fixed list of built-in types
-- in binary (bytea is one, mcc_template is not), and the versioned binary
-- form is what remote calls are meant to rely on. Objects are reached through the search_path captured at
-- creation (this schema, then mcc's and dblink's).

-- ===========================================================================
-- Catalog
-- ===========================================================================

CREATE TABLE galleries (
	gallery regclass PRIMARY KEY,
	nparts integer NOT NULL CHECK (nparts > 0 AND (nparts & (nparts - 1)) = 0)
);

CREATE TABLE partitions (
	gallery regclass NOT NULL REFERENCES galleries ON DELETE CASCADE,
	part integer NOT NULL,
	rel regclass NOT NULL UNIQUE,
	PRIMARY KEY (gallery, part)
);

SELECT pg_catalog.pg_extension_config_dump('galleries', '');
SELECT pg_catalog.pg_extension_config_dump('partitions', '');

COMMENT ON TABLE galleries IS 'sharded galleries on this shard and their partition count';
COMMENT ON TABLE partitions IS 'the table holding each partition of each sharded gallery';

GRANT USAGE ON SCHEMA mcc_shard TO PUBLIC;
GRANT SELECT ON galleries, partitions TO PUBLIC;

-- ===========================================================================
-- Helpers
-- ===========================================================================

-- The template whose binary wire form (mcc_template_send) is the bytea, read
-- by the type's receive function (src/template_wire.c in mcc's library).
CREATE FUNCTION template_from_wire(wire bytea) RETURNS mcc_template
	AS '$libdir/mcc', 'mcc_template_from_wire'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION template_from_wire(bytea) IS
	'mcc_template from the bytea of mcc_template_send() (validated as binary input is)';

-- The partition of a gallery id: what PL/Proxy's RUN ON hashtext(id::text)
-- computes (hash & (nparts - 1), nparts a power of two).
CREATE FUNCTION partition_of(id bigint, nparts integer) RETURNS integer
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT pg_catalog.hashtext(id::text) & (nparts - 1) $$;

COMMENT ON FUNCTION partition_of(bigint, integer) IS
	'partition number of a gallery id: hashtext(id::text) & (nparts - 1), as PL/Proxy routes it';

-- This database, for humans and for the coordinator's sanity checks: the
-- cluster's system identifier and the database name.
CREATE FUNCTION node() RETURNS SETOF text
	LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog
	AS $$ SELECT s.system_identifier || '/' || current_database() FROM pg_control_system() s $$;

COMMENT ON FUNCTION node() IS
	'identity of this shard database: system identifier/database name';

-- Raise an ERROR with SQLSTATE st, message msg and the detail and hint when
-- they are not empty (RAISE refuses NULL options and would print empty ones).
CREATE FUNCTION _raise(st text, msg text, det text, hnt text) RETURNS void
	LANGUAGE plpgsql
	AS $$
BEGIN
	IF coalesce(det, '') <> '' AND coalesce(hnt, '') <> '' THEN
		RAISE EXCEPTION USING ERRCODE = st, MESSAGE = msg, DETAIL = det, HINT = hnt;
	ELSIF coalesce(det, '') <> '' THEN
		RAISE EXCEPTION USING ERRCODE = st, MESSAGE = msg, DETAIL = det;
	ELSIF coalesce(hnt, '') <> '' THEN
		RAISE EXCEPTION USING ERRCODE = st, MESSAGE = msg, HINT = hnt;
	ELSE
		RAISE EXCEPTION USING ERRCODE = st, MESSAGE = msg;
	END IF;
END $$;

-- Raise the error (st, msg, det, hnt) of a call for partitions parts, its
-- message prefixed with them ("partitions {1,4}: "), so that the coordinator
-- knows which shard raised it. A cancel (57014: statement_timeout, or a
-- cancel request) becomes SQLSTATE MC001: PL/Proxy 2.10 answers a relayed
-- 57014 by cancelling and waiting for every connection, and that wait can
-- last until query_timeout when the shard's last message is already read
-- (src/execute.c, remote_wait_for_cancel).
CREATE FUNCTION _fail(parts integer[], st text, msg text, det text, hnt text) RETURNS void
	LANGUAGE plpgsql
	AS $$
BEGIN
	PERFORM mcc_shard._raise(CASE WHEN st = '57014' THEN 'MC001' ELSE st END,
		pg_catalog.format('partitions %s: %s',
			(SELECT pg_catalog.array_agg(DISTINCT u ORDER BY u) FROM pg_catalog.unnest(parts) u), msg),
		det, hnt);
END $$;

-- The registered gallery named gallery (a qualified name as the coordinator
-- writes it), or an error.
CREATE FUNCTION _gallery(gallery text) RETURNS regclass
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass := pg_catalog.to_regclass(gallery);
BEGIN
	IF rel IS NULL OR NOT EXISTS (SELECT 1 FROM mcc_shard.galleries g WHERE g.gallery = rel) THEN
		RAISE EXCEPTION 'sharded gallery "%" does not exist on this shard', gallery
			USING ERRCODE = 'undefined_table',
				  HINT = 'Create it from the coordinator with mcc_proxy.create_gallery().';
	END IF;
	RETURN rel;
END $$;

-- The tables of partitions parts of gallery, in partition order; an error
-- if one of them does not exist.
CREATE FUNCTION _partition_rels(gallery text, parts integer[]) RETURNS regclass[]
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	g regclass := mcc_shard._gallery(gallery);
	rels regclass[];
BEGIN
	SELECT pg_catalog.array_agg(p.rel ORDER BY p.part) INTO rels
	FROM mcc_shard.partitions p
	WHERE p.gallery = g AND p.part = ANY (parts);
	IF pg_catalog.cardinality(rels) IS DISTINCT FROM
		(SELECT pg_catalog.count(DISTINCT u) FROM pg_catalog.unnest(parts) u)::integer THEN
		RAISE EXCEPTION 'gallery "%" has no partition % on this shard', gallery,
			(SELECT pg_catalog.array_agg(u ORDER BY u) FROM pg_catalog.unnest(parts) u
			 WHERE NOT EXISTS (SELECT 1 FROM mcc_shard.partitions p WHERE p.gallery = g AND p.part = u))
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN rels;
END $$;

-- The row count and an order-independent digest of the rows of one table:
-- count, then the sums over rows of the two 64-bit halves of
-- md5(int8send(id) || mcc_template_send(tpl)), as exact numerics. A lost,
-- duplicated or altered row changes it.
CREATE FUNCTION _digest(rel regclass, OUT nrows bigint, OUT checksum text)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
BEGIN
	EXECUTE pg_catalog.format(
		'SELECT count(*), count(*) || '':'' || coalesce(sum(lo), 0) || '':'' || coalesce(sum(hi), 0)
		 FROM (SELECT ((''x'' || substr(h, 1, 16))::bit(64)::bigint)::numeric AS lo,
					  ((''x'' || substr(h, 17, 16))::bit(64)::bigint)::numeric AS hi
			   FROM (SELECT md5(int8send(t.id) || mcc_template_send(t.tpl)) AS h FROM %s t) d) s',
		rel) INTO nrows, checksum;
END $$;

-- ===========================================================================
-- Galleries
-- ===========================================================================

-- Create sharded gallery gallery ("schema.table") with nparts partitions:
-- table gallery (id, tpl, part) partitioned by LIST (part), one table
-- <table>_p<N> per partition. Doing it again with the same nparts does
-- nothing (the coordinator retries after a shard failure). Returns the node.
CREATE FUNCTION create_gallery(gallery text, nparts integer) RETURNS SETOF text
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	name text[] := pg_catalog.parse_ident(gallery);
	rel regclass := pg_catalog.to_regclass(gallery);
	have integer;
	child text;
BEGIN
	IF pg_catalog.cardinality(name) <> 2 THEN
		RAISE EXCEPTION 'gallery name "%" is not of the form schema.table', gallery
			USING ERRCODE = 'invalid_name';
	END IF;
	IF nparts IS NULL OR nparts <= 0 OR (nparts & (nparts - 1)) <> 0 THEN
		RAISE EXCEPTION 'the number of partitions must be a power of two'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = pg_catalog.format('It is %s.', nparts);
	END IF;
	IF rel IS NOT NULL THEN
		SELECT g.nparts INTO have FROM mcc_shard.galleries g WHERE g.gallery = rel;
		IF have IS NULL THEN
			RAISE EXCEPTION 'relation "%" already exists and is not a sharded gallery', gallery
				USING ERRCODE = 'duplicate_table';
		ELSIF have <> nparts THEN
			RAISE EXCEPTION 'sharded gallery "%" exists with % partitions, not %', gallery, have, nparts
				USING ERRCODE = 'duplicate_table';
		END IF;
		RETURN QUERY SELECT mcc_shard.node();
		RETURN;
	END IF;

	-- the CHECK makes a row that reached the wrong partition an error
	EXECUTE pg_catalog.format(
		'CREATE TABLE %I.%I (id bigint NOT NULL, tpl %s NOT NULL, part integer NOT NULL,
							 PRIMARY KEY (part, id),
							 CHECK (part = mcc_shard.partition_of(id, %s)))
		 PARTITION BY LIST (part)',
		name[1], name[2], 'mcc_template'::regtype, nparts);
	rel := pg_catalog.to_regclass(gallery);
	INSERT INTO mcc_shard.galleries VALUES (rel, nparts);
	FOR p IN 0 .. nparts - 1 LOOP
		child := name[2] || '_p' || p;
		EXECUTE pg_catalog.format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES IN (%s)',
								  name[1], child, rel, p);
		INSERT INTO mcc_shard.partitions
			VALUES (rel, p, pg_catalog.format('%I.%I', name[1], child)::regclass);
	END LOOP;
	RETURN QUERY SELECT mcc_shard.node();
END $$;

COMMENT ON FUNCTION create_gallery(text, integer) IS
	'create sharded gallery schema.table with nparts LIST partitions (idempotent); called by mcc_proxy.create_gallery';

-- Drop sharded gallery gallery and its partitions (nothing if absent).
CREATE FUNCTION drop_gallery(gallery text) RETURNS SETOF text
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass := pg_catalog.to_regclass(gallery);
BEGIN
	IF rel IS NOT NULL AND EXISTS (SELECT 1 FROM mcc_shard.galleries g WHERE g.gallery = rel) THEN
		DELETE FROM mcc_shard.galleries g WHERE g.gallery = rel;
		EXECUTE pg_catalog.format('DROP TABLE %s', rel);
	END IF;
	RETURN QUERY SELECT mcc_shard.node();
END $$;

COMMENT ON FUNCTION drop_gallery(text) IS
	'drop sharded gallery schema.table and its partitions; called by mcc_proxy.drop_gallery';

-- Let role search gallery (SELECT on the table and on every partition table:
-- identify() reads the partition tables) and, with enroll, write it
-- (INSERT, UPDATE, DELETE on the table). Returns the node.
CREATE FUNCTION grant_gallery(gallery text, role name, enroll boolean) RETURNS SETOF text
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	g regclass := mcc_shard._gallery(gallery);
	p record;
BEGIN
	EXECUTE pg_catalog.format('GRANT SELECT%s ON %s TO %I',
							  CASE WHEN enroll THEN ', INSERT, UPDATE, DELETE' ELSE '' END, g, role);
	FOR p IN SELECT q.rel FROM mcc_shard.partitions q WHERE q.gallery = g LOOP
		EXECUTE pg_catalog.format('GRANT SELECT ON %s TO %I', p.rel, role);
	END LOOP;
	RETURN QUERY SELECT mcc_shard.node();
END $$;

COMMENT ON FUNCTION grant_gallery(text, name, boolean) IS
	'grant a role SELECT on a sharded gallery and its partitions (and with enroll, INSERT, UPDATE, DELETE); called by mcc_proxy.grant_gallery';

-- ===========================================================================
-- Enrolment
-- ===========================================================================

-- Insert rows (parts[i], ids[i], templates[i] in wire form); with replace, an existing id
-- gets the new template. Returns the number of rows written.
CREATE FUNCTION enroll(gallery text, parts integer[], ids bigint[], templates bytea[],
					   replace boolean) RETURNS SETOF bigint
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass := mcc_shard._gallery(gallery);
	n bigint;
	st text; msg text; det text; hnt text;
BEGIN
	EXECUTE pg_catalog.format(
		'INSERT INTO %s AS g (part, id, tpl)
		 SELECT u.part, u.id, mcc_shard.template_from_wire(u.wire) FROM unnest($1, $2, $3) AS u(part, id, wire) %s',
		rel,
		CASE WHEN replace THEN 'ON CONFLICT (part, id) DO UPDATE SET tpl = EXCLUDED.tpl' ELSE '' END)
		USING parts, ids, templates;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN NEXT n;
EXCEPTION WHEN query_canceled THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION enroll(text, integer[], bigint[], bytea[], boolean) IS
	'insert (or with replace, upsert) templates into their partitions; called by mcc_proxy.enroll';

-- Delete ids (in partitions parts, parallel arrays); returns rows deleted.
CREATE FUNCTION unenroll(gallery text, parts integer[], ids bigint[]) RETURNS SETOF bigint
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass := mcc_shard._gallery(gallery);
	n bigint;
	st text; msg text; det text; hnt text;
BEGIN
	EXECUTE pg_catalog.format(
		'DELETE FROM %s g USING unnest($1, $2) AS u(part, id) WHERE g.part = u.part AND g.id = u.id', rel)
		USING parts, ids;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN NEXT n;
EXCEPTION WHEN query_canceled THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION unenroll(text, integer[], bigint[]) IS
	'delete gallery rows by id; called by mcc_proxy.unenroll';

-- ===========================================================================
-- Search
-- ===========================================================================

-- identify() over partitions parts of gallery (probe in wire form): each
-- partition's exact top-k
-- by mcc's identify(), merged by score, ties by the smaller id. An error
-- names the partitions asked for, so that the coordinator can tell which
-- shard raised it.
CREATE FUNCTION search(gallery text, parts integer[], probe bytea, k integer,
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
			 LATERAL identify(r.rel, tpl, k, min_score, coalesce(id_column, 'id'), template_column) t
		ORDER BY t.score DESC, t.id
		LIMIT greatest(k, 1);	-- LIMIT 0 would skip identify() and its check of k
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION search(text, integer[], bytea, integer, real, name, name) IS
	'identify() over some partitions of a sharded gallery: their merged exact top-k; called by mcc_proxy.identify';

-- identify_batch() over partitions parts of gallery: per probe, the merged
-- exact top-k of the partitions (needs mcc's identify_batch).
CREATE FUNCTION search_batch(gallery text, parts integer[], probes bytea[], k integer,
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
										  template_column) t) s
		WHERE s.rank <= k
		ORDER BY s.probe_no, s.score DESC, s.id;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION search_batch(text, integer[], bytea[], integer, real, name, name) IS
	'identify_batch() over some partitions of a sharded gallery; called by mcc_proxy.identify_batch';

-- The number of rows with a template in partitions parts of gallery: the n
-- of a refinement's shortlist size n' (mcc_proxy.identify with refine).
CREATE FUNCTION count_rows(gallery text, parts integer[]) RETURNS SETOF bigint
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass;
	n bigint;
	st text; msg text; det text; hnt text;
BEGIN
	rel := mcc_shard._gallery(gallery);
	PERFORM mcc_shard._partition_rels(gallery, parts);
	EXECUTE pg_catalog.format('SELECT count(*) FROM %s g WHERE g.part = ANY ($1) AND g.tpl IS NOT NULL', rel)
		INTO n USING parts;
	RETURN NEXT n;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION count_rows(text, integer[]) IS
	'the number of rows with a template in some partitions of a sharded gallery; called by mcc_proxy.identify with refine';

-- The refinement candidates of partitions parts of gallery (probe in wire
-- form): their best shortlist rows by LSS (ties by the smaller id; each
-- partition's exact top-shortlist by mcc's identify(), merged), each with
-- its LSS and its score by method (mcc_score(probe, template, method), as
-- mcc's identify() rescores a shortlist). The coordinator keeps the global
-- best shortlist rows by LSS among every shard's: each shard's list holds
-- every one of them it has.
CREATE FUNCTION refine_search(gallery text, parts integer[], probe bytea, shortlist integer,
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
					LATERAL identify(r.rel, $1, $5, 0, $6, $7) c
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

COMMENT ON FUNCTION refine_search(text, integer[], bytea, integer, text, name, name) IS
	'refinement candidates of some partitions of a sharded gallery: their best shortlist rows by LSS, with LSS and the score by method; called by mcc_proxy.identify with refine';

-- refine_search() for several probes: per probe (probe_no = position in
-- probes), the best shortlist rows by LSS of partitions parts (mcc's
-- identify_batch() per partition, merged), with LSS and the score by method.
CREATE FUNCTION refine_search_batch(gallery text, parts integer[], probes bytea[], shortlist integer,
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
						  LATERAL identify_batch(r.rel, $1, $5, 0, $6, $7) c) w
			   WHERE w.rank <= $5) s
		 JOIN %s t ON t.part = s.part AND t.id = s.id',
		g)
		USING tpls, method, rels, nums, shortlist, coalesce(id_column, 'id'), template_column;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION refine_search_batch(text, integer[], bytea[], integer, text, name, name) IS
	'refine_search() for several probes; called by mcc_proxy.identify_batch with refine';

-- The rows of partitions parts of gallery, templates in wire form (the
-- coordinator's view of it, and the source of a partition move).
CREATE FUNCTION rows(gallery text, parts integer[]) RETURNS TABLE(id bigint, wire bytea)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass := mcc_shard._gallery(gallery);
	st text; msg text; det text; hnt text;
BEGIN
	RETURN QUERY EXECUTE pg_catalog.format(
		'SELECT g.id, mcc_template_send(g.tpl) FROM %s g WHERE g.part = ANY ($1)', rel)
		USING parts;
EXCEPTION WHEN query_canceled THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION rows(text, integer[]) IS
	'the rows of some partitions of a sharded gallery, templates as mcc_template_send() bytea';

-- ===========================================================================
-- Rebalancing
-- ===========================================================================

-- Row count and digest of each of partitions parts of gallery.
CREATE FUNCTION partition_stats(gallery text, parts integer[])
	RETURNS TABLE(part integer, nrows bigint, checksum text)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	g regclass := mcc_shard._gallery(gallery);
	st text; msg text; det text; hnt text;
BEGIN
	PERFORM mcc_shard._partition_rels(gallery, parts);
	RETURN QUERY
		SELECT p.part, d.nrows, d.checksum
		FROM mcc_shard.partitions p, LATERAL mcc_shard._digest(p.rel) d
		WHERE p.gallery = g AND p.part = ANY (parts)
		ORDER BY p.part;
EXCEPTION WHEN query_canceled THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	PERFORM mcc_shard._fail(parts, st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION partition_stats(text, integer[]) IS
	'row count and order-independent md5 digest of some partitions of a sharded gallery';

-- Replace this shard's copy of partition part of gallery by the rows the
-- shard at source_connstr holds, in one transaction (dblink reads them there
-- with mcc_shard.rows, templates in wire form); returns the count and digest of the new copy. The
-- coordinator calls it only for a partition this shard does not answer for.
CREATE FUNCTION pull_partition(gallery text, part integer, source_connstr text,
							   OUT nrows bigint, OUT checksum text)
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass := (mcc_shard._partition_rels(gallery, ARRAY[part]))[1];
BEGIN
	EXECUTE pg_catalog.format('TRUNCATE %s', rel);
	EXECUTE pg_catalog.format(
		'INSERT INTO %s (id, tpl, part)
		 SELECT r.id, mcc_shard.template_from_wire(r.wire), %s FROM dblink(%L, %L) AS r(id bigint, wire bytea)',
		rel, part, source_connstr,
		pg_catalog.format('SELECT id, wire FROM mcc_shard.rows(%L, ARRAY[%s])', gallery, part));
	SELECT d.nrows, d.checksum INTO nrows, checksum FROM mcc_shard._digest(rel) d;
END $$;

COMMENT ON FUNCTION pull_partition(text, integer, text) IS
	'copy one partition of a sharded gallery from another shard (dblink), in one transaction; returns count and digest';

-- Empty partitions parts of gallery; returns the number of rows removed.
CREATE FUNCTION truncate_partitions(gallery text, parts integer[]) RETURNS SETOF bigint
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	rels regclass[] := mcc_shard._partition_rels(gallery, parts);
	n bigint := 0;
	c bigint;
	r regclass;
BEGIN
	FOREACH r IN ARRAY rels LOOP
		EXECUTE pg_catalog.format('SELECT count(*) FROM %s', r) INTO c;
		n := n + c;
		IF c > 0 THEN
			EXECUTE pg_catalog.format('TRUNCATE %s', r);
		END IF;
	END LOOP;
	RETURN NEXT n;
END $$;

COMMENT ON FUNCTION truncate_partitions(text, integer[]) IS
	'empty some partitions of a sharded gallery (copies this shard no longer answers for)';

-- The partitions of gallery that hold rows, with their counts.
CREATE FUNCTION nonempty_partitions(gallery text) RETURNS TABLE(part integer, nrows bigint)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	rel regclass := mcc_shard._gallery(gallery);
BEGIN
	RETURN QUERY EXECUTE pg_catalog.format(
		'SELECT g.part, count(*) FROM %s g GROUP BY g.part ORDER BY g.part', rel);
END $$;

COMMENT ON FUNCTION nonempty_partitions(text) IS
	'the partitions of a sharded gallery holding rows on this shard, with their row counts';

REVOKE ALL ON FUNCTION create_gallery(text, integer), drop_gallery(text), grant_gallery(text, name, boolean),
	pull_partition(text, integer, text), truncate_partitions(text, integer[]) FROM PUBLIC;
