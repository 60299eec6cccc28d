#!/usr/bin/env bash
# run-tests.sh: build, install and run every mcc test; the last line is
# "N passed, M failed".
#
#   scripts/run-tests.sh [stage ...]
#       stages: unit sanitize deb regress examples tap fuzz (default: all, in
#       this order)
#
# As root (CI, a fresh Debian machine): installs the Debian packages it needs,
# builds and installs the extension, then runs the stages as the unprivileged
# user "mcctest" (PostgreSQL refuses to run as root) on a copy of the tree.
# As another user: the extension must already be installed (or the PostgreSQL
# lib/share directories writable); runs the stages in place; deb needs root.
#
# Stage deb (root): builds the Debian package postgresql-15-mcc (make deb),
# installs it in place of the source installation, runs the pg_regress
# suite against the installed package as mcctest, purges the package, and
# installs from source again for the other stages.
# Stage sanitize: the unit tests again, built with AddressSanitizer and
# UndefinedBehaviorSanitizer (make sanitize); a finding fails its test.
# Every C build here warns as an error (MCC_WERROR=yes, the Makefile's
# -Werror), except the Debian package's, which is built as Debian builds it.
# Stage examples: the Python application of examples/ (its demo) against a
# throwaway cluster, and the sample records checked against make-records.sh.
#
# Counting: one per unit-test check (in unit and again in sanitize), one per
# pg_regress test file, one per
# TAP assertion (a TAP script that dies without a failing assertion counts
# one failure), one per fuzz harness, one per step of the deb stage (build,
# install, engine, purge) plus its pg_regress files, one per line of the
# examples' TAP output. Skipped checks count as passed and say why in the log.
#
# Environment: MCC_SHARED_DATA (default ../shared/data) is the real test data;
# tests that need it skip when it is absent. FUZZ_SECONDS (default 20).
# MCC_TAP_TESTS: the TAP scripts to run (default test/t/*.pl).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(unit sanitize deb regress examples tap fuzz)
# CI's builds fail on any compiler warning (the Makefile's MCC_WERROR)
export MCC_WERROR=${MCC_WERROR:-yes}
log_dir=${MCC_TEST_LOGS:-$here/build/test-logs}

needs_server() {
	local s
	for s in "${stages[@]}"; do case $s in regress|tap|examples|deb) return 0 ;; esac; done
	return 1
}

wants() {
	local s
	for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done
	return 1
}

# "N passed, M failed" of a log's last such line, as "N M" (0 1 if none)
summary_of() {
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
	[ -n "$line" ] && echo "$line" | awk '{print $1, $3}' || echo "0 1"
}

# Stage deb, as root under the install lock (see the top): the package
# built by make deb replaces the source installation while the pg_regress
# suite runs against it; counts go to deb_passed / deb_failed.
deb_check() {
	if [ "$1" -eq 0 ]; then
		deb_passed=$((deb_passed + 1)); echo "ok - deb: $2"
	else
		deb_failed=$((deb_failed + 1)); echo "not ok - deb: $2"
	fi
}

run_deb_stage() {
	local pkg=postgresql-15-mcc lib engine
	lib=$(pg_config --pkglibdir)
	echo "== deb: the package $pkg installed, pg_regress against it"
	deb_check "$deb_built" "package built ($(cd "$here/build/deb" 2>/dev/null && ls ${pkg}_*.deb 2>/dev/null))"
	if [ "$deb_built" -ne 0 ]; then
		tail -40 "$deb_log"; return
	fi
	# the source installation's files go first: dpkg would overwrite them,
	# but update-alternatives never replaces a real file with its link
	make -s -C "$here" uninstall >/dev/null 2>&1
	dpkg -i "$here"/build/deb/${pkg}_*.deb >>"$deb_log" 2>&1 &&
		[ "$(dpkg-query -W -f='${Status}' $pkg)" = "install ok installed" ] &&
		dpkg -S "$lib/mcc.so" "$(pg_config --sharedir)/extension/mcc.control" >/dev/null 2>&1
	deb_check $? "installed; mcc.so and mcc.control belong to $pkg"
	engine=$(readlink -f "$lib/mcc_engine")
	[ "$engine" = "$lib/mcc_engine-cpu" ] && "$engine" --help 2>&1 | grep -q "^usage: mcc_engine"
	deb_check $? "mcc_engine is the alternative $engine (the CPU engine)"
	MCC_LOG_SUFFIX=/deb MCC_REGRESS_WHAT="the installed package $pkg" \
		as_mcctest regress | tee "$work/build/test-logs/deb-regress.out"
	read -r p f <<<"$(summary_of "$work/build/test-logs/deb-regress.out")"
	deb_passed=$((deb_passed + p))
	deb_failed=$((deb_failed + f))
	dpkg --purge $pkg >>"$deb_log" 2>&1 && [ ! -e "$lib/mcc.so" ] && [ ! -e "$lib/mcc_engine" ]
	deb_check $? "purged: no mcc.so, no mcc_engine left"
}

# --- root: dependencies, build, install, then hand over to mcctest ---------
if [ "$(id -u)" = 0 ] && [ -z "${MCC_AS_USER:-}" ]; then
	scripts/install-deps.sh || exit 1
	export PATH="$(pg_config --bindir):$PATH"
	if [ -z "${MCC_SHARED_DATA:-}" ] && [ -d "$here/../shared/data" ]; then
		export MCC_SHARED_DATA=$(cd "$here/../shared/data" && pwd)
	fi
	id mcctest >/dev/null 2>&1 || useradd -m -s /bin/bash mcctest || exit 1
	user_stages=()
	for s in "${stages[@]}"; do [ "$s" = deb ] || user_stages+=("$s"); done
	deb_log=$here/build/deb-build.log
	if wants deb; then
		# built before the lock and the copy below: building installs nothing
		echo "== deb: building the package (make deb WITH_CUDA=no)"
		mkdir -p "$here/build"
		MCC_WERROR=no DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" make -C "$here" deb WITH_CUDA=no >"$deb_log" 2>&1
		deb_built=$?
	fi
	work=$(mktemp -d /tmp/mcc-test.XXXXXX)
	# copy the working tree (not .git, not build outputs) for mcctest
	tar -C "$here" --exclude=./.git --exclude=./build --exclude=./results \
		--exclude=./tmp_check --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$work" -xf -
	chown -R mcctest "$work"
	chmod 755 "$work"
	mkdir -p "$work/build/test-logs" && chown mcctest "$work/build" "$work/build/test-logs"
	[ -f "$deb_log" ] && cp "$deb_log" "$work/build/test-logs/deb.log"
	# the stages as mcctest; fd 9 (the lock) is not inherited: a server a
	# test leaves behind must not keep every later run waiting
	as_mcctest() {
		runuser -u mcctest -- env MCC_AS_USER=1 PATH="$PATH" \
			MCC_SHARED_DATA="${MCC_SHARED_DATA:-}" FUZZ_SECONDS="${FUZZ_SECONDS:-20}" \
			MCC_TEST_LOGS="$work/build/test-logs${MCC_LOG_SUFFIX:-}" \
			MCC_REGRESS_WHAT="${MCC_REGRESS_WHAT:-}" MCC_TAP_TESTS="${MCC_TAP_TESTS:-}" \
			MCC_WERROR="$MCC_WERROR" \
			bash "$work/scripts/run-tests.sh" "$@" 9>&-
	}
	deb_log=$work/build/test-logs/deb.log
	(
		# one install at a time on this machine: the installed module must
		# stay the one under test until the run ends
		flock 9
		deb_passed=0
		deb_failed=0
		if wants deb; then
			run_deb_stage 9>&-
		fi
		if needs_server; then
			make -s -C "$here" >/dev/null 9>&- && make -s -C "$here" install >/dev/null 9>&- || {
				echo "run-tests: build or install failed"; make -C "$here" 2>&1 | tail -30
				echo "$deb_passed passed, $((deb_failed + 1)) failed"; exit 1; }
		fi
		rc=0
		if [ ${#user_stages[@]} -gt 0 ]; then
			as_mcctest "${user_stages[@]}" | tee "$work/build/test-logs/stages.out"
			rc=${PIPESTATUS[0]}
			read -r p f <<<"$(summary_of "$work/build/test-logs/stages.out")"
		else
			p=0; f=0
		fi
		f=$((f + deb_failed))
		echo "$((p + deb_passed)) passed, $f failed"
		[ "$rc" -eq 0 ] && [ "$f" -eq 0 ]
	) 9>/tmp/mcc-install.lock
	rc=$?
	mkdir -p "$log_dir" && cp -r "$work/build/test-logs/." "$log_dir/" 2>/dev/null
	[ -n "${MCC_KEEP_WORK:-}" ] || rm -rf "$work"
	exit $rc
fi

# --- unprivileged: run the stages ------------------------------------------
export PATH="$(pg_config --bindir):$PATH"
mkdir -p "$log_dir"
passed=0
failed=0

# count TAP lines of a log: "ok" (incl. SKIP) and "not ok"
count_tap() {
	echo "$(grep -cE '^ok ' "$1") $(grep -cE '^not ok ' "$1")"
}

add() {
	passed=$((passed + $1))
	failed=$((failed + $2))
}

run_unit() {
	local log=$log_dir/unit.log
	echo "== unit tests"
	if ! make -s unit-build >"$log" 2>&1; then
		cat "$log"; failed=$((failed + 1)); return
	fi
	make -s unit >>"$log" 2>&1
	grep -E '^not ok|^# (.*failed|SKIP)|SKIP' "$log" | head -50
	read -r p f <<<"$(count_tap "$log")"
	add "$p" "$f"
	echo "   unit: $p passed, $f failed"
}

# the unit tests under ASan and UBSan (make sanitize, build/sanitize/)
run_sanitize() {
	local log=$log_dir/sanitize.log p f rc
	echo "== unit tests under AddressSanitizer and UndefinedBehaviorSanitizer"
	if ! make -s sanitize-build >"$log" 2>&1; then
		tail -40 "$log"; failed=$((failed + 1)); return
	fi
	make -s sanitize >>"$log" 2>&1
	rc=$?
	grep -E '^not ok|^# (.*failed|SKIP)|SKIP|runtime error|ERROR: (Address|Leak)Sanitizer' "$log" | head -50
	read -r p f <<<"$(count_tap "$log")"
	# a test stopped by a finding has printed no "not ok" for it
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		grep -B2 -A30 -E 'runtime error|ERROR: (Address|Leak)Sanitizer' "$log" | head -80
	fi
	add "$p" "$f"
	echo "   sanitize: $p passed, $f failed"
}

start_server() {
	srv=$(mktemp -d /tmp/mcc-pg.XXXXXX)
	port=$((20000 + RANDOM % 20000))
	initdb -D "$srv/data" -A trust -U postgres --no-sync >"$srv/initdb.log" 2>&1 || { cat "$srv/initdb.log"; return 1; }
	pg_ctl -D "$srv/data" -l "$srv/server.log" -w \
		-o "-p $port -k $srv -c listen_addresses='' -c fsync=off" start >/dev/null || { cat "$srv/server.log"; return 1; }
	export PGHOST=$srv PGPORT=$port PGUSER=postgres
}

stop_server() {
	pg_ctl -D "$srv/data" -m fast stop >/dev/null 2>&1
	cp "$srv/server.log" "$log_dir/${1:-regress}-server.log" 2>/dev/null
	rm -rf "$srv"
}

run_regress() {
	local log=$log_dir/regress.log p f
	echo "== pg_regress${MCC_REGRESS_WHAT:+ against $MCC_REGRESS_WHAT}"
	if ! start_server; then failed=$((failed + 1)); return; fi
	make -s installcheck >"$log" 2>&1
	stop_server
	p=$(grep -cE '^(ok|test) .*\.\.\. ok|^ok [0-9]+ ' "$log")
	f=$(grep -cE '\.\.\. FAILED|^not ok [0-9]+ |\.\.\. failed' "$log")
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		cat "$log"; f=1
	fi
	grep -E 'FAILED|failed' "$log"
	[ -f regression.diffs ] && [ "$f" -gt 0 ] && head -100 regression.diffs
	add "$p" "$f"
	echo "   pg_regress: $p passed, $f failed"
}

run_tap() {
	local t log p f rc
	echo "== TAP tests"
	make -s tools >"$log_dir/tools.log" 2>&1 || { cat "$log_dir/tools.log"; failed=$((failed + 1)); return; }
	# MCC_TAP_TESTS (e.g. "test/t/030_*.pl test/t/040_upgrade.pl") runs only those
	for t in ${MCC_TAP_TESTS:-test/t/*.pl}; do
		[ -e "$t" ] || continue
		log=$log_dir/tap-$(basename "$t" .pl).log
		make -s prove-installcheck PROVE_TESTS="$t" PROVE_FLAGS="-v" >"$log" 2>&1
		rc=$?
		read -r p f <<<"$(count_tap "$log")"
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			f=1
			tail -30 "$log"
		fi
		add "$p" "$f"
		grep -E '^not ok|# SKIP|^# +Failed' "$log"
		echo "   $(basename "$t"): $p passed, $f failed"
	done
}

# examples/: the samples are what make-records.sh makes, and the demo of
# the Python application passes against a throwaway cluster
run_examples() {
	local log=$log_dir/examples.log p f py=/usr/bin/python3 again
	echo "== examples"
	[ -x "$py" ] || py=python3
	: >"$log"
	again=$(mktemp -d /tmp/mcc-records.XXXXXX)
	if make -s build/tools/mccgen >>"$log" 2>&1 && examples/make-records.sh "$again/records" build/tools/mccgen >>"$log" 2>&1 \
		&& diff -r examples/records "$again/records" >>"$log" 2>&1; then
		echo "ok - examples/records are what examples/make-records.sh makes" >>"$log"
	else
		echo "not ok - examples/records are what examples/make-records.sh makes" >>"$log"
	fi
	rm -rf "$again"
	if start_server; then
		mkdir -p "$srv/tmp"
		PGDATABASE=postgres "$py" examples/idm.py demo --tmp "$srv/tmp" >>"$log" 2>&1 \
			|| echo "# examples/idm.py demo exited with status $?" >>"$log"
		stop_server examples
	else
		echo "not ok - examples: no server" >>"$log"
	fi
	grep -E '^not ok|^#|^idm:|Traceback|Error' "$log" | head -40
	read -r p f <<<"$(count_tap "$log")"
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then cat "$log"; f=1; fi
	# a demo that stopped early (an exception) has no plan line
	grep -qE '^1\.\.[0-9]+$' "$log" || { f=$((f + 1)); tail -20 "$log"; }
	add "$p" "$f"
	echo "   examples: $p passed, $f failed"
}

run_fuzz() {
	local log=$log_dir/fuzz.log p f
	echo "== fuzz (${FUZZ_SECONDS:-20}s per harness)"
	if ! command -v clang >/dev/null; then
		echo "   fuzz: SKIP, clang is not installed"; return
	fi
	make -s fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-20}" >"$log" 2>&1
	read -r p f <<<"$(count_tap "$log")"
	add "$p" "$f"
	[ "$f" -gt 0 ] && grep -A40 '^not ok' "$log" | head -80
	echo "   fuzz: $p passed, $f failed"
}

for s in "${stages[@]}"; do
	case $s in
		unit) run_unit ;;
		sanitize) run_sanitize ;;
		regress) run_regress ;;
		examples) run_examples ;;
		deb) echo "run-tests: stage deb needs root (it installs a package)"; failed=$((failed + 1)) ;;
		tap) run_tap ;;
		fuzz) run_fuzz ;;
		*) echo "run-tests: unknown stage $s"; failed=$((failed + 1)) ;;
	esac
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
