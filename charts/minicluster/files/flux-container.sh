#!/bin/sh
# A container of fluxContainers (the Flux Operator's wrapped containers): it runs its command
# beside the pod's broker, with that broker's Flux. It waits for the copy of the view
# (MINICLUSTER_HELPERS: the view's directory, never the keys'), puts Flux on PATH (env.sh),
# then waits until the broker's socket exists (MINICLUSTER_WAIT_SOCKET), and runs the command
# with FLUX_URI and $fluxsocket (the operator's name) naming that socket.
set -u
# PID 1 of its container: SIGTERM (the pod stopping) does nothing unless trapped.
trap 'exit 143' TERM INT
log() { printf 'minicluster[%s]: %s\n' "${JOB_COMPLETION_INDEX:-?}" "$*" >&2; }
# shellcheck source=helpers.sh
. /minicluster/scripts/helpers.sh
if ! helpers_wait 0; then log "error: $helpers_error"; exit 1; fi
. /minicluster/scripts/env.sh
socket=${FLUX_URI#local://}
if [ "${MINICLUSTER_WAIT_SOCKET:-true}" = true ]; then
  # The broker's rundir is private to the broker's user: a container running as another user
  # never sees the socket.
  waited=0
  until [ -S "$socket" ]; do
    if [ "$waited" -eq 600 ]; then
      log "still waiting for the broker's socket $socket after 30 s: is this container running as the broker's user ($(id -u) here)? See: kubectl logs <pod> -c flux"
    fi
    waited=$((waited + 1))
    pause
  done
fi
fluxsocket=$FLUX_URI
export fluxsocket
/bin/sh -c "$MINICLUSTER_CONTAINER_COMMAND" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
status=0
wait "$child" || status=$?
# wait returns early when a signal arrives: wait again until the command is gone.
while kill -0 "$child" 2>/dev/null; do
  status=0
  wait "$child" || status=$?
done
exit "$status"
