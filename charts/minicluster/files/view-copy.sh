# shellcheck shell=sh
# The flux-view container's script (sh -c): copies the view image's Flux as the Flux
# Operator does, the view tree (symlinks into the software) and the software itself, which
# must be back at its build prefix to run. From the container's environment:
# MINICLUSTER_FLUX_VIEW_MOUNT (the shared volume), MINICLUSTER_FLUX_VIEW_IMAGE (for messages)
# and MINICLUSTER_FLUX_VIEW_SOFTWARE (the software's build prefix; empty: none to copy).
m=$MINICLUSTER_FLUX_VIEW_MOUNT
software=${MINICLUSTER_FLUX_VIEW_SOFTWARE:-}
trap 'exit 0' TERM INT
status() { printf '%s' "$2" > "$m/$1.tmp" && mv "$m/$1.tmp" "$m/$1"; }
# copy_into SRC DST: SRC's entries into DST, leaving DST's own owner, mode and times alone: DST
# may be the root of a volume this user does not own (runAsUser), whose times cp -a SRC/. DST
# cannot set.
copy_into() {
  for entry in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    if [ -e "$entry" ] || [ -L "$entry" ]; then cp -a "$entry" "$2/" || return 1; fi
  done
}
if ! { mkfifo -m 0666 "$m/.alive" 2>/dev/null || [ -p "$m/.alive" ]; }; then
  status .failed "the view image $MINICLUSTER_FLUX_VIEW_IMAGE has no mkfifo (coreutils or busybox): use flux.view.mode=image, or a view image with a shell and coreutils"
  exit 1
fi
# Held from now on: the entrypoint opens it as soon as it exists.
cat "$m/.alive" > /dev/null &
held=$!
# Any step that fails stops the copy (&&: set -e does not hold inside an if).
if out=$( {
  view=$(readlink -f /opt/view) &&
  mkdir -p "$m/view" "$m/software" &&
  copy_into "$view" "$m/view" &&
  if [ -n "$software" ] && [ -d "$software" ]; then copy_into "$software" "$m/software"; fi
} 2>&1 ); then
  status .ready ""
else
  status .failed "copying Flux out of the view image $MINICLUSTER_FLUX_VIEW_IMAGE failed: $out"
fi
# Until the broker's container ends: EOF on the FIFO, or the .ended its entrypoint
# writes in the keys volume as it exits (for a FIFO it held and let go before the cat
# above could open it).
while kill -0 "$held" 2>/dev/null && [ ! -e /minicluster/keys/.ended ]; do
  sleep 0.1 &
  wait $!
done
