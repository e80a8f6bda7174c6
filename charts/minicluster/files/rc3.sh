#!/bin/sh
# rc3 of a broker: the steps `flux modprobe rc3` would take there, from the plan its rc1 wrote
# (modprobe-rc1.py), without starting Python. Usage: rc3.sh PLAN RC3...
# Without a plan, or if a module the plan does not know is loaded (one loaded by hand since
# rc1), the rc3 Flux ships (RC3...) runs instead, or after it for the rest.
# The plan's lines: "run SCRIPT" (an rc3.d script, in turn), "remove MODULE" and "exec
# COMMAND" (started at once, up to the next "wait"), "keep MODULE" (a built-in module).
plan=$1
shift
if [ ! -s "$plan" ]; then exec "$@"; fi
# As flux-core's rc3 runs its rc3.d scripts: told that modprobe removes the modules.
FLUX_RC_USE_MODPROBE=t
export FLUX_RC_USE_MODPROBE
# flux-module itself, found where the flux front-end finds it: through the front-end, each
# call costs two to four times as much, and a stopping node runs many at once.
module_bin=
saved_ifs=$IFS
IFS=:
for dir in ${FLUX_EXEC_PATH:-}; do
  if [ -x "$dir/flux-module" ]; then
    module_bin=$dir/flux-module
    break
  fi
done
IFS=$saved_ifs
if [ -z "$module_bin" ]; then echo "rc3.sh: no flux-module on FLUX_EXEC_PATH: using flux module"; fi
flux_module() {
  if [ -n "$module_bin" ]; then "$module_bin" "$@"; else flux module "$@"; fi
}
# first_unknown prints the first module a `flux module list` output ($1) names that is not
# among the words of $2.
first_unknown() {
  for module in $(printf '%s\n' "$1" | awk 'NR > 1 { print $1 }'); do
    case " $2 " in
      *" $module "*) ;;
      *) echo "$module"; return ;;
    esac
  done
}
# What is loaded, read beside the first steps rather than after the last.
flux_module list > "$plan.loaded" &
lister=$!
status=0
keep=
removed=
pids=
while read -r action arg; do
  case $action in
    run)
      echo "running $arg"
      "$arg" || { echo "$arg failed" >&2; status=1; }
      ;;
    remove)
      flux_module remove -f "$arg" &
      pids="$pids $!"
      removed="$removed $arg"
      ;;
    exec)
      sh -c "$arg" &
      pids="$pids $!"
      ;;
    wait)
      for pid in $pids; do wait "$pid" || status=1; done
      pids=
      ;;
    keep) keep="$keep $arg" ;;
  esac
done < "$plan"
# Done, unless a step failed or a module the plan does not know was loaded: then what is
# still loaded decides.
if wait "$lister" && [ "$status" -eq 0 ] && [ -z "$(first_unknown "$(cat "$plan.loaded")" "$keep $removed")" ]; then
  exit 0
fi
if ! left=$(flux_module list); then
  echo "rc3.sh: flux module list failed: running $*"
  "$@" || status=1
else
  module=$(first_unknown "$left" "$keep")
  if [ -n "$module" ]; then
    echo "rc3.sh: module $module is still loaded: running $*"
    "$@" || status=1
  fi
fi
exit "$status"
