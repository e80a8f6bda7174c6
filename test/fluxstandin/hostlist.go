package fluxstandin

import (
	"fmt"
	"strconv"
	"strings"
)

// ExpandHostlist expands an RFC 29 hostlist such as "flux-sample-[0-15]" or "a-[0-2,5],b"
// into host names, in order. Zero-padded ranges ("n[01-10]") keep their width.
func ExpandHostlist(list string) ([]string, error) {
	var hosts []string
	for _, item := range splitTopLevel(list) {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q has an empty entry; separate hosts with single commas", list)
		}
		expanded, err := expandHost(item)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", list, err)
		}
		hosts = append(hosts, expanded...)
	}
	return hosts, nil
}

// splitTopLevel splits on the commas that are not inside brackets.
func splitTopLevel(s string) []string {
	var items []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, s[start:i])
				start = i + 1
			}
		}
	}
	return append(items, s[start:])
}

// expandHost expands one "prefix[ranges]rest" entry; rest may hold more brackets.
func expandHost(h string) ([]string, error) {
	open := strings.IndexByte(h, '[')
	if open < 0 {
		if strings.ContainsAny(h, "]") {
			return nil, fmt.Errorf("%q has ']' without '['", h)
		}
		return []string{h}, nil
	}
	end := strings.IndexByte(h[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q has '[' without ']'", h)
	}
	prefix, ranges, rest := h[:open], h[open+1:open+end], h[open+end+1:]
	tails, err := expandHost(rest)
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
		if err1 != nil || err2 != nil || first < 0 || last < first || lo == "" {
			return nil, fmt.Errorf("range %q in %q is not N or N-M with 0 <= N <= M", r, h)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := first; n <= last; n++ {
			for _, tail := range tails {
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, n, tail))
			}
		}
	}
	return out, nil
}
