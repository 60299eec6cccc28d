-- mcc_proxy 0.1.0 -> 0.2.0: identify() and identify_batch() follow mcc
-- 0.2.0: refine defaults to NULL, which means the coordinator's
-- mcc.refine_method ('fused' unless changed), so a sharded gallery gives by
-- default the refined answer one server gives.
\echo Use "ALTER EXTENSION mcc_proxy UPDATE TO '0.2.0'" to load this file. \quit

-- As in mcc_proxy--0.1.0.sql: the functions below capture this search_path,
-- mcc's schema first, so that an unqualified identify() in them is mcc's
-- (with mcc_proxy first it would be the proxy's own, calling itself).
SELECT pg_catalog.set_config('search_path',
	(SELECT pg_catalog.quote_ident(n.nspname)
	 FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
	 WHERE e.extname = 'mcc') || ', mcc_proxy, pg_catalog', true);

CREATE OR REPLACE FUNCTION mcc_proxy.identify(gallery regclass, probe mcc_template, k integer DEFAULT 10,
								   min_score real DEFAULT 0, id_column name DEFAULT NULL,
								   template_column name DEFAULT NULL, refine text DEFAULT NULL,
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
	-- mcc's checks of the arguments (and its library, whose setting names
	-- the default refinement)
	PERFORM FROM identify('mcc_proxy._no_rows'::regclass, probe, k, min_score, NULL, NULL, refine);
	refine := coalesce(refine, pg_catalog.current_setting('mcc.refine_method'));
	IF refine IS DISTINCT FROM 'none' THEN
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
	'identify() over a sharded gallery: every shard in parallel through PL/Proxy, the exact global top-k (ties by smaller id), refined as one server refines it (refine NULL: mcc.refine_method); mcc''s identify() for other relations';

CREATE OR REPLACE FUNCTION mcc_proxy.identify_batch(gallery regclass, probes mcc_template[], k integer DEFAULT 10,
										 min_score real DEFAULT 0, id_column name DEFAULT NULL,
										 template_column name DEFAULT NULL, refine text DEFAULT NULL,
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
	-- mcc's checks of the arguments (and its library, whose setting names
	-- the default refinement)
	PERFORM FROM identify_batch('mcc_proxy._no_rows'::regclass, probes, k, min_score, NULL, NULL, refine);
	refine := coalesce(refine, pg_catalog.current_setting('mcc.refine_method'));
	IF refine IS DISTINCT FROM 'none' THEN
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
	'identify_batch() over a sharded gallery: per probe the exact global top-k, every shard in parallel, refined as one server refines it (refine NULL: mcc.refine_method)';

-- Progress of a rebalance (issue 18): a NOTICE before each move says which
-- move of how many it is; move_partition's own NOTICEs say the rows copied.
CREATE OR REPLACE PROCEDURE mcc_proxy.rebalance(exclude text[] DEFAULT '{}', wait_timeout interval DEFAULT '10 min')
	LANGUAGE plpgsql
	AS $$
DECLARE
	moves integer[];
	targets text[];
	sources text[];
	n integer;
	i integer;
	t0 timestamptz := pg_catalog.clock_timestamp();
BEGIN
	SELECT pg_catalog.array_agg(r.part ORDER BY r.part), pg_catalog.array_agg(r.to_shard ORDER BY r.part),
		   pg_catalog.array_agg(r.from_shard ORDER BY r.part)
	INTO moves, targets, sources FROM mcc_proxy.rebalance_plan(exclude) r;
	n := coalesce(pg_catalog.cardinality(moves), 0);
	FOR i IN 1 .. n LOOP
		RAISE NOTICE 'rebalance: move % of %: partition % from "%" to "%" (% s so far)', i, n, moves[i],
			sources[i], targets[i],
			pg_catalog.round(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - t0)::numeric, 1);
		CALL mcc_proxy.move_partition(moves[i], targets[i], wait_timeout);
	END LOOP;
	RAISE NOTICE 'rebalance: % move(s) done', n;
END $$;

COMMENT ON PROCEDURE mcc_proxy.rebalance(text[], interval) IS
	'move partitions until every shard (not in exclude) holds as many as the others, give or take one; a NOTICE per move says which of how many';
