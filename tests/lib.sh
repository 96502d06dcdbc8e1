# tests/lib.sh — shared helpers of the shell tests (sourced).
#
#   ok NAME / not_ok NAME [WHY]   TAP-like result lines counted by tests/run
#   check NAME CMD...             ok if CMD succeeds; if not, WHY is the end of
#                                 its output, or (none) the command with its
#                                 values ("test 612 -le 536")
#   wait_until SECS CMD...        polls CMD until it succeeds or the deadline;
#                                 at the deadline it says on stderr what it
#                                 waited for and what the last try saw
#   lab_up FILE                   jakiro-lab up with this run's prefix; torn down on exit
#   lab ARGS...                   jakiro-lab with this run's prefix
#   lab_bg ARGS...                the same in the background; $! is the command's own PID
#   stat_of HOST JQ-PATH          a number from `jakiroctl --json show stats`
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export JAKIRO_BIN=${JAKIRO_BIN:-$TOP/${BUILD:-build-san}/bin}
export PATH=$JAKIRO_BIN:$PATH
# ASan in the daemons: report leaks at exit only as warnings for tests.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
LAB_PREFIX=${LAB_PREFIX:-t$(( $$ % 100000 ))}
# The datapath the lab's hosts run (tests/run runs lab suites on each the
# suite's "# datapaths:" line names).
export JAKIRO_DATAPATH=${JAKIRO_DATAPATH:-user}
DATAPATH=$JAKIRO_DATAPATH
LAB="$TOP/lab/jakiro-lab --prefix $LAB_PREFIX"
WORK=$(mktemp -d "/tmp/jakiro-test-$LAB_PREFIX.XXXXXX")
FAILED=0
_cleanups=()

on_exit() { cleanup_now; }
cleanup_now() {
	local i
	for (( i=${#_cleanups[@]}-1; i>=0; i-- )); do eval "${_cleanups[$i]}" >/dev/null 2>&1; done
	_cleanups=()
	rm -rf "$WORK"
}
trap on_exit EXIT
trap 'exit 130' INT TERM
at_exit() { _cleanups+=("$*"); }

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1${2:+ # $2}"; FAILED=1; }
# Why CMD (just run, its output in $WORK/last.out) failed, on one line: the
# end of what it said, or when it said nothing (`test "$got" -le "$limit"`)
# the command itself with the values it compared.
why_failed() {   # CMD...
	if [ -s "$WORK/last.out" ]; then
		tail -5 "$WORK/last.out" | tr '\n' ' ' | cut -c1-600
	else
		printf 'false: %s' "$*" | tr '\n' ' ' | cut -c1-300
	fi
}
check() { local name=$1; shift; if "$@" >"$WORK/last.out" 2>&1; then ok "$name"; else not_ok "$name" "$(why_failed "$@")"; fi; }
check_fails() {
	local name=$1; shift
	if "$@" >"$WORK/last.out" 2>&1; then
		not_ok "$name" "succeeded but should not: $(tail -2 "$WORK/last.out" | tr '\n' ' ' | cut -c1-300)"
	else
		ok "$name"
	fi
}

# A librdmacm example's exit status, as the test should take it: STATUS
# itself, except rping's teardown race.  rping before mid-2025 (Debian 12
# ships rdma-core 44) never stops its CM event thread: when the last event arrives
# just as main destroys the event channel, the thread's next
# rdma_get_cm_event fails with EBADF and the process exits 255 after a
# test that passed (rdma-core pull request #1622, "rping: Fix spurious
# failure return codes", fixed it with an eventfd).  Taken as 0 only when
# that message is the output's last line and REGEX (the last ping) is in it.
cm_example_status() {   # STATUS LOG REGEX
	if [ "$1" -eq 255 ] && [ "$(tail -n 1 "$2")" = "rdma_get_cm_event: Bad file descriptor" ] &&
	   grep -qE "$3" "$2"; then
		echo "# $2: rping's teardown race (exit 255 after the last ping), taken as passed" >&2
		echo 0
	else
		echo "$1"
	fi
}
cm_example_ok() { [ "$(cm_example_status "$@")" -eq 0 ]; }   # STATUS LOG REGEX

# Each try runs traced in a subshell, its output and trace kept, so that at
# the deadline the values the condition last compared can be shown
# ("+ test 412 -ge 600"): a check that timed out says why.  So a condition
# cannot keep state between tries: give it its baseline as arguments.
wait_until() {
	local secs=$1; shift
	local deadline=$(( $(date +%s%N) + secs * 1000000000 )) last=$WORK/wait_until.$BASHPID
	while ! ( set -x; "$@" ) >"$last" 2>&1; do
		if [ "$(date +%s%N)" -ge "$deadline" ]; then
			{ printf 'not within %s s: %s; last try:\n' "$secs" "$*" | cut -c1-300
			  tail -4 "$last" | cut -c1-200; } >&2
			rm -f "$last"
			return 1
		fi
		sleep 0.05
	done
	rm -f "$last"
}

lab() { $LAB "$@"; }
# `jakiro-lab ARGS...` in the background, started by this shell itself (not
# a subshell): `exec` replaces it by the command, so $! is the command's PID
# and `kill $!` reaches it.
lab_bg() { $LAB "$@" & }
lab_up() {
	at_exit "$LAB down"
	$LAB up "$1"
}

need() {
	for t in "$@"; do
		command -v "$t" >/dev/null || { echo "# missing $t: skipping"; exit 77; }
	done
}

stat_of() {   # HOST 'python expression on the JSON as s'
	lab ctl "$1" -- --json show stats | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)"
}

# Runs an iperf3 server in NAME's namespace for one test, waits for it.
# Waits (up to SECS, default 10) until something listens on TCP PORT in
# the namespace of lab NAME.
wait_listen() {   # NAME PORT [SECS]
	wait_until "${3:-10}" lab exec "$1" -- sh -c "ss -ltn | grep -q ':$2 '"
}
iperf_server() {
	lab exec "$1" -- iperf3 -s -1 -D -p "${2:-5201}" --logfile "$WORK/iperf-$1.log"
	wait_listen "$1" "${2:-5201}" 5
}
