// Package tbon knows flux-core's tree-based overlay network topologies (the broker attribute
// tbon.topo, flux-core src/modules/overlay/topology.c): which forms exist, and which rank is
// each broker's parent. The chart's schema refuses other forms; the brokers' init step uses
// Parent to wait for its parent's DNS record before the broker looks it up.
package tbon

import (
	"fmt"
	"strconv"
	"strings"
)

// Forms is what an error says a topology may be.
const Forms = "kary:K, mincrit, mincrit:K, binomial or custom (K an integer >= 0)"

// Validate refuses a topology flux-core would refuse at start. Empty is flux's default for a
// config-booted instance: custom, a flat tree unless broker.toml names parents.
func Validate(topo string) error {
	_, _, err := parse(topo)
	return err
}

// Parent is the parent rank of rank in an instance of size brokers, -1 for rank 0. For custom
// it is rank 0: the chart's broker.toml names no parents (a brokerConfig of your own may).
func Parent(topo string, rank, size int) (int, error) {
	name, k, err := parse(topo)
	if err != nil {
		return 0, err
	}
	if rank <= 0 {
		return -1, nil
	}
	switch name {
	case "kary":
		if k == 0 {
			return 0, nil
		}
		return (rank - 1) / k, nil
	case "mincrit":
		if k < 0 {
			k = mincritK(size, 1024)
		}
		if k > 0 && rank > k {
			return (rank-k-1)%k + 1, nil
		}
		return 0, nil
	case "binomial":
		return rank & (rank - 1), nil
	}
	return 0, nil
}

// parse splits "name[:k]"; k is -1 where none is given.
func parse(topo string) (string, int, error) {
	if topo == "" {
		return "custom", -1, nil
	}
	name, arg, hasArg := strings.Cut(topo, ":")
	k := -1
	if hasArg {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 || strings.HasPrefix(arg, "+") {
			return "", 0, fmt.Errorf("topology %q: %q is not an integer >= 0; use %s", topo, arg, Forms)
		}
		k = n
	}
	switch {
	case name == "kary" && hasArg, name == "mincrit", (name == "binomial" || name == "custom") && !hasArg:
		return name, k, nil
	}
	return "", 0, fmt.Errorf("topology %q is not one of flux-core's forms: use %s", topo, Forms)
}

// mincritK is flux-core's choice of k when mincrit names none: the fewest routers that keep
// each router's leaves at or below maxFanout (never 1).
func mincritK(size, maxFanout int) int {
	if size <= maxFanout+1 {
		return 0
	}
	k := 2
	for fanout(size, k) > maxFanout {
		k++
	}
	return k
}

func fanout(size, k int) int {
	leaves := size - 1 - k
	f := leaves / k
	if leaves%k > 0 {
		f++
	}
	return f
}
