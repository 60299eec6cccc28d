# MccSharedData.pm: the real test data of ../shared/data for the TAP tests,
# found through MCC_SHARED_DATA (never copied into the repository).
package MccSharedData;

use strict;
use warnings;

use Cwd 'abs_path';
use Exporter 'import';

our @EXPORT = qw(shared_data);

# The absolute path of MCC_SHARED_DATA if it holds the folder $sub (e.g.
# fvc2002/images), else undef: the caller skips, saying so.
sub shared_data
{
	my ($sub) = @_;
	my $data = $ENV{MCC_SHARED_DATA} || '';
	return undef unless $data && -d "$data/$sub";
	return abs_path($data);
}

1;
