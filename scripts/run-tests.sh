#!/usr/bin/env bash
# run-tests.sh: build, install and run every mcc test; the last line is
# "N passed, M failed".
#
#   scripts/run-tests.sh [stage ...]     stages: unit regress tap fuzz (default: all)
#
# As root (CI, a fresh Debian machine): installs the Debian packages it needs,
# builds and installs the extension, then runs the stages as the unprivileged
# user "mcctest" (PostgreSQL refuses to run as root) on a copy of the tree.
# As another user: the extension must already be installed (or the PostgreSQL
# lib/share directories writable); runs the stages in place.
#
# Counting: one per unit-test check, one per pg_regress test file, one per
# TAP assertion (a TAP script that dies without a failing assertion counts
# one failure), one per fuzz harness. Skipped checks count as passed and say
# why in the log.
#
# Environment: MCC_SHARED_DATA (default ../shared/data) is the real test data;
# tests that need it skip when it is absent. FUZZ_SECONDS (default 20).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(unit regress tap fuzz)
log_dir=${MCC_TEST_LOGS:-$here/build/test-logs}

needs_server() {
	local s
	for s in "${stages[@]}"; do case $s in regress|tap) return 0 ;; esac; done
	return 1
}

# --- root: dependencies, build, install, then hand over to mcctest ---------
if [ "$(id -u)" = 0 ] && [ -z "${MCC_AS_USER:-}" ]; then
	scripts/install-deps.sh || exit 1
	export PATH="$(pg_config --bindir):$PATH"
	if [ -z "${MCC_SHARED_DATA:-}" ] && [ -d "$here/../shared/data" ]; then
		export MCC_SHARED_DATA=$(cd "$here/../shared/data" && pwd)
	fi
	id mcctest >/dev/null 2>&1 || useradd -m -s /bin/bash mcctest || exit 1
	work=$(mktemp -d /tmp/mcc-test.XXXXXX)
	# copy the working tree (not .git, not build outputs) for mcctest
	tar -C "$here" --exclude=./.git --exclude=./build --exclude=./results \
		--exclude=./tmp_check --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$work" -xf -
	chown -R mcctest "$work"
	chmod 755 "$work"
	(
		# one install at a time on this machine: the installed module must
		# stay the one under test until the run ends
		flock 9
		if needs_server; then
			make -s -C "$here" >/dev/null 9>&- && make -s -C "$here" install >/dev/null 9>&- || {
				echo "run-tests: build or install failed"; make -C "$here" 2>&1 | tail -30
				echo "0 passed, 1 failed"; exit 1; }
		fi
		# fd 9 (the lock) is not inherited: a server a test leaves behind
		# must not keep every later run waiting
		runuser -u mcctest -- env MCC_AS_USER=1 PATH="$PATH" \
			MCC_SHARED_DATA="${MCC_SHARED_DATA:-}" FUZZ_SECONDS="${FUZZ_SECONDS:-20}" \
			MCC_TEST_LOGS="$work/build/test-logs" \
			bash "$work/scripts/run-tests.sh" "${stages[@]}" 9>&-
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
	cp "$srv/server.log" "$log_dir/regress-server.log" 2>/dev/null
	rm -rf "$srv"
}

run_regress() {
	local log=$log_dir/regress.log p f
	echo "== pg_regress"
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
	for t in test/t/*.pl; do
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
		regress) run_regress ;;
		tap) run_tap ;;
		fuzz) run_fuzz ;;
		*) echo "run-tests: unknown stage $s"; failed=$((failed + 1)) ;;
	esac
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
