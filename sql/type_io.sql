-- type_io: text and binary I/O of mcc_template

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- a small template: 5 minutiae of both forms (array and object), keys out of
-- canonical order, defaults (type "other", quality 0, dpi 500, gpu2015)
SELECT '{"minutiae": [[100, 100, 0.5],
                      {"theta": 1.5, "x": 150, "y": 120, "type": "ending", "quality": 60},
                      [120, 180, 3, "bifurcation", 90],
                      [200, 150, 4.5, "ending"],
                      [170, 60, 6.25, "other", 100]],
         "height": 250, "width": 300}'::mcc_template;

-- canonical output reads back to itself
CREATE TABLE io (id int PRIMARY KEY, t mcc_template);
INSERT INTO io VALUES
	(1, '{"width":300,"height":250,"minutiae":[[100,100,0.5],[150,120,1.5,"ending",60],[120,180,3,"bifurcation",90]]}'),
	(2, '{"profile":"tpami2010","width":388,"height":374,"dpi":569,"minutiae":[[10,20,0.1,"ending",1],[387,373,6.2831,"bifurcation",100],[0,0,0]]}'),
	(3, '{"profile":"gpu2015","width":1,"height":1,"dpi":1,"minutiae":[[0,0,3.14159265358979]]}'),
	(4, '{"width":16383,"height":16383,"dpi":10000,"minutiae":[[16382,16382,1e-7,"other",0]]}');
SELECT id, t FROM io ORDER BY id;
SELECT id, t::text = t::text::mcc_template::text AS stable FROM io ORDER BY id;

-- theta: the float nearest the input, printed with the fewest digits
SELECT '{"width":10,"height":10,"minutiae":[[1,1,0.1],[2,2,0.30000001192092896],[3,3,6.283185]]}'::mcc_template;

-- casts to and from json and jsonb
SELECT t::json FROM io WHERE id = 1;
SELECT t::jsonb FROM io WHERE id = 1;
SELECT (t::json)::mcc_template::text = t::text AS json_ok,
	   (t::jsonb)::mcc_template::text = t::text AS jsonb_ok
FROM io ORDER BY id;
SELECT '{"width":300,"height":250,"minutiae":[[100,100,0.5]]}'::json::mcc_template;
SELECT '{"width":300,"height":250,"minutiae":[[100,100,0.5]]}'::jsonb::mcc_template;
-- assignment casts
CREATE TABLE io_json (j json, jb jsonb);
INSERT INTO io_json VALUES ('{"width":30,"height":20,"minutiae":[[1,2,3]]}',
							'{"width":30,"height":20,"minutiae":[[1,2,3]]}');
INSERT INTO io (id, t) SELECT 5, j FROM io_json;
INSERT INTO io (id, t) SELECT 6, jb FROM io_json;
SELECT id, t FROM io WHERE id IN (5, 6) ORDER BY id;
DELETE FROM io WHERE id IN (5, 6);

-- text input errors
SELECT ''::mcc_template;
SELECT v.input, t.state, t.message, t.detail FROM (VALUES
	(1, ''),
	(2, '{'),
	(3, '[]'),
	(4, '{"width":10,"height":10,"minutiae":[[1,1,0.5]]} x'),
	(5, '{"width":10,"height":10,"minutiae":[[1,1,0.5]],"colour":"red"}'),
	(6, '{"width":10,"width":10,"height":10,"minutiae":[[1,1,0.5]]}'),
	(7, '{"height":10,"minutiae":[[1,1,0.5]]}'),
	(8, '{"width":10,"height":10}'),
	(9, '{"width":10,"height":10,"minutiae":[]}'),
	(10, '{"profile":"nist","width":10,"height":10,"minutiae":[[1,1,0.5]]}'),
	(11, '{"width":10,"height":10,"minutiae":[[1,1,NaN]]}'),
	(12, '{"width":10,"height":10,"minutiae":[[1,1,0.5,"loop"]]}'),
	(13, '{"width":10,"height":10,"minutiae":[[10,1,0.5]]}')
) AS v(ord, input), LATERAL try(format('SELECT %L::mcc_template', v.input)) t
ORDER BY v.ord;

-- binary I/O: COPY BINARY round trip (NULLs included)
INSERT INTO io VALUES (7, NULL);
CREATE TABLE io2 (id int PRIMARY KEY, t mcc_template);
\copy io TO 'results/mcc_template.bin' WITH (FORMAT binary)
\copy io2 FROM 'results/mcc_template.bin' WITH (FORMAT binary)
SELECT id, io2.t::text = io.t::text AS same_text,
	   mcc_template_send(io2.t) = mcc_template_send(io.t) AS same_binary,
	   (SELECT array_agg(c ORDER BY c::text) FROM mcc_cylinders(io2.t) c) IS NOT DISTINCT FROM
	   (SELECT array_agg(c ORDER BY c::text) FROM mcc_cylinders(io.t) c) AS same_cylinders,
	   io2.t IS NULL AS is_null
FROM io JOIN io2 USING (id) ORDER BY id;

-- the wire form: version 1, profile 1, width 300, height 250, dpi 500,
-- 3 minutiae of 10 bytes (x, y, theta as float4 bits, type, quality)
SELECT mcc_template_send(t) FROM io WHERE id = 1;
SELECT length(mcc_template_send(t)) FROM io ORDER BY id;

-- binary input errors: crafted values written as bytea with COPY BINARY
-- (a bytea field's binary form is its raw bytes) and read back as templates
CREATE TABLE crafted (ord serial, name text, b bytea);
CREATE TABLE landing (name text, t mcc_template);
INSERT INTO crafted (name, b)
SELECT v.name, v.b
FROM (SELECT mcc_template_send(t) AS s FROM io WHERE id = 1) good,
LATERAL (VALUES
	('good',            s),
	('empty',           '\x'::bytea),
	('version 0',       overlay(s placing '\x00' from 1 for 1)),
	('version 2',       overlay(s placing '\x02' from 1 for 1)),
	('version only',    '\x01'::bytea),
	('profile 3',       overlay(s placing '\x03' from 2 for 1)),
	('short header',    substr(s, 1, 9)),
	('257 minutiae',    overlay(s placing '\x0101' from 9 for 2)),
	('count 4',         overlay(s placing '\x0004' from 9 for 2)),
	('count 0',         substr(overlay(s placing '\x0000' from 9 for 2), 1, 10)),
	('cut minutia',     substr(s, 1, length(s) - 1)),
	('trailing byte',   s || '\x00'::bytea),
	('count 2',         overlay(s placing '\x0002' from 9 for 2)),
	('width 0',         overlay(s placing '\x0000' from 3 for 2)),
	('dpi 0',           overlay(s placing '\x0000' from 7 for 2)),
	('x 300',           overlay(s placing '\x012c' from 11 for 2)),
	('x -1',            overlay(s placing '\xffff' from 11 for 2)),
	('theta NaN',       overlay(s placing '\x7fc00000' from 15 for 4)),
	('theta 2pi',       overlay(s placing '\x40c90fdb' from 15 for 4)),
	('theta -0.5',      overlay(s placing '\xbf000000' from 15 for 4)),
	('type 3',          overlay(s placing '\x03' from 19 for 1)),
	('quality 101',     overlay(s placing '\x65' from 20 for 1))
) AS v(name, b);

-- the good value lands; a bad one fails the COPY
CREATE TABLE one (b bytea);
INSERT INTO one SELECT b FROM crafted WHERE name = 'good';
\copy one TO 'results/crafted.bin' WITH (FORMAT binary)
\copy landing (t) FROM 'results/crafted.bin' WITH (FORMAT binary)
SELECT t::text = (SELECT t::text FROM io WHERE id = 1) AS good FROM landing;
DELETE FROM one;
INSERT INTO one SELECT b FROM crafted WHERE name = 'version 2';
\copy one TO 'results/crafted.bin' WITH (FORMAT binary)
\copy landing (t) FROM 'results/crafted.bin' WITH (FORMAT binary)

-- every crafted value through a server-side COPY BINARY, one at a time
CREATE FUNCTION recv_check(payload bytea, OUT state text, OUT message text, OUT detail text)
LANGUAGE plpgsql AS $$
DECLARE
	f text := current_setting('data_directory') || '/mcc_crafted.bin';
BEGIN
	DELETE FROM one;
	INSERT INTO one VALUES (payload);
	EXECUTE format('COPY one TO %L WITH (FORMAT binary)', f);
	DELETE FROM landing;
	EXECUTE format('COPY landing (t) FROM %L WITH (FORMAT binary)', f);
	state := '00000';
	SELECT t::text INTO message FROM landing;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL;
END
$$;
SELECT c.name, r.* FROM crafted c, LATERAL recv_check(c.b) r ORDER BY c.ord;

-- the storage parameters of the type
SELECT typname, typlen, typalign, typstorage FROM pg_type WHERE typname = 'mcc_template';

DROP FUNCTION try(text), sqlstate_of(text), recv_check(bytea);
DROP TABLE io, io2, io_json, crafted, landing, one;
