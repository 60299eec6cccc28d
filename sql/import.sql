-- import: constructors from ISO/ANSI records, xyt and JSON, exporters, and
-- every class of malformed input

-- try(stmt) and sqlstate_of(stmt): a statement's error, if any
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/try.sql

-- Records crafted by hand, 3 minutiae each on a 300x300 image at 197 px/cm:
--   (100, 100) ending, angle 90 degrees, quality 50
--   (150, 120) bifurcation, 180 degrees, quality 80
--   (120, 180) other, 0 degrees, quality 0
CREATE TABLE rec (name text PRIMARY KEY, r bytea);
-- (decode(..., 'hex') skips the white space)
INSERT INTO rec VALUES
	-- ISO/IEC 19794-2:2005: 24-byte header (4-byte length 0x30 = 48), one
	-- 4-byte view header, 6-byte minutiae (type:2|x:14, y:14, angle in
	-- units of 360/256 degrees, quality), 2-byte extended data length
	('iso2005', decode('464d5200 20323000 00000030 0000 012c 012c 00c5 00c5 01 00
		00 00 3c 03
		4064 0064 40 32
		8096 0078 80 50
		0078 00b4 00 00
		0000', 'hex')),
	-- ANSI/INCITS 378-2004: 26-byte header (2-byte length 0x32 = 50, CBEFF
	-- product id), angle unit 2 degrees
	('ansi2004', decode('464d5200 20323000 0032 00000000 0000 012c 012c 00c5 00c5 01 00
		00 00 3c 03
		4064 0064 2d 32
		8096 0078 5a 50
		0078 00b4 00 00
		0000', 'hex')),
	-- ISO/IEC 19794-2:2011: 15-byte header (length 0x43 = 67, one
	-- representation, no certification), a representation of 0x34 = 52
	-- bytes: length, unknown capture time, device ids, no quality blocks,
	-- finger position, representation number, resolution, impression type,
	-- image size, minutia field length 6 / ridge ending type 0, count
	('iso2011', decode('464d5200 30333000 00000043 0001 00
		00000034 ffffffffffffffffff 00 0000 0000 00
		00 00 00c5 00c5 00 012c 012c 60 03
		4064 0064 40 32
		8096 0078 80 50
		0078 00b4 00 00
		0000', 'hex')),
	-- ANSI/INCITS 378-2009: 21-byte header (length 0x3a = 58, CBEFF product
	-- id 0103:0000, not certified, device id 0, one view), a view of 17
	-- bytes with its own image (position, view number, impression, finger
	-- quality 254 = not reported, quality algorithm 0103:0001, size,
	-- resolution, count), angle unit 2 degrees, minutia quality 254 = not
	-- reported (read as 0)
	('ansi2009', decode('464d5200 30333000 0000003a 0103 0000 00 0000 01 00
		00 00 00 fe 0103 0001 012c 012c 00c5 00c5 03
		4064 0064 2d 32
		8096 0078 5a 50
		0078 00b4 00 fe
		0000', 'hex'));

SELECT name, mcc_template_from_iso(r) FROM rec ORDER BY name;
SELECT name, mcc_template_info(mcc_template_from_iso(r)) FROM rec ORDER BY name;
SELECT name, mcc_profile(mcc_template_from_iso(r, 1, 'tpami2010')) FROM rec ORDER BY name;
-- zero padding after the record (SDK buffers) is ignored
SELECT mcc_template_from_iso(r || '\x000000'::bytea)::text = mcc_template_from_iso(r)::text AS padded_ok
FROM rec ORDER BY name;

-- export and re-import: minutiae in the record's own angle unit come back
-- byte for byte; only the finger quality (a template keeps none) is 0
SELECT mcc_template_to_iso(mcc_template_from_iso(r)) = overlay(r placing '\x00' from 27 for 1) AS iso_round_trip
FROM rec WHERE name = 'iso2005';
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'ansi2004') = overlay(r placing '\x00' from 29 for 1) AS ansi_round_trip
FROM rec WHERE name = 'ansi2004';
-- ISO 2011 and ANSI 2009 write quality 0 ("not given") as 254 ("not
-- reported"), which reads back as 0
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'iso2011') = overlay(r placing '\xfe' from 65 for 1) AS iso2011_round_trip
FROM rec WHERE name = 'iso2011';
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'ansi2009') = r AS ansi2009_round_trip
FROM rec WHERE name = 'ansi2009';
SELECT mcc_template_to_iso(mcc_template_from_iso(r)) FROM rec WHERE name = 'iso2011';
SELECT f, mcc_template_from_iso(mcc_template_to_iso(t, f))::text = t::text AS same
FROM (SELECT mcc_template_from_iso(r) AS t FROM rec WHERE name = 'iso2005') s,
	 (VALUES ('iso2005'), ('iso2011'), ('ansi2004'), ('ansi2009')) AS v(f) ORDER BY f;
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'iso2011') FROM rec WHERE name = 'iso2005';
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'ansi2009') FROM rec WHERE name = 'iso2005';

-- malformed records, each derived from the valid ISO 2005 record
CREATE TABLE bad_rec (ord serial, name text, r bytea);
INSERT INTO bad_rec (name, r)
SELECT v.name, v.r
FROM (SELECT r AS good FROM rec WHERE name = 'iso2005') g,
LATERAL (VALUES
	('bad magic',         overlay(good placing 'FMX' from 1 for 3)),
	('bad version',       overlay(good placing '099' from 5 for 3)),
	('empty',             '\x'::bytea),
	('header only',       substr(good, 1, 20)),
	('truncated',         substr(good, 1, 40)),
	-- tolerated: the views end exactly where the data ends (mcc_iso.c)
	('length too small',  overlay(good placing '\x00000020' from 9 for 4)),
	('length too large',  overlay(good placing '\x00000040' from 9 for 4)),
	('no views',          overlay(good placing '\x00' from 23 for 1)),
	('two views',         overlay(good placing '\x02' from 23 for 1)),
	('count 5',           overlay(good placing '\x05' from 28 for 1)),
	('count 2',           overlay(good placing '\x02' from 28 for 1)),
	-- a consistent record of one view without minutiae (length 30)
	('no minutiae',       overlay(overlay(substr(good, 1, 28) || '\x0000'::bytea
							  placing '\x00' from 28 for 1) placing '\x0000001e' from 9 for 4)),
	('x outside',         overlay(good placing '\x412c' from 29 for 2)),
	('y outside',         overlay(good placing '\x012c' from 31 for 2)),
	('width 0',           overlay(good placing '\x0000' from 15 for 2)),
	('resolution 0',      overlay(good placing '\x0000' from 19 for 2)),
	('extended data cut', overlay(good placing '\x0010' from 47 for 2))
) AS v(name, r);
SELECT b.name, t.state, t.message, t.detail FROM bad_rec b,
	LATERAL try(format('SELECT mcc_template_from_iso(%L::bytea)', b.r)) t
ORDER BY b.ord;
-- view numbers count from 1 up to the record's view count; profiles,
-- formats
SELECT v.call, t.state, t.message, t.detail FROM (SELECT r FROM rec WHERE name = 'iso2005') g,
LATERAL (VALUES
	('view 2',           format('SELECT mcc_template_from_iso(%L::bytea, 2)', r)),
	('view 0',           format('SELECT mcc_template_from_iso(%L::bytea, 0)', r)),
	('view -1',          format('SELECT mcc_template_from_iso(%L::bytea, -1)', r)),
	('profile nist',     format('SELECT mcc_template_from_iso(%L::bytea, 1, ''nist'')', r)),
	('to_iso ansi2009am1', format('SELECT mcc_template_to_iso(mcc_template_from_iso(%L::bytea), ''ansi2009am1'')', r)),
	('to_iso ISO2011',   format('SELECT mcc_template_to_iso(mcc_template_from_iso(%L::bytea), ''ISO2011'')', r))
) AS v(call, stmt),
LATERAL try(v.stmt) t;
SELECT mcc_template_from_iso(r, 1, 'nist') FROM rec WHERE name = 'iso2005';
SELECT mcc_template_from_iso(r, NULL) IS NULL AS strict FROM rec WHERE name = 'iso2005';

-- xyt: NBIS frame (origin bottom-left, degrees, pointing away from the
-- ridge), converted with row = height - y and theta + 180 degrees
SELECT mcc_template_from_xyt(E'100 200 270 50\n150 180 0 80\n120 120 90\n', 300, 300);
-- without the image size: height = largest y, width = largest x + 1
SELECT mcc_template_info(mcc_template_from_xyt(E'100 200 270 50\n150 180 0 80\n120 120 90\n'));
-- blank lines and CRLF line ends
SELECT mcc_template_from_xyt(E'\n100 200 270 50\r\n\r\n150 180 0 80\n', 300, 300, 569, 'tpami2010');
SELECT mcc_template_to_xyt(mcc_template_from_xyt(E'100 200 270 50\n150 180 0 80\n120 120 90 7\n', 300, 300));
SELECT mcc_template_from_xyt(NULL) IS NULL AS null_in_null_out;
-- malformed xyt and bad arguments
SELECT v.name, t.state, t.message, t.detail FROM (VALUES
	(1, 'junk field',     $q$SELECT mcc_template_from_xyt(E'100 200 270 50\n150 abc 0 80\n', 300, 300)$q$),
	(2, 'two fields',     $q$SELECT mcc_template_from_xyt(E'100 200\n', 300, 300)$q$),
	(3, 'five fields',    $q$SELECT mcc_template_from_xyt(E'100 200 270 50 9\n', 300, 300)$q$),
	(4, 'fraction',       $q$SELECT mcc_template_from_xyt(E'100 200 270.5 50\n', 300, 300)$q$),
	(5, 'huge number',    $q$SELECT mcc_template_from_xyt(E'100 200 99999999999999999999 50\n', 300, 300)$q$),
	(6, 'empty',          $q$SELECT mcc_template_from_xyt('', 300, 300)$q$),
	(7, 'blank',          $q$SELECT mcc_template_from_xyt(E'\n\n', 300, 300)$q$),
	(8, 'x = width',      $q$SELECT mcc_template_from_xyt(E'300 200 270 50\n', 300, 300)$q$),
	(9, 'y > height',     $q$SELECT mcc_template_from_xyt(E'100 301 270 50\n', 300, 300)$q$),
	(10, 'x negative',    $q$SELECT mcc_template_from_xyt(E'-1 200 270 50\n', 300, 300)$q$),
	(11, '257 minutiae',  $q$SELECT mcc_template_from_xyt(string_agg(format('%s %s 90', i % 300, i / 300 + 1), E'\n'), 300, 300)
						  FROM generate_series(1, 257) i$q$),
	(12, 'width 0',       $q$SELECT mcc_template_from_xyt(E'100 200 270\n', 0, 300)$q$),
	(13, 'height 16384',  $q$SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 16384)$q$),
	(14, 'dpi 0',         $q$SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 0)$q$),
	(15, 'dpi 10001',     $q$SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 10001)$q$),
	(16, 'dpi NULL',      $q$SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, NULL)$q$),
	(17, 'profile NULL',  $q$SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 500, NULL)$q$),
	(18, 'profile gpu2016', $q$SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 500, 'gpu2016')$q$)
) AS v(ord, name, stmt), LATERAL try(v.stmt) t
ORDER BY v.ord;
SELECT mcc_minutiae_count(mcc_template_from_xyt(string_agg(format('%s %s 90', i % 300, i / 300 + 1), E'\n'), 300, 300))
FROM generate_series(1, 256) i;

-- JSON
SELECT mcc_template_from_json('{"profile":"tpami2010","width":300,"height":300,"minutiae":[[100,100,1.5708,"ending",50]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[{"x":100,"y":100,"theta":0}]}');
SELECT mcc_template_from_json(NULL) IS NULL AS strict;
-- NaN and Infinity are not JSON: text input rejects them, and jsonb would
-- not accept them in the first place
SELECT v.j, t.state, t.message, t.detail FROM (VALUES
	(1, '{"width":300,"height":300,"minutiae":[[100,100,NaN]]}'),
	(2, '{"width":300,"height":300,"minutiae":[[100,100,Infinity]]}'),
	(3, '{"width":300,"height":300,"minutiae":[[100,100,-Infinity]]}')
) AS v(ord, j), LATERAL try(format('SELECT %L::mcc_template', v.j)) t ORDER BY v.ord;
SELECT '{"width":300,"height":300,"minutiae":[[100,100,NaN]]}'::jsonb;
-- out of range angles, coordinates, sizes, qualities; schema violations
SELECT v.j, t.state, t.message, t.detail FROM (VALUES
	(1, '{"width":300,"height":300,"minutiae":[[100,100,"NaN"]]}'),
	(2, '{"width":300,"height":300,"minutiae":[[100,100,6.3]]}'),
	(3, '{"width":300,"height":300,"minutiae":[[100,100,-0.1]]}'),
	(4, '{"width":300,"height":300,"minutiae":[[100,100,1e39]]}'),
	(5, '{"width":300,"height":300,"minutiae":[[300,100,1]]}'),
	(6, '{"width":300,"height":300,"minutiae":[[100,-1,1]]}'),
	(7, '{"width":300,"height":300,"minutiae":[[100.5,100,1]]}'),
	(8, '{"width":300,"height":300,"minutiae":[[100,100000,1]]}'),
	(9, '{"width":0,"height":300,"minutiae":[[0,100,1]]}'),
	(10, '{"width":16384,"height":300,"minutiae":[[100,100,1]]}'),
	(11, '{"width":300,"height":300,"dpi":0,"minutiae":[[100,100,1]]}'),
	(12, '{"width":300,"height":300,"minutiae":[[100,100,1,"ending",101]]}'),
	(13, '{"width":300,"height":300,"minutiae":[[100,100,1,"ridge"]]}'),
	(14, '{"width":300,"height":300,"minutiae":[[100,100]]}'),
	(15, '{"width":300,"height":300,"minutiae":[[100,100,1,"ending",50,7]]}'),
	(16, '{"width":300,"height":300,"minutiae":[{"x":100,"y":100}]}'),
	(17, '{"width":300,"height":300,"minutiae":[{"x":100,"y":100,"theta":1,"z":0}]}'),
	(18, '{"width":300,"height":300,"minutiae":{}}'),
	(19, '{"width":300,"height":300,"minutiae":[]}'),
	(20, '[1,2,3]'),
	(21, '{"width":"300","height":300,"minutiae":[[100,100,1]]}'),
	(22, '{"profile":"gpu2015x","width":300,"height":300,"minutiae":[[100,100,1]]}')
) AS v(ord, j), LATERAL try(format('SELECT mcc_template_from_json(%L)', v.j)) t ORDER BY v.ord;
-- more than 256 minutiae
SELECT state, message, detail FROM try($q$SELECT mcc_template_from_json(jsonb_build_object('width', 300, 'height', 300, 'minutiae',
	(SELECT jsonb_agg(jsonb_build_array(i % 300, i / 300, 1)) FROM generate_series(1, 257) i)))$q$);
SELECT mcc_minutiae_count(mcc_template_from_json(jsonb_build_object('width', 300, 'height', 300, 'minutiae',
	(SELECT jsonb_agg(jsonb_build_array(i % 300, i / 300, 1)) FROM generate_series(1, 256) i))));

-- pg_read_binary_file() + mcc_template_from_iso() as a superuser: write the
-- record to a file in the data directory with lo_export and read it back
SELECT lo_from_bytea(0, r) AS lo FROM rec WHERE name = 'iso2005' \gset
SELECT lo_export(:lo, 'mcc_import_test.ist');
SELECT lo_unlink(:lo);
SELECT mcc_template_from_iso(pg_read_binary_file('mcc_import_test.ist'))::text =
	   mcc_template_from_iso(r)::text AS via_file
FROM rec WHERE name = 'iso2005';

DROP FUNCTION try(text), sqlstate_of(text);
DROP TABLE rec, bad_rec;
