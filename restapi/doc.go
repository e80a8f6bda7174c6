// Package restapi serves the Flux RESTful API (the /v1/ endpoints of
// github.com/flux-framework/flux-restful-api, with the same request fields, response shapes
// and token flow, so that its Python client works unchanged) and a small web UI, for a
// persistent MiniCluster. It runs on the lead broker's pod, in the broker's container, and
// reaches Flux through Flux's own command line (flux.go): whichever way the chart provides
// Flux (a view mounted or copied, or Flux in the image), the `flux` the broker runs is there.
package restapi
