# MccServiceTest.pm: shared setup of the matcher service TAP tests
# (test/t/service_*.pl): a cluster with mcc preloaded, synthetic galleries,
# and SQL helpers that compare identify() with a brute-force top-k computed
# by mcc_score() over the same snapshot.
package MccServiceTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(service_node wait_ready create_gallery install_checks
  served_gallery check_all_probes service_pid);

# A started cluster with mcc created in database postgres. Options:
# preload => 0 leaves mcc out of shared_preload_libraries; allows_streaming
# => 1 prepares it for base backups and standbys; every other key => value
# pair is a postgresql.conf line.
sub service_node
{
	my ($name, %conf) = @_;
	my $preload = exists $conf{preload} ? delete $conf{preload} : 1;
	my $streaming = delete $conf{allows_streaming} // 0;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $lines = "max_connections = 50\nmcc.request_timeout = '60s'\n";

	$node->init(allows_streaming => $streaming);
	if ($preload)
	{
		$lines .= "shared_preload_libraries = 'mcc'\n";
		$lines .= "mcc.worker_threads = 2\n" unless exists $conf{'mcc.worker_threads'};
	}
	$lines .= "$_ = $conf{$_}\n" for sort keys %conf;
	$node->append_conf('postgresql.conf', $lines);
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION mcc');
	wait_ready($node, 0) if $preload;
	return $node;
}

# Wait until the service is ready after at least $restarts engine restarts.
sub wait_ready
{
	my ($node, $restarts) = @_;

	$node->poll_query_until('postgres',
		"SELECT state = 'ready' AND restarts >= $restarts FROM mcc_service_status()")
	  or die "the matcher service did not become ready";
}

# Table $name(id bigint primary key, person text, tpl mcc_template) holding
# impression 0 of fingers $first .. $first + $n - 1 of synthetic seed $seed.
sub create_gallery
{
	my ($node, $name, $n, $seed, $first) = @_;
	$first //= 0;
	$node->safe_psql('postgres', qq{
		CREATE TABLE $name (id bigint PRIMARY KEY, person text, tpl mcc_template);
		INSERT INTO $name
			SELECT finger, 'person ' || finger, template
			FROM mcc_synthetic($n, 1, $seed, $first);
		ANALYZE $name;
	});
}

# Probes table (pid, tpl): impression 1 of fingers 0 .. $mated - 1 (mated
# with a gallery of the same seed) and impression 0 of $other fingers of
# another seed (not mated).
sub create_probes
{
	my ($node, $seed, $mated, $other) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE probes (pid int PRIMARY KEY, tpl mcc_template NOT NULL);
		INSERT INTO probes
			SELECT row_number() OVER (ORDER BY finger), template
			FROM mcc_synthetic($mated, 2, $seed) WHERE impression = 1;
		INSERT INTO probes
			SELECT $mated + row_number() OVER (ORDER BY finger), template
			FROM mcc_synthetic($other, 1, $seed + 1000);
	});
}

# SQL helpers: via_identify(), brute_force(), check_identify() (records
# every comparison in table checks), check_paths() (the service against the
# backend scan) and check_batch(). Each takes a refine
# argument, 'none' (plain LSS) by default; brute_force() refines as the
# definition says (docs/sql-reference.md, identify()): n rows with a
# template, n' = ceil(mcc.refine_fraction * n) but at least mcc.refine_min
# and k and at most n, the n' best by mcc_score(probe, tpl, 'lss') ties by key,
# rescored with mcc_score(probe, tpl, method), the k best at or above
# min_score, ties by key.
sub install_checks
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		CREATE TABLE checks (ok boolean NOT NULL, what text);

		-- identify()'s answer as text, in its order
		CREATE FUNCTION via_identify(g regclass, probe mcc_template, k int, min_score real,
									 refine text DEFAULT 'none')
		RETURNS text LANGUAGE sql STABLE AS $$
			SELECT coalesce(string_agg(id || ':' || score, ',' ORDER BY ord), '')
			FROM identify(g, probe, k, min_score, refine => refine) WITH ORDINALITY AS t(id, score, ord)
		$$;

		-- the top-k by mcc_score over every row the snapshot sees
		CREATE FUNCTION brute_force(g regclass, probe mcc_template, k int, min_score real,
									refine text DEFAULT 'none')
		RETURNS text LANGUAGE plpgsql STABLE AS $$
		DECLARE
			r text;
			n bigint;
			np bigint;
			method text := CASE refine WHEN 'dtr' THEN 'lss-dtr' ELSE refine END;
		BEGIN
			IF refine = 'none' THEN
				EXECUTE format($q$
					SELECT coalesce(string_agg(id || ':' || score, ',' ORDER BY score DESC, id), '')
					FROM (SELECT id, score
						  FROM (SELECT id, mcc_score($1, tpl, 'lss') AS score FROM %s WHERE tpl IS NOT NULL) s
						  WHERE score >= $2 ORDER BY score DESC, id LIMIT $3) t $q$, g)
				INTO r USING probe, min_score, k;
				RETURN r;
			END IF;
			EXECUTE format('SELECT count(*) FROM %s WHERE tpl IS NOT NULL', g) INTO n;
			np := least(n, greatest(ceil(current_setting('mcc.refine_fraction')::float8 * n)::bigint,
									current_setting('mcc.refine_min')::bigint, k::bigint));
			EXECUTE format($q$
				SELECT coalesce(string_agg(id || ':' || score, ',' ORDER BY score DESC, id), '')
				FROM (SELECT id, score
					  FROM (SELECT id, mcc_score($1, tpl, $5) AS score
							FROM (SELECT id, tpl FROM %s WHERE tpl IS NOT NULL
								  ORDER BY mcc_score($1, tpl, 'lss') DESC, id LIMIT $4) shortlist) s
					  WHERE score >= $2 ORDER BY score DESC, id LIMIT $3) t $q$, g)
			INTO r USING probe, min_score, k, np, method;
			RETURN r;
		END $$;

		CREATE FUNCTION check_identify(g regclass, probe mcc_template, k int, min_score real,
									   refine text DEFAULT 'none')
		RETURNS boolean LANGUAGE plpgsql AS $$
		DECLARE
			a text := via_identify(g, probe, k, min_score, refine);
			b text := brute_force(g, probe, k, min_score, refine);
		BEGIN
			INSERT INTO checks VALUES (a = b, CASE WHEN a <> b THEN
				format('k=%s min_score=%s refine=%s identify=[%s] brute=[%s]', k, min_score,
					   refine, a, b) END);
			RETURN a = b;
		END $$;

		-- identify()'s answer through the service and by the backend scan
		-- (mcc.service = off), under one snapshot
		CREATE FUNCTION check_paths(g regclass, probe mcc_template, k int, min_score real,
									refine text DEFAULT 'none')
		RETURNS boolean LANGUAGE plpgsql AS $$
		DECLARE a text; b text;
		BEGIN
			a := via_identify(g, probe, k, min_score, refine);
			PERFORM set_config('mcc.service', 'off', true);
			b := via_identify(g, probe, k, min_score, refine);
			PERFORM set_config('mcc.service', 'on', true);
			INSERT INTO checks VALUES (a = b, CASE WHEN a <> b THEN
				format('paths k=%s min_score=%s refine=%s service=[%s] backend=[%s]',
					   k, min_score, refine, a, b) END);
			RETURN a = b;
		END $$;

		-- identify_batch() against brute force per probe
		CREATE FUNCTION check_batch(g regclass, ps mcc_template[], k int, refine text DEFAULT 'none')
		RETURNS boolean LANGUAGE plpgsql AS $$
		DECLARE a text; b text;
		BEGIN
			SELECT string_agg(i || '|' || coalesce(hits, ''), ';' ORDER BY i) INTO a
			FROM generate_series(1, cardinality(ps)) i
			LEFT JOIN (SELECT probe_no, string_agg(id || ':' || score, ',' ORDER BY ord) AS hits
					   FROM identify_batch(g, ps, k, 0, refine => refine) WITH ORDINALITY AS t(probe_no, id, score, ord)
					   GROUP BY probe_no) r ON r.probe_no = i;
			SELECT string_agg(i || '|' || brute_force(g, ps[i], k, 0, refine), ';' ORDER BY i) INTO b
			FROM generate_series(1, cardinality(ps)) i;
			INSERT INTO checks VALUES (a = b, CASE WHEN a <> b THEN
				format('batch k=%s refine=%s identify_batch=[%s] brute=[%s]', k, refine, a, b) END);
			RETURN a = b;
		END $$;
	});
}

# The start most service tests share: gallery $name (create_gallery with
# $n, $seed), its probes (create_probes with $seed, $mated, $other), the
# SQL helpers (install_checks), and the gallery registered.
sub served_gallery
{
	my ($node, $name, $n, $seed, $mated, $other) = @_;
	create_gallery($node, $name, $n, $seed);
	create_probes($node, $seed, $mated, $other);
	install_checks($node);
	$node->safe_psql('postgres', "SELECT mcc_gallery_register('$name')");
	return;
}

# Compare identify() with brute force for every probe (one REPEATABLE READ
# transaction each, after the statements in $setup; refine 'none' unless
# given); returns the number of mismatches. Dies if a query fails.
sub check_all_probes
{
	my ($node, $gallery, $k, $min_score, $setup, $refine) = @_;
	$min_score //= 0;
	$setup //= '';
	$refine //= 'none';
	my $bad = 0;
	my $n = $node->safe_psql('postgres', 'SELECT count(*) FROM probes');
	for my $pid (1 .. $n)
	{
		my $ok = $node->safe_psql('postgres', qq{
			$setup
			BEGIN ISOLATION LEVEL REPEATABLE READ;
			SELECT check_identify('$gallery', tpl, $k, $min_score, '$refine') FROM probes WHERE pid = $pid;
			COMMIT;
		});
		$bad++ unless $ok eq 't';
	}
	return $bad;
}

# The pid of a service process: 'engine' or 'supervisor'.
sub service_pid
{
	my ($node, $which) = @_;
	return $node->safe_psql('postgres', "SELECT ${which}_pid FROM mcc_service_status()");
}

# pgbench's scripts (name => text) written to a new temporary directory,
# returned; and the options that connect pgbench to $node's postgres.
sub pgbench_scripts
{
	my (%script) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir;
	for my $f (keys %script)
	{
		open my $fh, '>', "$dir/$f" or die "$dir/$f: $!";
		print $fh $script{$f};
		close $fh;
	}
	return $dir;
}

sub pgbench_conn
{
	my ($node) = @_;
	return ('-h', $node->host, '-p', $node->port, '-n', 'postgres');
}

push @EXPORT, 'create_probes', 'pgbench_scripts', 'pgbench_conn';

1;
