#!/bin/sh
# `kubectl exec <lead> -- /minicluster/scripts/flux ARGS` runs flux against the running
# instance with the same environment the broker has. Not before the helpers beside the
# broker are done: flux's python, run while the view is still being copied, would write its
# byte code into the software tree under the copy, which then fails ("File exists").
. /minicluster/scripts/env.sh
for dir in ${MINICLUSTER_HELPERS:-}; do
  waited=0
  until [ -f "$dir/.ready" ]; do
    for bad in .failed .invalid; do
      if [ -f "$dir/$bad" ]; then
        echo "minicluster: this broker cannot start: $(cat "$dir/$bad")" >&2
        exit 1
      fi
    done
    if [ "$waited" -ge 1200 ]; then
      echo "minicluster: $dir is not ready after 60 s (the keys or the copy of Flux); see: kubectl logs <pod> --all-containers" >&2
      exit 1
    fi
    waited=$((waited + 1))
    sleep 0.05 2>/dev/null || sleep 1
  done
done
exec flux "$@"
