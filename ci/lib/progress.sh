# progress NAME LOG COMMAND...: runs COMMAND with its output in LOG, says what it starts, a line
# at least every 30 s while it runs (how long so far, and the last line of LOG), and how long it
# took; when it fails, the end of LOG and where the rest is. For long quiet steps (go build,
# make) of a first run, so that a new user sees where it is. Sourced by bash scripts.
progress() {
	local name=$1 log=$2 start=$SECONDS pid rc=0 last
	shift 2
	mkdir -p "$(dirname "$log")"
	printf '%s: started (log: %s)\n' "$name" "$log"
	"$@" >"$log" 2>&1 &
	pid=$!
	while ! wait_up_to 30 "$pid"; do
		last=$(tail -n 1 "$log" 2>/dev/null | cut -c1-100)
		printf '%s: %d s so far%s\n' "$name" $((SECONDS - start)) "${last:+ (last: $last)}"
	done
	wait "$pid" || rc=$?
	if ((rc != 0)); then
		printf '%s: FAILED after %d s (exit %d); the end of %s:\n' "$name" $((SECONDS - start)) "$rc" "$log" >&2
		tail -n 30 "$log" >&2
		return "$rc"
	fi
	printf '%s: done in %d s\n' "$name" $((SECONDS - start))
}

# wait_up_to SECONDS PID: true once PID has ended, false when SECONDS passed first.
wait_up_to() {
	local i
	for ((i = 0; i < $1 * 5; i++)); do
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.2
	done
	return 1
}

# Run as a command (the Makefile does): bash ci/lib/progress.sh NAME LOG COMMAND...
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	progress "$@"
fi
