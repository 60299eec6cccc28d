# identify()'s backend scan reads a template stored out of line where its
# TOAST chunks lie (src/template/toast_stream.c, scored by
# src/core/mcc/mcc_template_split.h) and assembles it only when it must: a
# value of more than eight chunks, or one whose chunks lie on more than two
# pages in a row or on pages apart (the stream keeps the page before the one
# it reads pinned, no more). sql/identify_toast.sql checks that every way
# ranks as brute force does; this test checks, from the scan's DEBUG2 line,
# that each way is taken where it should be, and the answers again.
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use MccServiceTest;

my $node = service_node('identify_toast', preload => 0);

$node->safe_psql('postgres', q{
	CREATE TABLE g2 (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
	INSERT INTO g2 SELECT finger, template FROM mcc_synthetic(900, 1, 21);
	CREATE TABLE gt (id bigint PRIMARY KEY, tpl mcc_template NOT NULL);
	INSERT INTO gt SELECT finger, template FROM mcc_synthetic(60, 1, 22, 0, 'tpami2010');
	CREATE TABLE probe (profile text PRIMARY KEY, tpl mcc_template NOT NULL);
	INSERT INTO probe SELECT 'gpu2015', template FROM mcc_synthetic(1, 2, 21, 5) WHERE impression = 1;
	INSERT INTO probe SELECT 'tpami2010', template FROM mcc_synthetic(1, 2, 22, 5, 'tpami2010')
		WHERE impression = 1;
});

# The scan's counts for $table (streamed, in place, assembled, fetched
# through the index) and whether its whole ranking equals brute force.
sub scan
{
	my ($table, $profile) = @_;
	my $probe = "(SELECT tpl FROM probe WHERE profile = '$profile')";
	my ($ret, $stdout, $stderr) = $node->psql('postgres', qq{
		SET mcc.service = off;
		SET client_min_messages = debug2;
		SELECT NOT EXISTS (
			SELECT id, score FROM identify('$table', $probe, 100000, refine => 'none')
			EXCEPT SELECT id, mcc_score(tpl, $probe, 'lss') FROM $table)
		   AND (SELECT count(*) FROM identify('$table', $probe, 100000, refine => 'none'))
		     = (SELECT count(*) FROM $table);
	});
	my @n = $stderr =~
	  /gallery scan of "$table": (\d+) templates read from \d+ TOAST pages in order \((\d+) where their chunks lie, (\d+) assembled\), (\d+) fetched through the index/;
	die "no scan counts for $table: $stderr" unless @n;
	return ($stdout eq 't', @n);
}

my ($same, $streamed, $in_place, $assembled, $fetched) = scan('g2', 'gpu2015');
ok($same, 'g2: identify() ranks as brute force');
cmp_ok($streamed, '>', 150, "g2: $streamed templates read from the TOAST pages");
is($in_place, $streamed, 'g2, as loaded: every one where its chunks lie, none assembled');

($same, $streamed, $in_place, $assembled, $fetched) = scan('gt', 'tpami2010');
ok($same, 'gt: identify() ranks as brute force');
my ($over8) = $node->safe_psql('postgres',
	'SELECT count(*) FROM gt WHERE (mcc_template_info(tpl)).bytes > 4 + 8 * 1996');
cmp_ok($over8, '>', 0, "gt: $over8 templates of more than eight chunks");
cmp_ok($assembled, '>=', $over8, "gt: those assembled, and those of more than two pages ($assembled)");
cmp_ok($in_place, '>', 0, "gt: the others read in place ($in_place)");
is($in_place + $assembled, $streamed, 'gt: none handed back');

# Holes: half the rows whose value's second chunk is small deleted and
# vacuumed away; then values of two nearly full chunks: the first fills a
# hole, the second does not fit what is left there and goes to another
# page, not the next one
$node->safe_psql('postgres', q{
	DELETE FROM g2 WHERE (mcc_template_info(tpl)).bytes BETWEEN 2100 AND 2400 AND id % 2 = 0;
	VACUUM g2;
	INSERT INTO g2 SELECT id, tpl FROM (
		SELECT 20000 + n AS id, (SELECT format('{"width":600,"height":600,"dpi":500,"minutiae":[%s]}',
			string_agg(format('[%s,%s,%s,"ending",60]', 20 + abs(hashint4(n * 1000 + i)) % 560,
				20 + abs(hashint4(n * 1000 + i + 500)) % 560, abs(hashint4(-n * 1000 - i)) % 628 / 100.0), ','))
			FROM generate_series(1, 80 + n % 10) i)::mcc_template AS tpl
		FROM generate_series(0, 29) n) w
	WHERE (mcc_template_info(tpl)).bytes BETWEEN 3500 AND 3990;
});
($same, $streamed, $in_place, $assembled, $fetched) = scan('g2', 'gpu2015');
ok($same, 'g2 refilled: identify() ranks as brute force');
cmp_ok($assembled + $fetched, '>', 0,
	"g2 refilled: values with chunks on pages apart assembled ($assembled) or fetched ($fetched)");
cmp_ok($in_place, '>', 0, "g2 refilled: the others read in place ($in_place)");

$node->stop;
done_testing();
