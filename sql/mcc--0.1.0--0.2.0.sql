-- mcc 0.1.0 -> 0.2.0 (docs/upgrades.md). CREATE EXTENSION mcc installs
-- 0.1.0 and runs this script; ALTER EXTENSION mcc UPDATE runs it on an
-- existing 0.1.0 installation. Every object new or changed in 0.2.0 is
-- defined here, once; sections follow the subsystem that owns them.
\echo Use "ALTER EXTENSION mcc UPDATE TO '0.2.0'" to load this file. \quit
