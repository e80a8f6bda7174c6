//go:build !linux

package benchresult

import "runtime"

func kernel() string { return runtime.GOOS + " " + runtime.GOARCH }
