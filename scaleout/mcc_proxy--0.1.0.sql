/* mcc_proxy--0.1.0.sql: the coordinator of mcc's scale-out (docs/scale-out.md) */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION mcc_proxy CASCADE" to load this file. \quit

-- The coordinator holds no templates. It keeps the cluster map (shards, and
-- the shard of each of nparts partitions, nparts a power of two), serves it
-- to PL/Proxy through plproxy.get_cluster_*, and offers identify() with the
-- signature of mcc's own: the query goes to every partition in parallel
-- through PL/Proxy (SPLIT over the partition numbers, RUN ON each: every
-- shard gets one call naming the partitions it answers for), each shard
-- returns its exact top-k, and the coordinator keeps the k best (score
-- descending, ties by the smaller id): the global top-k, exactly.
--
-- Every object is created in schema mcc_proxy (qualified below). Functions
-- capture this search_path: mcc's schema first, so that identify() there
-- is mcc's, then mcc_proxy.
SELECT pg_catalog.set_config('search_path',
	(SELECT pg_catalog.quote_ident(n.nspname)
	 FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
	 WHERE e.extname = 'mcc') || ', mcc_proxy, pg_catalog', true);

-- ===========================================================================
-- The cluster map
-- ===========================================================================

CREATE TABLE mcc_proxy.shards (
	name text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]+$'),
	connstr text NOT NULL UNIQUE,
	node text NOT NULL UNIQUE
);

CREATE TABLE mcc_proxy.partitions (
	part integer PRIMARY KEY CHECK (part >= 0),
	shard text NOT NULL REFERENCES mcc_proxy.shards ON UPDATE CASCADE,
	moved_xid xid8				-- the transaction that last moved it here
);

-- PL/Proxy cluster options (doc/config.md of PL/Proxy), in seconds, and
-- statement_timeout (milliseconds), which PL/Proxy ignores and the shards
-- apply (see plproxy.get_cluster_partitions)
CREATE TABLE mcc_proxy.settings (
	key text PRIMARY KEY CHECK (key IN ('query_timeout', 'connection_lifetime', 'disable_binary',
										 'keepalive_idle', 'keepalive_interval', 'keepalive_count',
										 'statement_timeout')),
	val text NOT NULL CHECK (val ~ '^[0-9]+$')
);

CREATE TABLE mcc_proxy.cluster_version (
	v integer NOT NULL
);
INSERT INTO mcc_proxy.cluster_version VALUES (1);

-- the coordinator's view of each sharded gallery, and its name on the shards
CREATE TABLE mcc_proxy.galleries (
	gallery regclass PRIMARY KEY,
	remote_name text NOT NULL UNIQUE
);

SELECT pg_catalog.pg_extension_config_dump('mcc_proxy.shards', '');
SELECT pg_catalog.pg_extension_config_dump('mcc_proxy.partitions', '');
SELECT pg_catalog.pg_extension_config_dump('mcc_proxy.settings', '');
SELECT pg_catalog.pg_extension_config_dump('mcc_proxy.cluster_version', '');
SELECT pg_catalog.pg_extension_config_dump('mcc_proxy.galleries', '');

COMMENT ON TABLE mcc_proxy.shards IS 'shard databases: name, libpq connection string, node identity';
COMMENT ON TABLE mcc_proxy.partitions IS 'the shard of every partition (a power of two of them)';
COMMENT ON TABLE mcc_proxy.settings IS 'PL/Proxy options of cluster mcc (query_timeout, ...: seconds) and the shards'' statement_timeout (ms)';
COMMENT ON TABLE mcc_proxy.galleries IS 'sharded galleries: the coordinator view and the table name on the shards';

-- Connection strings may hold secrets: only names are public.
GRANT USAGE ON SCHEMA mcc_proxy TO PUBLIC;
GRANT SELECT ON mcc_proxy.partitions, mcc_proxy.settings, mcc_proxy.cluster_version,
	mcc_proxy.galleries TO PUBLIC;
GRANT SELECT (name, node) ON mcc_proxy.shards TO PUBLIC;

-- Any change of the map makes PL/Proxy reload it before its next call.
CREATE FUNCTION mcc_proxy._bump_version() RETURNS trigger
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
BEGIN
	UPDATE mcc_proxy.cluster_version SET v = v + 1;
	RETURN NULL;
END $$;

CREATE TRIGGER bump_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mcc_proxy.shards
	FOR EACH STATEMENT EXECUTE FUNCTION mcc_proxy._bump_version();
CREATE TRIGGER bump_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mcc_proxy.partitions
	FOR EACH STATEMENT EXECUTE FUNCTION mcc_proxy._bump_version();
CREATE TRIGGER bump_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON mcc_proxy.settings
	FOR EACH STATEMENT EXECUTE FUNCTION mcc_proxy._bump_version();

-- ===========================================================================
-- PL/Proxy's cluster configuration functions (cluster 'mcc')
-- ===========================================================================

-- PL/Proxy looks for these three in schema plproxy. If that schema already
-- exists (another PL/Proxy setup in this database), CREATE EXTENSION stops
-- here: docs/scale-out.md says what to do.
CREATE SCHEMA plproxy;
GRANT USAGE ON SCHEMA plproxy TO PUBLIC;

-- Called by PL/Proxy on every call: a new version makes it reload the map.
CREATE FUNCTION plproxy.get_cluster_version(cluster_name text) RETURNS integer
	LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT
	AS $$
BEGIN
	IF cluster_name = 'mcc' THEN
		RETURN (SELECT c.v FROM mcc_proxy.cluster_version c);
	END IF;
	RAISE EXCEPTION 'unknown PL/Proxy cluster "%"', cluster_name USING ERRCODE = 'undefined_object';
END $$;

-- The connection string of every partition, in partition order. With
-- setting statement_timeout, each gets options='-c statement_timeout=N'
-- (unless it sets options itself): that is the timeout that names a slow
-- shard, because PL/Proxy 2.10 checks its own query_timeout only when some
-- connection has input, never while a shard is silent (src/execute.c,
-- remote_execute).
CREATE FUNCTION plproxy.get_cluster_partitions(cluster_name text) RETURNS SETOF text
	LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT
	AS $$
DECLARE
	n integer;
	timeout text := (SELECT s.val FROM mcc_proxy.settings s WHERE s.key = 'statement_timeout');
BEGIN
	IF cluster_name <> 'mcc' THEN
		RAISE EXCEPTION 'unknown PL/Proxy cluster "%"', cluster_name USING ERRCODE = 'undefined_object';
	END IF;
	SELECT pg_catalog.count(*) INTO n FROM mcc_proxy.partitions;
	IF n = 0 THEN
		RAISE EXCEPTION 'the mcc cluster has no partitions'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Add shards with mcc_proxy.add_shard(), then call mcc_proxy.create_partitions().';
	END IF;
	RETURN QUERY
		SELECT CASE WHEN timeout IS NULL OR s.connstr ~ '(^|\s)options\s*=' THEN s.connstr
					ELSE s.connstr || pg_catalog.format(' options=''-c statement_timeout=%s''', timeout) END
		FROM mcc_proxy.partitions p JOIN mcc_proxy.shards s ON s.name = p.shard
		ORDER BY p.part;
END $$;

-- The cluster options of table mcc_proxy.settings (PL/Proxy ignores
-- statement_timeout).
CREATE FUNCTION plproxy.get_cluster_config(IN cluster_name text, OUT key text, OUT val text)
	RETURNS SETOF record
	LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT
	AS $$
BEGIN
	IF cluster_name <> 'mcc' THEN
		RAISE EXCEPTION 'unknown PL/Proxy cluster "%"', cluster_name USING ERRCODE = 'undefined_object';
	END IF;
	RETURN QUERY SELECT s.key, s.val FROM mcc_proxy.settings s;
END $$;

-- ===========================================================================
-- PL/Proxy functions: the remote calls (internal)
-- ===========================================================================

-- SPLIT parts + RUN ON parts: every partition named in parts is tagged, and
-- each shard gets one call carrying the partitions the map gives it.
-- Templates travel as the bytea of mcc_template_send(): PL/Proxy 2.10 uses
-- binary I/O only for a fixed list of built-in types (bytea among them;
-- src/type.c usable_binary), so this is how they cross in their versioned
-- binary form, received on the other side by the type's receive function.

CREATE FUNCTION mcc_proxy._search(gallery text, parts integer[], probe bytea, k integer,
								  min_score real, id_column name, template_column name)
	RETURNS TABLE(id bigint, score real)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts;
	RUN ON parts;
	TARGET mcc_shard.search;
$$;

CREATE FUNCTION mcc_proxy._search_batch(gallery text, parts integer[], probes bytea[],
										k integer, min_score real, id_column name,
										template_column name)
	RETURNS TABLE(probe_no integer, id bigint, score real)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts;
	RUN ON parts;
	TARGET mcc_shard.search_batch;
$$;

CREATE FUNCTION mcc_proxy._count_rows(gallery text, parts integer[]) RETURNS SETOF bigint
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts;
	RUN ON parts;
	TARGET mcc_shard.count_rows;
$$;

CREATE FUNCTION mcc_proxy._refine_search(gallery text, parts integer[], probe bytea, shortlist integer,
										 method text, id_column name, template_column name)
	RETURNS TABLE(id bigint, lss real, score real)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts;
	RUN ON parts;
	TARGET mcc_shard.refine_search;
$$;

CREATE FUNCTION mcc_proxy._refine_search_batch(gallery text, parts integer[], probes bytea[],
											   shortlist integer, method text, id_column name,
											   template_column name)
	RETURNS TABLE(probe_no integer, id bigint, lss real, score real)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts;
	RUN ON parts;
	TARGET mcc_shard.refine_search_batch;
$$;

CREATE FUNCTION mcc_proxy._rows(gallery text, parts integer[]) RETURNS TABLE(id bigint, wire bytea)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts;
	RUN ON parts;
	TARGET mcc_shard.rows;
$$;

CREATE FUNCTION mcc_proxy._enroll(gallery text, parts integer[], ids bigint[], templates bytea[],
								  replace boolean) RETURNS SETOF bigint
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts, ids, templates;
	RUN ON parts;
	TARGET mcc_shard.enroll;
$$;

CREATE FUNCTION mcc_proxy._unenroll(gallery text, parts integer[], ids bigint[]) RETURNS SETOF bigint
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts, ids;
	RUN ON parts;
	TARGET mcc_shard.unenroll;
$$;

CREATE FUNCTION mcc_proxy._partition_stats(gallery text, parts integer[])
	RETURNS TABLE(part integer, nrows bigint, checksum text)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts;
	RUN ON parts;
	TARGET mcc_shard.partition_stats;
$$;

-- the node of the shard holding partition part (query_timeout applies)
CREATE FUNCTION mcc_proxy._ping(part integer) RETURNS SETOF text
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	RUN ON part;
	SELECT mcc_shard.node() AS _ping;
$$;

-- CONNECT: one shard by connection string, whatever the map says (admin;
-- PL/Proxy applies no query_timeout to these, connect_timeout in the
-- connection string bounds the connection)

CREATE FUNCTION mcc_proxy._node_at(connstr text) RETURNS SETOF text
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT mcc_shard.node() AS _node_at;
$$;

CREATE FUNCTION mcc_proxy._create_gallery_at(connstr text, gallery text, nparts integer) RETURNS SETOF text
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT mcc_shard.create_gallery(gallery, nparts) AS _create_gallery_at;
$$;

CREATE FUNCTION mcc_proxy._drop_gallery_at(connstr text, gallery text) RETURNS SETOF text
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT mcc_shard.drop_gallery(gallery) AS _drop_gallery_at;
$$;

CREATE FUNCTION mcc_proxy._grant_gallery_at(connstr text, gallery text, role name, enroll boolean)
	RETURNS SETOF text
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT mcc_shard.grant_gallery(gallery, role, enroll) AS _grant_gallery_at;
$$;

CREATE FUNCTION mcc_proxy._pull_partition_at(connstr text, gallery text, part integer, source text,
											 OUT nrows bigint, OUT checksum text)
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT p.nrows, p.checksum FROM mcc_shard.pull_partition(gallery, part, source) p;
$$;

CREATE FUNCTION mcc_proxy._partition_stats_at(connstr text, gallery text, parts integer[])
	RETURNS TABLE(part integer, nrows bigint, checksum text)
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT s.part, s.nrows, s.checksum FROM mcc_shard.partition_stats(gallery, parts) s;
$$;

CREATE FUNCTION mcc_proxy._truncate_at(connstr text, gallery text, parts integer[]) RETURNS SETOF bigint
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT mcc_shard.truncate_partitions(gallery, parts) AS _truncate_at;
$$;

CREATE FUNCTION mcc_proxy._nonempty_at(connstr text, gallery text) RETURNS TABLE(part integer, nrows bigint)
	LANGUAGE plproxy
	AS $$
	CONNECT connstr;
	SELECT n.part, n.nrows FROM mcc_shard.nonempty_partitions(gallery) n;
$$;

-- ===========================================================================
-- Helpers (internal)
-- ===========================================================================

-- The template whose binary wire form (mcc_template_send) is the bytea.
CREATE FUNCTION mcc_proxy.template_from_wire(wire bytea) RETURNS mcc_template
	AS '$libdir/mcc', 'mcc_template_from_wire'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mcc_proxy.template_from_wire(bytea) IS
	'mcc_template from the bytea of mcc_template_send() (validated as binary input is)';

-- The wire forms of templates, in order (NULL stays NULL).
CREATE FUNCTION mcc_proxy._wire(templates mcc_template[]) RETURNS bytea[]
	LANGUAGE sql IMMUTABLE
	AS $$
	SELECT CASE WHEN templates IS NOT NULL THEN
		ARRAY(SELECT mcc_template_send(u.t) FROM pg_catalog.unnest(templates) WITH ORDINALITY AS u(t, o)
			  ORDER BY u.o) END
$$;

-- Raise an ERROR with SQLSTATE st, message msg and the detail and hint when
-- they are not empty (RAISE refuses NULL options and would print empty ones).
CREATE FUNCTION mcc_proxy._raise(st text, msg text, det text, hnt text) RETURNS void
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

-- The partition of a gallery id: the partition PL/Proxy's
-- RUN ON hashtext(id::text) picks, hashtext(id::text) & (nparts - 1).
CREATE FUNCTION mcc_proxy.partition_of(id bigint) RETURNS integer
	LANGUAGE sql STABLE STRICT
	AS $$
	SELECT pg_catalog.hashtext(id::text) & (n - 1)
	FROM (SELECT pg_catalog.count(*)::integer AS n FROM mcc_proxy.partitions) c
	WHERE n > 0
$$;

COMMENT ON FUNCTION mcc_proxy.partition_of(bigint) IS
	'partition of a gallery id: hashtext(id::text) & (nparts - 1), as PL/Proxy routes it';

-- All partition numbers, 0 .. nparts - 1.
CREATE FUNCTION mcc_proxy._all_parts() RETURNS integer[]
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	parts integer[];
BEGIN
	SELECT pg_catalog.array_agg(p.part ORDER BY p.part) INTO parts FROM mcc_proxy.partitions p;
	IF parts IS NULL THEN
		RAISE EXCEPTION 'the mcc cluster has no partitions'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Add shards with mcc_proxy.add_shard(), then call mcc_proxy.create_partitions().';
	END IF;
	RETURN parts;
END $$;

-- The name on the shards of sharded gallery gallery, or NULL.
CREATE FUNCTION mcc_proxy._remote_name(gallery regclass) RETURNS text
	LANGUAGE sql STABLE
	AS $$ SELECT g.remote_name FROM mcc_proxy.galleries g WHERE g.gallery = $1 $$;

-- Like _remote_name, but an error for a relation that is not sharded.
CREATE FUNCTION mcc_proxy._sharded(gallery regclass) RETURNS text
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
DECLARE
	remote text := mcc_proxy._remote_name(gallery);
BEGIN
	IF remote IS NULL THEN
		RAISE EXCEPTION '"%" is not a sharded gallery', gallery
			USING ERRCODE = 'wrong_object_type', HINT = 'Create one with mcc_proxy.create_gallery().';
	END IF;
	RETURN remote;
END $$;

-- Lock the map entries of parts against moves until the end of the caller's
-- transaction, so that its remote writes reach the current owners (a move
-- takes FOR UPDATE on its partition). SECURITY DEFINER: FOR SHARE needs
-- UPDATE privilege on the map.
CREATE FUNCTION mcc_proxy._lock_partitions(parts integer[]) RETURNS void
	LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
	AS $$
BEGIN
	PERFORM 1 FROM mcc_proxy.partitions p WHERE p.part = ANY (parts) ORDER BY p.part FOR SHARE;
END $$;

-- The shards that hold some of partitions parts, each with those partitions.
CREATE FUNCTION mcc_proxy._shards_of(parts integer[]) RETURNS TABLE(shard text, parts integer[])
	LANGUAGE sql STABLE
	AS $$
	SELECT p.shard, pg_catalog.array_agg(p.part ORDER BY p.part)
	FROM mcc_proxy.partitions p WHERE p.part = ANY ($1)
	GROUP BY p.shard ORDER BY p.shard
$$;

-- Strip PL/Proxy's "func(n): [db] REMOTE ERROR: " from a relayed message.
CREATE FUNCTION mcc_proxy._remote_text(msg text) RETURNS text
	LANGUAGE sql IMMUTABLE
	AS $$ SELECT coalesce(pg_catalog.substring(msg, '^\S+\(\d+\): \[[^]]*\] REMOTE [A-Z]+: (.*)$'), msg) $$;

-- After a fan-out over partitions tried failed with error (st, msg, det,
-- hnt): which shards failed? A shard that answered with an error of its own
-- (mcc_shard prefixes "partitions {..}: ") is alive: its error is raised
-- again as it is (as on one server), unless it is a timeout (SQLSTATE MC001:
-- mcc_shard's statement was cancelled, see mcc_shard._fail), which makes
-- that shard the failed one. Otherwise every shard involved is pinged
-- (through the cluster, so query_timeout applies); those that do not answer
-- failed. When all answer, the original error is raised again. Returns one
-- row per failed shard: its partitions among tried and why.
CREATE FUNCTION mcc_proxy._failed_shards(tried integer[], st text, msg text, det text, hnt text)
	RETURNS TABLE(shard text, parts integer[], reason text)
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	remote text := mcc_proxy._remote_text(msg);
	m text[];
	s record;
	saved text := pg_catalog.current_setting('client_min_messages');
	nfailed integer := 0;
BEGIN
	det := pg_catalog.regexp_replace(coalesce(det, ''), '^Remote detail: ', '');
	hnt := pg_catalog.regexp_replace(coalesce(hnt, ''), '^Remote hint: ', '');
	m := pg_catalog.regexp_match(remote, '^partitions \{([0-9,]+)\}: (.*)$');
	IF m IS NOT NULL THEN
		IF st <> 'MC001' THEN
			PERFORM mcc_proxy._raise(st, m[2], det, hnt);
		END IF;
		RETURN QUERY SELECT o.shard, o.parts, 'timed out: ' || m[2]
			FROM mcc_proxy._shards_of(pg_catalog.string_to_array(m[1], ',')::integer[]) o;
		RETURN;
	END IF;

	-- PL/Proxy says "dropping stale conn" when it replaces a broken connection
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	FOR s IN SELECT * FROM mcc_proxy._shards_of(tried) LOOP
		BEGIN
			PERFORM mcc_proxy._ping(s.parts[1]);
		EXCEPTION WHEN others THEN
			shard := s.shard;
			parts := s.parts;
			reason := pg_catalog.rtrim(SQLERRM, E'\n');
			nfailed := nfailed + 1;
			RETURN NEXT;
		END;
	END LOOP;
	PERFORM pg_catalog.set_config('client_min_messages', saved, true);
	IF nfailed > 0 THEN
		RETURN;
	END IF;
	IF msg ~ 'query timeout$' THEN
		RAISE EXCEPTION 'no answer from the shards within query_timeout (% s)',
			(SELECT s2.val FROM mcc_proxy.settings s2 WHERE s2.key = 'query_timeout')
			USING ERRCODE = 'query_canceled',
				  DETAIL = 'Every shard answers a ping: one of them is slow, not down.',
				  HINT = 'Set mcc_proxy.set_option(''statement_timeout'', ...) below query_timeout: a shard that times out is then named.';
	END IF;
	PERFORM mcc_proxy._raise(st, remote, det, hnt);
END $$;

-- What a fan-out does after an error: with partial, the partitions of the
-- failed shards are dropped from parts (and their reasons appended to
-- reasons); without, an error names the failed shards. what names the
-- caller in messages.
CREATE FUNCTION mcc_proxy._after_failure(what text, partial boolean, parts integer[], reasons text[],
										 st text, msg text, det text, hnt text,
										 OUT remaining integer[], OUT all_reasons text[])
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	failed record;
	names text[] := '{}';
	lost integer[] := '{}';
	timeouts boolean := false;
BEGIN
	all_reasons := reasons;
	FOR failed IN SELECT * FROM mcc_proxy._failed_shards(parts, st, msg, det, hnt) LOOP
		names := names || pg_catalog.format('"%s"', failed.shard);
		lost := lost || failed.parts;
		timeouts := timeouts OR failed.reason LIKE 'timed out: %';
		all_reasons := all_reasons || pg_catalog.format('shard "%s" (partitions %s): %s',
														failed.shard, failed.parts, failed.reason);
	END LOOP;
	IF NOT partial THEN
		RAISE EXCEPTION '%: shard% % did not answer', what,
			CASE WHEN pg_catalog.cardinality(names) > 1 THEN 's' ELSE '' END,
			pg_catalog.array_to_string(names, ', ')
			USING ERRCODE = CASE WHEN timeouts THEN 'query_canceled' ELSE 'connection_failure' END,
				  DETAIL = pg_catalog.array_to_string(all_reasons, E'\n'),
				  HINT = 'Bring the shard back, or ask for the rows of the other shards with partial => true.';
	END IF;
	SELECT pg_catalog.array_agg(u ORDER BY u) INTO remaining
	FROM pg_catalog.unnest(parts) u WHERE u <> ALL (lost);
	IF remaining IS NULL THEN
		RAISE EXCEPTION '%: no shard answered', what
			USING ERRCODE = 'connection_failure',
				  DETAIL = pg_catalog.array_to_string(all_reasons, E'\n');
	END IF;
END $$;

-- The WARNING of a partial answer: which partitions are missing and why.
CREATE FUNCTION mcc_proxy._warn_partial(what text, parts integer[], reasons text[]) RETURNS void
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
DECLARE
	missing integer[];
BEGIN
	SELECT pg_catalog.array_agg(p.part ORDER BY p.part) INTO missing
	FROM mcc_proxy.partitions p WHERE p.part <> ALL (parts);
	RAISE WARNING '%: partial result: partitions % did not answer', what, missing
		USING DETAIL = pg_catalog.array_to_string(reasons, E'\n');
END $$;

-- An empty gallery: mcc's identify() and identify_batch() on it check their
-- arguments (probe, k, min_score, refine) with the errors of one server,
-- before a refinement asks anything of the shards.
CREATE TABLE mcc_proxy._no_rows (
	id bigint PRIMARY KEY,
	tpl mcc_template
);
GRANT SELECT ON mcc_proxy._no_rows TO PUBLIC;

-- The mcc_score() method of refinement refine ('dtr' is 'lss-dtr'), after
-- mcc's identify() accepted it.
CREATE FUNCTION mcc_proxy._refine_method(refine text) RETURNS text
	LANGUAGE sql IMMUTABLE STRICT
	AS $$ SELECT CASE WHEN refine = 'dtr' THEN 'lss-dtr' ELSE refine END $$;

-- The shortlist size n' of a refinement of a gallery of n rows with a
-- template, as mcc's identify() computes it (src/core/mcc_match.c,
-- mcc_refine_count): min(n, max(ceil(mcc.refine_fraction * n),
-- mcc.refine_min, k)), with this session's settings. The fraction is read as
-- SHOW prints it (%g: six significant digits).
CREATE FUNCTION mcc_proxy._shortlist(n bigint, k integer) RETURNS bigint
	LANGUAGE sql STABLE
	AS $$
	SELECT LEAST(n, GREATEST(pg_catalog.ceil(pg_catalog.current_setting('mcc.refine_fraction')::float8
											 * n::float8)::bigint,
							 pg_catalog.current_setting('mcc.refine_min')::bigint, k::bigint))
$$;

-- Raise 22004 as mcc's identify() does for a NULL argument.
CREATE FUNCTION mcc_proxy._null_argument(what text, arg text) RETURNS void
	LANGUAGE plpgsql
	AS $$
BEGIN
	RAISE EXCEPTION '% of %() must not be null', arg, what USING ERRCODE = 'null_value_not_allowed';
END $$;

-- ===========================================================================
-- Setup: shards, partitions, galleries
-- ===========================================================================

-- Register a shard database (mcc_shard installed there). Returns its node.
CREATE FUNCTION mcc_proxy.add_shard(name text, connstr text) RETURNS text
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	n text;
BEGIN
	SELECT x INTO n FROM mcc_proxy._node_at(connstr) x;
	INSERT INTO mcc_proxy.shards VALUES (name, connstr, n);
	RETURN n;
EXCEPTION WHEN unique_violation THEN
	RAISE EXCEPTION 'shard "%" is already registered, or another shard has the same connection string or database', name
		USING ERRCODE = 'unique_violation', DETAIL = pg_catalog.format('Its node is %s.', n);
END $$;

COMMENT ON FUNCTION mcc_proxy.add_shard(text, text) IS
	'register a shard database (extension mcc_shard installed there) under a name';

-- Change the connection string of a shard: it must reach the same database
-- (same node), as after a change of address or of connection options.
CREATE FUNCTION mcc_proxy.alter_shard(name text, connstr text) RETURNS text
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	old_node text;
	new_node text;
BEGIN
	SELECT s.node INTO old_node FROM mcc_proxy.shards s WHERE s.name = name;
	IF old_node IS NULL THEN
		RAISE EXCEPTION 'shard "%" does not exist', name USING ERRCODE = 'undefined_object';
	END IF;
	SELECT x INTO new_node FROM mcc_proxy._node_at(connstr) x;
	IF new_node <> old_node THEN
		RAISE EXCEPTION 'the new connection string of shard "%" reaches another database', name
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = pg_catalog.format('The shard is %s; the connection string reaches %s.', old_node, new_node);
	END IF;
	UPDATE mcc_proxy.shards s SET connstr = connstr WHERE s.name = name;
	RETURN new_node;
END $$;

COMMENT ON FUNCTION mcc_proxy.alter_shard(text, text) IS
	'change the connection string of a shard (it must reach the same database)';

-- Forget a shard that holds no partition.
CREATE FUNCTION mcc_proxy.remove_shard(name text) RETURNS void
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
BEGIN
	IF EXISTS (SELECT 1 FROM mcc_proxy.partitions p WHERE p.shard = name) THEN
		RAISE EXCEPTION 'shard "%" still holds partitions', name
			USING ERRCODE = 'object_in_use', HINT = 'Move them away with CALL mcc_proxy.move_partition().';
	END IF;
	DELETE FROM mcc_proxy.shards s WHERE s.name = name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'shard "%" does not exist', name USING ERRCODE = 'undefined_object';
	END IF;
END $$;

COMMENT ON FUNCTION mcc_proxy.remove_shard(text) IS 'forget a shard that holds no partition';

-- Create the partition map: nparts partitions (a power of two, more than
-- there are shards: PL/Proxy's FAQ advises 8 or 16 per few servers), given
-- round-robin to the shards in name order. Only once, before any gallery.
CREATE FUNCTION mcc_proxy.create_partitions(nparts integer DEFAULT 16)
	RETURNS TABLE(part integer, shard text)
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_column
DECLARE
	names text[];
BEGIN
	IF nparts IS NULL OR nparts <= 0 OR (nparts & (nparts - 1)) <> 0 THEN
		RAISE EXCEPTION 'the number of partitions must be a power of two'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = pg_catalog.format('It is %s.', nparts);
	END IF;
	IF EXISTS (SELECT 1 FROM mcc_proxy.partitions) THEN
		RAISE EXCEPTION 'the partition map exists already'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Partitions are moved (mcc_proxy.move_partition), never renumbered.';
	END IF;
	SELECT pg_catalog.array_agg(s.name ORDER BY s.name) INTO names FROM mcc_proxy.shards s;
	IF names IS NULL THEN
		RAISE EXCEPTION 'no shards' USING ERRCODE = 'object_not_in_prerequisite_state',
			HINT = 'Add shards with mcc_proxy.add_shard() first.';
	END IF;
	INSERT INTO mcc_proxy.partitions (part, shard)
		SELECT i, names[i % pg_catalog.cardinality(names) + 1] FROM pg_catalog.generate_series(0, nparts - 1) i;
	RETURN QUERY SELECT p.part, p.shard FROM mcc_proxy.partitions p ORDER BY p.part;
END $$;

COMMENT ON FUNCTION mcc_proxy.create_partitions(integer) IS
	'create the partition map: nparts (a power of two) partitions, round-robin over the shards';

-- Set an option of the cluster (NULL removes it): statement_timeout (ms) for
-- the shards' searches and enrolments; PL/Proxy's query_timeout,
-- connection_lifetime, keepalive_idle/interval/count (seconds) and
-- disable_binary.
CREATE FUNCTION mcc_proxy.set_option(key text, val text) RETURNS void
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
BEGIN
	DELETE FROM mcc_proxy.settings s WHERE s.key = key;
	IF val IS NOT NULL THEN
		INSERT INTO mcc_proxy.settings VALUES (key, val);
	END IF;
END $$;

COMMENT ON FUNCTION mcc_proxy.set_option(text, text) IS
	'set (or with NULL, remove) an option of the cluster: statement_timeout (ms, on the shards), or PL/Proxy''s query_timeout, connection_lifetime, disable_binary, keepalive_* (s)';

-- The rows of a sharded gallery, from the shards (the coordinator's view).
CREATE FUNCTION mcc_proxy.gallery_rows(remote_name text) RETURNS TABLE(id bigint, tpl mcc_template)
	LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT
	AS $$
DECLARE
	parts integer[] := mcc_proxy._all_parts();
	st text; msg text; det text; hnt text;
	r record;
BEGIN
	RETURN QUERY SELECT x.id, mcc_proxy.template_from_wire(x.wire) FROM mcc_proxy._rows(remote_name, parts) x;
EXCEPTION WHEN query_canceled OR others THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
		hnt = PG_EXCEPTION_HINT;
	-- a cancel or statement_timeout here (not relayed from a shard) ends the call
	IF st = '57014' AND mcc_proxy._remote_text(msg) = msg THEN
		RAISE;
	END IF;
	r := mcc_proxy._after_failure('gallery_rows', false, parts, '{}', st, msg, det, hnt);
END $$;

COMMENT ON FUNCTION mcc_proxy.gallery_rows(text) IS
	'all rows of a sharded gallery (by its name on the shards), read from the shards';

-- INSERT into a coordinator gallery view enrolls the row.
CREATE FUNCTION mcc_proxy._insert_trigger() RETURNS trigger
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
BEGIN
	PERFORM mcc_proxy.enroll(TG_RELID::regclass, NEW.id, NEW.tpl);
	RETURN NEW;
END $$;

-- Create sharded gallery name ("table" or "schema.table"): the partitioned
-- table on every shard, and here a view of the same name whose rows are
-- read from the shards (so that a plain SELECT, or mcc's own identify() on
-- it, is slow but never wrong) and through which INSERT enrolls.
CREATE FUNCTION mcc_proxy.create_gallery(name text) RETURNS regclass
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	ident text[] := pg_catalog.parse_ident(name);
	nsp text;
	rel text;
	remote text;
	nparts integer := pg_catalog.cardinality(mcc_proxy._all_parts());
	s record;
	vrel regclass;
BEGIN
	IF pg_catalog.cardinality(ident) = 1 THEN
		nsp := pg_catalog.current_schema();
		rel := ident[1];
	ELSIF pg_catalog.cardinality(ident) = 2 THEN
		nsp := ident[1];
		rel := ident[2];
	ELSE
		RAISE EXCEPTION 'gallery name "%" is not of the form [schema.]table', name
			USING ERRCODE = 'invalid_name';
	END IF;
	remote := pg_catalog.format('%I.%I', nsp, rel);
	FOR s IN SELECT * FROM mcc_proxy.shards ORDER BY 1 LOOP
		PERFORM mcc_proxy._create_gallery_at(s.connstr, remote, nparts);
	END LOOP;
	EXECUTE pg_catalog.format(
		'CREATE VIEW %I.%I AS SELECT r.id, r.tpl FROM mcc_proxy.gallery_rows(%L) r', nsp, rel, remote);
	vrel := remote::regclass;
	EXECUTE pg_catalog.format(
		'CREATE TRIGGER enroll INSTEAD OF INSERT ON %s FOR EACH ROW EXECUTE FUNCTION mcc_proxy._insert_trigger()',
		vrel);
	EXECUTE pg_catalog.format('COMMENT ON VIEW %s IS %L', vrel,
		'sharded gallery: rows on the shards of cluster mcc (mcc_proxy); identify() searches them in parallel');
	INSERT INTO mcc_proxy.galleries VALUES (vrel, remote);
	RETURN vrel;
END $$;

COMMENT ON FUNCTION mcc_proxy.create_gallery(text) IS
	'create a sharded gallery: the partitioned table on every shard, a view of the same name here';

-- Drop a sharded gallery: its table on every shard and the view here.
CREATE FUNCTION mcc_proxy.drop_gallery(gallery regclass) RETURNS void
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	remote text := mcc_proxy._sharded(gallery);
	s record;
BEGIN
	FOR s IN SELECT * FROM mcc_proxy.shards ORDER BY 1 LOOP
		PERFORM mcc_proxy._drop_gallery_at(s.connstr, remote);
	END LOOP;
	DELETE FROM mcc_proxy.galleries g WHERE g.gallery = gallery;
	EXECUTE pg_catalog.format('DROP VIEW %s', gallery);
END $$;

COMMENT ON FUNCTION mcc_proxy.drop_gallery(regclass) IS
	'drop a sharded gallery on every shard and its view here';

-- Let role search sharded gallery gallery through the coordinator and, with
-- enroll, enroll into it: SELECT (and INSERT) on the view here, and on every
-- shard the privileges mcc_shard.grant_gallery gives. The role must exist
-- on every node (the shards check privileges as the connecting user).
CREATE FUNCTION mcc_proxy.grant_gallery(gallery regclass, role name, enroll boolean DEFAULT false)
	RETURNS void
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	remote text := mcc_proxy._sharded(gallery);
	s record;
BEGIN
	FOR s IN SELECT * FROM mcc_proxy.shards sh ORDER BY sh.name LOOP
		PERFORM mcc_proxy._grant_gallery_at(s.connstr, remote, role, coalesce(enroll, false));
	END LOOP;
	EXECUTE pg_catalog.format('GRANT SELECT%s ON %s TO %I',
							  CASE WHEN enroll THEN ', INSERT' ELSE '' END, gallery, role);
END $$;

COMMENT ON FUNCTION mcc_proxy.grant_gallery(regclass, name, boolean) IS
	'let a role search (and with enroll, enroll into) a sharded gallery: grants here and on every shard';

-- ===========================================================================
-- Enrolment
-- ===========================================================================

-- Enroll templates[i] under ids[i] into sharded gallery gallery, each row on
-- the shard of its partition hashtext(id::text) & (nparts - 1); all shards
-- in parallel. With replace, an id already enrolled gets the new template;
-- without, it is an error (as INSERT on one server). Not atomic across
-- shards (PL/Proxy runs each shard's part in autocommit): after an error,
-- enrolling the same batch again with replace => true is safe. Returns the
-- number of rows written.
CREATE FUNCTION mcc_proxy.enroll(gallery regclass, ids bigint[], templates mcc_template[],
								 replace boolean DEFAULT false) RETURNS bigint
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	remote text := mcc_proxy._sharded(gallery);
	parts integer[];
	n bigint;
	st text; msg text; det text; hnt text;
	r record;
BEGIN
	IF pg_catalog.cardinality(ids) IS DISTINCT FROM pg_catalog.cardinality(templates) THEN
		RAISE EXCEPTION 'ids and templates must have the same number of elements'
			USING ERRCODE = 'array_subscript_error';
	END IF;
	IF pg_catalog.array_position(ids, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'ids must not contain nulls' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF pg_catalog.cardinality(ids) = 0 THEN
		RETURN 0;
	END IF;
	SELECT pg_catalog.array_agg(mcc_proxy.partition_of(u.id) ORDER BY u.ord) INTO parts
	FROM pg_catalog.unnest(ids) WITH ORDINALITY AS u(id, ord);
	-- a separate statement: in READ COMMITTED, PL/Proxy's map query below
	-- then sees a move that committed while this one waited for the lock
	PERFORM mcc_proxy._lock_partitions(parts);
	BEGIN
		SELECT pg_catalog.sum(x) INTO n
		FROM mcc_proxy._enroll(remote, parts, ids, mcc_proxy._wire(templates), coalesce(replace, false)) x;
	EXCEPTION WHEN query_canceled OR others THEN
		GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
			hnt = PG_EXCEPTION_HINT;
		-- a cancel or statement_timeout here (not relayed from a shard) ends the call
		IF st = '57014' AND mcc_proxy._remote_text(msg) = msg THEN
			RAISE;
		END IF;
		r := mcc_proxy._after_failure('enroll', false, parts, '{}', st, msg, det, hnt);
	END;
	RETURN n;
END $$;

COMMENT ON FUNCTION mcc_proxy.enroll(regclass, bigint[], mcc_template[], boolean) IS
	'enroll templates under ids into a sharded gallery, routed by hashtext(id::text); all shards in parallel';

CREATE FUNCTION mcc_proxy.enroll(gallery regclass, id bigint, template mcc_template,
								 replace boolean DEFAULT false) RETURNS bigint
	LANGUAGE sql
	AS $$ SELECT mcc_proxy.enroll(gallery, ARRAY[id], ARRAY[template], replace) $$;

COMMENT ON FUNCTION mcc_proxy.enroll(regclass, bigint, mcc_template, boolean) IS
	'enroll one template under id into a sharded gallery, on the shard of hashtext(id::text)';

-- Remove ids from sharded gallery gallery; returns the number of rows removed.
CREATE FUNCTION mcc_proxy.unenroll(gallery regclass, ids bigint[]) RETURNS bigint
	LANGUAGE plpgsql SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	remote text := mcc_proxy._sharded(gallery);
	parts integer[];
	n bigint;
	st text; msg text; det text; hnt text;
	r record;
BEGIN
	IF coalesce(pg_catalog.cardinality(ids), 0) = 0 THEN
		RETURN 0;
	END IF;
	SELECT pg_catalog.array_agg(mcc_proxy.partition_of(u.id) ORDER BY u.ord) INTO parts
	FROM pg_catalog.unnest(ids) WITH ORDINALITY AS u(id, ord);
	PERFORM mcc_proxy._lock_partitions(parts);
	BEGIN
		SELECT pg_catalog.sum(x) INTO n FROM mcc_proxy._unenroll(remote, parts, ids) x;
	EXCEPTION WHEN query_canceled OR others THEN
		GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
			hnt = PG_EXCEPTION_HINT;
		-- a cancel or statement_timeout here (not relayed from a shard) ends the call
		IF st = '57014' AND mcc_proxy._remote_text(msg) = msg THEN
			RAISE;
		END IF;
		r := mcc_proxy._after_failure('unenroll', false, parts, '{}', st, msg, det, hnt);
	END;
	RETURN n;
END $$;

COMMENT ON FUNCTION mcc_proxy.unenroll(regclass, bigint[]) IS 'remove ids from a sharded gallery';

CREATE FUNCTION mcc_proxy.unenroll(gallery regclass, id bigint) RETURNS bigint
	LANGUAGE sql
	AS $$ SELECT mcc_proxy.unenroll(gallery, ARRAY[id]) $$;

COMMENT ON FUNCTION mcc_proxy.unenroll(regclass, bigint) IS 'remove one id from a sharded gallery';

-- ===========================================================================
-- Identification
-- ===========================================================================

-- identify() with mcc's signature (plus partial): on a sharded gallery, the
-- shards' exact top-k lists merged into the global one; on any other
-- relation, mcc's own identify(). With mcc_proxy ahead of mcc's schema in
-- search_path, a plain identify(...) call is this one.
--
-- With refine (not 'none'), the answer of one server holding every row, in
-- two round trips: the shards count their rows (n), which gives the
-- shortlist size n' as mcc computes it; then every shard returns its best
-- n' rows by LSS (ties by the smaller id) with their LSS and refined
-- scores. The global best n' by LSS are among them (a shard's best n' hold
-- every row of the global best n' it has): the coordinator keeps those, and
-- of them the k best by refined score, at least min_score.
--
-- A shard that is down or times out is an error naming it. With partial =>
-- true, the result is the exact top-k of the shards that answered, with a
-- WARNING naming the missing partitions and shards (with refine: of a
-- gallery made of the rows of those shards).
CREATE FUNCTION mcc_proxy.identify(gallery regclass, probe mcc_template, k integer DEFAULT 10,
								   min_score real DEFAULT 0, id_column name DEFAULT NULL,
								   template_column name DEFAULT NULL, refine text DEFAULT 'none',
								   partial boolean DEFAULT false)
	RETURNS TABLE(id bigint, score real)
	LANGUAGE plpgsql VOLATILE ROWS 10 COST 10000 SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	remote text;
	parts integer[];
	reasons text[] := '{}';
	method text;
	n bigint;
	shortlist bigint;
	st text; msg text; det text; hnt text;
	r record;
BEGIN
	IF gallery IS NULL THEN
		PERFORM mcc_proxy._null_argument('identify', 'gallery');
	END IF;
	remote := mcc_proxy._remote_name(gallery);
	IF remote IS NULL THEN
		RETURN QUERY SELECT * FROM identify(gallery, probe, k, min_score, id_column, template_column, refine);
		RETURN;
	END IF;
	IF refine IS DISTINCT FROM 'none' THEN
		PERFORM FROM identify('mcc_proxy._no_rows'::regclass, probe, k, min_score, NULL, NULL, refine);
		method := mcc_proxy._refine_method(refine);
	END IF;
	parts := mcc_proxy._all_parts();
	LOOP
		BEGIN
			IF method IS NULL THEN
				RETURN QUERY
					SELECT x.id, x.score
					FROM mcc_proxy._search(remote, parts, mcc_template_send(probe), k, min_score, id_column,
										   template_column) x
					ORDER BY x.score DESC, x.id
					LIMIT greatest(k, 1);	-- the shards reject k < 1 as mcc's identify() does
			ELSE
				SELECT pg_catalog.sum(x) INTO n FROM mcc_proxy._count_rows(remote, parts) x;
				shortlist := mcc_proxy._shortlist(n, k);
				-- with n = 0 the shards have nothing; asking them for 1 row
				-- still has identify() check the column names there
				RETURN QUERY
					SELECT y.id, y.score
					FROM (SELECT x.id, x.score
						  FROM mcc_proxy._refine_search(remote, parts, mcc_template_send(probe),
														greatest(shortlist, 1)::integer, method, id_column,
														template_column) x
						  ORDER BY x.lss DESC, x.id
						  LIMIT greatest(shortlist, 1)) y
					WHERE y.score >= min_score
					ORDER BY y.score DESC, y.id
					LIMIT k;
			END IF;
			EXIT;
		EXCEPTION WHEN query_canceled OR others THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
				det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
			-- a cancel or statement_timeout here (not relayed from a shard) ends the call
			IF st = '57014' AND mcc_proxy._remote_text(msg) = msg THEN
				RAISE;
			END IF;
			r := mcc_proxy._after_failure('identify', coalesce(partial, false), parts, reasons,
										  st, msg, det, hnt);
			parts := r.remaining;
			reasons := r.all_reasons;
		END;
	END LOOP;
	IF pg_catalog.cardinality(reasons) > 0 THEN
		PERFORM mcc_proxy._warn_partial('identify', parts, reasons);
	END IF;
END $$;

COMMENT ON FUNCTION mcc_proxy.identify(regclass, mcc_template, integer, real, name, name, text, boolean) IS
	'identify() over a sharded gallery: every shard in parallel through PL/Proxy, the exact global top-k (ties by smaller id), refined as one server refines it; mcc''s identify() for other relations';

-- identify_batch() with mcc's signature (plus partial), as identify() above:
-- per probe (probe_no = position in probes), the exact global top-k; with
-- refine, one shortlist size n' for every probe, as in mcc.
CREATE FUNCTION mcc_proxy.identify_batch(gallery regclass, probes mcc_template[], k integer DEFAULT 10,
										 min_score real DEFAULT 0, id_column name DEFAULT NULL,
										 template_column name DEFAULT NULL, refine text DEFAULT 'none',
										 partial boolean DEFAULT false)
	RETURNS TABLE(probe_no integer, id bigint, score real)
	LANGUAGE plpgsql VOLATILE ROWS 100 COST 10000 SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	remote text;
	parts integer[];
	reasons text[] := '{}';
	method text;
	n bigint;
	shortlist bigint;
	st text; msg text; det text; hnt text;
	r record;
BEGIN
	IF gallery IS NULL THEN
		PERFORM mcc_proxy._null_argument('identify_batch', 'gallery');
	END IF;
	remote := mcc_proxy._remote_name(gallery);
	IF remote IS NULL THEN
		RETURN QUERY SELECT * FROM identify_batch(gallery, probes, k, min_score, id_column, template_column,
												  refine);
		RETURN;
	END IF;
	IF refine IS DISTINCT FROM 'none' THEN
		PERFORM FROM identify_batch('mcc_proxy._no_rows'::regclass, probes, k, min_score, NULL, NULL, refine);
		method := mcc_proxy._refine_method(refine);
	END IF;
	parts := mcc_proxy._all_parts();
	LOOP
		BEGIN
			IF method IS NULL THEN
				RETURN QUERY
					SELECT s.probe_no, s.id, s.score
					FROM (SELECT x.probe_no, x.id, x.score,
								 pg_catalog.row_number() OVER (PARTITION BY x.probe_no
															   ORDER BY x.score DESC, x.id) AS rank
						  FROM mcc_proxy._search_batch(remote, parts, mcc_proxy._wire(probes), k, min_score,
													   id_column, template_column) x) s
					WHERE s.rank <= k
					ORDER BY s.probe_no, s.score DESC, s.id;
			ELSE
				SELECT pg_catalog.sum(x) INTO n FROM mcc_proxy._count_rows(remote, parts) x;
				shortlist := mcc_proxy._shortlist(n, k);
				-- per probe: the best n' by LSS of every shard's, then the
				-- best k of them by refined score, at least min_score
				RETURN QUERY
					SELECT s.probe_no, s.id, s.score
					FROM (SELECT y.probe_no, y.id, y.score,
								 pg_catalog.row_number() OVER (PARTITION BY y.probe_no
															   ORDER BY y.score DESC, y.id) AS rank
						  FROM (SELECT x.probe_no, x.id, x.score,
									   pg_catalog.row_number() OVER (PARTITION BY x.probe_no
																	 ORDER BY x.lss DESC, x.id) AS lss_rank
								FROM mcc_proxy._refine_search_batch(remote, parts, mcc_proxy._wire(probes),
																	greatest(shortlist, 1)::integer, method,
																	id_column, template_column) x) y
						  WHERE y.lss_rank <= shortlist AND y.score >= min_score) s
					WHERE s.rank <= k
					ORDER BY s.probe_no, s.score DESC, s.id;
			END IF;
			EXIT;
		EXCEPTION WHEN query_canceled OR others THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
				det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
			-- a cancel or statement_timeout here (not relayed from a shard) ends the call
			IF st = '57014' AND mcc_proxy._remote_text(msg) = msg THEN
				RAISE;
			END IF;
			r := mcc_proxy._after_failure('identify_batch', coalesce(partial, false), parts, reasons,
										  st, msg, det, hnt);
			parts := r.remaining;
			reasons := r.all_reasons;
		END;
	END LOOP;
	IF pg_catalog.cardinality(reasons) > 0 THEN
		PERFORM mcc_proxy._warn_partial('identify_batch', parts, reasons);
	END IF;
END $$;

COMMENT ON FUNCTION mcc_proxy.identify_batch(regclass, mcc_template[], integer, real, name, name, text, boolean) IS
	'identify_batch() over a sharded gallery: per probe the exact global top-k, every shard in parallel, refined as one server refines it';

-- ===========================================================================
-- Monitoring
-- ===========================================================================

-- Every shard: its partitions, whether it answers, its node.
CREATE FUNCTION mcc_proxy.cluster_status()
	RETURNS TABLE(shard text, partitions integer[], answers boolean, node text, error text)
	LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT
	AS $$
DECLARE
	s record;
	saved text := pg_catalog.current_setting('client_min_messages');
BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	FOR s IN SELECT sh.name, sh.connstr,
					(SELECT pg_catalog.array_agg(p.part ORDER BY p.part) FROM mcc_proxy.partitions p
					 WHERE p.shard = sh.name) AS parts
			 FROM mcc_proxy.shards sh ORDER BY sh.name LOOP
		shard := s.name;
		partitions := coalesce(s.parts, '{}');
		error := NULL;
		BEGIN
			IF s.parts IS NULL THEN
				SELECT x INTO node FROM mcc_proxy._node_at(s.connstr) x;
			ELSE
				SELECT x INTO node FROM mcc_proxy._ping(s.parts[1]) x;
			END IF;
			answers := true;
		EXCEPTION WHEN others THEN
			answers := false;
			node := NULL;
			error := pg_catalog.rtrim(SQLERRM, E'\n');
		END;
		RETURN NEXT;
	END LOOP;
	PERFORM pg_catalog.set_config('client_min_messages', saved, true);
END $$;

COMMENT ON FUNCTION mcc_proxy.cluster_status() IS
	'every shard, its partitions, and whether it answers now';

-- Row count and digest of every partition of a sharded gallery, read from
-- the shard that answers for it.
CREATE FUNCTION mcc_proxy.gallery_stats(gallery regclass)
	RETURNS TABLE(part integer, shard text, nrows bigint, checksum text)
	LANGUAGE sql VOLATILE
	AS $$
	SELECT s.part, p.shard, s.nrows, s.checksum
	FROM mcc_proxy._partition_stats(mcc_proxy._sharded(gallery), mcc_proxy._all_parts()) s
	JOIN mcc_proxy.partitions p ON p.part = s.part
	ORDER BY s.part
$$;

COMMENT ON FUNCTION mcc_proxy.gallery_stats(regclass) IS
	'row count and order-independent md5 digest of every partition of a sharded gallery, from its shard';

-- Where the rows of a sharded gallery physically are: every non-empty
-- partition on every shard, and whether that shard answers for it (a copy
-- it does not answer for is never searched; mcc_proxy.cleanup() removes it).
CREATE FUNCTION mcc_proxy.gallery_placement(gallery regclass)
	RETURNS TABLE(shard text, part integer, nrows bigint, answers_for boolean)
	LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT
	AS $$
#variable_conflict use_column
DECLARE
	remote text := mcc_proxy._sharded(gallery);
	s record;
BEGIN
	FOR s IN SELECT * FROM mcc_proxy.shards sh ORDER BY sh.name LOOP
		RETURN QUERY
			SELECT s.name, n.part, n.nrows,
				   EXISTS (SELECT 1 FROM mcc_proxy.partitions p WHERE p.part = n.part AND p.shard = s.name)
			FROM mcc_proxy._nonempty_at(s.connstr, remote) n
			ORDER BY n.part;
	END LOOP;
END $$;

COMMENT ON FUNCTION mcc_proxy.gallery_placement(regclass) IS
	'every non-empty partition of a sharded gallery on every shard, and whether that shard answers for it';

-- ===========================================================================
-- Rebalancing
-- ===========================================================================

-- Wait until no other session of this database holds a snapshot that may
-- not see transaction horizon (backend_xmin <= horizon): such a session may
-- still route by the map horizon changed. False after timeout.
CREATE FUNCTION mcc_proxy._wait_for_snapshots(horizon xid8, timeout interval) RETURNS boolean
	LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT
	AS $$
DECLARE
	deadline timestamptz := pg_catalog.clock_timestamp() + timeout;
BEGIN
	IF horizon IS NULL THEN
		RETURN true;
	END IF;
	LOOP
		PERFORM pg_catalog.pg_stat_clear_snapshot();
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
					   WHERE a.pid <> pg_catalog.pg_backend_pid()
						 AND a.datname = pg_catalog.current_database()
						 AND a.backend_type = 'client backend'
						 AND a.backend_xmin IS NOT NULL
						 AND pg_catalog.age(a.backend_xmin) >= pg_catalog.age(pg_catalog.xid(horizon))) THEN
			RETURN true;
		END IF;
		IF pg_catalog.clock_timestamp() > deadline THEN
			RETURN false;
		END IF;
		PERFORM pg_catalog.pg_sleep(0.02);
	END LOOP;
END $$;

-- connstr with user=<current user> appended when it names none (as
-- PL/Proxy does), for a shard that connects to another one with dblink.
CREATE FUNCTION mcc_proxy._with_user(connstr text) RETURNS text
	LANGUAGE sql STABLE
	AS $$
	SELECT CASE WHEN connstr ~ '(^|\s)user\s*=' THEN connstr
				ELSE connstr || ' user=''' ||
					 pg_catalog.replace(pg_catalog.replace(current_user::text, '\', '\\'), '''', '\''') || ''''
		   END
$$;

-- Move partition part, of every sharded gallery, to shard to_shard:
--   1. lock the partition's map entry (enrolments into it wait);
--   2. per gallery, the destination copies the partition from the source in
--      one transaction (dblink), and the copy's row count and digest must
--      equal the source's, else the copy is emptied and the move stops;
--   3. the map switches to the destination (COMMIT): from then on queries
--      read the new copy; before, they read the old one, never both;
--   4. once no session can still route by the old map (no snapshot older
--      than the switch; at most wait_timeout), the old copy is emptied.
-- Queries go on during the whole move. A procedure: CALL it outside an
-- explicit transaction block.
CREATE PROCEDURE mcc_proxy.move_partition(part integer, to_shard text,
										  wait_timeout interval DEFAULT '10 min')
	LANGUAGE plpgsql
	AS $$
#variable_conflict use_variable
DECLARE
	src text;
	src_conn text;
	dst_conn text;
	src_node text;
	dst_node text;
	last_move xid8;
	switch_xid xid8;
	nparts integer := pg_catalog.cardinality(mcc_proxy._all_parts());
	galleries text[];
	g text;
	a record;
	b record;
	total bigint := 0;
BEGIN
	SELECT p.shard, s.connstr, p.moved_xid INTO src, src_conn, last_move
	FROM mcc_proxy.partitions p JOIN mcc_proxy.shards s ON s.name = p.shard WHERE p.part = part;
	IF src IS NULL THEN
		RAISE EXCEPTION 'partition % does not exist', part USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT s.connstr INTO dst_conn FROM mcc_proxy.shards s WHERE s.name = to_shard;
	IF dst_conn IS NULL THEN
		RAISE EXCEPTION 'shard "%" does not exist', to_shard USING ERRCODE = 'undefined_object';
	END IF;
	IF src = to_shard THEN
		RAISE NOTICE 'partition % is on shard "%" already', part, to_shard;
		RETURN;
	END IF;
	SELECT x INTO src_node FROM mcc_proxy._node_at(src_conn) x;
	SELECT x INTO dst_node FROM mcc_proxy._node_at(dst_conn) x;
	IF src_node = dst_node THEN
		RAISE EXCEPTION 'shards "%" and "%" are the same database (%)', src, to_shard, src_node
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- a session older than the partition's last move may still read the
	-- destination's old copy, which the copy below replaces
	IF NOT mcc_proxy._wait_for_snapshots(last_move, wait_timeout) THEN
		RAISE EXCEPTION 'sessions older than the last move of partition % still run', part
			USING ERRCODE = 'lock_not_available';
	END IF;

	-- 1. lock, and read the map again under the lock
	SELECT p.shard INTO src FROM mcc_proxy.partitions p WHERE p.part = part FOR UPDATE;
	IF src = to_shard THEN
		RAISE NOTICE 'partition % is on shard "%" already', part, to_shard;
		RETURN;
	END IF;
	SELECT s.connstr INTO src_conn FROM mcc_proxy.shards s WHERE s.name = src;
	SELECT pg_catalog.array_agg(gg.remote_name ORDER BY gg.remote_name) INTO galleries
	FROM mcc_proxy.galleries gg;

	-- 2. copy and verify
	FOREACH g IN ARRAY coalesce(galleries, '{}') LOOP
		PERFORM mcc_proxy._create_gallery_at(dst_conn, g, nparts);
		SELECT * INTO b FROM mcc_proxy._pull_partition_at(dst_conn, g, part, mcc_proxy._with_user(src_conn));
		SELECT * INTO a FROM mcc_proxy._partition_stats(g, ARRAY[part]);
		IF a.nrows IS DISTINCT FROM b.nrows OR a.checksum IS DISTINCT FROM b.checksum THEN
			PERFORM mcc_proxy._truncate_at(dst_conn, g, ARRAY[part]);
			RAISE EXCEPTION 'copy of partition % of gallery % from "%" to "%" differs from the original',
				part, g, src, to_shard
				USING ERRCODE = 'data_corrupted',
					  DETAIL = pg_catalog.format('Source: %s rows, digest %s; copy: %s rows, digest %s. The copy was removed and the map is unchanged.',
												 a.nrows, a.checksum, b.nrows, b.checksum);
		END IF;
		total := total + a.nrows;
		RAISE NOTICE 'partition % of %: % rows copied from "%" to "%", digests equal (%)',
			part, g, a.nrows, src, to_shard, a.checksum;
	END LOOP;

	-- 3. switch
	UPDATE mcc_proxy.partitions p SET shard = to_shard, moved_xid = pg_catalog.pg_current_xact_id()
	WHERE p.part = part
	RETURNING p.moved_xid INTO switch_xid;
	COMMIT;

	-- 4. remove the old copy once nobody can read it
	IF NOT mcc_proxy._wait_for_snapshots(switch_xid, wait_timeout) THEN
		RAISE NOTICE 'partition % moved to "%"; its old copy on "%" stays until CALL mcc_proxy.cleanup(): sessions older than the move still run',
			part, to_shard, src;
		RETURN;
	END IF;
	FOREACH g IN ARRAY coalesce(galleries, '{}') LOOP
		PERFORM mcc_proxy._truncate_at(src_conn, g, ARRAY[part]);
	END LOOP;
	RAISE NOTICE 'partition % moved from "%" to "%" (% rows)', part, src, to_shard, total;
END $$;

COMMENT ON PROCEDURE mcc_proxy.move_partition(integer, text, interval) IS
	'move a partition of every sharded gallery to another shard: copy, verify count and digest, switch the map, then remove the old copy';

-- Remove copies of partitions from shards that do not answer for them (left
-- by a move that stopped or did not finish), once no session can still read
-- them. Returns through NOTICEs what it removed.
CREATE PROCEDURE mcc_proxy.cleanup(wait_timeout interval DEFAULT '10 min')
	LANGUAGE plpgsql
	AS $$
DECLARE
	horizon xid8;
	s record;
	g record;
	stale integer[];
	removed bigint;
BEGIN
	SELECT pg_catalog.max(p.moved_xid::text::numeric)::text::xid8 INTO horizon FROM mcc_proxy.partitions p;
	IF NOT mcc_proxy._wait_for_snapshots(horizon, wait_timeout) THEN
		RAISE EXCEPTION 'sessions older than the last move still run' USING ERRCODE = 'lock_not_available';
	END IF;
	-- no move, enrolment or other cleanup while removing
	PERFORM 1 FROM mcc_proxy.partitions p ORDER BY p.part FOR UPDATE;
	FOR s IN SELECT * FROM mcc_proxy.shards sh ORDER BY sh.name LOOP
		FOR g IN SELECT * FROM mcc_proxy.galleries gg ORDER BY gg.remote_name LOOP
			-- partitions moved after the wait above are left for next time
			SELECT pg_catalog.array_agg(n.part ORDER BY n.part) INTO stale
			FROM mcc_proxy._nonempty_at(s.connstr, g.remote_name) n
			JOIN mcc_proxy.partitions p ON p.part = n.part
			WHERE p.shard <> s.name
			  AND (p.moved_xid IS NULL OR p.moved_xid::text::numeric <= horizon::text::numeric);
			IF stale IS NOT NULL THEN
				SELECT x INTO removed FROM mcc_proxy._truncate_at(s.connstr, g.remote_name, stale) x;
				RAISE NOTICE 'shard "%": removed % rows of gallery % in partitions % it does not answer for',
					s.name, removed, g.remote_name, stale;
			END IF;
		END LOOP;
	END LOOP;
END $$;

COMMENT ON PROCEDURE mcc_proxy.cleanup(interval) IS
	'remove partition copies from shards that do not answer for them, once no session can read them';

-- Moves that even out the number of partitions per shard (after adding a
-- shard, or before removing one that was given no partitions in the plan's
-- exclude list): from the shards with the most, highest partitions first.
CREATE FUNCTION mcc_proxy.rebalance_plan(exclude text[] DEFAULT '{}')
	RETURNS TABLE(part integer, from_shard text, to_shard text)
	LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
	AS $$
#variable_conflict use_column
DECLARE
	shard_names text[];
	nshards integer;
	nparts integer := pg_catalog.cardinality(mcc_proxy._all_parts());
	want integer[];
	have integer[];
	i integer;
	j integer;
	p record;
BEGIN
	SELECT pg_catalog.array_agg(s.name ORDER BY s.name) INTO shard_names
	FROM mcc_proxy.shards s WHERE s.name <> ALL (coalesce(exclude, '{}'));
	nshards := coalesce(pg_catalog.cardinality(shard_names), 0);
	IF nshards = 0 THEN
		RAISE EXCEPTION 'no shard to place partitions on' USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	FOR i IN 1 .. nshards LOOP
		want[i] := nparts / nshards + CASE WHEN i <= nparts % nshards THEN 1 ELSE 0 END;
		have[i] := (SELECT pg_catalog.count(*) FROM mcc_proxy.partitions q WHERE q.shard = shard_names[i]);
	END LOOP;
	FOR p IN SELECT q.part, q.shard FROM mcc_proxy.partitions q ORDER BY q.part DESC LOOP
		i := pg_catalog.array_position(shard_names, p.shard);
		IF i IS NOT NULL AND have[i] <= want[i] THEN
			CONTINUE;
		END IF;
		SELECT x.n INTO j FROM pg_catalog.generate_series(1, nshards) AS x(n)
		WHERE have[x.n] < want[x.n] ORDER BY have[x.n] - want[x.n], x.n LIMIT 1;
		IF j IS NULL THEN
			CONTINUE;
		END IF;
		IF i IS NOT NULL THEN
			have[i] := have[i] - 1;
		END IF;
		have[j] := have[j] + 1;
		part := p.part;
		from_shard := p.shard;
		to_shard := shard_names[j];
		RETURN NEXT;
	END LOOP;
END $$;

COMMENT ON FUNCTION mcc_proxy.rebalance_plan(text[]) IS
	'the partition moves that even out partitions over the shards (not in exclude)';

-- Carry out rebalance_plan(exclude), one move_partition at a time.
CREATE PROCEDURE mcc_proxy.rebalance(exclude text[] DEFAULT '{}', wait_timeout interval DEFAULT '10 min')
	LANGUAGE plpgsql
	AS $$
DECLARE
	plan record;
	moves integer[];
	targets text[];
	i integer;
BEGIN
	SELECT pg_catalog.array_agg(r.part ORDER BY r.part), pg_catalog.array_agg(r.to_shard ORDER BY r.part)
	INTO moves, targets FROM mcc_proxy.rebalance_plan(exclude) r;
	FOR i IN 1 .. coalesce(pg_catalog.cardinality(moves), 0) LOOP
		CALL mcc_proxy.move_partition(moves[i], targets[i], wait_timeout);
	END LOOP;
END $$;

COMMENT ON PROCEDURE mcc_proxy.rebalance(text[], interval) IS
	'move partitions until every shard (not in exclude) holds as many as the others, give or take one';

REVOKE ALL ON FUNCTION mcc_proxy.add_shard(text, text), mcc_proxy.alter_shard(text, text),
	mcc_proxy.remove_shard(text),
	mcc_proxy.create_partitions(integer), mcc_proxy.set_option(text, text),
	mcc_proxy.create_gallery(text), mcc_proxy.drop_gallery(regclass),
	mcc_proxy.grant_gallery(regclass, name, boolean),
	mcc_proxy.gallery_placement(regclass) FROM PUBLIC;
REVOKE ALL ON PROCEDURE mcc_proxy.move_partition(integer, text, interval),
	mcc_proxy.cleanup(interval), mcc_proxy.rebalance(text[], interval) FROM PUBLIC;
