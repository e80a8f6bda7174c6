# progress NAME LOG COMMAND...: runs COMMAND with its output in LOG, says what it starts, a line
# at least every 30 s (PROGRESS_INTERVAL) while it runs, and how long it took; when it fails, the
# end of LOG and where the rest is. For long quiet steps (go build, make) of a first run, so that
# a new user sees where it is. Each line says how long so far and, when LOG grew since the last
# line, LOG's last line; else what the command runs now (a build's log is quiet for minutes
# while the compiler works: its last line would be stale). Sourced by bash scripts.
progress() {
	local name=$1 log=$2 start=$SECONDS pid rc=0 size seen=0 what
	shift 2
	mkdir -p "$(dirname "$log")"
	printf '%s: started (log: %s)\n' "$name" "$log"
	"$@" >"$log" 2>&1 &
	pid=$!
	while ! wait_up_to "${PROGRESS_INTERVAL:-30}" "$pid"; do
		size=$(stat -c %s "$log" 2>/dev/null || echo 0)
		if ((size > seen)); then
			what=$(tail -n 1 "$log" 2>/dev/null | cut -c1-100)
			what=${what:+last: $what}
		else
			what=$(running "$pid" | cut -c1-100)
			what=${what:+now: $what}
		fi
		seen=$size
		printf '%s: %d s so far%s\n' "$name" $((SECONDS - start)) "${what:+ ($what)}"
	done
	wait "$pid" || rc=$?
	if ((rc != 0)); then
		printf '%s: FAILED after %d s (exit %d); the end of %s:\n' "$name" $((SECONDS - start)) "$rc" "$log" >&2
		tail -n 30 "$log" >&2
		return "$rc"
	fi
	printf '%s: done in %d s\n' "$name" $((SECONDS - start))
}

# running PID: what the processes under PID without children of their own run, comma-separated:
# Go's compiler and assembler by package ("compile k8s.io/api/core/v1"), a C compiler by source
# file ("cc1plus resource/policies/base/matcher.cpp"), anything else by its command line.
running() {
	local -A children=()
	local stat line rest ppid p
	for stat in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$stat" || continue
		rest=${line##*) } # after "pid (comm) ": state ppid ...
		rest=${rest#* }
		ppid=${rest%% *}
		p=${stat#/proc/}
		children[$ppid]+=" ${p%/stat}"
	done
	local queue=("$1") leaves=()
	while ((${#queue[@]})); do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		if [[ -n ${children[$p]:-} ]]; then
			# shellcheck disable=SC2206 # a list of pids, split on spaces
			queue+=(${children[$p]})
		else
			leaves+=("$p")
		fi
	done
	local out=() argv arg prev name what
	for p in "${leaves[@]}"; do
		mapfile -d '' -t argv 2>/dev/null <"/proc/$p/cmdline" || continue
		((${#argv[@]})) || continue
		name=${argv[0]##*/} what="" prev=""
		for arg in "${argv[@]:1}"; do
			[[ -z $what ]] || break
			case $name:$prev:$arg in
			compile:-p:* | asm:-p:* | cgo:-p:*) what="$name $arg" ;;
			cc1*:*:*.c | cc1*:*:*.cc | cc1*:*:*.cpp | cc1*:*:*.cxx) what="$name $arg" ;;
			esac
			prev=$arg
		done
		out+=("${what:-${argv[*]}}")
	done
	local joined=""
	for what in "${out[@]}"; do joined+=${joined:+, }$what; done
	echo "$joined"
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
