# The re-check of a partitioned gallery's candidates routed to their
# partitions and read through each partition's key index
# (src/service/service_recheck_route.c) instead of a query planned at every
# call. Galleries partitioned by range (with a default partition), by list
# (integer keys, a default partition), by hash, and on two levels (range,
# then hash): identify() through the matcher engine equals brute force over
# the caller's snapshot for every probe, with the candidates re-checked
# (refine none) and with the engine's final hits re-checked (fused, refined
# in the engine), before and after rows are deleted, replaced and moved
# between partitions; the re-check is routed (its DEBUG2 line) and a
# plain table keeps the query.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('route');
served_gallery($node, 'g', 300, 41, 10, 2);

$node->safe_psql('postgres', q{
	CREATE TABLE r_range (id bigint PRIMARY KEY, tpl mcc_template) PARTITION BY RANGE (id);
	CREATE TABLE r_range_a PARTITION OF r_range FOR VALUES FROM (MINVALUE) TO (100);
	CREATE TABLE r_range_b PARTITION OF r_range FOR VALUES FROM (100) TO (250);
	CREATE TABLE r_range_d PARTITION OF r_range DEFAULT;
	CREATE TABLE r_list (id integer PRIMARY KEY, tpl mcc_template) PARTITION BY LIST (id);
	CREATE TABLE r_list_a PARTITION OF r_list FOR VALUES IN (0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233);
	CREATE TABLE r_list_b PARTITION OF r_list FOR VALUES IN (4, 6, 7, 9, 10, 11, 12, 100, 200, 299);
	CREATE TABLE r_list_d PARTITION OF r_list DEFAULT;
	CREATE TABLE r_hash (id bigint PRIMARY KEY, tpl mcc_template) PARTITION BY HASH (id);
	CREATE TABLE r_hash_0 PARTITION OF r_hash FOR VALUES WITH (MODULUS 3, REMAINDER 0);
	CREATE TABLE r_hash_1 PARTITION OF r_hash FOR VALUES WITH (MODULUS 3, REMAINDER 1);
	CREATE TABLE r_hash_2 PARTITION OF r_hash FOR VALUES WITH (MODULUS 3, REMAINDER 2);
	CREATE TABLE r_two (id bigint PRIMARY KEY, tpl mcc_template) PARTITION BY RANGE (id);
	CREATE TABLE r_two_lo PARTITION OF r_two FOR VALUES FROM (MINVALUE) TO (150) PARTITION BY HASH (id);
	CREATE TABLE r_two_lo_0 PARTITION OF r_two_lo FOR VALUES WITH (MODULUS 2, REMAINDER 0);
	CREATE TABLE r_two_lo_1 PARTITION OF r_two_lo FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	CREATE TABLE r_two_hi PARTITION OF r_two FOR VALUES FROM (150) TO (MAXVALUE);
});
my @galleries = ('r_range', 'r_list', 'r_hash', 'r_two');
for my $t (@galleries)
{
	$node->safe_psql('postgres', "INSERT INTO $t SELECT id, tpl FROM g; ANALYZE $t; SELECT mcc_gallery_register('$t')");
}

sub exact
{
	my ($what) = @_;
	for my $t (@galleries)
	{
		for my $refine ('none', 'fused')
		{
			is(check_all_probes($node, $t, 6, 0, 'SET mcc.fallback = error;', $refine), 0,
				"$t, refine $refine, $what: every answer equals brute force");
		}
	}
}

exact('as enrolled');

# the routed re-check is the one used, for a partitioned gallery only
for my $t ('r_two', 'g')
{
	my ($ret, $out, $err) = $node->psql('postgres', qq{
		SET mcc.fallback = error; SET client_min_messages = debug2;
		SELECT count(*) FROM identify('$t', (SELECT tpl FROM probes WHERE pid = 1), 5, refine => 'none')});
	if ($t eq 'g')
	{
		unlike($err, qr/re-check of \d+ keys/, 'a plain table: the re-check query');
	}
	else
	{
		like($err, qr/re-check of \d+ keys of "$t" routed to their partitions/,
			'a gallery on two levels: the re-check routed to its partitions');
	}
}

# deleted, replaced and moved rows (an UPDATE of the key moves a row to
# another partition); the probes' own fingers among them
for my $t (@galleries)
{
	$node->safe_psql('postgres', qq{
		DELETE FROM $t WHERE id IN (1, 4, 120, 260);
		UPDATE $t SET tpl = (SELECT tpl FROM probes WHERE pid = 3) WHERE id = 290;
		UPDATE $t SET id = id + 1000 WHERE id IN (2, 7, 30, 270);
		UPDATE $t SET id = -5 WHERE id = 280});
}
exact('after rows were deleted, replaced and moved between partitions');

$node->stop;
done_testing();
