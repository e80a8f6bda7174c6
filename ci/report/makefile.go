package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// benchE2E reads which benchmarks `make bench-e2e` runs: the -bench patterns of its recipe in
// the Makefile, so that the report says it of those alone.
func benchE2E(makefile string) ([]*regexp.Regexp, error) {
	data, err := os.ReadFile(makefile)
	if err != nil {
		return nil, err
	}
	var recipe []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "bench-e2e:"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, line)
		case in:
			in = false
		}
	}
	var patterns []*regexp.Regexp
	for _, m := range regexp.MustCompile(`-bench '([^']+)'`).FindAllStringSubmatch(strings.Join(recipe, "\n"), -1) {
		re, err := regexp.Compile(m[1])
		if err != nil {
			return nil, fmt.Errorf("%s: bench-e2e's -bench %q: %v", makefile, m[1], err)
		}
		patterns = append(patterns, re)
	}
	if len(patterns) == 0 {
		return nil, fmt.Errorf("%s: no -bench '...' in the recipe of bench-e2e", makefile)
	}
	return patterns, nil
}

// runsIn reports whether go test -bench with one of patterns runs bench (a top-level name).
func runsIn(bench string, patterns []*regexp.Regexp) bool {
	for _, re := range patterns {
		if re.MatchString(bench) {
			return true
		}
	}
	return false
}
