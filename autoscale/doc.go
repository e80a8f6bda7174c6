// Package autoscale sizes a persistent MiniCluster to the jobs it is given and describes its
// queue to Prometheus.
//
// It runs in the lead broker's container (minicluster-autoscale), where Flux is: a Python helper
// (the chart's autoscale-state.py, through flux python) prints Flux's state as a JSON line every
// few seconds; Scaler turns each into a target size; the runner drains brokers in Flux before a
// shrink and writes the target into a directory it shares with the lead's keys container. That
// container holds the pod's only Kubernetes credentials: it resizes the Job (keygen/sidecar's
// Resizer) and tells the live size back. The broker's container, where every job runs, never
// holds a token.
//
// A Job's shrink removes its highest indexes, so a shrink removes brokers from the top: the
// brokers above the target are drained first, and the target is written only once they hold no
// job. A busy broker stops a shrink at itself until its job ends.
package autoscale
