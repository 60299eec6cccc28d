#!/usr/bin/env bash
# demo.sh: build and install mcc, start a throwaway PostgreSQL cluster, enrol a
# synthetic gallery and run identification queries. Removes the cluster at
# the end. Run as root on a fresh Debian 12 machine (it installs the packages
# it needs), or as a user who can write PostgreSQL's lib and share folders.
#
#   scripts/demo.sh [gallery size, default 20000]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
n=${1:-20000}

if [ "$(id -u)" = 0 ] && [ -z "${MCC_AS_USER:-}" ]; then
	scripts/install-deps.sh
	make -s >/dev/null && make -s install >/dev/null
	id mcctest >/dev/null 2>&1 || useradd -m -s /bin/bash mcctest
	cp scripts/demo.sh /tmp/mcc-demo.sh && chmod 755 /tmp/mcc-demo.sh
	exec runuser -u mcctest -- env MCC_AS_USER=1 MCC_DEMO_SQL="$here/scripts/demo.sql" \
		bash /tmp/mcc-demo.sh "$n"
fi

export PATH="$(pg_config --bindir):$PATH"
sql=${MCC_DEMO_SQL:-$here/scripts/demo.sql}
dir=$(mktemp -d /tmp/mcc-demo.XXXXXX)
trap 'pg_ctl -D "$dir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
echo "== throwaway cluster in $dir"
initdb -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log"
pg_ctl -D "$dir/data" -l "$dir/server.log" -w -o "-p 54329 -k $dir -c listen_addresses=''" start >/dev/null
echo "== demo: gallery of $n synthetic fingers"
psql -X -h "$dir" -p 54329 -U postgres -v ON_ERROR_STOP=1 -v n="$n" -f "$sql" postgres
