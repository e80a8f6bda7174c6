#!/bin/sh
# `flux` in a broker pod: mounted at /usr/local/sbin/flux (on the PATH of nearly every image,
# ahead of /usr/local/bin and /usr/bin) and at /minicluster/scripts/flux, so that
# `kubectl exec <pod> -- flux ARGS` runs Flux (the view's or the image's) against that pod's
# broker with the environment the broker has. Not before the helpers beside the broker are
# done: flux's python, run while the view is still being copied, would write its byte code
# into the software tree under the copy, which then fails ("File exists"); and env.sh finds
# the view's python directories only once they are there.
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
. /minicluster/scripts/env.sh
# Never this script again (a view without flux, an image whose flux it hides).
flux=$(real_flux)
if [ -z "$flux" ]; then
  echo "minicluster: no flux to run: ${MINICLUSTER_FLUX_VIEW:+not in the flux view at $MINICLUSTER_FLUX_VIEW/bin, }not on PATH ($PATH) but for this wrapper; see: kubectl logs <pod> -c flux" >&2
  exit 127
fi
exec "$flux" "$@"
