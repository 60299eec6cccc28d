-- mcc 0.1.0 -> 0.2.0 (docs/upgrades.md). CREATE EXTENSION mcc installs
-- 0.1.0 and runs this script; ALTER EXTENSION mcc UPDATE runs it on an
-- existing 0.1.0 installation. Every object new or changed in 0.2.0 is
-- defined here, once; sections follow the subsystem that owns them.
\echo Use "ALTER EXTENSION mcc UPDATE TO '0.2.0'" to load this file. \quit

-- ===========================================================================
-- Matcher service: sharing it between roles, and progress of long work
-- (src/service_*.c, src/image_engine.c; docs/matcher-service.md, "Sharing
-- the service"; docs/sql-reference.md, "Matcher service")
-- ===========================================================================

-- The role whose members may register galleries (a registered gallery
-- takes a slot and cache memory of the one matcher service of the cluster)
-- and run image and point jobs in the matcher engine; superusers may
-- anyway. Roles belong to the cluster: another database's CREATE EXTENSION
-- may have made it already, and DROP EXTENSION leaves it (grants to it may
-- still matter in other databases).
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'mcc_service_user') THEN
		CREATE ROLE mcc_service_user NOLOGIN;
		COMMENT ON ROLE mcc_service_user IS
			'members may register galleries with the mcc matcher service (slots and cache memory) and run image jobs in its engine';
	END IF;
END
$$;

-- An update from 0.1.0 keeps every registered gallery served: owners of
-- galleries registered in this database join the role (superusers need not).
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT DISTINCT c.relowner
		FROM @extschema@.mcc_galleries g
		JOIN pg_catalog.pg_class c ON c.oid = g.gallery::pg_catalog.oid
		WHERE NOT pg_catalog.pg_has_role(c.relowner, 'mcc_service_user', 'USAGE')
	LOOP
		EXECUTE pg_catalog.format('GRANT mcc_service_user TO %I',
								  pg_catalog.pg_get_userbyid(r.relowner));
	END LOOP;
END
$$;

-- Priorities: when cache memory or slots run short, a gallery may evict
-- only galleries of lower priority, or of equal priority used less
-- recently. pg_dump keeps the column with the registrations.
ALTER TABLE mcc_galleries ADD COLUMN priority integer NOT NULL DEFAULT 0;

COMMENT ON COLUMN mcc_galleries.priority IS
'which caches give way first when the matcher service runs short of memory or slots: lower priority first, then the least recently used (set with mcc_gallery_set_priority)';

-- VOLATILE: writes mcc_galleries. Not for PUBLIC: the DBA grants it to
-- whoever may decide whose cache stays.
CREATE FUNCTION mcc_gallery_set_priority(gallery regclass, priority integer)
RETURNS void
AS 'MODULE_PATHNAME', 'mcc_gallery_set_priority'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

REVOKE EXECUTE ON FUNCTION mcc_gallery_set_priority(regclass, integer) FROM PUBLIC;

COMMENT ON FUNCTION mcc_gallery_set_priority(regclass, integer) IS
'sets a registered gallery''s priority: under memory or slot pressure a gallery evicts only galleries of lower priority, or of equal priority used less recently (EXECUTE granted by the DBA)';

COMMENT ON FUNCTION mcc_gallery_register(regclass, name, name) IS
'registers a gallery with the matcher service: records its key and template columns and installs the change triggers on it and its partitions (needs ownership, and the caller and the owner must be members of mcc_service_user; run again after adding partitions)';

COMMENT ON FUNCTION mcc_gallery_preload(regclass) IS
'loads a registered gallery into the matcher engine''s cache now (its owner: a full reload; others: only a stale or missing cache); returns the rows the caller can see; NOTICEs of progress every mcc.progress_interval';

-- The status function gains the priority and the progress of a load in
-- progress, and shows only galleries the caller may read (all of them to
-- roles with the privileges of pg_read_all_stats), so that its view can be
-- PUBLIC. New OUT columns: the view and the function are made again.
DROP VIEW mcc_gallery_status;
DROP FUNCTION mcc_gallery_status_rows();

CREATE FUNCTION mcc_gallery_status_rows(
	OUT gallery regclass, OUT id_column name, OUT template_column name, OUT state text,
	OUT generation bigint, OUT cached_generation bigint, OUT profile text,
	OUT entries bigint, OUT searchable bigint, OUT cylinders bigint,
	OUT host_bytes bigint, OUT device_bytes bigint, OUT device text,
	OUT loaded_at timestamptz, OUT load_seconds double precision,
	OUT load_rate double precision, OUT searches bigint,
	OUT priority integer, OUT loading_pid integer, OUT load_rows bigint,
	OUT load_rows_total bigint, OUT load_rows_per_second double precision,
	OUT load_expected_end timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_gallery_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_status_rows() IS
'one row per registered gallery of the current database that the caller may read, with the state of its matcher cache and of a load in progress (the mcc_gallery_status view)';

CREATE VIEW mcc_gallery_status AS SELECT * FROM mcc_gallery_status_rows();

GRANT SELECT ON mcc_gallery_status TO PUBLIC;

COMMENT ON VIEW mcc_gallery_status IS
'registered galleries the caller may read and their matcher caches: state, generations, entries, cylinders, memory, device, last load time and rate, searches, priority, and a load in progress (rows, total, rate, expected end)';

-- mcc_service_status gains the engine's memory, evictions and image jobs.
DROP FUNCTION mcc_service_status();

CREATE FUNCTION mcc_service_status(
	OUT state text, OUT supervisor_pid integer, OUT engine_pid integer,
	OUT incarnation bigint, OUT restarts integer, OUT ready_since timestamptz,
	OUT socket text, OUT cache_bytes bigint, OUT cache_limit bigint,
	OUT evictions bigint, OUT image_threads integer, OUT image_queue integer,
	OUT image_jobs integer, OUT image_progress double precision, OUT image_gpu boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_service_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION mcc_service_status() IS
'state of the matcher service: supervisor and engine processes, incarnation, restarts, cache memory used and allowed, caches evicted for room, image threads, the image jobs admitted and their progress, whether image jobs have a GPU';
