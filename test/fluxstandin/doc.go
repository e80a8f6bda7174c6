// Package fluxstandin is a stand-in for the `flux` command in the MiniCluster end-to-end tests.
// It is a wiring check, not Flux: flux-core cannot be installed on the test machines, so the
// test pods run this program as `flux`. It does what the chart's entrypoint asks of a broker and
// no more:
//
//   - `flux R encode --hosts=HOSTLIST --local` prints a small Rv1 JSON of the expanded hosts;
//   - `flux broker|start --config-path=DIR -Sk=v... [initial program...]` reads DIR/broker.toml
//     with the rules of flux-config-bootstrap(5) (strict [bootstrap] keys, RFC 29 hostlists,
//     %h/%p templates, interface names in bind URIs), reads the CURVE certificate with flux's
//     rules (and refuses one that group or others can read), finds its rank by hostname,
//     listens on its bind URI, connects to its parent in a k-ary tree (kary:2 unless
//     -Stbon.topo=kary:K) retrying until tbon.connect_timeout, and proves to the parent that
//     it holds the same certificate. Rank 0 waits for broker.quorum brokers, runs the initial
//     program (or stays up with -Sbroker.rc2_none=1 until SIGTERM), then tells every broker to
//     exit 0 and exits with the program's status;
//   - `flux submit --watch -N n -n t CMD...`, run as the initial program, asks rank 0 (through
//     FLUX_URI) to run t tasks round-robin on the first n online ranks and prints their output.
//
// Brokers speak JSON lines over TCP, not ZeroMQ, and nothing is encrypted: the stand-in checks
// that every pod got the same configuration and certificate and can reach its parent.
package fluxstandin
