#!/bin/sh
# The broker's rc3 (broker.rc3_path, which entrypoint.sh sets to run this with SIGHUP ignored):
# runs RC3 (rc3.sh) and leaves the marks entrypoint.sh watches around it; with flux.state it
# keeps the content dump the broker wrote during RC3.
# Usage: broker-rc3.sh [--started FILE] [--state ARCHIVE PARTIAL] [--done FILE] -- RC3...
#   --started FILE           written as rc3 starts (bound_dump's clock starts then)
#   --state ARCHIVE PARTIAL  the broker dumps its content to PARTIAL (-Scontent.dump): only an
#                            rc3 that succeeded renames it over ARCHIVE, so that a dump that
#                            fails or is cut short never replaces a good archive
#   --done FILE              written as rc3 ends, whatever its status (kill_after_rc3)
# Exits with RC3's status.
started=
archive=
partial=
done_mark=
while [ $# -gt 0 ]; do
  case $1 in
    --started) started=$2; shift 2 ;;
    --state) archive=$2; partial=$3; shift 3 ;;
    --done) done_mark=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "broker-rc3.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -n "$started" ]; then : > "$started"; fi
status=0
"$@" || status=$?
if [ -n "$archive" ]; then
  if [ "$status" -eq 0 ] && [ -s "$partial" ]; then
    sync "$partial" 2>/dev/null
    mv -f "$partial" "$archive" && echo "minicluster: flux.state: dumped to $archive" >&2
  else
    echo "minicluster: flux.state: rc3 failed (status $status): the content dump did not finish; keeping the previous archive" >&2
    rm -f "$partial"
  fi
fi
if [ -n "$done_mark" ]; then : > "$done_mark"; fi
exit "$status"
