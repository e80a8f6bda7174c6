# shellcheck shell=sh
# Sourced by entrypoint.sh and flux (flux.sh): puts Flux on PATH (from the view, when there
# is one) and points flux commands at this broker's socket. The view's software is back at
# its build prefix (mounted there), so only PATH, PYTHONPATH and the Lua paths are needed, as
# in the Flux Operator; its binaries find their libraries through their compiled-in RPATHs.
# flux.view.mode=image mounts the view image at MINICLUSTER_FLUX_VIEW_ROOT: follow its
# /opt/view links there (an absolute target is relative to the image's root).
if [ -n "${MINICLUSTER_FLUX_VIEW_ROOT:-}" ] && [ -z "${MINICLUSTER_FLUX_VIEW:-}" ]; then
  view=/opt/view
  hops=0
  while [ -L "$MINICLUSTER_FLUX_VIEW_ROOT$view" ] && [ "$hops" -lt 16 ]; do
    target=$(readlink "$MINICLUSTER_FLUX_VIEW_ROOT$view")
    case $target in
      /*) view=$target ;;
      *) view=${view%/*}/$target ;;
    esac
    hops=$((hops + 1))
  done
  MINICLUSTER_FLUX_VIEW=$MINICLUSTER_FLUX_VIEW_ROOT$view
  export MINICLUSTER_FLUX_VIEW
fi
if [ -n "${MINICLUSTER_FLUX_VIEW:-}" ]; then
  PATH="$MINICLUSTER_FLUX_VIEW/bin:$PATH"
  for site in "$MINICLUSTER_FLUX_VIEW"/lib/python3*/site-packages; do
    if [ -d "$site" ]; then PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"; fi
  done
  LUA_PATH="$MINICLUSTER_FLUX_VIEW/share/lua/5.1/?.lua;$MINICLUSTER_FLUX_VIEW/share/lua/5.1/?/init.lua;${LUA_PATH:-;}"
  LUA_CPATH="$MINICLUSTER_FLUX_VIEW/lib/lua/5.1/?.so;${LUA_CPATH:-;}"
  export PATH PYTHONPATH LUA_PATH LUA_CPATH
fi
# The chart's `flux` for kubectl exec (flux.sh) is mounted in this directory, not Flux.
wrapper_dir=/usr/local/sbin
# real_flux prints the flux PATH finds, or nothing when that is the chart's wrapper or none.
real_flux() {
  found=$(command -v flux 2>/dev/null) || return 0
  if [ "$(dirname "$found")" != "$wrapper_dir" ]; then echo "$found"; fi
}
# Flux in the image: the wrapper may come before the image's own flux on PATH. Put the image's
# first, so that the entrypoint, the broker it starts and flux.sh run the real one.
if [ -z "${MINICLUSTER_FLUX_VIEW:-}" ]; then
  rest=$PATH:
  after_shim=false
  while [ -n "$rest" ]; do
    dir=${rest%%:*}
    rest=${rest#*:}
    if [ "${dir%/}" = "$wrapper_dir" ]; then
      after_shim=true
    elif [ -x "${dir:-.}/flux" ]; then
      if [ "$after_shim" = true ]; then PATH=${dir:-.}:$PATH; fi
      break
    fi
  done
fi
# This broker's socket (the entrypoint pins it with -Slocal-uri, the same path in every pod;
# the container's environment has it too).
FLUX_URI=${FLUX_URI:-local:///minicluster/run/flux/local}
export FLUX_URI
