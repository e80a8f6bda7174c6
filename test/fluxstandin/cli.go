package fluxstandin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/minicluster/minicluster/internal/hostlist"
)

// Usage is the stand-in's --help.
const Usage = `flux (minicluster test stand-in): a wiring check, NOT Flux.

This program stands in for flux-core in the MiniCluster end-to-end tests. It reads broker.toml
and the CURVE certificate as a Flux broker would, finds its rank by hostname, connects to its
parent over TCP (a JSON line protocol, not ZeroMQ, nothing encrypted) and on rank 0 runs the
initial program once broker.quorum brokers are online. It schedules nothing and has no KVS.

Usage:
  flux R encode --hosts=HOSTLIST --local     print an Rv1 JSON with one core per host
  flux broker|start [--config-path=DIR] [-Sattr=value...] [initial program...]
        attributes used: broker.quorum, broker.rc2_none, tbon.topo=kary:K (default kary:2),
        tbon.fanout, tbon.connect_timeout, log-stderr-level, rundir; others are accepted
  flux submit --watch [--quiet] -N NODES -n TASKS CMD...
        inside an instance: run the tasks round-robin on the first NODES online ranks and
        print their output; exit with the highest task status

Environment: FLUX_STANDIN_HOSTNAME overrides the host name (unit tests only); FLUX_URI (set by
the broker for its initial program) is where flux submit finds rank 0.
`

// Command is the whole `flux` program: it runs Main with os.Args and stops brokers on
// SIGTERM or SIGINT (exit status 143).
func Command() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// Main runs the stand-in with the arguments after "flux" and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		io.WriteString(stderr, Usage)
		return 1
	}
	if args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		io.WriteString(stdout, Usage)
		return 0
	}
	switch args[0] {
	case "R":
		return rEncode(args[1:], stdout, stderr)
	case "broker", "start":
		opts, err := parseBrokerArgs(args[1:])
		if err != nil {
			fmt.Fprintf(stderr, "flux-standin %s: %v\n", args[0], err)
			return 1
		}
		opts.Hostname = os.Getenv("FLUX_STANDIN_HOSTNAME")
		if opts.Hostname == "" {
			if opts.Hostname, err = os.Hostname(); err != nil {
				fmt.Fprintf(stderr, "flux-standin: %v\n", err)
				return 1
			}
		}
		opts.Hostname, _, _ = strings.Cut(opts.Hostname, ".")
		opts.Stdout, opts.Stderr = stdout, stderr
		return RunBroker(ctx, opts)
	case "submit":
		return Submit(args[1:], os.Getenv("FLUX_URI"), stdout, stderr)
	}
	fmt.Fprintf(stderr, "flux-standin: %q is not implemented: this is a wiring check, not Flux (see flux --help)\n", args[0])
	return 1
}

// parseBrokerArgs reads --config-path, -Sname=value (also -S name=value, --setattr) and the
// initial program, which starts at the first argument that is not an option.
func parseBrokerArgs(args []string) (BrokerOptions, error) {
	opts := BrokerOptions{ConfigPath: os.Getenv("FLUX_CONF_DIR"), Attrs: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 == len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		var attr string
		var err error
		switch {
		case a == "--":
			opts.Program = args[i+1:]
			i = len(args)
		case strings.HasPrefix(a, "--config-path="):
			opts.ConfigPath = strings.TrimPrefix(a, "--config-path=")
		case a == "--config-path" || a == "-c":
			opts.ConfigPath, err = next()
		case strings.HasPrefix(a, "--setattr="):
			attr = strings.TrimPrefix(a, "--setattr=")
		case a == "-S" || a == "--setattr":
			attr, err = next()
		case strings.HasPrefix(a, "-S"):
			attr = a[2:]
		case strings.HasPrefix(a, "-"):
			err = fmt.Errorf("option %s is not supported by the stand-in", a)
		default:
			opts.Program = args[i:]
			i = len(args)
		}
		if err != nil {
			return opts, err
		}
		if attr != "" {
			name, value, ok := strings.Cut(attr, "=")
			if !ok || name == "" {
				return opts, fmt.Errorf("-S%s is not -Sname=value", attr)
			}
			opts.Attrs[name] = value
		}
	}
	if opts.ConfigPath == "" {
		return opts, fmt.Errorf("no --config-path: the stand-in needs a broker.toml to find its peers")
	}
	return opts, nil
}

// rEncode prints the Rv1 JSON that `flux R encode --hosts=HOSTLIST --local` would, with one core.
func rEncode(args []string, stdout, stderr io.Writer) int {
	var hosts string
	ok := len(args) > 0 && args[0] == "encode"
	for i := 1; ok && i < len(args); i++ {
		switch a := args[i]; {
		case strings.HasPrefix(a, "--hosts="):
			hosts = strings.TrimPrefix(a, "--hosts=")
		case a == "--hosts" && i+1 < len(args):
			i++
			hosts = args[i]
		case a == "--local" || a == "-l":
		default:
			ok = false
		}
	}
	if !ok || hosts == "" {
		fmt.Fprintln(stderr, "flux-standin R: only `flux R encode --hosts=HOSTLIST [--local]` is supported")
		return 1
	}
	names, err := hostlist.Expand(hosts, maxHosts)
	if err != nil {
		fmt.Fprintf(stderr, "flux-standin R: %v\n", err)
		return 1
	}
	ranks := "0"
	if len(names) > 1 {
		ranks = fmt.Sprintf("0-%d", len(names)-1)
	}
	r := map[string]any{"version": 1, "execution": map[string]any{
		"R_lite":    []any{map[string]any{"rank": ranks, "children": map[string]string{"core": "0"}}},
		"nodelist":  []string{hosts},
		"starttime": 0, "expiration": 0,
	}}
	_ = json.NewEncoder(stdout).Encode(r)
	return 0
}
