#!/bin/sh
# The broker container's command: waits until the keys container (flux-keygen sidecar, which
# starts beside this one) has copied the supervisor, minicluster-broker, into the keys volume,
# then execs it as the container's process 1. The supervisor does all the rest (package
# supervisor of the minicluster module): Flux's environment, commands.*, the keys, the broker,
# its signals, restarts and readiness. Shell here only because a program of the image must
# start first, and /bin/sh is the one every image has.
keys=/minicluster/keys
program=$keys/minicluster-broker
waited=0
until [ -x "$program" ]; do
  # The keys container failed before it could copy the program: say why, as the supervisor
  # would, and tell the keys container (.ended) that this container has ended.
  for f in .invalid .failed; do
    if [ -f "$keys/$f" ]; then
      printf 'minicluster[%s]: error: %s\n' "${JOB_COMPLETION_INDEX:-?}" "$(cat "$keys/$f")" >&2
      : > "$keys/.ended"
      if [ "$f" = .invalid ]; then exit "${MINICLUSTER_EXIT_CANNOT_START:-78}"; fi
      exit 1
    fi
  done
  waited=$((waited + 1))
  if [ "$waited" -eq 600 ]; then
    printf 'minicluster[%s]: still waiting for %s after 30 s: see kubectl logs <pod> -c keys\n' "${JOB_COMPLETION_INDEX:-?}" "$program" >&2
  fi
  sleep 0.05 2>/dev/null || sleep 1
done
exec "$program" "$@"
