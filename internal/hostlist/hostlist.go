// Package hostlist reads and writes RFC 29 hostlists, the compact host lists Flux's broker.toml
// takes ("flux-sample-[0-15]", "a-[0-2,5],b"): one entry describes any number of brokers.
package hostlist

import (
	"fmt"
	"strconv"
	"strings"
)

// Indexed is the hostlist of the short hostnames of an indexed Job's first n pods,
// <job>-0 ... <job>-(n-1): "<job>-[0-(n-1)]", or "<job>-0" for one pod.
func Indexed(job string, n int) string {
	if n == 1 {
		return job + "-0"
	}
	return fmt.Sprintf("%s-[0-%d]", job, n-1)
}

// Expand expands a hostlist into host names, in order. Zero-padded ranges ("n[01-10]") keep
// their width. It stops with an error past limit hosts, so a hostile list cannot exhaust memory.
func Expand(list string, limit int) ([]string, error) {
	var hosts []string
	for _, entry := range splitOutsideBrackets(list) {
		if entry == "" {
			return nil, fmt.Errorf("hostlist %q has an empty entry; separate hosts with single commas", list)
		}
		expanded, err := expandEntry(entry, limit-len(hosts))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", list, err)
		}
		hosts = append(hosts, expanded...)
	}
	return hosts, nil
}

// splitOutsideBrackets splits s at the commas that are not inside [ ].
func splitOutsideBrackets(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandEntry expands one "prefix[ranges]rest" entry; rest may hold more brackets.
func expandEntry(h string, limit int) ([]string, error) {
	open := strings.IndexByte(h, '[')
	if open < 0 {
		if strings.ContainsRune(h, ']') {
			return nil, fmt.Errorf("%q has ']' without '['", h)
		}
		if limit < 1 {
			return nil, fmt.Errorf("more than the limit of hosts")
		}
		return []string{h}, nil
	}
	end := strings.IndexByte(h[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q has '[' without ']'", h)
	}
	prefix, ranges, rest := h[:open], h[open+1:open+end], h[open+end+1:]
	tails, err := expandEntry(rest, limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, found := strings.Cut(r, "-")
		if !found {
			hi = lo
		}
		first, err1 := strconv.Atoi(lo)
		last, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || lo == "" || lo[0] == '+' || first < 0 || last < first {
			return nil, fmt.Errorf("range %q in %q is not N or N-M with 0 <= N <= M", r, h)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := first; n <= last; n++ {
			for _, tail := range tails {
				if len(out) >= limit {
					return nil, fmt.Errorf("more than %d hosts", limit)
				}
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, n, tail))
			}
		}
	}
	return out, nil
}
