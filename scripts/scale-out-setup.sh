#!/usr/bin/env bash
# scale-out-setup.sh: a coordinator and N shard servers on loopback, for
# demos, benchmarks and tests of mcc's scale-out (docs/scale-out.md).
#
#   scripts/scale-out-setup.sh start  [options]   create and start the clusters, set up the cluster map
#   scripts/scale-out-setup.sh stop   [-d DIR]    stop them (the data stays)
#   scripts/scale-out-setup.sh destroy [-d DIR]   stop them and remove DIR
#   scripts/scale-out-setup.sh status [-d DIR]    mcc_proxy.cluster_status() on the coordinator
#   scripts/scale-out-setup.sh psql   [-d DIR] [psql args]   psql on the coordinator
#
# start options:
#   -n N            shard servers (default 3)
#   -d DIR          where the clusters live (default /tmp/mcc-scaleout)
#   -p PORT         coordinator port; shard i listens on PORT + i (default 55430)
#   --ports LIST    explicit comma-separated ports, coordinator first
#   --partitions P  partitions, a power of two (default 16)
#   --gallery NAME  create sharded gallery NAME (default g; "" for none)
#   --synthetic F   enroll F synthetic fingers (mcc_synthetic(F, 1, SEED)) into it
#   --seed S        seed of the synthetic fingers (default 1)
#
# Every server listens on 127.0.0.1 only, with trust authentication for
# local connections (a demo, not a deployment: docs/scale-out.md says what
# to change). The extensions mcc, mcc_shard and mcc_proxy (and the Debian
# package postgresql-15-plproxy) must be installed; run as an ordinary user,
# PostgreSQL refuses to run as root.
set -euo pipefail

cmd=${1:-}
[ -n "$cmd" ] && shift
dir=/tmp/mcc-scaleout
nshards=3
port0=55430
ports=
nparts=16
gallery=g
synthetic=0
seed=1

while [ $# -gt 0 ]; do
	case $1 in
		-n) nshards=$2; shift 2 ;;
		-d) dir=$2; shift 2 ;;
		-p) port0=$2; shift 2 ;;
		--ports) ports=$2; shift 2 ;;
		--partitions) nparts=$2; shift 2 ;;
		--gallery) gallery=$2; shift 2 ;;
		--synthetic) synthetic=$2; shift 2 ;;
		--seed) seed=$2; shift 2 ;;
		--) shift; break ;;
		*) [ "$cmd" = psql ] && break; echo "scale-out-setup: unknown option $1" >&2; exit 2 ;;
	esac
done

bindir=$(pg_config --bindir)
export PATH="$bindir:$PATH"

die() {
	echo "scale-out-setup: $*" >&2
	exit 1
}

# node names in start order: coord s1 .. sN (from DIR/nodes when it exists)
nodes() {
	if [ -f "$dir/nodes" ]; then
		cut -d' ' -f1 "$dir/nodes"
	else
		echo coord
		seq -f 's%g' 1 "$nshards"
	fi
}

# port of node $1 (from DIR/nodes)
port_of() {
	awk -v n="$1" '$1 == n { print $2 }' "$dir/nodes"
}

# psql on node $1 as the cluster's superuser; the rest are psql arguments
run_psql() {
	local node=$1
	shift
	psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$(port_of "$node")" -U postgres -d postgres "$@"
}

start() {
	[ "$(id -u)" != 0 ] || die "run as an ordinary user: PostgreSQL refuses to run as root"
	[ -e "$dir/nodes" ] && die "$dir holds clusters already (stop, or destroy them first)"
	mkdir -p "$dir"
	local i=0 node port
	local -a plist
	if [ -n "$ports" ]; then
		IFS=, read -r -a plist <<<"$ports"
		[ ${#plist[@]} -eq $((nshards + 1)) ] || die "--ports needs $((nshards + 1)) ports"
	fi
	: >"$dir/nodes.tmp"
	for node in $(nodes); do
		port=${plist[$i]:-$((port0 + i))}
		echo "$node $port" >>"$dir/nodes.tmp"
		i=$((i + 1))
	done
	mv "$dir/nodes.tmp" "$dir/nodes"

	for node in $(nodes); do
		port=$(port_of "$node")
		initdb -D "$dir/$node" -A trust -U postgres --no-sync >"$dir/$node.initdb.log" 2>&1 ||
			{ cat "$dir/$node.initdb.log"; die "initdb of $node failed"; }
		cat >>"$dir/$node/postgresql.conf" <<-EOF
			# scale-out-setup.sh
			port = $port
			listen_addresses = '127.0.0.1'
			unix_socket_directories = '$dir'
			max_connections = 100
			shared_buffers = 128MB
			cluster_name = 'mcc-$node'
		EOF
		pg_ctl -D "$dir/$node" -l "$dir/$node.log" -w start >/dev/null ||
			{ tail -20 "$dir/$node.log"; die "$node did not start"; }
		echo "started $node on 127.0.0.1:$port"
	done

	for node in $(nodes | grep -v '^coord$'); do
		run_psql "$node" -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION mcc_shard CASCADE'
	done
	run_psql coord -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION mcc_proxy CASCADE'
	for node in $(nodes | grep -v '^coord$'); do
		run_psql coord -At -c "SELECT 'shard $node: ' || mcc_proxy.add_shard('$node',
			'host=127.0.0.1 port=$(port_of "$node") dbname=postgres connect_timeout=5')"
	done
	run_psql coord -At -c "SELECT 'partitions: ' || string_agg(shard || ' ' || n, ', ' ORDER BY shard)
		FROM (SELECT shard, count(*) AS n FROM mcc_proxy.create_partitions($nparts) GROUP BY shard) x"
	run_psql coord -c "SELECT mcc_proxy.set_option('query_timeout', '60')" >/dev/null
	if [ -n "$gallery" ]; then
		run_psql coord -At -c "SELECT 'gallery: ' || mcc_proxy.create_gallery('$gallery')"
		if [ "$synthetic" -gt 0 ]; then
			# batches of 2000: every shard in parallel, memory bounded
			run_psql coord -At -c "
				SELECT 'enrolled: ' || sum(mcc_proxy.enroll('$gallery', ids, tpls))
				FROM (SELECT array_agg(finger ORDER BY finger) AS ids,
							 array_agg(template ORDER BY finger) AS tpls
					  FROM mcc_synthetic($synthetic, 1, $seed)
					  GROUP BY finger / 2000) b"
		fi
	fi
	echo "coordinator: psql -h $dir -p $(port_of coord) -d postgres -U postgres"
	echo "  (SET search_path = mcc_proxy, public; then identify('$gallery', probe) runs on every shard)"
}

stop() {
	[ -f "$dir/nodes" ] || die "no clusters in $dir"
	local node
	for node in $(nodes); do
		if [ -f "$dir/$node/postmaster.pid" ]; then
			pg_ctl -D "$dir/$node" -m fast -w stop >/dev/null && echo "stopped $node"
		fi
	done
}

case $cmd in
	start) start ;;
	stop) stop ;;
	destroy) [ ! -f "$dir/nodes" ] || stop; rm -rf "$dir" ;;
	status) run_psql coord -c 'SELECT * FROM mcc_proxy.cluster_status()' ;;
	psql) run_psql coord "$@" ;;
	*) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
