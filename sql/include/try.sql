\set ECHO none
-- Error helpers of the pg_regress tests: a test includes this file
--   \getenv abs_srcdir PG_ABS_SRCDIR
--   \i :abs_srcdir/sql/include/try.sql
-- (pg_regress sets PG_ABS_SRCDIR) and drops both functions at its end. Not a
-- test itself: the Makefile's REGRESS takes sql/*.sql only. The first line
-- keeps the definitions out of each test's expected output.

-- run a statement; its SQLSTATE ('00000' if it succeeds), message, detail
-- and hint
CREATE OR REPLACE FUNCTION try(stmt text, OUT state text, OUT message text, OUT detail text,
							   OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	state := '00000';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END
$$;

-- the same as one line: 'no error', or the SQLSTATE and message
CREATE OR REPLACE FUNCTION sqlstate_of(stmt text) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN state = '00000' THEN 'no error' ELSE state || ': ' || message END FROM try(stmt)
$$;
\set ECHO all
