package kube

// ObjectMeta is objectMeta for the tests of package kube_test (kube_e2e_test.go, which also
// runs package sidecar: it cannot be in package kube, which sidecar imports).
var ObjectMeta = objectMeta
