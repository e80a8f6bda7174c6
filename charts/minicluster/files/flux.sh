#!/bin/sh
# `flux` in a broker pod: mounted at /usr/local/sbin/flux (on the PATH of nearly every image,
# ahead of /usr/local/bin and /usr/bin) and at /minicluster/scripts/flux, so that
# `kubectl exec <pod> -- flux ARGS` runs Flux (the view's or the image's) against that pod's
# broker with the environment the broker has. Not before the helpers beside the broker are
# done: flux's python, run while the view is still being copied, would write its byte code
# into the software tree under the copy, which then fails ("File exists"); and env.sh finds
# the view's python directories only once they are there.
# shellcheck source=helpers.sh
. /minicluster/scripts/helpers.sh
helpers_status=0
helpers_wait 60 || helpers_status=$?
case $helpers_status in
  0) ;;
  3) echo "minicluster: $helpers_error; see: kubectl logs <pod> --all-containers" >&2; exit 1 ;;
  *) echo "minicluster: this broker cannot start: $helpers_error" >&2; exit 1 ;;
esac
. /minicluster/scripts/env.sh
# Never this script again (a view without flux, an image whose flux it hides).
flux=$(real_flux)
if [ -z "$flux" ]; then
  echo "minicluster: no flux to run: ${MINICLUSTER_FLUX_VIEW:+not in the flux view at $MINICLUSTER_FLUX_VIEW/bin, }not on PATH ($PATH) but for this wrapper; see: kubectl logs <pod> -c flux" >&2
  exit 127
fi
exec "$flux" "$@"
