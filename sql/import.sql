-- import: constructors from ISO/ANSI records, xyt and JSON, exporters, and
-- every class of malformed input

-- Records crafted by hand, 3 minutiae each on a 300x300 image at 197 px/cm:
--   (100, 100) ending, angle 90 degrees, quality 50
--   (150, 120) bifurcation, 180 degrees, quality 80
--   (120, 180) other, 0 degrees, quality 0
CREATE TABLE rec (name text PRIMARY KEY, r bytea);
INSERT INTO rec VALUES
	-- ISO/IEC 19794-2:2005: 24-byte header (4-byte length 0x30 = 48), one
	-- 4-byte view header, 6-byte minutiae (angle unit 360/256 degrees),
	-- 2-byte extended data length
	('iso2005', decode(
		'464d5200' '20323000' '00000030' '0000' '012c' '012c' '00c5' '00c5' '01' '00'
		'00' '00' '3c' '03'
		'4064' '0064' '40' '32'
		'8096' '0078' '80' '50'
		'0078' '00b4' '00' '00'
		'0000', 'hex')),
	-- ANSI/INCITS 378-2004: 26-byte header (2-byte length 0x32 = 50, CBEFF
	-- product id), angle unit 2 degrees
	('ansi2004', decode(
		'464d5200' '20323000' '0032' '00000000' '0000' '012c' '012c' '00c5' '00c5' '01' '00'
		'00' '00' '3c' '03'
		'4064' '0064' '2d' '32'
		'8096' '0078' '5a' '50'
		'0078' '00b4' '00' '00'
		'0000', 'hex')),
	-- ISO/IEC 19794-2:2011: 15-byte header (length 0x43 = 67, one
	-- representation, no certification), representation of 0x34 = 52 bytes:
	-- length, unknown capture time, device ids, no quality blocks, finger
	-- position, representation number, resolution, impression type, image
	-- size, minutia field length 6 / ridge ending type 0, count
	('iso2011', decode(
		'464d5200' '30333000' '00000043' '0001' '00'
		'00000034' 'ffffffffffffffffff' '00' '0000' '0000' '00'
		'00' '00' '00c5' '00c5' '00' '012c' '012c' '60' '03'
		'4064' '0064' '40' '32'
		'8096' '0078' '80' '50'
		'0078' '00b4' '00' '00'
		'0000', 'hex'));

SELECT name, mcc_template_from_iso(r) FROM rec ORDER BY name;
SELECT name, mcc_template_info(mcc_template_from_iso(r)) FROM rec ORDER BY name;
SELECT name, mcc_profile(mcc_template_from_iso(r, 1, 'tpami2010')) FROM rec ORDER BY name;
-- zero padding after the record (SDK buffers) is ignored
SELECT mcc_template_from_iso(r || '\x000000'::bytea)::text = mcc_template_from_iso(r)::text AS padded_ok
FROM rec ORDER BY name;

-- export and re-import: the record's angle units survive exactly
SELECT mcc_template_to_iso(mcc_template_from_iso(r)) = r AS iso_round_trip
FROM rec WHERE name = 'iso2005';
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'ansi2004') = r AS ansi_round_trip
FROM rec WHERE name = 'ansi2004';
SELECT mcc_template_from_iso(mcc_template_to_iso(t, f))::text = t::text AS same
FROM (SELECT mcc_template_from_iso(r) AS t FROM rec WHERE name = 'iso2005') s,
	 (VALUES ('iso2005'), ('ansi2004')) AS v(f);
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'iso2011') FROM rec WHERE name = 'iso2005';

-- malformed records, each derived from the valid ISO 2005 record
CREATE FUNCTION iso(edit text) RETURNS bytea LANGUAGE sql AS $$
	SELECT CASE edit
		WHEN 'bad magic' THEN overlay(r placing 'FMX' from 1 for 3)
		WHEN 'bad version' THEN overlay(r placing '099' from 5 for 3)
		WHEN 'empty' THEN '\x'::bytea
		WHEN 'header only' THEN substr(r, 1, 20)
		WHEN 'truncated' THEN substr(r, 1, 40)
		WHEN 'length too small' THEN overlay(r placing '\x00000020' from 9 for 4)
		WHEN 'length too large' THEN overlay(r placing '\x00000040' from 9 for 4)
		WHEN 'no views' THEN overlay(r placing '\x00' from 23 for 1)
		WHEN 'two views' THEN overlay(r placing '\x02' from 23 for 1)
		WHEN 'count 5' THEN overlay(r placing '\x05' from 28 for 1)
		WHEN 'count 2' THEN overlay(r placing '\x02' from 28 for 1)
		WHEN 'no minutiae' THEN overlay(overlay(substr(r, 1, 28) || '\x0000'::bytea
				placing '\x00' from 28 for 1) placing '\x0000001e' from 9 for 4)
		WHEN 'x outside' THEN overlay(r placing '\x412c' from 29 for 2)
		WHEN 'y outside' THEN overlay(r placing '\x0190' from 31 for 2)
		WHEN 'width 0' THEN overlay(r placing '\x0000' from 15 for 2)
		WHEN 'resolution 0' THEN overlay(r placing '\x0000' from 19 for 2)
		WHEN 'extended data cut' THEN overlay(r placing '\x0010' from 47 for 2)
	END FROM rec WHERE name = 'iso2005'
$$;
SELECT mcc_template_from_iso(iso('bad magic'));
SELECT mcc_template_from_iso(iso('bad version'));
SELECT mcc_template_from_iso(iso('empty'));
SELECT mcc_template_from_iso(iso('header only'));
SELECT mcc_template_from_iso(iso('truncated'));
SELECT mcc_template_from_iso(iso('length too small'));
SELECT mcc_template_from_iso(iso('length too large'));
SELECT mcc_template_from_iso(iso('no views'));
SELECT mcc_template_from_iso(iso('two views'));
SELECT mcc_template_from_iso(iso('count 5'));
SELECT mcc_template_from_iso(iso('count 2'));
SELECT mcc_template_from_iso(iso('no minutiae'));
SELECT mcc_template_from_iso(iso('x outside'));
SELECT mcc_template_from_iso(iso('y outside'));
SELECT mcc_template_from_iso(iso('width 0'));
SELECT mcc_template_from_iso(iso('resolution 0'));
SELECT mcc_template_from_iso(iso('extended data cut'));
-- view numbers: from 1, and at most the record's view count
SELECT mcc_template_from_iso(r, 2) FROM rec WHERE name = 'iso2005';
SELECT mcc_template_from_iso(r, 0) FROM rec WHERE name = 'iso2005';
SELECT mcc_template_from_iso(r, -1) FROM rec WHERE name = 'iso2005';
SELECT mcc_template_from_iso(r, 1, 'nist') FROM rec WHERE name = 'iso2005';
SELECT mcc_template_from_iso(r, NULL) IS NULL AS strict FROM rec WHERE name = 'iso2005';
SELECT mcc_template_to_iso(mcc_template_from_iso(r), 'iso') FROM rec WHERE name = 'iso2005';

-- xyt: NBIS frame (origin bottom-left, degrees, pointing away from the
-- ridge), converted with row = height - y and theta + 180 degrees
SELECT mcc_template_from_xyt(E'100 200 270 50\n150 180 0 80\n120 120 90\n', 300, 300);
-- without the image size: height = largest y, width = largest x + 1
SELECT mcc_template_info(mcc_template_from_xyt(E'100 200 270 50\n150 180 0 80\n120 120 90\n'));
-- blank lines and CRLF line ends
SELECT mcc_template_from_xyt(E'\n100 200 270 50\r\n\r\n150 180 0 80\n', 300, 300, 569, 'tpami2010');
SELECT mcc_template_to_xyt(mcc_template_from_xyt(E'100 200 270 50\n150 180 0 80\n120 120 90 7\n', 300, 300));
SELECT mcc_template_from_xyt(NULL) IS NULL AS null_in_null_out;
-- malformed xyt
SELECT mcc_template_from_xyt(E'100 200 270 50\n150 abc 0 80\n', 300, 300);
SELECT mcc_template_from_xyt(E'100 200\n', 300, 300);
SELECT mcc_template_from_xyt(E'100 200 270 50 9\n', 300, 300);
SELECT mcc_template_from_xyt(E'100 200 270.5 50\n', 300, 300);
SELECT mcc_template_from_xyt(E'100 200 99999999999999999999 50\n', 300, 300);
SELECT mcc_template_from_xyt('', 300, 300);
SELECT mcc_template_from_xyt(E'\n\n', 300, 300);
SELECT mcc_template_from_xyt(E'300 200 270 50\n', 300, 300);
SELECT mcc_template_from_xyt(E'100 301 270 50\n', 300, 300);
SELECT mcc_template_from_xyt(E'-1 200 270 50\n', 300, 300);
SELECT mcc_template_from_xyt(string_agg(format('%s %s 90', i % 300, i / 300 + 1), E'\n'), 300, 300)
FROM generate_series(1, 257) i;
SELECT mcc_minutiae_count(mcc_template_from_xyt(string_agg(format('%s %s 90', i % 300, i / 300 + 1), E'\n'), 300, 300))
FROM generate_series(1, 256) i;
-- bad arguments
SELECT mcc_template_from_xyt(E'100 200 270\n', 0, 300);
SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 16384);
SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 0);
SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 10001);
SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, NULL);
SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 500, NULL);
SELECT mcc_template_from_xyt(E'100 200 270\n', 300, 300, 500, 'gpu2016');

-- JSON
SELECT mcc_template_from_json('{"profile":"tpami2010","width":300,"height":300,"minutiae":[[100,100,1.5708,"ending",50]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[{"x":100,"y":100,"theta":0}]}');
SELECT mcc_template_from_json(NULL) IS NULL AS strict;
-- NaN and Infinity are not JSON (jsonb rejects them before we see them)
SELECT '{"width":300,"height":300,"minutiae":[[100,100,NaN]]}'::mcc_template;
SELECT '{"width":300,"height":300,"minutiae":[[100,100,Infinity]]}'::mcc_template;
SELECT '{"width":300,"height":300,"minutiae":[[100,100,-Infinity]]}'::mcc_template;
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100,"NaN"]]}');
-- out of range angles, coordinates, sizes, qualities
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100,6.3]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100,-0.1]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100,1e39]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[300,100,1]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,-1,1]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100.5,100,1]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100000,1]]}');
SELECT mcc_template_from_json('{"width":0,"height":300,"minutiae":[[0,100,1]]}');
SELECT mcc_template_from_json('{"width":16384,"height":300,"minutiae":[[100,100,1]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"dpi":0,"minutiae":[[100,100,1]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100,1,"ending",101]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100,1,"ridge"]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[[100,100,1,"ending",50,7]]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[{"x":100,"y":100}]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[{"x":100,"y":100,"theta":1,"z":0}]}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":{}}');
SELECT mcc_template_from_json('{"width":300,"height":300,"minutiae":[]}');
SELECT mcc_template_from_json('[1,2,3]');
SELECT mcc_template_from_json('{"width":"300","height":300,"minutiae":[[100,100,1]]}');
SELECT mcc_template_from_json('{"profile":"gpu2015x","width":300,"height":300,"minutiae":[[100,100,1]]}');
-- more than 256 minutiae
SELECT mcc_template_from_json(jsonb_build_object('width', 300, 'height', 300, 'minutiae',
	(SELECT jsonb_agg(jsonb_build_array(i % 300, i / 300, 1)) FROM generate_series(1, 257) i)));
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

DROP FUNCTION iso(text);
DROP TABLE rec;
