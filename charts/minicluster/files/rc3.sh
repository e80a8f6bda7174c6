#!/bin/sh
# rc3 of a broker: the steps `flux modprobe rc3` would take there, from the plan its rc1 wrote
# (modprobe-rc1.py), without starting Python. Usage: rc3.sh PLAN RC3...
# Without a plan, or if a module the plan does not know is still loaded after it (one loaded
# by hand since rc1), the rc3 Flux ships (RC3...) runs instead, or after it for the rest.
# The plan's lines: "run SCRIPT" (an rc3.d script, in turn), "remove MODULE" and "exec
# COMMAND" (started at once, up to the next "wait"), "keep MODULE" (a built-in module).
plan=$1
shift
if [ ! -s "$plan" ]; then exec "$@"; fi
# As flux-core's rc3 runs its rc3.d scripts: told that modprobe removes the modules.
FLUX_RC_USE_MODPROBE=t
export FLUX_RC_USE_MODPROBE
status=0
keep=
pids=
while read -r action arg; do
  case $action in
    run)
      echo "running $arg"
      "$arg" || { echo "$arg failed" >&2; status=1; }
      ;;
    remove)
      flux module remove -f "$arg" &
      pids="$pids $!"
      ;;
    exec)
      sh -c "$arg" &
      pids="$pids $!"
      ;;
    wait)
      for pid in $pids; do wait "$pid" || status=1; done
      pids=
      ;;
    keep) keep="$keep $arg " ;;
  esac
done < "$plan"
left=$(flux module list | awk 'NR > 1 { print $1 }') || left=unknown
for module in $left; do
  case $keep in
    *" $module "*) ;;
    *)
      echo "rc3.sh: module $module is still loaded: running $*"
      "$@" || status=1
      break
      ;;
  esac
done
exit "$status"
