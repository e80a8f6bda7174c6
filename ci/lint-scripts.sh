#!/usr/bin/env bash
# Runs shellcheck on the project's shell scripts (`make lint`): every *.sh under ci/ and .ci/run,
# then the scripts the chart renders (entrypoint.sh, env.sh and flux of the entrypoint ConfigMap,
# the helm test pod's script), checked as POSIX sh because the pods run them with /bin/sh.
# Scripts follow what they source (-x, relative to their own directory); a file without a #!
# line is a library that bash scripts source: it is checked as bash, and the variables it sets
# for them are not "unused" (SC2034). SC1091 ("not following" a path that exists only in the
# pod) is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM3=${HELM3:-bin/tools/helm3/helm}

failed=0
while IFS= read -r -d '' f; do
	if [[ $(head -c 2 "$f") == '#!' ]]; then
		shellcheck -x -P SCRIPTDIR "$f" || failed=1
	else
		shellcheck -x -P SCRIPTDIR -s bash -e SC2034 "$f" || failed=1
	fi
done < <(find ci -name '*.sh' -print0 | sort -z; printf '%s\0' .ci/run)

if [[ ! -x $HELM3 ]]; then
	echo "lint-scripts: no helm at $HELM3 (make tools builds it)" >&2
	exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# block TEMPLATE LINE_REGEX NAME: renders one template of the chart and writes to $out/NAME the
# literal block scalar (key: | or - |) on the first line that matches LINE_REGEX, unindented.
block() {
	local template=$1 line=$2 name=$3
	"$HELM3" template flux-sample charts/minicluster --kube-version 1.35.0 --show-only "$template" |
		awk -v re="$line" '
			!found && $0 ~ re && $0 ~ /\|[-+]?$/ { found = 1; next }
			found {
				if ($0 ~ /^ *$/) { blank = blank "\n"; next }
				match($0, /^ */)
				if (indent == "") indent = RLENGTH
				if (RLENGTH < indent) exit
				printf "%s%s\n", blank, substr($0, indent + 1)
				blank = ""
			}' >"$out/$name"
	if [[ ! -s $out/$name ]]; then
		echo "lint-scripts: no script matching '$line' in $template" >&2
		exit 1
	fi
}
block templates/entrypoint-configmap.yaml '^  entrypoint[.]sh: ' entrypoint.sh
block templates/entrypoint-configmap.yaml '^  env[.]sh: ' env.sh
block templates/entrypoint-configmap.yaml '^  flux: ' flux
block templates/tests/test-wiring-pod.yaml '^ *- \|$' test-wiring.sh
for f in entrypoint.sh env.sh flux test-wiring.sh; do
	# Findings name the rendered file: say which template it came from.
	if ! (cd "$out" && shellcheck -s sh -e SC1091 "$f"); then
		echo "lint-scripts: $f is rendered from charts/minicluster/templates (entrypoint-configmap.yaml or tests/test-wiring-pod.yaml)" >&2
		failed=1
	fi
done
exit "$failed"
