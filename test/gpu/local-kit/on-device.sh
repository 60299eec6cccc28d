# test/gpu/local-kit/on-device.sh: a stand-in for the device kit
# (../shared/device/on-device.sh) on a dev machine with Debian's
# PostgreSQL 15, for running the device scripts' servers locally without
# touching the system's installation: KIT=test/gpu/local-kit (docs/benchmarks.md,
# "The refinement in the shards' engines").
#
#   pgkit_up       copy /usr/lib/postgresql/15 and /usr/share/postgresql/15
#                  under PGKIT_HOME/root (Debian's binaries find their lib and
#                  share folders relative to themselves), point
#                  PGKIT_HOME/package/native at it with the kit's layout
#                  (native/bin, native/lib/postgresql, native/share/postgresql),
#                  initdb PGKIT_DATA and start it on port PGKIT_PORT (default
#                  55490), socket in /tmp, as the user pgkit
#   pgkit_install  `make install` into a staging folder, copied into native
#   pgkit_down     stop that server
#
# Give every run its own PGKIT_HOME (a run installs its tree's mcc there).
PGKIT_HOME=${PGKIT_HOME:-/tmp/pgkit-local}
PGKIT_DATA=${PGKIT_DATA:-/tmp/pgkit-local-data}

pgkit_up() {
	local root=$PGKIT_HOME/root
	local pg=$root/lib/postgresql/15
	export PATH="/usr/lib/postgresql/15/bin:$PATH"
	if [ ! -x "$PGKIT_HOME/package/native/bin/postgres" ]; then
		mkdir -p "$root/lib/postgresql" "$root/share/postgresql" "$PGKIT_HOME/package" || return 1
		cp -a /usr/lib/postgresql/15 "$root/lib/postgresql/" &&
			cp -a /usr/share/postgresql/15 "$root/share/postgresql/" || return 1
		mkdir -p "$pg/share"
		ln -sfn "$pg/lib" "$pg/lib/postgresql"
		ln -sfn "$root/share/postgresql/15" "$pg/share/postgresql"
		ln -sfn "$pg" "$PGKIT_HOME/package/native"
	fi
	id pgkit >/dev/null 2>&1 || useradd -m pgkit || return 1
	chmod -R a+rwX "$PGKIT_HOME"
	local bin=$PGKIT_HOME/package/native/bin
	if [ ! -f "$PGKIT_DATA/PG_VERSION" ]; then
		rm -rf "$PGKIT_DATA" && mkdir -p "$(dirname "$PGKIT_DATA")"
		runuser -u pgkit -- "$bin/initdb" -D "$PGKIT_DATA" -U postgres --no-sync -A trust \
			>"$PGKIT_HOME/initdb.log" 2>&1 || { cat "$PGKIT_HOME/initdb.log"; return 1; }
	fi
	runuser -u pgkit -- "$bin/pg_ctl" -D "$PGKIT_DATA" -o "-p ${PGKIT_PORT:-55490} -k /tmp -c listen_addresses=''" \
		-l "$PGKIT_HOME/server.log" -w start >/dev/null || { cat "$PGKIT_HOME/server.log"; return 1; }
	export PGHOST=/tmp PGPORT=${PGKIT_PORT:-55490} PGUSER=postgres
}

pgkit_install() {
	local stage=$PGKIT_HOME/stage native=$PGKIT_HOME/package/native
	rm -rf "$stage"
	make install DESTDIR="$stage" >"$PGKIT_HOME/install.log" 2>&1 || { cat "$PGKIT_HOME/install.log"; return 1; }
	cp -a "$stage/usr/lib/postgresql/15/lib/." "$native/lib/postgresql/"
	cp -a "$stage/usr/share/postgresql/15/extension/." "$native/share/postgresql/extension/"
	chmod -R a+rX "$PGKIT_HOME/root"
}

pgkit_down() { runuser -u pgkit -- "$PGKIT_HOME/package/native/bin/pg_ctl" -D "$PGKIT_DATA" -m fast stop; }
pgkit_log() { cat "$PGKIT_HOME/server.log"; }
