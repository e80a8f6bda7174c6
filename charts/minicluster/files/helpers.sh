# shellcheck shell=sh
# shellcheck disable=SC2034 # helpers_error is for the scripts that source this file
# Sourced by entrypoint.sh, flux (flux.sh) and flux-container.sh before anything runs Flux: the
# helpers beside the broker (the keys step, the copy of the view) each have a directory in
# MINICLUSTER_HELPERS, where they write .ready when done, or the error to .invalid (a broken
# key: the broker cannot start) or .failed (anything else). Also pause, the scripts' short wait.
# helpers_wait SECONDS: returns 0 once every helper is ready; 2 on .invalid and 1 on .failed,
# with the helper's error in helpers_error; 3 after SECONDS (0: no limit).
helpers_wait() {
  helpers_polls=$((${1:-0} * 20))
  helpers_error=
  helpers_waited=0
  for helpers_dir in ${MINICLUSTER_HELPERS:-}; do
    until [ -f "$helpers_dir/.ready" ]; do
      if [ -f "$helpers_dir/.invalid" ]; then helpers_error=$(cat "$helpers_dir/.invalid"); return 2; fi
      if [ -f "$helpers_dir/.failed" ]; then helpers_error=$(cat "$helpers_dir/.failed"); return 1; fi
      # Every twentieth of a second for the first second, then every fifth: each look starts
      # a sleep, and a pod's keys may take several seconds on a busy node.
      helpers_waited=$((helpers_waited + 1))
      helpers_step=1
      if [ "$helpers_waited" -gt 20 ]; then helpers_step=4; fi
      if [ "${1:-0}" -gt 0 ]; then
        helpers_polls=$((helpers_polls - helpers_step))
        if [ "$helpers_polls" -lt 0 ]; then
          helpers_error="$helpers_dir is not ready after $1 s (the keys or the copy of Flux)"
          return 3
        fi
      fi
      if [ "$helpers_step" -eq 1 ]; then pause; else sleep 0.2 2>/dev/null || sleep 1; fi
    done
  done
}
# pause waits a twentieth of a second (a second where sleep takes no fraction).
pause() { sleep 0.05 2>/dev/null || sleep 1; }
