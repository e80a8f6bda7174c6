// Package limits holds the bounds that the chart and the programs share, each defined once here.
// The chart cannot import Go: its _validate.tpl and values.schema.json write the same numbers,
// and test/render (limits_test.go) fails when they differ from these.
package limits

// MaxBrokers is the most brokers a MiniCluster can have, for size and maxSize alike: Kubernetes
// caps an Indexed Job's completions and parallelism at 100,000, and the brokers are one Job's pods.
const MaxBrokers = 100000
