package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Target parses a registry (host[:port][/path]) and says whether to talk plain HTTP to it.
func Target(registry string, insecure bool) (prefix string, opts []name.Option, err error) {
	if strings.Contains(registry, "://") {
		return "", nil, fmt.Errorf("registry %q: give host[:port][/path], without a scheme", registry)
	}
	prefix = strings.TrimSuffix(registry, "/")
	host, _, _ := strings.Cut(prefix, "/")
	if host == "" {
		return "", nil, fmt.Errorf("registry %q: empty host", registry)
	}
	// Without this check "myhost/x" would silently mean Docker Hub's repository myhost/x.
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return "", nil, fmt.Errorf("registry %q: must start with a registry host (a name with a dot or a port, or localhost)", registry)
	}
	hostname := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		hostname = h
	}
	hostname = strings.Trim(hostname, "[]")
	if ip := net.ParseIP(hostname); insecure || hostname == "localhost" || (ip != nil && ip.IsLoopback()) {
		opts = append(opts, name.Insecure)
	}
	if _, err := name.NewRepository(prefix+"/x", append([]name.Option{name.StrictValidation}, opts...)...); err != nil {
		return "", nil, fmt.Errorf("registry %q: %w", registry, err)
	}
	return prefix, opts, nil
}
