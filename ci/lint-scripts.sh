#!/usr/bin/env bash
# Runs shellcheck on the project's shell scripts (`make lint`): every *.sh under ci/ and .ci/run,
# then the chart's scripts in charts/minicluster/files (the entrypoint, env.sh, the flux wrapper,
# the view copy and the helm test pod's script), checked as POSIX sh because the pods run them
# with /bin/sh.
# Scripts follow what they source (-x, relative to their own directory); a file without a #!
# line is a library that bash scripts source: it is checked as bash, and the variables it sets
# for them are not "unused" (SC2034). SC1091 ("not following" a path that exists only in the
# pod) is left out.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=0
while IFS= read -r -d '' f; do
	if [[ $(head -c 2 "$f") == '#!' ]]; then
		shellcheck -x -P SCRIPTDIR "$f" || failed=1
	else
		shellcheck -x -P SCRIPTDIR -s bash -e SC2034 "$f" || failed=1
	fi
done < <(find ci -name '*.sh' -print0 | sort -z; printf '%s\0' .ci/run)

# The chart's scripts (charts/minicluster/files, loaded with .Files.Get): POSIX sh, because the
# pods run them with /bin/sh (the ones without a #! line say so with a shell=sh directive);
# helpers.sh is followed where a source= directive names it.
while IFS= read -r -d '' f; do
	shellcheck -x -P SCRIPTDIR -s sh -e SC1091 "$f" || failed=1
done < <(find charts/minicluster/files -name '*.sh' -print0 | sort -z)
exit "$failed"
