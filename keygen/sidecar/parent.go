package sidecar

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/minicluster/minicluster/internal/hostlist"
	"github.com/minicluster/minicluster/internal/tbon"
)

// Pod is what a broker pod knows about itself: its hostname (<job>-<index>), its Job index,
// the broker ConfigMap's host list and the topology its broker runs with.
type Pod struct {
	Hostname string
	Index    int
	Hosts    string // RFC 29 hostlist of all maxSize brokers, e.g. flux-sample-[0-15]
	Topology string // tbon.topo; empty = flux's default for broker.toml boot
}

// ParentHost is the hostname of the pod's parent broker ("" for the lead), and the headless
// Service that publishes it: the second label of the pod's FQDN in etcHosts (Kubernetes writes
// "<ip> <hostname>.<subdomain>.<ns>.svc.<domain> <hostname>" there).
func ParentHost(p Pod, etcHosts io.Reader) (service, host string, err error) {
	if p.Index == 0 {
		return "", "", nil
	}
	job, ok := strings.CutSuffix(p.Hostname, "-"+strconv.Itoa(p.Index))
	if !ok {
		return "", "", fmt.Errorf("hostname %q does not end in -%d, the pod's Job index: is this pod in the MiniCluster's indexed Job?", p.Hostname, p.Index)
	}
	all, err := hostlist.Expand(p.Hosts, 1_000_000)
	if err != nil {
		return "", "", fmt.Errorf("broker ConfigMap hosts %q: %w", p.Hosts, err)
	}
	parent, err := tbon.Parent(p.Topology, p.Index, len(all))
	if err != nil {
		return "", "", err
	}
	sc := bufio.NewScanner(etcHosts)
	for sc.Scan() {
		for _, name := range strings.Fields(sc.Text()) {
			if rest, ok := strings.CutPrefix(name, p.Hostname+"."); ok {
				service, _, _ = strings.Cut(rest, ".")
				return service, fmt.Sprintf("%s-%d", job, parent), nil
			}
		}
	}
	return "", "", fmt.Errorf("/etc/hosts has no FQDN for %s: the pod needs spec.subdomain naming the headless Service", p.Hostname)
}
