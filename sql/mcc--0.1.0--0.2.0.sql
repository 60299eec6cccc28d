-- mcc 0.1.0 -> 0.2.0 (docs/upgrades.md). CREATE EXTENSION mcc installs
-- 0.1.0 and runs this script; ALTER EXTENSION mcc UPDATE runs it on an
-- existing 0.1.0 installation. Every object new or changed in 0.2.0 is
-- defined here, once; sections follow the subsystem that owns them.
\echo Use "ALTER EXTENSION mcc UPDATE TO '0.2.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Formats (issue 18): mcc_template_to_iso also writes ISO/IEC 19794-2:2011
-- and ANSI/INCITS 378-2009. The function and its signature are 0.1.0's;
-- only the C code behind it (mcc.so) and this comment change.
COMMENT ON FUNCTION mcc_template_to_iso(mcc_template, text) IS
	'One-view ISO/IEC 19794-2:2005 (''iso2005'') or :2011 (''iso2011''), or ANSI/INCITS 378-2004 (''ansi2004'') or -2009 (''ansi2009'') record of the minutiae';
