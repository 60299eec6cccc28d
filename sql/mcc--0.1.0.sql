-- Matcher service (src/service_*.c, docs/matcher-service.md)

-- Registered galleries. pg_dump keeps the rows (pg_extension_config_dump);
-- the gallery column is a regclass so that a restore maps it to the new OID.
-- Written only by mcc_gallery_register()/unregister() and the drop trigger.
CREATE TABLE mcc_galleries (
	gallery regclass PRIMARY KEY,
	id_column name NOT NULL,
	template_column name NOT NULL,
	registered_at timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('mcc_galleries', '');
GRANT SELECT ON mcc_galleries TO PUBLIC;

COMMENT ON TABLE mcc_galleries IS
'galleries registered with the matcher service: their key and template columns';

-- Statement-level change capture of registered galleries (installed by
-- mcc_gallery_register on the gallery and every partition).
CREATE FUNCTION mcc_gallery_trigger() RETURNS trigger
AS 'MODULE_PATHNAME', 'mcc_gallery_trigger'
LANGUAGE C;

COMMENT ON FUNCTION mcc_gallery_trigger() IS
'change trigger of registered galleries: collects inserted and deleted rows and sends them to the matcher engine at commit';

-- VOLATILE: writes mcc_galleries and creates triggers. Needs ownership of the gallery.
CREATE FUNCTION mcc_gallery_register(gallery regclass, id_column name DEFAULT NULL,
									 template_column name DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'mcc_gallery_register'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_register(regclass, name, name) IS
'registers a gallery with the matcher service: records its key and template columns and installs the change triggers on it and its partitions (needs ownership; run again after adding partitions)';

CREATE FUNCTION mcc_gallery_unregister(gallery regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mcc_gallery_unregister'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_unregister(regclass) IS
'removes a gallery''s registration, its change triggers and its cache (needs ownership); false if it was not registered';

CREATE FUNCTION mcc_gallery_preload(gallery regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'mcc_gallery_preload'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_preload(regclass) IS
'loads a registered gallery into the matcher engine''s cache now; returns the cached tuple versions';

CREATE FUNCTION mcc_gallery_evict(gallery regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mcc_gallery_evict'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_evict(regclass) IS
'drops the matcher engine''s cache of a gallery (needs ownership); the next identify() reloads it';

CREATE FUNCTION mcc_gallery_status_rows(
	OUT gallery regclass, OUT id_column name, OUT template_column name, OUT state text,
	OUT generation bigint, OUT cached_generation bigint, OUT profile text,
	OUT entries bigint, OUT searchable bigint, OUT cylinders bigint,
	OUT host_bytes bigint, OUT device_bytes bigint, OUT device text,
	OUT loaded_at timestamptz, OUT load_seconds double precision,
	OUT load_rate double precision, OUT searches bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_gallery_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION mcc_gallery_status_rows() IS
'one row per registered gallery of the current database with the state of its matcher cache (the mcc_gallery_status view)';

CREATE VIEW mcc_gallery_status AS SELECT * FROM mcc_gallery_status_rows();

COMMENT ON VIEW mcc_gallery_status IS
'registered galleries and their matcher caches: state, generations, entries, cylinders, memory, device, last load time and rate, searches';

CREATE FUNCTION mcc_service_status(
	OUT state text, OUT supervisor_pid integer, OUT engine_pid integer,
	OUT incarnation bigint, OUT restarts integer, OUT ready_since timestamptz,
	OUT socket text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mcc_service_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION mcc_service_status() IS
'state of the matcher service: supervisor and engine processes, incarnation, restarts';

-- Like identify(): STABLE, reads with the statement's snapshot, PARALLEL UNSAFE.
CREATE FUNCTION identify_batch(gallery regclass, probes mcc_template[], k int DEFAULT 10,
							   min_score real DEFAULT 0, id_column name DEFAULT NULL,
							   template_column name DEFAULT NULL)
RETURNS TABLE(probe_no int, id bigint, score real)
AS 'MODULE_PATHNAME', 'mcc_identify_batch'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL UNSAFE ROWS 100 COST 10000;

COMMENT ON FUNCTION identify_batch(regclass, mcc_template[], int, real, name, name) IS
'1:N identification of several probes in one pass over the gallery: per probe (probe_no = position in the array) the k best rows as identify() returns them';

-- Forget registrations of dropped galleries (it writes mcc_galleries as the
-- table's owner, whoever drops the gallery).
CREATE FUNCTION mcc_gallery_dropped() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'mcc_gallery_dropped'
LANGUAGE C SET search_path = pg_catalog, pg_temp;

COMMENT ON FUNCTION mcc_gallery_dropped() IS
'sql_drop event trigger: forgets the registrations of dropped galleries and evicts their caches';

CREATE EVENT TRIGGER mcc_gallery_drop ON sql_drop
	EXECUTE FUNCTION mcc_gallery_dropped();

COMMENT ON EVENT TRIGGER mcc_gallery_drop IS
'forgets registrations of dropped galleries';
