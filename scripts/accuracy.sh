#!/usr/bin/env bash
# accuracy.sh: the measurements behind docs/accuracy.md.
#
#   scripts/accuracy.sh fvc      FVC2002 set B: 4 databases x 4 minutiae encodings,
#                                every method, bozorth3 alongside, DET plots
#   scripts/accuracy.sh settle   the runs that settled the DTR normaliser and
#                                the consolidation score (FVC2002 and synthetic)
#   scripts/accuracy.sh synth    the synthetic identification benchmark
#                                (gallery 20,000, 10,000 probes, half mated),
#                                synthetic FVC protocol, refinement cost
#   scripts/accuracy.sh synth-hard   the identification benchmark with the
#                                generator's harder first defaults
#   scripts/accuracy.sh extract  minutiae extracted from the FVC2002 images by
#                                mccextract (mcc_extract.h): every method on
#                                them next to mindtct's and FingerJetFX's, and
#                                the extraction time per image on one core;
#                                EXTRACT_ARGS="--set period=9 ..." passes
#                                parameters to mccextract (section 11's runs)
#   scripts/accuracy.sh extract-sweep   the extraction parameters of section 11,
#                                one changed at a time (lss, lss-r, lss-dtr)
#   scripts/accuracy.sh thresholds   the thresholds of mcc_threshold() (FVC2002
#                                and synthetic impostor pairs of every method)
#   scripts/accuracy.sh tables   print the markdown tables of docs/accuracy.md
#
# Real data: $MCC_SHARED_DATA (default ../shared/data; never copied into the
# repository). Results: build/accuracy/ (tsv, DET data, gnuplot scripts);
# plots: docs/img/*.png. Uses every CPU (mcceval --threads).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
data=${MCC_SHARED_DATA:-$here/../shared/data}
out=$here/build/accuracy
img=$here/docs/img
eval_bin=$here/build/tools/mcceval
mkdir -p "$out" "$img"
make -s build/tools/mcceval build/bench/bench_refine

# FVC2002 image frames (shared/data README): W x H x dpi
declare -A frame=([DB1_B]=388x374x500 [DB2_B]=296x560x569 [DB3_B]=300x300x500 [DB4_B]=288x384x500)
encodings="nbis-mindtct-xyt fingerjetfx-iso19794-2-2005 secugen-iso19794-2-2005 nbis-minex-ansi378-2004"
# the generator's first defaults, harder than the current ones (docs/synthetic.md)
hard=(--set pos_noise=2.5 --set angle_noise=6 --set p_missing=0.15 --set max_spurious=0.15
	--set variability=0 --set max_translation=30)
declare -A short=([nbis-mindtct-xyt]=mindtct [fingerjetfx-iso19794-2-2005]=fjfx
	[secugen-iso19794-2-2005]=secugen [nbis-minex-ansi378-2004]=minex)

# mcceval fvc over the FVC2002 minutiae of database $1 in encoding $2 (at
# the database's frame), with the further arguments.
fvc_minutiae() {
	local db=$1 enc=$2
	shift 2
	"$eval_bin" fvc --dir "$data/fvc2002/minutiae/$enc/$db" --frame "${frame[$db]}" "$@"
}

# Plot a DET script written by mcceval into docs/img.
plot() {
	(cd "$out" && gnuplot "$1.gp") && mv "$out/$1.png" "$img/$1.png"
}

fvc() {
	local tsv=$out/fvc.tsv db enc base
	rm -f "$tsv"
	for db in DB1_B DB2_B DB3_B DB4_B; do
		for enc in $encodings; do
			base=()
			if [ "$enc" = nbis-mindtct-xyt ]; then
				base=(--baseline "$data/fvc2002/scores/bozorth3_mindtct_fvc2002_$db.txt"
					--baseline-name bozorth3)
			fi
			fvc_minutiae "$db" "$enc" "${base[@]}" --tsv "$tsv" --label "$db:${short[$enc]}" \
				--det "$out/det-fvc2002-$db-${short[$enc]}" \
				--title "FVC2002 ${db%_B} set B, ${short[$enc]} minutiae: all pairs" \
				>"$out/fvc-$db-${short[$enc]}.txt" 2>>"$out/fvc.log"
			plot "det-fvc2002-$db-${short[$enc]}"
		done
		# SecuGen records mapped back from their 300x400 frame to the image's
		"$eval_bin" fvc --dir "$data/fvc2002/minutiae/secugen-iso19794-2-2005/$db" \
			--unstretch "$(echo "${frame[$db]}" | cut -dx -f1-2)" \
			--tsv "$out/fvc-unstretched.tsv" --label "$db:secugen-unstretched" \
			>"$out/fvc-$db-secugen-unstretched.txt" 2>>"$out/fvc.log"
	done
}

settle() {
	local db enc
	rm -f "$out"/settle-*.tsv
	for db in DB1_B DB2_B DB3_B DB4_B; do
		for enc in $encodings; do
			for norm in sum mean; do
				fvc_minutiae "$db" "$enc" --methods lss-dtr,lsa-dtr,lgs-dtr --dtr-norm $norm \
					--tsv "$out/settle-dtr-$norm.tsv" --label "$db:${short[$enc]}" >/dev/null 2>&1
			done
			for cs in count sim count-lss; do
				fvc_minutiae "$db" "$enc" --methods consolidation --cons-score $cs \
					--tsv "$out/settle-cons-$cs.tsv" --label "$db:${short[$enc]}" >/dev/null 2>&1
			done
		done
	done
	# synthetic fingers, the harder first defaults of the generator
	# (docs/synthetic.md): the current defaults are too easy to tell these apart
	for norm in sum mean; do
		"$eval_bin" fvc --synth "${hard[@]}" --fingers 100 --impressions 8 \
			--methods lss-dtr,lsa-dtr,lgs-dtr --dtr-norm $norm \
			--tsv "$out/settle-synth-dtr-$norm.tsv" --label synth >/dev/null 2>&1
	done
	for cs in count sim count-lss; do
		"$eval_bin" fvc --synth "${hard[@]}" --fingers 100 --impressions 8 \
			--methods consolidation --cons-score $cs \
			--tsv "$out/settle-synth-cons-$cs.tsv" --label synth >/dev/null 2>&1
	done
	# the consolidation's distance tolerance (paper 001: 12 px)
	for ts in 8 16 20; do
		for db in DB1_B DB2_B DB3_B DB4_B; do
			for enc in $encodings; do
				fvc_minutiae "$db" "$enc" --methods consolidation --cons-ts $ts \
					--tsv "$out/settle-cons-ts$ts.tsv" --label "$db:${short[$enc]}" >/dev/null 2>&1
			done
		done
	done
	# what the 32-cylinder selection costs: consolidation with every cylinder
	for db in DB1_B DB2_B DB3_B DB4_B; do
		for enc in $encodings; do
			fvc_minutiae "$db" "$enc" --methods consolidation --cons-nsel 256 \
				--tsv "$out/settle-cons-all.tsv" --label "$db:${short[$enc]}" >/dev/null 2>&1
		done
	done
}

synth() {
	rm -f "$out/synth-ident.tsv" "$out/synth-fvc.tsv"
	"$eval_bin" ident --synth --gallery 20000 --probes 10000 \
		--det "$out/det-synth-ident" \
		--title "Synthetic identification: gallery 20,000, 10,000 probes (half mated)" \
		--tsv "$out/synth-ident.tsv" --label synth-20000 \
		>"$out/synth-ident.txt" 2>"$out/synth-ident.log"
	plot det-synth-ident
	"$eval_bin" fvc --synth --fingers 100 --impressions 8 --det "$out/det-synth-fvc" \
		--title "Synthetic fingers, FVC protocol: 100 fingers x 8 impressions" \
		--tsv "$out/synth-fvc.tsv" --label synth-fvc \
		>"$out/synth-fvc.txt" 2>"$out/synth-fvc.log"
	plot det-synth-fvc
	build/bench/bench_refine 200 3 >"$out/bench-refine.txt"
}

# the same identification benchmark with the generator's harder first defaults
synth_hard() {
	rm -f "$out/synth-hard-ident.tsv"
	"$eval_bin" ident --synth "${hard[@]}" --gallery 20000 --probes 10000 \
		--det "$out/det-synth-hard-ident" \
		--title "Synthetic identification, harder fingers: gallery 20,000, 10,000 probes" \
		--tsv "$out/synth-hard-ident.tsv" --label synth-hard-20000 \
		>"$out/synth-hard-ident.txt" 2>"$out/synth-hard-ident.log"
	plot det-synth-hard-ident
}

# Our own minutiae (docs/accuracy.md, section 11). mccextract runs in one
# process, one image after another (one core); its summary lines give the
# extraction time per image. DB2_B is 569 dpi: extracted at its resolution
# and, as mindtct was, at 500.
extract() {
	local tsv=$out/extract.tsv times=$out/extract-time.txt db enc dpi dpis lab
	make -s build/tools/mccextract
	rm -f "$tsv" "$times"
	for db in DB1_B DB2_B DB3_B DB4_B; do
		dpis=${frame[$db]##*x}
		[ "$dpis" = 500 ] || dpis="$dpis 500"
		for dpi in $dpis; do
			lab=ours
			[ "$dpi" = "${frame[$db]##*x}" ] || lab=ours-500dpi
			rm -rf "$out/extract/$db-$lab"
			mkdir -p "$out/extract/$db-$lab"
			# shellcheck disable=SC2086
			build/tools/mccextract --quiet --dpi "$dpi" ${EXTRACT_ARGS:-} --out "$out/extract/$db-$lab" \
				"$data/fvc2002/images/$db"/*.png | sed "s/^/$db $dpi dpi: /" >>"$times"
			"$eval_bin" fvc --dir "$out/extract/$db-$lab" --tsv "$tsv" --label "$db:$lab" \
				>"$out/extract-$db-$lab.txt" 2>>"$out/extract.log"
		done
		for enc in nbis-mindtct-xyt fingerjetfx-iso19794-2-2005; do
			fvc_minutiae "$db" "$enc" --tsv "$tsv" --label "$db:${short[$enc]}" >/dev/null 2>>"$out/extract.log"
		done
	done
	cat "$times"
}

# Section 11's parameter runs: the defaults, then one change at a time
# (label|mccextract arguments), every database at its own resolution.
sweep_variants=(
	"defaults|"
	"period 9 (the ridges' own)|--set period=9"
	"period 8|--set period=8"
	"period 7|--set period=7"
	"no clarity rule|--set min_clarity=0"
	"clarity 0.3|--set min_clarity=0.3"
	"no coherence rule|--set min_coherence=0"
	"tile mask alone, no pixel edge|--set edge_floor=0"
	"16-px border, no ray|--set border=16 --set border_ray=0"
	"spur rule on (7 px)|--set spur=7"
	"longer rules (18/12/12/14/6)|--set short_ridge=18 --set spur=12 --set bridge=12 --set gap=14 --set close=6"
	"first version|--set period=9 --set short_ridge=18 --set spur=12 --set bridge=12 --set gap=14 --set close=6 --set border=16 --set border_ray=0 --set min_clarity=0"
)

extract_sweep() {
	local tsv=$out/extract-sweep.tsv v label args db dir
	make -s build/tools/mccextract
	rm -f "$tsv"
	for v in "${sweep_variants[@]}"; do
		label=${v%%|*}
		args=${v#*|}
		for db in DB1_B DB2_B DB3_B DB4_B; do
			dir=$out/extract-sweep/$db
			rm -rf "$dir"
			mkdir -p "$dir"
			# shellcheck disable=SC2086
			build/tools/mccextract --quiet --dpi "${frame[$db]##*x}" $args --out "$dir" \
				"$data/fvc2002/images/$db"/*.png >/dev/null
			"$eval_bin" fvc --dir "$dir" --methods lss,lss-r,lss-dtr --tsv "$tsv" \
				--label "$label:$db" >/dev/null 2>>"$out/extract.log"
		done
	done
}

# The thresholds of mcc_threshold(): every method's impostor scores on the
# 16 FVC2002 sets and on 300 synthetic fingers x 2 (seed 11, not the tests'),
# written into the rows of sql/mcc--0.1.0--0.2.0.sql and docs/img/thresholds.png.
thresholds() {
	local db enc
	mkdir -p "$out/thr-fvc"
	rm -f "$out"/thr-fvc/*.scores
	for db in DB1_B DB2_B DB3_B DB4_B; do
		for enc in $encodings; do
			fvc_minutiae "$db" "$enc" --scores "$out/thr-fvc/$db-$enc.scores" >/dev/null 2>>"$out/thr.log"
		done
	done
	"$eval_bin" fvc --synth --fingers 300 --impressions 2 --set seed=11 \
		--scores "$out/thr-synth.scores" >/dev/null 2>>"$out/thr.log"
	python3 scripts/thresholds.py --real "$out/thr-fvc" --synth "$out/thr-synth.scores" \
		--sql sql/mcc--0.1.0--0.2.0.sql --tsv "$out/thresholds.tsv" --plot "$out/thresholds"
	plot thresholds
}

case "${1:-}" in
	fvc) fvc ;;
	extract-sweep) extract_sweep ;;
	extract) extract ;;
	thresholds) thresholds ;;
	settle) settle ;;
	synth) synth ;;
	synth-hard) synth_hard ;;
	tables) python3 scripts/accuracy_tables.py "$out" ;;
	*) echo "usage: scripts/accuracy.sh fvc|thresholds|settle|synth|synth-hard|extract|extract-sweep|tables" >&2; exit 2 ;;
esac
