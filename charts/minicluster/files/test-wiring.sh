# shellcheck shell=sh
# The helm test pod's script (sh -c, busybox): every broker's FQDN resolves, and the lead
# answers as a ZeroMQ CURVE server.
# Names, port and size come from the broker ConfigMap the brokers read, so the test
# checks what Flux uses, also after a post-renderer overlay changed it.
set -u
config=/minicluster/config
size=$(cat "$config/size")
hosts=$(cat "$config/hosts")
domain=$(cat "$config/domain")
port=$(cat "$config/port")
case $hosts in *-\[*) job=${hosts%-\[*} ;; *) job=${hosts%-0} ;; esac
echo "checking $size brokers $job-0..$job-$((size - 1)) in $domain, port $port"
# flux.minimalService: the lead alone has a name.
named=$size
if [ "${MINICLUSTER_MINIMAL_SERVICE:-false}" = true ]; then named=1; echo "flux.minimalService: only $job-0 has a DNS name"; fi
failed=0
i=0
while [ "$i" -lt "$named" ]; do
  host=$job-$i.$domain
  tries=0
  until nslookup "$host" >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -ge 30 ]; then echo "FAIL: $host does not resolve"; failed=1; break; fi
    sleep 1
  done
  [ "$tries" -lt 30 ] && echo "ok: $host resolves"
  i=$((i + 1))
done
# The lead's overlay socket is a ZeroMQ CURVE server: send a ZMTP 3.0 greeting (the
# signature, version 3.0, mechanism CURVE) and expect one back naming CURVE. Only brokers
# with children listen (flux-core binds the child-facing socket then).
lead=$job-0.$domain
greeting() {
  printf '\377\0\0\0\0\0\0\0\001\177\003\000CURVE'
  dd if=/dev/zero bs=1 count=47 2>/dev/null
  sleep 1
}
# A NetworkPolicy enforcer may let this new pod's address in only a moment after it starts:
# the greeting is tried again for a while.
tries=0
until greeting | nc -w 3 "$lead" "$port" | tr -d '\000' | grep -q CURVE; do
  tries=$((tries + 1))
  if [ "$tries" -ge 10 ]; then echo "FAIL: no ZeroMQ CURVE greeting from the lead broker at $lead:$port"; failed=1; break; fi
  sleep 1
done
[ "$tries" -lt 10 ] && echo "ok: the lead broker answers on $lead:$port as a ZeroMQ CURVE server (ZMTP 3)"
exit $failed
