#!/usr/bin/env bash
# install-deps.sh: install the Debian packages mcc needs to build and test.
# Idempotent; needs root (apt-get). Prints nothing when all is present.
#
#   scripts/install-deps.sh          build + test dependencies
set -euo pipefail

pkgs=(
	make gcc                          # build
	postgresql-15                     # server, initdb, pg_ctl
	postgresql-client-15              # psql, pg_regress, PostgreSQL::Test perl modules
	postgresql-server-dev-15          # headers and PGXS
	libipc-run-perl                   # TAP tests
	clang libclang-rt-14-dev          # libFuzzer harnesses (make fuzz)
	libpng-dev                        # image input (PNG)
	postgresql-15-plproxy             # scale-out: PL/Proxy for extension mcc_proxy (docs/scale-out.md)
	python3-psycopg                   # examples/idm.py (psycopg 3)
	dpkg-dev debhelper                # make deb (debian/, docs/packaging.md)
	postgresql-server-dev-all         # pg_buildext, pg_virtualenv (make deb)
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The server must be at least as new as the headers the module is built
# with: minor releases may add functions that header inlines call (15.20's
# heap_getattr calls heap_datum_check, absent from 15.18 servers).
version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }
if [ ${#missing[@]} -eq 0 ] && [ "$(version postgresql-15)" = "$(version postgresql-server-dev-15)" ] \
	&& [ "$(version postgresql-client-15)" = "$(version postgresql-server-dev-15)" ]; then
	exit 0
fi
missing+=(postgresql-15 postgresql-client-15 postgresql-server-dev-15)

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian creates and starts a default cluster with the server package; tests
# use their own throwaway clusters, so leave it alone.
