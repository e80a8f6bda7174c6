package postrender

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// maxIndexedCompletions is Kubernetes' limit on an indexed Job's completions, so on maxSize.
const maxIndexedCompletions = 100000

var (
	dnsLabel      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1035Label  = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	hostlistRange = regexp.MustCompile(`^([0-9]+)(?:-([0-9]+))?$`)
)

// HostList is the RFC 29 hostlist of the short hostnames of an indexed Job's first n pods,
// <job>-0 ... <job>-(n-1): "<job>-[0-(n-1)]", or "<job>-0" for one pod.
func HostList(job string, n int) string {
	if n == 1 {
		return job + "-0"
	}
	return fmt.Sprintf("%s-[0-%d]", job, n-1)
}

// expandHostList expands an RFC 29 hostlist ("a-[0-3,7],b") into host names in order. It stops
// with an error past limit hosts, so that a hostile list cannot exhaust memory.
func expandHostList(list string, limit int) ([]string, error) {
	var hosts []string
	for _, part := range splitOutsideBrackets(list) {
		open := strings.IndexByte(part, '[')
		if open < 0 {
			if strings.ContainsRune(part, ']') || part == "" {
				return nil, fmt.Errorf("hostlist %q: malformed entry %q", list, part)
			}
			hosts = append(hosts, part)
			if len(hosts) > limit {
				return nil, fmt.Errorf("hostlist %q has more than %d hosts", list, limit)
			}
			continue
		}
		end := strings.IndexByte(part, ']')
		if end < open || strings.ContainsAny(part[end+1:], "[]") {
			return nil, fmt.Errorf("hostlist %q: malformed entry %q (one [ranges] group per host)", list, part)
		}
		prefix, suffix := part[:open], part[end+1:]
		for _, r := range strings.Split(part[open+1:end], ",") {
			m := hostlistRange.FindStringSubmatch(r)
			if m == nil {
				return nil, fmt.Errorf("hostlist %q: %q is not a number or a range lo-hi", list, r)
			}
			lo, err1 := strconv.Atoi(m[1])
			hi, err2 := lo, error(nil)
			if m[2] != "" {
				hi, err2 = strconv.Atoi(m[2])
			}
			if err1 != nil || err2 != nil || hi < lo {
				return nil, fmt.Errorf("hostlist %q: bad range %q", list, r)
			}
			width := 0
			if len(m[1]) > 1 && m[1][0] == '0' {
				width = len(m[1])
			}
			for i := lo; i <= hi; i++ {
				hosts = append(hosts, fmt.Sprintf("%s%0*d%s", prefix, width, i, suffix))
				if len(hosts) > limit {
					return nil, fmt.Errorf("hostlist %q has more than %d hosts", list, limit)
				}
			}
		}
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
