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

-- The refinement (docs/scale-out.md, "Refinement"): each shard counts its
-- partitions' rows (its matcher engine's count) and, in the same statement,
-- its partitions rescore their own shortlists with mcc's
-- identify_shortlist() and return only the rows that can matter, with the
-- keys around each partition's expected share of the global shortlist.
DROP FUNCTION mcc_proxy._refine_search(text, integer[], bytea, integer, text, name, name);
DROP FUNCTION mcc_proxy._refine_search_batch(text, integer[], bytea[], integer, text, name, name);
DROP FUNCTION mcc_proxy._count_rows(text, integer[]);

-- A row of mcc_shard.refine_rows: probe_no 0 a partition's (pos its rows,
-- lo and hi its window), id NULL a list's length (pos), else a row of a
-- probe's list (lo and hi NULL).
CREATE TYPE mcc_proxy._refine_row AS (probe_no integer, part integer, id bigint, lss real, score real,
									  pos bigint, lo bigint, hi bigint);

CREATE FUNCTION mcc_proxy._refine_rows(gallery text, parts integer[], upto bigint[], window_from bigint[],
									   probes bytea[], k integer, method text, id_column name,
									   template_column name, fraction float8, refine_min bigint,
									   factor float8, nparts integer)
	RETURNS SETOF mcc_proxy._refine_row
	LANGUAGE plproxy
	AS $$
	CLUSTER 'mcc';
	SPLIT parts, upto, window_from;
	RUN ON parts;
	TARGET mcc_shard.refine_rows;
$$;

-- How many of the global shortlist's n' rows each partition holds (len),
-- per probe, from the shards' refine_rows: r the rows, whose partition
-- rows say each partition's window, rows window_from lo to upto hi of its
-- shortlist (which holds min(rows, hi) rows, the count row's pos). The
-- n'-th row overall, c, is found among the windows: every partition must
-- be known to hold all its rows before its window before c (lo 0, or its
-- first window row not after c) and none after its window (none exist, or
-- its last window row is not before c); then len = lo + its window rows up
-- to c. len is NULL for every partition of a probe where that cannot be
-- shown: asked again with the whole shortlists (lo 0, hi n') it always can.
CREATE FUNCTION mcc_proxy._refine_cut(r mcc_proxy._refine_row[], shortlist bigint)
	RETURNS TABLE(probe_no integer, part integer, len bigint)
	LANGUAGE sql IMMUTABLE
	AS $$
	WITH x AS (SELECT * FROM pg_catalog.unnest(r) WHERE probe_no > 0),
	w AS (SELECT y.part, y.lo, y.hi FROM pg_catalog.unnest(r) y WHERE y.probe_no = 0),
	p AS (
		SELECT c.probe_no, c.part, LEAST(w.lo, c.pos) AS a, LEAST(w.hi, c.pos) AS b,
			   (c.pos < w.hi OR w.hi >= shortlist) AS complete
		FROM x c JOIN w ON w.part = c.part
		WHERE c.id IS NULL),
	win AS (
		SELECT x.probe_no, x.part, x.id, x.lss, x.pos
		FROM x JOIN p ON p.probe_no = x.probe_no AND p.part = x.part
		WHERE x.id IS NOT NULL AND x.pos >= p.a AND x.pos < p.b),
	need AS (
		SELECT p.probe_no, shortlist - pg_catalog.sum(p.a) AS r,
			   pg_catalog.bool_and(p.complete) AND pg_catalog.sum(p.b) <= shortlist AS all_in
		FROM p GROUP BY p.probe_no),
	cut AS (
		SELECT s.probe_no, s.lss, s.id
		FROM (SELECT win.probe_no, win.lss, win.id,
					 pg_catalog.row_number() OVER (PARTITION BY win.probe_no ORDER BY win.lss DESC, win.id) AS rn
			  FROM win) s
		JOIN need ON need.probe_no = s.probe_no
		WHERE NOT need.all_in AND s.rn = need.r),
	-- per partition, in one pass over the windows: its first window row not
	-- after the cutoff, its last not before it, its rows up to the cutoff
	seen AS (
		SELECT w.probe_no, w.part,
			   pg_catalog.bool_or(w.pos = p.a AND (w.lss > c.lss OR (w.lss = c.lss AND w.id <= c.id))) AS first_ok,
			   pg_catalog.bool_or(w.pos = p.b - 1 AND (w.lss < c.lss OR (w.lss = c.lss AND w.id >= c.id))) AS last_ok,
			   pg_catalog.count(*) FILTER (WHERE w.lss > c.lss OR (w.lss = c.lss AND w.id <= c.id)) AS upto
		FROM win w JOIN p ON p.probe_no = w.probe_no AND p.part = w.part
			 JOIN cut c ON c.probe_no = w.probe_no
		GROUP BY w.probe_no, w.part),
	len AS (
		SELECT p.probe_no, p.part,
			   CASE WHEN need.all_in THEN p.b
					WHEN cut.id IS NULL THEN NULL
					WHEN (p.a = 0 OR coalesce(seen.first_ok, false))
					 AND (p.complete OR coalesce(seen.last_ok, false))
					THEN p.a + coalesce(seen.upto, 0)
			   END AS len
		FROM p JOIN need ON need.probe_no = p.probe_no
			 LEFT JOIN cut ON cut.probe_no = p.probe_no
			 LEFT JOIN seen ON seen.probe_no = p.probe_no AND seen.part = p.part)
	SELECT l.probe_no, l.part,
		   CASE WHEN pg_catalog.bool_and(l.len IS NOT NULL) OVER (PARTITION BY l.probe_no) THEN l.len END
	FROM len l
$$;

-- The refined answer over partitions parts (docs/scale-out.md,
-- "Refinement"): per probe, the k best by refined score (at least
-- min_score, ties by id) of the n' best rows by LSS of all of them, n' from
-- their row count and this session's settings. One call per shard counts
-- its partitions' rows and searches them in one statement: each partition
-- is asked for its first e + w rows and the window from e - w, e its
-- expected share of n' (estimated on the shard from its own rows,
-- mcc_shard._windows), w = ceil(f * (sqrt(e) + 4)), f =
-- mcc_proxy.refine_window (default 4: four standard deviations of a share
-- of rows placed at random, as the hash of the id places them); the counts
-- that come back give n and n'. When some probe's cutoff cannot be placed,
-- every probe is asked again with whole shortlists of that n'; rows added
-- meanwhile never make that n' larger (the first call's count stands then).
CREATE FUNCTION mcc_proxy._refined(remote text, parts integer[], probes mcc_template[], k integer,
								   min_score real, method text, id_column name, template_column name)
	RETURNS TABLE(probe_no integer, id bigint, score real)
	LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT
	AS $$
#variable_conflict use_column
DECLARE
	factor float8 := coalesce(NULLIF(pg_catalog.current_setting('mcc_proxy.refine_window', true), '')::float8,
							  4);
	fraction float8 := pg_catalog.current_setting('mcc.refine_fraction')::float8;
	refine_min bigint := pg_catalog.current_setting('mcc.refine_min')::bigint;
	nparts integer := pg_catalog.cardinality(parts);
	n bigint;
	shortlist bigint;
	whole bigint;
	upto bigint[] := pg_catalog.array_fill(NULL::bigint, ARRAY[nparts]);
	window_from bigint[] := upto;
	wire bytea[] := mcc_proxy._wire(probes);
	rows mcc_proxy._refine_row[];
	cuts mcc_proxy._refine_row[];		-- pos: len of _refine_cut
	attempt integer;
BEGIN
	FOR attempt IN 1 .. 2 LOOP
		rows := ARRAY(SELECT x FROM mcc_proxy._refine_rows(remote, parts, upto, window_from, wire, k, method,
														   id_column, template_column, fraction, refine_min,
														   factor, nparts) x);
		SELECT coalesce(pg_catalog.sum(x.pos), 0) INTO n FROM pg_catalog.unnest(rows) x WHERE x.probe_no = 0;
		shortlist := LEAST(mcc_proxy._shortlist(n, k), whole);
		cuts := ARRAY(SELECT ROW(c.probe_no, c.part, NULL, NULL, NULL, c.len, NULL, NULL)::mcc_proxy._refine_row
					  FROM mcc_proxy._refine_cut(rows, shortlist) c);
		IF NOT EXISTS (SELECT FROM pg_catalog.unnest(cuts) c WHERE c.pos IS NULL) THEN
			RETURN QUERY
				SELECT y.probe_no, y.id, y.score
				FROM (SELECT x.probe_no, x.id, x.score,
							 pg_catalog.row_number() OVER (PARTITION BY x.probe_no ORDER BY x.score DESC, x.id) AS rank
					  FROM pg_catalog.unnest(rows) x
						   JOIN pg_catalog.unnest(cuts) c ON c.probe_no = x.probe_no AND c.part = x.part
					  WHERE x.probe_no > 0 AND x.id IS NOT NULL AND x.pos < c.pos AND x.score >= min_score) y
				WHERE y.rank <= k
				ORDER BY y.probe_no, y.score DESC, y.id;
			RETURN;
		END IF;
		RAISE DEBUG 'mcc_proxy: a refinement cutoff fell outside the windows; asking for whole shortlists';
		whole := shortlist;
		window_from := pg_catalog.array_fill(0::bigint, ARRAY[nparts]);
		upto := pg_catalog.array_fill(shortlist, ARRAY[nparts]);
	END LOOP;
	RAISE EXCEPTION 'mcc_proxy: the refinement cutoff was not found in whole shortlists'
		USING ERRCODE = 'internal_error';
END $$;

-- identify() (batch false: probes holds its one probe, probe_no 1) and
-- identify_batch() with mcc's signature: mcc's own for a relation that is
-- not a sharded gallery; else, once mcc has checked the arguments (against
-- the empty _no_rows), over every shard in parallel, per probe (probe_no =
-- position in probes) the exact global top-k by LSS, or with a refinement
-- (refine NULL: mcc.refine_method) the refined answer (_refined). A
-- shard's failure is retried without its partitions, or ends the call, as
-- partial says (_after_failure).
CREATE FUNCTION mcc_proxy._identify_any(batch boolean, gallery regclass, probes mcc_template[], k integer,
										min_score real, id_column name, template_column name, refine text,
										partial boolean)
	RETURNS TABLE(probe_no integer, id bigint, score real)
	LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT
	AS $$
#variable_conflict use_variable
DECLARE
	fn text := CASE WHEN batch THEN 'identify_batch' ELSE 'identify' END;
	remote text;
	parts integer[];
	reasons text[] := '{}';
	method text;
	st text; msg text; det text; hnt text;
	r record;
BEGIN
	IF gallery IS NULL THEN
		PERFORM mcc_proxy._null_argument(fn, 'gallery');
	END IF;
	remote := mcc_proxy._remote_name(gallery);
	IF remote IS NULL AND batch THEN
		RETURN QUERY SELECT * FROM identify_batch(gallery, probes, k, min_score, id_column, template_column,
												  refine);
		RETURN;
	ELSIF remote IS NULL THEN
		RETURN QUERY SELECT 1, t.id, t.score
					 FROM identify(gallery, probes[1], k, min_score, id_column, template_column, refine) t;
		RETURN;
	END IF;
	-- mcc's checks of the arguments (and its library, whose setting names
	-- the default refinement)
	IF batch THEN
		PERFORM FROM identify_batch('mcc_proxy._no_rows'::regclass, probes, k, min_score, NULL, NULL, refine);
	ELSE
		PERFORM FROM identify('mcc_proxy._no_rows'::regclass, probes[1], k, min_score, NULL, NULL, refine);
	END IF;
	refine := coalesce(refine, pg_catalog.current_setting('mcc.refine_method'));
	IF refine IS DISTINCT FROM 'none' THEN
		method := mcc_proxy._refine_method(refine);
	END IF;
	-- LSS rescored with LSS: the k best of n' >= k by LSS are the k best by LSS
	IF method = 'lss' THEN
		method := NULL;
	END IF;
	parts := mcc_proxy._all_parts();
	LOOP
		BEGIN
			IF method IS NOT NULL THEN
				RETURN QUERY
					SELECT x.probe_no, x.id, x.score
					FROM mcc_proxy._refined(remote, parts, probes, k, min_score, method, id_column,
											template_column) x;
			ELSIF batch THEN
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
				RETURN QUERY
					SELECT 1, x.id, x.score
					FROM mcc_proxy._search(remote, parts, mcc_template_send(probes[1]), k, min_score,
										   id_column, template_column) x
					ORDER BY x.score DESC, x.id
					LIMIT greatest(k, 1);	-- the shards reject k < 1 as mcc's identify() does
			END IF;
			EXIT;
		EXCEPTION WHEN query_canceled OR others THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
				det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
			-- a cancel or statement_timeout here (not relayed from a shard) ends the call
			IF st = '57014' AND mcc_proxy._remote_text(msg) = msg THEN
				RAISE;
			END IF;
			r := mcc_proxy._after_failure(fn, coalesce(partial, false), parts, reasons, st, msg, det, hnt);
			parts := r.remaining;
			reasons := r.all_reasons;
		END;
	END LOOP;
	IF pg_catalog.cardinality(reasons) > 0 THEN
		PERFORM mcc_proxy._warn_partial(fn, parts, reasons);
	END IF;
END $$;

CREATE OR REPLACE FUNCTION mcc_proxy.identify(gallery regclass, probe mcc_template, k integer DEFAULT 10,
								   min_score real DEFAULT 0, id_column name DEFAULT NULL,
								   template_column name DEFAULT NULL, refine text DEFAULT NULL,
								   partial boolean DEFAULT false)
	RETURNS TABLE(id bigint, score real)
	LANGUAGE sql VOLATILE ROWS 10 COST 10000 SET search_path FROM CURRENT
	AS $$
	SELECT x.id, x.score
	FROM mcc_proxy._identify_any(false, gallery, ARRAY[probe], k, min_score, id_column, template_column, refine,
								 partial) x
$$;

COMMENT ON FUNCTION mcc_proxy.identify(regclass, mcc_template, integer, real, name, name, text, boolean) IS
	'identify() over a sharded gallery: every shard in parallel through PL/Proxy, the exact global top-k (ties by smaller id), refined as one server refines it (refine NULL: mcc.refine_method); mcc''s identify() for other relations';

CREATE OR REPLACE FUNCTION mcc_proxy.identify_batch(gallery regclass, probes mcc_template[], k integer DEFAULT 10,
										 min_score real DEFAULT 0, id_column name DEFAULT NULL,
										 template_column name DEFAULT NULL, refine text DEFAULT NULL,
										 partial boolean DEFAULT false)
	RETURNS TABLE(probe_no integer, id bigint, score real)
	LANGUAGE sql VOLATILE ROWS 100 COST 10000 SET search_path FROM CURRENT
	AS $$
	SELECT x.probe_no, x.id, x.score
	FROM mcc_proxy._identify_any(true, gallery, probes, k, min_score, id_column, template_column, refine,
								 partial) x
$$;

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
