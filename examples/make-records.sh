#!/bin/sh
# make-records.sh: (re)make the sample records under examples/records/ with
# the synthetic generator (docs/synthetic.md). The generator is
# deterministic: the same commands write the same bytes on any machine, so
# the committed files can be checked against this script (examples/run.sh
# does, in CI). Synthetic only: no real fingerprint is ever part of the
# repository.
#
#   examples/make-records.sh [OUT [MCCGEN]]
#       OUT      default examples/records
#       MCCGEN   default build/tools/mccgen (make tools)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/records}
gen=${2:-$here/../build/tools/mccgen}
seed=2026
rm -rf "$out"
mkdir -p "$out/enrol" "$out/probes"

# enrolment: impression 0 of fingers 1..6, one format per finger
for f in iso:1 ansi:2 iso2011:3 ansi2009:4 xyt:5 iso:6; do
	fmt=${f%%:*}
	finger=${f##*:}
	"$gen" gallery --fingers 1 --first "$finger" --seed $seed --format "$fmt" --out "$out/enrol"
done

# probes: 8 ISO 2005 records, 6 of them later impressions of enrolled
# fingers, 2 of fingers never enrolled; truth.csv says which is which
"$gen" probes --count 8 --gallery-fingers 6 --first 1 --mated-fraction 0.75 --seed $seed \
	--format iso --out "$out/probes" --truth "$out/probes/truth.csv" --header

# who is who (the generator knows fingers, the application people); position
# is the ISO/IEC 19794-2 finger position code (1 right thumb .. 10 left little)
cat > "$out/people.csv" <<'CSV'
finger,name,position,record
1,alice,2,enrol/1_0.iso
2,bob,7,enrol/2_0.fmr
3,carol,1,enrol/3_0.iso2011.iso
4,dave,3,enrol/4_0.ansi2009.fmr
5,erin,2,enrol/5_0.xyt
6,frank,6,enrol/6_0.iso
CSV
