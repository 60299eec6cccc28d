-- The change log for hot standbys (docs/deployment.md): opt-in per gallery,
-- off by default; mcc_gallery_register(change_log =>) and
-- mcc_gallery_set_change_log() turn it on (with a reload entry as the
-- standbys' start point) and off; what the triggers log; pruning by
-- mcc_change_log_prune() (here without replication slots: age alone);
-- privileges and errors with their SQLSTATEs. The standbys' side is TAP
-- test/t/service_standby.pl.

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- a gallery's log, in order, without the volatile columns
CREATE VIEW log_of AS
	SELECT gallery::regclass AS gallery, op, key, template IS NOT NULL AS has_template
	FROM mcc_change_log ORDER BY gallery, gen;

CREATE TABLE cl (id bigint PRIMARY KEY, tpl mcc_template);
INSERT INTO cl SELECT finger, template FROM mcc_synthetic(4, 1, 3);

-- registered without the argument: off, nothing logged
SELECT mcc_gallery_register('cl');
SELECT change_log FROM mcc_galleries WHERE gallery = 'cl'::regclass;
INSERT INTO cl SELECT 10 + finger, template FROM mcc_synthetic(2, 1, 5);
SELECT count(*) FROM mcc_change_log;

-- on: a reload entry first, then every row version written
SELECT mcc_gallery_set_change_log('cl', true);
SELECT change_log FROM mcc_galleries WHERE gallery = 'cl'::regclass;
INSERT INTO cl SELECT 20 + finger, template FROM mcc_synthetic(2, 1, 6);
UPDATE cl SET tpl = (SELECT tpl FROM cl WHERE id = 0) WHERE id = 1;
DELETE FROM cl WHERE id = 2;
SELECT * FROM log_of;
-- positions increase, one transaction id per statement's entries
SELECT count(DISTINCT gen) = count(*) AS distinct_positions FROM mcc_change_log;
-- an aborted write leaves no entry a snapshot sees
BEGIN;
DELETE FROM cl WHERE id = 3;
ROLLBACK;
SELECT count(*) FROM mcc_change_log WHERE op = 'd' AND key = 3;

-- registering again keeps the setting unless told
SELECT mcc_gallery_register('cl');
SELECT change_log FROM mcc_galleries WHERE gallery = 'cl'::regclass;
SELECT mcc_gallery_register('cl', change_log => false);
SELECT change_log FROM mcc_galleries WHERE gallery = 'cl'::regclass;
DELETE FROM cl WHERE id = 3;
SELECT count(*) FROM mcc_change_log WHERE key = 3;
-- and a new registration with the log on starts it with a reload entry
CREATE TABLE cl2 (id bigint PRIMARY KEY, tpl mcc_template);
SELECT mcc_gallery_register('cl2', change_log => true);
INSERT INTO cl2 SELECT finger, template FROM mcc_synthetic(1, 1, 7);
SELECT * FROM log_of WHERE gallery = 'cl2'::regclass;
-- TRUNCATE logs a reload entry
TRUNCATE cl2;
SELECT op FROM mcc_change_log WHERE gallery = 'cl2'::regclass ORDER BY gen DESC LIMIT 1;

-- pruning: nothing younger than older_than, and each gallery's last entry stays
SELECT mcc_change_log_prune('1 hour');
SELECT mcc_change_log_prune('0');
SELECT * FROM log_of;
SELECT bool_and(p.upto < l.gen) AS heads_above_pruned
FROM mcc_change_log_pruned p JOIN mcc_change_log l USING (gallery);
-- NULL: the retention setting (10 minutes where unset)
SELECT mcc_change_log_prune(NULL);
SELECT mcc_change_log_prune();

-- errors, with their SQLSTATE; a bad call changes nothing
CREATE TABLE unreg (id bigint PRIMARY KEY, tpl mcc_template);
SELECT sqlstate_of($$SELECT mcc_gallery_set_change_log('unreg', true)$$);
SELECT sqlstate_of($$SELECT mcc_gallery_set_change_log('no_such_table', true)$$);
SELECT sqlstate_of($$SELECT mcc_gallery_set_change_log(0, true)$$);
SELECT sqlstate_of($$SELECT mcc_change_log_prune('-1 minute')$$);
SELECT mcc_gallery_set_change_log(NULL, true) IS NULL AS strict_null,
	   mcc_gallery_set_change_log('cl', NULL) IS NULL AS strict_null2;
SELECT change_log FROM mcc_galleries WHERE gallery = 'cl'::regclass;
SELECT count(*) FROM mcc_change_log WHERE gallery = 'unreg'::regclass;

-- privileges: only the gallery's owner switches its log; the log and the
-- pruning are the extension's (not for PUBLIC)
CREATE ROLE regress_mcc_clog;
GRANT SELECT, INSERT, DELETE ON cl TO regress_mcc_clog;
SET ROLE regress_mcc_clog;
SELECT sqlstate_of($$SELECT mcc_gallery_set_change_log('cl', true)$$);
SELECT sqlstate_of($$SELECT mcc_change_log_prune('0')$$);
SELECT sqlstate_of($$DELETE FROM mcc_change_log$$);
SELECT sqlstate_of($$INSERT INTO mcc_change_log_pruned VALUES (1, 1)$$);
-- writing to a gallery whose log is on needs no right on the log
RESET ROLE;
SELECT mcc_gallery_set_change_log('cl', true);
SET ROLE regress_mcc_clog;
INSERT INTO cl SELECT 30 + finger, template FROM mcc_synthetic(1, 1, 8);
RESET ROLE;
SELECT op, key FROM mcc_change_log WHERE gallery = 'cl'::regclass ORDER BY gen DESC LIMIT 2;
-- off again: the next writes are not logged
SELECT mcc_gallery_set_change_log('cl', false);
DELETE FROM cl WHERE id = 30;
SELECT count(*) FROM mcc_change_log WHERE key = 30 AND op = 'd';

SELECT mcc_gallery_unregister('cl'), mcc_gallery_unregister('cl2');
DROP TABLE cl, cl2, unreg;
DROP ROLE regress_mcc_clog;
DROP VIEW log_of;
DROP FUNCTION try(text), sqlstate_of(text);
